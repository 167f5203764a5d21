"""Directed rounding in hsapy.sim.isa.float_mode, checked value by value against exact rationals
(``fractions.Fraction``) rounded by stepping between neighbouring floats: random operands over
the whole exponent range of f16/f32/f64, plus cancellation, overflow, subnormal and signed-zero
cases. And the MODE helpers: which instructions round, which the interpreter refuses."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from hsapy.sim.isa import float_mode as fm

UP, DOWN, ZERO = fm.UP, fm.DOWN, fm.TOWARD_ZERO
TYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def reference(q: Fraction, ftype, direction: int) -> float:
    """The ``ftype`` value ``q`` rounds to in ``direction``: the neighbour on the right side,
    or the signed largest finite value / infinity past the range."""
    big = Fraction(float(np.finfo(ftype).max))
    if abs(q) > big:
        away = direction == UP if q > 0 else direction == DOWN
        return (np.inf if away else float(big)) * (1 if q > 0 else -1)
    r = ftype(float(q)) if ftype is np.float64 else ftype(np.float64(float(q)))
    if not np.isfinite(r):
        r = ftype(np.finfo(ftype).max) * (1 if q > 0 else -1)
    up = direction == UP or (direction == ZERO and q < 0)
    for _ in range(4):
        below = np.nextafter(r, ftype(-np.inf))
        above = np.nextafter(r, ftype(np.inf))
        if up:
            if Fraction(float(r)) < q:
                r = above
            elif np.isfinite(below) and Fraction(float(below)) >= q:
                r = below
            else:
                return float(r)
        else:
            if Fraction(float(r)) > q:
                r = below
            elif np.isfinite(above) and Fraction(float(above)) <= q:
                r = above
            else:
                return float(r)
    raise AssertionError(q)


def operands(ftype, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    info = np.finfo(ftype)
    low, high = int(np.log2(float(info.smallest_subnormal))), int(np.log2(float(info.max)))
    with np.errstate(over="ignore"):
        values = np.ldexp(rng.uniform(1, 2, n) * rng.choice([-1, 1], n),
                          rng.integers(low, high + 1, n)).astype(ftype)
    values[np.isinf(values)] = info.max
    values[:6] = np.array([0.0, -0.0, 1.0, -1.0, float(info.max), float(info.smallest_subnormal)],
                          ftype)
    return values


EXACT = {
    "v_add_{}": lambda a, b, c: a + b,
    "v_sub_{}": lambda a, b, c: a - b,
    "v_mul_{}": lambda a, b, c: a * b,
    "v_fma_{}": lambda a, b, c: a * b + c,
}


@pytest.mark.parametrize("direction", [UP, DOWN, ZERO], ids=["up", "down", "zero"])
@pytest.mark.parametrize("ty", list(TYPES))
@pytest.mark.parametrize("op", list(EXACT))
def test_arithmetic_rounds_the_exact_result_in_the_direction(op, ty, direction):
    ftype = TYPES[ty]
    n = 120 if ty == "f64" and "fma" in op else 400
    a, b, c = (operands(ftype, n, seed) for seed in (1, 2, 3))
    b[10:20] = -a[10:20]                                     # exact cancellations
    with np.errstate(all="ignore"):
        c[20:30] = -(a[20:30].astype(np.float64) * b[20:30]).astype(ftype)
        got = fm.DIRECTED[op.format(ty)](direction)(*((a, b, c) if "fma" in op else (a, b)))
    finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    for k in np.flatnonzero(finite):
        q = EXACT[op](Fraction(float(a[k])), Fraction(float(b[k])), Fraction(float(c[k])))
        want = reference(q, ftype, direction)
        assert float(got[k]) == want, (op, ty, a[k], b[k], c[k], got[k], want)
        if q == 0 and op != "v_mul_{}":
            with np.errstate(over="ignore"):
                product = np.float64(a[k]) * np.float64(b[k])   # only zero and sign matter
            addends = {"v_add_{}": (a[k], b[k]), "v_sub_{}": (a[k], -b[k]),
                       "v_fma_{}": (product, c[k])}[op]
            minus = [bool(z == 0 and np.signbit(z)) for z in addends]
            plus = [bool(z == 0 and not np.signbit(z)) for z in addends]
            # IEEE 754 section 6.3: an exact zero sum is -0 when both addends are -0, else +0
            # except when rounding toward -inf (unless both are +0)
            negative = all(minus) or (direction == DOWN and not all(plus))
            assert bool(np.signbit(got[k])) == negative, (op, a[k], b[k], c[k], got[k])


@pytest.mark.parametrize("direction", [UP, DOWN, ZERO], ids=["up", "down", "zero"])
@pytest.mark.parametrize("ty", list(TYPES))
def test_division_and_square_root_round_in_the_direction(ty, direction):
    ftype = TYPES[ty]
    a, b = operands(ftype, 300, 4), operands(ftype, 300, 5)
    b[b == 0] = ftype(3)
    with np.errstate(all="ignore"):
        quotient = fm._directed_div(ftype)(direction)(a, b)
        root = fm.DIRECTED[f"v_sqrt_{ty}"](direction)(np.abs(a))
    for k in range(a.size):
        q = Fraction(float(a[k])) / Fraction(float(b[k]))
        assert float(quotient[k]) == reference(q, ftype, direction), (a[k], b[k], quotient[k])
        x, r = Fraction(float(abs(a[k]))), root[k]
        if x == 0:
            continue
        R = Fraction(float(r))
        neighbour = Fraction(float(np.nextafter(r, ftype(0 if direction == UP else np.inf))))
        if direction == UP:
            assert R * R >= x and neighbour * neighbour < x, (a[k], r)
        else:
            assert R * R <= x and neighbour * neighbour > x, (a[k], r)


def test_overflow_goes_to_the_largest_finite_value_unless_rounding_away():
    big = np.float32(np.finfo(np.float32).max)
    add = {d: fm.DIRECTED["v_add_f32"](d) for d in (UP, DOWN, ZERO)}
    assert add[ZERO](big, big) == big and add[DOWN](big, big) == big
    assert add[UP](big, big) == np.inf
    assert add[UP](-big, -big) == -big and add[DOWN](-big, -big) == -np.inf
    d64 = np.finfo(np.float64).max
    assert fm.DIRECTED["v_mul_f64"](ZERO)(np.float64(d64), np.float64(2.0)) == d64
    assert fm.DIRECTED["v_mul_f64"](UP)(np.float64(d64), np.float64(2.0)) == np.inf


def test_conversions_round_in_the_direction():
    ints = np.array([2**24 + 1, -(2**24 + 1), 2**31 - 1, 123456789], np.int32)
    for direction in (UP, DOWN, ZERO):
        got = fm.DIRECTED["v_cvt_f32_i32"](direction)(ints)
        want = [reference(Fraction(int(v)), np.float32, direction) for v in ints]
        assert [float(g) for g in got] == want
        doubles = np.array([1 / 3, -2 / 3, 1e-42, 3.4028235677973366e38])
        got = fm.DIRECTED["v_cvt_f32_f64"](direction)(doubles)
        assert [float(g) for g in got] == [reference(Fraction(v), np.float32, direction)
                                           for v in doubles]


@pytest.mark.parametrize("name,rounds", [
    ("v_add_f32", True), ("v_fma_mix_f32", True), ("global_atomic_add_f32", True),
    ("v_cvt_f16_f32", True), ("v_cvt_f32_i32", True),
    ("v_max3_f32", False), ("v_cmp_lt_f64", False), ("v_cvt_f32_f16", False),
    ("v_cvt_i32_f32", False), ("v_floor_f32", False), ("global_atomic_min_f64", False),
    ("v_cvt_pkrtz_f16_f32", False), ("v_add_u32", False)])
def test_which_instructions_round(name, rounds):
    assert fm.rounds(name) is rounds


@pytest.mark.parametrize("name", ["v_dot2_f32_f16", "v_dot2c_f32_f16", "v_dot2_f32_bf16",
                                  "v_dot2_f16_f16"])
def test_float_dot_products_are_refused_under_a_flushing_mode_and_run_otherwise(name):
    assert fm.unsupported(name, fm.FloatMode.from_flags(False, False)) == ""
    for flush32, flush64 in ((True, False), (False, True), (True, True)):
        why = fm.unsupported(name, fm.FloatMode.from_flags(flush32, flush64))
        assert "dot product" in why and "flushes denormals" in why
    assert fm.unsupported("v_dot4_i32_i8", fm.FloatMode.from_flags(True, True)) == ""


def test_the_interpreter_refuses_what_it_cannot_round_and_names_the_mode():
    rtz = fm.FloatMode(0x3FF)                 # f32 and f64/f16 toward zero, keep denormals
    assert fm.unsupported("v_add_f32", rtz) == ""
    assert fm.unsupported("v_pk_add_f32", rtz) == ""          # rounds like v_add_f32
    why = fm.unsupported("v_exp_f32", rtz)
    assert "round toward zero" in why and "v_exp_f32" in why
    assert fm.unsupported("v_exp_f32", fm.FloatMode(0x3F0)) == ""   # nearest even: runs
    one_sided = fm.FloatMode(0x3D0)           # f32 FP_DENORM = 1: flush outputs only
    assert "one side" in fm.unsupported("v_mul_f32", one_sided)
    assert fm.unsupported("v_max_f32", one_sided) == ""


def test_initial_mode_comes_from_rsrc1():
    # FLOAT_ROUND_MODE_32 = 3, FLOAT_DENORM_MODE_32 = 0, FLOAT_DENORM_MODE_16_64 = 3,
    # DX10_CLAMP (bit 21) and IEEE_MODE (bit 23) set
    rsrc1 = (3 << 12) | (0 << 16) | (3 << 18) | (1 << 21) | (1 << 23)
    assert fm.initial_mode(rsrc1, "gfx9") == 0x3C3
    assert fm.initial_mode(rsrc1, "gfx12") == 0xC3          # gfx12: bits 21/23 mean other things


def test_a_float_clamp_with_dx10_clamp_off_is_refused_and_an_integer_clamp_is_not():
    """The interpreter's float clamp maps NaN to 0 (DX10_CLAMP on, what clang sets); with the
    bit off (gfx9/gfx11) the hardware passes NaN through, which the interpreter does not model."""
    import re
    import shutil
    import subprocess

    from hsapy.sim.isa import decode
    from hsapy.sim.isa.interpreter import ProgramInfo
    from hsapy.sim.isa.semantics import compile_instruction

    if shutil.which("llvm-mc-19") is None:
        pytest.skip("llvm-mc-19 not found (Debian package llvm-19)")
    lines = "v_add_f32_e64 v0, v1, v2 clamp\nv_add_u32_e64 v0, v1, v2 clamp\n"
    out = subprocess.run(["llvm-mc-19", "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942",
                          "-show-encoding"], input=lines, capture_output=True, text=True,
                         timeout=60).stdout
    float_add, int_add = (decode(bytes(int(x, 16) for x in enc.split(",")), "gfx942")[0]
                          for enc in re.findall(r"encoding: \[([^\]]*)\]", out))
    on, off = ProgramInfo.for_mode("gfx9", 64, 0x3F0), ProgramInfo.for_mode("gfx9", 64, 0x2F0)
    assert getattr(compile_instruction(float_add, on), "unimplemented", None) is None
    assert "DX10_CLAMP off" in compile_instruction(float_add, off).unimplemented
    assert getattr(compile_instruction(int_add, off), "unimplemented", None) is None


def test_writing_mode_bits_the_interpreter_does_not_model_stops():
    """MODE's exception enables (EXCP_EN, bits 18:12) would make float exceptions trap: a write
    that sets them stops instead of being ignored; the float controls are written."""
    import re
    import shutil
    import subprocess
    from types import SimpleNamespace

    from hsapy.sim.isa import decode
    from hsapy.sim.isa.interpreter import ProgramInfo
    from hsapy.sim.isa.semantics import MODE_CHANGED, NotImplementedInstruction, compile_instruction
    from hsapy.sim.isa.wave import NSREG, Batch

    if shutil.which("llvm-mc-19") is None:
        pytest.skip("llvm-mc-19 not found (Debian package llvm-19)")
    lines = ("s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 32), 0x13f3\n"
             "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 32), 0x3f3\n")
    out = subprocess.run(["llvm-mc-19", "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942",
                          "-show-encoding"], input=lines, capture_output=True, text=True,
                         timeout=60).stdout
    excp, plain = (decode(bytes(int(x, 16) for x in enc.split(",")), "gfx942")[0]
                   for enc in re.findall(r"encoding: \[([^\]]*)\]", out))
    info = ProgramInfo.for_mode("gfx9", 64, 0x3F0)

    def batch() -> Batch:
        return Batch(0, np.zeros((1, NSREG), np.uint32), np.zeros((1, 1, 64), np.uint32), None,
                     np.ones((1, 64), bool), np.zeros(1, bool), np.zeros(1, np.int64),
                     np.zeros(1, np.int64), mode=0x3F0)

    with pytest.raises(NotImplementedInstruction, match="MODE bits 0x1000"):
        compile_instruction(excp, info)(batch(), SimpleNamespace(pending=[]))
    b = batch()
    assert compile_instruction(plain, info)(b, SimpleNamespace(pending=[])) == MODE_CHANGED
    assert b.mode == 0x3F3
