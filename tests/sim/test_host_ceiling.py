"""The host-ceiling loops benchmarks/sim.py --scaling measures the machine with: they run on
native threads, every thread on its own data, and compute what they should."""
import numpy as np
import pytest

pytest.importorskip("llvmlite")

from hsapy.errors import HsapyValueError  # noqa: E402
from hsapy.sim.isa.jit import host_ceiling as H  # noqa: E402


@pytest.mark.parametrize("threads", [1, 3])
def test_every_thread_runs_the_compute_loop_to_the_float32_result(threads):
    words, _ = H.thread_words("compute", threads, steps=257)
    H.run("compute", threads, words)
    expected = H.compute_reference(257)
    assert expected != 0.0
    assert [H.result(words, k, "compute") for k in range(threads)] == [expected] * threads


def test_every_thread_sums_its_own_array_the_given_number_of_times():
    words, arrays = H.thread_words("memory", 3, steps=2)
    for k, array in enumerate(arrays):
        array[:] = np.arange(array.size, dtype=np.int64) * (k + 1)
    H.run("memory", 3, words)
    assert [H.result(words, k, "memory") for k in range(3)] == \
        [2 * int(array.sum()) for array in arrays]


def test_run_uses_one_row_of_words_per_thread_and_no_more():
    # only the rows given are used: two threads over two rows leave a third row untouched
    words, _ = H.thread_words("compute", 3, steps=5)
    H.run("compute", 2, words)
    assert H.result(words, 2, "compute") == 0.0 != H.result(words, 1, "compute")


def test_scaling_rows_are_per_thread_count_with_speedup_one_at_one_thread():
    rows = H.scaling("compute", 2, repeats=1)
    assert [r["threads"] for r in rows] == [1, 2]
    assert rows[0]["speedup"] == 1.0 and rows[1]["speedup"] > 0
    assert all(r["wall_s"] > 0 for r in rows)


def test_an_unknown_loop_is_refused_naming_the_choices():
    with pytest.raises(HsapyValueError, match="compute, memory"):
        H.scaling("cache", 2)
