"""Which executor runs an agent's dispatches (docs/internals.md, "The executor seam").

:class:`ExecutorCache` gives each agent the interpreter registered for its ISA family (importing
``hsapy.sim.isa`` once, where the interpreters register), else the :class:`BuiltinExecutor`,
which completes a kernel whose first instruction is ``s_endpgm`` and fails any other with
``not implemented for <target>: <raw word>``. ``HSAPY_SIM_EXECUTOR=null`` (or
``SimLib(..., executor="null")``) selects :class:`NullExecutor`, which consumes dispatches
without running them (launch benchmarks).
"""
from __future__ import annotations

import os
import threading
from typing import Any

from hsapy.hsa_enums import (
    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
    HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
    HSA_STATUS_ERROR_MEMORY_FAULT,
)
from hsapy.sim.execution import (
    DispatchContext,
    Executor,
    SimFault,
    registered_factory,
    resolve_engine,
    resolve_threads,
    resolve_watchdog,
)
from hsapy.sim.memory import SimMemoryFault
from hsapy.sim.targets import GpuProfile

__all__ = ["ExecutorCache", "check_executor", "BuiltinExecutor", "NullExecutor",
           "create_executor", "S_ENDPGM", "HOST_SERVICES", "explain_fault"]

# s_endpgm encodings, checked with `echo s_endpgm | llvm-mc-19 -triple=amdgcn-amd-amdhsa
# -mcpu=<gfx> -show-encoding`: gfx90a/gfx942 [0x00,0x00,0x81,0xbf], gfx1100/gfx1201
# [0x00,0x00,0xb0,0xbf] (SOPP opcode 1 on gfx9, 48 on gfx11+).
S_ENDPGM: dict[str, int] = {
    "gfx9": 0xBF810000,
    "gfx11": 0xBFB00000,
    "gfx12": 0xBFB00000,
}


# Hidden kernel arguments of host services the simulator does not provide (LLVM AMDGPUUsage,
# "Code Object V5 Metadata"): the launcher leaves them 0, so a kernel that uses one reads a
# pointer near address 0. Faults below NULL_REGION in such a kernel name the service.
HOST_SERVICES: dict[str, str] = {
    "hidden_hostcall_buffer": "host calls: printf, malloc/free and other hostcall functions",
    "hidden_printf_buffer": "buffered printf",
    "hidden_heap_v1": "device malloc/free",
}
NULL_REGION = 1 << 16


def explain_fault(ctx: DispatchContext, fault: SimFault) -> SimFault:
    """``fault``, or the same fault with a note naming the host services the kernel takes when
    it is a memory fault near address 0 and those hidden arguments are 0 in its kernarg."""
    info = getattr(ctx.kernel, "info", None)
    if (fault.status != HSA_STATUS_ERROR_MEMORY_FAULT or fault.address is None
            or not 0 <= fault.address < NULL_REGION or info is None):
        return fault
    unset = []
    for arg in info.hidden_args:
        service = HOST_SERVICES.get(arg.value_kind)
        if service is None:
            continue
        try:
            value = ctx.memory.read(ctx.kernarg_address + arg.offset, arg.size)
        except SimMemoryFault:
            continue
        if not any(value):
            unset.append(f"{arg.value_kind} ({service})")
    if not unset:
        return fault
    note = (f". The kernel takes {', '.join(unset)}, which the simulator does not provide and "
            "leaves 0: host services are not supported, and a kernel that calls one faults "
            "near address 0")
    return SimFault(fault.status, fault.message + note, fault.address)


_isa_import_attempted = False
_isa_import_lock = threading.RLock()


def _load_isa_package() -> None:
    """Import hsapy.sim.isa once so that its interpreters register themselves."""
    global _isa_import_attempted
    if _isa_import_attempted:
        return
    # Queue threads dispatch concurrently: the others wait here until the import has finished
    # (and the interpreters registered) instead of seeing the flag and no factory yet.
    with _isa_import_lock:
        if _isa_import_attempted:
            return
        try:
            import hsapy.sim.isa  # noqa: F401  (its interpreters register at import)
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
            offset = int.from_bytes(ctx.memory.read(ctx.kernel_object + 16, 8), "little",
                                    signed=True)
            entry = ctx.kernel_object + offset
            word = ctx.memory.read_u32(entry)
        except SimMemoryFault as fault:
            raise SimFault(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, str(fault),
                           fault.address) from fault
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


def check_executor(mode: Any) -> Any:
    """``mode`` when it names a simulator executor (None, "null", "builtin", "default") or is an
    object with ``execute(ctx)``, else a typed error naming the option ``executor``."""
    if isinstance(mode, str) and mode not in ("null", "builtin", "default"):
        from hsapy.errors import HsapyValueError

        raise HsapyValueError(
            f"executor={mode!r}: unknown simulator executor; use 'null' or leave "
            "HSAPY_SIM_EXECUTOR unset")
    if mode is not None and not isinstance(mode, str) and not callable(
            getattr(mode, "execute", None)):
        from hsapy.errors import HsapyTypeError

        raise HsapyTypeError(
            f"executor: a simulator executor is 'null' or an object with execute(ctx), not "
            f"{type(mode).__name__} {mode!r:.40}")
    return mode


class ExecutorCache:
    """Per-SimLib choice of executor for each agent.

    ``mode`` is None (registered interpreter, else built-in), "null", or an Executor instance
    used for every agent (tests). ``watchdog_s`` is the per-dispatch limit the packet processor
    puts into every DispatchContext (see :func:`resolve_watchdog`).
    """

    def __init__(self, mode: Any = None, watchdog_s: Any = None, engine: Any = None) -> None:
        self.watchdog_s = resolve_watchdog(watchdog_s)
        self.engine = resolve_engine(engine)
        resolve_threads()          # a bad HSAPY_SIM_THREADS is reported here, not mid-dispatch
        if mode is None:
            mode = os.environ.get("HSAPY_SIM_EXECUTOR") or None
        self.mode = check_executor(mode)
        self._cache: dict[str, tuple[Any, Executor]] = {}

    def execute(self, profile: GpuProfile, ctx: DispatchContext) -> None:
        """Run the dispatch ``ctx`` on ``profile``'s executor (see :func:`explain_fault`)."""
        try:
            self.get(profile).execute(ctx)
        except SimFault as fault:
            explained = explain_fault(ctx, fault)
            if explained is fault:
                raise
            raise explained from None

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
