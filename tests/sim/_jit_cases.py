"""Kernels and a dispatch helper the compiled-engine tests share (tests/sim/test_jit_engine.py,
tests/sim/test_chunk_loop.py): each kernel maker takes a target and a numpy Generator and returns
(code object, kernel name, arguments, grid, workgroup, dynamic LDS bytes), the first four makers
then whether the kernel is parallel-safe."""
from __future__ import annotations

import numpy as np
import pytest


def corpus(source: str, target: str) -> bytes:
    from hsapy import toolchain

    try:
        toolchain.find_tool("clang", min_major=19)
        toolchain.find_tool("ld.lld", min_major=19)
    except toolchain.ToolNotFoundError as exc:
        pytest.skip(f"needs clang-19 and ld.lld-19: {exc}")
    import corpus_build

    wave = 64 if target == "gfx942" else 32
    return corpus_build.build_source(source, corpus_build.Build(target, wave, 3))


def vector_add(target: str, rng):
    from hsapy.asm import kernels

    n = 60_001                      # 235 workgroups of 256, the last one partial
    a, b = rng.random((2, n), dtype=np.float32)
    return (kernels.build("vector_add", target), "vector_add",
            [a, b, np.zeros(n, np.float32), n], n, 256, 0, True)


def stencil_1d(target: str, rng):
    n, block = 40_001, 256
    x = rng.standard_normal(n).astype(np.float32)
    return (corpus("stencil", target), "stencil_1d", [x, np.zeros(n, np.float32), n],
            -(-n // block) * block, block, 0, True)


def dot_atomic(target: str, rng):
    n, block, blocks = 30_000, 128, 40
    a, b = rng.standard_normal((2, n)).astype(np.float32)
    return (corpus("reduce", target), "dot_atomic",
            [a, b, np.zeros(1, np.float32), n], blocks * block, block, 0, False)


def histogram(target: str, rng):
    n, block, bins = 30_000, 256, 37
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    return (corpus("histogram", target), "histogram_global",
            [keys, np.zeros(bins, np.uint32), bins, n], -(-n // block) * block, block, 0,
            False)


def transpose(target: str, rng):
    rows, cols = 320, 384                 # 12 x 10 tiles of 32 x 32, each a 32 x 8 workgroup
    x = rng.standard_normal(rows * cols).astype(np.float32)
    return (corpus("stencil", target), "transpose_padded",
            [x, np.zeros(rows * cols, np.float32), rows, cols], (cols, rows // 4), (32, 8), 0)


def vector_add_whole(target: str, rng):
    from hsapy.asm import kernels

    n = 256 * 128                         # whole workgroups only
    a, b = rng.random((2, n), dtype=np.float32)
    return (kernels.build("vector_add", target), "vector_add",
            [a, b, np.zeros(n, np.float32), n], n, 256, 0)


class Setup:
    """A loaded kernel, its buffers and a queue; ``dispatch`` restores the arguments first."""

    def __init__(self, rt, code: bytes, name: str, args) -> None:
        self.rt = rt
        self.agent = rt.gpu_agents[0]
        self.executable = rt.load(code, self.agent)
        self.kernel = self.executable.kernel(name)
        self.args = args
        self.buffers = [(self.agent.device_pool.allocate(max(a.nbytes, 4)), a)
                        for a in args if isinstance(a, np.ndarray)]
        self.queue = self.agent.create_queue(size=64)

    def dispatch(self, engine: str, grid: int, block: int, lds: int) -> list[np.ndarray]:
        """Memory of every array argument after one dispatch under ``engine``."""
        self.rt.lib.sim_set_engine(engine)
        buffers = iter(self.buffers)
        values = []
        for arg in self.args:
            if isinstance(arg, np.ndarray):
                buf, _ = next(buffers)
                buf.copy_from(arg)
                values.append(buf)
            else:
                values.append(arg)
        self.kernel.launch(self.queue, values, grid=grid, workgroup=block, dynamic_lds=lds,
                           timeout=300)
        return [buf.copy_to(dtype=np.uint8)[:arr.nbytes] for buf, arr in self.buffers]

    def close(self) -> None:
        self.queue.close()
        for buf, _ in self.buffers:
            buf.close()
        self.executable.close()
