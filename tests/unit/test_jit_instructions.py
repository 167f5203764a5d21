"""The compiled engine instruction by instruction (hsapy/sim/isa/jit).

Every hand-checked case (isa_hand_cases_*.py) whose instruction the engine compiles runs
through the compiled code and must meet the same hand-checked expectations; and every such ALU
instruction runs on random register states (ordinary values, and NaNs, infinities, denormals and
bit patterns at the edges) in the interpreter and in the compiled code, which must leave every
register, EXEC and SCC bitwise equal. Instructions of one target, wave size and float mode share
one compiled unit, each its own segment, so the whole table compiles a few times, not once per
case.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from isa_hand_cases import PARAMS, cases_for  # noqa: E402
from isa_hand_runner import (  # noqa: E402
    _ENCODINGS,
    FAMILY,
    NVGPR,
    TARGETS,
    WAVE,
    assemble_all,
    decoded,
    run_case,
)

from hsapy.sim.isa import decode  # noqa: E402
from hsapy.sim.isa.interpreter import ExecutionStats, ProgramInfo  # noqa: E402
from hsapy.sim.isa.jit import codegen  # noqa: E402
from hsapy.sim.isa.jit.compiler import compiler  # noqa: E402
from hsapy.sim.isa.jit.runtime import EngineCounters, Unit, attach  # noqa: E402
from hsapy.sim.isa.semantics import compile_instruction  # noqa: E402
from hsapy.sim.isa.wave import NSREG, Batch  # noqa: E402

SPACING = 0x20                # bytes between instructions of a shared unit (the longest is 16)
BASE = 0x1000                 # where the hand runner decodes: branch targets are relative to it
# instructions whose result depends on their address: compiled alone, at BASE
POSITIONAL = ("s_cbranch", "s_branch", "s_call", "s_getpc")


class CompiledInstructions:
    """One compiled unit of many instructions (one segment each) for one configuration."""

    def __init__(self, target: str, lanes: int, ftz: bool, lines: list[str]) -> None:
        self.info = ProgramInfo(FAMILY[target], lanes, ftz, ftz)
        assemble_all(target, lines)
        insts = []
        for k, line in enumerate(lines):
            at = BASE + SPACING * (k + 1)
            insts.append(decode(_ENCODINGS[(target, line)], target, at, wavefront_size=lanes)[0])
        plan = codegen.plan_unit(insts + [None], 0, len(insts) + 1, self.info, lanes,
                                 split_every=True)
        self.segments = {seg.steps[0].inst.offset: seg for seg in plan.segments}
        self.offsets = {line: BASE + SPACING * (k + 1) for k, line in enumerate(lines)}
        self.unit = None
        if plan.segments:
            module = codegen.generate(plan, lanes, f"test_{target}_{lanes}_{int(ftz)}", self.info)
            address, keep = compiler().compile(module)
            self.unit = Unit(plan, address, keep, lanes)

    def segment(self, line: str):
        return self.segments.get(self.offsets[line])


_UNITS: dict[tuple, CompiledInstructions] = {}


class HandedBack(Exception):
    """The compiled code handed the wave back to the interpreter at the instruction."""


def _non_branch_lines(target: str, lanes: int, ftz: bool) -> list[str]:
    lines = []
    for c in cases_for(target):
        if (c.wave or WAVE[target]) != lanes or c.ftz != ftz or c.line in lines:
            continue
        if c.line.split()[0].startswith(POSITIONAL):
            continue
        lines.append(c.line)
    return lines


def compiled(target: str, lanes: int, ftz: bool) -> CompiledInstructions:
    key = (target, lanes, ftz)
    if key not in _UNITS:
        _UNITS[key] = CompiledInstructions(target, lanes, ftz, _non_branch_lines(target, lanes,
                                                                                  ftz))
    return _UNITS[key]


def _single(target: str, lanes: int, ftz: bool, line: str) -> CompiledInstructions:
    """A unit of just ``line`` at the hand runner's address (branches: absolute targets)."""
    key = (target, lanes, ftz, line)
    if key not in _UNITS:
        unit = CompiledInstructions.__new__(CompiledInstructions)
        unit.info = ProgramInfo(FAMILY[target], lanes, ftz, ftz)
        inst = decoded(target, line, lanes)
        plan = codegen.plan_unit([inst, None], 0, 2, unit.info, lanes)
        unit.segments = {seg.steps[0].inst.offset: seg for seg in plan.segments}
        unit.offsets = {line: inst.offset}
        unit.unit = None
        if plan.segments:
            module = codegen.generate(plan, lanes, "test_branch", unit.info)
            unit.unit = Unit(plan, *compiler().compile(module), lanes)
        _UNITS[key] = unit
    return _UNITS[key]


def _run_compiled(units: CompiledInstructions, line: str, batch: Batch, m) -> object:
    """Run ``line``'s segment once on ``batch``; returns what the interpreter's closure would
    (None for the next instruction, else the branch target)."""
    seg = units.segment(line)
    stats = ExecutionStats()
    attach(m, m.memory.table(None), stats, EngineCounters(), lambda: None)
    m._jit_budget = 0          # one segment, never on to the next
    m.stop_at = 1 << 62
    m.private_size = getattr(m, "private_size", 64)
    result = units.unit.run(batch, m, seg.number, seg.start)
    if m._jit_force:
        raise HandedBack(line)
    return None if result == seg.end else result


def _units_for(target: str, c) -> CompiledInstructions:
    lanes = c.wave or WAVE[target]
    if c.line.split()[0].startswith(POSITIONAL):
        return _single(target, lanes, c.ftz, c.line)
    return compiled(target, lanes, c.ftz)


@pytest.fixture(scope="module", autouse=True)
def assembled():
    for target in TARGETS:
        assemble_all(target, [c.line for c in cases_for(target)])


@pytest.mark.parametrize("target,case", PARAMS, ids=[f"{t}-{c.line}" for t, c in PARAMS])
def test_the_compiled_instruction_meets_the_hand_checked_expectations(target, case):
    units = _units_for(target, case)
    if units.unit is None or units.segment(case.line) is None or "raises" in case.expect:
        pytest.skip("not compiled (the interpreter runs it)")
    if "mode" in case.inputs:
        pytest.skip("a MODE the program is not compiled for (programs are compiled per MODE)")

    def runner(inst, info, batch, m):
        try:
            return _run_compiled(units, case.line, batch, m)
        except HandedBack:
            # as the scheduler does: the interpreter runs the instruction for the wave
            return compile_instruction(inst, info)(batch, m)
    run_case(target, case, runner)


# --- random states ---------------------------------------------------------------------------

_EDGES = np.array([0, 1, 0x80000000, 0x7FFFFFFF, 0xFFFFFFFF, 0x7F800000, 0xFF800000,
                   0x7FC00000, 0x7F800001, 0xFFC00001, 0x3F800000, 0xBF800000, 0x00800000,
                   0x007FFFFF, 0x80000001, 0x3C00, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x8000,
                   0x3C003C00, 0x7FF00000, 0x000FFFFF, 0x1F], np.uint32)


def _random_batch(rng, waves: int, lanes: int, edges: bool, family: str, mode: int) -> Batch:
    S = rng.integers(0, 1 << 32, size=(waves, NSREG), dtype=np.uint64).astype(np.uint32)
    V = rng.integers(0, 1 << 32, size=(NVGPR, waves, lanes), dtype=np.uint64).astype(np.uint32)
    A = rng.integers(0, 1 << 32, size=(NVGPR, waves, lanes), dtype=np.uint64).astype(np.uint32) \
        if family == "gfx9" else None
    if edges:
        V = np.where(rng.random(V.shape) < 0.5, rng.choice(_EDGES, V.shape), V)
        S = np.where(rng.random(S.shape) < 0.5, rng.choice(_EDGES, S.shape), S)
    live = rng.random((waves, lanes)) < 0.8
    live[0] = True
    scc = rng.random(waves) < 0.5
    return Batch(BASE, S, V, A, live, scc, np.zeros(waves, np.int64), np.arange(waves),
                 mode=mode)


def _copy(b: Batch) -> Batch:
    return Batch(b.pc, b.S.copy(), b.V.copy(), None if b.A is None else b.A.copy(),
                 b.exec.copy(), b.scc.copy(), b.wg, b.wave_id, mode=b.mode)


def _alu_rows():
    rows = []
    for target in TARGETS:
        for lanes, ftz in sorted({(c.wave or WAVE[target], c.ftz) for c in cases_for(target)}):
            rows.append((target, lanes, ftz))
    return rows


@pytest.mark.parametrize("target,lanes,ftz", _alu_rows())
def test_compiled_alu_instructions_match_the_interpreter_on_random_states(target, lanes, ftz):
    from hsapy.sim.isa.jit.codegen import MEMORY_ENCODINGS

    units = compiled(target, lanes, ftz)
    if units.unit is None:
        pytest.skip("nothing compiles")
    rng = np.random.default_rng(25)
    family = FAMILY[target]
    checked = 0
    for line, at in units.offsets.items():
        seg = units.segment(line)
        if seg is None:
            continue
        inst = seg.steps[0].inst
        if inst.encoding in MEMORY_ENCODINGS and seg.steps[0].kind != "alu":
            continue
        interp = compile_instruction(inst, units.info)
        for trial in range(4):
            base = _random_batch(rng, 3, lanes, trial % 2 == 1, family, units.info.mode.value)
            want, got = _copy(base), _copy(base)
            m = SimpleNamespace(memory=_memory(), lds=np.zeros(64, np.uint8), lds_stride=16,
                                lds_size=16, private_size=64, pending=[], clock=None)
            where = f"{target} wave{lanes} {line!r} trial {trial}"
            with np.errstate(all="ignore"):
                try:
                    interp(want, m)
                    raised = None
                except Exception as exc:  # noqa: BLE001 - the compiled code must hand it back
                    raised = exc
            try:
                _run_compiled(units, line, got, m)
            except HandedBack:
                continue          # the interpreter runs it
            assert raised is None, f"{where}: the interpreter raised {raised!r}, the compiled " \
                                   "code did not hand the wave back"
            for name in ("S", "V", "A", "exec", "scc"):
                a, b = getattr(want, name), getattr(got, name)
                if a is None:
                    continue
                if not np.array_equal(a, b):
                    bad = np.argwhere(a != b)[0]
                    raise AssertionError(f"{where}: {name}{tuple(bad)} interpreter "
                                         f"{a[tuple(bad)]!r}, compiled {b[tuple(bad)]!r}")
            checked += 1
    assert checked > 0


def _memory():
    from hsapy.sim.memory import SimMemory

    return SimMemory()
