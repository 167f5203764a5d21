// Relocatable device code, part 2: the device functions and the global the kernels of
// linked_kernels.rdc.hip use. noinline keeps them as real calls after link-time optimisation.
#include "corpus.h"

__device__ int device_counter = 0;

__device__ __noinline__ float lerp_table(const float* table, int size, float x) {
  float position = fminf(fmaxf(x, 0.0f), 1.0f) * (float)(size - 1);
  int k = min((int)position, size - 2);
  float frac = position - (float)k;
  return table[k] + frac * (table[k + 1] - table[k]);
}

__device__ __noinline__ unsigned int hash_mix(unsigned int x, unsigned int seed) {
  // A 32-bit integer mixer (xorshift-multiply rounds).
  x ^= seed;
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

__device__ __noinline__ int counter_bump(int amount) { return atomicAdd(&device_counter, amount); }
