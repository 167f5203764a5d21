// Helpers shared by the operator sources (hsapy issue #8). Device-only, header-only.
//
// Everything here is wave-size generic: the wave width comes from warpSize (32 on gfx11/gfx12,
// 64 on gfx9), never from a literal 32 as in the tutorial. Block sizes must be powers of two
// (every launch in hsapy/operators.py uses 64, 128, 256 or T*T).
#pragma once

// Largest number of waves in a 1024-thread workgroup (wave32): sizes the static wave-sum arrays.
#define HSAPY_MAX_WAVES_PER_BLOCK 32

// Tree sum over values[0 .. blockDim.x) in LDS; returns the total to every thread.
// Precondition: every thread has written its value and nothing has synchronised yet.
static __device__ __forceinline__ float block_tree_sum(float* values) {
  const unsigned int tid = threadIdx.x;
  __syncthreads();
  for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) {
      values[tid] += values[tid + stride];
    }
    __syncthreads();
  }
  const float total = values[0];
  __syncthreads();  // values[] may be reused by the caller right away
  return total;
}

// Tree max over values[0 .. blockDim.x) in LDS; returns the maximum to every thread.
static __device__ __forceinline__ float block_tree_max(float* values) {
  const unsigned int tid = threadIdx.x;
  __syncthreads();
  for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) {
      values[tid] = fmaxf(values[tid], values[tid + stride]);
    }
    __syncthreads();
  }
  const float result = values[0];
  __syncthreads();
  return result;
}

// Sum across the lanes of one wave with shuffles; lane 0 ends up with the total.
static __device__ __forceinline__ float wave_sum(float value) {
  for (int offset = warpSize / 2; offset > 0; offset >>= 1) {
    value += __shfl_down(value, offset);
  }
  return value;
}
