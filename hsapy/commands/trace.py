"""``hsapy trace``: run a Python program in this process and record its AQL traffic.

    hsapy trace [-o trace.json] -- python script.py args...
    hsapy trace [-o trace.json] -- python -m package.module args...
    hsapy trace [-o trace.json] -- script.py args...

The program runs in-process (``runpy``, with ``sys.argv`` set as Python would set it), because
the tracer is an observer of hsapy's queues inside this interpreter; a program in another
process (or not written in Python) would publish packets the tracer cannot see. The trace is
written even when the program fails; the exit status is the program's.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from typing import Any

from hsapy._checks import check_output_path
from hsapy.commands._args import seconds
from hsapy.errors import HsapyError

HELP = "run a Python program and write its AQL packets, doorbells and GPU times as Perfetto JSON"

_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")


class CommandLineError(ValueError):
    """The command after ``--`` cannot be traced in-process."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``hsapy trace``."""
    parser.add_argument("-o", "--output", default="trace.json", metavar="FILE",
                        help="where to write the trace (default: trace.json)")
    parser.add_argument("--harvest-timeout", type=seconds, default=2.0, metavar="S",
                        help="seconds to wait at the end for packets still running (default 2)")
    parser.add_argument("--no-counters", action="store_true",
                        help="leave out the counters and occupancy on dispatch slices (on the "
                             "simulator counting makes dispatches slower)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                        help="python script.py args | python -m module args | script.py args")


def parse_command(command: list[str]) -> tuple[str, str, list[str]]:
    """(kind, target, argv) with kind "path" or "module"; CommandLineError when the command is
    not a Python program this process can run."""
    command = list(command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CommandLineError("give the program to trace after --, e.g. "
                               "hsapy trace -o trace.json -- python script.py args")
    first = command[0]
    if _PYTHON.match(os.path.basename(first)) or os.path.abspath(first) == sys.executable:
        rest = command[1:]
        if not rest:
            raise CommandLineError("python needs a script or -m module to trace (an "
                                   "interactive session cannot be traced)")
        if rest[0] == "-m":
            if len(rest) < 2:
                raise CommandLineError("python -m needs a module name")
            _require_module(rest[1])
            return "module", rest[1], [rest[1], *rest[2:]]
        if rest[0].startswith("-"):
            raise CommandLineError(f"python option {rest[0]} is not supported by hsapy trace; "
                                   "give python script.py ... or python -m module ...")
        command = rest
    script = command[0]
    if not script.endswith(".py") and not _is_python_file(script):
        raise CommandLineError(
            f"{script} is not a Python program: hsapy trace runs the program inside its own "
            "interpreter, where it can observe hsapy's queues; give python script.py ... or "
            "python -m module ...")
    if not os.path.isfile(script):
        raise CommandLineError(f"no such script: {script}")
    return "path", script, command


def _require_module(name: str) -> None:
    """CommandLineError unless ``python -m name`` would find the module (looked up as
    ``run_program`` runs it, with the working directory first on the path): a typo is then one
    line before anything runs, not runpy's traceback inside the trace."""
    import importlib.util

    saved_path = sys.path[:]
    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:     # a parent that is not a package, "" or ".x"
        raise CommandLineError(f"cannot run python -m {name}: {exc}") from None
    finally:
        sys.path[:] = saved_path
    if spec is None:
        raise CommandLineError(f"no module named {name!r} (python -m looks in the working "
                               "directory and on sys.path)")


def _is_python_file(path: str) -> bool:
    try:
        with open(path, "rb") as file:
            first_line = file.readline(200)
    except OSError:
        return False
    return first_line.startswith(b"#!") and b"python" in first_line


def run_program(kind: str, target: str, argv: list[str]) -> int:
    """Run the program as ``__main__`` with ``sys.argv``/``sys.path`` as Python sets them; its
    exit status (exceptions print a traceback and give 1)."""
    import runpy

    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = list(argv)
    try:
        if kind == "module":
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
        return 0
    except SystemExit as exc:
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        print(exc.code, file=sys.stderr)
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def format_summary(summary: dict[str, Any]) -> str:
    """The lines ``hsapy trace`` prints after the program."""
    queues = summary["queues"]
    lines = [f"hsapy trace: {summary['packets']} packets on {len(queues)} queue(s), "
             f"{summary['dispatches']} dispatches, {summary['barriers']} barriers "
             f"-> {summary['path']}"]
    for q in queues:
        lines.append(f"  queue {q['queue']} on {q['agent']}: {q['packets']} packets "
                     f"({q['dispatches']} dispatches, {q['barriers']} barriers), "
                     f"{q['timed']} with GPU times, {q['doorbells']} doorbells")
    if summary["dependencies"]:
        line = (f"  barrier dependencies: {summary['dependencies']}, "
                f"{summary['flows']} drawn as flow arrows")
        if summary["dependencies_without_producer"]:
            line += (f", {summary['dependencies_without_producer']} on signals no traced "
                     "packet completes (set by the host)")
        lines.append(line)
    if summary["simulated"]:
        lines.append("  GPU times are simulated (the hsapy simulator's clock)")
    lines.append("Open it at https://ui.perfetto.dev (Open trace file) or chrome://tracing")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Entry point of ``hsapy trace``: the program's exit status (2 on a bad command line)."""
    from hsapy.trace import Trace

    try:
        kind, target, argv = parse_command(args.command)
    except CommandLineError as exc:
        print(f"hsapy trace: {exc}", file=sys.stderr)
        return 2
    try:
        check_output_path(args.output, "-o")
    except HsapyError as exc:
        print(f"hsapy trace: {exc}", file=sys.stderr)
        return 2
    trace = Trace(os.path.abspath(args.output), harvest_timeout=args.harvest_timeout,
                  counters=not args.no_counters)
    with trace:
        status = run_program(kind, target, argv)
    sys.stdout.flush()
    print(format_summary(trace.summary()), file=sys.stderr)
    return status
