"""benchmarks/sim.py's rows, on its quick sizes: kernel lines carry the engine, the thread count
and, under the compiled engine, how its last dispatch ran (chunks, chunks run by the chunk loop,
threads used)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("llvmlite")


def _sim_script():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "sim.py"
    spec = importlib.util.spec_from_file_location("sim_benchmark", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_compiled_rows_say_how_the_dispatch_ran(capsys):
    script = _sim_script()
    assert script.main(["--quick", "--targets", "gfx942", "--engines", "jit", "--threads", "2",
                        "--repeats", "1"]) in (0, None)
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    kernels = [r for r in rows if r.get("kernel") != "empty"]
    assert kernels and all(r["engine"] == "jit" and r["threads"] == 2 for r in kernels), rows
    for row in kernels:
        assert row["lane_instructions"] > 0 and row["lane_instructions_per_s"] > 0, row
        assert 1 <= row["threads_used"] <= 2 and 0 <= row["chunks_looped"] <= row["chunks"], row
    vector_add = next(r for r in kernels if r["kernel"] == "vector_add")
    # whole workgroups straight to s_endpgm: the chunk loop runs every chunk
    assert vector_add["chunks_looped"] == vector_add["chunks"] >= 2, vector_add
