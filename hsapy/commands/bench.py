"""``hsapy bench launch``: what a kernel launch costs, measured with the empty kernel.

Modes: host submit cost (plain launch, prepared launch, batch of 256 per dispatch), round trip
(dispatch + wait), throughput and per-dispatch duration from GPU timestamps; side by side, the
peers a launch-overhead user compares with, when they import: HIP's hipModuleLaunchKernel
through hip-python on an AMD GPU, and cuda.core, CuPy and torch on an NVIDIA GPU (an empty
kernel each, timed in the same loop). Each mode is warmed up, then
repeated; the table (or one JSON object per mode with ``--json``) gives median, p5, p95 and min
in microseconds. ``--plot FILE`` draws the distributions with matplotlib (the ``plot`` extra) as
PNG, SVG or PDF by the file's extension.
On the simulator every number is labelled simulated.
"""
from __future__ import annotations

import argparse
import json
import sys
import textwrap

from hsapy.commands._args import count
from hsapy.runtime import BACKENDS

HELP = "benchmark kernel launches: submit cost, round trip, throughput (HIP side by side)"

BENCHES = ("launch",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``hsapy bench``."""
    parser.add_argument("what", choices=BENCHES, metavar="WHAT",
                        help=f"the benchmark to run: {', '.join(BENCHES)}")
    parser.add_argument("--backend", choices=BACKENDS, default=None,
                        help="runtime backend (default: HSAPY_BACKEND or auto)")
    parser.add_argument("--target", metavar="T",
                        help="GPU agent by target, e.g. gfx942 (default: the first GPU agent)")
    parser.add_argument("--repeats", type=count(1), default=None, metavar="N",
                        help="timed repetitions per mode after one warm-up: bursts of 256 "
                             "submits, 32 round trips or 256 back-to-back dispatches "
                             "(default 20, 3 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="a short run (smaller bursts, 3 repeats): seconds on the simulator")
    parser.add_argument("--json", action="store_true", help="one JSON object per mode")
    parser.add_argument("--plot", metavar="FILE",
                        help="write the distributions as a chart: FILE.png, .svg or .pdf "
                             "(needs matplotlib: pip install 'hsapy[plot]')")
    parser.add_argument("--progress", action="store_true",
                        help="show the progress bar on stderr even when it is not a terminal")


def run(args: argparse.Namespace) -> int:
    from hsapy import bench
    from hsapy.errors import HsapyError

    if args.plot:
        from hsapy import plot

        try:
            plot.check_path(args.plot, "--plot")
            plot.require_matplotlib("--plot")
        except HsapyError as exc:
            print(f"hsapy bench: {exc}", file=sys.stderr)
            return 2
    plan = (bench.LaunchPlan.quick(args.repeats) if args.quick
            else bench.LaunchPlan(repeats=args.repeats or 20))
    progress = bench.Progress(1, enabled=args.progress or sys.stderr.isatty())
    try:
        results, notes = bench.run_launch(args.backend, args.target, plan, progress)
    except HsapyError as exc:
        progress.finish()
        print(f"hsapy bench: {exc}", file=sys.stderr)
        if args.backend != "sim":
            print("hsapy bench: without a GPU, run on the simulator: "
                  "hsapy bench launch --backend sim", file=sys.stderr)
        return 2

    if args.json:
        for result in results:
            print(json.dumps(result.as_json()))
    else:
        _print_table(results, notes, plan)
    if args.plot:
        _write_plot(args.plot, results)
        if not args.json:
            print(f"\nplot: {args.plot}")
    return 0


def _print_table(results: list, notes: list[str], plan) -> None:
    from hsapy.bench import READING

    first = results[0]
    where = f"{first.target} via {first.backend}"
    print(f"hsapy bench launch: the empty kernel on {where}"
          + ("  [SIMULATED]" if first.simulated else ""))
    print(f"{plan.repeats} repeats per mode after {plan.warmup} warm-up; times in µs")
    print()
    header = ("mode", "median", "p5", "p95", "min", "n", "clock")
    rows = [(r.mode, *(f"{r.as_json()[key]:.2f}" for key in
                       ("median_us", "p5_us", "p95_us", "min_us")),
             str(len(r.samples_s)), r.clock) for r in results]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for row in (header, *rows):
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:6], widths[1:6])]
        cells.append(row[6])
        print("  ".join(cells))
    print()
    for result in results:
        print(f"{result.mode:<{widths[0]}}  {result.what}")
    print()
    print(textwrap.fill(READING, width=100))
    for note in notes:
        print(textwrap.fill(note, width=100, initial_indent="note: ", subsequent_indent="      "))


def _write_plot(path: str, results: list) -> None:
    from hsapy.plot import latency_chart

    first = results[0]
    subtitle = f"the empty kernel on {first.target} via {first.backend}"
    if first.simulated:
        subtitle += " (simulated: not hardware numbers)"
    latency_chart([(r.mode, r.samples_us) for r in results], path, "hsapy bench launch",
                  subtitle)
