"""The packet processor of a queue the real ROCr created through the simulated thunk.

ROCr owns everything here: the ring, the ``amd_queue_t`` (whose ``read_dispatch_id`` it passed as
``Queue_read_ptr_aql``) and every signal, an ``amd_signal_t`` whose address is its handle
(/usr/include/hsa/amd_hsa_signal.h: kind at 0, value at 8, event_mailbox_ptr at 16, event_id at
24, start_ts/end_ts at 32/40). The processor therefore works on raw memory, with the CPU atomics
ROCr itself uses (the C helpers of the embedded library), the way the command processor does:

* it polls the doorbell slot ROCr writes (``Queue_DoorBell``; the last packet index announced) and
  the slot's header, as the command processor fetches once a doorbell is rung;
* kernel dispatches go to the simulator's executor (the ISA interpreter) with the packet, the
  queue and the kernel descriptor exactly as ROCr's loader left them in memory;
* barrier-AND/OR and AMD barrier-value packets poll their signals' values;
* an AMD PM4-IB vendor packet (ROCr's ``ExecutePM4``) is accepted when its indirect buffer holds
  only cache maintenance (ACQUIRE_MEM) and NOPs, which need nothing from an interpreter whose
  memory is coherent; any other PM4 opcode stops the queue naming it;
* completion: the slot's header back to INVALID, the read index advanced, then the completion
  signal decremented atomically; when that signal has an event mailbox, the event id is written
  there and the KFD event set (the end-of-pipe interrupt that wakes ROCr's waiters).

A fault stops the queue as the hardware reports one: the error code goes into the queue's
``queue_inactive_signal`` (amd_queue_t offset 192) and its event is set, so ROCr's own handler
(``AqlQueue::DynamicScratchHandler``) maps it to a status and calls the queue's error callback.

What it shares with the simulator's own queues (packet layouts, the choice of handler, profiling,
the end of a packet) is hsapy/sim/aql_processor.py's
:class:`~hsapy.sim.aql_processor.PacketProcessor`; the hooks below are what differs.
"""
from __future__ import annotations

import struct
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING

from hsapy.hsa_enums import (
    HSA_PACKET_TYPE_INVALID,
    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
    HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
    HSA_STATUS_ERROR_MEMORY_FAULT,
)
from hsapy.sim.aql_processor import (
    DISPATCH,
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
from hsapy.sim.memory import SimMemoryFault
from hsapy.sim.queues import (
    AMD_QUEUE_PROPERTIES_ENABLE_PROFILING,
    OFFSET_QUEUE_PROPERTIES,
    OFFSET_READ_DISPATCH_ID,
)
from hsapy.sim.signals import condition_holds

if TYPE_CHECKING:
    from hsapy.sim.thunk.kfd import SimKfd

__all__ = ["DeviceQueue", "QueueErrorCode"]

# amd_signal_t offsets (amd_hsa_signal.h)
SIGNAL_VALUE, SIGNAL_MAILBOX, SIGNAL_EVENT_ID, SIGNAL_START_TS, SIGNAL_END_TS = 8, 16, 24, 32, 40
OFFSET_QUEUE_INACTIVE_SIGNAL = 192      # amd_queue_t.queue_inactive_signal
NO_DOORBELL = 0xFFFFFFFFFFFFFFFF        # the doorbell slot before the first ring
AMD_AQL_FORMAT_PM4_IB = 1               # hsa_ext_amd.h: AMD vendor packet formats
PM4_OPCODE_NOP = 0x10                   # PM4 type-3 opcodes (AMD's PM4 packet reference)
PM4_OPCODE_INDIRECT_BUFFER = 0x3F
PM4_OPCODE_ACQUIRE_MEM = 0x58

_LINGER_S = 0.005          # after work, poll in naps of _NAP_S for this long ...
_NAP_S = 0.0001
_IDLE_S = 0.002            # ... then look this often (a command processor polls its queues)


class QueueErrorCode:
    """Codes the hardware writes into amd_queue_t.queue_inactive_signal, as ROCr decodes them
    (AqlQueue::DynamicScratchHandler)."""

    INVALID_DIMENSION = 2            # -> HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS
    INVALID_GROUP_MEMORY = 4         # -> HSA_STATUS_ERROR_INVALID_ALLOCATION
    INVALID_CODE = 8                 # -> HSA_STATUS_ERROR_INVALID_CODE_OBJECT
    INVALID_PACKET = 32              # -> HSA_STATUS_ERROR_INVALID_PACKET_FORMAT
    GROUP_TOO_LARGE = 64             # -> HSA_STATUS_ERROR_INVALID_ARGUMENT
    INVALID_VENDOR_PACKET = 256      # -> HSA_STATUS_ERROR_INVALID_PACKET_FORMAT
    MEMORY_VIOLATION = 0x20000000    # -> HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION
    ILLEGAL_INSTRUCTION = 0x40000000  # -> HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION
    DEBUG_TRAP = 0x80000000          # -> HSA_STATUS_ERROR_EXCEPTION


_FAULT_CODES = {
    HSA_STATUS_ERROR_MEMORY_FAULT: QueueErrorCode.MEMORY_VIOLATION,
    HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: QueueErrorCode.MEMORY_VIOLATION,
    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: QueueErrorCode.ILLEGAL_INSTRUCTION,
}


class _QueueFault(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class DeviceQueue(PacketProcessor):
    """One AQL queue of the simulated device; one processor thread consumes its ring."""

    def __init__(self, kfd: SimKfd, queue_id: int, ring: int, ring_bytes: int, read_ptr: int,
                 write_ptr: int, doorbell: int) -> None:
        self.kfd = kfd
        self.id = queue_id
        self.ring = ring
        self.size = ring_bytes // PACKET_BYTES
        self.amd_queue = read_ptr - OFFSET_READ_DISPATCH_ID
        self.read_ptr = read_ptr
        self.write_ptr = write_ptr
        self.doorbell = doorbell
        self.lib = kfd.lib
        self.clock = kfd.clock
        self.is_active = True
        self.dispatched = 0          # kernel dispatches run (ROCr's own blit kernels included)
        self.error_message = ""
        self._stop = False
        self._wake = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"hsapy-thunk-queue-{queue_id}",
                                       daemon=True)

    def start(self) -> None:
        """Start the processor thread."""
        self.thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the processor thread (the queue is destroyed) and wait for it."""
        self._stop = True
        self._wake.set()
        if threading.current_thread() is not self.thread and self.thread.is_alive():
            self.thread.join(timeout_s)

    def set_active(self, active: bool) -> None:
        """hsaKmtUpdateQueue: a queue with 0 percent is suspended."""
        self.is_active = active
        self._wake.set()

    def _should_stop(self) -> bool:
        return self._stop

    # -- memory helpers ------------------------------------------------------------------------

    def _load64(self, address: int) -> int:
        return int(self.lib.hsapy_atomic_load64(address))

    def _signal_value(self, handle: int) -> int:
        value = self._load64(handle + SIGNAL_VALUE)
        return value - (1 << 64) if value >> 63 else value

    def _header(self, index: int) -> int:
        return int(self.lib.hsapy_atomic_load32(self.ring + (index % self.size) * PACKET_BYTES))

    # -- the loop ------------------------------------------------------------------------------

    def _ready(self, index: int) -> bool:
        rung = self._load64(self.doorbell)
        return (rung != NO_DOORBELL and rung >= index
                and self._header(index) & 0xFF != HSA_PACKET_TYPE_INVALID)

    def _run(self) -> None:
        last_work = time.monotonic()
        try:
            while not self._stop:
                index = self._load64(self.read_ptr)
                if self.is_active and self._ready(index):
                    if not self._step(index):
                        return
                    last_work = time.monotonic()
                    continue
                idle = time.monotonic() - last_work
                self._wake.wait(_NAP_S if idle < _LINGER_S else _IDLE_S)
                self._wake.clear()
        except Exception:
            self._fail(QueueErrorCode.DEBUG_TRAP,
                       "internal simulator error:\n" + traceback.format_exc())

    # -- the hooks of aql_processor.PacketProcessor ----------------------------------------------

    FAULTS = (_QueueFault, SimFault, SimMemoryFault)

    def _read_packet(self, index: int) -> bytes:
        return self.kfd.memory.read(self.ring + (index % self.size) * PACKET_BYTES, PACKET_BYTES)

    def _report_fault(self, fault: Exception) -> None:
        if isinstance(fault, _QueueFault):
            self._fail(fault.code, fault.message)
        elif isinstance(fault, SimFault):
            self._fail(_FAULT_CODES.get(fault.status, QueueErrorCode.DEBUG_TRAP), fault.message)
        else:
            self._fail(QueueErrorCode.MEMORY_VIOLATION, str(fault))

    def _retire(self, index: int, completion: int) -> None:
        lib = self.lib
        slot = self.ring + (index % self.size) * PACKET_BYTES
        # the setup word (the header's upper half) stays as it was
        struct_header = (self._header(index) & 0xFFFF0000) | HSA_PACKET_TYPE_INVALID
        lib.hsapy_atomic_store32(slot, struct_header)
        lib.hsapy_atomic_store64(self.read_ptr, index + 1)
        if completion:
            self._complete(completion)

    def _complete(self, handle: int) -> None:
        lib = self.lib
        lib.hsapy_atomic_add64(handle + SIGNAL_VALUE, -1)
        self._interrupt(handle)

    def _interrupt(self, handle: int) -> None:
        """The end-of-pipe interrupt for a signal just written: a signal with an event mailbox
        gets its event id there, and the KFD event is set (which wakes ROCr's waiters)."""
        lib = self.lib
        mailbox = self._load64(handle + SIGNAL_MAILBOX)
        if mailbox:
            event_id = int(lib.hsapy_atomic_load32(handle + SIGNAL_EVENT_ID))
            lib.hsapy_atomic_store64(mailbox, event_id)
            self.kfd.set_event(event_id)

    def _is_profiling(self) -> bool:
        props = int(self.lib.hsapy_atomic_load32(self.amd_queue + OFFSET_QUEUE_PROPERTIES))
        return bool(props & AMD_QUEUE_PROPERTIES_ENABLE_PROFILING)

    def _record_times(self, completion: int, start: int, end: int) -> None:
        self.lib.hsapy_atomic_store64(completion + SIGNAL_START_TS, start)
        self.lib.hsapy_atomic_store64(completion + SIGNAL_END_TS, end)

    def _vendor_packet(self, packet: bytes, index: int) -> int:
        if packet[2] == AMD_AQL_FORMAT_PM4_IB:
            return self._pm4_ib(packet, index)
        raise _QueueFault(QueueErrorCode.INVALID_VENDOR_PACKET,
                          f"packet {index}: vendor-specific packet with unknown AMD format "
                          f"{packet[2]}")

    def _other_packet(self, packet_type: int, header: int, index: int) -> int:
        raise _QueueFault(QueueErrorCode.INVALID_PACKET,
                          f"packet {index}: packet type {packet_type} is not processed by a "
                          "GPU agent's queue")

    def _wait_until(self, satisfied) -> None:
        nap = _NAP_S
        while not satisfied():
            if self._stop:
                raise QueueStopped
            self._wake.wait(nap)
            self._wake.clear()
            nap = min(nap * 2, _IDLE_S)

    def _barrier(self, packet: bytes, is_and: bool) -> int:
        deps, completion = barrier_dependencies(packet)
        if deps:
            if is_and:
                self._wait_until(lambda: all(self._signal_value(h) == 0 for h in deps))
            else:
                self._wait_until(lambda: any(self._signal_value(h) == 0 for h in deps))
        return completion

    def _barrier_value(self, packet: bytes) -> int:
        handle, value, mask, cond, completion = barrier_value_fields(packet)
        if not handle or cond > 3:
            raise _QueueFault(QueueErrorCode.INVALID_VENDOR_PACKET,
                              "barrier-value packet without a signal or with an unknown condition")
        self._wait_until(lambda: condition_holds(cond, self._signal_value(handle) & mask, value))
        return completion

    def _pm4_ib(self, packet: bytes, index: int) -> int:
        jump = struct.unpack_from("<4I", packet, 4)
        completion = struct.unpack_from("<Q", packet, 56)[0]
        if (jump[0] >> 8) & 0xFF != PM4_OPCODE_INDIRECT_BUFFER:
            raise _QueueFault(QueueErrorCode.INVALID_VENDOR_PACKET,
                              f"packet {index}: PM4-IB packet without an INDIRECT_BUFFER command")
        base = (jump[1] & ~3) | (jump[2] & 0xFFFF) << 32
        dwords = jump[3] & 0xFFFFF
        ib = struct.unpack(f"<{dwords}I", self.kfd.memory.read(base, 4 * dwords))
        at = 0
        while at < dwords:
            pm4 = ib[at]
            opcode = (pm4 >> 8) & 0xFF
            if pm4 >> 30 != 3 or opcode not in (PM4_OPCODE_NOP, PM4_OPCODE_ACQUIRE_MEM):
                raise _QueueFault(QueueErrorCode.INVALID_VENDOR_PACKET,
                                  f"packet {index}: PM4 command {pm4:#010x} (opcode {opcode:#x}) "
                                  "is not implemented by the simulated command processor")
            at += ((pm4 >> 16) & 0x3FFF) + 2
        return completion

    def _geometry(self, index: int, dims: int, workgroup: tuple, grid: tuple,
                  group_size: int) -> None:
        profile = self.kfd.profile
        if dims not in (1, 2, 3) or 0 in workgroup or 0 in grid or any(
                axis >= dims and (workgroup[axis] != 1 or grid[axis] != 1) for axis in range(3)):
            raise _QueueFault(QueueErrorCode.INVALID_DIMENSION,
                              f"kernel dispatch packet {index}: invalid dimensions (setup {dims}, "
                              f"workgroup {workgroup}, grid {grid})")
        if (workgroup[0] * workgroup[1] * workgroup[2] > profile.workgroup_max_size
                or any(w > m for w, m in zip(workgroup, profile.workgroup_max_dim))):
            raise _QueueFault(QueueErrorCode.GROUP_TOO_LARGE,
                              f"kernel dispatch packet {index}: workgroup {workgroup} exceeds "
                              f"{profile.name}'s limits")
        if group_size > profile.lds_size:
            raise _QueueFault(QueueErrorCode.INVALID_GROUP_MEMORY,
                              f"kernel dispatch packet {index}: group_segment_size {group_size} "
                              f"exceeds the LDS size {profile.lds_size}")

    def _dispatch(self, packet: bytes, index: int) -> int:
        (_, setup, wg_x, wg_y, wg_z, _, grid_x, grid_y, grid_z, private_size, group_size,
         kernel_object, kernarg, _, completion) = DISPATCH.unpack(packet)
        workgroup = (wg_x, wg_y, wg_z)
        grid = (grid_x, grid_y, grid_z)
        self._geometry(index, setup & 3, workgroup, grid, group_size)
        if kernel_object == 0 or self.kfd.memory.find(kernel_object) is None:
            raise _QueueFault(QueueErrorCode.INVALID_CODE,
                              f"kernel dispatch packet {index}: kernel_object {kernel_object:#x} "
                              "is not in device memory")
        kfd = self.kfd
        ctx = DispatchContext(
            agent=kfd.profile,
            memory=kfd.memory,
            packet_address=self.ring + (index % self.size) * PACKET_BYTES,
            queue_address=self.amd_queue,
            dispatch_id=index,
            setup_dims=setup & 3,
            workgroup_size=workgroup,
            grid_size=grid,
            private_segment_size=private_size,
            group_segment_size=group_size,
            kernel_object=kernel_object,
            kernarg_address=kernarg,
            kernel=None,
            clock=kfd.clock,
            watchdog_s=kfd.executors.watchdog_s,
            engine=kfd.executors.engine,
            should_stop=self._should_stop,
        )
        kfd.executors.execute(kfd.profile, ctx)
        self.dispatched += 1
        return completion

    def _fail(self, code: int, message: str) -> None:
        """Stop the queue; report ``code`` through queue_inactive_signal as the hardware does."""
        self._stop = True
        self.error_message = message
        self.kfd.errors.append(f"queue {self.id}: {message}")
        print(f"hsapy rocr-sim: queue {self.id} stopped: {message}", file=sys.stderr, flush=True)
        lib = self.lib
        handle = self._load64(self.amd_queue + OFFSET_QUEUE_INACTIVE_SIGNAL)
        if not handle:
            return
        lib.hsapy_atomic_store64(handle + SIGNAL_VALUE, code)
        self._interrupt(handle)
