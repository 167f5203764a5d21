"""How a VALU instruction reads and writes its operands through its encoding's extensions:
DPP16 / DPP8 lane movement (with the row and bank masks of the commit), SDWA selects of
sources and destination, op_sel halves, the VOP3 clamp/omod output modifiers (and which integer
ops saturate under clamp), and the table semantics a kernel's IEEE mode selects.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hsapy.sim.isa import alu_float
from hsapy.sim.isa import semantics_alu as alu
from hsapy.sim.isa.instruction import Instruction, Operand
from hsapy.sim.isa.operand_access import (
    WIDTH,
    NotImplementedOperand,
    sdwa_reader,
    sdwa_writer,
    vector_reader,
    vector_writer,
)
from hsapy.sim.isa.wave import Batch


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


def _valu_spec(name: str, info: Any) -> alu.Spec:
    """The semantics of ``name`` for this kernel: gfx9 min/max in IEEE mode (the kernel
    descriptor's IEEE_MODE, set for compute kernels) quiet a signaling NaN operand."""
    spec = alu.VALU[name]
    if info.family == "gfx9" and name in alu_float.IEEE_MODE_OPS and getattr(info, "ieee", True):
        return spec[0], spec[1], alu_float.IEEE_MODE_OPS[name]
    return spec


def _op_sel(inst: Instruction, position: int) -> int:
    return (int(inst.fields.get("op_sel", 0)) >> position) & 1


_INT_RANGE = {"u32": (0, 0xFFFFFFFF), "i32": (-2 ** 31, 2 ** 31 - 1), "u16": (0, 0xFFFF),
              "i16": (-2 ** 15, 2 ** 15 - 1)}


def _saturating(name: str) -> bool:
    """Integer ops whose VOP3 clamp bit saturates: adds, subtracts and multiply-adds (ISA "clamp"
    for V_ADD_U32, V_SUB_U32, V_ADD_I32, V_ADD_U16, V_ADD_NC_*, V_SUB_NC_*, V_MAD_U16, ...)."""
    op = name.replace("v_dual_", "v_").split("_")[1]
    return op in ("add", "sub", "subrev", "mad")
