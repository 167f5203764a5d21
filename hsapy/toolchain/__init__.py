"""Code objects from three routes: LLVM IR through llvmlite, HIP through clang/hipcc, assembly.

Every route ends in the bytes of a loadable AMDGPU code object (an ELF shared object, ``.hsaco``):

- :func:`build_ir`: LLVM IR text or an ``llvmlite.ir.Module`` -> llvmlite's AMDGPU target machine
  (O2 pipeline, code object version pinned) -> relocatable object -> ``ld.lld -shared``. With
  no ``ld.lld`` on the machine, the kernels hsapy builds itself come from the code objects
  shipped in hsapy.asm's ``prebuilt/`` (:func:`prebuilt_code_object`; ``asm/build.py``).
- :func:`build_hip`: a HIP source -> ``hipcc --genco`` when it supports the target, otherwise
  clang in HIP device-only mode with hsapy's small device header (``kernels/include``).
- :func:`assemble`: AMDGPU assembly text -> ``llvm-mc`` (or ``clang -x assembler``) -> ``ld.lld``.

Tools are found by :func:`find_tool` (``$ROCM_PATH/llvm/bin``, then ``PATH`` newest version first,
then the ``ziglang`` wheel for ``ld.lld``). Results are kept in a content-addressed cache keyed by
the source, the target, the options and the versions of every tool involved, so a second build of
the same input runs no compiler and no linker. :func:`observe` reports what was found and run
(``hsapy build --verbose`` prints it).

One module per job: ``target`` (what a build is for), ``tools`` (finding and running tools),
``cache``, ``events`` (what was found and run), one module per route (``route_ir``,
``route_asm``, ``route_hip``) and ``files`` (any source file by its suffix). Import from
``hsapy.toolchain``.
"""
from __future__ import annotations

from hsapy.toolchain.cache import CacheWarning, cache_dir
from hsapy.toolchain.events import ToolchainEvent, observe
from hsapy.toolchain.files import build_file
from hsapy.toolchain.route_asm import assemble
from hsapy.toolchain.route_hip import build_hip, find_device_libs, hip_include_dir
from hsapy.toolchain.route_ir import (
    build_ir,
    compile_ir,
    emit_assembly,
    link,
    prebuilt_code_object,
)
from hsapy.toolchain.target import AMDGPU_TRIPLE, BuildTarget
from hsapy.toolchain.tools import BuildError, ToolInfo, ToolNotFoundError, find_tool

__all__ = [
    "AMDGPU_TRIPLE",
    "BuildError",
    "BuildTarget",
    "CacheWarning",
    "ToolInfo",
    "ToolNotFoundError",
    "ToolchainEvent",
    "assemble",
    "build_file",
    "build_hip",
    "build_ir",
    "cache_dir",
    "compile_ir",
    "emit_assembly",
    "find_device_libs",
    "find_tool",
    "hip_include_dir",
    "link",
    "observe",
    "prebuilt_code_object",
]
