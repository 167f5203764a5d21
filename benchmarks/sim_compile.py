"""What a large dispatch of a hard-to-compile kernel costs under the simulator's default engine,
as JSON lines.

    python benchmarks/sim_compile.py [--kernel half_math] [--target gfx942] [--opt 0]
                                     [--n 65536] [--launches 2] [--jit-cache DIR]

One fidelity-corpus kernel (tests/sim/corpus_cases.py; needs clang-19 and ld.lld-19) is built,
loaded into a fresh simulated runtime and launched ``launches`` times on ``n`` elements, under
``HSAPY_SIM_ENGINE`` as set (default: ``auto``). Each line: ``launch`` (1 = first in this
process), ``wall_s`` (launch to completion), and the compiled engine's counters so far in the
process: ``compile_s`` (seconds compiling or loading objects), ``trace_s`` (planning, tracing
and IR generation), ``ir_generated`` (units whose IR was built), ``unit_hits`` (units loaded
from the on-disk cache without IR), ``compiled_lane_instructions`` of that launch (0: the
launch ran interpreted). Run it twice with the same ``--jit-cache`` directory (empty the first
time) to see a cold and a warm process.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="half_math", choices=["half_math"])
    parser.add_argument("--target", default="gfx942")
    parser.add_argument("--opt", type=int, default=0)
    parser.add_argument("--n", type=int, default=65536)
    parser.add_argument("--launches", type=int, default=2)
    parser.add_argument("--jit-cache", type=Path, default=None,
                        help="the compiled engine's cache under this directory (HSAPY_CACHE_DIR "
                             "for the engine only; the kernel build keeps the usual cache)")
    args = parser.parse_args()

    import numpy as np

    sys.path.insert(0, str(ROOT / "tests" / "sim"))
    import corpus_build

    import hsapy
    from hsapy.sim.isa.jit import last_dispatch

    wave = 64 if args.target == "gfx942" else 32
    code = corpus_build.build_source("numeric", corpus_build.Build(args.target, wave, args.opt))
    if args.jit_cache is not None:
        os.environ["HSAPY_CACHE_DIR"] = str(args.jit_cache)   # read at each cache lookup
    n, block = args.n, 128
    rng = np.random.default_rng(0)
    a = rng.uniform(-4, 4, n).astype(np.float16)
    b = rng.uniform(-4, 4, n).astype(np.float16)
    with hsapy.Runtime(backend="sim", targets=[args.target]) as rt:
        agent = rt.gpu_agents[0]
        kernel = rt.load(code, agent).kernel(args.kernel)
        bufs = [agent.device_pool.allocate(max(4, nbytes)) for nbytes in (2 * n, 2 * n, 2 * n,
                                                                           4 * n)]
        bufs[0].copy_from(a)
        bufs[1].copy_from(b)
        queue = agent.create_queue(size=64)
        want = a.astype(np.float32) * b.astype(np.float32)
        for launch in range(1, args.launches + 1):
            last_dispatch.counters = None
            start = time.perf_counter()
            kernel.launch(queue, [bufs[0], bufs[1], bufs[2], bufs[3], n],
                          grid=-(-n // block) * block, workgroup=block, timeout=3600)
            wall = time.perf_counter() - start
            # the corpus case's check: out_f = a*b + out_h in float32, x*y exact
            got_h = bufs[2].copy_to(dtype=np.float16)[:n]
            got_f = bufs[3].copy_to(dtype=np.float32)[:n]
            if not np.array_equal(got_f, want + got_h.astype(np.float32)):
                raise SystemExit(f"{args.kernel}: wrong float results on launch {launch}")
            record = {"kernel": args.kernel, "target": args.target, "opt": args.opt, "n": n,
                      "engine": os.environ.get("HSAPY_SIM_ENGINE", "auto"), "launch": launch,
                      "wall_s": round(wall, 3), "simulated": True}
            try:
                from hsapy.sim.isa.jit.compiler import compiler

                stats = compiler().stats
                record.update(compile_s=round(stats.seconds, 3),
                              trace_s=round(stats.trace_seconds, 3),
                              ir_generated=stats.ir_generated, unit_hits=stats.unit_hits)
            except Exception:  # noqa: BLE001 - no compiled engine (llvmlite missing)
                pass
            counters = last_dispatch.counters
            record["compiled_lane_instructions"] = \
                0 if counters is None else counters.compiled_lane_instructions
            print(json.dumps(record), flush=True)
        queue.close()


if __name__ == "__main__":
    main()
