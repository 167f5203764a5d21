"""Vector ALU instructions: the dispatch of a VALU mnemonic to its handler, the generic
table-driven form (semantics_alu.VALU with clamp, omod and denormal flushing), compares, carries,
64-bit multiply-adds, division helpers, v_cndmask, lane reads/writes and VOPD pairs. Handlers of
the instructions that are not one table row are in semantics_valu_special.py.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hsapy.sim.isa import alu_float
from hsapy.sim.isa import semantics_alu as alu
from hsapy.sim.isa.closures import Closure
from hsapy.sim.isa.closures import unimplemented as _unimplemented
from hsapy.sim.isa.instruction import Instruction, Operand
from hsapy.sim.isa.operand_access import (
    WIDTH,
    NotImplementedOperand,
    lane_mask_reader,
    mask_writer,
    scalar_reader,
    scalar_writer,
    vector_reader,
    vector_writer,
)
from hsapy.sim.isa.semantics_scalar import _in_mode
from hsapy.sim.isa.semantics_valu_operands import (
    _INT_RANGE,
    _dpp_commit,
    _dst_writer,
    _extension,
    _no_extension,
    _op_sel,
    _output_modifiers,
    _saturating,
    _src_reader,
    _valu_spec,
)
from hsapy.sim.isa.semantics_valu_special import (
    _DOT_RE,
    _vcvt_from_small_float,
    _vcvt_to_ocp_small_float,
    _vcvt_to_small_float,
    _vdot,
    _vdot2_16,
    _vmbcnt,
    _vmix,
    _vmovrel,
    _vmqsad_u32,
    _vpermlane,
    _vpk,
    _vpk_fmac,
    _vpk_mov,
)
from hsapy.sim.isa.wave import Batch

# --- vector ALU -----------------------------------------------------------------------------------

_CARRY_OPS = {
    # name -> (kind, subtract, reverse)
    "v_add_co_u32": ("out", False, False), "v_sub_co_u32": ("out", True, False),
    "v_subrev_co_u32": ("out", True, True),
    "v_add_u32_co": ("out", False, False),
    "v_addc_co_u32": ("inout", False, False), "v_add_co_ci_u32": ("inout", False, False),
    "v_subb_co_u32": ("inout", True, False), "v_sub_co_ci_u32": ("inout", True, False),
    "v_subbrev_co_u32": ("inout", True, True), "v_subrev_co_ci_u32": ("inout", True, True),
}


def _valu(inst: Instruction, info: Any) -> Closure:
    compute, commit = valu_parts(inst, info)
    if compute is None:
        return _unimplemented(inst)

    def run(b: Batch, m: Any) -> None:
        commit(b, compute(b, m))
    return run


def valu_parts(inst: Instruction, info: Any):
    """(compute(b, m) -> result, commit(b, result)) for a VALU instruction, or (None, None).

    Split in two so that VOPD can read all sources of both halves before writing either.
    """
    compute, commit = _valu_parts(inst, info)
    if compute is not None and _extension(inst) in ("dpp", "dpp8"):
        commit = _dpp_commit(inst, info, commit)
    return compute, commit


def _valu_parts(inst: Instruction, info: Any):
    name = inst.name
    cmp = alu.compare_spec(name)
    if cmp is not None:
        return _vcmp(inst, cmp, info)
    if name in _CARRY_OPS:
        return _vcarry(inst, _CARRY_OPS[name], info)
    if name in ("v_dot2_f16_f16", "v_dot2_bf16_bf16"):
        return _vdot2_16(inst, info)
    dot = _DOT_RE.match(name)
    if dot is not None:
        return _vdot(inst, info, dot)
    if name == "v_pk_fmac_f16":
        return _vpk_fmac(inst, info)
    if name in ("v_cvt_f32_fp8", "v_cvt_f32_bf8", "v_cvt_pk_f32_fp8", "v_cvt_pk_f32_bf8"):
        return _vcvt_from_small_float(inst, info)
    if name in ("v_cvt_pk_fp8_f32", "v_cvt_pk_bf8_f32") and inst.family == "gfx9":
        return _vcvt_to_small_float(inst, info)
    if name in ("v_cvt_pk_fp8_f32", "v_cvt_pk_bf8_f32") and inst.family == "gfx12":
        return _vcvt_to_ocp_small_float(inst, info)
    if _extension(inst) and not name.startswith("v_cndmask") and name not in alu.VALU:
        _no_extension(inst)        # the handlers below read their sources directly
    if name in ("v_mad_u64_u32", "v_mad_i64_i32", "v_mad_co_u64_u32", "v_mad_co_i64_i32"):
        return _vmad64(inst)
    if name in ("v_div_scale_f32", "v_div_scale_f64"):
        return _vdiv_scale(inst, info)
    if name in ("v_div_fmas_f32", "v_div_fmas_f64"):
        return _vdiv_fmas(inst, info)
    if name in ("v_cndmask_b32", "v_cndmask_b16"):
        return _vcndmask(inst, info)
    if name in ("v_readfirstlane_b32", "v_readlane_b32", "v_writelane_b32"):
        return _vlane(inst)
    if name in ("v_mbcnt_lo_u32_b32", "v_mbcnt_hi_u32_b32"):
        return _vmbcnt(inst, info)
    if name.startswith(("v_permlane16", "v_permlanex16", "v_permlane64")):
        return _vpermlane(inst, info)
    if name.startswith(("v_movrel", "v_swaprel")) or name == "v_swap_b32":
        return _vmovrel(inst, info)
    if name == "v_mqsad_u32_u8":
        return _vmqsad_u32(inst, info)

    if name in ("v_accvgpr_read_b32", "v_accvgpr_write_b32", "v_accvgpr_mov_b32"):
        read = vector_reader(inst.srcs[0], "b32")
        write = vector_writer(inst.dsts[0], "b32")
        return (lambda b, m: read(b)), write
    if name in ("v_fma_mix_f32", "v_fma_mixlo_f16", "v_fma_mixhi_f16", "v_mad_mix_f32",
                "v_mad_mixlo_f16", "v_mad_mixhi_f16"):
        return _vmix(inst, info)
    if name == "v_pk_mov_b32":
        return _vpk_mov(inst)
    if name.startswith("v_pk_") and inst.encoding == "VOP3P":
        return _vpk(inst, info)
    if name in alu.VALU:
        return _vgeneric(inst, _valu_spec(name, info), info)
    if name.startswith("v_s_") and ("v_" + name[4:]) in alu.VALU:
        return _vscalar_trans(inst, alu.VALU["v_" + name[4:]])
    if name.startswith("v_dual_"):
        base = "v_" + name[len("v_dual_"):]
        if base in alu.VALU:
            return _vgeneric(inst, alu.VALU[base], info)
        if base == "v_cndmask_b32":
            return _vcndmask(inst, info)
    return None, None


def omod_applies(info: Any, ty: str) -> bool:
    """Whether a VOP3/SDWA output modifier (OMOD: x2, x4, /2) scales a ``ty`` result under the
    MODE the program runs in. The ISA guides (Vega/CDNA "Output Modifiers", RDNA's VALU chapter)
    say output modifiers are not compatible with output denormals -- with output denormals
    enabled for the type (MODE.FP_DENORM bit 1) they are ignored -- and are ignored while
    MODE.IEEE is 1 (gfx9 and gfx11; gfx12 has no IEEE mode). Where they apply, denormal results
    are flushed and -0 becomes +0 first (they are not IEEE compatible; AMD's review of LLVM's
    omod folding, reviews.llvm.org/D30209, states the same order). So with a kernel's usual
    MODE (IEEE on, denormals kept) hardware ignores a hand-written ``mul:2``; compilers fold an
    output modifier only where it applies."""
    mode = info.mode
    if mode.denorm_for(ty) & 2:
        return False
    return info.family == "gfx12" or not mode.ieee


def _vgeneric(inst: Instruction, spec: alu.Spec, info: Any):
    dst_ty, src_tys, fn = spec
    fn = _in_mode(inst.name.replace("v_dual_", "v_"), dst_ty, fn, info)
    srcs = list(inst.srcs)
    base = inst.name.replace("v_dual_", "v_")
    if base.startswith(("v_fmac_", "v_mac_", "v_dot2c_", "v_cvt_pkaccum_")) and len(srcs) == 2:
        srcs.append(inst.dsts[0])  # the accumulator is the destination register
    if len(srcs) != len(src_tys):
        raise NotImplementedOperand(f"{len(srcs)} sources for {len(src_tys)}-source semantics")
    readers = [_src_reader(inst, info, i, ty, _op_sel(inst, i) if WIDTH[ty] == 16 else 0, op)
               for i, (op, ty) in enumerate(zip(srcs, src_tys))]
    write = _dst_writer(inst, dst_ty, _op_sel(inst, 3) if WIDTH[dst_ty] == 16 else 0)
    clamp, omod = _output_modifiers(inst)
    is_float = dst_ty[0] == "f"
    if omod and is_float and not omod_applies(info, dst_ty):
        omod = 0
    ftz = info.ftz32 if dst_ty == "f32" else info.ftz64 if dst_ty in ("f64", "f16") else False
    dtype = np.dtype({"f16": np.float16, "f32": np.float32, "f64": np.float64}.get(dst_ty, "u1"))
    tiny = np.finfo(dtype).tiny if is_float else 0

    def flush(x):
        return np.where(np.abs(x) < tiny, np.copysign(np.zeros((), x.dtype), x), x)

    n = len(readers)
    if n == 1:
        r0 = readers[0]
        if not (clamp or omod or ftz):
            return (lambda b, m: fn(r0(b))), write
    if n == 2 and not (clamp or omod or ftz):
        r0, r1 = readers
        return (lambda b, m: fn(r0(b), r1(b))), write
    if n == 3 and not (clamp or omod or ftz):
        r0, r1, r2 = readers
        return (lambda b, m: fn(r0(b), r1(b), r2(b))), write

    if clamp and not is_float and dst_ty in _INT_RANGE and _saturating(inst.name):
        lo, hi = _INT_RANGE[dst_ty]

        exact = getattr(fn, "exact", fn)

        def saturate(b: Batch, m: Any):
            # VOP3 clamp on integer add/sub saturates (LLVM selects it for uadd.sat & co.):
            # the exact result in int64, clipped to the destination type
            args = [np.asarray(r(b)).astype(np.int64) for r in readers]
            return np.clip(exact(*args), lo, hi)
        return saturate, write
    if clamp and not is_float:
        raise NotImplementedOperand(f"clamp on the integer result of {inst.name}")

    def compute(b: Batch, m: Any):
        args = [r(b) for r in readers]
        if ftz and is_float:
            args = [flush(np.asarray(a)) if np.asarray(a).dtype == dtype else a for a in args]
        result = np.asarray(fn(*args))
        if is_float:
            if omod:
                # (omod_applies: output denormals are off) a denormal result flushes to zero
                # and -0 becomes +0 before the scaling, which may underflow again
                result = np.where(np.abs(result) < tiny, result.dtype.type(0), result)
                result = flush(result * result.dtype.type((0, 2.0, 4.0, 0.5)[omod]))
            if clamp:
                result = np.clip(result, 0, 1)  # NaN stays NaN (numpy clip propagates NaN)
                result = np.where(np.isnan(result), result.dtype.type(0), result)
            if ftz:
                result = flush(result)
        return result
    return compute, write


def _vscalar_trans(inst: Instruction, spec: alu.Spec):
    """gfx12 v_s_exp_f32 / v_s_rcp_f32 / ...: a VALU transcendental on one scalar per wave,
    written to an SGPR (RDNA4 ISA, "VOP3 scalar transcendental")."""
    dst_ty, src_tys, fn = spec
    readers = [scalar_reader(op, ty) for op, ty in zip(inst.srcs, src_tys)]
    write = scalar_writer(inst.dsts[0], dst_ty)
    return (lambda b, m: np.asarray(fn(*(r(b) for r in readers)))), write


def _vcmp(inst: Instruction, spec: tuple, info: Any):
    ty, fn, writes_exec = spec
    if inst.name.startswith(("v_cmp_class", "v_cmpx_class")):
        readers = [_src_reader(inst, info, 0, ty), _src_reader(inst, info, 1, "u32")]
    else:
        readers = [_src_reader(inst, info, 0, ty), _src_reader(inst, info, 1, ty)]
    writers = [mask_writer(op) for op in inst.dsts]

    def compute(b: Batch, m: Any):
        return fn(readers[0](b), readers[1](b))

    def commit(b: Batch, result) -> None:
        result = np.broadcast_to(result, b.exec.shape)
        for write in writers:
            write(b, result)
        if writes_exec:
            b.set_exec(result & b.exec)
    return compute, commit


def _vcarry(inst: Instruction, spec: tuple, info: Any):
    kind, subtract, reverse = spec
    a = _src_reader(inst, info, 0, "u32")
    c = _src_reader(inst, info, 1, "u32")
    carry_in = lane_mask_reader(inst.srcs[2]) if kind == "inout" else None
    write = _dst_writer(inst, "u32")
    write_carry = mask_writer(inst.dsts[1]) if len(inst.dsts) > 1 else None

    def compute(b: Batch, m: Any):
        x = np.asarray(a(b)).astype(np.int64)
        y = np.asarray(c(b)).astype(np.int64)
        if reverse:
            x, y = y, x
        cin = carry_in(b).astype(np.int64) if carry_in is not None else 0
        total = x - y - cin if subtract else x + y + cin
        return total

    clamp = bool(_output_modifiers(inst)[0])

    def commit(b: Batch, total) -> None:
        if write_carry is not None:
            write_carry(b, (total < 0) | (total > 0xFFFFFFFF))
        if clamp:   # unsigned saturation instead of wrapping
            total = np.clip(total, 0, 0xFFFFFFFF)
        write(b, (total & 0xFFFFFFFF).astype(np.uint32))
    return compute, commit


def _vmad64(inst: Instruction):
    signed = "_i64_i32" in inst.name
    ty32, ty64 = ("i32", "i64") if signed else ("u32", "u64")
    a = vector_reader(inst.srcs[0], ty32)
    c = vector_reader(inst.srcs[1], ty32)
    d = vector_reader(inst.srcs[2], ty64)
    write = vector_writer(inst.dsts[0], "b64")
    write_carry = mask_writer(inst.dsts[1]) if len(inst.dsts) > 1 else None

    def compute(b: Batch, m: Any):
        if signed:
            prod = np.asarray(a(b)).astype(np.int64) * np.asarray(c(b)).astype(np.int64)
            total = prod + np.asarray(d(b)).astype(np.int64)  # wraps like the hardware
            carry = None
            wrapped = total.view(np.uint64) if total.ndim else np.asarray(total).astype(np.uint64)
            return wrapped, carry
        prod = np.asarray(a(b)).astype(np.uint64) * np.asarray(c(b)).astype(np.uint64)
        addend = np.asarray(d(b)).astype(np.uint64)
        total = prod + addend
        carry = total < addend
        return total, carry

    def commit(b: Batch, result) -> None:
        total, carry = result
        if write_carry is not None:
            write_carry(b, carry if carry is not None else np.zeros(b.exec.shape, bool))
        write(b, total)
    return compute, commit


def _vdiv_scale(inst: Instruction, info: Any):
    ty = "f32" if inst.name.endswith("f32") else "f64"
    fn = _in_mode(inst.name, ty, alu_float._div_scale(alu.f32 if ty == "f32" else alu.f64), info)
    readers = [vector_reader(op, ty) for op in inst.srcs]
    write = vector_writer(inst.dsts[0], ty)
    write_vcc = mask_writer(inst.dsts[1])

    def compute(b: Batch, m: Any):
        return fn(*(r(b) for r in readers))

    def commit(b: Batch, result) -> None:
        value, vcc = result
        write_vcc(b, vcc)
        write(b, value)
    return compute, commit


def _vdiv_fmas(inst: Instruction, info: Any):
    ty = "f32" if inst.name.endswith("f32") else "f64"
    fn = _in_mode(inst.name, ty, alu_float._div_fmas(alu.f32 if ty == "f32" else alu.f64), info)
    readers = [vector_reader(op, ty) for op in inst.srcs[:3]]
    vcc = lane_mask_reader(Operand("special", 106, 2 if info.wave_size == 64 else 1, None,
                                   "vcc" if info.wave_size == 64 else "vcc_lo"))
    write = vector_writer(inst.dsts[0], ty)
    return (lambda b, m: fn(readers[0](b), readers[1](b), readers[2](b), vcc(b))), write


def _vcndmask(inst: Instruction, info: Any):
    ty = "b16" if inst.name.endswith("b16") else "b32"
    if inst.fields.get("abs") or inst.fields.get("neg") or any(op.neg or op.abs
                                                              for op in inst.srcs[:2]):
        ty = "f16" if ty == "b16" else "f32"
    a = _src_reader(inst, info, 0, ty)
    c = _src_reader(inst, info, 1, ty)
    if len(inst.srcs) > 2:
        sel = lane_mask_reader(inst.srcs[2])
    else:  # VOPD v_dual_cndmask_b32 reads VCC implicitly
        wide = info.wave_size == 64
        sel = lane_mask_reader(Operand("special", 106, 2 if wide else 1, None,
                                       "vcc" if wide else "vcc_lo"))
    write = _dst_writer(inst, ty)
    return (lambda b, m: np.where(sel(b), c(b), a(b))), write


def _vlane(inst: Instruction):
    name = inst.name
    if name == "v_readfirstlane_b32":
        src = vector_reader(inst.srcs[0], "b32")
        write = scalar_writer(inst.dsts[0], "b32")

        def readfirst(b: Batch, m: Any):
            values = np.broadcast_to(src(b), b.exec.shape)
            first = np.argmax(b.exec, axis=1)  # lane 0 when no lane is active
            return values[np.arange(b.waves), first]
        return readfirst, write
    if name == "v_readlane_b32":
        src = vector_reader(inst.srcs[0], "b32")
        lane = scalar_reader(inst.srcs[1], "u32")
        write = scalar_writer(inst.dsts[0], "b32")

        def readlane(b: Batch, m: Any):
            values = np.broadcast_to(src(b), b.exec.shape)
            index = np.broadcast_to(np.asarray(lane(b)) % np.uint32(b.lanes), (b.waves,))
            return values[np.arange(b.waves), index.astype(np.intp)]
        return readlane, write
    # v_writelane_b32 vdst, ssrc0, ssrc1(lane): ignores EXEC
    value = scalar_reader(inst.srcs[0], "b32")
    lane = scalar_reader(inst.srcs[1], "u32")
    index_reg = inst.dsts[0].index

    def writelane(b: Batch, m: Any):
        return value(b), lane(b)

    def commit(b: Batch, result) -> None:
        vals, lanes = result
        rows = np.arange(b.waves)
        cols = np.broadcast_to(np.asarray(lanes) % np.uint32(b.lanes), (b.waves,)).astype(np.intp)
        b.V[index_reg][rows, cols] = np.broadcast_to(vals, (b.waves,))
    return writelane, commit


def _owned(result):
    if isinstance(result, tuple):
        return tuple(_owned(item) for item in result)
    if isinstance(result, np.ndarray):
        return result.copy()
    return result


def _vopd(inst: Instruction, info: Any) -> Closure:
    x_compute, x_commit = valu_parts(inst, info)
    y_compute, y_commit = valu_parts(inst.pair, info) if inst.pair is not None else (None, None)
    if x_compute is None or y_compute is None:
        return _unimplemented(inst, "VOPD half")

    def run(b: Batch, m: Any) -> None:
        # both halves read every source before either writes (RDNA ISA, "VOPD")
        x = _owned(x_compute(b, m))   # a result may be a view of a source register
        y = _owned(y_compute(b, m))
        x_commit(b, x)
        y_commit(b, y)
    return run
