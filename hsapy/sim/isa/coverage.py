"""Which opcodes of a target the interpreter implements, read from the implementation itself.

Every opcode of the target's decoder tables (tables/<cpu>.json, generated from libLLVM-19) is
encoded with register operands, decoded by hsapy's decoder and compiled by
:func:`~hsapy.sim.isa.semantics.compile_instruction`; an opcode whose closure is not the
"unimplemented" stub is implemented. Nothing here needs LLVM: tools/isa_coverage.py adds the
encoding families hsapy's tables do not hold (counted with libLLVM-19 directly) and prints the
report; tests/unit/test_isa_coverage.py holds every implemented mnemonic to a hand-checked case.

A *form* is an operand extension of a VOP1/VOP2/VOPC opcode: SDWA (gfx9), DPP16 and DPP8
(gfx11/gfx12 only). :func:`form_statuses` probes each opcode whose table entry says LLVM
decodes that form.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from . import formats as F
from .decoder import _resolve, _table_for_wave, _tables
from .instruction import DecodeError

__all__ = ["OpcodeStatus", "opcode_statuses", "form_statuses", "implemented_names", "FORMS"]

S_NOP = 0xBF800000          # padding after a probe: a literal slot that decodes as s_nop
V0 = 256                    # 9-bit source code of v0
_SEL_DWORD = 6              # SDWA select DWORD
_DPP_IDENTITY = 0xE4        # quad_perm:[0,1,2,3]
_DPP8_IDENTITY = sum(i << (3 * i) for i in range(8))
# (form, first-dword src0 code, extension dword, table key that says LLVM decodes the form)
FORMS: tuple[tuple[str, int, int, str], ...] = (
    ("SDWA", 249, (_SEL_DWORD << 8) | (_SEL_DWORD << 16) | (_SEL_DWORD << 24), "sdwa_suffix"),
    ("DPP16", 250, (_DPP_IDENTITY << 8) | (0xF << 24) | (0xF << 28), "dpp_suffix"),
    ("DPP8", 233, _DPP8_IDENTITY << 8, "dpp_suffix"),
)


@dataclass(frozen=True)
class OpcodeStatus:
    """One opcode of one encoding: what LLVM calls it, and whether hsapy decodes and runs it.

    ``encoding`` is the table's format name, FLAT split by segment (``FLAT``/``GLOBAL``/
    ``SCRATCH``) and VOP3P matrix opcodes marked ``VOP3P-MAI`` (MFMA/SMFMAC) or ``VOP3P-WMMA``
    (WMMA/SWMMAC); ``why`` says why an opcode is not implemented ("" when it is).
    """

    encoding: str
    opcode: str
    name: str
    decoded: bool
    implemented: bool
    why: str = ""


HWREG_MODE_ALL = 1 | 31 << 11      # hwreg(HW_REG_MODE, 0, 32)


def _program_info(target: str, wave_size: int | None):
    from .interpreter import ProgramInfo

    family, _ = _resolve(target)
    wave = wave_size or (64 if family == "gfx9" else 32)
    return ProgramInfo(family, wave, False, False)


def _code(words: list[int]) -> bytes:
    return b"".join((w & 0xFFFFFFFF).to_bytes(4, "little") for w in list(words) + [S_NOP] * 2)


def _probe(target: str, wave_size: int | None, words_list, info) -> tuple[str, bool, bool, str]:
    """(mnemonic, decoded, implemented, why) of the first probe encoding that decodes."""
    from .semantics import compile_instruction

    name, decoded, why = "", False, "hsapy's decoder declines it"
    for words in words_list:
        try:
            inst = decode_one(target, words, wave_size)
        except DecodeError:
            continue
        name, decoded = inst.name, True
        closure = compile_instruction(inst, info)
        stub = getattr(closure, "unimplemented", None)
        if stub is None:
            return name, True, True, ""
        why = stub
    return name, decoded, False, why


def decode_one(target: str, words: list[int], wave_size: int | None = None):
    """The first instruction of ``words`` (padded with s_nop) as hsapy decodes it."""
    from .decoder import decode

    return decode(_code(words), target, 0, wave_size)[0]


def _format(family: str, name: str) -> F.Format:
    return next(f for f in F.FAMILY_FORMATS[family] if f.name == name)


def _encodings(family: str, fmt_name: str, key: str) -> Iterator[list[int]]:
    """Field settings that make one opcode decodable (VGPR sources where the format allows)."""
    fmt = _format(family, fmt_name)
    if fmt_name == "FLAT":
        seg, op = (int(x) for x in key.split(":"))
        off = 0x7F if family == "gfx9" else 124
        yield fmt.pack({"seg": seg, "op": op, "saddr": off})
        yield fmt.pack({"seg": seg, "op": op, "saddr": 2})
        yield fmt.pack({"seg": seg, "op": op, "saddr": off, "sve": 1})
        return
    values = {fmt.opcode_field: int(key)}
    vgprs = {name: V0 for name in ("src0", "src1", "src2") if name in fmt.fields}
    yield fmt.pack({**values, **vgprs})
    yield fmt.pack(values)
    if fmt_name == "SOPK":
        # s_setreg/s_getreg name a hardware register; MODE (id 1) is the one writable here
        yield fmt.pack({**values, "simm16": HWREG_MODE_ALL})


def _encoding_name(fmt_name: str, key: str, entry: dict) -> str:
    if fmt_name == "FLAT":
        return F.FLAT_SEGMENTS[int(key.split(":")[0])]
    if fmt_name == "VOP3P":
        if entry.get("mai"):
            return "VOP3P-MAI"
        if entry["name"].startswith(("v_wmma", "v_swmmac")):
            return "VOP3P-WMMA"
    return fmt_name


@cache
def opcode_statuses(target: str, wave_size: int | None = None) -> tuple[OpcodeStatus, ...]:
    """Every opcode of ``target``'s tables with its decode and implementation status."""
    family, cpu = _resolve(target)
    tables = _tables(_table_for_wave(family, cpu, wave_size))
    info = _program_info(target, wave_size)
    out: list[OpcodeStatus] = []
    formats = {fmt.name for fmt in F.FAMILY_FORMATS[family]}
    for fmt_name, table in tables.items():
        if fmt_name not in formats:
            continue                    # operand-name tables (HWREG, SENDMSG, ...)
        if fmt_name == "VOPD":
            out.extend(_vopd_statuses(target, wave_size, table, info))
            continue
        for key, entry in sorted(table.items(), key=lambda kv: _sort_key(kv[0])):
            name, decoded, done, why = _probe(target, wave_size,
                                              list(_encodings(family, fmt_name, key)), info)
            out.append(OpcodeStatus(_encoding_name(fmt_name, key, entry), key, entry["name"],
                                    decoded, done, why))
    return tuple(out)


def _sort_key(key: str) -> tuple[int, ...]:
    return tuple(int(x) for x in key.split(":"))


def _vopd_statuses(target: str, wave_size: int | None, table: dict, info) -> list[OpcodeStatus]:
    """gfx11/gfx12 dual issue: each X opcode paired with Y = v_dual_mov_b32, each Y opcode with
    X = v_dual_mov_b32; a half is implemented when the pair compiles."""
    fmt = _format(_resolve(target)[0], "VOPD")
    mov = next(int(k) for k, e in table["y"].items() if e["name"] == "v_dual_mov_b32")
    out = []
    for half in ("x", "y"):
        for key, entry in sorted(table[half].items(), key=lambda kv: int(kv[0])):
            opx, opy = (int(key), mov) if half == "x" else (mov, int(key))
            # vdstx v0, vdsty v3 (the destinations must differ in bank); VGPR sources
            words = fmt.pack({"opx": opx, "opy": opy, "src0x": V0 + 1, "src0y": V0 + 2,
                              "vdsty": 1})
            _, decoded, done, why = _probe(target, wave_size, [words], info)
            out.append(OpcodeStatus(f"VOPD-{half.upper()}", key, entry["name"], decoded, done,
                                    why))
    return out


@cache
def form_statuses(target: str, wave_size: int | None = None) -> tuple[OpcodeStatus, ...]:
    """SDWA / DPP16 / DPP8 forms of every VOP1/VOP2/VOPC opcode whose form LLVM decodes;
    ``encoding`` is ``"<format> <form>"`` (e.g. ``"VOP2 SDWA"``)."""
    family, cpu = _resolve(target)
    tables = _tables(_table_for_wave(family, cpu, wave_size))
    info = _program_info(target, wave_size)
    out: list[OpcodeStatus] = []
    for form, code, ext, table_key in FORMS:
        if (form == "SDWA" and family != "gfx9") or (form == "DPP8" and family == "gfx9"):
            continue
        for fmt_name in ("VOP1", "VOP2", "VOPC"):
            fmt = _format(family, fmt_name)
            for key, entry in sorted(tables.get(fmt_name, {}).items(),
                                     key=lambda kv: int(kv[0])):
                if table_key not in entry:
                    continue
                values = {"op": int(key), "src0": code}
                if "vsrc1" in fmt.fields:
                    values["vsrc1"] = 1
                words = fmt.pack(values) + [ext]
                _, decoded, done, why = _probe(target, wave_size, [words], info)
                out.append(OpcodeStatus(f"{fmt_name} {form}", key, entry["name"], decoded, done,
                                        why))
    return tuple(out)


@cache
def implemented_names(target: str, wave_size: int | None = None) -> frozenset[str]:
    """Mnemonics (LLVM's, without ``_e32``/``_e64``) of ``target`` that have semantics."""
    return frozenset(s.name for s in opcode_statuses(target, wave_size) if s.implemented)
