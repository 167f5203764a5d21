// Real calls: noinline device functions (a chain, and one with a large struct returned through
// memory), recursion, function pointers in a table, and C++ virtual functions.
#include "corpus.h"

__device__ __noinline__ float smooth_step(float edge0, float edge1, float x) {
  float t = fminf(fmaxf((x - edge0) / (edge1 - edge0), 0.0f), 1.0f);
  return t * t * (3.0f - 2.0f * t);
}

__device__ __noinline__ float remap(float x, const float* table, int size) {
  // Calls another noinline function: a chain two deep, arguments and results in VGPRs.
  float s = smooth_step(-2.0f, 2.0f, x);
  int k = min((int)(s * (size - 1)), size - 2);
  float frac = s * (size - 1) - (float)k;
  return table[k] * (1.0f - frac) + table[k + 1] * frac;
}

extern "C" __global__ void call_chain(const float* x, const float* table, float* out, int size,
                                      int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = remap(x[i], table, size);
}

// A 48-byte struct returned by value from a noinline function: returned through the stack.
struct Stats {
  double sum, sum_sq, min, max;
  long long count, first_negative;
};

__device__ __noinline__ Stats window_stats(const double* v, int start, int len) {
  Stats s = {0.0, 0.0, 1e300, -1e300, 0, -1};
  for (int j = 0; j < len; ++j) {
    double x = v[start + j];
    s.sum += x;
    s.sum_sq += x * x;
    s.min = x < s.min ? x : s.min;
    s.max = x > s.max ? x : s.max;
    s.count += 1;
    if (x < 0.0 && s.first_negative < 0) s.first_negative = j;
  }
  return s;
}

extern "C" __global__ void struct_return(const double* v, double* out, long long* idx, int window,
                                         int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + window > n) return;
  Stats s = window_stats(v, i, window);
  out[3 * i] = s.sum / (double)s.count;
  out[3 * i + 1] = s.sum_sq - s.sum * s.sum / (double)s.count;
  out[3 * i + 2] = s.max - s.min;
  idx[i] = s.first_negative;
}

// Recursion: the compiler cannot inline it, so the stack grows per call (dynamic stack). The
// depth stays within HIP's default stack of 1 KiB per work-item even at -O0 (80-byte frames).
__device__ int gcd_recursive(int a, int b) { return b == 0 ? a : gcd_recursive(b, a % b); }

__device__ unsigned int ackermann_small(unsigned int m, unsigned int n) {
  if (m == 0) return n + 1;
  if (n == 0) return ackermann_small(m - 1, 1);
  return ackermann_small(m - 1, ackermann_small(m, n - 1));
}

extern "C" __global__ void recursion(const int* a, const int* b, int* g, unsigned int* ack,
                                     int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  g[i] = gcd_recursive(abs(a[i]), abs(b[i]));
  ack[i] = ackermann_small((unsigned int)(i % 3), (unsigned int)(i % 2));
}

// Function pointers chosen per element from a table in device memory.
typedef float (*unary_op)(float);
__device__ float op_negate(float x) { return -x; }
__device__ float op_square(float x) { return x * x; }
__device__ float op_half(float x) { return x * 0.5f; }
__device__ float op_clamp(float x) { return fminf(fmaxf(x, -1.0f), 1.0f); }
__device__ unary_op op_table[4] = {op_negate, op_square, op_half, op_clamp};

extern "C" __global__ void function_pointers(const float* x, const int* which, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unary_op f = op_table[which[i] & 3];
  unary_op g = op_table[(which[i] >> 2) & 3];
  out[i] = g(f(x[i]));
}

// Virtual functions: objects built on the device, called through their vtables. A pure virtual
// slot points at __cxa_pure_virtual, which HIP's device library provides (it traps).
extern "C" __device__ __attribute__((noinline)) void __cxa_pure_virtual() { __builtin_trap(); }

struct Shape {
  __device__ virtual float area() const = 0;
  __device__ virtual float perimeter() const = 0;
};
struct Circle : Shape {
  float r;
  __device__ Circle(float r_) : r(r_) {}
  __device__ float area() const override { return 3.14159265f * r * r; }
  __device__ float perimeter() const override { return 2.0f * 3.14159265f * r; }
};
struct Rect : Shape {
  float w, h;
  __device__ Rect(float w_, float h_) : w(w_), h(h_) {}
  __device__ float area() const override { return w * h; }
  __device__ float perimeter() const override { return 2.0f * (w + h); }
};

__device__ __noinline__ float describe(const Shape& s) { return s.area() + 0.001f * s.perimeter(); }

extern "C" __global__ void virtual_calls(const float* p, const int* kind, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  Circle c(p[2 * i]);
  Rect r(p[2 * i], p[2 * i + 1]);
  const Shape& s = kind[i] ? (const Shape&)r : (const Shape&)c;
  out[i] = describe(s);
}
