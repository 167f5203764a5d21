"""The simulated runtime's objects that are plain records: agents, their memory pools, ISAs and
caches, and how a handle or integer argument is read. SimLib and its API mixins share them."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import cffi

from hsapy.sim.targets import CpuProfile, GpuProfile

__all__ = ["SimAgent", "SimPool", "SimIsa", "SimCache", "handle_of", "UINT64_MAX",
           "uint64_argument", "int64_argument", "c_argument", "scalar_parameters"]

UINT64_MAX = 0xFFFFFFFFFFFFFFFF
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# Primitive C types only, which every FFI converts alike: the simulator's functions take Python
# values where ROCr's, called through cffi, take C ones, so an argument goes through cffi's own
# conversion to get exactly what a C call would (an int, a bool, an object with __int__ other
# than a float) or raise what it would (TypeError, OverflowError)
_C = cffi.FFI()


def uint64_argument(value: Any) -> int:
    """``value`` as a C uint64_t argument: what cffi passes for it, or the error cffi raises."""
    if value.__class__ is int and 0 <= value <= UINT64_MAX:
        return value
    return _converted("uint64_t[1]", value)


def int64_argument(value: Any) -> int:
    """``value`` as a C int64_t argument (hsa_signal_value_t): what cffi passes for it, or the
    error cffi raises."""
    if value.__class__ is int and INT64_MIN <= value <= INT64_MAX:
        return value
    return _converted("int64_t[1]", value)


def _converted(array_type: str, value: Any) -> int:
    return c_argument(_C, array_type[:-3], value)


def c_argument(ffi: Any, ctype: str, value: Any) -> Any:
    """``value`` as ``ffi`` passes it for a C argument of type ``ctype``, or the error it
    raises: stored into a one-item array, which converts as an argument does (ffi.new's
    initializer would take None for 0)."""
    box = ffi.new(f"{ctype}[1]")
    box[0] = value
    return box[0]

# Opaque handle bases: nonzero, distinct per kind, so a handle of the wrong kind is rejected.
_AGENT_HANDLE_BASE = 0x5A0_0000_1000
_POOL_HANDLE_BASE = 0x5A1_0000_1000
_ISA_HANDLE_BASE = 0x5A2_0000_1000
_CACHE_HANDLE_BASE = 0x5A3_0000_1000
_HANDLE_STRIDE = 0x40


@dataclass(eq=False)
class SimIsa:
    """An instruction set (one per GPU target)."""

    handle: int
    name: str
    profile: GpuProfile


@dataclass(eq=False)
class SimCache:
    """One cache level of an agent."""

    handle: int
    name: str
    level: int
    size: int


@dataclass(eq=False)
class SimPool:
    """A memory pool (hsa_amd_memory_pool_t) of an agent."""

    handle: int
    agent: SimAgent
    segment: int
    global_flags: int
    size: int
    alloc_allowed: bool
    granule: int
    alignment: int
    accessible_by_all: bool
    alloc_max_size: int
    kind: str   # "system-fine", "system-kernarg", "system-coarse", "device" or "group"

    @property
    def is_system(self) -> bool:
        """True for the CPU agent's system-memory pools."""
        return self.kind.startswith("system")


@dataclass(eq=False)
class SimAgent:
    """A CPU or GPU agent. ``profile`` is a GpuProfile (GPU) or CpuProfile (CPU)."""

    handle: int
    profile: GpuProfile | CpuProfile
    node: int
    name: str
    pools: list[SimPool] = field(default_factory=list)
    caches: list[SimCache] = field(default_factory=list)
    isa: SimIsa | None = None
    uuid: str = ""
    bdfid: int = 0

    @property
    def is_gpu(self) -> bool:
        """True for a GPU (kernel) agent."""
        return self.profile.is_gpu


def handle_of(value: Any) -> int:
    """The 64-bit handle of an hsa_*_t struct argument: a cdata struct, a dict or an int.

    Anything else reads as handle 0, which no object has (so the caller returns its INVALID_*
    status instead of raising).
    """
    if isinstance(value, int):
        return value
    try:
        if isinstance(value, dict):
            return int(value.get("handle", 0))
        return int(value.handle)
    except (AttributeError, TypeError, ValueError):
        return 0


_PROTOTYPE = re.compile(r"^\s*(.+?)\b(hsa_\w+)\s*(\(.*\))\s*;\s*$")


def scalar_parameters(ffi: Any, cdef: str) -> dict[str, tuple[str | None, ...]]:
    """Per function of ``cdef`` (one declaration per line), the C type of each parameter that
    is an integer, enum or bool -- what cffi converts from a Python value -- and None for the
    others (pointers, structs, callbacks), as ``ffi`` parses the prototype."""
    found: dict[str, tuple[str | None, ...]] = {}
    for line in cdef.splitlines():
        match = _PROTOTYPE.match(line)
        if match is None or line.lstrip().startswith("typedef"):
            continue
        result, name, parameters = match.groups()
        try:
            function = ffi.typeof(f"{result} (*){parameters}")
        except cffi.CDefError:                       # a line that is no function declaration
            continue
        found[name] = tuple(arg.cname if arg.kind in ("primitive", "enum") else None
                            for arg in function.args)
    return found
