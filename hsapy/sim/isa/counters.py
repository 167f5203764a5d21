"""Per-dispatch counters of the simulator: the events an execution engine reports, and what is
derived from them (docs/profile.md says what each counter means and where its definition comes
from).

An engine reports only two kinds of events, and only while someone profiles
(:func:`recorder_for` returns None otherwise, checked once per dispatch):

- :meth:`DispatchRecorder.executed` -- ``waves`` waves executed the static instruction ``inst``
  with ``lanes`` EXEC lanes in total;
- :meth:`DispatchRecorder.accessed` -- the per-lane addresses of one execution of a memory
  instruction (``uint64[W, L]``, ``[W, L, 2]`` for the two-address LDS forms, ``[W, 1]`` for
  scalar memory), with the mask of lanes that access memory.

Everything else -- instruction classes, FLOPs by precision, bytes by address space, LDS bank
conflicts, the active-lane ratio, per-instruction counts -- is derived here from those events
and the decoded instruction (:func:`facts`), so every engine that reports the same events gets
the same counters, whatever way it batches waves.

The interpreter reports through :func:`wrap`: a profiled program's closures call
``executed`` and, for memory instructions, compute the addresses from the decoded operands and
the batch state just before the instruction runs (:func:`address_model`) and call
``accessed``. Programs compiled without profiling contain none of this.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Protocol

import numpy as np

from hsapy.sim.isa.instruction import Instruction
from hsapy.sim.isa.wave import Batch

__all__ = ["InstructionFacts", "facts", "DispatchRecorder", "DispatchCounters", "recorder_for",
           "add_listener", "remove_listener", "wrap", "address_model", "LDS_BANKS",
           "LDS_BANK_BYTES", "LDS_PASS_BYTES"]

# LDS bank layout, the same on CDNA3 and RDNA4 for one wave: 32 banks, each one dword wide
# (CDNA3 ISA guide, "Local Data Share"; RDNA4 ISA guide, "Local Data Share": 64 dword banks per
# WGP, 32 of them serving each pair of SIMDs). A wave's access is served in passes of 128 bytes
# of lane data (32 banks x 4 bytes): 32 lanes of a b32 access, 16 of b64, 8 of b128 (ROCm,
# Composable Kernel "Understanding AMD GPU LDS and Bank Conflicts").
LDS_BANKS = 32
LDS_BANK_BYTES = 4
LDS_PASS_BYTES = LDS_BANKS * LDS_BANK_BYTES

U64 = np.uint64
_NONE = np.uint64((1 << 64) - 1)              # "no line" in a sorted row of line numbers
_NONE_I64 = np.int64((1 << 63) - 1)


# --- what an instruction is -----------------------------------------------------------------------

@dataclass(frozen=True)
class InstructionFacts:
    """What the counters need to know about one static instruction, from its decoded form.

    ``category``: the rocprof counter it counts in -- "VALU", "SALU", "SMEM", "LDS", "VMEM",
    "FLAT" (FLAT, GLOBAL and SCRATCH encodings), "BRANCH", "SENDMSG" or "OTHER" (waits,
    barriers, s_endpgm, s_nop, cache write-back and invalidate instructions, ...: only in
    SQ_INSTS). ``space`` is the memory it touches
    (None, "global", "flat" -- global, LDS or private by address --, "lds", "private",
    "scalar", "buffer" -- global or the private segment buffer by address) and ``access``
    "read", "write" or "atomic". ``size`` is the bytes of one element a lane (a wave, for SMEM)
    accesses, ``elements`` the separately addressed elements per lane. ``flops`` is the
    floating-point operations per active lane (per wave for scalar float and matrix
    instructions: ``per_wave``), in ``precision`` ("fp64", "fp32", "fp16", "bf16", "fp8");
    ``int_ops`` the integer multiply-adds x 2 of a matrix instruction per wave."""

    category: str
    matrix: bool = False
    space: str | None = None
    access: str | None = None
    size: int = 0
    elements: int = 1
    flops: int = 0
    per_wave: bool = False
    precision: str | None = None
    int_ops: int = 0

    @property
    def is_memory(self) -> bool:
        """Whether the instruction moves data (an ``accessed`` event is expected)."""
        return self.space is not None


_VALU_ENCODINGS = frozenset({"VOP1", "VOP2", "VOPC", "VOP3", "VOP3SD", "VOP3P", "VOPD"})
_SALU_ENCODINGS = frozenset({"SOP1", "SOP2", "SOPC", "SOPK"})
_BRANCHES = frozenset({"s_setpc_b64", "s_swappc_b64", "s_call_b64", "s_rfe_b64",
                       "s_cbranch_join", "s_cbranch_g_fork", "s_cbranch_i_fork"})
_FMA_OPS = ("fma", "fmac", "mac", "mad", "madmk", "madak", "fmamk", "fmaak")
_TRANS_OPS = frozenset({"exp", "log", "rcp", "rsq", "sqrt", "sin", "cos", "rcp_iflag",
                        "exp_legacy", "log_legacy", "rsq_clamp", "rcp_clamp", "rsq_legacy",
                        "rcp_legacy", "log_clamp"})
_FLOAT_TYPE = re.compile(r"^(?P<op>[a-z0-9_]+?)_(?P<ty>f16|bf16|f32|f64)$")
_PRECISION = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64", "xf32": "fp32",
              "fp8": "fp8", "bf8": "fp8"}


def _float_work(name: str) -> tuple[int, str | None]:
    """(FLOPs per element, precision) of a float ALU mnemonic without its v_/s_ prefix:
    an FMA/MAD counts 2, an add, subtract, multiply or transcendental 1, as rocprof-compute's
    FLOP metrics count VALU instructions (SQ_INSTS_VALU_{ADD,MUL,TRANS}_F* once, FMA_F* twice);
    min/max, compares, conversions and moves count 0. A dot product counts its multiplies and
    adds; mixed-precision FMAs count in their f16 inputs' precision."""
    if name.startswith(("dot2", "dot2c")) and name.endswith(("f16", "bf16")):
        # v_dot2_f32_f16 / v_dot2c_f32_f16 / v_dot2_f32_bf16: 2 products + 2 sums
        return 4, "bf16" if name.endswith("bf16") else "fp16"
    match = _FLOAT_TYPE.match(name)
    if match is None:
        return 0, None
    op, ty = match.group("op"), match.group("ty")
    precision = _PRECISION[ty]
    head = op.split("_")[0]
    if op.startswith(("fma_mix", "mad_mix")):
        return 2, "fp16"
    if head in _FMA_OPS or op in ("div_fmas", "fma_legacy", "mac_legacy", "mad_legacy",
                                  "fmac_legacy"):
        return 2, precision
    if op in ("add", "sub", "subrev", "mul", "mul_legacy"):
        return 1, precision
    if op in _TRANS_OPS:
        return 1, precision
    return 0, None


@cache
def _facts_of(family: str, encoding: str, name: str, ndst: int, pair: str | None,
              dst_count: int) -> InstructionFacts:
    if encoding in _VALU_ENCODINGS:
        from hsapy.sim.isa.semantics_matrix import matrix_op

        op = matrix_op(family, name)
        if op is not None:
            work = 2 * op.m * op.n * op.k * op.blocks
            if op.a in ("i8", "iu8", "iu4"):
                return InstructionFacts("VALU", matrix=True, int_ops=work, per_wave=True)
            return InstructionFacts("VALU", matrix=True, flops=work, per_wave=True,
                                    precision=_PRECISION.get(op.a, "fp32"))
        base = name[7:] if name.startswith("v_dual_") else name[2:]
        packed = base.startswith("pk_")
        flops, precision = _float_work(base[3:] if packed else base)
        if packed:
            flops *= 2
        if pair is not None:
            # a VOPD pair: both halves' work, in the X half's precision (gfx11/gfx12 dual
            # issue pairs fp32 operations; a mixed pair would count as the X half's)
            other, other_precision = _float_work(pair[7:] if pair.startswith("v_dual_")
                                                 else pair[2:])
            flops += other
            precision = precision or other_precision
        return InstructionFacts("VALU", flops=flops, precision=precision)
    if encoding in _SALU_ENCODINGS:
        if name in _BRANCHES:
            return InstructionFacts("BRANCH")
        flops, precision = _float_work(name[2:])        # gfx12 SALU float: per wave
        return InstructionFacts("SALU", flops=flops, per_wave=True, precision=precision)
    if encoding == "SOPP":
        if name.startswith(("s_branch", "s_cbranch")):
            return InstructionFacts("BRANCH")
        if name.startswith("s_sendmsg"):
            return InstructionFacts("SENDMSG")
        return InstructionFacts("OTHER")
    if encoding == "SMEM":
        return _smem_facts(name, dst_count)
    if encoding == "DS":
        return _ds_facts(name)
    if encoding in ("FLAT", "GLOBAL", "SCRATCH"):
        space = {"FLAT": "flat", "GLOBAL": "global", "SCRATCH": "private"}[encoding]
        return _vector_memory_facts("FLAT", space, name)
    if encoding in ("MUBUF", "MTBUF", "VBUFFER"):
        return _vector_memory_facts("VMEM", "buffer", name)
    return InstructionFacts("OTHER")


def facts(inst: Instruction) -> InstructionFacts:
    """The :class:`InstructionFacts` of a decoded instruction (cached per mnemonic)."""
    pair = inst.pair.name if inst.pair is not None else None
    dst_count = inst.dsts[0].count if inst.dsts else 0
    if inst.encoding == "SMEM" and not inst.dsts and inst.srcs:
        dst_count = inst.srcs[0].count          # scalar stores: SDATA is the first source
    return _facts_of(inst.family, inst.encoding, inst.name, len(inst.dsts), pair, dst_count)


_WIDTHS = {
    "dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16,
    "b32": 4, "b64": 8, "b96": 12, "b128": 16, "b8": 1, "b16": 2,
    "ubyte": 1, "sbyte": 1, "byte": 1, "ushort": 2, "sshort": 2, "short": 2,
    "u8": 1, "i8": 1, "u16": 2, "i16": 2,
    "u32": 4, "i32": 4, "f32": 4, "u64": 8, "i64": 8, "f64": 8, "x2": 8,
}


def _width(tokens: list[str]) -> int:
    """Bytes of one lane's access from the mnemonic's tokens (the last width-like token)."""
    if "format" in tokens:
        comps = len(tokens[-1]) if tokens[-1] in ("x", "xy", "xyz", "xyzw") else 4
        return comps * (2 if "d16" in tokens else 4)
    if "pk" in tokens:
        return 4
    for tok in reversed(tokens):
        if tok in _WIDTHS:
            return _WIDTHS[tok]
    return 4


def _vector_memory_facts(category: str, space: str, name: str) -> InstructionFacts:
    tokens = name.split("_")
    if "atomic" in tokens:
        access = "atomic"
    elif "load" in tokens:
        access = "read"
    elif "store" in tokens:
        access = "write"
    else:                       # cache write-back / invalidate: no data moves (SQ_INSTS only)
        return InstructionFacts("OTHER")
    return InstructionFacts(category, space=space, access=access, size=_width(tokens))


def _smem_facts(name: str, dst_count: int) -> InstructionFacts:
    tokens = name.split("_")
    if "load" in tokens:
        size = _WIDTHS.get(tokens[-1], 4) if tokens[-1] in ("u8", "i8", "u16", "i16") \
            else 4 * max(1, dst_count)
        return InstructionFacts("SMEM", space="scalar", access="read", size=size)
    if "store" in tokens:
        return InstructionFacts("SMEM", space="scalar", access="write",
                                size=4 * max(1, dst_count))
    if "atomic" in tokens:
        return InstructionFacts("SMEM", space="scalar", access="atomic", size=_width(tokens))
    return InstructionFacts("SMEM")


_DS_NO_MEMORY = ("ds_bpermute", "ds_permute", "ds_swizzle", "ds_nop", "ds_append",
                 "ds_consume", "ds_gws", "ds_ordered", "ds_bvh")


def _ds_facts(name: str) -> InstructionFacts:
    if name.startswith(_DS_NO_MEMORY) or "_src2_" in name:
        return InstructionFacts("LDS")
    op = name[3:]
    tokens = op.split("_")
    two = op.startswith(("read2", "write2", "load_2addr", "store_2addr", "wrxchg2",
                         "storexchg_2addr"))
    size = _width(tokens)
    if op.startswith(("read", "load")):
        access = "read"
    elif op.startswith(("write", "store")) and not op.startswith(("wrxchg", "storexchg")):
        access = "write"
    else:
        access = "atomic"
    return InstructionFacts("LDS", space="lds", access=access, size=size,
                            elements=2 if two else 1)


# --- addresses, as the interpreter computes them --------------------------------------------------

AddressModel = Callable[[Batch], "tuple[np.ndarray, np.ndarray | None] | None"]


def address_model(inst: Instruction) -> AddressModel | None:
    """``fn(batch) -> (addresses, mask)`` giving the addresses a memory instruction is about to
    access, from its decoded operands and the batch state (the rules of semantics_smem.py,
    semantics_vmem.py, semantics_lds.py and semantics_buffer.py: see :func:`hsapy.sim.isa.counters`
    module doc for the shapes); None for an instruction that moves no data."""
    f = facts(inst)
    if not f.is_memory:
        return None
    if inst.encoding in ("GLOBAL", "FLAT"):
        return _flat_model(inst)
    if inst.encoding == "SCRATCH":
        return _exec_only
    if inst.encoding == "DS":
        return _ds_model(inst, f)
    if inst.encoding == "SMEM":
        return _smem_model(inst, f)
    return _buffer_model(inst, f)


def _mask(b: Batch) -> np.ndarray | None:
    return None if b.exec_all else b.exec


def _exec_only(b: Batch) -> tuple[np.ndarray, np.ndarray | None]:
    # private memory: the counters need the lanes, not the offsets
    return np.zeros(b.exec.shape, U64), _mask(b)


def _flat_model(inst: Instruction) -> AddressModel:
    from hsapy.sim.isa.operand_access import scalar_reader, vector_reader

    srcs = list(inst.srcs)
    offset = int(srcs[-1].value) if srcs and srcs[-1].kind == "imm" else 0
    offset &= (1 << 64) - 1
    regs = [op for op in srcs if op.kind != "imm"]
    saddr = next((op for op in regs[(0 if "_addtid_" in inst.name else 1):]
                  if op.kind in ("sgpr", "special", "ttmp")), None)
    if "_addtid_" in inst.name:
        base = scalar_reader(saddr, "b64")

        def addtid(b: Batch) -> tuple[np.ndarray, np.ndarray | None]:
            lanes = np.arange(b.lanes, dtype=U64)[None, :] * U64(4)
            start = np.broadcast_to(np.asarray(base(b)).astype(U64), (b.waves,))
            return start[:, None] + U64(offset) + lanes, _mask(b)
        return addtid
    if saddr is not None:
        vofs = vector_reader(regs[0], "u32")
        sbase = scalar_reader(saddr, "b64")

        def based(b: Batch) -> tuple[np.ndarray, np.ndarray | None]:
            start = np.asarray(sbase(b)).astype(U64).reshape(-1, 1)
            addr = start + np.asarray(vofs(b)).astype(U64) + U64(offset)
            return np.broadcast_to(addr, b.exec.shape), _mask(b)
        return based
    vaddr = vector_reader(regs[0], "u64")

    def flat(b: Batch) -> tuple[np.ndarray, np.ndarray | None]:
        addr = np.asarray(vaddr(b)) + U64(offset)
        return np.broadcast_to(addr, b.exec.shape), _mask(b)
    return flat


def _ds_model(inst: Instruction, f: InstructionFacts) -> AddressModel:
    from hsapy.sim.isa.operand_access import vector_reader

    fields = inst.fields
    srcs = list(inst.srcs)
    if "_addtid_" in inst.name:
        m0 = 124 if inst.family == "gfx9" else 125
        single = (int(fields.get("offset1", 0)) << 8) | int(fields.get("offset0", 0))

        def addtid(b: Batch) -> tuple[np.ndarray, np.ndarray | None]:
            lanes = np.arange(b.lanes, dtype=np.int64)[None, :]
            addr = b.S[:, m0].astype(np.int64)[:, None] + single + 4 * lanes
            return addr.astype(U64) & U64(0xFFFFFFFF), _mask(b)
        return addtid
    reader = vector_reader(srcs[0], "u32") if srcs and srcs[0].kind == "vgpr" else None
    if f.elements == 2:
        scale = f.size * (64 if ("st64" in inst.name or "stride64" in inst.name) else 1)
        offsets = np.array([int(fields.get("offset0", 0)) * scale,
                            int(fields.get("offset1", 0)) * scale], np.int64)
    else:
        offsets = np.array([(int(fields.get("offset1", 0)) << 8)
                            | int(fields.get("offset0", 0))], np.int64)

    def lds(b: Batch) -> tuple[np.ndarray, np.ndarray | None]:
        base = np.zeros(b.exec.shape, np.int64) if reader is None else \
            np.broadcast_to(np.asarray(reader(b)).astype(np.int64), b.exec.shape)
        addr = (base[:, :, None] + offsets) & 0xFFFFFFFF
        if f.elements == 1:
            addr = addr[:, :, 0]
        return addr.astype(U64), _mask(b)
    return lds


def _smem_model(inst: Instruction, f: InstructionFacts) -> AddressModel:
    from hsapy.sim.isa.operand_access import scalar_index, scalar_reader
    from hsapy.sim.isa.semantics_smem import smem_immediate

    srcs = list(inst.srcs)
    if f.access != "read" and srcs:
        srcs = srcs[1:]                           # stores and atomics: SDATA comes first
    if not srcs:
        return lambda b: None
    base_op = srcs[0]
    immediate = smem_immediate(inst)
    offsets = [scalar_reader(op, "u32") for op in srcs[1:] if op.kind != "imm"]
    buffer = inst.name.startswith("s_buffer_")
    row = scalar_index(base_op) if buffer else -1
    base = None if buffer else scalar_reader(base_op, "b64")

    def scalar(b: Batch) -> tuple[np.ndarray, np.ndarray | None]:
        offset = np.full(b.waves, immediate, np.int64)
        for read in offsets:
            offset = offset + np.asarray(read(b)).astype(np.int64)
        if buffer:
            words = b.S[:, row:row + 2].astype(np.int64) if row >= 0 else \
                np.zeros((b.waves, 2), np.int64)
            start = words[:, 0] | (words[:, 1] & 0xFFFF) << 32
            offset = start + (offset & 0xFFFFFFFF)
        else:
            start = np.broadcast_to(np.asarray(base(b)).astype(U64), (b.waves,))
            offset = start + offset.astype(U64)
        addr = np.asarray(offset).astype(U64) & ~U64(3)
        return addr.reshape(-1, 1), None
    return scalar


def _buffer_model(inst: Instruction, f: InstructionFacts) -> AddressModel | None:
    from hsapy.sim.isa.operand_access import NotImplementedOperand
    from hsapy.sim.isa.semantics_buffer import (
        Addressing,
        NotImplementedInstructionError,
        active_lanes,
    )
    try:
        addressing = Addressing(inst, inst.family)
    except NotImplementedOperand:
        return None                    # the instruction stops the queue before moving data

    def buffer(b: Batch) -> tuple[np.ndarray, np.ndarray | None] | None:
        lanes = active_lanes(b)
        try:
            r, index, offset, start = addressing.lanes(b, lanes)
            addr = addressing.address(r, lanes, index, offset, start)
            ok = addressing.in_range(r, lanes, index, offset, f.size)
        except NotImplementedInstructionError:
            return None                # stops the queue: nothing moves
        out = np.zeros(b.exec.shape, U64)
        mask = np.zeros(b.exec.shape, bool)
        out[lanes.wave, lanes.lane] = addr
        mask[lanes.wave, lanes.lane] = ok
        return out, mask
    return buffer


# --- the recorder ---------------------------------------------------------------------------------

class Listener(Protocol):
    """Who receives finished dispatches (hsapy.profile.Profiler)."""

    def dispatch_counted(self, counters: DispatchCounters) -> None: ...


_listeners: list[Listener] = []
_listeners_lock = threading.Lock()


def add_listener(listener: Listener) -> None:
    """Start profiling: every later dispatch on the simulator is counted and handed to
    ``listener.dispatch_counted``."""
    with _listeners_lock:
        _listeners.append(listener)


def remove_listener(listener: Listener) -> None:
    """Stop handing dispatches to ``listener`` (profiling stops when nobody listens)."""
    with _listeners_lock:
        if listener in _listeners:
            _listeners.remove(listener)


def is_profiling() -> bool:
    """Whether a profiler is listening (dispatches then run with a recorder)."""
    return bool(_listeners)


def recorder_for(ctx: Any, wave_size: int) -> DispatchRecorder | None:
    """A recorder for the dispatch ``ctx`` (hsapy.sim.execution.DispatchContext), or None when
    nobody profiles (then the engine runs unprofiled)."""
    if not _listeners:
        return None
    return DispatchRecorder(ctx, wave_size, list(_listeners))


class _Executed:
    __slots__ = ("inst", "waves", "lanes", "flat_lds_waves", "flat_lds_only_waves", "bytes",
                 "line_bytes", "lds_passes", "lds_conflicts")

    def __init__(self, inst: Instruction) -> None:
        self.inst = inst
        self.waves = 0
        self.lanes = 0
        self.flat_lds_waves = 0          # flat executions (per wave) with a lane in LDS
        self.flat_lds_only_waves = 0     # ... with every active lane in LDS
        self.bytes: dict[str, int] = {}  # space -> bytes moved
        self.line_bytes = 0              # global: sum over wave executions of distinct lines
        self.lds_passes = 0
        self.lds_conflicts = 0


class DispatchRecorder:
    """Collects one dispatch's events (see the module doc) and derives its counters."""

    def __init__(self, ctx: Any, wave_size: int, listeners: list) -> None:
        from hsapy.sim.memory import PRIVATE_APERTURE_BASE, SHARED_APERTURE_BASE

        self.ctx = ctx
        self.wave_size = wave_size
        self.listeners = listeners
        profile = ctx.agent
        self.target = profile.name
        self.line_size = int(getattr(profile, "cacheline_size", 128) or 128)
        self._line_shift = self.line_size.bit_length() - 1
        self.shared_top = U64(SHARED_APERTURE_BASE >> 32)
        self.private_top = U64(PRIVATE_APERTURE_BASE >> 32)
        info = getattr(getattr(ctx, "kernel", None), "info", None)
        fixed = getattr(info, "group_segment_fixed_size", 0)
        self.lds_size = max(int(ctx.group_segment_size), fixed if isinstance(fixed, int) else 0)
        self.waves_launched = 0
        self.entries: dict[int, _Executed] = {}
        self._lines: list[np.ndarray] = []
        self._lines_count = 0
        self._facts: dict[int, InstructionFacts] = {}

    # -- events --------------------------------------------------------------------------------
    def launched(self, waves: int) -> None:
        """``waves`` more waves were created for the dispatch (SQ_WAVES)."""
        self.waves_launched += int(waves)

    def executed(self, inst: Instruction, waves: int, lanes: int) -> None:
        """``waves`` waves executed ``inst`` with ``lanes`` EXEC lanes in total."""
        entry = self.entries.get(inst.offset)
        if entry is None:
            entry = self.entries[inst.offset] = _Executed(inst)
        entry.waves += waves
        entry.lanes += lanes

    def accessed(self, inst: Instruction, addresses: np.ndarray,
                 mask: np.ndarray | None) -> None:
        """One execution of memory instruction ``inst``: the address each lane (row: wave)
        starts at, and the lanes that access memory (None: all)."""
        f = self._facts.get(inst.offset)
        if f is None:
            f = self._facts[inst.offset] = facts(inst)
        if not f.is_memory:
            return
        entry = self.entries.get(inst.offset)
        if entry is None:
            entry = self.entries[inst.offset] = _Executed(inst)
        addresses = np.asarray(addresses)
        if addresses.ndim == 2:
            addresses = addresses[:, :, None]
        waves, lanes = addresses.shape[:2]
        if mask is None:
            mask = np.ones((waves, lanes), bool)
        else:
            mask = np.broadcast_to(np.asarray(mask, bool), (waves, lanes))
        per_lane = f.size * f.elements
        space = f.space
        if space == "flat":
            top = addresses[:, :, 0] >> U64(32)
            lds = mask & (top == self.shared_top)
            private = mask & (top == self.private_top)
            glob = mask & ~lds & ~private
            some_lds = lds.any(axis=1)
            entry.flat_lds_waves += int(np.count_nonzero(some_lds))
            entry.flat_lds_only_waves += int(np.count_nonzero(
                some_lds & ~(glob | private).any(axis=1)))
            self._add(entry, "lds", per_lane * int(np.count_nonzero(lds)))
            self._add(entry, "private", per_lane * int(np.count_nonzero(private)))
            self._global(entry, f, addresses, glob)
            return
        if space == "buffer":
            from hsapy.sim.isa.semantics_buffer import PRIVATE_BUFFER_BASE, PRIVATE_BUFFER_SIZE

            first = addresses[:, :, 0]
            private = mask & (first >= U64(PRIVATE_BUFFER_BASE)) & \
                (first < U64(PRIVATE_BUFFER_BASE + PRIVATE_BUFFER_SIZE))
            self._add(entry, "private", per_lane * int(np.count_nonzero(private)))
            self._global(entry, f, addresses, mask & ~private)
            return
        if space == "global":
            self._global(entry, f, addresses, mask)
            return
        if space == "lds":
            self._lds(entry, f, addresses, mask)
            return
        if space == "scalar":
            self._add(entry, "scalar", f.size * int(np.count_nonzero(mask)))
            return
        self._add(entry, space, per_lane * int(np.count_nonzero(mask)))

    # -- derivations ---------------------------------------------------------------------------
    @staticmethod
    def _add(entry: _Executed, space: str, nbytes: int) -> None:
        if nbytes:
            entry.bytes[space] = entry.bytes.get(space, 0) + nbytes

    def _global(self, entry: _Executed, f: InstructionFacts, addresses: np.ndarray,
                mask: np.ndarray) -> None:
        count = int(np.count_nonzero(mask))
        if not count:
            return
        self._add(entry, "global", f.size * f.elements * count)
        # cache lines each wave's access touches: those of the first and the last byte of every
        # element (an element of at most 16 bytes spans at most two lines)
        shift = U64(self._line_shift)
        starts = addresses.astype(U64)
        lines = np.concatenate([starts >> shift, (starts + U64(max(f.size, 1) - 1)) >> shift],
                               axis=2).reshape(addresses.shape[0], -1)
        valid = np.repeat(mask, lines.shape[1] // mask.shape[1], axis=1)
        lines = np.where(valid, lines, _NONE)
        lines.sort(axis=1)
        distinct = np.empty(lines.shape, bool)
        distinct[:, 0] = lines[:, 0] != _NONE
        np.not_equal(lines[:, 1:], lines[:, :-1], out=distinct[:, 1:])
        distinct[:, 1:] &= lines[:, 1:] != _NONE
        touched = lines[distinct]
        entry.line_bytes += int(touched.size) * self.line_size
        self._lines.append(touched)
        self._lines_count += touched.size
        if self._lines_count > (1 << 22):
            merged = _distinct(np.concatenate(self._lines))
            self._lines = [merged]
            self._lines_count = merged.size

    def _lds(self, entry: _Executed, f: InstructionFacts, addresses: np.ndarray,
             mask: np.ndarray) -> None:
        addr = addresses.astype(np.int64)
        if self.lds_size:
            # a lane whose address is past the workgroup's LDS moves nothing (range check)
            inside = (addr + f.size <= self.lds_size).all(axis=2)
            mask = mask & inside
        count = int(np.count_nonzero(mask))
        if not count:
            return
        self._add(entry, "lds", f.size * f.elements * count)
        passes, conflicts = lds_bank_conflicts(addr, mask, f.size)
        entry.lds_passes += passes
        entry.lds_conflicts += conflicts

    def footprint_lines(self) -> int:
        """Distinct global cache lines the dispatch touched (read or written)."""
        if not self._lines:
            return 0
        return int(_distinct(np.concatenate(self._lines)).size)

    def finish(self, waves: int | None = None) -> DispatchCounters:
        """Derive the counters and hand them to every listener (called once, at the end of a
        dispatch that completed)."""
        if waves is not None and not self.waves_launched:
            self.waves_launched = int(waves)
        counters = DispatchCounters.derive(self)
        for listener in self.listeners:
            listener.dispatch_counted(counters)
        return counters


def lds_bank_conflicts(addresses: np.ndarray, mask: np.ndarray, size: int) -> tuple[int, int]:
    """(passes, conflict cycles) of one LDS instruction executed by ``W`` waves.

    ``addresses`` is ``int64[W, L, E]`` (E addressed elements per lane), ``mask`` ``bool[W, L]``,
    ``size`` the bytes of one element. Each wave's lanes are served in passes of
    :data:`LDS_PASS_BYTES` bytes of lane data (``128 // (size * E)`` lanes, at most 32); within a
    pass every bank serves one dword per cycle and lanes reading the same dword share it, so a
    pass takes as many cycles as the most distinct dwords any one bank must serve. The conflict
    cycles are what the passes take beyond one cycle each (the figure SQ_LDS_BANK_CONFLICT
    counts on hardware, in the model's units)."""
    waves, lanes, elements = addresses.shape
    per_lane = max(1, size * elements)
    lanes_per_pass = max(1, min(LDS_BANKS, LDS_PASS_BYTES // per_lane))
    dwords_per_element = max(1, (size + LDS_BANK_BYTES - 1) // LDS_BANK_BYTES)
    passes = -(-lanes // lanes_per_pass)
    pad = passes * lanes_per_pass - lanes
    dwords = ((addresses.astype(np.int64) >> 2)[..., None] + np.arange(dwords_per_element)) \
        & 0xFFFFFFFF                                                      # [W, L, E, D]
    valid = np.broadcast_to(mask[:, :, None, None], dwords.shape)
    if pad:
        dwords = np.concatenate([dwords, np.zeros((waves, pad) + dwords.shape[2:], np.int64)],
                                axis=1)
        valid = np.concatenate([valid, np.zeros((waves, pad) + dwords.shape[2:], bool)], axis=1)
    rows = waves * passes
    key = np.where(valid, (dwords & (LDS_BANKS - 1)) << 32 | dwords, _NONE_I64)
    key = key.reshape(rows, -1)
    key.sort(axis=1)
    distinct = np.empty(key.shape, bool)
    distinct[:, 0] = key[:, 0] != _NONE_I64
    np.not_equal(key[:, 1:], key[:, :-1], out=distinct[:, 1:])
    distinct[:, 1:] &= key[:, 1:] != _NONE_I64
    row, column = np.nonzero(distinct)
    bank = key[row, column] >> 32
    counts = np.bincount(row * LDS_BANKS + bank, minlength=rows * LDS_BANKS)
    worst = counts.reshape(rows, LDS_BANKS).max(axis=1)
    used = worst > 0
    return int(np.count_nonzero(used)), int((worst[used] - 1).sum())


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-D array, sorted (a sort, not numpy's hashing unique)."""
    values = np.sort(values)
    keep = np.empty(values.shape, bool)
    keep[:1] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


# --- derived counters -----------------------------------------------------------------------------

@dataclass
class InstructionCount:
    """One static instruction's share of a dispatch."""

    offset: int                 # byte offset from the kernel's entry
    text: str
    category: str
    waves: int                  # wave-level executions
    lanes: int                  # EXEC lanes summed over them
    flops: int
    bytes: dict[str, int]
    lds_bank_conflicts: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"offset": self.offset, "text": self.text, "category": self.category,
                "executions": self.waves, "active_lanes": self.lanes, "flops": self.flops,
                "bytes": dict(self.bytes), "lds_bank_conflicts": self.lds_bank_conflicts}


@dataclass
class DispatchCounters:
    """The counters of one dispatch on the simulator (docs/profile.md defines each).

    ``hardware`` holds the figures under rocprof's names (SQ_WAVES, SQ_INSTS_*, FETCH_SIZE,
    WRITE_SIZE in KB, SQ_LDS_BANK_CONFLICT in the model's cycles); the other fields are exact
    figures hardware counters do not give."""

    target: str
    kernel: str
    queue_address: int
    dispatch_id: int
    grid: tuple[int, int, int]
    workgroup: tuple[int, int, int]
    wave_size: int
    group_segment_size: int
    hardware: dict[str, float]
    flops: dict[str, int]                     # precision -> FLOPs (vector, scalar and matrix)
    matrix_flops: dict[str, int]              # precision -> FLOPs of matrix instructions
    int_ops: int
    bytes: dict[str, dict[str, int]]          # space -> {"read", "write", "atomic"}
    global_line_bytes: int
    global_footprint_bytes: int
    line_size: int
    valu_lanes: int
    valu_lane_slots: int
    lds_passes: int
    instructions: list[InstructionCount] = field(default_factory=list)
    kernel_info: Any = field(default=None, repr=False, compare=False)
    descriptor: Any = field(default=None, repr=False, compare=False)

    @property
    def valu_active_lane_ratio(self) -> float:
        """Active lanes over lane slots of the VALU instructions executed (1.0: no lane idle)."""
        return self.valu_lanes / self.valu_lane_slots if self.valu_lane_slots else 0.0

    @property
    def total_flops(self) -> int:
        """Floating-point operations of every precision."""
        return sum(self.flops.values())

    @property
    def global_bytes(self) -> int:
        """Bytes the kernel's vector memory instructions asked of global memory."""
        return sum(self.bytes.get("global", {}).values())

    @classmethod
    def derive(cls, rec: DispatchRecorder) -> DispatchCounters:
        """The counters of a finished recorder."""
        ctx = rec.ctx
        hw = {name: 0 for name in ("SQ_WAVES", "SQ_INSTS", "SQ_INSTS_VALU", "SQ_INSTS_MFMA",
                                   "SQ_INSTS_SALU", "SQ_INSTS_SMEM", "SQ_INSTS_LDS",
                                   "SQ_INSTS_VMEM_RD", "SQ_INSTS_VMEM_WR", "SQ_INSTS_FLAT",
                                   "SQ_INSTS_FLAT_LDS_ONLY", "SQ_INSTS_BRANCH",
                                   "SQ_INSTS_SENDMSG", "SQ_LDS_BANK_CONFLICT")}
        flops: dict[str, int] = {}
        matrix_flops: dict[str, int] = {}
        int_ops = 0
        spaces: dict[str, dict[str, int]] = {}
        line_bytes = 0
        valu_lanes = valu_slots = lds_passes = 0
        entry_pc = _entry(ctx)
        rows: list[InstructionCount] = []
        for offset in sorted(rec.entries):
            e = rec.entries[offset]
            f = rec._facts.get(offset) or facts(e.inst)
            hw["SQ_INSTS"] += e.waves
            category = f.category
            if category == "VALU":
                hw["SQ_INSTS_VALU"] += e.waves
                if f.matrix:
                    hw["SQ_INSTS_MFMA"] += e.waves
                valu_lanes += e.lanes
                valu_slots += e.waves * rec.wave_size
            elif category in ("SALU", "SMEM", "LDS", "BRANCH", "SENDMSG"):
                hw["SQ_INSTS_" + category] += e.waves
            elif category in ("VMEM", "FLAT"):
                if category == "FLAT":
                    hw["SQ_INSTS_FLAT"] += e.waves
                    hw["SQ_INSTS_LDS"] += e.flat_lds_waves
                    hw["SQ_INSTS_FLAT_LDS_ONLY"] += e.flat_lds_only_waves
                if f.access == "read":
                    hw["SQ_INSTS_VMEM_RD"] += e.waves
                elif f.access in ("write", "atomic"):
                    hw["SQ_INSTS_VMEM_WR"] += e.waves
            if f.per_wave:
                work = f.flops * e.waves
                int_ops += f.int_ops * e.waves
            else:
                work = f.flops * e.lanes
            if work and f.precision:
                flops[f.precision] = flops.get(f.precision, 0) + work
                if f.matrix:
                    matrix_flops[f.precision] = matrix_flops.get(f.precision, 0) + work
            for space, nbytes in e.bytes.items():
                kind = f.access or "read"
                slot = spaces.setdefault(space, {"read": 0, "write": 0, "atomic": 0})
                slot[kind] += nbytes
            line_bytes += e.line_bytes
            hw["SQ_LDS_BANK_CONFLICT"] += e.lds_conflicts
            lds_passes += e.lds_passes
            rows.append(InstructionCount(offset - entry_pc, e.inst.text(), category, e.waves,
                                         e.lanes, work, dict(e.bytes), e.lds_conflicts))
        hw["SQ_WAVES"] = rec.waves_launched
        glob = spaces.get("global", {})
        hw["FETCH_SIZE"] = glob.get("read", 0) / 1024
        hw["WRITE_SIZE"] = (glob.get("write", 0) + glob.get("atomic", 0)) / 1024
        kernel = ctx.kernel
        name = getattr(kernel, "name", None) or f"kernel {int(ctx.kernel_object):#x}"
        return cls(
            target=rec.target, kernel=str(name),
            queue_address=int(getattr(ctx, "queue_address", 0) or 0),
            dispatch_id=int(getattr(ctx, "dispatch_id", 0) or 0),
            grid=tuple(int(v) for v in ctx.grid_size),
            workgroup=tuple(int(v) for v in ctx.workgroup_size),
            wave_size=rec.wave_size, group_segment_size=int(ctx.group_segment_size),
            hardware=hw, flops=flops, matrix_flops=matrix_flops, int_ops=int_ops, bytes=spaces,
            global_line_bytes=line_bytes,
            global_footprint_bytes=rec.footprint_lines() * rec.line_size,
            line_size=rec.line_size, valu_lanes=valu_lanes, valu_lane_slots=valu_slots,
            lds_passes=lds_passes, instructions=rows,
            kernel_info=getattr(kernel, "info", None),
            descriptor=getattr(kernel, "descriptor", None))


def _entry(ctx: Any) -> int:
    entry = getattr(getattr(ctx, "kernel", None), "entry_address", None)
    return int(entry) if isinstance(entry, int) else 0


# --- the interpreter's side -----------------------------------------------------------------------

def wrap(inst: Instruction, fn: Callable) -> Callable:
    """The closure a profiled program runs for ``inst``: report the execution (and, for a
    memory instruction, its addresses) to the machine's recorder, then run ``fn``."""
    model = address_model(inst)
    if model is None:
        def counted(b: Batch, m: Any):
            m.recorder.executed(inst, b.waves, b.active_lanes)
            return fn(b, m)
        return counted

    def counted_memory(b: Batch, m: Any):
        recorder = m.recorder
        recorder.executed(inst, b.waves, b.active_lanes)
        seen = model(b)
        if seen is not None:
            recorder.accessed(inst, seen[0], seen[1])
        return fn(b, m)
    return counted_memory
