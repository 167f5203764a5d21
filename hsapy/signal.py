"""Signals: the int64 completion and synchronisation objects of HSA.

A :class:`Signal` wraps one ``hsa_signal_t``. Every wait has a timeout: :meth:`Signal.wait`
raises :class:`~hsapy.errors.WaitTimeoutError` when the condition does not hold in time.
Signals for dispatches come from a :class:`SignalPool`, never one per dispatch.
"""
from __future__ import annotations

import enum
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from hsapy._checks import check_flag, check_timeout
from hsapy._hsa import constant
from hsapy._lifetime import HandleState, NotCopyable, release_when_collected
from hsapy.errors import HsapyTypeError, HsapyValueError, WaitTimeoutError, error_for
from hsapy.hsa_enums import HSA_STATUS_SUCCESS
from hsapy.observers import OBSERVERS, notify_signal_reused

if TYPE_CHECKING:
    from hsapy.runtime import Runtime

__all__ = ["Signal", "SignalPool", "Condition", "WaitState", "ORDERS", "check_timeout",
           "signal_value"]


class Condition(enum.IntEnum):
    """hsa_signal_condition_t (hsa.h)."""

    EQ = constant("HSA_SIGNAL_CONDITION_EQ")
    NE = constant("HSA_SIGNAL_CONDITION_NE")
    LT = constant("HSA_SIGNAL_CONDITION_LT")
    GTE = constant("HSA_SIGNAL_CONDITION_GTE")


class WaitState(enum.IntEnum):
    """hsa_wait_state_t (hsa.h)."""

    BLOCKED = constant("HSA_WAIT_STATE_BLOCKED")
    ACTIVE = constant("HSA_WAIT_STATE_ACTIVE")


_HOLDS = {
    Condition.EQ: lambda v, x: v == x,
    Condition.NE: lambda v, x: v != x,
    Condition.LT: lambda v, x: v < x,
    Condition.GTE: lambda v, x: v >= x,
}

# Longest single runtime wait; between slices the caller's ``abort`` hook may raise (e.g. when
# the queue feeding this signal stopped with an error), so a dead queue never looks like a hang.
_WAIT_SLICE_S = 0.05
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_E = TypeVar("_E", bound=enum.IntEnum)


def _member(enum: type[_E], given: Any, name: str) -> _E:
    """The member of ``enum`` that ``given`` (an int) stands for; ValueError naming ``name``."""
    try:
        return enum(given.__index__())
    except (ValueError, TypeError):
        # (an array of several elements has __index__ and refuses it)
        raise ValueError(f"{name} {given!r:.40} is not a {enum.__name__}") from None


def signal_value(value: Any, what: str) -> int:
    """``value`` as an hsa_signal_value_t (int64), or a typed error: a signal holds integers,
    so a float, a bool or a number past int64 is refused rather than truncated or wrapped."""
    if value.__class__ is not int:
        if isinstance(value, bool) or not (isinstance(value, int) or hasattr(value, "__index__")):
            raise HsapyTypeError(f"{what}: a signal value is an int (int64), not "
                                 f"{type(value).__name__} {value!r:.40}")
        try:
            value = int(value.__index__())
        except TypeError:
            # an array of several elements (or of floats) has __index__ and refuses it
            raise HsapyTypeError(f"{what}: a signal value is an int (int64), not "
                                 f"{type(value).__name__} {value!r:.40}") from None
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise HsapyValueError(f"{what}: {value} does not fit a signal value (int64: "
                              f"{_INT64_MIN}..{_INT64_MAX})")
    return value


# The memory orders of each signal operation that hsapy's cdef declares, default first
# (hsa.h: hsa_signal_<operation>_<order>; tests check every pair against the cdef).
ORDERS: dict[str, tuple[str, ...]] = {
    "load": ("scacquire", "relaxed"),
    "store": ("screlease", "relaxed"),
    "silent_store": ("screlease", "relaxed"),
    "add": ("scacq_screl", "relaxed", "screlease"),
    "subtract": ("scacq_screl", "relaxed", "screlease"),
    "exchange": ("scacq_screl", "relaxed"),
    "cas": ("scacq_screl", "relaxed"),
    "wait": ("scacquire", "relaxed"),
}


def _destroy(lib: Any, handle: int) -> Callable[[], None]:
    def release() -> None:
        if OBSERVERS:   # what the signal holds (e.g. dispatch timestamps) goes with it
            try:
                notify_signal_reused(handle)
            except Exception as exc:
                warnings.warn(f"hsapy: a publishing observer failed: {exc}", RuntimeWarning,
                              stacklevel=2)
        status = lib.hsa_signal_destroy({"handle": handle})
        if status != HSA_STATUS_SUCCESS:
            raise RuntimeError(f"hsa_signal_destroy returned {status:#x}")
    return release


def _destroy_when_unused(runtime: Runtime, lib: Any, handle: int) -> Callable[[], None]:
    """A signal's release: hsa_signal_destroy once no packet published so far can still name
    it (Runtime._after_dispatches) -- its slot may be given to the next signal created, and a
    packet naming the old one must not reach the new one."""
    destroy = _destroy(lib, handle)
    after = getattr(runtime, "_after_dispatches", None)
    if after is None:
        return destroy

    def release() -> None:
        after(destroy)
    return release


class Signal(NotCopyable):
    """One HSA signal. Create with ``Runtime.create_signal`` or take one from a SignalPool."""

    __slots__ = ("_lib", "_ffi", "_runtime", "_ptr", "_cdata", "_handle", "_state", "_failed",
                 "__weakref__")

    def __init__(self, runtime: Runtime, handle: int) -> None:
        self._runtime = runtime  # children hold their parents
        self._lib = runtime.lib
        self._ffi = runtime.ffi
        self._handle = handle = int(handle)
        self._ptr = self._ffi.new("hsa_signal_t *", {"handle": handle})
        self._cdata = self._ptr[0]   # passed by value on every call; built once
        # The simulator says why work that was to change this signal failed (an asynchronous
        # copy whose memory was freed, ...), so a wait ends with that error, not a timeout.
        self._failed = getattr(self._lib, "sim_signal_error", None)
        self._state = HandleState("Signal", _destroy_when_unused(runtime, self._lib, handle),
                                  what=f"signal {handle:#x}")
        runtime._track(self._state)
        release_when_collected(self, self._state)

    @property
    def handle(self) -> int:
        """The hsa_signal_t handle (the address of its amd_signal_t). A closed signal's handle
        may already name another signal: reading it raises ClosedError, so it never reaches a
        packet or a C call."""
        if self._state.closed:
            raise self._state.error()
        return self._handle

    @property
    def cdata(self) -> Any:
        """The ``hsa_signal_t`` struct to pass to C calls (ClosedError once closed)."""
        if self._state.closed:
            raise self._state.error()
        return self._cdata

    @property
    def is_closed(self) -> bool:
        """True once the signal has been destroyed."""
        return self._state.closed

    def close(self) -> None:
        """Destroy the signal (idempotent)."""
        self._state.close()

    def __enter__(self) -> Signal:
        self._state.check()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.is_closed else f"value={self.load()}"
        return f"<Signal {self._handle:#x} {state}>"

    # -- loads and stores in the memory orders HSA offers ---------------------------------------
    # ``order`` picks the hsa_signal_<operation>_<order> variant (ORDERS); ``relaxed=True`` is a
    # shorthand for order="relaxed". The default is the first order listed for the operation.
    def _function(self, operation: str, order: str | None, relaxed: bool) -> Callable[..., Any]:
        self._state.check()
        if relaxed is not True and relaxed is not False:
            relaxed = check_flag(relaxed, f"Signal.{operation}: relaxed")
        orders = ORDERS[operation]
        if order is None:
            order = "relaxed" if relaxed else orders[0]
        elif order.__class__ is not str or order not in orders:
            raise HsapyValueError(f"Signal.{operation}: memory order {order!r} does not exist in "
                                  f"HSA for this operation; choose one of {', '.join(orders)}")
        return getattr(self._lib, f"hsa_signal_{operation}_{order}")

    def load(self, relaxed: bool = False, order: str | None = None) -> int:
        """Current value (scacquire by default, or relaxed)."""
        if self._state.closed:
            raise self._state.error()
        if order is None:
            if relaxed is True:
                return self._lib.hsa_signal_load_relaxed(self._cdata)
            if relaxed is False:
                return self._lib.hsa_signal_load_scacquire(self._cdata)
        return self._function("load", order, relaxed)(self._cdata)

    def store(self, value: int, relaxed: bool = False, silent: bool = False,
              order: str | None = None) -> None:
        """Store ``value`` (screlease by default, or relaxed); ``silent`` does not wake waiters."""
        if self._state.closed:
            raise self._state.error()
        if value.__class__ is not int or not _INT64_MIN <= value <= _INT64_MAX:
            value = signal_value(value, "Signal.store")
        if silent is not False and silent is not True:
            silent = check_flag(silent, "Signal.store: silent")
        if order is None and not silent and (relaxed is True or relaxed is False):
            lib = self._lib
            (lib.hsa_signal_store_relaxed if relaxed else lib.hsa_signal_store_screlease)(
                self._cdata, value)
            return
        self._function("silent_store" if silent else "store", order, relaxed)(self._cdata, value)

    def add(self, value: int, relaxed: bool = False, order: str | None = None) -> None:
        """Atomically add ``value`` (scacq_screl by default, relaxed or screlease)."""
        function = self._function("add", order, relaxed)
        function(self._cdata, signal_value(value, "Signal.add"))

    def subtract(self, value: int, relaxed: bool = False, order: str | None = None) -> None:
        """Atomically subtract ``value`` (scacq_screl by default, relaxed or screlease)."""
        function = self._function("subtract", order, relaxed)
        function(self._cdata, signal_value(value, "Signal.subtract"))

    def exchange(self, value: int, relaxed: bool = False, order: str | None = None) -> int:
        """Store ``value`` and return the previous one."""
        function = self._function("exchange", order, relaxed)
        return function(self._cdata, signal_value(value, "Signal.exchange"))

    def cas(self, expected: int, value: int, relaxed: bool = False,
            order: str | None = None) -> int:
        """Compare-and-swap; returns the observed value (== expected when it swapped)."""
        function = self._function("cas", order, relaxed)
        return function(self._cdata, signal_value(expected, "Signal.cas"),
                        signal_value(value, "Signal.cas"))

    def bitwise_and(self, value: int) -> None:
        """Atomically AND ``value`` into the signal (scacq_screl)."""
        self._state.check()
        self._lib.hsa_signal_and_scacq_screl(self._cdata, signal_value(value, "Signal.bitwise_and"))

    def bitwise_or(self, value: int) -> None:
        """Atomically OR ``value`` into the signal (scacq_screl)."""
        self._state.check()
        self._lib.hsa_signal_or_scacq_screl(self._cdata, signal_value(value, "Signal.bitwise_or"))

    def bitwise_xor(self, value: int) -> None:
        """Atomically XOR ``value`` into the signal (scacq_screl)."""
        self._state.check()
        self._lib.hsa_signal_xor_scacq_screl(self._cdata, signal_value(value, "Signal.bitwise_xor"))

    # -- waiting -----------------------------------------------------------------------------
    def wait(self, condition: Condition | int = Condition.LT, value: int = 1,
             timeout: float = 10.0, wait_state: WaitState | int = WaitState.BLOCKED,
             abort: Callable[[], None] | None = None, order: str | None = None) -> int:
        """Wait until ``signal <condition> value``; return the value observed.

        ``timeout`` is in seconds. hsa_signal_wait_* takes its timeout as a hint in timestamp
        ticks and may return early (hsa.h), so this loops until the condition holds or the
        deadline passes, then raises WaitTimeoutError. ``abort`` is called between slices and may
        raise (the dispatch path passes the queue's error check). ``order``: "scacquire"
        (default) or "relaxed".
        """
        if self._state.closed:
            self._destroyed(condition, value, abort)
        try:
            for name, given in (("condition", condition), ("wait_state", wait_state)):
                # a bool, float, complex or numpy bool equal to a member is not one
                if isinstance(given, (bool, np.bool_)) or not hasattr(given, "__index__"):
                    raise ValueError(f"{name} {given!r:.40} is neither a Condition nor a "
                                     "WaitState")
            condition = _member(Condition, condition, "condition")
            wait_state = _member(WaitState, wait_state, "wait_state")
        except (ValueError, TypeError) as exc:
            raise HsapyValueError(f"Signal.wait: {exc}; use hsapy.signal.Condition / WaitState") \
                from None
        timeout = check_timeout(timeout, "Signal.wait")
        value = signal_value(value, "Signal.wait")
        if abort is not None and not callable(abort):
            raise HsapyTypeError(f"Signal.wait: abort must be callable, not {type(abort).__name__}")
        wait = self._function("wait", order, False)
        holds = _HOLDS[condition]
        cdata = self._cdata
        state = self._state
        ticks_per_s = self._runtime.timestamp_frequency
        deadline = time.monotonic() + timeout
        while True:
            if state.closed:
                self._destroyed(condition, value, abort)
            remaining = deadline - time.monotonic()
            slice_s = min(max(remaining, 0.0), _WAIT_SLICE_S)
            observed = wait(cdata, int(condition), value, int(slice_s * ticks_per_s) + 1,
                            int(wait_state))
            if state.closed:
                self._destroyed(condition, value, abort)
            if holds(observed, value):
                return observed
            if abort is not None:
                abort()
            if self._failed is not None:
                failure = self._failed(cdata)
                if failure is not None:
                    raise error_for(failure[0], "hsa_amd_memory_async_copy",
                                    f"{failure[1]}; signal {self._handle:#x} will not change")
            if remaining <= 0:
                raise WaitTimeoutError(
                    f"signal {self._handle:#x}: waited {timeout:g} s for value {condition.name} "
                    f"{value}, last value {observed}. The work it tracks has not finished: check "
                    "the queue (queue.check()) or raise the timeout.")

    def _destroyed(self, condition: Any, value: Any,
                   abort: Callable[[], None] | None) -> None:
        """The signal was closed before or during the wait (e.g. by another thread): what the
        runtime returns for a dead handle is no observation of it. ``abort`` goes first, so a
        closed or failed queue that took its completion signals along names the real cause."""
        if abort is not None and callable(abort):
            abort()
        raise self._state.error(
            f"waiting for value {getattr(condition, 'name', condition)} {value} cannot end; "
            "close a signal only after every thread has stopped waiting on it")


# amd_signal_t (hsa/amd_hsa_signal.h): int64 kind at +0, value at +8. An hsa_signal_t's handle
# is the address of its amd_signal_t, and that is the address a packet's completion_signal gives
# the command processor, which decrements the value there on completion (the hardware ABI).
_AMD_SIGNAL_KIND_USER = 1
_LAYOUT_PROBE = 0x0123456789ABCDEF


def value_words(runtime: Runtime, signal: Signal) -> memoryview | None:
    """The signal's amd_signal_t words (``[0]`` kind, ``[1]`` value) for loads and silent stores
    of the value without a runtime call (how ROCr itself reads a default signal), or None when
    this runtime does not lay signals out as amd_signal_t. The layout is probed once per runtime
    through the API: a value stored with hsa_signal_store must appear at +8 and a value written
    at +8 must load back.

    The words are a memoryview of int64: indexing one is a single aligned 8-byte load or store
    (CPython's memoryview packs an item with a fixed-size memcpy, one ``mov`` on x86-64, so
    neither can tear), and costs less than half of a cffi ``int64_t *`` access from Python."""
    ok = runtime._amd_signal_layout
    ffi = runtime.ffi
    words = memoryview(ffi.buffer(ffi.cast("int64_t *", signal.handle), 16)).cast("q")
    if ok is None:
        lib, cdata = runtime.lib, signal.cdata
        old = lib.hsa_signal_load_scacquire(cdata)
        try:
            lib.hsa_signal_store_screlease(cdata, _LAYOUT_PROBE)
            ok = words[0] == _AMD_SIGNAL_KIND_USER and words[1] == _LAYOUT_PROBE
            if ok:
                words[1] = ~_LAYOUT_PROBE
                ok = lib.hsa_signal_load_scacquire(cdata) == ~_LAYOUT_PROBE
        finally:
            lib.hsa_signal_store_screlease(cdata, old)
        runtime._amd_signal_layout = ok
    return words if ok else None


class SignalPool(NotCopyable):
    """Reusable signals (docs/architecture.md: never create a signal per dispatch)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._free: list[Signal] = []
        self.created = 0

    def acquire(self, initial_value: int = 1) -> Signal:
        """A signal set to ``initial_value``; give it back with :meth:`release`."""
        self._runtime._state.check()
        initial_value = signal_value(initial_value, "SignalPool.acquire: initial_value")
        if self._free:
            signal = self._free.pop()
            signal.store(initial_value, relaxed=True)
            return signal
        self.created += 1
        return self._runtime.create_signal(initial_value)

    def release(self, signal: Signal) -> None:
        """Give ``signal`` back for reuse (closed signals are dropped).

        Releasing the same signal twice would hand it to two users at once: refused."""
        if not isinstance(signal, Signal):
            raise HsapyTypeError(f"SignalPool.release: signal is a Signal, not "
                                 f"{type(signal).__name__}")
        if signal._runtime is not self._runtime:
            raise HsapyValueError("SignalPool.release: the signal belongs to another runtime")
        if any(free is signal for free in self._free):
            raise HsapyValueError(f"SignalPool.release: signal {signal._handle:#x} was already "
                                  "released")
        if not signal.is_closed:
            self._free.append(signal)

    def __len__(self) -> int:
        return len(self._free)

    def close(self) -> None:
        """Destroy the pooled (free) signals."""
        free, self._free = self._free, []
        for signal in free:
            signal.close()
