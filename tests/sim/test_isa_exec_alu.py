"""VALU forms and instruction families on real clang-19 code: SDWA (gfx9 byte and word code),
cross-lane permutes, min/max families, dot products. Each kernel's code is checked to contain
the instructions the test is about, so the test proves what its name says."""
from __future__ import annotations

import math

import numpy as np
import pytest
from isa_exec_harness import TARGETS, Device, build_hip

from hsapy.codeobject import CodeObject
from hsapy.sim.isa import decode_kernel

BYTES = """
KERNEL void bytes(const uint* in, uint* out, uint n) {
  uint i = bid_x() * bdim_x() + tid_x();
  if (i >= n) return;
  uint v = in[i];
  unsigned char b0 = v, b1 = v >> 8, b2 = v >> 16, b3 = v >> 24;
  unsigned char r0 = b0 + b1, r1 = b1 * b2, r2 = b2 - b3, r3 = b3 ^ b0;
  out[i] = r0 | (r1 << 8) | (r2 << 16) | ((uint)r3 << 24);
}
"""

HALVES = """
KERNEL void halves(const uint* in, uint* out, uint n) {
  uint i = bid_x() * bdim_x() + tid_x();
  if (i >= n) return;
  uint v = in[i];
  _Float16 lo = __builtin_bit_cast(_Float16, (unsigned short)v);
  _Float16 hi = __builtin_bit_cast(_Float16, (unsigned short)(v >> 16));
  float f = (float)hi * 2.0f + (float)lo;
  _Float16 r = (_Float16)(hi - lo);
  out[i] = __builtin_bit_cast(uint, f) ^ (uint)__builtin_bit_cast(unsigned short, r);
}
"""


def _instructions(code: bytes, name: str):
    return decode_kernel(CodeObject.from_bytes(code), name)


def _bytes_reference(v: np.ndarray) -> np.ndarray:
    b = [(v >> s) & 0xFF for s in (0, 8, 16, 24)]
    r = [(b[0] + b[1]) & 0xFF, (b[1] * b[2]) & 0xFF, (b[2] - b[3]) & 0xFF, b[3] ^ b[0]]
    return (r[0] | r[1] << 8 | r[2] << 16 | r[3] << 24).astype(np.uint32)


@pytest.mark.parametrize("target", TARGETS)
def test_byte_arithmetic_packed_in_a_dword_is_exact(target):
    code = build_hip(BYTES, target)
    if target == "gfx942":  # -O3 turns the byte selects into SDWA forms on gfx9
        assert any(inst.fields.get("sdwa") for inst in _instructions(code, "bytes"))
    dev = Device(target)
    kernel = dev.load(code, "bytes")
    rng = np.random.default_rng(4)
    n = 500
    v = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    v[:4] = [0xFFFFFFFF, 0x80808080, 0x7F01FF00, 0]
    pin, out = dev.buffer(v), dev.zeros(4 * n)
    dev.dispatch(kernel, [pin, out, n], (512,), (256,))
    assert np.array_equal(dev.read(out, np.uint32, n), _bytes_reference(v.astype(np.int64)))


@pytest.mark.parametrize("target", TARGETS)
def test_f16_halves_of_a_dword_are_exact(target):
    code = build_hip(HALVES, target)
    if target == "gfx942":  # the f16 result is merged with a WORD_0 select
        assert any(inst.fields.get("sdwa") for inst in _instructions(code, "halves"))
    dev = Device(target)
    kernel = dev.load(code, "halves")
    rng = np.random.default_rng(5)
    n = 300
    halves = rng.standard_normal((n, 2)).astype(np.float16)
    halves[0] = [np.float16(65504.0), np.float16(-65504.0)]
    halves[1] = [np.float16(6e-8), np.float16(-0.0)]
    v = halves.view(np.uint32).reshape(n)
    pin, out = dev.buffer(v), dev.zeros(4 * n)
    dev.dispatch(kernel, [pin, out, n], (320,), (64,))
    lo, hi = halves[:, 0].astype(np.float64), halves[:, 1].astype(np.float64)
    with np.errstate(over="ignore"):                # 65504 - -65504 rounds to inf
        f = (hi * 2.0 + lo).astype(np.float32)      # exact in f64, rounded once
        r = (hi - lo).astype(np.float16)
    expect = f.view(np.uint32) ^ r.view(np.uint16).astype(np.uint32)
    assert np.array_equal(dev.read(out, np.uint32, n), expect)


PERMLANE = """
KERNEL void lanes(const uint* in, uint* out) {
  uint i = bid_x() * bdim_x() + tid_x();
  uint v = in[i];
  // within each row of 16 lanes: reverse; across the pair of rows: identity selects
  uint a = __builtin_amdgcn_permlane16(v, v, 0x89ABCDEFu, 0x01234567u, false, false);
  uint b = __builtin_amdgcn_permlanex16(v, v, 0x76543210u, 0xFEDCBA98u, false, false);
  // a row sum: four steps of xor-swizzles inside the row, then one with the other row
  uint s = v;
  s += __builtin_amdgcn_permlane16(s, s, 0x67452301u, 0xEFCDAB89u, false, false);
  s += __builtin_amdgcn_permlane16(s, s, 0x54761032u, 0xDCFE98BAu, false, false);
  s += __builtin_amdgcn_permlane16(s, s, 0x32107654u, 0xBA98FEDCu, false, false);
  s += __builtin_amdgcn_permlane16(s, s, 0xFEDCBA98u, 0x76543210u, false, false);
  s += __builtin_amdgcn_permlanex16(s, s, 0x76543210u, 0xFEDCBA98u, false, false);
  out[3 * i] = a;
  out[3 * i + 1] = b;
  out[3 * i + 2] = s;
}
"""


def test_permlane16_and_permlanex16_kernel_on_gfx1201():
    code = build_hip(PERMLANE, "gfx1201")
    names = {inst.name for inst in _instructions(code, "lanes")}
    assert {"v_permlane16_b32", "v_permlanex16_b32"} <= names
    dev = Device("gfx1201")
    kernel = dev.load(code, "lanes")
    n = 128
    v = np.random.default_rng(6).integers(0, 1000, n).astype(np.uint32)
    pin, out = dev.buffer(v), dev.zeros(12 * n)
    dev.dispatch(kernel, [pin, out], (n,), (64,))
    got = dev.read(out, np.uint32, 3 * n).reshape(n, 3)
    lane = np.arange(n)
    assert np.array_equal(got[:, 0], v[(lane & ~15) + 15 - (lane & 15)])
    assert np.array_equal(got[:, 1], v[lane ^ 16])
    wave_sums = v.reshape(-1, 32).sum(axis=1, dtype=np.uint32)
    assert np.array_equal(got[:, 2], np.repeat(wave_sums, 32))


MINMAX = """
KERNEL void minmax(const float* a, const float* b, const float* c, const int* ia, float* out,
                   int* iout, uint n) {
  uint i = bid_x() * bdim_x() + tid_x();
  if (i >= n) return;
  float x = a[i], y = b[i], z = c[i];
  out[4 * i] = __builtin_fminf(__builtin_fmaxf(x, y), z);
  out[4 * i + 1] = __builtin_fmaxf(__builtin_fminf(x, y), z);
  out[4 * i + 2] = __builtin_fminf(__builtin_fminf(x, y), z);
  out[4 * i + 3] = __builtin_fminf(__builtin_fmaxf(x, -1.0f), 1.0f);
  int p = ia[2 * i], q = ia[2 * i + 1];
  iout[2 * i] = __builtin_elementwise_min(__builtin_elementwise_max(p, q), 17);
  iout[2 * i + 1] = __builtin_elementwise_max(__builtin_elementwise_min(p, q), -3);
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_min_max_chains_and_clamps_ignore_nan_operands(target):
    code = build_hip(MINMAX, target)
    if target == "gfx1201":   # the chains fuse into the three-source gfx12 forms
        names = {inst.name for inst in _instructions(code, "minmax")}
        assert {"v_maxmin_num_f32", "v_minmax_num_f32", "v_maxmin_i32", "v_minmax_i32",
                "v_med3_num_f32"} <= names
    dev = Device(target)
    kernel = dev.load(code, "minmax")
    rng = np.random.default_rng(7)
    n = 256
    a, b, c = (rng.standard_normal(n).astype(np.float32) * 3 for _ in range(3))
    a[:6] = [np.nan, 1.0, np.inf, -np.inf, np.nan, 0.5]
    b[:6] = [2.0, np.nan, 1.0, np.nan, np.nan, 0.25]
    c[:6] = [-1.0, 3.0, np.nan, 2.0, 4.0, np.nan]
    ints = rng.integers(-40, 40, 2 * n).astype(np.int32)
    pa, pb, pc, pi = dev.buffer(a), dev.buffer(b), dev.buffer(c), dev.buffer(ints)
    out, iout = dev.zeros(16 * n), dev.zeros(8 * n)
    dev.dispatch(kernel, [pa, pb, pc, pi, out, iout, n], (n,), (64,))
    got = dev.read(out, np.float32, 4 * n).reshape(n, 4)
    expect = np.stack([np.fmin(np.fmax(a, b), c), np.fmax(np.fmin(a, b), c),
                       np.fmin(np.fmin(a, b), c), np.fmin(np.fmax(a, -1.0), 1.0)], axis=1)
    assert np.array_equal(got, expect.astype(np.float32), equal_nan=True)
    p, q = ints[0::2], ints[1::2]
    igot = dev.read(iout, np.int32, 2 * n).reshape(n, 2)
    assert np.array_equal(igot[:, 0], np.minimum(np.maximum(p, q), 17))
    assert np.array_equal(igot[:, 1], np.maximum(np.minimum(p, q), -3))


DOTS = """
KERNEL void dots(const uint* a, const uint* b, const int* c, int* out, uint n) {
  uint i = bid_x() * bdim_x() + tid_x();
  if (i >= n) return;
  uint x = a[i], y = b[i];
  int z = c[i];
  typedef short short2 __attribute__((ext_vector_type(2)));
#if defined(__gfx942__)
  out[4 * i] = __builtin_amdgcn_sdot4(x, y, z, false);
  out[4 * i + 1] = (int)__builtin_amdgcn_udot4(x, y, (uint)z, true);
  out[4 * i + 2] = __builtin_amdgcn_sdot8(x, y, z, false);
  out[4 * i + 3] = __builtin_amdgcn_sdot2(__builtin_bit_cast(short2, x),
                                          __builtin_bit_cast(short2, y), z, true);
#else
  out[4 * i] = __builtin_amdgcn_sudot4(true, x, false, y, z, false);
  out[4 * i + 1] = (int)__builtin_amdgcn_udot4(x, y, (uint)z, true);
  out[4 * i + 2] = __builtin_amdgcn_sudot8(true, x, true, y, z, false);
  out[4 * i + 3] = __builtin_bit_cast(int, __builtin_amdgcn_dot4_f32_fp8_bf8(x, y, (float)z));
#endif
}
"""


def _fields(v: np.ndarray, width: int, signed: bool) -> list[np.ndarray]:
    out = []
    for k in range(32 // width):
        f = (v.astype(np.int64) >> (width * k)) & ((1 << width) - 1)
        out.append(np.where(f >> (width - 1), f - (1 << width), f) if signed else f)
    return out


def _ocp_float8(v: np.ndarray, exp_bits: int) -> np.ndarray:
    """OCP E4M3 (exp_bits 4: no infinity, S.1111.111 is NaN) or E5M2 (IEEE-like) as float64."""
    man_bits = 7 - exp_bits
    bias = (1 << (exp_bits - 1)) - 1
    v = v.astype(np.int64)
    sign = np.where(v >> 7, -1.0, 1.0)
    e = (v >> man_bits) & ((1 << exp_bits) - 1)
    m = v & ((1 << man_bits) - 1)
    value = np.where(e == 0, m * 2.0 ** (1 - bias - man_bits),
                     (1 + m / 2 ** man_bits) * 2.0 ** (e - bias)) * sign
    top = (1 << exp_bits) - 1
    if exp_bits == 4:
        return np.where((e == top) & (m == 7), np.nan, value)
    return np.where(e == top, np.where(m == 0, sign * np.inf, np.nan), value)


@pytest.mark.parametrize("target", TARGETS)
def test_dot_product_builtins_are_exact(target):
    code = build_hip(DOTS, target)
    names = {inst.name for inst in _instructions(code, "dots")}
    assert {"v_dot4_u32_u8"} <= names and any("dot8" in nm for nm in names)
    dev = Device(target)
    kernel = dev.load(code, "dots")
    rng = np.random.default_rng(8)
    n = 200
    a = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    c = rng.integers(-2 ** 31, 2 ** 31, n, dtype=np.int64).astype(np.int32)
    c[:3] = [2 ** 31 - 1, -2 ** 31, 0]
    pa, pb, pc, out = dev.buffer(a), dev.buffer(b), dev.buffer(c), dev.zeros(16 * n)
    dev.dispatch(kernel, [pa, pb, pc, out, n], (n,), (64,))
    got = dev.read(out, np.int32, 4 * n).reshape(n, 4)
    c64 = c.astype(np.int64)

    def wrap(x):
        return (np.asarray(x) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)

    def dot(width, sa, sb):
        return sum(x * y for x, y in zip(_fields(a, width, sa), _fields(b, width, sb)))

    assert np.array_equal(got[:, 1].view(np.uint32),
                          np.clip(dot(8, False, False) + (c64 & 0xFFFFFFFF), 0, 2 ** 32 - 1))
    assert np.array_equal(got[:, 2], wrap(dot(4, True, True) + c64))
    if target == "gfx942":
        assert np.array_equal(got[:, 0], wrap(dot(8, True, True) + c64))
        assert np.array_equal(got[:, 3], np.clip(dot(16, True, True) + c64, -2 ** 31, 2 ** 31 - 1))
    else:
        assert np.array_equal(got[:, 0], wrap(dot(8, True, False) + c64))
        fp8 = [_ocp_float8(f, 4) for f in _fields(a, 8, False)]
        bf8 = [_ocp_float8(f, 5) for f in _fields(b, 8, False)]
        with np.errstate(invalid="ignore"):
            total = sum(x * y for x, y in zip(fp8, bf8)) + c.astype(np.float32).astype(np.float64)
        assert np.array_equal(got[:, 3].view(np.float32), total.astype(np.float32),
                              equal_nan=True)


MISC = """
KERNEL void indexed(const float* in, const int* sel, float* out) {
  uint i = bid_x() * bdim_x() + tid_x();
  float v[8];
  for (int k = 0; k < 8; ++k) v[k] = in[8 * i + k];
  int s = sel[0] & 7;           // a wave-uniform index into a register array
  v[s] += 100.0f;
  int t = sel[i] & 7;           // and a per-lane one
  out[i] = v[s] * v[t];
}
KERNEL void conversions(const double* x, const int* seg, const uint* bytes, double* out,
                        float* f) {
  uint i = tid_x();
  out[i] = __builtin_amdgcn_trig_preop(x[i], seg[i]);
  f[2 * i] = __builtin_amdgcn_cvt_f32_fp8(bytes[i], 1);
  f[2 * i + 1] = __builtin_amdgcn_cvt_f32_bf8(bytes[i], 2);
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_indexing_a_register_array_with_uniform_and_per_lane_indices(target):
    code = build_hip(MISC, target)
    if target == "gfx1201":      # M0-relative moves for the uniform index
        names = {inst.name for inst in _instructions(code, "indexed")}
        assert {"v_movrels_b32", "v_movreld_b32"} <= names
    dev = Device(target)
    kernel = dev.load(code, "indexed")
    n = 128
    rng = np.random.default_rng(9)
    data = rng.integers(-50, 50, (n, 8)).astype(np.float32)
    sel = rng.integers(0, 1000, n).astype(np.int32)
    pin, psel, out = dev.buffer(data), dev.buffer(sel), dev.zeros(4 * n)
    dev.dispatch(kernel, [pin, psel, out], (n,), (64,))
    s, t = int(sel[0]) & 7, sel & 7
    v = data.copy()
    v[:, s] += 100.0
    assert np.array_equal(dev.read(out, np.float32, n), v[:, s] * v[np.arange(n), t])


def _fnuz_or_ocp(byte: np.ndarray, target: str, exp_bits: int) -> np.ndarray:
    if target == "gfx1201":
        return _ocp_float8(byte, exp_bits)
    man_bits = 7 - exp_bits                  # CDNA3 FNUZ: bias 2^(e-1), 0x80 the only NaN
    bias = 1 << (exp_bits - 1)
    b = byte.astype(np.int64)
    e = (b >> man_bits) & ((1 << exp_bits) - 1)
    m = b & ((1 << man_bits) - 1)
    value = np.where(e == 0, m * 2.0 ** (1 - bias - man_bits), (1 + m / 2 ** man_bits) * 2.0 ** (e - bias))
    value = np.where(b >> 7, -value, value)
    return np.where(b == 0x80, np.nan, value)


@pytest.mark.parametrize("target", TARGETS)
def test_trig_preop_and_fp8_conversion_builtins(target):
    code = build_hip(MISC, target)
    dev = Device(target)
    kernel = dev.load(code, "conversions")
    n = 64
    rng = np.random.default_rng(10)
    x = np.ldexp(rng.random(n) + 1.0, rng.integers(-10, 900, n))
    seg = rng.integers(0, 20, n).astype(np.int32)
    words = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    px, pseg, pw = dev.buffer(x), dev.buffer(seg), dev.buffer(words)
    out, f = dev.zeros(8 * n), dev.zeros(8 * n)
    dev.dispatch(kernel, [px, pseg, pw, out, f], (n,), (64,))
    # 2/pi to 1201 bits from its well-known 128-bit start and the ISA guide's segment rule:
    # only the segments that lie within those first 128 bits are checked here
    two_over_pi_128 = 0xA2F9836E4E441529FC2757D1F534DDC0
    got = dev.read(out, np.float64, n)
    exp = ((x.view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    for k in range(n):
        first = int(seg[k]) * 53 + max(int(exp[k]) - 1077, 0)
        if first + 53 <= 128:
            bits = (two_over_pi_128 >> (128 - 53 - first)) & ((1 << 53) - 1)
            assert got[k] == math.ldexp(bits, -53 - first), k
    conv = dev.read(f, np.float32, 2 * n).reshape(n, 2)
    fp8 = _fnuz_or_ocp((words >> 8) & 0xFF, target, 4).astype(np.float32)
    bf8 = _fnuz_or_ocp((words >> 16) & 0xFF, target, 5).astype(np.float32)
    assert np.array_equal(conv[:, 0], fp8, equal_nan=True)
    assert np.array_equal(conv[:, 1], bf8, equal_nan=True)


LDEXP_HALF = """
KERNEL void ldexp_half(const _Float16* in, _Float16* out, uint n) {
  uint i = bid_x() * bdim_x() + tid_x();
  if (i >= n) return;
  // an exponent clang knows fits 16 bits: it is computed with 16-bit instructions
  out[i] = __builtin_amdgcn_ldexph(in[i], (int)(i % 9) - 4);
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_ldexp_f16_scales_by_a_signed_16_bit_exponent(target):
    # V_LDEXP_F16 reads S1 as i16: a negative exponent made by 16-bit arithmetic has bits 31:16
    # clear, and read as an i32 it would scale by 2**65532 (an overflow to inf)
    code = build_hip(LDEXP_HALF, target)
    assert "v_ldexp_f16" in {inst.name for inst in _instructions(code, "ldexp_half")}
    dev = Device(target)
    kernel = dev.load(code, "ldexp_half")
    n = 90
    x = np.random.default_rng(9).uniform(-8, 8, n).astype(np.float16)
    pin, out = dev.buffer(x), dev.zeros(2 * n)
    dev.dispatch(kernel, [pin, out, n], (128,), (64,))
    want = np.ldexp(x.astype(np.float64), np.arange(n) % 9 - 4).astype(np.float16)
    assert np.array_equal(dev.read(out, np.float16, n), want)
