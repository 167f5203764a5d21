"""Memory instructions in generated code: global/flat loads, stores and atomics, scalar loads,
scratch accesses, LDS (DS) reads, writes and atomics, each from the
:class:`~hsapy.sim.isa.jit.memops.MemOp` that hsapy/sim/isa/jit/memops.py describes.

Every access to simulated memory is checked first (hsapy/sim/isa/jit/memaccess.py): the active
lanes' bytes must lie inside one allocation of the table the caller passes (the executing agent
allowed, except for scalar loads, which the interpreter does not check for the agent either).
Anything else -- an access spanning allocations, a fault, a flat address in the LDS or scratch
aperture -- hands the wave back to the interpreter before the instruction, which then performs
or faults it exactly as it always does. LDS accesses follow the interpreter's rules: per
workgroup, out-of-range lanes read 0 and write nothing.

Lane order is kept wherever it shows: atomics apply lane by lane, a store writes lane after
lane (a later lane wins an overlap), waves in order.
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir

from hsapy.sim.isa.jit import context as C
from hsapy.sim.isa.jit.lower import I8, I16, I32, I64, Lowerer, vector_type
from hsapy.sim.isa.jit.memaccess import MAX64, PTR, Access, splat, vec
from hsapy.sim.isa.jit.memops import MemOp, NotNative

__all__ = ["emit", "emit_check"]


def _reg_key(op: Any, k: int = 0) -> tuple:
    return ("a" if op.kind == "agpr" else "v", op.index + k)


def emit_check(gen: Any, state: Any, step: Any) -> ir.Value:
    """i1: this wave's access of a memory write may take the fast path (all-waves check)."""
    op: MemOp = step.mem
    acc = Access(gen, state)
    mask = state.exec_mask()
    addr = acc.global_addresses(op)
    return acc.global_ok(addr, mask, max(op.size, 1), op.flat)


def emit(gen: Any, state: Any, step: Any, seg: Any, k: int) -> None:
    """Perform the memory instruction of ``step`` for the current wave."""
    op: MemOp = step.mem
    acc = Access(gen, state)
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


def _extend(acc: Access, state: Any, raw: ir.Value, op: MemOp, dst_key: tuple) -> ir.Value:
    """A sub-dword load's value as the new 32-bit register contents (memory_access._extend)."""
    b = acc.b
    v32 = vec(I32, acc.lanes)
    value = b.sext(raw, v32) if op.ext.startswith("s") else b.zext(raw, v32)
    if op.ext.endswith("16"):
        current = state.get(dst_key)
        value = b.and_(value, splat(v32, 0xFFFF))
        if op.hi:
            return b.or_(b.and_(current, splat(v32, 0xFFFF)), b.shl(value, splat(v32, 16)))
        return b.or_(b.and_(current, splat(v32, 0xFFFF0000)), value)
    return value


def _commit(acc: Access, state: Any, key: tuple, value: ir.Value, mask: ir.Value) -> None:
    state.set(key, acc.b.select(mask, value, state.get(key)))


def _global_load(gen: Any, state: Any, acc: Access, op: MemOp, seg: Any, k: int) -> None:
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


def _store_values(acc: Access, state: Any, op: MemOp, data: Any) -> list[ir.Value]:
    ndw = max(1, op.size // 4)
    return [state.get(_reg_key(data, j)) for j in range(ndw)]


def _global_store(gen: Any, state: Any, acc: Access, op: MemOp) -> None:
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
        word = b.lshr(word, splat(v32, 16))
    elem = I8 if op.size == 1 else I16
    acc.scatter(addr, mask, b.trunc(word, vec(elem, acc.lanes)))


def _smem_load(gen: Any, state: Any, acc: Access, op: MemOp, seg: Any, k: int) -> None:
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
    words = b.load(ptr, typ=vec(I32, ndw), align=4)
    for j in range(ndw):
        state.set(("s", op.dst.index + j), b.extract_element(words, ir.Constant(I32, j)))


# --- scratch --------------------------------------------------------------------------------------

def _scratch_access(gen: Any, state: Any, acc: Access, op: MemOp, seg: Any, k: int) -> None:
    """memory_access.scratch_load / scratch_store: each lane's private row at offset + VGPR +
    SGPR (a 64-bit sum); an active lane outside the row hands the wave back (the interpreter
    faults)."""
    b = acc.b
    lanes = acc.lanes
    v64 = vec(I64, lanes)
    offsets = splat(v64, op.offset)
    if op.vaddr is not None:
        offsets = b.add(offsets, b.zext(state.get(("v", op.vaddr.index)), v64))
    if op.saddr is not None:
        sofs = b.zext(acc.gen_scalar(state.get(("s", op.saddr.index))), I64)
        offsets = b.add(offsets, acc.splat_runtime(sofs, v64))
    mask = state.exec_mask()
    row = gen.field(C.SCRATCH_ROW)
    row_v = acc.splat_runtime(row, v64)
    gen.bail_if(acc.scratch_outside(offsets, mask, row, op.size), state, seg, k)
    lane_rows = b.add(acc.splat_runtime(b.mul(state.wave, ir.Constant(I64, lanes)), v64),
                      ir.Constant(v64, [ir.Constant(I64, i) for i in range(lanes)]))
    host = b.add(b.add(acc.splat_runtime(gen.field(C.SCRATCH), v64), b.mul(lane_rows, row_v)),
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
        word = b.lshr(word, splat(word.type, 16))
    acc.scatter(host, mask, b.trunc(word, vec(I8 if op.size == 1 else I16, lanes)))


# --- LDS ------------------------------------------------------------------------------------------

def _lds_base(gen: Any, state: Any) -> ir.Value:
    """This wave's workgroup's LDS (i64 address)."""
    b = gen.b
    wg_ptr = gen.ptr_field(C.WG)
    wg = b.load(b.gep(wg_ptr, [state.wave], source_etype=I64), typ=I64)
    return b.add(gen.field(C.LDS), b.mul(wg, gen.field(C.LDS_STRIDE)))


def _lds_lanes(acc: Access, state: Any, op: MemOp, offset: int, size: int
               ) -> tuple[ir.Value, ir.Value]:
    """(host addresses, in-range mask & EXEC) of a DS access at ADDR + offset (32-bit sum)."""
    b, gen = acc.b, acc.gen
    v32 = vec(I32, acc.lanes)
    v64 = vec(I64, acc.lanes)
    lds_addr = b.zext(b.add(state.get(("v", op.vaddr.index)), splat(v32, offset & 0xFFFFFFFF)),
                      v64)
    size_v = acc.splat_runtime(gen.field(C.LDS_SIZE), v64)
    ok = b.icmp_unsigned("<=", b.add(lds_addr, splat(v64, size)), size_v)
    mask = b.and_(state.exec_mask(), ok)
    host = b.add(acc.splat_runtime(_lds_base(gen, state), v64), lds_addr)
    return host, mask


def _ds_load(gen: Any, state: Any, acc: Access, op: MemOp) -> None:
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


def _ds_store(gen: Any, state: Any, acc: Access, op: MemOp) -> None:
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
            word = b.lshr(word, splat(word.type, 16))
        acc.scatter(host, mask, b.trunc(word, vec(I8 if op.size == 1 else I16, acc.lanes)))


# --- atomics --------------------------------------------------------------------------------------

def _rmw_loop(gen: Any, state: Any, acc: Access, op: MemOp, host: ir.Value,
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
    old_store = gen.alloca(vec(ety, lanes))
    b.store(ir.Constant(vec(ety, lanes), None), old_store)
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
    v32 = vec(I32, lanes)
    return [b.trunc(olds, v32), b.trunc(b.lshr(olds, splat(olds.type, 32)), v32)]


def _global_atomic(gen: Any, state: Any, acc: Access, op: MemOp) -> None:
    mask = state.exec_mask()
    addr = acc.global_addresses(op)
    olds = _rmw_loop(gen, state, acc, op, addr, mask)
    if olds is not None and op.dst is not None:
        for j, word in enumerate(olds):
            _commit(acc, state, ("v", op.dst.index + j), word, mask)


def _ds_atomic_code(gen: Any, state: Any, acc: Access, op: MemOp) -> None:
    exec_mask = state.exec_mask()
    host, mask = _lds_lanes(acc, state, op, op.offset, op.size)
    olds = _rmw_loop(gen, state, acc, op, host, mask)
    if olds is not None and op.dst is not None:
        for j, word in enumerate(olds):
            # an out-of-range lane returns 0 (memory_access.lds_load)
            _commit(acc, state, ("v", op.dst.index + j), word, exec_mask)
