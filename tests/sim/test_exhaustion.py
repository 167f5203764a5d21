"""Resource exhaustion gives clean, typed errors and frees what was taken.

The simulator enforces the limits ROCr enforces: a pool gives at most its size
(HSA_AMD_MEMORY_POOL_INFO_SIZE) and an agent runs at most HSA_AGENT_INFO_QUEUES_MAX queues; both
fail with HSA_STATUS_ERROR_OUT_OF_RESOURCES. Signals have no count limit in the simulator (slabs
of 1024 slots grow on demand and are reused); what is tested is that slots are reused and that a
failing slab allocation is a clean OUT_OF_RESOURCES. The tests use a small gfx942 profile (64 MiB
of device memory, 4 queues) so that limits are reached in milliseconds.
"""
from __future__ import annotations

import dataclasses
import threading

import pytest

import hsapy
from hsapy import aql
from hsapy._lifetime import live_counts
from hsapy.errors import HsapyValueError, OutOfResourcesError
from hsapy.sim.targets import GPU_PROFILES

MIB = 1 << 20
SMALL = dataclasses.replace(GPU_PROFILES["gfx942"], memory_size=64 * MIB, queues_max=4)


@pytest.fixture
def rt():
    with hsapy.Runtime(backend="sim", targets=[SMALL]) as runtime:
        yield runtime


def sim_pool(rt, pool):
    return rt.lib.pools[pool.handle]


def test_device_pool_gives_its_size_then_a_typed_error_naming_pool_and_size(rt):
    agent = rt.gpu_agents[0]
    pool = agent.device_pool
    assert pool.size == 64 * MIB
    before = live_counts().get("Buffer", 0)
    buffers = [pool.allocate(16 * MIB) for _ in range(4)]
    with pytest.raises(OutOfResourcesError) as info:
        pool.allocate(MIB)
    message = str(info.value)
    assert "hsa_amd_memory_pool_allocate" in message and "OUT_OF_RESOURCES" in message
    assert f"{MIB} bytes from the global pool" in message and "gfx942" in message
    assert f"pool size {64 * MIB} bytes" in message and "Buffer.close" in message
    # The failure took nothing: four buffers are live and the pool's use is unchanged.
    assert live_counts().get("Buffer", 0) == before + 4
    assert rt.lib.memory.pool_used(sim_pool(rt, pool)) == 64 * MIB
    buffers.pop().close()
    replacement = pool.allocate(16 * MIB)          # freed space is usable again
    for buffer in buffers + [replacement]:
        buffer.close()
    assert live_counts().get("Buffer", 0) == before
    assert rt.lib.memory.pool_used(sim_pool(rt, pool)) == 0
    with pool.allocate(64 * MIB) as whole:         # nothing leaked: the whole pool is free
        whole.fill(7)


def test_a_buffer_larger_than_the_pool_is_refused_before_the_runtime(rt):
    agent = rt.gpu_agents[0]
    for pool in (agent.device_pool, rt.system_pool):
        with pytest.raises(HsapyValueError, match=rf"nbytes={pool.size + 1} exceeds the largest "
                           rf"allocation this global pool of {pool.agent.name} allows "
                           rf"\({pool.alloc_max_size} bytes\)"):
            pool.allocate(pool.size + 1)


def test_code_objects_count_against_device_memory(rt):
    from hsapy.asm import kernels

    agent = rt.gpu_agents[0]
    pool = agent.device_pool
    before = live_counts()
    filler = pool.allocate(64 * MIB - 4096)       # leave less than the code object needs
    with pytest.raises(OutOfResourcesError, match="hsa_executable_load_agent_code_object"):
        rt.load(kernels.build("vector_add", agent.target), agent)
    filler.close()
    assert live_counts() == before                 # the failed load left no executable
    with rt.load(kernels.build("vector_add", agent.target), agent) as exe:
        assert exe.kernel("vector_add").kernel_object


def run_barrier(rt, queue):
    signal = rt.create_signal(1)
    queue.publish(aql.barrier_and([], completion_signal=signal.handle))
    assert signal.wait(2, 1, timeout=10.0, abort=queue.check) == 0
    signal.close()


def test_queues_up_to_the_agents_limit_then_a_typed_error(rt):
    agent = rt.gpu_agents[0]
    assert agent.queues_max == 4
    before = live_counts().get("Queue", 0)
    threads = threading.active_count()
    queues = [agent.create_queue(64) for _ in range(4)]
    with pytest.raises(OutOfResourcesError) as info:
        agent.create_queue(64)
    message = str(info.value)
    assert "hsa_queue_create" in message and "OUT_OF_RESOURCES" in message
    assert "at most 4 queues" in message and "HSA_AGENT_INFO_QUEUES_MAX" in message
    assert live_counts().get("Queue", 0) == before + 4
    assert threading.active_count() == threads + 4   # no packet processor for the failed one
    for queue in queues:
        run_barrier(rt, queue)                        # the existing queues still work
        queue.close()
    assert live_counts().get("Queue", 0) == before
    queues = [agent.create_queue(64) for _ in range(4)]   # the limit is free again
    for queue in queues:
        run_barrier(rt, queue)
        queue.close()


def test_signals_reuse_their_slots(rt):
    table = rt.lib.signals
    before = live_counts().get("Signal", 0)
    first = [rt.create_signal(0) for _ in range(3000)]
    slabs = len(table._slabs)
    for signal in first:
        signal.close()
    second = [rt.create_signal(0) for _ in range(3000)]
    assert len(table._slabs) == slabs                  # destroyed slots were reused
    for signal in second:
        signal.close()
    assert live_counts().get("Signal", 0) == before


def test_a_failing_signal_slab_is_out_of_resources_and_leaks_nothing(rt, monkeypatch):
    memory = rt.lib.memory
    allocate = memory.allocate

    def no_signal_slabs(*args, **kwargs):
        if kwargs.get("tag") == "signals":
            raise MemoryError("no host memory for a signal slab")
        return allocate(*args, **kwargs)

    before = live_counts().get("Signal", 0)
    monkeypatch.setattr(memory, "allocate", no_signal_slabs)
    created = []
    with pytest.raises(OutOfResourcesError, match="hsa_signal_create"):
        for _ in range(2 * 1024 + 1):                  # more than a slab holds
            created.append(rt.create_signal(0))
    assert live_counts().get("Signal", 0) == before + len(created)
    for signal in created:
        signal.close()
    monkeypatch.setattr(memory, "allocate", allocate)
    rt.create_signal(1).close()                         # creation works again
    assert live_counts().get("Signal", 0) == before
