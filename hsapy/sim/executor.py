"""The executor seam between the packet processor and the ISA interpreter (docs/internals.md).

The packet processor validates a kernel dispatch packet, builds a :class:`DispatchContext` and
calls ``executor.execute(ctx)``, which returns when every wave has ended or raises
:class:`SimFault`. ``hsapy.sim.isa`` installs interpreters with :func:`register_executor` for the
families "gfx9", "gfx11", "gfx12". Until then the :class:`BuiltinExecutor` completes a kernel
whose first instruction is ``s_endpgm`` and fails any other with
``not implemented for <target>: <raw word>``. ``HSAPY_SIM_EXECUTOR=null`` (or
``SimLib(..., executor="null")``) selects :class:`NullExecutor`, which consumes dispatches
without running them (launch benchmarks).
"""
from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from hsapy.sim.clock import SimClock
from hsapy.sim.memory import SimMemory, SimMemoryFault
from hsapy.sim.targets import GpuProfile

if TYPE_CHECKING:  # the loader (hsapy/sim/loader.py, issue #4) defines LoadedKernel
    from hsapy.sim.loader import LoadedKernel  # noqa: F401

__all__ = [
    "DispatchContext",
    "Executor",
    "ExecutorFactory",
    "SimFault",
    "BuiltinExecutor",
    "NullExecutor",
    "register_executor",
    "unregister_executor",
    "create_executor",
    "S_ENDPGM",
    "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION",
    "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION",
    "HSA_STATUS_ERROR_MEMORY_FAULT",
]

# hsa_ext_amd.h status values for kernel faults.
HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION = 41
HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION = 42
HSA_STATUS_ERROR_MEMORY_FAULT = 43

# s_endpgm encodings, checked with `echo s_endpgm | llvm-mc-19 -triple=amdgcn-amd-amdhsa
# -mcpu=<gfx> -show-encoding`: gfx90a/gfx942 [0x00,0x00,0x81,0xbf], gfx1100/gfx1201
# [0x00,0x00,0xb0,0xbf] (SOPP opcode 1 on gfx9, 48 on gfx11+).
S_ENDPGM: dict[str, int] = {
    "gfx9": 0xBF810000,
    "gfx11": 0xBFB00000,
    "gfx12": 0xBFB00000,
}


class SimFault(Exception):
    """A dispatch failed: ``status`` is the hsa_status_t the queue's error callback receives."""

    def __init__(self, status: int, message: str, address: int | None = None) -> None:
        self.status = int(status)
        self.message = message
        self.address = address
        super().__init__(message)


@dataclass
class DispatchContext:
    """Everything an executor needs to run one kernel dispatch (see docs/internals.md)."""

    agent: GpuProfile            # target name, wave size, CU count, LDS size, ...
    memory: SimMemory
    packet_address: int          # the AQL packet in the ring (dispatch ptr)
    queue_address: int           # the hsa_queue_t / amd_queue_t (queue ptr)
    dispatch_id: int             # the packet index
    setup_dims: int
    workgroup_size: tuple[int, int, int]
    grid_size: tuple[int, int, int]
    private_segment_size: int    # bytes per work-item, from the packet
    group_segment_size: int      # LDS bytes per workgroup, from the packet
    kernel_object: int           # address of the 64-byte kernel descriptor
    kernarg_address: int
    kernel: Any                  # LoadedKernel: the loader's record (descriptor, code object, base)
    clock: SimClock              # simulated timestamp counter (s_memtime / s_memrealtime)
    agent_handle: int = 0        # the hsa_agent_t handle of the executing agent


class Executor(Protocol):
    """Runs a dispatch; returns when every wave ended, raises SimFault on failure."""

    def execute(self, ctx: DispatchContext) -> None:
        """Run the dispatch described by ``ctx``."""
        ...


ExecutorFactory = Callable[[GpuProfile], Executor]

_registry_lock = threading.Lock()
_factories: dict[str, ExecutorFactory] = {}


def register_executor(family: str, factory: ExecutorFactory) -> None:
    """Install ``factory(profile) -> Executor`` for an ISA family ("gfx9", "gfx11", "gfx12").

    Agents pick it up at their next dispatch (executors are created lazily and cached per agent
    and factory).
    """
    with _registry_lock:
        _factories[family] = factory


def unregister_executor(family: str) -> None:
    """Remove the factory for ``family`` (tests); the built-in executor applies again."""
    with _registry_lock:
        _factories.pop(family, None)


def registered_factory(family: str) -> ExecutorFactory | None:
    """The factory registered for ``family``, or None."""
    return _factories.get(family)


_isa_import_attempted = False
_isa_import_lock = threading.RLock()


def _load_isa_package() -> None:
    """Import hsapy.sim.isa once so that its interpreters can register themselves.

    The package is optional: until it exists the built-in executor is used.
    """
    global _isa_import_attempted
    if _isa_import_attempted:
        return
    # Queue threads dispatch concurrently: the others wait here until the import has finished
    # (and the interpreters registered) instead of seeing the flag and no factory yet.
    with _isa_import_lock:
        if _isa_import_attempted:
            return
        try:
            importlib.import_module("hsapy.sim.isa")
        except ModuleNotFoundError as exc:
            if exc.name not in ("hsapy.sim.isa",):
                raise
        finally:
            _isa_import_attempted = True    # only once the import has finished


class BuiltinExecutor:
    """Completes a kernel whose first instruction is ``s_endpgm``; fails any other."""

    def __init__(self, profile: GpuProfile) -> None:
        self.profile = profile

    def execute(self, ctx: DispatchContext) -> None:
        """Read the first instruction word at the kernel's entry and decide."""
        try:
            # kernel_code_entry_byte_offset: signed int64 at descriptor offset 16
            offset = int.from_bytes(ctx.memory.read(ctx.kernel_object + 16, 8), "little", signed=True)
            entry = ctx.kernel_object + offset
            word = ctx.memory.read_u32(entry)
        except SimMemoryFault as fault:
            raise SimFault(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, str(fault), fault.address)
        if word == S_ENDPGM.get(self.profile.family):
            return
        raise SimFault(
            HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
            f"not implemented for {self.profile.name}: {word:#010x} (no ISA interpreter is "
            f"registered for family {self.profile.family}; only a kernel that starts with "
            "s_endpgm can complete)",
            entry,
        )


class NullExecutor:
    """Consumes dispatches without running them (HSAPY_SIM_EXECUTOR=null)."""

    def __init__(self, profile: GpuProfile | None = None) -> None:
        self.profile = profile

    def execute(self, ctx: DispatchContext) -> None:
        """Do nothing: the dispatch completes immediately."""
        return None


class ExecutorCache:
    """Per-SimLib choice of executor for each agent.

    ``mode`` is None (registered interpreter, else built-in), "null", or an Executor instance
    used for every agent (tests).
    """

    def __init__(self, mode: Any = None) -> None:
        if mode is None:
            mode = os.environ.get("HSAPY_SIM_EXECUTOR") or None
        if isinstance(mode, str) and mode not in ("null", "builtin", "default"):
            from hsapy.errors import HsapyValueError

            raise HsapyValueError(
                f"unknown simulator executor {mode!r}; use 'null' or leave HSAPY_SIM_EXECUTOR unset"
            )
        self.mode = mode
        self._cache: dict[str, tuple[Any, Executor]] = {}

    def get(self, profile: GpuProfile) -> Executor:
        """The executor for ``profile`` (created on first use, recreated if the factory changed)."""
        mode = self.mode
        if mode == "null":
            return _NULL
        if mode is not None and not isinstance(mode, str):
            return mode
        if mode == "builtin":
            factory = None
        else:
            _load_isa_package()
            factory = registered_factory(profile.family)
        cached = self._cache.get(profile.name)
        if cached is not None and cached[0] is factory:
            return cached[1]
        executor = factory(profile) if factory is not None else BuiltinExecutor(profile)
        self._cache[profile.name] = (factory, executor)
        return executor


_NULL = NullExecutor()


def create_executor(profile: GpuProfile, mode: Any = None) -> Executor:
    """One-off executor for ``profile`` under ``mode`` (see :class:`ExecutorCache`)."""
    return ExecutorCache(mode).get(profile)
