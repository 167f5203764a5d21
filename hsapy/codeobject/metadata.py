"""Kernel metadata of the NT_AMDGPU_METADATA note (LLVM AMDGPUUsage, "Code Object V3+
Metadata"): each kernel's :class:`KernelInfo` and its arguments' :class:`ArgInfo`."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hsapy.codeobject.descriptor import KernelDescriptor
from hsapy.codeobject.elf import CodeObjectError
from hsapy.codeobject.targets import Target


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


def meta_get(mapping: Mapping[str, Any], key: str, kinds: tuple[type, ...], where: str,
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


def meta_int(mapping: Mapping[str, Any], key: str, where: str, offset: int,
              default: Any = ...) -> int:
    value = meta_get(mapping, key, (int,), where, offset, default)
    if value is not None and not (0 <= value < 1 << 64):
        raise CodeObjectError(f"metadata {where}.{key} = {value} is out of range", offset,
                              "a non-negative 64-bit integer")
    return value


def parse_arg(raw: Any, where: str, offset: int) -> ArgInfo:
    if not isinstance(raw, dict):
        raise CodeObjectError(f"metadata {where} is {type(raw).__name__}", offset, "a map")
    strings: dict[str, Any] = {}
    for key in (".address_space", ".name", ".type_name", ".access", ".actual_access",
                ".value_type"):
        strings[key] = meta_get(raw, key, (str,), where, offset, None)
    pointee_align = meta_int(raw, ".pointee_align", where, offset, None)
    flags = {key: meta_get(raw, key, (bool,), where, offset, False)
             for key in (".is_const", ".is_restrict", ".is_volatile")}
    return ArgInfo(
        offset=meta_int(raw, ".offset", where, offset),
        size=meta_int(raw, ".size", where, offset),
        value_kind=meta_get(raw, ".value_kind", (str,), where, offset),
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
