// corpus-flags: -fgpu-flush-denormals-to-zero
// Precise float math in a kernel whose MODE flushes single-precision denormals: clang's
// correctly rounded division and square root switch denormals on around their scaling steps
// (s_denorm_mode or s_setreg of MODE.FP_DENORM) and off again; exp and log take their
// flushing-mode sequences.
#include "corpus.h"

extern "C" __global__ void ftz_precise(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a = x[i], b = y[i];
  out[5 * i + 0] = a / b;
  out[5 * i + 1] = sqrtf(b);
  out[5 * i + 2] = expf(a);
  out[5 * i + 3] = logf(b);
  out[5 * i + 4] = 1.0f / b;
}
