"""Vector memory instructions of the GLOBAL, FLAT and SCRATCH encodings: loads, stores,
atomics and the loads into LDS.

Flat addresses in the shared / private apertures (hsapy.sim.queues) go to LDS / scratch, lane
by lane; the rest go to global memory.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hsapy.sim.isa.instruction import Instruction
from hsapy.sim.isa.memory_access import (
    _check_private,
    _extend,
    _lane_ids,
    _lane_values,
    _lane_wg,
    _serial_rmw,
    _store_lanes,
    _width_of,
    atomic_operation,
    atomic_types,
    dword_elements,
    gather_bytes,
    gather_dwords,
    global_atomic,
    global_rmw,
    lds_load,
    lds_store,
    scatter_bytes,
    scatter_dwords,
    scratch_load,
    scratch_store,
)
from hsapy.sim.isa.operand_access import NotImplementedOperand, scalar_reader, vector_reader
from hsapy.sim.isa.wave import Batch

u32, u64 = np.uint32, np.uint64


ADDRESS_MASK = (1 << 64) - 1

# gfx12 opcodes whose data movement no public source consulted defines lane by lane: the RDNA4
# ISA guide names them (its VGLOBAL/VSCRATCH opcode tables) and LLVM 19 assembles them, but
# neither the guide's text nor LLVM's docs and tests say which lane receives which element of a
# transposing load, or where in memory a block transfer puts each lane's dword of each register.
# Reaching one stops the queue rather than guess.
_TRANSPOSE = ("transposing load for WMMA operands: no public source consulted defines which lane "
              "receives which matrix element, so the simulator does not guess")
_BLOCK = ("block transfer of the VGPRs that M0 selects: no public source consulted defines the "
          "memory layout of the registers, so the simulator does not guess")
UNDEFINED_MOVEMENT = {
    "global_load_tr_b64": _TRANSPOSE, "global_load_tr_b128": _TRANSPOSE,
    "global_load_block": _BLOCK, "global_store_block": _BLOCK,
    "scratch_load_block": _BLOCK, "scratch_store_block": _BLOCK,
}


# --- global / flat / scratch ---------------------------------------------------------------------


def _vmem(inst: Instruction, info: Any):
    name = inst.name
    if name in UNDEFINED_MOVEMENT:
        raise NotImplementedOperand(UNDEFINED_MOVEMENT[name])
    enc = inst.encoding
    srcs = list(inst.srcs)
    offset = int(srcs[-1].value) if srcs and srcs[-1].kind == "imm" else 0
    regs = [op for op in srcs if op.kind != "imm"]
    if "_addtid_" in name:
        return _global_addtid(inst, regs, offset)
    # address parts
    if enc == "SCRATCH":
        return _scratch(inst, info, *scratch_operands(inst))
    addr_op = regs[0]
    saddr_op = next((op for op in regs[1:] if op.kind in ("sgpr", "special", "ttmp")), None)
    data_regs = [op for op in regs[1:] if op is not saddr_op]
    if saddr_op is not None:
        vofs = vector_reader(addr_op, "u32")
        sbase = scalar_reader(saddr_op, "b64")

        def address(b: Batch) -> np.ndarray:
            base = np.asarray(sbase(b)).astype(u64)[:, None]
            return base + np.asarray(vofs(b)).astype(u64) + u64(offset & ADDRESS_MASK)
    else:
        vaddr64 = vector_reader(addr_op, "u64")

        def address(b: Batch) -> np.ndarray:
            return np.asarray(vaddr64(b)) + u64(offset & ADDRESS_MASK)
    flat = enc == "FLAT"
    if "_load_lds_" in name:
        return _global_load_lds(inst, address, offset)
    if "_atomic_" in name:
        return _global_atomic(inst, address, data_regs, flat)
    if "_load_" in name or name.endswith("_load"):
        return _global_load(inst, address, flat)
    if "_store_" in name:
        return _global_store(inst, address, data_regs[0], flat)
    raise NotImplementedOperand(name)


def scratch_operands(inst: Instruction) -> tuple:
    """(VGPR offset operand or None, SGPR offset operand or None, data operands, instruction
    offset) of a SCRATCH instruction: the private offset is their sum."""
    srcs = list(inst.srcs)
    offset = int(srcs[-1].value) if srcs and srcs[-1].kind == "imm" else 0
    regs = [op for op in srcs if op.kind != "imm"]
    family = inst.family
    vaddr = regs[0] if regs and inst.fields.get("sve", 0 if family != "gfx9" else 1) \
        and regs[0].kind == "vgpr" and _has_vaddr(inst) else None
    saddr_op = next((op for op in regs if op.kind in ("sgpr", "special", "ttmp")), None)
    data_regs = [op for op in regs if op is not vaddr and op is not saddr_op]
    return vaddr, saddr_op, data_regs, offset


def _global_addtid(inst: Instruction, regs: list, offset: int):
    """GLOBAL_LOAD_ADDTID_B32 / GLOBAL_STORE_ADDTID_B32 (gfx12): the dword at SADDR + offset +
    4 * lane id; no address VGPR (RDNA4 guide, "Global" instructions)."""
    saddr = next((op for op in regs if op.kind in ("sgpr", "special", "ttmp")), None)
    if saddr is None:
        raise NotImplementedOperand(f"{inst.name} without an SGPR base")
    base = scalar_reader(saddr, "b64")

    def address(b: Batch) -> np.ndarray:
        lanes = np.arange(b.lanes, dtype=u64)[None, :] * u64(4)
        start = np.broadcast_to(np.asarray(base(b)).astype(u64), (b.waves,))
        return start[:, None] + u64(offset & ADDRESS_MASK) + lanes

    if inst.dsts:
        row = inst.dsts[0].index

        def load(b: Batch, m: Any) -> None:
            addrs, mask = _active_addresses(b, address)
            _store_lanes(b, b.V, row, gather_dwords(m, addrs, 1), mask)
        return load
    data = next(op for op in regs if op.kind == "vgpr")

    def store(b: Batch, m: Any) -> None:
        addrs, mask = _active_addresses(b, address)
        scatter_dwords(m, addrs, _lane_values(b, b.V, data.index, 1, mask))
    return store


# Loads into LDS (gfx940 GLOBAL_/SCRATCH_LOAD_LDS_*): (bytes, sign-extended) per mnemonic tail
_LDS_DMA_WIDTHS = {"ubyte": (1, False), "sbyte": (1, True), "ushort": (2, False),
                   "sshort": (2, True), "dword": (4, False)}


def _lds_dma_width(name: str) -> tuple[int, bool]:
    tail = name.rsplit("_", 1)[-1]
    if tail not in _LDS_DMA_WIDTHS:
        raise NotImplementedOperand(f"memory width of {name}")
    return _LDS_DMA_WIDTHS[tail]


def _lds_dma_store(b: Batch, m: Any, mask, offset: int, values: np.ndarray) -> None:
    """Write each active lane's returned dword to LDS at M0[17:2] * 4 + instruction offset +
    4 * lane id (CDNA3 ISA guide 10.3, "Addressing": instructions that return data to LDS,
    DWORDX1; LLVM's AMDGPU DMA documentation: "offset applied to both" addresses, the LDS
    address advances 4 bytes per lane for sizes up to 4 bytes). Addresses outside the
    workgroup's LDS drop the write (3.6.1, LDS out-of-range writes are discarded)."""
    lanes = np.broadcast_to(np.arange(b.lanes, dtype=np.int64), b.exec.shape)
    m0 = np.broadcast_to((b.S[:, 124].astype(np.int64) & 0x3FFFC)[:, None], b.exec.shape)
    lds_addr = m0 + offset + 4 * lanes
    lds_addr = lds_addr.reshape(-1) if mask is None else lds_addr[mask]
    lds_store(m, _lane_wg(b, mask), lds_addr, values.reshape(-1, 1), 4)


def _widened(raw: np.ndarray, size: int, signed: bool) -> np.ndarray:
    """The ``size`` low bytes of ``uint32[n]`` values zero- or sign-extended to 32 bits."""
    if size == 4:
        return raw.astype(u32)
    bits = 8 * size
    value = raw.astype(np.int64) & ((1 << bits) - 1)
    if signed:
        value = value - ((value >> (bits - 1)) << bits)
    return (value & 0xFFFFFFFF).astype(u32)


def _global_load_lds(inst: Instruction, address: Callable, offset: int):
    """GLOBAL_LOAD_LDS_{UBYTE,SBYTE,USHORT,SSHORT,DWORD} (gfx940): each lane's data goes to LDS
    (:func:`_lds_dma_store`) instead of a VGPR. The LDS return path is a dword per lane
    (DWORDX1 addressing), so the byte and short forms write the dword their VGPR forms would
    return, zero- or sign-extended: the only difference between the unsigned and signed
    opcodes. (An exhaustive hardware test in AMD's rocRoller, "Direct2LDS tile copy", reads
    such byte and short loads back as dwords whose upper bytes are zero.)"""
    size, signed = _lds_dma_width(inst.name)

    def load(b: Batch, m: Any) -> None:
        addrs, mask = _active_addresses(b, address)
        if size == 4:
            values = gather_dwords(m, addrs, 1)[:, 0]
        else:
            raw = gather_bytes(m, addrs, size)
            values = raw.view(np.uint8 if size == 1 else np.uint16).reshape(-1).astype(u32)
        _lds_dma_store(b, m, mask, offset, _widened(values, size, signed))
    return load


def _has_vaddr(inst: Instruction) -> bool:
    return bool(inst.fields.get("sve", 0)) or (inst.family == "gfx9" and
                                                inst.fields.get("saddr") == 0x7F)


def _active_addresses(b: Batch, address: Callable) -> tuple[np.ndarray, np.ndarray | None]:
    addrs = np.broadcast_to(address(b), b.exec.shape)
    if b.exec_all:
        return addrs.reshape(-1), None
    return addrs[b.exec], b.exec


def _split_apertures(m: Any, addrs: np.ndarray):
    """For flat instructions: (is_lds, is_private) lane masks, or None when all are global."""
    top = addrs >> u64(32)
    lds = top == u64(m.shared_base >> 32)
    private = top == u64(m.private_base >> 32)
    if not lds.any() and not private.any():
        return None
    return lds, private


def _global_load(inst: Instruction, address: Callable, flat: bool):
    size, kind, hi = _width_of(inst.name)
    dst = inst.dsts[0]
    row = dst.index
    ndw = max(1, size // 4)
    agpr = dst.kind == "agpr"

    def load(b: Batch, m: Any) -> None:
        addrs, mask = _active_addresses(b, address)
        regs = b.A if agpr else b.V
        if flat:
            split = _split_apertures(m, addrs)
            if split is not None:
                _flat_other_load(b, m, addrs, mask, split, size, kind, hi, regs, row)
                return
        if kind == "d":
            words = gather_dwords(m, addrs, ndw)
            _store_lanes(b, regs, row, words, mask)
        else:
            raw = gather_bytes(m, addrs, size)
            _store_lanes(b, regs, row, _extend(raw, size, kind, hi, regs[row], mask, b), mask)
    return load


def _global_store(inst: Instruction, address: Callable, data, flat: bool):
    size, kind, hi = _width_of(inst.name)
    ndw = max(1, size // 4)
    row = data.index
    agpr = data.kind == "agpr"

    def store(b: Batch, m: Any) -> None:
        addrs, mask = _active_addresses(b, address)
        regs = b.A if agpr else b.V
        values = _lane_values(b, regs, row, ndw, mask)
        if flat:
            split = _split_apertures(m, addrs)
            if split is not None:
                _flat_other_store(b, m, addrs, mask, split, size, hi, values)
                return
        if kind == "d":
            scatter_dwords(m, addrs, values)
        else:
            word = values[:, 0] >> u32(16) if hi else values[:, 0]
            scatter_bytes(m, addrs, word, size)
    return store


def _global_atomic(inst: Instruction, address: Callable, data_regs: list, flat: bool):
    op, kind, fn, size = atomic_operation(inst.name)
    data = data_regs[0]
    returns = bool(inst.dsts)
    dst_row = inst.dsts[0].index if returns else 0
    cmpswap = kind == "c"
    ndw = size // 4
    utype, dtype = atomic_types(kind, size)

    def atomic(b: Batch, m: Any) -> None:
        addrs, mask = _active_addresses(b, address)
        words = _lane_values(b, b.V, data.index, data.count, mask)
        values = dword_elements(words[:, :ndw], utype, dtype)
        cmp = None
        if cmpswap:
            cmp = dword_elements(words[:, ndw:2 * ndw], utype, dtype)
        read, write = global_rmw(m, ndw, utype, dtype)
        split = _split_apertures(m, addrs) if flat else None
        if split is not None:
            old = _flat_other_atomic(b, m, addrs, mask, split, values, cmp, fn, size, dtype,
                                     read, write)
        else:
            old = global_atomic(read, write, addrs, values, fn, cmp)
        if returns:
            out = np.ascontiguousarray(old).view(u32).reshape(-1, ndw)
            _store_lanes(b, b.V, dst_row, out, mask)
    return atomic


# --- flat to LDS / scratch -----------------------------------------------------------------------

def _flat_other_atomic(b, m, addrs, mask, split, values, cmp, fn, size, dtype, read, write):
    """A flat atomic whose lanes fall in the shared (LDS) or private (scratch) aperture runs there
    per lane, as flat loads and stores do; global lanes run on memory. Within each memory the
    lanes run in lane order (the serial order of :func:`_serial_rmw`)."""
    lds, private = split
    glob = ~(lds | private)
    ndw = size // 4
    utype = u32 if size == 4 else u64
    old = np.zeros(addrs.size, dtype)
    local = (addrs & u64(0xFFFFFFFF)).astype(np.int64)

    def as_dtype(words: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(words).view(utype).reshape(-1).view(dtype)

    def as_words(v: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(v.astype(dtype)).view(u32).reshape(-1, ndw)

    def run(sel: np.ndarray, keys: np.ndarray, read_keys, write_keys) -> None:
        idx = np.flatnonzero(sel)
        old[idx] = _serial_rmw(read_keys, write_keys, keys, values[idx], fn,
                               None if cmp is None else cmp[idx])
    if glob.any():
        read(np.unique(addrs[glob]))          # fault-check before any write
        run(glob, addrs[glob], read, write)
    if lds.any():
        # key = workgroup << 32 | LDS address: unique per (workgroup, address)
        keys = _lane_wg(b, mask)[lds].astype(np.int64) << 32 | local[lds]
        run(lds, keys,
            lambda k: as_dtype(lds_load(m, k >> 32, k & 0xFFFFFFFF, size)),
            lambda k, v: lds_store(m, k >> 32, k & 0xFFFFFFFF, as_words(v), size))
    if private.any():
        ids = _lane_ids(b, mask)[private].astype(np.int64)
        _check_private(m, local[private], size)
        keys = ids << 32 | local[private]
        run(private, keys,
            lambda k: as_dtype(scratch_load(m, b, k >> 32, k & 0xFFFFFFFF, size)[:, :ndw]),
            lambda k, v: scratch_store(m, b, k >> 32, k & 0xFFFFFFFF, as_words(v), size))
    return old


def _flat_other_load(b, m, addrs, mask, split, size, kind, hi, regs, row) -> None:
    lds, private = split
    ndw = max(1, size // 4)
    out = np.zeros((addrs.size, ndw), u32)
    glob = ~(lds | private)
    if glob.any():
        if kind == "d":
            out[glob] = gather_dwords(m, addrs[glob], ndw)
        else:
            raw = gather_bytes(m, addrs[glob], size)
            out[glob, 0] = _narrow(raw, size, kind)
    lane_wg = _lane_wg(b, mask)
    lane_ids = _lane_ids(b, mask)
    for sel, load in ((lds, lambda a, s: lds_load(m, lane_wg[s], a, size)),
                      (private, lambda a, s: scratch_load(m, b, lane_ids[s], a, size))):
        if sel.any():
            local = (addrs[sel] & u64(0xFFFFFFFF)).astype(np.int64)
            words = load(local, sel)
            out[sel] = words if kind == "d" else \
                _narrow(words.view(np.uint8)[:, :size], size, kind)[:, None]
    if kind.endswith("16"):
        current = regs[row].reshape(-1) if mask is None else regs[row][mask]
        value = out[:, 0] & u32(0xFFFF)
        out[:, 0] = (current & u32(0xFFFF)) | (value << u32(16)) if hi else \
            (current & u32(0xFFFF0000)) | value
    _store_lanes(b, regs, row, out, mask)


def _narrow(raw: np.ndarray, size: int, kind: str) -> np.ndarray:
    value = np.ascontiguousarray(raw).view(np.uint8 if size == 1 else np.uint16).reshape(-1)
    if kind.startswith("s"):
        return value.view(np.int8 if size == 1 else np.int16).astype(np.int32).view(u32)
    return value.astype(u32)


def _flat_other_store(b, m, addrs, mask, split, size, hi, values) -> None:
    lds, private = split
    glob = ~(lds | private)
    if glob.any():
        if size >= 4:
            scatter_dwords(m, addrs[glob], values[glob])
        else:
            word = values[glob, 0] >> u32(16) if hi else values[glob, 0]
            scatter_bytes(m, addrs[glob], word, size)
    lane_wg = _lane_wg(b, mask)
    lane_ids = _lane_ids(b, mask)
    if size < 4:
        values = (values >> u32(16)) if hi else values
    if lds.any():
        lds_store(m, lane_wg[lds], (addrs[lds] & u64(0xFFFFFFFF)).astype(np.int64), values[lds],
                  size)
    if private.any():
        scratch_store(m, b, lane_ids[private], (addrs[private] & u64(0xFFFFFFFF)).astype(np.int64),
                      values[private], size)


def _scratch(inst: Instruction, info: Any, vaddr, saddr_op, data_regs, offset: int):
    name = inst.name
    size, kind, hi = (4, "d", False) if "_load_lds_" in name else _width_of(name)
    ndw = max(1, size // 4)
    vofs = vector_reader(vaddr, "u32") if vaddr is not None else None
    sofs = scalar_reader(saddr_op, "u32") if saddr_op is not None else None

    def offsets(b: Batch, mask) -> np.ndarray:
        total = np.zeros(b.exec.shape, np.int64) + offset
        if vofs is not None:
            total = total + np.asarray(vofs(b)).astype(np.int64)
        if sofs is not None:
            total = total + np.asarray(sofs(b)).astype(np.int64).reshape(-1, 1)
        total = np.broadcast_to(total, b.exec.shape)
        return total.reshape(-1) if mask is None else total[mask]

    if "_load_lds_" in name:
        # SCRATCH_LOAD_LDS_*: the lane's private data to LDS, as GLOBAL_LOAD_LDS_* does
        lds_size, signed = _lds_dma_width(name)

        def load_lds(b: Batch, m: Any) -> None:
            mask = None if b.exec_all else b.exec
            words = scratch_load(m, b, _lane_ids(b, mask), offsets(b, mask), lds_size)
            _lds_dma_store(b, m, mask, offset, _widened(words[:, 0], lds_size, signed))
        return load_lds
    if "_load_" in name:
        row = inst.dsts[0].index

        def load(b: Batch, m: Any) -> None:
            mask = None if b.exec_all else b.exec
            ids = _lane_ids(b, mask)
            words = scratch_load(m, b, ids, offsets(b, mask), size)
            if kind != "d":
                words = _extend(words.view(np.uint8)[:, :size], size, kind, hi, b.V[row], mask, b)
            _store_lanes(b, b.V, row, words[:, :ndw], mask)
        return load
    if "_store_" in name:
        data = data_regs[0]

        def store(b: Batch, m: Any) -> None:
            mask = None if b.exec_all else b.exec
            ids = _lane_ids(b, mask)
            values = _lane_values(b, b.V, data.index, ndw, mask)
            if size < 4 and hi:
                values = values >> u32(16)
            scratch_store(m, b, ids, offsets(b, mask), values, size)
        return store
    raise NotImplementedOperand(name)
