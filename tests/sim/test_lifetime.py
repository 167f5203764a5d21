"""Finalizers never call back into the runtime from wherever the garbage collector runs.

On the simulator the runtime is Python code holding its own locks; a Queue collected while one of
them is held (the collector can run inside any allocation) used to destroy the queue right there
and deadlock. Finalizers now defer the release to a normal context (hsapy._lifetime)."""
from __future__ import annotations

import gc
import threading

from hsapy._lifetime import live_counts


def test_collecting_a_queue_inside_a_runtime_lock_does_not_deadlock(sim_runtime):
    before = live_counts().get("Queue", 0)
    holder = [sim_runtime.gpu_agents[0].create_queue(64)]
    lock = sim_runtime.lib.signals._lock     # held by SignalTable.create in the original hang
    finished = threading.Event()

    def collect_while_locked() -> None:
        with lock:
            holder.clear()                   # last reference: the finalizer runs right here
            gc.collect()
        finished.set()

    thread = threading.Thread(target=collect_while_locked, daemon=True)
    thread.start()
    assert finished.wait(10), "the queue's finalizer deadlocked on a simulator lock"
    assert live_counts().get("Queue", 0) == before   # released once back in a normal context


def test_buffer_collected_without_close_is_freed(sim_runtime):
    lib = sim_runtime.lib
    sim_runtime.system_pool.allocate(64).close()
    allocations = len(lib.memory.allocations())
    buffer = sim_runtime.system_pool.allocate(4096)
    assert len(lib.memory.allocations()) == allocations + 1
    del buffer
    gc.collect()
    live_counts()  # performs deferred releases
    assert len(lib.memory.allocations()) == allocations


def test_the_reaper_releases_a_collected_object_without_being_asked():
    # defer() wakes the reaper through its pipe: the release happens promptly, with no drain()
    import gc
    import time

    from hsapy import _lifetime
    from hsapy.runtime import Runtime

    with Runtime(backend="sim") as rt:
        gc.collect()
        _lifetime.drain()                 # whatever earlier tests left behind
        signal = rt.create_signal(1)
        state = signal._state             # the HandleState: does not reference the Signal
        assert not state.closed
        del signal
        gc.collect()
        deadline = time.monotonic() + 5
        while not state.closed and time.monotonic() < deadline:
            time.sleep(0.005)
        assert state.closed
