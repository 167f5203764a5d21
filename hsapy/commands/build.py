"""``hsapy build``: a code object from LLVM IR, HIP, AMDGPU assembly or an hsapy.asm kernel."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "build a code object (.hsaco) from .ll, .hip, .s or asm:<kernel> for a gfx target"

_ASM_PREFIX = "asm:"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source",
                        help="a .ll (LLVM IR), .hip/.cpp (HIP) or .s (AMDGPU assembly) file, "
                             "or asm:<kernel> for a kernel of hsapy.asm (empty, timestamp, "
                             "vector_add)")
    parser.add_argument("--target", required=True, metavar="GFX",
                        help="target processor, e.g. gfx942, gfx1201, gfx1100, gfx90a "
                             "(optionally :xnack+/- :sramecc+/-)")
    parser.add_argument("-o", "--output", metavar="OUT",
                        help="output file (default: <name>-<target>.hsaco)")
    parser.add_argument("--code-object-version", type=int, choices=(4, 5, 6), default=5,
                        help="code object version (default 5; 6 needs ROCm 6.2 or newer)")
    parser.add_argument("--wavefront-size", type=int, choices=(32, 64),
                        help="wave size on gfx10+ (default 32; gfx9 is always 64)")
    parser.add_argument("--compiler", choices=("auto", "hipcc", "clang"), default="auto",
                        help="HIP compiler (default: hipcc when it supports the target, "
                             "else clang)")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                        help="extra include directory for HIP sources (repeatable)")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                        help="preprocessor definition for HIP sources (repeatable)")
    parser.add_argument("--device-libs", action="store_true",
                        help="link ROCm's device-library bitcode (ocml/ockl) into a HIP build "
                             "instead of -nogpulib (Debian rocm-device-libs or a ROCm install)")
    parser.add_argument("--no-cache", action="store_true",
                        help="build even when the cache holds the result (and do not store it)")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="show the tools found, the commands run and cache hits")


def _defines(items: list[str]) -> dict[str, str]:
    defines = {}
    for item in items:
        name, _, value = item.partition("=")
        defines[name] = value or "1"
    return defines


def _build(args: argparse.Namespace) -> tuple[bytes, str]:
    """(code object bytes, name for the default output file)."""
    from hsapy import toolchain
    from hsapy.errors import HsapyValueError

    cache = not args.no_cache
    if args.source.startswith(_ASM_PREFIX):
        from hsapy.asm import kernels

        name = args.source[len(_ASM_PREFIX):]
        data = kernels.build(name, args.target, code_object_version=args.code_object_version,
                             wavefront_size=args.wavefront_size, cache=cache)
        return data, name
    path = Path(args.source)
    if path.is_dir():
        raise HsapyValueError(f"{path} is a directory; give a source file (.ll, .hip, .s) or "
                              "asm:<name>, e.g. asm:vector_add")
    if not path.is_file():
        raise HsapyValueError(f"{path} does not exist (for a kernel of hsapy.asm write "
                              f"asm:<name>, e.g. asm:vector_add)")
    suffix = path.suffix.lower()
    if suffix in (".hip", ".cpp", ".cu", ".cc"):
        extra = []
        target = toolchain.BuildTarget.parse(args.target)
        if args.wavefront_size is not None:
            target.check_wavefront_size(args.wavefront_size)
            if target.major >= 10:
                extra = ["-mwavefrontsize64" if args.wavefront_size == 64
                         else "-mno-wavefrontsize64"]
        data = toolchain.build_hip(path, target, code_object_version=args.code_object_version,
                                   include_dirs=args.include_dirs,
                                   defines=_defines(args.defines), extra_args=extra,
                                   compiler=args.compiler, device_libs=args.device_libs,
                                   cache=cache)
        return data, path.stem
    data = toolchain.build_file(path, args.target, code_object_version=args.code_object_version,
                                wavefront_size=args.wavefront_size, cache=cache)
    return data, path.stem


def _kernel_names(data: bytes) -> list[str]:
    try:
        from hsapy.codeobject import CodeObject

        return sorted(CodeObject.from_bytes(data).kernels)
    except Exception:  # the summary line is informative only
        return []


def run(args: argparse.Namespace) -> int:
    from hsapy import toolchain
    from hsapy._checks import check_output_path
    from hsapy.errors import HsapyError

    def show(event: toolchain.ToolchainEvent) -> None:
        print(f"[{event.kind}] {event.message}", file=sys.stderr)

    try:
        if args.output is not None:      # before a build that may take minutes
            check_output_path(args.output, "-o")
        if args.verbose:
            with toolchain.observe(show):
                data, stem = _build(args)
        else:
            data, stem = _build(args)
    except HsapyError as exc:
        print(f"hsapy build: {exc}", file=sys.stderr)
        return 1
    output = Path(args.output or f"{stem}-{args.target.replace(':', '_')}.hsaco")
    try:
        output.write_bytes(data)
    except OSError as exc:
        print(f"hsapy build: cannot write {output}: {exc.strerror}", file=sys.stderr)
        return 1
    kernels = _kernel_names(data)
    listing = f"; kernels: {', '.join(kernels)}" if kernels else ""
    print(f"wrote {output} ({len(data)} bytes, {args.target}, code object "
          f"v{args.code_object_version}{listing})")
    return 0
