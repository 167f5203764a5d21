"""Throughput of the simulator's execution engines, as JSON lines.

    python benchmarks/sim.py [--targets gfx942,gfx1201] [--engines interp,jit] [--quick]
                             [--threads N] [--scaling] [--repeats R]

Everything goes through the real stack on the simulated runtime (``Runtime(backend="sim",
engine=...)``, code object loading, kernarg packing, AQL publish, the packet processor thread,
the engine, completion signal). Kernels: the llvmlite vector add from asm/ and the operator
suite's prebuilt HIP kernels (tiled GEMM, fused softmax) from kernels/prebuilt. Results are
checked before they are reported.

Every line carries ``engine`` ("interp": the ISA interpreter; "jit": the compiled engine;
"auto": the default choice), ``threads`` (HSAPY_SIM_THREADS the compiled engine ran with; the
interpreter always runs on one), ``cpu_count`` (``os.cpu_count()``), ``cores_usable`` (the cores
this process may run on, ``os.sched_getaffinity``) and ``simulated: true``.

Kernel lines: ``kernel``, ``target``, ``n`` (problem size), ``wall_s`` (launch to completion,
median of ``repeats`` runs after one warm-up run that decodes, and for the compiled engine
compiles, the code), ``lane_instructions`` (for every instruction a wave executes, the number of
lanes in EXEC at that moment, summed) and ``lane_instructions_per_s``; compiled-engine lines add
``compile_s`` (host seconds the engine spent tracing and compiling code, or loading it from its
on-disk cache, during the row: the warm-up run pays it, the timed runs do not) and, for the
row's last dispatch, ``chunks`` (chunks of workgroups it ran in), ``chunks_looped`` (those the
chunk loop of generated code ran from start to end: docs/simulator.md, "Threads") and
``threads_used`` (host threads that ran them).

The empty-kernel line has ``kernel: "empty"``, ``engine: "auto"`` (the default engine, which
interprets a dispatch this small) and ``median_us`` / ``p95_us`` of the round trip (publish ->
completion observed) with a prepared dispatch of one 64-wide workgroup.

``--threads N`` runs the compiled engine with ``HSAPY_SIM_THREADS=N`` (default: the engine's own
default, the usable cores up to its ceiling). ``--scaling`` runs the compiled engine's kernels at
1, 2, ... N threads instead (default N: the usable cores) and adds
``speedup`` (wall time at one thread over wall time at ``threads``) to each line; the interpreter
and the empty kernel are not run in that mode. It first measures the host itself, the ceiling
for any such speed-up (hsapy.sim.isa.jit.host_ceiling): lines with ``kernel`` "host_compute" (a
native loop of register arithmetic) and "host_memory" (a native loop summing 16 MiB per
thread), ``engine: "native"``, ``target: "host"``, ``simulated: false``, each thread doing the
same work, ``speedup`` = threads x t(1) / t(threads). On a virtual machine whose vCPUs share
cores, or whose memory bandwidth a core or two use up, these stay well below the thread count,
and so do the kernels. Each kernel line repeats them for its thread count as
``host_compute_speedup`` and ``host_memory_speedup``, to read its own ``speedup`` against.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator

from hsapy.hostenv import quiet_blas_spin

quiet_blas_spin()      # before numpy loads its BLAS (hsapy/hostenv.py says why)

import numpy as np  # noqa: E402

ENGINES = ("interp", "jit", "auto")
THREADS_ENV = "HSAPY_SIM_THREADS"


def cores_usable() -> int:
    """The cores this process may run on (its CPU affinity), else every core."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _default_threads() -> int:
    """The compiled engine's own thread count (HSAPY_SIM_THREADS, else the usable cores up to
    its ceiling); the usable cores when it cannot be imported."""
    try:
        from hsapy.sim.isa.jit.executor import thread_count
    except Exception:  # noqa: BLE001 - no compiled engine (llvmlite missing)
        return cores_usable()
    return thread_count()


def _emit(record: dict, engine: str, threads: int, simulated: bool = True) -> None:
    record.update(engine=engine, threads=threads if engine != "interp" else 1,
                  cpu_count=os.cpu_count(), cores_usable=cores_usable(), simulated=simulated)
    print(json.dumps(record), flush=True)


@contextlib.contextmanager
def _threads(count: int) -> Iterator[None]:
    """HSAPY_SIM_THREADS=count while the block runs (the engine reads it per dispatch)."""
    saved = os.environ.get(THREADS_ENV)
    os.environ[THREADS_ENV] = str(count)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(THREADS_ENV, None)
        else:
            os.environ[THREADS_ENV] = saved


def _stats():
    from hsapy.sim.isa import interpreter

    return interpreter.last_stats


def _compile_seconds() -> float:
    """Seconds the compiled engine has spent compiling in this process so far."""
    try:
        from hsapy.sim.isa.jit import compiler

        stats = compiler.compiler().stats
        return stats.seconds + getattr(stats, "trace_seconds", 0.0)
    except Exception:  # noqa: BLE001 - no compiled engine (llvmlite missing): nothing compiled
        return 0.0


def bench_vector_add(rt, agent, n: int, repeats: int) -> dict:
    from hsapy.asm import kernels

    kernel = rt.load(kernels.build("vector_add", agent.name), agent).kernel("vector_add")
    queue = agent.create_queue(size=64)
    a = np.random.default_rng(0).random(n, dtype=np.float32)
    b = np.random.default_rng(1).random(n, dtype=np.float32)
    bufs = [rt.system_pool.allocate(4 * n) for _ in range(3)]
    bufs[0].copy_from(a)
    bufs[1].copy_from(b)
    times = []
    for _ in range(repeats + 1):
        bufs[2].copy_from(np.full(n, np.nan, np.float32))
        t0 = time.perf_counter()
        kernel.launch(queue, [bufs[0], bufs[1], bufs[2], n], n, 256, timeout=600)
        times.append(time.perf_counter() - t0)
    if not np.array_equal(bufs[2].numpy(np.float32)[:n], a + b):
        raise SystemExit(f"vector add on {agent.name} gave a wrong result")
    lanes = _stats().lane_instructions
    queue.close()
    wall = statistics.median(times[1:])
    return {"kernel": "vector_add", "target": agent.name, "n": n, "wall_s": round(wall, 4),
            "lane_instructions": lanes, "lane_instructions_per_s": round(lanes / wall)}


def bench_operator(rt, agent, operator: str, variant: str, size: tuple, repeats: int) -> dict:
    """One operator-suite variant from its prebuilt code object, checked against FP64."""
    from hsapy import operators as O

    op = O.operator(operator)
    chosen = op.variant(variant)
    exe = rt.load(O.prebuilt_path(op, agent.name).read_bytes(), agent)
    geometry = O.Device(agent.name, agent.wavefront_size, 64)
    problem = O.make_problem(op, chosen, size, op.inputs_kinds[0], geometry)
    bufs = {}
    for name, buf in problem.buffers.items():
        data = np.ascontiguousarray(buf.data, np.float32)
        bufs[name] = rt.system_pool.allocate(max(4, data.nbytes))
        bufs[name].copy_from(data)
    queue = agent.create_queue(size=64)
    plan = chosen.plan(size, geometry)
    times, lanes = [], 0
    for _ in range(repeats + 1):
        lanes = 0
        t0 = time.perf_counter()
        for launch in plan:
            args = [bufs[a] if isinstance(a, str) else a for a in launch.args]
            exe.kernel(launch.kernel).launch(queue, args, launch.grid, launch.block,
                                             launch.dynamic_lds, timeout=600)
            lanes += _stats().lane_instructions
        times.append(time.perf_counter() - t0)
    outputs = {name: bufs[name].numpy(np.float32)[: problem.buffers[name].data.size]
               .reshape(problem.buffers[name].data.shape) for name in problem.reference}
    result = O.check_outputs(outputs, problem.reference, op.tolerance)
    if not result.ok:
        raise SystemExit(f"{operator}/{variant} on {agent.name} failed its check: {result}")
    queue.close()
    wall = statistics.median(times[1:])
    label = "x".join(str(v) for v in size)
    return {"kernel": f"{operator}_{variant}", "target": agent.name, "n": label,
            "wall_s": round(wall, 4), "lane_instructions": lanes,
            "lane_instructions_per_s": round(lanes / wall)}


def bench_empty(rt, agent, count: int) -> dict:
    from hsapy.asm import kernels

    kernel = rt.load(kernels.build("empty", agent.name), agent).kernel("empty")
    queue = agent.create_queue(size=64)
    prepared = kernel.prepare(queue, 64, 64)
    samples = []
    for _ in range(count + 10):
        t0 = time.perf_counter()
        prepared().wait(10)
        samples.append(time.perf_counter() - t0)
    queue.close()
    samples = sorted(samples[10:])
    return {"kernel": "empty", "target": agent.name, "n": count,
            "median_us": round(statistics.median(samples) * 1e6, 1),
            "p95_us": round(samples[int(0.95 * (len(samples) - 1))] * 1e6, 1)}


Bench = Callable[[object, object], dict]


def kernel_benches(quick: bool, repeats: int) -> list[Bench]:
    """The kernels each engine runs, smallest first."""
    if quick:
        return [lambda rt, agent: bench_vector_add(rt, agent, 1 << 12, repeats),
                lambda rt, agent: bench_operator(rt, agent, "gemm", "tiled16", (32, 32, 32), 1)]
    return [lambda rt, agent: bench_vector_add(rt, agent, 1 << 20, repeats),
            lambda rt, agent: bench_vector_add(rt, agent, 1 << 22, repeats),
            lambda rt, agent: bench_operator(rt, agent, "gemm", "tiled16", (256, 256, 256), 1),
            lambda rt, agent: bench_operator(rt, agent, "softmax", "fused", (1024, 1024), 1)]


def _timed(bench: Bench, rt, agent, engine: str) -> dict:
    compiled_before = _compile_seconds() if engine != "interp" else 0.0
    if engine != "interp":
        from hsapy.sim.isa.jit import last_dispatch

        last_dispatch.counters = None      # what the row's own dispatches leave
    record = bench(rt, agent)
    if engine != "interp":
        record["compile_s"] = round(_compile_seconds() - compiled_before, 3)
        record.update(_last_dispatch())
    return record


def _last_dispatch() -> dict:
    """How the compiled engine ran the row's last dispatch (empty when the engine did not run
    it, for example under "auto" below its size threshold)."""
    from hsapy.sim.isa.jit import last_dispatch

    counters = last_dispatch.counters
    if counters is None:
        return {}
    return {"chunks": counters.chunks, "chunks_looped": counters.chunks_looped,
            "threads_used": counters.threads}


def _runtime(engine: str | None, targets: list[str]):
    import hsapy

    return hsapy.Runtime(backend="sim", targets=targets, engine=engine)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="gfx942,gfx1201")
    parser.add_argument("--engines", default="interp,jit",
                        help="comma-separated engines for the kernel lines: interp, jit, auto")
    parser.add_argument("--threads", type=int, default=None,
                        help=f"{THREADS_ENV} for the compiled engine (default: the usable cores)")
    parser.add_argument("--scaling", action="store_true",
                        help="the compiled engine's kernels at 1..--threads threads, with speedup")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke test)")
    args = parser.parse_args(argv)
    targets = [t for t in args.targets.split(",") if t]
    engines = [e for e in args.engines.split(",") if e]
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        parser.error(f"unknown engine(s) {', '.join(unknown)}; choose from {', '.join(ENGINES)}")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads takes a count >= 1")
    if args.threads:
        threads = args.threads
    elif args.scaling:
        threads = cores_usable()
    else:
        threads = _default_threads()
    benches = kernel_benches(args.quick, args.repeats)

    if args.scaling:
        # the host's own ceiling first: native loops that need no simulator
        from hsapy.sim.isa.jit import host_ceiling

        ceilings: dict[int, dict] = {}
        for kind in host_ceiling.KINDS:
            for row in host_ceiling.scaling(kind, threads, args.repeats):
                ceilings.setdefault(row["threads"], {})[f"host_{kind}_speedup"] = row["speedup"]
                record = {"kernel": f"host_{kind}", "target": "host", **row}
                _emit(record, "native", row["threads"], simulated=False)
        with _runtime("jit", targets) as rt:
            for agent in rt.gpu_agents:
                if agent.name not in targets:
                    continue
                for bench in benches:
                    single = None
                    for count in range(1, threads + 1):
                        with _threads(count):
                            record = _timed(bench, rt, agent, "jit")
                        single = single or record["wall_s"]
                        record["speedup"] = round(single / record["wall_s"], 2) \
                            if record["wall_s"] else None
                        record.update(ceilings[count])
                        _emit(record, "jit", count)
        return 0

    with _runtime(None, targets) as rt:
        for agent in rt.gpu_agents:
            if agent.name in targets:
                _emit(bench_empty(rt, agent, 50 if args.quick else 500), "auto", threads)
    for engine in engines:
        with _runtime(engine, targets) as rt, _threads(threads):
            for agent in rt.gpu_agents:
                if agent.name not in targets:
                    continue
                for bench in benches:
                    _emit(_timed(bench, rt, agent, engine), engine, threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
