"""Simulated AQL queues and their packet processors.

A queue is a ring of ``size`` 64-byte packet slots in simulated memory, described by a real
``hsa_queue_t`` that is the first member of a 256-byte ``amd_queue_t`` (so the queue pointer a
kernel receives points at the same layout as on ROCr: write_dispatch_id at offset 56,
read_dispatch_id at offset 128, /usr/include/hsa/amd_hsa_queue.h). hsapy writes packets straight
into ``base_address``; one daemon thread per queue processes them in order following
docs/hsa-abi.md: wait while the slot's header type is INVALID, honour the
barrier bit, barrier-AND/OR dependencies and AMD barrier-value, hand kernel dispatches to the
agent's executor, then return the slot's header to INVALID, advance the read index and decrement
the completion signal. A malformed packet or a fault stops the queue and calls its error
callback; later packets never run. What it shares with the processor behind the simulated thunk
(packet layouts, the choice of handler, profiling, the end of a packet) is
hsapy/sim/aql_processor.py's :class:`~hsapy.sim.aql_processor.PacketProcessor`.
"""
from __future__ import annotations

import struct
import threading
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from hsapy.hsa_enums import (
    HSA_PACKET_TYPE_AGENT_DISPATCH,
    HSA_PACKET_TYPE_BARRIER_AND,
    HSA_PACKET_TYPE_BARRIER_OR,
    HSA_PACKET_TYPE_INVALID,
    HSA_PACKET_TYPE_KERNEL_DISPATCH,
    HSA_QUEUE_TYPE_MULTI,
    HSA_SIGNAL_CONDITION_EQ,
    HSA_STATUS_ERROR_EXCEPTION,
    HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
    HSA_STATUS_ERROR_MEMORY_FAULT,
)
from hsapy.sim.aql_processor import (
    DEP_SIGNALS,
    DISPATCH,
    GRID,
    PACKET_BYTES,
    PacketProcessor,
    QueueStopped,
    barrier_dependencies,
    barrier_value_fields,
)
from hsapy.sim.execution import (
    DispatchContext,
    SimFault,
)
from hsapy.sim.memory import (
    PRIVATE_APERTURE_BASE,
    SHARED_APERTURE_BASE,
    SimMemoryFault,
    held_elsewhere,
)
from hsapy.sim.objects import uint64_argument
from hsapy.sim.signals import (
    WORD_HIGH_WATER,
    SimSignal,
    condition_holds,
    wait_any,
)

if TYPE_CHECKING:
    from hsapy.sim.simlib import SimAgent, SimLib

__all__ = ["SimQueue", "AMD_QUEUE_BYTES"]

AMD_QUEUE_BYTES = 256                 # sizeof(amd_queue_t)
OFFSET_WRITE_DISPATCH_ID = 56         # amd_queue_t.write_dispatch_id
OFFSET_READ_DISPATCH_ID = 128         # amd_queue_t.read_dispatch_id
OFFSET_QUEUE_PROPERTIES = 180         # amd_queue_t.queue_properties
OFFSET_APERTURES = 64                 # group_segment_/private_segment_aperture_base_hi,
                                      # max_cu_id, max_wave_id (4 x u32)
OFFSET_READ_ID_FIELD_OFFSET = 136     # read_dispatch_id_field_base_byte_offset

AMD_QUEUE_PROPERTIES_IS_PTR64 = 1 << 1
AMD_QUEUE_PROPERTIES_ENABLE_PROFILING = 1 << 3

_PROCESSOR_POLL_S = 0.05              # every wait wakes this often to check for stop
_PROCESSOR_LINGER_S = 0.005          # how long an idle processor polls before blocking ...
_PROCESSOR_NAP_S = 0.0001             # ... and how often it looks (SimQueue._wait_for_packet)
WRITE_INDEX_WORD = OFFSET_WRITE_DISPATCH_ID // 8    # as an index of 64-bit words
READ_INDEX_WORD = OFFSET_READ_DISPATCH_ID // 8
_WRITE_TOKEN_LOST_S = 10.0            # see SimQueue.take_write_token


# The largest dispatch (grid work-items) a waiting thread runs itself (SimQueue.help).
HELP_MAX_WORK_ITEMS = 4096


class SimQueue(PacketProcessor):
    """One user-mode AQL queue: ring, amd_queue_t, doorbell, indices and its processor thread."""

    def __init__(self, lib: SimLib, agent: SimAgent, size: int, queue_type: int,
                 callback: Any, data: Any, queue_id: int) -> None:
        self.lib = lib
        self.clock = lib.clock
        self.agent = agent
        self.size = size
        self.mask = size - 1
        self.callback = callback
        self.data = data
        self.id = queue_id
        memory = lib.memory
        owner = agent.handle
        self.ring_address = memory.allocate(size * PACKET_BYTES, 4096, None, owner=owner,
                                            tag=f"queue {queue_id} ring")
        self.address = memory.allocate(AMD_QUEUE_BYTES, 64, None, owner=owner,
                                       tag=f"queue {queue_id} amd_queue_t")
        self.ring = memory.view(self.ring_address, size * PACKET_BYTES)
        self.ring.view(np.uint64)[:] = 0
        # every slot's header (one u16 per packet) INVALID (hsa.h)
        self.ring.view(np.uint16)[:: PACKET_BYTES // 2] = HSA_PACKET_TYPE_INVALID
        # The same ring as memoryviews, for the processor's per-packet reads and stores: an
        # item of a memoryview is a Python int in one C step, where a numpy element is a numpy
        # scalar (and each operation on it another small array operation).
        self.ring_view = memoryview(self.ring).cast("B")
        self.header_view = self.ring_view.cast("H")     # packet k's header: item k << 5
        self.struct_bytes = memory.view(self.address, AMD_QUEUE_BYTES)
        # The doorbell starts below every index: nothing is announced until the first ring.
        self.doorbell: SimSignal = lib.signals.create(-1, kind=-1)
        self._doorbell_words = self.doorbell.view       # its high-water word: _is_ready
        # hsa_queue_t: type, features, base_address, doorbell_signal, size, reserved1, id. The
        # type is MULTI whatever was asked, as ROCr's AqlQueue sets it (a multi-producer queue
        # serves a single producer too).
        struct.pack_into("<IIQQIIQ", self.struct_bytes, 0, HSA_QUEUE_TYPE_MULTI, 1,
                         self.ring_address,
                         self.doorbell.handle, size, 0, queue_id)
        struct.pack_into("<I", self.struct_bytes, OFFSET_QUEUE_PROPERTIES,
                         AMD_QUEUE_PROPERTIES_IS_PTR64)
        profile = agent.profile
        struct.pack_into("<IIII", self.struct_bytes, OFFSET_APERTURES,
                         SHARED_APERTURE_BASE >> 32, PRIVATE_APERTURE_BASE >> 32,
                         profile.compute_units - 1, profile.max_waves_per_cu - 1)
        struct.pack_into("<I", self.struct_bytes, OFFSET_READ_ID_FIELD_OFFSET,
                         OFFSET_READ_DISPATCH_ID)
        # what the processor checks every dispatch's geometry against
        self._limits = (*profile.workgroup_max_dim, profile.workgroup_max_size, profile.lds_size)
        self.index_lock = threading.Lock()
        self._turn = threading.Lock()      # held while a packet is processed (see _run)
        # The write index is owned through a token: a one-element list that holds the current
        # value while nobody is changing it. list.pop() and list.append() are each one atomic
        # step under CPython's GIL (and under the per-object locks of free-threaded builds), so
        # whoever pops the value owns the index until it appends the new one: a lock that costs
        # two C calls where threading.Lock's acquire + release cost about three times as much
        # from Python -- and the producer's hot path (hsa_queue_add_write_index) takes it once
        # per dispatch. amd_queue_t.write_dispatch_id mirrors the value, written before the
        # token is given back, so every reader of the struct sees the values in order.
        self.write_token = [0]
        # amd_queue_t as uint64 words: the read and write indices (READ_/WRITE_INDEX_WORD)
        self.struct_words = memoryview(self.struct_bytes).cast("B").cast("Q")
        self.is_profiling = False
        self.is_active = True
        self.is_destroyed = False
        self.error_status = 0
        self.error_message = ""
        self._stop = False
        self.thread = threading.Thread(target=self._run, name=f"hsapy-sim-queue-{queue_id}",
                                       daemon=True)
        self.thread.start()

    # -- indices (atomic: the read index under index_lock, the write index through its token) --

    @property
    def read_index(self) -> int:
        """Current read index (amd_queue_t.read_dispatch_id)."""
        return self.struct_words[READ_INDEX_WORD]

    @property
    def write_index(self) -> int:
        """Current write index (amd_queue_t.write_dispatch_id)."""
        return self.struct_words[WRITE_INDEX_WORD]

    def store_read_index(self, value: int) -> None:
        """Set the read index."""
        value = uint64_argument(value)
        with self.index_lock:
            self.struct_words[READ_INDEX_WORD] = value & 0xFFFFFFFFFFFFFFFF

    def take_write_token(self) -> int:
        """Own the write index (see ``write_token``): its current value. Another producer holds
        it only between two C calls, so this yields the GIL and retries; a token missing for
        seconds means a producer died holding it (an asynchronous exception between its pop and
        append), which is reported instead of spinning forever."""
        token = self.write_token
        deadline = None
        while True:
            try:
                return token.pop()
            except IndexError:
                now = time.monotonic()
                if deadline is None:
                    deadline = now + _WRITE_TOKEN_LOST_S
                elif now > deadline:
                    raise RuntimeError(
                        f"simulated queue {self.id}: the write index has been held for "
                        f"{_WRITE_TOKEN_LOST_S:g} s; a thread was interrupted while reserving "
                        "packets on this queue. Destroy the queue and create a new one") from None
                time.sleep(0)

    def give_write_token(self, value: int) -> None:
        """Set the write index to ``value`` and give up ownership of it."""
        self.struct_words[WRITE_INDEX_WORD] = value
        self.write_token.append(value)

    def store_write_index(self, value: int) -> None:
        """Set the write index."""
        value = uint64_argument(value)
        self.take_write_token()
        self.give_write_token(value & 0xFFFFFFFFFFFFFFFF)

    def cas_write_index(self, expected: int, value: int) -> int:
        """Compare-and-swap the write index; return the value observed."""
        expected, value = uint64_argument(expected), uint64_argument(value)
        old = self.take_write_token()
        self.give_write_token(value & 0xFFFFFFFFFFFFFFFF
                              if old == expected & 0xFFFFFFFFFFFFFFFF else old)
        return old

    def add_write_index(self, value: int) -> int:
        """Fetch-and-add the write index; return the previous value."""
        value = uint64_argument(value)
        old = self.take_write_token()
        self.give_write_token((old + value) & 0xFFFFFFFFFFFFFFFF)
        return old

    # -- life cycle ---------------------------------------------------------------------------

    def set_profiling(self, enable: bool) -> None:
        """Turn dispatch timestamps on or off (amd_queue_t.queue_properties bit 3 mirrors it)."""
        self.is_profiling = bool(enable)
        props = struct.unpack_from("<I", self.struct_bytes, OFFSET_QUEUE_PROPERTIES)[0]
        if enable:
            props |= AMD_QUEUE_PROPERTIES_ENABLE_PROFILING
        else:
            props &= ~AMD_QUEUE_PROPERTIES_ENABLE_PROFILING
        struct.pack_into("<I", self.struct_bytes, OFFSET_QUEUE_PROPERTIES, props)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Ask the processor thread to exit and wait for it (not from the thread itself)."""
        self._stop = True
        self.is_active = False
        with self.doorbell.cond:
            self.doorbell.cond.notify_all()
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout_s)
            # a waiting thread may be running a packet: it stops at the next poll
            if self._turn.acquire(timeout=timeout_s):
                self._turn.release()

    def _should_stop(self) -> bool:
        return self._stop

    # -- the packet processor -------------------------------------------------------------------

    # Packets are processed one at a time by whoever holds ``_turn``: normally this queue's
    # processor thread, or a thread waiting on a signal (``help``), which runs announced
    # packets itself while the processor thread is idle. A synchronous dispatch + wait then needs
    # no thread hand-off at all (on a VM each costs tens of microseconds). Order and every rule
    # of the processor (doorbell, INVALID headers, errors) are the same on either thread.
    def _run(self) -> None:
        try:
            while not self._stop:
                index = self._wait_for_packet()
                if index is None:
                    return
                if not self._turn.acquire(blocking=False):
                    # A waiting thread is running packets; it wakes this thread through the
                    # doorbell's condition if it leaves work behind. (Blocking on the lock here
                    # would wake this thread for nothing whenever the waiter drains the queue.)
                    with self.doorbell.cond:
                        if not self._stop and self._turn.locked():
                            self.doorbell.cond.wait(_PROCESSOR_POLL_S)
                    continue
                try:
                    if self._stop:
                        return
                    if self.read_index != index:      # a waiting thread processed it
                        continue
                    if not self._step(index):
                        return
                finally:
                    self._turn.release()
        except Exception:  # a simulator bug: report it through the queue, never die silently
            self._fail(HSA_STATUS_ERROR_EXCEPTION,
                       "internal simulator error:\n" + traceback.format_exc())

    # _step (aql_processor.PacketProcessor) processes one packet; the caller holds ``_turn``.

    def _read_packet(self, index: int) -> bytes:
        base = (index & self.mask) * PACKET_BYTES
        return self.ring_view[base:base + PACKET_BYTES].tobytes()

    def _report_fault(self, fault: Exception) -> None:
        if isinstance(fault, SimFault):
            self._fail(fault.status, fault.message, fault.address)
        else:
            assert isinstance(fault, SimMemoryFault)
            self._fail(HSA_STATUS_ERROR_MEMORY_FAULT, str(fault), fault.address)

    def help(self, done: Callable[[], bool]) -> None:
        """Run this queue's announced packets on the calling (waiting) thread until ``done()``,
        while the processor thread is not busy. Only packets that cannot block are taken here --
        small kernel dispatches (at most HELP_MAX_WORK_ITEMS work-items: the latency-bound case;
        the waiter cannot give up a dispatch it is running, so its wait lasts as long as that
        dispatch, at most the watchdog limit for one that never ends) and barriers without
        dependencies; anything else is left to the processor thread. A KeyboardInterrupt in the
        middle of a dispatch stops the queue (the kernel ran only in part), then propagates."""
        if self._stop or not self._turn.acquire(blocking=False):
            return
        try:
            while not self._stop and not done():
                index = self.read_index
                if not self._is_ready(index):
                    return
                slot = index & self.mask
                kind = self.header_view[slot << 5] & 0xFF
                base = slot * PACKET_BYTES
                if kind == HSA_PACKET_TYPE_KERNEL_DISPATCH:
                    grid_x, grid_y, grid_z = GRID.unpack_from(self.ring_view, base + 12)
                    if grid_x * grid_y * grid_z > HELP_MAX_WORK_ITEMS:
                        return
                elif kind in (HSA_PACKET_TYPE_BARRIER_AND, HSA_PACKET_TYPE_BARRIER_OR):
                    if any(DEP_SIGNALS.unpack_from(self.ring_view, base + 8)):
                        return
                else:
                    return
                try:
                    if not self._step(index):
                        return
                except KeyboardInterrupt:
                    self._fail(HSA_STATUS_ERROR_EXCEPTION,
                               f"packet {index}: interrupted (KeyboardInterrupt) while the "
                               "simulator ran it on the waiting thread; it ran only in part")
                    raise
                except Exception:
                    self._fail(HSA_STATUS_ERROR_EXCEPTION,
                               "internal simulator error:\n" + traceback.format_exc())
                    return
        finally:
            self._turn.release()
            if not self._stop and self.has_announced_work:   # hand the rest to the processor
                with self.doorbell.cond:
                    self.doorbell.cond.notify_all()

    @property
    def has_announced_work(self) -> bool:
        """A packet is published and covered by a doorbell but not yet processed."""
        return self._is_ready(self.read_index)

    def _is_ready(self, index: int) -> bool:
        """Packet ``index`` is published (its header type is not INVALID) and announced (the
        doorbell has been rung with a value >= index)."""
        return (self.header_view[(index & self.mask) << 5] & 0xFF != HSA_PACKET_TYPE_INVALID
                and self._doorbell_words[WORD_HIGH_WATER] >= index)

    def _wait_for_packet(self) -> int | None:
        """Wait until the packet at the read index is published and announced; return its index,
        or None when asked to stop.

        Published: its header type is not INVALID. Announced: the doorbell has been rung with a
        value >= index (the highest value ever rung counts, since concurrent producers may ring
        out of order). Like the hardware, a packet whose doorbell was never rung is not fetched.
        Both are checked while holding the doorbell's lock, which every doorbell store takes
        before notifying (the compiled store, hsapy.sim.native_signal, stores only while the
        lock is free and nobody waits), so a publish between check and wait cannot be missed.
        The read index is re-read on every look: a waiting thread (``help``) may have moved it
        on.

        Before blocking, the processor keeps looking for _PROCESSOR_LINGER_S in naps of
        _PROCESSOR_NAP_S, as a command processor polls its queues: a producer that rings the
        doorbell while it lingers finds no waiter to wake. Waking a blocked thread costs the
        producer's thread a futex wake across CPUs and then the GIL hand-over, which a doorbell
        on a GPU -- one store -- does not cost, and it would dominate what benchmarks/launch.py
        measures for a batch.
        """
        index = self.read_index
        if self._is_ready(index):
            return None if self._stop else index
        lingering = time.monotonic() + _PROCESSOR_LINGER_S
        while time.monotonic() < lingering:
            time.sleep(_PROCESSOR_NAP_S)
            if self._stop:
                return None
            index = self.read_index
            if self._is_ready(index):
                return index
        cond = self.doorbell.cond
        with cond:
            while True:
                if self._stop:
                    return None
                index = self.read_index
                if self._is_ready(index):
                    return index
                cond.wait(_PROCESSOR_POLL_S)

    def _retire(self, index: int, completion: SimSignal | None) -> None:
        self.header_view[(index & self.mask) << 5] = HSA_PACKET_TYPE_INVALID
        self.store_read_index(index + 1)
        if completion is not None:
            completion.subtract(1)

    def _is_profiling(self) -> bool:
        return self.is_profiling

    def _record_times(self, completion: SimSignal, start: int, end: int) -> None:
        completion.set_times(start, end)

    def _vendor_packet(self, packet: bytes, index: int) -> SimSignal | None:
        raise SimFault(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                       f"packet {index}: vendor-specific packet with unknown AMD format "
                       f"{packet[2]} (only barrier-value, format 2, is supported)")

    def _other_packet(self, packet_type: int, header: int, index: int) -> SimSignal | None:
        if packet_type == HSA_PACKET_TYPE_AGENT_DISPATCH:
            raise SimFault(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                           f"packet {index}: agent dispatch packets are not supported on a GPU "
                           "agent's queue")
        raise SimFault(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                       f"packet {index}: unknown packet type {packet_type} "
                       f"(header {header:#06x})")

    def _signal(self, handle: int, what: str) -> SimSignal | None:
        if handle == 0:
            return None
        signal = self.lib.signals.get(handle)
        if signal is None:
            raise SimFault(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                           f"{what} {handle:#x} is not a live signal")
        return signal

    def _barrier(self, packet: bytes, is_and: bool) -> SimSignal | None:
        handles, completion_handle = barrier_dependencies(packet)
        deps = [self._signal(h, "dependency signal") for h in handles]
        completion = self._signal(completion_handle, "completion signal")
        if deps:
            if is_and:
                for dep in deps:
                    while dep.wait(HSA_SIGNAL_CONDITION_EQ, 0, _PROCESSOR_POLL_S) != 0:
                        if self._stop:
                            raise QueueStopped
            else:
                n = len(deps)
                while True:
                    i, _ = wait_any(deps, [HSA_SIGNAL_CONDITION_EQ] * n, [0] * n, _PROCESSOR_POLL_S)
                    if i < n:
                        break
                    if self._stop:
                        raise QueueStopped
        return completion

    def _barrier_value(self, packet: bytes) -> SimSignal | None:
        handle, value, mask, cond, completion_handle = barrier_value_fields(packet)
        signal = self._signal(handle, "barrier-value signal")
        completion = self._signal(completion_handle, "completion signal")
        if signal is None:
            raise SimFault(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                           "barrier-value packet without a signal")
        if cond > 3:
            raise SimFault(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                           f"barrier-value packet with unknown condition {cond}")
        with signal.cond:
            while not condition_holds(cond, signal.load() & mask, value):
                if self._stop:
                    raise QueueStopped
                signal.cond.wait(_PROCESSOR_POLL_S)
        return completion

    def _refuse_geometry(self, index: int, dims: int, workgroup: tuple[int, int, int],
                         grid: tuple[int, int, int], group_size: int) -> None:
        """Raise the SimFault naming the first bad geometry field of dispatch packet ``index``."""
        profile = self.agent.profile

        def bad(reason: str) -> SimFault:
            return SimFault(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                            f"kernel dispatch packet {index}: {reason}")

        if dims == 0:
            raise bad("setup dimensions is 0 (must be 1, 2 or 3)")
        for axis in range(3):
            name = "xyz"[axis]
            if workgroup[axis] == 0:
                raise bad(f"workgroup_size_{name} is 0")
            if grid[axis] == 0:
                raise bad(f"grid_size_{name} is 0")
            if axis >= dims and (workgroup[axis] != 1 or grid[axis] != 1):
                raise bad(f"dimension {name} is unused (setup dims {dims}) but its workgroup/grid "
                          f"size is {workgroup[axis]}/{grid[axis]} (must be 1)")
            if workgroup[axis] > profile.workgroup_max_dim[axis]:
                raise bad(f"workgroup_size_{name} {workgroup[axis]} exceeds the agent's maximum "
                          f"{profile.workgroup_max_dim[axis]}")
        total = workgroup[0] * workgroup[1] * workgroup[2]
        if total > profile.workgroup_max_size:
            raise bad(f"workgroup has {total} work-items; {profile.name} allows at most "
                      f"{profile.workgroup_max_size}")
        if group_size > profile.lds_size:
            raise bad(f"group_segment_size {group_size} exceeds the agent's LDS size "
                      f"{profile.lds_size}")
        raise bad("invalid geometry")   # unreachable: the fast check and this one agree

    def _dispatch(self, packet: bytes, index: int) -> SimSignal | None:
        (_, setup, wg_x, wg_y, wg_z, _, grid_x, grid_y, grid_z, private_size, group_size,
         kernel_object, kernarg, _, completion_handle) = DISPATCH.unpack(packet)
        lib = self.lib
        profile = self.agent.profile
        dims = setup & 0x3
        max_x, max_y, max_z, max_size, lds_size = self._limits
        # The common case in one expression; any failure re-checks field by field below to name
        # the first problem.
        if not (0 < wg_x <= max_x and 0 < wg_y <= max_y and 0 < wg_z <= max_z
                and grid_x and grid_y and grid_z and dims
                and (dims >= 2 or (wg_y == 1 and grid_y == 1))
                and (dims == 3 or (wg_z == 1 and grid_z == 1))
                and wg_x * wg_y * wg_z <= max_size
                and group_size <= lds_size):
            self._refuse_geometry(index, dims, (wg_x, wg_y, wg_z), (grid_x, grid_y, grid_z),
                                  group_size)

        kernel = lib.kernel_objects.get(kernel_object)
        if kernel is None:
            raise SimFault(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                           f"kernel dispatch packet {index}: kernel_object {kernel_object:#x} is "
                           "not a loaded kernel descriptor")
        kernel_agent = getattr(kernel, "agent_handle", None)
        if kernel_agent is not None and kernel_agent != self.agent.handle:
            raise SimFault(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                           f"kernel dispatch packet {index}: kernel_object {kernel_object:#x} "
                           f"was loaded for another agent ({kernel_agent:#x}), not this "
                           f"queue's {profile.name}")
        completion = self._signal(completion_handle, "completion signal")
        workgroup = (wg_x, wg_y, wg_z)
        grid = (grid_x, grid_y, grid_z)
        ctx = DispatchContext(
            agent=profile,
            memory=lib.memory,
            packet_address=self.ring_address + (index & self.mask) * PACKET_BYTES,
            queue_address=self.address,
            dispatch_id=index,
            setup_dims=dims,
            workgroup_size=workgroup,
            grid_size=grid,
            private_segment_size=private_size,
            group_segment_size=group_size,
            kernel_object=kernel_object,
            kernarg_address=kernarg,
            kernel=kernel,
            clock=lib.clock,
            agent_handle=self.agent.handle,
            watchdog_s=lib.executors.watchdog_s,
            engine=lib.executors.engine,
            should_stop=self._should_stop,
        )
        lib.executors.execute(profile, ctx)
        return completion

    def _fail(self, status: int, message: str, address: int | None = None) -> None:
        """Stop the queue and report through its error callback (and system event handlers).
        The status and message are kept first (``sim_queue_error``), so the failure reaches
        the caller even when a callback fails in turn."""
        self.is_active = False
        self._stop = True
        if status == HSA_STATUS_ERROR_MEMORY_FAULT:
            message += held_elsewhere(self.lib.memory, address)
        self.error_status = status
        self.error_message = message
        try:
            self.lib._queue_failed(self, status, message, address)
        except Exception:       # the callback's own failure; the queue's error stands
            self.error_message += "\n(reporting it failed too:\n" + traceback.format_exc() + ")"
