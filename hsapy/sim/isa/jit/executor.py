"""The compiled engine's executor: the interpreter's, with compiled programs and threads.

:class:`JitExecutor` runs a dispatch exactly as
:class:`~hsapy.sim.isa.interpreter.InterpreterExecutor` does -- the same chunks of workgroups, the
same batches, the same scheduling -- with programs whose decoded functions are compiled
(:mod:`hsapy.sim.isa.jit.runtime`). When no workgroup of the kernel can observe another one's
order of execution (no atomic on global memory, no scalar store: see :func:`parallel_safe`),
chunks of workgroups run on several threads (``HSAPY_SIM_THREADS``, default the cores the
process may use, at most :data:`DEFAULT_THREADS_MAX`). Where its workgroups are all whole and
its kernel starts in compiled code, generated code runs the chunks, on native threads
(:mod:`hsapy.sim.isa.jit.loop_runner`); chunks that Python runs use at most
:data:`PYTHON_THREADS_MAX` threads. A kernel that is not parallel-safe runs its chunks one after
another in the interpreter's order, so atomics and their returned values come out as the
interpreter's.
Each dispatch runs on a copy of the executor (its counts, chunk layouts and register pools are
its own: the queues of one agent share the executor and dispatch at the same time).

Under ``HSAPY_SIM_ENGINE=auto`` a dispatch does not wait for its kernel's compilation: the first
dispatch of a kernel starts it on a background thread and waits at most
:data:`AUTO_COMPILE_WAIT_S` (long enough for units loaded from the on-disk cache); if it is not
done by then, the dispatch runs in the interpreter, and the kernel's later dispatches run
compiled once it is. (``jit`` compiles before the dispatch, whatever it costs.)
"""
from __future__ import annotations

import atexit
import copy
import ctypes
import os
import queue
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from hsapy.sim.execution import resolve_threads
from hsapy.sim.isa.interpreter import (
    CHUNK_BYTES,
    DescriptorFields,
    ExecutionStats,
    InterpreterExecutor,
    Program,
    _Machine,
    initial_mode,
)
from hsapy.sim.isa.jit import chunk_state, last_dispatch
from hsapy.sim.isa.jit.loop_runner import loop_plan, run_looped
from hsapy.sim.isa.jit.runtime import (
    CANCEL,
    CURRENT,
    EngineCounters,
    JitProgram,
    address,
    attach,
)
from hsapy.sim.isa.wave import NSREG, TTMP0, Batch

__all__ = ["JitExecutor", "thread_count", "parallel_safe"]


# register state of one chunk of a parallel-safe dispatch (the interpreter's CHUNK_BYTES keeps
# its numpy passes in cache; compiled code runs wave by wave and gains more from fewer chunks)
JIT_CHUNK_BYTES = 2 * CHUNK_BYTES
# the chunk loop's chunks per thread, over the interpreter's two (see _run_chunks_pooled)
LOOP_CHUNKS_PER_THREAD = 3


# "auto": how long a dispatch waits for its kernel's compilation (started on a background
# thread) before it runs in the interpreter instead; loading units from the on-disk cache takes
# far less, tracing and compiling a kernel from scratch can take far more
AUTO_COMPILE_WAIT_S = 0.5


class CompiledProgram(JitProgram, Program):
    """A program whose decoded functions are compiled as they are decoded."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        Program.__init__(self, *args, **kwargs)
        self._jit_init()


# The thread count's ceilings. Chunks that generated code runs from start to end
# (hsapy.sim.isa.jit.chunk_loop) need no GIL, and their threads gain until memory bandwidth or
# the cores run out: by default the usable cores, at most DEFAULT_THREADS_MAX. Chunks the
# interpreter's scheduler runs or finishes (batches that split, partial workgroups) hold the GIL
# for their Python, and every numpy operation or compiled call in it lets the GIL go and queues
# to take it back: past a few threads they spend more time queueing than they gain (a kernel
# whose batches split at every level of a tree reduction took 2.5x longer on 16 threads of a
# 16-core host than on one), so they use at most
# PYTHON_THREADS_MAX whatever the count. HSAPY_SIM_THREADS sets the count.
DEFAULT_THREADS_MAX = 16
PYTHON_THREADS_MAX = 4


def thread_count(python: bool = False) -> int:
    """Threads for the chunks of a parallel-safe dispatch: ``HSAPY_SIM_THREADS``, else the
    cores this process may run on, at most DEFAULT_THREADS_MAX; ``python``: for chunks that
    Python runs, that count at most PYTHON_THREADS_MAX."""
    try:
        count = resolve_threads()
    except ValueError:     # changed to something invalid after the runtime checked it
        count = None
    if count is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
        count = max(1, min(cores, DEFAULT_THREADS_MAX))
    return min(count, PYTHON_THREADS_MAX) if python else count


_WRITE_SHARED = ("_atomic", "s_store", "s_buffer_store", "s_scratch_store")


def _writes_shared(inst: Any) -> bool:
    """An atomic on global (flat, buffer, scalar) memory or a scalar store (LDS is the
    workgroup's own)."""
    return inst.encoding != "DS" and any(key in inst.name for key in _WRITE_SHARED)


# instructions that go to code elsewhere (other functions): a kernel that has one is judged with
# the whole code object
_CALLS = frozenset({"s_swappc_b64", "s_setpc_b64", "s_call_b64"})


def parallel_safe(program: Program, entry: int | None = None) -> bool:
    """True when no instruction the dispatch may run is an atomic on global (flat, buffer,
    scalar) memory or a scalar store: then workgroups see each other only through plain loads
    and stores, whose results do not depend on the order workgroups run in (unless they race,
    which is undefined on hardware too). With the kernel's ``entry``, a kernel that calls no
    other function is judged by its own function's instructions; otherwise (or without an
    entry) the whole code object must decode and hold none."""
    if entry is not None:
        for start, end, _ in program.text.functions or ():
            if start <= entry < end:
                verdict = _function_parallel_safe(program, start, end)
                if verdict is not None:
                    return verdict
                break
    cached = getattr(program, "_parallel_safe", None)
    if cached is not None:
        return cached
    safe = True
    try:
        for start, _end, _ in program.text.functions or ():
            program.lookup(start)
        for start, _end in program.text.segments:
            if not program.text.functions:
                program.lookup(start)
    except Exception:  # noqa: BLE001 - code that does not decode: keep the serial order
        safe = False
    if program.errors:
        safe = False
    if any(inst is not None and _writes_shared(inst) for inst in list(program.insts)):
        safe = False
    program._parallel_safe = safe
    return safe


def _function_parallel_safe(program: Program, start: int, end: int) -> bool | None:
    """parallel_safe's verdict for the function [start, end) on its own; None when it calls
    elsewhere (or decodes to nothing), so that the whole code object decides."""
    verdicts = program.__dict__.setdefault("_parallel_safe_functions", {})
    if start in verdicts:
        return verdicts[start]
    verdict: bool | None
    try:
        program.lookup(start)                   # decodes the whole function
    except Exception:  # noqa: BLE001 - code that does not decode: keep the serial order
        verdict = False
    else:
        insts = [inst for inst in list(program.insts)
                 if inst is not None and start <= inst.offset < end]
        if any(start <= offset < end for offset in list(program.errors)):
            verdict = False
        elif not insts or any(inst.name in _CALLS for inst in insts):
            verdict = None
        else:
            verdict = not any(_writes_shared(inst) for inst in insts)
    verdicts[start] = verdict
    return verdict


class JitExecutor(InterpreterExecutor):
    """The interpreter with compiled programs (see the module docstring)."""

    program_class = CompiledProgram
    engine_tag = "jit"
    # run chunks in generated code where the dispatch allows it (tests turn it off to compare)
    chunk_loop = True

    def __init__(self, profile: Any) -> None:
        super().__init__(profile)
        self.counters = EngineCounters()
        # shared with the per-dispatch copies (see execute): thread pools by size, and array
        # pools a finished dispatch leaves for the next one
        self._pools: dict[int, ThreadPoolExecutor] = {}
        self._spare_arrays: list[dict] = []
        # what chunk layouts share from one dispatch to the next (see _known_layout), by kernel
        # descriptor, register shape, wave size, workgroups per chunk and workgroup shape
        self._geometries: dict[tuple, tuple] = {}
        self._zero_pools: dict | None = None
        self._layouts: dict | None = None
        self._lock = threading.Lock()
        # "auto": per loaded code object, kernel -> the background compilation's state
        self._compiling: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._interpreter: InterpreterExecutor | None = None

    def execute(self, ctx: Any) -> None:
        if getattr(ctx, "engine", None) == "auto" and not self._compiled_in_time(ctx):
            self._interpret(ctx)
            return
        # the dispatch's own state (counts, layouts, array pools) on a copy: the queues of one
        # agent share its executor and run their dispatches at the same time
        run = copy.copy(self)
        run.counters = EngineCounters()
        CURRENT.dispatch = ctx
        try:
            run._execute(ctx)
        finally:
            CURRENT.dispatch = None
            self.stats = run.stats
            last_dispatch.counters = run.counters

    # --- auto: compile in the background ---------------------------------------------------
    def _compiled_in_time(self, ctx: Any) -> bool:
        """Whether the kernel's program is compiled, after starting its compilation (the
        executor's plan of the kernel, then every function of its code object) on a background
        thread the first time and waiting up to AUTO_COMPILE_WAIT_S. True also when the
        kernel's descriptor or code does not resolve: the compiled path reports that as before."""
        try:
            kd = DescriptorFields.from_bytes(ctx.memory.read(ctx.kernel_object, 64))
            entry = ctx.kernel_object + kd.entry_offset
            wave_size = self._wave_size(ctx, kd)
            alloc = ctx.memory.find(entry)
            if alloc is None:
                return True
            mode = initial_mode(kd.rsrc1, self.profile.family)
            key = (entry, wave_size, mode, kd.rsrc3)
            with self._lock:
                per_alloc = self._compiling.setdefault(alloc, {})
                job = per_alloc.get(key)
                if job is None:
                    job = per_alloc[key] = _Compilation(self, ctx, kd, entry, wave_size, mode)
        except Exception:  # noqa: BLE001 - the compiled path reports what is wrong
            return True
        return job.done.wait(AUTO_COMPILE_WAIT_S)

    def _interpret(self, ctx: Any) -> None:
        """Run the dispatch in the interpreter (its programs, shared with the interpreter's
        own executor)."""
        interpreter = self._interpreter
        if interpreter is None:
            interpreter = self._interpreter = InterpreterExecutor(self.profile)
        engine = ctx.engine
        ctx.engine = "interp"
        try:
            interpreter.execute(ctx)
        finally:
            ctx.engine = engine
            self.stats = interpreter.stats

    # --- chunks ---------------------------------------------------------------------------------
    def _run_chunks(self, ctx: Any, kd: Any, programs: Any, shape: tuple, wave_size: int,
                    entry: int, lds: int, private: int, recorder: Any = None) -> None:
        # recorder is always None here: profiled dispatches run on the interpreter
        with self._lock:
            self._zero_pools = self._spare_arrays.pop() if self._spare_arrays else {}
        self._layouts = {}
        try:
            self._run_chunks_pooled(ctx, kd, programs, shape, wave_size, entry, lds, private)
        finally:
            with self._lock:
                if not self._spare_arrays and len(self._zero_pools) <= 32:
                    # the next dispatch's chunks reuse these arrays (fresh pages cost a fault
                    # each on first touch); one set is kept, at most 8 arrays per thread
                    self._spare_arrays.append(self._zero_pools)
            self._zero_pools = None
            self._layouts = None

    def _run_chunks_pooled(self, ctx: Any, kd: Any, programs: Any, shape: tuple,
                           wave_size: int, entry: int, lds: int, private: int) -> None:
        threads = getattr(ctx, "threads", None) or thread_count()
        python_threads = min(threads, thread_count(python=True))
        program = programs(shape[2])
        table = ctx.memory.table(ctx.agent_handle or None)
        if not parallel_safe(program, entry):
            # workgroups see each other's order (atomics, scalar stores): the interpreter's
            # chunks in the interpreter's order, whatever the thread count, so that atomics
            # apply and return as the interpreter's do
            self.counters.threads = 1
            for chunk in super()._chunks(ctx, wave_size, shape, lds, private):
                ctx.poll()
                self.counters.chunks += 1
                self._run_chunk(ctx, kd, programs, shape, wave_size, chunk, entry, lds, private,
                                table)
            return
        # for the chunk loop, about six chunks per thread: a chunk costs it next to nothing,
        # and threads that take the next chunk as they finish even out (a thread slowed by the
        # machine holds up the dispatch by at most one small chunk)
        chunks = list(self._chunks(ctx, wave_size, shape, lds, private,
                                   LOOP_CHUNKS_PER_THREAD * threads if threads > 1 else 1))
        plan = loop_plan(program, chunks, entry) if self.chunk_loop else None
        if plan is not None:
            rest = run_looped(self, ctx, kd, programs, shape, wave_size, chunks, entry, lds,
                              private, table, threads, plan, python_threads)
            if rest is None:
                return
            # the kernel's chunks need the scheduler: the workgroups left, in chunks for fewer
            # threads (the scheduler's Python costs per chunk, and its threads queue for the GIL)
            chunks = [(max(c[0], rest),) + c[1:] for c in
                      self._chunks(ctx, wave_size, shape, lds, private, python_threads)
                      if c[1] > rest]
            self._run_parallel(ctx, kd, programs, shape, wave_size, chunks, entry, lds, private,
                               table, python_threads, merge=True)
            return
        self._run_parallel(ctx, kd, programs, shape, wave_size,
                           list(self._chunks(ctx, wave_size, shape, lds, private, python_threads)),
                           entry, lds, private, table, python_threads)

    def _run_parallel(self, ctx: Any, kd: Any, programs: Any, shape: tuple, wave_size: int,
                      chunks: list, entry: int, lds: int, private: int, table: Any,
                      threads: int, merge: bool = False) -> None:
        """Run ``chunks`` on up to ``threads`` threads, each chunk in Python (its initial
        batch, then the scheduler); ``merge``: add to the counts already there."""
        if threads <= 1 or len(chunks) <= 1:
            self.counters.threads = max(self.counters.threads, 1) if merge else 1
            for chunk in chunks:
                ctx.poll()
                self.counters.chunks += 1
                self._run_chunk(ctx, kd, programs, shape, wave_size, chunk, entry, lds, private,
                                table)
            return
        pool = self._thread_pool(threads)

        def run(chunk: tuple) -> tuple:
            CURRENT.dispatch = ctx
            worker = copy.copy(self)
            worker.stats = ExecutionStats()
            worker.counters = EngineCounters()
            worker.counters.chunks = 1
            with np.errstate(all="ignore"):
                worker._run_chunk(ctx, kd, programs, shape, wave_size, chunk, entry, lds,
                                  private, table)
            return worker.stats, worker.counters, threading.get_ident()

        used = self.counters.threads if merge else 0
        self._gather([pool.submit(run, chunk) for chunk in chunks])
        self.counters.threads = max(used, self.counters.threads)

    def _thread_pool(self, threads: int) -> ThreadPoolExecutor:
        """The executor's pool of ``threads`` threads (a pool is never shut down while the
        executor lives: another dispatch may be using it)."""
        with self._lock:
            pool = self._pools.get(threads)
            if pool is None:
                pool = self._pools[threads] = ThreadPoolExecutor(
                    threads, thread_name_prefix="hsapy-sim-jit")
            return pool

    def _chunks(self, ctx: Any, wave_size: int, shape: tuple, lds: int, private: int,
                threads: int = 1):
        """Chunks of a parallel-safe dispatch: larger than the interpreter's (each costs a
        fixed amount of Python around the compiled code: the initial batch, the scheduler),
        cut smaller for several threads so that each thread gets a few of them."""
        chunks = list(InterpreterExecutor._chunks(self, ctx, wave_size, shape, lds, private,
                                                  JIT_CHUNK_BYTES, threads))
        if len(chunks) > 1:
            # chunks of one size where a size between half and all of this one divides the
            # workgroups: a chunk of another size needs a layout of its own
            per = chunks[0][1] - chunks[0][0]
            total = chunks[-1][1]
            even = next((d for d in range(per, (per + 1) // 2 - 1, -1) if total % d == 0), None)
            if even is not None and even != per:
                rest = chunks[0][2:]
                chunks = [(start, start + even) + rest for start in range(0, total, even)]
        yield from chunks

    def _run_chunk(self, ctx: Any, kd: Any, programs: Any, shape: tuple, wave_size: int,
                   chunk: tuple, entry: int, lds: int, private: int, table: Any = None) -> None:
        start, stop, counts, grid, block = chunk
        batch, alive = self._initial_batch(ctx, kd, shape, wave_size, start, stop, counts,
                                           grid, block, entry)
        machine = _Machine(ctx, stop - start, lds, private, wave_size, first_workgroup=start)
        self._prepare_machine(ctx, machine, table)
        self._schedule(ctx, programs, machine, batch, alive)

    def _gather(self, futures: list) -> None:
        """Wait for the threads' work and add up their counts; then raise the first error
        (the earliest chunk's: the futures are in the chunks' order)."""
        workers = []
        errors: list[BaseException] = []
        for future in futures:
            try:
                workers.append(future.result())
            except BaseException as exc:  # noqa: BLE001 - the first chunk's fault is raised
                errors.append(exc)
        for stats, counters, _ in workers:
            self._add_counts(stats, counters)
        self.counters.threads = len({ident for _, _, ident in workers})
        if errors:
            raise errors[0]

    def _add_counts(self, stats: ExecutionStats, counters: EngineCounters) -> None:
        """Add a worker's counts (a copy of this executor that ran some chunks) to these."""
        for name in ("lane_instructions", "wave_instructions", "batch_steps", "waves"):
            setattr(self.stats, name, getattr(self.stats, name) + getattr(stats, name))
        self.counters.add(counters)

    def _initial_batch(self, ctx: Any, kd: Any, shape: tuple, wave_size: int, start: int,
                       stop: int, counts: Any, grid: Any, block: Any, entry: int) -> tuple:
        """The interpreter's initial batch. In a dispatch whose workgroups are all whole, the
        chunks of one size differ only in their workgroup ids: the first is made by the
        interpreter and what the others share with it is kept (work-item id rows, user SGPRs,
        EXEC, the wave-to-workgroup map, where the workgroup ids go), and the others' state is
        written in one call of generated code (:mod:`hsapy.sim.isa.jit.chunk_state`) instead
        of a few dozen numpy operations, each of which lets the GIL go and queues to take it
        back while threads run chunks side by side."""
        layouts = self._layouts
        if layouts is None or any(g % b for g, b in zip(grid, block)):
            return super()._initial_batch(ctx, kd, shape, wave_size, start, stop, counts,
                                          grid, block, entry)
        count = stop - start
        layout = layouts.get(count)
        if layout is None:
            layout = self._known_layout(ctx, kd, shape, wave_size, count, block)
        if layout is None:
            batch, alive = super()._initial_batch(ctx, kd, shape, wave_size, start, stop,
                                                  counts, grid, block, entry)
            # the work-item id rows (v0, or v0-v2 unpacked); every other register is zero
            ids = 1 if self.profile.packed_work_item_ids else \
                min(((kd.rsrc2 >> 11) & 3) + 1, shape[0])
            # the SGPRs every wave starts with the same: the user SGPRs (gfx12's wave-in-group
            # field is the same from one chunk of this size to the next too)
            user = self._user_sgprs(ctx, kd, np.zeros((1, NSREG), np.uint32))
            wave_field = batch.S[:, TTMP0 + 8].copy() \
                if self.profile.has_architected_sgprs else None
            columns = np.full(5, -1, np.int64)
            for sgpr, column in self._workgroup_sgpr_columns(kd):
                columns[column] = sgpr
            layouts[count] = (batch.S[0, :user].copy(), wave_field,
                              batch.V[:ids].copy(), batch.exec.copy(), bool(batch.exec_all),
                              batch.wg.copy(), alive.copy(), columns)
            with self._lock:
                if len(self._geometries) >= 64:
                    self._geometries.clear()
                self._geometries[(kd, shape, wave_size, count, tuple(block))] = \
                    layouts[count][1:]
            return batch, alive
        arrays = self._state_arrays(layout, shape, wave_size)
        job = self._state_job(layout, arrays, start, counts)
        chunk_state.write(address(job))
        S, V, A, exec_mask, scc, wgs = arrays
        return (Batch(entry, S, V, A, exec_mask, scc, wgs, np.arange(wgs.size, dtype=np.int64),
                      mode=shape[2], exec_all=layout[4]), layout[6].copy())

    def _layout(self, ctx: Any, kd: Any, shape: tuple, wave_size: int, chunk: tuple,
                entry: int) -> tuple:
        """The layout of chunks of ``chunk``'s size (made from its initial batch, which is
        not run, when there is none yet)."""
        start, stop = chunk[0], chunk[1]
        layout = self._layouts.get(stop - start) if self._layouts is not None else None
        if layout is None:
            layout = self._known_layout(ctx, kd, shape, wave_size, stop - start, chunk[4])
        if layout is None:
            self._initial_batch(ctx, kd, shape, wave_size, *chunk, entry)
            layout = self._layouts[stop - start]
        return layout

    def _known_layout(self, ctx: Any, kd: Any, shape: tuple, wave_size: int, count: int,
                      block: Any) -> tuple | None:
        """The layout of chunks of ``count`` workgroups from what an earlier dispatch of the
        same kernel and geometry kept (everything but the user SGPRs, which hold this
        dispatch's addresses); None when there is none."""
        geometry = self._geometries.get((kd, shape, wave_size, count, tuple(block)))
        if geometry is None:
            return None
        row = np.zeros((1, NSREG), np.uint32)
        user = self._user_sgprs(ctx, kd, row)
        layout = self._layouts[count] = (row[0, :user].copy(),) + geometry
        return layout

    def _state_arrays(self, layout: tuple, shape: tuple, wave_size: int) -> tuple:
        """A chunk's register arrays (this thread's pooled ones) and its EXEC, SCC and
        wave-to-workgroup arrays, for :mod:`chunk_state` to fill."""
        live, wg = layout[3], layout[5]
        waves = wg.size
        nvgprs, nagprs, _ = shape
        S = self._pooled((waves, NSREG), np.uint32)
        V = self._pooled((nvgprs, waves, wave_size), np.uint32)
        A = self._pooled((nagprs, waves, wave_size), np.uint32) if nagprs else None
        if S is None or V is None or (nagprs and A is None):
            S = np.empty((waves, NSREG), np.uint32)
            V = np.empty((nvgprs, waves, wave_size), np.uint32)
            A = np.empty((nagprs, waves, wave_size), np.uint32) if nagprs else None
        return S, V, A, np.empty_like(live), np.empty(waves, bool), np.empty_like(wg)

    @staticmethod
    def _state_job(layout: tuple, arrays: tuple, start: int, counts: Any) -> np.ndarray:
        """The :mod:`chunk_state` job writing a chunk's initial state into ``arrays``
        (:meth:`_state_arrays`), its first workgroup being ``start``."""
        user, wave_field, ids, live, _, wg, _, columns = layout
        S, V, A, exec_mask, scc, wgs = arrays
        waves = wg.size
        job = np.zeros(chunk_state.SIZE, np.int64)
        job[chunk_state.S], job[chunk_state.S_BYTES] = address(S), S.nbytes
        job[chunk_state.V], job[chunk_state.V_BYTES] = address(V), V.nbytes
        job[chunk_state.IDS], job[chunk_state.IDS_BYTES] = address(ids), ids.nbytes
        if A is not None:
            job[chunk_state.A], job[chunk_state.A_BYTES] = address(A), A.nbytes
        if user.size:
            job[chunk_state.USER], job[chunk_state.USER_BYTES] = address(user), user.nbytes
        if wave_field is not None:
            job[chunk_state.WAVE_FIELD] = address(wave_field)
        nx, ny, _ = counts
        job[chunk_state.WAVES], job[chunk_state.START] = waves, start
        job[chunk_state.NX], job[chunk_state.NY] = nx, ny
        job[chunk_state.EXEC], job[chunk_state.LIVE] = address(exec_mask), address(live)
        job[chunk_state.EXEC_BYTES] = live.nbytes
        job[chunk_state.SCC], job[chunk_state.WG] = address(scc), address(wgs)
        job[chunk_state.WG_LOCAL] = address(wg)
        job[chunk_state.COLUMNS:chunk_state.COLUMNS + 5] = columns
        return job

    def _pooled(self, shape: tuple, dtype: Any, slot: Any = None) -> np.ndarray | None:
        """The pooled array of ``shape`` and ``dtype`` (uninitialised when new) of ``slot``
        (default: this thread's); None outside a dispatch."""
        pools = self._zero_pools
        if pools is None:
            return None
        pool = pools.setdefault(threading.get_ident() if slot is None else slot, {})
        key = (shape, np.dtype(dtype).str)
        array = pool.get(key)
        if array is None:
            if len(pool) >= 8:
                pool.clear()
            array = pool[key] = np.empty(shape, dtype)
        return array

    def _state_zeros(self, shape: tuple, dtype: Any) -> np.ndarray:
        """Register arrays of a chunk's initial batch in the memory of the previous chunk's,
        zeroed again: fresh arrays of a few MiB come from fresh pages, whose first touches
        (page faults) cost more than the zeroing. A chunk's batch is gone once the chunk is
        done (the next one of the same thread starts after), and the pool lives for one
        dispatch."""
        array = self._pooled(shape, dtype)
        if array is None:
            return np.zeros(shape, dtype)
        # libc's memset: numpy's fill broadcasts the scalar element by element
        ctypes.memset(address(array), 0, array.nbytes)
        return array

    def _prepare_machine(self, ctx: Any, machine: Any, table: Any) -> None:
        if table is None:
            table = ctx.memory.table(ctx.agent_handle or None)
        attach(machine, table, self.stats, self.counters, ctx.poll)


_WORK: queue.SimpleQueue[_Compilation | None] = queue.SimpleQueue()
_WORKER: list[threading.Thread] = []
_WORKER_LOCK = threading.Lock()
# at exit, how long to wait for the background compilation to reach its next check (the
# longest step between checks is LLVM compiling one unit)
EXIT_WAIT_S = 60.0


def _stop_compilations() -> None:
    """At interpreter exit: stop background compilation and wait for it to leave LLVM (whose
    global state the process tears down at exit). What it finished is cached."""
    CANCEL.set()
    _WORK.put(None)             # wakes an idle worker
    with _WORKER_LOCK:
        workers = list(_WORKER)
    for worker in workers:
        worker.join(EXIT_WAIT_S)


def _work() -> None:
    CURRENT.background = True
    while True:
        job = _WORK.get()
        if job is None or CANCEL.is_set():
            return
        job._run()


class _Compilation:
    """One kernel's compilation, queued for the process's one background compiling thread (a
    daemon, stopped at interpreter exit; the on-disk cache is written by renaming complete
    files). One thread: kernels compile one after another instead of all competing with the
    dispatches for the GIL at once."""

    def __init__(self, executor: JitExecutor, ctx: Any, kd: Any, entry: int, wave_size: int,
                 mode: int) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.args = (executor, ctx, kd, entry, wave_size, mode)
        with _WORKER_LOCK:
            if not _WORKER:
                worker = threading.Thread(target=_work, name="hsapy-sim-jit-compile",
                                          daemon=True)
                _WORKER.append(worker)
                atexit.register(_stop_compilations)
                worker.start()
        _WORK.put(self)

    def _run(self) -> None:
        executor, ctx, kd, entry, wave_size, mode = self.args
        self.args = None
        try:
            programs = executor._plan(ctx, kd, entry, wave_size, mode)[0]
            # every function of the code object, as the compiled dispatch's first step
            # (parallel_safe) decodes, and so compiles, them all
            parallel_safe(programs(mode))
        except BaseException as exc:  # noqa: BLE001 - the dispatch that runs compiled reports it
            self.error = exc
        finally:
            self.done.set()
