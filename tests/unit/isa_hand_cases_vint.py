"""Hand-checked cases: vector integer, bit and lane instructions.

Sources v0, v1, v2 (64-bit: v[0:1], v[2:3], v[4:5]); result v3 (64-bit: v[6:7]). Values are
chosen so that wrap-around, signed vs unsigned reading and shift-amount masking show.
"""
from __future__ import annotations

from isa_hand_runner import KEEP_MARK, both, case

CASES = []
M32 = 0xFFFFFFFF


def add(*cases):
    for c in cases:
        CASES.extend(c if isinstance(c, list) else [c])


def op(name9, name12, srcs, expect, why, ty="u32", out="u32"):
    """``name v3, v0[, v1[, v2]]`` with 32-bit sources."""
    regs = ", ".join(f"v{i}" for i in range(len(srcs)))
    inputs = {f"v{i}.{ty}": values for i, values in enumerate(srcs)}
    add(both(f"{name9} v3, {regs}", f"{name12} v3, {regs}" if name12 else None, inputs,
             {f"v3.{out}": expect}, why))


# --- add / sub ------------------------------------------------------------------------------------
op("v_add_u32", "v_add_nc_u32", [[M32, 5], [1, 7]], [0, 12], "wraps modulo 2^32")
op("v_sub_u32", "v_sub_nc_u32", [[0, 5], [1, 7]], [M32, 0xFFFFFFFE], "wraps below zero")
op("v_subrev_u32", "v_subrev_nc_u32", [[1, 7], [0, 5]], [M32, 0xFFFFFFFE], "v1 - v0, wraps")
op("v_add_i32", "v_add_nc_i32", [[0x7FFFFFFF, -3], [1, 1]], [0x80000000, 0xFFFFFFFE],
   "no clamp: signed overflow wraps")
op("v_sub_i32", "v_sub_nc_i32", [[0x80000000, 5], [1, 7]], [0x7FFFFFFF, 0xFFFFFFFE],
   "no clamp: wraps")
op("v_add_u16", "v_add_nc_u16", [[0xFFFF, 3], [2, 4]], [1, 7], "16-bit wrap", ty="u16", out="u16")
add(case("gfx942", "v_sub_u16 v3, v0, v1", {"v0.u16": [1, 9], "v1.u16": [2, 4]},
         {"v3.u16": [0xFFFF, 5]}, "16-bit wrap"))
op("v_add3_u32", None, [[M32], [1], [5]], [5], "three-way sum wraps")
add(both("v_add_co_u32 v3, vcc, v0, v1", "v_add_co_u32 v3, vcc_lo, v0, v1",
         {"v0.u32": [M32, 5, 0x80000000, 0], "v1.u32": [1, 7, 0x80000000, 0]},
         {"v3.u32": [0, 12, 0, 0], "vcc": "1010"}, "carry out per lane into VCC"))
add(both("v_sub_co_u32 v3, vcc, v0, v1", "v_sub_co_u32 v3, vcc_lo, v0, v1",
         {"v0.u32": [0, 7], "v1.u32": [1, 5]}, {"v3.u32": [M32, 2], "vcc": "10"},
         "borrow out when v1 > v0 (unsigned)"))
add(both("v_subrev_co_u32 v3, vcc, v0, v1", "v_subrev_co_u32 v3, vcc_lo, v0, v1",
         {"v0.u32": [1, 5], "v1.u32": [0, 7]}, {"v3.u32": [M32, 2], "vcc": "10"},
         "v1 - v0 with borrow"))
add(both("v_addc_co_u32 v3, vcc, v0, v1, vcc", "v_add_co_ci_u32 v3, vcc_lo, v0, v1, vcc_lo",
         {"v0.u32": [M32, M32, 5, 5], "v1.u32": [0, 1, 7, 7], "vcc": "1101"},
         {"v3.u32": [0, 1, 12, 13], "vcc": "1100"}, "carry in from VCC, carry out to VCC"))
add(both("v_subb_co_u32 v3, vcc, v0, v1, vcc", "v_sub_co_ci_u32 v3, vcc_lo, v0, v1, vcc_lo",
         {"v0.u32": [0, 5, 5], "v1.u32": [0, 5, 2], "vcc": "110"},
         {"v3.u32": [M32, M32, 3], "vcc": "110"}, "v0 - v1 - borrow in"))
add(both("v_subbrev_co_u32 v3, vcc, v0, v1, vcc",
         "v_subrev_co_ci_u32 v3, vcc_lo, v0, v1, vcc_lo",
         {"v0.u32": [0, 2], "v1.u32": [0, 5], "vcc": "11"},
         {"v3.u32": [M32, 2], "vcc": "10"}, "v1 - v0 - borrow in"))

# --- multiply -------------------------------------------------------------------------------------
op("v_mul_lo_u32", None, [[0x10000, 3], [0x10001, M32]], [0x10000, 0xFFFFFFFD],
   "low 32 bits of the product")
op("v_mul_hi_u32", None, [[0x80000000, 3], [4, M32]], [2, 2], "high 32 bits, unsigned")
op("v_mul_hi_i32", None, [[0x80000000, M32], [4, M32]], [0xFFFFFFFE, 0],
   "high 32 bits, signed: -2^31*4 = -2^33; -1*-1 = 1")
op("v_mul_u32_u24", None, [[0x1000003], [2]], [6], "only the low 24 bits are read")
op("v_mul_hi_u32_u24", None, [[0xFFFFFF], [0xFFFFFF]], [0xFFFF], "(2^24-1)^2 = 0xFFFFFE000001")
op("v_mul_i32_i24", None, [[0x800000, 0xFFFFFF], [2, 5]], [0xFF000000, 0xFFFFFFFB],
   "24-bit signed: 0x800000 = -2^23; 0xFFFFFF = -1")
op("v_mul_hi_i32_i24", None, [[0xFFFFFF, 0x7FFFFF], [5, 0x7FFFFF]], [M32, 0x3FFF],
   "-1*5 = -5 (high word all ones); (2^23-1)^2 = 0x3FFFFF000001")
op("v_mad_u32_u24", None, [[0x1000003], [2], [1]], [7], "low 24 bits times, plus v2")
op("v_mad_i32_i24", None, [[0xFFFFFF], [5], [2]], [0xFFFFFFFD], "-1*5 + 2")
op("v_mad_u32_u16", None, [[0x10002], [0x30004], [1]], [9], "low 16 bits: 2*4 + 1")
op("v_mul_lo_u16", None, [[0x100, 0xFFFF], [0x100, 2]], [0, 0xFFFE], "16-bit product wraps",
   ty="u16", out="u16")
add(both("v_mad_u64_u32 v[6:7], s[8:9], v0, v1, v[4:5]",
         "v_mad_co_u64_u32 v[6:7], s8, v0, v1, v[4:5]",
         {"v0.u32": [M32], "v1.u32": [M32], "v4.u64": [1]},
         {"v6.u64": [0xFFFFFFFE00000002]}, "(2^32-1)^2 + 1, unsigned 64-bit"))
add(both("v_mad_i64_i32 v[6:7], s[8:9], v0, v1, v[4:5]",
         "v_mad_co_i64_i32 v[6:7], s8, v0, v1, v[4:5]",
         {"v0.i32": [-1], "v1.i32": [5], "v4.i64": [2]}, {"v6.i64": [-3]}, "signed: -1*5 + 2"))

# --- shifts ---------------------------------------------------------------------------------------
op("v_lshlrev_b32", None, [[4, 33], [0xF0000001, 1]], [0x10, 2], "shift is v0 & 31")
op("v_lshrrev_b32", None, [[4, 31], [0xF0000000, 0x80000000]], [0x0F000000, 1], "logical")
op("v_ashrrev_i32", None, [[4, 1], [0xF0000000, 0x7FFFFFFF]], [0xFF000000, 0x3FFFFFFF],
   "arithmetic: copies the sign")
op("v_lshlrev_b16", None, [[4, 17], [0x0F01, 1]], [0xF010, 2], "shift is v0 & 15",
   ty="u16", out="u16")
op("v_lshrrev_b16", None, [[4], [0xF000]], [0x0F00], "logical 16-bit", ty="u16", out="u16")
op("v_ashrrev_i16", None, [[4], [0x8000]], [0xF800], "arithmetic 16-bit", ty="u16", out="u16")
add(case("*", "v_lshlrev_b64 v[6:7], v0, v[2:3]",
         {"v0.u32": [4, 65], "v2.u64": [0x8000000000000001, 1]}, {"v6.u64": [0x10, 2]},
         "64-bit shift, amount & 63"))
add(case("*", "v_lshrrev_b64 v[6:7], v0, v[2:3]",
         {"v0.u32": [63, 4], "v2.u64": [0x8000000000000000, 0x100000000]},
         {"v6.u64": [1, 0x10000000]}, "logical"))
add(case("*", "v_ashrrev_i64 v[6:7], v0, v[2:3]",
         {"v0.u32": [63, 4], "v2.u64": [0x8000000000000000, 0x100000000]},
         {"v6.u64": [2 ** 64 - 1, 0x10000000]}, "arithmetic"))
add(case("gfx942", "v_lshl_add_u64 v[6:7], v[0:1], v2, v[4:5]",
         {"v0.u64": [M32], "v2.u32": [4], "v4.u64": [1]}, {"v6.u64": [0xFFFFFFFF1]},
         "(x << 4) + 1 in 64 bits"))
op("v_lshl_add_u32", None, [[1, M32], [4, 1], [3, 3]], [19, 1], "(a << b) + c, wraps")
op("v_add_lshl_u32", None, [[1, M32], [3, 1], [4, 1]], [64, 0], "(a + b) << c")
op("v_lshl_or_b32", None, [[1], [4], [3]], [19], "(a << b) | c")

# --- logic ----------------------------------------------------------------------------------------
op("v_and_b32", None, [[0xFF00FF00], [0x0FF00FF0]], [0x0F000F00], "and")
op("v_or_b32", None, [[0xFF000000], [0x000000FF]], [0xFF0000FF], "or")
op("v_xor_b32", None, [[0xFFFF0000], [0x0F0F0F0F]], [0xF0F00F0F], "xor")
op("v_xnor_b32", None, [[0xFF00FF00], [0x0F0F0F0F]], [0x0FF00FF0], "~(a ^ b)")
op("v_not_b32", None, [[0x0F0F0F0F]], [0xF0F0F0F0], "not")
op("v_or3_b32", None, [[1], [2], [4]], [7], "three-way or")
op("v_and_or_b32", None, [[0xF0], [0x3C], [1]], [0x31], "(a & b) | c")
op("v_xad_u32", None, [[1], [3], [4]], [6], "(a ^ b) + c")
add(case("gfx1201", "v_xor3_b32 v3, v0, v1, v2", {"v0.u32": [1], "v1.u32": [3], "v2.u32": [4]},
         {"v3.u32": [6]}, "1 ^ 3 ^ 4"))
op("v_bfrev_b32", None, [[1, 0x80000003]], [0x80000000, 0xC0000001], "bit reverse")
op("v_bfe_u32", None, [[0xABCD1234, 0xABCD1234], [8, 28], [8, 8]], [0x12, 0xA],
   "unsigned field; a field past bit 31 gets zeros")
op("v_bfe_i32", None, [[0xF000, 0x7000, 0xF000], [12, 12, 12], [4, 4, 0]], [M32, 7, 0],
   "signed field: 0xF in 4 bits is -1; width 0 gives 0")
op("v_bfi_b32", None, [[0xFF00FF00], [0x12345678], [0xABCDEF01]], [0x12CD5601],
   "(mask & v1) | (~mask & v2)")
op("v_bfm_b32", None, [[4, 0], [8, 3]], [0xF00, 0], "((1 << width) - 1) << offset")
op("v_alignbit_b32", None, [[0x12345678], [0x9ABCDEF0], [8]], [0x789ABCDE],
   "low dword of {v0,v1} >> 8")
op("v_alignbyte_b32", None, [[0x12345678], [0x9ABCDEF0], [1]], [0x789ABCDE],
   "low dword of {v0,v1} >> 1 byte")
op("v_bcnt_u32_b32", None, [[0xF0F0, M32], [1, 0]], [9, 32], "popcount(v0) + v1")
op("v_perm_b32", None, [[0x11223344], [0x55667788], [0x0C0D0704]], [0x00FF1144],
   "selectors: 4 -> v0 byte 0, 7 -> v0 byte 3, 13 -> 0xFF, 12 -> 0x00")
op("v_sad_u32", None, [[3, M32], [10, 0], [100, 1]], [107, 0],
   "|v0 - v1| + v2 (unsigned, wraps)")
op("v_ffbh_u32", "v_clz_i32_u32", [[0x00010000, 0, 1]], [15, M32, 31],
   "leading zeros; 0 gives -1")
op("v_ffbl_b32", "v_ctz_i32_b32", [[0x100, 0, 0x80000000]], [8, M32, 31],
   "trailing zeros; 0 gives -1")

# --- min / max / med3 -----------------------------------------------------------------------------
op("v_max_i32", None, [[M32, 3], [2, -5]], [2, 3], "signed: -1 < 2")
op("v_max_u32", None, [[M32, 3], [2, 5]], [M32, 5], "unsigned: 0xFFFFFFFF is the largest")
op("v_min_i32", None, [[M32, 3], [2, 5]], [M32, 3], "signed: -1 < 2")
op("v_min_u32", None, [[M32, 3], [2, 5]], [2, 3], "unsigned")
op("v_max_i16", None, [[0xFFFF], [2]], [2], "signed 16: 0xFFFF = -1", ty="u16", out="u16")
op("v_max_u16", None, [[0xFFFF], [2]], [0xFFFF], "unsigned 16", ty="u16", out="u16")
op("v_min_i16", None, [[0xFFFF], [2]], [0xFFFF], "signed 16", ty="u16", out="u16")
op("v_min_u16", None, [[0xFFFF], [2]], [2], "unsigned 16", ty="u16", out="u16")
op("v_max3_i32", None, [[M32], [5], [3]], [5], "signed")
op("v_max3_u32", None, [[M32], [5], [3]], [M32], "unsigned")
op("v_min3_i32", None, [[M32], [5], [3]], [M32], "signed: -1")
op("v_min3_u32", None, [[M32], [5], [3]], [3], "unsigned")
op("v_med3_i32", None, [[M32, 9], [5, 2], [3, 4]], [3, 4], "signed median of (-1, 5, 3)")
op("v_med3_u32", None, [[M32, 9], [5, 2], [3, 4]], [5, 4], "unsigned median of (max, 5, 3)")

# --- packed 16-bit integer ------------------------------------------------------------------------
op("v_pk_add_u16", None, [[0x0001FFFF], [0x00020002]], [0x00030001], "per half, wraps")
op("v_pk_sub_u16", None, [[0x00050001], [0x00020002]], [0x0003FFFF], "per half, wraps")
op("v_pk_mul_lo_u16", None, [[0x00030100], [0x00050100]], [0x000F0000], "per half, low 16 bits")
op("v_pk_lshlrev_b16", None, [[0x00110004], [0x00010F01]], [0x0002F010], "amount & 15 per half")
op("v_pk_lshrrev_b16", None, [[0x00010004], [0x8000F000]], [0x40000F00], "logical per half")
op("v_pk_ashrrev_i16", None, [[0x00010004], [0x8000F000]], [0xC000FF00], "arithmetic per half")
op("v_pk_max_i16", None, [[0xFFFF0005], [0x00020007]], [0x00020007], "signed per half")
op("v_pk_max_u16", None, [[0xFFFF0005], [0x00020007]], [0xFFFF0007], "unsigned per half")
op("v_pk_min_i16", None, [[0xFFFF0005], [0x00020007]], [0xFFFF0005], "signed per half")
op("v_pk_min_u16", None, [[0xFFFF0005], [0x00020007]], [0x00020005], "unsigned per half")

# --- moves, selects, lanes ------------------------------------------------------------------------
add(case("*", "v_mov_b32 v3, v0", {"v0.u32": [7, 8, 9, 10], "exec": "1011"},
         {"v3.u32": [7, KEEP_MARK, 9, 10]}, "lane 1 is outside EXEC: keeps its old value"))
add(case("gfx942", "v_mov_b64 v[6:7], v[0:1]", {"v0.u64": [0x123456789, 5], "exec": "01"},
         {"v6.u64": [KEEP_MARK, 5]}, "64-bit move under EXEC"))
add(both("v_cndmask_b32 v3, v0, v1, vcc", "v_cndmask_b32 v3, v0, v1, vcc_lo",
         {"v0.u32": [1, 2, 3, 4], "v1.u32": [10, 20, 30, 40], "vcc": "1010"},
         {"v3.u32": [10, 2, 30, 4]}, "VCC set: v1, clear: v0"))
add(case("gfx1201", "v_cndmask_b16 v3, v0, v1, vcc_lo",
         {"v0.u16": [1, 2], "v1.u16": [10, 20], "vcc": "01"}, {"v3.u16": [1, 20]},
         "16-bit select by VCC"))
add(case("*", "v_readfirstlane_b32 s4, v0", {"v0.u32": [7, 8, 9, 10], "exec": "0011"},
         {"s4.u32": 9}, "the first lane in EXEC is lane 2"))
add(case("*", "v_readlane_b32 s4, v0, 2", {"v0.u32": [7, 8, 9, 10], "exec": "1000"},
         {"s4.u32": 9}, "reads lane 2 even outside EXEC"))
add(case("*", "v_writelane_b32 v3, s0, 2", {"s0.u32": 77, "exec": "1000"},
         {"v3.u32": [KEEP_MARK, KEEP_MARK, 77, KEEP_MARK]}, "writes lane 2 only, ignoring EXEC"))
add(case("*", "v_mbcnt_lo_u32_b32 v3, s0, v1", {"s0.u32": 0b1011, "v1.u32": [10]},
         {"v3.u32": [10, 11, 12, 12]}, "popcount of the mask bits below each lane, plus v1"))
add(case("*", "v_mbcnt_hi_u32_b32 v3, s0, v1", {"s0.u32": M32, "v1.u32": [5]},
         {"v3.u32": [5, 5, 5, 5]}, "lanes 0-31 have no mask bits in the high half below them"))
add(case("gfx942", "v_accvgpr_write_b32 a3, v0", {"v0.u32": [5, 6]}, {"a3.u32": [5, 6]},
         "VGPR to AGPR"))
add(case("gfx942", "v_accvgpr_read_b32 v3, a0", {"a0.u32": [5, 6]}, {"v3.u32": [5, 6]},
         "AGPR to VGPR"))
add(case("gfx942", "v_accvgpr_mov_b32 a3, a0", {"a0.u32": [5, 6], "exec": "01"},
         {"a3.u32": [KEEP_MARK, 6]}, "AGPR to AGPR under EXEC"))

# --- VOP3 clamp on integer add/sub saturates (LLVM selects it for uadd.sat / usub.sat / sadd.sat) -
for line9, line12, inputs, expect, why in (
        ("v_add_u32_e64 v3, v0, v1 clamp", "v_add_nc_u32_e64 v3, v0, v1 clamp",
         {"v0.u32": [M32, 5], "v1.u32": [2]}, {"v3.u32": [M32, 7]}, "unsigned: stops at 2^32-1"),
        ("v_sub_u32_e64 v3, v0, v1 clamp", "v_sub_nc_u32_e64 v3, v0, v1 clamp",
         {"v0.u32": [1, 5], "v1.u32": [2]}, {"v3.u32": [0, 3]}, "unsigned: stops at 0"),
        ("v_add_i32 v3, v0, v1 clamp", "v_add_nc_i32 v3, v0, v1 clamp",
         {"v0.u32": [0x7FFFFFFF, 0x80000000], "v1.i32": [1, -1]},
         {"v3.u32": [0x7FFFFFFF, 0x80000000]}, "signed: stops at 2^31-1 and -2^31"),
        ("v_add_u16_e64 v3, v0, v1 clamp", "v_add_nc_u16 v3, v0, v1 clamp",
         {"v0.u16": [0xFFFF], "v1.u16": [2]}, {"v3.u16": [0xFFFF]}, "16-bit unsigned saturates"),
        ("v_pk_add_u16 v3, v0, v1 clamp", None, {"v0.u32": [0xFFFF0001], "v1.u32": [0x00020002]},
         {"v3.u32": [0xFFFF0003]}, "packed: the high half saturates, the low half adds"),
        ("v_add_co_u32_e64 v3, s[8:9], v0, v1 clamp", "v_add_co_u32 v3, s8, v0, v1 clamp",
         {"v0.u32": [M32], "v1.u32": [2], "exec": "1"}, {"v3.u32": [M32], "s8.u32": 1},
         "saturates; the carry out is still reported")):
    add(both(line9, line12, inputs, expect, why))
add(both("v_mad_u64_u32 v[6:7], s[8:9], v0, v1, v[4:5]",
         "v_mad_co_u64_u32 v[6:7], s8, v0, v1, v[4:5]",
         {"v0.u32": [M32, 1], "v1.u32": [M32, 1], "v4.u64": [2 ** 64 - 1, 1], "exec": "11"},
         {"v6.u64": [0xFFFFFFFE00000000, 2], "s8.u32": 0b01},
         "(2^32-1)^2 + (2^64-1) overflows 64 bits: carry out for lane 0 only"))

# --- bit-field and permute corner cases -----------------------------------------------------------
op("v_bfe_i32", None, [[0x80000000, M32], [28, 0], [8, 31]], [0xFFFFFFF8, M32],
   "S0 is shifted arithmetically: bits 28..35 of -2^31 are 0xF8, sign-extended from bit 7")
op("v_bfe_u32", None, [[0x80000000, M32], [28, 1], [8, 31]], [0x8, 0x7FFFFFFF],
   "bits past 31 read as 0")
op("v_perm_b32", None, [[0x80112233], [0x44558066], [0x0B0A0908]], [0xFF0000FF],
   "selectors 8-11 replicate the sign of bytes 1, 3 (of v1) and 5, 7 (of v0)")
op("v_alignbit_b32", None, [[0x12345678], [0x9ABCDEF0], [32]], [0x9ABCDEF0],
   "the shift is v2 & 31: 32 shifts by 0")
op("v_mul_hi_u32", None, [[M32], [M32]], [0xFFFFFFFE], "(2^32-1)^2 = 0xFFFFFFFE00000001")

# --- lane-access corner cases ---------------------------------------------------------------------
add(case("*", "v_readfirstlane_b32 s4, v0", {"v0.u32": [7, 8], "exec": "0"}, {"s4.u32": 7},
         "EXEC empty: reads lane 0"))
add(case("gfx942", "v_readlane_b32 s4, v0, s1", {"v0.u32": [7, 8, 9], "s1.u32": 65},
         {"s4.u32": 8}, "the lane select is s1 & 63"))
add(case("gfx1201", "v_readlane_b32 s4, v0, s1", {"v0.u32": [7, 8, 9], "s1.u32": 33},
         {"s4.u32": 8}, "the lane select is s1 & 31 in wave32"))
add(case("gfx942", "v_cndmask_b32_e64 v3, v0, v1, s[0:1]", {"v0.u32": [1], "v1.u32": [2],
                                                          "s0.u32": 0b10},
         {"v3.u32": [1, 2]}, "the VOP3 form takes its mask from any SGPR pair"))
add(case("gfx942", "v_cmpx_lt_i32_e64 s[8:9], v0, v1",
         {"v0.i32": [1, 3], "v1.i32": [2], "exec": "11"}, {"exec": "10", "s8.u32": 1},
         "gfx9 VOP3 v_cmpx writes both the SGPR pair and EXEC"))
