"""A small HIP host program -- vector add on two streams, timed with events -- ported line by
line to hsapy.hip. Each original HIP line is the comment above its port.

    python3 examples/hip_port_vector_add_two_streams.py            # the simulator
    python3 examples/hip_port_vector_add_two_streams.py --backend rocr
    python3 examples/hip_port_vector_add_two_streams.py --explain  # every packet, explained

What the HIP runtime does underneath each call is in docs/hip-on-aql.md. In short: each stream
is an AQL queue; copies go to the copy engine between two barrier-AND packets; the kernel is one
dispatch packet with the barrier bit; an event is a barrier-AND packet whose completion signal
and profiling timestamps are the event.
"""
from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from hsapy import BackendUnavailableError, toolchain
from hsapy.hip import HipRuntime, hipMemcpyKind

H2D = hipMemcpyKind.hipMemcpyHostToDevice
D2H = hipMemcpyKind.hipMemcpyDeviceToHost

# The device code, unchanged from the HIP program (built by clang-19 for the device's target).
KERNEL_SOURCE = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
"""

N = 1 << 12          # elements per stream (each stream adds its own chunk)
THREADS = 256
STREAMS = 2


def main(backend: str = "sim", explain: bool = False) -> dict[str, Any]:
    """Run the port; returns the per-stream results check and the event timings (ms).
    With ``explain``, prints every packet each HIP call published (aql.explain)."""
    with HipRuntime(backend=backend, trace=explain) as hip:
        # int device = 0; hipSetDevice(device);
        hip.setDevice(0)
        # hipDeviceProp_t prop; hipGetDeviceProperties(&prop, device);
        prop = hip.getDeviceProperties(0)
        # hipModuleLoadData(&module, code_object);
        # hipModuleGetFunction(&vector_add, module, "vector_add");
        arch = prop.gcnArchName.split(":")[0]
        module = hip.moduleLoadData(toolchain.build_hip(KERNEL_SOURCE, arch))
        vector_add = hip.moduleGetFunction(module, "vector_add")

        # size_t bytes = N * sizeof(float);
        nbytes = N * 4
        # float *h_a[2], *h_b[2], *h_c[2]; hipHostMalloc(&h_a[i], bytes); ... (pinned memory)
        h_a = [hip.hostMalloc(nbytes) for _ in range(STREAMS)]
        h_b = [hip.hostMalloc(nbytes) for _ in range(STREAMS)]
        h_c = [hip.hostMalloc(nbytes) for _ in range(STREAMS)]
        # for (int j = 0; j < N; j++) { h_a[i][j] = j + i * N; h_b[i][j] = 2.0f * j; }
        for i in range(STREAMS):
            h_a[i].numpy(np.float32)[:N] = np.arange(N, dtype=np.float32) + i * N
            h_b[i].numpy(np.float32)[:N] = 2.0 * np.arange(N, dtype=np.float32)
        # float *d_a[2], *d_b[2], *d_c[2]; hipMalloc(&d_a[i], bytes); ...
        d_a = [hip.malloc(nbytes) for _ in range(STREAMS)]
        d_b = [hip.malloc(nbytes) for _ in range(STREAMS)]
        d_c = [hip.malloc(nbytes) for _ in range(STREAMS)]

        # hipStream_t stream[2]; hipStreamCreate(&stream[i]);
        stream = [hip.streamCreate() for _ in range(STREAMS)]
        # hipEvent_t start, stop[2], all_done; hipEventCreate(&start); ...
        start = hip.eventCreate()
        stop = [hip.eventCreate() for _ in range(STREAMS)]
        all_done = hip.eventCreate()

        # hipEventRecord(start, stream[0]);
        hip.eventRecord(start, stream[0])
        # hipStreamWaitEvent(stream[1], start, 0);    // both streams begin after 'start'
        hip.streamWaitEvent(stream[1], start, 0)
        # int blocks = (N + THREADS - 1) / THREADS;
        blocks = (N + THREADS - 1) // THREADS
        for i in range(STREAMS):
            # hipMemcpyAsync(d_a[i], h_a[i], bytes, hipMemcpyHostToDevice, stream[i]);
            hip.memcpyAsync(d_a[i], h_a[i], nbytes, H2D, stream[i])
            # hipMemcpyAsync(d_b[i], h_b[i], bytes, hipMemcpyHostToDevice, stream[i]);
            hip.memcpyAsync(d_b[i], h_b[i], nbytes, H2D, stream[i])
            # hipLaunchKernelGGL(vector_add, dim3(blocks), dim3(THREADS), 0, stream[i],
            #                    d_a[i], d_b[i], d_c[i], N);
            hip.launchKernelGGL(vector_add, blocks, THREADS, 0, stream[i],
                                d_a[i], d_b[i], d_c[i], N)
            # hipMemcpyAsync(h_c[i], d_c[i], bytes, hipMemcpyDeviceToHost, stream[i]);
            hip.memcpyAsync(h_c[i], d_c[i], nbytes, D2H, stream[i])
            # hipEventRecord(stop[i], stream[i]);
            hip.eventRecord(stop[i], stream[i])
        # hipStreamWaitEvent(stream[0], stop[1], 0);  // join: stream 0 waits for stream 1
        hip.streamWaitEvent(stream[0], stop[1], 0)
        # hipEventRecord(all_done, stream[0]);
        hip.eventRecord(all_done, stream[0])
        # hipEventSynchronize(all_done);
        hip.eventSynchronize(all_done)

        # float ms[2]; hipEventElapsedTime(&ms[i], start, stop[i]);
        ms = [hip.eventElapsedTime(start, stop[i]) for i in range(STREAMS)]
        # float total; hipEventElapsedTime(&total, start, all_done);
        total = hip.eventElapsedTime(start, all_done)

        # for each j: if (h_c[i][j] != h_a[i][j] + h_b[i][j]) errors++;
        correct = [bool(np.array_equal(h_c[i].numpy(np.float32)[:N],
                                       h_a[i].numpy(np.float32)[:N] + h_b[i].numpy(np.float32)[:N]))
                   for i in range(STREAMS)]
        # hipError_t err = hipGetLastError();
        last_error = hip.getLastError()
        for entry in hip.trace or []:
            print(entry, end="\n\n")

        # hipEventDestroy(...); hipStreamDestroy(stream[i]); hipFree(d_*[i]); hipHostFree(h_*[i]);
        for event in [start, all_done, *stop]:
            hip.eventDestroy(event)
        for s in stream:
            hip.streamDestroy(s)
        for buffer in d_a + d_b + d_c:
            hip.free(buffer)
        for buffer in h_a + h_b + h_c:
            hip.hostFree(buffer)
        return {"device": prop.name, "arch": arch, "backend": hip.runtime.backend,
                "correct": correct, "stream_ms": ms, "total_ms": total,
                "last_error": last_error.name}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="sim", choices=["sim", "rocr", "auto"])
    parser.add_argument("--explain", action="store_true",
                        help="print every packet the HIP calls published")
    options = parser.parse_args()
    try:
        print(json.dumps(main(options.backend, options.explain), indent=2))
    except BackendUnavailableError as exc:    # e.g. --backend rocr without an AMD GPU
        raise SystemExit(f"{parser.prog}: {exc}") from None
