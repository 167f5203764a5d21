"""Hand-checked cases: gfx940 loads into LDS (GLOBAL_LOAD_LDS_*, SCRATCH_LOAD_LDS_*) and the
conditional LDS exchange DS_CONDXCHG32_RTN_B64.

Loads to LDS write one dword per lane at M0[17:2] * 4 + instruction offset + 4 * lane (CDNA3 ISA
guide 10.3, "Addressing"); byte and short loads write the zero- or sign-extended dword their
VGPR forms return. The "mem" buffer is at s[20:21]; "lds" lists LDS dwords from byte 0.
"""
from __future__ import annotations

from isa_hand_runner import case

CASES = []
MEM = [0, 0, 0x8281F0E1, 0x44332211, 0x88776655, 0xCCBBAA99, 0x00FFEEDD, 0]


def add(target, line, inputs, expect, why):
    CASES.append(case(target, line, inputs, expect, why))


# --- GLOBAL_LOAD_LDS_*: lanes 0 and 1 read "mem" byte v4 + 4 -----------------------------------
for name, addrs, want, why in (
        ("ubyte", [4, 7], [0xE1, 0x82], "one byte per lane, zero-extended to the LDS dword"),
        ("sbyte", [6, 8], [0xFFFFFF81, 0x11], "sign-extended: 0x81 is negative, 0x11 is not"),
        ("ushort", [4, 6], [0xF0E1, 0x8281], "two bytes per lane, zero-extended"),
        ("sshort", [6, 16], [0xFFFF8281, 0xFFFFAA99], "sign-extended halves"),
        ("dword", [8, 12], [0x44332211, 0x88776655], "a whole dword per lane")):
    add("gfx942", f"global_load_lds_{name} v4, s[20:21] offset:4",
        {"v4.u32": addrs, "s124.u32": 8, "exec": "11", "mem": MEM, "lds": [0x5A5A5A5A] * 6},
        {"lds": [0x5A5A5A5A] * 3 + want + [0x5A5A5A5A]},
        f"{why}; lane l writes LDS byte M0 + 4 + 4 l (all four bytes of its dword)")
add("gfx942", "global_load_lds_ubyte v[20:21], off",
    {"s124.u32": 0x40003, "exec": "01", "mem": MEM, "lds": [7] * 4},
    {"lds": [7, 0, 7, 7]},
    "64-bit address form; only M0[17:2] counts (0x40003 -> 0), lane 1 alone writes byte 4")
add("gfx942", "global_load_lds_sbyte v4, s[20:21] offset:-4",
    {"v4.u32": [13], "s124.u32": 0, "exec": "1", "mem": MEM, "lds": [9] * 2},
    {"lds": [9, 9]}, "an LDS address below 0 (M0 0 + offset -4) drops the write")

# --- SCRATCH_LOAD_LDS_*: private bytes 4..11 of every lane are 00 81 82 83 84 85 86 87 -------
PRIVATE = bytes(4) + bytes([0x00, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87])
for name, v4, want, why in ((("ubyte", 1, 0x81, "zero-extended byte")),
                            ("sbyte", 1, 0xFFFFFF81, "sign-extended byte"),
                            ("ushort", 1, 0x8281, "zero-extended short"),
                            ("sshort", 1, 0xFFFF8281, "sign-extended short"),
                            ("dword", 4, 0x87868584, "a dword")):
    add("gfx942", f"scratch_load_lds_{name} v4, off offset:4",
        {"v4.u32": [v4], "s124.u32": 4, "exec": "1", "scratch": PRIVATE,
         "lds": [0x5A5A5A5A] * 4},
        {"lds": [0x5A5A5A5A, 0x5A5A5A5A, want, 0x5A5A5A5A]},
        f"{why} from private byte v4 + 4, to LDS byte M0 + 4 = 8")
add("gfx942", "scratch_load_lds_ushort off, s2 offset:4",
    {"s2.u32": 1, "s124.u32": 0, "exec": "1", "scratch": PRIVATE, "lds": [0] * 2},
    {"lds": [0, 0x8281]}, "SGPR address form: private byte s2 + 4, LDS byte 0 + 4")

# --- MUBUF lds forms of the byte/short loads (LDS byte M0[15:0] + offset + 4 * lane) ------------
for name, want in (("ubyte", 0x81), ("sbyte", 0xFFFFFF81), ("ushort", 0x8281),
                   ("sshort", 0xFFFF8281)):
    add("gfx942", f"buffer_load_{name} v4, s[8:11], 0 offen offset:4 lds",
        {"v4.u32": [6], "s124.u32": 0x10004, "exec": "1", "mem": MEM,
         "rsrc": (8, 0, 64, 0x00020000), "lds": [0x5A5A5A5A] * 3},
        {"lds": [0x5A5A5A5A, 0x5A5A5A5A, want]},
        "mem byte 10, extended as the VGPR form would be, to LDS byte M0[15:0] (4) + 4")

# --- DS_CONDXCHG32_RTN_B64: ADDR0 = (ADDR + OFFSET) & 0xFFF8, ADDR1 = ADDR0 + 4 ---------------------
for target in ("gfx942", "gfx1201"):
    add(target, "ds_condxchg32_rtn_b64 v[2:3], v1, v[4:5] offset:12",
        {"v1.u32": [4], "v4.u32": [0x80000005], "v5.u32": [0x00000007], "exec": "1",
         "lds": [10, 11, 12, 13, 14, 15, 16]},
        {"lds": [10, 11, 12, 13, 5, 15, 16], "v2.u32": [14], "v3.u32": [15]},
        "address 4 + 12 = 16; the low half has bit 31 set: LDS[16] = 5 (bit 31 cleared); the "
        "high half has not: LDS[20] kept; both old values returned")
    add(target, "ds_condxchg32_rtn_b64 v[2:3], v1, v[4:5] offset:12",
        {"v1.u32": [0x10003, 0x10003], "v4.u32": [0xFFFFFFFF, 0x80000001],
         "v5.u32": [0x80000009, 0x8000000A], "exec": "11", "lds": [0, 0, 3, 4, 0]},
        {"lds": [0, 0, 1, 10, 0], "v2.u32": [3, 0x7FFFFFFF], "v3.u32": [4, 9]},
        "(0x10003 + 12) & 0xFFF8 = 8: bits 16 and up and the low three are dropped; lane 1 "
        "sees what lane 0 wrote")
