"""gfx12 memory instructions whose data movement no public source consulted defines lane by lane.

LLVM 19 assembles the transposing loads (global_load_tr_b64/_b128) and the M0-masked block
transfers (global_/scratch_ load/store_block) for gfx1201, and hsapy decodes them as LLVM does;
but neither the RDNA4 ISA guide's text nor LLVM says which lane receives which element, or
where in memory each lane's dword of each register goes. The simulator must not guess: each
compiles to the stub that stops the queue naming the instruction and the reason.
"""
from __future__ import annotations

import pytest
from isa_hand_runner import decoded

from hsapy.sim.isa.interpreter import ProgramInfo
from hsapy.sim.isa.semantics import NotImplementedInstruction, compile_instruction
from hsapy.sim.isa.semantics_vmem import UNDEFINED_MOVEMENT

LINES = {  # wave32 spelling (llvm-mc-19 -mcpu=gfx1201); wave64 decodes the same bytes
    "global_load_tr_b64": "global_load_tr_b64 v[8:9], v4, s[20:21] offset:8",
    "global_load_tr_b128": "global_load_tr_b128 v[8:11], v[4:5], off",
    "global_load_block": "global_load_block v[8:39], v4, s[20:21] offset:8",
    "global_store_block": "global_store_block v[4:5], v[8:39], off",
    "scratch_load_block": "scratch_load_block v[8:39], v4, off offset:8",
    "scratch_store_block": "scratch_store_block off, v[8:39], s2",
}


def test_every_instruction_left_undefined_is_tested_here():
    assert set(LINES) == set(UNDEFINED_MOVEMENT)


@pytest.mark.parametrize("wave", [32, 64])
@pytest.mark.parametrize("name", sorted(LINES))
def test_reaching_it_stops_the_queue_naming_it_and_why(name, wave):
    inst = decoded("gfx1201", LINES[name], wave)
    assert inst.name == name
    fn = compile_instruction(inst, ProgramInfo("gfx12", wave, False, False))
    assert getattr(fn, "unimplemented", "") == UNDEFINED_MOVEMENT[name]
    with pytest.raises(NotImplementedInstruction) as info:
        fn(None, None)      # the stub reads no state: it stops before any lane moves data
    assert str(info.value).startswith(f"{inst.text()} (")
    assert "does not guess" in str(info.value)
