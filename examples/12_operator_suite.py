"""Step 12: the hello-gpu operator suite, briefly -- every operator and variant once, at a small
size, through raw AQL dispatch, checked against FP64 references.

    python3 examples/12_operator_suite.py [--backend auto|sim|rocr|rocr-sim]

The suite is data (hsapy/operators.py; what it is: docs/operator-suite.md): each operator
has sizes, deterministic inputs, an FP64 reference and a tolerance; each variant is a plan of
dispatches (blocks x block, dynamic LDS, arguments by buffer name). The kernels are the HIP
sources in kernels/ (prebuilt code objects in kernels/prebuilt). Running a row is what the
previous steps did: upload, NaN-fill outputs, one dispatch per plan entry, download, compare.
`hsapy run --all` runs the full matrix (sizes, input kinds, llvmlite route, every target).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import hsapy
from hsapy import operators, toolchain

# Small sizes that still cross block, wave and tile edges (the full ones: hsapy run --help).
SIZES = {"vector_add": "1027", "reduction": "1027", "softmax": "8x1023", "gemm": "33x32x17",
         "attention": "16x65", "rmsnorm": "8x129"}


def code_object(op: operators.Operator, target: str) -> bytes:
    prebuilt = operators.prebuilt_path(op, target)
    if prebuilt.is_file():
        return prebuilt.read_bytes()
    return toolchain.build_hip(operators.source_path(op), target=target)


def run_variant(gpu, queue, kernels, op, variant, size) -> operators.CheckResult:
    """One row: buffers up, the variant's dispatches in order, outputs down, checked."""
    device = operators.Device(gpu.target, gpu.wavefront_size, gpu.compute_unit_count)
    problem = operators.make_problem(op, variant, size, op.inputs_kinds[0], device)
    buffers = {}
    for name, buffer in problem.buffers.items():
        buffers[name] = gpu.device_pool.allocate(max(buffer.data.nbytes, 4))
        buffers[name].copy_from(np.ascontiguousarray(buffer.data))
    for dispatch in variant.plan(size, device):
        args = [buffers[a] if isinstance(a, str) else a for a in dispatch.args]
        kernels[dispatch.kernel].launch(queue, args, grid=dispatch.grid,
                                        workgroup=dispatch.block,
                                        dynamic_lds=dispatch.dynamic_lds, timeout=120.0)
    outputs = {}
    for name in problem.reference:
        like = problem.buffers[name].data
        outputs[name] = buffers[name].copy_to(dtype=like.dtype)[:like.size].reshape(like.shape)
    for buffer in buffers.values():
        buffer.close()
    return operators.check_outputs(outputs, problem.reference, op.tolerance)


def main(backend: str | None) -> None:
    with hsapy.Runtime(backend=backend) as rt:
        gpu = rt.gpu_agents[0]
        queue = gpu.create_queue(size=64)
        print(f"backend {rt.backend}, GPU {gpu.name} ({gpu.compute_unit_count} CUs, "
              f"wave{gpu.wavefront_size})\n")
        print(f"{'operator':<11} {'variant':<15} {'size':<9} {'max err':>9} {'tolerance':>9}  "
              f"result  {'host ms':>7}")
        failures = []
        rows = 0
        for op in operators.OPERATORS.values():
            size = operators.parse_size(SIZES[op.name], op)
            executable = rt.load(code_object(op, gpu.target), gpu)
            kernels = {name: executable.kernel(name) for name in op.kernel_names}
            for variant in op.variants:
                started = time.perf_counter()
                check = run_variant(gpu, queue, kernels, op, variant, size)
                elapsed = 1e3 * (time.perf_counter() - started)
                rows += 1
                print(f"{op.name:<11} {variant.name:<15} {operators.size_label(size):<9} "
                      f"{check.max_err:>9.3g} {check.tolerance:>9.3g}  "
                      f"{'ok' if check.ok else 'FAIL':<6}  {elapsed:>7.1f}")
                if not check.ok:
                    failures.append(f"{op.name}/{variant.name} (worst {check.worst})")
            executable.close()
        queue.close()
        note = " (simulated: host time of the interpreter)" if rt.backend == "sim" else ""
        print(f"\n{rows - len(failures)}/{rows} variants passed{note}")
        if failures:
            raise SystemExit("FAILED: " + ", ".join(failures))
        print(f"OK: all {rows} operator variants matched their FP64 references")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("auto", "sim", "rocr", "rocr-sim"), default=None,
                        help="HSA runtime (default: auto, or HSAPY_BACKEND)")
    try:
        main(parser.parse_args().backend)
    except hsapy.BackendUnavailableError as exc:    # e.g. --backend rocr without an AMD GPU
        raise SystemExit(f"{parser.prog}: {exc}") from None
