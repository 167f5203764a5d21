"""The compiled fast path (hsapy._batch_native, hsapy._publish_native): ``prepared.batch``,
``prepared.publish`` and ``prepared.submit`` are builtins where they can be, and alike with the
Python functions in what they publish, refuse and leave behind.

tests/sim/test_publishing.py compares them with the reference byte for byte over random kernels;
here: what they hand to the Python functions (keywords, MISSING, argument lists that differ, a
slot of another launch, more than a chunk), their errors (the slot or half given back, nothing
published), waiting for a slot or half, wrapping around the ring, observers, reference counts
and threads.
"""
from __future__ import annotations

import gc
import inspect
import sys
import threading
import traceback
import types

import numpy as np
import pytest

from hsapy import _batch_native, _native, _publish_native
from hsapy.asm import kernels
from hsapy.errors import ClosedError, HsapyTypeError, HsapyValueError
from hsapy.kernarg import KernelArgumentError
from hsapy.publishing import MISSING
from hsapy.queue import add_observer, remove_observer
from hsapy.runtime import Runtime

N = 64

pytestmark = pytest.mark.skipif(_native.disabled() is not None,
                                reason=f"compiled builtins are off: {_native.disabled()}")


@pytest.fixture(scope="module")
def runtime():
    with Runtime(backend="sim", targets=["gfx942"]) as rt:
        yield rt


@pytest.fixture
def vadd(runtime):
    agent = runtime.gpu("gfx942")
    kernel = runtime.load(kernels.build("vector_add", "gfx942"), agent).kernel("vector_add")
    a, b = (agent.device_pool.allocate(4 * N) for _ in range(2))
    a.copy_from(np.arange(N, dtype=np.float32))
    b.copy_from(np.full(N, 2, np.float32))
    outs = [agent.device_pool.allocate(4 * N) for _ in range(3)]
    with agent.create_queue(64) as queue:
        yield agent, kernel, queue, a, b, outs
    for buffer in (a, b, *outs):
        buffer.close()


def expect_sum(out) -> None:
    assert np.array_equal(out.copy_to(dtype=np.float32), np.arange(N, dtype=np.float32) + 2)


def compiled_batch(prepared):
    """prepared.batch made, and checked to be the compiled builtin."""
    prepared.batch            # noqa: B018 - made on first access, replaced on first call
    prepared.batch([]).wait()
    batch = prepared.batch
    assert isinstance(batch, types.BuiltinFunctionType), _batch_native.why_not()
    return batch


def test_the_compiled_batch_is_what_prepared_batch_is(vadd):
    assert _batch_native.layout_ok()
    assert _batch_native.why_not() is None
    _agent, kernel, queue, a, b, outs = vadd
    batch = compiled_batch(kernel.prepare(queue, N, 64))
    # what help() and inspect show
    assert list(inspect.signature(batch).parameters) == ["arg_lists", "doorbell"]
    assert inspect.signature(batch).parameters["doorbell"].default is True
    assert "barrier-AND" in batch.__doc__


@pytest.mark.parametrize("how", ["positional", "keyword", "flag", "flag_keyword"])
def test_one_shared_argument_list_runs_every_dispatch(vadd, how):
    _agent, kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    batch = compiled_batch(prepared)
    args = (a, b, outs[0], N)
    lists = [args] * 20
    result = {"positional": lambda: batch(lists), "keyword": lambda: batch(arg_lists=lists),
              "flag": lambda: batch(lists, True),
              "flag_keyword": lambda: batch(lists, doorbell=True)}[how]()
    assert [count for _first, count, _signal in result.chunks] == [20]
    result.wait(timeout=30)
    expect_sum(outs[0])


def test_without_the_doorbell_nothing_is_announced(vadd):
    _agent, kernel, queue, a, b, outs = vadd
    batch = compiled_batch(kernel.prepare(queue, N, 64))
    before = queue.load_read_index()
    result = batch([(a, b, outs[1], N)] * 3, doorbell=False)
    first, count, _signal = result.chunks[0]
    assert queue.load_write_index() == first + count + 1
    assert not result.is_done and queue.load_read_index() == before
    queue.flush()
    result.wait(timeout=30)
    expect_sum(outs[1])


@pytest.mark.parametrize("lists", [
    "equal_not_identical", "a_tuple_of_lists", "a_list_subclass", "mixed", "lists_of_lists",
    "more_than_a_chunk"])
def test_what_the_compiled_batch_hands_on_runs_alike(vadd, lists):
    _agent, kernel, queue, a, b, outs = vadd
    batch = compiled_batch(kernel.prepare(queue, N, 64))

    class Lists(list):
        pass

    made = {"equal_not_identical": [(a, b, outs[0], N), (a, b, outs[0], N)],
            "a_tuple_of_lists": tuple([[a, b, outs[0], N]] * 3),
            "a_list_subclass": Lists([(a, b, outs[0], N)] * 3),
            "mixed": [(a, b, outs[0], N), (a, b, outs[1], N), (a, b, outs[2], N)],
            "lists_of_lists": [[a, b, outs[0], N]] * 5,
            "more_than_a_chunk": [(a, b, outs[0], N)] * 70}[lists]   # 63 per chunk here
    result = batch(made)
    assert sum(count for _first, count, _signal in result.chunks) == len(made)
    result.wait(timeout=60)
    for out in outs[:3 if lists == "mixed" else 1]:
        expect_sum(out)


def test_batches_of_many_counts_on_both_halves_beyond_the_cached_layouts(vadd, runtime):
    # each half remembers the rows of the count it used last; the cache holds at most
    # _CHUNK_LAYOUTS layouts and is cleared past that, the remembered rows living on
    from hsapy.publishing import _CHUNK_LAYOUTS

    agent, kernel, queue, a, b, _outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    batch = compiled_batch(prepared)
    outs = [agent.device_pool.allocate(4 * N) for _ in range(24)]
    try:
        counts = [1 + (k * 5) % 13 for k in range(24)]            # 1..13, repeating
        for count, out in zip(counts, outs):
            result = batch([(a, b, out, N)] * count)
            assert [c for _first, c, _signal in result.chunks] == [count]
            result.wait(timeout=30)
            assert len(prepared._chunks) <= _CHUNK_LAYOUTS
        for out in outs:
            expect_sum(out)
    finally:
        for out in outs:
            out.close()


def arena_state(prepared, queue):
    arena = prepared.queue.attachments[("batch", prepared._slot_size)]
    return ([v[1] for v in arena.values], list(arena.indices), queue.load_write_index())


@pytest.mark.parametrize("bad", ["ten", None, 1 << 80, object()])
def test_a_bad_argument_raises_what_the_python_way_raises_and_leaves_no_trace(vadd, bad):
    _agent, kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    batch = compiled_batch(prepared)
    lists = [(a, b, outs[0], bad)] * 4
    before = arena_state(prepared, queue)
    with pytest.raises((HsapyTypeError, HsapyValueError)) as compiled:
        batch(lists)
    assert arena_state(prepared, queue) == before
    python = prepared.batch.__self__[_batch_native.STATE_ITEMS.index("fallback")]
    with pytest.raises((HsapyTypeError, HsapyValueError)) as plain:
        python(lists)
    assert type(compiled.value) is type(plain.value)
    assert str(compiled.value) == str(plain.value)
    assert batch([(a, b, outs[0], N)] * 2).wait(timeout=30).is_done   # still usable


def test_an_error_that_is_not_a_type_error_propagates_with_the_half_given_back(vadd):
    _agent, kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    batch = compiled_batch(prepared)

    class Refusing:
        def __index__(self):
            raise ZeroDivisionError("refused")

    before = arena_state(prepared, queue)
    with pytest.raises((ZeroDivisionError, KernelArgumentError)):
        batch([(a, b, outs[0], Refusing())] * 4)
    assert arena_state(prepared, queue) == before


def test_too_many_arguments_go_the_python_way(vadd):
    _agent, kernel, queue, a, b, outs = vadd
    batch = compiled_batch(kernel.prepare(queue, N, 64))
    for arguments in (tuple(range(_batch_native.MAX_ARGUMENTS + 1)), tuple(range(100_000))):
        with pytest.raises(KernelArgumentError, match="takes 4 argument"):
            batch([arguments] * 3)


def test_a_batch_waits_for_its_half_and_wraps_around_the_ring(vadd):
    _agent, kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    batch = compiled_batch(prepared)
    results = [batch([(a, b, outs[k % 3], N)] * 25, doorbell=False) for k in range(5)]
    # the third batch took half 0 again: it announced the first two and waited for the first;
    # 5 x 26 packets went around the 64-slot ring twice
    queue.flush()                                         # (the last one is not announced)
    for result in results:
        result.wait(timeout=60)
    assert queue.load_write_index() > 2 * queue.size
    for out in outs:
        expect_sum(out)


def test_reference_counts_are_unchanged_by_batches_and_their_errors(vadd):
    _agent, kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    batch = compiled_batch(prepared)
    args = (a, b, outs[0], N)
    bad = (a, b, outs[0], "ten")
    lists, bad_lists = [args] * 8, [bad] * 8
    # (not the state's shared objects -- None, True, False, the types, the interned names, the
    # timeout, the Packer that launches of one layout and shape share -- whose counts other
    # code and threads move too: a launch of an earlier test released by the reaper thread)
    shared = {"none", "true", "false", "list_type", "tuple_type", "type_error", "result_type",
              "closed_name", "timeout", "packer",
              *(n for n in _batch_native.STATE_ITEMS if "name_" in n)}
    names = ["args", "bad", "a", "out", "lists", "bad_lists", "kernel", "state",
             *(n for n in _batch_native.STATE_ITEMS if n not in shared)]
    watched = [args, bad, a, outs[0], lists, bad_lists, kernel, batch.__self__,
               *(obj for name, obj in zip(_batch_native.STATE_ITEMS, batch.__self__)
                 if name not in shared)]

    flat = batch.__self__[_batch_native.STATE_ITEMS.index("flat")]

    def counts():
        gc.collect()
        # (and the cached chunk rows' entries, which a call holds while it writes them)
        return {**dict(zip(names, (sys.getrefcount(obj) for obj in watched))),
                **{key: sys.getrefcount(entry) for key, entry in flat.items()}}

    for _ in range(3):                                    # warm: caches made
        batch(lists).wait(timeout=30)
    before = counts()
    assert len(flat) == 2                                 # (8 dispatches, on either half)
    for _ in range(20):
        batch(lists).wait(timeout=30)
        batch(lists, doorbell=False)
        queue.flush()
        try:
            batch(bad_lists)
        except HsapyTypeError:
            pass
        else:
            raise AssertionError("batch(bad_lists) raised nothing")
    queue.flush()
    batch(lists).wait(timeout=30)
    assert counts() == before


class Counting:
    """An observer (hsapy.queue.add_observer) that counts packets and records doorbells."""

    def __init__(self) -> None:
        self.written = 0
        self.rung: list[int] = []

    def packets_written(self, queue, first, count):
        self.written += count

    def doorbell(self, queue, index):
        self.rung.append(index)

    def signal_reused(self, handle):
        pass


def test_observers_and_closed_objects_are_the_python_way(vadd):
    _agent, kernel, queue, a, b, outs = vadd
    batch = compiled_batch(kernel.prepare(queue, N, 64))
    observer = Counting()
    add_observer(observer)
    try:
        batch([(a, b, outs[0], N)] * 4).wait(timeout=30)
    finally:
        remove_observer(observer)
    assert observer.written == 5                           # 4 dispatches and the barrier
    queue.close()
    with pytest.raises(ClosedError):
        batch([(a, b, outs[0], N)] * 4)


# -- publish and submit --------------------------------------------------------------------------

def slots_state(prepared):
    ring = prepared.ring
    return [v[1] for v in ring.values], list(ring.indices), prepared.queue.load_write_index()


@pytest.mark.parametrize("name", ["publish", "submit"])
def test_the_compiled_calls_are_what_prepared_offers(vadd, name):
    _agent, kernel, queue, a, b, outs = vadd
    call = getattr(kernel.prepare(queue, N, 64), name)
    assert _publish_native.why_not() is None
    assert inspect.isbuiltin(call)
    assert list(inspect.signature(call).parameters) == ["a", "b", "out", "n"]
    assert "vector_add" in call.__doc__


def test_published_dispatches_run_once_announced(vadd):
    _agent, kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    first = prepared.publish(a, b, outs[0], N)
    second = prepared.submit(a, b, outs[1], N)
    assert second == first + 1 and queue.load_write_index() == second + 1
    prepared(a, b, outs[2], N).wait(timeout=30)
    for out in outs:
        expect_sum(out)


def test_what_the_compiled_call_hands_on_behaves_alike(vadd):
    _agent, kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    publish = prepared.publish
    assert publish(a, b, out=outs[0], n=N) >= 0                 # keywords
    with pytest.raises(KernelArgumentError, match="missing n"):
        publish(a, b, outs[0], MISSING)
    with pytest.raises(KernelArgumentError, match="5 given"):
        publish(a, b, outs[0], N, N)
    with pytest.raises(KernelArgumentError, match="3 given"):
        publish(a, b, outs[0])
    other = kernel.prepare(queue, 2 * N, 64)      # its slots hold another template
    for _ in range(prepared.ring.slots + 3):
        other.publish(a, b, outs[1], N)
        publish(a, b, outs[2], N)
    prepared(a, b, outs[0], N).wait(timeout=60)
    for out in outs:
        expect_sum(out)


@pytest.mark.parametrize("bad", ["ten", None, 1 << 80, object(), 2.5])
def test_a_bad_argument_leaves_no_trace(vadd, bad):
    _agent, kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    prepared.submit(a, b, outs[0], N)                  # the next slots: this launch's
    prepared(a, b, outs[0], N).wait(timeout=30)
    before = slots_state(prepared)
    with pytest.raises((HsapyTypeError, HsapyValueError)):
        prepared.publish(a, b, outs[0], bad)
    after = slots_state(prepared)
    assert after == before
    assert prepared.submit(a, b, outs[1], N) == before[2]     # the index it did not take
    prepared(a, b, outs[1], N).wait(timeout=30)
    expect_sum(outs[1])


def test_a_slot_in_flight_is_waited_for_and_the_ring_wraps(vadd):
    _agent, kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    slots = prepared.ring.slots
    for k in range(2 * slots + 5):           # twice around the kernarg ring, unannounced
        prepared.publish(a, b, outs[k % 3], N)
    assert queue.load_write_index() >= 2 * slots
    prepared(a, b, outs[0], N).wait(timeout=120)
    for out in outs:
        expect_sum(out)


def test_submit_tells_observers_of_its_doorbell(vadd):
    _agent, kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    prepared.submit(a, b, outs[0], N)
    observer = Counting()
    add_observer(observer)
    try:
        index = prepared.submit(a, b, outs[0], N)
    finally:
        remove_observer(observer)
    assert index in observer.rung
    prepared(a, b, outs[0], N).wait(timeout=30)


def test_reference_counts_are_unchanged_by_calls_and_their_errors(vadd):
    _agent, kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    publish, submit = prepared.publish, prepared.submit
    bad = "ten"
    shared = {"none", "fast_owner", "missing", "one", "timeout", "bytes_type", "observers"}
    state = publish.__self__
    n = 12345

    def counts():
        gc.collect()
        # (each slot's (owner, value words, body) entry too: the call holds it while it runs)
        watched = [a, outs[0], n, bad, publish, state,
                   *(obj for name, obj in zip(_publish_native.STATE_ITEMS, state)
                     if name not in shared), *prepared.ring.state]
        return [sys.getrefcount(obj) for obj in watched]

    for _ in range(prepared.ring.slots + 3):          # every slot this launch's
        submit(a, b, outs[0], n)
    prepared(a, b, outs[0], N).wait(timeout=30)
    before = counts()
    for _ in range(100):
        publish(a, b, outs[0], n)
        submit(a, b, outs[0], n)
        try:
            publish(a, b, outs[0], bad)
        except KernelArgumentError:
            pass
        else:
            raise AssertionError("publish(..., 'ten') raised nothing")
    prepared(a, b, outs[0], N).wait(timeout=60)
    assert counts() == before


@pytest.mark.parametrize("how", ["batch", "submit"])
def test_calls_from_threads_at_once(vadd, how):
    _agent, kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    errors: list[BaseException] = []

    def work(out):
        try:
            for _ in range(10 if how == "batch" else 200):
                if how == "batch":
                    prepared.batch([(a, b, out, N)] * 7).wait(timeout=60)
                else:
                    prepared.submit(a, b, out, N)
        except BaseException as exc:     # noqa: BLE001 - reported below
            errors.append(exc)

    compiled_batch(prepared)
    threads = [threading.Thread(target=work, args=(out,)) for out in outs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in threads)
    prepared(a, b, outs[0], N).wait(timeout=60)
    for out in outs:
        expect_sum(out)


# -- without the builtins (HSAPY_NATIVE_BUILTINS=0) what the compiled calls keep works alike --

def test_without_builtins_a_traceback_shows_the_generated_source_and_the_rows_are_cached(
        vadd, monkeypatch):
    monkeypatch.setenv("HSAPY_NATIVE_BUILTINS", "0")
    _agent, kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    assert not inspect.isbuiltin(prepared.publish)
    with pytest.raises(KernelArgumentError) as refused:
        prepared.publish(a, b, outs[0], "ten")
    text = "".join(traceback.format_tb(refused.tb))
    assert "<hsapy fast path: publish(a, b, out, n)>" in text
    assert "return general(slot, (a, b, out, n))" in text
    prepared.batch([(a, b, outs[0], N)] * 5).wait(timeout=30)
    prepared.batch([(a, b, outs[0], N)] * 2).wait(timeout=30)
    assert not inspect.isbuiltin(prepared.batch)
    assert sorted(count for _half, count, _shared in prepared._chunks) == [2, 5]
