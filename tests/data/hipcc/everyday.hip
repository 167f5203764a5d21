// Everyday HIP kernels written against ROCm's own headers, built by hipcc --genco for gfx90a
// (tests/sim/test_hipcc_corpus.py runs them on the simulator against numpy).
#include <hip/hip_runtime.h>
#include <hip/hip_cooperative_groups.h>

namespace cg = cooperative_groups;

// Grid-stride sum: each item accumulates a strided slice, the wave folds with __shfl_down over
// warpSize, the waves of a block meet in shared memory, one partial per block.
extern "C" __global__ void block_sum(const float* x, float* partial, int n) {
  __shared__ float wave_sums[16];
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    v += x[i];
  for (int offset = warpSize / 2; offset > 0; offset >>= 1)
    v += __shfl_down(v, offset);
  int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  if (lane == 0) wave_sums[wave] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < (int)(blockDim.x + warpSize - 1) / warpSize; ++w) total += wave_sums[w];
    partial[blockIdx.x] = total;
  }
}

// Byte histogram: per-block bins in shared memory, merged with global atomics.
extern "C" __global__ void histogram256(const unsigned char* data, unsigned* bins, int n) {
  __shared__ unsigned local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (local[b]) atomicAdd(&bins[b], local[b]);
}

// Inclusive scan of each wavefront's ints with __shfl_up, then of the wave totals.
extern "C" __global__ void block_scan(const int* x, int* y, int n) {
  __shared__ int totals[16];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  int v = i < n ? x[i] : 0;
  for (int d = 1; d < warpSize; d <<= 1) {
    int up = __shfl_up(v, d);
    if (lane >= d) v += up;
  }
  if (lane == warpSize - 1) totals[wave] = v;
  __syncthreads();
  if (wave == 0) {
    int t = lane < (int)(blockDim.x / warpSize) ? totals[lane] : 0;
    for (int d = 1; d < warpSize; d <<= 1) {
      int up = __shfl_up(t, d);
      if (lane >= d) t += up;
    }
    if (lane < 16) totals[lane] = t;
  }
  __syncthreads();
  if (wave > 0) v += totals[wave - 1];
  if (i < n) y[i] = v;
}

// The math library through HIP's headers (ocml): one function per output row.
extern "C" __global__ void math_rows(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a = x[i], b = y[i];
  out[0 * n + i] = sinf(a);
  out[1 * n + i] = cosf(a);
  out[2 * n + i] = expf(a);
  out[3 * n + i] = logf(b);
  out[4 * n + i] = sqrtf(b);
  out[5 * n + i] = powf(b, a);
  out[6 * n + i] = tanhf(a);
  out[7 * n + i] = a / b;
}

extern "C" __global__ void math_double(const double* x, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double a = x[i];
  out[0 * n + i] = exp(a);
  out[1 * n + i] = sqrt(fabs(a));
  out[2 * n + i] = sin(a);
}

// Double atomicAdd into a few bins (a compare-and-swap loop on gfx90a without unsafe atomics).
extern "C" __global__ void double_bins(const double* x, const int* key, double* bins, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&bins[key[i]], x[i]);
}

// Ballots: per-wave count of positives, each positive's rank among them, any/all flags.
extern "C" __global__ void ballot_ranks(const int* x, int* rank, int* wave_count, int* flags,
                                        int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  bool positive = i < n && x[i] > 0;
  unsigned long long mask = __ballot(positive);
  int lane = threadIdx.x % warpSize;
  unsigned long long below = lane == 0 ? 0ull : (~0ull >> (64 - lane));
  if (i < n) rank[i] = positive ? __popcll(mask & below) : -1;
  int wave = i / warpSize;
  int any = __any(positive), all = __all(i >= n || x[i] != 0);
  if (lane == 0) {
    wave_count[wave] = __popcll(mask);
    flags[wave] = any | (all << 1);
  }
}

// 5-point stencil over a 2-D grid through a 16x16 shared tile with a one-cell halo.
#define TILE 16
extern "C" __global__ void stencil5(const float* in, float* out, int width, int height) {
  __shared__ float tile[TILE + 2][TILE + 2];
  int gx = blockIdx.x * TILE + threadIdx.x, gy = blockIdx.y * TILE + threadIdx.y;
  int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
  auto at = [&](int x, int y) {
    x = min(max(x, 0), width - 1);
    y = min(max(y, 0), height - 1);
    return in[y * width + x];
  };
  tile[ty][tx] = at(gx, gy);
  if (threadIdx.x == 0) tile[ty][0] = at(gx - 1, gy);
  if (threadIdx.x == TILE - 1) tile[ty][TILE + 1] = at(gx + 1, gy);
  if (threadIdx.y == 0) tile[0][tx] = at(gx, gy - 1);
  if (threadIdx.y == TILE - 1) tile[TILE + 1][tx] = at(gx, gy + 1);
  __syncthreads();
  if (gx < width && gy < height)
    out[gy * width + gx] = 0.5f * tile[ty][tx] +
        0.125f * (tile[ty][tx - 1] + tile[ty][tx + 1] + tile[ty - 1][tx] + tile[ty + 1][tx]);
}

struct Affine {
  float scale;
  int offset;
  double bias;
  short tag;
  float2 shift;
};

extern "C" __global__ void affine(Affine p, const float* x, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (double)(x[i] * p.scale + p.shift.y) + p.bias + p.offset * p.tag;
}

// Each block reverses its chunk through dynamic shared memory sized at launch.
extern "C" __global__ void reverse_chunks(const int* x, int* y, int n) {
  extern __shared__ int chunk[];
  int base = blockIdx.x * blockDim.x, t = threadIdx.x;
  int len = min((int)blockDim.x, n - base);
  if (t < len) chunk[t] = x[base + t];
  __syncthreads();
  if (t < len) y[base + t] = chunk[len - 1 - t];
}

// Butterfly max within 16-lane segments (__shfl_xor with a width) and a warp-wide broadcast.
extern "C" __global__ void segment_max(const int* x, int* seg, int* first, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? x[i] : -2147483647 - 1;
  for (int m = 8; m > 0; m >>= 1) v = max(v, __shfl_xor(v, m, 16));
  int lead = __shfl(v, 0);
  if (i < n) {
    seg[i] = v;
    first[i] = lead;
  }
}

// Cooperative groups: a block-wide reduction of 32-item tiles (thread_block_tile::shfl_down).
extern "C" __global__ void tile_sums(const int* x, int* tile_total, int n) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? x[i] : 0;
  for (int offset = tile.size() / 2; offset > 0; offset /= 2) v += tile.shfl_down(v, offset);
  block.sync();
  if (tile.thread_rank() == 0) tile_total[i / 32] = v;
}

// __syncthreads_count (ockl's workgroup reduction) and the geometry HIP's headers read through
// ockl (code object v4: the workgroup size comes from the dispatch packet).
extern "C" __global__ void block_facts(const int* x, int* facts, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int count = __syncthreads_count(i < n && x[i] % 3 == 0);
  if (threadIdx.x == 0) {
    facts[4 * blockIdx.x + 0] = count;
    facts[4 * blockIdx.x + 1] = blockDim.x;
    facts[4 * blockIdx.x + 2] = gridDim.x;
    facts[4 * blockIdx.x + 3] = __syncthreads_or(0) + __ockl_get_local_size(0);
  }
}

// Float max and int min per bin through HIP's atomicMax/atomicMin and an atomicCAS loop.
extern "C" __global__ void bin_extremes(const float* x, const int* key, float* fmax_bins,
                                        int* imin_bins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  unsigned* word = reinterpret_cast<unsigned*>(&fmax_bins[key[i]]);
  unsigned seen = *word;
  while (__uint_as_float(seen) < v) {
    unsigned previous = atomicCAS(word, seen, __float_as_uint(v));
    if (previous == seen) break;
    seen = previous;
  }
  atomicMin(&imin_bins[key[i]], (int)(v * 1000.0f));
}
