"""Hand-checked cases: SDWA (gfx9) and DPP forms of VOP1/VOP2/VOPC instructions.

SDWA (CDNA3 ISA, "SDWA" microcode format): a source reads the byte or word its select names,
zero- or (sext) sign-extended to 32 bits; the result goes to the byte or word dst_sel names, the
other bits zero (UNUSED_PAD), the result's sign above and zero below (UNUSED_SEXT) or the old
register bits (UNUSED_PRESERVE). v3 starts as 0xDEADBEEF unless an input sets it.
DPP forms of compares, v_cndmask and carry ops permute src0 only; a lane whose source lane is
missing keeps its old result (VOPC: reads as an inactive lane, 0) unless bound_ctrl zero-fills.
"""
from __future__ import annotations

from isa_hand_runner import KEEP_MARK, case

CASES = []


def add(*cases):
    CASES.extend(cases)


# --- SDWA destination selects and dst_unused ------------------------------------------------------
add(case("gfx942", "v_mov_b32_sdwa v3, v0 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_2",
         {"v0.u32": [0x11223344, 0x00FF0000]}, {"v3.u32": [0x0022BEEF, 0x00FFBEEF]},
         "byte 2 of v0, zero-extended, into the high word; the low word keeps 0xBEEF"))
add(case("gfx942", "v_mov_b32_sdwa v3, sext(v0) dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0",
         {"v0.u32": [0x123456F0, 0x7F]}, {"v3.u32": [0xFFFFFFF0, 0x7F]},
         "sext: byte 0 sign-extended to 32 bits"))
add(case("gfx942", "v_mov_b32_sdwa v3, v0 dst_sel:BYTE_1 dst_unused:UNUSED_SEXT src0_sel:DWORD",
         {"v0.u32": [0x80, 0x7F, 0x12345680]}, {"v3.u32": [0xFFFF8000, 0x00007F00, 0xFFFF8000]},
         "UNUSED_SEXT: the result's byte into byte 1, its bit 7 copied above, zeros below"))
add(case("gfx942", "v_mov_b32_sdwa v3, v0 dst_sel:BYTE_1 dst_unused:UNUSED_PAD src0_sel:DWORD",
         {"v0.u32": [0x1234, 0xFFFFFFFF]}, {"v3.u32": [0x3400, 0xFF00]},
         "UNUSED_PAD: only the low byte of the result lands, in byte 1; every other bit is 0"))

# --- SDWA on VOP2: integer, 16-bit, float, modifiers, clamp, omod ---------------------------------
add(case("gfx942", "v_add_u32_sdwa v3, v0, v1 dst_sel:WORD_0 dst_unused:UNUSED_PRESERVE "
                   "src0_sel:BYTE_1 src1_sel:WORD_1",
         {"v0.u32": [0x0000FF00, 0xAB00], "v1.u32": [0x00030000, 0xFFFF0000],
          "v3.u32": [0xAAAA5555, 0x12345678]},
         {"v3.u32": [0xAAAA0102, 0x123400AA]},
         "0xFF + 3 = 0x102 into the low word (high word kept); 0xAB + 0xFFFF = 0x100AA keeps "
         "only its low 16 bits"))
add(case("gfx942", "v_add_u32_sdwa v3, s4, v1 dst_sel:DWORD dst_unused:UNUSED_PAD "
                   "src0_sel:BYTE_1 src1_sel:DWORD",
         {"s4.u32": 0x00000500, "v1.u32": [1, 10]}, {"v3.u32": [6, 15]},
         "an SGPR src0 is selected like a VGPR: byte 1 of s4 = 5"))
add(case("gfx942", "v_sub_u16_sdwa v3, v0, v1 dst_sel:BYTE_0 dst_unused:UNUSED_PRESERVE "
                   "src0_sel:BYTE_1 src1_sel:BYTE_2",
         {"v0.u32": [0x0500, 0x0100], "v1.u32": [0x020000, 0x030000], "v3.u32": [0xCAFEBA00]},
         {"v3.u32": [0xCAFEBA03, 0xCAFEBAFE]},
         "5 - 2 = 3; 1 - 3 wraps to 0xFFFE of which byte 0 (0xFE) lands; bytes 1-3 kept"))
add(case("gfx942", "v_add_u16_sdwa v3, v0, v1 clamp dst_sel:WORD_1 dst_unused:UNUSED_PAD "
                   "src0_sel:WORD_1 src1_sel:WORD_1",
         {"v0.u32": [0xFFF00000, 0x00010000], "v1.u32": [0x00200000, 0x00020000]},
         {"v3.u32": [0xFFFF0000, 0x00030000]},
         "clamp saturates the u16 sum (0xFFF0 + 0x20) at 0xFFFF; the low word is padded with 0"))
add(case("gfx942", "v_add_f16_sdwa v3, v0, v1 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE "
                   "src0_sel:WORD_1 src1_sel:WORD_0",
         {"v0.h2": [(1.0, 2.0), (0.0, -4.0)], "v1.h2": [(0.5, 7.0), (1.5, 0.0)],
          "v3.h2": [(9.0, 0.0)]},
         {"v3.h2": [(9.0, 2.5), (9.0, -2.5)]},
         "f16 from the selected words: v0.hi + v1.lo into the high word, the low word kept"))
add(case("gfx942", "v_mul_f32_sdwa v3, -v0, |v1| dst_sel:DWORD dst_unused:UNUSED_PAD "
                   "src0_sel:DWORD src1_sel:DWORD",
         {"v0.f32": [2.0, -1.5], "v1.f32": [-3.0, 4.0]}, {"v3.f32": [-6.0, 6.0]},
         "neg and abs from the SDWA dword: -(2) * |-3| = -6; -(-1.5) * 4 = 6"))
add(case("gfx942", "v_add_f32_sdwa v3, v0, v1 clamp dst_sel:DWORD dst_unused:UNUSED_PAD "
                   "src0_sel:DWORD src1_sel:DWORD",
         {"v0.f32": [0.75, -2.0, 0.25], "v1.f32": [0.5, 1.0, 0.25]},
         {"v3.f32": [1.0, 0.0, 0.5]}, "the SDWA clamp bit clamps to [0, 1]"))
add(case("gfx942", "v_mul_f32_sdwa v3, v0, v1 mul:2 dst_sel:DWORD dst_unused:UNUSED_PAD "
                   "src0_sel:DWORD src1_sel:DWORD",
         {"mode": 0, "v0.f32": [1.5, -3.0], "v1.f32": [2.0, 0.5]}, {"v3.f32": [6.0, -3.0]},
         "the SDWA omod field doubles the product (MODE 0: denormals flushed, IEEE off)"))
add(case("gfx942", "v_mul_f32_sdwa v3, v0, v1 mul:2 dst_sel:DWORD dst_unused:UNUSED_PAD "
                   "src0_sel:DWORD src1_sel:DWORD",
         {"v0.f32": [1.5, -3.0], "v1.f32": [2.0, 0.5]}, {"v3.f32": [3.0, -1.5]},
         "the SDWA omod field is ignored under IEEE mode with denormals kept"))
add(case("gfx942", "v_lshlrev_b32_sdwa v3, v0, v1 dst_sel:DWORD dst_unused:UNUSED_PAD "
                   "src0_sel:DWORD src1_sel:WORD_1",
         {"v0.u32": [4, 36], "v1.u32": [0xABCD0000, 0x00010000]}, {"v3.u32": [0xABCD0, 0x10]},
         "the shifted value is the high word of v1; the amount (36) is masked to 5 bits"))
add(case("gfx942", "v_add_co_u32_sdwa v3, vcc, v0, v1 dst_sel:DWORD dst_unused:UNUSED_PAD "
                   "src0_sel:WORD_1 src1_sel:WORD_1",
         {"v0.u32": [0xFFFF0000, 0x00010000], "v1.u32": [0x00010000, 0x00020000]},
         {"v3.u32": [0x10000, 3], "vcc": "00"},
         "words zero-extended to 32 bits: 0xFFFF + 1 = 0x10000 carries nothing out of 32 bits"))
add(case("gfx942", "v_cndmask_b32_sdwa v3, v0, v1, vcc dst_sel:DWORD dst_unused:UNUSED_PAD "
                   "src0_sel:BYTE_0 src1_sel:BYTE_1",
         {"v0.u32": [0x1234], "v1.u32": [0x5678], "vcc": "10"}, {"v3.u32": [0x56, 0x34]},
         "VCC picks byte 1 of v1 (lane 0) or byte 0 of v0 (lane 1)"))

# --- SDWA on VOP1 conversions ------------------------------------------------------------------
add(case("gfx942", "v_cvt_f32_f16_sdwa v3, v0 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1",
         {"v0.h2": [(1.0, -2.5), (0.0, 65504.0)]}, {"v3.f32": [-2.5, 65504.0]},
         "the high f16 of v0, widened to f32"))
add(case("gfx942", "v_cvt_f32_ubyte0_sdwa v3, v0 dst_sel:DWORD dst_unused:UNUSED_PAD "
                   "src0_sel:BYTE_2",
         {"v0.u32": [0x00C80001]}, {"v3.f32": [200.0]},
         "the select moves byte 2 to byte 0 before ubyte0 reads it"))

# --- SDWA on VOPC: selected sources, VCC or an SGPR pair ---------------------------------------
add(case("gfx942", "v_cmp_eq_u32_sdwa vcc, v0, v1 src0_sel:BYTE_0 src1_sel:BYTE_3",
         {"v0.u32": [0x99887705, 0x05], "v1.u32": [0x05000000, 0x06000000]}, {"vcc": "10"},
         "byte 0 of v0 against byte 3 of v1"))
add(case("gfx942", "v_cmp_gt_i32_sdwa s[8:9], sext(v0), v1 src0_sel:WORD_0 src1_sel:DWORD",
         {"v0.u32": [0x0000FFFF, 0x00000003], "v1.i32": [-2, 4]},
         {"s8.u32": 0x55555555, "s9.u32": 0x55555555},
         "sext(0xFFFF) = -1 > -2; 3 > 4 is false (the 64 lanes repeat lanes 0-1); the SGPR pair "
         "from the SDWA dword"))

# --- DPP forms of compares, v_cndmask and carry ops ----------------------------------------------
add(case("gfx1201", "v_cmp_lt_f32_dpp vcc_lo, v0, v1 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf",
         {"v0.f32": [1.0, 5.0, 2.0, 9.0], "v1.f32": [4.0, 4.0, 4.0, 4.0]}, {"vcc": "0101"},
         "lane i compares src0 of lane i^1 with its own src1: 5<4, 1<4, 9<4, 2<4"))
add(case("gfx1201", "v_cmp_eq_u32 vcc_lo, v0, v1 dpp8:[1,0,3,2,5,4,7,6]",
         {"v0.u32": [1, 2, 3, 4, 5, 6, 7, 8], "v1.u32": [2, 1, 3, 3, 6, 0, 8, 7]},
         {"vcc": "11011011"}, "DPP8 swaps neighbours before the compare"))
add(case("gfx1201", "v_cmp_class_f32_dpp vcc_lo, v0, v1 row_shr:1 row_mask:0xf bank_mask:0xf "
                    "bound_ctrl:1",
         {"v0.f32": [-1.0, 2.0, -3.0], "v1.u32": [0x60]}, {"vcc": "100"},
         "bound_ctrl: lane 0 has no source lane and reads +0.0, which is in class 0x60 (+-0); "
         "lanes 1, 2 read -1.0, 2.0 (not zero)"))
add(case("gfx1201", "v_cmpx_gt_u32_dpp v0, v1 quad_perm:[3,2,1,0] row_mask:0xf bank_mask:0xf",
         {"v0.u32": [10, 1, 1, 1], "v1.u32": [0, 0, 5, 20]}, {"exec": "1100"},
         "EXEC = v0[3-i] > v1[i]: 1>0, 1>0, 1>5, 10>20"))
add(case("gfx1201", "v_cndmask_b32_dpp v3, v0, v1, vcc_lo quad_perm:[1,1,1,1] row_mask:0xf "
                    "bank_mask:0xf",
         {"v0.u32": [7, 8, 9, 10], "v1.u32": [100, 101, 102, 103], "vcc": "0101"},
         {"v3.u32": [8, 101, 8, 103]}, "src0 is lane 1's v0 in every lane of the quad"))
add(case("gfx1201", "v_add_co_ci_u32_dpp v3, vcc_lo, v0, v1, vcc_lo quad_perm:[0,0,0,0] "
                    "row_mask:0xf bank_mask:0xf",
         {"v0.u32": [0xFFFFFFFF, 0, 0, 0], "v1.u32": [1, 2, 0, 5], "vcc": "0110"},
         {"v3.u32": [0, 2, 0, 4], "vcc": "1111"},
         "src0 from lane 0 (0xFFFFFFFF) plus each lane's v1 and carry in"))
add(case("gfx942", "v_cndmask_b32_dpp v3, v0, v1, vcc quad_perm:[1,1,1,1] row_mask:0xf "
                   "bank_mask:0xf",
         {"v0.u32": [7, 8, 9, 10], "v1.u32": [100, 101, 102, 103], "vcc": "0101"},
         {"v3.u32": [8, 101, 8, 103]}, "src0 is lane 1's v0 in every lane of the quad"))
add(case("gfx942", "v_add_co_u32_dpp v3, vcc, v0, v1 quad_perm:[0,0,0,0] row_mask:0xf "
                   "bank_mask:0xf",
         {"v0.u32": [0xFFFFFFFF, 0, 0, 0], "v1.u32": [1, 2, 0, 5]},
         {"v3.u32": [0, 1, 0xFFFFFFFF, 4], "vcc": "1101"},
         "src0 from lane 0 plus each lane's v1; carry out where it wraps"))
add(case("gfx942", "v_add_co_u32_dpp v3, vcc, v0, v1 row_shr:1 row_mask:0xf bank_mask:0xf",
         {"v0.u32": [5, 6, 7], "v1.u32": [1, 1, 1], "v3.u32": [99]},
         {"v3.u32": [99, 6, 7], "vcc": "000"},
         "row_shr:1 without bound_ctrl: lane 0 has no source and keeps v3 (and writes no carry)"))

# --- gfx12 cross-lane permutes (wave32; wave64 in test_isa_lanes.py) -----------------------------
LANES = list(range(100, 132))           # v0 of lane i is 100 + i
REVERSE = {"s4.u32": 0x89ABCDEF, "s5.u32": 0x01234567}   # lane select 15 - i in each row
add(case("gfx1201", "v_permlane16_b32 v3, v0, s4, s5", {"v0.u32": LANES, **REVERSE},
         {"v3.u32": [100 + 15 - i for i in range(16)] + [116 + 15 - i for i in range(16)]},
         "each row of 16 lanes reversed: lane i reads nibble i of s5:s4 within its own row"))
add(case("gfx1201", "v_permlanex16_b32 v3, v0, s4, s5", {"v0.u32": LANES, **REVERSE},
         {"v3.u32": [116 + 15 - i for i in range(16)] + [100 + 15 - i for i in range(16)]},
         "the X16 form reads the other row of the pair"))
PARTIAL = {"v0.u32": LANES, **REVERSE, "exec": "1" * 15 + "0" + "1" * 16}
add(case("gfx1201", "v_permlane16_b32 v3, v0, s4, s5", PARTIAL,
         {"v3.u32": [KEEP_MARK] + [100 + 15 - i for i in range(1, 15)] + [KEEP_MARK]
          + [116 + 15 - i for i in range(16)]},
         "lane 0 reads lane 15, outside EXEC: without FI or BOUND_CTRL it keeps its old value"))
add(case("gfx1201", "v_permlane16_b32 v3, v0, s4, s5 op_sel:[0,1]", PARTIAL,
         {"v3.u32": [0] + [100 + 15 - i for i in range(1, 15)] + [KEEP_MARK]},
         "BOUND_CTRL (op_sel[1]): the inactive source lane reads 0"))
add(case("gfx1201", "v_permlane16_b32 v3, v0, s4, s5 op_sel:[1,0]", PARTIAL,
         {"v3.u32": [115] + [100 + 15 - i for i in range(1, 15)] + [KEEP_MARK]},
         "FI (op_sel[0]): the inactive source lane's value is read"))
add(case("gfx1201", "v_permlane16_b32 v3, v0, 0x76543210, s5", {"v0.u32": LANES, "s5.u32": 0},
         {"v3.u32": list(range(100, 108)) + [100] * 8 + list(range(116, 124)) + [116] * 8},
         "a literal holds the selects of lanes 0-7 (identity); s5 = 0 sends lanes 8-15 to 0"))
add(case("gfx1201", "v_permlane64_b32 v3, v0", {"v0.u32": LANES}, {"v3.u32": [KEEP_MARK] * 32},
         "wave32: V_PERMLANE64_B32 is a no-op"))
add(case("gfx1201", "v_permlane16_var_b32 v3, v0, v1",
         {"v0.u32": LANES, "v1.u32": [0xF0 | (3 * i) & 15 for i in range(32)]},
         {"v3.u32": [100 + (3 * i) % 16 for i in range(16)]
          + [116 + (3 * i) % 16 for i in range(16, 32)]},
         "each lane's select is bits 3:0 of its own v1 (the 0xF0 above is ignored)"))
add(case("gfx1201", "v_permlanex16_var_b32 v3, v0, v1 op_sel:[0,1]",
         {"v0.u32": LANES, "v1.u32": [1] * 32, "exec": "1" * 17 + "0" + "1" * 14},
         {"v3.u32": [0] * 16 + [101, KEEP_MARK] + [101] * 14},
         "X16_VAR: every lane reads lane 1 of the other row; that is lane 17 for row 0, outside "
         "EXEC, so row 0 reads 0 (BOUND_CTRL); lane 17 itself keeps its value"))

# --- gfx12 VOP3 with DPP (the e64_dpp forms): src0 permuted, VOP3 modifiers kept ---------------
add(case("gfx1201", "v_add_f32_e64_dpp v3, -v0, v1 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf",
         {"v0.f32": [1.0, 2.0, 3.0, 4.0], "v1.f32": [10.0, 10.0, 10.0, 10.0]},
         {"v3.f32": [8.0, 9.0, 6.0, 7.0]}, "lane i adds -v0 of lane i^1 to its own v1"))
add(case("gfx1201", "v_fma_f32_e64_dpp v3, v0, v1, v2 row_shr:1 row_mask:0xf bank_mask:0xf "
                    "bound_ctrl:1",
         {"v0.f32": [2.0, 3.0, 4.0], "v1.f32": [10.0], "v2.f32": [1.0]},
         {"v3.f32": [1.0, 21.0, 31.0]}, "three sources; lane 0 has no source lane and reads 0"))
add(case("gfx1201", "v_cmp_gt_i32_e64_dpp s4, v0, v1 quad_perm:[3,2,1,0] row_mask:0xf "
                    "bank_mask:0xf",
         {"v0.i32": [5, 1, 1, -5], "v1.i32": [0, 0, 0, 0]}, {"s4.u32": 0xEEEEEEEE},
         "the compare result to an SGPR: lane 0 reads lane 3 (-5 > 0 is false), lanes 1-3 "
         "read 1, 1, 5"))
