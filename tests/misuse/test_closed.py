"""Every public object, used after it was closed -- by its own close(), by what owns it, or by
Runtime.close() -- raises ClosedError naming the object and what closed it, and changes
nothing. On every backend (the checks come before any runtime call): the simulator, ROCr over
the simulated thunk, and a GPU when there is one."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from _misuse import N, gate

from hsapy import aql
from hsapy.asm import kernels
from hsapy.dispatch import Graph
from hsapy.errors import ClosedError
from hsapy.hip import HipError, HipRuntime, hipError_t
from hsapy.runtime import Runtime

BARRIER = aql.barrier_and([])


@pytest.fixture
def ctx(backend):
    """A fresh runtime with everything a use below needs; closed at the end if still open."""
    rt = Runtime(backend=backend, targets=["gfx942"] if backend == "sim" else None)
    agent = rt.gpu()
    code = kernels.build("vector_add", agent.target)
    executable = rt.load(code, agent)
    vadd = executable.kernel("vector_add")
    queue = agent.create_queue(64)
    bufs = [rt.system_pool.allocate(4 * N) for _ in range(3)]
    signal = rt.create_signal(1)
    prepared = vadd.prepare(queue, N, 64)
    prepared(*bufs, N).wait(timeout=10)
    prepared.submit(*bufs, N)
    prepared.publish(*bufs, N)
    queue.flush()
    yield SimpleNamespace(rt=rt, agent=agent, code=code, executable=executable, vadd=vadd,
                          queue=queue, bufs=bufs, signal=signal, prepared=prepared,
                          pool=rt.system_pool, other=rt.system_pool.allocate(4 * N))
    rt.close()


def _enter(closable):
    """``with closable:`` -- entering a closed object's context is a use too."""
    with closable:
        return closable


# (what is closed, use) -> the use after close; ``c`` is the ctx
USES = {
    "runtime": [
        ("create_signal", lambda c: c.rt.create_signal(1)),
        ("signal_pool", lambda c: c.rt.signal_pool),
        ("timestamp", lambda c: c.rt.timestamp()),
        ("load", lambda c: c.rt.load(c.code)),
        ("copy", lambda c: c.rt.copy(c.bufs[0], c.bufs[1], 16)),
        ("pool.allocate", lambda c: c.pool.allocate(64)),
        ("pool.access", lambda c: c.pool.access(c.agent)),
        ("agent.create_queue", lambda c: c.agent.create_queue(64)),
        ("with", lambda c: _enter(c.rt)),
    ],
    "buffer": [
        ("numpy", lambda c: c.bufs[0].numpy()),
        ("copy_from", lambda c: c.bufs[0].copy_from(np.zeros(4, np.uint8))),
        ("copy_to", lambda c: c.bufs[0].copy_to()),
        ("fill", lambda c: c.bufs[0].fill(0)),
        ("allow_access", lambda c: c.bufs[0].allow_access([c.agent])),
        ("address", lambda c: c.bufs[0].address),
        ("int", lambda c: int(c.bufs[0])),
        ("copy dst", lambda c: c.rt.copy(c.bufs[0], c.other, 16)),
        ("copy src", lambda c: c.rt.copy(c.other, c.bufs[0], 16)),
        ("launch argument", lambda c: c.vadd.launch(c.queue, [*c.bufs, N], N, 64)),
        ("prepared argument", lambda c: c.prepared(*c.bufs, N)),
        ("publish argument", lambda c: c.prepared.publish(*c.bufs, N)),
        ("batch argument", lambda c: c.prepared.batch([(*c.bufs, N)])),
        ("with", lambda c: _enter(c.bufs[0])),
    ],
    "signal": [
        ("load", lambda c: c.signal.load()),
        ("load relaxed", lambda c: c.signal.load(relaxed=True)),
        ("store", lambda c: c.signal.store(0)),
        ("silent store", lambda c: c.signal.store(0, silent=True)),
        ("add", lambda c: c.signal.add(1)),
        ("subtract", lambda c: c.signal.subtract(1)),
        ("exchange", lambda c: c.signal.exchange(1)),
        ("cas", lambda c: c.signal.cas(1, 2)),
        ("bitwise_and", lambda c: c.signal.bitwise_and(1)),
        ("bitwise_or", lambda c: c.signal.bitwise_or(1)),
        ("bitwise_xor", lambda c: c.signal.bitwise_xor(1)),
        ("wait", lambda c: c.signal.wait(timeout=5)),
        ("copy dependency", lambda c: c.rt.copy(c.bufs[0], c.bufs[1], 16, deps=[c.signal])),
        ("copy completion", lambda c: c.rt.copy(c.bufs[0], c.bufs[1], 16, completion=c.signal)),
        ("with", lambda c: _enter(c.signal)),
    ],
    "queue": [
        ("ring", lambda c: c.queue.ring),
        ("cdata", lambda c: c.queue.cdata),
        ("check", lambda c: c.queue.check()),
        ("load_read_index", lambda c: c.queue.load_read_index()),
        ("load_write_index", lambda c: c.queue.load_write_index()),
        ("add_write_index", lambda c: c.queue.add_write_index(1)),
        ("cas_write_index", lambda c: c.queue.cas_write_index(0, 1)),
        ("store_write_index", lambda c: c.queue.store_write_index(5)),
        ("reserve", lambda c: c.queue.reserve(1)),
        ("write", lambda c: c.queue.write(0, BARRIER.word, BARRIER.body)),
        ("write_many", lambda c: c.queue.write_many(0, np.zeros((1, 64), np.uint8),
                                                    np.zeros(1, np.uint32))),
        ("publish", lambda c: c.queue.publish(BARRIER)),
        ("publish_batch", lambda c: c.queue.publish_batch([BARRIER])),
        ("ring_doorbell", lambda c: c.queue.ring_doorbell(0)),
        ("flush", lambda c: c.queue.flush()),
        ("enable_profiling", lambda c: c.queue.enable_profiling()),
        ("prepare", lambda c: c.vadd.prepare(c.queue, N, 64)),
        ("launch", lambda c: c.vadd.launch(c.queue, [*c.bufs, N], N, 64)),
        ("prepared", lambda c: c.prepared(*c.bufs, N)),
        ("submit", lambda c: c.prepared.submit(*c.bufs, N)),
        ("publish fast path", lambda c: c.prepared.publish(*c.bufs, N)),
        ("batch", lambda c: c.prepared.batch([(*c.bufs, N)] * 4)),
        ("graph", lambda c: Graph(c.queue).add_packet(BARRIER)),
        ("with", lambda c: _enter(c.queue)),
        ("slot_address", lambda c: c.queue.slot_address(0)),
        ("abandon", lambda c: c.queue.abandon(0)),
    ],
    "executable": [
        ("kernel", lambda c: c.executable.kernel("vector_add")),
        ("prepare", lambda c: c.vadd.prepare(c.queue, N, 64)),
        ("launch", lambda c: c.vadd.launch(c.queue, [*c.bufs, N], N, 64)),
        ("prepared", lambda c: c.prepared(*c.bufs, N)),
        ("submit", lambda c: c.prepared.submit(*c.bufs, N)),
        ("publish", lambda c: c.prepared.publish(*c.bufs, N)),
        ("batch", lambda c: c.prepared.batch([(*c.bufs, N)])),
        ("graph", lambda c: Graph(c.queue).add_dispatch(c.vadd, [*c.bufs, N], N, 64)),
        ("with", lambda c: _enter(c.executable)),
    ],
}

CLOSERS = {
    "runtime": lambda c: c.rt.close(),
    "buffer": lambda c: c.bufs[0].close(),
    "signal": lambda c: c.signal.close(),
    "queue": lambda c: c.queue.close(),
    "executable": lambda c: c.executable.close(),
}
CLOSED_BY = {"runtime": "Runtime.close()", "buffer": "Buffer.close()",
             "signal": "Signal.close()", "queue": "Queue.close()",
             "executable": "Executable.close()"}

CASES = [(closed, name, use) for closed, uses in USES.items() for name, use in uses]
# Runtime.close() closes everything it owns: the uses of each object again, closed that way.
CASES += [("runtime", f"{closed}: {name}", use) for closed, uses in USES.items()
          if closed not in ("runtime",) for name, use in uses]


@pytest.mark.parametrize("closed, name, use", CASES, ids=[f"{c}-{n}" for c, n, _u in CASES])
def test_use_after_close_raises_closed_error(ctx, closed, name, use):
    written = ctx.queue.load_write_index()
    CLOSERS[closed](ctx)
    with pytest.raises(ClosedError) as caught:
        use(ctx)
    assert caught.value.closed_by == CLOSED_BY[closed] or (
        closed == "executable" and caught.value.closed_by == "Executable.close()")
    assert caught.value.what in str(caught.value)
    if not ctx.queue.is_closed:
        assert ctx.queue.load_write_index() == written   # nothing reached the ring


def test_a_closed_object_says_so_in_its_repr(ctx):
    ctx.bufs[0].close()
    ctx.signal.close()
    ctx.queue.close()
    ctx.executable.close()
    assert "closed" in repr(ctx.bufs[0]) and "closed" in repr(ctx.signal)
    assert "closed" in repr(ctx.queue) and "closed" in repr(ctx.executable)


def test_results_of_a_closed_queue_that_completed_stay_done(ctx):
    done = ctx.prepared(*ctx.bufs, N).wait(timeout=10)
    batch = ctx.prepared.batch([(*ctx.bufs, N)] * 3).wait(timeout=10)
    ctx.queue.close()
    assert done.is_done and batch.is_done
    done.wait(timeout=1)
    batch.wait(timeout=1)


def test_a_batch_cancelled_by_queue_close_is_not_done(ctx):
    gate(ctx.rt, ctx.queue)
    batch = ctx.prepared.batch([(*ctx.bufs, N)] * 3)
    ctx.queue.close()
    with pytest.raises(ClosedError, match="never will"):
        batch.is_done
    with pytest.raises(ClosedError):
        batch.wait(timeout=1)


def test_a_graph_of_a_closed_executable_is_not_replayed(ctx):
    graph = Graph(ctx.queue)
    graph.add_dispatch(ctx.vadd, [*ctx.bufs, N], N, 64)
    graph.launch(timeout=10)
    written = ctx.queue.load_write_index()
    ctx.executable.close()
    with pytest.raises(ClosedError, match="executable"):
        graph.launch()
    assert ctx.queue.load_write_index() == written


def test_a_signal_pool_of_a_closed_runtime_refuses(ctx):
    pool = ctx.rt.signal_pool
    signal = pool.acquire()
    ctx.rt.close()
    with pytest.raises(ClosedError):
        pool.acquire()
    with pytest.raises(ClosedError):
        signal.load()


# -- hsapy.hip ------------------------------------------------------------------------------

HIP_CALLS = [
    ("hipMalloc", lambda h: h.malloc(64)),
    ("hipFree", lambda h: h.free(None)),
    ("hipStreamCreate", lambda h: h.streamCreate()),
    ("hipDeviceSynchronize", lambda h: h.deviceSynchronize()),
    ("hipGetDeviceCount", lambda h: h.getDeviceCount()),
    ("hipEventCreate", lambda h: h.eventCreate()),
    ("hipMemcpy", lambda h: h.memcpy(np.zeros(4), np.zeros(4))),
]


@pytest.mark.parametrize("name, call", HIP_CALLS, ids=[n for n, _c in HIP_CALLS])
def test_a_closed_hip_runtime_is_deinitialized(name, call):
    hip = HipRuntime(backend="sim")
    hip.close()
    with pytest.raises(HipError) as caught:
        call(hip)
    assert caught.value.code == hipError_t.hipErrorDeinitialized and caught.value.call == name
    assert isinstance(caught.value.__cause__, ClosedError)


EVENT_CALLS = [
    ("hipEventRecord", lambda h, e: h.eventRecord(e)),
    ("hipEventQuery", lambda h, e: h.eventQuery(e)),
    ("hipEventSynchronize", lambda h, e: h.eventSynchronize(e)),
    ("hipEventElapsedTime", lambda h, e: h.eventElapsedTime(e, e)),
    ("hipEventDestroy", lambda h, e: h.eventDestroy(e)),
    ("hipStreamWaitEvent", lambda h, e: h.streamWaitEvent(None, e)),
]


@pytest.mark.parametrize("name, call", EVENT_CALLS, ids=[n for n, _c in EVENT_CALLS])
def test_a_destroyed_hip_event_is_an_invalid_handle(name, call):
    with HipRuntime(backend="sim") as hip:
        event = hip.eventCreate()
        hip.eventRecord(event)
        hip.eventDestroy(event)
        with pytest.raises(HipError) as caught:
            call(hip, event)
        assert caught.value.code == hipError_t.hipErrorInvalidHandle
        with pytest.raises(ClosedError, match="hipEventDestroy"):
            event.is_complete


def test_a_destroyed_hip_stream_and_unloaded_module_are_invalid_handles():
    with HipRuntime(backend="sim") as hip:
        stream = hip.streamCreate()
        hip.streamDestroy(stream)
        with pytest.raises(HipError) as caught:
            hip.streamSynchronize(stream)
        assert caught.value.code == hipError_t.hipErrorInvalidHandle
        module = hip.moduleLoadData(kernels.build("vector_add", "gfx942"))
        hip.moduleUnload(module)
        with pytest.raises(HipError) as caught:
            hip.moduleGetFunction(module, "vector_add")
        assert caught.value.code == hipError_t.hipErrorInvalidHandle


@pytest.mark.parametrize("closer", ["their own close()", "Runtime.close()"])
def test_the_repr_of_a_closed_object_never_raises(closer):
    # debuggers, logs and tracebacks call repr: a BufferView of a closed buffer and a
    # BatchResult of a closed queue raised ClosedError from it
    rt = Runtime(backend="sim", targets=["gfx942"])
    queue = rt.gpu().create_queue(64)
    vadd = rt.load(kernels.build("vector_add", "gfx942")).kernel("vector_add")
    bufs = [rt.system_pool.allocate(4 * N) for _ in range(3)]
    opened = gate(rt, queue)              # the batch and the result never complete
    prepared = vadd.prepare(queue, N, 64)
    objects = [rt, queue, vadd.executable, vadd, bufs[0], bufs[0].view(np.float32), opened,
               prepared, prepared.batch([(*bufs, N)]), prepared(*bufs, N), Graph(queue)]
    if closer == "Runtime.close()":
        rt.close()
    else:
        for closable in (bufs[0], queue, vadd.executable, opened):
            closable.close()
    for thing in objects:
        assert type(thing).__name__ in repr(thing) or "Kernel" in repr(thing)
    rt.close()
