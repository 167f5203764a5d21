"""A dispatch's chunks run by :mod:`hsapy.sim.isa.jit.chunk_loop`, on native threads.

:func:`loop_plan` says whether a dispatch can take this path (its workgroups all whole, its
kernel starting in compiled code); :func:`run_looped` runs it. Chunks of one size share a
counter from which every thread takes the next; each thread has its own register arrays, LDS
and context words (its row of a :class:`Crew`), all made on the dispatching thread before any
runs. The threads are native threads parked between rounds (:mod:`hsapy.sim.isa.jit.team`),
so that the whole round lets the GIL go once: Python threads would each need the GIL to start
and to set themselves up, and each waits for it behind the others.

A round ends when every thread's loop has answered: no chunk left, the step budget spent
(the dispatch is polled: watchdog, cancellation), or a chunk the scheduler must finish (a
split, a hand-back). Those chunks are finished in Python -- on the thread pool of the
executor when there are several -- and the next round goes on with the chunks left. A fault
raises the error of the earliest chunk that faulted.
"""
from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from hsapy.sim.isa.interpreter import ExecutionStats, _Machine
from hsapy.sim.isa.jit import chunk_loop, chunk_state, team
from hsapy.sim.isa.jit import context as C
from hsapy.sim.isa.jit.runtime import (
    BUDGET,
    CURRENT,
    STOP_NEVER,
    EngineCounters,
    address,
    attach,
    fill_context,
)
from hsapy.sim.isa.wave import NSREG, Batch

__all__ = ["END_INSTRUCTIONS", "loop_plan", "run_looped", "Crew"]

# what ends a wave (the interpreter's scheduler retires the batch there)
END_INSTRUCTIONS = frozenset({"s_endpgm", "s_endpgm_saved", "s_endpgm_ordered_ps_done"})


def loop_plan(program: Any, chunks: list, entry: int) -> tuple | None:
    """(unit, its segment at the kernel's first instruction, the unit addresses of the
    program's s_endpgm instructions) when the chunks can run in generated code: the
    dispatch's workgroups are all whole (chunks of one size differ only in their workgroup
    ids), the kernel's first instruction starts a compiled segment and the unit needs no
    scratch rows; else None."""
    if not chunks:
        return None
    _, _, _, grid, block = chunks[0]
    if any(g % b for g, b in zip(grid, block)):
        return None
    i = program.index.get(entry)
    if i is None:
        i = program.lookup(entry)
        if i is None:
            return None
    fn = program.fns[i]
    unit = getattr(fn, "jit_unit", None)
    if unit is None or unit.plan.scratch or unit.hands_over:
        # (hands_over: an earlier dispatch found that every chunk needs the scheduler)
        return None
    # the program's s_endpgm addresses, found once per decoded length of the program (a scan
    # of every instruction: not work for each dispatch)
    decoded = len(program.insts)
    known = unit.loop_ends
    if known is not None and known[0] == decoded:
        ends = known[1]
    else:
        ends = np.array([offset - unit.delta
                         for inst, offset in zip(program.insts, program.offsets)
                         if inst is not None and inst.name in END_INSTRUCTIONS], np.int64)
        unit.loop_ends = (decoded, ends)
    if not ends.size:
        return None
    return unit, fn.jit_segment.number, ends


# a row of every per-thread array starts on a cache line of its own, so that threads writing
# their rows never share a line
LINE = 64
# the context words the loop's calls and a scheduler's calls point elsewhere: ready() sets them
# back to each thread's arrays before a round
_POINTERS = [C.S, C.V, C.A, C.NVGPRS, C.NAGPRS, C.EXEC, C.SCC, C.WG, C.WAVES, C.CTL]


class _Rows:
    """``count`` rows of one shape, each starting on a cache line: ``rows`` (2-D, row ``k``
    in ``rows[k]``, padded), ``base`` (the address of row 0), ``stride`` (bytes from a row to
    the next)."""

    __slots__ = ("rows", "base", "stride", "n", "shape")

    def __init__(self, count: int, shape: tuple, dtype: Any, executor: Any = None,
                 name: str = "") -> None:
        """From the executor's pool of arrays ``name`` when given, else fresh (uninitialised)."""
        dtype = np.dtype(dtype)
        size = dtype.itemsize
        self.n = n = math.prod(shape)
        self.shape = shape
        row = -(-n * size // LINE) * LINE // size
        length = count * row + LINE // size
        backing = None if executor is None else executor._pooled((length,), dtype,
                                                                 ("crew", name))
        if backing is None:
            backing = np.empty(length, dtype)
        first = address(backing)
        skip = (-first % LINE) // size
        self.rows = backing[skip:skip + count * row].reshape(count, row)
        self.base = first + skip * size
        self.stride = row * size

    def row(self, k: int) -> np.ndarray:
        """Row ``k`` in its shape."""
        return self.rows[k, :self.n].reshape(self.shape)

    def at(self, k: Any) -> Any:
        """The address of row ``k`` (or of each row of an array of them)."""
        return self.base + k * self.stride


def _table(count: int, template: list[tuple[int, int]]) -> _Rows:
    """``count`` int64 rows of words ``template[i][0] + k * template[i][1]`` for row ``k``
    (a per-row address moves by its array's stride; a shared word by 0)."""
    table = _Rows(count, (len(template),), np.int64)
    values, steps = zip(*template)
    k = np.arange(count, dtype=np.int64)[:, None]
    table.rows[:] = 0
    table.rows[:, :table.n] = np.array(values, np.int64) + k * np.array(steps, np.int64)
    return table


class Crew:
    """The threads of one group of chunks (all of one size): each thread's register arrays,
    EXEC, SCC, wave-to-workgroup map, LDS, context words, chunk_state job and chunk_loop job,
    as row ``k`` of arrays with a row per thread, made with a few array operations whatever
    the thread count (each thread's own objects, made one by one on the dispatching thread,
    held up the last thread's start by about a millisecond on a 16-thread host). A thread's
    interpreter machine is made only when the scheduler must finish one of its chunks
    (:meth:`finish`)."""

    def __init__(self, executor: Any, ctx: Any, shape: tuple, wave_size: int, lds: int,
                 private: int, table: Any, layout: tuple, plan: tuple, starts: np.ndarray,
                 claim: np.ndarray, counts: Any, count: int) -> None:
        unit, segment, ends = plan
        self.executor, self.ctx, self.table = executor, ctx, table
        self.unit, self.layout, self.starts, self.count = unit, layout, starts, count
        self.mode = shape[2]
        self.lds_size, self.private, self.wave_size = lds, private, wave_size
        live, wg, alive = layout[3], layout[5], layout[6]
        self.waves = waves = wg.size
        self.workgroups = int(alive.size)
        nvgprs, nagprs, _ = shape
        # each thread's arrays (the large ones from the dispatch's pool)
        self.S = _Rows(count, (waves, NSREG), np.uint32, executor, "S")
        self.V = _Rows(count, (nvgprs, waves, wave_size), np.uint32, executor, "V")
        self.A = _Rows(count, (nagprs, waves, wave_size), np.uint32, executor, "A") \
            if nagprs else None
        self.exec = _Rows(count, live.shape, np.bool_)
        self.scc = _Rows(count, (waves,), np.bool_)
        self.wgs = _Rows(count, wg.shape, np.int64)
        # the interpreter machine's LDS layout
        stride, lds_bytes = _Machine.lds_layout(self.workgroups, lds)
        self.lds = _Rows(count, (lds_bytes,), np.uint8, executor, "lds")
        self.ctl = _Rows(count, (max(64, waves),), np.int64)
        self.ctl.rows[:] = 0
        per_thread = {"S": self.S, "V": self.V, "A": self.A, "EXEC": self.exec,
                      "SCC": self.scc, "WG": self.wgs}

        # chunk_state jobs: row 0's, the per-thread addresses moving by their strides
        first = executor._state_job(layout, self.arrays(0), 0, counts).tolist()
        steps = {getattr(chunk_state, name): rows.stride
                 for name, rows in per_thread.items() if rows is not None}
        self.state_jobs = _table(count, [(v, steps.get(i, 0)) for i, v in enumerate(first)])

        # context words: what attach() writes, per thread
        words = np.zeros(C.SIZE, np.int64)
        fill_context(words, table, self.lds.base, stride, lds)
        words[C.NVGPRS], words[C.NAGPRS], words[C.WAVES] = nvgprs, nagprs, waves
        steps = {C.LDS: self.lds.stride, C.CTL: self.ctl.stride}
        words[C.CTL] = self.ctl.base
        for name, rows in per_thread.items():
            if rows is not None:
                words[getattr(C, name)] = rows.base
                steps[getattr(C, name)] = rows.stride
        self.words = _table(count, [(v, steps.get(i, 0)) for i, v in enumerate(words.tolist())])
        self.pointers = self.words.rows[:, _POINTERS].copy()

        # the chunk_loop jobs
        job = {chunk_loop.STATE_JOB: (self.state_jobs.base, self.state_jobs.stride),
               chunk_loop.STATE_FN: (chunk_loop.state_function(), 0),
               chunk_loop.STARTS: (address(starts), 0), chunk_loop.COUNT: (starts.size, 0),
               chunk_loop.CLAIM: (address(claim), 0), chunk_loop.UNIT_FN: (unit.address, 0),
               chunk_loop.CTX: (self.words.base, self.words.stride),
               chunk_loop.ENTRY: (segment, 0), chunk_loop.BUDGET: (BUDGET, 0),
               chunk_loop.ENDS: (address(ends), 0), chunk_loop.NENDS: (ends.size, 0),
               chunk_loop.LDS: (self.lds.base, self.lds.stride),
               chunk_loop.LDS_BYTES: (self.lds.n, 0),
               chunk_loop.EXEC: (self.exec.base, self.exec.stride),
               chunk_loop.EXEC_BYTES: (self.exec.n, 0)}
        jobs = _table(count, [job.get(i, (0, 0)) for i in range(chunk_loop.SIZE)])
        self.jobs, self.jobs_at = jobs.rows, jobs.at(np.arange(count, dtype=np.int64))
        self.keep = (starts, claim, ends, table)

    def arrays(self, k: int) -> tuple:
        """Thread ``k``'s (S, V, A, EXEC, SCC, wave-to-workgroup map)."""
        return tuple(None if rows is None else rows.row(k) for rows in
                     (self.S, self.V, self.A, self.exec, self.scc, self.wgs))

    def ready(self) -> None:
        """Point every thread's context words at its arrays again (a call of compiled code
        the scheduler made while finishing a chunk leaves them at its batch's)."""
        self.words.rows[:, _POINTERS] = self.pointers
        self.jobs[:, chunk_loop.RESULT] = chunk_loop.DONE_ALL

    def run(self) -> None:
        """One round: every thread's loop (on this thread when there is one; else on a team
        of parked native threads, :mod:`hsapy.sim.isa.jit.team`)."""
        if self.count == 1:
            self.jobs[0, chunk_loop.RESULT] = chunk_loop.run(int(self.jobs_at[0]))
        else:
            team.run(self.jobs_at)

    def count_done(self) -> int:
        """Add the chunks the loops finished to the executor's counts, as the scheduler counts
        them (the unit's call, then s_endpgm over its EXEC lanes); returns how many."""
        jobs = self.jobs
        done = int(jobs[:, chunk_loop.DONE].sum())
        if not done:
            return 0
        stats, counters = self.executor.stats, self.executor.counters
        waves = self.waves

        def total(field: int) -> int:
            return int(jobs[:, field].sum())

        lanes, winsts = total(chunk_loop.LANES), total(chunk_loop.WAVE_INSTS)
        stats.waves += done * waves
        stats.lane_instructions += lanes + total(chunk_loop.END_LANES)
        stats.wave_instructions += winsts + done * waves
        stats.batch_steps += total(chunk_loop.STEPS) + done
        counters.chunks += done
        counters.chunks_looped += done
        counters.calls += done
        counters.compiled_lane_instructions += lanes
        counters.compiled_wave_instructions += winsts
        counters.barriers_released += total(chunk_loop.RELEASED)
        jobs[:, chunk_loop.DONE:chunk_loop.END_LANES + 1] = 0
        return done

    def pending(self) -> list[tuple[int, int]]:
        """(first workgroup, thread) of each chunk the scheduler must finish, in chunk order."""
        jobs = self.jobs
        return sorted((int(self.starts[int(jobs[k, chunk_loop.CURRENT])]), k)
                      for k in np.flatnonzero(jobs[:, chunk_loop.RESULT] == chunk_loop.TO_PYTHON))

    def finish(self, k: int, programs: Any, entry: int) -> tuple:
        """The scheduler goes on from where the unit's call left thread ``k``'s chunk, with an
        interpreter machine over the thread's rows and a copy of the executor of its own;
        returns that copy's (stats, counts)."""
        executor = copy.copy(self.executor)
        executor.stats, executor.counters = ExecutionStats(), EngineCounters()
        stats, ctx, waves = executor.stats, self.ctx, self.waves
        first = int(self.starts[int(self.jobs[k, chunk_loop.CURRENT])])
        machine = _Machine(ctx, self.workgroups, self.lds_size, self.private, self.wave_size,
                           self.lds.row(k), first_workgroup=first)
        attach(machine, self.table, stats, executor.counters, ctx.poll,
               self.words.row(k), self.ctl.row(k))
        executor.counters.chunks += 1
        stats.waves += waves
        S, V, A, exec_mask, scc, wgs = self.arrays(k)
        # (the batch owns its EXEC and SCC, as the scheduler's batches do)
        b = Batch(entry, S, V, A, exec_mask.copy(), scc.copy(), wgs,
                  np.arange(waves, dtype=np.int64), mode=self.mode, exec_all=False)
        alive = self.layout[6].copy()
        machine.alive = alive
        machine.stop_at = STOP_NEVER
        result = self.unit.finish(b, machine, int(self.jobs[k, chunk_loop.STATUS]))
        # the scheduler counts the entry's call as one instruction of the batch
        stats.lane_instructions += b.active_lanes
        stats.wave_instructions += waves
        stats.batch_steps += 1
        if result is not None and result >= 0:
            b.pc = result
            runnable = [b]
        else:   # SPLIT: the parts are in machine.pending
            runnable = list(machine.pending)
            machine.pending.clear()
        executor._run_batches(ctx, programs, machine, runnable, alive)
        return executor.stats, executor.counters


def run_looped(executor: Any, ctx: Any, kd: Any, programs: Any, shape: tuple, wave_size: int,
               chunks: list, entry: int, lds: int, private: int, table: Any, threads: int,
               plan: tuple, python_threads: int) -> int | None:
    """Run ``chunks`` (whole workgroups, ``plan`` from :func:`loop_plan`) on up to ``threads``
    threads, one group of chunks of one size after another. Returns None when every chunk ran,
    or the first workgroup not yet run when the kernel's chunks turn out to need the scheduler
    (every thread's first chunk did): the caller runs the rest in Python, in chunks cut for
    ``python_threads`` threads (the loop's chunks are smaller, and the scheduler's Python costs
    per chunk)."""
    groups: dict[int, list] = {}
    for chunk in chunks:
        groups.setdefault(chunk[1] - chunk[0], []).append(chunk)
    used = 1
    try:
        for group in groups.values():
            layout = executor._layout(ctx, kd, shape, wave_size, group[0], entry)
            starts = np.array([c[0] for c in group], np.int64)
            claim = np.zeros(1, np.int64)
            count = max(1, min(threads, len(group)))
            used = max(used, count)
            crew = Crew(executor, ctx, shape, wave_size, lds, private, table, layout, plan,
                        starts, claim, group[0][2], count)
            handed = _rounds(executor, programs, entry, crew, claim, python_threads)
            if handed is not None:
                # the kernel's later dispatches go to the Python path at once
                plan[0].hands_over = True
                return int(starts[handed]) if handed < starts.size else group[-1][1]
        return None
    finally:
        executor.counters.threads = used


def _rounds(executor: Any, programs: Any, entry: int, crew: Crew, claim: np.ndarray,
            python_threads: int) -> int | None:
    """Rounds of the crew's loops until no chunk is left (None), or until the first round
    shows that every chunk needs the scheduler: then the index of the first chunk not taken.
    The scheduler finishes chunks on up to ``python_threads`` threads."""
    first = True
    while True:
        crew.ready()
        crew.run()
        answers = crew.jobs[:, chunk_loop.RESULT].copy()
        looped = crew.count_done()
        pending = crew.pending()
        if pending:
            _finish(executor, crew, programs, entry, pending, claim, python_threads)
        if (answers == chunk_loop.DONE_ALL).all():
            return None
        if first and not looped and len(pending) == crew.count:
            taken = int(claim[0])
            claim[0] = 1 << 40
            return taken
        first = False
        crew.ctx.poll()


def _finish(executor: Any, crew: Crew, programs: Any, entry: int, pending: list,
            claim: np.ndarray, threads: int) -> None:
    """Finish the chunks the loops left to the scheduler (on ``threads`` threads of the
    executor's pool when there are several), adding their counts; raise the earliest chunk's
    error, after stopping the loops."""
    errors: list[tuple[int, BaseException]] = []
    done: list[tuple] = []
    if len(pending) == 1 or threads <= 1:
        for first, k in pending:
            try:
                done.append(crew.finish(k, programs, entry))
            except BaseException as exc:  # noqa: BLE001 - raised below, as the earliest chunk's
                errors.append((first, exc))
                break
    else:
        ctx = crew.ctx

        def finish(k: int) -> tuple:
            CURRENT.dispatch = ctx
            with np.errstate(all="ignore"):
                return crew.finish(k, programs, entry)

        pool = executor._thread_pool(threads)
        futures = [(first, pool.submit(finish, k)) for first, k in pending]
        for first, future in futures:
            try:
                done.append(future.result())
            except BaseException as exc:  # noqa: BLE001 - raised below
                errors.append((first, exc))
    for stats, counters in done:
        executor._add_counts(stats, counters)
    if errors:
        claim[0] = 1 << 40      # no thread takes another chunk
        raise min(errors, key=lambda e: e[0])[1]
