// Kernels for hsapy's code-object tests (tests/data/codeobjects.py builds them with clang-19).
// Built with -nogpulib -nogpuinc: only clang builtins, no ROCm headers.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define KERNEL extern "C" __global__

// Pointers, and by-value scalars of every size: kernarg offsets follow natural alignment.
KERNEL void mixed(float* a, const float* b, float* c, int n, double s, char q, short r,
                  long long w, unsigned char u) {
  unsigned i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() +
               __builtin_amdgcn_workitem_id_x();
  if (i < (unsigned)n) c[i] = a[i] + b[i] * (float)s + q + r + (float)w + u;
}

struct Pair { int a; float b; char tag[5]; };

// A struct passed by value (16 bytes with padding).
KERNEL void by_struct(Pair p, int* out) {
  out[__builtin_amdgcn_workitem_id_x()] = p.a + (int)p.b + p.tag[3];
}

// Reads blockDim (hidden_group_size_*) and gridDim-derived values (hidden_block_count_*,
// hidden_remainder_*): out[0..8] = block counts, group sizes, remainders as the kernel sees them.
KERNEL void dims(unsigned* out, unsigned scale) {
  if (__builtin_amdgcn_workitem_id_x() == 0 && __builtin_amdgcn_workgroup_id_x() == 0) {
    out[0] = __builtin_amdgcn_workgroup_size_x() * scale;
    out[1] = __builtin_amdgcn_workgroup_size_y() * scale;
    out[2] = __builtin_amdgcn_workgroup_size_z() * scale;
    out[3] = __builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x();
    out[4] = __builtin_amdgcn_grid_size_y() / __builtin_amdgcn_workgroup_size_y();
    out[5] = __builtin_amdgcn_grid_size_z() / __builtin_amdgcn_workgroup_size_z();
  }
}

// Dynamic LDS: extern shared array; reads hidden_dynamic_lds_size is implicit.
extern __attribute__((shared)) float dyn_lds[];
KERNEL void uses_lds(float* out) {
  unsigned t = __builtin_amdgcn_workitem_id_x();
  dyn_lds[t] = (float)t;
  __builtin_amdgcn_s_barrier();
  out[t] = dyn_lds[t ^ 1];
}

// A device global holding the address of another: the linker emits R_AMDGPU_RELATIVE64.
__device__ int table[4] = {1, 2, 3, 4};
__device__ int* table_ptr = &table[2];
KERNEL void reads_global(int* out) { out[0] = *table_ptr; }

// No arguments at all.
KERNEL void empty() {}
