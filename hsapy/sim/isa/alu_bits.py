"""Integer and bit functions of the ALU tables (semantics_alu.py, alu_scalar.py): shifts, bit-field
extracts, high multiplies, 24-bit operands, byte alignment and permutes, bit reversal, first/last
bit and sign-bit counts, quad masks, and the carry / signed-overflow tests of scalar adds (CDNA3
and RDNA4 ISA reference guides, the pseudocode of each opcode).
"""
from __future__ import annotations

import numpy as np

f64 = np.float64
u32, i32, u64, i64 = np.uint32, np.int32, np.uint64, np.int64



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


def _sat_add_u32(a, b):
    return np.minimum(a.astype(u64) + np.asarray(b).astype(u64), u64(0xFFFFFFFF)).astype(u32)


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


def _carry_add(a, b):
    return (a.astype(u64) + np.asarray(b).astype(u64)) > u64(0xFFFFFFFF)


def _signed_overflow_add(a, b):
    s = np.asarray(a).astype(i64) + np.asarray(b).astype(i64)
    return (s > 0x7FFFFFFF) | (s < -0x80000000)


def _signed_overflow_sub(a, b):
    s = np.asarray(a).astype(i64) - np.asarray(b).astype(i64)
    return (s > 0x7FFFFFFF) | (s < -0x80000000)


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
