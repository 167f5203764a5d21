"""The tutorial's operator suite as data: variants, launch geometry, inputs, references, checks.

Everything here is host-side numpy and runs without a runtime: ``hsapy run`` (and the tests)
combine it with a code object and the dispatch path. The numbers (sizes, tolerances, launch
shapes, published timings) come from chapters 8-13 of the hello-gpu tutorial, which
docs/operator-suite.md describes; the HIP sources are in ``kernels/*.hip``.

Vocabulary, following the tutorial: a *dispatch* launches ``blocks`` workgroups of ``block``
work-items (HSA's grid size is their product); ``dynamic_lds`` is the group segment size the
kernel's ``extern __shared__`` array gets. A *variant* is a list of dispatches; a *problem* is one
operator at one size with one kind of input.

Test hygiene the tutorial uses and this module follows: outputs are NaN-filled before every run
(atomic accumulators start at 0), references are FP64, reductions get dyadic inputs so that the
exact sum is representable and every order of summation reaches it, and checks cover the whole
array and the edge sizes.
"""
from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hsapy.errors import HsapyValueError

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
    "make_problem",
    "check_outputs",
    "kernels_dir",
    "source_path",
    "prebuilt_path",
    "PREBUILT_TARGETS",
]

Size = tuple[int, ...]
Scalar = np.uint32 | np.float32
Arg = str | np.uint32 | np.float32   # a buffer name or a scalar kernel argument

BLOCK = 256            # the tutorial's block size for 1-D kernels
RMSNORM_EPS = 1e-5
PREBUILT_TARGETS: tuple[str, ...] = ("gfx942", "gfx1201", "gfx1100", "gfx90a")


# ---------------------------------------------------------------------------------------------
# Data types of the tables

@dataclass(frozen=True)
class Device:
    """What launch geometry depends on: the target's wave size and compute-unit count."""

    target: str
    wavefront_size: int
    compute_units: int


@dataclass(frozen=True)
class Dispatch:
    """One kernel launch: ``blocks`` workgroups of ``block`` work-items, arguments by name."""

    kernel: str
    blocks: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[Arg, ...]
    dynamic_lds: int = 0

    @property
    def grid(self) -> tuple[int, int, int]:
        """HSA grid size in work-items (blocks times block, per dimension)."""
        return tuple(b * w for b, w in zip(self.blocks, self.block))  # type: ignore[return-value]

    @property
    def dims(self) -> int:
        """Number of grid dimensions the packet declares (1, 2 or 3)."""
        if self.blocks[2] > 1 or self.block[2] > 1:
            return 3
        if self.blocks[1] > 1 or self.block[1] > 1:
            return 2
        return 1


@dataclass(frozen=True)
class ProblemBuffer:
    """A device buffer of a problem: its initial contents and whether it is checked."""

    name: str
    data: np.ndarray          # float32 initial contents (inputs, or NaN / zero fill)
    is_input: bool


@dataclass
class Problem:
    """One operator at one size with one kind of input: buffers and FP64 expectations."""

    operator: str
    size: Size
    inputs_kind: str
    buffers: dict[str, ProblemBuffer]
    reference: dict[str, np.ndarray]   # FP64 expected values, by output buffer name

    @property
    def label(self) -> str:
        """The size as the tutorial writes it ("16777216", "4096x1024")."""
        return size_label(self.size)


@dataclass(frozen=True)
class Tolerance:
    """|got - ref| <= atol + rtol*|ref| for every element; optional FP64 row-sum check."""

    atol: float
    rtol: float = 0.0
    row_sum_atol: float | None = None    # softmax: |sum(row) - 1| <= this, in FP64

    def describe(self) -> str:
        """The rule as text, e.g. ``|err| <= 1e-4 + 1e-4*|ref|``."""
        if self.atol == 0 and self.rtol == 0:
            text = "exact"
        elif self.rtol == 0:
            text = f"|err| <= {self.atol:g}"
        else:
            text = f"|err| <= {self.atol:g} + {self.rtol:g}*|ref|"
        if self.row_sum_atol is not None:
            text += f", |row sum - 1| <= {self.row_sum_atol:g}"
        return text


@dataclass(frozen=True)
class CheckResult:
    """Outcome of comparing a run's outputs with the FP64 reference.

    ``max_err`` is the error of the element closest to (or furthest over) its bound and
    ``tolerance`` is that element's bound, so ``ok`` is ``max_err <= tolerance`` and everything
    finite. ``max_err`` is ``inf`` when an output holds NaN or infinity.
    """

    ok: bool
    max_err: float
    tolerance: float
    worst: str               # where: "out[123]" or "row sum 7"
    nonfinite: int           # count of NaN/inf elements in checked outputs


@dataclass(frozen=True)
class Published:
    """A figure the tutorial measured on an RX 9070 XT (gfx1201) at the operator's main size."""

    time_us: float
    note: str = ""


@dataclass(frozen=True)
class Variant:
    """One variant of an operator: its kernels and how to launch them for a size."""

    operator: str
    name: str
    kernels: tuple[str, ...]
    plan: Callable[[Size, Device], list[Dispatch]]
    published: Published | None = None
    zero_init: tuple[str, ...] = ()      # accumulators that must start at 0 instead of NaN
    expected: Callable[[Problem, Size, Device], dict[str, np.ndarray]] | None = None
    description: str = ""
    # On the simulator: this variant's own reduced sizes, for a kernel whose simulated cost grows
    # much faster than its size (every work-item contending for one address). They replace the
    # operator's reduced sizes, and edge sizes above the largest of them (see sim_sizes_for).
    sim_sizes: tuple[Size, ...] | None = None


def sim_sizes_for(op: Operator, variant: Variant, sizes: tuple[Size, ...]) -> tuple[Size, ...]:
    """``sizes`` as the simulator runs them for ``variant`` (unchanged without variant sizes)."""
    if not variant.sim_sizes:
        return sizes
    largest = max(variant.sim_sizes)
    kept = [s for s in sizes if s not in op.sim_sizes and s <= largest]
    unique: dict[Size, None] = {}
    for size in (*kept, *variant.sim_sizes):
        unique.setdefault(size, None)
    return tuple(unique)


@dataclass(frozen=True)
class Operator:
    """An operator of the suite: sizes, inputs, reference, tolerance, work and its variants."""

    name: str
    source: str                          # file in kernels/
    title: str
    size_names: tuple[str, ...]
    main_size: Size
    extra_sizes: tuple[Size, ...]
    edge_sizes: tuple[Size, ...]
    sim_sizes: tuple[Size, ...]          # reduced stand-ins for main/extra sizes on the simulator
    inputs_kinds: tuple[str, ...]
    make_buffers: Callable[[Size, str, np.random.Generator], dict[str, np.ndarray]]
    outputs: Callable[[Size], dict[str, tuple[int, ...]]]
    reference: Callable[[dict[str, np.ndarray], Size], dict[str, np.ndarray]]
    tolerance: Tolerance
    metric: str                          # "GB/s" or "TFLOP/s"
    work: Callable[[Size], float]        # bytes (GB/s) or flops (TFLOP/s) of one run
    variants: tuple[Variant, ...] = field(default_factory=tuple)
    llvmlite_kernels: bool = False       # also built through asm/ (the llvmlite route)

    def variant(self, name: str) -> Variant:
        """The variant called ``name``; raises HsapyValueError naming the valid ones."""
        for variant in self.variants:
            if variant.name == name:
                return variant
        names = ", ".join(v.name for v in self.variants)
        raise HsapyValueError(f"operator {self.name!r} has no variant {name!r}; "
                              f"choose one of: {names}")

    @property
    def kernel_names(self) -> tuple[str, ...]:
        """Every kernel any variant launches, in first-use order."""
        seen: dict[str, None] = {}
        for variant in self.variants:
            for kernel in variant.kernels:
                seen.setdefault(kernel, None)
        return tuple(seen)

    def sizes(self, which: str, simulated: bool) -> tuple[Size, ...]:
        """Sizes for ``which`` in ("main", "edge", "all", "default").

        On the simulator "main" means the reduced sizes; the edge sizes are always the real ones.
        "default" is main + extra + edge on hardware and reduced + edge on the simulator.
        """
        mains = self.sim_sizes if simulated else (self.main_size,)
        extras = () if simulated else self.extra_sizes
        if which == "main":
            chosen: tuple[Size, ...] = mains
        elif which == "edge":
            chosen = self.edge_sizes
        elif which in ("all", "default"):
            chosen = mains + extras + self.edge_sizes
        else:
            raise HsapyValueError(f"unknown size set {which!r}; use main, edge or all")
        unique: dict[Size, None] = {}
        for size in chosen:
            unique.setdefault(size, None)
        return tuple(unique)


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


def _nan(shape: tuple[int, ...]) -> np.ndarray:
    return np.full(shape, np.nan, dtype=np.float32)


def _uniform(rng: np.random.Generator, shape: tuple[int, ...], low: float = -1.0,
             high: float = 1.0) -> np.ndarray:
    return rng.uniform(low, high, size=shape).astype(np.float32)


def _next_pow2(value: int) -> int:
    return 1 << max(0, (value - 1).bit_length())


def size_label(size: Size) -> str:
    """A size as text: ``(4096, 1024)`` -> ``"4096x1024"``."""
    return "x".join(str(n) for n in size)


def parse_size(text: str, op: Operator) -> Size:
    """Parse ``"4096x1024"`` (also ``16M``, ``64K``, ``1024^3``) into a size tuple for ``op``."""
    cleaned = text.strip().lower().replace("×", "x").replace(",", "").replace("_", "")
    if "^" in cleaned:
        base, _, power = cleaned.partition("^")
        parts = [base] * int(power)
    else:
        parts = cleaned.split("x")
    numbers = []
    for part in parts:
        scale = 1
        if part.endswith("k"):
            scale, part = 1024, part[:-1]
        elif part.endswith("m"):
            scale, part = 1024 * 1024, part[:-1]
        if not part.isdigit():
            raise HsapyValueError(f"cannot read size {text!r} for {op.name}: expected "
                                  f"{'x'.join(op.size_names)}, e.g. {size_label(op.main_size)}")
        numbers.append(int(part) * scale)
    if len(numbers) != len(op.size_names) or min(numbers) < 1:
        raise HsapyValueError(f"size {text!r} does not fit {op.name}: expected "
                              f"{len(op.size_names)} positive numbers "
                              f"{'x'.join(op.size_names)}, e.g. {size_label(op.main_size)}")
    return tuple(numbers)


def _seed(*parts: object) -> int:
    return zlib.crc32(repr(parts).encode())


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
        # The edges of operators.md, then the float4 tails.
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


# ---------------------------------------------------------------------------------------------
# Problems and checks

def make_problem(op: Operator, variant: Variant, size: Size, inputs_kind: str,
                 device: Device) -> Problem:
    """Inputs (deterministic per operator, size and kind), NaN-filled outputs, FP64 reference."""
    if inputs_kind not in op.inputs_kinds:
        raise HsapyValueError(f"{op.name} has no input kind {inputs_kind!r}; choose one of: "
                              f"{', '.join(op.inputs_kinds)}")
    rng = np.random.default_rng(_seed(op.name, size, inputs_kind))
    inputs = op.make_buffers(size, inputs_kind, rng)
    buffers = {name: ProblemBuffer(name, data, True) for name, data in inputs.items()}
    for name, shape in op.outputs(size).items():
        fill = np.zeros(shape, np.float32) if name in variant.zero_init else _nan(shape)
        buffers[name] = ProblemBuffer(name, fill, False)
    problem = Problem(op.name, size, inputs_kind, buffers, op.reference(inputs, size))
    if variant.expected is not None:
        problem.reference.update(variant.expected(problem, size, device))
    # A variant only checks the buffers its kernels write (serial softmax: y, not P).
    written = {arg for d in variant.plan(size, device) for arg in d.args if isinstance(arg, str)}
    problem.reference = {k: v for k, v in problem.reference.items() if k in written}
    return problem


def check_outputs(outputs: dict[str, np.ndarray], reference: dict[str, np.ndarray],
                  tolerance: Tolerance) -> CheckResult:
    """Compare every element of every referenced output; NaN or inf anywhere fails."""
    worst_ratio = -1.0
    worst = CheckResult(True, 0.0, tolerance.atol, "", 0)
    nonfinite = 0
    for name, expected in reference.items():
        got = np.asarray(outputs[name], dtype=np.float64).reshape(-1)[: expected.size]
        expected = expected.reshape(-1)
        bad = ~np.isfinite(got)
        if bad.any():
            nonfinite += int(bad.sum())
            where = int(np.argmax(bad))
            worst_ratio = math.inf
            worst = CheckResult(False, math.inf, tolerance.atol, f"{name}[{where}]", 0)
            continue
        err = np.abs(got - expected)
        bound = tolerance.atol + tolerance.rtol * np.abs(expected)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(bound > 0, err / np.where(bound > 0, bound, 1.0),
                             np.where(err > 0, math.inf, 0.0))
        i = int(np.argmax(ratio)) if ratio.size else 0
        if ratio.size and ratio[i] > worst_ratio:
            worst_ratio = float(ratio[i])
            worst = CheckResult(bool(err[i] <= bound[i]), float(err[i]), float(bound[i]),
                                f"{name}[{i}]", 0)
        if tolerance.row_sum_atol is not None and got.size:
            rows = np.asarray(outputs[name], dtype=np.float64)
            sums_err = np.abs(rows.reshape(rows.shape[0], -1).sum(axis=1) - 1.0)
            r = int(np.argmax(sums_err))
            ratio_r = sums_err[r] / tolerance.row_sum_atol
            if ratio_r > worst_ratio:
                worst_ratio = float(ratio_r)
                worst = CheckResult(bool(sums_err[r] <= tolerance.row_sum_atol),
                                    float(sums_err[r]), tolerance.row_sum_atol,
                                    f"{name} row sum {r}", 0)
    ok = nonfinite == 0 and worst.max_err <= worst.tolerance
    return CheckResult(ok, worst.max_err, worst.tolerance, worst.worst, nonfinite)


# ---------------------------------------------------------------------------------------------
# Where the sources and prebuilt code objects are

def kernels_dir() -> Path:
    """The directory of the HIP sources: ``hsapy/kernels`` installed, ``kernels/`` in a checkout."""
    try:
        import hsapy.kernels as package  # installed through the package_dir mapping

        return Path(package.__file__).resolve().parent
    except ImportError:
        return Path(__file__).resolve().parent.parent / "kernels"


def source_path(op: Operator) -> Path:
    """The HIP source of ``op``."""
    return kernels_dir() / op.source


def prebuilt_path(op: Operator, target: str) -> Path:
    """Where kernels/build.py writes the code object of ``op`` for ``target``."""
    return kernels_dir() / "prebuilt" / f"{op.name}-{target}.hsaco"
