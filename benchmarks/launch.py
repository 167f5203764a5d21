"""Host cost of publishing a kernel dispatch, per mode, as JSON lines.

    python benchmarks/launch.py [--backend sim|rocr] [--target gfx942] [--repeats 20]

Each line: mode (plain, prepared, prepared_result, batch256, c_floor), doorbell (whether the
timed cost includes ringing the doorbell), api (the call timed), median_us, p5_us, p95_us,
ratio_to_floor, n, simulated. ``prepared`` times ``prepared.submit()``, the prepared fast path
(take a kernarg slot, pack, publish; it returns the packet index); ``prepared_result`` times
``prepared()``, the same plus building the DispatchResult a caller waits on.

What is timed is the publishing thread only, in bursts that fit the queue: between bursts the
doorbell is rung and completion awaited (untimed), so a slow consumer never shows up as host
cost. On the simulator the executor is the null executor (packets are consumed, kernels are not
run). ``c_floor`` is a C loop doing the same ring writes (reserve an index, copy the 60-byte
body, release-store header|setup) compiled at run time with the system C compiler through cffi:
the cost of the protocol itself with no Python in the way.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from functools import partial
from pathlib import Path

from hsapy.bench import BURST
from hsapy.bench import summarize as _stats

C_FLOOR_SOURCE = r"""
#include <stdint.h>
#include <string.h>
/* The AQL producer protocol without a runtime: reserve, write bytes 4..63, release-store the
   first 32 bits. `write_index` stands in for hsa_queue_add_write_index_scacq_screl. */
double publish_loop(uint8_t *ring, uint32_t size, const uint8_t *body, uint32_t word,
                    uint64_t *write_index, uint32_t count, double *per_packet_ns,
                    uint64_t (*now)(void)) {
    for (uint32_t i = 0; i < count; i++) {
        uint64_t t0 = now();
        uint64_t index = __atomic_fetch_add(write_index, 1, __ATOMIC_ACQ_REL);
        uint8_t *slot = ring + (index & (size - 1)) * 64;
        memcpy(slot + 4, body, 60);
        __atomic_store_n((uint32_t *)slot, word, __ATOMIC_RELEASE);
        per_packet_ns[i] = (double)(now() - t0);
    }
    return 0.0;
}
#include <time.h>
uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
"""


def c_floor(repeats: int) -> dict[str, float]:
    """Per-packet cost of the same ring writes in C (cffi, compiled here)."""
    import cffi

    builder = cffi.FFI()
    builder.cdef("double publish_loop(uint8_t *, uint32_t, const uint8_t *, uint32_t, uint64_t *,"
                 " uint32_t, double *, uint64_t (*)(void)); uint64_t monotonic_ns(void);")
    builder.set_source("_hsapy_launch_floor", C_FLOOR_SOURCE, extra_compile_args=["-O2"])
    with tempfile.TemporaryDirectory() as tmp:
        path = builder.compile(tmpdir=tmp, verbose=False)
        sys.path.insert(0, str(Path(path).parent))
        try:
            module = __import__("_hsapy_launch_floor")
        finally:
            sys.path.pop(0)
    ffi, lib = module.ffi, module.lib
    ring = ffi.new("uint8_t[]", BURST * 64)
    body = ffi.new("uint8_t[]", bytes(range(60)))
    index = ffi.new("uint64_t *")
    times = ffi.new("double[]", BURST)
    samples: list[float] = []
    for _ in range(repeats):
        lib.publish_loop(ring, BURST, body, 0x00031402, index, BURST, times, lib.monotonic_ns)
        samples.extend(times[i] * 1e-9 for i in range(BURST))
    # The timer's own cost is inside each sample; report it as measured.
    return _stats(samples)


def python_modes(backend: str, target: str, repeats: int) -> list[dict]:
    from hsapy.bench import LaunchSetup, time_batches, time_bursts
    from hsapy.runtime import Runtime

    rows = []
    with Runtime(backend=backend, executor="null" if backend == "sim" else None) as rt:
        with LaunchSetup(rt, target) as setup:
            empty, queue, wg = setup.kernel, setup.queue, setup.workgroup
            prepared = setup.prepared
            # plain: validate + build the packet + pack + publish + doorbell, per call
            samples = time_bursts(queue, lambda: empty.launch(queue, [], wg, wg, wait=False),
                                  repeats)
            rows.append({"mode": "plain", "doorbell": True, **_stats(samples)})
            # prepared: the fast path, prepared.submit() (kernarg slot, pack, publish; returns
            # the packet index), then prepared() which also builds a DispatchResult
            # (functools.partial, not a lambda: a C-level call adds no Python frame of the
            # harness's own to what is timed)
            submit = prepared.submit
            samples = time_bursts(queue, partial(submit, doorbell=False), repeats)
            rows.append({"mode": "prepared", "doorbell": False, "api": "prepared.submit()",
                         **_stats(samples)})
            samples = time_bursts(queue, partial(submit, doorbell=True), repeats)
            rows.append({"mode": "prepared", "doorbell": True, "api": "prepared.submit()",
                         **_stats(samples)})
            samples = time_bursts(queue, partial(prepared, doorbell=False), repeats)
            rows.append({"mode": "prepared_result", "doorbell": False, "api": "prepared()",
                         **_stats(samples)})
            per_packet = time_batches(prepared, repeats, BURST)
            rows.append({"mode": "batch256", "doorbell": True, "api": "prepared.batch()",
                         **_stats(per_packet)})
    for row in rows:
        row["simulated"] = backend == "sim"
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="sim", choices=("sim", "rocr"))
    parser.add_argument("--target", default="gfx942")
    parser.add_argument("--repeats", type=int, default=20, help="bursts of 256 per mode")
    args = parser.parse_args(argv)
    rows = python_modes(args.backend, args.target, args.repeats)
    floor = c_floor(args.repeats)
    rows.append({"mode": "c_floor", "doorbell": False, **floor, "simulated": False})
    for row in rows:
        row["ratio_to_floor"] = row["median_us"] / floor["median_us"] if floor["median_us"] else None
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
