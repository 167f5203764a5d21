"""Argument checks the public objects share: bad input gets a typed hsapy error naming what was
wrong, before anything reaches the runtime or a queue."""
from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from hsapy.errors import HsapyTypeError, HsapyValueError

__all__ = ["check_agent", "check_bit", "check_flag", "check_int", "check_items",
           "check_timeout", "write_text_file"]

_MAX_TIMEOUT_S = float(1 << 40)


def check_timeout(timeout: Any, what: str) -> float:
    """A timeout in seconds: a finite real number in 0 .. 2**40, else a typed error. Every wait
    has one; every other limit in seconds (the simulator's watchdog) is checked here too."""
    cls = timeout.__class__
    if (cls is float or cls is int) and 0 <= timeout < _MAX_TIMEOUT_S:
        return timeout                # (nan and inf fail the comparison)
    if timeout is None:
        raise HsapyValueError(f"{what} needs a timeout in seconds (>= 0); every wait has one")
    # A real number (int, float, a numpy integer or floating scalar, Fraction). Not a bool
    # (numpy's included), a complex (float() of a numpy complex drops the imaginary part with
    # a mere warning), a string or an array.
    if isinstance(timeout, np.ndarray) and timeout.ndim == 0 and timeout.dtype.kind in "iuf":
        timeout = timeout.item()          # a 0-d array of one number, as sizes take it
    if isinstance(timeout, (bool, np.bool_)) or not isinstance(timeout, numbers.Real):
        raise HsapyTypeError(f"{what}: timeout is a number of seconds (int or float), not "
                             f"{type(timeout).__name__} {timeout!r:.40}; every wait has one")
    timeout = float(timeout)
    if math.isnan(timeout) or timeout < 0 or math.isinf(timeout):
        raise HsapyValueError(f"{what}: timeout must be a finite number of seconds >= 0, not "
                              f"{timeout!r}; every wait has one")
    if timeout >= _MAX_TIMEOUT_S:
        # past this a wait is unbounded in all but name (and its nanoseconds overflow uint64)
        raise HsapyValueError(f"{what}: timeout {timeout:g} s is past the longest wait "
                              f"({_MAX_TIMEOUT_S:g} s); give a finite, realistic number of "
                              "seconds")
    return timeout


def check_int(value: Any, what: str, low: int, high: int) -> int:
    """An int in ``low..high`` (numpy integers taken, bools refused), or a typed error naming
    ``what``: never a value wrapped, truncated or read as something else."""
    if value.__class__ is not int:
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise HsapyTypeError(f"{what} must be an int, not {type(value).__name__} "
                                 f"{value!r:.40}")
        try:
            value = int(value.__index__())
        except TypeError:
            # an array of several elements (or of floats) has __index__ and refuses it
            raise HsapyTypeError(f"{what} must be an int, not {type(value).__name__} "
                                 f"{value!r:.40}") from None
    if not low <= value <= high:
        raise HsapyValueError(f"{what} must be in {low}..{high}, not {value}")
    return value


def check_items(value: Any, what: str, ordered: bool = True) -> list[Any]:
    """The items of a list-like ``value`` (list, tuple, 1-d array, generator) as a list, else an
    HsapyTypeError starting with ``what`` (e.g. "launch: args is the list of the kernel's
    arguments"). Refused: a str or bytes (their characters are no list), a number, a 0-d array
    (it has ``__iter__`` and refuses iteration), a mapping (its keys would be taken) and, where
    the order counts (``ordered``), a set, whose order is arbitrary."""
    if value.__class__ is list or value.__class__ is tuple:
        return list(value)
    unordered = ordered and isinstance(value, (set, frozenset))
    if (isinstance(value, (str, bytes, bytearray, memoryview, Mapping)) or unordered
            or not hasattr(value, "__iter__") or getattr(value, "ndim", None) == 0):
        why = (" (a set has no order)" if unordered else
               " (a mapping gives its keys)" if isinstance(value, Mapping) else "")
        raise HsapyTypeError(f"{what}, not {type(value).__name__} {value!r:.40}{why}; give a "
                             "list or tuple")
    return list(value)


def check_agent(agent: Any, runtime: Any, what: str) -> Any:
    """``agent`` when it is one of ``runtime.agents``, else a typed error. Agent handles of two
    runtimes may be equal (two simulators number their agents alike), so a handle says nothing
    about which runtime an agent came from: the Agent object does. (Identity against the
    runtime's own list: this module sits below hsapy.agent and does not import it.)"""
    for known in runtime.agents:
        if agent is known:
            return agent
    other = getattr(agent, "runtime", None)
    if other is not None and any(agent is known for known in getattr(other, "agents", ())):
        raise HsapyValueError(f"{what}: agent {agent.name} belongs to another Runtime; take "
                              "the agent from the runtime this object came from "
                              "(runtime.gpu_agents)")
    raise HsapyTypeError(f"{what}: an agent is an Agent (runtime.gpu_agents, runtime.gpu()), "
                         f"not {type(agent).__name__}")


def check_flag(value: Any, what: str) -> bool:
    """A yes/no option: True or False (a numpy bool too), else a typed error -- "no", 0.0 or
    None are not read as their truth value. Callers test ``value is True``/``is False`` first,
    so the common case costs two identity tests."""
    if value is True or value is False or isinstance(value, np.bool_):
        return bool(value)
    raise HsapyTypeError(f"{what} is True or False, not {type(value).__name__} {value!r:.40}")


def check_bit(value: Any, what: str) -> bool:
    """A one-bit packet option (the header's barrier bit): a bool (numpy's too) or the int 0 or
    1, else a typed error -- None, "no", 0.0 or an array are not read as their truth value."""
    if value is True or value is False or isinstance(value, np.bool_):
        return bool(value)
    if (value.__class__ is int or isinstance(value, np.integer)) and value in (0, 1):
        return bool(value)
    raise HsapyTypeError(f"{what} is True or False (or the bit 0 or 1), not "
                         f"{type(value).__name__} {value!r:.40}")


def check_output_path(path: Any, what: str) -> str:
    """``path`` as a string when a file can be created or replaced there, else HsapyValueError
    naming why (a directory, a missing or read-only parent): checked before a command does its
    work, so a typo in an output path fails at once instead of after a long run."""
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise HsapyTypeError(f"{what}: expected a file path, not {path!r}")
    path = os.fspath(path)
    full = os.path.abspath(path)
    parent = os.path.dirname(full)
    if os.path.isdir(full):
        raise HsapyValueError(f"{what}: {path} is a directory; give the name of a file to "
                              "write (inside it, or elsewhere)")
    if not os.path.isdir(parent):
        raise HsapyValueError(f"{what}: cannot write {path}: there is no directory {parent}; "
                              "create it first or choose another path")
    if not os.access(parent, os.W_OK | os.X_OK) or (os.path.exists(full)
                                                   and not os.access(full, os.W_OK)):
        raise HsapyValueError(f"{what}: cannot write {path}: permission denied; choose a "
                              "writable directory")
    return path


def write_text_file(path: Any, text: str, what: str) -> None:
    """Write ``text`` to the file ``path`` (UTF-8), checked first by check_output_path; a
    failure of the write itself (a full disk, a path that turned unwritable meanwhile) is an
    HsapyValueError naming ``what`` and the reason."""
    path = check_output_path(path, what)
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        raise HsapyValueError(f"{what}: cannot write {path}: {exc.strerror or exc}") from None
