"""Step 2: allocate host and device memory and move bytes with the GPU's copy engine.

    python3 examples/02_memory_and_async_copy.py [--backend auto|sim|rocr|rocr-sim]

HSA calls (hsa_ext_amd.h):
  hsa_amd_memory_pool_allocate / _free       -> pool.allocate(n), buffer.close()
  hsa_amd_agents_allow_access                -> buffer.allow_access([gpu])
  hsa_amd_memory_async_copy(dst, dst_agent, src, src_agent, size, num_deps, deps, completion)
                                             -> rt.copy(dst, src, n, deps=[...], completion=sig)
  hsa_amd_memory_fill                        -> buffer.fill(word)
The copy is asynchronous: it decrements its completion signal by 1 when the bytes have landed,
and it starts only once every dependency signal is below 1 -- the copy engine waits, not the host.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import hsapy
from hsapy.signal import Condition

N = 1 << 16                      # floats per buffer (256 KiB)


def main(backend: str | None) -> None:
    with hsapy.Runtime(backend=backend) as rt:
        gpu = rt.gpu_agents[0]
        nbytes = 4 * N
        print(f"backend {rt.backend}, GPU {gpu.name}; {nbytes} bytes per buffer")

        # Host memory: the CPU agent's fine-grained pool. The host reads and writes it directly
        # (buffer.numpy() is a zero-copy view); the GPU may use it once access is granted.
        host_in = rt.system_pool.allocate(nbytes)
        host_out = rt.system_pool.allocate(nbytes)
        for buffer in (host_in, host_out):
            if rt.system_pool.access(gpu) == "after allow_access":   # DISALLOWED_BY_DEFAULT
                buffer.allow_access([gpu])
        # Device memory: the GPU's coarse-grained pool (VRAM). The host may not touch it.
        dev_a = gpu.device_pool.allocate(nbytes)
        dev_b = gpu.device_pool.allocate(nbytes)
        print(f"host buffers at {host_in.address:#x}, {host_out.address:#x} "
              f"({rt.system_pool.segment}, fine-grained)")
        print(f"device buffers at {dev_a.address:#x}, {dev_b.address:#x} "
              f"(coarse-grained, host access: {gpu.device_pool.is_host_accessible})")

        data = np.arange(N, dtype=np.float32) * 0.5
        host_in.numpy(np.float32)[:] = data
        host_out.numpy(np.float32)[:] = np.nan

        # A gate signal the host controls, and one completion signal per copy.
        gate = rt.create_signal(1)
        to_device = rt.create_signal(1)
        across = rt.create_signal(1)
        to_host = rt.create_signal(1)
        # Three copies queued at once, chained by their signals: host -> A waits for the gate,
        # A -> B waits for the first copy, B -> host waits for the second.
        rt.copy(dev_a, host_in, nbytes, deps=[gate], completion=to_device)
        rt.copy(dev_b, dev_a, nbytes, deps=[to_device], completion=across)
        rt.copy(host_out, dev_b, nbytes, deps=[across], completion=to_host)
        time.sleep(0.02)
        pending = [s.load() for s in (to_device, across, to_host)]
        print(f"three copies issued; with the gate closed their signals read {pending}")
        if pending != [1, 1, 1]:
            raise SystemExit("FAILED: a copy ran before its dependency signal dropped below 1")

        started = time.perf_counter()
        gate.store(0)                                        # open the gate: the chain runs
        to_host.wait(Condition.LT, 1, timeout=10.0)          # hsa_signal_wait_scacquire
        print(f"gate opened; all three copies done in {1e3 * (time.perf_counter() - started):.2f} "
              f"ms (host wall-clock); signals {[s.load() for s in (to_device, across, to_host)]}")
        if not np.array_equal(host_out.numpy(np.float32), data):
            raise SystemExit("FAILED: host -> device -> device -> host did not round-trip")
        print(f"round trip verified: {N} floats, first {host_out.numpy(np.float32)[:4]}")

        # The synchronous conveniences: copy_from / copy_to stage through host memory with the
        # same async copy (and a pooled signal); fill writes 32-bit words on the device.
        dev_a.fill(0x3F800000)                               # 1.0f everywhere
        ones = dev_a.copy_to(dtype=np.float32)
        dev_b.copy_from(data[::-1].copy())
        reversed_back = dev_b.copy_to(dtype=np.float32)
        if not (np.all(ones == 1.0) and np.array_equal(reversed_back, data[::-1])):
            raise SystemExit("FAILED: fill or copy_from/copy_to gave wrong bytes")
        print("hsa_amd_memory_fill and copy_from/copy_to verified")

        for thing in (gate, to_device, across, to_host, host_in, host_out, dev_a, dev_b):
            thing.close()
        print("OK: memory allocated, copied asynchronously in dependency order, verified")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("auto", "sim", "rocr", "rocr-sim"), default=None,
                        help="HSA runtime (default: auto, or HSAPY_BACKEND)")
    try:
        main(parser.parse_args().backend)
    except hsapy.BackendUnavailableError as exc:    # e.g. --backend rocr without an AMD GPU
        raise SystemExit(f"{parser.prog}: {exc}") from None
