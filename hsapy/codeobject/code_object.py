"""AMDGPU code objects: ELF, notes (msgpack metadata), kernel descriptors, offload bundles.

``CodeObject.from_bytes(data)`` parses an AMDHSA code object (a little-endian ELF64 shared object,
code object v4, v5 or v6) completely: target (from e_flags), version (from EI_ABIVERSION),
program headers, sections, symbol tables, dynamic relocations, notes, the NT_AMDGPU_METADATA
msgpack document, and for every kernel its 64-byte kernel descriptor decoded into named fields
and bitfields. ``extract_for_target(data, target)`` accepts a plain ELF, a clang offload bundle
(``__CLANG_OFFLOAD_BUNDLE__``) or a compressed bundle (``CCOB``) and returns the ELF bytes for
that target.

Every malformed input raises :class:`CodeObjectError` (a ``ValueError``) carrying the file offset
and what was expected there; nothing lets a construct, struct, index or key error escape.

Sources (facts, not code): LLVM AMDGPUUsage ("ELF Code Object", "Code Object Metadata",
"Kernel Descriptor"), LLVM llvm/BinaryFormat/ELF.h (EF_AMDGPU_* values, checked against
``llvm-mc-19 -mcpu=<gfx>`` output), clang's OffloadBundler (bundle and CCOB layouts, checked
against ``clang-19 --offload-compress`` output), and docs/hsa-abi.md.
"""
from __future__ import annotations

import functools
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

import construct as cs
import msgpack

from hsapy.errors import HsapyValueError

__all__ = [
    "CodeObjectError",
    "TargetMismatchError",
    "Target",
    "CodeObject",
    "Segment",
    "Section",
    "Symbol",
    "Relocation",
    "Note",
    "KernelDescriptor",
    "Bitfields",
    "BitField",
    "KernelInfo",
    "ArgInfo",
    "BundleEntry",
    "bundle_entries",
    "extract_for_target",
    "is_bundle",
    "MACHINES",
    "RELOCATION_TYPES",
]


# The largest file read as a code object or offload bundle (bundles of many targets reach
# hundreds of megabytes; a larger file is something else).
MAX_CODE_OBJECT_FILE_BYTES = 1 << 30


def read_code_object_file(path: Any) -> bytes:
    """The bytes of a code object file: a regular file of at most MAX_CODE_OBJECT_FILE_BYTES.
    Anything else -- a device such as /dev/zero, a pipe, a directory, a huge file -- raises
    CodeObjectError before a byte is read (OSError when the file cannot be opened)."""
    import os
    import stat

    with open(path, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise CodeObjectError(f"{os.fsdecode(path)} is not a regular file (a device, pipe "
                                  "or directory): a code object is an ELF file or an offload "
                                  "bundle")
        if info.st_size > MAX_CODE_OBJECT_FILE_BYTES:
            raise CodeObjectError(f"{os.fsdecode(path)} has {info.st_size} bytes, more than "
                                  f"any code object ({MAX_CODE_OBJECT_FILE_BYTES} at most): it "
                                  "is not one")
        data = handle.read(MAX_CODE_OBJECT_FILE_BYTES + 1)
    if len(data) > MAX_CODE_OBJECT_FILE_BYTES:
        raise CodeObjectError(f"{os.fsdecode(path)} grew past {MAX_CODE_OBJECT_FILE_BYTES} "
                              "bytes while being read: it is not a code object")
    return data


class CodeObjectError(HsapyValueError):
    """A code object (or bundle) is malformed, unsupported, or for another target.

    ``offset`` is the byte offset in the input where the problem was found (None when the
    problem is not tied to one place); ``expected`` says what should have been there.
    """

    def __init__(self, message: str, offset: int | None = None,
                 expected: str | None = None) -> None:
        self.offset = offset
        self.expected = expected
        self.reason = message
        text = message
        if offset is not None:
            text += f" at offset {offset:#x}"
        if expected:
            text += f": expected {expected}"
        super().__init__(text)


class TargetMismatchError(CodeObjectError):
    """The code object was built for another target than the agent's (both are named)."""

    def __init__(self, code_object_target: str, agent_target: str, detail: str = "") -> None:
        self.code_object_target = code_object_target
        self.agent_target = agent_target
        message = (
            f"the code object is for {code_object_target} but the agent is {agent_target}"
            f"{detail}; rebuild it for the agent (e.g. --offload-arch={agent_target})"
        )
        super().__init__(message)


# ---------------------------------------------------------------------------------------------
# Tables (data). EF_AMDGPU_MACH_* from LLVM's ELF.h, each checked with
# `llvm-mc-19 -triple=amdgcn-amd-amdhsa -mcpu=<gfx> -filetype=obj` + `llvm-readelf-19 -h`;
# gfx950, gfx1153 and gfx9-4-generic from LLVM 20+'s ELF.h (LLVM 19 does not know them).

MACHINES: dict[int, str] = {
    0x020: "gfx600", 0x021: "gfx601", 0x022: "gfx700", 0x023: "gfx701", 0x024: "gfx702",
    0x025: "gfx703", 0x026: "gfx704", 0x028: "gfx801", 0x029: "gfx802", 0x02A: "gfx803",
    0x02B: "gfx810", 0x02C: "gfx900", 0x02D: "gfx902", 0x02E: "gfx904", 0x02F: "gfx906",
    0x030: "gfx908", 0x031: "gfx909", 0x032: "gfx90c", 0x033: "gfx1010", 0x034: "gfx1011",
    0x035: "gfx1012", 0x036: "gfx1030", 0x037: "gfx1031", 0x038: "gfx1032", 0x039: "gfx1033",
    0x03A: "gfx602", 0x03B: "gfx705", 0x03C: "gfx805", 0x03D: "gfx1035", 0x03E: "gfx1034",
    0x03F: "gfx90a", 0x040: "gfx940", 0x041: "gfx1100", 0x042: "gfx1013", 0x043: "gfx1150",
    0x044: "gfx1103", 0x045: "gfx1036", 0x046: "gfx1101", 0x047: "gfx1102", 0x048: "gfx1200",
    0x04A: "gfx1151", 0x04B: "gfx941", 0x04C: "gfx942", 0x04E: "gfx1201", 0x04F: "gfx950",
    0x051: "gfx9-generic", 0x052: "gfx10-1-generic", 0x053: "gfx10-3-generic",
    0x054: "gfx11-generic", 0x055: "gfx1152", 0x058: "gfx1153", 0x059: "gfx12-generic",
    0x05F: "gfx9-4-generic",
}
MACHINE_BY_NAME: dict[str, int] = {name: mach for mach, name in MACHINES.items()}

# Generic targets (code object v6) and the processors that run them (LLVM AMDGPUUsage,
# "Generic Processors"). e_flags bits 31:24 hold the generic version.
GENERIC_TARGETS: dict[str, tuple[str, ...]] = {
    "gfx9-generic": ("gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"),
    "gfx9-4-generic": ("gfx940", "gfx941", "gfx942", "gfx950"),
    "gfx10-1-generic": ("gfx1010", "gfx1011", "gfx1012", "gfx1013"),
    "gfx10-3-generic": ("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035",
                        "gfx1036"),
    "gfx11-generic": ("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151",
                      "gfx1152", "gfx1153"),
    "gfx12-generic": ("gfx1200", "gfx1201"),
}

# e_flags bits 9:8 (xnack) and 11:10 (sramecc) for code object v4+ (EF_AMDGPU_FEATURE_*_V4).
FEATURE_SETTINGS: dict[int, str] = {0: "unsupported", 1: "any", 2: "off", 3: "on"}

# EI_ABIVERSION -> code object version (ELFABIVERSION_AMDGPU_HSA_V4..V6).
ABI_VERSIONS: dict[int, int] = {2: 4, 3: 5, 4: 6}
_OLD_ABI_VERSIONS = {0: 2, 1: 3}

# R_AMDGPU_* relocation types (AMDGPUUsage "Relocation Records").
RELOCATION_TYPES: dict[int, str] = {
    0: "R_AMDGPU_NONE", 1: "R_AMDGPU_ABS32_LO", 2: "R_AMDGPU_ABS32_HI", 3: "R_AMDGPU_ABS64",
    4: "R_AMDGPU_REL32", 5: "R_AMDGPU_REL64", 6: "R_AMDGPU_ABS32", 7: "R_AMDGPU_GOTPCREL",
    8: "R_AMDGPU_GOTPCREL32_LO", 9: "R_AMDGPU_GOTPCREL32_HI", 10: "R_AMDGPU_REL32_LO",
    11: "R_AMDGPU_REL32_HI", 13: "R_AMDGPU_RELATIVE64", 14: "R_AMDGPU_REL16",
}

ELF_MAGIC = b"\x7fELF"
EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64
ET_REL, ET_DYN = 1, 3
PT_LOAD, PT_DYNAMIC, PT_NOTE = 1, 2, 4
SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOTE, SHT_DYNSYM = 2, 3, 4, 7, 11
SHT_NOBITS = 8
NT_AMDGPU_METADATA = 32

SEGMENT_TYPES = {0: "NULL", 1: "LOAD", 2: "DYNAMIC", 3: "INTERP", 4: "NOTE", 6: "PHDR",
                 0x6474E551: "GNU_STACK", 0x6474E552: "GNU_RELRO"}
SYMBOL_TYPES = {0: "NOTYPE", 1: "OBJECT", 2: "FUNC", 3: "SECTION", 4: "FILE",
                10: "AMDGPU_HSA_KERNEL"}
SYMBOL_BINDINGS = {0: "LOCAL", 1: "GLOBAL", 2: "WEAK"}
SYMBOL_VISIBILITIES = {0: "DEFAULT", 1: "INTERNAL", 2: "HIDDEN", 3: "PROTECTED"}

# ---------------------------------------------------------------------------------------------
# ELF structures (System V gABI, ELF64 little-endian), compiled for speed.

_EHDR = cs.Struct(
    "e_ident_magic" / cs.Bytes(4),
    "ei_class" / cs.Int8ul,
    "ei_data" / cs.Int8ul,
    "ei_version" / cs.Int8ul,
    "ei_osabi" / cs.Int8ul,
    "ei_abiversion" / cs.Int8ul,
    "ei_pad" / cs.Bytes(7),
    "e_type" / cs.Int16ul,
    "e_machine" / cs.Int16ul,
    "e_version" / cs.Int32ul,
    "e_entry" / cs.Int64ul,
    "e_phoff" / cs.Int64ul,
    "e_shoff" / cs.Int64ul,
    "e_flags" / cs.Int32ul,
    "e_ehsize" / cs.Int16ul,
    "e_phentsize" / cs.Int16ul,
    "e_phnum" / cs.Int16ul,
    "e_shentsize" / cs.Int16ul,
    "e_shnum" / cs.Int16ul,
    "e_shstrndx" / cs.Int16ul,
).compile()
_EHDR_SIZE = 64

_PHDR = cs.Struct(
    "p_type" / cs.Int32ul,
    "p_flags" / cs.Int32ul,
    "p_offset" / cs.Int64ul,
    "p_vaddr" / cs.Int64ul,
    "p_paddr" / cs.Int64ul,
    "p_filesz" / cs.Int64ul,
    "p_memsz" / cs.Int64ul,
    "p_align" / cs.Int64ul,
).compile()
_PHDR_SIZE = 56

_SHDR = cs.Struct(
    "sh_name" / cs.Int32ul,
    "sh_type" / cs.Int32ul,
    "sh_flags" / cs.Int64ul,
    "sh_addr" / cs.Int64ul,
    "sh_offset" / cs.Int64ul,
    "sh_size" / cs.Int64ul,
    "sh_link" / cs.Int32ul,
    "sh_info" / cs.Int32ul,
    "sh_addralign" / cs.Int64ul,
    "sh_entsize" / cs.Int64ul,
).compile()
_SHDR_SIZE = 64

_SYM = cs.Struct(
    "st_name" / cs.Int32ul,
    "st_info" / cs.Int8ul,
    "st_other" / cs.Int8ul,
    "st_shndx" / cs.Int16ul,
    "st_value" / cs.Int64ul,
    "st_size" / cs.Int64ul,
).compile()
_SYM_SIZE = 24

_RELA = cs.Struct(
    "r_offset" / cs.Int64ul,
    "r_info" / cs.Int64ul,
    "r_addend" / cs.Int64sl,
).compile()
_RELA_SIZE = 24

_NOTE_HEADER = cs.Struct(
    "namesz" / cs.Int32ul,
    "descsz" / cs.Int32ul,
    "type" / cs.Int32ul,
).compile()

# Kernel descriptor, 64 bytes (AMDGPUUsage "Kernel Descriptor for GFX6-GFX12").
_KERNEL_DESCRIPTOR = cs.Struct(
    "group_segment_fixed_size" / cs.Int32ul,
    "private_segment_fixed_size" / cs.Int32ul,
    "kernarg_size" / cs.Int32ul,
    "reserved0" / cs.Bytes(4),
    "kernel_code_entry_byte_offset" / cs.Int64sl,
    "reserved1" / cs.Bytes(20),
    "compute_pgm_rsrc3" / cs.Int32ul,
    "compute_pgm_rsrc1" / cs.Int32ul,
    "compute_pgm_rsrc2" / cs.Int32ul,
    "kernel_code_properties" / cs.Int16ul,
    "kernarg_preload" / cs.Int16ul,
    "reserved2" / cs.Bytes(4),
).compile()
KERNEL_DESCRIPTOR_SIZE = 64

# Offload bundle header (clang OffloadBundler, binary format).
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"


def _parse(compiled: Any, size: int, data: bytes, offset: int, what: str) -> Any:
    """Parse one fixed-size structure at ``offset``, or raise CodeObjectError."""
    if offset < 0 or offset + size > len(data):
        raise CodeObjectError(
            f"truncated {what} ({len(data)} bytes in the file)", offset,
            f"{size} bytes of {what}",
        )
    try:
        return compiled.parse(data[offset:offset + size])
    except (cs.ConstructError, struct.error) as exc:  # defensive: bounds are checked above
        raise CodeObjectError(f"malformed {what} ({exc})", offset, what) from None


def _cstring(table: bytes, index: int, table_offset: int, what: str) -> str:
    """A NUL-terminated name from a string table."""
    if index == 0:
        return ""
    if index >= len(table):
        raise CodeObjectError(
            f"{what} name index {index} is outside its string table ({len(table)} bytes)",
            table_offset, "an index inside the string table",
        )
    end = table.find(b"\0", index)
    if end < 0:
        raise CodeObjectError(f"{what} name is not NUL-terminated", table_offset + index,
                              "a NUL-terminated string")
    return table[index:end].decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------
# Targets


@functools.lru_cache(maxsize=None)   # called on every launch's validation
def max_scratch_per_wave(processor: str) -> int | None:
    """Bytes of private (scratch) memory one wave may use on ``processor`` (``"gfx942"``): the
    range of the COMPUTE_TMPRING_SIZE.WAVESIZE field a queue's scratch is programmed through,
    as LLVM's GCNSubtarget::getMaxWaveScratchSize gives it -- (2^13 - 1) x 1 KiB up to gfx10
    (ROCr's MAX_WAVE_SCRATCH, 8,387,584), (2^15 - 1) x 256 B on gfx11, (2^18 - 1) x 256 B from
    gfx12 (quoted in ROCm/clr pull request #80). None for a name that is not ``gfx`` + digits."""
    digits = processor[3:] if processor.startswith("gfx") else ""
    if not digits[:1].isdigit():
        return None
    major = int(digits[:2]) if len(digits) >= 4 else int(digits[0])
    if major <= 10:
        return (2**13 - 1) * 1024
    if major == 11:
        return (2**15 - 1) * 256
    return (2**18 - 1) * 256


@dataclass(frozen=True)
class Target:
    """A target id: processor name plus xnack / sramecc settings.

    Settings are "any" (works either way), "on", "off" or "unsupported" (the processor has no
    such mode). ``str(target)`` is the LLVM target-id spelling: ``gfx942``,
    ``gfx942:sramecc+:xnack-``.
    """

    name: str
    xnack: str = "any"
    sramecc: str = "any"

    def __str__(self) -> str:
        text = self.name
        # LLVM orders target-id features alphabetically: sramecc before xnack.
        for feature, setting in (("sramecc", self.sramecc), ("xnack", self.xnack)):
            if setting == "on":
                text += f":{feature}+"
            elif setting == "off":
                text += f":{feature}-"
        return text

    @classmethod
    def from_e_flags(cls, e_flags: int) -> "Target":
        """Decode e_flags of a v4+ code object. Unknown machines raise CodeObjectError."""
        machine = e_flags & 0xFF
        name = MACHINES.get(machine)
        if name is None:
            raise CodeObjectError(
                f"unknown AMDGPU machine {machine:#x} in e_flags {e_flags:#x}", 0x30,
                "an EF_AMDGPU_MACH_AMDGCN_* value this version of hsapy knows",
            )
        xnack = FEATURE_SETTINGS[(e_flags >> 8) & 3]
        sramecc = FEATURE_SETTINGS[(e_flags >> 10) & 3]
        return cls(name, xnack, sramecc)

    @classmethod
    def parse(cls, text: str) -> "Target":
        """Parse ``gfx942``, ``gfx942:xnack+``, ``amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-``.

        Settings not named are "any".
        """
        if not isinstance(text, str) or not text:
            raise HsapyValueError(
                f"a target must be a non-empty string like 'gfx942', not {text!r}")
        spec = text
        if "--" in spec:
            spec = spec.rsplit("--", 1)[1]
        elif spec.startswith("amdgcn-amd-amdhsa-"):
            spec = spec[len("amdgcn-amd-amdhsa-"):]
        parts = spec.split(":")
        name = parts[0]
        settings = {"xnack": "any", "sramecc": "any"}
        for feature in parts[1:]:
            key = feature[:-1]
            if key not in settings or feature[-1:] not in "+-" or not key:
                raise HsapyValueError(
                    f"unknown target feature {feature!r} in {text!r}; "
                    "expected xnack+, xnack-, sramecc+ or sramecc-"
                )
            settings[key] = "on" if feature.endswith("+") else "off"
        if not name.startswith("gfx"):
            raise HsapyValueError(f"target {text!r} does not name a gfx processor (e.g. gfx942)")
        return cls(name, settings["xnack"], settings["sramecc"])

    @property
    def is_generic(self) -> bool:
        """True for a generic target (``gfx12-generic``: runs on every member processor)."""
        return self.name in GENERIC_TARGETS

    def accepts(self, code_object_target: "Target") -> bool:
        """True when a code object for ``code_object_target`` runs on an agent with this target.

        The processor names must be equal (or the code object's generic target must include the
        agent's processor); a setting of "any" on either side matches everything, "on"/"off"
        must agree (ROCr's isa compatibility rule).
        """
        same = self.name == code_object_target.name
        member = self.name in GENERIC_TARGETS.get(code_object_target.name, ())
        if not (same or member):
            return False
        for mine, theirs in ((self.xnack, code_object_target.xnack),
                             (self.sramecc, code_object_target.sramecc)):
            if mine in ("on", "off") and theirs in ("on", "off") and mine != theirs:
                return False
        return True

    def match_score(self, code_object_target: "Target") -> int:
        """How specifically a compatible code object target matches (higher is better)."""
        score = 0
        for mine, theirs in ((self.xnack, code_object_target.xnack),
                             (self.sramecc, code_object_target.sramecc)):
            if mine == theirs:
                score += 1
        return score


def _as_target(target: "Target | str") -> Target:
    if isinstance(target, Target):
        return target
    return Target.parse(target)


# ---------------------------------------------------------------------------------------------
# Kernel descriptor bitfields (AMDGPUUsage, "compute_pgm_rsrc1/2/3", "Kernel Code Properties").


@dataclass(frozen=True)
class BitField:
    """One named bit range ``[lo, lo + width)`` of a register."""

    name: str
    lo: int
    width: int

    @property
    def mask(self) -> int:
        """The field's mask at bit 0."""
        return (1 << self.width) - 1


def _fields(*spec: tuple[str, int, int]) -> tuple[BitField, ...]:
    return tuple(BitField(name, lo, width) for name, lo, width in spec)


RSRC1_COMMON = (
    ("granulated_workitem_vgpr_count", 0, 6),
    ("granulated_wavefront_sgpr_count", 6, 4),
    ("priority", 10, 2),
    ("float_round_mode_32", 12, 2),
    ("float_round_mode_16_64", 14, 2),
    ("float_denorm_mode_32", 16, 2),
    ("float_denorm_mode_16_64", 18, 2),
    ("priv", 20, 1),
    ("debug_mode", 22, 1),
    ("bulky", 24, 1),
    ("cdbg_user", 25, 1),
    ("fp16_ovfl", 26, 1),
    ("wgp_mode", 29, 1),
    ("mem_ordered", 30, 1),
    ("fwd_progress", 31, 1),
)
# Bits 21 and 23 were DX10_CLAMP / IEEE_MODE up to GFX11, WG_RR_EN / DISABLE_PERF on GFX12.
RSRC1_GFX6_GFX11 = _fields(*RSRC1_COMMON, ("enable_dx10_clamp", 21, 1), ("enable_ieee_mode", 23, 1))
RSRC1_GFX12 = _fields(*RSRC1_COMMON, ("enable_wg_rr_en", 21, 1), ("disable_perf", 23, 1))

RSRC2 = _fields(
    ("enable_private_segment", 0, 1),
    ("user_sgpr_count", 1, 5),
    ("enable_trap_handler", 6, 1),
    ("enable_sgpr_workgroup_id_x", 7, 1),
    ("enable_sgpr_workgroup_id_y", 8, 1),
    ("enable_sgpr_workgroup_id_z", 9, 1),
    ("enable_sgpr_workgroup_info", 10, 1),
    ("enable_vgpr_workitem_id", 11, 2),
    ("enable_exception_address_watch", 13, 1),
    ("enable_exception_memory", 14, 1),
    ("granulated_lds_size", 15, 9),
    ("enable_exception_ieee_754_fp_invalid_operation", 24, 1),
    ("enable_exception_fp_denormal_source", 25, 1),
    ("enable_exception_ieee_754_fp_division_by_zero", 26, 1),
    ("enable_exception_ieee_754_fp_overflow", 27, 1),
    ("enable_exception_ieee_754_fp_underflow", 28, 1),
    ("enable_exception_ieee_754_fp_inexact", 29, 1),
    ("enable_exception_int_divide_by_zero", 30, 1),
)

RSRC3_GFX90A = _fields(("accum_offset", 0, 6), ("tg_split", 16, 1))
RSRC3_GFX10_GFX11 = _fields(
    ("shared_vgpr_count", 0, 4),
    ("inst_pref_size", 4, 6),
    ("trap_on_start", 10, 1),
    ("trap_on_end", 11, 1),
    ("image_op", 31, 1),
)
RSRC3_GFX12 = _fields(
    ("inst_pref_size", 4, 8),
    ("glg_en", 13, 1),
    ("image_op", 31, 1),
)
RSRC3_NONE: tuple[BitField, ...] = ()

KERNEL_CODE_PROPERTIES = _fields(
    ("enable_sgpr_private_segment_buffer", 0, 1),
    ("enable_sgpr_dispatch_ptr", 1, 1),
    ("enable_sgpr_queue_ptr", 2, 1),
    ("enable_sgpr_kernarg_segment_ptr", 3, 1),
    ("enable_sgpr_dispatch_id", 4, 1),
    ("enable_sgpr_flat_scratch_init", 5, 1),
    ("enable_sgpr_private_segment_size", 6, 1),
    ("enable_wavefront_size32", 10, 1),
    ("uses_dynamic_stack", 11, 1),
)

KERNARG_PRELOAD = _fields(
    ("kernarg_preload_spec_length", 0, 7),
    ("kernarg_preload_spec_offset", 7, 9),
)


def target_family(name: str) -> str:
    """ISA family of a processor name: "gfx6".."gfx12" (major version), e.g. gfx942 -> gfx9."""
    digits = name[3:].split("-")[0]
    if name.endswith("-generic"):   # gfx9-4-generic -> gfx9, gfx10-3-generic -> gfx10
        return "gfx" + digits
    if len(digits) >= 4:
        return "gfx" + digits[:2]
    return "gfx" + digits[:1]


def _has_accum_offset(name: str) -> bool:
    # gfx90a and gfx94x/gfx950 (and their generic target) split VGPRs and AGPRs by accum_offset.
    return name == "gfx90a" or name.startswith("gfx94") or name in ("gfx950", "gfx9-4-generic")


def _rsrc_tables(name: str) -> tuple[tuple[BitField, ...], tuple[BitField, ...]]:
    family = target_family(name)
    rsrc1 = RSRC1_GFX12 if family == "gfx12" else RSRC1_GFX6_GFX11
    if family == "gfx12":
        rsrc3 = RSRC3_GFX12
    elif family in ("gfx10", "gfx11"):
        rsrc3 = RSRC3_GFX10_GFX11
    elif _has_accum_offset(name):
        rsrc3 = RSRC3_GFX90A
    else:
        rsrc3 = RSRC3_NONE
    return rsrc1, rsrc3


class Bitfields(Mapping[str, int]):
    """A register value decoded by a table of named bit ranges.

    A read-only mapping ``name -> int``; ``value`` is the raw register. Fields are also readable
    as attributes (``rsrc2.user_sgpr_count``) because the names come from the table.
    """

    __slots__ = ("register", "value", "fields", "_values")

    def __init__(self, register: str, value: int, fields: tuple[BitField, ...]) -> None:
        object.__setattr__(self, "register", register)
        object.__setattr__(self, "value", int(value))
        object.__setattr__(self, "fields", fields)
        decoded = {f.name: (int(value) >> f.lo) & f.mask for f in fields}
        object.__setattr__(self, "_values", decoded)

    def __getitem__(self, name: str) -> int:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, name: str) -> int:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"{self.register} has no field {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Bitfields are read-only")

    def __reduce__(self) -> tuple[Any, ...]:
        # copy/deepcopy/pickle rebuild from the raw value (the instance is read-only).
        return (Bitfields, (self.register, self.value, self.fields))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Bitfields):
            return NotImplemented
        return (self.register, self.value, self.fields) == (other.register, other.value,
                                                            other.fields)

    def __hash__(self) -> int:
        return hash((self.register, self.value))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self._values.items() if v)
        return f"{self.register}({self.value:#x}: {inner})"

    @property
    def reserved_bits(self) -> int:
        """Bits set in the value that no known field covers."""
        covered = 0
        for f in self.fields:
            covered |= f.mask << f.lo
        return self.value & ~covered

    @staticmethod
    def encode(fields: tuple[BitField, ...], **values: int) -> int:
        """Build a register value from field values (unnamed fields are 0)."""
        by_name = {f.name: f for f in fields}
        word = 0
        for name, value in values.items():
            f = by_name[name]
            if value < 0 or value > f.mask:
                raise HsapyValueError(f"{name}={value} does not fit in {f.width} bits")
            word |= value << f.lo
        return word


@dataclass(frozen=True)
class KernelDescriptor:
    """The 64-byte kernel descriptor (``<kernel>.kd``), decoded.

    Integer fields are as stored; the five bitfield registers are :class:`Bitfields`.
    """

    group_segment_fixed_size: int
    private_segment_fixed_size: int
    kernarg_size: int
    kernel_code_entry_byte_offset: int
    compute_pgm_rsrc1: Bitfields
    compute_pgm_rsrc2: Bitfields
    compute_pgm_rsrc3: Bitfields
    kernel_code_properties: Bitfields
    kernarg_preload: Bitfields
    raw: bytes
    target_name: str = ""

    @classmethod
    def from_bytes(cls, data: bytes, target_name: str = "gfx942",
                   offset: int = 0) -> "KernelDescriptor":
        """Decode 64 descriptor bytes; ``target_name`` selects the per-family bitfield tables."""
        if len(data) - offset < KERNEL_DESCRIPTOR_SIZE:
            raise CodeObjectError(
                "truncated kernel descriptor", offset, f"{KERNEL_DESCRIPTOR_SIZE} bytes",
            )
        raw = bytes(data[offset:offset + KERNEL_DESCRIPTOR_SIZE])
        parsed = _KERNEL_DESCRIPTOR.parse(raw)
        rsrc1_fields, rsrc3_fields = _rsrc_tables(target_name)
        return cls(
            group_segment_fixed_size=parsed.group_segment_fixed_size,
            private_segment_fixed_size=parsed.private_segment_fixed_size,
            kernarg_size=parsed.kernarg_size,
            kernel_code_entry_byte_offset=parsed.kernel_code_entry_byte_offset,
            compute_pgm_rsrc1=Bitfields("compute_pgm_rsrc1", parsed.compute_pgm_rsrc1,
                                        rsrc1_fields),
            compute_pgm_rsrc2=Bitfields("compute_pgm_rsrc2", parsed.compute_pgm_rsrc2, RSRC2),
            compute_pgm_rsrc3=Bitfields("compute_pgm_rsrc3", parsed.compute_pgm_rsrc3,
                                        rsrc3_fields),
            kernel_code_properties=Bitfields(
                "kernel_code_properties", parsed.kernel_code_properties, KERNEL_CODE_PROPERTIES),
            kernarg_preload=Bitfields("kernarg_preload", parsed.kernarg_preload, KERNARG_PRELOAD),
            raw=raw,
            target_name=target_name,
        )

    # Derived values the loader, the executor and `hsapy inspect` need.

    @property
    def wavefront_size(self) -> int:
        """32 when ENABLE_WAVEFRONT_SIZE32 is set (gfx10+), else 64."""
        return 32 if self.kernel_code_properties["enable_wavefront_size32"] else 64

    @property
    def user_sgpr_count(self) -> int:
        """rsrc2.USER_SGPR_COUNT: where system SGPRs start."""
        return self.compute_pgm_rsrc2["user_sgpr_count"]

    @property
    def vgpr_granule(self) -> int:
        """VGPRs per unit of GRANULATED_WORKITEM_VGPR_COUNT (AMDGPUUsage, compute_pgm_rsrc1)."""
        if _has_accum_offset(self.target_name):
            return 8
        family = target_family(self.target_name)
        if family in ("gfx10", "gfx11", "gfx12") and self.wavefront_size == 32:
            return 8
        return 4

    @property
    def allocated_vgprs(self) -> int:
        """VGPRs (plus AGPRs on gfx90a/gfx94x) allocated per work-item, from rsrc1."""
        return (self.compute_pgm_rsrc1["granulated_workitem_vgpr_count"] + 1) * self.vgpr_granule

    @property
    def allocated_sgprs(self) -> int | None:
        """SGPRs allocated per wave from rsrc1 (gfx6-gfx9); None on gfx10+ (field unused)."""
        if target_family(self.target_name) in ("gfx10", "gfx11", "gfx12"):
            return None
        # Encoded in units of 8 (AMDGPUUsage: granule 8; gfx9 hardware rounds up to 16).
        return (self.compute_pgm_rsrc1["granulated_wavefront_sgpr_count"] + 1) * 8

    @property
    def accum_offset(self) -> int | None:
        """First AGPR index in the unified register file (gfx90a/gfx94x), else None."""
        if "accum_offset" not in self.compute_pgm_rsrc3:
            return None
        return (self.compute_pgm_rsrc3["accum_offset"] + 1) * 4

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able view: integer fields and every bitfield by name (raw values too)."""
        out: dict[str, Any] = {
            "group_segment_fixed_size": self.group_segment_fixed_size,
            "private_segment_fixed_size": self.private_segment_fixed_size,
            "kernarg_size": self.kernarg_size,
            "kernel_code_entry_byte_offset": self.kernel_code_entry_byte_offset,
        }
        for reg in (self.compute_pgm_rsrc1, self.compute_pgm_rsrc2, self.compute_pgm_rsrc3,
                    self.kernel_code_properties, self.kernarg_preload):
            out[reg.register] = {"value": reg.value, **dict(reg)}
        out["raw"] = self.raw.hex()
        return out


# ---------------------------------------------------------------------------------------------
# ELF pieces


@dataclass(frozen=True)
class Segment:
    """A program header (``co.segments`` lists the PT_LOAD ones)."""

    type: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int
    flags: int
    align: int

    @property
    def type_name(self) -> str:
        """PT_* name ("LOAD", "NOTE", ...)."""
        return SEGMENT_TYPES.get(self.type, f"{self.type:#x}")

    @property
    def flags_text(self) -> str:
        """"R", "RW", "R E" ... like readelf."""
        return ("R" if self.flags & 4 else " ") + ("W" if self.flags & 2 else " ") + (
            "E" if self.flags & 1 else " ")


@dataclass(frozen=True)
class Section:
    """A section header with its resolved name."""

    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int


@dataclass(frozen=True)
class Symbol:
    """An ELF symbol (from .dynsym, else .symtab)."""

    name: str
    value: int
    size: int
    type: str
    binding: str
    section: int
    visibility: str = "DEFAULT"


@dataclass(frozen=True)
class Relocation:
    """A dynamic relocation (Elf64_Rela): where, how, against which symbol."""

    offset: int
    type: int
    symbol_name: str
    symbol_value: int
    addend: int
    symbol_index: int = 0

    @property
    def type_name(self) -> str:
        """R_AMDGPU_* name."""
        return RELOCATION_TYPES.get(self.type, f"R_AMDGPU_{self.type}")


@dataclass(frozen=True)
class Note:
    """An ELF note: owner name, type, descriptor bytes, file offset of the note header."""

    name: str
    type: int
    desc: bytes
    offset: int


# ---------------------------------------------------------------------------------------------
# Metadata (AMDGPUUsage "Code Object V3+ Metadata")


@dataclass(frozen=True)
class ArgInfo:
    """One kernel argument from ``.args`` (explicit or hidden)."""

    offset: int
    size: int
    value_kind: str
    address_space: str | None = None
    name: str | None = None
    type_name: str | None = None
    access: str | None = None
    actual_access: str | None = None
    pointee_align: int | None = None
    is_const: bool = False
    is_restrict: bool = False
    is_volatile: bool = False
    value_type: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_hidden(self) -> bool:
        """True for implicit arguments the launcher fills (``hidden_*``)."""
        return self.value_kind.startswith("hidden_")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able view (None fields omitted)."""
        out: dict[str, Any] = {
            "offset": self.offset, "size": self.size, "value_kind": self.value_kind,
        }
        for key in ("address_space", "name", "type_name", "access", "actual_access",
                    "pointee_align", "value_type"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        for key in ("is_const", "is_restrict", "is_volatile"):
            if getattr(self, key):
                out[key] = True
        return out


@dataclass(frozen=True)
class KernelInfo:
    """Everything known about one kernel: metadata, descriptor, addresses (see internals.md)."""

    name: str
    symbol: str
    descriptor: KernelDescriptor
    args: tuple[ArgInfo, ...]
    kernarg_segment_size: int
    kernarg_segment_align: int
    group_segment_fixed_size: int
    private_segment_fixed_size: int
    wavefront_size: int
    sgpr_count: int
    vgpr_count: int
    max_flat_workgroup_size: int
    descriptor_vaddr: int
    entry_vaddr: int
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    agpr_count: int = 0
    uses_dynamic_stack: bool = False
    code_object_version: int = 5
    target: Target | None = None

    @property
    def explicit_args(self) -> tuple[ArgInfo, ...]:
        """The arguments a caller passes (not ``hidden_*``)."""
        return tuple(a for a in self.args if not a.is_hidden)

    @property
    def hidden_args(self) -> tuple[ArgInfo, ...]:
        """The implicit arguments the launcher fills."""
        return tuple(a for a in self.args if a.is_hidden)


def _meta_get(mapping: Mapping[str, Any], key: str, kinds: tuple[type, ...], where: str,
              offset: int, default: Any = ...) -> Any:
    """A typed value from a metadata map, or CodeObjectError naming the key."""
    if key not in mapping:
        if default is ...:
            raise CodeObjectError(f"metadata of {where} lacks {key}", offset, f"a {key} entry")
        return default
    value = mapping[key]
    # bool is an int subclass: reject it where an int is expected, and vice versa.
    if isinstance(value, bool) and bool not in kinds:
        ok = False
    else:
        ok = isinstance(value, kinds)
    if not ok:
        names = " or ".join(k.__name__ for k in kinds)
        raise CodeObjectError(
            f"metadata {where}.{key} is {type(value).__name__} {value!r:.40}", offset, names,
        )
    return value


def _meta_int(mapping: Mapping[str, Any], key: str, where: str, offset: int,
              default: Any = ...) -> int:
    value = _meta_get(mapping, key, (int,), where, offset, default)
    if value is not None and not (0 <= value < 1 << 64):
        raise CodeObjectError(f"metadata {where}.{key} = {value} is out of range", offset,
                              "a non-negative 64-bit integer")
    return value


def _parse_arg(raw: Any, where: str, offset: int) -> ArgInfo:
    if not isinstance(raw, dict):
        raise CodeObjectError(f"metadata {where} is {type(raw).__name__}", offset, "a map")
    strings: dict[str, Any] = {}
    for key in (".address_space", ".name", ".type_name", ".access", ".actual_access",
                ".value_type"):
        strings[key] = _meta_get(raw, key, (str,), where, offset, None)
    pointee_align = _meta_int(raw, ".pointee_align", where, offset, None)
    flags = {key: _meta_get(raw, key, (bool,), where, offset, False)
             for key in (".is_const", ".is_restrict", ".is_volatile")}
    return ArgInfo(
        offset=_meta_int(raw, ".offset", where, offset),
        size=_meta_int(raw, ".size", where, offset),
        value_kind=_meta_get(raw, ".value_kind", (str,), where, offset),
        address_space=strings[".address_space"],
        name=strings[".name"],
        type_name=strings[".type_name"],
        access=strings[".access"],
        actual_access=strings[".actual_access"],
        pointee_align=pointee_align,
        is_const=flags[".is_const"],
        is_restrict=flags[".is_restrict"],
        is_volatile=flags[".is_volatile"],
        value_type=strings[".value_type"],
        metadata=raw,
    )


# ---------------------------------------------------------------------------------------------
# The code object


class CodeObject:
    """A parsed AMDHSA code object (ELF64, v4/v5/v6). Build with :meth:`from_bytes`.

    Attributes: ``data`` (the bytes), ``target`` (:class:`Target`), ``version`` (4, 5, 6),
    ``e_flags``, ``elf_type``, ``program_headers`` (all), ``segments`` (PT_LOAD), ``sections``,
    ``symbols`` (name -> :class:`Symbol`, dynamic symbols first), ``relocations`` (dynamic),
    ``notes``, ``metadata`` (the decoded NT_AMDGPU_METADATA map, {} if absent) and ``kernels``
    (name -> :class:`KernelInfo`, in metadata order).
    """

    def __init__(self) -> None:  # use from_bytes
        self.data = b""
        self.target = Target("gfx000")
        self.version = 0
        self.e_flags = 0
        self.elf_type = 0
        self.program_headers: list[Segment] = []
        self.segments: list[Segment] = []
        self.sections: list[Section] = []
        self.symbols: dict[str, Symbol] = {}
        self.relocations: list[Relocation] = []
        self.notes: list[Note] = []
        self.metadata: dict[str, Any] = {}
        self.kernels: dict[str, KernelInfo] = {}

    def __repr__(self) -> str:
        return (f"<CodeObject {self.target} v{self.version}, {len(self.kernels)} kernel(s): "
                f"{', '.join(self.kernels)}>")

    # -- entry points --------------------------------------------------------------------------

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> "CodeObject":
        """Parse an ELF code object. Bundles go through :func:`extract_for_target` first."""
        data = bytes(data)
        if data.startswith(BUNDLE_MAGIC) or data.startswith(CCOB_MAGIC):
            raise CodeObjectError(
                "this is a clang offload bundle, not an ELF code object; pick the entry for "
                "your agent with hsapy.codeobject.extract_for_target(data, 'gfx942')"
            )
        co = cls()
        co.data = data
        co._parse_header()
        co._parse_program_headers()
        co._parse_sections()
        co._parse_symbols()
        co._parse_relocations()
        co._parse_notes()
        co._parse_metadata()
        co._parse_kernels()
        return co

    @classmethod
    def from_file(cls, path: str, target: "Target | str | None" = None) -> "CodeObject":
        """Read ``path``; bundles need ``target`` (or hold exactly one AMDGPU entry)."""
        data = read_code_object_file(path)
        if is_bundle(data):
            if target is None:
                entries = [e for e in bundle_entries(data) if e.target is not None]
                if len(entries) != 1:
                    names = ", ".join(str(e.target) for e in entries) or "none"
                    raise CodeObjectError(
                        f"{path} is an offload bundle with AMDGPU entries for {names}; "
                        "name the target to pick one"
                    )
                return cls.from_bytes(entries[0].data)
            return cls.from_bytes(extract_for_target(data, target))
        return cls.from_bytes(data)

    # -- address helpers -----------------------------------------------------------------------

    def read_vaddr(self, vaddr: int, size: int, what: str = "data") -> bytes:
        """File bytes backing ``[vaddr, vaddr + size)`` (zero-filled in a segment's bss part)."""
        for seg in self.segments:
            if seg.vaddr <= vaddr and vaddr + size <= seg.vaddr + seg.memsz:
                start = vaddr - seg.vaddr
                in_file = max(0, min(size, seg.filesz - start))
                first = seg.offset + start
                chunk = self.data[first:first + in_file] if in_file else b""
                if len(chunk) != in_file:
                    raise CodeObjectError(
                        f"{what} at address {vaddr:#x} lies past the end of the file",
                                          seg.offset + start, f"{size} bytes of {what}")
                return chunk + bytes(size - in_file)
        raise CodeObjectError(
            f"{what} at address {vaddr:#x} (+{size}) is not inside any PT_LOAD segment", None,
        )

    @property
    def load_size(self) -> int:
        """Bytes of device memory needed to map every PT_LOAD segment (from vaddr 0)."""
        end = 0
        for seg in self.segments:
            end = max(end, seg.vaddr + seg.memsz)
        return end

    @property
    def load_align(self) -> int:
        """Largest PT_LOAD alignment (at least 4096)."""
        align = 4096
        for seg in self.segments:
            if seg.align > align:
                align = seg.align
        return align

    def kernel(self, name: str) -> KernelInfo:
        """The kernel ``name`` (``name.kd`` accepted), or CodeObjectError listing the kernels."""
        if name in self.kernels:
            return self.kernels[name]
        if name.endswith(".kd") and name[:-3] in self.kernels:
            return self.kernels[name[:-3]]
        available = ", ".join(self.kernels) or "none"
        raise CodeObjectError(
            f"no kernel named {name!r} in this code object (kernels: {available})")

    # -- parsing steps -------------------------------------------------------------------------

    def _parse_header(self) -> None:
        data = self.data
        if len(data) < 4 or data[:4] != ELF_MAGIC:
            raise CodeObjectError("not an ELF file", 0, "the ELF magic 7f 45 4c 46")
        hdr = _parse(_EHDR, _EHDR_SIZE, data, 0, "ELF header")
        if hdr.ei_class != 2:
            raise CodeObjectError(f"ELF class {hdr.ei_class}", 4, "ELFCLASS64 (2)")
        if hdr.ei_data != 1:
            raise CodeObjectError(f"ELF data encoding {hdr.ei_data}", 5, "little-endian (1)")
        if hdr.e_machine != EM_AMDGPU:
            raise CodeObjectError(f"e_machine {hdr.e_machine} is not AMDGPU", 0x12,
                                  "EM_AMDGPU (224)")
        if hdr.ei_osabi != ELFOSABI_AMDGPU_HSA:
            raise CodeObjectError(f"OS ABI {hdr.ei_osabi} is not AMDGPU HSA", 7,
                                  "ELFOSABI_AMDGPU_HSA (64); PAL/Mesa objects are not HSA "
                                  "code objects")
        version = ABI_VERSIONS.get(hdr.ei_abiversion)
        if version is None:
            old = _OLD_ABI_VERSIONS.get(hdr.ei_abiversion)
            if old is not None:
                raise CodeObjectError(
                    f"code object v{old} is not supported (hsapy reads v4, v5 and v6); "
                    "rebuild with "
                    "-mcode-object-version=5", 8, "EI_ABIVERSION 2, 3 or 4",
                )
            raise CodeObjectError(
                f"unsupported code object ABI version {hdr.ei_abiversion}", 8,
                "EI_ABIVERSION 2 (v4), 3 (v5) or 4 (v6)",
            )
        if hdr.e_type == ET_REL:
            raise CodeObjectError(
                "this is a relocatable object (.o), not a loadable code object; link it with "
                "`ld.lld -shared x.o -o x.hsaco`", 0x10, "ET_DYN (3)",
            )
        if hdr.e_type != ET_DYN:
            raise CodeObjectError(f"ELF type {hdr.e_type}", 0x10, "ET_DYN (3), a shared object")
        self.version = version
        self.e_flags = hdr.e_flags
        self.elf_type = hdr.e_type
        self.target = Target.from_e_flags(hdr.e_flags)
        self._hdr = hdr

    def _table_bounds(self, offset: int, count: int, entsize: int, minimum: int, what: str,
                      where: int) -> None:
        if count and entsize < minimum:
            raise CodeObjectError(f"{what} entry size {entsize}", where, f"at least {minimum}")
        end = offset + count * entsize
        if count and (offset <= 0 or end > len(self.data)):
            raise CodeObjectError(
                f"{what} table ({count} x {entsize} bytes at {offset:#x}) runs past the end of the "
                f"file ({len(self.data)} bytes)", where, f"a table inside the file",
            )

    def _parse_program_headers(self) -> None:
        hdr = self._hdr
        self._table_bounds(hdr.e_phoff, hdr.e_phnum, hdr.e_phentsize, _PHDR_SIZE,
                           "program header", 0x20)
        headers = []
        for i in range(hdr.e_phnum):
            off = hdr.e_phoff + i * hdr.e_phentsize
            ph = _parse(_PHDR, _PHDR_SIZE, self.data, off, f"program header {i}")
            seg = Segment(ph.p_type, ph.p_offset, ph.p_vaddr, ph.p_filesz, ph.p_memsz,
                          ph.p_flags, ph.p_align)
            if ph.p_type in (PT_LOAD, PT_NOTE, PT_DYNAMIC):
                if ph.p_offset + ph.p_filesz > len(self.data):
                    raise CodeObjectError(
                        f"segment {i} ({seg.type_name}) file range "
                        f"{ph.p_offset:#x}+{ph.p_filesz:#x} "
                        "runs past the end of the file", off + 8, "a range inside the file",
                    )
                if ph.p_type == PT_LOAD and ph.p_filesz > ph.p_memsz:
                    raise CodeObjectError(f"segment {i} has filesz > memsz", off + 32,
                                          "p_filesz <= p_memsz")
                if ph.p_type == PT_LOAD and ph.p_vaddr + ph.p_memsz > 1 << 40:
                    raise CodeObjectError(f"segment {i} ends at {ph.p_vaddr + ph.p_memsz:#x}",
                                          off + 16, "a load address below 1 TiB")
            headers.append(seg)
        self.program_headers = headers
        self.segments = [s for s in headers if s.type == PT_LOAD]

    def _parse_sections(self) -> None:
        hdr = self._hdr
        if hdr.e_shnum == 0:
            self.sections = []
            return
        self._table_bounds(hdr.e_shoff, hdr.e_shnum, hdr.e_shentsize, _SHDR_SIZE,
                           "section header", 0x28)
        raw = []
        for i in range(hdr.e_shnum):
            off = hdr.e_shoff + i * hdr.e_shentsize
            sh = _parse(_SHDR, _SHDR_SIZE, self.data, off, f"section header {i}")
            if sh.sh_type != SHT_NOBITS and sh.sh_offset + sh.sh_size > len(self.data):
                raise CodeObjectError(
                    f"section {i} ({sh.sh_offset:#x}+{sh.sh_size:#x}) runs past the end of "
                    "the file",
                    off + 0x18, "a range inside the file",
                )
            raw.append((off, sh))
        names = b""
        if hdr.e_shstrndx:
            if hdr.e_shstrndx >= len(raw):
                raise CodeObjectError(f"section name table index {hdr.e_shstrndx}", 0x3E,
                                      f"an index below e_shnum ({len(raw)})")
            strtab = raw[hdr.e_shstrndx][1]
            names = self.data[strtab.sh_offset:strtab.sh_offset + strtab.sh_size]
            names_offset = strtab.sh_offset
        sections = []
        for off, sh in raw:
            name = _cstring(names, sh.sh_name, names_offset, "section") if names else ""
            sections.append(Section(name, sh.sh_type, sh.sh_flags, sh.sh_addr, sh.sh_offset,
                                    sh.sh_size, sh.sh_link, sh.sh_info, sh.sh_addralign,
                                    sh.sh_entsize))
        self.sections = sections

    def _section_bytes(self, section: Section) -> bytes:
        if section.type == SHT_NOBITS:
            return b""
        return self.data[section.offset:section.offset + section.size]

    def _read_symbol_table(self, section: Section) -> list[tuple[str, Symbol]]:
        if section.link >= len(self.sections):
            raise CodeObjectError(f"symbol table {section.name} links to section {section.link}",
                                  section.offset, "a valid string table index")
        strtab = self.sections[section.link]
        strings = self._section_bytes(strtab)
        entsize = section.entsize or _SYM_SIZE
        if entsize < _SYM_SIZE:
            raise CodeObjectError(f"symbol entry size {entsize}", section.offset,
                                  f"at least {_SYM_SIZE}")
        out = []
        for i in range(section.size // entsize):
            off = section.offset + i * entsize
            sym = _parse(_SYM, _SYM_SIZE, self.data, off, f"symbol {i} of {section.name}")
            name = _cstring(strings, sym.st_name, strtab.offset, "symbol")
            out.append((name, Symbol(
                name=name,
                value=sym.st_value,
                size=sym.st_size,
                type=SYMBOL_TYPES.get(sym.st_info & 0xF, str(sym.st_info & 0xF)),
                binding=SYMBOL_BINDINGS.get(sym.st_info >> 4, str(sym.st_info >> 4)),
                section=sym.st_shndx,
                visibility=SYMBOL_VISIBILITIES[sym.st_other & 3],
            )))
        return out

    def _parse_symbols(self) -> None:
        self._symbol_tables: dict[int, list[tuple[str, Symbol]]] = {}
        symbols: dict[str, Symbol] = {}
        # .dynsym first: it is what the loader resolves; .symtab adds local names.
        ordered = sorted(
            (i for i, s in enumerate(self.sections) if s.type in (SHT_DYNSYM, SHT_SYMTAB)),
            key=lambda i: 0 if self.sections[i].type == SHT_DYNSYM else 1,
        )
        for index in ordered:
            table = self._read_symbol_table(self.sections[index])
            self._symbol_tables[index] = table
            for name, sym in table:
                if name and name not in symbols:
                    symbols[name] = sym
        self.symbols = symbols

    def _parse_relocations(self) -> None:
        relocations = []
        for section in self.sections:
            # Dynamic relocations only: a RELA section with a target section (sh_info) holds
            # static relocations kept by --emit-relocs, which loaders skip (ROCr does too).
            if section.type != SHT_RELA or section.info != 0:
                continue
            entsize = section.entsize or _RELA_SIZE
            if entsize < _RELA_SIZE:
                raise CodeObjectError(f"relocation entry size {entsize}", section.offset,
                                      f"at least {_RELA_SIZE}")
            table = self._symbol_tables.get(section.link)
            if table is None and section.link < len(self.sections) and section.link:
                linked = self.sections[section.link]
                if linked.type in (SHT_DYNSYM, SHT_SYMTAB):
                    table = self._read_symbol_table(linked)
            for i in range(section.size // entsize):
                off = section.offset + i * entsize
                rela = _parse(_RELA, _RELA_SIZE, self.data, off,
                              f"relocation {i} of {section.name}")
                sym_index = rela.r_info >> 32
                name, value = "", 0
                if sym_index:
                    if table is None or sym_index >= len(table):
                        raise CodeObjectError(
                            f"relocation {i} of {section.name} names symbol {sym_index}", off + 8,
                            "a symbol index inside the linked symbol table",
                        )
                    name, sym = table[sym_index]
                    value = sym.value
                relocations.append(Relocation(rela.r_offset, rela.r_info & 0xFFFFFFFF, name, value,
                                              rela.r_addend, sym_index))
        self.relocations = relocations

    def _iter_notes(self, start: int, size: int) -> Iterator[Note]:
        pos, end = start, start + size
        while pos + 12 <= end:
            header = _parse(_NOTE_HEADER, 12, self.data, pos, "note header")
            name_start = pos + 12
            desc_start = name_start + ((header.namesz + 3) & ~3)
            next_pos = desc_start + ((header.descsz + 3) & ~3)
            if desc_start + header.descsz > end:
                raise CodeObjectError(
                    f"note of {header.descsz} bytes runs past its section", pos,
                    f"a note inside {start:#x}..{end:#x}",
                )
            name = self.data[name_start:name_start + header.namesz].rstrip(b"\0")
            yield Note(name.decode("utf-8", errors="replace"), header.type,
                       self.data[desc_start:desc_start + header.descsz], pos)
            pos = next_pos

    def _parse_notes(self) -> None:
        notes: list[Note] = []
        ranges = [(s.offset, s.size) for s in self.sections if s.type == SHT_NOTE]
        if not ranges:
            ranges = [(p.offset, p.filesz) for p in self.program_headers if p.type == PT_NOTE]
        for start, size in ranges:
            notes.extend(self._iter_notes(start, size))
        self.notes = notes

    def _parse_metadata(self) -> None:
        self.metadata = {}
        self._metadata_offset = 0
        for note in self.notes:
            if note.name == "AMDGPU" and note.type == NT_AMDGPU_METADATA:
                try:
                    doc = msgpack.unpackb(note.desc, raw=False, strict_map_key=False)
                except Exception as exc:  # msgpack raises several unrelated types
                    raise CodeObjectError(
                        f"the NT_AMDGPU_METADATA note is not valid msgpack ({type(exc).__name__}: "
                        f"{exc})", note.offset, "a msgpack map",
                    ) from None
                if not isinstance(doc, dict):
                    raise CodeObjectError(f"the metadata note holds a {type(doc).__name__}",
                                          note.offset, "a msgpack map")
                self.metadata = doc
                self._metadata_offset = note.offset
                return

    def _parse_kernels(self) -> None:
        kernels: dict[str, KernelInfo] = {}
        where_offset = self._metadata_offset
        entries = _meta_get(self.metadata, "amdhsa.kernels", (list,), "amdhsa", where_offset, [])
        for index, raw in enumerate(entries):
            where = f"amdhsa.kernels[{index}]"
            if not isinstance(raw, dict):
                raise CodeObjectError(f"metadata {where} is {type(raw).__name__}", where_offset,
                                      "a map")
            name = _meta_get(raw, ".name", (str,), where, where_offset)
            symbol_name = _meta_get(raw, ".symbol", (str,), where, where_offset)
            where = f"kernel {name}"
            raw_args = _meta_get(raw, ".args", (list,), where, where_offset, [])
            args = tuple(_parse_arg(a, f"{where} .args[{i}]", where_offset)
                         for i, a in enumerate(raw_args))
            kernarg_size = _meta_int(raw, ".kernarg_segment_size", where, where_offset)
            for arg in args:
                if arg.offset + arg.size > kernarg_size:
                    raise CodeObjectError(
                        f"{where}: argument at {arg.offset}+{arg.size} ({arg.value_kind}) lies "
                        f"outside the {kernarg_size}-byte kernarg segment", where_offset,
                        "arguments inside .kernarg_segment_size",
                    )
            kernels[name] = self._kernel_info(
                name, symbol_name, raw, args, kernarg_size, where, where_offset)
        if not kernels and not self.metadata:
            # No metadata note (assembly without .amdgpu_metadata): kernels from `.kd` symbols.
            for symbol_name, sym in self.symbols.items():
                if symbol_name.endswith(".kd") and sym.type == "OBJECT" and sym.size == 64:
                    name = symbol_name[:-3]
                    kernels[name] = self._kernel_info(name, symbol_name, {}, (), None, name, 0)
        self.kernels = kernels

    def _kernel_info(self, name: str, symbol_name: str, raw: Mapping[str, Any],
                     args: tuple[ArgInfo, ...], kernarg_size: int | None, where: str,
                     where_offset: int) -> KernelInfo:
        symbol = self.symbols.get(symbol_name)
        if symbol is None:
            raise CodeObjectError(
                f"{where}: its descriptor symbol {symbol_name!r} is not in the symbol table",
                where_offset, f"a symbol {symbol_name}",
            )
        descriptor_bytes = self.read_vaddr(symbol.value, KERNEL_DESCRIPTOR_SIZE,
                                           f"kernel descriptor {symbol_name}")
        descriptor = KernelDescriptor.from_bytes(descriptor_bytes, self.target.name)
        entry = symbol.value + descriptor.kernel_code_entry_byte_offset
        if kernarg_size is None:
            kernarg_size = descriptor.kernarg_size
        wave = _meta_int(raw, ".wavefront_size", where, where_offset, descriptor.wavefront_size)
        return KernelInfo(
            name=name,
            symbol=symbol_name,
            descriptor=descriptor,
            args=args,
            kernarg_segment_size=kernarg_size,
            kernarg_segment_align=_meta_int(raw, ".kernarg_segment_align", where, where_offset, 8),
            group_segment_fixed_size=_meta_int(
                raw, ".group_segment_fixed_size", where, where_offset,
                descriptor.group_segment_fixed_size),
            private_segment_fixed_size=_meta_int(
                raw, ".private_segment_fixed_size", where, where_offset,
                descriptor.private_segment_fixed_size),
            wavefront_size=wave,
            sgpr_count=_meta_int(raw, ".sgpr_count", where, where_offset, 0),
            vgpr_count=_meta_int(raw, ".vgpr_count", where, where_offset, 0),
            agpr_count=_meta_int(raw, ".agpr_count", where, where_offset, 0),
            max_flat_workgroup_size=_meta_int(raw, ".max_flat_workgroup_size", where, where_offset,
                                              1024),
            uses_dynamic_stack=_meta_get(raw, ".uses_dynamic_stack", (bool,), where, where_offset,
                                         False),
            descriptor_vaddr=symbol.value,
            entry_vaddr=entry,
            metadata=raw,
            code_object_version=self.version,
            target=self.target,
        )

    # -- views -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able summary (what ``hsapy inspect --json`` prints)."""
        kernels = []
        for info in self.kernels.values():
            kernels.append({
                "name": info.name,
                "symbol": info.symbol,
                "descriptor_vaddr": info.descriptor_vaddr,
                "entry_vaddr": info.entry_vaddr,
                "kernarg_segment_size": info.kernarg_segment_size,
                "kernarg_segment_align": info.kernarg_segment_align,
                "group_segment_fixed_size": info.group_segment_fixed_size,
                "private_segment_fixed_size": info.private_segment_fixed_size,
                "wavefront_size": info.wavefront_size,
                "max_flat_workgroup_size": info.max_flat_workgroup_size,
                "uses_dynamic_stack": info.uses_dynamic_stack,
                "resources": {
                    "vgpr_count": info.vgpr_count,
                    "agpr_count": info.agpr_count,
                    "sgpr_count": info.sgpr_count,
                    "allocated_vgprs": info.descriptor.allocated_vgprs,
                    "allocated_sgprs": info.descriptor.allocated_sgprs,
                    "accum_offset": info.descriptor.accum_offset,
                    "lds_bytes": info.group_segment_fixed_size,
                    "scratch_bytes_per_workitem": info.private_segment_fixed_size,
                },
                "args": [a.to_dict() for a in info.args],
                "descriptor": info.descriptor.to_dict(),
            })
        return {
            "target": str(self.target),
            "target_xnack": self.target.xnack,
            "target_sramecc": self.target.sramecc,
            "code_object_version": self.version,
            "e_flags": self.e_flags,
            "segments": [
                {"vaddr": s.vaddr, "memsz": s.memsz, "filesz": s.filesz, "offset": s.offset,
                 "flags": s.flags_text.replace(" ", "")}
                for s in self.segments
            ],
            "relocations": [
                {"offset": r.offset, "type": r.type_name, "symbol": r.symbol_name,
                 "addend": r.addend}
                for r in self.relocations
            ],
            "kernels": kernels,
        }


# ---------------------------------------------------------------------------------------------
# Offload bundles


@dataclass(frozen=True)
class BundleEntry:
    """One entry of a clang offload bundle: id, its AMDGPU target (None for host), bytes."""

    id: str
    kind: str
    triple: str
    target: Target | None
    offset: int
    data: bytes


def is_bundle(data: bytes) -> bool:
    """True for a clang offload bundle, compressed (CCOB) or not."""
    return bytes(data[:24]) == BUNDLE_MAGIC or bytes(data[:4]) == CCOB_MAGIC


def _parse_bundle_id(entry_id: str) -> tuple[str, str, Target | None]:
    # "hipv4-amdgcn-amd-amdhsa--gfx942:xnack+", "hip-amdgcn-amd-amdhsa-gfx906",
    # "host-x86_64-unknown-linux--" (clang OffloadBundler target ids).
    kind, _, rest = entry_id.partition("-")
    if not rest.startswith("amdgcn-amd-amdhsa"):
        return kind, rest, None
    target_text = rest[len("amdgcn-amd-amdhsa"):].lstrip("-")
    if not target_text:
        return kind, "amdgcn-amd-amdhsa", None
    try:
        return kind, "amdgcn-amd-amdhsa", Target.parse(target_text)
    except HsapyValueError:
        return kind, "amdgcn-amd-amdhsa", None


_CCOB_METHODS = {0: "zlib", 1: "zstd"}


def _decompress_ccob(data: bytes) -> bytes:
    """Decompress a CCOB bundle (versions 1, 2, 3 of clang's compressed offload bundle)."""
    if len(data) < 8:
        raise CodeObjectError("truncated compressed bundle header", 0, "at least 8 bytes")
    version, method = struct.unpack_from("<HH", data, 4)
    # v1: u32 uncompressed size, u64 hash; v2: u32 total size, u32 uncompressed, u64 hash;
    # v3: u64 total size, u64 uncompressed, u64 hash.
    layouts = {1: ("<IQ", 12), 2: ("<IIQ", 16), 3: ("<QQQ", 24)}
    if version not in layouts:
        raise CodeObjectError(f"compressed bundle version {version}", 4, "version 1, 2 or 3")
    fmt, size = layouts[version]
    if len(data) < 8 + size:
        raise CodeObjectError("truncated compressed bundle header", 8, f"{size} more bytes")
    fields = struct.unpack_from(fmt, data, 8)
    uncompressed = fields[0] if version == 1 else fields[1]
    payload = data[8 + size:]
    if version >= 2 and fields[0] != len(data):
        raise CodeObjectError(
            f"compressed bundle says it is {fields[0]} bytes but {len(data)} were given", 8,
            "the whole file",
        )
    if uncompressed > 1 << 31:
        raise CodeObjectError(f"compressed bundle claims {uncompressed} bytes", 8,
                              "an uncompressed size below 2 GiB")
    method_name = _CCOB_METHODS.get(method)
    if method_name == "zlib":
        try:
            out = zlib.decompress(payload)
        except zlib.error as exc:
            raise CodeObjectError(f"corrupt zlib data in compressed bundle ({exc})", 8 + size,
                                  "a zlib stream") from None
    elif method_name == "zstd":
        try:
            import zstandard
        except ImportError:
            raise CodeObjectError(
                "this is a zstd-compressed offload bundle (CCOB): install hsapy's zstd extra "
                "(pip install 'hsapy[zstd]') to read it, or build with --no-offload-compress"
            ) from None
        try:
            out = zstandard.ZstdDecompressor().decompress(payload, max_output_size=uncompressed)
        except zstandard.ZstdError as exc:
            raise CodeObjectError(f"corrupt zstd data in compressed bundle ({exc})", 8 + size,
                                  "a zstd frame") from None
    else:
        raise CodeObjectError(f"compression method {method}", 6, "0 (zlib) or 1 (zstd)")
    if len(out) != uncompressed:
        raise CodeObjectError(
            f"compressed bundle decompressed to {len(out)} bytes, header says {uncompressed}",
            8, "matching sizes",
        )
    return out


def bundle_entries(data: bytes) -> list[BundleEntry]:
    """Every entry of a (possibly compressed) clang offload bundle."""
    data = bytes(data)
    if data[:4] == CCOB_MAGIC:
        data = _decompress_ccob(data)
    if data[:24] != BUNDLE_MAGIC:
        raise CodeObjectError("not a clang offload bundle", 0, "__CLANG_OFFLOAD_BUNDLE__")
    if len(data) < 32:
        raise CodeObjectError("truncated offload bundle header", 24, "an entry count")
    (count,) = struct.unpack_from("<Q", data, 24)
    if count > 4096:
        raise CodeObjectError(f"offload bundle claims {count} entries", 24, "at most 4096")
    entries = []
    pos = 32
    for i in range(count):
        if pos + 24 > len(data):
            raise CodeObjectError(f"truncated offload bundle entry {i}", pos, "24 bytes of header")
        offset, size, id_len = struct.unpack_from("<QQQ", data, pos)
        id_start = pos + 24
        if id_start + id_len > len(data):
            raise CodeObjectError(f"bundle entry {i} id runs past the end", pos + 16,
                                  "an id inside the file")
        entry_id = data[id_start:id_start + id_len].decode("utf-8", errors="replace")
        if offset + size > len(data):
            raise CodeObjectError(f"bundle entry {i} ({entry_id}) runs past the end of the file",
                                  pos, "an entry inside the file")
        kind, triple, target = _parse_bundle_id(entry_id)
        entries.append(BundleEntry(entry_id, kind, triple, target, offset,
                                   data[offset:offset + size]))
        pos = id_start + id_len
    return entries


def extract_for_target(data: bytes | bytearray | memoryview, target: Target | str) -> bytes:
    """The ELF code object in ``data`` for ``target`` (an agent's target or name).

    ``data`` may be a plain ELF (checked against the target), a clang offload bundle or a
    compressed bundle. Bundle entries are picked by ROCr's compatibility rule: same processor,
    xnack/sramecc "any" matches either setting, explicit settings must agree; the most
    specific match wins. A mismatch raises :class:`TargetMismatchError` naming both targets.
    """
    data = bytes(data)
    agent = _as_target(target)
    if not is_bundle(data):
        co_target = _elf_target(data)
        if not agent.accepts(co_target):
            raise TargetMismatchError(str(co_target), str(agent))
        return data
    entries = [e for e in bundle_entries(data) if e.target is not None]
    compatible = [e for e in entries if agent.accepts(e.target)]
    if not compatible:
        found = ", ".join(str(e.target) for e in entries) or "no AMDGPU entries"
        raise TargetMismatchError(found, str(agent), " (offload bundle)")
    best = max(compatible, key=lambda e: agent.match_score(e.target))
    elf_target = _elf_target(best.data)
    if not agent.accepts(elf_target):
        raise TargetMismatchError(str(elf_target), str(agent), f" (bundle entry {best.id})")
    return best.data


def _elf_target(data: bytes) -> Target:
    """Target of an ELF code object from its header alone."""
    if len(data) < _EHDR_SIZE or data[:4] != ELF_MAGIC:
        raise CodeObjectError("not an ELF code object or offload bundle", 0,
                              "ELF magic 7f 45 4c 46, __CLANG_OFFLOAD_BUNDLE__ or CCOB")
    (e_machine,) = struct.unpack_from("<H", data, 0x12)
    if e_machine != EM_AMDGPU:
        raise CodeObjectError(f"e_machine {e_machine} is not AMDGPU", 0x12, "EM_AMDGPU (224)")
    (e_flags,) = struct.unpack_from("<I", data, 0x30)
    return Target.from_e_flags(e_flags)
