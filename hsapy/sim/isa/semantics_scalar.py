"""Scalar instructions: program flow (SOPP branches, s_endpgm, barriers, traps) and the scalar
ALU (SOP1/SOP2/SOPK/SOPC: table-driven ops from semantics_alu.py, relative moves, indirect
jumps, S_SETREG of MODE, clocks and hardware registers, saveexec).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hsapy.hsa_enums import HSA_STATUS_ERROR_EXCEPTION
from hsapy.sim.execution import SimFault
from hsapy.sim.isa import alu_bits, alu_scalar, float_mode, gpr_index, placement
from hsapy.sim.isa import semantics_alu as alu
from hsapy.sim.isa.closures import (
    BARRIER,
    END,
    MODE_CHANGED,
    SPLIT,
    Closure,
    NotImplementedInstruction,
)
from hsapy.sim.isa.closures import unimplemented as _unimplemented
from hsapy.sim.isa.instruction import Instruction, Operand
from hsapy.sim.isa.operand_access import WIDTH, NotImplementedOperand, scalar_reader, scalar_writer
from hsapy.sim.isa.wave import Batch

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
    if name == "s_sendmsg":
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
    if name in ("s_sethalt", "s_setkill"):
        return _halt_or_kill(inst)
    if name == "s_sendmsghalt":
        return _send_message_and_halt(inst)
    return _unimplemented(inst)


def _halt_or_kill(inst: Instruction) -> Closure:
    """S_SETHALT / S_SETKILL with SIMM16[0] = 0 clear the wave's HALT / KILL bit: nothing to do.
    With 1 the wave stops until a debugger or the driver resumes or removes it (CDNA3 and RDNA4
    guides, "SOPP Instructions"): on hardware the dispatch does not complete. The simulator has
    neither, so the queue stops naming the instruction instead of ending the wave as if it had
    reached S_ENDPGM."""
    if not (int(inst.srcs[0].value) & 1 if inst.srcs else 0):
        return lambda b, m: None
    why = ("the wave is killed, as the driver's kill-wave command does" if inst.name == "s_setkill"
           else "the wave halts until a debugger resumes it")
    text = inst.text()

    def stop(b: Batch, m: Any) -> None:
        raise NotImplementedInstruction(f"{text} ({why}; the simulator has no debugger)")
    return stop


def _send_message_and_halt(inst: Instruction) -> Closure:
    """S_SENDMSGHALT: "send a message and then HALT the wavefront" (CDNA3 and RDNA4 guides, "SOPP
    Instructions"). The message has no effect here, as for S_SENDMSG; the halt is S_SETHALT 1's,
    so the queue stops naming the instruction."""
    text = inst.text()

    def stop(b: Batch, m: Any) -> None:
        raise NotImplementedInstruction(f"{text} (the wave halts after sending its message, until "
                                        "a debugger resumes it; the simulator has no debugger)")
    return stop


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
    spec = alu_scalar.saveexec_spec(name)
    if spec is not None:
        return _saveexec(inst, spec, info)
    cmp = alu_scalar.scalar_compare_spec(name)
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
            b.scc = np.broadcast_to(alu_bits._signed_overflow_add(a, value), (b.waves,)).copy()
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
    if name in alu_scalar.SALU:
        dst_ty, src_tys, fn, scc_rule = alu_scalar.SALU[name]
        if fn is None:
            return _unimplemented(inst)
        fn = _in_mode(name, dst_ty, fn, info)
        srcs = list(inst.srcs)
        if name in ("s_fmac_f32", "s_fmac_f16"):
            srcs = srcs + [inst.dsts[0]]
        readers = [scalar_reader(op, ty) for op, ty in zip(srcs, src_tys)]
        write = scalar_writer(inst.dsts[0], dst_ty)
        # gfx12's SALU float instructions run under the MODE register's denormal controls as
        # VALU ones do (RDNA4 ISA guide, "SALU floating point"; LLVM selects them for uniform
        # float math whatever the function's denormal mode): with denormals flushed, flush the
        # inputs of the result's type and the result, as the VALU forms do
        ftz = info.ftz32 if dst_ty == "f32" else info.ftz64 if dst_ty == "f16" else False
        if ftz:
            fn = _flushing(fn, np.dtype(np.float32 if dst_ty == "f32" else np.float16))

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


def _flushing(fn: Callable, dtype: np.dtype) -> Callable:
    """``fn`` with denormals of ``dtype`` flushed to zero (sign kept) in its arguments of that
    type and in its result."""
    tiny = np.finfo(dtype).tiny

    def flush(x):
        return np.where(np.abs(x) < tiny, np.copysign(np.zeros((), x.dtype), x), x)

    def flushed(*args):
        args = [flush(np.asarray(a)) if np.asarray(a).dtype == dtype else a for a in args]
        return flush(np.asarray(fn(*args)))
    return flushed


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
    limit = alu_scalar.SGPR_COUNT[info.family]

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


# gfx12 HW_REG_SHADER_CYCLES_LO / _HI (SIDefines.h Hwreg::ID_SHADER_CYCLES / _HI)
_SHADER_CYCLES = (29, 30)


def _clock_or_hwreg(inst: Instruction, info: Any) -> Closure:
    name = inst.name
    if name == "s_getreg_b32":
        return _getreg(inst, info)
    write = scalar_writer(inst.dsts[0], "b64")
    return lambda b, m: write(b, np.uint64(m.clock.now()))


def _getreg(inst: Instruction, info: Any) -> Closure:
    """S_GETREG_B32 hwreg(id, offset, size): the register's bits offset + size - 1 : offset.
    MODE reads the wave's MODE register, gfx12's SHADER_CYCLES the clock, the hardware-id
    registers the simulator's placement of the wave (hsapy.sim.isa.placement); any other
    register, or a bit of an id register outside the fields the placement defines, stops the
    queue naming it."""
    write = scalar_writer(inst.dsts[0], "b32")
    # simm16: hwreg id 5:0, bit offset 10:6, size - 1 15:11
    simm = int(inst.srcs[0].value) if inst.srcs and inst.srcs[0].value is not None \
        else int(inst.fields.get("simm16", 0))
    hwreg = simm & 0x3F
    offset = (simm >> 6) & 0x1F
    mask = (1 << (((simm >> 11) & 0x1F) + 1)) - 1
    if hwreg == float_mode.MODE_HWREG:
        return lambda b, m: write(b, np.uint32((b.mode >> offset) & mask))
    if info.family == "gfx12" and hwreg in _SHADER_CYCLES:
        def cycles(b: Batch, m: Any) -> None:
            now = m.clock.now()
            value = (now >> 32) if hwreg == _SHADER_CYCLES[1] else now & 0xFFFFFFFF
            write(b, np.uint32((value >> offset) & mask))
        return cycles
    layout = placement.LAYOUTS.get((info.family, hwreg))
    if layout is None:
        return _unimplemented(inst, f"reading hardware register {hwreg} is not modelled on "
                                    f"{info.family}")
    outside = ((mask << offset) & 0xFFFFFFFF) & ~layout.modelled_bits
    if outside:
        return _unimplemented(inst, f"bits {outside:#x} of {layout.name} are not modelled "
                                    f"(only {', '.join(layout.fields)})")
    umask = np.uint32(mask)
    shift = np.uint32(offset)

    def getreg(b: Batch, m: Any) -> None:
        write(b, (m.hardware_register(b, hwreg) >> shift) & umask)
    return getreg


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
