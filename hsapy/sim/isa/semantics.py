"""Compile decoded instructions into closures that run on a :class:`~hsapy.sim.isa.wave.Batch`.

``compile_instruction(inst, machine_info)`` returns ``fn(batch, machine) -> None | int``: None
means "next instruction", a non-negative int is the byte address to continue at, a negative int
one of :data:`END`, :data:`BARRIER`, :data:`SPLIT` (the batch went both ways at a branch, or its
waves jumped to different addresses, and the machine now holds the parts) or
:data:`MODE_CHANGED` (the batch's MODE register changed: it continues at the next instruction
in the program compiled for the new value). An instruction the interpreter does not implement
compiles to a closure that raises :class:`NotImplementedInstruction` when (and only when) it is
reached; wave64 code in a wave32 wave raises :class:`~hsapy.sim.isa.wave.WaveSizeMismatch`
when it sets EXEC bits 32-63.

Float instructions are compiled for the MODE value in ``machine_info.mode``
(``hsapy.sim.isa.float_mode``): a rounding direction other than round-to-nearest-even uses the
instruction's directed semantics, or compiles to a closure that stops naming the mode.

ALU semantics are tables in ``semantics_alu.py``; memory instructions are in ``semantics_mem.py``;
matrix instructions (MFMA, WMMA and their sparse forms) in ``semantics_matrix.py``.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from hsapy.hsa_enums import HSA_STATUS_ERROR_EXCEPTION, HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION
from hsapy.sim.execution import SimFault
from hsapy.sim.isa import float_mode, gpr_index
from hsapy.sim.isa import semantics_alu as alu

# the closure vocabulary lives below every instruction family; semantics.py re-exports it
from hsapy.sim.isa.closures import (  # noqa: F401
    BARRIER,
    END,
    MODE_CHANGED,
    SPLIT,
    Closure,
    NotImplementedInstruction,
)
from hsapy.sim.isa.closures import unimplemented as _unimplemented
from hsapy.sim.isa.instruction import Instruction, Operand
from hsapy.sim.isa.operand_access import (
    WIDTH,
    NotImplementedOperand,
    lane_mask_reader,
    mask_writer,
    scalar_reader,
    scalar_writer,
    sdwa_reader,
    sdwa_writer,
    vector_reader,
    vector_writer,
)
from hsapy.sim.isa.wave import Batch, WaveSizeMismatch, unpack_mask

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
    "s_prefetch_data", "s_setkill", "s_nop_e",
    "s_waitcnt_depctr", "s_wait_event", "s_sleep_var",
    # performance-level hints and the wake-up of s_sleep'ing waves change no state the
    # simulator keeps; v_clrexcp clears exception bits it does not model
    "s_incperflevel", "s_decperflevel", "s_wakeup", "v_nop", "v_pipeflush", "v_clrexcp",
    "s_gl1_inv",
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
    if name == "v_illegal":
        return _illegal(inst)
    mode = getattr(info, "mode", None)
    if mode is not None:
        why = float_mode.unsupported(name, mode)
        if not why and inst.pair is not None:
            why = float_mode.unsupported(inst.pair.name, mode)
        if not why and inst.fields.get("clamp") and info.family != "gfx12" \
                and not mode.dx10_clamp and float_mode.float_types(name):
            # the float clamp semantics turn NaN into 0, which is DX10_CLAMP's behaviour
            why = f"MODE {mode.value:#x}: clamp with DX10_CLAMP off is not implemented"
        if why:
            return _unimplemented(inst, why)
    if enc in gpr_index.VALU_ENCODINGS and gpr_index.enabled(info):
        return gpr_index.compile_indexed(inst, info, _compile_checked)
    return _compile_plain(inst, info)


def _compile_checked(inst: Instruction, info: Any) -> Closure:
    try:
        return _compile_plain(inst, info)
    except NotImplementedOperand as exc:
        return _unimplemented(inst, str(exc))


def _compile_plain(inst: Instruction, info: Any) -> Closure:
    """``inst``'s closure once the checks every instruction goes through are done."""
    name = inst.name
    enc = inst.encoding
    if enc == "SOPP":
        return _sopp(inst, info)
    if enc in ("SMEM", "DS", "FLAT", "GLOBAL", "SCRATCH", "MUBUF", "MTBUF", "VBUFFER"):
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
    return _valu(inst, info)


def _illegal(inst: Instruction) -> Closure:
    """V_ILLEGAL (gfx10+, the all-zero dword): an illegal-instruction exception; execution that
    reaches zero padding or data stops here."""
    def run(b: Batch, m: Any) -> None:
        raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                       f"v_illegal at {inst.offset:#x}: the wave executed the illegal-instruction "
                       "word 0x00000000 (zero padding or data, not code)", inst.offset)
    return run


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
    if name.startswith("s_cbranch_cdbg"):
        # taken when the debugger's COND_DBG_SYS / COND_DBG_USER status bits are set; no debugger
        # attaches to the simulator, so they are 0
        return lambda b, m: None
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
    if name in ("s_round_mode", "s_denorm_mode"):
        # RDNA4 ISA S_ROUND_MODE / S_DENORM_MODE: MODE.FP_ROUND (bits 3:0) or MODE.FP_DENORM
        # (bits 7:4) = SIMM16[3:0]
        shift = 0 if name == "s_round_mode" else 4
        value = int(inst.srcs[0].value) & 0xF if inst.srcs else 0
        return _mode_writer(lambda b: np.asarray(value, np.uint32), shift, 4,
                            inst.offset + inst.size)
    if name.startswith("s_set_gpr_idx_"):
        return gpr_index.compile_control(inst, info)
    if name in ("s_sendmsg", "s_sendmsghalt"):
        return lambda b, m: None  # messages (dealloc VGPRs, ...) have no effect here
    if name == "s_trap":
        trap_id = int(inst.srcs[0].value) & 0xFF if inst.srcs else 0
        text = inst.text()

        def trap(b: Batch, m: Any) -> None:
            # the trap handler ends the dispatch with a queue error, as ROCr's does for
            # abort(), __builtin_trap() and a failed device assert
            raise SimFault(HSA_STATUS_ERROR_EXCEPTION,
                           f"{text} at {inst.offset:#x}: the kernel executed trap {trap_id:#x} "
                           "(abort, __builtin_trap or a failed assert)", inst.offset)
        return trap
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
    if name in ("s_setreg_b32", "s_setreg_imm32_b32"):
        return _setreg(inst, info)
    if name == "s_version":   # RDNA4 guide, S_VERSION: "Do nothing" (a marker for tools)
        return lambda b, m: None
    if name.startswith("s_set_gpr_idx_"):
        return gpr_index.compile_control(inst, info)
    if name == "s_call_b64":
        # CDNA3 / RDNA4 ISA S_CALL_B64: D = PC + 4, then a branch by the signed word offset
        write = scalar_writer(inst.dsts[0], "b64")
        back = np.uint64(inst.offset + inst.size)
        target = int(inst.srcs[-1].value)

        def call(b: Batch, m: Any) -> int:
            write(b, back)
            return target
        return call
    if name.startswith(("s_movrels_", "s_movreld_", "s_movrelsd_2_")):
        return _smovrel(inst, info)
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
            right_value = np.asarray(value).astype(np.int64).astype(
                alu.u32 if ty == "u32" else alu.i32)
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
        fn = _in_mode(name, dst_ty, fn, info)
        srcs = list(inst.srcs)
        if name in ("s_fmac_f32", "s_fmac_f16"):
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


def _in_mode(name: str, dst_ty: str, fn: Callable, info: Any) -> Callable:
    """``fn``, or its directed-rounding version under the MODE the program is compiled for
    (``_compile`` already refused float instructions without one)."""
    mode = getattr(info, "mode", None)
    if mode is None:
        return fn
    return float_mode.directed_fn(name, mode, dst_ty, fn)


def _sext16(value: int) -> int:
    value = int(value) & 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def _m0_index(info: Any) -> int:
    """Row of M0 in ``Batch.S``: operand code 124 on gfx9, 125 on gfx11/gfx12."""
    return 124 if info.family == "gfx9" else 125


def _relative_rows(b: Batch, base: int, m0: np.ndarray, count: int, limit: int, what: str):
    rows = base + m0.astype(np.int64)
    if (rows < 0).any() or (rows + count > limit).any():
        bad = int(rows[(rows < 0) | (rows + count > limit)][0])
        raise NotImplementedInstruction(f"M0-relative {what} index {bad} is outside the register "
                                        f"file (0..{limit - 1})")
    return rows


def _smovrel(inst: Instruction, info: Any) -> Closure:
    """S_MOVRELS / S_MOVRELD / S_MOVRELSD_2 (CDNA3, RDNA4 ISA): an SGPR move whose source and/or
    destination register number is offset by M0 (for _2: M0[9:0] and M0[25:16])."""
    name = inst.name
    count = 2 if name.endswith("_b64") else 1
    m0 = _m0_index(info)
    src, dst = inst.srcs[0], inst.dsts[0]
    for op in (src, dst):
        if op.kind != "sgpr":
            raise NotImplementedOperand(f"{name} on {op.kind} {op.name or op.index}")
    limit = alu.SGPR_COUNT[info.family]

    def run(b: Batch, m: Any) -> None:
        waves = np.arange(b.waves)
        m0v = b.S[:, m0].astype(np.int64)
        if name.startswith("s_movrelsd_2"):
            src_off, dst_off = m0v & 0x3FF, (m0v >> 16) & 0x3FF
        else:
            src_off = m0v if name.startswith("s_movrels") else np.zeros_like(m0v)
            dst_off = m0v if name.startswith(("s_movreld", "s_movrelsd")) else np.zeros_like(m0v)
        rows_s = _relative_rows(b, src.index, src_off, count, limit, "SGPR")
        rows_d = _relative_rows(b, dst.index, dst_off, count, limit, "SGPR")
        values = [b.S[waves, rows_s + k].copy() for k in range(count)]
        for k in range(count):
            b.S[waves, rows_d + k] = values[k]
    return run


def _indirect_jump(read: Callable, link: tuple | None) -> Closure:
    """s_setpc_b64 / s_swappc_b64: the batch's waves may jump to different addresses (function
    pointers that differ per wave); each group continues as its own batch."""
    def run(b: Batch, m: Any) -> int:
        targets = np.broadcast_to(np.asarray(read(b)).astype(np.uint64), (b.waves,)).copy()
        if link is not None:
            link[0](b, link[1])
        first = targets[0]
        if (targets == first).all():
            return int(first)
        for target in np.unique(targets):
            m.pending.append(b.take(targets == target, int(target)))
        return SPLIT
    return run


def _setreg(inst: Instruction, info: Any) -> Closure:
    """S_SETREG_B32 / S_SETREG_IMM32_B32 hwreg(id, offset, size), value: only MODE is writable
    here (CDNA3 / RDNA4 ISA guides, "S_SETREG_B32"); writing another hardware register stops
    naming it. Operands: the hwreg immediate, then the SGPR or the 32-bit literal."""
    simm = int(inst.srcs[0].value)
    hwreg = simm & 0x3F
    offset = (simm >> 6) & 0x1F
    size = ((simm >> 11) & 0x1F) + 1
    if hwreg != float_mode.MODE_HWREG:
        return _unimplemented(inst, f"writing hardware register {hwreg} (only MODE, 1, is "
                                    "modelled)")
    read = scalar_reader(inst.srcs[1], "u32")
    modelled = float_mode.MODELLED_BITS
    if info.family == "gfx9":
        modelled |= gpr_index.GPR_IDX_EN
    return _mode_writer(read, offset, size, inst.offset + inst.size, modelled)


def _mode_writer(read: Callable, offset: int, size: int, next_pc: int,
                 modelled: int = float_mode.MODELLED_BITS) -> Closure:
    """MODE[offset + size - 1 : offset] = the value's low ``size`` bits; the batch then runs
    the program compiled for its new MODE (waves whose values differ continue separately).
    Changing a bit outside ``modelled`` stops the queue."""
    field = (((1 << size) - 1) << offset) & 0xFFFFFFFF

    def write(b: Batch, m: Any) -> int | None:
        values = np.broadcast_to(np.asarray(read(b)).astype(np.int64), (b.waves,))
        new = (b.mode & ~field) | ((values << offset) & field)
        changed = int(np.bitwise_or.reduce((new ^ b.mode) & ~modelled))
        if changed:
            # exception enables, debug and the other MODE controls are not modelled
            raise NotImplementedInstruction(
                f"writing MODE bits {changed:#x} (only FP_ROUND, FP_DENORM, DX10_CLAMP, IEEE "
                "and, on gfx9, GPR_IDX_EN are modelled)")
        first = int(new[0])
        if (new == first).all():
            if first == b.mode:
                return None
            b.mode = first
            return MODE_CHANGED
        for value in np.unique(new):
            part = b.take(new == value, next_pc)
            part.mode = int(value)
            m.pending.append(part)
        return SPLIT
    return write


def _clock_or_hwreg(inst: Instruction, info: Any) -> Closure:
    name = inst.name
    if name == "s_getreg_b32":
        write = scalar_writer(inst.dsts[0], "b32")
        # simm16: hwreg id 5:0, bit offset 10:6, size - 1 15:11. MODE (1) reads the wave's
        # MODE register; gfx12 HW_REG_SHADER_CYCLES_LO (29) / _HI (30) read the clock; other
        # registers (status, ids) read as 0.
        simm = int(inst.srcs[0].value) if inst.srcs and inst.srcs[0].value is not None \
            else int(inst.fields.get("simm16", 0))
        hwreg = simm & 0x3F
        offset = (simm >> 6) & 0x1F
        mask = (1 << (((simm >> 11) & 0x1F) + 1)) - 1

        def getreg(b: Batch, m: Any) -> None:
            value = 0
            if hwreg == float_mode.MODE_HWREG:
                value = b.mode
            elif inst.family == "gfx12" and hwreg in (29, 30):
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


def _extension(inst: Instruction) -> str:
    """The operand extension of a VALU instruction: "sdwa", "dpp" (DPP16), "dpp8" or ""."""
    f = inst.fields
    if f.get("sdwa"):
        return "sdwa"
    if "dpp8" in f:
        return "dpp8"
    if f.get("dpp") is not None:
        return "dpp"
    return ""


def _no_extension(inst: Instruction) -> None:
    """Handlers that do not read their sources through :func:`_src_reader` refuse DPP/SDWA."""
    if _extension(inst):
        raise NotImplementedOperand(f"{_extension(inst).upper()} form of {inst.name}")


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


def _dpp_plan(inst: Instruction, lanes: int):
    """(source lane of each lane, whether it exists, lanes the row/bank masks enable,
    zero-fill, fetch-inactive) of a DPP16 or DPP8 instruction."""
    f = inst.fields
    lane = np.arange(lanes)
    if "dpp8" in f:
        # DPP8: lane i of each group of 8 reads lane sel[i]; no masks; a source lane outside
        # EXEC reads 0 unless fetch-inactive (the DPP8FI source code 234)
        sel = int(f["dpp8_sel"])
        src = (lane & ~7) | ((sel >> (3 * (lane & 7))) & 7)
        enabled = np.ones(lanes, bool)
        zero_fill = True
        fetch_inactive = int(f.get("src0", 0)) == 234
    else:
        src = dpp_source_lanes(int(f["dpp_ctrl"]), lanes, inst.family)
        enabled = (((int(f.get("row_mask", 15)) >> (lane // 16)) & 1).astype(bool)
                   & ((int(f.get("bank_mask", 15)) >> ((lane & 15) // 4)) & 1).astype(bool))
        zero_fill = bool(f.get("bound_ctrl", 0))
        fetch_inactive = bool(f.get("fi", 0))
    exists = src >= 0
    return np.where(exists, src, 0), exists, enabled, zero_fill, fetch_inactive


def _dpp_valid(b: Batch, gather: np.ndarray, exists: np.ndarray, fetch_inactive: bool):
    """Lanes whose DPP source lane exists and (unless fetch-inactive) is in EXEC."""
    if fetch_inactive:
        return np.broadcast_to(exists, b.exec.shape)
    return exists[None, :] & b.exec[:, gather]


def _src_reader(inst: Instruction, info: Any, index: int, ty: str, half: int = 0,
                op: Operand | None = None):
    """Source ``index`` of a VALU instruction as ``ty``, through its SDWA select or (src0) its
    DPP lane permutation when the instruction has one."""
    op = inst.srcs[index] if op is None else op
    kind = _extension(inst)
    if kind == "sdwa" and index < 2:
        f = inst.fields
        return sdwa_reader(op, ty, int(f.get(f"src{index}_sel", 6)),
                           bool(f.get(f"src{index}_sext", 0)))
    read = vector_reader(op, ty, half)
    if not kind or index != 0:
        return read
    gather, exists, _, zero_fill, fetch_inactive = _dpp_plan(inst, info.wave_size)

    def permuted(b: Batch):
        value = np.broadcast_to(read(b), b.exec.shape)[:, gather]
        if zero_fill:   # bound_ctrl / DPP8: a missing or inactive source lane reads 0
            valid = _dpp_valid(b, gather, exists, fetch_inactive)
            value = np.where(valid, value, np.zeros((), value.dtype))
        return value
    return permuted


def _dst_writer(inst: Instruction, ty: str, half: int = 0, op: Operand | None = None):
    """The vector destination of a VALU instruction, through its SDWA dst_sel / dst_unused."""
    op = inst.dsts[0] if op is None else op
    f = inst.fields
    if f.get("sdwa") and inst.encoding != "VOPC":
        if WIDTH[ty] > 32:
            # a register-pair result (V_CVT_PK_F32_FP8_SDWA selects only its source word)
            if int(f.get("dst_sel", 6)) != 6 or int(f.get("dst_unused", 0)) != 0:
                raise NotImplementedOperand(f"SDWA dst_sel on a {ty} result")
            return vector_writer(op, ty, half)
        return sdwa_writer(op, ty, int(f.get("dst_sel", 6)), int(f.get("dst_unused", 0)))
    return vector_writer(op, ty, half)


def _output_modifiers(inst: Instruction) -> tuple[int, int]:
    """(clamp, omod) from the VOP3 fields or, in an SDWA form, from the SDWA dword."""
    f = inst.fields
    if f.get("sdwa"):
        if inst.encoding == "VOPC":
            return 0, 0            # bits 14:8 name the scalar destination instead
        return int(f.get("sdwa_clamp", 0)), int(f.get("sdwa_omod", 0))
    return int(f.get("clamp", 0)), int(f.get("omod", 0))


def _dpp_commit(inst: Instruction, info: Any, commit):
    """Commit a DPP instruction's result only in the lanes the row/bank masks enable and
    (without bound_ctrl) whose source lane was valid: the others keep their old value."""
    gather, exists, enabled, zero_fill, fetch_inactive = _dpp_plan(inst, info.wave_size)

    def run(b: Batch, result) -> None:
        enable = np.broadcast_to(enabled, b.exec.shape)
        if not zero_fill:
            enable = enable & _dpp_valid(b, gather, exists, fetch_inactive)
        saved = b.exec
        masked = saved & enable
        b.exec = masked
        b.exec_all = False
        try:
            commit(b, result)
        finally:
            if b.exec is masked:        # a v_cmpx wrote EXEC: keep what it wrote
                b.exec = saved
            b.exec_changed()
    return run


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


def _valu_spec(name: str, info: Any) -> alu.Spec:
    """The semantics of ``name`` for this kernel: gfx9 min/max in IEEE mode (the kernel
    descriptor's IEEE_MODE, set for compute kernels) quiet a signaling NaN operand."""
    spec = alu.VALU[name]
    if info.family == "gfx9" and name in alu.IEEE_MODE_OPS and getattr(info, "ieee", True):
        return spec[0], spec[1], alu.IEEE_MODE_OPS[name]
    return spec


def _op_sel(inst: Instruction, position: int) -> int:
    return (int(inst.fields.get("op_sel", 0)) >> position) & 1


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
    """Integer ops whose VOP3 clamp bit saturates: adds, subtracts and multiply-adds (ISA "clamp"
    for V_ADD_U32, V_SUB_U32, V_ADD_I32, V_ADD_U16, V_ADD_NC_*, V_SUB_NC_*, V_MAD_U16, ...)."""
    op = name.replace("v_dual_", "v_").split("_")[1]
    return op in ("add", "sub", "subrev", "mad")


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
    fn = _in_mode(inst.name, ty, alu._div_scale(alu.f32 if ty == "f32" else alu.f64), info)
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
    fn = _in_mode(inst.name, ty, alu._div_fmas(alu.f32 if ty == "f32" else alu.f64), info)
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
        table = alu.small_float_values(*alu.SMALL_FLOATS[(family, kind)])
    for i in range(count):
        field = (bits >> np.uint32(width * i)) & mask
        if kind == "f16":
            out.append(field.astype(np.uint16).view(np.float16).astype(np.float64))
        elif kind == "bf16":
            out.append(alu.bf16_to_f64(field))
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
        acc = alu.bf16_to_f64(acc) if bf16 else acc.astype(np.float64)
        total = acc + xs[0] * ys[0] + xs[1] * ys[1]
        return alu.round_to_bf16(total) if bf16 else np.asarray(total).astype(np.float16)
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
    fma = alu._fma(np.float16)

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
    register pair); the 8-bit format is the target's (alu.SMALL_FLOATS). gfx9 picks the byte or
    word with the SDWA select, gfx12 the byte with byte_sel (op_sel) and the word with op_sel[0]."""
    kind = "bf8" if inst.name.endswith("bf8") else "fp8"
    table = alu.small_float_values(*alu.SMALL_FLOATS[(inst.family if inst.family != "gfx11"
                                                      else "gfx12", kind)]).astype(np.float32)
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
    exp_bits, man_bits, bias, special = alu.SMALL_FLOATS[("gfx9", kind)]
    grid = alu.small_float_values(exp_bits, man_bits, bias, special)[:128]   # 0x00 .. 0x7F
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
                halves.append(np.asarray(fn(*args), np.float32))
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


__all__ = ["compile_instruction", "NotImplementedInstruction", "WaveSizeMismatch", "END",
           "BARRIER", "SPLIT", "MODE_CHANGED", "unpack_mask"]
