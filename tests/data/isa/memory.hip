// Memory: global/flat/scratch/LDS loads and stores of every width, LDS read2/write2,
// bpermute/swizzle, atomics (global and LDS).
#include "device.h"
typedef int int2 __attribute__((ext_vector_type(2)));
typedef int int3 __attribute__((ext_vector_type(3)));
typedef int int4 __attribute__((ext_vector_type(4)));

KERNEL void widths(const char* a, const short* b, const int* c, const int2* d, const int3* e,
                   const int4* f, char* oa, short* ob, int* oc, int2* od, int3* oe, int4* of, int n) {
  uint i = gid();
  if (i >= (uint)n) return;
  oa[i] = a[i] + (unsigned char)a[i + 1];
  ob[i] = b[i] + (unsigned short)b[i + 2];
  oc[i] = c[i + 5];
  od[i] = d[i];
  oe[i] = e[i];
  of[i] = f[i];
}
KERNEL void flat_access(int* p, int** pp, int n) {
  uint i = gid();
  int* q = pp[i & 1];         // generic pointer: flat instructions
  q[i] = p[i] + q[i + 1];
  ((long long*)q)[i + 8] = ((long long*)p)[i];
  ((int4*)q)[i + 16] = ((int4*)p)[i + 3];
}
KERNEL void scratch_access(const int* a, int* c, int n, int k) {
  volatile int buf[64];
  volatile long long lb[8];
  uint i = gid();
  for (int j = 0; j < 64; ++j) buf[j] = a[i] + j;
  for (int j = 0; j < 8; ++j) lb[j] = (long long)a[i] * j;
  c[i] = buf[k & 63] + buf[(k + 3) & 63] + (int)lb[k & 7];
}
KERNEL void lds_ops(const int* a, int* c, const double* da, double* dc) {
  __shared__ int s[512];
  __shared__ double sd[256];
  __shared__ char sb[1024];
  __shared__ short ss[512];
  uint t = tid();
  s[t] = a[gid()];
  s[t + 256] = a[gid()] * 2;
  sd[t] = da[gid()];
  sb[t] = (char)t; ss[t] = (short)t;
  barrier();
  int v = s[t ^ 1] + s[(t + 256) & 511] + s[t + 1 & 511] + sb[t ^ 3] + ss[t ^ 5] + (unsigned char)sb[t+1 & 1023];
  double w = sd[t ^ 2] + sd[(t + 1) & 255];
  barrier();
  ((int2*)s)[t] = (int2){v, v + 1};
  ((int4*)s)[t & 127] = (int4){v, 1, 2, 3};
  barrier();
  c[gid()] = v + s[t ^ 7] + ((int4*)s)[t & 127].y;
  dc[gid()] = w;
}
KERNEL void cross_lane(const int* a, int* c) {
  int v = a[gid()];
  int r = __builtin_amdgcn_ds_bpermute((tid() ^ 1) << 2, v);
  r += __builtin_amdgcn_ds_swizzle(v, 0x041f);
  r += __builtin_amdgcn_ds_swizzle(v, 0x8055);
  r += __builtin_amdgcn_readfirstlane(v) + __builtin_amdgcn_readlane(v, 5);
  c[gid()] = r;
}
KERNEL void atomics(int* g, uint* gu, float* gf, long long* gl, int* out, int n) {
  __shared__ int s[64];
  __shared__ float sf[64];
  uint t = tid();
  if (t < 64) { s[t] = 0; sf[t] = 0.f; }
  barrier();
  int old = __atomic_fetch_add(&g[t & 15], 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&g[16], 2, __ATOMIC_RELAXED);
  old += __atomic_fetch_max(&g[17], (int)t, __ATOMIC_RELAXED);
  old += __atomic_fetch_min(&g[18], (int)t, __ATOMIC_RELAXED);
  old += __atomic_fetch_and(&g[19], (int)t, __ATOMIC_RELAXED);
  old += __atomic_fetch_or(&g[20], (int)t, __ATOMIC_RELAXED);
  old += __atomic_fetch_xor(&g[21], (int)t, __ATOMIC_RELAXED);
  old += __atomic_exchange_n(&g[22], (int)t, __ATOMIC_RELAXED);
  old += __atomic_fetch_max(&gu[0], t, __ATOMIC_RELAXED) + __atomic_fetch_min(&gu[1], t, __ATOMIC_RELAXED);
  int expected = 0;
  __atomic_compare_exchange_n(&g[23], &expected, (int)t, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  __atomic_fetch_add(&gl[0], (long long)t, __ATOMIC_RELAXED);
  old += (int)__atomic_fetch_add(&gl[1], 1ll, __ATOMIC_SEQ_CST);
  __hip_atomic_fetch_add(&gf[0], 1.0f, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  int ls = __atomic_fetch_add(&s[t & 63], 1, __ATOMIC_RELAXED);
  ls += __atomic_fetch_max(&s[(t + 1) & 63], (int)t, __ATOMIC_RELAXED);
  ls += __atomic_exchange_n(&s[(t + 2) & 63], (int)t, __ATOMIC_RELAXED);
  int e2 = 5;
  __atomic_compare_exchange_n(&s[(t + 3) & 63], &e2, (int)t, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  __hip_atomic_fetch_add(&sf[t & 63], 2.0f, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  barrier();
  out[gid()] = old + ls + e2 + s[t & 63];
}
