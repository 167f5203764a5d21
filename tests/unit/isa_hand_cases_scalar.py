"""Hand-checked cases: scalar ALU (SOP1/SOP2/SOPK/SOPC), EXEC manipulation, program flow,
scalar memory and the instructions that only order, wait or hint (no architectural effect).

Sources s0, s1 (64-bit: s[0:1], s[2:3]); result s4 (64-bit: s[4:5]); SCC as noted.
"""
from __future__ import annotations

from isa_hand_runner import INF, NAN, both, case

from hsapy.sim.isa.semantics import BARRIER, END, NotImplementedInstruction

CASES = []
M32 = 0xFFFFFFFF
M64 = 2 ** 64 - 1


def add(*cases):
    for c in cases:
        CASES.extend(c if isinstance(c, list) else [c])


def sop2(name9, name12, a, b, want, scc=None, why="", ty="u32", scc_in=None):
    wide = ty.endswith("64")
    line = "{} s[4:5], s[0:1], s[2:3]" if wide else "{} s4, s0, s1"
    inputs = {f"s0.{ty}": a, f"s{2 if wide else 1}.{ty}": b}
    if scc_in is not None:
        inputs["scc"] = scc_in
    expect = {f"s4.{ty}": want}
    if scc is not None:
        expect["scc"] = scc
    add(both(line.format(name9), line.format(name12) if name12 else None, inputs, expect, why))


def sop1(name9, name12, a, want, scc=None, why="", ty="u32", out="u32"):
    src = "s[0:1]" if ty.endswith("64") else "s0"
    dst = "s[4:5]" if out.endswith("64") else "s4"
    expect = {f"s4.{out}": want}
    if scc is not None:
        expect["scc"] = scc
    add(both(f"{name9} {dst}, {src}", f"{name12} {dst}, {src}" if name12 else None,
             {f"s0.{ty}": a}, expect, why))


# --- integer arithmetic and SCC -------------------------------------------------------------------
sop2("s_add_u32", "s_add_co_u32", M32, 2, 1, True, "unsigned carry out to SCC")
sop2("s_sub_u32", "s_sub_co_u32", 1, 2, M32, True, "borrow to SCC")
sop2("s_add_i32", "s_add_co_i32", 0x7FFFFFFF, 1, 0x80000000, True, "signed overflow to SCC")
sop2("s_sub_i32", "s_sub_co_i32", 0x80000000, 1, 0x7FFFFFFF, True, "signed overflow to SCC")
sop2("s_addc_u32", "s_add_co_ci_u32", M32, 0, 0, True, "carry in from SCC, carry out", scc_in=True)
sop2("s_subb_u32", "s_sub_co_ci_u32", 0, 0, M32, True, "borrow in from SCC", scc_in=True)
sop2("s_mul_i32", None, M32, 3, 0xFFFFFFFD, None, "-1 * 3, low 32 bits")
sop2("s_mul_hi_u32", None, 0x80000000, 6, 3, None, "2^31 * 6 = 3 * 2^32")
sop2("s_mul_hi_i32", None, 0x80000000, 6, 0xFFFFFFFD, None, "-2^31 * 6 = -3 * 2^32")
sop2("s_min_i32", None, M32, 2, M32, True, "signed: -1 < 2, SCC = (s0 < s1)")
sop2("s_min_u32", None, M32, 2, 2, False, "unsigned: SCC = (s0 < s1) is false")
sop2("s_max_i32", None, M32, 2, 2, False, "signed: SCC = (s0 > s1) is false")
sop2("s_max_u32", None, M32, 2, M32, True, "unsigned: SCC = (s0 > s1)")
sop2("s_absdiff_i32", None, 2, -3, 5, True, "|2 - (-3)|, SCC = result != 0")
sop2("s_lshl1_add_u32", None, 0x80000000, 1, 1, True, "(s0 << 1) + s1 carries out")
sop2("s_lshl2_add_u32", None, 1, 3, 7, False, "(1 << 2) + 3, no carry")
sop2("s_lshl3_add_u32", None, 1, 0xFFFFFFF8, 0, True, "(1 << 3) + 0xFFFFFFF8 = 2^32")
sop2("s_lshl4_add_u32", None, 0x10000000, 0, 0, True, "0x10000000 << 4 is 2^32: the carry")
add(case("gfx1201", "s_add_nc_u64 s[4:5], s[0:1], s[2:3]", {"s0.u64": M64, "s2.u64": 2},
         {"s4.u64": 1}, "64-bit wrap"))
add(case("gfx1201", "s_sub_nc_u64 s[4:5], s[0:1], s[2:3]", {"s0.u64": 0, "s2.u64": 1},
         {"s4.u64": M64}, "64-bit wrap"))
add(case("gfx1201", "s_mul_u64 s[4:5], s[0:1], s[2:3]", {"s0.u64": 0x100000001, "s2.u64": 3},
         {"s4.u64": 0x300000003}, "64-bit product"))
sop1("s_abs_i32", None, -5, 5, True, "abs; SCC = result != 0")
add(both("s_abs_i32 s4, s0", None, {"s0.u32": 0x80000000}, {"s4.u32": 0x80000000},
         "abs(-2^31) wraps to itself"))

# --- SOPK -----------------------------------------------------------------------------------------
add(both("s_movk_i32 s4, 0x8000", None, {}, {"s4.u32": 0xFFFF8000}, "simm16 is sign-extended"))
add(both("s_cmovk_i32 s4, 0x8000", None, {"scc": True, "s4.u32": 9}, {"s4.u32": 0xFFFF8000},
         "SCC set: moves the sign-extended constant"))
add(both("s_addk_i32 s4, 0x1", "s_addk_co_i32 s4, 0x1", {"s4.u32": 0x7FFFFFFF},
         {"s4.u32": 0x80000000, "scc": True}, "signed overflow to SCC"))
add(both("s_mulk_i32 s4, 0xfffe", None, {"s4.u32": 3}, {"s4.u32": 0xFFFFFFFA},
         "3 * sign-extended(0xfffe) = 3 * -2"))

# --- logic ---------------------------------------------------------------------------------------
A32, B32 = 0xFF00FF00, 0x0F0F0F0F
A64, B64 = 0xFF00FF00_00000001, 0x0F0F0F0F_00000001
for n9, n12, w32, w64 in (
        ("s_and", None, 0x0F000F00, 0x0F000F00_00000001),
        ("s_or", None, 0xFF0FFF0F, 0xFF0FFF0F_00000001),
        ("s_xor", None, 0xF00FF00F, 0xF00FF00F_00000000),
        ("s_nand", None, 0xF0FFF0FF, 0xF0FFF0FF_FFFFFFFE),
        ("s_nor", None, 0x00F000F0, 0x00F000F0_FFFFFFFE),
        ("s_xnor", None, 0x0FF00FF0, 0x0FF00FF0_FFFFFFFF),
        ("s_andn2", "s_and_not1", 0xF000F000, 0xF000F000_00000000),
        ("s_orn2", "s_or_not1", 0xFFF0FFF0, 0xFFF0FFF0_FFFFFFFF)):
    sop2(f"{n9}_b32", f"{n12}_b32" if n12 else None, A32, B32, w32, True, "SCC = result != 0")
    sop2(f"{n9}_b64", f"{n12}_b64" if n12 else None, A64, B64, w64, True,
         "64-bit, both halves", ty="u64")
sop2("s_and_b32", None, 0xF0, 0x0F, 0, False, "zero result clears SCC")
sop1("s_not_b32", None, M32, 0, False, "~0xFFFFFFFF = 0: SCC clear")
sop1("s_not_b64", None, 0, M64, True, "~0 (64-bit)", ty="u64", out="u64")
sop1("s_mov_b32", None, 0x12345678, 0x12345678, None, "copy")
sop1("s_mov_b64", None, 0x123456789A, 0x123456789A, None, "64-bit copy", ty="u64", out="u64")
sop1("s_brev_b32", None, 0x80000003, 0xC0000001, None, "bit reverse")
sop1("s_bcnt1_i32_b32", None, 0xF0F0, 8, True, "popcount; SCC = result != 0")
sop1("s_bcnt1_i32_b64", None, 0xFFFFFFFF_00000001, 33, True, "popcount of 64 bits", ty="u64")
sop1("s_ff1_i32_b32", "s_ctz_i32_b32", 0x100, 8, None, "lowest set bit")
add(both("s_ff1_i32_b32 s4, s0", "s_ctz_i32_b32 s4, s0", {"s0.u32": 0}, {"s4.u32": M32},
         "no bit set: -1"))
sop1("s_ff1_i32_b64", "s_ctz_i32_b64", 0x1_00000000, 32, None, "lowest set bit of 64", ty="u64")
sop1("s_flbit_i32_b32", "s_clz_i32_u32", 0x00010000, 15, None, "leading zeros")
add(both("s_flbit_i32_b32 s4, s0", "s_clz_i32_u32 s4, s0", {"s0.u32": 0}, {"s4.u32": M32},
         "no bit set: -1"))
sop1("s_sext_i32_i8", None, 0x1280, 0xFFFFFF80, None, "sign-extends bit 7")
sop1("s_sext_i32_i16", None, 0x18000, 0xFFFF8000, None, "sign-extends bit 15")

# --- shifts and bit fields ------------------------------------------------------------------------
sop2("s_lshl_b32", None, 3, 30, 0xC0000000, True, "shift; SCC = result != 0")
sop2("s_lshl_b32", None, 1, 33, 2, True, "shift amount & 31")
sop2("s_lshr_b32", None, 0x80000000, 31, 1, True, "logical")
sop2("s_ashr_i32", None, 0x80000000, 31, M32, True, "arithmetic")
for name, a, sh, want, why in (("s_lshl_b64", 0x80000001, 4, 0x8_00000010, "crosses the halves"),
                               ("s_lshr_b64", 1 << 63, 63, 1, "logical"),
                               ("s_ashr_i64", 1 << 63, 63, M64, "arithmetic")):
    add(both(f"{name} s[4:5], s[0:1], s2", None, {"s0.u64": a, "s2.u32": sh},
             {"s4.u64": want, "scc": True}, why))
sop2("s_bfe_u32", None, 0xABCD1234, (8 << 16) | 8, 0x12, True, "s1 = width << 16 | offset")
sop2("s_bfe_i32", None, 0xF000, (4 << 16) | 12, M32, True, "signed 4-bit field 0xF = -1")
sop2("s_bfm_b32", None, 4, 8, 0xF00, None, "((1 << 4) - 1) << 8")
sop2("s_pack_ll_b32_b16", None, 0x12345678, 0x9ABCDEF0, 0xDEF05678, None, "{s1.lo, s0.lo}")
sop2("s_pack_lh_b32_b16", None, 0x12345678, 0x9ABCDEF0, 0x9ABC5678, None, "{s1.hi, s0.lo}")
sop2("s_pack_hh_b32_b16", None, 0x12345678, 0x9ABCDEF0, 0x9ABC1234, None, "{s1.hi, s0.hi}")
add(case("gfx1201", "s_pack_hl_b32_b16 s4, s0, s1", {"s0.u32": 0x12345678, "s1.u32": 0x9ABCDEF0},
         {"s4.u32": 0xDEF01234}, "{s1.lo, s0.hi}"))
add(both("s_bitset0_b32 s4, s0", None, {"s0.u32": 3, "s4.u32": 0xFF}, {"s4.u32": 0xF7},
         "clears bit 3"))
add(both("s_bitset1_b32 s4, s0", None, {"s0.u32": 35, "s4.u32": 0}, {"s4.u32": 8},
         "bit number & 31"))
add(both("s_bitset0_b64 s[4:5], s0", None, {"s0.u32": 40, "s4.u64": M64},
         {"s4.u64": M64 & ~(1 << 40)}, "clears bit 40"))
add(both("s_bitset1_b64 s[4:5], s0", None, {"s0.u32": 40, "s4.u64": 0}, {"s4.u64": 1 << 40},
         "sets bit 40"))
add(both("s_bitcmp0_b32 s0, s1", None, {"s0.u32": 8, "s1.u32": 3}, {"scc": False}, "bit 3 is 1"))
add(both("s_bitcmp1_b32 s0, s1", None, {"s0.u32": 8, "s1.u32": 3}, {"scc": True}, "bit 3 is 1"))
add(both("s_bitcmp0_b64 s[0:1], s2", None, {"s0.u64": 1 << 40, "s2.u32": 40}, {"scc": False},
         "bit 40 is 1"))
add(both("s_bitcmp1_b64 s[0:1], s2", None, {"s0.u64": 1 << 40, "s2.u32": 40}, {"scc": True},
         "bit 40 is 1"))

# --- selects --------------------------------------------------------------------------------------
add(both("s_cselect_b32 s4, s0, s1", None, {"s0.u32": 11, "s1.u32": 22, "scc": True},
         {"s4.u32": 11}, "SCC set: s0"))
add(both("s_cselect_b64 s[4:5], s[0:1], s[2:3]", None,
         {"s0.u64": 1 << 33, "s2.u64": 7, "scc": False}, {"s4.u64": 7}, "SCC clear: s1"))
add(both("s_cmov_b32 s4, s0", None, {"s0.u32": 5, "s4.u32": 9, "scc": False}, {"s4.u32": 9},
         "SCC clear: no move"))
add(both("s_cmov_b64 s[4:5], s[0:1]", None, {"s0.u64": 1 << 33, "s4.u64": 9, "scc": True},
         {"s4.u64": 1 << 33}, "SCC set: moves"))

# --- compares -------------------------------------------------------------------------------------
# s0 = 0xFFFFFFFF, s1 = 2: -1 < 2 read signed, 2^32-1 > 2 read unsigned.
for pred, signed, unsigned in (("eq", 0, 0), ("lg", 1, 1), ("gt", 0, 1), ("ge", 0, 1),
                               ("lt", 1, 0), ("le", 1, 0)):
    add(both(f"s_cmp_{pred}_i32 s0, s1", None, {"s0.u32": M32, "s1.u32": 2},
             {"scc": bool(signed)}, f"signed {pred}: -1 vs 2"))
    add(both(f"s_cmp_{pred}_u32 s0, s1", None, {"s0.u32": M32, "s1.u32": 2},
             {"scc": bool(unsigned)}, f"unsigned {pred}: 0xFFFFFFFF vs 2"))
add(both("s_cmp_eq_u64 s[0:1], s[2:3]", None, {"s0.u64": 1 << 32, "s2.u64": 0}, {"scc": False},
         "the high halves differ"))
add(both("s_cmp_lg_u64 s[0:1], s[2:3]", None, {"s0.u64": 1 << 32, "s2.u64": 0}, {"scc": True},
         "the high halves differ"))
# SOPK compares: the _i32 forms sign-extend simm16, the _u32 forms zero-extend it.
for pred, signed, unsigned in (("eq", 0, 1), ("lg", 1, 0), ("gt", 1, 0), ("ge", 1, 1),
                               ("lt", 0, 0), ("le", 0, 1)):
    add(case("gfx942", f"s_cmpk_{pred}_i32 s0, 0xfffe", {"s0.u32": M32}, {"scc": bool(signed)},
             f"signed {pred}: -1 vs sign-extended 0xfffe = -2"))
    add(case("gfx942", f"s_cmpk_{pred}_u32 s0, 0xffff", {"s0.u32": 0xFFFF},
             {"scc": bool(unsigned)}, f"unsigned {pred}: 0xFFFF vs zero-extended 0xffff"))
# gfx12 float compares: (1, 2) is "less", (NaN, 2) is unordered.
FLOAT_TRUTH = {"lt": "10", "eq": "00", "le": "10", "gt": "00", "lg": "10", "ge": "00",
               "o": "10", "u": "01", "nge": "11", "nlg": "01", "ngt": "11", "nle": "01",
               "neq": "11", "nlt": "01"}
for ty in ("f16", "f32"):
    for pred, truth in FLOAT_TRUTH.items():
        for a, bit in ((1.0, truth[0]), (NAN, truth[1])):
            add(case("gfx1201", f"s_cmp_{pred}_{ty} s0, s1", {f"s0.{ty}": a, f"s1.{ty}": 2.0},
                     {"scc": bit == "1"}, f"{pred}: {a} vs 2.0"))

# --- gfx12 scalar float ---------------------------------------------------------------------------
for line, inputs, want, why in (
        ("s_add_f32 s4, s0, s1", {"s0.f32": 1.5, "s1.f32": 2.25}, 3.75, "exact"),
        ("s_sub_f32 s4, s0, s1", {"s0.f32": INF, "s1.f32": INF}, NAN, "inf - inf"),
        ("s_mul_f32 s4, s0, s1", {"s0.f32": 0.0, "s1.f32": INF}, NAN, "0 * inf"),
        ("s_max_num_f32 s4, s0, s1", {"s0.f32": NAN, "s1.f32": 2.0}, 2.0, "maxNum ignores NaN"),
        ("s_min_num_f32 s4, s0, s1", {"s0.f32": NAN, "s1.f32": -1.0}, -1.0, "minNum ignores NaN"),
        ("s_fmac_f32 s4, s0, s1", {"s0.f32": 2.0, "s1.f32": 3.0, "s4.f32": 1.0}, 7.0,
         "s4 += s0 * s1"),
        ("s_fmamk_f32 s4, s0, 0x40000000, s1", {"s0.f32": 3.0, "s1.f32": 0.5}, 6.5, "3*K(2)+0.5"),
        ("s_fmaak_f32 s4, s0, s1, 0x40000000", {"s0.f32": 3.0, "s1.f32": 0.5}, 3.5, "3*0.5+K(2)"),
        ("s_cvt_f32_u32 s4, s0", {"s0.u32": M32}, 4294967296.0, "rounds to 2^32"),
        ("s_cvt_f32_i32 s4, s0", {"s0.i32": -7}, -7.0, "signed"),
        ("s_rndne_f32 s4, s0", {"s0.f32": 2.5}, 2.0, "ties to even"),
        ("s_floor_f32 s4, s0", {"s0.f32": -1.5}, -2.0, "floor"),
        ("s_ceil_f32 s4, s0", {"s0.f32": -1.5}, -1.0, "ceil"),
        ("s_trunc_f32 s4, s0", {"s0.f32": -1.5}, -1.0, "trunc")):
    add(case("gfx1201", line, inputs, {"s4.f32": want}, why))
add(case("gfx1201", "s_cvt_u32_f32 s4, s0", {"s0.f32": -1.0}, {"s4.u32": 0}, "negative -> 0"))
add(case("gfx1201", "s_cvt_i32_f32 s4, s0", {"s0.f32": NAN}, {"s4.u32": 0}, "NaN -> 0"))

# --- EXEC: saveexec / wrexec ----------------------------------------------------------------------
# EXEC = lanes 0,1 (0b0011), S0 = 0b1010. New EXEC per op (first four lanes), old EXEC saved.
SAVEEXEC = {   # op: (gfx9 name, gfx12 name, new EXEC lanes 0..3)
    "and": ("and", "and", "0100"), "or": ("or", "or", "1101"), "xor": ("xor", "xor", "1001"),
    "andn2": ("andn2", "and_not1", "0001"), "orn2": ("orn2", "or_not1", "0111"),
    "nand": ("nand", "nand", "1011"), "nor": ("nor", "nor", "0010"),
    "xnor": ("xnor", "xnor", "0110"), "andn1": ("andn1", "and_not0", "1000"),
    "orn1": ("orn1", "or_not0", "1110"),
}
for n9, n12, lanes in SAVEEXEC.values():
    inputs64 = {"s0.u64": 0b1010, "exec": "1100"}
    why = f"EXEC = {n9}(s0, EXEC); the old EXEC (0b0011) is saved; SCC = EXEC != 0"
    add(case("gfx942", f"s_{n9}_saveexec_b64 s[4:5], s[0:1]", inputs64,
             {"exec": lanes, "s4.u64": 0b0011, "scc": True}, why))
    add(case("gfx1201", f"s_{n12}_saveexec_b64 s[4:5], s[0:1]", inputs64,
             {"exec": lanes, "s4.u64": 0b0011, "scc": True}, why + " (wave64)", wave=64))
    add(case("gfx1201", f"s_{n12}_saveexec_b32 s4, s0", {"s0.u32": 0b1010, "exec": "1100"},
             {"exec": lanes, "s4.u32": 0b0011, "scc": True}, why))
for n9, n12, lanes, value in (("andn1", "and_not0", "1000", 0b0001),
                              ("andn2", "and_not1", "0001", 0b1000)):
    why = "wrexec: EXEC = op(s0, EXEC) and the NEW EXEC goes to the destination"
    add(case("gfx942", f"s_{n9}_wrexec_b64 s[4:5], s[0:1]", {"s0.u64": 0b1010, "exec": "1100"},
             {"exec": lanes, "s4.u64": value, "scc": True}, why))
    add(case("gfx1201", f"s_{n12}_wrexec_b64 s[4:5], s[0:1]", {"s0.u64": 0b1010, "exec": "1100"},
             {"exec": lanes, "s4.u64": value, "scc": True}, why + " (wave64)", wave=64))
    add(case("gfx1201", f"s_{n12}_wrexec_b32 s4, s0", {"s0.u32": 0b1010, "exec": "1100"},
             {"exec": lanes, "s4.u32": value, "scc": True}, why))

# --- program flow ---------------------------------------------------------------------------------
PC = 0x1000    # the runner places the instruction here; SOPP branch targets are PC + 4 + 4*simm16
add(both("s_branch 3", None, {}, {}, "PC + 4 + 4*3", result=PC + 16))
for cond, inputs_taken, inputs_not in (
        ("scc1", {"scc": True}, {"scc": False}), ("scc0", {"scc": False}, {"scc": True}),
        ("execz", {"exec": "0"}, {"exec": "01"}), ("execnz", {"exec": "01"}, {"exec": "0"}),
        ("vccz", {"vcc": "0"}, {"vcc": "01"}), ("vccnz", {"vcc": "01"}, {"vcc": "0"})):
    add(both(f"s_cbranch_{cond} 2", None, inputs_taken, {}, f"{cond} holds: taken",
             result=PC + 12))
    add(both(f"s_cbranch_{cond} 2", None, inputs_not, {}, f"{cond} fails: falls through"))
add(both("s_setpc_b64 s[0:1]", None, {"s0.u64": 0x2000}, {}, "jumps to s[0:1]", result=0x2000))
add(both("s_swappc_b64 s[4:5], s[0:1]", None, {"s0.u64": 0x2000}, {"s4.u64": PC + 4},
         "jumps, and saves the return address (next instruction)", result=0x2000))
add(both("s_getpc_b64 s[4:5]", None, {}, {"s4.u64": PC + 4}, "address of the next instruction"))
add(both("s_endpgm", None, {}, {}, "ends the wave", result=END))
add(both("s_endpgm_saved", None, {}, {}, "ends the wave", result=END))
add(case("gfx942", "s_endpgm_ordered_ps_done", {}, {}, "ends the wave", result=END))
for line, what in (("s_sethalt 1", "halts"), ("s_setkill 1", "is killed")):
    add(both(line, None, {}, {"raises": (NotImplementedInstruction, f"the wave {what}")},
             "on hardware the dispatch never completes: the queue stops naming it"))
add(both("s_sethalt 0", None, {"s4.u32": 7}, {"s4.u32": 7}, "clears HALT: execution goes on"))
add(both("s_sendmsghalt sendmsg(MSG_INTERRUPT)", None, {},
         {"raises": (NotImplementedInstruction, "the wave halts after sending its message")},
         "sends its message, then halts as s_sethalt 1 does: the queue stops naming it"))
add(case("gfx942", "s_barrier", {}, {}, "waits for the workgroup", result=BARRIER))
add(case("gfx1201", "s_barrier_wait 0xffff", {}, {}, "waits for the workgroup",
         result=BARRIER))


# --- clocks and hardware registers ----------------------------------------------------------------
def _clock_in_range(lo: int, hi: int, wide: bool):
    """The destination (preset to all ones) now holds a tick count no later than the clock
    read after the instruction (a fresh machine's clock is far below 2^32 ticks)."""
    def check(batch, m):
        value = int(batch.S[0, lo]) | (int(batch.S[0, hi]) << 32 if wide else 0)
        assert value <= m.clock.now() < 2 ** 32, value
    return check


PRESET = {"s4.u32": 0xFFFFFFFF, "s5.u32": 0xFFFFFFFF}
add(case("gfx942", "s_memtime s[4:5]", PRESET, {"check": _clock_in_range(4, 5, True)},
         "the shader clock"))
add(case("gfx942", "s_memrealtime s[4:5]", PRESET, {"check": _clock_in_range(4, 5, True)},
         "the real-time clock"))
add(case("gfx1201", "s_sendmsg_rtn_b64 s[4:5], sendmsg(MSG_RTN_GET_REALTIME)", PRESET,
         {"check": _clock_in_range(4, 5, True)}, "the real-time clock"))
add(case("gfx1201", "s_sendmsg_rtn_b32 s4, sendmsg(MSG_RTN_GET_REALTIME)", PRESET,
         {"check": _clock_in_range(4, 4, False)}, "low half of the real-time clock"))
add(case("gfx1201", "s_getreg_b32 s4, hwreg(HW_REG_SHADER_CYCLES_LO)", PRESET,
         {"check": _clock_in_range(4, 4, False)}, "the cycle counter"))
add(case("gfx942", "s_getreg_b32 s4, hwreg(HW_REG_MODE, 0, 4)", {"s4.u32": 9}, {"s4.u32": 0},
         "MODE.FP_ROUND (bits 3:0) is 0: round to nearest even for f32 and f16/f64"))
add(case("*", "s_getreg_b32 s4, hwreg(HW_REG_MODE, 4, 4)", {"s4.u32": 9, "mode": 0x3F3},
         {"s4.u32": 0xF}, "MODE.FP_DENORM (bits 7:4) of the wave's MODE 0x3f3"))
add(case("*", "s_getreg_b32 s4, hwreg(HW_REG_MODE)", {"mode": 0x3F3}, {"s4.u32": 0x3F3},
         "the whole MODE register (offset 0, size 32)"))


def _mode_is(value: int):
    def check(batch, m):
        assert batch.mode == value, hex(batch.mode)
    return check


# A MODE write returns MODE_CHANGED (-4): the scheduler continues the wave in the program
# compiled for its new MODE.
add(case("*", "s_setreg_b32 hwreg(HW_REG_MODE, 0, 4), s0", {"s0.u32": 0x13, "mode": 0x3F0},
         {"check": _mode_is(0x3F3)}, "MODE[3:0] = s0[3:0]: f32 toward zero", result=-4))
add(case("*", "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 4), 0x0", {"mode": 0x3F0},
         {"check": _mode_is(0x300)}, "MODE[7:4] = 0: flush denormals", result=-4))
add(case("*", "s_setreg_b32 hwreg(HW_REG_MODE, 0, 4), s0", {"s0.u32": 0x10, "mode": 0x3F0},
         {"check": _mode_is(0x3F0)}, "the same value: no change", result=None))
add(case("gfx1201", "s_round_mode 0x9", {"mode": 0xF0}, {"check": _mode_is(0xF9)},
         "MODE.FP_ROUND = 0b1001: f32 toward +inf, f64/f16 toward -inf", result=-4))
add(case("gfx1201", "s_denorm_mode 0x3", {"mode": 0xF0}, {"check": _mode_is(0x30)},
         "MODE.FP_DENORM = 0b0011: keep f32 denormals, flush f64/f16", result=-4))


# --- instructions without architectural effect on registers ---------------------------------------
def _unchanged(target: str, line: str, why: str):
    """A wait/hint/cache instruction: registers, SCC, EXEC and VCC are left alone."""
    add(case(target, line, {"v3.u32": [5, 6], "s4.u32": 7, "scc": True, "exec": "01",
                            "vcc": "1"},
             {"v3.u32": [5, 6], "s4.u32": 7, "scc": True, "exec": "01", "vcc": "1"}, why))


for line in ("s_nop 3", "s_waitcnt 0", "s_setprio 1", "s_setkill 0", "s_icache_inv",
             "s_dcache_inv", "s_ttracedata"):
    _unchanged("*", line, "no register effect")
for line in ("s_dcache_wb", "s_dcache_inv_vol", "s_dcache_wb_vol", "buffer_wbl2",
             "buffer_inv", "buffer_wbinvl1", "buffer_wbinvl1_vol",
             "s_sendmsg sendmsg(MSG_INTERRUPT)"):
    _unchanged("gfx942", line, "ordering/cache/message only")
for line in ("s_wait_loadcnt 0", "s_wait_storecnt 0", "s_wait_dscnt 0", "s_wait_kmcnt 0",
             "s_wait_samplecnt 0", "s_wait_bvhcnt 0", "s_wait_expcnt 0", "s_wait_alu 0xfffe",
             "s_wait_idle", "s_wait_loadcnt_dscnt 0", "s_wait_storecnt_dscnt 0",
             "s_wait_event 0x0", "s_singleuse_vdst 0x1", "s_ttracedata_imm 1",
             "s_barrier_signal -1", "s_barrier_signal_isfirst -1", "s_clause 0x1", "s_delay_alu 0", "s_code_end",
             "s_sendmsg sendmsg(MSG_DEALLOC_VGPRS)", "global_inv", "global_wb", "global_wbinv"):
    _unchanged("gfx1201", line, "ordering/cache/message/hint only")

# A sleep returns SLEEP (-5): the scheduler runs the chunk's other batches before this one goes
# on at the next instruction; no register changes.
_SLEEP_STATE = {"v3.u32": [5, 6], "s0.u32": 3, "scc": True, "exec": "01", "vcc": "1"}
add(case("*", "s_sleep 1", _SLEEP_STATE, _SLEEP_STATE, "the batch gives up its turn", result=-5))
add(case("gfx1201", "s_sleep_var s0", _SLEEP_STATE, _SLEEP_STATE,
         "the batch gives up its turn (the duration in s0 is not modelled)", result=-5))

# --- scalar memory --------------------------------------------------------------------------------
# "mem" is a buffer at s[20:21]; as a buffer resource s[20:23] its base is the same address.
MEM = [0x11111111, 0x22222222, 0x33333333, 0x44444444, 0x55555555, 0x66666666, 0x77777777,
       0x88888888] + list(range(9, 25))
for count, n9, n12 in ((1, "dword", "b32"), (2, "dwordx2", "b64"), (4, "dwordx4", "b128"),
                       (8, "dwordx8", "b256"), (16, "dwordx16", "b512")):
    dst = "s4" if count == 1 else f"s[4:{3 + count}]"
    want = {f"s{4 + i}.u32": MEM[1 + i] for i in range(count)}
    for kind, base in (("s_load", "s[20:21]"), ("s_buffer_load", "s[20:23]")):
        # s_buffer_*: s[20:23] is a V# over the buffer; num_records (s22) 256 bytes
        add(both(f"{kind}_{n9} {dst}, {base}, 0x4", f"{kind}_{n12} {dst}, {base}, 0x4",
                 {"mem": MEM, "s22.u32": 256}, {**want, "mem": MEM},
                 f"{count} dwords from byte 4"))
add(case("gfx1201", "s_load_b96 s[4:6], s[20:21], 0x4", {"mem": MEM},
         {"s4.u32": MEM[1], "s5.u32": MEM[2], "s6.u32": MEM[3]}, "three dwords"))
add(case("gfx1201", "s_buffer_load_b96 s[4:6], s[20:23], 0x4", {"mem": MEM, "s22.u32": 256},
         {"s4.u32": MEM[1], "s5.u32": MEM[2], "s6.u32": MEM[3]}, "three dwords"))
# gfx12 sub-dword scalar loads: one byte/short at the (unaligned) address, extended.
SUB = [0x8281F0E1] + [0] * 7
for kind, base in (("s_load", "s[20:21]"), ("s_buffer_load", "s[20:23]")):
    for name, offset, want, why in (("u8", 1, 0xF0, "byte 1 zero-extended"),
                                    ("i8", 1, 0xFFFFFFF0, "byte 1 sign-extended"),
                                    ("u16", 2, 0x8281, "bytes 2-3 zero-extended"),
                                    ("i16", 2, 0xFFFF8281, "bytes 2-3 sign-extended")):
        add(case("gfx1201", f"{kind}_{name} s4, {base}, 0x{offset:x}",
                 {"mem": SUB, "s22.u32": 256},
                 {"s4.u32": want}, why))
sop2("s_bfe_i32", None, 0x80000000, (8 << 16) | 28, 0xFFFFFFF8, True,
     "arithmetic shift: bits 28..35 of -2^31 are 0xF8, sign-extended from bit 7")
sop2("s_bfe_u32", None, 0x80000000, (8 << 16) | 28, 0x8, True, "bits past 31 read as 0")
sop1("s_abs_i32", None, 0, 0, False, "abs(0) = 0 clears SCC")
sop1("s_bcnt1_i32_b32", None, 0, 0, False, "no bits: SCC clear")
add(both("s_lshl_b64 s[4:5], s[0:1], s2", None, {"s0.u64": 1, "s2.u32": 64},
         {"s4.u64": 1}, "the 64-bit shift amount is s2 & 63"))
