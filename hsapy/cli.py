"""The ``hsapy`` command.

Each subcommand lives in ``hsapy/commands/<name>.py`` and defines ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``. Command modules keep their imports of heavy
modules inside ``run`` so that ``hsapy --help`` stays fast.
"""
from __future__ import annotations

import argparse
import codecs
import importlib
import sys

from hsapy import __version__
from hsapy.errors import HsapyError
from hsapy.hostenv import quiet_blas_spin

# Order is the order shown in --help.
COMMANDS = ("demo", "info", "inspect", "disasm", "build", "run", "bench", "trace", "profile",
            "selftest")


def _available_commands():
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"hsapy.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"hsapy.commands.{name}":
                continue  # not built yet
            raise
        yield name, module


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hsapy",
        description="Drive AMD GPUs at the HSA/AQL level (or the hsapy simulator without one).",
    )
    parser.add_argument("--version", action="version", version=f"hsapy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in _available_commands():
        cmd = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def _escape_what_stdout_cannot_encode() -> None:
    """Print characters the terminal's encoding lacks as escapes (``\\xb5``) instead of raising
    UnicodeEncodeError midway through a command: an ASCII stdout (``LC_ALL=C PYTHONUTF8=0``,
    ``PYTHONIOENCODING=ascii``) meets a "µs" or a file name such as ``ö.hsaco``. stderr escapes
    by default already."""
    stream = sys.stdout
    reconfigure = getattr(stream, "reconfigure", None)   # absent when replaced by a non-file
    if reconfigure is None:
        return
    is_utf8 = codecs.lookup(stream.encoding or "ascii").name == "utf-8"
    if not is_utf8 or stream.errors == "strict":
        reconfigure(errors="backslashreplace")


def main(argv: list[str] | None = None) -> int:
    # before anything imports numpy: its BLAS threads would spin on the simulator's cores
    quiet_blas_spin()
    _escape_what_stdout_cannot_encode()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except HsapyError as exc:
        # a typed error names the problem and what to do: one line, not a traceback
        print(f"hsapy {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("hsapy: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
