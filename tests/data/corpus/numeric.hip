// Number formats and integer arithmetic: half, half2 and bfloat16 conversions and math, 64-bit
// integer division/multiply-high/shifts/bit counts, double precision division/sqrt/fma,
// float <-> int conversions with explicit rounding, byte packing, 24-bit multiplies.
#include "corpus.h"

// Half precision: convert in, compute in half, convert out (and a mixed float accumulation).
extern "C" __global__ void half_math(const __half* a, const __half* b, __half* out_h,
                                     float* out_f, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half x = a[i], y = b[i];
  __half r = x * y + (__half)0.5f;            // half multiply-add
  r = __hmax(r, (__half)-2.0f);
  out_h[i] = r;
  out_f[i] = __half2float(x) * __half2float(y) + __half2float(r);
}

// Packed half2 arithmetic on pairs, read and written as 32-bit words.
extern "C" __global__ void half2_axpy(const __half2* x, const __half2* y, __half2* out, float a,
                                      int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n2) return;
  __half2 alpha = __halves2half2(__float2half(a), __float2half(a));
  __half2 r = __hfma2(alpha, x[i], y[i]);
  out[i] = __hmul2(r, __halves2half2((__half)1.0f, (__half)-1.0f));
}

// bfloat16: float -> bf16 (round to nearest even) -> float, and a dot of bf16 pairs in float.
extern "C" __global__ void bf16_convert(const float* in, unsigned short* bits, float* back,
                                        float* dots, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __hip_bfloat16 b = __float2bfloat16(in[i]);
  bits[i] = __builtin_bit_cast(unsigned short, b);
  back[i] = __bfloat162float(b);
  __hip_bfloat16 c = __float2bfloat16(in[(i + 1) % n]);
  dots[i] = __bfloat162float(b) * __bfloat162float(c);
}

// 64-bit integers: division and remainder by run-time values, multiply-high, shifts by
// variable amounts, rotates, population count, leading zeros, first set bit, bit reverse.
extern "C" __global__ void int64_ops(const u64* a, const u64* b, u64* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  u64 x = a[i], y = b[i] | 1ull;
  i64 sx = (i64)x, sy = (i64)(y >> 1) - (i64)(1ull << 40);
  if (sy == 0) sy = 7;
  unsigned int s = (unsigned int)(y & 63);
  u64* o = out + 12 * i;
  o[0] = x / y;
  o[1] = x % y;
  o[2] = (u64)(sx / sy);
  o[3] = (u64)(sx % sy);
  o[4] = __umul64hi(x, y);
  o[5] = (u64)__mul64hi(sx, sy);
  o[6] = (x << s) ^ (x >> (63 - s));
  o[7] = (u64)(sx >> s);
  o[8] = (u64)__popcll(x) | ((u64)__clzll((i64)(x >> s)) << 8) | ((u64)__ffsll(y << s) << 16);
  o[9] = __brevll(x);
  o[10] = x * y + (x >> 3) * (y << 5);
  unsigned int high = (unsigned int)(x >> 32) / ((unsigned int)y | 1u);
  unsigned int low = (unsigned int)x % ((unsigned int)(y >> 7) | 1u);
  o[11] = (u64)high << 32 | low;
}

// Double precision: division, square root, fused multiply-add, reciprocal square root,
// comparisons producing selects.
extern "C" __global__ void double_ops(const double* a, const double* b, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = a[i], y = b[i];
  double* o = out + 5 * i;
  o[0] = x / y;
  o[1] = sqrt(fabs(x));
  o[2] = fma(x, y, -1.0);
  o[3] = 1.0 / sqrt(fabs(y) + 1.0);
  o[4] = x > y ? floor(x) : -floor(y);
}

// float <-> int with each rounding, saturating float -> int, and bit casts.
extern "C" __global__ void float_int_conversions(const float* in, int* out, float* back, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  int* o = out + 6 * i;
  // Only convert what fits, as portable code must (out-of-range float->int is undefined in C).
  float c = fminf(fmaxf(x, -2147483520.0f), 2147483520.0f);
  o[0] = __float2int_rn(c);
  o[1] = __float2int_rd(c);
  o[2] = __float2int_ru(c);
  o[3] = __float2int_rz(c);
  o[4] = (int)(unsigned int)fminf(fmaxf(x, 0.0f), 4294967040.0f);
  o[5] = __float_as_int(x) ^ 0x80000000;
  back[2 * i] = (float)o[0] + 0.25f;
  back[2 * i + 1] = (float)(unsigned int)o[4];
}

// Bytes: unpack uchar4, saturating arithmetic per byte, pack again; also 16-bit halves.
extern "C" __global__ void byte_pack(const unsigned int* in, unsigned int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned int w = in[i];
  uchar4 v = __builtin_bit_cast(uchar4, w);
  int r = min(255, (int)v.x * 2);
  int g = max(0, (int)v.y - 100);
  int b = (v.z + v.w + 1) / 2;
  int a = 255 - v.w;
  uchar4 p = {(uchar)r, (uchar)g, (uchar)b, (uchar)a};
  out[2 * i] = __builtin_bit_cast(unsigned int, p);
  unsigned short lo = (unsigned short)w, hi = (unsigned short)(w >> 16);
  short diff = (short)(lo - hi);
  out[2 * i + 1] = ((unsigned int)(unsigned short)(lo >> 3) << 16) | (unsigned short)diff;
}

// 24-bit multiplies, 32-bit multiply-high, bit reverse and count leading zeros.
extern "C" __global__ void int32_bits(const int* a, const int* b, unsigned int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  unsigned int* o = out + 6 * i;
  o[0] = (unsigned int)__mul24(x, y);
  o[1] = __umul24((unsigned int)x, (unsigned int)y);
  o[2] = __umulhi((unsigned int)x, (unsigned int)y);
  o[3] = (unsigned int)__mulhi(x, y);
  o[4] = __brev((unsigned int)x) ^ (unsigned int)__clz(y);
  o[5] = (unsigned int)__ffs((unsigned int)x) | ((unsigned int)__popc((unsigned int)y) << 8);
}

// Directed rounding as interval-arithmetic code does it: the MODE register's rounding field set
// with __builtin_set_flt_rounds (s_setreg / s_round_mode) and read with __builtin_flt_rounds
// (s_getreg). The empty asm statements pin each operation between its mode switches (without
// strict floating point the compiler could otherwise move it across them).
static __device__ __forceinline__ float pin(float v) {
  asm volatile("" : "+v"(v));
  return v;
}

extern "C" __global__ void directed_rounding(const float* a, const float* b, float* out,
                                             int* modes, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int saved = __builtin_flt_rounds();
  float* o = out + 6 * i;
  for (int k = 0; k < 2; ++k) {
    __builtin_set_flt_rounds(k == 0 ? 3 : 2);  // toward -infinity, then toward +infinity
    float x = pin(a[i]), y = pin(b[i]);
    o[3 * k] = pin(x + y);
    o[3 * k + 1] = pin(x * y);
    o[3 * k + 2] = pin(__builtin_fmaf(x, y, 0.1f));
    modes[3 * i + k + 1] = __builtin_flt_rounds();
  }
  __builtin_set_flt_rounds(saved);
  modes[3 * i] = saved;
}
