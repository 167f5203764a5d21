"""Test harness for the ISA interpreter: build code objects, load them into SimMemory, dispatch.

Drives ``InterpreterExecutor.execute`` directly with a hand-built :class:`DispatchContext` (the
packet, queue and kernarg buffers are real SimMemory allocations), so the interpreter is tested
without the queue path. Code objects come from clang-19 (HIP device code, ``-nogpulib
-nogpuinc`` with a tiny device header) or llvm-mc-19 + ld.lld-19 (assembly).
"""
from __future__ import annotations

import hashlib
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hsapy.codeobject import CodeObject
from hsapy.sim.clock import SimClock
from hsapy.sim.execution import DispatchContext
from hsapy.sim.isa.interpreter import InterpreterExecutor
from hsapy.sim.memory import SimMemory
from hsapy.sim.targets import GPU_PROFILES

REPO = Path(__file__).resolve().parents[2]
TARGETS = ("gfx942", "gfx1201")
CACHE = Path(tempfile.gettempdir()) / "hsapy_isa_exec_cache"

DEVICE_HEADER = r"""
#pragma once
#define KERNEL extern "C" __attribute__((global))
#define DEVICE static __attribute__((device)) inline
#define SHARED __attribute__((shared))
typedef unsigned int uint;
DEVICE uint tid_x() { return __builtin_amdgcn_workitem_id_x(); }
DEVICE uint tid_y() { return __builtin_amdgcn_workitem_id_y(); }
DEVICE uint bid_x() { return __builtin_amdgcn_workgroup_id_x(); }
DEVICE uint bid_y() { return __builtin_amdgcn_workgroup_id_y(); }
DEVICE uint bdim_x() { return __builtin_amdgcn_workgroup_size_x(); }
DEVICE uint bdim_y() { return __builtin_amdgcn_workgroup_size_y(); }
DEVICE uint gdim_x() { return (__builtin_amdgcn_grid_size_x() + bdim_x() - 1) / bdim_x(); }
DEVICE void sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
"""


def require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} not found (Debian packages clang-19 / llvm-19 / lld-19)")
    return path


def build_hip(source: str, target: str, extra: tuple[str, ...] = ()) -> bytes:
    """Compile HIP device code with clang-19 into a loadable code object (cached by content)."""
    require("clang-19")
    key = hashlib.sha1((source + target + " ".join(extra) + DEVICE_HEADER).encode()).hexdigest()
    CACHE.mkdir(parents=True, exist_ok=True)
    out = CACHE / f"{key}_{target}.co"
    if out.exists():
        return out.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.hip"
        (Path(tmp) / "dev.h").write_text(DEVICE_HEADER)
        src.write_text('#include "dev.h"\n' + source)
        cmd = ["clang-19", "-x", "hip", f"--offload-arch={target}", "--cuda-device-only",
               "--no-gpu-bundle-output", "-nogpulib", "-nogpuinc", "-O3", "-std=c++17",
               f"-I{tmp}", *extra, "-o", str(out) + ".tmp", str(src)]
        subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    Path(str(out) + ".tmp").rename(out)
    return out.read_bytes()


@dataclass
class LoadedKernel:
    """Just what the interpreter may look at: the code object and the kernel's name."""

    code_object: CodeObject
    name: str
    load_base: int
    descriptor_address: int


def load(memory: SimMemory, data: bytes, name: str) -> LoadedKernel:
    """Map PT_LOAD segments into one allocation, apply relative relocations."""
    co = CodeObject.from_bytes(data)
    end = max(seg.vaddr + seg.memsz for seg in co.segments)
    base = memory.allocate(end, 4096, tag="code object")
    for seg in co.segments:
        memory.write(base + seg.vaddr, data[seg.offset:seg.offset + seg.filesz])
    for rel in co.relocations:
        if rel.type == 13:  # R_AMDGPU_RELATIVE64
            memory.write(base + rel.offset, struct.pack("<Q", base + rel.addend))
        elif rel.type == 3:  # R_AMDGPU_ABS64
            memory.write(base + rel.offset, struct.pack("<Q", base + rel.symbol_value + rel.addend))
    info = co.kernels[name]
    return LoadedKernel(co, name, base, base + info.descriptor_vaddr)


HIDDEN = {
    "hidden_block_count_x": lambda g, b, d: g[0] // b[0],
    "hidden_block_count_y": lambda g, b, d: g[1] // b[1],
    "hidden_block_count_z": lambda g, b, d: g[2] // b[2],
    "hidden_group_size_x": lambda g, b, d: b[0],
    "hidden_group_size_y": lambda g, b, d: b[1],
    "hidden_group_size_z": lambda g, b, d: b[2],
    "hidden_remainder_x": lambda g, b, d: g[0] % b[0],
    "hidden_remainder_y": lambda g, b, d: g[1] % b[1],
    "hidden_remainder_z": lambda g, b, d: g[2] % b[2],
    "hidden_grid_dims": lambda g, b, d: d,
}


class Device:
    """A SimMemory plus helpers: buffers, kernargs, dispatch through the interpreter."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.profile = GPU_PROFILES[target]
        self.memory = SimMemory()
        self.clock = SimClock()
        self.executor = InterpreterExecutor(self.profile)

    def buffer(self, array: np.ndarray) -> int:
        raw = np.ascontiguousarray(array)
        address = self.memory.allocate(max(raw.nbytes, 4), 256, tag="buffer")
        if raw.nbytes:
            self.memory.write(address, raw.view(np.uint8).reshape(-1))
        return address

    def zeros(self, nbytes: int) -> int:
        return self.memory.allocate(max(nbytes, 4), 256, tag="buffer")

    def read(self, address: int, dtype: Any, count: int) -> np.ndarray:
        return np.frombuffer(self.memory.read(address, np.dtype(dtype).itemsize * count), dtype).copy()

    def load(self, data: bytes, name: str) -> LoadedKernel:
        return load(self.memory, data, name)

    def kernargs(self, kernel: LoadedKernel, args: list, grid, block) -> int:
        info = kernel.code_object.kernels[kernel.name]
        size = max(info.kernarg_segment_size, 8) + 256  # hardware may read past the end
        blob = bytearray(size)
        explicit = [a for a in info.args if not a.is_hidden]
        assert len(explicit) == len(args), (len(explicit), len(args))
        for arg, value in zip(explicit, args):
            if isinstance(value, float):
                struct.pack_into("<f", blob, arg.offset, value)
            else:
                blob[arg.offset:arg.offset + arg.size] = int(value).to_bytes(arg.size, "little",
                                                                             signed=value < 0)
        dims = 3 if grid[2] > 1 else 2 if grid[1] > 1 else 1
        for arg in info.args:
            if arg.value_kind in HIDDEN:
                value = HIDDEN[arg.value_kind](grid, block, dims)
                blob[arg.offset:arg.offset + arg.size] = int(value).to_bytes(arg.size, "little")
        address = self.memory.allocate(size, 64, tag="kernarg")
        self.memory.write(address, bytes(blob))
        return address

    def dispatch(self, kernel: LoadedKernel, args: list, grid, block, lds: int = 0,
                 private: int = 0) -> DispatchContext:
        grid = tuple(grid) + (1,) * (3 - len(grid))
        block = tuple(block) + (1,) * (3 - len(block))
        kernarg = self.kernargs(kernel, args, grid, block)
        info = kernel.code_object.kernels[kernel.name]
        lds_total = info.group_segment_fixed_size + lds
        packet = self.memory.allocate(64, 64, tag="packet")
        body = struct.pack("<HHHHHHIIIIIIQQQQ", 2, 3, block[0], block[1], block[2], 0, grid[0],
                           grid[1], grid[2], private, lds_total, 0, 0, 0, 0, 0)
        body = body[:32] + struct.pack("<QQQQ", kernel.descriptor_address, kernarg, 0, 0)
        self.memory.write(packet, body)
        queue = self.memory.allocate(256, 64, tag="queue")
        ctx = DispatchContext(
            agent=self.profile, memory=self.memory, packet_address=packet, queue_address=queue,
            dispatch_id=7, setup_dims=3, workgroup_size=block, grid_size=grid,
            private_segment_size=private, group_segment_size=lds_total,
            kernel_object=kernel.descriptor_address, kernarg_address=kernarg, kernel=kernel,
            clock=self.clock)
        self.executor.execute(ctx)
        return ctx
