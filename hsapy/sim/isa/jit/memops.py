"""Memory instructions as the compiled engine sees them: which global/flat loads, stores and
atomics, scalar loads, scratch and LDS (DS) accesses it performs itself, and what each one does
(:class:`MemOp`); :func:`describe` raises :class:`NotNative` for the ones it leaves to the
interpreter. The code for them is emitted by hsapy/sim/isa/jit/memcode.py, with the address and
access helpers of hsapy/sim/isa/jit/memaccess.py.

The operand reading is the interpreter's (the access width and sign of each mnemonic from
``memory_access._width_of`` and ``semantics_lds.ds_load_form``, the SMEM offset from
``semantics_smem.smem_immediate``, scratch operands from ``semantics_vmem.scratch_operands``,
the atomic operations from
``memory_access.atomic_operation`` and the DS atomic closures, whose functions are traced like
any ALU instruction into the update graph of :attr:`MemOp.graph`).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["NotNative", "MemOp", "describe"]


class NotNative(Exception):
    """The engine leaves this memory instruction to the interpreter."""


@dataclass
class MemOp:
    """What a memory instruction does, in the terms the code generator needs."""

    kind: str                      # global_load, global_store, global_atomic, smem_load,
    #                                ds_load, ds_store, ds_load2, ds_store2, ds_atomic
    writes: bool
    needs_precheck: bool = False   # a global write: all waves are checked before any writes
    flat: bool = False
    size: int = 4                  # bytes per lane (per element for the 2-address DS forms)
    ext: str = "d"                 # "d" dwords, "u"/"s" zero/sign extended, +"16" for d16
    hi: bool = False               # d16_hi
    offset: int = 0
    vaddr: Any = None              # address operand (VGPR)
    saddr: Any = None              # SGPR base (pair) of a global access / SMEM base
    data: list = field(default_factory=list)   # data operands
    dst: Any = None                # destination operand
    offsets2: tuple = ()           # DS 2-address offsets
    soffsets: list = field(default_factory=list)   # SMEM SGPR offsets
    atomic: Callable | None = None  # fn(old, value) on arrays of ``dtype``
    dtype: Any = None
    cmpswap: str = ""              # "", "c" (data: value, compare), "cmpst" (data: compare, value)
    returns: bool = False
    graph: Any = None              # the traced atomic update (see _atomic_graph)


def describe(inst: Any, info: Any) -> MemOp:
    """The :class:`MemOp` of a memory instruction; NotNative when the engine leaves it.

    A form the interpreter's operand helpers do not know (they raise NotImplementedOperand,
    which the interpreter turns into an illegal-instruction fault when it runs) is not
    described either: the interpreter runs it and reports it as it always does."""
    from hsapy.sim.isa.operand_access import NotImplementedOperand

    try:
        return _describe(inst)
    except NotImplementedOperand as exc:
        raise NotNative(f"{inst.name}: {exc}") from None


def _describe(inst: Any) -> MemOp:
    enc = inst.encoding
    if enc == "SMEM":
        return _smem(inst)
    if enc in ("GLOBAL", "FLAT"):
        return _vmem(inst)
    if enc == "DS":
        return _ds(inst)
    if enc == "SCRATCH":
        return _scratch(inst)
    raise NotNative(f"{enc} instructions")


def _scratch(inst: Any) -> MemOp:
    """Private memory (one row per lane of the batch's scratch): no other wave or lane sees
    it, so a store orders with nothing across waves and does not start a segment."""
    from hsapy.sim.isa.memory_access import _width_of
    from hsapy.sim.isa.semantics_vmem import scratch_operands

    name = inst.name
    if "_lds_" in name:
        # LDS-DMA forms write the workgroup's LDS from private memory
        raise NotNative(name)
    vaddr, saddr, data, offset = scratch_operands(inst)
    if saddr is not None and saddr.kind != "sgpr":
        raise NotNative(f"{name} with a {saddr.kind} offset")
    size, ext, hi = _width_of(name)
    op = MemOp("", False, size=size, ext=ext, hi=hi, offset=offset, vaddr=vaddr, saddr=saddr,
               data=data)
    if "_load_" in name:
        op.kind = "scratch_load"
        op.dst = inst.dsts[0]
        if op.dst.kind != "vgpr":
            raise NotNative(f"{name} into {op.dst.kind}")
        return op
    if "_store_" in name:
        op.kind = "scratch_store"
        if not data or data[0].kind != "vgpr":
            raise NotNative(f"{name} without VGPR data")
        return op
    raise NotNative(name)


def _smem(inst: Any) -> MemOp:
    from hsapy.sim.isa.semantics_smem import smem_immediate

    name = inst.name
    if not name.startswith("s_load_") or name.rsplit("_", 1)[-1] in ("u8", "i8", "u16", "i16"):
        raise NotNative(name)
    dst = inst.dsts[0]
    if dst.kind != "sgpr":
        raise NotNative(f"{name} into {dst.kind}")
    srcs = list(inst.srcs)
    base = srcs[0]
    if base.kind != "sgpr":
        raise NotNative(f"{name} with a {base.kind} base")
    offsets = [op for op in srcs[1:] if op.kind != "imm"]
    if any(op.kind != "sgpr" for op in offsets):
        raise NotNative(f"{name} with a special offset")
    return MemOp("smem_load", False, size=4 * dst.count, offset=smem_immediate(inst),
                 saddr=base, soffsets=offsets, dst=dst)


def _vmem(inst: Any) -> MemOp:
    from hsapy.sim.isa.memory_access import _width_of, atomic_operation, atomic_types

    name = inst.name
    srcs = list(inst.srcs)
    offset = int(srcs[-1].value) if srcs and srcs[-1].kind == "imm" else 0
    regs = [op for op in srcs if op.kind != "imm"]
    if "_addtid_" in name or "_load_lds_" in name or not regs:
        raise NotNative(name)
    addr_op = regs[0]
    saddr = next((op for op in regs[1:] if op.kind in ("sgpr", "special", "ttmp")), None)
    data = [op for op in regs[1:] if op is not saddr]
    if addr_op.kind != "vgpr":
        raise NotNative(f"{name} address in {addr_op.kind}")
    if saddr is not None and (saddr.kind != "sgpr" or saddr.index & 1):
        raise NotNative(f"{name} with SGPR base {saddr.kind}")
    if saddr is None and addr_op.count != 2:
        raise NotNative(f"{name} with a {addr_op.count}-register address")
    flat = inst.encoding == "FLAT"
    op = MemOp("", False, flat=flat, offset=offset, vaddr=addr_op, saddr=saddr, data=data)
    if "_atomic_" in name:
        base, kind, fn, size = atomic_operation(name)
        if data and data[0].kind != "vgpr":
            raise NotNative(f"{name} data in {data[0].kind}")
        op.kind = "global_atomic"
        op.writes = True
        op.needs_precheck = True
        op.size = size
        op.atomic = fn
        op.cmpswap = "c" if kind == "c" else ""
        op.dtype = np.dtype(atomic_types(kind, size)[1])
        op.returns = bool(inst.dsts)
        op.dst = inst.dsts[0] if inst.dsts else None
        if fn is None and kind != "c":
            raise NotNative(name)
        op.graph = _traced_update(op)
        return op
    size, ext, hi = _width_of(name)
    op.size, op.ext, op.hi = size, ext, hi
    if "_load_" in name or name.endswith("_load"):
        op.kind = "global_load"
        op.dst = inst.dsts[0]
        if op.dst.kind not in ("vgpr", "agpr"):
            raise NotNative(f"{name} into {op.dst.kind}")
        return op
    if "_store_" in name:
        op.kind = "global_store"
        op.writes = True
        op.needs_precheck = True
        if not data or data[0].kind not in ("vgpr", "agpr"):
            raise NotNative(f"{name} without VGPR data")
        return op
    raise NotNative(name)


def _ds(inst: Any) -> MemOp:
    from hsapy.sim.isa.semantics_lds import DS_WIDTH, ds_load_form

    name = inst.name
    f = inst.fields
    single = (int(f.get("offset1", 0)) << 8) | int(f.get("offset0", 0))
    srcs = list(inst.srcs)
    if not srcs or srcs[0].kind != "vgpr" or "_addtid_" in name:
        raise NotNative(name)
    addr = srcs[0]
    rest = srcs[1:]
    op = name[3:]
    if op.startswith(("read2", "write2", "load_2addr", "store_2addr")):
        st64 = "st64" in op or "stride64" in op
        elem = 8 if op.endswith("b64") else 4
        scale = elem * (64 if st64 else 1)
        offsets = (int(f.get("offset0", 0)) * scale, int(f.get("offset1", 0)) * scale)
        if op.startswith(("read2", "load_2addr")):
            return MemOp("ds_load2", False, size=elem, vaddr=addr, dst=inst.dsts[0],
                         offsets2=offsets)
        if len(rest) < 2 or rest[0].kind != "vgpr" or rest[1].kind != "vgpr":
            raise NotNative(name)
        return MemOp("ds_store2", True, size=elem, vaddr=addr, data=[rest[0], rest[1]],
                     offsets2=offsets)
    for prefix in ("read_", "load_"):
        if op.startswith(prefix):
            form = ds_load_form(op[len(prefix):])
            if form is None:
                raise NotNative(name)
            size, ext, hi = form
            return MemOp("ds_load", False, size=size, ext=ext, hi=hi, offset=single,
                         vaddr=addr, dst=inst.dsts[0])
    for prefix in ("write_", "store_"):
        if op.startswith(prefix):
            tail = op[len(prefix):]
            hi = tail.endswith("_d16_hi")
            tail = tail.replace("_d16_hi", "")
            if tail not in DS_WIDTH or not rest or rest[0].kind != "vgpr":
                raise NotNative(name)
            return MemOp("ds_store", True, size=DS_WIDTH[tail], hi=hi, offset=single,
                         vaddr=addr, data=[rest[0]])
    return _ds_atomic(inst, addr, rest, single)


_DS_ATOMIC_RE = re.compile(r"^ds_(.+?)(_rtn)?_(u32|i32|f32|b32|u64|i64|f64|b64)$")


def _ds_atomic(inst: Any, addr: Any, rest: list, offset: int) -> MemOp:
    """The interpreter's DS atomic closure holds the operation (``fn``) and the compare-swap
    form (``kind``); the engine reads them from it."""
    from hsapy.sim.isa.semantics import compile_instruction

    match = _DS_ATOMIC_RE.match(inst.name)
    if match is None:
        raise NotNative(inst.name)
    closure = compile_instruction(inst, None)
    cells = dict(zip(closure.__code__.co_freevars, (c.cell_contents for c in
                                                    closure.__closure__ or ())))
    if "fn" not in cells or "kind" not in cells or "dtype" not in cells:
        raise NotNative(inst.name)
    kind = cells["kind"]
    size = 8 if match.group(3).endswith("64") else 4
    data = [op for op in rest if op.kind == "vgpr"]
    if not data:
        raise NotNative(inst.name)
    cmpswap = "cmpst" if kind == "cmpst" else "c" if kind == "cmpstore" else ""
    if cells["fn"] is None and not cmpswap:
        raise NotNative(inst.name)
    op = MemOp("ds_atomic", True, size=size, offset=offset, vaddr=addr, data=data,
               dst=inst.dsts[0] if inst.dsts else None, atomic=cells["fn"],
               dtype=np.dtype(cells["dtype"]), cmpswap=cmpswap, returns=bool(inst.dsts))
    op.graph = _traced_update(op)
    return op


def _traced_update(op: MemOp) -> Any:
    from hsapy.sim.isa.jit.symbolic import Untraceable

    try:
        return _atomic_graph(op)
    except Untraceable as exc:
        raise NotNative(f"atomic operation: {exc}") from None


def _atomic_graph(op: MemOp):
    """The traced update ``new = fn(old, value)`` (or compare-swap) on one element."""
    from hsapy.sim.isa.jit.graph import input_node
    from hsapy.sim.isa.jit.symbolic import PathTracer, Sym, Untraceable
    from hsapy.sim.isa.jit.trace import rebind

    dtype = op.dtype
    old = Sym(input_node(("old",), dtype, 1), (1,))
    value = Sym(input_node(("value",), dtype, 1), (1,))
    if op.cmpswap:
        cmp = Sym(input_node(("cmp",), dtype, 1), (1,))
        return np.where(old == cmp, value, old).astype(dtype).node
    fn = rebind(op.atomic)
    with PathTracer([], {}) as tracer, np.errstate(all="ignore"):
        new = fn(old, value)
    if tracer.decisions or tracer.checks:
        raise Untraceable("atomic operation with branches")
    return np.asarray(new).astype(dtype).node if not isinstance(new, Sym) else \
        new.astype(dtype).node
