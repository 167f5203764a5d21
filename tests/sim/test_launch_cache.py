"""Plain ``kernel.launch`` keeps its preparation per queue (hsapy.dispatch.LaunchCache): a later
launch of the same shape reuses it, anything that makes another packet prepares afresh, the
cache is bounded, and it never outlives or confuses the objects it was made for."""
from __future__ import annotations

import gc
import sys

import pytest

from hsapy import dispatch
from hsapy.asm import kernels
from hsapy.dispatch import LAUNCH_CACHE_SIZE, DispatchConfigError
from hsapy.errors import ClosedError, HsapyTypeError
from hsapy.runtime import Runtime


@pytest.fixture()
def sim():
    with Runtime(backend="sim", targets=["gfx942"], executor="null") as rt:
        agent = rt.gpu("gfx942")
        yield rt, agent


def _kernel(rt, agent, name="empty"):
    return rt.load(kernels.build(name, agent.target), agent).kernel(name)


def _prepared_count(monkeypatch):
    """Count the preparations plain launches make."""
    made = []
    real = dispatch.PreparedDispatch.__init__

    def counting(self, *args, **kwargs):
        made.append(args[:4])
        real(self, *args, **kwargs)

    monkeypatch.setattr(dispatch.PreparedDispatch, "__init__", counting)
    return made


def _cache(queue):
    return queue.attachments[dispatch._LAUNCHES]


def test_a_second_launch_of_one_shape_reuses_its_preparation(sim, monkeypatch):
    rt, agent = sim
    empty = _kernel(rt, agent)
    made = _prepared_count(monkeypatch)
    with agent.create_queue(64) as queue:
        for _ in range(3):
            empty.launch(queue, [], 64, 64)
        assert len(made) == 1
        # another grid, workgroup, LDS, barrier bit or fence scope is another packet
        empty.launch(queue, [], 128, 64)
        empty.launch(queue, (), 64, 64, dynamic_lds=16)
        empty.launch(queue, [], 64, 64, barrier=True)
        empty.launch(queue, [], 64, 64, acquire="agent")
        empty.launch(queue, [], 64, 64, release="agent")
        empty.launch(queue, [], (64, 1), 64)
        assert len(made) == 7
        # ... each of which is found again, through the dict or as the last one found
        for grid, lds in ((128, 0), (64, 16), (64, 0), (128, 0)):
            result = empty.launch(queue, [], grid, 64, dynamic_lds=lds)
            assert result.is_done
        assert len(made) == 7
        assert len(_cache(queue)) == 7


def test_values_that_equal_a_cached_one_are_still_checked(sim, monkeypatch):
    rt, agent = sim
    empty = _kernel(rt, agent)
    with agent.create_queue(64) as queue:
        empty.launch(queue, [], 64, 64)
        # 64.0 == 64 and True == 1, yet neither is what the preparation accepts
        with pytest.raises(Exception) as refused:
            empty.launch(queue, [], 64.0, 64)
        assert "grid" in str(refused.value)
        with pytest.raises(DispatchConfigError):
            empty.launch(queue, [], 64, 64, dynamic_lds=True)
        empty.launch(queue, [], 64, 64)


def test_the_last_call_is_reused_only_for_the_very_same_options(sim, monkeypatch):
    # launch's first test compares the whole call with the last exact one (LaunchCache.
    # last_call): what equals it but is of another type, or fails a check the call's key does
    # not hold, takes the checked way and gets its error
    rt, agent = sim
    empty = _kernel(rt, agent)
    with agent.create_queue(64) as queue:
        empty.launch(queue, [], 64, 64, wait=False, timeout=5.0).wait(5)
        assert _cache(queue).last_call[1] is _cache(queue).found[1]
        for bad in (dict(wait=0), dict(wait=None), dict(timeout=-5.0), dict(timeout=float("nan"))):
            with pytest.raises(Exception) as refused:
                empty.launch(queue, [], 64, 64, **{"wait": False, "timeout": 5.0, **bad})
            assert "wait" in str(refused.value) or "timeout" in str(refused.value)
        with pytest.raises(Exception) as refused:
            empty.launch(queue, [], 64.0, 64, wait=False, timeout=5.0)
        assert "grid" in str(refused.value)
        with pytest.raises(HsapyTypeError, match="args"):
            empty.launch(queue, "", 64, 64, wait=False, timeout=5.0)
        # equal values of other accepted types, and other argument containers, still launch
        made = _prepared_count(monkeypatch)
        empty.launch(queue, (), 64, 64, wait=False, timeout=5).wait(5)
        empty.launch(queue, iter([]), 64, 64, wait=False, timeout=5.0).wait(5)
        empty.launch(queue, [], 64, 64, barrier=0, timeout=5.0)
        assert made == []                          # one preparation serves them all
        assert empty.launch(queue, [], 64, 64, wait=False, timeout=5.0).wait(5).is_done


def test_threads_launching_shapes_in_turn_get_their_own_packets(sim):
    # several threads on one queue, each with its own shape: every packet has its launch's grid
    # (the last call and the last entry found are each one tuple, key and entry, read and
    # replaced in one step)
    import threading

    rt, agent = sim
    empty = _kernel(rt, agent)
    with agent.create_queue(4096) as queue:
        results: dict[int, list] = {64: [], 128: [], 192: []}

        def launch_many(grid):
            for _ in range(300):
                results[grid].append(empty.launch(queue, [], grid, 64, wait=False))

        threads = [threading.Thread(target=launch_many, args=(grid,)) for grid in results]
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)                # switch threads as often as CPython can
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
        finally:
            sys.setswitchinterval(interval)
        ring = queue.ring
        for grid, launched in results.items():
            assert len(launched) == 300
            for result in launched:
                result.wait(10)
                assert int(ring[result.index % queue.size].view("<u4")[3]) == grid   # grid_size_x


def test_each_queue_and_each_kernel_has_its_own_entries(sim, monkeypatch):
    rt, agent = sim
    first, second = _kernel(rt, agent), _kernel(rt, agent)
    made = _prepared_count(monkeypatch)
    with agent.create_queue(64) as a, agent.create_queue(64) as b:
        first.launch(a, [], 64, 64)
        first.launch(b, [], 64, 64)
        second.launch(a, [], 64, 64)
        first.launch(a, [], 64, 64)
        second.launch(a, [], 64, 64)
        assert [(m[0], m[1]) for m in made] == [(first, a), (first, b), (second, a)]


def test_the_cache_is_bounded_and_keeps_what_is_used(sim, monkeypatch):
    rt, agent = sim
    empty = _kernel(rt, agent)
    made = _prepared_count(monkeypatch)
    with agent.create_queue(64) as queue:
        for grid in range(1, LAUNCH_CACHE_SIZE + 1):
            empty.launch(queue, [], 64 * grid, 64, wait=False)
            empty.launch(queue, [], 64, 64, wait=False)        # used all along
        queue.flush()
        assert len(_cache(queue)) == LAUNCH_CACHE_SIZE
        for grid in range(LAUNCH_CACHE_SIZE + 1, 2 * LAUNCH_CACHE_SIZE):
            empty.launch(queue, [], 64 * grid, 64, wait=False)
            empty.launch(queue, [], 64, 64, wait=False)
        assert len(_cache(queue)) == LAUNCH_CACHE_SIZE
        before = len(made)
        empty.launch(queue, [], 64, 64)
        assert len(made) == before                              # never evicted
        empty.launch(queue, [], 64 * 2, 64)                     # long evicted
        assert len(made) == before + 1


def test_a_new_argument_layout_prepares_afresh(sim, monkeypatch):
    rt, agent = sim
    vadd = _kernel(rt, agent, "vector_add")
    bufs = [agent.device_pool.allocate(256) for _ in range(3)]
    made = _prepared_count(monkeypatch)
    with agent.create_queue(64) as queue:
        vadd.launch(queue, [*bufs, 64], 64, 64)
        vadd.with_types(None, None, None, "u32")
        vadd.launch(queue, [*bufs, 64], 64, 64)
        assert len(made) == 2
        assert vadd.layout in {key[0] for key in _cache(queue)}


def test_closing_the_queue_drops_its_cache(sim):
    rt, agent = sim
    empty = _kernel(rt, agent)
    queue = agent.create_queue(64)
    empty.launch(queue, [], 64, 64)
    cache = _cache(queue)
    queue.close()
    assert len(cache) == 0 and cache.found[1] is None and cache.last_call[1] is None
    with pytest.raises(ClosedError):
        empty.launch(queue, [], 64, 64)


def test_closing_the_executable_drops_its_entries_only(sim):
    rt, agent = sim
    doomed, kept = _kernel(rt, agent), _kernel(rt, agent)
    with agent.create_queue(64) as queue:
        doomed.launch(queue, [], 64, 64)
        kept.launch(queue, [], 64, 64)
        doomed.launch(queue, [], 64, 64)           # the last one found
        assert len(_cache(queue)) == 2
        doomed.executable.close()
        assert len(_cache(queue)) == 1 and _cache(queue).found[1] is None
        with pytest.raises(ClosedError):
            doomed.launch(queue, [], 64, 64)
        assert kept.launch(queue, [], 64, 64).is_done


def test_the_cache_holds_kernels_weakly(sim, monkeypatch):
    rt, agent = sim
    made = _prepared_count(monkeypatch)
    with agent.create_queue(64) as queue:
        first = _kernel(rt, agent)
        first.launch(queue, [], 64, 64)
        entry = _cache(queue).found[1]
        made.clear()
        del first
        gc.collect()
        assert entry[0]() is None
        second = _kernel(rt, agent)
        second.launch(queue, [], 64, 64)
        second.launch(queue, [], 64, 64)
        assert len(made) == 1                      # a dead entry is never used
