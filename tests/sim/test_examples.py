"""The numbered walk-through in examples/ runs, unchanged, on the simulator: every step exits 0
after checking its own result and prints the line that says what it verified."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# file -> a line (fragment) the step prints only after its own check passed.
EXPECTED = {
    "01_agents_and_pools.py": "GPU agent(s) with device, group and kernarg pools",
    "02_memory_and_async_copy.py": "copied asynchronously in dependency order, verified",
    "03_signals.py": "signal operations, conditions, timeouts and reuse behaved",
    "04_one_packet.py": "one hand-built packet ran and its result verified",
    "05_doorbell_and_wait.py": "every packet was consumed and both completion waits returned",
    "06_vector_add_nothing_hidden.py": "including the partial last workgroup",
    "07_barriers.py": "ordered work across 3 queues",
    "08_timestamps.py": "timestamps are ordered and convert to microseconds",
    "09_kernarg_and_hidden_args.py": "the breakage was detected",
    "10_launch_overhead.py": "dispatches completed",
    "11_queues_and_agents.py": "every chunk verified",
    "12_operator_suite.py": "operator variants matched their FP64 references",
}


def numbered_examples() -> list[str]:
    return sorted(path.name for path in EXAMPLES.glob("[0-9][0-9]_*.py"))


def test_the_walk_through_has_its_twelve_steps_and_an_index():
    assert numbered_examples() == sorted(EXPECTED)
    index = (EXAMPLES / "README.md").read_text()
    for name in EXPECTED:
        assert name in index, f"examples/README.md does not list {name}"


@pytest.mark.parametrize("name", numbered_examples())
def test_example_runs_and_verifies_on_the_simulator(name):
    result = subprocess.run([sys.executable, str(EXAMPLES / name), "--backend", "sim"],
                            capture_output=True, text=True, timeout=180, cwd=EXAMPLES.parent)
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-3000:])
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("backend sim"), lines[0]
    assert lines[-1].startswith("OK: ") and EXPECTED[name] in lines[-1], lines[-1]


@pytest.mark.parametrize("name", sorted(EXPECTED) + ["hip_port_vector_add_two_streams.py"])
def test_asking_for_rocr_without_a_gpu_prints_one_line_not_a_traceback(name):
    from hsapy.diagnose import kfd_problem

    if kfd_problem() is None:
        pytest.skip("/dev/kfd opens here: ROCr may start")
    result = subprocess.run([sys.executable, str(EXAMPLES / name), "--backend", "rocr"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"{name}: ") and "/dev/kfd" in result.stderr


# The steps that need nothing but one GPU agent of any target (10-12 time launches or run the
# whole suite, and 11 wants two GPU agents): they run on the real ROCr over the simulated thunk.
ROCR_SIM_STEPS = [name for name in numbered_examples() if name < "10"]


@pytest.mark.parametrize("name", [pytest.param(n, id=f"rocr_sim-{n[:2]}") for n in ROCR_SIM_STEPS])
def test_example_runs_and_verifies_on_rocr_over_the_simulated_thunk(name, rocr_sim_available):
    result = subprocess.run([sys.executable, str(EXAMPLES / name), "--backend", "rocr-sim"],
                            capture_output=True, text=True, timeout=300, cwd=EXAMPLES.parent)
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-3000:])
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("backend rocr-sim"), lines[0]
    assert lines[-1].startswith("OK: ") and EXPECTED[name] in lines[-1], lines[-1]
