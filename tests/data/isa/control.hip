// Control flow with divergence, loops, wave reductions with DPP, and a tiled GEMM.
#include "device.h"

KERNEL void divergent(const int* a, int* c, int n) {
  uint i = gid();
  int v = a[i];
  int r = 0;
  if (v & 1) {
    for (int k = 0; k < (v & 15); ++k) r += k * v;
  } else if (v & 2) {
    r = v * 3;
  } else {
    while (v > 1) { v = (v & 1) ? 3 * v + 1 : v >> 1; ++r; }
  }
  c[i] = r;
}
KERNEL void reduce_lds(const float* a, float* out, int n) {
  __shared__ float s[256];
  uint t = tid(), i = gid();
  s[t] = i < (uint)n ? a[i] : 0.0f;
  barrier();
  for (uint k = 128; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    barrier();
  }
  if (t == 0) out[bid()] = s[0];
}
KERNEL void wave_reduce_dpp(const float* a, float* out, const int* ai, int* oi) {
  float v = a[gid()];
  int w = ai[gid()];
  // row_shr:1,2,4,8 then row_bcast-like steps through update_dpp/mov_dpp
  v += __builtin_bit_cast(float, __builtin_amdgcn_update_dpp(0, __builtin_bit_cast(int, v), 0x111, 0xf, 0xf, false));
  v += __builtin_bit_cast(float, __builtin_amdgcn_update_dpp(0, __builtin_bit_cast(int, v), 0x112, 0xf, 0xf, false));
  v += __builtin_bit_cast(float, __builtin_amdgcn_update_dpp(0, __builtin_bit_cast(int, v), 0x114, 0xf, 0xe, false));
  v += __builtin_bit_cast(float, __builtin_amdgcn_update_dpp(0, __builtin_bit_cast(int, v), 0x118, 0xf, 0xc, true));
  v += __builtin_bit_cast(float, __builtin_amdgcn_mov_dpp(__builtin_bit_cast(int, v), 0x1b, 0xf, 0xf, true));
  v += __builtin_bit_cast(float, __builtin_amdgcn_mov_dpp(__builtin_bit_cast(int, v), 0x4e, 0xa, 0xf, false));
#if defined(__gfx942__) || defined(__gfx90a__)
  w += __builtin_amdgcn_update_dpp(0, w, 0x130, 0xf, 0xf, false);   // wave_shl:1 (gfx9 only)
  w += __builtin_amdgcn_update_dpp(0, w, 0x142, 0xa, 0xf, false);   // row_bcast:15 (gfx9 only)
  w += __builtin_amdgcn_update_dpp(0, w, 0x143, 0xc, 0xf, false);   // row_bcast:31 (gfx9 only)
#else
  w += __builtin_amdgcn_update_dpp(0, w, 0x153, 0xf, 0xf, false);   // row_share:3 (gfx10+)
  w += __builtin_amdgcn_update_dpp(0, w, 0x161, 0xf, 0xf, true);    // row_xmask:1 (gfx10+)
  w += __builtin_amdgcn_permlanex16(w, w, 0x76543210u, 0xfedcba98u, false, false);
#endif
  w += __builtin_amdgcn_update_dpp(0, w, 0x121, 0xf, 0xf, false);
  w += __builtin_amdgcn_mov_dpp(w, 0x141, 0xf, 0xf, false);
  w = __builtin_amdgcn_update_dpp(w, w, 0x101, 0xf, 0xf, false) > w ? w + 1 : w;
  if (tid() == 63) { out[bid()] = v; oi[bid()] = w; }
  float m = __builtin_amdgcn_readlane(__builtin_bit_cast(int, v), 31);
  out[bid() + 64] = m;
}
KERNEL void gemm_tiled(const float* A, const float* B, float* C, int N) {
  __shared__ float As[16][17];
  __shared__ float Bs[16][17];
  uint tx = tid() & 15, ty = tid() >> 4;
  uint row = (bid() / (N / 16)) * 16 + ty, col = (bid() % (N / 16)) * 16 + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < N; k0 += 16) {
    As[ty][tx] = A[row * N + k0 + tx];
    Bs[ty][tx] = B[(k0 + ty) * N + col];
    barrier();
#pragma unroll
    for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
    barrier();
  }
  C[row * N + col] = acc;
}
KERNEL void softmax_row(const float* x, float* y, int cols) {
  __shared__ float red[256];
  uint t = tid(), r = bid();
  float m = -__builtin_inff();
  for (uint c = t; c < (uint)cols; c += 256) m = __builtin_fmaxf(m, x[r * cols + c]);
  red[t] = m; barrier();
  for (uint k = 128; k > 0; k >>= 1) { if (t < k) red[t] = __builtin_fmaxf(red[t], red[t + k]); barrier(); }
  m = red[0]; barrier();
  float s = 0.f;
  for (uint c = t; c < (uint)cols; c += 256) s += __builtin_expf(x[r * cols + c] - m);
  red[t] = s; barrier();
  for (uint k = 128; k > 0; k >>= 1) { if (t < k) red[t] += red[t + k]; barrier(); }
  s = red[0];
  for (uint c = t; c < (uint)cols; c += 256) y[r * cols + c] = __builtin_expf(x[r * cols + c] - m) / s;
}
KERNEL void special_regs(long long* out) {
  long long t0 = __builtin_readcyclecounter();
#if defined(__gfx942__) || defined(__gfx90a__)
  long long t1 = __builtin_amdgcn_s_memrealtime();
#else
  long long t1 = __builtin_amdgcn_s_getreg((23 << 0) | (0 << 6) | (31 << 11));  // s_getreg_b32
#endif
  __builtin_amdgcn_s_sleep(2);
  out[gid()] = t0 + t1 + __builtin_amdgcn_mbcnt_lo(~0u, 0);
}
