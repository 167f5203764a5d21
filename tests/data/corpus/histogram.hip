// Histograms and atomics of every width: global and LDS atomics, CAS loops, min/max,
// bitwise, 64-bit and floating-point atomics.
#include "corpus.h"

// One global atomic per element.
extern "C" __global__ void histogram_global(const unsigned int* keys, unsigned int* bins,
                                            int nbins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[keys[i] % nbins], 1u);
}

// Privatised in shared memory, merged with one global atomic per bin per block.
extern "C" __global__ void histogram_shared(const unsigned char* data, unsigned int* bins, int n) {
  __shared__ unsigned int local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (local[b]) atomicAdd(&bins[b], local[b]);
}

// Signed/unsigned min and max, and a counter with atomicInc wrap-around.
extern "C" __global__ void atomic_min_max(const int* v, int* smin, int* smax, unsigned int* umin,
                                          unsigned int* umax, unsigned int* ring, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicMin(smin, v[i]);
  atomicMax(smax, v[i]);
  atomicMin(umin, (unsigned int)v[i]);
  atomicMax(umax, (unsigned int)v[i]);
  atomicInc(ring, 9u);
}

// A float maximum through a compare-and-swap loop on the bit pattern.
static __device__ float atomic_max_float(float* address, float value) {
  unsigned int* bits = (unsigned int*)address;
  unsigned int old = *bits, assumed;
  do {
    assumed = old;
    if (__int_as_float((int)assumed) >= value) break;
    old = atomicCAS(bits, assumed, (unsigned int)__float_as_int(value));
  } while (old != assumed);
  return __int_as_float((int)old);
}

extern "C" __global__ void cas_float_max(const float* v, float* best, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomic_max_float(best, v[i]);
}

// 64-bit atomics: add, min, max, bitwise, and a CAS loop building a 64-bit checksum.
extern "C" __global__ void atomics_u64(const u64* v, u64* sum, u64* lo, u64* hi, u64* ors,
                                       u64* xors, u64* mixed, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  u64 x = v[i];
  atomicAdd(sum, x);
  atomicMin(lo, x);
  atomicMax(hi, x);
  atomicOr(ors, x & 0x8421084210842108ull);
  atomicXor(xors, x);
  // mixed = mixed + rotl(x, 13): commutative, so any order of CAS winners gives one result.
  u64 add = (x << 13) | (x >> 51);
  u64 old = *mixed, seen;
  do {
    seen = old;
    old = atomicCAS(mixed, seen, seen + add);
  } while (old != seen);
}

// Bitwise 32-bit atomics and exchange (the exchange keeps some element's value).
extern "C" __global__ void atomic_bitwise(const unsigned int* v, unsigned int* ands,
                                          unsigned int* ors, unsigned int* xors,
                                          unsigned int* last, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAnd(ands, v[i] | 0x0f0f0f0fu);
  atomicOr(ors, v[i] & 0x11111111u);
  atomicXor(xors, v[i]);
  atomicExch(last, v[i]);
}

// Floating-point atomics: float into shared memory then global, and double into global.
// Inputs are small integers so every order of addition gives the exact same sum.
extern "C" __global__ void atomic_add_floats(const float* v, float* fsum, double* dsum, int n) {
  __shared__ float block_total;
  if (threadIdx.x == 0) block_total = 0.0f;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicAdd(&block_total, v[i]);
    atomicAdd(dsum, (double)v[i] * 0.25);
  }
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(fsum, block_total);
}
