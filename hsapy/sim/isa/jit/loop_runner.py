"""A dispatch's chunks run by :mod:`hsapy.sim.isa.jit.chunk_loop`, on native threads.

:func:`loop_plan` says whether a dispatch can take this path (its workgroups all whole, its
kernel starting in compiled code); :func:`run_looped` runs it. Chunks of one size share a
counter from which every thread takes the next; each thread has its own register arrays, LDS
and context words (a :class:`LoopWorker`), all made on the dispatching thread before any runs.
Several threads are started by generated code itself (``chunk_loop.run_threads``), so that the
whole round lets the GIL go once: Python threads would each need the GIL to start and to set
themselves up, and each waits for it behind the others.

A round ends when every thread's loop has answered: no chunk left, the step budget spent
(the dispatch is polled: watchdog, cancellation), or a chunk the scheduler must finish (a
split, a hand-back). Those chunks are finished in Python -- on the thread pool of the
executor when there are several -- and the next round goes on with the chunks left. A fault
raises the error of the earliest chunk that faulted.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np

from hsapy.sim.isa.interpreter import ExecutionStats, _Machine
from hsapy.sim.isa.jit import chunk_loop
from hsapy.sim.isa.jit import context as C
from hsapy.sim.isa.jit.runtime import BUDGET, CURRENT, STOP_NEVER, EngineCounters, address
from hsapy.sim.isa.wave import Batch

__all__ = ["END_INSTRUCTIONS", "loop_plan", "run_looped", "LoopWorker"]

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


class LoopWorker:
    """One thread's part of a group of chunks: its executor (its own counts when there are
    several), machine (LDS, context words), register arrays and chunk_loop job."""

    def __init__(self, executor: Any, ctx: Any, shape: tuple, wave_size: int, lds: int,
                 private: int, table: Any, layout: tuple, plan: tuple, starts: np.ndarray,
                 claim: np.ndarray, counts: Any, slot: Any) -> None:
        unit, segment, ends = plan
        self.executor = executor
        self.unit = unit
        self.layout = layout
        self.starts = starts
        self.mode = shape[2]
        self.arrays = executor._state_arrays(layout, shape, wave_size, slot)
        S, V, A, exec_mask, scc, wgs = self.arrays
        self.waves = waves = wgs.size
        self.state_job = executor._state_job(layout, self.arrays, 0, counts)
        self.machine = machine = _Machine(ctx, int(layout[6].size), lds, private, wave_size)
        executor._prepare_machine(ctx, machine, table)
        if machine._jit_ctl.size < waves:
            machine._jit_ctl = np.zeros(waves, np.int64)
        self.job = job = np.zeros(chunk_loop.SIZE, np.int64)
        job[chunk_loop.STATE_JOB] = address(self.state_job)
        job[chunk_loop.STATE_FN] = chunk_loop.state_function()
        job[chunk_loop.STARTS], job[chunk_loop.COUNT] = address(starts), starts.size
        job[chunk_loop.CLAIM] = address(claim)
        job[chunk_loop.UNIT_FN] = unit.address
        job[chunk_loop.CTX] = machine._jit_ctx_address
        job[chunk_loop.ENTRY], job[chunk_loop.BUDGET] = segment, BUDGET
        job[chunk_loop.ENDS], job[chunk_loop.NENDS] = address(ends), ends.size
        job[chunk_loop.LDS], job[chunk_loop.LDS_BYTES] = address(machine.lds), machine.lds.nbytes
        job[chunk_loop.EXEC], job[chunk_loop.EXEC_BYTES] = address(exec_mask), exec_mask.nbytes
        self.job_address = address(job)
        self.addresses = (address(S), address(V), 0 if A is None else address(A),
                          V.shape[0], 0 if A is None else A.shape[0], address(exec_mask),
                          address(scc), address(wgs))

    def ready(self) -> None:
        """Point the context words at this worker's arrays (a call of compiled code the
        scheduler made while finishing a chunk leaves them at its batch's)."""
        words = self.machine._jit_ctx
        (words[C.S], words[C.V], words[C.A], words[C.NVGPRS], words[C.NAGPRS], words[C.EXEC],
         words[C.SCC], words[C.WG]) = self.addresses
        words[C.WAVES] = self.waves
        words[C.CTL] = address(self.machine._jit_ctl)
        self.job[chunk_loop.RESULT] = chunk_loop.DONE_ALL

    def count(self) -> None:
        """Add the chunks the loop finished to the executor's counts, as the scheduler counts
        them: the unit's call, then s_endpgm over its EXEC lanes."""
        job = self.job
        done = int(job[chunk_loop.DONE])
        if not done:
            return
        stats, counters = self.executor.stats, self.executor.counters
        waves = self.waves
        lanes, winsts = int(job[chunk_loop.LANES]), int(job[chunk_loop.WAVE_INSTS])
        stats.waves += done * waves
        stats.lane_instructions += lanes + int(job[chunk_loop.END_LANES])
        stats.wave_instructions += winsts + done * waves
        stats.batch_steps += int(job[chunk_loop.STEPS]) + done
        counters.chunks += done
        counters.chunks_looped += done
        counters.calls += done
        counters.compiled_lane_instructions += lanes
        counters.compiled_wave_instructions += winsts
        counters.barriers_released += int(job[chunk_loop.RELEASED])
        job[chunk_loop.DONE:chunk_loop.END_LANES + 1] = 0

    @property
    def pending(self) -> int | None:
        """The first workgroup of the chunk the scheduler must finish (None: none)."""
        if self.job[chunk_loop.RESULT] != chunk_loop.TO_PYTHON:
            return None
        return int(self.starts[int(self.job[chunk_loop.CURRENT])])

    def finish(self, ctx: Any, programs: Any, entry: int) -> None:
        """The scheduler goes on from where the unit's call left the pending chunk."""
        executor, machine, waves = self.executor, self.machine, self.waves
        stats = executor.stats
        executor.counters.chunks += 1
        stats.waves += waves
        S, V, A, exec_mask, scc, wgs = self.arrays
        b = Batch(entry, S, V, A, exec_mask, scc, wgs, np.arange(waves, dtype=np.int64),
                  mode=self.mode, exec_all=False)
        alive = self.layout[6].copy()
        machine.alive = alive
        machine.stop_at = STOP_NEVER
        result = self.unit.finish(b, machine, int(self.job[chunk_loop.STATUS]))
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
        self.job[chunk_loop.RESULT] = chunk_loop.DONE_ALL


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
            if count == 1:
                workers = [LoopWorker(executor, ctx, shape, wave_size, lds, private, table,
                                      layout, plan, starts, claim, group[0][2], None)]
            else:
                copies = []
                for _ in range(count):
                    worker = copy.copy(executor)
                    worker.stats = ExecutionStats()
                    worker.counters = EngineCounters()
                    copies.append(worker)
                workers = [LoopWorker(copies[k], ctx, shape, wave_size, lds, private, table,
                                      layout, plan, starts, claim, group[0][2], ("loop", k))
                           for k in range(count)]
            try:
                handed = _rounds(executor, ctx, programs, entry, workers, claim, python_threads)
            finally:
                if count > 1:
                    for worker in workers:
                        executor._add_counts(worker.executor.stats, worker.executor.counters)
            if handed is not None:
                # the kernel's later dispatches go to the Python path at once
                plan[0].hands_over = True
                return int(starts[handed]) if handed < starts.size else group[-1][1]
        return None
    finally:
        executor.counters.threads = used


def _rounds(executor: Any, ctx: Any, programs: Any, entry: int, workers: list,
            claim: np.ndarray, python_threads: int) -> int | None:
    """Rounds of the workers' loops until no chunk is left (None), or until the first round
    shows that every chunk needs the scheduler: then the index of the first chunk not taken.
    The scheduler finishes chunks on up to ``python_threads`` threads."""
    if len(workers) > 1:
        jobs = np.array([w.job_address for w in workers], np.int64)
        handles = np.zeros(len(workers), np.int64)
        created = np.zeros(len(workers), np.int64)
        words = np.zeros(chunk_loop.THREADS_SIZE, np.int64)
        words[chunk_loop.THREADS], words[chunk_loop.JOBS] = len(workers), address(jobs)
        words[chunk_loop.CREATE], words[chunk_loop.JOIN] = chunk_loop.pthread_functions()
        words[chunk_loop.HANDLES], words[chunk_loop.CREATED] = address(handles), address(created)
        start = address(words)
    first = True
    while True:
        for worker in workers:
            worker.ready()
        if len(workers) == 1:
            worker.job[chunk_loop.RESULT] = chunk_loop.run(worker.job_address)
        else:
            chunk_loop.run_threads(start)
        answers = [int(w.job[chunk_loop.RESULT]) for w in workers]
        looped = sum(int(w.job[chunk_loop.DONE]) for w in workers)
        for worker in workers:
            worker.count()
        pending = sorted((w for w in workers if w.pending is not None),
                         key=lambda w: w.pending)
        if pending:
            _finish(executor, ctx, programs, entry, pending, claim, python_threads)
        if all(answer == chunk_loop.DONE_ALL for answer in answers):
            return None
        if first and not looped and len(pending) == len(workers):
            taken = int(claim[0])
            claim[0] = 1 << 40
            return taken
        first = False
        ctx.poll()


def _finish(executor: Any, ctx: Any, programs: Any, entry: int, pending: list,
            claim: np.ndarray, threads: int) -> None:
    """Finish the chunks the loops left to the scheduler (on ``threads`` threads of the
    executor's pool when there are several); raise the earliest chunk's error, after stopping
    the loops."""
    errors: list[tuple[int, BaseException]] = []
    if len(pending) == 1 or threads <= 1:
        for worker in pending:
            first = worker.pending
            try:
                worker.finish(ctx, programs, entry)
            except BaseException as exc:  # noqa: BLE001 - raised below, as the earliest chunk's
                errors.append((first, exc))
                break
    else:
        def finish(worker: LoopWorker) -> None:
            CURRENT.dispatch = ctx
            with np.errstate(all="ignore"):
                worker.finish(ctx, programs, entry)

        pool = executor._thread_pool(threads)
        futures = [(w.pending, pool.submit(finish, w)) for w in pending]
        for first, future in futures:
            try:
                future.result()
            except BaseException as exc:  # noqa: BLE001 - raised below
                errors.append((first, exc))
    if errors:
        claim[0] = 1 << 40      # no thread takes another chunk
        raise min(errors, key=lambda e: e[0])[1]
