"""Hand-checked cases: gfx942 f32 -> fp8/bf8 conversions (V_CVT_PK_FP8_F32, V_CVT_PK_BF8_F32;
CDNA3 ISA guide 7.2 and the instruction pseudocode). The formats are FNUZ: fp8 E4M3 bias 8
(largest 240, smallest denormal 2^-10), bf8 E5M2 bias 16 (largest 57344, smallest denormal
2^-17); 0x80 is the only NaN and there is no -0 or infinity. Results round to nearest even;
past the largest value they give 0x80, or +-largest under MODE.FP16_OVFL.

Codes by hand: fp8 1.0 = 0x40 (exponent 8), 2.0 = 0x48, 16 = 0x60, 18 = 0x61, 20 = 0x62,
240 = 0x7F; bf8 1.0 = 0x40 (exponent 16), 57344 = 0x7F.

gfx1201 writes the OCP formats (semantics_valu_special.ocp_small_float_encoder): fp8 E4M3FN bias 7
(largest 448 = 0x7E, smallest denormal 2^-9, no infinity), bf8 E5M2 bias 15 (largest
57344 = 0x7B, smallest denormal 2^-16); zeros keep their sign (-0 = 0x80). NaN, infinite and
larger inputs stop the queue. Codes by hand: fp8 1.0 = 0x38, -2.0 = 0xC0, 2.0 = 0x40, 16 = 0x58,
18 = 0x59, 20 = 0x5A, 416 = 0x7D; bf8 1.0 = 0x3C, -1.5 = 0xBE, 49152 = 0x7A.
"""
from __future__ import annotations

from isa_hand_runner import INF, KEEP, NAN, case

from hsapy.sim.isa.closures import NotImplementedInstruction

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


# --- gfx1201: OCP E4M3FN / E5M2 ------------------------------------------------------------------

def ocp(target_line, a, b, old, want, why, mode=None):
    inputs = {"v2.f32": a, "v3.f32": b, "v1.u32": [old] * len(a)}
    if mode is not None:
        inputs["mode"] = mode
    CASES.append(case("gfx1201", target_line, inputs, {"v1.u32": want}, why))


def stops(target_line, a, b, text):
    CASES.append(case("gfx1201", target_line, {"v2.f32": a, "v3.f32": b},
                      {"raises": (NotImplementedInstruction, text)}, text))


ocp(FP8, [1.0, 448.0], [-2.0, -448.0], 0xAABBCCDD, [0xAABBC038, 0xAABBFE7E],
    "OCP E4M3: S0 to bits 7:0, S1 to 15:8, bits 31:16 kept; +-448 is the largest finite code")
ocp("v_cvt_pk_fp8_f32 v1, v2, v3 op_sel:[0,0,1]", [1.0], [-2.0], 0xAABBCCDD, [0xC038CCDD],
    "OPSEL[3] (the builtin's word_sel): bits 31:16 written, 15:0 kept")
ocp(FP8, [17.0, 19.0, 447.0, 432.0], [-0.0, 0.0, 2.0 ** -9, 3 * 2.0 ** -10], 0,
    [0x8058, 0x005A, 0x017E, 0x027E],
    "ties to the even code (17 -> 16, 19 -> 20, 432 -> 448); -0 is 0x80; 2^-9 is the smallest "
    "denormal, 1.5 * 2^-9 ties to 2 * 2^-9")
ocp(FP8, [2.0 ** -10, -(2.0 ** -10), -1e-30, 2.0 ** -128],
    [5 * 2.0 ** -10, 7 * 2.0 ** -10, 1e-30, -(2.0 ** -130)], 0,
    [0x0200, 0x0480, 0x0080, 0x8000],
    "denormal ties to even; values that round to zero keep their sign, f32 denormals included")
ocp(FP8, [2.0 ** -128, -1e-30], [-(2.0 ** -130), 3 * 2.0 ** -10], 0, [0x8000, 0x0280],
    "MODE flushing f32 denormals gives the same codes: they round to a zero of their sign anyway",
    mode=0x0)
ocp("v_cvt_pk_fp8_f32 v1, -v2, |v3|", [1.0], [-2.0], 0, [0x40B8], "neg and abs apply to the inputs")
ocp(BF8, [1.0, 57344.0, 2.0 ** -16, 2.0 ** -17], [-1.5, -0.0, 3 * 2.0 ** -17, 53248.0], 0,
    [0xBE3C, 0x807B, 0x0201, 0x7A00],
    "OCP E5M2: 57344 is the largest finite code; 2^-16 the smallest denormal, 2^-17 ties to 0, "
    "1.5 * 2^-16 to 2 * 2^-16, 53248 to 49152")
CASES.append(case("gfx1201", FP8, {"v2.f32": [1.0, NAN], "v3.f32": [-2.0, INF], "exec": "1"},
                  {"v1.u32": [0xDEADC038, KEEP]},
                  "an inactive lane's NaN and infinity do not stop the queue (v1 starts as "
                  "0xDEADBEEF)"))
stops(FP8, [1.0, NAN], [1.0, 1.0], "lane 1 converts nan: the RDNA4 ISA guide does not define the "
      "fp8 NaN a NaN input gives")
stops(FP8, [1.0], [-INF], "lane 0 converts -inf: the RDNA4 ISA guide does not define whether an "
      "infinite input")
stops(FP8, [449.0], [1.0], "lane 0 converts 449.0: above the largest finite fp8 value 448")
stops(BF8, [1.0], [-57345.0], "lane 0 converts -57345.0: above the largest finite bf8 value 57344")
stops(BF8, [INF], [1.0], "the RDNA4 ISA guide does not define whether an infinite input gives a "
      "bf8 infinity")
