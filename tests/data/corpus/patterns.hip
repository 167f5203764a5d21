// Patterns from HIP and CUDA code in the wild: polymorphic objects built on the device by one
// kernel and called through their vtables by another (recursively, as an expression tree); a
// global spin lock around a critical section (one work-item per block); warp-aggregated
// appends grouped by key with __match_any; memcpy/memset of lengths read from memory; CUDA's
// integer intrinsics (__byte_perm, __sad, halving adds), division by constants and __int128
// arithmetic. (Variable-length private arrays are not here: clang-19 rejects a dynamic alloca
// for AMDGPU.)
#include "corpus.h"

// ---- device-side objects: built with placement new by one kernel, evaluated by another

__device__ inline void* operator new(__SIZE_TYPE__, void* where) noexcept { return where; }

// The abstract classes' vtables name __cxa_pure_virtual, which HIP's device library provides.
extern "C" __device__ __noinline__ void __cxa_pure_virtual() { __builtin_trap(); }

struct Expr {
  __device__ virtual float eval(const float* vars) const = 0;
};
struct Constant : Expr {
  float value;
  __device__ explicit Constant(float v) : value(v) {}
  __device__ float eval(const float*) const override { return value; }
};
struct Variable : Expr {
  int index;
  __device__ explicit Variable(int k) : index(k) {}
  __device__ float eval(const float* vars) const override { return vars[index]; }
};
struct Negate : Expr {
  const Expr* operand;
  __device__ explicit Negate(const Expr* a) : operand(a) {}
  __device__ float eval(const float* vars) const override { return -operand->eval(vars); }
};
struct Binary : Expr {
  const Expr *left, *right;
  __device__ Binary(const Expr* a, const Expr* b) : left(a), right(b) {}
};
struct Sum : Binary {
  using Binary::Binary;
  __device__ float eval(const float* v) const override { return left->eval(v) + right->eval(v); }
};
struct Product : Binary {
  using Binary::Binary;
  __device__ float eval(const float* v) const override { return left->eval(v) * right->eval(v); }
};
struct Maximum : Binary {
  using Binary::Binary;
  __device__ float eval(const float* v) const override {
    return fmaxf(left->eval(v), right->eval(v));
  }
};

// Each work-item turns its postfix program (0-3: a variable, 4: a constant, 5: +, 6: *, 7: max,
// 8: negate, -1: end) into a tree of objects in its slice of the arena.
constexpr int kSlotBytes = 32;

extern "C" __global__ void build_expressions(const int* program, const float* constants,
                                             unsigned char* arena, const Expr** roots,
                                             int length, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Expr* stack[16];
  int depth = 0;
  for (int t = 0; t < length; ++t) {
    int op = program[i * length + t];
    if (op < 0) break;
    void* slot = arena + (size_t)(i * length + t) * kSlotBytes;
    const Expr* node;
    if (op < 4) {
      node = new (slot) Variable(op);
    } else if (op == 4) {
      node = new (slot) Constant(constants[i * length + t]);
    } else if (op == 8) {
      node = new (slot) Negate(stack[--depth]);
    } else {
      const Expr* b = stack[--depth];
      const Expr* a = stack[--depth];
      if (op == 5) node = new (slot) Sum(a, b);
      else if (op == 6) node = new (slot) Product(a, b);
      else node = new (slot) Maximum(a, b);
    }
    stack[depth++] = node;
  }
  roots[i] = stack[0];
}

extern "C" __global__ void eval_expressions(const Expr* const* roots, const float* vars,
                                            float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = roots[i]->eval(vars + 4 * i);
}

// ---- a global lock: the first work-item of each block merges the block's result into a record

struct Record {
  long long sum;
  int count, max_value, max_index, pad;
};

extern "C" __global__ void locked_merge(const int* x, int* lock, Record* record, int* order,
                                        int n) {
  __shared__ int block_sum, block_max, block_arg;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) {
    block_sum = 0;
    block_max = -2147483647 - 1;
    block_arg = 2147483647;
  }
  __syncthreads();
  int v = i < n ? x[i] : 0;
  if (i < n) {
    atomicAdd(&block_sum, v);
    atomicMax(&block_max, v);
  }
  __syncthreads();
  if (i < n && v == block_max) atomicMin(&block_arg, i);
  __syncthreads();
  if (threadIdx.x == 0) {
    while (atomicCAS(lock, 0, 1) != 0) {
    }
    __threadfence();   // acquire: the previous holder's writes are seen
    volatile Record* r = record;
    r->sum = r->sum + block_sum;
    r->count = r->count + 1;
    if (block_max > r->max_value || (block_max == r->max_value && block_arg < r->max_index)) {
      r->max_value = block_max;
      r->max_index = block_arg;
    }
    order[blockIdx.x] = r->count;
    __threadfence();   // release: the record is written before the lock is seen free
    atomicExch(lock, 0);
  }
}

// ---- warp-aggregated appends: the lanes holding one key share a single atomicAdd

extern "C" __global__ void bucket_by_key(const int* key, int* counts, int* buckets, int capacity,
                                         int* slot_of, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int k = key[i];
  u64 peers = __match_any(k);
  int lane = (int)__lane_id();
  int leader = __ffsll(peers) - 1;
  int rank = __popcll(peers & ((1ull << lane) - 1));
  int base = 0;
  if (lane == leader) base = atomicAdd(&counts[k], __popcll(peers));
  base = __shfl(base, leader);
  buckets[k * capacity + base + rank] = i;
  slot_of[i] = base + rank;
}

// ---- variable-length copies: memcpy and memset whose sizes come from the data

extern "C" __global__ void copy_records(const unsigned char* src, const int* offset,
                                        const int* length, unsigned char* dst, int stride,
                                        int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned char* d = dst + (size_t)i * stride;   // an odd stride: most records are unaligned
  int len = length[i];
  __builtin_memcpy(d, src + offset[i], len);
  __builtin_memset(d + len, 0x5a, stride - len);
}

// ---- integer intrinsics, division by constants, 128-bit arithmetic

extern "C" __global__ void integer_helpers(const unsigned int* a, const unsigned int* b,
                                           const unsigned int* c, const u64* w, u64* out,
                                           int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned int x = a[i], y = b[i], s = c[i];
  int sx = (int)x, sy = (int)y;
  u64 p = w[2 * i], q = w[2 * i + 1];
  u64* o = out + 24 * i;
  o[0] = __byte_perm(x, y, s);
  o[1] = __sad(sx, sy, s & 0xffff);
  o[2] = __usad(x, y, s & 0xffff);
  o[3] = (unsigned int)__hadd(sx, sy);
  o[4] = (unsigned int)__rhadd(sx, sy);
  o[5] = __uhadd(x, y);
  o[6] = __urhadd(x, y);
  o[7] = (unsigned int)(sx / 7);
  o[8] = (unsigned int)(sx % 7);
  o[9] = (unsigned int)(sx / -3);
  o[10] = x / 10u;
  o[11] = x % 1000u;
  o[12] = (u64)((i64)p / 1000);
  o[13] = (u64)((i64)p % 1000);
  o[14] = q % 97u;
  o[15] = q / 1000000007u;
  unsigned __int128 wide = (unsigned __int128)p * q + ((unsigned __int128)q << 64);
  int shift = (int)(s % 128u);
  o[16] = (u64)(wide >> shift);
  o[17] = (u64)((wide << shift) >> 64);
  unsigned __int128 tenth = wide / 10u;   // division by a constant: a multiply-high sequence
  o[18] = (u64)tenth;
  o[19] = (u64)(tenth >> 64);
  o[20] = (u64)(wide % 10u);
  __int128 signed_wide = (__int128)wide;
  o[21] = (u64)(signed_wide >> (shift | 64));   // arithmetic: the sign comes in from the top
  o[22] = (u64)(wide * wide);                    // the low 64 bits of a 128 x 128 product
  o[23] = (u64)((wide * wide) >> 64);
}
