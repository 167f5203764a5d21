"""hsapy.toolchain's HIP route: clang-19 device-only with hsapy_hip.h, hipcc, bundles, errors."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_toolchain import ABI_VERSION, MACHINE, READELF, Recorder, elf_header

from hsapy import toolchain

CLANG = shutil.which("clang-19")
OBJDUMP = shutil.which("llvm-objdump-19")
HIPCC = shutil.which("hipcc")
KERNELS_DIR = Path(__file__).resolve().parents[2] / "kernels"
HIP_SOURCES = sorted(KERNELS_DIR.glob("**/*.hip"))

needs_clang = pytest.mark.skipif(CLANG is None, reason="clang-19 (Debian clang-19) is not installed")

# Exercises every part of hsapy_hip.h the operator suite relies on, and a few more.
HEADER_KERNEL = r"""
#include "hsapy_hip.h"
extern "C" __global__ void __launch_bounds__(256)
header_test(float* data, unsigned int* counters, long long* clocks, unsigned int n) {
  __shared__ float tile[256];
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? data[i] : 0.0f;
  __syncthreads();
  float v = tile[threadIdx.x ^ 1];
  for (int offset = warpSize / 2; offset > 0; offset >>= 1) {
    v += __shfl_xor(v, offset);
  }
  v += __shfl_down(v, 1) + __shfl_up(v, 1) + __shfl(v, 0);
  if (i < n) {
    data[i] = fmaxf(expf(v), rsqrtf(sqrtf(fabsf(v)))) + (float)min(1, 2) + max(1.0f, 0.0f);
  }
  if (threadIdx.x == 0) {
    atomicAdd(&counters[0], 1u);
    atomicAdd((float*)&counters[1], v);
    atomicMax(&counters[2], gridDim.x + blockDim.y + blockDim.z + threadIdx.y + threadIdx.z +
                            blockIdx.y + blockIdx.z);
    clocks[2 * blockIdx.x] = clock64();
    clocks[2 * blockIdx.x + 1] = wall_clock64();
    float4 f = make_float4(1.0f, 2.0f, 3.0f, INFINITY);
    data[0] = f.w + (float)__lane_id();
  }
}
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HSAPY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def kernel_names(source: Path) -> list[str]:
    return re.findall(r'extern "C" __global__ void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\(',
                      source.read_text())


def disassemble(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "k.hsaco"
    path.write_bytes(data)
    proc = subprocess.run([OBJDUMP, "-d", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_kernels_directory_has_hip_sources():
    assert HIP_SOURCES, "kernels/ should hold the operator suite's HIP sources"


@needs_clang
@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
@pytest.mark.parametrize("source", HIP_SOURCES, ids=lambda path: path.name)
def test_every_hip_source_in_kernels_builds(cache, source, target):
    data = toolchain.build_hip(source, target, compiler="clang")
    header = elf_header(data)
    assert header["type"] == 3 and header["abi_version"] == ABI_VERSION[5]
    assert header["flags"] & 0xFF == MACHINE[target]
    names = kernel_names(source)
    assert names, f"no extern \"C\" __global__ kernels found in {source.name}"
    for name in names:
        assert f"{name}.kd".encode() in data


@needs_clang
@pytest.mark.parametrize("target,wave", [("gfx942", 64), ("gfx1201", 32)])
def test_header_kernel_builds_and_uses_the_hardware(cache, tmp_path, target, wave):
    data = toolchain.build_hip(HEADER_KERNEL, target, compiler="clang")
    assert b"header_test.kd" in data
    if OBJDUMP is None:
        pytest.skip("llvm-objdump-19 (Debian llvm-19) is not installed")
    listing = disassemble(tmp_path, data)
    assert "ds_bpermute_b32" in listing  # __shfl_*
    assert "s_barrier" in listing  # __syncthreads
    assert re.search(r"global_atomic_add(_u32)? ", listing)  # atomicAdd(unsigned*)
    # atomicAdd(float*): native on gfx942; a compare-and-swap loop where clang-19 does not
    # assume the memory supports float atomics (gfx1201 without -munsafe-fp-atomics)
    float_add = "global_atomic_add_f32" if target == "gfx942" else "global_atomic_cmpswap_b32"
    assert float_add in listing
    assert re.search(r"global_atomic_(umax|max_u32)", listing)  # atomicMax(unsigned*)
    assert "v_mbcnt_lo_u32_b32" in listing  # __lane_id
    if READELF is not None:
        path = tmp_path / "k.hsaco"
        notes = subprocess.run([READELF, "--notes", str(path)], capture_output=True, text=True,
                               timeout=60).stdout
        assert f".wavefront_size: {wave}" in notes
        assert "hidden_group_size_x" in notes  # blockDim from the hidden arguments
        assert ".group_segment_fixed_size: 1024" in notes  # __shared__ float[256]
        assert ".max_flat_workgroup_size: 256" in notes  # __launch_bounds__


@needs_clang
def test_second_hip_build_runs_no_compiler(cache, monkeypatch):
    first = toolchain.build_hip(HEADER_KERNEL, "gfx1201", compiler="clang")
    recorder = Recorder()

    def forbidden(*args, **kwargs):
        raise AssertionError("the cache should have served this build")

    monkeypatch.setattr(toolchain.tools, "run_tool", forbidden)
    with toolchain.observe(recorder):
        second = toolchain.build_hip(HEADER_KERNEL, "gfx1201", compiler="clang")
    assert second == first
    assert "cache-hit" in recorder.kinds()
    assert "run" not in recorder.kinds()


@needs_clang
def test_changing_a_header_next_to_the_source_rebuilds(cache, tmp_path):
    (tmp_path / "value.h").write_text("#define VALUE 1.0f\n")
    source = tmp_path / "k.hip"
    source.write_text('#include "value.h"\n'
                      'extern "C" __global__ void k(float* p) { p[threadIdx.x] = VALUE; }\n')
    first = toolchain.build_hip(source, "gfx942", compiler="clang")
    (tmp_path / "value.h").write_text("#define VALUE 2.0f\n")
    second = toolchain.build_hip(source, "gfx942", compiler="clang")
    assert first != second


@needs_clang
def test_compile_error_carries_the_log_and_command(cache):
    with pytest.raises(toolchain.BuildError) as info:
        toolchain.build_hip('extern "C" __global__ void broken() { undeclared_name(); }\n',
                            "gfx942", compiler="clang")
    error = info.value
    assert "undeclared_name" in error.log and "error" in error.log
    assert any("clang" in part for part in error.command)
    assert "--offload-arch=gfx942" in error.command
    assert "command:" in str(error) and "undeclared_name" in str(error)
    assert error.returncode not in (0, None)


@needs_clang
def test_offload_bundles_are_unpacked(cache):
    data = toolchain.build_hip(HEADER_KERNEL, "gfx942", compiler="clang",
                               extra_args=["--gpu-bundle-output"], cache=False)
    assert elf_header(data)["flags"] & 0xFF == MACHINE["gfx942"]


@needs_clang
def test_minimal_unbundler_matches_codeobject(tmp_path):
    # The toolchain's own fallback reader agrees with hsapy.codeobject on a real clang bundle.
    clang = toolchain.find_tool("clang")
    out = tmp_path / "bundle.o"
    source = tmp_path / "k.hip"
    source.write_text(HEADER_KERNEL)
    subprocess.run(list(clang.argv) + [
        "-x", "hip", "--cuda-device-only", "-nogpulib", "-nogpuinc", "-c",
        "--offload-arch=gfx942", f"-I{toolchain.hip_include_dir()}", "-o", str(out),
        str(source)], check=True, capture_output=True, timeout=300)
    bundle = out.read_bytes()
    assert bundle.startswith(b"__CLANG_OFFLOAD_BUNDLE__")
    target = toolchain.BuildTarget.parse("gfx942")
    mine = toolchain.route_hip._unbundle(bundle, target)
    assert mine[:4] == b"\x7fELF"
    codeobject = pytest.importorskip("hsapy.codeobject")
    assert codeobject.extract_for_target(bundle, "gfx942") == mine
    with pytest.raises(toolchain.BuildError, match="no code object for gfx1201"):
        toolchain.route_hip._unbundle(bundle, toolchain.BuildTarget.parse("gfx1201"))


@pytest.mark.skipif(HIPCC is None, reason="hipcc (Debian hipcc) is not installed")
def test_auto_falls_back_to_clang_when_hipcc_lacks_the_target(cache):
    if CLANG is None:
        pytest.skip("clang-19 (Debian clang-19) is not installed")
    hipcc = toolchain.find_tool("hipcc")
    if toolchain.route_hip._hip_supports(hipcc, toolchain.BuildTarget.parse("gfx1201")):
        pytest.skip(f"this hipcc ({hipcc.version}) supports gfx1201 itself")
    recorder = Recorder()
    with toolchain.observe(recorder):
        data = toolchain.build_hip(HEADER_KERNEL, "gfx1201")
    assert elf_header(data)["flags"] & 0xFF == MACHINE["gfx1201"]
    runs = [event for event in recorder.events if event.kind == "run"]
    assert runs and "clang" in runs[0].argv[0] and "hipcc" not in runs[0].argv[0]
    assert any("does not support gfx1201" in event.message for event in recorder.events)


@pytest.mark.skipif(HIPCC is None, reason="hipcc (Debian hipcc) is not installed")
def test_hipcc_route_builds_for_a_target_it_supports(cache):
    hipcc = toolchain.find_tool("hipcc")
    if not toolchain.route_hip._hip_supports(hipcc, toolchain.BuildTarget.parse("gfx90a")):
        pytest.skip(f"this hipcc ({hipcc.version}) does not support gfx90a")
    recorder = Recorder()
    with toolchain.observe(recorder):
        data = toolchain.build_hip(HEADER_KERNEL, "gfx90a", compiler="hipcc")
    assert elf_header(data)["flags"] & 0xFF == MACHINE["gfx90a"]
    assert b"header_test.kd" in data
    runs = [event for event in recorder.events if event.kind == "run"]
    assert "--genco" in runs[0].argv


def test_missing_compiler_is_a_one_line_error(cache, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    with pytest.raises(toolchain.ToolNotFoundError) as info:
        toolchain.build_hip(HEADER_KERNEL, "gfx942")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("clang (one that supports --offload-arch=gfx942) not found")
    assert "clang-19" in message


def test_missing_assembler_names_the_packages(cache, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    with pytest.raises(toolchain.ToolNotFoundError) as info:
        toolchain.assemble("s_endpgm\n", "gfx942")
    message = str(info.value)
    assert "\n" not in message
    assert "llvm-mc" in message and "llvm-19" in message and "clang-19" in message


@needs_clang
def test_a_newer_clang_without_the_target_is_skipped(cache, monkeypatch, tmp_path):
    # clang-99 sorts first (newest) but rejects every --offload-arch: clang-19 must be chosen.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "clang-99"
    fake.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "clang version 99.0.0"; '
                    'exit 0; fi\necho "unsupported" >&2\nexit 1\n')
    fake.chmod(0o755)
    (bin_dir / "clang-19").symlink_to(CLANG)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    recorder = Recorder()
    with toolchain.observe(recorder):
        data = toolchain.build_hip(HEADER_KERNEL, "gfx1201", compiler="clang")
    assert elf_header(data)["flags"] & 0xFF == MACHINE["gfx1201"]
    probes = [event.argv[0] for event in recorder.events if event.kind == "probe"]
    assert str(fake) in probes
    runs = [event.argv[0] for event in recorder.events if event.kind == "run"]
    assert runs == [str(bin_dir / "clang-19")]


OCML_KERNEL = r"""
extern "C" __device__ float __ocml_tanh_f32(float);
extern "C" __global__ void tanh_kernel(float* p) { p[threadIdx.x] = __ocml_tanh_f32(p[threadIdx.x]); }
"""


def device_libs_for(target: str):
    try:
        return toolchain.find_device_libs(target)
    except toolchain.ToolNotFoundError as exc:
        pytest.skip(f"no ROCm device libraries for {target}: {exc}")


@needs_clang
def test_device_libraries_resolve_ocml_calls(cache):
    device_libs_for("gfx90a")
    data = toolchain.build_hip(OCML_KERNEL, "gfx90a", compiler="clang", device_libs=True)
    assert b"tanh_kernel.kd" in data
    # without them the call stays undefined and the link fails with the linker's message
    with pytest.raises(toolchain.BuildError, match="__ocml_tanh_f32"):
        toolchain.build_hip(OCML_KERNEL, "gfx90a", compiler="clang")


def test_device_libraries_without_the_target_is_a_one_line_error(monkeypatch, tmp_path):
    library = tmp_path / "rocm" / "amdgcn" / "bitcode"
    library.mkdir(parents=True)
    (library / "ocml.bc").write_bytes(b"BC")
    (library / "oclc_isa_version_90a.bc").write_bytes(b"BC")
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "rocm"))
    assert toolchain.find_device_libs("gfx90a") == library
    with pytest.raises(toolchain.ToolNotFoundError) as info:
        toolchain.find_device_libs("gfx1201")
    message = str(info.value)
    assert "\n" not in message and "oclc_isa_version_1201.bc" in message
    assert "rocm-device-libs" in message
