"""Hand-checked cases: vector compares (v_cmp_* to VCC, v_cmpx_* to EXEC) and v_cmp_class.

Four lanes compare (a, b): floats (1, 2), (2, 2), (3, 2), (NaN, 2) -- less, equal, greater,
unordered; integers (1, 2), (2, 2), (3, 2), (-1, 2) -- the last is "less" read signed and
"greater" read unsigned. The truth tables below are written out by hand per predicate (lane
order, "1" = lane set); the n* float predicates are true on unordered, the others false.
"""
from __future__ import annotations

from isa_hand_runner import INF, NAN, case

CASES = []

FLOAT_TRUTH = {   # lanes: less, equal, greater, unordered
    "f": "0000", "lt": "1000", "eq": "0100", "le": "1100", "gt": "0010", "lg": "1010",
    "ge": "0110", "o": "1110", "u": "0001", "nge": "1001", "nlg": "0101", "ngt": "1101",
    "nle": "0011", "neq": "1011", "nlt": "0111", "tru": "1111",
}
SIGNED_TRUTH = {  # lanes: 1<2, 2=2, 3>2, -1<2
    "f": "0000", "lt": "1001", "eq": "0100", "le": "1101", "gt": "0010", "ne": "1011",
    "ge": "0110", "t": "1111",
}
UNSIGNED_TRUTH = {  # lanes: 1<2, 2=2, 3>2, 0xFFFFFFFF>2
    "f": "0000", "lt": "1000", "eq": "0100", "le": "1100", "gt": "0011", "ne": "1011",
    "ge": "0111", "t": "1111",
}
GFX12_DROPPED = {"f", "t", "tru"}   # RDNA4 has no always-false/always-true compares


def _sources(ty: str) -> tuple[str, str, dict]:
    wide = ty.endswith("64")
    a, b = ("v[0:1]", "v[2:3]") if wide else ("v0", "v1")
    breg = "v2" if wide else "v1"
    if ty[0] == "f":
        values = {f"v0.{ty}": [1.0, 2.0, 3.0, NAN], f"{breg}.{ty}": [2.0]}
    else:
        values = {f"v0.{ty}": [1, 2, 3, -1], f"{breg}.{ty}": [2]}
    return a, b, values


for ty in ("f16", "f32", "f64", "i16", "i32", "i64", "u16", "u32", "u64"):
    truth = FLOAT_TRUTH if ty[0] == "f" else SIGNED_TRUTH if ty[0] == "i" else UNSIGNED_TRUTH
    a, b, values = _sources(ty)
    for pred, lanes in truth.items():
        why = f"{pred} on {ty}: lanes {lanes}"
        CASES.append(case("gfx942", f"v_cmp_{pred}_{ty} vcc, {a}, {b}", values, {"vcc": lanes},
                          why))
        # gfx9 e32 v_cmpx writes EXEC (and VCC); lanes outside EXEC end up clear
        CASES.append(case("gfx942", f"v_cmpx_{pred}_{ty} vcc, {a}, {b}", {**values, "exec": "1110"},
                          {"exec": lanes[:3] + "0"}, why + "; lane 3 was outside EXEC"))
        if pred in GFX12_DROPPED:
            continue
        CASES.append(case("gfx1201", f"v_cmp_{pred}_{ty} vcc_lo, {a}, {b}", values,
                          {"vcc": lanes}, why))
        CASES.append(case("gfx1201", f"v_cmpx_{pred}_{ty} {a}, {b}", {**values, "exec": "1110"},
                          {"exec": lanes[:3] + "0"}, why + "; lane 3 was outside EXEC"))

# v_cmp_class: bit k of the mask selects class k: 0 sNaN, 1 qNaN, 2 -inf, 3 -normal,
# 4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf. Lane k tests value k against
# the mask 1 << (k + 1) (its own class: true); the last lane tests 1.0 against +inf (false).
_DENORM = {"f16": 2.0 ** -24, "f32": 2.0 ** -149, "f64": 2.0 ** -1074}
for ty in ("f16", "f32", "f64"):
    d = _DENORM[ty]
    values = [NAN, -INF, -1.0, -d, -0.0, 0.0, d, 1.0, INF, 1.0]
    masks = [1 << k for k in range(1, 10)] + [1 << 9]
    a = "v[0:1]" if ty == "f64" else "v0"
    inputs = {f"v0.{ty}": values, "v2.u32": masks}
    lanes = "1111111110"
    why = "each lane's value is in the class its mask names; 1.0 is not +inf"
    CASES.append(case("gfx942", f"v_cmp_class_{ty} vcc, {a}, v2", inputs, {"vcc": lanes}, why))
    CASES.append(case("gfx942", f"v_cmpx_class_{ty} vcc, {a}, v2", inputs, {"exec": lanes}, why))
    CASES.append(case("gfx1201", f"v_cmp_class_{ty} vcc_lo, {a}, v2", inputs, {"vcc": lanes}, why))
    CASES.append(case("gfx1201", f"v_cmpx_class_{ty} {a}, v2", inputs, {"exec": lanes}, why))

# VOP3 form: the mask goes to any SGPR (pair), not only VCC.
CASES.append(case("gfx942", "v_cmp_lt_i32_e64 s[8:9], v0, v1",
                  {"v0.i32": [1, 2, 3, -1], "v1.i32": [2], "exec": "1111"},
                  {"s8.u32": 0b1001, "s9.u32": 0}, "signed lt into s[8:9]; inactive lanes 0"))
CASES.append(case("gfx1201", "v_cmp_lt_u32_e64 s8, v0, v1",
                  {"v0.u32": [1, 2, 3, -1], "v1.u32": [2], "exec": "1111"},
                  {"s8.u32": 0b0001}, "unsigned lt into s8; inactive lanes 0"))

# signaling vs quiet NaN: class bit 0 is sNaN (quiet bit clear), bit 1 qNaN
for target, vcc in (("gfx942", "vcc"), ("gfx1201", "vcc_lo")):
    CASES.append(case(target, f"v_cmp_class_f32 {vcc}, v0, v1",
                      {"v0.u32": [0x7F800001, 0x7F800001, 0x7FC00000, 0x7FC00000],
                       "v1.u32": [1, 2, 1, 2]}, {"vcc": "1001"},
                      "0x7F800001 is a signaling NaN, 0x7FC00000 a quiet one"))
