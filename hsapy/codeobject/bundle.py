"""Clang offload bundles (``__CLANG_OFFLOAD_BUNDLE__``) and compressed bundles (``CCOB``):
their entries, and the ELF of one target (clang's OffloadBundler binary format, checked
against ``clang-19 --offload-compress`` output)."""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from hsapy.codeobject.elf import (
    EHDR_SIZE,
    ELF_MAGIC,
    EM_AMDGPU,
    CodeObjectError,
    input_bytes,
)
from hsapy.codeobject.targets import Target, TargetMismatchError, as_target
from hsapy.errors import HsapyValueError

# Offload bundle header (clang OffloadBundler, binary format).
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"



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
    data = input_bytes(data, "is_bundle")
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
    data = input_bytes(data, "bundle_entries")
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
    data = input_bytes(data, "extract_for_target")
    agent = as_target(target)
    if not is_bundle(data):
        co_target = _elf_target(data)
        if not agent.accepts(co_target):
            raise TargetMismatchError(str(co_target), str(agent))
        return data
    entries = [(e, e.target) for e in bundle_entries(data) if e.target is not None]
    compatible = [(e, entry_target) for e, entry_target in entries
                  if agent.accepts(entry_target)]
    if not compatible:
        found = ", ".join(str(entry_target) for _, entry_target in entries) or "no AMDGPU entries"
        raise TargetMismatchError(found, str(agent), " (offload bundle)")
    best, _ = max(compatible, key=lambda pair: agent.match_score(pair[1]))
    elf_target = _elf_target(best.data)
    if not agent.accepts(elf_target):
        raise TargetMismatchError(str(elf_target), str(agent), f" (bundle entry {best.id})")
    return best.data


def _elf_target(data: bytes) -> Target:
    """Target of an ELF code object from its header alone."""
    if len(data) < EHDR_SIZE or data[:4] != ELF_MAGIC:
        raise CodeObjectError("not an ELF code object or offload bundle", 0,
                              "ELF magic 7f 45 4c 46, __CLANG_OFFLOAD_BUNDLE__ or CCOB")
    (e_machine,) = struct.unpack_from("<H", data, 0x12)
    if e_machine != EM_AMDGPU:
        raise CodeObjectError(f"e_machine {e_machine} is not AMDGPU", 0x12, "EM_AMDGPU (224)")
    (e_flags,) = struct.unpack_from("<I", data, 0x30)
    return Target.from_e_flags(e_flags)
