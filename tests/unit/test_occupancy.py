"""hsapy.occupancy: resident waves from a kernel's resources and the target's published limits.

Two kinds of expectations: hand-computed figures at the VGPR, AGPR, SGPR and LDS limits from the
numbers the ISA guides publish (CDNA3: 512 unified VGPRs per SIMD lane, granule 8, 8 waves per
SIMD, 64 KiB LDS per CU; RDNA4: 1536 VGPRs per SIMD lane in wave32 (768 in wave64), granule 24
(12), 16 waves per SIMD, 128 KiB LDS per WGP), and LLVM's own occupancy for real kernels (the
``; Occupancy:`` line the AMDGPU backend prints), read from the code objects' metadata and
descriptors as ``hsapy profile`` does."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from hsapy.codeobject import CodeObject
from hsapy.errors import HsapyValueError
from hsapy.occupancy import kernel_occupancy, occupancy

HAND = [
    # target, wave, workgroup, vgprs, agprs, sgprs, lds, waves per SIMD, limiting
    ("gfx942", 64, 64, 64, 0, 16, 0, 8, "waves"),          # 512 / 64 = 8 = the ceiling
    ("gfx942", 64, 64, 65, 0, 16, 0, 7, "vgprs"),          # 72 allocated: 512 / 72 = 7
    ("gfx942", 64, 64, 128, 0, 16, 0, 4, "vgprs"),
    ("gfx942", 64, 64, 256, 0, 16, 0, 2, "vgprs"),
    ("gfx942", 64, 64, 256, 256, 16, 0, 1, "vgprs"),       # 256 VGPRs + 256 AGPRs: one wave
    ("gfx942", 64, 64, 100, 28, 16, 0, 4, "vgprs"),        # AGPRs from 100 (rounded to 4): 128
    ("gfx942", 64, 64, 32, 0, 102, 0, 7, "sgprs"),         # more than 100 SGPRs: 7 waves
    ("gfx942", 64, 256, 32, 0, 16, 65536, 1, "lds"),       # one 4-wave workgroup per CU
    ("gfx942", 64, 256, 32, 0, 16, 32768, 2, "lds"),
    ("gfx942", 64, 256, 32, 0, 16, 16385, 3, "lds"),       # 16896 allocated: 3 per CU
    ("gfx1201", 32, 32, 96, 0, 16, 0, 16, "waves"),        # 1536 / 96 = 16 = the ceiling
    ("gfx1201", 32, 32, 128, 0, 16, 0, 10, "vgprs"),       # 144 allocated: 1536 / 144 = 10
    ("gfx1201", 32, 32, 256, 0, 16, 0, 5, "vgprs"),        # 264 allocated
    ("gfx1201", 64, 64, 64, 0, 16, 0, 10, "vgprs"),        # wave64: 72 of 768
    ("gfx1201", 64, 64, 128, 0, 16, 0, 5, "vgprs"),        # 132 of 768
    ("gfx1201", 32, 256, 16, 0, 120, 0, 16, "waves"),      # SGPRs never limit on RDNA
]


@pytest.mark.parametrize("target,wave,wg,vgprs,agprs,sgprs,lds,expected,limit", HAND)
def test_published_limits_give_the_hand_computed_waves_per_simd(target, wave, wg, vgprs,
                                                                agprs, sgprs, lds, expected,
                                                                limit):
    occ = occupancy(target, wave_size=wave, workgroup_size=wg, vgprs=vgprs, agprs=agprs,
                    sgprs=sgprs, lds_bytes=lds)
    assert occ.waves_per_simd == expected
    assert limit in occ.limiting


def test_a_workgroup_in_wgp_mode_shares_a_wgp_s_128_kib_and_four_simds():
    cu = occupancy("gfx1201", wave_size=32, workgroup_size=256, vgprs=16, lds_bytes=65536)
    wgp = occupancy("gfx1201", wave_size=32, workgroup_size=256, vgprs=16, lds_bytes=65536,
                    wgp_mode=True)
    assert (cu.unit, cu.simds, cu.workgroups_per_unit, cu.waves_per_simd) == ("CU", 2, 1, 4)
    assert (wgp.unit, wgp.simds, wgp.workgroups_per_unit, wgp.waves_per_simd) == \
        ("WGP", 4, 2, 4)


def test_resident_waves_come_in_whole_workgroups():
    # 264 VGPRs allow 5 waves per SIMD, 20 per WGP; 8-wave workgroups fit twice: 16 waves
    occ = occupancy("gfx1201", wave_size=32, workgroup_size=256, vgprs=241, wgp_mode=True)
    assert occ.limits["vgprs"] == 2 and occ.waves_per_unit == 16 and occ.waves_per_simd == 4


def test_more_lds_than_a_cu_has_is_said():
    occ = occupancy("gfx942", wave_size=64, workgroup_size=64, vgprs=8, lds_bytes=70000)
    assert occ.workgroups_per_unit == 0
    assert any("cannot run" in note for note in occ.notes)


def test_unknown_targets_and_wave_sizes_are_refused():
    with pytest.raises(HsapyValueError, match="gfx803"):
        occupancy("gfx803", wave_size=64, workgroup_size=64, vgprs=8)
    with pytest.raises(HsapyValueError, match="wave32"):
        occupancy("gfx942", wave_size=32, workgroup_size=64, vgprs=8)


def _kernel_ir(lds: int, workgroup: int, vectors: int) -> str:
    """A kernel holding ``vectors`` floats live per lane (register pressure) and touching
    ``lds`` bytes of LDS, for workgroups of exactly ``workgroup`` work-items."""
    lines = ['target triple = "amdgcn-amd-amdhsa"']
    if lds:
        lines.append(f"@lds = internal addrspace(3) global [{lds // 4} x float] poison, align 4")
    lines += [
        "define amdgpu_kernel void @k(ptr addrspace(1) %p) #0 {",
        "  %id = call i32 @llvm.amdgcn.workitem.id.x()",
        "  %base = getelementptr float, ptr addrspace(1) %p, i32 %id",
        f"  %v = load volatile <{vectors} x float>, ptr addrspace(1) %base",
        f"  %w = load volatile <{vectors} x float>, ptr addrspace(1) %p",
        f"  %x = fmul <{vectors} x float> %v, %w",
        f"  store volatile <{vectors} x float> %x, ptr addrspace(1) %base",
        f"  store volatile <{vectors} x float> %w, ptr addrspace(1) %base"]
    if lds:
        lines += [f"  %l = getelementptr [{lds // 4} x float], ptr addrspace(3) @lds, i32 0, "
                  "i32 %id", "  store volatile float 1.0, ptr addrspace(3) %l"]
    lines += ["  ret void", "}", "declare i32 @llvm.amdgcn.workitem.id.x()",
              f'attributes #0 = {{ "amdgpu-flat-work-group-size"="{workgroup},{workgroup}" }}']
    return "\n".join(lines)


LLVM_CASES = [
    # target, wave size, LDS bytes, workgroup, live floats
    ("gfx942", 64, 0, 64, 4), ("gfx942", 64, 0, 64, 100), ("gfx942", 64, 0, 64, 200),
    ("gfx942", 64, 32768, 256, 4), ("gfx942", 64, 8192, 64, 4), ("gfx942", 64, 40000, 1024, 4),
    ("gfx1201", 32, 0, 32, 4), ("gfx1201", 32, 0, 32, 120), ("gfx1201", 32, 0, 32, 200),
    ("gfx1201", 32, 32768, 256, 4), ("gfx1201", 32, 65536, 256, 4),
    ("gfx1201", 64, 0, 64, 120), ("gfx1201", 64, 16384, 256, 4),
    ("gfx1100", 32, 0, 32, 120), ("gfx90a", 64, 0, 64, 100),
]


def _llc(ir: str, target: str, wave: int, *options: str) -> subprocess.CompletedProcess:
    llc = shutil.which("llc-19")
    if llc is None:
        pytest.skip("llc-19 not found (Debian package llvm-19)")
    cmd = [llc, "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={target}", *options]
    if wave == 64 and not target.startswith("gfx9"):
        cmd.append("-mattr=+wavefrontsize64")
    return subprocess.run(cmd, input=ir.encode(), capture_output=True, check=True, timeout=120)


@pytest.mark.parametrize("target,wave,lds,workgroup,vectors", LLVM_CASES)
def test_llvm_reports_the_same_occupancy_for_real_kernels(target, wave, lds, workgroup,
                                                          vectors, tmp_path):
    lld = shutil.which("ld.lld-19")
    if lld is None:
        pytest.skip("ld.lld-19 not found (Debian package lld-19)")
    ir = _kernel_ir(lds, workgroup, vectors)
    asm = _llc(ir, target, wave, "-o", "-").stdout.decode()
    llvm = int(re.search(r"; Occupancy: (\d+)", asm).group(1))
    obj = tmp_path / "k.o"
    obj.write_bytes(_llc(ir, target, wave, "-filetype=obj", "-o", "-").stdout)
    subprocess.run([lld, "-shared", str(obj), "-o", str(tmp_path / "k.hsaco")], check=True,
                   capture_output=True, timeout=120)
    info = CodeObject.from_bytes((tmp_path / "k.hsaco").read_bytes()).kernels["k"]
    occ = kernel_occupancy(info, target, workgroup)
    assert occ.wave_size == wave
    assert occ.waves_per_simd == llvm, (occ, info.vgpr_count, info.agpr_count)
