"""Guarded blocks the compiled engine runs for every wave instead of splitting the batch.

At an ``s_cbranch_execz`` the waves whose EXEC is zero jump over the block the others run. When
each instruction of that block leaves a wave with EXEC zero as it was, the compiled engine
sends every wave through it (codegen.inert_skip): the plan marks such a branch with its target
and the number of guarded instructions; any instruction that would change such a wave -- an
instruction that ignores EXEC, a scalar load, a branch elsewhere, a scalar result (a scalar
write, a vector compare into SGPRs, a carry into VCC, SCC) that some path from the target reads
before writing it -- leaves the branch to split as before.
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


# scalar results, each with an instruction after the target that reads what it writes
SCALAR = [
    ("s_add_u32 s4, s4, 1", "s_add_u32 s5, s4, 1"),                     # s4 (and SCC)
    ("s_cmp_lt_u32 s4, s5", "s_cselect_b32 s6, s7, s8"),                # SCC
    ("v_cmp_gt_u32_e64 s[2:3], v1, v2", "v_cndmask_b32_e64 v4, v5, v6, s[2:3]"),
    ("v_add_co_u32_e32 v1, vcc, v2, v3", "v_addc_co_u32_e32 v4, vcc, v5, v6, vcc"),
]


@pytest.mark.parametrize("write,reader", SCALAR)
def test_a_scalar_result_dead_at_the_target_is_run_through(write, reader):
    # the wave ends after the target without reading it: a wave that ran the write while its
    # EXEC was zero ends as one that jumped
    lines = [GUARD, "v_add_u32_e32 v1, v2, v3", write, "ds_write_b32 v1, v2", "target:",
             *END]
    plan, addresses = _plan(TARGET, lines)
    guard = next(seg for seg in plan.segments if seg.branch is not None)
    assert guard.skip == (addresses[4], 3)


@pytest.mark.parametrize("write,reader", SCALAR)
def test_a_scalar_result_read_after_the_target_keeps_the_split(write, reader):
    lines = [GUARD, "v_add_u32_e32 v1, v2, v3", write, "ds_write_b32 v1, v2", "target:",
             "v_mov_b32_e32 v9, 0", reader, "s_endpgm"]
    assert _skip(lines) is None


def test_a_scalar_result_overwritten_before_any_read_is_dead():
    lines = [GUARD, "s_mov_b32 s4, 7", "v_mov_b32_e32 v1, s4", "target:",
             "s_mov_b32 s4, 0", "v_mov_b32_e32 v2, s4", "s_endpgm"]
    assert _skip(lines) is not None


def test_a_read_on_either_side_of_a_later_branch_keeps_the_split():
    # the target's code branches (on SCC, set at the target); s4 is read on the taken side
    # only, after the untaken side wrote it
    tail = ["s_cmp_eq_u32 s6, 0", "s_cbranch_scc1 {over}", "s_mov_b32 s4, 0", "target:",
            "v_mov_b32_e32 v2, s4", "s_endpgm"]
    guarded = ["s_mov_b32 s4, 7", "v_mov_b32_e32 v1, s4"]
    # one label per plan: resolve the guard to the first line after the block by hand
    probe = ["s_cbranch_execz 2", *guarded, *[line.format(over=1) for line in tail
                                               if line != "target:"]]
    plan, _ = _plan(TARGET, [*probe[:-1], "target:", probe[-1]])
    guard = next(seg for seg in plan.segments if seg.branch is not None
                 and seg.branch.inst.name == "s_cbranch_execz")
    assert guard.skip is None
    # the same with s4 written on both sides before the read: dead
    probe[3:3] = ["s_mov_b32 s4, 1"]
    plan, _ = _plan(TARGET, [*probe[:-1], "target:", probe[-1]])
    guard = next(seg for seg in plan.segments if seg.branch is not None
                 and seg.branch.inst.name == "s_cbranch_execz")
    assert guard.skip is not None


def test_a_scalar_result_read_round_a_loop_keeps_the_split():
    # after the target a loop reads s4 at its head before writing it at its end
    lines = [GUARD, "s_mov_b32 s4, 7", "v_mov_b32_e32 v1, s4", "target:",
             "v_add_u32_e32 v2, s4, v2", "s_mov_b32 s4, 1", "s_cbranch_scc1 -3", "s_endpgm"]
    assert _skip(lines) is None


def test_a_scalar_result_that_leaves_the_unit_live():
    # the unit ends (no s_endpgm, the decoded code runs out) before s4 is written again
    plan, _ = _plan(TARGET, [GUARD, "s_mov_b32 s4, 7", "v_mov_b32_e32 v1, s4", "target:",
                             "v_mov_b32_e32 v2, 0"])
    guard = next(seg for seg in plan.segments if seg.branch is not None)
    assert guard.skip is None


@pytest.mark.parametrize("write", [
    "s_mov_b32 m0, s4",                         # M0: LDS and moves read it without naming it
    "s_mov_b64 exec, s[4:5]",                   # EXEC itself
    "s_mov_b32 ttmp0, s4",                      # trap registers
])
def test_registers_with_implicit_readers_keep_the_split(write):
    lines = [GUARD, "v_add_u32_e32 v1, v2, v3", write, "target:", *END]
    assert _skip(lines) is None
