// Element-wise vector add, out[i] = a[i] + b[i] (fp32): the variants of operators.md.
// Launch geometry, sizes and checks live in hsapy/operators.py.
#include "hsapy_hip.h"
#include "common.h"

// v0: one element per thread. Block 256, grid ceil(n / 256).
extern "C" __global__ void vector_add_v0(const float* a, const float* b, float* out,
                                         unsigned int n) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = a[i] + b[i];
  }
}

// v1: every wave owns a tile of W*W elements (W = wave size) and walks it in W rounds.
// contiguous: lane -> base + round*W + lane (one coalesced line per round);
// strided:    lane -> base + lane*W + round (every lane in its own line: the slow pattern).
// Block 256 (a multiple of W), grid ceil(n / (256 * W)).
static __device__ __forceinline__ void vector_add_tiles(const float* a, const float* b,
                                                        float* out, unsigned int n,
                                                        bool strided) {
  const unsigned int wave_size = warpSize;
  const unsigned int lane = threadIdx.x % wave_size;
  const unsigned int wave = threadIdx.x / wave_size;
  const unsigned int waves_per_block = blockDim.x / wave_size;
  const unsigned int base = (blockIdx.x * waves_per_block + wave) * wave_size * wave_size;
  for (unsigned int round = 0; round < wave_size; ++round) {
    const unsigned int i = strided ? base + lane * wave_size + round
                                   : base + round * wave_size + lane;
    if (i < n) {
      out[i] = a[i] + b[i];
    }
  }
}

extern "C" __global__ void vector_add_v1_contiguous(const float* a, const float* b, float* out,
                                                    unsigned int n) {
  vector_add_tiles(a, b, out, n, false);
}

extern "C" __global__ void vector_add_v1_strided(const float* a, const float* b, float* out,
                                                 unsigned int n) {
  vector_add_tiles(a, b, out, n, true);
}

// v2: grid-stride loop; the grid is chosen by the host (min(full, CUs*8)).
extern "C" __global__ void vector_add_v2_grid_stride(const float* a, const float* b, float* out,
                                                     unsigned int n) {
  const unsigned int stride = blockDim.x * gridDim.x;
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = a[i] + b[i];
  }
}

// v3: float4 grid-stride over the first n/4 vectors, then a scalar grid-stride tail for the last
// n%4 elements. The buffers are at least 16-byte aligned (hsapy allocations are page aligned).
extern "C" __global__ void vector_add_v3_float4(const float* a, const float* b, float* out,
                                                unsigned int n) {
  const unsigned int stride = blockDim.x * gridDim.x;
  const unsigned int first = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned int vectors = n / 4;
  const float4* a4 = (const float4*)a;
  const float4* b4 = (const float4*)b;
  float4* out4 = (float4*)out;
  for (unsigned int i = first; i < vectors; i += stride) {
    out4[i] = a4[i] + b4[i];
  }
  for (unsigned int i = vectors * 4 + first; i < n; i += stride) {
    out[i] = a[i] + b[i];
  }
}
