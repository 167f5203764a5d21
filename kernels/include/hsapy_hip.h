// hsapy_hip.h: the HIP device names hsapy's kernels use, for clang in HIP device-only mode
// without ROCm (clang -x hip --cuda-device-only -nogpulib -nogpuinc -include hsapy_hip.h).
//
// Everything maps onto clang's AMDGPU builtins, which the backend lowers to instructions: no
// device library (ocml/ockl) is linked. Under hipcc (ROCm's headers present) this header
// only includes <hip/hip_runtime.h>. hsapy.toolchain.build_hip is the usual caller.
//
// Facts used (LLVM AMDGPUUsage; clang's BuiltinsAMDGPU.def):
// - __builtin_amdgcn_workgroup_size_{x,y,z} read the workgroup size from the hidden arguments
//   (code object v5/v6) or the dispatch packet (v4); grid sizes come from the dispatch packet.
// - ds_bpermute addresses lanes in bytes (lane * 4) and wraps modulo the wave size.
#pragma once

#if defined(__CLANG_HIP_RUNTIME_WRAPPER_H__) || defined(HIP_INCLUDE_HIP_HIP_RUNTIME_H)
#include <hip/hip_runtime.h>
#else

#if !defined(__HIP__) || !defined(__AMDGCN__)
#error "hsapy_hip.h is for HIP device compilation (clang -x hip --cuda-device-only)"
#endif

// ---- qualifiers

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(max_threads, ...) \
  __attribute__((amdgpu_flat_work_group_size(1, max_threads)))
#define __restrict__ __restrict

typedef __SIZE_TYPE__ size_t;
typedef unsigned int uint;

// ---- work-item geometry: threadIdx, blockIdx, blockDim, gridDim

#define HSAPY_COORDINATE(TYPE, GET_X, GET_Y, GET_Z)                                       \
  struct TYPE {                                                                           \
    __declspec(property(get = get_x)) unsigned int x;                                     \
    __declspec(property(get = get_y)) unsigned int y;                                     \
    __declspec(property(get = get_z)) unsigned int z;                                     \
    static __device__ __forceinline__ unsigned int get_x() { return GET_X; }              \
    static __device__ __forceinline__ unsigned int get_y() { return GET_Y; }              \
    static __device__ __forceinline__ unsigned int get_z() { return GET_Z; }              \
  }

// Number of workgroups along an axis: ceil(grid size / workgroup size) (HIP's gridDim counts
// a partial last workgroup).
#define HSAPY_GROUPS(AXIS)                                                                \
  ((__builtin_amdgcn_grid_size_##AXIS() + __builtin_amdgcn_workgroup_size_##AXIS() - 1u) / \
   __builtin_amdgcn_workgroup_size_##AXIS())

HSAPY_COORDINATE(__hsapy_thread_idx, __builtin_amdgcn_workitem_id_x(),
                 __builtin_amdgcn_workitem_id_y(), __builtin_amdgcn_workitem_id_z());
HSAPY_COORDINATE(__hsapy_block_idx, __builtin_amdgcn_workgroup_id_x(),
                 __builtin_amdgcn_workgroup_id_y(), __builtin_amdgcn_workgroup_id_z());
HSAPY_COORDINATE(__hsapy_block_dim, __builtin_amdgcn_workgroup_size_x(),
                 __builtin_amdgcn_workgroup_size_y(), __builtin_amdgcn_workgroup_size_z());
HSAPY_COORDINATE(__hsapy_grid_dim, HSAPY_GROUPS(x), HSAPY_GROUPS(y), HSAPY_GROUPS(z));

// The objects only carry properties; no storage is ever read.
extern const __device__ __attribute__((weak)) __hsapy_thread_idx threadIdx;
extern const __device__ __attribute__((weak)) __hsapy_block_idx blockIdx;
extern const __device__ __attribute__((weak)) __hsapy_block_dim blockDim;
extern const __device__ __attribute__((weak)) __hsapy_grid_dim gridDim;

// 32 on gfx10+ in wave32, 64 on gfx9 or with -mwavefrontsize64; folded to a constant.
#define warpSize ((int)__builtin_amdgcn_wavefrontsize())

// ---- synchronisation and fences

static __device__ __forceinline__ void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
static __device__ __forceinline__ void __threadfence_block() {
  __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "workgroup");
}
static __device__ __forceinline__ void __threadfence() {
  __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent");
}
static __device__ __forceinline__ void __threadfence_system() {
  __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "");
}

// ---- atomics (device scope, relaxed, as HIP's atomicX)

#define HSAPY_ATOMIC(NAME, BUILTIN, TYPE)                                                 \
  static __device__ __forceinline__ TYPE NAME(TYPE* address, TYPE value) {               \
    return BUILTIN(address, value, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);          \
  }
HSAPY_ATOMIC(atomicAdd, __hip_atomic_fetch_add, int)
HSAPY_ATOMIC(atomicAdd, __hip_atomic_fetch_add, unsigned int)
HSAPY_ATOMIC(atomicAdd, __hip_atomic_fetch_add, unsigned long long)
HSAPY_ATOMIC(atomicAdd, __hip_atomic_fetch_add, float)
HSAPY_ATOMIC(atomicSub, __hip_atomic_fetch_sub, int)
HSAPY_ATOMIC(atomicSub, __hip_atomic_fetch_sub, unsigned int)
HSAPY_ATOMIC(atomicMax, __hip_atomic_fetch_max, int)
HSAPY_ATOMIC(atomicMax, __hip_atomic_fetch_max, unsigned int)
HSAPY_ATOMIC(atomicMin, __hip_atomic_fetch_min, int)
HSAPY_ATOMIC(atomicMin, __hip_atomic_fetch_min, unsigned int)
HSAPY_ATOMIC(atomicExch, __hip_atomic_exchange, int)
HSAPY_ATOMIC(atomicExch, __hip_atomic_exchange, unsigned int)
HSAPY_ATOMIC(atomicExch, __hip_atomic_exchange, float)
HSAPY_ATOMIC(atomicAnd, __hip_atomic_fetch_and, unsigned int)
HSAPY_ATOMIC(atomicOr, __hip_atomic_fetch_or, unsigned int)
HSAPY_ATOMIC(atomicXor, __hip_atomic_fetch_xor, unsigned int)
#undef HSAPY_ATOMIC

static __device__ __forceinline__ unsigned int atomicCAS(unsigned int* address,
                                                         unsigned int expected,
                                                         unsigned int desired) {
  __hip_atomic_compare_exchange_strong(address, &expected, desired, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  return expected;
}
static __device__ __forceinline__ int atomicCAS(int* address, int expected, int desired) {
  __hip_atomic_compare_exchange_strong(address, &expected, desired, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  return expected;
}

// ---- lanes and cross-lane exchange

static __device__ __forceinline__ unsigned int __lane_id() {
  // Count the lanes below this one: mbcnt over the low, then the high 32 lanes (the high half
  // adds nothing in wave32).
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}

// Read `value` from lane `source` (ds_bpermute: byte address, wraps at the wave size).
static __device__ __forceinline__ int __hsapy_bpermute(int source, int value) {
  return __builtin_amdgcn_ds_bpermute(source << 2, value);
}

// Lane indices follow HIP: `width` (a power of two <= warpSize) splits the wave into segments.
static __device__ __forceinline__ int __hsapy_shfl_index(int lane, int width) {
  int self = (int)__lane_id();
  return (self & ~(width - 1)) + (lane & (width - 1));
}
static __device__ __forceinline__ int __hsapy_shfl_down_index(unsigned int delta, int width) {
  int self = (int)__lane_id();
  int target = self + (int)delta;
  // A lane whose source falls outside its segment keeps its own value.
  return ((self & (width - 1)) + (int)delta) < width ? target : self;
}
static __device__ __forceinline__ int __hsapy_shfl_up_index(unsigned int delta, int width) {
  int self = (int)__lane_id();
  return (int)(self & (width - 1)) >= (int)delta ? self - (int)delta : self;
}
static __device__ __forceinline__ int __hsapy_shfl_xor_index(int mask, int width) {
  int self = (int)__lane_id();
  int target = self ^ mask;
  // Stay inside the segment of `width` lanes (HIP returns the own value otherwise).
  return (target & ~(width - 1)) == (self & ~(width - 1)) ? target : self;
}

#define HSAPY_SHUFFLES(TYPE, TO_INT, FROM_INT)                                                \
  static __device__ __forceinline__ TYPE __shfl(TYPE var, int lane, int width = warpSize) {  \
    return FROM_INT(__hsapy_bpermute(__hsapy_shfl_index(lane, width), TO_INT(var)));         \
  }                                                                                          \
  static __device__ __forceinline__ TYPE __shfl_down(TYPE var, unsigned int delta,           \
                                                     int width = warpSize) {                 \
    return FROM_INT(__hsapy_bpermute(__hsapy_shfl_down_index(delta, width), TO_INT(var)));   \
  }                                                                                          \
  static __device__ __forceinline__ TYPE __shfl_up(TYPE var, unsigned int delta,             \
                                                   int width = warpSize) {                   \
    return FROM_INT(__hsapy_bpermute(__hsapy_shfl_up_index(delta, width), TO_INT(var)));     \
  }                                                                                          \
  static __device__ __forceinline__ TYPE __shfl_xor(TYPE var, int mask, int width = warpSize) { \
    return FROM_INT(__hsapy_bpermute(__hsapy_shfl_xor_index(mask, width), TO_INT(var)));     \
  }

#define HSAPY_AS_INT(x) __builtin_bit_cast(int, x)
#define HSAPY_AS_FLOAT(x) __builtin_bit_cast(float, x)
#define HSAPY_AS_UINT(x) __builtin_bit_cast(unsigned int, x)
#define HSAPY_SAME(x) (x)
HSAPY_SHUFFLES(int, HSAPY_SAME, HSAPY_SAME)
HSAPY_SHUFFLES(unsigned int, HSAPY_AS_INT, HSAPY_AS_UINT)
HSAPY_SHUFFLES(float, HSAPY_AS_INT, HSAPY_AS_FLOAT)
#undef HSAPY_SHUFFLES

// ---- math (lowered by the backend to hardware instructions and fix-up sequences)

static __device__ __forceinline__ float expf(float x) { return __builtin_expf(x); }
static __device__ __forceinline__ float exp2f(float x) { return __builtin_exp2f(x); }
static __device__ __forceinline__ float __expf(float x) { return __builtin_expf(x); }
static __device__ __forceinline__ float logf(float x) { return __builtin_logf(x); }
static __device__ __forceinline__ float log2f(float x) { return __builtin_log2f(x); }
static __device__ __forceinline__ float __logf(float x) { return __builtin_logf(x); }
static __device__ __forceinline__ float sqrtf(float x) { return __builtin_sqrtf(x); }
static __device__ __forceinline__ float rsqrtf(float x) { return __builtin_amdgcn_rsqf(x); }
static __device__ __forceinline__ float fabsf(float x) { return __builtin_fabsf(x); }
static __device__ __forceinline__ float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
static __device__ __forceinline__ float fminf(float a, float b) { return __builtin_fminf(a, b); }
static __device__ __forceinline__ float fmaf(float a, float b, float c) {
  return __builtin_fmaf(a, b, c);
}
static __device__ __forceinline__ float floorf(float x) { return __builtin_floorf(x); }
static __device__ __forceinline__ float ceilf(float x) { return __builtin_ceilf(x); }
static __device__ __forceinline__ float truncf(float x) { return __builtin_truncf(x); }
static __device__ __forceinline__ float __fdividef(float a, float b) {
  return a * __builtin_amdgcn_rcpf(b);
}

#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
#define FLT_MAX __FLT_MAX__

static __device__ __forceinline__ int min(int a, int b) { return a < b ? a : b; }
static __device__ __forceinline__ int max(int a, int b) { return a > b ? a : b; }
static __device__ __forceinline__ unsigned int min(unsigned int a, unsigned int b) {
  return a < b ? a : b;
}
static __device__ __forceinline__ unsigned int max(unsigned int a, unsigned int b) {
  return a > b ? a : b;
}
static __device__ __forceinline__ float min(float a, float b) { return __builtin_fminf(a, b); }
static __device__ __forceinline__ float max(float a, float b) { return __builtin_fmaxf(a, b); }

// ---- vector types: clang ext vectors have .x/.y/.z/.w and element-wise arithmetic

typedef float float2 __attribute__((ext_vector_type(2)));
typedef float float4 __attribute__((ext_vector_type(4)));
typedef int int2 __attribute__((ext_vector_type(2)));
typedef int int4 __attribute__((ext_vector_type(4)));
typedef unsigned int uint2 __attribute__((ext_vector_type(2)));
typedef unsigned int uint4 __attribute__((ext_vector_type(4)));

static __device__ __forceinline__ float2 make_float2(float x, float y) { return float2{x, y}; }
static __device__ __forceinline__ float4 make_float4(float x, float y, float z, float w) {
  return float4{x, y, z, w};
}

// ---- clocks

// Shader clock (s_memtime on gfx9, SHADER_CYCLES on gfx11/gfx12) and the constant-rate clock.
static __device__ __forceinline__ long long clock64() {
  return (long long)__builtin_readcyclecounter();
}
static __device__ __forceinline__ long long wall_clock64() {
  return (long long)__builtin_readsteadycounter();
}

#endif  // ROCm headers absent
