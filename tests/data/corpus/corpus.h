// corpus.h: HIP device names the fidelity corpus uses beyond hsapy_hip.h (which the build
// force-includes). Everything maps onto clang's AMDGPU builtins, LLVM intrinsics or, for the
// math library, ROCm's ocml bitcode (linked only into sources that define CORPUS_OCML), the
// way HIP's own headers map them. Semantics follow the HIP/CUDA programming guides.
#pragma once

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned char uchar4 __attribute__((ext_vector_type(4)));
typedef double double2 __attribute__((ext_vector_type(2)));

// ---- warp vote: a 64-bit mask whatever the wave size (the upper half is 0 in wave32)

static __device__ __forceinline__ u64 __ballot(int predicate) {
  return __builtin_amdgcn_ballot_w64(predicate != 0);
}
static __device__ __forceinline__ u64 __activemask() { return __builtin_amdgcn_read_exec(); }
static __device__ __forceinline__ int __any(int predicate) { return __ballot(predicate) != 0; }
static __device__ __forceinline__ int __all(int predicate) {
  return __ballot(predicate) == __activemask();
}

// ---- integer helpers

static __device__ __forceinline__ int abs(int x) { return x < 0 ? -x : x; }
static __device__ __forceinline__ i64 llabs(i64 x) { return x < 0 ? -x : x; }

// ---- bit manipulation

static __device__ __forceinline__ int __popc(unsigned int x) { return __builtin_popcount(x); }
static __device__ __forceinline__ int __popcll(u64 x) { return __builtin_popcountll(x); }
static __device__ __forceinline__ int __clz(int x) {
  return x == 0 ? 32 : __builtin_clz((unsigned int)x);
}
static __device__ __forceinline__ int __clzll(i64 x) {
  return x == 0 ? 64 : __builtin_clzll((u64)x);
}
// 1-based index of the least significant set bit, 0 for 0.
static __device__ __forceinline__ int __ffs(unsigned int x) { return __builtin_ffs((int)x); }
static __device__ __forceinline__ int __ffsll(u64 x) { return __builtin_ffsll((i64)x); }
static __device__ __forceinline__ unsigned int __brev(unsigned int x) {
  return __builtin_bitreverse32(x);
}
static __device__ __forceinline__ u64 __brevll(u64 x) { return __builtin_bitreverse64(x); }
static __device__ __forceinline__ unsigned int __umulhi(unsigned int a, unsigned int b) {
  return (unsigned int)(((u64)a * b) >> 32);
}
static __device__ __forceinline__ int __mulhi(int a, int b) {
  return (int)(((i64)a * b) >> 32);
}
static __device__ __forceinline__ u64 __umul64hi(u64 a, u64 b) {
  return (u64)(((unsigned __int128)a * b) >> 64);
}
static __device__ __forceinline__ i64 __mul64hi(i64 a, i64 b) {
  return (i64)(((__int128)a * b) >> 64);
}
// __byte_perm: byte n of the result is byte ((s >> 4n) & 7) of the 64-bit value y:x (x holds
// bytes 0-3); CUDA's definition, which uses only the low three bits of each selector nibble.
static __device__ __forceinline__ unsigned int __byte_perm(unsigned int x, unsigned int y,
                                                           unsigned int s) {
  u64 bytes = ((u64)y << 32) | x;
  unsigned int result = 0;
  for (int n = 0; n < 4; ++n) {
    unsigned int selected = (unsigned int)(bytes >> (8 * ((s >> (4 * n)) & 7))) & 0xffu;
    result |= selected << (8 * n);
  }
  return result;
}
// Sums of absolute differences and halving adds, without overflow in the intermediate sum:
// __sad/__usad are |x - y| + z; __hadd rounds down, __rhadd up (CUDA's integer intrinsics).
static __device__ __forceinline__ unsigned int __sad(int x, int y, unsigned int z) {
  return (x > y ? (unsigned int)x - (unsigned int)y : (unsigned int)y - (unsigned int)x) + z;
}
static __device__ __forceinline__ unsigned int __usad(unsigned int x, unsigned int y,
                                                      unsigned int z) {
  return (x > y ? x - y : y - x) + z;
}
static __device__ __forceinline__ int __hadd(int x, int y) { return (int)(((i64)x + y) >> 1); }
static __device__ __forceinline__ int __rhadd(int x, int y) {
  return (int)(((i64)x + y + 1) >> 1);
}
static __device__ __forceinline__ unsigned int __uhadd(unsigned int x, unsigned int y) {
  return (unsigned int)(((u64)x + y) >> 1);
}
static __device__ __forceinline__ unsigned int __urhadd(unsigned int x, unsigned int y) {
  return (unsigned int)(((u64)x + y + 1) >> 1);
}
// 24-bit multiplies: only the low 24 bits of each operand take part (sign-extended for
// __mul24); the low 32 bits of the product are returned.
static __device__ __forceinline__ int __mul24(int a, int b) {
  int sa = (int)((unsigned int)a << 8) >> 8, sb = (int)((unsigned int)b << 8) >> 8;
  return (int)((unsigned int)sa * (unsigned int)sb);
}
static __device__ __forceinline__ unsigned int __umul24(unsigned int a, unsigned int b) {
  return (a & 0xffffffu) * (b & 0xffffffu);
}

// ---- shuffles of 64-bit values: two 32-bit shuffles, as HIP does

#define CORPUS_SHUFFLE64(TYPE)                                                              \
  static __device__ __forceinline__ TYPE __shfl_down(TYPE v, unsigned int d,                \
                                                     int width = warpSize) {                \
    u64 bits = __builtin_bit_cast(u64, v);                                                  \
    int lo = __shfl_down((int)bits, d, width), hi = __shfl_down((int)(bits >> 32), d, width); \
    return __builtin_bit_cast(TYPE, ((u64)(unsigned int)hi << 32) | (unsigned int)lo);      \
  }                                                                                         \
  static __device__ __forceinline__ TYPE __shfl_xor(TYPE v, int m, int width = warpSize) {  \
    u64 bits = __builtin_bit_cast(u64, v);                                                  \
    int lo = __shfl_xor((int)bits, m, width), hi = __shfl_xor((int)(bits >> 32), m, width); \
    return __builtin_bit_cast(TYPE, ((u64)(unsigned int)hi << 32) | (unsigned int)lo);      \
  }                                                                                         \
  static __device__ __forceinline__ TYPE __shfl(TYPE v, int lane, int width = warpSize) {   \
    u64 bits = __builtin_bit_cast(u64, v);                                                  \
    int lo = __shfl((int)bits, lane, width), hi = __shfl((int)(bits >> 32), lane, width);   \
    return __builtin_bit_cast(TYPE, ((u64)(unsigned int)hi << 32) | (unsigned int)lo);      \
  }
CORPUS_SHUFFLE64(double)
CORPUS_SHUFFLE64(i64)
CORPUS_SHUFFLE64(u64)
#undef CORPUS_SHUFFLE64

// __match_any: the mask of active lanes whose value equals this lane's. Each round the first
// remaining lane's value is broadcast; the lanes holding it take their ballot and leave.
static __device__ __forceinline__ u64 __match_any(int value) {
  u64 result = 0;
  for (;;) {
    int leader = __builtin_amdgcn_readfirstlane(value);
    u64 same = __ballot(value == leader);
    if (value == leader) {
      result = same;
      break;
    }
  }
  return result;
}

// ---- block-wide votes: __syncthreads_count/_and/_or

// HIP's headers call ockl's work-group reductions; the packaged ockl (5.2.3) predates gfx12,
// and at -O0 its gfx9 wave-shift DPP path is not folded away and the backend rejects it. So
// the votes are written here: a ballot per wave, one LDS counter, barriers around it. Every
// work-item of the block must call them, as for __syncthreads.
static __device__ __forceinline__ int corpus_block_count(int predicate) {
  __shared__ int total;
  bool first = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
  __syncthreads();   // the previous vote's readers are done with total
  if (first) total = 0;
  __syncthreads();
  u64 votes = __ballot(predicate);
  u64 active = __activemask();
  if (__builtin_amdgcn_mbcnt_hi((unsigned int)(active >> 32),
                                __builtin_amdgcn_mbcnt_lo((unsigned int)active, 0u)) == 0)
    atomicAdd(&total, __builtin_popcountll(votes));
  __syncthreads();
  return total;
}
static __device__ __forceinline__ int __syncthreads_count(int predicate) {
  return corpus_block_count(predicate != 0);
}
static __device__ __forceinline__ int __syncthreads_and(int predicate) {
  return corpus_block_count(predicate == 0) == 0;
}
static __device__ __forceinline__ int __syncthreads_or(int predicate) {
  return corpus_block_count(predicate != 0) != 0;
}

// ---- atomics hsapy_hip.h leaves out (device scope, relaxed, like HIP's)

#define CORPUS_ATOMIC(NAME, BUILTIN, TYPE)                                                  \
  static __device__ __forceinline__ TYPE NAME(TYPE* address, TYPE value) {                 \
    return BUILTIN(address, value, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);            \
  }
CORPUS_ATOMIC(atomicAdd, __hip_atomic_fetch_add, double)
CORPUS_ATOMIC(atomicMin, __hip_atomic_fetch_min, u64)
CORPUS_ATOMIC(atomicMax, __hip_atomic_fetch_max, u64)
CORPUS_ATOMIC(atomicMin, __hip_atomic_fetch_min, i64)
CORPUS_ATOMIC(atomicMax, __hip_atomic_fetch_max, i64)
CORPUS_ATOMIC(atomicExch, __hip_atomic_exchange, u64)
CORPUS_ATOMIC(atomicAnd, __hip_atomic_fetch_and, u64)
CORPUS_ATOMIC(atomicOr, __hip_atomic_fetch_or, u64)
CORPUS_ATOMIC(atomicXor, __hip_atomic_fetch_xor, u64)
CORPUS_ATOMIC(atomicAnd, __hip_atomic_fetch_and, int)
CORPUS_ATOMIC(atomicOr, __hip_atomic_fetch_or, int)
CORPUS_ATOMIC(atomicXor, __hip_atomic_fetch_xor, int)
#undef CORPUS_ATOMIC

static __device__ __forceinline__ u64 atomicCAS(u64* address, u64 expected, u64 desired) {
  __hip_atomic_compare_exchange_strong(address, &expected, desired, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  return expected;
}
// atomicInc: old >= limit ? 0 : old + 1 (CUDA's wrap-around counter).
static __device__ __forceinline__ unsigned int atomicInc(unsigned int* address,
                                                         unsigned int limit) {
  return __builtin_amdgcn_atomic_inc32(address, limit, __ATOMIC_RELAXED, "agent");
}

// ---- half and bfloat16

typedef _Float16 __half;
typedef _Float16 __half2 __attribute__((ext_vector_type(2)));
typedef __bf16 __hip_bfloat16;

static __device__ __forceinline__ float __half2float(__half h) { return (float)h; }
static __device__ __forceinline__ __half __float2half(float f) { return (__half)f; }
static __device__ __forceinline__ __half2 __halves2half2(__half a, __half b) {
  return __half2{a, b};
}
static __device__ __forceinline__ __half2 __hadd2(__half2 a, __half2 b) { return a + b; }
static __device__ __forceinline__ __half2 __hmul2(__half2 a, __half2 b) { return a * b; }
static __device__ __forceinline__ __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  return __builtin_elementwise_fma(a, b, c);
}
static __device__ __forceinline__ __half __hmax(__half a, __half b) {
  return __builtin_fmaxf16(a, b);
}
static __device__ __forceinline__ float __bfloat162float(__hip_bfloat16 b) { return (float)b; }
static __device__ __forceinline__ __hip_bfloat16 __float2bfloat16(float f) {
  return (__hip_bfloat16)f;
}

// ---- float <-> int with explicit rounding (HIP's __float2int_rn family)

static __device__ __forceinline__ int __float2int_rn(float x) {
  return (int)__builtin_rintf(x);
}
static __device__ __forceinline__ int __float2int_rd(float x) {
  return (int)__builtin_floorf(x);
}
static __device__ __forceinline__ int __float2int_ru(float x) {
  return (int)__builtin_ceilf(x);
}
static __device__ __forceinline__ int __float2int_rz(float x) { return (int)x; }
static __device__ __forceinline__ float __int_as_float(int x) {
  return __builtin_bit_cast(float, x);
}
static __device__ __forceinline__ int __float_as_int(float x) {
  return __builtin_bit_cast(int, x);
}

// ---- double precision lowered by the backend

static __device__ __forceinline__ double sqrt(double x) { return __builtin_sqrt(x); }
static __device__ __forceinline__ double fma(double a, double b, double c) {
  return __builtin_fma(a, b, c);
}
static __device__ __forceinline__ double fabs(double x) { return __builtin_fabs(x); }
static __device__ __forceinline__ double floor(double x) { return __builtin_floor(x); }

// ---- the math library: ROCm's ocml, as HIP's math headers call it

#ifdef CORPUS_OCML
extern "C" {
__device__ float __ocml_sin_f32(float);
__device__ float __ocml_cos_f32(float);
__device__ float __ocml_tan_f32(float);
__device__ float __ocml_pow_f32(float, float);
__device__ float __ocml_erf_f32(float);
__device__ float __ocml_erfc_f32(float);
__device__ float __ocml_tanh_f32(float);
__device__ float __ocml_rsqrt_f32(float);
__device__ float __ocml_log1p_f32(float);
__device__ float __ocml_atan2_f32(float, float);
__device__ double __ocml_exp_f64(double);
__device__ double __ocml_log_f64(double);
__device__ double __ocml_sin_f64(double);
__device__ double __ocml_pow_f64(double, double);
__device__ double __ocml_cbrt_f64(double);
// printf and the device heap, as HIP's headers declare them (ockl implements both over the
// hostcall buffer and the heap the runtime passes as hidden arguments)
__device__ int printf(const char*, ...);
__device__ void* __ockl_dm_alloc(unsigned long);
__device__ void __ockl_dm_dealloc(void*);
}
static __device__ __forceinline__ void* malloc(unsigned long size) { return __ockl_dm_alloc(size); }
static __device__ __forceinline__ void free(void* p) { __ockl_dm_dealloc(p); }
static __device__ __forceinline__ float sinf(float x) { return __ocml_sin_f32(x); }
static __device__ __forceinline__ float cosf(float x) { return __ocml_cos_f32(x); }
static __device__ __forceinline__ float tanf(float x) { return __ocml_tan_f32(x); }
static __device__ __forceinline__ float powf(float x, float y) { return __ocml_pow_f32(x, y); }
static __device__ __forceinline__ float erff(float x) { return __ocml_erf_f32(x); }
static __device__ __forceinline__ float erfcf(float x) { return __ocml_erfc_f32(x); }
static __device__ __forceinline__ float tanhf(float x) { return __ocml_tanh_f32(x); }
static __device__ __forceinline__ float log1pf(float x) { return __ocml_log1p_f32(x); }
static __device__ __forceinline__ float atan2f(float y, float x) { return __ocml_atan2_f32(y, x); }
static __device__ __forceinline__ float __frsqrt_rn(float x) { return __ocml_rsqrt_f32(x); }
static __device__ __forceinline__ double exp(double x) { return __ocml_exp_f64(x); }
static __device__ __forceinline__ double log(double x) { return __ocml_log_f64(x); }
static __device__ __forceinline__ double sin(double x) { return __ocml_sin_f64(x); }
static __device__ __forceinline__ double pow(double x, double y) { return __ocml_pow_f64(x, y); }
static __device__ __forceinline__ double cbrt(double x) { return __ocml_cbrt_f64(x); }
extern "C" {
// Work-item geometry over the hidden arguments (HIP's blockDim and gridDim call these).
__device__ unsigned long __ockl_get_global_id(unsigned int);
__device__ unsigned long __ockl_get_global_size(unsigned int);
__device__ unsigned long __ockl_get_local_id(unsigned int);
__device__ unsigned long __ockl_get_local_size(unsigned int);
__device__ unsigned long __ockl_get_enqueued_local_size(unsigned int);
__device__ unsigned long __ockl_get_group_id(unsigned int);
__device__ unsigned long __ockl_get_num_groups(unsigned int);
__device__ unsigned long __ockl_get_local_linear_id();
__device__ unsigned long __ockl_get_global_linear_id();
__device__ unsigned int __ockl_get_work_dim();
// fprintf(stderr, ...) over the hostcall buffer: a message is begun and appended to piece by
// piece (strings with their terminating NUL, up to seven 64-bit arguments), the last piece
// flagged.
__device__ unsigned long __ockl_fprintf_stderr_begin();
__device__ unsigned long __ockl_fprintf_append_string_n(unsigned long, const char*,
                                                        unsigned long, unsigned int);
__device__ unsigned long __ockl_fprintf_append_args(unsigned long, unsigned int, unsigned long,
                                                    unsigned long, unsigned long, unsigned long,
                                                    unsigned long, unsigned long, unsigned long,
                                                    unsigned int);
}
static __device__ __forceinline__ unsigned long corpus_strlen(const char* s) {
  unsigned long length = 0;
  while (s[length] != 0) ++length;
  return length;
}
// A failed device assert prints "<file>:<line>: <function>: Device-side assertion `<expr>'
// failed." to stderr through the hostcall buffer, then traps, which stops the queue.
extern "C" __device__ __noinline__ __attribute__((weak)) void __assert_fail(
    const char* assertion, const char* file, unsigned int line, const char* function) {
  const char format[] = "%s:%u: %s: Device-side assertion `%s' failed.\n";
  unsigned long message = __ockl_fprintf_stderr_begin();
  message = __ockl_fprintf_append_string_n(message, format, sizeof(format), 0);
  message = __ockl_fprintf_append_string_n(message, file, corpus_strlen(file) + 1, 0);
  message = __ockl_fprintf_append_args(message, 1, line, 0, 0, 0, 0, 0, 0, 0);
  message = __ockl_fprintf_append_string_n(message, function, corpus_strlen(function) + 1, 0);
  __ockl_fprintf_append_string_n(message, assertion, corpus_strlen(assertion) + 1, 1);
  __builtin_trap();
}
#define assert(condition) \
  ((condition) ? (void)0 : __assert_fail(#condition, __FILE__, __LINE__, __func__))
#endif
