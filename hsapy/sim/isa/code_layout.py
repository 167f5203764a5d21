"""Where the code of a code object is: its executable segments and the functions in them.

Shared by the decoder (``decode_kernel``) and the disassembler; code objects are read with
``hsapy.codeobject`` (plain ELF, or an offload bundle through ``extract_for_target``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hsapy.errors import HsapyValueError

__all__ = ["Function", "load_code_object", "executable_segments", "functions"]

PF_X = 0x1          # ELF program header flag: executable segment
_BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"


@dataclass(frozen=True)
class Function:
    """A function symbol's code range inside an executable segment."""

    name: str
    start: int
    end: int


def load_code_object(data: bytes, target: str | None = None) -> Any:
    """Parse a code object (ELF or offload bundle) with hsapy.codeobject."""
    try:
        from hsapy.codeobject import CodeObject, extract_for_target
    except ImportError as exc:  # pragma: no cover - only before hsapy.codeobject exists
        raise HsapyValueError("reading code objects needs hsapy.codeobject, which is not "
                              "available in this installation") from exc
    is_bundle = data[:len(_BUNDLE_MAGIC)] == _BUNDLE_MAGIC or data[:4] == b"CCOB"
    if is_bundle and not target:
        raise HsapyValueError("this file is an offload bundle: pass --target (e.g. gfx942) "
                              "to pick the code object to disassemble")
    if target:
        # a plain ELF is checked against the target too, as hsapy inspect does: a target
        # given for the wrong object (or misspelt) is an error, not ignored
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
