"""SimLib memory: pools, allocation, access, fill, pointer info, async copy; SimMemory itself."""
from __future__ import annotations

import threading

import _packets as P
import numpy as np
import pytest

from hsapy._hsa import ffi
from hsapy.sim import SimMemory, SimMemoryFault

SUCCESS, INVALID_ARGUMENT, INVALID_ALLOCATION = 0, 0x1001, 0x1003
INVALID_AGENT, INVALID_SIGNAL, INVALID_MEMORY_POOL = 0x1004, 0x1006, 40
KERNARG, FINE, COARSE = 1, 2, 4
GLOBAL, GROUP = 0, 3
NEVER, ALLOWED, DISALLOWED = 0, 1, 2


def cpu(lib) -> int:
    return P.agents(lib)[0]


def pool_with(lib, agent: int, flags: int, segment: int = GLOBAL) -> int:
    for pool in P.pools(lib, agent):
        if P.pool_segment(lib, pool) == segment and P.pool_flags(lib, pool) == flags:
            return pool
    raise LookupError(flags)


def allocate(lib, pool: int, size: int) -> int:
    out = ffi.new("void **")
    assert lib.hsa_amd_memory_pool_allocate({"handle": pool}, size, 0, out) == SUCCESS
    return int(ffi.cast("uintptr_t", out[0]))


def test_cpu_pools_fine_kernarg_and_coarse(lib):
    flags = sorted(P.pool_flags(lib, p) for p in P.pools(lib, cpu(lib)))
    assert flags == sorted([FINE, KERNARG | FINE, COARSE])


@pytest.mark.parametrize("target, lds", [("gfx942", 65536), ("gfx1201", 65536)])
def test_gpu_pools_device_coarse_and_group(lib, target, lds):
    agent = P.gpu(lib, target)
    device = pool_with(lib, agent, COARSE)
    group = pool_with(lib, agent, 0, GROUP)
    size = ffi.new("size_t *")
    assert lib.hsa_amd_memory_pool_get_info({"handle": group}, 2, size) == SUCCESS
    assert size[0] == lds
    allowed = ffi.new("bool *")
    assert lib.hsa_amd_memory_pool_get_info({"handle": group}, 5, allowed) == SUCCESS
    assert allowed[0] is False
    assert lib.hsa_amd_memory_pool_get_info({"handle": device}, 5, allowed) == SUCCESS
    assert allowed[0] is True


def test_pool_info_validation(lib):
    out = ffi.new("size_t *")
    assert lib.hsa_amd_memory_pool_get_info({"handle": 5}, 2, out) == INVALID_MEMORY_POOL
    pool = P.pools(lib, cpu(lib))[0]
    assert lib.hsa_amd_memory_pool_get_info({"handle": pool}, 99, out) == INVALID_ARGUMENT


def test_allocation_is_host_memory_at_its_address(lib):
    kernarg = pool_with(lib, cpu(lib), KERNARG | FINE)
    address = allocate(lib, kernarg, 100)
    assert address % 4096 == 0
    ffi.cast("uint32_t *", address)[1] = 0xCAFEF00D          # the host writes through ffi
    assert lib.memory.read_u32(address + 4) == 0xCAFEF00D     # the simulator sees it
    assert lib.hsa_amd_memory_pool_free(ffi.cast("void *", address)) == SUCCESS
    assert lib.memory.find(address) is None


def test_allocation_validation(lib):
    out = ffi.new("void **")
    device = pool_with(lib, P.gpu(lib, "gfx942"), COARSE)
    group = pool_with(lib, P.gpu(lib, "gfx942"), 0, GROUP)
    assert lib.hsa_amd_memory_pool_allocate({"handle": device}, 0, 0, out) == INVALID_ARGUMENT
    assert lib.hsa_amd_memory_pool_allocate({"handle": device}, 64, 0, ffi.NULL) == INVALID_ARGUMENT
    assert lib.hsa_amd_memory_pool_allocate({"handle": 1}, 64, 0, out) == INVALID_MEMORY_POOL
    assert lib.hsa_amd_memory_pool_allocate({"handle": group}, 64, 0, out) == INVALID_ALLOCATION
    too_big = (1 << 40) * 2
    assert lib.hsa_amd_memory_pool_allocate({"handle": device}, too_big, 0, out) == INVALID_ALLOCATION
    assert lib.hsa_amd_memory_pool_free(ffi.cast("void *", 0x1234)) == INVALID_ALLOCATION


def access(lib, agent: int, pool: int) -> int:
    out = ffi.new("uint32_t *")
    assert lib.hsa_amd_agent_memory_pool_get_info({"handle": agent}, {"handle": pool}, 0, out) == 0
    return out[0]


def test_access_rules_follow_rocr(lib):
    gfx942, gfx1201 = P.gpu(lib, "gfx942"), P.gpu(lib, "gfx1201")
    system = pool_with(lib, cpu(lib), KERNARG | FINE)
    device = pool_with(lib, gfx942, COARSE)
    group = pool_with(lib, gfx942, 0, GROUP)
    assert access(lib, cpu(lib), system) == ALLOWED
    assert access(lib, gfx942, system) == DISALLOWED
    assert access(lib, gfx942, device) == ALLOWED
    assert access(lib, gfx1201, device) == DISALLOWED
    assert access(lib, cpu(lib), device) == DISALLOWED
    assert access(lib, gfx1201, group) == NEVER


def test_allow_access_adds_agents(lib):
    gfx942, gfx1201 = P.gpu(lib, "gfx942"), P.gpu(lib, "gfx1201")
    address = allocate(lib, pool_with(lib, gfx942, COARSE), 4096)
    assert lib.memory.find(address).accessible == {gfx942}
    agents = ffi.new("hsa_agent_t[1]", [{"handle": gfx1201}])
    assert lib.hsa_amd_agents_allow_access(1, agents, ffi.NULL, ffi.cast("void *", address)) == 0
    assert lib.memory.find(address).accessible == {gfx942, gfx1201}
    bogus = ffi.new("hsa_agent_t[1]", [{"handle": 3}])
    ptr = ffi.cast("void *", address)
    assert lib.hsa_amd_agents_allow_access(1, bogus, ffi.NULL, ptr) == INVALID_AGENT
    assert lib.hsa_amd_agents_allow_access(0, agents, ffi.NULL, ptr) == INVALID_ARGUMENT
    assert lib.hsa_amd_agents_allow_access(1, agents, ffi.NULL, ffi.cast("void *", 64)) == INVALID_ARGUMENT


def test_memory_fill(lib):
    address = allocate(lib, pool_with(lib, cpu(lib), FINE), 64)
    assert lib.hsa_amd_memory_fill(ffi.cast("void *", address + 4), 0xA5A5A5A5, 3) == SUCCESS
    words = np.frombuffer(lib.memory.read(address, 20), np.uint32)
    assert list(words) == [0, 0xA5A5A5A5, 0xA5A5A5A5, 0xA5A5A5A5, 0]
    assert lib.hsa_amd_memory_fill(ffi.cast("void *", address + 2), 1, 1) == INVALID_ARGUMENT
    assert lib.hsa_amd_memory_fill(ffi.cast("void *", address), 1, 5000) == INVALID_ARGUMENT


def test_pointer_info(lib):
    gfx942 = P.gpu(lib, "gfx942")
    address = allocate(lib, pool_with(lib, gfx942, COARSE), 10000)
    info = ffi.new("hsa_amd_pointer_info_t *")
    info.size = ffi.sizeof("hsa_amd_pointer_info_t")
    count = ffi.new("uint32_t *")
    listing = ffi.new("hsa_agent_t **")
    keep = []

    @ffi.callback("void *(size_t)")
    def alloc(n):
        block = ffi.new("char[]", n)
        keep.append(block)
        return block

    status = lib.hsa_amd_pointer_info(ffi.cast("void *", address + 100), info, alloc, count, listing)
    assert status == SUCCESS
    assert info.type == lib.HSA_EXT_POINTER_TYPE_HSA
    assert int(ffi.cast("uintptr_t", info.agentBaseAddress)) == address
    assert info.sizeInBytes == 12288                         # rounded up to the 4 KiB granule
    assert info.agentOwner.handle == gfx942
    assert info.global_flags == COARSE
    assert [listing[0][i].handle for i in range(count[0])] == [gfx942]
    status = lib.hsa_amd_pointer_info(ffi.cast("void *", 0x40), info, ffi.NULL, ffi.NULL, ffi.NULL)
    assert status == SUCCESS and info.type == lib.HSA_EXT_POINTER_TYPE_UNKNOWN


def test_async_copy_waits_for_dependencies_then_signals(lib):
    gfx942 = P.gpu(lib, "gfx942")
    host = allocate(lib, pool_with(lib, cpu(lib), FINE), 4096)
    device = allocate(lib, pool_with(lib, gfx942, COARSE), 4096)
    payload = bytes(range(256)) * 4
    lib.memory.write(host, payload)
    dep, done = P.signal(lib, 1), P.signal(lib, 1)
    deps = ffi.new("hsa_signal_t[1]", [{"handle": dep}])
    status = lib.hsa_amd_memory_async_copy(
        ffi.cast("void *", device), {"handle": gfx942}, ffi.cast("void *", host),
        {"handle": cpu(lib)}, len(payload), 1, deps, {"handle": done})
    assert status == SUCCESS
    assert P.wait_lt(lib, done, timeout_s=0.1) == 1           # held by the dependency
    assert lib.memory.read(device, 16) == bytes(16)
    lib.hsa_signal_store_screlease({"handle": dep}, 0)
    assert P.wait_lt(lib, done) == 0
    assert lib.memory.read(device, len(payload)) == payload


def test_async_copy_profiling_times(lib):
    assert lib.hsa_amd_profiling_async_copy_enable(True) == SUCCESS
    fine = pool_with(lib, cpu(lib), FINE)
    a, b = allocate(lib, fine, 4096), allocate(lib, fine, 4096)
    done = P.signal(lib, 1)
    agent = {"handle": cpu(lib)}
    assert lib.hsa_amd_memory_async_copy(ffi.cast("void *", b), agent, ffi.cast("void *", a),
                                         agent, 4096, 0, ffi.NULL, {"handle": done}) == SUCCESS
    assert P.wait_lt(lib, done) == 0
    t = ffi.new("hsa_amd_profiling_async_copy_time_t *")
    assert lib.hsa_amd_profiling_get_async_copy_time({"handle": done}, t) == SUCCESS
    assert 0 < t.start <= t.end


def test_async_copy_validation(lib):
    fine = pool_with(lib, cpu(lib), FINE)
    a = ffi.cast("void *", allocate(lib, fine, 4096))
    agent = {"handle": cpu(lib)}
    done = {"handle": P.signal(lib, 1)}
    copy = lib.hsa_amd_memory_async_copy
    assert copy(ffi.NULL, agent, a, agent, 16, 0, ffi.NULL, done) == INVALID_ARGUMENT
    assert copy(a, {"handle": 9}, a, agent, 16, 0, ffi.NULL, done) == INVALID_AGENT
    assert copy(a, agent, a, agent, 16, 0, ffi.NULL, {"handle": 0}) == INVALID_SIGNAL
    assert copy(a, agent, a, agent, 16, 1, ffi.NULL, done) == INVALID_ARGUMENT
    assert copy(a, agent, a, agent, 8192, 0, ffi.NULL, done) == INVALID_ARGUMENT   # past the end


def test_sim_memory_gather_scatter_and_faults():
    mem = SimMemory()
    a = mem.allocate(64, 64)
    b = mem.allocate(32, 64)
    mem.scatter(np.array([a, a + 4, b + 28], np.uint64), np.array([1, 2, 3], np.uint32))
    assert list(mem.gather(np.array([b + 28, a, a + 4], np.uint64), 4)) == [3, 1, 2]
    mem.scatter(np.array([a + 8], np.uint64), np.array([0x1FF], np.uint32), itemsize=1)
    assert mem.read(a + 8, 2) == b"\xff\x00"                 # truncating byte store
    mem.write(a + 16, b"\xfe")
    assert list(mem.gather(np.array([a + 16], np.uint64), 1, np.int32)) == [-2]   # sign-extend
    with pytest.raises(SimMemoryFault) as fault:
        mem.gather(np.array([a, b + 30], np.uint64), 4)        # crosses the end of b
    assert fault.value.address == b + 30
    with pytest.raises(SimMemoryFault):
        mem.scatter(np.array([8], np.uint64), np.array([1], np.uint32))
    with pytest.raises(SimMemoryFault):
        mem.view(a + 60, 8)
    assert mem.free(a) and not mem.free(a)
    with pytest.raises(SimMemoryFault):
        mem.read(a, 1)


def test_sim_memory_is_thread_safe_under_concurrent_allocation():
    mem = SimMemory()

    def churn():
        for _ in range(200):
            address = mem.allocate(128, 64)
            assert mem.find(address + 127).address == address
            mem.free(address)

    threads = [threading.Thread(target=churn) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert mem.allocations() == []


def test_sim_memory_rejects_addresses_that_wrap_around():
    mem = SimMemory()
    mem.allocate(64, 64)
    with pytest.raises(SimMemoryFault):
        mem.gather(np.array([0xFFFFFFFFFFFFFFFE], np.uint64), 4)


def test_agent_access_follows_allow_access(lib):
    gfx942, gfx1201 = P.gpu(lib, "gfx942"), P.gpu(lib, "gfx1201")
    device = allocate(lib, pool_with(lib, gfx942, COARSE), 4096)
    system = allocate(lib, pool_with(lib, cpu(lib), KERNARG | FINE), 4096)
    lanes = np.array([device, device + 8], np.uint64)
    lib.memory.scatter(lanes, np.array([5, 6], np.uint32), agent=gfx942)
    with pytest.raises(SimMemoryFault) as fault:
        lib.memory.gather(lanes, 4, agent=gfx1201)            # not allowed yet
    assert fault.value.kind == "access"
    with pytest.raises(SimMemoryFault):
        lib.memory.view(device, 4, agent=gfx1201)
    assert list(lib.memory.gather(np.array([system], np.uint64), 4, agent=gfx1201)) == [0]
    agents = ffi.new("hsa_agent_t[1]", [{"handle": gfx1201}])
    assert lib.hsa_amd_agents_allow_access(1, agents, ffi.NULL, ffi.cast("void *", device)) == 0
    assert list(lib.memory.gather(lanes, 4, agent=gfx1201)) == [5, 6]
