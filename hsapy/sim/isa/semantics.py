"""Compile decoded instructions into closures that run on a :class:`~hsapy.sim.isa.wave.Batch`.

``compile_instruction(inst, machine_info)`` returns ``fn(batch, machine) -> None | int``: None
means "next instruction", a non-negative int is the byte address to continue at, a negative int
one of :data:`END`, :data:`BARRIER`, :data:`SPLIT` (the batch went both ways at a branch and the
machine now holds both halves). An instruction the interpreter does not implement compiles to a
closure that raises :class:`NotImplementedInstruction` when (and only when) it is reached.

ALU semantics are tables in ``semantics_alu.py``; memory instructions are in ``semantics_mem.py``;
matrix instructions (MFMA, WMMA and their sparse forms) in ``semantics_matrix.py``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from hsapy.sim.isa import semantics_alu as alu
from hsapy.sim.isa.instruction import Instruction, Operand
from hsapy.sim.isa.operand_access import (WIDTH, NotImplementedOperand, lane_mask_reader,
                                          mask_writer, scalar_reader, scalar_writer,
                                          vector_reader, vector_writer)
from hsapy.sim.isa.wave import Batch, unpack_mask

END = -1
BARRIER = -2
SPLIT = -3

Closure = Callable[[Batch, Any], "int | None"]


class NotImplementedInstruction(Exception):
    """Raised when an instruction without semantics is reached."""


def _unimplemented(inst: Instruction, why: str = "") -> Closure:
    def run(b: Batch, m: Any) -> None:
        raise NotImplementedInstruction(f"{inst.text()}" + (f" ({why})" if why else ""))
    run.unimplemented = why or "no semantics"  # type: ignore[attr-defined]
    return run


NO_OPS = {
    "s_nop", "s_waitcnt", "s_waitcnt_vscnt", "s_waitcnt_vmcnt", "s_waitcnt_expcnt",
    "s_waitcnt_lgkmcnt", "s_wait_loadcnt", "s_wait_storecnt", "s_wait_dscnt", "s_wait_kmcnt",
    "s_wait_samplecnt", "s_wait_bvhcnt", "s_wait_expcnt", "s_wait_alu", "s_wait_idle",
    "s_wait_loadcnt_dscnt", "s_wait_storecnt_dscnt", "s_delay_alu", "s_clause", "s_setprio",
    "s_sleep", "s_code_end", "s_icache_inv", "s_dcache_inv", "s_dcache_wb", "s_dcache_inv_vol",
    "s_dcache_wb_vol", "s_inst_prefetch", "s_set_inst_prefetch_distance", "s_barrier_signal",
    "s_barrier_signal_isfirst", "s_ttracedata", "s_ttracedata_imm", "s_singleuse_vdst",
    "buffer_wbl2", "buffer_inv", "buffer_gl0_inv", "buffer_gl1_inv", "buffer_wbinvl1",
    "buffer_wbinvl1_vol", "global_wb", "global_inv", "global_wbinv", "s_prefetch_inst",
    "s_prefetch_data", "s_setkill", "s_nop_e", "s_round_mode", "s_denorm_mode",
    "s_waitcnt_depctr", "s_wait_event", "s_sleep_var",
    "v_nop",        # the compiler pads matrix-instruction hazards with it
}


def compile_instruction(inst: Instruction, info: Any) -> Closure:
    """The closure that executes ``inst`` (see the module docstring)."""
    try:
        return _compile(inst, info)
    except NotImplementedOperand as exc:
        return _unimplemented(inst, str(exc))


def _compile(inst: Instruction, info: Any) -> Closure:
    name = inst.name
    enc = inst.encoding
    if name in NO_OPS:
        return lambda b, m: None
    if enc == "SOPP":
        return _sopp(inst, info)
    if enc in ("SMEM", "DS", "FLAT", "GLOBAL", "SCRATCH", "MUBUF"):
        from hsapy.sim.isa import semantics_mem

        return semantics_mem.compile_memory(inst, info)
    if enc.startswith("SOP"):
        return _salu(inst, info)
    if enc == "VOPD":
        return _vopd(inst, info)
    if enc == "VOP3P" and name.startswith(("v_mfma", "v_smfmac", "v_wmma", "v_swmmac")):
        from hsapy.sim.isa import semantics_matrix

        matrix = semantics_matrix.compile_matrix(inst, info)
        return matrix if matrix is not None else _unimplemented(inst)
    if inst.fields.get("dpp") is not None or "dpp8" in inst.fields or inst.fields.get("sdwa"):
        if not _is_dpp_supported(inst):
            return _unimplemented(inst, "DPP/SDWA form")
    return _valu(inst, info)


# --- program flow -------------------------------------------------------------------------------

def _branch(target: int, cond: Callable[[Batch], np.ndarray], fallthrough: int) -> Closure:
    def run(b: Batch, m: Any) -> int | None:
        taken = cond(b)
        if taken.all():
            return target
        if not taken.any():
            return None
        m.split(b, taken, target, fallthrough)
        return SPLIT
    return run


def _sopp(inst: Instruction, info: Any) -> Closure:
    name = inst.name
    fallthrough = inst.offset + inst.size
    if name == "s_endpgm" or name == "s_endpgm_saved" or name == "s_endpgm_ordered_ps_done":
        return lambda b, m: END
    if name == "s_barrier" or name == "s_barrier_wait":
        return lambda b, m: BARRIER
    if name.startswith("s_branch"):
        target = int(inst.srcs[0].value)
        return lambda b, m: target
    if name.startswith("s_cbranch_"):
        target = int(inst.srcs[0].value)
        kind = name[len("s_cbranch_"):]
        conds: dict[str, Callable[[Batch], np.ndarray]] = {
            "scc0": lambda b: ~b.scc,
            "scc1": lambda b: b.scc,
            "execz": lambda b: ~b.exec.any(axis=1),
            "execnz": lambda b: b.exec.any(axis=1),
            "vccz": lambda b: _vcc_bits(b, info) == 0,
            "vccnz": lambda b: _vcc_bits(b, info) != 0,
        }
        if kind not in conds:
            return _unimplemented(inst)
        return _branch(target, conds[kind], fallthrough)
    if name in ("s_sendmsg", "s_sendmsghalt"):
        return lambda b, m: None  # messages (dealloc VGPRs, ...) have no effect here
    if name == "s_trap":
        return _unimplemented(inst, "s_trap (the kernel asked to stop)")
    if name == "s_sethalt":
        return lambda b, m: END
    return _unimplemented(inst)


def _vcc_bits(b: Batch, info: Any) -> np.ndarray:
    if info.wave_size == 64:
        return b.S64[:, 53]
    return b.S[:, 106].astype(np.uint64)


# --- scalar ALU -----------------------------------------------------------------------------------

def _salu(inst: Instruction, info: Any) -> Closure:
    name = inst.name
    if name in ("s_getpc_b64",):
        write = scalar_writer(inst.dsts[0], "b64")
        value = np.uint64(inst.offset + inst.size)
        return lambda b, m: write(b, value)
    if name in ("s_setpc_b64",):
        read = scalar_reader(inst.srcs[0], "b64")
        return _indirect_jump(read, None)
    if name in ("s_swappc_b64",):
        read = scalar_reader(inst.srcs[0], "b64")
        write = scalar_writer(inst.dsts[0], "b64")
        return _indirect_jump(read, (write, np.uint64(inst.offset + inst.size)))
    if name in ("s_memtime", "s_memrealtime", "s_getreg_b32") or name.startswith("s_sendmsg_rtn"):
        return _clock_or_hwreg(inst, info)
    if name in ("s_setreg_b32", "s_setreg_imm32_b32", "s_set_gpr_idx_off", "s_version"):
        return lambda b, m: None  # mode bits: the interpreter keeps the descriptor's modes
    spec = alu.saveexec_spec(name)
    if spec is not None:
        return _saveexec(inst, spec, info)
    cmp = alu.scalar_compare_spec(name)
    if cmp is not None:
        ty, fn = cmp
        if name.startswith("s_cmpk_"):
            ty = "u32" if name.endswith("u32") else "i32"
            left = scalar_reader(inst.srcs[0], ty)
            value = inst.srcs[1].value
            if ty == "i32" and value & 0x8000:
                value -= 0x10000
            right_value = np.asarray(value).astype(np.int64).astype(alu.u32 if ty == "u32" else alu.i32)
            right = lambda b: right_value  # noqa: E731
        else:
            left = scalar_reader(inst.srcs[0], ty)
            right = scalar_reader(inst.srcs[1], ty)

        def compare(b: Batch, m: Any) -> None:
            b.scc = np.broadcast_to(fn(left(b), right(b)), (b.waves,)).copy()
        return compare
    if name == "s_cselect_b32" or name == "s_cselect_b64":
        ty = "b32" if name.endswith("32") else "b64"
        a = scalar_reader(inst.srcs[0], ty)
        c = scalar_reader(inst.srcs[1], ty)
        write = scalar_writer(inst.dsts[0], ty)
        return lambda b, m: write(b, np.where(b.scc, a(b), c(b)))
    if name in ("s_cmov_b32", "s_cmov_b64", "s_cmovk_i32"):
        ty = "b64" if name.endswith("64") else "b32"
        src = inst.srcs[0]
        if name == "s_cmovk_i32":
            src = Operand("imm", 0, 1, _sext16(src.value), "")
        a = scalar_reader(src, ty)
        old = scalar_reader(inst.dsts[0], ty)
        write = scalar_writer(inst.dsts[0], ty)
        return lambda b, m: write(b, np.where(b.scc, a(b), old(b)))
    if name in ("s_movk_i32",):
        value = np.asarray(_sext16(inst.srcs[0].value)).astype(np.int32)
        write = scalar_writer(inst.dsts[0], "i32")
        return lambda b, m: write(b, value)
    if name in ("s_addk_i32", "s_addk_co_i32", "s_mulk_i32"):
        value = np.int32(_sext16(inst.srcs[-1].value))
        read = scalar_reader(inst.dsts[0], "i32")
        write = scalar_writer(inst.dsts[0], "i32")
        if name == "s_mulk_i32":
            return lambda b, m: write(b, read(b) * value)

        def addk(b: Batch, m: Any) -> None:
            a = read(b)
            b.scc = np.broadcast_to(alu._signed_overflow_add(a, value), (b.waves,)).copy()
            write(b, a + value)
        return addk
    if name in ("s_addc_u32", "s_add_co_ci_u32", "s_subb_u32", "s_sub_co_ci_u32"):
        a = scalar_reader(inst.srcs[0], "u32")
        c = scalar_reader(inst.srcs[1], "u32")
        write = scalar_writer(inst.dsts[0], "u32")
        subtract = name.startswith("s_sub")

        def carry_op(b: Batch, m: Any) -> None:
            x = np.asarray(a(b)).astype(np.int64)
            y = np.asarray(c(b)).astype(np.int64)
            carry = b.scc.astype(np.int64)
            total = x - y - carry if subtract else x + y + carry
            b.scc = np.broadcast_to((total < 0) | (total > 0xFFFFFFFF), (b.waves,)).copy()
            write(b, (total & 0xFFFFFFFF).astype(np.uint32))
        return carry_op
    if name in ("s_bitcmp0_b32", "s_bitcmp1_b32", "s_bitcmp0_b64", "s_bitcmp1_b64"):
        ty = "b64" if name.endswith("64") else "b32"
        value = scalar_reader(inst.srcs[0], ty)
        bit = scalar_reader(inst.srcs[1], "u32")
        want = 1 if "bitcmp1" in name else 0
        width = WIDTH[ty]

        def bitcmp(b: Batch, m: Any) -> None:
            v = np.asarray(value(b)).astype(np.uint64)
            k = np.asarray(bit(b)).astype(np.uint64) & np.uint64(width - 1)
            b.scc = np.broadcast_to(((v >> k) & np.uint64(1)) == want, (b.waves,)).copy()
        return bitcmp
    if name in ("s_bitset0_b32", "s_bitset1_b32", "s_bitset0_b64", "s_bitset1_b64"):
        ty = "b64" if name.endswith("64") else "b32"
        bit = scalar_reader(inst.srcs[0], "u32")
        old = scalar_reader(inst.dsts[0], ty)
        write = scalar_writer(inst.dsts[0], ty)
        one = np.uint64(1) if ty == "b64" else np.uint32(1)
        set_bit = "bitset1" in name

        def bitset(b: Batch, m: Any) -> None:
            mask = one << (np.asarray(bit(b)).astype(one.dtype) & one.dtype.type(WIDTH[ty] - 1))
            value = old(b) | mask if set_bit else old(b) & ~mask
            write(b, value)
        return bitset
    if name in alu.SALU:
        dst_ty, src_tys, fn, scc_rule = alu.SALU[name]
        if fn is None:
            return _unimplemented(inst)
        srcs = list(inst.srcs)
        if name in ("s_fmac_f32",):
            srcs = srcs + [inst.dsts[0]]
        readers = [scalar_reader(op, ty) for op, ty in zip(srcs, src_tys)]
        write = scalar_writer(inst.dsts[0], dst_ty)

        def salu(b: Batch, m: Any) -> None:
            args = [r(b) for r in readers]
            result = np.asarray(fn(*args))
            if scc_rule == "nz":
                b.scc = np.broadcast_to(result != 0, (b.waves,)).copy()
            elif scc_rule is not None:
                b.scc = np.broadcast_to(scc_rule(*args), (b.waves,)).copy()
            write(b, result)
        return salu
    return _unimplemented(inst)


def _sext16(value: int) -> int:
    value = int(value) & 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def _indirect_jump(read: Callable, link: tuple | None) -> Closure:
    def run(b: Batch, m: Any) -> int:
        targets = np.asarray(read(b)).astype(np.uint64)
        target = int(targets.reshape(-1)[0])
        if targets.size > 1 and not (targets == targets.reshape(-1)[0]).all():
            raise NotImplementedInstruction("indirect jump to different targets per wave")
        if link is not None:
            link[0](b, link[1])
        return target
    return run


def _clock_or_hwreg(inst: Instruction, info: Any) -> Closure:
    name = inst.name
    if name == "s_getreg_b32":
        write = scalar_writer(inst.dsts[0], "b32")
        # simm16: hwreg id 5:0, bit offset 10:6, size - 1 15:11. gfx12 HW_REG_SHADER_CYCLES_LO
        # (29) / _HI (30) read the clock; other registers (mode, status, ids) read as 0.
        simm = int(inst.srcs[0].value) if inst.srcs and inst.srcs[0].value is not None \
            else int(inst.fields.get("simm16", 0))
        hwreg = simm & 0x3F
        offset = (simm >> 6) & 0x1F
        mask = (1 << (((simm >> 11) & 0x1F) + 1)) - 1

        def getreg(b: Batch, m: Any) -> None:
            value = 0
            if inst.family == "gfx12" and hwreg in (29, 30):
                now = m.clock.now()
                value = (now >> 32) if hwreg == 30 else now & 0xFFFFFFFF
            write(b, np.uint32((value >> offset) & mask))
        return getreg
    write = scalar_writer(inst.dsts[0], "b64")
    return lambda b, m: write(b, np.uint64(m.clock.now()))


def _saveexec(inst: Instruction, spec: tuple, info: Any) -> Closure:
    fn, width, wrexec = spec
    ty = "b64" if width == 64 else "b32"
    src = scalar_reader(inst.srcs[0], ty)
    write = scalar_writer(inst.dsts[0], ty)
    mask = np.uint64((1 << width) - 1)

    def saveexec(b: Batch, m: Any) -> None:
        old = b.exec_bits()
        value = np.broadcast_to(np.asarray(src(b)).astype(np.uint64), (b.waves,))
        new = fn(value, old) & mask
        if not wrexec:
            write(b, old if width == 64 else old.astype(np.uint32))
        b.set_exec_bits(new)
        b.scc = new != 0
        if wrexec:
            write(b, new if width == 64 else new.astype(np.uint32))
    return saveexec


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


def _is_dpp_supported(inst: Instruction) -> bool:
    """DPP16 on VOP1/VOP2 (not VOPC, DPP8 or SDWA)."""
    return (inst.fields.get("dpp") is not None or "dpp8" in inst.fields) \
        and not inst.fields.get("sdwa") and inst.encoding in ("VOP1", "VOP2", "VOP3") \
        and not inst.name.startswith(("v_cmp", "v_cndmask", "v_add_co", "v_sub_co", "v_addc",
                                      "v_subb", "v_subrev_co"))


def dpp_source_lanes(ctrl: int, lanes: int, family: str) -> np.ndarray:
    """For each lane, the lane its src0 comes from under DPP control ``ctrl`` (-1: none).

    GFX9/GFX12 ISA guides, "DPP_CTRL": quad_perm 0x00-0xFF, row_shl 0x101-0x10F, row_shr
    0x111-0x11F, row_ror 0x121-0x12F, wave_shl/rol/shr/ror 0x130/0x134/0x138/0x13C (gfx9),
    row_mirror 0x140, row_half_mirror 0x141, row_bcast15/31 0x142/0x143 (gfx9), row_share
    0x150-0x15F and row_xmask 0x160-0x16F (gfx10+)."""
    lane = np.arange(lanes)
    row = lane & ~15
    pos = lane & 15
    if ctrl <= 0xFF:
        return (lane & ~3) | ((ctrl >> (2 * (lane & 3))) & 3)
    n = ctrl & 15
    if 0x101 <= ctrl <= 0x10F:
        return np.where(pos + n < 16, lane + n, -1)
    if 0x111 <= ctrl <= 0x11F:
        return np.where(pos >= n, lane - n, -1)
    if 0x121 <= ctrl <= 0x12F:
        return row + ((pos - n) & 15)
    if ctrl == 0x140:
        return row + 15 - pos
    if ctrl == 0x141:
        return (lane & ~7) + 7 - (lane & 7)
    if family == "gfx9":
        if ctrl == 0x130:
            return np.where(lane + 1 < lanes, lane + 1, -1)
        if ctrl == 0x134:
            return (lane + 1) % lanes
        if ctrl == 0x138:
            return lane - 1
        if ctrl == 0x13C:
            return (lane - 1) % lanes
        if ctrl == 0x142:
            return np.where(row > 0, row - 1, -1)
        if ctrl == 0x143:
            return np.where(lane >= 32, 31, -1)
    else:
        if 0x150 <= ctrl <= 0x15F:
            return row + n
        if 0x160 <= ctrl <= 0x16F:
            return row + (pos ^ n)
    raise NotImplementedOperand(f"DPP control {ctrl:#x}")


def _dpp_parts(inst: Instruction, info: Any, readers: list, fn, write):
    """src0 read through the DPP lane permutation; lanes outside row_mask/bank_mask, or whose
    source lane is missing or inactive without bound_ctrl, keep their old value."""
    f = inst.fields
    lane = np.arange(info.wave_size)
    if "dpp8" in f:
        # DPP8: lane i of each group of 8 reads lane sel[i]; no masks; inactive sources read 0
        # unless fetch-inactive (the DPP8FI source code 234).
        sel = int(f["dpp8_sel"])
        src = (lane & ~7) | ((sel >> (3 * (lane & 7))) & 7)
        enabled = np.ones(info.wave_size, bool)
        zero_fill = True
        fetch_inactive = int(f.get("src0", 0)) == 234
    else:
        src = dpp_source_lanes(int(f["dpp_ctrl"]), info.wave_size, inst.family)
        enabled = (((int(f.get("row_mask", 15)) >> (lane // 16)) & 1).astype(bool)
                   & ((int(f.get("bank_mask", 15)) >> ((lane & 15) // 4)) & 1).astype(bool))
        zero_fill = bool(f.get("bound_ctrl", 0))
        fetch_inactive = bool(f.get("fi", 0))
    exists = src >= 0
    gather = np.where(exists, src, 0)
    clamp = int(f.get("clamp", 0))
    omod = int(f.get("omod", 0))

    def compute(b: Batch, m: Any):
        args = [r(b) for r in readers]
        a0 = np.broadcast_to(args[0], b.exec.shape)
        permuted = a0[:, gather]
        valid = exists[None, :] & (True if fetch_inactive else b.exec[:, gather])
        enable = np.broadcast_to(enabled, b.exec.shape)
        if zero_fill:
            permuted = np.where(valid, permuted, np.zeros((), permuted.dtype))
        else:
            enable = enable & valid
        args[0] = permuted
        result = np.asarray(fn(*args))
        if omod and result.dtype.kind == "f":
            result = result * result.dtype.type((0, 2.0, 4.0, 0.5)[omod])
        if clamp and result.dtype.kind == "f":
            result = np.clip(np.nan_to_num(result, nan=0.0), 0, 1).astype(result.dtype)
        return result, enable

    def commit(b: Batch, result) -> None:
        value, enable = result
        saved = b.exec
        b.exec = saved & enable
        b.exec_all = False
        try:
            write(b, value)
        finally:
            b.exec = saved
            b.exec_changed()
    return compute, commit


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
    name = inst.name
    cmp = alu.compare_spec(name)
    if cmp is not None:
        return _vcmp(inst, cmp, info)
    if name in _CARRY_OPS:
        return _vcarry(inst, _CARRY_OPS[name])
    if name in ("v_mad_u64_u32", "v_mad_i64_i32", "v_mad_co_u64_u32", "v_mad_co_i64_i32"):
        return _vmad64(inst)
    if name in ("v_div_scale_f32", "v_div_scale_f64"):
        return _vdiv_scale(inst)
    if name in ("v_div_fmas_f32", "v_div_fmas_f64"):
        return _vdiv_fmas(inst, info)
    if name in ("v_cndmask_b32", "v_cndmask_b16"):
        return _vcndmask(inst, info)
    if name in ("v_readfirstlane_b32", "v_readlane_b32", "v_writelane_b32"):
        return _vlane(inst)
    if name in ("v_mbcnt_lo_u32_b32", "v_mbcnt_hi_u32_b32"):
        return _vmbcnt(inst, info)
    if name in ("v_accvgpr_read_b32", "v_accvgpr_write_b32", "v_accvgpr_mov_b32"):
        read = vector_reader(inst.srcs[0], "b32")
        write = vector_writer(inst.dsts[0], "b32")
        return (lambda b, m: read(b)), write
    if name in ("v_fma_mix_f32", "v_fma_mixlo_f16", "v_fma_mixhi_f16", "v_mad_mix_f32",
                "v_mad_mixlo_f16", "v_mad_mixhi_f16"):
        return _vmix(inst)
    if name == "v_pk_mov_b32":
        return _vpk_mov(inst)
    if name.startswith("v_pk_") and inst.encoding == "VOP3P":
        return _vpk(inst)
    if name in alu.VALU:
        return _vgeneric(inst, alu.VALU[name], info)
    if name.startswith("v_s_") and ("v_" + name[4:]) in alu.VALU:
        return _vscalar_trans(inst, alu.VALU["v_" + name[4:]])
    if name.startswith("v_dual_"):
        base = "v_" + name[len("v_dual_"):]
        if base in alu.VALU:
            return _vgeneric(inst, alu.VALU[base], info)
        if base == "v_cndmask_b32":
            return _vcndmask(inst, info)
    return None, None


def _op_sel(inst: Instruction, position: int) -> int:
    return (int(inst.fields.get("op_sel", 0)) >> position) & 1


def _vgeneric(inst: Instruction, spec: alu.Spec, info: Any):
    dst_ty, src_tys, fn = spec
    srcs = list(inst.srcs)
    base = inst.name.replace("v_dual_", "v_")
    if base.startswith(("v_fmac_", "v_mac_", "v_dot2c_")) and len(srcs) == 2:
        srcs.append(inst.dsts[0])  # the accumulator is the destination register
    if len(srcs) != len(src_tys):
        raise NotImplementedOperand(f"{len(srcs)} sources for {len(src_tys)}-source semantics")
    readers = [vector_reader(op, ty, _op_sel(inst, i) if WIDTH[ty] == 16 else 0)
               for i, (op, ty) in enumerate(zip(srcs, src_tys))]
    write = vector_writer(inst.dsts[0], dst_ty,
                          _op_sel(inst, 3) if WIDTH[dst_ty] == 16 else 0)
    clamp = int(inst.fields.get("clamp", 0))
    omod = int(inst.fields.get("omod", 0))
    is_float = dst_ty[0] == "f"
    ftz = info.ftz32 if dst_ty == "f32" else info.ftz64 if dst_ty in ("f64", "f16") else False
    dtype = np.dtype({"f16": np.float16, "f32": np.float32, "f64": np.float64}.get(dst_ty, "u1"))
    tiny = np.finfo(dtype).tiny if is_float else 0

    def flush(x):
        return np.where(np.abs(x) < tiny, np.copysign(np.zeros((), x.dtype), x), x)

    if inst.fields.get("dpp") is not None or "dpp8" in inst.fields:
        return _dpp_parts(inst, info, readers, fn, write)
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

        def saturate(b: Batch, m: Any):
            # VOP3 clamp on integer add/sub saturates (LLVM selects it for uadd.sat & co.):
            # the exact result in int64, clipped to the destination type
            args = [np.asarray(r(b)).astype(np.int64) for r in readers]
            return np.clip(fn(*args), lo, hi)
        return saturate, write

    def compute(b: Batch, m: Any):
        args = [r(b) for r in readers]
        if ftz and is_float:
            args = [flush(np.asarray(a)) if np.asarray(a).dtype == dtype else a for a in args]
        result = np.asarray(fn(*args))
        if is_float:
            if omod:
                result = result * result.dtype.type((0, 2.0, 4.0, 0.5)[omod])
            if clamp:
                result = np.clip(result, 0, 1)  # NaN stays NaN (numpy clip propagates NaN)
                result = np.where(np.isnan(result), result.dtype.type(0), result)
            if ftz:
                result = flush(result)
        return result
    return compute, write


_INT_RANGE = {"u32": (0, 0xFFFFFFFF), "i32": (-2 ** 31, 2 ** 31 - 1), "u16": (0, 0xFFFF),
              "i16": (-2 ** 15, 2 ** 15 - 1)}


def _saturating(name: str) -> bool:
    """Integer ops whose VOP3 clamp bit saturates: adds and subtracts (ISA "clamp" for
    V_ADD_U32, V_SUB_U32, V_ADD_I32, V_ADD_U16, V_ADD_NC_*, V_SUB_NC_*, ...)."""
    op = name.replace("v_dual_", "v_").split("_")[1]
    return op in ("add", "sub", "subrev")


def _vscalar_trans(inst: Instruction, spec: alu.Spec):
    """gfx12 v_s_exp_f32 / v_s_rcp_f32 / ...: a VALU transcendental on one scalar per wave,
    written to an SGPR (RDNA4 ISA, "VOP3 scalar transcendental")."""
    dst_ty, src_tys, fn = spec
    readers = [scalar_reader(op, ty) for op, ty in zip(inst.srcs, src_tys)]
    write = scalar_writer(inst.dsts[0], dst_ty)
    return (lambda b, m: np.asarray(fn(*(r(b) for r in readers)))), write


def _vcmp(inst: Instruction, spec: tuple, info: Any):
    ty, fn, writes_exec = spec
    srcs = inst.srcs
    if inst.name.startswith(("v_cmp_class", "v_cmpx_class")):
        readers = [vector_reader(srcs[0], ty), vector_reader(srcs[1], "u32")]
    else:
        readers = [vector_reader(srcs[0], ty), vector_reader(srcs[1], ty)]
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


def _vcarry(inst: Instruction, spec: tuple):
    kind, subtract, reverse = spec
    a = vector_reader(inst.srcs[0], "u32")
    c = vector_reader(inst.srcs[1], "u32")
    carry_in = lane_mask_reader(inst.srcs[2]) if kind == "inout" else None
    write = vector_writer(inst.dsts[0], "u32")
    write_carry = mask_writer(inst.dsts[1]) if len(inst.dsts) > 1 else None

    def compute(b: Batch, m: Any):
        x = np.asarray(a(b)).astype(np.int64)
        y = np.asarray(c(b)).astype(np.int64)
        if reverse:
            x, y = y, x
        cin = carry_in(b).astype(np.int64) if carry_in is not None else 0
        total = x - y - cin if subtract else x + y + cin
        return total

    clamp = bool(int(inst.fields.get("clamp", 0)))

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
            return total.view(np.uint64) if total.ndim else np.asarray(total).astype(np.uint64), carry
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


def _vdiv_scale(inst: Instruction):
    ty = "f32" if inst.name.endswith("f32") else "f64"
    fn = alu._div_scale(alu.f32 if ty == "f32" else alu.f64)
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
    fn = alu._div_fmas(alu.f32 if ty == "f32" else alu.f64)
    readers = [vector_reader(op, ty) for op in inst.srcs[:3]]
    vcc = lane_mask_reader(Operand("special", 106, 2 if info.wave_size == 64 else 1, None,
                                   "vcc" if info.wave_size == 64 else "vcc_lo"))
    write = vector_writer(inst.dsts[0], ty)
    return (lambda b, m: fn(readers[0](b), readers[1](b), readers[2](b), vcc(b))), write


def _vcndmask(inst: Instruction, info: Any):
    ty = "b16" if inst.name.endswith("b16") else "b32"
    if inst.fields.get("abs") or inst.fields.get("neg"):
        ty = "f16" if ty == "b16" else "f32"
    a = vector_reader(inst.srcs[0], ty)
    c = vector_reader(inst.srcs[1], ty)
    if len(inst.srcs) > 2:
        sel = lane_mask_reader(inst.srcs[2])
    else:  # VOPD v_dual_cndmask_b32 reads VCC implicitly
        wide = info.wave_size == 64
        sel = lane_mask_reader(Operand("special", 106, 2 if wide else 1, None,
                                       "vcc" if wide else "vcc_lo"))
    write = vector_writer(inst.dsts[0], ty)
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


def _vmix(inst: Instruction):
    """v_fma_mix*: each source is f32, or (op_sel_hi bit set) the f16 half chosen by op_sel;
    neg negates and neg_hi takes the absolute value of a source (ISA guide, "V_FMA_MIX_F32")."""
    f = inst.fields
    op_sel = int(f.get("op_sel", 0))
    # op_sel_hi of src2 is a separate bit (VOP3P word 0 bit 14)
    op_sel_hi = int(f.get("op_sel_hi", 0)) | int(f.get("op_sel_hi2", 0)) << 2
    # the decoder turned neg_lo/neg_hi into each source's neg/abs modifiers
    neg = sum(1 << i for i, op in enumerate(inst.srcs[:3]) if op.neg)
    absolute = sum(1 << i for i, op in enumerate(inst.srcs[:3]) if op.abs)
    readers = []
    for i, op in enumerate(inst.srcs[:3]):
        plain = Operand(op.kind, op.index, op.count, op.value, op.name)
        if (op_sel_hi >> i) & 1:
            readers.append(vector_reader(plain, "f16", (op_sel >> i) & 1))
        else:
            readers.append(vector_reader(plain, "f32"))
    name = inst.name
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
        if fused:
            # the f32 x f32 product is exact in f64; round the sum once to the result type
            result = args[0].astype(np.float64) * args[1] + args[2]
        else:
            result = (args[0] * args[1]).astype(np.float32) + args[2]
        if int(f.get("clamp", 0)):
            result = np.clip(np.nan_to_num(result, nan=0.0), 0, 1)
        return np.asarray(result).astype(out)
    return compute, write


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


def _vpk(inst: Instruction):
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
    if base.endswith("_f32"):
        spec = alu.VALU.get(base)
        if spec is None:
            return None, None
        _, src_tys, fn = spec
        readers = []
        for i, op in enumerate(inst.srcs):
            readers.append((vector_reader(Operand(op.kind, op.index, 1, op.value, op.name), "f32"),
                            vector_reader(Operand(op.kind, op.index + 1, 1, op.value, op.name), "f32")
                            if op.kind in ("vgpr", "sgpr", "agpr", "ttmp") else None, op))
        write = vector_writer(inst.dsts[0], "b64")

        def pick(pair, sel):
            lo_reader, hi_reader, op = pair
            if sel and hi_reader is not None:
                return hi_reader
            return lo_reader

        def compute(b: Batch, m: Any):
            halves = []
            for half, sels, negs in ((0, op_sel, neg_lo), (1, op_sel_hi, neg_hi)):
                args = []
                for i, pair in enumerate(readers):
                    value = pick(pair, (sels >> i) & 1)(b)
                    if (negs >> i) & 1:
                        value = -value
                    args.append(value)
                halves.append(np.asarray(fn(*args), np.float32))
            lo = halves[0].view(np.uint32).astype(np.uint64)
            hi = halves[1].view(np.uint32).astype(np.uint64)
            return lo | (hi << np.uint64(32))
        return compute, write
    for suffix, ty in (("_f16", "f16"), ("_u16", "u16"), ("_i16", "i16"), ("_b16", "b16")):
        if base.endswith(suffix):
            break
    else:
        return None, None
    spec = alu.VALU.get(base)
    if spec is None:
        generic = {"v_add_u16": "v_add_u16", "v_sub_u16": "v_sub_u16"}
        spec = alu.VALU.get(generic.get(base, ""))
    if spec is None:
        if base in ("v_mul_lo_u16",):
            spec = alu.VALU["v_mul_lo_u16"]
        else:
            return None, None
    _, src_tys, fn = spec
    readers = [(vector_reader(op, ty, 0), vector_reader(op, ty, 1))
               for op, ty in zip(inst.srcs, src_tys)]
    write = vector_writer(inst.dsts[0], "b32")
    is_float = ty == "f16"
    saturate = bool(int(fields.get("clamp", 0))) and not is_float and _saturating(base)

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
            result = np.asarray(fn(*args))
            if saturate:   # VOP3P clamp on integer add/sub saturates each half
                result = np.clip(result, *_INT_RANGE[ty])
            out.append(result.astype(alu.DTYPE16[ty]).view(np.uint16).astype(np.uint32))
        return out[0] | (out[1] << np.uint32(16))
    return compute16, write


alu.DTYPE16 = {"f16": np.float16, "u16": np.uint16, "i16": np.int16, "b16": np.uint16}


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


__all__ = ["compile_instruction", "NotImplementedInstruction", "END", "BARRIER", "SPLIT",
           "unpack_mask"]
