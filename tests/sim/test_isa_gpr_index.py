"""gfx9 GPR index mode on the ISA interpreter (hsapy/sim/isa/gpr_index.py): clang-19 -O0 code
that indexes a vector register with a run-time, per-lane index (an extractelement and an
insertelement with a divergent index become waterfall loops around ``s_set_gpr_idx_on`` /
``v_mov_b32`` / ``s_set_gpr_idx_off``), run for gfx942 and gfx90a with several waves per
workgroup whose indices differ, against numpy; and the decoder/semantics corners a compiler
does not emit (raw encodings), on batches of waves with different M0 values."""
from __future__ import annotations

import struct
import subprocess

import numpy as np
import pytest
from isa_exec_harness import Device, build_hip, require

from hsapy.sim.execution import SimFault
from hsapy.sim.isa import decode
from hsapy.sim.isa.gpr_index import GPR_IDX_EN
from hsapy.sim.isa.interpreter import ProgramInfo
from hsapy.sim.isa.semantics import MODE_CHANGED, compile_instruction
from hsapy.sim.isa.wave import NSREG, Batch

PICK = r"""
typedef float float8 __attribute__((ext_vector_type(8)));
KERNEL void pick(const float* in, const int* idx, float* out) {
  uint i = bid_x() * bdim_x() + tid_x();
  float8 v;
  for (int k = 0; k < 8; ++k) v[k] = in[8 * i + k];
  int j = idx[i];
  v[j] = v[j] * 2.0f + 1.0f;               // read and write the element a lane selects
  out[9 * i] = v[(j + 3) & 7];
  for (int k = 0; k < 8; ++k) out[9 * i + 1 + k] = v[k];
}
"""


def _pick_reference(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    v = values.reshape(-1, 8).copy()
    rows = np.arange(v.shape[0])
    v[rows, idx] = v[rows, idx] * np.float32(2) + np.float32(1)
    return np.concatenate([v[rows, (idx + 3) & 7][:, None], v], axis=1)


@pytest.mark.parametrize("opt", ["-O0", "-O3"])
@pytest.mark.parametrize("target", ["gfx942", "gfx90a"])
def test_vector_indexed_by_a_lane_value_matches_numpy(target, opt, tmp_path):
    code = build_hip(PICK, target, (opt,))
    if opt == "-O0":
        # the build really uses index mode (both directions), else this test proves nothing
        path = tmp_path / "pick.co"
        path.write_bytes(code)
        listing = subprocess.run([require("llvm-objdump-19"), "-d", str(path)],
                                 capture_output=True, text=True, check=True).stdout
        assert "s_set_gpr_idx_on" in listing and "gpr_idx(DST)" in listing
        assert "gpr_idx(SRC0)" in listing and "s_set_gpr_idx_off" in listing
    dev = Device(target)
    kernel = dev.load(code, "pick")
    n = 4 * 64 * 3 - 40           # 3 workgroups of 4 waves, the last wave partial
    rng = np.random.default_rng(7)
    values = rng.standard_normal(8 * n).astype(np.float32)
    idx = rng.integers(0, 8, n).astype(np.int32)
    idx[64:128] = 5               # one wave where every lane picks the same element
    out = dev.zeros(4 * 9 * n)
    private = kernel.code_object.kernels["pick"].private_segment_fixed_size
    dev.dispatch(kernel, [dev.buffer(values), dev.buffer(idx), out], (n,), (256,),
                 private=private)
    got = dev.read(out, np.float32, 9 * n).reshape(n, 9)
    assert np.array_equal(got, _pick_reference(values, idx))


# --- raw encodings and batches of several waves -----------------------------------------------

def _inst(target: str, *words: int):
    return decode(struct.pack(f"<{len(words)}I", *words), target, 0x1000)[0]


def _batch(waves: int, m0: list[int], mode: int) -> Batch:
    V = np.zeros((16, waves, 64), np.uint32)
    for r in range(16):
        V[r] = 100 * r + np.arange(64)[None, :] + 10000 * np.arange(waves)[:, None]
    S = np.zeros((waves, NSREG), np.uint32)
    S[:, 124] = m0
    return Batch(0x1000, S, V, None, np.ones((waves, 64), bool), np.zeros(waves, bool),
                 np.zeros(waves, np.int64), np.arange(waves, dtype=np.int64), mode=mode)


def test_decoder_prints_the_enable_mask_as_llvm_does():
    assert _inst("gfx942", 0xBF110102).text() == "s_set_gpr_idx_on s2, gpr_idx(SRC0)"
    assert _inst("gfx90a", 0xBF110F02).text() == "s_set_gpr_idx_on s2, gpr_idx(SRC0,SRC1,SRC2,DST)"
    assert _inst("gfx942", 0xBF110002).text() == "s_set_gpr_idx_on s2, gpr_idx()"
    assert _inst("gfx942", 0xBF111F02).text() == "s_set_gpr_idx_on s2, 0x1f"
    assert _inst("gfx942", 0xBF9D0009).text() == "s_set_gpr_idx_mode gpr_idx(SRC0,DST)"
    assert _inst("gfx942", 0xBF9D0013).text() == "s_set_gpr_idx_mode 0x13"


def test_only_the_low_four_bits_of_the_enable_fields_count():
    info = ProgramInfo.for_mode("gfx9", 64, 0x3F0)
    b = _batch(1, [0], 0x3F0)
    b.S[:, 2] = 0x0102
    on = compile_instruction(_inst("gfx942", 0xBF111F02), info)    # s_set_gpr_idx_on s2, 0x1f
    assert on(b, None) == MODE_CHANGED and b.mode == 0x3F0 | GPR_IDX_EN
    assert int(b.S[0, 124]) == 0xF002
    mode = compile_instruction(_inst("gfx942", 0xBF9D0013), info)  # s_set_gpr_idx_mode 0x13
    mode(b, None)
    assert int(b.S[0, 124]) == 0x3002


def test_waves_of_one_batch_use_their_own_index():
    info = ProgramInfo.for_mode("gfx9", 64, 0x3F0 | GPR_IDX_EN)
    # v_mov_b32 v1, v2 ; waves: src0 +3, dst +2, src0 and dst +1, index 4 without enables
    fn = compile_instruction(_inst("gfx942", 0x7E020302), info)
    b = _batch(4, [0x1003, 0x8002, 0x9001, 0x0004], info.mode.value)
    before = b.V.copy()
    assert fn(b, None) is None
    want = before.copy()
    want[1, 0] = before[5, 0]
    want[3, 1] = before[2, 1]
    want[2, 2] = before[3, 2]
    want[1, 3] = before[2, 3]
    assert np.array_equal(b.V, want)


def test_scalar_results_of_waves_with_different_indices_stay_apart():
    info = ProgramInfo.for_mode("gfx9", 64, 0x3F0 | GPR_IDX_EN)
    # v_readfirstlane_b32 s4, v2 (an SGPR destination) and v_cmpx_lt_u32 vcc, v1, v2 (EXEC)
    read = compile_instruction(_inst("gfx942", 0x7E080502), info)
    b = _batch(3, [0x1000, 0x1002, 0x1005], info.mode.value)
    b.S[:, 4] = 7
    read(b, None)
    assert list(b.S[:, 4]) == [200, 10000 + 400, 20000 + 700]
    cmpx = compile_instruction(_inst("gfx942", 0x7DB20501), info)   # v_cmpx_lt_u32 vcc, v1, v2
    b = _batch(2, [0x2000, 0x2001], info.mode.value)
    b.V[3, 1, :32] = 0                  # wave 1 compares v1 < v3: false in lanes 0-31
    cmpx(b, None)
    assert b.exec[0].all() and not b.exec[1, :32].any() and b.exec[1, 32:].all()
    assert int(b.S[0, 106]) == 0xFFFFFFFF and int(b.S[1, 106]) == 0


def test_an_index_past_the_wave_s_registers_stops_the_queue():
    info = ProgramInfo.for_mode("gfx9", 64, 0x3F0 | GPR_IDX_EN)
    fn = compile_instruction(_inst("gfx942", 0x7E020302), info)       # v_mov_b32 v1, v2
    b = _batch(2, [0x1001, 0x100E], info.mode.value)                  # v2 + 14 = v16
    with pytest.raises(SimFault, match="past the 16 VGPRs"):
        fn(b, None)


def test_setreg_turns_the_mode_off_like_s_set_gpr_idx_off():
    info = ProgramInfo.for_mode("gfx9", 64, 0x3F0 | GPR_IDX_EN)
    # s_setreg_imm32_b32 hwreg(HW_REG_MODE, 27, 1), 0
    fn = compile_instruction(_inst("gfx942", 0xBA0006C1, 0), info)
    b = _batch(1, [0], info.mode.value)
    assert fn(b, None) == MODE_CHANGED and b.mode == 0x3F0
