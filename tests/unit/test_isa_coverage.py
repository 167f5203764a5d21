"""Every instruction the interpreter implements has a hand-checked case (isa_hand_cases_*.py),
and docs/simulator-isa-coverage.md says what tools/isa_coverage.py reports today.

"Implemented" is read from the implementation itself (hsapy.sim.isa.coverage): every opcode of
the target's decoder table is encoded (register operands), decoded and compiled by
``compile_instruction``; an opcode whose closure is not the "unimplemented" stub is implemented.
"Covered" is the decoded mnemonic of each hand-checked case's line. The test fails naming the
implemented mnemonics that no case exercises.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from isa_hand_cases import cases_for
from isa_hand_runner import TARGETS, assemble_all, decoded

from hsapy.sim.isa.coverage import implemented_names as implemented

REPO = Path(__file__).resolve().parent.parent.parent


def covered(target: str) -> set[str]:
    names = set()
    assemble_all(target, [c.line for c in cases_for(target)])   # one llvm-mc-19 call
    for c in cases_for(target):
        inst = decoded(target, c.line)
        names.add(inst.name)
        if inst.pair is not None:          # VOPD: both halves are exercised
            names.add(inst.pair.name)
    return names


@pytest.mark.parametrize("target", TARGETS)
def test_the_probe_finds_the_interpreter_s_instructions(target):
    # a guard for the probe itself: common instructions must be found, bogus ones not
    names = implemented(target)
    assert {"v_add_f32", "s_mov_b32", "v_cmp_lt_f32", "s_endpgm"} <= names
    assert len(names) > 500


@pytest.mark.parametrize("target", TARGETS)
def test_every_implemented_instruction_has_a_hand_checked_case(target):
    missing = sorted(implemented(target) - covered(target))
    assert not missing, (f"{len(missing)} implemented {target} instructions have no hand-checked "
                         f"case in tests/unit/isa_hand_cases_*.py: {' '.join(missing)}")


def _tool():
    spec = importlib.util.spec_from_file_location("isa_coverage", REPO / "tools" / "isa_coverage.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("isa_coverage", module)   # dataclasses look their module up
    spec.loader.exec_module(sys.modules["isa_coverage"])  # type: ignore[union-attr]
    return sys.modules["isa_coverage"]


def test_the_coverage_page_in_docs_is_what_the_tool_reports_today():
    tool = _tool()
    try:
        reports = [tool.report(t) for t in tool.TARGETS]
    except OSError as exc:
        pytest.skip(f"libLLVM-19 not loadable: {exc}")
    page = tool.DOC_PATH.read_text(encoding="utf-8")
    assert page == tool.render_markdown(reports), (
        "docs/simulator-isa-coverage.md is stale: regenerate it with "
        "python3 tools/isa_coverage.py --markdown docs/simulator-isa-coverage.md")
