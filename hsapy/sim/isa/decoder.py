"""Table-driven decoder for gfx9 (gfx90a, gfx940/941/942) and gfx12 (gfx1200/gfx1201) machine code.

Formats (field positions) come from ``formats.py``; opcode -> mnemonic and operand shapes from the
JSON tables in ``tables/`` generated from libLLVM-19 by ``tools/gen_isa_tables.py``. The decoder
itself needs no LLVM. ``decode`` caches its result per (code bytes, target), so a code object is
decoded once; an unknown encoding raises :class:`DecodeError` before anything runs.
"""
from __future__ import annotations

import hashlib
import json
import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hsapy.errors import HsapyValueError

from . import formats as F
from .code_layout import executable_segments, functions, load_code_object
from .decoder_text import (
    _SCOPES,
    _byte_sel,
    _Declined,
    _ModifierText,
    _sopp_special,
    _unsigned_text,
    _version_text,
    gpr_idx_text,
)
from .formats import BUFFER_FORMATS
from .instruction import DecodeError, Instruction, Operand
from .operands import (
    DPP8_CODE,
    DPP8FI_CODE,
    DPP16_CODE,
    LITERAL_CODE,
    SDWA_CODE,
    ReservedOperand,
    operand_text,
    scalar_operand,
    source_operand,
    with_modifiers,
)

TABLE_DIR = Path(__file__).parent / "tables"
INLINE_ZERO = 128          # the SRC operand code of the inline constant 0

# Target name -> (family, table). Processors of one family share formats; tables are per CPU
# where LLVM's opcode maps differ (gfx90a vs gfx940 cache bits and a few opcodes).
TARGETS: dict[str, tuple[str, str]] = {
    "gfx90a": ("gfx9", "gfx90a"),
    "gfx940": ("gfx9", "gfx942"),
    "gfx941": ("gfx9", "gfx942"),
    "gfx942": ("gfx9", "gfx942"),
    "gfx1100": ("gfx11", "gfx1100"),
    "gfx1101": ("gfx11", "gfx1100"),
    "gfx1102": ("gfx11", "gfx1100"),
    "gfx1200": ("gfx12", "gfx1201"),
    "gfx1201": ("gfx12", "gfx1201"),
}
FAMILIES = {"gfx9": "gfx942", "gfx11": "gfx1100", "gfx12": "gfx1201"}

SRC_FIELDS = ("src0", "src1", "src2", "ssrc0", "ssrc1", "src0x", "src0y")
# gfx90a/gfx940 memory instructions: the acc bit moves the data (never the address) to AGPRs.
_ACC_FIELDS = {"DS": ("vdst", "data0", "data1"), "MUBUF": ("vdata",), "MTBUF": ("vdata",)}
_SCALAR_FIELDS = ("sdst", "sdata", "soffset", "ssrc0", "ssrc1")
# Opcodes the tables know but hsapy does not decode (their operand syntax is special and no
# compiler emits them in compute kernels): decoding one raises DecodeError instead of guessing.
UNSUPPORTED = frozenset({
    "s_dcache_discard", "s_dcache_discard_x2", "v_mov_b16",
    "v_cvt_sr_bf8_f32", "v_cvt_sr_fp8_f32",
})
# SMEM cache hints whose operands print unlike a load (decoder.smem_hint)
SMEM_HINTS = frozenset({"s_atc_probe", "s_atc_probe_buffer", "s_prefetch_inst",
                        "s_prefetch_inst_pc_rel", "s_prefetch_data", "s_prefetch_data_pc_rel",
                        "s_buffer_prefetch_data"})
_FIXED_SPECIALS = {"vcc": (106, 2), "vcc_lo": (106, 1), "vcc_hi": (107, 1), "exec": (126, 2),
                   "exec_lo": (126, 1), "exec_hi": (127, 1), "m0": (124, 1), "scc": (253, 1)}


def family_of(target: str) -> str:
    """The ISA family ("gfx9", "gfx12") of a target name such as "gfx942" or "gfx1201:xnack-"."""
    return _resolve(target)[0]


def _resolve(target: str) -> tuple[str, str]:
    name = str(target).split(":")[0].strip()
    if name in FAMILIES:
        return name, FAMILIES[name]
    if name in TARGETS:
        return TARGETS[name]
    raise HsapyValueError(
        f"no ISA decoder for target {target!r}; hsapy decodes {', '.join(sorted(TARGETS))} "
        f"(families {', '.join(sorted(FAMILIES))})")


def _table_for_wave(family: str, table: str, wavefront_size: int | None) -> str:
    if wavefront_size in (None, 64 if family == "gfx9" else 32):
        return table
    if wavefront_size == 64:
        return f"{table}_w64"
    raise HsapyValueError(f"wavefront size {wavefront_size} is not valid for {family} "
                          f"(gfx9: 64; gfx11/gfx12: 32 or 64)")


@cache
def _tables(cpu: str) -> dict[str, Any]:
    with open(TABLE_DIR / f"{cpu}.json", encoding="utf-8") as fh:
        return json.load(fh)["tables"]


# Decoded code, most recently used last; bounded so that long sessions loading many code
# objects do not grow without limit (a code object is decoded once while it is in use).
_CACHE: OrderedDict[tuple[bytes, str, int], list[Instruction]] = OrderedDict()
_CACHE_SIZE = 128
_CACHE_LOCK = threading.Lock()


def decode(code: bytes, family_or_target: str, base_offset: int = 0,
           wavefront_size: int | None = None) -> list[Instruction]:
    """Decode ``code`` (a whole range of machine code) into instructions.

    ``base_offset`` is added to every instruction's ``offset`` (and to branch targets).
    ``wavefront_size`` matters on gfx11/gfx12, whose default is 32: wave64 code names 64-bit
    lane masks (``vcc``, ``s[0:1]``) where wave32 code names 32-bit ones (``vcc_lo``, ``s0``);
    take it from the kernel (``decode_kernel`` does). gfx9 is always wave64.
    Results are cached per (sha1 of the bytes, table, base_offset).
    """
    family, cpu = _resolve(family_or_target)
    cpu = _table_for_wave(family, cpu, wavefront_size)
    key = (hashlib.sha1(bytes(code)).digest(), cpu, base_offset)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    out = _Decoder(family, cpu, str(family_or_target)).run(bytes(code), base_offset)
    with _CACHE_LOCK:
        _CACHE[key] = out
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return out


def decode_kernel(code_object: Any, kernel_name: str) -> list[Instruction]:
    """Decode one kernel of a code object, from its entry to the end of its function symbol.

    ``code_object`` is the code object's bytes (ELF, or a bundle is rejected: extract first) or a
    ``hsapy.codeobject.CodeObject`` that keeps its bytes (``.data``). When the kernel's symbol
    has no size, decoding runs to the next function symbol or the end of the executable
    segment (the s_nop/s_code_end padding decodes too). Offsets are the code object's virtual
    addresses, as ``llvm-objdump`` shows them.
    """
    if isinstance(code_object, (bytes, bytearray, memoryview)):
        co, data = load_code_object(bytes(code_object))
    else:
        co = code_object
        data = _raw_bytes(co)
    if kernel_name not in co.kernels:
        raise HsapyValueError(f"no kernel {kernel_name!r} in the code object; it has "
                              f"{', '.join(sorted(co.kernels)) or 'none'}")
    entry = co.kernels[kernel_name].entry_vaddr
    symbol = co.symbols.get(kernel_name)
    size = int(getattr(symbol, "size", 0) or 0)
    if not size:
        span = next((f for f in functions(co, data) if f.start == entry), None)
        size = span.end - entry if span else 0
    wave = int(getattr(co.kernels[kernel_name], "wavefront_size", 0) or 0) or None
    for base, blob in executable_segments(co, data):
        if base <= entry and entry + size <= base + len(blob) and size:
            return decode(blob[entry - base:entry - base + size], str(co.target), base_offset=entry,
                          wavefront_size=wave)
    raise HsapyValueError(f"kernel {kernel_name!r}: code at {entry:#x} (+{size}) is not inside an "
                          f"executable segment of the code object")


def _raw_bytes(co: Any) -> bytes:
    for attr in ("data", "raw", "image", "elf"):
        blob = getattr(co, attr, None)
        if isinstance(blob, (bytes, bytearray, memoryview)):
            return bytes(blob)
    raise HsapyValueError("decode_kernel needs the code object's bytes: pass the bytes, or a "
                          "CodeObject that keeps them in .data")


# --- one pass over the bytes ---------------------------------------------------------------------

class _Decoder(_ModifierText):
    def __init__(self, family: str, cpu: str, target: str) -> None:
        self.family = family
        self.cpu = cpu
        self.target = target
        self.tables = _tables(cpu)
        self.gfx940 = cpu == "gfx942"
        self.wave64 = family == "gfx9" or cpu.endswith("_w64")

    def run(self, code: bytes, base: int) -> list[Instruction]:
        if len(code) % 4:
            raise DecodeError(self.target, base + len(code) - len(code) % 4,
                              tuple(code[-(len(code) % 4):]), "none",
                              "code size is not a multiple of 4 bytes")
        count = len(code) // 4
        words = struct.unpack(f"<{count}I", code) + (0, 0, 0, 0)
        out = []
        i = 0
        while i < count:
            inst = self.one(words, i, base + 4 * i)
            if i + inst.size // 4 > count:
                raise DecodeError(self.target, base + 4 * i, tuple(words[i:count]),
                                  inst.encoding, "instruction runs past the end of the code")
            out.append(inst)
            i += inst.size // 4
        return out

    def fail(self, words: tuple[int, ...], i: int, offset: int, detail: str) -> DecodeError:
        nearest = F.nearest_format(self.family, words[i])
        return DecodeError(self.target, offset, tuple(words[i:i + 2]), nearest, detail)

    def one(self, words: tuple[int, ...], i: int, offset: int) -> Instruction:
        try:
            return self.dispatch(words, i, offset)
        except (_Declined, ReservedOperand) as exc:
            raise self.fail(words, i, offset, str(exc)) from None

    def dispatch(self, words: tuple[int, ...], i: int, offset: int) -> Instruction:
        w0 = words[i]
        if w0 == 0 and self.family != "gfx9":
            # gfx10+ reserve the all-zero dword as V_ILLEGAL (it raises an illegal-instruction
            # exception; LLVM's disassembler prints "v_illegal"); on gfx9 it is a v_cndmask_b32
            return Instruction(offset, 4, (0,), self.family, "VOP2", 0, "v_illegal", "", (), (),
                               MappingProxyType({"op": 0}), asm="v_illegal")
        fmt = F.identify(self.family, w0)
        if fmt is None:
            raise self.fail(words, i, offset, "no format matches the first dword")
        base = tuple(words[i:i + fmt.dwords])
        fields = fmt.extract(base)
        if fmt.name == "SOPP":
            return self.sopp(fmt, fields, words, i, offset)
        if fmt.name == "FLAT":
            return self.flat(fmt, fields, words, i, offset)
        if fmt.name == "VOPD":
            return self.vopd(fmt, fields, words, i, offset)
        table = self.tables.get(fmt.name, {})
        entry = table.get(str(fields["op"]))
        if entry is None:
            raise self.fail(words, i, offset, f"{fmt.name} opcode {fields['op']} is not in the "
                                               f"{self.cpu} table")
        if entry["name"] in UNSUPPORTED:
            raise self.fail(words, i, offset,
                            f"{entry['name']} is not supported by hsapy's decoder")
        if entry["name"] == "s_set_gpr_idx_on":
            return self.gpr_idx_on(fmt, entry, fields, words, i, offset)
        if entry["name"] in SMEM_HINTS:
            return self.smem_hint(fmt, entry, fields, words, i, offset)
        if entry["name"] == "s_version":
            inst = self.generic(fmt, fmt.name, entry, fields, words, i, offset)
            return replace(inst, asm=f"s_version {_version_text(fields['simm16'])}")
        encoding = fmt.name
        if entry.get("sd"):
            fields = F.Format(fmt.name, fmt.mask, fmt.match, fmt.dwords,
                              fmt.extra["sd_fields"]).extract(base)
            encoding = "VOP3SD"
        if entry.get("mai"):
            fields = F.MAI_FORMAT.extract(base)
        if entry.get("byte_sel") and fields.get("op_sel") and _byte_sel(entry, fields) is None:
            raise self.fail(words, i, offset, f"{entry['name']} with these op_sel bits is not "
                                               "supported")
        if fmt.name in BUFFER_FORMATS:
            if fields.get("tfe"):
                raise self.fail(words, i, offset, f"{entry['name']} with tfe is not supported")
            if fields.get("lds"):
                # gfx9 load to LDS: the data goes to LDS at M0 instead of VDATA
                if "ops_lds" not in entry:
                    raise self.fail(words, i, offset, f"{entry['name']} has no lds form")
                entry = {**entry, "ops": entry["ops_lds"]}
        return self.generic(fmt, encoding, entry, fields, words, i, offset)

    def gpr_idx_on(self, fmt: F.Format, entry: dict, fields: dict[str, int],
                   words: tuple[int, ...], i: int, offset: int) -> Instruction:
        """S_SET_GPR_IDX_ON SSRC0, imask: the SSRC1 field is not an operand but the raw
        operand-enable mask (CDNA3 ISA guide, S_SET_GPR_IDX_ON); it becomes an ``imm`` source."""
        inst = self.generic(fmt, fmt.name, {**entry, "ops": entry["ops"][:1]}, fields, words, i,
                            offset)
        mask = fields["ssrc1"]
        return replace(inst, srcs=inst.srcs + (Operand("imm", 0, 1, mask, ""),),
                       asm=f"{inst.asm}, {gpr_idx_text(mask)}")

    def smem_hint(self, fmt: F.Format, entry: dict, fields: dict[str, int],
                  words: tuple[int, ...], i: int, offset: int) -> Instruction:
        """S_ATC_PROBE[_BUFFER] (SDATA is a probe-mode immediate, then the usual SMEM base and
        offset) and the gfx12 prefetches ``[SBASE,] IOFFSET, SOFFSET, SDATA`` (RDNA4 ISA guide
        8.5: IOFFSET a signed 24-bit byte offset, SOFFSET an SGPR or null, SDATA an
        immediate); their register operands are sources."""
        name = entry["name"]
        mode_text = _unsigned_text(fields["sdata"])
        mode = Operand("imm", 0, 1, fields["sdata"], "")
        if name.startswith("s_atc_probe"):
            ops = [["sdata", 1, "s"]] + [item for item in entry["ops"] if item[0] != "="]
            # LLVM prints no cache policy (glc, th, scope) on a hint
            fields = {**fields, "glc": 0, "th": 0, "scope": 0}
            inst = self.generic(fmt, fmt.name, {**entry, "ops": ops}, fields, words, i, offset)
            register = operand_text(inst.dsts[0])
            asm = f"{name} {mode_text}" + inst.asm[len(name) + 1 + len(register):]
            return replace(inst, dsts=(), srcs=(mode,) + inst.srcs, asm=asm)
        ctx = _Context(fmt, entry, fields, "", None, offset)
        srcs: list[Operand] = []
        texts: list[str] = []
        for item in entry["ops"]:
            if item[0] == "sbase":
                op, text = self.operand(ctx, "sbase", item[1], item[2])
                srcs.append(op)
                texts.append(text)
        imm = fields["offset"] - (1 << 24) if fields["offset"] >> 23 & 1 else fields["offset"]
        soffset = scalar_operand(self.family, fields["soffset"], 1)
        srcs += [Operand("imm", 0, 1, imm, ""), soffset, mode]
        texts += [f"0x{imm:x}" if imm >= 0 else f"-0x{-imm:x}", operand_text(soffset), mode_text]
        asm = name + " " + ", ".join(texts)
        return Instruction(offset, 8, tuple(words[i:i + 2]), self.family, fmt.name,
                           fields[fmt.opcode_field], name, "", (), tuple(srcs),
                           MappingProxyType(fields), asm=asm)

    # --- the common path: operands from the generated template --------------------------------
    def generic(self, fmt: F.Format, encoding: str, entry: dict, fields: dict[str, int],
                words: tuple[int, ...], i: int, offset: int) -> Instruction:
        ext_kind, fields, suffix = self.extension(fmt, entry, fields, words[i + fmt.dwords])
        size = 4 * (fmt.dwords + (1 if ext_kind else 0))
        literal = None
        if self.needs_literal(fmt, entry, fields, ext_kind):
            literal = words[i + size // 4]
            fields = {**fields, "literal": literal}
            size += 4
        ctx = _Context(fmt, entry, fields, ext_kind, literal, offset)
        dsts: list[Operand] = []
        srcs: list[Operand] = []
        texts: list[str] = []
        for item in entry["ops"]:
            name = item[0]
            if name == "=":
                op, text = self.fixed_operand(ctx, item[1], before_sources=not srcs)
                texts.append(text)
                if op is not None:
                    (srcs if srcs else dsts).append(op)
                continue
            op, text = self.operand(ctx, name, item[1], self.register_file(ctx, name, item[2]))
            texts.append(text)
            if op is None:  # an absent operand LLVM prints as "off"
                continue
            (srcs if _is_source(entry["name"], name) else dsts).append(op)
        mods = self.modifiers(fmt, entry, fields, ext_kind, srcs)
        asm = entry["name"] + suffix
        if texts:
            asm += " " + ", ".join(texts)
        if mods:
            asm += " " + " ".join(mods)
        return Instruction(offset, size, tuple(words[i:i + size // 4]), self.family, encoding,
                           fields[fmt.opcode_field], entry["name"], suffix, tuple(dsts),
                           tuple(srcs), MappingProxyType(fields), asm=asm)

    def extension(self, fmt: F.Format, entry: dict, fields: dict[str, int],
                  ext: int) -> tuple[str, dict[str, int], str]:
        """DPP16 / DPP8 / SDWA: the kind ("" if none), fields with the extension dword's merged in
        (colliding names prefixed: ``dpp_src0``), and the printed suffix."""
        vop3 = fmt.name in ("VOP3", "VOP3P")
        if not (fmt.name in ("VOP1", "VOP2", "VOPC") or (self.family != "gfx9" and vop3)):
            return "", fields, entry["suffix"]
        if not any(item[0] == "src0" for item in entry["ops"]):
            return "", fields, entry["suffix"]  # v_nop, v_pipeflush: SRC0 is ignored
        code0 = fields.get("src0", -1)
        if code0 == DPP16_CODE:
            kind, layout = "dpp", F.DPP16_FIELDS
        elif self.family == "gfx9" and code0 == SDWA_CODE:
            kind, layout = "sdwa", F.SDWA_FIELDS
        elif self.family != "gfx9" and code0 in (DPP8_CODE, DPP8FI_CODE):
            kind, layout = "dpp8", F.DPP8_FIELDS
        else:
            return "", fields, entry["suffix"]
        table_kind = "dpp" if kind == "dpp8" else kind
        if entry.get(f"no_{table_kind}"):
            raise _Declined(f"{entry['name']} has no {kind.upper()} form")
        merged = dict(fields)
        for name, (_, lo, width) in layout.items():
            merged[f"{kind}_{name}" if name in fields else name] = (ext >> lo) & ((1 << width) - 1)
        merged[kind] = 1
        if f"{table_kind}_suffix" in entry:
            suffix = entry[f"{table_kind}_suffix"]  # as LLVM printed the probe
        elif kind == "sdwa":
            suffix = "_sdwa"
        elif vop3:
            suffix = "_e64_dpp"  # every VOP3/VOP3P DPP form, VOP3-only opcodes included
        else:
            suffix = "_dpp"
        return kind, merged, suffix

    @staticmethod
    def needs_literal(fmt: F.Format, entry: dict, fields: dict[str, int], ext_kind: str) -> bool:
        """A 32-bit literal follows: a built-in constant (v_fmamk K) or a source coded 255."""
        if entry.get("literal"):
            return True
        sources = {item[0] for item in entry["ops"] if len(item) > 2 and item[2] != "msg"}
        for name in fmt.literal_srcs:
            if (ext_kind and name == "src0") or name not in sources:
                continue  # a field the opcode does not use (or that is not a source code)
            if fields.get(name) == LITERAL_CODE:
                return True
        return False

    def fixed_operand(self, ctx: _Context, text: str,
                      before_sources: bool) -> tuple[Operand | None, str]:
        """An operand LLVM always prints the same way (``vcc`` of VOPC/v_cndmask, ``off``)."""
        if ctx.ext_kind == "sdwa" and ctx.fmt.name == "VOPC" and text == "vcc" and before_sources:
            # VOPC SDWA names its scalar destination (bit 15 set) instead of VCC.
            if ctx.fields.get("sdwa_sd"):
                op = scalar_operand(self.family, ctx.fields["sdwa_sdst"], 2)
                return op, operand_text(op)
            return Operand("special", 106, 2, None, "vcc"), text
        return _fixed_operand(text), text

    @staticmethod
    def register_file(ctx: _Context, name: str, file: str) -> str:
        """The template's register file, except MFMA, where select bits choose AGPR or VGPR
        (acc_cd: vdst and src2; acc: A and B)."""
        if not ctx.entry.get("mai"):
            return file
        if name == "src2" and ctx.entry["name"].startswith("v_smfmac"):
            return "v"  # SMFMAC's third source is the sparsity index, always a VGPR
        if name in ("vdst", "src2"):
            return "a" if ctx.fields["acc_cd"] else "v"
        if name in ("src0", "src1"):
            return "a" if ctx.fields["acc"] >> int(name[-1]) & 1 else "v"
        return file

    def operand(self, ctx: _Context, name: str, count: int,
                file: str) -> tuple[Operand | None, str]:
        """One templated operand and its LLVM text (None for an absent operand printed "off")."""
        fields, family = ctx.fields, self.family
        if name == "literal":  # built-in literal: v_fmamk/v_fmaak K (hex), s_setreg_imm32 value
            op = Operand("literal", 0, count, ctx.literal, "")
            return op, operand_text(op, ctx.consts.get("literal", "hex"), LITERAL_CODE)
        if ctx.fmt.name == "SMEM" and name == "offset":
            return self.smem_offset(fields)
        if file == "label":  # SOPK branch: PC-relative dword offset
            value = fields[name]
            rel = value - 0x10000 if value & 0x8000 else value
            return Operand("label", 0, 1, ctx.offset + 4 + 4 * rel, ""), str(value)
        if file == "hwreg":
            value = fields[name]
            return Operand("imm", 0, 1, value, ""), self.hwreg_text(value)
        if file == "imm":
            value = fields[name]
            return Operand("imm", 0, 1, value, ""), f"0x{value:x}"
        if file == "msg":  # s_sendmsg_rtn_*: SSRC0 is a message id
            msg = fields[name]
            text = self.tables.get("SENDMSG", {}).get("rtn", {}).get(str(msg), str(msg))
            return Operand("imm", 0, 1, msg, ""), text
        if name in SRC_FIELDS:
            return self.source(ctx, name, count, file)
        value = fields[name]
        if ctx.fmt.name in BUFFER_FORMATS and name == "vaddr":
            if not (fields["offen"] or fields["idxen"]):
                return None, "off"
            count = 2 if fields["offen"] and fields["idxen"] else 1
        if ctx.ext_kind in ("dpp", "sdwa") and name == "vsrc1":
            return self.extension_src1(ctx, value, count)
        if name == "sbase":
            op = Operand("sgpr", value * 2, count, None, "")
        elif name == "srsrc":
            op = Operand("sgpr", value * 4, count, None, "")
        elif file == "s" or name in _SCALAR_FIELDS:
            op = scalar_operand(family, value, count)
        elif file == "a" or (fields.get("acc") and name in _ACC_FIELDS.get(ctx.fmt.name, ())):
            op = Operand("agpr", value, count, None, "")
        else:
            op = Operand("vgpr", value, count, None, "")
        return op, operand_text(op, "b32", value)

    def source(self, ctx: _Context, name: str, count: int, file: str) -> tuple[Operand, str]:
        """A 9-bit SRC / 8-bit SSRC operand with its input modifiers."""
        fields, family = ctx.fields, self.family
        code = fields[name]
        index = SRC_FIELDS.index(name) if name.startswith("src") else 0
        if ctx.ext_kind and name == "src0":
            if ctx.ext_kind == "sdwa" and fields.get("src0_sgpr"):
                op = scalar_operand(family, fields["sdwa_src0"], count)
            else:
                op = Operand("vgpr", fields[f"{ctx.ext_kind}_src0"], count, None, "")
        elif code == LITERAL_CODE:
            op = Operand("literal", 0, count, ctx.literal, "")
        elif name.startswith("ssrc"):
            op = scalar_operand(family, code, count)
        else:
            op = source_operand(family, code, count)
            if file == "a" and op.kind == "vgpr":
                op = Operand("agpr", op.index, count, None, "")
        cls = ctx.consts.get(name, "b32")
        if op.kind in ("const", "literal") and cls.startswith("?"):
            # The generator found no printer matching LLVM for this operand's constants; inline
            # 0 prints "0" in every class (clang emits it as the first accumulator of
            # v_wmma_bf16_16x16x16_bf16).
            if not (op.kind == "const" and code == INLINE_ZERO):
                raise _Declined(f"{ctx.entry['name']} with a constant {name} is not supported")
            cls = "b32"
        neg, abs_ = self.input_mods(ctx, index)
        if neg or abs_:
            op = Operand(op.kind, op.index, op.count, op.value, op.name, neg, abs_)
        constant = op.kind in ("const", "literal")
        text = with_modifiers(operand_text(op, cls, code), neg, abs_, constant)
        if ctx.fmt.name == "VOP3" and fields["neg"] >> index & 1 and not neg and (
                ctx.entry.get("sext_mask", 0) >> index & 1 or ctx.ext_kind):
            # The neg bit of an integer source prints as sext (always in VOP3 DPP forms).
            text = f"sext({text})"
        if ctx.ext_kind:
            text = self.extension_sext(ctx, index, text)
        return op, text

    def extension_src1(self, ctx: _Context, value: int, count: int) -> tuple[Operand, str]:
        """VSRC1 of a DPP/SDWA instruction: modifiers come from the extension dword."""
        fields = ctx.fields
        op = Operand("vgpr", value, count, None, "")
        if ctx.ext_kind == "sdwa" and fields.get("src1_sgpr"):
            op = scalar_operand(self.family, value, count)
        neg, abs_ = self.input_mods(ctx, 1)
        constant = op.kind in ("const", "literal")
        text = with_modifiers(operand_text(op, ctx.consts.get("src1", "b32"), value), neg, abs_,
                              constant)
        text = self.extension_sext(ctx, 1, text)
        return Operand(op.kind, op.index, op.count, op.value, op.name, neg, abs_), text

    @staticmethod
    def extension_sext(ctx: _Context, index: int, text: str) -> str:
        """sext() of an integer source of a DPP/SDWA form: SDWA's sext bit, or (DPP) the neg
        bit of a source that does not take neg."""
        fields, entry = ctx.fields, ctx.entry
        if ctx.fmt.name not in ("VOP1", "VOP2", "VOPC") or index > 1:
            return text
        if ctx.ext_kind == "sdwa":
            bit = fields.get(f"src{index}_sext")
        elif ctx.ext_kind == "dpp":
            bit = fields.get(f"src{index}_neg")
        else:
            return text
        if bit and entry.get(f"{ctx.ext_kind}_sext_mask", 0) >> index & 1:
            return f"sext({text})"
        return text

    def input_mods(self, ctx: _Context, index: int) -> tuple[bool, bool]:
        """(neg, abs) of source ``index`` for the encodings that have input modifiers."""
        fmt, fields, entry = ctx.fmt, ctx.fields, ctx.entry
        if ctx.ext_kind in ("dpp", "sdwa") and fmt.name in ("VOP1", "VOP2", "VOPC") and index < 2:
            # Only sources whose modifiers LLVM prints (integer opcodes ignore the bits).
            neg_ok = entry.get(f"{ctx.ext_kind}_neg_mask", 3) >> index & 1
            abs_ok = entry.get(f"{ctx.ext_kind}_abs_mask", 3) >> index & 1
            return (bool(neg_ok and fields.get(f"src{index}_neg")),
                    bool(abs_ok and fields.get(f"src{index}_abs")))
        if fmt.name == "VOP3":
            # Only sources that take modifiers print them (the generator probed LLVM).
            neg_ok = entry.get("neg_mask", 7) >> index & 1
            abs_ok = "abs" in fields and entry.get("abs_mask", 7) >> index & 1
            neg = bool(neg_ok and fields["neg"] >> index & 1)
            return neg, bool(abs_ok and fields["abs"] >> index & 1)
        if fmt.name == "VOP3P" and "neg_lo" in fields and entry.get("neg_abs_operands"):
            # v_fma_mix*: neg_lo/neg_hi are the sources' neg/abs.
            return bool(fields["neg_lo"] >> index & 1), bool(fields["neg_hi"] >> index & 1)
        return False, False

    def smem_offset(self, fields) -> tuple[Operand, str]:
        """The SMEM offset operand(s): an immediate, an SGPR, or ``sN offset:0x..``."""
        if self.family == "gfx9":
            if not fields["imm"]:
                op = scalar_operand(self.family, fields["offset"] & 0xFF, 1)
                return op, operand_text(op)
            imm = fields["offset"]
            if imm & 0x100000:
                imm -= 0x200000
            imm_text = f"0x{imm:x}" if imm >= 0 else f"-0x{-imm:x}"
            if fields["soe"]:
                op = scalar_operand(self.family, fields["soffset"], 1)
                return op, f"{operand_text(op)} offset:{imm_text}"
            return Operand("imm", 0, 1, imm, ""), imm_text
        imm = fields["offset"]
        bits = 21 if self.family == "gfx11" else 24
        if imm >> (bits - 1) & 1:
            imm -= 1 << bits
        imm_text = f"0x{imm:x}" if imm >= 0 else f"-0x{-imm:x}"
        if fields["soffset"] != 124:
            op = scalar_operand(self.family, fields["soffset"], 1)
            if imm or self.family == "gfx12":
                return op, f"{operand_text(op)} offset:{imm_text}"
            return op, operand_text(op)
        if imm == 0 and self.family == "gfx11":
            # LLVM prints the (null) SGPR offset instead of a zero immediate on gfx11.
            return Operand("special", 124, 1, None, "null"), "null"
        return Operand("imm", 0, 1, imm, ""), imm_text

    # --- SOPP ------------------------------------------------------------------------------------
    def sopp(self, fmt, fields, words, i, offset) -> Instruction:
        entry = self.tables["SOPP"].get(str(fields["op"]))
        if entry is None:
            raise self.fail(words, i, offset,
                            f"SOPP opcode {fields['op']} is not in the {self.cpu} table")
        name, kind = entry["name"], entry["sopp"]
        if name in UNSUPPORTED:
            raise self.fail(words, i, offset, f"{name} is not supported by hsapy's decoder")
        imm = fields["simm16"]
        srcs: tuple[Operand, ...] = ()
        text = name
        if "branch" in name:
            rel = imm - 0x10000 if imm & 0x8000 else imm
            srcs = (Operand("label", 0, 1, offset + 4 + 4 * rel, ""),)
            text = f"{name} {imm}"
        elif kind == "none":
            pass
        else:
            srcs = (Operand("imm", 0, 1, imm, ""),)
            if kind in ("signed",):
                text = f"{name} {imm - 0x10000 if imm & 0x8000 else imm}"
            elif kind == "hex":
                text = f"{name} 0x{imm:x}"
            elif kind == "unsigned":
                text = f"{name} {imm}"
            elif kind == "unsigned_omit0":
                text = name if imm == 0 else f"{name} {imm}"
            else:
                text = f"{name} {self.sopp_special(name, imm)}"
        return Instruction(offset, 4, (words[i],), self.family, "SOPP", fields["op"], name, "",
                           (), srcs, MappingProxyType(fields), asm=text)

    def sopp_special(self, name: str, imm: int) -> str:
        """Immediates with their own syntax: messages (from the generated SENDMSG table),
        counters, delays."""
        if name.startswith("s_sendmsg"):
            if imm >= 1024:
                # The tables cover the message/operation/stream bits; LLVM's printing of values
                # with higher bits set is irregular and no compiler emits them.
                raise _Declined(f"{name} with immediate {imm:#x} is not supported")
            return self.tables.get("SENDMSG", {}).get("sopp", {}).get(str(imm), str(imm))
        return _sopp_special(self.family, name, imm)

    # --- FLAT / GLOBAL / SCRATCH -----------------------------------------------------------------
    def flat(self, fmt, fields, words, i, offset) -> Instruction:
        seg = fields["seg"]
        entry = self.tables["FLAT"].get(f"{seg}:{fields['op']}")
        if entry is None:
            raise self.fail(words, i, offset, f"FLAT seg {seg} opcode {fields['op']} is not in "
                                               f"the {self.cpu} table")
        encoding = F.FLAT_SEGMENTS[seg]
        family = self.family
        if family == "gfx9" and not self.gfx940 and fields.get("sve"):
            # gfx90a: bit 13 is LDS (load to LDS through M0), which hsapy does not model.
            raise self.fail(words, i, offset, f"{entry['name']} with the lds bit is not supported")
        off_code = 0x7F if family == "gfx9" else 124
        saddr = fields["saddr"]
        has_saddr = encoding != "FLAT" and saddr != off_code
        dsts, srcs, texts = [], [], []
        returns = {"gfx9": fields.get("sc0"), "gfx11": fields.get("glc")}.get(
            family, fields.get("th", 0) & 1)
        template = entry["ops_rtn"] if returns and "ops_rtn" in entry else entry["ops"]
        for item in template:
            name = item[0]
            if name == "=":  # "off": the absent saddr or (scratch) absent vaddr
                continue
            count = item[1]
            if name == "addr":
                # Scratch address VGPR: SVE bit on gfx940/gfx11/gfx12; on gfx90a, present
                # exactly when there is no SGPR base.
                vaddr_used = fields.get("sve") if self.family != "gfx9" or self.gfx940 \
                    else saddr == off_code
                if encoding == "SCRATCH" and not vaddr_used:
                    texts.append("off")
                    continue
                width = 2 if encoding == "FLAT" or (encoding == "GLOBAL" and not has_saddr) else 1
                op = Operand("vgpr", fields["addr"], width, None, "")
                srcs.append(op)
                texts.append(operand_text(op))
            elif name == "vdst":
                acc = family == "gfx9" and fields.get("acc")
                op = Operand("agpr" if acc else "vgpr", fields["vdst"], count, None, "")
                dsts.append(op)
                texts.append(operand_text(op))
            elif name == "data":
                acc = family == "gfx9" and fields.get("acc")
                op = Operand("agpr" if acc else "vgpr", fields["data"], count, None, "")
                srcs.append(op)
                texts.append(operand_text(op))
        prints_saddr = any(item[0] == "=" for item in template)  # global_wb/global_inv: none
        if encoding != "FLAT" and prints_saddr:
            if has_saddr:
                op = scalar_operand(family, saddr, 1 if encoding == "SCRATCH" else 2)
                srcs.append(op)
                texts.append(operand_text(op))
            else:
                texts.append("off")
        mods = []
        raw_off = fields["offset"]
        if family in ("gfx9", "gfx11"):
            off = raw_off
            if encoding != "FLAT" and off & 0x1000:
                off -= 0x2000  # GLOBAL/SCRATCH: signed 13 bits; FLAT: unsigned
        else:
            off = raw_off - (1 << 24) if raw_off & 0x800000 else raw_off
        srcs.append(Operand("imm", 0, 1, off, ""))
        if off:
            mods.append(f"offset:{off}")
        if family == "gfx9":
            mods.extend(self.cache_bits(fields))
        elif family == "gfx11":
            mods.extend(flag for flag in ("glc", "slc", "dlc") if fields.get(flag))
        else:
            th_names = entry.get("th", [[]] * 4)[fields["scope"]]
            th = fields["th"]
            if th and th < len(th_names) and th_names[th]:
                mods.append(f"th:{th_names[th]}")
            if fields["scope"]:
                mods.append(f"scope:{_SCOPES[fields['scope']]}")
        if not template:  # global_inv, global_wb, ...: cache policy only
            mods = [m for m in mods if not m.startswith("offset:")]
        asm = entry["name"] + entry["suffix"]
        if texts:
            asm += " " + ", ".join(texts)
        if mods:
            asm += " " + " ".join(mods)
        return Instruction(offset, 4 * fmt.dwords, tuple(words[i:i + fmt.dwords]), family, encoding,
                           fields["op"], entry["name"], entry["suffix"], tuple(dsts), tuple(srcs),
                           MappingProxyType(fields), asm=asm)

    # --- VOPD (gfx11/gfx12 dual issue) -----------------------------------------------------------
    def vopd(self, fmt, fields, words, i, offset) -> Instruction:
        table = self.tables["VOPD"]
        ex = table["x"].get(str(fields["opx"]))
        ey = table["y"].get(str(fields["opy"]))
        if ex is None or ey is None:
            raise self.fail(words, i, offset, f"VOPD opx {fields['opx']} / opy {fields['opy']} "
                                               f"not in the {self.cpu} table")
        size = 8
        literal = None
        if ex.get("literal") or ey.get("literal") or fields["src0x"] == LITERAL_CODE \
                or fields["src0y"] == LITERAL_CODE:
            literal = words[i + 2]
            size = 12
        vdsty = (fields["vdsty"] << 1) | ((fields["vdstx"] & 1) ^ 1)
        values = {**fields, "vdsty": vdsty}
        if literal is not None:
            values["literal"] = literal
        halves = []
        for entry in (ex, ey):
            dsts, srcs, texts = [], [], []
            for item in entry["ops"]:
                name = item[0]
                if name == "=":
                    texts.append(item[1])
                    continue
                count = item[1]
                if name == "literal":  # the K of v_dual_fmaak/fmamk: raw hex
                    op = Operand("literal", 0, 1, literal, "")
                    cls = entry.get("const", {}).get("literal", "hex")
                    text = operand_text(op, cls, LITERAL_CODE)
                elif name in ("src0x", "src0y"):
                    code = values[name]
                    op = Operand("literal", 0, 1, literal, "") if code == LITERAL_CODE \
                        else source_operand(self.family, code, count)
                    text = operand_text(op, entry.get("const", {}).get(name, "b32"), code)
                else:
                    op = Operand("vgpr", values[name], count, None, "")
                    text = operand_text(op)
                (dsts if name.startswith("vdst") else srcs).append(op)
                texts.append(text)
            halves.append((entry, dsts, srcs, " ".join([entry["name"], ", ".join(texts)])))
        (ex_, dx, sx, tx), (ey_, dy, sy, ty) = halves
        nwords = size // 4
        raw = tuple(words[i:i + nwords])
        shared = MappingProxyType(values)
        y_inst = Instruction(offset, size, raw, self.family, "VOPD", fields["opy"], ey_["name"], "",
                             tuple(dy), tuple(sy), shared, asm=ty)
        return Instruction(offset, size, raw, self.family, "VOPD", fields["opx"], ex_["name"], "",
                           tuple(dx), tuple(sx), shared, pair=y_inst, asm=f"{tx} :: {ty}")


@dataclass
class _Context:
    """What operand decoding needs to know about the instruction being decoded."""

    fmt: F.Format
    entry: dict
    fields: dict[str, int]
    ext_kind: str
    literal: int | None
    offset: int

    @property
    def consts(self) -> dict[str, str]:
        return self.entry.get("const", {})


def _fixed_operand(text: str) -> Operand | None:
    if text in _FIXED_SPECIALS:
        code, count = _FIXED_SPECIALS[text]
        return Operand("special", code, count, None, text)
    return None


def _is_source(mnemonic: str, field: str) -> bool:
    """Whether an encoding field's operand is read (``srcs``) rather than written (``dsts``).

    Destination fields are written, except: SOPK compares read SDST (``s_cmpk_eq_u32 s0, 0x10``);
    scalar stores and atomics read SDATA (an atomic with glc also returns into it: the executor
    knows from the opcode); MUBUF VDATA is written only by loads.
    """
    if field == "sdst":
        return mnemonic.startswith(("s_cmpk_", "s_setreg"))
    if field == "sdata":
        return "store" in mnemonic or "atomic" in mnemonic
    if field == "vdata":
        return "load" not in mnemonic
    return field != "vdst"


