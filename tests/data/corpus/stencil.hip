// Stencils, transposes and matrix products: halos in shared memory, 2D blocks, constant
// memory, padded LDS tiles, and LDS-tiled GEMM.
#include "corpus.h"

#define RADIUS 3
__constant__ float stencil_weights[2 * RADIUS + 1] = {0.05f, 0.1f, 0.2f, 0.3f, 0.2f, 0.1f, 0.05f};

// 1D stencil of radius 3 with the block's halo staged in shared memory (zero outside [0, n)).
extern "C" __global__ void stencil_1d(const float* in, float* out, int n) {
  __shared__ float tile[256 + 2 * RADIUS];
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  int l = threadIdx.x + RADIUS;
  tile[l] = g < n ? in[g] : 0.0f;
  if (threadIdx.x < RADIUS) {
    int left = g - RADIUS, right = g + blockDim.x;
    tile[l - RADIUS] = left >= 0 && left < n ? in[left] : 0.0f;
    tile[l + blockDim.x] = right < n ? in[right] : 0.0f;
  }
  __syncthreads();
  if (g >= n) return;
  float acc = 0.0f;
  for (int k = -RADIUS; k <= RADIUS; ++k) acc += stencil_weights[k + RADIUS] * tile[l + k];
  out[g] = acc;
}

// One Jacobi sweep of the 2D Laplace equation on the interior; the border is copied.
extern "C" __global__ void jacobi_2d(const double* u, double* v, int rows, int cols) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= cols || y >= rows) return;
  int i = y * cols + x;
  if (x == 0 || y == 0 || x == cols - 1 || y == rows - 1) {
    v[i] = u[i];
  } else {
    v[i] = 0.25 * (u[i - 1] + u[i + 1] + u[i - cols] + u[i + cols]);
  }
}

// 3x3 convolution of an 8-bit image with clamp-to-edge, weights in an argument struct.
struct Kernel3x3 {
  int w[9];
  int shift;
};

extern "C" __global__ void convolve_3x3(const unsigned char* image, unsigned char* out,
                                        Kernel3x3 k, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  int acc = 0;
  for (int dy = -1; dy <= 1; ++dy) {
    for (int dx = -1; dx <= 1; ++dx) {
      int sx = min(max(x + dx, 0), width - 1);
      int sy = min(max(y + dy, 0), height - 1);
      acc += k.w[(dy + 1) * 3 + dx + 1] * image[sy * width + sx];
    }
  }
  acc >>= k.shift;
  out[y * width + x] = (unsigned char)min(max(acc, 0), 255);
}

// Transpose through a 32 x 33 shared tile (the extra column avoids bank conflicts); blocks of
// 32 x 8 threads each move a 32 x 32 tile.
#define TILE 32
extern "C" __global__ void transpose_padded(const float* in, float* out, int rows, int cols) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += 8)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += 8)
    if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

// C = A (m x k) * B (k x n), one thread per element, no tiling.
extern "C" __global__ void gemm_naive(const float* a, const float* b, float* c, int m, int n,
                                      int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (int p = 0; p < k; ++p) acc += a[row * k + p] * b[p * n + col];
  c[row * n + col] = acc;
}

// C = alpha * A * B + beta * C with 16 x 16 tiles of A and B staged in shared memory.
#define T 16
extern "C" __global__ void gemm_tiled(const float* a, const float* b, float* c, int m, int n,
                                      int k, float alpha, float beta) {
  __shared__ float as[T][T];
  __shared__ float bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  for (int p0 = 0; p0 < k; p0 += T) {
    as[ty][tx] = row < m && p0 + tx < k ? a[row * k + p0 + tx] : 0.0f;
    bs[ty][tx] = p0 + ty < k && col < n ? b[(p0 + ty) * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int p = 0; p < T; ++p) acc += as[ty][p] * bs[p][tx];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = alpha * acc + beta * c[row * n + col];
}
