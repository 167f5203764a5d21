"""Memory instructions in generated code: global/flat loads, stores and atomics, scalar loads,
LDS (DS) reads, writes and atomics.

The operand reading is the interpreter's (hsapy/sim/isa/semantics_mem.py: the access width and
sign of each mnemonic from ``_width_of``, the SMEM offset from ``smem_immediate``, the atomic
operations from ``atomic_operation`` and the DS atomic closures, whose functions are traced like
any ALU instruction); what this module adds is the access itself. Every access to simulated
memory is checked first: the active lanes' bytes must lie inside one allocation of the table the
caller passes (the executing agent allowed, except for scalar loads, which the interpreter does
not check for the agent either). Anything else -- an access spanning allocations, a fault, a flat
address in the LDS or scratch aperture -- hands the wave back to the interpreter before the
instruction, which then performs or faults it exactly as it always does. LDS accesses follow
the interpreter's rules: per workgroup, out-of-range lanes read 0 and write nothing.

Lane order is kept wherever it shows: atomics apply lane by lane, a store writes lane after
lane (a later lane wins an overlap), waves in order.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from llvmlite import ir

from hsapy.sim.isa.jit import context as C
from hsapy.sim.isa.jit.lower import I1, I8, I16, I32, I64, Lowerer, vector_type

__all__ = ["NotNative", "MemOp", "describe", "emit", "emit_check"]

PTR = ir.PointerType()
MAX64 = (1 << 64) - 1


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
    from hsapy.sim.isa.semantics_mem import _width_of, scratch_operands

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
    from hsapy.sim.isa.semantics_mem import smem_immediate

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
    from hsapy.sim.isa.semantics_mem import _width_of, atomic_operation

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
        utype = np.uint32 if size == 4 else np.uint64
        op.dtype = np.dtype({"u": utype, "s": np.int32 if size == 4 else np.int64, "c": utype,
                             "f": np.float32 if size == 4 else np.float64}[kind])
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


_DS_WIDTH = {"b32": 4, "b64": 8, "b96": 12, "b128": 16, "u8": 1, "i8": 1, "u16": 2, "i16": 2,
             "b8": 1, "b16": 2}


def _ds(inst: Any) -> MemOp:
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
            tail = op[len(prefix):]
            hi = tail.endswith("_d16_hi")
            d16 = "_d16" in tail
            tail = tail.replace("_d16_hi", "").replace("_d16", "")
            if tail not in _DS_WIDTH:
                raise NotNative(name)
            size = _DS_WIDTH[tail]
            ext = ("s" if tail.startswith("i") else "u") if size < 4 else "d"
            if d16:
                ext += "16"
            return MemOp("ds_load", False, size=size, ext=ext, hi=hi, offset=single,
                         vaddr=addr, dst=inst.dsts[0])
    for prefix in ("write_", "store_"):
        if op.startswith(prefix):
            tail = op[len(prefix):]
            hi = tail.endswith("_d16_hi")
            tail = tail.replace("_d16_hi", "")
            if tail not in _DS_WIDTH or not rest or rest[0].kind != "vgpr":
                raise NotNative(name)
            return MemOp("ds_store", True, size=_DS_WIDTH[tail], hi=hi, offset=single,
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


# --- code ---------------------------------------------------------------------------------------

def _vec(ty: ir.Type, n: int) -> ir.VectorType:
    return ir.VectorType(ty, n)


def _splat(ty: ir.VectorType, value: int) -> ir.Constant:
    return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)


def _reg_key(op: Any, k: int = 0) -> tuple:
    return ("a" if op.kind == "agpr" else "v", op.index + k)


class _Access:
    """Helpers that emit one memory access of one wave (``gen``/``state`` None: inside a
    helper function being built, with ``builder`` and ``module``)."""

    def __init__(self, gen: Any, state: Any, builder: Any = None, module: Any = None,
                 lanes: int = 0) -> None:
        self.gen = gen
        self.state = state
        self.b = builder if builder is not None else gen.b
        self.module = module if module is not None else gen.module
        self.lanes = lanes or gen.lanes

    def call(self, name: str, ret: ir.Type, args: list[ir.Value]) -> ir.Value:
        module = self.module
        fn = module.globals.get(name)
        if fn is None:
            fn = ir.Function(module, ir.FunctionType(ret, [a.type for a in args]), name=name)
        return self.b.call(fn, args)

    def mangle(self, ty: ir.Type) -> str:
        from hsapy.sim.isa.jit.lower import mangle

        return mangle(ty)

    def reduce(self, op: str, v: ir.Value) -> ir.Value:
        return self.call(f"llvm.vector.reduce.{op}.{self.mangle(v.type)}", v.type.element, [v])

    # addresses
    def global_addresses(self, op: MemOp) -> ir.Value:
        b, state, lanes = self.b, self.state, self.lanes
        v64 = _vec(I64, lanes)
        if op.saddr is not None:
            lo = state.get(("s", op.saddr.index))
            hi = state.get(("s", op.saddr.index + 1))
            base = b.or_(b.zext(self.gen_scalar(lo), I64),
                         b.shl(b.zext(self.gen_scalar(hi), I64), ir.Constant(I64, 32)))
            vofs = b.zext(state.get(("v", op.vaddr.index)), v64)
            base_v = b.insert_element(ir.Constant(_vec(I64, 1), ir.Undefined), base,
                                      ir.Constant(I32, 0))
            base_v = b.shuffle_vector(base_v, ir.Constant(_vec(I64, 1), ir.Undefined),
                                      ir.Constant(_vec(I32, lanes), [0] * lanes))
            addr = b.add(base_v, vofs)
        else:
            lo = b.zext(state.get(("v", op.vaddr.index)), v64)
            hi = b.zext(state.get(("v", op.vaddr.index + 1)), v64)
            addr = b.or_(lo, b.shl(hi, _splat(v64, 32)))
        return b.add(addr, _splat(v64, op.offset & MAX64))

    def gen_scalar(self, value: ir.Value) -> ir.Value:
        if isinstance(value.type, ir.VectorType):
            return self.b.extract_element(value, ir.Constant(I32, 0))
        return value

    def span(self, addr: ir.Value, mask: ir.Value, nbytes: int) -> tuple:
        """(any lane active, lowest address, one past the highest byte, no wrap) of the
        active lanes' accesses of ``nbytes`` each."""
        b = self.b
        v64 = addr.type
        lo = self.reduce("umin", b.select(mask, addr, _splat(v64, MAX64)))
        top = self.reduce("umax", b.select(mask, addr, _splat(v64, 0)))
        end = b.add(top, ir.Constant(I64, nbytes))
        no_wrap = b.icmp_unsigned(">=", end, top)
        any_lane = self.reduce("or", mask)
        return any_lane, lo, end, no_wrap

    def in_allocation(self, lo: ir.Value, end: ir.Value, agent: bool,
                      ctx: ir.Value | None = None) -> ir.Value:
        """i1: [lo, end) lies inside one allocation (the agent may access it)."""
        fn = _lookup_function(self.module)
        ctx = self.gen.ctx if ctx is None else ctx
        return self.b.trunc(self.b.call(fn, [ctx, lo, end,
                                             ir.Constant(I64, 1 if agent else 0)]), I1)

    def flat_apertures(self, addr: ir.Value, mask: ir.Value, shared_hi: ir.Value,
                       private_hi: ir.Value) -> ir.Value:
        """i1: some active lane's flat address lies in the shared or private aperture."""
        b = self.b
        v64 = addr.type
        top = b.lshr(addr, _splat(v64, 32))
        shared = self._splat_runtime(shared_hi, v64)
        private = self._splat_runtime(private_hi, v64)
        hit = b.or_(b.icmp_unsigned("==", top, shared), b.icmp_unsigned("==", top, private))
        return self.reduce("or", b.and_(hit, mask))

    def global_ok(self, addr: ir.Value, mask: ir.Value, nbytes: int, flat: bool) -> ir.Value:
        """i1: the fast path takes this access (no active lane, or every active lane's bytes
        inside one allocation the agent may access, and for flat none in the LDS / scratch
        apertures). One helper function per unit and form keeps the generated code small."""
        lanes = addr.type.count
        name = f"hsapy_jit_global_ok_{lanes}_{nbytes}_{int(flat)}"
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(I1, [PTR, addr.type, mask.type]),
                             name=name)
            fn.linkage = "internal"
            fn.attributes.add("noinline")
            builder = ir.IRBuilder(fn.append_basic_block("entry"))
            inner = _Access(None, None, builder, self.module, lanes)
            ctx, a, m = fn.args
            any_lane, lo, end, no_wrap = inner.span(a, m, nbytes)
            ok = builder.and_(no_wrap, inner.in_allocation(lo, end, True, ctx))
            if flat:
                def word(index: int) -> ir.Value:
                    ptr = builder.gep(ctx, [ir.Constant(I64, index)], source_etype=I64)
                    return builder.load(ptr, typ=I64)
                ok = builder.and_(ok, builder.not_(inner.flat_apertures(
                    a, m, word(C.SHARED_HI), word(C.PRIVATE_HI))))
            builder.ret(builder.or_(builder.not_(any_lane), ok))
        return self.b.call(fn, [self.gen.ctx, addr, mask])

    def _splat_runtime(self, value: ir.Value, ty: ir.VectorType) -> ir.Value:
        b = self.b
        one = b.insert_element(ir.Constant(_vec(ty.element, 1), ir.Undefined), value,
                               ir.Constant(I32, 0))
        return b.shuffle_vector(one, ir.Constant(_vec(ty.element, 1), ir.Undefined),
                                ir.Constant(_vec(I32, ty.count), [0] * ty.count))

    def scratch_outside(self, offsets: ir.Value, mask: ir.Value, row: ir.Value, size: int
                        ) -> ir.Value:
        """i1: an active lane's private access [offset, offset + size) leaves its row."""
        lanes = offsets.type.count
        name = f"hsapy_jit_scratch_outside_{lanes}_{size}"
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(I1, [offsets.type, mask.type, I64]),
                             name=name)
            fn.linkage = "internal"
            fn.attributes.add("noinline")
            builder = ir.IRBuilder(fn.append_basic_block("entry"))
            inner = _Access(None, None, builder, self.module, lanes)
            offs, m, limit = fn.args
            v64 = offs.type
            end = builder.add(offs, _splat(v64, size))
            outside = builder.or_(builder.icmp_signed("<", offs, _splat(v64, 0)),
                                  builder.icmp_signed(">", end,
                                                      inner._splat_runtime(limit, v64)))
            builder.ret(inner.reduce("or", builder.and_(outside, m)))
        return self.b.call(fn, [offsets, mask, row])

    # loads and stores of lane elements
    def gather(self, addr: ir.Value, mask: ir.Value, elem: ir.Type) -> ir.Value:
        """Per active lane, the ``elem`` at its address (inactive lanes: 0)."""
        b = self.b
        n = addr.type.count
        ptrs = b.inttoptr(addr, _vec(PTR, n))
        ty = _vec(elem, n)
        name = f"llvm.masked.gather.{self.mangle(ty)}.v{n}p0"
        return self.call(name, ty, [ptrs, ir.Constant(I32, 1), mask, ir.Constant(ty, None)])

    def scatter(self, addr: ir.Value, mask: ir.Value, values: ir.Value) -> None:
        """Store each active lane's element (in lane order)."""
        b = self.b
        n = addr.type.count
        ptrs = b.inttoptr(addr, _vec(PTR, n))
        name = f"llvm.masked.scatter.{self.mangle(values.type)}.v{n}p0"
        module = self.module
        fn = module.globals.get(name)
        if fn is None:
            fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [values.type, ptrs.type,
                                                                     I32, mask.type]),
                             name=name)
        b.call(fn, [values, ptrs, ir.Constant(I32, 1), mask])

    def contiguous(self, addr: ir.Value, mask: ir.Value, size: int) -> tuple:
        """(i1, i64): whether every active lane's address is base + lane * ``size`` for one
        base (lanes reading or writing one run of memory, in lane order), and that base."""
        b = self.b
        v64 = addr.type
        lanes = v64.count
        step = ir.Constant(v64, [ir.Constant(I64, k * size) for k in range(lanes)])
        rel = b.sub(addr, step)
        lo = self.reduce("umin", b.select(mask, rel, _splat(v64, MAX64)))
        hi = self.reduce("umax", b.select(mask, rel, _splat(v64, 0)))
        return b.icmp_unsigned("==", lo, hi), lo

    def load_words(self, addr: ir.Value, mask: ir.Value, ndw: int) -> list[ir.Value]:
        """Each active lane's ``ndw`` dwords at its address (inactive lanes: 0), register
        by register. Lanes that read one run of memory in lane order (the common case:
        consecutive work-items, consecutive elements) take one masked vector load instead
        of a gather."""
        b = self.b
        addrs, masks = self.lane_major(addr, mask, ndw, 4)
        ty = _vec(I32, addrs.type.count)
        dense, base = self.contiguous(addr, mask, 4 * ndw)
        with b.if_else(dense) as (fast, slow):
            with fast:
                ptr = b.inttoptr(base, PTR)
                name = f"llvm.masked.load.{self.mangle(ty)}.p0"
                quick = self.call(name, ty, [ptr, ir.Constant(I32, 1), masks,
                                             ir.Constant(ty, None)])
                quick_block = b.block
            with slow:
                gathered = self.gather(addrs, masks, I32)
                slow_block = b.block
        words = b.phi(ty)
        words.add_incoming(quick, quick_block)
        words.add_incoming(gathered, slow_block)
        return self.deinterleave(words, ndw)

    def store_words(self, addr: ir.Value, mask: ir.Value, values: list[ir.Value]) -> None:
        """Store each active lane's dwords (``values``: one vector per register), lane after
        lane; one masked vector store when the lanes write one run of memory in lane order
        (no two lanes overlap then, so the order cannot show)."""
        b = self.b
        ndw = len(values)
        addrs, masks = self.lane_major(addr, mask, ndw, 4)
        data = self.interleave(values)
        dense, base = self.contiguous(addr, mask, 4 * ndw)
        with b.if_else(dense) as (fast, slow):
            with fast:
                ptr = b.inttoptr(base, PTR)
                name = f"llvm.masked.store.{self.mangle(data.type)}.p0"
                fn = self.module.globals.get(name)
                if fn is None:
                    fn = ir.Function(self.module, ir.FunctionType(
                        ir.VoidType(), [data.type, PTR, I32, masks.type]), name=name)
                b.call(fn, [data, ptr, ir.Constant(I32, 1), masks])
            with slow:
                self.scatter(addrs, masks, data)

    def lane_major(self, addr: ir.Value, mask: ir.Value, count: int, step: int
                   ) -> tuple[ir.Value, ir.Value]:
        """Addresses and mask of ``count`` elements per lane, lane after lane."""
        b = self.b
        lanes = addr.type.count
        if count == 1:
            return addr, mask
        n = lanes * count
        spread = b.shuffle_vector(addr, ir.Constant(addr.type, ir.Undefined),
                                  ir.Constant(_vec(I32, n), [i // count for i in range(n)]))
        steps = ir.Constant(_vec(I64, n), [ir.Constant(I64, (i % count) * step)
                                           for i in range(n)])
        mspread = b.shuffle_vector(mask, ir.Constant(mask.type, ir.Undefined),
                                   ir.Constant(_vec(I32, n), [i // count for i in range(n)]))
        return b.add(spread, steps), mspread

    def interleave(self, parts: list[ir.Value]) -> ir.Value:
        """[lane0 of part 0, lane0 of part 1, ..., lane1 of part 0, ...]."""
        b = self.b
        count = len(parts)
        if count == 1:
            return parts[0]
        lanes = parts[0].type.count
        joined = parts[0]
        for part in parts[1:]:
            width = joined.type.count
            mask = list(range(width)) + [width + i for i in range(lanes)]
            padded = b.shuffle_vector(part, ir.Constant(part.type, ir.Undefined),
                                      ir.Constant(_vec(I32, width),
                                                  [min(i, lanes - 1) for i in range(width)]))
            joined = b.shuffle_vector(joined, padded, ir.Constant(_vec(I32, len(mask)), mask))
        order = [(i % count) * lanes + i // count for i in range(lanes * count)]
        return b.shuffle_vector(joined, ir.Constant(joined.type, ir.Undefined),
                                ir.Constant(_vec(I32, lanes * count), order))

    def deinterleave(self, value: ir.Value, count: int) -> list[ir.Value]:
        b = self.b
        if count == 1:
            return [value]
        lanes = value.type.count // count
        return [b.shuffle_vector(value, ir.Constant(value.type, ir.Undefined),
                                 ir.Constant(_vec(I32, lanes), [lane * count + k
                                                                for lane in range(lanes)]))
                for k in range(count)]


_LOOKUP = "hsapy_jit_in_allocation"


def _lookup_function(module: ir.Module) -> ir.Function:
    """``i64 lookup(ctx, lo, end, agent)``: 1 when [lo, end) lies inside one allocation of the
    context's table (sorted starts, ends, agent flags; binary search)."""
    fn = module.globals.get(_LOOKUP)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(I64, [PTR, I64, I64, I64]), name=_LOOKUP)
    fn.linkage = "internal"
    ctx, lo, end, agent = fn.args
    entry = fn.append_basic_block("entry")
    loop = fn.append_basic_block("loop")
    body = fn.append_basic_block("body")
    found = fn.append_basic_block("found")
    b = ir.IRBuilder(entry)

    def field(index: int) -> ir.Value:
        return b.load(b.gep(ctx, [ir.Constant(I64, index)], source_etype=I64), typ=I64)

    starts = b.inttoptr(field(C.ALLOC_STARTS), PTR)
    ends = b.inttoptr(field(C.ALLOC_ENDS), PTR)
    flags = b.inttoptr(field(C.ALLOC_AGENT), PTR)
    count = field(C.ALLOC_COUNT)

    def inside(idx: ir.Value) -> ir.Value:
        alloc_end = b.load(b.gep(ends, [idx], source_etype=I64), typ=I64)
        flag = b.zext(b.load(b.gep(flags, [idx], source_etype=I8), typ=I8), I64)
        allowed = b.or_(b.icmp_unsigned("==", agent, ir.Constant(I64, 0)),
                        b.icmp_unsigned("!=", flag, ir.Constant(I64, 0)))
        return b.and_(b.icmp_unsigned("<=", end, alloc_end), allowed)

    # the allocation the previous lookup found first: a wave's accesses, and the next wave's,
    # mostly fall in the same one
    last_ptr = b.gep(ctx, [ir.Constant(I64, C.ALLOC_LAST)], source_etype=I64)
    last = b.load(last_ptr, typ=I64)
    cached = fn.append_basic_block("cached")
    cached_hit = fn.append_basic_block("cached_hit")
    b.cbranch(b.icmp_unsigned("!=", last, ir.Constant(I64, 0)), cached, loop)
    b.position_at_end(cached)
    prev = b.sub(last, ir.Constant(I64, 1))
    prev_start = b.load(b.gep(starts, [prev], source_etype=I64), typ=I64)
    b.cbranch(b.and_(b.icmp_unsigned("<=", prev_start, lo), inside(prev)), cached_hit, loop)
    b.position_at_end(cached_hit)
    b.ret(ir.Constant(I64, 1))
    b.position_at_end(loop)
    left = b.phi(I64)
    right = b.phi(I64)
    left.add_incoming(ir.Constant(I64, 0), entry)
    right.add_incoming(count, entry)
    left.add_incoming(ir.Constant(I64, 0), cached)
    right.add_incoming(count, cached)
    b.cbranch(b.icmp_unsigned("<", left, right), body, found)
    b.position_at_end(body)
    mid = b.lshr(b.add(left, right), ir.Constant(I64, 1))
    start = b.load(b.gep(starts, [mid], source_etype=I64), typ=I64)
    below = b.icmp_unsigned("<=", start, lo)
    left.add_incoming(b.select(below, b.add(mid, ir.Constant(I64, 1)), left), body)
    right.add_incoming(b.select(below, right, mid), body)
    b.branch(loop)
    b.position_at_end(found)
    hit = fn.append_basic_block("hit")
    miss = fn.append_basic_block("miss")
    b.cbranch(b.icmp_unsigned("==", left, ir.Constant(I64, 0)), miss, hit)
    b.position_at_end(miss)
    b.ret(ir.Constant(I64, 0))
    b.position_at_end(hit)
    idx = b.sub(left, ir.Constant(I64, 1))
    ok = inside(idx)
    b.store(b.select(ok, left, last), last_ptr)
    b.ret(b.zext(ok, I64))
    return fn


# --- per kind -------------------------------------------------------------------------------------

def emit_check(gen: Any, state: Any, step: Any) -> ir.Value:
    """i1: this wave's access of a memory write may take the fast path (all-waves check)."""
    op: MemOp = step.mem
    acc = _Access(gen, state)
    mask = state.exec_mask()
    addr = acc.global_addresses(op)
    return acc.global_ok(addr, mask, max(op.size, 1), op.flat)


def emit(gen: Any, state: Any, step: Any, seg: Any, k: int) -> None:
    """Perform the memory instruction of ``step`` for the current wave."""
    op: MemOp = step.mem
    acc = _Access(gen, state)
    kind = op.kind
    if kind == "global_load":
        _global_load(gen, state, acc, op, seg, k)
    elif kind == "global_store":
        _global_store(gen, state, acc, op)
    elif kind == "global_atomic":
        _global_atomic(gen, state, acc, op)
    elif kind == "smem_load":
        _smem_load(gen, state, acc, op, seg, k)
    elif kind in ("ds_load", "ds_load2"):
        _ds_load(gen, state, acc, op)
    elif kind in ("ds_store", "ds_store2"):
        _ds_store(gen, state, acc, op)
    elif kind == "ds_atomic":
        _ds_atomic_code(gen, state, acc, op)
    elif kind in ("scratch_load", "scratch_store"):
        _scratch_access(gen, state, acc, op, seg, k)
    else:
        raise NotNative(kind)


def _extend(acc: _Access, state: Any, raw: ir.Value, op: MemOp, dst_key: tuple) -> ir.Value:
    """A sub-dword load's value as the new 32-bit register contents (semantics_mem._extend)."""
    b = acc.b
    v32 = _vec(I32, acc.lanes)
    value = b.sext(raw, v32) if op.ext.startswith("s") else b.zext(raw, v32)
    if op.ext.endswith("16"):
        current = state.get(dst_key)
        value = b.and_(value, _splat(v32, 0xFFFF))
        if op.hi:
            return b.or_(b.and_(current, _splat(v32, 0xFFFF)), b.shl(value, _splat(v32, 16)))
        return b.or_(b.and_(current, _splat(v32, 0xFFFF0000)), value)
    return value


def _commit(acc: _Access, state: Any, key: tuple, value: ir.Value, mask: ir.Value) -> None:
    state.set(key, acc.b.select(mask, value, state.get(key)))


def _global_load(gen: Any, state: Any, acc: _Access, op: MemOp, seg: Any, k: int) -> None:
    b = acc.b
    mask = state.exec_mask()
    addr = acc.global_addresses(op)
    gen.bail_if(b.not_(acc.global_ok(addr, mask, op.size, op.flat)), state, seg, k)
    if op.ext == "d":
        ndw = max(1, op.size // 4)
        olds = [state.get(_reg_key(op.dst, j)) for j in range(ndw)]
        for j, word in enumerate(acc.load_words(addr, mask, ndw)):
            state.set(_reg_key(op.dst, j), b.select(mask, word, olds[j]))
        return
    elem = I8 if op.size == 1 else I16
    raw = acc.gather(addr, mask, elem)
    key = _reg_key(op.dst)
    _commit(acc, state, key, _extend(acc, state, raw, op, key), mask)


def _store_values(acc: _Access, state: Any, op: MemOp, data: Any) -> list[ir.Value]:
    ndw = max(1, op.size // 4)
    return [state.get(_reg_key(data, j)) for j in range(ndw)]


def _global_store(gen: Any, state: Any, acc: _Access, op: MemOp) -> None:
    b = acc.b
    mask = state.exec_mask()
    addr = acc.global_addresses(op)
    values = _store_values(acc, state, op, op.data[0])
    if op.size >= 4:
        acc.store_words(addr, mask, values)
        return
    word = values[0]
    v32 = word.type
    if op.hi:
        word = b.lshr(word, _splat(v32, 16))
    elem = I8 if op.size == 1 else I16
    acc.scatter(addr, mask, b.trunc(word, _vec(elem, acc.lanes)))


def _smem_load(gen: Any, state: Any, acc: _Access, op: MemOp, seg: Any, k: int) -> None:
    b = acc.b
    base_lo = acc.gen_scalar(state.get(("s", op.saddr.index)))
    base_hi = acc.gen_scalar(state.get(("s", op.saddr.index + 1)))
    base = b.or_(b.zext(base_lo, I64), b.shl(b.zext(base_hi, I64), ir.Constant(I64, 32)))
    offset = ir.Constant(I64, op.offset & MAX64)
    for sop in op.soffsets:
        offset = b.add(offset, b.zext(acc.gen_scalar(state.get(("s", sop.index))), I64))
    addr = b.and_(b.add(base, offset), ir.Constant(I64, MAX64 & ~3))
    ndw = op.size // 4
    end = b.add(addr, ir.Constant(I64, 4 * ndw))
    ok = b.and_(b.icmp_unsigned(">=", end, addr), acc.in_allocation(addr, end, False))
    gen.bail_if(b.not_(ok), state, seg, k)
    ptr = b.inttoptr(addr, PTR)
    words = b.load(ptr, typ=_vec(I32, ndw), align=4)
    for j in range(ndw):
        state.set(("s", op.dst.index + j), b.extract_element(words, ir.Constant(I32, j)))


# --- scratch --------------------------------------------------------------------------------------

def _scratch_access(gen: Any, state: Any, acc: _Access, op: MemOp, seg: Any, k: int) -> None:
    """semantics_mem.scratch_load / scratch_store: each lane's private row at offset + VGPR +
    SGPR (a 64-bit sum); an active lane outside the row hands the wave back (the interpreter
    faults)."""
    b = acc.b
    lanes = acc.lanes
    v64 = _vec(I64, lanes)
    offsets = _splat(v64, op.offset)
    if op.vaddr is not None:
        offsets = b.add(offsets, b.zext(state.get(("v", op.vaddr.index)), v64))
    if op.saddr is not None:
        sofs = b.zext(acc.gen_scalar(state.get(("s", op.saddr.index))), I64)
        offsets = b.add(offsets, acc._splat_runtime(sofs, v64))
    mask = state.exec_mask()
    row = gen.field(C.SCRATCH_ROW)
    row_v = acc._splat_runtime(row, v64)
    gen.bail_if(acc.scratch_outside(offsets, mask, row, op.size), state, seg, k)
    lane_rows = b.add(acc._splat_runtime(b.mul(state.wave, ir.Constant(I64, lanes)), v64),
                      ir.Constant(v64, [ir.Constant(I64, i) for i in range(lanes)]))
    host = b.add(b.add(acc._splat_runtime(gen.field(C.SCRATCH), v64), b.mul(lane_rows, row_v)),
                 offsets)
    if op.kind == "scratch_load":
        if op.ext == "d":
            ndw = max(1, op.size // 4)
            addrs, masks = acc.lane_major(host, mask, ndw, 4)
            for j, word in enumerate(acc.deinterleave(acc.gather(addrs, masks, I32), ndw)):
                _commit(acc, state, ("v", op.dst.index + j), word, mask)
            return
        raw = acc.gather(host, mask, I8 if op.size == 1 else I16)
        key = ("v", op.dst.index)
        _commit(acc, state, key, _extend(acc, state, raw, op, key), mask)
        return
    values = _store_values(acc, state, op, op.data[0])
    if op.size >= 4:
        ndw = op.size // 4
        addrs, masks = acc.lane_major(host, mask, ndw, 4)
        acc.scatter(addrs, masks, acc.interleave(values))
        return
    word = values[0]
    if op.hi:
        word = b.lshr(word, _splat(word.type, 16))
    acc.scatter(host, mask, b.trunc(word, _vec(I8 if op.size == 1 else I16, lanes)))


# --- LDS ------------------------------------------------------------------------------------------

def _lds_base(gen: Any, state: Any) -> ir.Value:
    """This wave's workgroup's LDS (i64 address)."""
    b = gen.b
    wg_ptr = gen.ptr_field(C.WG)
    wg = b.load(b.gep(wg_ptr, [state.wave], source_etype=I64), typ=I64)
    return b.add(gen.field(C.LDS), b.mul(wg, gen.field(C.LDS_STRIDE)))


def _lds_lanes(acc: _Access, state: Any, op: MemOp, offset: int, size: int
               ) -> tuple[ir.Value, ir.Value]:
    """(host addresses, in-range mask & EXEC) of a DS access at ADDR + offset (32-bit sum)."""
    b, gen = acc.b, acc.gen
    v32 = _vec(I32, acc.lanes)
    v64 = _vec(I64, acc.lanes)
    lds_addr = b.zext(b.add(state.get(("v", op.vaddr.index)), _splat(v32, offset & 0xFFFFFFFF)),
                      v64)
    size_v = acc._splat_runtime(gen.field(C.LDS_SIZE), v64)
    ok = b.icmp_unsigned("<=", b.add(lds_addr, _splat(v64, size)), size_v)
    mask = b.and_(state.exec_mask(), ok)
    host = b.add(acc._splat_runtime(_lds_base(gen, state), v64), lds_addr)
    return host, mask


def _ds_load(gen: Any, state: Any, acc: _Access, op: MemOp) -> None:
    exec_mask = state.exec_mask()
    if op.kind == "ds_load2":
        ndw = op.size // 4
        parts = []
        for off in op.offsets2:
            host, mask = _lds_lanes(acc, state, op, off, op.size)
            addrs, masks = acc.lane_major(host, mask, ndw, 4)
            parts.extend(acc.deinterleave(acc.gather(addrs, masks, I32), ndw))
        for j, word in enumerate(parts):
            _commit(acc, state, ("v", op.dst.index + j), word, exec_mask)
        return
    host, mask = _lds_lanes(acc, state, op, op.offset, op.size)
    if op.ext == "d":
        ndw = op.size // 4
        addrs, masks = acc.lane_major(host, mask, ndw, 4)
        for j, word in enumerate(acc.deinterleave(acc.gather(addrs, masks, I32), ndw)):
            _commit(acc, state, ("v", op.dst.index + j), word, exec_mask)
        return
    raw = acc.gather(host, mask, I8 if op.size == 1 else I16)
    key = ("v", op.dst.index)
    _commit(acc, state, key, _extend(acc, state, raw, op, key), exec_mask)


def _ds_store(gen: Any, state: Any, acc: _Access, op: MemOp) -> None:
    b = acc.b
    pairs = list(zip(op.offsets2, op.data)) if op.kind == "ds_store2" else \
        [(op.offset, op.data[0])]
    for off, data in pairs:
        host, mask = _lds_lanes(acc, state, op, off, op.size)
        values = _store_values(acc, state, op, data)
        if op.size >= 4:
            ndw = op.size // 4
            addrs, masks = acc.lane_major(host, mask, ndw, 4)
            acc.scatter(addrs, masks, acc.interleave(values))
            continue
        word = values[0]
        if op.hi:
            word = b.lshr(word, _splat(word.type, 16))
        acc.scatter(host, mask, b.trunc(word, _vec(I8 if op.size == 1 else I16, acc.lanes)))


# --- atomics --------------------------------------------------------------------------------------

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


def _rmw_loop(gen: Any, state: Any, acc: _Access, op: MemOp, host: ir.Value,
              lane_ok: ir.Value) -> list[ir.Value] | None:
    """Lane after lane (in lane order), for lanes in ``lane_ok``: old = memory, memory =
    update(old, data); returns the old values as dword vectors (lanes not in ``lane_ok``: 0)."""
    b = acc.b
    lanes = acc.lanes
    ndw = op.size // 4
    ety = {4: I32, 8: I64}[op.size]
    ftype = vector_type(op.dtype, 1)
    data_words = [state.get(("v", op.data[0].index + j)) for j in range(ndw)]
    cmp_words = [state.get(("v", op.data[1].index + j)) for j in range(ndw)] \
        if op.cmpswap and len(op.data) > 1 else None
    if op.cmpswap and cmp_words is None:
        if op.data[0].count >= 2 * ndw:
            cmp_words = [state.get(("v", op.data[0].index + ndw + j)) for j in range(ndw)]
        else:
            raise NotNative("compare-swap without a compare operand")
    if op.cmpswap == "cmpst":          # gfx9 ds_cmpst: data0 compare, data1 new value
        data_words, cmp_words = cmp_words, data_words

    def element(words: list[ir.Value], lane: ir.Value) -> ir.Value:
        parts = [b.zext(b.extract_element(w, lane), I64) for w in words]
        value = parts[0]
        if ndw == 2:
            value = b.or_(value, b.shl(parts[1], ir.Constant(I64, 32)))
        return value if ety is I64 else b.trunc(value, I32)

    graph = op.graph
    old_store = gen.alloca(_vec(ety, lanes))
    b.store(ir.Constant(_vec(ety, lanes), None), old_store)
    lane_var = gen.alloca(I64)
    b.store(ir.Constant(I64, 0), lane_var)
    head = gen.fn.append_basic_block("rmw_head")
    body = gen.fn.append_basic_block("rmw_body")
    do = gen.fn.append_basic_block("rmw_do")
    nxt = gen.fn.append_basic_block("rmw_next")
    done = gen.fn.append_basic_block("rmw_done")
    b.branch(head)
    b.position_at_end(head)
    lane = b.load(lane_var)
    b.cbranch(b.icmp_signed("<", lane, ir.Constant(I64, lanes)), body, done)
    b.position_at_end(body)
    lane32 = b.trunc(lane, I32)
    b.cbranch(b.extract_element(lane_ok, lane32), do, nxt)
    b.position_at_end(do)
    ptr = b.inttoptr(b.extract_element(host, lane32), PTR)
    old_bits = b.load(ptr, typ=ety, align=1)
    inputs = {("old",): old_bits, ("value",): element(data_words, lane32)}
    if cmp_words is not None:
        inputs[("cmp",)] = element(cmp_words, lane32)

    def load_input(key: tuple, node: Any) -> ir.Value:
        bits = inputs[key]
        return b.bitcast(bits, ftype) if op.dtype.kind == "f" else bits
    lower = Lowerer(b, load_input)
    new = lower.value(graph)
    if op.dtype.kind == "f":
        new = b.bitcast(new, ety)
    b.store(new, ptr, align=1)
    olds = b.load(old_store)
    b.store(b.insert_element(olds, old_bits, lane32), old_store)
    b.branch(nxt)
    b.position_at_end(nxt)
    b.store(b.add(lane, ir.Constant(I64, 1)), lane_var)
    b.branch(head)
    b.position_at_end(done)
    if not op.returns:
        return None
    olds = b.load(old_store)
    if ndw == 1:
        return [olds]
    v32 = _vec(I32, lanes)
    return [b.trunc(olds, v32), b.trunc(b.lshr(olds, _splat(olds.type, 32)), v32)]


def _global_atomic(gen: Any, state: Any, acc: _Access, op: MemOp) -> None:
    mask = state.exec_mask()
    addr = acc.global_addresses(op)
    olds = _rmw_loop(gen, state, acc, op, addr, mask)
    if olds is not None and op.dst is not None:
        for j, word in enumerate(olds):
            _commit(acc, state, ("v", op.dst.index + j), word, mask)


def _ds_atomic_code(gen: Any, state: Any, acc: _Access, op: MemOp) -> None:
    exec_mask = state.exec_mask()
    host, mask = _lds_lanes(acc, state, op, op.offset, op.size)
    olds = _rmw_loop(gen, state, acc, op, host, mask)
    if olds is not None and op.dst is not None:
        for j, word in enumerate(olds):
            # an out-of-range lane returns 0 (semantics_mem.lds_load)
            _commit(acc, state, ("v", op.dst.index + j), word, exec_mask)
