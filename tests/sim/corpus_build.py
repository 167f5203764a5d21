"""Builds of the simulator-fidelity corpus (tests/data/corpus): every source at -O0 and -O3 for
gfx942 (wave64), gfx1201 wave32 and gfx1201 wave64, plus a relocatable-device-code build of the
sources that call across translation units.

- One-file sources go through :func:`hsapy.toolchain.build_hip` (clang-19 in HIP device-only
  mode with ``-nogpulib -nogpuinc`` and hsapy_hip.h), so they share hsapy's build cache.
- A source that starts with ``#define CORPUS_OCML`` calls the math library: ROCm's ocml bitcode
  from the Debian package rocm-device-libs is linked into it with ``-mlink-builtin-bitcode``,
  with the oclc_* control libraries HIP's driver would pick. That package (5.2.3) predates
  gfx942 and gfx1201, so the one control library it lacks, ``__oclc_ISA_version``, is compiled
  here (its value is major * 1000 + minor * 100 + stepping, as the package's own files hold).
- A source with a line ``// corpus-flags: <flags>`` among its first lines is built with those
  clang flags too (``-ffast-math``, ``-fgpu-flush-denormals-to-zero``...), in every build.
- ``-fgpu-rdc`` builds compile each ``*.rdc.hip`` file of a group to LLVM bitcode and link the
  group with ld.lld-19 (link-time optimisation with ``-plugin-opt=mcpu=...``), as HIP's driver
  does for relocatable device code; they are cached under ``toolchain.cache_dir()/corpus``.

    python3 tests/sim/corpus_build.py OUTDIR    # every build, as OUTDIR/<source>-<build>.hsaco
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hsapy import toolchain

SOURCE_DIR = Path(__file__).resolve().parents[1] / "data" / "corpus"


@dataclass(frozen=True)
class Build:
    """One way of building a source: target, wave size, optimisation level."""

    target: str
    wavefront_size: int
    opt_level: int

    @property
    def id(self) -> str:
        wave = f"w{self.wavefront_size}" if self.target.startswith("gfx1") else ""
        return f"{self.target}{wave}-O{self.opt_level}"

    @property
    def wave_args(self) -> list[str]:
        if self.target.startswith("gfx1"):
            return ["-mwavefrontsize64" if self.wavefront_size == 64 else "-mno-wavefrontsize64"]
        return []


BUILDS = tuple(Build(target, wave, opt) for target, wave in
               (("gfx942", 64), ("gfx1201", 32), ("gfx1201", 64)) for opt in (0, 3))

# Bitcode control libraries of rocm-device-libs that HIP's driver links by default (clang's
# ROCm toolchain: no fast-math flags, correctly rounded sqrt, code object v5).
_OCLC_LIBRARIES = ("oclc_finite_only_off.bc", "oclc_unsafe_math_off.bc", "oclc_daz_opt_off.bc",
                   "oclc_correctly_rounded_sqrt_on.bc", "oclc_abi_version_500.bc")
_ISA_VERSIONS = {"gfx942": 9402, "gfx1201": 12001}


def sources() -> list[str]:
    """Stems of the one-file sources (``*.hip`` that are not part of an rdc group)."""
    return sorted(p.stem for p in SOURCE_DIR.glob("*.hip") if not p.name.endswith(".rdc.hip"))


def rdc_groups() -> dict[str, list[Path]]:
    """Relocatable-device-code groups: ``<group>_<part>.rdc.hip`` files linked together."""
    groups: dict[str, list[Path]] = {}
    for path in sorted(SOURCE_DIR.glob("*.rdc.hip")):
        groups.setdefault(path.name.split("_")[0], []).append(path)
    return groups


def uses_ocml(path: Path) -> bool:
    """True when the source asks for the math library (first line ``#define CORPUS_OCML``)."""
    return path.read_text().startswith("#define CORPUS_OCML")


def source_flags(path: Path) -> list[str]:
    """Extra clang flags a source asks for (a ``// corpus-flags:`` line in its first ten)."""
    for line in path.read_text().splitlines()[:10]:
        if line.startswith("// corpus-flags:"):
            return line.split(":", 1)[1].split()
    return []


def ocml_args(build: Build) -> list[str]:
    """clang arguments that link ocml and its control libraries for ``build``; raises
    ToolNotFoundError when rocm-device-libs is not installed."""
    # Any installed target's directory will do: the libraries themselves are target-neutral.
    library = toolchain.find_device_libs("gfx90a")
    wave = "on" if build.wavefront_size == 64 else "off"
    files = [library / "ocml.bc", library / "ockl.bc",
             *(library / name for name in _OCLC_LIBRARIES),
             library / f"oclc_wavefrontsize64_{wave}.bc", _isa_version_bitcode(build.target)]
    args: list[str] = []
    for path in files:
        args += ["-Xclang", "-mlink-builtin-bitcode", "-Xclang", str(path)]
    return args


def _isa_version_bitcode(target: str) -> Path:
    """A one-constant bitcode library defining ``__oclc_ISA_version`` for ``target``."""
    version = _ISA_VERSIONS[target]
    out = toolchain.cache_dir() / "corpus" / f"oclc_isa_version_{version}.bc"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    clang = toolchain.find_tool("clang", min_major=19)
    with tempfile.TemporaryDirectory(prefix="hsapy-corpus-") as tmp:
        source = Path(tmp) / "isa.c"
        source.write_text("__attribute__((address_space(4), visibility(\"protected\"))) "
                          f"const int __oclc_ISA_version = {version};\n")
        temporary = Path(tmp) / "isa.bc"
        subprocess.run([*clang.argv, "-x", "c", "--target=amdgcn-amd-amdhsa", "-nogpulib",
                        "-emit-llvm", "-c", "-o", str(temporary), str(source)],
                       check=True, capture_output=True, timeout=120)
        temporary.replace(out)
    return out


def _common_args(path: Path, build: Build) -> list[str]:
    args = ["-std=c++17", *build.wave_args, *source_flags(path)]
    if uses_ocml(path):
        args += ocml_args(build)
    return args


def build_source(stem: str, build: Build) -> bytes:
    """The code object of one-file source ``stem`` for ``build`` (cached by hsapy.toolchain)."""
    path = SOURCE_DIR / f"{stem}.hip"
    return toolchain.build_hip(path, build.target, compiler="clang", opt_level=build.opt_level,
                               extra_args=_common_args(path, build))


def build_rdc(group: str, build: Build) -> bytes:
    """The code object of rdc group ``group``: each part compiled with ``-fgpu-rdc`` to bitcode,
    linked by ld.lld with link-time optimisation at the build's level."""
    parts = rdc_groups()[group]
    clang = toolchain.find_tool("clang", min_major=19)
    lld = toolchain.find_tool("ld.lld", min_major=19)
    include = toolchain.hip_include_dir()
    headers = sorted(SOURCE_DIR.glob("*.h")) + sorted(include.glob("*.h"))
    key_parts = {"parts": [p.read_text() for p in parts],
                 "headers": [h.read_text() for h in headers],
                 "build": build.id, "tools": [clang.version, lld.version]}
    key = hashlib.sha256(json.dumps(key_parts, sort_keys=True).encode()).hexdigest()
    out = toolchain.cache_dir() / "corpus" / f"rdc-{group}-{build.id}-{key[:20]}.hsaco"
    if out.is_file():
        return out.read_bytes()
    with tempfile.TemporaryDirectory(prefix="hsapy-corpus-") as tmp:
        objects = []
        for index, part in enumerate(parts):
            obj = Path(tmp) / f"part{index}.bc"
            # -cuid names the translation unit (its __hip_cuid_ symbol must differ per part).
            command = [*clang.argv, "-x", "hip", "--cuda-device-only", "-fgpu-rdc", "-c",
                       "--no-gpu-bundle-output", "-nogpulib", "-nogpuinc", f"-cuid={part.stem}",
                       "-include", "hsapy_hip.h", f"-I{include}", f"-I{SOURCE_DIR}",
                       f"--offload-arch={build.target}", f"-O{build.opt_level}",
                       "-mcode-object-version=5", *_common_args(part, build),
                       "-o", str(obj), str(part)]
            _run(command, f"compile {part.name} for {build.id}")
            objects.append(str(obj))
        linked = Path(tmp) / "out.hsaco"
        features = "+wavefrontsize64" if build.wavefront_size == 64 else "+wavefrontsize32"
        command = [*lld.argv, "-shared", "-m", "elf64_amdgpu", "--no-undefined",
                   f"-plugin-opt=mcpu={build.target}", f"-plugin-opt=O{build.opt_level}",
                   *([f"-plugin-opt=-mattr={features}"] if build.target.startswith("gfx1") else []),
                   "-o", str(linked), *objects]
        _run(command, f"link {group} for {build.id}")
        data = linked.read_bytes()
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_suffix(".tmp")
    temporary.write_bytes(data)
    temporary.replace(out)
    return data


def _run(command: list[str], what: str) -> None:
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise toolchain.BuildError(f"{what}: exit status {proc.returncode}",
                                   proc.stdout + proc.stderr, command, proc.returncode)


def main(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    for build in BUILDS:
        for stem in sources():
            (outdir / f"{stem}-{build.id}.hsaco").write_bytes(build_source(stem, build))
            print(outdir / f"{stem}-{build.id}.hsaco")
        for group in rdc_groups():
            (outdir / f"{group}-rdc-{build.id}.hsaco").write_bytes(build_rdc(group, build))
            print(outdir / f"{group}-rdc-{build.id}.hsaco")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    main(Path(sys.argv[1]))
