"""``hsapy run``: the tutorial's operator suite through raw AQL dispatch, checked against FP64.

One row per operator x variant x route x target x size x input kind: maximum error against the
tolerance, pass/fail and time. On the simulator sizes are reduced (the edge sizes never are) and
times are host wall-clock, labelled simulated; on a GPU times come from the dispatch path's GPU
timestamps when it provides them, with effective GB/s or TFLOP/s and the tutorial's published
figure beside the main size.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np

from hsapy._checks import check_timeout
from hsapy.commands._args import count, seconds
from hsapy.runtime import BACKENDS

HELP = "run the tutorial's operator suite (HIP or llvmlite kernels) against FP64 references"

ROUTES = ("hip", "llvmlite")
OPERATOR_NAMES = ("vector_add", "reduction", "softmax", "gemm", "attention", "rmsnorm")
SIM_DEFAULT_TARGETS = ("gfx942", "gfx1201")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``hsapy run``."""
    parser.add_argument("operator", nargs="?", choices=OPERATOR_NAMES, metavar="OPERATOR",
                        help=f"one of: {', '.join(OPERATOR_NAMES)}")
    parser.add_argument("--all", action="store_true",
                        help="every operator, variant and available route")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--variant", action="append", metavar="V",
                       help="run only this variant (repeatable; default: every variant)")
    group.add_argument("--all-variants", action="store_true",
                       help="run every variant (the default)")
    parser.add_argument("--route", choices=ROUTES + ("all",),
                        help="kernels from HIP sources or from asm/ (llvmlite); "
                             "default hip, or all with --all")
    parser.add_argument("--target", action="append", metavar="GFX",
                        help="GPU target (repeatable); default: every GPU agent "
                             f"({', '.join(SIM_DEFAULT_TARGETS)} on the simulator)")
    parser.add_argument("--backend", choices=BACKENDS,
                        default=os.environ.get("HSAPY_BACKEND", "auto"),
                        help="HSA runtime: the simulator, ROCr, or auto (ROCr with a GPU)")
    parser.add_argument("--size", action="append", metavar="SIZE",
                        help="a size such as 16M or 4096x1024, or main / edge / all "
                             "(repeatable; default: main, extra and edge sizes, reduced main "
                             "sizes on the simulator)")
    parser.add_argument("--inputs", metavar="KIND",
                        help="only this input kind (e.g. rising_max, weighted)")
    parser.add_argument("--rebuild", action="store_true",
                        help="build the HIP kernels from source instead of kernels/prebuilt")
    parser.add_argument("--repeat", type=count(1), default=20,
                        help="timed repetitions on a GPU after 3 warm-ups (median reported; "
                             "default 20)")
    parser.add_argument("--timeout", type=seconds, default=None,
                        help="seconds to wait for each dispatch (default 60, 900 simulated)")
    parser.add_argument("--json", action="store_true", help="one JSON object per row")
    parser.add_argument("--profile", action="store_true",
                        help="profile each row's dispatches (hsapy profile's table: counters "
                             "on the simulator, occupancy and a roofline placement)")


# ---------------------------------------------------------------------------------------------
# What to run

@dataclass(frozen=True)
class RowSpec:
    """One run: an operator variant through one route on one target at one size and input."""

    operator: str
    variant: str
    route: str
    target: str
    size: tuple[int, ...]
    inputs: str


@dataclass
class RowResult:
    """The outcome of a RowSpec, as the table and --json show it."""

    operator: str
    variant: str
    route: str
    target: str
    size: str
    inputs: str
    max_err: float | None
    tolerance: float | None
    ok: bool
    time_us: float | None
    simulated: bool
    throughput: float | None = None      # effective GB/s or TFLOP/s (hardware only)
    metric: str = ""
    published_us: float | None = None    # the tutorial's figure, at the main size only
    worst: str = ""
    error: str = ""

    def as_json(self) -> dict[str, Any]:
        """The row as a JSON-ready dict (non-finite errors become null, with ``error`` set)."""
        data = asdict(self)
        if data["max_err"] is not None and not math.isfinite(data["max_err"]):
            data["max_err"] = None
            data["error"] = data["error"] or f"non-finite output at {self.worst}"
        return data


class SelectionError(ValueError):
    """The command line names no operator, or a combination that cannot run."""


def llvmlite_kernels() -> dict[str, frozenset[str]]:
    """operator -> kernel names asm/operators.py provides (empty without that module)."""
    try:
        from hsapy.asm import operators as asm_operators
    except ImportError:
        return {}
    return {name: frozenset(kernels) for name, kernels in asm_operators.KERNELS.items()}


def select_rows(args: argparse.Namespace, targets: Iterable[str], simulated: bool,
                llvmlite: dict[str, frozenset[str]] | None = None) -> list[RowSpec]:
    """Expand the command line into rows, in a stable order (no runtime needed)."""
    from hsapy import operators as ops

    if args.all and args.operator:
        raise SelectionError("give an OPERATOR or --all, not both")
    if not args.all and not args.operator:
        raise SelectionError(f"name an OPERATOR ({', '.join(OPERATOR_NAMES)}) or use --all")
    names = list(ops.OPERATORS) if args.all else [args.operator]
    route_arg = args.route or ("all" if args.all else "hip")
    routes = ROUTES if route_arg == "all" else (route_arg,)
    llvmlite = llvmlite_kernels() if llvmlite is None else llvmlite
    if route_arg == "llvmlite" and not any(name in llvmlite for name in names):
        raise SelectionError("no llvmlite kernels for "
                             f"{', '.join(names)} (asm/operators.py provides: "
                             f"{', '.join(sorted(llvmlite)) or 'none yet'})")
    rows: list[RowSpec] = []
    for name in names:
        op = ops.operator(name)
        variants = [op.variant(v) for v in args.variant] if args.variant else list(op.variants)
        all_sizes = _sizes(op, args.size, simulated)
        kinds = op.inputs_kinds
        if args.inputs:
            if args.inputs not in kinds:
                if not args.all:
                    raise SelectionError(f"{name} has no input kind {args.inputs!r}; "
                                         f"choose one of: {', '.join(kinds)}")
                continue
            kinds = (args.inputs,)
        for variant in variants:
            sizes = all_sizes
            if simulated and not args.size:
                sizes = ops.sim_sizes_for(op, variant, all_sizes)
            for route in routes:
                if route == "llvmlite" and not set(variant.kernels) <= llvmlite.get(name, set()):
                    continue
                for target in targets:
                    for size in sizes:
                        for kind in kinds:
                            rows.append(RowSpec(name, variant.name, route, target, size, kind))
    return rows


def _sizes(op, requested: list[str] | None, simulated: bool) -> tuple[tuple[int, ...], ...]:
    from hsapy import operators as ops

    if not requested:
        return op.sizes("default", simulated)
    chosen: dict[tuple[int, ...], None] = {}
    for text in requested:
        if text in ("main", "edge", "all"):
            for size in op.sizes(text, simulated):
                chosen.setdefault(size, None)
        else:
            chosen.setdefault(ops.parse_size(text, op), None)
    return tuple(chosen)


# ---------------------------------------------------------------------------------------------
# Running a row: the device side goes through a Session, so the flow is testable without a GPU

class Session(Protocol):
    """What a row needs from a runtime: code objects, buffers and timed launches."""

    simulated: bool

    def device(self, target: str) -> Any: ...          # hsapy.operators.Device
    def kernels(self, operator: str, route: str, target: str) -> dict[str, Any]: ...
    def upload(self, target: str, array: np.ndarray) -> Any: ...
    def download(self, buffer: Any, like: np.ndarray) -> np.ndarray: ...
    def launch(self, kernel: Any, dispatch: Any, args: list[Any]) -> float | None: ...
    def free(self, buffer: Any) -> None: ...


def execute_row(session: Session, spec: RowSpec, repeat: int = 1) -> RowResult:
    """Run one row: NaN-filled outputs, every dispatch in order, whole-array check, timing.

    Any exception becomes a failed row whose ``error`` names it; nothing escapes.
    """
    from hsapy import operators as ops

    op = ops.operator(spec.operator)
    variant = op.variant(spec.variant)
    result = RowResult(spec.operator, spec.variant, spec.route, spec.target,
                       ops.size_label(spec.size), spec.inputs, None, None, False, None,
                       session.simulated, metric=op.metric)
    if spec.size == op.main_size and variant.published is not None:
        result.published_us = variant.published.time_us
    buffers: dict[str, Any] = {}
    try:
        device = session.device(spec.target)
        kernels = session.kernels(spec.operator, spec.route, spec.target)
        problem = ops.make_problem(op, variant, spec.size, spec.inputs, device)
        plan = variant.plan(spec.size, device)
        for name, buffer in problem.buffers.items():
            buffers[name] = session.upload(spec.target, buffer.data)

        def run_once() -> float | None:
            total: float | None = 0.0
            for dispatch in plan:
                args = [buffers[a] if isinstance(a, str) else a for a in dispatch.args]
                elapsed = session.launch(kernels[dispatch.kernel], dispatch, args)
                total = None if (elapsed is None or total is None) else total + elapsed
            return total

        started = time.perf_counter()
        first = run_once()
        wall = time.perf_counter() - started
        outputs = {name: session.download(buffers[name], problem.buffers[name].data)
                   for name in problem.reference}
        check = ops.check_outputs(outputs, problem.reference, op.tolerance)
        result.max_err, result.tolerance = check.max_err, check.tolerance
        result.ok, result.worst = check.ok, check.worst
        if session.simulated:
            result.time_us = wall * 1e6
        else:
            result.time_us = _gpu_time_us(run_once, first, wall, repeat)
            if result.time_us:
                result.throughput = _throughput(op, spec.size, result.time_us)
    except Exception as exc:  # a row never takes the whole suite down
        result.ok = False
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        for buffer in buffers.values():
            try:
                session.free(buffer)
            except Exception:
                pass
    return result


def _gpu_time_us(run_once: Callable[[], float | None], first: float | None, wall: float,
                 repeat: int) -> float:
    """Median over ``repeat`` runs after 3 warm-ups; GPU timestamps when the launches report
    them (seconds), else host wall-clock around each run."""
    for _ in range(3):
        run_once()
    samples = []
    for _ in range(max(1, repeat)):
        started = time.perf_counter()
        gpu = run_once()
        samples.append(gpu if gpu is not None else time.perf_counter() - started)
    return statistics.median(samples) * 1e6


def _throughput(op, size: tuple[int, ...], time_us: float) -> float:
    """Effective GB/s (bytes / t) or TFLOP/s (flops / t), as the tutorial computes them."""
    scale = 1e9 if op.metric == "GB/s" else 1e12
    return op.work(size) / (time_us * 1e-6) / scale


# ---------------------------------------------------------------------------------------------
# Output

def format_table(rows: list[RowResult], simulated: bool, sizes_note: str = "") -> str:
    """Human-readable table; times labelled simulated on the simulator."""
    time_header = "sim time (us)" if simulated else "time (us)"
    headers = ["operator", "variant", "route", "target", "size", "inputs", "max err",
               "tolerance", "result", time_header]
    if not simulated:
        headers += ["effective", "published (us)"]
    table = [headers]
    for row in rows:
        cells = [row.operator, row.variant, row.route, row.target, row.size, row.inputs,
                 _number(row.max_err), _number(row.tolerance),
                 "ok" if row.ok else ("ERROR" if row.error else "FAIL"), _time(row.time_us)]
        if not simulated:
            effective = f"{row.throughput:.3g} {row.metric}" if row.throughput else "-"
            cells += [effective, _time(row.published_us)]
        table.append(cells)
    widths = [max(len(r[i]) for r in table) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(r, widths)).rstrip()
             for r in table]
    lines.insert(1, "  ".join("-" * width for width in widths))
    failures = [r for r in rows if not r.ok]
    for row in failures:
        detail = row.error or f"worst element {row.worst}"
        lines.append(f"{'ERROR' if row.error else 'FAIL'} {row.operator}/{row.variant} "
                     f"{row.route} {row.target} {row.size} {row.inputs}: {detail}")
    passed = len(rows) - len(failures)
    summary = f"{passed}/{len(rows)} passed"
    if simulated:
        summary += ("; simulated: times are host wall-clock of the simulator, not GPU times"
                    + (f"; {sizes_note}" if sizes_note else ""))
    else:
        summary += ("; published figures: the tutorial's RX 9070 XT (gfx1201) at the main "
                    "size")
    lines.append(summary)
    return "\n".join(lines)


def format_json(rows: list[RowResult]) -> str:
    """One JSON object per line (strict JSON: no NaN or Infinity)."""
    return "\n".join(json.dumps(row.as_json(), allow_nan=False) for row in rows)


def sizes_note(names: Iterable[str]) -> str:
    """The simulator's reduced sizes, stated in the output."""
    from hsapy import operators as ops

    parts = []
    for name in names:
        op = ops.operator(name)
        reduced = ", ".join(ops.size_label(s) for s in op.sim_sizes)
        parts.append(f"{name} {reduced} for {ops.size_label(op.main_size)}")
        for variant in op.variants:
            if variant.sim_sizes:
                own = ", ".join(ops.size_label(s) for s in variant.sim_sizes)
                parts.append(f"{name}/{variant.name} {own} for {ops.size_label(op.main_size)} "
                             f"and edges above {ops.size_label(max(variant.sim_sizes))}")
    return "reduced sizes " + "; ".join(parts) + " (other edge sizes unchanged)"


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    return f"{value:.3g}"


def _time(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if value < 1e5 else f"{value:.0f}"


# ---------------------------------------------------------------------------------------------
# The hsapy session over a Runtime

class HsapySession:
    """A Session over an open hsapy Runtime: one queue per agent, cached executables."""

    def __init__(self, runtime: Any, rebuild: bool = False, timeout: float | None = None):
        self.runtime = runtime
        self.simulated = runtime.is_simulated
        self.rebuild = rebuild
        if timeout is None:
            timeout = 900.0 if self.simulated else 60.0
        self.timeout = check_timeout(timeout, "HsapySession: timeout")
        self.agents = {agent.name: agent for agent in runtime.gpu_agents}
        self._queues: dict[str, Any] = {}
        self._executables: dict[tuple[str, str, str], dict[str, Any]] = {}

    def agent(self, target: str) -> Any:
        """The GPU agent for ``target``; HsapyValueError naming the agents present."""
        from hsapy.errors import HsapyValueError

        try:
            return self.agents[target]
        except KeyError:
            raise HsapyValueError(f"no GPU agent {target} on backend {self.runtime.backend} "
                                  f"(agents: {', '.join(self.agents) or 'none'})") from None

    def device(self, target: str) -> Any:
        from hsapy import operators as ops

        agent = self.agent(target)
        return ops.Device(target, int(agent.wavefront_size), int(agent.compute_unit_count))

    def code_object(self, operator: str, route: str, target: str) -> bytes:
        """Prebuilt HIP code object, a fresh HIP build, or the llvmlite build."""
        from hsapy import operators as ops

        op = ops.operator(operator)
        if route == "llvmlite":
            from hsapy.asm import operators as asm_operators

            return asm_operators.build(operator, target)
        path = ops.prebuilt_path(op, target)
        if path.is_file() and not self.rebuild:
            return path.read_bytes()
        from hsapy import toolchain

        return toolchain.build_hip(ops.source_path(op), target=target, compiler="clang",
                                   extra_args=("-fuse-cuid=none",))

    def kernels(self, operator: str, route: str, target: str) -> dict[str, Any]:
        key = (operator, route, target)
        if key not in self._executables:
            from hsapy import operators as ops

            executable = self.runtime.load(self.code_object(operator, route, target),
                                           self.agent(target))
            names = ops.operator(operator).kernel_names
            if route == "llvmlite":
                names = tuple(n for n in names if n in llvmlite_kernels().get(operator, ()))
            self._executables[key] = {name: executable.kernel(name) for name in names}
        return self._executables[key]

    def queue(self, target: str) -> Any:
        old = self._queues.get(target)
        if old is not None and (old.error is not None or old.is_closed):
            # a failed dispatch stopped it: later rows get a fresh queue, not its error
            self._queues.pop(target)
            old.close()
        if target not in self._queues:
            queue = self.agent(target).create_queue()
            queue.enable_profiling()  # dispatch start/end timestamps for the time column
            self._queues[target] = queue
        return self._queues[target]

    def upload(self, target: str, array: np.ndarray) -> Any:
        agent = self.agent(target)
        buffer = agent.device_pool.allocate(max(array.nbytes, 4))
        buffer.copy_from(np.ascontiguousarray(array))
        buffer.hsapy_target = target
        return buffer

    def download(self, buffer: Any, like: np.ndarray) -> np.ndarray:
        data = np.frombuffer(bytes(buffer.copy_to())[: like.nbytes], dtype=like.dtype)
        return data.reshape(like.shape)

    def launch(self, kernel: Any, dispatch: Any, args: list[Any]) -> float | None:
        """One dispatch through Kernel.launch; GPU seconds when it reports them."""
        target = next((a.hsapy_target for a in args if hasattr(a, "hsapy_target")), None)
        queue = self.queue(target or kernel.executable.agent.target)
        result = kernel.launch(queue, args, grid=dispatch.grid, workgroup=dispatch.block,
                               dynamic_lds=dispatch.dynamic_lds, timeout=self.timeout)
        duration_us = result.duration_us
        return None if duration_us is None else duration_us * 1e-6

    def free(self, buffer: Any) -> None:
        buffer.close()

    def close(self) -> None:
        for queue in self._queues.values():
            queue.close()


def _gpu_seconds(completion: Any) -> float | None:
    """Elapsed GPU time of a finished launch, when the dispatch path reports timestamps."""
    for attribute in ("gpu_time", "elapsed", "duration"):
        value = getattr(completion, attribute, None)
        if isinstance(value, (int, float)):
            return float(value)
    return None


def _check_dispatch_path() -> str | None:
    """Why end-to-end runs cannot work in this build, or None when they can."""
    try:
        from hsapy.executable import Kernel
        from hsapy.runtime import Runtime  # noqa: F401
    except ImportError as exc:
        return (f"hsapy run needs the runtime objects and the dispatch path, which this build "
                f"does not have yet ({exc})")
    if not hasattr(Kernel, "launch"):
        return "hsapy run needs Kernel.launch (the dispatch path), missing in this build"
    return None


def run(args: argparse.Namespace) -> int:
    """Entry point of ``hsapy run``: 0 when every row passes, 1 on any failure, 2 on misuse."""
    import sys

    from hsapy.errors import HsapyError

    try:
        # Validate the selection before touching a runtime.
        select_rows(args, ["gfx942"], simulated=True)
    except (SelectionError, HsapyError) as exc:
        print(f"hsapy run: {exc}", file=sys.stderr)
        return 2
    problem = _check_dispatch_path()
    if problem:
        print(f"hsapy run: {problem}", file=sys.stderr)
        return 1
    from hsapy.runtime import Runtime

    if args.backend == "sim" and args.target:
        wanted = ",".join(dict.fromkeys(t.split(":")[0] for t in args.target))
        os.environ["HSAPY_SIM_TARGETS"] = wanted
    try:
        runtime = Runtime(backend=args.backend)
    except HsapyError as exc:
        print(f"hsapy run: cannot open the {args.backend} runtime: {exc}", file=sys.stderr)
        return 1
    with runtime:
        session = HsapySession(runtime, rebuild=args.rebuild, timeout=args.timeout)
        targets = args.target or list(session.agents)
        try:
            for target in targets:
                session.agent(target)
            specs = select_rows(args, targets, session.simulated)
        except (SelectionError, HsapyError) as exc:
            print(f"hsapy run: {exc}", file=sys.stderr)
            return 2
        results = []
        profiles: list[tuple[RowResult, list]] = []
        try:
            for spec in specs:
                if args.profile:
                    row, dispatches = profile_row(session, spec, args.repeat)
                    profiles.append((row, dispatches))
                else:
                    row = execute_row(session, spec, repeat=args.repeat)
                results.append(row)
                if args.json and args.profile:
                    data = row.as_json()
                    data["profile"] = [d.as_dict(10) for d in profiles[-1][1]]
                    print(json.dumps(data, allow_nan=False), flush=True)
                elif args.json:
                    print(format_json([row]), flush=True)
        finally:
            session.close()
    if not args.json:
        note = sizes_note(dict.fromkeys(s.operator for s in specs)) if session.simulated else ""
        print(format_table(results, session.simulated, note))
        for row, dispatches in profiles:
            print(f"\n=== {row.operator}/{row.variant} {row.route} {row.target} {row.size} "
                  f"{row.inputs}")
            for dispatch in dispatches:
                print(dispatch.report(5))
    return 0 if results and all(r.ok for r in results) else 1


def profile_row(session: Any, spec: RowSpec, repeat: int) -> tuple[RowResult, list]:
    """Run one row under hsapy.profile.Profiler; the row and the first dispatch of each
    kernel configuration it ran (a GPU row repeats its dispatches for timing)."""
    from hsapy.profile import Profiler

    with Profiler() as profiler:
        row = execute_row(session, spec, repeat=repeat)
    seen: set[tuple] = set()
    first = []
    for dispatch in profiler.dispatches:
        key = (dispatch.kernel, dispatch.grid, dispatch.workgroup, dispatch.group_segment_size)
        if key not in seen:
            seen.add(key)
            first.append(dispatch)
    return row, first
