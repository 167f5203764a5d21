"""hsapy's own disassembler: address, raw words and LLVM-syntax text of every instruction.

No LLVM is needed: instructions come from :func:`hsapy.sim.isa.decoder.decode`, whose text agrees
with libLLVM-19's disassembler (tests/unit/test_disasm_oracle.py). Code objects are read with
``hsapy.codeobject`` (plain ELF, or an offload bundle through ``extract_for_target``).

A listing never stops at a word the decoder does not know: like llvm-objdump-19 it prints
``.long 0x...`` for that dword (with the decoder's reason as a comment) and goes on with the
next one. Each function decodes with its wave size: a kernel's from its metadata, a device
function's from the kernels that call it (PC-relative calls: s_getpc_b64 then the 64-bit add
of a literal offset), else the one wave size all kernels of the code object share.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hsapy.errors import HsapyValueError

from .code_layout import Function, executable_segments, functions, load_code_object
from .decoder import decode
from .instruction import DecodeError, Instruction

_WORD_COLUMN = 30   # width of the raw-words column (three dwords fit)


@dataclass(frozen=True)
class UndecodableWord:
    """A dword the decoder does not know, listed as llvm-objdump-19 lists it (``.long``)."""

    offset: int
    words: tuple[int, ...]
    reason: str
    size: int = 4
    srcs: tuple = ()

    def text(self) -> str:
        """``.long 0x7fffffff`` (a trailing partial dword: ``.byte`` values)."""
        if self.size < 4:
            return ".byte " + ", ".join(f"{b:#04x}" for b in self.words)
        return f".long {self.words[0]:#010x}"


def decode_listing(code: bytes, target: str, base_offset: int = 0,
                   wavefront_size: int | None = None) -> list[Instruction | UndecodableWord]:
    """:func:`decode`, except that an undecodable dword becomes an :class:`UndecodableWord`
    and decoding goes on at the next dword (what llvm-objdump does)."""
    out: list[Instruction | UndecodableWord] = []
    pos = 0
    end = len(code) - len(code) % 4
    while pos < end:
        try:
            out.extend(decode(code[pos:end], target, base_offset + pos, wavefront_size))
            pos = end
        except DecodeError as exc:
            good = max(0, exc.offset - base_offset - pos)
            if good:
                out.extend(decode(code[pos:pos + good], target, base_offset + pos,
                                  wavefront_size))
            at = pos + good
            word = int.from_bytes(code[at:at + 4], "little")
            why = f"not decodable for {target}; nearest format {exc.nearest}"
            if exc.detail:
                why += f": {exc.detail}"
            out.append(UndecodableWord(base_offset + at, (word,), why))
            pos = at + 4
    if end < len(code):
        out.append(UndecodableWord(base_offset + end, tuple(code[end:]),
                                   "trailing bytes shorter than a dword", len(code) - end))
    return out


def format_instruction(inst: Instruction | UndecodableWord,
                       funcs: Iterable[Function] = ()) -> str:
    """One line: ``  <address>: <raw words>  <text>``, plus a branch's target as a comment
    (``// -> 0x1978 <vector_add+0x78>`` when the target lies in a known function); an
    undecodable dword says why in its comment."""
    if isinstance(inst, UndecodableWord):
        raw = " ".join(f"{w:08X}" if inst.size == 4 else f"{w:02X}" for w in inst.words)
        return (f"  {inst.offset:08x}: {raw:<{_WORD_COLUMN}} {inst.text()}  "
                f"// {inst.reason}")
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


def format_listing(insts: Iterable[Instruction | UndecodableWord], title: str = "",
                   funcs: Iterable[Function] = ()) -> list[str]:
    """Lines for a run of instructions, optionally under a ``<title>:`` header."""
    funcs = list(funcs)
    lines = [f"{title}:"] if title else []
    lines.extend(format_instruction(inst, funcs) for inst in insts)
    return lines


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
    waves = function_wave_sizes(co, elf, all_funcs)
    lines = [f"; {arch} code object, {len(funcs)} function(s); hsapy disassembly "
             f"(LLVM syntax)"]
    for func in funcs:
        insts = decode_listing(_function_bytes(segments, func), arch, func.start,
                               waves.get(func.name))
        lines.append("")
        lines.extend(format_listing(insts, f"{func.start:016x} <{func.name}>", all_funcs))
    return "\n".join(lines) + "\n"


def _function_bytes(segments: list[tuple[int, bytes]], func: Function) -> bytes:
    base, blob = next((b, c) for b, c in segments if b <= func.start < b + len(c))
    return blob[func.start - base:func.end - base]


def function_wave_sizes(co: Any, data: bytes, funcs: list[Function]) -> dict[str, int | None]:
    """The wave size each function decodes with (None: the target's default). Kernels take
    theirs from the metadata; a device function the wave size of the kernels (or functions)
    that call it; a function no decoded caller reaches, the wave size every kernel of the code
    object shares (when they share one)."""
    waves: dict[str, int | None] = {}
    for func in funcs:
        info = co.kernels.get(func.name)
        size = int(getattr(info, "wavefront_size", 0) or 0) if info is not None else 0
        if size:
            waves[func.name] = size
    kernel_sizes = set(waves.values())
    shared = kernel_sizes.pop() if len(kernel_sizes) == 1 else None
    segments = executable_segments(co, data)
    by_start = {f.start: f for f in funcs}
    arch = str(co.target)
    work = [f for f in funcs if f.name in waves]
    while work:
        caller = work.pop()
        for target in _call_targets(decode_listing(_function_bytes(segments, caller), arch,
                                                   caller.start, waves[caller.name])):
            callee = by_start.get(target)
            if callee is not None and callee.name not in waves:
                waves[callee.name] = waves[caller.name]
                work.append(callee)
    for func in funcs:
        waves.setdefault(func.name, shared)
    return waves


def _call_targets(insts: list) -> set[int]:
    """Addresses a function computes PC-relatively: ``s_getpc_b64 s[a:a+1]`` followed by
    ``s_add_u32 sa, sa, lo`` and ``s_addc_u32 sa+1, sa+1, hi`` (s_add_co_u32 / s_add_co_ci_u32
    on gfx12) -- how LLVM materialises a callee's (or any code) address."""
    pcs: dict[int, int] = {}
    low: dict[int, int] = {}
    found: set[int] = set()
    for inst in insts:
        if isinstance(inst, UndecodableWord):
            continue
        name = inst.name
        if name == "s_getpc_b64" and inst.dsts and inst.dsts[0].kind == "sgpr":
            pcs[inst.dsts[0].index] = inst.offset + inst.size
            continue
        if name in ("s_add_u32", "s_add_co_u32") and inst.dsts and inst.dsts[0].kind == "sgpr":
            reg = inst.dsts[0].index
            consts = [op.value for op in inst.srcs if op.kind in ("literal", "const")]
            if reg in pcs and consts and isinstance(consts[0], int):
                low[reg] = int(consts[0]) & 0xFFFFFFFF
            continue
        if name in ("s_addc_u32", "s_add_co_ci_u32") and inst.dsts \
                and inst.dsts[0].kind == "sgpr":
            reg = inst.dsts[0].index - 1
            consts = [op.value for op in inst.srcs if op.kind in ("literal", "const")]
            if reg in pcs and reg in low and consts and isinstance(consts[0], int):
                offset = (int(consts[0]) & 0xFFFFFFFF) << 32 | low.pop(reg)
                found.add((pcs.pop(reg) + offset) & 0xFFFFFFFFFFFFFFFF)
    return found
