"""``hsapy disasm``: hsapy's own disassembly of a code object (no LLVM needed)."""
from __future__ import annotations

import argparse
import sys

HELP = "disassemble a code object with hsapy's decoder (address, raw words, LLVM syntax)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="code object (.hsaco / .co ELF, or an offload bundle)")
    parser.add_argument("--kernel", metavar="NAME", help="only this kernel")
    parser.add_argument("--target", metavar="GFX",
                        help="pick this target's code object from an offload bundle")


def run(args: argparse.Namespace) -> int:
    from hsapy.codeobject import read_code_object_file
    from hsapy.errors import HsapyError
    from hsapy.sim.isa.disasm import disassemble

    try:
        data = read_code_object_file(args.path)
    except OSError as exc:
        print(f"hsapy disasm: cannot read {args.path}: {exc.strerror}", file=sys.stderr)
        return 1
    except HsapyError as exc:
        print(f"hsapy disasm: {exc}", file=sys.stderr)
        return 1
    try:
        sys.stdout.write(disassemble(data, kernel=args.kernel, target=args.target))
    except HsapyError as exc:
        print(f"hsapy disasm: {exc}", file=sys.stderr)
        return 1
    return 0
