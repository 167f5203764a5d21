// Host (CPU) emulation of the HIP device subset the operator sources use, for
// tests/unit/test_operators_ref_host.py: every work-item is a std::thread, __syncthreads is a
// std::barrier over the workgroup, shuffles exchange through a per-wave slot array between two
// wave barriers, and the wave size is a run-time value (32 or 64), so the same kernel text is
// checked at both wave sizes before any GPU or ISA interpreter runs it. Test-only.
#pragma once
#include <atomic>
#include <barrier>
#include <cmath>
#include <math.h>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static  // one workgroup runs at a time, so static storage is "the LDS"

struct hsapy_dim3 {
  unsigned int x, y, z;
};

inline thread_local hsapy_dim3 threadIdx;
inline thread_local hsapy_dim3 blockIdx;
inline thread_local unsigned int hsapy_linear_id;
inline hsapy_dim3 blockDim;
inline hsapy_dim3 gridDim;
inline int warpSize = 64;

constexpr unsigned int HSAPY_LDS_FLOATS = 16384;  // 64 KiB of dynamic LDS
inline float hsapy_lds[HSAPY_LDS_FLOATS];
inline float hsapy_slots[1024];
inline std::barrier<>* hsapy_block_barrier = nullptr;
inline std::vector<std::unique_ptr<std::barrier<>>> hsapy_wave_barriers;

typedef float float4 __attribute__((vector_size(16)));

inline void __syncthreads() { hsapy_block_barrier->arrive_and_wait(); }

inline float atomicAdd(float* address, float value) {
  return std::atomic_ref<float>(*address).fetch_add(value);
}

inline float hsapy_exchange(float var, int source_lane_offset_or_self, bool self) {
  const unsigned int id = hsapy_linear_id;
  std::barrier<>& wave = *hsapy_wave_barriers[id / warpSize];
  hsapy_slots[id] = var;
  wave.arrive_and_wait();
  const float result = self ? var : hsapy_slots[id - id % warpSize + source_lane_offset_or_self];
  wave.arrive_and_wait();
  return result;
}

// Same lane arithmetic as HIP's __shfl_down / __shfl_xor.
inline float __shfl_down(float var, unsigned int delta, int width = warpSize) {
  const int self = (int)(hsapy_linear_id % warpSize);
  const bool keep = ((self & (width - 1)) + (int)delta) >= width;
  return hsapy_exchange(var, self + (int)delta, keep);
}

inline float __shfl_xor(float var, int mask, int width = warpSize) {
  const int self = (int)(hsapy_linear_id % warpSize);
  const int index = self ^ mask;
  const bool keep = index >= ((self + width) & ~(width - 1));
  return hsapy_exchange(var, index, keep);
}

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
// expf, sqrtf and fmaxf come from <cmath> (the C library's float functions).

// Run `body` for every work-item of every workgroup, one workgroup at a time, with one thread
// per work-item of a workgroup reused across workgroups. Dynamic LDS starts NaN in every
// workgroup, so reading before writing shows up.
struct hsapy_reset_lds {
  void operator()() noexcept {
    std::fill(hsapy_lds, hsapy_lds + HSAPY_LDS_FLOATS, std::numeric_limits<float>::quiet_NaN());
  }
};

inline void hsapy_launch(hsapy_dim3 blocks, hsapy_dim3 block, int wave_size,
                         const std::function<void()>& body) {
  blockDim = block;
  gridDim = blocks;
  warpSize = wave_size;
  const unsigned int size = block.x * block.y * block.z;
  hsapy_reset_lds{}();
  std::barrier<> block_barrier(size);
  std::barrier<hsapy_reset_lds> between_blocks(size);
  hsapy_block_barrier = &block_barrier;
  hsapy_wave_barriers.clear();
  for (unsigned int first = 0; first < size; first += wave_size) {
    const unsigned int lanes = std::min<unsigned int>(wave_size, size - first);
    hsapy_wave_barriers.push_back(std::make_unique<std::barrier<>>(lanes));
  }
  std::vector<std::thread> threads;
  threads.reserve(size);
  for (unsigned int id = 0; id < size; ++id) {
    threads.emplace_back([=, &body, &between_blocks] {
      hsapy_linear_id = id;
      threadIdx = {id % block.x, (id / block.x) % block.y, id / (block.x * block.y)};
      for (unsigned int bz = 0; bz < blocks.z; ++bz)
        for (unsigned int by = 0; by < blocks.y; ++by)
          for (unsigned int bx = 0; bx < blocks.x; ++bx) {
            blockIdx = {bx, by, bz};
            body();
            between_blocks.arrive_and_wait();
          }
    });
  }
  for (auto& thread : threads) thread.join();
}
