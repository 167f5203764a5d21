"""``HSAPY_SIM_ENGINE=compare``: every dispatch runs in both engines and must agree.

The interpreter runs the dispatch first; the memory of every allocation is saved before it
and after it, put back, and the compiled engine runs the same dispatch. The two must leave
every allocation bitwise equal, report the same fault (status, address and message) or none,
and count the same lane- and wave-instructions; otherwise the dispatch fails with a queue error
that names the first difference. What the engines leave in memory when they agree is the
compiled engine's. This is a test tool: it copies all simulated memory twice per dispatch.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from hsapy.hsa_enums import HSA_STATUS_ERROR_EXCEPTION
from hsapy.sim.execution import SimFault

__all__ = ["compare_engines", "EngineMismatch"]


class EngineMismatch(SimFault):
    """The interpreter and the compiled engine disagreed about a dispatch."""

    def __init__(self, message: str) -> None:
        super().__init__(HSA_STATUS_ERROR_EXCEPTION, f"engines disagree: {message}")


def _run(executor: Any, ctx: Any) -> tuple[BaseException | None, Any]:
    ctx.started = time.monotonic()
    try:
        executor.execute(ctx)
    except SimFault as fault:
        return fault, executor.stats
    return None, executor.stats


def _describe(fault: BaseException | None) -> str:
    if fault is None:
        return "completed"
    return f"{type(fault).__name__}({getattr(fault, 'status', '?')}, " \
           f"{getattr(fault, 'address', None)}, {fault})"


def compare_engines(interp: Any, ctx: Any) -> Any:
    """Run ``ctx`` in ``interp`` (an InterpreterExecutor) and in the compiled engine; raise
    :class:`EngineMismatch` when they differ, else the compiled engine's fault if any.
    Returns the execution stats."""
    from hsapy.sim.isa import interpreter

    allocations = ctx.memory.allocations()
    before = [a.backing.copy() for a in allocations]
    interp_fault, interp_stats = _run(_InterpOnly(interp), ctx)
    interp_stats = (interp_stats.lane_instructions, interp_stats.wave_instructions)
    after = [a.backing.copy() for a in allocations]
    for alloc, saved in zip(allocations, before):
        alloc.backing[:] = saved
    compiled = interp.jit_executor()
    jit_fault, jit_stats = _run(compiled, ctx)
    problems = []
    if _describe(interp_fault) != _describe(jit_fault):
        problems.append(f"interpreter {_describe(interp_fault)}, compiled "
                        f"{_describe(jit_fault)}")
    if interp_fault is None and jit_fault is None:
        for alloc, want in zip(allocations, after):
            got = alloc.backing
            if not np.array_equal(got, want):
                first = int(np.flatnonzero(got != want)[0])
                problems.append(f"memory at {alloc.address + first:#x} "
                                f"({alloc.tag or 'allocation'} "
                                f"{alloc.address:#x} + {first}): interpreter "
                                f"{bytes(want[first:first + 8]).hex()}, compiled "
                                f"{bytes(got[first:first + 8]).hex()}")
                break
        counts = (jit_stats.lane_instructions, jit_stats.wave_instructions)
        if counts != interp_stats:
            problems.append(f"lane/wave instructions: interpreter {interp_stats}, compiled "
                            f"{counts}")
    interpreter.last_stats = jit_stats
    if problems:
        raise EngineMismatch("; ".join(problems) + f" (kernel {ctx.kernel_name()})")
    if jit_fault is not None:
        raise jit_fault
    return jit_stats


class _InterpOnly:
    """The interpreter side of a comparison (never delegates to the compiled engine)."""

    def __init__(self, interp: Any) -> None:
        self.interp = interp
        self.stats = None

    def execute(self, ctx: Any) -> None:
        engine = ctx.engine
        ctx.engine = "interp"
        try:
            self.interp.execute(ctx)
        finally:
            ctx.engine = engine
            self.stats = self.interp.stats
