"""Any source file, by its suffix: ``.hip``/``.cpp``, ``.ll``, ``.s``."""
from __future__ import annotations

import os
from pathlib import Path

from hsapy.errors import HsapyTypeError, HsapyValueError
from hsapy.toolchain.route_asm import assemble
from hsapy.toolchain.route_hip import build_hip
from hsapy.toolchain.route_ir import build_ir
from hsapy.toolchain.target import BuildTarget


def build_file(path: str | Path, target: str | BuildTarget = "gfx942", *,
               code_object_version: int = 5, wavefront_size: int | None = None,
               cache: bool = True) -> bytes:
    """Build a ``.ll``, ``.hip``/``.cpp``/``.cu`` or ``.s`` file by its suffix."""
    if not isinstance(path, (str, os.PathLike)):
        raise HsapyTypeError(f"build_file takes a path (str or pathlib.Path), not "
                             f"{type(path).__name__} {path!r:.40}")
    path = Path(path)
    if not path.is_file():
        raise HsapyValueError(f"{path} does not exist")
    suffix = path.suffix.lower()
    if suffix in (".ll",):
        return build_ir(path.read_text(), target, code_object_version=code_object_version,
                        wavefront_size=wavefront_size, cache=cache)
    if suffix in (".hip", ".cpp", ".cu", ".cc"):
        extra = []
        parsed = BuildTarget.parse(target)
        if wavefront_size is not None and parsed.major >= 10:
            size = parsed.check_wavefront_size(wavefront_size)
            extra = ["-mwavefrontsize64" if size == 64 else "-mno-wavefrontsize64"]
        elif wavefront_size is not None:
            parsed.check_wavefront_size(wavefront_size)
        return build_hip(path, target, code_object_version=code_object_version,
                         extra_args=extra, cache=cache)
    if suffix in (".s", ".asm"):
        return assemble(path.read_text(), target, code_object_version=code_object_version,
                        wavefront_size=wavefront_size, cache=cache)
    raise HsapyValueError(
        f"don't know how to build {path.name}: expected .ll (LLVM IR), .hip/.cpp/.cu (HIP) or "
        ".s (AMDGPU assembly), or asm:<kernel> for a kernel from hsapy.asm"
    )
