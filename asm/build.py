#!/usr/bin/env python3
"""Rebuild the prebuilt code objects of hsapy.asm: ``asm/prebuilt/<module>.<name>-<target>.hsaco``.

llvmlite compiles LLVM IR in-process, but turning its relocatable object into a loadable code
object takes ``ld.lld``. A ``pip install hsapy`` without the ``toolchain`` extra and without
lld on the machine has no linker, so hsapy ships the linked results of every kernel it builds
itself -- the ``hsapy.asm.kernels`` kernels (``empty``, ``timestamp``, ``vector_add``) and the
llvmlite operators of ``hsapy.asm.operators`` -- for every target of the simulator's profiles.
:func:`hsapy.toolchain.build_ir` uses one only when no linker is found, and only when the IR it
was asked to build hashes to the IR the file was built from, so a stale file is never used.

``prebuilt/MANIFEST.json`` records per file the SHA-256 of the input IR, the build options and
the file's SHA-256, plus the llvmlite, LLVM and linker versions. tests/unit/test_asm_prebuilt.py
checks that every entry still matches the IR hsapy generates (and the bytes, where the same
linker version is present).

Usage::

    python3 asm/build.py                    # every kernel, every target
    python3 asm/build.py --target gfx942    # a subset
    python3 asm/build.py --check            # rebuild in memory, compare, exit 1 on difference
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
PREBUILT = HERE / "prebuilt"
MANIFEST = PREBUILT / "MANIFEST.json"

TARGETS = ("gfx942", "gfx1201", "gfx1100", "gfx90a")
CODE_OBJECT_VERSION = 5
OPT_LEVEL = 2


def sources() -> dict[str, Callable[[str], str]]:
    """file stem prefix -> function(target) -> the IR text hsapy builds for it.

    These are exactly the calls ``kernels.build(name, target)`` and
    ``operators.build(operator, target)`` make (default wave size, code object v5, O2)."""
    from hsapy.asm import kernels, operators

    table: dict[str, Callable[[str], str]] = {}
    for name in kernels.names():
        table[f"kernels.{name}"] = (lambda target, name=name: kernels.ir(name, target))
    for operator in operators.KERNELS:
        table[f"operators.{operator}"] = (
            lambda target, operator=operator: operators.operator_ir(operator, target))
    return table


def file_name(stem: str, target: str) -> str:
    """The name of one prebuilt file."""
    return f"{stem}-{target}.hsaco"


def load_manifest() -> dict:
    """The manifest of the checked-in code objects (empty when there is none)."""
    if not MANIFEST.is_file():
        return {}
    return json.loads(MANIFEST.read_text())


def build_all(stems: tuple[str, ...], targets: tuple[str, ...], check: bool) -> int:
    """Build (or with ``check``, compare) every stem x target; return an exit status."""
    import llvmlite
    import llvmlite.binding as llvm

    from hsapy import toolchain

    table = sources()
    linker = toolchain.find_tool("ld.lld")
    manifest = load_manifest()
    files = dict(manifest.get("files", {}))
    status = 0
    for stem in stems:
        for target in targets:
            text = table[stem](target)
            wave = toolchain.BuildTarget.parse(target).default_wavefront_size
            data = toolchain.build_ir(text, target, code_object_version=CODE_OBJECT_VERSION,
                                      opt_level=OPT_LEVEL, linker=linker, cache=False)
            path = PREBUILT / file_name(stem, target)
            if check:
                same = path.is_file() and path.read_bytes() == data
                print(f"{'same' if same else 'DIFFERENT':9} {path.relative_to(HERE)}")
                status |= 0 if same else 1
                continue
            PREBUILT.mkdir(exist_ok=True)
            path.write_bytes(data)
            files[path.name] = {
                "ir_sha256": hashlib.sha256(text.encode()).hexdigest(),
                "target": target,
                "code_object_version": CODE_OBJECT_VERSION,
                "wavefront_size": wave,
                "opt_level": OPT_LEVEL,
                "sha256": hashlib.sha256(data).hexdigest(),
                "size": len(data),
            }
            print(f"wrote {path.relative_to(HERE)} ({len(data)} bytes)")
    if not check:
        manifest = {
            "llvmlite": llvmlite.__version__,
            "llvm": ".".join(str(part) for part in llvm.llvm_version_info),
            "linker": linker.version,
            "files": dict(sorted(files.items())),
        }
        MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    return status


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    # not __doc__: python -OO strips it
    parser = argparse.ArgumentParser(
        description="Rebuild the prebuilt code objects of hsapy.asm (asm/prebuilt/).")
    parser.add_argument("--target", action="append", choices=TARGETS,
                        help="build only this target (repeatable)")
    parser.add_argument("--check", action="store_true",
                        help="rebuild in memory and compare with the files; exit 1 on difference")
    args = parser.parse_args(argv)
    return build_all(tuple(sources()), tuple(args.target or TARGETS), args.check)


if __name__ == "__main__":
    sys.exit(main())
