// Prefix sums and compaction inside a block: Hillis-Steele in shared memory, wave scans with
// __shfl_up, the work-efficient up-sweep/down-sweep, and ballot-based stream compaction.
#include "corpus.h"

// Inclusive scan of one block, double-buffered in shared memory (2 * blockDim ints).
extern "C" __global__ void scan_hillis_steele(const int* in, int* out, int n) {
  extern __shared__ int buf[];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  int pout = 0, pin = 1;
  buf[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (int offset = 1; offset < (int)blockDim.x; offset <<= 1) {
    pout = 1 - pout;
    pin = 1 - pout;
    int v = buf[pin * blockDim.x + t];
    if (t >= offset) v += buf[pin * blockDim.x + t - offset];
    buf[pout * blockDim.x + t] = v;
    __syncthreads();
  }
  if (i < n) out[i] = buf[pout * blockDim.x + t];
}

// Inclusive scan of a block: scan each wave with __shfl_up, scan the wave totals, add them back.
extern "C" __global__ void scan_waves_shfl_up(const float* in, float* out, int n) {
  __shared__ float totals[32];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  int lane = t % warpSize, wave = t / warpSize;
  float v = i < n ? in[i] : 0.0f;
  for (int d = 1; d < warpSize; d <<= 1) {
    float up = __shfl_up(v, d);
    if (lane >= d) v += up;
  }
  if (lane == warpSize - 1) totals[wave] = v;
  __syncthreads();
  if (wave == 0) {
    int waves = (blockDim.x + warpSize - 1) / warpSize;
    float w = lane < waves ? totals[lane] : 0.0f;
    for (int d = 1; d < warpSize; d <<= 1) {
      float up = __shfl_up(w, d);
      if (lane >= d) w += up;
    }
    if (lane < waves) totals[lane] = w;
  }
  __syncthreads();
  if (wave > 0) v += totals[wave - 1];
  if (i < n) out[i] = v;
}

// Exclusive scan, work-efficient (Blelloch): up-sweep builds a tree of sums, down-sweep pushes
// prefixes down. Two elements per thread; blockDim a power of two; block totals out.
extern "C" __global__ void scan_blelloch(const unsigned int* in, unsigned int* out,
                                         unsigned int* block_totals, int n) {
  extern __shared__ unsigned int tree[];
  int t = threadIdx.x, m = 2 * blockDim.x;
  int base = blockIdx.x * m;
  tree[2 * t] = base + 2 * t < n ? in[base + 2 * t] : 0u;
  tree[2 * t + 1] = base + 2 * t + 1 < n ? in[base + 2 * t + 1] : 0u;
  int offset = 1;
  for (int d = m >> 1; d > 0; d >>= 1) {
    __syncthreads();
    if (t < d) {
      int a = offset * (2 * t + 1) - 1, b = offset * (2 * t + 2) - 1;
      tree[b] += tree[a];
    }
    offset <<= 1;
  }
  if (t == 0) {
    block_totals[blockIdx.x] = tree[m - 1];
    tree[m - 1] = 0;
  }
  for (int d = 1; d < m; d <<= 1) {
    offset >>= 1;
    __syncthreads();
    if (t < d) {
      int a = offset * (2 * t + 1) - 1, b = offset * (2 * t + 2) - 1;
      unsigned int left = tree[a];
      tree[a] = tree[b];
      tree[b] += left;
    }
  }
  __syncthreads();
  if (base + 2 * t < n) out[base + 2 * t] = tree[2 * t];
  if (base + 2 * t + 1 < n) out[base + 2 * t + 1] = tree[2 * t + 1];
}

// Keep the elements that pass a predicate, in order, per block: a wave ballot ranks lanes, an
// atomic on a shared counter per wave is replaced by an ordered scan of the wave counts.
extern "C" __global__ void compact_ballot(const int* in, int* out, int* counts, int threshold,
                                          int n) {
  __shared__ int wave_counts[32];
  __shared__ int wave_offsets[32];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  int lane = t % warpSize, wave = t / warpSize;
  int v = i < n ? in[i] : 0;
  int keep = i < n && v > threshold;
  u64 mask = __ballot(keep);
  u64 below = lane == 0 ? 0ull : (mask & (~0ull >> (64 - lane)));
  int rank = __popcll(below);
  if (lane == 0) wave_counts[wave] = __popcll(mask);
  __syncthreads();
  if (t == 0) {
    int sum = 0;
    for (int w = 0; w < (int)(blockDim.x + warpSize - 1) / warpSize; ++w) {
      wave_offsets[w] = sum;
      sum += wave_counts[w];
    }
    counts[blockIdx.x] = sum;
  }
  __syncthreads();
  if (keep) out[blockIdx.x * blockDim.x + wave_offsets[wave] + rank] = v;
}
