"""HIP sources -> ``hipcc --genco`` when it supports the target, otherwise clang in HIP
device-only mode with hsapy's small device header (``kernels/include``); ROCm's device
libraries when a kernel needs them."""
from __future__ import annotations

import importlib.util
import os
import struct
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from hsapy.errors import HsapyError, HsapyValueError
from hsapy.toolchain import tools
from hsapy.toolchain.cache import cached_build, sha256
from hsapy.toolchain.events import emit
from hsapy.toolchain.target import BuildTarget, check_code_object_version
from hsapy.toolchain.tools import (
    BuildError,
    ToolInfo,
    ToolNotFoundError,
    find_tool,
    probe,
    rocm_path,
    tool_env,
    tool_identity,
)


def hip_include_dir() -> Path:
    """The directory of ``hsapy_hip.h`` (``kernels/include``, installed as hsapy.kernels)."""
    spec = importlib.util.find_spec("hsapy.kernels")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "include"
            if (candidate / "hsapy_hip.h").is_file():
                return candidate
    # Source checkout without the package mapping.
    candidate = Path(__file__).resolve().parent.parent / "kernels" / "include"
    if (candidate / "hsapy_hip.h").is_file():
        return candidate
    raise HsapyError("hsapy's HIP device header (kernels/include/hsapy_hip.h) is missing from "
                     "this installation; reinstall hsapy")


_HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".inc", ".cuh")


def _headers_digest(directories: Iterable[Path]) -> dict[str, str]:
    """Hash the headers next to the source and in the include directories (not recursive).

    Includes are not followed by a preprocessor run (that would be a compiler run on a cache
    hit); hashing the headers of every include directory covers what kernels/ does.
    """
    digest: dict[str, str] = {}
    for directory in directories:
        if not directory.is_dir():
            continue
        for path in sorted(directory.iterdir()):
            if path.suffix in _HEADER_SUFFIXES and path.is_file():
                digest[str(path.resolve())] = sha256(path.read_bytes())
    return digest


def _hip_supports(tool: ToolInfo, target: BuildTarget) -> bool:
    """Whether hipcc/clang accepts ``--offload-arch=<target>`` (probed once per tool)."""
    args = ["-x", "hip", "--cuda-device-only", "-nogpulib", "-nogpuinc",
            f"--offload-arch={target}", "-E", "-o", os.devnull, os.devnull]
    code, _ = probe(tool.argv, tool.path, args, env=tool_env(tool.name))
    return code == 0


def _hip_compiler(target: BuildTarget, compiler: str) -> ToolInfo:
    """hipcc when it supports ``target`` (and ``compiler`` allows it), else the first clang
    that does."""
    if compiler not in ("auto", "hipcc", "clang"):
        raise HsapyValueError(f"compiler must be 'auto', 'hipcc' or 'clang', got {compiler!r}")
    if compiler in ("auto", "hipcc"):
        try:
            hipcc = find_tool("hipcc")
        except ToolNotFoundError:
            if compiler == "hipcc":
                raise
        else:
            if _hip_supports(hipcc, target):
                return hipcc
            if compiler == "hipcc":
                raise HsapyValueError(f"hipcc ({hipcc.version}) does not support {target}; "
                                      "use compiler='clang' with clang-19")
            emit("note", f"hipcc ({hipcc.version}) does not support {target}; using clang")
    # An older clang (a ROCm install, an unversioned clang) may lack the target: take the first
    # one that accepts it.
    return find_tool("clang", accept=lambda tool: _hip_supports(tool, target),
                     requirement=f"one that supports --offload-arch={target}")


def _is_bundle(data: bytes) -> bool:
    return data.startswith(b"__CLANG_OFFLOAD_BUNDLE__") or data.startswith(b"CCOB")


def _extract_code_object(data: bytes, target: BuildTarget) -> bytes:
    """Plain ELF as is; an offload bundle -> the entry for ``target``."""
    if data[:4] == b"\x7fELF":
        return data
    try:
        from hsapy.codeobject import extract_for_target
    except ImportError:
        return _unbundle(data, target)
    return extract_for_target(data, str(target))


def _unbundle(data: bytes, target: BuildTarget) -> bytes:
    """Minimal reader for an uncompressed clang offload bundle (fallback when hsapy.codeobject
    is absent): magic, u64 count, then (u64 offset, u64 size, u64 id length, id) per entry."""
    magic = b"__CLANG_OFFLOAD_BUNDLE__"
    if not data.startswith(magic):
        raise BuildError("the compiler produced neither an ELF code object nor an offload "
                         "bundle hsapy can read (compressed bundles need hsapy.codeobject)", "")
    (count,) = struct.unpack_from("<Q", data, len(magic))
    position = len(magic) + 8
    entries = []
    for _ in range(count):
        offset, size, id_length = struct.unpack_from("<QQQ", data, position)
        position += 24
        entry_id = data[position:position + id_length].decode(errors="replace")
        position += id_length
        entries.append((entry_id, data[offset:offset + size]))
    for entry_id, blob in entries:
        entry_target = entry_id.split("--", 1)[-1] if "--" in entry_id else ""
        if entry_id.startswith(("hip", "hipv4")) and entry_target.split(":")[0] == target.processor:
            return blob
    names = ", ".join(entry_id for entry_id, _ in entries)
    raise BuildError(f"the offload bundle has no code object for {target} (entries: {names})", "")


def _hip_source(source: str | Path) -> tuple[str, Path | None]:
    """(text, path or None) from a path or from source text."""
    if isinstance(source, Path):
        return source.read_text(), source
    if not isinstance(source, str):
        raise HsapyValueError(f"source must be a path or HIP source text, got {type(source)}")
    if "\n" not in source and source.endswith((".hip", ".cpp", ".cu", ".cc")):
        path = Path(source)
        if not path.is_file():
            raise HsapyValueError(f"HIP source file {source} does not exist")
        return path.read_text(), path
    return source, None


# Where ROCm's device libraries (ocml, ockl, oclc_* bitcode) live: a ROCm install, or the
# Debian package rocm-device-libs.
_DEVICE_LIB_DIRS = ("{rocm}/amdgcn/bitcode", "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
                    "/usr/lib/aarch64-linux-gnu/amdgcn/bitcode", "/usr/share/amdgcn/bitcode")


def _device_lib_isa_file(target: BuildTarget) -> str:
    # oclc_isa_version_<digits>.bc names the processor without "gfx" (90a, 942, 1201).
    return f"oclc_isa_version_{target.processor[3:]}.bc"


def find_device_libs(target: BuildTarget | str) -> Path:
    """The directory of ROCm's device-library bitcode that covers ``target``.

    Raises :class:`ToolNotFoundError` (one line, naming the package) when none is installed or
    the installed one predates the target.
    """
    target = BuildTarget.parse(target)
    searched = []
    found_without_target = None
    for pattern in _DEVICE_LIB_DIRS:
        directory = Path(pattern.format(rocm=rocm_path()))
        searched.append(str(directory))
        if not (directory / "ocml.bc").is_file():
            continue
        if (directory / _device_lib_isa_file(target)).is_file():
            return directory
        found_without_target = found_without_target or directory
    if found_without_target is not None:
        raise ToolNotFoundError(
            "rocm-device-libs",
            f"the device libraries in {found_without_target} have no bitcode for {target} "
            f"({_device_lib_isa_file(target)}); install a newer rocm-device-libs or ROCm",
        )
    raise ToolNotFoundError(
        "rocm-device-libs",
        "ROCm device libraries (ocml.bc) not found: install the Debian package rocm-device-libs "
        f"or ROCm (no pip package provides them); searched {', '.join(searched)}",
    )


def build_hip(source: str | Path, target: str | BuildTarget = "gfx942", *,
              code_object_version: int = 5,
              include_dirs: Sequence[str | Path] = (), defines: dict[str, str] | None = None,
              extra_args: Sequence[str] = (), compiler: str = "auto", opt_level: int = 3,
              device_libs: bool | str | Path = False, cache: bool = True) -> bytes:
    """A HIP source (path or text) -> loadable code object bytes for ``target``.

    ``hipcc --genco`` (with ``HIP_PLATFORM=amd``) when it supports the target, otherwise clang in
    HIP device-only mode with ``-nogpulib -nogpuinc`` and hsapy's device header
    (``-include hsapy_hip.h``). ``device_libs=True`` (or a directory) links ROCm's device-library
    bitcode instead of ``-nogpulib``, for sources that call ``__ocml_*``/``__ockl_*`` functions.
    Bundles are unpacked; plain ELF is returned as is. A failing compile raises
    :class:`BuildError` with the full log and the command line.
    """
    target = BuildTarget.parse(target)
    check_code_object_version(code_object_version, target)
    text, path = _hip_source(source)
    header_dir = hip_include_dir()
    includes = [header_dir]
    if path is not None:
        includes.append(path.resolve().parent)
    includes.extend(Path(directory) for directory in include_dirs)
    define_args = [f"-D{key}={value}" for key, value in sorted((defines or {}).items())]
    tool = _hip_compiler(target, compiler)
    library_dir: Path | None = None
    if device_libs is True:
        library_dir = find_device_libs(target)
    elif device_libs:
        library_dir = Path(device_libs)
        if not (library_dir / "ocml.bc").is_file():
            raise HsapyValueError(f"{library_dir} holds no ROCm device libraries (ocml.bc)")
    parts = {
        "source": sha256(text),
        "headers": _headers_digest(includes),
        "target": str(target),
        "options": {"cov": code_object_version, "defines": define_args,
                    "extra": list(extra_args), "opt": opt_level},
        "tools": {tool.name: tool.version, "path": tool.path},
        "device_libs": tool_identity(str(library_dir / "ocml.bc")) if library_dir else None,
    }
    name = path.name if path is not None else "HIP source"

    def produce() -> bytes:
        with tempfile.TemporaryDirectory(prefix="hsapy-hip-") as tmp:
            source_path = path if path is not None else Path(tmp) / "source.hip"
            if path is None:
                source_path.write_text(text)
            out = Path(tmp) / "out.hsaco"
            args: list[str] = []
            if tool.name == "hipcc":
                args += ["--genco"]
            else:
                # Device-only HIP without ROCm's headers and device libraries: hsapy_hip.h
                # provides the HIP names; -c --no-gpu-bundle-output yields a linked plain ELF.
                # -fuse-cuid=none: no random __hip_cuid_* symbol, so builds are reproducible.
                libraries = (["-nogpulib"] if library_dir is None
                             else [f"--rocm-device-lib-path={library_dir}"])
                args += ["-x", "hip", "--cuda-device-only", *libraries, "-nogpuinc",
                         "-c", "--no-gpu-bundle-output", "-fuse-cuid=none",
                         "-include", "hsapy_hip.h"]
            args += [f"--offload-arch={target}", f"-O{opt_level}",
                     f"-mcode-object-version={code_object_version}"]
            args += [f"-I{directory}" for directory in includes]
            args += define_args + list(extra_args)
            args += ["-o", str(out), str(source_path)]
            tools.run_tool(tool, args, f"compile {name} for {target}")
            data = out.read_bytes()
        return _extract_code_object(data, target)

    return cached_build("hip", parts, produce, cache, f"{name} for {target}")
