"""VALU instructions with handlers of their own: dot products, lane permutes, relative VGPR
moves, packed math (VOP3P, v_pk_fmac, mix forms), 8-bit float conversions, v_mbcnt and
v_mqsad_u32.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from hsapy.sim.isa import alu_float, float_mode
from hsapy.sim.isa import semantics_alu as alu
from hsapy.sim.isa.closures import NotImplementedInstruction
from hsapy.sim.isa.instruction import Instruction, Operand
from hsapy.sim.isa.operand_access import (
    NotImplementedOperand,
    scalar_reader,
    vector_reader,
    vector_writer,
)
from hsapy.sim.isa.semantics_scalar import _in_mode, _m0_index, _relative_rows
from hsapy.sim.isa.semantics_valu_operands import (
    _INT_RANGE,
    _dst_writer,
    _op_sel,
    _output_modifiers,
    _saturating,
    _src_reader,
    _valu_spec,
)
from hsapy.sim.isa.wave import Batch

_DOT_RE = re.compile(r"^v_(?:dual_)?dot(\d)(c|acc)?_(f32|i32|u32)_([a-z0-9]+?)(?:_([a-z0-9]+))?$")
# element type -> (bits, how it reads)
_DOT_ELEMENTS = {"f16": (16, "f16"), "bf16": (16, "bf16"), "i16": (16, "i"), "u16": (16, "u"),
                 "i8": (8, "i"), "u8": (8, "u"), "iu8": (8, "iu"), "i4": (4, "i"), "u4": (4, "u"),
                 "iu4": (4, "iu"), "fp8": (8, "fp8"), "bf8": (8, "bf8")}


def _dot_elements(bits, width: int, count: int, kind: str, signed: bool, family: str):
    """The ``count`` elements packed in a dword, widened (integers as int64, floats as
    float64); ``signed`` chooses sign extension for the iu8/iu4 forms."""
    bits = np.asarray(bits).astype(np.uint32)
    mask = np.uint32((1 << width) - 1)
    out = []
    table = None
    if kind in ("fp8", "bf8"):
        table = alu_float.small_float_values(*alu_float.SMALL_FLOATS[(family, kind)])
    for i in range(count):
        field = (bits >> np.uint32(width * i)) & mask
        if kind == "f16":
            out.append(field.astype(np.uint16).view(np.float16).astype(np.float64))
        elif kind == "bf16":
            out.append(alu_float.bf16_to_f64(field))
        elif table is not None:
            out.append(table[field.astype(np.intp)])
        else:
            value = field.astype(np.int64)
            if kind == "i" or (kind == "iu" and signed):
                value = np.where(value >> (width - 1), value - (1 << width), value)
            out.append(value)
    return out


def _vdot(inst: Instruction, info: Any, match: re.Match):
    """Dot products (CDNA3 ISA V_DOT2_F32_F16 ... V_DOT8_U32_U4, V_DOT2C_*; RDNA4 ISA
    V_DOT4_I32_IU8, V_DOT8_I32_IU4, V_DOT2_F32_BF16, V_DOT4_F32_FP8_BF8 ...): D = S2 + the sum of
    the products of the elements packed in S0 and S1. The C / ACC forms accumulate into the
    destination. Integer products and sums are exact; clamp saturates the result to the
    destination type, without it the sum wraps. Float products are exact and the sum is rounded
    once to f32. IU forms: neg_lo[0] / neg_lo[1] make S0 / S1 signed. f16/bf16 forms: neg_lo /
    neg_hi negate the low / high elements, neg_lo[2] negates S2."""
    count = int(match.group(1))
    dst_ty = match.group(3)
    kind_a = match.group(4)
    kind_b = match.group(5) or kind_a
    width, read_a = _DOT_ELEMENTS[kind_a]
    _, read_b = _DOT_ELEMENTS[kind_b]
    f = inst.fields
    # dot2 of 16-bit elements: op_sel / op_sel_hi pick the half each element comes from, as in
    # packed math (default: low, high); the 4- and 8-element forms read whole dwords
    op_sel = int(f.get("op_sel", 0))
    op_sel_hi = int(f.get("op_sel_hi", 3))
    halves = [((op_sel >> i) & 1, (op_sel_hi >> i) & 1) for i in range(2)]
    neg_lo, neg_hi = int(f.get("neg_lo", 0)), int(f.get("neg_hi", 0))
    is_float = dst_ty == "f32"
    if neg_hi & 4 or ((neg_lo | neg_hi) & 3 and read_a not in ("f16", "bf16", "iu")):
        raise NotImplementedOperand(f"neg modifiers on {inst.name}")
    srcs = list(inst.srcs)
    if len(srcs) == 2:                       # the C / ACC forms: the destination accumulates
        srcs.append(inst.dsts[0])
    for op in srcs[:2]:
        if op.kind in ("const", "literal") and isinstance(op.value, float):
            raise NotImplementedOperand(f"a float constant as a packed source of {inst.name}")
    a = _src_reader(inst, info, 0, "b32", op=srcs[0])
    b = _src_reader(inst, info, 1, "b32", op=srcs[1])
    c = vector_reader(srcs[2], dst_ty)
    write = _dst_writer(inst, dst_ty)
    clamp = _output_modifiers(inst)[0]
    family = inst.family
    sign_a, sign_b = bool(neg_lo & 1), bool(neg_lo & 2)

    def compute(bt: Batch, m: Any):
        xs = _dot_elements(a(bt), width, count, read_a, sign_a, family)
        ys = _dot_elements(b(bt), width, count, read_b, sign_b, family)
        if width == 16:
            xs = [xs[halves[0][0]], xs[halves[0][1]]]
            ys = [ys[halves[1][0]], ys[halves[1][1]]]
        if is_float and read_a in ("f16", "bf16"):
            xs = [-x if (neg_lo if i == 0 else neg_hi) & 1 else x for i, x in enumerate(xs)]
            ys = [-y if (neg_lo if i == 0 else neg_hi) & 2 else y for i, y in enumerate(ys)]
        acc = np.asarray(c(bt))
        if is_float:
            total = acc.astype(np.float64) * (-1.0 if neg_lo & 4 else 1.0)
        else:
            total = acc.astype(np.int64)
        for x, y in zip(xs, ys):
            total = total + x * y
        if is_float:
            result = np.asarray(total).astype(np.float32)
            if clamp:
                result = np.where(np.isnan(result), np.float32(0), np.clip(result, 0, 1))
            return result.astype(np.float32)
        if clamp:
            lo, hi = _INT_RANGE[dst_ty]
            total = np.clip(total, lo, hi)
        return (np.asarray(total) & 0xFFFFFFFF).astype(np.uint32).view(
            np.int32 if dst_ty == "i32" else np.uint32)
    return compute, write


def _vdot2_16(inst: Instruction, info: Any):
    """V_DOT2_F16_F16 / V_DOT2_BF16_BF16 (RDNA3/RDNA4 ISA): D.16 = S2.16 + S0.lo*S1.lo +
    S0.hi*S1.hi, the products exact and the sum rounded once to the 16-bit type (the convention
    of the other dot products). op_sel[2] / op_sel[3] pick the half of S2 / of D."""
    bf16 = "bf16" in inst.name
    srcs = inst.srcs
    for op in srcs[:2]:
        if op.neg or op.abs or (op.kind in ("const", "literal") and isinstance(op.value, float)):
            raise NotImplementedOperand(f"a modifier or float constant on a packed source of "
                                        f"{inst.name}")
    a = vector_reader(srcs[0], "b32")
    b = vector_reader(srcs[1], "b32")
    c = vector_reader(srcs[2], "b16" if bf16 else "f16", _op_sel(inst, 2))
    write = vector_writer(inst.dsts[0], "b16" if bf16 else "f16", _op_sel(inst, 3))
    kind = "bf16" if bf16 else "f16"

    def compute(bt: Batch, m: Any):
        xs = _dot_elements(a(bt), 16, 2, kind, False, inst.family)
        ys = _dot_elements(b(bt), 16, 2, kind, False, inst.family)
        acc = np.asarray(c(bt))
        acc = alu_float.bf16_to_f64(acc) if bf16 else acc.astype(np.float64)
        total = acc + xs[0] * ys[0] + xs[1] * ys[1]
        return alu_float.round_to_bf16(total) if bf16 else np.asarray(total).astype(np.float16)
    return compute, write


def _vpermlane(inst: Instruction, info: Any):
    """RDNA3/RDNA4 ISA, V_PERMLANE16_B32 / V_PERMLANEX16_B32 (lane selects from two SGPRs: 4 bits
    per lane of a row of 16), their _VAR forms (each lane's select in bits 3:0 of a VGPR) and
    V_PERMLANE64_B32 (lane i reads lane i ^ 32; a no-op in wave32). The X16 forms read the
    other row of each pair of rows. op_sel[0] is FI (fetch inactive), op_sel[1] BOUND_CTRL: a
    source lane outside EXEC reads its value only with FI; otherwise the lane reads 0 with
    BOUND_CTRL and keeps its old value without it, as for DPP."""
    name = inst.name
    lanes = info.wave_size
    lane = np.arange(lanes)
    src = vector_reader(inst.srcs[0], "b32")
    write = vector_writer(inst.dsts[0], "b32")
    if name == "v_permlane64_b32":
        if lanes == 32:
            return (lambda b, m: None), (lambda b, result: None)
        swapped = lane ^ 32
        return (lambda b, m: np.broadcast_to(src(b), b.exec.shape)[:, swapped]), write
    row = lane // 16
    base = ((row ^ 1) if "x16" in name else row) * 16
    if name.endswith("_var_b32"):
        per_lane = vector_reader(inst.srcs[1], "u32")

        def select(b: Batch) -> np.ndarray:
            sel = np.broadcast_to(per_lane(b), b.exec.shape) & np.uint32(15)
            return base[None, :] + sel.astype(np.intp)
    else:
        low = scalar_reader(inst.srcs[1], "u32")
        high = scalar_reader(inst.srcs[2], "u32")
        shifts = (4 * (lane & 15)).astype(np.uint64)

        def select(b: Batch) -> np.ndarray:
            hi = np.broadcast_to(np.asarray(high(b)).astype(np.uint64), (b.waves,))
            lo = np.broadcast_to(np.asarray(low(b)).astype(np.uint64), (b.waves,))
            sels = (hi << np.uint64(32)) | lo
            nibbles = (sels[:, None] >> shifts[None, :]) & np.uint64(15)
            return base[None, :] + nibbles.astype(np.intp)
    op_sel = int(inst.fields.get("op_sel", 0))
    fetch_inactive, bound_ctrl = bool(op_sel & 1), bool(op_sel & 2)

    def compute(b: Batch, m: Any):
        from_lane = select(b)
        value = np.take_along_axis(np.broadcast_to(src(b), b.exec.shape), from_lane, axis=1)
        if fetch_inactive:
            return value, None
        valid = np.take_along_axis(b.exec, from_lane, axis=1)
        if bound_ctrl:
            return np.where(valid, value, np.uint32(0)), None
        return value, valid

    def commit(b: Batch, result) -> None:
        value, valid = result
        if valid is None:
            write(b, value)
            return
        saved = b.exec
        b.exec = saved & valid
        b.exec_all = False
        try:
            write(b, value)
        finally:
            b.exec = saved
            b.exec_changed()
    return compute, commit


def _vrel_rows(b: Batch, base: int, offset: np.ndarray, what: str) -> np.ndarray:
    return _relative_rows(b, base, offset, 1, b.V.shape[0], what)


def _vmovrel(inst: Instruction, info: Any):
    """V_MOVRELS / V_MOVRELD / V_MOVRELSD / V_MOVRELSD_2 / V_SWAPREL_B32 (RDNA4 ISA): VGPR moves
    whose source and/or destination register number is offset by M0 (_2 and SWAPREL: the source by
    M0[9:0], the destination by M0[25:16]); V_SWAP_B32 swaps two VGPRs. Under EXEC. An index
    past the registers the kernel uses stops the queue."""
    name = inst.name
    src, dst = inst.srcs[0], inst.dsts[0]
    if src.kind != "vgpr" or dst.kind != "vgpr":
        raise NotImplementedOperand(f"{name} with a {src.kind} source")
    m0 = _m0_index(info)
    split = name in ("v_movrelsd_2_b32", "v_swaprel_b32")
    rel_src = name in ("v_movrels_b32", "v_movrelsd_b32", "v_movrelsd_2_b32", "v_swaprel_b32")
    rel_dst = name in ("v_movreld_b32", "v_movrelsd_b32", "v_movrelsd_2_b32", "v_swaprel_b32")
    swap = name in ("v_swap_b32", "v_swaprel_b32")

    def rows(b: Batch):
        m0v = b.S[:, m0].astype(np.int64)
        zero = np.zeros_like(m0v)
        src_off = (m0v & 0x3FF if split else m0v) if rel_src else zero
        dst_off = ((m0v >> 16) & 0x3FF if split else m0v) if rel_dst else zero
        return (_vrel_rows(b, src.index, src_off, "VGPR"),
                _vrel_rows(b, dst.index, dst_off, "VGPR"))

    def compute(b: Batch, m: Any):
        rows_s, rows_d = rows(b)
        waves = np.arange(b.waves)
        return rows_s, rows_d, b.V[rows_s, waves].copy(), b.V[rows_d, waves].copy()

    def commit(b: Batch, result) -> None:
        rows_s, rows_d, value_s, value_d = result
        waves = np.arange(b.waves)
        b.V[rows_d, waves] = np.where(b.exec, value_s, b.V[rows_d, waves])
        if swap:
            b.V[rows_s, waves] = np.where(b.exec, value_d, b.V[rows_s, waves])
    return compute, commit


def _vpk_fmac(inst: Instruction, info: Any):
    """V_PK_FMAC_F16: each f16 half of D = fma(S0.half, S1.half, D.half)."""
    a = _src_reader(inst, info, 0, "b32")
    c = _src_reader(inst, info, 1, "b32")
    d = vector_reader(inst.dsts[0], "b32")
    write = _dst_writer(inst, "b32")
    fma = alu_float._fma(np.float16)

    def halves(x):
        x = np.asarray(x).astype(np.uint32)
        return [(x & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16),
                (x >> np.uint32(16)).astype(np.uint16).view(np.float16)]

    def compute(b: Batch, m: Any):
        out = [np.asarray(fma(x, y, z)).astype(np.float16).view(np.uint16).astype(np.uint32)
               for x, y, z in zip(halves(a(b)), halves(c(b)), halves(d(b)))]
        return out[0] | (out[1] << np.uint32(16))
    return compute, write


def _vmqsad_u32(inst: Instruction, info: Any):
    """V_MQSAD_U32_U8: four masked SADs into the four dwords of a 128-bit accumulator."""
    a = vector_reader(inst.srcs[0], "b64")
    c = vector_reader(inst.srcs[1], "u32")
    acc_op, dst = inst.srcs[2], inst.dsts[0]
    if acc_op.kind != "vgpr":
        raise NotImplementedOperand("v_mqsad_u32_u8 with a non-VGPR accumulator")
    accs = [vector_reader(Operand("vgpr", acc_op.index + k, 1, None, ""), "u32") for k in range(4)]
    writes = [vector_writer(Operand("vgpr", dst.index + k, 1, None, ""), "u32") for k in range(4)]

    def compute(b: Batch, m: Any):
        return alu.mqsad_u32(a(b), c(b), [acc(b) for acc in accs])

    def commit(b: Batch, result) -> None:
        for write, value in zip(writes, result):
            write(b, value)
    return compute, commit


def _vcvt_from_small_float(inst: Instruction, info: Any):
    """V_CVT_F32_FP8 / _BF8 (one byte) and V_CVT_PK_F32_FP8 / _BF8 (two bytes of a word, into a
    register pair); the 8-bit format is the target's (alu_float.SMALL_FLOATS). gfx9 picks the byte
    or word with the SDWA select, gfx12 the byte with byte_sel (op_sel) and the word with
    op_sel[0]."""
    kind = "bf8" if inst.name.endswith("bf8") else "fp8"
    family = inst.family if inst.family != "gfx11" else "gfx12"
    table = alu_float.small_float_values(*alu_float.SMALL_FLOATS[(family, kind)]) \
        .astype(np.float32)
    packed = inst.name.startswith("v_cvt_pk_")
    op_sel = int(inst.fields.get("op_sel", 0))
    if op_sel and (inst.family == "gfx9" or op_sel & ~(1 if packed else 3)):
        raise NotImplementedOperand(f"op_sel on {inst.name}")
    if packed:
        shift = np.uint32(16 if op_sel & 1 else 0)
    else:   # byte_sel: OPSEL[1:0] with the bits reversed (RDNA4 ISA V_CVT_F32_FP8)
        shift = np.uint32(8 * (((op_sel & 1) << 1) | ((op_sel >> 1) & 1)))
    src = _src_reader(inst, info, 0, "b32")
    write = _dst_writer(inst, "b64" if packed else "f32")

    def compute(b: Batch, m: Any):
        bits = np.asarray(src(b)).astype(np.uint32) >> shift
        low = table[(bits & np.uint32(0xFF)).astype(np.intp)]
        if not packed:
            return low
        high = table[((bits >> np.uint32(8)) & np.uint32(0xFF)).astype(np.intp)]
        return low.view(np.uint32).astype(np.uint64) | (high.view(np.uint32).astype(np.uint64)
                                                         << np.uint64(32))
    return compute, write


def small_float_encoder(kind: str, saturate: bool) -> Callable[[np.ndarray], np.ndarray]:
    """f32 -> the gfx9 (CDNA3, FNUZ) 8-bit float code, ``uint32`` per value (CDNA3 ISA guide 7.2,
    "BF8 and FP8 Formats and Conversions", and V_CVT_PK_FP8_F32 / V_CVT_PK_BF8_F32).

    The value rounds to nearest even on the format's grid (denormals included); a result of
    magnitude 0 is code 0x00 (FNUZ has no -0: 0x80 is the one NaN, which also stands for
    infinity). A NaN source gives 0x80. An infinite source, or a finite one that rounds past
    the largest value (240 for fp8, 57344 for bf8), gives +-largest when MODE.FP16_OVFL is set
    (``saturate``) and 0x80 otherwise (the guide's FP16_OVFL table). The comparison is after
    rounding: an exhaustive gfx942 sweep of fp8+fp8 and bf8+bf8 sums in AMD's issue tracker
    (ROCm/rocm-systems #9556) counts exactly the sums that round past the largest value."""
    exp_bits, man_bits, bias, special = alu_float.SMALL_FLOATS[("gfx9", kind)]
    grid = alu_float.small_float_values(exp_bits, man_bits, bias, special)[:128]   # 0x00 .. 0x7F
    largest = grid[127]
    limit = largest + (largest - grid[126]) / 2      # at or above: rounds past the largest

    def encode(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float64)
        a = np.abs(x)
        k = np.clip(np.searchsorted(grid, np.nan_to_num(a, nan=0.0, posinf=largest)), 1, 127)
        lo, hi = grid[k - 1], grid[k]
        up = (hi - a < a - lo) | ((hi - a == a - lo) & (k % 2 == 0))   # ties to the even code
        code = np.where(up, k, k - 1).astype(np.uint32)
        code = np.where((x < 0) & (code != 0), code | np.uint32(0x80), code)
        over = a >= limit                                              # infinities included
        if saturate:
            code = np.where(over, np.where(x < 0, np.uint32(0xFF), np.uint32(0x7F)), code)
        else:
            code = np.where(over, np.uint32(0x80), code)
        return np.where(np.isnan(x), np.uint32(0x80), code).astype(np.uint32)
    return encode


def _vcvt_to_small_float(inst: Instruction, info: Any):
    """V_CVT_PK_FP8_F32 / V_CVT_PK_BF8_F32 (gfx9): {f32_to_f8(S1), f32_to_f8(S0)} into bits 15:0
    of the destination, or 31:16 with OPSEL[3]; the other half is kept. Always round to nearest
    even (the MODE rounding mode is ignored); neg/abs apply, clamp and omod are ignored (CDNA3
    ISA guide, Table 31)."""
    op_sel = int(inst.fields.get("op_sel", 0))
    if op_sel & 3:
        raise NotImplementedOperand(f"op_sel bits 0-1 on {inst.name} (f32 sources)")
    encode = small_float_encoder("bf8" if "bf8" in inst.name else "fp8",
                                 bool(info.mode.value & float_mode.FP16_OVFL))
    shift = np.uint32(16 if op_sel & 8 else 0)
    keep = np.uint32(0xFFFF if op_sel & 8 else 0xFFFF0000)
    src0 = _src_reader(inst, info, 0, "f32")
    src1 = _src_reader(inst, info, 1, "f32")
    old = vector_reader(Operand("vgpr", inst.dsts[0].index, 1, None, ""), "b32")

    def compute(b: Batch, m: Any):
        packed = encode(src0(b)) | (encode(src1(b)) << np.uint32(8))
        return (np.asarray(old(b)) & keep) | (packed << shift)
    return compute, _dst_writer(inst, "b32")


# gfx12 writes the OCP formats (E4M3FN: bias 7, largest 448, no infinity, S.1111.111 NaN; E5M2:
# bias 15, largest 57344, IEEE-style infinities and NaNs). The RDNA4 ISA guide leaves the format
# to an F8 mode; three public sources settle it for gfx1200/gfx1201:
# - HIP's amd_hip_fp8.h (ROCm clr) sets HIP_FP8_TYPE_OCP for __gfx1200__/__gfx1201__ and
#   HIP_FP8_TYPE_FNUZ only for gfx940-942; its device fast path converts __HIP_E4M3 / __HIP_E5M2
#   with __builtin_amdgcn_cvt_pk_fp8_f32 / _bf8_f32 on gfx12;
# - LLVM (llvm-project pull request 106160): gfx12 takes the OCP formats in its matrix and
#   conversion instructions, with the opcodes and builtins of the FNUZ forms;
# - the simulator's gfx12 WMMA and V_CVT_F32_FP8 decoding (alu_float.SMALL_FLOATS, matrix_arith).
_OCP_LARGEST_CODE = {"fp8": 0x7E, "bf8": 0x7B}


def ocp_small_float_encoder(kind: str) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    """(encode, largest): f32 -> the gfx12 (OCP) 8-bit float code as ``uint32``, for the values
    the RDNA4 ISA guide and the OCP 8-bit specification settle: finite values of magnitude at
    most the format's largest finite value (448 for fp8, 57344 for bf8). They round to nearest
    even on the format's grid, denormals included; the sign is kept, so -0 and negative values
    that round to zero give 0x80. ``encode`` gives no meaning to other inputs (NaN, infinities,
    magnitudes above ``largest``): the caller stops the queue before using it for them."""
    values = alu_float.small_float_values(*alu_float.SMALL_FLOATS[("gfx12", kind)])
    grid = values[:_OCP_LARGEST_CODE[kind] + 1]        # 0x00 .. the largest finite code
    last = grid.size - 1

    def encode(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float64)
        a = np.nan_to_num(np.abs(x), nan=0.0, posinf=grid[last])
        k = np.clip(np.searchsorted(grid, a), 1, last)
        lo, hi = grid[k - 1], grid[k]
        up = (hi - a < a - lo) | ((hi - a == a - lo) & (k % 2 == 0))   # ties to the even code
        code = np.where(up, k, k - 1).astype(np.uint32)
        return np.where(np.signbit(x), code | np.uint32(0x80), code).astype(np.uint32)
    return encode, float(grid[last])


def _vcvt_to_ocp_small_float(inst: Instruction, info: Any):
    """V_CVT_PK_FP8_F32 / V_CVT_PK_BF8_F32 (gfx12): {f32_to_f8(S1), f32_to_f8(S0)} into bits 15:0
    of the destination, or 31:16 with OPSEL[3] (LLVM selects op_sel:[0,0,1] for the builtin's
    word_sel, as on gfx942); the other half is kept. neg/abs apply to the inputs.

    Implemented: finite inputs of magnitude at most the largest finite value, rounded to nearest
    even (ocp_small_float_encoder). MODE.FP_DENORM cannot change them, for the reason the gfx942
    conversion (small_float_encoder) ignores it: an f32 denormal lies far below half the smallest
    8-bit denormal (2^-10 fp8, 2^-17 bf8) and gives a zero of its sign whether flushed or not; the
    8-bit denormals are the format's own and are produced.

    Stopping the queue instead (the RDNA4 ISA guide does not define them): a NaN or infinite
    input, a magnitude above the largest finite value (whether it rounds down to it, saturates or
    gives a NaN, and of which sign; HIP's software encoder treats every such value as an
    overflow, IEEE rounding would take values up to half a step above to the largest), the clamp
    and omod fields, and a MODE rounding other than nearest even."""
    op_sel = int(inst.fields.get("op_sel", 0))
    if op_sel & 3:
        raise NotImplementedOperand(f"op_sel bits 0-1 on {inst.name} (f32 sources)")
    clamp, omod = _output_modifiers(inst)
    if clamp or omod:
        raise NotImplementedOperand(f"{'clamp' if clamp else 'omod'} on gfx12 {inst.name}: the "
                                    "RDNA4 ISA guide does not define it for an 8-bit result")
    mode = info.mode
    if mode.round32 != float_mode.NEAREST:
        raise NotImplementedOperand(f"{mode.describe('f32')}: the RDNA4 ISA guide does not say "
                                    f"whether {inst.name} follows the MODE rounding")
    kind = "bf8" if "bf8" in inst.name else "fp8"
    encode, largest = ocp_small_float_encoder(kind)
    shift = np.uint32(16 if op_sel & 8 else 0)
    keep = np.uint32(0xFFFF if op_sel & 8 else 0xFFFF0000)
    src0 = _src_reader(inst, info, 0, "f32")
    src1 = _src_reader(inst, info, 1, "f32")
    old = vector_reader(Operand("vgpr", inst.dsts[0].index, 1, None, ""), "b32")
    text = inst.text()

    def check(b: Batch, x: np.ndarray) -> None:
        x = np.broadcast_to(x, b.exec.shape)
        bad = b.exec & ~(np.abs(x) <= largest)          # NaN, infinities, above the largest
        if not bad.any():
            return
        wave, lane = (int(i[0]) for i in np.nonzero(bad))
        value = float(x[wave, lane])
        if np.isnan(value):
            why = f"the RDNA4 ISA guide does not define the {kind} NaN a NaN input gives"
        elif np.isinf(value):
            why = (f"the RDNA4 ISA guide does not define whether an infinite input gives a {kind} "
                   "infinity, NaN or the largest finite value")
        else:
            why = (f"above the largest finite {kind} value {largest:g}: the RDNA4 ISA guide does "
                   "not define the NaN an overflow produces, nor whether it saturates or rounds")
        raise NotImplementedInstruction(f"{text} (lane {lane} converts {value!r}: {why})")

    def compute(b: Batch, m: Any):
        a0, a1 = src0(b), src1(b)
        check(b, a0)
        check(b, a1)
        packed = encode(a0) | (encode(a1) << np.uint32(8))
        return (np.asarray(old(b)) & keep) | (packed << shift)
    return compute, _dst_writer(inst, "b32")


def _vmbcnt(inst: Instruction, info: Any):
    src = vector_reader(inst.srcs[0], "u32")
    add = vector_reader(inst.srcs[1], "u32")
    write = vector_writer(inst.dsts[0], "u32")
    lanes = np.arange(info.wave_size, dtype=np.int64)
    if inst.name == "v_mbcnt_lo_u32_b32":
        below = np.minimum(lanes, 32)
    else:
        below = np.clip(lanes - 32, 0, 32)
    lane_masks = (((np.int64(1) << below) - 1) & 0xFFFFFFFF).astype(np.uint32)[None, :]

    def compute(b: Batch, m: Any):
        counted = np.bitwise_count(np.asarray(src(b)) & lane_masks).astype(np.uint32)
        return counted + add(b)
    return compute, write


def _vmix(inst: Instruction, info: Any = None):
    """v_fma_mix*: each source is f32, or (op_sel_hi bit set) the f16 half chosen by op_sel;
    neg negates and neg_hi takes the absolute value of a source (ISA guide, "V_FMA_MIX_F32")."""
    f = inst.fields
    op_sel = int(f.get("op_sel", 0))
    # op_sel_hi of src2 is a separate bit (VOP3P word 0 bit 14)
    op_sel_hi = int(f.get("op_sel_hi", 0)) | int(f.get("op_sel_hi2", 0)) << 2
    # the decoder turned neg_lo/neg_hi into each source's neg/abs modifiers
    neg = sum(1 << i for i, op in enumerate(inst.srcs[:3]) if op.neg)
    absolute = sum(1 << i for i, op in enumerate(inst.srcs[:3]) if op.abs)
    # Denormals follow the MODE like any f32 (or f16) arithmetic: each source flushed by the
    # control of its own type, the result by that of the result type. Compilers emit these
    # forms for f16 -> f32 conversions folded into f32 math mostly when f32 denormals are
    # flushed (LLVM's SITargetLowering::isFPExtFoldable requires it).
    ftz32, ftz64 = getattr(info, "ftz32", False), getattr(info, "ftz64", False)
    readers = []
    for i, op in enumerate(inst.srcs[:3]):
        plain = Operand(op.kind, op.index, op.count, op.value, op.name)
        if (op_sel_hi >> i) & 1:
            readers.append(_flushed_reader(vector_reader(plain, "f16", (op_sel >> i) & 1),
                                           np.float16, ftz64))
        else:
            readers.append(_flushed_reader(vector_reader(plain, "f32"), np.float32, ftz32))
    name = inst.name
    flush_result = ftz32 if name.endswith("_f32") else ftz64
    dst = inst.dsts[0]
    if name.endswith("_f32"):
        write = vector_writer(dst, "f32")
    else:
        # mixlo/mixhi write one half and keep the other (LLVM ties vdst_in to vdst)
        old = vector_reader(dst, "b32")
        write32 = vector_writer(dst, "b32")
        hi = "mixhi" in name

        def write(b: Batch, result) -> None:
            bits = np.asarray(result).view(np.uint16).astype(np.uint32)
            kept = np.asarray(old(b)).astype(np.uint32)
            if hi:
                write32(b, (kept & np.uint32(0xFFFF)) | (bits << np.uint32(16)))
            else:
                write32(b, (kept & np.uint32(0xFFFF0000)) | bits)
    fused = name.startswith("v_fma")
    directed = _in_mode(name, "f32" if name.endswith("_f32") else "f16", None, info)

    def compute(b: Batch, m: Any):
        args = []
        for i, read in enumerate(readers):
            value = np.asarray(read(b)).astype(np.float32)
            if (absolute >> i) & 1:
                value = np.abs(value)
            if (neg >> i) & 1:
                value = -value
            args.append(value)
        out = np.float32 if name.endswith("_f32") else np.float16
        if directed is not None:      # a MODE rounding toward +-inf or zero
            result = directed(*args)
        elif fused:
            # one rounding of the exact a * b + c to the result type
            result = alu_float._fused_narrow(args[0], args[1], args[2], out)
        else:
            result = (args[0] * args[1]).astype(np.float32) + args[2]
        if int(f.get("clamp", 0)):
            result = np.clip(np.nan_to_num(result, nan=0.0), 0, 1)
        result = np.asarray(result).astype(out)
        return _flush(result) if flush_result else result
    return compute, write


def _flush(x: np.ndarray) -> np.ndarray:
    """Denormals of ``x``'s float type replaced by zero of the same sign."""
    tiny = np.finfo(x.dtype).tiny
    return np.where(np.abs(x) < tiny, np.copysign(np.zeros((), x.dtype), x), x)


def _flushed_reader(read: Callable, dtype, ftz: bool) -> Callable:
    """``read``, its ``dtype`` values' denormals flushed when ``ftz``."""
    if not ftz:
        return read
    return lambda b: _flush(np.asarray(read(b)).astype(dtype))


def _vpk_mov(inst: Instruction):
    """v_pk_mov_b32 (gfx90a/gfx942): D.lo = one dword of the src0 pair (op_sel[0]), D.hi = one
    dword of the src1 pair (op_sel[1])."""
    sel = int(inst.fields.get("op_sel", 0))
    parts = []
    for i, op in enumerate(inst.srcs[:2]):
        half = (sel >> i) & 1
        if op.kind in ("vgpr", "agpr", "sgpr", "ttmp"):
            parts.append(vector_reader(Operand(op.kind, op.index + half, 1, None, op.name), "b32"))
        else:
            parts.append(vector_reader(op, "b32"))
    write = vector_writer(inst.dsts[0], "b64")

    def compute(b: Batch, m: Any):
        lo = np.asarray(parts[0](b)).astype(np.uint64)
        hi = np.asarray(parts[1](b)).astype(np.uint64)
        return lo | (hi << np.uint64(32))
    return compute, write


def _packed_float_finish(ftz: bool, clamp: bool, dtype) -> Callable:
    """How one half of a packed float instruction computes: ``fn`` on its arguments, with the
    MODE's denormal flushing applied to float inputs and the result (a packed op flushes like
    its unpacked form: LLVM selects v_pk_add_f32 / v_pk_fma_f16 for ordinary fadd/fma under
    either denormal mode) and the VOP3P clamp bit, which clamps a float result to [0, 1]
    (CDNA3 / RDNA4 ISA guides, VOP3P fields: CLAMP), applied as the unpacked forms apply it."""
    dtype = np.dtype(dtype)
    tiny = np.finfo(dtype).tiny

    def flush(x):
        return np.where(np.abs(x) < tiny, np.copysign(np.zeros((), x.dtype), x), x)

    if not (ftz or clamp):
        return lambda fn, args: np.asarray(fn(*args), dtype)

    def finish(fn, args):
        if ftz:
            args = [flush(np.asarray(a)) if np.asarray(a).dtype == dtype else a for a in args]
        result = np.asarray(fn(*args), dtype)
        if clamp:
            result = np.clip(result, 0, 1)
            result = np.where(np.isnan(result), result.dtype.type(0), result)
        if ftz:
            result = flush(result)
        return result
    return finish


def _vpk(inst: Instruction, info: Any):
    """VOP3P packed math: two 16-bit halves of a dword, or (gfx90a/gfx942) two f32 in a pair."""
    name = inst.name
    fields = inst.fields
    op_sel = int(fields.get("op_sel", 0))
    # op_sel_hi of src2 is a separate bit (VOP3P word 0 bit 14); VOP3P names its low-half
    # negate bits neg_lo
    op_sel_hi = int(fields.get("op_sel_hi", 3)) | int(fields.get("op_sel_hi2", 1)) << 2
    neg_lo = int(fields.get("neg_lo", 0))
    neg_hi = int(fields.get("neg_hi", 0))
    base = "v_" + name[len("v_pk_"):]
    clamp = bool(int(fields.get("clamp", 0)))
    if base.endswith("_f32"):
        spec = alu.VALU.get(base)
        if spec is None:
            return None, None
        _, src_tys, fn = spec
        fn = _in_mode(name, "f32", fn, info)
        readers = []
        for op in inst.srcs:
            low = Operand(op.kind, op.index, 1, op.value, op.name)
            high = Operand(op.kind, op.index + 1, 1, op.value, op.name)
            readers.append((vector_reader(low, "f32"),
                            vector_reader(high, "f32")
                            if op.kind in ("vgpr", "sgpr", "agpr", "ttmp") else None, op))
        write = vector_writer(inst.dsts[0], "b64")
        finish = _packed_float_finish(info.ftz32, clamp, np.float32)

        def pick(pair, sel):
            lo_reader, hi_reader, op = pair
            if sel and hi_reader is not None:
                return hi_reader
            return lo_reader

        def compute(b: Batch, m: Any):
            halves = []
            for sels, negs in ((op_sel, neg_lo), (op_sel_hi, neg_hi)):
                args = []
                for i, pair in enumerate(readers):
                    value = pick(pair, (sels >> i) & 1)(b)
                    if (negs >> i) & 1:
                        value = -value
                    args.append(value)
                halves.append(finish(fn, args))
            lo = halves[0].view(np.uint32).astype(np.uint64)
            hi = halves[1].view(np.uint32).astype(np.uint64)
            return lo | (hi << np.uint64(32))
        return compute, write
    # the loop picks ty, which is read after the break
    for suffix, ty in (("_f16", "f16"), ("_u16", "u16"), ("_i16", "i16"), ("_b16", "b16")):  # noqa: B007
        if base.endswith(suffix):
            break
    else:
        return None, None
    spec = _valu_spec(base, info) if base in alu.VALU else None
    if spec is None:
        generic = {"v_add_u16": "v_add_u16", "v_sub_u16": "v_sub_u16"}
        spec = alu.VALU.get(generic.get(base, ""))
    if spec is None:
        if base in ("v_mul_lo_u16",):
            spec = alu.VALU["v_mul_lo_u16"]
        else:
            return None, None
    _, src_tys, fn = spec
    fn = _in_mode(name, ty, fn, info)
    readers = [(vector_reader(op, ty, 0), vector_reader(op, ty, 1))
               for op, ty in zip(inst.srcs, src_tys)]
    write = vector_writer(inst.dsts[0], "b32")
    is_float = ty == "f16"
    saturate = clamp and not is_float and _saturating(base)
    finish16 = _packed_float_finish(info.ftz64, clamp, np.float16) if is_float else None

    def compute16(b: Batch, m: Any):
        out = []
        for sels, negs in ((op_sel, neg_lo), (op_sel_hi, neg_hi)):
            args = []
            for i, (lo_r, hi_r) in enumerate(readers):
                value = (hi_r if (sels >> i) & 1 else lo_r)(b)
                if is_float and (negs >> i) & 1:
                    value = -value
                if saturate:
                    value = np.asarray(value).astype(np.int64)
                args.append(value)
            result = finish16(fn, args) if is_float else np.asarray(fn(*args))
            if saturate:   # VOP3P clamp on integer add/sub saturates each half
                result = np.clip(result, *_INT_RANGE[ty])
            out.append(result.astype(alu.DTYPE16[ty]).view(np.uint16).astype(np.uint32))
        return out[0] | (out[1] << np.uint32(16))
    return compute16, write


alu.DTYPE16 = {"f16": np.float16, "u16": np.uint16, "i16": np.int16, "b16": np.uint16}
