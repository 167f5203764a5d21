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

The same goes for a function of the queue alone, ``uint64_t function(raw)`` (the read-index
load a producer makes when the ring may be full: every batch of more than half a ring).

:func:`bound_signal_store` does the same for the doorbell store (``hsa_signal_store_screlease``
on the queue's doorbell signal, about 240 ns through libffi, 50 ns through the builtin), bound to
that one signal.

The builtin holds the GIL during the C call (cffi lets it go). It is used only for functions
that do not block: the write-index fetch-and-add is one atomic instruction in ROCr, the
read-index load one load, a doorbell store one store to the doorbell.
"""
from __future__ import annotations

from typing import Any

from hsapy import _native

__all__ = ["bound_u64", "bound_signal_store"]

_NAMES = {False: "hsapy_call_u64_u64", True: "hsapy_call_void_i64"}
_LOAD_NAME = "hsapy_call_u64"
_NO_ARGUMENT = object()

def _module(store: bool) -> Any:
    """The IR of ``call(state, args, nargs)`` (see the module docstring): with ``store``,
    ``void function(uint64_t first, int64_t value)`` returning None (state[4]), else
    ``uint64_t function(void *first, uint64_t value)`` returning its result."""
    from llvmlite import ir

    i64, ptr, void = ir.IntType(64), ir.PointerType(), ir.VoidType()
    module, api, fn = _native.builtin_ir("hsapy_fastcall", _NAMES[store])
    get_item, from_u64 = api["PyList_GetItem"], api["PyLong_FromUnsignedLongLong"]
    as_u64 = api["PyLong_AsUnsignedLongLong"]
    incref = api["Py_IncRef"]
    state, args, nargs = fn.args
    blocks = {name: fn.append_basic_block(name) for name in (
        "entry", "value", "call", "slow")}
    b = ir.IRBuilder(blocks["entry"])

    def const(value: int) -> ir.Constant:
        return ir.Constant(i64, value)

    def item(index: int) -> ir.Value:
        return b.call(get_item, [state, const(index)])

    _native.branch_on_first(b, args, nargs, 2, lambda: item(0), blocks["value"], blocks["slow"])
    b.position_at_end(blocks["value"])
    # PyLong_AsUnsignedLongLong takes ints only (no __index__, which cffi does not take
    # either); a signal value must also fit int64_t: a negative one goes the cffi way
    value = _native.unsigned_or(
        b, api, b.load(b.gep(args, [const(1)], source_etype=ptr), typ=ptr), blocks["slow"])
    if store:
        b.cbranch(b.icmp_signed("<", value, const(0)), blocks["slow"], blocks["call"])
    else:
        b.branch(blocks["call"])
    b.position_at_end(blocks["call"])
    raw = b.call(as_u64, [item(1)])
    target = b.inttoptr(b.call(as_u64, [item(2)]), ptr)
    if store:
        # hsa_signal_t (a struct of one uint64_t) by value: one integer register on the
        # x86-64 System V and AArch64 calling conventions, as a uint64_t
        b.call(_native.Callee(target, ir.FunctionType(void, (i64, i64))), [raw, value])
        none = item(4)
        b.call(incref, [none])
        b.ret(none)
    else:
        result = b.call(_native.Callee(target, ir.FunctionType(i64, (ptr, i64))),
                        [b.inttoptr(raw, ptr), value])
        b.ret(b.call(from_u64, [result]))
    b.position_at_end(blocks["slow"])
    _native.return_call(b, api, item(3), args, nargs)
    return module


def _load_module() -> Any:
    """The IR of ``call(state, args, nargs)`` for ``uint64_t function(void *first)``: state as
    bound_u64's; one argument, the known first, calls the function and returns its result as
    an int, anything else calls ``slow``."""
    from llvmlite import ir

    i64, ptr = ir.IntType(64), ir.PointerType()
    module, api, fn = _native.builtin_ir("hsapy_fastcall_load", _LOAD_NAME)
    get_item, as_u64 = api["PyList_GetItem"], api["PyLong_AsUnsignedLongLong"]
    state, args, nargs = fn.args
    entry, call, slow = (fn.append_basic_block(n) for n in ("entry", "call", "slow"))
    b = ir.IRBuilder(entry)

    def item(index: int) -> ir.Value:
        return b.call(get_item, [state, ir.Constant(i64, index)])

    _native.branch_on_first(b, args, nargs, 1, lambda: item(0), call, slow)
    b.position_at_end(call)
    raw = b.inttoptr(b.call(as_u64, [item(1)]), ptr)
    target = b.inttoptr(b.call(as_u64, [item(2)]), ptr)
    result = b.call(_native.Callee(target, ir.FunctionType(i64, (ptr,))), [raw])
    b.ret(b.call(api["PyLong_FromUnsignedLongLong"], [result]))
    b.position_at_end(slow)
    _native.return_call(b, api, item(3), args, nargs)
    return module


def _definition(store: bool) -> Any:
    """The method definition of one kind of call (compiled on first ask), or None where no
    builtin can be made."""
    return _native.cached_definition(
        _NAMES[store], lambda: _module(store), "hsa_signal_store" if store else "hsa_call_u64",
        "A C function of the HSA library called without libffi (hsapy._hsa.fastcall).")


def bound_u64(ffi: Any, function: Any) -> Any:
    """``function`` -- a cffi function pointer of type ``uint64_t (*)(T *, uint64_t)`` (the
    write-index fetch-and-add) or ``uint64_t (*)(T *)`` (the read-index load) -- as the
    builtin described in the module docstring, or ``function`` itself when it is anything else
    (the simulator's functions are Python) or no builtin can be made."""
    if not isinstance(function, ffi.CData):
        return function
    kind = ffi.typeof(function)
    uint64 = ffi.typeof("uint64_t")
    arity = len(kind.args) if kind.kind == "function" else 0
    if (arity not in (1, 2) or kind.result is not uint64 or kind.ellipsis
            or kind.args[0].kind != "pointer" or (arity == 2 and kind.args[1] is not uint64)):
        return function
    if arity == 1:
        definition = _native.cached_definition(
            _LOAD_NAME, _load_module, "hsa_call_u64",
            "A C function of the HSA library called without libffi (hsapy._hsa.fastcall).")
    else:
        definition = _definition(False)
    if definition is None:
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
    return _native.new_builtin(definition, state)


def bound_signal_store(ffi: Any, function: Any, signal: Any) -> Any:
    """``function`` -- a cffi function pointer of type ``void (*)(hsa_signal_t, int64_t)``, a
    signal store -- as a builtin that stores to ``signal`` (an hsa_signal_t cdata: a queue's
    doorbell) without libffi, and hands any other signal or value to the cffi call; or
    ``function`` itself when it is anything else or no builtin can be made.

    Unlike :func:`bound_u64`'s pointer, an hsa_signal_t cdata is a struct whose handle could be
    changed in place, so the builtin is bound to ``signal``'s handle as it is now and never
    re-pointed: meant for a queue's doorbell, which the runtime's hsa_queue_t fixes for the
    queue's life. ROCr's doorbell store is one store to the doorbell (gfx9 and later).

    A ``function`` that is Python with a ``bound_to_signal`` attribute (the simulator's store,
    hsapy.sim.api_signals.compiled_signal_store) makes its own: ``bound_to_signal(signal)``."""
    if not isinstance(function, ffi.CData):
        bind = getattr(function, "bound_to_signal", None)
        return bind(signal) if callable(bind) else function
    if not isinstance(signal, ffi.CData):
        return function
    kind = ffi.typeof(function)
    signal_type = ffi.typeof("hsa_signal_t")
    if (kind.kind != "function" or kind.result is not ffi.typeof("void") or len(kind.args) != 2
            or kind.args[0] is not signal_type or kind.args[1] is not ffi.typeof("int64_t")
            or kind.ellipsis or ffi.typeof(signal) is not signal_type):
        return function
    definition = _definition(True)
    if definition is None:
        return function
    state = [signal, int(signal.handle), int(ffi.cast("uintptr_t", function)), function, None]
    return _native.new_builtin(definition, state)
