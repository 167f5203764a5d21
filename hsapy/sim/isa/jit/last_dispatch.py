"""The engine counters of the most recent compiled dispatch, for tests and benchmarks.

JitExecutor.execute (hsapy.sim.isa.jit.executor) stores its :class:`EngineCounters` in
``counters`` when a dispatch it ran compiled ends. A reader sets ``counters = None`` before a
launch and reads it after: still None means no compiled dispatch ran (under "auto" the
interpreter ran it while the kernel was being compiled). This module sits below the executor
and the package, so that neither imports the other for it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hsapy.sim.isa.jit.runtime import EngineCounters

__all__ = ["counters"]

counters: EngineCounters | None = None
