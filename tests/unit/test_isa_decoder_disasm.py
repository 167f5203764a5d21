"""``decode_kernel`` and ``hsapy disasm`` on real code objects.

The code objects are the operator suite's checked-in builds (kernels/prebuilt, rebuilt by
kernels/build.py) and, for offload bundles, a vector add built here with clang-19.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hsapy.cli import main
from hsapy.codeobject import CodeObject
from hsapy.sim.isa import DecodeError, decode_kernel
from hsapy.sim.isa.disasm import disassemble, functions

REPO = Path(__file__).resolve().parent.parent.parent
PREBUILT = REPO / "kernels" / "prebuilt"
LINE = re.compile(r"^  ([0-9a-f]{8}): ((?:[0-9A-F]{8} ?){1,3})\s+(\S.*)$")


def _prebuilt(name: str) -> Path:
    path = PREBUILT / name
    assert path.exists(), f"{path} is checked in by kernels/build.py"
    return path


@pytest.mark.parametrize("file,kernel", [("vector_add-gfx942.hsaco", "vector_add_v0"),
                                         ("vector_add-gfx1201.hsaco", "vector_add_v0"),
                                         ("reduction-gfx90a.hsaco", None),
                                         ("softmax-gfx1100.hsaco", None)])
def test_decode_kernel_covers_the_function_symbol(file, kernel):
    data = _prebuilt(file).read_bytes()
    co = CodeObject.from_bytes(data)
    kernel = kernel or sorted(co.kernels)[0]
    insts = decode_kernel(data, kernel)
    entry = co.kernels[kernel].entry_vaddr
    assert insts[0].offset == entry
    end = insts[-1].offset + insts[-1].size
    assert end - entry == co.symbols[kernel].size
    assert any(inst.name == "s_endpgm" for inst in insts)
    # contiguous: every instruction starts where the previous one ended
    for before, after in zip(insts, insts[1:]):
        assert after.offset == before.offset + before.size


def test_decode_kernel_accepts_a_code_object_and_names_missing_kernels():
    data = _prebuilt("vector_add-gfx942.hsaco").read_bytes()
    co = CodeObject.from_bytes(data)
    assert decode_kernel(co, "vector_add_v0") == decode_kernel(data, "vector_add_v0")
    with pytest.raises(ValueError, match="vector_add_v0"):
        decode_kernel(co, "no_such_kernel")


def test_listing_has_address_words_and_text_for_every_instruction():
    data = _prebuilt("vector_add-gfx942.hsaco").read_bytes()
    text = disassemble(data, kernel="vector_add_v1_strided")
    lines = text.splitlines()
    assert lines[0].startswith("; gfx942 code object")
    assert any(line.endswith("<vector_add_v1_strided>:") for line in lines)
    body = [line for line in lines if line.startswith("  ")]
    insts = decode_kernel(data, "vector_add_v1_strided")
    co = CodeObject.from_bytes(data)
    span = next(f for f in functions(co, co.data) if f.name == "vector_add_v1_strided")
    # the listing runs to the next function (padding included); the kernel is a prefix of it
    assert len(body) >= len(insts)
    for line, inst in zip(body, insts):
        match = LINE.match(line)
        assert match, line
        assert int(match.group(1), 16) == inst.offset
        assert match.group(2).split() == [f"{w:08X}" for w in inst.words]
        assert match.group(3).split("  //")[0] == inst.text()
    assert int(LINE.match(body[-1]).group(1), 16) < span.end


def test_branch_comments_name_the_target_inside_the_function():
    data = _prebuilt("reduction-gfx942.hsaco").read_bytes()
    text = disassemble(data)
    branches = [line for line in text.splitlines() if "s_cbranch" in line or "s_branch" in line]
    assert branches
    for line in branches:
        assert re.search(r"// -> 0x[0-9a-f]+ <\w+(\+0x[0-9a-f]+)?>", line), line


def test_cli_disasm_prints_one_kernel(capsys):
    path = _prebuilt("vector_add-gfx1201.hsaco")
    assert main(["disasm", str(path), "--kernel", "vector_add_v0"]) == 0
    out = capsys.readouterr().out
    assert "<vector_add_v0>:" in out and "<vector_add_v1" not in out
    assert "s_endpgm" in out


def test_cli_disasm_errors_are_one_line_with_the_fix(capsys, tmp_path):
    path = _prebuilt("vector_add-gfx942.hsaco")
    assert main(["disasm", str(path), "--kernel", "nope"]) == 1
    err = capsys.readouterr().err
    assert "no kernel 'nope'" in err and "vector_add_v0" in err
    assert main(["disasm", str(tmp_path / "missing.hsaco")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_undecodable_code_raises_before_anything_runs(tmp_path):
    data = bytearray(_prebuilt("vector_add-gfx942.hsaco").read_bytes())
    co = CodeObject.from_bytes(bytes(data))
    entry = co.kernels["vector_add_v0"].entry_vaddr
    seg = next(s for s in co.segments if s.flags & 1)
    file_offset = seg.offset + entry - seg.vaddr
    data[file_offset:file_offset + 4] = b"\xff\xff\xff\xff"
    with pytest.raises(DecodeError) as info:
        decode_kernel(bytes(data), "vector_add_v0")
    assert info.value.offset == entry
    assert "gfx942" in str(info.value)


@pytest.mark.skipif(shutil.which("clang-19") is None, reason="clang-19 not installed (Debian clang-19)")
def test_cli_disasm_reads_an_offload_bundle(tmp_path, capsys):
    src = tmp_path / "k.hip"
    src.write_text('#define __global__ __attribute__((global))\n'
                   'extern "C" __global__ void scale(float* p) {\n'
                   '  p[__builtin_amdgcn_workitem_id_x()] *= 2.0f;\n}\n')
    bundle = tmp_path / "k.bundle"
    subprocess.run(["clang-19", "-x", "hip", "--offload-arch=gfx942", "--offload-arch=gfx1201",
                    "--cuda-device-only", "-nogpulib", "-nogpuinc", "-O2", "-o", str(bundle),
                    str(src)], check=True, capture_output=True, timeout=120)
    assert bundle.read_bytes().startswith(b"__CLANG_OFFLOAD_BUNDLE__")
    assert main(["disasm", str(bundle)]) == 1
    assert "--target" in capsys.readouterr().err
    assert main(["disasm", str(bundle), "--target", "gfx1201"]) == 0
    out = capsys.readouterr().out
    assert "gfx1201 code object" in out and "<scale>:" in out and "global_store_b32" in out


@pytest.mark.skipif(shutil.which("clang-19") is None, reason="clang-19 not installed (Debian clang-19)")
def test_wave64_gfx1201_kernel_decodes_with_64_bit_lane_masks(tmp_path):
    src = tmp_path / "k.hip"
    src.write_text('#define __global__ __attribute__((global))\n'
                   'extern "C" __global__ void clip(float* p, int n) {\n'
                   '  unsigned i = __builtin_amdgcn_workitem_id_x();\n'
                   '  if ((int)i < n) p[i] = p[i] > 1.0f ? 1.0f : p[i];\n}\n')
    out = tmp_path / "k.co"
    subprocess.run(["clang-19", "-x", "hip", "--offload-arch=gfx1201", "-mwavefrontsize64",
                    "--cuda-device-only", "--no-gpu-bundle-output", "-nogpulib", "-nogpuinc", "-O2",
                    "-o", str(out), str(src)], check=True, capture_output=True, timeout=120)
    data = out.read_bytes()
    assert CodeObject.from_bytes(data).kernels["clip"].wavefront_size == 64
    insts = decode_kernel(data, "clip")
    masks = [op for inst in insts for op in inst.dsts + inst.srcs if op.name.startswith("vcc")]
    assert masks and all(op.name == "vcc" and op.count == 2 for op in masks)
    assert "vcc_lo" not in disassemble(data)


# --- listings that go on, and device functions' wave size ---------------------------------------

OBJDUMP_LINE = re.compile(r"^\s+(\S.*?)\s+// ([0-9A-F]{12}): ([0-9A-F ]+?)(?: <[^>]*>)?$")


def _objdump(path: Path, mattr: str = "") -> dict[int, str]:
    """address -> instruction text, as llvm-objdump-19 prints a code object."""
    if shutil.which("llvm-objdump-19") is None:
        pytest.skip("llvm-objdump-19 not installed (Debian llvm-19)")
    # -z: list zero words too (by default llvm-objdump folds runs of them into "...")
    args = ["llvm-objdump-19", "-d", "-z", str(path)] + ([f"--mattr={mattr}"] if mattr else [])
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=120).stdout
    listing = {}
    for line in out.splitlines():
        match = OBJDUMP_LINE.match(line)
        if match:
            listing[int(match.group(2), 16)] = re.sub(r"\s+", " ", match.group(1)).strip()
    return listing


def _mine(text: str) -> dict[int, str]:
    listing = {}
    for line in text.splitlines():
        match = LINE.match(line)
        if match:
            mine = match.group(3).split("  //")[0]
            listing[int(match.group(1), 16)] = re.sub(r"\s+", " ", mine).strip()
    return listing


def test_listing_goes_on_past_undecodable_words_as_llvm_objdump_does(tmp_path):
    data = bytearray(_prebuilt("vector_add-gfx942.hsaco").read_bytes())
    co = CodeObject.from_bytes(bytes(data))
    entry = co.kernels["vector_add_v0"].entry_vaddr
    seg = next(s for s in co.segments if s.flags & 1)
    at = seg.offset + entry - seg.vaddr + 8
    data[at:at + 8] = bytes.fromhex("ffff007e" "ffffff7f")     # two words no table knows
    path = tmp_path / "bad.hsaco"
    path.write_bytes(bytes(data))
    text = disassemble(bytes(data))
    mine, theirs = _mine(text), _objdump(path)
    assert mine[entry + 8] == ".long 0x7e00ffff" and mine[entry + 12] == ".long 0x7fffffff"
    assert "not decodable for gfx942" in text
    assert mine == theirs                         # every other line too, in every function


HELPERS = r"""
#define KERNEL extern "C" __attribute__((global))
__attribute__((device, noinline)) float clip(float x, float hi) { return x > hi ? hi : x; }
__attribute__((device, noinline)) float twice_clip(float x) { return 2.0f * clip(x, 1.0f); }
KERNEL void run(float* p, int n) {
  unsigned i = __builtin_amdgcn_workitem_id_x();
  if ((int)i < n) p[i] = twice_clip(p[i]);
}
"""


def _build(tmp_path: Path, name: str, source: str, target: str, *flags: str) -> Path:
    if shutil.which("clang-19") is None:
        pytest.skip("clang-19 not installed (Debian clang-19)")
    src = tmp_path / f"{name}.hip"
    src.write_text(source)
    out = tmp_path / f"{name}.co"
    subprocess.run(["clang-19", "-x", "hip", f"--offload-arch={target}", *flags,
                    "--cuda-device-only", "--no-gpu-bundle-output", "-nogpulib", "-nogpuinc",
                    "-O2", "-o", str(out), str(src)], check=True, capture_output=True, timeout=120)
    return out


def test_device_functions_take_the_wave_size_of_the_kernel_that_calls_them(tmp_path):
    path = _build(tmp_path, "helpers", HELPERS, "gfx1201", "-mwavefrontsize64")
    text = disassemble(path.read_bytes())
    assert "<_Z4clipff>:" in text and "<_Z10twice_clipf>:" in text
    assert "vcc_lo" not in text and " vcc" in text
    assert _mine(text) == _objdump(path, "+wavefrontsize64")


def test_wave32_and_wave64_units_linked_together_decode_each_their_way(tmp_path):
    if shutil.which("ld.lld-19") is None:
        pytest.skip("ld.lld-19 not installed (Debian lld-19)")
    units = []
    for wave, flags in ((32, ()), (64, ("-mwavefrontsize64",))):
        source = HELPERS.replace("clip", f"clip{wave}").replace("void run", f"void run{wave}")
        src = tmp_path / f"w{wave}.hip"
        src.write_text(source)
        obj = tmp_path / f"w{wave}.bc"
        subprocess.run(["clang-19", "-x", "hip", "--offload-arch=gfx1201", *flags,
                        "--cuda-device-only", "-fgpu-rdc", "-nogpulib", "-nogpuinc", "-O2", "-c",
                        str(src), "-o", str(obj)], check=True, capture_output=True, timeout=120)
        units.append(str(obj))
    path = tmp_path / "mixed.co"
    subprocess.run(["ld.lld-19", "-shared", "-plugin-opt=mcpu=gfx1201", *units, "-o", str(path)],
                   check=True, capture_output=True, timeout=120)
    data = path.read_bytes()
    co = CodeObject.from_bytes(data)
    assert {co.kernels[k].wavefront_size for k in co.kernels} == {32, 64}
    mine = _mine(disassemble(data))
    wave32, wave64 = _objdump(path), _objdump(path, "+wavefrontsize64")
    for func in functions(co, data):
        wide = "64" in func.name
        for address in range(func.start, func.end, 4):
            if address in mine:
                assert mine[address] == (wave64 if wide else wave32)[address], (func.name,
                                                                                  hex(address))
