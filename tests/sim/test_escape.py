"""Kernels written to escape the simulator stop with a memory fault.

The simulator's promise (docs/internals.md, "Memory is host memory"): a kernel touches host
memory only inside the simulator's own allocations. Hand-written assembly aims loads, stores,
atomics and scalar loads at the host addresses of Python objects, just past or before an
allocation, 2**40 bytes below one, at scratch and LDS beyond their sizes, and through a buffer
resource. Every access outside an allocation is a memory fault with the faulting address, and
canary host buffers (a numpy array, a bytearray, a bytes object) are unchanged afterwards.

What is not a fault, as on the hardware: LDS accesses beyond the workgroup's allocation (reads
give 0, writes are dropped; MI300 ISA guide, "LDS") and stores into memory the GPU may legitimately
write, such as the queue's own ring (GPU-accessible memory that the simulator owns).
"""
from __future__ import annotations

import ctypes
import sys

import _fault_kernels as fk
import numpy as np
import pytest

import hsapy
from hsapy.errors import HSAError, MemoryFaultError

pytestmark = fk.needs_assembler

PATTERN = 0xAB
PRIVATE_APERTURE = 2 << 48
SHARED_APERTURE = 1 << 48
MASK64 = (1 << 64) - 1


@pytest.fixture(scope="module")
def rt():
    with hsapy.Runtime(backend="sim", watchdog_s=5) as runtime:
        yield runtime


class Canaries:
    """Host memory outside every simulated allocation that the escape kernels aim at."""

    def __init__(self, rt) -> None:
        self.array = np.full(4096, PATTERN, np.uint8)
        self.raw = bytearray(b"\xcd" * 4096)
        self.obj = bytes(bytearray(b"canary object " * 8))    # a heap object, not a constant
        self.obj_hash = hash(self.obj)
        self.obj_type = type(self.obj)
        self.raw_address = ctypes.addressof((ctypes.c_char * len(self.raw)).from_buffer(self.raw))
        for address in (self.array.ctypes.data, self.raw_address, id(self.obj)):
            assert rt.lib.memory.find(address) is None       # truly outside the simulator

    def assert_intact(self) -> None:
        assert (self.array == PATTERN).all()
        assert self.raw == bytearray(b"\xcd" * 4096)
        # a store at id(obj) would have overwritten its reference count and type pointer
        assert type(self.obj) is self.obj_type and sys.getrefcount(self.obj) >= 2
        assert self.obj == b"canary object " * 8 and hash(self.obj) == self.obj_hash


@pytest.fixture(scope="module")
def canaries(rt):
    return Canaries(rt)


@pytest.fixture(scope="module")
def buffers(rt):
    """(out, target): ``out`` receives loaded values, ``target`` is the near-miss allocation."""
    return rt.system_pool.allocate(4096), rt.system_pool.allocate(4096)


# name -> (body, lds, private, arguments(canaries, out, target) -> (a, b, c), faulting address)
FAULTS = {
    "global load from a numpy array": (
        fk.LOAD_A_STORE_B, 0, 0, lambda k, out, t: (k.array.ctypes.data + 64, out.address, 0),
        lambda k, out, t: k.array.ctypes.data + 64),
    "global store into a numpy array": (
        fk.STORE_C_AT_A, 0, 0, lambda k, out, t: (k.array.ctypes.data, 0, 0x11),
        lambda k, out, t: k.array.ctypes.data),
    "global store into a bytearray": (
        fk.STORE_C_AT_A, 0, 0, lambda k, out, t: (k.raw_address + 8, 0, 0x11),
        lambda k, out, t: k.raw_address + 8),
    "global store at id() of a bytes object": (
        fk.STORE_C_AT_A, 0, 0, lambda k, out, t: (id(k.obj), 0, 0),
        lambda k, out, t: id(k.obj)),
    "global store just past an allocation": (
        fk.STORE_C_AT_A, 0, 0, lambda k, out, t: (t.address + 4096, 0, 0x11),
        lambda k, out, t: t.address + 4096),
    "global store straddling an allocation's end": (
        fk.STORE_C_AT_A, 0, 0, lambda k, out, t: (t.address + 4094, 0, 0x11),
        lambda k, out, t: t.address + 4094),
    "global load 8 bytes before an allocation": (
        fk.LOAD_A_MINUS_8_STORE_B, 0, 0, lambda k, out, t: (t.address, out.address, 0),
        lambda k, out, t: t.address - 8),
    "global store 2**40 bytes below an allocation": (
        fk.STORE_AT_A_PLUS_C, 0, 0, lambda k, out, t: (t.address, 0, -(1 << 40) & MASK64),
        lambda k, out, t: t.address - (1 << 40)),
    "flat load from a numpy array": (
        fk.FLAT_LOAD_A_STORE_B, 0, 0, lambda k, out, t: (k.array.ctypes.data, out.address, 0),
        lambda k, out, t: k.array.ctypes.data),
    "flat store into a bytearray": (
        fk.FLAT_STORE_C_AT_A, 0, 0, lambda k, out, t: (k.raw_address, 0, 0x22),
        lambda k, out, t: k.raw_address),
    "flat store beyond scratch (private aperture)": (
        fk.FLAT_STORE_C_AT_A, 0, 16, lambda k, out, t: (PRIVATE_APERTURE + 0x100000, 0, 0x22),
        lambda k, out, t: PRIVATE_APERTURE + 0x100000),
    "scratch store beyond the private segment": (
        fk.SCRATCH_AT_C, 0, 16, lambda k, out, t: (0, out.address, 0x100000),
        lambda k, out, t: PRIVATE_APERTURE + 0x100000),
    "scalar load from a numpy array": (
        fk.SLOAD_A_STORE_B, 0, 0, lambda k, out, t: (k.array.ctypes.data, out.address, 0),
        lambda k, out, t: k.array.ctypes.data),
    "scalar load from address 0": (
        fk.SLOAD_A_STORE_B, 0, 0, lambda k, out, t: (0, out.address, 0),
        lambda k, out, t: 0),
    "global atomic add on a bytearray": (
        fk.ATOMIC_ADD_AT_A, 0, 0, lambda k, out, t: (k.raw_address, 0, 0),
        lambda k, out, t: k.raw_address),
    "global atomic add just past an allocation": (
        fk.ATOMIC_ADD_AT_A, 0, 0, lambda k, out, t: (t.address + 4096, 0, 0),
        lambda k, out, t: t.address + 4096),
}


@pytest.mark.parametrize("target", fk.TARGETS)
@pytest.mark.parametrize("case", sorted(FAULTS))
def test_escape_attempt_is_a_memory_fault(rt, canaries, buffers, target, case):
    body, lds, private, arguments, faulting = FAULTS[case]
    agent = fk.agent_of(rt, target)
    out, near = buffers
    kernel = fk.load(rt, agent, "escape", body, lds=lds, private=private)
    with agent.create_queue(size=64) as queue:
        with pytest.raises(MemoryFaultError) as raised:
            kernel.launch(queue, list(arguments(canaries, out, near)), 64, 64)
        assert queue.error is not None and queue.error[0] == 43
    assert raised.value.status == 43
    assert f"at address {faulting(canaries, out, near):#x}" in str(raised.value)
    canaries.assert_intact()


@pytest.mark.parametrize("target", fk.TARGETS)
def test_buffer_resource_aimed_at_host_memory_never_reaches_it(rt, canaries, buffers, target):
    # A V# whose base is a host address outside every allocation (num_records 2^32 - 1, so the
    # range check passes): the buffer load is a memory fault naming the address.
    agent = fk.agent_of(rt, target)
    out, _ = buffers
    kernel = fk.load(rt, agent, "escape_buffer", fk.BUFFER_LOAD_AT_A)
    with agent.create_queue(size=64) as queue:
        with pytest.raises(HSAError) as raised:
            kernel.launch(queue, [canaries.raw_address, out.address, 0], 64, 64)
    assert raised.value.status == 43
    assert f"at address {canaries.raw_address:#x}" in str(raised.value)
    canaries.assert_intact()


@pytest.mark.parametrize("target", fk.TARGETS)
@pytest.mark.parametrize("offset", [0x10000, 0xFFFFFFF0])
def test_lds_beyond_its_size_reads_zero_and_drops_writes(rt, canaries, buffers, target, offset):
    agent = fk.agent_of(rt, target)
    out, _ = buffers
    out.numpy(np.uint32)[0] = 0xDEAD
    kernel = fk.load(rt, agent, "escape_lds", fk.LDS_AT_C, lds=64)
    with agent.create_queue(size=64) as queue:
        kernel.launch(queue, [0, out.address, offset], 1, 1)
    assert out.numpy(np.uint32)[0] == 0
    canaries.assert_intact()


@pytest.mark.parametrize("target", fk.TARGETS)
def test_flat_store_beyond_lds_in_the_shared_aperture_is_dropped(rt, canaries, target):
    agent = fk.agent_of(rt, target)
    kernel = fk.load(rt, agent, "escape_flat_lds", fk.FLAT_STORE_C_AT_A, lds=64)
    with agent.create_queue(size=64) as queue:
        kernel.launch(queue, [SHARED_APERTURE + 0x100000, 0, 0x33], 1, 1)
        queue.check()
    canaries.assert_intact()


@pytest.mark.parametrize("target", fk.TARGETS)
def test_gpu_may_write_its_own_queue_ring(rt, canaries, target):
    # Real GPUs write any GPU-accessible mapping, rings included; so does the simulator. The
    # store lands in the ring (slot 40, unused by this dispatch) and nowhere else.
    agent = fk.agent_of(rt, target)
    kernel = fk.load(rt, agent, "escape_ring", fk.STORE_C_AT_A)
    with agent.create_queue(size=64) as queue:
        slot = queue.slot_address(40) + 8
        kernel.launch(queue, [slot, 0, 0x5EED], 1, 1)
        assert queue.ring[40, 8:12].view(np.uint32)[0] == 0x5EED
    canaries.assert_intact()
