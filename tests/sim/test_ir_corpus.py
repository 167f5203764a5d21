"""The IR fidelity corpus: LLVM IR kernels written as a user of hsapy's IR route writes them
(tests/sim/ir_corpus_sources.py), built by ``hsapy.toolchain.build_ir`` (llvmlite's LLVM, O2,
ld.lld) for gfx942 (wave64) and gfx1201 (wave32 and wave64), run through hsapy's public API on
the simulator under the interpreter and the JIT, and checked against numpy references.

The IR route reaches code clang's HIP front end rarely emits: intrinsics of every integer and
float width, fast-math flags, saturating conversions, bfloat arithmetic, atomics of every
operation and scope, raw cross-lane intrinsics, constant and private address spaces, byref
kernel arguments and irreducible control flow. docs/simulator-fidelity.md describes the corpus.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import ir_corpus_sources as sources
import numpy as np
import pytest
from corpus_cases import KernelRun, same

from hsapy import toolchain


@dataclass(frozen=True)
class Build:
    """One build of a source and the engine that runs it: the test id names all three."""

    target: str
    wave: int
    engine: str

    @property
    def id(self) -> str:
        name = self.target if self.target == "gfx942" else f"{self.target}w{self.wave}"
        return f"{name}-{self.engine}"

    @property
    def gfx12(self) -> bool:
        return self.target.startswith("gfx12")


# Every build under the interpreter; the JIT (which compiles each kernel with llvmlite, seconds
# per kernel) on gfx942 only and for JIT_CASES only, to keep the module inside the CI budget.
BUILDS = [Build("gfx942", 64, "interp"), Build("gfx1201", 32, "interp"),
          Build("gfx1201", 64, "interp"), Build("gfx942", 64, "jit")]


class Corpus:
    """Code objects built once per (source, target, wave) and one simulated runtime per engine."""

    def __init__(self) -> None:
        self.code: dict[tuple[str, str, int], bytes] = {}
        self.runtimes: dict[str, object] = {}
        self.queues: dict[tuple[str, str], object] = {}
        self.executables: list[object] = []

    def build(self, source: str, build: Build) -> bytes:
        key = (source, build.target, build.wave)
        if key not in self.code:
            text = SOURCES[source]
            if callable(text):
                text = text(build.target, build.wave)
            try:
                self.code[key] = toolchain.build_ir(text, build.target,
                                                    wavefront_size=build.wave)
            except toolchain.ToolNotFoundError as exc:
                pytest.skip(f"building IR needs ld.lld: {exc}")
        return self.code[key]

    def run(self, source: str, build: Build) -> KernelRun:
        from hsapy.runtime import Runtime

        runtime = self.runtimes.get(build.engine)
        if runtime is None:
            # A kernel that loops for ever (a defect) stops after 20 s instead of the default 60.
            runtime = self.runtimes[build.engine] = Runtime(
                backend="sim", targets=["gfx942", "gfx1201"], watchdog_s=20.0,
                engine=build.engine)
        agent = next(a for a in runtime.gpu_agents if a.name == build.target)
        queue = self.queues.get((build.engine, build.target))
        if queue is None or queue.error is not None or queue.is_closed:
            if queue is not None:
                queue.close()
            queue = self.queues[(build.engine, build.target)] = agent.create_queue(size=64)
        executable = runtime.load(self.build(source, build), agent)
        self.executables.append(executable)
        return KernelRun(executable, agent, queue, build.wave)

    def close(self) -> None:
        for queue in self.queues.values():
            queue.close()
        for executable in self.executables:
            executable.close()
        for runtime in self.runtimes.values():
            runtime.close()


@pytest.fixture(scope="module")
def corpus():
    c = Corpus()
    yield c
    c.close()


@dataclass(frozen=True)
class Case:
    source: str
    check: Callable[[Build, KernelRun], None]


CASES: dict[str, Case] = {}


def case(source: str) -> Callable:
    def register(check: Callable[[Build, KernelRun], None]) -> Callable:
        CASES[check.__name__] = Case(source, check)
        return check
    return register


def grid(n: int) -> tuple[tuple[int], tuple[int]]:
    """Whole workgroups of 64 covering n items (GLOBAL_ID's launch)."""
    return ((n + 63) // 64 * 64,), (64,)


# --- float references: exact values rounded once ------------------------------------------------

# (precision in bits including the implicit one, minimum normal exponent, maximum exponent)
F32 = (24, -126, 127)
F16 = (11, -14, 15)
BF16 = (8, -126, 127)


def round_once(x: Fraction, fmt: tuple[int, int, int]) -> float:
    """The exact value ``x`` rounded to nearest-even in format ``fmt`` (subnormals and overflow
    to infinity included), as a Python float."""
    precision, emin, emax = fmt
    if x == 0:
        return 0.0
    magnitude = abs(x)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    quantum = Fraction(2) ** (max(exponent, emin) - precision + 1)
    rounded = round(magnitude / quantum) * quantum      # round() of a Fraction: half to even
    if rounded >= Fraction(2) ** (emax + 1):
        return float("inf") if x > 0 else float("-inf")
    return float(rounded) if x > 0 else -float(rounded)


def fma_once(a: np.ndarray, b: np.ndarray, c: np.ndarray, fmt: tuple[int, int, int],
             dtype: type) -> np.ndarray:
    """a * b + c with one rounding into ``fmt`` (non-finite operands through float64)."""
    out = []
    for x, y, z in zip(a.tolist(), b.tolist(), c.tolist()):
        if all(np.isfinite((x, y, z))):
            out.append(round_once(Fraction(x) * Fraction(y) + Fraction(z), fmt))
        else:
            out.append(x * y + z)
    return np.array(out, dtype)


def ordinal32(x: np.ndarray) -> np.ndarray:
    """float32 bit patterns as integers ordered like the values (adjacent floats differ by 1)."""
    bits = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


# --- integers -----------------------------------------------------------------------------------

M64 = (1 << 64) - 1


def s64(v: int) -> int:
    return v - (1 << 64) if v >> 63 else v


def s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def _int_row(a: int, b: int) -> list[int]:
    alo, blo, bhi = a & 0xFFFFFFFF, b & 0xFFFFFFFF, b >> 32
    sh = bhi & 31
    fr32 = ((((alo << 32) | blo) >> sh) & 0xFFFFFFFF)
    sh64 = b & 63
    fl64 = (((a << 64 | b) << sh64) >> 64) & M64
    sh64r = a & 63
    fr64 = ((a << 64 | b) >> sh64r) & M64
    pop, lz = bin(a).count("1"), 64 - b.bit_length()
    tz = (a & -a).bit_length() - 1 if a else 64
    counts = pop | lz << 8 | tz << 16 | bin(a & 0xFFFF).count("1") << 24
    ssum = s64(a) + s64(b)
    so = not -(1 << 63) <= ssum < 1 << 63
    uao = alo + blo >= 1 << 32
    smp = s32(alo) * s32(blo)
    smo = not -(1 << 31) <= smp < 1 << 31
    flags = (so | uao << 1 | smo << 2 | (a < b) << 3 | (a * b > M64) << 4
             | (((alo + blo) ^ smp) & 0xFFFFFFFF) << 32)
    # smul.fix.sat: the product scaled by 2**-16 and saturated; LangRef leaves the rounding
    # direction of an inexact result open, so either neighbour is checked by the caller
    fix = max(min((s32(alo) * s32(blo)) >> 16, (1 << 31) - 1), -(1 << 31))
    fixabs = (fix & 0xFFFFFFFF) | (abs(s32(alo)) & 0xFFFFFFFF) << 32
    minmax32 = (max(s32(alo), s32(blo)) & 0xFFFFFFFF) | min(alo, blo) << 32
    minmax64 = (min(s64(a), s64(b)) & M64) ^ max(a, b)
    p = s64(a) * s64(b)
    d = (b & 0x1FFFFFFFF) | 1
    d = -d if a & 1 else d
    q = abs(p) // abs(d) * (1 if (p < 0) == (d < 0) else -1)    # sdiv truncates
    r = p - q * d
    up = a * b
    uq, ur = up // (a | 1), up % (a | 1)
    amt = b & 127
    mask128 = (1 << 128) - 1
    return [fr32, fl64, fr64, counts, ssum & M64, flags, fixabs, abs(s64(a)) & M64, minmax32,
            minmax64, q & M64, (q >> 64) & M64, r & M64, uq & M64, ur & M64,
            ((p << amt) & mask128) & M64, ((p >> amt) >> 64) & M64, (up >> amt) & M64]


@case("arith")
def ints(build: Build, k: KernelRun) -> None:
    n = 150
    xs = k.rng.integers(0, 1 << 64, n + 1, dtype=np.uint64)
    xs[:10] = [0, 1, 1 << 63, M64, (1 << 63) - 1, 0xFFFFFFFF, 0x80000000, 7, 0x7FFF0000, 3]
    # small magnitudes make smul.fix's result representable and its flags clear
    xs[10:40] = k.rng.integers(-(1 << 20), 1 << 20, 30).astype(np.int64).view(np.uint64)
    cols = len(sources.INT_COLUMNS)
    out = k.output(np.uint64, cols * n)
    k.launch("ints", [k.input(xs), out, n], *grid(n))
    got = k.read(out).reshape(n, cols)
    want = np.array([_int_row(int(xs[i]), int(xs[i + 1])) for i in range(n)], np.uint64)
    fix = 6
    low = np.uint64(0xFFFFFFFF)
    got_fix, want_fix = got[:, fix] & low, want[:, fix] & low
    rounded_up = (want_fix + np.uint64(1)) & low
    inexact = np.array([(s32(int(x)) * s32(int(y))) & 0xFFFF != 0
                        for x, y in zip(xs[:n], xs[1:])])
    up_ok = inexact & (got_fix == rounded_up) & (want_fix != 0x7FFFFFFF)
    ok = (got_fix == want_fix) | up_ok
    assert ok.all(), f"smul.fix.sat rows {np.flatnonzero(~ok)[:8].tolist()}"
    got[:, fix] = (got[:, fix] & ~low) | want_fix
    for col, name in enumerate(sources.INT_COLUMNS):
        same(got[:, col], want[:, col], name)


# --- floats -------------------------------------------------------------------------------------

FLOAT_SPECIALS = np.array(
    [np.nan, 1.0, -0.0, 0.0, 2.5, -2.5, np.inf, -np.inf, 0.5, 1e-40, -3.5, 1.5, 3e9, -3e9,
     255.5, 256.0, -1.0, 32767.5, -32768.9, 65504.0, 7e4, 1.0000001, 6e-8, -1e-45], np.float32)
SNAN = np.uint32(0x7F800001)


def _classes(a: np.ndarray) -> np.ndarray:
    bits = a.view(np.uint32)
    nan = np.isnan(a)
    quiet = (bits & 0x00400000) != 0
    neg = np.signbit(a)
    finite = np.isfinite(a)
    tiny = np.abs(a) < np.finfo(np.float32).tiny
    zero = a == 0
    sub = finite & tiny & ~zero
    normal = finite & ~tiny
    tests = [nan & ~quiet, nan & quiet, np.isneginf(a), neg & normal, neg & sub, neg & zero,
             ~neg & zero, ~neg & sub, ~neg & normal, np.isposinf(a)]
    return sum(t.astype(np.uint32) << np.uint32(bit) for bit, t in enumerate(tests))


def _sat(a: np.ndarray, lo: int, hi: int) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        t = np.trunc(np.nan_to_num(a.astype(np.float64), nan=0.0, posinf=hi, neginf=lo))
    return np.clip(t, lo, hi).astype(np.int64)


def _pack16(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.view(np.uint16).astype(np.uint32) | hi.view(np.uint16).astype(np.uint32) << 16


def _bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits (round to nearest even, NaN kept a quiet NaN)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0) | (bits >> 16).astype(np.uint16) & 0x8000,
                    rounded).view(np.uint16)


def _bf16_value(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


@case("arith")
def floats(build: Build, k: KernelRun) -> None:
    n = 160
    xs = (k.rng.standard_normal(n + 2) * np.exp2(k.rng.integers(-20, 20, n + 2))).astype(
        np.float32)
    xs[:len(FLOAT_SPECIALS)] = FLOAT_SPECIALS
    xs.view(np.uint32)[30] = SNAN
    ks = k.rng.integers(-160, 160, n).astype(np.int32)
    ks[:4] = [0, 128, -149, -126]
    cols = len(sources.FLOAT_COLUMNS)
    out = k.output(np.uint32, cols * n)
    k.launch("floats", [k.input(xs), k.input(ks), out, n], *grid(n))
    got = k.read(out).reshape(n, cols)
    f = got.view(np.float32)
    col = {name.lstrip("%"): i for i, name in enumerate(sources.FLOAT_COLUMNS)}
    a, b, c = xs[:n], xs[1:n + 1], xs[2:n + 2]
    with np.errstate(all="ignore"):
        fused = fma_once(a, b, c, F32, np.float32)
        same(f[:, col["fma_b"]], fused, "llvm.fma.f32 (one rounding)")
        # fmuladd: fused or not, the backend's choice (LangRef)
        unfused = a * b + c
        g = f[:, col["fmuladd_b"]]
        ok = (g == fused) | (g == unfused) | (np.isnan(g) & np.isnan(fused))
        assert ok.all(), f"fmuladd rows {np.flatnonzero(~ok)[:8].tolist()}"
        same(f[:, col["ldexp_b"]], np.ldexp(a, ks), "llvm.ldexp.f32")
        mant, exp = np.frexp(a)
        same(f[:, col["mant_b"]], mant, "llvm.frexp mantissa")
        # the exponent of an infinity or NaN is unspecified (LangRef)
        finite = np.isfinite(a)
        same(got[finite, col["exp"]].view(np.int32), exp[finite].astype(np.int32),
             "llvm.frexp exponent")
        same(got[:, col["classes"]], _classes(a), "llvm.is.fpclass, each test bit")
        same(f[:, col["rne_b"]], np.rint(a), "llvm.roundeven")
        same(f[:, col["rint_b"]], np.rint(a), "llvm.rint (round to nearest even mode)")
        same(f[:, col["ceil_b"]], np.ceil(a), "llvm.ceil")
        same(f[:, col["nearby_b"]], np.rint(a), "llvm.nearbyint")
        root = np.sqrt(np.abs(a))
        same(f[:, col["sqrt_b"]], root, "llvm.sqrt.f32 (correctly rounded)")
        # afn: v_sqrt_f32 is within 1 ulp of the exact root (ISA guide, VOP1 V_SQRT_F32), so
        # one float step from the correctly rounded one at most
        approx = f[:, col["sqrt_afn_b"]]
        normal = np.isfinite(root) & (root >= np.finfo(np.float32).tiny)
        step = np.abs(ordinal32(approx[normal]) - ordinal32(root[normal]))
        assert (step <= 1).all(), f"sqrt afn: {step.max()} float steps"
        same(approx[~normal & ~np.isnan(root) & ~(root == 0)],
             root[~normal & ~np.isnan(root) & ~(root == 0)], "sqrt afn of inf")
        # arcp: a * (1/b), two roundings of which the reciprocal's may be 1 ulp: two steps at
        # most where the operands and the quotient are normal
        quotient = a / b
        tiny = np.finfo(np.float32).tiny
        normal = (np.isfinite(quotient) & (np.abs(quotient) >= tiny) & (np.abs(a) >= tiny)
                  & (np.abs(b) >= tiny) & (np.abs(b) < 2.0 ** 126))
        step = np.abs(ordinal32(f[normal, col["div_arcp_b"]]) - ordinal32(quotient[normal]))
        assert (step <= 2).all(), f"fdiv arcp: {step.max()} float steps"
        same(got[:, col["sat_i32"]].view(np.int32),
             _sat(a, -(1 << 31), (1 << 31) - 1).astype(np.int32), "fptosi.sat.i32")
        same(got[:, col["sat_u8z"]], _sat(a, 0, 255).astype(np.uint32), "fptoui.sat.i8")
        same(got[:, col["sat_i16z"]].view(np.int32), _sat(a, -32768, 32767).astype(np.int32),
             "fptosi.sat.i16")
        ha, hb, hc = a.astype(np.float16), b.astype(np.float16), c.astype(np.float16)
        hfma = fma_once(ha.astype(np.float64), hb.astype(np.float64), hc.astype(np.float64),
                        F16, np.float16)
        # f16 division through numpy's float32 is correctly rounded: 24 >= 2 * 11 + 2 bits
        # (Figueroa, "When is double rounding innocuous?")
        want_div = (ha.astype(np.float32) / hb.astype(np.float32)).astype(np.float16)
        hd = got[:, col["half_div_fma"]]
        same((hd & 0xFFFF).astype(np.uint16).view(np.float16), want_div, "half fdiv")
        same((hd >> 16).astype(np.uint16).view(np.float16), hfma, "llvm.fma.f16")
        hs = got[:, col["half_sqrt_min"]]
        same((hs & 0xFFFF).astype(np.uint16).view(np.float16),
             np.sqrt(np.abs(ha).astype(np.float32)).astype(np.float16), "llvm.sqrt.f16")
        hmin = (hs >> 16).astype(np.uint16).view(np.float16)
        want_min = np.fmin(ha, hb)
        zeros = (ha == 0) & (hb == 0)       # minnum(-0, +0) may return either zero
        # rows 29 and 30 meet the signalling NaN, converted to half quiet (fptrunc)
        same(hmin[~zeros], want_min[~zeros], "llvm.minnum.f16")
        assert (hmin[zeros] == 0).all(), "minnum of two zeros"
        ba, bb = _bf16_value(_bf16(a)), _bf16_value(_bf16(b))
        bmul = np.array([round_once(Fraction(x) * Fraction(y), BF16)
                         if np.isfinite(x * y) and np.isfinite(x) and np.isfinite(y) else x * y
                         for x, y in zip(ba.tolist(), bb.tolist())], np.float32)
        badd = np.array([round_once(Fraction(x) + Fraction(y), BF16)
                         if np.isfinite(x) and np.isfinite(y) else x + y
                         for x, y in zip(ba.tolist(), bb.tolist())], np.float32)
        bf = got[:, col["bf_mul_add"]]
        same(_bf16_value((bf & 0xFFFF).astype(np.uint16)), bmul, "bfloat fmul")
        same(_bf16_value((bf >> 16).astype(np.uint16)), badd, "bfloat fadd")
        kh = ks.astype(np.float16)
        conv = got[:, col["conversions"]]
        same((conv & 0xFFFF).astype(np.uint16).view(np.float16), ba.astype(np.float16),
             "bfloat -> half")
        same((conv >> 16).astype(np.uint16).view(np.float16), kh + (ks & 255).astype(np.float16),
             "sitofp/uitofp i32 -> half, bfloat")
        ld64 = got[:, [col["ldexp64_lo"], col["ldexp64_hi"]]].copy().view(np.float64)
        same(ld64.reshape(-1), np.ldexp(a.astype(np.float64), 7 * ks), "llvm.ldexp.f64")


@case("arith")
def snan(build: Build, k: KernelRun) -> None:
    xs = np.array([0x7F800001, 0x3F800000, 0xFFA00000, 0xC0000000, 0x40400000],
                  np.uint32).view(np.float32)
    n = len(xs) - 1
    out = k.output(np.uint32, 2 * n)
    k.launch("snan", [k.input(xs), out, n], *grid(n))
    got = k.read(out).reshape(n, 2)
    halves = got[:, 0]
    # a NaN converted keeps its sign and is quiet (IEEE 754 5.4.2: convertFormat of a signalling
    # NaN signals invalid and delivers a quiet NaN); minnum of a quiet NaN is the other operand
    same(halves[[0, 2]] & 0xFE00, np.array([0x7E00, 0xFE00], np.uint32), "fptrunc sNaN -> half")
    same(got[[0, 2], 1] & 0xFFF80000, np.array([0x7FF80000, 0xFFF80000], np.uint32),
         "fpext sNaN -> double")
    same((halves >> 16).astype(np.uint16).view(np.float16),
         np.array([1.0, 1.0, -2.0, -2.0], np.float16), "minnum.f16 of a converted sNaN")


# --- atomics ------------------------------------------------------------------------------------

def _own_rmw(op: str, old: int, v: int) -> int:
    return {"nand": ~(old & v), "xchg": v, "uinc_wrap": 0 if old >= v else old + 1,
            "udec_wrap": v if old == 0 or old > v else old - 1}[op] & 0xFFFFFFFF


@case("sync")
def atomics(build: Build, k: KernelRun) -> None:
    groups = 2
    n = 64 * groups
    g0 = np.zeros(64, np.uint64)
    raw = g0.view(np.uint8)
    raw[0:16] = np.frombuffer(np.array([1.0, 1000.0, -65536.0, 65536.0], np.float32).tobytes(),
                              np.uint8)
    raw[16:48] = np.frombuffer(np.array([1.0, 1000.0, -1e300, 1e300]).tobytes(), np.uint8)
    g0[6:10] = [5, 0, M64, 0x0123456789ABCDEF]
    g0[10] = 7                           # the cmpxchg counter's low word starts at 7
    own0 = k.rng.integers(0, 1 << 32, 4 * n, dtype=np.uint64).astype(np.uint32)
    own0[::4 * 7] = 0                    # udec_wrap and uinc_wrap from 0 in some items
    g = k.output(np.uint64, 64, initial=g0)
    own = k.output(np.uint32, 4 * n, initial=own0)
    out = k.output(np.uint32, 5 * n)
    k.launch("atomics", [g, own, out, n], (n,), (64,))
    mem = k.read(g)
    items = np.arange(n)
    vf = items * 0.25                    # multiples of 1/4 below 2**10: every sum is exact
    vd = vf
    v64 = [((i * 2654435761) ^ 81985529216486895) & M64 for i in range(n)]
    f32 = mem.view(np.float32)
    f64 = mem.view(np.float64)
    same(f32[0:4], np.array([1.0 + vf.sum(), 1000.0 - vf.sum(), vf.max(), min(65536.0, 0.0)],
                            np.float32), "float atomicrmw fadd/fsub/fmax/fmin (global)")
    same(f64[2:6], np.array([1.0 + vd.sum(), 1000.0 - vd.sum(), vd.max(), 0.0]),
         "double atomicrmw fadd/fsub/fmax/fmin (global)")
    xor = 0x0123456789ABCDEF
    for v in v64:
        xor ^= v
    and_ = M64
    for v in v64:
        and_ &= v
    same(mem[6:10], np.array([(5 + sum(v64)) & M64, max(v64), and_, xor], np.uint64),
         "i64 atomicrmw add/umax/and/xor (global)")
    same(mem[10:11] & np.uint64(0xFFFFFFFF), np.array([7 + n * (n + 1) // 2], np.uint64),
         "cmpxchg weak loop")
    got = k.read(out).reshape(n, 5)
    same(got[:, 4] >> 1, np.ones(n, np.uint32), "the weak loop ends on success")
    won = (got[:, 4] & 1).reshape(groups, 64)
    assert (won.sum(axis=1) == 1).all(), "one strong cmpxchg succeeds per workgroup"
    own_mem = k.read(own).reshape(n, 4)
    start = own0.reshape(n, 4)
    small = items & 15
    for col, (op, _, _) in enumerate(sources.OWN_RMW):
        same(got[:, col], start[:, col], f"atomicrmw {op} returns the old value")
        same(own_mem[:, col], np.array([_own_rmw(op, int(o), int(v)) for o, v in
                                        zip(start[:, col], small)], np.uint32),
             f"atomicrmw {op} ({sources.OWN_RMW[col][1]} scope)")
    for w in range(groups):
        lds = mem[16 + 8 * w:16 + 8 * w + 8].copy().view(np.uint8)
        part = vf[64 * w:64 * w + 64]
        same(lds[0:8].view(np.float32), np.array([part.sum(), part.max()], np.float32),
             f"LDS float fadd/fmax, workgroup {w}")
        same(lds[8:24].view(np.float64), np.array([part.sum(), min(1e300, part.min())]),
             f"LDS double fadd/fmin, workgroup {w}")
        same(lds[24:32].view(np.uint64), np.array([sum(v64[64 * w:64 * w + 64]) & M64],
                                                  np.uint64), f"LDS i64 add, workgroup {w}")
        winner = int(np.flatnonzero(won[w])[0])
        same(lds[32:36].view(np.uint32), np.array([winner + 1], np.uint32),
             f"the strong cmpxchg's winner, workgroup {w}")


# --- cross-lane intrinsics and geometry ---------------------------------------------------------

@case("lanes")
def lanes(build: Build, k: KernelRun) -> None:
    n, w = 128, build.wave
    xs = k.rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    xs[::3] &= 0x3FFFFFFF                # some below the icmp threshold 2**30
    cols = len(sources.LANE_COLUMNS)
    out = k.output(np.uint32, cols * n)
    k.launch("lanes", [k.input(xs), out, n], *grid(n))
    got = k.read(out).reshape(n, cols)
    i = np.arange(n)
    lane, first = i % w, i // w * w
    bits = (xs & 1).astype(np.uint64)
    below = (xs < 1 << 30).astype(np.uint64)
    ballot = np.array([int((bits[f:f + w] << np.arange(w, dtype=np.uint64)).sum()) for f in first],
                      np.uint64)
    cmp = np.array([int((below[f:f + w] << np.arange(w, dtype=np.uint64)).sum()) for f in first],
                   np.uint64)
    same(got[:, 0], lane.astype(np.uint32), "mbcnt.lo/hi: the lane id")
    same(got[:, 1], (ballot & np.uint64(0xFFFFFFFF)).astype(np.uint32), "ballot, low lanes")
    same(got[:, 2], (ballot >> np.uint64(32)).astype(np.uint32), "ballot, high lanes")
    same(got[:, 3], xs[first + 5], "readlane 5")
    same(got[:, 4], np.where(lane == 3, 77, xs).astype(np.uint32), "writelane 3")
    same(got[:, 5], (cmp & np.uint64(0xFFFFFFFF)).astype(np.uint32), "amdgcn.icmp ult")
    same(got[:, 6], np.where(i % 16 == 0, 0xFFFFFFFF, xs[i - 1]).astype(np.uint32),
         "update.dpp row_shr:1 (old kept at each row's first lane)")
    same(got[:, 7], xs[i ^ 1], "mov.dpp quad_perm [1,0,3,2]")
    want_x = xs[i ^ 16] if build.gfx12 else np.zeros(n, np.uint32)
    same(got[:, 8], want_x, "permlanex16 (the other row of each 32)")


@case("lanes")
def geometry(build: Build, k: KernelRun) -> None:
    gx, gy, gz = 13, 5, 3
    block = (4, 2, 2)
    n = gx * gy * gz
    out = k.output(np.uint32, 2 * n)
    k.launch("geometry", [out, gx, gy], (gx, gy, gz), block)
    got = k.read(out).reshape(gz, gy, gx, 2)
    z, y, x = np.meshgrid(np.arange(gz), np.arange(gy), np.arange(gx), indexing="ij")
    ids = ((z % 2) << 28 | (y % 2) << 24 | (x % 4) << 20 | (z // 2) << 12 | (y // 2) << 6
           | x // 4)
    same(got[..., 0], ids.astype(np.uint32), "work-item and workgroup ids in 3-D")
    # the hidden block count is of whole workgroups (13 // 4), the remainder the partial one's
    # size (AMDGPUUsage, "Code Object V5 Metadata"); grid y is the dispatch packet's
    info = (gx // 4) << 24 | 4 << 16 | (gx % 4) << 8 | gy
    same(got[..., 1], np.full((gz, gy, gx), info, np.uint32),
         "implicitarg.ptr and dispatch.ptr reads")


# --- address spaces and kernel arguments --------------------------------------------------------

@case("memory")
def spaces(build: Build, k: KernelRun) -> None:
    groups = 2
    n = 64 * groups
    xs = k.rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    perm = np.concatenate([k.rng.permutation(64) for _ in range(groups)]).astype(np.uint32)
    g = k.output(np.uint32, n)
    cols = len(sources.SPACE_COLUMNS)
    out = k.output(np.uint32, cols * n)
    k.launch("spaces", [k.input(xs), k.input(perm), g, out, n], (n,), (64,))
    got = k.read(out).reshape(n, cols)
    col = {name.lstrip("%"): i for i, name in enumerate(sources.SPACE_COLUMNS)}
    i = np.arange(n)
    tid, first = i % 64, i // 64 * 64
    same(got[:, col["transposed"]], xs[first + (tid % 8) * 8 + tid // 8],
         "an 8 x 8 LDS tile written by rows, read by columns")
    slots = np.empty(n, np.uint32)
    slots[first + perm] = xs ^ tid.astype(np.uint32)
    gathered = slots[first + (xs & 63)]
    same(got[:, col["gathered"]], gathered,
         "LDS scattered to and gathered from data-chosen slots")
    words = np.array(sources.CONST_WORDS, np.uint32)
    halves = np.array(sources.CONST_HALFWORDS, np.uint32)
    same(got[:, col["ctab_word"]], words[xs & 15] ^ (halves[(xs >> 4) & 15] << 16),
         "addrspace(4) i32 and i16 tables indexed by data")
    doubles = np.array(sources.CONST_DOUBLES).view(np.uint64)[(xs >> 8) & 7]
    same(got[:, col["cdbl_lo"]], (doubles & 0xFFFFFFFF).astype(np.uint32),
         "addrspace(4) double table, low words")
    same(got[:, col["cdbl_hi"]], (doubles >> 32).astype(np.uint32),
         "addrspace(4) double table, high words")
    count, records = sources.PRIVATE_WORDS, sources.PRIVATE_RECORDS
    x64 = xs.astype(np.int64)
    read, written = (x64 >> 12) % count, (x64 >> 20) % count
    priv = np.where(read == written, 7777, (x64 * (read + 1) + read) & 0xFFFFFFFF)
    same(got[:, col["priv"]], priv.astype(np.uint32),
         "a private array written and read at data indices")
    r = (x64 >> 16) % records
    same(got[:, col["rec_bytes"]], (((x64 + r) & 0xFF) | ((x64 * r) & 0xFFFF) << 16)
         .astype(np.uint32), "i8 and i16 fields of a private record chosen by data")
    same(got[:, col["rec_dbl"]], ((2 * x64 + r) & 0xFFFFFFFF).astype(np.uint32),
         "the double field of a private record chosen by data")
    sel = xs & 3
    same(got[:, col["where"]], np.select([sel == 0, sel == 2], [1, 2], 0).astype(np.uint32),
         "is.shared / is.private of a flat pointer")
    same(got[:, col["via_flat"]], np.select([sel == 0, sel == 2], [gathered, priv], xs)
         .astype(np.uint32), "loads through flat pointers into LDS, scratch and global memory")
    same(got[:, col["via_cast"]], (xs + np.uint32(1) + np.select(
        [sel == 0, sel == 2], [256, 512], 0).astype(np.uint32)),
         "the flat pointer cast back to its address space")
    odd = (xs & 1) == 1
    mem = k.read(g)
    same(mem[odd], xs[odd] + np.uint32(1), "global memory written through flat")
    assert (mem[~odd] == 0xA5A5A5A5).all(), "only the items that chose global wrote it"


STRUCT_ARGS = np.dtype({"names": ["a", "b", "d", "v", "e", "f"],
                        "formats": ["u1", "<i2", "<f8", ("<f4", 2), "i1", "<u4"],
                        "offsets": [0, 2, 8, 16, 24, 28], "itemsize": 32})


@case("memory")
def struct_args(build: Build, k: KernelRun) -> None:
    n = 70
    s = np.zeros(1, STRUCT_ARGS)
    s[0] = (200, -12345, 1.0 / 3.0, (0.75, -1.5), -7, 0x12345678)
    c, h, d = np.int8(-100), np.uint16(0xBEEF), np.float64(2.0 / 3.0)
    v = np.array([0.125, 3.0], np.float32)
    cols = len(sources.STRUCT_ARG_COLUMNS)
    out = k.output(np.uint32, cols * n)
    k.launch("struct_args", [out, s.tobytes(), c, h, d, v.tobytes(), n], *grid(n))
    got = k.read(out).reshape(n, cols)
    i = np.arange(n)
    same(got[:, 0], (200 - 12345 + i).astype(np.uint32), "byref i8 and i16 fields")
    prod = (np.float64(1.0 / 3.0) * i).view(np.uint64)
    same(got[:, 1], (prod & 0xFFFFFFFF).astype(np.uint32), "byref double field, low words")
    same(got[:, 2], (prod >> 32).astype(np.uint32), "byref double field, high words")
    vec = np.float32(0.75) + np.float32(-1.5) * i.astype(np.float32)
    same(got[:, 3].view(np.float32), vec.astype(np.float32), "byref <2 x float> field")
    same(got[:, 4], (0x12345678 * -7 + i).astype(np.int64).astype(np.uint32),
         "byref i8 and i32 fields after padding")
    same(got[:, 5], np.full(n, np.uint32((-100 & 0xFFFFFFFF) ^ (0xBEEF << 8))),
         "i8 and i16 arguments by value")
    mix = np.float32(d) * v[1] + v[0]
    same(got[:, 6].view(np.float32), np.full(n, mix, np.float32),
         "double and <2 x float> arguments by value")


# --- vectors and intrinsics ---------------------------------------------------------------------

def _bf16_op(x: np.ndarray, y: np.ndarray, op: Callable) -> np.ndarray:
    """``op`` on bfloat values (float32 arrays) rounded once to bfloat, as float32."""
    out = [round_once(op(Fraction(a), Fraction(b)), BF16)
           if np.isfinite(a) and np.isfinite(b) else op(a, b)
           for a, b in zip(x.tolist(), y.tolist())]
    return _bf16_value(_bf16(np.array(out, np.float32)))


@case("vectors")
def vectors(build: Build, k: KernelRun) -> None:
    n = 100
    halves = (k.rng.standard_normal(2 * (n + 8)) * np.exp2(k.rng.integers(-8, 8, 2 * (n + 8))))
    halves = halves.astype(np.float16)
    halves[:12] = [0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 6e-8, -2.0, 0.5, 1e-4, -3.0,
                   7.0]
    words = halves.view(np.uint32)
    cols = len(sources.VECTOR_COLUMNS)
    out = k.output(np.uint32, cols * n)
    k.launch("vectors", [k.input(words), out, n], *grid(n))
    got = k.read(out).reshape(n, cols)
    w = np.stack([words[j:j + n] for j in range(8)], axis=1).astype(np.uint64)
    a, b = w[:, 0:3], w[:, 3:6]
    tri = ((a * b + (a << np.array([1, 2, 3], np.uint64))) ^ b) & 0xFFFFFFFF
    same(got[:, 0:3], tri.astype(np.uint32), "<3 x i32> loads, mul/shl/add/xor")
    h = w[:, 0:4].astype(np.uint32).copy().view(np.float16)
    g = w[:, 4:8].astype(np.uint32).copy().view(np.float16)
    with np.errstate(all="ignore"):
        hr = h * g + h          # numpy rounds each float16 operation once (through float32)
        same(got[:, 3:7].copy().view(np.float16), hr, "<8 x half> fmul, fadd")
        both = np.concatenate([hr, h], axis=1)
        picks = [7, 8, 1, 10, 7, 12, 3, 14]
        same(got[:, 7:11].copy().view(np.float16), both[:, picks], "shufflevector <8 x half>")
        bv = _bf16_value(w[:, 0].astype(np.uint32).view(np.uint16).reshape(n, 2))
        cv = _bf16_value(w[:, 1].astype(np.uint32).view(np.uint16).reshape(n, 2))
        prod = _bf16_op(bv.reshape(-1), cv.reshape(-1), lambda x, y: x * y)
        total = _bf16_op(prod, bv.reshape(-1), lambda x, y: x + y)
        got_bf = _bf16_value(got[:, 11].copy().view(np.uint16))
        same(got_bf, total, "<2 x bfloat> fmul, fadd")
        rows = np.arange(n)
        same(got[:, 12], w[rows, w[:, 2] & 7].astype(np.uint32), "extractelement, dynamic")
        inserted = w.copy()
        inserted[rows, w[:, 3] & 7] = 57005
        same(got[:, 13], inserted[rows, w[:, 4] & 7].astype(np.uint32),
             "insertelement then extractelement, dynamic")
        same(got[:, 14], (w[:, 0:4].sum(axis=1) & 0xFFFFFFFF).astype(np.uint32),
             "vector.reduce.add")
        same(got[:, 15], w.max(axis=1).astype(np.uint32), "vector.reduce.umax")
        same(got[:, 16], np.bitwise_and.reduce(w[:, 0:4] | w[:, 4:8], axis=1).astype(np.uint32),
             "vector.reduce.and")
        hx = h.astype(np.float32)
        scaled = hx[:, 0:4] * np.array([4096.0, 1.0, 2.0 ** -12, 1.0], np.float32)
        ordered = hx[:, 4].copy()
        for j in range(4):
            ordered = ordered + scaled[:, j]
        same(got[:, 17].view(np.float32), ordered, "vector.reduce.fadd in order")
        exact = (w[:, 4:8] & 0xFFFF).sum(axis=1).astype(np.float32)
        same(got[:, 18].view(np.float32), exact, "vector.reduce.fadd reassoc")


def _bitreverse(x: int, bits: int) -> int:
    return int(format(x, f"0{bits}b")[::-1], 2)


def _extreme(a: np.ndarray, b: np.ndarray,
             pick_a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """llvm.minimum/maximum: NaN if either is, else the operand ``pick_a`` says (which orders -0
    below +0); and where both are zeros."""
    zeros = (a == 0) & (b == 0)
    return np.where(np.isnan(a) | np.isnan(b), np.float32(np.nan), np.where(pick_a, a, b)), zeros


@case("vectors")
def intrinsics(build: Build, k: KernelRun) -> None:
    n, w = 150, build.wave
    xs = (k.rng.standard_normal(n + 1) * np.exp2(k.rng.integers(-10, 20, n + 1))).astype(
        np.float32)
    xs[:len(FLOAT_SPECIALS)] = FLOAT_SPECIALS
    xs[24:32] = [0.49999997, -0.5, 1.5, -0.0, 0.0, -0.0, np.nan, 2.5]
    cols = len(sources.INTRINSIC_COLUMNS)
    out = k.output(np.uint32, cols * n)
    k.launch("intrinsics", [k.input(xs), out, n], *grid(n))
    got = k.read(out).reshape(n, cols)
    col = {name.lstrip("%"): i for i, name in enumerate(sources.INTRINSIC_COLUMNS)}
    bits = xs.view(np.uint32)
    wa, wb = bits[:n], bits[1:n + 1]
    a, b = xs[:n], xs[1:n + 1]
    same(got[:, col["rev32"]], np.array([_bitreverse(int(x), 32) for x in wa], np.uint32),
         "llvm.bitreverse.i32")
    rev = np.array([_bitreverse(int(x) | int(y) << 32, 64) for x, y in zip(wa, wb)], np.uint64)
    same(got[:, col["rev64_lo"]], (rev & 0xFFFFFFFF).astype(np.uint32), "bitreverse.i64 low")
    same(got[:, col["rev64_hi"]], (rev >> 32).astype(np.uint32), "bitreverse.i64 high")
    same(got[:, col["csign_b"]], (wa & 0x7FFFFFFF) | (wb & 0x80000000), "llvm.copysign.f32")
    wide = np.copysign(a.astype(np.float64), b.astype(np.float64)).view(np.uint64)
    same(got[:, col["csign64_hi"]], (wide >> 32).astype(np.uint32), "llvm.copysign.f64")
    with np.errstate(invalid="ignore", over="ignore"):
        low, zeros = _extreme(a, b, (a < b) | ((a == b) & np.signbit(a)))
        high, _ = _extreme(a, b, (a > b) | ((a == b) & ~np.signbit(a)))
        same(got[:, col["minimum_b"]].view(np.float32), low, "llvm.minimum.f32")
        same(got[:, col["maximum_b"]].view(np.float32), high, "llvm.maximum.f32")
        same(np.signbit(got[zeros, col["minimum_b"]].view(np.float32)),
             np.signbit(a[zeros]) | np.signbit(b[zeros]), "minimum of zeros is -0 if either is")
        same(np.signbit(got[zeros, col["maximum_b"]].view(np.float32)),
             np.signbit(a[zeros]) & np.signbit(b[zeros]), "maximum of zeros is +0 if either is")
        a64 = a.astype(np.float64)
        away = np.copysign(np.floor(np.abs(a64) + 0.5), a64).astype(np.float32)
        same(got[:, col["round_b"]].view(np.float32), away, "llvm.round (half away from zero)")
        same(np.signbit(got[:, col["round_b"]].view(np.float32)), np.signbit(away),
             "llvm.round keeps the sign of zero")
        same(got[:, col["trunc_b"]].view(np.float32), np.trunc(a), "llvm.trunc")
        same(got[:, col["floor_b"]].view(np.float32), np.floor(a), "llvm.floor")
        ha = a.astype(np.float16)
        sat = (_sat(ha, 0, 255) | (_sat(ha, 0, (1 << 32) - 1) << 8)) & 0xFFFFFFFF
        same(got[:, col["hsat"]], sat.astype(np.uint32), "fptoui.sat.i8/i32 from half")
    pc = got[:, col["pc_lo"]].astype(np.uint64) | got[:, col["pc_hi"]].astype(np.uint64) << 32
    kernel = k.executable.kernel("intrinsics")
    entry = kernel.kernel_object + kernel.descriptor.kernel_code_entry_byte_offset
    assert (pc == pc[0]).all(), "s.getpc is the same in every lane"
    assert entry < int(pc[0]) < entry + 4096 and int(pc[0]) % 4 == 0, (hex(int(pc[0])),
                                                                        hex(entry))
    i = np.arange(n)
    source = i // w * w + (wa >> 2) % w
    pulled = np.where(source < n, bits[np.minimum(source, n - 1) + 1], 0).astype(np.uint32)
    same(got[:, col["permuted"]], pulled,
         "ds.bpermute: lane (addr / 4) mod the wave size, 0 from an inactive lane")


# --- control flow -------------------------------------------------------------------------------

_SWITCH = {0: lambda y, x: y + 1, 3: lambda y, x: y * 3, 7: lambda y, x: y ^ 85,
           12: lambda y, x: y >> 2, 19: lambda y, x: y - 1000, 28: lambda y, x: y | 256,
           33: lambda y, x: y * y, 41: lambda y, x: y << 3, 50: lambda y, x: y & 255,
           63: lambda y, x: -y}


def _flow_row(x: int, keys: list[int]) -> tuple[int, list[int]]:
    """(the switch's value, the row) of item x, as the IR computes them, in 32 bits."""
    m = 0xFFFFFFFF
    y = x >> 6
    sw = _SWITCH.get(x & 63, lambda y, x: y + x)(y, x) & m
    target, limit, acc = x % 40, x >> 20, 0
    search = 3 << 16 | sources.SEARCH_KEYS
    for j, key in enumerate(keys[:sources.SEARCH_KEYS]):
        if key == target:
            search = 1 << 16 | j
            break
        acc += key
        if acc > limit:
            search = 2 << 16 | j
            break
    t = 1
    for k in range(x % 37):
        t = (t * 3 + k) & m
    s1 = x ^ 61680 if x & 2 else (x + 7) & m
    p = (s1 * 5) & m if s1 & 4 else s1 >> 1
    q = (p + s1) & m if p & 8 else (p - 3) & m if p & 16 else p
    chain = max(q, s1) ^ sw
    v, c, at_a = x, 0, not x & 1
    while True:
        if at_a:
            v, c = (v * 3 + 1) & m, c + 1
            if c >= sources.IRREDUCIBLE_STEPS:
                break
            at_a = False
        else:
            v, c = (v >> 1) ^ c, c + 1
            if c >= sources.IRREDUCIBLE_STEPS:
                break
            at_a = bool(v & 2)
    return sw, [search, t, chain, v ^ (at_a << 31)]


@case("control")
def flow(build: Build, k: KernelRun) -> None:
    n = 200
    xs = k.rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    xs[:64] = np.arange(64) | k.rng.integers(0, 1 << 26, 64).astype(np.uint32) << 6
    keys = k.rng.choice(40, sources.SEARCH_KEYS, replace=False).astype(np.uint32)
    cols = len(sources.FLOW_COLUMNS)
    early = k.output(np.uint32, n)
    out = k.output(np.uint32, cols * n)
    k.launch("flow", [k.input(xs), k.input(keys), early, out, n], *grid(n))
    got, got_early = k.read(out).reshape(n, cols), k.read(early)
    rows = [_flow_row(int(x), keys.tolist()) for x in xs]
    leave = xs % 5 == 0
    fill = 0xA5A5A5A5
    same(got_early, np.array([sw if gone else fill for (sw, _), gone in zip(rows, leave)],
                             np.uint32), "switch over sparse cases, then an early return")
    want = np.array([row if not gone else [fill] * cols for (_, row), gone in zip(rows, leave)],
                    np.uint32)
    for c, name in enumerate(["a loop with three exits", "per-lane trip counts",
                              "selects and phi chains", "a loop with two entries"]):
        same(got[:, c], want[:, c], name)


SOURCES: dict[str, object] = {"arith": sources.ARITH, "sync": sources.SYNC,
                              "lanes": sources.lanes, "memory": sources.MEMORY,
                              "vectors": sources.VECTOR_INTRINSICS,
                              "control": sources.CONTROL}

# Cases the simulator gets wrong today, with the mechanism (strict: a fix fails the mark).
XFAIL: dict[str, str] = {}


JIT_CASES = ("floats", "lanes", "geometry", "vectors", "intrinsics")


def _params() -> list:
    params = []
    for name in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=XFAIL[name])] if name in XFAIL else []
        params += [pytest.param(name, b, id=f"{name}-{b.id}", marks=marks) for b in BUILDS
                   if b.engine == "interp" or name in JIT_CASES]
    return params


@pytest.mark.parametrize("name,build", _params())
def test_ir_kernel_matches_its_reference(name, build, corpus):
    k = corpus.run(CASES[name].source, build)
    try:
        CASES[name].check(build, k)
    finally:
        k.close()
