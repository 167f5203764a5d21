// Idioms of application code the rest of the corpus leaves out: structs with nested members
// passed by value, templated kernels launched by their mangled names, generic pointers into
// shared and private memory, the "last block" reduction, sub-warp reductions, 64-bit vote
// masks, 128-bit integers, register arrays indexed at run time, recursion to a run-time depth,
// a bytecode interpreter, float atomics through integer atomics, 2-D grid-stride loops and the
// shader clocks.
#include "corpus.h"

// ---- structs by value: nested arrays and structs, a 12-byte float3, padding, a 16-byte vector

struct float3_t {   // HIP's float3: three floats, 12 bytes, 4-byte aligned
  float x, y, z;
};
struct BytePair {
  unsigned char lo, hi;
};
struct Transform {
  char tag;          // 3 bytes of padding follow
  float3_t offset;
  double scale;      // 8-byte aligned: 4 bytes of padding before it
  short steps[3];
  BytePair pairs[2];
  bool flip;         // then padding up to the 8-byte alignment
};
struct alignas(16) Bounds {
  float lo, hi;
  int count;
};

extern "C" __global__ void struct_args(Transform t, const float3_t* points, Bounds b, float4 bias,
                                       float3_t* out, int* tags, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float3_t p = points[i];   // 12-byte elements: a dwordx3 load, or three dword loads
  float s = (float)t.scale;
  float3_t q = {p.x * s + t.offset.x + bias.x, p.y * s + t.offset.y + bias.y,
                p.z * s + t.offset.z + bias.z * bias.w};
  q.x = fminf(fmaxf(q.x, b.lo), b.hi);
  q.y = fminf(fmaxf(q.y, b.lo), b.hi);
  if (t.flip) q.z = -q.z;
  out[i] = q;
  const BytePair& pair = t.pairs[i & 1];
  tags[i] = t.tag * 1000000 + t.steps[i % 3] * 1000 + pair.lo * 3 + pair.hi + (i < b.count);
}

// ---- a templated kernel, instantiated for four element types and launched by mangled name

template <typename T, typename Acc>
__global__ void scale_offset(const T* x, T* out, Acc scale, Acc offset, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    out[i] = (T)((Acc)x[i] * scale + offset);
}
template __global__ void scale_offset<signed char, int>(const signed char*, signed char*, int,
                                                        int, int);
template __global__ void scale_offset<unsigned short, unsigned int>(const unsigned short*,
                                                                    unsigned short*, unsigned int,
                                                                    unsigned int, int);
template __global__ void scale_offset<_Float16, _Float16>(const _Float16*, _Float16*, _Float16,
                                                          _Float16, int);
template __global__ void scale_offset<double, double>(const double*, double*, double, double, int);

// ---- generic pointers: one noinline function reads global, shared and private memory

__device__ __noinline__ float horner_half(const float* v, int len) {
  float s = 0.0f;
  for (int j = 0; j < len; ++j) s = s * 0.5f + v[j];
  return s;
}

__device__ __noinline__ void copy_scaled(float* dst, const float* src, int len, float f) {
  for (int j = 0; j < len; ++j) dst[j] = src[j] * f;
}

extern "C" __global__ void generic_pointers(const float* in, float* out, int n) {
  __shared__ float tile[256 * 4];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int t = threadIdx.x;
  float local[4];
  if (i < n) {
    for (int j = 0; j < 4; ++j) tile[4 * t + j] = in[4 * i + j] + 1.0f;
  }
  __syncthreads();
  if (i >= n) return;
  copy_scaled(local, &tile[4 * t], 4, 2.0f);           // shared -> private, both generic
  // Odd lanes read private memory and even lanes shared memory through one pointer.
  const float* mixed = (i & 1) ? local : &tile[4 * t];
  out[4 * i + 0] = horner_half(in + 4 * i, 4);
  out[4 * i + 1] = horner_half(&tile[4 * t], 4);
  out[4 * i + 2] = horner_half(local, 4);
  out[4 * i + 3] = horner_half(mixed, 4);
}

// ---- the "last block" reduction: partial sums, a fence, a ticket; the last block finishes

extern "C" __global__ void last_block_sum(const float* x, float* partial, unsigned int* ticket,
                                          float* total, int n) {
  __shared__ float sums[128];
  __shared__ bool is_last;
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  sums[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) sums[t] += sums[t + stride];
    __syncthreads();
  }
  if (t == 0) {
    partial[blockIdx.x] = sums[0];
    __threadfence();   // the partial is visible to every block before the ticket is taken
    unsigned int mine = atomicAdd(ticket, 1u);
    is_last = mine == gridDim.x - 1;
  }
  __syncthreads();
  if (is_last && t == 0) {
    __threadfence();
    float s = 0.0f;
    const volatile float* parts = partial;
    for (unsigned int b = 0; b < gridDim.x; ++b) s += parts[b];
    *total = s;
    *ticket = 0;   // ready for the next launch
  }
}

// ---- reductions inside segments of 16 and 32 lanes, and across the whole wave

extern "C" __global__ void segment_reduce(const float* x, float* out16, float* out32,
                                          float* wave_max, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.0f;
  float s16 = v;
  for (int m = 8; m > 0; m >>= 1) s16 += __shfl_xor(s16, m, 16);
  float s32 = v;
  for (int d = 16; d > 0; d >>= 1) s32 += __shfl_down(s32, d, 32);
  float mx = i < n ? v : -INFINITY;
  for (int m = warpSize / 2; m > 0; m >>= 1) mx = fmaxf(mx, __shfl_xor(mx, m));
  if (i < n) {
    out16[i] = s16;                                    // every lane holds its segment's sum
    if ((__lane_id() & 31) == 0) out32[i / 32] = s32;  // lane 0 of each segment
    if (__lane_id() == 0) wave_max[i / warpSize] = mx;
  }
}

// ---- 64-bit vote masks through the bit functions: first, last, count, reverse, rank

extern "C" __global__ void ballot_bits(const int* x, int threshold, int* first, int* last,
                                       int* count, u64* reversed, int* rank, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  bool hit = i < n && x[i] > threshold;
  u64 mask = __ballot(hit);
  unsigned int lane = __lane_id();
  if (i >= n) return;
  int w = i / warpSize;
  if (lane == 0) {
    first[w] = __ffsll(mask) - 1;                      // -1 when no lane voted
    last[w] = mask ? 63 - __clzll((i64)mask) : -1;
    count[w] = __popcll(mask);
    reversed[w] = __brevll(mask);
  }
  u64 below = lane == 0 ? 0 : (~0ull >> (64 - lane));
  rank[i] = hit ? __popcll(mask & below) : -1;
}

// ---- 128-bit integers: a full 64 x 64 product, divided by a 64-bit value at run time

extern "C" __global__ void int128_math(const u64* a, const u64* b, const u64* d, const i64* s,
                                       u64* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned __int128 p = (unsigned __int128)a[i] * b[i];
  unsigned __int128 q = p / d[i];
  unsigned __int128 r = p % d[i];
  __int128 sp = (__int128)s[i] * (i64)b[i];
  __int128 sq = sp / (i64)d[i];                         // truncates toward zero
  __int128 sr = sp % (i64)d[i];
  out[6 * i + 0] = (u64)q;
  out[6 * i + 1] = (u64)(q >> 64);
  out[6 * i + 2] = (u64)r;
  out[6 * i + 3] = (u64)sq;
  out[6 * i + 4] = (u64)((unsigned __int128)sq >> 64);
  out[6 * i + 5] = (u64)sr;
}

// ---- a small array in registers indexed at run time (v_movrel / s_set_gpr_idx at -O3)

extern "C" __global__ void register_array(const float* in, const int* idx, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float r[16];
#pragma unroll
  for (int k = 0; k < 16; ++k) r[k] = in[16 * i + k];
  int j = idx[i] & 15;
  r[j] += 100.0f;                                       // a dynamic insert
  r[(j * 7 + 3) & 15] *= -1.0f;                         // and another
  float picked = r[(idx[i] >> 4) & 15];                 // a dynamic extract
  float total = 0.0f;
#pragma unroll
  for (int k = 0; k < 16; ++k) total += r[k] * (float)(k + 1);
  out[2 * i] = picked;
  out[2 * i + 1] = total;
}

// ---- recursion to a depth chosen at run time: pairwise sums

__device__ float pairwise_sum(const float* v, int len, int depth) {
  if (depth == 0 || len <= 2) {
    float s = 0.0f;
    for (int j = 0; j < len; ++j) s += v[j];
    return s;
  }
  int half = len / 2;
  return pairwise_sum(v, half, depth - 1) * 1.0f + pairwise_sum(v + half, len - half, depth - 1);
}

extern "C" __global__ void recursive_depth(const float* v, const int* depth, float* out, int len,
                                           int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = pairwise_sum(v + i, len, depth[i]);
}

// ---- a stack-machine interpreter: a dense switch in a loop over a program in memory, its
// operand stack a private array indexed by the stack pointer

enum Op { PUSH_X, PUSH_C, ADD, SUB, MUL, NEG, ABS, MAX, MIN, DUP, SWAP, JNEG, JMP, DEC, HALT };

extern "C" __global__ void bytecode_vm(const int* program, const float* constants,
                                       const float* x, float* out, int* steps, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float stack[16];
  int sp = 0, pc = 0, executed = 0;
  float counter = 0.0f;
  bool running = true;
  while (running && executed < 1000) {
    int op = program[2 * pc], arg = program[2 * pc + 1];
    ++pc;
    ++executed;
    switch (op) {
      case PUSH_X: stack[sp++] = x[i]; break;
      case PUSH_C: stack[sp++] = constants[arg]; break;
      case ADD: --sp; stack[sp - 1] = stack[sp - 1] + stack[sp]; break;
      case SUB: --sp; stack[sp - 1] = stack[sp - 1] - stack[sp]; break;
      case MUL: --sp; stack[sp - 1] = stack[sp - 1] * stack[sp]; break;
      case NEG: stack[sp - 1] = -stack[sp - 1]; break;
      case ABS: stack[sp - 1] = fabsf(stack[sp - 1]); break;
      case MAX: --sp; stack[sp - 1] = fmaxf(stack[sp - 1], stack[sp]); break;
      case MIN: --sp; stack[sp - 1] = fminf(stack[sp - 1], stack[sp]); break;
      case DUP: stack[sp] = stack[sp - 1]; ++sp; break;
      case SWAP: {
        float top = stack[sp - 1];
        stack[sp - 1] = stack[sp - 2];
        stack[sp - 2] = top;
        break;
      }
      case JNEG: if (stack[--sp] < 0.0f) pc = arg; break;
      case JMP: pc = arg; break;
      case DEC: counter = counter - 1.0f; stack[sp++] = counter; break;
      default: running = false; break;
    }
  }
  out[i] = sp > 0 ? stack[sp - 1] : 0.0f;
  steps[i] = executed;
}

// ---- float atomic max/min through integer atomics (the sign trick) and a double CAS loop

extern "C" __global__ void float_atomic_tricks(const float* v, const double* d, const int* key,
                                               float* fmax_out, double* dmin_out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int bucket = key[i];
  float f = v[i];
  // Non-negative floats order like their bits as signed ints; negative ones reversed, as
  // unsigned ints. The buckets start at -inf.
  if (f >= 0.0f)
    atomicMax((int*)&fmax_out[bucket], __float_as_int(f));
  else
    atomicMin((unsigned int*)&fmax_out[bucket], (unsigned int)__float_as_int(f));
  u64* slot = (u64*)&dmin_out[bucket];
  u64 seen = *slot;
  while (d[i] < __builtin_bit_cast(double, seen)) {
    u64 prior = atomicCAS(slot, seen, __builtin_bit_cast(u64, d[i]));
    if (prior == seen) break;
    seen = prior;
  }
}

// ---- a grid-stride loop in two dimensions over a batch of matrices (blockIdx.z the batch)

extern "C" __global__ void grid_stride_2d(const int* in, int* out, int rows, int cols) {
  int batch = blockIdx.z;
  for (int r = blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += blockDim.y * gridDim.y)
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += blockDim.x * gridDim.x) {
      long long at = ((long long)batch * rows + r) * cols + c;
      out[at] = in[at] * 2 + batch * 1000 + (int)(gridDim.x * 10 + gridDim.y);
    }
}

// ---- the shader clocks: a loop takes time on clock64, and wall_clock64 does not go back

extern "C" __global__ void clock_elapsed(const int* work, long long* elapsed, long long* wall,
                                         int* sink, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long w0 = wall_clock64();
  long long t0 = clock64();
  int acc = i;
  for (int k = 0; k < work[i]; ++k) acc = acc * 1103515245 + 12345;
  sink[i] = acc;
  long long t1 = clock64();
  long long w1 = wall_clock64();
  elapsed[i] = t1 - t0;
  wall[i] = w1 - w0;
}

// ---- register arrays indexed by a value the same for the whole wave: v_movrels / v_movreld
// (s_set_gpr_idx_on or M0 indexing), rather than the v_cndmask chain a per-lane index gets

extern "C" __global__ void register_array_uniform(const float* in, const double* din,
                                                  const int* block_index, float* out,
                                                  double* dout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int j = block_index[blockIdx.x];   // one value per workgroup: a scalar load
  float r[16];
  double d[12];
#pragma unroll
  for (int k = 0; k < 16; ++k) r[k] = in[16 * i + k];
#pragma unroll
  for (int k = 0; k < 12; ++k) d[k] = din[12 * i + k];
  r[j & 15] = r[(j >> 4) & 15] * 2.0f;
  d[j % 12] += d[(j >> 4) % 12];
  out[2 * i] = r[(j >> 8) & 15];
  out[2 * i + 1] = r[j & 15] - r[((j >> 8) + 1) & 15];
  dout[i] = d[(j >> 8) % 12] * 3.0 + d[j % 12];
}

// ---- a wave-wide inclusive scan in DPP, as scan primitives write it per generation:
// row_shr steps inside rows of 16 lanes, then rows joined with row_bcast15/31 under row masks
// (gfx9), or with v_permlanex16 and a readlane (gfx12); an exclusive scan by wave_shr:1 (gfx9)
// or by a ds_bpermute one lane up. dpp_ctrl values: CDNA3 / RDNA4 ISA guides, DPP controls.

#define DPP_ROW_SHR(n) (0x110 + (n))
#define DPP_WAVE_SHR1 0x138
#define DPP_ROW_BCAST15 0x142
#define DPP_ROW_BCAST31 0x143
#define DPP_ROW_XMASK(n) (0x160 + (n))

extern "C" __global__ void dpp_wave_scan(const int* x, int* inclusive, int* exclusive,
                                         int* row_total, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? x[i] : 0;
  int lane = (int)__lane_id();
  int s = v;
  // A lane whose source is outside its row reads 0 (bound_ctrl), so it adds nothing.
  s += __builtin_amdgcn_update_dpp(0, s, DPP_ROW_SHR(1), 0xf, 0xf, true);
  s += __builtin_amdgcn_update_dpp(0, s, DPP_ROW_SHR(2), 0xf, 0xf, true);
  // Banks 0 (and 1) of each row have no source 4 (8) lanes up: masked off, they keep old (0).
  s += __builtin_amdgcn_update_dpp(0, s, DPP_ROW_SHR(4), 0xf, 0xe, false);
  s += __builtin_amdgcn_update_dpp(0, s, DPP_ROW_SHR(8), 0xf, 0xc, false);
  int total_in_row = s;
#if defined(__gfx942__)
  s += __builtin_amdgcn_update_dpp(0, s, DPP_ROW_BCAST15, 0xa, 0xf, false);   // rows 1 and 3
  s += __builtin_amdgcn_update_dpp(0, s, DPP_ROW_BCAST31, 0xc, 0xf, false);   // rows 2 and 3
  int before = __builtin_amdgcn_update_dpp(0, s, DPP_WAVE_SHR1, 0xf, 0xf, false);
  // The row's total in every lane of the row: its lane 15 (gfx9 has no row_xmask).
  int row_sum = __builtin_amdgcn_ds_bpermute(((lane & ~15) | 15) << 2, total_in_row);
#else
  // Every selector nibble 15: each lane reads lane 15 of the other row of its 32-lane half.
  int other = __builtin_amdgcn_permlanex16(0, s, 0xffffffffu, 0xffffffffu, false, false);
  if (lane & 16) s += other;
  if (warpSize == 64) {
    int low_half = __builtin_amdgcn_readlane(s, 31);
    if (lane >= 32) s += low_half;
  }
  int before = __builtin_amdgcn_ds_bpermute((lane - 1) << 2, s);
  if (lane == 0) before = 0;
  // The row's total in every lane: a butterfly of row_xmask exchanges.
  int row_sum = v;
  row_sum += __builtin_amdgcn_update_dpp(0, row_sum, DPP_ROW_XMASK(1), 0xf, 0xf, false);
  row_sum += __builtin_amdgcn_update_dpp(0, row_sum, DPP_ROW_XMASK(2), 0xf, 0xf, false);
  row_sum += __builtin_amdgcn_update_dpp(0, row_sum, DPP_ROW_XMASK(4), 0xf, 0xf, false);
  row_sum += __builtin_amdgcn_update_dpp(0, row_sum, DPP_ROW_XMASK(8), 0xf, 0xf, false);
#endif
  if (i < n) {
    inclusive[i] = s;
    exclusive[i] = before;
    row_total[i] = row_sum;
  }
}

// ---- a per-block double minimum through a 64-bit compare-and-swap loop in shared memory

extern "C" __global__ void lds_double_min(const double* d, double* block_min, int n) {
  __shared__ u64 best;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) best = __builtin_bit_cast(u64, __builtin_inf());
  __syncthreads();
  if (i < n) {
    double mine = d[i];
    u64 seen = best;
    while (mine < __builtin_bit_cast(double, seen)) {
      u64 expected = seen;
      __hip_atomic_compare_exchange_strong(&best, &expected, __builtin_bit_cast(u64, mine),
                                           __ATOMIC_RELAXED, __ATOMIC_RELAXED,
                                           __HIP_MEMORY_SCOPE_WORKGROUP);
      if (expected == seen) break;
      seen = expected;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) block_min[blockIdx.x] = __builtin_bit_cast(double, best);
}

// ---- a persistent kernel with a software grid barrier: a few workgroups (all resident on any
// GPU) meet at a counter in global memory between two phases, twice

__device__ void grid_barrier(unsigned int* arrived, unsigned int* generation) {
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned int gen = __hip_atomic_load(generation, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
    if (atomicAdd(arrived, 1u) == gridDim.x - 1) {
      *arrived = 0;
      __hip_atomic_store(generation, gen + 1, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
    } else {
      while (__hip_atomic_load(generation, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT) == gen)
        __builtin_amdgcn_s_sleep(1);
    }
  }
  __syncthreads();
}

extern "C" __global__ void grid_barrier_phases(const int* x, int* a, int* b, unsigned int* sync,
                                               int n) {
  int stride = gridDim.x * blockDim.x;
  int first = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = first; i < n; i += stride) a[i] = x[i] * 3;
  grid_barrier(&sync[0], &sync[1]);
  // phase 2 reads what other workgroups wrote in phase 1
  for (int i = first; i < n; i += stride) b[i] = a[(i + 17) % n] + a[n - 1 - i];
  grid_barrier(&sync[0], &sync[1]);
  for (int i = first; i < n; i += stride) a[i] = b[(i * 7) % n];
}

// ---- stream compaction with ds_append: one LDS counter per workgroup hands out slots. The
// instruction adds the number of active lanes and returns the old count to all of them; each
// lane adds its rank among the active lanes.

extern "C" __global__ void append_compact(const int* x, int threshold, int* kept, int* counts,
                                          int n) {
  __shared__ int counter;   // ds_append's counter: the LDS word that M0 addresses
  if (threadIdx.x == 0) counter = 0;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] > threshold) {
    int base = __builtin_amdgcn_ds_append(&counter);
    u64 active = __activemask();
    unsigned int below = __builtin_amdgcn_mbcnt_lo((unsigned int)active, 0u);
    below = __builtin_amdgcn_mbcnt_hi((unsigned int)(active >> 32), below);
    int slot = base + (int)below;
    kept[blockIdx.x * blockDim.x + slot] = x[i];
  }
  __syncthreads();
  if (threadIdx.x == 0) counts[blockIdx.x] = counter;
}

// ---- a large private array (well over 1 KiB a work-item) indexed by data

extern "C" __global__ void big_private_histogram(const int* keys, int* out, int per_item,
                                                 int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int hist[400];
  for (int j = 0; j < 400; ++j) hist[j] = j & 3;
  for (int k = 0; k < per_item; ++k) {
    int key = keys[i * per_item + k];
    hist[key % 400] += key;
    hist[(key * 13) % 400] ^= k;
  }
  int best = 0, where = 0;
  for (int j = 0; j < 400; ++j)
    if (hist[j] > best) {
      best = hist[j];
      where = j;
    }
  out[2 * i] = best;
  out[2 * i + 1] = where + hist[keys[i * per_item] % 400];
}

// ---- atomics through generic pointers: one noinline helper updates shared and global counters

__device__ __noinline__ int bump(int* counter, int amount) { return atomicAdd(counter, amount); }
__device__ __noinline__ void fbump(float* total, float amount) { atomicAdd(total, amount); }

extern "C" __global__ void generic_atomics(const int* x, int* block_counts, int* total,
                                           float* ftotal, int* tickets, int n) {
  __shared__ int local_count;
  __shared__ float local_sum;
  if (threadIdx.x == 0) {
    local_count = 0;
    local_sum = 0.0f;
  }
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    tickets[i] = bump(&local_count, x[i] & 7);   // a flat atomic on the LDS aperture
    fbump(&local_sum, (float)(x[i] & 15));
    bump(total, 1);                              // and on global memory
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    block_counts[blockIdx.x] = local_count;
    fbump(ftotal, local_sum);
  }
}

// ---- a workgroup of 1024 work-items with 64 KiB of LDS: 48 KiB static, 16 KiB dynamic

extern "C" __global__ void __launch_bounds__(1024) full_lds(const float* x, float* out, int n) {
  __shared__ float big[12288];
  extern __shared__ float rest[];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  float v = i < n ? x[i] : 0.0f;
  for (int k = t; k < 12288; k += blockDim.x) big[k] = (float)(k % 97);
  for (int k = t; k < 4096; k += blockDim.x) rest[k] = (float)(k % 89);
  __syncthreads();
  big[12287 - t] += v;
  rest[4095 - 4 * t] -= v;
  __syncthreads();
  if (i < n) out[i] = big[12287 - t] * 2.0f + rest[4095 - 4 * t] + big[t * 12] + rest[t * 4];
}

// ---- a defensive check that aborts the kernel: __builtin_trap in a rarely taken branch

extern "C" __global__ void checked_divide(const int* num, const int* den, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int d = den[i];
  if (d == 0) __builtin_trap();
  out[i] = num[i] / d;
}

// ---- lane gathers by selector within rows of 16 (gfx12 v_permlane16_b32, selectors in two
// SGPRs, four bits a lane), emulated with ds_bpermute on gfx942

extern "C" __global__ void row_gather(const int* x, unsigned int sel_lo, unsigned int sel_hi,
                                      int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? x[i] : -1;
  int lane = (int)__lane_id();
  int k = lane & 15;
  int src = (int)(((k < 8 ? sel_lo >> (4 * k) : sel_hi >> (4 * (k - 8)))) & 15);
#if defined(__gfx942__)
  int r = __builtin_amdgcn_ds_bpermute(((lane & ~15) | src) << 2, v);
#else
  // fetch-inactive set: clang may sink the gather into the i < n branch, and a lane past n must
  // still provide its value (-1) rather than the old operand
  int r = __builtin_amdgcn_permlane16(0, v, sel_lo, sel_hi, true, false);
#endif
  if (i < n) out[i] = r + 1000 * src;
}

// ---- indirect calls through a local table, with a struct passed by value and a double result

struct Segment {
  float a, b;
  int steps;
  double weight;
};
typedef double (*integrator)(Segment, float (*)(float));
__device__ __noinline__ float square(float x) { return x * x; }
__device__ __noinline__ float cube(float x) { return x * x * x; }
__device__ __noinline__ double left_sum(Segment s, float (*f)(float)) {
  double h = (double)(s.b - s.a) / s.steps, total = 0.0;
  for (int k = 0; k < s.steps; ++k) total += f(s.a + (float)(k * h));
  return total * h * s.weight;
}
__device__ __noinline__ double midpoint_sum(Segment s, float (*f)(float)) {
  double h = (double)(s.b - s.a) / s.steps, total = 0.0;
  for (int k = 0; k < s.steps; ++k) total += f(s.a + (float)((k + 0.5) * h));
  return total * h * s.weight;
}

extern "C" __global__ void indirect_struct_calls(const float* lo, const int* which, double* out,
                                                 int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  integrator methods[2] = {left_sum, midpoint_sum};
  float (*functions[2])(float) = {square, cube};
  Segment s = {lo[i], lo[i] + 1.0f, 4 + (i & 3), 0.5 + (i & 1)};
  out[i] = methods[which[i] & 1](s, functions[(which[i] >> 1) & 1]);
}

// ---- saturating 8- and 16-bit vector arithmetic (clamped v_add_u16 / v_pk_add_i16 / SDWA)

typedef short short4v __attribute__((ext_vector_type(4)));
typedef unsigned short ushort4v __attribute__((ext_vector_type(4)));

extern "C" __global__ void saturating_vectors(const short4v* a, const short4v* b,
                                              const uchar4* p, const uchar4* q, short4v* s_add,
                                              short4v* s_sub, ushort4v* u_add, uchar4* bytes,
                                              int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  short4v x = a[i], y = b[i];
  s_add[i] = __builtin_elementwise_add_sat(x, y);
  s_sub[i] = __builtin_elementwise_sub_sat(x, y);
  u_add[i] = __builtin_elementwise_add_sat(__builtin_bit_cast(ushort4v, x),
                                           __builtin_bit_cast(ushort4v, y));
  uchar4 u = p[i], v = q[i];
  bytes[2 * i] = __builtin_elementwise_add_sat(u, v);
  bytes[2 * i + 1] = __builtin_elementwise_sub_sat(u, v);
}
