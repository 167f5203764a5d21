"""ALU semantics as data: vector (VOP1/VOP2/VOP3/VOPC/VOP3P) and scalar (SOP1/SOP2/SOPK/SOPC).

Each table maps an LLVM mnemonic (without ``_e32``/``_e64``) to its destination type, source types
and a numpy function over the typed sources. The types name how the ISA reads the register bits
(AMD "Instinct MI300 ISA" and "RDNA4 ISA" reference guides, section "Vector ALU instructions" /
"Scalar ALU instructions"); numpy's IEEE arithmetic gives NaN/inf/denormal behaviour (denormals
are kept; the kernel descriptor's flush mode is applied by the executor).

Transcendentals (v_rcp, v_rsq, v_sqrt, v_exp, v_log, v_sin, v_cos) are computed in float64 and
rounded once: within the hardware's documented 1 ulp.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np

f32, f64, f16 = np.float32, np.float64, np.float16
u32, i32, u64, i64 = np.uint32, np.int32, np.uint64, np.int64

Spec = tuple[str, tuple[str, ...], Callable[..., np.ndarray]]


def _sh32(b):
    return np.asarray(b).astype(u32) & u32(31)


def _sh64(b):
    return (np.asarray(b).astype(u64) & u64(63))


def _bfe_u32(a, b, c):
    off = np.asarray(b) & u32(31)
    width = np.asarray(c) & u32(31)
    mask = ((np.ones_like(width, dtype=u64) << width.astype(u64)) - u64(1)).astype(u32)
    return (a >> off) & mask


def _bfe_i32(a, b, c):
    # ISA: tmp = (S0.i32 >> offset) & ((1 << width) - 1); D = sign-extend tmp from bit width-1
    # (a field that runs past bit 31 takes copies of the sign bit)
    off = (np.asarray(b).astype(u32) & u32(31)).astype(i64)
    width = (np.asarray(c).astype(u32) & u32(31)).astype(i64)
    field = (np.asarray(a).astype(u32).view(i32).astype(i64) >> off) & ((i64(1) << width) - 1)
    sign = (field >> np.maximum(width - 1, 0)) & 1
    value = np.where(sign == 1, field - (i64(1) << width), field)
    return np.where(width == 0, 0, value).astype(i32)


def _mul_hi_u32(a, b):
    return ((a.astype(u64) * np.asarray(b).astype(u64)) >> u64(32)).astype(u32)


def _mul_hi_i32(a, b):
    return ((np.asarray(a).astype(i64) * np.asarray(b).astype(i64)) >> 32).astype(i32)


def _u24(a):
    return np.asarray(a).astype(u32) & u32(0xFFFFFF)


def _i24(a):
    return ((np.asarray(a).astype(u32) << u32(8)).view(i32) >> 8)


def _alignbit(a, b, c):
    wide = (np.asarray(a).astype(u64) << u64(32)) | np.asarray(b).astype(u64)
    return (wide >> (np.asarray(c).astype(u64) & u64(31))).astype(u32)


def _alignbyte(a, b, c):
    wide = (np.asarray(a).astype(u64) << u64(32)) | np.asarray(b).astype(u64)
    return (wide >> ((np.asarray(c).astype(u64) & u64(3)) * u64(8))).astype(u32)


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
    mant, _ = np.frexp(a)
    return np.where(np.isfinite(a), mant, a).astype(a.dtype)


def _frexp_exp(a):
    _, exp = np.frexp(a)
    return np.where(np.isfinite(a), exp, 0).astype(i32)


def _ldexp(a, n):
    n = np.clip(np.asarray(n).astype(i64), -100000, 100000)
    return np.ldexp(np.asarray(a), n.astype(np.int32)).astype(np.asarray(a).dtype)


def _fma(ftype):
    """Fused multiply-add rounded once (exact product in float64 for f32/f16; for f64 a
    two-product correction keeps the single rounding)."""
    if ftype is f64:
        def fma64(a, b, c):
            a = np.asarray(a, f64)
            b = np.asarray(b, f64)
            c = np.asarray(c, f64)
            p = a * b
            # error-free transformation of the product (Dekker split)
            split = f64(134217729.0)
            ah = a * split
            ah = ah - (ah - a)
            al = a - ah
            bh = b * split
            bh = bh - (bh - b)
            bl = b - bh
            err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
            s = p + c
            bb = s - p
            serr = (p - (s - bb)) + (c - bb)
            out = s + (serr + err)
            return np.where(np.isfinite(out), out, p + c)
        return fma64

    def fma_narrow(a, b, c):
        # The product of two f32 is exact in f64; the sum rounds once in f64 and once to f32;
        # double rounding can differ from a true fma by one ulp only in tie cases.
        return (np.asarray(a, f64) * np.asarray(b, f64) + np.asarray(c, f64)).astype(ftype)
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
    exponent (the quotient estimate), undoing V_DIV_SCALE."""
    fma = _fma(ftype)
    bias = 127 if ftype is f32 else 1023
    scale = 64 if ftype is f32 else 128

    def div_fmas(a, b, c, vcc):
        result = np.asarray(fma(a, b, c), ftype)
        exp_c = _exp_of(np.broadcast_to(np.asarray(c, ftype), result.shape))
        factor = np.where(exp_c > bias, scale, -scale)
        scaled = _ldexp(result, factor)
        return np.where(vcc, scaled, result).astype(ftype)
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
        out = np.where(np.isnan(den), den, out)
        out = np.where(np.isnan(num), num, out)
        return out.astype(ftype)
    return div_fixup


def _cvt_pkrtz(a, b):
    def rtz16(x):
        x = np.asarray(x, f32)
        h = x.astype(f16)
        # round toward zero: step back when rounding went away from zero
        away = np.abs(h.astype(f32)) > np.abs(x)
        toward = np.nextafter(h, np.asarray(0, f16))
        return np.where(away & np.isfinite(x), toward, h).astype(f16)
    lo = rtz16(a).view(np.uint16).astype(u32)
    hi = rtz16(b).view(np.uint16).astype(u32)
    return lo | (hi << u32(16))


def _cvt_ubyte(n):
    return lambda a: ((np.asarray(a).astype(u32) >> u32(8 * n)) & u32(0xFF)).astype(f32)


def _sat_add_u32(a, b):
    return np.minimum(a.astype(u64) + np.asarray(b).astype(u64), u64(0xFFFFFFFF)).astype(u32)


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
        f"v_ldexp_{t}": (t, (t, "i32"), _ldexp),
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


VALU: dict[str, Spec] = {}
VALU.update(_float_ops("f32", f32))
VALU.update(_float_ops("f64", f64))
VALU.update(_float_ops("f16", f16))
VALU.update({
    "v_mov_b32": ("b32", ("b32",), lambda a: a),
    "v_mov_b64": ("b64", ("b64",), lambda a: a),
    "v_mov_b16": ("b16", ("b16",), lambda a: a),
    "v_not_b32": ("b32", ("b32",), np.invert),
    "v_bfrev_b32": ("b32", ("b32",), lambda a: _bitreverse32(a)),
    "v_add_u32": ("u32", ("u32", "u32"), lambda a, b: a + b),
    "v_add_nc_u32": ("u32", ("u32", "u32"), lambda a, b: a + b),
    "v_sub_u32": ("u32", ("u32", "u32"), lambda a, b: a - b),
    "v_sub_nc_u32": ("u32", ("u32", "u32"), lambda a, b: a - b),
    "v_subrev_u32": ("u32", ("u32", "u32"), lambda a, b: b - a),
    "v_subrev_nc_u32": ("u32", ("u32", "u32"), lambda a, b: b - a),
    "v_add_i32": ("i32", ("i32", "i32"), lambda a, b: a + b),
    "v_add_nc_i32": ("i32", ("i32", "i32"), lambda a, b: a + b),
    "v_sub_i32": ("i32", ("i32", "i32"), lambda a, b: a - b),
    "v_sub_nc_i32": ("i32", ("i32", "i32"), lambda a, b: a - b),
    "v_add_u16": ("u16", ("u16", "u16"), lambda a, b: a + b),
    "v_add_nc_u16": ("u16", ("u16", "u16"), lambda a, b: a + b),
    "v_sub_u16": ("u16", ("u16", "u16"), lambda a, b: a - b),
    "v_mul_lo_u16": ("u16", ("u16", "u16"), lambda a, b: a * b),
    "v_mul_lo_u32": ("u32", ("u32", "u32"), lambda a, b: a * b),
    "v_mul_hi_u32": ("u32", ("u32", "u32"), _mul_hi_u32),
    "v_mul_hi_i32": ("i32", ("i32", "i32"), _mul_hi_i32),
    "v_mul_u32_u24": ("u32", ("u32", "u32"), lambda a, b: _u24(a) * _u24(b)),
    "v_mul_hi_u32_u24": ("u32", ("u32", "u32"),
                         lambda a, b: ((_u24(a).astype(u64) * _u24(b)) >> u64(32)).astype(u32)),
    "v_mul_i32_i24": ("i32", ("i32", "i32"), lambda a, b: _i24(a) * _i24(b)),
    "v_mul_hi_i32_i24": ("i32", ("i32", "i32"),
                         lambda a, b: ((_i24(a).astype(i64) * _i24(b)) >> 32).astype(i32)),
    "v_mad_u32_u24": ("u32", ("u32", "u32", "u32"), lambda a, b, c: _u24(a) * _u24(b) + c),
    "v_mad_i32_i24": ("i32", ("i32", "i32", "i32"), lambda a, b, c: _i24(a) * _i24(b) + c),
    "v_mad_u32_u16": ("u32", ("u32", "u32", "u32"),
                      lambda a, b, c: (a & u32(0xFFFF)) * (b & u32(0xFFFF)) + c),
    "v_and_b32": ("b32", ("b32", "b32"), lambda a, b: a & b),
    "v_or_b32": ("b32", ("b32", "b32"), lambda a, b: a | b),
    "v_xor_b32": ("b32", ("b32", "b32"), lambda a, b: a ^ b),
    "v_xnor_b32": ("b32", ("b32", "b32"), lambda a, b: ~(a ^ b)),
    "v_or3_b32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: a | b | c),
    "v_xor3_b32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: a ^ b ^ c),
    "v_and_or_b32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: (a & b) | c),
    "v_lshl_or_b32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: (a << _sh32(b)) | c),
    "v_lshl_add_u32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a << _sh32(b)) + c),
    "v_add_lshl_u32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a + b) << _sh32(c)),
    "v_add3_u32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: a + b + c),
    "v_xad_u32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: (a ^ b) + c),
    "v_lshlrev_b32": ("b32", ("b32", "b32"), lambda a, b: b << _sh32(a)),
    "v_lshrrev_b32": ("b32", ("b32", "b32"), lambda a, b: b >> _sh32(a)),
    "v_ashrrev_i32": ("i32", ("u32", "i32"), lambda a, b: b >> _sh32(a).astype(i32)),
    "v_lshlrev_b16": ("b16", ("b16", "b16"), lambda a, b: b << (a & np.uint16(15))),
    "v_lshrrev_b16": ("b16", ("b16", "b16"), lambda a, b: b >> (a & np.uint16(15))),
    "v_ashrrev_i16": ("i16", ("u16", "i16"),
                      lambda a, b: b >> (a & np.uint16(15)).astype(np.int16)),
    "v_lshlrev_b64": ("b64", ("u32", "b64"), lambda a, b: b << _sh64(a)),
    "v_lshrrev_b64": ("b64", ("u32", "b64"), lambda a, b: b >> _sh64(a)),
    "v_ashrrev_i64": ("i64", ("u32", "i64"), lambda a, b: b >> _sh64(a).astype(i64)),
    "v_lshl_add_u64": ("u64", ("u64", "u32", "u64"),
                       lambda a, b, c: (a << (np.asarray(b).astype(u64) & u64(7))) + c),
    "v_add_nc_u64": ("u64", ("u64", "u64"), lambda a, b: a + b),
    "v_sub_nc_u64": ("u64", ("u64", "u64"), lambda a, b: a - b),
    "v_mul_u64": ("u64", ("u64", "u64"), lambda a, b: a * b),
    "v_bfe_u32": ("u32", ("u32", "u32", "u32"), _bfe_u32),
    "v_bfe_i32": ("i32", ("i32", "u32", "u32"), _bfe_i32),
    "v_bfi_b32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: (a & b) | (~a & c)),
    "v_bfm_b32": ("b32", ("b32", "b32"),
                  lambda a, b: (((u64(1) << (np.asarray(a).astype(u64) & u64(31))) - u64(1))
                                << (np.asarray(b).astype(u64) & u64(31))).astype(u32)),
    "v_alignbit_b32": ("b32", ("b32", "b32", "b32"), _alignbit),
    "v_alignbyte_b32": ("b32", ("b32", "b32", "b32"), _alignbyte),
    "v_bcnt_u32_b32": ("u32", ("u32", "u32"), lambda a, b: np.bitwise_count(a).astype(u32) + b),
    "v_max_u32": ("u32", ("u32", "u32"), np.maximum),
    "v_min_u32": ("u32", ("u32", "u32"), np.minimum),
    "v_max_i32": ("i32", ("i32", "i32"), np.maximum),
    "v_min_i32": ("i32", ("i32", "i32"), np.minimum),
    "v_max_u16": ("u16", ("u16", "u16"), np.maximum),
    "v_min_u16": ("u16", ("u16", "u16"), np.minimum),
    "v_max_i16": ("i16", ("i16", "i16"), np.maximum),
    "v_min_i16": ("i16", ("i16", "i16"), np.minimum),
    "v_max3_u32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "v_min3_u32": ("u32", ("u32", "u32", "u32"), lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "v_max3_i32": ("i32", ("i32", "i32", "i32"), lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "v_min3_i32": ("i32", ("i32", "i32", "i32"), lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "v_med3_i32": ("i32", ("i32", "i32", "i32"), _med3_int),
    "v_med3_u32": ("u32", ("u32", "u32", "u32"), _med3_int),
    "v_maxmin_u32": ("u32", ("u32", "u32", "u32"), _chain(np.minimum, np.maximum)),
    "v_minmax_u32": ("u32", ("u32", "u32", "u32"), _chain(np.maximum, np.minimum)),
    "v_maxmin_i32": ("i32", ("i32", "i32", "i32"), _chain(np.minimum, np.maximum)),
    "v_minmax_i32": ("i32", ("i32", "i32", "i32"), _chain(np.maximum, np.minimum)),
    "v_max3_u16": ("u16", ("u16", "u16", "u16"), _chain(np.maximum, np.maximum)),
    "v_min3_u16": ("u16", ("u16", "u16", "u16"), _chain(np.minimum, np.minimum)),
    "v_max3_i16": ("i16", ("i16", "i16", "i16"), _chain(np.maximum, np.maximum)),
    "v_min3_i16": ("i16", ("i16", "i16", "i16"), _chain(np.minimum, np.minimum)),
    "v_med3_u16": ("u16", ("u16", "u16", "u16"), _med3_int),
    "v_med3_i16": ("i16", ("i16", "i16", "i16"), _med3_int),
    "v_sad_u32": ("u32", ("u32", "u32", "u32"),
                  lambda a, b, c: np.where(a > b, a - b, b - a) + c),
    "v_cvt_f32_u32": ("f32", ("u32",), lambda a: a.astype(f32)),
    "v_cvt_f32_i32": ("f32", ("i32",), lambda a: a.astype(f32)),
    "v_cvt_u32_f32": ("u32", ("f32",), _cvt_f32_to_u32),
    "v_cvt_i32_f32": ("i32", ("f32",), _cvt_f32_to_i32),
    "v_cvt_f64_f32": ("f64", ("f32",), lambda a: a.astype(f64)),
    "v_cvt_f32_f64": ("f32", ("f64",), lambda a: a.astype(f32)),
    "v_cvt_f64_i32": ("f64", ("i32",), lambda a: a.astype(f64)),
    "v_cvt_f64_u32": ("f64", ("u32",), lambda a: a.astype(f64)),
    "v_cvt_i32_f64": ("i32", ("f64",), _cvt_f32_to_i32),
    "v_cvt_u32_f64": ("u32", ("f64",), _cvt_f32_to_u32),
    "v_cvt_f16_f32": ("f16", ("f32",), lambda a: a.astype(f16)),
    "v_cvt_f32_f16": ("f32", ("f16",), lambda a: a.astype(f32)),
    "v_cvt_f16_u16": ("f16", ("u16",), lambda a: a.astype(f16)),
    "v_cvt_f16_i16": ("f16", ("i16",), lambda a: a.astype(f16)),
    "v_cvt_u16_f16": ("u16", ("f16",), lambda a: np.clip(np.nan_to_num(np.trunc(a.astype(f32))),
                                                         0, 65535).astype(np.uint16)),
    "v_cvt_i16_f16": ("i16", ("f16",), lambda a: np.clip(np.nan_to_num(np.trunc(a.astype(f32))),
                                                         -32768, 32767).astype(np.int16)),
    "v_cvt_pkrtz_f16_f32": ("b32", ("f32", "f32"), _cvt_pkrtz),
    "v_cvt_pk_rtz_f16_f32": ("b32", ("f32", "f32"), _cvt_pkrtz),
    "v_cvt_f32_ubyte0": ("f32", ("b32",), _cvt_ubyte(0)),
    "v_cvt_f32_ubyte1": ("f32", ("b32",), _cvt_ubyte(1)),
    "v_cvt_f32_ubyte2": ("f32", ("b32",), _cvt_ubyte(2)),
    "v_cvt_f32_ubyte3": ("f32", ("b32",), _cvt_ubyte(3)),
    "v_cvt_rpi_i32_f32": ("i32", ("f32",), lambda a: _cvt_f32_to_i32(np.floor(a + f32(0.5)))),
    "v_cvt_flr_i32_f32": ("i32", ("f32",), lambda a: _cvt_f32_to_i32(np.floor(a))),
    "v_ffbh_u32": ("u32", ("u32",), lambda a: _ffbh(a)),
    "v_clz_i32_u32": ("u32", ("u32",), lambda a: _ffbh(a)),
    "v_ffbl_b32": ("u32", ("u32",), lambda a: _ffbl(a)),
    "v_ctz_i32_b32": ("u32", ("u32",), lambda a: _ffbl(a)),
    "v_perm_b32": ("b32", ("b32", "b32", "b32"), lambda a, b, c: _perm(a, b, c)),
    "v_pack_b32_f16": ("b32", ("f16", "f16"),
                       lambda a, b: a.view(np.uint16).astype(u32)
                       | (b.view(np.uint16).astype(u32) << u32(16))),
})


# --- more VALU (CDNA3 / RDNA4 ISA pseudocode of each opcode) -------------------------------------

def _mad16(a, b, c):
    """V_MAD_F16 (not fused): the product rounded to f16, then the sum rounded to f16 (both exact
    in float64 before their rounding)."""
    product = (np.asarray(a, f64) * np.asarray(b, f64)).astype(f16)
    return (product.astype(f64) + np.asarray(c, f64)).astype(f16)


def _wrap(ty: str, fn):
    """An integer operation computed exactly in int64, wrapped to ``ty``."""
    dtype = {"u16": np.uint16, "i16": np.int16, "u32": u32, "i32": i32}[ty]
    bits = {"u16": 0xFFFF, "i16": 0xFFFF, "u32": 0xFFFFFFFF, "i32": 0xFFFFFFFF}[ty]

    def run(*args):
        value = fn(*(np.asarray(a).astype(i64) for a in args))
        unsigned = (np.asarray(value) & bits).astype(u64)
        return unsigned.astype({"u16": np.uint16, "i16": np.uint16, "u32": u32, "i32": u32}[ty]) \
            .view(dtype)
    run.exact = fn          # the unwrapped result, for clamp (saturation)
    return run


def _div_fixup_legacy_f16(q, den, num):
    """V_DIV_FIXUP_LEGACY_F16 (CDNA3 ISA): special cases of S2 / S1 on the quotient S0."""
    q, den, num = (np.asarray(x, f16) for x in (q, den, num))
    shape = np.broadcast_shapes(q.shape, den.shape, num.shape)
    q, den, num = (np.broadcast_to(x, shape) for x in (q, den, num))
    neg = np.signbit(den) ^ np.signbit(num)
    out = np.where(neg, -np.abs(q), np.abs(q)).astype(f16)
    out = np.where((np.abs(den) == np.inf) | (num == 0), np.where(neg, f16(-0.0), f16(0.0)), out)
    out = np.where((den == 0) | (np.abs(num) == np.inf), np.where(neg, f16(-np.inf), f16(np.inf)),
                   out)
    both = ((den == 0) & (num == 0)) | ((np.abs(den) == np.inf) & (np.abs(num) == np.inf))
    out = np.where(both, np.uint16(0xFE00).view(f16), out)
    out = np.where(np.isnan(den), _quiet(den), out)
    return np.where(np.isnan(num), _quiet(num), out).astype(f16)


def _cube(kind: str):
    """V_CUBEID/V_CUBESC/V_CUBETC/V_CUBEMA_F32: the face, S and T coordinates and twice the major
    axis of the direction (S0, S1, S2) = (x, y, z)."""
    def cube(x, y, z):
        x, y, z = (np.asarray(v, f32) for v in (x, y, z))
        on_z = (np.abs(z) >= np.abs(x)) & (np.abs(z) >= np.abs(y))
        on_y = ~on_z & (np.abs(y) >= np.abs(x))
        if kind == "id":
            face = np.where(on_z, np.where(z < 0, 5, 4), np.where(on_y, np.where(y < 0, 3, 2),
                                                                  np.where(x < 0, 1, 0)))
            return face.astype(f32)
        if kind == "ma":
            return np.where(on_z, z, np.where(on_y, y, x)) * f32(2.0)
        if kind == "sc":
            return np.where(on_z, np.where(z < 0, -x, x), np.where(on_y, x, np.where(x < 0, z, -z)))
        return np.where(on_z, -y, np.where(on_y, np.where(y < 0, -z, z), -y))
    return cube


def _bytes_of(a, count=4):
    a = np.asarray(a).astype(u64)
    return [((a >> u64(8 * i)) & u64(0xFF)).astype(i64) for i in range(count)]


def _lerp_u8(a, b, c):
    """V_LERP_U8: per byte (S0 + S1 + the byte's low bit of S2) >> 1."""
    out = np.zeros(np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(c)), u32)
    cb = np.asarray(c).astype(u32)
    for i, (x, y) in enumerate(zip(_bytes_of(a), _bytes_of(b))):
        rnd = ((cb >> u32(8 * i)) & u32(1)).astype(i64)
        out = out | (((x + y + rnd) >> 1).astype(u32) << u32(8 * i))
    return out


def _sad_u8(a, b, c):
    """V_SAD_U8: S2 + the sum of |byte differences|."""
    total = np.asarray(c).astype(i64)
    for x, y in zip(_bytes_of(a), _bytes_of(b)):
        total = total + np.abs(x - y)
    return (total & 0xFFFFFFFF).astype(u32)


def _msad_u8(a, b, c):
    """V_MSAD_U8: as V_SAD_U8, skipping the bytes where S1 is 0 (masked SAD)."""
    total = np.asarray(c).astype(i64)
    for x, y in zip(_bytes_of(a), _bytes_of(b)):
        total = total + np.where(y == 0, 0, np.abs(x - y))
    return (total & 0xFFFFFFFF).astype(u32)


def _sad_u16(a, b, c):
    a = np.asarray(a).astype(i64)
    b = np.asarray(b).astype(i64)
    total = np.asarray(c).astype(i64) + np.abs((a & 0xFFFF) - (b & 0xFFFF)) \
        + np.abs(((a >> 16) & 0xFFFF) - ((b >> 16) & 0xFFFF))
    return (total & 0xFFFFFFFF).astype(u32)


def _quad_sad(sad):
    """V_QSAD_PK_U16_U8 / V_MQSAD_PK_U16_U8: four SADs of S1 against the dwords of S0 at byte
    offsets 0..3, each accumulated into a 16-bit lane of S2 (low 16 bits of each SAD kept)."""
    def qsad(a, b, c):
        a = np.asarray(a).astype(u64)
        c = np.asarray(c).astype(u64)
        out = np.zeros(np.broadcast_shapes(a.shape, np.shape(b), c.shape), u64)
        for i in range(4):
            window = ((a >> u64(8 * i)) & u64(0xFFFFFFFF)).astype(u32)
            acc = ((c >> u64(16 * i)) & u64(0xFFFF)).astype(u32)
            out = out | ((sad(window, b, acc).astype(u64) & u64(0xFFFF)) << u64(16 * i))
        return out
    return qsad


def mqsad_u32(a, b, c: list):
    """V_MQSAD_U32_U8: four masked SADs as V_MQSAD_PK_U16_U8, each into a whole dword of the
    128-bit S2 / D."""
    a = np.asarray(a).astype(u64)
    return [_msad_u8(((a >> u64(8 * i)) & u64(0xFFFFFFFF)).astype(u32), b, c[i]) for i in range(4)]


def _pack_pair(lo_bits, hi_bits):
    return (np.asarray(lo_bits).astype(np.uint16).astype(u32)
            | (np.asarray(hi_bits).astype(np.uint16).astype(u32) << u32(16)))


def _f32_to_int16(x, signed: bool):
    """A saturating float -> 16-bit integer conversion, truncating, NaN -> 0 (as V_CVT_I32_F32 to
    the 16-bit range)."""
    x = np.nan_to_num(np.trunc(np.asarray(x, f64)), nan=0.0)
    lo, hi = (-32768, 32767) if signed else (0, 65535)
    return np.clip(x, lo, hi).astype(np.int64).astype(np.int16 if signed else np.uint16)


def _mullit(a, b, c):
    """V_MULLIT_F32: -MAX_FLOAT when S1 is -MAX_FLOAT, -inf or NaN, or S2 is <= 0 or NaN;
    otherwise S0 * S1."""
    a, b, c = (np.asarray(v, f32) for v in (a, b, c))
    lowest = np.finfo(f32).min
    bad = (b == lowest) | (b == -np.inf) | np.isnan(b) | (c <= 0) | np.isnan(c)
    return np.where(bad, lowest, a * b).astype(f32)


def _cvt_off_i4(a):
    """V_CVT_OFF_F32_I4: a signed 4-bit integer times 1/16 (1000b -> -0.5, 0111b -> 0.4375)."""
    nibble = np.asarray(a).astype(i64) & 15
    return (((nibble ^ 8) - 8) / 16.0).astype(f32)


def _sat_pk_u8(a):
    """V_SAT_PK_U8_I16: each signed 16-bit half clamped to [0, 255], packed in 16 bits."""
    a = np.asarray(a).astype(u32)
    lo = (a & u32(0xFFFF)).astype(np.uint16).view(np.int16).astype(i64)
    hi = (a >> u32(16)).astype(np.uint16).view(np.int16).astype(i64)
    return (np.clip(lo, 0, 255) | (np.clip(hi, 0, 255) << 8)).astype(np.uint16)


def _fma_dx9_zero(a, b, c):
    """V_FMA_DX9_ZERO_F32: DX9 rules, 0 * anything = 0, so S2 when S0 or S1 is 0."""
    a, b, c = (np.asarray(v, f32) for v in (a, b, c))
    return np.where((a == 0) | (b == 0), c, _fma(f32)(a, b, c)).astype(f32)


def _to_norm(x, signed: bool):
    """f32_to_snorm / f32_to_unorm (and the f16 forms): clamp to [-1, 1] / [0, 1], scale by
    32767 / 65535 and round to nearest even, as the VALU's float-to-integer conversions in the
    default mode; NaN gives 0."""
    x = np.nan_to_num(np.asarray(x, f64), nan=0.0)
    if signed:
        return np.rint(np.clip(x, -1.0, 1.0) * 32767.0).astype(np.int16)
    return np.rint(np.clip(x, 0.0, 1.0) * 65535.0).astype(np.uint16)


def _to_u8(x):
    """f32_to_u8: clamp to [0, 255] and round to nearest even; NaN gives 0."""
    x = np.nan_to_num(np.asarray(x, f64), nan=0.0)
    return np.rint(np.clip(x, 0.0, 255.0)).astype(u32)


def _insert_u8(x, byte, old):
    """V_CVT_PK_U8_F32: f32_to_u8(S0) into byte S1[1:0] of S2, the other bytes kept."""
    shift = (np.asarray(byte).astype(u32) & u32(3)) * u32(8)
    kept = np.asarray(old).astype(u32) & ~(u32(0xFF) << shift)
    return (kept | (_to_u8(x) << shift)).astype(u32)


def _pack_norm(signed: bool):
    return lambda a, b: _pack_pair(_to_norm(a, signed).view(np.uint16) if signed
                                   else _to_norm(a, signed),
                                   _to_norm(b, signed).view(np.uint16) if signed
                                   else _to_norm(b, signed))


VALU.update({
    "v_ffbh_i32": ("u32", ("u32",), lambda a: _cls32(a)),
    "v_cls_i32": ("u32", ("u32",), lambda a: _cls32(a)),
    # CDNA3 ISA V_CVT_OFF_F32_I4: a signed 4-bit integer times 1/16 (1000b -> -0.5, 0111b -> 0.4375)
    "v_cvt_off_f32_i4": ("f32", ("u32",), _cvt_off_i4),
    "v_sat_pk_u8_i16": ("u16", ("b32",), _sat_pk_u8),
    "v_mad_f16": ("f16", ("f16", "f16", "f16"), _mad16),
    "v_mad_legacy_f16": ("f16", ("f16", "f16", "f16"), _mad16),
    "v_mac_f16": ("f16", ("f16", "f16", "f16"), _mad16),     # third source = the destination
    "v_madmk_f16": ("f16", ("f16", "f16", "f16"), _mad16),
    "v_madak_f16": ("f16", ("f16", "f16", "f16"), _mad16),
    "v_fma_legacy_f16": ("f16", ("f16", "f16", "f16"), _fma(f16)),
    "v_div_fixup_legacy_f16": ("f16", ("f16", "f16", "f16"), _div_fixup_legacy_f16),
    "v_mad_u16": ("u16", ("u16", "u16", "u16"), _wrap("u16", lambda a, b, c: a * b + c)),
    "v_mad_i16": ("i16", ("i16", "i16", "i16"), _wrap("i16", lambda a, b, c: a * b + c)),
    "v_mad_legacy_u16": ("u16", ("u16", "u16", "u16"), _wrap("u16", lambda a, b, c: a * b + c)),
    "v_mad_legacy_i16": ("i16", ("i16", "i16", "i16"), _wrap("i16", lambda a, b, c: a * b + c)),
    "v_mad_i32_i16": ("i32", ("i16", "i16", "i32"), _wrap("i32", lambda a, b, c: a * b + c)),
    "v_add_i16": ("i16", ("i16", "i16"), lambda a, b: a + b),
    "v_sub_i16": ("i16", ("i16", "i16"), lambda a, b: a - b),
    "v_add_nc_i16": ("i16", ("i16", "i16"), lambda a, b: a + b),
    "v_sub_nc_i16": ("i16", ("i16", "i16"), lambda a, b: a - b),
    "v_sub_nc_u16": ("u16", ("u16", "u16"), lambda a, b: a - b),
    "v_subrev_u16": ("u16", ("u16", "u16"), lambda a, b: b - a),
    "v_not_b16": ("u16", ("u16",), np.invert),
    "v_and_b16": ("u16", ("u16", "u16"), lambda a, b: a & b),
    "v_or_b16": ("u16", ("u16", "u16"), lambda a, b: a | b),
    "v_xor_b16": ("u16", ("u16", "u16"), lambda a, b: a ^ b),
    "v_cvt_i32_i16": ("i32", ("i16",), lambda a: np.asarray(a).astype(i32)),
    "v_cvt_u32_u16": ("u32", ("u16",), lambda a: np.asarray(a).astype(u32)),
    "v_cvt_nearest_i32_f32": ("i32", ("f32",), lambda a: _cvt_f32_to_i32(np.floor(a + f32(0.5)))),
    "v_cvt_floor_i32_f32": ("i32", ("f32",), lambda a: _cvt_f32_to_i32(np.floor(a))),
    "v_cubeid_f32": ("f32", ("f32", "f32", "f32"), _cube("id")),
    "v_cubesc_f32": ("f32", ("f32", "f32", "f32"), _cube("sc")),
    "v_cubetc_f32": ("f32", ("f32", "f32", "f32"), _cube("tc")),
    "v_cubema_f32": ("f32", ("f32", "f32", "f32"), _cube("ma")),
    "v_lerp_u8": ("u32", ("u32", "u32", "u32"), _lerp_u8),
    "v_sad_u8": ("u32", ("u32", "u32", "u32"), _sad_u8),
    "v_sad_hi_u8": ("u32", ("u32", "u32", "u32"),
                    lambda a, b, c: ((_sad_u8(a, b, u32(0)).astype(u64) << u64(16))
                                     + np.asarray(c).astype(u64)).astype(u32)),
    "v_sad_u16": ("u32", ("u32", "u32", "u32"), _sad_u16),
    "v_msad_u8": ("u32", ("u32", "u32", "u32"), _msad_u8),
    "v_qsad_pk_u16_u8": ("b64", ("b64", "b32", "b64"), _quad_sad(_sad_u8)),
    "v_mqsad_pk_u16_u8": ("b64", ("b64", "b32", "b64"), _quad_sad(_msad_u8)),
    # saturating packs: the clamp of LLVM's saturating truncates (TRUNCATE_[SU]SAT) and of
    # fptosi.sat, which LLVM selects these instructions for
    "v_cvt_pk_u16_u32": ("b32", ("u32", "u32"),
                         lambda a, b: _pack_pair(np.minimum(np.asarray(a).astype(i64), 0xFFFF),
                                                 np.minimum(np.asarray(b).astype(i64), 0xFFFF))),
    "v_cvt_pk_i16_i32": ("b32", ("i32", "i32"),
                         lambda a, b: _pack_pair(np.clip(np.asarray(a).astype(i64), -32768, 32767)
                                                 & 0xFFFF,
                                                 np.clip(np.asarray(b).astype(i64), -32768, 32767)
                                                 & 0xFFFF)),
    "v_cvt_pk_i16_f32": ("b32", ("f32", "f32"),
                         lambda a, b: _pack_pair(_f32_to_int16(a, True).view(np.uint16),
                                                 _f32_to_int16(b, True).view(np.uint16))),
    "v_cvt_pk_u16_f32": ("b32", ("f32", "f32"),
                         lambda a, b: _pack_pair(_f32_to_int16(a, False), _f32_to_int16(b, False))),
    "v_cvt_norm_i16_f16": ("i16", ("f16",), lambda a: _to_norm(a, True)),
    "v_cvt_norm_u16_f16": ("u16", ("f16",), lambda a: _to_norm(a, False)),
    "v_cvt_pknorm_i16_f32": ("b32", ("f32", "f32"), _pack_norm(True)),
    "v_cvt_pknorm_u16_f32": ("b32", ("f32", "f32"), _pack_norm(False)),
    "v_cvt_pknorm_i16_f16": ("b32", ("f16", "f16"), _pack_norm(True)),
    "v_cvt_pknorm_u16_f16": ("b32", ("f16", "f16"), _pack_norm(False)),
    "v_cvt_pk_norm_i16_f32": ("b32", ("f32", "f32"), _pack_norm(True)),
    "v_cvt_pk_norm_u16_f32": ("b32", ("f32", "f32"), _pack_norm(False)),
    "v_cvt_pk_norm_i16_f16": ("b32", ("f16", "f16"), _pack_norm(True)),
    "v_cvt_pk_norm_u16_f16": ("b32", ("f16", "f16"), _pack_norm(False)),
    "v_cvt_pk_u8_f32": ("u32", ("f32", "u32", "u32"), _insert_u8),
    "v_cvt_pkaccum_u8_f32": ("u32", ("f32", "u32", "u32"), _insert_u8),   # S2 = the destination
    "v_mullit_f32": ("f32", ("f32", "f32", "f32"), _mullit),
    "v_fma_dx9_zero_f32": ("f32", ("f32", "f32", "f32"), _fma_dx9_zero),
    "v_fmac_dx9_zero_f32": ("f32", ("f32", "f32", "f32"), _fma_dx9_zero),
})


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


VALU["v_trig_preop_f64"] = ("f64", ("f64", "u32"), _trig_preop)


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


def _bitreverse32(a):
    a = np.asarray(a).astype(u32)
    as_bytes = a[..., None].view(np.uint8)
    bits = np.unpackbits(as_bytes, axis=-1, bitorder="little")[..., ::-1]
    return np.packbits(bits, axis=-1, bitorder="little").view(u32)[..., 0]


def _ffbh(a):
    a = np.asarray(a).astype(u32)
    with np.errstate(all="ignore"):
        lead = 31 - np.floor(np.log2(np.maximum(a, 1).astype(f64))).astype(np.int64)
    return np.where(a == 0, u32(0xFFFFFFFF), lead.astype(u32))


def _ffbl(a):
    a = np.asarray(a).astype(u32)
    low = a & (~a + u32(1))
    with np.errstate(all="ignore"):
        index = np.floor(np.log2(np.maximum(low, 1).astype(f64))).astype(np.int64)
    return np.where(a == 0, u32(0xFFFFFFFF), index.astype(u32))


def _perm(a, b, c):
    # V_PERM_B32: byte select from {S0, S1} by each byte of S2 (0-7 bytes; 8-11 replicate the
    # sign bit of byte 1, 3, 5, 7 -- bits 15, 31, 47, 63; 12 = 0x00, >= 13 = 0xFF).
    src = (np.asarray(a).astype(u64) << u64(32)) | np.asarray(b).astype(u64)
    c = np.asarray(c).astype(u32)
    out = np.zeros(np.broadcast_shapes(src.shape, c.shape), u32)
    for byte in range(4):
        sel = (c >> u32(8 * byte)) & u32(0xFF)
        value = ((src >> (sel.astype(u64) * u64(8) % u64(64))) & u64(0xFF)).astype(u32)
        sign_bit = (u64(16) * ((sel.astype(u64) - u64(8)) & u64(3)) + u64(15))
        sign_byte = ((src >> sign_bit) & u64(1)).astype(u32) * u32(0xFF)
        value = np.where(sel >= 8, sign_byte, value)
        value = np.where(sel == 12, u32(0), value)
        value = np.where(sel >= 13, u32(0xFF), value)
        out |= value << u32(8 * byte)
    return out


# --- compares ---------------------------------------------------------------------------------

_CMP_RE = re.compile(r"^v_cmpx?_([a-z]+)_(f16|f32|f64|i16|u16|i32|u32|i64|u64)$")


def _compare_fn(op: str, is_float: bool):
    table = {
        "f": lambda a, b: np.zeros(np.broadcast_shapes(np.shape(a), np.shape(b)), bool),
        "t": lambda a, b: np.ones(np.broadcast_shapes(np.shape(a), np.shape(b)), bool),
        "tru": lambda a, b: np.ones(np.broadcast_shapes(np.shape(a), np.shape(b)), bool),
        "lt": np.less, "eq": np.equal, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal,
        "ne": np.not_equal,
        "lg": (lambda a, b: (a < b) | (a > b)) if is_float else np.not_equal,
        "o": lambda a, b: ~(np.isnan(a) | np.isnan(b)),
        "u": lambda a, b: np.isnan(a) | np.isnan(b),
        "nge": lambda a, b: ~(a >= b), "nlg": lambda a, b: ~((a < b) | (a > b)),
        "ngt": lambda a, b: ~(a > b), "nle": lambda a, b: ~(a <= b),
        "neq": lambda a, b: ~(a == b), "nlt": lambda a, b: ~(a < b),
    }
    return table.get(op)


def compare_spec(name: str):
    """(source type, function -> bool lanes, writes_exec) for a v_cmp / v_cmpx mnemonic."""
    if name.startswith(("v_cmp_class_", "v_cmpx_class_")):
        ty = name.rsplit("_", 1)[1]
        return ty, _class_fn, name.startswith("v_cmpx")
    match = _CMP_RE.match(name)
    if not match:
        return None
    op, ty = match.groups()
    fn = _compare_fn(op, ty[0] == "f")
    if fn is None:
        return None
    return ty, fn, name.startswith("v_cmpx")


def _class_fn(a, mask):
    a = np.asarray(a)
    mask = np.asarray(mask).astype(u32)
    tiny = np.finfo(a.dtype).tiny
    isnan = np.isnan(a)
    bits = a.view({2: np.uint16, 4: u32, 8: u64}[a.dtype.itemsize])
    mant_top = {2: 9, 4: 22, 8: 51}[a.dtype.itemsize]
    quiet = ((bits >> bits.dtype.type(mant_top)) & bits.dtype.type(1)).astype(bool)
    neg = np.signbit(a)
    mag = np.abs(a)
    classes = [
        isnan & ~quiet, isnan & quiet,
        neg & np.isinf(a), neg & (mag >= tiny) & np.isfinite(a), neg & (mag < tiny) & (mag > 0),
        neg & (a == 0), ~neg & (a == 0), ~neg & (mag < tiny) & (mag > 0),
        ~neg & (mag >= tiny) & np.isfinite(a), ~neg & np.isinf(a),
    ]
    out = np.zeros(np.broadcast_shapes(a.shape, mask.shape), bool)
    for bit, cls in enumerate(classes):
        out |= cls & ((mask >> u32(bit)) & u32(1)).astype(bool)
    return out


# --- scalar ALU --------------------------------------------------------------------------------
# name -> (dst type, src types, fn -> value, scc rule). The scc rule is None (SCC unchanged),
# "nz" (SCC = result != 0) or a function of the sources returning bool per wave.

def _carry_add(a, b):
    return (a.astype(u64) + np.asarray(b).astype(u64)) > u64(0xFFFFFFFF)


def _signed_overflow_add(a, b):
    s = np.asarray(a).astype(i64) + np.asarray(b).astype(i64)
    return (s > 0x7FFFFFFF) | (s < -0x80000000)


def _signed_overflow_sub(a, b):
    s = np.asarray(a).astype(i64) - np.asarray(b).astype(i64)
    return (s > 0x7FFFFFFF) | (s < -0x80000000)


# SGPRs a wave may address directly (s0..s101 on gfx9, s0..s105 on gfx11/gfx12)
SGPR_COUNT = {"gfx9": 102, "gfx11": 106, "gfx12": 106}

SALU: dict[str, tuple] = {
    "s_mov_b32": ("b32", ("b32",), lambda a: a, None),
    "s_mov_b64": ("b64", ("b64",), lambda a: a, None),
    "s_cmov_b32": ("b32", ("b32",), None, None),      # handled specially
    "s_cmov_b64": ("b64", ("b64",), None, None),
    "s_not_b32": ("b32", ("b32",), np.invert, "nz"),
    "s_not_b64": ("b64", ("b64",), np.invert, "nz"),
    "s_brev_b32": ("b32", ("b32",), _bitreverse32, None),
    "s_bcnt1_i32_b32": ("u32", ("b32",), lambda a: np.bitwise_count(a).astype(u32), "nz"),
    "s_bcnt1_i32_b64": ("u32", ("b64",), lambda a: np.bitwise_count(a).astype(u32), "nz"),
    "s_ff1_i32_b32": ("u32", ("u32",), _ffbl, None),
    "s_ctz_i32_b32": ("u32", ("u32",), _ffbl, None),
    "s_ff1_i32_b64": ("u32", ("u64",), lambda a: _ffbl64(a), None),
    "s_ctz_i32_b64": ("u32", ("u64",), lambda a: _ffbl64(a), None),
    "s_flbit_i32_b32": ("u32", ("u32",), _ffbh, None),
    "s_clz_i32_u32": ("u32", ("u32",), _ffbh, None),
    "s_sext_i32_i8": ("i32", ("b32",), lambda a: (a.astype(u32) << u32(24)).view(i32) >> 24, None),
    "s_sext_i32_i16": ("i32", ("b32",), lambda a: (a.astype(u32) << u32(16)).view(i32) >> 16, None),
    "s_abs_i32": ("i32", ("i32",), lambda a: np.abs(a), "nz"),
    "s_add_u32": ("u32", ("u32", "u32"), lambda a, b: a + b, _carry_add),
    "s_add_co_u32": ("u32", ("u32", "u32"), lambda a, b: a + b, _carry_add),
    "s_sub_u32": ("u32", ("u32", "u32"), lambda a, b: a - b, lambda a, b: b > a),
    "s_sub_co_u32": ("u32", ("u32", "u32"), lambda a, b: a - b, lambda a, b: b > a),
    "s_add_i32": ("i32", ("i32", "i32"), lambda a, b: a + b, _signed_overflow_add),
    "s_add_co_i32": ("i32", ("i32", "i32"), lambda a, b: a + b, _signed_overflow_add),
    "s_sub_i32": ("i32", ("i32", "i32"), lambda a, b: a - b, _signed_overflow_sub),
    "s_sub_co_i32": ("i32", ("i32", "i32"), lambda a, b: a - b, _signed_overflow_sub),
    "s_add_nc_u64": ("u64", ("u64", "u64"), lambda a, b: a + b, None),
    "s_sub_nc_u64": ("u64", ("u64", "u64"), lambda a, b: a - b, None),
    "s_mul_u64": ("u64", ("u64", "u64"), lambda a, b: a * b, None),
    "s_mul_i32": ("i32", ("i32", "i32"), lambda a, b: a * b, None),
    "s_mul_hi_u32": ("u32", ("u32", "u32"), _mul_hi_u32, None),
    "s_mul_hi_i32": ("i32", ("i32", "i32"), _mul_hi_i32, None),
    "s_and_b32": ("b32", ("b32", "b32"), lambda a, b: a & b, "nz"),
    "s_and_b64": ("b64", ("b64", "b64"), lambda a, b: a & b, "nz"),
    "s_or_b32": ("b32", ("b32", "b32"), lambda a, b: a | b, "nz"),
    "s_or_b64": ("b64", ("b64", "b64"), lambda a, b: a | b, "nz"),
    "s_xor_b32": ("b32", ("b32", "b32"), lambda a, b: a ^ b, "nz"),
    "s_xor_b64": ("b64", ("b64", "b64"), lambda a, b: a ^ b, "nz"),
    "s_andn2_b32": ("b32", ("b32", "b32"), lambda a, b: a & ~b, "nz"),
    "s_andn2_b64": ("b64", ("b64", "b64"), lambda a, b: a & ~b, "nz"),
    "s_and_not1_b32": ("b32", ("b32", "b32"), lambda a, b: a & ~b, "nz"),
    "s_and_not1_b64": ("b64", ("b64", "b64"), lambda a, b: a & ~b, "nz"),
    "s_orn2_b32": ("b32", ("b32", "b32"), lambda a, b: a | ~b, "nz"),
    "s_orn2_b64": ("b64", ("b64", "b64"), lambda a, b: a | ~b, "nz"),
    "s_or_not1_b32": ("b32", ("b32", "b32"), lambda a, b: a | ~b, "nz"),
    "s_or_not1_b64": ("b64", ("b64", "b64"), lambda a, b: a | ~b, "nz"),
    "s_nand_b32": ("b32", ("b32", "b32"), lambda a, b: ~(a & b), "nz"),
    "s_nand_b64": ("b64", ("b64", "b64"), lambda a, b: ~(a & b), "nz"),
    "s_nor_b32": ("b32", ("b32", "b32"), lambda a, b: ~(a | b), "nz"),
    "s_nor_b64": ("b64", ("b64", "b64"), lambda a, b: ~(a | b), "nz"),
    "s_xnor_b32": ("b32", ("b32", "b32"), lambda a, b: ~(a ^ b), "nz"),
    "s_xnor_b64": ("b64", ("b64", "b64"), lambda a, b: ~(a ^ b), "nz"),
    "s_lshl_b32": ("b32", ("b32", "b32"), lambda a, b: a << _sh32(b), "nz"),
    "s_lshl_b64": ("b64", ("b64", "b32"), lambda a, b: a << _sh64(b), "nz"),
    "s_lshr_b32": ("b32", ("b32", "b32"), lambda a, b: a >> _sh32(b), "nz"),
    "s_lshr_b64": ("b64", ("b64", "b32"), lambda a, b: a >> _sh64(b), "nz"),
    "s_ashr_i32": ("i32", ("i32", "b32"), lambda a, b: a >> _sh32(b).astype(i32), "nz"),
    "s_ashr_i64": ("i64", ("i64", "b32"), lambda a, b: a >> _sh64(b).astype(i64), "nz"),
    "s_lshl1_add_u32": ("u32", ("u32", "u32"), lambda a, b: (a << u32(1)) + b,
                        lambda a, b: _carry_add(np.asarray(a).astype(u64) << u64(1), b)),
    "s_lshl2_add_u32": ("u32", ("u32", "u32"), lambda a, b: (a << u32(2)) + b,
                        lambda a, b: _carry_add(np.asarray(a).astype(u64) << u64(2), b)),
    "s_lshl3_add_u32": ("u32", ("u32", "u32"), lambda a, b: (a << u32(3)) + b,
                        lambda a, b: _carry_add(np.asarray(a).astype(u64) << u64(3), b)),
    "s_lshl4_add_u32": ("u32", ("u32", "u32"), lambda a, b: (a << u32(4)) + b,
                        lambda a, b: _carry_add(np.asarray(a).astype(u64) << u64(4), b)),
    "s_bfe_u32": ("u32", ("u32", "u32"),
                  lambda a, b: _bfe_u32(a, b & u32(31), (b >> u32(16)) & u32(0x7F)), "nz"),
    "s_bfe_i32": ("i32", ("i32", "u32"),
                  lambda a, b: _bfe_i32(a, b & u32(31), (b >> u32(16)) & u32(0x7F)), "nz"),
    "s_bfm_b32": VALU["v_bfm_b32"] + (None,),
    "s_min_i32": ("i32", ("i32", "i32"), np.minimum, lambda a, b: a < b),
    "s_min_u32": ("u32", ("u32", "u32"), np.minimum, lambda a, b: a < b),
    "s_max_i32": ("i32", ("i32", "i32"), np.maximum, lambda a, b: a > b),
    "s_max_u32": ("u32", ("u32", "u32"), np.maximum, lambda a, b: a > b),
    "s_absdiff_i32": ("i32", ("i32", "i32"), lambda a, b: np.abs(a - b), "nz"),
    "s_pack_ll_b32_b16": ("b32", ("b32", "b32"),
                          lambda a, b: (a & u32(0xFFFF)) | (b << u32(16)), None),
    "s_pack_lh_b32_b16": ("b32", ("b32", "b32"),
                          lambda a, b: (a & u32(0xFFFF)) | (b & u32(0xFFFF0000)), None),
    "s_pack_hh_b32_b16": ("b32", ("b32", "b32"),
                          lambda a, b: (a >> u32(16)) | (b & u32(0xFFFF0000)), None),
    "s_pack_hl_b32_b16": ("b32", ("b32", "b32"),
                          lambda a, b: (a >> u32(16)) | (b << u32(16)), None),
    # gfx12 scalar float
    "s_add_f32": ("f32", ("f32", "f32"), lambda a, b: a + b, None),
    "s_sub_f32": ("f32", ("f32", "f32"), lambda a, b: a - b, None),
    "s_mul_f32": ("f32", ("f32", "f32"), lambda a, b: a * b, None),
    "s_max_num_f32": ("f32", ("f32", "f32"), _max, None),
    "s_min_num_f32": ("f32", ("f32", "f32"), _min, None),
    "s_fmac_f32": ("f32", ("f32", "f32", "f32"), _fma(f32), None),
    "s_fmamk_f32": ("f32", ("f32", "f32", "f32"), _fma(f32), None),
    "s_fmaak_f32": ("f32", ("f32", "f32", "f32"), _fma(f32), None),
    "s_cvt_f32_u32": ("f32", ("u32",), lambda a: a.astype(f32), None),
    "s_cvt_f32_i32": ("f32", ("i32",), lambda a: a.astype(f32), None),
    "s_cvt_u32_f32": ("u32", ("f32",), _cvt_f32_to_u32, None),
    "s_cvt_i32_f32": ("i32", ("f32",), _cvt_f32_to_i32, None),
    "s_rndne_f32": ("f32", ("f32",), np.rint, None),
    "s_floor_f32": ("f32", ("f32",), np.floor, None),
    "s_ceil_f32": ("f32", ("f32",), np.ceil, None),
    "s_trunc_f32": ("f32", ("f32",), np.trunc, None),
}


def _ffbl64(a):
    a = np.asarray(a).astype(u64)
    low = a & (~a + u64(1))
    with np.errstate(all="ignore"):
        index = np.floor(np.log2(np.maximum(low, 1).astype(f64))).astype(np.int64)
    # log2 of a power of two is exact in float64 for every 64-bit power
    return np.where(a == 0, u32(0xFFFFFFFF), index.astype(u32))


# --- bit scans and masks (CDNA3 / RDNA4 ISA, S_FF0_I32_B32, S_FLBIT_I32, S_WQM_B32, ...) ----

def _ffbh64(a):
    """Leading zeros of a 64-bit value, -1 (0xFFFFFFFF) for 0 (S_FLBIT_I32_B64 / S_CLZ_I32_U64)."""
    a = np.asarray(a).astype(u64)
    hi = (a >> u64(32)).astype(u32)
    lo = (a & u64(0xFFFFFFFF)).astype(u32)
    return np.where(hi != 0, _ffbh(hi), np.where(lo != 0, _ffbh(lo) + u32(32), u32(0xFFFFFFFF)))


def _cls32(a):
    """How many bits below the sign bit equal it before the first that differs; -1 when all 32
    bits are equal (S_FLBIT_I32 / S_CLS_I32 / V_FFBH_I32 / V_CLS_I32)."""
    a = np.asarray(a).astype(u32)
    flipped = np.where(a >> u32(31), ~a, a).astype(u32)
    return np.where(flipped == 0, u32(0xFFFFFFFF), _ffbh(flipped))


def _cls64(a):
    a = np.asarray(a).astype(u64)
    flipped = np.where(a >> u64(63), ~a, a).astype(u64)
    return np.where(flipped == 0, u32(0xFFFFFFFF), _ffbh64(flipped))


def _quads(a, width: int, spread: bool):
    """S_QUADMASK (bit i = any of bits 4i..4i+3) and S_WQM (all four bits of a quad set if any)."""
    utype = u64 if width == 64 else u32
    a = np.asarray(a).astype(utype)
    out = np.zeros_like(a)
    for q in range(width // 4):
        nonzero = ((a >> utype(4 * q)) & utype(15)) != 0
        if spread:
            out = out | np.where(nonzero, utype(15 << (4 * q)), utype(0))
        else:
            out = out | np.where(nonzero, utype(1 << q), utype(0))
    return out


def _bitreverse64(a):
    a = np.asarray(a).astype(u64)
    lo = _bitreverse32((a & u64(0xFFFFFFFF)).astype(u32)).astype(u64)
    hi = _bitreverse32((a >> u64(32)).astype(u32)).astype(u64)
    return (lo << u64(32)) | hi


def _bitreplicate(a):
    a = np.asarray(a).astype(u64)
    out = np.zeros_like(a)
    for i in range(32):
        bit = (a >> u64(i)) & u64(1)
        out = out | (bit << u64(2 * i)) | (bit << u64(2 * i + 1))
    return out


def _bfe_u64(a, b):
    off = np.asarray(b).astype(u64) & u64(63)
    width = (np.asarray(b).astype(u64) >> u64(16)) & u64(0x7F)
    below = (u64(1) << np.minimum(width, u64(63))) - u64(1)
    mask = np.where(width >= 64, u64(0xFFFFFFFFFFFFFFFF), below)
    return (np.asarray(a).astype(u64) >> off) & mask


def _bfe_i64(a, b):
    """S_BFE_I64: the field of S1[22:16] bits at S1[5:0], sign-extended from its top bit."""
    width = ((np.asarray(b).astype(u64) >> u64(16)) & u64(0x7F)).astype(i64)
    field = np.asarray(_bfe_u64(a, b)).astype(u64)
    shift = np.clip(64 - width, 0, 63).astype(u64)
    signed = np.asarray(field << shift).view(i64) >> shift.astype(i64)
    return np.where(width == 0, i64(0), np.where(width >= 64, field.view(i64), signed))


def _f16_round(fn):
    """An f16 rounding (S_CEIL_F16 ...): computed on the exact f32 value, the result is exact."""
    return lambda a: fn(np.asarray(a).astype(f32)).astype(f16)


SALU.update({
    "s_wqm_b32": ("b32", ("b32",), lambda a: _quads(a, 32, True), "nz"),
    "s_wqm_b64": ("b64", ("b64",), lambda a: _quads(a, 64, True), "nz"),
    "s_quadmask_b32": ("b32", ("b32",), lambda a: _quads(a, 32, False), "nz"),
    "s_quadmask_b64": ("b64", ("b64",), lambda a: _quads(a, 64, False), "nz"),
    "s_brev_b64": ("b64", ("b64",), _bitreverse64, None),
    "s_bcnt0_i32_b32": ("u32", ("b32",), lambda a: u32(32) - np.bitwise_count(a).astype(u32), "nz"),
    "s_bcnt0_i32_b64": ("u32", ("b64",), lambda a: u32(64) - np.bitwise_count(a).astype(u32), "nz"),
    "s_ff0_i32_b32": ("u32", ("u32",), lambda a: _ffbl(~np.asarray(a).astype(u32)), None),
    "s_ff0_i32_b64": ("u32", ("u64",), lambda a: _ffbl64(~np.asarray(a).astype(u64)), None),
    "s_flbit_i32_b64": ("u32", ("u64",), _ffbh64, None),
    "s_clz_i32_u64": ("u32", ("u64",), _ffbh64, None),
    "s_flbit_i32": ("u32", ("u32",), _cls32, None),
    "s_cls_i32": ("u32", ("u32",), _cls32, None),
    "s_flbit_i32_i64": ("u32", ("u64",), _cls64, None),
    "s_cls_i32_i64": ("u32", ("u64",), _cls64, None),
    "s_bitreplicate_b64_b32": ("b64", ("b32",), _bitreplicate, None),
    "s_bfm_b64": ("b64", ("u32", "u32"),
                  lambda a, b: ((u64(1) << (np.asarray(a).astype(u64) & u64(63))) - u64(1))
                  << (np.asarray(b).astype(u64) & u64(63)), None),
    "s_bfe_u64": ("u64", ("u64", "u32"), _bfe_u64, "nz"),
    "s_bfe_i64": ("i64", ("i64", "u32"), _bfe_i64, "nz"),
    # gfx12 scalar f16 and IEEE 754-2019 minimum/maximum (RDNA4 ISA, "SALU floating point");
    # a 16-bit result leaves the upper half of the SGPR zero
    "s_add_f16": ("f16", ("f16", "f16"), lambda a, b: a + b, None),
    "s_sub_f16": ("f16", ("f16", "f16"), lambda a, b: a - b, None),
    "s_mul_f16": ("f16", ("f16", "f16"), lambda a, b: a * b, None),
    "s_fmac_f16": ("f16", ("f16", "f16", "f16"), _fma(f16), None),
    "s_max_num_f16": ("f16", ("f16", "f16"), _max, None),
    "s_min_num_f16": ("f16", ("f16", "f16"), _min, None),
    "s_maximum_f32": ("f32", ("f32", "f32"), _maximum, None),
    "s_minimum_f32": ("f32", ("f32", "f32"), _minimum, None),
    "s_maximum_f16": ("f16", ("f16", "f16"), _maximum, None),
    "s_minimum_f16": ("f16", ("f16", "f16"), _minimum, None),
    "s_cvt_f16_f32": ("f16", ("f32",), lambda a: np.asarray(a).astype(f16), None),
    "s_cvt_f32_f16": ("f32", ("f16",), lambda a: np.asarray(a).astype(f32), None),
    "s_cvt_hi_f32_f16": ("f32", ("b32",),
                         lambda a: (np.asarray(a).astype(u32) >> u32(16)).astype(np.uint16)
                         .view(f16).astype(f32), None),
    "s_cvt_pk_rtz_f16_f32": ("b32", ("f32", "f32"), lambda a, b: _cvt_pkrtz(a, b), None),
    "s_ceil_f16": ("f16", ("f16",), _f16_round(np.ceil), None),
    "s_floor_f16": ("f16", ("f16",), _f16_round(np.floor), None),
    "s_trunc_f16": ("f16", ("f16",), _f16_round(np.trunc), None),
    "s_rndne_f16": ("f16", ("f16",), _f16_round(np.rint), None),
})


_SCMP_RE = re.compile(r"^s_cmpk?_([a-z]+)_(i32|u32|u64|f32|f16)$")


def scalar_compare_spec(name: str):
    """(source type, function) for s_cmp_* / s_cmpk_*."""
    match = _SCMP_RE.match(name)
    if not match:
        return None
    op, ty = match.groups()
    fn = _compare_fn(op, ty[0] == "f")
    if fn is None:
        return None
    return ty, fn


# saveexec: name -> (new EXEC from (src, exec), width)
SAVEEXEC = {
    "and": lambda s, e: s & e,
    "or": lambda s, e: s | e,
    "xor": lambda s, e: s ^ e,
    "andn2": lambda s, e: s & ~e,
    "and_not1": lambda s, e: s & ~e,
    "orn2": lambda s, e: s | ~e,
    "or_not1": lambda s, e: s | ~e,
    "nand": lambda s, e: ~(s & e),
    "nor": lambda s, e: ~(s | e),
    "xnor": lambda s, e: ~(s ^ e),
    "andn1": lambda s, e: ~s & e,
    "and_not0": lambda s, e: ~s & e,
    "orn1": lambda s, e: ~s | e,
    "or_not0": lambda s, e: ~s | e,
}
_SAVEEXEC_RE = re.compile(r"^s_([a-z_0-9]+?)_saveexec_b(32|64)$")
_WREXEC_RE = re.compile(r"^s_(andn1|andn2|and_not0|and_not1)_wrexec_b(32|64)$")


def saveexec_spec(name: str):
    """(function, width, is_wrexec) for s_*_saveexec_* / s_*_wrexec_*."""
    match = _SAVEEXEC_RE.match(name)
    if match and match.group(1) in SAVEEXEC:
        return SAVEEXEC[match.group(1)], int(match.group(2)), False
    match = _WREXEC_RE.match(name)
    if match:
        return SAVEEXEC[match.group(1)], int(match.group(2)), True
    return None
