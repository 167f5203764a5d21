"""The compiled engine (HSAPY_SIM_ENGINE=jit) against the interpreter, whole dispatches.

Memory after a dispatch must not depend on the engine or on the number of host threads: each
kernel runs once in the interpreter and then in the compiled engine with HSAPY_SIM_THREADS 1, 2
and 4, and every output must be bitwise the interpreter's. The kernels: vector add (no
cross-workgroup traffic: chunks of workgroups run on several threads), a stencil staged in LDS
behind a barrier (the same, with LDS), a float dot product whose blocks meet in one float
atomicAdd (its rounding depends on the order of the adds: the compiled engine keeps the
interpreter's order) and a global histogram of integer atomics.

Profiler counters must not depend on the engine either (docs/simulator.md, "Execution
engines"): a profiled dispatch under HSAPY_SIM_ENGINE=jit counts what it counts under interp.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from _jit_cases import (  # noqa: E402
    Setup,
    corpus,
    dot_atomic,
    histogram,
    stencil_1d,
    transpose,
    vector_add,
    vector_add_whole,
)

import hsapy  # noqa: E402
from hsapy.sim.isa import jit  # noqa: E402
from hsapy.sim.isa.jit import last_dispatch  # noqa: E402

THREADS = (1, 2, 4)


KERNELS = {"vector_add": vector_add, "stencil_1d": stencil_1d,
           "dot_atomic": dot_atomic, "histogram_global": histogram}


@pytest.fixture(scope="module")
def runtimes():
    """One simulated runtime per target for the module (its engine switched per dispatch):
    loaded code stays compiled from one dispatch to the next."""
    opened = {}
    yield lambda target: opened.setdefault(
        target, hsapy.Runtime(backend="sim", targets=[target]))
    for rt in opened.values():
        rt.close()


# wave64 and wave32 for the kernels whose order matters most; one target for the others
CASES = [("vector_add", "gfx942"), ("vector_add", "gfx1201"), ("dot_atomic", "gfx942"),
         ("dot_atomic", "gfx1201"), ("stencil_1d", "gfx1201"), ("histogram_global", "gfx942")]


@pytest.mark.parametrize("kernel,target", CASES, ids=[f"{k}-{t}" for k, t in CASES])
def test_memory_is_the_interpreters_whatever_the_thread_count(kernel, target, runtimes,
                                                              monkeypatch):
    code, name, args, grid, block, lds, parallel = KERNELS[kernel](
        target, np.random.default_rng(25))
    setup = Setup(runtimes(target), code, name, args)
    try:
        want = setup.dispatch("interp", grid, block, lds)
        for threads in THREADS:
            monkeypatch.setenv("HSAPY_SIM_THREADS", str(threads))
            last_dispatch.counters = None
            got = setup.dispatch("jit", grid, block, lds)
            counters = last_dispatch.counters
            assert counters is not None and counters.calls > 0, "the compiled engine did not run"
            for k, (g, w) in enumerate(zip(got, want)):
                assert np.array_equal(g, w), (
                    f"{name} on {target}, {threads} threads: argument {k} differs from the "
                    f"interpreter's in {np.count_nonzero(g != w)} bytes")
            if parallel and threads > 1:
                # cut into chunks for the threads (results above: the same as one thread's)
                assert counters.chunks >= 2 * threads, counters.as_dict()
            elif not parallel:
                # atomics: the interpreter's chunks, one after another, on one thread
                assert counters.threads == 1, counters.as_dict()
    finally:
        setup.close()



@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_barriers_of_a_whole_batch_release_in_compiled_code(target, runtimes, monkeypatch):
    """A batch that holds every live wave of its chunk passes a barrier without going back to
    the interpreter's scheduler (there would be nothing else to run); a batch that does not
    (here: the machine's live-wave counts withheld, and chunks not run by the chunk loop, which
    starts each chunk's batch whole) leaves the barrier to the scheduler. Memory is the
    interpreter's either way."""
    from hsapy.sim.isa.jit import executor, runtime

    code, name, args, grid, block, lds, _ = stencil_1d(target, np.random.default_rng(7))
    setup = Setup(runtimes(target), code, name, args)
    monkeypatch.setenv("HSAPY_SIM_THREADS", "1")
    try:
        want = setup.dispatch("interp", grid, block, lds)
        last_dispatch.counters = None
        got = setup.dispatch("jit", grid, block, lds)
        inline = last_dispatch.counters
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
        assert inline is not None and inline.barriers_released > 0, inline.as_dict()

        run = runtime.Unit.run

        def without_counts(self, b, m, number, start):
            m.alive = None
            return run(self, b, m, number, start)

        monkeypatch.setattr(runtime.Unit, "run", without_counts)
        monkeypatch.setattr(executor.JitExecutor, "chunk_loop", False)
        last_dispatch.counters = None
        got = setup.dispatch("jit", grid, block, lds)
        handed = last_dispatch.counters
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
        assert handed is not None and handed.barriers_released == 0, handed.as_dict()
        # each barrier the compiled code did not release cost a return to the scheduler
        assert handed.calls > inline.calls, (handed.as_dict(), inline.as_dict())
    finally:
        setup.close()


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_a_tree_reduction_runs_without_splitting_its_batches(target, runtimes, monkeypatch):
    """The fused softmax reduces through two LDS trees whose levels are each guarded by
    ``if (tid < stride)``: below the workgroup size the waves disagree at the guard's
    s_cbranch_execz, which split the batch every level and sent it to the interpreter's
    scheduler. The compiled engine runs such a guarded block for every wave (it leaves a wave
    whose EXEC is zero as it was): no batch splits, every chunk runs start to end in the
    chunk loop, and memory and the lane and wave instruction counts are the interpreter's."""
    from hsapy import operators as O
    from hsapy.sim.isa import interpreter

    rows, cols = 24, 1024
    x = np.random.default_rng(11).standard_normal((rows, cols)).astype(np.float32)
    op = O.operator("softmax")
    code = O.prebuilt_path(op, target).read_bytes()
    setup = Setup(runtimes(target), code, "softmax_fused",
                  [x, np.zeros_like(x), rows, cols])
    monkeypatch.setenv("HSAPY_SIM_THREADS", "2")
    try:
        want = setup.dispatch("interp", rows * 256, 256, 1024)
        stats = interpreter.last_stats
        want_counts = (stats.lane_instructions, stats.wave_instructions)
        last_dispatch.counters = None
        got = setup.dispatch("jit", rows * 256, 256, 1024)
        counters = last_dispatch.counters
        stats = interpreter.last_stats
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
        assert (stats.lane_instructions, stats.wave_instructions) == want_counts
        assert counters is not None and counters.splits == 0, counters.as_dict()
        assert counters.chunks_looped == counters.chunks > 1, counters.as_dict()
        y = got[1].view(np.float32).reshape(rows, cols)
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        assert np.allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    finally:
        setup.close()


@pytest.mark.parametrize("kernel", ["transpose", "vector_add"])
@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_chunks_of_whole_workgroups_share_their_initial_state(kernel, target, runtimes,
                                                              monkeypatch):
    """Cut into many chunks (a small chunk budget), a dispatch of whole workgroups makes the
    initial batch of each chunk size once and the other chunks' from what it kept; workgroup
    ids (x and y), work-item ids and user SGPRs must come out as the interpreter's, so memory
    is bitwise the interpreter's at every thread count."""
    from hsapy.sim.isa import interpreter
    from hsapy.sim.isa.jit import executor

    make = {"transpose": transpose, "vector_add": vector_add_whole}[kernel]
    code, name, args, grid, block, lds = make(target, np.random.default_rng(11))
    setup = Setup(runtimes(target), code, name, args)
    built = []
    made = interpreter.InterpreterExecutor._initial_batch

    def counted(self, *a, **k):
        built.append(a[4:6])              # (start, stop)
        return made(self, *a, **k)

    try:
        want = setup.dispatch("interp", grid, block, lds)
        monkeypatch.setattr(executor, "JIT_CHUNK_BYTES", 64 << 10)
        monkeypatch.setattr(interpreter.InterpreterExecutor, "_initial_batch", counted)
        for threads in (1, 3):
            monkeypatch.setenv("HSAPY_SIM_THREADS", str(threads))
            built.clear()
            last_dispatch.counters = None
            got = setup.dispatch("jit", grid, block, lds)
            counters = last_dispatch.counters
            assert counters is not None and counters.calls > 0
            for k, (g, w) in enumerate(zip(got, want)):
                assert np.array_equal(g, w), (
                    f"{name} on {target}, {threads} threads: argument {k} differs from the "
                    f"interpreter's in {np.count_nonzero(g != w)} bytes")
            # each chunk size made once per thread at most (threads starting chunks of a size
            # together may each make it before one keeps it)
            sizes = {stop - start for start, stop in built}
            assert counters.chunks >= 8, counters.as_dict()
            assert len(built) <= threads * len(sizes) < counters.chunks, (
                built, counters.as_dict())
    finally:
        setup.close()


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_a_kernel_without_atomics_runs_on_threads_beside_one_with_them(target, runtimes,
                                                                       monkeypatch):
    """Parallel safety is the kernel's own: block_sum_tree (LDS and barriers, no atomic) shares
    its code object with dot_atomic, yet its chunks run on several threads, with the
    interpreter's memory; dot_atomic's still run in the interpreter's order on one."""
    n, block = 1 << 16, 256
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    code = corpus("reduce", target)
    # each workgroup sums 2 x block elements in block x 4 bytes of dynamic LDS
    setup = Setup(runtimes(target), code, "block_sum_tree",
                  [x, np.zeros(n // (2 * block), np.float32), n])
    monkeypatch.setenv("HSAPY_SIM_THREADS", "2")
    try:
        want = setup.dispatch("interp", n // 2, block, 4 * block)
        last_dispatch.counters = None
        got = setup.dispatch("jit", n // 2, block, 4 * block)
        counters = last_dispatch.counters
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
        assert counters is not None and counters.chunks >= 2 and counters.threads == 2, \
            counters.as_dict()
    finally:
        setup.close()
    code, name, args, grid, block, lds, _ = dot_atomic(target, np.random.default_rng(4))
    setup = Setup(runtimes(target), code, name, args)
    try:
        last_dispatch.counters = None
        setup.dispatch("jit", grid, block, lds)
        assert last_dispatch.counters.threads == 1, last_dispatch.counters.as_dict()
    finally:
        setup.close()

def _profiled_counters(engine: str, target: str, n: int):
    from hsapy.asm import kernels
    from hsapy.profile import Profiler

    code = kernels.build("vector_add", target)
    rng = np.random.default_rng(3)
    a, b = rng.random((2, n), dtype=np.float32)
    with hsapy.Runtime(backend="sim", targets=[target], engine=engine) as rt:
        agent = rt.gpu_agents[0]
        kernel = rt.load(code, agent).kernel("vector_add")
        bufs = [agent.device_pool.allocate(4 * n) for _ in range(3)]
        bufs[0].copy_from(a)
        bufs[1].copy_from(b)
        queue = agent.create_queue(size=64)
        args = [bufs[0], bufs[1], bufs[2], n]
        last_dispatch.counters = None
        kernel.launch(queue, args, grid=n, workgroup=256, timeout=300)
        unprofiled = last_dispatch.counters
        with Profiler() as prof:
            kernel.launch(queue, args, grid=n, workgroup=256, timeout=300)
        assert np.array_equal(bufs[2].copy_to(dtype=np.float32)[:n], a + b)
        queue.close()
    (dispatch,) = prof.dispatches
    return dispatch.counters, unprofiled


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_profile_counters_are_the_same_under_either_engine(target):
    n = 20_000 + 77
    interp, _ = _profiled_counters("interp", target, n)
    compiled, unprofiled = _profiled_counters("jit", target, n)
    # the engine choice took effect: the same dispatch without the profiler ran compiled
    assert unprofiled is not None and unprofiled.calls > 0
    fields = ("hardware", "flops", "matrix_flops", "int_ops", "bytes", "global_line_bytes",
              "global_footprint_bytes", "valu_lanes", "valu_lane_slots", "lds_passes",
              "instructions")
    for name in fields:
        assert getattr(compiled, name) == getattr(interp, name), name
    # waves of full workgroups plus those of the partial last one: one per started wave width
    assert interp.hardware["SQ_WAVES"] == -(-n // (64 if target == "gfx942" else 32))


def _vector_add_once(code: bytes, target: str, n: int) -> None:
    """One vector add under HSAPY_SIM_ENGINE=jit in a runtime of its own (a fresh program,
    decoded and compiled again)."""
    rng = np.random.default_rng(11)
    a, b = rng.random((2, n), dtype=np.float32)
    with hsapy.Runtime(backend="sim", targets=[target], engine="jit") as rt:
        agent = rt.gpu_agents[0]
        kernel = rt.load(code, agent).kernel("vector_add")
        bufs = [agent.device_pool.allocate(4 * n) for _ in range(3)]
        bufs[0].copy_from(a)
        bufs[1].copy_from(b)
        queue = agent.create_queue(size=64)
        last_dispatch.counters = None
        kernel.launch(queue, [bufs[0], bufs[1], bufs[2], n], grid=n, workgroup=256,
                      timeout=300)
        assert last_dispatch.counters is not None and last_dispatch.counters.calls > 0
        assert np.array_equal(bufs[2].copy_to(dtype=np.float32)[:n], a + b)
        queue.close()


def test_a_cached_unit_loads_without_tracing_or_ir(tmp_path, monkeypatch):
    """The early cache (docs/simulator.md, "Execution engines"): a program compiled once is
    loaded by a later runtime without tracing or IR generation; a changed engine (another
    source hash) or a damaged cache entry builds the unit again, with the same results."""
    from hsapy import toolchain
    from hsapy.asm import kernels
    from hsapy.sim.isa.jit import compiler as jit_compiler

    target = "gfx942"
    code = kernels.build("vector_add", target)
    monkeypatch.setattr(toolchain, "cache_dir", lambda: tmp_path)
    monkeypatch.delenv("HSAPY_SIM_JIT_CACHE", raising=False)
    comp = jit_compiler.compiler()
    stats = comp.stats

    def run() -> tuple[int, int]:
        generated, hits = stats.ir_generated, stats.unit_hits
        _vector_add_once(code, target, 4099)
        return stats.ir_generated - generated, stats.unit_hits - hits

    from hsapy.sim.isa.jit import runtime as jit_runtime

    ranges = []
    compile_range = jit_runtime.compile_program_range

    def recorded(program, first, count):
        ranges.append((program, first, count))
        return compile_range(program, first, count)

    monkeypatch.setattr(jit_runtime, "compile_program_range", recorded)
    generated, hits = run()
    assert generated >= 1 and hits == 0
    units = sorted((tmp_path / "jit" / "units").rglob("*.unit"))
    assert units, "nothing stored in the unit cache"
    assert run() == (0, generated)          # fresh runtime: every unit from the cache
    # the same function decoded after others (another entry index) is the same unit
    program, first, count = ranges[0]

    class Later:
        info, target, record = program.info, program.target, None
        insts = [None] * 3 + list(program.insts)
        offsets = [0] * 3 + list(program.offsets)

    before = stats.unit_hits, stats.ir_generated
    unit = compile_range(Later, first + 3, count)
    assert (stats.unit_hits, stats.ir_generated) == (before[0] + 1, before[1])
    assert unit is not None and unit.plan.segments[0].steps[0].index >= first + 3
    assert unit.plan.segments[0].steps[0].inst is Later.insts[first + 3]
    # another engine (its sources changed): other keys, built again and stored beside
    monkeypatch.setattr(comp, "_source_hash", "another engine")
    assert run() == (generated, 0)
    assert len(list((tmp_path / "jit" / "units").rglob("*.unit"))) == 2 * len(units)
    monkeypatch.setattr(comp, "_source_hash", None)
    # damaged entries are not trusted: built again, same answer
    for path in units:
        data = path.read_bytes()
        path.write_bytes(data[:len(data) // 2])
    assert run() == (generated, 0)
    assert run() == (0, generated)


_CACHED_OBJECTS_RUN = """
import numpy as np, hsapy
from hsapy.asm import kernels
from hsapy.sim.isa.jit import compiler
with hsapy.Runtime(backend="sim", targets=["gfx942"], engine="jit") as rt:
    agent = rt.gpu()
    kernel = rt.load(kernels.build("vector_add", "gfx942"), agent).kernel("vector_add")
    n = 4099
    a, b, c = (rt.system_pool.allocate(4 * n) for _ in range(3))
    a.copy_from(np.arange(n, dtype=np.float32))
    b.copy_from(np.ones(n, np.float32))
    kernel.launch(agent.create_queue(64), [a, b, c, n], n, 256)
    right = bool((c.copy_to(dtype=np.float32) == np.arange(n) + 1).all())
    stats = compiler.compiler().stats
    print(right, stats.cache_hits, stats.cache_bad)
"""


def test_a_damaged_cached_object_is_compiled_again_not_loaded(tmp_path):
    """Objects cached by module text carry their SHA-256: one cut short (a crash, a full disk)
    or changed on disk is compiled again and rewritten, never handed to MCJIT, which aborts
    the process on a malformed object. Each run is a process of its own, as the cache is."""
    import os
    import shutil
    import subprocess
    import sys

    env = {**os.environ, "HSAPY_CACHE_DIR": str(tmp_path), "HSAPY_SIM_JIT_CACHE": "1"}

    def run() -> list[str]:
        done = subprocess.run([sys.executable, "-c", _CACHED_OBJECTS_RUN], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split()

    assert run()[::2] == ["True", "0"]              # compiled and stored
    objects = sorted((tmp_path / "jit").glob("??/*.o"))
    assert objects, "nothing stored in the object cache"

    def damage() -> None:
        shutil.rmtree(tmp_path / "jit" / "units", ignore_errors=True)   # the earlier cache
        for k, path in enumerate(objects):
            data = bytearray(path.read_bytes())
            if k % 2:
                data[len(data) // 3] ^= 0x40          # one bit changed
            else:
                del data[len(data) // 2:]             # cut short
            path.write_bytes(bytes(data))

    damage()
    right, hits, bad = run()
    assert (right, hits, int(bad)) == ("True", "0", len(objects))
    shutil.rmtree(tmp_path / "jit" / "units", ignore_errors=True)
    right, hits, bad = run()                         # rewritten: loaded this time
    assert (right, int(hits), bad) == ("True", len(objects), "0")
    assert not list((tmp_path / "jit").rglob("*.tmp"))


def test_auto_interprets_while_the_kernel_compiles_in_the_background(monkeypatch):
    """Under HSAPY_SIM_ENGINE=auto a large dispatch does not wait for its kernel's compilation
    (docs/simulator.md, "Execution engines"): it runs in the interpreter while a background
    thread compiles, and a later dispatch runs the compiled code; results are the same."""
    from hsapy.asm import kernels
    from hsapy.sim.isa.jit import executor as jit_executor
    from hsapy.sim.isa.jit import runtime as jit_runtime

    target, n = "gfx1201", jit.AUTO_MIN_WORK_ITEMS
    code = kernels.build("vector_add", target)
    release = threading.Event()
    compiled = jit_runtime.compile_program_range

    def held(*args):
        assert release.wait(120), "the test never released the compilation"
        return compiled(*args)

    monkeypatch.setattr(jit_runtime, "compile_program_range", held)
    monkeypatch.setattr(jit_executor, "AUTO_COMPILE_WAIT_S", 0.05)
    rng = np.random.default_rng(5)
    a, b = rng.random((2, n), dtype=np.float32)
    with hsapy.Runtime(backend="sim", targets=[target], engine="auto") as rt:
        agent = rt.gpu_agents[0]
        kernel = rt.load(code, agent).kernel("vector_add")
        bufs = [agent.device_pool.allocate(4 * n) for _ in range(3)]
        bufs[0].copy_from(a)
        bufs[1].copy_from(b)
        queue = agent.create_queue(size=64)

        def launch():
            bufs[2].copy_from(np.zeros(n, np.float32))
            last_dispatch.counters = None
            kernel.launch(queue, [bufs[0], bufs[1], bufs[2], n], grid=n, workgroup=256,
                          timeout=300)
            assert np.array_equal(bufs[2].copy_to(dtype=np.float32)[:n], a + b)
            return last_dispatch.counters

        assert launch() is None          # compilation held: interpreted
        assert launch() is None
        release.set()
        for _ in range(200):             # the background thread finishes soon after
            counters = launch()
            if counters is not None:
                break
        assert counters is not None and counters.calls > 0
        queue.close()


def test_a_process_exits_cleanly_while_a_kernel_compiles_in_the_background(tmp_path):
    """A program may end while auto's background compilation is inside LLVM, which tears down
    its global state at exit: the compilation stops at its next check first (a crash at exit,
    SIGSEGV or an LLVM assertion, before). half_math at -O0 takes far longer to compile than
    the interpreted dispatch takes to run."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from hsapy import toolchain

    try:
        toolchain.find_tool("clang", min_major=19)
        toolchain.find_tool("ld.lld", min_major=19)
    except toolchain.ToolNotFoundError as exc:
        pytest.skip(f"needs clang-19 and ld.lld-19: {exc}")
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, HSAPY_SIM_ENGINE="auto")
    env.pop("HSAPY_SIM_JIT_CACHE", None)
    done = subprocess.run([sys.executable, str(root / "benchmarks" / "sim_compile.py"),
                           "--launches", "1", "--jit-cache", str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = done.stdout.splitlines()
    record = json.loads(line)
    assert record["engine"] == "auto" and record["compiled_lane_instructions"] == 0, record
