"""Waves of one workgroup take turns: a wave that spins on a flag another wave of its workgroup
sets, with no barrier between them, sees the flag set, on both execution engines.

The scheduler runs the batch of waves at the lowest program counter first (so that the others
merge with it when it reaches them); in the kernel below clang places the consumer's spin loop
before the producer's code, so without turns the spinner never lets the producer run and the
dispatch ends at the watchdog.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from hsapy import toolchain
from hsapy.runtime import Runtime

pytestmark = pytest.mark.skipif(shutil.which("clang-19") is None,
                                reason="the kernel is built with clang-19")

SOURCE = r"""
extern "C" __global__ void handoff(const int* in, int* out) {
  __shared__ int box[64];
  __shared__ int flag;
  int t = threadIdx.x;
  if (t == 0) flag = 0;
  __syncthreads();
  if (t < warpSize) {   // wave 0: publish, then raise the flag
    box[t] = in[blockIdx.x * warpSize + t];
    if (t == 0) __hip_atomic_store(&flag, 1, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_WORKGROUP);
    out[blockIdx.x * blockDim.x + t] = -1;
  } else {              // the other waves: wait for the flag, then read
    while (__hip_atomic_load(&flag, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_WORKGROUP) == 0)
      __builtin_amdgcn_s_sleep(1);
    out[blockIdx.x * blockDim.x + t] = box[t % warpSize];
  }
}
"""


@pytest.mark.parametrize("engine", ["interp", "jit"])
@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_a_wave_spinning_on_a_flag_sees_another_wave_of_its_workgroup_set_it(target, engine):
    code = toolchain.build_hip(SOURCE, target, compiler="clang", opt_level=3)
    wave = 64 if target == "gfx942" else 32
    groups, block = 3, 3 * wave
    data = np.arange(groups * wave, dtype=np.int32) * 7 + 1
    with Runtime(backend="sim", targets=[target], engine=engine, watchdog_s=10.0) as rt:
        agent = rt.gpu_agents[0]
        with rt.load(code, agent) as executable, agent.create_queue(size=64) as queue:
            source = agent.device_pool.allocate(data.nbytes)
            out = agent.device_pool.allocate(groups * block * 4)
            try:
                source.copy_from(data)
                executable.kernel("handoff").launch(queue, [source, out], groups * block,
                                                    block, timeout=60)
                got = out.copy_to(dtype=np.int32)[: groups * block].reshape(groups, block)
            finally:
                source.close()
                out.close()
    want = np.tile(np.arange(block) % wave, (groups, 1)) + np.arange(groups)[:, None] * wave
    want = np.where(np.arange(block) < wave, -1, data[want])
    np.testing.assert_array_equal(got, want)
