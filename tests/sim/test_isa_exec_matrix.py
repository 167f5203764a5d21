"""Matrix instructions in real kernels: HIP built by clang-19 with ``__builtin_amdgcn_mfma_*``
(gfx942) and ``__builtin_amdgcn_wmma_*`` / ``__builtin_amdgcn_swmmac_*`` (gfx1201, wave32 and
wave64), run end to end on the interpreter against numpy.

Each kernel is one wave computing a small GEMM C = A x B (K a few times the instruction's K,
so the accumulator chains through registers -- VGPRs or AGPRs, as the compiler chooses). It
loads its operands lane by lane with the layouts AMD documents (the matrix instruction
calculator's "matrix element to register mapping"), so a layout the simulator got wrong shows
as a wrong C. Integer results are exact; float results are within the f32-accumulation bound of
the float64 product of the same inputs.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from isa_exec_harness import Device, build_hip

TYPES = r"""
typedef _Float16 half4 __attribute__((ext_vector_type(4)));
typedef _Float16 half8 __attribute__((ext_vector_type(8)));
typedef _Float16 half16 __attribute__((ext_vector_type(16)));
typedef short short4 __attribute__((ext_vector_type(4)));
typedef short short8 __attribute__((ext_vector_type(8)));
typedef float float2_ __attribute__((ext_vector_type(2)));
typedef float float4_ __attribute__((ext_vector_type(4)));
typedef float float8_ __attribute__((ext_vector_type(8)));
typedef float float16_ __attribute__((ext_vector_type(16)));
typedef double double4_ __attribute__((ext_vector_type(4)));
typedef int int2_ __attribute__((ext_vector_type(2)));
typedef int int4_ __attribute__((ext_vector_type(4)));
typedef int int8_ __attribute__((ext_vector_type(8)));
"""

# --- gfx942 -------------------------------------------------------------------------------------

GFX942 = TYPES + r"""
// v_mfma_f32_32x32x8_f16: A[i][k] in lane 32*(k/4 % 2) + i, B[k][j] in lane 32*(k/4 % 2) + j,
// four k per lane; D[i][j] in register 4*(i/8) + i%4 of lane 32*(i/4 % 2) + j
KERNEL void mfma_32x32x8_f16(const _Float16* A, const _Float16* B, float* C, uint K) {
  uint l = tid_x(), i = l % 32, kq = 4 * (l / 32);
  float16_ acc = {};
  for (uint k = 0; k < K; k += 8) {
    half4 a, b;
    for (int v = 0; v < 4; ++v) { a[v] = A[i * K + k + kq + v]; b[v] = B[(k + kq + v) * 32 + i]; }
    acc = __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, acc, 0, 0, 0);
  }
  for (int r = 0; r < 16; ++r) C[(8 * (r / 4) + 4 * (l / 32) + r % 4) * 32 + i] = acc[r];
}

// v_mfma_f32_16x16x16_bf16 (bf16_1k): four k per lane, lane 16*(k/4) + i; D[i][j] in register
// i%4 of lane 16*(i/4) + j
KERNEL void mfma_16x16x16_bf16(const short* A, const short* B, float* C, uint K) {
  uint l = tid_x(), i = l % 16, kq = 4 * (l / 16);
  float4_ acc = {};
  for (uint k = 0; k < K; k += 16) {
    short4 a, b;
    for (int v = 0; v < 4; ++v) { a[v] = A[i * K + k + kq + v]; b[v] = B[(k + kq + v) * 16 + i]; }
    acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, acc, 0, 0, 0);
  }
  for (int r = 0; r < 4; ++r) C[(4 * (l / 16) + r) * 16 + i] = acc[r];
}

// v_mfma_f32_16x16x4_f32: one k per lane, lane 16*k + i
KERNEL void mfma_16x16x4_f32(const float* A, const float* B, float* C, uint K) {
  uint l = tid_x(), i = l % 16, kk = l / 16;
  float4_ acc = {};
  for (uint k = 0; k < K; k += 4)
    acc = __builtin_amdgcn_mfma_f32_16x16x4f32(A[i * K + k + kk], B[(k + kk) * 16 + i], acc,
                                               0, 0, 0);
  for (int r = 0; r < 4; ++r) C[(4 * (l / 16) + r) * 16 + i] = acc[r];
}

// v_mfma_i32_16x16x32_i8: eight k per lane (one 64-bit operand), lane 16*(k/8) + i
KERNEL void mfma_16x16x32_i8(const signed char* A, const signed char* B, int* C, uint K) {
  uint l = tid_x(), i = l % 16, k8 = 8 * (l / 16);
  int4_ acc = {};
  for (uint k = 0; k < K; k += 32) {
    unsigned long a = 0, b = 0;
    for (int v = 0; v < 8; ++v) {
      a |= (unsigned long)(unsigned char)A[i * K + k + k8 + v] << (8 * v);
      b |= (unsigned long)(unsigned char)B[(k + k8 + v) * 16 + i] << (8 * v);
    }
    acc = __builtin_amdgcn_mfma_i32_16x16x32_i8((long)a, (long)b, acc, 0, 0, 0);
  }
  for (int r = 0; r < 4; ++r) C[(4 * (l / 16) + r) * 16 + i] = acc[r];
}

// v_mfma_f64_16x16x4_f64: one k per lane, lane 16*k + i; D[i][j] in register pair i/4 of lane
// 16*(i%4) + j
KERNEL void mfma_16x16x4_f64(const double* A, const double* B, double* C, uint K) {
  uint l = tid_x(), i = l % 16, kk = l / 16;
  double4_ acc = {};
  for (uint k = 0; k < K; k += 4)
    acc = __builtin_amdgcn_mfma_f64_16x16x4f64(A[i * K + k + kk], B[(k + kk) * 16 + i], acc,
                                               0, 0, 0);
  for (int r = 0; r < 4; ++r) C[(4 * r + l / 16) * 16 + i] = acc[r];
}

// v_mfma_f32_16x16x32_fp8_fp8 (E4M3FNUZ bytes): eight k per lane, lane 16*(k/8) + i
KERNEL void mfma_16x16x32_fp8(const unsigned char* A, const unsigned char* B, float* C, uint K) {
  uint l = tid_x(), i = l % 16, k8 = 8 * (l / 16);
  float4_ acc = {};
  for (uint k = 0; k < K; k += 32) {
    unsigned long a = 0, b = 0;
    for (int v = 0; v < 8; ++v) {
      a |= (unsigned long)A[i * K + k + k8 + v] << (8 * v);
      b |= (unsigned long)B[(k + k8 + v) * 16 + i] << (8 * v);
    }
    acc = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8((long)a, (long)b, acc, 0, 0, 0);
  }
  for (int r = 0; r < 4; ++r) C[(4 * (l / 16) + r) * 16 + i] = acc[r];
}

// v_mfma_f32_16x16x8_xf32: two k per lane, lane 16*(k/2) + i
KERNEL void mfma_16x16x8_xf32(const float* A, const float* B, float* C, uint K) {
  uint l = tid_x(), i = l % 16, k2 = 2 * (l / 16);
  float4_ acc = {};
  for (uint k = 0; k < K; k += 8) {
    float2_ a = {A[i * K + k + k2], A[i * K + k + k2 + 1]};
    float2_ b = {B[(k + k2) * 16 + i], B[(k + k2 + 1) * 16 + i]};
    acc = __builtin_amdgcn_mfma_f32_16x16x8_xf32(a, b, acc, 0, 0, 0);
  }
  for (int r = 0; r < 4; ++r) C[(4 * (l / 16) + r) * 16 + i] = acc[r];
}

// v_mfma_f32_4x4x1_16b_f32: 16 independent 4x4 products, block b in lanes 4b..4b+3; D[i][j] of
// block b in register i of lane 4b + j. Out[b][i][j] = sum_k A[b][i][k] B[b][k][j].
KERNEL void mfma_4x4x1_16b(const float* A, const float* B, float* Out, uint K) {
  uint l = tid_x(), blk = l / 4, i = l % 4;
  float4_ acc = {};
  for (uint k = 0; k < K; ++k)
    acc = __builtin_amdgcn_mfma_f32_4x4x1f32(A[(blk * 4 + i) * K + k], B[(blk * K + k) * 4 + i],
                                             acc, 0, 0, 0);
  for (int r = 0; r < 4; ++r) Out[(blk * 4 + r) * 4 + i] = acc[r];
}

// v_smfmac_f32_16x16x32_f16: A 4:2 sparse. Lane 16*g + i (g = 0..3) holds the two kept values of
// the groups k = 8g..8g+3 and 8g+4..8g+7 (a half4) and their positions in bits 0-3 / 4-7 of the
// index VGPR; B has eight k per lane, lane 16*(k/8) + j.
KERNEL void smfmac_16x16x32_f16(const _Float16* Astored, const uint* Index, const _Float16* B,
                                float* C, uint K) {
  uint l = tid_x(), i = l % 16, g = l / 16;
  float4_ acc = {};
  for (uint k = 0; k < K; k += 32) {
    half4 a;
    half8 b;
    for (int v = 0; v < 4; ++v) a[v] = Astored[(k / 32 * 64 + l) * 4 + v];
    for (int v = 0; v < 8; ++v) b[v] = B[(k + 8 * g + v) * 16 + i];
    acc = __builtin_amdgcn_smfmac_f32_16x16x32_f16(a, b, acc, Index[k / 32 * 64 + l], 0, 0);
  }
  for (int r = 0; r < 4; ++r) C[(4 * (l / 16) + r) * 16 + i] = acc[r];
}
"""


def _fp8_fnuz(values: np.ndarray) -> np.ndarray:
    """E4M3FNUZ bytes (bias 8) of values in {0, +-0.5, +-1, +-1.5, +-2, +-3}."""
    table = {0.0: 0x00, 0.5: 0x38, 1.0: 0x40, 1.5: 0x44, 2.0: 0x48, 3.0: 0x4C}
    codes = np.array([table[abs(float(v))] for v in values.ravel()], np.uint8)
    codes[(values.ravel() < 0) & (codes != 0)] |= 0x80
    return codes.reshape(values.shape)


def _fp8_ocp(values: np.ndarray, e5m2: bool = False) -> np.ndarray:
    """OCP E4M3 (bias 7) or E5M2 (bias 15) bytes of values in {0, +-0.5, ..., +-3}."""
    table = ({0.0: 0x00, 0.5: 0x38, 1.0: 0x3C, 1.5: 0x3E, 2.0: 0x40, 3.0: 0x42} if e5m2 else
             {0.0: 0x00, 0.5: 0x30, 1.0: 0x38, 1.5: 0x3C, 2.0: 0x40, 3.0: 0x44})
    codes = np.array([table[abs(float(v))] for v in values.ravel()], np.uint8)
    codes[(values.ravel() < 0) & (codes != 0)] |= 0x80
    return codes.reshape(values.shape)


def _small(rng, shape) -> np.ndarray:
    return rng.choice([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -0.5, -1.0, -2.0, -3.0], shape)


def _within_f32_bound(got, A, B, K):
    exact = A.astype(np.float64) @ B.astype(np.float64)
    bound = (K + 2) * 2.0 ** -23 * (np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64))
    assert (np.abs(got - exact) <= bound + 1e-30).all(), np.abs(got - exact).max()


@pytest.fixture(scope="module")
def gfx942():
    dev = Device("gfx942")
    return dev, build_hip(GFX942, "gfx942")


def _run(dev, co, name, args, block):
    kernel = dev.load(co, name)
    dev.dispatch(kernel, args, (block,), (block,))


def test_gfx942_f16_mfma_gemm_32x32(gfx942):
    dev, co = gfx942
    rng = np.random.default_rng(1)
    K = 64
    A = rng.standard_normal((32, K)).astype(np.float16)
    B = rng.standard_normal((K, 32)).astype(np.float16)
    out = dev.zeros(4 * 32 * 32)
    _run(dev, co, "mfma_32x32x8_f16", [dev.buffer(A), dev.buffer(B), out, K], 64)
    _within_f32_bound(dev.read(out, np.float32, 1024).reshape(32, 32), A, B, K)


def test_gfx942_bf16_mfma_gemm_16x16(gfx942):
    dev, co = gfx942
    rng = np.random.default_rng(2)
    K = 48
    A32 = rng.standard_normal((16, K)).astype(np.float32)
    B32 = rng.standard_normal((K, 16)).astype(np.float32)
    A16 = (A32.view(np.uint32) >> 16).astype(np.uint16)        # bf16: the top half of an f32
    B16 = (B32.view(np.uint32) >> 16).astype(np.uint16)
    A = (A16.astype(np.uint32) << 16).view(np.float32)
    B = (B16.astype(np.uint32) << 16).view(np.float32)
    out = dev.zeros(4 * 256)
    _run(dev, co, "mfma_16x16x16_bf16", [dev.buffer(A16), dev.buffer(B16), out, K], 64)
    _within_f32_bound(dev.read(out, np.float32, 256).reshape(16, 16), A, B, K)


def test_gfx942_f32_mfma_gemm_16x16(gfx942):
    dev, co = gfx942
    rng = np.random.default_rng(3)
    K = 16
    A = rng.standard_normal((16, K)).astype(np.float32)
    B = rng.standard_normal((K, 16)).astype(np.float32)
    out = dev.zeros(4 * 256)
    _run(dev, co, "mfma_16x16x4_f32", [dev.buffer(A), dev.buffer(B), out, K], 64)
    _within_f32_bound(dev.read(out, np.float32, 256).reshape(16, 16), A, B, K)


def test_gfx942_i8_mfma_gemm_is_exact(gfx942):
    dev, co = gfx942
    rng = np.random.default_rng(4)
    K = 96
    A = rng.integers(-128, 128, (16, K)).astype(np.int8)
    B = rng.integers(-128, 128, (K, 16)).astype(np.int8)
    out = dev.zeros(4 * 256)
    _run(dev, co, "mfma_16x16x32_i8", [dev.buffer(A), dev.buffer(B), out, K], 64)
    got = dev.read(out, np.int32, 256).reshape(16, 16)
    assert np.array_equal(got, A.astype(np.int64) @ B.astype(np.int64))


def test_gfx942_f64_mfma_gemm_16x16(gfx942):
    dev, co = gfx942
    rng = np.random.default_rng(5)
    K = 12
    A = rng.standard_normal((16, K))
    B = rng.standard_normal((K, 16))
    out = dev.zeros(8 * 256)
    _run(dev, co, "mfma_16x16x4_f64", [dev.buffer(A), dev.buffer(B), out, K], 64)
    got = dev.read(out, np.float64, 256).reshape(16, 16)
    exact = A @ B
    assert (np.abs(got - exact) <= (K + 2) * 2.0 ** -52 * (np.abs(A) @ np.abs(B))).all()


def test_gfx942_fp8_mfma_gemm_with_exactly_representable_sums(gfx942):
    dev, co = gfx942
    rng = np.random.default_rng(6)
    K = 64
    A, B = _small(rng, (16, K)), _small(rng, (K, 16))
    out = dev.zeros(4 * 256)
    _run(dev, co, "mfma_16x16x32_fp8", [dev.buffer(_fp8_fnuz(A)), dev.buffer(_fp8_fnuz(B)),
                                        out, K], 64)
    # every product is a multiple of 1/4 below 9: the sums are exact in f32
    assert np.array_equal(dev.read(out, np.float32, 256).reshape(16, 16), A @ B)


def test_gfx942_xf32_mfma_gemm_16x16(gfx942):
    dev, co = gfx942
    rng = np.random.default_rng(7)
    K = 32
    # values with at most 10 fraction bits are exactly xf32
    A = (rng.integers(-1024, 1024, (16, K)) / 256).astype(np.float32)
    B = (rng.integers(-1024, 1024, (K, 16)) / 256).astype(np.float32)
    out = dev.zeros(4 * 256)
    _run(dev, co, "mfma_16x16x8_xf32", [dev.buffer(A), dev.buffer(B), out, K], 64)
    assert np.array_equal(dev.read(out, np.float32, 256).reshape(16, 16),
                          A.astype(np.float64) @ B.astype(np.float64))


def test_gfx942_sixteen_block_4x4_mfma(gfx942):
    dev, co = gfx942
    rng = np.random.default_rng(8)
    K = 5
    A = rng.standard_normal((16, 4, K)).astype(np.float32)
    B = rng.standard_normal((16, K, 4)).astype(np.float32)
    out = dev.zeros(4 * 256)
    _run(dev, co, "mfma_4x4x1_16b", [dev.buffer(A), dev.buffer(B), out, K], 64)
    got = dev.read(out, np.float32, 256).reshape(16, 4, 4)
    for blk in range(16):
        _within_f32_bound(got[blk], A[blk], B[blk], K)


def _compress_4_2(A: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    """Zero two of each four k of A; return (kept values [rows, K/2], positions [rows, K/4, 2])."""
    rows, K = A.shape
    pairs = np.array([(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)])
    pos = pairs[rng.integers(0, 6, (rows, K // 4))]
    kept = np.take_along_axis(A.reshape(rows, K // 4, 4), pos, axis=2)
    return kept.reshape(rows, K // 2), pos


def test_gfx942_sparse_smfmac_gemm(gfx942):
    dev, co = gfx942
    rng = np.random.default_rng(9)
    K = 64
    A = rng.standard_normal((16, K)).astype(np.float16)
    kept, pos = _compress_4_2(A, rng)
    dense = np.zeros_like(A)
    for i in range(16):
        for q in range(K // 4):
            dense[i, 4 * q + pos[i, q]] = kept[i, 2 * q:2 * q + 2]
    B = rng.standard_normal((K, 16)).astype(np.float16)
    # per 32-k step and lane l = 16g + i: kept values of groups 2g and 2g+1, their positions
    steps = K // 32
    stored = np.zeros((steps, 64, 4), np.float16)
    index = np.zeros((steps, 64), np.uint32)
    for s in range(steps):
        for lane in range(64):
            i, g = lane % 16, lane // 16
            q0 = s * 8 + 2 * g
            stored[s, lane] = kept[i, 2 * q0:2 * q0 + 4]
            index[s, lane] = (pos[i, q0, 0] | pos[i, q0, 1] << 2 | pos[i, q0 + 1, 0] << 4
                              | pos[i, q0 + 1, 1] << 6)
    out = dev.zeros(4 * 256)
    _run(dev, co, "smfmac_16x16x32_f16", [dev.buffer(stored), dev.buffer(index), dev.buffer(B),
                                          out, K], 64)
    _within_f32_bound(dev.read(out, np.float32, 256).reshape(16, 16), dense, B, K)


# --- gfx1201, wave32 and wave64 ----------------------------------------------------------------

GFX1201 = TYPES + r"""
#if WAVE == 64
#define W(x) x##_w64
#define W12(x) x##_w64_gfx12
#else
#define W(x) x##_w32
#define W12(x) x##_w32_gfx12
#endif
// wave32 slot s (of the lane's 8 halfs) holds k = 8*(s/4) + 4*(l/16) + s%4; wave64 lanes 32-63
// hold the second half of those slots: k = 4*(l/16) + s for s < 4.
DEVICE uint k16(uint l, uint s) {
#if WAVE == 64
  return 4 * (l / 16) + s;
#else
  return 8 * (s / 4) + 4 * (l / 16) + s % 4;
#endif
}
// D row of slot r of lane l: wave32 8*(l/16) + r; wave64 8*(l/16 % 2) + 4*(l/32) + r
DEVICE uint row(uint l, uint r) {
#if WAVE == 64
  return 8 * ((l / 16) % 2) + 4 * (l / 32) + r;
#else
  return 8 * (l / 16) + r;
#endif
}
#define SLOTS (256 / WAVE)          // halfs of A or B per lane
#define ROWS (256 / WAVE)           // D rows per lane
typedef _Float16 halfN __attribute__((ext_vector_type(SLOTS)));
typedef short shortN __attribute__((ext_vector_type(SLOTS)));
typedef float floatN __attribute__((ext_vector_type(ROWS)));
typedef _Float16 halfR __attribute__((ext_vector_type(ROWS)));
typedef int intN __attribute__((ext_vector_type(ROWS)));

KERNEL void wmma_f32_f16(const _Float16* A, const _Float16* B, float* C, uint K) {
  uint l = tid_x(), i = l % 16;
  floatN acc = {};
  for (uint k = 0; k < K; k += 16) {
    halfN a, b;
    for (uint s = 0; s < SLOTS; ++s) {
      a[s] = A[i * K + k + k16(l, s)];
      b[s] = B[(k + k16(l, s)) * 16 + i];
    }
    acc = W12(__builtin_amdgcn_wmma_f32_16x16x16_f16)(a, b, acc);
  }
  for (uint r = 0; r < ROWS; ++r) C[row(l, r) * 16 + i] = acc[r];
}

KERNEL void wmma_f32_bf16(const short* A, const short* B, float* C, uint K) {
  uint l = tid_x(), i = l % 16;
  floatN acc = {};
  for (uint k = 0; k < K; k += 16) {
    shortN a, b;
    for (uint s = 0; s < SLOTS; ++s) {
      a[s] = A[i * K + k + k16(l, s)];
      b[s] = B[(k + k16(l, s)) * 16 + i];
    }
    acc = W12(__builtin_amdgcn_wmma_f32_16x16x16_bf16)(a, b, acc);
  }
  for (uint r = 0; r < ROWS; ++r) C[row(l, r) * 16 + i] = acc[r];
}

// f16 accumulator: D packed two rows a register, the same row order
KERNEL void wmma_f16_f16(const _Float16* A, const _Float16* B, _Float16* C) {
  uint l = tid_x(), i = l % 16;
  halfN a, b;
  halfR acc = {};
  for (uint s = 0; s < SLOTS; ++s) {
    a[s] = A[i * 16 + k16(l, s)];
    b[s] = B[k16(l, s) * 16 + i];
  }
  acc = W12(__builtin_amdgcn_wmma_f16_16x16x16_f16)(a, b, acc);
  for (uint r = 0; r < ROWS; ++r) C[row(l, r) * 16 + i] = acc[r];
}

// bf16 accumulator (the first accumulation takes C as the inline constant 0)
typedef short shortR __attribute__((ext_vector_type(ROWS)));
KERNEL void wmma_bf16_bf16(const short* A, const short* B, short* C) {
  uint l = tid_x(), i = l % 16;
  shortN a, b;
  shortR acc = {};
  for (uint s = 0; s < SLOTS; ++s) {
    a[s] = A[i * 16 + k16(l, s)];
    b[s] = B[k16(l, s) * 16 + i];
  }
  acc = W12(__builtin_amdgcn_wmma_bf16_16x16x16_bf16)(a, b, acc);
  for (uint r = 0; r < ROWS; ++r) C[row(l, r) * 16 + i] = acc[r];
}

// 8-bit A/B: wave32 byte s of the lane's 8 holds k = 8*(l/16) + s; wave64 lanes 32-63 the second
// four: k = 8*(l/16 % 2) + 4*(l/32) + s
DEVICE uint k8(uint l, uint s) {
#if WAVE == 64
  return 8 * ((l / 16) % 2) + 4 * (l / 32) + s;
#else
  return 8 * (l / 16) + s;
#endif
}
#define BYTES (256 / WAVE)         // bytes of A or B per lane
#if WAVE == 64
typedef int packedN;
#define SET(x, n, v) x |= (int)((unsigned)(v) << (8 * (n)))
#else
typedef int2_ packedN;
#define SET(x, n, v) x[(n) / 4] |= (int)((unsigned)(v) << (8 * ((n) % 4)))
#endif

KERNEL void wmma_i32_iu8(const signed char* A, const signed char* B, int* C, uint K) {
  uint l = tid_x(), i = l % 16;
  intN acc = {};
  for (uint k = 0; k < K; k += 16) {
    packedN a = {}, b = {};
    for (uint s = 0; s < BYTES; ++s) {
      SET(a, s, (unsigned char)A[i * K + k + k8(l, s)]);
      SET(b, s, (unsigned char)B[(k + k8(l, s)) * 16 + i]);
    }
    acc = W12(__builtin_amdgcn_wmma_i32_16x16x16_iu8)(true, a, true, b, acc, false);
  }
  for (uint r = 0; r < ROWS; ++r) C[row(l, r) * 16 + i] = acc[r];
}

KERNEL void wmma_f32_fp8(const unsigned char* A, const unsigned char* B, float* C, uint K) {
  uint l = tid_x(), i = l % 16;
  floatN acc = {};
  for (uint k = 0; k < K; k += 16) {
    packedN a = {}, b = {};
    for (uint s = 0; s < BYTES; ++s) {
      SET(a, s, A[i * K + k + k8(l, s)]);
      SET(b, s, B[(k + k8(l, s)) * 16 + i]);
    }
    acc = W12(__builtin_amdgcn_wmma_f32_16x16x16_fp8_bf8)(a, b, acc);
  }
  for (uint r = 0; r < ROWS; ++r) C[row(l, r) * 16 + i] = acc[r];
}

// SWMMAC f16, K = 32: A keeps two of each four k. Wave32: lane 16h + i holds, in register r,
// the kept pair of the group at k = 16*(r/2) + 8h + 4*(r%2); index bits 4r..4r+3 name their
// positions. Wave64 lanes 32-63 hold the second half (registers 2, 3 and index bits 8-15).
// B: wave32 half s of the lane's 16 holds k = 16*(s/8) + 8*(l/16) + s%8; wave64 s < 8, lanes
// 32-63 the second half.
KERNEL void swmmac_f32_f16(const _Float16* Astored, const uint* Index, const _Float16* B,
                           float* C) {
  uint l = tid_x(), i = l % 16;
  halfN a;
  typedef _Float16 halfB __attribute__((ext_vector_type(2 * SLOTS)));
  halfB b;
  floatN acc = {};
  for (uint s = 0; s < SLOTS; ++s) a[s] = Astored[l * SLOTS + s];
  for (uint s = 0; s < 2 * SLOTS; ++s) {
#if WAVE == 64
    uint kb = 8 * (l / 16) + s;
#else
    uint kb = 16 * (s / 8) + 8 * (l / 16) + s % 8;
#endif
    b[s] = B[kb * 16 + i];
  }
  acc = W(__builtin_amdgcn_swmmac_f32_16x16x32_f16)(a, b, acc, Index[l]);
  for (uint r = 0; r < ROWS; ++r) C[row(l, r) * 16 + i] = acc[r];
}
"""


WAVE64_PROBE = """
KERNEL void ballot(uint* out) {
  uint t = tid_x();
  out[t] = (__builtin_amdgcn_ballot_w64(t % 3 == 0) >> t) & 1 ? 3 * t + 1 : 7;
}
"""


def _runs_wave64(dev: Device) -> bool:
    """Whether the interpreter runs gfx1201 wave64 code with 64-lane masks (a ballot)."""
    kernel = dev.load(build_hip(WAVE64_PROBE, "gfx1201", ("-mwavefrontsize64",)), "ballot")
    out = dev.zeros(4 * 64)
    try:
        dev.dispatch(kernel, [out], (64,), (64,))
    except Exception:       # noqa: BLE001 -- any failure means: not yet
        return False
    lane = np.arange(64)
    return np.array_equal(dev.read(out, np.uint32, 64), np.where(lane % 3 == 0, 3 * lane + 1, 7))


@pytest.fixture(scope="module", params=[32, 64], ids=["wave32", "wave64"])
def gfx1201(request):
    wave = request.param
    dev = Device("gfx1201")
    if wave == 64 and not _runs_wave64(dev):
        pytest.skip("this interpreter does not run gfx1201 wave64 code with 64-lane masks yet; "
                    "the wave64 matrix kernels need that first")
    extra = ("-mwavefrontsize64",) if wave == 64 else ()
    source = f"#define WAVE {wave}\n" + GFX1201
    return dev, build_hip(source, "gfx1201", extra), wave


def test_gfx1201_f16_wmma_gemm(gfx1201):
    dev, co, wave = gfx1201
    rng = np.random.default_rng(11)
    K = 48
    A = rng.standard_normal((16, K)).astype(np.float16)
    B = rng.standard_normal((K, 16)).astype(np.float16)
    out = dev.zeros(4 * 256)
    _run(dev, co, "wmma_f32_f16", [dev.buffer(A), dev.buffer(B), out, K], wave)
    _within_f32_bound(dev.read(out, np.float32, 256).reshape(16, 16), A, B, K)


def test_gfx1201_bf16_wmma_gemm(gfx1201):
    dev, co, wave = gfx1201
    rng = np.random.default_rng(12)
    K = 32
    A16 = (rng.standard_normal((16, K)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    B16 = (rng.standard_normal((K, 16)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    out = dev.zeros(4 * 256)
    _run(dev, co, "wmma_f32_bf16", [dev.buffer(A16), dev.buffer(B16), out, K], wave)
    A = (A16.astype(np.uint32) << 16).view(np.float32)
    B = (B16.astype(np.uint32) << 16).view(np.float32)
    _within_f32_bound(dev.read(out, np.float32, 256).reshape(16, 16), A, B, K)


def test_gfx1201_f16_accumulating_wmma_rounds_once_to_f16(gfx1201):
    dev, co, wave = gfx1201
    rng = np.random.default_rng(13)
    A = rng.standard_normal((16, 16)).astype(np.float16)
    B = rng.standard_normal((16, 16)).astype(np.float16)
    out = dev.zeros(2 * 256)
    _run(dev, co, "wmma_f16_f16", [dev.buffer(A), dev.buffer(B), out], wave)
    got = dev.read(out, np.float16, 256).reshape(16, 16).astype(np.float64)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    assert (np.abs(got - exact) <= 2.0 ** -11 * np.abs(exact) + 2.0 ** -24).all()


def test_gfx1201_bf16_accumulating_wmma_rounds_once_to_bf16(gfx1201):
    dev, co, wave = gfx1201
    rng = np.random.default_rng(17)
    A16 = (rng.standard_normal((16, 16)).astype(np.float32).view(np.uint32) >> 16)
    B16 = (rng.standard_normal((16, 16)).astype(np.float32).view(np.uint32) >> 16)
    out = dev.zeros(2 * 256)
    _run(dev, co, "wmma_bf16_bf16", [dev.buffer(A16.astype(np.uint16)),
                                     dev.buffer(B16.astype(np.uint16)), out], wave)
    got = (dev.read(out, np.uint16, 256).astype(np.uint32) << 16).view(np.float32) \
        .reshape(16, 16).astype(np.float64)
    A = (A16.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    B = (B16.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    exact = A @ B
    assert (np.abs(got - exact) <= 2.0 ** -8 * np.abs(exact) + 2.0 ** -126).all()


def test_gfx1201_signed_iu8_wmma_gemm_is_exact(gfx1201):
    dev, co, wave = gfx1201
    rng = np.random.default_rng(14)
    K = 64
    A = rng.integers(-128, 128, (16, K)).astype(np.int8)
    B = rng.integers(-128, 128, (K, 16)).astype(np.int8)
    out = dev.zeros(4 * 256)
    _run(dev, co, "wmma_i32_iu8", [dev.buffer(A), dev.buffer(B), out, K], wave)
    assert np.array_equal(dev.read(out, np.int32, 256).reshape(16, 16),
                          A.astype(np.int64) @ B.astype(np.int64))


def test_gfx1201_fp8_bf8_wmma_gemm_with_exactly_representable_sums(gfx1201):
    dev, co, wave = gfx1201
    rng = np.random.default_rng(15)
    K = 32
    A, B = _small(rng, (16, K)), _small(rng, (K, 16))
    out = dev.zeros(4 * 256)
    _run(dev, co, "wmma_f32_fp8", [dev.buffer(_fp8_ocp(A)), dev.buffer(_fp8_ocp(B, e5m2=True)),
                                   out, K], wave)
    assert np.array_equal(dev.read(out, np.float32, 256).reshape(16, 16), A @ B)


def test_gfx1201_sparse_swmmac_gemm(gfx1201):
    dev, co, wave = gfx1201
    rng = np.random.default_rng(16)
    A = rng.standard_normal((16, 32)).astype(np.float16)
    kept, pos = _compress_4_2(A, rng)
    dense = np.zeros_like(A)
    for i in range(16):
        for q in range(8):
            dense[i, 4 * q + pos[i, q]] = kept[i, 2 * q:2 * q + 2]
    B = rng.standard_normal((32, 16)).astype(np.float16)
    slots = 256 // wave
    stored = np.zeros((wave, slots), np.float16)
    index = np.zeros(wave, np.uint32)
    for lane in range(wave):
        i = lane % 16
        # the groups this lane holds, in register order: wave32 register r (of 4) is the group
        # at k = 16*(r/2) + 8*(lane/16) + 4*(r%2); wave64 lane 32+x holds wave32 registers 2, 3
        if wave == 32:
            groups = [(16 * (r // 2) + 8 * (lane // 16) + 4 * (r % 2)) // 4 for r in range(4)]
        else:
            half, h = lane // 32, (lane // 16) % 2
            groups = [(16 * (r // 2) + 8 * h + 4 * (r % 2)) // 4 for r in (2 * half, 2 * half + 1)]
        for n, q in enumerate(groups):
            stored[lane, 2 * n:2 * n + 2] = kept[i, 2 * q:2 * q + 2]
            index[lane] |= (int(pos[i, q, 0]) | int(pos[i, q, 1]) << 2) << (4 * n)
    out = dev.zeros(4 * 256)
    _run(dev, co, "swmmac_f32_f16", [dev.buffer(stored), dev.buffer(index), dev.buffer(B), out],
         wave)
    _within_f32_bound(dev.read(out, np.float32, 256).reshape(16, 16), dense, B, 32)


# --- AGPRs share gfx942's VGPR file past ACCUM_OFFSET ---------------------------------------------

def test_vgprs_past_accum_offset_alias_agprs_and_stop_the_queue():
    import _fault_kernels as fk

    from hsapy.sim.execution import SimFault

    if shutil.which("llvm-mc-19") is None and shutil.which("llvm-mc") is None:
        pytest.skip("llvm-mc (Debian llvm-19) is not installed")
    dev = Device("gfx942")
    # the kernel's descriptor puts AGPRs at v8 on (.amdhsa_accum_offset 8)
    inside = fk.build("agpr_ok", "v_accvgpr_write_b32 a0, v0\nv_mov_b32 v7, 1", "gfx942")
    dev.dispatch(dev.load(inside, "agpr_ok"), [0, 0, 0], (64,), (64,))
    past = fk.build("agpr_alias", "v_accvgpr_write_b32 a0, v0\nv_mov_b32 v9, 1", "gfx942")
    with pytest.raises(SimFault, match="first AGPR at VGPR 8"):
        dev.dispatch(dev.load(past, "agpr_alias"), [0, 0, 0], (64,), (64,))
