"""Every hand-checked instruction case, gathered from the isa_hand_cases_* tables."""
from __future__ import annotations

import isa_hand_cases_buffer
import isa_hand_cases_cmp
import isa_hand_cases_dot
import isa_hand_cases_ext
import isa_hand_cases_fcvt_nan
import isa_hand_cases_fp8
import isa_hand_cases_gpridx
import isa_hand_cases_lds_dma
import isa_hand_cases_matrix
import isa_hand_cases_mem
import isa_hand_cases_minmax
import isa_hand_cases_sbits
import isa_hand_cases_scalar
import isa_hand_cases_smem
import isa_hand_cases_valu2
import isa_hand_cases_vfloat
import isa_hand_cases_vint
from isa_hand_runner import TARGETS, Case

ALL_CASES: list[Case] = [
    *isa_hand_cases_vfloat.CASES, *isa_hand_cases_vint.CASES, *isa_hand_cases_cmp.CASES,
    *isa_hand_cases_scalar.CASES, *isa_hand_cases_mem.CASES, *isa_hand_cases_ext.CASES,
    *isa_hand_cases_minmax.CASES, *isa_hand_cases_dot.CASES, *isa_hand_cases_sbits.CASES,
    *isa_hand_cases_valu2.CASES, *isa_hand_cases_buffer.CASES,
    *isa_hand_cases_matrix.CASES, *isa_hand_cases_gpridx.CASES,
    *isa_hand_cases_lds_dma.CASES, *isa_hand_cases_fp8.CASES,
    *isa_hand_cases_smem.CASES, *isa_hand_cases_fcvt_nan.CASES,
]


def cases_for(target: str) -> list[Case]:
    return [c for c in ALL_CASES if c.runs_on(target)]


PARAMS = [(t, c) for t in TARGETS for c in cases_for(t)]
