"""Encoding formats (field positions) of the AMDGPU ISA families hsapy decodes.

Hand-written data, from AMD's ISA reference guides ("AMD Instinct MI300 / CDNA3 Instruction Set
Architecture", chapter "Microcode Formats"; "RDNA4 Instruction Set Architecture", same chapter)
and cross-checked against ``llvm-mc-19 -show-encoding``. Opcode numbers and mnemonics are NOT
here: they are generated from LLVM into ``tables/`` by ``tools/gen_isa_tables.py``.

A format is identified from its first dword by ``(dword0 & mask) == match``; formats are tried
in the order they are listed (more specific first). Each field is ``(dword, low bit, width)``
within the format's base dwords; a literal constant and the DPP/SDWA extension dword follow the
base dwords.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Format:
    """One microcode format: how to recognise it and where its fields are."""

    name: str
    mask: int
    match: int
    dwords: int
    fields: dict[str, tuple[int, int, int]]
    # Fields that carry a 9-bit (or 8-bit scalar) source operand: a value of 255 means a
    # 32-bit literal constant follows the base dwords (where the family allows literals).
    literal_srcs: tuple[str, ...] = ()
    opcode_field: str = "op"
    extra: dict[str, object] = field(default_factory=dict)

    def extract(self, words: tuple[int, ...]) -> dict[str, int]:
        """Every field of this format, as unsigned integers."""
        out: dict[str, int] = {}
        for name, (dword, lo, width) in self.fields.items():
            out[name] = (words[dword] >> lo) & ((1 << width) - 1)
        return out

    def pack(self, values: dict[str, int]) -> list[int]:
        """Base dwords with the given fields set (the constant match bits included)."""
        words = [0] * self.dwords
        words[0] = self.match
        for name, value in values.items():
            dword, lo, width = self.fields[name]
            words[dword] &= ~(((1 << width) - 1) << lo)
            words[dword] |= (value & ((1 << width) - 1)) << lo
        return words


def _f(dword: int, lo: int, width: int) -> tuple[int, int, int]:
    return (dword, lo, width)


# --- scalar formats: identical layout on gfx9, gfx11 and gfx12 -----------------------------------
_SOP1 = Format("SOP1", 0xFF800000, 0xBE800000, 1,
               {"ssrc0": _f(0, 0, 8), "op": _f(0, 8, 8), "sdst": _f(0, 16, 7)}, ("ssrc0",))
_SOPC = Format("SOPC", 0xFF800000, 0xBF000000, 1,
               {"ssrc0": _f(0, 0, 8), "ssrc1": _f(0, 8, 8), "op": _f(0, 16, 7)}, ("ssrc0", "ssrc1"))
_SOPP = Format("SOPP", 0xFF800000, 0xBF800000, 1, {"simm16": _f(0, 0, 16), "op": _f(0, 16, 7)})
_SOPK = Format("SOPK", 0xF0000000, 0xB0000000, 1,
               {"simm16": _f(0, 0, 16), "sdst": _f(0, 16, 7), "op": _f(0, 23, 5)})
_SOP2 = Format("SOP2", 0xC0000000, 0x80000000, 1,
               {"ssrc0": _f(0, 0, 8), "ssrc1": _f(0, 8, 8), "sdst": _f(0, 16, 7), "op": _f(0, 23, 7)},
               ("ssrc0", "ssrc1"))

# --- vector ALU formats with the same layout on every family -------------------------------------
_VOP1 = Format("VOP1", 0xFE000000, 0x7E000000, 1,
               {"src0": _f(0, 0, 9), "op": _f(0, 9, 8), "vdst": _f(0, 17, 8)}, ("src0",))
_VOPC = Format("VOPC", 0xFE000000, 0x7C000000, 1,
               {"src0": _f(0, 0, 9), "vsrc1": _f(0, 9, 8), "op": _f(0, 17, 8)}, ("src0",))
_VOP2 = Format("VOP2", 0x80000000, 0x00000000, 1,
               {"src0": _f(0, 0, 9), "vsrc1": _f(0, 9, 8), "vdst": _f(0, 17, 8), "op": _f(0, 25, 6)},
               ("src0",))

_VOP3_FIELDS = {
    "vdst": _f(0, 0, 8), "abs": _f(0, 8, 3), "op_sel": _f(0, 11, 4), "clamp": _f(0, 15, 1),
    "op": _f(0, 16, 10),
    "src0": _f(1, 0, 9), "src1": _f(1, 9, 9), "src2": _f(1, 18, 9), "omod": _f(1, 27, 2),
    "neg": _f(1, 29, 3),
}
# VOP3B / VOP3SD: a scalar destination (carry out, VCC of v_div_scale) replaces abs/op_sel.
_VOP3SD_FIELDS = {
    "vdst": _f(0, 0, 8), "sdst": _f(0, 8, 7), "clamp": _f(0, 15, 1), "op": _f(0, 16, 10),
    "src0": _f(1, 0, 9), "src1": _f(1, 9, 9), "src2": _f(1, 18, 9), "omod": _f(1, 27, 2),
    "neg": _f(1, 29, 3),
}
_VOP3P_FIELDS = {
    "vdst": _f(0, 0, 8), "neg_hi": _f(0, 8, 3), "op_sel": _f(0, 11, 3), "op_sel_hi2": _f(0, 14, 1),
    "clamp": _f(0, 15, 1), "op": _f(0, 16, 7),
    "src0": _f(1, 0, 9), "src1": _f(1, 9, 9), "src2": _f(1, 18, 9), "op_sel_hi": _f(1, 27, 2),
    "neg_lo": _f(1, 29, 3),
}

# DPP and SDWA extension dwords (VOP1/VOP2/VOPC with src0 = 0xFA / 0xF9 on gfx9; 0xFA DPP16
# and 0xE9 DPP8 on gfx11/gfx12, where VOP3 can carry them too).
DPP16_FIELDS = {
    "src0": _f(0, 0, 8), "dpp_ctrl": _f(0, 8, 9), "fi": _f(0, 18, 1), "bound_ctrl": _f(0, 19, 1),
    "src0_neg": _f(0, 20, 1), "src0_abs": _f(0, 21, 1), "src1_neg": _f(0, 22, 1),
    "src1_abs": _f(0, 23, 1), "bank_mask": _f(0, 24, 4), "row_mask": _f(0, 28, 4),
}
DPP8_FIELDS = {"src0": _f(0, 0, 8), "dpp8_sel": _f(0, 8, 24)}
SDWA_FIELDS = {
    "src0": _f(0, 0, 8), "dst_sel": _f(0, 8, 3), "dst_unused": _f(0, 11, 2), "sdwa_clamp": _f(0, 13, 1),
    "sdwa_omod": _f(0, 14, 2), "src0_sel": _f(0, 16, 3), "src0_sext": _f(0, 19, 1),
    "src0_neg": _f(0, 20, 1), "src0_abs": _f(0, 21, 1), "src0_sgpr": _f(0, 23, 1),
    "src1_sel": _f(0, 24, 3), "src1_sext": _f(0, 27, 1), "src1_neg": _f(0, 28, 1),
    "src1_abs": _f(0, 29, 1), "src1_sgpr": _f(0, 31, 1),
    # VOPC SDWA: bits 14:8 name the scalar destination when bit 15 is set (else VCC).
    "sdwa_sdst": _f(0, 8, 7), "sdwa_sd": _f(0, 15, 1),
}

# --- gfx9 (gfx90a, gfx940/941/942): MI200/MI300 ISA guides ---------------------------------------
GFX9_FORMATS: tuple[Format, ...] = (
    _SOP1, _SOPC, _SOPP, _SOPK, _SOP2,
    Format("SMEM", 0xFC000000, 0xC0000000, 2,
           {"sbase": _f(0, 0, 6), "sdata": _f(0, 6, 7), "soe": _f(0, 14, 1), "nv": _f(0, 15, 1),
            "glc": _f(0, 16, 1), "imm": _f(0, 17, 1), "op": _f(0, 18, 8),
            "offset": _f(1, 0, 21), "soffset": _f(1, 25, 7)}),
    _VOP1, _VOPC, _VOP2,
    Format("VOP3P", 0xFF800000, 0xD3800000, 2, _VOP3P_FIELDS),
    Format("VOP3", 0xFC000000, 0xD0000000, 2, _VOP3_FIELDS, extra={"sd_fields": _VOP3SD_FIELDS}),
    Format("DS", 0xFC000000, 0xD8000000, 2,
           {"offset0": _f(0, 0, 8), "offset1": _f(0, 8, 8), "gds": _f(0, 16, 1), "op": _f(0, 17, 8),
            "acc": _f(0, 25, 1),
            "addr": _f(1, 0, 8), "data0": _f(1, 8, 8), "data1": _f(1, 16, 8), "vdst": _f(1, 24, 8)}),
    # FLAT/GLOBAL/SCRATCH share one format; seg selects the opcode table. On gfx940 the cache
    # bits are sc0 (16), nt (17), sc1 (25); on gfx90a glc (16), slc (17), scc (25). Bit 13 is
    # SVE on gfx940 scratch (a VGPR address is present) and LDS on gfx90a.
    Format("FLAT", 0xFC000000, 0xDC000000, 2,
           {"offset": _f(0, 0, 13), "sve": _f(0, 13, 1), "seg": _f(0, 14, 2), "sc0": _f(0, 16, 1),
            "nt": _f(0, 17, 1), "op": _f(0, 18, 7), "sc1": _f(0, 25, 1),
            "addr": _f(1, 0, 8), "data": _f(1, 8, 8), "saddr": _f(1, 16, 7), "acc": _f(1, 23, 1),
            "vdst": _f(1, 24, 8)}),
    Format("MUBUF", 0xFC000000, 0xE0000000, 2,
           {"offset": _f(0, 0, 12), "offen": _f(0, 12, 1), "idxen": _f(0, 13, 1), "sc0": _f(0, 14, 1),
            "sc1": _f(0, 15, 1), "lds": _f(0, 16, 1), "nt": _f(0, 17, 1), "op": _f(0, 18, 7),
            "vaddr": _f(1, 0, 8), "vdata": _f(1, 8, 8), "srsrc": _f(1, 16, 5), "acc": _f(1, 23, 1),
            "soffset": _f(1, 24, 8)}),
    # MTBUF (typed buffer): a 4-bit opcode, the data format (DFMT) and number format (NFMT) of
    # the access in the instruction; sc1 and nt sit in the second dword (CDNA3 guide, "MTBUF").
    Format("MTBUF", 0xFC000000, 0xE8000000, 2,
           {"offset": _f(0, 0, 12), "offen": _f(0, 12, 1), "idxen": _f(0, 13, 1), "sc0": _f(0, 14, 1),
            "op": _f(0, 15, 4), "dfmt": _f(0, 19, 4), "nfmt": _f(0, 23, 3),
            "vaddr": _f(1, 0, 8), "vdata": _f(1, 8, 8), "srsrc": _f(1, 16, 5), "sc1": _f(1, 21, 1),
            "nt": _f(1, 22, 1), "acc": _f(1, 23, 1), "soffset": _f(1, 24, 8)}),
)

# VOP3P-MAI (gfx90a/gfx940 MFMA and SMFMAC): the VOP3P opcode space with matrix controls in
# place of op_sel/neg (CDNA3 guide, "VOP3P-MAI").
MAI_FORMAT = Format("VOP3P", 0xFF800000, 0xD3800000, 2,
                    {"vdst": _f(0, 0, 8), "cbsz": _f(0, 8, 3), "abid": _f(0, 11, 4),
                     "acc_cd": _f(0, 15, 1), "op": _f(0, 16, 7),
                     "src0": _f(1, 0, 9), "src1": _f(1, 9, 9), "src2": _f(1, 18, 9),
                     "acc": _f(1, 27, 2), "blgp": _f(1, 29, 3)})

# --- gfx12 (gfx1200, gfx1201): RDNA4 ISA guide ---------------------------------------------------
GFX12_FORMATS: tuple[Format, ...] = (
    _SOP1, _SOPC, _SOPP, _SOPK, _SOP2,
    Format("SMEM", 0xFC000000, 0xF4000000, 2,
           {"sbase": _f(0, 0, 6), "sdata": _f(0, 6, 7), "op": _f(0, 13, 6), "scope": _f(0, 21, 2),
            "th": _f(0, 23, 2),
            "offset": _f(1, 0, 24), "soffset": _f(1, 25, 7)}),
    _VOP1, _VOPC, _VOP2,
    Format("VOP3P", 0xFF000000, 0xCC000000, 2, _VOP3P_FIELDS, ("src0", "src1", "src2")),
    Format("VOP3", 0xFC000000, 0xD4000000, 2, _VOP3_FIELDS, ("src0", "src1", "src2"),
           extra={"sd_fields": _VOP3SD_FIELDS}),
    Format("VOPD", 0xFC000000, 0xC8000000, 2,
           {"src0x": _f(0, 0, 9), "vsrc1x": _f(0, 9, 8), "opy": _f(0, 17, 5), "opx": _f(0, 22, 4),
            "src0y": _f(1, 0, 9), "vsrc1y": _f(1, 9, 8), "vdsty": _f(1, 17, 7), "vdstx": _f(1, 24, 8)},
           ("src0x", "src0y"), opcode_field="opx"),
    Format("DS", 0xFC000000, 0xD8000000, 2,
           {"offset0": _f(0, 0, 8), "offset1": _f(0, 8, 8), "op": _f(0, 18, 8),
            "addr": _f(1, 0, 8), "data0": _f(1, 8, 8), "data1": _f(1, 16, 8), "vdst": _f(1, 24, 8)}),
    # VFLAT/VSCRATCH/VGLOBAL are 96 bits on gfx12; seg (bits 25:24) selects the opcode table.
    Format("FLAT", 0xFC000000, 0xEC000000, 3,
           {"saddr": _f(0, 0, 7), "op": _f(0, 14, 8), "seg": _f(0, 24, 2),
            "vdst": _f(1, 0, 8), "sve": _f(1, 17, 1), "scope": _f(1, 18, 2), "th": _f(1, 20, 3),
            "data": _f(1, 23, 8),
            "addr": _f(2, 0, 8), "offset": _f(2, 8, 24)}),
    # VBUFFER: every buffer and typed-buffer (tbuffer) instruction, 96 bits (RDNA4 guide,
    # "VBUFFER"). RSRC names the first SGPR of the V# directly (7-bit scalar operand code);
    # FORMAT is the unified data format of tbuffer opcodes; TH/SCOPE are the cache policy.
    Format("VBUFFER", 0xFC000000, 0xC4000000, 3,
           {"soffset": _f(0, 0, 7), "op": _f(0, 14, 8), "tfe": _f(0, 22, 1),
            "vdata": _f(1, 0, 8), "rsrc": _f(1, 9, 7), "scope": _f(1, 18, 2), "th": _f(1, 20, 3),
            "format": _f(1, 23, 7), "offen": _f(1, 30, 1), "idxen": _f(1, 31, 1),
            "vaddr": _f(2, 0, 8), "offset": _f(2, 8, 24)}),
)

# --- gfx11 (gfx1100..gfx1103): RDNA3 ISA guide. VALU, VOPD and DS as gfx12; SMEM and FLAT differ ---
GFX11_FORMATS: tuple[Format, ...] = tuple(
    fmt for fmt in GFX12_FORMATS if fmt.name not in ("SMEM", "FLAT", "DS", "VBUFFER")) + (
    Format("SMEM", 0xFC000000, 0xF4000000, 2,
           {"sbase": _f(0, 0, 6), "sdata": _f(0, 6, 7), "dlc": _f(0, 13, 1), "glc": _f(0, 14, 1),
            "op": _f(0, 18, 8),
            "offset": _f(1, 0, 21), "soffset": _f(1, 25, 7)}),
    Format("DS", 0xFC000000, 0xD8000000, 2,
           {"offset0": _f(0, 0, 8), "offset1": _f(0, 8, 8), "gds": _f(0, 17, 1), "op": _f(0, 18, 8),
            "addr": _f(1, 0, 8), "data0": _f(1, 8, 8), "data1": _f(1, 16, 8), "vdst": _f(1, 24, 8)}),
    # 64-bit FLAT/SCRATCH/GLOBAL as on gfx10, with SVE in bit 55.
    Format("FLAT", 0xFC000000, 0xDC000000, 2,
           {"offset": _f(0, 0, 13), "dlc": _f(0, 13, 1), "glc": _f(0, 14, 1), "slc": _f(0, 15, 1),
            "seg": _f(0, 16, 2), "op": _f(0, 18, 7),
            "addr": _f(1, 0, 8), "data": _f(1, 8, 8), "saddr": _f(1, 16, 7), "sve": _f(1, 23, 1),
            "vdst": _f(1, 24, 8)}),
    Format("MUBUF", 0xFC000000, 0xE0000000, 2,
           {"offset": _f(0, 0, 12), "slc": _f(0, 12, 1), "dlc": _f(0, 13, 1), "glc": _f(0, 14, 1),
            "op": _f(0, 18, 8),
            "vaddr": _f(1, 0, 8), "vdata": _f(1, 8, 8), "srsrc": _f(1, 16, 5), "tfe": _f(1, 21, 1),
            "offen": _f(1, 22, 1), "idxen": _f(1, 23, 1), "soffset": _f(1, 24, 8)}),
    # MTBUF: a 4-bit opcode and the 7-bit unified FORMAT (RDNA3 guide, "MTBUF").
    Format("MTBUF", 0xFC000000, 0xE8000000, 2,
           {"offset": _f(0, 0, 12), "slc": _f(0, 12, 1), "dlc": _f(0, 13, 1), "glc": _f(0, 14, 1),
            "op": _f(0, 15, 4), "format": _f(0, 19, 7),
            "vaddr": _f(1, 0, 8), "vdata": _f(1, 8, 8), "srsrc": _f(1, 16, 5), "tfe": _f(1, 21, 1),
            "offen": _f(1, 22, 1), "idxen": _f(1, 23, 1), "soffset": _f(1, 24, 8)}),
)

FAMILY_FORMATS: dict[str, tuple[Format, ...]] = {
    "gfx9": GFX9_FORMATS, "gfx11": GFX11_FORMATS, "gfx12": GFX12_FORMATS}

# FLAT seg field -> encoding name.
FLAT_SEGMENTS = {0: "FLAT", 1: "SCRATCH", 2: "GLOBAL"}
# Buffer instruction formats: MUBUF/MTBUF (gfx9, gfx11), VBUFFER (gfx12).
BUFFER_FORMATS = ("MUBUF", "MTBUF", "VBUFFER")


def identify(family: str, word0: int) -> Format | None:
    """The format of an instruction from its first dword, or None."""
    for fmt in FAMILY_FORMATS[family]:
        if (word0 & fmt.mask) == fmt.match:
            return fmt
    return None


def nearest_format(family: str, word0: int) -> str:
    """The name of the format whose match bits agree with ``word0`` in the most leading bits."""
    best, best_bits = "none", -1
    for fmt in FAMILY_FORMATS[family]:
        diff = (word0 ^ fmt.match) & fmt.mask
        agree = 32 - diff.bit_length()
        if agree > best_bits:
            best, best_bits = fmt.name, agree
    return best
