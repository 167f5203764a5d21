"""Step 4: one kernel-dispatch packet, built field by field, written into a queue's ring.

    python3 examples/04_one_packet.py [--backend auto|sim|rocr|rocr-sim]

The 64-byte hsa_kernel_dispatch_packet_t (hsa.h; docs/hsa-abi.md "AQL packets"):
  0 header u16 | 2 setup u16 | 4,6,8 workgroup_size_x/y/z u16 | 10 reserved u16
  12,16,20 grid_size_x/y/z u32 (work-items, not workgroups) | 24 private_segment_size u32
  28 group_segment_size u32 | 32 kernel_object u64 | 40 kernarg_address u64 | 48 reserved u64
  56 completion_signal u64 (a signal handle; 0 = none)
header bits: 7:0 type (2 = KERNEL_DISPATCH), 8 barrier, 10:9 acquire scope, 12:11 release scope.
Publishing (hsa.h "Queues"): bytes 4..63 first, then header|setup as ONE 32-bit release store,
because the packet processor may read the slot the moment its type stops being INVALID.
"""
from __future__ import annotations

import argparse
import struct

import numpy as np

import hsapy
from hsapy import aql
from hsapy.asm import kernels
from hsapy.signal import Condition

N, WORKGROUP = 1000, 256         # 4 workgroups, the last one partial (1000 = 3 * 256 + 232)


def main(backend: str | None) -> None:
    with hsapy.Runtime(backend=backend) as rt:
        gpu = rt.gpu_agents[0]
        kernel = rt.load(kernels.build("vector_add", gpu.target), gpu).kernel("vector_add")
        print(f"backend {rt.backend}, GPU {gpu.name}; kernel {kernel.signature}")
        a, b, out = (gpu.device_pool.allocate(4 * N) for _ in range(3))
        a.copy_from(np.arange(N, dtype=np.float32))
        b.copy_from(np.full(N, 100.0, np.float32))
        out.copy_from(np.full(N, np.nan, np.float32))
        # Kernel arguments (step 6 packs them by hand; step 9 explains the hidden ones).
        kernarg = gpu.kernarg_pool.allocate(kernel.kernarg_size)
        if kernarg.pool.access(gpu) == "after allow_access":
            kernarg.allow_access([gpu])
        packed = kernel.layout.pack([a, b, out, N], grid=N, workgroup=WORKGROUP)
        kernarg.numpy()[:len(packed)] = np.frombuffer(packed, np.uint8)
        done = rt.create_signal(1)

        # The packet, field by field at the offsets of hsa_kernel_dispatch_packet_t.
        header = (2 << 0) | (0 << 8) | (2 << 9) | (2 << 11)   # KERNEL_DISPATCH, system scopes
        setup = 1                                               # one grid dimension
        packet = bytearray(64)
        struct.pack_into("<HH", packet, 0, header, setup)
        struct.pack_into("<HHHH", packet, 4, WORKGROUP, 1, 1, 0)
        struct.pack_into("<III", packet, 12, N, 1, 1)
        struct.pack_into("<II", packet, 24, kernel.private_segment_size,
                         kernel.group_segment_size)
        struct.pack_into("<QQQQ", packet, 32, kernel.kernel_object, kernarg.address, 0,
                         done.handle)
        built = aql.kernel_dispatch(kernel.kernel_object, N, WORKGROUP, kernarg.address,
                                    done.handle, kernel.private_segment_size,
                                    kernel.group_segment_size)
        if bytes(packet) != bytes(built):
            raise SystemExit("FAILED: the hand-built packet differs from aql.kernel_dispatch")
        print("packet bytes (identical to aql.kernel_dispatch):")
        for row in range(0, 64, 16):
            print(f"  +{row:02d}  {packet[row:row + 16].hex(' ')}")
        print(aql.explain(bytes(packet)))

        queue = gpu.create_queue(size=64)
        index = queue.reserve(1)              # hsa_queue_add_write_index_scacq_screl + space check
        slot = index % queue.size
        before = aql.decode_header(int(queue.ring[slot, :2].view(np.uint16)[0]))
        print(f"\nqueue {queue.id}: ring at {queue.base_address:#x}, {queue.size} slots; "
              f"packet index {index} -> slot {slot}, which reads {before.type_name}")
        # Body (bytes 4..63), then header|setup: one 32-bit store, the release (Queue.write).
        word, body = struct.unpack_from("<I", packet)[0], bytes(packet[4:])
        queue.write(index, word, body)
        print(f"wrote bytes 4..63, then the word {word:#010x} = header {header:#06x} | setup << 16")
        queue.ring_doorbell(index)            # hsa_signal_store_screlease(doorbell_signal, index)
        done.wait(Condition.LT, 1, timeout=30.0, abort=queue.check)
        print(f"completion signal is {done.load()}; read index {queue.load_read_index()}")

        result = out.copy_to(dtype=np.float32)
        expected = np.arange(N, dtype=np.float32) + 100.0
        if not np.array_equal(result, expected):
            bad = int(np.count_nonzero(result != expected))
            raise SystemExit(f"FAILED: {bad} of {N} outputs are wrong")
        print(f"out = a + b verified for all {N} elements (last: {result[-1]})")
        queue.close()
        print("OK: one hand-built packet ran and its result verified")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("auto", "sim", "rocr", "rocr-sim"), default=None,
                        help="HSA runtime (default: auto, or HSAPY_BACKEND)")
    try:
        main(parser.parse_args().backend)
    except hsapy.BackendUnavailableError as exc:    # e.g. --backend rocr without an AMD GPU
        raise SystemExit(f"{parser.prog}: {exc}") from None
