"""The kernels written with :mod:`hsapy.asm.dsl`, and their builds.

Every kernel is wave-size generic: the same builder function gives the wave64 (gfx9) and wave32
(gfx10+) code, the wave size being a function attribute.

- ``empty()``: returns at once; for launch-overhead benchmarks.
- ``timestamp(out: u64*, n: u32)``: work-item ``i < n`` writes ``out[2i]`` = shader cycle counter
  and ``out[2i + 1]`` = constant-rate realtime counter, both read at kernel entry.
- ``vector_add(a: f32*, b: f32*, out: f32*, n: u32)``: ``out[i] = a[i] + b[i]`` for ``i < n``.
"""
from __future__ import annotations

from collections.abc import Callable

from hsapy import toolchain
from hsapy.errors import HsapyValueError

from .dsl import F32, GLOBAL_PTR, I32, I64, KernelBuilder

__all__ = ["KERNELS", "build", "builder", "ir", "names"]


def _empty(target: str, code_object_version: int, wavefront_size: int | None) -> KernelBuilder:
    return KernelBuilder("empty", [], target=target, code_object_version=code_object_version,
                         wavefront_size=wavefront_size)


def _timestamp(target: str, code_object_version: int,
               wavefront_size: int | None) -> KernelBuilder:
    kb = KernelBuilder("timestamp", [("out", GLOBAL_PTR), ("n", I32)], target=target,
                       code_object_version=code_object_version, wavefront_size=wavefront_size)
    cycles = kb.timestamp("cycles")
    realtime = kb.timestamp("realtime")
    i = kb.global_id()
    with kb.if_then(kb.b.icmp_unsigned("<", i, kb.arg("n"))):
        slot = kb.b.shl(kb.b.zext(i, I64), I64(1))
        kb.b.store(cycles, kb.element_ptr(kb.arg("out"), slot, I64), align=8)
        next_slot = kb.b.add(slot, I64(1))
        kb.b.store(realtime, kb.element_ptr(kb.arg("out"), next_slot, I64), align=8)
    return kb


def _vector_add(target: str, code_object_version: int,
                wavefront_size: int | None) -> KernelBuilder:
    params = [("a", GLOBAL_PTR), ("b", GLOBAL_PTR), ("out", GLOBAL_PTR), ("n", I32)]
    kb = KernelBuilder("vector_add", params, target=target,
                       code_object_version=code_object_version, wavefront_size=wavefront_size)
    i = kb.global_id()
    with kb.if_then(kb.b.icmp_unsigned("<", i, kb.arg("n"))):
        a = kb.b.load(kb.element_ptr(kb.arg("a"), i, F32), typ=F32, align=4)
        b = kb.b.load(kb.element_ptr(kb.arg("b"), i, F32), typ=F32, align=4)
        kb.b.store(kb.b.fadd(a, b), kb.element_ptr(kb.arg("out"), i, F32), align=4)
    return kb


# name -> builder(target, code_object_version, wavefront_size) -> KernelBuilder
KERNELS: dict[str, Callable[[str, int, int | None], KernelBuilder]] = {
    "empty": _empty,
    "timestamp": _timestamp,
    "vector_add": _vector_add,
}


def names() -> list[str]:
    """The kernels hsapy.asm provides."""
    return sorted(KERNELS)


def builder(name: str, target: str = "gfx942", *, code_object_version: int = 5,
            wavefront_size: int | None = None) -> KernelBuilder:
    """The finished :class:`KernelBuilder` of kernel ``name`` for ``target``."""
    try:
        make = KERNELS[name]
    except KeyError:
        raise HsapyValueError(f"hsapy.asm has no kernel {name!r}; it has "
                              f"{', '.join(names())}") from None
    kb = make(target, code_object_version, wavefront_size)
    kb.finish()
    return kb


def ir(name: str, target: str = "gfx942", *, code_object_version: int = 5,
       wavefront_size: int | None = None) -> str:
    """The LLVM IR text of kernel ``name`` for ``target``."""
    return builder(name, target, code_object_version=code_object_version,
                   wavefront_size=wavefront_size).finish()


def build(name: str, target: str = "gfx942", *, code_object_version: int = 5,
          wavefront_size: int | None = None, cache: bool = True) -> bytes:
    """The code object (``.hsaco`` bytes) of kernel ``name`` for ``target``; cached."""
    text = ir(name, target, code_object_version=code_object_version,
              wavefront_size=wavefront_size)
    return toolchain.build_ir(text, target, code_object_version=code_object_version,
                              wavefront_size=wavefront_size, cache=cache)
