"""A C function of the HSA library called through a compiled builtin instead of cffi.

In cffi's ABI mode (how hsapy opens ``libhsa-runtime64``) every call goes through libffi:
about 240 ns for ``hsa_queue_add_write_index_scacq_screl`` on the 2-vCPU development VM, the
single most expensive step of ``prepared.publish()`` on the real runtime. :func:`bound_u64`
makes a builtin (hsapy/_native.py) that calls the same C function pointer directly for the
one first argument a producer always passes (its queue's ``hsa_queue_t *``):

- its state is ``[known, raw, function, slow]``: the cdata last passed first (compared by
  identity), its raw value (the pointer as an int), the C function's address and ``slow``;
- a call ``f(known, value)`` whose ``value`` is an int that converts to uint64_t calls
  ``uint64_t function(raw, value)`` and returns the result as an int;
- anything else calls ``slow``, which records a new first argument when it is a cdata of the
  function's first parameter type and then calls the cffi function itself, so conversions
  and errors are cffi's.

The builtin holds the GIL during the C call (cffi lets it go). It is used only for functions
that do not block: the write-index fetch-and-add is one atomic instruction in ROCr.
"""
from __future__ import annotations

import threading
from typing import Any

from hsapy import _native

__all__ = ["bound_u64"]

_NAME = "hsapy_call_u64_u64"
_NO_ARGUMENT = object()
_lock = threading.Lock()
_built: list[Any] = []
_failed: list[str] = []


class _Callee:
    """A function pointer held in a value, as llvmlite's call instruction takes its callee (it
    reads the callee's function type, which a pointer value does not have)."""

    def __init__(self, value: Any, function_type: Any) -> None:
        self.value, self.type, self.function_type = value, value.type, function_type

    def get_reference(self) -> str:
        return str(self.value.get_reference())


def _module() -> Any:
    """The IR of ``call(state, args, nargs)`` (see the module docstring)."""
    from llvmlite import ir

    i64, ptr = ir.IntType(64), ir.PointerType()
    module = ir.Module(name="hsapy_fastcall")
    api = _native.declare_api(module)
    get_item, as_u64 = api["PyList_GetItem"], api["PyLong_AsUnsignedLongLong"]
    from_u64, occurred, clear = (api["PyLong_FromUnsignedLongLong"], api["PyErr_Occurred"],
                                 api["PyErr_Clear"])
    vectorcall = api["PyObject_Vectorcall"]
    fn = ir.Function(module, ir.FunctionType(ptr, (ptr, ptr, i64)), name=_NAME)
    state, args, nargs = fn.args
    blocks = {name: fn.append_basic_block(name) for name in (
        "entry", "same_first", "value", "value_check", "call", "slow", "cleared_slow")}
    b = ir.IRBuilder(blocks["entry"])

    def const(value: int) -> ir.Constant:
        return ir.Constant(i64, value)

    def item(index: int) -> ir.Value:
        return b.call(get_item, [state, const(index)])

    null = ir.Constant(ptr, None)
    b.cbranch(b.icmp_signed("==", nargs, const(2)), blocks["same_first"], blocks["slow"])
    b.position_at_end(blocks["same_first"])
    first = b.load(args, typ=ptr)
    same = b.icmp_unsigned("==", b.ptrtoint(first, i64), b.ptrtoint(item(0), i64))
    b.cbranch(same, blocks["value"], blocks["slow"])
    b.position_at_end(blocks["value"])
    value = b.call(as_u64, [b.load(b.gep(args, [const(1)], source_etype=ptr), typ=ptr)])
    b.cbranch(b.icmp_unsigned("==", value, const(0xFFFFFFFFFFFFFFFF)), blocks["value_check"],
              blocks["call"])
    b.position_at_end(blocks["value_check"])
    failed = b.icmp_unsigned("!=", b.ptrtoint(b.call(occurred, []), i64), const(0))
    b.cbranch(failed, blocks["cleared_slow"], blocks["call"])
    b.position_at_end(blocks["call"])
    raw = b.inttoptr(b.call(as_u64, [item(1)]), ptr)
    target = b.inttoptr(b.call(as_u64, [item(2)]), ptr)
    result = b.call(_Callee(target, ir.FunctionType(i64, (ptr, i64))), [raw, value])
    b.ret(b.call(from_u64, [result]))
    b.position_at_end(blocks["cleared_slow"])
    b.call(clear, [])
    b.branch(blocks["slow"])
    b.position_at_end(blocks["slow"])
    b.ret(b.call(vectorcall, [item(3), args, nargs, null]))
    return module


def available() -> bool:
    """Whether the builtin can be made in this process (compiled on first ask)."""
    if _native.disabled():
        return False
    if not _built and not _failed:
        with _lock:
            if not _built and not _failed:
                try:
                    _built.append(_native.compile_builtin(
                        _module(), _NAME, "hsa_call_u64",
                        "A C function (pointer, uint64_t) -> uint64_t of the HSA library, "
                        "called without libffi (hsapy._hsa.fastcall)."))
                except Exception as exc:  # noqa: BLE001 - any failure keeps the cffi call
                    _failed.append(f"{type(exc).__name__}: {exc}")
    return bool(_built)


def bound_u64(ffi: Any, function: Any) -> Any:
    """``function`` -- a cffi function pointer of type ``uint64_t (*)(T *, uint64_t)`` -- as
    the builtin described in the module docstring, or ``function`` itself when it is anything
    else (the simulator's functions are Python) or no builtin can be made."""
    if not isinstance(function, ffi.CData):
        return function
    kind = ffi.typeof(function)
    uint64 = ffi.typeof("uint64_t")
    if (kind.kind != "function" or kind.result is not uint64 or len(kind.args) != 2
            or kind.args[0].kind != "pointer" or kind.args[1] is not uint64 or kind.ellipsis
            or not available()):
        return function
    first_type = kind.args[0]
    state: list[Any] = [_NO_ARGUMENT, 0, int(ffi.cast("uintptr_t", function)), None]

    def slow(*args: Any) -> Any:
        if len(args) == 2 and isinstance(args[0], ffi.CData):
            first = args[0]
            if ffi.typeof(first) is first_type:   # both items in one step for other threads
                state[0:2] = (first, int(ffi.cast("uintptr_t", first)))
        return function(*args)

    state[3] = slow
    return _native.new_builtin(_built[0], state)
