#define CORPUS_OCML
// corpus-flags: -fno-offload-uniform-block
// HIP's device-side library beyond the compiler's builtins: the block-wide votes
// __syncthreads_count/_and/_or (corpus.h: ballots, an LDS counter and barriers), the work-item
// geometry functions of ROCm's ockl that HIP's blockDim and gridDim are built on (they read the
// code object v5 hidden arguments, remainders included), and a device-side assert, whose
// failure message goes out through ockl's fprintf over the hostcall buffer before the trap.
// HIP launches whole workgroups, so clang assumes by default that every workgroup is full and
// folds the remainders away; -fno-offload-uniform-block keeps them (the launches here, like
// hipExtModuleLaunchKernel's, give a grid that is not a multiple of the workgroup).
#include "corpus.h"

// ---- block votes: counts of items above a threshold, "every item valid", "any item negative"

extern "C" __global__ void block_votes(const int* x, int threshold, int* votes, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? x[i] : 0;
  // Every item of the block takes part, in range or not: the votes are barriers.
  int above = __syncthreads_count(i < n && v > threshold);
  int all_small = __syncthreads_and(i >= n || (v > -1000 && v < 1000));
  int any_negative = __syncthreads_or(i < n && v < 0);
  // A vote whose result feeds the next one: items of the block that are even and above the
  // block's own count (each block decides from its result, so the LDS is reused in a row).
  int second = __syncthreads_count(i < n && (v & 1) == 0 && v > above);
  if (threadIdx.x == 0) {
    votes[4 * blockIdx.x] = above;
    votes[4 * blockIdx.x + 1] = all_small;
    votes[4 * blockIdx.x + 2] = any_negative;
    votes[4 * blockIdx.x + 3] = second;
  }
}

// ---- early exit by vote: a block-wide "are we done?" loop (convergence test of an iteration)

extern "C" __global__ void vote_until_done(const int* start, int* steps, int* rounds, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int v = i < n ? (unsigned int)start[i] : 1u;
  int count = 0, round = 0;
  // Collatz steps to 1 for every item; the block keeps going while any item has not arrived.
  while (__syncthreads_or(v != 1u)) {
    if (v != 1u) {
      v = (v & 1u) ? 3u * v + 1u : v >> 1;
      ++count;
    }
    ++round;
  }
  if (i < n) steps[i] = count;
  if (threadIdx.x == 0) rounds[blockIdx.x] = round;
}

// ---- geometry the way HIP's headers compute it: ockl over the hidden arguments

extern "C" __global__ void ockl_geometry(unsigned int* out, int width) {
  unsigned int gx = __ockl_get_global_id(0), gy = __ockl_get_global_id(1);
  unsigned int gz = __ockl_get_global_id(2);
  unsigned int linear = (gz * __ockl_get_global_size(1) + gy) * __ockl_get_global_size(0) + gx;
  unsigned int* o = out + width * linear;
  for (int d = 0; d < 3; ++d) {
    o[d] = __ockl_get_local_size(d);             // smaller in a partial last workgroup
    o[3 + d] = __ockl_get_enqueued_local_size(d);
    o[6 + d] = __ockl_get_num_groups(d);
    o[9 + d] = __ockl_get_global_size(d);
    o[12 + d] = __ockl_get_group_id(d) * 1000u + __ockl_get_local_id(d);
  }
  o[15] = __ockl_get_local_linear_id();
  o[16] = __ockl_get_global_linear_id();
  o[17] = __ockl_get_work_dim();
}

// ---- assert: a checked precondition on the input

extern "C" __global__ void checked_sqrt_table(const int* x, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = x[i];
  assert(v >= 0 && "inputs are non-negative");
  int r = 0;
  while ((r + 1) * (r + 1) <= v) ++r;   // integer square root by counting
  out[i] = r;
}
