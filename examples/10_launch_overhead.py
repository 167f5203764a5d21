"""Step 10: what a launch costs the host -- plain launch, prepared dispatch, and a batch.

    python3 examples/10_launch_overhead.py [--backend auto|sim|rocr|rocr-sim]

plain     kernel.launch(..., wait=False): validate the geometry, build the kernarg plan and the
          packet template, then publish -- every call.
prepared  kernel.prepare(...) once; each call packs arguments into a kernarg slot, patches two
          fields of a ready packet body and publishes (reserve, write, doorbell).
publish   prepared.publish(...): the same without the result object and without the doorbell
          -- it takes exactly the kernel's parameters and returns the packet index; the packet
          processor fetches nothing until one doorbell (queue.flush()) announces them all.
          (prepared.submit(...) is publish + doorbell.)
batch     prepared.batch([...]): n packets with one reservation, one doorbell, and one
          barrier-AND packet at the end whose completion signal stands for all of them.
The kernel is empty (asm/kernels.py), so the times are host cost plus the packet processor's
round trip. This prints a table and checks only that every dispatch completed; benchmarks/
measures speed properly. On the simulator the times are those of a Python packet processor.
"""
from __future__ import annotations

import argparse
import time

import hsapy
from hsapy import aql
from hsapy.asm import kernels

COUNT = 200


def main(backend: str | None) -> None:
    with hsapy.Runtime(backend=backend) as rt:
        gpu = rt.gpu_agents[0]
        kernel = rt.load(kernels.build("empty", gpu.target), gpu).kernel("empty")
        queue = gpu.create_queue(size=256)
        grid = block = gpu.wavefront_size             # one wave per dispatch
        print(f"backend {rt.backend}, GPU {gpu.name}; {COUNT} dispatches of an empty kernel "
              f"per way, queue of {queue.size}")
        kernel.launch(queue, [], grid=grid, workgroup=block)        # warm up (first use)
        rows = []

        started = time.perf_counter()
        plain = [kernel.launch(queue, [], grid=grid, workgroup=block, wait=False)
                 for _ in range(COUNT)]
        submitted = time.perf_counter()
        for result in plain:
            result.wait(timeout=30.0)
        rows.append(("plain launch", submitted - started, time.perf_counter() - started,
                     all(r.is_done for r in plain)))

        prepared = kernel.prepare(queue, grid=grid, workgroup=block)
        # first use builds each call path from source (hsapy.dispatch._FAST_PATH): not timed
        prepared().wait(timeout=30.0)
        publish = prepared.publish
        started = time.perf_counter()
        fast = [prepared() for _ in range(COUNT)]
        submitted = time.perf_counter()
        for result in fast:
            result.wait(timeout=30.0)
        rows.append(("prepared", submitted - started, time.perf_counter() - started,
                     all(r.is_done for r in fast)))

        # prepared.publish returns only the packet index: a barrier-AND packet with the barrier
        # bit and a completion signal, published after them, completes once all of them have;
        # its doorbell (queue.publish rings one) announces every packet before it too
        started = time.perf_counter()
        indices = [publish() for _ in range(COUNT)]
        submitted = time.perf_counter()
        done = rt.create_signal(1)
        queue.publish(aql.barrier_and([], completion_signal=done.handle))
        done.wait(timeout=30.0, abort=queue.check)            # until its value drops below 1
        rows.append(("prepared.publish", submitted - started, time.perf_counter() - started,
                     indices == list(range(indices[0], indices[0] + COUNT))))
        done.close()

        started = time.perf_counter()
        batch = prepared.batch([()] * COUNT)
        submitted = time.perf_counter()
        batch.wait(timeout=30.0)
        rows.append(("batch (1 doorbell)", submitted - started, time.perf_counter() - started,
                     batch.is_done and len(batch.indices) == COUNT))

        label = "simulated, " if rt.backend == "sim" else ""
        print(f"\n{'way':<20} {'submit us/dispatch':>19} {'until all done us/dispatch':>27}"
              f"   ({label}host wall-clock)")
        for name, submit, total, _ok in rows:
            print(f"{name:<20} {1e6 * submit / COUNT:>19.2f} {1e6 * total / COUNT:>27.2f}")

        written = queue.load_write_index()
        deadline = time.monotonic() + 5.0          # the read index may trail the last signal
        while queue.load_read_index() < written and time.monotonic() < deadline:
            time.sleep(0.001)
        read = queue.load_read_index()
        print(f"\nqueue indices: write {written}, read {read} "
              f"(2 warm-ups + {3 * COUNT} dispatches + 1 barrier after the publishes + {COUNT} "
              f"batched + {len(batch.chunks)} barrier packet(s) closing the batch)")
        failed = [name for name, _s, _t, ok in rows if not ok]
        if failed or written != read or written != 3 + 4 * COUNT + len(batch.chunks):
            raise SystemExit(f"FAILED: not every dispatch completed ({failed or 'indices'})")
        queue.close()
        print(f"OK: all {4 * COUNT + 2} dispatches completed")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("auto", "sim", "rocr", "rocr-sim"), default=None,
                        help="HSA runtime (default: auto, or HSAPY_BACKEND)")
    try:
        main(parser.parse_args().backend)
    except hsapy.BackendUnavailableError as exc:    # e.g. --backend rocr without an AMD GPU
        raise SystemExit(f"{parser.prog}: {exc}") from None
