"""What the profiler and the tracer are asked to produce: a row count or an output path of the
wrong kind is a typed hsapy error naming it -- never a row silently dropped (a negative count
sliced the table), a raw TypeError, or an IsADirectoryError from open()."""
from __future__ import annotations

import math

import numpy as np
import pytest
from _misuse import N

from hsapy import profile, trace
from hsapy.asm import kernels
from hsapy.errors import HsapyTypeError, HsapyValueError
from hsapy.runtime import Runtime

T, V = HsapyTypeError, HsapyValueError


@pytest.fixture(scope="module")
def profiled():
    """A Profiler that saw one vector_add dispatch."""
    with Runtime(backend="sim", targets=["gfx942"]) as rt:
        queue = rt.gpu().create_queue(64)
        vadd = rt.load(kernels.build("vector_add", "gfx942")).kernel("vector_add")
        bufs = [rt.system_pool.allocate(4 * N) for _ in range(3)]
        with profile.profile() as profiler:
            vadd.launch(queue, [*bufs, N], N, 64, timeout=10.0)
        yield profiler


ROW_CASES = [
    ("as_dict -1", lambda p: p.dispatches[0].as_dict(-1), V),
    ("as_dict float", lambda p: p.dispatches[0].as_dict(2.5), T),
    ("as_dict str", lambda p: p.dispatches[0].as_dict("10"), T),
    ("report -1", lambda p: p.dispatches[0].report(-1), V),
    ("report nan", lambda p: p.dispatches[0].report(math.nan), T),
    ("to_json -3", lambda p: p.to_json(-3), V),
    ("to_json True", lambda p: p.to_json(True), T),
]


@pytest.mark.parametrize("name, call, error", ROW_CASES, ids=[c[0] for c in ROW_CASES])
def test_a_row_count_of_the_wrong_kind_is_refused_by_name(profiled, name, call, error):
    with pytest.raises(error, match="instructions"):
        call(profiled)


def test_row_counts_that_are_numbers_of_rows_still_work(profiled):
    rows = profiled.dispatches[0].as_dict()["counters"]["instructions"]
    assert len(profiled.dispatches[0].as_dict(np.int64(2))["counters"]["instructions"]) == 2
    assert profiled.dispatches[0].as_dict(0)["counters"]["instructions"] == []
    assert len(profiled.to_json(None)["dispatches"][0]["counters"]["instructions"]) == len(rows)


def _written(tmp_path, what):
    directory = tmp_path / "out.json"
    directory.mkdir()
    return {"None": (None, T), "a directory": (str(directory), V),
            "a missing directory": (str(tmp_path / "no" / "out.json"), V)}[what]


@pytest.mark.parametrize("what", ["None", "a directory", "a missing directory"])
@pytest.mark.parametrize("writer", ["Profiler.write_json", "Trace.write"])
def test_an_output_path_that_cannot_be_written_is_a_typed_error(profiled, tmp_path, writer,
                                                                  what):
    path, error = _written(tmp_path, what)
    write = profiled.write_json if writer == "Profiler.write_json" else trace.Trace().write
    with pytest.raises(error, match=writer):
        write(path)


@pytest.mark.parametrize("path", [None, 5, b"chart.png"], ids=["None", "int", "bytes"])
@pytest.mark.parametrize("call", ["check_path", "latency_chart", "roofline_chart"])
def test_a_chart_path_that_is_no_path_is_a_typed_error(call, path):
    # pathlib's raw TypeError escaped before the path was checked
    from hsapy import plot

    calls = {"check_path": lambda: plot.check_path(path, "--plot"),
             "latency_chart": lambda: plot.latency_chart([], path, "t"),
             "roofline_chart": lambda: plot.roofline_chart(None, [], path, "t")}
    with pytest.raises(T, match="file path"):
        calls[call]()
