"""Operand and modifier text of decoded instructions, as LLVM's disassembler prints them.

The decoder (decoder.py) builds each instruction's ``asm`` from these: DPP controls, SOPP
immediates with their own syntax (s_version, s_delay_alu, s_waitcnt_depctr, s_set_gpr_idx_*),
ds_swizzle offsets, op_sel/neg bit lists, and the VOP3/SDWA/VOP3P/buffer/SMEM/FLAT modifiers and
cache policies (:class:`_ModifierText`, the decoder's methods for them).
"""
from __future__ import annotations

from .formats import BUFFER_FORMATS
from .instruction import Operand
from .operands import DPP8FI_CODE

_SEL_NAMES = ("BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD")
_DST_UNUSED = ("UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE")
_SCOPES = ("SCOPE_CU", "SCOPE_SE", "SCOPE_DEV", "SCOPE_SYS")
_SMEM_TH = ("TH_LOAD_RT", "TH_LOAD_NT", "TH_LOAD_HT", "TH_LOAD_LU")  # gfx12 SMEM cache policy
_OMOD = ("", "mul:2", "mul:4", "div:2")  # VOP3 output modifier


def _byte_sel(entry: dict, fields: dict) -> int | None:
    """The byte a gfx12 FP8/BF8 conversion selects with its op_sel bits (RDNA4 ISA
    V_CVT_F32_FP8: OPSEL[1:0] with the two bits reversed); None for the encodings hsapy does not
    decode (the stochastic-rounding forms, whose byte is OPSEL[3:2], are declined as a whole)."""
    sel = fields.get("op_sel", 0)
    if entry["name"].startswith("v_cvt_sr_") or sel & ~3:
        return None
    return ((sel & 1) << 1) | ((sel >> 1) & 1)


def _bits(value: int, count: int) -> list[int]:
    """The low ``count`` bits of ``value``, bit 0 first."""
    return [value >> k & 1 for k in range(count)]


def _bit_list(name: str, bits: list[int]) -> str:
    return f"{name}:[{','.join(map(str, bits))}]"


class _Declined(Exception):
    """Raised inside operand decoding for a case hsapy declines; becomes a DecodeError."""


def _dpp_ctrl_text(ctrl: int, family: str) -> str:
    """DPP16 control field as LLVM prints it (ISA guide, "DPP_CTRL enumeration"); reserved
    values raise (LLVM marks them invalid)."""
    if ctrl <= 0xFF:
        return "quad_perm:[" + ",".join(str(ctrl >> (2 * k) & 3) for k in range(4)) + "]"
    low = ctrl & 0xF
    if 0x101 <= ctrl <= 0x10F:
        return f"row_shl:{low}"
    if 0x111 <= ctrl <= 0x11F:
        return f"row_shr:{low}"
    if 0x121 <= ctrl <= 0x12F:
        return f"row_ror:{low}"
    if ctrl in (0x140, 0x141):
        return ("row_mirror", "row_half_mirror")[ctrl - 0x140]
    if family == "gfx9":
        named = {0x130: "wave_shl:1", 0x134: "wave_rol:1", 0x138: "wave_shr:1",
                 0x13C: "wave_ror:1", 0x142: "row_bcast:15", 0x143: "row_bcast:31"}
        if ctrl in named:
            return named[ctrl]
        if 0x150 <= ctrl <= 0x15F:  # gfx90a/gfx940
            return f"row_newbcast:{low}"
    else:
        if 0x150 <= ctrl <= 0x15F:
            return f"row_share:{low}"
        if 0x160 <= ctrl <= 0x16F:
            return f"row_xmask:{low}"
    raise _Declined(f"DPP control {ctrl:#x} is reserved on {family}")


# S_VERSION's immediate (LLVM AMDGPUDisassembler::decodeVersionImm): the version byte by name
# when it is a known one, OR-ed with the named flag bits; any other bit set prints it as hex.
_UC_VERSIONS = {0: "UC_VERSION_GFX7", 4: "UC_VERSION_GFX10", 6: "UC_VERSION_GFX11",
                9: "UC_VERSION_GFX12"}
_UC_BITS = ((0x2000, "UC_VERSION_W64_BIT"), (0x4000, "UC_VERSION_W32_BIT"),
            (0x8000, "UC_VERSION_MDP_BIT"))


def _version_text(imm: int) -> str:
    if imm & ~0xE0FF:
        return f"0x{imm:x}"
    text = _UC_VERSIONS.get(imm & 0xFF, str(imm & 0xFF))
    for bit, name in _UC_BITS:
        if imm & bit:
            text = (f"({text})" if "|" in text else text) + "|" + name
    return text


def _unsigned_text(value: int) -> str:
    """An unsigned immediate as LLVM prints a plain integer operand: decimal up to 64, else hex."""
    return str(value) if value <= 64 else f"0x{value:x}"


def gpr_idx_text(mask: int) -> str:
    """The operand-enable mask of s_set_gpr_idx_on / s_set_gpr_idx_mode as LLVM prints it:
    ``gpr_idx(SRC0,...,DST)`` for bits 0-3, hex when a higher bit is set."""
    if mask > 15:
        return f"0x{mask:x}"
    names = ("SRC0", "SRC1", "SRC2", "DST")
    return "gpr_idx(" + ",".join(n for k, n in enumerate(names) if mask >> k & 1) + ")"


def _sopp_special(family: str, name: str, imm: int) -> str:
    if name == "s_set_gpr_idx_mode":
        return gpr_idx_text(imm)
    if name == "s_waitcnt" and family == "gfx9":
        # gfx9 s_waitcnt: vmcnt = [3:0] | [15:14] << 4, expcnt [6:4], lgkmcnt [11:8].
        vm = (imm & 0xF) | ((imm >> 14) & 3) << 4
        exp = (imm >> 4) & 7
        lgkm = (imm >> 8) & 0xF
        parts = []
        if vm != 63:
            parts.append(f"vmcnt({vm})")
        if exp != 7:
            parts.append(f"expcnt({exp})")
        if lgkm != 15:
            parts.append(f"lgkmcnt({lgkm})")
        if not parts:
            parts = [f"vmcnt({vm})", f"expcnt({exp})", f"lgkmcnt({lgkm})"]
        return " ".join(parts)
    if name == "s_waitcnt" and family in ("gfx11", "gfx12"):
        # gfx11 s_waitcnt: expcnt [2:0], lgkmcnt [9:4], vmcnt [15:10].
        counters = (("vmcnt", (imm >> 10) & 0x3F, 63), ("expcnt", imm & 7, 7),
                    ("lgkmcnt", (imm >> 4) & 0x3F, 63))
        parts = [f"{label}({value})" for label, value, full in counters if value != full]
        if not parts:
            parts = [f"{label}({value})" for label, value, _ in counters]
        return " ".join(parts)
    if name in ("s_wait_alu", "s_waitcnt_depctr"):
        return _depctr_text(imm)
    if name == "s_delay_alu":
        return _delay_alu_text(imm)
    if imm <= 64:
        return str(imm)
    return f"0x{imm:x}"


_DELAY_IDS = ("NO_DEP", "VALU_DEP_1", "VALU_DEP_2", "VALU_DEP_3", "VALU_DEP_4", "TRANS32_DEP_1",
              "TRANS32_DEP_2", "TRANS32_DEP_3", "FMA_ACCUM_CYCLE_1", "SALU_CYCLE_1",
              "SALU_CYCLE_2", "SALU_CYCLE_3")
_DELAY_SKIP = ("SAME", "NEXT", "SKIP_1", "SKIP_2", "SKIP_3", "SKIP_4")


def _delay_alu_text(imm: int) -> str:
    # RDNA3/4 ISA guide, S_DELAY_ALU: instid0 [3:0], instskip [6:4], instid1 [10:7].
    id0, skip, id1 = imm & 0xF, (imm >> 4) & 7, (imm >> 7) & 0xF
    parts = []
    if id0 < len(_DELAY_IDS) and id0:
        parts.append(f"instid0({_DELAY_IDS[id0]})")
    if skip and skip < len(_DELAY_SKIP):
        parts.append(f"instskip({_DELAY_SKIP[skip]})")
    if id1 and id1 < len(_DELAY_IDS):
        parts.append(f"instid1({_DELAY_IDS[id1]})")
    return " | ".join(parts) if parts else "0"


def _swizzle_text(offset: int) -> str:
    """ds_swizzle_b32's offset as LLVM prints it (ISA guide, DS_SWIZZLE_B32 modes): QUAD_PERM
    when bit 15 is set and bits 14:8 are clear, BITMASK modes when bit 15 is clear, else a
    plain number."""
    if offset & 0x8000:
        if offset & 0x7F00:
            return str(offset)
        lanes = ",".join(str(offset >> (2 * k) & 3) for k in range(4))
        return f"swizzle(QUAD_PERM,{lanes})"
    and_mask, or_mask, xor_mask = offset & 0x1F, (offset >> 5) & 0x1F, (offset >> 10) & 0x1F
    if and_mask == 0x1F and or_mask == 0 and xor_mask and xor_mask & (xor_mask - 1) == 0:
        return f"swizzle(SWAP,{xor_mask})"
    if and_mask == 0x1F and or_mask == 0 and xor_mask and (xor_mask + 1) & xor_mask == 0:
        return f"swizzle(REVERSE,{xor_mask + 1})"
    if xor_mask == 0:
        group = (~and_mask & 0x1F) + 1
        if group & (group - 1) == 0 and group > 1 and or_mask < group:
            return f"swizzle(BROADCAST,{group},{or_mask})"
    # lane bit = ((id & and) | or) ^ xor: 'p' keeps, 'i' inverts, '0'/'1' force.
    chars = []
    for bit in range(4, -1, -1):
        a, o, x = and_mask >> bit & 1, or_mask >> bit & 1, xor_mask >> bit & 1
        if a and not o:
            chars.append("i" if x else "p")
        else:
            chars.append(str(o ^ x))
    return f'swizzle(BITMASK_PERM,"{"".join(chars)}")'


# DEPCTR fields (RDNA3/4 guides, S_WAITCNT_DEPCTR / S_WAIT_ALU): name, low bit, width, in LLVM's
# printing order; a field at its all-ones default is omitted.
_DEPCTR = (("depctr_hold_cnt", 7, 1), ("depctr_sa_sdst", 0, 1), ("depctr_va_vdst", 12, 4),
           ("depctr_va_sdst", 9, 3), ("depctr_va_ssrc", 8, 1), ("depctr_va_vcc", 1, 1),
           ("depctr_vm_vsrc", 2, 3))


def _depctr_text(imm: int) -> str:
    if imm & 0x60:  # bits 6:5 are not fields: LLVM prints such values in hex
        return f"0x{imm:x}"
    parts = []
    for name, lo, width in _DEPCTR:
        value = (imm >> lo) & ((1 << width) - 1)
        if value != (1 << width) - 1:
            parts.append(f"{name}({value})")
    return " ".join(parts) if parts else f"0x{imm:x}"


# --- modifiers as LLVM prints them ----------------------------------------------------------------

class _ModifierText:
    """The modifier text of a decoded instruction, as LLVM's disassembler prints it (the
    decoder's methods for it; they read the decoder's ``family``, ``gfx940`` and ``tables``)."""

    def modifiers(self, fmt, entry, fields, ext_kind, srcs) -> list[str]:
        name = fmt.name
        mods: list[str] = []
        if name == "VOP3":
            n = entry.get("op_sel_n", 0)
            if n and fields.get("op_sel"):
                # Usually the sources' bits then the destination's (bit 3); the generator
                # recorded which bit each printed position shows.
                positions = entry.get("op_sel_bits", list(range(n - 1)) + [3])
                bits = [fields["op_sel"] >> b & 1 if b >= 0 else 0 for b in positions]
                if any(bits):
                    mods.append(_bit_list("op_sel", bits))
            if fields.get("clamp") and not entry.get("no_clamp"):
                mods.append("clamp")
            if fields.get("omod") and not entry.get("no_omod"):
                mods.append(_OMOD[fields["omod"]])
            if entry.get("byte_sel") and fields.get("op_sel"):
                mods.append(f"byte_sel:{_byte_sel(entry, fields)}")
        elif name == "VOP3P" and entry.get("mai"):
            mods.extend(f"{key}:{fields[key]}" for key in ("cbsz", "abid") if fields[key])
            if fields["blgp"] and entry.get("blgp_as_neg"):
                mods.append(_bit_list("neg", _bits(fields["blgp"], 3)))
            elif fields["blgp"]:
                mods.append(f"blgp:{fields['blgp']}")
        elif name == "VOP3P":
            mods.extend(self.vop3p_mods(entry, fields, srcs))
        elif name == "DS":
            style = entry.get("ds_offsets", "single")
            if style == "pair":
                if fields["offset0"]:
                    mods.append(f"offset0:{fields['offset0']}")
                if fields["offset1"]:
                    mods.append(f"offset1:{fields['offset1']}")
            elif style == "single":
                off = fields["offset0"] | fields["offset1"] << 8
                if off and entry["name"] == "ds_swizzle_b32":
                    mods.append(f"offset:{_swizzle_text(off)}")
                elif off:
                    mods.append(f"offset:{off}")
            if fields.get("gds") and self.family == "gfx11":  # no GDS on gfx90a/gfx940 (ignored)
                mods.append("gds")
        elif name == "SMEM":
            mods.extend(self.smem_mods(entry, fields))
        elif name in BUFFER_FORMATS:
            mods.extend(self.buffer_mods(entry, fields))
        if ext_kind == "dpp":
            mods.extend(self.dpp_mods(fields))
        elif ext_kind == "dpp8":
            sel = fields["dpp8_sel"]
            lanes = ",".join(str(sel >> (3 * k) & 7) for k in range(8))
            mods.append(f"dpp8:[{lanes}]")
            if fields["src0"] == DPP8FI_CODE:
                mods.append("fi:1")
        elif ext_kind == "sdwa":
            # VOPC SDWA reuses bits 15:8 for its scalar destination: no clamp/omod there.
            if fields.get("sdwa_clamp") and name != "VOPC":
                mods.append("clamp")
            if fields.get("sdwa_omod") and name != "VOPC":
                mods.append(_OMOD[fields["sdwa_omod"]])
            if name != "VOPC":
                mods.append(f"dst_sel:{_SEL_NAMES[fields['dst_sel']]}")
                mods.append(f"dst_unused:{_DST_UNUSED[fields['dst_unused']]}")
            mods.append(f"src0_sel:{_SEL_NAMES[fields['src0_sel']]}")
            if name != "VOP1":
                mods.append(f"src1_sel:{_SEL_NAMES[fields['src1_sel']]}")
        return mods


    def buffer_mods(self, entry: dict, fields: dict[str, int]) -> list[str]:
        """format (tbuffer), idxen/offen, offset, then the cache policy, as LLVM orders them."""
        mods = []
        if entry.get("typed"):
            value = fields["dfmt"] | fields["nfmt"] << 4 if "dfmt" in fields else fields["format"]
            text = self.tables["BUFFMT"].get(str(value), str(value))
            if text:
                mods.append(f"format:{text}")
        if entry["ops"]:
            if fields["idxen"]:
                mods.append("idxen")
            if fields["offen"]:
                mods.append("offen")
        off = fields["offset"]
        if self.family == "gfx12" and off & 0x800000:
            off -= 1 << 24      # LLVM prints the 24-bit VBUFFER offset signed
        if off and entry.get("has_offset", 1):
            mods.append(f"offset:{off}")
        allowed = set(entry.get("cache_bits", ("sc0", "sc1", "nt", "glc", "slc", "dlc")))
        if self.family == "gfx11":
            mods.extend(flag for flag in ("glc", "slc", "dlc")
                        if fields.get(flag) and flag in allowed)
        elif self.family == "gfx12":
            th_names = entry.get("th", [[""] * 8] * 4)[fields["scope"]]
            if fields["th"] and th_names[fields["th"]]:
                mods.append(f"th:{th_names[fields['th']]}")
            if fields["scope"]:
                mods.append(f"scope:{_SCOPES[fields['scope']]}")
        else:
            mods.extend(self.cache_bits({k: v for k, v in fields.items()
                                         if k not in ("sc0", "sc1", "nt") or k in allowed}))
        if fields.get("lds"):
            mods.append("lds")
        return mods


    def hwreg_text(self, simm16: int) -> str:
        """``hwreg(NAME[, offset, size])``: id 5:0, offset 10:6, size-1 15:11 (S_GETREG_B32)."""
        hw_id, offset, size = simm16 & 0x3F, (simm16 >> 6) & 0x1F, ((simm16 >> 11) & 0x1F) + 1
        name = self.tables.get("HWREG", {}).get(str(hw_id), str(hw_id))
        if offset == 0 and size == 32:
            return f"hwreg({name})"
        return f"hwreg({name}, {offset}, {size})"


    @staticmethod
    def vop3p_mods(entry: dict, fields: dict[str, int], srcs: list[Operand]) -> list[str]:
        """op_sel, op_sel_hi (printed when not the opcode's default), neg_lo/neg_hi, clamp."""
        mods = []
        n = entry.get("op_sel_n", len([s for s in srcs if s.kind != "imm"]) or 3)
        op_sel = _bits(fields["op_sel"], n)
        if entry.get("index_key"):
            if fields["op_sel"]:
                mods.append(f"index_key:{fields['op_sel']}")
        elif any(op_sel):
            mods.append(_bit_list("op_sel", op_sel))
        if "op_sel_hi_n" in entry:
            op_sel_hi = _bits(fields["op_sel_hi"] | fields["op_sel_hi2"] << 2, entry["op_sel_hi_n"])
            default = _bits(entry.get("op_sel_hi_default", 7), entry["op_sel_hi_n"])
            if op_sel_hi != default:
                mods.append(_bit_list("op_sel_hi", op_sel_hi))
        neg_n = 0 if entry.get("neg_abs_operands") else entry.get("neg_n", n)
        for key in ("neg_lo", "neg_hi"):
            if fields[key] & ((1 << neg_n) - 1):
                mods.append(_bit_list(key, _bits(fields[key], neg_n)))
        if fields.get("clamp") and not entry.get("no_clamp"):
            mods.append("clamp")
        return mods


    def smem_mods(self, entry, fields) -> list[str]:
        if self.family == "gfx9":
            return ["glc"] if fields.get("glc") else []
        if self.family == "gfx11":
            return [flag for flag in ("glc", "dlc") if fields.get(flag)]
        mods = []
        if not entry["ops"]:  # s_dcache_inv and friends print no cache policy
            return mods
        if fields.get("th"):
            bypass = fields["th"] == 3 and fields.get("scope") == 3
            mods.append(f"th:{'TH_LOAD_BYPASS' if bypass else _SMEM_TH[fields['th']]}")
        if fields.get("scope"):
            mods.append(f"scope:{_SCOPES[fields['scope']]}")
        return mods


    def cache_bits(self, fields) -> list[str]:
        out = []
        if self.gfx940:
            if fields.get("sc0"):
                out.append("sc0")
            if fields.get("nt"):
                out.append("nt")
            if fields.get("sc1"):
                out.append("sc1")
        else:
            if fields.get("sc0"):
                out.append("glc")
            if fields.get("nt"):
                out.append("slc")
            if fields.get("sc1"):
                out.append("scc")
        return out


    def dpp_mods(self, fields) -> list[str]:
        ctrl = fields["dpp_ctrl"]
        mods = [_dpp_ctrl_text(ctrl, self.family)]
        mods.append(f"row_mask:0x{fields['row_mask']:x}")
        mods.append(f"bank_mask:0x{fields['bank_mask']:x}")
        if fields.get("bound_ctrl"):
            mods.append("bound_ctrl:1")
        if fields.get("fi") and self.family != "gfx9":  # bit 18 is reserved on gfx9
            mods.append("fi:1")
        return mods
