"""Hand-checked cases: gfx9 GPR index mode (CDNA3 ISA guide, 6.6 "VGPR Indexing" and the
S_SET_GPR_IDX_* descriptions; hsapy/sim/isa/gpr_index.py says what is modelled).

M0 is s124. ``ON`` is a MODE value with GPR_IDX_EN (bit 27) set, so VALU cases are compiled the
way the executor compiles a program running in index mode; M0[7:0] is the index and M0[15:12]
the enables (12 src0, 13 src1, 14 src2, 15 dst).
"""
from __future__ import annotations

from isa_hand_runner import KEEP_MARK, case

from hsapy.sim.execution import SimFault
from hsapy.sim.isa.semantics import NotImplementedInstruction

CASES = []
GPR_IDX_EN = 1 << 27
OFF = 0x3F0                 # round to nearest, denormals kept, DX10_CLAMP and IEEE
ON = OFF | GPR_IDX_EN
SRC0, SRC1, SRC2, DST = 1, 2, 4, 8
MODE_CHANGED = -4


def m0(index: int, enables: int, high: int = 0) -> int:
    return high | enables << 12 | index


def add(*cases):
    for c in cases:
        CASES.extend(c if isinstance(c, list) else [c])


def _mode_is(value: int):
    def check(batch, machine):
        assert batch.mode == value, hex(batch.mode)
    return check


def on9(line, m0_value, inputs, expect, why, **kw):
    return case("gfx942", line, {"mode": ON, "s124.u32": m0_value, **inputs}, expect, why, **kw)


# --- turning the mode on and off, index and enables in M0 ------------------------------------
add(case("gfx942", "s_set_gpr_idx_on s2, gpr_idx(SRC0)",
         {"mode": OFF, "s2.u32": 0x1205, "s124.u32": 0xABCDF3FF},
         {"s124.u32": 0xABCD1305, "check": _mode_is(ON)},
         "MODE.GPR_IDX_EN = 1; M0[7:0] = S0[7:0], M0[15:12] = SIMM4, other M0 bits kept",
         result=MODE_CHANGED))
add(case("gfx942", "s_set_gpr_idx_on s2, gpr_idx(SRC1,DST)",
         {"mode": ON, "s2.u32": 7, "s124.u32": 0x1003},
         {"s124.u32": 0xA007, "check": _mode_is(ON)},
         "already on: only M0 changes, the program stays the same", result=None))
add(case("gfx942", "s_set_gpr_idx_on 0x11223344, gpr_idx(SRC0,SRC2)", {"mode": OFF},
         {"s124.u32": 0x5044, "check": _mode_is(ON)}, "a literal index: its low byte",
         result=MODE_CHANGED))
add(case("gfx942", "s_set_gpr_idx_off", {"mode": ON, "s124.u32": 0x1305},
         {"s124.u32": 0x1305, "check": _mode_is(OFF)},
         "MODE.GPR_IDX_EN = 0; M0 unchanged", result=MODE_CHANGED))
add(case("gfx942", "s_set_gpr_idx_off", {"mode": OFF}, {"check": _mode_is(OFF)},
         "already off: nothing changes"))
add(case("gfx942", "s_set_gpr_idx_mode gpr_idx(SRC1,DST)", {"mode": ON, "s124.u32": 0xFFFF5FFF},
         {"s124.u32": 0xFFFFAFFF, "check": _mode_is(ON)}, "M0[15:12] = SIMM16[3:0] only"))
add(case("gfx942", "s_getreg_b32 s4, hwreg(HW_REG_MODE, 27, 1)", {"mode": ON}, {"s4.u32": 1},
         "GPR_IDX_EN reads back through s_getreg"))
add(case("gfx942", "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 27, 1), 1", {"mode": OFF},
         {"check": _mode_is(ON)}, "and can be written with s_setreg", result=MODE_CHANGED))

# --- VALU operands moved by the index --------------------------------------------------------
add(on9("v_mov_b32 v1, v2", m0(3, SRC0), {"v2.u32": [2], "v5.u32": [55]}, {"v1.u32": [55]},
        "src0 enabled: reads v[2 + 3]"))
add(on9("v_mov_b32 v1, v2", m0(3, DST), {"v2.u32": [2]},
        {"v4.u32": [2], "v1.u32": [KEEP_MARK]}, "dst enabled: writes v[1 + 3], v1 untouched"))
add(on9("v_mov_b32 v1, v2", m0(2, SRC0 | DST), {"v4.u32": [44]}, {"v3.u32": [44]},
        "both moved by the same index"))
add(on9("v_mov_b32 v1, v2", m0(3, 0), {"v2.u32": [2], "v5.u32": [55]}, {"v1.u32": [2]},
        "mode on, no operand enabled: no operand moves"))
add(on9("v_mov_b32 v1, v2", m0(0, SRC0 | DST), {"v2.u32": [2]}, {"v1.u32": [2]},
        "index 0: no operand moves"))
add(on9("v_mov_b32 v1, v2", m0(3, SRC1 | SRC2), {"v2.u32": [2], "v5.u32": [55]},
        {"v1.u32": [2]}, "the enables of operands the instruction lacks do nothing"))
add(on9("v_add_u32 v1, v2, v3", m0(1, SRC1), {"v2.u32": [10], "v3.u32": [3], "v4.u32": [4]},
        {"v1.u32": [14]}, "VOP2 src1: v2 + v[3 + 1]"))
add(on9("v_add_u32 v1, 5, v3", m0(2, SRC0 | SRC1), {"v3.u32": [3], "v5.u32": [50]},
        {"v1.u32": [55]}, "an inline constant is never indexed, the VGPR is"))
add(on9("v_add_u32_e64 v1, s2, v3", m0(2, SRC0 | SRC1), {"s2.u32": 7, "v5.u32": [50]},
        {"v1.u32": [57]}, "an SGPR is never indexed"))
add(on9("v_fma_f32 v1, v2, v3, v4", m0(2, SRC2),
        {"v2.f32": [2.0], "v3.f32": [3.0], "v4.f32": [1.0], "v6.f32": [0.5]},
        {"v1.f32": [6.5]}, "VOP3 src2: v2 * v3 + v[4 + 2]"))
add(on9("v_add_f64 v[2:3], v[4:5], v[6:7]", m0(2, SRC0), {"v4.f64": [1.0], "v6.f64": [2.5]},
        {"v2.f64": [5.0]}, "a 64-bit operand moves as a pair: v[6:7] + v[6:7]"))
add(on9("v_fmac_f32 v1, v2, v3", m0(4, DST),
        {"v2.f32": [2.0], "v3.f32": [3.0], "v1.f32": [100.0], "v5.f32": [1.0]},
        {"v5.f32": [7.0], "v1.f32": [100.0]},
        "v_fmac: the dst bit moves the destination and the accumulator it reads (6.6.2)"))
add(on9("v_fmamk_f32 v0, v1, 0x40000000, v2", m0(3, SRC2),
        {"v1.f32": [3.0], "v2.f32": [1.0], "v5.f32": [0.25]}, {"v0.f32": [6.25]},
        "v_fmamk: the VGPR after K is moved by the src2 bit (6.6.2, v_madmk)"))
add(on9("v_fmamk_f32 v0, v1, 0x40000000, v2", m0(3, SRC1),
        {"v1.f32": [3.0], "v2.f32": [1.0], "v5.f32": [0.25]}, {"v0.f32": [7.0]},
        "... and not by the src1 bit"))
add(on9("v_fmaak_f32 v0, v1, v2, 0x40000000", m0(2, SRC1),
        {"v1.f32": [3.0], "v2.f32": [1.0], "v4.f32": [0.5]}, {"v0.f32": [3.5]},
        "v_fmaak: its second VGPR is moved by the src1 bit (6.6.2, v_madak)"))
add(on9("v_lshlrev_b32 v1, v2, v3", m0(1, SRC1), {"v2.u32": [4], "v3.u32": [1], "v4.u32": [3]},
        {"v1.u32": [48]}, "a *rev shift: the encoded src1 (the value) is moved: v4 << v2"))
add(on9("v_mov_b32_sdwa v1, v2 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:WORD_0",
        m0(2, DST), {"v2.u32": [0x1234], "v3.u32": [0xAAAA5555]},
        {"v3.u32": [0x12345555], "v1.u32": [KEEP_MARK]},
        "SDWA preserve: the dst bit moves the write and the kept bits (6.6.2)"))
add(on9("v_mov_b32_dpp v1, v2 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf", m0(1, SRC0),
        {"v3.u32": [10, 11, 12, 13]}, {"v1.u32": [11, 10, 13, 12]},
        "DPP: the lanes of the moved source v[2 + 1]"))
add(on9("v_readlane_b32 s4, v2, 1", m0(3, SRC0), {"v5.u32": [50, 51]}, {"s4.u32": 51},
        "v_readlane src0 (6.6.2)"))
add(on9("v_readfirstlane_b32 s4, v2", m0(1, SRC0), {"v3.u32": [30, 31]}, {"s4.u32": 30},
        "v_readfirstlane src0 (6.6.2)"))
add(on9("v_writelane_b32 v1, s2, 1", m0(2, DST), {"s2.u32": 9},
        {"v3.u32": [KEEP_MARK, 9, KEEP_MARK], "v1.u32": [KEEP_MARK]},
        "v_writelane dst (6.6.2)"))
add(on9("v_cmp_gt_u32 vcc, v1, v2", m0(2, SRC0 | DST), {"v1.u32": [0], "v2.u32": [5],
                                                         "v3.u32": [9, 1]},
        {"vcc": "10"}, "VOPC: the VGPR source moves, the mask destination is no VGPR"))
add(on9("v_accvgpr_read_b32 v1, a2", m0(2, DST), {"a2.u32": [7]},
        {"v3.u32": [7], "v1.u32": [KEEP_MARK]}, "a VGPR destination of an AGPR move moves"))
add(on9("v_mov_b32 v1, v30", m0(5, SRC0), {},
        {"raises": (SimFault, "past the 32 VGPRs of the wave")},
        "an index out of the wave's VGPRs is illegal (6.6.1): the queue stops"))
add(on9("v_accvgpr_write_b32 a1, v2", m0(1, DST), {},
        {"raises": (NotImplementedInstruction, "AGPR operand")},
        "whether AGPRs are indexed is not documented: stops, only when the index moves one"))
add(on9("v_accvgpr_write_b32 a1, v2", m0(1, SRC0), {"v3.u32": [5]}, {"a1.u32": [5]},
        "the VGPR source of the same instruction moves"))
