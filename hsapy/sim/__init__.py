"""hsapy.sim: the simulated HSA runtime (same C API as ROCr, software agents behind it).

``SimLib(ffi)`` is the ``lib`` of backend ``sim`` (see hsapy/_hsa and docs/internals.md).
"""
from __future__ import annotations

from hsapy.sim.execution import (
    DispatchContext,
    Executor,
    SimFault,
    register_executor,
    unregister_executor,
)
from hsapy.sim.memory import Allocation, SimMemory, SimMemoryFault
from hsapy.sim.simlib import SimLib
from hsapy.sim.targets import GPU_PROFILES, GpuProfile, resolve_targets

__all__ = [
    "SimLib",
    "SimMemory",
    "SimMemoryFault",
    "Allocation",
    "DispatchContext",
    "Executor",
    "SimFault",
    "register_executor",
    "unregister_executor",
    "GpuProfile",
    "GPU_PROFILES",
    "resolve_targets",
]
