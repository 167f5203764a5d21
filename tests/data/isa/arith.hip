// Arithmetic and conversions: fp32, fp64, fp16, 32/64-bit integers, division, exp, sqrt.
#include "device.h"

KERNEL void vector_add(const float* a, const float* b, float* c, int n) {
  uint i = gid();
  if (i < (uint)n) c[i] = a[i] + b[i];
}
KERNEL void fp32_ops(const float* a, const float* b, float* c, int n) {
  uint i = gid();
  if (i >= (uint)n) return;
  float x = a[i], y = b[i];
  float r = x * y - x / y + __builtin_fmaf(x, y, 1.5f);
  r += __builtin_fminf(x, y) * __builtin_fmaxf(x, -2.0f);
  r += __builtin_sqrtf(__builtin_fabsf(x)) + __builtin_expf(y) + __builtin_logf(__builtin_fabsf(y) + 1.0f);
  r += __builtin_floorf(x) + __builtin_ceilf(y) + __builtin_truncf(x * 0.25f) + __builtin_rintf(y);
  r += 1.0f / __builtin_sqrtf(__builtin_fabsf(y) + 0.5f);
  r += __builtin_copysignf(3.0f, y) + __builtin_exp2f(x) + __builtin_log2f(__builtin_fabsf(x) + 2.f);
  c[i] = x > y ? r : -r;
}
KERNEL void fp64_ops(const double* a, const double* b, double* c, int n) {
  uint i = gid();
  if (i >= (uint)n) return;
  double x = a[i], y = b[i];
  double r = x * y + x / y - __builtin_fma(x, y, 0.5);
  r += __builtin_sqrt(__builtin_fabs(x)) + __builtin_fmin(x, y) + __builtin_floor(y);
  r += __builtin_trunc(x) + __builtin_ceil(y) + __builtin_rint(x);
  c[i] = x < y ? r : r * 2.0;
}
KERNEL void fp16_ops(const _Float16* a, const _Float16* b, _Float16* c, int n) {
  uint i = gid();
  if (i >= (uint)n) return;
  _Float16 x = a[i], y = b[i];
  _Float16 r = x * y + x - y * (_Float16)0.5f;
  r = __builtin_fmaf16(r, x, y);
  c[i] = r > x ? r : x / y;
}
typedef _Float16 half2 __attribute__((ext_vector_type(2)));
typedef float float2 __attribute__((ext_vector_type(2)));
KERNEL void packed_ops(const half2* a, const half2* b, half2* c, const float2* fa, float2* fc, int n) {
  uint i = gid();
  if (i >= (uint)n) return;
  half2 x = a[i], y = b[i];
  c[i] = x * y + x;
  float2 u = fa[i];
  float2 v = fa[i + 1];
  fc[i] = u * v + u;
}
KERNEL void conversions(const float* a, const int* b, const double* d, int* oi, uint* ou,
                        float* of, double* od, _Float16* oh, i64* ol, int n) {
  uint i = gid();
  if (i >= (uint)n) return;
  float x = a[i];
  int k = b[i];
  double z = d[i];
  oi[i] = (int)x + (int)z;
  ou[i] = (uint)x + (uint)z;
  of[i] = (float)k + (float)(uint)k + (float)z + (float)(i64)k;
  od[i] = (double)k + (double)x + (double)(uint)k + (double)(i64)z;
  oh[i] = (_Float16)x + (_Float16)k;
  ol[i] = (i64)x + (i64)z + (i64)(u64)x;
}
KERNEL void int_ops(const int* a, const int* b, int* c, const i64* la, i64* lc, u64* uc, int n) {
  uint i = gid();
  if (i >= (uint)n) return;
  int x = a[i], y = b[i] | 1;
  int r = x * y + (x >> 3) - (int)((uint)y >> 5) + (x / y) + (x % y);
  r ^= (uint)x / (uint)y;
  r += __builtin_popcount(x) + __builtin_clz(y | 1) + __builtin_ctz(y) + (x < y ? x : y);
  r += __builtin_bitreverse32(x) + (int)(((i64)x * y) >> 32) + __builtin_abs(y);
  c[i] = r;
  i64 p = la[i], q = la[i + 1] | 1;
  lc[i] = p * q + (p >> 7) + (p << 3) + p / q + p % q;
  uc[i] = (u64)p / (u64)q + (u64)p % (u64)q + ((u64)p >> 9) + __builtin_popcountll(p) + __builtin_clzll(q);
}
KERNEL void scalar_ops(const int* a, int* c, i64 s, uint u, int n) {
  // uniform (SALU) arithmetic
  i64 t = s * 3 + (s >> 5) - (s / 7);
  uint v = u * 13 + (u >> 3) + __builtin_popcount(u) + __builtin_clz(u | 1) + (u ^ 0xabcd1234u);
  v += __builtin_bitreverse32(u) + (u % 10u) + (uint)(t & 0xffff) + (u < 100 ? 5 : 9);
  uint i = gid();
  if (i < (uint)n) c[i] = a[i] + (int)v + (int)(t >> 40);
}
