"""Occupancy: how many waves of a kernel one compute unit holds at once, and what limits it.

Computed from the code object (the kernel descriptor and metadata: VGPRs, AGPRs, SGPRs, LDS,
wave size, WGP mode) and the dispatch (workgroup size, dynamic LDS) against the target's
published per-SIMD and per-CU limits -- nothing here is simulated, so the figures hold on the
real GPU as well (``--backend rocr``). The model is the one LLVM's AMDGPU backend uses to
report a kernel's occupancy (llvm/lib/Target/AMDGPU/Utils/AMDGPUBaseInfo.cpp:
getNumWavesPerEUWithNumVGPRs, getMaxWavesPerEU, getOccupancyWithNumSGPRs, getEUsPerCU,
getMaxWorkGroupsPerCU, getLocalMemorySize), with the register-file sizes the ISA guides give:

- CDNA3 (gfx942) and CDNA2 (gfx90a): a CU has 4 SIMDs; each SIMD holds at most 8 waves and a
  unified file of 512 VGPRs per lane that a wave's VGPRs and AGPRs share, allocated in
  granules of 8 (the AGPRs start at the descriptor's accum_offset); SGPRs: 800 per SIMD, which
  allow 8 waves up to 100 SGPRs per wave and 7 beyond (AMD "CDNA 3 Instruction Set
  Architecture", "Register resources"; AMD Instinct MI300 documentation, "Occupancy"). LDS: 64
  KiB per CU, allocated in 512-byte blocks (LLVM AMDGPUUsage, COMPUTE_PGM_RSRC2.LDS_SIZE).
- RDNA3 (gfx1100) and RDNA4 (gfx1201): a CU has 2 SIMDs (a WGP 4); each SIMD holds at most 16
  waves and 1536 VGPRs per lane in wave32 (768 in wave64: a wave64 register is twice as wide),
  allocated in granules of 24 (12 in wave64); SGPRs never limit (AMD "RDNA4 Instruction Set
  Architecture", "VGPR allocation"; LLVM Feature1_5xVGPRs). LDS: 64 KiB per CU, 128 KiB per WGP,
  allocated in 1024-byte blocks. A kernel whose descriptor sets WGP_MODE (rsrc1 bit 29, clang's
  default on gfx10+) runs its workgroups on a WGP: occupancy is then per WGP (4 SIMDs, 128 KiB).
- A workgroup of more than one wave needs a barrier slot: 16 per CU, 32 per WGP.

Waves are counted per "unit" (a CU, or a WGP in WGP mode) and per SIMD; resident workgroups
come in whole workgroups, so the unit's wave slots under each limit are divided by the waves of
one workgroup (a pooled model: the hardware spreads a workgroup's waves over the unit's SIMDs).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hsapy._checks import check_flag, check_int
from hsapy.errors import HsapyTypeError, HsapyValueError

# the largest count (registers, bytes, work-items) a kernel resource takes
_MAX_COUNT = (1 << 32) - 1

__all__ = ["ComputeLimits", "Occupancy", "LIMITS", "limits_for", "occupancy",
           "kernel_occupancy"]

KIB = 1024


@dataclass(frozen=True)
class ComputeLimits:
    """Per-target limits occupancy depends on (see the module doc for their sources)."""

    processor: str
    simds_per_cu: int               # SIMDs of one CU (a WGP has twice as many on gfx10+)
    max_waves_per_simd: int
    vgprs_per_simd: dict[int, int]  # wave size -> VGPRs per lane of one SIMD's register file
    vgpr_granule: dict[int, int]    # wave size -> allocation granule
    max_vgprs_per_wave: int         # addressable (VGPRs + AGPRs on gfx90a/gfx942)
    sgpr_limits: tuple[tuple[int, int], ...]   # (above this many SGPRs, waves per SIMD); () none
    lds_per_cu: int
    lds_granule: int
    has_wgp: bool                   # gfx10+: two CUs form a work-group processor
    barriers_per_cu: int = 16
    unified_agprs: bool = False

    def unit_simds(self, wgp_mode: bool) -> int:
        """SIMDs of the unit a workgroup runs on (a CU, or a WGP in WGP mode)."""
        return self.simds_per_cu * (2 if wgp_mode and self.has_wgp else 1)

    def unit_lds(self, wgp_mode: bool) -> int:
        """LDS bytes of that unit."""
        return self.lds_per_cu * (2 if wgp_mode and self.has_wgp else 1)


_CDNA: dict[str, Any] = dict(
    simds_per_cu=4, max_waves_per_simd=8, vgprs_per_simd={64: 512}, vgpr_granule={64: 8},
    max_vgprs_per_wave=512, sgpr_limits=((100, 7),), lds_per_cu=64 * KIB, lds_granule=512,
    has_wgp=False, unified_agprs=True)
_RDNA_1_5X: dict[str, Any] = dict(
    simds_per_cu=2, max_waves_per_simd=16, vgprs_per_simd={32: 1536, 64: 768},
    vgpr_granule={32: 24, 64: 12}, max_vgprs_per_wave=256, sgpr_limits=(),
    lds_per_cu=64 * KIB, lds_granule=1024, has_wgp=True)
_RDNA_1X: dict[str, Any] = dict(_RDNA_1_5X, vgprs_per_simd={32: 1024, 64: 512},
                                vgpr_granule={32: 16, 64: 8})

LIMITS: dict[str, ComputeLimits] = {
    "gfx90a": ComputeLimits("gfx90a", **_CDNA),
    "gfx940": ComputeLimits("gfx940", **_CDNA),
    "gfx941": ComputeLimits("gfx941", **_CDNA),
    "gfx942": ComputeLimits("gfx942", **_CDNA),
    "gfx1100": ComputeLimits("gfx1100", **_RDNA_1_5X),
    "gfx1101": ComputeLimits("gfx1101", **_RDNA_1_5X),
    "gfx1102": ComputeLimits("gfx1102", **_RDNA_1X),
    "gfx1200": ComputeLimits("gfx1200", **_RDNA_1_5X),
    "gfx1201": ComputeLimits("gfx1201", **_RDNA_1_5X),
}


def limits_for(target: str) -> ComputeLimits:
    """The limits of processor ``target`` ("gfx942", "gfx942:sramecc+:xnack-" accepted)."""
    name = str(target).split(":")[0]
    limits = LIMITS.get(name)
    if limits is None:
        raise HsapyValueError(f"no occupancy limits known for {target!r}; known: "
                              f"{', '.join(LIMITS)}")
    return limits


@dataclass(frozen=True)
class Occupancy:
    """Resident waves of one kernel configuration, and why not more.

    ``waves_per_unit`` waves (``workgroups_per_unit`` whole workgroups) fit on one ``unit``
    ("CU", or "WGP" in WGP mode) of ``simds`` SIMDs; ``waves_per_simd`` is their average per
    SIMD and ``max_waves_per_simd`` the hardware's ceiling. ``limits`` gives, per resource, the
    workgroups per unit it alone would allow; ``limiting`` names the resources that reach the
    minimum. ``vgprs_allocated`` etc. are the per-wave allocations the limits were computed
    from."""

    target: str
    wave_size: int
    unit: str
    simds: int
    waves_per_workgroup: int
    workgroups_per_unit: int
    waves_per_unit: int
    max_waves_per_simd: int
    limits: dict[str, int]
    limiting: tuple[str, ...]
    vgprs_allocated: int
    sgprs: int
    lds_allocated: int
    notes: tuple[str, ...] = field(default=())

    @property
    def waves_per_simd(self) -> float:
        """Average resident waves per SIMD."""
        return self.waves_per_unit / self.simds

    @property
    def fraction(self) -> float:
        """Resident waves over the most the unit's SIMDs can hold."""
        return self.waves_per_unit / (self.max_waves_per_simd * self.simds)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"target": self.target, "wave_size": self.wave_size, "unit": self.unit,
                "simds": self.simds, "waves_per_workgroup": self.waves_per_workgroup,
                "workgroups_per_unit": self.workgroups_per_unit,
                "waves_per_unit": self.waves_per_unit,
                "waves_per_simd": round(self.waves_per_simd, 3),
                "max_waves_per_simd": self.max_waves_per_simd,
                "fraction": round(self.fraction, 4), "limits": dict(self.limits),
                "limiting": list(self.limiting), "vgprs_allocated": self.vgprs_allocated,
                "sgprs": self.sgprs, "lds_allocated": self.lds_allocated,
                "notes": list(self.notes)}


def _align(value: int, granule: int) -> int:
    return -(-max(value, 0) // granule) * granule


def occupancy(target: str, *, wave_size: int, workgroup_size: int, vgprs: int, agprs: int = 0,
              accum_offset: int | None = None, sgprs: int = 0, lds_bytes: int = 0,
              wgp_mode: bool = False) -> Occupancy:
    """The occupancy of a kernel with these resources on ``target`` (see the module doc).

    ``vgprs``/``agprs``/``sgprs`` are per wave (metadata .vgpr_count, .agpr_count,
    .sgpr_count); ``lds_bytes`` the group segment of one workgroup (static + dynamic);
    ``workgroup_size`` in work-items; ``accum_offset`` the first AGPR (gfx90a/gfx942, from
    the descriptor; default: VGPRs rounded up to 4)."""
    limits = limits_for(target)
    wave_size = check_int(wave_size, "occupancy: wave_size", 1, 1 << 16)
    if wave_size not in limits.vgprs_per_simd:
        raise HsapyValueError(f"{limits.processor} runs no wave{wave_size} waves")
    # resources are counts: a float, a bool or nan would be computed with, not refused
    workgroup_size = check_int(workgroup_size, "occupancy: workgroup_size", 1, _MAX_COUNT)
    vgprs = check_int(vgprs, "occupancy: vgprs", 0, _MAX_COUNT)
    agprs = check_int(agprs, "occupancy: agprs", 0, _MAX_COUNT)
    sgprs = check_int(sgprs, "occupancy: sgprs", 0, _MAX_COUNT)
    lds_bytes = check_int(lds_bytes, "occupancy: lds_bytes", 0, _MAX_COUNT)
    if accum_offset is not None:
        accum_offset = check_int(accum_offset, "occupancy: accum_offset", 0, _MAX_COUNT)
    wgp_mode = check_flag(wgp_mode, "occupancy: wgp_mode")
    notes: list[str] = []
    wgp = bool(wgp_mode and limits.has_wgp)
    simds = limits.unit_simds(wgp)
    waves_per_wg = -(-workgroup_size // wave_size)
    regs = max(vgprs, 1)
    if limits.unified_agprs and agprs:
        first_agpr = accum_offset if accum_offset else _align(vgprs, 4)
        regs = first_agpr + agprs
    if regs > limits.max_vgprs_per_wave:
        notes.append(f"{regs} registers per wave exceed the {limits.max_vgprs_per_wave} a wave "
                     "can address")
    granule = limits.vgpr_granule[wave_size]
    allocated = _align(regs, granule)
    max_waves = limits.max_waves_per_simd
    by_vgpr = min(max(limits.vgprs_per_simd[wave_size] // allocated, 1), max_waves)
    by_sgpr = max_waves
    for most, waves in limits.sgpr_limits:
        if sgprs > most:
            by_sgpr = min(by_sgpr, waves)
    lds_allocated = _align(lds_bytes, limits.lds_granule)
    unit_lds = limits.unit_lds(wgp)
    slots = max_waves * simds
    per_unit = {
        "waves": slots // waves_per_wg,
        "vgprs": by_vgpr * simds // waves_per_wg,
        "sgprs": by_sgpr * simds // waves_per_wg,
        "lds": unit_lds // lds_allocated if lds_allocated else slots,
    }
    if waves_per_wg > 1:
        per_unit["barriers"] = limits.barriers_per_cu * (2 if wgp else 1)
    if lds_allocated > unit_lds:
        notes.append(f"the workgroup's {lds_bytes} bytes of LDS exceed the {unit_lds} a "
                     f"{'WGP' if wgp else 'CU'} has: the dispatch cannot run")
    best = min(per_unit.values())
    limiting = tuple(name for name, value in per_unit.items() if value == best)
    return Occupancy(limits.processor, wave_size, "WGP" if wgp else "CU", simds, waves_per_wg,
                     best, best * waves_per_wg, max_waves, per_unit, limiting, allocated,
                     sgprs, lds_allocated, tuple(notes))


def kernel_occupancy(info: Any, target: str, workgroup_size: int,
                     group_segment_size: int | None = None) -> Occupancy:
    """The occupancy of kernel ``info`` (hsapy.codeobject.KernelInfo) dispatched with
    ``workgroup_size`` work-items per workgroup and ``group_segment_size`` bytes of LDS per
    workgroup (static + dynamic; default the kernel's static size)."""
    from hsapy.codeobject import KernelInfo

    if not isinstance(info, KernelInfo):
        raise HsapyTypeError(f"kernel_occupancy: info is a KernelInfo (kernel.info, "
                             f"code_object.kernel(name)), not {type(info).__name__}")
    if group_segment_size is not None:
        group_segment_size = check_int(group_segment_size, "kernel_occupancy: "
                                       "group_segment_size", 0, _MAX_COUNT)
    kd = info.descriptor
    wave_size = int(info.wavefront_size or kd.wavefront_size)
    rsrc1 = kd.compute_pgm_rsrc1
    wgp_mode = bool(rsrc1.get("wgp_mode", 0)) if hasattr(rsrc1, "get") else False
    vgprs = int(info.vgpr_count) if info.vgpr_count else kd.allocated_vgprs
    lds = info.group_segment_fixed_size if group_segment_size is None else group_segment_size
    return occupancy(target, wave_size=wave_size, workgroup_size=workgroup_size, vgprs=vgprs,
                     agprs=int(info.agpr_count or 0), accum_offset=kd.accum_offset,
                     sgprs=int(info.sgpr_count or 0), lds_bytes=int(lds), wgp_mode=wgp_mode)
