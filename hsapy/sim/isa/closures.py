"""What a compiled instruction is: the closure type, its results and the not-implemented stub.

Every instruction family (``semantics.py`` and the ``semantics_*`` modules, ``gpr_index.py``)
compiles an instruction into a :data:`Closure`; the interpreter (``interpreter.py``) reads the
closure's result. This module sits below all of them so that none imports another for these.

A closure returns None ("next instruction"), a non-negative byte address to continue at, or one
of the negative results below.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hsapy.sim.isa.instruction import Instruction
from hsapy.sim.isa.wave import Batch

END = -1            # the waves of the batch ended (s_endpgm)
BARRIER = -2        # the batch waits at a workgroup barrier
SPLIT = -3          # the batch went both ways at a branch; the machine now holds the parts
MODE_CHANGED = -4   # MODE changed: continue in the program compiled for the new value
SLEEP = -5          # the batch sleeps (s_sleep): it continues at the next instruction, after
                    # the other runnable batches of its chunk have had a turn

Closure = Callable[[Batch, Any], "int | None"]


class NotImplementedInstruction(Exception):
    """Raised when an instruction without semantics is reached."""


def unimplemented(inst: Instruction, why: str = "") -> Closure:
    """A closure that raises :class:`NotImplementedInstruction` naming ``inst`` when reached."""
    def run(b: Batch, m: Any) -> None:
        raise NotImplementedInstruction(f"{inst.text()}" + (f" ({why})" if why else ""))
    run.unimplemented = why or "no semantics"  # type: ignore[attr-defined]
    return run
