// Matrix cores the way rocWMMA/CK-style code drives them: one wave computes a 16 x 16 tile of
// C = A B with MFMA (gfx942) or WMMA (gfx12, wave32 and wave64) builtins, loading each lane's
// fragment straight from global memory by the operand layouts of the AMD matrix instruction
// calculator (CDNA3 and RDNA4 ISA guides, "matrix operand layouts"), looping over K.
#include "corpus.h"

typedef _Float16 half4_t __attribute__((ext_vector_type(4)));
typedef _Float16 half8_t __attribute__((ext_vector_type(8)));
typedef float float4_t __attribute__((ext_vector_type(4)));
typedef float float8_t __attribute__((ext_vector_type(8)));
typedef int int2_t __attribute__((ext_vector_type(2)));
typedef int int4_t __attribute__((ext_vector_type(4)));
typedef int int8_t_ __attribute__((ext_vector_type(8)));

#if defined(__gfx1200__) || defined(__gfx1201__)
#define CORPUS_GFX12 1
#endif

// C (m x n, float) = A (m x k, half, row-major) x B (k x n, half, row-major); m, n, k multiples
// of 16; one wave per output tile, tiles in wave order along n then m.
extern "C" __global__ void mma_gemm_f16(const __half* a, const __half* b, float* c, int m, int n,
                                        int k) {
  int wave = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
  int tiles_n = n / 16;
  if (wave >= (m / 16) * tiles_n) return;
  int row0 = (wave / tiles_n) * 16, col0 = (wave % tiles_n) * 16;
  int lane = (int)__lane_id();
#if defined(CORPUS_GFX12) && __AMDGCN_WAVEFRONT_SIZE == 32
  // Lane l holds row (A) / column (B) l % 16; its 8 halves are k = 8 * (t / 4) + 4 * (l / 16)
  // + t % 4 (64-bit chunks of k alternate between the lane halves). D: rows v + 8 * (l / 16).
  int r = lane % 16, h = lane / 16;
  float8_t acc = {};
  for (int k0 = 0; k0 < k; k0 += 16) {
    half8_t fa, fb;
    for (int t = 0; t < 8; ++t) {
      int kk = k0 + 8 * (t / 4) + 4 * h + t % 4;
      fa[t] = a[(row0 + r) * k + kk];
      fb[t] = b[kk * n + col0 + r];
    }
    acc = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(fa, fb, acc);
  }
  for (int v = 0; v < 8; ++v) c[(row0 + v + 8 * h) * n + col0 + r] = acc[v];
#elif defined(CORPUS_GFX12)
  // Wave64: lanes 32-63 hold the second half of each wave32 lane's registers.
  int g = lane / 32, r = lane % 16, h = (lane % 32) / 16;
  float4_t acc = {};
  for (int k0 = 0; k0 < k; k0 += 16) {
    half4_t fa, fb;
    for (int s = 0; s < 4; ++s) {
      int kk = k0 + 8 * g + 4 * h + s;
      fa[s] = a[(row0 + r) * k + kk];
      fb[s] = b[kk * n + col0 + r];
    }
    acc = __builtin_amdgcn_wmma_f32_16x16x16_f16_w64_gfx12(fa, fb, acc);
  }
  for (int s = 0; s < 4; ++s) c[(row0 + 4 * g + s + 8 * h) * n + col0 + r] = acc[s];
#else
  // gfx942 v_mfma_f32_16x16x16_f16: lane l holds row / column l % 16 and k = 4 * (l / 16) + j;
  // D: rows 4 * (l / 16) + j, column l % 16.
  int r = lane % 16, q = lane / 16;
  float4_t acc = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int k0 = 0; k0 < k; k0 += 16) {
    half4_t fa, fb;
    for (int j = 0; j < 4; ++j) {
      fa[j] = a[(row0 + r) * k + k0 + 4 * q + j];
      fb[j] = b[(k0 + 4 * q + j) * n + col0 + r];
    }
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(fa, fb, acc, 0, 0, 0);
  }
  for (int j = 0; j < 4; ++j) c[(row0 + 4 * q + j) * n + col0 + r] = acc[j];
#endif
}

// The same with signed 8-bit inputs and 32-bit integer accumulation (exact).
extern "C" __global__ void mma_gemm_i8(const signed char* a, const signed char* b, int* c, int m,
                                       int n, int k) {
  int wave = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
  int tiles_n = n / 16;
  if (wave >= (m / 16) * tiles_n) return;
  int row0 = (wave / tiles_n) * 16, col0 = (wave % tiles_n) * 16;
  int lane = (int)__lane_id();
#if defined(CORPUS_GFX12)
  // v_wmma_i32_16x16x16_iu8: 8 bytes of k per wave32 lane, k = 8 * (l / 16) + t (one 64-bit
  // chunk per lane half); wave64 splits them, lanes 32-63 taking bytes 4-7.
  int r = lane % 16, h = (lane % 32) / 16;
#if __AMDGCN_WAVEFRONT_SIZE == 32
  const int bytes = 8, g = 0;
  int8_t_ acc = {};
#else
  const int bytes = 4;
  int g = lane / 32;
  int4_t acc = {};
#endif
  for (int k0 = 0; k0 < k; k0 += 16) {
    unsigned char pa[8] = {}, pb[8] = {};
    for (int t = 0; t < bytes; ++t) {
      int kk = k0 + 8 * h + 4 * g + t;
      pa[t] = (unsigned char)a[(row0 + r) * k + kk];
      pb[t] = (unsigned char)b[kk * n + col0 + r];
    }
#if __AMDGCN_WAVEFRONT_SIZE == 32
    int2_t fa = __builtin_bit_cast(int2_t, pa), fb = __builtin_bit_cast(int2_t, pb);
    acc = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32_gfx12(true, fa, true, fb, acc, false);
#else
    int fa = __builtin_bit_cast(int2_t, pa).x, fb = __builtin_bit_cast(int2_t, pb).x;
    acc = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w64_gfx12(true, fa, true, fb, acc, false);
#endif
  }
#if __AMDGCN_WAVEFRONT_SIZE == 32
  for (int v = 0; v < 8; ++v) c[(row0 + v + 8 * h) * n + col0 + r] = acc[v];
#else
  for (int s = 0; s < 4; ++s) c[(row0 + 4 * g + s + 8 * h) * n + col0 + r] = acc[s];
#endif
#else
  // gfx942 v_mfma_i32_16x16x32_i8: lane l holds row / column l % 16 and k = 8 * (l / 16) + j.
  int r = lane % 16, q = lane / 16;
  int4_t acc = {0, 0, 0, 0};
  for (int k0 = 0; k0 < k; k0 += 32) {
    unsigned char pa[8], pb[8];
    for (int j = 0; j < 8; ++j) {
      pa[j] = (unsigned char)a[(row0 + r) * k + k0 + 8 * q + j];
      pb[j] = (unsigned char)b[(k0 + 8 * q + j) * n + col0 + r];
    }
    long fa = __builtin_bit_cast(long, pa), fb = __builtin_bit_cast(long, pb);
    acc = __builtin_amdgcn_mfma_i32_16x16x32_i8(fa, fb, acc, 0, 0, 0);
  }
  for (int j = 0; j < 4; ++j) c[(row0 + 4 * q + j) * n + col0 + r] = acc[j];
#endif
}
