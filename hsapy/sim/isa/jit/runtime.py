"""Compiled units inside the interpreter's programs, and how a batch runs through them.

A :class:`JitProgram` is the interpreter's :class:`~hsapy.sim.isa.interpreter.Program` whose
decoded functions are also compiled: when a function is decoded, its instructions are planned
into segments (:mod:`~hsapy.sim.isa.jit.codegen`), the unit is compiled, and the program entry
of every segment start becomes an *entry closure*. The interpreter's scheduler calls entry
closures like any instruction closure, so splitting, merging, barriers, MODE changes and every
instruction the engine does not compile stay the interpreter's: an entry runs the batch
through compiled code for as long as it can and answers with the closure protocol (the next
address, or SPLIT with the parts in ``machine.pending``).

A wave the compiled code hands back (a path that raises, an access the fast path does not take)
makes the batch split by where each wave stands; the entry it is handed back at runs its first
instruction in the interpreter (``machine._jit_force``).
"""
from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import cffi
import numpy as np

from hsapy.sim.isa.jit import context as C
from hsapy.sim.isa.jit.compiler import RUN_TYPE, compiler
from hsapy.sim.isa.jit.trace import NEXT

__all__ = ["Unit", "JitProgram", "EngineCounters", "compile_program_range", "attach"]

BUDGET = 1 << 15           # batch-instructions between polls of the dispatch (watchdog, cancel)
STOP_NEVER = (1 << 63) - 1
SPLIT = -3                 # hsapy.sim.isa.semantics.SPLIT


_FFI = cffi.FFI()
_CHARS = _FFI.typeof("char[]")
_UINTPTR = _FFI.typeof("uintptr_t")
_from_buffer = _FFI._backend.from_buffer
_cast = _FFI._backend.cast


def address(array: np.ndarray) -> int:
    """The address of a C-contiguous array's first element, through cffi's buffer view (a
    few times faster than ``array.ctypes.data``, which builds ctypes objects on every call;
    a few such lookups per call of compiled code and per chunk add up)."""
    return int(_cast(_UINTPTR, _from_buffer(_CHARS, array, False)))


class EngineCounters:
    """Per-dispatch counts of what ran compiled and what the interpreter ran, for tests and
    benchmarks (``hsapy.sim.isa.jit.last_dispatch.counters``)."""

    __slots__ = ("compiled_lane_instructions", "compiled_wave_instructions", "calls",
                 "bails", "splits", "interpreted_forced", "chunks", "threads",
                 "barriers_released", "chunks_looped")

    def __init__(self) -> None:
        self.compiled_lane_instructions = 0
        self.compiled_wave_instructions = 0
        self.calls = 0
        self.bails = 0
        self.splits = 0
        self.interpreted_forced = 0
        self.chunks = 0           # chunks of workgroups the dispatch ran in
        self.threads = 0          # host threads that ran them
        self.barriers_released = 0   # barriers passed inside compiled code (batch-instructions)
        self.chunks_looped = 0    # chunks run start to end by generated code (chunk_loop)

    def add(self, other: EngineCounters) -> None:
        for name in self.__slots__:
            if name != "threads":
                setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__}


class Unit:
    """One compiled function of a program (see the module docstring)."""

    def __init__(self, plan: Any, address: int, keep: Any, lanes: int, delta: int = 0) -> None:
        self.plan = plan
        self.address = address
        self.fn = RUN_TYPE(address)
        self.keep = keep
        self.lanes = lanes
        # the unit's code was generated at addresses ``delta`` below the program's (see
        # compile_program_range): byte addresses going in and out are moved by it
        self.delta = delta
        self.barriers = any(seg.barrier for seg in plan.segments)
        # set when a dispatch found that every chunk starting here needs the scheduler (the
        # chunk loop hands such kernels to Python: hsapy.sim.isa.jit.loop_runner)
        self.hands_over = False
        # (decoded length of the program, its s_endpgm addresses): loop_runner.loop_plan's
        self.loop_ends: tuple | None = None

    def run(self, b: Any, m: Any, number: int, start: int) -> int | None:
        """Run batch ``b`` from segment ``number`` (at byte address ``start``)."""
        ctx = m._jit_ctx
        waves = b.S.shape[0]
        ex = b.exec
        if ex.base is not None or not ex.flags.c_contiguous or ex.dtype != np.bool_:
            b.exec = ex = np.ascontiguousarray(ex, dtype=np.bool_).copy()
        scc = b.scc
        if scc.base is not None or scc.dtype != np.bool_ or not scc.flags.c_contiguous:
            b.scc = scc = np.ascontiguousarray(np.broadcast_to(scc, (waves,)),
                                               dtype=np.bool_).copy()
        wg = b.wg
        if wg.dtype != np.int64 or not wg.flags.c_contiguous:
            b.wg = wg = np.ascontiguousarray(wg, dtype=np.int64)
        ctl = m._jit_ctl
        if ctl.size < waves:
            m._jit_ctl = ctl = np.zeros(max(waves, 2 * ctl.size), np.int64)
            ctx[C.CTL] = address(ctl)
        A = b.A
        if self.plan.scratch:
            if b.scratch is None:
                b.scratch = np.zeros((waves * b.lanes, max(4, m.private_size)), np.uint8)
            ctx[C.SCRATCH] = address(b.scratch)
            ctx[C.SCRATCH_ROW] = b.scratch.shape[1]
        # the arrays' addresses, kept with the batch while its arrays stay the same objects
        # (a loop runs the same batch through its segments many times)
        cached = b.jit_arrays
        S, V = b.S, b.V
        if cached is None or cached[0] is not S or cached[1] is not V or cached[2] is not A \
                or cached[3] is not ex or cached[4] is not scc or cached[5] is not wg:
            cached = b.jit_arrays = (S, V, A, ex, scc, wg, address(S), address(V),
                                     0 if A is None else address(A), address(ex), address(scc),
                                     address(wg))
        ctx[C.S] = cached[6]
        ctx[C.V] = cached[7]
        ctx[C.A] = cached[8]
        ctx[C.NVGPRS] = V.shape[0]
        ctx[C.NAGPRS] = 0 if A is None else A.shape[0]
        ctx[C.EXEC] = cached[9]
        ctx[C.SCC] = cached[10]
        ctx[C.WAVES] = waves
        ctx[C.WG] = cached[11]
        ctx[C.ENTRY] = number
        if self.barriers:
            alive = getattr(m, "alive", None)
            ctx[C.WHOLE] = alive is not None and waves == int(alive.sum())
        delta = self.delta
        stop = min(getattr(m, "stop_at", STOP_NEVER), STOP_NEVER)
        ctx[C.STOP_AT] = stop if stop == STOP_NEVER else stop - delta
        budget = getattr(m, "_jit_budget", BUDGET)
        turn_end = getattr(m, "turn_end", None)
        if turn_end is not None:
            budget = min(budget, max(turn_end - m._jit_stats.batch_steps, 0))
        ctx[C.BUDGET] = budget
        return self.finish(b, m, self.fn(m._jit_ctx_address))

    def finish(self, b: Any, m: Any, status: int) -> int | None:
        """What follows a call of the unit's code that ran batch ``b`` and answered
        ``status`` (its outputs in ``m._jit_ctx``): counts, the dispatch's poll, and the
        closure protocol's answer. Also used after a call made by generated code
        (:mod:`hsapy.sim.isa.jit.chunk_loop`)."""
        ctx = m._jit_ctx
        waves = b.S.shape[0]
        delta = self.delta
        b.exec_changed()
        lanes = int(ctx[C.LANES])
        winsts = int(ctx[C.WAVE_INSTS])
        stats = m._jit_stats
        counters = m._jit_counters
        counters.calls += 1
        counters.compiled_lane_instructions += lanes
        counters.compiled_wave_instructions += winsts
        if self.barriers:
            counters.barriers_released += int(ctx[C.RELEASED])
        # the scheduler counts one instruction of the batch after this call returns
        stats.lane_instructions += lanes - b.active_lanes
        stats.wave_instructions += winsts - waves
        stats.batch_steps += int(ctx[C.STEPS]) - 1
        m._jit_poll()
        if status == C.CONTINUE:
            pc = int(ctx[C.OUT_PC])
            return pc + delta if pc >= 0 else pc
        if status == C.INTERPRET:
            pc = int(ctx[C.OUT_PC]) + delta
            m._jit_force.add(pc)
            return pc
        if status == C.SPLIT:
            counters.splits += 1
            return self._split(b, m, self._next_pcs(m._jit_ctl[:waves],
                                                    int(ctx[C.SEG_END]) + delta))
        # BAIL: the waves before BAIL_WAVE finished the segment, BAIL_WAVE stands at BAIL_PC,
        # the others at the segment's start
        counters.bails += 1
        k = int(ctx[C.BAIL_WAVE])
        bail_pc = int(ctx[C.BAIL_PC]) + delta
        seg_end = int(ctx[C.SEG_END]) + delta
        pcs = np.empty(waves, np.int64)
        if k:
            if ctx[C.BAIL_CTL]:
                pcs[:k] = self._next_pcs(m._jit_ctl[:k], seg_end)
            else:
                pcs[:k] = seg_end
        pcs[k] = bail_pc
        pcs[k + 1:] = int(ctx[C.SEG_START]) + delta
        m._jit_force.add(bail_pc)
        return self._split(b, m, pcs)

    def _next_pcs(self, codes: np.ndarray, fallthrough: int) -> np.ndarray:
        if self.delta:
            codes = np.where(codes >= 0, codes + self.delta, codes)
        return np.where(codes == NEXT, fallthrough, codes)

    @staticmethod
    def _split(b: Any, m: Any, pcs: np.ndarray) -> int:
        first = int(pcs[0])
        if (pcs == first).all():
            return first
        for pc in np.unique(pcs):
            m.pending.append(b.take(pcs == pc, int(pc)))
        return SPLIT


def _entry(program: JitProgram, unit: Unit, seg: Any) -> Any:
    number = seg.number
    start = seg.start
    index = seg.steps[0].index
    interp: list = []

    def entry(b: Any, m: Any) -> int | None:
        force = m._jit_force
        if force and start in force:
            force.discard(start)
            m._jit_counters.interpreted_forced += 1
            if not interp:
                from hsapy.sim.isa.semantics import compile_instruction

                interp.append(compile_instruction(program.insts[index], program.info))
            return interp[0](b, m)
        return unit.run(b, m, number, start)
    entry.jit_segment = seg     # type: ignore[attr-defined]
    entry.jit_unit = unit       # type: ignore[attr-defined]
    return entry


def attach(machine: Any, table: tuple, stats: Any, counters: EngineCounters,
           poll: Any, words: np.ndarray | None = None, ctl: np.ndarray | None = None) -> None:
    """Give an interpreter machine (one chunk of a dispatch) what entry closures use: the
    context words with its LDS and the allocation table (``SimMemory.table``), counters, the
    dispatch's poll. ``words`` and ``ctl``: context words and a control array to use (the
    chunk loop's, whose outputs the scheduler reads next) instead of new ones."""
    if words is None:
        words = np.zeros(C.SIZE, np.int64)
    if ctl is None:
        ctl = np.zeros(64, np.int64)
    machine._jit_table = table          # keeps the arrays and the allocations alive
    fill_context(words, table, address(machine.lds), machine.lds_stride, machine.lds_size)
    machine._jit_ctx = words
    machine._jit_ctx_address = address(words)
    machine._jit_ctl = ctl
    words[C.CTL] = address(ctl)
    machine._jit_force = set()
    machine._jit_stats = stats
    machine._jit_counters = counters
    machine._jit_poll = poll


def fill_context(words: np.ndarray, table: tuple, lds: int, lds_stride: int,
                 lds_size: int) -> None:
    """Write the context words a machine's calls share: the allocation table
    (``SimMemory.table``), the LDS (its address, bytes per workgroup and per workgroup's
    window) and the apertures' high words. The other words are left as they are."""
    from hsapy.sim.memory import PRIVATE_APERTURE_BASE, SHARED_APERTURE_BASE

    starts, ends, allowed, allocations = table
    words[C.ALLOC_STARTS] = address(starts) if starts.size else 0
    words[C.ALLOC_ENDS] = address(ends) if ends.size else 0
    words[C.ALLOC_AGENT] = address(allowed) if allowed.size else 0
    words[C.ALLOC_COUNT] = len(allocations)
    words[C.LDS] = lds
    words[C.LDS_STRIDE] = lds_stride
    words[C.LDS_SIZE] = lds_size
    words[C.SHARED_HI] = SHARED_APERTURE_BASE >> 32
    words[C.PRIVATE_HI] = PRIVATE_APERTURE_BASE >> 32


class CompileRecord:
    """What one program's compilation did (for tests, benchmarks and ``hsapy`` reports)."""

    def __init__(self) -> None:
        self.units = 0
        self.segments = 0
        self.compiled = 0            # instructions in segments
        self.fallback: dict[str, int] = {}   # reason -> instructions left to the interpreter
        self.seconds = 0.0


class JitProgram:
    """Mixin of :class:`~hsapy.sim.isa.interpreter.Program` that compiles each decoded range
    (the executor makes the concrete class)."""

    def _jit_init(self) -> None:
        self.units: list[Unit] = []
        self.record = CompileRecord()

    def on_decoded(self, first: int, count: int) -> None:
        """Compile entries [first, first + count) (called with the program's lock held)."""
        start = time.perf_counter()
        unit = compile_program_range(self, first, count)
        spent = time.perf_counter() - start
        record = self.record
        record.seconds += spent
        dispatch = CURRENT.dispatch
        if dispatch is not None and hasattr(dispatch, "started"):
            dispatch.started += spent
        if unit is None:
            return
        record.units += 1
        record.segments += len(unit.plan.segments)
        for seg in unit.plan.segments:
            record.compiled += len(seg.steps)
            self.fns[seg.steps[0].index] = _entry(self, unit, seg)
        for why in unit.plan.fallback.values():
            key = why.split(":")[0]
            record.fallback[key] = record.fallback.get(key, 0) + 1
        self.units.append(unit)


class _Current(threading.local):
    dispatch: Any = None
    background = False      # this thread compiles in the background (see CANCEL)


CURRENT = _Current()    # the dispatch this thread runs (compile time does not count against
                        # its watchdog)


# Units are generated for their instructions moved to GENERATED_BASE (plus the low bits of the
# real address): simulated code lives at host addresses, which differ from one process to the
# next, and code generated for one address would be cached for that address only.
GENERATED_BASE = 1 << 40
# instructions whose result is their own address: left to the interpreter, which has the real one
PC_READERS = frozenset({"s_getpc_b64", "s_call_b64", "s_swappc_b64", "s_setpc_b64"})


def _moved(program: Any, first: int, count: int, delta: int) -> list:
    """The program's instruction list with entries [first, first + count) moved ``delta``
    bytes down, their branch targets (``label`` operands) with them (copies; the program's own
    instructions stay)."""
    insts = list(program.insts)
    for i in range(first, first + count):
        if insts[i] is not None:
            insts[i] = _move(insts[i], delta)
    return insts


def _move(inst: Any, delta: int) -> Any:
    def operands(ops: tuple) -> tuple:
        return tuple(dataclasses.replace(op, value=op.value - delta) if op.kind == "label"
                     else op for op in ops)

    pair = inst.pair
    return dataclasses.replace(inst, offset=inst.offset - delta, srcs=operands(inst.srcs),
                               dsts=operands(inst.dsts),
                               pair=None if pair is None else _move(pair, delta))


# Set at interpreter exit: background compilations stop at their next check (LLVM tears down
# its global state at exit, under any thread still inside it)
CANCEL = threading.Event()


class Cancelled(BaseException):
    """A background compilation stopped at exit (a BaseException: nothing on the way records it
    as a unit that failed to compile)."""


def check_cancelled() -> None:
    if CURRENT.background and CANCEL.is_set():
        raise Cancelled


def compile_program_range(program: Any, first: int, count: int) -> Unit | None:
    """Plan, generate and compile program entries [first, first + count); None when no
    segment results. A unit found in the compiler's early cache (its key is computed from the
    instructions' words and their addresses relative to the range, before anything is traced)
    is loaded without planning or IR."""
    from hsapy.sim.isa.jit.codegen import classify, generate, plan_unit

    info = program.info
    lanes = info.wave_size
    comp = compiler()
    base = program.offsets[first]
    delta = base - (GENERATED_BASE | (base & 0xFFF))
    key = comp.unit_key(program, first, count, base)
    hit = comp.load_unit(key)
    if hit is not None:
        meta, obj = hit
        try:
            plan = _plan_from_skeleton(meta, program, first, count)
            if not plan.segments:
                comp.stats.unit_hits += 1
                return None
            address, keep = comp.load_object(obj)
            comp.stats.unit_hits += 1
            return Unit(plan, address, keep, lanes, delta)
        except Exception:  # noqa: BLE001 - a damaged entry: build the unit as if uncached
            pass
    start = time.perf_counter()
    insts = _moved(program, first, count, delta)
    classified = {}
    for i in range(first, first + count):
        check_cancelled()
        inst = insts[i]
        classified[i] = (None, None, "reads its own address") \
            if inst is not None and inst.name in PC_READERS else classify(inst, info, lanes)
    plan = plan_unit(insts, first, count, info, lanes, classified)
    skeleton = _skeleton(plan, first)
    if not plan.segments:
        comp.stats.trace_seconds += time.perf_counter() - start
        comp.store_unit(key, skeleton, b"")
        return None
    name = f"unit_{base - delta:x}"
    try:
        module = generate(plan, lanes, name, info, check_cancelled)
        check_cancelled()
        comp.stats.ir_generated += 1
        comp.stats.trace_seconds += time.perf_counter() - start
        address, keep, obj = comp.compile_object(module)
    except Exception as exc:  # noqa: BLE001 - a unit that does not compile is interpreted
        failures = getattr(program, "record", None)
        if failures is not None:
            reason = f"unit not compiled: {type(exc).__name__}: {exc}"[:200]
            failures.fallback[reason] = failures.fallback.get(reason, 0) + count
        return None
    if obj:
        comp.store_unit(key, skeleton, obj)
    # the plan the runtime keeps names the program's own instructions (real addresses)
    return Unit(_plan_from_skeleton(skeleton, program, first, count), address, keep, lanes,
                delta)


def _skeleton(plan: Any, first: int) -> dict:
    """What a cached unit keeps of its plan: what runtime and records use (segment numbers,
    their entries and kinds, the entries left to the interpreter and why, whether a segment
    reaches private memory), not the traces. Entries are counted from the unit's first (another
    program may decode the same function after others)."""
    return {"segments": [[seg.number, seg.writes,
                          [[step.index - first, step.kind] for step in seg.steps]]
                         for seg in plan.segments],
            "fallback": [[index - first, why] for index, why in plan.fallback.items()],
            "vgprs": plan.vgprs, "agprs": plan.agprs, "scratch": plan.scratch}


def _plan_from_skeleton(meta: dict, program: Any, first: int, count: int) -> Any:
    """The plan of a cached unit (steps without traces); ValueError if it does not fit the
    program's entries."""
    from hsapy.sim.isa.jit.codegen import Segment, Step, UnitPlan

    end = first + count
    segments = []
    for k, (number, writes, steps) in enumerate(meta["segments"]):
        if number != k or not steps:
            raise ValueError("cached unit: segments out of order")
        seg = Segment(number, writes=bool(writes))
        for index, kind in steps:
            index += first
            if not first <= index < end or program.insts[index] is None:
                raise ValueError("cached unit: entry outside the decoded range")
            seg.steps.append(Step(index, program.insts[index], str(kind)))
        segments.append(seg)
    fallback = {}
    for index, why in meta["fallback"]:
        index += first
        if not first <= index < end:
            raise ValueError("cached unit: entry outside the decoded range")
        fallback[int(index)] = str(why)
    return UnitPlan(segments, fallback, int(meta["vgprs"]), int(meta["agprs"]),
                    bool(meta["scratch"]))
