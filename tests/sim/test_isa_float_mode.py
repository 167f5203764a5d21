"""The MODE register on the ISA interpreter: real HIP kernels (clang-19) that read MODE, change
its rounding direction or denormal mode at run time, and compute; results checked against
exactly computed references (rationals, rounded by stepping between neighbouring floats).

MODE layout (hsapy/sim/isa/float_mode.py): FP_ROUND 3:0 (f32 in 1:0, f64/f16 in 3:2), FP_DENORM
7:4, DX10_CLAMP 8, IEEE 9. ``__builtin_set_flt_rounds`` takes C's FLT_ROUNDS values (0 toward
zero, 1 nearest, 2 upward, 3 downward) and writes MODE.FP_ROUND with s_setreg (s_round_mode for
a constant on gfx12).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from isa_exec_harness import Device, build_hip

from hsapy.sim.execution import SimFault

BUILDS = [("gfx942", ()), ("gfx1201", ()), ("gfx1201", ("-mwavefrontsize64",))]
BUILD_IDS = ["gfx942", "gfx1201-w32", "gfx1201-w64"]
FLT_ROUNDS = {"toward_zero": 0, "upward": 2, "downward": 3}

SOURCE = r"""
#define HWREG(id, off, size) ((id) | ((off) << 6) | (((size) - 1) << 11))
KERNEL void mode(uint* out) { out[tid_x()] = __builtin_amdgcn_s_getreg(HWREG(1, 0, 32)); }

KERNEL void ops32(const float* a, const float* b, const float* c, float* out, int* rnd) {
  uint i = bid_x() * bdim_x() + tid_x();
  __builtin_set_flt_rounds(rnd[bid_x()]);
  float x = a[i], y = b[i], z = c[i];
  out[8 * i + 0] = x + y;
  out[8 * i + 1] = x - z;
  out[8 * i + 2] = x * y;
  out[8 * i + 3] = __builtin_fmaf(x, y, z);
  out[8 * i + 4] = x / y;
  out[8 * i + 5] = __builtin_amdgcn_sqrtf(__builtin_fabsf(x));
  out[8 * i + 6] = (float)(int)(z * 1e8f);
  out[8 * i + 7] = (float)((double)x * (double)y);
  rnd[64 + i] = __builtin_flt_rounds();
}

KERNEL void ops64(const double* a, const double* b, const double* c, double* out, const int* rnd) {
  uint i = tid_x();
  __builtin_set_flt_rounds(rnd[0]);
  double x = a[i], y = b[i], z = c[i];
  out[4 * i + 0] = x + y;
  out[4 * i + 1] = x * y;
  out[4 * i + 2] = __builtin_fma(x, y, z);
  out[4 * i + 3] = x / y;
}

KERNEL void ops16(const _Float16* a, const _Float16* b, _Float16* out, const int* rnd) {
  uint i = tid_x();
  __builtin_set_flt_rounds(rnd[0]);
  _Float16 x = a[i], y = b[i];
  out[4 * i + 0] = x + y;
  out[4 * i + 1] = x * y;
  out[4 * i + 2] = x - y;
  out[4 * i + 3] = (_Float16)((float)x * 1.0001f);      // v_fma_mixhi_f16
}

KERNEL void rtz_const(const float* a, const float* b, float* out) {
  uint i = tid_x();
  __builtin_set_flt_rounds(0);          // s_round_mode 0xf on gfx12, s_setreg_imm32 on gfx9
  out[i] = a[i] + b[i];
}

KERNEL void flush_then_keep(const float* a, const float* b, float* out) {
  uint i = tid_x();
  __builtin_amdgcn_s_setreg(HWREG(1, 4, 4), 0x0);   // FP_DENORM = 0: flush (s_denorm_mode 0)
  out[2 * i] = a[i] * b[i];
  __builtin_amdgcn_s_setreg(HWREG(1, 4, 4), 0xf);   // keep denormals again
  out[2 * i + 1] = a[i] * b[i];
}

KERNEL void exp_rtz(const float* a, float* out) {
  uint i = tid_x();
  __builtin_set_flt_rounds(0);
  out[i] = __builtin_amdgcn_exp2f(a[i]);
}
"""


def directed(q: Fraction, ftype, how: str) -> float:
    """The ``ftype`` value that rounding the exact ``q`` toward ``how`` gives: start from a
    nearby float and step to the neighbour until the direction's rule holds (finite results)."""
    r = ftype(float(q))
    up = how == "upward" or (how == "toward_zero" and q < 0)

    def exact(v) -> Fraction:
        return Fraction(float(v))

    for _ in range(8):
        below, above = np.nextafter(r, ftype(-np.inf)), np.nextafter(r, ftype(np.inf))
        if up:
            if exact(r) < q:
                r = above
            elif exact(below) >= q:
                r = below
            else:
                return r
        else:
            if exact(r) > q:
                r = below
            elif exact(above) <= q:
                r = above
            else:
                return r
    raise AssertionError(f"no {how} rounding of {q} found")


def fractions(values) -> list[Fraction]:
    return [Fraction(float(v)) for v in values]


def nearest(q: Fraction, ftype):
    return ftype(float(q)) if ftype is np.float64 else ftype(np.float64(float(q)))


@pytest.mark.parametrize("target,flags", BUILDS, ids=BUILD_IDS)
@pytest.mark.parametrize("flush", [False, True])
def test_s_getreg_reads_the_mode_the_kernel_descriptor_set(target, flags, flush):
    flags = flags + (("-fgpu-flush-denormals-to-zero",) if flush else ())
    dev = Device(target)
    kernel = dev.load(build_hip(SOURCE, target, flags), "mode")
    out = dev.zeros(4 * 64)
    dev.dispatch(kernel, [out], (64,), (64,))
    rsrc1 = kernel.code_object.kernels["mode"].descriptor.compute_pgm_rsrc1
    # MODE[7:0] = rsrc1 float round/denorm fields; DX10_CLAMP and IEEE from rsrc1 before gfx12
    want = rsrc1.float_round_mode_32 | rsrc1.float_round_mode_16_64 << 2 \
        | rsrc1.float_denorm_mode_32 << 4 | rsrc1.float_denorm_mode_16_64 << 6
    if target == "gfx942":
        want |= rsrc1.enable_dx10_clamp << 8 | rsrc1.enable_ieee_mode << 9
    assert want == ((0x3C0 if flush else 0x3F0) if target == "gfx942" else
                    (0xC0 if flush else 0xF0))
    assert (dev.read(out, np.uint32, 64) == want).all()


def _inputs32(seed: int, n: int):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
    b = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
    c = rng.standard_normal(n).astype(np.float32)
    return a, b, c


@pytest.mark.parametrize("target,flags", BUILDS, ids=BUILD_IDS)
@pytest.mark.parametrize("how", list(FLT_ROUNDS))
def test_rounding_mode_set_at_run_time_directs_f32_arithmetic(target, flags, how):
    dev = Device(target)
    kernel = dev.load(build_hip(SOURCE, target, flags), "ops32")
    n = 64
    a, b, c = _inputs32(7, n)
    out = dev.zeros(32 * n)
    rnd = dev.buffer(np.array([FLT_ROUNDS[how]] + [-1] * (64 + n), np.int32))
    dev.dispatch(kernel, [dev.buffer(a), dev.buffer(b), dev.buffer(c), out, rnd], (n,), (n,))
    got = dev.read(out, np.float32, 8 * n).reshape(n, 8)
    A, B, C = fractions(a), fractions(b), fractions(c)
    f32 = np.float32
    exact = {
        "add": [x + y for x, y in zip(A, B)],
        "sub": [x - z for x, z in zip(A, C)],
        "mul": [x * y for x, y in zip(A, B)],
        "fma": [x * y + z for x, y, z in zip(A, B, C)],
        "div": [x / y for x, y in zip(A, B)],
    }
    for col, (what, qs) in enumerate(exact.items()):
        want = np.array([directed(q, f32, how) for q in qs], f32)
        assert np.array_equal(got[:, col], want), what
        assert not np.array_equal(want, np.array([nearest(q, f32) for q in qs], f32)), what
    # v_sqrt_f32: the root rounded in the direction (checked by squaring neighbours exactly)
    for x, r in zip(np.abs(a), got[:, 5]):
        lo, hi = np.nextafter(r, f32(0)), np.nextafter(r, f32(np.inf))
        X, R = Fraction(float(x)), Fraction(float(r))
        if how == "upward":
            assert R * R >= X and Fraction(float(lo)) ** 2 < X
        else:
            assert R * R <= X and Fraction(float(hi)) ** 2 > X
    # (float)(int)(z * 1e8f): the product rounds, the int -> float conversion rounds
    ints = [int(directed(z * Fraction(float(f32(1e8))), f32, how)) for z in C]
    assert np.array_equal(got[:, 6], np.array([directed(Fraction(k), f32, how) for k in ints], f32))
    # (float)((double)x * (double)y): an exact double product, one f32 rounding
    want = np.array([directed(x * y, f32, how) for x, y in zip(A, B)], f32)
    assert np.array_equal(got[:, 7], want)
    flt = dev.read(rnd + 4 * 64, np.int32, n)
    assert (flt == FLT_ROUNDS[how]).all()          # __builtin_flt_rounds reads MODE back


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
@pytest.mark.parametrize("how", list(FLT_ROUNDS))
def test_rounding_mode_directs_f64_add_mul_fma_and_division(target, how):
    dev = Device(target)
    kernel = dev.load(build_hip(SOURCE, target), "ops64")
    n = 64
    rng = np.random.default_rng(11)
    a = rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)
    b = rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)
    c = rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)
    out = dev.zeros(32 * n)
    rnd = dev.buffer(np.array([FLT_ROUNDS[how]], np.int32))
    dev.dispatch(kernel, [dev.buffer(a), dev.buffer(b), dev.buffer(c), out, rnd], (n,), (n,))
    got = dev.read(out, np.float64, 4 * n).reshape(n, 4)
    A, B, C = fractions(a), fractions(b), fractions(c)
    f64 = np.float64
    for col, qs in enumerate(([x + y for x, y in zip(A, B)], [x * y for x, y in zip(A, B)],
                              [x * y + z for x, y, z in zip(A, B, C)],
                              [x / y for x, y in zip(A, B)])):
        want = np.array([directed(q, f64, how) for q in qs])
        assert np.array_equal(got[:, col], want), col
        assert not np.array_equal(want, np.array([float(q) for q in qs])), col


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
@pytest.mark.parametrize("how", list(FLT_ROUNDS))
def test_rounding_mode_directs_f16_arithmetic(target, how):
    dev = Device(target)
    kernel = dev.load(build_hip(SOURCE, target), "ops16")
    n = 64
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(n) * 50).astype(np.float16)
    b = (rng.standard_normal(n) * 0.3).astype(np.float16)
    out = dev.zeros(8 * n)
    rnd = dev.buffer(np.array([FLT_ROUNDS[how]], np.int32))
    dev.dispatch(kernel, [dev.buffer(a), dev.buffer(b), out, rnd], (n,), (n,))
    got = dev.read(out, np.float16, 4 * n).reshape(n, 4)
    A, B = fractions(a), fractions(b)
    f16 = np.float16
    # (_Float16)((float)x * 1.0001f) becomes one v_fma_mix*_f16 (f16 and f32 sources, one f16
    # rounding); rounding to f32 first in the same direction would give the same f16 anyway
    scale = Fraction(float(np.float32(1.0001)))
    for col, qs in ((0, [x + y for x, y in zip(A, B)]), (1, [x * y for x, y in zip(A, B)]),
                    (2, [x - y for x, y in zip(A, B)]), (3, [x * scale for x in A])):
        want = np.array([directed(q, f16, how) for q in qs], f16)
        assert np.array_equal(got[:, col], want), col


@pytest.mark.parametrize("target,flags", BUILDS, ids=BUILD_IDS)
def test_constant_round_mode_instruction_rounds_toward_zero(target, flags):
    dev = Device(target)
    kernel = dev.load(build_hip(SOURCE, target, flags), "rtz_const")
    n = 64
    a, b, _ = _inputs32(5, n)
    out = dev.zeros(4 * n)
    dev.dispatch(kernel, [dev.buffer(a), dev.buffer(b), out], (n,), (n,))
    want = [directed(x + y, np.float32, "toward_zero") for x, y in zip(fractions(a), fractions(b))]
    assert np.array_equal(dev.read(out, np.float32, n), np.array(want, np.float32))


@pytest.mark.parametrize("target,flags", BUILDS, ids=BUILD_IDS)
def test_denormal_mode_written_at_run_time_flushes_then_keeps(target, flags):
    dev = Device(target)
    kernel = dev.load(build_hip(SOURCE, target, flags), "flush_then_keep")
    a = np.array([1e-20, -3e-21, 2.0, 1e-30], np.float32)
    b = np.array([1e-20, 5e-20, 3.0, -1e-10], np.float32)
    out = dev.zeros(8 * 4)
    dev.dispatch(kernel, [dev.buffer(a), dev.buffer(b), out], (4,), (4,))
    got = dev.read(out, np.float32, 8).reshape(4, 2)
    product = a * b                                   # denormal results except lane 2
    assert np.array_equal(got[:, 1], product)         # FP_DENORM = 3: kept
    flushed = np.where(np.abs(product) < np.finfo(np.float32).tiny, 0.0, product)
    assert np.array_equal(got[:, 0], flushed.astype(np.float32))
    assert np.signbit(got[1, 0]) and np.signbit(got[3, 0])   # flushed to a signed zero


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_waves_that_set_different_modes_each_round_their_way(target):
    """Each workgroup sets its own direction: the waves of one batch diverge in MODE and run
    as separate batches."""
    dev = Device(target)
    kernel = dev.load(build_hip(SOURCE, target), "ops32")
    wave = dev.profile.wavefront_size
    hows = ["upward", "downward", "toward_zero", "upward"]
    n = wave * len(hows)
    a, b, c = _inputs32(9, n)
    out = dev.zeros(32 * n)
    rnd = dev.buffer(np.array([FLT_ROUNDS[h] for h in hows] + [-1] * (60 + n), np.int32))
    dev.dispatch(kernel, [dev.buffer(a), dev.buffer(b), dev.buffer(c), out, rnd], (n,), (wave,))
    got = dev.read(out, np.float32, 8 * n).reshape(n, 8)
    for i, (x, y) in enumerate(zip(fractions(a), fractions(b))):
        assert got[i, 0] == directed(x + y, np.float32, hows[i // wave]), i


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_float_op_without_directed_rounding_stops_naming_it_and_the_mode(target):
    dev = Device(target)
    kernel = dev.load(build_hip(SOURCE, target), "exp_rtz")
    out = dev.zeros(4 * 64)
    with pytest.raises(SimFault) as info:
        dev.dispatch(kernel, [dev.buffer(np.ones(64, np.float32)), out], (64,), (64,))
    assert info.value.status == 42
    message = info.value.message
    assert message.startswith(f"not implemented for {target}: v_exp_f32")
    assert "round toward zero" in message and "v_exp_f32 is not implemented" in message
    assert not dev.read(out, np.uint32, 64).any()
