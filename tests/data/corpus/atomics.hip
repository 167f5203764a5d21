// Atomics beyond the basic ones: wrapping inc/dec, LDS float/double/64-bit atomics,
// 8- and 16-bit atomics (expanded to 32-bit compare-and-swap loops), hardware float atomics.
#include "corpus.h"

extern "C" __global__ void atomic_wrap(unsigned int* inc, unsigned int* dec, unsigned int* inc_old,
                                       unsigned int* dec_old, u64* inc64, unsigned int limit,
                                       int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  inc_old[i] = __builtin_amdgcn_atomic_inc32(inc, limit, __ATOMIC_RELAXED, "agent");
  dec_old[i] = __builtin_amdgcn_atomic_dec32(dec, limit, __ATOMIC_RELAXED, "agent");
  __builtin_amdgcn_atomic_inc64((volatile unsigned long*)inc64, (unsigned long)limit << 20, __ATOMIC_RELAXED, "agent");
}

extern "C" __global__ void lds_atomics(const float* v, const double* d, const u64* w,
                                       float* fsum, double* dsum, float* fmin, float* fmax,
                                       u64* wmax, int n) {
  __shared__ float s_sum, s_min, s_max;
  __shared__ double s_dsum;
  __shared__ u64 s_wmax;
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  if (t == 0) {
    s_sum = 0.0f; s_min = __builtin_inff(); s_max = -__builtin_inff(); s_dsum = 0.0; s_wmax = 0;
  }
  __syncthreads();
  if (i < n) {
    __hip_atomic_fetch_add(&s_sum, v[i], __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
    __hip_atomic_fetch_min(&s_min, v[i], __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
    __hip_atomic_fetch_max(&s_max, v[i], __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
    __hip_atomic_fetch_add(&s_dsum, d[i], __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
    __hip_atomic_fetch_max(&s_wmax, w[i], __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  }
  __syncthreads();
  if (t == 0) {
    fsum[blockIdx.x] = s_sum; fmin[blockIdx.x] = s_min; fmax[blockIdx.x] = s_max;
    dsum[blockIdx.x] = s_dsum; wmax[blockIdx.x] = s_wmax;
  }
}

// 8- and 16-bit atomics in global memory and LDS: neighbours share a 32-bit word.
extern "C" __global__ void narrow_atomics(const unsigned char* keys, unsigned short* counts16,
                                          unsigned char* counts8, unsigned short* maxes, int n) {
  __shared__ unsigned short lds16[16];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  if (t < 16) lds16[t] = 0;
  __syncthreads();
  if (i < n) {
    unsigned char k = keys[i];
    __hip_atomic_fetch_add(&counts16[k & 15], (unsigned short)1, __ATOMIC_RELAXED,
                           __HIP_MEMORY_SCOPE_AGENT);
    __hip_atomic_fetch_add(&counts8[k & 7], (unsigned char)1, __ATOMIC_RELAXED,
                           __HIP_MEMORY_SCOPE_AGENT);
    __hip_atomic_fetch_max(&lds16[k & 15], (unsigned short)(k * 257 + i), __ATOMIC_RELAXED,
                           __HIP_MEMORY_SCOPE_WORKGROUP);
  }
  __syncthreads();
  if (t < 16)
    __hip_atomic_fetch_max(&maxes[t], lds16[t], __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}

// The hardware float atomics real code reaches through the AMDGPU builtins.
extern "C" __global__ void hw_float_atomics(const float* v, const double* d, const __half2* h,
                                            float* fsum, double* dsum, double* dmin,
                                            __half2* hsum, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __builtin_amdgcn_global_atomic_fadd_f32((__attribute__((address_space(1))) float*)fsum, v[i]);
  __builtin_amdgcn_global_atomic_fadd_v2f16((__attribute__((address_space(1))) __half2*)hsum, h[i]);
#if defined(__gfx942__)
  __builtin_amdgcn_global_atomic_fadd_f64((__attribute__((address_space(1))) double*)dsum, d[i]);
  __builtin_amdgcn_global_atomic_fmin_f64((__attribute__((address_space(1))) double*)dmin, d[i]);
#else
  __hip_atomic_fetch_add(dsum, d[i], __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  __hip_atomic_fetch_min(dmin, d[i], __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
#endif
}
