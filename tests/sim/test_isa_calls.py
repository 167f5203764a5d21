"""Calls to device functions on the ISA interpreter: noinline helpers at -O0 and -O3, recursion,
function pointers and a -fgpu-rdc build linked with ld.lld, all built with clang-19 and run
with the AMDGPU calling convention (s_swappc_b64 / s_setpc_b64, the stack pointer s32 and
frame pointer s33 in scratch, whole-wave VGPR spills), for gfx942, gfx1201 wave32/wave64 and
gfx90a."""
from __future__ import annotations

import hashlib
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from isa_exec_harness import CACHE, DEVICE_HEADER, Device, build_hip, require

from hsapy.sim.execution import SimFault

# gfx90a has no architected flat scratch: its stack goes through MUBUF and the private segment
# buffer in s[0:3], with s32/s33 in wave-scaled bytes
BUILDS = [("gfx942", ()), ("gfx1201", ()), ("gfx1201", ("-mwavefrontsize64",)), ("gfx90a", ())]
BUILD_IDS = ["gfx942", "gfx1201-w32", "gfx1201-w64", "gfx90a"]
# Kernels that call functions through a dynamic stack (recursion, function pointers) have no
# static private size; a launcher gives them a stack (HIP's default limit is 1 KiB per lane).
STACK = 2048

CHAIN = r"""
__attribute__((device, noinline)) float leaf(float x, int k) { return x * k + 1.0f; }
__attribute__((device, noinline)) float middle(float x, int k) {
  float s = 0.0f;
  for (int i = 0; i < k; i++) s += leaf(x, i);     // a call inside a divergent loop
  return s;
}
__attribute__((device, noinline)) void many(float* acc, float a, float b, float c, float d,
                                            float e, float f, int n) {
  float local[40];                                   // an array in the callee's stack frame
  for (int i = 0; i < 40; i++) local[i] = (i & 1 ? a : b) * i + (i % 3 ? c : d) - e * f;
  for (int i = 0; i < n; i++) *acc += local[(i * 7) % 40];
}
KERNEL void chain(const float* x, float* out) {
  uint i = bid_x() * bdim_x() + tid_x();
  float v = x[i];
  float acc = 0.0f;
  many(&acc, v, 2 * v, 3 * v, 4 * v, 5 * v, 6 * v, (int)(i % 9));   // a pointer into the stack
  out[2 * i] = middle(v, (int)(i % 5));
  out[2 * i + 1] = acc;
}
"""

RECURSION = r"""
__attribute__((device, noinline)) int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__attribute__((device, noinline)) unsigned depth_sum(const unsigned* v, int lo, int hi) {
  if (hi - lo == 1) return v[lo];
  int mid = (lo + hi) / 2;                          // a binary recursion over an array
  return depth_sum(v, lo, mid) + depth_sum(v, mid, hi);
}
KERNEL void recurse(const unsigned* v, int* fibs, unsigned* sums) {
  uint i = bid_x() * bdim_x() + tid_x();
  fibs[i] = fib((int)(i % 13));
  sums[i] = depth_sum(v, (int)(i % 7), (int)(i % 7) + 1 + (int)(i % 17));
}
"""

POINTERS = r"""
typedef float (*unary)(float);
__attribute__((device, noinline)) float twice(float x) { return 2.0f * x; }
__attribute__((device, noinline)) float square(float x) { return x * x; }
__attribute__((device, noinline)) float negate(float x) { return -x; }
__attribute__((device)) unary table[3] = {twice, square, negate};
KERNEL void by_group(const float* a, float* out) {
  uint i = bid_x() * bdim_x() + tid_x();
  unary f = table[bid_x() % 3];          // one target per workgroup: waves call different ones
  out[i] = f(a[i]);
}
KERNEL void by_lane(const float* a, float* out, const int* which) {
  uint i = bid_x() * bdim_x() + tid_x();
  unary f = table[which[i]];             // divergent within a wave: a waterfall loop
  out[i] = f(a[i]);
}
"""

RDC_MAIN = r"""
__attribute__((device)) float scale_add(float x, float y);
__attribute__((device)) int fib(int n);
KERNEL void rdc_main(const float* a, float* out, int* fibs) {
  uint i = bid_x() * bdim_x() + tid_x();
  out[i] = scale_add(a[i], (float)i);
  fibs[i] = fib((int)(i % 12));
}
"""
RDC_LIB = r"""
__attribute__((device, noinline)) float scale_add(float x, float y) { return x * 3.0f + y; }
__attribute__((device, noinline)) int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
"""

FIB = [0, 1]
while len(FIB) < 20:
    FIB.append(FIB[-1] + FIB[-2])


def _chain_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    f32 = np.float32
    middle = np.zeros(x.size, f32)
    acc = np.zeros(x.size, f32)
    for i, v in enumerate(x):
        s = f32(0)
        for k in range(i % 5):
            s = f32(s + f32(f32(v * f32(k)) + f32(1)))
        middle[i] = s
        a_, b_, c_, d_, e_, f_ = (f32(v * k) for k in range(1, 7))
        local = [f32(f32((a_ if k & 1 else b_) * f32(k)) + (c_ if k % 3 else d_)) - f32(e_ * f_)
                 for k in range(40)]
        a = f32(0)
        for k in range(i % 9):
            a = f32(a + local[(k * 7) % 40])
        acc[i] = a
    return middle, acc


@pytest.mark.parametrize("opt", ["-O0", "-O3"])
@pytest.mark.parametrize("target,flags", BUILDS, ids=BUILD_IDS)
def test_noinline_call_chain_runs_at_every_optimisation_level(target, flags, opt):
    dev = Device(target)
    kernel = dev.load(build_hip(CHAIN, target, flags + (opt,)), "chain")
    n = 256
    x = (np.arange(n, dtype=np.float32) - 100.5) * np.float32(0.25)
    out = dev.zeros(8 * n)
    private = kernel.code_object.kernels["chain"].private_segment_fixed_size
    assert private > 0                              # the callees' frames live in scratch
    dev.dispatch(kernel, [dev.buffer(x), out], (n,), (64,), private=private)
    got = dev.read(out, np.float32, 2 * n).reshape(n, 2)
    middle, acc = _chain_reference(x)
    assert np.array_equal(got[:, 0], middle)
    assert np.array_equal(got[:, 1], acc)


@pytest.mark.parametrize("opt", ["-O0", "-O3"])
@pytest.mark.parametrize("target,flags", BUILDS, ids=BUILD_IDS)
def test_recursion_runs_on_the_dynamic_stack(target, flags, opt):
    dev = Device(target)
    kernel = dev.load(build_hip(RECURSION, target, flags + (opt,)), "recurse")
    assert kernel.code_object.kernels["recurse"].uses_dynamic_stack
    n = 128
    values = np.arange(64, dtype=np.uint32) * 7 + 3
    fibs, sums = dev.zeros(4 * n), dev.zeros(4 * n)
    dev.dispatch(kernel, [dev.buffer(values), fibs, sums], (n,), (64,), private=STACK)
    assert np.array_equal(dev.read(fibs, np.int32, n), [FIB[i % 13] for i in range(n)])
    want = [int(values[i % 7:i % 7 + 1 + i % 17].sum()) for i in range(n)]
    assert np.array_equal(dev.read(sums, np.uint32, n), want)


@pytest.mark.parametrize("target,flags", BUILDS, ids=BUILD_IDS)
def test_function_pointers_per_workgroup_and_per_lane(target, flags):
    dev = Device(target)
    data = build_hip(POINTERS, target, flags)
    wave = 64 if target == "gfx942" or flags else 32
    functions = [lambda v: 2 * v, lambda v: v * v, lambda v: -v]
    n = 6 * wave
    a = np.arange(n, dtype=np.float32) - 100
    out = dev.zeros(4 * n)
    kernel = dev.load(data, "by_group")
    # one wave per workgroup: the waves of one batch jump to different functions
    dev.dispatch(kernel, [dev.buffer(a), out], (n,), (wave,), private=STACK)
    want = [functions[(i // wave) % 3](a[i]) for i in range(n)]
    assert np.array_equal(dev.read(out, np.float32, n), np.array(want, np.float32))
    which = np.random.default_rng(2).integers(0, 3, n).astype(np.int32)
    kernel = dev.load(data, "by_lane")
    dev.dispatch(kernel, [dev.buffer(a), out, dev.buffer(which)], (n,), (wave,), private=STACK)
    want = [functions[w](v) for w, v in zip(which, a)]
    assert np.array_equal(dev.read(out, np.float32, n), np.array(want, np.float32))


def build_rdc(sources: list[str], target: str, flags: tuple[str, ...] = ()) -> bytes:
    """Separate compilation: each source to LLVM bitcode with -fgpu-rdc, linked (LTO, keeping
    the noinline calls across units) by ld.lld-19 into one code object. Cached by content."""
    require("clang-19")
    lld = require("ld.lld-19")
    key = hashlib.sha1(("\0".join(sources) + target + " ".join(flags) + DEVICE_HEADER)
                       .encode()).hexdigest()
    CACHE.mkdir(parents=True, exist_ok=True)
    out = CACHE / f"{key}_{target}_rdc.co"
    if out.exists():
        return out.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "dev.h").write_text(DEVICE_HEADER)
        objects = []
        for k, source in enumerate(sources):
            src = Path(tmp) / f"unit{k}.hip"
            src.write_text('#include "dev.h"\n' + source)
            obj = Path(tmp) / f"unit{k}.bc"
            subprocess.run(["clang-19", "-x", "hip", f"--offload-arch={target}",
                            "--cuda-device-only", "-fgpu-rdc", "-nogpulib", "-nogpuinc", "-O3",
                            "-std=c++17", f"-I{tmp}", *flags, "-c", str(src), "-o", str(obj)],
                           check=True, capture_output=True, timeout=300)
            objects.append(str(obj))
        # wave64 travels in the bitcode's function attributes (target-features)
        subprocess.run([lld, "-shared", f"-plugin-opt=mcpu={target}", "-plugin-opt=O3",
                        *objects, "-o", str(out) + ".tmp"],
                       check=True, capture_output=True, timeout=300)
    Path(str(out) + ".tmp").rename(out)
    return out.read_bytes()


@pytest.mark.parametrize("target,flags", BUILDS, ids=BUILD_IDS)
def test_rdc_build_linked_by_lld_calls_across_units(target, flags):
    dev = Device(target)
    kernel = dev.load(build_rdc([RDC_MAIN, RDC_LIB], target, flags), "rdc_main")
    n = 192
    a = np.arange(n, dtype=np.float32) * np.float32(0.5)
    out, fibs = dev.zeros(4 * n), dev.zeros(4 * n)
    dev.dispatch(kernel, [dev.buffer(a), out, fibs], (n,), (64,), private=STACK)
    assert np.array_equal(dev.read(out, np.float32, n), a * np.float32(3) + np.arange(n))
    assert np.array_equal(dev.read(fibs, np.int32, n), [FIB[i % 12] for i in range(n)])


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_a_stack_larger_than_the_private_segment_is_a_memory_fault(target):
    dev = Device(target)
    kernel = dev.load(build_hip(RECURSION, target), "recurse")
    n = 64
    values = np.arange(64, dtype=np.uint32)
    fibs, sums = dev.zeros(4 * n), dev.zeros(4 * n)
    with pytest.raises(SimFault) as info:
        dev.dispatch(kernel, [dev.buffer(values), fibs, sums], (n,), (64,), private=16)
    assert info.value.status == 43                  # HSA_STATUS_ERROR_MEMORY_FAULT
    assert "private" in info.value.message



def test_launcher_gives_a_dynamic_stack_kernel_hips_default_stack():
    """Through hsapy.Runtime: a kernel whose metadata says .uses_dynamic_stack (recursion) gets
    at least 1 KiB of private memory per work-item, as HIP's launcher gives it."""
    import hsapy
    from hsapy.executable import DYNAMIC_STACK_SIZE

    with hsapy.Runtime(backend="sim") as rt:
        agent = next((a for a in rt.gpu_agents if a.name == "gfx942"), None)
        if agent is None:
            pytest.skip("no simulated gfx942 agent (HSAPY_SIM_TARGETS)")
        exe = rt.load(build_hip(RECURSION, "gfx942"), agent)
        kernel = exe.kernel("recurse")
        assert kernel.info.private_segment_fixed_size < DYNAMIC_STACK_SIZE
        assert kernel.private_segment_size == DYNAMIC_STACK_SIZE
        queue = agent.create_queue(size=64)
        n = 64
        values = rt.system_pool.allocate(4 * 64)
        values.copy_from(np.arange(64, dtype=np.uint32) * 7 + 3)
        fibs, sums = rt.system_pool.allocate(4 * n), rt.system_pool.allocate(4 * n)
        kernel.launch(queue, [values, fibs, sums], n, 64)
        assert np.array_equal(fibs.numpy(np.int32)[:n], [FIB[i % 13] for i in range(n)])
