"""Lifetimes of handle-owning objects (DESIGN.md "Lifetimes").

Every owner (Signal, Buffer, Queue, Executable, Runtime, ...) keeps its handle in a tiny state
object that does NOT reference the owner. ``weakref.finalize(owner, state.close)`` releases it if
the owner is collected without ``close()``; ``close()`` is idempotent; cleanup failures warn and
never raise. ``live_counts()`` reports how many of each kind are open (used by leak tests).
"""
from __future__ import annotations

import collections
import threading
import warnings
from typing import Callable

_LIVE: collections.Counter[str] = collections.Counter()
_LIVE_LOCK = threading.Lock()


def live_counts() -> dict[str, int]:
    """Open handle-owning objects by kind, e.g. ``{"Signal": 3, "Buffer": 1}``."""
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

    def close(self) -> None:
        """Release the handle once (idempotent); a failure warns, never raises."""
        if self.closed:
            return
        self.closed = True
        with _LIVE_LOCK:
            _LIVE[self.kind] -= 1
        release, self.release = self.release, None
        try:
            release()
        except Exception as exc:  # DESIGN.md: cleanup failures warn, never raise
            warnings.warn(f"hsapy: releasing a {self.kind} failed: {exc}", ResourceWarning,
                          stacklevel=2)
