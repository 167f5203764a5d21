"""Lifetimes of handle-owning objects (docs/architecture.md "Lifetimes").

Every owner (Signal, Buffer, Queue, Executable, Runtime, ...) keeps its handle in a tiny state
object that does NOT reference the owner. ``close()`` releases at once and is idempotent;
cleanup failures warn and never raise. ``live_counts()`` reports how many of each kind are open
(used by leak tests).

An owner collected without ``close()`` is released by its ``weakref.finalize(owner,
state.close_later)`` (``release_when_collected``). A finalizer (or an ``ffi.gc`` destructor)
runs wherever the garbage collector happens to run -- possibly inside the runtime, with one of
its locks held (on the simulator the runtime is Python code). Calling back into the runtime from
there deadlocks, so finalizers only append to a queue (``defer``); a daemon reaper thread,
``drain()``, ``live_counts()`` and ``Runtime.close()`` perform the releases from a normal
context.

At interpreter exit, what was not closed is not released: the process is ending, the operating
system takes its memory back and the runtime ends with it (a ``rocr-sim`` runtime is closed by
its own exit hook before, hsapy.runtime). Releasing then would only do harm: the interpreter
finalizes while objects are still dying, with module globals (``defer``, its queue) already set
to None, so a destructor using them prints "Exception ignored" tracebacks; and releases deferred
then would run in the reaper while the interpreter tears down. So finalizers are not called at
exit (``release_when_collected``) and an ``ffi.gc`` destructor (``ReleaseOnce``) that runs once
the interpreter is finalizing does nothing.

Every use of an object first asks its state: a closed state raises
:class:`~hsapy.errors.ClosedError`, naming the object and what closed it (``close()``, the
parent that closed it, or the garbage collector). A state belongs to one incarnation of a
handle: a runtime may hand the same handle value to a new object once the old one is destroyed
(the simulator reuses signal slots, ROCr reuses addresses), but the old object's state stays
closed, so it never reaches the new holder of that value.

A release that must not happen while the GPU may still use what it frees (memory or code that
a dispatch in flight points at) is *parked* (``park``): it runs once a readiness test passes,
polled by the reaper every few milliseconds and by ``drain()``. ``Outstanding`` counts what
still holds a runtime's memory, so that ``hsa_shut_down`` waits for the last of it.

A child made by ``os.fork()`` inherits copies of the parent's objects but none of the runtime's
threads, and any lock another thread held at the fork stays held in the child for ever. So the
runtime does not cross a fork: in the child every object of a runtime opened before the fork is
*forsaken* (``HandleState.forsake``, called by hsapy.runtime's fork hook): closed without its
release (the handle is the parent's), so each use raises ClosedError naming ``os.fork()``.
This module's own locks, queues, wake-up pipe and reaper start afresh in the child, so a
Runtime opened there works.
"""
from __future__ import annotations

import collections
import os
import select
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from hsapy.errors import ClosedError, HsapyTypeError

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


def _start_afresh_after_fork() -> None:
    """In a child after os.fork(): this module's state as if freshly imported (see the module
    docstring). The parent's pending and parked releases are the parent's business."""
    global _LIVE_LOCK, _CLOSE_LOCK, _REAPER_LOCK, _DRAIN_LOCK, _PARKED_LOCK
    global _WAKE_READ, _WAKE_WRITE
    _LIVE_LOCK, _CLOSE_LOCK = threading.Lock(), threading.Lock()
    _REAPER_LOCK, _DRAIN_LOCK = threading.Lock(), threading.RLock()
    _PARKED_LOCK = threading.Lock()
    _PENDING.clear()
    _PARKED.clear()
    _REAPER.clear()                 # its thread was not copied
    # the inherited pipe is shared with the parent: its reaper would take this one's wake-ups
    os.close(_WAKE_READ)
    os.close(_WAKE_WRITE)
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
    """Run every deferred release now, and every parked one whose time has come. Returns only
    when none is pending or in progress in another thread (the reaper), so what the caller
    observes next is released."""
    with _DRAIN_LOCK:
        while True:
            try:
                release = _PENDING.popleft()
            except IndexError:
                break
            _run(release)
        if _PARKED:
            _release_parked()


def _run(release: Callable[[], None]) -> None:
    try:
        release()
    except Exception as exc:  # docs/architecture.md: cleanup failures warn, never raise
        warnings.warn(f"hsapy: a deferred release failed: {exc}", ResourceWarning, stacklevel=3)


# Releases waiting for the GPU to finish with what they free: (ready, release) pairs.
_PARKED: list[tuple[Callable[[], bool], Callable[[], None]]] = []
_PARKED_LOCK = threading.Lock()
_PARKED_POLL_S = 0.005

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_start_afresh_after_fork)


def park(ready: Callable[[], bool], release: Callable[[], None]) -> None:
    """Run ``release`` once ``ready()`` returns true (from a normal context, never a finalizer).

    ``ready`` is polled by the reaper every few milliseconds and by :func:`drain`; an exception
    from it counts as ready (what it looked at is gone)."""
    with _PARKED_LOCK:
        _PARKED.append((ready, release))
    _ensure_reaper()
    try:
        os.write(_WAKE_WRITE, b"\0")   # the reaper starts polling
    except OSError:
        pass


def parked_count() -> int:
    """How many parked releases are still waiting."""
    return len(_PARKED)


def _release_parked() -> None:
    with _PARKED_LOCK:
        entries = list(_PARKED)
    for entry in entries:
        ready, release = entry
        try:
            due = ready()
        except Exception:
            due = True
        if not due:
            continue
        with _PARKED_LOCK:
            try:
                _PARKED.remove(entry)
            except ValueError:      # another thread released it meanwhile
                continue
        _run(release)


def _reap() -> None:
    while True:
        timeout = _PARKED_POLL_S if _PARKED else None
        try:
            readable, _w, _x = select.select([_WAKE_READ], [], [], timeout)
            if readable:
                os.read(_WAKE_READ, 4096)
        except OSError:
            time.sleep(0.02)
        if _PENDING or _PARKED:
            drain()


def _ensure_reaper() -> None:
    if _REAPER:
        return
    with _REAPER_LOCK:
        if not _REAPER:
            thread = threading.Thread(target=_reap, name="hsapy-reaper", daemon=True)
            thread.start()
            _REAPER.append(thread)


def release_when_collected(owner: object, state: HandleState) -> weakref.finalize:
    """Release ``state`` (deferred: ``HandleState.close_later``) once ``owner`` is collected
    without ``close()``; but not at interpreter exit, where weakref.finalize would otherwise call
    every live finalizer (see the module docstring). Returns the finalizer (``detach()`` it once
    the owner is closed, if it should not keep the state alive)."""
    finalizer = weakref.finalize(owner, state.close_later)
    finalizer.atexit = False
    return finalizer


def live_counts() -> dict[str, int]:
    """Open handle-owning objects by kind, e.g. ``{"Signal": 3, "Buffer": 1}`` (deferred
    releases are performed first, so collected objects do not count)."""
    drain()
    with _LIVE_LOCK:
        return {kind: n for kind, n in _LIVE.items() if n}


class NotCopyable:
    """Refuses ``copy.copy``, ``copy.deepcopy`` and ``pickle`` with HsapyTypeError (a
    ``TypeError``, what pickle expects of an object it cannot take). The object names a handle
    of one runtime in this process: a copy would be a second owner of that handle, and an
    unpickled one (in another process above all) would name a handle nobody there holds."""

    __slots__ = ()

    def _refuse_copy(self, how: str) -> HsapyTypeError:
        kind = type(self).__name__
        return HsapyTypeError(
            f"{kind} objects cannot be {how}: each stands for a handle of its runtime in this "
            f"process, and a copy would be a second owner of that handle. Pass the {kind} itself "
            "(it may be shared between threads); in another process, open a Runtime there and "
            "create what you need from it")

    def __copy__(self) -> Any:
        raise self._refuse_copy("copied")

    def __deepcopy__(self, memo: Any) -> Any:
        raise self._refuse_copy("copied")

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise self._refuse_copy("pickled")


class HandleState:
    """The part of an owner that the finalizer may touch: a release function and a flag.

    ``release`` is called at most once; exceptions from it become a ResourceWarning. ``what``
    describes the object for error messages ("buffer 0x7f.. (4096 bytes)"), ``closed_by`` says
    what closed it once it is closed.
    """

    __slots__ = ("kind", "release", "closed", "what", "closed_by", "__weakref__")

    def __init__(self, kind: str, release: Callable[[], None], what: str = "") -> None:
        self.kind = kind
        self.release: Callable[[], None] | None = release
        self.closed = False
        self.what = what or kind
        self.closed_by = ""
        with _LIVE_LOCK:
            _LIVE[kind] += 1
        _ensure_reaper()

    def close_later(self) -> None:
        """For finalizers: release from a normal context soon (see the module docstring)."""
        defer(self._collected)

    def _collected(self) -> None:
        self.close("garbage collection")

    def close(self, by: str = "") -> None:
        """Release the handle once (idempotent, thread-safe); a failure warns, never raises.
        ``by`` says what closed it (default: the owner's own ``close()``)."""
        with _CLOSE_LOCK:
            if self.closed:
                return
            self.closed = True
            self.closed_by = by or f"{self.kind}.close()"
            release, self.release = self.release, None
        with _LIVE_LOCK:
            _LIVE[self.kind] -= 1
        # Under the drain lock: the reaper asks parked releases' marks (which read queue
        # indices and signal values through the runtime) under it too, so a mark never reads
        # a queue or signal this release is destroying.
        with _DRAIN_LOCK:
            try:
                if release is not None:  # set until the one close that takes it
                    release()
            except Exception as exc:  # docs/architecture.md: cleanup failures warn, never raise
                warnings.warn(f"hsapy: releasing a {self.kind} failed: {exc}", ResourceWarning,
                              stacklevel=2)

    def forsake(self, by: str) -> None:
        """Mark the state closed by ``by`` without releasing the handle: in a child after
        os.fork(), where the handle is the parent's (see the module docstring): close with the
        release dropped first."""
        with _CLOSE_LOCK:
            self.release = None
        self.close(by)

    def check(self) -> None:
        """Raise ClosedError when closed (every use of the owner begins here)."""
        if self.closed:
            raise self.error()

    def error(self, hint: str = "") -> ClosedError:
        """The ClosedError for a use of the closed owner."""
        if not hint:
            hint = _FORK_NEXT_STEP if self.closed_by == FORKED else _NEXT_STEP.get(self.kind, "")
        return ClosedError(self.what, self.closed_by or f"{self.kind}.close()", hint)


# What closed every object of a runtime opened before os.fork(), in the child.
FORKED = "os.fork(): this process is a child of the one that opened its runtime"
_FORK_NEXT_STEP = ("a runtime and its objects do not cross a fork; open a new hsapy.Runtime in "
                   "the child")


# What to do instead, per kind of object (the end of a ClosedError's message).
_NEXT_STEP = {
    "Runtime": "open a new hsapy.Runtime",
    "Buffer": "allocate a new buffer (pool.allocate)",
    "Signal": "create a new signal (runtime.create_signal)",
    "Queue": "create a new queue (agent.create_queue); packets it had not run never complete",
    "Executable": "load the code object again (runtime.load) and take its kernels from there",
}


class Outstanding:
    """Counts what still holds memory of a runtime (buffers viewed by numpy, rings viewed by
    numpy, parked releases): ``after(action)`` runs ``action`` once the count is zero -- at once,
    or in whichever normal context gives back the last one."""

    __slots__ = ("count", "lock", "pending")

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()
        self.pending: Callable[[], None] | None = None

    def add(self) -> None:
        """One more holder."""
        with self.lock:
            self.count += 1

    def done(self) -> None:
        """One holder let go; the last one runs what ``after`` left waiting."""
        with self.lock:
            self.count -= 1
            action = self.pending if self.count == 0 else None
            if action is not None:
                self.pending = None
        if action is not None:
            action()

    def now(self) -> None:
        """Run what ``after`` left waiting at once, holders or not (at interpreter exit, when
        nothing can read the memory they hold any more)."""
        with self.lock:
            action, self.pending = self.pending, None
        if action is not None:
            action()

    def after(self, action: Callable[[], None]) -> None:
        """Run ``action`` when no holder is left (now, if none is)."""
        with self.lock:
            if self.count:
                self.pending = action
                return
        action()


class ViewedMemory:
    """The owning cdata of memory that numpy views may outlive (a Buffer's allocation, a
    queue's ring): every view made from ``cdata`` (``ffi.buffer(cdata, n)``) references it,
    and its ``ffi.gc`` destructor performs the release once the last one is gone. What an
    owner's HandleState releases (it holds no reference to the owner)."""

    __slots__ = ("ffi", "cdata", "freer")

    def __init__(self, ffi: Any, address: int, freer: ReleaseOnce) -> None:
        self.ffi = ffi
        self.freer = freer
        self.cdata = ffi.gc(ffi.cast("uint8_t *", address), freer)

    def release(self) -> bool:
        """Release now when no view is left (True); else leave it to the last view (False)."""
        cdata, self.cdata = self.cdata, None
        # 2 references: the local name and getrefcount's argument; more means a live numpy
        # view, and then the ffi.gc destructor releases when the last view goes.
        if cdata is not None and sys.getrefcount(cdata) <= 2:
            self.freer.now()           # explicit close: release at once, here
            self.ffi.release(cdata)    # (the destructor then has nothing left to do)
            return True
        return cdata is None


class ReleaseOnce:
    """ffi.gc destructor: releases once. Called by the garbage collector it only defers the
    release to a normal context (a destructor may run with runtime locks held)."""

    __slots__ = ("release", "pid")

    def __init__(self, release: Callable[[], None]) -> None:
        self.release: Callable[[], None] | None = release
        self.pid = os.getpid()      # a child after fork releases nothing of the parent's

    def __call__(self, _cdata: Any, _finalizing: Callable[[], bool] = sys.is_finalizing) -> None:
        # At interpreter shutdown (the module docstring) releasing is moot, and the globals
        # this would use (defer, its queue) may already be None: nothing to do. The test is
        # bound as a default argument because the global ``sys`` may be None by then too.
        if self.release is not None and not _finalizing() and self.pid == os.getpid():
            defer(self.now)

    def now(self) -> None:
        release, self.release = self.release, None
        if release is None or self.pid != os.getpid():
            return
        try:
            release()
        except Exception as exc:  # docs/architecture.md: cleanup failures warn, never raise
            warnings.warn(f"hsapy: a release failed: {exc}", ResourceWarning, stacklevel=2)
