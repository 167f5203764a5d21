"""hsapy's own disassembler: address, raw words and LLVM-syntax text of every instruction.

No LLVM is needed: instructions come from :func:`hsapy.sim.isa.decoder.decode`, whose text agrees
with libLLVM-19's disassembler (tests/unit/test_disasm_oracle.py). Code objects are read with
``hsapy.codeobject`` (plain ELF, or an offload bundle through ``extract_for_target``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from hsapy.errors import HsapyValueError

from .decoder import decode
from .instruction import Instruction

PF_X = 0x1          # ELF program header flag: executable segment
_BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
_WORD_COLUMN = 30   # width of the raw-words column (three dwords fit)


@dataclass(frozen=True)
class Function:
    """A function symbol's code range inside an executable segment."""

    name: str
    start: int
    end: int


def format_instruction(inst: Instruction, funcs: Iterable[Function] = ()) -> str:
    """One line: ``  <address>: <raw words>  <text>``, plus a branch's target as a comment
    (``// -> 0x1978 <vector_add+0x78>`` when the target lies in a known function)."""
    words = " ".join(f"{w:08X}" for w in inst.words)
    line = f"  {inst.offset:08x}: {words:<{_WORD_COLUMN}} {inst.text()}"
    for src in inst.srcs:
        if src.kind == "label":
            target = int(src.value)  # type: ignore[arg-type]
            line += f"  // -> {target:#x}"
            for func in funcs:
                if func.start <= target < func.end:
                    delta = target - func.start
                    line += f" <{func.name}+{delta:#x}>" if delta else f" <{func.name}>"
                    break
    return line


def format_listing(insts: Iterable[Instruction], title: str = "",
                   funcs: Iterable[Function] = ()) -> list[str]:
    """Lines for a run of instructions, optionally under a ``<title>:`` header."""
    funcs = list(funcs)
    lines = [f"{title}:"] if title else []
    lines.extend(format_instruction(inst, funcs) for inst in insts)
    return lines


def load_code_object(data: bytes, target: str | None = None) -> Any:
    """Parse a code object (ELF or offload bundle) with hsapy.codeobject."""
    try:
        from hsapy.codeobject import CodeObject, extract_for_target
    except ImportError as exc:  # pragma: no cover - only before hsapy.codeobject exists
        raise HsapyValueError("reading code objects needs hsapy.codeobject, which is not "
                              "available in this installation") from exc
    if data[:len(_BUNDLE_MAGIC)] == _BUNDLE_MAGIC or data[:4] == b"CCOB":
        if not target:
            raise HsapyValueError("this file is an offload bundle: pass --target (e.g. gfx942) "
                                  "to pick the code object to disassemble")
        data = extract_for_target(data, target)
    return CodeObject.from_bytes(data), data


def executable_segments(co: Any, data: bytes) -> list[tuple[int, bytes]]:
    """(vaddr, bytes) of each executable PT_LOAD segment."""
    out = []
    for seg in co.segments:
        if seg.flags & PF_X:
            out.append((seg.vaddr, bytes(data[seg.offset:seg.offset + seg.filesz])))
    return out


def functions(co: Any, data: bytes) -> list[Function]:
    """Function symbols in address order; each runs to the next one or the end of its segment
    (so the s_nop / s_code_end padding after s_endpgm is shown with its function)."""
    segments = executable_segments(co, data)
    symbols = sorted(((s.value, name) for name, s in co.symbols.items()
                      if _is_function(s) and any(b <= s.value < b + len(c) for b, c in segments)))
    out = []
    for i, (start, name) in enumerate(symbols):
        seg_end = next(b + len(c) for b, c in segments if b <= start < b + len(c))
        end = seg_end
        if i + 1 < len(symbols) and symbols[i + 1][0] < seg_end:
            end = symbols[i + 1][0]
        if end > start:
            out.append(Function(name, start, end))
    return out


def _is_function(symbol: Any) -> bool:
    kind = getattr(symbol, "type", None)
    return kind in (2, "FUNC", "STT_FUNC", "func") or str(kind).upper().endswith("FUNC")


def disassemble(data: bytes, kernel: str | None = None, target: str | None = None) -> str:
    """The disassembly of a code object (every function, or one kernel) as text."""
    co, elf = load_code_object(data, target)
    arch = str(co.target)
    all_funcs = functions(co, elf)
    funcs = all_funcs
    if kernel is not None:
        funcs = [f for f in all_funcs if f.name == kernel]
        if not funcs:
            names = ", ".join(sorted(co.kernels)) or "none"
            raise HsapyValueError(f"no kernel {kernel!r} in this code object (kernels: {names})")
    segments = executable_segments(co, elf)
    lines = [f"; {arch} code object, {len(funcs)} function(s); hsapy disassembly "
             f"(LLVM syntax)"]
    for func in funcs:
        base, blob = next((b, c) for b, c in segments if b <= func.start < b + len(c))
        code = blob[func.start - base:func.end - base]
        kernel_info = co.kernels.get(func.name)
        wave = int(getattr(kernel_info, "wavefront_size", 0) or 0) or None
        insts = decode(code, arch, base_offset=func.start, wavefront_size=wave)
        lines.append("")
        lines.extend(format_listing(insts, f"{func.start:016x} <{func.name}>", all_funcs))
    return "\n".join(lines) + "\n"
