"""Observers of publishing on every queue: the registry, and the calls that tell them.

Every module that publishes packets or re-arms signals (queue, publishing, dispatch, signal,
executable, runtime) tells the observers through this module, and hsapy.trace and
hsapy.profile attach here; it imports nothing of hsapy, so it sits below all of them.

An observer has
  packets_written(queue, first, count)  after the header stores: the ring holds the packets
  doorbell(queue, index)                before the doorbell store
  signal_reused(handle)                 before the dispatch path re-arms a completion signal,
                                        and before any hsapy Signal is destroyed
and, optionally (called only when present), lifecycle events through ``notify``:
  queue_created(queue), queue_closing(queue), runtime_closing(runtime), kernel_loaded(kernel)
"""
from __future__ import annotations

import weakref
from typing import Any

__all__ = ["OBSERVERS", "watch_observers", "add_observer", "remove_observer", "notify_written",
           "notify_doorbell", "notify", "notify_signal_reused"]

# The attached observers. Empty in normal use, where the cost is one truthiness check per call.
# Attach and detach with add_observer / remove_observer; callers test it, and import the list
# itself, so it is only ever changed in place.
OBSERVERS: list[Any] = []
# Objects whose short path does not look at OBSERVERS on every call (KernargRing, for the
# prepared dispatch path), registered through watch_observers: add_observer calls their
# ``observers_attached()`` so that path steps aside.
_WATCHERS: weakref.WeakSet[Any] = weakref.WeakSet()


def watch_observers(holder: Any) -> None:
    """Call ``holder.observers_attached()`` whenever an observer is attached (weakly held)."""
    _WATCHERS.add(holder)


def add_observer(observer: Any) -> None:
    """Attach ``observer`` (see OBSERVERS) to publishing on every queue."""
    OBSERVERS.append(observer)
    for holder in list(_WATCHERS):
        holder.observers_attached()


def remove_observer(observer: Any) -> None:
    """Detach ``observer``; nothing happens if it is not attached."""
    try:
        OBSERVERS.remove(observer)
    except ValueError:
        pass


def notify_written(queue: Any, first: int, count: int) -> None:
    """Tell observers packets ``first`` .. ``first + count - 1`` of ``queue`` were written."""
    for observer in tuple(OBSERVERS):
        observer.packets_written(queue, first, count)


def notify_doorbell(queue: Any, index: int) -> None:
    """Tell observers ``queue``'s doorbell is about to be rung with ``index``."""
    for observer in tuple(OBSERVERS):
        observer.doorbell(queue, index)


def notify(event: str, *args: Any) -> None:
    """Call ``event(*args)`` on every observer that defines it (lifecycle events)."""
    for observer in tuple(OBSERVERS):
        method = getattr(observer, event, None)
        if method is not None:
            method(*args)


def notify_signal_reused(handle: int) -> None:
    """Tell observers a completion signal is about to be re-armed (its timestamps go stale)."""
    for observer in tuple(OBSERVERS):
        observer.signal_reused(handle)
