"""hsapy.toolchain: LLVM IR -> code object through llvmlite + ld.lld, the cache, tool discovery."""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from hsapy import toolchain
from hsapy.errors import HsapyError, HsapyValueError

READELF = shutil.which("llvm-readelf-19")

# e_flags machine numbers (docs/hsa-abi.md, "Code objects"; LLVM's ELF.h EF_AMDGPU_MACH_*).
MACHINE = {"gfx90a": 0x3F, "gfx942": 0x4C, "gfx1100": 0x41, "gfx1201": 0x4E}
# EI_ABIVERSION per code object version: v4 -> 2, v5 -> 3, v6 -> 4.
ABI_VERSION = {4: 2, 5: 3, 6: 4}

STORE_IR = """
define amdgpu_kernel void @store_one(ptr addrspace(1) %out) {
  %id = call i32 @llvm.amdgcn.workitem.id.x()
  %slot = getelementptr float, ptr addrspace(1) %out, i32 %id
  store float 1.0, ptr addrspace(1) %slot
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
"""


def elf_header(data: bytes) -> dict:
    """The ELF64 header fields the tests check."""
    assert data[:4] == b"\x7fELF", "not an ELF file"
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    (e_flags,) = struct.unpack_from("<I", data, 48)
    return {"osabi": data[7], "abi_version": data[8], "type": e_type, "machine": e_machine,
            "flags": e_flags}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private, empty build cache."""
    monkeypatch.setenv("HSAPY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


class Recorder:
    """Collects toolchain events."""

    def __init__(self) -> None:
        self.events: list[toolchain.ToolchainEvent] = []

    def __call__(self, event: toolchain.ToolchainEvent) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [event.kind for event in self.events]


@pytest.mark.parametrize("target", ["gfx942", "gfx1201", "gfx1100", "gfx90a"])
def test_build_ir_makes_a_shared_object_for_the_target(cache, target):
    data = toolchain.build_ir(STORE_IR, target)
    header = elf_header(data)
    assert header["type"] == 3  # ET_DYN: loadable
    assert header["machine"] == 224  # EM_AMDGPU
    assert header["osabi"] == 64  # ELFOSABI_AMDGPU_HSA
    assert header["abi_version"] == ABI_VERSION[5]
    assert header["flags"] & 0xFF == MACHINE[target]


@pytest.mark.parametrize("version", [4, 5, 6])
def test_code_object_version_is_pinned(cache, version):
    data = toolchain.build_ir(STORE_IR, "gfx942", code_object_version=version)
    assert elf_header(data)["abi_version"] == ABI_VERSION[version]


def test_ir_text_and_llvmlite_module_give_the_same_code_object(cache):
    from llvmlite import ir

    module = ir.Module("m")
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "nothing")
    function.calling_convention = "amdgpu_kernel"
    ir.IRBuilder(function.append_basic_block()).ret_void()
    from_module = toolchain.build_ir(module, "gfx942", cache=False)
    from_text = toolchain.build_ir(str(module), "gfx942", cache=False)
    assert from_module == from_text


@pytest.mark.parametrize("target,wave,expected", [
    ("gfx942", None, 64), ("gfx1201", None, 32), ("gfx1201", 64, 64), ("gfx1100", 32, 32),
])
def test_wave_size_follows_target_and_option(target, wave, expected):
    text = toolchain.emit_assembly(STORE_IR, target, wavefront_size=wave)
    assert f".wavefront_size: {expected}" in text
    assert f'.amdgcn_target "amdgcn-amd-amdhsa--{target}' in text


def test_gfx9_rejects_wave32():
    with pytest.raises(HsapyValueError, match="gfx942 does not run wave32"):
        toolchain.build_ir(STORE_IR, "gfx942", wavefront_size=32)


def test_o2_pipeline_drops_unused_hidden_arguments():
    # Without the pass pipeline LLVM keeps every hidden argument in the metadata.
    text = toolchain.emit_assembly(STORE_IR, "gfx942")
    assert "hidden_" not in text
    assert ".kernarg_segment_size: 8" in text


def test_unknown_processor_is_a_value_error_not_a_crash(cache):
    with pytest.raises(HsapyValueError, match="gfx9999"):
        toolchain.build_ir(STORE_IR, "gfx9999")


@pytest.mark.parametrize("bad", ["", "sm_90", "gfx942:foo+", "gfx"])
def test_bad_target_strings(bad):
    with pytest.raises(HsapyValueError):
        toolchain.BuildTarget.parse(bad)


def test_target_parse_keeps_features():
    target = toolchain.BuildTarget.parse("gfx90a:xnack-:sramecc+")
    assert str(target) == "gfx90a:sramecc+:xnack-"
    assert target.llvm_features() == "+sramecc,-xnack"


def test_invalid_ir_raises_build_error_with_llvm_message(cache):
    with pytest.raises(toolchain.BuildError) as info:
        toolchain.build_ir("define void @f( {", "gfx942")
    assert "parse" in str(info.value)
    assert info.value.log


def test_second_build_is_served_from_the_cache(cache, monkeypatch):
    first = toolchain.build_ir(STORE_IR, "gfx1201")
    recorder = Recorder()

    def forbidden(*args, **kwargs):
        raise AssertionError("the cache should have served this build")

    # Neither the linker (any subprocess run) nor llvmlite codegen may run again.
    monkeypatch.setattr(toolchain.tools, "run_tool", forbidden)
    monkeypatch.setattr(toolchain.route_ir, "compile_ir", forbidden)
    monkeypatch.setattr(subprocess, "run", forbidden)
    with toolchain.observe(recorder):
        second = toolchain.build_ir(STORE_IR, "gfx1201")
    assert second == first
    assert "cache-hit" in recorder.kinds()
    assert "run" not in recorder.kinds() and "llvm" not in recorder.kinds()
    assert list(cache.glob("objects/*/*.entry"))


def test_cache_key_changes_with_target_and_options(cache):
    recorder = Recorder()
    with toolchain.observe(recorder):
        toolchain.build_ir(STORE_IR, "gfx942")
        toolchain.build_ir(STORE_IR, "gfx942", code_object_version=4)
        toolchain.build_ir(STORE_IR, "gfx1201")
        toolchain.build_ir(STORE_IR, "gfx1201", wavefront_size=64)
    assert recorder.kinds().count("cache-store") == 4
    assert "cache-hit" not in recorder.kinds()


def test_another_hsapy_release_does_not_read_the_entries_of_this_one(cache, monkeypatch):
    from hsapy import _version

    recorder = Recorder()
    with toolchain.observe(recorder):
        toolchain.build_ir(STORE_IR, "gfx942")
        monkeypatch.setattr(_version, "__version__", _version.__version__ + ".post1")
        toolchain.build_ir(STORE_IR, "gfx942")
    assert recorder.kinds().count("cache-store") == 2
    assert "cache-hit" not in recorder.kinds()


def test_cache_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("HSAPY_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert toolchain.cache_dir() == tmp_path / "xdg" / "hsapy"
    monkeypatch.setenv("HSAPY_CACHE_DIR", str(tmp_path / "explicit"))
    assert toolchain.cache_dir() == tmp_path / "explicit"


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch, tmp_path):
    monkeypatch.delenv("HSAPY_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert toolchain.cache_dir() == tmp_path / ".cache" / "hsapy"


def test_without_a_home_the_cache_is_a_private_directory_removed_at_exit(tmp_path):
    # HOME unset and a user id with no passwd entry (a container run with --user): pathlib
    # raises RuntimeError from Path.home(); the cache lands neither in the cwd nor at a shared,
    # predictable path (another user could plant code objects there)
    script = """if True:
        import os, pathlib, stat
        def no_home(cls):
            raise RuntimeError("Could not determine home directory.")
        pathlib.Path.home = classmethod(no_home)
        from hsapy import toolchain
        path = toolchain.cache_dir()
        assert path == toolchain.cache_dir() and path.is_absolute()
        assert stat.S_IMODE(path.stat().st_mode) == 0o700 and path.stat().st_uid == os.getuid()
        print(path)
    """
    env = {key: value for key, value in os.environ.items()
           if key not in ("HSAPY_CACHE_DIR", "XDG_CACHE_HOME", "HOME")}
    env["PYTHONPATH"] = str(Path(toolchain.__file__).resolve().parents[2])   # this checkout
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=60, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    private = Path(result.stdout.strip())
    assert not private.is_relative_to(tmp_path) and not private.exists()


def test_ziglang_linker_links_a_loadable_object(cache, monkeypatch):
    pytest.importorskip("ziglang", reason="the ziglang wheel (pip install ziglang) is absent")
    monkeypatch.setenv("HSAPY_LD_LLD", "ziglang")
    linker = toolchain.find_tool("ld.lld")
    assert linker.origin == "ziglang"
    assert linker.argv[:3] == (sys.executable, "-m", "ziglang")
    assert linker.major is not None and linker.major >= 16   # ziglang 0.11, the extra's floor
    data = toolchain.build_ir(STORE_IR, "gfx1201", linker=linker)
    header = elf_header(data)
    assert header["type"] == 3 and header["flags"] & 0xFF == MACHINE["gfx1201"]


def test_missing_linker_is_a_one_line_error_naming_packages(cache, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    monkeypatch.delenv("HSAPY_LD_LLD", raising=False)
    monkeypatch.setattr(toolchain.tools, "ziglang_argv", lambda: None)
    with pytest.raises(toolchain.ToolNotFoundError) as info:
        toolchain.build_ir(STORE_IR, "gfx942")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("ld.lld not found")
    assert "lld-19" in message and "ziglang" in message
    assert isinstance(info.value, HsapyError)


def test_find_tool_prefers_the_newest_version_on_path(cache):
    if not shutil.which("ld.lld-19"):
        pytest.skip("ld.lld-19 (Debian lld-19) is not installed")
    tool = toolchain.find_tool("ld.lld")
    assert tool.origin in ("PATH", "ROCM_PATH")
    assert tool.major is not None and tool.major >= 19


def test_min_major_skips_older_tools(cache):
    with pytest.raises(toolchain.ToolNotFoundError, match="LLVM 999 or newer"):
        toolchain.find_tool("ld.lld", min_major=999)


@pytest.mark.skipif(READELF is None, reason="llvm-readelf-19 (Debian llvm-19) is not installed")
@pytest.mark.parametrize("target,flags", [("gfx942", "gfx942"), ("gfx1201", "gfx1201")])
def test_llvm_readelf_accepts_the_code_object(cache, tmp_path, target, flags):
    path = tmp_path / f"{target}.hsaco"
    path.write_bytes(toolchain.build_ir(STORE_IR, target))
    proc = subprocess.run([READELF, "-h", "--notes", str(path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "AMDGPU - HSA" in proc.stdout
    assert f"{flags}" in proc.stdout
    assert "amdhsa.kernels" in proc.stdout and "store_one.kd" in proc.stdout
    assert "warning" not in proc.stderr.lower()


def test_pip_only_machine_links_with_ziglang(cache, monkeypatch, tmp_path):
    # No ROCm, no LLVM on PATH: llvmlite + the ziglang wheel still make a code object.
    pytest.importorskip("ziglang", reason="the ziglang wheel (pip install ziglang) is absent")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    monkeypatch.delenv("HSAPY_LD_LLD", raising=False)
    recorder = Recorder()
    with toolchain.observe(recorder):
        data = toolchain.build_ir(STORE_IR, "gfx942")
    assert elf_header(data)["flags"] & 0xFF == MACHINE["gfx942"]
    found = [event.message for event in recorder.events if event.kind == "found"]
    assert found and "from ziglang" in found[0]


# EF_AMDGPU_MACH_AMDGCN_GFX*_GENERIC (LLVM's ELF.h) and the generic version 1 in bits 31:24.
GENERIC_MACHINE = {"gfx9-generic": 0x51, "gfx11-generic": 0x54, "gfx12-generic": 0x59}


@pytest.mark.parametrize("target", sorted(GENERIC_MACHINE))
def test_generic_targets_build_as_code_object_v6(cache, target):
    data = toolchain.build_ir(STORE_IR, target, code_object_version=6)
    header = elf_header(data)
    assert header["abi_version"] == ABI_VERSION[6]
    assert header["flags"] & 0xFF == GENERIC_MACHINE[target]
    assert header["flags"] >> 24 == 1


def test_generic_target_needs_v6():
    with pytest.raises(HsapyValueError, match="needs code_object_version=6"):
        toolchain.build_ir(STORE_IR, "gfx11-generic")
    assert toolchain.BuildTarget.parse("gfx10-3-generic").major == 10
