"""Hand-checked cases: gfx942 f32 -> fp8/bf8 conversions (V_CVT_PK_FP8_F32, V_CVT_PK_BF8_F32;
CDNA3 ISA guide 7.2 and the instruction pseudocode). The formats are FNUZ: fp8 E4M3 bias 8
(largest 240, smallest denormal 2^-10), bf8 E5M2 bias 16 (largest 57344, smallest denormal
2^-17); 0x80 is the only NaN and there is no -0 or infinity. Results round to nearest even;
past the largest value they give 0x80, or +-largest under MODE.FP16_OVFL.

Codes by hand: fp8 1.0 = 0x40 (exponent 8), 2.0 = 0x48, 16 = 0x60, 18 = 0x61, 20 = 0x62,
240 = 0x7F; bf8 1.0 = 0x40 (exponent 16), 57344 = 0x7F.
"""
from __future__ import annotations

from isa_hand_runner import INF, NAN, case

CASES = []
OVFL = 0x3F0 | 1 << 23        # MODE with FP16_OVFL set (round to nearest, denormals kept)


def pk(target_line, a, b, old, want, why, mode=None):
    inputs = {"v2.f32": a, "v3.f32": b, "v1.u32": [old] * len(a)}
    if mode is not None:
        inputs["mode"] = mode
    CASES.append(case("gfx942", target_line, inputs, {"v1.u32": want}, why))


FP8 = "v_cvt_pk_fp8_f32 v1, v2, v3"
BF8 = "v_cvt_pk_bf8_f32 v1, v2, v3"
pk(FP8, [1.0, 240.0], [-2.0, -240.0], 0xAABBCCDD, [0xAABBC840, 0xAABBFF7F],
   "S0 to bits 7:0, S1 to 15:8, bits 31:16 kept; the sign is bit 7")
pk("v_cvt_pk_fp8_f32 v1, v2, v3 op_sel:[0,0,1]", [1.0], [-2.0], 0xAABBCCDD, [0xC840CCDD],
   "OPSEL[3]: bits 31:16 written, 15:0 kept")
pk(FP8, [17.0, 19.0, 241.0, 247.0], [247.9, 248.0, 1000.0, -248.0], 0,
   [0x7F60, 0x8062, 0x807F, 0x807F],
   "ties to the even code (17 -> 16, 19 -> 20); 241..248 round to 240; 248 and above round "
   "past it: NaN 0x80 with FP16_OVFL clear")
pk(FP8, [2.0 ** -11, 3 * 2.0 ** -11, -(2.0 ** -12), -0.0], [5 * 2.0 ** -11, 2.0 ** -10, 0.0, 1e-30],
   0, [0x0200, 0x0102, 0x0000, 0x0000],
   "denormals: ties to even; a negative value that rounds to 0 is 0x00 (0x80 would be NaN)")
pk(FP8, [NAN, INF], [-INF, 1.0], 0, [0x8080, 0x4080], "NaN and infinities give 0x80")
pk(FP8, [1000.0, NAN, 240.0], [-INF, INF, -1e38], 0, [0xFF7F, 0x7F80, 0xFF7F],
   "FP16_OVFL set: overflow and infinities saturate to +-240, NaN stays 0x80", mode=OVFL)
pk("v_cvt_pk_fp8_f32 v1, -v2, |v3|", [1.0], [-2.0], 0, [0x48C0], "neg and abs apply to the inputs")
pk(BF8, [1.0, 57344.0, 61439.0, 61440.0], [-1.5, -0.0, 2.0 ** -17, 2.0 ** -18], 0,
   [0xC240, 0x007F, 0x017F, 0x0080],
   "bf8: 1.5 = 0x42; 61439 rounds to 57344, 61440 (the tie) past it; 2^-17 is the smallest "
   "denormal, 2^-18 ties to 0")
pk(BF8, [INF, 1e6], [NAN, -1e6], 0, [0x807F, 0xFF7F], "FP16_OVFL set: +-57344 (NaN stays 0x80)",
   mode=OVFL)
pk(BF8, [INF, 1e6], [NAN, -1e6], 0, [0x8080, 0x8080], "FP16_OVFL clear: 0x80")
