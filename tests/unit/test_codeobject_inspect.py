"""``hsapy inspect`` against LLVM's tools on a matrix of code objects (ACCEPTANCE below).

For code objects built by clang-19 from HIP (gfx942 and gfx1201 as v5, gfx942 as v4) and by
llvmlite (v5 and v6), ``hsapy inspect --json`` must agree with the metadata llvm-readelf-19
prints (every kernel's argument offsets, sizes and kinds) and with the descriptor bytes
llvm-objdump-19 dumps.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _codeobjects import build

from hsapy.cli import main

ACCEPTANCE = {
    "hip-gfx942-v5": (build.build_hip, ("gfx942", 5)),
    "hip-gfx1201-v5": (build.build_hip, ("gfx1201", 5)),
    "hip-gfx942-v4": (build.build_hip, ("gfx942", 4)),
    "llvmlite-gfx942-v5": (build.build_llvmlite, ("gfx942", 5)),
    "llvmlite-gfx1201-v6": (build.build_llvmlite, ("gfx1201", 6)),
    "llvmlite-gfx942-v6-O0": (build.build_llvmlite, ("gfx942", 6, False)),
}


def built_path(name: str) -> Path:
    builder, args = ACCEPTANCE[name]
    try:
        data = builder(*args)
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    return build.write_temp(data, f"inspect-{name}.hsaco")


def inspect_json(capsys, *argv: str) -> dict:
    assert main(["inspect", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", sorted(ACCEPTANCE))
def test_inspect_json_agrees_with_readelf_and_objdump(capsys, name):
    path = built_path(name)
    doc = inspect_json(capsys, str(path))
    try:
        llvm = build.readelf_metadata(path)
        rodata = build.objdump_bytes(path, ".rodata")
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    llvm_kernels = {k[".name"]: k for k in llvm["amdhsa.kernels"]}
    assert [k["name"] for k in doc["kernels"]] == list(llvm_kernels)
    for kernel in doc["kernels"]:
        expected = llvm_kernels[kernel["name"]]
        ours = [(a["offset"], a["size"], a["value_kind"]) for a in kernel["args"]]
        theirs = [(a[".offset"], a[".size"], a[".value_kind"]) for a in expected.get(".args", [])]
        assert ours == theirs
        # The layout table (explicit + hidden, offset order) is the same list.
        assert sorted(ours) == [(r["offset"], r["size"], r["kind"]) for r in kernel["layout"]]
        assert kernel["kernarg_segment_size"] == expected[".kernarg_segment_size"]
        raw = bytes(rodata[kernel["descriptor_vaddr"] + i] for i in range(64))
        assert kernel["descriptor"]["raw"] == raw.hex()
        assert kernel["resources"]["vgpr_count"] == expected[".vgpr_count"]
        assert kernel["resources"]["sgpr_count"] == expected[".sgpr_count"]
    assert doc["code_object_version"] == ACCEPTANCE[name][1][1]


def test_inspect_text_shows_resources_descriptor_and_hidden_arguments(capsys):
    path = built_path("hip-gfx942-v5")
    assert main(["inspect", str(path), "--kernel", "dims"]) == 0
    out = capsys.readouterr().out
    assert "target   gfx942  (xnack any, sramecc any; e_flags 0x54c)" in out
    assert "version  code object v5" in out
    assert "kernel dims" in out and "kernel mixed" not in out
    assert "resources  VGPRs" in out and "AGPRs 0" in out and "SGPRs" in out
    assert "compute_pgm_rsrc2" in out and "user_sgpr_count=" in out
    assert "hidden_block_count_x" in out and "hidden_grid_dims" in out
    assert "reloc    R_AMDGPU_RELATIVE64" in out


def test_inspect_bundle_lists_every_entry_or_the_chosen_one(capsys):
    try:
        bundle = build.build_hip_bundle(("gfx942", "gfx1201"))
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    path = build.write_temp(bundle, "inspect-bundle.o")
    doc = inspect_json(capsys, str(path))
    assert sorted(d["target"] for d in doc["bundle"]) == ["gfx1201", "gfx942"]
    doc = inspect_json(capsys, str(path), "--target", "gfx1201")
    assert [d["target"] for d in doc["bundle"]] == ["gfx1201"]
    assert main(["inspect", str(path), "--target", "gfx90a"]) == 1
    err = capsys.readouterr().err
    assert "gfx90a" in err and "gfx942" in err


def test_inspect_disasm_uses_a_new_enough_llvm_objdump(capsys):
    try:
        data = build.build_asm("gfx942", 5)
        build.tool("llvm-objdump-19")
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    path = build.write_temp(data, "inspect-asm.hsaco")
    assert main(["inspect", str(path), "--disasm"]) == 0
    out = capsys.readouterr().out
    assert "; disassembly by llvm-objdump" in out
    assert "s_endpgm" in out
    assert "LLVM 14" not in out


def test_inspect_disasm_says_plainly_when_no_objdump_is_found(capsys, monkeypatch, tmp_path):
    try:
        data = build.build_asm("gfx942", 5)
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    path = build.write_temp(data, "inspect-asm2.hsaco")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path))
    assert main(["inspect", str(path), "--disasm"]) == 0
    out = capsys.readouterr().out
    assert "no disassembly: no llvm-objdump of LLVM 17 or newer was found" in out


@pytest.mark.parametrize("content, message", [
    (None, "cannot read"),
    (b"not a code object at all", "not an ELF file"),
    (b"\x7fELF" + bytes(30), "truncated ELF header"),
])
def test_inspect_errors_exit_1_with_a_message(capsys, tmp_path, content, message):
    path = tmp_path / "x.hsaco"
    if content is not None:
        path.write_bytes(content)
    assert main(["inspect", str(path)]) == 1
    assert message in capsys.readouterr().err


def test_console_script_runs_inspect():
    path = built_path("llvmlite-gfx942-v5")
    result = subprocess.run([sys.executable, "-m", "hsapy", "inspect", "--json", str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["kernels"][0]["name"] == "scale"


# Registers capped below what 48 live accumulators need: clang-19 spills SGPRs and VGPRs.
SPILLING_KERNEL = r'''
extern "C" __attribute__((global, amdgpu_num_vgpr(24), amdgpu_num_sgpr(24)))
void spill(float *out, const float *in, int n) {
  int tid = __builtin_amdgcn_workitem_id_x();
  float acc[48];
#pragma unroll
  for (int k = 0; k < 48; ++k) acc[k] = in[tid * 48 + k];
  for (int i = 0; i < n; ++i) {
#pragma unroll
    for (int k = 0; k < 48; ++k) acc[k] = acc[k] * acc[(k + 7) % 48] + in[i + k];
  }
  float s = 0;
#pragma unroll
  for (int k = 0; k < 48; ++k) s += acc[k] * k;
  out[tid] = s;
}
'''


def test_inspect_json_has_the_raw_metadata_spill_counts_and_uniform_workgroups(capsys):
    try:
        path = build.write_temp(build.build_hip("gfx942", 5, SPILLING_KERNEL), "spill.hsaco")
        llvm = build.readelf_metadata(path)
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    doc = inspect_json(capsys, str(path))
    theirs = llvm["amdhsa.kernels"][0]
    raw = doc["metadata"]["amdhsa.kernels"][0]
    assert raw[".name"] == "spill" and raw[".sgpr_spill_count"] == theirs[".sgpr_spill_count"]
    assert [a[".offset"] for a in raw[".args"]] == [a[".offset"] for a in theirs[".args"]]
    resources = doc["kernels"][0]["resources"]
    assert resources["sgpr_spill_count"] == theirs[".sgpr_spill_count"] > 0
    assert resources["vgpr_spill_count"] == theirs[".vgpr_spill_count"] > 0
    assert doc["kernels"][0]["uniform_work_group_size"] is bool(
        theirs[".uniform_work_group_size"])
    assert main(["inspect", str(path)]) == 0
    text = capsys.readouterr().out
    assert f"SGPR spills {theirs['.sgpr_spill_count']}" in text
    assert f"VGPR spills {theirs['.vgpr_spill_count']}" in text
