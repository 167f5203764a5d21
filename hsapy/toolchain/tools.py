"""Finding and running the tools: ``$ROCM_PATH/llvm/bin``, then ``PATH`` newest version first,
then the ``ziglang`` wheel for ``ld.lld`` (:func:`find_tool`); probe results (versions, target
support) are kept in the cache directory; every run has a timeout."""
from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from hsapy.errors import HsapyError, HsapyTypeError
from hsapy.toolchain.cache import atomic_write, cache_dir
from hsapy.toolchain.events import emit

# Default timeout of one compiler/linker run: a wait never hangs forever.
_RUN_TIMEOUT_S = 600.0
_PROBE_TIMEOUT_S = 60.0


# --------------------------------------------------------------------------------------------
# Errors


class ToolNotFoundError(HsapyError, FileNotFoundError):
    """A compiler, assembler or linker was not found. The message is one line that names the
    tool and the Debian and pip packages that provide it."""

    def __init__(self, tool: str, message: str) -> None:
        self.tool = tool
        super().__init__(message)

    def __str__(self) -> str:  # FileNotFoundError would otherwise format errno/filename
        return str(self.args[0])


class BuildError(HsapyError):
    """A build step failed. ``command`` is the command line, ``log`` the tool's full output
    (stdout and stderr) or LLVM's diagnostic, ``returncode`` the exit status (None for llvmlite)."""

    def __init__(self, what: str, log: str, command: Sequence[str] = (),
                 returncode: int | None = None) -> None:
        self.what = what
        self.log = log
        self.command = list(command)
        self.returncode = returncode
        lines = [what]
        if command:
            lines.append(f"command: {shlex.join(self.command)}")
        if log.strip():
            lines.append(log.rstrip())
        super().__init__("\n".join(lines))

# --------------------------------------------------------------------------------------------
# Finding tools


@dataclasses.dataclass(frozen=True)
class ToolInfo:
    """A tool chosen by :func:`find_tool`.

    ``argv`` is the command prefix (``("/usr/bin/ld.lld-19",)`` or
    ``(python, "-m", "ziglang", "ld.lld")``), ``path`` the file that identifies it on disk,
    ``version`` its version line, ``major`` its LLVM (or clang) major version when known, and
    ``origin`` where it was found (``HSAPY_*``, ``ROCM_PATH``, ``PATH`` or ``ziglang``).
    """

    name: str
    argv: tuple[str, ...]
    path: str
    version: str
    major: int | None
    origin: str

    def describe(self) -> str:
        """One line: name, version, where from."""
        return f"{self.name}: {shlex.join(self.argv)} ({self.version}; from {self.origin})"


# name -> (Debian package, pip package or None). The packages that provide each tool.
TOOL_PACKAGES: dict[str, tuple[str, str | None]] = {
    "ld.lld": ("lld-19", "ziglang"),
    "clang": ("clang-19", None),
    "llvm-mc": ("llvm-19", None),
    "hipcc": ("hipcc", None),
    "llvm-readelf": ("llvm-19", None),
    "llvm-objdump": ("llvm-19", None),
}

# name -> environment variable that overrides the search (a path; "ziglang" for ld.lld).
_OVERRIDE_VARS = {
    "ld.lld": "HSAPY_LD_LLD",
    "clang": "HSAPY_CLANG",
    "llvm-mc": "HSAPY_LLVM_MC",
    "hipcc": "HSAPY_HIPCC",
}

_VERSION_RE = re.compile(r"(?:version|LLD)\s+(\d+)\.(\d+)(?:\.(\d+))?")
_CLANG_VERSION_RE = re.compile(r"clang version\s+(\d+)\.(\d+)(?:\.(\d+))?")


def rocm_path() -> Path:
    return Path(os.environ.get("ROCM_PATH") or "/opt/rocm")


def ziglang_argv() -> tuple[tuple[str, ...], str] | None:
    """(argv prefix, identifying path) for the ziglang wheel's ld.lld, or None."""
    spec = importlib.util.find_spec("ziglang")
    if spec is None or spec.origin is None:
        return None
    package_dir = Path(spec.origin).parent
    zig = package_dir / ("zig.exe" if os.name == "nt" else "zig")
    if not zig.exists():
        return None
    return (sys.executable, "-m", "ziglang", "ld.lld"), str(zig)


def host_c_compiler() -> tuple[str | None, Path]:
    """(the host C compiler: ``$CC``, else ``cc``, else ``gcc``, None when there is none; the
    directory of Python's C headers) -- what building a cffi extension from its emitted C source
    needs, without setuptools (which a Python 3.12+ virtual environment lacks unless asked for).
    Whether ``Python.h`` is there is the caller's to check and report."""
    import shutil
    import sysconfig

    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    return compiler, Path(sysconfig.get_paths()["include"])


def _path_candidates(name: str) -> list[str]:
    """``name`` and ``name-N`` executables on PATH (first PATH entry wins per file name)."""
    pattern = re.compile(re.escape(name) + r"(-\d+)?$")
    seen: dict[str, str] = {}
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory or not os.path.isdir(directory):
            continue
        try:
            entries = os.listdir(directory)
        except OSError:
            continue
        for entry in entries:
            if entry in seen or not pattern.match(entry):
                continue
            full = os.path.join(directory, entry)
            if os.path.isfile(full) and os.access(full, os.X_OK):
                seen[entry] = full
    return list(seen.values())


def tool_identity(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path}|missing"
    return f"{os.path.realpath(path)}|{st.st_mtime_ns}|{st.st_size}"


# Probe results (versions, target support) survive across processes in the cache directory,
# keyed by the tool file's identity (real path, mtime, size), so a cached build spawns nothing.
_probe_memo: dict[str, tuple[int, str]] = {}


def _probe_file() -> Path:
    return cache_dir() / "probes.json"


def _load_probes() -> dict[str, list]:
    try:
        return json.loads(_probe_file().read_text())
    except (OSError, ValueError):
        return {}


def probe(argv: Sequence[str], identity_path: str, args: Sequence[str],
           env: dict[str, str] | None = None, label: str | None = None) -> tuple[int, str]:
    """Run ``argv + args`` once per tool identity and remember (returncode, output)."""
    key = f"{tool_identity(identity_path)}|{shlex.join(argv)}|{shlex.join(args)}"
    if key in _probe_memo:
        return _probe_memo[key]
    stored = _load_probes().get(key)
    if stored is not None:
        _probe_memo[key] = (int(stored[0]), str(stored[1]))
        return _probe_memo[key]
    command = list(argv) + list(args)
    emit("probe", label or shlex.join(command), command)
    try:
        proc = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=_PROBE_TIMEOUT_S, env=env, errors="replace")
        result = (proc.returncode, proc.stdout + proc.stderr)
    except (OSError, subprocess.TimeoutExpired) as exc:
        result = (-1, str(exc))
    _probe_memo[key] = result
    probes = _load_probes()
    probes[key] = list(result)
    with contextlib.suppress(OSError):
        atomic_write(_probe_file(), json.dumps(probes, indent=0).encode())
    return result


def _parse_version(name: str, output: str) -> tuple[str, int | None]:
    if name == "hipcc":
        hip = re.search(r"HIP version:\s*(\S+)", output)
        clang = _CLANG_VERSION_RE.search(output)
        text = f"HIP {hip.group(1) if hip else '?'}"
        if clang:
            text += f", clang {clang.group(1)}.{clang.group(2)}.{clang.group(3) or 0}"
            return text, int(clang.group(1))
        return text, None
    for line in output.splitlines():
        match = _VERSION_RE.search(line)
        if match:
            return line.strip(), int(match.group(1))
    first = output.strip().splitlines()[0] if output.strip() else "unknown version"
    return first, None


def tool_env(name: str) -> dict[str, str] | None:
    if name == "hipcc":
        env = dict(os.environ)
        env.setdefault("HIP_PLATFORM", "amd")
        return env
    return None


def _make_tool(name: str, argv: tuple[str, ...], path: str, origin: str) -> ToolInfo | None:
    code, output = probe(argv, path, ["--version"], env=tool_env(name))
    if code != 0 and name != "hipcc":
        return None
    version, major = _parse_version(name, output)
    if name == "hipcc" and "HIP version" not in output:
        return None
    return ToolInfo(name, argv, path, version, major, origin)


def _not_found(name: str, searched: str, need: str = "") -> ToolNotFoundError:
    debian, pip = TOOL_PACKAGES.get(name, (name, None))
    where = f"install the Debian package {debian} (apt-get install {debian})"
    if pip:
        where += f" or the pip package {pip} (pip install {pip})"
    else:
        where += " (no pip package provides it)"
    return ToolNotFoundError(name, f"{name}{need} not found: {where}; searched {searched}")


def _candidates(name: str, searched: list[str]) -> Iterator[ToolInfo]:
    """Every working ``name`` in search order (probing each lazily); ``searched`` collects the
    places looked at, for the not-found message."""
    rocm_candidate = rocm_path() / ("bin" if name == "hipcc" else "llvm/bin") / name
    searched.append(str(rocm_candidate.parent))
    if rocm_candidate.is_file():
        tool = _make_tool(name, (str(rocm_candidate),), str(rocm_candidate), "ROCM_PATH")
        if tool is not None:
            yield tool

    searched.append("PATH")
    on_path = []
    for candidate in _path_candidates(name):
        tool = _make_tool(name, (candidate,), candidate, "PATH")
        if tool is not None:
            on_path.append(tool)
    # Newest first; an unversioned name sorts by its probed version like any other (the
    # unversioned llvm-* of a Debian system can be an old LLVM that lacks gfx942/gfx1201).
    on_path.sort(key=lambda tool: tool.major or 0, reverse=True)
    yield from on_path

    if name == "ld.lld":
        searched.append("the ziglang wheel")
        zig = ziglang_argv()
        if zig is not None:
            tool = _make_tool(name, zig[0], zig[1], "ziglang")
            if tool is not None:
                yield tool


def find_tool(name: str, *, min_major: int | None = None,
              accept: Callable[[ToolInfo], bool] | None = None,
              requirement: str = "") -> ToolInfo:
    """Find ``name`` (``ld.lld``, ``clang``, ``llvm-mc``, ``hipcc``, ``llvm-readelf`` ...).

    Order: the ``HSAPY_<TOOL>`` override, ``$ROCM_PATH/llvm/bin`` (``$ROCM_PATH/bin`` for hipcc),
    ``name`` and ``name-N`` on PATH with the newest version first, and for ``ld.lld`` the ziglang
    wheel. ``min_major`` skips older LLVM releases; ``accept`` can reject a candidate (e.g. one
    that lacks a target), ``requirement`` then says what was needed in the error. Raises
    :class:`ToolNotFoundError`.
    """
    if not isinstance(name, str) or not name:
        raise HsapyTypeError(f"find_tool takes a tool's name (str), e.g. 'ld.lld', not "
                             f"{type(name).__name__} {name!r:.40}")
    if min_major is not None and (isinstance(min_major, bool) or not isinstance(min_major, int)):
        raise HsapyTypeError(f"find_tool: min_major is an LLVM major version (int) or None, not "
                             f"{type(min_major).__name__} {min_major!r:.40}")
    if min_major is not None:
        requirement = requirement or f"LLVM {min_major} or newer"

    def acceptable(tool: ToolInfo) -> bool:
        if min_major is not None and tool.major is not None and tool.major < min_major:
            return False
        return accept is None or accept(tool)

    override_var = _OVERRIDE_VARS.get(name, "")
    override = os.environ.get(override_var, "") if override_var else ""
    if override:
        if name == "ld.lld" and override == "ziglang":
            zig = ziglang_argv()
            tool = _make_tool(name, zig[0], zig[1], "ziglang") if zig else None
        else:
            tool = _make_tool(name, (override,), override, override_var)
        if tool is None or not acceptable(tool):
            what = f"a working {name}" + (f" ({requirement})" if requirement else "")
            raise ToolNotFoundError(name, f"{name} not found: {override_var}={override} is not "
                                          f"{what}")
        emit("found", tool.describe())
        return tool

    searched: list[str] = []
    for tool in _candidates(name, searched):
        if acceptable(tool):
            emit("found", tool.describe())
            return tool
    need = f" ({requirement})" if requirement else ""
    raise _not_found(name, ", ".join(searched), need)


# --------------------------------------------------------------------------------------------
# Running tools


def run_tool(tool: ToolInfo, args: Sequence[str], what: str,
              timeout: float = _RUN_TIMEOUT_S) -> str:
    """Run a compiler/assembler/linker; return its output; raise BuildError on failure."""
    command = list(tool.argv) + [str(arg) for arg in args]
    emit("run", shlex.join(command), command)
    try:
        proc = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, env=tool_env(tool.name), errors="replace")
    except subprocess.TimeoutExpired as exc:
        # TimeoutExpired may carry bytes even for a text-mode run
        parts = [exc.stdout or "", exc.stderr or ""]
        output = "".join(p.decode(errors="replace") if isinstance(p, bytes) else p for p in parts)
        raise BuildError(f"{what}: {tool.name} did not finish within {timeout:.0f} s", output,
                         command) from None
    except OSError as exc:
        raise BuildError(f"{what}: could not start {tool.name} ({exc})", "", command) from None
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise BuildError(f"{what}: {tool.name} failed with exit status {proc.returncode}",
                         output, command, proc.returncode)
    return output
