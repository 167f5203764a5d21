// corpus-flags: -ffast-math -fgpu-flush-denormals-to-zero -mno-amdgpu-ieee
// The most aggressive float build HIP code uses: fast math, f32 denormals flushed and the
// IEEE mode bit off (-mno-amdgpu-ieee), which lets clang fold scaling by 2, 4 or 0.5 into an
// instruction's output modifier and a clamp to [0, 1] into its clamp bit.
#include "corpus.h"

extern "C" __global__ void output_modifiers(const float* x, const float* y, const float* z,
                                            float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a = x[i], b = y[i], c = z[i];
  out[6 * i + 0] = (a + b) * 2.0f;
  out[6 * i + 1] = (a * b) * 0.5f;
  out[6 * i + 2] = (a - b) * 4.0f;
  out[6 * i + 3] = fminf(fmaxf(a * b + c, 0.0f), 1.0f);
  out[6 * i + 4] = fminf(fmaxf(a + c, 0.0f), 1.0f) * 2.0f;
  out[6 * i + 5] = fmaxf(a, c) - fminf(b, c);
}
