"""Hand-checked cases: buffer instructions (gfx942 MUBUF/MTBUF, gfx1201 VBUFFER), the scalar
buffer/store/atomic forms (gfx942 SMEM) and flat atomics that land in LDS or scratch.

Buffer cases address the runner's "mem" buffer through a V# in s[8:11] (``"rsrc"``: its base is
the buffer's address). Lane 0 accesses in range, lane 1 out of range (offset 28 with 28 bytes of
records, unless a case says otherwise): out-of-range loads give 0, stores and atomics leave the
dword at byte 28 (0x5A5A5A5A) untouched. The V# word 3 of gfx942 raw buffers is CK's
0x00020000 (32-bit data format; untyped instructions ignore it); gfx1201 raw buffers use
OOB_SELECT 3 (bits 29:28).
"""
from __future__ import annotations

import struct

import numpy as np
from isa_hand_runner import KEEP_MARK, case

CASES = []
M32 = 0xFFFFFFFF
M64 = 2 ** 64 - 1
SENTINEL = 0x5A5A5A5A
WORDS = [0, 0, 0x8281F0E1, 0x44332211, 0x88776655, 0xCCBBAA99, 0x00FFEEDD, SENTINEL]
RECORDS = 28
XYZW = 4 | 5 << 3 | 6 << 6 | 7 << 9        # V# dst_sel: X, Y, Z, W
RAW9 = (8, 0, RECORDS, 0x00020000)
RAW12 = (8, 0, RECORDS, 3 << 28)
RAW = {"gfx942": RAW9, "gfx1201": RAW12}
SOFF = {"gfx942": "0", "gfx1201": "null"}
RETURN = {"gfx942": "sc0", "gfx1201": "th:TH_ATOMIC_RETURN"}


def f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def f16(x: float) -> int:
    return int(np.float16(x).view(np.uint16))


def bf16(x: float) -> int:
    return f32(x) >> 16


def _regs(first: int, count: int) -> str:
    return f"v{first}" if count == 1 else f"v[{first}:{first + count - 1}]"


def rsrc9(records: int = RECORDS, stride: int = 0, dfmt: int = 4, nfmt: int = 0,
          sel: int = XYZW, swizzle: bool = False, word3: int = 0) -> tuple:
    """gfx9 V#: NUM_FORMAT [14:12], DATA_FORMAT [18:15] (CDNA3 guide, "Buffer Resource")."""
    return (8, stride << 16 | int(swizzle) << 31, records,
            sel | nfmt << 12 | dfmt << 15 | word3)


def rsrc12(records: int = RECORDS, stride: int = 0, oob: int = 3, fmt: int = 20,
           sel: int = XYZW, swizzle: int = 0, word3: int = 0) -> tuple:
    """gfx12 V#: FORMAT [17:12], OOB_SELECT [29:28], SWIZZLE_ENABLE [63:62]."""
    return (8, stride << 16 | swizzle << 30, records, sel | fmt << 12 | oob << 28 | word3)


# --- untyped loads: lane 0 in range, lane 1 past num_records ------------------------------------
LOADS = [  # (gfx942, gfx1201, lane 0 offset, lane 1 offset, dwords, expected per register, why)
    ("ubyte", "u8", 9, 28, 1, [[0xF0, 0]], "zero-extended byte"),
    ("sbyte", "i8", 9, 28, 1, [[0xFFFFFFF0, 0]], "sign-extended byte"),
    ("ushort", "u16", 10, 28, 1, [[0x8281, 0]], "zero-extended short"),
    ("sshort", "i16", 10, 28, 1, [[0xFFFF8281, 0]], "sign-extended short"),
    ("dword", "b32", 12, 28, 1, [[0x44332211, 0]], "dword"),
    ("dwordx2", "b64", 12, 24, 2, [[0x44332211, 0x00FFEEDD], [0x88776655, 0]],
     "lane 1: the dword at 24 is in range, the one at 28 is not (checked per dword)"),
    ("dwordx3", "b96", 12, 20, 3,
     [[0x44332211, 0xCCBBAA99], [0x88776655, 0x00FFEEDD], [0xCCBBAA99, 0]], "per dword"),
    ("dwordx4", "b128", 12, 20, 4,
     [[0x44332211, 0xCCBBAA99], [0x88776655, 0x00FFEEDD], [0xCCBBAA99, 0], [0x00FFEEDD, 0]],
     "per dword: 20 and 24 in range, 28 and 32 not"),
]
D16_LOADS = [  # v8 starts 0xAAAABBBB; the loaded half is 0 out of range
    ("ubyte_d16", "d16_u8", 9, [0xAAAA00F0, 0xAAAA0000]),
    ("sbyte_d16", "d16_i8", 9, [0xAAAAFFF0, 0xAAAA0000]),
    ("short_d16", "d16_b16", 10, [0xAAAA8281, 0xAAAA0000]),
    ("ubyte_d16_hi", "d16_hi_u8", 9, [0x00F0BBBB, 0x0000BBBB]),
    ("sbyte_d16_hi", "d16_hi_i8", 9, [0xFFF0BBBB, 0x0000BBBB]),
    ("short_d16_hi", "d16_hi_b16", 10, [0x8281BBBB, 0x0000BBBB]),
]
STORES = [  # (gfx942, gfx1201, lane 0 offset, dwords of data, memory dwords 2.., why)
    ("byte", "b8", 9, 1, [0x00007800], "low byte to byte 9"),
    ("short", "b16", 10, 1, [0x56780000], "low short to bytes 10-11"),
    ("byte_d16_hi", "d16_hi_b8", 9, 1, [0x00003400], "byte 2 of the data"),
    ("short_d16_hi", "d16_hi_b16", 10, 1, [0x12340000], "high short of the data"),
    ("dword", "b32", 8, 1, [0x12345678], "one dword"),
    ("dwordx2", "b64", 8, 2, [0x12345678, 0xA2], "two dwords"),
    ("dwordx3", "b96", 8, 3, [0x12345678, 0xA2, 0xA3], "three dwords"),
    ("dwordx4", "b128", 8, 4, [0x12345678, 0xA2, 0xA3, 0xA4], "four dwords"),
]
DATA = {"v10.u32": [0x12345678], "v11.u32": [0xA2], "v12.u32": [0xA3], "v13.u32": [0xA4]}

for target, idx in (("gfx942", 0), ("gfx1201", 1)):
    soff = SOFF[target]
    for *names, off0, off1, count, want, why in LOADS:
        CASES.append(case(target, f"buffer_load_{names[idx]} {_regs(8, count)}, v4, s[8:11], {soff} offen",
                          {"v4.u32": [off0, off1], "exec": "11", "mem": WORDS, "rsrc": RAW[target]},
                          {f"v{8 + k}.u32": w for k, w in enumerate(want)}, why))
    for *names, off0, want in D16_LOADS:
        CASES.append(case(target, f"buffer_load_{names[idx]} v8, v4, s[8:11], {soff} offen",
                          {"v4.u32": [off0, 28], "v8.u32": [0xAAAABBBB], "exec": "11",
                           "mem": WORDS, "rsrc": RAW[target]}, {"v8.u32": want},
                          "d16: one half replaced (0 out of range), the other kept"))
    for *names, off0, count, want, why in STORES:
        data = _regs(10, count)
        CASES.append(case(target, f"buffer_store_{names[idx]} {data}, v4, s[8:11], {soff} offen",
                          {**DATA, "v4.u32": [off0, 28], "exec": "11", "rsrc": RAW[target],
                           "mem": [0] * 7 + [SENTINEL]},
                          {"mem": [0, 0] + want + [0] * (5 - len(want)) + [SENTINEL]},
                          why + "; lane 1 (offset 28) writes nothing"))

# --- untyped range checks per generation, both sides of each boundary ---------------------------
# Raw buffer of 28 bytes. gfx942 (CDNA3 "Range Checking"): a dword is in range when its offset
# < num_records, so a dword starting at 25 or 26 still reads (bytes past 28 are the buffer's
# zeros). gfx1201 (OOB_SELECT 3): in range only when offset + 4 <= num_records.
CASES.append(case("gfx942", "buffer_load_dword v8, v4, s[8:11], 0 offen",
                  {"v4.u32": [24, 25, 27, 28], "exec": "1111", "mem": WORDS[:7] + [0],
                   "rsrc": RAW9},
                  {"v8.u32": [0x00FFEEDD, 0x0000FFEE, 0x00000000, 0]},
                  "gfx9: offsets 24, 25, 27 are < 28 and read; 28 reads 0"))
CASES.append(case("gfx942", "buffer_load_dword v8, v4, s[8:11], 0 offen",
                  {"v4.u32": [26, 27, 28, 29], "exec": "1111", "mem": [M32] * 8,
                   "rsrc": RAW9},
                  {"v8.u32": [M32, M32, 0, 0]},
                  "gfx9: the dword at 26 reads all four bytes although two are past 28"))
CASES.append(case("gfx1201", "buffer_load_b32 v8, v4, s[8:11], null offen",
                  {"v4.u32": [24, 25, 27, 28], "exec": "1111", "mem": [M32] * 8, "rsrc": RAW12},
                  {"v8.u32": [M32, 0, 0, 0]},
                  "gfx12 OOB_SELECT 3: 24 + 4 <= 28 reads; 25 + 4 > 28 reads 0"))
CASES.append(case("gfx1201", "buffer_load_u8 v8, v4, s[8:11], null offen",
                  {"v4.u32": [27, 28], "exec": "11", "mem": [M32] * 8, "rsrc": RAW12},
                  {"v8.u32": [0xFF, 0]}, "gfx12: a byte at 27 is in range (27 + 1 <= 28)"))
CASES.append(case("gfx1201", "buffer_load_u16 v8, v4, s[8:11], null offen",
                  {"v4.u32": [26, 27], "exec": "11", "mem": [M32] * 8, "rsrc": RAW12},
                  {"v8.u32": [0xFFFF, 0]}, "gfx12: a short at 27 is out (27 + 2 > 28)"))
CASES.append(case("gfx942", "buffer_store_dword v10, v4, s[8:11], 0 offen",
                  {"v4.u32": [24, 26], "v10.u32": [0x11111111, 0x22222222], "exec": "11",
                   "mem": [0] * 9, "rsrc": (8, 0, 27, 0x20000)},
                  {"mem": [0] * 6 + [0x22221111, 0x2222, 0]},
                  "gfx9 records 27: both stores are in range (24 and 26 < 27); lane 1 writes "
                  "bytes 26-29 over lane 0's high half"))
CASES.append(case("gfx1201", "buffer_store_b32 v10, v4, s[8:11], null offen",
                  {"v4.u32": [24, 26], "v10.u32": [0x11111111, 0x22222222], "exec": "11",
                   "mem": [0] * 9, "rsrc": (8, 0, 28, 3 << 28)},
                  {"mem": [0] * 6 + [0x11111111, 0, 0]},
                  "gfx12 records 28: the dword at 26 would end at 30 > 28 and is dropped"))
# soffset never enters the check, the instruction offset does
for target in ("gfx942", "gfx1201"):
    name = {"gfx942": "buffer_load_dword", "gfx1201": "buffer_load_b32"}[target]
    CASES.append(case(target, f"{name} v8, v4, s[8:11], s12 offen",
                      {"v4.u32": [0, 4], "s12.u32": 24, "exec": "11", "mem": WORDS,
                       "rsrc": (8, 0, 4, RAW[target][3])},
                      {"v8.u32": [0x00FFEEDD, 0]},
                      "num_records 4: SOFFSET 24 is outside the check (lane 0 reads byte 24); "
                      "lane 1's VGPR offset 4 is out"))
    CASES.append(case(target, f"{name} v8, v4, s[8:11], {SOFF[target]} offen offset:4",
                      {"v4.u32": [0, 4], "exec": "11", "mem": list(range(64)),
                       "rsrc": (8, 0, 8, RAW[target][3])},
                      {"v8.u32": [1, 0]},
                      "num_records 8: the instruction offset is checked: 0 + 4 reads dword 1, "
                      "4 + 4 is out of range"))
CASES.append(case("gfx942", "buffer_load_dword v8, v4, s[8:11], 0 offen offset:8",
                  {"v4.u32": [M32 - 3, 4], "exec": "11", "mem": list(range(64)),
                   "rsrc": (8, 0, M32, 0x20000)},
                  {"v8.u32": [0, 3]},
                  "the range check does not wrap: -4 + 8 is 2^32 + 4 >= num_records 2^32 - 1"))
CASES.append(case("gfx1201", "buffer_load_b32 v8, v4, s[8:11], null offen offset:8",
                  {"v4.u32": [M32 - 3, 4], "exec": "11", "mem": list(range(64)),
                   "rsrc": (8, 0, 16, 2 << 28)},
                  {"v8.u32": [1, 3]},
                  "OOB_SELECT 2 (no check): -4 + 8 wraps to byte 4 in the 32-bit offset"))

# structured buffers: stride 8, index from the VGPR (idxen)
CASES.append(case("gfx942", "buffer_load_dword v8, v4, s[8:11], 0 idxen offset:4",
                  {"v4.u32": [1, 2, 3], "exec": "111", "mem": WORDS, "rsrc": rsrc9(3, stride=8)},
                  {"v8.u32": [0x44332211, 0xCCBBAA99, 0]},
                  "gfx9 structured: byte 8*index + 4; index 3 >= num_records 3 reads 0"))
CASES.append(case("gfx942", "buffer_load_dword v8, v[4:5], s[8:11], 0 idxen offen",
                  {"v4.u32": [1, 2], "v5.u32": [12, 4], "exec": "11", "mem": WORDS,
                   "rsrc": rsrc9(3, stride=8)},
                  {"v8.u32": [0xCCBBAA99, 0xCCBBAA99]},
                  "gfx9 structured: the offset is not checked against the stride (8 + 12)"))
CASES.append(case("gfx1201", "buffer_load_b32 v8, v[4:5], s[8:11], null idxen offen",
                  {"v4.u32": [2, 2, 3], "v5.u32": [0, 4, 0], "exec": "111", "mem": WORDS,
                   "rsrc": rsrc12(3, stride=4, oob=0)},
                  {"v8.u32": [0x8281F0E1, 0, 0]},
                  "OOB_SELECT 0, stride 4: index 2 offset 0 reads byte 8; offset 4 + 4 > stride "
                  "is out; index 3 >= 3 is out"))
CASES.append(case("gfx1201", "buffer_load_b32 v8, v[4:5], s[8:11], null idxen offen",
                  {"v4.u32": [2, 2, 3], "v5.u32": [0, 4, 0], "exec": "111", "mem": WORDS,
                   "rsrc": rsrc12(3, stride=4, oob=1)},
                  {"v8.u32": [0x8281F0E1, 0x44332211, 0]},
                  "OOB_SELECT 1: only the index is checked (offset 4 past the stride reads)"))
CASES.append(case("gfx1201", "buffer_load_b32 v8, v[4:5], s[8:11], null idxen offen",
                  {"v4.u32": [2, 3, 6], "v5.u32": [0, 0, 0], "exec": "111", "mem": WORDS,
                   "rsrc": rsrc12(3, stride=4, oob=2)},
                  {"v8.u32": [0x8281F0E1, 0x44332211, 0x00FFEEDD]},
                  "OOB_SELECT 2: nothing is checked while num_records != 0"))
CASES.append(case("gfx1201", "buffer_load_b32 v8, v4, s[8:11], null idxen",
                  {"v4.u32": [0, 1], "exec": "11", "mem": WORDS,
                   "rsrc": rsrc12(0, stride=4, oob=2)},
                  {"v8.u32": [0, 0]}, "OOB_SELECT 2 with num_records 0: everything is out"))
CASES.append(case("gfx1201", "buffer_load_b32 v8, v4, s[8:11], null idxen offset:4",
                  {"v4.u32": [2, 9], "exec": "11", "mem": list(range(64)),
                   "rsrc": rsrc12(8, stride=4)},
                  {"v8.u32": [3, 10]},
                  "OOB_SELECT 3 without swizzle checks only offset + 4 <= num_records 8: "
                  "index 9 (byte 40) is not checked"))
# swizzled addressing: element size 4 (gfx9), index stride 8, stride 16
CASES.append(case("gfx942", "buffer_load_dword v8, v[4:5], s[8:11], 0 idxen offen",
                  {"v4.u32": [1, 0, 9], "v5.u32": [0, 4, 0], "exec": "111",
                   "mem": list(range(64)),
                   "rsrc": (8, 16 << 16 | 1 << 31, 16, XYZW | 4 << 15)},
                  {"v8.u32": [1, 8, 33]},
                  "swizzled (index stride 8, element 4, stride 16): index 1 -> byte 4; offset 4 "
                  "-> element 1 of index 0 at byte 4 * 8 = 32; index 9 -> 16 * 8 + 4 = byte 132"))
CASES.append(case("gfx1201", "buffer_load_b32 v8, v[4:5], s[8:11], null idxen offen",
                  {"v4.u32": [1, 0, 9, 1], "v5.u32": [0, 4, 0, 16], "exec": "1111",
                   "mem": list(range(64)), "rsrc": rsrc12(16, stride=16, oob=3, swizzle=1)},
                  {"v8.u32": [1, 8, 33, 0]},
                  "gfx12 SWIZZLE_ENABLE 1 (4-byte elements), index stride 8: the same layout; "
                  "OOB_SELECT 3 with swizzle checks offset + 4 <= stride: offset 16 is out"))

# --- atomics -------------------------------------------------------------------------------------
ATOMICS32 = [  # (gfx942, gfx1201, old, data, new, why)
    ("add", "add_u32", M32, 2, 1, "wraps"), ("sub", "sub_u32", 1, 2, M32, "wraps"),
    ("and", "and_b32", 0xFF00FF00, 0x0F0F0F0F, 0x0F000F00, "and"),
    ("or", "or_b32", 0xFF00FF00, 0x0F0F0F0F, 0xFF0FFF0F, "or"),
    ("xor", "xor_b32", 0xFF00FF00, 0x0F0F0F0F, 0xF00FF00F, "xor"),
    ("swap", "swap_b32", 5, 9, 9, "exchange"),
    ("smin", "min_i32", M32, 2, M32, "signed: -1 < 2"), ("smax", "max_i32", M32, 2, 2, "signed"),
    ("umin", "min_u32", M32, 2, 2, "unsigned"), ("umax", "max_u32", M32, 2, M32, "unsigned"),
    ("inc", "inc_u32", 5, 5, 0, "old >= data wraps to 0"),
    ("dec", "dec_u32", 0, 7, 7, "old == 0 wraps to data"),
    ("add_f32", "add_f32", f32(1.5), f32(2.25), f32(3.75), "float add"),
    (None, "min_num_f32", f32(1.0), f32(-2.0), f32(-2.0), "float min"),
    (None, "max_num_f32", f32(1.0), f32(-2.0), f32(1.0), "float max"),
    (None, "sub_clamp_u32", 3, 5, 0, "3 - 5 clamps to 0"),
    (None, "cond_sub_u32", 3, 5, 3, "3 < 5: unchanged"),
    ("pk_add_f16", "pk_add_f16", f16(1.5) | f16(-2.0) << 16, f16(0.25) | f16(8.0) << 16,
     f16(1.75) | f16(6.0) << 16, "two f16 adds"),
    (None, "pk_add_bf16", bf16(1.5) | bf16(-2.0) << 16, bf16(0.25) | bf16(8.0) << 16,
     bf16(1.75) | bf16(6.0) << 16, "two bf16 adds"),
]
ATOMICS64 = [
    ("add_x2", "add_u64", M64, 2, 1, "64-bit wrap"), ("sub_x2", "sub_u64", 1, 2, M64, "wrap"),
    ("and_x2", "and_b64", 0xFF00FF00_00000001, 0x0F0F0F0F_00000001, 0x0F000F00_00000001, "and"),
    ("or_x2", "or_b64", 0xFF00FF00_00000001, 0x0F0F0F0F_00000000, 0xFF0FFF0F_00000001, "or"),
    ("xor_x2", "xor_b64", 0xFF00FF00_00000001, 0x0F0F0F0F_00000001, 0xF00FF00F_00000000, "xor"),
    ("swap_x2", "swap_b64", 5, 1 << 40, 1 << 40, "exchange"),
    ("smin_x2", "min_i64", M64, 2, M64, "signed"), ("smax_x2", "max_i64", M64, 2, 2, "signed"),
    ("umin_x2", "min_u64", M64, 2, 2, "unsigned"), ("umax_x2", "max_u64", M64, 2, M64, "unsigned"),
    ("inc_x2", "inc_u64", 5, 5, 0, "wraps to 0"), ("dec_x2", "dec_u64", 0, 7, 7, "wraps to data"),
    ("add_f64", None, f64(1.5), f64(2.25), f64(3.75), "float add"),
    ("min_f64", None, f64(1.0), f64(-2.0), f64(-2.0), "float min"),
    ("max_f64", None, f64(1.0), f64(-2.0), f64(1.0), "float max"),
]
for target, idx in (("gfx942", 0), ("gfx1201", 1)):
    soff, rtn = SOFF[target], RETURN[target]
    for *names, old, data, new, why in ATOMICS32:
        if names[idx] is None:
            continue
        CASES.append(case(target, f"buffer_atomic_{names[idx]} v10, v4, s[8:11], {soff} offen {rtn}",
                          {"v4.u32": [8, 28], "v10.u32": [data], "exec": "11", "rsrc": RAW[target],
                           "mem": [0, 0, old, 0, 0, 0, 0, SENTINEL]},
                          {"v10.u32": [old, 0], "mem": [0, 0, new, 0, 0, 0, 0, SENTINEL]},
                          why + "; returns the old value; lane 1 is out of range: returns 0, "
                          "writes nothing"))
    for *names, old, data, new, why in ATOMICS64:
        if names[idx] is None:
            continue
        CASES.append(case(target, f"buffer_atomic_{names[idx]} v[10:11], v4, s[8:11], {soff} offen {rtn}",
                          {"v4.u32": [8, 28], "v10.u64": [data], "exec": "11", "rsrc": RAW[target],
                           "mem": [0, 0, old & M32, old >> 32, 0, 0, 0, SENTINEL]},
                          {"v10.u64": [old, 0],
                           "mem": [0, 0, new & M32, new >> 32, 0, 0, 0, SENTINEL]},
                          why + "; lane 1 (offset 28) is out of range"))
    add64 = "add_x2" if target == "gfx942" else "add_u64"
    CASES.append(case(target, f"buffer_atomic_{add64} v[10:11], v4, s[8:11], {soff} offen {rtn}",
                      {"v4.u32": [24], "v10.u64": [1], "exec": "1", "rsrc": RAW[target],
                       "mem": [0] * 6 + [5, 0]},
                      {"v10.u64": [5] if target == "gfx942" else [0],
                       "mem": [0] * 6 + ([6, 0] if target == "gfx942" else [5, 0])},
                      "a 64-bit atomic at 24 of 28 bytes: all or nothing; gfx9 checks its start "
                      "(24 < 28: runs), gfx12 its end (24 + 8 > 28: dropped, returns 0)"))
    swap32, swap64 = ("cmpswap", "cmpswap_x2") if target == "gfx942" else ("cmpswap_b32", "cmpswap_b64")
    for cmp, new in ((5, 9), (4, 5)):
        CASES.append(case(target, f"buffer_atomic_{swap32} v[10:11], v4, s[8:11], {soff} offen {rtn}",
                          {"v4.u32": [8], "v10.u32": [9], "v11.u32": [cmp], "exec": "1",
                           "rsrc": RAW[target], "mem": [0, 0, 5]},
                          {"v10.u32": [5], "mem": [0, 0, new]},
                          f"memory 5, compare {cmp}: " + ("swaps in 9" if new == 9 else "no swap")))
    CASES.append(case(target, f"buffer_atomic_{swap64} v[12:15], v4, s[8:11], {soff} offen {rtn}",
                      {"v4.u32": [8], "v12.u64": [1 << 40], "v14.u64": [(1 << 33) | 5],
                       "exec": "1", "rsrc": RAW[target], "mem": [0, 0, 5, 2]},
                      {"v12.u64": [(2 << 32) | 5], "mem": [0, 0, 0, 1 << 8]},
                      "64-bit compare equal: swaps in 2^40"))
    name = "add" if target == "gfx942" else "add_u32"
    CASES.append(case(target, f"buffer_atomic_{name} v10, v4, s[8:11], {soff} offen",
                      {"v4.u32": [8], "v10.u32": [3], "exec": "111", "rsrc": RAW[target],
                       "mem": [0, 0, 10]},
                      {"mem": [0, 0, 19], "v10.u32": [3, 3, 3]},
                      "no return: three lanes add 3 each; VDATA keeps the data"))

# --- typed (format) loads and stores -------------------------------------------------------------
# Format field values by name, from the generated BUFFMT tables (LLVM's names for the ISA guides'
# enumerations): gfx9 NFMT << 4 | DFMT, gfx12 the unified format.
FMT_WORDS = [0, 0, 0x40003C00, 0xC5004400, 11, 22, 33, 44]   # f16 1.0 2.0 4.0 -5.0, then ints


def _format_value(target: str, name: str) -> int:
    from hsapy.sim.isa.decoder import _tables

    data, _, num = name.rpartition("_")
    text = (f"[BUF_DATA_FORMAT_{data},BUF_NUM_FORMAT_{num}]" if target == "gfx942"
            else f"[BUF_FMT_{name}]")
    table = _tables(target)["BUFFMT"]
    return next(int(k) for k, v in table.items() if v == text)


def fmt_rsrc(target: str, name: str, sel: int = XYZW, records: int = 64) -> tuple:
    value = _format_value(target, name)
    if target == "gfx942":
        return rsrc9(records, dfmt=value & 15, nfmt=value >> 4, sel=sel)
    return rsrc12(records, fmt=value, sel=sel)


def fmt_text(target: str, name: str) -> str:
    if target == "gfx942":
        data, _, num = name.rpartition("_")
        return f"format:[BUF_DATA_FORMAT_{data},BUF_NUM_FORMAT_{num}]"
    return f"format:[BUF_FMT_{name}]"


for target in ("gfx942", "gfx1201"):
    soff = SOFF[target]
    d16 = {"gfx942": lambda c: f"format_d16_{c}", "gfx1201": lambda c: f"d16_format_{c}"}[target]
    d16hi = "format_d16_hi_x" if target == "gfx942" else "d16_hi_format_x"
    for prefix, fmt_of in (("buffer", lambda n: ""), ("tbuffer", lambda n: " " + fmt_text(target, n))):
        rs = (lambda n, **kw: fmt_rsrc(target, n, **kw)) if prefix == "buffer" else \
            (lambda n, **kw: fmt_rsrc(target, "32_FLOAT", **kw))   # tbuffer: the instruction's
        for comps, fmt, want in (
                ("x", "32_UINT", [[11]]), ("xy", "32_32_UINT", [[11], [22]]),
                ("xyz", "32_32_32_UINT", [[11], [22], [33]]),
                ("xyzw", "32_32_32_32_UINT", [[11], [22], [33], [44]])):
            n = len(comps)
            CASES.append(case(target, f"{prefix}_load_format_{comps} {_regs(8, n)}, v4, s[8:11], "
                              f"{soff}{fmt_of(fmt)} offen",
                              {"v4.u32": [16], "mem": FMT_WORDS, "rsrc": rs(fmt)},
                              {f"v{8 + k}.u32": w for k, w in enumerate(want)},
                              f"{fmt}: the components as they are"))
            CASES.append(case(target, f"{prefix}_store_format_{comps} {_regs(10, n)}, v4, s[8:11], "
                              f"{soff}{fmt_of(fmt)} offen",
                              {"v4.u32": [8], "v10.u32": [5], "v11.u32": [6], "v12.u32": [7],
                               "v13.u32": [8], "exec": "1", "mem": [0] * 8, "rsrc": rs(fmt)},
                              {"mem": [0, 0] + [5, 6, 7, 8][:n] + [0] * (6 - n)},
                              f"{fmt}: the components as they are"))
        # d16: 16-bit components
        for comps, fmt, want in (
                ("x", "16_FLOAT", {"v8.u32": [0xAAAA3C00]}),
                ("xy", "16_16_FLOAT", {"v8.u32": [0x40003C00]}),
                ("xyz", "16_16_16_16_FLOAT", {"v8.u32": [0x40003C00], "v9.u32": [0xAAAA4400]}),
                ("xyzw", "16_16_16_16_FLOAT", {"v8.u32": [0x40003C00], "v9.u32": [0xC5004400]})):
            n = (len(comps) + 1) // 2
            CASES.append(case(target, f"{prefix}_load_{d16(comps)} {_regs(8, n)}, v4, s[8:11], "
                              f"{soff}{fmt_of(fmt)} offen",
                              {"v4.u32": [8], "v8.u32": [0xAAAAAAAA], "v9.u32": [0xAAAAAAAA],
                               "mem": FMT_WORDS, "rsrc": rs(fmt)}, want,
                              "d16: f16 halves as stored; an odd last component keeps the high half"))
            data = {"v10.u32": [0x40003C00], "v11.u32": [0xC5004400]}
            stored = {"x": [0x3C00], "xy": [0x40003C00], "xyz": [0x40003C00, 0x4400],
                      "xyzw": [0x40003C00, 0xC5004400]}[comps]
            CASES.append(case(target, f"{prefix}_store_{d16(comps)} {_regs(10, n)}, v4, s[8:11], "
                              f"{soff}{fmt_of(fmt)} offen",
                              {**data, "v4.u32": [8], "exec": "1", "mem": [0] * 6, "rsrc": rs(fmt)},
                              {"mem": [0, 0] + stored + [0] * (4 - len(stored))},
                              "d16 store: f16 halves; components the instruction lacks are not "
                              "written"))
    CASES.append(case(target, f"buffer_load_{d16hi} v8, v4, s[8:11], {soff} offen",
                      {"v4.u32": [8], "v8.u32": [0xAAAAAAAA], "mem": FMT_WORDS,
                       "rsrc": fmt_rsrc(target, "16_FLOAT")},
                      {"v8.u32": [0x3C00AAAA]}, "d16_hi: into the high half"))
    CASES.append(case(target, f"buffer_store_{d16hi} v10, v4, s[8:11], {soff} offen",
                      {"v4.u32": [8], "v10.u32": [0x4400AAAA], "exec": "1", "mem": [0] * 4,
                       "rsrc": fmt_rsrc(target, "16_FLOAT")},
                      {"mem": [0, 0, 0x4400, 0]}, "d16_hi: from the high half"))
    # conversions, dst_sel, defaults and out-of-range components
    CASES.append(case(target, f"buffer_load_format_xyzw v[8:11], v4, s[8:11], {soff} offen",
                      {"v4.u32": [8], "mem": FMT_WORDS, "rsrc": fmt_rsrc(target, "16_16_FLOAT")},
                      {"v8.f32": [1.0], "v9.f32": [2.0], "v10.u32": [0], "v11.f32": [1.0]},
                      "16_16 FLOAT: f16 widened to f32; Z reads 0 and W 1.0"))
    CASES.append(case(target, f"buffer_load_format_xyzw v[8:11], v4, s[8:11], {soff} offen",
                      {"v4.u32": [16], "mem": FMT_WORDS,
                       "rsrc": fmt_rsrc(target, "32_32_32_32_UINT", sel=1 | 6 << 3 | 0 << 6 | 4 << 9)},
                      {"v8.u32": [1], "v9.u32": [33], "v10.u32": [0], "v11.u32": [11]},
                      "dst_sel (SEL_1, Z, SEL_0, X): 1, z, 0, x"))
    CASES.append(case(target, f"buffer_load_format_xy v[8:9], v4, s[8:11], {soff} offen",
                      {"v4.u32": [16, 64], "exec": "11", "mem": FMT_WORDS,
                       "rsrc": fmt_rsrc(target, "32_32_UINT", sel=1 | 4 << 3 | 6 << 6 | 7 << 9,
                                        records=64)},
                      {"v8.u32": [1, 1], "v9.u32": [11, 0]},
                      "out of range (lane 1): 0, except SEL_1 components read 1"))
    CASES.append(case(target, f"buffer_load_format_xyzw v[8:11], v4, s[8:11], {soff} offen",
                      {"v4.u32": [12], "mem": [0, 0, 0, 0xFF7F0180],
                       "rsrc": fmt_rsrc(target, "8_8_8_8_SINT")},
                      {"v8.u32": [0xFFFFFF80], "v9.u32": [1], "v10.u32": [0x7F], "v11.u32": [M32]},
                      "8_8_8_8 SINT: each byte sign-extended"))
    CASES.append(case(target, f"buffer_load_format_xy v[8:9], v4, s[8:11], {soff} offen",
                      {"v4.u32": [12], "mem": [0, 0, 0, 0x0000FF07],
                       "rsrc": fmt_rsrc(target, "8_8_UINT")},
                      {"v8.u32": [7], "v9.u32": [0xFF]}, "8_8 UINT: each byte zero-extended"))
    CASES.append(case(target, f"buffer_load_format_x v8, v4, s[8:11], {soff} offen",
                      {"v4.u32": [12], "mem": [0, 0, 0, 0x0000FFFF],
                       "rsrc": fmt_rsrc(target, "16_USCALED")},
                      {"v8.f32": [65535.0]}, "16 USCALED: the integer as f32"))
    CASES.append(case(target, f"buffer_store_format_x v10, v4, s[8:11], {soff} offen",
                      {"v4.u32": [8], "v10.f32": [1.0 + 2 ** -11], "exec": "1", "mem": [0] * 4,
                       "rsrc": fmt_rsrc(target, "16_FLOAT")},
                      {"mem": [0, 0, 0x3C00, 0]},
                      "f32 to 16 FLOAT rounds to nearest even (a tie goes to 1.0)"))

# gfx942: load into LDS (M0 + instruction offset + 4 * lane)
CASES.append(case("gfx942", "buffer_load_dword v4, s[8:11], 0 offen offset:4 lds",
                  {"v4.u32": [8, 24], "s124.u32": 8, "exec": "11", "mem": WORDS, "rsrc": RAW9,
                   "lds": [0] * 8},
                  {"lds": [0, 0, 0, 0x44332211, 0, 0, 0, 0]},
                  "lane 0 loads byte 12 into LDS byte 8 + 4; lane 1 (byte 28, out of range) "
                  "writes 0 at LDS byte 16"))
CASES.append(case("gfx942", "global_load_lds_dword v4, s[20:21] offset:4",
                  {"v4.u32": [8, 16], "s124.u32": 8, "exec": "11", "mem": WORDS,
                   "lds": [0] * 8},
                  {"lds": [0, 0, 0, 0x44332211, 0xCCBBAA99, 0, 0, 0]},
                  "lane l's dword at v4 + 4 goes to LDS byte M0 + 4 + 4 l"))
# gfx942: the private segment buffer V# (the executor's, s[0:3]) reaches the lane's scratch
CASES.append(case("gfx942", "buffer_store_dword v10, off, s[0:3], 0 offset:4",
                  {"v10.u32": [0x11223344], "exec": "1", "rsrc_private": 0, "scratch": bytes(12)},
                  {"scratch": bytes(4) + bytes([0x44, 0x33, 0x22, 0x11]) + bytes(4)},
                  "swizzled private buffer: offset 4 is private byte 4 of the lane"))
CASES.append(case("gfx942", "buffer_load_dword v8, v4, s[0:3], s5 offen offset:2",
                  {"v4.u32": [2], "s5.u32": 256, "rsrc_private": 0,
                   "scratch": bytes(range(16))},
                  {"v8.u32": [0x0B0A0908]},
                  "SOFFSET 256 = one dword row of a 64-lane wave: private byte 4 + 2 + 2 = 8"))

# --- gfx942 scalar buffer, store and atomic forms -------------------------------------------------
for name, count, want in (("dword", 1, [0x44332211]), ("dwordx2", 2, [0x44332211, 0x88776655]),
                          ("dwordx4", 4, [0x44332211, 0x88776655, 0xCCBBAA99, 0]),
                          ("dwordx8", 8, [0x44332211, 0x88776655, 0xCCBBAA99] + [0] * 5),
                          ("dwordx16", 16, [0x44332211, 0x88776655, 0xCCBBAA99] + [0] * 13)):
    CASES.append(case("gfx942", f"s_buffer_load_{name} s[12:{11 + count}], s[8:11], 0xc" if count > 1
                      else f"s_buffer_load_{name} s12, s[8:11], 0xc",
                      {"mem": WORDS, "rsrc": (8, 0, 24, 0)},
                      {f"s{12 + k}.u32": w for k, w in enumerate(want)},
                      "stride 0: dwords at offsets < num_records 24 read, the rest 0"))
CASES.append(case("gfx942", "s_buffer_load_dwordx2 s[12:13], s[8:11], 0x10",
                  {"mem": WORDS, "rsrc": (8, 4 << 16, 5, 0)},
                  {"s12.u32": 0x88776655, "s13.u32": 0xCCBBAA99},
                  "stride 4, num_records 5: offsets up to 4 * 5 = 20 read (offset > 20 is out)"))
CASES.append(case("gfx942", "s_buffer_load_dwordx2 s[12:13], s[8:11], 0x14",
                  {"mem": WORDS, "rsrc": (8, 4 << 16, 5, 0)},
                  {"s12.u32": 0xCCBBAA99, "s13.u32": 0},
                  "stride 4, num_records 5: 20 is in range, 24 > 20 reads 0"))
CASES.append(case("gfx942", "s_buffer_load_dword s12, s[8:11], s4 offset:0x4",
                  {"mem": WORDS, "rsrc": (8, 0, 28, 0), "s4.u32": 9},
                  {"s12.u32": 0x44332211},
                  "SGPR offset 9 + immediate 4 = 13, the low two bits ignored: byte 12"))
CASES.append(case("gfx942", "s_load_dword s12, s[20:21], s4 offset:0x4",
                  {"mem": WORDS, "s4.u32": 4}, {"s12.u32": 0x8281F0E1},
                  "s_load with an SGPR and an immediate offset adds both: byte 8"))
for name, count in (("dword", 1), ("dwordx2", 2), ("dwordx4", 4)):
    data = "s12" if count == 1 else f"s[12:{11 + count}]"
    values = {f"s{12 + k}.u32": 0x10 + k for k in range(count)}
    CASES.append(case("gfx942", f"s_store_{name} {data}, s[20:21], 0x8",
                      {**values, "mem": [0] * 8}, {"mem": [0, 0] + [0x10 + k for k in range(count)]
                                                  + [0] * (6 - count)}, "stores SDATA at byte 8"))
    CASES.append(case("gfx942", f"s_buffer_store_{name} {data}, s[8:11], 0x10",
                      {**values, "mem": [0] * 8 + [SENTINEL] * 2, "rsrc": (8, 0, 24, 0)},
                      {"mem": [0] * 4 + [0x10 + k for k in range(min(count, 2))]
                       + [0] * (4 - min(count, 2)) + [SENTINEL] * 2},
                      "dwords at offsets >= num_records 24 are dropped"))
SCALAR_ATOMICS = [(g, old, data, new, why) for g, _, old, data, new, why in ATOMICS32
                  if g and g not in ("add_f32", "pk_add_f16")]
SCALAR_ATOMICS64 = [(g, old, data, new, why) for g, _, old, data, new, why in ATOMICS64
                    if g and not g.endswith("f64")]
for prefix, base in (("s_atomic", "s[20:21]"), ("s_buffer_atomic", "s[8:11]")):
    extra = {"rsrc": (8, 0, 16, 0)} if prefix == "s_buffer_atomic" else {}
    for op, old, data, new, why in SCALAR_ATOMICS:
        CASES.append(case("gfx942", f"{prefix}_{op} s12, {base}, 0x8 glc",
                          {"s12.u32": data, "mem": [0, 0, old, SENTINEL], **extra},
                          {"s12.u32": old, "mem": [0, 0, new, SENTINEL]},
                          why + "; GLC returns the old value"))
    for op, old, data, new, why in SCALAR_ATOMICS64:
        CASES.append(case("gfx942", f"{prefix}_{op} s[12:13], {base}, 0x8 glc",
                          {"s12.u64": data, "mem": [0, 0, old & M32, old >> 32], **extra},
                          {"s12.u64": old, "mem": [0, 0, new & M32, new >> 32]}, why))
    CASES.append(case("gfx942", f"{prefix}_cmpswap s[12:13], {base}, 0x8 glc",
                      {"s12.u32": 9, "s13.u32": 5, "mem": [0, 0, 5], **extra},
                      {"s12.u32": 5, "mem": [0, 0, 9]}, "compare 5 equal: swaps in 9"))
    CASES.append(case("gfx942", f"{prefix}_cmpswap_x2 s[12:15], {base}, 0x8 glc",
                      {"s12.u64": 1 << 40, "s14.u64": 5, "mem": [0, 0, 5, 0], **extra},
                      {"s12.u64": 5, "mem": [0, 0, 0, 1 << 8]}, "64-bit compare equal: swaps"))
CASES.append(case("gfx942", "s_buffer_atomic_add s12, s[8:11], 0x10 glc",
                  {"s12.u32": 1, "mem": [0, 0, 0, 0, 7], "rsrc": (8, 0, 16, 0)},
                  {"s12.u32": 0, "mem": [0, 0, 0, 0, 7]},
                  "offset 16 >= num_records 16: nothing written, returns 0"))
CASES.append(case("gfx942", "s_atomic_add s12, s[20:21], 0x8",
                  {"s12.u32": 3, "mem": [0, 0, 4]}, {"s12.u32": 3, "mem": [0, 0, 7]},
                  "without GLC SDATA keeps the data"))

# --- 16-bit packed float atomics on global and flat memory ---------------------------------------
for target, rtn in (("gfx942", "sc0"), ("gfx1201", "th:TH_ATOMIC_RETURN")):
    for seg in ("global", "flat"):
        addr = "v4, v5, s[20:21]" if seg == "global" else "v[20:21], v5"
        for op, old, data, new in (
                ("pk_add_f16", f16(1.5) | f16(-2.0) << 16, f16(0.25) | f16(8.0) << 16,
                 f16(1.75) | f16(6.0) << 16),
                ("pk_add_bf16", bf16(1.5) | bf16(-2.0) << 16, bf16(0.25) | bf16(8.0) << 16,
                 bf16(1.75) | bf16(6.0) << 16),
                ("pk_add_f16", f16(2048.0) | f16(65504.0) << 16, f16(1.0) | f16(65504.0) << 16,
                 f16(2048.0) | 0x7C00 << 16)):
            CASES.append(case(target, f"{seg}_atomic_{op} v3, {addr} offset:8 {rtn}",
                              {"v4.u32": [0], "v5.u32": [data], "exec": "1",
                               "mem": [0, 0, old]}, {"v3.u32": [old], "mem": [0, 0, new]},
                              "two 16-bit float adds, each rounded to nearest even (2048 + 1 "
                              "ties to 2048; 65504 + 65504 overflows to inf)"))

# --- flat atomics whose lanes address LDS or scratch ---------------------------------------------
SHARED = 1 << 48      # the runner's shared aperture; private is 2 << 48
FLAT32 = [(g, t, old, data, new) for g, t, old, data, new, _ in ATOMICS32
          if not (t or "").startswith(("sub_clamp", "cond_sub"))]
for target, idx, rtn in (("gfx942", 0, "sc0"), ("gfx1201", 1, "th:TH_ATOMIC_RETURN")):
    for *names, old, data, new in FLAT32:
        if names[idx] is None:
            continue
        CASES.append(case(target, f"flat_atomic_{names[idx]} v3, v[20:21], v5 {rtn}",
                          {"v20.u64": [SHARED + 8, (2 << 48) + 8], "v5.u32": [data],
                           "exec": "11", "lds": [0, 0, old, 0x77], "scratch": struct.pack(
                               "<4I", 0, 0, old, 0x77)},
                          {"v3.u32": [old, old], "lds": [0, 0, new, 0x77],
                           "scratch": struct.pack("<4I", 0, 0, old, 0x77)},
                          "lane 0 runs on LDS byte 8, lane 1 on its own private byte 8 (the "
                          "expectation shows lane 0's scratch, untouched)"))
    for *names, old, data, new in [(g, t, o, d, n) for g, t, o, d, n, _ in ATOMICS64]:
        if names[idx] is None:
            continue
        CASES.append(case(target, f"flat_atomic_{names[idx]} v[8:9], v[20:21], v[6:7] {rtn}",
                          {"v20.u64": [SHARED + 8], "v6.u64": [data], "exec": "1",
                           "lds": [0, 0, old & M32, old >> 32]},
                          {"v8.u64": [old], "lds": [0, 0, new & M32, new >> 32]},
                          "64-bit atomic on LDS through the shared aperture"))
    swap32, swap64 = ("cmpswap", "cmpswap_x2") if target == "gfx942" else ("cmpswap_b32", "cmpswap_b64")
    CASES.append(case(target, f"flat_atomic_{swap32} v3, v[20:21], v[6:7] {rtn}",
                      {"v20.u64": [SHARED + 8], "v6.u32": [9], "v7.u32": [5], "exec": "1",
                       "lds": [0, 0, 5]}, {"v3.u32": [5], "lds": [0, 0, 9]},
                      "compare-and-swap on LDS"))
    CASES.append(case(target, f"flat_atomic_{swap64} v[8:9], v[20:21], v[12:15] {rtn}",
                      {"v20.u64": [SHARED + 8], "v12.u64": [1 << 40], "v14.u64": [5],
                       "exec": "1", "lds": [0, 0, 5, 0]},
                      {"v8.u64": [5], "lds": [0, 0, 0, 1 << 8]}, "64-bit compare-and-swap on LDS"))
    add = "add" if target == "gfx942" else "add_u32"
    CASES.append(case(target, f"flat_atomic_{add} v3, v[20:21], v5 {rtn}",
                      {"v20.u64": [SHARED + 8, (2 << 48) + 4, SHARED + 8, SHARED + 8],
                       "v5.u32": [1, 2, 4, 8], "exec": "111",
                       "lds": [0, 0, 10], "scratch": bytes(8)},
                      {"v3.u32": [10, 0, 11, KEEP_MARK], "lds": [0, 0, 15]},
                      "one instruction, lanes in two apertures: lanes 0 and 2 add on LDS in lane "
                      "order (10 -> 11 -> 15), lane 1 on its private byte 4 (old 0)"))
    CASES.append(case(target, f"flat_atomic_{add} v3, v[20:21], v5 {rtn}",
                      {"v20.u64": [(2 << 48) + 4], "v5.u32": [3], "exec": "1",
                       "scratch": bytes(4) + bytes([5, 0, 0, 0])},
                      {"v3.u32": [5], "scratch": bytes(4) + bytes([8, 0, 0, 0])},
                      "a flat atomic in the private aperture updates the lane's scratch"))

# gfx1201 global/flat atomics the generic tables of isa_hand_cases_mem do not list
for seg in ("global", "flat"):
    addr = "v4, v5, s[20:21]" if seg == "global" else "v[20:21], v5"
    for op, old, data, new, why in (
            ("sub_clamp_u32", 3, 5, 0, "3 - 5 clamps to 0"),
            ("sub_clamp_u32", 9, 5, 4, "9 - 5 = 4"),
            ("cond_sub_u32", 3, 5, 3, "3 < 5: unchanged"),
            ("cond_sub_u32", 9, 5, 4, "9 >= 5: 9 - 5")):
        CASES.append(case("gfx1201", f"{seg}_atomic_{op} v3, {addr} offset:8 th:TH_ATOMIC_RETURN",
                          {"v4.u32": [0], "v5.u32": [data], "exec": "1", "mem": [0, 0, old]},
                          {"v3.u32": [old], "mem": [0, 0, new]}, why))
for op, old, data, new, why in (("inc_u64", 5, 5, 0, "old >= data wraps to 0"),
                                ("inc_u64", 1 << 40, 1 << 41, (1 << 40) + 1, "64-bit increment"),
                                ("dec_u64", 0, 7, 7, "old == 0 wraps to data"),
                                ("dec_u64", 1 << 40, 1 << 41, (1 << 40) - 1, "64-bit decrement")):
    CASES.append(case("gfx1201", f"global_atomic_{op} v[8:9], v4, v[6:7], s[20:21] offset:8 "
                      "th:TH_ATOMIC_RETURN",
                      {"v4.u32": [0], "v6.u64": [data], "exec": "1",
                       "mem": [0, 0, old & M32, old >> 32]},
                      {"v8.u64": [old], "mem": [0, 0, new & M32, new >> 32]}, why))
