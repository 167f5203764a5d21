"""The compiled publish and submit (hsapy._publish_native): in use where they can be, and alike
with the generated functions in what they publish, refuse and leave behind.

tests/sim/test_publishing.py compares them with the reference byte for byte over random
kernels; here: what they hand on (keywords, MISSING, a slot of another launch), errors (the
slot given back, nothing published), a slot still in flight, a full ring, observers, reference
counts and threads.
"""
from __future__ import annotations

import gc
import inspect
import sys
import threading

import numpy as np
import pytest

from hsapy import _native, _publish_native
from hsapy.asm import kernels
from hsapy.errors import HsapyTypeError, HsapyValueError
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
        yield kernel, queue, a, b, outs
    for buffer in (a, b, *outs):
        buffer.close()


def expect_sum(out) -> None:
    assert np.array_equal(out.copy_to(dtype=np.float32), np.arange(N, dtype=np.float32) + 2)


def slots_state(prepared):
    ring = prepared.ring
    return [v[1] for v in ring.values], list(ring.indices), prepared.queue.load_write_index()


@pytest.mark.parametrize("name", ["publish", "submit"])
def test_the_compiled_calls_are_what_prepared_offers(vadd, name):
    kernel, queue, a, b, outs = vadd
    call = getattr(kernel.prepare(queue, N, 64), name)
    assert _publish_native.why_not() is None
    assert inspect.isbuiltin(call)
    assert list(inspect.signature(call).parameters) == ["a", "b", "out", "n"]
    assert "vector_add" in call.__doc__


def test_published_dispatches_run_once_announced(vadd):
    kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    first = prepared.publish(a, b, outs[0], N)
    second = prepared.submit(a, b, outs[1], N)
    assert second == first + 1 and queue.load_write_index() == second + 1
    prepared(a, b, outs[2], N).wait(timeout=30)
    for out in outs:
        expect_sum(out)


def test_what_the_compiled_call_hands_on_behaves_alike(vadd):
    kernel, queue, a, b, outs = vadd
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
    kernel, queue, a, b, outs = vadd
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
    kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    slots = prepared.ring.slots
    for k in range(2 * slots + 5):           # twice around the kernarg ring, unannounced
        prepared.publish(a, b, outs[k % 3], N)
    assert queue.load_write_index() >= 2 * slots
    prepared(a, b, outs[0], N).wait(timeout=120)
    for out in outs:
        expect_sum(out)


def test_submit_tells_observers_of_its_doorbell(vadd):
    kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    prepared.submit(a, b, outs[0], N)

    class Counting:
        rung: list = []

        def packets_written(self, queue, first, count):
            pass

        def doorbell(self, queue, index):
            self.rung.append(index)

        def signal_reused(self, handle):
            pass

    observer = Counting()
    add_observer(observer)
    try:
        index = prepared.submit(a, b, outs[0], N)
    finally:
        remove_observer(observer)
    assert index in observer.rung
    prepared(a, b, outs[0], N).wait(timeout=30)


def test_reference_counts_are_unchanged_by_calls_and_their_errors(vadd):
    kernel, queue, a, b, outs = vadd
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


def test_publishing_from_threads_at_once(vadd):
    kernel, queue, a, b, outs = vadd
    prepared = kernel.prepare(queue, N, 64)
    errors: list[BaseException] = []

    def work(out):
        try:
            for _ in range(200):
                prepared.submit(a, b, out, N)
        except BaseException as exc:     # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(out,)) for out in outs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in threads)
    prepared(a, b, outs[0], N).wait(timeout=60)
    for out in outs:
        expect_sum(out)
