"""Hand-checked cases for the gfx90a opcodes gfx942 does not have (the Vega-era f32 mads):
v_madmk_f32 / v_madak_f32 (not fused, a literal K) and v_mad_legacy_f32 (DX9: 0 * x = 0).
Every gfx90a opcode gfx942 shares runs through the gfx942 cases."""
from __future__ import annotations

import pytest
from isa_hand_runner import INF, NAN, case, decoded, run_case

from hsapy.sim.isa.coverage import implemented_names

CASES = [
    case("gfx90a", "v_madmk_f32 v3, v0, 0x40000000, v1",
         {"v0.f32": [1.0 + 2 ** -12], "v1.f32": [-2.0]}, {"v3.f32": [2 ** -11]},
         "S0 * K + S1 with the product rounded first (exact here)"),
    case("gfx90a", "v_madak_f32 v3, v0, v1, 0xbf800000",
         {"v0.f32": [1.0 + 2 ** -12], "v1.f32": [1.0 + 2 ** -12]}, {"v3.f32": [2 ** -11]},
         "S0 * S1 + K: (1 + 2^-12)^2 rounds to 1 + 2^-11 before the add of -1 (a fused "
         "multiply-add would give 2^-11 + 2^-24)"),
    case("gfx90a", "v_mad_legacy_f32 v3, v0, v1, v2",
         {"v0.f32": [0.0, 2.0, NAN], "v1.f32": [INF, 3.0, 0.0], "v2.f32": [1.0, 1.0, 5.0]},
         {"v3.f32": [1.0, 7.0, 5.0]}, "DX9 rules: 0 * inf and NaN * 0 are 0"),
]


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.line)
def test_gfx90a_hand_checked(c):
    run_case("gfx90a", c)


def test_every_gfx90a_only_opcode_of_these_has_a_case():
    only = {"v_madmk_f32", "v_madak_f32", "v_mad_legacy_f32"}
    assert only <= implemented_names("gfx90a")
    assert only <= {decoded("gfx90a", c.line).name for c in CASES}
