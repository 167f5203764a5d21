// TEMPORARY stand-in for kernels/include/hsapy_hip.h (owned by the toolchain, issue #6), used
// only by tests/unit/test_operators_hip.py until that header lands. It provides exactly the
// subset of HIP device names the operator sources in kernels/ use, with clang-19 builtins.
#pragma once
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __forceinline__ inline __attribute__((always_inline))

#define HSAPY_SHIM_DIM3(NAME, X, Y, Z)                                                        \
  struct NAME {                                                                               \
    __declspec(property(get = __get_x)) unsigned int x;                                       \
    __declspec(property(get = __get_y)) unsigned int y;                                       \
    __declspec(property(get = __get_z)) unsigned int z;                                       \
    static __device__ __forceinline__ unsigned int __get_x() { return X; }                    \
    static __device__ __forceinline__ unsigned int __get_y() { return Y; }                    \
    static __device__ __forceinline__ unsigned int __get_z() { return Z; }                    \
  };

HSAPY_SHIM_DIM3(__hsapy_threadIdx, __builtin_amdgcn_workitem_id_x(),
                __builtin_amdgcn_workitem_id_y(), __builtin_amdgcn_workitem_id_z())
HSAPY_SHIM_DIM3(__hsapy_blockIdx, __builtin_amdgcn_workgroup_id_x(),
                __builtin_amdgcn_workgroup_id_y(), __builtin_amdgcn_workgroup_id_z())
HSAPY_SHIM_DIM3(__hsapy_blockDim, __builtin_amdgcn_workgroup_size_x(),
                __builtin_amdgcn_workgroup_size_y(), __builtin_amdgcn_workgroup_size_z())
HSAPY_SHIM_DIM3(__hsapy_gridDim,
  (__builtin_amdgcn_grid_size_x() + __builtin_amdgcn_workgroup_size_x() - 1) / __builtin_amdgcn_workgroup_size_x(),
  (__builtin_amdgcn_grid_size_y() + __builtin_amdgcn_workgroup_size_y() - 1) / __builtin_amdgcn_workgroup_size_y(),
  (__builtin_amdgcn_grid_size_z() + __builtin_amdgcn_workgroup_size_z() - 1) / __builtin_amdgcn_workgroup_size_z())

extern const __device__ __attribute__((weak)) __hsapy_threadIdx threadIdx;
extern const __device__ __attribute__((weak)) __hsapy_blockIdx blockIdx;
extern const __device__ __attribute__((weak)) __hsapy_blockDim blockDim;
extern const __device__ __attribute__((weak)) __hsapy_gridDim gridDim;

#define warpSize (__builtin_amdgcn_wavefrontsize())

typedef float float4 __attribute__((ext_vector_type(4)));

static __device__ __forceinline__ void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

static __device__ __forceinline__ float atomicAdd(float* address, float value) {
  return __hip_atomic_fetch_add(address, value, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}

static __device__ __forceinline__ unsigned int __lane_id() {
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}

static __device__ __forceinline__ float __shfl_down(float var, unsigned int delta,
                                                    int width = warpSize) {
  int self = (int)__lane_id();
  int index = self + (int)delta;
  index = ((self & (width - 1)) + (int)delta) >= width ? self : index;
  return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute(index << 2,
                                                                __builtin_bit_cast(int, var)));
}

static __device__ __forceinline__ float __shfl_xor(float var, int mask, int width = warpSize) {
  int self = (int)__lane_id();
  int index = self ^ mask;
  index = index >= ((self + width) & ~(width - 1)) ? self : index;
  return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute(index << 2,
                                                                __builtin_bit_cast(int, var)));
}

static __device__ __forceinline__ float expf(float x) { return __builtin_expf(x); }
static __device__ __forceinline__ float sqrtf(float x) { return __builtin_sqrtf(x); }
static __device__ __forceinline__ float rsqrtf(float x) { return __builtin_amdgcn_rsqf(x); }
static __device__ __forceinline__ float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
static __device__ __forceinline__ float fminf(float a, float b) { return __builtin_fminf(a, b); }
