"""Float functions of the ALU tables (semantics_alu.py, alu_scalar.py): conversions to integers,
fract/frexp/ldexp, fused multiply-add, the division helpers (V_DIV_SCALE, V_DIV_FMAS,
V_DIV_FIXUP), packed f16 conversions, IEEE and non-IEEE min/max/med3, the per-type float op
table (``_float_ops``), V_TRIG_PREOP_F64's 2/pi bits, and the 8-bit and bfloat16 formats.

Transcendentals are computed in float64 and rounded once: within the hardware's documented
1 ulp. numpy's IEEE arithmetic gives NaN/inf/denormal behaviour.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from hsapy.sim.isa.semantics_alu import Spec

f32, f64, f16 = np.float32, np.float64, np.float16
u32, i32, u64, i64 = np.uint32, np.int32, np.uint64, np.int64



def _cvt_f32_to_i32(x):
    x = np.asarray(x, f64)
    out = np.trunc(np.nan_to_num(x, nan=0.0, posinf=2147483647.0, neginf=-2147483648.0))
    return np.clip(out, -2147483648.0, 2147483647.0).astype(i32)


def _cvt_f32_to_u32(x):
    x = np.asarray(x, f64)
    out = np.trunc(np.nan_to_num(x, nan=0.0, posinf=4294967295.0, neginf=0.0))
    return np.clip(out, 0.0, 4294967295.0).astype(u32)


def _rounded(ftype, fn):
    """fn computed in float64 and rounded once to ``ftype``."""
    return lambda a: fn(np.asarray(a, f64)).astype(ftype)


def _fract(a):
    # V_FRACT: x - floor(x), clamped below 1.0; NaN in, NaN out; +-inf gives NaN.
    result = a - np.floor(a)
    below_one = np.nextafter(np.asarray(1.0, a.dtype), np.asarray(0.0, a.dtype))
    return np.where(np.isinf(a), np.asarray(np.nan, a.dtype), np.minimum(result, below_one))


def _frexp_mant(a):
    # infinities pass through; a NaN comes out quiet (LLVM's SITargetLowering::isCanonicalized
    # counts amdgcn_frexp_mant results canonical)
    mant, _ = np.frexp(a)
    return np.where(np.isfinite(a), mant, _quiet(a)).astype(a.dtype)


def _frexp_exp(a):
    _, exp = np.frexp(a)
    return np.where(np.isfinite(a), exp, 0).astype(i32)


def _ldexp(a, n):
    n = np.clip(np.asarray(n).astype(i64), -100000, 100000)
    return np.ldexp(np.asarray(a), n.astype(np.int32)).astype(np.asarray(a).dtype)


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s = fl(a + b) and the exact error a + b - s (Knuth's two-sum; exact for finite float64)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _round_to_odd(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """hi + lo (hi = fl(hi + lo)) rounded to float64 with round-to-odd: rounding that once more
    to a format of at most 51 bits gives the correctly rounded result of hi + lo."""
    inexact = (lo != 0) & np.isfinite(hi)
    even = (hi.view(np.uint64) & np.uint64(1)) == 0
    toward = np.where(lo > 0, np.inf, -np.inf)
    return np.where(inexact & even, np.nextafter(hi, toward), hi)


def _fused_narrow(a, b, c, ftype):
    """fma(a, b, c) of f32/f16 values (or anything exact in float64) rounded once to ``ftype``
    (round to nearest even). The product of two 24-bit significands is exact in float64, but
    the sum is not: rounding it to float64 and then to ``ftype`` rounds twice, which is wrong
    whenever the float64 sum lands exactly half-way between two ``ftype`` values (the
    Newton-Raphson remainders of a correctly rounded division do exactly that). Rounding the
    float64 sum to odd first makes the second rounding the correct one."""
    with np.errstate(all="ignore"):
        p = np.asarray(a, f64) * np.asarray(b, f64)
        s, err = _two_sum(p, np.asarray(c, f64))
        return _round_to_odd(np.asarray(s, f64), err).astype(ftype)


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p = fl(a * b) and the exact error a * b - p (Veltkamp split and Dekker's product; exact
    while neither the split nor the error over- or underflows: |a|, |b| in [0.5, 1) here)."""
    split = f64(134217729.0)            # 2**27 + 1
    p = a * b
    ah = a * split
    ah = ah - (ah - a)
    al = a - ah
    bh = b * split
    bh = bh - (bh - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _fma64_scaled(a, b, c, k):
    """2**k * (a * b + c) for float64 a, b, c and integer k, rounded once to float64 (round to
    nearest even): what V_FMA_F64 (k = 0) and V_DIV_FMAS_F64 compute.

    a and b are replaced by their frexp fractions (|f| in [0.5, 1)) and c by c * 2**-(ea + eb),
    so the exact product splits without over- or underflow wherever the operands lie. c far
    below the product only breaks ties (a same-signed stand-in does that); c far above it is
    the result. The three-term sum is rounded as Boldo and Melquiond show ("Emulation of FMA
    and correctly rounded sums: proved algorithms using rounding to odd", IEEE TC 2008): the
    low parts summed with rounding to odd, then one rounding to nearest. Results below the
    smallest normal are rounded to odd first and then to the subnormal quantum by the final
    scaling, correct wherever that quantum leaves at most 51 bits (every subnormal but the
    top binade, where a tie of the last bit could still round twice)."""
    a, b, c = (np.asarray(v, f64) for v in (a, b, c))
    shape = np.broadcast_shapes(a.shape, b.shape, c.shape, np.shape(k))
    a, b, c = (np.broadcast_to(v, shape) for v in (a, b, c))
    k = np.broadcast_to(np.asarray(k, np.int64), shape)
    with np.errstate(all="ignore"):
        naive = np.ldexp(a * b + c, np.clip(k, -2000, 2000).astype(np.int32))
        fa, ea = np.frexp(a)
        fb, eb = np.frexp(b)
        _, ec = np.frexp(c)
        e = ea.astype(np.int64) + eb
        regular = np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & (a != 0) & (b != 0)
        nonzero_c = c != 0
        c_rules = regular & nonzero_c & (ec - e > 108)          # |a*b| < ulp(c) / 2**55
        tiny_c = regular & nonzero_c & (e - ec > 108)           # c only breaks ties
        shift = np.where(regular, np.clip(e, -2200, 2200), 0)
        cs = np.ldexp(c, (-shift).astype(np.int32))
        cs = np.where(tiny_c, np.copysign(f64(2.0 ** -110), c), np.where(c_rules, 0.0, cs))
        uh, ul = _two_product(np.where(regular, fa, 0.0), np.where(regular, fb, 0.0))
        th, tl = _two_sum(cs, uh)
        lo, lo_err = _two_sum(tl, ul)
        v = _round_to_odd(lo, lo_err)
        nearest = th + v
        total = shift + k
        out = np.ldexp(nearest, np.clip(total, -2200, 2200).astype(np.int32))
        # Subnormal results: ``out`` is within one quantum (2**-1074) of the answer, which is
        # the neighbour on the exact sum's side of each midpoint (ties to even). The midpoints,
        # scaled back, are exact float64 values; x - m = (th - m) + lo + lo_err, whose first
        # term is exact (th and m are within a factor of two) and whose sign is the sign of
        # the rounded sum of the first two, or of lo_err when they cancel.
        small = regular & ~c_rules & (np.abs(out) < f64(2.2250738585072014e-308))
        t32 = np.clip(total, -2200, 2200).astype(np.int32)
        half_q = np.ldexp(f64(0.5), (-1074 - np.clip(total, -2200, 2200)).astype(np.int32))

        def above(m):        # a float64 with the sign of (exact sum - m), 0 when equal
            d, d_err = _two_sum(th - m, lo)
            return np.where(d != 0, d, d_err + lo_err)

        base = np.ldexp(out, (-t32).astype(np.int32))
        up = above(base + half_q)
        down = above(base - half_q)
        upper = np.nextafter(out, np.inf)
        lower = np.nextafter(out, -np.inf)
        even = (out.view(np.uint64) & np.uint64(1)) == 0
        fixed = np.where(up > 0, upper, np.where(down < 0, lower, out))
        fixed = np.where((up == 0) & ~even, upper, fixed)
        fixed = np.where((down == 0) & ~even, lower, fixed)
        out = np.where(small, fixed, out)
        c_scaled = np.ldexp(c, np.clip(k, -2000, 2000).astype(np.int32))
        out = np.where(c_rules, c_scaled, out)
        return np.where(regular, out, naive)


def _fma(ftype):
    """Fused multiply-add rounded once (f32/f16: exact product in float64, sum rounded to odd
    then to the type; f64: :func:`_fma64_scaled`)."""
    if ftype is f64:
        def fma64(a, b, c):
            return _fma64_scaled(a, b, c, 0)
        return fma64

    def fma_narrow(a, b, c):
        return _fused_narrow(a, b, c, ftype)
    return fma_narrow


def _exp_of(x):
    bits = np.asarray(x).view(u32 if x.dtype == f32 else u64)
    if x.dtype == f32:
        return ((bits >> u32(23)) & u32(0xFF)).astype(i32)
    return ((bits >> u64(52)) & u64(0x7FF)).astype(i32)


def _div_scale(ftype):
    """V_DIV_SCALE_F32/F64: pre-scale numerator or denominator so the Newton-Raphson sequence
    neither overflows nor underflows; VCC tells V_DIV_FMAS to undo the scaling (ISA guide)."""
    bias = 127 if ftype is f32 else 1023
    mant_bits = 23 if ftype is f32 else 52
    scale = 64 if ftype is f32 else 128
    tiny = np.finfo(ftype).tiny

    def div_scale(s0, s1, s2):
        s0 = np.asarray(s0, ftype)
        s1 = np.asarray(s1, ftype)
        s2 = np.asarray(s2, ftype)
        shape = np.broadcast_shapes(s0.shape, s1.shape, s2.shape)
        s0, s1, s2 = (np.broadcast_to(v, shape) for v in (s0, s1, s2))
        e1 = _exp_of(s1)
        e2 = _exp_of(s2)
        with np.errstate(all="ignore"):
            inv = np.asarray(1.0, ftype) / s1
            quot = s2 / s1
        denorm1 = (np.abs(s1) < tiny) & (s1 != 0)
        inv_denorm = (np.abs(inv) < tiny) & (inv != 0)
        quot_denorm = (np.abs(quot) < tiny) & (quot != 0)
        up = _ldexp(s0, np.full(shape, scale))
        down = _ldexp(s0, np.full(shape, -scale))
        out = s0.copy()
        vcc = np.zeros(shape, bool)
        zero = (s2 == 0) | (s1 == 0)
        c1 = ~zero & ((e2 - e1) >= (bias - 31 if ftype is f32 else 768))
        c2 = ~zero & ~c1 & denorm1
        c3 = ~zero & ~c1 & ~c2 & inv_denorm & quot_denorm
        c4 = ~zero & ~c1 & ~c2 & ~c3 & inv_denorm
        c5 = ~zero & ~c1 & ~c2 & ~c3 & ~c4 & quot_denorm
        c6 = ~zero & ~c1 & ~c2 & ~c3 & ~c4 & ~c5 & (e2 <= mant_bits)
        vcc |= c1 | c3 | c5
        out = np.where(c1 & (s0 == s1), up, out)
        out = np.where(c2, up, out)
        out = np.where(c3 & (s0 == s1), up, out)
        out = np.where(c4, down, out)
        out = np.where(c5 & (s0 == s2), up, out)
        out = np.where(c6, up, out)
        out = np.where(zero, np.asarray(np.nan, ftype), out)
        return out.astype(ftype), vcc
    return div_scale


def _div_fmas(ftype):
    """V_DIV_FMAS: fma, then (lanes with VCC) rescale by 2**+-scale by the sign of S2's
    exponent (the quotient estimate), undoing V_DIV_SCALE. The exact scaled value is rounded
    once: a quotient that lands in the denormal range after the rescale is rounded there, not
    first at full precision and again by the scaling."""
    bias = 127 if ftype is f32 else 1023
    scale = 64 if ftype is f32 else 128

    def div_fmas(a, b, c, vcc):
        exp_c = _exp_of(np.asarray(c, ftype))
        if ftype is not f64:
            with np.errstate(all="ignore"):
                p = np.asarray(a, f64) * np.asarray(b, f64)          # exact
                s, err = _two_sum(p, np.asarray(c, f64))
                k = np.where(vcc, np.where(exp_c > bias, scale, -scale), 0).astype(np.int32)
                # scaling by a power of two is exact in float64 for every f32 quotient
                s, err = np.ldexp(s, k), np.ldexp(err, k)
                return _round_to_odd(np.asarray(s, f64), err).astype(ftype)
        k = np.where(vcc, np.where(exp_c > bias, scale, -scale), 0)
        return _fma64_scaled(a, b, c, k)
    return div_fmas


def _div_fixup(ftype):
    """V_DIV_FIXUP: special cases of num/den (S2/S1) on top of the quotient S0."""
    def div_fixup(q, den, num):
        q = np.asarray(q, ftype)
        den = np.asarray(den, ftype)
        num = np.asarray(num, ftype)
        shape = np.broadcast_shapes(q.shape, den.shape, num.shape)
        q, den, num = (np.broadcast_to(v, shape) for v in (q, den, num))
        neg = np.signbit(den) ^ np.signbit(num)
        inf = np.where(neg, -np.inf, np.inf).astype(ftype)
        zero = np.where(neg, -0.0, 0.0).astype(ftype)
        out = np.where(neg, -np.abs(q), np.abs(q)).astype(ftype)
        # The quotient overflowed or underflowed inside the scaled Newton-Raphson steps (NaN or
        # inf estimate for finite, non-zero operands): the fixup's overflow/underflow branches
        # return the signed infinity or zero of the exact quotient.
        with np.errstate(all="ignore"):
            finite = np.isfinite(num) & np.isfinite(den) & (num != 0) & (den != 0)
            lost = finite & ~np.isfinite(q)
            exact = (np.abs(num.astype(np.float64)) / np.abs(den.astype(np.float64)))
            exact = np.where(neg, -exact, exact).astype(ftype)
        out = np.where(lost, exact, out)
        out = np.where((np.abs(den) == np.inf) | (num == 0), zero, out)
        out = np.where((den == 0) | (np.abs(num) == np.inf), inf, out)
        both_zero = (den == 0) & (num == 0)
        both_inf = (np.abs(den) == np.inf) & (np.abs(num) == np.inf)
        out = np.where(both_zero | both_inf, np.asarray(np.nan, ftype), out)
        # a NaN operand, S2 before S1, comes out quiet (cvtToQuietNAN in the RDNA guides'
        # V_DIV_FIXUP pseudocode; LLVM's isCanonicalized counts DIV_FIXUP results canonical)
        out = np.where(np.isnan(den), _quiet(den), out)
        out = np.where(np.isnan(num), _quiet(num), out)
        return out.astype(ftype)
    return div_fixup


def _cvt_pkrtz(a, b):
    def rtz16(x):
        x = _quiet(np.asarray(x, f32))
        h = x.astype(f16)
        # round toward zero: step back when rounding went away from zero
        away = np.abs(h.astype(f32)) > np.abs(x)
        toward = np.nextafter(h, np.asarray(0, f16))
        return np.where(away & np.isfinite(x), toward, h).astype(f16)
    lo = rtz16(a).view(np.uint16).astype(u32)
    hi = rtz16(b).view(np.uint16).astype(u32)
    return lo | (hi << u32(16))


def _convert(ftype):
    """A float-to-float V_CVT/S_CVT: one rounding, and a NaN comes out quiet with its sign and
    as much of its payload as fits (IEEE 754-2019 5.4.2 and 6.2.3). LLVM's AMDGPU backend
    counts FP_ROUND and FP_EXTEND among the operations whose result is canonical
    (SITargetLowering::isCanonicalized), on every target and in either MODE.IEEE, so it feeds
    them to v_min/v_max unquieted. Quieting in the source format first makes numpy's
    conversion, which keeps payload bits unquieted, carry the quiet bit over."""
    return lambda a: _quiet(a).astype(ftype)


def _cvt_ubyte(n):
    return lambda a: ((np.asarray(a).astype(u32) >> u32(8 * n)) & u32(0xFF)).astype(f32)


# --- min / max (CDNA3 ISA V_MAX_F32 / V_MIN_F32 / V_MED3_F32; RDNA4 ISA V_MAX_NUM_F32,
# V_MAXIMUM_F32, V_MED3_NUM_F32 and their f16/f64 kin) ----------------------------------------
_QUIET_BIT = {2: 0x0200, 4: 0x00400000, 8: 1 << 51}
_UINT_OF = {2: np.uint16, 4: u32, 8: u64}


def _quiet(x):
    """``x`` with the quiet bit of every NaN set (cvtToQuietNAN)."""
    x = np.asarray(x)
    utype = _UINT_OF[x.dtype.itemsize]
    bits = x.view(utype) | np.where(np.isnan(x), utype(_QUIET_BIT[x.dtype.itemsize]), utype(0))
    return bits.astype(utype).view(x.dtype)


def _signaling(x):
    x = np.asarray(x)
    utype = _UINT_OF[x.dtype.itemsize]
    return np.isnan(x) & ((x.view(utype) & utype(_QUIET_BIT[x.dtype.itemsize])) == 0)


def _ordinary(out) -> bool:
    """No zero and no NaN in a fmax/fmin result: the cases where numpy's answer is the ISA's."""
    return bool((np.abs(out) > 0).all())


def _max(a, b):
    """maxNum with ordered zeros: a NaN operand yields the other (both NaN: a, quieted), and
    +0 > -0."""
    a, b = np.asarray(a), np.asarray(b)
    out = np.fmax(a, b)
    if _ordinary(out):
        return out
    take_a = (a > b) | ((a == 0) & (b == 0) & ~np.signbit(a) & np.signbit(b))
    out = np.where(np.isnan(b), a, np.where(np.isnan(a), b, np.where(take_a, a, b)))
    return np.where(np.isnan(a) & np.isnan(b), _quiet(a), out)


def _min(a, b):
    """minNum with ordered zeros: a NaN operand yields the other, and -0 < +0."""
    a, b = np.asarray(a), np.asarray(b)
    out = np.fmin(a, b)
    if _ordinary(out):
        return out
    take_a = (a < b) | ((a == 0) & (b == 0) & np.signbit(a) & ~np.signbit(b))
    out = np.where(np.isnan(b), a, np.where(np.isnan(a), b, np.where(take_a, a, b)))
    return np.where(np.isnan(a) & np.isnan(b), _quiet(a), out)


def _ieee_mode(fn):
    """The gfx9 IEEE-mode form of a two-source min/max: a signaling NaN operand (S0 first)
    gives that NaN quieted instead of the other operand."""
    def ieee(a, b):
        a, b = np.asarray(a), np.asarray(b)
        return np.where(_signaling(a), _quiet(a), np.where(_signaling(b), _quiet(b), fn(a, b)))
    return ieee


def _maximum(a, b):
    """IEEE 754-2019 maximum (RDNA4 V_MAXIMUM_*): a NaN operand (S0 first) propagates, quieted;
    +0 > -0."""
    a, b = np.asarray(a), np.asarray(b)
    take_a = (a > b) | ((a == 0) & (b == 0) & ~np.signbit(a) & np.signbit(b))
    out = np.where(take_a, a, b)
    nan_a = _signaling(a) | (np.isnan(a) & ~_signaling(b))
    return np.where(nan_a, _quiet(a), np.where(np.isnan(b), _quiet(b), out))


def _minimum(a, b):
    """IEEE 754-2019 minimum: a NaN operand propagates, quieted; -0 < +0."""
    a, b = np.asarray(a), np.asarray(b)
    take_a = (a < b) | ((a == 0) & (b == 0) & np.signbit(a) & ~np.signbit(b))
    out = np.where(take_a, a, b)
    nan_a = _signaling(a) | (np.isnan(a) & ~_signaling(b))
    return np.where(nan_a, _quiet(a), np.where(np.isnan(b), _quiet(b), out))


def _chain(outer, inner):
    """D = outer(inner(S0, S1), S2): the three-source min/max forms (V_MAX3, V_MINMAX, ...)."""
    return lambda a, b, c: outer(inner(a, b), c)


def _med3_of(maxf, minf):
    """V_MED3_*: with any NaN operand, min3; otherwise the larger of the two sources that are
    not the maximum (the ISA guide's pseudocode, ties included)."""
    def med3(a, b, c):
        a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
        top = maxf(maxf(a, b), c)
        out = np.where(top == a, maxf(b, c), np.where(top == b, maxf(a, c), maxf(a, b)))
        if a.dtype.kind != "f":
            return out
        nan = np.isnan(a) | np.isnan(b) | np.isnan(c)
        return np.where(nan, minf(minf(a, b), c), out)
    return med3


_med3 = _med3_of(_max, _min)
_med3_int = _med3_of(np.maximum, np.minimum)


def _ieee_minmax_ops() -> dict[str, Callable]:
    """gfx9 min/max opcodes as they behave in IEEE mode (the kernel descriptor's IEEE_MODE)."""
    imax, imin = _ieee_mode(_max), _ieee_mode(_min)
    ops: dict[str, Callable] = {}
    for t in ("f16", "f32", "f64"):
        ops[f"v_max_{t}"] = imax
        ops[f"v_min_{t}"] = imin
        ops[f"v_max3_{t}"] = _chain(imax, imax)
        ops[f"v_min3_{t}"] = _chain(imin, imin)
        ops[f"v_med3_{t}"] = _med3_of(imax, imin)
    return ops


IEEE_MODE_OPS = _ieee_minmax_ops()


def _float_ops(t: str, ftype) -> dict[str, Spec]:
    ops: dict[str, Spec] = {
        f"v_add_{t}": (t, (t, t), lambda a, b: a + b),
        f"v_sub_{t}": (t, (t, t), lambda a, b: a - b),
        f"v_subrev_{t}": (t, (t, t), lambda a, b: b - a),
        f"v_mul_{t}": (t, (t, t), lambda a, b: a * b),
        f"v_fma_{t}": (t, (t, t, t), _fma(ftype)),
        f"v_fmac_{t}": (t, (t, t, t), _fma(ftype)),        # third source = the destination
        f"v_fmaak_{t}": (t, (t, t, t), _fma(ftype)),
        f"v_fmamk_{t}": (t, (t, t, t), _fma(ftype)),
        f"v_max_{t}": (t, (t, t), _max),
        f"v_min_{t}": (t, (t, t), _min),
        f"v_max_num_{t}": (t, (t, t), _max),
        f"v_min_num_{t}": (t, (t, t), _min),
        f"v_maximum_{t}": (t, (t, t), _maximum),
        f"v_minimum_{t}": (t, (t, t), _minimum),
        f"v_max3_{t}": (t, (t, t, t), _chain(_max, _max)),
        f"v_min3_{t}": (t, (t, t, t), _chain(_min, _min)),
        f"v_max3_num_{t}": (t, (t, t, t), _chain(_max, _max)),
        f"v_min3_num_{t}": (t, (t, t, t), _chain(_min, _min)),
        f"v_med3_{t}": (t, (t, t, t), _med3),
        f"v_med3_num_{t}": (t, (t, t, t), _med3),
        # RDNA3/RDNA4 ISA: V_MAXMIN_* = min(max(S0, S1), S2), V_MINMAX_* = max(min(S0, S1), S2)
        f"v_maxmin_{t}": (t, (t, t, t), _chain(_min, _max)),
        f"v_minmax_{t}": (t, (t, t, t), _chain(_max, _min)),
        f"v_maxmin_num_{t}": (t, (t, t, t), _chain(_min, _max)),
        f"v_minmax_num_{t}": (t, (t, t, t), _chain(_max, _min)),
        f"v_maximum3_{t}": (t, (t, t, t), _chain(_maximum, _maximum)),
        f"v_minimum3_{t}": (t, (t, t, t), _chain(_minimum, _minimum)),
        f"v_maximumminimum_{t}": (t, (t, t, t), _chain(_minimum, _maximum)),
        f"v_minimummaximum_{t}": (t, (t, t, t), _chain(_maximum, _minimum)),
        f"v_rcp_{t}": (t, (t,), _rounded(ftype, lambda a: 1.0 / a)),
        f"v_rcp_iflag_{t}": (t, (t,), _rounded(ftype, lambda a: 1.0 / a)),
        f"v_rsq_{t}": (t, (t,), _rounded(ftype, lambda a: 1.0 / np.sqrt(a))),
        f"v_sqrt_{t}": (t, (t,), _rounded(ftype, np.sqrt)),
        f"v_exp_{t}": (t, (t,), _rounded(ftype, np.exp2)),
        f"v_log_{t}": (t, (t,), _rounded(ftype, np.log2)),
        f"v_sin_{t}": (t, (t,), _rounded(ftype, lambda a: np.sin(2 * np.pi * a))),
        f"v_cos_{t}": (t, (t,), _rounded(ftype, lambda a: np.cos(2 * np.pi * a))),
        f"v_floor_{t}": (t, (t,), np.floor),
        f"v_ceil_{t}": (t, (t,), np.ceil),
        f"v_trunc_{t}": (t, (t,), np.trunc),
        f"v_rndne_{t}": (t, (t,), np.rint),
        f"v_fract_{t}": (t, (t,), _fract),
        f"v_frexp_mant_{t}": (t, (t,), _frexp_mant),
        f"v_frexp_exp_i32_{t}": ("i32", (t,), _frexp_exp),
        f"v_frexp_exp_i16_{t}": ("i16", (t,), lambda a: _frexp_exp(a).astype(np.int16)),
        # the f16 form scales by a signed 16-bit exponent (ISA guides: S1.i16), the others by
        # an i32; LLVM computes an f16 exponent with 16-bit instructions, leaving bits 31:16 0
        f"v_ldexp_{t}": (t, (t, "i16" if t == "f16" else "i32"), _ldexp),
        f"v_div_fixup_{t}": (t, (t, t, t), _div_fixup(ftype)),
    }
    if t == "f32":
        ops["v_mac_f32"] = ("f32", ("f32", "f32", "f32"),
                            lambda a, b, c: (a * b).astype(f32) + c)
        ops["v_mad_f32"] = ("f32", ("f32", "f32", "f32"),
                            lambda a, b, c: (a * b).astype(f32) + c)
        ops["v_mul_legacy_f32"] = ("f32", ("f32", "f32"),
                                   lambda a, b: np.where((a == 0) | (b == 0), f32(0), a * b))
        ops["v_mul_dx9_zero_f32"] = ops["v_mul_legacy_f32"]
        # gfx90a (Vega ISA): not fused; the K forms take a literal; legacy = DX9 0 * x = 0
        ops["v_madmk_f32"] = ops["v_mad_f32"]
        ops["v_madak_f32"] = ops["v_mad_f32"]
        ops["v_mad_legacy_f32"] = ("f32", ("f32", "f32", "f32"),
                                   lambda a, b, c: np.where((a == 0) | (b == 0), f32(0),
                                                            (a * b).astype(f32)) + c)
        ops["v_exp_legacy_f32"] = ops["v_exp_f32"]
        ops["v_log_legacy_f32"] = ops["v_log_f32"]
    return ops


# --- V_TRIG_PREOP_F64 ------------------------------------------------------------------------

def _two_over_pi_bits(bits: int) -> int:
    """floor(2/pi * 2**bits), from pi by Machin's formula in integer arithmetic (exact to the last
    bit for the 1201 bits used here: 64 guard bits)."""
    guard = bits + 64
    one = 1 << guard

    def arctan_inv(x: int) -> int:
        total, term, k, sign = 0, one // x, 1, 1
        while term:
            total += sign * (term // k)
            term //= x * x
            k += 2
            sign = -sign
        return total
    pi = 16 * arctan_inv(5) - 4 * arctan_inv(239)
    return ((2 << (guard + bits)) // pi) >> 0


TWO_OVER_PI_1201 = _two_over_pi_bits(1201)      # the 1201 fraction bits b_1200 .. b_0 of 2/pi


def _trig_preop(a, b):
    """V_TRIG_PREOP_F64 (CDNA3 / RDNA4 ISA): the 53-bit segment of 2/pi that starts S1[4:0] * 53
    bits into its fraction (further in for a large exponent of S0), scaled to its place:
    exact, as the truncated bits say (round toward zero)."""
    a = np.asarray(a, f64)
    sel = np.asarray(b).astype(u32) & u32(31)
    shape = np.broadcast_shapes(a.shape, sel.shape)
    exp = np.broadcast_to(((a.view(u64) >> u64(52)) & u64(0x7FF)).astype(np.int64), shape)
    sel = np.broadcast_to(sel.astype(np.int64), shape)
    out = np.empty(shape, f64)
    for index in np.ndindex(shape):
        shift = int(sel[index]) * 53 + max(int(exp[index]) - 1077, 0)
        move = 1148 - shift
        segment = (TWO_OVER_PI_1201 >> move) if move >= 0 else (TWO_OVER_PI_1201 << -move)
        segment &= (1 << 53) - 1
        scale = -53 - shift + (128 if int(exp[index]) >= 1968 else 0)
        out[index] = math.ldexp(float(segment), scale)
    return out


# --- small float formats ------------------------------------------------------------------------
# 8-bit floats: (exponent bits, mantissa bits, bias, encoding of the non-finite values).
# gfx942 (CDNA3 ISA, "FP8 and BF8"): the FNUZ formats, no infinity or -0, 0x80 is the only NaN.
# gfx12 (RDNA4 ISA): the OCP formats, E4M3 with 0x7F/0xFF as NaN and no infinity, E5M2 with
# IEEE-style infinities and NaNs.
SMALL_FLOATS = {
    ("gfx9", "fp8"): (4, 3, 8, "fnuz"), ("gfx9", "bf8"): (5, 2, 16, "fnuz"),
    ("gfx12", "fp8"): (4, 3, 7, "fn"), ("gfx12", "bf8"): (5, 2, 15, "ieee"),
}


def small_float_values(exp_bits: int, man_bits: int, bias: int, special: str) -> np.ndarray:
    """The value of each of the 256 codes of an 8-bit float format, as float64."""
    code = np.arange(256)
    sign = np.where(code >> 7, -1.0, 1.0)
    exp = (code >> man_bits) & ((1 << exp_bits) - 1)
    man = code & ((1 << man_bits) - 1)
    scale = 2.0 ** man_bits
    value = np.where(exp == 0, man / scale * 2.0 ** (1 - bias),
                     (1 + man / scale) * 2.0 ** (exp - bias))
    value = sign * value
    top = (1 << exp_bits) - 1
    if special == "fnuz":
        value = np.where(code == 0x80, np.nan, value)
    elif special == "fn":
        value = np.where((exp == top) & (man == (1 << man_bits) - 1), np.nan, value)
    else:
        value = np.where((exp == top) & (man == 0), sign * np.inf, value)
        value = np.where((exp == top) & (man != 0), np.nan, value)
    return value


def round_to_bf16(x) -> np.ndarray:
    """float64 values rounded once (to nearest even) to bfloat16, as bit patterns (uint16):
    8 significant bits, the f32 exponent range (subnormals down to 2**-133), overflow to inf."""
    x = np.asarray(x, f64)
    _, e = np.frexp(x)
    quantum = np.ldexp(1.0, np.maximum(e - 8, -133))
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = np.rint(x / quantum) * quantum
        rounded = np.where(np.abs(rounded) > 3.3895313892515355e38, np.copysign(np.inf, x), rounded)
    bits = (rounded.astype(f32).view(u32) >> u32(16)).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), bits).astype(np.uint16)


def bf16_to_f64(bits):
    """bfloat16 bit patterns (the high half of an f32) as float64."""
    return (np.asarray(bits).astype(u32) << u32(16)).view(f32).astype(f64)
