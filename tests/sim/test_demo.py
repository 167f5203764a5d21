"""`hsapy demo`, the README's first command, on the simulator: the tour verifies its result and
the operator suite summary passes."""
from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from hsapy import toolchain


def test_demo_runs_the_tour_and_the_suite():
    result = subprocess.run([sys.executable, "-m", "hsapy", "demo", "--backend", "sim"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    for step in ("[1] Agents", "[2] Code object", "[4] The AQL packet", "doorbell",
                 "[6] Completion", "out == a + b for all 4096 elements: yes", "[8] The operator suite"):
        assert step in out
    assert "simulator" in out  # it says where it ran
    summary = [line for line in out.splitlines() if "passed; simulated" in line]
    assert summary and summary[0].split("/")[0] == summary[0].split("/")[1].split()[0]


@pytest.fixture
def no_linker(monkeypatch, tmp_path):
    """A machine with no ld.lld anywhere: empty PATH, no ROCm, no ziglang wheel."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    monkeypatch.delenv("HSAPY_LD_LLD", raising=False)
    monkeypatch.setattr(toolchain.tools, "ziglang_argv", lambda: None)


def test_demo_without_a_linker_runs_on_shipped_code_objects_and_says_so_once(no_linker, capsys):
    from hsapy.commands import demo

    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    assert demo.run(parser.parse_args(["--backend", "sim", "--no-suite"])) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "shipped prebuilt" in line]
    assert len(lines) == 1, out
    assert "hsapy[toolchain]" in lines[0]
    assert "out == a + b for all 4096 elements: yes" in out
