"""The simulated timestamp clock.

Times are host wall-clock (``time.monotonic_ns``), always labelled simulated. The clock ticks at
:data:`TIMESTAMP_FREQUENCY` Hz (100 MHz, like the GPU's constant-rate ``s_memrealtime`` counter);
``HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY`` reports the same number, and the simulated agents' ticks
are already in the system domain, so converting between the two is the identity.
"""
from __future__ import annotations

import threading
import time

__all__ = ["SimClock", "TIMESTAMP_FREQUENCY"]

TIMESTAMP_FREQUENCY = 100_000_000  # Hz


class SimClock:
    """A monotonic tick counter at ``frequency`` Hz, starting near zero at construction.

    ``now()`` never returns a smaller value than a previous call (across threads), so timestamps
    taken in order compare in order.
    """

    def __init__(self, frequency: int = TIMESTAMP_FREQUENCY) -> None:
        self.frequency = int(frequency)
        self._origin_ns = time.monotonic_ns()
        self._ns_per_tick = 1_000_000_000 / self.frequency
        self._last = 0
        self._lock = threading.Lock()

    def now(self) -> int:
        """Current tick count (non-decreasing)."""
        ticks = int((time.monotonic_ns() - self._origin_ns) / self._ns_per_tick)
        with self._lock:
            if ticks < self._last:
                ticks = self._last
            self._last = ticks
        return ticks

    def ticks_to_seconds(self, ticks: int) -> float:
        """Convert a tick count (or difference) to seconds."""
        return ticks / self.frequency

    def seconds_to_ticks(self, seconds: float) -> int:
        """Convert seconds to ticks (rounded down)."""
        return int(seconds * self.frequency)
