// Tiny device header for the ISA corpus: clang-19 HIP device code built with -nogpulib
// -nogpuinc needs the attribute spellings and a few builtins, nothing from ROCm.
#pragma once
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define KERNEL extern "C" __global__
typedef unsigned int uint;
typedef unsigned long long u64;
typedef long long i64;

static __device__ inline uint tid() { return __builtin_amdgcn_workitem_id_x(); }
static __device__ inline uint bid() { return __builtin_amdgcn_workgroup_id_x(); }
static __device__ inline uint gid() { return bid() * 256u + tid(); }
static __device__ inline void barrier() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
