"""The target table agrees with LLVM: ELF machine numbers (llvm/BinaryFormat/ELF.h), wave sizes
and ISA names (what llvm-mc-19 reports as the .amdgcn_target for the CPU), and s_endpgm words."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hsapy.sim.executors import S_ENDPGM
from hsapy.sim.targets import GPU_PROFILES, resolve_targets

ELF_H = Path("/usr/lib/llvm-19/include/llvm/BinaryFormat/ELF.h")


@pytest.mark.parametrize("name", sorted(GPU_PROFILES))
def test_elf_machine_matches_llvm(name):
    if not ELF_H.exists():
        pytest.skip("llvm-19 headers not installed (Debian package llvm-19-dev)")
    text = ELF_H.read_text()
    match = re.search(rf"EF_AMDGPU_MACH_AMDGCN_{name.upper()}\s*=\s*(0x[0-9a-fA-F]+)", text)
    assert match, name
    assert GPU_PROFILES[name].elf_machine == int(match.group(1), 16)


@pytest.mark.parametrize("name", sorted(GPU_PROFILES))
def test_isa_name_and_s_endpgm_match_llvm_mc(name):
    tool = shutil.which("llvm-mc-19")
    if tool is None:
        pytest.skip("llvm-mc-19 not installed (Debian package llvm-19)")
    profile = GPU_PROFILES[name]
    result = subprocess.run(
        [tool, "-triple=amdgcn-amd-amdhsa", f"-mcpu={name}", "-show-encoding"],
        input="s_endpgm\n", capture_output=True, text=True, check=True, timeout=60,
    )
    target = re.search(r'\.amdgcn_target "([^"]+)"', result.stdout).group(1)
    assert profile.isa_name.split(":")[0] == target
    encoding = re.search(r"encoding: \[([^\]]+)\]", result.stdout).group(1)
    word = int.from_bytes(bytes(int(b, 16) for b in encoding.split(",")), "little")
    assert S_ENDPGM[profile.family] == word


@pytest.mark.parametrize("name, wave", [("gfx942", 64), ("gfx90a", 64), ("gfx1100", 32),
                                        ("gfx1201", 32)])
def test_default_wave_sizes(name, wave):
    assert GPU_PROFILES[name].wavefront_size == wave


def test_resolve_targets_accepts_feature_suffixes_and_lists():
    assert [p.name for p in resolve_targets("gfx942:sramecc+:xnack-, gfx1201")] == ["gfx942",
                                                                                     "gfx1201"]
    assert [p.name for p in resolve_targets(["gfx90a"])] == ["gfx90a"]
