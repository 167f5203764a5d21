"""Memory instructions: which module compiles each encoding.

SMEM is in semantics_smem.py, GLOBAL/FLAT/SCRATCH in semantics_vmem.py, DS (LDS) in
semantics_lds.py and MUBUF/MTBUF/VBUFFER in semantics_buffer.py; the per-lane memory access
they share (gathers, scatters, scratch and LDS rows, atomics) is in memory_access.py, whose
docstring gives the rules every access follows (faults, EXEC, the order of atomics, LDS range).
Flat addresses in the shared / private apertures (hsapy.sim.queues) go to LDS / scratch.
"""
from __future__ import annotations

from typing import Any

from hsapy.sim.isa.instruction import Instruction
from hsapy.sim.isa.operand_access import NotImplementedOperand
from hsapy.sim.isa.semantics_lds import _ds
from hsapy.sim.isa.semantics_smem import _smem
from hsapy.sim.isa.semantics_vmem import _vmem


def compile_memory(inst: Instruction, info: Any):
    """Closure for a memory instruction (None-returning), or an unimplemented stub."""
    from hsapy.sim.isa.closures import unimplemented as _unimplemented

    try:
        if inst.encoding == "SMEM":
            return _smem(inst, info)
        if inst.encoding == "DS":
            return _ds(inst, info)
        if inst.encoding in ("GLOBAL", "FLAT", "SCRATCH"):
            return _vmem(inst, info)
        if inst.encoding in ("MUBUF", "MTBUF", "VBUFFER"):
            from hsapy.sim.isa.semantics_buffer import compile_buffer

            return compile_buffer(inst, info)
    except NotImplementedOperand as exc:
        return _unimplemented(inst, str(exc))
    return _unimplemented(inst)


