"""Hand-checked cases: the min/max families and their NaN and signed-zero rules.

CDNA3 ISA V_MIN_F32 / V_MAX_F32 and RDNA4 ISA V_MIN_NUM_F32 / V_MAX_NUM_F32: a NaN operand
yields the other one; -0 < +0. In gfx9's IEEE mode (compute kernels) a signaling NaN operand
gives that NaN quieted; RDNA4's *_num forms treat it as any NaN. V_MINIMUM/V_MAXIMUM (RDNA4,
IEEE 754-2019): NaN propagates. V_MED3 with a NaN operand is V_MIN3. Three-source forms apply
the named operations left to right: V_MAXMIN = min(max(S0, S1), S2), V_MINMAX = max(min(S0, S1),
S2), V_MINIMUMMAXIMUM = maximum(minimum(S0, S1), S2).
Sources v0, v1, v2; result v3.
"""
from __future__ import annotations

from isa_hand_runner import INF, NAN, both, case

CASES = []
SNAN32 = 0x7F800001       # a signaling NaN (quiet bit 22 clear)


def add(*cases):
    for c in cases:
        CASES.extend(c if isinstance(c, list) else [c])


def three(target, line, ty, a, b, c, expect, why):
    add(case(target, f"{line} v3, v0, v1, v2",
             {f"v0.{ty}": a, f"v1.{ty}": b, f"v2.{ty}": c}, {f"v3.{ty}": expect}, why))


# --- signed zeros and signaling NaN in the two-source forms ---------------------------------------
for t in ("f32", "f16"):
    add(both(f"v_min_{t} v3, v0, v1", f"v_min_num_{t} v3, v0, v1",
             {f"v0.{t}": [0.0, -0.0, 0.0], f"v1.{t}": [-0.0, 0.0, 0.0]},
             {f"v3.{t}": [-0.0, -0.0, 0.0]}, "-0 < +0 in either order"))
    add(both(f"v_max_{t} v3, v0, v1", f"v_max_num_{t} v3, v0, v1",
             {f"v0.{t}": [0.0, -0.0, -0.0], f"v1.{t}": [-0.0, 0.0, -0.0]},
             {f"v3.{t}": [0.0, 0.0, -0.0]}, "+0 > -0 in either order"))
add(case("gfx942", "v_max_f32 v3, v0, v1", {"v0.u32": [SNAN32, 0x3F800000],
                                             "v1.u32": [0x3F800000, SNAN32]},
         {"v3.u32": [0x7FC00001, 0x7FC00001]},
         "IEEE mode: a signaling NaN operand is returned quieted, not the other operand"))
add(case("gfx942", "v_min_f64 v[6:7], v[0:1], v[2:3]",
         {"v0.u64": [0x7FF0000000000001], "v2.f64": [1.0]}, {"v6.u64": [0x7FF8000000000001]},
         "IEEE mode, f64: the signaling NaN quieted"))
add(case("gfx1201", "v_max_num_f32 v3, v0, v1", {"v0.u32": [SNAN32, 0x3F800000],
                                                  "v1.u32": [0x3F800000, SNAN32]},
         {"v3.f32": [1.0, 1.0]}, "RDNA4 maxNum: a signaling NaN operand yields the other"))
add(both("v_med3_f32 v3, v0, v1, v2", "v_med3_num_f32 v3, v0, v1, v2",
         {"v0.f32": [1.0, NAN, 2.0, -0.0], "v1.f32": [5.0, 3.0, 2.0, 0.0],
          "v2.f32": [NAN, -1.0, 7.0, 0.0]},
         {"v3.f32": [1.0, -1.0, 2.0, 0.0]},
         "a NaN operand makes med3 the min3 of the others (1, not 5); ties; med3(-0, +0, +0)"))

# --- gfx12 three-source min/max ----------------------------------------------------------------
A = [1.0, NAN, -0.0, 5.0, -INF]
B = [3.0, 2.0, 0.0, 1.0, 4.0]
C = [2.0, 1.0, -0.0, NAN, -7.0]
for t in ("f32", "f16"):
    three("gfx1201", f"v_minmax_num_{t}", t, A, B, C, [2.0, 2.0, -0.0, 1.0, -7.0],
          "max(min(S0, S1), S2): NaN operands ignored; max(-0, -0) = -0")
    three("gfx1201", f"v_maxmin_num_{t}", t, A, B, C, [2.0, 1.0, -0.0, 5.0, -7.0],
          "min(max(S0, S1), S2): max(-0, +0) = +0 then min(+0, -0) = -0")
    three("gfx1201", f"v_minimum3_{t}", t, A, B, C, [1.0, NAN, -0.0, NAN, -INF],
          "IEEE 754-2019 minimum of three: NaN propagates, -0 < +0")
    three("gfx1201", f"v_maximum3_{t}", t, A, B, C, [3.0, NAN, 0.0, NAN, 4.0],
          "IEEE 754-2019 maximum of three: NaN propagates, +0 > -0")
    three("gfx1201", f"v_minimummaximum_{t}", t, A, B, C, [2.0, NAN, -0.0, NAN, -7.0],
          "maximum(minimum(S0, S1), S2)")
    three("gfx1201", f"v_maximumminimum_{t}", t, A, B, C, [2.0, NAN, -0.0, NAN, -7.0],
          "minimum(maximum(S0, S1), S2)")
three("gfx1201", "v_maxmin_i32", "i32", [-5, 7, -9], [3, 2, -8], [0, 100, -20], [0, 7, -20],
      "min(max(S0, S1), S2), signed")
three("gfx1201", "v_minmax_i32", "i32", [-5, 7, -9], [3, 2, -8], [0, 100, -20], [0, 100, -9],
      "max(min(S0, S1), S2), signed")
three("gfx1201", "v_maxmin_u32", "u32", [0xFFFFFFFF, 1], [2, 3], [5, 0], [5, 0],
      "min(max(S0, S1), S2), unsigned: 0xFFFFFFFF is the largest")
three("gfx1201", "v_minmax_u32", "u32", [0xFFFFFFFF, 1], [2, 3], [5, 0], [5, 1],
      "max(min(S0, S1), S2), unsigned")

# --- 16-bit integer three-source forms (gfx9 and gfx12) ---------------------------------------
for target in ("gfx942", "gfx1201"):
    three(target, "v_max3_i16", "i16", [-5, 0x7FFF], [3, -1], [0, 2], [3, 0x7FFF], "signed 16-bit")
    three(target, "v_min3_i16", "i16", [-5, 0x7FFF], [3, -1], [0, 2], [-5, -1], "signed 16-bit")
    three(target, "v_med3_i16", "i16", [-5, 0x7FFF], [3, -1], [0, 2], [0, 2], "signed 16-bit")
    three(target, "v_max3_u16", "u16", [0xFFFF, 1], [3, 2], [0, 7], [0xFFFF, 7],
          "unsigned 16-bit: 0xFFFF is the largest")
    three(target, "v_min3_u16", "u16", [0xFFFF, 1], [3, 2], [0, 7], [0, 1], "unsigned 16-bit")
    three(target, "v_med3_u16", "u16", [0xFFFF, 1], [3, 2], [0, 7], [3, 2], "unsigned 16-bit")
