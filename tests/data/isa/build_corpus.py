#!/usr/bin/env python3
"""Build the decoder-oracle corpus: code objects for gfx942, gfx1201 and gfx1100.

Sources (all in this directory unless noted):

- ``arith.hip``, ``memory.hip``, ``control.hip``, ``intrinsics.hip``: HIP device code chosen so
  that LLVM emits a wide variety of instructions (fp32/fp64/fp16/packed arithmetic, conversions,
  64-bit integers, division/exp/sqrt sequences, every load/store width, LDS read2/write2,
  bpermute/swizzle, atomics, divergent control flow, DPP, VOPD on gfx12, s_memtime, ballots,
  permutes, dot products, bit-field and SAD ops, med3/frexp/ldexp).
- ``*.ll``: LLVM IR (float atomics with scopes, 64-bit cmpxchg, a uniform loop), clang-19 -x ir.
- ``formats_<target>.s``: hand-written assembly for encodings compilers rarely emit (SDWA, DPP
  controls, VOP3P modifiers, MUBUF, scratch with an SGPR base, ...), assembled with llvm-mc-19.
- ``kernels/*.hip`` (the operator suite) and ``kernels/prebuilt/*.hsaco`` when present.
- The llvmlite kernels of ``asm/`` (``hsapy.asm.kernels`` and ``hsapy.asm.operators``) when
  importable: a newer LLVM (llvmlite's) generates them, so they widen the corpus.

clang-19 HIP device code is compiled with ``-nogpulib -nogpuinc`` and the tiny ``device.h`` (or the
operator suite's own header), linked to a shared object (``--no-gpu-bundle-output``).

    python3 tests/data/isa/build_corpus.py OUTDIR     # writes OUTDIR/<name>_<target>.co
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
TARGETS = ("gfx942", "gfx1201", "gfx1100")
# gfx11/gfx12 also run wave64 code (64-bit lane masks): the corpus sources are built that way too,
# as <name>_<target>_w64.co.
WAVE64_TARGETS = ("gfx1201", "gfx1100")


def tools_available() -> str | None:
    """None when clang-19 and llvm-mc-19 are on PATH, else the reason they are needed."""
    for tool in ("clang-19", "llvm-mc-19"):
        if shutil.which(tool) is None:
            return f"{tool} not found (Debian packages clang-19 / llvm-19)"
    return None


def _hip_jobs(outdir: Path) -> list[tuple[list[str], Path]]:
    jobs = []
    sources = [(p, [f"-I{HERE}"]) for p in sorted(HERE.glob("*.hip"))]
    kernel_dir = REPO / "kernels"
    if kernel_dir.is_dir():
        include = [kernel_dir / "include", REPO / "tests" / "unit" / "hip_shim"]
        flags = [f"-I{kernel_dir}"] + [f"-I{d}" for d in include if d.is_dir()]
        sources += [(p, flags) for p in sorted(kernel_dir.glob("*.hip"))]
    for src, flags in sources:
        prefix = "kernels_" if src.parent == kernel_dir else ""
        for target in TARGETS:
            out = outdir / f"{prefix}{src.stem}_{target}.co"
            cmd = ["clang-19", "-x", "hip", f"--offload-arch={target}", "--cuda-device-only",
                   "--no-gpu-bundle-output", "-nogpulib", "-nogpuinc", "-O3", "-std=c++17",
                   *flags, "-o", str(out), str(src)]
            jobs.append((cmd, out))
            if target in WAVE64_TARGETS and prefix == "":
                out64 = outdir / f"{src.stem}_{target}_w64.co"
                jobs.append((cmd[:-3] + ["-mwavefrontsize64", "-o", str(out64), str(src)], out64))
    return jobs


def _ir_jobs(outdir: Path) -> list[tuple[list[str], Path]]:
    jobs = []
    for src in sorted(HERE.glob("*.ll")):
        for target in TARGETS:
            out = outdir / f"{src.stem}_{target}.co"
            cmd = ["clang-19", "-x", "ir", "--target=amdgcn-amd-amdhsa", f"-mcpu={target}", "-O2",
                   "-nogpulib", "-o", str(out), str(src)]
            jobs.append((cmd, out))
    return jobs


def _asm_jobs(outdir: Path) -> list[tuple[list[str], Path]]:
    jobs = []
    for target in TARGETS + ("gfx90a",):
        src = HERE / f"formats_{target}.s"
        if src.exists():
            out = outdir / f"formats_{target}.co"
            cmd = ["llvm-mc-19", "-triple=amdgcn-amd-amdhsa", f"-mcpu={target}", "-filetype=obj",
                   "-o", str(out), str(src)]
            jobs.append((cmd, out))
    return jobs


def _asm_objects(outdir: Path) -> list[Path]:
    """Code objects of hsapy.asm's llvmlite kernels (none when hsapy.asm is not available)."""
    try:
        from hsapy.asm import kernels, operators
    except ImportError:
        return []
    out = []
    for target in TARGETS:
        blobs = [(f"asm_{name}", kernels.build(name, target, cache=False)) for name in kernels.names()]
        blobs += [(f"asm_op_{op}", operators.build(op, target)) for op in operators.KERNELS]
        for stem, blob in blobs:
            path = outdir / f"{stem}_{target}.co"
            path.write_bytes(blob)
            out.append(path)
    return out


def build_corpus(outdir: Path, jobs: int = 2) -> list[Path]:
    """Build every corpus code object into ``outdir``; returns their paths (sorted)."""
    outdir.mkdir(parents=True, exist_ok=True)
    work = _hip_jobs(outdir) + _ir_jobs(outdir) + _asm_jobs(outdir)

    def run(job: tuple[list[str], Path]) -> Path:
        cmd, out = job
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"corpus build failed: {' '.join(cmd)}\n{proc.stderr}")
        return out

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        built = list(pool.map(run, work))
    built += _asm_objects(outdir)
    # Prebuilt code objects shipped with the operator suite and asm/, if any.
    for folder in (REPO / "kernels", REPO / "asm"):
        if folder.is_dir():
            built += sorted(folder.rglob("*.hsaco"))
    return sorted(built)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    for path in build_corpus(Path(sys.argv[1])):
        print(path)
