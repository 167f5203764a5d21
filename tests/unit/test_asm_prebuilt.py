"""The code objects hsapy.asm ships prebuilt (asm/prebuilt/), and the linker-less path using them.

Without ld.lld (a plain ``pip install hsapy``), toolchain.build_ir answers with the shipped code
object built from exactly the same IR, so every entry must still match the IR hsapy generates
today, and a kernel whose IR has no shipped twin must still fail with the tool's name.
"""
from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest

from hsapy import toolchain
from hsapy.asm import kernels

ASM = Path(kernels.__file__).resolve().parent


def load_build_script():
    spec = importlib.util.spec_from_file_location("asm_build", ASM / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = load_build_script()
CASES = [(stem, target) for stem in build.sources() for target in build.TARGETS]


@pytest.fixture
def no_linker(monkeypatch, tmp_path):
    """A machine with no ld.lld anywhere: empty PATH, no ROCm, no ziglang wheel."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    monkeypatch.delenv("HSAPY_LD_LLD", raising=False)
    monkeypatch.setattr(toolchain.tools, "ziglang_argv", lambda: None)
    with pytest.raises(toolchain.ToolNotFoundError):
        toolchain.find_tool("ld.lld")


def test_manifest_lists_every_kernel_and_target():
    assert set(build.load_manifest()["files"]) == {build.file_name(s, t) for s, t in CASES}


@pytest.mark.parametrize("stem,target", CASES)
def test_prebuilt_was_built_from_the_ir_hsapy_generates_today(stem, target):
    entry = build.load_manifest()["files"][build.file_name(stem, target)]
    text = build.sources()[stem](target)
    assert entry["ir_sha256"] == hashlib.sha256(text.encode()).hexdigest(), (
        f"{stem} for {target} changed: run python3 asm/build.py")
    data = (build.PREBUILT / build.file_name(stem, target)).read_bytes()
    assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["size"]
    assert data[:4] == b"\x7fELF"


def test_the_same_linker_rebuilds_the_same_bytes():
    try:
        linker = toolchain.find_tool("ld.lld")
    except toolchain.ToolNotFoundError as exc:
        pytest.skip(str(exc))
    if linker.version != build.load_manifest()["linker"]:
        pytest.skip(f"the files were linked by {build.load_manifest()['linker']}, "
                    f"this machine has {linker.version}")
    assert build.build_all(tuple(build.sources()), ("gfx942", "gfx1201"), check=True) == 0


def test_without_a_linker_the_shipped_code_object_stands_in_and_says_so(no_linker):
    events = []
    with toolchain.observe(events.append):
        data = kernels.build("vector_add", "gfx1201", cache=False)
    shipped = (build.PREBUILT / build.file_name("kernels.vector_add", "gfx1201")).read_bytes()
    assert data == shipped
    notes = [e.message for e in events if e.kind == "prebuilt"]
    assert len(notes) == 1 and "kernels.vector_add-gfx1201.hsaco" in notes[0]


def test_without_a_linker_ir_with_no_shipped_twin_still_names_the_tool(no_linker):
    # wave64 on gfx1201 is not what hsapy builds by default, so nothing was shipped for it
    with pytest.raises(toolchain.ToolNotFoundError, match="ld.lld"):
        kernels.build("vector_add", "gfx1201", wavefront_size=64, cache=False)


def test_a_shipped_file_that_does_not_match_its_hash_is_not_used(no_linker, monkeypatch,
                                                                    tmp_path):
    copy = tmp_path / "prebuilt"
    copy.mkdir()
    (copy / "MANIFEST.json").write_bytes((build.PREBUILT / "MANIFEST.json").read_bytes())
    name = build.file_name("kernels.empty", "gfx942")
    (copy / name).write_bytes(b"\x7fELF" + b"\0" * 60)
    monkeypatch.setattr(toolchain.route_ir, "prebuilt_dir", lambda: copy)
    with pytest.raises(toolchain.ToolNotFoundError):
        kernels.build("empty", "gfx942", cache=False)
