// GEMM, C = A * B, row-major fp32: A is M x K, B is K x N, C is M x N.
// Variants of operators.md: naive (block 16x16, one output per thread) and tiled with LDS tiles
// T = 8, 16, 32 (block T x T). Grid (ceil(N / T), ceil(M / T)) workgroups; x walks columns.
#include "hsapy_hip.h"
#include "common.h"

extern "C" __global__ void gemm_naive(const float* A, const float* B, float* C, unsigned int M,
                                      unsigned int N, unsigned int K) {
  const unsigned int row = blockIdx.y * blockDim.y + threadIdx.y;
  const unsigned int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) {
    return;
  }
  float acc = 0.0f;
  for (unsigned int k = 0; k < K; ++k) {
    acc += A[row * K + k] * B[k * N + col];
  }
  C[row * N + col] = acc;
}

// One T x T output tile per block; A and B tiles staged through LDS, zero-padded at the edges.
template <unsigned int T>
static __device__ __forceinline__ void gemm_tiled(const float* A, const float* B, float* C,
                                                  unsigned int M, unsigned int N,
                                                  unsigned int K) {
  __shared__ float a_tile[T][T];
  __shared__ float b_tile[T][T];
  const unsigned int tx = threadIdx.x;
  const unsigned int ty = threadIdx.y;
  const unsigned int row = blockIdx.y * T + ty;
  const unsigned int col = blockIdx.x * T + tx;
  float acc = 0.0f;
  for (unsigned int k0 = 0; k0 < K; k0 += T) {
    a_tile[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
    b_tile[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
    for (unsigned int k = 0; k < T; ++k) {
      acc += a_tile[ty][k] * b_tile[k][tx];
    }
    __syncthreads();
  }
  if (row < M && col < N) {
    C[row * N + col] = acc;
  }
}

extern "C" __global__ void gemm_tiled8(const float* A, const float* B, float* C, unsigned int M,
                                       unsigned int N, unsigned int K) {
  gemm_tiled<8>(A, B, C, M, N, K);
}

extern "C" __global__ void gemm_tiled16(const float* A, const float* B, float* C, unsigned int M,
                                        unsigned int N, unsigned int K) {
  gemm_tiled<16>(A, B, C, M, N, K);
}

extern "C" __global__ void gemm_tiled32(const float* A, const float* B, float* C, unsigned int M,
                                        unsigned int N, unsigned int K) {
  gemm_tiled<32>(A, B, C, M, N, K);
}
