"""A malformed packet reaches the host as an HSAError through the pythonic objects (the queue's
error callback, then Queue.check as the wait's abort hook), never as a hang. Runs on the simulator
and, with a GPU, on ROCr (an unknown packet type is rejected by the hardware packet processor)."""
from __future__ import annotations

import struct

import pytest

from hsapy.errors import HSAError, InvalidPacketError

UNKNOWN_PACKET_TYPE = 0x77
BARRIER_AND = 3
SYSTEM_FENCES = (2 << 9) | (2 << 11)


def test_malformed_packet_surfaces_as_hsa_error(runtime):
    agent = runtime.gpu_agents[0]
    queue = agent.create_queue(size=64)
    bad_done, good_done = runtime.create_signal(1), runtime.create_signal(1)
    body = struct.pack("<I5QQQ", 0, 0, 0, 0, 0, 0, 0, bad_done.handle)
    index = queue.reserve(1)
    queue.write(index, UNKNOWN_PACKET_TYPE | SYSTEM_FENCES, body)
    queue.ring_doorbell(index)
    good_body = struct.pack("<I5QQQ", 0, 0, 0, 0, 0, 0, 0, good_done.handle)
    index = queue.reserve(1)
    queue.write(index, BARRIER_AND | SYSTEM_FENCES, good_body)
    queue.ring_doorbell(index)
    with pytest.raises(HSAError) as raised:
        good_done.wait(timeout=5.0, abort=queue.check)
    if runtime.backend == "sim":
        assert isinstance(raised.value, InvalidPacketError)
    assert good_done.load() == 1             # the packet after the bad one never ran
    assert bad_done.load() == 1
