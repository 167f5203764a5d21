"""Element formats and arithmetic of the matrix instructions (semantics_matrix.py).

How the elements of A, B and C are read (f16, bf16, xf32, the 8-bit floats of each generation,
integers) and how the products are summed and rounded: gfx942 (CDNA3) and gfx90a (CDNA2) follow
the bit-accurate MMA-Sim model (fused multiply-add chains for f32/f64, CDNA3's truncated group
sums, CDNA2's pairwise f32 sums with denormals flushed); the instructions no hardware model
covers take the exact sum rounded once. semantics_matrix.py's docstring gives the sources.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hsapy.sim.isa.alu_float import _round_to_odd, _two_product, _two_sum

if TYPE_CHECKING:
    from hsapy.sim.isa.semantics_matrix import MatrixOp

# element type -> bits per element
BITS = {"f64": 64, "f32": 32, "xf32": 32, "i32": 32, "f16": 16, "bf16": 16, "i8": 8, "iu8": 8,
        "fp8": 8, "bf8": 8, "iu4": 4}
INTEGER = {"i8", "iu8", "iu4", "i32"}


# --- element formats ----------------------------------------------------------------------------

def _fp8_table(exp_bits: int, bias: int, fnuz: bool) -> np.ndarray:
    """Every byte's value as float64: FNUZ (0x80 is the one NaN, no infinities) or OCP E4M3
    (S.1111.111 is NaN, no infinities) / E5M2 (IEEE-like: infinities and NaNs)."""
    mant_bits = 7 - exp_bits
    code = np.arange(256)
    sign = np.where(code & 0x80, -1.0, 1.0)
    e = (code >> mant_bits) & ((1 << exp_bits) - 1)
    m = code & ((1 << mant_bits) - 1)
    value = np.where(e == 0, m * 2.0 ** (1 - bias - mant_bits),
                     (1 + m / 2.0 ** mant_bits) * 2.0 ** (e - bias)) * sign
    top = (1 << exp_bits) - 1
    if fnuz:
        value[0x80] = np.nan
    elif exp_bits == 4:
        value[(e == top) & (m == (1 << mant_bits) - 1)] = np.nan
    else:
        value[(e == top) & (m == 0)] = sign[(e == top) & (m == 0)] * np.inf
        value[(e == top) & (m != 0)] = np.nan
    return value


_FP8 = {
    ("fp8", "gfx9"): _fp8_table(4, 8, True), ("bf8", "gfx9"): _fp8_table(5, 16, True),
    ("fp8", "gfx12"): _fp8_table(4, 7, False), ("bf8", "gfx12"): _fp8_table(5, 15, False),
}
# smallest normal exponent of each input format (MMA-Sim's alignment treats the denormals of a
# format as having this exponent)
_MIN_EXP = {"f16": -14, "bf16": -126, "f32": -126, "xf32": -126, "fp8": -7, "bf8": -15}


def decode_elements(ty: str, raw: np.ndarray, family: str, signed: bool = True) -> np.ndarray:
    """Elements of type ``ty`` from their raw bits (uint64 array) as float64 or int64."""
    if ty == "f64":
        return raw.astype(np.uint64).view(np.float64)
    if ty in ("f32", "xf32"):
        bits = raw.astype(np.uint32)
        if ty == "xf32":
            bits = bits & np.uint32(0xFFFFE000)   # xf32 keeps 10 mantissa bits (MMA-Sim)
        return bits.view(np.float32).astype(np.float64)
    if ty == "f16":
        return raw.astype(np.uint16).view(np.float16).astype(np.float64)
    if ty == "bf16":
        return (raw.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if ty in ("fp8", "bf8"):
        return _FP8[(ty, family if family == "gfx9" else "gfx12")][raw.astype(np.intp)]
    if ty == "i32":
        return raw.astype(np.uint32).view(np.int32).astype(np.int64)
    width = BITS[ty]
    value = raw.astype(np.int64)
    if signed:
        value = np.where(value >= 1 << (width - 1), value - (1 << width), value)
    return value


def _round_to(x: np.ndarray, ty: str) -> np.ndarray:
    """float64 -> f32 / f16 / bf16 / f64 bits as uint64, rounding once to nearest even."""
    if ty == "f64":
        return x.view(np.uint64)
    if ty == "f32":
        return x.astype(np.float32).view(np.uint32).astype(np.uint64)
    if ty == "f16":
        return x.astype(np.float16).view(np.uint16).astype(np.uint64)
    # bf16: 7 fraction bits, the exponent range of f32
    with np.errstate(all="ignore"):
        _, exp = np.frexp(x)
        quantum = np.ldexp(1.0, np.maximum(exp - 1, -126) - 7)
        rounded = np.rint(x / quantum) * quantum
        big = np.abs(rounded) > (2 - 2.0 ** -7) * 2.0 ** 127
        rounded = np.where(np.isfinite(x) & big, np.copysign(np.inf, x), rounded)
        rounded = np.where(np.isnan(x), np.nan, rounded)
    bits = rounded.astype(np.float32).view(np.uint32) >> np.uint32(16)
    return bits.astype(np.uint64)


# --- arithmetic ---------------------------------------------------------------------------------

def _fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """f32 fused multiply-add (float64 in and out): the product is exact in float64, the sum is
    rounded to odd then to f32 (one correct rounding)."""
    p = a * b
    s, err = _two_sum(p, c)
    return np.where(np.isfinite(s), _round_to_odd(s, err), s).astype(np.float32) \
        .astype(np.float64)


def _fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """f64 fused multiply-add: product and sum kept as float64 pairs (Dekker/Knuth), the terms
    summed once more (correct except in rare ties of the last bit)."""
    p, perr = _two_product(a, b)
    s, serr = _two_sum(p, c)
    out = s + (serr + perr)
    return np.where(np.isfinite(out), out, p + c)


def _split(x: np.ndarray, min_exp: int) -> tuple[np.ndarray, np.ndarray]:
    """x = s * 2**e with 1 <= |s| < 2 for normal numbers; denormals keep e = min_exp
    (|s| < 1); zero has s = 0 and e = -126 (MMA-Sim's decomposition)."""
    m, e = np.frexp(x)
    s = 2 * m
    e = e - 1
    low = e < min_exp
    s = np.where(low, np.ldexp(s, np.where(low, e - min_exp, 0)), s)
    e = np.where(low, min_exp, e)
    e = np.where(x == 0, -126, e)
    return s, e


def _fused_group(sp: np.ndarray, ep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum of the products s * 2**e along the last axis, each truncated toward zero to 24
    fractional bits at the largest exponent: (significand sum, that exponent)."""
    top = ep.max(axis=-1)
    terms = np.trunc(np.ldexp(sp, 24 + ep - top[..., None]))
    return terms.sum(axis=-1) * 2.0 ** -24, top


def _cdna3_group(a: np.ndarray, b: np.ndarray, c: np.ndarray, a_ty: str, b_ty: str,
                 fp8: bool) -> np.ndarray:
    """One group of MMA-Sim's CDNA3 fused dot-add: a, b ``[..., G]``, c ``[...]`` (float64
    values of f32); returns the f32 result as float64."""
    products = a * b
    naive = products.sum(axis=-1) + c
    sa, ea = _split(a, _MIN_EXP[a_ty])
    sb, eb = _split(b, _MIN_EXP[b_ty])
    sp, ep = sa * sb, ea + eb
    if fp8:   # even and odd products summed apart, then aligned to each other rounding down
        s0, e0 = _fused_group(sp[..., 0::2], ep[..., 0::2])
        s1, e1 = _fused_group(sp[..., 1::2], ep[..., 1::2])
        top = np.maximum(e0, e1)
        s = (np.floor(np.ldexp(s0, 24 + e0 - top)) + np.floor(np.ldexp(s1, 24 + e1 - top))) \
            * 2.0 ** -24
    else:
        s, top = _fused_group(sp, ep)
    sc, ec = _split(c, -126)
    top2 = np.maximum(top, ec)
    s = np.floor(np.ldexp(s, 31 + top - top2)) * 2.0 ** -31
    sc = np.floor(np.ldexp(sc, 24 + ec - top2)) * 2.0 ** -24
    if fp8:
        sc = np.where(ec >= top2 - 25, sc, 0.0)
    result = np.ldexp(s + sc, top2)
    # products beyond the f32 range are infinities; NaN / infinite inputs propagate
    big = np.abs(products) >= 2.0 ** 128
    pos = (big & (products > 0)).any(axis=-1)
    neg = (big & (products < 0)).any(axis=-1)
    result = np.where(pos, np.inf, result)
    result = np.where(neg, -np.inf, result)
    result = np.where(pos & neg, np.nan, result)
    result = np.where(np.isfinite(naive), result, naive)
    return result.astype(np.float32).astype(np.float64)


def _flush(x: np.ndarray, min_exp: int, keep_sign: bool) -> np.ndarray:
    tiny = np.abs(x) < 2.0 ** min_exp
    return np.where(tiny, x * 0.0 if keep_sign else 0.0, x)


def _pairwise_f32(p: np.ndarray) -> np.ndarray:
    """Sum along the last axis as a balanced tree of f32 additions, denormals flushed."""
    if p.shape[-1] == 1:
        return p[..., 0]
    half = p.shape[-1] // 2
    total = _pairwise_f32(p[..., :half]) + _pairwise_f32(p[..., half:])
    return _flush(total, -126, True)


def _multiply(op: MatrixOp, A: np.ndarray, B: np.ndarray, C: np.ndarray,
              clamp: bool) -> np.ndarray:
    """D for ``A[..., M, K]``, ``B[..., K, N]``, ``C[..., M, N]`` (float64 or int64)."""
    model = op.model
    if model == "int":
        total = np.einsum("...ik,...kj->...ij", A, B) + C
        if clamp:
            return np.clip(total, -2 ** 31, 2 ** 31 - 1)
        return ((total + 2 ** 31) % 2 ** 32) - 2 ** 31
    a = A[..., :, None, :]                     # [..., M, 1, K]
    b = np.swapaxes(B, -1, -2)[..., None, :, :]  # [..., 1, N, K]
    if model == "fma":
        fma = _fma64 if op.acc == "f64" else _fma32
        d = C
        for k in range(op.k):
            d = fma(a[..., k], b[..., k], d)
        return d
    if model == "cdna3":
        d = C
        for k0 in range(0, op.k, op.group):
            d = _cdna3_group(a[..., k0:k0 + op.group], b[..., k0:k0 + op.group], d, op.a, op.b,
                             op.a in ("fp8", "bf8"))
        return d
    if model == "cdna2":
        d = C.astype(np.float32)
        products = (a.astype(np.float32) * b.astype(np.float32))
        products = _flush(products, -126, True)
        for k0 in range(0, op.k, op.group):
            group = _pairwise_f32(products[..., k0:k0 + op.group])
            d = _flush(d + group, -126, True)
        return d.astype(np.float64)
    # round_once: the exact sum (a compensated float64 sum) rounded once to the destination
    products = a * b
    hi = np.broadcast_to(C, products.shape[:-1]).astype(np.float64)
    lo = np.zeros_like(hi)
    for k in range(op.k):
        hi, err = _two_sum(hi, products[..., k])
        lo = lo + err
    hi, err = _two_sum(hi, lo)
    plain = products.sum(axis=-1) + C          # NaN / infinite inputs propagate
    return np.where(np.isfinite(hi), _round_to_odd(hi, err), plain)
