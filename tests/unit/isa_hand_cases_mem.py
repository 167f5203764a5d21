"""Hand-checked cases: vector memory -- global, flat, scratch loads/stores/atomics and LDS (DS).

Global and flat cases address the runner's "mem" buffer (s[20:21] / v[20:21]) at byte offset 8
(dword 2); scratch cases address private offset 8 (v4 = 0) of every lane; DS cases address LDS
byte 8 (v4 = 0). Atomics run on lane 0 only so that "old" and "new" are one value each;
returning forms give the old value.
"""
from __future__ import annotations

import struct

from isa_hand_runner import KEEP_MARK, case

CASES = []
M32 = 0xFFFFFFFF
M64 = 2 ** 64 - 1

# gfx9 name, gfx12 name (same hand values); the gfx12 names drop the dword/byte spellings.
LOADS = [  # (gfx9, gfx12, byte offset, dwords loaded, expected dwords, why)
    ("ubyte", "u8", 9, 1, [0xF0], "byte 9 zero-extended"),
    ("sbyte", "i8", 9, 1, [0xFFFFFFF0], "byte 9 sign-extended"),
    ("ushort", "u16", 10, 1, [0x8281], "bytes 10-11 zero-extended"),
    ("sshort", "i16", 10, 1, [0xFFFF8281], "bytes 10-11 sign-extended"),
    ("dword", "b32", 12, 1, [0x44332211], "one dword"),
    ("dwordx2", "b64", 12, 2, [0x44332211, 0x88776655], "two dwords"),
    ("dwordx3", "b96", 12, 3, [0x44332211, 0x88776655, 0xCCBBAA99], "three dwords"),
    ("dwordx4", "b128", 12, 4, [0x44332211, 0x88776655, 0xCCBBAA99, 0x00FFEEDD], "four dwords"),
]
D16_LOADS = [  # v3 starts as 0xAAAABBBB; d16 loads replace one half and keep the other
    ("ubyte_d16", "d16_u8", 9, 0xAAAA00F0, "byte into the low half, zero-extended"),
    ("sbyte_d16", "d16_i8", 9, 0xAAAAFFF0, "byte into the low half, sign-extended"),
    ("short_d16", "d16_b16", 10, 0xAAAA8281, "short into the low half"),
    ("ubyte_d16_hi", "d16_hi_u8", 9, 0x00F0BBBB, "byte into the high half, zero-extended"),
    ("sbyte_d16_hi", "d16_hi_i8", 9, 0xFFF0BBBB, "byte into the high half, sign-extended"),
    ("short_d16_hi", "d16_hi_b16", 10, 0x8281BBBB, "short into the high half"),
]
WORDS = [0, 0, 0x8281F0E1, 0x44332211, 0x88776655, 0xCCBBAA99, 0x00FFEEDD]
STORES = [  # v[10:13] = 0x12345678, 0xA2, 0xA3, 0xA4; (gfx9, gfx12, offset, dwords 2..)
    ("byte", "b8", 9, [0x00007800], "low byte of the data to byte 9"),
    ("short", "b16", 10, [0x56780000], "low short of the data to bytes 10-11"),
    ("byte_d16_hi", "d16_hi_b8", 9, [0x00003400], "byte 2 of the data to byte 9"),
    ("short_d16_hi", "d16_hi_b16", 10, [0x12340000], "high short of the data to bytes 10-11"),
    ("dword", "b32", 8, [0x12345678], "one dword"),
    ("dwordx2", "b64", 8, [0x12345678, 0xA2], "two dwords"),
    ("dwordx3", "b96", 8, [0x12345678, 0xA2, 0xA3], "three dwords"),
    ("dwordx4", "b128", 8, [0x12345678, 0xA2, 0xA3, 0xA4], "four dwords"),
]

def _dst(count: int, first: int = 8) -> str:
    return f"v{first}" if count == 1 else f"v[{first}:{first + count - 1}]"


def _as_bytes(words: list[int]) -> bytes:
    return struct.pack(f"<{len(words)}I", *words)


for seg in ("global", "flat", "scratch"):
    for target, names in (("gfx942", 0), ("gfx1201", 1)):
        addr = {"global": "v4, s[20:21]", "flat": "v[20:21]", "scratch": "v4, off"}[seg]

        def load_case(name, offset, count, expect_words, why, extra=None):
            line = f"{seg}_load_{name} {_dst(count)}, {addr} offset:{offset}"
            inputs = {"v4.u32": [0], "exec": "1", **(extra or {})}
            keep = (extra or {}).get("v8.u32", [KEEP_MARK])[0]   # lane 1 keeps its old value
            expect = {f"v{8 + i}.u32": [w, keep] for i, w in enumerate(expect_words)}
            if seg == "scratch":
                inputs["scratch"] = _as_bytes(WORDS)
            else:
                inputs["mem"] = WORDS
            CASES.append(case(target, line, inputs, expect, why + "; lane 1 is outside EXEC"))

        for *pair, offset, count, expect_words, why in LOADS:
            load_case(pair[names], offset, count, expect_words, why)
        for *pair, offset, want, why in D16_LOADS:
            load_case(pair[names], offset, 1, [want], why, {"v8.u32": [0xAAAABBBB]})
        for *pair, offset, expect_words, why in STORES:
            count = len(expect_words) if pair[0].startswith("dword") else 1
            data = "v10" if count == 1 else f"v[10:{9 + count}]"   # gfx942 wants even tuples
            data_inputs = {"v10.u32": [0x12345678], "v11.u32": [0xA2], "v12.u32": [0xA3],
                           "v13.u32": [0xA4], "v9.u32": [0]}
            vaddr = "v9"
            where = {"global": f"{vaddr}, {data}, s[20:21]", "flat": f"v[20:21], {data}",
                     "scratch": f"{vaddr}, {data}, off"}[seg]
            line = f"{seg}_store_{pair[names]} {where} offset:{offset}"
            inputs = {**data_inputs, "exec": "1"}
            if seg == "scratch":
                inputs["scratch"] = bytes(32)
                expect = {"scratch": bytes(8) + _as_bytes(expect_words)}
            else:
                inputs["mem"] = [0] * 8
                expect = {"mem": [0, 0] + expect_words}
            CASES.append(case(target, line, inputs, expect, why))


# --- global / flat atomics -----------------------------------------------------------------------
def f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


ATOMICS32 = [  # (gfx9, gfx12, old, data, new, why)
    ("add", "add_u32", M32, 2, 1, "wraps"),
    ("sub", "sub_u32", 1, 2, M32, "wraps"),
    ("and", "and_b32", 0xFF00FF00, 0x0F0F0F0F, 0x0F000F00, "and"),
    ("or", "or_b32", 0xFF00FF00, 0x0F0F0F0F, 0xFF0FFF0F, "or"),
    ("xor", "xor_b32", 0xFF00FF00, 0x0F0F0F0F, 0xF00FF00F, "xor"),
    ("swap", "swap_b32", 5, 9, 9, "exchange"),
    ("smin", "min_i32", M32, 2, M32, "signed: -1 < 2"),
    ("smax", "max_i32", M32, 2, 2, "signed"),
    ("umin", "min_u32", M32, 2, 2, "unsigned"),
    ("umax", "max_u32", M32, 2, M32, "unsigned"),
    ("inc", "inc_u32", 5, 5, 0, "old >= data wraps to 0"),
    ("dec", "dec_u32", 0, 7, 7, "old == 0 wraps to data"),
    ("add_f32", "add_f32", f32(1.5), f32(2.25), f32(3.75), "float add"),
    (None, "min_num_f32", f32(1.0), f32(-2.0), f32(-2.0), "float min"),
    (None, "max_num_f32", f32(1.0), f32(-2.0), f32(1.0), "float max"),
]
ATOMICS64 = [
    ("add_x2", "add_u64", M64, 2, 1, "64-bit wrap"),
    ("sub_x2", "sub_u64", 1, 2, M64, "64-bit wrap"),
    ("and_x2", "and_b64", 0xFF00FF00_00000001, 0x0F0F0F0F_00000001, 0x0F000F00_00000001, "and"),
    ("or_x2", "or_b64", 0xFF00FF00_00000001, 0x0F0F0F0F_00000000, 0xFF0FFF0F_00000001, "or"),
    ("xor_x2", "xor_b64", 0xFF00FF00_00000001, 0x0F0F0F0F_00000001, 0xF00FF00F_00000000, "xor"),
    ("swap_x2", "swap_b64", 5, 1 << 40, 1 << 40, "exchange"),
    ("smin_x2", "min_i64", M64, 2, M64, "signed: -1 < 2"),
    ("smax_x2", "max_i64", M64, 2, 2, "signed"),
    ("umin_x2", "min_u64", M64, 2, 2, "unsigned"),
    ("umax_x2", "max_u64", M64, 2, M64, "unsigned"),
    ("inc_x2", None, 5, 5, 0, "old >= data wraps to 0"),
    ("dec_x2", None, 0, 7, 7, "old == 0 wraps to data"),
    ("add_f64", None, f64(1.5), f64(2.25), f64(3.75), "float add"),
    ("min_f64", None, f64(1.0), f64(-2.0), f64(-2.0), "float min"),
    ("max_f64", None, f64(1.0), f64(-2.0), f64(1.0), "float max"),
]
RETURN = {"gfx942": "sc0", "gfx1201": "th:TH_ATOMIC_RETURN"}

for seg in ("global", "flat"):
    for target, names in (("gfx942", 0), ("gfx1201", 1)):
        for *pair, old, data, new, why in ATOMICS32:
            if pair[names] is None:
                continue
            addr = "v4, v5, s[20:21]" if seg == "global" else "v[20:21], v5"
            line = f"{seg}_atomic_{pair[names]} v3, {addr} offset:8 {RETURN[target]}"
            CASES.append(case(target, line, {"v4.u32": [0], "v5.u32": [data], "exec": "1",
                                             "mem": [0, 0, old, 0x5A5A5A5A]},
                              {"v3.u32": [old], "mem": [0, 0, new, 0x5A5A5A5A]},
                              why + "; returns the old value; the next dword is untouched"))
        for *pair, old, data, new, why in ATOMICS64:
            if pair[names] is None:
                continue
            addr = "v4, v[6:7], s[20:21]" if seg == "global" else "v[20:21], v[6:7]"
            line = f"{seg}_atomic_{pair[names]} v[8:9], {addr} offset:8 {RETURN[target]}"
            CASES.append(case(target, line, {"v4.u32": [0], "v6.u64": [data], "exec": "1",
                                             "mem": [0, 0, old & M32, old >> 32]},
                              {"v8.u64": [old], "mem": [0, 0, new & M32, new >> 32]},
                              why + "; returns the old value"))
        # cmpswap: data = (new value, compare value)
        name32, name64 = ("cmpswap", "cmpswap_x2") if target == "gfx942" else \
            ("cmpswap_b32", "cmpswap_b64")
        addr = "v4, v[6:7], s[20:21]" if seg == "global" else "v[20:21], v[6:7]"
        for cmp, new in ((5, 9), (4, 5)):
            CASES.append(case(target, f"{seg}_atomic_{name32} v3, {addr} offset:8 {RETURN[target]}",
                              {"v4.u32": [0], "v6.u32": [9], "v7.u32": [cmp], "exec": "1",
                               "mem": [0, 0, 5]},
                              {"v3.u32": [5], "mem": [0, 0, new]},
                              f"memory 5, compare {cmp}: "
                              + ("swaps in 9" if new == 9 else "no swap")))
        addr = "v4, v[12:15], s[20:21]" if seg == "global" else "v[20:21], v[12:15]"
        CASES.append(case(target, f"{seg}_atomic_{name64} v[8:9], {addr} offset:8 {RETURN[target]}",
                          {"v4.u32": [0], "v12.u64": [1 << 40], "v14.u64": [(1 << 33) | 5],
                           "exec": "1", "mem": [0, 0, 5, 2]},
                          {"v8.u64": [(2 << 32) | 5], "mem": [0, 0, 0, 1 << 8]},
                          "64-bit compare equal (both halves): swaps in 2^40"))

# non-returning forms decode to the same mnemonic; one case shows memory still updates
CASES.append(case("gfx942", "global_atomic_add v4, v5, s[20:21] offset:8",
                  {"v4.u32": [0], "v5.u32": [3], "exec": "11", "mem": [0, 0, 10]},
                  {"mem": [0, 0, 16], "v3.u32": [KEEP_MARK]}, "two lanes add 3 each; no return"))

# --- LDS ------------------------------------------------------------------------------------------
DS_LOADS = [  # (gfx9 read_*, gfx12 load_*, byte offset, count, expected, why)
    ("u8", "u8", 9, 1, [0xF0], "zero-extended byte"),
    ("i8", "i8", 9, 1, [0xFFFFFFF0], "sign-extended byte"),
    ("u16", "u16", 10, 1, [0x8281], "zero-extended short"),
    ("i16", "i16", 10, 1, [0xFFFF8281], "sign-extended short"),
    ("b32", "b32", 12, 1, [0x44332211], "dword"),
    ("b64", "b64", 16, 2, [0x88776655, 0xCCBBAA99], "two dwords"),
    ("b96", "b96", 12, 3, [0x44332211, 0x88776655, 0xCCBBAA99], "three dwords"),
    ("b128", "b128", 16, 4, [0x88776655, 0xCCBBAA99, 0x00FFEEDD, 0], "four dwords"),
]
DS_D16 = [
    ("u8_d16", 9, 0xAAAA00F0), ("i8_d16", 9, 0xAAAAFFF0), ("u16_d16", 10, 0xAAAA8281),
    ("u8_d16_hi", 9, 0x00F0BBBB), ("i8_d16_hi", 9, 0xFFF0BBBB), ("u16_d16_hi", 10, 0x8281BBBB),
]
for target, read, write in (("gfx942", "read", "write"), ("gfx1201", "load", "store")):
    for n9, n12, offset, count, want, why in DS_LOADS:
        CASES.append(case(target, f"ds_{read}_{n9} {_dst(count)}, v4 offset:{offset}",
                          {"v4.u32": [0], "lds": WORDS, "exec": "1"},
                          {f"v{8 + i}.u32": [w, KEEP_MARK] for i, w in enumerate(want)},
                          why + "; lane 1 is outside EXEC"))
    for name, offset, want in DS_D16:
        CASES.append(case(target, f"ds_{read}_{name} v8, v4 offset:{offset}",
                          {"v4.u32": [0], "v8.u32": [0xAAAABBBB], "lds": WORDS},
                          {"v8.u32": [want]}, "d16: one half replaced, the other kept"))
    for name, offset, count, want, why in (
            ("b8", 9, 1, [0x00007800], "low byte"), ("b16", 10, 1, [0x56780000], "low short"),
            ("b8_d16_hi", 9, 1, [0x00003400], "byte 2"),
            ("b16_d16_hi", 10, 1, [0x12340000], "high short"),
            ("b32", 8, 1, [0x12345678], "dword"), ("b64", 8, 2, [0x12345678, 0xA2], "two"),
            ("b96", 8, 3, [0x12345678, 0xA2, 0xA3], "three"),
            ("b128", 8, 4, [0x12345678, 0xA2, 0xA3, 0xA4], "four")):
        data = "v10" if count == 1 else f"v[10:{9 + count}]"
        CASES.append(case(target, f"ds_{write}_{name} v9, {data} offset:{offset}",
                          {"v10.u32": [0x12345678], "v11.u32": [0xA2], "v12.u32": [0xA3],
                           "v13.u32": [0xA4], "v9.u32": [0], "lds": [0] * 8, "exec": "1"},
                          {"lds": [0, 0] + want}, why))
    # ADDR + OFFSET is a 32-bit sum: a wrapped ("negative") address plus the offset lands
    # inside LDS, as clang folds offsets into addresses like 0 - 4 * lane.
    CASES.append(case(target, f"ds_{read}_b32 v8, v4 offset:16",
                      {"v4.u32": [0xFFFFFFFC, 0xFFFFFFF8], "lds": WORDS},
                      {"v8.u32": [0x44332211, 0x8281F0E1]}, "address -4 / -8 + 16 wraps to 12 / 8"))
    CASES.append(case(target, f"ds_{write}_b32 v4, v10 offset:12",
                      {"v4.u32": [0xFFFFFFFC], "v10.u32": [0x12345678], "lds": [0] * 4,
                       "exec": "1"},
                      {"lds": [0, 0, 0x12345678, 0]}, "address -4 + 12 wraps to 8"))
    CASES.append(case(target, "ds_add_rtn_u32 v3, v4, v5 offset:12",
                      {"v4.u32": [0xFFFFFFFC], "v5.u32": [5], "lds": [0, 0, 7, 0], "exec": "1"},
                      {"v3.u32": [7], "lds": [0, 0, 12, 0]}, "atomic at -4 + 12 = 8"))
    two_r, two_w, st_r, st_w = (("read2", "write2", "read2st64", "write2st64") if target == "gfx942"
                                else ("load_2addr", "store_2addr", "load_2addr_stride64",
                                      "store_2addr_stride64"))
    CASES.append(case(target, f"ds_{two_r}_b32 v[8:9], v4 offset0:2 offset1:5",
                      {"v4.u32": [0], "lds": [0, 0, 7, 0, 0, 9]}, {"v8.u32": [7], "v9.u32": [9]},
                      "two dwords at offset0*4 and offset1*4"))
    CASES.append(case(target, f"ds_{two_r}_b64 v[8:11], v4 offset0:1 offset1:3",
                      {"v4.u32": [0], "lds": [0, 0, 1, 2, 0, 0, 3, 4]},
                      {"v8.u32": [1], "v9.u32": [2], "v10.u32": [3], "v11.u32": [4]},
                      "two qwords at offset*8"))
    CASES.append(case(target, f"ds_{st_r}_b32 v[8:9], v4 offset0:0 offset1:1",
                      {"v4.u32": [0], "lds": [7] + [0] * 63 + [9]},
                      {"v8.u32": [7], "v9.u32": [9]}, "stride 64 elements: dword 64"))
    CASES.append(case(target, f"ds_{st_r}_b64 v[8:11], v4 offset0:0 offset1:1",
                      {"v4.u32": [0], "lds": [1, 2] + [0] * 126 + [3, 4]},
                      {"v8.u32": [1], "v9.u32": [2], "v10.u32": [3], "v11.u32": [4]},
                      "stride 64 qwords: byte 512"))
    CASES.append(case(target, f"ds_{two_w}_b32 v4, v5, v6 offset0:2 offset1:5",
                      {"v4.u32": [0], "v5.u32": [7], "v6.u32": [9], "exec": "1", "lds": [0] * 6},
                      {"lds": [0, 0, 7, 0, 0, 9]}, "two dwords"))
    CASES.append(case(target, f"ds_{two_w}_b64 v4, v[6:7], v[8:9] offset0:1 offset1:3",
                      {"v4.u32": [0], "v6.u64": [(2 << 32) | 1], "v8.u64": [(4 << 32) | 3],
                       "exec": "1", "lds": [0] * 8},
                      {"lds": [0, 0, 1, 2, 0, 0, 3, 4]}, "two qwords"))
    CASES.append(case(target, f"ds_{st_w}_b32 v4, v5, v6 offset0:0 offset1:1",
                      {"v4.u32": [0], "v5.u32": [7], "v6.u32": [9], "exec": "1",
                       "lds": [0] * 65}, {"lds": [7] + [0] * 63 + [9]}, "stride 64 dwords"))
    CASES.append(case(target, f"ds_{st_w}_b64 v4, v[6:7], v[8:9] offset0:0 offset1:1",
                      {"v4.u32": [0], "v6.u64": [(2 << 32) | 1], "v8.u64": [(4 << 32) | 3],
                       "exec": "1", "lds": [0] * 130}, {"lds": [1, 2] + [0] * 126 + [3, 4]},
                      "stride 64 qwords"))

DS_ATOMICS32 = [  # (gfx9 op, gfx12 op, old, data, new)
    ("add_u32", "add_u32", M32, 2, 1), ("sub_u32", "sub_u32", 1, 2, M32),
    ("rsub_u32", "rsub_u32", 2, 1, M32), ("inc_u32", "inc_u32", 5, 5, 0),
    ("dec_u32", "dec_u32", 0, 7, 7), ("min_i32", "min_i32", M32, 2, M32),
    ("max_i32", "max_i32", M32, 2, 2), ("min_u32", "min_u32", M32, 2, 2),
    ("max_u32", "max_u32", M32, 2, M32), ("and_b32", "and_b32", 0xFF00FF00, 0x0F0F0F0F, 0x0F000F00),
    ("or_b32", "or_b32", 0xFF00FF00, 0x0F0F0F0F, 0xFF0FFF0F),
    ("xor_b32", "xor_b32", 0xFF00FF00, 0x0F0F0F0F, 0xF00FF00F),
    ("add_f32", "add_f32", f32(1.5), f32(2.25), f32(3.75)),
    ("min_f32", "min_num_f32", f32(1.0), f32(-2.0), f32(-2.0)),
    ("max_f32", "max_num_f32", f32(1.0), f32(-2.0), f32(1.0)),
]
DS_ATOMICS64 = [
    ("add_u64", "add_u64", M64, 2, 1), ("sub_u64", "sub_u64", 1, 2, M64),
    ("rsub_u64", "rsub_u64", 2, 1, M64), ("inc_u64", "inc_u64", 5, 5, 0),
    ("dec_u64", "dec_u64", 0, 7, 7), ("min_i64", "min_i64", M64, 2, M64),
    ("max_i64", "max_i64", M64, 2, 2), ("min_u64", "min_u64", M64, 2, 2),
    ("max_u64", "max_u64", M64, 2, M64),
    ("and_b64", "and_b64", 0xFF00FF00_00000001, 0x0F0F0F0F_00000001, 0x0F000F00_00000001),
    ("or_b64", "or_b64", 0xFF00FF00_00000001, 0x0F0F0F0F_00000000, 0xFF0FFF0F_00000001),
    ("xor_b64", "xor_b64", 0xFF00FF00_00000001, 0x0F0F0F0F_00000001, 0xF00FF00F_00000000),
    ("add_f64", None, f64(1.5), f64(2.25), f64(3.75)),
    ("min_f64", "min_num_f64", f64(1.0), f64(-2.0), f64(-2.0)),
    ("max_f64", "max_num_f64", f64(1.0), f64(-2.0), f64(1.0)),
]
for target, idx in (("gfx942", 0), ("gfx1201", 1)):
    for *pair, old, data, new in DS_ATOMICS32:
        op = pair[idx]
        stem, ty = op.rsplit("_", 1)
        for rtn in (False, True):
            name = f"ds_{stem}_rtn_{ty}" if rtn else f"ds_{op}"
            line = f"ds_{stem}_rtn_{ty} v3, v4, v5 offset:8" if rtn else f"{name} v4, v5 offset:8"
            expect = {"lds": [0, 0, new, 0x5A5A5A5A]}
            if rtn:
                expect["v3.u32"] = [old]
            CASES.append(case(target, line, {"v4.u32": [0], "v5.u32": [data], "exec": "1",
                                             "lds": [0, 0, old, 0x5A5A5A5A]}, expect,
                              f"{op}: {old:#x} op {data:#x} = {new:#x}"
                              + (" (returns the old value)" if rtn else "")))
    for *pair, old, data, new in DS_ATOMICS64:
        op = pair[idx]
        if op is None:
            continue
        stem, ty = op.rsplit("_", 1)
        for rtn in (False, True):
            line = f"ds_{stem}_rtn_{ty} v[8:9], v4, v[6:7] offset:8" if rtn else \
                f"ds_{op} v4, v[6:7] offset:8"
            expect = {"lds": [0, 0, new & M32, new >> 32]}
            if rtn:
                expect["v8.u64"] = [old]
            CASES.append(case(target, line, {"v4.u32": [0], "v6.u64": [data], "exec": "1",
                                             "lds": [0, 0, old & M32, old >> 32]}, expect,
                              f"{op} 64-bit" + (" (returns the old value)" if rtn else "")))
    xchg = "wrxchg" if target == "gfx942" else "storexchg"
    CASES.append(case(target, f"ds_{xchg}_rtn_b32 v3, v4, v5 offset:8",
                      {"v4.u32": [0], "v5.u32": [9], "exec": "1", "lds": [0, 0, 5]},
                      {"v3.u32": [5], "lds": [0, 0, 9]}, "exchange, returns old"))
    CASES.append(case(target, f"ds_{xchg}_rtn_b64 v[8:9], v4, v[6:7] offset:8",
                      {"v4.u32": [0], "v6.u64": [1 << 40], "exec": "1", "lds": [0, 0, 5, 0]},
                      {"v8.u64": [5], "lds": [0, 0, 0, 1 << 8]}, "64-bit exchange"))

# compare-store: gfx9 ds_cmpst_* take (compare, new); gfx12 ds_cmpstore_* take (new, compare).
for rtn in ("", "_rtn"):
    ret32, ret64 = ("v3, ", "v[10:11], ") if rtn else ("", "")
    for ty, cmp_value, new_value in (("b32", 5, 9), ("f32", f32(-0.0), f32(2.0))):
        old = 5 if ty == "b32" else f32(0.0)
        expect = {"lds": [0, 0, new_value]}
        if rtn:
            expect["v3.u32"] = [old]
        why = "equal: stores the new value" + (" (-0.0 == +0.0 as floats)" if ty == "f32" else "")
        CASES.append(case("gfx942", f"ds_cmpst{rtn}_{ty} {ret32}v4, v5, v6 offset:8",
                          {"v4.u32": [0], "v5.u32": [cmp_value], "v6.u32": [new_value],
                           "exec": "1", "lds": [0, 0, old]}, expect, why))
    for ty in ("b64", "f64"):
        expect = {"lds": [0, 0, 9, 0]}
        if rtn:
            expect["v10.u64"] = [f64(1.0) if ty == "f64" else 5]
        old = f64(1.0) if ty == "f64" else 5
        CASES.append(case("gfx942", f"ds_cmpst{rtn}_{ty} {ret64}v4, v[6:7], v[8:9] offset:8",
                          {"v4.u32": [0], "v6.u64": [old], "v8.u64": [9], "exec": "1",
                           "lds": [0, 0, old & M32, old >> 32]}, expect,
                          "equal: stores the new value"))
    CASES.append(case("gfx1201", f"ds_cmpstore{rtn}_b32 {ret32}v4, v5, v6 offset:8",
                      {"v4.u32": [0], "v5.u32": [9], "v6.u32": [5], "exec": "1",
                       "lds": [0, 0, 5]},
                      {"lds": [0, 0, 9], **({"v3.u32": [5]} if rtn else {})},
                      "data0 is the new value, data1 the compare value"))
    CASES.append(case("gfx1201", f"ds_cmpstore{rtn}_b32 {ret32}v4, v5, v6 offset:8",
                      {"v4.u32": [0], "v5.u32": [9], "v6.u32": [4], "exec": "1",
                       "lds": [0, 0, 5]},
                      {"lds": [0, 0, 5], **({"v3.u32": [5]} if rtn else {})},
                      "compare value differs: memory unchanged"))
    CASES.append(case("gfx1201", f"ds_cmpstore{rtn}_b64 {ret64}v4, v[6:7], v[8:9] offset:8",
                      {"v4.u32": [0], "v6.u64": [9], "v8.u64": [5], "exec": "1",
                       "lds": [0, 0, 5, 0]},
                      {"lds": [0, 0, 9, 0], **({"v10.u64": [5]} if rtn else {})},
                      "64-bit: data0 new, data1 compare"))

# cross-lane DS: permute pushes to lane addr/4, bpermute pulls from it; swizzle is an immediate
for target in ("gfx942", "gfx1201"):
    lanes_in = {"v4.u32": [4, 0, 12, 8], "v5.u32": [10, 11, 12, 13]}
    CASES.append(case(target, "ds_bpermute_b32 v3, v4, v5", lanes_in,
                      {"v3.u32": [11, 10, 13, 12]}, "lane i reads v5 of lane v4[i]/4"))
    CASES.append(case(target, "ds_permute_b32 v3, v4, v5", lanes_in,
                      {"v3.u32": [11, 10, 13, 12]}, "lane i writes its v5 to lane v4[i]/4"))
    CASES.append(case(target, "ds_swizzle_b32 v3, v5 offset:swizzle(QUAD_PERM,3,2,1,0)",
                      lanes_in, {"v3.u32": [13, 12, 11, 10]}, "reverses each quad"))
    CASES.append(case(target, "ds_nop", {"v3.u32": [1], "lds": [7]},
                      {"v3.u32": [1], "lds": [7]}, "no effect"))

# --- addressing forms -----------------------------------------------------------------------------
for target, g_load, s_load, f_load in (("gfx942", "global_load_dword", "scratch_load_dword",
                                        "flat_load_dword"),
                                       ("gfx1201", "global_load_b32", "scratch_load_b32",
                                        "flat_load_b32")):
    CASES.append(case(target, f"{g_load} v8, v4, s[20:21] offset:-4",
                      {"v4.u32": [12], "mem": WORDS}, {"v8.u32": [0x8281F0E1]},
                      "the immediate offset is signed: 12 - 4 = byte 8"))
    CASES.append(case(target, f"{g_load} v8, v[20:21], off offset:8", {"mem": WORDS},
                      {"v8.u32": [0x8281F0E1]}, "no SGPR base: a 64-bit VGPR address"))
    CASES.append(case(target, f"{s_load} v8, off, s0 offset:8",
                      {"s0.u32": 4, "scratch": bytes(range(32))}, {"v8.u32": [0x0F0E0D0C]},
                      "SGPR offset 4 + immediate 8 = private byte 12"))
    CASES.append(case(target, f"{f_load} v8, v[0:1]", {"v0.u64": [(1 << 48) + 8], "lds": WORDS},
                      {"v8.u32": [0x8281F0E1]},
                      "a flat address in the shared aperture (base 2^48 here) reads LDS"))
CASES.append(case("gfx942", "flat_store_dword v[0:1], v3",
                  {"v0.u64": [(1 << 48) + 8], "v3.u32": [5], "exec": "1", "lds": [0, 0, 0]},
                  {"lds": [0, 0, 5]}, "a flat store through the shared aperture writes LDS"))
CASES.append(case("gfx942", "ds_add_rtn_f32 v3, v4, v5",
                  {"v4.u32": [0], "v5.f32": [1.0], "exec": "111", "lds": [0]},
                  {"lds": [0x40400000], "v3.f32": [0.0, 1.0, 2.0]},
                  "three lanes add 1.0 to one word in lane order: returns 0, 1, 2; LDS holds 3.0"))
CASES.append(case("gfx942", "global_atomic_min_f64 v[8:9], v4, v[6:7], s[20:21] offset:8 sc0",
                  {"v4.u32": [0], "v6.f64": [float("nan")], "exec": "1",
                   "mem": [0, 0, 0, 0x3FF00000]},
                  {"mem": [0, 0, 0, 0x3FF00000], "v8.f64": [1.0]},
                  "min with a NaN operand keeps the number (minNum)"))

# --- LDS instructions beyond the one-data atomics ------------------------------------------------
def _h(x: float) -> int:
    return struct.unpack("<H", struct.pack("<e", x))[0]


def _bh(x: float) -> int:
    return f32(x) >> 16


for target, m0 in (("gfx942", "s124.u32"), ("gfx1201", "s125.u32")):
    xchg2, st64 = (("wrxchg2", "wrxchg2st64") if target == "gfx942" else
                   ("storexchg_2addr", "storexchg_2addr_stride64"))
    for rtn in ("", "_rtn"):
        ret32, ret64 = ("v3, ", "v[10:11], ") if rtn else ("", "")
        expect = {"v3.u32": [0xF0F0F0F0]} if rtn else {}
        CASES.append(case(target, f"ds_mskor{rtn}_b32 {ret32}v4, v5, v6 offset:8",
                          {"v4.u32": [0], "v5.u32": [0x00FF00FF], "v6.u32": [0x0000000F],
                           "exec": "1", "lds": [0, 0, 0xF0F0F0F0]},
                          {"lds": [0, 0, 0xF000F00F], **expect},
                          "(old & ~data0) | data1" + (", returns old" if rtn else "")))
        CASES.append(case(target, f"ds_mskor{rtn}_b64 {ret64}v4, v[6:7], v[8:9] offset:8",
                          {"v4.u32": [0], "v6.u64": [M64], "v8.u64": [(5 << 32) | 3],
                           "exec": "1", "lds": [0, 0, 7, 9]},
                          {"lds": [0, 0, 3, 5], **({"v10.u64": [(9 << 32) | 7]} if rtn else {})},
                          "64-bit mask-or: all bits masked, then or-ed with data1"))
        for ty, old, data, new in (("f16", _h(1.5) | _h(2.0) << 16, _h(0.5) | _h(-4.0) << 16,
                                    _h(2.0) | _h(-2.0) << 16),
                                   ("bf16", _bh(1.5) | _bh(2.0) << 16,
                                    _bh(0.5) | _bh(-4.0) << 16, _bh(2.0) | _bh(-2.0) << 16)):
            CASES.append(case(target, f"ds_pk_add{rtn}_{ty} {ret32}v4, v5 offset:8",
                              {"v4.u32": [0], "v5.u32": [data], "exec": "1",
                               "lds": [0, 0, old]},
                              {"lds": [0, 0, new], **({"v3.u32": [old]} if rtn else {})},
                              f"two {ty} adds in one dword"))
    if target == "gfx942":    # no DS_WRAP on gfx12
        CASES.append(case(target, "ds_wrap_rtn_b32 v3, v4, v5, v6 offset:8",
                          {"v4.u32": [0, 4], "v5.u32": [5], "v6.u32": [100], "exec": "11",
                           "lds": [0, 0, 7, 3]},
                          {"v3.u32": [7, 3], "lds": [0, 0, 2, 103]},
                          "old >= data0: old - data0 (7 -> 2); else old + data1 (3 -> 103)"))
    CASES.append(case(target, f"ds_{xchg2}_rtn_b32 v[8:9], v4, v5, v6 offset0:1 offset1:3",
                      {"v4.u32": [0], "v5.u32": [11], "v6.u32": [33], "exec": "1",
                       "lds": [0, 1, 2, 3]},
                      {"v8.u32": [1], "v9.u32": [3], "lds": [0, 11, 2, 33]},
                      "two exchanges at offset0 * 4 and offset1 * 4, both old values returned"))
    CASES.append(case(target, f"ds_{st64}_rtn_b32 v[8:9], v4, v5, v6 offset0:0 offset1:1",
                      {"v4.u32": [0], "v5.u32": [11], "v6.u32": [33], "exec": "1",
                       "lds": [1] + [0] * 63 + [2]},
                      {"v8.u32": [1], "v9.u32": [2], "lds": [11] + [0] * 63 + [33]},
                      "stride 64 elements: dword 64"))
    CASES.append(case(target, f"ds_{xchg2}_rtn_b64 v[8:11], v4, v[12:13], v[14:15] offset0:1 offset1:2",
                      {"v4.u32": [0], "v12.u64": [1 << 40], "v14.u64": [7], "exec": "1",
                       "lds": [0, 0, 5, 0, 6, 0]},
                      {"v8.u64": [5], "v10.u64": [6], "lds": [0, 0, 0, 1 << 8, 7, 0]},
                      "two 64-bit exchanges at offset * 8"))
    CASES.append(case(target, f"ds_{st64}_rtn_b64 v[8:11], v4, v[12:13], v[14:15] offset0:0 offset1:1",
                      {"v4.u32": [0], "v12.u64": [1 << 40], "v14.u64": [7], "exec": "1",
                       "lds": [5, 0] + [0] * 126 + [6, 0]},
                      {"v8.u64": [5], "v10.u64": [6],
                       "lds": [0, 1 << 8] + [0] * 126 + [7, 0]}, "stride 64 qwords: byte 512"))
    for name, delta in (("ds_append", 3), ("ds_consume", -3)):
        CASES.append(case(target, f"{name} v3 offset:4",
                          {m0: 4, "exec": "1101", "lds": [0, 0, 10]},
                          {"v3.u32": [10, 10, KEEP_MARK, 10], "lds": [0, 0, 10 + delta]},
                          "EXEC has 3 lanes: the dword at M0 + 4 changes by 3; every active lane "
                          "gets the value before"))
    load, store = (("ds_read_addtid_b32", "ds_write_addtid_b32") if target == "gfx942" else
                   ("ds_load_addtid_b32", "ds_store_addtid_b32"))
    CASES.append(case(target, f"{load} v3 offset:4", {m0: 4, "lds": [0, 0, 7, 8, 9]},
                      {"v3.u32": [7, 8, 9]}, "lane l reads the dword at M0 + 4 + 4 l"))
    CASES.append(case(target, f"{store} v3 offset:4",
                      {m0: 4, "v3.u32": [7, 8, 9], "exec": "111", "lds": [0] * 6},
                      {"lds": [0, 0, 7, 8, 9, 0]}, "lane l writes the dword at M0 + 4 + 4 l"))
for rtn in ("", "_rtn"):
    ret = "v3, " if rtn else ""
    for op, old, data, new in (("cond_sub", 9, 5, 4), ("cond_sub", 3, 5, 3),
                               ("sub_clamp", 9, 5, 4), ("sub_clamp", 3, 5, 0)):
        CASES.append(case("gfx1201", f"ds_{op}{rtn}_u32 {ret}v4, v5 offset:8",
                          {"v4.u32": [0], "v5.u32": [data], "exec": "1", "lds": [0, 0, old]},
                          {"lds": [0, 0, new], **({"v3.u32": [old]} if rtn else {})},
                          f"{op}: {old} with {data} -> {new}"))
CASES.append(case("gfx1201", "global_load_addtid_b32 v3, s[20:21] offset:8", {"mem": WORDS},
                  {"v3.u32": WORDS[2:6]}, "lane l loads the dword at SADDR + 8 + 4 l"))
CASES.append(case("gfx1201", "global_store_addtid_b32 v3, s[20:21] offset:8",
                  {"v3.u32": [7, 8, 9], "exec": "111", "mem": [0] * 6},
                  {"mem": [0, 0, 7, 8, 9, 0]}, "lane l stores at SADDR + 8 + 4 l"))
