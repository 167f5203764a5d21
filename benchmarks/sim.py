"""Throughput of the simulator's ISA interpreter, as JSON lines.

    python benchmarks/sim.py [--targets gfx942,gfx1201] [--quick]

Everything goes through the real stack on the simulated runtime (``Runtime(backend="sim")``,
code object loading, kernarg packing, AQL publish, the packet processor thread, the ISA
interpreter, completion signal). Kernels: the llvmlite vector add from asm/ and the operator
suite's prebuilt HIP kernels (tiled GEMM, fused softmax) from kernels/prebuilt.

Each kernel line: ``kernel``, ``target``, ``n`` (problem size), ``wall_s`` (launch to completion,
median of ``repeats`` runs after one warm-up run that decodes the code), ``lane_instructions``
(for every instruction a wave executes, the number of lanes in EXEC at that moment, summed) and
``lane_instructions_per_s``; ``simulated`` is always true. The empty-kernel line has
``kernel: "empty"`` and ``median_us`` of the round trip (publish -> completion observed) with
a prepared dispatch of one 64-wide workgroup. Results are checked before they are reported.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np


def _emit(record: dict) -> None:
    record["simulated"] = True
    print(json.dumps(record), flush=True)


def _stats():
    from hsapy.sim.isa import executor

    return executor.last_stats


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
        t0 = time.perf_counter()
        kernel.launch(queue, [bufs[0], bufs[1], bufs[2], n], n, 256, timeout=600)
        times.append(time.perf_counter() - t0)
    if not np.array_equal(bufs[2].numpy(np.float32)[:n], a + b):
        raise SystemExit(f"vector add on {agent.name} gave a wrong result")
    lanes = _stats().lane_instructions
    wall = statistics.median(times[1:])
    return {"kernel": "vector_add", "target": agent.name, "n": n, "wall_s": round(wall, 4),
            "lane_instructions": lanes, "lane_instructions_per_s": round(lanes / wall)}


def bench_operator(rt, agent, operator: str, variant: str, size: tuple, repeats: int) -> dict:
    """One operator-suite variant from its prebuilt code object, checked against FP64."""
    from hsapy import operators as O

    ops = O.OPERATORS.values() if isinstance(O.OPERATORS, dict) else O.OPERATORS
    op = next(o for o in ops if o.name == operator)
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
    samples = sorted(samples[10:])
    return {"kernel": "empty", "target": agent.name, "n": count,
            "median_us": round(statistics.median(samples) * 1e6, 1),
            "p95_us": round(samples[int(0.95 * (len(samples) - 1))] * 1e6, 1)}


def main(argv: list[str] | None = None) -> int:
    import hsapy

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="gfx942,gfx1201")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke test)")
    args = parser.parse_args(argv)
    targets = [t for t in args.targets.split(",") if t]
    with hsapy.Runtime(backend="sim", targets=targets) if _takes_targets() else \
            hsapy.Runtime(backend="sim") as rt:
        for agent in rt.gpu_agents:
            if agent.name not in targets:
                continue
            _emit(bench_empty(rt, agent, 50 if args.quick else 500))
            sizes = [1 << 12] if args.quick else [1 << 20, 1 << 22]
            for n in sizes:
                _emit(bench_vector_add(rt, agent, n, args.repeats))
            if args.quick:
                _emit(bench_operator(rt, agent, "gemm", "tiled16", (32, 32, 32), 1))
                continue
            _emit(bench_operator(rt, agent, "gemm", "tiled16", (256, 256, 256), 1))
            _emit(bench_operator(rt, agent, "softmax", "fused", (1024, 1024), 1))
    return 0


def _takes_targets() -> bool:
    import inspect

    import hsapy

    try:
        return "targets" in inspect.signature(hsapy.Runtime).parameters
    except (TypeError, ValueError):
        return False


if __name__ == "__main__":
    sys.exit(main())
