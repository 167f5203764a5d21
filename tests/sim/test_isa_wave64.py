"""Wave64 on gfx11/gfx12 (RX 7900 XTX gfx1100, RX 9070 XT gfx1201 built with -mwavefrontsize64):
the interpreter decodes with the wave64 tables and runs 64-lane EXEC/VCC and lane masks, so
lanes 32-63 compute what lanes 0-31 do. gfx942 (wave64 only) runs the same kernels as a check.
A code object whose wave size disagrees with its descriptor stops the queue naming it."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from isa_exec_harness import Device, build_hip, require

from hsapy.sim.execution import SimFault

W64 = ("-mwavefrontsize64",)
BUILDS = [("gfx1201", W64), ("gfx1100", W64), ("gfx942", ())]
BUILD_IDS = ["gfx1201-w64", "gfx1100-w64", "gfx942"]

LANES = r"""
KERNEL void lanes(const uint* in, uint* out, unsigned long long* ballots) {
  uint t = tid_x();
  uint g = bid_x() * bdim_x() + t;
  uint v = in[g];
  uint r;
  if (v & 1) r = v * 3 + t; else r = v / 7 + 100;                // divergent branch
  unsigned long long b = __builtin_amdgcn_ballot_w64(v & 2);     // v_cmp into a 64-bit mask
  uint pulled = __builtin_amdgcn_ds_bpermute(((t + 5) % 64) * 4, r);
  uint first = __builtin_amdgcn_readfirstlane(r + t);
  uint below = __builtin_amdgcn_mbcnt_hi((uint)(b >> 32), __builtin_amdgcn_mbcnt_lo((uint)b, 0));
  out[4 * g] = r; out[4 * g + 1] = pulled; out[4 * g + 2] = first; out[4 * g + 3] = below;
  if (t % 64 == 0) ballots[g / 64] = b;
}

KERNEL void cross(const uint* in, uint* out) {
  uint t = tid_x();
  uint g = bid_x() * bdim_x() + t;
  uint v = in[g];
  out[8 * g + 0] = __builtin_amdgcn_update_dpp(0u, v, 0x111, 0xf, 0xf, false);  // row_shr:1
  out[8 * g + 3] = __builtin_amdgcn_readlane(v, 40);
  uint w = v;
  asm volatile("v_writelane_b32 %0, %1, 50" : "+v"(w) : "s"(77u));
  out[8 * g + 4] = w;
  uint acc = 0;
  for (uint k = 0; k < (v & 63); k++) acc += k ^ t;                // lane-varying trip counts
  out[8 * g + 5] = acc;
  unsigned long long x = ((unsigned long long)v << 20) + (unsigned long long)in[g ^ 1] * 4099u;
  out[8 * g + 6] = (uint)(x >> 32);                              // carries through a lane mask
#if defined(__gfx1100__) || defined(__gfx1201__)
  out[8 * g + 1] = __builtin_amdgcn_update_dpp(0u, v, 0x153, 0xf, 0xf, false);  // row_share:3
  out[8 * g + 2] = __builtin_amdgcn_update_dpp(0u, v, 0x165, 0xf, 0xf, false);  // row_xmask:5
  out[8 * g + 7] = __builtin_amdgcn_permlane64(v);                   // swaps the 32-lane halves
  // lane i of each row of 16 reads lane sel(i) of its row / of the other row of its 32 lanes
  out[8 * g + 1] ^= __builtin_amdgcn_permlane16(0u, v, 0x01234567u, 0x89abcdefu, false, false);
  out[8 * g + 2] ^= __builtin_amdgcn_permlanex16(0u, v, 0x76543210u, 0xfedcba98u, false, false);
#else
  out[8 * g + 1] = __builtin_amdgcn_update_dpp(0u, v, 0x142, 0xf, 0xf, false);  // row_bcast:15
  out[8 * g + 2] = __builtin_amdgcn_update_dpp(0u, v, 0x138, 0xf, 0xf, false);  // wave_shr:1
#endif
}
"""


@pytest.mark.parametrize("target,flags", BUILDS, ids=BUILD_IDS)
def test_lanes_32_to_63_branch_ballot_permute_and_count_like_the_others(target, flags):
    dev = Device(target)
    kernel = dev.load(build_hip(LANES, target, flags), "lanes")
    n = 256
    v = np.random.default_rng(0).integers(0, 1 << 20, n).astype(np.uint32)
    out, ballots = dev.zeros(16 * n), dev.zeros(8 * n // 64)
    dev.dispatch(kernel, [dev.buffer(v), out, ballots], (n,), (128,))
    got = dev.read(out, np.uint32, 4 * n).reshape(n, 4)
    t = np.arange(n) % 128
    wave_base = np.arange(n) // 64 * 64
    r = np.where(v & 1, v * 3 + t, v // 7 + 100).astype(np.uint32)
    bits = (v & 2) != 0
    assert np.array_equal(got[:, 0], r)
    assert np.array_equal(got[:, 1], r[wave_base + (t + 5) % 64])
    assert np.array_equal(got[:, 2], r[wave_base] + t[wave_base])
    assert np.array_equal(got[:, 3], [bits[wave_base[i]:i].sum() for i in range(n)])
    want = [sum(int(bits[w * 64 + i]) << i for i in range(64)) for w in range(n // 64)]
    assert np.array_equal(dev.read(ballots, np.uint64, n // 64), np.array(want, np.uint64))
    assert (want[0] >> 32) != 0                       # the upper half of the mask is in use


@pytest.mark.parametrize("target,flags", BUILDS, ids=BUILD_IDS)
def test_dpp_rows_readlane_writelane_loops_and_carries_in_wave64(target, flags):
    dev = Device(target)
    kernel = dev.load(build_hip(LANES, target, flags), "cross")
    n = 256
    v = np.random.default_rng(1).integers(0, 1 << 30, n).astype(np.uint32)
    out = dev.zeros(32 * n)
    dev.dispatch(kernel, [dev.buffer(v), out], (n,), (128,))
    got = dev.read(out, np.uint32, 8 * n).reshape(n, 8)
    g = np.arange(n)
    lane = g % 64
    base = g - lane
    pos, row = lane & 15, lane & ~15
    t = g % 128
    assert np.array_equal(got[:, 0], np.where(pos >= 1, v[np.maximum(g - 1, 0)], 0))
    if target == "gfx942":
        assert np.array_equal(got[:, 1], np.where(row > 0, v[base + np.maximum(row - 1, 0)], 0))
        assert np.array_equal(got[:, 2], np.where(lane >= 1, v[np.maximum(g - 1, 0)], 0))
    else:
        sel16 = (np.uint64(0x89ABCDEF01234567) >> (4 * pos).astype(np.uint64)) & np.uint64(15)
        selx = (np.uint64(0xFEDCBA9876543210) >> (4 * pos).astype(np.uint64)) & np.uint64(15)
        perm16 = v[base + row + sel16.astype(np.int64)]
        permx = v[base + (row ^ 16) + selx.astype(np.int64)]
        assert np.array_equal(got[:, 1], v[base + row + 3] ^ perm16)
        assert np.array_equal(got[:, 2], v[base + row + (pos ^ 5)] ^ permx)
    assert np.array_equal(got[:, 3], v[base + 40])
    assert np.array_equal(got[:, 4], np.where(lane == 50, 77, v))
    assert np.array_equal(got[:, 5], [sum(k ^ int(t[i]) for k in range(v[i] & 63))
                                      for i in range(n)])
    wide = (v.astype(np.uint64) << np.uint64(20)) + v[g ^ 1].astype(np.uint64) * np.uint64(4099)
    assert np.array_equal(got[:, 6], (wide >> np.uint64(32)).astype(np.uint32))
    if target != "gfx942":
        assert np.array_equal(got[:, 7], v[base + (lane ^ 32)])


def _set_wave32_bit(dev: Device, kernel, on: bool) -> None:
    """Rewrite kernel_code_properties bit 10 (wavefront_size32) of the loaded descriptor."""
    raw = dev.memory.read(kernel.descriptor_address + 56, 2)
    (props,) = struct.unpack("<H", raw)
    props = (props | 1 << 10) if on else (props & ~(1 << 10))
    dev.memory.write(kernel.descriptor_address + 56, struct.pack("<H", props))


def test_wave64_code_under_a_wave32_descriptor_is_a_mismatch_not_a_truncated_mask():
    dev = Device("gfx1201")
    kernel = dev.load(build_hip(LANES, "gfx1201", W64), "lanes")
    _set_wave32_bit(dev, kernel, True)
    n = 64
    out, ballots = dev.zeros(16 * n), dev.zeros(8)
    with pytest.raises(SimFault) as info:
        dev.dispatch(kernel, [dev.buffer(np.ones(n, np.uint32)), out, ballots], (n,), (64,))
    assert info.value.status == 42
    assert "wave-size mismatch on gfx1201" in info.value.message
    assert ".wavefront_size 64" in info.value.message
    assert not dev.read(out, np.uint32, 4 * n).any()


def test_a_wave32_descriptor_on_gfx942_is_a_mismatch():
    dev = Device("gfx942")
    kernel = dev.load(build_hip(LANES, "gfx942"), "lanes")
    _set_wave32_bit(dev, kernel, True)
    with pytest.raises(SimFault) as info:
        dev.dispatch(kernel, [dev.buffer(np.ones(64, np.uint32)), dev.zeros(1024), dev.zeros(8)],
                     (64,), (64,))
    assert "wave-size mismatch on gfx942" in info.value.message
    assert "runs only wave64" in info.value.message


WAVE32_WITH_B64_MASK = """\
\t.text
\t.globl\tmixed
\t.p2align\t8
\t.type\tmixed,@function
mixed:
\tv_cmp_gt_u32_e32 vcc_lo, 16, v0
\ts_and_saveexec_b64 s[2:3], vcc
\ts_or_saveexec_b64 s[4:5], -1
\ts_endpgm
.Lmixed_end:
\t.size\tmixed, .Lmixed_end-mixed

\t.rodata
\t.p2align\t6
\t.amdhsa_kernel mixed
\t\t.amdhsa_user_sgpr_kernarg_segment_ptr 1
\t\t.amdhsa_user_sgpr_count 2
\t\t.amdhsa_next_free_vgpr 8
\t\t.amdhsa_next_free_sgpr 8
\t\t.amdhsa_wavefront_size32 1
\t.end_amdhsa_kernel

\t.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.kernels:
  - .name: mixed
    .symbol: mixed.kd
    .args: []
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 32
    .sgpr_count: 8
    .vgpr_count: 8
    .max_flat_workgroup_size: 256
...
\t.end_amdgpu_metadata
"""


def test_wave32_code_that_enables_lanes_32_to_63_stops_naming_the_instruction():
    """A 64-bit EXEC operation whose result has no bits above lane 31 is what wave32 code
    means (LLVM reads ``exec`` as 64 bits in wave32 code too); setting bits 32-63 is wave64
    code, which a wave32 wave cannot run."""
    from hsapy import toolchain

    require("llvm-mc-19")
    require("ld.lld-19")
    dev = Device("gfx1201")
    kernel = dev.load(toolchain.assemble(WAVE32_WITH_B64_MASK, "gfx1201"), "mixed")
    with pytest.raises(SimFault) as info:
        dev.dispatch(kernel, [], (64,), (64,))
    message = info.value.message
    assert message.startswith("wave-size mismatch on gfx1201: s_or_saveexec_b64 s[4:5], -1")
    assert "sets EXEC bits 32-63" in message and "launches wave32" in message
