"""Argument checks the public objects share: bad input gets a typed hsapy error naming what was
wrong, before anything reaches the runtime or a queue."""
from __future__ import annotations

import math
from typing import Any

from hsapy.errors import HsapyTypeError, HsapyValueError

__all__ = ["check_timeout"]

_MAX_TIMEOUT_S = float(1 << 40)


def check_timeout(timeout: Any, what: str) -> float:
    """A timeout in seconds: a finite real number >= 0, else a typed error. Every wait has one."""
    cls = timeout.__class__
    if (cls is float or cls is int) and 0 <= timeout < _MAX_TIMEOUT_S:
        return timeout                # (nan and inf fail the comparison)
    if timeout is None:
        raise HsapyValueError(f"{what} needs a timeout in seconds (>= 0); every wait has one")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        try:
            is_number = timeout is not None and not isinstance(timeout, (str, bytes, bool))
            timeout = float(timeout) if is_number else None
        except (TypeError, ValueError):
            timeout = None
        if timeout is None:
            raise HsapyTypeError(f"{what}: timeout is a number of seconds; every wait has one")
    if math.isnan(timeout) or timeout < 0 or math.isinf(timeout):
        raise HsapyValueError(f"{what}: timeout must be a finite number of seconds >= 0, not "
                              f"{timeout!r}; every wait has one")
    return float(timeout)
