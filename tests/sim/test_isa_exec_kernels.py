"""End to end on the ISA interpreter: real clang-19 / llvmlite code objects for gfx942 and
gfx1201, dispatched through ``InterpreterExecutor.execute`` with hand-built packets, checked for
exact results."""
from __future__ import annotations

import numpy as np
import pytest

from isa_exec_harness import TARGETS, Device, build_hip

VECTOR_ADD = """
KERNEL void vadd(const float* a, const float* b, float* out, uint n) {
  uint i = bid_x() * bdim_x() + tid_x();
  if (i < n) out[i] = a[i] + b[i];
}
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [1, 1000, 4096])
def test_hip_vector_add_is_exact(target, n):
    dev = Device(target)
    kernel = dev.load(build_hip(VECTOR_ADD, target), "vadd")
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    pa, pb, out = dev.buffer(a), dev.buffer(b), dev.zeros(4 * n + 64)
    grid = ((n + 255) // 256) * 256
    dev.dispatch(kernel, [pa, pb, out, n], (grid,), (256,))
    assert np.array_equal(dev.read(out, np.float32, n), a + b)
    # the guard kept lanes >= n from writing past the end
    assert not dev.read(out + 4 * n, np.uint32, 16).any()
