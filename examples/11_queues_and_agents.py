"""Step 11: every GPU agent, several queues each, one job spread over all of them.

    python3 examples/11_queues_and_agents.py [--backend auto|sim|rocr|rocr-sim]

A code object is loaded per agent (hsa_executable_load_agent_code_object takes one agent: the
kernel_object is only valid on that agent's queues). Each queue (hsa_queue_create) has its own
ring, indices, doorbell and packet processor; packets of different queues run concurrently and
complete in any order, so each chunk has its own completion signal and the host waits for all.
Kernel pointer arguments are plain device addresses: a chunk is "base address + offset".
"""
from __future__ import annotations

import argparse

import numpy as np

import hsapy
from hsapy.asm import kernels

QUEUES_PER_AGENT = 3
CHUNKS = 8                     # per agent, dealt round-robin to its queues
CHUNK = 1000                   # elements per chunk (not a multiple of the workgroup)
WORKGROUP = 128


def main(backend: str | None) -> None:
    with hsapy.Runtime(backend=backend) as rt:
        total = CHUNKS * CHUNK
        print(f"backend {rt.backend}; GPU agents: {', '.join(g.name for g in rt.gpu_agents)}")
        jobs = []
        for gpu in rt.gpu_agents:
            kernel = rt.load(kernels.build("vector_add", gpu.target), gpu).kernel("vector_add")
            queues = [gpu.create_queue(size=64) for _ in range(QUEUES_PER_AGENT)]
            a, b, out = (gpu.device_pool.allocate(4 * total) for _ in range(3))
            seed = len(jobs) + 1
            a.copy_from(np.arange(total, dtype=np.float32) * seed)
            b.copy_from(np.full(total, 0.5, np.float32))
            out.copy_from(np.full(total, np.nan, np.float32))
            results = []
            for chunk in range(CHUNKS):
                queue = queues[chunk % QUEUES_PER_AGENT]
                offset = 4 * chunk * CHUNK
                args = [a.address + offset, b.address + offset, out.address + offset, CHUNK]
                results.append(kernel.launch(queue, args, grid=CHUNK, workgroup=WORKGROUP,
                                             wait=False))
            jobs.append((gpu, queues, (a, b, out), results, seed))
            print(f"{gpu.name}: {CHUNKS} chunks of {CHUNK} published on queues "
                  f"{[q.id for q in queues]} (agent allows up to {gpu.queues_max} queues)")

        problems = []
        for gpu, queues, (_a, _b, out), results, seed in jobs:
            for result in results:
                result.wait(timeout=60.0)
            got = out.copy_to(dtype=np.float32)
            expected = np.arange(total, dtype=np.float32) * seed + 0.5
            wrong = int(np.count_nonzero(got != expected))
            per_queue = [q.load_write_index() for q in queues]
            print(f"{gpu.name}: packets per queue {per_queue}; {total - wrong}/{total} "
                  "elements right")
            if wrong or sum(per_queue) != CHUNKS:
                problems.append(f"{gpu.name}: {wrong} wrong elements, packets {per_queue}")
            for queue in queues:
                queue.close()
        if not rt.gpu_agents or problems:
            raise SystemExit("FAILED: " + ("; ".join(problems) or "no GPU agent"))
        print(f"OK: {len(jobs)} agent(s) x {QUEUES_PER_AGENT} queues, every chunk verified")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("auto", "sim", "rocr", "rocr-sim"), default=None,
                        help="HSA runtime (default: auto, or HSAPY_BACKEND)")
    try:
        main(parser.parse_args().backend)
    except hsapy.BackendUnavailableError as exc:    # e.g. --backend rocr without an AMD GPU
        raise SystemExit(f"{parser.prog}: {exc}") from None
