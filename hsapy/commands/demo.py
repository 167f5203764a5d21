"""``hsapy demo``: a narrated tour of one dispatch, then the operator suite's summary.

agents -> code object -> kernarg -> packet -> doorbell -> completion -> verified result, on a
GPU when ROCr reports one, otherwise on the simulator (and it says so).
"""
from __future__ import annotations

import argparse
import sys
import time

from hsapy.commands._args import seconds
from hsapy.runtime import BACKENDS

HELP = ("a narrated tour of one kernel dispatch (agents -> packet -> doorbell -> result), then "
        "the operator suite")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=BACKENDS, default=None,
                        help="runtime backend (default: HSAPY_BACKEND or auto)")
    parser.add_argument("--target", default=None, help="GPU target to use (default: the first)")
    parser.add_argument("--no-suite", action="store_true",
                        help="skip the operator suite summary after the tour")
    parser.add_argument("--suite-budget", type=seconds, default=30.0, metavar="SECONDS",
                        help="time budget for the operator suite summary (default 30 s)")


def _step(number: int, title: str) -> None:
    print(f"\n[{number}] {title}")


def _say(text: str) -> None:
    print(f"    {text}")


def tour(runtime, target: str | None) -> bool:
    """The narrated dispatch; returns True when the result verified."""
    import numpy as np

    from hsapy import aql, toolchain
    from hsapy.asm import kernels

    simulated = runtime.is_simulated
    _step(1, "Agents")
    if runtime.backend == "rocr-sim":
        where = "ROCr, the real HSA runtime, over hsapy's simulated KFD thunk"
    elif simulated:
        where = f"the hsapy simulator ({runtime.backend_reason})"
    else:
        where = "ROCr, the real HSA runtime"
    _say(f"runtime: {where}")
    for agent in runtime.agents:
        extra = (f", wave{agent.wavefront_size}, {agent.compute_unit_count} CUs, "
                 f"{agent.lds_size // 1024} KiB LDS") if agent.is_gpu else ""
        _say(f"{agent.device_type} agent {agent.name}{extra}")
    agent = runtime.gpu(target)
    _say(f"using {agent.name} ({agent.isa_names[0]})")

    _step(2, "Code object")
    started = time.perf_counter()
    shipped: list[str] = []
    with toolchain.observe(lambda event: shipped.append(event.message)
                           if event.kind == "prebuilt" else None):
        code = kernels.build("vector_add", agent.target)
    executable = runtime.load(code, agent)
    kernel = executable.kernel("vector_add")
    how = "prebuilt by llvmlite + ld.lld and shipped with hsapy" if shipped \
        else "built with llvmlite + ld.lld"
    _say(f"vector_add {how} for {agent.target} "
         f"({len(code)} bytes, {1e3 * (time.perf_counter() - started):.0f} ms incl. cache)")
    _say(f"loaded through the runtime's loader: kernel_object (descriptor) at "
         f"{kernel.kernel_object:#x}")
    _say(f"signature {kernel.signature}; kernarg segment {kernel.kernarg_size} bytes "
         f"({len(kernel.layout.hidden)} hidden arguments after the explicit ones)")

    _step(3, "Memory and kernel arguments")
    n = 4096
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 0.5, np.float32)
    buffers = [agent.device_pool.allocate(4 * n) for _ in range(3)]
    buffers[0].copy_from(a)
    buffers[1].copy_from(b)
    buffers[2].copy_from(np.full(n, np.nan, np.float32))
    _say(f"a, b, out: {n} floats each in {agent.name}'s coarse-grained pool "
         "(copied in with hsa_amd_memory_async_copy; out pre-filled with NaN)")
    workgroup = 256
    grid = n
    kernarg = agent.kernarg_pool.allocate(max(kernel.kernarg_size, 64))
    packed = kernel.layout.pack([*buffers, n], grid, workgroup)
    kernarg.numpy()[:len(packed)] = np.frombuffer(packed, np.uint8)
    hidden = kernel.layout.hidden_values(kernel.layout.dispatch(grid, workgroup))
    shown = {k: v for k, v in hidden.items() if v and k.startswith("hidden_")}
    _say(f"kernarg at {kernarg.address:#x}: 3 pointers + n, then hidden {shown}")

    _step(4, "The AQL packet")
    queue = agent.create_queue(size=max(64, agent.queue_min_size))
    queue.enable_profiling()
    done = runtime.create_signal(1)
    packet = aql.kernel_dispatch(kernel.kernel_object, grid, workgroup, kernarg.address,
                                 done.handle, kernel.private_segment_size,
                                 kernel.group_segment_size)
    for line in aql.explain(bytes(packet)).splitlines()[1:]:
        _say(line)

    _step(5, "Publish and ring the doorbell")
    index = queue.reserve(1)
    _say(f"hsa_queue_add_write_index_scacq_screl -> packet index {index} "
         f"(slot {index % queue.size} of {queue.size})")
    queue.write(index, packet.word, packet.body)
    _say("wrote bytes 4..63, then header|setup as one 32-bit release store "
         f"({packet.word:#010x})")
    queue.ring_doorbell(index)
    _say(f"hsa_signal_store_screlease(doorbell, {index})")

    _step(6, "Completion")
    started = time.perf_counter()
    done.wait(2, 1, timeout=60, abort=queue.check)
    wall_ms = 1e3 * (time.perf_counter() - started)
    _say(f"completion signal reached 0 (waited {wall_ms:.1f} ms host wall-clock); "
         f"read index is now {queue.load_read_index()}")
    times = runtime.ffi.new("hsa_amd_profiling_dispatch_time_t *")
    if runtime.lib.hsa_amd_profiling_get_dispatch_time({"handle": agent.handle}, done.cdata,
                                                        times) == 0 and times.end:
        duration = (times.end - times.start) * 1e6 / runtime.timestamp_frequency
        label = " (simulated: interpreter time, not GPU time)" if simulated else ""
        _say(f"dispatch timestamps: {duration:.1f} us{label}")

    _step(7, "Verify")
    out = buffers[2].copy_to(dtype=np.float32)
    expected = a.astype(np.float64) + b.astype(np.float64)
    error = float(np.max(np.abs(out - expected)))
    ok = bool(np.isfinite(out).all()) and error <= 1e-6
    _say(f"out == a + b for all {n} elements: {'yes' if ok else 'NO'} (max |err| {error:g})")
    for buffer in (*buffers, kernarg):
        buffer.close()
    done.close()
    queue.close()
    executable.close()
    return ok


def suite(runtime, target: str | None, budget: float) -> bool:
    """The operator suite in brief: every operator x variant x route once, at its smallest edge
    size, on one target, within ``budget`` seconds (``hsapy run --all`` runs everything)."""
    from hsapy.commands import run as run_command

    parser = argparse.ArgumentParser()
    run_command.add_arguments(parser)
    target = runtime.gpu(target).target
    args = parser.parse_args(["--all", "--size", "edge", "--target", target])
    session = run_command.HsapySession(runtime)
    smallest: dict[tuple[str, str, str], object] = {}
    for spec in run_command.select_rows(args, [target], session.simulated):
        key = (spec.operator, spec.variant, spec.route)
        best = smallest.get(key)
        volume = 1
        for extent in spec.size:
            volume *= extent
        if best is None or volume < best[0]:
            smallest[key] = (volume, spec)
    specs = [spec for _volume, spec in smallest.values()]
    results = []
    deadline = time.monotonic() + budget
    try:
        for spec in specs:
            if time.monotonic() > deadline:
                break
            results.append(run_command.execute_row(session, spec))
    finally:
        session.close()
    print(run_command.format_table(results, session.simulated))
    skipped = len(specs) - len(results)
    if skipped:
        print(f"({skipped} more rows skipped to stay within {budget:g} s; "
              f"run them all with: hsapy run --all --target {target})")
    else:
        print("every operator, variant and route ran once; the full matrix of sizes and targets: "
              "hsapy run --all")
    return all(row.ok for row in results)


def _note_prebuilt():
    """A toolchain observer that prints, once, why shipped code objects stand in for builds."""
    said: list[bool] = []

    def note(event) -> None:
        if event.kind == "prebuilt" and not said:
            said.append(True)
            print("hsapy demo: no ld.lld on this machine: the llvmlite kernels are the code "
                  "objects shipped prebuilt with hsapy (pip install 'hsapy[toolchain]' links "
                  "them here)")
    return note


def run(args: argparse.Namespace) -> int:
    from hsapy import toolchain
    from hsapy.errors import HsapyError
    from hsapy.runtime import Runtime

    print("hsapy demo: how one kernel reaches an AMD GPU through HSA and AQL, with no HIP runtime")
    try:
        runtime = Runtime(backend=args.backend)
    except HsapyError as exc:
        print(f"hsapy demo: {str(exc).splitlines()[0]}\nRun on the simulator: hsapy demo "
              "--backend sim", file=sys.stderr)
        return 2
    with runtime, toolchain.observe(_note_prebuilt()):
        if not tour(runtime, args.target):
            print("\nhsapy demo: the result did not verify", file=sys.stderr)
            return 1
        if args.no_suite:
            return 0
        print("\n[8] The operator suite (hello-gpu tutorial kernels, HIP-free), smallest edge "
              "sizes")
        return 0 if suite(runtime, args.target, args.suite_budget) else 1
