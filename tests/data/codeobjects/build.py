"""Builds the real code objects hsapy's code-object, kernarg, fuzz and loader tests use.

Nothing is checked in: every code object is built from the sources next to this file by the
toolchain (clang-19 for HIP, llvmlite + ld.lld-19 for LLVM IR, llvm-mc-19 + ld.lld-19 for
assembly), once per test process, into a temporary directory. Tests import this module through
``load_build_module()`` in their own file and call the ``build_*`` functions; a missing tool skips
the test with the tool's name.

Run it directly to write every variant into a directory for a look with llvm-readelf-19:
``python3 tests/data/codeobjects/build.py /tmp/hsapy-codeobjects``.
"""
from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
HIP_SOURCE = HERE / "kernels.hip"

_tmp: Path | None = None


class ToolMissing(Exception):
    """A tool a build needs is not installed (tests turn this into a skip)."""


def _workdir() -> Path:
    global _tmp
    if _tmp is None:
        _tmp = Path(tempfile.mkdtemp(prefix="hsapy-co-"))
        atexit.register(shutil.rmtree, _tmp, True)
    return _tmp


def tool(name: str) -> str:
    """Path of a versioned LLVM tool (``clang-19``), or ToolMissing."""
    path = shutil.which(name) or shutil.which(name, path="/usr/lib/llvm-19/bin")
    if path is None:
        raise ToolMissing(f"{name} is not installed (Debian: clang-19 / lld-19 / llvm-19)")
    return path


def _run(cmd: list[str]) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{result.stderr}")


def _hip_flags(version: int) -> list[str]:
    return ["-x", "hip", "-nogpulib", "-nogpuinc", "--cuda-device-only", "-O2",
            "-fhip-kernel-arg-name", f"-mcode-object-version={version}"]


@functools.cache
def build_hip(target: str = "gfx942", version: int = 5, source: str | None = None) -> bytes:
    """A plain ELF code object from kernels.hip (or ``source`` text) for ``target``."""
    out = _workdir() / f"hip_{target.replace(':', '_')}_v{version}_{abs(hash(source))}.hsaco"
    src = HIP_SOURCE
    if source is not None:
        src = out.with_suffix(".hip")
        src.write_text(source)
    _run([tool("clang-19"), *_hip_flags(version), f"--offload-arch={target}",
          "--no-gpu-bundle-output", str(src), "-o", str(out)])
    return out.read_bytes()


@functools.cache
def build_hip_bundle(targets: tuple[str, ...], compress: bool = False) -> bytes:
    """A clang offload bundle (``compress``: a zstd CCOB) holding kernels.hip for ``targets``."""
    tag = "_".join(t.replace(":", "_") for t in targets)
    out = _workdir() / f"bundle_{tag}_{int(compress)}.o"
    arch_flags = [f"--offload-arch={t}" for t in targets]
    extra = ["--offload-compress"] if compress else ["--gpu-bundle-output"]
    _run([tool("clang-19"), *_hip_flags(5), *arch_flags, *extra, str(HIP_SOURCE), "-o", str(out)])
    return out.read_bytes()


HIPCC_SOURCE = """
#include <hip/hip_runtime.h>
extern "C" __global__ void add_one(float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] += 1.0f;
}
"""


@functools.cache
def build_hipcc(target: str = "gfx90a") -> bytes:
    """``hipcc --genco`` output (a clang offload bundle; ROCm 5.2.3's hipcc writes v4)."""
    hipcc = shutil.which("hipcc")
    if hipcc is None:
        raise ToolMissing("hipcc is not installed (Debian: hipcc)")
    src = _workdir() / "hipcc_add_one.hip"
    src.write_text(HIPCC_SOURCE)
    out = _workdir() / f"hipcc_{target}.co"
    env = dict(os.environ, HIP_PLATFORM="amd")
    command = [hipcc, "--genco", f"--offload-arch={target}", str(src), "-o", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"hipcc failed:\n{result.stderr}")
    return out.read_bytes()


# The llvmlite kernel: reads its arguments and blockDim.x through the implicit-argument pointer,
# and stores to dynamic LDS (so v5 metadata has hidden_dynamic_lds_size).
LLVMLITE_IR = """
target triple = "amdgcn-amd-amdhsa"
target datalayout = "{datalayout}"
declare i32 @llvm.amdgcn.workitem.id.x()
declare ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
@dynamic_lds = external addrspace(3) global [0 x float], align 4
define amdgpu_kernel void @scale(ptr addrspace(1) %out, float %s, i64 %n, i8 %tiny) #0 {{
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %ip = call ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
  %gp = getelementptr i8, ptr addrspace(4) %ip, i64 12
  %g = load i16, ptr addrspace(4) %gp
  %gz = zext i16 %g to i32
  %t = zext i8 %tiny to i32
  %v0 = add i32 %i, %gz
  %v = add i32 %v0, %t
  %f = uitofp i32 %v to float
  %r = fmul float %f, %s
  %p = getelementptr float, ptr addrspace(1) %out, i32 %i
  store float %r, ptr addrspace(1) %p
  %l = getelementptr float, ptr addrspace(3) @dynamic_lds, i32 %i
  store float %r, ptr addrspace(3) %l
  ret void
}}
define amdgpu_kernel void @noop() #0 {{
  ret void
}}
attributes #0 = {{ "target-cpu"="{target}" {extra_attrs}}}
!llvm.module.flags = !{{!0}}
!0 = !{{i32 1, !"amdhsa_code_object_version", i32 {version}00}}
"""

# AMDGPU data layout (LLVM 22, as llvmlite 0.50 expects it).
DATALAYOUT = (
    "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-"
    "p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-"
    "v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
)


@functools.cache
def build_llvmlite(target: str = "gfx942", version: int = 5, optimize: bool = True) -> bytes:
    """A code object from LLVM IR through llvmlite's target machine and ld.lld-19 -shared.

    Without ``optimize`` LLVM keeps every hidden argument (printf/hostcall buffers, heap,
    queue ptr, dynamic LDS size, ...), which the kernarg tests want.
    """
    import llvmlite.binding as llvm

    ld = tool("ld.lld-19")
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    extra = ""
    if target.startswith("gfx1"):
        extra = '"target-features"="+wavefrontsize32" '
    ir = LLVMLITE_IR.format(datalayout=DATALAYOUT, target=target, version=version,
                            extra_attrs=extra)
    module = llvm.parse_assembly(ir)
    module.verify()
    machine = llvm.Target.from_triple("amdgcn-amd-amdhsa").create_target_machine(
        cpu=target, opt=2 if optimize else 0, reloc="pic", codemodel="default")
    if optimize:
        tuning = llvm.create_pipeline_tuning_options(speed_level=2)
        builder = llvm.create_pass_builder(machine, tuning)
        builder.getModulePassManager().run(module, builder)
    obj = _workdir() / f"ll_{target}_v{version}_{int(optimize)}.o"
    out = obj.with_suffix(".hsaco")
    obj.write_bytes(machine.emit_object(module))
    _run([ld, "-shared", str(obj), "-o", str(out)])
    return out.read_bytes()


# Assembly kernel without a metadata note: kernels come from `.kd` symbols alone.
ASM_ENDPGM = """
.amdgcn_target "amdgcn-amd-amdhsa--{target}"
.text
.globl endpgm
.p2align 8
.type endpgm,@function
endpgm:
  s_endpgm
.rodata
.p2align 6
.amdhsa_kernel endpgm
  .amdhsa_next_free_vgpr 1
  .amdhsa_next_free_sgpr 1
  {accum}
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_kernarg_size 16
  .amdhsa_private_segment_fixed_size {private}
.end_amdhsa_kernel
"""


@functools.cache
def build_asm(target: str = "gfx942", version: int = 5, private: int = 0) -> bytes:
    """A one-instruction (s_endpgm) kernel `endpgm` from assembly: llvm-mc-19 + ld.lld-19.

    ``private`` is its descriptor's private segment bytes per work-item. LLVM refuses a stack
    frame past the per-wave scratch limit when it compiles; the assembler writes any value,
    as a hand-written kernel may."""
    accum = ".amdhsa_accum_offset 4" if target in ("gfx90a", "gfx940", "gfx942") else ""
    src = _workdir() / f"asm_{target}_v{version}_p{private}.s"
    src.write_text(ASM_ENDPGM.format(target=target, accum=accum, private=private))
    obj = src.with_suffix(".o")
    out = src.with_suffix(".hsaco")
    _run([tool("llvm-mc-19"), "-triple=amdgcn-amd-amdhsa", f"-mcpu={target}", "-filetype=obj",
          f"--amdhsa-code-object-version={version}", str(src), "-o", str(obj)])
    _run([tool("ld.lld-19"), "-shared", str(obj), "-o", str(out)])
    return out.read_bytes()


def write_temp(data: bytes, name: str) -> Path:
    """Write ``data`` to the build directory and return the path."""
    path = _workdir() / name
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------------------------------------
# llvm-readelf-19 --notes: the metadata as LLVM prints it (a YAML document). A small reader for
# the subset it writes (block maps, block sequences of maps, scalars, `!str` tags), so the tests
# need no YAML library.


def _scalar(text: str):
    text = text.strip()
    if text == "[]":
        return []
    if text == "{}":
        return {}
    if text.startswith("!str "):
        return text[5:].strip()
    if text.startswith("'") and text.endswith("'"):
        return text[1:-1].replace("''", "'")
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"0x[0-9a-fA-F]+", text):
        return int(text, 16)
    return text


def _parse_yaml_block(lines: list[tuple[int, str]], start: int, indent: int):
    """Parse the block starting at lines[start] with the given indent; return (value, next)."""
    i = start
    if lines[i][1].startswith("- "):
        items = []
        while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("- "):
            # A sequence item: "- key: value" opens a map at indent + 2; "- scalar" is a scalar.
            body = lines[i][1][2:]
            if re.match(r"^[.\w][\w.\-]*:( |$)", body):
                sub = [(indent + 2, body)]
                j = i + 1
                while j < len(lines) and lines[j][0] > indent:
                    sub.append(lines[j])
                    j += 1
                value, _ = _parse_yaml_block(sub, 0, indent + 2)
                items.append(value)
                i = j
            else:
                items.append(_scalar(body))
                i += 1
        return items, i
    mapping = {}
    while i < len(lines) and lines[i][0] == indent and not lines[i][1].startswith("- "):
        key, _, rest = lines[i][1].partition(":")
        rest = rest.strip()
        i += 1
        if rest:
            mapping[key] = _scalar(rest)
        elif i < len(lines) and lines[i][0] >= indent and (
            lines[i][0] > indent or lines[i][1].startswith("- ")
        ):
            value, i = _parse_yaml_block(lines, i, lines[i][0])
            mapping[key] = value
        else:
            mapping[key] = None
    return mapping, i


def readelf_metadata(path: Path) -> dict:
    """The AMDGPU metadata of ``path`` as ``llvm-readelf-19 --notes`` prints it."""
    result = subprocess.run([tool("llvm-readelf-19"), "--notes", str(path)],
                            capture_output=True, text=True, timeout=60, check=True)
    text = result.stdout
    start = text.index("---\n") + 4
    end = text.index("\n...", start)
    lines = []
    for raw in text[start:end].splitlines():
        if raw.strip():
            lines.append((len(raw) - len(raw.lstrip(" ")), raw.strip()))
    base = lines[0][0]
    value, _ = _parse_yaml_block(lines, 0, base)
    return value


def objdump_bytes(path: Path, section: str) -> dict[int, int]:
    """address -> byte of ``section`` as ``llvm-objdump-19 -s -j section`` prints it."""
    result = subprocess.run([tool("llvm-objdump-19"), "-s", "-j", section, str(path)],
                            capture_output=True, text=True, timeout=60, check=True)
    out: dict[int, int] = {}
    for line in result.stdout.splitlines():
        match = re.match(r"^ ([0-9a-f]+) ((?:[0-9a-f]{2,8} ?){1,4})", line)
        if not match:
            continue
        address = int(match.group(1), 16)
        digits = match.group(2).replace(" ", "")
        for i in range(0, len(digits), 2):
            out[address + i // 2] = int(digits[i:i + 2], 16)
    return out


def main(argv: list[str]) -> int:
    """Write every variant into argv[1] (for a look with llvm-readelf-19)."""
    out = Path(argv[1] if len(argv) > 1 else "hsapy-codeobjects")
    out.mkdir(parents=True, exist_ok=True)
    variants = {
        "hip_gfx942_v5.hsaco": lambda: build_hip("gfx942", 5),
        "hip_gfx942_v4.hsaco": lambda: build_hip("gfx942", 4),
        "hip_gfx1201_v5.hsaco": lambda: build_hip("gfx1201", 5),
        "ll_gfx942_v5.hsaco": lambda: build_llvmlite("gfx942", 5),
        "ll_gfx1201_v6.hsaco": lambda: build_llvmlite("gfx1201", 6),
        "asm_gfx942_v5.hsaco": lambda: build_asm("gfx942", 5),
        "bundle.o": lambda: build_hip_bundle(("gfx942", "gfx1201")),
    }
    for name, build in variants.items():
        (out / name).write_bytes(build())
        print(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
