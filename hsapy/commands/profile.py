"""``hsapy profile``: run a Python program in this process and profile its kernel dispatches.

    hsapy profile [--json] [--plot roofline.png] [--instructions N] -- python script.py args...

Prints a table per kernel dispatch (docs/profile.md): on the simulator, rocprof-style counters
and exact figures hardware cannot count; everywhere, occupancy from the code object and a
roofline placement (a model). ``--json`` prints one JSON document instead; ``--plot`` draws
the dispatches on their card's roofline (matplotlib: ``pip install 'hsapy[plot]'``). The
program runs in-process, as under ``hsapy trace``; its exit status is the command's.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from hsapy.commands._args import count

HELP = ("run a Python program and print counters, occupancy and a roofline placement per "
        "kernel dispatch")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``hsapy profile``."""
    parser.add_argument("--json", action="store_true",
                        help="print the profiles as one JSON document (after the program)")
    parser.add_argument("--plot", metavar="FILE",
                        help="draw the dispatches on their roofline (.png, .svg or .pdf; "
                             "needs matplotlib: pip install 'hsapy[plot]')")
    parser.add_argument("--instructions", type=count(0), default=None, metavar="N",
                        help="rows of the per-instruction table per dispatch (default 10; "
                             "--json: all unless given)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                        help="python script.py args | python -m module args | script.py args")


def run(args: argparse.Namespace) -> int:
    """Entry point of ``hsapy profile``: the program's exit status (2 on a bad command line)."""
    from hsapy.commands.trace import CommandLineError, parse_command, run_program
    from hsapy.profile import Profiler

    if not [part for part in args.command if part != "--"]:
        print("hsapy profile: give the program to profile after --, e.g. "
              "hsapy profile -- python script.py args", file=sys.stderr)
        return 2
    try:
        kind, target, argv = parse_command(args.command)
    except CommandLineError as exc:
        print(f"hsapy profile: {str(exc).replace('hsapy trace', 'hsapy profile')}",
              file=sys.stderr)
        return 2
    if args.instructions is not None and args.instructions < 0:
        print("hsapy profile: --instructions takes a count >= 0", file=sys.stderr)
        return 2
    if args.plot:
        from hsapy import plot
        from hsapy.errors import HsapyError

        try:
            plot.check_path(args.plot, "--plot")
            plot.require_matplotlib("--plot")
        except HsapyError as exc:
            print(f"hsapy profile: {exc}", file=sys.stderr)
            return 2
    profiler = Profiler()
    with profiler:
        status = run_program(kind, target, argv)
    sys.stdout.flush()
    dispatches = profiler.dispatches
    if args.json:
        print(json.dumps(profiler.to_json(args.instructions), indent=1))
    else:
        print(format_all(dispatches, 10 if args.instructions is None else args.instructions))
    if args.plot:
        written = write_plot(args.plot, dispatches)
        sys.stdout.flush()
        print(f"hsapy profile: {written}", file=sys.stderr)
    return status


def format_all(dispatches: list, instructions: int) -> str:
    """Every dispatch's table, then one line saying what the figures are."""
    if not dispatches:
        return "hsapy profile: the program published no kernel dispatch"
    parts = [d.report(instructions) for d in dispatches]
    simulated = any(d.simulated for d in dispatches)
    summary = f"hsapy profile: {len(dispatches)} dispatch(es)"
    if simulated:
        summary += ("; counters are the simulator's exact counts (no timing, no caches); "
                    "rooflines are models against published peaks, not measurements")
    else:
        summary += ("; on a GPU hsapy profile gives occupancy only: use rocprofv3 for its "
                    "counters")
    return "\n\n".join(parts + [summary])


def write_plot(path: str, dispatches: list) -> str:
    """Draw the dispatches with a roofline, one chart per target (the first target's to
    ``path``, others beside it as ``path`` with ``-gfxNNN`` before the extension); what was
    written, as a sentence."""
    from pathlib import Path

    from hsapy.errors import HsapyValueError
    from hsapy.plot import roofline_chart
    from hsapy.roofline import peaks_for

    by_target: dict[str, list[Any]] = {}
    for d in dispatches:
        if len(d.roofline) == 2:
            by_target.setdefault(d.target, []).append(d)
    if not by_target:
        return f"no roofline to draw (no profiled dispatch with FLOPs): {path} not written"
    written = []
    for k, (target, items) in enumerate(by_target.items()):
        out = Path(path)
        if k:
            out = out.with_name(f"{out.stem}-{target}{out.suffix}")
        points = [(f"{d.kernel} #{d.index}", d.roofline[0], d.roofline[1]) for d in items]
        peaks = peaks_for(target)
        try:
            roofline_chart(peaks, points, out, f"hsapy profile: roofline of {peaks.product} "
                           f"({target})", "simulated counts; ceilings from AMD's published "
                           "peaks")
        except HsapyValueError as exc:
            written.append(f"{out} not written ({exc})")
            continue
        written.append(f"roofline written to {out}")
    return "; ".join(written)
