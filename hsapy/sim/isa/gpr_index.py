"""GPR index mode (gfx9: gfx90a, gfx940-gfx942): VALU operands relative to an index in M0.

CDNA3 ISA guide, section 6.6 "VGPR Indexing" (the CDNA2 guide has the same section), and the
instruction descriptions of S_SET_GPR_IDX_ON/_OFF/_IDX/_MODE (sections 12.1, 12.3-12.5):

- MODE.GPR_IDX_EN (bit 27; section 3.5, "Mode register") turns the mode on. S_SET_GPR_IDX_ON
  sets it and writes M0[7:0] = S0[7:0] (the index) and M0[15:12] = SIMM4 (the raw SSRC1 field's
  low four bits: which operands are indexed), leaving the other M0 bits; S_SET_GPR_IDX_OFF
  clears the bit (M0 unchanged); S_SET_GPR_IDX_IDX writes M0[7:0]; S_SET_GPR_IDX_MODE writes
  M0[15:12] = SIMM16[3:0]. S_GETREG/S_SETREG of MODE read and write the bit like any other.
- While the mode is on, the unsigned index M0[7:0] is added to the register number of every
  VGPR operand of a VALU instruction whose enable bit is set: M0[12] the first source, M0[13]
  the second, M0[14] the third, M0[15] the destination. Inline constants, literals and SGPRs
  are never indexed (6.6.1).
- Operands that are both read and written follow the field they are encoded in (6.6.2): the
  destination bit also moves the accumulator that V_MAC/V_FMAC read from their destination and
  the old destination bits an SDWA UNUSED_PRESERVE write keeps; V_MADMK/V_FMAMK's VGPR second
  source (LLVM's third operand, after the K literal) is indexed by the third-source bit, the
  V_*REV shifts by the encoded position. hsapy's operands are in LLVM's order, which is the
  encoded order for all of these, so "source k" is ``srcs[k]`` and the destination ``dsts[0]``.
- An index that takes an operand past the wave's VGPRs is illegal (6.6.1: "It is illegal for
  the index attempt to address VGPRs that are out of range"); section 3.6.1 describes what the
  hardware then does (v0 read, write dropped), but the simulator's register count per wave is
  not the hardware's allocation granule, so it stops the queue naming the instruction instead.

What the guide leaves open stops the queue (only when the index actually moves such an operand,
that is an enabled bit and a non-zero index): AGPR operands (6.6.1 speaks of VGPRs; whether
AccVGPRs are indexed is not said), matrix instructions, V_SWAP_B32 (its source field is also
written), and VGPR operands past the third source or the first destination.

How the interpreter runs it: the MODE value is part of what a program is compiled for
(``ProgramInfo.mode``), so a wave turns the mode on or off by continuing in another program
(``MODE_CHANGED``). In a program compiled with GPR_IDX_EN set, every VALU instruction compiles
through :func:`compile_indexed`: at run time it reads each wave's M0, and runs the instruction
compiled with its operands moved by that wave's index (compiled once per distinct set of
offsets). Waves of one batch whose M0 differ run the instruction on copies of their state, one
group at a time, and the results are written back.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from hsapy.hsa_enums import HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION
from hsapy.sim.execution import SimFault
from hsapy.sim.isa.instruction import Instruction, Operand
from hsapy.sim.isa.operand_access import scalar_reader
from hsapy.sim.isa.wave import Batch

__all__ = ["GPR_IDX_EN", "VALU_ENCODINGS", "enabled", "compile_indexed", "compile_control"]

GPR_IDX_EN = 1 << 27            # MODE.GPR_IDX_EN (CDNA3 ISA guide, 3.5 "Mode register")
M0 = 124                        # M0's operand code on gfx9
ENABLE_SHIFT = 12               # M0[15:12]: src0, src1, src2, dst enables
DST_BIT = 3
VALU_ENCODINGS = frozenset({"VOP1", "VOP2", "VOPC", "VOP3", "VOP3SD", "VOP3P"})

Closure = Callable[[Batch, Any], "int | None"]


def enabled(info: Any) -> bool:
    """Whether ``info`` (a ProgramInfo) is for a gfx9 program with GPR index mode on."""
    mode = getattr(info, "mode", None)
    return info.family == "gfx9" and mode is not None and bool(mode.value & GPR_IDX_EN)


class _Slot:
    """One register operand the mode may move: where it is, which M0 bit enables it, and why
    moving it is refused ("" when it is not)."""

    __slots__ = ("where", "position", "op", "bit", "refused")

    def __init__(self, where: str, position: int, op: Operand, bit: int, refused: str) -> None:
        self.where = where
        self.position = position
        self.op = op
        self.bit = bit
        self.refused = refused


def _slots(inst: Instruction) -> list[_Slot]:
    name = inst.name
    whole = ""
    if name.startswith(("v_mfma", "v_smfmac")):
        whole = "GPR index mode on a matrix instruction (not described by the CDNA3 ISA guide)"
    elif name == "v_swap_b32":
        whole = ("GPR index mode on v_swap_b32, whose source register is also written (not "
                 "described by the CDNA3 ISA guide)")
    slots = []
    for where, ops in (("srcs", inst.srcs), ("dsts", inst.dsts)):
        for k, op in enumerate(ops):
            if op.kind not in ("vgpr", "agpr"):
                continue
            bit = DST_BIT if where == "dsts" else k
            refused = whole
            if (where == "dsts" and k > 0) or k > 2:
                bit, refused = -1, (f"GPR index mode with a VGPR as operand {k + 1} of the "
                                    f"{where[:-1]}s (no M0 enable bit covers it)")
            elif op.kind == "agpr" and not refused:
                refused = ("GPR index mode on an AGPR operand (the CDNA3 ISA guide describes "
                           "VGPR indexing only)")
            slots.append(_Slot(where, k, op, bit, refused))
    return slots


def _moved(inst: Instruction, slots: list[_Slot], offsets: tuple[int, ...]) -> Instruction:
    """``inst`` with each slot's register number increased by its offset."""
    lists = {"srcs": list(inst.srcs), "dsts": list(inst.dsts)}
    for slot, off in zip(slots, offsets):
        if off:
            lists[slot.where][slot.position] = replace(slot.op, index=slot.op.index + off)
    return replace(inst, srcs=tuple(lists["srcs"]), dsts=tuple(lists["dsts"]))


def compile_indexed(inst: Instruction, info: Any,
                    compile_plain: Callable[[Instruction, Any], Closure]) -> Closure:
    """The closure of VALU instruction ``inst`` in a program with GPR index mode on;
    ``compile_plain`` compiles an instruction (with its operands already moved) as usual."""
    plain = compile_plain(inst, info)
    slots = _slots(inst)
    if not slots or getattr(plain, "unimplemented", None):
        return plain
    from hsapy.sim.isa.closures import NotImplementedInstruction

    bits = np.array([max(slot.bit, 0) for slot in slots], np.uint32)
    covered = np.array([slot.bit >= 0 for slot in slots])
    variants: dict[tuple[int, ...], Closure] = {(0,) * len(slots): plain}
    text = inst.text()

    def variant(offsets: tuple[int, ...], rows: int) -> Closure:
        for slot, off in zip(slots, offsets):
            if not off:
                continue
            if slot.refused:
                raise NotImplementedInstruction(f"{text} ({slot.refused}; index {off})")
            op = slot.op
            if op.index + off + op.count > rows:
                raise SimFault(
                    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                    f"{text} at {inst.offset:#x}: GPR index mode (M0 index {off}) moves "
                    f"v{op.index} to v{op.index + off}, past the {rows} VGPRs of the wave; the "
                    "CDNA3 ISA guide (6.6.1, VGPR Indexing) makes an index out of range illegal",
                    inst.offset)
        fn = variants.get(offsets)
        if fn is not None:
            return fn
        fn = compile_plain(_moved(inst, slots, offsets), info)
        if getattr(fn, "unimplemented", None):
            raise NotImplementedInstruction(f"{text} in GPR index mode ({fn.unimplemented})")
        variants[offsets] = fn
        return fn

    def offsets_of(b: Batch) -> np.ndarray:
        m0 = b.S[:, M0]
        index = (m0 & np.uint32(0xFF)).astype(np.int64)
        on = (m0[:, None] >> (bits + np.uint32(ENABLE_SHIFT))) & np.uint32(1)
        # an operand no enable bit covers moves whenever any operand is enabled
        on = np.where(covered, on, ((m0 >> np.uint32(ENABLE_SHIFT)) & np.uint32(0xF) != 0)[:, None])
        return index[:, None] * on.astype(np.int64)

    def run(b: Batch, m: Any) -> int | None:
        offs = offsets_of(b)
        rows = b.V.shape[0]
        first = offs[0]
        if (offs == first).all():
            return variant(tuple(int(x) for x in first), rows)(b, m)
        # the waves' M0 differ: each group of waves with the same offsets runs on a copy of its
        # state, which is then written back (VALU instructions touch no memory)
        keys, group = np.unique(offs, axis=0, return_inverse=True)
        group = group.reshape(-1)
        fns = [variant(tuple(int(x) for x in key), rows) for key in keys]
        S, V, A = b.S, b.V, b.A
        exec_mask, scc = b.exec.copy(), b.scc.copy()
        for g, fn in enumerate(fns):
            sel = group == g
            part = b.take(sel, b.pc)
            if fn(part, m) is not None:
                raise NotImplementedInstruction(f"{text}: a branch in GPR index mode")
            S[sel] = part.S
            V[:, sel] = part.V
            if A is not None:
                A[:, sel] = part.A
            exec_mask[sel] = part.exec
            scc[sel] = part.scc
        b.scc = scc
        b.set_exec(exec_mask)
        return None
    return run


def compile_control(inst: Instruction, info: Any) -> Closure:
    """S_SET_GPR_IDX_ON / _OFF / _IDX / _MODE (module docstring)."""
    from hsapy.sim.isa.closures import MODE_CHANGED

    name = inst.name
    keep = {"s_set_gpr_idx_on": 0xFFFF0F00, "s_set_gpr_idx_idx": 0xFFFFFF00,
            "s_set_gpr_idx_mode": 0xFFFF0FFF}.get(name)
    if name == "s_set_gpr_idx_off":
        def off(b: Batch, m: Any) -> int | None:
            if not b.mode & GPR_IDX_EN:
                return None
            b.mode &= ~GPR_IDX_EN
            return MODE_CHANGED
        return off
    if keep is None:
        raise ValueError(f"{name} is not a GPR index mode instruction")
    keep_bits = np.uint32(keep)
    if name == "s_set_gpr_idx_mode":
        enables = np.uint32((int(inst.srcs[0].value) & 0xF) << ENABLE_SHIFT)

        def set_mode(b: Batch, m: Any) -> None:
            b.S[:, M0] = (b.S[:, M0] & keep_bits) | enables
        return set_mode
    read = scalar_reader(inst.srcs[0], "u32")
    enables = np.uint32((int(inst.srcs[1].value) & 0xF) << ENABLE_SHIFT) \
        if name == "s_set_gpr_idx_on" else np.uint32(0)
    turn_on = name == "s_set_gpr_idx_on"

    def set_index(b: Batch, m: Any) -> int | None:
        low = np.asarray(read(b)).astype(np.uint32) & np.uint32(0xFF)
        b.S[:, M0] = (b.S[:, M0] & keep_bits) | enables | low
        if not turn_on or b.mode & GPR_IDX_EN:
            return None
        b.mode |= GPR_IDX_EN
        return MODE_CHANGED
    return set_index
