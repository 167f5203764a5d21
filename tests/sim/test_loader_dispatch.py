"""End to end on the simulator: a HIP kernel loaded by the loader, its kernargs packed by
hsapy.kernarg (hidden arguments included), dispatched through a real AQL queue and executed by
the ISA interpreter. The kernel reads blockDim (hidden_group_size_*) and grid / block values."""
from __future__ import annotations

import _packets as P
import numpy as np
import pytest
from _codeobjects import build

from hsapy._hsa import ffi
from hsapy.runtime import Runtime


def run_dims(rt, target: str, grid, workgroup, scale: int, hidden: bool = True) -> list[int]:
    try:
        data = build.build_hip(target, 5)
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    agent = rt.gpu(target)
    with rt.load(data, agent) as exe:
        kernel = exe.kernel("dims")
        out = rt.system_pool.allocate(64)
        ffi.memmove(ffi.cast("void *", out.address), bytes(64), 64)
        kernarg = rt.kernarg_pool.allocate(kernel.kernarg_size)
        view = ffi.buffer(ffi.cast("uint8_t *", kernarg.address), kernel.kernarg_size)
        kernel.layout.packer(grid, workgroup)(view, 0, out, scale)
        if not hidden:   # what a launcher that ignores hidden arguments would pass
            view[16:kernel.kernarg_size] = bytes(kernel.kernarg_size - 16)
        queue = P.create_queue(rt.lib, agent.handle)
        done = P.signal(rt.lib, 1)
        dims = len(grid)
        grid3 = tuple(grid) + (1,) * (3 - dims)
        wg3 = tuple(workgroup) + (1,) * (3 - dims)
        P.publish(rt.lib, queue, P.dispatch(kernel.kernel_object, dims=dims, grid=grid3,
                                            workgroup=wg3, kernarg=kernarg.address,
                                            completion=done))
        assert P.wait_lt(rt.lib, done, timeout_s=60) == 0
        result = np.frombuffer(ffi.buffer(ffi.cast("uint8_t *", out.address), 24), np.uint32)
        return [int(v) for v in result]


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_hip_kernel_sees_block_dims_from_packed_hidden_arguments(target):
    with Runtime(backend="sim", targets=[target]) as rt:
        got = run_dims(rt, target, grid=(1000, 3), workgroup=(256, 1), scale=3)
    # blockDim * scale, then grid / block per axis
    assert got == [256 * 3, 1 * 3, 1 * 3, 1000 // 256, 3, 1]


def test_without_hidden_arguments_blockdim_reads_zero():
    with Runtime(backend="sim", targets=["gfx942"]) as rt:
        got = run_dims(rt, "gfx942", grid=(64,), workgroup=(64,), scale=5, hidden=False)
    assert got[:3] == [0, 0, 0]
