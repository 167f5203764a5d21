"""Decoder oracle: hsapy's disassembly agrees with libLLVM-19's for every instruction of a corpus.

The corpus (tests/data/isa/build_corpus.py) is built once per session with clang-19 / llvm-mc-19
for gfx942 and gfx1201: LLVM-generated kernels covering arithmetic, conversions, memory, LDS,
atomics, DPP, VOPD and control flow, the operator suite in kernels/, and hand-written assembly
for rarer encodings. Every instruction of every executable section is compared; nothing is
skipped. Differences in printing convention are removed by :func:`normalise` only.
"""
from __future__ import annotations

import importlib.util
import re
import struct
import sys
from collections import Counter
from pathlib import Path

import pytest

from hsapy.sim.isa import decode

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO / "tests" / "data" / "isa"))

from build_corpus import build_corpus, tools_available  # noqa: E402

# e_flags machine -> target (AMDGPUUsage, "AMDGPU ELF Header").
MACHINES = {0x3F: "gfx90a", 0x40: "gfx940", 0x4C: "gfx942", 0x41: "gfx1100", 0x4E: "gfx1201",
            0x48: "gfx1200"}
SHF_EXECINSTR = 0x4


def normalise(text: str) -> str:
    """The printing conventions the comparison ignores, and nothing else:

    - runs of whitespace and trailing blanks (LLVM pads some operands with several spaces);
    - LLVM 19 closes the ``|...|`` of an abs-modified last source of v_cndmask_b32's DPP/SDWA
      forms after the following ``vcc`` operand (``|v1, vcc|``); hsapy prints ``|v1|, vcc``.
    """
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\|([^|,]+), (vcc(?:_lo)?)\|", r"|\1|, \2", text)


def _load_llvm():
    spec = importlib.util.spec_from_file_location("gen_isa_tables", REPO / "tools" / "gen_isa_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.LLVMDisassembler


def _executable_sections(data: bytes) -> tuple[str, list[tuple[str, int, bytes]]]:
    """(target, [(name, address, bytes)]) of an AMDGPU ELF's executable sections."""
    assert data[:4] == b"\x7fELF", "not an ELF file"
    (flags,) = struct.unpack_from("<I", data, 0x30)
    target = MACHINES[flags & 0xFF]
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab_offset = headers[shstrndx][4]

    def name_of(offset: int) -> str:
        start = strtab_offset + offset
        return data[start:data.index(b"\0", start)].decode()

    out = []
    for name_off, sh_type, sh_flags, addr, offset, size, *_ in headers:
        if sh_flags & SHF_EXECINSTR and sh_type == 1 and size:  # SHT_PROGBITS
            out.append((name_of(name_off), addr, data[offset:offset + size]))
    return target, out


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> list[Path]:
    reason = tools_available()
    if reason:
        pytest.skip(reason)
    try:
        _load_llvm()
    except OSError as exc:
        pytest.skip(f"libLLVM-19 not loadable: {exc}")
    return build_corpus(tmp_path_factory.mktemp("isa_corpus"))


def _compare(path: Path, llvm_cls, mnemonics: Counter) -> tuple[int, list[str]]:
    target, sections = _executable_sections(path.read_bytes())
    wave64 = path.stem.endswith("_w64")  # gfx11/gfx12 code built with -mwavefrontsize64
    dis = llvm_cls({"gfx940": "gfx942", "gfx1200": "gfx1201"}.get(target, target),
                   "+wavefrontsize64" if wave64 else "")
    count, problems = 0, []
    for name, addr, code in sections:
        insts = decode(code, target, base_offset=addr, wavefront_size=64 if wave64 else None)
        position = 0
        for inst in insts:
            size, reference = dis.disasm(code[position:position + 16], addr + position)
            mine = inst.text()
            if size != inst.size or normalise(reference) != normalise(mine):
                words = " ".join(f"{w:08X}" for w in inst.words)
                problems.append(f"{path.name} {name}+{addr + position:#x} [{words}]: "
                                f"LLVM {reference!r} ({size} bytes) != hsapy {mine!r} ({inst.size})")
            mnemonics[(target, inst.mnemonic)] += 1
            position += inst.size
            count += 1
        assert position == len(code)
    return count, problems


# gfx90a only has the prebuilt operator objects (when kernels/ ships them), so fewer files.
MIN_FILES = {"gfx942": 4, "gfx1201": 4, "gfx1100": 3, "gfx90a": 1}


@pytest.mark.parametrize("target", ["gfx942", "gfx1201", "gfx1100", "gfx90a"])
def test_hsapy_disassembly_matches_llvm_for_every_instruction(corpus, target, capsys):
    llvm_cls = _load_llvm()
    total, problems, mnemonics, files = 0, [], Counter(), 0
    for path in corpus:
        if _executable_sections(path.read_bytes())[0] != target:
            continue
        count, bad = _compare(path, llvm_cls, mnemonics)
        total += count
        problems += bad
        files += 1
    with capsys.disabled():
        print(f"\n[oracle] {target}: {files} code objects, {total} instructions, "
              f"{len(mnemonics)} distinct mnemonics, {len(problems)} disagreements")
    assert files >= MIN_FILES[target] and total > 200 * MIN_FILES[target]
    assert not problems, "\n".join(problems[:40])


def test_normalise_only_touches_whitespace_and_the_cndmask_abs_quirk():
    assert normalise("s_nop  0 ") == "s_nop 0"
    assert normalise("v_cndmask_b32_dpp v1, v2, |v3, vcc| row_shl:1") == \
        "v_cndmask_b32_dpp v1, v2, |v3|, vcc row_shl:1"
    assert normalise("v_add_f32_e32 v1, v2, v3") == "v_add_f32_e32 v1, v2, v3"
    assert normalise("v_add_f32 v1,v2") != normalise("v_add_f32 v1, v2")
