"""``prepared.publish`` and ``prepared.submit`` as builtins compiled for the host.

hsapy.publishing.named_dispatcher generates one Python function per parameter list whose
short branch is a dozen statements: take the next kernarg slot, check that it holds this
launch's template, arm its signal, pack the explicit arguments, reserve an index, copy the
body, store header|setup, record the generation (and ring the doorbell, for ``submit``). On
the simulator on the 2-vCPU development VM that was 0.42-0.50 us a call, 7-8x an empty Python
function, most of it the interpreter's own work on those statements; this builtin takes
0.14-0.15 us there (benchmarks/launch.py, five runs each way, alternating).

Here the same short branch is a CPython builtin (``METH_FASTCALL | METH_KEYWORDS``,
hsapy/_native.py) written in LLVM IR, bound to the generated function's closure objects:

1. a call with exactly the kernel's explicit arguments by position (no keyword, none of them
   the MISSING default);
2. ``slot = next(slot_order)``; ``(owner, value, body) = state[slot]``; an owner other than
   this launch's packer, or a body that is not 60 bytes, hands the call to ``aside(slot,
   *args)``, a function of the generated source that returns ``general(slot, args)`` as the
   generated function does;
3. while the slot's signal value word is above 0, ``wait_free(slot)``; then it is set to 1;
4. ``pack_explicit(view, slot * slot_size, *args)`` (when the kernel has explicit arguments);
   ``index = add(queue_ptr, 1)``; where ``index >= free_end[0]``, ``make_space(index, index,
   timeout)``. An error in any of them gives the slot back (``give_back(slot)``, the error set
   aside meanwhile) and propagates;
5. bytes 4..63 of the slot are the body, then header|setup with a release store;
   ``indices[slot] = index``;
6. for ``submit``: ``ring_doorbell(index)`` while an observer is attached, else
   ``store_doorbell(doorbell_signal, index)``; the index is returned.

Everything else -- keyword arguments, a wrong count, MISSING -- calls the generated Python
function (``fallback``) with the same arguments, which raises what it raises. The callables
are the generated function's own, so both publish the same bytes (tests/sim/test_publishing.py
compares the builtin with the reference byte for byte). Where builtins are off
(hsapy._native.disabled) or the slot signals have no value words, :func:`native_publisher`
returns None and the generated function stays.
"""
from __future__ import annotations

from typing import Any

from hsapy import _native

__all__ = ["native_publisher", "why_not", "STATE_ITEMS", "TABLE_FIELDS", "MAX_ARGUMENTS"]

_NAME = "hsapy_publish"
STATE_ITEMS = ("none", "fallback", "table", "slot_order", "state", "fast_owner", "wait_free",
               "give_back", "aside", "missing", "view", "pack_explicit", "add", "queue_ptr",
               "one", "free_end", "make_space", "timeout", "indices", "observers",
               "ring_doorbell", "store_doorbell", "doorbell_signal", "bytes_type", "kept")
_S = {name: index for index, name in enumerate(STATE_ITEMS)}
# The table's uint64 words: the ring, its mask, the kernarg slot size, the header|setup word,
# whether to ring the doorbell, the explicit argument count, then each slot's signal value
# word address.
TABLE_FIELDS = ("ring", "mask", "slot_size", "word", "doorbell", "params", "values")
_T = {name: index for index, name in enumerate(TABLE_FIELDS)}
# The most explicit arguments the builtin packs itself (its argument array is on the stack).
MAX_ARGUMENTS = 256
_BODY = 60


def _module() -> Any:
    """The IR of ``publish(state, args, nargs, kwnames)`` (see the module docstring)."""
    e = _native.Emitter("hsapy_publish_native", _NAME, keywords=True)
    b, i64, ptr, null = e.b, e.i64, e.ptr, e.null
    const, call, block, is_same, failed, vectorcall = (
        e.const, e.call, e.block, e.is_same, e.failed, e.vectorcall)
    args, nargs = e.args, e.nargs

    def item(name: str) -> Any:
        return e.item(_S[name])

    table = b.inttoptr(call("PyLong_AsUnsignedLongLong", item("table")), ptr)

    def field(name: str, plus: Any = None) -> Any:
        index = const(_T[name]) if plus is None else b.add(const(_T[name]), plus)
        return b.load(b.gep(table, [index], source_etype=i64), typ=i64)

    fallback, error = block("fallback"), block("error")
    # 1. exactly the explicit arguments, by position, none MISSING
    e.exit_if(b.not_(failed(e.kwnames)), fallback)
    params = field("params")
    e.exit_if(b.or_(b.icmp_signed("!=", nargs, params),
                    b.icmp_signed(">", nargs, const(MAX_ARGUMENTS))), fallback)
    missing = item("missing")
    with e.counted(0, nargs, "scan") as k:
        e.exit_if(is_same(e.pointer_at(args, k), missing), fallback)
    # 2. the next slot, and whether it holds this launch's template
    slot_object = call("PyIter_Next", item("slot_order"))
    got_slot, general = block("got_slot"), block("general")
    b.cbranch(failed(slot_object), error, got_slot)
    b.position_at_end(got_slot)
    slot = call("PyLong_AsUnsignedLongLong", slot_object)
    entry = call("PyList_GetItem", item("state"), slot)
    body = call("PyTuple_GetItem", entry, const(2))
    ours = b.and_(is_same(call("PyTuple_GetItem", entry, const(0)), item("fast_owner")),
                  is_same(e.word_at(body, 8, ptr), item("bytes_type")))
    owned, sized = block("owned"), block("sized")
    b.cbranch(ours, owned, general)
    b.position_at_end(owned)
    b.cbranch(b.icmp_signed("==", call("PyBytes_Size", body), const(_BODY)), sized, general)
    # 3. the slot free, armed (the entry held: another thread may replace it meanwhile)
    b.position_at_end(sized)
    call("Py_IncRef", entry)
    value_word = b.inttoptr(field("values", slot), ptr)
    e.arm(value_word, item("wait_free"), slot_object,
          e.cleanup("wait_failed", entry, slot_object, then=error))
    # 4. pack, reserve, make space; any error: the slot given back
    give_back = block("give_back")
    pack, packed = block("pack"), block("packed")
    b.cbranch(b.icmp_signed(">", params, const(0)), pack, packed)
    b.position_at_end(pack)
    base = call("PyLong_FromUnsignedLongLong", b.mul(slot, field("slot_size")))
    base_made = block("base_made")
    b.cbranch(failed(base), give_back, base_made)
    b.position_at_end(base_made)
    total = b.add(nargs, const(2))
    argv = b.alloca(ptr, total)
    b.store(item("view"), argv)
    b.store(base, b.gep(argv, [const(1)], source_etype=ptr))
    b.call(e.memcpy(), [b.gep(argv, [const(2)], source_etype=ptr), args,
                        b.mul(nargs, const(8)), const(0, e.i1)])
    outcome = call("PyObject_Vectorcall", item("pack_explicit"), argv, total, null)
    call("Py_DecRef", base)
    pack_done = block("pack_done")
    b.cbranch(failed(outcome), give_back, pack_done)
    b.position_at_end(pack_done)
    call("Py_DecRef", outcome)
    b.branch(packed)
    b.position_at_end(packed)
    index_object = vectorcall(item("add"), [item("queue_ptr"), item("one")])
    reserved = block("reserved")
    b.cbranch(failed(index_object), give_back, reserved)
    b.position_at_end(reserved)
    index = call("PyLong_AsUnsignedLongLong", index_object)
    free_end = call("PyLong_AsUnsignedLongLong",
                    call("PyList_GetItem", item("free_end"), const(0)))
    room, make_room = block("room"), block("make_room")
    b.cbranch(b.icmp_unsigned(">=", index, free_end), make_room, room)
    b.position_at_end(make_room)
    e.call_or(item("make_space"), [index_object, index_object, item("timeout")],
              e.cleanup("space_failed", index_object, then=give_back))
    b.branch(room)
    # 5. the body, then header|setup; the slot's generation
    b.position_at_end(room)
    packet = b.gep(b.inttoptr(field("ring"), ptr), [b.shl(b.and_(index, field("mask")),
                                                           const(6))], source_etype=e.i8)
    b.call(e.memcpy(), [b.gep(packet, [const(4)], source_etype=e.i8),
                        call("PyBytes_AsString", body), const(_BODY), const(0, e.i1)])
    e.release_store_u32(b.trunc(field("word"), e.i32), packet)
    call("Py_IncRef", index_object)
    call("PyList_SetItem", item("indices"), slot, index_object)
    call("Py_DecRef", entry)
    call("Py_DecRef", slot_object)
    # 6. the doorbell (submit)
    ring_it, done = block("ring_doorbell"), block("done")
    b.cbranch(b.icmp_unsigned("!=", field("doorbell"), const(0)), ring_it, done)
    b.position_at_end(ring_it)
    observed, plain, rung = block("observed"), block("plain"), block("rung")
    b.cbranch(b.icmp_signed("!=", call("PyObject_Size", item("observers")), const(0)), observed,
              plain)
    b.position_at_end(observed)
    told = vectorcall(item("ring_doorbell"), [index_object])
    b.branch(rung)
    b.position_at_end(plain)
    stored = vectorcall(item("store_doorbell"), [item("doorbell_signal"), index_object])
    b.branch(rung)
    b.position_at_end(rung)
    bell = b.phi(ptr)
    bell.add_incoming(told, observed)
    bell.add_incoming(stored, plain)
    bell_failed, bell_done = block("bell_failed"), block("bell_done")
    b.cbranch(failed(bell), bell_failed, bell_done)
    b.position_at_end(bell_failed)
    call("Py_DecRef", index_object)
    b.ret(null)
    b.position_at_end(bell_done)
    call("Py_DecRef", bell)
    b.branch(done)
    b.position_at_end(done)
    b.ret(index_object)
    # give the slot back with the error set aside, then raise it
    b.position_at_end(give_back)
    saved = b.alloca(ptr, const(3))
    parts = [b.gep(saved, [const(n)], source_etype=ptr) for n in range(3)]
    call("PyErr_Fetch", *parts)
    returned = vectorcall(item("give_back"), [slot_object])
    given_back, raised = block("given_back"), block("raised")
    b.cbranch(failed(returned), raised, given_back)
    b.position_at_end(given_back)
    call("Py_DecRef", returned)
    call("PyErr_Restore", *(b.load(part, typ=ptr) for part in parts))
    call("Py_DecRef", entry)
    call("Py_DecRef", slot_object)
    b.branch(error)
    b.position_at_end(raised)                 # give_back's own error stands
    for part in parts:
        call("Py_DecRef", b.load(part, typ=ptr))
    call("Py_DecRef", entry)
    call("Py_DecRef", slot_object)
    b.branch(error)
    # the slot holds another template: aside(slot, *args), the generated source's
    # ``return general(slot, args)`` (so a traceback shows that source, as it does without
    # the builtin)
    b.position_at_end(general)
    argv = b.alloca(ptr, b.add(nargs, const(1)))
    b.store(slot_object, argv)
    b.call(e.memcpy(), [b.gep(argv, [const(1)], source_etype=ptr), args,
                        b.mul(nargs, const(8)), const(0, e.i1)])
    result = call("PyObject_Vectorcall", item("aside"), argv, b.add(nargs, const(1)), null)
    call("Py_DecRef", slot_object)
    b.ret(result)
    b.position_at_end(error)
    b.ret(null)
    b.position_at_end(fallback)
    b.ret(call("PyObject_Vectorcall", item("fallback"), args, nargs, e.kwnames))
    return e.module


def _definition() -> Any:
    return _native.cached_definition(
        _NAME, _module, "publish",
        "Publish one dispatch (compiled for the host: hsapy._publish_native).", keywords=True)


def why_not() -> str | None:
    """Why no compiled publish is made in this process (None: one is)."""
    _definition()
    return _native.why_not(_NAME)


class CompiledPublish(list):
    """The state of a compiled publish or submit (a list, as the builtin reads it through
    PyList_GetItem): its repr is ``<built-in method publish of CompiledPublish object ...>``."""

    __slots__ = ()


def native_publisher(fallback: Any, name: str, doc: str, objects: dict[str, Any],
                     table: dict[str, int], values: list[int]) -> Any:
    """A builtin ``name(*args)`` taking the steps of the module docstring, shown with ``doc``
    (its first lines the ``name($self, ...)`` signature inspect reads), with ``fallback`` (the
    generated function) for every other call; or None where none can be made. ``objects``
    names the state's objects (STATE_ITEMS but those made here), ``table`` its numbers
    (TABLE_FIELDS but ``values``), ``values`` each slot's signal value word address."""
    import numpy as np

    definition = _definition()
    if definition is None or table["params"] > MAX_ARGUMENTS:
        return None
    words = np.array([table[field] for field in TABLE_FIELDS[:-1]] + list(values), np.uint64)
    made = {"none": None, "fallback": fallback, "table": words.ctypes.data, "one": 1,
            "bytes_type": bytes, "kept": words}
    state = CompiledPublish(made[item] if item in made else objects[item]
                            for item in STATE_ITEMS)
    return _native.new_builtin(_native.renamed_definition(definition, name, doc), state)
