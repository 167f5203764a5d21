"""Misuse across threads, on the simulator: one thread waits or publishes while another closes
what it uses. Every outcome is bounded: the waiter gets its result or a typed error (ClosedError,
QueueError, WaitTimeoutError) within its timeout, the closer returns, nothing crashes, nothing
published is lost silently. Every thread is joined with a timeout and must have finished."""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from _misuse import N, gate, isolated

from hsapy.asm import kernels
from hsapy.errors import ClosedError, HsapyError, WaitTimeoutError
from hsapy.runtime import Runtime

# How long the slow executor's dispatch runs; every thread must be done well within JOIN_S.
LONG_S = 1.5
JOIN_S = 5.0


class SlowExecutor:
    """A simulator executor whose every dispatch runs ``seconds`` of host time, polling its
    context as the ISA interpreter does (so a queue being destroyed cancels it). A stand-in
    for a long kernel that needs no assembler."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = threading.Event()
        self.runs = 0

    def execute(self, ctx: Any) -> None:
        self.started.set()
        deadline = time.monotonic() + self.seconds
        while time.monotonic() < deadline:
            ctx.poll()
            time.sleep(0.002)
        self.runs += 1


class Worker:
    """A thread running ``action``; ``join`` asserts it finished and returns what it returned
    or raised."""

    def __init__(self, action: Callable[[], Any]) -> None:
        self.outcome: Any = None
        self.raised: BaseException | None = None
        self.elapsed = 0.0
        self.thread = threading.Thread(target=self._run, args=(action,), daemon=True)
        self.thread.start()

    def _run(self, action: Callable[[], Any]) -> None:
        start = time.monotonic()
        try:
            self.outcome = action()
        except BaseException as exc:     # recorded for the test to judge
            self.raised = exc
        self.elapsed = time.monotonic() - start

    def join(self, timeout: float = JOIN_S) -> Worker:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"the thread still runs after {timeout} s"
        return self


def _typed(worker: Worker, *allowed: type[BaseException]) -> None:
    """The worker returned, or raised one of hsapy's typed errors (``allowed``, default any)."""
    if worker.raised is not None:
        assert isinstance(worker.raised, allowed or (HsapyError,)), repr(worker.raised)


@pytest.fixture
def slow():
    """A runtime whose dispatches each take LONG_S; vector_add loaded; a queue; buffers."""
    executor = SlowExecutor(LONG_S)
    rt = Runtime(backend="sim", targets=["gfx942"], executor=executor)
    agent = rt.gpu()
    executable = rt.load(kernels.build("vector_add", "gfx942"), agent)
    queue = agent.create_queue(64)
    bufs = [rt.system_pool.allocate(4 * N) for _ in range(3)]
    ns = type("Slow", (), {})()
    ns.__dict__.update(rt=rt, agent=agent, executable=executable, queue=queue, bufs=bufs,
                       vadd=executable.kernel("vector_add"), executor=executor)
    yield ns
    rt.close()


# -- a thread waits on a long dispatch while another closes what it uses --------------------

CLOSERS = {
    "queue": lambda s: s.queue.close(),
    "runtime": lambda s: s.rt.close(),
    "executable": lambda s: s.executable.close(),
    "argument buffer": lambda s: s.bufs[2].close(),
}


@pytest.mark.parametrize("closed", list(CLOSERS))
def test_a_wait_on_a_long_dispatch_ends_when_another_thread_closes_what_it_uses(slow, closed):
    result = slow.vadd.launch(slow.queue, [*slow.bufs, N], N, 64, wait=False)
    waiter = Worker(lambda: result.wait(timeout=JOIN_S - 1))
    assert slow.executor.started.wait(JOIN_S)
    closer = Worker(lambda: CLOSERS[closed](slow))
    closer.join()
    waiter.join()
    assert closer.raised is None
    if closed in ("queue", "runtime"):
        # the dispatch is cancelled: its wait cannot end with the result
        assert isinstance(waiter.raised, HsapyError), repr(waiter.raised)
        assert waiter.elapsed < LONG_S + 1.0
    else:
        # parked: the code and the buffer stay until the dispatch completed
        assert waiter.raised is None, repr(waiter.raised)


# -- publishers on one queue while a third thread closes it ---------------------------------

PUBLISHERS = {
    "submit": lambda p, bufs: [p.submit(*bufs, N)],
    "batch": lambda p, bufs: [p.batch([(*bufs, N)] * 4)],
    "launch": lambda p, bufs: [p.kernel.launch(p.queue, [*bufs, N], N, 64, wait=False)],
    "prepared": lambda p, bufs: [p(*bufs, N)],
}


@pytest.mark.parametrize("how", list(PUBLISHERS))
def test_publishers_racing_a_queue_close_either_publish_or_raise_closed_error(rt, vadd, bufs,
                                                                             how):
    queue = rt.gpu().create_queue(64)
    prepared = vadd.prepare(queue, N, 64)
    stop = threading.Event()
    published: list[list[Any]] = [[], []]

    def publish(mine: list[Any]) -> str:
        while not stop.is_set():
            try:
                mine.extend(PUBLISHERS[how](prepared, bufs))
            except ClosedError:
                return "closed"
        return "stopped"

    publishers = [Worker(lambda mine=mine: publish(mine)) for mine in published]
    time.sleep(0.05)
    closer = Worker(queue.close)
    closer.join()
    stop.set()
    for worker in publishers:
        worker.join()
        assert worker.raised is None, repr(worker.raised)
    results = published[0] + published[1]
    assert results, "nothing was published before the close"
    for result in results:
        if isinstance(result, int):          # submit gives the packet's index only
            continue
        # each either completed or says its queue was closed: none waits out its timeout
        start = time.monotonic()
        try:
            result.wait(timeout=2)
        except ClosedError:
            pass
        assert time.monotonic() - start < 1.0


@pytest.mark.parametrize("how", list(PUBLISHERS) + ["publish"])
@pytest.mark.parametrize("closer", ["queue", "runtime"])
def test_a_publisher_blocked_on_a_full_queue_gets_closed_error_when_another_thread_closes_it(
        how, closer):
    rt = Runtime(backend="sim", targets=["gfx942"])
    try:
        agent = rt.gpu()
        vadd = rt.load(kernels.build("vector_add", "gfx942"), agent).kernel("vector_add")
        queue = agent.create_queue(64)
        bufs = [rt.system_pool.allocate(4 * N) for _ in range(3)]
        gate(rt, queue)                                  # never opened: the queue fills up
        prepared = vadd.prepare(queue, N, 64)
        publish = (lambda: prepared.publish(*bufs, N)) if how == "publish" else (
            lambda: PUBLISHERS[how](prepared, bufs))

        def fill() -> None:
            for _ in range(2 * queue.size):              # blocks (timeout 10 s) once full
                publish()

        publisher = Worker(fill)
        time.sleep(0.1)
        Worker(queue.close if closer == "queue" else rt.close).join()
        publisher.join()
        assert isinstance(publisher.raised, ClosedError), repr(publisher.raised)
        assert publisher.elapsed < 2.0
    finally:
        rt.close()


# -- signals ------------------------------------------------------------------------------

def test_two_waiters_on_a_signal_another_thread_destroys_get_closed_error(rt):
    signal = rt.create_signal(1)
    waiters = [Worker(lambda: signal.wait(timeout=JOIN_S - 1)) for _ in range(2)]
    time.sleep(0.1)
    closer = Worker(signal.close)
    closer.join()
    for waiter in waiters:
        waiter.join()
        assert isinstance(waiter.raised, ClosedError), repr(waiter.raised)
        assert waiter.elapsed < 1.5


def test_many_threads_waiting_with_a_timeout_each_time_out_on_time(rt):
    signal = rt.create_signal(1)
    waiters = [Worker(lambda: signal.wait(timeout=0.3)) for _ in range(8)]
    for waiter in waiters:
        waiter.join()
        assert isinstance(waiter.raised, WaitTimeoutError), repr(waiter.raised)
        assert 0.3 <= waiter.elapsed < 1.5


def test_many_threads_waiting_all_see_the_store(rt):
    signal = rt.create_signal(1)
    waiters = [Worker(lambda: signal.wait(timeout=JOIN_S - 1)) for _ in range(8)]
    time.sleep(0.05)
    signal.store(0)
    for waiter in waiters:
        waiter.join()
        assert waiter.raised is None and waiter.outcome == 0


# -- closing one object from two threads at once --------------------------------------------

def _objects(rt: Runtime) -> dict[str, Any]:
    agent = rt.gpu()
    executable = rt.load(kernels.build("vector_add", "gfx942"), agent)
    return {"signal": rt.create_signal(1), "buffer": rt.system_pool.allocate(4096),
            "queue": agent.create_queue(64), "executable": executable, "runtime": rt}


@pytest.mark.parametrize("kind", ["signal", "buffer", "queue", "executable", "runtime"])
def test_closing_an_object_from_two_threads_at_once_closes_it_once(kind):
    rt = Runtime(backend="sim", targets=["gfx942"])
    try:
        target = _objects(rt)[kind]
        go = threading.Barrier(4)

        def close() -> None:
            go.wait(JOIN_S)
            target.close()

        closers = [Worker(close) for _ in range(4)]
        for closer in closers:
            closer.join()
            assert closer.raised is None, repr(closer.raised)
        assert target.is_closed
    finally:
        rt.close()


# -- fork -----------------------------------------------------------------------------------

# Uses of the parent's objects in a forked child; the prepared launch ran in the parent first,
# so its fast paths are armed.
CHILD_USES = {
    "launch": "vadd.launch(queue, [*bufs, N], N, 64).wait(timeout=5)",
    "prepared": "prepared(*bufs, N).wait(timeout=5)",
    "publish fast path": "prepared.publish(*bufs, N)",
    "submit": "prepared.submit(*bufs, N)",
    "batch": "prepared.batch([(*bufs, N)] * 2)",
    "signal.wait": "signal.wait(timeout=5)",
    "signal.store": "signal.store(0)",
    "buffer.copy_to": "bufs[0].copy_to()",
    "queue.load_write_index": "queue.load_write_index()",
    "create_signal": "rt.create_signal(1)",
    "executable.kernel": "exe.kernel('vector_add')",
    "allocate": "rt.system_pool.allocate(64)",
}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_a_runtime_does_not_cross_a_fork_but_a_new_one_in_the_child_works():
    done = isolated(f"""
        import os
        rt, agent, exe, vadd, queue = setup()
        bufs = [rt.system_pool.allocate(4 * N) for _ in range(3)]
        bufs[0].copy_from(np.arange(N, dtype=np.float32))
        bufs[1].copy_from(np.ones(N, np.float32))
        prepared = vadd.prepare(queue, N, 64)
        prepared(*bufs, N).wait(timeout=10)
        prepared.batch([(*bufs, N)] * 2).wait(timeout=10)   # its compiled way made too
        signal = rt.create_signal(1)
        pid = os.fork()
        if pid == 0:
            try:
                for name, use in {CHILD_USES!r}.items():
                    try:
                        eval(use)
                        print(name, "ran")
                    except errors.ClosedError as exc:
                        print(name, "fork" if "os.fork()" in str(exc) else exc)
                    except BaseException as exc:
                        print(name, repr(exc))
                for closable in (signal, bufs[2], queue, exe, rt):
                    closable.close()                     # closed already: nothing to do
                with Runtime(backend="sim", targets=["gfx942"]) as fresh:
                    agent = fresh.gpu()
                    add = fresh.load(kernels.build("vector_add", "gfx942"), agent)
                    mine = [fresh.system_pool.allocate(4 * N) for _ in range(3)]
                    mine[0].copy_from(np.arange(N, dtype=np.float32))
                    mine[1].copy_from(np.ones(N, np.float32))
                    with agent.create_queue(64) as q:
                        add.kernel("vector_add").launch(q, [*mine, N], N, 64).wait(timeout=10)
                    out = mine[2].copy_to(dtype=np.float32)
                    print("new runtime", np.array_equal(out, np.arange(N) + 1.0))
            except BaseException as exc:
                print("child", repr(exc))
            sys.stdout.flush()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        prepared(*bufs, N).wait(timeout=10)              # the parent's runtime is untouched
        print("parent", os.waitstatus_to_exitcode(status),
              np.array_equal(bufs[2].copy_to(dtype=np.float32), np.arange(N) + 1.0))
        rt.close()
    """, timeout=30)
    assert not done.crashed, done.stderr
    expected = [f"{name} fork" for name in CHILD_USES] + ["new runtime True", "parent 0 True"]
    assert done.lines() == expected, done.stdout + done.stderr
