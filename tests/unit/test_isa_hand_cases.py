"""Hand-checked values for every implemented instruction (tables in isa_hand_cases_*.py).

Each case runs one instruction through the real decoder and interpreter on one wave; see
isa_hand_runner.py for the state notation.
"""
from __future__ import annotations

import pytest
from isa_hand_cases import PARAMS, cases_for
from isa_hand_runner import TARGETS, assemble_all, run_case


@pytest.fixture(scope="module", autouse=True)
def assembled():
    for target in TARGETS:     # one llvm-mc-19 call per target for every case
        assemble_all(target, [c.line for c in cases_for(target)])


@pytest.mark.parametrize("target,case", PARAMS, ids=[f"{t}-{c.line}" for t, c in PARAMS])
def test_hand_checked(target, case):
    run_case(target, case)
