"""The simulated doorbell store as a builtin function compiled for the host.

Every ``queue.submit()``, ``prepared()`` and batch ends with ``hsa_signal_store_screlease`` on
the queue's doorbell signal. On the simulator that call is SimLib's Python function
(hsapy/sim/api_signals.py, ``compiled_signal_store``), which takes the signal's lock, stores the
value, raises the signal's high-water mark and wakes whoever waits. Its frame and the Python
objects it touches cost more than the store: the packet processor thread reads the same
signal object for every packet it takes, so straight after a batch has been consumed the
publishing thread finds those objects in the other CPU's cache (a 2-vCPU VM, Python 3.11: about
2.5 us for the first store after a consumed batch, 0.7 us for the next one).

This module builds the same store as a CPython builtin (``METH_FASTCALL``, hsapy/_native.py)
bound to one signal, which writes only the signal's slot in simulated memory and the reference
count of the None it returns (it reads the lock's flag byte and the sizes of the waiter list
and watcher set):

- its state is ``[signal, value address, lock address, waiters, watchers, slow, None,
  SimSignal]``: the
  ``hsa_signal_t`` cdata it is bound to (compared by identity), the address of the slot's value
  word (the high-water mark is word 7 of the same slot, hsapy.sim.signals.WORD_HIGH_WATER), the
  address of the byte of the signal's ``threading.Lock`` that is non-zero while it is held
  (found by :func:`lock_flag_offset`), the signal's list of blocked waiters and its set of
  watchers, and ``slow``, the Python function;
- a call with that signal and an int from 0 to INT64_MAX, while the lock is free and nobody
  waits or watches, stores the value into the value word, raises the high-water word to it
  when it is larger, and returns None. It runs holding the GIL and calls nothing that could
  run Python code or let the GIL go, so to every other thread it is one step, as the Python
  function's locked section is (a thread holding the lock could be between its check and its
  wait: the lock being free rules that out);
- anything else (another signal, a value the C conversion refuses or one past INT64_MAX, the
  lock held, a waiter or a watcher to wake, a wrong argument count) calls ``slow`` with the
  same arguments.

The signal table points a bound state at no signal (hsapy.sim.signals.UNBOUND) when its signal
is destroyed (``SignalTable.keep_bound``; the runtime's teardown too), so a builtin that
outlives its signal goes the Python way, which finds no live signal and does nothing.

Where it cannot be built (no llvmlite host target, a Python without the GIL,
``HSAPY_NATIVE_BUILTINS=0``, or a ``threading.Lock`` whose layout the probe does not
recognise) :func:`native_signal_store` returns None and the Python function stays.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Any

from hsapy import _native

__all__ = ["native_signal_store", "lock_flag_offset", "available", "why_not"]

_NAME = "hsapy_sim_signal_store"
INT64_MAX = (1 << 63) - 1
_probed: list[int | None] = []


def _lock_bytes(lock: Any, size: int) -> bytes:
    return ctypes.string_at(id(lock), size)


def lock_flag_offset() -> int | None:
    """The offset in a ``threading.Lock`` object of the one byte that reads non-zero exactly
    while the lock is held (CPython 3.11 and 3.12: lockobject.locked; 3.13: its PyMutex), or
    None when no single byte behaves so. Probed once per process, on fresh locks, acquiring and
    releasing each a few times."""
    if _probed:
        return _probed[0]
    found: int | None = None
    lock_type = type(threading.Lock())
    size = getattr(lock_type, "__basicsize__", 0)
    head = 2 * ctypes.sizeof(ctypes.c_void_p)          # PyObject_HEAD: refcount, type
    if lock_type.__module__ == "_thread" and size > head:
        offsets = set()
        for _ in range(2):
            lock = threading.Lock()
            samples = []
            for _ in range(3):
                samples.append(_lock_bytes(lock, size))
                lock.acquire()
                samples.append(_lock_bytes(lock, size))
                lock.release()
            free, held = samples[0::2], samples[1::2]
            changing = [k for k in range(head, size)
                        if any(sample[k] != free[0][k] for sample in samples)]
            if (len(changing) == 1 and all(s[changing[0]] == 0 for s in free)
                    and all(s[changing[0]] != 0 for s in held)):
                offsets.add(changing[0])
            else:
                offsets.add(-1)
        if len(offsets) == 1 and -1 not in offsets:
            found = offsets.pop()
    _probed.append(found)
    return found


def _module() -> Any:
    """The IR of ``store(state, args, nargs)`` (see the module docstring)."""
    from llvmlite import ir

    i8, i64, ptr = ir.IntType(8), ir.IntType(64), ir.PointerType()
    module, api, fn = _native.builtin_ir("hsapy_sim_native_signal", _NAME)
    get_item, as_u64, size = api["PyList_GetItem"], api["PyLong_AsUnsignedLongLong"], api[
        "PyObject_Size"]
    state, args, nargs = fn.args
    blocks = {name: fn.append_basic_block(name) for name in (
        "entry", "value", "unlocked", "no_waiter", "store", "raise_mark", "done", "slow")}
    b = ir.IRBuilder(blocks["entry"])

    def const(value: int, kind: Any = i64) -> ir.Constant:
        return ir.Constant(kind, value)

    def item(index: int) -> ir.Value:
        return b.call(get_item, [state, const(index)])

    def address(index: int, kind: Any) -> ir.Value:   # the state's ints: addresses it made
        return b.inttoptr(b.call(as_u64, [item(index)]), ir.PointerType(kind))

    _native.branch_on_first(b, args, nargs, 2, lambda: item(0), blocks["value"], blocks["slow"])
    # the value: an int (PyLong_AsUnsignedLongLong takes no __index__ object) from 0 up to
    # INT64_MAX
    b.position_at_end(blocks["value"])
    value = _native.unsigned_or(
        b, api, b.load(b.gep(args, [const(1)], source_etype=ptr), typ=ptr), blocks["slow"])
    b.cbranch(b.icmp_signed("<", value, const(0)), blocks["slow"], blocks["unlocked"])
    # nobody inside the signal's locked section, nobody to wake
    b.position_at_end(blocks["unlocked"])
    held = b.load(address(2, i8), typ=i8)
    b.cbranch(b.icmp_unsigned("!=", held, const(0, i8)), blocks["slow"], blocks["no_waiter"])
    b.position_at_end(blocks["no_waiter"])
    waiting = b.or_(b.call(size, [item(3)]), b.call(size, [item(4)]))
    b.cbranch(b.icmp_signed("!=", waiting, const(0)), blocks["slow"], blocks["store"])
    # the value word (a release store, as the Python function's under its lock), then the mark
    b.position_at_end(blocks["store"])
    word = address(1, i64)
    b.store_atomic(value, word, "release", 8)
    mark_word = b.gep(word, [const(6)], source_etype=i64)      # word 7 (value is word 1)
    mark = b.load(mark_word, typ=i64, align=8)
    b.cbranch(b.icmp_signed(">", value, mark), blocks["raise_mark"], blocks["done"])
    b.position_at_end(blocks["raise_mark"])
    b.store(value, mark_word, align=8)
    b.branch(blocks["done"])
    b.position_at_end(blocks["done"])
    none = item(6)
    b.call(api["Py_IncRef"], [none])
    b.ret(none)
    # the Python function, with the same arguments
    b.position_at_end(blocks["slow"])
    _native.return_call(b, api, item(5), args, nargs)
    return module


def _definition() -> Any:
    """The compiled function's method definition (built on first ask), or None."""
    return _native.cached_definition(
        _NAME, _module, "hsa_signal_store_screlease",
        "Store a value into the one signal this function is bound to, waking nobody (the "
        "simulator's doorbell store, compiled: hsapy.sim.native_signal).")


def available() -> bool:
    """Whether the compiled store can be made in this process (``why_not()`` says what
    stopped it)."""
    return why_not() is None


def why_not() -> str | None:
    """Why no compiled store is made in this process (None: one is)."""
    if lock_flag_offset() is None:
        return "threading.Lock's layout is not one the probe recognises"
    _definition()
    return _native.why_not(_NAME)


def native_signal_store(signal: Any, sim_signal: Any, slow: Any) -> tuple[Any, list[Any]] | None:
    """(a builtin ``hsa_signal_store_screlease(signal, value)`` bound to ``signal`` -- the
    ``hsa_signal_t`` cdata a producer passes -- whose SimSignal is ``sim_signal``, its state
    list), or None where none can be made. ``slow`` is the Python function."""
    offset = lock_flag_offset()
    if offset is None or not callable(slow):
        return None
    definition = _definition()
    if definition is None:
        return None
    from hsapy.sim.signals import WORD_VALUE

    # (the SimSignal last: it keeps the lock object alive as long as the state names it)
    state = [signal, sim_signal.words.ctypes.data + 8 * WORD_VALUE, id(sim_signal.lock) + offset,
             sim_signal.waiters, sim_signal.watchers, slow, None, sim_signal]
    return _native.new_builtin(definition, state), state
