"""A careless user, simulated: hypothesis interleaves create / close / drop / launch / wait /
copy / store / view operations on buffers, signals, queues, executables, prepared launches and
results, in any order, and checks after every step that

- nothing crashed, and every failure was a typed hsapy error (HsapyError),
- no memory outside a live allocation was written: canary buffers, allocated along the way --
  right after every close or drop of a buffer, of the same size, so that they take its memory
  if it was freed -- and never handed to anything, keep their bytes (a dispatch or copy still in
  flight writing freed memory that a canary now occupies would change them); no queue stopped
  on a fault (a packet running freed code, a kernel writing unmapped memory),
- every wait returned or raised within its timeout (plus scheduling slack),
- no helper thread (copy engine, packet processor, reaper) raised.

``HSAPY_STATEFUL_STEPS`` sets the number of steps (default 2,000: examples x steps each); the
run prints how many ran and how long it took.
"""
from __future__ import annotations

import gc
import math
import os
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    rule,
)

from hsapy import aql
from hsapy._lifetime import drain
from hsapy.asm import kernels
from hsapy.errors import HsapyError, WaitTimeoutError
from hsapy.runtime import Runtime

N = 64                                   # one wave of vector_add
WAIT_S = 0.2                             # every wait's timeout
SLACK_S = 2.0                            # what a loaded machine may add to it
STEPS = int(os.environ.get("HSAPY_STATEFUL_STEPS", "2000"))
STEPS_PER_EXAMPLE = 50        # at most; hypothesis ends some runs earlier (about 35 on average)
CODE = kernels.build("vector_add", "gfx942")

VALUES = st.one_of(st.integers(-2**64, 2**70), st.floats(allow_nan=True), st.booleans(),
                   st.none(), st.text(max_size=2))
TIMEOUTS = st.one_of(st.just(WAIT_S), st.just(0.0), st.floats(-1, 0.3), st.just(math.nan),
                     st.none())
SIZES = st.one_of(st.just(N), st.integers(-3, 300), st.just("64"), st.just(64.0), st.just(True))


class Counters:
    steps = 0
    examples = 0
    refused = 0                                   # typed errors raised
    by_error: dict[str, int] = {}
    seconds = 0.0
    started = time.monotonic()


class CarelessUser(RuleBasedStateMachine):
    buffers = Bundle("buffers")
    signals = Bundle("signals")
    queues = Bundle("queues")
    executables = Bundle("executables")
    prepared = Bundle("prepared")
    results = Bundle("results")

    def __init__(self) -> None:
        super().__init__()
        self.thread_failures: list[BaseException] = []
        self._previous_hook = threading.excepthook
        threading.excepthook = lambda args: self.thread_failures.append(args.exc_value)
        self.runtimes: list[Runtime] = []
        self.canaries: list[tuple[object, np.ndarray]] = []
        self.views: list[np.ndarray] = []
        self.all_queues: list[object] = []
        self.gates: dict[int, object] = {}        # queue id -> the signal holding it
        self.rt = self._open()
        Counters.examples += 1
        if os.environ.get("HSAPY_STATEFUL_PROGRESS") and Counters.examples % 50 == 0:
            print(f"  {Counters.examples} runs, {Counters.steps} steps, "
                  f"{time.monotonic() - Counters.started:.1f} s", flush=True)

    # -- helpers ------------------------------------------------------------------------------
    def _open(self) -> Runtime:
        rt = Runtime(backend="sim", targets=["gfx942"], watchdog_s=5)
        self.runtimes.append(rt)
        return rt

    def _do(self, action, *args):
        """Run ``action``: success or a typed hsapy error, nothing else."""
        Counters.steps += 1
        try:
            return action(*args)
        except HsapyError as exc:
            Counters.refused += 1
            name = type(exc).__name__
            Counters.by_error[name] = Counters.by_error.get(name, 0) + 1
            return None

    def _timed_wait(self, action, timeout):
        start = time.monotonic()
        result = self._do(action)
        bound = timeout if isinstance(timeout, float) and math.isfinite(timeout) else 0.0
        assert time.monotonic() - start < max(bound, 0.0) + SLACK_S, "a wait overran its timeout"
        return result

    # -- creation -----------------------------------------------------------------------------
    @initialize(target=executables)
    def load(self):
        return self.rt.load(CODE)

    @rule(target=buffers, size=SIZES, device=st.booleans())
    def allocate(self, size, device):
        def make():
            pool = self.rt.gpu().device_pool if device else self.rt.system_pool
            buffer = pool.allocate(size)
            buffer.copy_from(np.full(buffer.size // 4, 1.0, np.float32))
            return buffer
        made = self._do(make)
        return made if made is not None else multiple()

    @rule()
    def canary(self, size: int = 4 * N, device: bool = False):
        def make():
            pool = self.rt.gpu().device_pool if device else self.rt.system_pool
            buffer = pool.allocate(size)
            pattern = np.random.default_rng(len(self.canaries)).integers(
                0, 256, buffer.size, dtype=np.uint8)
            buffer.copy_from(pattern)
            self.canaries.append((buffer, pattern))
        self._do(make)

    @rule(target=signals, value=VALUES)
    def create_signal(self, value):
        made = self._do(self.rt.create_signal, value)
        return made if made is not None else multiple()

    @rule(target=queues, size=st.sampled_from([64, 128, 8192, 63, "64"]))
    def create_queue(self, size):
        made = self._do(lambda: self.rt.gpu().create_queue(size))
        if made is None:
            return multiple()
        self.all_queues.append(made)
        self.hold(made)                    # dispatches wait until open_gate: they stay in flight
        return made

    def hold(self, queue):
        def go():
            signal = self.rt.create_signal(1)
            queue.publish(aql.barrier_and([signal.handle]))
            self.gates[id(queue)] = signal
        self._do(go)

    @rule(queue=queues)
    def open_gate(self, queue):
        signal = self.gates.pop(id(queue), None)
        if signal is not None:
            self._do(signal.store, 0)

    @rule(queue=queues)
    def close_gate(self, queue):
        if id(queue) not in self.gates:
            self.hold(queue)

    @rule(target=executables)
    def load_again(self):
        made = self._do(self.rt.load, CODE)
        return made if made is not None else multiple()

    @rule(target=prepared, executable=executables, queue=queues,
          grid=st.sampled_from([N, (N,), "64", 64.5, (N, 1, 1, 1), True]))
    def prepare(self, executable, queue, grid):
        made = self._do(lambda: executable.kernel("vector_add").prepare(queue, grid, 64))
        return made if made is not None else multiple()

    # -- closing and dropping -----------------------------------------------------------------
    def _take_its_memory(self, buffer):
        """A canary of the buffer's size and pool: it gets the buffer's memory if it was freed."""
        self.canary(buffer.size, buffer.pool.agent.is_gpu)

    @rule(buffer=buffers)
    def close_buffer(self, buffer):
        self._do(buffer.close)
        self._take_its_memory(buffer)

    @rule(buffer=consumes(buffers))
    def drop_buffer(self, buffer):
        size, device = buffer.size, buffer.pool.agent.is_gpu
        del buffer
        gc.collect()
        drain()
        Counters.steps += 1
        self.canary(size, device)

    @rule(signal=signals)
    def close_signal(self, signal):
        self._do(signal.close)

    @rule(queue=queues)
    def close_queue(self, queue):
        self._do(queue.close)

    @rule(executable=executables)
    def close_executable(self, executable):
        self._do(executable.close)

    @rule()
    def close_runtime_and_open_another(self):
        self._do(self.rt.close)
        self.rt = self._open()

    # -- using --------------------------------------------------------------------------------
    @rule(target=results, prepared=prepared, a=buffers, b=buffers, out=buffers,
          how=st.sampled_from(["call", "submit", "publish", "batch", "launch"]),
          n=st.sampled_from([N, True, 1.5, -1]))
    def launch(self, prepared, a, b, out, how, n):
        def go():
            if how == "call":
                return prepared(a, b, out, n)
            if how == "submit":
                prepared.submit(a, b, out, n)
            elif how == "publish":
                prepared.publish(a, b, out, n)
                prepared.queue.flush()
            elif how == "batch":
                return prepared.batch([(a, b, out, n)] * 3)
            else:
                return prepared.kernel.launch(prepared.queue, [a, b, out, n], N, 64, wait=False)
            return None
        made = self._do(go)
        return made if made is not None else multiple()

    @rule(result=results, timeout=TIMEOUTS)
    def wait(self, result, timeout):
        def go():
            try:
                result.wait(timeout)
            except WaitTimeoutError:
                Counters.refused += 1        # a gated or slow dispatch: bounded, typed
        self._timed_wait(go, timeout)

    @rule(result=results)
    def is_done(self, result):
        self._do(lambda: result.is_done)

    @rule(signal=signals, value=VALUES)
    def store(self, signal, value):
        self._do(signal.store, value)

    @rule(signal=signals, timeout=TIMEOUTS)
    def wait_signal(self, signal, timeout):
        self._timed_wait(lambda: signal.wait(timeout=timeout), timeout)

    @rule(queue=queues, signal=signals)
    def gate(self, queue, signal):
        """Hold a queue behind a signal (stored later, or never: its queue may be closed)."""
        self._do(lambda: queue.publish(aql.barrier_and([signal.handle])))

    @rule(dst=buffers, src=buffers, signal=signals, asynchronous=st.booleans())
    def copy(self, dst, src, signal, asynchronous):
        def go():
            nbytes = min(dst.size, src.size)
            if asynchronous:
                done = self.rt.create_signal(1)
                self.rt.copy(dst, src, nbytes, deps=[signal], completion=done)
            else:
                self.rt.copy(dst, src, nbytes, timeout=WAIT_S)
        self._timed_wait(go, WAIT_S)

    @rule(buffer=buffers, write=st.booleans())
    def view(self, buffer, write):
        def go():
            view = buffer.numpy(np.float32)
            if write:
                view[:] = 2.0
            self.views.append(view)
        self._do(go)

    @rule()
    def forget_views(self):
        self.views.clear()
        gc.collect()
        drain()
        Counters.steps += 1

    @rule(buffer=buffers)
    def read(self, buffer):
        self._do(buffer.copy_to)

    # -- what must always hold ------------------------------------------------------------------
    @invariant()
    def canaries_are_untouched(self):
        for buffer, pattern in self.canaries:
            if not buffer.is_closed and not buffer.runtime.is_closed:
                assert np.array_equal(buffer.copy_to(), pattern), \
                    "memory that was never handed out was written"

    @invariant()
    def no_queue_faulted(self):
        for queue in self.all_queues:
            if queue.error is not None:
                try:
                    queue.check()
                except HsapyError as exc:
                    raise AssertionError(f"queue stopped: {exc}") from None

    @invariant()
    def no_helper_thread_failed(self):
        assert self.thread_failures == []

    def teardown(self) -> None:
        try:
            for rt in self.runtimes:
                rt.close()
            self.views.clear()
            gc.collect()
            drain()
            assert all(not rt.lib.is_open for rt in self.runtimes), "a runtime stayed open"
            assert self.thread_failures == []
        finally:
            threading.excepthook = self._previous_hook


CarelessUser.TestCase.settings = settings(
    max_examples=max(1, STEPS // 25), stateful_step_count=STEPS_PER_EXAMPLE,
    deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


@pytest.mark.slow
def test_a_careless_user_never_crashes_hsapy():
    # Its collections look for what its own steps dropped. What the session made before it
    # (other tests' objects, modules, caches) is moved out of the collector's way: every full
    # collection would otherwise walk all of it (run after tests/misuse's other files, 175 s
    # for this test against 30 s alone, on the 2-vCPU development VM).
    gc.collect()
    gc.freeze()
    try:
        start = Counters.started = time.monotonic()
        CarelessUser.TestCase().runTest()
        Counters.seconds = time.monotonic() - start
    finally:
        gc.unfreeze()
    print(f"\nstateful: {Counters.steps} steps in {Counters.examples} runs, "
          f"{Counters.refused} refused with typed errors, {Counters.seconds:.1f} s")
    print("  " + ", ".join(f"{name} {count}" for name, count in
                           sorted(Counters.by_error.items(), key=lambda item: -item[1])))
    assert Counters.steps >= STEPS
