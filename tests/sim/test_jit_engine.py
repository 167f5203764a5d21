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

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hsapy  # noqa: E402
from hsapy.sim.isa import jit  # noqa: E402

THREADS = (1, 2, 4)


def _corpus(source: str, target: str) -> bytes:
    from hsapy import toolchain

    try:
        toolchain.find_tool("clang", min_major=19)
        toolchain.find_tool("ld.lld", min_major=19)
    except toolchain.ToolNotFoundError as exc:
        pytest.skip(f"needs clang-19 and ld.lld-19: {exc}")
    import corpus_build

    wave = 64 if target == "gfx942" else 32
    return corpus_build.build_source(source, corpus_build.Build(target, wave, 3))


def _vector_add(target: str, rng):
    from hsapy.asm import kernels

    n = 60_001                      # 235 workgroups of 256, the last one partial
    a, b = rng.random((2, n), dtype=np.float32)
    return (kernels.build("vector_add", target), "vector_add",
            [a, b, np.zeros(n, np.float32), n], n, 256, 0, True)


def _stencil_1d(target: str, rng):
    n, block = 40_001, 256
    x = rng.standard_normal(n).astype(np.float32)
    return (_corpus("stencil", target), "stencil_1d", [x, np.zeros(n, np.float32), n],
            -(-n // block) * block, block, 0, True)


def _dot_atomic(target: str, rng):
    n, block, blocks = 30_000, 128, 40
    a, b = rng.standard_normal((2, n)).astype(np.float32)
    return (_corpus("reduce", target), "dot_atomic",
            [a, b, np.zeros(1, np.float32), n], blocks * block, block, 0, False)


def _histogram(target: str, rng):
    n, block, bins = 30_000, 256, 37
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    return (_corpus("histogram", target), "histogram_global",
            [keys, np.zeros(bins, np.uint32), bins, n], -(-n // block) * block, block, 0,
            False)


KERNELS = {"vector_add": _vector_add, "stencil_1d": _stencil_1d,
           "dot_atomic": _dot_atomic, "histogram_global": _histogram}


@pytest.fixture(scope="module")
def runtimes():
    """One simulated runtime per target for the module (its engine switched per dispatch):
    loaded code stays compiled from one dispatch to the next."""
    opened = {}
    yield lambda target: opened.setdefault(
        target, hsapy.Runtime(backend="sim", targets=[target]))
    for rt in opened.values():
        rt.close()


class Setup:
    """A loaded kernel, its buffers and a queue; ``dispatch`` restores the arguments first."""

    def __init__(self, rt, code: bytes, name: str, args) -> None:
        self.rt = rt
        self.agent = rt.gpu_agents[0]
        self.executable = rt.load(code, self.agent)
        self.kernel = self.executable.kernel(name)
        self.args = args
        self.buffers = [(self.agent.device_pool.allocate(max(a.nbytes, 4)), a)
                        for a in args if isinstance(a, np.ndarray)]
        self.queue = self.agent.create_queue(size=64)

    def dispatch(self, engine: str, grid: int, block: int, lds: int) -> list[np.ndarray]:
        """Memory of every array argument after one dispatch under ``engine``."""
        self.rt.lib.sim_set_engine(engine)
        buffers = iter(self.buffers)
        values = []
        for arg in self.args:
            if isinstance(arg, np.ndarray):
                buf, _ = next(buffers)
                buf.copy_from(arg)
                values.append(buf)
            else:
                values.append(arg)
        self.kernel.launch(self.queue, values, grid=grid, workgroup=block, dynamic_lds=lds,
                           timeout=300)
        return [buf.copy_to(dtype=np.uint8)[:arr.nbytes] for buf, arr in self.buffers]

    def close(self) -> None:
        self.queue.close()
        for buf, _ in self.buffers:
            buf.close()
        self.executable.close()


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
            jit.last_counters = None
            got = setup.dispatch("jit", grid, block, lds)
            counters = jit.last_counters
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
        jit.last_counters = None
        kernel.launch(queue, args, grid=n, workgroup=256, timeout=300)
        unprofiled = jit.last_counters
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
