#define CORPUS_OCML
// The math library as HIP code calls it: single- and double-precision functions from ROCm's
// ocml (sinf, cosf, tanf, powf, erff, erfcf, tanhf, log1pf, atan2f, __frsqrt_rn, exp, log, sin,
// pow, cbrt) next to the ones the backend lowers itself (expf, logf, sqrtf, fmaf), and the
// host services the simulator does not provide (printf, malloc), which must stop the queue with
// an error that names them.
#include "corpus.h"

extern "C" __global__ void float_math(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a = x[i], b = y[i];
  float* o = out + 12 * i;
  o[0] = sinf(a);
  o[1] = cosf(a);
  o[2] = tanf(a * 0.25f);
  o[3] = expf(b);
  o[4] = logf(fabsf(a) + 1e-3f);
  o[5] = powf(fabsf(a) + 0.5f, b);
  o[6] = erff(b);
  o[7] = erfcf(b);
  o[8] = tanhf(a);
  o[9] = __frsqrt_rn(fabsf(a) + 0.25f);
  o[10] = fmaf(a, b, sqrtf(fabsf(b)));
  o[11] = atan2f(a, b) + log1pf(fabsf(b));
}

extern "C" __global__ void double_math(const double* x, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double a = x[i];
  double* o = out + 5 * i;
  o[0] = exp(a);
  o[1] = log(fabs(a) + 1e-6);
  o[2] = sin(a * 10.0);
  o[3] = pow(fabs(a) + 0.1, 2.5);
  o[4] = cbrt(a);
}

// Black-Scholes call and put prices (the classic SDK sample), with the normal CDF from erfcf.
static __device__ __forceinline__ float normal_cdf(float d) {
  return 0.5f * erfcf(-d * 0.70710678118654752f);
}

extern "C" __global__ void black_scholes(const float* spot, const float* strike,
                                         const float* years, float* call, float* put, float rate,
                                         float volatility, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = spot[i], x = strike[i], t = years[i];
  float root_t = sqrtf(t);
  float d1 = (logf(s / x) + (rate + 0.5f * volatility * volatility) * t) / (volatility * root_t);
  float d2 = d1 - volatility * root_t;
  float discount = expf(-rate * t);
  call[i] = s * normal_cdf(d1) - x * discount * normal_cdf(d2);
  put[i] = x * discount * normal_cdf(-d2) - s * normal_cdf(-d1);
}

extern "C" __global__ void printf_values(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  printf("x[%d] = %f\n", i, x[i]);
  out[i] = 2.0f * x[i];
}

extern "C" __global__ void heap_scratch(const int* x, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int* p = (int*)malloc(4 * sizeof(int));
  for (int j = 0; j < 4; ++j) p[j] = x[i] + j;
  out[i] = p[0] + p[3];
  free(p);
}
