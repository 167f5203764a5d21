"""The chunk loop's parked native threads (hsapy.sim.isa.jit.team): every job of a round runs
and answers, workers are started once and reused, rounds side by side get teams of their own,
workers leave signals to Python's threads, and fork and exit find nothing left hanging."""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from hsapy.sim.isa.jit import chunk_loop, team  # noqa: E402
from hsapy.sim.isa.jit.runtime import address  # noqa: E402

linux_only = pytest.mark.skipif(not os.path.isdir("/proc/self/task"),
                                reason="reads threads from /proc/self/task")


def _jobs(count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``count`` chunk-loop jobs with no chunk to take (each answers DONE_ALL at once), their
    RESULT words holding a sentinel, and their addresses."""
    claim = np.zeros(1, np.int64)
    jobs = np.zeros((count, chunk_loop.SIZE), np.int64)
    jobs[:, chunk_loop.CLAIM] = address(claim)
    jobs[:, chunk_loop.RESULT] = 99
    return jobs, np.array([address(jobs[k]) for k in range(count)], np.int64), claim


def _tasks() -> set[str]:
    return set(os.listdir("/proc/self/task"))


_STUBS: list = []


def _stubs() -> tuple[int, int]:
    """Two functions standing in for chunk_state's writer and a kernel's unit, so that the
    loop's chunks take time and say who ran them: ``state(job)`` adds 1 to
    ``counts[job[START]]`` (``counts`` at job word 0), ``unit(ctx)`` spins ``ctx[LDS_SIZE]``
    steps, then answers CONTINUE at address 0 after one step."""
    if not _STUBS:
        from llvmlite import ir

        from hsapy.sim.isa.jit import chunk_state
        from hsapy.sim.isa.jit import context as C
        from hsapy.sim.isa.jit.compiler import compiler

        i64, ptr = ir.IntType(64), ir.PointerType()
        module = ir.Module("team_test_stubs")

        def at(b, base, index):
            return b.gep(base, [ir.Constant(i64, index) if isinstance(index, int) else index],
                         source_etype=i64)

        state = ir.Function(module, ir.FunctionType(i64, [ptr]), "stub_state")
        b = ir.IRBuilder(state.append_basic_block("entry"))
        counts = b.inttoptr(b.load(at(b, state.args[0], 0), typ=i64), ptr)
        chunk = b.load(at(b, state.args[0], chunk_state.START), typ=i64)
        b.atomic_rmw("add", at(b, counts, chunk), ir.Constant(i64, 1), "seq_cst")
        b.ret(ir.Constant(i64, 0))

        unit = ir.Function(module, ir.FunctionType(i64, [ptr]), "stub_unit")
        b = ir.IRBuilder(unit.append_basic_block("entry"))
        ctx = unit.args[0]
        steps = b.load(at(b, ctx, C.LDS_SIZE), typ=i64)
        entry = b.block
        spin, out = unit.append_basic_block("spin"), unit.append_basic_block("out")
        b.branch(spin)
        b.position_at_end(spin)
        i = b.phi(i64)
        b.atomic_rmw("add", at(b, ctx, C.ALLOC_LAST), ir.Constant(i64, 1), "monotonic")
        following = b.add(i, ir.Constant(i64, 1))
        i.add_incoming(ir.Constant(i64, 0), entry)
        i.add_incoming(following, spin)
        b.cbranch(b.icmp_signed("<", following, steps), spin, out)
        b.position_at_end(out)
        for field, value in ((C.OUT_PC, 0), (C.LANES, 0), (C.WAVE_INSTS, 1), (C.STEPS, 1),
                             (C.RELEASED, 0)):
            b.store(ir.Constant(i64, value), at(b, ctx, field))
        b.ret(ir.Constant(i64, C.CONTINUE))
        first, keep = compiler().compile(module, "stub_state")
        _STUBS.extend((first, keep.get_function_address("stub_unit"), keep))
    return _STUBS[0], _STUBS[1]


class _Chunks:
    """``count`` jobs sharing ``chunks`` chunks that each spin ``spin`` steps."""

    def __init__(self, count: int, chunks: int, spin: int) -> None:
        from hsapy.sim.isa.jit import chunk_state
        from hsapy.sim.isa.jit import context as C

        state_fn, unit_fn = _stubs()
        self.claim = np.zeros(1, np.int64)
        self.counts = np.zeros(chunks, np.int64)
        self.starts = np.arange(chunks, dtype=np.int64)
        self.ends = np.zeros(1, np.int64)
        self.states = np.zeros((count, chunk_state.SIZE), np.int64)
        self.states[:, 0] = address(self.counts)
        self.ctx = np.zeros((count, C.SIZE), np.int64)
        self.ctx[:, C.LDS_SIZE] = spin
        self.jobs = np.zeros((count, chunk_loop.SIZE), np.int64)
        for k in range(count):
            job = self.jobs[k]
            job[chunk_loop.STATE_JOB] = address(self.states[k])
            job[chunk_loop.STATE_FN], job[chunk_loop.UNIT_FN] = state_fn, unit_fn
            job[chunk_loop.STARTS], job[chunk_loop.COUNT] = address(self.starts), chunks
            job[chunk_loop.CLAIM], job[chunk_loop.CTX] = address(self.claim), address(self.ctx[k])
            job[chunk_loop.BUDGET] = 1 << 40
            job[chunk_loop.ENDS], job[chunk_loop.NENDS] = address(self.ends), 1
            job[chunk_loop.RESULT] = 99
        self.at = np.array([address(self.jobs[k]) for k in range(count)], np.int64)

    def again(self) -> None:
        self.claim[0] = 0
        self.counts[:] = 0
        self.jobs[:, chunk_loop.DONE] = 0
        self.jobs[:, chunk_loop.RESULT] = 99


def test_a_round_runs_every_chunk_once_and_each_job_that_ran_answers():
    work = _Chunks(4, 64, 20_000)
    ran_somewhere = 0
    for _ in range(20):
        work.again()
        ran = team.run(work.at)
        assert (work.counts == 1).all()                    # every chunk once
        done = work.jobs[:, chunk_loop.DONE]
        answered = work.jobs[:, chunk_loop.RESULT] == chunk_loop.DONE_ALL
        # a job either ran (answered, maybe with chunks) or was taken back (untouched)
        assert answered[0] and (done[~answered] == 0).all()
        assert int(answered.sum()) == ran and int(done.sum()) == 64
        ran_somewhere += int((done[1:] > 0).sum())
    assert ran_somewhere > 0                               # the workers do take chunks


def test_a_worker_that_has_not_woken_is_not_waited_for():
    # the calling thread's job takes every chunk before the workers can wake: the round
    # returns without them, and their late wake-ups leave the next round's jobs intact
    work = _Chunks(3, 1, 10)
    for _ in range(200):
        work.again()
        ran = team.run(work.at)
        assert 1 <= ran <= 3 and work.counts.tolist() == [1]
        answered = work.jobs[:, chunk_loop.RESULT] == chunk_loop.DONE_ALL
        assert answered[0] and int(answered.sum()) == ran


@linux_only
def test_workers_are_started_once_and_parked_for_the_next_round():
    work = _Chunks(4, 32, 2_000)
    team.run(work.at)
    before = _tasks()
    for _ in range(20):
        work.again()
        team.run(work.at)
        assert (work.counts == 1).all()
    assert _tasks() == before            # no thread started or ended
    assert team.workers_started() >= 3


def test_rounds_side_by_side_each_get_a_team_and_every_chunk_runs_once():
    works = [_Chunks(3, 16, 2_000) for _ in range(4)]
    errors = []

    def rounds(work):
        try:
            for _ in range(30):
                work.again()
                team.run(work.at)
                assert (work.counts == 1).all() and work.jobs[0, chunk_loop.RESULT] == 0
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=rounds, args=(work,)) for work in works]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads) and not errors, errors


@linux_only
def test_workers_block_every_signal_so_python_threads_receive_them():
    _, at, _claim = _jobs(3)
    before = _tasks()
    with team._lock:                     # a fresh team: its workers are new tasks
        saved = list(team._free)
        team._free.clear()
    try:
        team.run(at)
        new = _tasks() - before
        assert len(new) == 2
        for tid in new:
            with open(f"/proc/self/task/{tid}/status") as status:
                blocked = next(line for line in status if line.startswith("SigBlk:"))
            mask = int(blocked.split()[1], 16)
            # SIGINT and SIGTERM among them (every signal the kernel lets a thread block)
            assert mask & (1 << 1) and mask & (1 << 14), blocked
    finally:
        with team._lock:
            fresh = list(team._free)
            team._free[:] = saved
        for t in fresh:
            t.stop()


@linux_only
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_workers_of_its_own():
    # everything compiled before the fork (a lock another thread held at the fork would stay
    # held in the child), and the parent has parked workers
    work = _Chunks(3, 32, 2_000)
    team.run(work.at)
    with warnings.catch_warnings():      # (Python 3.12 warns of forking with threads)
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:                         # the child: none of the workers exist here
        code = 1
        signal.alarm(10)                 # a round waiting for workers it lacks: killed
        try:
            work.again()
            team.run(work.at)
            # its round ran every chunk, on workers of its own (the parent's team, whose
            # threads the child lacks, would leave the first job alone to run them all)
            if (work.counts == 1).all() and len(_tasks()) == 3:
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_process_with_parked_workers_exits_cleanly():
    script = textwrap.dedent("""
        import numpy as np
        from hsapy.sim.isa.jit import chunk_loop, team
        from hsapy.sim.isa.jit.runtime import address
        claim = np.zeros(1, np.int64)
        jobs = np.zeros((4, chunk_loop.SIZE), np.int64)
        jobs[:, chunk_loop.CLAIM] = address(claim)
        team.run(np.array([address(jobs[k]) for k in range(4)], np.int64))
        print("ran", int(jobs[:, chunk_loop.RESULT].sum()))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ran 0" and "Traceback" not in done.stderr
