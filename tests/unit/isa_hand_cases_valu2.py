"""Hand-checked cases: the rest of the vector ALU -- 16-bit integer and mad forms, media ops
(SAD, LERP), cube-map helpers, saturating packs, 8-bit float conversions, V_TRIG_PREOP_F64,
VGPR swaps and the gfx12 M0-relative moves (CDNA3 / RDNA4 ISA pseudocode of each opcode).

Sources v0, v1, v2 (64-bit: v[0:1], v[2:3]); result v3 (64-bit: v[6:7]); M0 is s124 on gfx9,
s125 on gfx12.
"""
from __future__ import annotations

import math

from isa_hand_runner import INF, NAN, both, case

CASES = []
M32 = 0xFFFFFFFF


def add(*cases):
    for c in cases:
        CASES.extend(c if isinstance(c, list) else [c])


def op(line9, line12, inputs, expect, why):
    add(both(line9, line12, inputs, expect, why) if line9 else case("gfx1201", line12, inputs,
                                                                   expect, why))


# --- bit counts, small conversions ---------------------------------------------------------------
op("v_ffbh_i32 v3, v0", "v_cls_i32 v3, v0", {"v0.u32": [0xFFFF0000, 0x40000000, 0, M32]},
   {"v3.u32": [16, 1, M32, M32]}, "bits below the sign that equal it; -1 when all bits equal")
op("v_cvt_off_f32_i4 v3, v0", None, {"v0.u32": [8, 7, 0xF1, 0x10]},
   {"v3.f32": [-0.5, 0.4375, 0.0625, 0.0]}, "signed 4-bit integer / 16 (upper bits ignored)")
op("v_sat_pk_u8_i16 v3, v0", None, {"v0.u32": [0x8000_0100, 0x007F_FFFF]},
   {"v3.u16": [0x00FF, 0x7F00]}, "each i16 clamped to [0, 255], packed in the low 16 bits")
op(None, "v_cvt_i32_i16 v3, v0", {"v0.u32": [0xABCD_8000, 0x7FFF]}, {"v3.i32": [-32768, 32767]},
   "sign-extends the low 16 bits")
op(None, "v_cvt_u32_u16 v3, v0", {"v0.u32": [0xABCD_8000]}, {"v3.u32": [0x8000]},
   "zero-extends the low 16 bits")
op(None, "v_not_b16 v3, v0", {"v0.u16": [0x00FF]}, {"v3.u16": [0xFF00]}, "16-bit not")
op(None, "v_and_b16 v3, v0, v1", {"v0.u16": [0x0FF0], "v1.u16": [0x00FF]}, {"v3.u16": [0x00F0]},
   "16-bit and")
op(None, "v_or_b16 v3, v0, v1", {"v0.u16": [0x0FF0], "v1.u16": [0x00FF]}, {"v3.u16": [0x0FFF]},
   "16-bit or")
op(None, "v_xor_b16 v3, v0, v1", {"v0.u16": [0x0FF0], "v1.u16": [0x00FF]}, {"v3.u16": [0x0F0F]},
   "16-bit xor")
op(None, "v_cvt_nearest_i32_f32 v3, v0", {"v0.f32": [2.5, -2.5, 1e10, NAN]},
   {"v3.i32": [3, -2, 2147483647, 0]}, "floor(x + 0.5), saturated; NaN -> 0")
op(None, "v_cvt_floor_i32_f32 v3, v0", {"v0.f32": [2.5, -2.5, -1e10]},
   {"v3.i32": [2, -3, -2147483648]}, "floor, saturated")

# --- 16-bit integer arithmetic -------------------------------------------------------------------
op("v_add_i16 v3, v0, v1", "v_add_nc_i16 v3, v0, v1", {"v0.i16": [0x7FFF, -3], "v1.i16": [1, 1]},
   {"v3.i16": [-32768, -2]}, "wraps")
op("v_add_i16 v3, v0, v1 clamp", "v_add_nc_i16 v3, v0, v1 clamp",
   {"v0.i16": [0x7FFF, -32768], "v1.i16": [1, -1]}, {"v3.i16": [32767, -32768]},
   "clamp saturates to the i16 range")
op("v_sub_i16 v3, v0, v1", "v_sub_nc_i16 v3, v0, v1", {"v0.i16": [-32768], "v1.i16": [1]},
   {"v3.i16": [32767]}, "wraps")
op("v_subrev_u16 v3, v0, v1", "v_sub_nc_u16 v3, v1, v0", {"v0.u16": [5], "v1.u16": [3]},
   {"v3.u16": [0xFFFE]}, "3 - 5 wraps")
op("v_mad_u16 v3, v0, v1, v2", None, {"v0.u16": [300], "v1.u16": [300], "v2.u16": [1]},
   {"v3.u16": [(90001) & 0xFFFF]}, "300*300 + 1 wraps to 16 bits")
op("v_mad_u16 v3, v0, v1, v2 clamp", None, {"v0.u16": [300], "v1.u16": [300], "v2.u16": [1]},
   {"v3.u16": [0xFFFF]}, "clamp saturates the exact 90001")
op("v_mad_i16 v3, v0, v1, v2", None, {"v0.i16": [-300], "v1.i16": [100], "v2.i16": [7]},
   {"v3.i16": [((-30000 + 7 + 32768) % 65536) - 32768]}, "-300*100 + 7 fits in i16")
op("v_mad_i32_i16 v3, v0, v1, v2", None, {"v0.u32": [0xFFFF_8000], "v1.u32": [0x0001_7FFF],
                                         "v2.i32": [5]},
   {"v3.i32": [-32768 * 32767 + 5]}, "the low 16 bits of S0 and S1, signed, times; plus S2")
op("v_mad_u32_u16 v3, v0, v1, v2 op_sel:[1,1,0,0]", "v_mad_u32_u16 v3, v0, v1, v2 op_sel:[1,1,0,0]",
   {"v0.u32": [0xFFFF_0002], "v1.u32": [0x0003_FFFF], "v2.u32": [M32 - 2]}, {"v3.u32": [0x0002_FFFA]},
   "op_sel reads the high halves: 0xFFFF * 3 + (2^32 - 3) wraps to 32 bits")
op("v_mad_u32_u16 v3, v0, v1, v2 op_sel:[0,1,0,0] clamp",
   "v_mad_u32_u16 v3, v0, v1, v2 op_sel:[0,1,0,0] clamp",
   {"v0.u32": [0x0001_FFFF], "v1.u32": [0xFFFF_0001], "v2.u32": [0x0002_0000]}, {"v3.u32": [M32]},
   "the low half of S0 times the high half of S1 (0xFFFE0001), plus S2, saturated by clamp")
op("v_mad_i32_i16 v3, v0, v1, v2 op_sel:[1,0,0,0]", "v_mad_i32_i16 v3, v0, v1, v2 op_sel:[1,0,0,0]",
   {"v0.u32": [0x8000_0001], "v1.u32": [0x0001_0003], "v2.i32": [5]}, {"v3.i32": [-32768 * 3 + 5]},
   "op_sel[0] reads S0's high half, signed")
add(case("gfx942", "v_mad_legacy_u16 v3, v0, v1, v2", {"v0.u16": [3], "v1.u16": [4],
                                                       "v2.u16": [5], "v3.u32": [M32]},
         {"v3.u32": [17]}, "legacy: the high half of the destination is zeroed"))
add(case("gfx942", "v_mad_legacy_i16 v3, v0, v1, v2",
         {"v0.i16": [-3], "v1.i16": [4], "v2.i16": [5], "v3.u32": [0x1234_5678]},
         {"v3.u32": [0x0000_FFF9]}, "-3*4 + 5 = -7 in the low half, the high half zeroed"))

# --- 16-bit float multiply-add ----------------------------------------------------------------
add(case("gfx942", "v_mad_f16 v3, v0, v1, v2",
         {"v0.f16": [1.0 + 2 ** -10], "v1.f16": [1.0 + 2 ** -10], "v2.f16": [-1.0]},
         {"v3.f16": [2 ** -9]}, "not fused: (1+2^-10)^2 rounds to 1+2^-9 before the add"))
add(case("gfx942", "v_fma_legacy_f16 v3, v0, v1, v2",
         {"v0.f16": [1.0 + 2 ** -10], "v1.f16": [1.0 + 2 ** -10], "v2.f16": [-1.0]},
         {"v3.f16": [2 ** -9 + 2 ** -20]}, "fused: the product is not rounded"))
add(case("gfx942", "v_mad_legacy_f16 v3, v0, v1, v2", {"v0.f16": [2.0], "v1.f16": [3.0],
                                                       "v2.f16": [0.5], "v3.u32": [M32]},
         {"v3.u32": [0x4680]}, "6.5, the high half zeroed"))
add(case("gfx942", "v_mac_f16 v3, v0, v1", {"v0.f16": [2.0], "v1.f16": [3.0], "v3.f16": [0.5]},
         {"v3.f16": [6.5]}, "accumulates into the destination"))
add(case("gfx942", "v_madmk_f16 v3, v0, 0x4000, v1", {"v0.f16": [3.0], "v1.f16": [0.5]},
         {"v3.f16": [6.5]}, "S0 * K + S1"))
add(case("gfx942", "v_madak_f16 v3, v0, v1, 0x3800", {"v0.f16": [2.0], "v1.f16": [3.0]},
         {"v3.f16": [6.5]}, "S0 * S1 + K"))
add(case("gfx942", "v_div_fixup_legacy_f16 v3, v0, v1, v2",
         {"v0.f16": [2.0, 9.0, 9.0, 9.0], "v1.f16": [-4.0, 0.0, INF, 0.0],
          "v2.f16": [8.0, 3.0, 3.0, 0.0]},
         {"v3.u32": [0xC000, 0x7C00, 0x0000, 0xFE00]},
         "signs of S1/S2 on |S0|; x/0 = inf; x/inf = 0; 0/0 = the NaN 0xFE00"))
for line, expect in (("v_pk_fmac_f16 v3, v0, v1", [(6.5, -1.0)]),):
    op(line, None, {"v0.h2": [(2.0, 1.0)], "v1.h2": [(3.0, -4.0)], "v3.h2": [(0.5, 3.0)]},
       {"v3.h2": expect}, "each half: fma(S0, S1, D)")
op("v_pk_mad_i16 v3, v0, v1, v2", None, {"v0.u32": [0xFFFF_0003], "v1.u32": [0x0002_0004],
                                        "v2.u32": [0x0001_0001]},
   {"v3.u32": [0xFFFF_000D]}, "per half: 3*4+1 = 13; -1*2+1 = -1")
op("v_pk_mad_u16 v3, v0, v1, v2", None, {"v0.u32": [0x0100_0003], "v1.u32": [0x0100_0004],
                                        "v2.u32": [0x0005_0001]},
   {"v3.u32": [0x0005_000D]}, "per half: 3*4+1; 256*256+5 wraps to 5")
op("v_pk_add_i16 v3, v0, v1", None, {"v0.u32": [0x7FFF_0001], "v1.u32": [0x0001_FFFF]},
   {"v3.u32": [0x8000_0000]}, "per half, wrapping")
op("v_pk_add_i16 v3, v0, v1 clamp", None, {"v0.u32": [0x7FFF_8000], "v1.u32": [0x0001_FFFF]},
   {"v3.u32": [0x7FFF_8000]}, "clamp saturates each half")
op("v_pk_sub_i16 v3, v0, v1", None, {"v0.u32": [0x0000_0005], "v1.u32": [0x0001_0007]},
   {"v3.u32": [0xFFFF_FFFE]}, "per half: 5-7, 0-1")

# --- media: LERP and sums of absolute differences ------------------------------------------------
op("v_lerp_u8 v3, v0, v1, v2", None, {"v0.u32": [0xFF_10_03_00], "v1.u32": [0xFF_20_04_01],
                                     "v2.u32": [0x01_00_01_00]},
   {"v3.u32": [0xFF_18_04_00]}, "per byte (a + b + round bit) >> 1")
op("v_sad_u8 v3, v0, v1, v2", None, {"v0.u32": [0x01_FF_10_05], "v1.u32": [0x03_00_20_05],
                                    "v2.u32": [100]},
   {"v3.u32": [100 + 2 + 255 + 16 + 0]}, "S2 + sum of |byte differences|")
op("v_sad_hi_u8 v3, v0, v1, v2", None, {"v0.u32": [0x01_FF_10_05], "v1.u32": [0x03_00_20_05],
                                       "v2.u32": [1]},
   {"v3.u32": [(273 << 16) + 1]}, "the SAD shifted into the high half, plus S2")
op("v_sad_u16 v3, v0, v1, v2", None, {"v0.u32": [0x0001_FFFF], "v1.u32": [0x0003_0000],
                                     "v2.u32": [5]},
   {"v3.u32": [5 + 0xFFFF + 2]}, "S2 + sum of |16-bit differences|")
op("v_msad_u8 v3, v0, v1, v2", None, {"v0.u32": [0x01_FF_10_05], "v1.u32": [0x03_00_20_07],
                                     "v2.u32": [0]},
   {"v3.u32": [2 + 16 + 2]}, "bytes where S1 is 0 are skipped")
op("v_qsad_pk_u16_u8 v[6:7], v[0:1], v2, v[4:5]", None,
   {"v0.u64": [0x0000_0004_0302_0100], "v2.u32": [0x0302_0100], "v4.u64": [0x0004_0003_0002_0001]},
   {"v6.u64": [0x000F_000C_0006_0001]},
   "S1 against the dwords of S0 at byte offsets 0..3: SADs 0, 4, 9, 11, each plus its 16-bit "
   "accumulator 1, 2, 3, 4")
op("v_mqsad_pk_u16_u8 v[6:7], v[0:1], v2, v[4:5]", None,
   {"v0.u64": [0x0000_0004_0302_0100], "v2.u32": [0x0302_0100], "v4.u64": [0]},
   {"v6.u64": [0x0008_0007_0003_0000]},
   "masked: S1's zero byte 0 is skipped in every window: SADs 0, 3, 7, 8")
op("v_mqsad_u32_u8 v[8:11], v[0:1], v2, v[4:7]", None,
   {"v0.u64": [0x0000_0004_0302_0100], "v2.u32": [0x0302_0100], "v4.u32": [10], "v5.u32": [20],
    "v6.u32": [30], "v7.u32": [40]},
   {"v8.u32": [10], "v9.u32": [23], "v10.u32": [37], "v11.u32": [48]},
   "four masked SADs into the four dwords of the 128-bit accumulator")

# --- cube map helpers ---------------------------------------------------------------------------
for name, expect in (("v_cubeid_f32", [4.0, 3.0, 1.0]), ("v_cubesc_f32", [1.0, 1.0, 3.0]),
                     ("v_cubetc_f32", [-2.0, -3.0, -2.0]), ("v_cubema_f32", [10.0, -8.0, -12.0])):
    op(f"{name} v3, v0, v1, v2", None, {"v0.f32": [1.0, 1.0, -6.0], "v1.f32": [2.0, -4.0, 2.0],
                                       "v2.f32": [5.0, 3.0, 3.0]},
       {"v3.f32": expect}, "major axis +z, -y, -x: face, S, T, 2 * major axis")
op(None, "v_mullit_f32 v3, v0, v1, v2", {"v0.f32": [2.0, 2.0, 2.0], "v1.f32": [3.0, NAN, 3.0],
                                        "v2.f32": [1.0, 1.0, 0.0]},
   {"v3.f32": [6.0, -3.4028234663852886e38, -3.4028234663852886e38]},
   "S0 * S1 unless S1 is NaN/-inf/-max or S2 <= 0: then -MAX_FLOAT")
op(None, "v_fma_dx9_zero_f32 v3, v0, v1, v2", {"v0.f32": [0.0, 2.0], "v1.f32": [INF, 3.0],
                                              "v2.f32": [1.0, 1.0]},
   {"v3.f32": [1.0, 7.0]}, "DX9: 0 * inf = 0, so S2; otherwise fma")

# --- saturating packs -----------------------------------------------------------------------------
op("v_cvt_pk_u16_u32 v3, v0, v1", None, {"v0.u32": [0x12345, 7], "v1.u32": [3, M32]},
   {"v3.u32": [0x0003_FFFF, 0xFFFF_0007]}, "each u32 saturated to u16, S0 low, S1 high")
op("v_cvt_pk_i16_i32 v3, v0, v1", None, {"v0.i32": [-70000, 5], "v1.i32": [70000, -5]},
   {"v3.u32": [0x7FFF_8000, 0xFFFB_0005]}, "each i32 saturated to i16")
op(None, "v_cvt_pk_i16_f32 v3, v0, v1", {"v0.f32": [-1e9, 2.9], "v1.f32": [NAN, -2.9]},
   {"v3.u32": [0x0000_8000, 0xFFFE_0002]}, "truncate, saturate to i16, NaN -> 0")
op(None, "v_cvt_pk_u16_f32 v3, v0, v1", {"v0.f32": [-5.0, 1e9], "v1.f32": [65535.9, 3.5]},
   {"v3.u32": [0xFFFF_0000, 0x0003_FFFF]}, "truncate, saturate to u16")

# --- 8-bit floats to f32 (gfx942: FNUZ formats; gfx12: OCP E4M3/E5M2) -----------------------------
add(case("gfx942", "v_cvt_f32_fp8 v3, v0", {"v0.u32": [0x40, 0x80, 0xC8, 0x01]},
         {"v3.f32": [1.0, NAN, -2.0, 2.0 ** -10]},
         "E4M3FNUZ, bias 8: 0x40 = 1, 0x80 is the NaN, denormal 0x01 = 2^-10"))
add(case("gfx942", "v_cvt_f32_bf8 v3, v0", {"v0.u32": [0x40, 0x80, 0x7F]},
         {"v3.f32": [1.0, NAN, 57344.0]}, "E5M2FNUZ, bias 16: no infinity, 0x7F is the max"))
add(case("gfx942", "v_cvt_f32_fp8_sdwa v3, v0 src0_sel:BYTE_2",
         {"v0.u32": [0x00_48_00_40]}, {"v3.f32": [2.0]}, "the SDWA select picks byte 2"))
add(case("gfx942", "v_cvt_pk_f32_fp8 v[6:7], v0", {"v0.u32": [0x4048]},
         {"v6.f32": [2.0], "v7.f32": [1.0]}, "two bytes of the low word into a pair"))
add(case("gfx942", "v_cvt_pk_f32_bf8 v[6:7], v0", {"v0.u32": [0x4044]},
         {"v6.f32": [2.0], "v7.f32": [1.0]}, "E5M2FNUZ: 0x44 = 2, 0x40 = 1"))
add(case("gfx1201", "v_cvt_f32_fp8 v3, v0", {"v0.u32": [0x38, 0x7F, 0x7E, 0xB8]},
         {"v3.f32": [1.0, NAN, 448.0, -1.0]}, "OCP E4M3, bias 7: 0x7F NaN, 0x7E = 448"))
add(case("gfx1201", "v_cvt_f32_bf8 v3, v0", {"v0.u32": [0x3C, 0x7C, 0xFC, 0x7D]},
         {"v3.f32": [1.0, INF, -INF, NAN]}, "OCP E5M2, bias 15: infinities and NaNs"))
add(case("gfx1201", "v_cvt_pk_f32_fp8 v[6:7], v0", {"v0.u32": [0x4038_0000]},
         {"v6.f32": [0.0], "v7.f32": [0.0]}, "the low word: two zeros"))
add(case("gfx1201", "v_cvt_pk_f32_fp8_e64 v[6:7], v0 op_sel:[1,0]", {"v0.u32": [0x4038_0000]},
         {"v6.f32": [1.0], "v7.f32": [2.0]}, "op_sel[0] picks the high word"))
add(case("gfx1201", "v_cvt_pk_f32_bf8 v[6:7], v0", {"v0.u32": [0x403C]},
         {"v6.f32": [1.0], "v7.f32": [2.0]}, "E5M2: 0x3C = 1, 0x40 = 2"))

# --- V_TRIG_PREOP_F64: 53-bit segments of 2/pi ------------------------------------------------------
# the first 128 bits of the fraction of 2/pi (its well-known hex expansion)
TWO_OVER_PI_128 = 0xA2F9836E4E441529FC2757D1F534DDC0


def segment(first_bit: int) -> float:
    """The 53 bits of 2/pi starting ``first_bit`` bits into its fraction, at their place value."""
    bits = (TWO_OVER_PI_128 >> (128 - 53 - first_bit)) & ((1 << 53) - 1)
    return math.ldexp(bits, -53 - first_bit)


op("v_trig_preop_f64 v[6:7], v[0:1], v2", None, {"v0.f64": [1.0, 1.0], "v2.u32": [0, 1]},
   {"v6.f64": [segment(0), segment(53)]},
   "segment 0 is 2/pi truncated (round toward zero); segment 1 the next 53 bits")
op("v_trig_preop_f64 v[6:7], v[0:1], v2", None, {"v0.f64": [2.0 ** 60], "v2.u32": [0]},
   {"v6.f64": [segment(6)]},
   "an exponent field of 1083, past 1077, moves the segment 6 bits further into 2/pi")

# --- swaps and M0-relative moves ---------------------------------------------------------------
op("v_swap_b32 v3, v0", None, {"v0.u32": [1, 2], "v3.u32": [7, 8], "exec": "10"},
   {"v3.u32": [1, 8], "v0.u32": [7, 2]},
   "both registers written, in EXEC lanes only (lane 1 keeps both old values)")
for line, inputs, expect, why in (
        ("v_movrels_b32 v3, v0", {"s125.u32": [2], "v2.u32": [42]}, {"v3.u32": [42]},
         "v3 = v[0 + M0]"),
        ("v_movreld_b32 v3, v0", {"s125.u32": [2], "v0.u32": [42]}, {"v5.u32": [42]},
         "v[3 + M0] = v0"),
        ("v_movrelsd_b32 v3, v0", {"s125.u32": [1], "v1.u32": [42]}, {"v4.u32": [42]},
         "v[3 + M0] = v[0 + M0]"),
        ("v_movrelsd_2_b32 v3, v0", {"s125.u32": [(2 << 16) | 1], "v1.u32": [42]},
         {"v5.u32": [42]}, "v[3 + M0[25:16]] = v[0 + M0[9:0]]"),
        ("v_swaprel_b32 v3, v0", {"s125.u32": [(1 << 16) | 2], "v2.u32": [42], "v4.u32": [7]},
         {"v4.u32": [42], "v2.u32": [7]}, "swaps v[0 + M0[9:0]] and v[3 + M0[25:16]]")):
    add(case("gfx1201", line, {k: (v[0] if k.startswith("s") else v) for k, v in inputs.items()},
             expect, why))
add(case("gfx1201", "v_movrels_b32 v3, v0", {"s125.u32": 1000},
         {"raises": (Exception, "outside the register file")},
         "an M0 past the registers the kernel uses is refused"))

# --- normalized and 8-bit conversions: clamp, scale, round to nearest even; NaN -> 0 --------------
for name9, name12, ty in (("v_cvt_pknorm_i16_f32", "v_cvt_pk_norm_i16_f32", "f32"),
                          ("v_cvt_pknorm_i16_f16", "v_cvt_pk_norm_i16_f16", "f16")):
    op(f"{name9} v3, v0, v1", f"{name12} v3, v0, v1",
       {f"v0.{ty}": [1.5, -0.5, NAN], f"v1.{ty}": [-2.0, 0.25, 0.0]},
       {"v3.u32": [0x8001_7FFF, 0x2000_C000, 0x0000_0000]},
       "snorm16: clamp to [-1, 1] times 32767 (-16383.5 and 8191.75 round to even/nearest)")
for name9, name12, ty in (("v_cvt_pknorm_u16_f32", "v_cvt_pk_norm_u16_f32", "f32"),
                          ("v_cvt_pknorm_u16_f16", "v_cvt_pk_norm_u16_f16", "f16")):
    op(f"{name9} v3, v0, v1", f"{name12} v3, v0, v1",
       {f"v0.{ty}": [1.5, 0.5, -0.5], f"v1.{ty}": [-2.0, 0.25, NAN]},
       {"v3.u32": [0x0000_FFFF, 0x4000_8000, 0x0000_0000]},
       "unorm16: clamp to [0, 1] times 65535 (32767.5 rounds to even 32768)")
op("v_cvt_norm_i16_f16 v3, v0", None, {"v0.f16": [-1.0, 0.5, NAN]},
   {"v3.i16": [-32767, 16384, 0]}, "snorm16 of one f16 (16383.5 rounds to even)")
op("v_cvt_norm_u16_f16 v3, v0", None, {"v0.f16": [2.0, 0.5, -1.0]},
   {"v3.u16": [65535, 32768, 0]}, "unorm16 of one f16")
op("v_cvt_pk_u8_f32 v3, v0, v1, v2", None,
   {"v0.f32": [2.5, 300.0, -1.0, NAN], "v1.u32": [1, 2, 0, 3], "v2.u32": [0xAABBCCDD]},
   {"v3.u32": [0xAABB02DD, 0xAAFFCCDD, 0xAABBCC00, 0x00BBCCDD]},
   "f32 to u8 (2.5 -> 2, 300 -> 255, -1 -> 0, NaN -> 0) into byte S1[1:0] of S2")
add(case("gfx942", "v_cvt_pkaccum_u8_f32 v3, v0, v1",
         {"v0.f32": [3.5], "v1.u32": [2], "v3.u32": [0x11223344]}, {"v3.u32": [0x11043344]},
         "accumulates into the destination: byte 2 becomes 4 (3.5 rounds to even)"))
add(case("gfx1201", "v_cvt_f32_fp8_e64 v3, v0 byte_sel:1", {"v0.u32": [0x38_40_B8_00]},
         {"v3.f32": [-1.0]}, "byte_sel picks byte 1 (OPSEL bits reversed in the encoding)"))
add(case("gfx1201", "v_cvt_f32_bf8_e64 v3, v0 byte_sel:2", {"v0.u32": [0x38_40_B8_00]},
         {"v3.f32": [2.0]}, "byte 2 as E5M2"))
