"""`hsapy demo`, the README's first command, on the simulator: the tour verifies its result and
the operator suite summary passes."""
from __future__ import annotations

import subprocess
import sys


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
