"""Profile kernel dispatches: rocprof-style counters (on the simulator), occupancy and a roofline
placement (everywhere).

Usage::

    import hsapy.profile

    with hsapy.profile.Profiler() as prof:
        ...                                  # load kernels, launch, wait, as usual
    for dispatch in prof.dispatches:
        print(dispatch.report())

or, for a whole program, ``hsapy profile -- python script.py args`` (docs/profile.md).

What a :class:`DispatchProfile` holds:

- ``counters`` (simulator only; None on a GPU): hsapy.sim.isa.counters.DispatchCounters --
  rocprof's counter names where a counter exists (SQ_WAVES, SQ_INSTS_*, FETCH_SIZE,
  WRITE_SIZE, SQ_LDS_BANK_CONFLICT) and exact figures hardware does not count (FLOPs by
  precision, bytes by address space, the VALU active-lane ratio, per-instruction counts);
- ``occupancy``: from the code object and the target's limits (hsapy.occupancy) -- the same
  on the simulator and on the GPU, since nothing in it is simulated;
- ``roofline``: the dispatch placed against its card's published peaks for two byte counts
  (hsapy.roofline) -- a model, labelled as one.

The profiler watches publishing (hsapy.queue observers: which kernel each dispatch packet
runs, its grid, workgroup and LDS) and, on the simulator, receives the counters of every
dispatch it runs (hsapy.sim.isa.counters listeners). While it is active the simulator runs
profiled programs, which are slower than unprofiled ones.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from hsapy._checks import check_int, write_text_file
from hsapy.errors import HsapyError
from hsapy.hsa_enums import HSA_PACKET_TYPE_KERNEL_DISPATCH
from hsapy.observers import add_observer, remove_observer

__all__ = ["Profiler", "DispatchProfile", "profile"]


COUNTER_ORDER = ("SQ_WAVES", "SQ_INSTS", "SQ_INSTS_VALU", "SQ_INSTS_MFMA", "SQ_INSTS_SALU",
                 "SQ_INSTS_SMEM", "SQ_INSTS_LDS", "SQ_INSTS_VMEM_RD", "SQ_INSTS_VMEM_WR",
                 "SQ_INSTS_FLAT", "SQ_INSTS_FLAT_LDS_ONLY", "SQ_INSTS_BRANCH",
                 "SQ_INSTS_SENDMSG", "SQ_LDS_BANK_CONFLICT", "FETCH_SIZE", "WRITE_SIZE")

# What the simulator's figures are, where hardware's would differ (printed with the counters).
FETCH_NOTE = ("bytes the kernel's vector loads requested from global memory / 1024; no cache "
              "model (on hardware: DRAM reads after the L2)")
WRITE_NOTE = ("bytes of vector stores and atomics to global memory / 1024; no cache model "
              "(on hardware: DRAM writes after the L2)")
BANK_NOTE = ("extra LDS cycles in the model: 32 banks x 4 bytes, passes of 128 bytes of lane "
             "data")


@dataclass
class DispatchProfile:
    """One kernel dispatch: what ran, its counters (simulator), occupancy and roofline."""

    kernel: str
    target: str
    grid: tuple[int, int, int]
    workgroup: tuple[int, int, int]
    group_segment_size: int
    queue_address: int = 0
    index: int = -1
    simulated: bool = False
    counters: Any = None
    occupancy: Any = None
    roofline: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def workgroup_size(self) -> int:
        """Work-items per workgroup."""
        return self.workgroup[0] * self.workgroup[1] * self.workgroup[2]

    def as_dict(self, instructions: int | None = None) -> dict[str, Any]:
        """JSON-ready (``instructions``: at most that many per-instruction rows, most
        executed first; None: all)."""
        instructions = _row_limit(instructions, "DispatchProfile.as_dict")
        out: dict[str, Any] = {
            "kernel": self.kernel, "target": self.target, "grid": list(self.grid),
            "workgroup": list(self.workgroup), "group_segment_size": self.group_segment_size,
            "queue_address": hex(self.queue_address), "packet_index": self.index,
            "simulated": self.simulated, "notes": list(self.notes)}
        c = self.counters
        if c is not None:
            out["counters"] = {
                "hardware_names": {k: c.hardware[k] for k in COUNTER_ORDER},
                "definitions": {"FETCH_SIZE": FETCH_NOTE, "WRITE_SIZE": WRITE_NOTE,
                                "SQ_LDS_BANK_CONFLICT": BANK_NOTE},
                "wave_size": c.wave_size,
                "flops": dict(c.flops), "matrix_flops": dict(c.matrix_flops),
                "matrix_int_ops": c.int_ops,
                "bytes": {space: dict(kinds) for space, kinds in c.bytes.items()},
                "global_line_bytes": c.global_line_bytes,
                "global_footprint_bytes": c.global_footprint_bytes,
                "line_size": c.line_size,
                "valu_active_lanes": c.valu_lanes, "valu_lane_slots": c.valu_lane_slots,
                "valu_active_lane_ratio": round(c.valu_active_lane_ratio, 6),
                "lds_passes": c.lds_passes,
                "instructions": [row.as_dict() for row in _hottest(c, instructions)]}
        if self.occupancy is not None:
            out["occupancy"] = self.occupancy.as_dict()
        if self.roofline:
            out["roofline"] = {"model": "simulator counts against published peaks; not a "
                                        "measurement",
                               "product": _product(self.target),
                               "placements": [p.as_dict() for p in self.roofline]}
        return out

    def report(self, instructions: int | None = 10) -> str:
        """The human-readable table (``instructions``: rows of the per-instruction table, None
        for all)."""
        return format_report(self, instructions)


def _row_limit(instructions: Any, what: str) -> int | None:
    """How many per-instruction rows to show: None (all) or an int >= 0, else a typed error --
    a negative count was a slice that dropped the last rows, a float or str a TypeError."""
    if instructions is None:
        return None
    return check_int(instructions, f"{what}: instructions (rows of the per-instruction table)",
                     0, 1 << 62)


def _hottest(counters: Any, limit: int | None) -> list:
    rows = sorted(counters.instructions, key=lambda r: (-r.waves, r.offset))
    return rows if limit is None else rows[:limit]


def _product(target: str) -> str:
    from hsapy.roofline import PEAKS

    peaks = PEAKS.get(target)
    return "" if peaks is None else f"{peaks.product} ({peaks.source})"


class Profiler:
    """Collects a :class:`DispatchProfile` for every kernel dispatch published (and, on the
    simulator, run) while active. Use as a context manager, or :meth:`start` / :meth:`stop`."""

    def __init__(self) -> None:
        self.dispatches: list[DispatchProfile] = []
        self._kernels: dict[int, Any] = {}                  # kernel_object -> Kernel
        self._by_packet: dict[tuple[int, int], DispatchProfile] = {}
        self._lock = threading.Lock()
        self.is_active = False

    # -- context --------------------------------------------------------------------------------
    def __enter__(self) -> Profiler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start observing publishing and counting simulated dispatches."""
        from hsapy.sim.isa import counters

        if self.is_active:
            raise HsapyError("Profiler.start: this profiler is already active")
        self.is_active = True
        add_observer(self)
        counters.add_listener(self)

    def stop(self) -> None:
        """Stop observing; the dispatches collected so far stay in :attr:`dispatches`."""
        from hsapy.sim.isa import counters

        if not self.is_active:
            return
        counters.remove_listener(self)
        remove_observer(self)
        self.is_active = False

    # -- what the profiler hears -----------------------------------------------------------------
    def kernel_loaded(self, kernel: Any) -> None:
        """A kernel was loaded: remember its code object facts for its dispatches."""
        self._kernels[int(kernel.kernel_object)] = kernel

    def packets_written(self, queue: Any, first: int, count: int) -> None:
        """Dispatch packets published on ``queue``: record what they launch."""
        ring, mask = queue.ring, queue.size - 1
        for k in range(count):
            data = ring[(first + k) & mask].tobytes()
            if data[0] != HSA_PACKET_TYPE_KERNEL_DISPATCH:
                continue
            self._published(queue, first + k, data)

    def doorbell(self, queue: Any, index: int) -> None:
        """Nothing to do (observer interface)."""

    def signal_reused(self, handle: int) -> None:
        """Nothing to do (observer interface)."""

    def dispatch_counted(self, counters: Any) -> None:
        """The simulator finished counting a dispatch (called on its packet-processor
        thread)."""
        key = (counters.queue_address, counters.dispatch_id)
        with self._lock:
            found = self._by_packet.get(key)
            if found is None or found.counters is not None:
                found = DispatchProfile(counters.kernel, counters.target, counters.grid,
                                        counters.workgroup, counters.group_segment_size,
                                        counters.queue_address, counters.dispatch_id)
                self.dispatches.append(found)
                found.notes.append("not published through an hsapy queue (a runtime-internal "
                                   "dispatch, such as ROCr's copy kernels)")
                if counters.kernel_info is not None:
                    found.occupancy = _occupancy(counters.kernel_info, found)
            if found.kernel.startswith("kernel 0x"):
                found.kernel = counters.kernel     # loaded before profiling started
            if found.occupancy is None and counters.kernel_info is not None:
                found.notes = [n for n in found.notes if "no occupancy" not in n]
                found.occupancy = _occupancy(counters.kernel_info, found)
            found.simulated = True
            found.counters = counters
            found.roofline = _roofline(found)

    def _published(self, queue: Any, index: int, data: bytes) -> None:
        from hsapy import aql

        fields = aql.parse(data)
        kernel_object = int(fields["kernel_object"])
        kernel = self._kernels.get(kernel_object)
        grid = (int(fields["grid_size_x"]), int(fields["grid_size_y"]),
                int(fields["grid_size_z"]))
        workgroup = (int(fields["workgroup_size_x"]), int(fields["workgroup_size_y"]),
                     int(fields["workgroup_size_z"]))
        lds = int(fields["group_segment_size"])
        name = kernel.name if kernel is not None else f"kernel {kernel_object:#x}"
        target = str(queue.agent.name)
        profile = DispatchProfile(name, target, grid, workgroup, lds, int(queue.address), index,
                                  simulated=bool(queue.runtime.is_simulated))
        if kernel is not None:
            profile.occupancy = _occupancy(kernel.info, profile)
        else:
            profile.notes.append("kernel loaded before profiling started: no occupancy")
        with self._lock:
            self._by_packet[(profile.queue_address, index)] = profile
            self.dispatches.append(profile)

    def to_json(self, instructions: int | None = None) -> dict[str, Any]:
        """Every dispatch as JSON (see :meth:`DispatchProfile.as_dict`)."""
        instructions = _row_limit(instructions, "Profiler.to_json")
        with self._lock:
            return {"tool": "hsapy profile", "dispatches": [d.as_dict(instructions)
                                                            for d in self.dispatches]}

    def write_json(self, path: Any, instructions: int | None = None) -> None:
        """Write :meth:`to_json` to ``path``."""
        write_text_file(path, json.dumps(self.to_json(instructions), indent=1),
                        "Profiler.write_json")

    def for_packet(self, queue_address: int, index: int) -> DispatchProfile | None:
        """The profile of the dispatch in packet ``index`` of the queue at ``queue_address``
        (None when none was recorded there)."""
        # checked: a key of the wrong kind would only ever answer None
        queue_address = check_int(queue_address, "Profiler.for_packet: queue_address", 0,
                                  (1 << 64) - 1)
        index = check_int(index, "Profiler.for_packet: index", 0, (1 << 64) - 1)
        with self._lock:
            return self._by_packet.get((queue_address, index))


def profile() -> Profiler:
    """``with hsapy.profile.profile() as prof:`` -- the same as :class:`Profiler`."""
    return Profiler()


def _occupancy(info: Any, profile: DispatchProfile) -> Any:
    from hsapy.occupancy import LIMITS, kernel_occupancy

    if profile.target not in LIMITS:
        profile.notes.append(f"no occupancy limits known for {profile.target}")
        return None
    try:
        return kernel_occupancy(info, profile.target, profile.workgroup_size,
                                profile.group_segment_size or None)
    except HsapyError as exc:
        profile.notes.append(f"occupancy: {exc}")
        return None


def _roofline(profile: DispatchProfile) -> list:
    from hsapy.roofline import PEAKS, place

    c = profile.counters
    if c is None or profile.target not in PEAKS:
        return []
    return [place(profile.target, c.flops, c.matrix_flops, c.global_bytes, "requested"),
            place(profile.target, c.flops, c.matrix_flops, c.global_footprint_bytes,
                  "footprint")]


# --- text -----------------------------------------------------------------------------------------

def _kib(value: float) -> str:
    return f"{value:.2f} KB"


def _bytes(value: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if value >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{value} B"


def _si(value: float, unit: str) -> str:
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_report(p: DispatchProfile, instructions: int | None = 10) -> str:
    """The table ``hsapy profile`` prints for one dispatch."""
    instructions = _row_limit(instructions, "format_report")
    grid = "x".join(map(str, p.grid))
    block = "x".join(map(str, p.workgroup))
    where = "simulated" if p.simulated else "GPU"
    lines = [f"{p.kernel} on {p.target} ({where}): grid {grid}, workgroup {block}, "
             f"LDS {p.group_segment_size} B, packet {p.index}"]
    c = p.counters
    if c is not None:
        hw = c.hardware
        lines.append("  counters (rocprof names; exact counts of the simulator, "
                     f"wave{c.wave_size})")
        width = max(len(k) for k in COUNTER_ORDER)
        for name in COUNTER_ORDER:
            value = hw[name]
            if name in ("FETCH_SIZE", "WRITE_SIZE"):
                text = _kib(value) + "  " + (FETCH_NOTE if name == "FETCH_SIZE"
                                             else WRITE_NOTE)
            elif name == "SQ_LDS_BANK_CONFLICT":
                text = f"{int(value)}  {BANK_NOTE}"
            else:
                text = str(int(value))
            lines.append(f"    {name.ljust(width)}  {text}")
        lines.append("  exact figures hardware does not count")
        flops = ", ".join(f"{prec} {_si(v, 'FLOP')}" for prec, v in sorted(c.flops.items()))
        matrix = ", ".join(f"{prec} {_si(v, 'FLOP')}" for prec, v in
                           sorted(c.matrix_flops.items()))
        lines.append(f"    FLOPs                {flops or '0'}"
                     + (f" (matrix instructions: {matrix})" if matrix else ""))
        if c.int_ops:
            lines.append(f"    matrix integer ops   {_si(c.int_ops, 'OP')}")
        for space in ("global", "lds", "private", "scalar"):
            kinds = c.bytes.get(space)
            if not kinds:
                continue
            parts = ", ".join(f"{kind} {_bytes(v)}" for kind, v in kinds.items() if v)
            lines.append(f"    {(space + ' bytes').ljust(20)} {parts}")
        if c.global_bytes:
            lines.append(f"    global, in {c.line_size} B lines per wave instruction "
                         f"{_bytes(c.global_line_bytes)}; distinct lines touched "
                         f"{_bytes(c.global_footprint_bytes)}")
        if c.valu_lane_slots:
            lines.append(f"    VALU active lanes    {100 * c.valu_active_lane_ratio:.1f} % "
                         f"({c.valu_lanes} of {c.valu_lane_slots} lane slots)")
    o = p.occupancy
    if o is not None:
        lines.append("  occupancy (code object and the target's limits: holds on the GPU too)")
        lines.append(f"    {o.waves_per_simd:.3g} waves per SIMD of {o.max_waves_per_simd} "
                     f"({100 * o.fraction:.0f} %): {o.waves_per_unit} waves = "
                     f"{o.workgroups_per_unit} workgroups of {o.waves_per_workgroup} per "
                     f"{o.unit} ({o.simds} SIMDs); limited by {', '.join(o.limiting)}")
        limits = ", ".join(f"{k} {v}" for k, v in o.limits.items())
        lines.append(f"    workgroups per {o.unit} allowed by: {limits}")
        lines.append(f"    per wave: {o.vgprs_allocated} VGPRs allocated, {o.sgprs} SGPRs; "
                     f"LDS {o.lds_allocated} B per workgroup")
        for note in o.notes:
            lines.append(f"    note: {note}")
    if p.roofline:
        peaks = _product(p.target)
        lines.append(f"  roofline (a model: simulator counts against the published peaks of "
                     f"{peaks}; not a measurement)")
        for place in p.roofline:
            label = {"requested": "bytes requested (no cache)",
                     "footprint": "distinct lines (ideal cache)"}[place.bytes_model]
            if not place.flops:
                lines.append(f"    {label}: no floating-point work; {_bytes(place.bytes)} "
                             f"at {_si(place.bandwidth, 'B/s')} take "
                             f"{place.memory_s * 1e6:.3g} us in an ideal run")
            elif place.bytes:
                lines.append(
                    f"    {label}: {place.intensity:.3g} FLOP/B -> {place.bound} bound; an "
                    f"ideal run reaches {_si(place.attainable, 'FLOP/s')} = "
                    f"{100 * place.fraction_of_peak:.3g} % of the "
                    f"{_si(place.ceiling, 'FLOP/s')} compute ceiling, "
                    f"{100 * place.fraction_of_bandwidth:.3g} % of "
                    f"{_si(place.bandwidth, 'B/s')}")
            else:
                lines.append(f"    {label}: no global memory traffic")
    if c is not None and instructions:
        lines.append(f"  instructions (most executed first; {len(c.instructions)} executed)")
        lines.append("    offset  executions  active lanes  category  instruction")
        for row in _hottest(c, instructions):
            lines.append(f"    {row.offset:#6x}  {row.waves:10d}  {row.lanes:12d}  "
                         f"{row.category:8s}  {row.text}")
    for note in p.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines)
