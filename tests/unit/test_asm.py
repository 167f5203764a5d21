"""hsapy.asm: the llvmlite authoring layer and the kernels written with it."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from test_toolchain import ABI_VERSION, MACHINE, READELF, Recorder, elf_header

from hsapy import toolchain
from hsapy.asm import kernels
from hsapy.asm.dsl import F32, GLOBAL_PTR, I32, KernelBuilder
from hsapy.errors import HsapyValueError

LLVM_MC = shutil.which("llvm-mc-19")
TARGETS = ["gfx942", "gfx1201", "gfx1100", "gfx90a"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HSAPY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def strip_target_attributes(text: str) -> str:
    return re.sub(r' ?"(target-cpu|target-features)"="[^"]*"', "", text)


@pytest.mark.parametrize("name", ["empty", "timestamp", "vector_add"])
@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_kernels_build_to_loadable_code_objects(cache, name, target):
    header = elf_header(kernels.build(name, target))
    assert header["type"] == 3
    assert header["abi_version"] == ABI_VERSION[5]
    assert header["flags"] & 0xFF == MACHINE[target]


@pytest.mark.parametrize("name", ["empty", "timestamp", "vector_add"])
def test_kernels_are_wave_size_generic(name):
    # Only the target attributes differ between the wave64 and the wave32 build.
    wave64 = kernels.ir(name, "gfx942")
    wave32 = kernels.ir(name, "gfx1201")
    assert '"target-features"="+wavefrontsize32"' in wave32
    assert '"target-cpu"="gfx942"' in wave64
    assert strip_target_attributes(wave64) == strip_target_attributes(wave32)


@pytest.mark.parametrize("target,wave", [("gfx942", 64), ("gfx1201", 32), ("gfx1201", 64)])
def test_vector_add_metadata(target, wave):
    text = toolchain.emit_assembly(kernels.ir("vector_add", target, wavefront_size=wave), target,
                                   wavefront_size=wave)
    assert f".wavefront_size: {wave}" in text
    assert ".symbol:         vector_add.kd" in text
    # The explicit arguments: three buffers and n, then the hidden block that holds the
    # workgroup size the kernel reads (hidden_group_size_x at explicit size 28 -> 32 + 12).
    assert text.count(".value_kind:     global_buffer") == 3
    assert re.search(r"\.offset:\s+44\n\s+\.size:\s+2\n\s+\.value_kind:\s+hidden_group_size_x",
                     text)
    assert "v_add_f32" in text


def test_vector_add_is_guarded_by_n():
    text = toolchain.emit_assembly(kernels.ir("vector_add", "gfx942"), "gfx942")
    # the comparison against n masks the lanes past the end before any memory access
    compare = text.index("v_cmp_gt_u32")
    assert compare < text.index("global_load_dword")
    assert "s_and_saveexec_b64" in text


def test_build_is_cached(cache):
    first = kernels.build("vector_add", "gfx942")
    recorder = Recorder()
    with toolchain.observe(recorder):
        second = kernels.build("vector_add", "gfx942")
    assert first == second
    assert recorder.kinds().count("cache-hit") == 1
    assert "run" not in recorder.kinds() and "llvm" not in recorder.kinds()


def test_unknown_kernel_name():
    with pytest.raises(HsapyValueError, match="no kernel 'nope'.*vector_add"):
        kernels.build("nope", "gfx942")


# Timestamp instructions per target: LLVM picks what each generation has (gfx11/gfx12 have no
# s_memtime/s_memrealtime; LLVM aborts the process on llvm.amdgcn.s.memtime there).
TIMESTAMP_INSTRUCTIONS = {
    "gfx942": ["s_memtime", "s_memrealtime"],
    "gfx90a": ["s_memtime", "s_memrealtime"],
    "gfx1100": ["hwreg(HW_REG_SHADER_CYCLES", "s_sendmsg_rtn_b64", "MSG_RTN_GET_REALTIME"],
    "gfx1201": ["hwreg(HW_REG_SHADER_CYCLES_HI)", "hwreg(HW_REG_SHADER_CYCLES_LO)",
                "s_sendmsg_rtn_b64", "MSG_RTN_GET_REALTIME"],
}


@pytest.mark.parametrize("target", TARGETS)
def test_timestamp_uses_the_targets_counters(target):
    text = toolchain.emit_assembly(kernels.ir("timestamp", target), target)
    for instruction in TIMESTAMP_INSTRUCTIONS[target]:
        assert instruction in text
    if target.startswith("gfx1"):
        assert "s_memtime" not in text and "s_memrealtime" not in text


@pytest.mark.skipif(LLVM_MC is None, reason="llvm-mc-19 (Debian llvm-19) is not installed")
@pytest.mark.parametrize("target", TARGETS)
def test_timestamp_assembly_is_valid_for_the_target(tmp_path, target):
    # llvm-mc-19 re-assembles the kernel body LLVM 22 generated: every instruction exists on
    # that target. (Only the body: LLVM 22's metadata block has keys LLVM 19 rejects.)
    text = toolchain.emit_assembly(kernels.ir("timestamp", target), target)
    body = text[text.index("\ntimestamp:") + len("\ntimestamp:"):text.index("s_endpgm")]
    body_lines = [line for line in body.splitlines() if line.strip()]
    source = tmp_path / "timestamp.s"
    source.write_text("\n".join(body_lines + ["\ts_endpgm", ""]))
    proc = subprocess.run([LLVM_MC, "--triple=amdgcn-amd-amdhsa", f"-mcpu={target}",
                           "--show-encoding", str(source)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "error" not in proc.stderr
    assert proc.stdout.count("encoding:") >= len(TIMESTAMP_INSTRUCTIONS[target])


def _shared_memory_kernel(target: str, **options) -> str:
    """A kernel using LDS, barriers, atomics, lane ids and readfirstlane."""
    kb = KernelBuilder("lds_sum", [("data", GLOBAL_PTR), ("total", GLOBAL_PTR)], target=target,
                       **options)
    tid = kb.workitem_id()
    lds = kb.lds_array("tile", F32, 256)
    value = kb.b.load(kb.element_ptr(kb.arg("data"), kb.global_id(), F32), typ=F32)
    kb.b.store(value, kb.element_ptr(lds, tid, F32))
    kb.barrier()
    neighbour = kb.b.xor(tid, I32(1))
    other = kb.b.load(kb.element_ptr(lds, neighbour, F32), typ=F32)
    with kb.if_then(kb.b.icmp_unsigned("==", kb.lane_id(), kb.readfirstlane(tid))):
        kb.atomic_add(kb.arg("total"), kb.b.fadd(value, other))
    with kb.if_then(kb.b.icmp_unsigned("==", tid, I32(0))):
        kb.b.store(kb.wave_size(), kb.element_ptr(kb.arg("total"), I32(1), I32))
        kb.atomic_add(kb.element_ptr(kb.arg("total"), I32(2), I32), I32(1))
    return kb.finish()


@pytest.mark.parametrize("target,barrier", [
    ("gfx942", "s_barrier"), ("gfx1201", "s_barrier_signal -1"), ("gfx1100", "s_barrier"),
])
def test_dsl_lds_barrier_atomics(target, barrier):
    text = toolchain.emit_assembly(_shared_memory_kernel(target), target)
    assert barrier in text
    assert re.search(r"ds_(write|store)_b?32", text) and re.search(r"ds_(read|load)_b?32", text)
    assert re.search(r"\.group_segment_fixed_size: 1024", text)
    # integer add at offset 8; float add natively, or as a compare-and-swap loop where the
    # target (gfx1100) has no global fp32 atomic add for this memory model
    assert re.search(r"global_atomic_add(_u32)? v\d+, v\d+, s\[\d+:\d+\] offset:8", text)
    if target == "gfx1100":
        assert "global_atomic_cmpswap_b32" in text or "global_atomic_add_f32" in text
    else:
        assert "global_atomic_add_f32" in text
    assert "v_readfirstlane_b32" in text
    assert "v_mbcnt_lo_u32_b32" in text


@pytest.mark.parametrize("target,wave", [("gfx942", 64), ("gfx1201", 32), ("gfx1201", 64)])
def test_wave_size_is_folded_from_attributes(target, wave):
    ir_text = _shared_memory_kernel(target, wavefront_size=wave)
    assert "llvm.amdgcn.wavefrontsize" in ir_text
    text = toolchain.emit_assembly(ir_text, target, wavefront_size=wave)
    # the folded constant is stored: no wave-size query survives
    assert re.search(rf"v_mov_b32\S*\s+v\d+, {wave}\n", text)
    assert f".wavefront_size: {wave}" in text


def test_fixed_workgroup_size_needs_no_hidden_arguments():
    kb = KernelBuilder("fixed", [("out", GLOBAL_PTR)], target="gfx942",
                       workgroup_size=(64, 1, 1))
    kb.b.store(kb.workgroup_size(), kb.element_ptr(kb.arg("out"), kb.global_id(), I32))
    text = toolchain.emit_assembly(kb.finish(), "gfx942")
    assert "hidden_" not in text
    assert ".max_flat_workgroup_size: 64" in text


def test_code_object_v4_reads_the_workgroup_size_from_the_packet():
    kb = KernelBuilder("v4", [("out", GLOBAL_PTR)], target="gfx942", code_object_version=4)
    kb.b.store(kb.workgroup_size(1), kb.element_ptr(kb.arg("out"), kb.global_id(), I32))
    text = toolchain.emit_assembly(kb.finish(), "gfx942", code_object_version=4)
    assert ".amdhsa_user_sgpr_dispatch_ptr 1" in text
    assert ".amdhsa_code_object_version 4" in text


def test_num_workgroups_reads_the_block_count():
    kb = KernelBuilder("grid", [("out", GLOBAL_PTR)], target="gfx1201")
    kb.b.store(kb.num_workgroups(2), kb.element_ptr(kb.arg("out"), kb.global_id(), I32))
    text = toolchain.emit_assembly(kb.finish(), "gfx1201")
    assert "hidden_block_count_z" in text


def test_dsl_rejects_bad_input():
    with pytest.raises(HsapyValueError):
        KernelBuilder("k", [], target="gfx942", wavefront_size=32)
    with pytest.raises(HsapyValueError):
        KernelBuilder("k", [], target="gfx942", workgroup_size=(2048, 1, 1))
    kb = KernelBuilder("k", [("x", I32)], target="gfx942")
    with pytest.raises(HsapyValueError, match="no argument 'y'"):
        kb.arg("y")
    with pytest.raises(HsapyValueError):
        kb.workitem_id(3)
    with pytest.raises(HsapyValueError):
        kb.timestamp("wallclock")


@pytest.mark.skipif(READELF is None, reason="llvm-readelf-19 (Debian llvm-19) is not installed")
@pytest.mark.parametrize("target,flags", [("gfx942", "0x54C"), ("gfx1201", "0x4E")])
def test_readelf_accepts_vector_add(cache, tmp_path, target, flags):
    path = tmp_path / "va.hsaco"
    path.write_bytes(kernels.build("vector_add", target))
    proc = subprocess.run([READELF, "-h", "--notes", str(path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert re.search(rf"Flags:\s+{flags}, {target}", proc.stdout)
    assert re.search(r"ABI Version:\s+3", proc.stdout)
    assert "vector_add.kd" in proc.stdout
