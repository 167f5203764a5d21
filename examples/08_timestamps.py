"""Step 8: time -- the system timestamp, dispatch start/end from the packet processor, the GPU's
own counters read inside a kernel, and conversion of ticks to microseconds.

    python3 examples/08_timestamps.py [--backend auto|sim|rocr|rocr-sim]

HSA calls: hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY / _TIMESTAMP) (hsa.h);
hsa_amd_profiling_set_profiler_enabled(queue, 1) and
hsa_amd_profiling_get_dispatch_time(agent, completion_signal, &time) (hsa_ext_amd.h): with
profiling on, the packet processor records start/end in the packet's completion signal; ROCr
returns them in the system timestamp domain, so  us = ticks * 1e6 / timestamp_frequency.
In the kernel, s_memtime (shader clock) and s_memrealtime (constant-rate clock) are GPU counters
in their own domains (asm/kernels.py "timestamp"). On the simulator all times are host time.
"""
from __future__ import annotations

import argparse

import numpy as np

import hsapy
from hsapy import aql
from hsapy.asm import kernels
from hsapy.signal import Condition

ITEMS = 256
SLACK_S = 0.005       # host reads bracket the dispatch; allow for clock-domain conversion


def main(backend: str | None) -> None:
    with hsapy.Runtime(backend=backend) as rt:
        gpu = rt.gpu_agents[0]
        frequency = rt.timestamp_frequency
        us = 1e6 / frequency
        print(f"backend {rt.backend}, GPU {gpu.name}; system timestamp {frequency} Hz "
              f"= {us * 1e3:g} ns per tick")
        kernel = rt.load(kernels.build("timestamp", gpu.target), gpu).kernel("timestamp")
        counters = rt.system_pool.allocate(16 * ITEMS)          # 2 x u64 per work-item
        if rt.system_pool.access(gpu) == "after allow_access":
            counters.allow_access([gpu])
        counters.numpy(np.uint64)[:] = 0
        kernarg = gpu.kernarg_pool.allocate(kernel.kernarg_size)
        if kernarg.pool.access(gpu) == "after allow_access":
            kernarg.allow_access([gpu])
        packed = kernel.layout.pack([counters, ITEMS], grid=ITEMS, workgroup=64)
        kernarg.numpy()[:len(packed)] = np.frombuffer(packed, np.uint8)

        queue = gpu.create_queue(size=64)
        queue.enable_profiling()                                # before the packet is published
        done = rt.create_signal(1)
        packet = aql.kernel_dispatch(kernel.kernel_object, ITEMS, 64, kernarg.address,
                                     done.handle)
        host_before = rt.timestamp()
        queue.publish(packet)
        done.wait(Condition.LT, 1, timeout=30.0, abort=queue.check)
        host_after = rt.timestamp()
        times = rt.ffi.new("hsa_amd_profiling_dispatch_time_t *")
        status = rt.lib.hsa_amd_profiling_get_dispatch_time({"handle": gpu.handle},
                                                            done.cdata, times)
        start, end = int(times.start), int(times.end)
        print(f"host:     published at tick {host_before}, saw completion at {host_after} "
              f"({(host_after - host_before) * us:.1f} us)")
        print(f"dispatch: start {start}, end {end} -> {(end - start) * us:.1f} us"
              + (" (simulated)" if rt.backend == "sim" else ""))
        slack = int(SLACK_S * frequency)
        if status != 0 or not host_before - slack <= start <= end <= host_after + slack:
            raise SystemExit(f"FAILED: dispatch times {start}..{end} (status {status:#x}) are "
                             f"not inside the host's {host_before}..{host_after}")

        values = counters.numpy(np.uint64).reshape(ITEMS, 2)
        cycles, realtime = values[:, 0], values[:, 1]
        print(f"in-kernel s_memtime    {int(cycles.min())} .. {int(cycles.max())}")
        print(f"in-kernel s_memrealtime {int(realtime.min())} .. {int(realtime.max())} "
              f"(spread over {ITEMS} work-items: {int(realtime.max() - realtime.min())} ticks)")
        if not (np.all(cycles > 0) and np.all(realtime > 0)):
            raise SystemExit("FAILED: some work-items did not write their counters")

        # Back-to-back dispatches; the barrier bit makes each start after the previous ended.
        prepared = kernel.prepare(queue, grid=ITEMS, workgroup=64, barrier=True)
        results = [prepared(counters, ITEMS) for _ in range(4)]
        for result in results:
            result.wait(timeout=30.0)
        print("four dispatches with the barrier bit:")
        print("   #   start (us)   duration (us)   gap after previous (us)")
        origin = results[0].start
        for i, r in enumerate(results):
            gap = "" if i == 0 else f"{(r.start - results[i - 1].end) * us:10.1f}"
            line = f"  {i:>2} {(r.start - origin) * us:12.1f} {r.duration_us:15.1f}   {gap}"
            print(line.rstrip())
            if i and r.start < results[i - 1].end:
                raise SystemExit(f"FAILED: dispatch {i} started before dispatch {i - 1} ended")
        queue.close()
        print("OK: timestamps are ordered and convert to microseconds with the system frequency")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("auto", "sim", "rocr", "rocr-sim"), default=None,
                        help="HSA runtime (default: auto, or HSAPY_BACKEND)")
    try:
        main(parser.parse_args().backend)
    except hsapy.BackendUnavailableError as exc:    # e.g. --backend rocr without an AMD GPU
        raise SystemExit(f"{parser.prog}: {exc}") from None
