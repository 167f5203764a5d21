// corpus-flags: -munsafe-fp-atomics
// Float atomics as HIP code built with -munsafe-fp-atomics gets them: the hardware's float
// add/min/max atomics (global, flat and LDS) instead of compare-and-swap loops.
#include "corpus.h"

__device__ __noinline__ void add_generic(float* p, float v) { atomicAdd(p, v); }

extern "C" __global__ void unsafe_fp_atomics(const float* x, const double* d, float* fsum,
                                             double* dsum, double* dmax, double* dmin,
                                             float* bins, int nbins, int n) {
  __shared__ float local[16];
  __shared__ double local_d;
  int t = threadIdx.x;
  if (t < 16) local[t] = 0.0f;
  if (t == 0) local_d = 0.0;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + t;
  if (i < n) {
    atomicAdd(fsum, x[i]);
    atomicAdd(dsum, d[i]);
    __hip_atomic_fetch_max(dmax, d[i], __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
    __hip_atomic_fetch_min(dmin, d[i], __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
    atomicAdd(&local[i & 15], x[i]);
    __hip_atomic_fetch_add(&local_d, d[i], __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
    add_generic(&bins[(i * 7) % nbins], x[i]);
  }
  __syncthreads();
  if (t < 16) add_generic(&bins[t], local[t]);   // generic pointer to global
  if (t == 0) atomicAdd(dsum + 1, local_d);
}
