"""Hand-checked cases: vector floating-point instructions (VOP1/VOP2/VOP3/VOP3P).

Each expected value carries its reason; IEEE-754 binary16/32/64 with round-to-nearest-even and
denormals kept (the descriptor's flush bits are off in these runs). Register conventions: the
sources are v0, v1, v2 (64-bit: v[0:1], v[2:3], v[4:5]); the result is v3 (64-bit: v[6:7]).
"""
from __future__ import annotations

from isa_hand_runner import INF, KEEP_MARK, NAN, both, case

D32 = 2.0 ** -149                 # smallest f32 denormal
D16 = 2.0 ** -24                  # smallest f16 denormal
ULP1 = 2.0 ** -23                 # f32 ulp of 1.0

CASES = []


def add(*cases):
    for c in cases:
        CASES.extend(c if isinstance(c, list) else [c])


def binary(t: str, name9: str, name12: str | None, a, b, expect, why: str):
    """``name v3, v0, v1`` on type ``t`` (f16/f32) with per-lane a, b."""
    line9 = f"{name9} v3, v0, v1"
    line12 = f"{name12} v3, v0, v1" if name12 else None
    add(both(line9, line12, {f"v0.{t}": a, f"v1.{t}": b}, {f"v3.{t}": expect}, why))


def binary64(name: str, a, b, expect, why: str, name12: str | None = None):
    line12 = f"{name12} v[6:7], v[0:1], v[2:3]" if name12 else None
    add(both(f"{name} v[6:7], v[0:1], v[2:3]", line12, {"v0.f64": a, "v2.f64": b},
             {"v6.f64": expect}, why))


def unary(t: str, name: str, a, expect, why: str, target: str = "*"):
    c = case(target, f"{name} v3, v0", {f"v0.{t}": a}, {f"v3.{t}": expect}, why)
    add(c)


def unary64(name: str, a, expect, why: str, src: str = "f64", dst: str = "f64"):
    dreg = "v[6:7]" if dst in ("f64",) else "v3"
    sreg = "v[0:1]" if src in ("f64",) else "v0"
    dkey = "v6" if dst in ("f64",) else "v3"
    add(case("*", f"{name} {dreg}, {sreg}", {f"v0.{src}": a}, {f"{dkey}.{dst}": expect}, why))


# --- add / sub / mul ------------------------------------------------------------------------------
for t in ("f16", "f32"):
    big = 65504.0 if t == "f16" else 3.0e38
    binary(t, f"v_add_{t}", None, [1.5, INF, NAN, big, -0.0],
           [2.25, -INF, 1.0, big, 0.0], [3.75, NAN, NAN, INF, 0.0],
           "inf + -inf = NaN; NaN propagates; max + max overflows to inf; -0 + +0 = +0 (RNE)")
    binary(t, f"v_sub_{t}", None, [1.0, INF, 0.0], [3.0, INF, 0.0], [-2.0, NAN, 0.0],
           "inf - inf = NaN; x - x = +0")
    binary(t, f"v_subrev_{t}", None, [1.0, 2.0], [3.0, -2.0], [2.0, -4.0], "subrev: v1 - v0")
    binary(t, f"v_mul_{t}", None, [2.0, 0.0, -3.0, -0.0], [0.5, INF, 4.0, 5.0],
           [1.0, NAN, -12.0, -0.0], "0 * inf = NaN; sign of a zero product is the xor")
binary("f32", "v_add_f32", None, [D32], [D32], [2 * D32], "denormals are kept: 2^-149 + 2^-149")
binary("f16", "v_mul_f16", None, [D16 * 4], [0.25], [D16], "f16 denormal product 2^-22/4 = 2^-24")
binary64("v_add_f64", [1.0, INF, 1e308], [2.0 ** -52, -INF, 1e308], [1.0 + 2.0 ** -52, NAN, INF],
         "1 + ulp exact; inf - inf NaN; overflow to inf")
binary64("v_mul_f64", [3.0, 0.0, -2.0], [0.5, -INF, 2.0 ** -1074], [1.5, NAN, -(2.0 ** -1073)],
         "0 * inf NaN; f64 denormal result kept")

# --- fused multiply-add ---------------------------------------------------------------------------
add(case("*", "v_fma_f32 v3, v0, v1, v2",
         {"v0.f32": [1.0 + ULP1, 2.0, INF], "v1.f32": [1.0 - ULP1, 3.0, 0.0],
          "v2.f32": [-1.0, 1.0, 1.0]},
         {"v3.f32": [-(2.0 ** -46), 7.0, NAN]},
         "fused: (1+u)(1-u)-1 = -u^2 exactly, an unfused multiply would round it to 0; inf*0 NaN"))
add(case("*", "v_fma_f16 v3, v0, v1, v2",
         {"v0.f16": [2.0, 1.0 + 2 ** -10], "v1.f16": [3.0, 1.0 - 2 ** -10], "v2.f16": [1.0, -1.0]},
         {"v3.f16": [7.0, -(2.0 ** -20)]}, "fused f16: -2^-20 is a representable f16 denormal"))
add(case("*", "v_fma_f64 v[6:7], v[0:1], v[2:3], v[4:5]",
         {"v0.f64": [1.0 + 2 ** -52, 2.0], "v2.f64": [1.0 - 2 ** -52, 3.0], "v4.f64": [-1.0, 1.0]},
         {"v6.f64": [-(2.0 ** -104), 7.0]}, "fused f64: the product is not rounded first"))
# One rounding, not two: the f32 sum rounded first to float64 can land exactly half-way between
# two f32 values (here 1 + 1.5u, with the exact value 2^-70 below it): rounding that tie to even
# gives 1 + 2u, the fused result is 1 + u. clang's correctly rounded f32 division relies on it.
add(case("*", "v_fma_f32 v3, v0, v1, v2",
         {"v0.f32": [(1.0 + ULP1) * 2.0 ** -12], "v1.f32": [(1.0 - ULP1) * 2.0 ** -12],
          "v2.f32": [1.0 + ULP1]},
         {"v3.f32": [1.0 + ULP1]},
         "(2^-24 - 2^-70) + (1 + u): just below the midpoint 1 + 1.5u, so 1 + u"))
add(case("*", "v_fma_f64 v[6:7], v[0:1], v[2:3], v[4:5]",
         {"v0.f64": [1.5 * 2.0 ** 1000, 2.0 ** -600 * (1 + 2.0 ** -52)],
          "v2.f64": [2.0 ** -1000 * (1 + 2.0 ** -52), 2.0 ** -475],
          "v4.f64": [-1.5, (2.0 ** 52 - 2) * 2.0 ** -1074]},
         {"v6.f64": [3 * 2.0 ** -53, (2.0 ** 52 - 1) * 2.0 ** -1074]},
         "a near the top of the range (its split must not overflow): 1.5(1 + 2^-52) - 1.5 is "
         "3 * 2^-53 exactly; a subnormal result in the top binade: c + just over half a "
         "quantum rounds up once"))
add(case("*", "v_fmac_f32 v2, v0, v1",
         {"v0.f32": [2.0, 3.0], "v1.f32": [4.0, -1.0], "v2.f32": [1.0, 3.0]},
         {"v2.f32": [9.0, 0.0]}, "fmac accumulates into its destination: 2*4+1, 3*-1+3"))
add(case("*", "v_fmaak_f32 v3, v0, v1, 0x40000000",
         {"v0.f32": [3.0], "v1.f32": [0.5]}, {"v3.f32": [3.5]}, "3*0.5 + K(2.0)"))
add(case("*", "v_fmamk_f32 v3, v0, 0x40000000, v1",
         {"v0.f32": [3.0], "v1.f32": [0.5]}, {"v3.f32": [6.5]}, "3*K(2.0) + 0.5"))
add(case("gfx942", "v_fmac_f64 v[6:7], v[0:1], v[2:3]",
         {"v0.f64": [2.0], "v2.f64": [4.0], "v6.f64": [0.5]}, {"v6.f64": [8.5]},
         "fmac f64: 2*4 + 0.5 (accumulator is the destination pair)"))
add(case("gfx1201", "v_fmac_f16 v3, v0, v1",
         {"v0.f16": [2.0], "v1.f16": [4.0], "v3.f16": [0.5]}, {"v3.f16": [8.5]}, "fmac f16"))
add(case("gfx1201", "v_fmaak_f16 v3, v0, v1, 0x4000",
         {"v0.f16": [3.0], "v1.f16": [0.5]}, {"v3.f16": [3.5]}, "3*0.5 + K(f16 2.0)"))
add(case("gfx1201", "v_fmamk_f16 v3, v0, 0x4000, v1",
         {"v0.f16": [3.0], "v1.f16": [0.5]}, {"v3.f16": [6.5]}, "3*K(f16 2.0) + 0.5"))

# --- min / max / med3 -----------------------------------------------------------------------------
# gfx9 v_max/v_min and gfx12 *_num: IEEE maxNum/minNum, a quiet NaN loses to a number.
for t in ("f16", "f32"):
    binary(t, f"v_max_{t}", f"v_max_num_{t}", [1.0, NAN, -INF, NAN], [2.0, 5.0, NAN, NAN],
           [2.0, 5.0, -INF, NAN], "maxNum: NaN operand ignored; both NaN -> NaN")
    binary(t, f"v_min_{t}", f"v_min_num_{t}", [1.0, NAN, -3.0], [2.0, 5.0, INF],
           [1.0, 5.0, -3.0], "minNum: NaN operand ignored")
    add(both(f"v_max3_{t} v3, v0, v1, v2", f"v_max3_num_{t} v3, v0, v1, v2",
             {f"v0.{t}": [1.0, NAN], f"v1.{t}": [7.0, -1.0], f"v2.{t}": [3.0, -2.0]},
             {f"v3.{t}": [7.0, -1.0]}, "largest of three; NaN ignored"))
    add(both(f"v_min3_{t} v3, v0, v1, v2", f"v_min3_num_{t} v3, v0, v1, v2",
             {f"v0.{t}": [1.0, NAN], f"v1.{t}": [7.0, -1.0], f"v2.{t}": [3.0, -2.0]},
             {f"v3.{t}": [1.0, -2.0]}, "smallest of three; NaN ignored"))
    add(both(f"v_med3_{t} v3, v0, v1, v2", f"v_med3_num_{t} v3, v0, v1, v2",
             {f"v0.{t}": [1.0, -INF, 9.0], f"v1.{t}": [5.0, INF, 2.0],
              f"v2.{t}": [3.0, 0.0, 4.0]},
             {f"v3.{t}": [3.0, 0.0, 4.0]}, "median of three"))
    # gfx12 IEEE 754-2019 maximum/minimum: NaN wins, and -0 < +0.
    add(case("gfx1201", f"v_maximum_{t} v3, v0, v1",
             {f"v0.{t}": [1.0, NAN, -0.0, 0.0], f"v1.{t}": [2.0, 5.0, 0.0, -0.0]},
             {f"v3.{t}": [2.0, NAN, 0.0, 0.0]},
             "maximum: NaN propagates; max(-0, +0) = +0 in either order"))
    add(case("gfx1201", f"v_minimum_{t} v3, v0, v1",
             {f"v0.{t}": [1.0, NAN, -0.0, 0.0], f"v1.{t}": [2.0, 5.0, 0.0, -0.0]},
             {f"v3.{t}": [1.0, NAN, -0.0, -0.0]},
             "minimum: NaN propagates; min(-0, +0) = -0 in either order"))
binary64("v_max_f64", [1.0, NAN], [2.0, 5.0], [2.0, 5.0], "maxNum f64", name12="v_max_num_f64")
binary64("v_min_f64", [1.0, NAN], [2.0, 5.0], [1.0, 5.0], "minNum f64", name12="v_min_num_f64")
add(case("gfx1201", "v_maximum_f64 v[6:7], v[0:1], v[2:3]",
         {"v0.f64": [1.0, NAN, -0.0], "v2.f64": [2.0, 5.0, 0.0]}, {"v6.f64": [2.0, NAN, 0.0]},
         "maximum f64: NaN propagates, +0 > -0"))
add(case("gfx1201", "v_minimum_f64 v[6:7], v[0:1], v[2:3]",
         {"v0.f64": [1.0, NAN, 0.0], "v2.f64": [2.0, 5.0, -0.0]}, {"v6.f64": [1.0, NAN, -0.0]},
         "minimum f64: NaN propagates, -0 < +0"))

# --- legacy multiply ------------------------------------------------------------------------------
binary("f32", "v_mul_legacy_f32", "v_mul_dx9_zero_f32", [0.0, NAN, 2.0, -0.0],
       [INF, 0.0, 3.0, INF], [0.0, 0.0, 6.0, 0.0],
       "DX9 rule: a zero operand gives +0 even against inf or NaN")

# --- rounding -------------------------------------------------------------------------------------
for t in ("f16", "f32"):
    unary(t, f"v_floor_{t}", [-1.5, 2.75, -0.0, INF], [-2.0, 2.0, -0.0, INF], "floor keeps -0, inf")
    unary(t, f"v_ceil_{t}", [-1.5, 2.25, -0.25], [-1.0, 3.0, -0.0], "ceil(-0.25) = -0")
    unary(t, f"v_trunc_{t}", [-1.5, 2.75, NAN], [-1.0, 2.0, NAN], "toward zero; NaN stays NaN")
    unary(t, f"v_rndne_{t}", [2.5, 3.5, -0.5, 1.25], [2.0, 4.0, -0.0, 1.0], "ties to even")
    unary(t, f"v_fract_{t}", [1.25, -0.25, INF, -2.0], [0.25, 0.75, NAN, 0.0],
          "x - floor(x); fract(inf) = NaN")
unary64("v_floor_f64", [-1.5, 2.75], [-2.0, 2.0], "floor f64")
unary64("v_ceil_f64", [-1.5, 2.25], [-1.0, 3.0], "ceil f64")
unary64("v_trunc_f64", [-1.5, 2.75], [-1.0, 2.0], "trunc f64")
unary64("v_rndne_f64", [2.5, 3.5], [2.0, 4.0], "rndne f64 ties to even")
unary64("v_fract_f64", [1.25, -0.25, INF], [0.25, 0.75, NAN], "fract f64")

# --- transcendentals ------------------------------------------------------------------------------
for t in ("f16", "f32"):
    unary(t, f"v_rcp_{t}", [2.0, 0.0, -0.0, INF, 0.25], [0.5, INF, -INF, 0.0, 4.0],
          "1/0 = +inf, 1/-0 = -inf, 1/inf = 0")
    unary(t, f"v_rsq_{t}", [4.0, 0.0, -1.0, 0.25], [0.5, INF, NAN, 2.0],
          "rsq(0) = inf, rsq(<0) = NaN")
    unary(t, f"v_sqrt_{t}", [4.0, -1.0, INF, 0.25], [2.0, NAN, INF, 0.5], "sqrt(-1) NaN")
    unary(t, f"v_exp_{t}", [3.0, -1.0, -INF, 0.0], [8.0, 0.5, 0.0, 1.0], "2^x; 2^-inf = 0")
    unary(t, f"v_log_{t}", [8.0, 1.0, 0.0, -1.0], [3.0, 0.0, -INF, NAN], "log2; log2(0) = -inf")
    unary(t, f"v_sin_{t}", [0.25, -0.25, 0.0, INF], [1.0, -1.0, 0.0, NAN],
          "sin(2*pi*x): the input is in revolutions; sin(inf) NaN")
    unary(t, f"v_cos_{t}", [0.0, 0.5, -0.5], [1.0, -1.0, -1.0], "cos(2*pi*x)")
unary("f32", "v_rcp_iflag_f32", [2.0, 0.0, -4.0], [0.5, INF, -0.25], "rcp (integer-flag variant)")
unary("f32", "v_exp_f32", [200.0, -200.0], [INF, 0.0], "2^200 overflows f32; 2^-200 underflows")
unary("f32", "v_exp_legacy_f32", [3.0, -1.0], [8.0, 0.5], "2^x", target="gfx942")
unary("f32", "v_log_legacy_f32", [8.0, 1.0], [3.0, 0.0], "log2", target="gfx942")
unary64("v_rcp_f64", [2.0, 0.0, INF], [0.5, INF, 0.0], "rcp f64")
unary64("v_rsq_f64", [4.0, 0.0, -1.0], [0.5, INF, NAN], "rsq f64")
unary64("v_sqrt_f64", [4.0, -1.0, 2.25], [2.0, NAN, 1.5], "sqrt f64")

# gfx12 VALU ops with scalar operands (VOP3 "v_s_*"): SGPR in, SGPR out.
for t, big in (("f32", 8.0), ("f16", 8.0)):
    for name, a, want, why in (("v_s_exp", 3.0, 8.0, "2^3"), ("v_s_log", 8.0, 3.0, "log2 8"),
                               ("v_s_rcp", 0.0, INF, "1/0 = inf"), ("v_s_rsq", 4.0, 0.5,
                                                                    "1/sqrt 4"),
                               ("v_s_sqrt", -1.0, NAN, "sqrt(-1) = NaN")):
        add(case("gfx1201", f"{name}_{t} s4, s0", {f"s0.{t}": a}, {f"s4.{t}": want}, why))

# --- frexp / ldexp --------------------------------------------------------------------------------
for t in ("f16", "f32"):
    unary(t, f"v_frexp_mant_{t}", [12.0, -0.75, INF, 0.0], [0.75, -0.75, INF, 0.0],
          "12 = 0.75 * 2^4; inf passes through")
it = {"f16": "i16", "f32": "i32"}
add(case("*", "v_frexp_exp_i16_f16 v3, v0", {"v0.f16": [12.0, 0.75, INF, D16]},
         {"v3.i16": [4, 0, 0, -23]}, "12 = 0.75*2^4; inf -> 0; 2^-24 = 0.5*2^-23"))
add(case("*", "v_frexp_exp_i32_f32 v3, v0", {"v0.f32": [12.0, 0.75, INF, D32]},
         {"v3.i32": [4, 0, 0, -148]}, "2^-149 = 0.5 * 2^-148"))
add(case("*", "v_frexp_mant_f64 v[6:7], v[0:1]", {"v0.f64": [12.0, -3.0]},
         {"v6.f64": [0.75, -0.75]}, "mantissa in [0.5, 1)"))
add(case("*", "v_frexp_exp_i32_f64 v3, v[0:1]", {"v0.f64": [12.0, 2.0 ** -1074]},
         {"v3.i32": [4, -1073]}, "exponent; the smallest denormal is 0.5 * 2^-1073"))
add(case("*", "v_ldexp_f32 v3, v0, v1",
         {"v0.f32": [1.5, 1.0, 1.0, 1.0], "v1.i32": [3, -149, 200, -150]},
         {"v3.f32": [12.0, D32, INF, 0.0]}, "x*2^n: denormal result, overflow to inf, underflow"))
add(case("*", "v_ldexp_f16 v3, v0, v1", {"v0.f16": [1.5, 1.0], "v1.i16": [3, 16]},
         {"v3.f16": [12.0, INF]}, "2^16 > f16 max"))
add(case("*", "v_ldexp_f64 v[6:7], v[0:1], v2", {"v0.f64": [1.5, 1.0], "v2.i32": [-1, 1024]},
         {"v6.f64": [0.75, INF]}, "2^1024 overflows f64"))

# --- conversions ----------------------------------------------------------------------------------
add(case("*", "v_cvt_f16_f32 v3, v0", {"v0.f32": [1.5, 65520.0, 1e-8, NAN, 65519.0]},
         {"v3.f16": [1.5, INF, 0.0, NAN, 65504.0]},
         "65520 is the halfway point above f16 max: RNE goes to inf; 65519 rounds down; "
         "1e-8 is below half the smallest f16 denormal (2^-25)"))
add(case("*", "v_cvt_f32_f16 v3, v0", {"v0.f16": [D16, -INF, 65504.0]},
         {"v3.f32": [D16, -INF, 65504.0]}, "exact: f16 denormal 2^-24 is a normal f32"))
add(case("*", "v_cvt_f16_i16 v3, v0", {"v0.i16": [-3, 32767]}, {"v3.f16": [-3.0, 32768.0]},
         "32767 rounds to 32768 (f16 spacing 32 there)"))
add(case("*", "v_cvt_f16_u16 v3, v0", {"v0.u16": [7, 0xFFFF]}, {"v3.f16": [7.0, INF]},
         "65535 is nearer 65536 than 65504: RNE overflows to inf"))
add(case("*", "v_cvt_i16_f16 v3, v0", {"v0.f16": [-2.5, NAN, 65504.0, -INF]},
         {"v3.i16": [-2, 0, 32767, -32768]}, "truncates; NaN -> 0; saturates"))
add(case("*", "v_cvt_u16_f16 v3, v0", {"v0.f16": [2.75, -1.0, INF, NAN]},
         {"v3.u16": [2, 0, 0xFFFF, 0]}, "truncates; negative -> 0; inf saturates; NaN -> 0"))
add(case("*", "v_cvt_i32_f32 v3, v0", {"v0.f32": [-2.7, NAN, 3e9, -INF]},
         {"v3.i32": [-2, 0, 0x7FFFFFFF, -0x80000000]}, "truncates; NaN -> 0; saturates"))
add(case("*", "v_cvt_u32_f32 v3, v0", {"v0.f32": [2.7, -1.0, INF, NAN]},
         {"v3.u32": [2, 0, 0xFFFFFFFF, 0]}, "negative -> 0; inf saturates; NaN -> 0"))
add(case("*", "v_cvt_f32_i32 v3, v0", {"v0.i32": [-7, 0x7FFFFFFF, 16777217]},
         {"v3.f32": [-7.0, 2147483648.0, 16777216.0]}, "RNE: 2^31-1 -> 2^31; 2^24+1 -> 2^24"))
add(case("*", "v_cvt_f32_u32 v3, v0", {"v0.u32": [0xFFFFFFFF, 7]}, {"v3.f32": [4294967296.0, 7.0]},
         "unsigned: 2^32-1 rounds to 2^32"))
add(case("*", "v_cvt_f64_f32 v[6:7], v0", {"v0.f32": [D32, -INF, 0.1]},
         {"v6.f64": [D32, -INF, float(__import__("numpy").float32(0.1))]},
         "exact widening; an f32 denormal is a normal f64"))
add(case("*", "v_cvt_f32_f64 v3, v[0:1]", {"v0.f64": [1e300, 1.0 + 2.0 ** -30, -1e-300]},
         {"v3.f32": [INF, 1.0, -0.0]}, "overflow to inf; RNE; underflow keeps the sign"))
add(case("*", "v_cvt_f64_i32 v[6:7], v0", {"v0.i32": [-1, -0x80000000]},
         {"v6.f64": [-1.0, -2147483648.0]}, "exact, signed"))
add(case("*", "v_cvt_f64_u32 v[6:7], v0", {"v0.u32": [0xFFFFFFFF]}, {"v6.f64": [4294967295.0]},
         "exact, unsigned"))
add(case("*", "v_cvt_i32_f64 v3, v[0:1]", {"v0.f64": [-2.5, 1e10, NAN]},
         {"v3.i32": [-2, 0x7FFFFFFF, 0]}, "truncates; saturates; NaN -> 0"))
add(case("*", "v_cvt_u32_f64 v3, v[0:1]", {"v0.f64": [2.5, -3.0, 1e10]},
         {"v3.u32": [2, 0, 0xFFFFFFFF]}, "negative -> 0; saturates"))
for k, want in enumerate((68.0, 51.0, 34.0, 17.0)):
    add(case("*", f"v_cvt_f32_ubyte{k} v3, v0", {"v0.u32": [0x11223344]}, {"v3.f32": [want]},
             f"byte {k} of 0x11223344"))
add(case("gfx942", "v_cvt_flr_i32_f32 v3, v0", {"v0.f32": [-1.5, 2.7, NAN]},
         {"v3.i32": [-2, 2, 0]}, "floor then convert"))
add(case("gfx942", "v_cvt_rpi_i32_f32 v3, v0", {"v0.f32": [-1.5, 2.5, 2.4]},
         {"v3.i32": [-1, 3, 2]}, "floor(x + 0.5)"))
add(both("v_cvt_pkrtz_f16_f32 v3, v0, v1", "v_cvt_pk_rtz_f16_f32 v3, v0, v1",
         {"v0.f32": [1.0 + 2.0 ** -12, 65520.0], "v1.f32": [-2.0, -1e10]},
         {"v3.h2": [(1.0, -2.0), (65504.0, -65504.0)]},
         "round toward zero: 1+2^-12 -> 1.0, 65520 -> 65504 (not inf), -1e10 -> -max"))
add(case("*", "v_pack_b32_f16 v3, v0, v1", {"v0.f16": [1.5], "v1.f16": [-2.0]},
         {"v3.h2": [(1.5, -2.0)]}, "low halves of both sources, v0 in the low half"))

# --- division helpers -----------------------------------------------------------------------------
for t in ("f16", "f32"):
    add(case("*", f"v_div_fixup_{t} v3, v0, v1, v2",
             {f"v0.{t}": [2.0, 1.0, 1.0, 1.0, 1.0], f"v1.{t}": [4.0, 0.0, INF, NAN, 0.0],
              f"v2.{t}": [8.0, 0.0, 1.0, 1.0, -1.0]},
             {f"v3.{t}": [2.0, NAN, 0.0, NAN, -INF]},
             "S0 quotient, S1 denominator, S2 numerator: 0/0 NaN, 1/inf 0, NaN in, -1/0 -inf"))
add(case("*", "v_div_fixup_f64 v[6:7], v[0:1], v[2:3], v[4:5]",
         {"v0.f64": [2.0, 1.0, 1.0], "v2.f64": [4.0, 0.0, INF], "v4.f64": [8.0, 0.0, 1.0]},
         {"v6.f64": [2.0, NAN, 0.0]}, "0/0 NaN, 1/inf 0"))
add(both("v_div_fmas_f32 v3, v0, v1, v2", "v_div_fmas_f32 v3, v0, v1, v2",
         {"v0.f32": [2.0, 1.5], "v1.f32": [3.0, 2.0], "v2.f32": [1.0, -1.0], "vcc": "00"},
         {"v3.f32": [7.0, 2.0]}, "VCC clear: a plain fma"))
add(case("*", "v_div_fmas_f64 v[6:7], v[0:1], v[2:3], v[4:5]",
         {"v0.f64": [2.0], "v2.f64": [3.0], "v4.f64": [1.0], "vcc": "0"}, {"v6.f64": [7.0]},
         "VCC clear: a plain fma"))
add(both("v_div_fmas_f32 v3, v0, v1, v2", "v_div_fmas_f32 v3, v0, v1, v2",
         {"v0.f32": [2.0 ** -50], "v1.f32": [2.0 ** -50], "v2.f32": [2.0 ** -63 + 2.0 ** -86],
          "vcc": "1"},
         {"v3.f32": [2.0 ** -127 + 2.0 ** -149]},
         "VCC set, S2's exponent below the bias: (2^-63 + 2^-86 + 2^-100) * 2^-64 rounded once "
         "into the denormals (2^-150 + 2^-164 is above half a quantum: up); rounding the fma "
         "to f32 first drops 2^-100 and the scaled tie goes to even"))
add(case("*", "v_div_fmas_f64 v[6:7], v[0:1], v[2:3], v[4:5]",
         {"v0.f64": [2.0 ** -503], "v2.f64": [2.0 ** -503], "v4.f64": [2.0 ** -900 + 2.0 ** -947],
          "vcc": "1"},
         {"v6.f64": [2.0 ** -1028 + 2.0 ** -1074]},
         "the f64 form: (2^-900 + 2^-947 + 2^-1006) * 2^-128 is 2^46 + 1/2 + 2^-60 quanta "
         "(2^-1074): rounded once, up; rounding the fma to f64 first drops 2^-1006 and the "
         "scaled tie goes to even"))
add(both("v_div_scale_f32 v3, vcc, v0, v1, v2", "v_div_scale_f32 v3, vcc_lo, v0, v1, v2",
         {"v0.f32": [3.0, 1.0], "v1.f32": [3.0, 3.0], "v2.f32": [1.0, 1.0]},
         {"v3.f32": [3.0, 1.0], "vcc": "00"},
         "ordinary operands need no scaling: S0 returned, VCC clear"))
add(both("v_div_scale_f64 v[6:7], vcc, v[0:1], v[2:3], v[4:5]",
         "v_div_scale_f64 v[6:7], vcc_lo, v[0:1], v[2:3], v[4:5]",
         {"v0.f64": [3.0], "v2.f64": [3.0], "v4.f64": [1.0]}, {"v6.f64": [3.0], "vcc": "0"},
         "ordinary operands need no scaling"))

# --- dot products, mixed precision, packed --------------------------------------------------------
add(case("*", "v_dot2_f32_f16 v3, v0, v1, v2",
         {"v0.h2": [(1.5, -2.0)], "v1.h2": [(4.0, 0.25)], "v2.f32": [10.0]},
         {"v3.f32": [15.5]}, "1.5*4 + -2*0.25 + 10"))
add(case("gfx942", "v_dot2c_f32_f16 v3, v0, v1",
         {"v0.h2": [(1.5, -2.0)], "v1.h2": [(4.0, 0.25)], "v3.f32": [10.0]},
         {"v3.f32": [15.5]}, "accumulates into the destination"))
add(case("*", "v_fma_mix_f32 v3, v0, v1, v2 op_sel_hi:[1,1,0]",
         {"v0.f16": [2.0], "v1.f16": [3.0], "v2.f32": [0.5]}, {"v3.f32": [6.5]},
         "op_sel_hi 1: that source is the f16 in its low half; 0: an f32"))
add(case("*", "v_fma_mixlo_f16 v3, v0, v1, v2",
         {"v0.f32": [2.0], "v1.f32": [3.0], "v2.f32": [1.0], "v3.b32": [0xAAAA5555]},
         {"v3.b32": [0xAAAA4700]}, "f16 7.0 = 0x4700 into the low half; high half kept"))
add(case("*", "v_fma_mixhi_f16 v3, v0, v1, v2",
         {"v0.f32": [2.0], "v1.f32": [3.0], "v2.f32": [1.0], "v3.b32": [0xAAAA5555]},
         {"v3.b32": [0x47005555]}, "f16 7.0 into the high half; low half kept"))
add(case("*", "v_pk_add_f16 v3, v0, v1", {"v0.h2": [(1.5, 65504.0)], "v1.h2": [(0.25, 65504.0)]},
         {"v3.h2": [(1.75, INF)]}, "each half; the high half overflows to inf"))
add(case("*", "v_pk_mul_f16 v3, v0, v1", {"v0.h2": [(1.5, 0.0)], "v1.h2": [(-2.0, INF)]},
         {"v3.h2": [(-3.0, NAN)]}, "each half; 0*inf NaN"))
add(case("*", "v_pk_fma_f16 v3, v0, v1, v2",
         {"v0.h2": [(2.0, -1.0)], "v1.h2": [(3.0, 4.0)], "v2.h2": [(1.0, 0.5)]},
         {"v3.h2": [(7.0, -3.5)]}, "each half fused"))
add(both("v_pk_max_f16 v3, v0, v1", "v_pk_max_num_f16 v3, v0, v1",
         {"v0.h2": [(1.0, NAN)], "v1.h2": [(2.0, -3.0)]}, {"v3.h2": [(2.0, -3.0)]},
         "maxNum per half"))
add(both("v_pk_min_f16 v3, v0, v1", "v_pk_min_num_f16 v3, v0, v1",
         {"v0.h2": [(1.0, NAN)], "v1.h2": [(2.0, -3.0)]}, {"v3.h2": [(1.0, -3.0)]},
         "minNum per half"))
add(case("gfx1201", "v_pk_maximum_f16 v3, v0, v1", {"v0.h2": [(1.0, NAN)], "v1.h2": [(2.0, -3.0)]},
         {"v3.h2": [(2.0, NAN)]}, "maximum: NaN propagates"))
add(case("gfx1201", "v_pk_minimum_f16 v3, v0, v1", {"v0.h2": [(1.0, NAN)], "v1.h2": [(2.0, -3.0)]},
         {"v3.h2": [(1.0, NAN)]}, "minimum: NaN propagates"))
# gfx942 packed f32 on register pairs: v[0:1] holds (lo, hi).
add(case("gfx942", "v_pk_add_f32 v[6:7], v[0:1], v[2:3]",
         {"v0.f32": [1.5], "v1.f32": [INF], "v2.f32": [4.0], "v3.f32": [-INF]},
         {"v6.f32": [5.5], "v7.f32": [NAN]}, "element-wise; inf + -inf NaN"))
add(case("gfx942", "v_pk_mul_f32 v[6:7], v[0:1], v[2:3]",
         {"v0.f32": [1.5], "v1.f32": [-2.0], "v2.f32": [4.0], "v3.f32": [0.25]},
         {"v6.f32": [6.0], "v7.f32": [-0.5]}, "element-wise"))
add(case("gfx942", "v_pk_fma_f32 v[6:7], v[0:1], v[2:3], v[4:5]",
         {"v0.f32": [2.0], "v1.f32": [1.0 + ULP1], "v2.f32": [3.0], "v3.f32": [1.0 - ULP1],
          "v4.f32": [1.0], "v5.f32": [-1.0]},
         {"v6.f32": [7.0], "v7.f32": [-(2.0 ** -46)]}, "element-wise, fused"))
add(case("gfx942", "v_pk_mov_b32 v[6:7], v[0:1], v[2:3] op_sel:[1,0]",
         {"v0.u32": [11], "v1.u32": [22], "v2.u32": [33], "v3.u32": [44]},
         {"v6.u32": [22], "v7.u32": [33]}, "op_sel picks the hi dword of src0 for the low result"))

# --- partial EXEC on a float op -------------------------------------------------------------------
add(case("*", "v_add_f32 v3, v0, v1",
         {"v0.f32": [1.0], "v1.f32": [2.0], "exec": "1011"},
         {"v3.f32": [3.0, KEEP_MARK, 3.0, 3.0, KEEP_MARK]}, "lanes outside EXEC keep their value"))

# --- VOP3P modifiers: neg_lo, the third source's op_sel_hi bit ------------------------------------
add(case("*", "v_pk_fma_f16 v3, v0, v1, v2 neg_lo:[1,0,0] neg_hi:[0,0,1]",
         {"v0.h2": [(2.0, -1.0)], "v1.h2": [(3.0, 4.0)], "v2.h2": [(1.0, 0.5)]},
         {"v3.h2": [(-5.0, -4.5)]}, "lo: -2*3+1; hi: -1*4-0.5"))
add(case("*", "v_pk_fma_f16 v3, v0, v1, v2 op_sel_hi:[1,1,0]",
         {"v0.h2": [(2.0, -1.0)], "v1.h2": [(3.0, 4.0)], "v2.h2": [(1.0, 0.5)]},
         {"v3.h2": [(7.0, -3.0)]}, "op_sel_hi[2] = 0: the high result reads src2's LOW half"))
add(case("*", "v_fma_mix_f32 v3, -v0, v1, |v2| op_sel_hi:[1,1,1]",
         {"v0.f16": [2.0], "v1.f16": [3.0], "v2.f16": [-1.0]}, {"v3.f32": [-5.0]},
         "all three f16 (op_sel_hi bit 2 lives in word 0); -2*3 + |-1|"))

# --- gfx12 dual issue (VOPD): both halves read their sources before either writes -----------------
# X: v0 = f(v1, v2); Y: v3 = f(v4, v5) (the halves must use different VGPR banks)
for line, inputs, expect, why in (
        ("v_dual_add_f32 v0, v1, v2 :: v_dual_mul_f32 v3, v4, v5",
         {"v1.f32": [1.5], "v2.f32": [2.25], "v4.f32": [0.0], "v5.f32": [INF]},
         {"v0.f32": [3.75], "v3.f32": [NAN]}, "X adds; Y: 0 * inf = NaN"),
        ("v_dual_sub_f32 v0, v1, v2 :: v_dual_subrev_f32 v3, v4, v5",
         {"v1.f32": [1.5], "v2.f32": [2.25], "v4.f32": [0.5], "v5.f32": [2.0]},
         {"v0.f32": [-0.75], "v3.f32": [1.5]}, "X: v1 - v2; Y: v5 - v4"),
        ("v_dual_max_num_f32 v0, v1, v2 :: v_dual_min_num_f32 v3, v4, v5",
         {"v1.f32": [NAN], "v2.f32": [2.0], "v4.f32": [NAN], "v5.f32": [-1.0]},
         {"v0.f32": [2.0], "v3.f32": [-1.0]}, "maxNum/minNum ignore a NaN"),
        ("v_dual_mul_dx9_zero_f32 v0, v1, v2 :: v_dual_add_nc_u32 v3, v4, v5",
         {"v1.f32": [0.0], "v2.f32": [INF], "v4.u32": [0xFFFFFFFF], "v5.u32": [2]},
         {"v0.f32": [0.0], "v3.u32": [1]}, "DX9 0 * inf = 0; integer add wraps"),
        ("v_dual_fmac_f32 v0, v1, v2 :: v_dual_lshlrev_b32 v3, v4, v5",
         {"v0.f32": [1.0], "v1.f32": [2.0], "v2.f32": [3.0], "v4.u32": [4], "v5.u32": [1]},
         {"v0.f32": [7.0], "v3.u32": [16]}, "X: v0 += v1*v2; Y: v5 << v4"),
        ("v_dual_fmaak_f32 v0, v1, v2, 0x40000000 :: v_dual_and_b32 v3, v4, v5",
         {"v1.f32": [3.0], "v2.f32": [0.5], "v4.u32": [0xF0], "v5.u32": [0x3C]},
         {"v0.f32": [3.5], "v3.u32": [0x30]}, "X: 3*0.5 + K(2); Y: and"),
        ("v_dual_fmamk_f32 v0, v1, 0x40000000, v2 :: v_dual_cndmask_b32 v3, v4, v5",
         {"v1.f32": [3.0], "v2.f32": [0.5], "v4.u32": [1], "v5.u32": [2], "vcc": "10"},
         {"v0.f32": [6.5], "v3.u32": [2, 1]}, "X: 3*K(2) + 0.5; Y: VCC ? v5 : v4"),
        ("v_dual_cndmask_b32 v0, v1, v2 :: v_dual_mov_b32 v3, v0",
         {"v0.u32": [9], "v1.u32": [1], "v2.u32": [2], "vcc": "01"},
         {"v0.u32": [1, 2], "v3.u32": [9, 9]}, "Y reads v0 before X writes it")):
    add(case("gfx1201", line, inputs, expect, why))

# --- denormal flush mode (kernel descriptor FLOAT_DENORM_MODE_32 / _16_64 = flush) ----------------
N32 = 2.0 ** -126                 # smallest normal f32
for target in ("gfx942", "gfx1201"):
    add(case(target, "v_add_f32 v3, v0, v1",
             {"v0.f32": [D32, -D32, N32, D32], "v1.f32": [D32, -D32, 0.0, 1.0]},
             {"v3.f32": [0.0, -0.0, N32, 1.0]},
             "flush: a denormal result becomes a zero of its sign; normals are untouched",
             ftz=True))
    add(case(target, "v_mul_f32 v3, v0, v1", {"v0.f32": [2.0 ** -130], "v1.f32": [2.0 ** 20]},
             {"v3.f32": [0.0]},
             "inputs are flushed too: 2^-130 (denormal) reads as 0, not 2^-110", ftz=True))
    add(case(target, "v_fma_f64 v[6:7], v[0:1], v[2:3], v[4:5]",
             {"v0.f64": [2.0 ** -1074, 2.0 ** -1022], "v2.f64": [1.0, 1.0],
              "v4.f64": [0.0, 0.0]},
             {"v6.f64": [0.0, 2.0 ** -1022]}, "f64 flush (the 16/64 mode)", ftz=True))
    add(case(target, "v_add_f16 v3, v0, v1", {"v0.f16": [D16, 2.0 ** -14], "v1.f16": [D16, 0.0]},
             {"v3.f16": [0.0, 2.0 ** -14]}, "f16 follows the 16/64 mode", ftz=True))

# --- signed zeros, NaN and infinities through the transcendentals and rounding --------------------
unary("f32", "v_rsq_f32", [-0.0], [-INF], "rsq(-0) = -inf")
unary64("v_rcp_f64", [-0.0], [-INF], "rcp(-0) = -inf")
unary64("v_sqrt_f64", [-0.0], [-0.0], "sqrt(-0) = -0")
unary("f32", "v_log_f32", [-0.0, INF], [-INF, INF], "log2(-0) = -inf; log2(inf) = inf")
unary("f32", "v_exp_f32", [NAN, INF], [NAN, INF], "2^NaN NaN; 2^inf inf")
unary("f32", "v_trunc_f32", [-0.5], [-0.0], "trunc keeps the sign of zero")
unary64("v_ceil_f64", [-0.5], [-0.0], "ceil(-0.5) = -0")
unary64("v_rndne_f64", [-0.5, 0.5, 1.5], [-0.0, 0.0, 2.0], "ties to even, sign kept")
unary("f32", "v_frexp_mant_f32", [NAN, -INF, D32], [NAN, -INF, 0.5],
      "denormal 2^-149 = 0.5 * 2^-148")
unary("f32", "v_fract_f32", [-(2.0 ** -30)], [1.0 - 2.0 ** -24],
      "1 - 2^-30 rounds to 1.0; fract clamps to the largest float below 1")
unary("f32", "v_sin_f32", [256.25], [1.0], "periodic in revolutions: sin(2*pi*256.25) = 1")
add(case("*", "v_ldexp_f32 v3, v0, v1", {"v0.f32": [0.0, INF, -0.0], "v1.i32": [1000, -1000, 5]},
         {"v3.f32": [0.0, INF, -0.0]}, "zeros and infinities do not scale"))
add(case("*", "v_cvt_f32_f64 v3, v[0:1]", {"v0.f64": [NAN, 2.0 ** -150, 3 * 2.0 ** -151]},
         {"v3.f32": [NAN, 0.0, D32]},
          "2^-150 is halfway to the smallest denormal: ties to even gives 0; "
          "1.5 * 2^-150 rounds up"))
add(case("*", "v_cvt_f16_f32 v3, v0", {"v0.f32": [2.0 ** -25, 3 * 2.0 ** -26, -65536.0]},
         {"v3.f16": [0.0, D16, -INF]},
         "f16 denormal rounding: 2^-25 ties to 0, 0.75 * 2^-24 rounds to 2^-24; -65536 overflows"))
add(case("*", "v_cvt_u32_f64 v3, v[0:1]", {"v0.f64": [4294967295.5, -0.5]},
         {"v3.u32": [0xFFFFFFFF, 0]}, "truncates before the range check"))

# --- VOP3 output modifiers and input modifiers ----------------------------------------------------
# An output modifier scales only with output denormals off for the result's type and MODE.IEEE
# off (gfx12: no IEEE mode); a kernel's usual MODE (IEEE on, denormals kept) ignores it.
# MODE 0: round to nearest, denormals flushed, DX10_CLAMP and IEEE off.
add(case("gfx942", "v_add_f32_e64 v3, v0, v1 mul:4",
         {"mode": 0, "v0.f32": [1.0e38], "v1.f32": [1.0e38]},
         {"v3.f32": [INF]}, "omod x4 after the add overflows to inf"))
add(case("gfx942", "v_mul_f32_e64 v3, v0, v1 div:2", {"mode": 0, "v0.f32": [3.0], "v1.f32": [1.0]},
         {"v3.f32": [1.5]}, "omod /2"))
add(case("gfx942", "v_add_f32_e64 v3, v0, v1 mul:4", {"v0.f32": [1.0e38], "v1.f32": [1.0e38]},
         {"v3.f32": [2.0e38]}, "IEEE on and denormals kept (the usual MODE): omod ignored"))
add(case("gfx942", "v_mul_f32_e64 v3, v0, v1 mul:2", {"mode": 0x200, "v0.f32": [3.0],
                                                        "v1.f32": [1.0]},
         {"v3.f32": [3.0]}, "MODE.IEEE on: omod ignored even with denormals flushed"))
add(case("gfx942", "v_mul_f32_e64 v3, v0, v1 mul:2", {"mode": 0xF0, "v0.f32": [3.0],
                                                        "v1.f32": [1.0]},
         {"v3.f32": [3.0]}, "f32 output denormals kept: omod ignored even with IEEE off"))
add(case("gfx942", "v_mul_f32_e64 v3, v0, v1 mul:2", {"mode": 0xC0, "v0.f32": [3.0],
                                                        "v1.f32": [1.0]},
         {"v3.f32": [6.0]}, "f32 denormals flushed (f64/f16 kept), IEEE off: omod applies to f32"))
add(case("gfx942", "v_add_f64 v[4:5], v[0:1], v[2:3] mul:2",
         {"mode": 0xC0, "v0.f64": [3.0], "v2.f64": [1.0]}, {"v4.f64": [4.0]},
         "f64 output denormals kept (MODE[7:6] = 3): omod ignored on the f64 result"))
add(case("gfx942", "v_mul_f32_e64 v3, v0, v1 mul:2", {"mode": 0, "v0.f32": [-1.0, -0.0],
                                                        "v1.f32": [0.0, -2.0]},
         {"v3.u32": [0, 0]}, "omod is not IEEE: a -0 result becomes +0"))
add(case("gfx942", "v_mul_f32_e64 v3, v0, v1 mul:4",
         {"mode": 0, "v0.f32": [2.0 ** -126, -(2.0 ** -126)], "v1.f32": [0.5]},
         {"v3.u32": [0, 0]},
         "the denormal product flushes to +0 (either sign) before the x4, which would have made "
         "it normal"))
add(case("gfx1201", "v_add_f32_e64 v3, v0, v1 mul:2", {"v0.f32": [1.5], "v1.f32": [1.0]},
         {"v3.f32": [2.5]}, "gfx12 with f32 denormals kept (the usual MODE): omod ignored"))
add(case("gfx1201", "v_add_f32_e64 v3, v0, v1 mul:2", {"mode": 0, "v0.f32": [1.5],
                                                         "v1.f32": [1.0]},
         {"v3.f32": [5.0]}, "gfx12 with denormals flushed (no IEEE mode there): omod applies"))
add(case("gfx942", "v_max_f32_e64 v3, v0, v1 clamp",
         {"v0.f32": [NAN, -1.0, 2.0], "v1.f32": [NAN, -2.0, 1.0]}, {"v3.f32": [0.0, 0.0, 1.0]},
         "clamp to [0, 1]; a NaN result clamps to 0"))
add(case("gfx942", "v_cmp_lt_f32_e64 s[8:9], |v0|, -v1",
         {"v0.f32": [-1.0, -3.0], "v1.f32": [-2.0], "exec": "11"}, {"s8.u32": 0b01},
         "|-1| < 2 true, |-3| < 2 false: modifiers apply before the compare"))
