// Buffer-resource memory access as composable_kernel-style code writes it: a V# (base, stride,
// num_records, word 3) in SGPRs, raw buffer loads/stores/atomics whose out-of-range lanes read 0
// and drop their stores, scalar buffer loads, and (gfx942) buffer loads straight into LDS.
#include "corpus.h"

typedef int int32x4 __attribute__((ext_vector_type(4)));
typedef float float4_t __attribute__((ext_vector_type(4)));

// Word 3 of a raw (stride 0) buffer descriptor, per generation, as CK-style code sets it.
// gfx9 (CDNA3 ISA guide, buffer resource): DATA_FORMAT (bits 18:15) = 4, 32 bits.
// gfx12 (RDNA4 ISA guide, buffer resource): FORMAT (bits 17:12) = 4, OOB_SELECT (29:28) = 3
// (a raw buffer: an access is out of range when offset + size > num_records), bit 24 set.
#if defined(__gfx1200__) || defined(__gfx1201__)
#define RSRC_WORD3 0x31004000
#else
#define RSRC_WORD3 0x00020000
#endif

extern "C" {
__device__ float raw_buffer_load_f32(int32x4 rsrc, int voffset, int soffset, int aux)
    __asm("llvm.amdgcn.raw.buffer.load.f32");
__device__ float4_t raw_buffer_load_v4f32(int32x4 rsrc, int voffset, int soffset, int aux)
    __asm("llvm.amdgcn.raw.buffer.load.v4f32");
__device__ void raw_buffer_store_f32(float value, int32x4 rsrc, int voffset, int soffset, int aux)
    __asm("llvm.amdgcn.raw.buffer.store.f32");
__device__ float raw_ptr_buffer_load_f32(__amdgpu_buffer_rsrc_t rsrc, int voffset, int soffset,
                                         int aux) __asm("llvm.amdgcn.raw.ptr.buffer.load.f32");
__device__ void raw_ptr_buffer_store_f32(float value, __amdgpu_buffer_rsrc_t rsrc, int voffset,
                                         int soffset, int aux)
    __asm("llvm.amdgcn.raw.ptr.buffer.store.f32");
__device__ int raw_ptr_buffer_atomic_add_i32(int value, __amdgpu_buffer_rsrc_t rsrc, int voffset,
                                             int soffset, int aux)
    __asm("llvm.amdgcn.raw.ptr.buffer.atomic.add.i32");
__device__ int raw_ptr_buffer_atomic_umax_i32(int value, __amdgpu_buffer_rsrc_t rsrc, int voffset,
                                              int soffset, int aux)
    __asm("llvm.amdgcn.raw.ptr.buffer.atomic.umax.i32");
__device__ void raw_ptr_buffer_load_lds(__amdgpu_buffer_rsrc_t rsrc,
                                        __attribute__((address_space(3))) void* lds, int size,
                                        int voffset, int soffset, int offset, int aux)
    __asm("llvm.amdgcn.raw.ptr.buffer.load.lds");
__device__ int s_buffer_load_i32(int32x4 rsrc, int offset, int aux)
    __asm("llvm.amdgcn.s.buffer.load.i32");
__device__ float s_buffer_load_f32(int32x4 rsrc, int offset, int aux)
    __asm("llvm.amdgcn.s.buffer.load.f32");
}

// A raw buffer descriptor built by hand: 48-bit base, stride 0, num_records bytes.
static __device__ __forceinline__ int32x4 make_rsrc(const void* base, unsigned int bytes) {
  u64 address = (u64)base;
  int32x4 r;
  r.x = (int)(unsigned int)address;
  r.y = (int)((address >> 32) & 0xffffu);
  r.z = (int)bytes;
  r.w = RSRC_WORD3;
  // Descriptors live in SGPRs: make the compiler see a wave-uniform value.
  r.x = __builtin_amdgcn_readfirstlane(r.x);
  r.y = __builtin_amdgcn_readfirstlane(r.y);
  r.z = __builtin_amdgcn_readfirstlane(r.z);
  return r;
}

// Copy with buffer bounds instead of if-guards: the grid covers more than n elements; loads
// past n_in read 0, stores past n_out are dropped (clang's make_buffer_rsrc builtin).
extern "C" __global__ void buffer_copy_bounds(const float* in, float* out, int n_in, int n_out) {
  __amdgpu_buffer_rsrc_t src =
      __builtin_amdgcn_make_buffer_rsrc((void*)in, 0, n_in * 4, RSRC_WORD3);
  __amdgpu_buffer_rsrc_t dst = __builtin_amdgcn_make_buffer_rsrc(out, 0, n_out * 4, RSRC_WORD3);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = raw_ptr_buffer_load_f32(src, i * 4, 0, 0);
  raw_ptr_buffer_store_f32(v + 1.0f, dst, i * 4, 0, 0);
}

// A 32 x 32 output tile per block of 256 threads, CK style: A and B tiles come in through
// buffer loads whose out-of-range elements are 0 (no edge branches), 4 floats per load along K,
// staged in LDS; each thread accumulates 4 outputs. Row-major A (m x k), B (k x n), k % 4 == 0.
#define BM 32
#define BN 32
#define BK 16
extern "C" __global__ void gemm_buffer_tile(const float* a, const float* b, float* c, int m,
                                            int n, int k) {
  __shared__ float as[BM][BK + 1];
  __shared__ float bs[BK][BN + 1];
  int32x4 ra = make_rsrc(a, (unsigned int)(m * k * 4));
  int32x4 rb = make_rsrc(b, (unsigned int)(k * n * 4));
  int32x4 rc = make_rsrc(c, (unsigned int)(m * n * 4));
  int t = threadIdx.x;
  int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int p0 = 0; p0 < k; p0 += BK) {
    // A tile: 32 rows x 16 columns = 128 float4 loads; threads 0..127.
    if (t < 128) {
      int r = t / 4, q = (t % 4) * 4;
      int row = row0 + r, col = p0 + q;
      // Rows past m must read 0: steer them past the end of the buffer (offset >= num_records).
      int offset = row < m && col < k ? (row * k + col) * 4 : m * k * 4;
      float4_t v = raw_buffer_load_v4f32(ra, offset, 0, 0);
      as[r][q] = v.x;
      as[r][q + 1] = v.y;
      as[r][q + 2] = v.z;
      as[r][q + 3] = v.w;
    }
    // B tile: 16 rows x 32 columns, one float per thread x 2.
    for (int e = t; e < BK * BN; e += 256) {
      int r = e / BN, q = e % BN;
      int row = p0 + r, col = col0 + q;
      int offset = row < k && col < n ? (row * n + col) * 4 : k * n * 4;
      bs[r][q] = raw_buffer_load_f32(rb, offset, 0, 0);
    }
    __syncthreads();
    for (int p = 0; p < BK; ++p) {
      for (int j = 0; j < 4; ++j) {
        int e = t + j * 256, r = e / BN, q = e % BN;
        acc[j] += as[r][p] * bs[p][q];
      }
    }
    __syncthreads();
  }
  for (int j = 0; j < 4; ++j) {
    int e = t + j * 256, row = row0 + e / BN, col = col0 + e % BN;
    int offset = row < m && col < n ? (row * n + col) * 4 : m * n * 4;
    raw_buffer_store_f32(acc[j], rc, offset, 0, 0);
  }
}

// Buffer atomics: a histogram whose bins are a buffer of nbins counters (keys past the bins
// drop their increments by the bounds check), and a running unsigned maximum.
extern "C" __global__ void buffer_atomics(const unsigned int* keys, unsigned int* bins,
                                          unsigned int* biggest, int nbins, int n) {
  __amdgpu_buffer_rsrc_t rb = __builtin_amdgcn_make_buffer_rsrc(bins, 0, nbins * 4, RSRC_WORD3);
  __amdgpu_buffer_rsrc_t rm = __builtin_amdgcn_make_buffer_rsrc(biggest, 0, 4, RSRC_WORD3);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned int key = keys[i];
  raw_ptr_buffer_atomic_add_i32(1, rb, (int)(key % (nbins + 3)) * 4, 0, 0);
  raw_ptr_buffer_atomic_umax_i32((int)key, rm, 0, 0, 0);
}

// Scalar buffer loads: polynomial coefficients and a count read through a descriptor into
// SGPRs (s_buffer_load), the same for every lane.
extern "C" __global__ void polynomial_sbuffer(const float* x, const float* coefficients,
                                              float* out, int n) {
  int32x4 rc = make_rsrc(coefficients, 64 * 4);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int degree = s_buffer_load_i32(rc, 0, 0);  // word 0 holds the degree as an int
  float v = x[i], acc = 0.0f;
  for (int d = degree; d >= 0; --d) acc = acc * v + s_buffer_load_f32(rc, 4 + 4 * d, 0);
  out[i] = acc;
}

// gfx942: buffer_load_dword ... lds writes straight into LDS at M0 + lane * 4; gfx12 has no
// such form and stages through registers. Each block reverses its 64-element slice.
extern "C" __global__ void buffer_to_lds(const float* in, float* out, int n) {
  __shared__ float tile[64];
  int t = threadIdx.x, base = blockIdx.x * 64;
  __amdgpu_buffer_rsrc_t src = __builtin_amdgcn_make_buffer_rsrc((void*)in, 0, n * 4, RSRC_WORD3);
#if defined(__gfx942__)
  // Each wave64 fills the whole 64-float tile: lane l's dword lands at tile + 4 * l.
  raw_ptr_buffer_load_lds(src, (__attribute__((address_space(3))) void*)tile, 4, (base + t) * 4, 0,
                          0, 0);
#else
  tile[t] = raw_ptr_buffer_load_f32(src, (base + t) * 4, 0, 0);
#endif
  __syncthreads();
  if (base + t < n) out[base + t] = tile[63 - t] * 2.0f;
}
