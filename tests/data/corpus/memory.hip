// Memory shapes real code has: 3-D grids with partial workgroups (and the hidden arguments
// that describe them), unaligned and narrow accesses, vector types, nontemporal and volatile
// accesses, static plus dynamic shared memory, and waves of one workgroup that signal each
// other through memory without a barrier.
#include "corpus.h"

// Hidden kernel arguments (code object v5): block counts, group sizes, remainders, dims.
struct HiddenArgs {
  unsigned int block_count[3];
  unsigned short group_size[3];
  unsigned short remainder[3];
  unsigned char reserved[40];
  unsigned short grid_dims;
};

extern "C" __global__ void grid3d_partial(int* out, int nx, int ny, int nz) {
  int gx = blockIdx.x * blockDim.x + threadIdx.x;
  int gy = blockIdx.y * blockDim.y + threadIdx.y;
  int gz = blockIdx.z * blockDim.z + threadIdx.z;
  const HiddenArgs* h = (const HiddenArgs*)__builtin_amdgcn_implicitarg_ptr();
  unsigned int ls[3];
  unsigned int id[3] = {blockIdx.x, blockIdx.y, blockIdx.z};
  for (int d = 0; d < 3; ++d)
    ls[d] = id[d] < h->block_count[d] ? h->group_size[d] : h->remainder[d];
  if (gx >= nx || gy >= ny || gz >= nz) return;   // never true: the grid is exactly n
  int* o = out + 4 * ((gz * ny + gy) * nx + gx);
  o[0] = (int)(blockIdx.x | blockIdx.y << 8 | blockIdx.z << 16);
  o[1] = (int)(threadIdx.x | threadIdx.y << 8 | threadIdx.z << 16);
  o[2] = (int)(ls[0] | ls[1] << 8 | ls[2] << 16 | h->grid_dims << 24);
  // flat id within the workgroup, the way work-items are packed into waves
  o[3] = (int)(threadIdx.x + ls[0] * (threadIdx.y + ls[1] * threadIdx.z)) |
         (int)(gridDim.x | gridDim.y << 4 | gridDim.z << 8) << 16;
}

// Unaligned 16/32/64-bit loads and stores through memcpy and a packed struct.
struct __attribute__((packed)) Record {
  unsigned char tag;
  unsigned int value;
  unsigned short small;
  double weight;
};

extern "C" __global__ void unaligned_access(const unsigned char* bytes, const Record* records,
                                            unsigned char* packed, double* weights, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned int word;
  unsigned short half;
  u64 wide;
  __builtin_memcpy(&word, bytes + 5 * i + 1, 4);
  __builtin_memcpy(&half, bytes + 3 * i + 1, 2);
  __builtin_memcpy(&wide, bytes + 9 * i + 3, 8);
  Record r = records[i];
  unsigned int mixed = word ^ half ^ (unsigned int)(wide >> 29) ^ r.value ^ r.small ^ r.tag;
  // 15-byte stride: every store misaligned differently
  unsigned char* o = packed + 15 * i;
  o[0] = r.tag;
  __builtin_memcpy(o + 1, &mixed, 4);
  __builtin_memcpy(o + 5, &wide, 8);
  __builtin_memcpy(o + 13, &half, 2);
  weights[i] = r.weight * 2.0;
}

// Vector types: float4, int2, double2 and 8-element short vectors.
typedef short short8 __attribute__((ext_vector_type(8)));
typedef int int2v __attribute__((ext_vector_type(2)));
extern "C" __global__ void vector_types(const float4* a, const int2v* b, const double2* c,
                                        const short8* d, float4* fa, int2v* ib, double2* dc,
                                        short8* sd, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 x = a[i];
  fa[i] = float4{x.w, x.z * 2.0f, x.y + x.x, x.x - x.w};
  int2v y = b[i];
  ib[i] = int2v{y.y >> 3, y.x * y.y};
  double2 z = c[i];
  dc[i] = double2{z.y - z.x, z.x * 0.5};
  short8 s = d[i];
  sd[i] = s.s76543210 + (short8)(short)i;
}

// Nontemporal and volatile accesses: the values must be those of ordinary ones.
extern "C" __global__ void nontemporal_volatile(const float* in, float* out,
                                                volatile int* counts, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = __builtin_nontemporal_load(in + i);
  float w = __builtin_nontemporal_load(in + (n - 1 - i));
  __builtin_nontemporal_store(v * w + 1.0f, out + i);
  counts[i] = counts[i] + 3;
  counts[i] = counts[i] * 2;
}

// Static and dynamic shared memory in one kernel: the dynamic part starts after the static one.
extern "C" __global__ void static_dynamic_lds(const int* in, int* out, int n) {
  __shared__ int fixed[40];
  extern __shared__ int dynamic[];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  if (t < 40) fixed[t] = t * 1000;
  dynamic[t] = i < n ? in[i] : 0;
  dynamic[blockDim.x + t] = -t;
  __syncthreads();
  if (i < n)
    out[i] = dynamic[blockDim.x - 1 - t] + fixed[t % 40] + dynamic[blockDim.x + (t + 1) % blockDim.x];
}

// Wave 0 of each workgroup publishes values and then a flag; the other waves spin on the flag
// (an acquire load) with no barrier between them, as a producer/consumer inside a block does.
extern "C" __global__ void wave_handoff(const int* in, int* out, int n) {
  __shared__ int box[64];
  __shared__ int flag;
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  if (t == 0) flag = 0;
  __syncthreads();
  if (t < warpSize) {
    box[t] = in[blockIdx.x * 64 + t];
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    if (t == 0) __hip_atomic_store(&flag, 1, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_WORKGROUP);
    if (i < n) out[i] = -t;
  } else {
    while (__hip_atomic_load(&flag, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_WORKGROUP) == 0)
      __builtin_amdgcn_s_sleep(1);
    if (i < n) out[i] = box[t % warpSize] + t;
  }
}

// Signed 64-bit division and remainder by run-time values of both signs.
extern "C" __global__ void int64_signed_div(const i64* a, const i64* b, i64* q, i64* r, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  q[i] = a[i] / b[i];
  r[i] = a[i] % b[i];
}
