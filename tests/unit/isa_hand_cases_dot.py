"""Hand-checked cases: dot products (CDNA3 ISA V_DOT*, RDNA4 ISA V_DOT*).

D = S2 + sum of products of the elements packed in S0 and S1 (lowest element first); the C forms
(VOP2) accumulate into the destination. Integer sums are exact and wrap unless clamp saturates
them. Sources v0, v1, v2; result v3 (the C forms: v3 is also the accumulator, 100).
Byte and nibble values below: 0x80FF7F02 holds bytes 2, 127, 255, 128 (signed: 2, 127, -1,
-128); 0x8F07F1E2 holds nibbles 2, 14, 1, 15, 7, 0, 15, 8 (signed: 2, -2, 1, -1, 7, 0, -1, -8);
0x12345678 holds nibbles 8, 7, 6, 5, 4, 3, 2, 1 (signed: -8, 7, ...).
"""
from __future__ import annotations

from isa_hand_runner import NAN, case

CASES = []
BYTES = 0x80FF7F02
M32_KEEP = 0xFFFFFFFF     # a destination whose other half must be overwritten
NIBBLES = 0x8F07F1E2


def add(*cases):
    CASES.extend(cases)


def dot(target, line, a, b, c, expect, why, ty="u32", c_ty=None):
    inputs = {"v0.u32": [a], "v1.u32": [b]}
    if c is not None:
        inputs[f"v2.{c_ty or ty}"] = [c]
    add(case(target, line, inputs, {f"v3.{ty}": [expect]}, why))


# --- integer dots, gfx9 -----------------------------------------------------------------------
dot("gfx942", "v_dot4_i32_i8 v3, v0, v1, v2", BYTES, 0x02030405, 10, 269,
    "2*5 + 127*4 + -1*3 + -128*2 + 10", ty="i32")
dot("gfx942", "v_dot4_i32_i8 v3, v0, v1, v2", 0x7F7F7F7F, 0x7F7F7F7F, 0x7FFFFFF0, 0x8000FBF4,
    "4 * 127^2 past 0x7FFFFFF0 wraps without clamp")
dot("gfx942", "v_dot4_i32_i8 v3, v0, v1, v2 clamp", 0x7F7F7F7F, 0x7F7F7F7F, 0x7FFFFFF0,
    0x7FFFFFFF, "clamp saturates at INT32_MAX")
dot("*", "v_dot4_u32_u8 v3, v0, v1, v2", BYTES, 0x02030405, 10, 1549,
    "2*5 + 127*4 + 255*3 + 128*2 + 10, unsigned bytes")
dot("*", "v_dot4_u32_u8 v3, v0, v1, v2 clamp", BYTES, 0x02030405, 0xFFFFFFF0, 0xFFFFFFFF,
    "clamp saturates at UINT32_MAX")
dot("gfx942", "v_dot2_i32_i16 v3, v0, v1, v2", 0x80007FFF, 0x00020003, -5, 32760,
    "32767*3 + -32768*2 - 5", ty="i32")
dot("gfx942", "v_dot2_u32_u16 v3, v0, v1, v2", 0x80007FFF, 0x00020003, 5, 163842,
    "32767*3 + 32768*2 + 5, unsigned halves")
dot("gfx942", "v_dot8_i32_i4 v3, v0, v1, v2", NIBBLES, 0x12345678, 3, -8,
    "2*-8 - 2*7 + 1*6 - 1*5 + 7*4 + 0 - 1*2 - 8*1 + 3", ty="i32")
dot("*", "v_dot8_u32_u4 v3, v0, v1, v2", NIBBLES, 0x12345678, 3, 264,
    "2*8 + 14*7 + 1*6 + 15*5 + 7*4 + 0 + 15*2 + 8*1 + 3, unsigned nibbles")
for line, expect, why in (("v_dot2c_i32_i16 v3, v0, v1", 32865, "32765 + the accumulator 100"),
                          ("v_dot4c_i32_i8 v3, v0, v1", 359, "259 + the accumulator 100"),
                          ("v_dot8c_i32_i4 v3, v0, v1", 89, "-11 + the accumulator 100")):
    a, b = {"v_dot2c": (0x80007FFF, 0x00020003), "v_dot4c": (BYTES, 0x02030405),
            "v_dot8c": (NIBBLES, 0x12345678)}[line[:7]]
    add(case("gfx942", line, {"v0.u32": [a], "v1.u32": [b], "v3.i32": [100]},
             {"v3.i32": [expect]}, why))
add(case("gfx942", "v_dot4c_i32_i8_dpp v3, v0, v1 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf",
         {"v0.u32": [BYTES, 0x01010101], "v1.u32": [0x01010101], "v3.i32": [100]},
         {"v3.i32": [104, 100]},
         "DPP: lane 0 reads lane 1's v0 (1,1,1,1), lane 1 reads lane 0's (2+127-1-128 = 0)"))

# --- gfx12 mixed-signedness integer dots ---------------------------------------------------------
for neg, expect, why in (("", 33805, "both unsigned: 2*5 + 127*4 + 255*3 + 128*254 + 10"),
                         (" neg_lo:[1,0,0]", -31987, "S0 signed: 10 + 508 - 3 - 128*254 + 10"),
                         (" neg_lo:[0,1,0]", 1037, "S1 signed: 10 + 508 + 765 + 128*-2 + 10"),
                         (" neg_lo:[1,1,0]", 781, "both signed: 10 + 508 - 3 + -128*-2 + 10")):
    dot("gfx1201", f"v_dot4_i32_iu8 v3, v0, v1, v2{neg}", BYTES, 0xFE030405, 10, expect, why,
        ty="i32")
dot("gfx1201", "v_dot8_i32_iu4 v3, v0, v1, v2", NIBBLES, 0x12345678, 3, 264,
    "unsigned nibbles unless neg_lo says signed", ty="i32")
dot("gfx1201", "v_dot8_i32_iu4 v3, v0, v1, v2 neg_lo:[1,1,0]", NIBBLES, 0x12345678, 3, -8,
    "signed nibbles: S1's lowest (8) is -8", ty="i32")
dot("gfx1201", "v_dot8_i32_iu4 v3, v0, v1, v2 neg_lo:[1,0,0]", NIBBLES, 0x12345678, 3, 24,
    "S0 signed, S1 unsigned: 2*8 - 2*7 + 1*6 - 1*5 + 7*4 + 0 - 1*2 - 8*1 + 3", ty="i32")

# --- float dots --------------------------------------------------------------------------------
add(case("*", "v_dot2_f32_f16 v3, v0, v1, v2 neg_lo:[1,0,0] neg_hi:[0,1,0]",
         {"v0.h2": [(1.0, 2.0)], "v1.h2": [(3.0, 4.0)], "v2.f32": [0.5]}, {"v3.f32": [-10.5]},
         "neg_lo negates S0's low element, neg_hi S1's high one: -1*3 + 2*-4 + 0.5"))
add(case("gfx1201", "v_dot2_f32_f16 v3, v0, v1, v2 op_sel:[1,0,0] op_sel_hi:[0,1,1]",
         {"v0.h2": [(1.0, 2.0)], "v1.h2": [(3.0, 4.0)], "v2.f32": [0.5]}, {"v3.f32": [10.5]},
         "op_sel swaps which half of S0 each element reads: 2*3 + 1*4 + 0.5"))
add(case("gfx1201", "v_dot2_f32_f16 v3, v0, v1, v2 clamp",
         {"v0.h2": [(1.0, 2.0), (1.0, 0.0)], "v1.h2": [(3.0, 4.0), (-3.0, 0.0)],
          "v2.f32": [0.5, 0.0]}, {"v3.f32": [1.0, 0.0]}, "clamp to [0, 1]"))
# OCP 8-bit floats on gfx12: E4M3 0x38 = 1, 0x40 = 2, 0x30 = 0.5, 0xB8 = -1, 0x3C = 1.5,
# 0xC2 = -2.5, 0x7F = NaN; E5M2 0x3C = 1, 0x40 = 2, 0x38 = 0.5, 0xC2 = -3, 0x30 = 0.125, 0xB8 = -0.5
FP8 = 0xB8304038
BF8 = 0xC238403C
for line, a, b, expect, why in (
        ("v_dot4_f32_fp8_fp8", FP8, FP8, 7.75, "E4M3 squares 1 + 4 + 0.25 + 1, + 1.5"),
        ("v_dot4_f32_bf8_bf8", BF8, BF8, 15.75, "E5M2 squares 1 + 4 + 0.25 + 9, + 1.5"),
        ("v_dot4_f32_fp8_bf8", FP8, BF8, 9.75, "E4M3 x E5M2: 1 + 4 + 0.25 + 3, + 1.5"),
        ("v_dot4_f32_bf8_fp8", FP8, BF8, 7.625,
         "the same dwords read the other way: 0.5*1.5 + 2*2 + 0.125*1 + -0.5*-2.5, + 1.5"),
        ("v_dot4_f32_fp8_fp8", 0x3838387F, FP8, NAN, "E4M3 0x7F is NaN")):
    add(case("gfx1201", f"{line} v3, v0, v1, v2", {"v0.u32": [a], "v1.u32": [b], "v2.f32": [1.5]},
             {"v3.f32": [expect]}, why))

# --- gfx12 bf16 and 16-bit-result dots -----------------------------------------------------------
# bf16 bit patterns: 0x3F80 = 1, 0x4000 = 2, 0x4040 = 3, 0x4080 = 4, 0x3F00 = 0.5, 0x3F81 = 1 + 2^-7
add(case("gfx1201", "v_dot2_f32_bf16 v3, v0, v1, v2",
         {"v0.u32": [0x4000_3F80], "v1.u32": [0x4080_4040], "v2.f32": [0.25]},
         {"v3.f32": [11.25]}, "bf16 halves: 1*3 + 2*4 + 0.25"))
add(case("gfx1201", "v_dot2_f16_f16 v3, v0, v1, v2",
         {"v0.h2": [(1.0, 2.0)], "v1.h2": [(3.0, 4.0)], "v2.f16": [0.25], "v3.u32": [M32_KEEP]},
         {"v3.u32": [0x49A0]}, "f16 result 11.25 in the low half; the high half zeroed"))
add(case("gfx1201", "v_dot2_f16_f16 v3, v0, v1, v2 op_sel:[0,0,1,1]",
         {"v0.h2": [(1.0, 2.0)], "v1.h2": [(3.0, 4.0)], "v2.h2": [(0.0, -10.75)],
          "v3.u32": [0x0000_1234]},
         {"v3.u32": [0x3400_1234]}, "op_sel[2] reads S2's high half, op_sel[3] writes D's high half, "
                                     "keeping the low: 1*3 + 2*4 - 10.75 = 0.25"))
add(case("gfx1201", "v_dot2_bf16_bf16 v3, v0, v1, v2",
         {"v0.u32": [0x3F80_3F81], "v1.u32": [0x3B80_3F80], "v2.u32": [0x0000_0000]},
         {"v3.u32": [0x3F82]},
         "rounded once to bf16: (1 + 2^-7)*1 + 1*2^-8 lies halfway between 0x3F81 and 0x3F82 "
         "and goes to the even 0x3F82"))
