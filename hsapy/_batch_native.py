"""``prepared.batch`` as a builtin compiled for the host: the batcher's short way, no frame.

A batch of empty or identical argument lists is a few memory writes per packet, yet from
Python the call's own statements cost more than those writes: on the simulator on the 2-vCPU
development VM, benchmarks/launch.py's batch256 took 16-20 ns a dispatch with the batcher's
Python function, of which about 5 went to its statements before the ring writes (a copy of the
function without them, in the same benchmark run: 13-14 ns), against 4.3 ns for the C loop that
writes the same packets.

So hsapy.publishing.batcher's ``batch`` is, where it can be, a CPython builtin
(``METH_FASTCALL``, hsapy/_native.py) written in LLVM IR here, taking the steps of the Python
function's short way for the case it handles -- one chunk whose argument lists are all one
object -- and handing every other call to that Python function (``fallback``) with the same
arguments:

1. ``batch(arg_lists)`` or ``batch(arg_lists, True/False)``: ``arg_lists`` a list (exactly) of
   1 to ``limit`` items that are all the same object (by identity), a tuple or list;
2. every lifetime state open (each ``state.closed is False``) and no observer attached
   (``OBSERVERS`` empty);
3. the arena's next half (``next(half_order)``); while its last batch is in flight,
   ``wait_free(half)``; the half's signal value word set to 1 (armed, silently);
4. the kernarg segment: ``pack_explicit(view, base, *args)`` where the half's first segment
   holds this launch's hidden arguments already (``owners[half] is packer``; skipped when there
   is nothing to pack), else ``pack(view, base, *args)`` with the owner unset meanwhile and set
   after. A TypeError there (a wrong argument) gives the half back and hands the call to the
   Python function, which raises what it raises for it; any other error gives the half back
   and propagates;
5. the chunk's rows: those the half remembers when its last batch had this count, else from
   the Python function's cache, ``flat[(half, count, True)]``, or ``chunk_entry(half, count)``
   (which makes them, as the Python function does), then remembered; then
   ``first = add(queue_ptr, count + 1)`` and, where ``first + count >= free_end[0]``,
   ``make_space(first, first + count, timeout)`` (an error in any of them gives the half back
   and propagates);
6. per dispatch, bytes 4..63 of the chunk's first row (the rows of a shared segment are
   alike) and then its header|setup word with a release store into the ring slot
   ``(first + k) & mask``; the same for the chunk's last row, the barrier-AND, after them;
   ``indices[half] = first``;
7. with the doorbell, ``store_doorbell(doorbell_signal, first + count)``;
8. the result: a ``result_type`` made without ``__init__`` (``PyType_GenericAlloc``, as the
   Python function's ``object.__new__``) with its five attributes set.

The Python callables (pack, add, make_space, the doorbell store, wait_free) are called
through ``PyObject_Vectorcall``, so the builtin publishes exactly what the Python function
publishes (tests/sim/test_publishing.py compares both with the reference, byte for byte). The
builtin reads a list's and a tuple's size and items from the objects themselves (``ob_size``
and ``ob_item``, which the stable C API offers only as calls), after :func:`layout_ok` has
checked that this CPython lays them out as expected; where it does not, or builtins are
disabled (hsapy._native.disabled), :func:`native_batcher` returns None and the Python function
stays.
"""
from __future__ import annotations

import ctypes
import sys
from typing import Any

from hsapy import _native

__all__ = ["native_batcher", "layout", "layout_ok", "why_not", "CompiledBatch", "STATE_ITEMS",
           "TABLE_FIELDS"]

_NAME = "hsapy_batch"

# The state list's items, by index (native_batcher fills them).
STATE_ITEMS = ("none", "fallback", "table", "list_type", "tuple_type", "true", "false",
               "states", "closed_name", "observers", "half_order", "owners", "packer", "pack",
               "pack_explicit", "view", "add", "queue_ptr", "free_end", "make_space", "timeout",
               "indices", "store_doorbell", "doorbell_signal", "signals", "wait_free",
               "result_type", "queue", "kernel", "arena", "type_error", "name_queue",
               "name_kernel", "name_chunks", "name_arena", "name_halves", "name_doorbell",
               "flat", "chunk_entry", "memo", "kept")
_S = {name: index for index, name in enumerate(STATE_ITEMS)}
# The uint64 words of the state's table: the two halves' signal value word addresses, the
# largest batch, the size of a half, the ring, its mask, the kernel's explicit argument count,
# the dispatch and barrier-AND header|setup words, and per half the count of the chunk rows it
# remembers (0: none) and their address (written by the builtin).
TABLE_FIELDS = ("value0", "value1", "limit", "half_size", "ring", "mask", "explicit",
                "dispatch_word", "barrier_word", "count0", "count1", "rows0", "rows1")
_T = {name: index for index, name in enumerate(TABLE_FIELDS)}

# PyObject: ob_refcnt, ob_type; PyVarObject adds ob_size; then a list's ob_item pointer
# (CPython 3.10-3.14, 64-bit, with the GIL). A tuple's items follow its header inline, where
# exactly depends on the version (3.14 caches the hash before them): layout() finds them.
_TYPE, _SIZE, _ITEMS = 8, 16, 24
_probed: list[int | None] = []
# The most arguments one call packs here (its argument array is on the stack).
MAX_ARGUMENTS = 256


def layout() -> int | None:
    """The offset of a tuple's first item, where lists and tuples of this CPython are laid out
    as the builtin reads them (type at +8, size at +16, a list's item array pointer at +24),
    else None. Probed once per process."""
    if not _probed:
        found: int | None = None
        if ctypes.sizeof(ctypes.c_void_p) == 8:
            a, b = object(), object()
            items = [a, b, a]
            pair = (b, a)
            word = ctypes.c_uint64.from_address

            def at(obj: Any, offset: int) -> int:
                return word(id(obj) + offset).value

            ok = (at(items, _TYPE) == id(list) and at(items, _SIZE) == 3
                  and at(pair, _TYPE) == id(tuple) and at(pair, _SIZE) == 2)
            array = at(items, _ITEMS) if ok else 0
            if array and [word(array + 8 * k).value for k in range(3)] == [id(a), id(b), id(a)]:
                size = type(pair).__basicsize__
                inline = [offset for offset in range(_SIZE + 8, size + 8, 8)
                          if at(pair, offset) == id(b) and at(pair, offset + 8) == id(a)]
                if len(inline) == 1 and inline[0] == size:  # (items start where the header ends)
                    found = inline[0]
        _probed.append(found)
    return _probed[0]


def layout_ok() -> bool:
    """Whether lists and tuples are laid out as the builtin reads them (see layout)."""
    return layout() is not None


def _module() -> Any:
    """The IR of ``batch(state, args, nargs, kwnames)`` (see the module docstring)."""
    tuple_items = layout()
    if tuple_items is None:
        raise RuntimeError("lists and tuples are not laid out as the builtin reads them")
    e = _native.Emitter("hsapy_batch_native", _NAME, keywords=True)
    module, api, b = e.module, e.api, e.b
    i1, i8, i32, i64, ptr, null = e.i1, e.i8, e.i32, e.i64, e.ptr, e.null
    args, nargs, keywords = e.args, e.nargs, e.kwnames
    memcpy = e.memcpy()
    const, call, block, word_at, is_same, failed, vectorcall, clearing = (
        e.const, e.call, e.block, e.word_at, e.is_same, e.failed, e.vectorcall, e.clearing)

    def item(name: str) -> Any:                 # a borrowed reference from the state list
        return e.item(_S[name])

    table = b.inttoptr(call("PyLong_AsUnsignedLongLong", item("table")), ptr)

    def field(name: str) -> Any:
        return b.load(b.gep(table, [const(_T[name])], source_etype=i64), typ=i64)

    fallback = block("fallback")
    # 1. the arguments: (arg_lists), (arg_lists, True/False) or (arg_lists, doorbell=True/False)
    positional, named, two, flag_true, flag_false, lists = (block(n) for n in (
        "positional", "named", "two", "flag_true", "flag_false", "lists"))
    b.cbranch(failed(keywords), positional, named)
    b.position_at_end(named)        # one keyword, ``doorbell`` (the interned name), after one
    is_doorbell = b.and_(b.icmp_signed("==", nargs, const(1)),
                         b.icmp_signed("==", call("PyObject_Size", keywords), const(1)))
    name_ok = block("name_ok")
    b.cbranch(is_doorbell, name_ok, fallback)
    b.position_at_end(name_ok)
    b.cbranch(is_same(call("PyTuple_GetItem", keywords, const(0)), item("name_doorbell")),
              flag_true, fallback)
    b.position_at_end(positional)
    one = b.block
    b.cbranch(b.icmp_signed("==", nargs, const(1)), lists, two)
    b.position_at_end(two)
    b.cbranch(b.icmp_signed("==", nargs, const(2)), flag_true, fallback)
    b.position_at_end(flag_true)
    flag = b.load(b.gep(args, [const(1)], source_etype=ptr), typ=ptr)
    b.cbranch(is_same(flag, item("true")), lists, flag_false)
    b.position_at_end(flag_false)
    b.cbranch(is_same(flag, item("false")), lists, fallback)
    b.position_at_end(lists)
    doorbell = b.phi(i1)
    doorbell.add_incoming(const(1, i1), one)
    doorbell.add_incoming(const(1, i1), flag_true)
    doorbell.add_incoming(const(0, i1), flag_false)
    arg_lists = b.load(args, typ=ptr)
    list_type = item("list_type")
    is_list = block("is_list")
    b.cbranch(is_same(word_at(arg_lists, _TYPE, ptr), list_type), is_list, fallback)
    b.position_at_end(is_list)
    count = word_at(arg_lists, _SIZE)
    in_range = b.and_(b.icmp_signed(">", count, const(0)),
                      b.icmp_signed("<=", count, field("limit")))
    sized = block("sized")
    b.cbranch(in_range, sized, fallback)
    b.position_at_end(sized)
    items = word_at(arg_lists, _ITEMS, ptr)
    first_args = b.load(items, typ=ptr)
    first_type = word_at(first_args, _TYPE, ptr)
    is_tuple = is_same(first_type, item("tuple_type"))
    e.exit_if(b.not_(b.or_(is_tuple, is_same(first_type, list_type))), fallback)
    with e.counted(1, count, "scan") as k:             # every item the first one, by identity
        e.exit_if(b.not_(is_same(e.pointer_at(items, k), first_args)), fallback)
    # 2. every lifetime state open, no observer
    states = item("states")
    closed_name, false = item("closed_name"), item("false")
    with e.counted(0, call("PyObject_Size", states), "check") as j:
        closed = call("PyObject_GetAttr", call("PyTuple_GetItem", states, j), closed_name)
        e.exit_if(failed(closed), clearing(fallback))
        is_open = is_same(closed, false)
        call("Py_DecRef", closed)
        e.exit_if(b.not_(is_open), fallback)
    take = block("take")
    b.cbranch(b.icmp_signed("==", call("PyObject_Size", item("observers")), const(0)), take,
              fallback)
    # 3. the next half, free, armed. The first argument list is held from here on: another
    # thread may change ``arg_lists`` while a Python callable runs (wait_free, pack, ...)
    b.position_at_end(take)
    call("Py_IncRef", first_args)
    half_object = call("PyIter_Next", item("half_order"))
    got_half, error = block("got_half"), block("error")
    b.cbranch(failed(half_object), error, got_half)
    b.position_at_end(got_half)
    half = call("PyLong_AsUnsignedLongLong", half_object)
    value_word = b.inttoptr(b.select(b.icmp_unsigned("==", half, const(0)), field("value0"),
                                     field("value1")), ptr)
    e.arm(value_word, item("wait_free"), half_object,
          e.cleanup("wait_failed", half_object, then=error))

    def give_back() -> None:
        b.store(const(0), value_word, align=8)

    # 4. the kernarg segment
    owners, packer = item("owners"), item("packer")
    owned = is_same(call("PyList_GetItem", owners, half), packer)
    explicit_only, anything, repack, pack_call, packed = (block(n) for n in (
        "explicit_only", "anything", "repack", "pack_call", "packed"))
    b.cbranch(owned, explicit_only, repack)
    b.position_at_end(explicit_only)
    nothing = b.and_(b.icmp_signed("==", word_at(first_args, _SIZE), const(0)),
                     b.icmp_signed("==", field("explicit"), const(0)))
    b.cbranch(nothing, packed, anything)
    b.position_at_end(anything)
    pack_explicit = item("pack_explicit")
    b.branch(pack_call)
    b.position_at_end(repack)
    none = item("none")
    call("Py_IncRef", none)
    call("PyList_SetItem", owners, half, none)
    pack = item("pack")
    b.branch(pack_call)
    b.position_at_end(pack_call)
    callee = b.phi(ptr)
    callee.add_incoming(pack_explicit, anything)
    callee.add_incoming(pack, repack)
    # (view, base, *args) on the stack, each argument held for the call: a list's items could
    # change whenever Python code runs (wait_free; dropping the old owner), so they are read
    # only now. More than MAX_ARGUMENTS (no kernel has that many): the Python way
    argument_count = word_at(first_args, _SIZE)
    in_tuple, in_list, have_items = block("in_tuple"), block("in_list"), block("have_items")
    b.cbranch(is_tuple, in_tuple, in_list)
    b.position_at_end(in_tuple)                    # a tuple's items follow its header
    tuple_array = b.gep(first_args, [const(tuple_items)], source_etype=i8)
    b.branch(have_items)
    b.position_at_end(in_list)                     # a list points at its item array
    list_array = word_at(first_args, _ITEMS, ptr)
    b.branch(have_items)
    b.position_at_end(have_items)
    argument_items = b.phi(ptr)
    argument_items.add_incoming(tuple_array, in_tuple)
    argument_items.add_incoming(list_array, in_list)
    too_many, not_too_many = block("too_many"), block("not_too_many")
    b.cbranch(b.icmp_unsigned(">", argument_count, const(MAX_ARGUMENTS)), too_many,
              not_too_many)
    b.position_at_end(too_many)
    give_back()
    call("Py_DecRef", half_object)
    call("Py_DecRef", first_args)
    b.branch(fallback)
    b.position_at_end(not_too_many)
    base = call("PyLong_FromUnsignedLongLong", b.mul(half, field("half_size")))
    base_made = block("base_made")
    base_failed = block("base_failed")
    b.cbranch(failed(base), base_failed, base_made)
    b.position_at_end(base_failed)
    give_back()
    call("Py_DecRef", half_object)
    b.branch(error)
    b.position_at_end(base_made)
    total = b.add(argument_count, const(2))
    argv = b.alloca(ptr, total)
    b.store(item("view"), argv)
    b.store(base, b.gep(argv, [const(1)], source_etype=ptr))
    with e.counted(0, argument_count, "hold") as m:
        argument = e.pointer_at(argument_items, m)
        call("Py_IncRef", argument)
        b.store(argument, b.gep(argv, [b.add(m, const(2))], source_etype=ptr))
    outcome = call("PyObject_Vectorcall", callee, argv, total, null)
    with e.counted(2, total, "release") as m:
        call("Py_DecRef", e.pointer_at(argv, m))
    call("Py_DecRef", base)
    pack_failed, pack_done, retry, pack_error = (block(n) for n in (
        "pack_failed", "pack_done", "retry", "pack_error"))
    b.cbranch(failed(outcome), pack_failed, pack_done)
    b.position_at_end(pack_failed)
    give_back()
    call("Py_DecRef", half_object)
    matches = call("PyErr_ExceptionMatches", item("type_error"))
    b.cbranch(b.icmp_signed("!=", matches, const(0, i32)), retry, pack_error)
    b.position_at_end(retry)              # the Python way raises the error it raises for them
    call("PyErr_Clear")
    call("Py_DecRef", first_args)
    b.branch(fallback)
    b.position_at_end(pack_error)
    b.branch(error)
    b.position_at_end(pack_done)
    call("Py_DecRef", outcome)
    set_owner = block("set_owner")
    b.cbranch(owned, packed, set_owner)
    b.position_at_end(set_owner)
    call("Py_IncRef", packer)
    call("PyList_SetItem", owners, half, packer)
    b.branch(packed)
    # 5. the chunk's rows, made once per (half, count, shared) in the Python way's cache
    # (``chunk_entry`` makes a missing entry, as the Python way does), and remembered per half
    # with the count they were for (the state's ``memo`` holds the entry, so its arrays live
    # on when the cache lets them go): a batch of the count before reads no Python object to
    # find them. Then the reservation
    b.position_at_end(packed)
    count_object = call("PyLong_FromUnsignedLongLong", count)
    rows_failed = block("rows_failed")
    e.exit_if(failed(count_object), rows_failed)
    memo_count = b.gep(table, [b.add(const(_T["count0"]), half)], source_etype=i64)
    memo_rows = b.gep(table, [b.add(const(_T["rows0"]), half)], source_etype=i64)
    remembered, look_up, have_rows = block("remembered"), block("look_up"), block("have_rows")
    b.cbranch(b.icmp_unsigned("==", b.load(memo_count, typ=i64), count), remembered, look_up)
    b.position_at_end(remembered)
    rows_remembered = b.load(memo_rows, typ=i64)
    b.branch(have_rows)
    b.position_at_end(look_up)
    key = b.call(api["PyTuple_Pack"], [const(3), half_object, count_object, item("true")])
    e.exit_if(failed(key), rows_failed)
    found = call("PyDict_GetItem", item("flat"), key)             # (borrowed, or NULL)
    call("Py_DecRef", key)
    lookup = b.block
    make_rows, got_entry = block("make_rows"), block("got_entry")
    b.cbranch(failed(found), make_rows, got_entry)
    b.position_at_end(make_rows)
    made_rows = vectorcall(item("chunk_entry"), [half_object, count_object])
    e.exit_if(failed(made_rows), rows_failed)
    made_block = b.block
    b.branch(got_entry)
    b.position_at_end(got_entry)
    entry = b.phi(ptr)
    entry.add_incoming(found, lookup)
    entry.add_incoming(made_rows, made_block)
    held, hold = block("held"), block("hold")
    b.cbranch(failed(found), held, hold)                         # (made: a new reference)
    b.position_at_end(hold)
    call("Py_IncRef", entry)
    b.branch(held)
    b.position_at_end(held)
    rows_found = call("PyLong_AsUnsignedLongLong", call("PyTuple_GetItem", entry, const(2)))
    b.store(rows_found, memo_rows)
    b.store(count, memo_count)
    call("PyList_SetItem", item("memo"), half, entry)           # (takes the reference)
    found_block = b.block
    b.branch(have_rows)
    b.position_at_end(rows_failed)
    give_back()
    b.branch(e.cleanup("rows_cleanup", half_object, count_object, then=error))
    b.position_at_end(have_rows)
    rows_address = b.phi(i64)
    rows_address.add_incoming(rows_remembered, remembered)
    rows_address.add_incoming(rows_found, found_block)
    rows = b.inttoptr(rows_address, ptr)
    slots = call("PyLong_FromUnsignedLongLong", b.add(count, const(1)))
    reserve, reserved, reserve_failed = (block(n) for n in ("reserve", "reserved",
                                                           "reserve_failed"))
    b.cbranch(failed(slots), reserve_failed, reserve)
    b.position_at_end(reserve)
    first_object = vectorcall(item("add"), [item("queue_ptr"), slots])
    call("Py_DecRef", slots)
    b.cbranch(failed(first_object), reserve_failed, reserved)
    b.position_at_end(reserve_failed)
    give_back()
    b.branch(e.cleanup("reserve_cleanup", half_object, count_object, then=error))
    b.position_at_end(reserved)
    first = call("PyLong_AsUnsignedLongLong", first_object)
    last = b.add(first, count)
    last_object = call("PyLong_FromUnsignedLongLong", last)
    free_end = call("PyLong_AsUnsignedLongLong",
                    call("PyList_GetItem", item("free_end"), const(0)))
    room, make_room, space_failed, have_last = (block(n) for n in (
        "room", "make_room", "space_failed", "have_last"))
    b.cbranch(failed(last_object), space_failed, have_last)
    b.position_at_end(have_last)
    b.cbranch(b.icmp_unsigned(">=", last, free_end), make_room, room)
    b.position_at_end(make_room)
    e.call_or(item("make_space"), [first_object, last_object, item("timeout")], space_failed)
    b.branch(room)
    b.position_at_end(space_failed)
    give_back()
    b.branch(e.cleanup("space_cleanup", half_object, count_object, first_object,
                       last_object, then=error))
    # 6. the packets, each as the C floor writes one: bytes 4..63, then header|setup with a
    # release store. The chunk's dispatch rows are alike (one shared kernarg segment), so each
    # is copied from its first row, which stays in the cache, and the barrier-AND from its last
    # (all of the rows, straight after the packet processor ran, cost 12-19 ns a dispatch
    # against 7-13 on the 2-vCPU development VM: benchmarks/launch.py's batch256)
    b.position_at_end(room)
    ring, mask = b.inttoptr(field("ring"), ptr), field("mask")

    def packet(index: Any, row: Any, header: Any) -> None:
        slot = b.gep(ring, [b.shl(b.and_(index, mask), const(6))], source_etype=i8)
        b.call(memcpy, [b.gep(slot, [const(4)], source_etype=i8),
                        b.gep(row, [const(4)], source_etype=i8), const(60), const(0, i1)])
        e.release_store_u32(header, slot)

    dispatch_word = b.trunc(field("dispatch_word"), i32)
    with e.counted(first, last, "write") as index:
        packet(index, rows, dispatch_word)
    packet(last, b.gep(rows, [b.shl(count, const(6))], source_etype=i8),
           b.trunc(field("barrier_word"), i32))
    call("Py_IncRef", first_object)
    call("PyList_SetItem", item("indices"), half, first_object)
    # 7. the doorbell
    ring_it, rung = block("ring_doorbell"), block("rung")
    b.cbranch(doorbell, ring_it, rung)
    b.position_at_end(ring_it)
    e.call_or(item("store_doorbell"), [item("doorbell_signal"), last_object],
              e.cleanup("bell_failed", half_object, count_object, first_object, last_object,
                        then=error))
    b.branch(rung)
    # 8. the result
    b.position_at_end(rung)
    call("Py_DecRef", last_object)
    result = call("PyType_GenericAlloc", item("result_type"), const(0))
    chunk = b.call(api["PyTuple_Pack"], [const(3), first_object, count_object,
                                         call("PyList_GetItem", item("signals"), half)])
    chunks, halves = call("PyList_New", const(1)), call("PyList_New", const(1))
    anything_failed = b.or_(failed(result), b.or_(failed(chunk), b.or_(failed(chunks),
                                                                       failed(halves))))
    fill, result_failed = block("fill"), block("result_failed")
    b.cbranch(anything_failed, result_failed, fill)
    b.position_at_end(result_failed)      # out of memory: drop what was made, raise
    for made_object in (result, count_object, chunk, chunks, halves):
        call("Py_DecRef", made_object)         # (Py_DecRef takes NULL)
    call("Py_DecRef", half_object)
    call("Py_DecRef", first_object)
    b.branch(error)
    b.position_at_end(fill)
    call("Py_DecRef", count_object)
    call("Py_DecRef", first_object)
    call("PyList_SetItem", chunks, const(0), chunk)          # (steals the references)
    call("PyList_SetItem", halves, const(0), half_object)
    set_failed = block("set_failed")
    for name, value in (("name_queue", item("queue")), ("name_kernel", item("kernel")),
                        ("name_chunks", chunks), ("name_arena", item("arena")),
                        ("name_halves", halves)):
        then = block(f"set_{name}")
        b.cbranch(b.icmp_signed("!=", call("PyObject_SetAttr", result, item(name), value),
                                const(0, i32)), set_failed, then)
        b.position_at_end(then)
    call("Py_DecRef", chunks)
    call("Py_DecRef", halves)
    call("Py_DecRef", first_args)
    b.ret(result)
    b.position_at_end(set_failed)
    for made_object in (result, chunks, halves):
        call("Py_DecRef", made_object)
    b.branch(error)
    # errors (all after the take): the set exception propagates
    b.position_at_end(error)
    call("Py_DecRef", first_args)
    b.ret(null)
    # anything else: the Python function, with the same arguments
    b.position_at_end(fallback)
    b.ret(call("PyObject_Vectorcall", item("fallback"), args, nargs, keywords))
    return module


def _definition() -> Any:
    """The compiled function's method definition (built on first ask), or None."""
    return _native.cached_definition(
        _NAME, _module, "batch",
        # (the first lines are the signature inspect reads: CPython's __text_signature__)
        "batch($self, arg_lists, doorbell=True)\n--\n\n"
        "Publish one dispatch per argument list, then a barrier-AND packet closing the chunk "
        "(PreparedDispatch.batch; compiled for the host: hsapy._batch_native).",
        keywords=True)


def why_not() -> str | None:
    """Why no compiled batch is made in this process (None: one is)."""
    if not layout_ok():
        return "lists and tuples are not laid out as the builtin reads them"
    _definition()
    return _native.why_not(_NAME)


def native_batcher(fallback: Any, objects: dict[str, Any], table: dict[str, int]) -> Any:
    """A builtin ``batch(arg_lists, doorbell=True)`` taking the steps of the module docstring,
    with ``fallback`` (the batcher's Python function) for every other call; or None where none
    can be made. ``objects`` names the state's objects (STATE_ITEMS but those this function
    makes: ``none``, ``fallback``, the types, ``true``/``false``, the attribute names,
    ``type_error``, ``table``, ``memo`` and ``kept``), ``table`` its numbers
    (TABLE_FIELDS)."""
    import numpy as np

    if not layout_ok():
        return None
    definition = _definition()
    if definition is None:
        return None
    words = np.array([table[name] for name in TABLE_FIELDS], np.uint64)
    made = {"none": None, "fallback": fallback, "table": words.ctypes.data, "list_type": list,
            "tuple_type": tuple, "true": True, "false": False, "closed_name": "closed",
            "type_error": TypeError, "name_queue": "queue", "name_kernel": "kernel",
            "name_chunks": "chunks", "name_arena": "arena", "name_halves": "halves",
            "name_doorbell": sys.intern("doorbell"),
            "kept": words, "memo": [None, None],
            "states": tuple(objects["states"])}       # (read with PyTuple_GetItem)
    state = CompiledBatch(made[name] if name in made else objects[name] for name in STATE_ITEMS)
    return _native.new_builtin(definition, state)


class CompiledBatch(list):
    """The state of a compiled batch (a list, as the builtin reads it through PyList_GetItem):
    its repr is ``<built-in method batch of CompiledBatch object ...>``."""

    __slots__ = ()
