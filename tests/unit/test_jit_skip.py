"""Guarded blocks the compiled engine runs for every wave instead of splitting the batch.

At an ``s_cbranch_execz`` the waves whose EXEC is zero jump over the block the others run. When
each instruction of that block leaves a wave with EXEC zero as it was, the compiled engine
sends every wave through it (codegen.inert_skip): the plan marks such a branch with its target
and the number of guarded instructions; any instruction that would change such a wave -- a
scalar write, a vector compare into an SGPR, an instruction that ignores EXEC, a scalar load, a
branch elsewhere -- leaves the branch to split as before.
"""
from __future__ import annotations

import pytest

pytest.importorskip("llvmlite")

from isa_hand_runner import _ENCODINGS, FAMILY, WAVE, assemble_all  # noqa: E402

from hsapy.sim.isa import decode  # noqa: E402
from hsapy.sim.isa.interpreter import ProgramInfo  # noqa: E402
from hsapy.sim.isa.jit import codegen  # noqa: E402

BASE = 0x1000
TARGET = "gfx942"
# "{skip}" / "{over}": the branch's distance in dwords to the label line "target:" (which is
# not an instruction: it marks where the target is), resolved here from the encodings' sizes
GUARD = "s_cbranch_execz {skip}"
END = ["v_mov_b32_e32 v9, 0", "s_endpgm"]


def _plan(target: str, lines: list[str]) -> tuple[codegen.UnitPlan, dict[int, int]]:
    """The unit plan of ``lines`` (branch distances resolved) at BASE; and each line's address."""
    probe = [line.format(skip=0, over=0) for line in lines if line != "target:"]
    assemble_all(target, probe)
    at, addresses, label = BASE, [], None
    for line in lines:
        if line == "target:":
            label = at
            continue
        addresses.append(at)
        at += len(_ENCODINGS[(target, line.format(skip=0, over=0))])
    assert label is not None
    body = [line for line in lines if line != "target:"]
    final = [line.format(skip=(label - (a + 4)) // 4, over=(label - (a + 4)) // 4)
             for line, a in zip(body, addresses)]
    assemble_all(target, final)
    insts = [decode(_ENCODINGS[(target, line)], target, a, wavefront_size=WAVE[target])[0]
             for line, a in zip(final, addresses)]
    info = ProgramInfo(FAMILY[target], WAVE[target], False, False)
    plan = codegen.plan_unit(insts + [None], 0, len(insts) + 1, info, WAVE[target])
    return plan, dict(zip(range(len(final)), addresses))


def _skip(lines: list[str], target: str = TARGET):
    plan, _ = _plan(target, lines)
    guards = [seg for seg in plan.segments
              if seg.branch is not None and seg.branch.inst.name == "s_cbranch_execz"]
    assert len(guards) == 1
    return guards[0].skip


GUARDED = ["v_lshl_add_u32 v5, v3, 2, v1", "ds_read_b32 v5, v5", "s_waitcnt lgkmcnt(0)",
           "v_max_f32_e32 v5, v5, v6", "ds_write_b32 v1, v5",
           "global_store_dword v[6:7], v5, off", "global_load_dword v8, v[6:7], off"]


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_a_block_of_vector_and_memory_instructions_is_run_through(target):
    lines = GUARDED if target == "gfx942" else [
        "v_lshl_add_u32 v5, v3, 2, v1", "ds_load_b32 v5, v5", "s_wait_dscnt 0",
        "v_max_num_f32_e32 v5, v5, v6", "ds_store_b32 v1, v5",
        "global_store_b32 v[6:7], v5, off", "global_load_b32 v8, v[6:7], off"]
    plan, addresses = _plan(target, [GUARD, *lines, "target:", *END])
    guard = next(seg for seg in plan.segments if seg.branch is not None)
    assert guard.skip == (addresses[len(lines) + 1], len(lines))


def test_a_block_ending_in_a_branch_to_the_same_target_is_run_through():
    # LLVM's form inside a loop: the guarded block ends with an s_branch to where the
    # s_cbranch_execz goes; an instruction neither of them runs sits between
    lines = [GUARD, "v_add_u32_e32 v1, v2, v3", "ds_write_b32 v1, v2", "s_branch {over}",
             "s_add_u32 s4, s4, 1", "target:", *END]
    plan, addresses = _plan(TARGET, lines)
    guard = next(seg for seg in plan.segments if seg.branch is not None
                 and seg.branch.inst.name == "s_cbranch_execz")
    assert guard.skip == (addresses[5], 3)


@pytest.mark.parametrize("intruder", [
    "s_add_u32 s4, s4, 1",                      # a scalar write
    "v_cmp_gt_u32_e64 s[2:3], v1, v2",          # a vector compare into SGPRs
    "v_add_co_u32_e32 v1, vcc, v2, v3",         # a carry into VCC
    "v_writelane_b32 v1, s4, 0",                # writes its lane whatever EXEC says
    "v_readfirstlane_b32 s4, v1",               # into an SGPR
    "s_load_dword s4, s[0:1], 0x0",             # a scalar load
    "s_mov_b64 exec, -1",                       # EXEC itself
    "s_cbranch_scc1 {skip}",                    # a branch of its own
    "s_barrier",                                # a barrier the jumping waves would not reach
    "s_sendmsg sendmsg(MSG_INTERRUPT)",         # a message
])
def test_one_instruction_that_changes_a_wave_keeps_the_split(intruder):
    lines = [GUARD, "v_add_u32_e32 v1, v2, v3", intruder, "ds_write_b32 v1, v2", "target:",
             *END]
    assert _skip(lines) is None


def test_a_backward_or_outside_target_keeps_the_split():
    # a target outside the unit's instructions
    plan, _ = _plan(TARGET, ["s_cbranch_execz 200", "v_add_u32_e32 v1, v2, v3", "target:",
                             *END])
    guard = next(seg for seg in plan.segments if seg.branch is not None)
    assert guard.skip is None
