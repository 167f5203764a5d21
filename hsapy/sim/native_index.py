"""The simulated write-index fetch-and-add as a builtin function compiled for the host.

A producer calls ``hsa_queue_add_write_index_scacq_screl`` once per dispatch. On the simulator
that call is SimLib's (hsapy/sim/api_queues.py, ``compiled_add_write_index``): a Python function
whose frame alone costs about as much as the rest of ``prepared.publish()``'s statements put
together. This module builds the same fast path as a CPython builtin (``METH_FASTCALL``) from
LLVM IR, compiled for the host by llvmlite's MCJIT (hsapy/_native.py): calling a builtin costs no
Python frame (timeit on a 2-vCPU VM, Python 3.11: 122 ns for the Python function, 45 ns for
this one).

The builtin keeps the Python function's protocol exactly, so the two mix freely:

- its state is one list, ``[queue, token, address, slow]``: the cdata of the queue the
  producer used last (compared by identity), that queue's write token (SimQueue.write_token,
  a one-element list holding the index while nobody changes it), the address of
  amd_queue_t.write_dispatch_id, and the Python function (``slow``);
- a call with that queue, a token present and a value that is an int whose sum with the index
  fits 64 bits stores the sum into write_dispatch_id, replaces the token's value and returns the
  old value. It runs holding the GIL and calls nothing that could run Python code or let the GIL
  go, so to other threads it is one step, as the token's pop/append pair is;
- anything else (another queue, the token held by a Python thread, a value the C conversion
  refuses, a sum past 2^64 - 1, a wrong argument count) calls ``slow`` with the same
  arguments: the Python function decides, updates the state list and raises what it raises.

Where it cannot be built -- no llvmlite host target, a Python without the GIL (the token is
then guarded by per-object locks this code does not take) or ``HSAPY_NATIVE_BUILTINS=0`` --
:func:`native_add_write_index` returns None and SimLib keeps the Python function.
"""
from __future__ import annotations

from typing import Any

from hsapy import _native

__all__ = ["native_add_write_index", "native_load_read_index", "available", "why_not"]

_NAME = "hsapy_sim_add_write_index"
_LOAD_NAME = "hsapy_sim_load_read_index"


def _module() -> Any:
    """The IR of ``add(state, args, nargs)`` (see the module docstring)."""
    from llvmlite import ir

    i64 = ir.IntType(64)
    ptr = ir.PointerType()
    module, api, fn = _native.builtin_ir("hsapy_sim_native_index", _NAME)
    get_item, size, set_item = api["PyList_GetItem"], api["PyList_Size"], api["PyList_SetItem"]
    as_u64, from_u64 = api["PyLong_AsUnsignedLongLong"], api["PyLong_FromUnsignedLongLong"]
    incref = api["Py_IncRef"]
    state, args, nargs = fn.args
    blocks = {name: fn.append_basic_block(name) for name in (
        "entry", "token_free", "value_ok", "commit", "slow")}
    b = ir.IRBuilder(blocks["entry"])

    def const(value: int, kind: Any = i64) -> ir.Constant:
        return ir.Constant(kind, value)

    def item(sequence: ir.Value, index: int) -> ir.Value:
        return b.call(get_item, [sequence, const(index)])

    null = ir.Constant(ptr, None)
    # entry: exactly two arguments, the first the queue seen last
    _native.branch_on_first(b, args, nargs, 2, lambda: item(state, 0), blocks["token_free"],
                            blocks["slow"])
    # the token present (one item): nobody is changing the index
    b.position_at_end(blocks["token_free"])
    token = item(state, 1)
    present = b.icmp_signed("==", b.call(size, [token]), const(1))
    b.cbranch(present, blocks["value_ok"], blocks["slow"])
    # the value as a uint64_t; an error (not an int, negative, too large) goes the slow way
    b.position_at_end(blocks["value_ok"])
    value = _native.unsigned_or(
        b, api, b.load(b.gep(args, [const(1)], source_etype=ptr), typ=ptr), blocks["slow"])
    # old + value must fit 64 bits (the Python function wraps it, or refuses the value); the
    # token holds ints (a failed conversion: never, but never guess)
    old_object = item(token, 0)
    old = _native.unsigned_or(b, api, old_object, blocks["slow"])
    new = b.add(old, value)
    wrapped = b.icmp_unsigned("<", new, old)
    b.cbranch(wrapped, blocks["slow"], blocks["commit"])
    # commit: the new value's int first (nothing changed if that fails), then the index word,
    # then the token; the old value's int (kept alive) is the result
    b.position_at_end(blocks["commit"])
    new_object = b.call(from_u64, [new])
    with b.if_then(b.icmp_unsigned("==", b.ptrtoint(new_object, i64), const(0)),
                   likely=False):
        b.ret(null)
    address = b.call(as_u64, [item(state, 2)])
    word = b.inttoptr(address, ptr)
    b.store(new, word, align=8)             # as the Python function's memoryview store
    b.call(incref, [old_object])
    b.call(set_item, [token, const(0), new_object])
    b.ret(old_object)
    # the Python function, with the same arguments
    b.position_at_end(blocks["slow"])
    _native.return_call(b, api, item(state, 3), args, nargs)
    return module


def _load_module() -> Any:
    """The IR of ``load(state, args, nargs)``: ``state`` is ``[add_state, offset, slow]``, the
    add builtin's state list, the byte offset of amd_queue_t.read_dispatch_id from its
    write_dispatch_id, and the Python function. A call with the queue the add state names
    returns the read index (an acquire load); anything else calls ``slow``."""
    from llvmlite import ir

    i64 = ir.IntType(64)
    module, api, fn = _native.builtin_ir("hsapy_sim_native_load", _LOAD_NAME)
    get_item, as_u64 = api["PyList_GetItem"], api["PyLong_AsUnsignedLongLong"]
    state, args, nargs = fn.args
    entry, load, slow = (fn.append_basic_block(n) for n in ("entry", "load", "slow"))
    b = ir.IRBuilder(entry)

    def const(value: int) -> ir.Constant:
        return ir.Constant(i64, value)

    add_state = b.call(get_item, [state, const(0)])
    _native.branch_on_first(b, args, nargs, 1, lambda: b.call(get_item, [add_state, const(0)]),
                            load, slow)
    b.position_at_end(load)
    # (the add state's items change together, in one slice assignment: this queue's word)
    write_word = b.call(as_u64, [b.call(get_item, [add_state, const(2)])])
    offset = b.call(as_u64, [b.call(get_item, [state, const(1)])])
    word = b.inttoptr(b.add(write_word, offset), ir.PointerType(i64))
    value = b.load_atomic(word, "acquire", 8, typ=i64)
    b.ret(b.call(api["PyLong_FromUnsignedLongLong"], [value]))
    b.position_at_end(slow)
    _native.return_call(b, api, b.call(get_item, [state, const(2)]), args, nargs)
    return module


def _definition() -> Any:
    """The compiled function's method definition (built on first ask), or None."""
    return _native.cached_definition(
        _NAME, _module, "hsa_queue_add_write_index_scacq_screl",
        "Fetch-and-add the write index; return the previous value (the simulator's, "
        "compiled: hsapy.sim.native_index).")


def available() -> bool:
    """Whether the compiled fetch-and-add can be made in this process (built on first ask;
    ``why_not()`` says what stopped it)."""
    return _definition() is not None


def why_not() -> str | None:
    """Why no compiled fetch-and-add is made in this process (None: one is)."""
    _definition()
    return _native.why_not(_NAME)


def native_add_write_index(state: list[Any]) -> Any:
    """A builtin ``hsa_queue_add_write_index_scacq_screl(queue, value)`` over ``state``
    (``[queue, token, address, slow]``, see the module docstring), or None where none can be
    made."""
    if len(state) != 4 or not callable(state[3]):
        return None
    definition = _definition()
    return None if definition is None else _native.new_builtin(definition, state)


def native_load_read_index(add_state: list[Any], offset: int, slow: Any) -> Any:
    """A builtin ``hsa_queue_load_read_index_scacquire(queue)`` that reads the read index of the
    queue ``add_state`` (the add builtin's state) names, ``offset`` bytes past its write index,
    and hands any other queue to ``slow``; or None where none can be made."""
    if len(add_state) != 4 or not callable(slow):
        return None
    definition = _native.cached_definition(
        _LOAD_NAME, _load_module, "hsa_queue_load_read_index_scacquire",
        "The read index of the queue the producer used last (the simulator's, compiled: "
        "hsapy.sim.native_index); any other queue the Python way.")
    return None if definition is None else _native.new_builtin(definition,
                                                               [add_state, offset, slow])
