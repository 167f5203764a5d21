"""Launching kernels through raw AQL: plain launch, prepared dispatch, batches and graphs.

Data flow (docs/architecture.md, "Data flow"): the kernel's KernargLayout packs the explicit
and hidden arguments into a kernarg slot; a 64-byte dispatch packet is patched from a template;
``Queue`` publishes it (body, then header|setup with one release store, then the doorbell).

Kernarg memory comes from a per-queue :class:`KernargRing`. A slot may only be reused once the
kernel that read it has *completed* (the read index advances when a packet is launched, not when
it finishes), so every ring slot owns one signal, created once with the ring and used as the
completion signal of the packet that uses the slot: no signal is ever created per dispatch.

Everything the user can get wrong is checked when a dispatch is prepared, before any byte
reaches a ring: argument count and types, workgroup and grid limits, LDS, target, and that the
kernel's executable, the queue and the runtime are open.

Lifetimes (docs/internals.md "Lifetimes"): a dispatch holds what its packet points at until its
completion is observed. Each kernarg slot records the packet index of the dispatch that last
used it -- the slot's generation -- so a DispatchResult whose slot was taken again knows its
dispatch completed (a slot is only taken again after that), instead of reading the signal of a
later one. Closing the queue, the executable or the runtime makes every slot nobody's, so the
next prepared call takes the checked way and raises ClosedError; freeing memory or code waits
for the dispatches in flight (``KernargRing.in_flight``, ``Runtime._after_dispatches``).
"""
from __future__ import annotations

import functools
import itertools
import keyword
import linecache
import re
import struct
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from hsapy import aql
from hsapy._hsa import check
from hsapy.codeobject import max_scratch_per_wave
from hsapy.errors import ClosedError, HsapyTypeError, HsapyValueError, WaitTimeoutError
from hsapy.kernarg import normalize_dims
from hsapy.executable import Kernel
from hsapy.queue import INVALID_WORD, OBSERVERS, Queue, notify_signal_reused, watch_observers
from hsapy.signal import Condition, check_timeout, value_words

__all__ = ["launch", "prepare", "PreparedDispatch", "DispatchResult", "BatchResult", "KernargRing", "Graph",
           "DispatchConfigError", "validate", "parameter_names"]

KERNARG_ALIGN = 64          # kernarg segments are 16-byte aligned at least; slots are 64-aligned
RING_SLOTS = 256
_BODY_PATCH = struct.Struct("<QQQ")  # kernarg_address, reserved2, completion_signal at body 36..59
_BODY_PATCH_OFFSET = 40 - 4


class DispatchConfigError(HsapyValueError):
    """A dispatch that the agent or kernel cannot run (sizes, LDS, target), caught before
    anything is written to a queue."""


@dataclass(frozen=True)
class Geometry:
    grid: tuple[int, int, int]
    workgroup: tuple[int, int, int]
    dims: int
    dynamic_lds: int


def _open_states(kernel: Any, queue: Any) -> tuple[Any, ...]:
    """The lifetime states a dispatch of ``kernel`` on ``queue`` depends on, outermost first:
    the runtime, the queue, the kernel's executable. Raises ClosedError if one is closed, or a
    typed error when ``kernel``/``queue`` are not what they should be."""
    if not isinstance(queue, Queue):
        raise HsapyTypeError(f"a dispatch needs a Queue (agent.create_queue), not "
                             f"{type(queue).__name__}")
    if not isinstance(kernel, Kernel):
        raise HsapyTypeError(f"a dispatch needs a Kernel (executable.kernel(name)), not "
                             f"{type(kernel).__name__}")
    states = (queue.runtime._state, queue._state.handle_state, kernel.executable._state)
    for state in states:
        state.check()
    return states


def _raise_if_closed(states: tuple[Any, ...]) -> None:
    for state in states:
        if state.closed:
            raise state.error()


def validate(kernel: Any, queue: Any, grid: Any, workgroup: Any, dynamic_lds: int = 0) -> Geometry:
    """Check a launch against the agent's and the kernel's limits; return the normalized sizes."""
    _open_states(kernel, queue)
    grid3, grid_dims = normalize_dims(grid, "grid")
    workgroup3, wg_dims = normalize_dims(workgroup, "workgroup")
    agent = queue.agent
    name = kernel.name
    kernel_agent = getattr(kernel.executable, "agent", None)
    if kernel_agent is not None and getattr(kernel_agent, "handle", None) != agent.handle:
        raise DispatchConfigError(
            f"kernel {name} was loaded for {kernel_agent.name} but the queue belongs to "
            f"{agent.name}: load the code object for {agent.name} (runtime.load(co, agent))")
    if not isinstance(dynamic_lds, int) or isinstance(dynamic_lds, bool) or dynamic_lds < 0:
        raise DispatchConfigError(f"kernel {name}: dynamic LDS must be an int >= 0, "
                                  f"not {dynamic_lds!r}")
    max_dim = agent.workgroup_max_dim
    for axis, (size, limit) in enumerate(zip(workgroup3, max_dim)):
        if size > limit:
            raise DispatchConfigError(
                f"kernel {name}: workgroup size {workgroup3} exceeds {agent.name}'s limit of "
                f"{limit} work-items along {'xyz'[axis]}")
    flat = workgroup3[0] * workgroup3[1] * workgroup3[2]
    if flat > agent.workgroup_max_size:
        raise DispatchConfigError(
            f"kernel {name}: a workgroup of {flat} work-items exceeds {agent.name}'s limit of "
            f"{agent.workgroup_max_size}")
    kernel_max = kernel.max_flat_workgroup_size or flat
    if flat > kernel_max:
        raise DispatchConfigError(
            f"kernel {name}: a workgroup of {flat} work-items exceeds the kernel's "
            f"max_flat_workgroup_size of {kernel_max} (compiled in; rebuild with a larger "
            "__launch_bounds__ / amdgpu-flat-work-group-size, or launch smaller workgroups)")
    for axis, (size, limit) in enumerate(zip(grid3, agent.grid_max_dim)):
        if size > limit:
            raise DispatchConfigError(
                f"kernel {name}: grid size {grid3} exceeds {agent.name}'s limit of {limit} "
                f"work-items along {'xyz'[axis]}")
    total = grid3[0] * grid3[1] * grid3[2]
    if agent.grid_max_size and total > agent.grid_max_size:
        raise DispatchConfigError(
            f"kernel {name}: {total} work-items exceed {agent.name}'s grid limit of "
            f"{agent.grid_max_size}")
    lds = kernel.group_segment_size + dynamic_lds
    if agent.lds_size and lds > agent.lds_size:
        raise DispatchConfigError(
            f"kernel {name}: {kernel.group_segment_size} bytes of static LDS + {dynamic_lds} "
            f"dynamic = {lds} bytes exceed the {agent.lds_size} bytes a workgroup of "
            f"{agent.name} may use")
    lanes = kernel.wavefront_size or agent.wavefront_size
    scratch_limit = max_scratch_per_wave(agent.name)
    if scratch_limit is not None and kernel.private_segment_size * lanes > scratch_limit:
        raise DispatchConfigError(
            f"kernel {name}: {kernel.private_segment_size} bytes of private memory per "
            f"work-item x {lanes} lanes = {kernel.private_segment_size * lanes} bytes of "
            f"scratch per wave exceed {agent.name}'s limit of {scratch_limit} "
            "(COMPUTE_TMPRING_SIZE.WAVESIZE): shrink the kernel's private arrays or stack")
    return Geometry(grid3, workgroup3, max(grid_dims, wg_dims), dynamic_lds)


class KernargRing:
    """Kernarg slots of one size for one queue, each with its own completion signal.

    A slot's signal follows the HSA convention (armed to 1, the packet processor decrements it
    to 0 on completion), so a DispatchResult's signal can serve as a barrier dependency.
    ``take()`` returns the next slot once its previous dispatch completed, re-armed.

    Taking a slot reads the signal's value and re-arms it with a silent store. Where the runtime
    lays signals out as amd_signal_t (ROCr and the simulator; probed by
    ``hsapy.signal.value_words``) both are one C load/store on the value word, as ROCr's own
    hsa_signal_load_relaxed / hsa_signal_silent_store_relaxed do; elsewhere they are the API
    calls.

    ``state[slot]`` is ``(owner, value words, body)``: ``owner`` the Packer whose hidden-argument
    template the slot's kernarg segment holds (None: nobody's), ``value words`` the slot
    signal's ``value_words`` (None where signals are not amd_signal_t), ``body`` the packet body
    that owner's prepared launch publishes with this slot (its kernarg address and completion
    signal patched in). One tuple, so a prepared call finds all three with one lookup.

    ``indices[slot]`` is the packet index of the dispatch that last used the slot: its
    generation. A DispatchResult holds (slot, index); once ``indices[slot]`` differs, the slot
    was taken again, which happens only after its dispatch completed. ``in_flight()`` lists
    the slots whose dispatch has not completed, for releases that must wait for them. When the
    queue closes (``queue_closing``, then ``close``) every slot becomes nobody's and
    ``final_values`` keeps the slot signals' last values, so results still answer."""

    def __init__(self, queue: Any, slot_size: int, slots: int = RING_SLOTS) -> None:
        runtime = queue.runtime
        if slots & (slots - 1):
            raise HsapyValueError(f"kernarg ring: {slots} slots is not a power of two")
        self.queue = queue
        self.slot_size = slot_size
        self.slots = slots
        self.buffer = queue.agent.kernarg_pool.allocate(slot_size * slots)
        if runtime.runs_rocr:
            self.buffer.allow_access([queue.agent])
        self.view = runtime.ffi.buffer(runtime.ffi.cast("uint8_t *", self.buffer.address),
                                       slot_size * slots)
        self.signals = [runtime.create_signal(0) for _ in range(slots)]
        self.cdatas = [s.cdata for s in self.signals]
        self.handles = [s.handle for s in self.signals]
        self.addresses = [self.buffer.address + i * slot_size for i in range(slots)]
        # Slots are handed out in turn by an itertools.cycle: next() is one atomic step, so
        # threads sharing a ring never take the same slot. (next(it) costs less than calling a
        # bound it.__next__, a method-wrapper without vectorcall.)
        self.slot_order = itertools.cycle(range(slots))
        values = [value_words(runtime, s) for s in self.signals]
        self.values = values if all(v is not None for v in values) else None
        self.state: list[tuple[Any, Any, bytes | None]] = [
            (None, value, None) for value in (self.values or [None] * slots)]
        self.indices = [-1] * slots
        self.closed = False
        self.closed_by = ""
        self.final_values: list[int] | None = None
        watch_observers(self)
        runtime._dispatch_trackers.add(self)
        self._load = runtime.lib.hsa_signal_load_relaxed
        # Arming needs no wake-up: nobody waits for a value of 1 (hsa.h: silent store).
        self._store = runtime.lib.hsa_signal_silent_store_relaxed

    def take(self, timeout: float = 10.0) -> int:
        """Index of the next slot whose previous dispatch has completed; its signal re-armed."""
        if self.closed:
            self.queue._check_open()
        i = next(self.slot_order)
        self.arm(i, timeout)
        return i

    def arm(self, i: int, timeout: float = 10.0) -> None:
        """Re-arm slot ``i``'s signal (telling observers first) once its previous dispatch has
        completed: through the value word where there is one, else through the API."""
        if OBSERVERS:
            notify_signal_reused(self.handles[i])
        values = self.values
        if values is not None:
            value = values[i]
            if value[1] > 0:
                self.wait_free(i, timeout)
            value[1] = 1                                   # silent store: armed
        else:
            self.take_at(i, timeout)

    def observers_attached(self) -> None:
        """An observer was attached (hsapy.queue.add_observer): make every slot nobody's, so
        the prepared path's calls go the general way, which tells observers (see _FAST_PATH)."""
        self.forget_all()

    def forget_all(self) -> None:
        """Make every slot nobody's: the next prepared call with each takes the general way
        (which checks that the queue, the executable and the runtime are open)."""
        for i in range(self.slots):
            self.forget(i)

    def value(self, i: int) -> int:
        """Slot ``i``'s signal value (> 0: its dispatch has not completed)."""
        if self.closed:
            return self.final_values[i] if self.final_values is not None else 1
        values = self.values
        return values[i][1] if values is not None else self._load(self.cdatas[i])

    def in_flight(self) -> list[Any]:
        """A mark (a callable: "has it completed?") per slot whose dispatch has not completed.
        Nothing is in flight on a closed queue or one stopped by an error (its packets never
        run again)."""
        queue = self.queue
        if self.closed or queue.error is not None:
            return []
        return [self._mark(i) for i in range(self.slots) if self.value(i) > 0]

    def _mark(self, i: int) -> Any:
        generation, indices = self.indices[i], self.indices

        def completed() -> bool:
            return (self.closed or self.queue.error is not None or indices[i] != generation
                    or self.value(i) <= 0)
        return completed

    def queue_closing(self) -> None:
        """The queue is being closed: no prepared call may take a slot from now on."""
        self.closed = True
        self.forget_all()

    def forget(self, i: int) -> None:
        """Slot ``i``'s kernarg segment is about to hold other bytes than its owner's template."""
        self.state[i] = (None, self.state[i][1], None)

    def take_at(self, i: int, timeout: float = 10.0) -> None:
        """Arm slot ``i`` through the API (wait for its previous dispatch first)."""
        cdata = self.cdatas[i]
        if self._load(cdata) > 0:
            self.wait_free(i, timeout)
        self._store(cdata, 1)

    def wait_free(self, i: int, timeout: float = 10.0) -> None:
        """Slot ``i`` is still in flight: wait (with a timeout) until its dispatch completes."""
        queue = self.queue
        queue.flush()  # packets published without a doorbell must be announced first
        try:
            self.signals[i].wait(2, 1, timeout=timeout, abort=queue.check)
        except WaitTimeoutError:
            raise WaitTimeoutError(
                f"kernarg ring of queue {queue.id}: slot {i} of {self.slots} is still in use "
                f"after {timeout:g} s -- the dispatch that took it a lap ago has not completed, "
                "so every slot is in flight. The queue is not making progress: an earlier "
                "packet may wait on a signal that never changes (a barrier dependency, a "
                "barrier-value packet), or a kernel does not end") from None

    def give_back(self, i: int) -> None:
        """Slot ``i`` was taken but its packet never published: mark it free again."""
        self._store(self.cdatas[i], 0)

    def close(self, by: str = "") -> None:
        """Release the slots' signals and memory, once the queue runs no packet any more;
        ``final_values`` keeps what the signals said last (see DispatchResult)."""
        if self.final_values is not None:
            return
        self.closed = True
        self.closed_by = by or "Queue.close()"
        self.forget_all()
        self.final_values = [
            (self.values[i][1] if self.values is not None else self._load(self.cdatas[i]))
            if not self.signals[i].is_closed else 1 for i in range(self.slots)]
        for signal in self.signals:
            signal._state.close(self.closed_by)
        self.buffer._state.close(self.closed_by)


BATCH_ARENA_SLOTS = 512


class _BatchArena:
    """Kernarg space for batches: two halves used alternately, each guarded by the completion
    signal of the barrier-AND packet that ends the batch which used it."""

    def __init__(self, queue: Any, slot_size: int) -> None:
        runtime = queue.runtime
        self.queue = queue
        self.slot_size = slot_size
        half = slot_size * BATCH_ARENA_SLOTS
        self.buffer = queue.agent.kernarg_pool.allocate(2 * half)
        if runtime.runs_rocr:
            self.buffer.allow_access([queue.agent])
        self.view = runtime.ffi.buffer(runtime.ffi.cast("uint8_t *", self.buffer.address), 2 * half)
        self.signals = [runtime.create_signal(0), runtime.create_signal(0)]
        values = [value_words(runtime, s) for s in self.signals]
        self.values = values if all(v is not None for v in values) else None
        self.next = 0
        # half -> first packet index of the batch that last used it (its generation; see
        # KernargRing.indices)
        self.indices = [-1, -1]
        self.closed = False
        self.closed_by = ""
        self.final_values: list[int] | None = None
        runtime._dispatch_trackers.add(self)

    def take(self, timeout: float = 10.0) -> tuple[int, Any]:
        """The next half, once the batch that used it last has completed; its signal armed."""
        half = self.next
        self.next ^= 1
        signal = self.signals[half]
        if OBSERVERS:
            notify_signal_reused(signal.handle)
        value = self.values[half] if self.values is not None else None
        if (value[1] if value is not None else signal.load()) > 0:
            self.queue.flush()
            try:
                signal.wait(2, 1, timeout=timeout, abort=self.queue.check)
            except WaitTimeoutError:
                raise WaitTimeoutError(
                    f"batch kernarg arena of queue {self.queue.id}: the batch that used half "
                    f"{half} two batches ago has not completed after {timeout:g} s, so no "
                    "half is free. The queue is not making progress: an earlier packet may "
                    "wait on a signal that never changes, or a kernel does not end") from None
        if value is not None:
            value[1] = 1            # silent store, as KernargRing.take
        else:
            signal.store(1, relaxed=True, silent=True)
        return half, signal

    def offset_of(self, half: int) -> int:
        return half * self.slot_size * BATCH_ARENA_SLOTS

    def address_of(self, half: int) -> int:
        return self.buffer.address + self.offset_of(half)

    def value(self, half: int) -> int:
        """The half's guard signal value (> 0: its batch has not completed)."""
        if self.closed:
            return self.final_values[half] if self.final_values is not None else 1
        value = self.values[half] if self.values is not None else None
        return value[1] if value is not None else self.signals[half].load()

    def in_flight(self) -> list[Any]:
        """A mark per half whose batch has not completed (see KernargRing.in_flight)."""
        if self.closed or self.queue.error is not None:
            return []
        return [self._mark(half) for half in (0, 1) if self.value(half) > 0]

    def _mark(self, half: int) -> Any:
        generation, indices = self.indices[half], self.indices

        def completed() -> bool:
            return (self.closed or self.queue.error is not None
                    or indices[half] != generation or self.value(half) <= 0)
        return completed

    def queue_closing(self) -> None:
        """The queue is being closed: no batch may take a half from now on."""
        self.closed = True

    def close(self, by: str = "") -> None:
        """Release the halves' signals and memory (see KernargRing.close)."""
        if self.final_values is not None:
            return
        self.closed = True
        self.closed_by = by or "Queue.close()"
        self.final_values = [
            (self.values[h][1] if self.values is not None else self.signals[h].load())
            if not self.signals[h].is_closed else 1 for h in (0, 1)]
        for signal in self.signals:
            signal._state.close(self.closed_by)
        self.buffer._state.close(self.closed_by)


def _arena_for(queue: Any, slot_size: int) -> _BatchArena:
    arenas = queue._kernarg_rings
    key = ("batch", slot_size)
    arena = arenas.get(key)
    if arena is None:
        arena = arenas[key] = _BatchArena(queue, slot_size)
    return arena


def _ring_for(queue: Any, size: int) -> KernargRing:
    slot_size = max(256, 1 << (max(size, 1) - 1).bit_length())
    rings = queue._kernarg_rings
    ring = rings.get(slot_size)
    if ring is None:
        ring = rings[slot_size] = KernargRing(queue, slot_size, slots=min(RING_SLOTS, queue.size))
    return ring


class _SlotTakenAgain(Exception):
    """A result's kernarg slot (or arena half) was taken by a later dispatch: its own dispatch
    completed before that (how DispatchResult.wait leaves a signal wait early)."""


def _completed(tracker: Any, where: int, generation: int, what: str, queue: Any) -> bool:
    """Has the dispatch (or batch) that used ``tracker``'s slot/half ``where`` with packet index
    ``generation`` completed? Raises ClosedError when its queue was closed before it did."""
    if tracker.indices[where] != generation:
        return True                   # taken again: only ever after it completed
    if tracker.closed:
        if tracker.final_values is not None and tracker.final_values[where] <= 0:
            return True
        raise queue._state.handle_state.error(
            f"it was closed before {what} completed, which therefore never will")
    return tracker.value(where) <= 0


def _wait_completed(tracker: Any, where: int, generation: int, what: str, queue: Any,
                    timeout: float) -> None:
    """Wait (at most ``timeout`` s) until _completed says so; the queue's error, or its
    closing, raises."""
    if _completed(tracker, where, generation, what, queue):
        return
    indices, check = tracker.indices, queue.check

    def abort() -> None:
        check()
        if indices[where] != generation:
            raise _SlotTakenAgain

    try:
        tracker.signals[where].wait(Condition.LT, 1, timeout=timeout, abort=abort)
    except _SlotTakenAgain:
        return
    except ClosedError:
        if not _completed(tracker, where, generation, what, queue):
            raise


def _check_after_completion(queue: Any) -> None:
    """Raise the error the queue stopped with, if any (completion was observed: a queue
    closed since then is no error of this dispatch)."""
    if queue.error is not None or not queue.is_closed:
        queue.check()


class BatchResult:
    """Dispatches published by ``PreparedDispatch.batch``: ``chunks`` of (first index, count,
    signal of the chunk's closing barrier-AND packet)."""

    __slots__ = ("queue", "kernel", "chunks", "_arena", "_halves")

    def __init__(self, queue: Any, kernel: Any, chunks: list[tuple[int, int, Any]],
                 arena: Any = None, halves: list[int] | None = None) -> None:
        self.queue = queue
        self.kernel = kernel
        self.chunks = chunks
        self._arena = arena
        self._halves = halves or []

    def __repr__(self) -> str:
        return (f"BatchResult(kernel={getattr(self.kernel, 'name', self.kernel)!r}, "
                f"dispatches={sum(count for _f, count, _s in self.chunks)}, done={self.is_done})")

    @property
    def indices(self) -> list[int]:
        """Packet indices of the dispatches (the closing barrier packets excluded)."""
        return [first + k for first, count, _signal in self.chunks for k in range(count)]

    @property
    def is_done(self) -> bool:
        """True once every chunk completed (ClosedError: the queue was closed before)."""
        return all(_completed(self._arena, half, first, "this batch", self.queue)
                   for (first, _count, _signal), half in zip(self.chunks, self._halves))

    def wait(self, timeout: float = 10.0) -> BatchResult:
        """Wait for every chunk (raising the queue's error if it stopped)."""
        timeout = check_timeout(timeout, "BatchResult.wait")
        deadline = time.monotonic() + timeout
        for (first, _count, _signal), half in zip(self.chunks, self._halves):
            _wait_completed(self._arena, half, first, "this batch", self.queue,
                            max(deadline - time.monotonic(), 0.0))
        _check_after_completion(self.queue)
        return self


class DispatchResult:
    """One published dispatch: its packet ``index``, ``signal`` (completion), and after
    :meth:`wait`, GPU ``start``/``end`` timestamps (ticks) when profiling is enabled.

    The result holds its kernarg slot and the packet index it was published with (the slot's
    generation): once a later dispatch takes the slot, this one is known complete and the
    slot's signal belongs to the later one. A result whose queue was closed before its dispatch
    completed raises ClosedError from ``is_done`` and ``wait``."""

    # start/end default to the class attributes until wait() reads the timestamps: creating a
    # result on the hot path sets five slots and nothing else.
    __slots__ = ("queue", "kernel", "index", "_ring", "_slot", "__dict__")
    start: int | None = None
    end: int | None = None

    def __init__(self, queue: Any, kernel: Any, index: int, ring: Any, slot: int) -> None:
        self.queue = queue
        self.kernel = kernel
        self.index = index
        self._ring = ring
        self._slot = slot

    @property
    def signal(self) -> Any:
        """The completion signal of the dispatch's kernarg slot (the next dispatch that takes
        the slot re-arms it: use it as a dependency while this result is not yet done)."""
        return self._ring.signals[self._slot]

    def __repr__(self) -> str:
        try:
            done: Any = self.is_done
        except ClosedError:
            done = "cancelled"
        return (f"DispatchResult(kernel={getattr(self.kernel, 'name', self.kernel)!r}, "
                f"index={self.index}, done={done}, start={self.start}, end={self.end})")

    @property
    def is_done(self) -> bool:
        """True once the dispatch completed (ClosedError: its queue was closed before)."""
        return _completed(self._ring, self._slot, self.index, "this dispatch", self.queue)

    def wait(self, timeout: float = 10.0) -> DispatchResult:
        """Wait for completion (raising the queue's error if it stopped) and read timestamps."""
        timeout = check_timeout(timeout, "DispatchResult.wait")
        ring, slot, index = self._ring, self._slot, self.index
        _wait_completed(ring, slot, index, "this dispatch", self.queue, timeout)
        _check_after_completion(self.queue)
        if ring.indices[slot] == index and not ring.closed:
            self._read_times()
        return self

    def _read_times(self) -> None:
        # Only a profiled queue's dispatches have timestamps: ROCr converts whatever the signal
        # holds (its start/end of a dispatch that recorded none are garbage) and warns on stderr.
        if not self.queue.is_profiling:
            return
        runtime = self.queue.runtime
        ffi, lib = runtime.ffi, runtime.lib
        times = ffi.new("hsa_amd_profiling_dispatch_time_t *")
        status = lib.hsa_amd_profiling_get_dispatch_time({"handle": self.queue.agent.handle},
                                                         self.signal.cdata, times)
        # the slot may have been taken again meanwhile: then the times are another dispatch's
        if status == 0 and times.end and self._ring.indices[self._slot] == self.index:
            self.start, self.end = int(times.start), int(times.end)

    @property
    def duration_us(self) -> float | None:
        """GPU-side duration from the dispatch timestamps (simulated time on the simulator)."""
        if self.start is None or self.end is None:
            return None
        return (self.end - self.start) * 1e6 / self.queue.runtime.timestamp_frequency


def _take_general(ring: KernargRing, packer: Any, template: bytes, states: tuple) -> Any:
    """``take_general(slot, args)`` for one prepared launch (see _FAST_PATH): check that the
    runtime, the queue and the kernel's executable (``states``) are open, arm slot ``slot``
    (telling observers), pack ``args``; the slot's packet body. While nobody observes it records
    the body in ``ring.state``, so that the next call with the slot takes the short branch."""
    state, view, slot_size = ring.state, ring.view, ring.slot_size
    addresses, handles = ring.addresses, ring.handles
    explicit = packer.explicit_count
    pack_explicit, pack = packer.pack_explicit_into, packer.pack_into

    def take_general(slot: int, args: tuple) -> bytes:
        for lifetime in states:
            if lifetime.closed:
                raise lifetime.error()
        ring.arm(slot)
        owner, value, body = state[slot]
        try:
            if owner is packer and body is not None:       # hidden arguments already in place
                if args or explicit:
                    pack_explicit(view, slot * slot_size, *args)
                return body
            ring.forget(slot)
            pack(view, slot * slot_size, *args)
        except BaseException:
            ring.give_back(slot)
            raise
        patched = bytearray(template)
        _BODY_PATCH.pack_into(patched, _BODY_PATCH_OFFSET, addresses[slot], 0, handles[slot])
        body = bytes(patched)
        state[slot] = (packer, value, body)
        # Looked at after the store: an observer attached meanwhile has either been seen here
        # or has had add_observer forget this slot after the store (observers_attached).
        if OBSERVERS:
            ring.forget(slot)
        return body

    return take_general


# The per-dispatch path of a PreparedDispatch, as source compiled once per flavour and
# parameter list (``_fast_path``): ``make(...)`` returns the call, a closure over everything
# that does not change between calls, so a call does no attribute lookups. Its short branch is
# KernargRing.take (KernargRing.arm is the reference for its arming), Packer.pack_into and
# Queue.reserve/write/ring_doorbell inlined. Why source: a Python call is cheapest when it has
# a fixed list of positional parameters and is called without keywords (CPython 3.11 then runs
# it without a C-level call and without parsing arguments); here those are the kernel's own
# explicit parameters, so ``publish``/``submit`` take exactly what the kernel takes -- and
# inspect.signature and a wrong argument count say so by name.
#
# The short branch is the common case: the slot already holds this launch's hidden arguments
# and its packet body, and its signal is an amd_signal_t. Anything else -- first use of a
# slot, another launch used it since, signals armed through the API, observers attached
# (add_observer makes every slot nobody's, and take_general leaves them so while anyone
# observes) -- goes through ``general``: take_general, then Queue.reserve and Queue.write,
# which tell the observers. So the short branch never looks at OBSERVERS; a call already past
# its first line when an observer is attached goes unobserved. The call references only what
# it is given, never the PreparedDispatch: one is made per plain launch, and a reference cycle
# would leave garbage for the cyclic collector. Every call records its packet index as the
# slot's generation (``indices``; see KernargRing). Closing the queue, the executable or the
# runtime makes every slot nobody's, so a call after that takes the general way, whose
# take_general raises ClosedError.
_FAST_PATH = """\
def make(ring, queue, packer, word, take_general, kernel):
    state, view, slot_size, indices = ring.state, ring.view, ring.slot_size, ring.indices
    slot_order, explicit = ring.slot_order, packer.explicit_count
    add, queue_ptr, free_end, queue_mask = (queue._add_write_index, queue._ptr, queue._free_end,
                                            queue._mask)
    body_views, header_words, everything = queue._body_views, queue._words, slice(None)
    pack_explicit, ring_doorbell = packer.pack_explicit_into, queue.ring_doorbell
    # where signals are not amd_signal_t, the short branch looks for an owner no slot ever
    # has: every call goes the general way, arming through the API
    fast_owner = packer if ring.values is not None else object()

    def general(slot, args{general_doorbell}):
        body = take_general(slot, args)
        try:
            index = queue.reserve(1)
        except BaseException:
            ring.give_back(slot)
            raise
        queue.write(index, word, body)
        indices[slot] = index
{doorbell}
        return {result}

    def {name}({params}):
        slot = next(slot_order)
        owner, value, body = state[slot]
        if owner is not fast_owner:
            return general(slot, {args}{general_doorbell})
        if value[1] > 0:
            ring.wait_free(slot)
        value[1] = 1                                       # silent store: armed
{pack}
        try:
            index = add(queue_ptr, 1)
            if index >= free_end[0]:
                queue._make_space(index, index, 10.0)   # abandons the index if it fails
        except BaseException:
            ring.give_back(slot)
            raise
        at = index & queue_mask
        body_views[at][everything] = body
        header_words[at << 4] = word                       # the release store (see Queue.write)
        indices[slot] = index
{doorbell}
        return {result}

    return {name}
"""

_PACK_NAMED = """\
        try:
            pack_explicit(view, slot * slot_size, {args})
        except BaseException:
            ring.give_back(slot)
            raise"""
_PACK_TUPLE = """\
        if args or explicit:
            try:
                pack_explicit(view, slot * slot_size, *args)
            except BaseException:
                ring.give_back(slot)
                raise"""

# flavour -> (rings the doorbell: "always" / "never" / "if asked", what the call returns)
_FLAVOURS = {
    "publish": ("never", "index"),
    "submit": ("always", "index"),
    "result": ("if asked", "DispatchResult(queue, kernel, index, ring, slot)"),
    "pair": ("if asked", "index, slot"),
}


def _fast_path_source(flavour: str, params: tuple[str, ...]) -> str:
    """The source of ``make`` for one flavour (see _FLAVOURS): "publish" and "submit" take
    ``params`` (the kernel's explicit parameters); "result" and "pair" take (args, doorbell)."""
    doorbell, result = _FLAVOURS[flavour]
    if doorbell == "if asked":
        signature, args, pack = "args, doorbell", "args", _PACK_TUPLE
    else:
        signature = ", ".join(params)
        args = f"({signature}{',' if len(params) == 1 else ''})"
        pack = (_PACK_NAMED.format(args=signature) if params
                else "        # no explicit arguments to pack")
    ring = {"never": "        # no doorbell: the caller announces the packet",
            "always": "        ring_doorbell(index)",
            "if asked": "        if doorbell:\n            ring_doorbell(index)"}[doorbell]
    return _FAST_PATH.format(name=flavour, params=signature, args=args, pack=pack,
                             doorbell=ring, result=result,
                             general_doorbell=", doorbell" if doorbell == "if asked" else "")


@functools.lru_cache(maxsize=512)
def _fast_path(flavour: str, params: tuple[str, ...] = ()) -> Any:
    """``make`` (see _FAST_PATH) compiled for one flavour and parameter list. Its source is
    registered with linecache, so a traceback through a dispatch shows the lines."""
    source = _fast_path_source(flavour, params)
    filename = f"<hsapy fast path: {flavour}({', '.join(params)})>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), globals(), namespace)
    return namespace["make"]


@functools.lru_cache(maxsize=1)
def _reserved_names() -> frozenset[str]:
    """Every name the fast path's source uses (comments aside): a kernel parameter may not
    shadow one. Read from the text, not compiled: this runs on a process's first prepare."""
    text = "\n".join((_FAST_PATH, _PACK_NAMED, _PACK_TUPLE, *(r for _d, r in _FLAVOURS.values()),
                      "ring_doorbell doorbell args"))
    return frozenset(re.findall(r"[A-Za-z_]\w*", re.sub(r"#[^\n]*", "", text)))


def parameter_names(names: Sequence[str]) -> tuple[str, ...]:
    """Python parameter names for a kernel's explicit arguments: each argument's own name where
    it is an identifier that no other argument, Python keyword or fast-path name uses, else
    ``arg<i>`` (with underscores appended while another parameter has that name)."""
    reserved = _reserved_names()
    usable = [name.isidentifier() and not keyword.iskeyword(name) and name not in reserved
              and names.count(name) == 1 for name in names]
    taken = {name for name, ok in zip(names, usable) if ok}
    out = []
    for i, (name, ok) in enumerate(zip(names, usable)):
        if not ok:
            name = f"arg{i}"
            while name in taken or name in reserved:
                name += "_"
            taken.add(name)
        out.append(name)
    return tuple(out)


class PreparedDispatch:
    """A launch prepared once: header|setup word, body template and kernarg packer.

    Calling it (``prepared(*args)``) takes a kernarg slot, packs the arguments, patches the
    kernarg address and completion signal into the body, and publishes: nothing else is
    computed per call. ``batch([args, ...])`` publishes many with one doorbell."""

    def __init__(self, kernel: Any, queue: Any, grid: Any, workgroup: Any, dynamic_lds: int = 0,
                 barrier: bool = False, acquire: Any = "system", release: Any = "system") -> None:
        geometry = validate(kernel, queue, grid, workgroup, dynamic_lds)
        if barrier.__class__ is not bool and barrier not in (0, 1):
            raise DispatchConfigError(f"kernel {kernel.name}: barrier is a bool, not {barrier!r}")
        # what the checked way looks at on every call (validate checked them just now)
        self._states = (queue.runtime._state, queue._state.handle_state,
                        kernel.executable._state)
        self.kernel = kernel
        self.queue = queue
        self.geometry = geometry
        dims = geometry.dims  # hidden_grid_dims and the packet's setup agree with what was given
        self.packer = kernel.layout.packer(geometry.grid[:dims], geometry.workgroup[:dims],
                                           dynamic_lds, queue_ptr=queue.address,
                                           apertures=queue.apertures)
        template = aql.kernel_dispatch(
            kernel.kernel_object, geometry.grid, geometry.workgroup, dims=geometry.dims,
            private_segment_size=kernel.private_segment_size,
            group_segment_size=kernel.group_segment_size + dynamic_lds,
            barrier=barrier, acquire=acquire, release=release)
        self.word = template.word
        self._body = bytearray(template.body)
        self.ring = _ring_for(queue, max(kernel.kernarg_size, self.packer.size, 1))
        self._slot_size = self.ring.slot_size
        self._chunks: dict[tuple[int, int, int, bool], tuple[np.ndarray, np.ndarray]] = {}

    def _compile(self, flavour: str) -> Any:
        """This launch's per-dispatch path of one flavour (see _FAST_PATH and _FLAVOURS)."""
        doorbell, _result = _FLAVOURS[flavour]
        params = (parameter_names([slot.name for slot in self.kernel.layout.slots])
                  if doorbell != "if asked" else ())
        make = _fast_path(flavour, params)
        take_general = _take_general(self.ring, self.packer, bytes(self._body), self._states)
        call = make(self.ring, self.queue, self.packer, self.word, take_general, self.kernel)
        call.__qualname__ = f"PreparedDispatch({self.kernel.name}).{flavour}"
        return call

    # The compiled paths, each built on first use: ``_call(args, doorbell)`` returns a
    # DispatchResult (for __call__), ``_submit(args, doorbell)`` (index, kernarg slot) (for
    # launch()); ``publish`` and ``submit`` are public.
    @functools.cached_property
    def _call(self) -> Any:
        return self._compile("result")

    @functools.cached_property
    def _submit(self) -> Any:
        return self._compile("pair")

    def __call__(self, *args: Any, doorbell: bool = True) -> DispatchResult:
        """Publish one dispatch with ``args``; returns its (not yet waited) result."""
        return self._call(args, doorbell)

    @functools.cached_property
    def publish(self) -> Any:
        """The fast path without the doorbell: ``prepared.publish(a, b, ...)`` -- exactly the
        kernel's explicit parameters, by position -- writes one dispatch packet and returns its
        packet index. The packet processor does not fetch it until a doorbell announces it
        (``submit``, ``queue.flush()``, ``queue.ring_doorbell(index)``), so many can be
        published and announced with one doorbell.

        It is the compiled call itself (see _FAST_PATH), built on first access and then found
        in the instance's ``__dict__``: calling it runs no method frame of its own, and a
        reference taken once (``publish = prepared.publish``) is just as fast."""
        return self._compile("publish")

    @functools.cached_property
    def submit(self) -> Any:
        """``prepared.submit(a, b, ...)``: ``publish``, then the doorbell with the packet's
        index. Returns the packet index (no result object)."""
        return self._compile("submit")

    def batch(self, arg_lists: Sequence[Sequence[Any]], doorbell: bool = True) -> BatchResult:
        """Publish one dispatch per argument list, vectorised: one reservation and one doorbell
        per chunk of at most ``queue size - 1`` dispatches.

        Each chunk ends with a barrier-AND packet (barrier bit set, so it completes only after
        every dispatch before it) whose completion signal guards the chunk's kernarg arena; the
        dispatch packets themselves carry no completion signal. Identical argument lists share
        one kernarg segment (kernels only read it)."""
        _raise_if_closed(self._states)
        if arg_lists.__class__ is not list:
            if isinstance(arg_lists, (str, bytes)) or not hasattr(arg_lists, "__iter__"):
                raise HsapyTypeError(f"PreparedDispatch.batch takes a list of argument lists, "
                                     f"not {type(arg_lists).__name__}")
            arg_lists = list(arg_lists)
        limit = min(self.queue.size - 1, BATCH_ARENA_SLOTS)
        halves: list[int] = []
        if len(arg_lists) <= limit:
            chunks = [self._batch_chunk(arg_lists, doorbell, halves)] if arg_lists else []
        else:
            chunks = [self._batch_chunk(arg_lists[start:start + limit], doorbell, halves)
                      for start in range(0, len(arg_lists), limit)]
        return BatchResult(self.queue, self.kernel, chunks,
                           _arena_for(self.queue, self._slot_size), halves)

    def _batch_chunk(self, arg_lists: list[Sequence[Any]], doorbell: bool,
                     halves: list[int]) -> tuple[int, int, Any]:
        queue = self.queue
        arena = _arena_for(queue, self._slot_size)
        half, signal = arena.take()
        count = len(arg_lists)
        try:
            # list.count compares by identity first: ``[args] * n`` is checked at C speed.
            shared = arg_lists.count(arg_lists[0]) == count
            packer, view, size, base = self.packer, arena.view, self._slot_size, arena.offset_of(half)
            try:
                if shared:
                    packer.pack_into(view, base, *arg_lists[0])
                else:
                    for k, args in enumerate(arg_lists):
                        packer.pack_into(view, base + k * size, *args)
            except TypeError as exc:
                if isinstance(exc, HsapyTypeError):
                    raise
                # ``*args`` of something that is not a list of arguments
                raise HsapyTypeError(f"PreparedDispatch.batch takes a list of argument lists "
                                     f"(one per dispatch): {exc}") from None
            packets, words = self._chunk_packets(arena, half, signal, count, shared)
            first = queue.reserve(count + 1)
        except BaseException:
            if arena.values is not None:
                arena.values[half][1] = 0
            else:
                signal.store(0, relaxed=True)
            raise
        queue.write_many(first, packets, words)
        arena.indices[half] = first
        halves.append(half)
        if doorbell:
            queue.ring_doorbell(first + count)
        return first, count, signal

    def _chunk_packets(self, arena: _BatchArena, half: int, signal: Any, count: int,
                       shared: bool) -> tuple[np.ndarray, np.ndarray]:
        """The packets of a chunk (dispatches + closing barrier-AND) and their header words.
        They depend only on the arena half, the count and whether the kernarg segment is
        shared, so they are built once per such combination and reused."""
        key = (id(arena), half, count, shared)
        cached = self._chunks.get(key)
        if cached is not None:
            return cached
        if shared:
            addresses = np.full(count, arena.address_of(half), np.uint64)
        else:
            addresses = arena.address_of(half) + np.arange(count, dtype=np.uint64) * self._slot_size
        packets = np.empty((count + 1, 64), np.uint8)
        packets.view(np.uint32)[:, 0] = INVALID_WORD     # Queue.write_many copies whole rows
        packets[:count, 4:] = np.frombuffer(bytes(self._body), np.uint8)
        packets[:count].view(np.uint64)[:, 5] = addresses            # kernarg_address (byte 40)
        packets[:count].view(np.uint64)[:, 7] = 0                    # completion_signal (byte 56)
        fence = aql.barrier_and([], completion_signal=signal.handle)
        packets[count, 4:] = np.frombuffer(fence.body, np.uint8)
        words = np.full(count + 1, self.word, np.uint32)
        words[count] = fence.word
        if len(self._chunks) >= 8:
            self._chunks.clear()
        self._chunks[key] = (packets, words)
        return packets, words

    def packet(self) -> aql.Packet:
        """The packet template every call publishes, for study: ``kernarg_address`` and
        ``completion_signal`` are 0 here because each call patches in its own slot's."""
        body = bytearray(self._body)
        _BODY_PATCH.pack_into(body, _BODY_PATCH_OFFSET, 0, 0, 0)
        return aql.Packet(self.word, bytes(body))


def prepare(kernel: Any, queue: Any, grid: Any, workgroup: Any, dynamic_lds: int = 0,
            barrier: bool = False, acquire: Any = "system", release: Any = "system") -> PreparedDispatch:
    """Prepare a launch of ``kernel`` on ``queue`` (see :class:`PreparedDispatch`)."""
    return PreparedDispatch(kernel, queue, grid, workgroup, dynamic_lds, barrier, acquire, release)


def launch(kernel: Any, queue: Any, args: Sequence[Any], grid: Any, workgroup: Any,
           dynamic_lds: int = 0, barrier: bool = False, acquire: Any = "system",
           release: Any = "system", wait: bool = True, timeout: float = 10.0) -> DispatchResult:
    """Launch ``kernel(*args)`` over ``grid`` work-items in ``workgroup``-sized groups.

    With ``wait`` (default) this waits for completion with ``timeout`` seconds and re-raises the
    queue's error if the dispatch failed; the result carries GPU timestamps when the queue has
    profiling enabled."""
    timeout = check_timeout(timeout, "launch")
    if wait is not True and wait is not False:
        raise HsapyTypeError(f"launch: wait is a bool, not {wait!r}")
    if args.__class__ is not list and args.__class__ is not tuple and (
            isinstance(args, (str, bytes)) or not hasattr(args, "__iter__")):
        raise HsapyTypeError(f"launch: args is the list of the kernel's arguments, not "
                             f"{type(args).__name__}")
    prepared = PreparedDispatch(kernel, queue, grid, workgroup, dynamic_lds, barrier, acquire,
                                release)
    index, slot = prepared._submit(tuple(args), True)
    result = DispatchResult(queue, kernel, index, prepared.ring, slot)
    return result.wait(timeout) if wait else result


class Graph:
    """Packets recorded once and replayed: ``graph.add_dispatch(...)``, ``graph.add_barrier``,
    then ``graph.launch(queue)`` any number of times.

    Recording packs every kernarg segment once; a replay copies those bytes into fresh kernarg
    slots and patches only the kernarg address and completion signal of each dispatch packet,
    then publishes the whole batch with one doorbell."""

    def __init__(self, queue: Any) -> None:
        self.queue = queue
        self._nodes: list[tuple[str, Any, Any, bytes]] = []

    def add_dispatch(self, kernel: Any, args: Sequence[Any], grid: Any, workgroup: Any,
                     dynamic_lds: int = 0, barrier: bool = True) -> None:
        """Record a dispatch (barrier bit set by default: graph nodes run in order)."""
        prepared = PreparedDispatch(kernel, self.queue, grid, workgroup, dynamic_lds, barrier)
        if isinstance(args, (str, bytes)) or not hasattr(args, "__iter__"):
            raise HsapyTypeError(f"Graph.add_dispatch: args is the list of the kernel's "
                                 f"arguments, not {type(args).__name__}")
        kernarg = prepared.packer.pack(*args)
        self._nodes.append(("dispatch", prepared, aql.Packet(prepared.word, bytes(prepared._body)),
                            kernarg))

    def add_packet(self, packet: aql.Packet) -> None:
        """Record any other packet (barrier-AND/OR, barrier-value) verbatim."""
        from hsapy.queue import _packet

        self.queue._check_open()
        self._nodes.append(("packet", None, _packet(packet), b""))

    def __len__(self) -> int:
        return len(self._nodes)

    def launch(self, wait: bool = True, timeout: float = 10.0,
               doorbell: bool = True) -> list[DispatchResult]:
        """Replay the recorded packets as one batch; returns the dispatch results."""
        queue = self.queue
        timeout = check_timeout(timeout, "Graph.launch")
        queue._check_open()
        for kind, prepared, _packet_, _kernarg in self._nodes:
            if kind == "dispatch":
                _raise_if_closed(prepared._states)
        if not self._nodes:
            raise HsapyValueError("Graph.launch: the graph is empty; add_dispatch first")
        packets: list[aql.Packet] = []
        results: list[tuple[int, Any, Any, int]] = []
        try:
            for position, (kind, prepared, packet, kernarg) in enumerate(self._nodes):
                if kind == "packet":
                    packets.append(packet)
                    continue
                ring = prepared.ring
                slot = ring.take()
                results.append((position, prepared.kernel, ring, slot))
                ring.forget(slot)
                ring.view[slot * ring.slot_size:slot * ring.slot_size + len(kernarg)] = kernarg
                body = bytearray(packet.body)
                _BODY_PATCH.pack_into(body, _BODY_PATCH_OFFSET, ring.addresses[slot], 0,
                                      ring.handles[slot])
                packets.append(aql.Packet(packet.word, bytes(body)))
            first = queue.publish_batch(packets, doorbell=doorbell)
        except BaseException:
            for _position, _kernel, ring, slot in results:
                ring.give_back(slot)          # taken, never published: free again
            raise
        for position, _kernel, ring, slot in results:
            ring.indices[slot] = first + position
        out = [DispatchResult(queue, kernel, first + position, ring, slot)
               for position, kernel, ring, slot in results]
        if wait:
            deadline = time.monotonic() + timeout
            for result in out:
                result.wait(max(deadline - time.monotonic(), 0.0))
        return out


def enable_profiling(queue: Any) -> None:
    """Record dispatch timestamps for ``queue`` (hsa_amd_profiling_set_profiler_enabled)."""
    queue.enable_profiling()
