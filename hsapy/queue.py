"""AQL queues: a ring of 64-byte packet slots described by an ``hsa_queue_t``.

A :class:`Queue` owns one ``hsa_queue_t`` created with ``hsa_queue_create``. Its error callback
is kept alive as long as the queue; an error it reports is stored and re-raised on the Python
side by :meth:`Queue.check` (and by waits that pass ``abort=queue.check``).
"""
from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from hsapy._hsa import check
from hsapy._lifetime import HandleState
from hsapy.errors import HsapyValueError, error_for

__all__ = ["Queue", "QUEUE_TYPES"]

# hsa_queue_type_t (hsa.h)
QUEUE_TYPES = {"multi": 0, "single": 1, "cooperative": 2}
PACKET_SIZE = 64
UINT32_MAX = 0xFFFFFFFF


class _QueueState:
    """What the C error callback and the finalizer may touch (never the Queue itself)."""

    __slots__ = ("error", "error_lock", "callback", "handle_state", "__weakref__")

    def __init__(self) -> None:
        self.error: tuple[int, str] | None = None
        self.error_lock = threading.Lock()
        self.callback: Any = None
        self.handle_state: HandleState | None = None

    def on_error(self, status: int, queue: Any, _data: Any) -> None:
        # Runs on a runtime thread: never raise, only record (DESIGN.md "Errors").
        try:
            with self.error_lock:
                if self.error is None:
                    self.error = (int(status), f"queue {int(queue.id) if queue else '?'}")
        except Exception:
            pass


class Queue:
    """An AQL queue on a GPU agent. Create with ``agent.create_queue(size=...)``.

    ``base_address``/``size`` describe the ring (``ring`` is a numpy view of shape (size, 64));
    ``doorbell`` is the doorbell signal's handle. Index operations map 1:1 to hsa_queue_*.
    """

    def __init__(self, agent: Any, size: int = 256, type: str = "multi",
                 private_segment_size: int = UINT32_MAX, group_segment_size: int = UINT32_MAX) -> None:
        runtime = agent.runtime
        self.agent = agent  # children hold their parents
        self.runtime = runtime
        if not agent.is_gpu:
            raise HsapyValueError(f"create_queue: {agent.name} is not a GPU agent; "
                                  "take one from runtime.gpu_agents")
        if type not in QUEUE_TYPES:
            raise HsapyValueError(f"create_queue: type must be one of {sorted(QUEUE_TYPES)}, "
                                  f"not {type!r}")
        lo, hi = agent.queue_min_size, agent.queue_max_size
        if size <= 0 or size & (size - 1) or not (lo <= size <= hi):
            raise HsapyValueError(
                f"create_queue: size {size} must be a power of two between the agent's queue "
                f"min and max sizes ({lo}..{hi} packets) for {agent.name}")
        lib, ffi = runtime.lib, runtime.ffi
        self._lib, self._ffi = lib, ffi
        state = _QueueState()
        state.callback = ffi.callback("void(hsa_status_t, hsa_queue_t *, void *)", state.on_error)
        out = ffi.new("hsa_queue_t **")
        check(lib.hsa_queue_create({"handle": agent.handle}, size, QUEUE_TYPES[type],
                                   state.callback, ffi.NULL, private_segment_size,
                                   group_segment_size, out),
              "hsa_queue_create", lib)
        self._ptr = out[0]
        self.address = int(ffi.cast("uintptr_t", self._ptr))
        self.base_address = int(ffi.cast("uintptr_t", self._ptr.base_address))
        self.size = int(self._ptr.size)
        self.id = int(self._ptr.id)
        self.doorbell = int(self._ptr.doorbell_signal.handle)
        self._doorbell_cdata = self._ptr.doorbell_signal
        self._mask = self.size - 1
        self._ring = np.frombuffer(
            ffi.buffer(ffi.cast("uint8_t *", self.base_address), self.size * PACKET_SIZE),
            np.uint8).reshape(self.size, PACKET_SIZE)
        ptr, runtime_state = self._ptr, runtime._state

        def destroy() -> None:
            if runtime_state.closed:
                return
            status = lib.hsa_queue_destroy(ptr)
            if status != 0:
                raise RuntimeError(f"hsa_queue_destroy returned {status:#x}")

        state.handle_state = HandleState("Queue", destroy)
        runtime._track(state.handle_state)
        self._state = state
        # The finalizer holds the state (and so the callback) until the queue is destroyed.
        weakref.finalize(self, state.handle_state.close)

    # -- lifetime ----------------------------------------------------------------------------
    @property
    def is_closed(self) -> bool:
        return self._state.handle_state.closed

    def close(self) -> None:
        """Destroy the queue (idempotent)."""
        self._state.handle_state.close()

    def __enter__(self) -> Queue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<Queue id={self.id} size={self.size} on {self.agent.name} "
                f"{'closed' if self.is_closed else 'open'}>")

    # -- errors ------------------------------------------------------------------------------
    @property
    def error(self) -> tuple[int, str] | None:
        """(status, where) reported by the queue's error callback, or None."""
        return self._state.error

    def check(self) -> None:
        """Raise the HSAError the runtime reported for this queue, if any."""
        error = self._state.error
        if error is not None:
            status, where = error
            raise error_for(status, "queue error callback",
                            f"{where} on {self.agent.name} stopped; packets after the failing "
                            "one do not run. Create a new queue")
        if self.is_closed:
            raise HsapyValueError(f"queue {self.id} is closed")

    # -- the ring and its indices ------------------------------------------------------------
    @property
    def ring(self) -> np.ndarray:
        """The ring as a (size, 64) uint8 view of ``base_address``."""
        return self._ring

    @property
    def cdata(self) -> Any:
        """The ``hsa_queue_t *`` for C calls."""
        return self._ptr

    def slot_address(self, index: int) -> int:
        """Address of the packet slot that packet ``index`` occupies."""
        return self.base_address + (index & self._mask) * PACKET_SIZE

    def load_read_index(self, relaxed: bool = False) -> int:
        lib = self._lib
        fn = lib.hsa_queue_load_read_index_relaxed if relaxed else lib.hsa_queue_load_read_index_scacquire
        return fn(self._ptr)

    def load_write_index(self, relaxed: bool = False) -> int:
        lib = self._lib
        fn = lib.hsa_queue_load_write_index_relaxed if relaxed else lib.hsa_queue_load_write_index_scacquire
        return fn(self._ptr)

    def add_write_index(self, count: int = 1, relaxed: bool = False) -> int:
        """Reserve ``count`` slots; returns the first reserved index."""
        lib = self._lib
        fn = lib.hsa_queue_add_write_index_relaxed if relaxed else lib.hsa_queue_add_write_index_scacq_screl
        return fn(self._ptr, count)

    def cas_write_index(self, expected: int, value: int, relaxed: bool = False) -> int:
        lib = self._lib
        fn = lib.hsa_queue_cas_write_index_relaxed if relaxed else lib.hsa_queue_cas_write_index_scacq_screl
        return fn(self._ptr, expected, value)

    def store_write_index(self, value: int, relaxed: bool = False) -> None:
        lib = self._lib
        fn = lib.hsa_queue_store_write_index_relaxed if relaxed else lib.hsa_queue_store_write_index_screlease
        fn(self._ptr, value)

    def ring_doorbell(self, index: int) -> None:
        """Tell the packet processor that packets up to ``index`` are ready.

        Through the runtime (hsa_signal_store_screlease on the doorbell signal), never by poking
        a doorbell address: queues may be emulated or intercepted by profilers."""
        self._lib.hsa_signal_store_screlease(self._doorbell_cdata, index)

    def enable_profiling(self, enabled: bool = True) -> None:
        """Ask the runtime to record dispatch start/end timestamps for this queue."""
        check(self._lib.hsa_amd_profiling_set_profiler_enabled(self._ptr, int(enabled)),
              "hsa_amd_profiling_set_profiler_enabled", self._lib)

    # Publishing packets (Queue.publish, issue #5) lives below this line.
