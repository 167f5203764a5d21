"""Scalar memory instructions (SMEM): S_LOAD / S_BUFFER_LOAD, and on gfx9 the scalar
stores, atomics and scratch accesses.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hsapy.sim.isa.instruction import Instruction
from hsapy.sim.isa.memory_access import (
    atomic_operation,
    atomic_types,
    dword_elements,
    global_atomic,
    global_rmw,
    scratch_load,
    scratch_store,
)
from hsapy.sim.isa.operand_access import NotImplementedOperand, scalar_reader, scalar_writer
from hsapy.sim.isa.wave import Batch

u32, u64 = np.uint32, np.uint64


# --- SMEM ----------------------------------------------------------------------------------------

def _smem(inst: Instruction, info: Any):
    name = inst.name
    if name in ("s_memtime", "s_memrealtime"):
        write = scalar_writer(inst.dsts[0], "b64")
        return lambda b, m: write(b, np.uint64(m.clock.now()))
    if name.startswith(("s_dcache_inv", "s_dcache_wb", "s_atc_probe", "s_prefetch", "s_gl1_inv",
                        "s_buffer_prefetch")):
        # cache maintenance and hints: memory here is coherent and has no caches. The probes
        # only probe or prefetch into the scalar cache (CDNA2 guide, S_ATC_PROBE) and the gfx12
        # prefetches report no completion or error to the wave (RDNA4 guide 8.5): no
        # architectural state changes
        return lambda b, m: None
    if name.startswith("s_scratch_"):
        return _smem_scratch(inst)
    buffer = name.startswith("s_buffer_")
    if "_atomic_" in name:
        return _smem_atomic(inst, buffer)
    if "_store_" in name:
        return _smem_store(inst, buffer)
    if not name.startswith(("s_load_", "s_buffer_load_")):
        raise NotImplementedOperand(name)
    dst = inst.dsts[0]
    if dst.kind != "sgpr":
        raise NotImplementedOperand(f"SMEM destination {dst.kind}")
    ndw = dst.count
    dst_row = dst.index
    locate = _smem_locator(inst, list(inst.srcs), buffer)
    # gfx12 S_LOAD_U8/I8/U16/I16: one byte/short at its own address, extended to a dword
    narrow = {"u8": (1, np.uint8), "i8": (1, np.int8), "u16": (2, np.uint16),
              "i16": (2, np.int16)}.get(name.rsplit("_", 1)[-1])

    def load_narrow(b: Batch, m: Any) -> None:
        size, dtype = narrow
        addr, ok = locate(b, size, size)
        for wave in range(b.waves):
            value = 0
            if ok[wave, 0]:
                value = int(np.frombuffer(m.memory.read(int(addr[wave, 0]), size), dtype)[0])
            b.S[wave, dst_row] = value & 0xFFFFFFFF

    def load(b: Batch, m: Any) -> None:
        addr, ok = locate(b, 4, 4 * ndw)
        if ok.all():
            first = addr[0, 0]
            if (addr[:, 0] == first).all():
                words = np.frombuffer(m.memory.read(int(first), 4 * ndw), u32)
                b.S[:, dst_row:dst_row + ndw] = words
                return
            unique, inverse = np.unique(addr[:, 0], return_inverse=True)
            rows = np.stack([np.frombuffer(m.memory.read(int(a), 4 * ndw), u32) for a in unique])
            b.S[:, dst_row:dst_row + ndw] = rows[inverse.reshape(-1)]
            return
        words = np.zeros(addr.shape, u32)      # out-of-range dwords of a buffer read 0
        if ok.any():
            words[ok] = m.memory.gather(addr[ok], 4, np.uint32, agent=m.agent)
        b.S[:, dst_row:dst_row + ndw] = words
    return load_narrow if narrow is not None else load


def smem_immediate(inst: Instruction) -> int:
    """The SMEM instruction offset from its fields: gfx9 a signed 21-bit immediate when IMM is
    set (else an SGPR, read as an operand); gfx11 signed 21 bits; gfx12 signed 24 bits (CDNA3 /
    RDNA3 / RDNA4 guides, "SMEM"). The decoded operand list shows an immediate only when no
    SGPR offset is used, so the immediate is always taken from here."""
    f = inst.fields
    if inst.family == "gfx9":
        if not f.get("imm"):
            return 0
        bits = 21
    else:
        bits = 24 if inst.family == "gfx12" else 21
    value = int(f.get("offset", 0))
    return value - (1 << bits) if value >> (bits - 1) & 1 else value


def _smem_locator(inst: Instruction, srcs: list, buffer: bool):
    """``locate(b, align, nbytes) -> (uint64[W, n] addresses, bool[W, n] in range)`` of the
    ``nbytes / max(align, 4)`` pieces each wave accesses. ``srcs`` starts at the base operand.

    Scalar loads ignore the low address bits below their size. S_BUFFER_* take the V#: base
    (bits 47:0), stride and num_records; the address is clamped when, with stride 0, the
    offset >= num_records, else when the offset > stride * num_records (CDNA3 guide, "Scalar
    Memory Operations"; AMD's gem5 model of the guide reads it the same way). The simulator
    applies the rule to every dword piece, on every family: a clamped piece reads 0, a store or
    atomic drops it."""
    base_op = srcs[0]
    imm = smem_immediate(inst)
    offsets = [scalar_reader(op, "u32") for op in srcs[1:] if op.kind != "imm"]
    if buffer:
        row = _srow(base_op)
        base = None
    else:
        base = scalar_reader(base_op, "b64")

    def locate(b: Batch, align: int, nbytes: int) -> tuple[np.ndarray, np.ndarray]:
        offset = np.full(b.waves, imm, np.int64)
        for reader in offsets:
            offset = offset + np.asarray(reader(b)).astype(np.int64)
        pieces = max(1, nbytes // max(align, 4))
        step = np.arange(pieces, dtype=np.int64) * max(align, 4)
        if not buffer:
            start = np.broadcast_to(np.asarray(base(b)), (b.waves,)).astype(u64)
            addr = (start + offset.astype(u64)) & ~u64(align - 1)     # wraps modulo 2^64
            addr = addr[:, None] + step.astype(u64)
            return addr, np.ones(addr.shape, bool)
        words = b.S[:, row:row + 4].astype(np.int64) if row >= 0 else \
            np.zeros((b.waves, 4), np.int64)
        v_base = words[:, 0] | (words[:, 1] & 0xFFFF) << 32
        stride = (words[:, 1] >> 16) & 0x3FFF
        records = words[:, 2]
        piece = ((offset & 0xFFFFFFFF) & ~(align - 1))[:, None] + step
        limit = np.where(stride == 0, records, stride * records)[:, None]
        ok = np.where((stride == 0)[:, None], piece < limit, piece <= limit)
        addr = (v_base[:, None] + piece) & ((1 << 48) - 1)
        return addr.astype(u64), ok
    return locate


def _srow(op) -> int:
    from hsapy.sim.isa.operand_access import scalar_index

    return scalar_index(op)


def _smem_scratch(inst: Instruction):
    """S_SCRATCH_LOAD_DWORD[X2,X4] / S_SCRATCH_STORE_DWORD[X2,X4] (gfx9). CDNA3 ISA guide
    8.2.1.1, "Scalar Memory Addressing": ADDR = SGPR[base] + inst_offset + {M0 or SGPR[offset]
    or zero} * 64, the two low bits ignored; the instruction descriptions: the SGPR offset is in
    64-byte units, the immediate a signed byte offset. ADDR is a plain address: a shader that
    wants its private memory computes it from the scratch base itself (8.2.1.1). An address in
    the simulator's private-segment window (semantics_buffer.PRIVATE_BUFFER_BASE, the base of
    the private segment buffer V#) reaches the wave's private memory through the hardware's
    per-wave interleave, as buffer instructions do; any other address is global memory."""
    from hsapy.sim.isa.semantics_buffer import PRIVATE_BUFFER_BASE, PRIVATE_BUFFER_SIZE

    srcs = list(inst.srcs)
    load = "_load_" in inst.name
    data = inst.dsts[0] if load else srcs[0]
    if data.kind != "sgpr":
        raise NotImplementedOperand(f"SMEM data {data.kind}")
    rest = srcs if load else srcs[1:]
    base = scalar_reader(rest[0], "b64")
    units = [scalar_reader(op, "u32") for op in rest[1:] if op.kind != "imm"]
    imm = smem_immediate(inst)
    ndw = data.count
    row = data.index

    def addresses(b: Batch) -> np.ndarray:
        """``int64[W, ndw]`` byte addresses of the dwords each wave accesses (as unsigned)."""
        offset = np.full(b.waves, imm, np.int64)
        for reader in units:
            offset = offset + 64 * np.asarray(reader(b)).astype(np.int64)
        start = np.broadcast_to(np.asarray(base(b)), (b.waves,)).astype(u64) + offset.astype(u64)
        start = start & ~u64(3)
        return start[:, None] + (4 * np.arange(ndw)).astype(u64)

    def private(b: Batch, addr: np.ndarray):
        """(is private, scratch row, private byte offset) of each dword address."""
        inside = (addr >= u64(PRIVATE_BUFFER_BASE)) & \
            (addr < u64(PRIVATE_BUFFER_BASE + PRIVATE_BUFFER_SIZE))
        rel = np.where(inside, addr - u64(PRIVATE_BUFFER_BASE), u64(0)).astype(np.int64)
        width = 4 * b.lanes
        rows = np.arange(b.waves, dtype=np.int64)[:, None] * b.lanes + (rel % width) // 4
        return inside, rows, (rel // width) * 4

    def run_load(b: Batch, m: Any) -> None:
        addr = addresses(b)
        inside, rows, offs = private(b, addr)
        words = np.zeros(addr.shape, u32)
        if inside.any():
            words[inside] = scratch_load(m, b, rows[inside], offs[inside], 4)[:, 0]
        if not inside.all():
            words[~inside] = m.memory.gather(addr[~inside], 4, np.uint32, agent=m.agent)
        b.S[:, row:row + ndw] = words

    def run_store(b: Batch, m: Any) -> None:
        addr = addresses(b)
        inside, rows, offs = private(b, addr)
        values = b.S[:, row:row + ndw].copy()
        for wave in range(b.waves):        # in wave order: a later wave's store wins
            sel = inside[wave]
            if sel.any():
                scratch_store(m, b, rows[wave][sel], offs[wave][sel], values[wave][sel][:, None], 4)
            if not sel.all():
                m.memory.scatter(addr[wave][~sel], np.ascontiguousarray(values[wave][~sel]), 4,
                                 agent=m.agent)
    return run_load if load else run_store


def _smem_store(inst: Instruction, buffer: bool):
    """S_STORE_* / S_BUFFER_STORE_* (gfx9): SDATA to memory, waves in dispatch order."""
    srcs = list(inst.srcs)
    data = srcs[0]
    if data.kind != "sgpr":
        raise NotImplementedOperand(f"SMEM data {data.kind}")
    ndw = data.count
    locate = _smem_locator(inst, srcs[1:], buffer)

    def store(b: Batch, m: Any) -> None:
        addr, ok = locate(b, 4, 4 * ndw)
        values = b.S[:, data.index:data.index + ndw]
        for wave in range(b.waves):        # in wave order: a later wave's store wins
            sel = ok[wave]
            if sel.any():
                m.memory.scatter(addr[wave][sel], np.ascontiguousarray(values[wave][sel]), 4,
                                 agent=m.agent)
    return store


def _smem_atomic(inst: Instruction, buffer: bool):
    """S_ATOMIC_* / S_BUFFER_ATOMIC_* (gfx9): one read-modify-write per wave, waves in dispatch
    order; with GLC the old value returns into SDATA (an out-of-range buffer atomic returns 0)."""
    op, kind, fn, size = atomic_operation(inst.name)
    srcs = list(inst.srcs)
    data = srcs[0]
    if data.kind != "sgpr":
        raise NotImplementedOperand(f"SMEM data {data.kind}")
    locate = _smem_locator(inst, srcs[1:], buffer)
    ndw = size // 4
    utype, dtype = atomic_types(kind, size)
    returns = bool(inst.fields.get("glc"))

    def atomic(b: Batch, m: Any) -> None:
        addr, ok = locate(b, size, size)
        addr, ok = addr[:, 0], ok[:, 0]
        words = b.S[:, data.index:data.index + data.count]
        values = dword_elements(words[:, :ndw], utype, dtype)
        cmp = None
        if kind == "c":
            cmp = dword_elements(words[:, ndw:2 * ndw], utype, dtype)
        old = np.zeros(b.waves, dtype)
        if ok.any():
            sel = np.flatnonzero(ok)
            read, write = global_rmw(m, ndw, utype, dtype)
            old[sel] = global_atomic(read, write, addr[sel], values[sel], fn,
                                     None if cmp is None else cmp[sel])
        if returns:
            b.S[:, data.index:data.index + ndw] = np.ascontiguousarray(old).view(u32) \
                .reshape(-1, ndw)
    return atomic
