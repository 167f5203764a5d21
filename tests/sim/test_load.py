"""Reliability under load (benchmarks/load.py's code path, smaller): 20,000 dispatches from 4
host threads on 4 queues lose no completion, never wait forever, and leave every handle-owning
object as it was. The full 1,000,000-dispatch figure comes from running the benchmark itself."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

LOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "load.py"


@pytest.fixture(scope="module")
def load():
    spec = importlib.util.spec_from_file_location("hsapy_benchmark_load", LOAD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("executor, dispatches", [("null", 20_000), ("interpreter", 4_000)])
def test_many_dispatches_from_four_threads_lose_nothing(load, executor, dispatches):
    result = load.run_load(dispatches, threads=4, executor=executor, timeout=60.0, warmup=512)
    assert result["errors"] == [] and result["deadlock"] is False
    assert result["dispatches"] == result["executed"] == dispatches
    assert result["lost"] == 0 and result["unfinished"] == 0
    # Every round awaits 128 completions through signals (64 results + a batch of 64).
    assert result["completions_awaited"] == 4 * (dispatches // 4 // 256) * 128
    assert result["live_end"] == result["live_start"]
    assert result["live_start"]["Queue"] == 4
    assert result["live_after_close"] == result["live_before"]
    # The Python heap is flat: no object kept per dispatch.
    assert result["gc_objects_end"] - result["gc_objects_start"] < 200


def test_vector_add_results_under_the_interpreter(load):
    assert load.check_vector_add(launches=2, n=300)["mismatches"] == 0
