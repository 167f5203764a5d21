"""Roofline placement: a kernel's arithmetic intensity against its target's published peaks.

This is a MODEL, never a measurement: the FLOPs and bytes come from the simulator's exact
counts (hsapy.sim.isa.counters), the ceilings from AMD's product specifications, and what it
says is how fast an ideal run of the same work could be on that card -- the time the work
needs at peak compute, or at peak memory bandwidth, whichever is longer. Real runs reach a
fraction of it (clocks, occupancy, latency, caches, instruction mix).

Two byte counts bracket the DRAM traffic, because the simulator has no cache model:

- ``requested``: every byte the kernel's vector memory instructions ask of global memory (no
  cache: each request goes to DRAM) -- the pessimistic end;
- ``footprint``: every distinct cache line the dispatch touches, once (a perfect cache: each
  line crosses from DRAM once) -- the optimistic end.

Hardware's FETCH_SIZE + WRITE_SIZE (bytes at the DRAM side of the L2) lie between the two.

Peak figures (dense, no sparsity; boost clock), from AMD's specification pages:

- MI300X (gfx942), amd.com/en/products/accelerators/instinct/mi300/mi300x.html: memory
  bandwidth 5.3 TB/s; FP64 vector 81.7, FP32 vector 163.4, FP64 matrix 163.4, FP32 matrix
  163.4, FP16 and BF16 matrix 1307.4, FP8 matrix 2614.9 TFLOPs; INT8 matrix 2614.9 TOPs.
- Radeon RX 9070 XT (gfx1201), amd.com/en/products/graphics/desktops/radeon/9000-series/
  amd-radeon-rx-9070xt.html: memory bandwidth 640 GB/s; FP32 vector 48.7, FP16 vector 97.3,
  FP16 and BF16 matrix 194.6, FP8 matrix 389.3 TFLOPs; INT8 matrix 389.3 TOPs.
- MI210 (gfx90a), amd.com/en/products/accelerators/instinct/mi200/mi210.html: 1.6 TB/s; FP64
  and FP32 vector 22.6, FP64 and FP32 matrix 45.3, FP16 and BF16 matrix 181.0 TFLOPs; INT8
  181.0 TOPs.
- Radeon RX 7900 XTX (gfx1100), amd.com/en/products/graphics/desktops/radeon/7000-series/
  amd-radeon-rx-7900xtx.html: 960 GB/s; FP32 vector 61.4, FP16 vector 122.8 TFLOPs.

Vector FP32 peaks assume the card's doubled FP32 issue (packed FP32 on CDNA3, dual issue on
RDNA3/RDNA4); work of a precision without a published vector peak is held to the FP32 vector
ceiling, work of a precision without a published matrix peak to its vector ceiling.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hsapy.errors import HsapyValueError

__all__ = ["Peaks", "PEAKS", "peaks_for", "Placement", "place"]

T = 1e12


@dataclass(frozen=True)
class Peaks:
    """A card's published ceilings: ``bandwidth`` in bytes/s, ``vector``/``matrix`` FLOP/s
    by precision ("fp64", "fp32", "fp16", "bf16", "fp8"), ``int8`` OP/s of the matrix units."""

    product: str
    bandwidth: float
    vector: dict[str, float]
    matrix: dict[str, float]
    int8: float
    source: str

    def ceiling(self, precision: str, matrix: bool) -> float:
        """FLOP/s available to work of ``precision`` on the matrix or vector units."""
        if matrix and precision in self.matrix:
            return self.matrix[precision]
        return self.vector.get(precision, self.vector["fp32"])


PEAKS: dict[str, Peaks] = {
    "gfx942": Peaks("AMD Instinct MI300X", 5.3 * T,
                    {"fp64": 81.7 * T, "fp32": 163.4 * T},
                    {"fp64": 163.4 * T, "fp32": 163.4 * T, "fp16": 1307.4 * T,
                     "bf16": 1307.4 * T, "fp8": 2614.9 * T}, 2614.9 * T,
                    "amd.com/en/products/accelerators/instinct/mi300/mi300x.html"),
    "gfx1201": Peaks("AMD Radeon RX 9070 XT", 0.640 * T,
                     {"fp32": 48.7 * T, "fp16": 97.3 * T},
                     {"fp16": 194.6 * T, "bf16": 194.6 * T, "fp8": 389.3 * T}, 389.3 * T,
                     "amd.com/en/products/graphics/desktops/radeon/9000-series/"
                     "amd-radeon-rx-9070xt.html"),
    "gfx90a": Peaks("AMD Instinct MI210", 1.6 * T,
                    {"fp64": 22.6 * T, "fp32": 22.6 * T},
                    {"fp64": 45.3 * T, "fp32": 45.3 * T, "fp16": 181.0 * T, "bf16": 181.0 * T},
                    181.0 * T, "amd.com/en/products/accelerators/instinct/mi200/mi210.html"),
    "gfx1100": Peaks("AMD Radeon RX 7900 XTX", 0.960 * T,
                     {"fp32": 61.4 * T, "fp16": 122.8 * T}, {}, 0.0,
                     "amd.com/en/products/graphics/desktops/radeon/7000-series/"
                     "amd-radeon-rx-7900xtx.html"),
}


def peaks_for(target: str) -> Peaks:
    """The published peaks of the card hsapy pairs with ``target``."""
    name = str(target).split(":")[0]
    found = PEAKS.get(name)
    if found is None:
        raise HsapyValueError(f"no published peaks known for {target!r}; known: "
                              f"{', '.join(PEAKS)}")
    return found


@dataclass(frozen=True)
class Placement:
    """Where one dispatch sits on its target's roofline, for one byte count (a model).

    ``intensity`` = FLOPs / ``bytes``; ``compute_s`` the time the FLOPs need at the ceilings of
    their precisions and units, ``memory_s`` the time the bytes need at peak bandwidth;
    ``bound`` is "memory" or "compute" (whichever time is longer); ``attainable`` the FLOP/s of
    an ideal run (FLOPs / max of the two times) and ``fraction_of_peak`` that over the
    kernel's compute ceiling (``ceiling``: FLOPs / compute_s)."""

    bytes_model: str
    bytes: int
    flops: int
    intensity: float
    ceiling: float
    bandwidth: float
    compute_s: float
    memory_s: float

    @property
    def ideal_s(self) -> float:
        """The time of an ideal run."""
        return max(self.compute_s, self.memory_s)

    @property
    def bound(self) -> str:
        """Which ceiling bounds the kernel: "memory" or "compute"."""
        return "memory" if self.memory_s >= self.compute_s else "compute"

    @property
    def attainable(self) -> float:
        """FLOP/s an ideal run reaches."""
        return self.flops / self.ideal_s if self.ideal_s else 0.0

    @property
    def fraction_of_peak(self) -> float:
        """Attainable FLOP/s over the compute ceiling (1.0: compute bound)."""
        return self.compute_s / self.ideal_s if self.ideal_s else 0.0

    @property
    def fraction_of_bandwidth(self) -> float:
        """Bandwidth an ideal run uses over the peak (1.0: memory bound)."""
        return self.memory_s / self.ideal_s if self.ideal_s else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"bytes_model": self.bytes_model, "bytes": self.bytes, "flops": self.flops,
                "intensity_flop_per_byte": _round(self.intensity),
                "compute_ceiling_flop_per_s": self.ceiling,
                "bandwidth_byte_per_s": self.bandwidth, "bound": self.bound,
                "ideal_time_s": self.ideal_s, "attainable_flop_per_s": self.attainable,
                "fraction_of_compute_peak": _round(self.fraction_of_peak),
                "fraction_of_bandwidth": _round(self.fraction_of_bandwidth)}


def _round(value: float) -> float:
    return float(f"{value:.6g}")


def place(target: str, flops: dict[str, int], matrix_flops: dict[str, int], nbytes: int,
          bytes_model: str) -> Placement:
    """The placement of work ``flops`` (by precision; ``matrix_flops`` the part done by matrix
    instructions) moving ``nbytes`` to and from DRAM on ``target``'s published ceilings."""
    peaks = peaks_for(target)
    compute_s = 0.0
    total = 0
    for precision, work in flops.items():
        on_matrix = matrix_flops.get(precision, 0)
        on_vector = work - on_matrix
        if on_matrix:
            compute_s += on_matrix / peaks.ceiling(precision, True)
        if on_vector:
            compute_s += on_vector / peaks.ceiling(precision, False)
        total += work
    ceiling = total / compute_s if compute_s else peaks.vector["fp32"]
    memory_s = nbytes / peaks.bandwidth
    intensity = total / nbytes if nbytes else float("inf") if total else 0.0
    return Placement(bytes_model, int(nbytes), int(total), intensity, ceiling,
                     peaks.bandwidth, compute_s, memory_s)
