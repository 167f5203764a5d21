"""``s_sleep`` in a spin loop: the sleeping batch gives up its turn, so workgroups of one chunk
that take turns on a global lock hand it over at once instead of after a whole scheduler turn
(``interpreter.TURN_STEPS`` batch-instructions of spinning per hand-over). The HIP kernel is
built by clang-19 and run on both engines; the compiled engine leaves ``s_sleep`` to the
interpreter's scheduler. A spin loop without ``s_sleep`` keeps its batch for a whole turn, and no
longer under the compiled engine, whose calls of compiled code end with the turn."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import hsapy
from hsapy import toolchain
from hsapy.sim.isa import interpreter

pytestmark = pytest.mark.skipif(shutil.which("clang-19") is None,
                                reason="the kernel is built with clang-19")

# The first lane of each workgroup takes the lock, counts its turn and lets the lock go; the
# others of the chunk wait, sleeping between tries.
SOURCE = r"""
extern "C" __global__ void take_turns(int* lock, int* count, int* order) {
  if (threadIdx.x == 0) {
    while (atomicCAS(lock, 0, 1) != 0) __builtin_amdgcn_s_sleep(1);
    __threadfence();
    volatile int* c = count;
    int turn = *c + 1;
    *c = turn;
    order[blockIdx.x] = turn;
    __threadfence();
    atomicExch(lock, 0);
  }
}

extern "C" __global__ void spin_turns(int* lock, int* count, int* order) {
  if (threadIdx.x == 0) {
    while (atomicCAS(lock, 0, 1) != 0) {
    }
    __threadfence();
    volatile int* c = count;
    int turn = *c + 1;
    *c = turn;
    order[blockIdx.x] = turn;
    __threadfence();
    atomicExch(lock, 0);
  }
}
"""

BLOCKS, BLOCK = 16, 64     # 16 workgroups: one chunk


@pytest.fixture(scope="module")
def code() -> dict[str, bytes]:
    return {target: toolchain.build_hip(SOURCE, target) for target in ("gfx942", "gfx1201")}


def _take_turns(code: bytes, target: str, engine: str, name: str) -> int:
    """Run kernel ``name`` over one chunk of workgroups; check that each held the lock once and
    return the batch-instructions the dispatch ran."""
    with hsapy.Runtime(backend="sim", targets=[target], engine=engine) as rt:
        agent = rt.gpu_agents[0]
        kernel = rt.load(code, agent).kernel(name)
        lock = agent.device_pool.allocate(4)
        count = agent.device_pool.allocate(4)
        order = agent.device_pool.allocate(4 * BLOCKS)
        lock.copy_from(np.zeros(1, np.int32))
        count.copy_from(np.zeros(1, np.int32))
        with agent.create_queue(size=64) as queue:
            kernel.launch(queue, [lock, count, order], grid=BLOCKS * BLOCK, workgroup=BLOCK,
                          timeout=120)
        steps = interpreter.last_stats.batch_steps
        assert sorted(order.copy_to(dtype=np.int32)) == list(range(1, BLOCKS + 1))
        assert count.copy_to(dtype=np.int32)[0] == BLOCKS
        assert lock.copy_to(dtype=np.int32)[0] == 0
    return steps


@pytest.mark.parametrize("engine", ["interp", "jit"])
@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_workgroups_that_sleep_while_spinning_on_a_lock_hand_it_over_at_once(code, target,
                                                                             engine):
    steps = _take_turns(code[target], target, engine, "take_turns")
    # a few tries per hand-over (about 500 batch-instructions in all); a spinning batch that
    # kept the scheduler for its turn would take a turn per hand-over (15 of them)
    assert steps < 64 * BLOCKS < 15 * interpreter.TURN_STEPS, steps


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_compiled_code_spinning_without_sleep_hands_the_lock_over_after_one_turn(code, target):
    steps = _take_turns(code[target], target, "jit", "spin_turns")
    # about one turn per hand-over (15 of them); compiled code that ran on for its whole
    # polling budget (jit.runtime.BUDGET) would spin that long per hand-over instead
    assert steps < 2 * BLOCKS * interpreter.TURN_STEPS, steps
