// Reductions the way block-primitive libraries write them: warp shuffles (down and xor), DPP
// row operations, LDS trees, one atomic per block, and warp vote functions.
#include "corpus.h"

// Sum within a wave by halving shuffles; lane 0 ends with the total.
static __device__ __forceinline__ float wave_sum_down(float v) {
  for (int offset = warpSize / 2; offset > 0; offset >>= 1) v += __shfl_down(v, offset);
  return v;
}

// Block sum: each wave reduces, wave leaders meet in shared memory, the first wave finishes.
extern "C" __global__ void block_sum_shfl(const float* in, float* partial, int n) {
  __shared__ float leaders[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : 0.0f;
  v = wave_sum_down(v);
  int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  if (lane == 0) leaders[wave] = v;
  __syncthreads();
  int waves = (blockDim.x + warpSize - 1) / warpSize;
  if (wave == 0) {
    v = lane < waves ? leaders[lane] : 0.0f;
    v = wave_sum_down(v);
    if (lane == 0) partial[blockIdx.x] = v;
  }
}

// Butterfly all-reduce: every lane of the wave ends with the wave's maximum and its sum.
extern "C" __global__ void wave_allreduce_xor(const int* in, int* max_out, int* sum_out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : -2147483647 - 1;
  int s = i < n ? in[i] : 0;
  for (int mask = 1; mask < warpSize; mask <<= 1) {
    v = max(v, __shfl_xor(v, mask));
    s += __shfl_xor(s, mask);
  }
  if (i < n) {
    max_out[i] = v;
    sum_out[i] = s;
  }
}

// Row reductions with DPP moves (row_shr within 16-lane rows), then one LDS step per row.
// dpp_ctrl 0x111..0x118: row_shr:1..8; bound_ctrl off keeps the old value where no source.
extern "C" __global__ void row16_sum_dpp(const int* in, int* out, int n) {
  __shared__ int rows[64];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  // Inclusive prefix within each row of 16 lanes: shift right by 1, 2, 4, 8 with row masks.
  v += __builtin_amdgcn_update_dpp(0, v, 0x111, 0xf, 0xf, false);
  v += __builtin_amdgcn_update_dpp(0, v, 0x112, 0xf, 0xf, false);
  v += __builtin_amdgcn_update_dpp(0, v, 0x114, 0xf, 0xf, false);
  v += __builtin_amdgcn_update_dpp(0, v, 0x118, 0xf, 0xf, false);
  int row = threadIdx.x / 16;
  if ((threadIdx.x & 15) == 15) rows[row] = v;
  __syncthreads();
  int nrows = blockDim.x / 16;
  if ((int)threadIdx.x < nrows) out[blockIdx.x * nrows + threadIdx.x] = rows[threadIdx.x];
}

// The classic shared-memory tree with sequential addressing (blockDim a power of two).
extern "C" __global__ void block_sum_tree(const float* in, float* partial, int n) {
  extern __shared__ float sdata[];
  unsigned int t = threadIdx.x;
  unsigned int i = blockIdx.x * (blockDim.x * 2) + t;
  float v = 0.0f;
  if (i < n) v = in[i];
  if (i + blockDim.x < n) v += in[i + blockDim.x];
  sdata[t] = v;
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) sdata[t] += sdata[t + s];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = sdata[0];
}

// Dot product: a block reduction, then one float atomicAdd per block into the result.
extern "C" __global__ void dot_atomic(const float* a, const float* b, float* result, int n) {
  __shared__ float leaders[32];
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    v += a[i] * b[i];
  v = wave_sum_down(v);
  if (threadIdx.x % warpSize == 0) leaders[threadIdx.x / warpSize] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < (int)(blockDim.x + warpSize - 1) / warpSize; ++w) total += leaders[w];
    atomicAdd(result, total);
  }
}

// Double-precision block sum with 64-bit shuffles.
extern "C" __global__ void block_sum_f64(const double* in, double* partial, int n) {
  __shared__ double leaders[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double v = i < n ? in[i] : 0.0;
  for (int offset = warpSize / 2; offset > 0; offset >>= 1) v += __shfl_down(v, offset);
  int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  if (lane == 0) leaders[wave] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int w = 0; w < (int)(blockDim.x + warpSize - 1) / warpSize; ++w) total += leaders[w];
    partial[blockIdx.x] = total;
  }
}

// Warp vote: ballot, any, all and popcount of the ballot, per wave; and each lane's rank
// among the lanes whose predicate holds (mbcnt).
extern "C" __global__ void wave_vote(const int* in, u64* ballots, int* flags, int* rank, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  int positive = v > 0;
  u64 mask = __ballot(positive);
  int any_neg = __any(v < 0);
  int all_even = __all((v & 1) == 0);
  int lane = threadIdx.x % warpSize;
  u64 below = lane == 0 ? 0ull : (mask & (~0ull >> (64 - lane)));
  if (i < n) rank[i] = positive ? __popcll(below) : -1;
  int wave = i / warpSize;
  if (lane == 0) {
    ballots[wave] = mask;
    flags[wave] = any_neg | (all_even << 1) | (__popcll(mask) << 2);
  }
}

// A wave sum the way warp-reduce code specialises it per generation: DPP butterflies within
// rows of 16 lanes (quad_perm, row_half_mirror, row_mirror), then across the two rows of a
// 32-lane half with v_permlanex16 (gfx10+) or ds_swizzle (gfx9), then across the halves of a
// wave64 with v_permlane64 (gfx11+) or ds_bpermute (gfx9). Every lane ends with the sum.
extern "C" __global__ void wave_sum_permlane(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  v += __builtin_amdgcn_mov_dpp(v, 0xb1, 0xf, 0xf, false);   // quad_perm:[1,0,3,2]
  v += __builtin_amdgcn_mov_dpp(v, 0x4e, 0xf, 0xf, false);   // quad_perm:[2,3,0,1]
  v += __builtin_amdgcn_mov_dpp(v, 0x141, 0xf, 0xf, false);  // row_half_mirror
  v += __builtin_amdgcn_mov_dpp(v, 0x140, 0xf, 0xf, false);  // row_mirror
#if defined(__gfx1200__) || defined(__gfx1201__)
  v += __builtin_amdgcn_permlanex16(v, v, 0x76543210u, 0xfedcba98u, false, false);
  if (warpSize == 64) v += __builtin_amdgcn_permlane64(v);
#else
  v += __builtin_amdgcn_ds_swizzle(v, 0x401f);               // bitmask mode: lane ^ 16
  v += __builtin_amdgcn_ds_bpermute((int)((__lane_id() ^ 32u) << 2), v);
#endif
  if (i < n) out[i] = v;
}
