"""Cross-lane instructions in wave64 on gfx12 (code built with +wavefrontsize64): the permutes
work on four rows of 16 lanes and V_PERMLANE64_B32 swaps the two halves (RDNA4 ISA,
V_PERMLANE16_B32 / V_PERMLANEX16_B32 / V_PERMLANE64_B32). The wave32 behaviour is in
isa_hand_cases_ext.py."""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from isa_hand_runner import KEEP, machine

from hsapy.sim.isa import decode
from hsapy.sim.isa.interpreter import ProgramInfo
from hsapy.sim.isa.semantics import compile_instruction
from hsapy.sim.isa.wave import NSREG, Batch

LANES = 64


def _run(line: str, v0: np.ndarray, sgprs: dict[int, int], exec_mask: np.ndarray | None = None,
         v1: np.ndarray | None = None) -> np.ndarray:
    if shutil.which("llvm-mc-19") is None:
        pytest.skip("llvm-mc-19 not found (Debian package llvm-19)")
    proc = subprocess.run(["llvm-mc-19", "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx1201",
                           "-mattr=+wavefrontsize64", "-show-encoding"],
                          input=line + "\n", capture_output=True, text=True, timeout=60)
    enc = re.findall(r"encoding: \[([^\]]*)\]", proc.stdout)
    assert proc.returncode == 0 and len(enc) == 1, proc.stderr
    code = bytes(int(x, 16) for x in enc[0].split(","))
    inst = decode(code, "gfx1201", 0x1000, wavefront_size=64)[0]
    fn = compile_instruction(inst, ProgramInfo("gfx12", LANES, False, False))
    assert getattr(fn, "unimplemented", None) is None, fn.unimplemented
    V = np.full((8, 1, LANES), KEEP, np.uint32)
    V[0, 0] = v0
    if v1 is not None:
        V[1, 0] = v1
    S = np.zeros((1, NSREG), np.uint32)
    for reg, value in sgprs.items():
        S[0, reg] = value
    live = np.ones((1, LANES), bool) if exec_mask is None else exec_mask[None, :].copy()
    batch = Batch(0x1000, S, V, None, live, np.zeros(1, bool), np.zeros(1, np.int64),
                  np.zeros(1, np.int64))
    fn(batch, machine())
    return batch.V[3, 0]


LANE = np.arange(LANES)
VALUES = (1000 + LANE).astype(np.uint32)
REVERSE = {4: 0x89ABCDEF, 5: 0x01234567}    # lane select 15 - i within a row


def test_permlane16_in_wave64_permutes_each_of_the_four_rows():
    got = _run("v_permlane16_b32 v3, v0, s4, s5", VALUES, REVERSE)
    assert np.array_equal(got, 1000 + (LANE & ~15) + 15 - (LANE & 15))


def test_permlanex16_in_wave64_pairs_row_0_with_1_and_row_2_with_3():
    got = _run("v_permlanex16_b32 v3, v0, s4, s5", VALUES, REVERSE)
    other_row = (LANE & ~15) ^ 16
    assert np.array_equal(got, 1000 + other_row + 15 - (LANE & 15))


def test_permlane64_swaps_the_halves_of_a_wave64_reading_inactive_lanes_too():
    live = LANE % 3 != 0
    got = _run("v_permlane64_b32 v3, v0", VALUES, {}, live)
    assert np.array_equal(got[live], (1000 + (LANE ^ 32))[live])
    assert (got[~live] == KEEP).all()


def test_permlanex16_var_in_wave64_takes_each_lane_s_own_select():
    sel = (LANE * 5) & 15
    got = _run("v_permlanex16_var_b32 v3, v0, v1", VALUES, {}, v1=sel.astype(np.uint32))
    assert np.array_equal(got, 1000 + ((LANE & ~15) ^ 16) + sel)


def test_dpp_row_share_and_row_mask_cover_all_four_rows_of_a_wave64():
    # row_share:5 -> every lane reads lane 5 of its own row; row_mask 0b1010 -> only rows 1 and
    # 3 write (RDNA4 ISA, DPP16 "row_share" and ROW_MASK)
    got = _run("v_mov_b32_dpp v3, v0 row_share:5 row_mask:0xa bank_mask:0xf", VALUES, {})
    row = LANE // 16
    want = np.where(row % 2 == 1, 1000 + row * 16 + 5, KEEP)
    assert np.array_equal(got, want.astype(np.uint32))
