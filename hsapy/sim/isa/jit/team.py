"""Native threads kept for the chunk loop, parked on a semaphore between rounds.

A round of the chunk loop (:mod:`hsapy.sim.isa.jit.loop_runner`) runs one job per thread.
Starting a thread for each job and joining it afterwards costs a ``pthread_create`` per thread
on the dispatching thread, one after the other, before the last thread can begin: 0.4-0.5 ms
for 16 jobs on a 16-core host, against 40 us for a round of parked threads (a tenth to a fifth
of a 16-thread dispatch of vector add 2^22 there). A team's threads are started once and then
wait in ``sem_wait`` on a start semaphore each; a round posts each worker's semaphore after
writing its job into the worker's slot, runs the first job on the calling thread, and then
waits on the team's done semaphore once for each worker that took its job (POSIX semaphores:
``sem_post`` and ``sem_wait`` order memory, so what a worker wrote is visible after its post
is consumed).

A worker that has not woken by the time the calling thread's own job has found no chunk left
does not run its job at all: the round takes it back (a compare-and-swap on the slot's state,
which the worker makes too when it wakes, so exactly one of them wins). Every chunk is then
taken already, by threads that are running, and the round need not wait for a thread the
system has not scheduled yet, which happens whenever other threads hold the cores (numpy's
BLAS threads, for one, spin for a while after each matrix product: docs/simulator.md).

Workers block every signal (``pthread_sigmask``): a signal meant for the process, Ctrl-C for
one, reaches a thread that runs Python. A team is leased for one round at a time, so dispatches
running side by side never share one; teams are kept for the process (those not leased are
stopped and joined at exit) and forgotten in a child after ``fork`` (it has none of the
threads). A worker that cannot be started leaves the team smaller: the jobs it would have run
keep the answer the caller gave them, and the other threads take their chunks from the shared
counter.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import signal
import threading
from typing import Any

import numpy as np
from llvmlite import ir

from hsapy._native import Callee
from hsapy.sim.isa.jit import chunk_loop
from hsapy.sim.isa.jit.compiler import RUN_TYPE, compiler
from hsapy.sim.isa.jit.runtime import address

__all__ = ["run", "workers_started", "Team", "libc"]

# a worker's slot (int64 words; its start semaphore lives in words SEMAPHORE..)
JOB = 0            # the job to run (0: stop)
START = 1          # this worker's start semaphore
DONE = 2           # the team's done semaphore
WAIT, POST, LOOP = 3, 4, 5   # sem_wait, sem_post, the chunk loop
MASK, SIGSET = 6, 7          # pthread_sigmask, a signal set holding every signal
SEMAPHORE = 8      # sem_t (at most 32 bytes on the platforms hsapy supports)
STATE = 12         # IDLE, ASSIGNED (a job is handed over), RUNNING, CANCELLED
SLOT_SIZE = 16
IDLE, ASSIGNED, RUNNING, CANCELLED = range(4)

# a round's words
JOBS = 0           # int64[COUNT]: the jobs' addresses (the first runs on the calling thread)
COUNT = 1
SLOTS = 2          # int64[COUNT - 1]: the slots of the workers that run the others
ROUND_DONE = 3     # the team's done semaphore
ROUND_WAIT, ROUND_POST, ROUND_LOOP = 4, 5, 6
ROUND_SIZE = 8

I32, I64 = ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
NAME, WORKER_NAME = "hsapy_team_round", "hsapy_team_worker"

_lock = threading.Lock()
_compiled: list[Any] = []
_free: list[Team] = []
_libc: list[Any] = []


def libc() -> Any:
    """The C library, with argument and result types set for the calls made through ctypes
    here and in :mod:`hsapy.sim.isa.jit.host_ceiling` (sem_init, sem_post, pthread_create,
    pthread_join)."""
    if not _libc:
        c = ctypes.CDLL(None)
        for name, args in (("sem_init", [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint]),
                           ("sem_post", [ctypes.c_void_p]),
                           ("pthread_create", [ctypes.c_void_p] * 4),
                           ("pthread_join", [ctypes.c_void_p, ctypes.c_void_p])):
            getattr(c, name).argtypes = args
            getattr(c, name).restype = ctypes.c_int
        _libc.append(c)
    return _libc[0]


def _symbol(name: str) -> int:
    return int(ctypes.cast(getattr(libc(), name), ctypes.c_void_p).value or 0)


_SEM_TYPE = ir.FunctionType(I32, [PTR])
_LOOP_TYPE = ir.FunctionType(I64, [PTR])


def _module() -> ir.Module:
    module = ir.Module(name=NAME)

    def word(b: ir.IRBuilder, base: ir.Value, index: Any) -> ir.Value:
        index = ir.Constant(I64, index) if isinstance(index, int) else index
        return b.gep(base, [index], source_etype=I64)

    def load(b: ir.IRBuilder, base: ir.Value, index: Any) -> ir.Value:
        return b.load(word(b, base, index), typ=I64)

    def pointer(b: ir.IRBuilder, base: ir.Value, index: Any) -> ir.Value:
        return b.inttoptr(load(b, base, index), PTR)

    def run_job(b: ir.IRBuilder, loop: ir.Value, job: ir.Value) -> None:
        answer = b.call(Callee(loop, _LOOP_TYPE), [job])
        b.store(answer, word(b, job, chunk_loop.RESULT))

    def wait_for(fn: ir.Function, b: ir.IRBuilder, wait: ir.Value, semaphore: ir.Value,
                 label: str) -> None:
        """sem_wait until it succeeds (it fails with EINTR when a signal interrupts it)."""
        again = fn.append_basic_block(label)
        after = fn.append_basic_block(f"{label}_taken")
        b.branch(again)
        b.position_at_end(again)
        status = b.call(Callee(wait, _SEM_TYPE), [semaphore])
        b.cbranch(b.icmp_signed("!=", status, ir.Constant(I32, 0)), again, after)
        b.position_at_end(after)

    # a worker: block signals, then wait for a job, run it, post done; a job of 0 stops it
    worker = ir.Function(module, ir.FunctionType(PTR, [PTR]), name=WORKER_NAME)
    b = ir.IRBuilder(worker.append_basic_block("entry"))
    slot = worker.args[0]
    mask_type = ir.FunctionType(I32, [I32, PTR, PTR])
    b.call(Callee(pointer(b, slot, MASK), mask_type),
           [ir.Constant(I32, int(signal.SIG_BLOCK)), pointer(b, slot, SIGSET),
            ir.Constant(PTR, None)])
    start, done = pointer(b, slot, START), pointer(b, slot, DONE)
    wait, post, loop = pointer(b, slot, WAIT), pointer(b, slot, POST), pointer(b, slot, LOOP)
    park, got = worker.append_basic_block("park"), worker.append_basic_block("got")
    work, stop = worker.append_basic_block("work"), worker.append_basic_block("stop")
    b.branch(park)
    b.position_at_end(park)
    status = b.call(Callee(wait, _SEM_TYPE), [start])   # EINTR: wait again
    b.cbranch(b.icmp_signed("!=", status, ir.Constant(I32, 0)), park, got)
    b.position_at_end(got)
    # take the job unless the round gave up on this worker (or this post is a stale one)
    taken = b.cmpxchg(word(b, slot, STATE), ir.Constant(I64, ASSIGNED),
                      ir.Constant(I64, RUNNING), "acq_rel", "acquire")
    check = worker.append_basic_block("check")
    b.cbranch(b.extract_value(taken, 1), check, park)
    b.position_at_end(check)
    job = load(b, slot, JOB)
    b.cbranch(b.icmp_unsigned("==", job, ir.Constant(I64, 0)), stop, work)
    b.position_at_end(work)
    run_job(b, loop, b.inttoptr(job, PTR))
    b.atomic_rmw("xchg", word(b, slot, STATE), ir.Constant(I64, IDLE), "release")
    b.call(Callee(post, _SEM_TYPE), [done])
    b.branch(park)
    b.position_at_end(stop)
    b.ret(ir.Constant(PTR, None))

    # a round: hand jobs 1.. to the workers, run job 0 here, wait for each worker's post
    fn = ir.Function(module, _LOOP_TYPE, name=NAME)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    words = fn.args[0]
    jobs, count = pointer(b, words, JOBS), load(b, words, COUNT)
    slots, done = pointer(b, words, SLOTS), pointer(b, words, ROUND_DONE)
    wait, post = pointer(b, words, ROUND_WAIT), pointer(b, words, ROUND_POST)
    loop = pointer(b, words, ROUND_LOOP)
    one = ir.Constant(I64, 1)

    def hand(k: ir.Value) -> None:
        worker_slot = b.inttoptr(load(b, slots, b.sub(k, one)), PTR)
        b.store(load(b, jobs, k), word(b, worker_slot, JOB))
        b.atomic_rmw("xchg", word(b, worker_slot, STATE), ir.Constant(I64, ASSIGNED), "release")
        b.call(Callee(post, _SEM_TYPE), [pointer(b, worker_slot, START)])

    taking = b.alloca(I64, name="taking")     # workers that took their job: posts to wait for

    def give_up(k: ir.Value) -> None:
        # a worker that has not woken by now does not run its job (no chunk waits for it)
        worker_slot = b.inttoptr(load(b, slots, b.sub(k, one)), PTR)
        cancelled = b.cmpxchg(word(b, worker_slot, STATE), ir.Constant(I64, ASSIGNED),
                              ir.Constant(I64, CANCELLED), "acq_rel", "acquire")
        ran = b.zext(b.not_(b.extract_value(cancelled, 1)), I64)
        b.store(b.add(b.load(taking, typ=I64), ran), taking)

    def collect(_k: ir.Value) -> None:
        wait_for(fn, b, wait, done, "collect")

    b.store(ir.Constant(I64, 0), taking)
    chunk_loop._for_range(fn, b, one, count, "hand", hand)
    first = b.inttoptr(load(b, jobs, 0), PTR)
    run_job(b, loop, first)
    # only when the first job found no chunk left to take: else a worker may still take one
    # (its chunk went to Python, or its budget ran out), and the round waits for every worker
    cleared = fn.append_basic_block("no_chunk_left")
    waiting = fn.append_basic_block("wait_for_all")
    collecting = fn.append_basic_block("collecting")
    b.cbranch(b.icmp_signed("==", load(b, first, chunk_loop.RESULT),
                            ir.Constant(I64, chunk_loop.DONE_ALL)), cleared, waiting)
    b.position_at_end(waiting)
    b.store(b.sub(count, one), taking)
    b.branch(collecting)
    b.position_at_end(cleared)
    chunk_loop._for_range(fn, b, one, count, "give_up", give_up)
    b.branch(collecting)
    b.position_at_end(collecting)
    took = b.load(taking, typ=I64)
    chunk_loop._for_range(fn, b, ir.Constant(I64, 0), took, "collect", collect)
    b.ret(took)
    return module


def _functions() -> list:
    """[round function, worker start routine's address, keep-alive]."""
    if not _compiled:
        with _lock:
            if not _compiled:
                address_, keep = compiler().compile(_module(), NAME)
                _compiled.extend((RUN_TYPE(address_), keep.get_function_address(WORKER_NAME),
                                  keep))
    return _compiled


class Team:
    """Parked workers and the team's done semaphore (see the module docstring)."""

    def __init__(self) -> None:
        self.slots: list[np.ndarray] = []
        self.handles: list[ctypes.c_void_p] = []
        self.done = np.zeros(SLOT_SIZE, np.int64)
        if libc().sem_init(address(self.done), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "sem_init failed for the chunk loop's team")
        self.sigset = np.full(128, 0xFF, np.uint8)   # every signal (sigset_t is <= 128 bytes)
        self.addresses = np.zeros(0, np.int64)
        self.pid = os.getpid()
        # a round's words (the team is leased for one round at a time): what no round changes
        self.words = np.zeros(ROUND_SIZE, np.int64)
        self.words[ROUND_DONE] = address(self.done)
        self.words[ROUND_WAIT], self.words[ROUND_POST] = _symbol("sem_wait"), _symbol("sem_post")
        self.words[ROUND_LOOP] = chunk_loop.loop_function()

    @property
    def workers(self) -> int:
        return len(self.slots)

    def grow(self, workers: int) -> None:
        """Start workers until there are ``workers`` (fewer if the system refuses a thread)."""
        c, worker = libc(), _functions()[1]
        shared = {DONE: address(self.done), WAIT: _symbol("sem_wait"),
                  POST: _symbol("sem_post"), LOOP: chunk_loop.loop_function(),
                  MASK: _symbol("pthread_sigmask"), SIGSET: address(self.sigset)}
        while len(self.slots) < workers:
            slot = np.zeros(SLOT_SIZE, np.int64)
            semaphore = address(slot) + 8 * SEMAPHORE
            if c.sem_init(semaphore, 0, 0) != 0:
                break
            for index, value in shared.items():
                slot[index] = value
            slot[START] = semaphore
            handle = ctypes.c_void_p()
            if c.pthread_create(ctypes.byref(handle), None, worker, address(slot)) != 0:
                break
            self.slots.append(slot)
            self.handles.append(handle)
        self.addresses = np.array([address(slot) for slot in self.slots], np.int64)

    def round(self, jobs_at: np.ndarray) -> int:
        """Run the jobs at ``jobs_at`` (int64 addresses), the first on this thread; returns
        how many ran. Those beyond the team's workers + 1 did not, nor those whose worker had
        not woken when the first was done: their RESULT stays as it was."""
        words = self.words
        words[JOBS], words[COUNT] = address(jobs_at), min(int(jobs_at.size), self.workers + 1)
        words[SLOTS] = address(self.addresses) if self.addresses.size else 0
        return 1 + int(_functions()[0](address(words)))

    def stop(self) -> None:
        """Stop and join every worker (none may be in a round)."""
        c = libc()
        for slot in self.slots:
            slot[JOB] = 0
            slot[STATE] = ASSIGNED      # (sem_post orders these stores before the wake)
            c.sem_post(int(slot[START]))
        for handle in self.handles:
            c.pthread_join(handle, None)
        self.slots, self.handles = [], []


def run(jobs_at: np.ndarray) -> int:
    """One round of the chunk-loop jobs at ``jobs_at`` (their addresses; each job's RESULT
    says what its loop answered) on a leased team; returns how many jobs ran."""
    with _lock:
        team = max(_free, key=lambda t: t.workers) if _free else None
        if team is not None:
            _free.remove(team)
    if team is None:
        try:
            team = Team()
        except OSError:
            # no semaphores here: the first job alone, which takes every chunk in turn
            job = int(jobs_at[0])
            ctypes.c_int64.from_address(job + 8 * chunk_loop.RESULT).value = \
                chunk_loop.run(job)
            return 1
    try:
        if team.workers < jobs_at.size - 1:
            team.grow(int(jobs_at.size) - 1)
        return team.round(jobs_at)
    finally:
        with _lock:
            if team.pid == os.getpid():
                _free.append(team)


def workers_started() -> int:
    """Workers parked in the teams not leased now (for tests)."""
    with _lock:
        return sum(team.workers for team in _free)


def _stop_all() -> None:
    with _lock:
        teams = list(_free)
        _free.clear()
    for team in teams:
        team.stop()


def _forget_all() -> None:
    # a child after fork has none of the workers (its teams are started anew), and a lock
    # another thread held at the fork stays held in the child
    global _lock
    _lock = threading.Lock()
    _free.clear()


atexit.register(_stop_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_all)
