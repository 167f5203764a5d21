"""Shared pieces of the hand-written kernel tests (test_handwritten_asm.py, test_llvmlite_ir.py):
the builds they run (target and wave size), a descriptor-and-metadata wrapper for assembly
kernel bodies, and a runtime fixture that loads code objects through hsapy's public API.

A hand-written assembly kernel here is only its body and what it needs (arguments, LDS,
scratch, registers); :func:`asm_kernel` adds the ``.amdhsa_kernel`` block and the code object v5
metadata an author would otherwise copy from LLVM's output (AMDGPUUsage, "Code Object V5
Metadata" and "Kernel Descriptor").
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from corpus_cases import KernelRun

from hsapy import toolchain


@dataclass(frozen=True)
class Build:
    """One way to build a kernel: the target and the wave size (its id names both)."""

    target: str
    wave: int

    @property
    def id(self) -> str:
        return self.target if self.target == "gfx942" else f"{self.target}w{self.wave}"

    @property
    def gfx12(self) -> bool:
        return self.target.startswith("gfx12")


GFX942 = Build("gfx942", 64)
GFX1201_W32 = Build("gfx1201", 32)
GFX1201_W64 = Build("gfx1201", 64)
BUILDS = (GFX942, GFX1201_W32, GFX1201_W64)


@dataclass(frozen=True)
class Arg:
    """One explicit kernel argument: a global pointer or a by-value integer of ``size`` bytes."""

    name: str
    size: int = 8
    pointer: bool = True


def asm_kernel(name: str, body: str, build: Build, args: list[Arg], *, lds: int = 0,
               private: int = 0, vgprs: int = 32, sgprs: int = 48, workitem_ids: int = 0,
               workgroup_id_x: bool = True, block: int = 256, directives: str = "") -> str:
    """A complete assembly source for ``body`` (which starts at the kernel's entry and ends in
    ``s_endpgm``): kernarg pointer in s[0:1], the workgroup id x next (gfx942: s2; gfx12 has it
    in ttmp9), the work-item ids in v0 (gfx942: v0/v1/v2; gfx12: packed in v0)."""
    offset = 0
    meta_args = []
    # (a name such as n, y, on or off is a boolean to YAML 1.1 and fails the metadata check)
    for arg in args:
        offset = (offset + arg.size - 1) // arg.size * arg.size
        if arg.pointer:
            meta_args.append(f"      - {{ .name: {arg.name}, .offset: {offset}, .size: 8, "
                             ".value_kind: global_buffer, .address_space: global }")
        else:
            meta_args.append(f"      - {{ .name: {arg.name}, .offset: {offset}, "
                             f".size: {arg.size}, .value_kind: by_value }}")
        offset += arg.size
    kernarg_size = max(offset, 4)
    extra = "" if build.gfx12 else f"\t\t.amdhsa_accum_offset {vgprs}\n"
    if build.gfx12:
        extra += f"\t\t.amdhsa_wavefront_size32 {1 if build.wave == 32 else 0}\n"
    if private:
        extra += "\t\t.amdhsa_enable_private_segment 1\n"
    for line in directives.strip().splitlines():
        extra += f"\t\t{line.strip()}\n"
    args_text = "\n".join(meta_args) if meta_args else ""
    return f"""\
\t.text
\t.globl\t{name}
\t.p2align\t8
\t.type\t{name},@function
{name}:
{body}
.L{name}_end:
\t.size\t{name}, .L{name}_end-{name}

\t.rodata
\t.p2align\t6
\t.amdhsa_kernel {name}
\t\t.amdhsa_user_sgpr_kernarg_segment_ptr 1
\t\t.amdhsa_user_sgpr_count 2
\t\t.amdhsa_kernarg_size {kernarg_size}
\t\t.amdhsa_group_segment_fixed_size {lds}
\t\t.amdhsa_private_segment_fixed_size {private}
\t\t.amdhsa_system_sgpr_workgroup_id_x {int(workgroup_id_x)}
\t\t.amdhsa_system_vgpr_workitem_id {workitem_ids}
\t\t.amdhsa_next_free_vgpr {vgprs}
\t\t.amdhsa_next_free_sgpr {sgprs}
{extra}\t.end_amdhsa_kernel

\t.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.kernels:
  - .name: {name}
    .symbol: {name}.kd
    .args:
{args_text}
    .kernarg_segment_size: {kernarg_size}
    .kernarg_segment_align: 8
    .group_segment_fixed_size: {lds}
    .private_segment_fixed_size: {private}
    .wavefront_size: {build.wave}
    .sgpr_count: {sgprs}
    .vgpr_count: {vgprs}
    .max_flat_workgroup_size: {block}
...
\t.end_amdgpu_metadata
"""


def assemble(source: str, build: Build) -> bytes:
    """The code object of ``source`` through hsapy.toolchain (llvm-mc-19 + ld.lld-19)."""
    try:
        return toolchain.assemble(source, build.target, wavefront_size=build.wave)
    except toolchain.ToolNotFoundError as exc:
        pytest.skip(f"assembling needs llvm-mc and ld.lld: {exc}")


class Session:
    """One simulated runtime with gfx942 and gfx1201 agents, a queue per agent, and the
    executables loaded so far; :meth:`run` hands a case a :class:`KernelRun` over one."""

    def __init__(self) -> None:
        from hsapy.runtime import Runtime

        # A kernel that loops for ever (a defect) stops after 20 s instead of the default 60.
        self.runtime = Runtime(backend="sim", targets=["gfx942", "gfx1201"], watchdog_s=20.0)
        self.agents = {agent.name: agent for agent in self.runtime.gpu_agents}
        self.queues: dict[str, object] = {}
        self.executables: list[object] = []

    def queue(self, target: str):
        queue = self.queues.get(target)
        if queue is None or queue.error is not None or queue.is_closed:
            if queue is not None:
                queue.close()
            queue = self.queues[target] = self.agents[target].create_queue(size=64)
        return queue

    def run(self, code_object: bytes, build: Build) -> KernelRun:
        agent = self.agents[build.target]
        executable = self.runtime.load(code_object, agent)
        self.executables.append(executable)
        return KernelRun(executable, agent, self.queue(build.target), build.wave)

    def close(self) -> None:
        for queue in self.queues.values():
            queue.close()
        for executable in self.executables:
            executable.close()
        self.runtime.close()
