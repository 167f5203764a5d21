"""Decoded instructions: the contract between the decoders and the executor.

The decoder (``hsapy.sim.isa.decoder.decode``) turns a code object's machine code into a list of
:class:`Instruction`. The executor consumes exactly these objects:

``Operand``
    ``kind`` is one of ``"sgpr" | "vgpr" | "agpr" | "ttmp" | "special" | "const" | "literal" |
    "imm" | "label"``.

    - ``sgpr``/``vgpr``/``agpr``/``ttmp``: ``index`` is the first register, ``count`` how many
      32-bit registers the operand covers (1, 2 for 64-bit pairs, 4 for x4, ...).
    - ``special``: ``index`` is the hardware operand code (e.g. 106 for vcc_lo), ``name`` its LLVM
      spelling: ``"vcc"`` (pair) / ``"vcc_lo"`` / ``"vcc_hi"``, ``"exec"`` / ``"exec_lo"`` /
      ``"exec_hi"``, ``"m0"``, ``"null"``, ``"src_scc"``, ``"src_shared_base"``, ... ``count`` as
      above.
    - ``const``: an inline constant; ``value`` is an ``int`` (-16..64) or a ``float`` (0.5, -0.5,
      1.0, -1.0, 2.0, -2.0, 4.0, -4.0, or 1/(2*pi) as the double 0.15915494309189535). The bit
      pattern depends on the operand type (f16/f32/f64), which the executor knows from the opcode.
    - ``literal``: ``value`` is the raw 32-bit literal dword (for 64-bit float operands it is the
      high half of the double; for 64-bit integer operands it is zero-extended, as the hardware
      does).
    - ``imm``: an immediate field: ``value`` int. SMEM and FLAT/GLOBAL/SCRATCH offsets are
      already sign-extended where the format makes them signed; SOPK/SOPP ``simm16`` is the raw
      16-bit field (the executor sign-extends it for the opcodes that take it signed); DS
      offsets stay in ``fields`` (``offset0``/``offset1``).
    - ``label``: a branch target; ``value`` is the target byte offset (same origin as
      ``Instruction.offset``).
    - ``neg``/``abs``: VOP3/VOP3P/DPP/SDWA input modifiers of a source.

``Instruction``
    ``offset``/``size``/``words`` locate the instruction (size includes a literal or DPP/SDWA
    dword); ``family`` is ``"gfx9"``, ``"gfx11"`` or ``"gfx12"``; ``encoding`` the microcode format
    (``"SOP1"``, ``"SOP2"``, ``"SOPK"``, ``"SOPC"``, ``"SOPP"``, ``"SMEM"``, ``"VOP1"``, ``"VOP2"``,
    ``"VOPC"``, ``"VOP3"``, ``"VOP3SD"``, ``"VOP3P"``, ``"DS"``, ``"FLAT"``, ``"GLOBAL"``,
    ``"SCRATCH"``, ``"MUBUF"``, ``"MTBUF"``, ``"VBUFFER"``, ``"VOPD"``); a DPP or SDWA form
    keeps its base encoding
    (``"VOP1"``...) and sets ``fields["dpp"] = 1`` (DPP16: ``dpp_ctrl``, ``row_mask``,
    ``bank_mask``, ``bound_ctrl``, ``fi``, ``src0_neg``/``src0_abs``/``src1_neg``/``src1_abs``, the
    VGPR in ``dpp_src0``), ``fields["dpp8"] = 1`` (``dpp8_sel``: lane selects, 3 bits each, lane 0
    lowest; ``dpp8_src0``; fetch-inactive when ``src0`` is 234) or ``fields["sdwa"] = 1``
    (``dst_sel``, ``dst_unused``, ``src0_sel``, ``src1_sel``, ``src*_sext``, ``src*_neg``/``abs``,
    ``sdwa_clamp``, ``sdwa_omod``, ``sdwa_src0``; on VOPC ``sdwa_sd``/``sdwa_sdst``). Selects use
    the ISA's numbering: 0-3 BYTE_0..3, 4-5 WORD_0..1, 6 DWORD. ``srcs`` already holds the
    resolved operands (the DPP/SDWA source register, its modifiers).
    ``name`` is LLVM's mnemonic without ``_e32``/``_e64``/``_dpp``/``_sdwa``; ``suffix`` the
    suffix LLVM prints. ``dsts`` are the operands the instruction writes explicitly (in LLVM's
    order: e.g. ``v_add_co_u32 v2, vcc, v3, v4`` has dsts ``(v2, vcc)``); ``srcs`` the ones it
    reads explicitly, in LLVM's order (stores: address, data; SMEM: base, offset; SOPP: the
    immediate or label; scalar stores/atomics: SDATA; buffer stores/atomics: VDATA, which a
    returning buffer atomic also writes; DS/FLAT atomics: the data, with the returned value in
    ``dsts`` only in the returning form).
    Implicit operands (EXEC, VCC of ``v_cndmask_b32_e32`` is explicit in
    LLVM's text and therefore in ``srcs``; SCC) are not listed unless LLVM prints them. For
    SOPK compares (``s_cmpk_*``) the SDST field is a source.
    ``fields`` holds every raw field of the encoding (and of its DPP/SDWA dword) by name, read-only
    (a ``MappingProxyType``); it does not take part in equality or hashing. FLAT-family offsets
    are raw in ``fields["offset"]`` and sign-extended in the trailing ``imm`` source.

    VOPD (gfx11/gfx12 dual issue) decodes to ONE instruction: its own name/dsts/srcs are the X
    half; ``pair`` is an :class:`Instruction` for the Y half (same offset/words, encoding
    ``"VOPD"``). Both halves read their sources before either writes.

``text()`` returns the LLVM-syntax disassembly (exactly what libLLVM-19 prints, checked by
tests/unit/test_disasm_oracle.py).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hsapy.errors import HsapyError


@dataclass(frozen=True, slots=True)
class Operand:
    """One explicit operand of a decoded instruction (see the module docstring)."""

    kind: str
    index: int
    count: int
    value: int | float | None
    name: str
    neg: bool = False
    abs: bool = False


@dataclass(frozen=True, slots=True)
class Instruction:
    """One decoded instruction (see the module docstring for every field's meaning)."""

    offset: int
    size: int
    words: tuple[int, ...]
    family: str
    encoding: str
    opcode: int
    name: str
    suffix: str
    dsts: tuple[Operand, ...]
    srcs: tuple[Operand, ...]
    fields: Mapping[str, int] = field(compare=False)
    pair: Instruction | None = field(default=None, compare=False)
    asm: str = field(default="", compare=False, repr=False)

    @property
    def mnemonic(self) -> str:
        """The full mnemonic as LLVM prints it (name + suffix)."""
        return self.name + self.suffix

    def text(self) -> str:
        """LLVM-syntax disassembly of this instruction."""
        return self.asm or self.mnemonic


class DecodeError(HsapyError, ValueError):
    """Machine code that the decoder does not know (unknown format or opcode)."""

    def __init__(self, target: str, offset: int, words: tuple[int, ...], nearest: str,
                 detail: str = "") -> None:
        self.target = target
        self.offset = offset
        self.words = tuple(words)
        self.nearest = nearest
        self.detail = detail
        raw = " ".join(f"{w:08X}" for w in self.words)
        text = (f"cannot decode {target} instruction at offset {offset:#x}: words [{raw}]; "
                f"nearest format {nearest}")
        if detail:
            text += f" ({detail})"
        text += (". The code object may be built for another target, or use an instruction "
                 "hsapy's tables do not cover (regenerate them with tools/gen_isa_tables.py)")
        super().__init__(text)
