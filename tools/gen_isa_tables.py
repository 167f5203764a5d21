#!/usr/bin/env python3
"""Generate hsapy's opcode tables (hsapy/sim/isa/tables/<cpu>.json) from LLVM itself.

For every encoding format of a family (field positions: hsapy/sim/isa/formats.py, from AMD's ISA
guides) this script enumerates the opcode field with fixed, valid operand fields, disassembles
each word with libLLVM-19's ``LLVMDisasmInstruction`` for the target CPU, and records what LLVM
says: the mnemonic, the order and width (register count) of every operand it prints and which
encoding field each comes from, how each source operand's constants print, and the modifier
syntax (op_sel list length, DS offset style, gfx12 cache-policy names). That is deriving facts
from LLVM's behaviour, not copying its code; the decoder needs no LLVM at run time.

    python3 tools/gen_isa_tables.py            # rewrite every table
    python3 tools/gen_isa_tables.py gfx942     # one table (gfx942 gfx90a gfx1100 gfx1100_w64
                                               # gfx1201 gfx1201_w64)

Needs /usr/lib/llvm-19/lib/libLLVM.so.1 (Debian package llvm-19) and cffi. Output is sorted
and deterministic: rerunning on the same LLVM gives the same bytes.

Table format (read by hsapy/sim/isa/decoder.py): ``tables[<format>][<opcode>]`` (FLAT:
``"<seg>:<opcode>"``; VOPD: ``["x"|"y"][<opcode>]``) is an entry with

- ``name``, ``suffix``: LLVM's mnemonic split into base name and ``_e32``/``_e64``/... suffix;
- ``ops``: the printed operands in order, each ``[field, register count, kind]`` with kind
  ``v``/``s``/``a`` (register file as printed), ``imm``, ``hwreg``, ``label``, ``msg``,
  ``lit`` (a built-in literal), or ``["=", text]`` for text LLVM always prints (``vcc``, ``off``);
  ``ops_rtn``: the operands of an atomic's returning form;
- ``const``: per source field, the constant printer (operands.CONST_CLASSES) matching LLVM;
- optional facts: ``literal`` (a literal dword always follows), ``sd`` (VOP3 with a scalar
  destination), ``mai`` (MFMA), ``op_sel_n``/``op_sel_hi_n``/``op_sel_hi_default``/``neg_n``
  (VOP3P list lengths and defaults), ``neg_mask``/``abs_mask``/``sext_mask`` (VOP3 sources that
  print modifiers), ``neg_abs_operands`` (v_fma_mix*), ``ds_offsets`` (``single``/``pair``),
  ``cache_bits``/``has_offset`` (buffer instructions), ``typed`` (a tbuffer opcode: prints its
  format), ``ops_lds`` (the operands of the gfx9 buffer ``lds`` form, which has no VDATA),
  ``th`` (gfx12 cache-policy names per scope), ``sopp`` (how a SOPP immediate prints).

Plus ``HWREG`` (hardware register names), ``SENDMSG`` (message names) and ``BUFFMT`` (the
``format:`` text of each typed-buffer format value), all LLVM's spelling.
"""
from __future__ import annotations

import json
import re
import struct
import sys
from pathlib import Path

import cffi

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hsapy.sim.isa import formats as F  # noqa: E402
from hsapy.sim.isa.instruction import Operand  # noqa: E402
from hsapy.sim.isa.operands import const_text  # noqa: E402

LIBLLVM_CANDIDATES = (
    "/usr/lib/llvm-19/lib/libLLVM.so.1",
    "/usr/lib/llvm-19/lib/libLLVM-19.so",
    "/usr/lib/llvm-19/lib/libLLVM.so",
)
# CPUs known to LLVM 19 (an unknown CPU name aborts the process inside LLVM: never pass others).
CPUS = {"gfx942": "gfx9", "gfx90a": "gfx9", "gfx1100": "gfx11", "gfx1201": "gfx12"}
# Tables: name -> (CPU, LLVM features). gfx11/gfx12 default to wave32; their wave64 code prints
# (and means) 64-bit lane masks (vcc instead of vcc_lo, s[n:n+1]), so it gets its own table.
TABLE_VARIANTS = {
    "gfx942": ("gfx942", ""), "gfx90a": ("gfx90a", ""),
    "gfx1100": ("gfx1100", ""), "gfx1100_w64": ("gfx1100", "+wavefrontsize64"),
    "gfx1201": ("gfx1201", ""), "gfx1201_w64": ("gfx1201", "+wavefrontsize64"),
}
TABLE_DIR = ROOT / "hsapy" / "sim" / "isa" / "tables"

_CDEF = """
void LLVMInitializeAMDGPUTargetInfo(void);
void LLVMInitializeAMDGPUTargetMC(void);
void LLVMInitializeAMDGPUDisassembler(void);
void *LLVMCreateDisasmCPUFeatures(const char *Triple, const char *CPU, const char *Features,
                                  void *DisInfo, int TagType, void *GetOpInfo, void *SymbolLookUp);
size_t LLVMDisasmInstruction(void *DC, uint8_t *Bytes, uint64_t BytesSize, uint64_t PC,
                             char *OutString, size_t OutStringSize);
void LLVMDisasmDispose(void *DC);
"""


class LLVMDisassembler:
    """libLLVM's C disassembler for one AMDGPU CPU, through cffi (used by this generator and by
    the oracle test; never by hsapy at run time)."""

    _ffi = None
    _lib = None

    @classmethod
    def _load(cls):
        if cls._lib is None:
            ffi = cffi.FFI()
            ffi.cdef(_CDEF)
            last: Exception | None = None
            for path in LIBLLVM_CANDIDATES:
                try:
                    lib = ffi.dlopen(path)
                    break
                except OSError as exc:
                    last = exc
            else:
                raise OSError(f"libLLVM-19 not found ({last}); install the Debian package llvm-19")
            lib.LLVMInitializeAMDGPUTargetInfo()
            lib.LLVMInitializeAMDGPUTargetMC()
            lib.LLVMInitializeAMDGPUDisassembler()
            cls._ffi, cls._lib = ffi, lib
        return cls._ffi, cls._lib

    def __init__(self, cpu: str, features: str = "") -> None:
        if cpu not in CPUS:
            raise ValueError(f"refusing CPU {cpu!r}: LLVM aborts on unknown names; known: "
                             f"{sorted(CPUS)}")
        ffi, lib = self._load()
        self._dc = lib.LLVMCreateDisasmCPUFeatures(b"amdgcn-amd-amdhsa", cpu.encode(),
                                                   features.encode(), ffi.NULL, 0, ffi.NULL,
                                                   ffi.NULL)
        if self._dc == ffi.NULL:
            raise OSError(f"LLVMCreateDisasmCPUFeatures failed for {cpu} {features}")
        self._out = ffi.new("char[1024]")
        self.cpu = cpu

    def disasm(self, data: bytes, pc: int = 0) -> tuple[int, str]:
        """(size in bytes, text) of the first instruction of ``data``; size 0 if invalid."""
        ffi, lib = self._ffi, self._lib
        self._out[0] = b"\0"
        buf = ffi.from_buffer("uint8_t[]", data)
        n = lib.LLVMDisasmInstruction(self._dc, buf, len(data), pc, self._out, 1024)
        if n == 0:
            return 0, ""
        return int(n), ffi.string(self._out).decode().strip()

    def words(self, words: list[int]) -> tuple[int, str]:
        data = struct.pack(f"<{len(words)}I", *words) + b"\0" * 16
        return self.disasm(data)


# --- parsing LLVM's text -----------------------------------------------------------------------

BARE_MODIFIERS = {"glc", "slc", "dlc", "scc", "sc0", "sc1", "nt", "gds", "clamp", "offen", "idxen",
                  "lds", "tfe", "lwe", "row_mirror", "row_half_mirror", "addr64", "high"}
_REG = re.compile(r"^(v|s|a|ttmp)(?:(\d+)|\[(\d+):(\d+)\])$")


def split_operands(rest: str) -> tuple[list[str], list[str]]:
    """Split the text after the mnemonic into operands and trailing modifiers."""
    items, depth, cur = [], 0, ""
    for ch in rest:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        items.append(cur.strip())
    if not items:
        return [], []
    last = _split_spaces(items.pop())
    mods = []
    first = last[0]
    if not items and (re.match(r"^[a-z_0-9]+:", first) or first in BARE_MODIFIERS):
        mods = last
    else:
        items.append(first)
        mods = last[1:]
    return items, mods


def _split_spaces(text: str) -> list[str]:
    """Split on blanks outside brackets: ``hwreg(52, 8, 3) glc`` -> two tokens."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == " " and depth == 0:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def reg_of(token: str) -> tuple[str, int, int] | None:
    """(file, first, count) of a register token, modifiers stripped; None otherwise."""
    tok = token.lstrip("-").strip("|")
    m = _REG.match(tok)
    if not m:
        return None
    if m.group(2) is not None:
        return m.group(1), int(m.group(2)), 1
    lo, hi = int(m.group(3)), int(m.group(4))
    return m.group(1), lo, hi - lo + 1


def split_suffix(mnemonic: str) -> tuple[str, str]:
    for suffix in ("_e64_dpp", "_e32", "_e64", "_dpp", "_sdwa"):
        if mnemonic.endswith(suffix):
            return mnemonic[: -len(suffix)], suffix
    return mnemonic, ""


# --- probing -------------------------------------------------------------------------------------

LITERAL_PROBE = 0x40490FDB
LITERAL_VALUES = (0x12345678, 0x3F800000, 0xFFFFFFFF, 0x3C00, 0xFFF0, 0x40, 0x41, 0x3E22F983,
                  0x3118, 0x3FF00000, 0x7FFF, 0xFFFF0000, 0xFFFFFFF0, 0x3FC45F30, 0x3800)
CONST_ORDER = ("b32", "f16", "i16", "u16", "f64", "b64", "s64", "v2f16", "i32", "hex")
SRC_FIELDS = ("src0", "src1", "src2", "ssrc0", "ssrc1", "src0x", "src0y")
SCALE = {"sbase": 2, "srsrc": 4}
# Fields that select a mode or format rather than name a register (never operand positions).
NON_OPERAND_FIELDS = ("op", "opx", "opy", "seg", "imm", "soe", "sve", "dfmt", "nfmt", "format",
                      "offen", "idxen")


def expected_index(field: str, value: int) -> int:
    if field in SRC_FIELDS and value >= 256:
        return value - 256
    return value * SCALE.get(field, 1)


def build_template(tokens: list[str], probe: dict[str, int], imm_texts: dict[str, str],
                   has_literal: bool) -> list[list]:
    """Map printed operands to encoding fields (see "Table format" in the module docstring)."""
    by_index = {}
    for field, value in probe.items():
        if field in NON_OPERAND_FIELDS or field.startswith("op_sel"):
            continue
        by_index.setdefault(expected_index(field, value), field)
    template: list[list] = []
    for tok in tokens:
        reg = reg_of(tok)
        if reg is not None and reg[1] in by_index and reg[1] != 0:
            template.append([by_index[reg[1]], reg[2], reg[0]])
            continue
        if tok.startswith("hwreg("):
            template.append(["simm16", 1, "hwreg"])
            continue
        if tok.startswith("sendmsg("):  # s_sendmsg_rtn_*: SSRC0 holds a message id
            template.append(["ssrc0", 1, "msg"])
            continue
        if "simm16" in probe and tok == str(probe["simm16"]):
            # SOPK branches (s_call_b64, s_cbranch_i_fork) print a decimal dword offset.
            template.append(["simm16", 1, "label"])
            continue
        matched = [f for f, text in imm_texts.items() if text == tok]
        if matched:
            template.append([matched[0], 1, "imm"])
            continue
        if has_literal and re.match(r"^-?(0x[0-9a-f]+|[0-9.]+)$", tok):
            template.append(["literal", 1, "lit"])
            continue
        template.append(["=", tok])
    return template


def choose_const_class(dis: LLVMDisassembler, fmt: F.Format, probe: dict[str, int], field: str,
                       position: int, allow_literal: bool) -> str:
    """The constant class whose printer reproduces LLVM for every probe of this source."""
    observations: list[tuple[int, int | None, str]] = []
    for code in (240, 242, 248, 129, 193):
        words = fmt.pack({**probe, field: code})
        n, text = dis.words(words + [LITERAL_PROBE])
        if n:
            toks, _ = split_operands(text.split(None, 1)[1] if " " in text else "")
            if position < len(toks) and "/*" not in toks[position]:
                observations.append((code, None, toks[position]))
    if allow_literal:
        for value in LITERAL_VALUES:
            words = fmt.pack({**probe, field: 255})
            n, text = dis.words(words + [value])
            if n:
                toks, _ = split_operands(text.split(None, 1)[1] if " " in text else "")
                if position < len(toks) and "/*" not in toks[position]:
                    observations.append((255, value, toks[position]))
    if not observations:
        return "b32"
    for cls in CONST_ORDER:
        ok = True
        for code, value, printed in observations:
            if value is None:
                operand = Operand("const", 0, 1, 0, "")
            else:
                operand = Operand("literal", 0, 1, value, "")
            if const_text(cls, operand, code) != printed:
                ok = False
                break
        if ok:
            return cls
    return "?" + "|".join(p for _, _, p in observations)


def choose_literal_class(dis, fmt, probe, position: int) -> str:
    """The printer of an opcode's built-in literal (v_fmamk K, s_setreg_imm32 value)."""
    observations = []
    for value in LITERAL_VALUES:
        n, text = dis.words(fmt.pack(probe) + [value])
        toks, _ = split_operands(text.partition(" ")[2]) if n else ([], [])
        if position < len(toks):
            observations.append((value, toks[position]))
    for cls in ("hex",) + CONST_ORDER:
        if all(const_text(cls, Operand("literal", 0, 1, v, ""), 255) == t for v, t in observations):
            return cls
    return "?" + "|".join(t for _, t in observations)


def probe_variants(family: str, fmt: F.Format) -> list[dict[str, int]]:
    """Operand field values that make valid instructions, tried in order."""
    v = lambda i: 256 + i  # noqa: E731
    name = fmt.name
    if name == "SOP1":
        return [{"sdst": 8, "ssrc0": 16}]
    if name == "SOP2":
        return [{"sdst": 8, "ssrc0": 16, "ssrc1": 24}]
    if name == "SOPC":
        return [{"ssrc0": 16, "ssrc1": 24}]
    if name == "SOPK":
        return [{"sdst": 8, "simm16": 0x1234}]
    if name == "SMEM":
        if family == "gfx9":
            return [{"sdata": 8, "sbase": 2, "imm": 1, "offset": 0x10, "soffset": 0}]
        return [{"sdata": 8, "sbase": 2, "offset": 0x10, "soffset": 124}]
    if name in ("VOP1",):
        return [{"vdst": 8, "src0": v(16)}, {"vdst": 8, "src0": 16}]
    if name == "VOP2":
        return [{"vdst": 8, "src0": v(16), "vsrc1": 24}, {"vdst": 8, "src0": 16, "vsrc1": 24}]
    if name == "VOPC":
        return [{"src0": v(16), "vsrc1": 24}, {"src0": 16, "vsrc1": 24}]
    if name in ("VOP3", "VOP3P"):
        out = []
        for kinds in ("vvv", "sss", "vss", "vsv", "svv", "ssv", "vvs"):
            values = {"vdst": 8}
            for i, k in enumerate(kinds):
                reg = 16 + 8 * i
                values[f"src{i}"] = v(reg) if k == "v" else reg
            if name == "VOP3P":
                values["op_sel_hi"] = 3
                values["op_sel_hi2"] = 1
            out.append(values)
        return out
    if name == "DS":
        return [{"vdst": 8, "data0": 16, "data1": 24, "addr": 32}]
    if name == "MUBUF":
        return [{"vdata": 8, "vaddr": 32, "srsrc": 1, "soffset": 40, "offen": 1}]
    if name == "MTBUF":
        # the default format (gfx9 DFMT 1 / NFMT 0, gfx11 unified format 1) prints nothing
        fmt_fields = {"dfmt": 1} if family == "gfx9" else {"format": 1}
        return [{"vdata": 8, "vaddr": 32, "srsrc": 1, "soffset": 40, "offen": 1, **fmt_fields}]
    if name == "VBUFFER":
        return [{"vdata": 8, "vaddr": 32, "rsrc": 4, "soffset": 40, "offen": 1, "format": 1}]
    raise KeyError(name)


# Operand fields an opcode may leave unused; LLVM rejects words whose unused fields are not zero,
# so probes zero subsets of these (fewest first).
OPTIONAL_FIELDS = {
    "SOP1": ("sdst", "ssrc0"), "SOPK": ("sdst",), "SMEM": ("sdata", "sbase", "offset", "imm"),
    "VOP1": ("vdst", "src0"), "VOP3": ("src2", "src1", "src0", "vdst"),
    "VOP3P": ("src2", "src1", "src0"), "DS": ("data1", "data0", "vdst", "addr"),
    "MUBUF": ("vdata", "vaddr", "soffset", "srsrc", "offen"),
    "MTBUF": ("vdata", "vaddr", "soffset", "srsrc", "offen"),
    "VBUFFER": ("vdata", "vaddr", "soffset", "rsrc", "offen"),
}


def candidate_probes(family: str, fmt: F.Format, op: int, fixed: dict[str, int]):
    optional = OPTIONAL_FIELDS.get(fmt.name, ())
    subsets = sorted(range(1 << len(optional)), key=lambda m: (bin(m).count("1"), m))
    if F.identify(family, fmt.pack({fmt.opcode_field: op})[0]) is not fmt:
        return  # this opcode value makes the word look like another (more specific) format
    for mask in subsets:
        for variant in probe_variants(family, fmt):
            probe = {**variant, **fixed, fmt.opcode_field: op}
            for i, name in enumerate(optional):
                if mask >> i & 1 and name in probe:
                    probe[name] = 0
            yield probe


def probe_opcode(dis: LLVMDisassembler, family: str, fmt: F.Format, op: int,
                 fixed: dict[str, int] | None = None) -> tuple[dict, dict[str, int], str] | None:
    """Find a valid instruction with opcode ``op``; returns (entry, probe, text)."""
    fixed = fixed or {}
    for probe in candidate_probes(family, fmt, op, fixed):
        words = fmt.pack(probe)
        n, text = dis.words(words + [LITERAL_PROBE])
        if not n or "/*" in text:
            continue  # invalid, or LLVM printed an operand it considers invalid
        mnemonic, _, rest = text.partition(" ")
        tokens, mods = split_operands(rest)
        has_literal = n > 4 * fmt.dwords
        imm_texts = {}
        if "simm16" in probe:
            imm_texts["simm16"] = f"0x{probe['simm16']:x}"
        if fmt.name == "SMEM":
            imm_texts["offset"] = "0x10"
        name, suffix = split_suffix(mnemonic)
        entry = {"name": name, "suffix": suffix,
                 "ops": build_template(tokens, probe, imm_texts, has_literal)}
        if has_literal:
            entry["literal"] = 1
        if mods:
            entry["mods"] = " ".join(mods)
        return entry, probe, text
    return None


def add_const_classes(dis, family, fmt, entry, probe) -> None:
    allow_literal = family != "gfx9" or fmt.name in ("SOP1", "SOP2", "SOPC", "VOP1", "VOP2", "VOPC")
    classes = {}
    for position, item in enumerate(entry["ops"]):
        if item[0] in SRC_FIELDS and item[2] != "msg":
            classes[item[0]] = choose_const_class(dis, fmt, probe, item[0], position, allow_literal)
        elif item[0] == "literal":
            classes["literal"] = choose_literal_class(dis, fmt, probe, position)
    if classes:
        entry["const"] = classes


def gen_simple(dis, family, fmt) -> dict[str, dict]:
    """SOP1/SOP2/SOPC/SOPK/VOP1/VOP2/VOPC/SMEM/DS/MUBUF/MTBUF/VBUFFER: one table entry per
    opcode."""
    table = {}
    width = fmt.fields[fmt.opcode_field][2]
    for op in range(1 << width):
        found = probe_opcode(dis, family, fmt, op)
        if found is None:
            continue
        entry, probe, _ = found
        add_const_classes(dis, family, fmt, entry, probe)
        if fmt.name == "DS":
            entry["ds_offsets"] = ds_offset_style(dis, fmt, probe)
        if fmt.name in ("MUBUF", "MTBUF", "VBUFFER"):
            add_buffer_facts(dis, family, fmt, entry, probe)
        if fmt.name in ("VOP1", "VOP2", "VOPC"):
            add_extension_facts(dis, family, fmt, entry, probe)
        table[str(op)] = entry
    return table


# Extension dwords used to probe DPP/SDWA forms: DPP16 quad_perm:[0,1,2,3] with all rows and
# banks enabled; SDWA with DWORD selects; both with source register v16.
# DPP64 opcodes of gfx90a/gfx940 only take row_newbcast (0x150+), so that is the second try; VOP1
# SDWA must leave the src1 select clear.
_DPP_PROBES = (0xFF000000 | 0xE4 << 8 | 16, 0xFF000000 | 0x151 << 8 | 16)
_SDWA_PROBES = (16 | 6 << 8 | 6 << 16 | 6 << 24, 16 | 6 << 8 | 6 << 16)
# (src0 bit, src1 bit) of each input modifier in the extension dword; an integer source prints
# its neg bit as sext().
_DPP_MOD_BITS = {"neg": (20, 22), "abs": (21, 23), "sext": (20, 22)}
_SDWA_MOD_BITS = {"neg": (20, 28), "abs": (21, 29), "sext": (19, 27)}


def add_extension_facts(dis, family, fmt, entry, probe) -> None:
    """How the DPP (and, on gfx9, SDWA) forms of an opcode print: their suffix (gfx11/gfx12
    print some VOPC DPP forms without one), and which sources print neg/abs/sext modifiers.
    An opcode without the form gets ``no_<kind>`` and hsapy declines it."""
    if not any(item[0] == "src0" for item in entry["ops"]):
        return
    kinds = [("dpp", 250, _DPP_PROBES, _DPP_MOD_BITS)]
    if family == "gfx9":
        kinds.append(("sdwa", 249, _SDWA_PROBES, _SDWA_MOD_BITS))
    vsrc1 = probe.get("vsrc1")
    for kind, code, exts, mod_bits in kinds:
        base = fmt.pack({**probe, "src0": code})
        for ext in exts:
            n, text = dis.words(base + [ext])
            if n and "/*" not in text:
                break
        else:
            entry[f"no_{kind}"] = 1
            continue
        entry[f"{kind}_suffix"] = split_suffix(text.split()[0])[1]
        src_positions = {}
        toks, _ = split_operands(text.partition(" ")[2])
        for pos, tok in enumerate(toks):
            reg = reg_of(tok)
            if reg and reg[0] == "v" and reg[1] == 16:
                src_positions[0] = pos
            elif reg and reg[0] == "v" and vsrc1 is not None and reg[1] == vsrc1:
                src_positions[1] = pos
        for mod, bits in mod_bits.items():
            marker = {"neg": "-", "abs": "|", "sext": "sext("}[mod]
            mask = 0
            for src, pos in src_positions.items():
                n2, t2 = dis.words(base + [ext | 1 << bits[src]])
                toks2, _ = split_operands(t2.partition(" ")[2]) if n2 else ([], [])
                if pos < len(toks2) and toks2[pos].startswith(marker):
                    mask |= 1 << src
            entry[f"{kind}_{mod}_mask"] = mask


def add_buffer_facts(dis, family, fmt, entry, probe) -> None:
    """Buffer (MUBUF / MTBUF / VBUFFER) opcodes: which cache bits and offsets they print
    (cache-control ops print few), whether they print a format (tbuffer), the operands of the
    gfx9 ``lds`` form (no VDATA), and on gfx12 the th names per scope."""
    printed = []
    base_n, base = dis.words(fmt.pack(probe) + [0])
    for bit in ("sc0", "sc1", "nt", "glc", "slc", "dlc"):
        if bit in fmt.fields:
            n, text = dis.words(fmt.pack({**probe, bit: 1}) + [0])
            if n and text != base:
                printed.append(bit)
    entry["cache_bits"] = printed
    n, text = dis.words(fmt.pack({**probe, "offset": 4}) + [0])
    entry["has_offset"] = int(bool(n) and "offset:4" in text)
    fmt_field = "dfmt" if "dfmt" in fmt.fields else "format"
    if fmt_field in fmt.fields:
        n, text = dis.words(fmt.pack({**probe, fmt_field: 2}) + [0])
        if n and "format:" in text:
            entry["typed"] = 1
    if "lds" in fmt.fields:
        lds_probe = {**probe, "lds": 1}
        n, text = dis.words(fmt.pack(lds_probe) + [0])
        if n and "/*" not in text:
            toks, _ = split_operands(text.partition(" ")[2])
            entry["ops_lds"] = build_template(toks, lds_probe, {}, False)
    if family == "gfx12" and "th" in fmt.fields:
        entry["th"] = [[_th_name(dis, fmt, probe, th, scope) for th in range(8)]
                       for scope in range(4)]


def ds_offset_style(dis, fmt, probe) -> str:
    n, text = dis.words(fmt.pack({**probe, "offset0": 1}))
    if "offset0:" in text:
        return "pair"
    if "offset:" in text:
        return "single"
    return "none"


def add_input_modifier_masks(dis, fmt, entry, probe) -> None:
    """Which sources print VOP3 neg / abs bits (integer opcodes ignore them), probed one source
    at a time (LLVM rejects modifier bits of sources an opcode does not have)."""
    positions = [(pos, item[0]) for pos, item in enumerate(entry["ops"]) if item[0] in SRC_FIELDS]
    for bits_field, marker, key in (("neg", "-", "neg_mask"), ("abs", "|", "abs_mask"),
                                    ("neg", "sext(", "sext_mask")):
        if bits_field not in fmt.fields:
            continue
        mask = 0
        for pos, field in positions:
            bit = 1 << int(field[-1])
            n, text = dis.words(fmt.pack({**probe, bits_field: bit}) + [LITERAL_PROBE])
            if not n:
                continue
            toks, _ = split_operands(text.partition(" ")[2])
            if pos < len(toks) and toks[pos].startswith(marker):
                mask |= bit
        entry[key] = mask


def op_sel_positions(dis, fmt, probe, length: int) -> list[int]:
    """Which op_sel bit each position of LLVM's printed op_sel list shows (-1: none). Usually
    the sources' bits then bit 3 (the destination); v_permlane16 prints bits 0 and 1."""
    positions = [-1] * length
    for bit in range(4):
        n, text = dis.words(fmt.pack({**probe, "op_sel": 1 << bit}) + [LITERAL_PROBE])
        m = re.search(r"op_sel:\[([0-9,]+)\]", text) if n else None
        if m:
            for pos, flag in enumerate(m.group(1).split(",")):
                if flag == "1" and pos < length:
                    positions[pos] = bit
    return positions


def add_output_modifier_support(dis, fmt, entry, probe) -> None:
    """Opcodes that ignore the clamp / omod bits (LLVM prints nothing for them)."""
    for field, marker, key in (("clamp", "clamp", "no_clamp"), ("omod", "mul:2", "no_omod")):
        if field not in fmt.fields:
            continue
        n, text = dis.words(fmt.pack({**probe, field: 1}) + [LITERAL_PROBE])
        if n and marker not in text:
            entry[key] = 1


def gen_vop3(dis, family, fmt) -> dict[str, dict]:
    """VOP3 / VOP3P: also detect VOP3SD (scalar dst in bits 14:8) and op_sel list lengths."""
    table = {}
    sd_fmt = F.Format(fmt.name, fmt.mask, fmt.match, fmt.dwords, fmt.extra.get("sd_fields", {}),
                      fmt.literal_srcs) if fmt.name == "VOP3" else None
    width = fmt.fields["op"][2]
    for op in range(1 << width):
        found = probe_opcode(dis, family, fmt, op)
        if found is None:
            continue
        entry, probe, text = found
        if sd_fmt is not None:
            sd_probe = {k: v for k, v in probe.items() if k in sd_fmt.fields}
            sd_probe["sdst"] = 40
            n, sd_text = dis.words(sd_fmt.pack(sd_probe) + [LITERAL_PROBE])
            toks, _ = split_operands(sd_text.partition(" ")[2]) if n else ([], [])
            regs = [reg_of(t) for t in toks]
            if any(r is not None and r[0] == "s" and r[1] == 40 for r in regs) and \
                    not any(r is not None and r[1] == 40 for r in
                            [reg_of(t) for t in split_operands(text.partition(" ")[2])[0]]):
                entry = {**entry, "ops": build_template(toks, sd_probe, {}, "literal" in entry)}
                entry["sd"] = 1
                probe = sd_probe
        fmt_used = sd_fmt if entry.get("sd") else fmt
        add_const_classes(dis, family, fmt_used, entry, probe)
        if fmt.name == "VOP3":
            add_input_modifier_masks(dis, fmt_used, entry, probe)
        add_output_modifier_support(dis, fmt_used, entry, probe)
        if entry["name"].startswith(("v_mfma", "v_smfmac")):
            entry["mai"] = 1  # VOP3P-MAI: cbsz/abid/blgp and AGPR selects instead of op_sel
            mai = F.MAI_FORMAT
            mai_probe = {k: v for k, v in probe.items() if k in mai.fields}
            n, text = dis.words(mai.pack({**mai_probe, "blgp": 1}) + [LITERAL_PROBE])
            if n and "neg:[" in text:
                entry["blgp_as_neg"] = 1  # f64 MFMA: the blgp bits negate A, B, C
        if not entry.get("sd"):
            for bits in ((0b1111, 0b1000, 0b0001, 0b1001, 0b0011) if fmt.name == "VOP3" else
                         (0b111, 0b001)):
                n, t2 = dis.words(fmt.pack({**probe, "op_sel": bits}) + [LITERAL_PROBE])
                m = re.search(r"op_sel:\[([0-9,]+)\]", t2) if n else None
                if m:
                    entry["op_sel_n"] = len(m.group(1).split(","))
                    break
                if n and "byte_sel:" in t2:
                    entry["byte_sel"] = 1  # op_sel bits spelled byte_sel (fp8 conversions)
                    break
                if n and "index_key:" in t2:
                    entry["index_key"] = 1  # gfx12 SWMMAC: op_sel is the sparsity index key
                    break
            if fmt.name == "VOP3" and "op_sel_n" in entry:
                entry["op_sel_bits"] = op_sel_positions(dis, fmt, probe, entry["op_sel_n"])
            if fmt.name == "VOP3P":
                # op_sel_hi defaults to all ones for packed math, to zeros for v_fma_mix*:
                # LLVM prints it only when it differs from the default.
                for hi, default in ((0, 7), (3, 0)):
                    n, t3 = dis.words(fmt.pack({**probe, "op_sel_hi": hi, "op_sel_hi2": hi >> 1})
                                      + [LITERAL_PROBE])
                    m = re.search(r"op_sel_hi:\[([0-9,]+)\]", t3) if n else None
                    if m:
                        entry["op_sel_hi_n"] = len(m.group(1).split(","))
                        entry["op_sel_hi_default"] = default
                        break
                n, t4 = dis.words(fmt.pack({**probe, "neg_lo": 7, "neg_hi": 7}) + [LITERAL_PROBE])
                m = re.search(r"neg_lo:\[([0-9,]+)\]", t4) if n else None
                if m:
                    entry["neg_n"] = len(m.group(1).split(","))
                elif n and "-|" in t4:
                    # v_fma_mix*: neg_lo/neg_hi are the sources' neg/abs input modifiers.
                    entry["neg_abs_operands"] = 1
        table[str(op)] = entry
    return table


def gen_sopp(dis, family, fmt) -> dict[str, dict]:
    """SOPP: the name and how its 16-bit immediate prints (signed, hex, none or special)."""
    table = {}
    for op in range(128):
        texts = []
        for imm in (0, 5, 0xFFFE):
            n, text = dis.words(fmt.pack({"op": op, "simm16": imm}))
            texts.append(text if n else "")
        if not texts[0] and not texts[1]:
            continue
        name = (texts[0] or texts[1]).split()[0]
        rest = [t[len(name):].strip() for t in texts]
        if rest == ["0", "5", "-2"]:
            kind = "signed"
        elif rest == ["0x0", "0x5", "0xfffe"]:
            kind = "hex"
        elif rest == ["0", "5", "65534"]:
            kind = "unsigned"
        elif rest == ["", "", ""]:
            kind = "none"
        elif rest[0] == "" and rest[1] == "5":
            kind = "unsigned_omit0"
        else:
            kind = "special"
        table[str(op)] = {"name": name, "suffix": "", "sopp": kind}
    return table


def _th_name(dis, fmt, probe, th: int, scope: int) -> str:
    n, text = dis.words(fmt.pack({**probe, "th": th, "scope": scope}) + [0])
    m = re.search(r"th:(\S+)", text) if n else None
    return m.group(1) if m else ""


def cpu_has_sve(cpu: str) -> bool:
    """gfx90a has no scratch SVE bit (bit 13 is LDS there)."""
    return cpu != "gfx90a"


def gen_flat(dis, family, fmt) -> dict[str, dict]:
    """FLAT/GLOBAL/SCRATCH tables, keyed "seg:op"; gfx12 also the th/scope names per opcode."""
    table = {}
    off = 0x7F if family == "gfx9" else 124
    for seg in (0, 1, 2):
        for op in range(1 << fmt.fields["op"][2]):
            probe = {"seg": seg, "op": op, "vdst": 8, "data": 16, "addr": 32}
            if seg or family != "gfx9":
                probe["saddr"] = off
            if seg == 1 and cpu_has_sve(dis.cpu):
                probe["sve"] = 1
            n, text = dis.words(fmt.pack(probe))
            if not n:
                continue
            mnemonic, _, rest = text.partition(" ")
            tokens, mods = split_operands(rest)
            name, suffix = split_suffix(mnemonic)
            entry = {"name": name, "suffix": suffix,
                     "ops": build_template(tokens, probe, {}, False)}
            # Atomics print (and write) vdst only in their returning form: glc/sc0 on gfx9,
            # th bit 0 (TH_ATOMIC_RETURN) on gfx12.
            rtn_probe = {**probe, {"gfx9": "sc0", "gfx11": "glc"}.get(family, "th"): 1}
            n2, t2 = dis.words(fmt.pack(rtn_probe))
            if n2:
                toks2, _ = split_operands(t2.partition(" ")[2])
                rtn_ops = build_template(toks2, rtn_probe, {}, False)
                if rtn_ops != entry["ops"]:
                    entry["ops_rtn"] = rtn_ops
            if family == "gfx12":
                # th names depend on the scope (TH_LOAD_BYPASS with SCOPE_SYS, ...)
                entry["th"] = [
                    [_th_name(dis, fmt, probe, th, scope) for th in range(8)] for scope in range(4)]
            table[f"{seg}:{op}"] = entry
    return table


def gen_vopd(dis, family, fmt) -> dict[str, dict]:
    """VOPD (gfx12): X opcodes (4 bits) and Y opcodes (5 bits) probed separately, each paired
    with v_dual_add_f32 (opcode 4 in both halves) as the other half."""
    # Sources of X and Y must sit in different VGPR banks (index mod 4), destinations differ in
    # parity (RDNA4 guide, VOPD restrictions); LLVM rejects probes that break this.
    base = {"vdstx": 8, "src0x": 256 + 16, "vsrc1x": 26, "vdsty": 20, "src0y": 256 + 33,
            "vsrc1y": 51}
    out = {"x": {}, "y": {}}
    for half, field, other_field, width in (("x", "opx", "opy", 4), ("y", "opy", "opx", 5)):
        for op in range(1 << width):
            # Some pairs are invalid (two identical ops, bank rules) and unused vsrc1 fields
            # must be zero: try a few partners and zeroed vsrc1 fields.
            found = False
            for unused in ((), ("vsrc1y",), ("vsrc1x",), ("vsrc1x", "vsrc1y")):
                for partner in (4, 3, 8, 16, 0, 10):
                    probe = {**base, field: op, other_field: partner}
                    probe.update({name: 0 for name in unused})
                    n, text = dis.words(fmt.pack(probe) + [LITERAL_PROBE, 0])
                    if n and "::" in text and "/*" not in text:
                        found = True
                        break
                if found:
                    break
            if not found:
                continue
            part = text.split("::")[0 if half == "x" else 1].strip()
            mnemonic, _, rest = part.partition(" ")
            tokens, _ = split_operands(rest)
            # vdsty prints as v(2*vdsty + !(vdstx & 1)) -- RDNA4 guide, VOPD.
            idx_probe = dict(probe)
            idx_probe["vdsty"] = 2 * 20 + 1
            template = build_template(tokens, idx_probe, {}, n > 8)
            entry = {"name": mnemonic, "suffix": "", "ops": template}
            if n > 8:
                entry["literal"] = 1
            out[half][str(op)] = entry
    return out


def gen_hwreg(dis, family) -> dict[str, str]:
    """Hardware register names of s_getreg_b32 (id in simm16 bits 5:0), as LLVM prints them."""
    fmt = next(f for f in F.FAMILY_FORMATS[family] if f.name == "SOPK")
    names = {}
    for op in range(32):
        n, text = dis.words(fmt.pack({"op": op, "sdst": 8, "simm16": 31 << 11}))
        if n and text.startswith("s_getreg_b32"):
            break
    for hw_id in range(64):
        n, text = dis.words(fmt.pack({"op": op, "sdst": 8, "simm16": 31 << 11 | hw_id}))
        m = re.search(r"hwreg\((\w+)\)", text) if n else None
        if m and not m.group(1).isdigit():
            names[str(hw_id)] = m.group(1)
    return names


def gen_sendmsg(dis, family) -> dict[str, dict[str, str]]:
    """How LLVM prints message immediates: s_sendmsg's simm16 (values 0..1023 cover the message,
    operation and stream fields) and s_sendmsg_rtn_*'s message in SSRC0. Only values that print
    symbolically are kept; the rest print as decimal numbers."""
    out: dict[str, dict[str, str]] = {"sopp": {}, "rtn": {}}
    sopp = next(f for f in F.FAMILY_FORMATS[family] if f.name == "SOPP")
    op = next((o for o in range(128)
               if dis.words(sopp.pack({"op": o, "simm16": 1}))[1].startswith("s_sendmsg ")), None)
    if op is not None:
        for imm in range(1024):
            n, text = dis.words(sopp.pack({"op": op, "simm16": imm}))
            rest = text.partition(" ")[2] if n else ""
            if rest.startswith("sendmsg("):
                out["sopp"][str(imm)] = rest
    sop1 = next(f for f in F.FAMILY_FORMATS[family] if f.name == "SOP1")
    rtn = next((o for o in range(256)
                if dis.words(sop1.pack({"op": o, "sdst": 8, "ssrc0": 131}))[1].startswith(
                    "s_sendmsg_rtn_b32")), None)
    if rtn is not None:
        for msg in range(256):
            n, text = dis.words(sop1.pack({"op": rtn, "sdst": 8, "ssrc0": msg}))
            rest = text.partition(", ")[2] if n else ""
            if rest:
                out["rtn"][str(msg)] = rest
    return out


def gen_buffer_formats(dis, family) -> dict[str, str]:
    """How LLVM prints a typed-buffer format field: ``format:[...]`` text per value of the 7-bit
    field (gfx9: NFMT << 4 | DFMT; gfx11/gfx12: the unified format), "" where LLVM prints none
    (the default format)."""
    name = {"gfx9": "MTBUF", "gfx11": "MTBUF", "gfx12": "VBUFFER"}[family]
    fmt = next(f for f in F.FAMILY_FORMATS[family] if f.name == name)
    probe = probe_variants(family, fmt)[0]
    load_x = 0 if family != "gfx12" else 128        # tbuffer_load_format_x
    out = {}
    for value in range(128):
        fields = {"dfmt": value & 15, "nfmt": value >> 4} if family == "gfx9" else {"format": value}
        n, text = dis.words(fmt.pack({**probe, **fields, "op": load_x}) + [0])
        assert n and text.startswith("tbuffer_load_format_x"), (family, value, text)
        match = re.search(r" format:(\S+)", text)
        out[str(value)] = match.group(1) if match else ""
    return out


def generate(table: str) -> dict:
    cpu, features = TABLE_VARIANTS[table]
    family = CPUS[cpu]
    dis = LLVMDisassembler(cpu, features)
    tables: dict[str, dict] = {}
    for fmt in F.FAMILY_FORMATS[family]:
        if fmt.name == "SOPP":
            tables[fmt.name] = gen_sopp(dis, family, fmt)
        elif fmt.name in ("VOP3", "VOP3P"):
            tables[fmt.name] = gen_vop3(dis, family, fmt)
        elif fmt.name == "FLAT":
            tables[fmt.name] = gen_flat(dis, family, fmt)
        elif fmt.name == "VOPD":
            tables[fmt.name] = gen_vopd(dis, family, fmt)
        else:
            tables[fmt.name] = gen_simple(dis, family, fmt)
    tables["HWREG"] = gen_hwreg(dis, family)
    tables["BUFFMT"] = gen_buffer_formats(dis, family)
    tables["SENDMSG"] = gen_sendmsg(dis, family)
    return {
        "_header": (f"Generated by tools/gen_isa_tables.py from libLLVM-19 (LLVMDisasmInstruction, "
                    f"CPU {cpu}{', features ' + features if features else ''}). Do not edit: "
                    f"regenerate with `python3 tools/gen_isa_tables.py {table}`."),
        "cpu": table,
        "family": family,
        "tables": tables,
    }


def dump_table(data: dict) -> str:
    """Deterministic JSON, one opcode entry per line (readable diffs, a quarter of the size)."""
    compact = {"sort_keys": True, "separators": (",", ":")}
    lines = ["{"]
    top = sorted(data)
    for i, key in enumerate(top):
        comma = "," if i + 1 < len(top) else ""
        if key != "tables":
            lines.append(f" {json.dumps(key)}:{json.dumps(data[key], **compact)}{comma}")
            continue
        lines.append(' "tables":{')
        formats = sorted(data["tables"])
        for j, fmt in enumerate(formats):
            entries = data["tables"][fmt]
            lines.append(f"  {json.dumps(fmt)}:{{")
            keys = sorted(entries)
            for k, op in enumerate(keys):
                sep = "," if k + 1 < len(keys) else ""
                lines.append(f"   {json.dumps(op)}:{json.dumps(entries[op], **compact)}{sep}")
            lines.append("  }" + ("," if j + 1 < len(formats) else ""))
        lines.append(" }" + comma)
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    cpus = argv or sorted(TABLE_VARIANTS)
    TABLE_DIR.mkdir(parents=True, exist_ok=True)
    for cpu in cpus:
        data = generate(cpu)
        path = TABLE_DIR / f"{cpu}.json"
        path.write_text(dump_table(data))
        counts = {k: len(v) for k, v in data["tables"].items()}
        unknown = [(k, op, e["const"]) for k, t in data["tables"].items()
                   if k not in ("VOPD", "HWREG", "SENDMSG", "BUFFMT")
                   for op, e in t.items()
                   if any(c.startswith("?") for c in e.get("const", {}).values())]
        print(f"{cpu}: {path.relative_to(ROOT)} {counts}; unresolved constant classes: "
              f"{len(unknown)}")
        seen = {}
        for fmt_name, op, const in unknown:
            for cls in const.values():
                if cls.startswith("?"):
                    name = data["tables"][fmt_name][op]["name"]
                    seen.setdefault(cls, []).append(f"{fmt_name}:{name}")
        for cls, users in seen.items():
            print("   ", cls, users[:6], len(users))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
