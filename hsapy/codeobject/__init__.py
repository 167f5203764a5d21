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

from hsapy.codeobject.code_object import (
    ArgInfo,
    BitField,
    Bitfields,
    BundleEntry,
    CodeObject,
    CodeObjectError,
    KERNEL_DESCRIPTOR_SIZE,
    KernelDescriptor,
    KernelInfo,
    MACHINES,
    MAX_CODE_OBJECT_FILE_BYTES,
    Note,
    RELOCATION_TYPES,
    Relocation,
    Section,
    Segment,
    Symbol,
    Target,
    TargetMismatchError,
    bundle_entries,
    extract_for_target,
    is_bundle,
    max_scratch_per_wave,
    read_code_object_file,
    target_family,
)

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
    "max_scratch_per_wave",
    "read_code_object_file",
    "KERNEL_DESCRIPTOR_SIZE",
    "MAX_CODE_OBJECT_FILE_BYTES",
    "target_family",
]
