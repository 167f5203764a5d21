"""Compile decoded instructions into closures that run on a :class:`~hsapy.sim.isa.wave.Batch`.

``compile_instruction(inst, machine_info)`` returns ``fn(batch, machine) -> None | int``: None
means "next instruction", a non-negative int is the byte address to continue at, a negative int
one of :data:`END`, :data:`BARRIER`, :data:`SPLIT` (the batch went both ways at a branch, or its
waves jumped to different addresses, and the machine now holds the parts),
:data:`MODE_CHANGED` (the batch's MODE register changed: it continues at the next instruction
in the program compiled for the new value) or :data:`SLEEP` (``s_sleep``: the batch continues at
the next instruction once the other runnable batches have had a turn). An instruction the
interpreter does not implement compiles to a closure that raises
:class:`NotImplementedInstruction` when (and only when) it is reached; wave64 code in a wave32
wave raises :class:`~hsapy.sim.isa.wave.WaveSizeMismatch` when it sets EXEC bits 32-63.

Float instructions are compiled for the MODE value in ``machine_info.mode``
(``hsapy.sim.isa.float_mode``): a rounding direction other than round-to-nearest-even uses the
instruction's directed semantics, or compiles to a closure that stops naming the mode.

This module is the dispatch by encoding. Scalar instructions (program flow and the scalar ALU)
are compiled in ``semantics_scalar.py``; vector ALU instructions in ``semantics_valu.py`` (its
operand extensions in ``semantics_valu_operands.py``, the instructions with handlers of their own
in ``semantics_valu_special.py``); ALU semantics are tables in ``semantics_alu.py``; memory
instructions are in ``semantics_mem.py`` and the modules it names; matrix instructions (MFMA,
WMMA and their sparse forms) in ``semantics_matrix.py``.
"""
from __future__ import annotations

from typing import Any

from hsapy.hsa_enums import HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION
from hsapy.sim.execution import SimFault
from hsapy.sim.isa import float_mode, gpr_index

# the closure vocabulary lives below every instruction family; semantics.py re-exports it
from hsapy.sim.isa.closures import (  # noqa: F401
    BARRIER,
    END,
    MODE_CHANGED,
    SLEEP,
    SPLIT,
    Closure,
    NotImplementedInstruction,
)
from hsapy.sim.isa.closures import unimplemented as _unimplemented
from hsapy.sim.isa.instruction import Instruction
from hsapy.sim.isa.operand_access import NotImplementedOperand
from hsapy.sim.isa.semantics_scalar import _salu, _sopp
from hsapy.sim.isa.semantics_valu import _valu, _vopd
from hsapy.sim.isa.wave import Batch, WaveSizeMismatch, unpack_mask

NO_OPS = {
    "s_nop", "s_waitcnt", "s_waitcnt_vscnt", "s_waitcnt_vmcnt", "s_waitcnt_expcnt",
    "s_waitcnt_lgkmcnt", "s_wait_loadcnt", "s_wait_storecnt", "s_wait_dscnt", "s_wait_kmcnt",
    "s_wait_samplecnt", "s_wait_bvhcnt", "s_wait_expcnt", "s_wait_alu", "s_wait_idle",
    "s_wait_loadcnt_dscnt", "s_wait_storecnt_dscnt", "s_delay_alu", "s_clause", "s_setprio",
    "s_code_end", "s_icache_inv", "s_dcache_inv", "s_dcache_wb", "s_dcache_inv_vol",
    "s_dcache_wb_vol", "s_inst_prefetch", "s_set_inst_prefetch_distance", "s_barrier_signal",
    "s_barrier_signal_isfirst", "s_ttracedata", "s_ttracedata_imm", "s_singleuse_vdst",
    "buffer_wbl2", "buffer_inv", "buffer_gl0_inv", "buffer_gl1_inv", "buffer_wbinvl1",
    "buffer_wbinvl1_vol", "global_wb", "global_inv", "global_wbinv", "s_prefetch_inst",
    "s_prefetch_data", "s_nop_e",
    "s_waitcnt_depctr", "s_wait_event",
    # performance-level hints and the wake-up of s_sleep'ing waves change no state the
    # simulator keeps; v_clrexcp clears exception bits it does not model
    "s_incperflevel", "s_decperflevel", "s_wakeup", "v_nop", "v_pipeflush", "v_clrexcp",
    "s_gl1_inv",
}
# A wave that sleeps lets the others of its SIMD issue (CDNA3 ISA, S_SLEEP; RDNA4 ISA,
# S_SLEEP_VAR): the batch gives up its turn, so a spin loop that sleeps hands over at once.
SLEEP_INSTRUCTIONS = frozenset({"s_sleep", "s_sleep_var"})


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
    if name in SLEEP_INSTRUCTIONS:
        return lambda b, m: SLEEP
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


__all__ = ["compile_instruction", "NotImplementedInstruction", "WaveSizeMismatch", "END",
           "BARRIER", "SPLIT", "MODE_CHANGED", "SLEEP", "unpack_mask"]
