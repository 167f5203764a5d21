"""Where a wave runs, as ``s_getreg_b32`` reports it: HIP kernels built by clang-19 read the
hardware-id registers as HIP's ``__smid()`` does (HW_ID and XCC_ID on gfx942, HW_ID1 on gfx1201)
and get the simulator's documented placement (hsapy/sim/isa/placement.py), under both engines;
a register the simulator does not model stops the queue naming it."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import hsapy
from hsapy import toolchain
from hsapy.errors import HsapyError

pytestmark = pytest.mark.skipif(shutil.which("clang-19") is None,
                                reason="the kernels are built with clang-19")

# One word per work-item: the fields of its wave's placement, each read on its own as HIP's
# amd_device_functions.h does. GETREG's immediate: size - 1 15:11, offset 10:6, register 5:0.
SOURCE = r"""
#define GETREG(reg, offset, size) \
  __builtin_amdgcn_s_getreg((((size) - 1) << 11) | ((offset) << 6) | (reg))
extern "C" __global__ void where(unsigned* out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#if defined(__gfx942__)
  unsigned xcc = GETREG(20, 0, 4), se = GETREG(4, 13, 3), sh = GETREG(4, 12, 1);
  unsigned cu = GETREG(4, 8, 4), simd = GETREG(4, 4, 2), slot = GETREG(4, 0, 4);
  out[i] = xcc << 24 | se << 16 | sh << 15 | cu << 8 | simd << 5 | slot;
#else
  unsigned se = GETREG(23, 18, 3), sa = GETREG(23, 16, 1), wgp = GETREG(23, 10, 4);
  unsigned simd = GETREG(23, 8, 2), slot = GETREG(23, 0, 5);
  out[i] = se << 16 | sa << 15 | wgp << 8 | simd << 5 | slot;
#endif
}
extern "C" __global__ void status(unsigned* out) {
  out[threadIdx.x] = GETREG(2, 0, 32);   // HW_REG_STATUS: not modelled
}
extern "C" __global__ void queue_id(unsigned* out) {
  out[threadIdx.x] = GETREG(4, 24, 3);   // gfx9 HW_ID QUEUE_ID: a field the placement leaves out
}
"""

BLOCK = 320      # 5 waves of 64 on gfx942, 10 of 32 on gfx1201
N = 97 * BLOCK - 70   # a partial last workgroup


def _expected(target: str, n: int) -> np.ndarray:
    """The placement as docs/simulator-isa-coverage.md states it, for ``where``'s packing."""
    item = np.arange(n)
    group, wave = item // BLOCK, (item % BLOCK) // (64 if target == "gfx942" else 32)
    if target == "gfx1201-cumode":
        # CU mode: 64 CUs dealt, two per WGP; SIMD_ID bit 0 is the CU of the WGP, 2 SIMDs per CU
        cu = group % 64
        wgp = cu // 2
        return (wgp % 4) << 16 | ((wgp // 4) % 2) << 15 | (wgp // 8) << 8 \
            | (cu % 2 | (wave % 2) << 1) << 5 | wave // 2
    if target == "gfx942":
        # 8 XCCs dealt first; 38 CUs per XCC, 4 shader engines, 1 array; 4 SIMDs per CU
        xcc, cu = group % 8, (group // 8) % 38
        return xcc << 24 | (cu % 4) << 16 | (cu // 4) << 8 | (wave % 4) << 5 | wave // 4
    # gfx1201 in WGP mode: 32 WGPs, 4 shader engines, 2 arrays each; 4 SIMDs per WGP
    wgp = group % 32
    return (wgp % 4) << 16 | ((wgp // 4) % 2) << 15 | (wgp // 8) << 8 | (wave % 4) << 5 \
        | wave // 4


@pytest.fixture(scope="module")
def code() -> dict[str, bytes]:
    built = {target: toolchain.build_hip(SOURCE, target) for target in ("gfx942", "gfx1201")}
    built["gfx1201-cumode"] = toolchain.build_hip(SOURCE, "gfx1201", extra_args=["-mcumode"])
    return built


@pytest.mark.parametrize("engine", ["interp", "jit"])
@pytest.mark.parametrize("build", ["gfx942", "gfx1201", "gfx1201-cumode"])
def test_hardware_id_registers_report_the_documented_placement(code, build, engine):
    target = build.split("-")[0]
    with hsapy.Runtime(backend="sim", targets=[target], engine=engine) as rt:
        agent = rt.gpu_agents[0]
        kernel = rt.load(code[build], agent).kernel("where")
        out = agent.device_pool.allocate(4 * N)
        with agent.create_queue(size=64) as queue:
            kernel.launch(queue, [out, N], grid=N, workgroup=BLOCK, timeout=120)
        got = out.copy_to(dtype=np.uint32)[:N]
    want = _expected(build, N).astype(np.uint32)
    bad = np.flatnonzero(got != want)
    assert not bad.size, [(int(i), hex(got[i]), hex(want[i])) for i in bad[:5]]


@pytest.mark.parametrize("target,kernel_name,why", [
    ("gfx942", "status", "hwreg(HW_REG_STATUS) (reading hardware register 2 is not modelled"),
    ("gfx1201", "status", "hwreg(HW_REG_STATUS) (reading hardware register 2 is not modelled"),
    ("gfx942", "queue_id", "hwreg(HW_REG_HW_ID, 24, 3) (bits 0x7000000 of HW_REG_HW_ID are not"),
])
def test_reading_an_unmodelled_hardware_register_stops_the_queue_naming_it(code, target,
                                                                            kernel_name, why):
    with hsapy.Runtime(backend="sim", targets=[target]) as rt:
        agent = rt.gpu_agents[0]
        kernel = rt.load(code[target], agent).kernel(kernel_name)
        out = agent.device_pool.allocate(4 * 64)
        with agent.create_queue(size=64) as queue:
            with pytest.raises(HsapyError) as raised:
                kernel.launch(queue, [out], grid=64, workgroup=64, timeout=60)
    message = str(raised.value)
    assert f"not implemented for {target}: s_getreg_b32" in message, message
    assert why in message, message
