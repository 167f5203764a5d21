"""The ELF container of a code object: ELF64 structures, constants, and the segments,
sections, symbols, relocations and notes ``CodeObject`` is made of (System V gABI; LLVM
AMDGPUUsage "ELF Code Object"). Every malformed input raises :class:`CodeObjectError`."""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import construct as cs

from hsapy.errors import HsapyTypeError, HsapyValueError

# The largest file read as a code object or offload bundle (bundles of many targets reach
# hundreds of megabytes; a larger file is something else).
MAX_CODE_OBJECT_FILE_BYTES = 1 << 30


def read_code_object_file(path: Any) -> bytes:
    """The bytes of a code object file: a regular file of at most MAX_CODE_OBJECT_FILE_BYTES.
    Anything else -- a device such as /dev/zero, a pipe, a directory, a huge file -- raises
    CodeObjectError before a byte is read; a file that cannot be opened raises
    CodeObjectFileError (a CodeObjectError that is also an OSError); a path that is not a str,
    bytes or os.PathLike raises HsapyTypeError."""
    import os

    if not isinstance(path, (str, bytes, os.PathLike)):
        # (an int would be taken by open() as a file descriptor)
        raise HsapyTypeError(f"a code object file is named by a path (str or pathlib.Path), "
                             f"not {type(path).__name__} {path!r:.40}")
    try:
        data = _read_regular_file(path)
    except OSError as exc:
        raise CodeObjectFileError(path, exc) from None
    return data


def _read_regular_file(path: Any) -> bytes:
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


class CodeObjectFileError(CodeObjectError, OSError):
    """A code object file that cannot be read (missing, unreadable): a CodeObjectError that is
    also the OSError it stands for (``errno``, ``strerror`` and ``filename`` are its)."""

    def __init__(self, path: Any, cause: OSError) -> None:
        import os

        super().__init__(f"cannot read code object file {os.fsdecode(path)}: "
                         f"{cause.strerror or cause}")
        self.errno, self.strerror, self.filename = cause.errno, cause.strerror, path

    __str__ = Exception.__str__      # the message above, not OSError's "[Errno n] ..."


def input_bytes(data: Any, what: str) -> bytes:
    """The bytes of a code object or bundle given as bytes, bytearray or memoryview, else a
    typed error: ``bytes(n)`` of an int would be n zero bytes, not a code object."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    hint = ("; read a file with hsapy.codeobject.read_code_object_file(path)"
            if isinstance(data, str) else "")
    raise HsapyTypeError(f"{what} takes the bytes of a code object (bytes, bytearray or "
                         f"memoryview), not {type(data).__name__}{hint}")

# EI_ABIVERSION -> code object version (ELFABIVERSION_AMDGPU_HSA_V4..V6).
ABI_VERSIONS: dict[int, int] = {2: 4, 3: 5, 4: 6}
OLD_ABI_VERSIONS = {0: 2, 1: 3}
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

EHDR = cs.Struct(
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
EHDR_SIZE = 64

PHDR = cs.Struct(
    "p_type" / cs.Int32ul,
    "p_flags" / cs.Int32ul,
    "p_offset" / cs.Int64ul,
    "p_vaddr" / cs.Int64ul,
    "p_paddr" / cs.Int64ul,
    "p_filesz" / cs.Int64ul,
    "p_memsz" / cs.Int64ul,
    "p_align" / cs.Int64ul,
).compile()
PHDR_SIZE = 56

SHDR = cs.Struct(
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
SHDR_SIZE = 64

SYM = cs.Struct(
    "st_name" / cs.Int32ul,
    "st_info" / cs.Int8ul,
    "st_other" / cs.Int8ul,
    "st_shndx" / cs.Int16ul,
    "st_value" / cs.Int64ul,
    "st_size" / cs.Int64ul,
).compile()
SYM_SIZE = 24

RELA = cs.Struct(
    "r_offset" / cs.Int64ul,
    "r_info" / cs.Int64ul,
    "r_addend" / cs.Int64sl,
).compile()
RELA_SIZE = 24

NOTE_HEADER = cs.Struct(
    "namesz" / cs.Int32ul,
    "descsz" / cs.Int32ul,
    "type" / cs.Int32ul,
).compile()

def parse_struct(compiled: Any, size: int, data: bytes, offset: int, what: str) -> Any:
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


def cstring(table: bytes, index: int, table_offset: int, what: str) -> str:
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
