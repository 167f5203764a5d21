"""Step 5: the publishing protocol by hand -- reserve, write, ring the doorbell, wait -- and how
the queue's write and read indices move.

    python3 examples/05_doorbell_and_wait.py [--backend auto|sim|rocr|rocr-sim]

docs/hsa-abi.md "Publishing a packet" (hsa.h "Queues"):
  1. index = hsa_queue_add_write_index_scacq_screl(queue, n)        -> queue.reserve(n)
  2. wait while index + n - 1 - hsa_queue_load_read_index_scacquire(queue) >= size (timeout)
  3. slot = base_address + (index % size) * 64; write bytes 4..63   -> queue.write(...)
  4. store header|setup as one 32-bit release store                   (inside queue.write)
  5. hsa_signal_store_screlease(queue.doorbell_signal, last index)   -> queue.ring_doorbell(i)
The packet processor advances the read index as it takes packets, sets each finished slot back
to INVALID, and decrements each packet's completion signal by 1.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import hsapy
from hsapy import aql
from hsapy.asm import kernels
from hsapy.signal import Condition

LAPS = 2                          # round 2 pushes this many laps (+ a few) through the ring


def indices(queue) -> str:
    return f"write index {queue.load_write_index()}, read index {queue.load_read_index()}"


def wait_read_index(queue, value: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while queue.load_read_index() < value:
        queue.check()
        if time.monotonic() > deadline:
            raise SystemExit(f"FAILED: read index stuck at {queue.load_read_index()} < {value}")
        time.sleep(0.001)


def main(backend: str | None) -> None:
    with hsapy.Runtime(backend=backend) as rt:
        gpu = rt.gpu_agents[0]
        kernel = rt.load(kernels.build("empty", gpu.target), gpu).kernel("empty")
        queue = gpu.create_queue(size=64)
        print(f"backend {rt.backend}, GPU {gpu.name}; queue {queue.id} with {queue.size} slots, "
              f"doorbell signal {queue.doorbell:#x}")
        print(f"new queue: {indices(queue)}")

        # Round 1: three packets, one reservation, one doorbell, ONE completion signal: it
        # starts at 3 and each packet decrements it, so "value EQ 0" means all three are done.
        done = rt.create_signal(3)
        packet = aql.kernel_dispatch(kernel.kernel_object, gpu.wavefront_size,
                                     gpu.wavefront_size, completion_signal=done.handle)
        first = queue.reserve(3)
        print(f"reserve(3) -> first index {first}: {indices(queue)}")
        for index in range(first, first + 3):
            queue.write(index, packet.word, packet.body)
        # Written but not announced: the packet processor needs the doorbell to look at them
        # (a GPU may also notice them on its own; the protocol only promises the doorbell).
        print(f"3 packets written, doorbell not rung yet: {indices(queue)}, signal {done.load()}")
        queue.ring_doorbell(first + 2)
        value = done.wait(Condition.EQ, 0, timeout=10.0, abort=queue.check)
        wait_read_index(queue, first + 3)
        headers = [aql.decode_header(int(queue.ring[i % queue.size].view(np.uint16)[0])).type_name
                   for i in range(first, first + 3)]
        print(f"doorbell rung with {first + 2}; signal reached {value}; {indices(queue)}")
        print(f"slots {first}..{first + 2} now read {headers} (free again)")
        if queue.load_write_index() != first + 3 or value != 0:
            raise SystemExit("FAILED: round 1 indices or signal are wrong")

        # Round 2: more packets than the ring has slots. reserve() waits (with a timeout) for the
        # slot of packet i - size to be consumed. Only the last packet has a completion signal,
        # and its barrier bit makes it wait for every earlier packet of the queue to complete.
        total = LAPS * queue.size + 5
        last = rt.create_signal(1)
        plain = aql.kernel_dispatch(kernel.kernel_object, gpu.wavefront_size, gpu.wavefront_size)
        final = aql.kernel_dispatch(kernel.kernel_object, gpu.wavefront_size, gpu.wavefront_size,
                                    completion_signal=last.handle, barrier=True)
        start = queue.load_write_index()
        for k in range(total):
            index = queue.reserve(1)
            packet = final if k == total - 1 else plain
            queue.write(index, packet.word, packet.body)
            if k % 16 == 15 or k == total - 1:
                queue.ring_doorbell(index)               # one doorbell per 16 packets
        last.wait(Condition.LT, 1, timeout=30.0, abort=queue.check)
        wait_read_index(queue, start + total)
        end = queue.load_write_index()
        print(f"round 2: {total} packets through {queue.size} slots ({LAPS}+ laps), "
              f"doorbell every 16; {indices(queue)}")
        print(f"the last packet's index {end - 1} used slot {(end - 1) % queue.size}")
        if end - start != total or queue.load_read_index() != end:
            raise SystemExit(f"FAILED: expected {total} packets consumed, indices say "
                             f"{end - start} written / read index {queue.load_read_index()}")
        queue.close()
        print("OK: every packet was consumed and both completion waits returned")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("auto", "sim", "rocr", "rocr-sim"), default=None,
                        help="HSA runtime (default: auto, or HSAPY_BACKEND)")
    try:
        main(parser.parse_args().backend)
    except hsapy.BackendUnavailableError as exc:    # e.g. --backend rocr without an AMD GPU
        raise SystemExit(f"{parser.prog}: {exc}") from None
