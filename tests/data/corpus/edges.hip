// Correctly rounded division, square root and fma where rounding is hardest: divisors with
// every mantissa bit set, quotients at the bottom of the normal range and in the denormals,
// operands near the top of the exponent range (clang's Newton-Raphson sequences with
// v_div_scale / v_div_fmas / v_div_fixup and the fused multiply-adds between them).
#include "corpus.h"

extern "C" __global__ void div_edges(const float* a, const float* b, const float* c,
                                     const double* x, const double* y, const double* z,
                                     float* out32, double* out64, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out32[3 * i] = a[i] / b[i];
  out32[3 * i + 1] = __builtin_fmaf(a[i], b[i], c[i]);
  out32[3 * i + 2] = __builtin_sqrtf(a[i]);
  out64[3 * i] = x[i] / y[i];
  out64[3 * i + 1] = fma(x[i], y[i], z[i]);
  out64[3 * i + 2] = sqrt(x[i]);
}
