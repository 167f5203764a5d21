"""ALU semantics as data: the vector table (VOP1/VOP2/VOP3/VOPC/VOP3P) and the vector compares.

The scalar table (SOP1/SOP2/SOPK/SOPC) is in alu_scalar.py; the numpy functions both tables use
are in alu_float.py (float arithmetic, min/max, 8-bit and bfloat16 formats) and alu_bits.py
(integer and bit operations).

Each table maps an LLVM mnemonic (without ``_e32``/``_e64``) to its destination type, source
types and a numpy function over the typed sources. The types name how the ISA reads the register
bits (AMD "Instinct MI300 ISA" and "RDNA4 ISA" reference guides, section "Vector ALU
instructions" / "Scalar ALU instructions"); numpy's IEEE arithmetic gives NaN/inf/denormal
behaviour (denormals are kept; the kernel descriptor's flush mode is applied by the executor).

Transcendentals (v_rcp, v_rsq, v_sqrt, v_exp, v_log, v_sin, v_cos) are computed in float64 and
rounded once: within the hardware's documented 1 ulp.
"""
from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from hsapy.sim.isa.alu_bits import (
    _alignbit,
    _alignbyte,
    _bfe_i32,
    _bfe_u32,
    _bitreverse32,
    _cls32,
    _ffbh,
    _ffbl,
    _i24,
    _mul_hi_i32,
    _mul_hi_u32,
    _perm,
    _sh32,
    _sh64,
    _u24,
)
from hsapy.sim.isa.alu_float import (
    _chain,
    _convert,
    _cvt_f32_to_i32,
    _cvt_f32_to_u32,
    _cvt_pkrtz,
    _cvt_ubyte,
    _float_ops,
    _fma,
    _med3_int,
    _quiet,
    _trig_preop,
)

f32, f64, f16 = np.float32, np.float64, np.float16
u32, i32, u64, i64 = np.uint32, np.int32, np.uint64, np.int64

Spec = tuple[str, tuple[str, ...], Callable[..., np.ndarray]]

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
    "v_cvt_f64_f32": ("f64", ("f32",), _convert(f64)),
    "v_cvt_f32_f64": ("f32", ("f64",), _convert(f32)),
    "v_cvt_f64_i32": ("f64", ("i32",), lambda a: a.astype(f64)),
    "v_cvt_f64_u32": ("f64", ("u32",), lambda a: a.astype(f64)),
    "v_cvt_i32_f64": ("i32", ("f64",), _cvt_f32_to_i32),
    "v_cvt_u32_f64": ("u32", ("f64",), _cvt_f32_to_u32),
    "v_cvt_f16_f32": ("f16", ("f32",), _convert(f16)),
    "v_cvt_f32_f16": ("f32", ("f16",), _convert(f32)),
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
        # S and T pick (and negate) a source: a NaN comes out quiet (LLVM's
        # SITargetLowering::isCanonicalized, GlobalISel, counts cube results canonical)
        if kind == "sc":
            return _quiet(np.where(on_z, np.where(z < 0, -x, x),
                                   np.where(on_y, x, np.where(x < 0, z, -z))))
        return _quiet(np.where(on_z, -y, np.where(on_y, np.where(y < 0, -z, z), -y)))
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
    # S0 and S1 are 16-bit sources (op_sel picks a register's high half), S2 is 32-bit
    "v_mad_u32_u16": ("u32", ("u16", "u16", "u32"), _wrap("u32", lambda a, b, c: a * b + c)),
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


# V_TRIG_PREOP_F64 (its function and the bits of 2/pi it reads are in alu_float.py)
VALU["v_trig_preop_f64"] = ("f64", ("f64", "u32"), _trig_preop)


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
    found = compare_of(_CMP_RE, name)
    if found is None:
        return None
    return (*found, name.startswith("v_cmpx"))


def compare_of(pattern: re.Pattern, name: str):
    """(source type, function) of a compare mnemonic that ``pattern`` splits into its operation
    and source type (v_cmp_*, s_cmp_*), or None."""
    match = pattern.match(name)
    if not match:
        return None
    op, ty = match.groups()
    fn = _compare_fn(op, ty[0] == "f")
    if fn is None:
        return None
    return ty, fn


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


