"""The hardware self-test: hsapy's backend-parametrised tests on ROCr, with a verdict per feature.

    hsapy selftest                  # or: python -m hsapy.selftest
    hsapy selftest -k dispatch      # only the tests whose names match (pytest's -k)
    hsapy selftest --backend sim    # the same tests on the simulator (what CI runs on every change)

The tests written with the ``backend`` fixture run unchanged on the simulator and on a GPU; here
only their ``rocr`` cases run (pytest, ``--hsapy-backend rocr``), and each test module is one
feature in the verdict. Without a usable AMD GPU it says so in one line and runs nothing. It needs
a source checkout (the tests are not installed with the package) and pytest (the ``dev`` extra).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
from collections import Counter
from pathlib import Path
from typing import Any

__all__ = ["FEATURES", "main", "tests_directory"]

HELP = "run the backend-parametrised tests on the GPU (ROCr) and print a verdict per feature"

# Test module -> the feature its backend-parametrised tests check.
FEATURES = {
    "test_objects.py": "runtime objects: agents, pools, buffers, signals, queues",
    "test_binding_iterate.py": "HSA iteration callbacks",
    "test_loader_executable.py": "code objects through the runtime's loader",
    "test_dispatch.py": "kernel dispatch: launch, prepared, batches, barriers",
    "test_sim_queue_errors.py": "malformed packets reported as errors",
    "test_faults.py": "kernel faults reported as errors",
    "test_exhaustion.py": "resource exhaustion reported as errors",
    "test_lifetime.py": "object lifetimes and finalizers",
    "test_interop.py": "DLPack and array-interface interop",
    "test_operators.py": "the hello-gpu operator suite against FP64 references",
    "test_hip.py": "HIP on AQL (hsapy.hip)",
    "test_hip_port.py": "the HIP port example",
    "test_bench.py": "hsapy bench",
    "test_simlib_queues.py": "queues through the raw C API",
    "test_runtime_agreement.py": "statuses, queue types and cache info as ROCr reports them",
}


def tests_directory() -> Path | None:
    """The repository's tests/ next to this package (a source checkout), or None."""
    candidate = Path(__file__).resolve().parent.parent / "tests"
    return candidate if (candidate / "conftest.py").is_file() else None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``hsapy selftest``."""
    parser.add_argument("--backend", choices=("rocr", "sim", "rocr-sim"), default="rocr",
                        help="rocr (default): the GPU; sim: the same tests on the simulator; "
                             "rocr-sim: on ROCr over the simulated KFD thunk")
    parser.add_argument("-k", metavar="EXPRESSION", dest="keyword",
                        help="only the tests matching this pytest -k expression")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="pytest's own output too (one line per test)")


def _gpu_problem() -> str | None:
    """Why ROCr cannot run kernels here, or None when it reports a GPU agent."""
    from hsapy.errors import BackendUnavailableError
    from hsapy.runtime import Runtime

    try:
        with Runtime(backend="rocr") as runtime:
            if not runtime.gpu_agents:
                return "ROCr starts but reports no GPU agent"
            return None
    except BackendUnavailableError as exc:
        return str(exc)


class _Collector:
    """A pytest plugin that keeps the outcome of every test, by module."""

    def __init__(self) -> None:
        self.outcomes: dict[str, Counter] = {}
        self.failures: dict[str, list[str]] = {}
        self.skips: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        module = report.nodeid.split("::")[0].rsplit("/", 1)[-1]
        counts = self.outcomes.setdefault(module, Counter())
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.skipped:
                counts["skipped"] += 1
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
                self.skips.setdefault(module, reason.removeprefix("Skipped: "))
            elif report.failed:
                counts["failed"] += 1
                self.failures.setdefault(module, []).append(report.nodeid.split("::", 1)[1])
            else:
                counts["passed"] += 1
        elif report.when == "teardown" and report.failed:
            counts["failed"] += 1
            self.failures.setdefault(module, []).append(report.nodeid.split("::", 1)[1])


def _verdict(counts: Counter) -> str:
    if counts["failed"]:
        return "FAILS"
    if counts["passed"]:
        return "works"
    return "not run"


def run(args: argparse.Namespace) -> int:
    """Entry point: 0 when every selected test passed, 1 on a failure, 2 when nothing ran."""
    tests = tests_directory()
    if tests is None:
        print("hsapy selftest: the tests are not installed with the package; run it from a "
              "source checkout (pip install -e '.[dev]' there)", file=sys.stderr)
        return 2
    try:
        import pytest
    except ImportError:
        print("hsapy selftest: needs pytest: pip install 'hsapy[dev]'", file=sys.stderr)
        return 2
    if args.backend == "rocr":
        problem = _gpu_problem()
        if problem is not None:
            print(f"hsapy selftest: no AMD GPU: {problem}", file=sys.stderr)
            return 2
    collector = _Collector()
    argv = [str(tests / "sim"), f"--hsapy-backend={args.backend}", "-p", "no:cacheprovider",
            "-q"]
    if args.keyword:
        argv += ["-k", args.keyword]
    if args.verbose:
        code = pytest.main(argv, plugins=[collector])
    else:
        with contextlib.redirect_stdout(io.StringIO()):     # the verdicts are the report
            code = pytest.main(argv, plugins=[collector])
    if code == pytest.ExitCode.USAGE_ERROR:
        # a -k expression pytest cannot parse: its "ERROR: Wrong expression" went to stderr
        print("hsapy selftest: pytest refused the -k expression (see its message above); "
              "nothing ran", file=sys.stderr)
        return 2
    if code == pytest.ExitCode.INTERRUPTED:
        # Ctrl-C: pytest stops and returns; the verdicts would read as a finished run
        print("hsapy: interrupted", file=sys.stderr)
        return 130
    print(f"hsapy selftest on {args.backend}: a verdict per feature "
          "(test module: passed / failed / skipped)")
    for module, counts in sorted(collector.outcomes.items(),
                                 key=lambda item: list(FEATURES).index(item[0])
                                 if item[0] in FEATURES else len(FEATURES)):
        feature = FEATURES.get(module, module)
        detail = f"{counts['passed']} / {counts['failed']} / {counts['skipped']}"
        print(f"  {_verdict(counts):<8} {feature:<58} {detail:>13}  ({module})")
        for test in collector.failures.get(module, [])[:5]:
            print(f"           failed: {test}")
        if not counts["passed"] and not counts["failed"] and module in collector.skips:
            print(f"           skipped: {collector.skips[module]}")
    total = sum(collector.outcomes.values(), Counter())
    if not total:
        print("  nothing ran: no backend-parametrised test matched")
        return 2
    print(f"hsapy selftest: {total['passed']} passed, {total['failed']} failed, "
          f"{total['skipped']} skipped")
    return 1 if total["failed"] or code not in (0, 5) else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m hsapy.selftest``."""
    parser = argparse.ArgumentParser(prog="hsapy selftest", description=HELP)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
