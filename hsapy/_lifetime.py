"""Lifetimes of handle-owning objects (docs/architecture.md "Lifetimes").

Every owner (Signal, Buffer, Queue, Executable, Runtime, ...) keeps its handle in a tiny state
object that does NOT reference the owner. ``close()`` releases at once and is idempotent;
cleanup failures warn and never raise. ``live_counts()`` reports how many of each kind are open
(used by leak tests).

An owner collected without ``close()`` is released by ``weakref.finalize(owner,
state.close_later)``. A finalizer (or an ``ffi.gc`` destructor) runs wherever the garbage
collector happens to run -- possibly inside the runtime, with one of its locks held (on the
simulator the runtime is Python code). Calling back into the runtime from there deadlocks, so
finalizers only append to a queue (``defer``); a daemon reaper thread, ``drain()``,
``live_counts()`` and ``Runtime.close()`` perform the releases from a normal context.
"""
from __future__ import annotations

import collections
import os
import threading
import time
import warnings
from typing import Callable

_LIVE: collections.Counter[str] = collections.Counter()
_LIVE_LOCK = threading.Lock()
_CLOSE_LOCK = threading.Lock()
# deque.append/popleft are atomic and take no Python-level lock: safe from a finalizer.
_PENDING: collections.deque[Callable[[], None]] = collections.deque()
_REAPER_LOCK = threading.Lock()
_DRAIN_LOCK = threading.RLock()
_REAPER: list[threading.Thread] = []
# The reaper sleeps in os.read on this pipe and defer() wakes it with a one-byte os.write: no
# Python-level lock on the finalizer's side, and no periodic wake-ups stealing the GIL from a
# thread that is being measured.
_WAKE_READ, _WAKE_WRITE = os.pipe()
os.set_blocking(_WAKE_WRITE, False)


def defer(release: Callable[[], None]) -> None:
    """Queue a release for a normal context. The only thing a finalizer may do."""
    _PENDING.append(release)
    try:
        os.write(_WAKE_WRITE, b"\0")
    except OSError:          # the pipe is full: the reaper has wake-ups pending already
        pass


def drain() -> None:
    """Run every deferred release now. Returns only when none is pending or in progress in
    another thread (the reaper), so what the caller observes next is released."""
    with _DRAIN_LOCK:
        while True:
            try:
                release = _PENDING.popleft()
            except IndexError:
                return
            try:
                release()
            except Exception as exc:  # docs/architecture.md: cleanup failures warn, never raise
                warnings.warn(f"hsapy: a deferred release failed: {exc}", ResourceWarning,
                              stacklevel=2)


def _reap() -> None:
    while True:
        try:
            os.read(_WAKE_READ, 4096)
        except OSError:
            time.sleep(0.02)
        if _PENDING:
            drain()


def _ensure_reaper() -> None:
    if _REAPER:
        return
    with _REAPER_LOCK:
        if not _REAPER:
            thread = threading.Thread(target=_reap, name="hsapy-reaper", daemon=True)
            thread.start()
            _REAPER.append(thread)


def live_counts() -> dict[str, int]:
    """Open handle-owning objects by kind, e.g. ``{"Signal": 3, "Buffer": 1}`` (deferred
    releases are performed first, so collected objects do not count)."""
    drain()
    with _LIVE_LOCK:
        return {kind: n for kind, n in _LIVE.items() if n}


class HandleState:
    """The part of an owner that the finalizer may touch: a release function and a flag.

    ``release`` is called at most once; exceptions from it become a ResourceWarning.
    """

    __slots__ = ("kind", "release", "closed", "__weakref__")

    def __init__(self, kind: str, release: Callable[[], None]) -> None:
        self.kind = kind
        self.release = release
        self.closed = False
        with _LIVE_LOCK:
            _LIVE[kind] += 1
        _ensure_reaper()

    def close_later(self) -> None:
        """For finalizers: release from a normal context soon (see the module docstring)."""
        defer(self.close)

    def close(self) -> None:
        """Release the handle once (idempotent, thread-safe); a failure warns, never raises."""
        with _CLOSE_LOCK:
            if self.closed:
                return
            self.closed = True
            release, self.release = self.release, None
        with _LIVE_LOCK:
            _LIVE[self.kind] -= 1
        try:
            release()
        except Exception as exc:  # docs/architecture.md: cleanup failures warn, never raise
            warnings.warn(f"hsapy: releasing a {self.kind} failed: {exc}", ResourceWarning,
                          stacklevel=2)
