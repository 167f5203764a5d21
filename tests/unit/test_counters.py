"""hsapy.sim.isa.counters without a runtime: the LDS bank model, what each instruction counts
as, and the roofline placement of known work (hsapy.roofline)."""
from __future__ import annotations

import numpy as np
import pytest

from hsapy.errors import HsapyValueError
from hsapy.roofline import peaks_for, place
from hsapy.sim.isa import counters, decode


def _lanes(addresses, wave: int = 64, active=None) -> tuple[np.ndarray, np.ndarray]:
    addr = np.asarray(addresses, np.int64).reshape(1, wave, -1)
    mask = np.ones((1, wave), bool) if active is None else np.asarray(active).reshape(1, wave)
    return addr, mask


@pytest.mark.parametrize("size,stride,passes,conflicts", [
    (4, 4, 2, 0),          # b32, consecutive dwords: two passes of 32 lanes, 32 banks each
    (4, 8, 2, 2),          # stride 2 dwords: 16 banks twice per pass
    (4, 128, 2, 62),       # stride 32 dwords: one bank 32 times per pass
    (4, 132, 2, 0),        # stride 33 dwords (padding): every bank once
    (8, 8, 4, 0),          # b64: four passes of 16 lanes x 2 dwords
    (16, 16, 8, 0),        # b128: eight passes of 8 lanes x 4 dwords
    (16, 64, 8, 24),       # b128 at a 64-byte stride: 8 lanes on 8 banks, 4 dwords per bank
    (1, 1, 2, 0),          # bytes: 4 lanes share a dword
])
def test_bank_conflicts_of_a_wave64_access(size, stride, passes, conflicts):
    addr, mask = _lanes(np.arange(64) * stride)
    assert counters.lds_bank_conflicts(addr, mask, size) == (passes, conflicts)


def test_lanes_reading_one_dword_share_it():
    addr, mask = _lanes(np.zeros(64))
    assert counters.lds_bank_conflicts(addr, mask, 4) == (2, 0)


def test_inactive_lanes_take_no_bank_and_an_empty_pass_takes_no_cycle():
    active = np.arange(64) < 32               # only the first pass has lanes
    addr, mask = _lanes(np.arange(64) * 128, active=active)
    assert counters.lds_bank_conflicts(addr, mask, 4) == (1, 31)


def test_two_address_forms_put_both_elements_of_a_lane_in_its_pass():
    # ds_read2_b32 offset1:32 -> dwords t and t + 32: same bank, 16 lanes per pass
    t = np.arange(64)
    addr = np.stack([4 * t, 4 * t + 128], axis=1).reshape(1, 64, 2)
    assert counters.lds_bank_conflicts(addr, np.ones((1, 64), bool), 4) == (4, 4)


def test_each_wave_row_is_its_own_set_of_passes():
    addr = np.stack([np.arange(32) * 4, np.arange(32) * 128]).reshape(2, 32, 1)
    assert counters.lds_bank_conflicts(addr, np.ones((2, 32), bool), 4) == (2, 31)


def _facts(asm_words: list[int], target: str, wave: int | None = None):
    data = b"".join(w.to_bytes(4, "little") for w in asm_words)
    (inst,) = decode(data, target, 0, wavefront_size=wave)
    return inst, counters.facts(inst)


@pytest.mark.parametrize("words,target,category,flops,precision", [
    ([0x02000300], "gfx942", "VALU", 1, "fp32"),                   # v_add_f32_e32 v0, v0, v1
    ([0xD1CB0000, 0x04060300], "gfx942", "VALU", 2, "fp32"),    # v_fma_f32 v0, v0, v1, v1
    ([0xD3B04000, 0x1C120500], "gfx942", "VALU", 4, "fp32"),    # v_pk_fma_f32 v[0:1], ...
    ([0x7E000B00], "gfx942", "VALU", 0, None),                  # v_cvt_f32_i32
    ([0x80000100], "gfx942", "SALU", 0, None),                  # s_add_u32 s0, s0, s1
    ([0xBF810000], "gfx942", "OTHER", 0, None),                 # s_endpgm
    ([0xBF820001], "gfx942", "BRANCH", 0, None),                # s_branch
])
def test_what_an_instruction_counts_as(words, target, category, flops, precision):
    inst, f = _facts(words, target)
    assert (f.category, f.flops, f.precision) == (category, flops, precision), inst.text()


def test_memory_instructions_know_their_space_direction_and_width():
    # global_load_dwordx4 v[0:3], v[0:1], off (encodings: llvm-mc-19 -show-encoding)
    inst, f = _facts([0xDC5C8000, 0x007F0000], "gfx942")
    assert inst.name == "global_load_dwordx4"
    assert (f.category, f.space, f.access, f.size) == ("FLAT", "global", "read", 16)
    # ds_read2_b32 v[0:1], v0 offset1:1
    inst, f = _facts([0xD86E0100, 0x00000000], "gfx942")
    assert inst.name == "ds_read2_b32"
    assert (f.category, f.space, f.access, f.size, f.elements) == ("LDS", "lds", "read", 4, 2)


def test_a_memory_bound_kernel_reaches_bandwidth_over_peak_of_its_compute_ceiling():
    p = place("gfx942", {"fp32": 10**9}, {}, 10**9, "requested")
    assert p.bound == "memory"
    assert p.intensity == 1.0
    assert p.memory_s == pytest.approx(1e9 / 5.3e12)
    assert p.fraction_of_peak == pytest.approx(5.3 / 163.4)
    assert p.attainable == pytest.approx(5.3e12)


def test_a_compute_bound_kernel_on_the_matrix_units_uses_the_matrix_ceiling():
    p = place("gfx1201", {"fp16": 10**12}, {"fp16": 10**12}, 10**6, "footprint")
    assert p.bound == "compute"
    assert p.ceiling == pytest.approx(194.6e12)
    assert p.fraction_of_peak == 1.0 and p.fraction_of_bandwidth < 1e-3


def test_mixed_work_takes_the_time_of_each_part_at_its_own_ceiling():
    p = place("gfx942", {"fp64": 81_700, "fp32": 163_400}, {}, 1, "footprint")
    assert p.compute_s == pytest.approx(2e-9)


def test_targets_without_published_peaks_are_named():
    with pytest.raises(HsapyValueError, match="gfx803"):
        peaks_for("gfx803")
