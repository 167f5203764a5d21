"""Target profiles: the properties the simulator's GPU agents report.

Each profile is data, not logic. Numbers come from public sources:

* LLVM AMDGPUUsage, "Processors" table: gfx name, family, wavefront size, xnack/sramecc support,
  ELF e_flags machine values (also in /usr/include/hsa/amd_hsa_elf.h, EF_AMDGPU_MACH_*).
* AMD product pages / spec sheets: compute units, peak engine clock, memory size and bus width,
  L2 / Infinity Cache sizes (MI300X: amd.com/en/products/accelerators/instinct/mi300/mi300x;
  RX 9070 XT: amd.com/en/products/graphics/desktops/radeon/9000-series/amd-radeon-rx-9070xt;
  RX 7900 XTX and MI210 likewise).
* rocminfo output published for these cards: chip ids, SIMDs per CU, waves per CU, shader
  engines, queue limits, workgroup limits (which are the same for every GCN/RDNA agent in ROCr).

``HSAPY_SIM_TARGETS=gfx942,gfx1201`` (or ``SimLib(targets=[...])``) picks the GPU agents.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = [
    "GpuProfile",
    "CpuProfile",
    "GPU_PROFILES",
    "CPU_PROFILE",
    "DEFAULT_TARGETS",
    "resolve_targets",
]

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


@dataclass(frozen=True)
class GpuProfile:
    """Everything a simulated GPU agent reports, and what the executor needs to set up waves."""

    name: str                      # "gfx942"
    family: str                    # ISA family for the executor: "gfx9", "gfx11", "gfx12"
    product_name: str              # HSA_AMD_AGENT_INFO_PRODUCT_NAME
    isa_name: str                  # full target triple with feature settings
    elf_machine: int               # e_flags bits 7:0 (EF_AMDGPU_MACH_AMDGCN_*)
    wavefront_size: int
    compute_units: int
    simds_per_cu: int
    max_waves_per_cu: int
    shader_engines: int
    shader_arrays_per_engine: int
    lds_size: int                  # bytes of LDS a workgroup may use (group segment pool size)
    max_clock_mhz: int
    memory_size: int               # bytes of device memory (coarse-grained pool size)
    memory_width_bits: int
    memory_clock_mhz: int
    chip_id: int
    cache_sizes: tuple[int, int, int, int]   # L1, L2, L3, L4 in bytes (HSA_AGENT_INFO_CACHE_SIZE)
    cacheline_size: int = 128
    sgprs_per_wave: int = 102      # addressable SGPRs (s0..s101 on gfx9; 106 on gfx10+)
    vgprs_per_wave: int = 256      # architectural VGPRs (gfx90a/gfx942 add 256 AGPRs)
    has_agprs: bool = False
    has_architected_sgprs: bool = False   # gfx12: workgroup ids in TTMP registers
    packed_work_item_ids: bool = True     # v0 = x | y << 10 | z << 20
    xnack: str = "-"               # "+", "-" or "" (unsupported)
    sramecc: str = ""
    workgroup_max_size: int = 1024
    workgroup_max_dim: tuple[int, int, int] = (1024, 1024, 1024)
    grid_max_size: int = 0xFFFFFFFF
    grid_max_dim: tuple[int, int, int] = (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF)
    fbarrier_max_size: int = 32
    queues_max: int = 128
    queue_min_size: int = 0x40     # packets; ROCr GpuAgent minAqlSize_
    queue_max_size: int = 0x20000  # packets; ROCr GpuAgent maxAqlSize_
    fast_f16: bool = True

    @property
    def is_gpu(self) -> bool:
        """Always True: this is a GPU profile."""
        return True


@dataclass(frozen=True)
class CpuProfile:
    """The CPU agent (the host)."""

    name: str = "hsapy simulated CPU"
    product_name: str = "hsapy simulated CPU"
    compute_units: int = 2
    max_clock_mhz: int = 3000
    cache_sizes: tuple[int, int, int, int] = (32 * KIB, 1 * MIB, 32 * MIB, 0)
    cacheline_size: int = 64
    memory_size: int = 64 * GIB    # reported size of the system pools

    @property
    def is_gpu(self) -> bool:
        """Always False: this is the CPU profile."""
        return False


# The table. Keep entries in the order of the list; values cited in the module docstring.
GPU_PROFILES: dict[str, GpuProfile] = {
    "gfx942": GpuProfile(
        name="gfx942",
        family="gfx9",
        product_name="AMD Instinct MI300X",
        isa_name="amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-",
        elf_machine=0x4C,
        wavefront_size=64,
        compute_units=304,
        simds_per_cu=4,
        max_waves_per_cu=32,
        shader_engines=32,
        shader_arrays_per_engine=1,
        lds_size=64 * KIB,
        max_clock_mhz=2100,
        memory_size=192 * GIB,
        memory_width_bits=8192,
        memory_clock_mhz=2600,
        chip_id=0x74A1,
        cache_sizes=(32 * KIB, 4 * MIB, 256 * MIB, 0),
        has_agprs=True,
        xnack="-",
        sramecc="+",
    ),
    "gfx1201": GpuProfile(
        name="gfx1201",
        family="gfx12",
        product_name="AMD Radeon RX 9070 XT",
        isa_name="amdgcn-amd-amdhsa--gfx1201",
        elf_machine=0x4E,
        wavefront_size=32,
        compute_units=64,
        simds_per_cu=2,
        max_waves_per_cu=32,
        shader_engines=4,
        shader_arrays_per_engine=2,
        lds_size=64 * KIB,
        max_clock_mhz=2970,
        memory_size=16 * GIB,
        memory_width_bits=256,
        memory_clock_mhz=2518,
        chip_id=0x7550,
        cache_sizes=(32 * KIB, 8 * MIB, 64 * MIB, 0),
        sgprs_per_wave=106,
        has_architected_sgprs=True,
        xnack="",
        sramecc="",
    ),
    "gfx1100": GpuProfile(
        name="gfx1100",
        family="gfx11",
        product_name="AMD Radeon RX 7900 XTX",
        isa_name="amdgcn-amd-amdhsa--gfx1100",
        elf_machine=0x41,
        wavefront_size=32,
        compute_units=96,
        simds_per_cu=2,
        max_waves_per_cu=32,
        shader_engines=6,
        shader_arrays_per_engine=2,
        lds_size=64 * KIB,
        max_clock_mhz=2500,
        memory_size=24 * GIB,
        memory_width_bits=384,
        memory_clock_mhz=2500,
        chip_id=0x744C,
        cache_sizes=(32 * KIB, 6 * MIB, 96 * MIB, 0),
        sgprs_per_wave=106,
        xnack="",
        sramecc="",
    ),
    "gfx90a": GpuProfile(
        name="gfx90a",
        family="gfx9",
        product_name="AMD Instinct MI210",
        isa_name="amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-",
        elf_machine=0x3F,
        wavefront_size=64,
        compute_units=104,
        simds_per_cu=4,
        max_waves_per_cu=32,
        shader_engines=8,
        shader_arrays_per_engine=1,
        lds_size=64 * KIB,
        max_clock_mhz=1700,
        memory_size=64 * GIB,
        memory_width_bits=4096,
        memory_clock_mhz=1600,
        chip_id=0x740F,
        cache_sizes=(16 * KIB, 8 * MIB, 0, 0),
        has_agprs=True,
        xnack="-",
        sramecc="+",
    ),
}

CPU_PROFILE = CpuProfile()

DEFAULT_TARGETS: tuple[str, ...] = ("gfx942", "gfx1201")


def resolve_targets(targets: list[str] | tuple[str, ...] | str | None = None) -> list[GpuProfile]:
    """Turn a target list (argument, else ``HSAPY_SIM_TARGETS``, else the default) into profiles.

    Raises ``HsapyValueError`` naming the unknown target and the known ones.
    """
    from hsapy.errors import HsapyValueError

    if targets is None:
        targets = os.environ.get("HSAPY_SIM_TARGETS") or ",".join(DEFAULT_TARGETS)
    if isinstance(targets, str):
        targets = [t for t in (part.strip() for part in targets.split(",")) if t]
    elif isinstance(targets, (bytes, bytearray)) or not hasattr(targets, "__iter__"):
        from hsapy.errors import HsapyTypeError

        raise HsapyTypeError(f"simulator targets are a list of names such as ['gfx942'] (or "
                             f"one comma-separated str), not {type(targets).__name__}")
    targets = list(targets)
    if not targets:
        raise HsapyValueError(
            "no simulator target given: name at least one GPU, e.g. targets=['gfx942'] or "
            f"HSAPY_SIM_TARGETS=gfx942 (known: {', '.join(GPU_PROFILES)})")
    profiles: list[GpuProfile] = []
    for target in targets:
        if isinstance(target, GpuProfile):
            profiles.append(target)
            continue
        base = str(target).split(":")[0]  # accept "gfx942:sramecc+:xnack-"
        profile = GPU_PROFILES.get(base)
        if profile is None:
            known = ", ".join(GPU_PROFILES)
            raise HsapyValueError(
                f"unknown simulator target {target!r}; known targets: {known} "
                "(set HSAPY_SIM_TARGETS or pass targets=[...])"
            )
        profiles.append(profile)
    return profiles
