// Fused RMSNorm (fp32): y[r, c] = x[r, c] * rsqrt(mean(x[r, :]^2) + eps) * w[c].
// Variants of operators.md: serial (one thread per row; block 256, grid ceil(rows / 256)) and
// block (one block per row; block 256, 128 or 64; LDS tree; dynamic LDS blockDim*4).
#include "hsapy_hip.h"
#include "common.h"

extern "C" __global__ void rmsnorm_serial(const float* x, const float* w, float* y,
                                          unsigned int rows, unsigned int cols, float eps) {
  const unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) {
    return;
  }
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  float sum_sq = 0.0f;
  for (unsigned int c = 0; c < cols; ++c) {
    sum_sq += xr[c] * xr[c];
  }
  const float inv_rms = rsqrtf(sum_sq / (float)cols + eps);
  for (unsigned int c = 0; c < cols; ++c) {
    yr[c] = xr[c] * inv_rms * w[c];
  }
}

extern "C" __global__ void rmsnorm_block(const float* x, const float* w, float* y,
                                         unsigned int rows, unsigned int cols, float eps) {
  extern __shared__ float values[];
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  float sum_sq = 0.0f;
  for (unsigned int c = threadIdx.x; c < cols; c += blockDim.x) {
    sum_sq += xr[c] * xr[c];
  }
  values[threadIdx.x] = sum_sq;
  sum_sq = block_tree_sum(values);
  const float inv_rms = rsqrtf(sum_sq / (float)cols + eps);
  for (unsigned int c = threadIdx.x; c < cols; c += blockDim.x) {
    yr[c] = xr[c] * inv_rms * w[c];
  }
}
