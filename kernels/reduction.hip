// Sum reduction (fp32): the variants of operators.md. Block 256, dynamic LDS blockDim*4 bytes
// (`extern __shared__`). Inputs are dyadic, so every order of summation gives the exact sum and
// the host checks with tolerance 0 (hsapy/operators.py).
#include "hsapy_hip.h"
#include "common.h"

// element_atomic: one atomicAdd per element into *out (which the host zeroes).
extern "C" __global__ void reduce_element_atomic(const float* x, float* out, unsigned int n) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicAdd(out, x[i]);
  }
}

// block_atomic: LDS tree per block, then one atomicAdd per block.
extern "C" __global__ void reduce_block_atomic(const float* x, float* out, unsigned int n) {
  extern __shared__ float values[];
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  values[threadIdx.x] = i < n ? x[i] : 0.0f;
  const float total = block_tree_sum(values);
  if (threadIdx.x == 0) {
    atomicAdd(out, total);
  }
}

// partials: LDS tree per block, partials[block] = block sum (then reduce_final).
extern "C" __global__ void reduce_partials(const float* x, float* partials, unsigned int n) {
  extern __shared__ float values[];
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  values[threadIdx.x] = i < n ? x[i] : 0.0f;
  const float total = block_tree_sum(values);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = total;
  }
}

// local_lds: each thread accumulates a grid-stride slice in a register, then an LDS tree;
// partials[block] = block sum.
extern "C" __global__ void reduce_local_lds(const float* x, float* partials, unsigned int n) {
  extern __shared__ float values[];
  const unsigned int stride = blockDim.x * gridDim.x;
  float sum = 0.0f;
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    sum += x[i];
  }
  values[threadIdx.x] = sum;
  const float total = block_tree_sum(values);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = total;
  }
}

// local_wave: grid-stride accumulate, wave sums with shuffles, the wave sums through LDS and one
// more shuffle pass in wave 0; partials[block] = block sum.
extern "C" __global__ void reduce_local_wave(const float* x, float* partials, unsigned int n) {
  extern __shared__ float values[];
  const unsigned int stride = blockDim.x * gridDim.x;
  const unsigned int wave_size = warpSize;
  const unsigned int lane = threadIdx.x % wave_size;
  const unsigned int wave = threadIdx.x / wave_size;
  const unsigned int waves = (blockDim.x + wave_size - 1) / wave_size;
  float sum = 0.0f;
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    sum += x[i];
  }
  sum = wave_sum(sum);
  if (lane == 0) {
    values[wave] = sum;
  }
  __syncthreads();
  if (wave == 0) {
    float wave_total = lane < waves ? values[lane] : 0.0f;
    wave_total = wave_sum(wave_total);
    if (lane == 0) {
      partials[blockIdx.x] = wave_total;
    }
  }
}

// final: a single block sums all m values (grid-stride accumulate + LDS tree); out[0] = sum.
// Used after partials/local_lds/local_wave, and alone as the "final" variant over the input.
extern "C" __global__ void reduce_final(const float* values_in, float* out, unsigned int m) {
  extern __shared__ float values[];
  float sum = 0.0f;
  for (unsigned int i = threadIdx.x; i < m; i += blockDim.x) {
    sum += values_in[i];
  }
  values[threadIdx.x] = sum;
  const float total = block_tree_sum(values);
  if (threadIdx.x == 0) {
    out[0] = total;
  }
}
