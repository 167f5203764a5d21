"""Step 7: dependencies across three queues with barrier-AND, barrier-OR and AMD barrier-value
packets, checked by the data and by the dispatch timestamps.

    python3 examples/07_barriers.py [--backend auto|sim|rocr|rocr-sim]

Packets (hsa.h hsa_barrier_and_packet_t / hsa_barrier_or_packet_t; hsa_ext_amd.h
hsa_amd_barrier_value_packet_t; docs/hsa-abi.md "AQL packets"):
  barrier-AND  completes when EVERY non-zero dep_signal[0..4] is 0
  barrier-OR   completes when ANY non-zero dep_signal is 0
  barrier-value (vendor-specific, AmdFormat 2) completes when (signal & mask) <cond> value
A dispatch with the header's barrier bit starts only after every earlier packet of its queue
completed. The graph (x = a + b ... v = 2a + 4; each kernel is vector_add):

  queue A: [value: (gate & 0xF0) == 0x30] K1 x=a+b            [OR: K3 | never] K4 w=z+a
  queue B: K2 y=b+b                       [value: K4 signal < 1] K5 v=w+b
  queue C: [AND: K1, K2] K3 z=x+y
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import hsapy
from hsapy import aql
from hsapy.asm import kernels

N = 256


def main(backend: str | None) -> None:
    with hsapy.Runtime(backend=backend) as rt:
        gpu = rt.gpu_agents[0]
        kernel = rt.load(kernels.build("vector_add", gpu.target), gpu).kernel("vector_add")
        queue_a, queue_b, queue_c = (gpu.create_queue(size=64) for _ in range(3))
        for queue in (queue_a, queue_b, queue_c):
            queue.enable_profiling()           # hsa_amd_profiling_set_profiler_enabled
        print(f"backend {rt.backend}, GPU {gpu.name}; queues A={queue_a.id} B={queue_b.id} "
              f"C={queue_c.id}")
        a, b, x, y, z, w, v = (gpu.device_pool.allocate(4 * N) for _ in range(7))
        a.copy_from(np.arange(N, dtype=np.float32))
        b.copy_from(np.ones(N, np.float32))
        v.copy_from(np.full(N, np.nan, np.float32))
        gate = rt.create_signal(0)             # the host opens it by setting bits 0x30
        never = rt.create_signal(1)            # stays 1: the OR must not need it

        def dispatch(queue, *args):
            # barrier=True: waits for the barrier packet just before it in the same queue.
            return kernel.launch(queue, [*args, N], grid=N, workgroup=64, barrier=True,
                                 wait=False)

        queue_a.publish(aql.barrier_value(gate.handle, 0x30, "EQ", mask=0xF0))
        k1 = dispatch(queue_a, a, b, x)
        k2 = dispatch(queue_b, b, b, y)
        queue_c.publish(aql.barrier_and([k1.signal.handle, k2.signal.handle]))
        k3 = dispatch(queue_c, x, y, z)
        queue_a.publish(aql.barrier_or([k3.signal.handle, never.handle]))
        k4 = dispatch(queue_a, z, a, w)
        queue_b.publish(aql.barrier_value(k4.signal.handle, 1, "LT"))
        k5 = dispatch(queue_b, w, b, v)
        print("published: A value-gate, K1, OR, K4 | B K2, value(K4), K5 | C AND(K1,K2), K3")

        # Everything behind the gate must wait; the gate's mask ignores bits outside 0xF0.
        for value in (0x0F, 0x3F):
            time.sleep(0.02)
            waiting = {name: r.signal.load() for name, r in
                       (("K1", k1), ("K3", k3), ("K4", k4), ("K5", k5))}
            print(f"gate = {gate.load():#04x}: completion signals {waiting}")
            if any(s != 1 for s in waiting.values()):
                raise SystemExit("FAILED: a dispatch behind the closed gate completed")
            gate.store(value)
        print(f"gate = {gate.load():#04x}: (gate & 0xF0) == 0x30, the chain runs")

        results = {"K1": k1, "K2": k2, "K3": k3, "K4": k4, "K5": k5}
        for result in results.values():
            result.wait(timeout=30.0)          # completion signal < 1, then read timestamps
        got = v.copy_to(dtype=np.float32)
        expected = 2 * np.arange(N, dtype=np.float32) + 4
        if not np.array_equal(got, expected):
            raise SystemExit(f"FAILED: v != 2a + 4 at {np.count_nonzero(got != expected)} places")
        print(f"data verified: v = 2a + 4 for all {N} elements")

        origin = min(r.start for r in results.values())
        scale = 1e6 / rt.timestamp_frequency
        where = {"K1": "A", "K2": "B", "K3": "C", "K4": "A", "K5": "B"}
        for name, r in results.items():
            print(f"  {name} queue {where[name]}  start {(r.start - origin) * scale:9.1f} us  "
                  f"end {(r.end - origin) * scale:9.1f} us")
        order = [("K3", "K1"), ("K3", "K2"), ("K4", "K3"), ("K5", "K4")]
        for later, earlier in order:
            if results[later].start < results[earlier].end:
                raise SystemExit(f"FAILED: {later} started before {earlier} ended")
        print("timestamps verified: K3 after K1 and K2, K4 after K3, K5 after K4"
              + (" (simulated times)" if rt.backend == "sim" else ""))
        for queue in (queue_a, queue_b, queue_c):
            queue.close()
        print("OK: barrier-AND, barrier-OR and barrier-value ordered work across 3 queues")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("auto", "sim", "rocr", "rocr-sim"), default=None,
                        help="HSA runtime (default: auto, or HSAPY_BACKEND)")
    try:
        main(parser.parse_args().backend)
    except hsapy.BackendUnavailableError as exc:    # e.g. --backend rocr without an AMD GPU
        raise SystemExit(f"{parser.prog}: {exc}") from None
