"""Scalar ALU semantics as data (SOP1/SOP2/SOPK/SOPC, CDNA3 and RDNA4 ISA reference guides,
"Scalar ALU instructions"): the SALU table, the scalar compares, and the saveexec / wrexec
forms' EXEC updates. The scalar instructions are compiled from these in semantics_scalar.py.
"""
from __future__ import annotations

import re

import numpy as np

from hsapy.sim.isa.alu_bits import (
    _bfe_i32,
    _bfe_i64,
    _bfe_u32,
    _bfe_u64,
    _bitreplicate,
    _bitreverse32,
    _bitreverse64,
    _carry_add,
    _cls32,
    _cls64,
    _ffbh,
    _ffbh64,
    _ffbl,
    _ffbl64,
    _mul_hi_i32,
    _mul_hi_u32,
    _quads,
    _sh32,
    _sh64,
    _signed_overflow_add,
    _signed_overflow_sub,
)
from hsapy.sim.isa.alu_float import (
    _convert,
    _cvt_f32_to_i32,
    _cvt_f32_to_u32,
    _cvt_pkrtz,
    _fma,
    _max,
    _maximum,
    _min,
    _minimum,
)
from hsapy.sim.isa.semantics_alu import VALU, compare_of

f32, f16 = np.float32, np.float16
u32, i32, u64, i64 = np.uint32, np.int32, np.uint64, np.int64



# --- scalar ALU --------------------------------------------------------------------------------
# name -> (dst type, src types, fn -> value, scc rule). The scc rule is None (SCC unchanged),
# "nz" (SCC = result != 0) or a function of the sources returning bool per wave.


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
    "s_cvt_f16_f32": ("f16", ("f32",), _convert(f16), None),
    "s_cvt_f32_f16": ("f32", ("f16",), _convert(f32), None),
    "s_cvt_hi_f32_f16": ("f32", ("b32",),
                         lambda a: _convert(f32)((np.asarray(a).astype(u32) >> u32(16))
                                                .astype(np.uint16).view(f16)), None),
    "s_cvt_pk_rtz_f16_f32": ("b32", ("f32", "f32"), lambda a, b: _cvt_pkrtz(a, b), None),
    "s_ceil_f16": ("f16", ("f16",), _f16_round(np.ceil), None),
    "s_floor_f16": ("f16", ("f16",), _f16_round(np.floor), None),
    "s_trunc_f16": ("f16", ("f16",), _f16_round(np.trunc), None),
    "s_rndne_f16": ("f16", ("f16",), _f16_round(np.rint), None),
})


_SCMP_RE = re.compile(r"^s_cmpk?_([a-z]+)_(i32|u32|u64|f32|f16)$")


def scalar_compare_spec(name: str):
    """(source type, function) for s_cmp_* / s_cmpk_*."""
    return compare_of(_SCMP_RE, name)


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
