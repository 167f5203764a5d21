"""SimLib's signal functions: hsa_signal_create / destroy and the operations on a signal's
value (their memory-order variants are generated in simlib.py from ORDER_VARIANTS)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hsapy.hsa_enums import (
    HSA_STATUS_ERROR_INVALID_AGENT,
    HSA_STATUS_ERROR_INVALID_ARGUMENT,
    HSA_STATUS_ERROR_INVALID_SIGNAL,
    HSA_STATUS_ERROR_NOT_INITIALIZED,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES,
    HSA_STATUS_SUCCESS,
)
from hsapy.sim.objects import UINT64_MAX, c_argument, int64_argument, uint64_argument
from hsapy.sim.objects import handle_of as _handle
from hsapy.sim.signals import (
    INT64_MAX,
    INT64_MIN,
    WORD_HIGH_WATER,
    WORD_VALUE,
    SignalTable,
    condition_holds,
    wait_any,
)


class SignalsMixin:
    """The signal part of :class:`~hsapy.sim.simlib.SimLib` (which provides ``self``'s state)."""

    # ------------------------------------------------------------------------------------------
    # signals

    def _check_consumers(self, num_consumers: int, consumers: Any) -> int:
        if num_consumers and self._is_null(consumers):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        for i in range(int(num_consumers)):
            if self.agent_by_handle(consumers[i]) is None:
                return HSA_STATUS_ERROR_INVALID_AGENT
        return HSA_STATUS_SUCCESS

    def hsa_signal_create(self, initial_value: int, num_consumers: int, consumers: Any,
                          signal: Any) -> int:
        """Create a signal; ``*signal`` receives its handle."""
        return self.hsa_amd_signal_create(initial_value, num_consumers, consumers, 0, signal)

    def hsa_amd_signal_create(self, initial_value: int, num_consumers: int, consumers: Any,
                              attributes: int, signal: Any) -> int:
        """Create a signal with AMD attributes (GPU_ONLY / IPC accepted and ignored)."""
        initial_value = int64_argument(initial_value)
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(signal):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        status = self._check_consumers(num_consumers, consumers)
        if status != HSA_STATUS_SUCCESS:
            return status
        try:
            sim_signal = self.signals.create(initial_value)
        except MemoryError:
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES
        signal[0].handle = sim_signal.handle
        return HSA_STATUS_SUCCESS

    def hsa_signal_destroy(self, signal: Any) -> int:
        """Destroy a signal."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        handle = _handle(signal)
        if handle == 0:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if not self.signals.destroy(handle):
            return HSA_STATUS_ERROR_INVALID_SIGNAL
        self._copy_errors.pop(handle, None)
        return HSA_STATUS_SUCCESS

    # The memory-order variants of these operations (hsa_signal_load_scacquire, ...) are
    # generated in simlib.py from ORDER_VARIANTS.

    def _load(self, signal: Any) -> int:
        sim_signal = self._signal(signal)
        return sim_signal.load() if sim_signal is not None else 0

    # Integer arguments are converted first, as cffi converts a C call's arguments before the
    # call: a value C would refuse raises whatever the signal argument (hsapy.sim.objects)

    def _store(self, signal: Any, value: int) -> None:
        value = int64_argument(value)
        sim_signal = self._signal(signal)
        if sim_signal is not None:
            sim_signal.store(value)

    def _silent_store(self, signal: Any, value: int) -> None:
        value = int64_argument(value)
        sim_signal = self._signal(signal)
        if sim_signal is not None:
            sim_signal.store_silent(value)

    def _modify(self, signal: Any, operation: Callable[[int], int]) -> int:
        sim_signal = self._signal(signal)
        return sim_signal.modify(operation) if sim_signal is not None else 0

    def _add(self, signal: Any, value: int) -> None:
        value = int64_argument(value)
        self._modify(signal, lambda old: old + value)

    def _and(self, signal: Any, value: int) -> None:
        value = int64_argument(value)
        self._modify(signal, lambda old: old & value)

    def _or(self, signal: Any, value: int) -> None:
        value = int64_argument(value)
        self._modify(signal, lambda old: old | value)

    def _xor(self, signal: Any, value: int) -> None:
        value = int64_argument(value)
        self._modify(signal, lambda old: old ^ value)

    def _subtract(self, signal: Any, value: int) -> None:
        value = int64_argument(value)
        sim_signal = self._signal(signal)
        if sim_signal is not None:
            sim_signal.subtract(value)

    def _exchange(self, signal: Any, value: int) -> int:
        value = int64_argument(value)
        sim_signal = self._signal(signal)
        return sim_signal.exchange(value) if sim_signal is not None else 0

    def _cas(self, signal: Any, expected: int, value: int) -> int:
        expected, value = int64_argument(expected), int64_argument(value)
        sim_signal = self._signal(signal)
        return sim_signal.cas(expected, value) if sim_signal is not None else 0

    def _timeout_seconds(self, timeout_hint: int) -> float | None:
        """timeout_hint is in timestamp ticks (HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY)."""
        timeout_hint = uint64_argument(timeout_hint)
        if timeout_hint >= UINT64_MAX:
            return None
        return timeout_hint / self.clock.frequency

    def _wait(self, signal: Any, condition: int, compare: int, timeout_hint: int,
              wait_state_hint: int = 0) -> int:
        # wait_state_hint (blocked or active) changes nothing here: a waiter sleeps on the
        # signal's condition variable either way
        if condition.__class__ is not int or not 0 <= condition <= 0xFFFFFFFF:
            condition = c_argument(self.ffi, "hsa_signal_condition_t", condition)
        if wait_state_hint.__class__ is not int or not 0 <= wait_state_hint <= 0xFFFFFFFF:
            c_argument(self.ffi, "hsa_wait_state_t", wait_state_hint)
        compare, timeout_hint = int64_argument(compare), uint64_argument(timeout_hint)
        sim_signal = self._signal(signal)
        if sim_signal is None:
            return 0
        # Before sleeping, run announced packets on this thread (SimQueue.help): the work that
        # will satisfy the wait is usually right there, and doing it here saves two thread
        # hand-offs.
        for sim_queue in list(self.queues.values()):
            if condition_holds(condition, sim_signal.load(), compare):
                break
            if sim_queue.has_announced_work:
                sim_queue.help(lambda: condition_holds(condition, sim_signal.load(), compare))
        return sim_signal.wait(condition, compare, self._timeout_seconds(timeout_hint),
                               lambda: not sim_signal.is_valid)

    def hsa_amd_signal_wait_any(self, signal_count: int, signals: Any, conds: Any, values: Any,
                                timeout_hint: int, wait_hint: int, satisfying_value: Any) -> int:
        """Wait until any signal satisfies its condition; return its index (``signal_count`` on
        timeout)."""
        count = int(signal_count)
        if count == 0 or self._is_null(signals) or self._is_null(conds) or self._is_null(values):
            return count
        sim_signals = []
        for i in range(count):
            sim_signal = self._signal(signals[i])
            if sim_signal is None:
                return count
            sim_signals.append(sim_signal)
        index, value = wait_any(sim_signals, [int(conds[i]) for i in range(count)],
                                [int(values[i]) for i in range(count)],
                                self._timeout_seconds(timeout_hint))
        if index < count and not self._is_null(satisfying_value):
            satisfying_value[0] = value
        return index


def compiled_signal_store(table: SignalTable,
                           slow: Callable[[Any, int], None]) -> Callable[[Any, int], None]:
    """hsa_signal_store_screlease / _relaxed for one SimLib: SimLib._store with the signal
    lookup and SimSignal.store's steps inlined (under the signal's lock: set the value word,
    raise the high-water mark, wake waiters and watchers when there are any), so a store --
    every doorbell -- is one Python frame. ``table`` holds the live signals; anything unusual
    (an unknown or destroyed handle, a handle given as an int or dict, a value that is not an
    int64) goes the general way, ``slow``.

    The function's ``bound_to_signal(signal)`` is the same store bound to one signal (an
    hsa_signal_t cdata: a queue's doorbell), compiled for the host where it can be
    (hsapy.sim.native_signal; hsapy._hsa.fastcall.bound_signal_store asks for it), else this
    function itself."""
    live_signals = table.by_handle
    word, mark = WORD_VALUE, WORD_HIGH_WATER

    def hsa_signal_store_screlease(signal: Any, value: int) -> None:
        """Set the value; wakes waiters. On a doorbell this rings the queue."""
        try:
            sim_signal = live_signals[signal.handle]
        except (AttributeError, KeyError, TypeError):
            return slow(signal, value)
        if value.__class__ is not int or not INT64_MIN <= value <= INT64_MAX:
            return slow(signal, value)
        # SimSignal.exchange without reading the old value, through the condition's lock
        # itself (SimSignal.lock; Condition.__enter__ would be a Python frame of its own)
        lock = sim_signal.lock
        lock.acquire()
        try:
            view = sim_signal.view
            view[word] = value
            if value > view[mark]:
                view[mark] = value
            if sim_signal.waiters or sim_signal.watchers:
                sim_signal._changed()
        finally:
            lock.release()
        return None

    def bound_to_signal(signal: Any) -> Callable[[Any, int], None]:
        from hsapy.sim.native_signal import native_signal_store

        try:
            sim_signal = live_signals[signal.handle]
        except (AttributeError, KeyError, TypeError):
            return hsa_signal_store_screlease
        made = native_signal_store(signal, sim_signal, hsa_signal_store_screlease)
        if made is None or not table.keep_bound(sim_signal.handle, made[1]):
            return hsa_signal_store_screlease
        return made[0]

    hsa_signal_store_screlease.bound_to_signal = bound_to_signal  # type: ignore[attr-defined]
    return hsa_signal_store_screlease
