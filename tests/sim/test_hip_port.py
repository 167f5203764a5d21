"""The HIP port example (vector add on two streams with events) runs on the simulator with
correct results and event timings in the order the program records them."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hip_port_vector_add_two_streams.py"


@pytest.mark.skipif(shutil.which("clang-19") is None,
                    reason="the port builds its kernel with clang-19")
def test_hip_port_runs_with_correct_results_and_ordered_events():
    spec = importlib.util.spec_from_file_location("hip_port_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = module.main("sim")
    assert report["correct"] == [True, True]
    assert report["last_error"] == "hipSuccess"
    # start <= stop[i] <= all_done: all_done is recorded on stream 0 after it waited for stop[1]
    assert all(0.0 <= ms <= report["total_ms"] for ms in report["stream_ms"])
    assert report["total_ms"] > 0.0


def test_a_failing_stream_surfaces_while_waiting_on_another(sim_runtime):
    from hsapy import aql
    from hsapy.hip import HipError, HipRuntime, hipError_t

    with HipRuntime(sim_runtime) as hip:
        s1, s2 = hip.streamCreate(), hip.streamCreate()
        done = hip.eventCreate()
        s1.publish(aql.Packet(0x77 | (2 << 9) | (2 << 11), bytes(60)))   # unknown packet type
        hip.eventRecord(done, s1)
        hip.streamWaitEvent(s2, done)
        with pytest.raises(HipError) as raised:
            hip.streamSynchronize(s2)      # s2 waits for s1, which has stopped
        assert raised.value.code == hipError_t.hipErrorLaunchFailure
        assert hip.getLastError() == hipError_t.hipErrorLaunchFailure
