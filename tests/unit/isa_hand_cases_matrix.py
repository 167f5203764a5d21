"""Hand-checked cases: matrix instructions (gfx942 MFMA/SMFMAC, gfx1201 wave32 WMMA/SWMMAC).

One case per instruction, with values whose product is worked out by hand: every element of A
is 1, every element of B in column j is j (values 1 + j % 4 for the 8-bit floats, whose 3 or 2
mantissa bits do not hold every j < 32), C is 0. So D[i][j] = K * B[.][j]. In every layout of
these instructions lane % N is the column (B: lane % N = j; C/D: lane % N = j), so register r of
D holds K * value(lane % N) in every lane, whatever the row layout. The sparse forms keep 2 of
each 4 elements of A (index nibble 0x4: positions 0 and 1), so D = K/2 * value.

gfx942: A in v0.., B in v4.. (SMFMAC: v2..), D/C in AGPRs a0.. (SMFMAC: accumulates into D,
which starts at 0; index in v8). gfx1201: A v8.., B v12.., C v24.. (0), D v0.., index v20.
"""
from __future__ import annotations

import numpy as np
from isa_hand_runner import case

from hsapy.sim.isa import semantics_matrix as sm

CASES = []


def fp8_code(value: float, exp_bits: int, bias: int) -> int:
    """The byte of a small positive normal value in E4M3 / E5M2 with the given bias."""
    mant_bits = 7 - exp_bits
    m, e = np.frexp(value)              # value = (2m) * 2**(e-1), 1 <= 2m < 2
    return ((e - 1 + bias) << mant_bits) | int((2 * m - 1) * (1 << mant_bits))


# the element encodings of 1 and of small integers v, per element type (FNUZ on gfx942, OCP on
# gfx12: HIP "FP8 numbers" / LLVM D106160)
def encode(ty: str, value: float, family: str) -> int:
    if ty in ("f32", "xf32"):
        return int(np.float32(value).view(np.uint32))
    if ty == "f16":
        return int(np.float16(value).view(np.uint16))
    if ty == "bf16":
        return int(np.float32(value).view(np.uint32)) >> 16
    if ty == "fp8":
        return fp8_code(value, 4, 8 if family == "gfx9" else 7)
    if ty == "bf8":
        return fp8_code(value, 5, 16 if family == "gfx9" else 15)
    return int(value)                    # i8, iu8, iu4: the integer (unsigned here)


def column_value(ty: str, j: int) -> int:
    return 1 + j % 4 if ty in ("fp8", "bf8") else j


def packed(ty: str, value: float, family: str) -> int:
    """One dword of elements all equal to ``value``."""
    bits = sm.BITS[ty]
    if bits >= 32:
        return encode(ty, value, family)
    word = 0
    for shift in range(0, 32, bits):
        word |= encode(ty, value, family) << shift
    return word


def regs(file: str, first: int, count: int) -> str:
    return f"{file}{first}" if count == 1 else f"{file}[{first}:{first + count - 1}]"


def add_case(target: str, name: str, op: sm.MatrixOp, lanes: int, counts: tuple[int, int, int]):
    family = "gfx9" if target == "gfx942" else "gfx12"
    na, nb, nd = counts
    k_used = op.k // 2 if op.sparse else op.k
    inputs: dict = {}
    a_first, b_first = (0, 4) if family == "gfx9" else (8, 12)
    if op.sparse and family == "gfx9":
        b_first = 2
    dfile, dfirst = ("a", 0) if family == "gfx9" else ("v", 0)
    # A = 1, B[k][j] = value(j) in lane j + N * ...
    wide = sm.BITS[op.a] == 64
    for r in range(na):
        if wide and r % 2:
            continue
        inputs[f"v{a_first + r}.{'f64' if wide else 'u32'}"] = \
            [1.0] if wide else [packed(op.a, 1.0, family)]
    for r in range(nb):
        if wide and r % 2:
            continue
        inputs[f"v{b_first + r}.{'f64' if wide else 'u32'}"] = [
            float(column_value(op.b, lane % op.n)) if wide
            else packed(op.b, column_value(op.b, lane % op.n), family) for lane in range(lanes)]
    if op.sparse:
        index = 8 if family == "gfx9" else 20
        inputs[f"v{index}.u32"] = [0x44444444]    # every group keeps positions 0 and 1
        third = regs("v", index, 1)
        for r in range(nd):
            inputs[f"{dfile}{dfirst + r}.u32"] = [0]
    elif family == "gfx9":
        third = "0"
    else:
        third = regs("v", 24, nd)
        for r in range(nd):
            inputs[f"v{24 + r}.u32"] = [0]
    line = (f"{name} {regs(dfile, dfirst, nd)}, {regs('v', a_first, na)}, "
            f"{regs('v', b_first, nb)}, {third}")
    expect: dict = {}
    acc = op.acc
    for r in range(0, nd, 2 if acc == "f64" else 1):
        values = [k_used * column_value(op.b, lane % op.n) for lane in range(lanes)]
        if acc == "f64":
            expect[f"{dfile}{dfirst + r}.f64"] = [float(v) for v in values]
        elif acc == "f32":
            expect[f"{dfile}{dfirst + r}.f32"] = [float(v) for v in values]
        elif acc == "i32":
            expect[f"{dfile}{dfirst + r}.i32"] = values
        elif acc == "f16":
            expect[f"{dfile}{dfirst + r}.h2"] = [(float(v), float(v)) for v in values]
        else:   # bf16, two a register
            expect[f"{dfile}{dfirst + r}.u32"] = [packed("bf16", v, family) for v in values]
    why = (f"A = 1, B[k][j] = {'1 + j % 4' if op.b in ('fp8', 'bf8') else 'j'}, C = 0: "
           f"D[i][j] = {k_used} * B[.][j]{' (2 of 4 kept)' if op.sparse else ''}")
    CASES.append(case(target, line, inputs, expect, why))


def operand_counts(op: sm.MatrixOp, family: str, lanes: int) -> tuple[int, int, int]:
    """VGPRs of A, B and C/D: per-lane elements times their width."""
    if family == "gfx9":
        a = op.m * op.blocks * (op.k // 2 if op.sparse else op.k) * sm.BITS[op.a] // 64 // 32
        b = op.n * op.blocks * op.k * sm.BITS[op.b] // 64 // 32
        d = op.m * op.n * op.blocks * sm.BITS[op.acc] // 64 // 32
    else:
        a = (op.k // 4 if op.sparse else op.k // 2) * sm.BITS[op.a] // 32
        b = (op.k // 2) * sm.BITS[op.b] // 32
        d = 8 * sm.BITS[op.acc] // 32
        a, b, d = (max(1, x * 32 // lanes) for x in (a, b, d))
    return max(1, a), max(1, b), d


# the compiler pads matrix-instruction hazards with v_nop
CASES.append(case("*", "v_nop", {"v3.u32": [7, 8]}, {"v3.u32": [7, 8]}, "no operation"))

for _target, _lanes in (("gfx942", 64), ("gfx1201", 32)):
    _family = "gfx9" if _target == "gfx942" else "gfx12"
    for _name, _op in sm.TARGET_OPS[_target].items():
        add_case(_target, _name, _op, _lanes, operand_counts(_op, _family, _lanes))
