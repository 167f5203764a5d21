"""Hand-checked cases: the rest of the scalar ALU -- bit scans and masks, 64-bit bit fields,
M0-relative SGPR moves, s_call_b64, traps, hints, and the gfx12 scalar f16 / IEEE 754-2019
operations (CDNA3 and RDNA4 ISA guides, SOP1/SOP2/SOPK/SOPP pseudocode).

Sources s0, s1 (64-bit: s[0:1], s2); result s4 (64-bit: s[4:5]); M0 is s124 on gfx9 and s125
on gfx12.
"""
from __future__ import annotations

from isa_hand_runner import INF, NAN, both, case

from hsapy.sim.execution import SimFault

CASES = []
M32 = 0xFFFFFFFF
PC = 0x1000


def add(*cases):
    for c in cases:
        CASES.extend(c if isinstance(c, list) else [c])


def sop1(name9, name12, src_ty, a, out, want, scc=None, why=""):
    src = "s[0:1]" if src_ty.endswith("64") else "s0"
    dst = "s[4:5]" if out.endswith("64") else "s4"
    expect = {f"s4.{out}": want}
    if scc is not None:
        expect["scc"] = scc
    line9 = f"{name9} {dst}, {src}" if name9 else None
    line12 = f"{name12} {dst}, {src}" if name12 else None
    if line9 is None:
        add(case("gfx1201", line12, {f"s0.{src_ty}": a}, expect, why))
    else:
        add(both(line9, line12, {f"s0.{src_ty}": a}, expect, why))


# --- masks, counts and scans --------------------------------------------------------------------
sop1("s_wqm_b32", None, "u32", 0x00100201, "u32", 0x00F00F0F, True,
     "every quad of bits with a bit set becomes all ones")
sop1("s_wqm_b64", None, "u64", 1 << 61, "u64", 0xF << 60, True, "the top quad")
sop1("s_quadmask_b32", None, "u32", 0x00100201, "u32", 0b100101, True, "bit i = quad i has a bit")
sop1("s_quadmask_b64", None, "u64", 0x8000000000000010, "u64", 0x8002, True, "quads 1 and 15")
sop1("s_quadmask_b32", None, "u32", 0, "u32", 0, False, "SCC = result != 0")
sop1("s_brev_b64", None, "u64", 0x1, "u64", 1 << 63, None, "bit 0 to bit 63")
sop1("s_bcnt0_i32_b32", None, "u32", 0xF0, "u32", 28, True, "32 - 4 ones")
sop1("s_bcnt0_i32_b64", None, "u64", 2 ** 64 - 1, "u32", 0, False, "no zeros: 0, SCC clear")
add(case("gfx942", "s_ff0_i32_b32 s4, s0", {"s0.u32": 0x0000FFFF}, {"s4.u32": 16},
         "lowest zero bit"))
add(case("gfx942", "s_ff0_i32_b32 s4, s0", {"s0.u32": M32}, {"s4.u32": M32}, "no zero bit: -1"))
add(case("gfx942", "s_ff0_i32_b64 s4, s[0:1]", {"s0.u64": 0xFFFFFFFF}, {"s4.u32": 32},
         "lowest zero bit, 64-bit"))
sop1("s_flbit_i32_b64", "s_clz_i32_u64", "u64", 1 << 40, "u32", 23, None,
     "leading zeros of a 64-bit value")
sop1("s_flbit_i32_b64", "s_clz_i32_u64", "u64", 0, "u32", M32, None, "no one bit: -1")
sop1("s_flbit_i32", "s_cls_i32", "u32", 0xFFFF0000, "u32", 16, None,
     "16 bits below the sign equal it")
sop1("s_flbit_i32", "s_cls_i32", "u32", 0x40000000, "u32", 1, None, "bit 30 differs from bit 31")
sop1("s_flbit_i32", "s_cls_i32", "u32", 0, "u32", M32, None, "all bits equal: -1")
sop1("s_flbit_i32_i64", "s_cls_i32_i64", "u64", 0xFFFFFFFF00000000, "u32", 32, None,
     "64-bit: bit 31 is the first that differs from bit 63")
sop1("s_bitreplicate_b64_b32", None, "u32", 0b1011, "u64", 0b11001111, None,
     "every bit doubled")

# --- 64-bit bit fields ---------------------------------------------------------------------------
add(both("s_bfm_b64 s[4:5], s0, s1", None, {"s0.u32": 36, "s1.u32": 20},
         {"s4.u64": ((1 << 36) - 1) << 20}, "36 ones shifted left by 20"))
add(both("s_bfe_u64 s[4:5], s[0:1], s2", None,
         {"s0.u64": 0xABCD000000000000, "s2.u32": (16 << 16) | 48},
         {"s4.u64": 0xABCD, "scc": True}, "16 bits at offset 48"))
add(both("s_bfe_i64 s[4:5], s[0:1], s2", None,
         {"s0.u64": 0xABCD000000000000, "s2.u32": (16 << 16) | 48},
         {"s4.u64": 0xFFFFFFFFFFFFABCD, "scc": True}, "the same field, sign-extended"))
add(both("s_bfe_i64 s[4:5], s[0:1], s2", None, {"s0.u64": 0x7F, "s2.u32": 0},
         {"s4.u64": 0, "scc": False}, "width 0: 0"))

# --- M0-relative moves ------------------------------------------------------------------------------
add(case("gfx942", "s_movrels_b32 s4, s8", {"s124.u32": 3, "s11.u32": 0x1234},
         {"s4.u32": 0x1234}, "reads s[8 + M0]"))
add(case("gfx1201", "s_movrels_b32 s4, s8", {"s125.u32": 3, "s11.u32": 0x1234},
         {"s4.u32": 0x1234}, "reads s[8 + M0] (M0 is code 125 on gfx12)"))
add(case("gfx942", "s_movrels_b64 s[4:5], s[8:9]", {"s124.u32": 2, "s10.u64": 0x1122334455667788},
         {"s4.u64": 0x1122334455667788}, "a pair at s[8 + M0]"))
add(case("gfx942", "s_movreld_b32 s4, s0", {"s124.u32": 5, "s0.u32": 77}, {"s9.u32": 77},
         "writes s[4 + M0]"))
add(case("gfx1201", "s_movreld_b64 s[4:5], s[0:1]", {"s125.u32": 4, "s0.u64": 0xAABBCCDD00112233},
         {"s8.u64": 0xAABBCCDD00112233}, "writes the pair at s[4 + M0]"))
add(case("gfx942", "s_movreld_b64 s[4:5], s[0:1]", {"s124.u32": 2, "s0.u64": 0x0102030405060708},
         {"s6.u64": 0x0102030405060708}, "writes the pair at s[4 + M0]"))
add(case("gfx1201", "s_movreld_b32 s4, s0", {"s125.u32": 7, "s0.u32": 5}, {"s11.u32": 5},
         "writes s[4 + M0]"))
add(case("gfx1201", "s_movrels_b64 s[4:5], s[8:9]", {"s125.u32": 4, "s12.u64": 0xFEDC},
         {"s4.u64": 0xFEDC}, "reads the pair at s[8 + M0]"))
add(case("gfx1201", "s_movrelsd_2_b32 s4, s8", {"s125.u32": (2 << 16) | 1, "s9.u32": 99},
         {"s6.u32": 99}, "s[4 + M0[25:16]] = s[8 + M0[9:0]]"))
add(case("gfx942", "s_movrels_b32 s4, s8", {"s124.u32": 200},
         {"raises": (Exception, "outside the register file")},
         "an M0 past the SGPR file is refused, not guessed"))
add(case("gfx942", "s_set_gpr_idx_idx s0", {"s0.u32": 0x1234, "s124.u32": 0xABCD00FF},
         {"s124.u32": 0xABCD0034}, "M0[7:0] = s0[7:0]; the rest of M0 kept"))

# --- program flow, traps and hints ------------------------------------------------------------
add(both("s_call_b64 s[4:5], 3", None, {}, {"s4.u64": PC + 4},
         "saves PC + 4 and branches by 4 * simm16 past the next instruction", result=PC + 16))
add(case("gfx942", "s_cbranch_cdbgsys 3", {}, {},
         "no debugger: COND_DBG_SYS is 0, the branch falls through"))
add(case("gfx942", "s_cbranch_cdbguser 3", {}, {}, "COND_DBG_USER is 0"))
add(case("gfx942", "s_cbranch_cdbgsys_or_user 3", {}, {}, "both debug bits are 0"))
add(case("gfx942", "s_cbranch_cdbgsys_and_user 3", {}, {}, "both debug bits are 0"))
add(both("s_trap 2", None, {}, {"raises": (SimFault, "trap 0x2")},
         "the trap handler ends the dispatch with a queue error naming the trap"))
add(both("s_incperflevel 1", None, {}, {}, "a performance hint: no state changes"))
add(both("s_decperflevel 1", None, {}, {}, "a performance hint: no state changes"))
add(both("s_wakeup", None, {}, {}, "wakes sleeping waves of the workgroup: no state changes"))
add(both("v_nop", None, {}, {}, "no operation"))
add(case("gfx942", "v_clrexcp", {}, {}, "clears exception bits the simulator does not keep"))
add(case("gfx1201", "v_pipeflush", {}, {}, "no architectural effect"))

# --- gfx12 scalar f16 and IEEE 754-2019 minimum/maximum --------------------------------------
def s12(line, inputs, want, why):
    add(case("gfx1201", line, inputs, want, why))


s12("s_add_f16 s4, s0, s1", {"s0.f16": 1.5, "s1.f16": 2.25}, {"s4.u32": 0x4380}, "3.75 in f16; "
    "the upper half of s4 is 0")
s12("s_sub_f16 s4, s0, s1", {"s0.f16": 1.0, "s1.f16": 65504.0}, {"s4.f16": -65504.0},
    "1 - 65504 rounds to -65504")
s12("s_mul_f16 s4, s0, s1", {"s0.f16": 300.0, "s1.f16": 300.0}, {"s4.f16": INF},
    "90000 overflows f16")
s12("s_fmac_f16 s4, s0, s1", {"s0.f16": 2.0, "s1.f16": 3.0, "s4.f16": 0.5}, {"s4.f16": 6.5},
    "s4 = s0 * s1 + s4")
s12("s_max_num_f16 s4, s0, s1", {"s0.f16": NAN, "s1.f16": 2.0}, {"s4.f16": 2.0},
    "maxNum: a NaN operand yields the other")
s12("s_min_num_f16 s4, s0, s1", {"s0.f16": 0.0, "s1.f16": -0.0}, {"s4.f16": -0.0},
    "minNum: -0 < +0")
s12("s_maximum_f32 s4, s0, s1", {"s0.f32": 1.0, "s1.f32": NAN}, {"s4.f32": NAN},
    "maximum: NaN propagates")
s12("s_minimum_f32 s4, s0, s1", {"s0.f32": 0.0, "s1.f32": -0.0}, {"s4.f32": -0.0},
    "minimum: -0 < +0")
s12("s_maximum_f16 s4, s0, s1", {"s0.f16": -0.0, "s1.f16": 0.0}, {"s4.f16": 0.0},
    "maximum f16: +0 > -0")
s12("s_minimum_f16 s4, s0, s1", {"s0.f16": NAN, "s1.f16": 1.0}, {"s4.f16": NAN},
    "minimum f16: NaN propagates")
s12("s_cvt_f16_f32 s4, s0", {"s0.f32": 1.0 + 2 ** -11}, {"s4.f16": 1.0},
    "the tie rounds to even")
s12("s_cvt_f32_f16 s4, s0", {"s0.u32": 0xC000_3C00}, {"s4.f32": 1.0}, "the low half: 1.0")
s12("s_cvt_hi_f32_f16 s4, s0", {"s0.u32": 0xC000_3C00}, {"s4.f32": -2.0}, "the high half: -2.0")
s12("s_cvt_pk_rtz_f16_f32 s4, s0, s1", {"s0.f32": 1.0 + 2 ** -11 + 2 ** -20, "s1.f32": -65520.0},
    {"s4.u32": 0xFBFF_3C00}, "round toward zero: 1.0 and -65504, packed low/high")
s12("s_ceil_f16 s4, s0", {"s0.f16": -1.5}, {"s4.f16": -1.0}, "ceil")
s12("s_floor_f16 s4, s0", {"s0.f16": -1.5}, {"s4.f16": -2.0}, "floor")
s12("s_trunc_f16 s4, s0", {"s0.f16": -1.5}, {"s4.f16": -1.0}, "toward zero")
s12("s_rndne_f16 s4, s0", {"s0.f16": 2.5}, {"s4.f16": 2.0}, "the tie goes to even")
