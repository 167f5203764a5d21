"""AQL queues: a ring of 64-byte packet slots described by an ``hsa_queue_t``.

A :class:`Queue` owns one ``hsa_queue_t`` created with ``hsa_queue_create``. Its error callback
is kept alive as long as the queue; an error it reports is stored and re-raised on the Python
side by :meth:`Queue.check` (and by waits that pass ``abort=queue.check``).
"""
from __future__ import annotations

import platform
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple, cast

import numpy as np

from hsapy import aql
from hsapy._checks import check_flag, check_items, check_timeout
from hsapy._checks import check_int as _check_int
from hsapy._hsa import check
from hsapy._hsa.fastcall import bound_signal_store, bound_u64
from hsapy._lifetime import (
    HandleState,
    NotCopyable,
    ReleaseOnce,
    ViewedMemory,
    release_when_collected,
)
from hsapy.aql import Packet, split
from hsapy.errors import HsapyError, HsapyTypeError, HsapyValueError, error_for
from hsapy.observers import (
    OBSERVERS,
    add_observer,
    notify,
    notify_doorbell,
    notify_written,
    remove_observer,
)

# OBSERVERS, add_observer and remove_observer are hsapy.observers' (imported above), and stay
# importable from here.
__all__ = ["Queue", "QueueFullError", "QueueProducer", "QueueAttachments", "QUEUE_TYPES",
           "INVALID_WORD", "add_observer", "remove_observer"]

# hsa_queue_type_t (hsa.h)
QUEUE_TYPES = {"multi": 0, "single": 1, "cooperative": 2}
PACKET_SIZE = 64
AMD_QUEUE_APERTURES_OFFSET = 64   # amd_queue_t.group_segment_aperture_base_hi
UINT32_MAX = 0xFFFFFFFF
_UINT64_MAX = (1 << 64) - 1
# hsa_signal_value_t is int64 (hsa.h): the largest packet index a doorbell signal can carry
_DOORBELL_MAX = (1 << 63) - 1


# A free slot's header|setup word: header type INVALID, setup 0 (see write_many).
INVALID_WORD = aql.encode_header(aql.PacketType.INVALID, False, 0, 0)

# What an abandoned slot receives (Queue.abandon): a packet that does nothing -- no dependencies,
# no completion signal, no barrier bit, no fences.
_NO_OP = aql.barrier_and([], barrier=False, acquire=aql.FenceScope.NONE,
                         release=aql.FenceScope.NONE)


class QueueFullError(HsapyError, TimeoutError):
    """No slot became free in time: the packet processor is not consuming packets."""


def _require_tso() -> None:
    # The header store must be a release store (see Queue.write). x86-64 gives that for free.
    if platform.machine().lower() not in ("x86_64", "amd64", "i686", "x86"):
        raise HsapyError(
            f"publishing AQL packets from a {platform.machine()} host needs a store-release for "
            "the header word, which hsapy implements only for x86-64 so far")


class QueueAttachments(dict):
    """What the dispatch layer keeps for one queue (key -> object): kernarg rings, batch arenas,
    prepared launches (``Queue.attachments``). The queue's release tells each one first
    (``queue_closing()``: the prepared paths step aside) and closes it once the queue no longer
    runs packets (``close(by)``)."""

    __slots__ = ("__weakref__",)


class QueueProducer(NamedTuple):
    """One queue's ring as seen by a producer that writes packets itself, with no method call
    per packet (``Queue.producer()``; hsapy.publishing's fast path). The AQL publishing
    protocol with it (docs/hsa-abi.md "Publishing a packet"; ``Queue.reserve``/``write``/
    ``ring_doorbell`` are the same steps with their checks):

    1. ``first = add_write_index(queue_ptr, n)`` reserves n slots
       (hsa_queue_add_write_index_scacq_screl); if ``first + n - 1 >= free_end[0]`` the slots
       may still hold packets of the last lap: ``make_space(first, first + n - 1, timeout)``
       re-reads the read index and waits (and abandons the slots if that fails).
    2. Per packet, bytes 4..63 first -- ``bodies[index & mask][:] = body``, or whole rows
       through ``rows`` whose header|setup words hold INVALID_WORD -- then header|setup with one
       32-bit store, ``words[(index & mask) << 4] = word`` (a release store: see Queue.write);
       after whole rows, ``word_array[first << 4:(last + 1) << 4:16] = their words`` (numpy
       stores them one by one, in order), or both steps in one call of hsapy._native's
       ``write_rows`` at ``ring_address + (index & mask) * 64``.
    3. ``store_doorbell(doorbell_signal, index)`` (hsa_signal_store_screlease).

    Observers (OBSERVERS) are the producer's business: Queue's methods tell them, this does
    not. Valid while the queue is open: a producer stops using it once ``Queue.handle_state``
    is closed (the dispatch layer's kernarg rings step aside on ``queue_closing``, so its
    calls take the checked way)."""

    add_write_index: Callable[[Any, int], int]
    queue_ptr: Any
    free_end: list
    mask: int
    bodies: list
    words: memoryview
    rows: memoryview
    word_array: np.ndarray
    make_space: Callable[[int, int, float], None]
    store_doorbell: Callable[[Any, int], None]
    doorbell_signal: Any
    ring_address: int


class _QueueState:
    """What the C error callback and the finalizer may touch (never the Queue itself)."""

    __slots__ = ("error", "error_lock", "callback", "handle_state", "__weakref__")

    def __init__(self) -> None:
        self.error: tuple[int, str] | None = None
        self.error_lock = threading.Lock()
        self.callback: Any = None
        # Set by Queue.__init__ once hsa_queue_create has succeeded; nothing reads it before.
        self.handle_state: HandleState = cast(HandleState, None)

    def on_error(self, status: int, queue: Any, _data: Any) -> None:
        # Runs on a runtime thread: never raise, only record (docs/architecture.md "Errors").
        try:
            with self.error_lock:
                if self.error is None:
                    self.error = (int(status), f"queue {int(queue.id) if queue else '?'}")
        except Exception:
            pass


def _queue_release(lib: Any, ptr: Any, ring_memory: ViewedMemory, queue_ref: Any,
                   rings_ref: Any, handle_state: HandleState) -> Callable[[], None]:
    """The queue's release. The Queue's index and doorbell calls start raising ClosedError and
    its attachments (kernarg rings, batch arenas, prepared launches) step aside (a prepared call
    then takes the checked way, which raises too); the queue is destroyed at once, or, while
    numpy views of its ring (``Queue.ring``) are alive, stopped (hsa_queue_inactivate: no packet
    runs any more) and destroyed once the last view is collected; then the rings' signals and
    memory are released. Holds the Queue only weakly."""
    def release() -> None:
        queue = queue_ref()
        if queue is not None:
            queue._add_write_index = queue._store_doorbell = queue._load_read_index = (
                _closed_call(handle_state))
            queue._ring = None          # its own view: only the caller's views count below
        rings = rings_ref()
        rings = list(rings.values()) if rings is not None else []
        for ring in rings:
            ring.queue_closing()
        if not ring_memory.release():
            status = lib.hsa_queue_inactivate(ptr)
            if status != 0:
                raise RuntimeError(f"hsa_queue_inactivate returned {status:#x}")
        for ring in rings:
            ring.close(handle_state.closed_by)
    return release


def _queue_destroy(lib: Any, ptr: Any, outstanding: Any) -> Callable[[], None]:
    def destroy() -> None:
        try:
            status = lib.hsa_queue_destroy(ptr)
        finally:
            outstanding.done()
        if status != 0:
            raise RuntimeError(f"hsa_queue_destroy returned {status:#x}")
    return destroy


def _closed_call(state: HandleState) -> Callable[..., Any]:
    """What a closed queue's index and doorbell calls become: they raise ClosedError (so a
    method that reaches one never touches a destroyed queue)."""
    def closed(*_args: Any) -> Any:
        raise state.error()
    return closed


class Queue(NotCopyable):
    """An AQL queue on a GPU agent. Create with ``agent.create_queue(size=...)``.

    ``base_address``/``size`` describe the ring (``ring`` is a numpy view of shape (size, 64));
    ``doorbell`` is the doorbell signal's handle. Index operations map 1:1 to hsa_queue_*.
    """

    def __init__(self, agent: Any, size: int = 256, type: str = "multi",
                 private_segment_size: int = UINT32_MAX,
                 group_segment_size: int = UINT32_MAX) -> None:
        runtime = agent.runtime
        self.agent = agent  # children hold their parents
        self.runtime = runtime
        if not agent.is_gpu:
            raise HsapyValueError(f"create_queue: {agent.name} is not a GPU agent; "
                                  "take one from runtime.gpu_agents")
        if not isinstance(type, str) or type not in QUEUE_TYPES:
            raise HsapyValueError(f"create_queue: type must be one of {sorted(QUEUE_TYPES)}, "
                                  f"not {type!r}")
        lo, hi = agent.queue_min_size, agent.queue_max_size
        size = _check_int(size, "create_queue: size", 1, 1 << 32)
        private_segment_size = _check_int(private_segment_size,
                                          "create_queue: private_segment_size", 0, UINT32_MAX)
        group_segment_size = _check_int(group_segment_size, "create_queue: group_segment_size",
                                        0, UINT32_MAX)
        if size & (size - 1) or not (lo <= size <= hi):
            raise HsapyValueError(
                f"create_queue: size {size} must be a power of two between the agent's queue "
                f"min and max sizes ({lo}..{hi} packets) for {agent.name}")
        lib, ffi = runtime.lib, runtime.ffi
        self._lib, self._ffi = lib, ffi
        state = _QueueState()
        state.callback = ffi.callback("void(hsa_status_t, hsa_queue_t *, void *)", state.on_error)
        out = ffi.new("hsa_queue_t **")
        check(lib.hsa_queue_create({"handle": agent.handle}, size, QUEUE_TYPES[type],
                                   state.callback, ffi.NULL, private_segment_size,
                                   group_segment_size, out),
              "hsa_queue_create", lib)
        self._ptr = out[0]
        self.address = int(ffi.cast("uintptr_t", self._ptr))
        self.base_address = int(ffi.cast("uintptr_t", self._ptr.base_address))
        self.size = int(self._ptr.size)
        self.id = int(self._ptr.id)
        self.doorbell = int(self._ptr.doorbell_signal.handle)
        self.is_profiling = False    # enable_profiling: dispatches record start/end timestamps
        # amd_queue_t (hsa/amd_hsa_queue.h) begins with the hsa_queue_t; bytes 64..71 hold
        # group_/private_segment_aperture_base_hi, the launcher's source for the
        # hidden_shared_base / hidden_private_base kernel arguments.
        apertures = ffi.cast("uint32_t *", self.address + AMD_QUEUE_APERTURES_OFFSET)
        self.apertures = (int(apertures[0]), int(apertures[1]))
        self._doorbell_cdata = self._ptr.doorbell_signal
        self._mask = self.size - 1
        # [the last read index observed + size]: a packet whose index is below it has a free
        # slot (the read index only grows, so this is a lower bound). A one-element list, so
        # the prepared dispatch path holds it and compares with one subscript.
        self._free_end = [self.size]
        # Indices reserved but never written (the reserving call failed: see abandon).
        self._abandoned: list[int] = []
        # one call each per dispatch: without libffi where the library is C (hsapy._hsa.fastcall)
        self._add_write_index = bound_u64(ffi, lib.hsa_queue_add_write_index_scacq_screl)
        self._load_read_index = bound_u64(ffi, lib.hsa_queue_load_read_index_scacquire)
        self._store_doorbell = bound_signal_store(ffi, lib.hsa_signal_store_screlease,
                                                  self._doorbell_cdata)
        _require_tso()
        self._base = ffi.cast("uint8_t *", self.base_address)
        # Bodies are written through a memoryview of the ring (one memcpy, cheaper from Python
        # than ffi.memmove); headers through the same memory viewed as uint32 (one aligned
        # 32-bit store, again cheaper than through a cffi uint32_t *).
        self._ring_bytes = memoryview(ffi.buffer(self._base, self.size * PACKET_SIZE))
        self._words = self._ring_bytes.cast("I")
        # slot -> a view of its bytes 4..63 (the body), so a write computes no offsets:
        # ``view[:] = body`` costs less than assigning a slice of the whole ring
        self._body_views = [self._ring_bytes[k * PACKET_SIZE + 4:(k + 1) * PACKET_SIZE]
                            for k in range(self.size)]
        self._ring_words = np.frombuffer(self._ring_bytes, np.uint32)
        # ``ring`` (the public numpy view) is made from ring_memory, so while a view is alive
        # the queue is stopped but not destroyed (see _queue_release); the views above are the
        # queue's own, used only while it is open.
        self._ring_memory = ViewedMemory(ffi, self.base_address, ReleaseOnce(
            _queue_destroy(lib, self._ptr, runtime._outstanding)))
        self._ring: np.ndarray | None = None
        self.attachments = QueueAttachments()
        handle_state = HandleState("Queue", lambda: None, what=f"queue {self.id} on {agent.name}")
        handle_state.release = _queue_release(lib, self._ptr, self._ring_memory,
                                              weakref.ref(self), weakref.ref(self.attachments),
                                              handle_state)
        state.handle_state = handle_state
        runtime._outstanding.add()           # given back by hsa_queue_destroy
        runtime._track(handle_state)
        runtime._queues.add(self)
        self._state = state
        # The finalizer holds the state (and so the callback) until the queue is destroyed.
        release_when_collected(self, state.handle_state)
        if OBSERVERS:
            notify("queue_created", self)

    # -- lifetime ----------------------------------------------------------------------------
    @property
    def is_closed(self) -> bool:
        """True once the queue is closed (by close(), Runtime.close() or collection)."""
        return self._state.handle_state.closed

    def close(self) -> None:
        """Destroy the queue (idempotent), with the kernarg rings the dispatch path gave it.

        Packets it had not run never complete; any later use of the queue raises ClosedError.
        A numpy view of ``ring`` taken before stays readable: the queue is stopped at once and
        destroyed once the last view is collected."""
        handle_state = self._state.handle_state
        if handle_state.closed:
            return
        if OBSERVERS:
            notify("queue_closing", self)
        handle_state.close()

    def _forsake(self, by: str) -> None:
        """In a child after os.fork() (Runtime._forsake): the queue is closed by ``by`` without
        being destroyed; its index and doorbell calls raise and its attachments step aside, as
        on close, so the prepared fast paths take the checked way too."""
        handle_state = self._state.handle_state
        self._add_write_index = self._store_doorbell = self._load_read_index = (
            _closed_call(handle_state))
        self._ring = None
        for ring in list(self.attachments.values()):
            ring.queue_closing()
        handle_state.forsake(by)

    @property
    def handle_state(self) -> HandleState:
        """The queue's lifetime state (hsapy._lifetime.HandleState): ``closed``, ``closed_by``,
        ``check()``. What a dispatch on this queue depends on (see hsapy.dispatch)."""
        return self._state.handle_state

    def _check_open(self) -> None:
        handle_state = self._state.handle_state
        if handle_state.closed:
            raise handle_state.error()

    def producer(self) -> QueueProducer:
        """The ring for a producer that writes packets itself (see QueueProducer)."""
        self._check_open()
        return QueueProducer(self._add_write_index, self._ptr, self._free_end, self._mask,
                             self._body_views, self._words, self._ring_bytes, self._ring_words,
                             self._make_space,
                             self._store_doorbell, self._doorbell_cdata, self.base_address)

    def consumed_mark(self) -> Any:
        """None when the packet processor has consumed every packet published so far; else a
        mark (a callable) that answers True once it has -- or once the queue is closed, stopped
        by an error or collected, when those packets never run. (On the simulator a packet is
        consumed once it completed; ROCr advances the read index when it launches one.)"""
        state = self._state
        if state.handle_state.closed or state.error is not None:
            return None
        lib, ptr = self._lib, self._ptr
        published = lib.hsa_queue_load_write_index_scacquire(ptr)
        if lib.hsa_queue_load_read_index_scacquire(ptr) >= published:
            return None
        load, handle_state = lib.hsa_queue_load_read_index_scacquire, state.handle_state

        def consumed() -> bool:
            return (handle_state.closed or state.error is not None
                    or load(ptr) >= published)
        return consumed

    def __enter__(self) -> Queue:
        self._check_open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<Queue id={self.id} size={self.size} on {self.agent.name} "
                f"{'closed' if self.is_closed else 'open'}>")

    # -- errors ------------------------------------------------------------------------------
    @property
    def error(self) -> tuple[int, str] | None:
        """(status, where) reported by the queue's error callback, or None."""
        return self._state.error

    def check(self) -> None:
        """Raise the HSAError the runtime reported for this queue, if any.

        Every wait calls it, so it also re-reads the read index: the packet processor has
        just made progress, and the next reservation then finds the slots it freed without
        re-reading the index itself (on a GPU that read crosses the bus; on the simulator it
        is a line the processor's thread wrote last). Abandoned slots that are free by now get
        their no-op packets (see :meth:`abandon`)."""
        error = self._state.error
        if error is not None:
            status, where = error
            raise error_for(status, "queue error callback",
                            f"{where} on {self.agent.name} stopped{self._why()}; packets after "
                            "the failing one do not run. Create a new queue")
        self._check_open()
        self._catch_up()

    def _catch_up(self) -> None:
        """Re-read the read index: move the free-slot bound up to it (a lower bound whoever
        stores it last: every value was read from an index that only grows) and give the
        abandoned slots that are free by now their no-op packets."""
        read_index = self._load_read_index(self._ptr)
        self._free_end[0] = read_index + self.size
        if self._abandoned:
            self._fill_abandoned(read_index)

    def _why(self) -> str:
        # ROCr's error callback carries only the status; the simulator also says what failed
        # (the faulting address and instruction, the watchdog's limit, the malformed field).
        describe = getattr(self._lib, "sim_queue_error", None)
        reported = describe(self._ptr) if describe is not None and not self.is_closed else None
        return f": {reported[1]}" if reported else ""

    # -- the ring and its indices ------------------------------------------------------------
    @property
    def ring(self) -> np.ndarray:
        """The ring as a (size, 64) uint8 view of ``base_address``. The view keeps the ring's
        memory mapped until it is collected, even past ``close()``."""
        self._check_open()
        ring = self._ring
        if ring is None:
            ring = self._ring = np.frombuffer(
                self._ffi.buffer(self._ring_memory.cdata, self.size * PACKET_SIZE),
                np.uint8).reshape(self.size, PACKET_SIZE)
        return ring

    @property
    def cdata(self) -> Any:
        """The ``hsa_queue_t *`` for C calls."""
        self._check_open()
        return self._ptr

    def slot_address(self, index: int) -> int:
        """Address of the packet slot that packet ``index`` occupies."""
        self._check_open()
        index = _check_int(index, "Queue.slot_address: index", 0, 0xFFFFFFFFFFFFFFFF)
        return self.base_address + (index & self._mask) * PACKET_SIZE

    def load_read_index(self, relaxed: bool = False) -> int:
        """The read index (hsa_queue_load_read_index_scacquire, or _relaxed)."""
        self._check_open()
        if relaxed is not True and relaxed is not False:
            relaxed = check_flag(relaxed, "Queue.load_read_index: relaxed")
        lib = self._lib
        fn = (lib.hsa_queue_load_read_index_relaxed if relaxed
              else lib.hsa_queue_load_read_index_scacquire)
        return fn(self._ptr)

    def load_write_index(self, relaxed: bool = False) -> int:
        """The write index (hsa_queue_load_write_index_scacquire, or _relaxed)."""
        self._check_open()
        if relaxed is not True and relaxed is not False:
            relaxed = check_flag(relaxed, "Queue.load_write_index: relaxed")
        lib = self._lib
        fn = (lib.hsa_queue_load_write_index_relaxed if relaxed
              else lib.hsa_queue_load_write_index_scacquire)
        return fn(self._ptr)

    def add_write_index(self, count: int = 1, relaxed: bool = False) -> int:
        """Reserve ``count`` slots; returns the first reserved index. (The raw call: it does
        not wait for the slots to be free -- see :meth:`reserve`.)"""
        self._check_open()
        count = _check_int(count, "Queue.add_write_index: count", 0, self.size)
        if relaxed is not True and relaxed is not False:
            relaxed = check_flag(relaxed, "Queue.add_write_index: relaxed")
        lib = self._lib
        fn = (lib.hsa_queue_add_write_index_relaxed if relaxed
              else lib.hsa_queue_add_write_index_scacq_screl)
        return fn(self._ptr, count)

    def cas_write_index(self, expected: int, value: int, relaxed: bool = False) -> int:
        """Compare-and-swap the write index; returns the value observed."""
        self._check_open()
        expected = _check_int(expected, "Queue.cas_write_index: expected", 0, 0xFFFFFFFFFFFFFFFF)
        value = _check_int(value, "Queue.cas_write_index: value", 0, 0xFFFFFFFFFFFFFFFF)
        if relaxed is not True and relaxed is not False:
            relaxed = check_flag(relaxed, "Queue.cas_write_index: relaxed")
        lib = self._lib
        fn = (lib.hsa_queue_cas_write_index_relaxed if relaxed
              else lib.hsa_queue_cas_write_index_scacq_screl)
        return fn(self._ptr, expected, value)

    def store_write_index(self, value: int, relaxed: bool = False) -> None:
        """Set the write index."""
        self._check_open()
        value = _check_int(value, "Queue.store_write_index: value", 0, 0xFFFFFFFFFFFFFFFF)
        if relaxed is not True and relaxed is not False:
            relaxed = check_flag(relaxed, "Queue.store_write_index: relaxed")
        lib = self._lib
        fn = (lib.hsa_queue_store_write_index_relaxed if relaxed
              else lib.hsa_queue_store_write_index_screlease)
        fn(self._ptr, value)

    def ring_doorbell(self, index: int) -> None:
        """Tell the packet processor that packets up to ``index`` are ready.

        Through the runtime (hsa_signal_store_screlease on the doorbell signal), never by poking
        a doorbell address: queues may be emulated or intercepted by profilers. (A closed
        queue's doorbell call raises ClosedError: see _closed_call.)"""
        if index.__class__ is not int or not 0 <= index <= _DOORBELL_MAX:
            # the doorbell carries a packet index: a str, float or negative value is no packet
            # (and the doorbell is a signal: its value is an int64)
            index = _check_int(index, "Queue.ring_doorbell: index", 0, _DOORBELL_MAX)
        if OBSERVERS:
            notify_doorbell(self, index)
        self._store_doorbell(self._doorbell_cdata, index)

    def flush(self) -> None:
        """Ring the doorbell for everything reserved so far (before waiting on own packets)."""
        self._check_open()
        last = self._lib.hsa_queue_load_write_index_scacquire(self._ptr) - 1
        if last >= 0:
            self.ring_doorbell(last)

    def enable_profiling(self, enabled: bool = True) -> None:
        """Ask the runtime to record dispatch start/end timestamps for this queue."""
        self._check_open()
        if enabled is not True and enabled is not False:
            enabled = check_flag(enabled, "Queue.enable_profiling: enabled")
        check(self._lib.hsa_amd_profiling_set_profiler_enabled(self._ptr, int(bool(enabled))),
              "hsa_amd_profiling_set_profiler_enabled", self._lib)
        self.is_profiling = bool(enabled)

    # -- publishing packets (docs/hsa-abi.md "Publishing a packet") -----------
    def reserve(self, count: int = 1, timeout: float = 10.0) -> int:
        """Reserve ``count`` consecutive slots; returns the first index once they are free.

        hsa_queue_add_write_index_scacq_screl, then wait (with a timeout) while the packet
        processor has not yet consumed the packets that occupied those slots one lap ago. The
        read index is re-read only when the last one seen says the ring may be full (and by
        every wait, through :meth:`check`).

        Everything is checked before the write index moves: a refused call reserves nothing."""
        if count.__class__ is not int or not 0 < count <= self.size:
            count = _check_int(count, "Queue.reserve: count", 1, self.size)
        if timeout.__class__ is not float or not 0.0 <= timeout < _MAX_TIMEOUT:
            timeout = _timeout(timeout, "Queue.reserve")
        index = self._add_write_index(self._ptr, count)
        last = index + count - 1
        if last >= self._free_end[0]:
            self._make_space(index, last, timeout)
        return index

    def _make_space(self, first: int, last: int, timeout: float) -> None:
        """Slow path of reserve (``first..last`` already reserved): re-read the read index,
        then wait for the slots to be free. If that fails (QueueFullError, an interrupt), the
        slots are abandoned (see :meth:`abandon`) before the error propagates."""
        try:
            self._catch_up()
            if last >= self._free_end[0]:
                self._wait_for_space(last, timeout)
        except BaseException:
            self.abandon(first, last - first + 1)
            raise

    def abandon(self, first: int, count: int = 1) -> None:
        """Packets ``first .. first + count - 1`` were reserved but will never be written.

        The packet processor consumes packets in order and waits at an INVALID header, so an
        abandoned slot would stall the queue for good. hsapy writes a no-op packet there
        instead (a barrier-AND without dependencies, completion signal, barrier bit or fences)
        as soon as the slot is free -- from the next call that finds the ring full or the next
        ``check()`` (every wait calls it) -- and lets the next doorbell announce it."""
        self._check_open()
        first = _check_int(first, "Queue.abandon: first", 0, 0xFFFFFFFFFFFFFFFF)
        count = _check_int(count, "Queue.abandon: count", 1, self.size)
        # Only a reserved slot not yet consumed may be abandoned: the no-op would otherwise
        # land on a slot that holds (or will hold) someone's published packet, which then
        # never runs (a slot past the write index, or one lapped after the read index passed).
        read, written = self.load_read_index(), self.load_write_index()
        if first < read or first + count > written:
            raise HsapyValueError(
                f"Queue.abandon: packets {first}..{first + count - 1} of queue {self.id} are not "
                f"reserved and unconsumed (read index {read}, write index {written}); abandon "
                "only what Queue.reserve returned and was never written")
        self._abandoned.extend(range(first, first + count))

    def _fill_abandoned(self, read_index: int) -> None:
        """Write the no-op packet into every abandoned slot that is free at ``read_index``.
        Each index is taken off the list (one atomic list.pop) before its slot is written, so
        two threads never write the same slot; one not yet free goes back on the list."""
        abandoned, size = self._abandoned, self.size
        for _ in range(len(abandoned)):
            try:
                # oldest first, one visit each: popping the end would take the one just put
                # back again and again, and never reach the free ones before it
                index = abandoned.pop(0)
            except IndexError:
                return
            if index - read_index >= size:
                abandoned.append(index)          # its slot still holds a packet one lap older
            else:
                self.write(index, _NO_OP.word, _NO_OP.body)

    def _wait_for_space(self, last: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        load = self._load_read_index
        free_end = self._free_end
        self.flush()  # the packets ahead of us must have been announced to be consumed
        while True:
            self.check()       # re-reads the read index, fills abandoned slots now free
            if last < free_end[0]:
                return
            if time.monotonic() > deadline:
                raise QueueFullError(
                    f"queue {self.id} on {self.agent.name}: no free slot for packet {last} after "
                    f"{timeout:g} s (read index {load(self._ptr)}, size {self.size}). The packet "
                    "processor is not consuming packets: an earlier packet may be waiting on a "
                    "signal that never changes, or the doorbell was not rung")
            time.sleep(0.0002)

    def write(self, index: int, word: int, body: bytes) -> None:
        """Write one packet into its reserved slot: bytes 4..63 first, then header|setup.

        The 32-bit header|setup store is the release that publishes the packet. It is an item
        store into a uint32 memoryview of the ring: CPython packs the item with a 4-byte
        memcpy to the aligned address, which is one ``mov`` on x86-64 (so the processor never
        sees half a header), and x86-TSO keeps it after the earlier body stores, so it is a
        release store without a fence. On weakly ordered CPUs (aarch64)
        it would need a store-release (stlr) or a fence first; hsapy refuses to publish there
        rather than publish unordered (see ``_require_tso``)."""
        if self._state.handle_state.closed:
            self._check_open()
        if word.__class__ is not int or not 0 <= word <= UINT32_MAX:
            word = _check_int(word, "Queue.write: word (header | setup << 16)", 0, UINT32_MAX)
        if index.__class__ is not int or not 0 <= index <= _UINT64_MAX:
            index = _check_int(index, "Queue.write: index", 0, _UINT64_MAX)
        slot = index & self._mask
        try:
            self._body_views[slot][:] = body
        except (ValueError, TypeError):
            raise HsapyValueError(
                f"Queue.write: the body is bytes 4..63 of the packet, exactly 60 bytes, not "
                f"{len(body) if hasattr(body, '__len__') else type(body).__name__}; build packets "
                "with hsapy.aql (Packet.body)") from None
        self._words[slot << 4] = word
        if OBSERVERS:
            notify_written(self, index, 1)

    def write_many(self, first: int, packets: np.ndarray, words: np.ndarray) -> None:
        """Write ``len(packets)`` reserved packets from ``first`` on, wrapping around the ring:
        every packet first, then the header|setup words in order (each header is stored after
        its own body; see :meth:`write` for why a plain store is a release here).

        ``packets`` is C-contiguous (n, 64) uint8 whose header|setup words (bytes 0..3) hold
        ``INVALID_WORD``, what a free slot holds, and ``words`` the real ones: the packets are
        then copied as whole rows (one copy of contiguous memory instead of n strided copies of
        60 bytes), and until its own header store every slot still reads as INVALID. The rows
        go through memoryviews, which copy holding the GIL: numpy lets it go for a copy this
        size, and another thread that takes it then (the simulator's packet processor, waking
        to look at its queue) makes this thread wait to get it back."""
        self._check_open()
        if first.__class__ is not int or not 0 <= first <= _UINT64_MAX:
            first = _check_int(first, "Queue.write_many: first", 0, _UINT64_MAX)
        if (packets.__class__ is not np.ndarray or packets.ndim != 2 or packets.itemsize != 1
                or packets.shape[1] != PACKET_SIZE or not packets.flags.c_contiguous
                or words.__class__ is not np.ndarray or words.dtype != np.uint32
                or words.ndim != 1 or len(words) != len(packets)
                or not 0 < len(packets) <= self.size):
            raise HsapyValueError(
                "Queue.write_many takes packets as a C-contiguous (n, 64) uint8 array and their "
                "n header|setup words as a 1-d uint32 array, n from 1 to the queue size")
        count = len(packets)
        start = first & self._mask
        head = min(count, self.size - start)     # slots before the ring wraps around
        # (numpy's stubs give ndarray the buffer protocol only for Python 3.12 and later)
        rows, ring_bytes = memoryview(packets).cast("B"), self._ring_bytes  # type: ignore[arg-type]
        ring_bytes[start * PACKET_SIZE:(start + head) * PACKET_SIZE] = rows[:head * PACKET_SIZE]
        if head < count:
            ring_bytes[:(count - head) * PACKET_SIZE] = rows[head * PACKET_SIZE:]
        ring_words = self._ring_words
        ring_words[start * 16:(start + head) * 16:16] = words[:head]
        if head < count:
            ring_words[0:(count - head) * 16:16] = words[head:]
        if OBSERVERS:
            notify_written(self, first, count)

    def publish(self, packet: Any, timeout: float = 10.0, doorbell: bool = True) -> int:
        """Publish one packet (``hsapy.aql.Packet`` or 64 bytes); returns its index.

        Reserve, wait for space, write the body, release-store header|setup, ring the
        doorbell with the packet's index (hsa_signal_store_screlease)."""
        if doorbell is not True and doorbell is not False:
            doorbell = check_flag(doorbell, "Queue.publish: doorbell")
        if packet.__class__ is not Packet or not _is_whole(packet):
            packet = _packet(packet)
        index = self.reserve(1, timeout)
        try:
            self.write(index, packet.word, packet.body)
        except BaseException:
            self.abandon(index)
            raise
        if doorbell:
            self.ring_doorbell(index)
        return index

    def publish_batch(self, packets: Any, timeout: float = 10.0, doorbell: bool = True) -> int:
        """Publish several packets with one reservation and one doorbell; returns the first
        index. Slots wrap around the ring; each header is stored after its own body, in order."""
        if doorbell is not True and doorbell is not False:
            doorbell = check_flag(doorbell, "Queue.publish_batch: doorbell")
        if isinstance(packets, (bytes, bytearray, Packet)):
            raise HsapyTypeError("publish_batch takes a list of packets; publish one with "
                                 "Queue.publish")
        packets = check_items(packets, "publish_batch takes a list of packets")
        try:
            packets = [p if p.__class__ is Packet and _is_whole(p) else _packet(p)
                       for p in packets]
        except (HsapyTypeError, HsapyValueError) as exc:
            kind = HsapyTypeError if isinstance(exc, HsapyTypeError) else HsapyValueError
            raise kind(f"Queue.publish_batch: packets: {exc}") from None
        if not packets:
            raise HsapyValueError("publish_batch needs at least one packet")
        first = self.reserve(len(packets), timeout)
        write = self.write
        offset = 0
        try:
            for offset, packet in enumerate(packets):
                write(first + offset, packet.word, packet.body)
        except BaseException:
            self.abandon(first + offset, len(packets) - offset)
            raise
        if doorbell:
            self.ring_doorbell(first + len(packets) - 1)
        return first


_MAX_TIMEOUT = float(1 << 31)


def _timeout(timeout: Any, what: str) -> float:
    return check_timeout(timeout, what)


def _is_whole(packet: Packet) -> bool:
    """Whether a Packet's fields are what a slot takes (a 32-bit word, 60 bytes of body):
    checked before a slot is reserved, as Queue.write would refuse them once it is."""
    word, body = packet.word, packet.body
    return (word.__class__ is int and 0 <= word <= UINT32_MAX and body.__class__ is bytes
            and len(body) == PACKET_SIZE - 4)


def _packet(packet: Any) -> Packet:
    """A Packet (as it is, or from 64 bytes), or a typed error. A Packet built by hand is
    checked here, before a slot is reserved for it: refused later, by Queue.write, its slot
    would already be taken (and abandoned)."""
    if isinstance(packet, Packet):
        if not _is_whole(packet):
            raise HsapyValueError(f"a Packet is a 32-bit word and a body of exactly "
                                  f"{PACKET_SIZE - 4} bytes, not {type(packet.word).__name__} "
                                  f"{packet.word!r:.20} and {type(packet.body).__name__} "
                                  f"{packet.body!r:.20}; build packets with hsapy.aql")
        return packet
    if not isinstance(packet, (bytes, bytearray, memoryview, np.ndarray)):
        raise HsapyTypeError(f"a packet is an hsapy.aql.Packet or 64 bytes, not "
                             f"{type(packet).__name__}")
    try:
        return split(packet)
    except ValueError as exc:
        raise HsapyValueError(str(exc)) from None
