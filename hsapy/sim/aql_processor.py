"""What the simulator's two AQL packet processors share.

:class:`~hsapy.sim.queues.SimQueue` processes the queues of the simulated HSA runtime (hsapy's
``sim`` backend); :class:`~hsapy.sim.thunk.processor.DeviceQueue` processes the queues real ROCr
creates through the simulated KFD thunk (the ``rocr-sim`` backend). Both follow docs/hsa-abi.md
for one packet, and that part lives here (:class:`PacketProcessor`):

* the packet layouts (hsa.h: ``hsa_kernel_dispatch_packet_t``, ``hsa_barrier_and_packet_t`` /
  ``hsa_barrier_or_packet_t``; hsa_ext_amd.h: ``hsa_amd_barrier_value_packet_t``);
* which handler a packet goes to, from its header type and, for a vendor-specific packet, its
  AMD format (byte 2);
* the profiling timestamps around a packet, when the queue profiles;
* what ends a packet: it completes (then it is retired), the queue stops while it waits or runs
  (nothing more happens), or it faults (the queue stops and reports it).

What differs stays with each processor, as the hooks of :class:`PacketProcessor`: where packets
and signals live (SimQueue: its ring view and :class:`~hsapy.sim.signals.SimSignal` objects;
DeviceQueue: raw ROCr memory and ``amd_signal_t`` words, through CPU atomics), how a barrier
waits (condition variables vs polling), how a dispatch is checked and which kernel it finds
(SimQueue names the first bad field with HSA_STATUS_ERROR_INVALID_PACKET_FORMAT; DeviceQueue
writes the hardware error class ROCr decodes), how a fault is reported (the queue's error
callback vs ``queue_inactive_signal``), and the wait for the next packet.
"""
from __future__ import annotations

import struct
from typing import Any, ClassVar

from hsapy.hsa_enums import (
    HSA_AMD_PACKET_TYPE_BARRIER_VALUE,
    HSA_PACKET_TYPE_BARRIER_AND,
    HSA_PACKET_TYPE_BARRIER_OR,
    HSA_PACKET_TYPE_KERNEL_DISPATCH,
    HSA_PACKET_TYPE_VENDOR_SPECIFIC,
)
from hsapy.sim.execution import DispatchCancelled, SimFault
from hsapy.sim.memory import SimMemoryFault

__all__ = ["PacketProcessor", "QueueStopped", "PACKET_BYTES", "DISPATCH", "GRID", "DEP_SIGNALS",
           "barrier_dependencies", "barrier_value_fields"]

PACKET_BYTES = 64

# hsa_kernel_dispatch_packet_t: header, setup, workgroup x/y/z, reserved0, grid x/y/z,
# private_segment_size, group_segment_size, kernel_object, kernarg_address, reserved2,
# completion_signal.
DISPATCH = struct.Struct("<HH3HH3III QQQQ".replace(" ", ""))
# barrier-AND / barrier-OR: header, reserved0, reserved1, dep_signal[5], reserved2, completion
_BARRIER = struct.Struct("<HHI5QQQ")
GRID = struct.Struct("<3I")           # grid_size_x/y/z, at byte 12 of a dispatch packet
DEP_SIGNALS = struct.Struct("<5Q")    # dep_signal[0..4], at byte 8 of a barrier-AND/OR packet
# hsa_amd_barrier_value_packet_t: header(u16) AmdFormat(u8) reserved(u8) reserved0(u32) signal
# value mask cond(u32) reserved1(u32) reserved2 reserved3 completion_signal
_BARRIER_VALUE = struct.Struct("<HBBIQqqIIQQQ")


class QueueStopped(Exception):
    """The queue was destroyed or inactivated while a packet waited."""


def barrier_dependencies(packet: bytes) -> tuple[list[int], int]:
    """(the non-null dep_signal handles, the completion signal handle) of a barrier-AND/OR
    packet."""
    fields = _BARRIER.unpack(packet)
    return [handle for handle in fields[3:8] if handle], fields[9]


def barrier_value_fields(packet: bytes) -> tuple[int, int, int, int, int]:
    """(signal, value, mask, condition, completion signal) of an AMD barrier-value packet."""
    _, _, _, _, signal, value, mask, cond, _, _, _, completion = _BARRIER_VALUE.unpack(packet)
    return signal, value, mask, cond, completion


class PacketProcessor:
    """One packet at a time, the same way for both processors (module docstring); subclasses
    provide the hooks. A completion is whatever the subclass's handlers return for the
    completion signal (an object or a handle); a false one means no completion signal."""

    # The exceptions that stop the queue as a fault; _report_fault reports them.
    FAULTS: ClassVar[tuple[type[Exception], ...]] = (SimFault, SimMemoryFault)
    clock: Any                       # now(): the agent's timestamp clock

    def _step(self, index: int) -> bool:
        """Process packet ``index``; False once the queue stopped (a fault included)."""
        packet = self._read_packet(index)
        header = packet[0] | packet[1] << 8
        try:
            completion = self._process(packet, header, index)
        except (QueueStopped, DispatchCancelled):
            return False
        except self.FAULTS as fault:
            self._report_fault(fault)
            return False
        self._retire(index, completion)
        return True

    def _process(self, packet: bytes, header: int, index: int) -> Any:
        """Run one packet; return its completion signal."""
        packet_type = header & 0xFF
        profiling = self._is_profiling()
        start = self.clock.now() if profiling else 0
        if packet_type == HSA_PACKET_TYPE_KERNEL_DISPATCH:
            completion = self._dispatch(packet, index)
        elif packet_type in (HSA_PACKET_TYPE_BARRIER_AND, HSA_PACKET_TYPE_BARRIER_OR):
            completion = self._barrier(packet, packet_type == HSA_PACKET_TYPE_BARRIER_AND)
        elif (packet_type == HSA_PACKET_TYPE_VENDOR_SPECIFIC
              and packet[2] == HSA_AMD_PACKET_TYPE_BARRIER_VALUE):
            completion = self._barrier_value(packet)
        elif packet_type == HSA_PACKET_TYPE_VENDOR_SPECIFIC:
            completion = self._vendor_packet(packet, index)
        else:
            completion = self._other_packet(packet_type, header, index)
        if completion and profiling:
            self._record_times(completion, start, self.clock.now())
        return completion

    # -- the hooks -------------------------------------------------------------------------------

    def _read_packet(self, index: int) -> bytes:
        """The 64 bytes of packet ``index``."""
        raise NotImplementedError

    def _is_profiling(self) -> bool:
        """Whether this packet's start and end times are recorded."""
        raise NotImplementedError

    def _record_times(self, completion: Any, start: int, end: int) -> None:
        """Store a profiled packet's times with its completion signal."""
        raise NotImplementedError

    def _dispatch(self, packet: bytes, index: int) -> Any:
        """Check and run a kernel dispatch packet; its completion signal."""
        raise NotImplementedError

    def _barrier(self, packet: bytes, is_and: bool) -> Any:
        """Wait for a barrier-AND (all dependencies 0) or barrier-OR (any of them 0)."""
        raise NotImplementedError

    def _barrier_value(self, packet: bytes) -> Any:
        """Wait until the AMD barrier-value packet's condition holds."""
        raise NotImplementedError

    def _vendor_packet(self, packet: bytes, index: int) -> Any:
        """A vendor-specific packet of an AMD format other than barrier-value."""
        raise NotImplementedError

    def _other_packet(self, packet_type: int, header: int, index: int) -> Any:
        """Any other packet type (raises what the processor reports for it)."""
        raise NotImplementedError

    def _retire(self, index: int, completion: Any) -> None:
        """A packet completed: its header back to INVALID before the read index moves past it
        (a producer reusing the slot never has its header overwritten, docs/hsa-abi.md), then
        the completion signal decremented."""
        raise NotImplementedError

    def _report_fault(self, fault: Exception) -> None:
        """Stop the queue and report ``fault`` (one of :attr:`FAULTS`)."""
        raise NotImplementedError
