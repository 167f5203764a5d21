"""Chunks run by generated code (hsapy/sim/isa/jit/chunk_loop.py) against the same chunks run by
Python, and against the interpreter.

A dispatch of whole workgroups whose kernel starts in compiled code runs its chunks in a loop of
generated code, which the threads share; a chunk whose batch does not reach ``s_endpgm`` whole
in one call (a split, a hand-back, the step budget) goes on in the interpreter's scheduler. Either
way memory must be bitwise the interpreter's, and the dispatch's counts (lane, wave and batch
instructions, waves) must be those of the same dispatch with the loop turned off, whatever the
thread count. A fault raises the error of the earliest chunk that faulted, as without the loop.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import _fault_kernels as fk  # noqa: E402
from _jit_cases import Setup, corpus, stencil_1d, transpose, vector_add_whole  # noqa: E402

import hsapy  # noqa: E402
from hsapy.errors import MemoryFaultError, QueueError  # noqa: E402
from hsapy.sim.isa import interpreter  # noqa: E402
from hsapy.sim.isa.jit import executor, last_dispatch  # noqa: E402

STAT_FIELDS = ("lane_instructions", "wave_instructions", "batch_steps", "waves")


def _block_sum_tree(target: str, rng):
    """LDS, barriers and a tree whose later steps leave waves idle: the waves disagree at each
    level's ``if (t < s)``, whose guarded block the batch goes through together, so every chunk
    stays in the loop."""
    n, block = 1 << 15, 256
    x = rng.standard_normal(n).astype(np.float32)
    return (corpus("reduce", target), "block_sum_tree",
            [x, np.zeros(n // (2 * block), np.float32), n], n // 2, block, 4 * block)


def _block_sum_shfl(target: str, rng):
    """LDS, a barrier, then work for the first wave only, with an ``if`` nested in it: the batch
    splits there, so every chunk goes back to the scheduler after the loop's call."""
    n, block = 1 << 15, 256
    x = rng.standard_normal(n).astype(np.float32)
    return (corpus("reduce", target), "block_sum_shfl",
            [x, np.zeros(n // block, np.float32), n], n, block, 0)


def _vector_add(target: str, rng):
    return vector_add_whole(target, rng)


def _stencil(target: str, rng):
    return stencil_1d(target, rng)[:6]


def _vector_add_tail(target: str, rng):
    """Whole workgroups, but n ends inside the last one: its batch splits at the bounds
    check, so one chunk goes back to the scheduler while the loop runs the others."""
    code, name, args, grid, block, lds = vector_add_whole(target, rng)
    args[3] = grid - 100
    return code, name, args, grid, block, lds


KERNELS = {"vector_add": _vector_add, "transpose": transpose, "stencil_1d": _stencil,
           "block_sum_tree": _block_sum_tree, "block_sum_shfl": _block_sum_shfl,
           "vector_add_tail": _vector_add_tail}


@pytest.fixture(scope="module")
def runtimes():
    opened = {}
    yield lambda target: opened.setdefault(
        target, hsapy.Runtime(backend="sim", targets=[target]))
    for rt in opened.values():
        rt.close()


def _run(setup: Setup, grid, block, lds, loop: bool, monkeypatch) -> tuple:
    monkeypatch.setattr(executor.JitExecutor, "chunk_loop", loop)
    last_dispatch.counters = None
    memory = setup.dispatch("jit", grid, block, lds)
    stats = interpreter.last_stats
    return memory, {name: getattr(stats, name) for name in STAT_FIELDS}, last_dispatch.counters


@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_looped_chunks_match_the_interpreter_and_the_python_path(kernel, target, runtimes,
                                                                 monkeypatch):
    code, name, args, grid, block, lds = KERNELS[kernel](target, np.random.default_rng(5))
    setup = Setup(runtimes(target), code, name, args)
    try:
        want = setup.dispatch("interp", grid, block, lds)
        # many chunks: each thread takes several from the shared counter
        monkeypatch.setattr(executor, "JIT_CHUNK_BYTES", 64 << 10)
        for threads in (1, 3):
            monkeypatch.setenv("HSAPY_SIM_THREADS", str(threads))
            plain, plain_stats, plain_counters = _run(setup, grid, block, lds, False,
                                                      monkeypatch)
            looped, looped_stats, counters = _run(setup, grid, block, lds, True, monkeypatch)
            for k, (g, p, w) in enumerate(zip(looped, plain, want)):
                assert np.array_equal(p, w), f"argument {k}: the Python path differs"
                assert np.array_equal(g, w), (
                    f"{name} on {target}, {threads} threads: argument {k} differs from the "
                    f"interpreter's in {np.count_nonzero(g != w)} bytes")
            assert looped_stats == plain_stats, (looped_stats, plain_stats)
            assert counters.chunks == plain_counters.chunks >= 4, counters.as_dict()
            assert plain_counters.chunks_looped == 0
            assert counters.compiled_lane_instructions == \
                plain_counters.compiled_lane_instructions
            if kernel in ("vector_add", "transpose", "block_sum_tree"):
                # every chunk stays in the loop: straight to s_endpgm, or (the tree) through
                # its guarded blocks with the whole batch
                assert counters.chunks_looped == counters.chunks, counters.as_dict()
                assert counters.splits == 0, counters.as_dict()
            elif kernel == "vector_add_tail":
                # the loop runs every chunk but the last, which the scheduler finishes
                assert counters.chunks_looped == counters.chunks - 1, counters.as_dict()
                assert counters.splits > 0, counters.as_dict()
            else:
                assert counters.splits > 0, counters.as_dict()
    finally:
        setup.close()


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_a_fault_in_looped_chunks_is_the_earliest_chunks(target, runtimes, monkeypatch):
    """Every workgroup reads from an unmapped address (its own): the error names the first
    chunk's, whichever thread got there first, with the loop or without it."""
    from hsapy.asm import kernels

    rt = runtimes(target)
    agent = rt.gpu_agents[0]
    kernel = rt.load(kernels.build("vector_add", target), agent).kernel("vector_add")
    n = 256 * 256
    out = agent.device_pool.allocate(4 * n)
    bad = 0x10000
    monkeypatch.setattr(executor, "JIT_CHUNK_BYTES", 64 << 10)
    rt.lib.sim_set_engine("jit")
    messages = set()
    try:
        for loop in (False, True):
            monkeypatch.setattr(executor.JitExecutor, "chunk_loop", loop)
            for threads in (1, 3):
                monkeypatch.setenv("HSAPY_SIM_THREADS", str(threads))
                queue = agent.create_queue(size=64)
                try:
                    with pytest.raises(MemoryFaultError) as raised:
                        kernel.launch(queue, [bad, out, out, n], n, 256, timeout=60)
                finally:
                    queue.close()
                message = str(raised.value)
                assert f"{bad:#x}" in message, message
                messages.add(message.split(" (queue")[0])
    finally:
        out.close()
        rt.lib.sim_set_engine("auto")
    assert len(messages) == 1, messages


@fk.needs_assembler
@pytest.mark.parametrize("target", fk.TARGETS)
def test_an_endless_kernel_in_the_loop_is_stopped_by_the_watchdog(target, monkeypatch):
    """The loop hands a chunk back to Python when the unit spends its step budget, so the
    dispatch is polled and the watchdog stops an endless kernel in compiled code."""
    monkeypatch.setenv("HSAPY_SIM_THREADS", "2")
    with hsapy.Runtime(backend="sim", targets=[target], engine="jit", watchdog_s=1.0) as rt:
        agent = rt.gpu_agents[0]
        kernel = fk.load(rt, agent, "spin", fk.SPIN)
        with agent.create_queue(size=64) as queue:
            start = time.monotonic()
            with pytest.raises(QueueError, match="watchdog"):
                kernel.launch(queue, [0, 0, 0], 64 * 64, 64, timeout=30)
            assert time.monotonic() - start < 6.0


@pytest.mark.parametrize("kernel", ["block_sum_shfl", "stencil_1d"])
def test_chunks_that_need_the_scheduler_go_to_fewer_python_threads(kernel, runtimes,
                                                                   monkeypatch):
    """When every thread's first chunk goes back to the scheduler and there are more threads
    than Python's share, the workgroups left run in Python on that many threads, cut anew;
    memory is the interpreter's and lane and wave counts are unchanged."""
    target = "gfx942"
    code, name, args, grid, block, lds = KERNELS[kernel](target, np.random.default_rng(9))
    setup = Setup(runtimes(target), code, name, args)
    handed = []
    run_parallel = executor.JitExecutor._run_parallel

    def spy(self, *a, merge=False, **k):
        handed.append(merge)
        return run_parallel(self, *a, merge=merge, **k)

    try:
        want = setup.dispatch("interp", grid, block, lds)
        monkeypatch.setattr(executor, "JIT_CHUNK_BYTES", 64 << 10)
        monkeypatch.delenv("HSAPY_SIM_THREADS", raising=False)
        monkeypatch.setattr(executor, "thread_count", lambda python=False: 2 if python else 5)
        monkeypatch.setattr(executor.JitExecutor, "_run_parallel", spy)
        plain, plain_stats, _ = _run(setup, grid, block, lds, False, monkeypatch)
        handed.clear()
        looped, looped_stats, counters = _run(setup, grid, block, lds, True, monkeypatch)
        assert handed == [True], handed
        # the kernel's next dispatch goes to Python at once, cut for Python's threads
        handed.clear()
        again, again_stats, _ = _run(setup, grid, block, lds, True, monkeypatch)
        assert handed == [False] and again_stats == plain_stats, (handed, again_stats)
        assert all(np.array_equal(g, w) for g, w in zip(again, want))
        for k, (g, w) in enumerate(zip(looped, want)):
            assert np.array_equal(g, w), f"argument {k} differs from the interpreter's"
        for field in ("lane_instructions", "wave_instructions", "waves"):
            assert looped_stats[field] == plain_stats[field], (field, looped_stats, plain_stats)
        assert counters.threads == 5, counters.as_dict()
    finally:
        setup.close()


@pytest.mark.parametrize("n", [256 * 512, 256 * 300 + 17])
def test_queues_of_one_agent_dispatching_at_once_keep_their_own_state(n):
    """Queues of one agent share its executor and run their dispatches at the same time: each
    dispatch's state (workgroup layouts, register pools, counts) must be its own, or one
    dispatch's chunks start from another's kernel arguments."""
    import threading

    from hsapy.asm import kernels

    target = "gfx942"
    errors: list = []
    with hsapy.Runtime(backend="sim", targets=[target], engine="jit") as rt:
        agent = rt.gpu_agents[0]
        kernel = rt.load(kernels.build("vector_add", target), agent).kernel("vector_add")

        def work(seed: int) -> None:
            a, b = np.random.default_rng(seed).random((2, n), dtype=np.float32)
            bufs = [agent.device_pool.allocate(4 * n) for _ in range(3)]
            bufs[0].copy_from(a)
            bufs[1].copy_from(b)
            try:
                with agent.create_queue(size=64) as queue:
                    for i in range(8):
                        bufs[2].copy_from(np.zeros(n, np.float32))
                        kernel.launch(queue, [bufs[0], bufs[1], bufs[2], n], n, 256, timeout=60)
                        got = bufs[2].copy_to(dtype=np.float32)[:n]
                        if not np.array_equal(got, a + b):
                            errors.append((seed, i, int(np.count_nonzero(got != a + b))))
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append((seed, repr(exc)))
            finally:
                for buf in bufs:
                    buf.close()

        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    assert not errors, errors[:5]


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_a_kernels_next_dispatch_reuses_its_geometry_with_its_own_arguments(target,
                                                                            monkeypatch):
    """Chunk layouts are kept from one dispatch of a kernel to the next with the same
    geometry, all but the user SGPRs (the kernel argument, dispatch packet and queue
    addresses): dispatches alternating between two sets of buffers each compute their own."""
    from hsapy.asm import kernels
    from hsapy.sim.isa import interpreter as interp

    made = []
    initial_batch = interp.InterpreterExecutor._initial_batch

    def counted(self, *a, **k):
        made.append(1)
        return initial_batch(self, *a, **k)

    monkeypatch.setattr(interp.InterpreterExecutor, "_initial_batch", counted)
    monkeypatch.setenv("HSAPY_SIM_THREADS", "2")
    n = 256 * 256
    with hsapy.Runtime(backend="sim", targets=[target], engine="jit") as rt:
        agent = rt.gpu_agents[0]
        kernel = rt.load(kernels.build("vector_add", target), agent).kernel("vector_add")
        sets = []
        for seed in (1, 2):
            a, b = np.random.default_rng(seed).random((2, n), dtype=np.float32)
            bufs = [agent.device_pool.allocate(4 * n) for _ in range(3)]
            bufs[0].copy_from(a)
            bufs[1].copy_from(b)
            sets.append((bufs, a + b))
        with agent.create_queue(size=64) as queue:
            for i in range(6):
                bufs, want = sets[i % 2]
                bufs[2].copy_from(np.zeros(n, np.float32))
                kernel.launch(queue, [bufs[0], bufs[1], bufs[2], n], n, 256, timeout=60)
                assert np.array_equal(bufs[2].copy_to(dtype=np.float32)[:n], want), i
                if i == 0:
                    first = len(made)
        # the interpreter made initial batches for the first dispatch only
        assert first >= 1 and len(made) == first, (first, len(made))
        for bufs, _ in sets:
            for buf in bufs:
                buf.close()
