"""The operator suite's kernels written with :mod:`hsapy.asm.dsl` (the llvmlite route).

Each kernel has the name, arguments and launch geometry of its HIP twin in ``kernels/*.hip``,
so ``hsapy run --route llvmlite`` reuses the variant plans, inputs and references of
:mod:`hsapy.operators` unchanged. They are wave-size generic: the target's wave size is a
function attribute. One code object per operator and target holds all of its kernels (their
modules are linked at the IR level and compiled together).

Covered variants: vector_add v0 and v2_grid_stride; reduction element_atomic, block_atomic,
partials, local_lds and final; softmax fused; GEMM naive and tiled 8/16/32; RMSNorm serial and
block 256/128/64. LDS trees use a static 1024-float LDS array (the planned dynamic LDS of the
HIP twins is then simply unused).
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from llvmlite import ir

from hsapy import toolchain
from hsapy.errors import HsapyValueError

from .dsl import F32, GLOBAL_PTR, I32, KernelBuilder

__all__ = ["KERNELS", "build", "kernel_ir", "operator_ir"]

LDS_FLOATS = 1024            # one float per work-item of the largest workgroup
NEG_INF = ir.Constant(F32, float("-inf"))
ZERO = ir.Constant(F32, 0.0)


# ---------------------------------------------------------------------------------------------
# Control-flow helpers (phi-based loops: no allocas, nothing for the optimizer to clean up)

@dataclass
class Loop:
    """A loop under construction: ``index``, the carried values (``carried``) and, after the
    ``with`` block, their values at exit (``results``). Set ``next`` in the body."""

    index: ir.Value
    carried: list[ir.Value]
    next: list[ir.Value] = field(default_factory=list)
    results: list[ir.Value] = field(default_factory=list)


@contextlib.contextmanager
def _loop(kb: KernelBuilder, start: ir.Value, condition: Callable[[ir.Value], ir.Value],
          step: Callable[[ir.Value], ir.Value], carried: tuple[ir.Value, ...] = ()
          ) -> Iterator[Loop]:
    b = kb.b
    preheader = b.block
    header = b.append_basic_block("loop")
    body = b.append_basic_block("loop_body")
    done = b.append_basic_block("loop_done")
    b.branch(header)
    b.position_at_end(header)
    index = b.phi(start.type, name="i")
    index.add_incoming(start, preheader)
    phis = []
    for value in carried:
        phi = b.phi(value.type)
        phi.add_incoming(value, preheader)
        phis.append(phi)
    b.cbranch(condition(index), body, done)
    b.position_at_end(body)
    loop = Loop(index, list(phis), next=list(phis))
    yield loop
    latch = b.block
    index.add_incoming(step(index), latch)
    for phi, value in zip(phis, loop.next):
        phi.add_incoming(value, latch)
    b.branch(header)
    b.position_at_end(done)
    loop.results = list(phis)


def _range(kb: KernelBuilder, start: ir.Value, end: ir.Value, step: ir.Value,
           carried: tuple[ir.Value, ...] = ()):
    """``for (i = start; i < end; i += step)`` (unsigned), carrying ``carried``."""
    return _loop(kb, start, lambda i: kb.b.icmp_unsigned("<", i, end),
                 lambda i: kb.b.add(i, step), carried)


def _load(kb: KernelBuilder, base: ir.Value, index: ir.Value) -> ir.Value:
    return kb.b.load(kb.element_ptr(base, index, F32), typ=F32, align=4)


def _store(kb: KernelBuilder, value: ir.Value, base: ir.Value, index: ir.Value) -> None:
    kb.b.store(value, kb.element_ptr(base, index, F32), align=4)


def _fmax(kb: KernelBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    return kb.call("llvm.maxnum.f32", F32, [a, b])


def _exp(kb: KernelBuilder, x: ir.Value) -> ir.Value:
    return kb.call("llvm.exp.f32", F32, [x])


def _block_tree(kb: KernelBuilder, lds: ir.Value, value: ir.Value,
                combine: Callable[[ir.Value, ir.Value], ir.Value]) -> ir.Value:
    """LDS tree over the workgroup (size a power of two): every work-item gets the result."""
    b = kb.b
    tid = kb.workitem_id(0)
    _store(kb, value, lds, tid)
    kb.barrier()
    half = b.lshr(kb.workgroup_size(0), I32(1))
    with _loop(kb, half, lambda s: b.icmp_unsigned(">", s, I32(0)),
               lambda s: b.lshr(s, I32(1))) as loop:
        stride = loop.index
        with kb.if_then(b.icmp_unsigned("<", tid, stride)):
            other = _load(kb, lds, b.add(tid, stride))
            _store(kb, combine(_load(kb, lds, tid), other), lds, tid)
        kb.barrier()
    result = _load(kb, lds, I32(0))
    kb.barrier()
    return result


def _builder(name: str, params: list[tuple[str, ir.Type]], target: str,
             workgroup_size: tuple[int, int, int] | None = None) -> KernelBuilder:
    return KernelBuilder(name, params, target=target, workgroup_size=workgroup_size)


VECTOR_ADD_PARAMS = [("a", GLOBAL_PTR), ("b", GLOBAL_PTR), ("out", GLOBAL_PTR), ("n", I32)]


# ---------------------------------------------------------------------------------------------
# vector add

def vector_add_v0(target: str) -> KernelBuilder:
    kb = _builder("vector_add_v0", VECTOR_ADD_PARAMS, target)
    i = kb.global_id()
    with kb.if_then(kb.b.icmp_unsigned("<", i, kb.arg("n"))):
        total = kb.b.fadd(_load(kb, kb.arg("a"), i), _load(kb, kb.arg("b"), i))
        _store(kb, total, kb.arg("out"), i)
    return kb


def vector_add_v2_grid_stride(target: str) -> KernelBuilder:
    kb = _builder("vector_add_v2_grid_stride", VECTOR_ADD_PARAMS, target)
    stride = kb.b.mul(kb.workgroup_size(0), kb.num_workgroups(0))
    with _range(kb, kb.global_id(), kb.arg("n"), stride) as loop:
        i = loop.index
        total = kb.b.fadd(_load(kb, kb.arg("a"), i), _load(kb, kb.arg("b"), i))
        _store(kb, total, kb.arg("out"), i)
    return kb


# ---------------------------------------------------------------------------------------------
# reduction

REDUCE_PARAMS = [("x", GLOBAL_PTR), ("out", GLOBAL_PTR), ("n", I32)]


def _element_or_zero(kb: KernelBuilder, base: ir.Value, i: ir.Value, n: ir.Value) -> ir.Value:
    """``i < n ? base[i] : 0`` with the load only on the taken side."""
    b = kb.b
    in_range = b.icmp_unsigned("<", i, n)
    before = b.block
    with kb.if_then(in_range):
        loaded = _load(kb, base, i)
        load_block = b.block
    merged = b.phi(F32)
    merged.add_incoming(ZERO, before)
    merged.add_incoming(loaded, load_block)
    return merged


def reduce_element_atomic(target: str) -> KernelBuilder:
    kb = _builder("reduce_element_atomic", REDUCE_PARAMS, target)
    i = kb.global_id()
    with kb.if_then(kb.b.icmp_unsigned("<", i, kb.arg("n"))):
        kb.atomic_add(kb.arg("out"), _load(kb, kb.arg("x"), i))
    return kb


def _first_thread(kb: KernelBuilder):
    return kb.if_then(kb.b.icmp_unsigned("==", kb.workitem_id(0), I32(0)))


def reduce_block_atomic(target: str) -> KernelBuilder:
    kb = _builder("reduce_block_atomic", REDUCE_PARAMS, target)
    lds = kb.lds_array("values", F32, LDS_FLOATS)
    value = _element_or_zero(kb, kb.arg("x"), kb.global_id(), kb.arg("n"))
    total = _block_tree(kb, lds, value, kb.b.fadd)
    with _first_thread(kb):
        kb.atomic_add(kb.arg("out"), total)
    return kb


def reduce_partials(target: str) -> KernelBuilder:
    params = [("x", GLOBAL_PTR), ("partials", GLOBAL_PTR), ("n", I32)]
    kb = _builder("reduce_partials", params, target)
    lds = kb.lds_array("values", F32, LDS_FLOATS)
    value = _element_or_zero(kb, kb.arg("x"), kb.global_id(), kb.arg("n"))
    total = _block_tree(kb, lds, value, kb.b.fadd)
    with _first_thread(kb):
        _store(kb, total, kb.arg("partials"), kb.workgroup_id(0))
    return kb


def reduce_local_lds(target: str) -> KernelBuilder:
    params = [("x", GLOBAL_PTR), ("partials", GLOBAL_PTR), ("n", I32)]
    kb = _builder("reduce_local_lds", params, target)
    lds = kb.lds_array("values", F32, LDS_FLOATS)
    stride = kb.b.mul(kb.workgroup_size(0), kb.num_workgroups(0))
    with _range(kb, kb.global_id(), kb.arg("n"), stride, (ZERO,)) as loop:
        loop.next = [kb.b.fadd(loop.carried[0], _load(kb, kb.arg("x"), loop.index))]
    total = _block_tree(kb, lds, loop.results[0], kb.b.fadd)
    with _first_thread(kb):
        _store(kb, total, kb.arg("partials"), kb.workgroup_id(0))
    return kb


def reduce_final(target: str) -> KernelBuilder:
    params = [("values_in", GLOBAL_PTR), ("out", GLOBAL_PTR), ("m", I32)]
    kb = _builder("reduce_final", params, target)
    lds = kb.lds_array("values", F32, LDS_FLOATS)
    with _range(kb, kb.workitem_id(0), kb.arg("m"), kb.workgroup_size(0), (ZERO,)) as loop:
        loop.next = [kb.b.fadd(loop.carried[0], _load(kb, kb.arg("values_in"), loop.index))]
    total = _block_tree(kb, lds, loop.results[0], kb.b.fadd)
    with _first_thread(kb):
        _store(kb, total, kb.arg("out"), I32(0))
    return kb


# ---------------------------------------------------------------------------------------------
# softmax (fused: one block per row)

def softmax_fused(target: str) -> KernelBuilder:
    params = [("x", GLOBAL_PTR), ("y", GLOBAL_PTR), ("rows", I32), ("cols", I32)]
    kb = _builder("softmax_fused", params, target)
    b = kb.b
    lds = kb.lds_array("values", F32, LDS_FLOATS)
    cols = kb.arg("cols")
    row_start = b.mul(kb.workgroup_id(0), cols)
    tid, size = kb.workitem_id(0), kb.workgroup_size(0)
    with _range(kb, tid, cols, size, (NEG_INF,)) as loop:
        x = _load(kb, kb.arg("x"), b.add(row_start, loop.index))
        loop.next = [_fmax(kb, loop.carried[0], x)]
    row_max = _block_tree(kb, lds, loop.results[0], lambda p, q: _fmax(kb, p, q))
    with _range(kb, tid, cols, size, (ZERO,)) as loop:
        x = _load(kb, kb.arg("x"), b.add(row_start, loop.index))
        loop.next = [b.fadd(loop.carried[0], _exp(kb, b.fsub(x, row_max)))]
    row_sum = _block_tree(kb, lds, loop.results[0], b.fadd)
    inverse = b.fdiv(ir.Constant(F32, 1.0), row_sum)
    with _range(kb, tid, cols, size) as loop:
        index = b.add(row_start, loop.index)
        x = _load(kb, kb.arg("x"), index)
        _store(kb, b.fmul(_exp(kb, b.fsub(x, row_max)), inverse), kb.arg("y"), index)
    return kb


# ---------------------------------------------------------------------------------------------
# GEMM

GEMM_PARAMS = [("A", GLOBAL_PTR), ("B", GLOBAL_PTR), ("C", GLOBAL_PTR), ("M", I32), ("N", I32),
               ("K", I32)]


def gemm_naive(target: str) -> KernelBuilder:
    kb = _builder("gemm_naive", GEMM_PARAMS, target, workgroup_size=(16, 16, 1))
    b = kb.b
    m, n, k = kb.arg("M"), kb.arg("N"), kb.arg("K")
    row, col = kb.global_id(1), kb.global_id(0)
    inside = b.and_(b.icmp_unsigned("<", row, m), b.icmp_unsigned("<", col, n))
    with kb.if_then(inside):
        with _range(kb, I32(0), k, I32(1), (ZERO,)) as loop:
            a = _load(kb, kb.arg("A"), b.add(b.mul(row, k), loop.index))
            bb = _load(kb, kb.arg("B"), b.add(b.mul(loop.index, n), col))
            loop.next = [kb.call("llvm.fmuladd.f32", F32, [a, bb, loop.carried[0]])]
        _store(kb, loop.results[0], kb.arg("C"), b.add(b.mul(row, n), col))
    return kb


def _gemm_tiled(tile: int) -> Callable[[str], KernelBuilder]:
    def make(target: str) -> KernelBuilder:
        kb = _builder(f"gemm_tiled{tile}", GEMM_PARAMS, target, workgroup_size=(tile, tile, 1))
        b = kb.b
        m, n, k = kb.arg("M"), kb.arg("N"), kb.arg("K")
        a_tile = kb.lds_array("a_tile", F32, tile * tile)
        b_tile = kb.lds_array("b_tile", F32, tile * tile)
        tx, ty = kb.workitem_id(0), kb.workitem_id(1)
        row = b.add(b.mul(kb.workgroup_id(1), I32(tile)), ty)
        col = b.add(b.mul(kb.workgroup_id(0), I32(tile)), tx)
        t = I32(tile)
        with _range(kb, I32(0), k, t, (ZERO,)) as tiles:
            k0 = tiles.index
            a_col, b_row = b.add(k0, tx), b.add(k0, ty)
            a_ok = b.and_(b.icmp_unsigned("<", row, m), b.icmp_unsigned("<", a_col, k))
            b_ok = b.and_(b.icmp_unsigned("<", b_row, k), b.icmp_unsigned("<", col, n))
            slot = b.add(b.mul(ty, t), tx)
            a_value = _guarded_load(kb, kb.arg("A"), b.add(b.mul(row, k), a_col), a_ok)
            b_value = _guarded_load(kb, kb.arg("B"), b.add(b.mul(b_row, n), col), b_ok)
            _store(kb, a_value, a_tile, slot)
            _store(kb, b_value, b_tile, slot)
            kb.barrier()
            with _range(kb, I32(0), t, I32(1), (tiles.carried[0],)) as inner:
                a = _load(kb, a_tile, b.add(b.mul(ty, t), inner.index))
                bb = _load(kb, b_tile, b.add(b.mul(inner.index, t), tx))
                inner.next = [kb.call("llvm.fmuladd.f32", F32, [a, bb, inner.carried[0]])]
            kb.barrier()
            tiles.next = [inner.results[0]]
        inside = b.and_(b.icmp_unsigned("<", row, m), b.icmp_unsigned("<", col, n))
        with kb.if_then(inside):
            _store(kb, tiles.results[0], kb.arg("C"), b.add(b.mul(row, n), col))
        return kb
    return make


def _guarded_load(kb: KernelBuilder, base: ir.Value, index: ir.Value,
                  condition: ir.Value) -> ir.Value:
    b = kb.b
    before = b.block
    with kb.if_then(condition):
        loaded = _load(kb, base, index)
        load_block = b.block
    merged = b.phi(F32)
    merged.add_incoming(ZERO, before)
    merged.add_incoming(loaded, load_block)
    return merged


# ---------------------------------------------------------------------------------------------
# RMSNorm

RMSNORM_PARAMS = [("x", GLOBAL_PTR), ("w", GLOBAL_PTR), ("y", GLOBAL_PTR), ("rows", I32),
                  ("cols", I32), ("eps", F32)]


def _rmsnorm_scale(kb: KernelBuilder, sum_sq: ir.Value) -> ir.Value:
    b = kb.b
    mean = b.fdiv(sum_sq, b.uitofp(kb.arg("cols"), F32))
    return kb.call("llvm.amdgcn.rsq.f32", F32, [b.fadd(mean, kb.arg("eps"))])


def rmsnorm_serial(target: str) -> KernelBuilder:
    kb = _builder("rmsnorm_serial", RMSNORM_PARAMS, target)
    b = kb.b
    row, cols = kb.global_id(), kb.arg("cols")
    with kb.if_then(b.icmp_unsigned("<", row, kb.arg("rows"))):
        start = b.mul(row, cols)
        with _range(kb, I32(0), cols, I32(1), (ZERO,)) as loop:
            x = _load(kb, kb.arg("x"), b.add(start, loop.index))
            loop.next = [kb.call("llvm.fmuladd.f32", F32, [x, x, loop.carried[0]])]
        scale = _rmsnorm_scale(kb, loop.results[0])
        with _range(kb, I32(0), cols, I32(1)) as loop:
            index = b.add(start, loop.index)
            value = b.fmul(b.fmul(_load(kb, kb.arg("x"), index), scale),
                           _load(kb, kb.arg("w"), loop.index))
            _store(kb, value, kb.arg("y"), index)
    return kb


def rmsnorm_block(target: str) -> KernelBuilder:
    kb = _builder("rmsnorm_block", RMSNORM_PARAMS, target)
    b = kb.b
    lds = kb.lds_array("values", F32, LDS_FLOATS)
    cols = kb.arg("cols")
    start = b.mul(kb.workgroup_id(0), cols)
    tid, size = kb.workitem_id(0), kb.workgroup_size(0)
    with _range(kb, tid, cols, size, (ZERO,)) as loop:
        x = _load(kb, kb.arg("x"), b.add(start, loop.index))
        loop.next = [kb.call("llvm.fmuladd.f32", F32, [x, x, loop.carried[0]])]
    scale = _rmsnorm_scale(kb, _block_tree(kb, lds, loop.results[0], b.fadd))
    with _range(kb, tid, cols, size) as loop:
        index = b.add(start, loop.index)
        value = b.fmul(b.fmul(_load(kb, kb.arg("x"), index), scale),
                       _load(kb, kb.arg("w"), loop.index))
        _store(kb, value, kb.arg("y"), index)
    return kb


# ---------------------------------------------------------------------------------------------
# The table and the builds

KERNELS: dict[str, dict[str, Callable[[str], KernelBuilder]]] = {
    "vector_add": {
        "vector_add_v0": vector_add_v0,
        "vector_add_v2_grid_stride": vector_add_v2_grid_stride,
    },
    "reduction": {
        "reduce_element_atomic": reduce_element_atomic,
        "reduce_block_atomic": reduce_block_atomic,
        "reduce_partials": reduce_partials,
        "reduce_local_lds": reduce_local_lds,
        "reduce_final": reduce_final,
    },
    "softmax": {"softmax_fused": softmax_fused},
    "gemm": {
        "gemm_naive": gemm_naive,
        "gemm_tiled8": _gemm_tiled(8),
        "gemm_tiled16": _gemm_tiled(16),
        "gemm_tiled32": _gemm_tiled(32),
    },
    "rmsnorm": {"rmsnorm_serial": rmsnorm_serial, "rmsnorm_block": rmsnorm_block},
}


def kernel_ir(operator: str, kernel: str, target: str) -> str:
    """The LLVM IR text of one kernel for ``target``."""
    try:
        make = KERNELS[operator][kernel]
    except KeyError:
        raise HsapyValueError(f"no llvmlite kernel {kernel!r} for {operator!r}; available: "
                              f"{', '.join(k for ks in KERNELS.values() for k in ks)}") from None
    return make(target).finish()


def operator_ir(operator: str, target: str) -> str:
    """One LLVM module holding every llvmlite kernel of ``operator`` for ``target``.

    The kernels are linked at the IR level (llvmlite.binding) and compiled together: a code
    object has one metadata note listing all its kernels, which linking separately compiled
    objects would not give (ld.lld would concatenate one note per object).
    """
    if operator not in KERNELS:
        raise HsapyValueError(f"no llvmlite kernels for {operator!r}; available for: "
                              f"{', '.join(KERNELS)}")
    import llvmlite.binding as llvm

    merged = None
    for kernel in KERNELS[operator]:
        module = llvm.parse_assembly(kernel_ir(operator, kernel, target))
        if merged is None:
            merged = module
        else:
            merged.link_in(module)
    return str(merged)


@functools.cache
def build(operator: str, target: str) -> bytes:
    """One code object holding every llvmlite kernel of ``operator`` for ``target``."""
    return toolchain.build_ir(operator_ir(operator, target), target)
