// Relocatable device code, part 1: kernels that call device functions defined in another
// translation unit (linked_library.rdc.hip), resolved by the device linker.
#include "corpus.h"

extern __device__ float lerp_table(const float* table, int size, float x);
extern __device__ unsigned int hash_mix(unsigned int x, unsigned int seed);
extern __device__ int counter_bump(int amount);
extern __device__ int device_counter;

extern "C" __global__ void linked_lerp(const float* x, const float* table, float* out, int size,
                                       int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = lerp_table(table, size, x[i]);
}

extern "C" __global__ void linked_hash(unsigned int* out, unsigned int seed, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = hash_mix((unsigned int)i, seed);
}

// A global variable defined in the other file, updated atomically; a second kernel reads it.
extern "C" __global__ void linked_counter(int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) counter_bump(i % 5);
}

extern "C" __global__ void linked_counter_read(int* out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = device_counter;
}
