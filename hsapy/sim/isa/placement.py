"""Where the simulator says a wave runs, and the hardware-id registers that report it.

The interpreter does not model compute units: every wave of a dispatch runs on the host. A
kernel that asks where it runs (``s_getreg_b32`` of HW_ID / XCC_ID on gfx9, HW_ID1 on
gfx11/gfx12; HIP's ``__smid()`` reads them) gets the answer of this deterministic placement,
the same on every engine and every run:

- Workgroups are dealt round robin in dispatch order (the linear workgroup id, x fastest) over
  the target's units: compute units on gfx9; on gfx11/gfx12 workgroup processors (WGPs) when the
  kernel runs in WGP mode (compute_pgm_rsrc1 bit 29), compute units in CU mode. gfx942 first
  deals over its XCCs (workgroup i goes to XCC i mod 8, as MI300X's dispatcher does), then over
  the CUs of that XCC.
- A unit's index u counts shader engines fastest, then shader arrays, then the unit within its
  array: SE = u mod SEs, SA (SH on gfx9) = (u div SEs) mod arrays, CU_ID / WGP_ID = the rest.
- Every wave of a workgroup runs on its workgroup's unit (they share its LDS): wave w of the
  group is on SIMD w mod SIMDs and in wave slot w div SIMDs of that SIMD. A WGP has the SIMDs of
  both its CUs; in CU mode SIMD_ID bit 0 names the CU of the WGP (HIP's amd_device_functions.h
  reads it as the CU id under __AMDGCN_CUMODE__).

Register layouts (fields the placement defines; a read of any other bit stops the queue):

- gfx9 HW_ID (hwreg 4; Vega / CDNA ISA guides, "HW_ID"): WAVE_ID 3:0, SIMD_ID 5:4, CU_ID 11:8,
  SH_ID 12, SE_ID 15:13. PIPE_ID, TG_ID, VM_ID, QUEUE_ID, STATE_ID and ME_ID are not modelled.
- gfx940-942 XCC_ID (hwreg 20; CDNA3 ISA guide): XCC_ID 3:0.
- gfx11/gfx12 HW_ID1 (hwreg 23; RDNA3 / RDNA4 ISA guides, "HW_ID1"): WAVE_ID 4:0, SIMD_ID 9:8,
  WGP_ID 13:10, SA_ID 16, SE_ID 20:18. DP_RATE is not modelled.

Register ids are LLVM's (SIDefines.h, ``Hwreg::ID_*``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hsapy.sim.targets import GpuProfile

__all__ = ["HwregLayout", "LAYOUTS", "XCC_ID_TARGETS", "XCCS", "hardware_register"]

HW_ID = 4         # gfx9
XCC_ID = 20       # gfx940-942
HW_ID1 = 23       # gfx10+

XCC_ID_TARGETS = frozenset({"gfx940", "gfx941", "gfx942"})
XCCS = {"gfx942": 8}          # MI300X: 8 XCDs of 38 CUs (4 shader engines each)


@dataclass(frozen=True)
class HwregLayout:
    """A hardware register the placement answers: its name and field -> (offset, size)."""

    name: str
    fields: dict[str, tuple[int, int]]

    @property
    def modelled_bits(self) -> int:
        """The bits of the register that some field covers."""
        bits = 0
        for offset, size in self.fields.values():
            bits |= ((1 << size) - 1) << offset
        return bits


_GFX9_HW_ID = HwregLayout("HW_REG_HW_ID", {"WAVE_ID": (0, 4), "SIMD_ID": (4, 2),
                                           "CU_ID": (8, 4), "SH_ID": (12, 1), "SE_ID": (13, 3)})
_XCC_ID = HwregLayout("HW_REG_XCC_ID", {"XCC_ID": (0, 4)})
_HW_ID1 = HwregLayout("HW_REG_HW_ID1", {"WAVE_ID": (0, 5), "SIMD_ID": (8, 2), "WGP_ID": (10, 4),
                                        "SA_ID": (16, 1), "SE_ID": (18, 3)})

# (ISA family, hwreg id) -> layout
LAYOUTS: dict[tuple[str, int], HwregLayout] = {
    ("gfx9", HW_ID): _GFX9_HW_ID,
    ("gfx9", XCC_ID): _XCC_ID,
    ("gfx11", HW_ID1): _HW_ID1,
    ("gfx12", HW_ID1): _HW_ID1,
}


def hardware_register(profile: GpuProfile, hwreg: int, workgroup: np.ndarray,
                      wave_in_group: np.ndarray, wgp_mode: bool) -> np.ndarray:
    """The value of hardware register ``hwreg`` (a key of :data:`LAYOUTS` for the profile's
    family) for waves given by their linear workgroup id in the dispatch and their index in
    the workgroup: ``uint32[W]``. Raises ValueError for a register the target does not have."""
    layout = LAYOUTS.get((profile.family, hwreg))
    if layout is None or (hwreg == XCC_ID and profile.name not in XCC_ID_TARGETS):
        raise ValueError(f"{profile.name} has no hardware register {hwreg} to read")
    fields = _place(profile, np.asarray(workgroup, np.int64),
                    np.asarray(wave_in_group, np.int64), wgp_mode)
    value = np.zeros(fields["WAVE_ID"].shape, np.int64)
    for name, (offset, size) in layout.fields.items():
        value |= (fields[name] & ((1 << size) - 1)) << offset
    return value.astype(np.uint32)


def _place(profile: GpuProfile, workgroup: np.ndarray, wave_in_group: np.ndarray,
           wgp_mode: bool) -> dict[str, np.ndarray]:
    """The placement's fields (module docstring) for each wave."""
    engines = profile.shader_engines
    arrays = profile.shader_arrays_per_engine
    xccs = XCCS.get(profile.name, 1)
    cu_in_wgp = None
    if profile.family == "gfx9":
        simds = profile.simds_per_cu
        unit = (workgroup // xccs) % (profile.compute_units // xccs)
    elif wgp_mode:
        simds = 2 * profile.simds_per_cu
        unit = workgroup % (profile.compute_units // 2)
    else:
        simds = profile.simds_per_cu
        cu = workgroup % profile.compute_units
        cu_in_wgp, unit = cu % 2, cu // 2
    engines //= xccs
    simd = wave_in_group % simds
    if cu_in_wgp is not None:
        simd = cu_in_wgp | (simd << 1)
    in_array = unit // (engines * arrays)
    return {"XCC_ID": workgroup % xccs,
            "SE_ID": unit % engines,
            "SH_ID": (unit // engines) % arrays,
            "SA_ID": (unit // engines) % arrays,
            "CU_ID": in_array,
            "WGP_ID": in_array,
            "SIMD_ID": simd,
            "WAVE_ID": wave_in_group // simds}
