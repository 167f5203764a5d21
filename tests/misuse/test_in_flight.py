"""A dispatch (or an asynchronous copy) holds what its packet points at until it completes:
closing or dropping a buffer, an executable or a queue's owner meanwhile defers the release, and
never frees memory or code the GPU may still use."""
from __future__ import annotations

import gc
import time

import numpy as np
import pytest
from _misuse import N, gate

from hsapy import aql
from hsapy._lifetime import drain, live_counts, parked_count
from hsapy.asm import kernels
from hsapy.dispatch import Graph
from hsapy.errors import WaitTimeoutError
from hsapy.queue import QueueFullError
from hsapy.runtime import Runtime


def _eventually(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _allocated(rt, address: int) -> bool:
    return rt.lib.memory.find(address) is not None


@pytest.mark.parametrize("how", ["launch", "prepared", "submit", "batch", "graph"])
def test_closing_an_output_buffer_in_flight_waits_for_the_dispatch(rt, vadd, queue, bufs, how):
    a, b, out = bufs
    view = np.zeros(N, np.float32)
    held = gate(rt, queue)
    prepared = vadd.prepare(queue, N, 64)
    if how == "launch":
        vadd.launch(queue, [a, b, out, N], N, 64, wait=False)
    elif how == "prepared":
        prepared(a, b, out, N)
    elif how == "submit":
        prepared.submit(a, b, out, N)
    elif how == "batch":
        prepared.batch([(a, b, out, N)] * 3)
    else:
        graph = Graph(queue)
        graph.add_dispatch(vadd, [a, b, out, N], N, 64)
        graph.launch(wait=False)
    address = out.address
    out.close()
    drain()
    assert _allocated(rt, address)                      # parked: the dispatch will write it
    held.store(0)
    assert _eventually(lambda: not _allocated(rt, address))
    queue.check()                                       # the kernel never faulted
    del view


def test_closing_an_executable_in_flight_keeps_its_code_until_the_dispatch_ran(rt, executable,
                                                                            vadd, queue, bufs):
    held = gate(rt, queue)
    result = vadd.launch(queue, [*bufs, N], N, 64, wait=False)
    executable.close()
    drain()
    assert rt.lib.kernel_objects.get(vadd.kernel_object) is not None
    held.store(0)
    result.wait(timeout=10)                             # ran: no INVALID_PACKET_FORMAT
    assert np.array_equal(bufs[2].copy_to(dtype=np.float32), np.arange(N) + 1.0)
    assert _eventually(lambda: rt.lib.kernel_objects.get(vadd.kernel_object) is None)


def test_a_copy_destination_closed_in_flight_is_freed_after_the_copy(rt, agent):
    src, dst = agent.device_pool.allocate(4096), agent.device_pool.allocate(4096)
    dependency, done = rt.create_signal(1), rt.create_signal(1)
    rt.copy(dst, src, 4096, deps=[dependency], completion=done)
    address = dst.address
    dst.close()
    drain()
    assert _allocated(rt, address)
    dependency.store(0)
    done.wait(timeout=5)
    assert _eventually(lambda: not _allocated(rt, address))


def test_closing_the_queue_releases_what_waited_for_its_dispatches(rt, vadd, queue, bufs):
    gate(rt, queue)                                     # never opened
    vadd.launch(queue, [*bufs, N], N, 64, wait=False)
    address = bufs[2].address
    bufs[2].close()
    drain()
    assert _allocated(rt, address) and parked_count() >= 1
    queue.close()                                       # its packets never run now
    assert _eventually(lambda: not _allocated(rt, address))


def test_a_queue_stopped_by_an_error_releases_too(rt, vadd, queue, bufs):
    vadd.launch(queue, [*bufs, N], N, 64, wait=False)
    queue.publish(aql.split(b"\x07" + bytes(63)))       # a malformed packet stops the queue
    gate(rt, queue)
    vadd.launch(queue, [*bufs, N], N, 64, wait=False)   # never runs
    assert _eventually(lambda: queue.error is not None)
    address = bufs[0].address
    bufs[0].close()
    assert _eventually(lambda: not _allocated(rt, address))


def test_runtime_close_with_dispatches_in_flight_releases_everything():
    rt = Runtime(backend="sim", targets=["gfx942"])
    before = live_counts()
    agent = rt.gpu()
    vadd = rt.load(kernels.build("vector_add", "gfx942"), agent).kernel("vector_add")
    queue = agent.create_queue(64)
    bufs = [rt.system_pool.allocate(4 * N) for _ in range(3)]
    gate(rt, queue)
    vadd.launch(queue, [*bufs, N], N, 64, wait=False)
    bufs[1].close()
    rt.close()
    assert not rt.lib.is_open
    after = live_counts()
    for kind in ("Buffer", "Queue", "Signal", "Executable", "Runtime"):
        assert after.get(kind, 0) <= before.get(kind, 0)


def test_views_keep_memory_mapped_until_collected_then_the_runtime_shuts_down():
    rt = Runtime(backend="sim", targets=["gfx942"])
    buffer = rt.system_pool.allocate(4096)
    view = buffer.numpy(np.uint32)
    view[:] = 3
    queue = rt.gpu().create_queue(64)
    ring = queue.ring
    rt.close()
    assert rt.is_closed and rt.lib.is_open              # the views hold the memory
    assert int(view.sum()) == 3 * 1024 and ring.shape == (64, 64)
    view[0] = 4                                         # still ours to write
    del view
    gc.collect()
    drain()
    assert rt.lib.is_open                               # the ring view is still alive
    del ring
    gc.collect()
    drain()
    assert not rt.lib.is_open


def test_a_result_taken_before_its_slot_is_reused_by_another_prepared_launch(rt, vadd, queue,
                                                                           bufs):
    first = vadd.prepare(queue, N, 64)
    other = vadd.prepare(queue, (N, 1), (64, 1))        # same ring, another launch
    result = first(*bufs, N)
    result.wait(timeout=10)
    start_end = (result.start, result.end)
    for _ in range(queue.size):
        other.submit(*bufs, N)
    assert result.is_done and (result.start, result.end) == start_end
    queue.flush()


@pytest.mark.parametrize("slots", ["past the write index", "already consumed"])
def test_abandoning_slots_that_were_not_reserved_is_refused_and_no_dispatch_is_lost(
        rt, vadd, queue, bufs, slots):
    # the no-op packet written for an abandoned slot overwrote the dispatch later published
    # there (its result never completed: the wait timed out)
    from hsapy.errors import HsapyValueError

    if slots == "already consumed":
        # packets 0..62 run, the gate is 63: the launches below take slots 0, 1, 2 again
        queue.publish_batch([aql.barrier_and([])] * (queue.size - 1))
    opened = gate(rt, queue)
    deadline = time.monotonic() + 10
    while queue.load_read_index() < queue.load_write_index() - 1:     # up to the gate
        assert time.monotonic() < deadline
        time.sleep(0.001)
    first = queue.load_write_index() + 2 if slots == "past the write index" else 0
    with pytest.raises(HsapyValueError, match="not reserved"):
        queue.abandon(first)
    results = [vadd.launch(queue, [*bufs, N], N, 64, wait=False) for _ in range(3)]
    queue.check()                 # where abandoned slots get their no-op packets
    opened.store(0)
    for result in results:
        result.wait(10.0)


def test_graph_launch_timeout_bounds_the_wait_for_room_on_the_queue(rt, vadd, bufs):
    queue = rt.gpu().create_queue(64)
    opened = gate(rt, queue)                      # nothing after the gate runs
    graph = Graph(queue)
    for _ in range(40):
        graph.add_dispatch(vadd, [*bufs, N], N, 64)
    graph.launch(wait=False, timeout=5)           # 41 of 64 slots taken
    start = time.monotonic()
    with pytest.raises((QueueFullError, WaitTimeoutError)):
        graph.launch(wait=False, timeout=0.3)     # room for 40 more never comes
    assert time.monotonic() - start < 3
    opened.store(0)
    queue.close()


@pytest.mark.parametrize("how", ["dispatch", "batch"])
def test_waiting_on_work_no_doorbell_announced_says_how_to_announce_it(rt, vadd, queue, bufs,
                                                                        how):
    prepared = vadd.prepare(queue, N, 64)
    result = (prepared(*bufs, N, doorbell=False) if how == "dispatch"
              else prepared.batch([(*bufs, N)] * 3, doorbell=False))
    with pytest.raises(WaitTimeoutError, match=r"without a doorbell.*queue\.flush\(\)"):
        result.wait(timeout=0.2)
    queue.flush()
    assert result.wait(timeout=30).is_done
    assert np.array_equal(bufs[2].copy_to(dtype=np.float32), np.arange(N) + 1)
