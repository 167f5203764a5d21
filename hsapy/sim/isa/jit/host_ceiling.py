"""What the host itself gains from more threads: the ceiling for the simulator's speed-up.

Two native loops (generated with llvmlite, like the compiled engine's code) run on 1, 2, ...
threads, each thread doing the same work on data of its own, so that a perfect machine would
take the same time at every count:

- ``compute``: eight independent chains of 8-wide float multiply-adds on registers (no memory
  traffic): what the cores give to arithmetic.
- ``memory``: each thread sums an int64 array of :data:`MEMORY_BYTES` (more than a core's
  share of a server's last-level cache) a few times: what the memory system gives.

``speedup(threads) = threads x t(1) / t(threads)``. A virtual machine whose vCPUs are
hyperthreads of fewer cores, or a host whose memory bandwidth one core nearly uses up, shows
it here; the simulator's kernels (``benchmarks/sim.py --scaling``) cannot scale better than
these loops, and a memory-bound kernel such as vector add sits between the two.
"""
from __future__ import annotations

import ctypes
import threading
import time
from typing import Any

import numpy as np
from llvmlite import ir

from hsapy.errors import HsapyValueError
from hsapy.sim.isa.jit.compiler import compiler
from hsapy.sim.isa.jit.runtime import address
from hsapy.sim.isa.jit.team import libc

__all__ = ["KINDS", "run", "scaling", "thread_words", "result", "compute_reference",
           "MEMORY_BYTES"]

KINDS = ("compute", "memory")
MEMORY_BYTES = 16 << 20
COMPUTE_STEPS = 20_000_000       # iterations of the compute loop per thread
MEMORY_PASSES = 8                # sums of its array per thread
_CHAINS, _WIDTH = 8, 8
_MUL, _ADD = 0.999, 0.001

# a thread's words: [0] iterations or passes, [1] array address, [2] array length,
# [3] result (int64 sum, or the first chain's first lane as float32 bits)
_ITERATIONS, _ARRAY, _LENGTH, _RESULT = range(4)
_WORDS = 8

I32, I64, F32 = ir.IntType(32), ir.IntType(64), ir.FloatType()
PTR = ir.PointerType()
_lock = threading.Lock()
_compiled: dict[str, Any] = {}


def _word(b: ir.IRBuilder, words: ir.Value, index: int) -> ir.Value:
    return b.load(b.gep(words, [ir.Constant(I64, index)], source_etype=I64), typ=I64)


def _compute(module: ir.Module) -> None:
    """``ptr compute(ptr words)``: chain c of lane l starts at c; each step x = x * MUL + ADD."""
    fn = ir.Function(module, ir.FunctionType(PTR, [PTR]), name="compute")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    words = fn.args[0]
    steps = _word(b, words, _ITERATIONS)
    entry = b.block
    loop, done = fn.append_basic_block("loop"), fn.append_basic_block("done")
    vector = ir.VectorType(F32, _WIDTH)
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I64)
    chains = [b.phi(vector) for _ in range(_CHAINS)]
    mul, add = ir.Constant(vector, [_MUL] * _WIDTH), ir.Constant(vector, [_ADD] * _WIDTH)
    stepped = [b.fadd(b.fmul(x, mul), add) for x in chains]
    following = b.add(i, ir.Constant(I64, 1))
    i.add_incoming(ir.Constant(I64, 0), entry)
    i.add_incoming(following, loop)
    for c, (x, y) in enumerate(zip(chains, stepped)):
        x.add_incoming(ir.Constant(vector, [float(c)] * _WIDTH), entry)
        x.add_incoming(y, loop)
    b.cbranch(b.icmp_signed("<", following, steps), loop, done)
    b.position_at_end(done)
    first = b.bitcast(b.extract_element(stepped[0], ir.Constant(I32, 0)), I32)
    b.store(b.zext(first, I64), b.gep(words, [ir.Constant(I64, _RESULT)], source_etype=I64))
    b.ret(ir.Constant(PTR, None))


def _memory(module: ir.Module) -> None:
    """``ptr memory(ptr words)``: the int64 sum of the array, taken ``passes`` times."""
    fn = ir.Function(module, ir.FunctionType(PTR, [PTR]), name="memory")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    words = fn.args[0]
    array = b.inttoptr(_word(b, words, _ARRAY), PTR)
    length, passes = _word(b, words, _LENGTH), _word(b, words, _ITERATIONS)
    entry = b.block
    outer, inner = fn.append_basic_block("pass"), fn.append_basic_block("element")
    passed, done = fn.append_basic_block("passed"), fn.append_basic_block("done")
    b.branch(outer)
    b.position_at_end(outer)
    p, total = b.phi(I64), b.phi(I64)
    b.branch(inner)
    b.position_at_end(inner)
    j, acc = b.phi(I64), b.phi(I64)
    summed = b.add(acc, b.load(b.gep(array, [j], source_etype=I64), typ=I64))
    following = b.add(j, ir.Constant(I64, 1))
    j.add_incoming(ir.Constant(I64, 0), outer)
    j.add_incoming(following, inner)
    acc.add_incoming(total, outer)
    acc.add_incoming(summed, inner)
    b.cbranch(b.icmp_signed("<", following, length), inner, passed)
    b.position_at_end(passed)
    next_pass = b.add(p, ir.Constant(I64, 1))
    p.add_incoming(ir.Constant(I64, 0), entry)
    p.add_incoming(next_pass, passed)
    total.add_incoming(ir.Constant(I64, 0), entry)
    total.add_incoming(summed, passed)
    b.cbranch(b.icmp_signed("<", next_pass, passes), outer, done)
    b.position_at_end(done)
    b.store(summed, b.gep(words, [ir.Constant(I64, _RESULT)], source_etype=I64))
    b.ret(ir.Constant(PTR, None))


def _functions() -> dict[str, Any]:
    if not _compiled:
        with _lock:
            if not _compiled:
                module = ir.Module(name="hsapy_host_ceiling")
                _compute(module)
                _memory(module)
                compute, keep = compiler().compile(module, "compute")
                _compiled.update(compute=compute, memory=keep.get_function_address("memory"),
                                 keep=keep)
    return _compiled


def run(kind: str, threads: int, words: np.ndarray) -> float:
    """Wall seconds of ``kind``'s loop on ``threads`` native threads, thread ``k`` working on
    row ``k`` of ``words`` (int64 [>= threads, 8], see :func:`thread_words`)."""
    function = _functions()[kind]
    c = libc()
    handles = (ctypes.c_void_p * threads)()
    started = []
    start = time.perf_counter()
    try:
        for k in range(threads):
            handle = ctypes.addressof(handles) + k * ctypes.sizeof(ctypes.c_void_p)
            if c.pthread_create(handle, None, function, address(words[k])) != 0:
                raise OSError(f"pthread_create failed for thread {k + 1} of {threads}")
            started.append(k)
    finally:
        for k in started:
            c.pthread_join(handles[k], None)
    return time.perf_counter() - start


def thread_words(kind: str, threads: int, steps: int | None = None
                 ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Every thread's words for ``kind`` and the arrays they point at (keep them alive while
    the words are used): the compute loop's ``steps`` (default COMPUTE_STEPS), or for the
    memory loop an array of MEMORY_BYTES per thread, summed ``steps`` times (default
    MEMORY_PASSES)."""
    words = np.zeros((threads, _WORDS), np.int64)
    if kind == "compute":
        words[:, _ITERATIONS] = COMPUTE_STEPS if steps is None else steps
        return words, []
    arrays = [np.ones(MEMORY_BYTES // 8, np.int64) for _ in range(threads)]
    for k, array in enumerate(arrays):
        words[k, _ITERATIONS] = MEMORY_PASSES if steps is None else steps
        words[k, _ARRAY], words[k, _LENGTH] = address(array), array.size
    return words, arrays


def result(words: np.ndarray, k: int, kind: str) -> float | int:
    """What thread ``k``'s loop left: the memory loop's sum, or the compute loop's chain 0,
    lane 0 (a float32)."""
    value = int(words[k, _RESULT])
    if kind == "memory":
        return value
    return float(np.array([value], np.int64).astype(np.uint32).view(np.float32)[0])


def compute_reference(steps: int) -> float:
    """What the compute loop leaves in RESULT (chain 0, lane 0) after ``steps`` steps, in
    float32 arithmetic like the loop's."""
    x = np.float32(0.0)
    mul, add = np.float32(_MUL), np.float32(_ADD)
    for _ in range(steps):
        x = np.float32(x * mul) + add
    return float(x)


def scaling(kind: str, max_threads: int, repeats: int = 3) -> list[dict]:
    """``kind``'s rows for 1 .. ``max_threads`` threads: threads, wall_s (best of ``repeats``)
    and speedup (threads x t(1) / t(threads))."""
    if kind not in KINDS:
        raise HsapyValueError(f"host ceiling loop {kind!r}: choose from {', '.join(KINDS)}")
    words, _arrays = thread_words(kind, max_threads)   # (the arrays live while the loops run)
    rows = []
    single = None
    for count in range(1, max_threads + 1):
        wall = min(run(kind, count, words) for _ in range(max(1, repeats)))
        single = single or wall
        rows.append({"threads": count, "wall_s": round(wall, 4),
                     "speedup": round(count * single / wall, 2) if wall else None})
    return rows
