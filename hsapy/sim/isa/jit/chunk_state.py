"""A chunk's initial wave state, written by host code in one call.

The compiled engine's chunks of whole workgroups share most of their initial state with the
first chunk of their size (see ``JitExecutor._initial_batch``): zeroed registers, the
work-item id rows, the user SGPRs, EXEC, the wave-to-workgroup map; only the workgroup ids
differ. Writing that with numpy takes about twenty array operations per chunk, and each one on
a large array lets the GIL go and queues to take it back while other threads run their chunks.
:func:`write` does all of it in one call of generated code (built once per process with
llvmlite), which lets the GIL go once.

The job is an ``int64`` array of :data:`SIZE` words (field numbers below); the workgroup-id
columns are those of :func:`hsapy.sim.isa.interpreter.workgroup_id_columns` (x, y, z,
z << 16 | y, 0), each going to the SGPR in ``COLUMNS + column`` (-1: nowhere).
"""
from __future__ import annotations

import threading
from typing import Any

from llvmlite import ir

from hsapy.sim.isa.jit.compiler import RUN_TYPE, compiler
from hsapy.sim.isa.wave import NSREG, TTMP0

__all__ = ["SIZE", "write", "function_address"]

# job words (pointers are addresses; *_BYTES are byte counts)
S, S_BYTES, V, V_BYTES, IDS, IDS_BYTES, A, A_BYTES = range(8)
USER, USER_BYTES = 8, 9          # uint32[k]: one wave's user SGPRs s0..s(k-1)
WAVE_FIELD = 10                  # uint32[W]: gfx12's TTMP8 per wave (0: none)
WAVES, START, NX, NY = 11, 12, 13, 14
EXEC, LIVE, EXEC_BYTES = 15, 16, 17
SCC, WG, WG_LOCAL = 18, 19, 20   # bool[W]; int64[W] written from int64[W]
COLUMNS = 21                     # 5 words: SGPR of x, y, z, z << 16 | y and 0 (-1: none)
SIZE = 26

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
NAME = "hsapy_chunk_state"

_lock = threading.Lock()
_compiled: list[Any] = []


def write(job_address: int) -> None:
    """Write the state the job at ``job_address`` describes (the GIL is released meanwhile)."""
    if not _compiled:
        function_address()
    _compiled[0](job_address)


def function_address() -> int:
    """The address of the compiled ``int64 (int64 *job)`` function :func:`write` calls
    (generated code calls it too: :mod:`hsapy.sim.isa.jit.chunk_loop`)."""
    if not _compiled:
        with _lock:
            if not _compiled:
                address, keep = compiler().compile(_module(), NAME)
                _compiled.extend((RUN_TYPE(address), keep, address))
    return _compiled[2]


def _module() -> ir.Module:
    module = ir.Module(name=NAME)
    fn = ir.Function(module, ir.FunctionType(I64, [PTR]), name=NAME)
    memset = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I8, I64, I1]),
                         name="llvm.memset.p0.i64")
    memcpy = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I1]),
                         name="llvm.memcpy.p0.p0.i64")
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    job = fn.args[0]
    no = ir.Constant(I1, 0)

    def word(index: int) -> ir.Value:
        return b.load(b.gep(job, [ir.Constant(I64, index)], source_etype=I64), typ=I64)

    def pointer(index: int) -> ir.Value:
        return b.inttoptr(word(index), PTR)

    def fill(index: int, size: int) -> None:
        # memset of a possibly empty (null) array: only when there are bytes to write
        count = word(size)
        go = fn.append_basic_block(f"fill{index}")
        done = fn.append_basic_block(f"filled{index}")
        b.cbranch(b.icmp_unsigned("!=", count, ir.Constant(I64, 0)), go, done)
        b.position_at_end(go)
        b.call(memset, [pointer(index), ir.Constant(I8, 0), count, no])
        b.branch(done)
        b.position_at_end(done)

    def copy(target: int, source: int, count: ir.Value) -> None:
        go = fn.append_basic_block(f"copy{target}")
        done = fn.append_basic_block(f"copied{target}")
        b.cbranch(b.icmp_unsigned("!=", count, ir.Constant(I64, 0)), go, done)
        b.position_at_end(go)
        b.call(memcpy, [pointer(target), pointer(source), count, no])
        b.branch(done)
        b.position_at_end(done)

    fill(V, V_BYTES)
    copy(V, IDS, word(IDS_BYTES))           # the id rows are V's first rows (contiguous)
    fill(A, A_BYTES)
    fill(S, S_BYTES)
    copy(EXEC, LIVE, word(EXEC_BYTES))
    waves = word(WAVES)
    b.call(memset, [pointer(SCC), ir.Constant(I8, 0), waves, no])
    copy(WG, WG_LOCAL, b.mul(waves, ir.Constant(I64, 8)))

    s_base, user, user_bytes = pointer(S), pointer(USER), word(USER_BYTES)
    field, field_ptr = word(WAVE_FIELD), pointer(WAVE_FIELD)
    local, start, nx, ny = pointer(WG_LOCAL), word(START), word(NX), word(NY)
    columns = [word(COLUMNS + k) for k in range(5)]
    head = fn.append_basic_block("wave")
    body = fn.append_basic_block("wave_body")
    end = fn.append_basic_block("end")
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    w = b.phi(I64, name="w")
    w.add_incoming(ir.Constant(I64, 0), pre)
    b.cbranch(b.icmp_signed("<", w, waves), body, end)
    b.position_at_end(body)
    row = b.gep(s_base, [b.mul(w, ir.Constant(I64, NSREG * 4))], source_etype=I8)
    go = fn.append_basic_block("user")
    after_user = fn.append_basic_block("user_done")
    b.cbranch(b.icmp_unsigned("!=", user_bytes, ir.Constant(I64, 0)), go, after_user)
    b.position_at_end(go)
    b.call(memcpy, [row, user, user_bytes, no])
    b.branch(after_user)
    b.position_at_end(after_user)
    go = fn.append_basic_block("field")
    after_field = fn.append_basic_block("field_done")
    b.cbranch(b.icmp_unsigned("!=", field, ir.Constant(I64, 0)), go, after_field)
    b.position_at_end(go)
    value = b.load(b.gep(field_ptr, [w], source_etype=I32), typ=I32)
    b.store(value, b.gep(row, [ir.Constant(I64, (TTMP0 + 8) * 4)], source_etype=I8))
    b.branch(after_field)
    b.position_at_end(after_field)
    group = b.add(start, b.load(b.gep(local, [w], source_etype=I64), typ=I64))
    above = b.udiv(group, nx)
    x = b.trunc(b.urem(group, nx), I32)
    y = b.trunc(b.urem(above, ny), I32)
    z = b.trunc(b.udiv(above, ny), I32)
    values = [x, y, z, b.or_(b.shl(z, ir.Constant(I32, 16)), b.and_(y, ir.Constant(I32, 0xFFFF))),
              ir.Constant(I32, 0)]
    for k, (column, value) in enumerate(zip(columns, values)):
        go = fn.append_basic_block(f"id{k}")
        done = fn.append_basic_block(f"id{k}_done")
        b.cbranch(b.icmp_signed(">=", column, ir.Constant(I64, 0)), go, done)
        b.position_at_end(go)
        b.store(value, b.gep(row, [b.mul(column, ir.Constant(I64, 4))], source_etype=I8))
        b.branch(done)
        b.position_at_end(done)
    w.add_incoming(b.add(w, ir.Constant(I64, 1)), b.block)
    b.branch(head)
    b.position_at_end(end)
    b.ret(ir.Constant(I64, 0))
    return module
