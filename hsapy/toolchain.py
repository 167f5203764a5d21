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
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from hsapy.errors import HsapyError, HsapyValueError

__all__ = [
    "AMDGPU_TRIPLE",
    "BuildError",
    "CacheWarning",
    "Target",
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

AMDGPU_TRIPLE = "amdgcn-amd-amdhsa"

# Bump when the way a cached result is produced or stored changes (flags, header, pipeline,
# the entry format below).
_CACHE_SCHEMA = 2
# A cache entry: this magic, the SHA-256 of the code object, then the code object. The digest
# is checked on every read: a truncated or altered entry is rebuilt (and reported), never used.
_ENTRY_MAGIC = b"HSAPYC02"
_ENTRY_HEADER = len(_ENTRY_MAGIC) + 32

# Code object version -> value of the module flag / clang's -mcode-object-version
# (LLVM AMDGPUUsage, "Code Object Metadata"; v4 = 400, v5 = 500, v6 = 600).
CODE_OBJECT_VERSIONS = {4: 400, 5: 500, 6: 600}

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
# Observing what the toolchain does (hsapy build --verbose, cache tests)


@dataclasses.dataclass(frozen=True)
class ToolchainEvent:
    """One thing the toolchain did.

    ``kind`` is one of ``found`` (a tool was chosen), ``probe`` (a tool was asked its version or
    capabilities), ``run`` (a compiler, assembler or linker ran), ``llvm`` (llvmlite emitted code),
    ``cache-hit``, ``cache-store``, ``cache-bad`` (an entry failed its check and is rebuilt;
    also a :class:`CacheWarning`), ``prebuilt`` (a shipped code object stood in for a build:
    no linker was found) and ``note``.
    """

    kind: str
    message: str
    argv: tuple[str, ...] = ()


_observers: contextvars.ContextVar[tuple[Callable[[ToolchainEvent], None], ...]] = (
    contextvars.ContextVar("hsapy_toolchain_observers", default=())
)


@contextlib.contextmanager
def observe(callback: Callable[[ToolchainEvent], None]) -> Iterator[None]:
    """Call ``callback(event)`` for every :class:`ToolchainEvent` inside the ``with`` block."""
    token = _observers.set(_observers.get() + (callback,))
    try:
        yield
    finally:
        _observers.reset(token)


def _emit(kind: str, message: str, argv: Sequence[str] = ()) -> None:
    event = ToolchainEvent(kind, message, tuple(argv))
    for callback in _observers.get():
        callback(event)


# --------------------------------------------------------------------------------------------
# Targets


# gfx942, gfx1201, gfx90a ... and the generic targets (gfx9-generic, gfx9-4-generic,
# gfx10-3-generic, gfx11-generic, gfx12-generic; LLVM AMDGPUUsage, "Generic Processor Versioning").
_PROCESSOR_RE = re.compile(r"^gfx(?P<major>[0-9]{1,2})([0-9a-f]{2}|(-[0-9])?-generic)$")
_FEATURE_RE = re.compile(r"^(xnack|sramecc)[+-]$")


@dataclasses.dataclass(frozen=True)
class Target:
    """An AMDGPU target id: a processor plus optional xnack/sramecc settings (``gfx90a:xnack-``)."""

    processor: str
    features: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str | Target) -> Target:
        """Parse ``gfx942``, ``gfx90a:sramecc+:xnack-`` ...; raise HsapyValueError otherwise."""
        if isinstance(text, Target):
            return text
        if not isinstance(text, str) or not text:
            raise HsapyValueError(f"target must be a string like 'gfx942', got {text!r}")
        processor, *features = text.strip().split(":")
        processor = processor.lower()
        if not _PROCESSOR_RE.match(processor):
            raise HsapyValueError(
                f"unknown target {text!r}: expected an AMDGPU processor name such as gfx942, "
                "gfx1201, gfx1100 or gfx90a (optionally followed by :xnack+/- or :sramecc+/-)"
            )
        for feature in features:
            if not _FEATURE_RE.match(feature):
                raise HsapyValueError(
                    f"bad target feature {feature!r} in {text!r}: only xnack+/xnack-/sramecc+/"
                    "sramecc- are allowed"
                )
        return cls(processor, tuple(sorted(features)))

    def __str__(self) -> str:
        return ":".join((self.processor,) + self.features)

    @property
    def major(self) -> int:
        """The generation: 9 for gfx9xx, 10/11/12 for gfx10xx/11xx/12xx (and their generics)."""
        return int(_PROCESSOR_RE.match(self.processor).group("major"))

    @property
    def is_generic(self) -> bool:
        """A generic target (``gfx11-generic`` ...): needs code object v6."""
        return self.processor.endswith("-generic")

    @property
    def wavefront_sizes(self) -> tuple[int, ...]:
        """Wave sizes the hardware runs: gfx9 only wave64; gfx10+ wave32 and wave64."""
        return (64,) if self.major < 10 else (32, 64)

    @property
    def default_wavefront_size(self) -> int:
        """LLVM's default: 64 before gfx10, 32 from gfx10 on."""
        return self.wavefront_sizes[0]

    def check_wavefront_size(self, wavefront_size: int | None) -> int:
        """Return the wave size to build for; raise HsapyValueError for one the target lacks."""
        if wavefront_size is None:
            return self.default_wavefront_size
        if wavefront_size not in self.wavefront_sizes:
            sizes = " or ".join(str(s) for s in self.wavefront_sizes)
            raise HsapyValueError(
                f"{self.processor} does not run wave{wavefront_size}; use wavefront_size={sizes}"
            )
        return wavefront_size

    def llvm_features(self, wavefront_size: int | None = None) -> str:
        """The LLVM target-features string (``+xnack,-sramecc,+wavefrontsize64``)."""
        items = [f"{feature[-1]}{feature[:-1]}" for feature in self.features]
        if self.major >= 10:
            size = self.check_wavefront_size(wavefront_size)
            items.append(f"+wavefrontsize{size}")
        else:
            self.check_wavefront_size(wavefront_size)
        return ",".join(items)


def _check_code_object_version(code_object_version: int, target: Target | None = None) -> int:
    if code_object_version not in CODE_OBJECT_VERSIONS:
        raise HsapyValueError(
            f"code_object_version must be 4, 5 or 6, got {code_object_version!r} "
            "(5 is what ROCm 5.x-6.x loaders expect; 6 needs ROCm 6.2 or newer)"
        )
    if target is not None and target.is_generic and code_object_version < 6:
        raise HsapyValueError(f"generic target {target} needs code_object_version=6")
    return code_object_version


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


def _rocm_path() -> Path:
    return Path(os.environ.get("ROCM_PATH") or "/opt/rocm")


def _ziglang_argv() -> tuple[tuple[str, ...], str] | None:
    """(argv prefix, identifying path) for the ziglang wheel's ld.lld, or None."""
    spec = importlib.util.find_spec("ziglang")
    if spec is None or spec.origin is None:
        return None
    package_dir = Path(spec.origin).parent
    zig = package_dir / ("zig.exe" if os.name == "nt" else "zig")
    if not zig.exists():
        return None
    return (sys.executable, "-m", "ziglang", "ld.lld"), str(zig)


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


def _identity(path: str) -> str:
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


def _probe(argv: Sequence[str], identity_path: str, args: Sequence[str],
           env: dict[str, str] | None = None, label: str | None = None) -> tuple[int, str]:
    """Run ``argv + args`` once per tool identity and remember (returncode, output)."""
    key = f"{_identity(identity_path)}|{shlex.join(argv)}|{shlex.join(args)}"
    if key in _probe_memo:
        return _probe_memo[key]
    stored = _load_probes().get(key)
    if stored is not None:
        _probe_memo[key] = (int(stored[0]), str(stored[1]))
        return _probe_memo[key]
    command = list(argv) + list(args)
    _emit("probe", label or shlex.join(command), command)
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
        _atomic_write(_probe_file(), json.dumps(probes, indent=0).encode())
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


def _tool_env(name: str) -> dict[str, str] | None:
    if name == "hipcc":
        env = dict(os.environ)
        env.setdefault("HIP_PLATFORM", "amd")
        return env
    return None


def _make_tool(name: str, argv: tuple[str, ...], path: str, origin: str) -> ToolInfo | None:
    code, output = _probe(argv, path, ["--version"], env=_tool_env(name))
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
    rocm_candidate = _rocm_path() / ("bin" if name == "hipcc" else "llvm/bin") / name
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
        zig = _ziglang_argv()
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
    if min_major is not None:
        requirement = requirement or f"LLVM {min_major} or newer"

    def acceptable(tool: ToolInfo) -> bool:
        if min_major is not None and tool.major is not None and tool.major < min_major:
            return False
        return accept is None or accept(tool)

    override_var = _OVERRIDE_VARS.get(name)
    override = os.environ.get(override_var, "") if override_var else ""
    if override:
        if name == "ld.lld" and override == "ziglang":
            zig = _ziglang_argv()
            tool = _make_tool(name, zig[0], zig[1], "ziglang") if zig else None
        else:
            tool = _make_tool(name, (override,), override, override_var)
        if tool is None or not acceptable(tool):
            what = f"a working {name}" + (f" ({requirement})" if requirement else "")
            raise ToolNotFoundError(name, f"{name} not found: {override_var}={override} is not "
                                          f"{what}")
        _emit("found", tool.describe())
        return tool

    searched: list[str] = []
    for tool in _candidates(name, searched):
        if acceptable(tool):
            _emit("found", tool.describe())
            return tool
    need = f" ({requirement})" if requirement else ""
    raise _not_found(name, ", ".join(searched), need)


# --------------------------------------------------------------------------------------------
# Running tools


def _run_tool(tool: ToolInfo, args: Sequence[str], what: str,
              timeout: float = _RUN_TIMEOUT_S) -> str:
    """Run a compiler/assembler/linker; return its output; raise BuildError on failure."""
    command = list(tool.argv) + [str(arg) for arg in args]
    _emit("run", shlex.join(command), command)
    try:
        proc = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, env=_tool_env(tool.name), errors="replace")
    except subprocess.TimeoutExpired as exc:
        output = (exc.stdout or "") + (exc.stderr or "")
        if isinstance(output, bytes):
            output = output.decode(errors="replace")
        raise BuildError(f"{what}: {tool.name} did not finish within {timeout:.0f} s", output,
                         command) from None
    except OSError as exc:
        raise BuildError(f"{what}: could not start {tool.name} ({exc})", "", command) from None
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise BuildError(f"{what}: {tool.name} failed with exit status {proc.returncode}",
                         output, command, proc.returncode)
    return output


# --------------------------------------------------------------------------------------------
# Cache


def cache_dir() -> Path:
    """The build cache: ``$HSAPY_CACHE_DIR``, else ``$XDG_CACHE_HOME/hsapy``, else
    ``~/.cache/hsapy``."""
    explicit = os.environ.get("HSAPY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "hsapy"


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _cache_key(route: str, parts: dict) -> str:
    payload = json.dumps({"schema": _CACHE_SCHEMA, "route": route, **parts}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class CacheWarning(UserWarning):
    """A build-cache entry failed its check (truncated, altered) and was rebuilt."""


def _cache_entry(data: bytes) -> bytes:
    return _ENTRY_MAGIC + hashlib.sha256(data).digest() + data


def _verified(entry: bytes) -> tuple[bytes | None, str]:
    """(the code object, "") when ``entry`` is intact, else (None, what is wrong with it)."""
    if len(entry) < _ENTRY_HEADER or not entry.startswith(_ENTRY_MAGIC):
        return None, f"not an hsapy cache entry ({len(entry)} bytes)"
    data = entry[_ENTRY_HEADER:]
    if hashlib.sha256(data).digest() != entry[len(_ENTRY_MAGIC):_ENTRY_HEADER]:
        return None, "its content does not match its SHA-256 (truncated or altered)"
    if data[:4] != b"\x7fELF":
        return None, "its content is not an ELF file"
    return data, ""


def _cached(route: str, parts: dict, produce: Callable[[], bytes], use_cache: bool,
            label: str) -> bytes:
    """Return the cached code object for ``parts`` or produce and store it. An entry that
    fails its check is reported (a ``cache-bad`` event and a CacheWarning) and rebuilt."""
    if not use_cache:
        return produce()
    key = _cache_key(route, parts)
    path = cache_dir() / "objects" / key[:2] / f"{key}.entry"
    try:
        entry = path.read_bytes()
    except OSError:
        entry = None
    if entry is not None:
        data, problem = _verified(entry)
        if data is not None:
            _emit("cache-hit", f"{label}: {path}")
            return data
        message = f"{label}: the cache entry {path} is bad ({problem}); rebuilding it"
        _emit("cache-bad", message)
        warnings.warn(f"hsapy build cache: {message}", CacheWarning, stacklevel=3)
    data = produce()
    try:
        _atomic_write(path, _cache_entry(data))
        _emit("cache-store", f"{label}: {path}")
    except OSError as exc:  # a read-only home must not break builds
        _emit("note", f"could not write the cache ({exc}); continuing without it")
    return data


def _sha256(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode()
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------------------------
# LLVM IR through llvmlite


def _llvm():
    """llvmlite.binding with the AMDGPU target registered (imported lazily: it is heavy)."""
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


def _ir_text(ir) -> str:
    if isinstance(ir, bytes):
        return ir.decode()
    if isinstance(ir, str):
        return ir
    # llvmlite.ir.Module (or anything printing as IR)
    return str(ir)


def _flags_module_text(code_object_version: int, data_layout: str) -> str:
    value = CODE_OBJECT_VERSIONS[code_object_version]
    return (
        f'target datalayout = "{data_layout}"\n'
        f'target triple = "{AMDGPU_TRIPLE}"\n'
        "!llvm.module.flags = !{!0}\n"
        f'!0 = !{{i32 1, !"amdhsa_code_object_version", i32 {value}}}\n'
    )


# Run in a child process: LLVM aborts the whole process when it generates code for a processor
# it does not know (it only warns when the target machine is created).
_PROCESSOR_PROBE = """
import struct, sys
import llvmlite.binding as llvm
llvm.initialize_all_targets()
llvm.initialize_all_asmprinters()
machine = llvm.Target.from_triple("amdgcn-amd-amdhsa").create_target_machine(cpu=sys.argv[1])
obj = machine.emit_object(llvm.parse_assembly(""))
print(struct.unpack_from("<I", obj, 48)[0] & 0xFF)
"""


def _check_processor(target: Target) -> None:
    """Raise HsapyValueError unless llvmlite's LLVM knows ``target.processor``."""
    import llvmlite

    code, output = _probe((sys.executable, "-c", _PROCESSOR_PROBE), llvmlite.__file__,
                          [target.processor],
                          label=f"does llvmlite's LLVM know {target.processor}? (child process)")
    machine = output.strip().splitlines()[-1] if output.strip() else ""
    if code != 0 or not machine.isdigit() or int(machine) == 0:
        raise HsapyValueError(
            f"LLVM {_llvm_version()} (llvmlite) does not know the processor "
            f"{target.processor}; check the spelling (gfx942, gfx1201, gfx1100, gfx90a ...) "
            "or upgrade llvmlite"
        )


def _prepare_module(ir_text: str, target: Target, code_object_version: int,
                    wavefront_size: int | None, opt_level: int):
    """Parse into a fresh module, pin the code object version, run the pass pipeline.

    A fresh module every time: llvmlite 0.50 (LLVM 22) codegen mutates the module it emits, so
    one parsed module is never emitted twice.
    """
    _check_processor(target)
    llvm = _llvm()
    llvm_target = llvm.Target.from_triple(AMDGPU_TRIPLE)
    machine = llvm_target.create_target_machine(
        cpu=target.processor, features=target.llvm_features(wavefront_size), opt=opt_level,
        reloc="pic", codemodel="default",
    )
    try:
        module = llvm.parse_assembly(ir_text)
    except RuntimeError as exc:
        raise BuildError("LLVM could not parse the IR", str(exc)) from None
    data_layout = str(machine.target_data)
    module.triple = AMDGPU_TRIPLE
    module.data_layout = data_layout
    # Pin the version with a module flag (behaviour 1 = error on mismatch): LLVM 22 would
    # otherwise emit v6, which ROCm before 6.2 rejects (docs/hsa-abi.md, "Code objects").
    if "amdhsa_code_object_version" not in ir_text:
        flags = llvm.parse_assembly(_flags_module_text(code_object_version, data_layout))
        try:
            module.link_in(flags)
        except RuntimeError as exc:
            raise BuildError("could not set the code object version", str(exc)) from None
    try:
        module.verify()
    except RuntimeError as exc:
        raise BuildError("the LLVM IR does not verify", str(exc)) from None
    if opt_level > 0:
        # Without the pipeline every hidden argument stays in the kernarg metadata and nothing
        # is inlined (new pass manager; llvmlite >= 0.44 API).
        tuning = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        builder = llvm.create_pass_builder(machine, tuning)
        builder.getModulePassManager().run(module, builder)
    return machine, module


def emit_assembly(ir, target: str | Target = "gfx942", *, code_object_version: int = 5,
                  wavefront_size: int | None = None, opt_level: int = 2) -> str:
    """LLVM IR (text or ``llvmlite.ir.Module``) -> AMDGPU assembly text through llvmlite."""
    target = Target.parse(target)
    _check_code_object_version(code_object_version, target)
    text = _ir_text(ir)
    machine, module = _prepare_module(text, target, code_object_version, wavefront_size, opt_level)
    _emit("llvm", f"llvmlite: emit assembly for {target} (O{opt_level}, code object "
                  f"v{code_object_version})")
    try:
        return machine.emit_assembly(module)
    except RuntimeError as exc:
        raise BuildError(f"LLVM could not generate code for {target}", str(exc)) from None


def compile_ir(ir, target: str | Target = "gfx942", *, code_object_version: int = 5,
               wavefront_size: int | None = None, opt_level: int = 2) -> bytes:
    """LLVM IR -> relocatable AMDGPU object (ELF ``ET_REL``) through llvmlite."""
    target = Target.parse(target)
    _check_code_object_version(code_object_version, target)
    text = _ir_text(ir)
    machine, module = _prepare_module(text, target, code_object_version, wavefront_size, opt_level)
    _emit("llvm", f"llvmlite: emit object for {target} (O{opt_level}, code object "
                  f"v{code_object_version})")
    try:
        obj = machine.emit_object(module)
    except RuntimeError as exc:
        raise BuildError(f"LLVM could not generate code for {target}", str(exc)) from None
    _check_machine(obj, target)
    return obj


def _check_machine(elf: bytes, target: Target) -> None:
    """LLVM only warns about a processor it does not know and emits EF_AMDGPU_MACH_NONE."""
    if len(elf) < 52 or elf[:4] != b"\x7fELF":
        raise BuildError(f"the build for {target} produced no ELF object", "")
    (e_flags,) = struct.unpack_from("<I", elf, 48)
    if e_flags & 0xFF == 0:
        raise HsapyValueError(
            f"LLVM {_llvm_version()} does not know the processor {target.processor}; "
            "check the spelling (gfx942, gfx1201, gfx1100, gfx90a ...)"
        )


def _llvm_version() -> str:
    llvm = _llvm()
    return ".".join(str(part) for part in llvm.llvm_version_info)


def link(objects: Iterable[bytes], *, linker: ToolInfo | None = None,
         what: str = "link") -> bytes:
    """Link relocatable objects into a loadable code object with ``ld.lld -shared``."""
    linker = linker or find_tool("ld.lld")
    with tempfile.TemporaryDirectory(prefix="hsapy-link-") as tmp:
        inputs = []
        for index, obj in enumerate(objects):
            path = Path(tmp) / f"input{index}.o"
            path.write_bytes(obj)
            inputs.append(str(path))
        if not inputs:
            raise HsapyValueError("link() needs at least one object")
        out = Path(tmp) / "out.hsaco"
        _run_tool(linker, ["-shared", "--no-undefined", "-o", str(out), *inputs], what)
        return out.read_bytes()


def _llvmlite_versions() -> dict[str, str]:
    import llvmlite

    return {"llvmlite": llvmlite.__version__, "llvm": _llvm_version()}


def build_ir(ir, target: str | Target = "gfx942", *, code_object_version: int = 5,
             wavefront_size: int | None = None, opt_level: int = 2,
             linker: ToolInfo | None = None, cache: bool = True) -> bytes:
    """LLVM IR (text or ``llvmlite.ir.Module``) -> loadable code object bytes (``.hsaco``).

    Compiles with llvmlite for ``target`` (wave size from the target unless ``wavefront_size``
    says otherwise; code object version pinned, v5 by default) and links with ``ld.lld``.
    The result is cached by IR, target, options and tool versions.
    """
    target = Target.parse(target)
    _check_code_object_version(code_object_version, target)
    wave = target.check_wavefront_size(wavefront_size)
    text = _ir_text(ir)
    if linker is None:
        try:
            linker = find_tool("ld.lld")
        except ToolNotFoundError:
            shipped = prebuilt_code_object(text, target, code_object_version, wave, opt_level)
            if shipped is None:
                raise
            return shipped
    parts = {
        "source": _sha256(text),
        "target": str(target),
        "options": {"cov": code_object_version, "wave": wave, "opt": opt_level},
        "tools": {**_llvmlite_versions(), "ld.lld": linker.version},
    }

    def produce() -> bytes:
        obj = compile_ir(text, target, code_object_version=code_object_version,
                         wavefront_size=wave, opt_level=opt_level)
        return link([obj], linker=linker, what=f"link the code object for {target}")

    return _cached("ir", parts, produce, cache, f"LLVM IR for {target}")


def _prebuilt_dir() -> Path | None:
    """``prebuilt/`` of hsapy.asm (asm/ in a source checkout), or None."""
    spec = importlib.util.find_spec("hsapy.asm")
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    locations.append(str(Path(__file__).resolve().parent.parent / "asm"))
    for location in locations:
        candidate = Path(location) / "prebuilt"
        if (candidate / "MANIFEST.json").is_file():
            return candidate
    return None


def prebuilt_code_object(ir, target: str | Target, code_object_version: int = 5,
                         wavefront_size: int | None = None, opt_level: int = 2) -> bytes | None:
    """The code object shipped in hsapy.asm's ``prebuilt/`` for exactly this IR and these
    options, or None.

    ``asm/build.py`` links one for every kernel hsapy builds itself, so that a machine without
    ``ld.lld`` still runs them; a file is used only when the IR it was built from hashes to
    ``ir`` (and the file to its recorded SHA-256), so an edited kernel is never answered with a
    stale one. Emits a ``prebuilt`` event naming the file.
    """
    target = Target.parse(target)
    wave = target.check_wavefront_size(wavefront_size)
    directory = _prebuilt_dir()
    if directory is None:
        return None
    try:
        files = json.loads((directory / "MANIFEST.json").read_text())["files"]
    except (OSError, ValueError, KeyError):
        return None
    wanted = {"ir_sha256": _sha256(_ir_text(ir)), "target": str(target),
              "code_object_version": code_object_version, "wavefront_size": wave,
              "opt_level": opt_level}
    for name, entry in files.items():
        if any(entry.get(key) != value for key, value in wanted.items()):
            continue
        try:
            data = (directory / name).read_bytes()
        except OSError:
            return None
        if _sha256(data) != entry.get("sha256"):
            return None
        _emit("prebuilt", f"no ld.lld found: using the code object shipped prebuilt with hsapy "
                          f"({name}); install lld or pip install 'hsapy[toolchain]' to link "
                          "it here")
        return data
    return None


# --------------------------------------------------------------------------------------------
# Assembly


def _assembler_for(target: Target) -> ToolInfo:
    """llvm-mc, else clang (-x assembler); one error naming both packages when neither exists."""
    try:
        return find_tool("llvm-mc")
    except ToolNotFoundError:
        pass
    try:
        return find_tool("clang")
    except ToolNotFoundError:
        raise ToolNotFoundError(
            "llvm-mc",
            "no AMDGPU assembler found (llvm-mc or clang): install the Debian package llvm-19 "
            "(llvm-mc-19) or clang-19 (no pip package provides one); searched ROCM_PATH and PATH",
        ) from None


def assemble(asm_text: str, target: str | Target = "gfx942", *, code_object_version: int = 5,
             wavefront_size: int | None = None, cache: bool = True) -> bytes:
    """AMDGPU assembly text -> loadable code object (llvm-mc or clang, then ``ld.lld``).

    A ``.amdhsa_code_object_version`` directive is added when the text has none.
    """
    target = Target.parse(target)
    _check_code_object_version(code_object_version, target)
    features = target.llvm_features(wavefront_size)
    if ".amdhsa_code_object_version" not in asm_text:
        asm_text = f"\t.amdhsa_code_object_version {code_object_version}\n{asm_text}"
    assembler = _assembler_for(target)
    linker = find_tool("ld.lld")
    parts = {
        "source": _sha256(asm_text),
        "target": str(target),
        "options": {"features": features},
        "tools": {assembler.name: assembler.version, "ld.lld": linker.version},
    }

    def produce() -> bytes:
        with tempfile.TemporaryDirectory(prefix="hsapy-asm-") as tmp:
            source = Path(tmp) / "input.s"
            source.write_text(asm_text)
            obj = Path(tmp) / "input.o"
            if assembler.name == "llvm-mc":
                args = [f"--triple={AMDGPU_TRIPLE}", f"-mcpu={target.processor}",
                        "--filetype=obj", "-o", str(obj), str(source)]
                if features:
                    args.insert(2, f"-mattr={features}")
            else:
                args = ["-x", "assembler", f"--target={AMDGPU_TRIPLE}", f"-mcpu={target}",
                        "-c", "-o", str(obj), str(source)]
                if "+wavefrontsize64" in features:
                    args.insert(3, "-mwavefrontsize64")
            _run_tool(assembler, args, f"assemble for {target}")
            data = obj.read_bytes()
        _check_machine(data, target)
        return link([data], linker=linker, what=f"link the code object for {target}")

    return _cached("asm", parts, produce, cache, f"assembly for {target}")


# --------------------------------------------------------------------------------------------
# HIP


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
                digest[str(path.resolve())] = _sha256(path.read_bytes())
    return digest


def _hip_supports(tool: ToolInfo, target: Target) -> bool:
    """Whether hipcc/clang accepts ``--offload-arch=<target>`` (probed once per tool)."""
    args = ["-x", "hip", "--cuda-device-only", "-nogpulib", "-nogpuinc",
            f"--offload-arch={target}", "-E", "-o", os.devnull, os.devnull]
    code, _ = _probe(tool.argv, tool.path, args, env=_tool_env(tool.name))
    return code == 0


def _hip_compiler(target: Target, compiler: str) -> ToolInfo:
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
            _emit("note", f"hipcc ({hipcc.version}) does not support {target}; using clang")
    # An older clang (a ROCm install, an unversioned clang) may lack the target: take the first
    # one that accepts it.
    return find_tool("clang", accept=lambda tool: _hip_supports(tool, target),
                     requirement=f"one that supports --offload-arch={target}")


def _is_bundle(data: bytes) -> bool:
    return data.startswith(b"__CLANG_OFFLOAD_BUNDLE__") or data.startswith(b"CCOB")


def _extract_code_object(data: bytes, target: Target) -> bytes:
    """Plain ELF as is; an offload bundle -> the entry for ``target``."""
    if data[:4] == b"\x7fELF":
        return data
    try:
        from hsapy.codeobject import extract_for_target
    except ImportError:
        extract_for_target = None
    if extract_for_target is not None:
        return extract_for_target(data, str(target))
    return _unbundle(data, target)


def _unbundle(data: bytes, target: Target) -> bytes:
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


def _hip_source(source) -> tuple[str, Path | None]:
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


def _device_lib_isa_file(target: Target) -> str:
    # oclc_isa_version_<digits>.bc names the processor without "gfx" (90a, 942, 1201).
    return f"oclc_isa_version_{target.processor[3:]}.bc"


def find_device_libs(target: Target | str) -> Path:
    """The directory of ROCm's device-library bitcode that covers ``target``.

    Raises :class:`ToolNotFoundError` (one line, naming the package) when none is installed or
    the installed one predates the target.
    """
    target = Target.parse(target)
    searched = []
    found_without_target = None
    for pattern in _DEVICE_LIB_DIRS:
        directory = Path(pattern.format(rocm=_rocm_path()))
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


def build_hip(source, target: str | Target = "gfx942", *, code_object_version: int = 5,
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
    target = Target.parse(target)
    _check_code_object_version(code_object_version, target)
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
        "source": _sha256(text),
        "headers": _headers_digest(includes),
        "target": str(target),
        "options": {"cov": code_object_version, "defines": define_args,
                    "extra": list(extra_args), "opt": opt_level},
        "tools": {tool.name: tool.version, "path": tool.path},
        "device_libs": _identity(str(library_dir / "ocml.bc")) if library_dir else None,
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
            _run_tool(tool, args, f"compile {name} for {target}")
            data = out.read_bytes()
        return _extract_code_object(data, target)

    return _cached("hip", parts, produce, cache, f"{name} for {target}")


# --------------------------------------------------------------------------------------------
# Any file


def build_file(path: str | Path, target: str | Target = "gfx942", *,
               code_object_version: int = 5, wavefront_size: int | None = None,
               cache: bool = True) -> bytes:
    """Build a ``.ll``, ``.hip``/``.cpp``/``.cu`` or ``.s`` file by its suffix."""
    path = Path(path)
    if not path.is_file():
        raise HsapyValueError(f"{path} does not exist")
    suffix = path.suffix.lower()
    if suffix in (".ll",):
        return build_ir(path.read_text(), target, code_object_version=code_object_version,
                        wavefront_size=wavefront_size, cache=cache)
    if suffix in (".hip", ".cpp", ".cu", ".cc"):
        extra = []
        parsed = Target.parse(target)
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
