"""``hsapy selftest``: the backend-parametrised tests on ROCr, a verdict per feature; without a
GPU, one line that says so."""
from __future__ import annotations

import subprocess
import sys
from collections import Counter
from types import SimpleNamespace

import pytest

from hsapy import selftest
from hsapy.diagnose import kfd_problem


def hsapy(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hsapy", *argv], capture_output=True,
                          text=True, timeout=600)


def test_without_a_gpu_it_says_so_in_one_line_and_runs_nothing():
    if kfd_problem() is None:
        pytest.skip("/dev/kfd opens here: the self-test would run")
    for result in (hsapy("selftest"), subprocess.run(
            [sys.executable, "-m", "hsapy.selftest"], capture_output=True, text=True,
            timeout=120)):
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.startswith("hsapy selftest: no AMD GPU: ")
        assert result.stderr.count("\n") == 1 and "/dev/kfd" in result.stderr


def test_on_the_simulator_each_feature_gets_a_verdict_from_its_backend_cases():
    result = hsapy("selftest", "--backend", "sim", "-k", "binding_iterate or interop")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("hsapy selftest on sim")
    verdicts = {line.split("(")[-1].rstrip(")"): line.split()[0] for line in lines[1:-1]}
    assert verdicts == {"test_binding_iterate.py": "works", "test_interop.py": "works"}
    assert "4 / 0 / 0" in lines[1]                   # only the sim cases ran: 4 of 8 there
    assert lines[-1].startswith("hsapy selftest: ") and " 0 failed" in lines[-1]


def test_every_module_with_backend_cases_names_a_feature():
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                             "--hsapy-backend=sim", "-p", "no:cacheprovider",
                             str(selftest.tests_directory() / "sim")],
                            capture_output=True, text=True, timeout=300)
    modules = {line.split("::")[0].rsplit("/", 1)[-1] for line in result.stdout.splitlines()
               if "::" in line}
    assert modules and modules <= set(selftest.FEATURES), modules - set(selftest.FEATURES)


@pytest.mark.parametrize("counts,verdict", [(Counter(passed=3), "works"),
                                            (Counter(passed=3, failed=1), "FAILS"),
                                            (Counter(skipped=2), "not run")])
def test_a_feature_fails_when_any_case_fails(counts, verdict):
    assert selftest._verdict(counts) == verdict


def test_the_collector_counts_setup_errors_and_skips_per_module():
    collector = selftest._Collector()
    node = "tests/sim/test_dispatch.py::test_x[rocr]"
    for when, outcome in (("setup", "failed"), ("call", "passed"), ("setup", "skipped")):
        collector.pytest_runtest_logreport(SimpleNamespace(
            nodeid=node, when=when, passed=outcome == "passed", failed=outcome == "failed",
            skipped=outcome == "skipped", longrepr=("f", 1, "Skipped: no GPU")))
    assert collector.outcomes["test_dispatch.py"] == Counter(failed=1, passed=1, skipped=1)
    assert collector.failures["test_dispatch.py"] == ["test_x[rocr]"]
