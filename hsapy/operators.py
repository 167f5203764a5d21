"""The tutorial's operator suite as data: each operator's sizes, inputs, FP64 reference and
tolerance, and the launch geometry of each of its variants (the table ``OPERATORS``).

Everything here is host-side numpy and runs without a runtime: ``hsapy run`` (and the tests)
combine it with a code object and the dispatch path. The numbers (sizes, tolerances, launch
shapes, published timings) come from chapters 8-13 of the hello-gpu tutorial, which
docs/operator-suite.md describes; the HIP sources are in ``kernels/*.hip``.

Vocabulary, following the tutorial: a *dispatch* launches ``blocks`` workgroups of ``block``
work-items (HSA's grid size is their product); ``dynamic_lds`` is the group segment size the
kernel's ``extern __shared__`` array gets. A *variant* is a list of dispatches; a *problem* is one
operator at one size with one kind of input. The types the table is written in, problems, the
check of outputs and the paths of sources and code objects are in hsapy.operator_model; this
module re-exports them, so ``from hsapy import operators`` reaches the whole suite.

Test hygiene the tutorial uses and this module follows: outputs are NaN-filled before every run
(atomic accumulators start at 0), references are FP64, reductions get dyadic inputs so that the
exact sum is representable and every order of summation reaches it, and checks cover the whole
array and the edge sizes.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from hsapy.errors import HsapyValueError
from hsapy.operator_model import (
    PREBUILT_TARGETS,
    Arg,
    CheckResult,
    Device,
    Dispatch,
    Operator,
    Problem,
    ProblemBuffer,
    Published,
    Size,
    Tolerance,
    Variant,
    check_outputs,
    kernels_dir,
    make_problem,
    parse_size,
    prebuilt_path,
    sim_sizes_for,
    size_label,
    source_path,
)

__all__ = [
    "Device",
    "Dispatch",
    "ProblemBuffer",
    "Problem",
    "Tolerance",
    "CheckResult",
    "Published",
    "Variant",
    "Operator",
    "OPERATORS",
    "operator",
    "parse_size",
    "size_label",
    "sim_sizes_for",
    "make_problem",
    "check_outputs",
    "kernels_dir",
    "source_path",
    "prebuilt_path",
    "PREBUILT_TARGETS",
]

BLOCK = 256            # the tutorial's block size for 1-D kernels
RMSNORM_EPS = 1e-5


# ---------------------------------------------------------------------------------------------
# Helpers

def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _u32(value: int) -> np.uint32:
    if not 0 <= value < 2**32:
        raise HsapyValueError(f"size {value} does not fit the kernels' 32-bit index arguments")
    return np.uint32(value)


def _f32(value: float) -> np.float32:
    return np.float32(value)


def _uniform(rng: np.random.Generator, shape: tuple[int, ...], low: float = -1.0,
             high: float = 1.0) -> np.ndarray:
    return rng.uniform(low, high, size=shape).astype(np.float32)


def _next_pow2(value: int) -> int:
    return 1 << max(0, (value - 1).bit_length())


# ---------------------------------------------------------------------------------------------
# Element-wise: vector add

def _vadd_buffers(size: Size, kind: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    (n,) = size
    return {"a": _uniform(rng, (n,)), "b": _uniform(rng, (n,))}


def _vadd_outputs(size: Size) -> dict[str, tuple[int, ...]]:
    return {"out": size}


def _vadd_reference(inputs: dict[str, np.ndarray], size: Size) -> dict[str, np.ndarray]:
    return {"out": inputs["a"].astype(np.float64) + inputs["b"].astype(np.float64)}


def _vadd_v0(size: Size, dev: Device) -> list[Dispatch]:
    (n,) = size
    return [Dispatch("vector_add_v0", (_ceil_div(n, BLOCK), 1, 1), (BLOCK, 1, 1),
                     ("a", "b", "out", _u32(n)))]


def _vadd_v1(kernel: str) -> Callable[[Size, Device], list[Dispatch]]:
    def plan(size: Size, dev: Device) -> list[Dispatch]:
        (n,) = size
        # Every wave owns W*W elements, so a block of 256 covers 256*W (kernels/vector_add.hip).
        per_block = BLOCK * dev.wavefront_size
        return [Dispatch(kernel, (_ceil_div(n, per_block), 1, 1), (BLOCK, 1, 1),
                         ("a", "b", "out", _u32(n)))]
    return plan


def _grid_stride_blocks(items: int, dev: Device) -> int:
    # operators.md: grid min(full, CUs*8).
    return max(1, min(_ceil_div(items, BLOCK), dev.compute_units * 8))


def _vadd_v2(size: Size, dev: Device) -> list[Dispatch]:
    (n,) = size
    return [Dispatch("vector_add_v2_grid_stride", (_grid_stride_blocks(n, dev), 1, 1),
                     (BLOCK, 1, 1), ("a", "b", "out", _u32(n)))]


def _vadd_v3(size: Size, dev: Device) -> list[Dispatch]:
    (n,) = size
    return [Dispatch("vector_add_v3_float4", (_grid_stride_blocks(n // 4, dev), 1, 1),
                     (BLOCK, 1, 1), ("a", "b", "out", _u32(n)))]


# ---------------------------------------------------------------------------------------------
# Reduction: sum

REDUCTION_GRID = 256          # operators.md: local_lds / local_wave "grid 256"


def _dyadic_random(rng: np.random.Generator, n: int) -> np.ndarray:
    return (rng.integers(-16, 17, size=n) / 32).astype(np.float32)


def _dyadic_weighted(n: int) -> np.ndarray:
    # ((7*i) mod 33 - 16)/32: every run of 33 consecutive elements holds each of -16..16 once and
    # sums to 0, so partial sums in index order stay below 9 whatever n is.
    k = (7 * np.arange(n, dtype=np.int64)) % 33 - 16
    return (k / 32).astype(np.float32)


def _reduction_buffers(size: Size, kind: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    (n,) = size
    if kind == "random":
        x = _dyadic_random(rng, n)
    elif kind == "weighted":
        x = _dyadic_weighted(n)
    elif kind == "ones":
        x = np.ones(n, dtype=np.float32)
    else:
        raise HsapyValueError(f"reduction has no input kind {kind!r}")
    return {"x": x}


def _reduction_outputs(size: Size) -> dict[str, tuple[int, ...]]:
    (n,) = size
    return {"out": (1,), "partials": (max(_ceil_div(n, BLOCK), REDUCTION_GRID),)}


def _reduction_reference(inputs: dict[str, np.ndarray], size: Size) -> dict[str, np.ndarray]:
    return {"out": np.array([inputs["x"].astype(np.float64).sum()])}


def _block_sums(x: np.ndarray, blocks: int) -> np.ndarray:
    padded = np.zeros(blocks * BLOCK, dtype=np.float64)
    padded[: x.size] = x
    return padded.reshape(blocks, BLOCK).sum(axis=1)


def _grid_stride_sums(x: np.ndarray, blocks: int) -> np.ndarray:
    # Block b accumulates every element whose index i has (i // BLOCK) % blocks == b.
    chunk = blocks * BLOCK
    padded = np.zeros(_ceil_div(x.size, chunk) * chunk, dtype=np.float64)
    padded[: x.size] = x
    return padded.reshape(-1, blocks, BLOCK).sum(axis=(0, 2))


def _reduction_grid(n: int) -> int:
    return max(1, min(REDUCTION_GRID, _ceil_div(n, BLOCK)))


def _expect_block_partials(problem: Problem, size: Size, dev: Device) -> dict[str, np.ndarray]:
    (n,) = size
    x = problem.buffers["x"].data
    return {"partials": _block_sums(x, _ceil_div(n, BLOCK))}


def _expect_grid_partials(problem: Problem, size: Size, dev: Device) -> dict[str, np.ndarray]:
    (n,) = size
    x = problem.buffers["x"].data
    return {"partials": _grid_stride_sums(x, _reduction_grid(n))}


_LDS_FLOATS = BLOCK * 4      # dynamic LDS of blockDim floats (operators.md: block*4 bytes)


def _reduce_final(source: str, count: int) -> Dispatch:
    return Dispatch("reduce_final", (1, 1, 1), (BLOCK, 1, 1), (source, "out", _u32(count)),
                    _LDS_FLOATS)


def _red_element_atomic(size: Size, dev: Device) -> list[Dispatch]:
    (n,) = size
    return [Dispatch("reduce_element_atomic", (_ceil_div(n, BLOCK), 1, 1), (BLOCK, 1, 1),
                     ("x", "out", _u32(n)))]


def _red_block_atomic(size: Size, dev: Device) -> list[Dispatch]:
    (n,) = size
    return [Dispatch("reduce_block_atomic", (_ceil_div(n, BLOCK), 1, 1), (BLOCK, 1, 1),
                     ("x", "out", _u32(n)), _LDS_FLOATS)]


def _red_partials(size: Size, dev: Device) -> list[Dispatch]:
    (n,) = size
    blocks = _ceil_div(n, BLOCK)
    return [Dispatch("reduce_partials", (blocks, 1, 1), (BLOCK, 1, 1),
                     ("x", "partials", _u32(n)), _LDS_FLOATS),
            _reduce_final("partials", blocks)]


def _red_local(kernel: str) -> Callable[[Size, Device], list[Dispatch]]:
    def plan(size: Size, dev: Device) -> list[Dispatch]:
        (n,) = size
        blocks = _reduction_grid(n)
        return [Dispatch(kernel, (blocks, 1, 1), (BLOCK, 1, 1), ("x", "partials", _u32(n)),
                         _LDS_FLOATS),
                _reduce_final("partials", blocks)]
    return plan


def _red_final_only(size: Size, dev: Device) -> list[Dispatch]:
    (n,) = size
    return [_reduce_final("x", n)]


# ---------------------------------------------------------------------------------------------
# Row softmax

SOFTMAX_SHIFTS = (1000.0, -1000.0, 0.0)   # operators.md: per-row shifts +1000 / -1000 / 0


def _softmax_buffers(size: Size, kind: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    rows, cols = size
    # Dyadic k/128 in [-4, 4] plus the row's shift: exact in fp32 (ulp at 1000 is 2^-14).
    values = rng.integers(-512, 513, size=(rows, cols)) / 128
    shifts = np.array([SOFTMAX_SHIFTS[r % 3] for r in range(rows)])[:, None]
    return {"x": (values + shifts).astype(np.float32)}


def _softmax_outputs(size: Size) -> dict[str, tuple[int, ...]]:
    rows, cols = size
    return {"y": size, "row_max": (rows,), "row_sum": (rows,)}


def _softmax64(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_reference(inputs: dict[str, np.ndarray], size: Size) -> dict[str, np.ndarray]:
    return {"y": _softmax64(inputs["x"])}


def _softmax_serial(size: Size, dev: Device) -> list[Dispatch]:
    rows, cols = size
    blocks = (_ceil_div(rows, BLOCK), 1, 1)
    r, c = _u32(rows), _u32(cols)
    return [
        Dispatch("softmax_serial_max", blocks, (BLOCK, 1, 1), ("x", "row_max", r, c)),
        Dispatch("softmax_serial_expsum", blocks, (BLOCK, 1, 1),
                 ("x", "row_max", "row_sum", r, c)),
        Dispatch("softmax_serial_normalize", blocks, (BLOCK, 1, 1),
                 ("x", "row_max", "row_sum", "y", r, c)),
    ]


def _softmax_coop(size: Size, dev: Device) -> list[Dispatch]:
    rows, cols = size
    blocks = (rows, 1, 1)
    r, c = _u32(rows), _u32(cols)
    return [
        Dispatch("softmax_coop_max", blocks, (BLOCK, 1, 1), ("x", "row_max", r, c), _LDS_FLOATS),
        Dispatch("softmax_coop_expsum", blocks, (BLOCK, 1, 1),
                 ("x", "row_max", "row_sum", r, c), _LDS_FLOATS),
        Dispatch("softmax_coop_normalize", blocks, (BLOCK, 1, 1),
                 ("x", "row_max", "row_sum", "y", r, c)),
    ]


def _softmax_fused(size: Size, dev: Device) -> list[Dispatch]:
    rows, cols = size
    return [Dispatch("softmax_fused", (rows, 1, 1), (BLOCK, 1, 1),
                     ("x", "y", _u32(rows), _u32(cols)), _LDS_FLOATS)]


# ---------------------------------------------------------------------------------------------
# GEMM, C = A*B, sizes M x N x K

def _gemm_buffers(size: Size, kind: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    m, n, k = size
    return {"A": _uniform(rng, (m, k)), "B": _uniform(rng, (k, n))}


def _gemm_outputs(size: Size) -> dict[str, tuple[int, ...]]:
    m, n, k = size
    return {"C": (m, n)}


def _gemm_reference(inputs: dict[str, np.ndarray], size: Size) -> dict[str, np.ndarray]:
    return {"C": inputs["A"].astype(np.float64) @ inputs["B"].astype(np.float64)}


def _gemm_plan(kernel: str, tile: int) -> Callable[[Size, Device], list[Dispatch]]:
    def plan(size: Size, dev: Device) -> list[Dispatch]:
        m, n, k = size
        return [Dispatch(kernel, (_ceil_div(n, tile), _ceil_div(m, tile), 1), (tile, tile, 1),
                         ("A", "B", "C", _u32(m), _u32(n), _u32(k)))]
    return plan


# ---------------------------------------------------------------------------------------------
# Attention forward, sizes S x D

RISING_MAX_SLOPE = 0.5      # score of key j ~ 0.5*j: the running max rises at every key


def _attention_scale(d: int) -> np.float32:
    return np.float32(1.0 / math.sqrt(d))


def _attention_buffers(size: Size, kind: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    s, d = size
    if kind == "random":
        q, k = _uniform(rng, (s, d)), _uniform(rng, (s, d))
    elif kind == "rising_max":
        # Small noise everywhere, q[:, 0] = 1 and k[j, 0] = slope*j/scale, so the scaled score
        # of key j is slope*j plus noise: each new key raises the running max, the online kernel
        # rescales at every step, and exp() of the raw scores would overflow fp32 (up to ~128).
        q = _uniform(rng, (s, d), -0.1, 0.1)
        k = _uniform(rng, (s, d), -0.1, 0.1)
        q[:, 0] = 1.0
        k[:, 0] = (RISING_MAX_SLOPE * np.arange(s) / float(_attention_scale(d))).astype(np.float32)
    else:
        raise HsapyValueError(f"attention has no input kind {kind!r}")
    return {"Q": q, "K": k, "V": _uniform(rng, (s, d))}


def _attention_outputs(size: Size) -> dict[str, tuple[int, ...]]:
    s, d = size
    return {"O": (s, d), "P": (s, s)}


def attention_scores64(inputs: dict[str, np.ndarray], d: int) -> np.ndarray:
    """FP64 scaled scores scale * Q K^T, with the fp32 scale the kernels receive."""
    q = inputs["Q"].astype(np.float64)
    k = inputs["K"].astype(np.float64)
    return (q @ k.T) * float(_attention_scale(d))


def _attention_reference(inputs: dict[str, np.ndarray], size: Size) -> dict[str, np.ndarray]:
    s, d = size
    p = _softmax64(attention_scores64(inputs, d))
    return {"O": p @ inputs["V"].astype(np.float64)}


def _attn_materialized(size: Size, dev: Device) -> list[Dispatch]:
    s, d = size
    scale = _attention_scale(d)
    tiles = _ceil_div(s, 16)
    return [
        Dispatch("attn_scores", (tiles, tiles, 1), (16, 16, 1),
                 ("Q", "K", "P", _u32(s), _u32(d), scale)),
        Dispatch("attn_softmax", (s, 1, 1), (BLOCK, 1, 1), ("P", _u32(s)), _LDS_FLOATS),
        Dispatch("attn_pv", (_ceil_div(d, 16), tiles, 1), (16, 16, 1),
                 ("P", "V", "O", _u32(s), _u32(d))),
    ]


def _attn_online(size: Size, dev: Device) -> list[Dispatch]:
    s, d = size
    # One thread per output column; a power of two for the LDS tree (kernels/attention.hip).
    block = max(_next_pow2(d), 32)
    if block > 1024:
        raise HsapyValueError(f"attention online supports D <= 1024, not {d}")
    return [Dispatch("attn_online", (s, 1, 1), (block, 1, 1),
                     ("Q", "K", "V", "O", _u32(s), _u32(d), _attention_scale(d)), block * 4)]


# ---------------------------------------------------------------------------------------------
# RMSNorm, sizes rows x cols

def _rmsnorm_buffers(size: Size, kind: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    rows, cols = size
    return {"x": _uniform(rng, (rows, cols)), "w": _uniform(rng, (cols,), 0.5, 1.5)}


def _rmsnorm_outputs(size: Size) -> dict[str, tuple[int, ...]]:
    return {"y": size}


def _rmsnorm_reference(inputs: dict[str, np.ndarray], size: Size) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(np.float64)
    w = inputs["w"].astype(np.float64)
    inv_rms = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + RMSNORM_EPS)
    return {"y": x * inv_rms * w}


def _rmsnorm_args(size: Size) -> tuple[Arg, ...]:
    rows, cols = size
    return ("x", "w", "y", _u32(rows), _u32(cols), _f32(RMSNORM_EPS))


def _rmsnorm_serial(size: Size, dev: Device) -> list[Dispatch]:
    rows, cols = size
    return [Dispatch("rmsnorm_serial", (_ceil_div(rows, BLOCK), 1, 1), (BLOCK, 1, 1),
                     _rmsnorm_args(size))]


def _rmsnorm_block(block: int) -> Callable[[Size, Device], list[Dispatch]]:
    def plan(size: Size, dev: Device) -> list[Dispatch]:
        rows, cols = size
        return [Dispatch("rmsnorm_block", (rows, 1, 1), (block, 1, 1), _rmsnorm_args(size),
                         block * 4)]
    return plan


# ---------------------------------------------------------------------------------------------
# The table

def _bytes_per_float(count: Callable[[Size], int]) -> Callable[[Size], float]:
    return lambda size: 4.0 * count(size)


OPERATORS: dict[str, Operator] = {}


def _register(op: Operator, variants: list[Variant]) -> None:
    OPERATORS[op.name] = Operator(**{**op.__dict__, "variants": tuple(variants)})


_register(
    Operator(
        name="vector_add", source="vector_add.hip", title="element-wise out = a + b",
        size_names=("N",), main_size=(16_777_216,),
        extra_sizes=((1_048_576,), (4_194_304,)),
        # The edges of docs/operator-suite.md, then the float4 tails.
        edge_sizes=((1,), (31,), (32,), (33,), (255,), (256,), (257,), (1027,), (16_777_219,),
                    (2,), (6,), (1026,)),
        sim_sizes=((524_288,),),
        inputs_kinds=("random",),
        make_buffers=_vadd_buffers, outputs=_vadd_outputs, reference=_vadd_reference,
        tolerance=Tolerance(atol=1e-6),
        metric="GB/s", work=_bytes_per_float(lambda s: 3 * s[0]),   # 12*N bytes
        llvmlite_kernels=True,
    ),
    [
        Variant("vector_add", "v0", ("vector_add_v0",), _vadd_v0,
                Published(334.8, "601 GB/s"), description="one element per thread"),
        Variant("vector_add", "v1_contiguous", ("vector_add_v1_contiguous",),
                _vadd_v1("vector_add_v1_contiguous"),
                description="wave tile in rounds, lane -> base+round*W+lane"),
        Variant("vector_add", "v1_strided", ("vector_add_v1_strided",),
                _vadd_v1("vector_add_v1_strided"), Published(2567.0),
                description="wave tile in rounds, lane -> base+lane*W+round"),
        Variant("vector_add", "v2_grid_stride", ("vector_add_v2_grid_stride",), _vadd_v2,
                description="grid-stride loop, grid min(full, CUs*8)"),
        Variant("vector_add", "v3_float4", ("vector_add_v3_float4",), _vadd_v3,
                Published(343.0), description="float4 grid-stride + scalar tail"),
    ],
)

_register(
    Operator(
        name="reduction", source="reduction.hip", title="sum of fp32",
        size_names=("N",), main_size=(16_777_216,), extra_sizes=(),
        edge_sizes=((1,), (255,), (256,), (257,), (1027,), (65_537,)),
        sim_sizes=((524_288,),),
        inputs_kinds=("random", "weighted", "ones"),
        make_buffers=_reduction_buffers, outputs=_reduction_outputs,
        reference=_reduction_reference,
        tolerance=Tolerance(atol=0.0),
        metric="GB/s", work=_bytes_per_float(lambda s: s[0]),
        llvmlite_kernels=True,
    ),
    [
        # Where atomicAdd(float) is a compare-and-swap loop (gfx1201), all work-items contend
        # for one address and the simulator pays ~N^2 / wave size steps. The interpreter runs a
        # kernel's dispatches until its compiled code is ready (and always under
        # HSAPY_SIM_ENGINE=interp), and at 65536 it needs close to the watchdog's minute: the
        # variant stays at 8192/8193.
        Variant("reduction", "element_atomic", ("reduce_element_atomic",), _red_element_atomic,
                Published(34_650.0), zero_init=("out",),
                description="atomicAdd per element", sim_sizes=((8_192,), (8_193,))),
        Variant("reduction", "block_atomic", ("reduce_block_atomic",), _red_block_atomic,
                Published(4_350.0), zero_init=("out",),
                description="LDS tree, one atomicAdd per block"),
        Variant("reduction", "partials", ("reduce_partials", "reduce_final"), _red_partials,
                Published(477.7), expected=_expect_block_partials,
                description="LDS tree -> partials[block], then final"),
        Variant("reduction", "local_lds", ("reduce_local_lds", "reduce_final"),
                _red_local("reduce_local_lds"), Published(78.96, "grid 256"),
                expected=_expect_grid_partials,
                description="grid-stride accumulate, LDS tree, then final"),
        Variant("reduction", "local_wave", ("reduce_local_wave", "reduce_final"),
                _red_local("reduce_local_wave"), Published(78.06, "grid 256"),
                expected=_expect_grid_partials,
                description="grid-stride accumulate, wave shuffles, then final"),
        Variant("reduction", "final", ("reduce_final",), _red_final_only,
                description="one block over the whole input"),
    ],
)

_register(
    Operator(
        name="softmax", source="softmax.hip", title="row softmax",
        size_names=("rows", "cols"), main_size=(4096, 1024),
        extra_sizes=((128, 1024),),
        edge_sizes=((4096, 1023), (4096, 1025)),
        sim_sizes=((1024, 1024),),
        inputs_kinds=("shifted",),
        make_buffers=_softmax_buffers, outputs=_softmax_outputs, reference=_softmax_reference,
        tolerance=Tolerance(atol=2e-5, row_sum_atol=2e-5),
        metric="GB/s", work=_bytes_per_float(lambda s: 2 * s[0] * s[1]),   # read x, write y
        llvmlite_kernels=True,
    ),
    [
        Variant("softmax", "serial",
                ("softmax_serial_max", "softmax_serial_expsum", "softmax_serial_normalize"),
                _softmax_serial, Published(773.3), description="3 kernels, thread per row"),
        Variant("softmax", "cooperative",
                ("softmax_coop_max", "softmax_coop_expsum", "softmax_coop_normalize"),
                _softmax_coop, Published(149.3), description="3 kernels, block per row"),
        Variant("softmax", "fused", ("softmax_fused",), _softmax_fused, Published(119.7),
                description="1 kernel, block per row, two LDS trees"),
    ],
)

_register(
    Operator(
        name="gemm", source="gemm.hip", title="C = A*B, row-major fp32",
        size_names=("M", "N", "K"), main_size=(1024, 1024, 1024),
        extra_sizes=((256, 1024, 512), (1024, 256, 512)),
        edge_sizes=((129, 128, 128), (128, 129, 128), (128, 128, 129)),
        sim_sizes=((128, 128, 128),),
        inputs_kinds=("random",),
        make_buffers=_gemm_buffers, outputs=_gemm_outputs, reference=_gemm_reference,
        tolerance=Tolerance(atol=1e-4, rtol=1e-4),
        metric="TFLOP/s", work=lambda s: 2.0 * s[0] * s[1] * s[2],
        llvmlite_kernels=True,
    ),
    [
        Variant("gemm", "naive", ("gemm_naive",), _gemm_plan("gemm_naive", 16),
                Published(2871.0), description="block 16x16, one output per thread"),
        Variant("gemm", "tiled8", ("gemm_tiled8",), _gemm_plan("gemm_tiled8", 8),
                description="LDS tiles 8x8"),
        Variant("gemm", "tiled16", ("gemm_tiled16",), _gemm_plan("gemm_tiled16", 16),
                Published(1387.0, "1.55 TFLOP/s"), description="LDS tiles 16x16"),
        Variant("gemm", "tiled32", ("gemm_tiled32",), _gemm_plan("gemm_tiled32", 32),
                description="LDS tiles 32x32"),
    ],
)

_register(
    Operator(
        name="attention", source="attention.hip", title="single-head attention forward",
        size_names=("S", "D"), main_size=(128, 64),
        extra_sizes=((256, 64),),
        edge_sizes=((128, 65),),
        sim_sizes=((128, 64),),
        inputs_kinds=("random", "rising_max"),
        make_buffers=_attention_buffers, outputs=_attention_outputs,
        reference=_attention_reference,
        tolerance=Tolerance(atol=2e-5, rtol=2e-4),
        metric="TFLOP/s", work=lambda s: 4.0 * s[0] * s[0] * s[1],   # QK^T and PV
    ),
    [
        Variant("attention", "materialized", ("attn_scores", "attn_softmax", "attn_pv"),
                _attn_materialized, Published(59.68),
                description="scores, row softmax, P*V (3 kernels)"),
        Variant("attention", "online", ("attn_online",), _attn_online, Published(230.6),
                description="block per query, running max/sum, one key at a time"),
    ],
)

_register(
    Operator(
        name="rmsnorm", source="rmsnorm.hip", title="fused RMSNorm y = x/rms(x)*w",
        size_names=("rows", "cols"), main_size=(4096, 1024),
        extra_sizes=((128, 1024), (4096, 1025)),
        edge_sizes=((33, 1), (33, 129), (33, 257), (33, 4097)),
        sim_sizes=((1024, 1024),),
        inputs_kinds=("random",),
        make_buffers=_rmsnorm_buffers, outputs=_rmsnorm_outputs, reference=_rmsnorm_reference,
        tolerance=Tolerance(atol=2e-5, rtol=2e-5),
        metric="GB/s", work=_bytes_per_float(lambda s: 2 * s[0] * s[1] + s[1]),
        llvmlite_kernels=True,
    ),
    [
        Variant("rmsnorm", "serial", ("rmsnorm_serial",), _rmsnorm_serial, Published(694.6),
                description="thread per row"),
        Variant("rmsnorm", "block256", ("rmsnorm_block",), _rmsnorm_block(256),
                description="block per row, 256 threads"),
        Variant("rmsnorm", "block128", ("rmsnorm_block",), _rmsnorm_block(128),
                description="block per row, 128 threads"),
        Variant("rmsnorm", "block64", ("rmsnorm_block",), _rmsnorm_block(64), Published(59.82),
                description="block per row, 64 threads"),
    ],
)


def operator(name: str) -> Operator:
    """The operator called ``name``; raises HsapyValueError naming the valid ones."""
    try:
        return OPERATORS[name]
    except KeyError:
        raise HsapyValueError(f"unknown operator {name!r}; choose one of: "
                              f"{', '.join(OPERATORS)}") from None
