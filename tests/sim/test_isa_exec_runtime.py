"""The ISA interpreter behind the whole simulated runtime: hsapy.Runtime(backend="sim") loads a
code object, the launcher packs explicit and hidden kernargs, the packet goes through the queue
and the packet processor, the registered interpreter runs it; faults come back through the
queue's error path with the status and the faulting address."""
from __future__ import annotations

import numpy as np
import pytest
from isa_exec_harness import build_hip
from test_isa_exec_kernels import DIMS, TREE

import hsapy
from hsapy.errors import HSAError


@pytest.fixture(scope="module")
def rt():
    with hsapy.Runtime(backend="sim") as runtime:
        yield runtime


def _agent(rt, target):
    for agent in rt.gpu_agents:
        if agent.name == target:
            return agent
    pytest.skip(f"no simulated {target} agent (HSAPY_SIM_TARGETS)")


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_vector_add_through_the_queue(rt, target):
    from hsapy.asm import kernels

    agent = _agent(rt, target)
    kernel = rt.load(kernels.build("vector_add", target), agent).kernel("vector_add")
    queue = agent.create_queue(size=64)
    n = 10_000
    a = np.random.default_rng(0).random(n, dtype=np.float32)
    b = np.random.default_rng(1).random(n, dtype=np.float32)
    bufs = [rt.system_pool.allocate(4 * n) for _ in range(3)]
    bufs[0].copy_from(a)
    bufs[1].copy_from(b)
    kernel.launch(queue, [bufs[0], bufs[1], bufs[2], n], n, 256)
    assert np.array_equal(bufs[2].numpy(np.float32)[:n], a + b)


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_hidden_arguments_packed_by_the_launcher_reach_the_kernel(rt, target):
    agent = _agent(rt, target)
    kernel = rt.load(build_hip(DIMS, target), agent).kernel("dims")
    queue = agent.create_queue(size=64)
    grid, block = (48, 8), (16, 4)
    out = rt.system_pool.allocate(16 * grid[0] * grid[1])
    kernel.launch(queue, [out], grid, block)
    got = out.numpy(np.uint32)[: 4 * grid[0] * grid[1]].reshape(grid[1], grid[0], 4)
    assert (got[..., 0] == 16).all() and (got[..., 1] == 4).all() and (got[..., 2] == 3).all()


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_lds_tree_with_dynamic_lds_through_the_queue(rt, target):
    agent = _agent(rt, target)
    kernel = rt.load(build_hip(TREE, target), agent).kernel("tree")
    queue = agent.create_queue(size=64)
    block, blocks = 256, 8
    x = np.arange(block * blocks, dtype=np.float32)
    px = rt.system_pool.allocate(x.nbytes)
    px.copy_from(x)
    partials = rt.system_pool.allocate(4 * blocks)
    kernel.launch(queue, [px, partials], block * blocks, block, 4 * block)
    assert np.array_equal(partials.numpy(np.float32)[:blocks], x.reshape(blocks, block).sum(axis=1))


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_memory_fault_reports_status_and_address_through_the_queue(rt, target):
    from hsapy.asm import kernels

    agent = _agent(rt, target)
    kernel = rt.load(kernels.build("vector_add", target), agent).kernel("vector_add")
    queue = agent.create_queue(size=64)
    buf = rt.system_pool.allocate(4096)
    with pytest.raises(HSAError) as info:
        kernel.launch(queue, [buf, buf, 0x1000, 1024], 1024, 256)
    assert info.value.status == 43                       # HSA_STATUS_ERROR_MEMORY_FAULT
    status, message = rt.lib.sim_queue_error(queue.address)
    assert status == 43 and "0x1000" in message
