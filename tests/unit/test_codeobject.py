"""hsapy.codeobject against LLVM's own tools, on code objects the toolchain builds in the test.

Every variant (HIP via clang-19 for gfx942/gfx1201 as v5 and v4, LLVM IR via llvmlite + ld.lld-19
as v5/v6, assembly via llvm-mc-19) is parsed by hsapy and compared with what llvm-readelf-19 and
llvm-objdump-19 say about the same file: header, metadata arguments, descriptor bytes and the
descriptor fields LLVM's disassembler decodes.
"""
from __future__ import annotations

import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from _codeobjects import build

from hsapy.codeobject import (
    CodeObject,
    CodeObjectError,
    Target,
    TargetMismatchError,
    bundle_entries,
    extract_for_target,
)
from hsapy.errors import HsapyValueError

# variant id -> (builder, args): the code objects every reader is checked on.
VARIANTS = {
    "hip-gfx942-v5": (build.build_hip, ("gfx942", 5)),
    "hip-gfx1201-v5": (build.build_hip, ("gfx1201", 5)),
    "hip-gfx942-v4": (build.build_hip, ("gfx942", 4)),
    "hip-gfx1201-v4": (build.build_hip, ("gfx1201", 4)),
    "llvmlite-gfx942-v5": (build.build_llvmlite, ("gfx942", 5)),
    "llvmlite-gfx942-v6": (build.build_llvmlite, ("gfx942", 6)),
    "llvmlite-gfx1201-v5": (build.build_llvmlite, ("gfx1201", 5)),
    "llvmlite-gfx1201-v6": (build.build_llvmlite, ("gfx1201", 6)),
    "llvmlite-gfx942-v5-O0": (build.build_llvmlite, ("gfx942", 5, False)),
    "llvmlite-gfx1100-v5": (build.build_llvmlite, ("gfx1100", 5)),
    "hip-gfx90a-v5": (build.build_hip, ("gfx90a", 5)),
    "asm-gfx942-v5": (build.build_asm, ("gfx942", 5)),
}


def _built(variant: str) -> bytes:
    builder, args = VARIANTS[variant]
    try:
        return builder(*args)
    except build.ToolMissing as exc:
        pytest.skip(str(exc))


@pytest.fixture(params=sorted(VARIANTS))
def variant(request) -> tuple[str, bytes, Path]:
    """(variant id, code object bytes, path of the same bytes on disk)."""
    data = _built(request.param)
    path = build.write_temp(data, f"{request.param}.hsaco")
    return request.param, data, path


def _llvm(tool: str, *args: str) -> str:
    try:
        exe = build.tool(tool)
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=60,
                          check=True).stdout


# ---------------------------------------------------------------------------------------------
# Agreement with LLVM's tools


def test_header_matches_readelf(variant):
    name, data, path = variant
    co = CodeObject.from_bytes(data)
    header = _llvm("llvm-readelf-19", "-h", str(path))
    abi = int(re.search(r"ABI Version:\s+(\d+)", header).group(1))
    flags_line = re.search(r"Flags:\s+(0x[0-9A-Fa-f]+), (\S+?)(,|$)", header, re.M)
    assert co.version == {2: 4, 3: 5, 4: 6}[abi]
    assert co.e_flags == int(flags_line.group(1), 16)
    assert co.target.name == flags_line.group(2)
    expected_version = VARIANTS[name][1][1]
    assert co.version == expected_version


def test_metadata_arguments_match_readelf_notes(variant):
    name, data, path = variant
    co = CodeObject.from_bytes(data)
    if name.startswith("asm"):
        # llvm-mc without .amdgpu_metadata writes no note: neither tool finds metadata.
        assert "NT_AMDGPU_METADATA" not in _llvm("llvm-readelf-19", "--notes", str(path))
        assert co.metadata == {}
        return
    meta = build.readelf_metadata(path)
    llvm_kernels = {k[".name"]: k for k in meta["amdhsa.kernels"]}
    assert list(co.kernels) == list(llvm_kernels)
    for kname, info in co.kernels.items():
        expected = llvm_kernels[kname]
        ours = [(a.offset, a.size, a.value_kind, a.name) for a in info.args]
        theirs = [(a[".offset"], a[".size"], a[".value_kind"], a.get(".name"))
                  for a in expected.get(".args", [])]
        assert ours == theirs, kname
        assert info.symbol == expected[".symbol"]
        assert info.kernarg_segment_size == expected[".kernarg_segment_size"]
        assert info.kernarg_segment_align == expected[".kernarg_segment_align"]
        assert info.wavefront_size == expected[".wavefront_size"]
        assert info.sgpr_count == expected[".sgpr_count"]
        assert info.vgpr_count == expected[".vgpr_count"]
        assert info.max_flat_workgroup_size == expected[".max_flat_workgroup_size"]
        assert info.group_segment_fixed_size == expected[".group_segment_fixed_size"]
        assert info.private_segment_fixed_size == expected[".private_segment_fixed_size"]


def _objdump_bytes(path: Path, section: str) -> dict[int, int]:
    try:
        return build.objdump_bytes(path, section)
    except build.ToolMissing as exc:
        pytest.skip(str(exc))


def test_descriptor_bytes_match_objdump(variant):
    _, data, path = variant
    co = CodeObject.from_bytes(data)
    rodata = _objdump_bytes(path, ".rodata")
    assert co.kernels
    for info in co.kernels.values():
        expected = bytes(rodata[info.descriptor_vaddr + i] for i in range(64))
        assert info.descriptor.raw == expected
        # entry = descriptor + kernel_code_entry_byte_offset, and the function symbol agrees
        assert info.entry_vaddr == co.symbols[info.name].value
        assert info.entry_vaddr % 256 == 0


# `.amdhsa_*` directive printed by LLVM's descriptor disassembler -> (register, field) in hsapy.
DIRECTIVES = {
    "group_segment_fixed_size": (None, "group_segment_fixed_size"),
    "private_segment_fixed_size": (None, "private_segment_fixed_size"),
    "kernarg_size": (None, "kernarg_size"),
    "tg_split": ("compute_pgm_rsrc3", "tg_split"),
    "float_round_mode_32": ("compute_pgm_rsrc1", "float_round_mode_32"),
    "float_round_mode_16_64": ("compute_pgm_rsrc1", "float_round_mode_16_64"),
    "float_denorm_mode_32": ("compute_pgm_rsrc1", "float_denorm_mode_32"),
    "float_denorm_mode_16_64": ("compute_pgm_rsrc1", "float_denorm_mode_16_64"),
    "dx10_clamp": ("compute_pgm_rsrc1", "enable_dx10_clamp"),
    "ieee_mode": ("compute_pgm_rsrc1", "enable_ieee_mode"),
    "fp16_overflow": ("compute_pgm_rsrc1", "fp16_ovfl"),
    "workgroup_processor_mode": ("compute_pgm_rsrc1", "wgp_mode"),
    "memory_ordered": ("compute_pgm_rsrc1", "mem_ordered"),
    "forward_progress": ("compute_pgm_rsrc1", "fwd_progress"),
    "round_robin_scheduling": ("compute_pgm_rsrc1", "enable_wg_rr_en"),
    "enable_private_segment": ("compute_pgm_rsrc2", "enable_private_segment"),
    # the same bit's name on targets without architected flat scratch (gfx90a)
    "system_sgpr_private_segment_wavefront_offset": ("compute_pgm_rsrc2",
                                                     "enable_private_segment"),
    "system_sgpr_workgroup_id_x": ("compute_pgm_rsrc2", "enable_sgpr_workgroup_id_x"),
    "system_sgpr_workgroup_id_y": ("compute_pgm_rsrc2", "enable_sgpr_workgroup_id_y"),
    "system_sgpr_workgroup_id_z": ("compute_pgm_rsrc2", "enable_sgpr_workgroup_id_z"),
    "system_sgpr_workgroup_info": ("compute_pgm_rsrc2", "enable_sgpr_workgroup_info"),
    "system_vgpr_workitem_id": ("compute_pgm_rsrc2", "enable_vgpr_workitem_id"),
    "exception_fp_ieee_invalid_op": ("compute_pgm_rsrc2",
                                     "enable_exception_ieee_754_fp_invalid_operation"),
    "exception_fp_denorm_src": ("compute_pgm_rsrc2", "enable_exception_fp_denormal_source"),
    "exception_fp_ieee_div_zero": ("compute_pgm_rsrc2",
                                   "enable_exception_ieee_754_fp_division_by_zero"),
    "exception_fp_ieee_overflow": ("compute_pgm_rsrc2", "enable_exception_ieee_754_fp_overflow"),
    "exception_fp_ieee_underflow": ("compute_pgm_rsrc2", "enable_exception_ieee_754_fp_underflow"),
    "exception_fp_ieee_inexact": ("compute_pgm_rsrc2", "enable_exception_ieee_754_fp_inexact"),
    "exception_int_div_zero": ("compute_pgm_rsrc2", "enable_exception_int_divide_by_zero"),
    "user_sgpr_count": ("compute_pgm_rsrc2", "user_sgpr_count"),
    "user_sgpr_private_segment_buffer": ("kernel_code_properties",
                                         "enable_sgpr_private_segment_buffer"),
    "user_sgpr_dispatch_ptr": ("kernel_code_properties", "enable_sgpr_dispatch_ptr"),
    "user_sgpr_queue_ptr": ("kernel_code_properties", "enable_sgpr_queue_ptr"),
    "user_sgpr_kernarg_segment_ptr": ("kernel_code_properties", "enable_sgpr_kernarg_segment_ptr"),
    "user_sgpr_dispatch_id": ("kernel_code_properties", "enable_sgpr_dispatch_id"),
    "user_sgpr_flat_scratch_init": ("kernel_code_properties", "enable_sgpr_flat_scratch_init"),
    "user_sgpr_private_segment_size": ("kernel_code_properties",
                                       "enable_sgpr_private_segment_size"),
    "wavefront_size32": ("kernel_code_properties", "enable_wavefront_size32"),
    "uses_dynamic_stack": ("kernel_code_properties", "uses_dynamic_stack"),
    "shared_vgpr_count": ("compute_pgm_rsrc3", "shared_vgpr_count"),
}


def _hsapy_value(descriptor, register, field):
    if register is None:
        return getattr(descriptor, field)
    return getattr(descriptor, register)[field]


def test_descriptor_fields_match_llvm_disassembler(variant):
    _, data, path = variant
    co = CodeObject.from_bytes(data)
    checked = 0
    for info in co.kernels.values():
        text = _llvm("llvm-objdump-19", "-D", f"--disassemble-symbols={info.symbol}", str(path))
        if "error decoding" in text:
            # LLVM 19 refuses some descriptors clang-19 itself writes for gfx12 (SGPR bits).
            continue
        directives = dict(re.findall(r"\.amdhsa_(\w+) (-?\d+)", text))
        assert directives, text
        d = info.descriptor
        # rsrc3 fields LLVM prints as comments on gfx10+ ("; INST_PREF_SIZE 1").
        for field, value in re.findall(r"^\s*; ([A-Z_0-9]+) (\d+)$", text, re.M):
            assert d.compute_pgm_rsrc3[field.lower()] == int(value), field
            checked += 1
        for directive, value in directives.items():
            value = int(value)
            if directive == "next_free_vgpr":
                assert d.allocated_vgprs == value
            elif directive == "accum_offset":
                assert d.accum_offset == value
            elif directive == "next_free_sgpr":
                reserved = ("reserve_vcc", "reserve_xnack_mask", "reserve_flat_scratch")
                if d.allocated_sgprs is not None and all(
                        directives.get(r, "0") == "0" for r in reserved):
                    assert d.allocated_sgprs == value
            elif directive in ("reserve_vcc", "reserve_xnack_mask", "reserve_flat_scratch"):
                continue  # folded into the granulated SGPR count; not stored on their own
            else:
                register, field = DIRECTIVES[directive]
                assert _hsapy_value(d, register, field) == value, directive
            checked += 1
        # The wave size the descriptor selects matches the metadata.
        assert d.wavefront_size == info.wavefront_size
    if co.target.name != "gfx1201" or "llvmlite" in variant[0]:
        assert checked > 0


def test_symbols_and_load_segments_match_readelf(variant):
    _, data, path = variant
    co = CodeObject.from_bytes(data)
    text = _llvm("llvm-readelf-19", "-l", "--dyn-syms", str(path))
    loads = re.findall(r"^\s+LOAD\s+0x([0-9a-f]+) 0x([0-9a-f]+) 0x[0-9a-f]+ 0x([0-9a-f]+) "
                       r"0x([0-9a-f]+)", text, re.M)
    assert [(s.offset, s.vaddr, s.filesz, s.memsz) for s in co.segments] == [
        tuple(int(x, 16) for x in row) for row in loads]
    for value, size, name in re.findall(r"^\s+\d+: ([0-9a-f]{16})\s+(\d+) \w+\s+GLOBAL\s+\w+\s+\S+ "
                                        r"(\S+)$", text, re.M):
        assert co.symbols[name].value == int(value, 16)
        assert co.symbols[name].size == int(size)
    for info in co.kernels.values():
        assert co.symbols[info.symbol].type == "OBJECT"
        assert co.symbols[info.symbol].size == 64


def test_dynamic_relocation_matches_readelf():
    data = _built("hip-gfx942-v5")
    path = build.write_temp(data, "reloc.hsaco")
    co = CodeObject.from_bytes(data)
    text = _llvm("llvm-readelf-19", "--dyn-relocations", str(path))
    rows = re.findall(r"^([0-9a-f]{16})\s+([0-9a-f]{16}) (R_AMDGPU_\w+)\s+([0-9a-f]+)$", text, re.M)
    assert rows, text
    expected = [(int(off, 16), kind, int(addend, 16)) for off, _, kind, addend in rows]
    assert [(r.offset, r.type_name, r.addend) for r in co.relocations] == expected
    # table_ptr = &table[2]: the addend is table's address + 8
    assert co.relocations[0].type_name == "R_AMDGPU_RELATIVE64"
    assert co.relocations[0].addend == co.symbols["table"].value + 8
    assert co.relocations[0].offset == co.symbols["table_ptr"].value


def test_assembly_without_metadata_finds_kernels_by_descriptor_symbol():
    co = CodeObject.from_bytes(_built("asm-gfx942-v5"))
    assert co.metadata == {}
    info = co.kernels["endpgm"]
    assert info.args == ()
    assert info.kernarg_segment_size == 16
    assert info.descriptor.kernel_code_properties["enable_sgpr_kernarg_segment_ptr"] == 1
    assert co.read_vaddr(info.entry_vaddr, 4) == bytes([0x00, 0x00, 0x81, 0xBF])  # s_endpgm


def test_hidden_arguments_of_v4_and_v5_are_named_by_kind():
    v5 = CodeObject.from_bytes(_built("llvmlite-gfx942-v5-O0")).kernels["scale"]
    kinds = [a.value_kind for a in v5.hidden_args]
    assert kinds[:3] == ["hidden_block_count_x", "hidden_block_count_y", "hidden_block_count_z"]
    assert "hidden_queue_ptr" in kinds
    assert [a.name for a in v5.explicit_args] == ["out", "s", "n", "tiny"]
    v4 = CodeObject.from_bytes(_built("hip-gfx942-v4"))
    assert v4.version == 4
    # v4 HIP reads blockDim from the dispatch packet: the descriptor asks for the dispatch ptr.
    assert v4.kernels["dims"].descriptor.kernel_code_properties["enable_sgpr_dispatch_ptr"] == 1


# ---------------------------------------------------------------------------------------------
# Bundles


def test_bundle_entries_and_extraction():
    try:
        data = build.build_hip_bundle(("gfx942", "gfx1201"))
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    ids = sorted(e.id for e in bundle_entries(data))
    assert ids == ["hipv4-amdgcn-amd-amdhsa--gfx1201", "hipv4-amdgcn-amd-amdhsa--gfx942",
                   "host-x86_64-unknown-linux--"]
    for target in ("gfx942", "gfx1201", "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"):
        co = CodeObject.from_bytes(extract_for_target(data, target))
        assert co.target.name == Target.parse(target).name
        assert "dims" in co.kernels


def test_hipcc_genco_bundle_is_read_and_agrees_with_readelf():
    """``hipcc --genco`` (ROCm 5.2.3) writes an offload bundle holding a v4 code object."""
    try:
        bundle = build.build_hipcc("gfx90a")
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    assert bundle.startswith(b"__CLANG_OFFLOAD_BUNDLE__")
    entries = [e for e in bundle_entries(bundle) if e.target is not None]
    assert [e.id for e in entries] == ["hipv4-amdgcn-amd-amdhsa--gfx90a"]
    data = extract_for_target(bundle, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-")
    co = CodeObject.from_bytes(data)
    assert co.target.name == "gfx90a" and co.version == 4
    meta = build.readelf_metadata(build.write_temp(data, "hipcc-entry.hsaco"))
    expected = meta["amdhsa.kernels"][0]
    assert [(a.offset, a.size, a.value_kind) for a in co.kernels["add_one"].args] == [
        (a[".offset"], a[".size"], a[".value_kind"]) for a in expected[".args"]]


def test_bundle_for_another_target_names_both():
    try:
        data = build.build_hip_bundle(("gfx942", "gfx1201"))
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    with pytest.raises(TargetMismatchError) as info:
        extract_for_target(data, "gfx90a")
    assert "gfx90a" in str(info.value) and "gfx942" in str(info.value)
    assert "gfx1201" in str(info.value)


@pytest.mark.parametrize("agent, expected", [
    ("gfx942:xnack-", "gfx942:xnack-"),
    ("gfx942:xnack+", "gfx942:xnack+"),
    ("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack+", "gfx942:xnack+"),
])
def test_bundle_entry_chosen_by_xnack_setting(agent, expected):
    try:
        data = build.build_hip_bundle(("gfx942:xnack+", "gfx942:xnack-"))
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    co = CodeObject.from_bytes(extract_for_target(data, agent))
    assert str(co.target) == expected


def test_plain_elf_for_another_target_names_both():
    data = _built("hip-gfx1201-v5")
    with pytest.raises(TargetMismatchError) as info:
        extract_for_target(data, "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-")
    message = str(info.value)
    assert "gfx1201" in message and "gfx942" in message
    assert isinstance(info.value, ValueError)


def test_xnack_on_code_object_refused_by_xnack_off_agent():
    try:
        data = build.build_hip("gfx942:xnack+", 5)
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    assert str(CodeObject.from_bytes(data).target) == "gfx942:xnack+"
    with pytest.raises(TargetMismatchError, match="gfx942:xnack\\+.*gfx942:sramecc\\+:xnack-"):
        extract_for_target(data, "gfx942:sramecc+:xnack-")
    assert extract_for_target(data, "gfx942") == data


def test_compressed_bundle_zstd():
    pytest.importorskip("zstandard", reason="zstandard is not installed")
    try:
        data = build.build_hip_bundle(("gfx942", "gfx1201"), compress=True)
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    assert data[:4] == b"CCOB"
    co = CodeObject.from_bytes(extract_for_target(data, "gfx1201"))
    assert co.target.name == "gfx1201"


def test_compressed_bundle_without_zstandard_names_the_package(monkeypatch):
    try:
        data = build.build_hip_bundle(("gfx942",), compress=True)
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard -> ImportError
    with pytest.raises(CodeObjectError, match=r"hsapy\[zstd\]"):
        extract_for_target(data, "gfx942")


def _ccob_v2(bundle: bytes, method: int, payload: bytes) -> bytes:
    import struct

    header_size = 8 + 16
    total = header_size + len(payload)
    return b"CCOB" + struct.pack("<HHIIQ", 2, method, total, len(bundle), 0) + payload


def test_compressed_bundle_zlib():
    try:
        bundle = build.build_hip_bundle(("gfx942",))
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    data = _ccob_v2(bundle, 0, zlib.compress(bundle))
    assert CodeObject.from_bytes(extract_for_target(data, "gfx942")).target.name == "gfx942"


# ---------------------------------------------------------------------------------------------
# Errors


def _patched(data: bytes, offset: int, value: bytes) -> bytes:
    return data[:offset] + value + data[offset + len(value):]


def test_code_object_error_is_a_value_error():
    assert issubclass(CodeObjectError, HsapyValueError)
    assert issubclass(CodeObjectError, ValueError)


@pytest.mark.parametrize("mutate, pattern", [
    (lambda d: d[:40], r"truncated ELF header .* at offset 0x0: expected 64 bytes"),
    (lambda d: b"\x7fELX" + d[4:], r"not an ELF file at offset 0x0"),
    (lambda d: _patched(d, 8, b"\x01"), r"code object v3 is not supported"),
    (lambda d: _patched(d, 8, b"\x09"), r"unsupported code object ABI version 9 at offset 0x8"),
    (lambda d: _patched(d, 0x12, b"\x3e\x00"), r"e_machine 62 is not AMDGPU"),
    (lambda d: _patched(d, 0x30, b"\x7e"), r"unknown AMDGPU machine 0x7e"),
    (lambda d: _patched(d, 0x10, b"\x01\x00"), r"relocatable object.*ld.lld -shared"),
    (lambda d: _patched(d, 7, b"\x00"), r"OS ABI 0 is not AMDGPU HSA at offset 0x7"),
    (lambda d: d[:len(d) // 2], r"runs past the end of the file"),
])
def test_malformed_input_names_offset_and_expectation(mutate, pattern):
    data = _built("hip-gfx942-v5")
    with pytest.raises(CodeObjectError, match=pattern):
        CodeObject.from_bytes(mutate(data))


def test_bundle_given_to_from_bytes_points_to_extract_for_target():
    try:
        data = build.build_hip_bundle(("gfx942",))
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    with pytest.raises(CodeObjectError, match="extract_for_target"):
        CodeObject.from_bytes(data)


def test_corrupt_metadata_is_a_code_object_error():
    data = bytearray(_built("hip-gfx942-v5"))
    co = CodeObject.from_bytes(bytes(data))
    note = next(n for n in co.notes if n.type == 32)
    start = note.offset + 12 + 8  # header + "AMDGPU\0" padded to 8
    data[start] = 0xC1  # a byte msgpack never uses
    with pytest.raises(CodeObjectError, match="not valid msgpack"):
        CodeObject.from_bytes(bytes(data))


def test_unknown_kernel_lists_the_kernels():
    co = CodeObject.from_bytes(_built("hip-gfx942-v5"))
    with pytest.raises(CodeObjectError, match="kernels: mixed, by_struct, dims"):
        co.kernel("nope")
    assert co.kernel("dims.kd") is co.kernels["dims"]


# ---------------------------------------------------------------------------------------------
# Targets


@pytest.mark.parametrize("text, name, xnack, sramecc, canonical", [
    ("gfx942", "gfx942", "any", "any", "gfx942"),
    ("gfx942:xnack+", "gfx942", "on", "any", "gfx942:xnack+"),
    ("gfx942:xnack-:sramecc+", "gfx942", "off", "on", "gfx942:sramecc+:xnack-"),
    ("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", "gfx90a", "off", "on", "gfx90a:sramecc+:xnack-"),
    ("amdgcn-amd-amdhsa--gfx1201", "gfx1201", "any", "any", "gfx1201"),
])
def test_target_parse_and_str(text, name, xnack, sramecc, canonical):
    target = Target.parse(text)
    assert (target.name, target.xnack, target.sramecc) == (name, xnack, sramecc)
    assert str(target) == canonical


@pytest.mark.parametrize("e_flags, expected", [
    (0x54C, Target("gfx942", "any", "any")),
    (0xF4C, Target("gfx942", "on", "on")),
    (0xA3F, Target("gfx90a", "off", "off")),
    (0x04E, Target("gfx1201", "unsupported", "unsupported")),
])
def test_target_from_e_flags(e_flags, expected):
    assert Target.from_e_flags(e_flags) == expected


@pytest.mark.parametrize("agent, code_object, ok", [
    ("gfx942:sramecc+:xnack-", "gfx942", True),
    ("gfx942:sramecc+:xnack-", "gfx942:xnack-", True),
    ("gfx942:sramecc+:xnack-", "gfx942:xnack+", False),
    ("gfx942:sramecc+:xnack-", "gfx942:sramecc-", False),
    ("gfx942", "gfx942:xnack+", True),
    ("gfx942", "gfx90a", False),
])
def test_target_compatibility(agent, code_object, ok):
    assert Target.parse(agent).accepts(Target.parse(code_object)) is ok


@pytest.mark.parametrize("agent, ok", [
    ("gfx1201", True), ("gfx1200", True), ("gfx1100", False), ("gfx942", False),
])
def test_generic_code_object_runs_on_member_processors(agent, ok):
    data = _built_generic("gfx12-generic")
    co = CodeObject.from_bytes(data)
    assert co.version == 6 and co.target.name == "gfx12-generic" and co.target.is_generic
    assert co.e_flags >> 24 == 1                           # generic version 1
    assert co.kernels["endpgm"].descriptor.wavefront_size == 32
    if ok:
        assert extract_for_target(data, agent) == data
    else:
        with pytest.raises(TargetMismatchError, match=f"gfx12-generic but the agent is {agent}"):
            extract_for_target(data, agent)


def _built_generic(target: str) -> bytes:
    try:
        return build.build_asm(target, 6)
    except build.ToolMissing as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("bad", ["", "942", "gfx942:foo+", "gfx942:xnack"])
def test_bad_target_strings_raise_value_errors(bad):
    with pytest.raises(HsapyValueError):
        Target.parse(bad)


def test_descriptor_bitfields_copy_and_pickle():
    import copy
    import pickle

    descriptor = CodeObject.from_bytes(_built("asm-gfx942-v5")).kernels["endpgm"].descriptor
    assert copy.deepcopy(descriptor) == descriptor
    rsrc2 = pickle.loads(pickle.dumps(descriptor.compute_pgm_rsrc2))
    assert rsrc2 == descriptor.compute_pgm_rsrc2
    assert rsrc2.enable_sgpr_workgroup_id_x == rsrc2["enable_sgpr_workgroup_id_x"]
    with pytest.raises(AttributeError):
        rsrc2.user_sgpr_count = 3
    with pytest.raises(AttributeError, match="no field 'nope'"):
        rsrc2.nope


@pytest.mark.parametrize("processor, limit", [
    ("gfx90a", 8387584), ("gfx942", 8387584), ("gfx1030", 8387584),     # (2^13 - 1) KiB
    ("gfx1100", 8388352),                                                # (2^15 - 1) x 256 B
    ("gfx1201", 67108608),                                               # (2^18 - 1) x 256 B
    ("x86_64", None), ("gfx", None),
])
def test_max_scratch_per_wave_follows_the_tmpring_field_of_each_generation(processor, limit):
    from hsapy.codeobject import max_scratch_per_wave

    assert max_scratch_per_wave(processor) == limit
