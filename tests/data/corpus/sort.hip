// Sorting inside a block: bitonic and odd-even transposition networks in shared memory, a
// radix sort by bits with block-wide split (scan of flags), and a rank sort by counting.
#include "corpus.h"

// Bitonic sort of each block's 2 * blockDim keys (a power of two), padded with +inf keys.
extern "C" __global__ void bitonic_sort(const float* in, float* out, int n) {
  extern __shared__ float keys[];
  int t = threadIdx.x, m = 2 * blockDim.x, base = blockIdx.x * m;
  for (int k = t; k < m; k += blockDim.x) keys[k] = base + k < n ? in[base + k] : INFINITY;
  __syncthreads();
  for (int size = 2; size <= m; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int k = t; k < m; k += blockDim.x) {
        int partner = k ^ stride;
        if (partner > k) {
          bool ascending = (k & size) == 0;
          float a = keys[k], b = keys[partner];
          if ((a > b) == ascending) {
            keys[k] = b;
            keys[partner] = a;
          }
        }
      }
      __syncthreads();
    }
  }
  for (int k = t; k < m; k += blockDim.x)
    if (base + k < n) out[base + k] = keys[k];
}

// Odd-even transposition sort: blockDim phases of compare-exchange between neighbours.
extern "C" __global__ void odd_even_sort(const int* in, int* out, int n) {
  extern __shared__ int v[];
  int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  int count = min((int)blockDim.x, n - base);
  if (t < count) v[t] = in[base + t];
  __syncthreads();
  for (int phase = 0; phase < count; ++phase) {
    int k = 2 * t + (phase & 1);
    if (k + 1 < count && v[k] > v[k + 1]) {
      int tmp = v[k];
      v[k] = v[k + 1];
      v[k + 1] = tmp;
    }
    __syncthreads();
  }
  if (t < count) out[base + t] = v[t];
}

// LSD radix sort of each block's keys (one key per thread), one bit per pass: a split by the
// bit, with positions from a block scan of the zero flags (ballot + popc per wave).
extern "C" __global__ void radix_sort_block(const unsigned int* in, unsigned int* out, int bits,
                                            int n) {
  __shared__ unsigned int keys[1024];
  __shared__ int wave_zeros[32];
  int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  int count = min((int)blockDim.x, n - base);
  int lane = t % warpSize, wave = t / warpSize;
  int waves = (blockDim.x + warpSize - 1) / warpSize;
  if (t < count) keys[t] = in[base + t];
  __syncthreads();
  for (int b = 0; b < bits; ++b) {
    unsigned int key = t < count ? keys[t] : 0u;
    int zero = t < count && ((key >> b) & 1u) == 0;
    u64 mask = __ballot(zero);
    u64 below = lane == 0 ? 0ull : (mask & (~0ull >> (64 - lane)));
    if (lane == 0) wave_zeros[wave] = __popcll(mask);
    __syncthreads();
    int zeros_before = 0, total_zeros = 0;
    for (int w = 0; w < waves; ++w) {
      if (w < wave) zeros_before += wave_zeros[w];
      total_zeros += wave_zeros[w];
    }
    int rank_zero = zeros_before + __popcll(below);
    int position = zero ? rank_zero : total_zeros + (t - rank_zero);
    __syncthreads();
    if (t < count) keys[position] = key;
    __syncthreads();
  }
  if (t < count) out[base + t] = keys[t];
}

// Rank sort: each element counts the elements smaller than it (ties broken by index) and
// writes itself at that rank. Quadratic, but a common first parallel sort.
extern "C" __global__ void rank_sort(const double* in, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = in[i];
  int rank = 0;
  for (int j = 0; j < n; ++j) {
    double y = in[j];
    rank += (y < x) || (y == x && j < i);
  }
  out[rank] = x;
}
