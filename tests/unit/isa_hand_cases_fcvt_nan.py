"""Hand-checked cases: float-to-float conversions of NaNs and infinities, bit for bit, and
V_DIV_FIXUP, V_FREXP_MANT and V_CUBESC/V_CUBETC of a signalling NaN.

A conversion delivers a signalling NaN quiet, with its sign and as much of its payload as fits
(IEEE 754-2019 5.4.2 convertFormat, 6.2.3 NaN propagation): narrowing keeps the top payload bits,
widening shifts the payload up; the quiet bit is set either way. LLVM's AMDGPU backend counts
FP_ROUND / FP_EXTEND / CVT_PKRTZ results as canonical on every target and in either MODE.IEEE
(SITargetLowering::isCanonicalized), so it feeds them to v_min/v_max unquieted. Infinities
convert to infinities, in every rounding mode. The VOP3, SDWA and DPP forms share the semantics.
Sources v0 (v[0:1]), v1; result v3 (v[6:7]); scalar sources s0, s1, result s4.
"""
from __future__ import annotations

from isa_hand_runner import both, case

CASES = []

SNAN32, NEG_SNAN32 = 0x7F80_0001, 0xFFA0_0000     # quiet bit 22 clear; payloads 1 and 1 << 21
QNAN32, INF32, NEG_INF32 = 0x7FC0_0000, 0x7F80_0000, 0xFF80_0000
SNAN16, NEG_SNAN16, QNAN16 = 0x7C01, 0xFD00, 0x7E00  # quiet bit 9 clear in the first two
SNAN64, NEG_SNAN64 = 0x7FF0_0000_0000_0001, 0xFFF4_0000_0000_0000
QNAN64, INF64 = 0x7FF8_0000_0000_0000, 0x7FF0_0000_0000_0000

F32_IN = [SNAN32, NEG_SNAN32, QNAN32, INF32, NEG_INF32]
# payload 1 has no bit left in f16's 10 mantissa bits; 1 << 21 becomes 1 << 8
TO_F16 = [0x7E00, 0xFF00, 0x7E00, 0x7C00, 0xFC00]


def add(*cases):
    for c in cases:
        CASES.extend(c if isinstance(c, list) else [c])


for line in ("v_cvt_f16_f32 v3, v0", "v_cvt_f16_f32_e64 v3, v0"):
    add(case("*", line, {"v0.u32": F32_IN}, {"v3.u16": TO_F16},
             "sNaN -> quiet NaN with the top payload bits; qNaN and infinities as they are"))
add(case("gfx942", "v_cvt_f16_f32_sdwa v3, v0 dst_sel:WORD_0 dst_unused:UNUSED_PAD "
         "src0_sel:DWORD", {"v0.u32": F32_IN}, {"v3.u32": TO_F16}, "SDWA: the same conversion"))
add(case("gfx1201", "v_cvt_f16_f32_dpp v3, v0 quad_perm:[0,1,2,3] row_mask:0xf bank_mask:0xf",
         {"v0.u32": F32_IN[:4]}, {"v3.u16": TO_F16[:4]}, "DPP: the same conversion"))
# MODE: denormals kept, both rounding fields toward zero; gfx942's IEEE bit (MODE[9]) clear
add(case("*", "v_cvt_f16_f32 v3, v0", {"v0.u32": F32_IN, "mode": 0x0FF}, {"v3.u16": TO_F16},
         "round toward zero and IEEE mode off: NaNs still come out quiet, infinities stay"))
add(case("*", "v_cvt_f32_f16 v3, v0", {"v0.u16": [SNAN16, NEG_SNAN16, QNAN16, 0x7C00, 0xFC00]},
         {"v3.u32": [0x7FC0_2000, 0xFFE0_0000, QNAN32, INF32, NEG_INF32]},
         "sNaN -> quiet NaN, the payload shifted up 13 bits"))
add(case("*", "v_cvt_f64_f32 v[6:7], v0", {"v0.u32": F32_IN[:4]},
         {"v6.u64": [0x7FF8_0000_2000_0000, 0xFFFC_0000_0000_0000, QNAN64, INF64]},
         "sNaN -> quiet NaN, the payload shifted up 29 bits"))
add(case("*", "v_cvt_f32_f64 v3, v[0:1]", {"v0.u64": [SNAN64, NEG_SNAN64, QNAN64, INF64]},
         {"v3.u32": [QNAN32, 0xFFE0_0000, QNAN32, INF32]},
         "sNaN -> quiet NaN with the top payload bits"))
add(case("*", "v_cvt_f32_f64 v3, v[0:1]", {"v0.u64": [SNAN64, INF64], "mode": 0x0FF},
         {"v3.u32": [QNAN32, INF32]}, "round toward zero: the same"))
add(both("v_cvt_pkrtz_f16_f32 v3, v0, v1", "v_cvt_pk_rtz_f16_f32 v3, v0, v1",
         {"v0.u32": [SNAN32, INF32], "v1.u32": [NEG_SNAN32, 0xFFC0_0000]},
         {"v3.u32": [0xFF00_7E00, 0xFE00_7C00]},
         "each half quiet; toward zero leaves an infinity infinite (it is exact)"))

# gfx1201's scalar float conversions (RDNA4 ISA, SOP1 / SOP2)
add(case("gfx1201", "s_cvt_f16_f32 s4, s0", {"s0.u32": NEG_SNAN32}, {"s4.u16": 0xFF00},
         "sNaN -> quiet NaN"))
add(case("gfx1201", "s_cvt_f32_f16 s4, s0", {"s0.u32": SNAN16}, {"s4.u32": 0x7FC0_2000},
         "the low half's sNaN -> quiet NaN"))
add(case("gfx1201", "s_cvt_hi_f32_f16 s4, s0", {"s0.u32": NEG_SNAN16 << 16},
         {"s4.u32": 0xFFE0_0000}, "the high half's sNaN -> quiet NaN"))
add(case("gfx1201", "s_cvt_pk_rtz_f16_f32 s4, s0, s1", {"s0.u32": SNAN32, "s1.u32": NEG_INF32},
         {"s4.u32": 0xFC00_7E00}, "sNaN low, -inf high"))

# V_DIV_FIXUP: a NaN operand, S2 (numerator) before S1 (denominator), comes out quiet
# (cvtToQuietNAN in the RDNA guides' pseudocode; LLVM's isCanonicalized counts DIV_FIXUP results
# canonical)
add(case("*", "v_div_fixup_f32 v3, v0, v1, v2",
         {"v0.f32": [1.0, 1.0, 1.0], "v1.u32": [SNAN32, 0x3F80_0000, SNAN32],
          "v2.u32": [0x3F80_0000, NEG_SNAN32, QNAN32 | 5]},
         {"v3.u32": [0x7FC0_0001, 0xFFE0_0000, 0x7FC0_0005]},
         "S1 sNaN quieted; S2 sNaN quieted; S2's NaN wins over S1's"))
add(case("*", "v_div_fixup_f64 v[6:7], v[0:1], v[2:3], v[4:5]",
         {"v0.f64": [1.0], "v2.f64": [1.0], "v4.u64": [SNAN64]},
         {"v6.u64": [0x7FF8_0000_0000_0001]}, "S2 sNaN quieted, payload kept"))

# V_FREXP_MANT passes a NaN or an infinity through (the ISA guides' pseudocode returns S0); LLVM
# counts amdgcn_frexp_mant results canonical (SITargetLowering::isCanonicalized, SelectionDAG and
# GlobalISel), so a signalling NaN comes out quiet, its sign and payload kept
add(case("*", "v_frexp_mant_f32 v3, v0", {"v0.u32": F32_IN},
         {"v3.u32": [0x7FC0_0001, 0xFFE0_0000, QNAN32, INF32, NEG_INF32]},
         "sNaN quieted with its payload; qNaN and infinities as they are"))
add(case("*", "v_frexp_mant_f16 v3, v0", {"v0.u16": [SNAN16, NEG_SNAN16, QNAN16, 0x7C00]},
         {"v3.u16": [0x7E01, 0xFF00, QNAN16, 0x7C00]}, "sNaN quieted with its payload"))
add(case("*", "v_frexp_mant_f64 v[6:7], v[0:1]", {"v0.u64": [SNAN64, NEG_SNAN64, QNAN64, INF64]},
         {"v6.u64": [0x7FF8_0000_0000_0001, 0xFFFC_0000_0000_0000, QNAN64, INF64]},
         "sNaN quieted with its payload"))

# V_CUBESC/V_CUBETC select (and negate) one source; LLVM's GlobalISel isCanonicalized counts
# amdgcn_cubesc/cubetc results canonical, so a selected signalling NaN comes out quiet
add(case("*", "v_cubetc_f32 v3, v0, v1, v2",
         {"v0.f32": [1.0, 1.0], "v1.u32": [0x3F80_0000, SNAN32], "v2.u32": [SNAN32, 0x3F80_0000]},
         {"v3.u32": [0x7FC0_0001, 0xFFC0_0001]},
         "z sNaN on the y face: z quieted; y sNaN on the x face: -y quieted"))
add(case("*", "v_cubesc_f32 v3, v0, v1, v2",
         {"v0.f32": [2.0], "v1.f32": [1.0], "v2.u32": [SNAN32]}, {"v3.u32": [0xFFC0_0001]},
         "z sNaN on the +x face: -z quieted"))
