"""``hsapy inspect``: what a code object holds -- target, version, kernels, descriptors, resource
use and the kernarg table with hidden arguments; ``--disasm`` adds LLVM's disassembly."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HELP = "show a code object's target, kernels, descriptors, resources and argument layout"

# Oldest LLVM whose disassembler knows a processor (conservative; LLVM's disassembler aborts the
# process on an unknown CPU, so an older llvm-objdump is never used for a newer target).
_MIN_LLVM = (("gfx9-4-generic", 20), ("gfx950", 20), ("gfx1153", 20), ("gfx9-generic", 19),
             ("gfx10-1-generic", 19), ("gfx10-3-generic", 19), ("gfx11-generic", 19),
             ("gfx12-generic", 19), ("gfx1152", 19), ("gfx12", 18), ("gfx115", 18),
             ("gfx94", 17), ("gfx11", 16))
_DEFAULT_MIN_LLVM = 15


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="code object (.hsaco ELF) or clang offload bundle")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--disasm", action="store_true",
                        help="append llvm-objdump's disassembly (needs LLVM new enough for the "
                             "target)")
    parser.add_argument("--kernel", metavar="NAME", help="only this kernel")
    parser.add_argument("--target", metavar="GFX",
                        help="pick this target's entry of an offload bundle (default: all)")


def min_llvm_for(target_name: str) -> int:
    """The oldest LLVM major version whose llvm-objdump disassembles ``target_name``."""
    for prefix, major in _MIN_LLVM:
        if target_name.startswith(prefix):
            return major
    return _DEFAULT_MIN_LLVM


def _entries(data: bytes, target: str | None) -> list[tuple[str | None, bytes]]:
    """(bundle entry id or None, ELF bytes) for each code object to show."""
    from hsapy.codeobject import bundle_entries, extract_for_target, is_bundle

    if not is_bundle(data):
        if target is not None:
            extract_for_target(data, target)   # names both targets on a mismatch
        return [(None, data)]
    if target is not None:
        return [(f"entry for {target}", extract_for_target(data, target))]
    return [(e.id, e.data) for e in bundle_entries(data) if e.target is not None]


def _json_safe(value: Any) -> Any:
    """The decoded metadata as JSON: maps with string keys, lists, bytes as hex."""
    if isinstance(value, dict):
        return {str(key): _json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    return value


def _spills(info: Any) -> dict[str, int | None]:
    """SGPRs/VGPRs the compiler spilled to memory (.sgpr_spill_count / .vgpr_spill_count, LLVM
    AMDGPUUsage "Code Object V3+ Metadata"); None where the metadata does not say."""
    return {"sgpr_spill_count": info.metadata.get(".sgpr_spill_count"),
            "vgpr_spill_count": info.metadata.get(".vgpr_spill_count")}


def _uniform_work_group_size(info: Any) -> bool | None:
    """.uniform_work_group_size: 1 when the kernel was compiled for grids that are whole
    multiples of the workgroup size (no partial workgroups); None when absent."""
    value = info.metadata.get(".uniform_work_group_size")
    return None if value is None else bool(value)


def _kernel_dict(co: Any, info: Any) -> dict[str, Any]:
    from hsapy.kernarg import KernargLayout

    out = next(k for k in co.to_dict()["kernels"] if k["name"] == info.name)
    out["resources"].update(_spills(info))
    out["uniform_work_group_size"] = _uniform_work_group_size(info)
    out["layout"] = KernargLayout.from_kernel(info).rows()
    return out


def _code_object_dict(co: Any, kernel: str | None) -> dict[str, Any]:
    out = co.to_dict()
    infos = [co.kernel(kernel)] if kernel else list(co.kernels.values())
    out["kernels"] = [_kernel_dict(co, info) for info in infos]
    out["metadata"] = _json_safe(co.metadata)     # the NT_AMDGPU_METADATA map as decoded
    return out


def _text(co: Any, kernel: str | None, entry_id: str | None) -> str:
    from hsapy.kernarg import KernargLayout

    t = co.target
    lines = []
    if entry_id:
        lines.append(f"== {entry_id}")
    lines.append(f"target   {t}  (xnack {t.xnack}, sramecc {t.sramecc}; e_flags {co.e_flags:#x})")
    lines.append(f"version  code object v{co.version}")
    for seg in co.segments:
        lines.append(f"segment  LOAD vaddr {seg.vaddr:#08x} memsz {seg.memsz:#x} filesz "
                     f"{seg.filesz:#x} {seg.flags_text}")
    for rel in co.relocations:
        target = f"{rel.symbol_name} + " if rel.symbol_name else ""
        lines.append(f"reloc    {rel.type_name} at {rel.offset:#x} -> {target}{rel.addend:#x}")
    infos = [co.kernel(kernel)] if kernel else list(co.kernels.values())
    if not infos:
        lines.append("kernels  none")
    for info in infos:
        d = info.descriptor
        lines.append("")
        lines.append(f"kernel {info.name}  (descriptor {info.symbol} at "
                     f"{info.descriptor_vaddr:#x}, "
                     f"entry {info.entry_vaddr:#x})")
        lines.append(f"  kernarg {info.kernarg_segment_size} bytes (align "
                     f"{info.kernarg_segment_align})  LDS {info.group_segment_fixed_size} B  "
                     f"scratch {info.private_segment_fixed_size} B/work-item  "
                     f"wave{info.wavefront_size}  max workgroup {info.max_flat_workgroup_size}"
                     + ("  dynamic stack" if info.uses_dynamic_stack else ""))
        sgprs = f" (allocated {d.allocated_sgprs})" if d.allocated_sgprs is not None else ""
        accum = f", accum_offset {d.accum_offset}" if d.accum_offset is not None else ""
        spills = "  ".join(f"{kind} {count}" for kind, count in (
            ("SGPR spills", _spills(info)["sgpr_spill_count"]),
            ("VGPR spills", _spills(info)["vgpr_spill_count"])) if count is not None)
        uniform = _uniform_work_group_size(info)
        lines.append(f"  resources  VGPRs {info.vgpr_count} (allocated {d.allocated_vgprs}"
                     f"{accum})  AGPRs {info.agpr_count}  SGPRs {info.sgpr_count}{sgprs}"
                     + (f"  {spills}" if spills else "")
                     + ("" if uniform is None else f"  uniform workgroups {str(uniform).lower()}"))
        lines.append("  descriptor")
        lines.append(f"    group_segment_fixed_size {d.group_segment_fixed_size}  "
                     f"private_segment_fixed_size {d.private_segment_fixed_size}  kernarg_size "
                     f"{d.kernarg_size}  kernel_code_entry_byte_offset "
                     f"{d.kernel_code_entry_byte_offset}")
        for reg in (d.compute_pgm_rsrc1, d.compute_pgm_rsrc2, d.compute_pgm_rsrc3,
                    d.kernel_code_properties, d.kernarg_preload):
            fields = " ".join(f"{k}={v}" for k, v in reg.items() if v)
            lines.append(f"    {reg.register:<23} {reg.value:#010x}  {fields}")
        layout = KernargLayout.from_kernel(info)
        lines.append("  arguments")
        lines.append(f"    {'offset':>6} {'size':>4}  {'kind':<26} {'name':<12} type")
        for row in layout.rows():
            lines.append(f"    {row['offset']:>6} {row['size']:>4}  {row['kind']:<26} "
                         f"{row['name']:<12} {row['type']}")
    return "\n".join(lines) + "\n"


def _disassemble(data: bytes, target_name: str, kernel: str | None = None) -> str:
    from hsapy import toolchain

    need = min_llvm_for(target_name)
    try:
        tool = toolchain.find_tool("llvm-objdump", min_major=need)
    except toolchain.ToolNotFoundError as exc:
        return (f"no disassembly: no llvm-objdump of LLVM {need} or newer was found "
                f"({exc}); install llvm-{max(need, 19)} or set ROCM_PATH\n")
    with tempfile.TemporaryDirectory(prefix="hsapy-inspect-") as tmp:
        path = Path(tmp) / "code.hsaco"
        path.write_bytes(data)
        only = [f"--disassemble-symbols={kernel}"] if kernel else []
        result = subprocess.run(
            [*tool.argv, "-d", *only, "--triple=amdgcn-amd-amdhsa", f"--mcpu={target_name}",
             str(path)],
            capture_output=True, text=True, timeout=120,
        )
    if result.returncode != 0:
        return f"no disassembly: {tool.describe()} failed: {result.stderr.strip()}\n"
    return f"; disassembly by {tool.describe()}\n" + result.stdout


def run(args: argparse.Namespace) -> int:
    from hsapy.codeobject import CodeObject, read_code_object_file
    from hsapy.errors import HsapyError

    try:
        data = read_code_object_file(args.path)
    except OSError as exc:
        print(f"hsapy inspect: cannot read {args.path}: {exc.strerror}", file=sys.stderr)
        return 1
    except HsapyError as exc:
        print(f"hsapy inspect: {exc}", file=sys.stderr)
        return 1
    try:
        shown = []
        for entry_id, elf in _entries(data, args.target):
            shown.append((entry_id, CodeObject.from_bytes(elf)))
        if args.json:
            documents = []
            for entry_id, co in shown:
                doc = _code_object_dict(co, args.kernel)
                doc["path"] = args.path
                if entry_id:
                    doc["bundle_entry"] = entry_id
                if args.disasm:
                    doc["disassembly"] = _disassemble(co.data, co.target.name, args.kernel)
                documents.append(doc)
            single = len(documents) == 1 and shown[0][0] is None
            json.dump(documents[0] if single else {"path": args.path, "bundle": documents},
                      sys.stdout, indent=2)
            sys.stdout.write("\n")
            return 0
        for entry_id, co in shown:
            sys.stdout.write(_text(co, args.kernel, entry_id))
            if args.disasm:
                sys.stdout.write("\n" + _disassemble(co.data, co.target.name, args.kernel))
        if not shown:
            print("hsapy inspect: the bundle holds no AMDGPU code object", file=sys.stderr)
            return 1
    except HsapyError as exc:
        print(f"hsapy inspect: {exc}", file=sys.stderr)
        return 1
    return 0
