// Row softmax (fp32): y[r, :] = exp(x[r, :] - max_r) / sum(exp(x[r, :] - max_r)).
// Variants of operators.md: serial (3 kernels, one thread per row), cooperative (3 kernels, one
// block per row, LDS trees), fused (one kernel, one block per row, two LDS trees).
// Row-major rows x cols; row_max/row_sum are per-row scratch written by the first two kernels.
#include "hsapy_hip.h"
#include "common.h"

// ---- serial: one thread per row; block 256, grid ceil(rows / 256) ----

extern "C" __global__ void softmax_serial_max(const float* x, float* row_max, unsigned int rows,
                                              unsigned int cols) {
  const unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) {
    return;
  }
  const float* xr = x + row * cols;
  float m = -__builtin_inff();
  for (unsigned int c = 0; c < cols; ++c) {
    m = fmaxf(m, xr[c]);
  }
  row_max[row] = m;
}

extern "C" __global__ void softmax_serial_expsum(const float* x, const float* row_max,
                                                 float* row_sum, unsigned int rows,
                                                 unsigned int cols) {
  const unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) {
    return;
  }
  const float* xr = x + row * cols;
  const float m = row_max[row];
  float s = 0.0f;
  for (unsigned int c = 0; c < cols; ++c) {
    s += expf(xr[c] - m);
  }
  row_sum[row] = s;
}

extern "C" __global__ void softmax_serial_normalize(const float* x, const float* row_max,
                                                    const float* row_sum, float* y,
                                                    unsigned int rows, unsigned int cols) {
  const unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) {
    return;
  }
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  const float m = row_max[row];
  const float inv = 1.0f / row_sum[row];
  for (unsigned int c = 0; c < cols; ++c) {
    yr[c] = expf(xr[c] - m) * inv;
  }
}

// ---- cooperative: one block per row; block 256, grid rows, dynamic LDS blockDim*4 ----

extern "C" __global__ void softmax_coop_max(const float* x, float* row_max, unsigned int rows,
                                            unsigned int cols) {
  extern __shared__ float values[];
  const float* xr = x + blockIdx.x * cols;
  float m = -__builtin_inff();
  for (unsigned int c = threadIdx.x; c < cols; c += blockDim.x) {
    m = fmaxf(m, xr[c]);
  }
  values[threadIdx.x] = m;
  m = block_tree_max(values);
  if (threadIdx.x == 0) {
    row_max[blockIdx.x] = m;
  }
}

extern "C" __global__ void softmax_coop_expsum(const float* x, const float* row_max,
                                               float* row_sum, unsigned int rows,
                                               unsigned int cols) {
  extern __shared__ float values[];
  const float* xr = x + blockIdx.x * cols;
  const float m = row_max[blockIdx.x];
  float s = 0.0f;
  for (unsigned int c = threadIdx.x; c < cols; c += blockDim.x) {
    s += expf(xr[c] - m);
  }
  values[threadIdx.x] = s;
  s = block_tree_sum(values);
  if (threadIdx.x == 0) {
    row_sum[blockIdx.x] = s;
  }
}

extern "C" __global__ void softmax_coop_normalize(const float* x, const float* row_max,
                                                  const float* row_sum, float* y,
                                                  unsigned int rows, unsigned int cols) {
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  const float m = row_max[blockIdx.x];
  const float inv = 1.0f / row_sum[blockIdx.x];
  for (unsigned int c = threadIdx.x; c < cols; c += blockDim.x) {
    yr[c] = expf(xr[c] - m) * inv;
  }
}

// ---- fused: one kernel, one block per row; block 256, dynamic LDS 1 KiB ----

extern "C" __global__ void softmax_fused(const float* x, float* y, unsigned int rows,
                                         unsigned int cols) {
  extern __shared__ float values[];
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  float m = -__builtin_inff();
  for (unsigned int c = threadIdx.x; c < cols; c += blockDim.x) {
    m = fmaxf(m, xr[c]);
  }
  values[threadIdx.x] = m;
  m = block_tree_max(values);  // ends with a barrier: the second tree may reuse values[]
  float s = 0.0f;
  for (unsigned int c = threadIdx.x; c < cols; c += blockDim.x) {
    s += expf(xr[c] - m);
  }
  values[threadIdx.x] = s;
  const float inv = 1.0f / block_tree_sum(values);
  for (unsigned int c = threadIdx.x; c < cols; c += blockDim.x) {
    yr[c] = expf(xr[c] - m) * inv;
  }
}
