"""Finalizers never call back into the runtime from wherever the garbage collector runs.

On the simulator the runtime is Python code holding its own locks; a Queue collected while one of
them is held (the collector can run inside any allocation) used to destroy the queue right there
and deadlock. Finalizers now defer the release to a normal context (hsapy._lifetime)."""
from __future__ import annotations

import gc
import subprocess
import sys
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


# Objects of every kind with a finalizer or an ffi.gc destructor (runtime, queue and its ring,
# signals, buffers from every pool, kernarg memory, executable, prepared dispatch, batch arena,
# HIP runtime, stream and event), none closed, numpy views alive, one dispatch not waited for;
# then the script just ends. The reference from sys keeps the script's module alive until the
# interpreter sets the globals of the modules still alive to None, one module after the other:
# hsapy's first, then the script's, whose objects then die with their destructors finding
# hsapy's globals None. (Anything that keeps a module alive that long gives this order; without
# it, whether a destructor runs that late depends on the interpreter and on thread timing.)
_EXIT_SCRIPT = """
import sys
import numpy as np
import hsapy
from hsapy.asm import kernels
from hsapy.hip import HipRuntime

sys.hsapy_exit_test_module = sys.modules[__name__]

rt = hsapy.Runtime(backend="sim", targets=["gfx942"])
agent = rt.gpu()
queue = agent.create_queue(size=64)
ring = queue.ring
signal = rt.create_signal(1)
pooled = rt.signal_pool.acquire()
n = 1024
a, b, out = (rt.system_pool.allocate(4 * n) for _ in range(3))
pooled_buffers = [pool.allocate(4096) for owner in rt.agents for pool in owner.memory_pools
                  if pool.is_allocation_allowed]
kernarg = rt.kernarg_pool.allocate(256)
a.copy_from(np.ones(n, np.float32))
b.copy_from(np.ones(n, np.float32))
views = [out.numpy(np.float32), kernarg.numpy()]
executable = rt.load(kernels.build("vector_add", agent.name), agent)
kernel = executable.kernel("vector_add")
kernel.launch(queue, [a, b, out, n], n, 256)
prepared = kernel.prepare(queue, n, 256)
prepared(a, b, out, n).wait()
prepared.batch([[a, b, out, n]] * 2).wait()
in_flight = prepared(a, b, out, n)
hip = HipRuntime(backend="sim")
stream = hip.streamCreate()
event = hip.eventCreate()
hip.eventRecord(event, stream)
d_mem = hip.malloc(4096)
h_mem = hip.hostMalloc(4096)
assert views[0][0] == 2.0
print("ready", flush=True)
"""


def test_exit_without_closing_anything_is_silent():
    # At interpreter exit finalizers and ffi.gc destructors release nothing (hsapy._lifetime):
    # no "Exception ignored" from a destructor that found hsapy's globals already None.
    result = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT], capture_output=True, text=True,
                            timeout=120)
    assert "ready" in result.stdout, result.stderr
    assert result.returncode == 0, result.stderr
    assert "Exception ignored" not in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
