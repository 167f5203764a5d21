// Target builtins that plain C does not reach: ballots, permutes, dot products, bit-field ops,
// med3/frexp/ldexp/class, packed conversions, SAD, 64-bit shifts of lane masks, wave intrinsics.
#include "device.h"
typedef short short2 __attribute__((ext_vector_type(2)));
typedef _Float16 half2 __attribute__((ext_vector_type(2)));

KERNEL void bit_ops(const uint* a, uint* c, int n) {
  uint i = gid();
  if (i >= (uint)n) return;
  uint x = a[i], y = a[i + 1], z = a[i + 2];
  uint r = __builtin_amdgcn_perm(x, y, 0x05040100u);
  r += __builtin_amdgcn_ubfe(x, 3, 7) + (uint)__builtin_amdgcn_sbfe((int)y, 5, 9);
  r += __builtin_amdgcn_alignbyte(x, y, z & 3) + __builtin_amdgcn_alignbit(x, y, z & 31);
  r += __builtin_amdgcn_sad_u8(x, y, z) + __builtin_amdgcn_msad_u8(x, y, z);
  r += __builtin_amdgcn_sad_hi_u8(x, y, z) + __builtin_amdgcn_lerp(x, y, z);
  r += __builtin_amdgcn_mbcnt_hi(x, __builtin_amdgcn_mbcnt_lo(y, 0));
  c[i] = r;
}
KERNEL void float_ops(const float* a, float* c, int* k, const double* d, double* e, int n) {
  uint i = gid();
  if (i >= (uint)n) return;
  float x = a[i], y = a[i + 1], z = a[i + 2];
  float r = __builtin_amdgcn_fmed3f(x, y, z) + __builtin_amdgcn_frexp_mantf(x);
  r += __builtin_amdgcn_ldexpf(y, k[i] & 15) + __builtin_amdgcn_rcpf(z) + __builtin_amdgcn_rsqf(x);
  r += __builtin_amdgcn_sinf(x) + __builtin_amdgcn_cosf(y) + __builtin_amdgcn_fractf(z);
  r += __builtin_amdgcn_class(x, 0x3ff) ? 1.0f : 2.0f;
  typedef __fp16 fp16x2 __attribute__((ext_vector_type(2)));
  fp16x2 h = __builtin_amdgcn_cvt_pkrtz(x, y);
  r += (float)h.x * (float)h.y;
  k[i] = __builtin_amdgcn_frexp_expf(z);
  c[i] = r;
  double w = d[i];
  e[i] = __builtin_amdgcn_rsq(w) + __builtin_amdgcn_frexp_mant(w) + __builtin_amdgcn_rcp(w) +
         __builtin_amdgcn_trig_preop(w, 1) + __builtin_amdgcn_ldexp(w, 3);
}
KERNEL void wave_ops(const int* a, long long* m, int* c) {
  int v = a[gid()];
#if defined(__gfx942__) || defined(__gfx90a__) || __AMDGCN_WAVEFRONT_SIZE == 64
  unsigned long long mask = __builtin_amdgcn_ballot_w64(v > 3);
  m[gid()] = mask | __builtin_amdgcn_read_exec();
#else
  unsigned mask = __builtin_amdgcn_ballot_w32(v > 3);
  m[gid()] = mask | __builtin_amdgcn_read_exec_lo();
#endif
  int s = __builtin_amdgcn_readfirstlane(v);
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_s_setprio(1);
  c[gid()] = s + __builtin_popcountll(mask) + __builtin_amdgcn_ds_permute(gid() << 2, v);
}
KERNEL void dot_ops(const uint* a, int* c, float* f, int n) {
  uint i = gid();
  if (i >= (uint)n) return;
#if defined(__gfx942__) || defined(__gfx90a__)
  short2 p = __builtin_bit_cast(short2, a[i]), q = __builtin_bit_cast(short2, a[i + 1]);
  c[i] = __builtin_amdgcn_sdot2(p, q, (int)a[i + 2], false) + __builtin_amdgcn_sdot4((int)a[i], (int)a[i + 1], 0, false);
#else
  c[i] = __builtin_amdgcn_sudot4(true, (int)a[i], false, (int)a[i + 1], 0, false);
#endif
  half2 h = __builtin_bit_cast(half2, a[i]), g = __builtin_bit_cast(half2, a[i + 3]);
  f[i] = __builtin_amdgcn_fdot2(h, g, 1.0f, false);
}
