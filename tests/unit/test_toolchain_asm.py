"""hsapy.toolchain.assemble: AMDGPU assembly -> code object with llvm-mc (or clang) + ld.lld."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from test_toolchain import ABI_VERSION, MACHINE, READELF, Recorder, elf_header

from hsapy import toolchain

LLVM_MC = shutil.which("llvm-mc-19")
CLANG = shutil.which("clang-19")
LD_LLD = shutil.which("ld.lld-19")

needs_mc = pytest.mark.skipif(LLVM_MC is None, reason="llvm-mc-19 (Debian llvm-19) is not installed")

# A hand-written kernel that stores 42 to out[0]: descriptor directives and v5 metadata.
KERNEL_TEMPLATE = """\
\t.text
\t.globl\tanswer
\t.p2align\t8
\t.type\tanswer,@function
answer:
\ts_load_{load} s[2:3], s[0:1], 0x0
\tv_mov_b32 v0, 0
\tv_mov_b32 v1, 42
\t{wait}
\tglobal_store_{store} v0, v1, s[2:3]
\ts_endpgm
.Lanswer_end:
\t.size\tanswer, .Lanswer_end-answer

\t.rodata
\t.p2align\t6
\t.amdhsa_kernel answer
\t\t.amdhsa_user_sgpr_kernarg_segment_ptr 1
\t\t.amdhsa_user_sgpr_count 2
\t\t.amdhsa_kernarg_size 8
\t\t.amdhsa_next_free_vgpr 2
\t\t.amdhsa_next_free_sgpr 4
{extra}\t.end_amdhsa_kernel

\t.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.kernels:
  - .name: answer
    .symbol: answer.kd
    .args:
      - {{ .name: out, .offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global }}
    .kernarg_segment_size: 8
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: {wave}
    .sgpr_count: 4
    .vgpr_count: 2
    .max_flat_workgroup_size: 256
...
\t.end_amdgpu_metadata
"""

SYNTAX = {
    "gfx942": {"load": "dwordx2", "store": "dword", "wait": "s_waitcnt lgkmcnt(0)",
               "extra": "\t\t.amdhsa_accum_offset 4\n", "wave": 64},
    "gfx1201": {"load": "b64", "store": "b32", "wait": "s_wait_kmcnt 0",
                "extra": "", "wave": 32},
}


def kernel_source(target: str) -> str:
    return KERNEL_TEMPLATE.format(**SYNTAX[target])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HSAPY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@needs_mc
@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_assemble_makes_a_loadable_code_object(cache, target):
    data = toolchain.assemble(kernel_source(target), target)
    header = elf_header(data)
    assert header["type"] == 3 and header["abi_version"] == ABI_VERSION[5]
    assert header["flags"] & 0xFF == MACHINE[target]
    assert b"answer.kd" in data


@needs_mc
@pytest.mark.parametrize("version", [4, 5, 6])
def test_assemble_pins_the_code_object_version(cache, version):
    data = toolchain.assemble(kernel_source("gfx942"), "gfx942", code_object_version=version)
    assert elf_header(data)["abi_version"] == ABI_VERSION[version]


@needs_mc
@pytest.mark.skipif(READELF is None, reason="llvm-readelf-19 (Debian llvm-19) is not installed")
def test_assembled_metadata_reads_back(cache, tmp_path):
    path = tmp_path / "answer.hsaco"
    path.write_bytes(toolchain.assemble(kernel_source("gfx1201"), "gfx1201"))
    proc = subprocess.run([READELF, "-h", "--notes", str(path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "0x4E, gfx1201" in proc.stdout
    assert ".wavefront_size: 32" in proc.stdout and "answer.kd" in proc.stdout


@needs_mc
def test_assembly_error_carries_the_assembler_log(cache):
    with pytest.raises(toolchain.BuildError) as info:
        toolchain.assemble("\tv_not_an_instruction v0\n", "gfx942")
    assert "v_not_an_instruction" in info.value.log
    assert "-mcpu=gfx942" in info.value.command


@needs_mc
def test_second_assembly_is_served_from_the_cache(cache, monkeypatch):
    first = toolchain.assemble(kernel_source("gfx942"), "gfx942")
    recorder = Recorder()

    def forbidden(*args, **kwargs):
        raise AssertionError("the cache should have served this build")

    monkeypatch.setattr(toolchain.tools, "run_tool", forbidden)
    monkeypatch.setattr(subprocess, "run", forbidden)
    with toolchain.observe(recorder):
        assert toolchain.assemble(kernel_source("gfx942"), "gfx942") == first
    assert recorder.kinds()[-1] == "cache-hit"


@pytest.mark.skipif(CLANG is None or LD_LLD is None,
                    reason="clang-19 and ld.lld-19 (Debian clang-19, lld-19) are needed")
def test_clang_assembles_when_llvm_mc_is_absent(cache, monkeypatch, tmp_path):
    # A PATH with clang-19 and ld.lld-19 but no llvm-mc.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(CLANG, bin_dir / "clang-19")
    os.symlink(LD_LLD, bin_dir / "ld.lld-19")
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    recorder = Recorder()
    with toolchain.observe(recorder):
        data = toolchain.assemble(kernel_source("gfx1201"), "gfx1201")
    assert elf_header(data)["flags"] & 0xFF == MACHINE["gfx1201"]
    runs = [event.argv for event in recorder.events if event.kind == "run"]
    assert runs[0][0].endswith("clang-19") and "assembler" in runs[0]
