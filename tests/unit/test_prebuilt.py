"""The checked-in code objects of kernels/prebuilt/ and the script that rebuilds them.

A user with a GPU and no compiler runs the suite from these files, so they must exist for every
operator and target, be for the right machine, hold every kernel every variant launches, be
wave32 on gfx11/gfx12 and wave64 on gfx9, and be exactly what kernels/build.py produces.
"""
from __future__ import annotations

import hashlib
import importlib.util
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from hsapy import operators as ops
from hsapy.sim.targets import GPU_PROFILES

KERNELS = Path(ops.__file__).resolve().parent.parent / "kernels"


def load_build_script():
    spec = importlib.util.spec_from_file_location("kernels_build", KERNELS / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = load_build_script()
CASES = [(name, target) for name in ops.OPERATORS for target in ops.PREBUILT_TARGETS]


def elf_dynamic_symbols(data: bytes) -> dict[str, int]:
    """name -> value from .dynsym of an ELF64 little-endian file (enough for this test)."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    symbols = {}
    for sh_name, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type != 11:  # SHT_DYNSYM
            continue
        strtab_offset = sections[link][4]
        for position in range(offset, offset + size, entsize):
            st_name, _, _, _, st_value, _ = struct.unpack_from("<IBBHQQ", data, position)
            end = data.index(b"\0", strtab_offset + st_name)
            symbols[data[strtab_offset + st_name:end].decode()] = st_value
    return symbols


def file_offset(data: bytes, vaddr: int) -> int:
    """File offset of a virtual address through the section table."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    for i in range(shnum):
        _, sh_type, _, addr, offset, size = struct.unpack_from("<IIQQQQ", data,
                                                               shoff + i * shentsize)
        if sh_type != 8 and addr <= vaddr < addr + size:  # not NOBITS
            return offset + vaddr - addr
    raise AssertionError(f"address {vaddr:#x} is in no section")


def test_manifest_lists_every_operator_and_target():
    manifest = build.load_manifest()
    expected = {ops.prebuilt_path(ops.operator(n), t).name for n, t in CASES}
    assert set(manifest["files"]) == expected
    assert manifest["compiler"].startswith(("Debian clang version 19", "clang version 19"))


@pytest.mark.parametrize("name,target", CASES)
def test_prebuilt_matches_its_manifest_entry(name, target):
    data = ops.prebuilt_path(ops.operator(name), target).read_bytes()
    entry = build.load_manifest()["files"][f"{name}-{target}.hsaco"]
    assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["size"]


@pytest.mark.parametrize("name,target", CASES)
def test_prebuilt_is_a_shared_object_for_the_target(name, target):
    data = ops.prebuilt_path(ops.operator(name), target).read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2          # ELF64
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    assert (e_type, e_machine) == (3, 224)                   # ET_DYN, EM_AMDGPU
    e_flags, = struct.unpack_from("<I", data, 0x30)
    assert e_flags & 0xFF == GPU_PROFILES[target].elf_machine


@pytest.mark.parametrize("name,target", CASES)
def test_prebuilt_holds_every_kernel_with_the_targets_wave_size(name, target):
    op = ops.operator(name)
    data = ops.prebuilt_path(op, target).read_bytes()
    symbols = elf_dynamic_symbols(data)
    wave32 = GPU_PROFILES[target].wavefront_size == 32
    for kernel in op.kernel_names:
        assert kernel in symbols and f"{kernel}.kd" in symbols
        descriptor = file_offset(data, symbols[f"{kernel}.kd"])
        properties, = struct.unpack_from("<H", data, descriptor + 56)
        # kernel_code_properties bit 10: ENABLE_WAVEFRONT_SIZE32 (LLVM AMDGPUUsage,
        # "Kernel Descriptor").
        assert bool(properties & (1 << 10)) == wave32, kernel


def test_prebuilt_directory_stays_small():
    total = sum(p.stat().st_size for p in (KERNELS / "prebuilt").glob("*.hsaco"))
    assert total < 1_000_000


def _rebuild_skip_reason() -> str | None:
    if shutil.which("clang-19") is None:
        return "clang-19 is not installed"
    manifest = build.load_manifest()
    if build.clang_version() != manifest["compiler"]:
        return f"compiler differs from the manifest's ({manifest['compiler']})"
    if manifest["builder"] == build.BUILDER_TOOLCHAIN and \
            build.available_builder() != build.BUILDER_TOOLCHAIN:
        return "the manifest's builder (hsapy.toolchain) is not available"
    return None


@pytest.mark.skipif(_rebuild_skip_reason() is not None, reason=str(_rebuild_skip_reason()))
@pytest.mark.parametrize("target", ops.PREBUILT_TARGETS)
def test_rebuilding_gives_identical_bytes(target):
    builder = build.load_manifest()["builder"]
    for name in ops.OPERATORS:
        rebuilt = build.build_bytes(name, target, builder)
        assert rebuilt == ops.prebuilt_path(ops.operator(name), target).read_bytes(), name


@pytest.mark.skipif(_rebuild_skip_reason() is not None, reason=str(_rebuild_skip_reason()))
def test_build_script_check_mode_reports_each_file():
    result = subprocess.run(
        ["python3", str(KERNELS / "build.py"), "--check", "--operator", "rmsnorm",
         "--target", "gfx1201"], capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["same", "prebuilt/rmsnorm-gfx1201.hsaco"]
    assert result.returncode == 0
