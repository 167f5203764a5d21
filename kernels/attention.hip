// Single-head attention forward (fp32, no mask): O = softmax(scale * Q K^T) V, scale = 1/sqrt(D).
// Q, K, V, O are row-major S x D. Variants of operators.md:
//   materialized: attn_scores (P = scale * Q K^T, S x S) -> attn_softmax (rows of P, in place)
//                 -> attn_pv (O = P V);
//   online:       attn_online, one block per query row, one key at a time with a running max
//                 and sum that rescale the accumulator whenever the max rises.
#include "hsapy_hip.h"
#include "common.h"

// Block 16 x 16, grid (ceil(S / 16), ceil(S / 16)); x walks keys, y walks queries.
extern "C" __global__ void attn_scores(const float* Q, const float* K, float* P, unsigned int S,
                                       unsigned int D, float scale) {
  const unsigned int i = blockIdx.y * blockDim.y + threadIdx.y;
  const unsigned int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= S || j >= S) {
    return;
  }
  float dot = 0.0f;
  for (unsigned int c = 0; c < D; ++c) {
    dot += Q[i * D + c] * K[j * D + c];
  }
  P[i * S + j] = dot * scale;
}

// Row softmax of P in place: block 256, grid S, dynamic LDS blockDim*4.
// Each element is read and then written by the same thread, so in place is safe.
extern "C" __global__ void attn_softmax(float* P, unsigned int S) {
  extern __shared__ float values[];
  float* row = P + blockIdx.x * S;
  float m = -__builtin_inff();
  for (unsigned int j = threadIdx.x; j < S; j += blockDim.x) {
    m = fmaxf(m, row[j]);
  }
  values[threadIdx.x] = m;
  m = block_tree_max(values);
  float s = 0.0f;
  for (unsigned int j = threadIdx.x; j < S; j += blockDim.x) {
    s += expf(row[j] - m);
  }
  values[threadIdx.x] = s;
  const float inv = 1.0f / block_tree_sum(values);
  for (unsigned int j = threadIdx.x; j < S; j += blockDim.x) {
    row[j] = expf(row[j] - m) * inv;
  }
}

// Block 16 x 16, grid (ceil(D / 16), ceil(S / 16)); x walks output columns, y walks queries.
extern "C" __global__ void attn_pv(const float* P, const float* V, float* O, unsigned int S,
                                   unsigned int D) {
  const unsigned int i = blockIdx.y * blockDim.y + threadIdx.y;
  const unsigned int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= S || c >= D) {
    return;
  }
  float acc = 0.0f;
  for (unsigned int j = 0; j < S; ++j) {
    acc += P[i * S + j] * V[j * D + c];
  }
  O[i * D + c] = acc;
}

// One block per query row; block = a power of two >= D, dynamic LDS blockDim*4.
// Thread c owns output column c. For each key: score by an LDS tree over q[c]*k[c], then
// m' = max(m, score); the accumulator and the running sum are rescaled by exp(m - m').
extern "C" __global__ void attn_online(const float* Q, const float* K, const float* V, float* O,
                                       unsigned int S, unsigned int D, float scale) {
  extern __shared__ float values[];
  const unsigned int i = blockIdx.x;
  const unsigned int c = threadIdx.x;
  const bool active = c < D;
  const float q = active ? Q[i * D + c] : 0.0f;
  float running_max = -__builtin_inff();
  float running_sum = 0.0f;
  float acc = 0.0f;
  for (unsigned int j = 0; j < S; ++j) {
    values[c] = active ? q * K[j * D + c] : 0.0f;
    const float score = block_tree_sum(values) * scale;
    const float new_max = fmaxf(running_max, score);
    const float correction = expf(running_max - new_max);  // exp(-inf) = 0 on the first key
    const float p = expf(score - new_max);
    running_sum = running_sum * correction + p;
    if (active) {
      acc = acc * correction + p * V[j * D + c];
    }
    running_max = new_max;
  }
  if (active) {
    O[i * D + c] = acc / running_sum;
  }
}
