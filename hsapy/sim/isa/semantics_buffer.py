"""Buffer instructions: MUBUF / MTBUF (gfx9 CDNA, gfx11 RDNA3) and VBUFFER (gfx12 RDNA4).

A buffer instruction names a 128-bit buffer resource (V#) in four SGPRs; each lane's address is

    index  = (idxen ? VGPR index : 0) + (add_tid_enable ? lane id : 0)
    offset = (offen ? VGPR offset : 0) + instruction offset
    linear:   buffer_offset = offset + stride * index
    swizzled: buffer_offset = (index / IS * stride + offset / ES * ES) * IS
                              + (index % IS) * ES + offset % ES
              (IS: index stride, ES: element size)
    address = V#.base + SOFFSET + buffer_offset

(CDNA3 ISA guide, "Vector Memory Buffer Instructions" > "Buffer Addressing"; RDNA4 ISA guide, same
chapter). VGPR offset + instruction offset add in 32 bits for the address (a negative VGPR offset
with a positive instruction offset wraps as on hardware); the range check compares the unsigned
sum without wrapping (saturating), and never includes SOFFSET.

Range checking decides per access whether a lane is in range; an out-of-range load returns 0 (a
format load returns 1 for components whose V# dst_sel is SEL_1), an out-of-range store or atomic
does nothing (an atomic returns 0). Untyped loads and stores of several dwords are checked per
dword; format loads/stores and atomics all or nothing. The rules differ per generation:

- gfx9 (CDNA3 guide, "Range Checking"): private buffer (add_tid_enable and no idxen): never out of
  range; raw buffer (no add_tid, no swizzle, no idxen): out of range when offset >= num_records;
  structured buffer (no add_tid, stride != 0, idxen): when index >= num_records. The guide
  specifies no other combination: the simulator stops naming it.
- gfx11 / gfx12 (RDNA3 / RDNA4 guides, "Range Checking", V#.OOB_SELECT): 0: index >= num_records
  or offset + payload > stride; 1: index >= num_records; 2: num_records == 0; 3: with swizzle and
  stride != 0 as 0, otherwise offset + payload > num_records. ``payload`` is the bytes of the
  checked piece (one dword of a multi-dword access, or the whole access).

glc / slc / dlc / sc0 / sc1 / nt / th / scope only steer caches (and select the returning form of
an atomic): memory here is coherent and synchronous.

The simulator's private memory is not in SimMemory: the private segment buffer V# the executor
writes into s[0:3] (:func:`private_segment_buffer`) has a base address in a window no host
allocation can occupy (:data:`PRIVATE_BUFFER_BASE`, above the x86-64 user half). An access whose
address falls in the window goes to the executing wave's private memory, laid out as the hardware
lays out a wave's scratch (dwords interleaved over the wave's lanes: byte p of lane l is at
``(p // 4) * 4 * wave size + 4 * l + p % 4``), so MUBUF scratch code sees the same bytes as flat
and scratch instructions.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from hsapy.sim.isa.instruction import Instruction
from hsapy.sim.isa.operand_access import NotImplementedOperand, scalar_index, scalar_reader
from hsapy.sim.isa.wave import Batch

u32, u64, i64 = np.uint32, np.uint64, np.int64
MASK32 = 0xFFFFFFFF
MASK48 = (1 << 48) - 1

# The helpers from memory_access.py are imported where they are used, not when this module is:
# the interpreter imports this module at start-up, and the memory semantics modules are first
# imported when a memory instruction is compiled (semantics_mem.py), which is what the compiled
# engine's tracer (jit/trace.py, which rebinds the semantics modules already imported when it
# first traces) has always seen.

# The window of addresses that reach the executing wave's private memory (see the module doc).
PRIVATE_BUFFER_BASE = 1 << 47
PRIVATE_BUFFER_SIZE = 1 << 40

# Cache maintenance: no-ops for coherent, synchronous memory.
CACHE_OPS = frozenset({"buffer_wbl2", "buffer_inv", "buffer_invl2", "buffer_wbinvl1",
                       "buffer_wbinvl1_vol", "buffer_gl0_inv", "buffer_gl1_inv"})


def private_segment_buffer(family: str, wave_size: int, private_size: int) -> tuple[int, ...]:
    """The four dwords of the private segment buffer V# for s[0:3] (kernel_code_properties bit 0).

    gfx9 as ROCr programs it (AqlQueue::InitScratchSRD): swizzled, stride 0, dst_sel XYZW,
    32-bit UINT format, element size 4, index stride 64, add_tid_enable. gfx10+ (not used by
    LLVM's code for gfx11/gfx12, which addresses scratch through flat scratch): the same with
    the index stride of the wave size and OOB_SELECT 2. num_records covers one wave.
    """
    base = PRIVATE_BUFFER_BASE
    records = min(MASK32, max(4, private_size) * wave_size)
    dst_sel = 4 | 5 << 3 | 6 << 6 | 7 << 9
    if family == "gfx9":
        word1 = (base >> 32) & 0xFFFF | 1 << 31                   # SWIZZLE_ENABLE [63]
        word3 = dst_sel | 4 << 12 | 4 << 15 | 1 << 19 | 3 << 21 | 1 << 23
    else:
        word1 = (base >> 32) & 0xFFFF | 1 << 30                   # SWIZZLE_ENABLE [63:62] = 1
        index_stride = 3 if wave_size == 64 else 2
        word3 = dst_sel | 20 << 12 | index_stride << 21 | 1 << 23 | 2 << 28
    return base & MASK32, word1, records, word3


# --- the resource ------------------------------------------------------------------------------

@dataclass
class Resource:
    """A V# per wave (arrays of ``[W]``), the fields the interpreter uses."""

    base: np.ndarray
    stride: np.ndarray
    records: np.ndarray
    swizzle: np.ndarray
    element: np.ndarray
    index_stride: np.ndarray
    add_tid: np.ndarray
    oob: np.ndarray
    dst_sel: np.ndarray          # [W, 4]
    format: np.ndarray           # gfx9: NFMT << 4 | DFMT; gfx11/gfx12: unified format


def resource(words: np.ndarray, family: str) -> Resource:
    """Decode V# dwords ``uint32[W, 4]`` (CDNA3 guide "Buffer Resource"; RDNA3/RDNA4 guides,
    "Buffer Resource Descriptor")."""
    w = words.astype(i64)
    base = (w[:, 0] | (w[:, 1] & 0xFFFF) << 32)
    stride = (w[:, 1] >> 16) & 0x3FFF
    records = w[:, 2]
    dst_sel = np.stack([(w[:, 3] >> (3 * k)) & 7 for k in range(4)], axis=1)
    index_stride = 8 << ((w[:, 3] >> 21) & 3)
    add_tid = ((w[:, 3] >> 23) & 1).astype(bool)
    if family == "gfx9":
        swizzle = ((w[:, 1] >> 31) & 1).astype(bool)
        element = np.full_like(base, 4)     # gfx9 swizzles 4-byte elements only
        oob = np.full_like(base, -1)
        fmt = ((w[:, 3] >> 12) & 7) << 4 | ((w[:, 3] >> 15) & 15)
    else:
        mode = (w[:, 1] >> 30) & 3
        swizzle = mode != 0
        element = np.where(mode != 0, 2 << np.maximum(mode, 1), 4)   # 1: 4 bytes, 2: 8, 3: 16
        oob = (w[:, 3] >> 28) & 3
        fmt = (w[:, 3] >> 12) & (0x3F if family == "gfx12" else 0x7F)
    return Resource(base, stride, records, swizzle, element, index_stride, add_tid, oob,
                    dst_sel, fmt)


def _resource_reader(inst: Instruction) -> Callable[[Batch], np.ndarray]:
    """``uint32[W, 4]`` V# words of the instruction's resource operand (null reads as zeros)."""
    op = next(op for op in inst.srcs if op.count == 4 and op.kind in ("sgpr", "ttmp", "special"))
    row = scalar_index(op)
    if row < 0:
        return lambda b: np.zeros((b.waves, 4), u32)
    return lambda b: b.S[:, row:row + 4]


# --- lanes and addresses -----------------------------------------------------------------------

@dataclass
class Lanes:
    """The active lanes of a batch, flattened: ``wave`` row and ``lane`` id of each."""

    mask: np.ndarray | None        # None: every lane of the batch
    wave: np.ndarray
    lane: np.ndarray

    @property
    def count(self) -> int:
        return self.wave.size


def active_lanes(b: Batch) -> Lanes:
    """Every EXEC lane of ``b``, in wave-major lane order."""
    if b.exec_all:
        waves = np.repeat(np.arange(b.waves), b.lanes)
        lanes = np.tile(np.arange(b.lanes, dtype=i64), b.waves)
        return Lanes(None, waves, lanes)
    waves, lanes = np.nonzero(b.exec)
    return Lanes(b.exec, waves, lanes.astype(i64))


def _lane_values(regs: np.ndarray, row: int, lanes: Lanes) -> np.ndarray:
    if lanes.mask is None:
        return regs[row].reshape(-1)
    return regs[row][lanes.mask]


def _put_lanes(regs: np.ndarray, row: int, values: np.ndarray, lanes: Lanes) -> None:
    if lanes.mask is None:
        regs[row].reshape(-1)[:] = values
    else:
        regs[row][lanes.mask] = values


class Addressing:
    """The address parts of one buffer instruction, compiled once."""

    def __init__(self, inst: Instruction, family: str) -> None:
        f = inst.fields
        self.family = family
        self.idxen = bool(f.get("idxen"))
        self.offen = bool(f.get("offen"))
        offset = int(f.get("offset", 0))
        if family == "gfx12" and offset & 0x800000:
            # LLVM prints it signed, the RDNA4 guide does not say how a negative one is
            # range-checked, and no compiler emits one
            raise NotImplementedOperand("VBUFFER instruction offset with bit 23 set")
        self.inst_offset = offset
        self.vaddr = int(f.get("vaddr", 0))
        self.resource = _resource_reader(inst)
        soffset = [op for op in inst.srcs if op.count == 1 and op.kind != "vgpr"
                   and op.kind != "agpr"]
        self.soffset = scalar_reader(soffset[-1], "u32") if soffset else (lambda b: u32(0))
        self.text = inst.text()

    def lanes(self, b: Batch, lanes: Lanes) -> tuple[Resource, np.ndarray, np.ndarray, np.ndarray]:
        """(V#, index, unwrapped offset, per-lane base + soffset) of the active lanes."""
        r = resource(self.resource(b), self.family)
        index = np.zeros(lanes.count, i64)
        offset = np.full(lanes.count, self.inst_offset, i64)
        row = self.vaddr
        if self.idxen:
            index += _lane_values(b.V, row, lanes).astype(i64)
            row += 1
        if self.offen:
            offset += _lane_values(b.V, row, lanes).astype(i64)
        tid = r.add_tid[lanes.wave]
        if tid.any():
            index += np.where(tid, lanes.lane, 0)
        soffset = np.broadcast_to(np.asarray(self.soffset(b)).astype(i64), (b.waves,))
        start = (r.base + soffset)[lanes.wave]
        return r, index, offset, start

    def address(self, r: Resource, lanes: Lanes, index: np.ndarray, offset: np.ndarray,
                start: np.ndarray) -> np.ndarray:
        """``uint64`` address of each lane's byte ``offset`` (see the module doc)."""
        w = lanes.wave
        stride = r.stride[w]
        wrapped = offset & MASK32
        linear = wrapped + stride * index
        swz = r.swizzle[w]
        if swz.any():
            es, ist = r.element[w], r.index_stride[w]
            swizzled = ((index // ist) * stride + (wrapped // es) * es) * ist \
                + (index % ist) * es + wrapped % es
            linear = np.where(swz, swizzled, linear)
        return ((start + linear) & MASK48).astype(u64)

    def in_range(self, r: Resource, lanes: Lanes, index: np.ndarray, offset: np.ndarray,
                 payload: int) -> np.ndarray:
        """Which lanes' access of ``payload`` bytes at ``offset`` passes the range check."""
        w = lanes.wave
        records = r.records[w]
        if self.family == "gfx9":
            tid = r.add_tid[w]
            private = tid & (not self.idxen)
            raw = ~tid & ~r.swizzle[w] & (not self.idxen)
            structured = ~tid & (r.stride[w] != 0) & self.idxen
            unspecified = ~(private | raw | structured)
            if unspecified.any():
                k = int(np.flatnonzero(unspecified)[0])
                raise NotImplementedInstructionError(
                    f"{self.text}: the CDNA3 guide specifies no range check for a V# with "
                    f"add_tid_enable={int(tid[k])}, swizzle_enable={int(r.swizzle[w][k])}, "
                    f"stride={int(r.stride[w][k])} used with idxen={int(self.idxen)}")
            if self.idxen:
                return private | (index < records)
            return private | (offset < records)
        oob = r.oob[w]
        stride = r.stride[w]
        end = offset + payload
        structured = (index < records) & (end <= stride)
        raw = end <= records
        swz_structured = r.swizzle[w] & (stride != 0)
        return np.select([oob == 0, oob == 1, oob == 2],
                         [structured, index < records, records != 0],
                         np.where(swz_structured, structured, raw))


class NotImplementedInstructionError(Exception):
    """Raised at run time for a case the ISA guides leave unspecified (see semantics.py)."""


def _reraise(fn: Callable) -> Callable:
    """Turn the run-time 'unspecified' error into the interpreter's not-implemented fault."""
    def run(b: Batch, m: Any) -> None:
        try:
            return fn(b, m)
        except NotImplementedInstructionError as exc:
            from hsapy.sim.isa.closures import NotImplementedInstruction

            raise NotImplementedInstruction(str(exc)) from None
    return run


# --- memory behind the addresses ---------------------------------------------------------------

def _split_private(addr: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(global, private) masks of the in-range lanes."""
    private = ok & (addr >= u64(PRIVATE_BUFFER_BASE)) & \
        (addr < u64(PRIVATE_BUFFER_BASE + PRIVATE_BUFFER_SIZE))
    return ok & ~private, private


def _private_location(b: Batch, m: Any, lanes: Lanes, sel: np.ndarray, addr: np.ndarray,
                      size: int) -> tuple[np.ndarray, np.ndarray]:
    """(scratch row, private offset) of the selected lanes' window addresses: the inverse of the
    hardware's per-wave scratch interleave (see the module doc)."""
    rel = (addr[sel] - u64(PRIVATE_BUFFER_BASE)).astype(i64)
    width = 4 * b.lanes
    within = rel % width
    if ((within % 4) + size > 4).any():
        raise NotImplementedInstructionError(
            "a private-segment buffer access that is not dword-aligned crosses lanes of the "
            "scratch interleave")
    owner = within // 4
    offset = (rel // width) * 4 + within % 4
    rows = lanes.wave[sel] * b.lanes + owner
    return rows, offset


def _load_dwords(b: Batch, m: Any, lanes: Lanes, addr: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """One dword per lane at ``addr`` where ``ok`` (0 elsewhere)."""
    from hsapy.sim.isa.memory_access import gather_dwords, scratch_load

    out = np.zeros(addr.size, u32)
    glob, private = _split_private(addr, ok)
    if glob.any():
        out[glob] = gather_dwords(m, addr[glob], 1)[:, 0]
    if private.any():
        rows, offs = _private_location(b, m, lanes, private, addr, 4)
        out[private] = scratch_load(m, b, rows, offs, 4)[:, 0]
    return out


def _store_dwords(b: Batch, m: Any, lanes: Lanes, addr: np.ndarray, ok: np.ndarray,
                  values: np.ndarray) -> None:
    from hsapy.sim.isa.memory_access import scatter_dwords, scratch_store

    glob, private = _split_private(addr, ok)
    if glob.any():
        scatter_dwords(m, addr[glob], values[glob][:, None])
    if private.any():
        rows, offs = _private_location(b, m, lanes, private, addr, 4)
        scratch_store(m, b, rows, offs, values[private][:, None], 4)


def _load_narrow(b: Batch, m: Any, lanes: Lanes, addr: np.ndarray, ok: np.ndarray,
                 size: int) -> np.ndarray:
    """``size`` (1 or 2) bytes per lane as uint32 (zero-extended; 0 out of range)."""
    from hsapy.sim.isa.memory_access import gather_bytes, scratch_load

    out = np.zeros(addr.size, u32)
    glob, private = _split_private(addr, ok)
    if glob.any():
        raw = gather_bytes(m, addr[glob], size)
        out[glob] = np.ascontiguousarray(raw).view(np.uint8 if size == 1 else np.uint16) \
            .reshape(-1).astype(u32)
    if private.any():
        rows, offs = _private_location(b, m, lanes, private, addr, size)
        words = scratch_load(m, b, rows, offs, size)[:, 0]
        out[private] = words & u32((1 << (8 * size)) - 1)
    return out


def _store_narrow(b: Batch, m: Any, lanes: Lanes, addr: np.ndarray, ok: np.ndarray,
                  values: np.ndarray, size: int) -> None:
    from hsapy.sim.isa.memory_access import scatter_bytes, scratch_store

    glob, private = _split_private(addr, ok)
    if glob.any():
        scatter_bytes(m, addr[glob], values[glob], size)
    if private.any():
        rows, offs = _private_location(b, m, lanes, private, addr, size)
        scratch_store(m, b, rows, offs, values[private][:, None], size)


# --- untyped loads and stores ------------------------------------------------------------------

_WIDTHS = {  # mnemonic tail -> (bytes, kind): "d" dwords, "u"/"s" zero/sign-extended sub-dword
    "dword": (4, "d"), "dwordx2": (8, "d"), "dwordx3": (12, "d"), "dwordx4": (16, "d"),
    "b32": (4, "d"), "b64": (8, "d"), "b96": (12, "d"), "b128": (16, "d"),
    "ubyte": (1, "u"), "sbyte": (1, "s"), "ushort": (2, "u"), "sshort": (2, "s"),
    "u8": (1, "u"), "i8": (1, "s"), "u16": (2, "u"), "i16": (2, "s"),
    "byte": (1, "u"), "short": (2, "u"), "b8": (1, "u"), "b16": (2, "u"),
}


def _untyped_width(name: str) -> tuple[int, str, bool, bool]:
    """(bytes, kind, d16, d16_hi) of buffer_load_* / buffer_store_* (gfx9 and gfx11+ names)."""
    tail = name.split("_", 2)[2]
    tail = re.sub(r"^d16_hi_(\w+)$", r"\1_d16_hi", tail)
    tail = re.sub(r"^d16_(\w+)$", r"\1_d16", tail)
    hi = tail.endswith("_d16_hi")
    d16 = "_d16" in tail
    tail = tail.replace("_d16_hi", "").replace("_d16", "")
    if tail not in _WIDTHS:
        raise NotImplementedOperand(f"buffer access width of {name}")
    size, kind = _WIDTHS[tail]
    return size, kind, d16, hi


def _data_file(inst: Instruction, b: Batch) -> np.ndarray:
    return b.A if inst.fields.get("acc") and inst.family == "gfx9" else b.V


def _extend(raw: np.ndarray, size: int, kind: str) -> np.ndarray:
    if kind == "s":
        return raw.astype(np.uint16 if size == 2 else np.uint8).view(
            np.int16 if size == 2 else np.int8).astype(np.int32).view(u32)
    return raw


def _untyped_load(inst: Instruction, addressing: Addressing) -> Callable:
    size, kind, d16, hi = _untyped_width(inst.name)
    row = int(inst.fields["vdata"])
    lds = bool(inst.fields.get("lds"))
    if lds and (size > 4 or d16):
        raise NotImplementedOperand(f"{inst.name} lds form")

    def load(b: Batch, m: Any) -> None:
        lanes = active_lanes(b)
        r, index, offset, start = addressing.lanes(b, lanes)
        if kind == "d":
            words = []
            for k in range(size // 4):
                ok = addressing.in_range(r, lanes, index, offset + 4 * k, 4)
                addr = addressing.address(r, lanes, index, offset + 4 * k, start)
                words.append(_load_dwords(b, m, lanes, addr, ok))
            if lds:
                _to_lds(inst, b, m, lanes, words[0])
                return
            regs = _data_file(inst, b)
            for k, values in enumerate(words):
                _put_lanes(regs, row + k, values, lanes)
            return
        ok = addressing.in_range(r, lanes, index, offset, size)
        addr = addressing.address(r, lanes, index, offset, start)
        value = _extend(_load_narrow(b, m, lanes, addr, ok, size), size, kind)
        if lds:
            # the LDS return path takes the extended dword (CDNA3 guide 9.1.9 lists the byte
            # and short loads among the loads to LDS; see semantics_vmem._global_load_lds)
            _to_lds(inst, b, m, lanes, value)
            return
        regs = _data_file(inst, b)
        if d16:   # write one half of the register, keep the other
            current = _lane_values(regs, row, lanes)
            value = value & u32(0xFFFF)
            value = (current & u32(0xFFFF)) | (value << u32(16)) if hi else \
                (current & u32(0xFFFF0000)) | value
        _put_lanes(regs, row, value, lanes)
    return load


def _to_lds(inst: Instruction, b: Batch, m: Any, lanes: Lanes, values: np.ndarray) -> None:
    """gfx9 ``lds`` form: each lane's dword goes to LDS at M0[15:0] + instruction offset +
    4 * lane (CDNA3 guide 9.1.9, "Memory Buffer Load to LDS": LDS_offset is M0[15:0]; LLVM
    applies the immediate offset to both addresses)."""
    from hsapy.sim.isa.memory_access import lds_store

    m0 = (b.S[:, 124].astype(i64) & 0xFFFF)[lanes.wave]
    addr = m0 + int(inst.fields.get("offset", 0)) + 4 * lanes.lane
    lds_store(m, b.wg[lanes.wave], addr, values[:, None], 4)


def _untyped_store(inst: Instruction, addressing: Addressing) -> Callable:
    size, kind, d16, hi = _untyped_width(inst.name)
    row = int(inst.fields["vdata"])

    def store(b: Batch, m: Any) -> None:
        lanes = active_lanes(b)
        r, index, offset, start = addressing.lanes(b, lanes)
        regs = _data_file(inst, b)
        if kind == "d":
            for k in range(size // 4):
                ok = addressing.in_range(r, lanes, index, offset + 4 * k, 4)
                addr = addressing.address(r, lanes, index, offset + 4 * k, start)
                _store_dwords(b, m, lanes, addr, ok, _lane_values(regs, row + k, lanes))
            return
        ok = addressing.in_range(r, lanes, index, offset, size)
        addr = addressing.address(r, lanes, index, offset, start)
        value = _lane_values(regs, row, lanes)
        if hi:
            value = value >> u32(16)
        _store_narrow(b, m, lanes, addr, ok, value, size)
    return store


# --- atomics -----------------------------------------------------------------------------------

def _atomic(inst: Instruction, addressing: Addressing) -> Callable:
    from hsapy.sim.isa.memory_access import (
        atomic_operation,
        atomic_types,
        dword_elements,
        global_atomic,
        global_rmw,
    )

    op, kind, fn, size = atomic_operation(inst.name)
    f = inst.fields
    returns = bool({"gfx9": f.get("sc0"), "gfx11": f.get("glc")}.get(inst.family,
                                                                     f.get("th", 0) & 1))
    row = int(f["vdata"])
    ndw = size // 4
    utype, dtype = atomic_types(kind, size)
    cmpswap = kind == "c"

    def atomic(b: Batch, m: Any) -> None:
        lanes = active_lanes(b)
        r, index, offset, start = addressing.lanes(b, lanes)
        ok = addressing.in_range(r, lanes, index, offset, size)
        addr = addressing.address(r, lanes, index, offset, start)
        regs = _data_file(inst, b)
        words = np.stack([_lane_values(regs, row + k, lanes)
                          for k in range(2 * ndw if cmpswap else ndw)], axis=1)
        values = dword_elements(words[:, :ndw], utype, dtype)
        cmp = None
        if cmpswap:
            cmp = dword_elements(words[:, ndw:], utype, dtype)
        glob, private = _split_private(addr, ok)
        if private.any():
            raise NotImplementedInstructionError(
                f"{inst.text()}: a buffer atomic on the private segment")
        old = np.zeros(lanes.count, dtype)
        if glob.any():
            sel = np.flatnonzero(glob)
            read, write = global_rmw(m, ndw, utype, dtype)
            old[sel] = global_atomic(read, write, addr[sel], values[sel], fn,
                                     None if cmp is None else cmp[sel])
        if returns:
            out = np.ascontiguousarray(old).view(u32).reshape(-1, ndw)
            for k in range(ndw):
                _put_lanes(regs, row + k, out[:, k], lanes)
    return atomic


# --- typed (format) loads and stores -----------------------------------------------------------

@dataclass(frozen=True)
class BufferFormat:
    """A buffer data format: component widths in bits and the numeric format."""

    bits: tuple[int, ...]
    num: str

    @property
    def size(self) -> int:
        return sum(self.bits) // 8


_DATA_FORMATS = {
    "8": (8,), "16": (16,), "8_8": (8, 8), "32": (32,), "16_16": (16, 16),
    "8_8_8_8": (8, 8, 8, 8), "32_32": (32, 32), "16_16_16_16": (16, 16, 16, 16),
    "32_32_32": (32, 32, 32), "32_32_32_32": (32, 32, 32, 32),
}


@cache
def buffer_format(family: str, value: int) -> BufferFormat | str:
    """The format with field value ``value``, or the reason it is not supported. Names come from
    the generated BUFFMT table (LLVM's spelling of the ISA guides' format enumerations)."""
    from hsapy.sim.isa.decoder import FAMILIES, _tables

    text = _tables(FAMILIES[family]).get("BUFFMT", {}).get(str(value))
    if text is None:
        return f"format {value}"
    if family == "gfx9":
        data, num = "8", "UNORM"            # the defaults LLVM leaves out
        for part in text.strip("[]").split(","):
            if part.startswith("BUF_DATA_FORMAT_"):
                data = part[len("BUF_DATA_FORMAT_"):]
            elif part.startswith("BUF_NUM_FORMAT_"):
                num = part[len("BUF_NUM_FORMAT_"):]
        name = f"BUF_DATA_FORMAT_{data},BUF_NUM_FORMAT_{num}"
    else:
        name = text.strip("[]") or "BUF_FMT_8_UNORM"
        match = re.match(r"^BUF_FMT_([0-9_]+?)_([A-Z]+)$", name)
        if match is None:
            return name
        data, num = match.groups()
    if data not in _DATA_FORMATS or num not in ("UINT", "SINT", "FLOAT", "USCALED", "SSCALED"):
        return name
    if num == "FLOAT" and 8 in _DATA_FORMATS[data]:
        return name
    return BufferFormat(_DATA_FORMATS[data], num)


def _typed(inst: Instruction, addressing: Addressing) -> Callable:
    # gfx9 buffer_load_format_d16_hi_x, gfx11+ buffer_load_d16_hi_format_x, tbuffer_* alike
    tokens = inst.name.split("_")
    direction, comps = tokens[1], tokens[-1]
    if direction not in ("load", "store") or comps not in ("x", "xy", "xyz", "xyzw"):
        raise NotImplementedOperand(inst.name)
    d16 = "d16" in tokens
    hi = "hi" in tokens
    count = len(comps)
    family = inst.family
    fields = inst.fields
    fixed = None
    if inst.name.startswith("tbuffer"):
        fixed = fields["dfmt"] | fields["nfmt"] << 4 if family == "gfx9" else fields["format"]
    row = int(fields["vdata"])
    if fields.get("lds"):
        raise NotImplementedOperand(f"{inst.name} lds form")

    def format_of(r: Resource, lanes: Lanes) -> BufferFormat:
        values = {fixed} if fixed is not None else set(np.unique(r.format[lanes.wave]).tolist())
        if len(values) != 1:
            raise NotImplementedInstructionError(
                f"{inst.text()}: waves of one batch use different buffer formats")
        fmt = buffer_format(family, int(values.pop()))
        if isinstance(fmt, str):
            raise NotImplementedInstructionError(
                f"{inst.text()}: buffer format {fmt} is not implemented")
        if d16 and not all(bits <= 16 and fmt.num in ("UINT", "SINT", "FLOAT")
                           for bits in fmt.bits):
            raise NotImplementedInstructionError(
                f"{inst.text()}: 16-bit data from format {fmt.bits} {fmt.num}")
        return fmt

    def load(b: Batch, m: Any) -> None:
        lanes = active_lanes(b)
        if not lanes.count:
            return
        r, index, offset, start = addressing.lanes(b, lanes)
        fmt = format_of(r, lanes)
        ok = addressing.in_range(r, lanes, index, offset, fmt.size)
        comps = _read_components(b, m, lanes, addressing, r, index, offset, start, ok, fmt, d16)
        one = _one(fmt, d16)
        # components the format lacks read as 0, alpha as 1
        defaults = [np.zeros(lanes.count, u32)] * 3 + [np.full(lanes.count, one, u32)]
        full = comps + defaults[len(comps):]
        sel = r.dst_sel[lanes.wave]
        out = []
        for k in range(count):
            s = sel[:, k]
            if ((s == 2) | (s == 3)).any():
                raise NotImplementedInstructionError(f"{inst.text()}: reserved V# dst_sel")
            value = np.select([s == 0, s == 1, s == 4, s == 5, s == 6],
                              [u32(0), u32(one), full[0], full[1], full[2]], full[3]).astype(u32)
            # out of range: 0, or 1 where dst_sel is SEL_1
            value = np.where(ok, value, np.where(s == 1, u32(one), u32(0))).astype(u32)
            out.append(value)
        regs = _data_file(inst, b)
        if not d16:
            for k, value in enumerate(out):
                _put_lanes(regs, row + k, value, lanes)
            return
        halves = [v & u32(0xFFFF) for v in out]
        if hi:      # d16_hi_x: the high half, the low half kept
            current = _lane_values(regs, row, lanes)
            _put_lanes(regs, row, (current & u32(0xFFFF)) | (halves[0] << u32(16)), lanes)
            return
        for k in range(0, count, 2):
            word = halves[k] if k + 1 >= count else halves[k] | (halves[k + 1] << u32(16))
            if k + 1 >= count:
                current = _lane_values(regs, row + k // 2, lanes)
                word = (current & u32(0xFFFF0000)) | word
            _put_lanes(regs, row + k // 2, word, lanes)

    def store(b: Batch, m: Any) -> None:
        lanes = active_lanes(b)
        if not lanes.count:
            return
        r, index, offset, start = addressing.lanes(b, lanes)
        fmt = format_of(r, lanes)
        if count > len(fmt.bits):
            raise NotImplementedInstructionError(
                f"{inst.text()}: {count} components into a format of {len(fmt.bits)}")
        # stores need no rounding or clamping: 32-bit components, 16-bit ones from d16 data,
        # or f32 data to FLOAT 16 (IEEE round to nearest even)
        widths = set(fmt.bits)
        exact = fmt.num in ("UINT", "SINT", "FLOAT") and (
            (widths == {32} and not d16) or (widths == {16} and (d16 or fmt.num == "FLOAT")))
        if not exact:
            raise NotImplementedInstructionError(
                f"{inst.text()}: conversion of stored data to {fmt.bits} {fmt.num}")
        regs = _data_file(inst, b)
        if d16:
            words = [_lane_values(regs, row + k // 2, lanes) for k in range(count)]
            if hi:
                words = [words[0] >> u32(16)]
            else:
                words = [(w >> u32(16 * (k % 2))) & u32(0xFFFF) for k, w in enumerate(words)]
        else:
            words = [_lane_values(regs, row + k, lanes) for k in range(count)]
        ok = addressing.in_range(r, lanes, index, offset, fmt.size)
        position = 0
        for k, bits in enumerate(fmt.bits[:count]):    # components not supplied stay as they are
            value = words[k]
            if bits == 16 and fmt.num == "FLOAT" and not d16:   # f32 -> f16, round to nearest
                value = value.view(np.float32).astype(np.float16).view(np.uint16).astype(u32)
            piece = offset + position
            addr = addressing.address(r, lanes, index, piece, start)
            if bits == 32:
                _store_dwords(b, m, lanes, addr, ok, value)
            else:
                _store_narrow(b, m, lanes, addr, ok, value, bits // 8)
            position += bits // 8
    return _reraise(load if direction == "load" else store)


def _one(fmt: BufferFormat, d16: bool) -> int:
    """The value of a missing alpha component / SEL_1: 1, or 1.0 for float results."""
    if fmt.num in ("UINT", "SINT"):
        return 1
    return 0x3C00 if d16 else 0x3F800000


def _read_components(b, m, lanes, addressing, r, index, offset, start, ok, fmt, d16) -> list:
    """Each component of the format converted to what the load returns: a dword, or for d16
    loads a 16-bit value in the low half."""
    out = []
    position = 0
    for bits in fmt.bits:
        piece = offset + position
        addr = addressing.address(r, lanes, index, piece, start)
        if bits == 32:
            raw = _load_dwords(b, m, lanes, addr, ok)
        else:
            raw = _load_narrow(b, m, lanes, addr, ok, bits // 8)
        out.append(_convert_load(raw, bits, fmt.num, d16))
        position += bits // 8
    return out


def _convert_load(raw: np.ndarray, bits: int, num: str, d16: bool) -> np.ndarray:
    """A component's bits to its dword (CDNA3/RDNA4 guides, "Data Format" / "Numeric Format"):
    UINT zero-extends, SINT sign-extends, FLOAT widens f16 to f32 (d16 loads keep the f16),
    USCALED/SSCALED convert the integer to f32."""
    if bits == 32:
        if num == "USCALED":
            return raw.astype(np.float32).view(u32)
        if num == "SSCALED":
            return raw.view(np.int32).astype(np.float32).view(u32)
        return raw
    signed = raw.astype(np.uint16 if bits == 16 else np.uint8).view(
        np.int16 if bits == 16 else np.int8).astype(np.int32)
    if num == "UINT":
        return raw
    if num == "SINT":
        return signed.view(u32)
    if num == "USCALED":
        return raw.astype(np.float32).view(u32)
    if num == "SSCALED":
        return signed.astype(np.float32).view(u32)
    if d16:             # FLOAT 16 kept as f16
        return raw
    return raw.astype(np.uint16).view(np.float16).astype(np.float32).view(u32)


# --- compile -----------------------------------------------------------------------------------

def compile_buffer(inst: Instruction, info: Any) -> Callable:
    """The closure of a MUBUF / MTBUF / VBUFFER instruction (NotImplementedOperand when the
    interpreter does not implement it)."""
    name = inst.name
    if name in CACHE_OPS:
        return lambda b, m: None
    family = inst.family
    addressing = Addressing(inst, family)
    if "_atomic_" in name:
        return _reraise(_atomic(inst, addressing))
    if "format" in name:
        return _typed(inst, addressing)
    if name.startswith("buffer_load_lds_"):
        raise NotImplementedOperand(f"{name} (gfx11 load to LDS)")
    if name.startswith("buffer_load_"):
        return _reraise(_untyped_load(inst, addressing))
    if name.startswith("buffer_store_"):
        return _reraise(_untyped_store(inst, addressing))
    raise NotImplementedOperand(name)

