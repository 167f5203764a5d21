"""A thread's chunks run one after the other by host code, without coming back to Python.

In a dispatch whose kernel runs from its first instruction to ``s_endpgm`` in one call of its
compiled unit (no divergent branch splits the batch, no wave is handed back, the step budget
is not reached), the Python around each chunk -- the initial batch, the scheduler, the entry
closure, the counts -- does the same thing every time. :func:`run` does it in generated code
(built once per process with llvmlite) for every chunk a thread takes: it takes the next
chunk from a counter the threads share (an atomic add), writes the chunk's initial state
(:mod:`hsapy.sim.isa.jit.chunk_state`), zeroes its LDS, calls the unit, and when the unit
answers that the whole batch stands at an ``s_endpgm`` it counts what ran and goes on with the
next chunk. Anything else -- a split, a hand-back, the budget, another instruction -- returns
to Python with the chunk's state as the unit left it: Python wraps it in a batch and the
scheduler finishes that chunk as if the scheduler had made the call itself.

Threads running chunks side by side each let the GIL go once per call here instead of several
times per chunk (each time queueing to take it back behind the others).

The job is an ``int64`` array of :data:`SIZE` words; field numbers below.
"""
from __future__ import annotations

import threading
from typing import Any

from llvmlite import ir

from hsapy._native import Callee
from hsapy.sim.isa.jit import chunk_state
from hsapy.sim.isa.jit import context as C
from hsapy.sim.isa.jit.compiler import RUN_TYPE, compiler

__all__ = ["SIZE", "run", "loop_function", "DONE_ALL", "TO_PYTHON", "POLL"]

# job words: inputs (pointers are addresses)
STATE_JOB = 0      # int64[chunk_state.SIZE]: the chunk_state job (its START word is set here)
STATE_FN = 1       # chunk_state's compiled function
STARTS = 2         # int64[COUNT]: each chunk's first workgroup
COUNT = 3
CLAIM = 4          # int64[1] the threads share: the next chunk to take (atomic add)
UNIT_FN = 5        # the unit's compiled function
CTX = 6            # the unit's context words (hsapy.sim.isa.jit.context)
ENTRY = 7          # the unit's segment at the kernel's first instruction
BUDGET = 8         # batch-instructions per call of the unit, and per call of this function
ENDS = 9           # int64[NENDS]: unit addresses of the program's s_endpgm instructions
NENDS = 10
LDS, LDS_BYTES = 11, 12
EXEC, EXEC_BYTES = 13, 14   # the batch's EXEC (bool[W, L]; its size a multiple of 8)
# outputs
CURRENT = 15       # TO_PYTHON: the chunk the unit ran
STATUS = 16        # TO_PYTHON: what the unit answered (hsapy.sim.isa.jit.context)
DONE = 17          # chunks finished here (added to)
LANES = 18         # the unit's lane-instructions over the finished chunks (added to)
WAVE_INSTS = 19
STEPS = 20
RELEASED = 21
END_LANES = 22     # EXEC lanes at the finished chunks' s_endpgm (added to)
RESULT = 23        # what the loop answered, when a thread of a team ran it
SIZE = 24

# what run() answers
DONE_ALL = 0       # no chunk left to take
TO_PYTHON = 1      # chunk CURRENT continues in the scheduler (the unit answered STATUS)
POLL = 2           # the budget is spent: poll the dispatch and call again

STOP_NEVER = (1 << 63) - 1
I8, I64 = ir.IntType(8), ir.IntType(64)
PTR = ir.PointerType()
NAME = "hsapy_chunk_loop"
_FN_TYPE = ir.FunctionType(I64, [PTR])

_lock = threading.Lock()
_compiled: list[Any] = []


def run(job_address: int) -> int:
    """Run chunks as the job at ``job_address`` says (the GIL is released meanwhile); returns
    DONE_ALL, TO_PYTHON or POLL."""
    return int(_functions()[0](job_address))


def loop_function() -> int:
    """The address of the compiled ``int64 (int64 *job)`` loop :func:`run` calls (the native
    threads of :mod:`hsapy.sim.isa.jit.team` call it too)."""
    return _functions()[1]


def _functions() -> list:
    if not _compiled:
        with _lock:
            if not _compiled:
                loop_address, keep = compiler().compile(_module(), NAME)
                _compiled.extend((RUN_TYPE(loop_address), loop_address, keep))
    return _compiled


def state_function() -> int:
    """The address STATE_FN takes."""
    return chunk_state.function_address()


def _module() -> ir.Module:
    module = ir.Module(name=NAME)
    fn = ir.Function(module, _FN_TYPE, name=NAME)
    memset = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I8, I64, ir.IntType(1)]),
                         name="llvm.memset.p0.i64")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    job = fn.args[0]
    # a chunk's EXEC lanes at s_endpgm, summed (in the entry block: a register once optimised)
    total = b.alloca(ir.IntType(64), name="total")

    def slot(base: ir.Value, index: Any) -> ir.Value:
        index = ir.Constant(I64, index) if isinstance(index, int) else index
        return b.gep(base, [index], source_etype=I64)

    def word(index: int) -> ir.Value:
        return b.load(slot(job, index), typ=I64)

    def pointer(index: int) -> ir.Value:
        return b.inttoptr(word(index), PTR)

    def callee(index: int) -> Any:
        return Callee(pointer(index), _FN_TYPE)

    def add_to(index: int, value: ir.Value) -> None:
        b.store(b.add(word(index), value), slot(job, index))

    def const(value: int) -> ir.Value:
        return ir.Constant(I64, value)

    ctx = pointer(CTX)
    state_job = pointer(STATE_JOB)
    starts = pointer(STARTS)
    count = word(COUNT)
    claim = pointer(CLAIM)
    entry_segment = word(ENTRY)
    budget = word(BUDGET)
    ends, nends = pointer(ENDS), word(NENDS)
    lds, lds_bytes = pointer(LDS), word(LDS_BYTES)
    exec_words = b.udiv(word(EXEC_BYTES), const(8))
    exec_base = pointer(EXEC)
    pre = b.block
    head = fn.append_basic_block("take")
    b.branch(head)

    # take the next chunk (or stop)
    b.position_at_end(head)
    spent = b.phi(I64, name="spent")
    spent.add_incoming(const(0), pre)
    k = b.atomic_rmw("add", claim, const(1), "monotonic", name="k")
    body = fn.append_basic_block("chunk")
    finished = fn.append_basic_block("all_done")
    b.cbranch(b.icmp_signed("<", k, count), body, finished)
    b.position_at_end(finished)
    b.ret(const(DONE_ALL))

    # its initial state and zeroed LDS, then the unit from the kernel's first instruction
    b.position_at_end(body)
    b.store(b.load(slot(starts, k), typ=I64), slot(state_job, chunk_state.START))
    b.call(callee(STATE_FN), [state_job])
    b.call(memset, [lds, ir.Constant(I8, 0), lds_bytes, ir.Constant(ir.IntType(1), 0)])
    for index, value in ((C.ENTRY, entry_segment), (C.STOP_AT, const(STOP_NEVER)),
                         (C.BUDGET, budget), (C.WHOLE, const(1)), (C.RELEASED, const(0))):
        b.store(value, slot(ctx, index))
    status = b.call(callee(UNIT_FN), [ctx], name="status")
    to_python = fn.append_basic_block("to_python")
    continued = fn.append_basic_block("continued")
    b.cbranch(b.icmp_signed("==", status, const(C.CONTINUE)), continued, to_python)
    b.position_at_end(to_python)
    b.store(k, slot(job, CURRENT))
    b.store(status, slot(job, STATUS))
    b.ret(const(TO_PYTHON))

    # the chunk is done when the whole batch stands at an s_endpgm
    b.position_at_end(continued)
    out_pc = b.load(slot(ctx, C.OUT_PC), typ=I64)
    scan = fn.append_basic_block("scan")
    scan_body = fn.append_basic_block("scan_body")
    ended = fn.append_basic_block("ended")
    b.branch(scan)
    b.position_at_end(scan)
    e = b.phi(I64, name="e")
    e.add_incoming(const(0), continued)
    b.cbranch(b.icmp_signed("<", e, nends), scan_body, to_python)
    b.position_at_end(scan_body)
    found = b.icmp_signed("==", b.load(slot(ends, e), typ=I64), out_pc)
    e.add_incoming(b.add(e, const(1)), scan_body)
    b.cbranch(found, ended, scan)

    # count it: the unit's outputs, and s_endpgm's own instruction over the EXEC lanes
    b.position_at_end(ended)
    for out, field in ((LANES, C.LANES), (WAVE_INSTS, C.WAVE_INSTS), (STEPS, C.STEPS),
                       (RELEASED, C.RELEASED)):
        add_to(out, b.load(slot(ctx, field), typ=I64))
    add_to(DONE, const(1))
    b.store(const(0), total)

    def add_lanes(i: ir.Value) -> None:
        # EXEC's bytes are 0 or 1: one multiply sums the eight of a word into its top byte
        eight = b.load(slot(exec_base, i), typ=I64)
        summed = b.lshr(b.mul(eight, const(0x0101010101010101)), const(56))
        b.store(b.add(b.load(total, typ=I64), summed), total)

    _for_range(fn, b, const(0), exec_words, "lanes", add_lanes)
    add_to(END_LANES, b.load(total, typ=I64))
    now = b.add(spent, b.load(slot(ctx, C.STEPS), typ=I64))
    spent.add_incoming(now, b.block)
    poll = fn.append_basic_block("poll")
    b.cbranch(b.icmp_signed(">=", now, budget), poll, head)
    b.position_at_end(poll)
    b.ret(const(POLL))
    return module


def _for_range(fn: ir.Function, b: ir.IRBuilder, first: ir.Value, stop: ir.Value, label: str,
               body: Any) -> None:
    """``for i in range(first, stop): body(i)`` at the builder's position, which it leaves
    after the loop (``body`` may add blocks of its own)."""
    before = b.block
    head = fn.append_basic_block(f"{label}_head")
    step = fn.append_basic_block(f"{label}_body")
    after = fn.append_basic_block(f"{label}_done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name=label)
    i.add_incoming(first, before)
    b.cbranch(b.icmp_signed("<", i, stop), step, after)
    b.position_at_end(step)
    body(i)
    i.add_incoming(b.add(i, ir.Constant(I64, 1)), b.block)
    b.branch(head)
    b.position_at_end(after)
