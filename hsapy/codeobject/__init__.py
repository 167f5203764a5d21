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

The package is split by job: ``elf`` (the ELF container: structures, segments, sections,
symbols, relocations, notes), ``targets`` (processors, generic targets, :class:`Target`),
``descriptor`` (the kernel descriptor and its bitfields), ``metadata`` (kernel and argument
metadata from the msgpack note), ``bundle`` (offload bundles) and ``code_object``
(:class:`CodeObject`, which puts them together). Import from ``hsapy.codeobject``.
"""
from __future__ import annotations

from hsapy.codeobject.bundle import (
    BundleEntry,
    bundle_entries,
    extract_for_target,
    is_bundle,
)
from hsapy.codeobject.code_object import CodeObject
from hsapy.codeobject.descriptor import (
    KERNEL_DESCRIPTOR_SIZE,
    BitField,
    Bitfields,
    KernelDescriptor,
)
from hsapy.codeobject.elf import (
    MAX_CODE_OBJECT_FILE_BYTES,
    RELOCATION_TYPES,
    CodeObjectError,
    CodeObjectFileError,
    Note,
    Relocation,
    Section,
    Segment,
    Symbol,
    read_code_object_file,
)
from hsapy.codeobject.metadata import ArgInfo, KernelInfo
from hsapy.codeobject.targets import (
    MACHINES,
    Target,
    TargetMismatchError,
    max_scratch_per_wave,
    target_family,
)

__all__ = [
    "CodeObjectError",
    "CodeObjectFileError",
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
    "max_scratch_per_wave",
    "read_code_object_file",
    "KERNEL_DESCRIPTOR_SIZE",
    "MAX_CODE_OBJECT_FILE_BYTES",
    "target_family",
]
