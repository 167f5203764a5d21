"""Profile every variant of the operator suite on the simulator and print the Markdown tables of
docs/profile.md ("The operator suite, profiled").

    python3 tools/profile_operators.py [--targets gfx942,gfx1201] > tables.md

Each row runs one variant once at the size in ``SIZES`` (fixed here, so the tables do not move
when the simulator's run sizes change; profiled dispatches run on the interpreter), checked
against its FP64 reference, under hsapy.profile.Profiler, through the same path as
``hsapy run OPERATOR --profile``; a variant's figures sum over its dispatches.
"""
from __future__ import annotations

import argparse
import sys

# The sizes docs/profile.md's tables were made at.
SIZES = {"vector_add": (65_536,), "reduction": (65_536,), "softmax": (128, 1024),
         "gemm": (64, 64, 64), "attention": (128, 64), "rmsnorm": (128, 1024)}


def _kib(nbytes: float) -> str:
    return f"{nbytes / 1024:,.0f}" if nbytes >= 10240 else f"{nbytes / 1024:,.1f}"


def rows_for(target: str) -> list[list[str]]:
    import hsapy
    from hsapy import operators as ops
    from hsapy.commands.run import HsapySession, RowSpec, profile_row

    rows = []
    with hsapy.Runtime(backend="sim", targets=[target]) as rt:
        session = HsapySession(rt)
        try:
            for name, size in SIZES.items():
                op = ops.operator(name)
                for variant in op.variants:
                    if variant.name == "final":
                        continue          # the second kernel of partials / local_*, alone
                    spec = RowSpec(name, variant.name, "hip", target, size, op.inputs_kinds[0])
                    row, dispatches = profile_row(session, spec, 1)
                    if not row.ok:
                        raise SystemExit(f"{name}/{variant.name} on {target} failed: {row}")
                    rows.append(_row(name, variant.name, size, dispatches))
        finally:
            session.close()
    return rows


def _row(name: str, variant: str, size: tuple, dispatches: list) -> list[str]:
    from hsapy import operators as ops

    glob = {"read": 0, "write": 0, "atomic": 0}
    lds = lines = footprint = conflicts = flops = lanes = slots = 0
    for d in dispatches:
        c = d.counters
        for kind, value in c.bytes.get("global", {}).items():
            glob[kind] += value
        lds += sum(c.bytes.get("lds", {}).values())
        lines += c.global_line_bytes
        footprint += c.global_footprint_bytes
        conflicts += c.hardware["SQ_LDS_BANK_CONFLICT"]
        flops += c.total_flops
        lanes += c.valu_lanes
        slots += c.valu_lane_slots
    occupancy = "/".join(f"{d.occupancy.waves_per_simd:g}" for d in dispatches)
    return [f"{name}/{variant}", ops.size_label(size), str(len(dispatches)),
            _kib(glob["read"]), _kib(glob["write"] + glob["atomic"]), _kib(lines),
            _kib(footprint), _kib(lds), f"{int(conflicts):,}", f"{flops:,}",
            f"{100 * lanes / slots:.0f}" if slots else "-", occupancy]


HEADERS = ["variant", "size", "dispatches", "global read KiB", "global write+atomic KiB",
           "line KiB", "footprint KiB", "LDS KiB", "bank conflicts", "FLOPs",
           "VALU lanes %", "waves/SIMD"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="gfx942,gfx1201")
    args = parser.parse_args(argv)
    for target in [t for t in args.targets.split(",") if t]:
        print(f"#### {target}\n")
        print("| " + " | ".join(HEADERS) + " |")
        print("|" + "|".join("---" for _ in HEADERS) + "|")
        for row in rows_for(target):
            print("| " + " | ".join(row) + " |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
