// Everyday kernels: element-wise maps, 2D indexing, arguments by value, dynamic shared memory,
// integer division by run-time divisors, switch statements, private arrays, templates.
#include "corpus.h"

// y = a * x + y, the first kernel of every tutorial.
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// A grid-stride loop: a fixed small grid covers any n.
extern "C" __global__ void grid_stride_square(const float* in, float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    out[i] = in[i] * in[i] - 1.0f;
}

// C = A + 2B on a 2D grid of 2D blocks, row-major with a pitch (in elements).
extern "C" __global__ void matrix_add_2d(const float* a, const float* b, float* c, int rows,
                                         int cols, int pitch) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int i = row * pitch + col;
  if (row < rows && col < cols) c[i] = a[i] + 2.0f * b[i];
}

// A struct passed by value: kernargs hold its bytes, with the compiler's padding.
struct Motion {
  float dt;
  int steps;
  double damping;
  float gravity[3];
  unsigned char flags;
};

extern "C" __global__ void integrate_particles(Motion m, const float* pos, const float* vel,
                                               float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = pos[3 * i], y = pos[3 * i + 1], z = pos[3 * i + 2];
  float vx = vel[3 * i], vy = vel[3 * i + 1], vz = vel[3 * i + 2];
  float damp = (float)m.damping;
  for (int s = 0; s < m.steps; ++s) {
    vx = vx * damp + m.gravity[0] * m.dt;
    vy = vy * damp + m.gravity[1] * m.dt;
    vz = vz * damp + m.gravity[2] * m.dt;
    x += vx * m.dt;
    y += vy * m.dt;
    z += vz * m.dt;
    if ((m.flags & 1) && y < 0.0f) {  // bounce off the floor
      y = -y;
      vy = -vy;
    }
  }
  out[3 * i] = x;
  out[3 * i + 1] = y;
  out[3 * i + 2] = z;
}

// Reverse each block's slice through dynamic shared memory (size given at launch).
extern "C" __global__ void reverse_blocks(const int* in, int* out, int n) {
  extern __shared__ int stage[];
  int base = blockIdx.x * blockDim.x;
  int t = threadIdx.x;
  int count = min((int)blockDim.x, n - base);
  if (t < count) stage[t] = in[base + t];
  __syncthreads();
  if (t < count) out[base + t] = stage[count - 1 - t];
}

// Signed and unsigned 32-bit division and remainder by divisors known only at run time.
extern "C" __global__ void divide_by_runtime(const int* num, const int* den, int* quot, int* rem,
                                             unsigned int* uquot, unsigned int* urem, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int a = num[i], b = den[i];
  quot[i] = a / b;
  rem[i] = a % b;
  unsigned int ua = (unsigned int)a, ub = (unsigned int)b;
  uquot[i] = ua / ub;
  urem[i] = ua % ub;
}

// A dense switch: clang emits a jump table (s_setpc through a table) or a compare tree.
extern "C" __global__ void opcode_switch(const int* ops, const float* a, const float* b,
                                         float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i], r;
  switch (ops[i]) {
    case 0: r = x + y; break;
    case 1: r = x - y; break;
    case 2: r = x * y; break;
    case 3: r = fmaxf(x, y); break;
    case 4: r = fminf(x, y); break;
    case 5: r = x * 0.5f + y; break;
    case 6: r = -x; break;
    case 7: r = fabsf(x - y); break;
    case 8: r = x * x; break;
    default: r = 42.0f; break;
  }
  out[i] = r;
}

// A private array indexed by data: it lives in scratch memory.
extern "C" __global__ void private_lookup(const int* index, const float* seed, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float table[24];
  float s = seed[i];
  for (int k = 0; k < 24; ++k) table[k] = s * (float)k + (float)(k & 3);
  // A running permutation so the compiler cannot fold the array into registers.
  for (int k = 0; k < 24; k += 3) {
    int j = (index[i] + k) % 24;
    float tmp = table[j];
    table[j] = table[k];
    table[k] = tmp;
  }
  out[i] = table[index[i] % 24] + table[(index[i] * 7) % 24];
}

// One template, three element types.
template <typename T>
__device__ void axpby(const T* x, const T* y, T* out, T alpha, T beta, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + beta * y[i];
}
extern "C" __global__ void axpby_f32(const float* x, const float* y, float* out, float a, float b,
                                     int n) {
  axpby<float>(x, y, out, a, b, n);
}
extern "C" __global__ void axpby_f64(const double* x, const double* y, double* out, double a,
                                     double b, int n) {
  axpby<double>(x, y, out, a, b, n);
}
extern "C" __global__ void axpby_i32(const int* x, const int* y, int* out, int a, int b, int n) {
  axpby<int>(x, y, out, a, b, n);
}
