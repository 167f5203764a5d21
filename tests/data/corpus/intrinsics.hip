// Cross-lane and bit intrinsics common in real code: shuffles within segments of a width,
// ds_swizzle, readlane, mbcnt, funnel shifts, v_perm, bit-field extracts, byte SAD and lerp,
// integer and f16 dot products, fmed3, ldexp, frexp, fract, class and the cube-map helpers.
#include "corpus.h"

// Shuffles within segments of `width` lanes: index, up, down, xor.
extern "C" __global__ void shuffle_widths(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : -1;
  int lane = (int)__lane_id();
  int r0 = __shfl(v, (lane * 3 + 1), 8);
  int r1 = __shfl_up(v, 3, 16);
  int r2 = __shfl_down(v, 5, 8);
  int r3 = __shfl_xor(v, 3, 4);
  int r4 = __shfl(v, 2, 32);
  if (i < n) {
    out[5 * i + 0] = r0;
    out[5 * i + 1] = r1;
    out[5 * i + 2] = r2;
    out[5 * i + 3] = r3;
    out[5 * i + 4] = r4;
  }
}

// ds_swizzle: bitmask mode (and, or, xor masks over 32-lane groups) and quad-permute mode;
// readlane / writelane with a lane chosen at run time; mbcnt over a data-dependent mask.
extern "C" __global__ void swizzle_readlane(const int* in, int* out, int src_lane, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];   // the grid covers n exactly (whole waves)
  // offset = and | or << 5 | xor << 10: and 0x1f, or 0, xor 0x1f: reverse in 32-lane groups
  int rev = __builtin_amdgcn_ds_swizzle(v, 0x1f | (0 << 5) | (0x1f << 10));
  // and 0x18, or 0x3: lane (i & 0x18) | 3 -- broadcast lane 3 of each group of 8
  int bcast = __builtin_amdgcn_ds_swizzle(v, 0x18 | (0x3 << 5));
  // quad mode (bit 15): lanes 0..3 of each quad read 2, 0, 3, 1
  int quad = __builtin_amdgcn_ds_swizzle(v, 0x8000 | 2 | (0 << 2) | (3 << 4) | (1 << 6));
  int lane_src = __builtin_amdgcn_readfirstlane(src_lane);
  int picked = __builtin_amdgcn_readlane(v, lane_src);
  int written = __builtin_amdgcn_readlane(v * 3, warpSize - 1 - lane_src);
  unsigned int mask = (unsigned int)in[(i / warpSize) * warpSize];
  unsigned int below = __builtin_amdgcn_mbcnt_lo(mask, 0u);
  below = __builtin_amdgcn_mbcnt_hi(mask >> 3, below);
  out[6 * i + 0] = rev;
  out[6 * i + 1] = bcast;
  out[6 * i + 2] = quad;
  out[6 * i + 3] = picked;
  out[6 * i + 4] = written;
  out[6 * i + 5] = (int)below;
}

// Bit operations written the portable way (the backend picks v_alignbit, v_perm, v_bfe...)
// and through the AMDGPU builtins.
extern "C" __global__ void bit_intrinsics(const unsigned int* a, const unsigned int* b,
                                          const unsigned int* c, unsigned int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned int x = a[i], y = b[i], s = c[i];
  unsigned int* o = out + 12 * i;
  unsigned int sh = s & 31;
  o[0] = sh ? (x << sh) | (y >> (32 - sh)) : x;              // funnel shift left
  o[1] = (unsigned int)((((u64)x << 32) | y) >> sh);         // funnel shift right
  o[2] = __builtin_amdgcn_alignbyte(x, y, s);
  o[3] = __builtin_amdgcn_perm(x, y, s);                     // __byte_perm's instruction
  o[4] = __builtin_amdgcn_ubfe(x, s & 31, (s >> 8) & 31);
  o[5] = (unsigned int)__builtin_amdgcn_sbfe((int)x, s & 31, (s >> 8) & 31);
  o[6] = (x >> (s & 7)) & ((1u << ((s >> 8) & 15)) - 1u);   // a field extract in C
  o[7] = __brev(x) ^ (unsigned int)__clz((int)y);
  o[8] = (unsigned int)(__ffs(x & y) + 100 * __popc(x ^ y));
  o[9] = __builtin_amdgcn_udot4(x, y, s, false);
  o[10] = __builtin_amdgcn_sad_u8(x, y, s & 0xffff);
  o[11] = __builtin_amdgcn_lerp(x, y, s);
}

// Signed/unsigned integer dot products and the f16 dot product (v_dot*), where present.
typedef short short2v __attribute__((ext_vector_type(2)));
typedef unsigned short ushort2v __attribute__((ext_vector_type(2)));
extern "C" __global__ void dot_products(const unsigned int* a, const unsigned int* b,
                                        const int* acc, int* out, float* fout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned int x = a[i], y = b[i];
  int c = acc[i];
  out[4 * i + 0] = (int)__builtin_amdgcn_udot8(x, y, (unsigned int)c, false);
  __half2 hx = __builtin_bit_cast(__half2, x), hy = __builtin_bit_cast(__half2, y);
  fout[i] = __builtin_amdgcn_fdot2(hx, hy, (float)c * 0.25f, false);
#if defined(__gfx942__)
  out[4 * i + 1] = __builtin_amdgcn_sdot4((int)x, (int)y, c, false);
  out[4 * i + 2] = __builtin_amdgcn_sdot8((int)x, (int)y, c, false);
  out[4 * i + 3] = __builtin_amdgcn_sdot2(__builtin_bit_cast(short2v, x),
                                          __builtin_bit_cast(short2v, y), c, false);
#else
  out[4 * i + 1] = __builtin_amdgcn_sudot4(true, (int)x, true, (int)y, c, false);
  out[4 * i + 2] = __builtin_amdgcn_sudot8(true, (int)x, true, (int)y, c, false);
  out[4 * i + 3] = __builtin_amdgcn_sudot4(true, (int)x, false, (int)y, c, false);
#endif
}

// Float bit helpers: fmed3, ldexp, frexp, fract, class, and cube-map coordinates.
extern "C" __global__ void float_bits(const float* x, const float* y, const float* z,
                                      const int* e, float* out, int* iout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a = x[i], b = y[i], c = z[i];
  float* o = out + 8 * i;
  o[0] = __builtin_amdgcn_fmed3f(a, b, c);
  o[1] = __builtin_amdgcn_ldexpf(a, e[i]);
  o[2] = __builtin_amdgcn_frexp_mantf(a);
  o[3] = __builtin_amdgcn_fractf(a);
  o[4] = __builtin_amdgcn_cubeid(a, b, c);
  o[5] = __builtin_amdgcn_cubesc(a, b, c);
  o[6] = __builtin_amdgcn_cubetc(a, b, c);
  o[7] = __builtin_amdgcn_cubema(a, b, c);
  iout[2 * i + 0] = __builtin_amdgcn_frexp_expf(a);
  iout[2 * i + 1] = __builtin_amdgcn_classf(a, 0x3ff & (e[i] * 37));
}
