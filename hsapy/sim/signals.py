"""Simulated HSA signals: an int64 value, a condition variable and optional watchers.

A signal's handle is the address of a 64-byte ``amd_signal_t``-shaped slot in simulated memory
(as in ROCr, where the handle points at the signal's amd_signal_t): word 0 = kind (1 user,
-1 doorbell), word 1 = value, words 4/5 = start_ts/end_ts written by the packet processor or the
copy engine when profiling is on (layout from /usr/include/hsa/amd_hsa_signal.h). The value in
the slot is the signal's value; every change goes through the signal's lock and wakes waiters.
Word 7 (amd_signal_t.reserved3, which ROCr leaves alone) is the simulator's own: the largest
value ever stored, the "rung up to" mark of a doorbell (``SimSignal.high_water``).
"""
from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable

import numpy as np

from hsapy.hsa_enums import (
    HSA_SIGNAL_CONDITION_EQ,
    HSA_SIGNAL_CONDITION_GTE,
    HSA_SIGNAL_CONDITION_LT,
    HSA_SIGNAL_CONDITION_NE,
)
from hsapy.sim.memory import SimMemory

__all__ = ["SimSignal", "SignalTable", "condition_holds", "wait_any", "UNBOUND",
           "WORD_HIGH_WATER"]

SIGNAL_SLOT_BYTES = 64          # AMD_SIGNAL_ALIGN_BYTES
SLOTS_PER_SLAB = 1024
KIND_USER = 1                   # AMD_SIGNAL_KIND_USER
KIND_DOORBELL = -1              # AMD_SIGNAL_KIND_DOORBELL
WORD_KIND, WORD_VALUE, WORD_START_TS, WORD_END_TS = 0, 1, 4, 5
WORD_HIGH_WATER = 7             # the simulator's own (see the module docstring)

# What a compiled store's state names once its signal is gone (SignalTable.keep_bound): no
# argument, not even None, is this object.
UNBOUND = object()

_MASK64 = (1 << 64) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def to_int64(value: int) -> int:
    """Wrap an integer to the int64 range (hsa_signal_value_t arithmetic wraps)."""
    value &= _MASK64
    return value - (1 << 64) if value >> 63 else value


def condition_holds(condition: int, value: int, compare: int) -> bool:
    """Evaluate an hsa_signal_condition_t; unknown conditions never hold."""
    if condition == HSA_SIGNAL_CONDITION_EQ:
        return value == compare
    if condition == HSA_SIGNAL_CONDITION_NE:
        return value != compare
    if condition == HSA_SIGNAL_CONDITION_LT:
        return value < compare
    if condition == HSA_SIGNAL_CONDITION_GTE:
        return value >= compare
    return False


class SimSignal:
    """One signal. ``handle`` is its slot address; ``words`` an int64 view of the slot."""

    __slots__ = ("handle", "words", "view", "cond", "lock", "waiters", "watchers", "is_valid",
                 "__weakref__")

    def __init__(self, handle: int, words: np.ndarray, kind: int, initial_value: int) -> None:
        self.handle = handle
        self.words = words
        # The same slot as a memoryview of int64: one load/store per access on the hot paths,
        # cheaper from Python than a numpy scalar or a cffi int64_t * (about half of the latter).
        self.view = memoryview(words).cast("B").cast("q")
        # ``lock`` is the condition's own lock and ``waiters`` its list of blocked waiters
        # (CPython's Condition._waiters, one object for the condition's life), held here so
        # that a store (hsapy.sim.api_signals.compiled_signal_store) touches neither the
        # Condition nor its attribute dictionary
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.waiters = self.cond._waiters  # type: ignore[attr-defined]
        self.watchers: set[threading.Event] = set()
        self.is_valid = True
        words[:] = 0
        words[WORD_KIND] = kind
        words[WORD_VALUE] = words[WORD_HIGH_WATER] = to_int64(initial_value)

    @property
    def high_water(self) -> int:
        """Largest value ever stored: a doorbell's "rung up to" index (producers may ring out
        of order, so the processor must not trust only the last value). Word 7 of the slot, so
        the compiled doorbell store (hsapy.sim.native_signal) raises it without Python."""
        return self.view[WORD_HIGH_WATER]

    # All mutations hold ``cond`` and end in _changed(), so waiters never miss an update.
    def _changed(self) -> None:
        view = self.view
        value = view[WORD_VALUE]
        if value > view[WORD_HIGH_WATER]:
            view[WORD_HIGH_WATER] = value
        # Condition._waiters: CPython's list of blocked waiters (see exchange)
        if self.cond._waiters:  # type: ignore[attr-defined]
            self.cond.notify_all()
        for event in tuple(self.watchers):
            event.set()

    def load(self) -> int:
        """Current value."""
        return self.view[WORD_VALUE]

    def store_silent(self, value: int) -> None:
        """Set the value without waking waiters (they see it at their next check)."""
        if not INT64_MIN <= value <= INT64_MAX:
            value = to_int64(value)
        lock = self.cond
        lock.acquire()
        view = self.view
        view[WORD_VALUE] = value
        if value > view[WORD_HIGH_WATER]:
            view[WORD_HIGH_WATER] = value
        lock.release()

    def exchange(self, value: int) -> int:
        """Atomically set the value; return the old one. Wakes waiters when there are any."""
        if not INT64_MIN <= value <= INT64_MAX:
            value = to_int64(value)
        cond = self.cond
        cond.acquire()
        try:
            view = self.view
            old = view[WORD_VALUE]
            view[WORD_VALUE] = value
            if value > view[WORD_HIGH_WATER]:
                view[WORD_HIGH_WATER] = value
            # Condition._waiters: CPython's list of blocked waiters; skipping notify_all when it
            # is empty keeps an uncontended exchange to one lock round trip.
            if cond._waiters or self.watchers:  # type: ignore[attr-defined]
                self._changed()
        finally:
            cond.release()
        return old

    # Set the value and wake waiters: exchange itself, the old value unused (a doorbell is one
    # of these per ring, so it is one call, not a call to exchange)
    store = exchange

    def modify(self, operation: Callable[[int], int]) -> int:
        """Atomically replace the value by ``operation(old)``; return the old value."""
        with self.cond:
            old = self.view[WORD_VALUE]
            self.view[WORD_VALUE] = to_int64(operation(old))
            self._changed()
        return old

    def subtract(self, amount: int) -> int:
        """Atomically subtract ``amount`` (the packet processor's completion decrement)."""
        cond = self.cond
        cond.acquire()
        try:
            view = self.view
            old = view[WORD_VALUE]
            new = old - amount                     # wraps as int64 arithmetic does
            view[WORD_VALUE] = new if INT64_MIN <= new <= INT64_MAX else to_int64(new)
            if cond._waiters or self.watchers:  # type: ignore[attr-defined]
                self._changed()
        finally:
            cond.release()
        return old

    def cas(self, expected: int, value: int) -> int:
        """Compare-and-swap; return the value observed before the operation."""
        with self.cond:
            old = int(self.words[WORD_VALUE])
            if old == to_int64(expected):
                self.words[WORD_VALUE] = to_int64(value)
                self._changed()
        return old

    def wait(self, condition: int, compare: int, timeout_s: float | None,
             stop: Callable[[], bool] | None = None) -> int:
        """Block until the condition holds, ``timeout_s`` passes (None: no limit) or ``stop()``.

        Returns the value last observed (like hsa_signal_wait_*, the caller re-checks it).
        Waits in slices of at most 50 ms so that ``stop`` is polled.
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self.cond:
            while True:
                value = int(self.words[WORD_VALUE])
                if condition_holds(condition, value, compare):
                    return value
                if stop is not None and stop():
                    return value
                slice_s = 0.05
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return value
                    slice_s = min(slice_s, remaining)
                self.cond.wait(slice_s)

    @property
    def start_ts(self) -> int:
        """Profiling start timestamp (ticks)."""
        return int(self.words[WORD_START_TS])

    @property
    def end_ts(self) -> int:
        """Profiling end timestamp (ticks)."""
        return int(self.words[WORD_END_TS])

    def set_times(self, start: int, end: int) -> None:
        """Record profiling timestamps (before the completion decrement, as ROCr does)."""
        self.words[WORD_START_TS] = start
        self.words[WORD_END_TS] = end


def wait_any(signals: list[SimSignal], conditions: list[int], compares: list[int],
             timeout_s: float | None, stop: Callable[[], bool] | None = None) -> tuple[int, int]:
    """Wait until one signal satisfies its condition.

    Returns ``(index, value)`` of the first satisfied signal, or ``(len(signals), 0)`` on
    timeout / stop (hsa_amd_signal_wait_any's convention is to return the index).
    """
    event = threading.Event()
    for signal in signals:
        with signal.cond:
            signal.watchers.add(event)
    try:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            event.clear()
            for i, signal in enumerate(signals):
                value = signal.load()
                if condition_holds(conditions[i], value, compares[i]):
                    return i, value
            if stop is not None and stop():
                return len(signals), 0
            slice_s = 0.05
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return len(signals), 0
                slice_s = min(slice_s, remaining)
            event.wait(slice_s)
    finally:
        for signal in signals:
            with signal.cond:
                signal.watchers.discard(event)


class SignalTable:
    """Creates, finds and destroys signals; slots come from slabs of simulated memory."""

    def __init__(self, memory: SimMemory, owner: int = 0) -> None:
        self._memory = memory
        self._owner = owner
        self._lock = threading.Lock()
        self._signals: dict[int, SimSignal] = {}
        self.by_handle = self._signals  # read-only use: the runtime's hot paths look up here
        # FIFO reuse, so a just-destroyed handle stays invalid for a while.
        self._free: collections.deque[int] = collections.deque()
        self._slabs: list[int] = []
        # handle -> the state lists of compiled stores bound to that signal (keep_bound)
        self._bound: dict[int, list[list]] = {}

    def _grow(self) -> None:
        base = self._memory.allocate(SIGNAL_SLOT_BYTES * SLOTS_PER_SLAB, 4096, None,
                                     owner=self._owner, tag="signals")
        self._slabs.append(base)
        self._free.extend(base + i * SIGNAL_SLOT_BYTES for i in range(SLOTS_PER_SLAB))

    def create(self, initial_value: int, kind: int = KIND_USER) -> SimSignal:
        """A new signal (raises MemoryError when no slab can be allocated)."""
        with self._lock:
            if not self._free:
                self._grow()
            handle = self._free.popleft()
            words = self._memory.view(handle, SIGNAL_SLOT_BYTES).view(np.int64)
            signal = SimSignal(handle, words, kind, initial_value)
            self._signals[handle] = signal
        return signal

    def get(self, handle: int) -> SimSignal | None:
        """The live signal with this handle, or None."""
        return self._signals.get(handle)

    def destroy(self, handle: int) -> bool:
        """Destroy a signal; False when the handle is unknown."""
        with self._lock:
            signal = self._signals.pop(handle, None)
            if signal is None:
                return False
            for state in self._bound.pop(handle, ()):
                state[0] = UNBOUND
            with signal.cond:
                signal.is_valid = False
                signal.words[WORD_KIND] = 0
                signal._changed()
            self._free.append(handle)
        return True

    def keep_bound(self, handle: int, state: list) -> bool:
        """Record the state list of a compiled store bound to live signal ``handle``
        (hsapy.sim.native_signal), so that destroying the signal (or :meth:`unbind_all`) sets
        its first item to UNBOUND and the store goes the Python way; False (nothing recorded)
        when the signal is not live."""
        with self._lock:
            if handle not in self._signals:
                return False
            self._bound.setdefault(handle, []).append(state)
        return True

    def unbind_all(self) -> None:
        """Unbind every compiled store (the runtime's teardown drops the table with its
        signals)."""
        with self._lock:
            for states in self._bound.values():
                for state in states:
                    state[0] = UNBOUND
            self._bound.clear()

    def __len__(self) -> int:
        return len(self._signals)
