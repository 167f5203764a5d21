"""The 64-byte kernel descriptor and its bitfields (LLVM AMDGPUUsage, "Kernel Descriptor",
"compute_pgm_rsrc1/2/3", "Kernel Code Properties")."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import construct as cs

from hsapy._checks import check_int
from hsapy.codeobject.elf import CodeObjectError, input_bytes
from hsapy.codeobject.targets import target_family
from hsapy.errors import HsapyValueError

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
    register: str
    value: int
    fields: tuple[BitField, ...]
    _values: dict[str, int]

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
                   offset: int = 0) -> KernelDescriptor:
        """Decode 64 descriptor bytes; ``target_name`` selects the per-family bitfield tables."""
        data = input_bytes(data, "KernelDescriptor.from_bytes")
        offset = check_int(offset, "KernelDescriptor.from_bytes: offset", 0, len(data))
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
