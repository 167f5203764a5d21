#!/usr/bin/env python3
"""Rebuild the prebuilt code objects of the operator suite:
``kernels/prebuilt/<op>-<target>.hsaco``.

One code object per operator and target holds the kernels of every variant of that operator, so
a user with a GPU and no compiler can run ``hsapy run`` from these files. The build goes through
``hsapy.toolchain.build_hip`` (clang-19, ``-nogpulib -nogpuinc`` and kernels/include/hsapy_hip.h)
when that is available; otherwise through clang-19 directly with the same kind of command line.
``prebuilt/MANIFEST.json`` records the builder, the compiler version and a SHA-256 per file, and
tests/unit/test_prebuilt.py rebuilds everything and compares the bytes when clang-19 is present.

Usage::

    python3 kernels/build.py                    # every operator, every target
    python3 kernels/build.py --target gfx942    # a subset
    python3 kernels/build.py --check            # rebuild in memory, compare, exit 1 on difference
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PREBUILT = HERE / "prebuilt"
MANIFEST = PREBUILT / "MANIFEST.json"
REPO = HERE.parent

TARGETS = ("gfx942", "gfx1201", "gfx1100", "gfx90a")
OPERATORS = ("vector_add", "reduction", "softmax", "gemm", "attention", "rmsnorm")

BUILDER_TOOLCHAIN = "hsapy.toolchain.build_hip"
BUILDER_CLANG = "clang-19"

# -fuse-cuid=none: clang otherwise names a __hip_cuid_<random> symbol per compile, which makes
# every build differ; without it the output is byte-for-byte reproducible.
CLANG_FLAGS = ("-x", "hip", "--cuda-device-only", "--no-gpu-bundle-output", "-nogpulib",
               "-nogpuinc", "-fuse-cuid=none", "-O3", "-std=c++17")


def header_dir() -> Path:
    """Where hsapy_hip.h lives: kernels/include (the toolchain's device header)."""
    include = HERE / "include"
    if (include / "hsapy_hip.h").is_file():
        return include
    raise FileNotFoundError("hsapy_hip.h not found in kernels/include")


def available_builder() -> str:
    """The builder this machine would use: the toolchain's build_hip when importable."""
    try:
        from hsapy.toolchain import hip_include_dir

        hip_include_dir()
    except Exception:  # no toolchain module yet, or its header is missing
        return BUILDER_CLANG
    return BUILDER_TOOLCHAIN


def clang_version() -> str:
    """First line of ``clang-19 --version``; raises FileNotFoundError without clang-19."""
    clang = shutil.which("clang-19")
    if clang is None:
        raise FileNotFoundError("clang-19 is not installed (Debian: apt-get install clang-19)")
    out = subprocess.run([clang, "--version"], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()[0].strip()


def _build_with_clang(source: Path, target: str) -> bytes:
    clang = shutil.which("clang-19")
    if clang is None:
        raise FileNotFoundError("clang-19 is not installed (Debian: apt-get install clang-19)")
    with tempfile.TemporaryDirectory(prefix="hsapy-kernels-") as tmp:
        out = Path(tmp) / "out.hsaco"
        command = [clang, *CLANG_FLAGS, f"--offload-arch={target}", "-include", "hsapy_hip.h",
                   "-mcode-object-version=5", f"-I{header_dir()}",
                   f"-I{HERE}", str(source), "-o", str(out)]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"building {source.name} for {target} failed:\n"
                               f"{' '.join(command)}\n{result.stderr}")
        return out.read_bytes()


def build_bytes(operator: str, target: str, builder: str | None = None) -> bytes:
    """Build the code object of ``operator`` (all its variants' kernels) for ``target``."""
    source = HERE / f"{operator}.hip"
    builder = builder or available_builder()
    if builder == BUILDER_TOOLCHAIN:
        from hsapy.toolchain import build_hip

        # clang, never hipcc: the sources use hsapy_hip.h, not ROCm's headers, and every target
        # must come from the same compiler for the files to be reproducible.
        return build_hip(source, target=target, compiler="clang",
                         extra_args=("-fuse-cuid=none",), cache=False)
    return _build_with_clang(source, target)


def prebuilt_file(operator: str, target: str) -> Path:
    """The path of one prebuilt code object."""
    return PREBUILT / f"{operator}-{target}.hsaco"


def load_manifest() -> dict:
    """The manifest of the checked-in code objects (empty when there is none)."""
    if not MANIFEST.is_file():
        return {}
    return json.loads(MANIFEST.read_text())


def build_all(operators: tuple[str, ...], targets: tuple[str, ...], check: bool,
              builder: str | None = None) -> int:
    """Build (or with ``check``, compare) every operator x target; return an exit status."""
    manifest = load_manifest()
    if builder is None:
        builder = manifest.get("builder") if check and manifest else available_builder()
    files = dict(manifest.get("files", {}))
    status = 0
    for operator in operators:
        for target in targets:
            data = build_bytes(operator, target, builder)
            path = prebuilt_file(operator, target)
            digest = hashlib.sha256(data).hexdigest()
            if check:
                same = path.is_file() and path.read_bytes() == data
                print(f"{'same' if same else 'DIFFERENT':9} {path.relative_to(HERE)}")
                status |= 0 if same else 1
                continue
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(data)
            files[path.name] = {"sha256": digest, "size": len(data)}
            print(f"wrote {path.relative_to(HERE)} ({len(data)} bytes)")
    if not check:
        manifest = {
            "builder": builder,
            "compiler": clang_version(),
            "clang_flags": list(CLANG_FLAGS) if builder == BUILDER_CLANG else None,
            "header": str(header_dir().relative_to(REPO)),
            "files": dict(sorted(files.items())),
        }
        MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    return status


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    # not __doc__: python -OO strips it
    parser = argparse.ArgumentParser(
        description="Rebuild the prebuilt code objects of the operator suite (kernels/prebuilt/).")
    parser.add_argument("--target", action="append", choices=TARGETS,
                        help="build only this target (repeatable)")
    parser.add_argument("--operator", action="append", choices=OPERATORS,
                        help="build only this operator (repeatable)")
    parser.add_argument("--builder", choices=(BUILDER_TOOLCHAIN, BUILDER_CLANG),
                        help="force a builder (default: the toolchain when its header exists)")
    parser.add_argument("--check", action="store_true",
                        help="rebuild in memory and compare with the files; exit 1 on difference")
    args = parser.parse_args(argv)
    return build_all(tuple(args.operator or OPERATORS), tuple(args.target or TARGETS),
                     args.check, args.builder)


if __name__ == "__main__":
    sys.exit(main())
