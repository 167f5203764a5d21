"""One memory access of one wave in LLVM IR (:class:`Access`): lane addresses, the checks that
hand a wave back to the interpreter before it touches memory (every active lane's bytes inside
one allocation of the caller's table, the agent allowed; no flat address in the LDS or scratch
aperture; private accesses inside their row), and masked gathers, scatters and vector loads and
stores in lane order. hsapy/sim/isa/jit/memcode.py builds each memory instruction from them.
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir

from hsapy.sim.isa.jit import context as C
from hsapy.sim.isa.jit.lower import I1, I8, I32, I64
from hsapy.sim.isa.jit.memops import MemOp

__all__ = ["Access", "PTR", "MAX64", "vec", "splat"]

PTR = ir.PointerType()
MAX64 = (1 << 64) - 1


def vec(ty: ir.Type, n: int) -> ir.VectorType:
    return ir.VectorType(ty, n)


def splat(ty: ir.VectorType, value: int) -> ir.Constant:
    return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)


class Access:
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
        v64 = vec(I64, lanes)
        if op.saddr is not None:
            lo = state.get(("s", op.saddr.index))
            hi = state.get(("s", op.saddr.index + 1))
            base = b.or_(b.zext(self.gen_scalar(lo), I64),
                         b.shl(b.zext(self.gen_scalar(hi), I64), ir.Constant(I64, 32)))
            vofs = b.zext(state.get(("v", op.vaddr.index)), v64)
            base_v = b.insert_element(ir.Constant(vec(I64, 1), ir.Undefined), base,
                                      ir.Constant(I32, 0))
            base_v = b.shuffle_vector(base_v, ir.Constant(vec(I64, 1), ir.Undefined),
                                      ir.Constant(vec(I32, lanes), [0] * lanes))
            addr = b.add(base_v, vofs)
        else:
            lo = b.zext(state.get(("v", op.vaddr.index)), v64)
            hi = b.zext(state.get(("v", op.vaddr.index + 1)), v64)
            addr = b.or_(lo, b.shl(hi, splat(v64, 32)))
        return b.add(addr, splat(v64, op.offset & MAX64))

    def gen_scalar(self, value: ir.Value) -> ir.Value:
        if isinstance(value.type, ir.VectorType):
            return self.b.extract_element(value, ir.Constant(I32, 0))
        return value

    def span(self, addr: ir.Value, mask: ir.Value, nbytes: int) -> tuple:
        """(any lane active, lowest address, one past the highest byte, no wrap) of the
        active lanes' accesses of ``nbytes`` each."""
        b = self.b
        v64 = addr.type
        lo = self.reduce("umin", b.select(mask, addr, splat(v64, MAX64)))
        top = self.reduce("umax", b.select(mask, addr, splat(v64, 0)))
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
        top = b.lshr(addr, splat(v64, 32))
        shared = self.splat_runtime(shared_hi, v64)
        private = self.splat_runtime(private_hi, v64)
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
            inner = Access(None, None, builder, self.module, lanes)
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

    def splat_runtime(self, value: ir.Value, ty: ir.VectorType) -> ir.Value:
        b = self.b
        one = b.insert_element(ir.Constant(vec(ty.element, 1), ir.Undefined), value,
                               ir.Constant(I32, 0))
        return b.shuffle_vector(one, ir.Constant(vec(ty.element, 1), ir.Undefined),
                                ir.Constant(vec(I32, ty.count), [0] * ty.count))

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
            inner = Access(None, None, builder, self.module, lanes)
            offs, m, limit = fn.args
            v64 = offs.type
            end = builder.add(offs, splat(v64, size))
            outside = builder.or_(builder.icmp_signed("<", offs, splat(v64, 0)),
                                  builder.icmp_signed(">", end,
                                                      inner.splat_runtime(limit, v64)))
            builder.ret(inner.reduce("or", builder.and_(outside, m)))
        return self.b.call(fn, [offsets, mask, row])

    # loads and stores of lane elements
    def gather(self, addr: ir.Value, mask: ir.Value, elem: ir.Type) -> ir.Value:
        """Per active lane, the ``elem`` at its address (inactive lanes: 0)."""
        b = self.b
        n = addr.type.count
        ptrs = b.inttoptr(addr, vec(PTR, n))
        ty = vec(elem, n)
        name = f"llvm.masked.gather.{self.mangle(ty)}.v{n}p0"
        return self.call(name, ty, [ptrs, ir.Constant(I32, 1), mask, ir.Constant(ty, None)])

    def scatter(self, addr: ir.Value, mask: ir.Value, values: ir.Value) -> None:
        """Store each active lane's element (in lane order)."""
        b = self.b
        n = addr.type.count
        ptrs = b.inttoptr(addr, vec(PTR, n))
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
        lo = self.reduce("umin", b.select(mask, rel, splat(v64, MAX64)))
        hi = self.reduce("umax", b.select(mask, rel, splat(v64, 0)))
        return b.icmp_unsigned("==", lo, hi), lo

    def load_words(self, addr: ir.Value, mask: ir.Value, ndw: int) -> list[ir.Value]:
        """Each active lane's ``ndw`` dwords at its address (inactive lanes: 0), register
        by register. Lanes that read one run of memory in lane order (the common case:
        consecutive work-items, consecutive elements) take one masked vector load instead
        of a gather."""
        b = self.b
        addrs, masks = self.lane_major(addr, mask, ndw, 4)
        ty = vec(I32, addrs.type.count)
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
                                  ir.Constant(vec(I32, n), [i // count for i in range(n)]))
        steps = ir.Constant(vec(I64, n), [ir.Constant(I64, (i % count) * step)
                                           for i in range(n)])
        mspread = b.shuffle_vector(mask, ir.Constant(mask.type, ir.Undefined),
                                   ir.Constant(vec(I32, n), [i // count for i in range(n)]))
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
                                      ir.Constant(vec(I32, width),
                                                  [min(i, lanes - 1) for i in range(width)]))
            joined = b.shuffle_vector(joined, padded, ir.Constant(vec(I32, len(mask)), mask))
        order = [(i % count) * lanes + i // count for i in range(lanes * count)]
        return b.shuffle_vector(joined, ir.Constant(joined.type, ir.Undefined),
                                ir.Constant(vec(I32, lanes * count), order))

    def deinterleave(self, value: ir.Value, count: int) -> list[ir.Value]:
        b = self.b
        if count == 1:
            return [value]
        lanes = value.type.count // count
        return [b.shuffle_vector(value, ir.Constant(value.type, ir.Undefined),
                                 ir.Constant(vec(I32, lanes), [lane * count + k
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
