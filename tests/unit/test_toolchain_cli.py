"""``hsapy build``: the command line over hsapy.toolchain and hsapy.asm."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from test_toolchain import ABI_VERSION, MACHINE, READELF, STORE_IR, elf_header

from hsapy import cli

HSAPY = [sys.executable, "-m", "hsapy"]
needs_readelf = pytest.mark.skipif(READELF is None,
                                   reason="llvm-readelf-19 (Debian llvm-19) is not installed")


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """One cache for this module: tool probes run once (results differ by key anyway)."""
    return tmp_path_factory.mktemp("hsapy-cache")


@pytest.fixture
def env(shared_cache, monkeypatch):
    monkeypatch.setenv("HSAPY_CACHE_DIR", str(shared_cache))
    return {**os.environ, "HSAPY_CACHE_DIR": str(shared_cache)}


def hsapy_build(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(HSAPY + ["build", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def readelf(path) -> str:
    proc = subprocess.run([READELF, "-h", "--notes", str(path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr
    return proc.stdout


@needs_readelf
@pytest.mark.parametrize("linker", ["default", "ziglang"])
@pytest.mark.parametrize("target,flags", [("gfx942", "0x54C, gfx942"), ("gfx1201", "0x4E, gfx1201")])
def test_build_asm_vector_add(env, tmp_path, target, flags, linker):
    if linker == "ziglang":
        pytest.importorskip("ziglang", reason="the ziglang wheel (pip install ziglang) is absent")
        env = {**env, "HSAPY_LD_LLD": "ziglang"}
    out = tmp_path / "va.hsaco"
    proc = hsapy_build(["asm:vector_add", "--target", target, "-o", str(out), "--verbose"], env)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stdout and "kernels: vector_add" in proc.stdout
    if linker == "ziglang":
        assert "-m ziglang ld.lld" in proc.stderr
    listing = readelf(out)
    assert re.search(rf"Flags:\s+{flags}", listing)
    assert re.search(r"ABI Version:\s+3", listing)  # code object v5
    assert "AMDGPU - HSA" in listing and "vector_add.kd" in listing


def test_second_build_is_a_cache_hit_with_no_commands(env, tmp_path):
    env = {**env, "HSAPY_CACHE_DIR": str(tmp_path / "fresh-cache")}
    args = ["asm:empty", "--target", "gfx1201", "-o", str(tmp_path / "e.hsaco"), "--verbose"]
    first = hsapy_build(args, env)
    assert first.returncode == 0, first.stderr
    assert "[run]" in first.stderr and "[cache-store]" in first.stderr
    second = hsapy_build(args, env)
    assert second.returncode == 0, second.stderr
    assert "[cache-hit]" in second.stderr
    assert "[run]" not in second.stderr and "[llvm]" not in second.stderr
    assert "[probe]" not in second.stderr  # tool versions are remembered in the cache too
    assert "[found] ld.lld" in second.stderr


@pytest.mark.parametrize("version", [4, 6])
def test_code_object_version_option(env, tmp_path, version):
    out = tmp_path / "e.hsaco"
    assert cli.main(["build", "asm:empty", "--target", "gfx942", "-o", str(out),
                     "--code-object-version", str(version)]) == 0
    assert elf_header(out.read_bytes())["abi_version"] == ABI_VERSION[version]


def test_build_ll_file_default_output_name(env, tmp_path, monkeypatch, capsys):
    source = tmp_path / "store.ll"
    source.write_text(STORE_IR)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["build", str(source), "--target", "gfx1100"]) == 0
    data = (tmp_path / "store-gfx1100.hsaco").read_bytes()
    assert elf_header(data)["flags"] & 0xFF == MACHINE["gfx1100"]
    assert "kernels: store_one" in capsys.readouterr().out


def test_wave64_option_on_gfx12(env, tmp_path):
    out = tmp_path / "va64.hsaco"
    assert cli.main(["build", "asm:vector_add", "--target", "gfx1201", "-o", str(out),
                     "--wavefront-size", "64"]) == 0
    from hsapy.codeobject import CodeObject

    assert CodeObject.from_bytes(out.read_bytes()).kernels["vector_add"].wavefront_size == 64


@pytest.mark.skipif(shutil.which("clang-19") is None,
                    reason="clang-19 (Debian clang-19) is not installed")
def test_build_hip_file_with_defines(env, tmp_path):
    source = tmp_path / "fill.hip"
    source.write_text('extern "C" __global__ void fill(float* p) { p[threadIdx.x] = VALUE; }\n')
    out = tmp_path / "fill.hsaco"
    assert cli.main(["build", str(source), "--target", "gfx1201", "-o", str(out),
                     "-D", "VALUE=3.0f", "--compiler", "clang"]) == 0
    assert b"fill.kd" in out.read_bytes()


@pytest.mark.parametrize("args,message", [
    (["missing.hip", "--target", "gfx942"], "missing.hip does not exist"),
    (["asm:nope", "--target", "gfx942"], "no kernel 'nope'"),
    (["asm:empty", "--target", "sm_90"], "unknown target 'sm_90'"),
    (["asm:empty", "--target", "gfx942", "--wavefront-size", "32"], "gfx942 does not run wave32"),
])
def test_errors_are_one_line_and_exit_1(env, tmp_path, capsys, args, message):
    assert cli.main(["build", *args, "-o", str(tmp_path / "x.hsaco")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hsapy build: ") and message in err
    assert err.count("\n") == 1
    assert not (tmp_path / "x.hsaco").exists()


def test_unknown_suffix(env, tmp_path, capsys):
    source = tmp_path / "kernel.txt"
    source.write_text("nothing")
    assert cli.main(["build", str(source), "--target", "gfx942"]) == 1
    assert "expected .ll" in capsys.readouterr().err
