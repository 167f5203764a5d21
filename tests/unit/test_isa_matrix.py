"""Matrix instructions (MFMA/SMFMAC on gfx90a and gfx942, WMMA/SWMMAC on gfx11 and gfx12).

Each instruction is assembled by llvm-mc-19, decoded and compiled like any kernel's, and run on
two waves of random register contents:

- the layouts (which lane, register and bits hold which matrix element) are held to facts
  sampled from AMD's matrix instruction calculator (tests/unit/matrix_layout_facts.json,
  tools/gen_matrix_layout_facts.py);
- D is compared with references computed here element by element: exact for integer forms;
  for float forms exact against the instruction's arithmetic model (a chain of fused
  multiply-adds in exact arithmetic, MMA-Sim's CDNA2/CDNA3 algorithms written out per element,
  or the exact sum rounded once) and within the f32-accumulation error bound of the float64
  matrix product.
"""
from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import zlib
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from hsapy.sim.isa import decode
from hsapy.sim.isa import semantics_matrix as sm
from hsapy.sim.isa.interpreter import ProgramInfo
from hsapy.sim.isa.semantics import NotImplementedInstruction, compile_instruction
from hsapy.sim.isa.wave import NSREG, Batch

FAMILY = {"gfx90a": "gfx9", "gfx942": "gfx9", "gfx1100": "gfx11", "gfx1201": "gfx12"}
WAVES = {"gfx90a": (64,), "gfx942": (64,), "gfx1100": (32, 64), "gfx1201": (32, 64)}
FACTS = json.loads((Path(__file__).parent / "matrix_layout_facts.json").read_text())["layouts"]
NREGS = 160
D0, A0, B0, C0, I0 = 0, 40, 56, 72, 120     # first register of D, A, B, C, the sparse index


def all_ops():
    return [(t, name, wave) for t in FAMILY for name in sm.TARGET_OPS[t] for wave in WAVES[t]]


# --- the layouts against the calculator ---------------------------------------------------------

def _layout(target: str, op: sm.MatrixOp, matrix: str, wave: int, mods: dict):
    family = FAMILY[target]
    name = "index" if matrix == "k" else matrix
    if family == "gfx9":
        return sm.gfx9_layout(op, name, mods.get("cbsz", 0), mods.get("abid", 0),
                              mods.get("blgp", 0))
    if family == "gfx12":
        return sm.gfx12_layout(op, name, wave, mods.get("opsel", 0))
    return sm.gfx11_layout(op, name, wave)


def _facts_by_instruction() -> dict[tuple[str, str], list[dict]]:
    grouped: dict[tuple[str, str], list[dict]] = {}
    for record in FACTS:
        grouped.setdefault((record["target"], record["name"]), []).append(record)
    return grouped


@pytest.mark.parametrize("target,name", sorted(_facts_by_instruction()))
def test_operand_layouts_agree_with_the_matrix_instruction_calculator(target, name):
    records = _facts_by_instruction()[(target, name)]
    assert {r["matrix"] for r in records} >= {"a", "b", "c"}
    for record in records:
        _check_facts(record)


def _check_facts(record: dict) -> None:
    target, wave, matrix, mods = record["target"], record["wave"], record["matrix"], record["mods"]
    op = sm.matrix_op(FAMILY[target], record["name"])
    assert op is not None
    lane, slot = _layout(target, op, matrix, wave, mods)
    bits = sm.BITS[op.acc if matrix == "c" else op.b if matrix == "b" else op.a]
    for block, row, col, reg, bit, width, *lanes in record["facts"]:
        if matrix == "k":          # the 4 index bits of the group holding k = col
            where = lane[block, row, col // 4]
            got = (0, int(slot[block, row, col // 4]), 4)
        elif matrix == "a" and op.sparse:   # the storage of the group's two kept elements
            u = 2 * (col // 4)
            where = lane[block, row, u]
            start = int(slot[block, row, u]) * bits
            got = (start // 32, start % 32 if width < 32 else 0, min(2 * bits, 32))
        else:
            where = lane[block, row, col]
            start = int(slot[block, row, col]) * bits
            if FAMILY[target] == "gfx11" and matrix == "c" and bits == 16:
                got = (int(slot[block, row, col]), 16 * (mods.get("opsel", 0) >> 2), 16)
            else:
                got = (start // 32, start % 32, bits)
        fact = f"{target} {record['name']} w{wave} {matrix}{mods} [{block}][{row}][{col}]"
        assert got == (reg, bit, width), f"{fact}: register/bit/width {got}, calculator " \
                                         f"{(reg, bit, width)}"
        # RDNA3 reads A and B replicated in each 16 lanes: the first copy is the one placed
        assert int(where) == lanes[0], f"{fact}: lane {int(where)}, calculator {lanes}"


@pytest.mark.parametrize("target,line,fact", [
    # the calculator README's own worked examples
    ("gfx90a", "v_mfma_f32_4x4x4f16", ("a", {}, (4, 1, 2), (1, 0, 17))),     # A[1][2].B4 = v1{17}.[15:0]
    ("gfx90a", "v_mfma_f32_4x4x4f16", ("c", {}, (1, 3, 2), (3, 0, 6))),      # D[3][2].B1 = v3{6}
    ("gfx942", "v_smfmac_f32_16x16x32_f16", ("k", {}, (0, 2, 31), (0, 4, 50))),   # v0{50}.[7:4]
    ("gfx942", "v_smfmac_f32_16x16x32_f16", ("k", {"abid": 3}, (0, 2, 31), (0, 28, 50))),
    ("gfx1201", "v_swmmac_f32_16x16x32_f16", ("k", {}, (0, 2, 31), (0, 12, 18))),  # v0{18}.[15:12]
    ("gfx1201", "v_swmmac_f32_16x16x32_f16", ("k", {"opsel": 1}, (0, 2, 31), (0, 28, 18))),
])
def test_the_calculator_readme_examples(target, line, fact):
    matrix, mods, (block, row, col), (reg, bit, lane_want) = fact
    op = sm.matrix_op(FAMILY[target], line)
    lane, slot = _layout(target, op, matrix, 64 if FAMILY[target] == "gfx9" else 32, mods)
    if matrix == "k":
        assert (int(lane[block, row, col // 4]), int(slot[block, row, col // 4])) == (lane_want, bit)
    else:
        bits = sm.BITS[op.acc if matrix == "c" else op.a]
        start = int(slot[block, row, col]) * bits
        assert (int(lane[block, row, col]), start // 32, start % 32) == (lane_want, reg, bit)


# --- running one instruction --------------------------------------------------------------------

_ENCODED: dict[tuple[str, int, str], bytes] = {}


def assemble(target: str, wave: int, lines: list[str]) -> None:
    """Assemble the lines not yet cached with one llvm-mc-19 call."""
    missing = sorted({line for line in lines if (target, wave, line) not in _ENCODED})
    if not missing:
        return
    if shutil.which("llvm-mc-19") is None:
        pytest.skip("llvm-mc-19 not found (Debian package llvm-19)")
    attr = ["-mattr=+wavefrontsize64"] if wave == 64 and FAMILY[target] != "gfx9" else []
    proc = subprocess.run(["llvm-mc-19", "-triple=amdgcn-amd-amdhsa", f"-mcpu={target}",
                           "-show-encoding", *attr], input="\n".join(missing) + "\n",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr[:3000]
    found = re.findall(r"encoding: \[([^\]]*)\]", proc.stdout)
    assert len(found) == len(missing), proc.stdout[-2000:]
    for line, enc in zip(missing, found):
        _ENCODED[(target, wave, line)] = bytes(int(x, 16) for x in enc.split(","))


def compiled(target: str, wave: int, line: str):
    assemble(target, wave, [line])
    inst = decode(_ENCODED[(target, wave, line)], target, 0,
                  wavefront_size=wave if FAMILY[target] != "gfx9" else None)[0]
    return inst, compile_instruction(inst, ProgramInfo(FAMILY[target], wave, False, False))


def registers(op: sm.MatrixOp, target: str, wave: int) -> tuple[int, int, int]:
    """VGPRs of A, B and C/D, from the layouts."""
    counts = []
    for matrix, ty in (("a", op.a), ("b", op.b), ("c", op.acc)):
        _, slot = _layout(target, op, matrix, wave, {})
        bits = 32 if FAMILY[target] == "gfx11" and matrix == "c" else sm.BITS[ty]  # half used
        counts.append(max(1, -(-(int(slot.max()) + 1) * bits // 32)))
    return tuple(counts)


def _regs(file: str, first: int, count: int) -> str:
    return f"{file}{first}" if count == 1 else f"{file}[{first}:{first + count - 1}]"


def line_for(target: str, name: str, wave: int, mods: str = "", acc: str = "v",
             ab: str = "v", c: str | None = None) -> str:
    op = sm.matrix_op(FAMILY[target], name)
    na, nb, nd = registers(op, target, wave)
    third = _regs("v", I0, 1) if op.sparse else (c if c is not None else _regs(acc, C0, nd))
    text = f"{name} {_regs(acc, D0, nd)}, {_regs(ab, A0, na)}, {_regs(ab, B0, nb)}, {third}"
    return f"{text} {mods}".strip()


def batch(V: np.ndarray, A: np.ndarray | None, wave: int, exec_mask=None) -> Batch:
    W = V.shape[1]
    live = np.ones((W, wave), bool) if exec_mask is None else exec_mask
    return Batch(0, np.zeros((W, NSREG), np.uint32), V, A, live, np.zeros(W, bool),
                 np.arange(W, dtype=np.int64), np.arange(W, dtype=np.int64))


# --- random operands ----------------------------------------------------------------------------

def random_codes(rng, ty: str, family: str, shape) -> np.ndarray:
    """Raw bits of random finite values of type ``ty`` (some zeros and denormals)."""
    size = int(np.prod(shape))
    if ty in ("i8", "iu8", "iu4"):
        return rng.integers(0, 1 << sm.BITS[ty], size).reshape(shape).astype(np.uint64)
    if ty == "i32":
        return (rng.integers(-2 ** 20, 2 ** 20, size) & 0xFFFFFFFF).reshape(shape).astype(np.uint64)
    if ty in ("fp8", "bf8"):
        table = sm._FP8[(ty, "gfx9" if family == "gfx9" else "gfx12")]
        good = np.flatnonzero(np.isfinite(table))
        return rng.choice(good, size).reshape(shape).astype(np.uint64)
    values = rng.standard_normal(size) * 2.0
    values[rng.random(size) < 0.05] = 0.0
    dtype = {"f16": np.float16, "bf16": np.float32, "f32": np.float32, "xf32": np.float32,
             "f64": np.float64}[ty]
    raw = values.astype(dtype)
    if ty == "f16":
        bits = raw.view(np.uint16).astype(np.uint64)
        tiny = rng.random(size) < 0.05          # f16 denormals
        bits[tiny] = rng.integers(1, 0x400, int(tiny.sum())).astype(np.uint64) | (bits[tiny] & np.uint64(0x8000))
        return bits.reshape(shape)
    if ty == "bf16":
        return (raw.view(np.uint32) >> 16).astype(np.uint64).reshape(shape)
    return raw.view(np.uint32 if dtype is np.float32 else np.uint64).astype(np.uint64) \
        .reshape(shape)


def fill(file: np.ndarray, first: int, regs: int, ty: str, rng, family: str) -> None:
    """Random elements of ``ty`` in registers first .. first + regs - 1 of every lane."""
    bits = sm.BITS[ty]
    W, L = file.shape[1], file.shape[2]
    if bits == 64:
        codes = random_codes(rng, ty, family, (regs // 2, W, L))
        file[first:first + regs:2] = (codes & 0xFFFFFFFF).astype(np.uint32)
        file[first + 1:first + regs:2] = (codes >> np.uint64(32)).astype(np.uint32)
        return
    per = 32 // bits
    codes = random_codes(rng, ty, family, (regs, W, L, per))
    shifts = (np.arange(per) * bits).astype(np.uint64)
    file[first:first + regs] = np.bitwise_or.reduce(codes << shifts, axis=3).astype(np.uint32)


def elements(file: np.ndarray, first: int, regs: int, ty: str, family: str,
             signed: bool = True) -> np.ndarray:
    """The registers' elements ``[W, L, slot]`` as float64 / int64."""
    bits = sm.BITS[ty]
    block = file[first:first + regs].astype(np.uint64)
    if bits == 64:
        raw = (block[0::2] | (block[1::2] << np.uint64(32))).transpose(1, 2, 0)
    else:
        per = 32 // bits
        raw = (block[..., None] >> (np.arange(per, dtype=np.uint64) * np.uint64(bits))) \
            & np.uint64((1 << bits) - 1)
        raw = raw.transpose(1, 2, 0, 3).reshape(block.shape[1], block.shape[2], -1)
    return sm.decode_elements(ty, raw, family, signed)


def acc_elements(file: np.ndarray, first: int, regs: int, op: sm.MatrixOp, target: str,
                 half: int = 0) -> np.ndarray:
    """C/D elements ``[W, L, slot]``; a gfx11 16-bit C/D has one per register (OPSEL[2] half)."""
    family = FAMILY[target]
    if family == "gfx11" and sm.BITS[op.acc] == 16:
        raw = (file[first:first + regs].astype(np.uint64) >> np.uint64(16 * half)) \
            & np.uint64(0xFFFF)
        return sm.decode_elements(op.acc, raw.transpose(1, 2, 0), family)
    return elements(file, first, regs, op.acc, family)


def gather(values: np.ndarray, layout) -> np.ndarray:
    lane, slot = layout
    return values[:, lane, slot]


# --- reference arithmetic -----------------------------------------------------------------------

FORMATS = {"f64": (52, -1022, 1023), "f32": (23, -126, 127), "f16": (10, -14, 15),
           "bf16": (7, -126, 127)}


def round_exact(q: Fraction, ty: str) -> float:
    """q rounded to nearest even in format ``ty`` (denormals kept, overflow to infinity)."""
    mant, emin, emax = FORMATS[ty]
    if q == 0:
        return 0.0
    sign = -1.0 if q < 0 else 1.0
    q = abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    e = max(e, emin)
    n = round(q * Fraction(2) ** (mant - e))            # Fraction rounds half to even
    value = Fraction(n) * Fraction(2) ** (e - mant)
    if value > (2 - Fraction(2) ** -mant) * Fraction(2) ** emax:
        return sign * math.inf
    return sign * float(value)


def ref_fma(a: np.ndarray, b: np.ndarray, c: float, ty: str) -> float:
    d = c
    for x, y in zip(a, b):
        d = round_exact(Fraction(x) * Fraction(y) + Fraction(d), ty)
    return d


def ref_round_once(a: np.ndarray, b: np.ndarray, c: float, ty: str) -> float:
    """The exact sum rounded once. math.fsum gives it rounded to float64 (s); when both
    float64 neighbours of s round to the same ``ty`` value, so does the exact sum (rounding is
    monotonic), else the sum is rounded from exact rationals."""
    terms = [float(x) * float(y) for x, y in zip(a, b) if x != 0 and y != 0] + [float(c)]
    s = math.fsum(terms)
    cast = {"f32": np.float32, "f16": np.float16}.get(ty)    # numpy rounds these correctly
    if cast is not None:
        below, above = (float(cast(np.nextafter(s, x))) for x in (-math.inf, math.inf))
    else:
        below, above = (round_exact(Fraction(np.nextafter(s, x)), ty)
                        for x in (-math.inf, math.inf))
    if below == above:
        return below
    total = sum((Fraction(x) * Fraction(y) for x, y in zip(a, b)), Fraction(c))
    return round_exact(total, ty)


def _split(x: float, min_exp: int) -> tuple[float, int]:
    if x == 0:
        return 0.0, -126
    m, e = math.frexp(x)
    s, e = 2 * m, e - 1
    if e < min_exp:
        s, e = s * 2.0 ** (e - min_exp), min_exp
    return s, e


def _aligned_sum(terms: list[tuple[float, int]]) -> tuple[float, int]:
    top = max(e for _, e in terms)
    return sum(math.trunc(s * 2.0 ** (24 + e - top)) for s, e in terms) * 2.0 ** -24, top


def ref_cdna3(a, b, c: float, op: sm.MatrixOp) -> float:
    """MMA-Sim's CDNA3 fused dot-add, group by group (arXiv:2511.10909)."""
    min_a, min_b = sm._MIN_EXP[op.a], sm._MIN_EXP[op.b]
    fp8 = op.a in ("fp8", "bf8")
    d = c
    for g in range(0, len(a), op.group):
        terms = []
        for x, y in zip(a[g:g + op.group], b[g:g + op.group]):
            sx, ex = _split(x, min_a)
            sy, ey = _split(y, min_b)
            terms.append((sx * sy, ex + ey))
        if fp8:
            s0, e0 = _aligned_sum(terms[0::2])
            s1, e1 = _aligned_sum(terms[1::2])
            top = max(e0, e1)
            s = (math.floor(s0 * 2.0 ** (24 + e0 - top)) + math.floor(s1 * 2.0 ** (24 + e1 - top))) \
                * 2.0 ** -24
        else:
            s, top = _aligned_sum(terms)
        sc, ec = _split(d, -126)
        top2 = max(top, ec)
        s = math.floor(s * 2.0 ** (31 + top - top2)) * 2.0 ** -31
        sc = math.floor(sc * 2.0 ** (24 + ec - top2)) * 2.0 ** -24
        if fp8 and ec < top2 - 25:
            sc = 0.0
        d = float(np.float32((s + sc) * 2.0 ** top2))
    return d


def ref_cdna2(a, b, c: float, op: sm.MatrixOp) -> float:
    """MMA-Sim's CDNA2 f16/bf16 MFMA: pairwise f32 sums of groups, denormals flushed."""
    def flush(x, keep_sign=True):
        return np.float32(x * 0.0 if keep_sign else 0.0) if abs(x) < 2.0 ** -126 else np.float32(x)

    def pairwise(p):
        if len(p) == 1:
            return p[0]
        h = len(p) // 2
        return flush(np.float32(pairwise(p[:h]) + pairwise(p[h:])))

    lo = 2.0 ** sm._MIN_EXP[op.a]
    a = [0.0 if abs(x) < lo else x for x in a]
    b = [0.0 if abs(y) < lo else y for y in b]
    d = flush(np.float32(c), False)
    products = [flush(np.float32(np.float32(x) * np.float32(y))) for x, y in zip(a, b)]
    for g in range(0, len(products), op.group):
        d = flush(np.float32(d + pairwise(products[g:g + op.group])))
    return float(d)


def reference(op: sm.MatrixOp, A: np.ndarray, B: np.ndarray, C: np.ndarray,
              clamp: bool = False) -> np.ndarray:
    """D for matrices ``[W, blocks, M, K]`` / ``[W, blocks, K, N]`` / ``[W, blocks, M, N]``."""
    if op.model == "int":
        total = np.einsum("wbik,wbkj->wbij", A, B) + C
        if clamp:
            return np.clip(total, -2 ** 31, 2 ** 31 - 1)
        return (total + 2 ** 31) % 2 ** 32 - 2 ** 31
    out = np.zeros(C.shape)
    for index in np.ndindex(*C.shape):
        w, blk, i, j = index
        a, b, c = A[w, blk, i, :], B[w, blk, :, j], float(C[index])
        if op.model == "fma":
            out[index] = ref_fma(a, b, c, op.acc)
        elif op.model == "cdna3":
            out[index] = ref_cdna3(a, b, c, op)
        elif op.model == "cdna2":
            out[index] = ref_cdna2(a, b, c, op)
        else:
            out[index] = ref_round_once(a, b, c, op.acc)
    return out


def error_bound(op: sm.MatrixOp, A, B, C) -> np.ndarray:
    """What accumulating in the destination's precision may lose: (K + 2) units in the last
    place of the destination per unit of sum(|a*b|) + |C|."""
    mant = FORMATS[op.acc][0]
    magnitude = np.einsum("wbik,wbkj->wbij", np.abs(A), np.abs(B)) + np.abs(C)
    tiny = 2.0 ** (FORMATS[op.acc][1] - mant)
    return (op.k + 2) * 2.0 ** -mant * magnitude + 8 * tiny


# --- one instruction against the references --------------------------------------------------------

PAIRS = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]


def run_and_check(target: str, name: str, wave: int, mods: dict | None = None, *,
                  acc: str = "v", ab: str = "v", W: int = 1, seed: int = 0,
                  setup=None, c_const: tuple[str, float] | None = None) -> None:
    """Run ``name`` with random operands (and the given modifiers) and compare D with the
    reference; ``setup(V)`` may overwrite registers before the run; ``c_const`` is C as an
    inline constant (its text and value)."""
    mods = dict(mods or {})
    family = FAMILY[target]
    op = sm.matrix_op(family, name)
    rng = np.random.default_rng(zlib.crc32(f"{target} {name} {wave} {seed} {mods}".encode()))
    text = " ".join(f"{k}:{v}" for k, v in mods.items() if k in ("cbsz", "abid", "blgp"))
    if "neg_lo" in mods:
        text += " neg_lo:[%d,%d,%d]" % tuple((mods["neg_lo"] >> n) & 1 for n in range(3))
    if "neg_hi" in mods:
        text += " neg_hi:[%d,%d,%d]" % tuple((mods["neg_hi"] >> n) & 1 for n in range(3))
    if mods.get("neg"):       # gfx942 f64: the BLGP field as neg:[A,B,C]
        text += " neg:[%d,%d,%d]" % tuple((mods["neg"] >> n) & 1 for n in range(3))
    if mods.get("opsel") and op.sparse:
        text += f" index_key:{mods['opsel']}"
    elif mods.get("opsel"):
        text += " op_sel:[%d,%d,%d]" % tuple((mods["opsel"] >> n) & 1 for n in range(3))
    if mods.get("clamp"):
        text += " clamp"
    line = line_for(target, name, wave, text, acc=acc, ab=ab,
                    c=c_const[0] if c_const else None)
    inst, fn = compiled(target, wave, line)
    assert getattr(fn, "unimplemented", None) is None, (line, fn.unimplemented)
    na, nb, nd = registers(op, target, wave)
    V = np.zeros((NREGS, W, wave), np.uint32)
    AG = np.zeros((NREGS, W, wave), np.uint32) if family == "gfx9" else None
    ab_file = AG if ab == "a" else V
    cd_file = AG if acc == "a" else V
    fill(ab_file, A0, na, op.a, rng, family)
    fill(ab_file, B0, nb, op.b, rng, family)
    c_first = D0 if op.sparse else C0
    fill(cd_file, c_first, nd, op.acc, rng, family)
    if family == "gfx11":        # RDNA3 reads A and B replicated in each 16 lanes
        for first, count in ((A0, na), (B0, nb)):
            ab_file[first:first + count] = np.tile(ab_file[first:first + count, :, :16],
                                                   (1, 1, wave // 16))
    if op.sparse:
        pick = rng.integers(0, 6, (W, wave, 8))
        nibbles = np.array([p0 | p1 << 2 for p0, p1 in PAIRS], np.uint32)[pick]
        V[I0] = np.bitwise_or.reduce(nibbles << (4 * np.arange(8, dtype=np.uint32)), axis=2)
    if setup is not None:
        setup(V if acc == "v" else AG)
    before = (V.copy(), None if AG is None else AG.copy())
    # reference inputs, read out of the registers as the documented layouts place them
    neg_lo, neg_hi = mods.get("neg_lo", 0), mods.get("neg_hi", 0)
    signed_a = signed_b = True
    if op.model == "int" and family != "gfx9":
        signed_a, signed_b = bool(neg_lo & 1), bool(neg_lo & 2)
    ea = elements(ab_file, A0, na, op.a, family, signed_a)
    eb = elements(ab_file, B0, nb, op.b, family, signed_b)
    if op.model != "int" and family != "gfx9":
        for e, bit in ((ea, 1), (eb, 2)):
            parity = np.arange(e.shape[2]) % 2
            sign = np.where(parity == 0, -1.0 if neg_lo & bit else 1.0,
                            -1.0 if neg_hi & bit else 1.0) if sm.BITS[op.a] == 16 else \
                (-1.0 if neg_lo & bit else 1.0)
            e *= sign
    if mods.get("neg"):
        ea *= -1.0 if mods["neg"] & 1 else 1.0
        eb *= -1.0 if mods["neg"] & 2 else 1.0
    half = (mods.get("opsel", 0) >> 2) & 1 if family == "gfx11" else 0
    ec = acc_elements(cd_file, c_first, nd, op, target, half)
    lay = {m: _layout(target, op, m, wave, mods) for m in ("a", "b", "c")}
    A = gather(ea, lay["a"])
    if op.sparse:
        lane, bit = _layout(target, op, "k", wave, mods)
        nib = (V[I0][:, lane] >> bit.astype(np.uint32)) & np.uint32(0xF)
        dense = np.zeros(A.shape[:-1] + (op.k,))
        for w, blk, i, q in np.ndindex(*nib.shape):
            p0, p1 = int(nib[w, blk, i, q]) & 3, int(nib[w, blk, i, q]) >> 2
            dense[w, blk, i, 4 * q + p0] = A[w, blk, i, 2 * q]
            dense[w, blk, i, 4 * q + p1] = A[w, blk, i, 2 * q + 1]
        A = dense.astype(A.dtype)
    B = gather(eb, lay["b"])
    C = gather(ec, lay["c"])
    if c_const:
        C = np.full(C.shape, c_const[1], C.dtype)
    if op.model != "int" and family != "gfx9":
        if neg_hi & 4:
            C = np.abs(C)
        if neg_lo & 4:
            C = -C
    if mods.get("neg", 0) & 4:
        C = -C
    if op.flush:
        lo = 2.0 ** sm._MIN_EXP[op.a]
        A = np.where(np.abs(A) < lo, 0.0, A)
        B = np.where(np.abs(B) < lo, 0.0, B)
    with np.errstate(all="ignore"):
        fn(batch(V, AG, wave), None)
    got = gather(acc_elements(cd_file, D0, nd, op, target, half), lay["c"])
    want = reference(op, A, B, C, clamp=bool(mods.get("clamp")))
    where = f"{target} w{wave} {line}"
    assert np.array_equal(got, want), f"{where}: {np.argwhere(got != want)[:5]} " \
                                      f"{got[got != want][:5]} != {want[got != want][:5]}"
    if op.model != "int":
        exact = np.einsum("wbik,wbkj->wbij", A, B) + C
        assert (np.abs(got - exact) <= error_bound(op, A, B, C)).all(), where
    if family == "gfx11" and sm.BITS[op.acc] == 16:   # the other half of D is kept
        other = np.uint32(0xFFFF << (16 * (1 - half)))
        assert ((cd_file[D0:D0 + nd] & other) == (before[0][D0:D0 + nd] & other)).all(), where
    # nothing outside D changed
    V_after, AG_after = V, AG
    for file_before, file_after, name_ in ((before[0], V_after, "v"), (before[1], AG_after, "a")):
        if file_before is None:
            continue
        changed = np.flatnonzero((file_before != file_after).any(axis=(1, 2)))
        allowed = set(range(D0, D0 + nd)) if name_ == acc else set()
        assert set(changed.tolist()) <= allowed, (where, name_, changed)


@pytest.mark.parametrize("target,name,wave", all_ops())
def test_every_matrix_instruction_matches_its_reference(target, name, wave):
    run_and_check(target, name, wave, W=2)      # two waves: each computes its own product


# --- modifiers ----------------------------------------------------------------------------------

@pytest.mark.parametrize("target,name,cbsz,abid", [
    ("gfx942", "v_mfma_f32_4x4x4_16b_f16", 4, 13), ("gfx942", "v_mfma_f32_4x4x4_16b_f16", 1, 1),
    ("gfx942", "v_mfma_f32_16x16x1_4b_f32", 2, 3), ("gfx942", "v_mfma_i32_32x32x4_2b_i8", 1, 0),
    ("gfx942", "v_mfma_f32_32x32x4_2b_bf16", 1, 1), ("gfx90a", "v_mfma_f32_16x16x2bf16", 2, 2),
    ("gfx90a", "v_mfma_i32_4x4x4i8", 3, 5),
])
def test_cbsz_abid_broadcast_one_a_block_to_others(target, name, cbsz, abid):
    run_and_check(target, name, 64, {"cbsz": cbsz, "abid": abid})


@pytest.mark.parametrize("blgp", range(8))
@pytest.mark.parametrize("target,name", [("gfx942", "v_mfma_f32_32x32x2_f32"),
                                         ("gfx942", "v_mfma_i32_4x4x4_16b_i8"),
                                         ("gfx90a", "v_mfma_f32_32x32x8f16")])
def test_blgp_swizzles_the_lanes_b_is_read_from(target, name, blgp):
    run_and_check(target, name, 64, {"blgp": blgp})


@pytest.mark.parametrize("neg", range(1, 8))
@pytest.mark.parametrize("name", ["v_mfma_f64_16x16x4_f64", "v_mfma_f64_4x4x4_4b_f64"])
def test_gfx942_f64_mfma_negates_a_b_c_with_the_blgp_bits(name, neg):
    run_and_check("gfx942", name, 64, {"neg": neg})


@pytest.mark.parametrize("wave", [32, 64])
@pytest.mark.parametrize("name,neg_lo,neg_hi", [
    ("v_wmma_f32_16x16x16_f16", 1, 0), ("v_wmma_f32_16x16x16_f16", 0, 2),
    ("v_wmma_f32_16x16x16_f16", 7, 7), ("v_wmma_f32_16x16x16_bf16", 3, 4),
    ("v_wmma_f16_16x16x16_f16", 4, 4), ("v_wmma_bf16_16x16x16_bf16", 5, 1),
    ("v_swmmac_f32_16x16x32_f16", 3, 3), ("v_swmmac_bf16_16x16x32_bf16", 2, 1),
])
def test_gfx12_neg_lo_neg_hi_negate_halves_and_take_abs_of_c(name, neg_lo, neg_hi, wave):
    run_and_check("gfx1201", name, wave, {"neg_lo": neg_lo, "neg_hi": neg_hi})


@pytest.mark.parametrize("target,wave", [("gfx1201", 32), ("gfx1201", 64), ("gfx1100", 32)])
@pytest.mark.parametrize("name", ["v_wmma_i32_16x16x16_iu8", "v_wmma_i32_16x16x16_iu4"])
@pytest.mark.parametrize("neg_lo", range(4))
def test_integer_wmma_neg_bits_say_which_of_a_and_b_are_signed(target, wave, name, neg_lo):
    run_and_check(target, name, wave, {"neg_lo": neg_lo})


@pytest.mark.parametrize("clamp", [False, True])
@pytest.mark.parametrize("name", ["v_wmma_i32_16x16x16_iu8", "v_wmma_i32_16x16x32_iu4",
                                  "v_swmmac_i32_16x16x32_iu8"])
def test_integer_wmma_clamp_saturates_and_otherwise_wraps(name, clamp):
    op = sm.matrix_op("gfx12", name)
    nd = registers(op, "gfx1201", 32)[2]

    def near_the_top(V):   # C at 2**31 - 100: unsigned products carry D past the top
        V[C0:C0 + nd] = np.uint32(2 ** 31 - 100)
        V[D0:D0 + nd] = np.uint32(2 ** 31 - 100)
    mods = {"neg_lo": 0}
    if clamp:
        mods["clamp"] = 1
    run_and_check("gfx1201", name, 32, mods, setup=near_the_top)


@pytest.mark.parametrize("name,abid", [(n, a) for n, sets in (
    ("v_smfmac_f32_16x16x32_f16", 4), ("v_smfmac_f32_32x32x16_bf16", 4),
    ("v_smfmac_i32_32x32x32_i8", 2), ("v_smfmac_f32_16x16x64_fp8_bf8", 2)) for a in range(sets)])
def test_smfmac_abid_picks_the_set_of_compression_indices(name, abid):
    run_and_check("gfx942", name, 64, {"abid": abid})
    run_and_check("gfx942", name, 64, {"cbsz": 1, "abid": abid})   # CBSZ != 0: set 0


@pytest.mark.parametrize("wave", [32, 64])
@pytest.mark.parametrize("name", ["v_swmmac_f32_16x16x32_f16", "v_swmmac_i32_16x16x32_iu8",
                                  "v_swmmac_i32_16x16x32_iu4", "v_swmmac_i32_16x16x64_iu4",
                                  "v_swmmac_f32_16x16x32_bf8_fp8"])
def test_swmmac_index_key_picks_the_set_of_compression_indices(name, wave):
    op = sm.matrix_op("gfx12", name)
    for opsel in range(1, sm._gfx12_sets(op, wave)):
        run_and_check("gfx1201", name, wave, {"opsel": opsel})


@pytest.mark.parametrize("opsel", [0, 4])
@pytest.mark.parametrize("wave", [32, 64])
@pytest.mark.parametrize("name", ["v_wmma_f16_16x16x16_f16", "v_wmma_bf16_16x16x16_bf16"])
def test_gfx11_op_sel_picks_the_half_of_c_and_d(name, wave, opsel):
    run_and_check("gfx1100", name, wave, {"opsel": opsel} if opsel else {})


@pytest.mark.parametrize("acc,ab", [("a", "v"), ("a", "a"), ("v", "a")])
@pytest.mark.parametrize("target,name", [("gfx942", "v_mfma_f32_32x32x8_f16"),
                                         ("gfx942", "v_mfma_f64_16x16x4_f64"),
                                         ("gfx942", "v_smfmac_f32_16x16x32_bf16"),
                                         ("gfx90a", "v_mfma_i32_16x16x16i8")])
def test_accumulation_registers_agprs_and_vgprs(target, name, acc, ab):
    run_and_check(target, name, 64, acc=acc, ab=ab)


@pytest.mark.parametrize("target,name,wave,text,value", [
    ("gfx942", "v_mfma_f32_32x32x8_f16", 64, "0", 0.0),
    ("gfx942", "v_mfma_f32_16x16x4_f32", 64, "1.0", 1.0),
    ("gfx942", "v_mfma_i32_16x16x32_i8", 64, "-7", -7),
    ("gfx942", "v_mfma_f64_16x16x4_f64", 64, "-2.0", -2.0),
    ("gfx1201", "v_wmma_f32_16x16x16_f16", 32, "1.0", 1.0),
    ("gfx1201", "v_wmma_i32_16x16x16_iu8", 64, "0", 0),
    ("gfx1201", "v_wmma_f16_16x16x16_f16", 32, "0", 0.0),      # clang's first accumulation
    ("gfx1201", "v_wmma_bf16_16x16x16_bf16", 64, "0", 0.0),
])
def test_c_as_an_inline_constant(target, name, wave, text, value):
    run_and_check(target, name, wave, c_const=(text, value))


# --- what is not established stops the queue naming it ---------------------------------------------

def test_a_matrix_instruction_with_inactive_lanes_stops_naming_it():
    line = line_for("gfx942", "v_mfma_f32_16x16x16_f16", 64)
    _, fn = compiled("gfx942", 64, line)
    V = np.zeros((NREGS, 1, 64), np.uint32)
    live = np.ones((1, 64), bool)
    live[0, 40:] = False
    with pytest.raises(NotImplementedInstruction, match="inactive lanes"):
        fn(batch(V, np.zeros_like(V), 64, live), None)
    assert not V[D0:D0 + 4].any()


@pytest.mark.parametrize("target,line,why", [
    ("gfx942", "v_mfma_f32_32x32x8_f16 v[0:15], v[40:41], v[56:57], v[72:87] cbsz:1 abid:0",
     "takes none"),
    ("gfx942", "v_mfma_f32_32x32x8_f16 v[0:15], v[40:41], v[56:57], v[72:87] blgp:3",
     "takes none"),
    ("gfx942", "v_mfma_f32_4x4x4_16b_f16 v[0:3], v[40:41], v[56:57], v[72:75] cbsz:1 abid:3",
     "16 blocks"),
])
def test_modifiers_an_instruction_does_not_take_leave_it_unimplemented(target, line, why):
    _, fn = compiled(target, 64, line)
    assert why in getattr(fn, "unimplemented", "")


@pytest.mark.parametrize("name,fields,why", [
    ("v_wmma_f32_16x16x16_f16", {"op_sel": 1}, "dense WMMA"),
    ("v_wmma_f32_16x16x16_fp8_fp8", {"neg_lo": 1}, "takes none"),
    ("v_wmma_i32_16x16x16_iu8", {"neg_hi": 1}, "integer"),
    ("v_wmma_i32_16x16x16_iu8", {"neg_lo": 4}, "integer"),
    ("v_swmmac_f32_16x16x32_f16", {"op_sel": 2}, "2 sets"),
])
def test_gfx12_encodings_without_a_documented_meaning_stay_unimplemented(name, fields, why):
    import dataclasses
    from types import MappingProxyType

    inst, _ = compiled("gfx1201", 32, line_for("gfx1201", name, 32))
    changed = dataclasses.replace(inst, fields=MappingProxyType({**inst.fields, **fields}))
    fn = compile_instruction(changed, ProgramInfo("gfx12", 32, False, False))
    assert why in getattr(fn, "unimplemented", "")


def test_gfx11_wmma_with_lane_halves_that_disagree_stops():
    _, fn = compiled("gfx1100", 32, line_for("gfx1100", "v_wmma_f32_16x16x16_f16", 32))
    V = np.zeros((NREGS, 1, 32), np.uint32)
    V[A0, 0, 20] = 0x3C00            # lane 20 differs from lane 4, its copy
    with pytest.raises(NotImplementedInstruction, match="lane halves"):
        fn(batch(V, None, 32), None)


@pytest.mark.parametrize("target,name,wave", [("gfx942", "v_smfmac_f32_16x16x32_f16", 64),
                                              ("gfx1201", "v_swmmac_f32_16x16x32_f16", 32)])
def test_a_compression_index_naming_one_position_twice_stops(target, name, wave):
    _, fn = compiled(target, wave, line_for(target, name, wave))
    V = np.zeros((NREGS, 1, wave), np.uint32)
    V[I0] = 0x44444440      # the first group of every lane: positions 0 and 0
    with pytest.raises(NotImplementedInstruction, match="twice"):
        fn(batch(V, np.zeros_like(V) if FAMILY[target] == "gfx9" else None, wave), None)


def test_fp8_formats_per_generation():
    # gfx942 FNUZ: 0x80 is NaN, no infinity, E4M3 max 240 (bias 8), E5M2 max 57344 (bias 16);
    # gfx12 OCP: E4M3 max 448 (bias 7, S.1111.111 NaN), E5M2 with infinities (bias 15)
    codes = np.array([0x80, 0x7F, 0x01, 0x08, 0x7C, 0x7B], np.uint64)
    fnuz8 = sm.decode_elements("fp8", codes, "gfx9")
    assert np.isnan(fnuz8[0]) and fnuz8[1] == 240 and fnuz8[2] == 2.0 ** -10 \
        and fnuz8[3] == 2.0 ** -7
    fnuz5 = sm.decode_elements("bf8", codes, "gfx9")
    assert np.isnan(fnuz5[0]) and fnuz5[1] == 57344 and fnuz5[2] == 2.0 ** -17
    ocp8 = sm.decode_elements("fp8", codes, "gfx12")
    assert ocp8[0] == 0 and np.isnan(ocp8[1]) and ocp8[2] == 2.0 ** -9 and ocp8[3] == 2.0 ** -6
    assert sm.decode_elements("fp8", np.array([0x7E], np.uint64), "gfx12")[0] == 448
    ocp5 = sm.decode_elements("bf8", codes, "gfx12")
    assert ocp5[0] == 0 and np.isnan(ocp5[1]) and ocp5[4] == np.inf and ocp5[5] == 57344


def test_float_matrix_instructions_under_a_flushing_mode_stay_unimplemented():
    inst, _ = compiled("gfx942", 64, line_for("gfx942", "v_mfma_f32_16x16x16_f16", 64))
    fn = compile_instruction(inst, ProgramInfo("gfx9", 64, True, True))
    assert "flushes denormals" in fn.unimplemented
    inst, _ = compiled("gfx942", 64, line_for("gfx942", "v_mfma_i32_16x16x32_i8", 64))
    assert getattr(compile_instruction(inst, ProgramInfo("gfx9", 64, True, True)),
                   "unimplemented", None) is None
