// corpus-flags: -ffast-math -fgpu-flush-denormals-to-zero
// Kernels built the way performance-minded HIP code often is: -ffast-math (approximate
// reciprocals, square roots and transcendentals, reassociation, no NaN/Inf handling) and
// single-precision denormals flushed (the kernel descriptor's FLOAT_DENORM_MODE_32 says so).
#include "corpus.h"

// Unit vectors and lengths of float3 points: x * rsqrt(|x|^2) and a fast square root.
extern "C" __global__ void fast_normalize(const float* p, float* unit, float* length, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = p[3 * i], y = p[3 * i + 1], z = p[3 * i + 2];
  float len = sqrtf(x * x + y * y + z * z);
  float inv = 1.0f / len;
  unit[3 * i] = x * inv;
  unit[3 * i + 1] = y * inv;
  unit[3 * i + 2] = z * inv;
  length[i] = len;
}

// The hardware transcendental and reciprocal units, as fast math reaches them.
extern "C" __global__ void fast_transcendentals(const float* x, const float* y, float* out,
                                                int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a = x[i], b = y[i];
  out[6 * i + 0] = expf(a);
  out[6 * i + 1] = logf(b);
  out[6 * i + 2] = __builtin_sinf(a);
  out[6 * i + 3] = __builtin_cosf(a);
  out[6 * i + 4] = a / b;
  out[6 * i + 5] = sqrtf(b);
}

// Flushed single-precision denormals: products that would be denormal are zero, denormal
// inputs count as zero; double precision keeps its denormals.
extern "C" __global__ void flush_denormals(const float* a, const float* b, const float* c,
                                           const double* d, float* out, double* dout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i], z = c[i];
  out[3 * i + 0] = x * y;
  out[3 * i + 1] = x + z;
  out[3 * i + 2] = x * y + z;
  dout[i] = d[i] * 0x1p-30;
}

// A weighted row sum the compiler may reassociate and vectorise.
extern "C" __global__ void fast_row_sum(const float* m, const float* w, float* out, int cols,
                                        int rows) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) s += m[r * cols + c] * w[c];
  out[r] = s;
}

// The same flushing where the arithmetic is uniform (kernel arguments: SALU float instructions
// on gfx12) and in the hardware's transcendental and exponent units.
extern "C" __global__ void flush_uniform_and_units(const float* e, const float* y,
                                                   const float* s, const int* k, float a,
                                                   float b, float c, float* uniform, float* out,
                                                   int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (i == 0) {
    uniform[0] = a * b;
    uniform[1] = a + c;
    uniform[2] = a * b + c;
    uniform[3] = a * 3.0f - c;
  }
  out[4 * i + 0] = __builtin_amdgcn_exp2f(e[i]);
  out[4 * i + 1] = __builtin_amdgcn_rcpf(y[i]);
  out[4 * i + 2] = __builtin_amdgcn_sqrtf(s[i]);
  out[4 * i + 3] = __builtin_amdgcn_ldexpf(y[i], k[i]);
}

// Half inputs widened into float arithmetic (the mixed-precision v_fma_mix forms) and a DPP
// row shift feeding a float add: both flush f32 denormals under this build's mode.
extern "C" __global__ void flush_mixed(const __half* h, const float* c, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half a = h[2 * i], b = h[2 * i + 1];
  float z = c[i];
  out[4 * i + 0] = (float)a * (float)b + z;
  out[4 * i + 1] = (float)a * 0.5f - z;
  out[4 * i + 2] = (float)a * (float)a - z * 0.5f;
  float shifted = __builtin_bit_cast(
      float, __builtin_amdgcn_update_dpp(0, __builtin_bit_cast(int, z), 0x111, 0xf, 0xf, true));
  out[4 * i + 3] = shifted + z;
}

// An f16 dot product into a float accumulator (v_dot2_f32_f16, v_dot2c_f32_f16).
extern "C" __global__ void flush_dot2(const __half2* x, const __half2* y, const float* c,
                                      float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __builtin_amdgcn_fdot2(x[i], y[i], c[i], false);
}

// Half-precision transcendental units, as fast half math reaches them (f16 denormals are kept
// in this build: only f32 ones are flushed).
extern "C" __global__ void fast_half_units(const __half* x, const __half* y, __half* out,
                                           int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half a = x[i], b = y[i];
  out[6 * i + 0] = __builtin_exp2f16(a);
  out[6 * i + 1] = __builtin_log2f16(b);
  out[6 * i + 2] = __builtin_sqrtf16(b);
  out[6 * i + 3] = (__half)1.0 / b;
  out[6 * i + 4] = __builtin_amdgcn_rsqh(b);
  out[6 * i + 5] = a * a + (__half)0.5;
}
