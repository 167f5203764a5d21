"""Operand encodings shared by the decoders: scalar/vector source codes, inline constants, and
how LLVM prints them.

Source operand codes (the 9-bit SRC fields, 8-bit SSRC fields) follow the "Scalar/Vector
source operands" tables of the MI300 (CDNA3) and RDNA4 ISA guides. Printing follows LLVM's
AMDGPU syntax (AMDGPUUsage "Syntax of AMDGPU instruction operands"); the constant printers are
selected per operand by tools/gen_isa_tables.py, which checks each against libLLVM's output.
"""
from __future__ import annotations

import struct

from .instruction import Operand

INV_2PI = 0.15915494309189535  # inline constant 248 (gfx8+): 1 / (2 * pi)

# Inline float constants 240..247 (every family).
INLINE_FLOATS = {240: 0.5, 241: -0.5, 242: 1.0, 243: -1.0, 244: 2.0, 245: -2.0, 246: 4.0, 247: -4.0}
_FLOAT_TEXT = {0.5: "0.5", -0.5: "-0.5", 1.0: "1.0", -1.0: "-1.0", 2.0: "2.0", -2.0: "-2.0",
               4.0: "4.0", -4.0: "-4.0"}
# The same constants as IEEE bit patterns of each width (used when printing literals).
_F32_BITS = {struct.unpack("<I", struct.pack("<f", v))[0]: t for v, t in _FLOAT_TEXT.items()}
_F16_BITS = {struct.unpack("<H", struct.pack("<e", v))[0]: t for v, t in _FLOAT_TEXT.items()}
_F64_BITS = {struct.unpack("<Q", struct.pack("<d", v))[0]: t for v, t in _FLOAT_TEXT.items()}
_F32_INV2PI, _F16_INV2PI, _F64_INV2PI = 0x3E22F983, 0x3118, 0x3FC45F306DC9C882
_F16_INLINE_BITS = {240: 0x3800, 241: 0xB800, 242: 0x3C00, 243: 0xBC00, 244: 0x4000, 245: 0xC000,
                    246: 0x4400, 247: 0xC400, 248: 0x3118}

# Special scalar operand codes per family: code -> name (count-1 spelling).
_SPECIAL_COMMON = {
    106: "vcc_lo", 107: "vcc_hi", 126: "exec_lo", 127: "exec_hi",
    235: "src_shared_base", 236: "src_shared_limit", 237: "src_private_base",
    238: "src_private_limit", 253: "src_scc",
}
SPECIAL_NAMES: dict[str, dict[int, str]] = {
    "gfx9": {**_SPECIAL_COMMON, 102: "flat_scratch_lo", 103: "flat_scratch_hi",
             104: "xnack_mask_lo", 105: "xnack_mask_hi", 124: "m0", 125: "null",
             239: "src_pops_exiting_wave_id",
             251: "src_vccz", 252: "src_execz", 254: "src_lds_direct"},
    "gfx12": {**_SPECIAL_COMMON, 124: "null", 125: "m0"},
}
SPECIAL_NAMES["gfx11"] = {**SPECIAL_NAMES["gfx12"], 239: "src_pops_exiting_wave_id",
                          251: "src_vccz", 252: "src_execz", 254: "src_lds_direct"}
# 64-bit spellings of register pairs that have one.
_PAIR_NAMES = {"vcc_lo": "vcc", "exec_lo": "exec", "flat_scratch_lo": "flat_scratch",
               "xnack_mask_lo": "xnack_mask"}
SGPR_LIMIT = {"gfx9": 102, "gfx11": 106, "gfx12": 106}
TTMP_BASE = 108  # ttmp0..ttmp15 are 108..123 on gfx9 (since gfx9), gfx11 and gfx12

LITERAL_CODE = 255
DPP16_CODE = 250
SDWA_CODE = 249      # gfx9 only
DPP8_CODE = 233      # gfx11/gfx12: 233 = DPP8, 234 = DPP8 with fetch-inactive
DPP8FI_CODE = 234


class ReservedOperand(ValueError):
    """An operand field holds a code the ISA reserves (the decoder reports a DecodeError)."""


def reg_range(prefix: str, first: int, count: int) -> str:
    """``v5`` / ``v[4:7]`` / ``s[0:1]`` / ``ttmp[4:5]`` as LLVM prints register tuples."""
    if count == 1:
        return f"{prefix}{first}"
    return f"{prefix}[{first}:{first + count - 1}]"


def scalar_operand(family: str, code: int, count: int) -> Operand:
    """An operand from an 8-bit scalar code (SSRC/SDST field or the low part of a SRC field)."""
    if code < SGPR_LIMIT[family]:
        return Operand("sgpr", code, count, None, "")
    if TTMP_BASE <= code < TTMP_BASE + 16:
        return Operand("ttmp", code - TTMP_BASE, count, None, "")
    if 128 <= code <= 192:
        return Operand("const", 0, count, code - 128, "")
    if 193 <= code <= 208:
        return Operand("const", 0, count, 192 - code, "")
    if code in INLINE_FLOATS:
        return Operand("const", 0, count, INLINE_FLOATS[code], "")
    if code == 248:
        return Operand("const", 0, count, INV_2PI, "")
    name = SPECIAL_NAMES[family].get(code)
    if name is None:
        raise ReservedOperand(f"operand code {code} is reserved on {family}")
    if count == 2 and name in _PAIR_NAMES:
        name = _PAIR_NAMES[name]
    return Operand("special", code, count, None, name)


def source_operand(family: str, code: int, count: int) -> Operand:
    """An operand from a 9-bit SRC code (256..511 are VGPRs)."""
    if code >= 256:
        return Operand("vgpr", code - 256, count, None, "")
    return scalar_operand(family, code, count)


# --- printing constants ------------------------------------------------------------------------

def _inline_text(code: int, wide: bool, int16: bool) -> str:
    if 128 <= code <= 192:
        return str(code - 128)
    if 193 <= code <= 208:
        return str(192 - code)
    if int16:
        return f"0x{_F16_INLINE_BITS[code]:x}"
    if code == 248:
        return "0.15915494309189532" if wide else "0.15915494"
    return _FLOAT_TEXT[INLINE_FLOATS[code]]


def _signed32(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


def _lit32_inline_or_hex(value: int, hex_value: int) -> str:
    # A 32-bit literal LLVM could have encoded inline prints as that constant, else as hex.
    signed = _signed32(value)
    if -16 <= signed <= 64:
        return str(signed)
    if value in _F32_BITS:
        return _F32_BITS[value]
    if value == _F32_INV2PI:
        return "0.15915494"
    return f"0x{hex_value:x}"


def _lit32(value: int) -> str:
    return _lit32_inline_or_hex(value, value)


def _lit32_int(value: int) -> str:
    signed = _signed32(value)
    if -16 <= signed <= 64:
        return str(signed)
    return f"0x{value:x}"


def _lit64_int(value: int) -> str:
    # 64-bit integer operands: the literal is zero-extended (LLVM prints 0xffffffff, not -1).
    if value <= 64:
        return str(value)
    return f"0x{value:x}"


def _lit64_sext(value: int) -> str:
    signed = _signed32(value)
    if -16 <= signed <= 64:
        return str(signed)
    return f"0x{signed & 0xFFFFFFFFFFFFFFFF:x}"


def _lit64_fp(value: int) -> str:
    # 64-bit float operands: the literal holds the high 32 bits of the double.
    wide = value << 32
    if wide in _F64_BITS:
        return _F64_BITS[wide]
    if wide == _F64_INV2PI:
        return "0.15915494309189532"
    return f"0x{value:x}"


def _lit16_fp(value: int) -> str:
    low = value & 0xFFFF
    signed = low - 0x10000 if low & 0x8000 else low
    if -16 <= signed <= 64:
        return str(signed)
    if low in _F16_BITS:
        return _F16_BITS[low]
    if low == _F16_INV2PI:
        return "0.15915494"
    return f"0x{low:x}"


def _lit16_int(value: int) -> str:
    # 16-bit integer operands: LLVM checks the whole 32-bit literal for an inline-able value,
    # then prints the low half in hex.
    return _lit32_inline_or_hex(value, value & 0xFFFF)


def _lit16_int_unsigned(value: int) -> str:
    low = value & 0xFFFF
    if low <= 64:
        return str(low)
    return f"0x{low:x}"


def _lit_v2f16(value: int) -> str:
    # Packed 16-bit: LLVM prints the literal as a 32-bit value; inline-able halves as floats.
    if value <= 64:
        return str(value)
    signed = _signed32(value)
    if -16 <= signed < 0:
        return str(signed)
    if value in _F16_BITS:
        return _F16_BITS[value]
    if value == _F16_INV2PI:
        return "0.15915494"
    return f"0x{value:x}"


def _lit_hex(value: int) -> str:
    return f"0x{value:x}"


# Constant classes: name -> (inline is 64-bit, inline prints 16-bit hex, literal printer).
CONST_CLASSES: dict[str, tuple[bool, bool, object]] = {
    "b32": (False, False, _lit32),
    "i32": (False, False, _lit32_int),
    "b64": (True, False, _lit64_int),
    "s64": (True, False, _lit64_sext),
    "f64": (True, False, _lit64_fp),
    "f16": (False, False, _lit16_fp),
    "i16": (False, True, _lit16_int),
    "u16": (False, True, _lit16_int_unsigned),
    "v2f16": (False, False, _lit_v2f16),
    "hex": (False, False, _lit_hex),
}


def const_text(cls: str, operand: Operand, code: int) -> str:
    """How LLVM prints an inline constant (``code``) or literal for an operand of class ``cls``."""
    wide, int16, literal_printer = CONST_CLASSES.get(cls, CONST_CLASSES["b32"])
    if operand.kind == "literal":
        return literal_printer(int(operand.value))  # type: ignore[operator]
    return _inline_text(code, wide, int16)


def operand_text(operand: Operand, cls: str = "b32", code: int = 0) -> str:
    """LLVM spelling of one operand (without neg/abs modifiers)."""
    kind = operand.kind
    if kind == "vgpr":
        return reg_range("v", operand.index, operand.count)
    if kind == "sgpr":
        return reg_range("s", operand.index, operand.count)
    if kind == "agpr":
        return reg_range("a", operand.index, operand.count)
    if kind == "ttmp":
        return reg_range("ttmp", operand.index, operand.count)
    if kind == "special":
        return operand.name
    if kind in ("const", "literal"):
        return const_text(cls, operand, code)
    if kind == "label":
        return str(operand.value)
    return str(operand.value)


def with_modifiers(text: str, neg: bool, abs_: bool, constant: bool = False) -> str:
    """Apply VOP3/DPP/SDWA input modifiers the way LLVM prints them: ``-|v1|``, and
    ``neg(0.5)`` for a negated constant (so that ``--1`` never appears)."""
    if abs_:
        text = f"|{text}|"
    if neg:
        text = f"neg({text})" if constant and not abs_ else f"-{text}"
    return text
