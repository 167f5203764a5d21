"""Memory instructions: SMEM, global/flat/scratch, LDS (DS), atomics.

Every access to simulated memory goes through ``SimMemory`` (``view`` / ``gather`` / ``scatter``),
which raises ``SimMemoryFault`` outside an allocation; the executor turns that into a
``SimFault`` with the faulting address. Only lanes in EXEC access memory.

Atomics run in one serial order: waves in dispatch order, lanes in lane order; each lane's
returned value is the memory value just before its own operation in that order.
LDS is one byte array per workgroup (rows of ``machine.lds``); an LDS access beyond the
workgroup's allocation reads 0 and drops writes, as the hardware's LDS range check does.
Flat addresses in the shared / private apertures (hsapy.sim.queues) go to LDS / scratch.
"""
from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from hsapy.sim.isa.instruction import Instruction
from hsapy.sim.isa.operand_access import (NotImplementedOperand, scalar_reader, scalar_writer,
                                          vector_reader)
from hsapy.sim.isa.wave import Batch

u32, u64 = np.uint32, np.uint64
ADDRESS_MASK = (1 << 64) - 1


def compile_memory(inst: Instruction, info: Any):
    """Closure for a memory instruction (None-returning), or an unimplemented stub."""
    from hsapy.sim.isa.closures import unimplemented as _unimplemented

    try:
        if inst.encoding == "SMEM":
            return _smem(inst, info)
        if inst.encoding == "DS":
            return _ds(inst, info)
        if inst.encoding in ("GLOBAL", "FLAT", "SCRATCH"):
            return _vmem(inst, info)
        if inst.encoding in ("MUBUF", "MTBUF", "VBUFFER"):
            from hsapy.sim.isa.semantics_buffer import compile_buffer

            return compile_buffer(inst, info)
    except NotImplementedOperand as exc:
        return _unimplemented(inst, str(exc))
    return _unimplemented(inst)


# --- helpers ------------------------------------------------------------------------------------

def gather_dwords(m: Any, addrs: np.ndarray, ndw: int) -> np.ndarray:
    """Load ``ndw`` dwords at each address: ``uint32[n, ndw]``; fault-checked by SimMemory."""
    n = addrs.size
    if n == 0:
        return np.zeros((0, ndw), u32)
    lo = int(addrs.min())
    hi = int(addrs.max()) + 4 * ndw
    rel = (addrs - u64(lo)).astype(np.intp)
    try:
        view = m.memory.view(lo, hi - lo, "read", agent=m.agent)
    except Exception:
        cols = [m.memory.gather(addrs + u64(4 * k), 4, np.uint32, agent=m.agent)
                for k in range(ndw)]
        return np.stack(cols, axis=1)
    if not (rel & 3).any():
        words = view.view(u32)
        if ndw == 1:
            return np.take(words, rel >> 2)[:, None]
        index = (rel >> 2)[:, None] + np.arange(ndw)
        return words[index]
    index = rel[:, None] + np.arange(4 * ndw)
    return np.ascontiguousarray(view[index]).view(u32).reshape(n, ndw)


def scatter_dwords(m: Any, addrs: np.ndarray, values: np.ndarray) -> None:
    """Store ``values`` (``uint32[n, ndw]``) at each address; fault-checked by SimMemory."""
    n, ndw = values.shape
    if n == 0:
        return
    lo = int(addrs.min())
    hi = int(addrs.max()) + 4 * ndw
    rel = (addrs - u64(lo)).astype(np.intp)
    try:
        view = m.memory.view(lo, hi - lo, "write", agent=m.agent)
    except Exception:
        for k in range(ndw):  # fault-checks every address before the first write
            m.memory.check(addrs + u64(4 * k), 4, "write", agent=m.agent)
        for k in range(ndw):
            m.memory.scatter(addrs + u64(4 * k), np.ascontiguousarray(values[:, k]),
                             agent=m.agent)
        return
    if not (rel & 3).any():
        words = view.view(u32)
        if ndw == 1:
            words[rel >> 2] = values[:, 0]
        else:
            words[(rel >> 2)[:, None] + np.arange(ndw)] = values
        return
    view[rel[:, None] + np.arange(4 * ndw)] = np.ascontiguousarray(values).view(np.uint8).reshape(n, -1)


def gather_bytes(m: Any, addrs: np.ndarray, nbytes: int) -> np.ndarray:
    """Load ``nbytes`` (1 or 2) at each address: ``uint8[n, nbytes]``."""
    if addrs.size == 0:
        return np.zeros((0, nbytes), np.uint8)
    raw = m.memory.gather(addrs, nbytes, None, agent=m.agent)
    return np.ascontiguousarray(raw).view(np.uint8).reshape(-1, nbytes)


def scatter_bytes(m: Any, addrs: np.ndarray, values: np.ndarray, nbytes: int) -> None:
    """Store the low ``nbytes`` of each uint32 value."""
    if addrs.size == 0:
        return
    m.memory.scatter(addrs, values.astype(u32), nbytes, agent=m.agent)


def _width_of(name: str) -> tuple[int, str, bool]:
    """(bytes, kind, d16_hi) of a load/store mnemonic: kind "u"/"s" for sub-dword, "d" dwords."""
    tail = name.split("_", 2)[-1]
    # gfx12 spells d16 forms global_load_d16_u8 / global_store_d16_hi_b16
    tail = re.sub(r"^d16_hi_(\w+)$", r"\1_d16_hi", tail)
    tail = re.sub(r"^d16_(\w+)$", r"\1_d16", tail)
    hi = tail.endswith("_d16_hi")
    d16 = "_d16" in tail
    tail = tail.replace("_d16_hi", "").replace("_d16", "")
    for prefix in ("load_", "store_", "read_", "write_"):
        if tail.startswith(prefix):
            tail = tail[len(prefix):]
    table = {
        "dword": (4, "d"), "dwordx2": (8, "d"), "dwordx3": (12, "d"), "dwordx4": (16, "d"),
        "b32": (4, "d"), "b64": (8, "d"), "b96": (12, "d"), "b128": (16, "d"),
        "ubyte": (1, "u"), "u8": (1, "u"), "sbyte": (1, "s"), "i8": (1, "s"),
        "ushort": (2, "u"), "u16": (2, "u"), "sshort": (2, "s"), "i16": (2, "s"),
        "byte": (1, "u"), "short": (2, "u"), "b8": (1, "u"), "b16": (2, "u"),
    }
    if tail not in table:
        raise NotImplementedOperand(f"memory width of {name}")
    size, kind = table[tail]
    if d16:
        kind = kind + "16"
    return size, kind, hi


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
    utype = u32 if size == 4 else u64
    dtype = {"u": utype, "s": np.int32 if size == 4 else np.int64, "c": utype,
             "f": np.float32 if size == 4 else np.float64}[kind]
    returns = bool(inst.fields.get("glc"))

    def atomic(b: Batch, m: Any) -> None:
        addr, ok = locate(b, size, size)
        addr, ok = addr[:, 0], ok[:, 0]
        words = b.S[:, data.index:data.index + data.count]
        values = np.ascontiguousarray(words[:, :ndw]).view(utype).reshape(-1).view(dtype)
        cmp = None
        if kind == "c":
            cmp = np.ascontiguousarray(words[:, ndw:2 * ndw]).view(utype).reshape(-1).view(dtype)
        old = np.zeros(b.waves, dtype)
        if ok.any():
            sel = np.flatnonzero(ok)

            def read(a: np.ndarray) -> np.ndarray:
                return np.ascontiguousarray(gather_dwords(m, a, ndw)).view(utype).reshape(-1) \
                    .view(dtype)

            def write(a: np.ndarray, v: np.ndarray) -> None:
                scatter_dwords(m, a, np.ascontiguousarray(v.astype(dtype)).view(u32)
                               .reshape(-1, ndw))
            read(np.unique(addr[sel]))
            old[sel] = _serial_rmw(read, write, addr[sel], values[sel], fn,
                                   None if cmp is None else cmp[sel])
        if returns:
            b.S[:, data.index:data.index + ndw] = np.ascontiguousarray(old).view(u32) \
                .reshape(-1, ndw)
    return atomic


# --- global / flat / scratch ---------------------------------------------------------------------

_ATOMIC_OPS: dict[str, tuple[str, Callable]] = {
    "add": ("u", lambda old, v: old + v), "sub": ("u", lambda old, v: old - v),
    "add_u32": ("u", lambda old, v: old + v), "sub_u32": ("u", lambda old, v: old - v),
    "add_u64": ("u", lambda old, v: old + v), "sub_u64": ("u", lambda old, v: old - v),
    "and": ("u", lambda old, v: old & v), "or": ("u", lambda old, v: old | v),
    "xor": ("u", lambda old, v: old ^ v),
    "and_b32": ("u", lambda old, v: old & v), "or_b32": ("u", lambda old, v: old | v),
    "xor_b32": ("u", lambda old, v: old ^ v),
    "and_b64": ("u", lambda old, v: old & v), "or_b64": ("u", lambda old, v: old | v),
    "xor_b64": ("u", lambda old, v: old ^ v),
    "swap": ("u", lambda old, v: v), "swap_b32": ("u", lambda old, v: v),
    "swap_b64": ("u", lambda old, v: v),
    "smin": ("s", np.minimum), "smax": ("s", np.maximum),
    "umin": ("u", np.minimum), "umax": ("u", np.maximum),
    "min_i32": ("s", np.minimum), "max_i32": ("s", np.maximum),
    "min_u32": ("u", np.minimum), "max_u32": ("u", np.maximum),
    "min_i64": ("s", np.minimum), "max_i64": ("s", np.maximum),
    "min_u64": ("u", np.minimum), "max_u64": ("u", np.maximum),
    "inc": ("u", lambda old, v: np.where(old >= v, 0, old + 1).astype(old.dtype)),
    "dec": ("u", lambda old, v: np.where((old == 0) | (old > v), v, old - 1).astype(old.dtype)),
    "inc_u32": ("u", lambda old, v: np.where(old >= v, 0, old + 1).astype(old.dtype)),
    "inc_u64": ("u", lambda old, v: np.where(old >= v, 0, old + 1).astype(old.dtype)),
    "dec_u64": ("u", lambda old, v: np.where((old == 0) | (old > v), v, old - 1).astype(old.dtype)),
    "dec_u32": ("u", lambda old, v: np.where((old == 0) | (old > v), v, old - 1).astype(old.dtype)),
    "add_f32": ("f", lambda old, v: old + v), "add_f64": ("f", lambda old, v: old + v),
    "fmin": ("f", np.fmin), "fmax": ("f", np.fmax),
    "min_f32": ("f", np.fmin), "max_f32": ("f", np.fmax),
    "min_num_f32": ("f", np.fmin), "max_num_f32": ("f", np.fmax),
    "min_f64": ("f", np.fmin), "max_f64": ("f", np.fmax),
    "min_num_f64": ("f", np.fmin), "max_num_f64": ("f", np.fmax),
    "cmpswap": ("c", None), "cmpswap_b32": ("c", None), "cmpswap_b64": ("c", None),
    # RDNA3/RDNA4 guides: SUB_CLAMP (CSUB) saturates at 0; COND_SUB subtracts only when the
    # result stays non-negative
    "sub_clamp_u32": ("u", lambda old, v: np.where(v > old, 0, old - v).astype(old.dtype)),
    "csub_u32": ("u", lambda old, v: np.where(v > old, 0, old - v).astype(old.dtype)),
    "cond_sub_u32": ("u", lambda old, v: np.where(old >= v, old - v, old).astype(old.dtype)),
    "pk_add_f16": ("u", lambda old, v: _packed_add(old, v, "f16")),
    "pk_add_bf16": ("u", lambda old, v: _packed_add(old, v, "bf16")),
}


def _packed_add(old: np.ndarray, v: np.ndarray, kind: str) -> np.ndarray:
    """Two 16-bit float adds in one dword, each rounded once to nearest even (the sum of two
    f16 or bf16 values is exact in f64, so rounding that to 16 bits is the single rounding)."""
    old = np.asarray(old).astype(u32)
    v = np.asarray(v).astype(u32)
    halves = []
    for shift in (0, 16):
        a = ((old >> u32(shift)) & u32(0xFFFF)).astype(np.uint16)
        c = ((v >> u32(shift)) & u32(0xFFFF)).astype(np.uint16)
        if kind == "f16":
            total = a.view(np.float16).astype(np.float64) + c.view(np.float16).astype(np.float64)
            halves.append(total.astype(np.float16).view(np.uint16).astype(u32))
        else:
            total = _bf16_to_f32(a).astype(np.float64) + _bf16_to_f32(c).astype(np.float64)
            halves.append(_f32_to_bf16(total.astype(np.float32)).astype(u32))
    return halves[0] | (halves[1] << u32(16))


def _bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(u32) << u32(16)).view(np.float32)


def _f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round to nearest even; NaN stays a quiet NaN. Rounding the f64 sum of two bf16 values to
    f32 first cannot change the bf16 result (the f32 rounding error is below a bf16 tie)."""
    bits = np.ascontiguousarray(x).view(u32)
    rounded = (bits + u32(0x7FFF) + ((bits >> u32(16)) & u32(1))) >> u32(16)
    nan = np.isnan(x)
    return np.where(nan, (bits >> u32(16)) | u32(0x40), rounded).astype(np.uint16)


def atomic_operation(name: str) -> tuple[str, str, Callable | None, int]:
    """(op, type kind, function, bytes) for ``*_atomic_<op>[_x2]`` (global, flat, buffer and
    scalar atomics share the operations); kind "u"/"s"/"f" is how the dword(s) are read, "c"
    compare-and-swap."""
    op = name.split("_atomic_", 1)[1]
    wide = op.endswith("_x2") or op.endswith("_b64") or op.endswith("_u64") \
        or op.endswith("_i64") or op.endswith("_f64")
    base = op[:-3] if op.endswith("_x2") else op
    if base not in _ATOMIC_OPS:
        raise NotImplementedOperand(f"atomic {op}")
    kind, fn = _ATOMIC_OPS[base]
    return base, kind, fn, 8 if wide else 4


def _serial_rmw(read: Callable, write: Callable, addrs: np.ndarray, values: np.ndarray,
                fn: Callable, cmp: np.ndarray | None) -> np.ndarray:
    """Apply ``fn`` lane by lane in order (vectorised over lanes with distinct addresses); returns
    the old value each lane saw. ``read(addrs) -> values``, ``write(addrs, values)``."""
    n = addrs.size
    old_out = np.empty_like(values)
    if n == 0:
        return old_out
    order = np.argsort(addrs, kind="stable")
    sorted_addrs = addrs[order]
    starts = np.ones(n, bool)
    starts[1:] = sorted_addrs[1:] != sorted_addrs[:-1]
    group_start = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    rank = np.empty(n, np.intp)
    rank[order] = np.arange(n) - group_start
    max_rank = int(rank.max())
    groups = int(starts.sum())
    if max_rank > 64 and cmp is None and groups <= 64:
        # few hot addresses: one accumulate per address, still in lane order
        for g in np.flatnonzero(starts):
            end = g + 1
            while end < n and not starts[end]:
                end += 1
            lanes = order[g:end]
            address = addrs[lanes[:1]]
            current = read(address)[0]
            vals = values[lanes]
            olds = np.empty_like(vals)
            if fn is not None and _is_add(fn):
                running = np.concatenate([[current], vals]).astype(vals.dtype)
                acc = np.add.accumulate(running)
                olds[:] = acc[:-1]
                final = acc[-1]
            else:
                for i, v in enumerate(vals):
                    olds[i] = current
                    current = fn(np.asarray(current), np.asarray(v))
                final = current
            old_out[lanes] = olds
            write(address, np.asarray([final], vals.dtype))
        return old_out
    for r in range(max_rank + 1):
        lanes = np.flatnonzero(rank == r)
        address = addrs[lanes]
        old = read(address)
        if cmp is not None:  # cmpswap: store the data when memory equals the compare value
            new = np.where(old == cmp[lanes], values[lanes], old)
        else:
            new = fn(old, values[lanes])
        old_out[lanes] = old
        write(address, np.asarray(new).astype(values.dtype))
    return old_out


def _is_add(fn: Callable) -> bool:
    return getattr(fn, "_is_add", False)


for _key in ("add", "add_u32", "add_u64", "add_f32", "add_f64"):
    _ATOMIC_OPS[_key][1]._is_add = True  # type: ignore[attr-defined]


def _vmem(inst: Instruction, info: Any):
    name = inst.name
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


def _extend(raw: np.ndarray, size: int, kind: str, hi: bool, old: np.ndarray, mask, b) -> np.ndarray:
    """Sub-dword load result as ``uint32[n, 1]`` (d16 forms merge into the other half)."""
    value = raw.view(np.uint8 if size == 1 else np.uint16)[:, 0] if raw.ndim == 2 else raw
    if kind.startswith("s"):
        value = value.view(np.int8 if size == 1 else np.int16).astype(np.int32).view(u32)
    else:
        value = value.astype(u32)
    if kind.endswith("16"):  # d16: write one half, keep the other
        current = old.reshape(-1) if mask is None else old[mask]
        value = value & u32(0xFFFF)
        if hi:
            value = (current & u32(0xFFFF)) | (value << u32(16))
        else:
            value = (current & u32(0xFFFF0000)) | value
    return value[:, None]


def _store_lanes(b: Batch, regs: np.ndarray, row: int, words: np.ndarray, mask) -> None:
    ndw = words.shape[1]
    for k in range(ndw):
        if mask is None:
            regs[row + k].reshape(-1)[:] = words[:, k]
        else:
            regs[row + k][mask] = words[:, k]


def _lane_values(b: Batch, regs: np.ndarray, row: int, ndw: int, mask) -> np.ndarray:
    if mask is None:
        return np.stack([regs[row + k].reshape(-1) for k in range(ndw)], axis=1)
    return np.stack([regs[row + k][mask] for k in range(ndw)], axis=1)


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
    utype = u32 if size == 4 else u64
    dtype = {"u": utype, "s": np.int32 if size == 4 else np.int64, "c": utype,
             "f": np.float32 if size == 4 else np.float64}[kind]

    def atomic(b: Batch, m: Any) -> None:
        addrs, mask = _active_addresses(b, address)
        words = _lane_values(b, b.V, data.index, data.count, mask)
        values = np.ascontiguousarray(words[:, :ndw]).view(utype).reshape(-1).view(dtype)
        cmp = None
        if cmpswap:
            cmp = np.ascontiguousarray(words[:, ndw:2 * ndw]).view(utype).reshape(-1).view(dtype)

        def read(a: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(gather_dwords(m, a, ndw)).view(utype).reshape(-1).view(dtype)

        def write(a: np.ndarray, v: np.ndarray) -> None:
            scatter_dwords(m, a, np.ascontiguousarray(v.astype(dtype)).view(u32).reshape(-1, ndw))
        split = _split_apertures(m, addrs) if flat else None
        if split is not None:
            old = _flat_other_atomic(b, m, addrs, mask, split, values, cmp, fn, size, dtype,
                                     read, write)
        else:
            # fault-check every address before the first write
            read(np.unique(addrs)) if addrs.size else None
            old = _serial_rmw(read, write, addrs, values, fn, cmp)
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
            out[sel] = words if kind == "d" else _narrow(words.view(np.uint8)[:, :size], size, kind)[:, None]
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
        lds_store(m, lane_wg[lds], (addrs[lds] & u64(0xFFFFFFFF)).astype(np.int64), values[lds], size)
    if private.any():
        scratch_store(m, b, lane_ids[private], (addrs[private] & u64(0xFFFFFFFF)).astype(np.int64),
                      values[private], size)


def _lane_wg(b: Batch, mask) -> np.ndarray:
    wg = np.broadcast_to(b.wg[:, None], b.exec.shape)
    return wg.reshape(-1) if mask is None else wg[mask]


def _lane_ids(b: Batch, mask) -> np.ndarray:
    """(wave row in batch * lanes + lane) of each active lane: index into the scratch rows."""
    ids = np.arange(b.exec.size).reshape(b.exec.shape)
    return ids.reshape(-1) if mask is None else ids[mask]


# --- scratch -------------------------------------------------------------------------------------

def _ensure_scratch(m: Any, b: Batch) -> np.ndarray:
    if b.scratch is None:
        b.scratch = np.zeros((b.waves * b.lanes, max(4, m.private_size)), np.uint8)
    return b.scratch


def scratch_load(m: Any, b: Batch, lane_ids: np.ndarray, offsets: np.ndarray, size: int) -> np.ndarray:
    """``uint32[n, ndw]`` (or the bytes for sub-dword) from each lane's private memory."""
    scratch = _ensure_scratch(m, b)
    nbytes = max(4, size)
    if not len(lane_ids):     # no lane in EXEC (e.g. a whole-wave spill of inactive lanes)
        return np.zeros((0, max(1, nbytes // 4)), u32)
    _check_private(m, offsets, size)
    cols = offsets[:, None] + np.arange(nbytes)
    cols = np.minimum(cols, scratch.shape[1] - 1)
    raw = scratch[lane_ids[:, None], cols]
    return np.ascontiguousarray(raw).view(u32).reshape(len(lane_ids), -1)


def scratch_store(m: Any, b: Batch, lane_ids: np.ndarray, offsets: np.ndarray, values: np.ndarray,
                  size: int) -> None:
    scratch = _ensure_scratch(m, b)
    if not len(lane_ids):
        return
    _check_private(m, offsets, size)
    raw = np.ascontiguousarray(values.astype(u32)).view(np.uint8).reshape(len(lane_ids), -1)[:, :size]
    scratch[lane_ids[:, None], offsets[:, None] + np.arange(size)] = raw


def _check_private(m: Any, offsets: np.ndarray, size: int) -> None:
    if offsets.size and (int(offsets.max()) + size > max(4, m.private_size) or int(offsets.min()) < 0):
        from hsapy.sim.memory import SimMemoryFault

        bad = int(offsets.max())
        raise SimMemoryFault(m.private_base + bad, size, "private")


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


# --- LDS -----------------------------------------------------------------------------------------

def lds_load(m: Any, wg: np.ndarray, addr: np.ndarray, size: int) -> np.ndarray:
    """``uint32[n, max(1, size/4)]`` from each lane's workgroup LDS; out-of-range reads give 0."""
    nbytes = max(4, size)
    ndw = nbytes // 4
    addr = addr.astype(np.int64)
    ok = (addr >= 0) & (addr + size <= m.lds_size)
    base = wg.astype(np.int64) * m.lds_stride + np.where(ok, addr, 0)
    if not (base & 3).any() and size >= 4:
        words = m.lds_words[(base >> 2)[:, None] + np.arange(ndw)]
    else:
        raw = m.lds[np.minimum(base[:, None] + np.arange(nbytes), m.lds.size - 1)]
        if size < 4:
            raw[:, size:] = 0
        words = np.ascontiguousarray(raw).view(u32).reshape(-1, ndw)
    if not ok.all():
        words = np.where(ok[:, None], words, u32(0))
    return words


def lds_store(m: Any, wg: np.ndarray, addr: np.ndarray, values: np.ndarray, size: int) -> None:
    """Store the low ``size`` bytes of each lane's words; out-of-range writes are dropped."""
    addr = addr.astype(np.int64)
    ok = (addr >= 0) & (addr + size <= m.lds_size)
    if not ok.all():
        wg, addr, values = wg[ok], addr[ok], values[ok]
    base = wg.astype(np.int64) * m.lds_stride + addr
    if size >= 4 and not (base & 3).any():
        m.lds_words[(base >> 2)[:, None] + np.arange(size // 4)] = values[:, : size // 4]
        return
    raw = np.ascontiguousarray(values.astype(u32)).view(np.uint8).reshape(len(base), -1)[:, :size]
    m.lds[base[:, None] + np.arange(size)] = raw


_DS_WIDTH = {
    "b32": 4, "b64": 8, "b96": 12, "b128": 16, "u8": 1, "i8": 1, "u16": 2, "i16": 2,
    "b8": 1, "b16": 2,
}


def _ds(inst: Instruction, info: Any):
    name = inst.name
    f = inst.fields
    single_offset = (int(f.get("offset1", 0)) << 8) | int(f.get("offset0", 0))
    srcs = list(inst.srcs)
    if name in ("ds_bpermute_b32", "ds_permute_b32"):
        return _ds_permute(inst, single_offset)
    if name == "ds_swizzle_b32":
        return _ds_swizzle(inst, single_offset)
    if name in ("ds_nop",):
        return lambda b, m: None
    if "_addtid_" in name:     # no address VGPR: the only VGPR operand is the data
        return _ds_addtid(single_offset, [op for op in srcs if op.kind == "vgpr"],
                          inst.dsts[0].index if inst.dsts else None, _m0_row(inst))
    addr_reader = vector_reader(srcs[0], "u32") if srcs and srcs[0].kind == "vgpr" else None
    rest = srcs[1:]
    op = name[3:]
    two = op.startswith(("read2", "write2", "load_2addr", "store_2addr"))
    if two:
        st64 = "st64" in op or "stride64" in op  # gfx12: ds_load_2addr_stride64_b32
        elem = 8 if op.endswith("b64") else 4
        scale = elem * (64 if st64 else 1)
        off0 = int(f.get("offset0", 0)) * scale
        off1 = int(f.get("offset1", 0)) * scale
        if op.startswith(("read2", "load_2addr")):
            row = inst.dsts[0].index
            ndw = elem // 4

            def read2(b: Batch, m: Any) -> None:
                mask = None if b.exec_all else b.exec
                wg = _lane_wg(b, mask)
                first = lds_load(m, wg, _lds_address(b, addr_reader, mask, off0), elem)
                second = lds_load(m, wg, _lds_address(b, addr_reader, mask, off1), elem)
                _store_lanes(b, b.V, row, np.concatenate([first, second], axis=1), mask)
            return read2
        data0, data1 = rest[0], rest[1]
        ndw = elem // 4

        def write2(b: Batch, m: Any) -> None:
            mask = None if b.exec_all else b.exec
            wg = _lane_wg(b, mask)
            lds_store(m, wg, _lds_address(b, addr_reader, mask, off0),
                      _lane_values(b, b.V, data0.index, ndw, mask), elem)
            lds_store(m, wg, _lds_address(b, addr_reader, mask, off1),
                      _lane_values(b, b.V, data1.index, ndw, mask), elem)
        return write2
    for prefix in ("read_", "load_"):
        if op.startswith(prefix):
            tail = op[len(prefix):]
            hi = tail.endswith("_d16_hi")
            d16 = "_d16" in tail
            tail = tail.replace("_d16_hi", "").replace("_d16", "")
            if tail not in _DS_WIDTH:
                break
            size = _DS_WIDTH[tail]
            kind = ("s" if tail.startswith("i") else "u") if size < 4 else "d"
            if d16:
                kind += "16"
            row = inst.dsts[0].index

            def read(b: Batch, m: Any) -> None:
                mask = None if b.exec_all else b.exec
                addr = _lds_address(b, addr_reader, mask, single_offset)
                words = lds_load(m, _lane_wg(b, mask), addr, size)
                if kind != "d":
                    words = _extend(words.view(np.uint8)[:, :size], size, kind, hi, b.V[row], mask, b)
                _store_lanes(b, b.V, row, words, mask)
            return read
    for prefix in ("write_", "store_"):
        if op.startswith(prefix):
            tail = op[len(prefix):]
            hi = tail.endswith("_d16_hi")
            tail = tail.replace("_d16_hi", "")
            if tail not in _DS_WIDTH:
                break
            size = _DS_WIDTH[tail]
            data = rest[0]
            ndw = max(1, size // 4)

            def write(b: Batch, m: Any) -> None:
                mask = None if b.exec_all else b.exec
                addr = _lds_address(b, addr_reader, mask, single_offset)
                values = _lane_values(b, b.V, data.index, ndw, mask)
                if hi:
                    values = values >> u32(16)
                lds_store(m, _lane_wg(b, mask), addr, values, size)
            return write
    special = _ds_special(inst, addr_reader, rest, single_offset)
    if special is not None:
        return special
    # LDS atomics: ds_<op>[_rtn]_<type>
    return _ds_atomic(inst, addr_reader, rest, single_offset)


def _m0_row(inst: Instruction) -> int:
    """M0's row in Batch.S: operand code 124 on gfx9, 125 on gfx11/gfx12."""
    return 124 if inst.family == "gfx9" else 125


def _ds_special(inst: Instruction, addr_reader, rest, offset: int):
    """DS instructions outside the one-data atomic pattern: mask-or, wrap, the two-address
    exchanges, packed 16-bit float adds, append/consume and the lane-id addressed forms
    (CDNA3 / RDNA4 guides, "LDS Instructions"). None when ``inst`` is not one of them."""
    name = inst.name
    data = [op for op in rest if op.kind == "vgpr"]
    returns = bool(inst.dsts)
    dst_row = inst.dsts[0].index if returns else 0
    m0 = _m0_row(inst)
    match = re.match(r"^ds_(mskor|wrap)(_rtn)?_b(32|64)$", name)
    if match:
        op, _, bits = match.groups()
        size = int(bits) // 8
        return _ds_two_data(addr_reader, offset, data, returns, dst_row, size,
                            (lambda o, a, c: (o & ~a) | c) if op == "mskor" else
                            (lambda o, a, c: o - a if o >= a else o + c))
    match = re.match(r"^ds_(?:wrxchg2(st64)?|storexchg_2addr(_stride64)?)_rtn_b(32|64)$", name)
    if match:
        st64a, st64b, bits = match.groups()
        size = int(bits) // 8
        scale = size * (64 if (st64a or st64b) else 1)
        f = inst.fields
        return _ds_exchange2(addr_reader, int(f.get("offset0", 0)) * scale,
                             int(f.get("offset1", 0)) * scale, data, dst_row, size)
    match = re.match(r"^ds_pk_add(_rtn)?_(f16|bf16)$", name)
    if match:
        kind = match.group(2)
        return _ds_two_data(addr_reader, offset, data[:1], returns, dst_row, 4,
                            lambda o, a, c: int(_packed_add(np.array([o], u32),
                                                            np.array([a], u32), kind)[0]))
    if name in ("ds_append", "ds_consume"):
        return _ds_append(name == "ds_append", offset, dst_row, m0)
    if name == "ds_condxchg32_rtn_b64":
        return _ds_condxchg32(addr_reader, offset, data[0], dst_row)
    return None


def _ds_condxchg32(addr_reader, offset: int, data, dst_row: int):
    """DS_CONDXCHG32_RTN_B64 (CDNA3 / RDNA4 ISA guides, pseudocode): ADDR0 = (ADDR + OFFSET) &
    0xFFF8, ADDR1 = ADDR0 + 4; each half k returns LDS[ADDRk] and, iff DATA bit 32k + 31 is
    set, writes DATA's 31 bits below it with bit 31 clear. Lanes run in lane order."""
    def run(b: Batch, m: Any) -> None:
        mask = None if b.exec_all else b.exec
        addr = (_lanes(b, addr_reader, mask) + offset) & 0xFFF8
        wg = _lane_wg(b, mask)
        values = _lane_values(b, b.V, data.index, 2, mask)
        old = np.zeros((addr.size, 2), u32)
        for i in range(addr.size):
            for k in range(2):
                where = addr[i:i + 1] + 4 * k
                old[i, k] = lds_load(m, wg[i:i + 1], where, 4)[0, 0]
                if values[i, k] >> u32(31):
                    lds_store(m, wg[i:i + 1], where, (values[i:i + 1, k] & u32(0x7FFFFFFF))[:, None],
                              4)
        _store_lanes(b, b.V, dst_row, old, mask)
    return run


def _ds_two_data(addr_reader, offset, data, returns, dst_row, size, step):
    """An LDS read-modify-write whose new value depends on one or two data operands,
    ``step(old, data0, data1)`` on Python ints, one lane after another in lane order."""
    ndw = size // 4
    mask_bits = (1 << (8 * size)) - 1

    def run(b: Batch, m: Any) -> None:
        mask = None if b.exec_all else b.exec
        addr = _lanes(b, addr_reader, mask) + offset
        wg = _lane_wg(b, mask)
        first = _qwords(_lane_values(b, b.V, data[0].index, ndw, mask))
        second = _qwords(_lane_values(b, b.V, data[1].index, ndw, mask)) if len(data) > 1 \
            else np.zeros_like(first)
        old = np.zeros(addr.size, np.uint64)
        for i in range(addr.size):
            words = lds_load(m, wg[i:i + 1], addr[i:i + 1], size)
            current = int(_qwords(words)[0])
            old[i] = current
            new = step(current, int(first[i]), int(second[i])) & mask_bits
            lds_store(m, wg[i:i + 1], addr[i:i + 1], _dwords(np.array([new], np.uint64), ndw),
                      size)
        if returns:
            _store_lanes(b, b.V, dst_row, _dwords(old, ndw), mask)
    return run


def _qwords(words: np.ndarray) -> np.ndarray:
    """``uint32[n, 1 or 2]`` -> ``uint64[n]`` (low dword first)."""
    out = words[:, 0].astype(np.uint64)
    if words.shape[1] > 1:
        out |= words[:, 1].astype(np.uint64) << np.uint64(32)
    return out


def _dwords(values: np.ndarray, ndw: int) -> np.ndarray:
    """``uint64[n]`` -> ``uint32[n, ndw]``."""
    lo = (values & np.uint64(0xFFFFFFFF)).astype(u32)
    if ndw == 1:
        return lo[:, None]
    return np.stack([lo, (values >> np.uint64(32)).astype(u32)], axis=1)


def _ds_exchange2(addr_reader, off0: int, off1: int, data, dst_row: int, size: int):
    """DS_WRXCHG2[ST64]_RTN / DS_STOREXCHG_2ADDR[_STRIDE64]_RTN: exchange DATA0 at ADDR + OFFSET0
    and DATA1 at ADDR + OFFSET1 (scaled by the element size, times 64 for the stride-64 forms),
    returning both old values."""
    ndw = size // 4
    utype = u32 if size == 4 else u64

    def run(b: Batch, m: Any) -> None:
        mask = None if b.exec_all else b.exec
        addr = _lanes(b, addr_reader, mask)
        wg = _lane_wg(b, mask)
        olds = []
        for off, op in ((off0, data[0]), (off1, data[1])):
            keys = wg.astype(np.int64) << 32 | ((addr + off) & 0xFFFFFFFF)
            values = np.ascontiguousarray(_lane_values(b, b.V, op.index, ndw, mask)) \
                .view(utype).reshape(-1)

            def read(k: np.ndarray) -> np.ndarray:
                return np.ascontiguousarray(lds_load(m, k >> 32, k & 0xFFFFFFFF, size)) \
                    .view(utype).reshape(-1)

            def write(k: np.ndarray, v: np.ndarray) -> None:
                lds_store(m, k >> 32, k & 0xFFFFFFFF,
                          np.ascontiguousarray(v.astype(utype)).view(u32).reshape(-1, ndw), size)
            old = _serial_rmw(read, write, keys, values, lambda o, v: v, None)
            olds.append(np.ascontiguousarray(old).view(u32).reshape(-1, ndw))
        _store_lanes(b, b.V, dst_row, np.concatenate(olds, axis=1), mask)
    return run


def _ds_append(append: bool, offset: int, dst_row: int, m0: int):
    """DS_APPEND / DS_CONSUME: add (subtract) the wave's count of EXEC lanes to the dword at
    M0 + offset and return the value before to every active lane; waves in dispatch order."""
    def run(b: Batch, m: Any) -> None:
        counts = b.exec.sum(axis=1).astype(np.int64)
        addr = b.S[:, m0].astype(np.int64) + offset
        old = np.zeros(b.waves, u32)
        for w in range(b.waves):
            if not counts[w]:
                continue
            wg, a = b.wg[w:w + 1], addr[w:w + 1]
            current = int(lds_load(m, wg, a, 4)[0, 0])
            old[w] = current
            new = (current + counts[w] if append else current - counts[w]) & 0xFFFFFFFF
            lds_store(m, wg, a, np.array([[new]], u32), 4)
        np.copyto(b.V[dst_row], np.broadcast_to(old[:, None], b.exec.shape), where=b.exec)
    return run


def _ds_addtid(offset: int, data, dst_row: int | None, m0: int):
    """DS_READ/WRITE_ADDTID_B32 (gfx12 DS_LOAD/STORE_ADDTID_B32): the dword at M0 + offset +
    4 * lane id, no address VGPR."""
    def addresses(b: Batch, mask) -> np.ndarray:
        lanes = np.arange(b.lanes, dtype=np.int64)[None, :]
        addr = b.S[:, m0].astype(np.int64)[:, None] + offset + 4 * lanes
        addr = np.broadcast_to(addr, b.exec.shape)
        return addr.reshape(-1) if mask is None else addr[mask]

    def load(b: Batch, m: Any) -> None:
        mask = None if b.exec_all else b.exec
        _store_lanes(b, b.V, dst_row, lds_load(m, _lane_wg(b, mask), addresses(b, mask), 4), mask)

    def store(b: Batch, m: Any) -> None:
        mask = None if b.exec_all else b.exec
        values = _lane_values(b, b.V, data[0].index, 1, mask)
        lds_store(m, _lane_wg(b, mask), addresses(b, mask), values, 4)
    return load if dst_row is not None else store


_DS_ATOMIC_RE = re.compile(r"^ds_(.+?)(_rtn)?_(u32|i32|f32|b32|u64|i64|f64|b64)$")


def _ds_atomic(inst: Instruction, addr_reader, rest, offset: int):
    match = _DS_ATOMIC_RE.match(inst.name)
    if match is None:
        raise NotImplementedOperand(inst.name)
    op, rtn, ty = match.groups()
    table = {"add": "add", "sub": "sub", "min": "min", "max": "max", "and": "and", "or": "or",
             "xor": "xor", "inc": "inc", "dec": "dec", "wrxchg": "swap", "storexchg": "swap",
             "cmpst": "cmpst",
             "cmpstore": "cmpstore", "min_num": "fmin", "max_num": "fmax", "rsub": "rsub",
             "cond_sub": "cond_sub", "sub_clamp": "sub_clamp"}
    if op not in table:
        raise NotImplementedOperand(inst.name)
    size = 8 if ty.endswith("64") else 4
    ndw = size // 4
    utype = u32 if size == 4 else u64
    dtype = {"u": utype, "b": utype, "i": np.int32 if size == 4 else np.int64,
             "f": np.float32 if size == 4 else np.float64}[ty[0]]
    kind = table[op]
    fns = {
        "add": lambda o, v: o + v, "sub": lambda o, v: o - v, "rsub": lambda o, v: v - o,
        "and": lambda o, v: o & v, "or": lambda o, v: o | v, "xor": lambda o, v: o ^ v,
        "swap": lambda o, v: v,
        "min": np.fmin if ty[0] == "f" else np.minimum, "max": np.fmax if ty[0] == "f" else np.maximum,
        "fmin": np.fmin, "fmax": np.fmax,
        "inc": lambda o, v: np.where(o >= v, 0, o + 1).astype(o.dtype),
        "dec": lambda o, v: np.where((o == 0) | (o > v), v, o - 1).astype(o.dtype),
        "cond_sub": lambda o, v: np.where(o >= v, o - v, o).astype(o.dtype),
        "sub_clamp": lambda o, v: np.where(v > o, 0, o - v).astype(o.dtype),
    }
    cmpswap = kind in ("cmpst", "cmpstore")
    fn = fns.get(kind)
    data_ops = [op_ for op_ in rest if op_.kind == "vgpr"]
    returns = bool(inst.dsts)
    dst_row = inst.dsts[0].index if returns else 0

    def atomic(b: Batch, m: Any) -> None:
        mask = None if b.exec_all else b.exec
        addr = _lds_address(b, addr_reader, mask, offset)
        wg = _lane_wg(b, mask)
        # unique per (workgroup, address), also for addresses past the workgroup's LDS
        keys = wg.astype(np.int64) << 32 | (addr & 0xFFFFFFFF)
        values = _lane_values(b, b.V, data_ops[0].index, ndw, mask)
        values = np.ascontiguousarray(values).view(utype).reshape(-1).view(dtype)
        cmp = None
        if cmpswap:
            second = _lane_values(b, b.V, data_ops[1].index, ndw, mask)
            second = np.ascontiguousarray(second).view(utype).reshape(-1).view(dtype)
            if kind == "cmpst":
                # gfx9 ds_cmpst: data0 is the compare value, data1 the new value ("DS_CMPST")
                cmp, values = values, second
            else:
                # gfx11/gfx12 ds_cmpstore: data0 is the new value, data1 the compare value
                # (RDNA3/4 ISA "DS_CMPSTORE_B32": src = DATA, cmp = DATA2)
                cmp = second

        def read(k: np.ndarray) -> np.ndarray:
            words = lds_load(m, k >> 32, k & 0xFFFFFFFF, size)
            return np.ascontiguousarray(words).view(utype).reshape(-1).view(dtype)

        def write(k: np.ndarray, v: np.ndarray) -> None:
            words = np.ascontiguousarray(v.astype(dtype)).view(u32).reshape(-1, ndw)
            lds_store(m, k >> 32, k & 0xFFFFFFFF, words, size)
        old = _serial_rmw(read, write, keys, values, fn, cmp)
        if returns:
            _store_lanes(b, b.V, dst_row, np.ascontiguousarray(old).view(u32).reshape(-1, ndw), mask)
    if fn is not None and kind == "add":
        fn._is_add = True  # type: ignore[attr-defined]
    return atomic


def _lds_address(b: Batch, reader, mask, offset: int) -> np.ndarray:
    """ADDR + OFFSET of a DS instruction, a 32-bit sum: a "negative" address plus an offset
    wraps (LLVM folds offsets into DS addresses with negative bases on gfx7+,
    GCNSubtarget::hasUsableDSOffset)."""
    return (_lanes(b, reader, mask) + offset) & 0xFFFFFFFF


def _lanes(b: Batch, reader, mask) -> np.ndarray:
    if reader is None:
        values = np.zeros(b.exec.shape, np.int64)
    else:
        values = np.broadcast_to(np.asarray(reader(b)).astype(np.int64), b.exec.shape)
    return values.reshape(-1) if mask is None else values[mask]


def _ds_permute(inst: Instruction, offset: int):
    """ds_bpermute_b32 (pull: dst[i] = src[addr_i / 4]) / ds_permute_b32 (push); lanes index
    modulo the wave size; an inactive source lane reads 0 (gfx9 ISA "DS_BPERMUTE_B32")."""
    addr = vector_reader(inst.srcs[0], "u32")
    data = vector_reader(inst.srcs[1], "u32")
    row = inst.dsts[0].index
    pull = inst.name == "ds_bpermute_b32"

    def permute(b: Batch, m: Any) -> None:
        lanes = b.lanes
        index = ((np.broadcast_to(addr(b), b.exec.shape).astype(np.int64) + offset) >> 2) % lanes
        src = np.where(b.exec, np.broadcast_to(data(b), b.exec.shape), u32(0))
        rows = np.arange(b.waves)[:, None]
        if pull:
            result = src[rows, index]
        else:
            result = np.zeros(b.exec.shape, u32)
            sel = b.exec
            result[np.broadcast_to(rows, b.exec.shape)[sel], index[sel]] = src[sel]
        np.copyto(b.V[row], result, where=b.exec)
    return permute


def _ds_swizzle(inst: Instruction, offset: int):
    """ds_swizzle_b32: offset[15] = 1 -> quad-permute mode (2 bits per lane of a quad), else
    bitmask mode over groups of 32 lanes: and_mask [4:0], or_mask [9:5], xor_mask [14:10]."""
    data = vector_reader(inst.srcs[-1], "u32")
    row = inst.dsts[0].index

    def swizzle(b: Batch, m: Any) -> None:
        lanes = np.arange(b.lanes)
        if offset & 0x8000:
            quad = lanes & ~3
            sel = (offset >> (2 * (lanes & 3))) & 3
            source = quad + sel
        else:
            and_mask = offset & 0x1F
            or_mask = (offset >> 5) & 0x1F
            xor_mask = (offset >> 10) & 0x1F
            group = lanes & ~31
            source = group + ((((lanes & 31) & and_mask) | or_mask) ^ xor_mask)
        src = np.where(b.exec, np.broadcast_to(data(b), b.exec.shape), u32(0))
        result = src[:, source]
        np.copyto(b.V[row], result, where=b.exec)
    return swizzle
