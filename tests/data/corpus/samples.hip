// Kernels of the kind tutorials and SDK samples show: Mandelbrot escape times, an n-body force
// step, a row softmax, Collatz stopping times, a Monte Carlo estimate with a per-thread RNG,
// CSR sparse matrix-vector products, RGBA to grey, and a wave-per-row GEMV.
#include "corpus.h"

// Escape-time iteration counts over a grid of the complex plane (divergent loop exits).
// Contraction into fma is off so the orbit is the same at every optimisation level (an orbit
// is chaotic: one different rounding changes the count).
extern "C" __global__ void mandelbrot(int* counts, int width, int height, float x0, float y0,
                                      float step, int max_iter) {
#pragma clang fp contract(off)
  int px = blockIdx.x * blockDim.x + threadIdx.x;
  int py = blockIdx.y * blockDim.y + threadIdx.y;
  if (px >= width || py >= height) return;
  float cr = x0 + px * step, ci = y0 + py * step;
  float zr = 0.0f, zi = 0.0f;
  int k = 0;
  while (k < max_iter) {
    float zr2 = zr * zr, zi2 = zi * zi;
    if (zr2 + zi2 > 4.0f) break;
    zi = 2.0f * zr * zi + ci;
    zr = zr2 - zi2 + cr;
    ++k;
  }
  counts[py * width + px] = k;
}

// Gravitational accelerations with softening: bodies staged through shared memory in tiles.
extern "C" __global__ void nbody_accel(const float4* bodies, float4* accel, int n, float soft2) {
  extern __shared__ float4 tile[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 me = i < n ? bodies[i] : float4{0.0f, 0.0f, 0.0f, 0.0f};
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  for (int base = 0; base < n; base += blockDim.x) {
    int j = base + threadIdx.x;
    tile[threadIdx.x] = j < n ? bodies[j] : float4{0.0f, 0.0f, 0.0f, 0.0f};
    __syncthreads();
    for (int k = 0; k < (int)blockDim.x && base + k < n; ++k) {
      float dx = tile[k].x - me.x, dy = tile[k].y - me.y, dz = tile[k].z - me.z;
      float r2 = dx * dx + dy * dy + dz * dz + soft2;
      float inv = rsqrtf(r2);
      float s = tile[k].w * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    __syncthreads();
  }
  if (i < n) accel[i] = float4{ax, ay, az, 0.0f};
}

// Softmax of each row: one block per row, max and sum reduced with wave shuffles + LDS.
static __device__ float block_reduce(float v, bool is_max, float* scratch) {
  for (int o = warpSize / 2; o > 0; o >>= 1) {
    float w = __shfl_xor(v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  int waves = (blockDim.x + warpSize - 1) / warpSize;
  __syncthreads();
  if (lane == 0) scratch[wave] = v;
  __syncthreads();
  float r = scratch[0];
  for (int w = 1; w < waves; ++w) r = is_max ? fmaxf(r, scratch[w]) : r + scratch[w];
  return r;
}

extern "C" __global__ void softmax_rows(const float* x, float* y, int cols) {
  __shared__ float scratch[32];
  const float* row = x + (size_t)blockIdx.x * cols;
  float* out = y + (size_t)blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  m = block_reduce(m, true, scratch);
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(row[c] - m);
  s = block_reduce(s, false, scratch);
  float inv = 1.0f / s;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(row[c] - m) * inv;
}

// Collatz stopping times (data-dependent trip counts, 64-bit values).
extern "C" __global__ void collatz_steps(const u64* start, int* steps, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  u64 v = start[i];
  int k = 0;
  while (v != 1 && k < 10000) {
    v = (v & 1) ? 3 * v + 1 : v >> 1;
    ++k;
  }
  steps[i] = k;
}

// Monte Carlo estimate of pi: xorshift64* per thread, hits counted per block then atomically.
extern "C" __global__ void monte_carlo_pi(unsigned long long seed, int samples_per_thread,
                                          unsigned int* hits) {
  __shared__ unsigned int block_hits;
  if (threadIdx.x == 0) block_hits = 0;
  __syncthreads();
  u64 state = seed ^ ((u64)(blockIdx.x * blockDim.x + threadIdx.x + 1) * 0x9E3779B97F4A7C15ull);
  unsigned int mine = 0;
  for (int s = 0; s < samples_per_thread; ++s) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    u64 r = state * 0x2545F4914F6CDD1Dull;
    float x = (float)(unsigned int)(r >> 40) * (1.0f / 16777216.0f);
    float y = (float)(unsigned int)(r & 0xffffffu) * (1.0f / 16777216.0f);
    mine += x * x + y * y <= 1.0f;
  }
  atomicAdd(&block_hits, mine);
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(hits, block_hits);
}

// CSR sparse matrix times vector: one wave per row, lanes stride the row's nonzeros.
extern "C" __global__ void spmv_csr_wave(const int* row_ptr, const int* cols, const double* vals,
                                         const double* x, double* y, int rows) {
  int wave = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
  int lane = threadIdx.x % warpSize;
  if (wave >= rows) return;
  double acc = 0.0;
  for (int k = row_ptr[wave] + lane; k < row_ptr[wave + 1]; k += warpSize)
    acc += vals[k] * x[cols[k]];
  for (int o = warpSize / 2; o > 0; o >>= 1) acc += __shfl_down(acc, o);
  if (lane == 0) y[wave] = acc;
}

// RGBA8 to 8-bit grey with integer weights (77, 150, 29) / 256, alpha ignored.
extern "C" __global__ void rgba_to_grey(const uchar4* rgba, unsigned char* grey, int pixels) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pixels) return;
  uchar4 p = rgba[i];
  grey[i] = (unsigned char)((77u * p.x + 150u * p.y + 29u * p.z + 128u) >> 8);
}

// y = A x for a row-major m x n matrix: one wave per row, a strided dot, a shuffle reduction.
extern "C" __global__ void gemv_wave(const float* a, const float* x, float* y, int m, int n) {
  int row = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
  int lane = threadIdx.x % warpSize;
  if (row >= m) return;
  float acc = 0.0f;
  for (int c = lane; c < n; c += warpSize) acc += a[(size_t)row * n + c] * x[c];
  for (int o = warpSize / 2; o > 0; o >>= 1) acc += __shfl_down(acc, o);
  if (lane == 0) y[row] = acc;
}
