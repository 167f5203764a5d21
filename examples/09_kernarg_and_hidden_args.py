"""Step 9: the kernarg segment of a HIP kernel -- explicit arguments, then the hidden (implicit)
ones -- and what goes wrong when a launcher leaves the hidden ones at zero.

    python3 examples/09_kernarg_and_hidden_args.py [--backend auto|sim|rocr|rocr-sim]

Code object v5 kernels find blockDim, gridDim and friends in hidden arguments after the explicit
ones (LLVM AMDGPUUsage "Code Object V5 Metadata" / "Hidden kernel arguments";
docs/hsa-abi.md "Hidden (implicit) kernel arguments"). Their offsets and presence
come from the metadata (.args[].value_kind = hidden_*); HIP's runtime fills them, and so must
any AQL launcher. Left at zero, blockDim.x reads 0 inside the kernel: the dispatch completes
normally and computes garbage. This step shows it with vector_add_v0 from kernels/:
    i = blockIdx.x * blockDim.x + threadIdx.x;  if (i < n) out[i] = a[i] + b[i];
"""
from __future__ import annotations

import argparse

import numpy as np

import hsapy
from hsapy import aql, operators, toolchain
from hsapy.signal import Condition

N, BLOCK = 1000, 256
GRID = -(-N // BLOCK) * BLOCK           # 4 blocks of 256 (HIP launches whole blocks)


def code_object(target: str) -> bytes:
    """The suite's prebuilt HIP build for this target, else a fresh build with clang/hipcc."""
    op = operators.operator("vector_add")
    prebuilt = operators.prebuilt_path(op, target)
    if prebuilt.is_file():
        return prebuilt.read_bytes()
    return toolchain.build_hip(operators.source_path(op), target=target)


def main(backend: str | None) -> None:
    with hsapy.Runtime(backend=backend) as rt:
        gpu = rt.gpu_agents[0]
        kernel = rt.load(code_object(gpu.target), gpu).kernel("vector_add_v0")
        layout = kernel.layout
        print(f"backend {rt.backend}, GPU {gpu.name}; {kernel.signature}")
        a, b, out = (gpu.device_pool.allocate(4 * N) for _ in range(3))
        a.copy_from(np.arange(N, dtype=np.float32))
        b.copy_from(np.full(N, 0.25, np.float32))
        expected = np.arange(N, dtype=np.float32) + 0.25

        packed = layout.pack([a, b, out, N], grid=GRID, workgroup=BLOCK)
        hidden_start = min(h.offset for h in layout.hidden)
        print(f"kernarg segment: {layout.size} bytes; explicit arguments in bytes "
              f"0..{hidden_start - 1}, hidden from {hidden_start} (this kernel declares "
              f"{len(layout.hidden)} of the v5 hidden kinds; the rest of the area stays 0)")
        print("  offset size  kind                     value for grid 1024, workgroup 256")
        for row in layout.rows():
            raw = packed[row["offset"]:row["offset"] + row["size"]]
            value = int.from_bytes(raw, "little")
            shown = f"{value:#x}" if row["type"] == "ptr" else str(value)
            label = row["name"] or row["kind"]
            print(f"  {row['offset']:>6} {row['size']:>4}  {label:<24} {shown}")

        queue = gpu.create_queue(size=64)
        kernarg = gpu.kernarg_pool.allocate(layout.size)
        if kernarg.pool.access(gpu) == "after allow_access":
            kernarg.allow_access([gpu])
        done = rt.create_signal(1)

        def run(segment: bytes) -> np.ndarray:
            """One dispatch of vector_add_v0 with these kernarg bytes; returns out."""
            out.copy_from(np.full(N, np.nan, np.float32))
            kernarg.numpy()[:len(segment)] = np.frombuffer(segment, np.uint8)
            done.store(1)
            queue.publish(aql.kernel_dispatch(kernel.kernel_object, GRID, BLOCK,
                                              kernarg.address, done.handle))
            done.wait(Condition.LT, 1, timeout=30.0, abort=queue.check)
            return out.copy_to(dtype=np.float32)

        good = run(packed)
        if not np.array_equal(good, expected):
            raise SystemExit("FAILED: with every hidden argument filled the result is wrong")
        print(f"\nhidden arguments filled: out == a + b for all {N} elements")

        zeroed = packed[:hidden_start] + bytes(layout.size - hidden_start)
        bad = run(zeroed)
        right = int(np.count_nonzero(bad == expected))
        untouched = int(np.count_nonzero(np.isnan(bad)))
        print(f"hidden arguments zeroed: the dispatch completed normally, but only {right} of "
              f"{N} outputs are right and {untouched} were never written")
        print(f"  blockDim.x read 0, so every block computed i = threadIdx.x: elements "
              f"0..{BLOCK - 1} were written {GRID // BLOCK} times, the rest never")
        if right == N:
            raise SystemExit("FAILED: zeroed hidden arguments went unnoticed")
        if right != BLOCK or untouched != N - BLOCK:
            raise SystemExit(f"FAILED: expected exactly {BLOCK} elements written, got {right}")
        queue.close()
        print("OK: the breakage was detected; fill hidden arguments from the metadata")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("auto", "sim", "rocr", "rocr-sim"), default=None,
                        help="HSA runtime (default: auto, or HSAPY_BACKEND)")
    try:
        main(parser.parse_args().backend)
    except hsapy.BackendUnavailableError as exc:    # e.g. --backend rocr without an AMD GPU
        raise SystemExit(f"{parser.prog}: {exc}") from None
