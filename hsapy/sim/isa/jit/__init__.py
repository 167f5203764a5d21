"""The compiled execution engine of the simulator (``HSAPY_SIM_ENGINE=jit``).

Instruction semantics are written once, as the interpreter's numpy closures
(hsapy/sim/isa/semantics*.py); :mod:`~hsapy.sim.isa.jit.trace` runs those closures on symbolic
arrays to get an expression graph per instruction, :mod:`~hsapy.sim.isa.jit.lower` turns the
graph into LLVM IR over one wave's lanes, :mod:`~hsapy.sim.isa.jit.codegen` strings
instructions into segments of host code, and :mod:`~hsapy.sim.isa.jit.runtime` plugs the
compiled units into the interpreter's programs. Whatever is not compiled is interpreted.

``chooses_jit(ctx)`` decides per dispatch (``ctx.engine``: "jit" always, "auto" for large
dispatches when llvmlite is importable, "interp" never); under "auto" the compiled executor
still interprets a dispatch whose kernel is being compiled on a background thread
(:mod:`~hsapy.sim.isa.jit.executor`). :mod:`~hsapy.sim.isa.jit.last_dispatch` holds the engine
counters of the most recent compiled dispatch.
"""
from __future__ import annotations

import importlib
from typing import Any

__all__ = ["chooses_jit", "JitExecutor", "compare_engines", "AUTO_MIN_WORK_ITEMS", "available"]

# "auto" compiles a dispatch of at least this many work-items (smaller ones are cheaper to
# interpret than to compile)
AUTO_MIN_WORK_ITEMS = 1 << 16

_AVAILABLE: bool | None = None


def available() -> bool:
    """True when llvmlite's binding loads (the engine needs LLVM)."""
    global _AVAILABLE
    if _AVAILABLE is None:
        try:
            importlib.import_module("llvmlite.binding")
            _AVAILABLE = True
        except Exception:  # noqa: BLE001 - no usable llvmlite: the interpreter runs everything
            _AVAILABLE = False
    return _AVAILABLE


def chooses_jit(ctx: Any) -> bool:
    """Whether the compiled engine runs this dispatch."""
    engine = getattr(ctx, "engine", "interp")
    if engine == "jit":
        return True
    if engine != "auto" or not available():
        return False
    grid = 1
    for g in ctx.grid_size:
        grid *= max(1, int(g))
    return grid >= AUTO_MIN_WORK_ITEMS


def __getattr__(name: str) -> Any:
    if name == "JitExecutor":
        from hsapy.sim.isa.jit.executor import JitExecutor

        return JitExecutor
    if name == "compare_engines":
        from hsapy.sim.isa.jit.compare import compare_engines

        return compare_engines
    raise AttributeError(name)
