"""What the toolchain does, as events: :func:`observe` reports every tool found, run, cache hit
and miss (``hsapy build --verbose`` prints them; the cache tests count them)."""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Callable, Iterator, Sequence


@dataclasses.dataclass(frozen=True)
class ToolchainEvent:
    """One thing the toolchain did.

    ``kind`` is one of ``found`` (a tool was chosen), ``probe`` (a tool was asked its version or
    capabilities), ``run`` (a compiler, assembler or linker ran), ``llvm`` (llvmlite emitted code),
    ``cache-hit``, ``cache-store``, ``cache-bad`` (an entry failed its check and is rebuilt;
    also a :class:`CacheWarning`), ``prebuilt`` (a shipped code object stood in for a build:
    no linker was found) and ``note``.
    """

    kind: str
    message: str
    argv: tuple[str, ...] = ()


_observers: contextvars.ContextVar[tuple[Callable[[ToolchainEvent], None], ...]] = (
    contextvars.ContextVar("hsapy_toolchain_observers", default=())
)


@contextlib.contextmanager
def observe(callback: Callable[[ToolchainEvent], None]) -> Iterator[None]:
    """Call ``callback(event)`` for every :class:`ToolchainEvent` inside the ``with`` block."""
    token = _observers.set(_observers.get() + (callback,))
    try:
        yield
    finally:
        _observers.reset(token)


def emit(kind: str, message: str, argv: Sequence[str] = ()) -> None:
    event = ToolchainEvent(kind, message, tuple(argv))
    for callback in _observers.get():
        callback(event)
