"""The simulator-fidelity corpus: one case per kernel of tests/data/corpus, each with its inputs,
launch geometry, a numpy reference (float64 where rounding matters) and a tolerance that says
why it is what it is.

A case is a function ``run(k: KernelRun)``: it makes inputs with ``k.input``, outputs with
``k.output`` (filled with NaN or a byte pattern, with guard elements past the end), launches
with ``k.launch`` and checks with :func:`same` / :func:`close`. Sizes are small and chosen not
to be multiples of the workgroup, so partial waves and partial workgroups are exercised.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

# Elements past the end of every output that no kernel may write.
GUARD = 16
# Byte pattern of integer outputs before a launch (float outputs start as NaN).
FILL_BYTE = 0xA5


@dataclass(frozen=True)
class Case:
    """One kernel of the corpus: its source (file stem or rdc group) and its check."""

    kernel: str
    source: str
    run: Callable[[KernelRun], None]
    rdc: bool = False


CASES: dict[str, Case] = {}


def case(source: str, kernel: str | None = None, rdc: bool = False):
    """Register ``run`` as the case of ``kernel`` (default: the function's name) in ``source``."""

    def register(run: Callable[[KernelRun], None]) -> Callable[[KernelRun], None]:
        name = kernel or run.__name__
        assert name not in CASES, name
        CASES[name] = Case(name, source, run, rdc)
        return run

    return register


@dataclass
class Output:
    """A device buffer the kernel writes: ``n`` elements of ``dtype`` plus the guard."""

    buffer: Any
    dtype: np.dtype
    n: int
    fill: np.ndarray = field(repr=False)


class KernelRun:
    """What a case sees: one loaded executable on one agent, with buffers freed afterwards."""

    def __init__(self, executable: Any, agent: Any, queue: Any, wavefront_size: int,
                 rng_seed: int = 0) -> None:
        self.executable = executable
        self.agent = agent
        self.queue = queue
        self.wave = wavefront_size
        self.rng = np.random.default_rng(rng_seed)
        self._buffers: list[Any] = []

    def close(self) -> None:
        for buffer in self._buffers:
            buffer.close()
        self._buffers.clear()

    def _allocate(self, data: np.ndarray) -> Any:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        buffer = self.agent.device_pool.allocate(max(raw.nbytes, 4))
        self._buffers.append(buffer)
        if raw.nbytes:
            buffer.copy_from(raw)
        return buffer

    def input(self, array: Any, dtype: Any = None) -> Any:
        """A device buffer holding ``array``."""
        return self._allocate(np.asarray(array, dtype=dtype))

    def output(self, dtype: Any, n: int, initial: Any = None) -> Output:
        """A device buffer of ``n`` elements (plus guard) filled with NaN / 0xA5 bytes, or with
        ``initial`` (an array of n elements or a scalar) for in-place and atomic kernels."""
        dtype = np.dtype(dtype)
        fill = np.empty(n + GUARD, dtype)
        if dtype.kind == "f":
            fill[:] = np.nan
        else:
            fill.view(np.uint8)[:] = FILL_BYTE
        if initial is not None:
            fill[:n] = initial
        return Output(self._allocate(fill), dtype, n, fill)

    def launch(self, name: str, args: list[Any], grid: Any, block: Any,
               dynamic_lds: int = 0) -> None:
        """Dispatch kernel ``name`` and wait (a queue error is raised here)."""
        kernel = self.executable.kernel(name)
        args = [a.buffer if isinstance(a, Output) else a for a in args]
        kernel.launch(self.queue, args, grid, block, dynamic_lds=dynamic_lds, timeout=120.0)

    def read(self, out: Output) -> np.ndarray:
        """The ``n`` elements the kernel wrote; fails if any guard element changed."""
        data = out.buffer.copy_to(dtype=np.uint8)[: (out.n + GUARD) * out.dtype.itemsize]
        values = data.view(out.dtype)
        guard, expect = values[out.n:].view(np.uint8), out.fill[out.n:].view(np.uint8)
        assert np.array_equal(guard, expect), (
            f"the kernel wrote past the end of an output of {out.n} elements: "
            f"guard now {values[out.n:].tolist()}")
        return values[: out.n].copy()


def grid_for(n: int, block: int) -> int:
    """Work-items covering ``n`` elements in whole workgroups of ``block``."""
    return (n + block - 1) // block * block


def same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Exact equality, element by element (floats bitwise equal after NaN-normalisation)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if got.dtype.kind == "f":
        bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    else:
        bad = got != want
    if bad.any():
        where = np.flatnonzero(bad.reshape(-1))
        first = where[0]
        raise AssertionError(
            f"{what}: {len(where)} of {bad.size} elements differ; first at {first}: got "
            f"{got.reshape(-1)[first]!r}, want {want.reshape(-1)[first]!r}; differing indices "
            f"{where[:12].tolist()}")


def close(got: np.ndarray, want: np.ndarray, atol: Any, rtol: float, what: str) -> None:
    """``|got - want| <= atol + rtol * |want|`` everywhere (want in float64); NaN only where
    want is NaN."""
    got64 = np.asarray(got, np.float64)
    want64 = np.asarray(want, np.float64)
    assert got64.shape == want64.shape, (what, got64.shape, want64.shape)
    with np.errstate(invalid="ignore"):
        err = np.abs(got64 - want64)
        bad = ~(err <= atol + rtol * np.abs(want64))
        bad &= ~(np.isnan(got64) & np.isnan(want64)) & ~(got64 == want64)   # equal infinities
        bad |= np.isinf(want64) & (got64 != want64)
    if bad.any():
        where = np.flatnonzero(bad.reshape(-1))
        first = where[np.argmax(np.where(np.isnan(err), np.inf, err).reshape(-1)[where])]
        raise AssertionError(
            f"{what}: {len(where)} of {bad.size} elements outside tolerance (atol {atol}, rtol "
            f"{rtol}); worst at {first}: got {got64.reshape(-1)[first]!r}, want "
            f"{want64.reshape(-1)[first]!r}; indices {where[:12].tolist()}")


F32_EPS = float(np.finfo(np.float32).eps)   # 2**-23: one ulp at 1.0
F64_EPS = float(np.finfo(np.float64).eps)


def ulps32(x: np.ndarray) -> np.ndarray:
    """One float32 ulp at |x| (float64), the spacing used to state float tolerances."""
    return np.spacing(np.abs(np.asarray(x, np.float32))).astype(np.float64)


# ================================================================================================
# basics.hip


@case("basics")
def saxpy(k: KernelRun) -> None:
    n, block = 1000, 256
    x = k.rng.standard_normal(n).astype(np.float32)
    y = k.rng.standard_normal(n).astype(np.float32)
    out = k.output(np.float32, n, initial=y)
    a = np.float32(2.5)
    k.launch("saxpy", [n, a, k.input(x), out], grid_for(n, block), block)
    want = np.float64(a) * x + y
    # HIP contracts a*x + y into one fma (one rounding) or not (two roundings, -O0): within one
    # ulp of |a*x| plus one of the result of the exact value.
    close(k.read(out), want, ulps32(np.float32(a) * x) + ulps32(want), 0, "a*x + y")


@case("basics")
def grid_stride_square(k: KernelRun) -> None:
    n, block = 3001, 64
    x = k.rng.uniform(-4, 4, n).astype(np.float32)
    out = k.output(np.float32, n)
    k.launch("grid_stride_square", [k.input(x), out, n], 4 * block, block)   # 4 blocks cover n
    want = x.astype(np.float64) ** 2 - 1
    close(k.read(out), want, ulps32(x * x) + ulps32(want), 0, "x*x - 1 (fma or not)")


@case("basics")
def matrix_add_2d(k: KernelRun) -> None:
    rows, cols, pitch = 37, 50, 64
    a = k.rng.standard_normal((rows, pitch)).astype(np.float32)
    b = k.rng.standard_normal((rows, pitch)).astype(np.float32)
    out = k.output(np.float32, rows * pitch)
    k.launch("matrix_add_2d", [k.input(a), k.input(b), out, rows, cols, pitch],
             (grid_for(cols, 16), grid_for(rows, 8)), (16, 8))
    got = k.read(out).reshape(rows, pitch)
    # 2*b is exact, so a + 2b has one rounding whether or not it is fused.
    same(got[:, :cols], a[:, :cols] + np.float32(2) * b[:, :cols], "a + 2b")
    assert np.isnan(got[:, cols:]).all(), "columns past cols (padding of the pitch) were written"


# struct Motion { float dt; int steps; double damping; float gravity[3]; unsigned char flags; }
MOTION = np.dtype({"names": ["dt", "steps", "damping", "gravity", "flags"],
                   "formats": [np.float32, np.int32, np.float64, (np.float32, 3), np.uint8],
                   "offsets": [0, 4, 8, 16, 28], "itemsize": 32})


@case("basics")
def integrate_particles(k: KernelRun) -> None:
    n, block = 203, 64
    pos = k.rng.uniform(0, 2, (n, 3)).astype(np.float32)
    vel = k.rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    motion = np.zeros((), MOTION)
    motion["dt"], motion["steps"], motion["damping"] = 0.05, 17, 0.99
    motion["gravity"], motion["flags"] = (0.0, -9.81, 0.5), 1
    out = k.output(np.float32, 3 * n)
    k.launch("integrate_particles", [motion.tobytes(), k.input(pos), k.input(vel), out, n],
             grid_for(n, block), block)
    # The same float32 operations in numpy; a fused multiply-add at -O3 changes the last bits,
    # and 17 steps with bounces amplify that a little: 1e-5 relative, 1e-5 absolute at 0.
    x, v = pos.copy(), vel.copy()
    dt, damp, g = np.float32(0.05), np.float32(0.99), np.array([0.0, -9.81, 0.5], np.float32)
    for _ in range(17):
        v = v * damp + g * dt
        x = x + v * dt
        below = x[:, 1] < 0
        x[below, 1] = -x[below, 1]
        v[below, 1] = -v[below, 1]
    close(k.read(out), x.reshape(-1), 1e-5, 1e-5, "positions after 17 steps")


@case("basics")
def reverse_blocks(k: KernelRun) -> None:
    n, block = 1000, 128
    x = np.arange(n, dtype=np.int32) * 3 - 7
    out = k.output(np.int32, n)
    k.launch("reverse_blocks", [k.input(x), out, n], grid_for(n, block), block,
             dynamic_lds=4 * block)
    want = np.concatenate([x[s:s + block][::-1] for s in range(0, n, block)])
    same(k.read(out), want, "each block's slice reversed")


@case("basics")
def divide_by_runtime(k: KernelRun) -> None:
    n, block = 777, 256
    num = k.rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    den = k.rng.integers(-70000, 70000, n).astype(np.int32)
    den[den == 0] = 3
    num[:8] = [2**31 - 1, -2**31, 7, -7, 100, -100, 0, 1]
    den[:8] = [7, 3, -2, 2, 1, -1, 5, 2**31 - 1]
    outs = [k.output(np.int32, n), k.output(np.int32, n), k.output(np.uint32, n),
            k.output(np.uint32, n)]
    k.launch("divide_by_runtime", [k.input(num), k.input(den), *outs, n], grid_for(n, block), block)
    a, b = num.astype(np.int64), den.astype(np.int64)
    q = np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))          # C truncates toward zero
    same(k.read(outs[0]), q.astype(np.int32), "signed quotient")
    same(k.read(outs[1]), (a - q * b).astype(np.int32), "signed remainder")
    ua, ub = num.view(np.uint32), den.view(np.uint32)
    same(k.read(outs[2]), ua // ub, "unsigned quotient")
    same(k.read(outs[3]), ua % ub, "unsigned remainder")


@case("basics")
def opcode_switch(k: KernelRun) -> None:
    n, block = 500, 64
    ops = k.rng.integers(-1, 11, n).astype(np.int32)
    a = k.rng.standard_normal(n).astype(np.float32)
    b = k.rng.standard_normal(n).astype(np.float32)
    out = k.output(np.float32, n)
    k.launch("opcode_switch", [k.input(ops), k.input(a), k.input(b), out, n], grid_for(n, block),
             block)
    table = [a + b, a - b, a * b, np.fmax(a, b), np.fmin(a, b), None, -a, np.abs(a - b), a * a]
    want = np.full(n, 42.0, np.float32)
    for op, value in enumerate(table):
        if value is not None:
            want[ops == op] = value[ops == op]
    got = k.read(out)
    fused = ops == 5                      # x*0.5 + y: exact product, one rounding either way
    same(got[~fused], want[~fused], "switch arms")
    same(got[fused], (a * np.float32(0.5) + b)[fused], "case 5")


@case("basics")
def private_lookup(k: KernelRun) -> None:
    n, block = 300, 64
    index = k.rng.integers(0, 1000, n).astype(np.int32)
    seed = k.rng.uniform(-2, 2, n).astype(np.float32)
    out = k.output(np.float32, n)
    k.launch("private_lookup", [k.input(index), k.input(seed), out, n], grid_for(n, block), block)
    want = np.empty(n, np.float32)
    for i in range(n):
        # s*k + (k&3): one rounding when fused, two otherwise; compute both and pick below.
        table = [np.float32(seed[i]) * np.float32(j) + np.float32(j & 3) for j in range(24)]
        for j in range(0, 24, 3):
            m = (index[i] + j) % 24
            table[m], table[j] = table[j], table[m]
        want[i] = table[index[i] % 24] + table[(index[i] * 7) % 24]
    # Each table entry may be fused (1 rounding) or not: within 2 ulps of each entry and one of
    # the sum.
    close(k.read(out), want, 3 * ulps32(np.abs(seed) * 24 + 3), 0, "table lookups")


@case("basics")
def axpby_f32(k: KernelRun) -> None:
    n, block = 999, 128
    x, y = k.rng.standard_normal((2, n)).astype(np.float32)
    out = k.output(np.float32, n)
    k.launch("axpby_f32", [k.input(x), k.input(y), out, np.float32(1.5), np.float32(-0.75), n],
             grid_for(n, block), block)
    want = 1.5 * x.astype(np.float64) - 0.75 * y
    # Products exact in float64; float32: up to three roundings (two products, the sum).
    tolerance = ulps32(1.5 * x) + ulps32(0.75 * y) + ulps32(want)
    close(k.read(out), want, tolerance, 0, "alpha x + beta y")


@case("basics")
def axpby_f64(k: KernelRun) -> None:
    n, block = 999, 128
    # Doubles with float32 mantissas: 1.5x and 0.75y are then exact in float64, so fused or not
    # the result is the correctly rounded sum of two exact products: exact.
    x, y = k.rng.standard_normal((2, n)).astype(np.float32).astype(np.float64)
    out = k.output(np.float64, n)
    k.launch("axpby_f64", [k.input(x), k.input(y), out, np.float64(1.5), np.float64(-0.75), n],
             grid_for(n, block), block)
    same(k.read(out), 1.5 * x - 0.75 * y, "alpha x + beta y in double")


@case("basics")
def axpby_i32(k: KernelRun) -> None:
    n, block = 999, 128
    x, y = k.rng.integers(-2**31, 2**31, (2, n), dtype=np.int64).astype(np.int32)
    out = k.output(np.int32, n)
    k.launch("axpby_i32", [k.input(x), k.input(y), out, np.int32(-3), np.int32(7), n],
             grid_for(n, block), block)
    want = (np.int64(-3) * x + np.int64(7) * y) & 0xFFFFFFFF          # wraps modulo 2**32
    same(k.read(out), want.astype(np.uint32).view(np.int32), "wrapping int axpby")


# ================================================================================================
# reduce.hip


def _block_sums(x: np.ndarray, block: int) -> np.ndarray:
    blocks = -(-len(x) // block)
    padded = np.zeros(blocks * block, np.float64)
    padded[: len(x)] = x
    return padded.reshape(blocks, block).sum(axis=1)


def _sum_tolerance(x: np.ndarray, block: int) -> np.ndarray:
    # A sum of m float32 terms in any order is within (m - 1) * eps/2 * sum|x| of the exact sum
    # (Higham, "Accuracy and Stability", 4.2); m = block.
    return (block - 1) * F32_EPS / 2 * _block_sums(np.abs(x), block)


@case("reduce")
def block_sum_shfl(k: KernelRun) -> None:
    n, block = 2500, 256
    x = k.rng.standard_normal(n).astype(np.float32)
    blocks = -(-n // block)
    out = k.output(np.float32, blocks)
    k.launch("block_sum_shfl", [k.input(x), out, n], grid_for(n, block), block)
    close(k.read(out), _block_sums(x, block), _sum_tolerance(x, block), 0, "block sums")


@case("reduce")
def wave_allreduce_xor(k: KernelRun) -> None:
    n, block = 1000, 256
    x = k.rng.integers(-10**6, 10**6, n).astype(np.int32)
    out_max, out_sum = k.output(np.int32, n), k.output(np.int32, n)
    k.launch("wave_allreduce_xor", [k.input(x), out_max, out_sum, n], grid_for(n, block), block)
    # The wave of element i is i // wave (blocks are whole waves); the last wave is partial.
    waves = np.arange(n) // k.wave
    same(k.read(out_max), np.maximum.reduceat(x, np.arange(0, n, k.wave))[waves], "wave max")
    same(k.read(out_sum), np.add.reduceat(x.astype(np.int64), np.arange(0, n, k.wave))[waves]
         .astype(np.int32), "wave sum")


@case("reduce")
def row16_sum_dpp(k: KernelRun) -> None:
    n, block = 1000, 128
    x = k.rng.integers(-1000, 1000, n).astype(np.int32)
    blocks = -(-n // block)
    out = k.output(np.int32, blocks * block // 16)
    k.launch("row16_sum_dpp", [k.input(x), out, n], grid_for(n, block), block)
    padded = np.zeros(blocks * block, np.int32)
    padded[:n] = x
    same(k.read(out), padded.reshape(-1, 16).sum(axis=1).astype(np.int32), "sums of 16-lane rows")


@case("reduce")
def block_sum_tree(k: KernelRun) -> None:
    n, block = 3000, 256
    x = k.rng.standard_normal(n).astype(np.float32)
    blocks = -(-n // (2 * block))
    out = k.output(np.float32, blocks)
    k.launch("block_sum_tree", [k.input(x), out, n], blocks * block, block, dynamic_lds=4 * block)
    close(k.read(out), _block_sums(x, 2 * block), _sum_tolerance(x, 2 * block), 0, "tree sums")


@case("reduce")
def dot_atomic(k: KernelRun) -> None:
    n, block, blocks = 5000, 128, 6
    a, b = k.rng.standard_normal((2, n)).astype(np.float32)
    out = k.output(np.float32, 1, initial=0.0)
    k.launch("dot_atomic", [k.input(a), k.input(b), out, n], blocks * block, block)
    products = a.astype(np.float64) * b
    # n products (one rounding each, or fused) summed in some order: (n + 1) * eps/2 * sum|ab|.
    close(k.read(out), [products.sum()], (n + 1) * F32_EPS / 2 * np.abs(products).sum(), 0, "dot")


@case("reduce")
def block_sum_f64(k: KernelRun) -> None:
    n, block = 1500, 256
    x = k.rng.standard_normal(n)
    blocks = -(-n // block)
    out = k.output(np.float64, blocks)
    k.launch("block_sum_f64", [k.input(x), out, n], grid_for(n, block), block)
    tolerance = (block - 1) * F64_EPS / 2 * _block_sums(np.abs(x), block)
    close(k.read(out), _block_sums(x, block), tolerance, 0, "double block sums")


@case("reduce")
def wave_vote(k: KernelRun) -> None:
    n, block = 1000, 256
    x = k.rng.integers(-3, 50, n).astype(np.int32) * 2       # even; a few negatives, zeros
    x[300:340] = np.abs(x[300:340]) + 1                        # a stretch of odd positives
    x[600:700] = np.abs(x[600:700])                            # no negatives here
    waves = -(-grid_for(n, block) // k.wave)
    ballots, flags = k.output(np.uint64, waves), k.output(np.int32, waves)
    rank = k.output(np.int32, n)
    k.launch("wave_vote", [k.input(x), ballots, flags, rank, n], grid_for(n, block), block)
    padded = np.zeros(waves * k.wave, np.int64)
    padded[:n] = x
    lanes = padded.reshape(waves, k.wave)
    weights = np.uint64(1) << np.arange(k.wave, dtype=np.uint64)
    want_ballot = ((lanes > 0).astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)
    same(k.read(ballots), want_ballot, "ballot")
    any_neg = (lanes < 0).any(axis=1)
    all_even = (lanes % 2 == 0).all(axis=1)
    count = (lanes > 0).sum(axis=1)
    same(k.read(flags), (any_neg | (all_even << 1) | (count << 2)).astype(np.int32), "any/all/popc")
    below = np.cumsum(lanes > 0, axis=1) - (lanes > 0)
    want_rank = np.where(lanes > 0, below, -1).reshape(-1)[:n]
    same(k.read(rank), want_rank.astype(np.int32), "rank among positive lanes")


@case("reduce")
def wave_sum_permlane(k: KernelRun) -> None:
    n, block = 1000, 256
    x = k.rng.integers(-10**5, 10**5, n).astype(np.int32)
    out = k.output(np.int32, n)
    k.launch("wave_sum_permlane", [k.input(x), out, n], grid_for(n, block), block)
    sums = np.add.reduceat(x.astype(np.int64), np.arange(0, n, k.wave))
    same(k.read(out), sums[np.arange(n) // k.wave].astype(np.int32), "wave sums in every lane")


# ================================================================================================
# histogram.hip


@case("histogram")
def histogram_global(k: KernelRun) -> None:
    n, block, bins = 3000, 256, 37
    keys = k.rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    out = k.output(np.uint32, bins, initial=0)
    k.launch("histogram_global", [k.input(keys), out, bins, n], grid_for(n, block), block)
    same(k.read(out), np.bincount(keys % bins, minlength=bins).astype(np.uint32), "bins")


@case("histogram")
def histogram_shared(k: KernelRun) -> None:
    n, block = 5000, 128
    data = (k.rng.standard_normal(n) * 30 + 128).clip(0, 255).astype(np.uint8)
    out = k.output(np.uint32, 256, initial=0)
    k.launch("histogram_shared", [k.input(data), out, n], 3 * block, block)
    same(k.read(out), np.bincount(data, minlength=256).astype(np.uint32), "bins")


@case("histogram")
def atomic_min_max(k: KernelRun) -> None:
    n, block = 997, 64                  # n % 10 != 0: the wrap-around counter ends at 7
    v = k.rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    outs = [k.output(np.int32, 1, initial=2**31 - 1), k.output(np.int32, 1, initial=-2**31),
            k.output(np.uint32, 1, initial=2**32 - 1), k.output(np.uint32, 1, initial=0),
            k.output(np.uint32, 1, initial=0)]
    k.launch("atomic_min_max", [k.input(v), *outs, n], grid_for(n, block), block)
    same(k.read(outs[0]), [v.min()], "signed min")
    same(k.read(outs[1]), [v.max()], "signed max")
    same(k.read(outs[2]), [v.view(np.uint32).min()], "unsigned min")
    same(k.read(outs[3]), [v.view(np.uint32).max()], "unsigned max")
    # atomicInc with limit 9 counts 0..9 and wraps: n increments from 0 leave n % 10.
    same(k.read(outs[4]), [n % 10], "wrapping counter")


@case("histogram")
def cas_float_max(k: KernelRun) -> None:
    n, block = 900, 128
    v = k.rng.standard_normal(n).astype(np.float32)
    out = k.output(np.float32, 1, initial=-np.inf)
    k.launch("cas_float_max", [k.input(v), out, n], grid_for(n, block), block)
    same(k.read(out), [v.max()], "max by CAS loop")


@case("histogram")
def atomics_u64(k: KernelRun) -> None:
    n, block = 160, 64
    v = k.rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    initial = [0, 2**64 - 1, 0, 0, 0, 0x123456789]
    outs = [k.output(np.uint64, 1, initial=np.uint64(x)) for x in initial]
    k.launch("atomics_u64", [k.input(v), *outs, n], grid_for(n, block), block)
    ints = [int(x) for x in v]
    mask = 2**64 - 1
    xor = 0
    for x in ints:
        xor ^= x
    ors = 0
    for x in ints:
        ors |= x & 0x8421084210842108
    mixed = (0x123456789 + sum(((x << 13) | (x >> 51)) & mask for x in ints)) & mask
    for out, want, what in zip(outs, [sum(ints) & mask, min(ints), max(ints), ors, xor, mixed],
                               ["add", "min", "max", "or", "xor", "CAS loop"]):
        same(k.read(out), np.array([want], np.uint64), f"64-bit atomic {what}")


@case("histogram")
def atomic_bitwise(k: KernelRun) -> None:
    n, block = 650, 64
    v = k.rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    outs = [k.output(np.uint32, 1, initial=0xFFFFFFFF), k.output(np.uint32, 1, initial=0),
            k.output(np.uint32, 1, initial=0x5A5A5A5A), k.output(np.uint32, 1, initial=0)]
    k.launch("atomic_bitwise", [k.input(v), *outs, n], grid_for(n, block), block)
    same(k.read(outs[0]), [np.bitwise_and.reduce(v | np.uint32(0x0F0F0F0F))], "and")
    same(k.read(outs[1]), [np.bitwise_or.reduce(v & np.uint32(0x11111111))], "or")
    same(k.read(outs[2]), [np.bitwise_xor.reduce(v) ^ np.uint32(0x5A5A5A5A)], "xor")
    assert k.read(outs[3])[0] in set(v.tolist()), "exchange left a value no work-item stored"


@case("histogram")
def atomic_add_floats(k: KernelRun) -> None:
    # Small: at -O0 on gfx12 the shared-memory float add is a compare-and-swap loop in which
    # every lane of a block contends for one address.
    n, block = 300, 64
    v = k.rng.integers(-50, 50, n).astype(np.float32)
    fsum, dsum = k.output(np.float32, 1, initial=0.0), k.output(np.float64, 1, initial=0.0)
    k.launch("atomic_add_floats", [k.input(v), fsum, dsum, n], grid_for(n, block), block)
    # Integers (and quarters of them) far below 2**24: every partial sum is exact in any order.
    same(k.read(fsum), [np.float32(v.sum())], "float atomic sum")
    same(k.read(dsum), [v.astype(np.float64).sum() * 0.25], "double atomic sum")


# ================================================================================================
# scan.hip


def _chunks(x: np.ndarray, size: int) -> list[np.ndarray]:
    return [x[s:s + size] for s in range(0, len(x), size)]


@case("scan")
def scan_hillis_steele(k: KernelRun) -> None:
    n, block = 1000, 256
    x = k.rng.integers(-1000, 1000, n).astype(np.int32)
    out = k.output(np.int32, n)
    k.launch("scan_hillis_steele", [k.input(x), out, n], grid_for(n, block), block,
             dynamic_lds=2 * 4 * block)
    want = np.concatenate([np.cumsum(c) for c in _chunks(x, block)]).astype(np.int32)
    same(k.read(out), want, "inclusive scan per block")


@case("scan")
def scan_waves_shfl_up(k: KernelRun) -> None:
    n, block = 900, 256
    # Small integers: every partial sum is exact in float32, in any association.
    x = k.rng.integers(-50, 50, n).astype(np.float32)
    out = k.output(np.float32, n)
    k.launch("scan_waves_shfl_up", [k.input(x), out, n], grid_for(n, block), block)
    want = np.concatenate([np.cumsum(c) for c in _chunks(x, block)]).astype(np.float32)
    same(k.read(out), want, "inclusive scan per block")


@case("scan")
def scan_blelloch(k: KernelRun) -> None:
    n, block = 1100, 128
    x = k.rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    blocks = -(-n // (2 * block))
    out, totals = k.output(np.uint32, n), k.output(np.uint32, blocks)
    k.launch("scan_blelloch", [k.input(x), out, totals, n], blocks * block, block,
             dynamic_lds=2 * 4 * block)
    chunks = _chunks(x.astype(np.uint64), 2 * block)
    want = np.concatenate([np.cumsum(c) - c for c in chunks]) & 0xFFFFFFFF
    same(k.read(out), want.astype(np.uint32), "exclusive scan (wraps modulo 2**32)")
    same(k.read(totals), (np.array([c.sum() for c in chunks]) & 0xFFFFFFFF).astype(np.uint32),
         "block totals")


@case("scan")
def compact_ballot(k: KernelRun) -> None:
    n, block, threshold = 1000, 256, 20
    x = k.rng.integers(-100, 100, n).astype(np.int32)
    blocks = -(-n // block)
    out, counts = k.output(np.int32, blocks * block), k.output(np.int32, blocks)
    k.launch("compact_ballot", [k.input(x), out, counts, threshold, n], blocks * block, block)
    got, got_counts = k.read(out), k.read(counts)
    kept = [c[c > threshold] for c in _chunks(x, block)]
    same(got_counts, np.array([len(c) for c in kept], np.int32), "kept per block")
    fill = np.full(1, FILL_BYTE * 0x01010101, np.uint32).view(np.int32)[0]
    for b, c in enumerate(kept):
        row = got[b * block:(b + 1) * block]
        same(row[:len(c)], c, f"block {b} kept elements in order")
        assert (row[len(c):] == fill).all(), f"block {b} wrote past its kept elements"


# ================================================================================================
# sort.hip


@case("sort")
def bitonic_sort(k: KernelRun) -> None:
    n, block = 1000, 128
    x = k.rng.standard_normal(n).astype(np.float32)
    x[::17] = x[3]                                        # duplicates
    out = k.output(np.float32, n)
    k.launch("bitonic_sort", [k.input(x), out, n], grid_for(n, 2 * block) // 2, block,
             dynamic_lds=2 * 4 * block)
    same(k.read(out), np.concatenate([np.sort(c) for c in _chunks(x, 2 * block)]),
         "each 256-key chunk sorted")


@case("sort")
def odd_even_sort(k: KernelRun) -> None:
    n, block = 300, 64
    x = k.rng.integers(-50, 50, n).astype(np.int32)
    out = k.output(np.int32, n)
    k.launch("odd_even_sort", [k.input(x), out, n], grid_for(n, block), block,
             dynamic_lds=4 * block)
    same(k.read(out), np.concatenate([np.sort(c) for c in _chunks(x, block)]),
         "each block sorted")


@case("sort")
def radix_sort_block(k: KernelRun) -> None:
    n, block, bits = 600, 256, 8
    x = k.rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    out = k.output(np.uint32, n)
    k.launch("radix_sort_block", [k.input(x), out, bits, n], grid_for(n, block), block)
    # LSD by one bit per pass is stable: the keys end sorted by their low 8 bits, ties in
    # input order.
    want = np.concatenate([c[np.argsort(c & np.uint32(0xFF), kind="stable")]
                           for c in _chunks(x, block)])
    same(k.read(out), want, "stable sort by the low 8 bits")


@case("sort")
def rank_sort(k: KernelRun) -> None:
    n, block = 150, 64
    x = np.round(k.rng.standard_normal(n), 1)              # many ties
    out = k.output(np.float64, n)
    k.launch("rank_sort", [k.input(x), out, n], grid_for(n, block), block)
    same(k.read(out), np.sort(x), "sorted by rank")


# ================================================================================================
# stencil.hip

STENCIL_WEIGHTS = np.array([0.05, 0.1, 0.2, 0.3, 0.2, 0.1, 0.05], np.float32)


@case("stencil")
def stencil_1d(k: KernelRun) -> None:
    n, block = 1000, 256
    x = k.rng.standard_normal(n).astype(np.float32)
    out = k.output(np.float32, n)
    k.launch("stencil_1d", [k.input(x), out, n], grid_for(n, block), block)
    padded = np.concatenate([np.zeros(3), x.astype(np.float64), np.zeros(3)])
    terms = np.stack([STENCIL_WEIGHTS[j] * padded[j:j + n] for j in range(7)])
    # Seven products (fused or not) summed: within 8 * eps/2 of the sum of |terms|.
    close(k.read(out), terms.sum(axis=0), 8 * F32_EPS / 2 * np.abs(terms).sum(axis=0), 0,
          "7-point stencil")


@case("stencil")
def jacobi_2d(k: KernelRun) -> None:
    rows, cols = 37, 45
    u = k.rng.standard_normal((rows, cols))
    out = k.output(np.float64, rows * cols)
    k.launch("jacobi_2d", [k.input(u), out, rows, cols], (grid_for(cols, 16), grid_for(rows, 8)),
             (16, 8))
    want = u.copy()
    # The kernel's own association: ((left + right) + up) + down, then times 0.25 (exact).
    want[1:-1, 1:-1] = 0.25 * (((u[1:-1, :-2] + u[1:-1, 2:]) + u[:-2, 1:-1]) + u[2:, 1:-1])
    same(k.read(out).reshape(rows, cols), want, "one Jacobi sweep")


# struct Kernel3x3 { int w[9]; int shift; }
KERNEL3X3 = np.dtype([("w", np.int32, 9), ("shift", np.int32)])


@case("stencil")
def convolve_3x3(k: KernelRun) -> None:
    width, height = 50, 37
    image = k.rng.integers(0, 256, (height, width)).astype(np.uint8)
    weights = np.zeros((), KERNEL3X3)
    weights["w"] = [-1, -2, -1, 0, 16, 0, 1, 2, 1]
    weights["shift"] = 3
    out = k.output(np.uint8, width * height)
    k.launch("convolve_3x3", [k.input(image), out, weights.tobytes(), width, height],
             (grid_for(width, 16), grid_for(height, 16)), (16, 16))
    padded = np.pad(image.astype(np.int64), 1, mode="edge")
    acc = np.zeros((height, width), np.int64)
    w = weights["w"].reshape(3, 3)
    for dy in range(3):
        for dx in range(3):
            acc += w[dy, dx] * padded[dy:dy + height, dx:dx + width]
    want = np.clip(acc >> 3, 0, 255).astype(np.uint8)        # arithmetic shift, as C's >> on int
    same(k.read(out).reshape(height, width), want, "3x3 convolution, clamped")


@case("stencil")
def transpose_padded(k: KernelRun) -> None:
    rows, cols = 70, 45
    a = k.rng.standard_normal((rows, cols)).astype(np.float32)
    out = k.output(np.float32, rows * cols)
    k.launch("transpose_padded", [k.input(a), out, rows, cols],
             (grid_for(cols, 32), grid_for(rows, 32) // 4), (32, 8))
    same(k.read(out).reshape(cols, rows), a.T, "transpose")


def _gemm_tolerance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # k products (fused or not) summed in some order: (k + 1) * eps/2 * (|A| |B|).
    kk = a.shape[1]
    return (kk + 1) * F32_EPS / 2 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))


@case("stencil")
def gemm_naive(k: KernelRun) -> None:
    m, n, kk = 33, 29, 40
    a = k.rng.standard_normal((m, kk)).astype(np.float32)
    b = k.rng.standard_normal((kk, n)).astype(np.float32)
    out = k.output(np.float32, m * n)
    k.launch("gemm_naive", [k.input(a), k.input(b), out, m, n, kk],
             (grid_for(n, 16), grid_for(m, 16)), (16, 16))
    close(k.read(out).reshape(m, n), a.astype(np.float64) @ b, _gemm_tolerance(a, b), 0, "A B")


@case("stencil")
def gemm_tiled(k: KernelRun) -> None:
    m, n, kk = 37, 41, 35
    alpha, beta = np.float32(0.5), np.float32(-2.0)
    a = k.rng.standard_normal((m, kk)).astype(np.float32)
    b = k.rng.standard_normal((kk, n)).astype(np.float32)
    c = k.rng.standard_normal((m, n)).astype(np.float32)
    out = k.output(np.float32, m * n, initial=c.reshape(-1))
    k.launch("gemm_tiled", [k.input(a), k.input(b), out, m, n, kk, alpha, beta],
             (grid_for(n, 16), grid_for(m, 16)), (16, 16))
    want = 0.5 * (a.astype(np.float64) @ b) - 2.0 * c
    tolerance = 0.5 * _gemm_tolerance(a, b) + 2 * ulps32(want) + 2 * ulps32(2 * c)
    close(k.read(out).reshape(m, n), want, tolerance, 0, "alpha A B + beta C")


# ================================================================================================
# buffer.hip


@case("buffer")
def buffer_copy_bounds(k: KernelRun) -> None:
    n_in, n_out, grid = 700, 900, 1024
    x = k.rng.standard_normal(grid).astype(np.float32)
    x[n_in:] = 99.0          # past num_records: a load that ignored the bounds would see 99
    out = k.output(np.float32, grid)
    k.launch("buffer_copy_bounds", [k.input(x), out, n_in, n_out], grid, 256)
    got = k.read(out)
    same(got[:n_in], x[:n_in] + np.float32(1), "in-range copy")
    same(got[n_in:n_out], np.ones(n_out - n_in, np.float32), "loads past num_records read 0")
    assert np.isnan(got[n_out:]).all(), "stores past num_records were not dropped"


@case("buffer")
def gemm_buffer_tile(k: KernelRun) -> None:
    m, n, kk = 45, 37, 24
    a = k.rng.standard_normal((m, kk)).astype(np.float32)
    b = k.rng.standard_normal((kk, n)).astype(np.float32)
    # Memory past each matrix holds huge values: an out-of-range read that is not 0 shows up.
    a_mem = np.concatenate([a.reshape(-1), np.full(256, 1e30, np.float32)])
    b_mem = np.concatenate([b.reshape(-1), np.full(256, 1e30, np.float32)])
    out = k.output(np.float32, m * n)
    k.launch("gemm_buffer_tile", [k.input(a_mem), k.input(b_mem), out, m, n, kk],
             (grid_for(n, 32) // 32 * 256, grid_for(m, 32) // 32), (256, 1))
    # Padded rows/columns store to offset m*n*4, past num_records: dropped (the guard checks).
    close(k.read(out).reshape(m, n), a.astype(np.float64) @ b, _gemm_tolerance(a, b), 0,
          "buffer-tiled A B")


@case("buffer")
def buffer_atomics(k: KernelRun) -> None:
    n, block, nbins = 900, 128, 20
    keys = k.rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    bins, biggest = k.output(np.uint32, nbins, initial=0), k.output(np.uint32, 1, initial=0)
    k.launch("buffer_atomics", [k.input(keys), bins, biggest, nbins, n], grid_for(n, block), block)
    # Keys whose bin is 20..22 address past num_records: the atomic is dropped.
    same(k.read(bins), np.bincount(keys % (nbins + 3), minlength=nbins + 3)[:nbins]
         .astype(np.uint32), "buffer atomic histogram")
    same(k.read(biggest), [keys.max()], "buffer atomic umax")


@case("buffer")
def polynomial_sbuffer(k: KernelRun) -> None:
    n, block, degree = 500, 64, 5
    x = k.rng.uniform(-1.5, 1.5, n).astype(np.float32)
    table = np.zeros(64, np.float32)
    table[:1].view(np.int32)[0] = degree
    coefficients = np.array([0.5, -1.25, 2.0, 0.75, -0.5, 0.125], np.float32)
    table[1:degree + 2] = coefficients
    out = k.output(np.float32, n)
    k.launch("polynomial_sbuffer", [k.input(x), k.input(table), out, n], grid_for(n, block), block)
    x64 = x.astype(np.float64)
    want = sum(float(c) * x64**d for d, c in enumerate(coefficients))
    magnitude = sum(abs(float(c)) * np.abs(x64)**d for d, c in enumerate(coefficients))
    # Horner's rule, fused or not: within 2 * degree * eps of the sum of |c_d x^d|
    # (Higham, 5.1).
    close(k.read(out), want, 2 * degree * F32_EPS * magnitude, 0, "polynomial")


@case("buffer")
def buffer_to_lds(k: KernelRun) -> None:
    n, block = 1000, 64
    x = k.rng.standard_normal(1024).astype(np.float32)
    x[n:] = 99.0
    out = k.output(np.float32, n)
    k.launch("buffer_to_lds", [k.input(x), out, n], grid_for(n, block), block)
    source = np.arange(n) // 64 * 64 + 63 - np.arange(n) % 64
    want = np.where(source < n, x[np.minimum(source, 1023)] * np.float32(2), np.float32(0))
    same(k.read(out), want.astype(np.float32), "slices reversed through LDS")


# ================================================================================================
# numeric.hip


@case("numeric")
def half_math(k: KernelRun) -> None:
    n, block = 500, 128
    a = k.rng.uniform(-4, 4, n).astype(np.float16)
    b = k.rng.uniform(-4, 4, n).astype(np.float16)
    out_h, out_f = k.output(np.float16, n), k.output(np.float32, n)
    k.launch("half_math", [k.input(a), k.input(b), out_h, out_f, n], grid_for(n, block), block)
    product = a.astype(np.float64) * b                         # exact
    fused = (product + 0.5).astype(np.float16)                 # one rounding (fma)
    split = (product.astype(np.float16).astype(np.float64) + 0.5).astype(np.float16)
    got_h = k.read(out_h)
    for name, r in (("fused", fused), ("split", split)):
        np.maximum(r, np.float16(-2), out=r)
    ok = (got_h == np.maximum(fused, np.float16(-2))) | (got_h == np.maximum(split, np.float16(-2)))
    assert ok.all(), f"half x*y+0.5: {np.count_nonzero(~ok)} elements are neither rounding"
    # x*y is exact in float32 (11-bit significands), so the float result has one rounding.
    same(k.read(out_f), (a.astype(np.float32) * b.astype(np.float32)) + got_h.astype(np.float32),
         "float accumulation")


@case("numeric")
def half2_axpy(k: KernelRun) -> None:
    n2, block = 300, 64
    x = k.rng.uniform(-4, 4, 2 * n2).astype(np.float16)
    y = k.rng.uniform(-4, 4, 2 * n2).astype(np.float16)
    out = k.output(np.uint32, n2)
    alpha = np.float32(1.375)                                   # exact in half
    k.launch("half2_axpy", [k.input(x), k.input(y), out, alpha, n2], grid_for(n2, block), block)
    # fma in half: alpha*x + y is exact in float64 for these magnitudes, rounded once to half.
    r = (float(alpha) * x.astype(np.float64) + y).astype(np.float16)
    r[1::2] = -r[1::2]
    same(k.read(out).view(np.float16), r, "packed half fma, then (1, -1) scaling")


def _bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, round to nearest even (no NaN inputs)."""
    u = x.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


@case("numeric")
def bf16_convert(k: KernelRun) -> None:
    n, block = 400, 128
    x = (k.rng.standard_normal(n) * 10.0 ** k.rng.integers(-30, 30, n)).astype(np.float32)
    x[:8] = [0.0, -0.0, np.inf, -np.inf, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 3.0e38, 1e-40]  # ties, sub
    bits, back, dots = k.output(np.uint16, n), k.output(np.float32, n), k.output(np.float32, n)
    k.launch("bf16_convert", [k.input(x), bits, back, dots, n], grid_for(n, block), block)
    want_bits = _bf16_bits(x)
    same(k.read(bits), want_bits, "bf16 bits (round to nearest even)")
    values = (want_bits.astype(np.uint32) << 16).view(np.float32)
    same(k.read(back), values, "bf16 -> float")
    # 8-bit significands: the product is exact in float32 (up to overflow/underflow, same here).
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        same(k.read(dots), values * np.roll(values, -1), "bf16 products")


def _int64_reference(x: int, y: int) -> list[int]:
    mask = 2**64 - 1
    y |= 1
    sx = x - 2**64 if x >= 2**63 else x
    sy = (y >> 1) - 2**40
    if sy == 0:
        sy = 7
    s = y & 63

    def trunc_div(a: int, b: int) -> int:
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q

    q = trunc_div(sx, sy)
    shifted = x >> s
    clz = 64 - shifted.bit_length()
    ffs = ((y << s) & mask & -((y << s) & mask)).bit_length()
    brev = int(format(x, "064b")[::-1], 2)
    return [
        x // y, x % y, q & mask, (sx - q * sy) & mask, (x * y) >> 64, ((sx * sy) >> 64) & mask,
        ((x << s) & mask) ^ (x >> (63 - s)), (sx >> s) & mask,
        bin(x).count("1") | (clz << 8) | (ffs << 16), brev,
        (x * y + (x >> 3) * ((y << 5) & mask)) & mask,
        (((x >> 32) // ((y & 0xFFFFFFFF) | 1)) << 32)
        | ((x & 0xFFFFFFFF) % (((y >> 7) & 0xFFFFFFFF) | 1)),
    ]


@case("numeric")
def int64_ops(k: KernelRun) -> None:
    n, block = 200, 64
    a = k.rng.integers(0, 2**64, n, dtype=np.uint64)
    b = k.rng.integers(2**44, 2**64, n, dtype=np.uint64)   # keeps sx / sy away from overflow
    a[:4] = [0, 1, 2**63, 2**64 - 1]
    out = k.output(np.uint64, 12 * n)
    k.launch("int64_ops", [k.input(a), k.input(b), out, n], grid_for(n, block), block)
    want = np.array([_int64_reference(int(x), int(y)) for x, y in zip(a, b)], np.uint64)
    got = k.read(out).reshape(n, 12)
    names = ["u/", "u%", "s/", "s%", "umulhi", "smulhi", "shift-xor", "sra", "bit counts",
             "brev", "mul-add", "32-bit div/mod"]
    for column, name in enumerate(names):
        same(got[:, column], want[:, column], f"64-bit {name}")


@case("numeric")
def double_ops(k: KernelRun) -> None:
    from fractions import Fraction

    n, block = 200, 64
    a = k.rng.standard_normal(n) * 10.0 ** k.rng.integers(-100, 100, n)
    b = k.rng.standard_normal(n) * 10.0 ** k.rng.integers(-100, 100, n)
    out = k.output(np.float64, 5 * n)
    k.launch("double_ops", [k.input(a), k.input(b), out, n], grid_for(n, block), block)
    got = k.read(out).reshape(n, 5)
    # IEEE division and square root are correctly rounded (HIP's default), numpy's too: exact.
    same(got[:, 0], a / b, "x / y")
    same(got[:, 1], np.sqrt(np.abs(a)), "sqrt |x|")
    fma = np.array([float(Fraction(x) * Fraction(y) - 1) for x, y in zip(a, b)])
    same(got[:, 2], fma, "fma(x, y, -1), one rounding")
    same(got[:, 3], 1.0 / np.sqrt(np.abs(b) + 1.0), "1 / sqrt(|y| + 1)")
    same(got[:, 4], np.where(a > b, np.floor(a), -np.floor(b)), "select of floors")


@case("numeric")
def float_int_conversions(k: KernelRun) -> None:
    n, block = 300, 64
    x = (k.rng.standard_normal(n) * 10.0 ** k.rng.integers(0, 11, n)).astype(np.float32)
    x[:12] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, np.nan, np.inf, -np.inf, 3e9, -3e9, 4.5e9]
    out, back = k.output(np.int32, 6 * n), k.output(np.float32, 2 * n)
    k.launch("float_int_conversions", [k.input(x), out, back, n], grid_for(n, block), block)
    c = np.fmin(np.fmax(x, np.float32(-2147483520.0)), np.float32(2147483520.0))
    u = np.fmin(np.fmax(x, np.float32(0)), np.float32(4294967040.0)).astype(np.uint32)
    want = np.stack([np.rint(c), np.floor(c), np.ceil(c), np.trunc(c)], axis=1).astype(np.int32)
    got = k.read(out).reshape(n, 6)
    same(got[:, :4], want, "rn / rd / ru / rz")
    same(got[:, 4], u.view(np.int32), "saturated unsigned")
    same(got[:, 5], x.view(np.int32) ^ np.int32(-2**31), "sign flip of the bits")
    got_back = k.read(back).reshape(n, 2)
    same(got_back[:, 0], want[:, 0].astype(np.float32) + np.float32(0.25), "int -> float + 0.25")
    same(got_back[:, 1], u.astype(np.float32), "unsigned -> float")


@case("numeric")
def byte_pack(k: KernelRun) -> None:
    n, block = 400, 64
    w = k.rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    out = k.output(np.uint32, 2 * n)
    k.launch("byte_pack", [k.input(w), out, n], grid_for(n, block), block)
    v = w.view(np.uint8).reshape(n, 4).astype(np.int64)
    packed = np.stack([np.minimum(255, v[:, 0] * 2), np.maximum(0, v[:, 1] - 100),
                       (v[:, 2] + v[:, 3] + 1) // 2, 255 - v[:, 3]], axis=1).astype(np.uint8)
    lo, hi = w & 0xFFFF, w >> 16
    second = ((lo >> 3) << 16) | ((lo - hi) & 0xFFFF)
    got = k.read(out).reshape(n, 2)
    same(got[:, 0], packed.reshape(-1).view(np.uint32), "bytes repacked")
    same(got[:, 1], second.astype(np.uint32), "16-bit halves")


@case("numeric")
def int32_bits(k: KernelRun) -> None:
    n, block = 300, 64
    a = k.rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    b = k.rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    b[:3] = [0, 1, -1]
    out = k.output(np.uint32, 6 * n)
    k.launch("int32_bits", [k.input(a), k.input(b), out, n], grid_for(n, block), block)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    ua, ub = a.view(np.uint32).astype(np.uint64), b.view(np.uint32).astype(np.uint64)

    def sext24(v):
        v = v & 0xFFFFFF
        return np.where(v >= 2**23, v - 2**24, v)

    brev = np.array([int(format(int(x), "032b")[::-1], 2) for x in ua], np.uint64)
    clz = np.array([32 - int(x).bit_length() for x in ub], np.uint64)
    ffs = np.array([(int(x) & -int(x)).bit_length() for x in ua], np.uint64)
    popc = np.array([bin(int(x)).count("1") for x in ub], np.uint64)
    want = np.stack([(sext24(a64) * sext24(b64)) & 0xFFFFFFFF,
                     ((ua & 0xFFFFFF) * (ub & 0xFFFFFF)) & 0xFFFFFFFF,
                     (ua * ub) >> 32,
                     ((a64 * b64) >> 32) & 0xFFFFFFFF,
                     brev ^ clz,
                     ffs | (popc << 8)], axis=1).astype(np.uint32)
    got = k.read(out).reshape(n, 6)
    for column, name in enumerate(["mul24", "umul24", "umulhi", "mulhi", "brev^clz", "ffs|popc"]):
        same(got[:, column], want[:, column], name)


def _round_directed(value, upward: bool) -> np.float32:
    """The float32 next to the exact rational ``value`` toward +inf (upward) or -inf."""
    from fractions import Fraction

    candidate = np.float32(float(value))
    if upward and Fraction(float(candidate)) < value:
        candidate = np.nextafter(candidate, np.float32(np.inf))
    if not upward and Fraction(float(candidate)) > value:
        candidate = np.nextafter(candidate, np.float32(-np.inf))
    return candidate


@case("numeric")
def directed_rounding(k: KernelRun) -> None:
    from fractions import Fraction

    n, block = 300, 64
    a = (k.rng.standard_normal(n) * 10.0 ** k.rng.integers(-3, 4, n)).astype(np.float32)
    b = (k.rng.standard_normal(n) * 10.0 ** k.rng.integers(-3, 4, n)).astype(np.float32)
    out, modes = k.output(np.float32, 6 * n), k.output(np.int32, 3 * n)
    k.launch("directed_rounding", [k.input(a), k.input(b), out, modes, n], grid_for(n, block),
             block)
    tenth = Fraction(float(np.float32(0.1)))
    want = np.empty((n, 6), np.float32)
    for i in range(n):
        x, y = Fraction(float(a[i])), Fraction(float(b[i]))
        for column, upward in ((0, False), (3, True)):        # toward -inf, then toward +inf
            want[i, column] = _round_directed(x + y, upward)
            want[i, column + 1] = _round_directed(x * y, upward)
            want[i, column + 2] = _round_directed(x * y + tenth, upward)
    same(k.read(out).reshape(n, 6), want, "add, mul, fma rounded toward -inf / +inf")
    # FLT_ROUNDS: 1 to nearest (the kernel descriptor's mode at entry), 3 down, 2 up.
    same(k.read(modes).reshape(n, 3), np.tile(np.array([1, 3, 2], np.int32), (n, 1)),
         "rounding mode read back")


# ================================================================================================
# mathlib.hip (ROCm's ocml for the library functions)

# Maximum errors in ulps the OpenCL C specification allows (section 7.4, "Relative Error as
# ULPs", full profile); ocml is written to meet them. Functions the backend lowers itself
# (expf, logf: LLVM's expansions) get the same bounds as the library's.
ULP_F32 = {"sin": 4, "cos": 4, "tan": 5, "exp": 3, "log": 3, "pow": 16, "erf": 16, "erfc": 16,
           "tanh": 5, "rsqrt": 2, "fma_sqrt": 1, "atan2_log1p": 6 + 2}
ULP_F64 = {"exp": 3, "log": 3, "sin": 4, "pow": 16, "cbrt": 2}


def _ulp_close(got, want, ulps: float, dtype, what: str) -> None:
    spacing = np.spacing(np.abs(np.asarray(want, dtype))).astype(np.float64)
    close(got, want, ulps * spacing, 0, what)


@case("mathlib")
def float_math(k: KernelRun) -> None:
    n, block = 150, 64
    x = k.rng.uniform(-6, 6, n).astype(np.float32)
    y = k.rng.uniform(-3, 3, n).astype(np.float32)
    out = k.output(np.float32, 12 * n)
    k.launch("float_math", [k.input(x), k.input(y), out, n], grid_for(n, block), block)
    a, b = x.astype(np.float64), y.astype(np.float64)
    erf = np.vectorize(math.erf)
    erfc = np.vectorize(math.erfc)
    got = k.read(out).reshape(n, 12)
    _ulp_close(got[:, 0], np.sin(a), ULP_F32["sin"], np.float32, "sinf")
    _ulp_close(got[:, 1], np.cos(a), ULP_F32["cos"], np.float32, "cosf")
    _ulp_close(got[:, 2], np.tan(np.float32(0.25) * x).astype(np.float64), ULP_F32["tan"],
               np.float32, "tanf")
    _ulp_close(got[:, 3], np.exp(b), ULP_F32["exp"], np.float32, "expf")
    _ulp_close(got[:, 4], np.log(np.abs(x) + np.float32(1e-3)).astype(np.float64), ULP_F32["log"],
               np.float32, "logf")
    base = (np.abs(x) + np.float32(0.5)).astype(np.float64)
    _ulp_close(got[:, 5], base ** b, ULP_F32["pow"], np.float32, "powf")
    _ulp_close(got[:, 6], erf(b), ULP_F32["erf"], np.float32, "erff")
    _ulp_close(got[:, 7], erfc(b), ULP_F32["erfc"], np.float32, "erfcf")
    _ulp_close(got[:, 8], np.tanh(a), ULP_F32["tanh"], np.float32, "tanhf")
    _ulp_close(got[:, 9], 1 / np.sqrt((np.abs(x) + np.float32(0.25)).astype(np.float64)),
               ULP_F32["rsqrt"], np.float32, "__frsqrt_rn")
    # fmaf is exact, sqrtf correctly rounded (HIP's default): one rounding of a*b + sqrt32(|b|).
    sqrt32 = np.sqrt(np.abs(y)).astype(np.float64)
    _ulp_close(got[:, 10], a * b + sqrt32, 0.5, np.float32, "fmaf(a, b, sqrtf|b|)")
    # A sum of two results, each within its bound: the bound applies to each term's ulp.
    want = np.arctan2(a, b) + np.log1p(np.abs(b))
    tolerance = 6 * ulps32(np.arctan2(a, b)) + 2 * ulps32(np.log1p(np.abs(b))) + ulps32(want)
    close(got[:, 11], want, tolerance, 0, "atan2f + log1pf")


@case("mathlib")
def double_math(k: KernelRun) -> None:
    n, block = 150, 64
    x = k.rng.uniform(-20, 20, n)
    out = k.output(np.float64, 5 * n)
    k.launch("double_math", [k.input(x), out, n], grid_for(n, block), block)
    got = k.read(out).reshape(n, 5)
    # numpy's float64 functions are within 1 ulp themselves: one more ulp each.
    _ulp_close(got[:, 0], np.exp(x), ULP_F64["exp"] + 1, np.float64, "exp")
    _ulp_close(got[:, 1], np.log(np.abs(x) + 1e-6), ULP_F64["log"] + 1, np.float64, "log")
    _ulp_close(got[:, 2], np.sin(x * 10.0), ULP_F64["sin"] + 1, np.float64, "sin")
    _ulp_close(got[:, 3], (np.abs(x) + 0.1) ** 2.5, ULP_F64["pow"] + 1, np.float64, "pow")
    _ulp_close(got[:, 4], np.cbrt(x), ULP_F64["cbrt"] + 1, np.float64, "cbrt")


@case("mathlib")
def black_scholes(k: KernelRun) -> None:
    n, block = 500, 128
    spot = k.rng.uniform(5, 30, n).astype(np.float32)
    strike = k.rng.uniform(1, 100, n).astype(np.float32)
    years = k.rng.uniform(0.25, 10, n).astype(np.float32)
    rate, vol = np.float32(0.02), np.float32(0.30)
    call, put = k.output(np.float32, n), k.output(np.float32, n)
    k.launch("black_scholes", [k.input(spot), k.input(strike), k.input(years), call, put, rate, vol,
                               n], grid_for(n, block), block)
    s, x, t = spot.astype(np.float64), strike.astype(np.float64), years.astype(np.float64)
    r, v = float(rate), float(vol)
    d1 = (np.log(s / x) + (r + 0.5 * v * v) * t) / (v * np.sqrt(t))
    d2 = d1 - v * np.sqrt(t)
    cdf = np.vectorize(lambda d: 0.5 * math.erfc(-d / math.sqrt(2)))
    disc = np.exp(-r * t)
    want_call = s * cdf(d1) - x * disc * cdf(d2)
    want_put = x * disc * cdf(-d2) - s * cdf(-d1)
    # Every factor is within 16 ulps (2e-6 relative); d1 and d2 carry it into the CDF with a
    # slope <= 0.4, and the difference of two terms of size <= s + x cancels: 1e-5 (s + x).
    tolerance = 1e-5 * (s + x)
    close(k.read(call), want_call, tolerance, 0, "call price")
    close(k.read(put), want_put, tolerance, 0, "put price")


def _stops_naming(k: KernelRun, name: str, args: list, service: str) -> None:
    """The launch fails (the queue stops) with an error that names ``service``."""
    try:
        k.launch(name, args, 64, 64)
    except Exception as exc:   # the queue error the runtime raises, whatever its class
        assert service in str(exc), f"the error does not name {service}: {exc}"
        return
    raise AssertionError(f"{name} completed, but the simulator provides no {service}")


@case("mathlib")
def printf_values(k: KernelRun) -> None:
    n = 50
    x = k.rng.standard_normal(n).astype(np.float32)
    _stops_naming(k, "printf_values", [k.input(x), k.output(np.float32, n), n], "printf")


@case("mathlib")
def heap_scratch(k: KernelRun) -> None:
    n = 50
    x = k.rng.integers(0, 100, n).astype(np.int32)
    _stops_naming(k, "heap_scratch", [k.input(x), k.output(np.int32, n), n], "malloc")


# ================================================================================================
# calls.hip


def _smooth_step32(x: np.ndarray) -> np.ndarray:
    t = (x - np.float32(-2)) / np.float32(4)
    t = np.fmin(np.fmax(t, np.float32(0)), np.float32(1))
    return t * t * (np.float32(3) - np.float32(2) * t)


@case("calls")
def call_chain(k: KernelRun) -> None:
    n, block, size = 500, 64, 17
    x = k.rng.uniform(-3, 3, n).astype(np.float32)
    table = k.rng.standard_normal(size).astype(np.float32)
    out = k.output(np.float32, n)
    k.launch("call_chain", [k.input(x), k.input(table), out, size, n], grid_for(n, block), block)
    s = _smooth_step32(x).astype(np.float64)
    position = s * (size - 1)
    j = np.minimum(position.astype(np.int64), size - 2)
    frac = position - j
    want = table[j] * (1 - frac) + table[j + 1] * frac
    # s is reproduced bit for bit; the fraction and the blend may be fused or not: a few ulps
    # of the table's largest entry.
    close(k.read(out), want, 4 * F32_EPS * np.abs(table).max(), 0, "remap through two calls")


@case("calls")
def struct_return(k: KernelRun) -> None:
    n, block, window = 300, 64, 8
    v = k.rng.standard_normal(n)
    count = n - window + 1
    out, idx = k.output(np.float64, 3 * count), k.output(np.int64, count)
    k.launch("struct_return", [k.input(v), out, idx, window, n], grid_for(count, block), block)
    windows = np.lib.stride_tricks.sliding_window_view(v, window)
    mean = windows.sum(axis=1) / window
    spread = (windows**2).sum(axis=1) - windows.sum(axis=1) ** 2 / window
    got = k.read(out).reshape(count, 3)
    # Sums of 8 terms (squares fused or not): 10 eps of the sums of magnitudes.
    close(got[:, 0], mean, 10 * F64_EPS * np.abs(windows).sum(axis=1), 0, "mean")
    close(got[:, 1], spread, 10 * F64_EPS * 2 * (windows**2).sum(axis=1), 0, "sum of squares")
    same(got[:, 2], windows.max(axis=1) - windows.min(axis=1), "range")
    negative = windows < 0
    same(k.read(idx), np.where(negative.any(axis=1), negative.argmax(axis=1), -1), "first < 0")


def _ackermann(m: int, n: int) -> int:
    if m == 0:
        return n + 1
    if n == 0:
        return _ackermann(m - 1, 1)
    return _ackermann(m - 1, _ackermann(m, n - 1))


@case("calls")
def recursion(k: KernelRun) -> None:
    n, block = 200, 64
    # |a|, |b| < 50: Euclid takes at most 8 steps (Lame), a call each.
    a = k.rng.integers(-49, 50, n).astype(np.int32)
    b = k.rng.integers(-49, 50, n).astype(np.int32)
    a[:4], b[:4] = [0, 12, 7, 34], [5, 0, 7, 21]
    g, ack = k.output(np.int32, n), k.output(np.uint32, n)
    k.launch("recursion", [k.input(a), k.input(b), g, ack, n], grid_for(n, block), block)
    same(k.read(g), np.gcd(a, b).astype(np.int32), "recursive gcd")
    same(k.read(ack), np.array([_ackermann(i % 3, i % 2) for i in range(n)], np.uint32),
         "Ackermann")


@case("calls")
def function_pointers(k: KernelRun) -> None:
    n, block = 400, 64
    x = k.rng.uniform(-3, 3, n).astype(np.float32)
    which = k.rng.integers(0, 16, n).astype(np.int32)
    out = k.output(np.float32, n)
    k.launch("function_pointers", [k.input(x), k.input(which), out, n], grid_for(n, block), block)
    ops = [np.negative, lambda v: v * v, lambda v: v * np.float32(0.5),
           lambda v: np.fmin(np.fmax(v, np.float32(-1)), np.float32(1))]
    want = np.array([ops[(w >> 2) & 3](ops[w & 3](v)) for v, w in zip(x, which)], np.float32)
    same(k.read(out), want, "g(f(x)) through a pointer table")


@case("calls")
def virtual_calls(k: KernelRun) -> None:
    n, block = 300, 64
    p = k.rng.uniform(0.1, 3, 2 * n).astype(np.float32)
    kind = k.rng.integers(0, 2, n).astype(np.int32)
    out = k.output(np.float32, n)
    k.launch("virtual_calls", [k.input(p), k.input(kind), out, n], grid_for(n, block), block)
    r, h = p[0::2].astype(np.float64), p[1::2].astype(np.float64)
    pi = float(np.float32(3.14159265))
    area = np.where(kind == 1, r * h, pi * r * r)
    perimeter = np.where(kind == 1, 2 * (r + h), 2 * pi * r)
    want = area + 0.001 * perimeter
    # Three or four float32 roundings, some perhaps fused: 4 ulps of the result.
    close(k.read(out), want, 4 * ulps32(want), 0, "area + perimeter / 1000 through vtables")


# ================================================================================================
# linked_*.rdc.hip (relocatable device code, linked by ld.lld)


@case("linked", rdc=True)
def linked_lerp(k: KernelRun) -> None:
    n, block, size = 500, 64, 33
    x = k.rng.uniform(-0.2, 1.2, n).astype(np.float32)
    table = np.cumsum(k.rng.uniform(0, 1, size)).astype(np.float32)
    out = k.output(np.float32, n)
    k.launch("linked_lerp", [k.input(x), k.input(table), out, size, n], grid_for(n, block), block)
    position = np.clip(x, 0, 1).astype(np.float32) * np.float32(size - 1)
    j = np.minimum(position.astype(np.int64), size - 2)
    frac = position.astype(np.float64) - j
    want = table[j] + frac * (table[j + 1].astype(np.float64) - table[j])
    # One product, two sums, fused or not: 3 ulps of the table's largest entry.
    close(k.read(out), want, 3 * F32_EPS * np.abs(table).max(), 0, "lerp across files")


def _hash_mix(x: np.ndarray, seed: int) -> np.ndarray:
    x = (x ^ np.uint64(seed)) & np.uint64(0xFFFFFFFF)
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x7FEB352D)) & np.uint64(0xFFFFFFFF)
    x ^= x >> np.uint64(15)
    x = (x * np.uint64(0x846CA68B)) & np.uint64(0xFFFFFFFF)
    x ^= x >> np.uint64(16)
    return x.astype(np.uint32)


@case("linked", rdc=True)
def linked_hash(k: KernelRun) -> None:
    n, block, seed = 700, 128, 0x9E3779B9
    out = k.output(np.uint32, n)
    k.launch("linked_hash", [out, np.uint32(seed), n], grid_for(n, block), block)
    same(k.read(out), _hash_mix(np.arange(n, dtype=np.uint64), seed), "hash across files")


@case("linked", rdc=True)
def linked_counter(k: KernelRun) -> None:
    n, block = 600, 128
    before, after = k.output(np.int32, 1), k.output(np.int32, 1)
    k.launch("linked_counter_read", [before], 64, 64)
    k.launch("linked_counter", [n], grid_for(n, block), block)
    k.launch("linked_counter_read", [after], 64, 64)
    same(k.read(after) - k.read(before), [sum(i % 5 for i in range(n))],
         "a global of another file, bumped atomically")


# ================================================================================================
# samples.hip


@case("samples")
def mandelbrot(k: KernelRun) -> None:
    width, height, max_iter = 70, 45, 200
    x0, y0, step = np.float32(-2.0), np.float32(-1.1), np.float32(0.04)
    out = k.output(np.int32, width * height)
    k.launch("mandelbrot", [out, width, height, x0, y0, step, max_iter],
             (grid_for(width, 16), grid_for(height, 8)), (16, 8))
    px, py = np.meshgrid(np.arange(width), np.arange(height))
    cr = x0 + px.astype(np.float32) * step
    ci = y0 + py.astype(np.float32) * step
    zr, zi = np.zeros_like(cr), np.zeros_like(ci)
    counts = np.zeros(cr.shape, np.int32)
    live = np.ones(cr.shape, bool)
    two = np.float32(2)
    for _ in range(max_iter):
        zr2, zi2 = zr * zr, zi * zi
        live &= ~(zr2 + zi2 > 4)
        new_zi = two * zr * zi + ci
        new_zr = zr2 - zi2 + cr
        zr, zi = np.where(live, new_zr, zr), np.where(live, new_zi, zi)
        counts += live
    # The kernel turns contraction off: the float32 orbit matches numpy's bit for bit.
    same(k.read(out).reshape(height, width), counts, "escape counts")


@case("samples")
def nbody_accel(k: KernelRun) -> None:
    n, block, soft2 = 150, 64, np.float32(0.01)
    bodies = np.concatenate([k.rng.uniform(-1, 1, (n, 3)), k.rng.uniform(0.5, 1, (n, 1))],
                            axis=1).astype(np.float32)
    out = k.output(np.float32, 4 * n)
    k.launch("nbody_accel", [k.input(bodies), out, n, soft2], grid_for(n, block), block,
             dynamic_lds=16 * block)
    p = bodies.astype(np.float64)
    d = p[None, :, :3] - p[:, None, :3]
    r2 = (d**2).sum(axis=2) + float(soft2)
    terms = d * (p[None, :, 3] / r2**1.5)[:, :, None]
    want = np.concatenate([terms.sum(axis=1), np.zeros((n, 1))], axis=1)
    # Each term has a few roundings and rsqrt's 1-ulp error (about 8 eps relative); n terms
    # summed: (n + 8) * eps of the sum of |terms|.
    tolerance = (n + 8) * F32_EPS * np.concatenate([np.abs(terms).sum(axis=1), np.zeros((n, 1))],
                                                   axis=1)
    close(k.read(out).reshape(n, 4), want, tolerance, 0, "accelerations")


@case("samples")
def softmax_rows(k: KernelRun) -> None:
    rows, cols, block = 7, 300, 128
    x = (k.rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    out = k.output(np.float32, rows * cols)
    k.launch("softmax_rows", [k.input(x), out, cols], rows * block, block)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    # exp within 3 ulps, the sum of cols terms within cols * eps/2, one division, one product:
    # relative (cols / 2 + 6) * eps.
    close(k.read(out).reshape(rows, cols), want, 0, (cols / 2 + 6) * F32_EPS, "softmax")


def _collatz(v: int) -> int:
    steps = 0
    while v != 1 and steps < 10000:
        v = 3 * v + 1 if v & 1 else v >> 1
        steps += 1
    return steps


@case("samples")
def collatz_steps(k: KernelRun) -> None:
    n, block = 130, 64
    start = k.rng.integers(1, 10**4, n, dtype=np.uint64)
    start[:4] = [1, 27, 837799, 2**40 + 1]
    out = k.output(np.int32, n)
    k.launch("collatz_steps", [k.input(start), out, n], grid_for(n, block), block)
    same(k.read(out), np.array([_collatz(int(v)) for v in start], np.int32), "stopping times")


@case("samples")
def monte_carlo_pi(k: KernelRun) -> None:
    blocks, block, per_thread, seed = 3, 128, 40, 0x243F6A8885A308D3
    hits = k.output(np.uint32, 1, initial=0)
    k.launch("monte_carlo_pi", [np.uint64(seed), per_thread, hits], blocks * block, block)
    mask = np.uint64(2**64 - 1)
    threads = np.arange(blocks * block, dtype=np.uint64)
    state = np.uint64(seed) ^ ((threads + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15) & mask)
    fused = split = 0
    with np.errstate(over="ignore"):
        for _ in range(per_thread):
            state ^= state >> np.uint64(12)
            state ^= (state << np.uint64(25)) & mask
            state ^= state >> np.uint64(27)
            r = state * np.uint64(0x2545F4914F6CDD1D)
            x = (r >> np.uint64(40)).astype(np.float32) * np.float32(2**-24)
            y = (r & np.uint64(0xFFFFFF)).astype(np.float32) * np.float32(2**-24)
            exact = x.astype(np.float64) ** 2 + y.astype(np.float64) ** 2   # exact in float64
            fused += int((exact.astype(np.float32) <= 1).sum())
            split += int((x * x + y * y <= 1).sum())
    # x*x + y*y <= 1 may be contracted into an fma (one rounding) or not: either count is right.
    assert int(k.read(hits)[0]) in (fused, split), (int(k.read(hits)[0]), fused, split)


@case("samples")
def spmv_csr_wave(k: KernelRun) -> None:
    rows, cols = 50, 60
    nnz = k.rng.integers(0, 41, rows)
    nnz[[3, 17]] = 0                                          # empty rows
    row_ptr = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int32)
    col_idx = np.concatenate([np.sort(k.rng.choice(cols, c, replace=False)) for c in nnz])
    vals = k.rng.standard_normal(len(col_idx))
    x = k.rng.standard_normal(cols)
    out = k.output(np.float64, rows)
    k.launch("spmv_csr_wave", [k.input(row_ptr), k.input(col_idx.astype(np.int32)), k.input(vals),
                               k.input(x), out, rows], grid_for(rows * k.wave, 128), 128)
    products = vals * x[col_idx]
    segments = [products[row_ptr[r]:row_ptr[r + 1]] for r in range(rows)]
    want = np.array([s.sum() for s in segments])
    magnitude = np.array([np.abs(s).sum() for s in segments])
    close(k.read(out), want, (nnz + 1) * F64_EPS / 2 * magnitude, 0, "CSR y = A x")


@case("samples")
def rgba_to_grey(k: KernelRun) -> None:
    pixels, block = 1000, 256
    rgba = k.rng.integers(0, 256, (pixels, 4)).astype(np.uint8)
    out = k.output(np.uint8, pixels)
    k.launch("rgba_to_grey", [k.input(rgba), out, pixels], grid_for(pixels, block), block)
    c = rgba.astype(np.uint32)
    want = ((77 * c[:, 0] + 150 * c[:, 1] + 29 * c[:, 2] + 128) >> 8).astype(np.uint8)
    same(k.read(out), want, "grey levels")


@case("samples")
def gemv_wave(k: KernelRun) -> None:
    m, n = 40, 100
    a = k.rng.standard_normal((m, n)).astype(np.float32)
    x = k.rng.standard_normal(n).astype(np.float32)
    out = k.output(np.float32, m)
    k.launch("gemv_wave", [k.input(a), k.input(x), out, m, n], grid_for(m * k.wave, 256), 256)
    want = a.astype(np.float64) @ x
    close(k.read(out), want, (n + 1) * F32_EPS / 2 * (np.abs(a) @ np.abs(x)), 0, "A x")


# ================================================================================================
# matrix.hip (MFMA on gfx942, WMMA on gfx12)


@case("matrix")
def mma_gemm_f16(k: KernelRun) -> None:
    m, n, kk = 32, 48, 64
    a = k.rng.uniform(-2, 2, (m, kk)).astype(np.float16)
    b = k.rng.uniform(-2, 2, (kk, n)).astype(np.float16)
    out = k.output(np.float32, m * n)
    waves = (m // 16) * (n // 16)
    k.launch("mma_gemm_f16", [k.input(a), k.input(b), out, m, n, kk],
             grid_for(waves * k.wave, 128), 128)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    # Products of halves are exact in float32; k of them accumulate in float32 in the
    # instruction's own order: (k + 1) * eps/2 * (|A| |B|).
    tolerance = (kk + 1) * F32_EPS / 2 * (np.abs(a64) @ np.abs(b64))
    close(k.read(out).reshape(m, n), a64 @ b64, tolerance, 0, "matrix-core A B")


@case("matrix")
def mma_gemm_i8(k: KernelRun) -> None:
    m, n, kk = 32, 48, 64
    a = k.rng.integers(-128, 128, (m, kk)).astype(np.int8)
    b = k.rng.integers(-128, 128, (kk, n)).astype(np.int8)
    out = k.output(np.int32, m * n)
    waves = (m // 16) * (n // 16)
    k.launch("mma_gemm_i8", [k.input(a), k.input(b), out, m, n, kk],
             grid_for(waves * k.wave, 128), 128)
    same(k.read(out).reshape(m, n), (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32),
         "matrix-core int8 A B (exact)")


def describe(name: str) -> str:
    """One line about a case (its source and kernel), for test ids and docs."""
    c = CASES[name]
    return f"{c.source}:{c.kernel}"


__all__ = ["CASES", "Case", "KernelRun", "case", "close", "describe", "grid_for", "same"]


# ================================================================================================
# edges.hip


def _round_fraction(q: Fraction, mantissa_bits: int, min_exponent: int, max_exponent: int) -> float:
    """The exact rational ``q`` rounded to nearest even in a binary format with
    ``mantissa_bits`` significand bits, subnormals below 2**min_exponent and overflow to
    infinity at 2**max_exponent."""
    if q == 0:
        return 0.0
    sign = -1.0 if q < 0 else 1.0
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    quantum = Fraction(2) ** (max(e, min_exponent) - mantissa_bits + 1)
    scaled = a / quantum
    whole = scaled.numerator // scaled.denominator
    rest = scaled - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2):
        whole += 1
    value = whole * quantum
    return sign * (math.inf if value >= Fraction(2) ** max_exponent else float(value))


def _exact(op: str, values: tuple, mantissa_bits: int, min_exponent: int,
           max_exponent: int, dtype) -> float:
    """op ("div", "fma", "sqrt") of finite ``values`` correctly rounded to ``dtype``; IEEE
    special cases (NaN, infinities, zeros, negative square roots) from numpy."""
    v = [float(t) for t in values]
    with np.errstate(all="ignore"):
        arr = [dtype(t) for t in v]
        plain = {"div": lambda: arr[0] / arr[1], "sqrt": lambda: np.sqrt(arr[0]),
                 "fma": lambda: dtype(np.float64(arr[0]) * np.float64(arr[1]) + np.float64(arr[2]))}
        if not all(math.isfinite(t) for t in v) or (op == "div" and v[1] == 0) or \
                (op == "sqrt" and v[0] <= 0):
            return plain[op]() if op != "fma" else dtype(arr[0] * arr[1] + arr[2])
    f = [Fraction(t) for t in v]
    if op == "div":
        return _round_fraction(f[0] / f[1], mantissa_bits, min_exponent, max_exponent)
    if op == "fma":
        q = f[0] * f[1] + f[2]
        if q == 0:      # the sign of an exact zero: numpy's, from the same operations
            return float(np.float64(v[0]) * np.float64(v[1]) + np.float64(v[2]))
        return _round_fraction(q, mantissa_bits, min_exponent, max_exponent)
    # sqrt: the candidate r whose rounding interval holds the exact root (r^2 near x)
    r = np.sqrt(dtype(v[0]))
    for candidate in (np.nextafter(r, dtype(-np.inf)), r, np.nextafter(r, dtype(np.inf))):
        lo = (Fraction(float(np.nextafter(candidate, dtype(-np.inf)))) + Fraction(float(candidate))) / 2
        hi = (Fraction(float(candidate)) + Fraction(float(np.nextafter(candidate, dtype(np.inf))))) / 2
        if lo * lo < f[0] < hi * hi:
            return float(candidate)
    return float(r)


def _hard_floats(rng: np.random.Generator, n: int, dtype) -> np.ndarray:
    """Operands where a rounding error shows: all-ones mantissas, values a few ulps from powers
    of two, denormals, the top and bottom of the exponent range, signed zeros and infinities."""
    info = np.finfo(dtype)
    mant = info.nmant
    emax = int(info.maxexp)
    ones = (np.ldexp(2.0 - 2.0 ** -mant, rng.integers(-emax + 3, emax - 3, n))).astype(dtype)
    near = (np.ldexp(1 + rng.integers(-4, 5, n) * 2.0 ** -mant,
                     rng.integers(-emax + 3, emax - 3, n))).astype(dtype)
    wide = (rng.standard_normal(n) * np.exp2(rng.integers(-emax - mant, emax - 1, n)
                                             .astype(np.float64))).astype(dtype)
    special = np.array([0.0, -0.0, info.tiny, -info.smallest_subnormal, info.max, -np.inf,
                        np.inf, 1.0, 3.0, 1.0 - info.epsneg], dtype)
    pick = rng.integers(0, 4, n)
    out = np.select([pick == 0, pick == 1, pick == 2], [ones, near, wide],
                    special[rng.integers(0, len(special), n)]).astype(dtype)
    return out * np.where(rng.random(n) < 0.3, -1, 1).astype(dtype)


@case("edges")
def div_edges(k: KernelRun) -> None:
    n, block = 256, 64
    a, b, c = (_hard_floats(k.rng, n, np.float32) for _ in range(3))
    x, y, z = (_hard_floats(k.rng, n, np.float64) for _ in range(3))
    # pairs whose exact results sit next to a rounding boundary: quotients by all-ones
    # mantissas (found wrong by one ulp when an fma rounded twice), quotients near the bottom
    # of the normal range and divisors near the top of the exponent range
    a[:4] = [-2.0 ** 31, -2.0 ** 31, -(2.0 ** -126 - 2.0 ** -149), 2.0 ** -126]
    b[:4] = [8388607.5, 0.49999997, 0.99999994, 0.99999994]
    x[:3] = [-1.2020234407384665e-07, 1.5 * 2.0 ** 1000, 2.0 ** -1022]
    y[:3] = [-2.768267069851693e+300, 2.0 ** -1000 * (1 + 2.0 ** -52), 1 - 2.0 ** -53]
    z[1] = -1.5
    out32 = k.output(np.float32, 3 * n)
    out64 = k.output(np.float64, 3 * n)
    k.launch("div_edges", [k.input(a), k.input(b), k.input(c), k.input(x), k.input(y),
                           k.input(z), out32, out64, n], grid_for(n, block), block)
    # Every operation is one correctly rounded IEEE operation (clang's default for HIP:
    # correctly rounded division and sqrt; fma is fused by definition): exact comparison
    # against the exact rational result rounded once.
    g32 = k.read(out32).reshape(n, 3)
    g64 = k.read(out64).reshape(n, 3)
    f32 = (24, -126, 128, np.float32)
    f64 = (53, -1022, 1024, np.float64)
    for column, (op, args32, args64) in enumerate(
            (("div", (a, b), (x, y)), ("fma", (a, b, c), (x, y, z)), ("sqrt", (a,), (x,)))):
        want32 = np.array([_exact(op, tuple(v[i] for v in args32), *f32) for i in range(n)],
                          np.float32)
        want64 = np.array([_exact(op, tuple(v[i] for v in args64), *f64) for i in range(n)])
        same(g32[:, column], want32, f"f32 {op}")
        same(g64[:, column], want64, f"f64 {op}")
# ================================================================================================
# intrinsics.hip


@case("intrinsics")
def shuffle_widths(k: KernelRun) -> None:
    n, block = 200, 64
    x = k.rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    out = k.output(np.int32, 5 * n)
    k.launch("shuffle_widths", [k.input(x), out, n], grid_for(n, block), block)
    total = grid_for(n, block)
    v = np.full(total, -1, np.int32)
    v[:n] = x
    i = np.arange(total)
    lane = i % k.wave
    base = i - lane
    sources = [
        (lane & ~7) + ((lane * 3 + 1) & 7),
        np.where((lane & 15) >= 3, lane - 3, lane),
        np.where((lane & 7) + 5 < 8, lane + 5, lane),
        lane ^ 3,
        (lane & ~31) + 2,
    ]
    want = np.stack([v[base + s] for s in sources], axis=1)[:n].reshape(-1)
    same(k.read(out), want, "shuffles with widths 8, 16, 8, 4, 32")


@case("intrinsics")
def swizzle_readlane(k: KernelRun) -> None:
    n, block, src = 256, 128, 5
    x = k.rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    out = k.output(np.int32, 6 * n)
    k.launch("swizzle_readlane", [k.input(x), out, src, n], n, block)
    i = np.arange(n)
    lane = i % k.wave
    base = i - lane
    group = lane & ~31
    low = lane & 31
    rev = x[base + group + (low ^ 31)]
    bcast = x[base + group + ((low & 0x18) | 3)]
    quad = x[base + (lane & ~3) + np.array([2, 0, 3, 1])[lane & 3]]
    picked = x[base + src]
    written = (x[base + k.wave - 1 - src].astype(np.int64) * 3).astype(np.int32)
    mask = x[base].astype(np.int64) & 0xFFFFFFFF
    below = np.zeros(n, np.int64)
    for j in range(n):
        l = int(lane[j])
        m = int(mask[j])
        lo = m & ((1 << min(l, 32)) - 1)
        hi = (m >> 3) & (((1 << l) - 1) >> 32)
        below[j] = bin(lo).count("1") + bin(hi).count("1")
    want = np.stack([rev, bcast, quad, picked, written, below.astype(np.int32)], axis=1)
    same(k.read(out), want.reshape(-1), "swizzle, readlane, mbcnt")


def _bytes(v, i):
    return (v >> (8 * i)) & 0xFF


def _perm(x, y, s):
    data = (x << 32) | y
    r = 0
    for i in range(4):
        sel = (s >> (8 * i)) & 0xFF
        if sel >= 13:
            b = 0xFF
        elif sel == 12:
            b = 0
        elif sel >= 8:
            bit = {8: 15, 9: 31, 10: 47, 11: 63}[sel]
            b = 0xFF if (data >> bit) & 1 else 0
        else:
            b = (data >> (8 * sel)) & 0xFF
        r |= b << (8 * i)
    return r


def _sext(v, bits):
    if bits == 0:
        return 0
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


@case("intrinsics")
def bit_intrinsics(k: KernelRun) -> None:
    n, block = 300, 128
    a = k.rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = k.rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    c = k.rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    # selectors for v_perm: every byte value 0..15 plus a few large ones
    c[:64] = (k.rng.integers(0, 16, (64, 4)) * np.array([1, 256, 65536, 2**24])).sum(1)
    b[:8] = 0
    out = k.output(np.uint32, 12 * n)
    k.launch(
        "bit_intrinsics", [k.input(a), k.input(b), k.input(c), out, n], grid_for(n, block), block
    )
    want = []
    M = 0xFFFFFFFF
    for x, y, s in zip(a.tolist(), b.tolist(), c.tolist()):
        sh = s & 31
        r = []
        r.append(((x << sh) | (y >> (32 - sh))) & M if sh else x)
        r.append((((x << 32) | y) >> sh) & M)
        r.append((((x << 32) | y) >> (8 * (s & 3))) & M)
        r.append(_perm(x, y, s))
        off, w = s & 31, (s >> 8) & 31
        r.append((x >> off) & ((1 << w) - 1))
        xs = x - (1 << 32) if x >> 31 else x
        r.append(_sext(xs >> off, w) & M)
        r.append((x >> (s & 7)) & ((1 << ((s >> 8) & 15)) - 1))
        rev = int(f"{x:032b}"[::-1], 2)
        clz = 32 - y.bit_length()
        r.append(rev ^ clz)
        xy = x & y
        ffs = (xy & -xy).bit_length()
        r.append(ffs + 100 * bin(x ^ y).count("1"))
        r.append((sum(_bytes(x, i) * _bytes(y, i) for i in range(4)) + s) & M)
        r.append(sum(abs(_bytes(x, i) - _bytes(y, i)) for i in range(4)) + (s & 0xFFFF))
        r.append(
            sum(
                ((_bytes(x, i) + _bytes(y, i) + (_bytes(s, i) & 1)) >> 1) << (8 * i)
                for i in range(4)
            )
        )
        want.append(r)
    same(k.read(out), np.array(want, np.uint64).astype(np.uint32).reshape(-1), "bit intrinsics")


def _nib(v, i, signed):
    t = (v >> (4 * i)) & 0xF
    return t - 16 if signed and t >= 8 else t


def _sb(v, i, signed):
    t = (v >> (8 * i)) & 0xFF
    return t - 256 if signed and t >= 128 else t


@case("intrinsics")
def dot_products(k: KernelRun) -> None:
    n, block = 150, 64
    a = k.rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = k.rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    # f16 pairs in a modest range for the fdot2 check (every bit pattern for the integer dots)
    ha = k.rng.uniform(-8, 8, 2 * n).astype(np.float16)
    hb = k.rng.uniform(-8, 8, 2 * n).astype(np.float16)
    a[n // 2 :] = ha.view(np.uint32)[n // 2 :]
    b[n // 2 :] = hb.view(np.uint32)[n // 2 :]
    acc = k.rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    acc[::3] = k.rng.integers(-1000, 1000, len(acc[::3]))
    out = k.output(np.int32, 4 * n)
    fout = k.output(np.float32, n)
    k.launch(
        "dot_products",
        [k.input(a), k.input(b), k.input(acc), out, fout, n],
        grid_for(n, block),
        block,
    )
    gfx942 = "gfx942" in k.agent.name
    want = []
    for x, y, c in zip(a.tolist(), b.tolist(), acc.tolist()):
        r = [sum(_nib(x, i, False) * _nib(y, i, False) for i in range(8)) + c]
        if gfx942:
            r.append(sum(_sb(x, i, True) * _sb(y, i, True) for i in range(4)) + c)
            r.append(sum(_nib(x, i, True) * _nib(y, i, True) for i in range(8)) + c)
            sx = [
                ((x >> 16 * i) & 0xFFFF) - (0x10000 if (x >> (16 * i + 15)) & 1 else 0)
                for i in range(2)
            ]
            sy = [
                ((y >> 16 * i) & 0xFFFF) - (0x10000 if (y >> (16 * i + 15)) & 1 else 0)
                for i in range(2)
            ]
            r.append(sx[0] * sy[0] + sx[1] * sy[1] + c)
        else:
            r.append(sum(_sb(x, i, True) * _sb(y, i, True) for i in range(4)) + c)
            r.append(sum(_nib(x, i, True) * _nib(y, i, True) for i in range(8)) + c)
            r.append(sum(_sb(x, i, True) * _sb(y, i, False) for i in range(4)) + c)
        want.append(r)
    want = (np.array(want, np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    same(k.read(out), want.reshape(-1), "integer dot products")
    sel = slice(n // 2, n)
    hx = a.view(np.float16).astype(np.float64).reshape(-1, 2)[sel]
    hy = b.view(np.float16).astype(np.float64).reshape(-1, 2)[sel]
    fw = hx[:, 0] * hy[:, 0] + hx[:, 1] * hy[:, 1] + acc[sel].astype(np.float32) * 0.25
    got = k.read(fout)
    # f16 products are exact in f32; the two additions round at most twice
    tol = 2 * (
        ulps32(np.abs(hx[:, 0] * hy[:, 0]) + np.abs(hx[:, 1] * hy[:, 1]) + np.abs(acc[sel] * 0.25))
    )
    close(got[sel], fw, tol, 0, "fdot2")


@case("intrinsics")
def float_bits(k: KernelRun) -> None:
    n, block = 260, 64
    rng = k.rng
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32) * 4
    z = rng.standard_normal(n).astype(np.float32) * 4
    x[:10] = [0.0, -0.0, 1e-40, -3e-39, 2.0, -2.0, 1.5, 0.75, -1e-30, 7.0]
    y[10:20] = x[10:20]  # ties for med3 and the cube faces
    z[20:30] = -x[20:30]
    y[30:40] = -z[30:40]
    e = rng.integers(-160, 160, n).astype(np.int32)
    out = k.output(np.float32, 8 * n)
    iout = k.output(np.int32, 2 * n)
    k.launch(
        "float_bits",
        [k.input(x), k.input(y), k.input(z), k.input(e), out, iout, n],
        grid_for(n, block),
        block,
    )
    med = np.median(np.stack([x, y, z]), axis=0).astype(np.float32)
    mant, ex = np.frexp(x)
    fract = np.minimum(x - np.floor(x), np.float32(1 - 2**-24)).astype(np.float32)
    ax, ay, az = np.abs(x), np.abs(y), np.abs(z)
    zmaj = (az >= ax) & (az >= ay)
    ymaj = ~zmaj & (ay >= ax)
    cid = np.where(
        zmaj, np.where(z < 0, 5, 4), np.where(ymaj, np.where(y < 0, 3, 2), np.where(x < 0, 1, 0))
    ).astype(np.float32)
    sc = np.where(zmaj, np.where(z < 0, -x, x), np.where(ymaj, x, np.where(x < 0, z, -z)))
    tc = np.where(zmaj, -y, np.where(ymaj, np.where(y < 0, -z, z), -y))
    ma = np.where(zmaj, 2 * z, np.where(ymaj, 2 * y, 2 * x))
    with np.errstate(over="ignore"):   # exponents past the range give inf, as v_ldexp does
        ld = np.ldexp(x, e).astype(np.float32)
    want = np.stack([med, ld, mant.astype(np.float32), fract, cid, sc, tc, ma], axis=1).astype(
        np.float32
    )
    same(k.read(out), want.reshape(-1), "fmed3, ldexp, frexp_mant, fract, cube")
    mask = (e.astype(np.int64) * 37) & 0x3FF
    neg = np.signbit(x)
    tiny = (x != 0) & (np.abs(x) < np.finfo(np.float32).tiny)
    cls = np.select(
        [x == 0, tiny, np.isinf(x)],
        [np.where(neg, 5, 6), np.where(neg, 4, 7), np.where(neg, 2, 9)],
        np.where(neg, 3, 8),
    )
    hit = (mask >> cls) & 1
    want_i = np.stack([np.where(x == 0, 0, ex).astype(np.int32), hit.astype(np.int32)], axis=1)
    same(k.read(iout), want_i.reshape(-1), "frexp_exp, class")


# ================================================================================================
# memory.hip


@case("memory")
def grid3d_partial(k: KernelRun) -> None:
    nx, ny, nz = 13, 7, 5
    bx, by, bz = 5, 3, 2
    out = k.output(np.int32, 4 * nx * ny * nz)
    k.launch("grid3d_partial", [out, nx, ny, nz], (nx, ny, nz), (bx, by, bz))
    z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    b = [x // bx, y // by, z // bz]
    t = [x % bx, y % by, z % bz]
    counts = [-(-nx // bx), -(-ny // by), -(-nz // bz)]
    ls = [
        np.where(b[d] == counts[d] - 1, [nx, ny, nz][d] - b[d] * s, s)
        for d, s in enumerate((bx, by, bz))
    ]
    flat = t[0] + ls[0] * (t[1] + ls[1] * t[2])
    want = np.stack(
        [
            b[0] | b[1] << 8 | b[2] << 16,
            t[0] | t[1] << 8 | t[2] << 16,
            ls[0] | ls[1] << 8 | ls[2] << 16 | 3 << 24,
            flat | (counts[0] | counts[1] << 4 | counts[2] << 8) << 16,
        ],
        axis=-1,
    )
    same(k.read(out), want.astype(np.int32).reshape(-1), "3-D ids, local sizes, grid dims")


RECORD = np.dtype([("tag", "u1"), ("value", "<u4"), ("small", "<u2"), ("weight", "<f8")])


@case("memory")
def unaligned_access(k: KernelRun) -> None:
    n, block = 150, 64
    raw = k.rng.integers(0, 256, 9 * n + 16, dtype=np.uint8)
    rec = np.zeros(n, RECORD)
    rec["tag"] = k.rng.integers(0, 256, n)
    rec["value"] = k.rng.integers(0, 2**32, n, dtype=np.uint64)
    rec["small"] = k.rng.integers(0, 2**16, n)
    rec["weight"] = k.rng.standard_normal(n)
    packed = k.output(np.uint8, 15 * n)
    weights = k.output(np.float64, n)
    k.launch(
        "unaligned_access",
        [k.input(raw), k.input(rec.view(np.uint8)), packed, weights, n],
        grid_for(n, block),
        block,
    )
    want = np.zeros((n, 15), np.uint8)
    for i in range(n):
        word = int.from_bytes(raw[5 * i + 1 : 5 * i + 5].tobytes(), "little")
        half = int.from_bytes(raw[3 * i + 1 : 3 * i + 3].tobytes(), "little")
        wide = int.from_bytes(raw[9 * i + 3 : 9 * i + 11].tobytes(), "little")
        mixed = (
            word
            ^ half
            ^ ((wide >> 29) & 0xFFFFFFFF)
            ^ int(rec["value"][i])
            ^ int(rec["small"][i])
            ^ int(rec["tag"][i])
        )
        want[i] = np.frombuffer(
            bytes([int(rec["tag"][i])])
            + mixed.to_bytes(4, "little")
            + wide.to_bytes(8, "little")
            + half.to_bytes(2, "little"),
            np.uint8,
        )
    same(k.read(packed), want.reshape(-1), "unaligned stores of unaligned loads")
    same(k.read(weights), rec["weight"] * 2.0, "packed double")


@case("memory")
def vector_types(k: KernelRun) -> None:
    n, block = 100, 64
    a = k.rng.standard_normal((n, 4)).astype(np.float32)
    b = k.rng.integers(-(2**31), 2**31, (n, 2), dtype=np.int64).astype(np.int32)
    c = k.rng.standard_normal((n, 2))
    d = k.rng.integers(-(2**15), 2**15, (n, 8)).astype(np.int16)
    fa, ib, dc, sd = (
        k.output(np.float32, 4 * n),
        k.output(np.int32, 2 * n),
        k.output(np.float64, 2 * n),
        k.output(np.int16, 8 * n),
    )
    k.launch(
        "vector_types",
        [k.input(a), k.input(b), k.input(c), k.input(d), fa, ib, dc, sd, n],
        grid_for(n, block),
        block,
    )
    same(
        k.read(fa),
        np.stack(
            [a[:, 3], a[:, 2] * np.float32(2), a[:, 1] + a[:, 0], a[:, 0] - a[:, 3]], 1
        ).reshape(-1),
        "float4",
    )
    same(
        k.read(ib),
        np.stack(
            [
                b[:, 1] >> 3,
                (b[:, 0].astype(np.int64) * b[:, 1] & 0xFFFFFFFF).astype(np.uint32).view(np.int32),
            ],
            1,
        ).reshape(-1),
        "int2",
    )
    same(k.read(dc), np.stack([c[:, 1] - c[:, 0], c[:, 0] * 0.5], 1).reshape(-1), "double2")
    same(
        k.read(sd),
        (d[:, ::-1].astype(np.int32) + np.arange(n)[:, None]).astype(np.int16).reshape(-1),
        "short8",
    )


@case("memory")
def nontemporal_volatile(k: KernelRun) -> None:
    n, block = 300, 128
    x = k.rng.standard_normal(n).astype(np.float32)
    c0 = k.rng.integers(-1000, 1000, n).astype(np.int32)
    out = k.output(np.float32, n)
    counts = k.output(np.int32, n, initial=c0)
    k.launch("nontemporal_volatile", [k.input(x), out, counts, n], grid_for(n, block), block)
    want = x.astype(np.float64) * x[::-1] + 1
    close(k.read(out), want, ulps32(x * x[::-1]) + ulps32(want), 0, "v*w + 1 (fma or not)")
    same(k.read(counts), (c0 + 3) * 2, "volatile read-modify-writes")


@case("memory")
def static_dynamic_lds(k: KernelRun) -> None:
    n, block = 300, 96
    x = k.rng.integers(-(10**6), 10**6, n).astype(np.int32)
    out = k.output(np.int32, n)
    k.launch(
        "static_dynamic_lds",
        [k.input(x), out, n],
        grid_for(n, block),
        block,
        dynamic_lds=2 * block * 4,
    )
    total = grid_for(n, block)
    v = np.zeros(total, np.int64)
    v[:n] = x
    i = np.arange(n)
    t = i % block
    base = i - t
    want = v[base + block - 1 - t] + (t % 40) * 1000 - ((t + 1) % block)
    same(k.read(out), want.astype(np.int32), "static + dynamic LDS")


@case("memory")
def wave_handoff(k: KernelRun) -> None:
    block = 2 * k.wave if k.wave == 64 else 4 * k.wave
    groups = 3
    n = groups * block - 5
    x = k.rng.integers(-(10**6), 10**6, groups * 64).astype(np.int32)
    out = k.output(np.int32, n)
    k.launch("wave_handoff", [k.input(x), out, n], groups * block, block)
    i = np.arange(n)
    t = i % block
    g = i // block
    want = np.where(t < k.wave, -t, x[g * 64 + t % k.wave] + t)
    same(k.read(out), want.astype(np.int32), "values handed from wave 0 through a flag")


@case("memory")
def int64_signed_div(k: KernelRun) -> None:
    n, block = 400, 128
    a = k.rng.integers(-(2**63), 2**63, n, dtype=np.int64)
    bits = k.rng.integers(1, 63, n)
    b = k.rng.integers(-(2**62), 2**62, n, dtype=np.int64) >> bits
    b[b == 0] = 7
    b[:6] = [1, -1, 2, -2, 2**62, -(2**62)]
    a[6:12] = [-(2**63) + 1, 2**63 - 1, -5, 5, 0, -1]
    b[6:12] = [3, -3, 2, -2, 5, 2**40]
    q, r = k.output(np.int64, n), k.output(np.int64, n)
    k.launch("int64_signed_div", [k.input(a), k.input(b), q, r, n], grid_for(n, block), block)
    wq = np.array(
        [abs(int(x)) // abs(int(y)) * (1 if (x < 0) == (y < 0) else -1) for x, y in zip(a, b)],
        np.int64,
    )
    same(k.read(q), wq, "a / b truncated")
    same(k.read(r), a - wq * b, "a % b with the sign of a")


# ================================================================================================
# atomics.hip


@case("atomics")
def atomic_wrap(k: KernelRun) -> None:
    n, block, limit = 333, 64, 40
    inc = k.output(np.uint32, 1, initial=7)
    dec = k.output(np.uint32, 1, initial=3)
    inc_old, dec_old = k.output(np.uint32, n), k.output(np.uint32, n)
    inc64 = k.output(np.uint64, 1, initial=(limit << 20) - 100)
    k.launch(
        "atomic_wrap", [inc, dec, inc_old, dec_old, inc64, limit, n], grid_for(n, block), block
    )
    seq_i, seq_d, x, y = [], [], 7, 3
    for _ in range(n):
        seq_i.append(x)
        x = 0 if x >= limit else x + 1
        seq_d.append(y)
        y = limit if (y == 0 or y > limit) else y - 1
    same(k.read(inc), np.array([x], np.uint32), "final atomicInc value")
    same(k.read(dec), np.array([y], np.uint32), "final atomicDec value")
    same(np.sort(k.read(inc_old)), np.sort(np.array(seq_i, np.uint32)), "values atomicInc returned")
    same(np.sort(k.read(dec_old)), np.sort(np.array(seq_d, np.uint32)), "values atomicDec returned")
    z = (limit << 20) - 100
    for _ in range(n):
        z = 0 if z >= (limit << 20) else z + 1
    same(k.read(inc64), np.array([z], np.uint64), "64-bit wrapping increment")


@case("atomics")
def lds_atomics(k: KernelRun) -> None:
    n, block = 500, 128
    blocks = -(-n // block)
    v = k.rng.standard_normal(n).astype(np.float32)
    d = k.rng.standard_normal(n)
    w = k.rng.integers(0, 2**64, n, dtype=np.uint64)
    outs = [
        k.output(np.float32, blocks),
        k.output(np.float64, blocks),
        k.output(np.float32, blocks),
        k.output(np.float32, blocks),
        k.output(np.uint64, blocks),
    ]
    k.launch("lds_atomics", [k.input(v), k.input(d), k.input(w), *outs, n], blocks * block, block)
    pad = blocks * block - n
    vb = np.concatenate([v, np.full(pad, np.nan, np.float32)]).reshape(blocks, block)
    db = np.concatenate([d, np.full(pad, np.nan)]).reshape(blocks, block)
    wb = np.concatenate([w, np.zeros(pad, np.uint64)]).reshape(blocks, block)
    m = np.sum(~np.isnan(vb), 1)
    # any order of m float additions: within (m - 1) eps/2 sum|x|
    close(
        k.read(outs[0]),
        np.nansum(vb.astype(np.float64), 1),
        (m - 1) * F32_EPS / 2 * np.nansum(np.abs(vb), 1),
        0,
        "LDS float sum",
    )
    close(
        k.read(outs[1]),
        np.nansum(db, 1),
        (m - 1) * F64_EPS / 2 * np.nansum(np.abs(db), 1),
        0,
        "LDS double sum",
    )
    same(k.read(outs[2]), np.nanmin(vb, 1), "LDS float min")
    same(k.read(outs[3]), np.nanmax(vb, 1), "LDS float max")
    same(k.read(outs[4]), wb.max(1), "LDS u64 max")


@case("atomics")
def narrow_atomics(k: KernelRun) -> None:
    n, block = 250, 128
    keys = k.rng.integers(0, 256, n).astype(np.uint8)
    c16 = k.output(np.uint16, 16, initial=0)
    c8 = k.output(np.uint8, 8, initial=250)
    mx = k.output(np.uint16, 16, initial=0)
    k.launch("narrow_atomics", [k.input(keys), c16, c8, mx, n], grid_for(n, block), block)
    same(k.read(c16), np.bincount(keys & 15, minlength=16).astype(np.uint16), "16-bit counts")
    same(
        k.read(c8),
        ((np.bincount(keys & 7, minlength=8) + 250) & 0xFF).astype(np.uint8),
        "8-bit counts (wrapping)",
    )
    vals = (keys.astype(np.int64) * 257 + np.arange(n)) & 0xFFFF
    want = np.zeros(16, np.int64)
    np.maximum.at(want, keys & 15, vals)
    same(k.read(mx), want.astype(np.uint16), "16-bit max through LDS")


@case("atomics")
def hw_float_atomics(k: KernelRun) -> None:
    n, block = 300, 64
    v = k.rng.standard_normal(n).astype(np.float32)
    d = k.rng.standard_normal(n)
    h = k.rng.uniform(-1, 1, 2 * n).astype(np.float16)
    fsum, dsum = k.output(np.float32, 1, initial=0), k.output(np.float64, 1, initial=0)
    dmin = k.output(np.float64, 1, initial=np.inf)
    hsum = k.output(np.float16, 2, initial=0)
    k.launch(
        "hw_float_atomics",
        [k.input(v), k.input(d), k.input(h), fsum, dsum, dmin, hsum, n],
        grid_for(n, block),
        block,
    )
    close(
        k.read(fsum),
        [v.astype(np.float64).sum()],
        (n - 1) * F32_EPS / 2 * np.abs(v).sum(),
        0,
        "f32 atomic add",
    )
    close(k.read(dsum), [d.sum()], (n - 1) * F64_EPS / 2 * np.abs(d).sum(), 0, "f64 atomic add")
    same(k.read(dmin), np.array([d.min()]), "f64 atomic min")
    hh = h.astype(np.float64).reshape(n, 2)
    # each of n half additions rounds to half precision (2**-11 relative, results below 32)
    close(k.read(hsum), hh.sum(0), n * 2.0**-11 * 16, 0, "packed f16 atomic add")


# ================================================================================================
# idioms.hip

# struct Transform / Bounds of idioms.hip as the compiler lays them out (C alignment rules).
TRANSFORM = np.dtype([("tag", "i1"), ("offset", "<f4", (3,)), ("scale", "<f8"),
                      ("steps", "<i2", (3,)), ("pairs", [("lo", "u1"), ("hi", "u1")], (2,)),
                      ("flip", "?")], align=True)
BOUNDS = np.dtype({"names": ["lo", "hi", "count"], "formats": ["<f4", "<f4", "<i4"],
                   "itemsize": 16})   # alignas(16)


@case("idioms")
def struct_args(k: KernelRun) -> None:
    assert TRANSFORM.itemsize == 40 and TRANSFORM.fields["scale"][1] == 16
    assert TRANSFORM.fields["pairs"][1] == 30 and TRANSFORM.fields["flip"][1] == 34
    n, block = 333, 64
    points = k.rng.uniform(-8, 8, (n, 3)).astype(np.float32)
    t = np.zeros((), TRANSFORM)
    t["tag"], t["offset"], t["scale"] = -7, (0.5, -1.25, 3.0), 1.5
    t["steps"], t["flip"] = (11, -22, 333), True
    t["pairs"]["lo"], t["pairs"]["hi"] = (5, 250), (9, 1)
    b = np.zeros((), BOUNDS)
    b["lo"], b["hi"], b["count"] = -6.0, 7.5, 100
    bias = np.array([0.25, -0.5, 1.5, 2.0], np.float32)
    out, tags = k.output(np.float32, 3 * n), k.output(np.int32, n)
    k.launch("struct_args", [t.tobytes(), k.input(points), b.tobytes(), bias.tobytes(), out, tags,
                             n], grid_for(n, block), block)
    p = points.astype(np.float64)
    q = p * np.float64(np.float32(1.5)) + np.array([0.5, -1.25, 3.0]) + [0.25, -0.5, 3.0]
    q[:, :2] = np.clip(q[:, :2], -6.0, 7.5)
    q[:, 2] = -q[:, 2]
    # p * s + offset + bias in float32, with or without a fused multiply-add: two roundings of
    # values below 2 * 8 * 1.5 + 3 + 3, so two ulps of the largest term bound the error.
    close(k.read(out), q.reshape(-1), 2 * ulps32(np.abs(p * 1.5) + 6).reshape(-1), 0,
          "scaled, offset and clamped points")
    i = np.arange(n)
    lo, hi = np.array([5, 250])[i & 1], np.array([9, 1])[i & 1]
    want = -7 * 1000000 + np.array([11, -22, 333])[i % 3] * 1000 + lo * 3 + hi + (i < 100)
    same(k.read(tags), want.astype(np.int32), "fields of the struct arguments")


# Itanium-mangled names of the explicit instantiations of scale_offset<T, Acc>: launched by
# name, as a host program does with hipModuleGetFunction.
SCALE_OFFSET = {
    "i8": ("_Z12scale_offsetIaiEvPKT_PS0_T0_S4_i", np.int8),
    "u16": ("_Z12scale_offsetItjEvPKT_PS0_T0_S4_i", np.uint16),
    "f16": ("_Z12scale_offsetIDF16_DF16_EvPKT_PS0_T0_S4_i", np.float16),
    "f64": ("_Z12scale_offsetIddEvPKT_PS0_T0_S4_i", np.float64),
}


@case("idioms")
def scale_offset_templates(k: KernelRun) -> None:
    n, block = 1111, 64
    grid = 3 * block   # fewer work-items than elements: the grid-stride loop covers the rest
    for key, (name, dtype) in SCALE_OFFSET.items():
        if dtype().dtype.kind == "f":
            x = k.rng.uniform(-10, 10, n).astype(dtype)
            scale, offset = dtype(-1.75), dtype(0.625)
        else:
            info = np.iinfo(dtype)
            x = k.rng.integers(info.min, int(info.max) + 1, n).astype(dtype)
            scale, offset = 77, 1000
        out = k.output(dtype, n)
        k.launch(name, [k.input(x), out, scale, offset, n], grid, block)
        got = k.read(out)
        if dtype().dtype.kind == "f":
            exact = x.astype(np.float64) * float(scale) + float(offset)
            # x * scale + offset in the element type, fused or not: one rounding of the product
            # and one of the sum at most
            ulp = lambda v: np.spacing(np.abs(v).astype(dtype)).astype(np.float64)  # noqa: E731
            close(got, exact, ulp(x.astype(np.float64) * float(scale)) + ulp(exact), 0, key)
        else:
            # integer arithmetic in Acc (int / unsigned), converted back with wrap-around
            want = (x.astype(np.int64) * scale + offset).astype(dtype)
            same(got, want, key)


@case("idioms")
def generic_pointers(k: KernelRun) -> None:
    n, block = 300, 128
    x = k.rng.integers(-50, 51, (n, 4)).astype(np.float32)
    out = k.output(np.float32, 4 * n)
    k.launch("generic_pointers", [k.input(x), out, n], grid_for(n, block), block)

    def horner(v):
        s = np.zeros(len(v))
        for j in range(4):
            s = s * 0.5 + v[:, j]
        return s

    g, sh, pr = horner(x.astype(np.float64)), horner(x + 1.0), horner(2.0 * (x + 1.0))
    mixed = np.where(np.arange(n) & 1, pr, sh)
    # small integers halved four times: every float32 operation is exact
    same(k.read(out), np.stack([g, sh, pr, mixed], 1).reshape(-1).astype(np.float32),
         "Horner sums over global, shared, private and mixed generic pointers")


@case("idioms")
def last_block_sum(k: KernelRun) -> None:
    n, block = 1000, 128
    blocks = grid_for(n, block) // block
    x = k.rng.integers(-1000, 1001, n).astype(np.float32)
    partial, total = k.output(np.float32, blocks), k.output(np.float32, 1)
    ticket = k.output(np.uint32, 1, initial=0)
    padded = np.zeros(blocks * block)
    padded[:n] = x
    for launch in range(2):   # the last block resets the ticket for the next launch
        k.launch("last_block_sum", [k.input(x), partial, ticket, total, n], blocks * block, block)
        # sums of integers below 2**24: exact in any order
        same(k.read(partial), padded.reshape(blocks, block).sum(1).astype(np.float32),
             f"launch {launch}: block sums")
        same(k.read(total), np.array([x.astype(np.float64).sum()], np.float32),
             f"launch {launch}: total")
        same(k.read(ticket), np.array([0], np.uint32), f"launch {launch}: ticket reset")


@case("idioms")
def segment_reduce(k: KernelRun) -> None:
    n, block = 300, 128
    x = k.rng.integers(-100, 101, n).astype(np.float32)
    size = grid_for(n, block)
    waves = -(-n // k.wave)
    out16, out32 = k.output(np.float32, n), k.output(np.float32, -(-n // 32))
    wave_max = k.output(np.float32, waves)
    k.launch("segment_reduce", [k.input(x), out16, out32, wave_max, n], size, block)
    padded = np.zeros(size)
    padded[:n] = x
    # sums of small integers: exact in any order
    same(k.read(out16), np.repeat(padded.reshape(-1, 16).sum(1), 16)[:n].astype(np.float32),
         "xor butterfly within 16 lanes")
    same(k.read(out32), padded.reshape(-1, 32).sum(1)[:-(-n // 32)].astype(np.float32),
         "shuffle-down tree within 32 lanes")
    maxed = np.full(waves * k.wave, -np.inf)
    maxed[:n] = x
    same(k.read(wave_max), maxed.reshape(waves, k.wave).max(1).astype(np.float32),
         "xor butterfly over the wave")


@case("idioms")
def ballot_bits(k: KernelRun) -> None:
    n, block = 300, 128
    x = k.rng.integers(0, 100, n).astype(np.int32)
    x[64:128] = 0          # a wave (or two) where no lane votes
    x[128:160] = 99        # and lanes where every one does
    waves = -(-n // k.wave)
    first, last, count = (k.output(np.int32, waves) for _ in range(3))
    reversed_, rank = k.output(np.uint64, waves), k.output(np.int32, n)
    k.launch("ballot_bits", [k.input(x), 80, first, last, count, reversed_, rank, n],
             grid_for(n, block), block)
    hit = np.zeros(waves * k.wave, bool)
    hit[:n] = x > 80
    masks = [sum(1 << int(b) for b in np.flatnonzero(w)) for w in hit.reshape(waves, k.wave)]
    same(k.read(first), np.array([(m & -m).bit_length() - 1 for m in masks], np.int32), "ffs - 1")
    same(k.read(last), np.array([m.bit_length() - 1 for m in masks], np.int32), "last set lane")
    same(k.read(count), np.array([bin(m).count("1") for m in masks], np.int32), "popcount")
    same(k.read(reversed_), np.array([int(f"{m:064b}"[::-1], 2) for m in masks], np.uint64),
         "bit-reversed mask")
    lanes = [i % k.wave for i in range(n)]
    before = np.array([bin(masks[i // k.wave] & ((1 << lanes[i]) - 1)).count("1")
                       for i in range(n)])
    same(k.read(rank), np.where(hit[:n], before, -1).astype(np.int32), "rank among voters")


@case("idioms")
def int128_math(k: KernelRun) -> None:
    n, block = 130, 64
    a = k.rng.integers(0, 2**64, n, dtype=np.uint64)
    b = k.rng.integers(0, 2**64, n, dtype=np.uint64)
    d = k.rng.integers(1, 2**64, n, dtype=np.uint64)
    d[::3] = k.rng.integers(1, 1000, len(d[::3]), dtype=np.uint64)   # quotients above 2**64
    d[1::7] = 1
    s = k.rng.integers(-2**63, 2**63, n, dtype=np.int64)
    a[0], b[0], d[0], s[0] = 2**64 - 1, 2**64 - 1, 2**64 - 1, -2**63
    out = k.output(np.uint64, 6 * n)
    k.launch("int128_math", [k.input(a), k.input(b), k.input(d), k.input(s), out, n],
             grid_for(n, block), block)
    want = []
    for ai, bi, di, si in zip(a.tolist(), b.tolist(), d.tolist(), s.tolist()):
        p = ai * bi
        bs, ds = bi - (bi >> 63 << 64), di - (di >> 63 << 64)   # the same bits as int64
        sp = si * bs
        sq = abs(sp) // abs(ds) * (1 if (sp < 0) == (ds < 0) else -1)   # toward zero
        mask = 2**64 - 1
        want += [(p // di) & mask, (p // di) >> 64, p % di, sq & mask,
                 (sq >> 64) & mask, (sp - sq * ds) & mask]
    same(k.read(out), np.array(want, np.uint64), "128-bit quotients and remainders")


@case("idioms")
def register_array(k: KernelRun) -> None:
    n, block = 200, 64
    x = k.rng.integers(-1000, 1001, (n, 16)).astype(np.float32)
    idx = k.rng.integers(0, 256, n).astype(np.int32)
    out = k.output(np.float32, 2 * n)
    k.launch("register_array", [k.input(x), k.input(idx), out, n], grid_for(n, block), block)
    r = x.astype(np.float64)
    rows = np.arange(n)
    j = idx & 15
    r[rows, j] += 100
    r[rows, (j * 7 + 3) & 15] *= -1
    picked = r[rows, (idx >> 4) & 15]
    total = (r * np.arange(1, 17)).sum(1)
    # integers below 2**24 throughout: exact in float32
    same(k.read(out), np.stack([picked, total], 1).reshape(-1).astype(np.float32),
         "dynamically indexed register array")


@case("idioms")
def recursive_depth(k: KernelRun) -> None:
    n, block, length = 150, 64, 37
    v = k.rng.integers(-500, 501, n + length).astype(np.float32)
    depth = (np.arange(n) % 6).astype(np.int32)
    out = k.output(np.float32, n)
    k.launch("recursive_depth", [k.input(v), k.input(depth), out, length, n],
             grid_for(n, block), block)
    want = np.array([v[i:i + length].astype(np.float64).sum() for i in range(n)])
    same(k.read(out), want.astype(np.float32), "pairwise sums (integers: exact in any order)")


VM_OPS = ("PUSH_X PUSH_C ADD SUB MUL NEG ABS MAX MIN DUP SWAP JNEG JMP DEC HALT").split()
VM_PROGRAM = [("PUSH_X", 0), ("ABS", 0),                             # a = |x|
              ("PUSH_C", 0), ("SUB", 0), ("DUP", 0), ("JNEG", 7),    # do a -= 1.5 until < 0
              ("JMP", 2),
              ("PUSH_X", 0), ("PUSH_C", 1), ("MUL", 0), ("SWAP", 0), ("SUB", 0),   # x/4 - a
              ("PUSH_C", 2), ("MAX", 0), ("PUSH_C", 3), ("MIN", 0), ("NEG", 0),    # -clamp
              ("DEC", 0), ("ADD", 0), ("HALT", 0)]
VM_CONSTANTS = np.array([1.5, 0.25, -2.0, 5.0], np.float32)


def vm_reference(x: np.float32) -> tuple[np.float32, int]:
    """bytecode_vm's interpreter, one element, in float32."""
    stack: list[np.float32] = []
    pc = executed = 0
    counter = np.float32(0)
    while executed < 1000:
        op, arg = VM_PROGRAM[pc]
        pc += 1
        executed += 1
        if op == "PUSH_X":
            stack.append(x)
        elif op == "PUSH_C":
            stack.append(VM_CONSTANTS[arg])
        elif op in ("ADD", "SUB", "MUL", "MAX", "MIN"):
            top = stack.pop()
            fn = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "MAX": np.fmax,
                  "MIN": np.fmin}[op]
            stack[-1] = fn(stack[-1], top, dtype=np.float32)
        elif op == "NEG":
            stack[-1] = -stack[-1]
        elif op == "ABS":
            stack[-1] = abs(stack[-1])
        elif op == "DUP":
            stack.append(stack[-1])
        elif op == "SWAP":
            stack[-1], stack[-2] = stack[-2], stack[-1]
        elif op == "JNEG":
            if stack.pop() < 0:
                pc = arg
        elif op == "JMP":
            pc = arg
        elif op == "DEC":
            counter = np.float32(counter - 1)
            stack.append(counter)
        else:
            break
    return (stack[-1] if stack else np.float32(0)), executed


@case("idioms")
def bytecode_vm(k: KernelRun) -> None:
    n, block = 170, 64
    x = k.rng.uniform(-20, 20, n).astype(np.float32)
    program = np.array([(VM_OPS.index(op), arg) for op, arg in VM_PROGRAM], np.int32)
    out, steps = k.output(np.float32, n), k.output(np.int32, n)
    k.launch("bytecode_vm", [k.input(program), k.input(VM_CONSTANTS), k.input(x), out, steps, n],
             grid_for(n, block), block)
    results = [vm_reference(v) for v in x]
    # one float32 operation per instruction, none fusable: bitwise equal
    same(k.read(out), np.array([r for r, _ in results], np.float32), "interpreted results")
    same(k.read(steps), np.array([s for _, s in results], np.int32), "instructions executed")


@case("idioms")
def float_atomic_tricks(k: KernelRun) -> None:
    n, block, buckets = 500, 128, 7
    v = k.rng.uniform(-100, 100, n).astype(np.float32)
    key = k.rng.integers(0, buckets, n).astype(np.int32)
    v[key == 3] = -np.abs(v[key == 3])          # a bucket of negatives only
    v[v == 0] = 1.0                              # -0.0 would defeat the sign trick
    d = k.rng.standard_normal(n) * 1e6
    fmax_out = k.output(np.float32, buckets, initial=-np.inf)
    dmin_out = k.output(np.float64, buckets, initial=np.inf)
    k.launch("float_atomic_tricks", [k.input(v), k.input(d), k.input(key), fmax_out, dmin_out, n],
             grid_for(n, block), block)
    same(k.read(fmax_out), np.array([v[key == b].max() for b in range(buckets)], np.float32),
         "float max through int max / uint min")
    same(k.read(dmin_out), np.array([d[key == b].min() for b in range(buckets)]),
         "double min through a 64-bit CAS loop")


@case("idioms")
def grid_stride_2d(k: KernelRun) -> None:
    rows, cols, batches = 37, 53, 3
    x = k.rng.integers(-10000, 10000, (batches, rows, cols)).astype(np.int32)
    out = k.output(np.int32, x.size)
    # 2 x 2 blocks of 16 x 8 per batch matrix: each work-item visits several elements
    k.launch("grid_stride_2d", [k.input(x), out, rows, cols], (32, 16, batches), (16, 8, 1))
    want = x * 2 + np.arange(batches)[:, None, None] * 1000 + 2 * 10 + 2
    same(k.read(out), want.reshape(-1), "every element of every batch, once")


@case("idioms")
def clock_elapsed(k: KernelRun) -> None:
    n, block = 100, 64
    work = (50 + (np.arange(n) % 7) * 20).astype(np.int32)
    elapsed, wall = k.output(np.int64, n), k.output(np.int64, n)
    sink = k.output(np.int32, n)
    k.launch("clock_elapsed", [k.input(work), elapsed, wall, sink, n], grid_for(n, block), block)
    acc = np.arange(n, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for i in range(n):
            for _ in range(work[i]):
                acc[i] = acc[i] * np.uint32(1103515245) + np.uint32(12345)
    same(k.read(sink), acc.view(np.int32), "the timed loop's result")
    # The shader clock counts cycles: a loop of 50 or more iterations takes some. The constant-
    # rate clock may not tick in that time, but it does not go back.
    got = k.read(elapsed)
    assert (got > 0).all(), f"clock64 did not advance over the loop: {got[got <= 0][:8]}"
    assert (k.read(wall) >= 0).all(), "wall_clock64 went back"


@case("idioms")
def register_array_uniform(k: KernelRun) -> None:
    n, block = 200, 64
    blocks = grid_for(n, block) // block
    x = k.rng.integers(-1000, 1001, (n, 16)).astype(np.float32)
    dx = k.rng.integers(-10**6, 10**6, (n, 12)).astype(np.float64)
    index = k.rng.integers(0, 4096, blocks).astype(np.int32)
    index[0] = 0x5a5   # the written element read back: r[5] and d[5 % 12] both ways
    out, dout = k.output(np.float32, 2 * n), k.output(np.float64, n)
    k.launch("register_array_uniform", [k.input(x), k.input(dx), k.input(index), out, dout, n],
             grid_for(n, block), block)
    j = np.repeat(index, block)[:n]
    rows = np.arange(n)
    r, d = x.astype(np.float64), dx.copy()
    r[rows, j & 15] = r[rows, (j >> 4) & 15] * 2
    d[rows, j % 12] += d[rows, (j >> 4) % 12]
    want = np.stack([r[rows, (j >> 8) & 15], r[rows, j & 15] - r[rows, ((j >> 8) + 1) & 15]], 1)
    # integers far below 2**24 (float) and 2**53 (double): every operation is exact
    same(k.read(out), want.reshape(-1).astype(np.float32),
         "float array indexed by a wave-uniform value")
    same(k.read(dout), d[rows, (j >> 8) % 12] * 3 + d[rows, j % 12],
         "double array indexed by a wave-uniform value")


@case("idioms")
def dpp_wave_scan(k: KernelRun) -> None:
    n, block = 300, 128   # whole waves: every lane the DPP moves read exists
    size = grid_for(n, block)
    x = k.rng.integers(-1000, 1001, n).astype(np.int32)
    inclusive, exclusive, row_total = (k.output(np.int32, n) for _ in range(3))
    k.launch("dpp_wave_scan", [k.input(x), inclusive, exclusive, row_total, n], size, block)
    v = np.zeros(size, np.int64)
    v[:n] = x
    scan = np.cumsum(v.reshape(-1, k.wave), 1).reshape(-1)[:n]
    same(k.read(inclusive), scan.astype(np.int32), "inclusive scan of each wave")
    same(k.read(exclusive), (scan - x).astype(np.int32), "exclusive scan of each wave")
    same(k.read(row_total), np.repeat(v.reshape(-1, 16).sum(1), 16)[:n].astype(np.int32),
         "sum of each row of 16 lanes")


@case("idioms")
def lds_double_min(k: KernelRun) -> None:
    n, block = 500, 128
    blocks = grid_for(n, block) // block
    d = k.rng.standard_normal(n) * 1e3
    out = k.output(np.float64, blocks)
    k.launch("lds_double_min", [k.input(d), out, n], blocks * block, block)
    padded = np.full(blocks * block, np.inf)
    padded[:n] = d
    same(k.read(out), padded.reshape(blocks, block).min(1), "block minimum by 64-bit LDS CAS")


# ================================================================================================
# fastmath.hip (-ffast-math -fgpu-flush-denormals-to-zero). Tolerances of the approximate
# functions are those CUDA's programming guide states for its intrinsic versions (__expf,
# __logf, __sinf, __fdividef), which HIP's fast math maps to the same hardware units.


@case("fastmath")
def fast_normalize(k: KernelRun) -> None:
    n, block = 257, 64
    p = k.rng.uniform(-50, 50, (n, 3)).astype(np.float32)
    unit, length = k.output(np.float32, 3 * n), k.output(np.float32, n)
    k.launch("fast_normalize", [k.input(p), unit, length, n], grid_for(n, block), block)
    p64 = p.astype(np.float64)
    norm = np.sqrt((p64 ** 2).sum(1))
    # |p|^2 in three roundings (any order), a square root and a reciprocal good to an ulp each,
    # one more rounding for the product: under 6 ulps relative
    close(k.read(length), norm, 0, 6 * F32_EPS, "length")
    close(k.read(unit), (p64 / norm[:, None]).reshape(-1), 6 * F32_EPS, 0, "unit vector")


@case("fastmath")
def fast_transcendentals(k: KernelRun) -> None:
    n, block = 300, 128
    x = k.rng.uniform(-np.pi, np.pi, n).astype(np.float32)
    y = k.rng.uniform(0.5, 2.0, n).astype(np.float32)
    out = k.output(np.float32, 6 * n)
    k.launch("fast_transcendentals", [k.input(x), k.input(y), out, n], grid_for(n, block), block)
    got = k.read(out).reshape(n, 6)
    a, b = x.astype(np.float64), y.astype(np.float64)
    # __expf: 2 + floor(|1.173 x|) ulps
    close(got[:, 0], np.exp(a), (2 + np.floor(np.abs(1.173 * a))) * ulps32(np.exp(a)), 0, "expf")
    # __logf on [0.5, 2] and __sinf, __cosf on [-pi, pi]: 2**-21.41 absolute
    close(got[:, 1], np.log(b), 2.0 ** -21.41, 0, "logf")
    close(got[:, 2], np.sin(a), 2.0 ** -21.41, 0, "sinf")
    close(got[:, 3], np.cos(a), 2.0 ** -21.41, 0, "cosf")
    # __fdividef: 2 ulps; a fast square root: one ulp
    close(got[:, 4], a / b, 2 * ulps32(a / b), 0, "x / y")
    close(got[:, 5], np.sqrt(b), ulps32(np.sqrt(b)), 0, "sqrtf")


def flush32(x: np.ndarray) -> np.ndarray:
    """Single-precision denormals replaced by zero of the same sign."""
    with np.errstate(over="ignore"):
        x = np.asarray(x, np.float32).copy()
    tiny = np.abs(x) < np.finfo(np.float32).tiny
    x[tiny] = np.copysign(np.float32(0), x[tiny])
    return x


@case("fastmath")
def flush_denormals(k: KernelRun) -> None:
    n, block = 200, 64
    tiny = float(np.finfo(np.float32).tiny)
    a = (k.rng.uniform(0.5, 4, n) * tiny * np.where(np.arange(n) % 2, 1, 1e-3)).astype(np.float32)
    a *= np.where(np.arange(n) % 3 == 0, -1, 1).astype(np.float32)
    b = k.rng.uniform(0.25, 2, n).astype(np.float32)
    scale = np.where(np.arange(n) % 5 < 2, 1e-2, 1)
    c = (k.rng.uniform(-4, 4, n) * tiny * scale).astype(np.float32)
    d = k.rng.uniform(-4, 4, n) * 2.0 ** -1000
    out, dout = k.output(np.float32, 3 * n), k.output(np.float64, n)
    k.launch("flush_denormals", [k.input(a), k.input(b), k.input(c), k.input(d), out, dout, n],
             grid_for(n, block), block)
    fa, fb, fc = flush32(a).astype(np.float64), flush32(b).astype(np.float64), flush32(c)
    product = flush32(fa * fb)
    want = np.stack([product, flush32(fa + fc), flush32(product.astype(np.float64) + fc)], 1)
    got = k.read(out).reshape(n, 3)
    # products and sums of normal inputs round once (fused or not: the product is exact in
    # float64 and a fused a*b+c rounds once); flushing is exact
    close(got[:, :2], want[:, :2], ulps32(want[:, :2]), 0, "flushed product and sum")
    fused = flush32(fa * fb + fc.astype(np.float64))
    ok = (np.abs(got[:, 2] - want[:, 2]) <= ulps32(want[:, 2])) | \
        (np.abs(got[:, 2] - fused) <= ulps32(fused))
    assert ok.all(), f"a*b + c: {np.flatnonzero(~ok)[:8]} {got[~ok, 2][:4]} {want[~ok, 2][:4]}"
    same(k.read(dout), d * 2.0 ** -30, "double denormals are kept")


@case("fastmath")
def fast_row_sum(k: KernelRun) -> None:
    rows, cols, block = 150, 45, 64
    m = k.rng.integers(-100, 101, (rows, cols)).astype(np.float32)
    w = k.rng.integers(-8, 9, cols).astype(np.float32)
    out = k.output(np.float32, rows)
    k.launch("fast_row_sum", [k.input(m), k.input(w), out, cols, rows], grid_for(rows, block),
             block)
    # small integers: exact in any association
    same(k.read(out), (m.astype(np.float64) @ w).astype(np.float32), "weighted row sums")


@case("fastmath")
def flush_uniform_and_units(k: KernelRun) -> None:
    n, block = 150, 64
    tiny = np.float32(np.finfo(np.float32).tiny)
    e = k.rng.uniform(-135, -120, n).astype(np.float32)
    y = np.ldexp(k.rng.uniform(1, 2, n), k.rng.integers(120, 128, n)).astype(np.float32)
    y[::4] *= np.float32(-1)
    s = (k.rng.uniform(0.01, 3, n) * tiny).astype(np.float32)    # denormal and normal
    kk = k.rng.integers(-260, -245, n).astype(np.int32)
    a, b, c = np.float32(0.75) * tiny, np.float32(0.5), np.float32(0.25) * tiny
    uniform, out = k.output(np.float32, 4), k.output(np.float32, 4 * n)
    k.launch("flush_uniform_and_units", [k.input(e), k.input(y), k.input(s), k.input(kk), a, b, c,
                                         uniform, out, n], grid_for(n, block), block)
    # a is a denormal, so flushed to zero as an input: every result is 0 (or -0)
    same(k.read(uniform), np.zeros(4, np.float32), "uniform arithmetic on a flushed denormal")
    got = k.read(out).reshape(n, 4)
    y64 = y.astype(np.float64)
    exp2 = flush32(np.exp2(e.astype(np.float64)))
    rcp = flush32(1 / y64)
    root = np.sqrt(flush32(s).astype(np.float64))
    scaled = flush32(np.ldexp(y64, kk))
    # v_exp_f32, v_rcp_f32, v_sqrt_f32 are good to about an ulp; results below the normal
    # range are flushed (ulps32 of 0 is the smallest denormal, so a flushed result must be 0)
    close(got[:, 0], exp2, ulps32(exp2), 0, "exp2 (denormal results flushed)")
    close(got[:, 1], rcp, ulps32(rcp), 0, "rcp (denormal results flushed)")
    close(got[:, 2], root, ulps32(root), 0, "sqrt (denormal inputs flushed)")
    same(got[:, 3], scaled.astype(np.float32), "ldexp (denormal results flushed)")


@case("fastmath")
def flush_mixed(k: KernelRun) -> None:
    n, block = 140, 64   # whole rows of 16 lanes in every wave for the DPP shift
    size = grid_for(n, block)
    tiny = float(np.finfo(np.float32).tiny)
    h = k.rng.uniform(-4, 4, (n, 2)).astype(np.float16)
    h[::4, 0] = 0                                         # a * b = 0: the result is z alone
    z = k.rng.uniform(-2, 2, n).astype(np.float32)
    z[::3] = (k.rng.uniform(-0.9, 0.9, len(z[::3])) * tiny).astype(np.float32)   # denormals
    out = k.output(np.float32, 4 * n)
    k.launch("flush_mixed", [k.input(h), k.input(z), out, n], size, block)
    a, b = h[:, 0].astype(np.float64), h[:, 1].astype(np.float64)
    fz = flush32(z).astype(np.float64)
    lanes = np.arange(n)
    shifted = np.where(lanes % 16 == 0, 0.0, fz[lanes - 1])
    # products of halves are exact in float32: one rounding each (z * 0.5 of a flushed z is
    # exact or a denormal flushed again)
    want = np.stack([a * b + fz, a * 0.5 - fz, a * a - flush32(fz * 0.5), shifted + fz], 1)
    same(k.read(out), flush32(want.astype(np.float32)).reshape(-1),
         "mixed-precision and DPP float results with f32 denormals flushed")


@case("fastmath")
def flush_dot2(k: KernelRun) -> None:
    # How v_dot2_f32_f16 treats denormals under a flushing MODE is not documented: the
    # simulator refuses it rather than guess, and the queue stops naming the instruction.
    n = 64
    h = k.rng.uniform(-2, 2, 4 * n).astype(np.float16)
    c = k.rng.uniform(-2, 2, n).astype(np.float32)
    _stops_naming(k, "flush_dot2", [k.input(h[:2 * n]), k.input(h[2 * n:]), k.input(c),
                                    k.output(np.float32, n), n], "v_dot2")


# ================================================================================================
# ftz.hip (-fgpu-flush-denormals-to-zero)


@case("ftz")
def ftz_precise(k: KernelRun) -> None:
    n, block = 300, 128
    x = k.rng.uniform(-20, 20, n).astype(np.float32)
    y = np.ldexp(k.rng.uniform(1, 2, n), k.rng.integers(-100, 100, n)).astype(np.float32)
    y[:4] = [3.0, 1.0000001, 0.99999994, 2.0 ** -125]
    out = k.output(np.float32, 5 * n)
    k.launch("ftz_precise", [k.input(x), k.input(y), out, n], grid_for(n, block), block)
    got = k.read(out).reshape(n, 5)
    a, b = x.astype(np.float64), y.astype(np.float64)
    quotient = flush32(a / b)
    # division and square root are correctly rounded (HIP's default), results that would be
    # denormal flushed; expf and logf are good to within two ulps (ocml's documented bounds,
    # which clang's inline expansions meet)
    same(got[:, 0], quotient, "x / y")
    same(got[:, 1], np.sqrt(b).astype(np.float32), "sqrtf")
    close(got[:, 2], np.exp(a), 2 * ulps32(np.exp(a)), 0, "expf")
    close(got[:, 3], np.log(b), 2 * ulps32(np.log(b)), 0, "logf")
    same(got[:, 4], flush32(1 / b), "1 / y")


@case("idioms")
def grid_barrier_phases(k: KernelRun) -> None:
    n, block, blocks = 1000, 64, 4
    x = k.rng.integers(-1000, 1000, n).astype(np.int32)
    a, b = k.output(np.int32, n), k.output(np.int32, n)
    sync = k.output(np.uint32, 2, initial=0)
    k.launch("grid_barrier_phases", [k.input(x), a, b, sync, n], blocks * block, block)
    i = np.arange(n)
    a1 = x * 3
    b1 = a1[(i + 17) % n] + a1[n - 1 - i]
    same(k.read(b), b1, "phase 2 saw every workgroup's phase 1")
    same(k.read(a), b1[(i * 7) % n], "phase 3 saw every workgroup's phase 2")
    same(k.read(sync), np.array([0, 2], np.uint32), "two barriers passed, the count reset")


@case("idioms")
def append_compact(k: KernelRun) -> None:
    n, block = 500, 128
    blocks = grid_for(n, block) // block
    x = k.rng.integers(0, 100, n).astype(np.int32)
    kept = k.output(np.int32, blocks * block, initial=-1)
    counts = k.output(np.int32, blocks)
    k.launch("append_compact", [k.input(x), 60, kept, counts, n], blocks * block, block)
    got_counts, got = k.read(counts), k.read(kept).reshape(blocks, block)
    for blk in range(blocks):
        chunk = x[blk * block:(blk + 1) * block]
        want = np.sort(chunk[chunk > 60])
        assert got_counts[blk] == len(want), (blk, got_counts[blk], len(want))
        # slots are handed out in some order: the kept values, sorted, are the passing ones
        same(np.sort(got[blk, :len(want)]), want, f"block {blk}: kept elements")
        same(got[blk, len(want):], np.full(block - len(want), -1, np.int32),
             f"block {blk}: slots past the count untouched")


@case("idioms")
def big_private_histogram(k: KernelRun) -> None:
    n, block, per_item = 70, 64, 24
    keys = k.rng.integers(0, 100000, (n, per_item)).astype(np.int32)
    out = k.output(np.int32, 2 * n)
    k.launch("big_private_histogram", [k.input(keys), out, per_item, n], grid_for(n, block), block)
    want = []
    for row in keys.tolist():
        hist = [j & 3 for j in range(400)]
        for kk, key in enumerate(row):
            hist[key % 400] += key
            hist[(key * 13) % 400] ^= kk       # key * 13 stays below 2**31
        best, where = 0, 0
        for j, h in enumerate(hist):
            if h > best:
                best, where = h, j
        want += [best, where + hist[row[0] % 400]]
    same(k.read(out), np.array(want, np.int32), "per-thread histogram in scratch")


@case("fastmath")
def fast_half_units(k: KernelRun) -> None:
    n, block = 200, 64
    x = k.rng.uniform(-20, 15, n).astype(np.float16)
    y = np.ldexp(k.rng.uniform(1, 2, n), k.rng.integers(-20, 15, n)).astype(np.float16)
    out = k.output(np.float16, 6 * n)
    k.launch("fast_half_units", [k.input(x), k.input(y), out, n], grid_for(n, block), block)
    got = k.read(out).reshape(n, 6)
    a, b = x.astype(np.float64), y.astype(np.float64)

    def half(v):
        with np.errstate(over="ignore"):
            return np.asarray(v).astype(np.float16)

    def ulps16(v):
        with np.errstate(invalid="ignore"):   # the spacing of an infinity is NaN
            return np.spacing(np.abs(half(v))).astype(np.float64)

    # the f16 units (v_exp_f16, v_log_f16, v_sqrt_f16, v_rcp_f16, v_rsq_f16) are good to
    # about an ulp of the f16 result; a fast reciprocal may also be computed in f32 and
    # rounded: one ulp either way. exp2 results below the f16 normal range are denormals
    # (kept), whose ulp is the smallest denormal; reciprocals past 65504 are infinite.
    for col, want, what in ((0, np.exp2(a), "exp2"), (1, np.log2(b), "log2"),
                            (2, np.sqrt(b), "sqrt"), (3, 1 / b, "1 / y"),
                            (4, 1 / np.sqrt(b), "rsqrt")):
        close(got[:, col], half(want), ulps16(want), 0, what)
    fused = a * a + 0.5
    # a * a + 0.5 fused (one rounding) or not (two)
    close(got[:, 5], fused, ulps16(a * a) + ulps16(fused), 0, "a * a + 0.5")


@case("idioms")
def generic_atomics(k: KernelRun) -> None:
    n, block = 450, 128
    blocks = grid_for(n, block) // block
    x = k.rng.integers(0, 1000, n).astype(np.int32)
    counts, total = k.output(np.int32, blocks), k.output(np.int32, 1, initial=0)
    ftotal, tickets = k.output(np.float32, 1, initial=0), k.output(np.int32, n)
    k.launch("generic_atomics", [k.input(x), counts, total, ftotal, tickets, n],
             blocks * block, block)
    padded = np.zeros(blocks * block, np.int64)
    padded[:n] = x & 7
    same(k.read(counts), padded.reshape(blocks, block).sum(1).astype(np.int32),
         "LDS counters updated through generic pointers")
    same(k.read(total), np.array([n], np.int32), "a global counter through a generic pointer")
    # small integers: float sums exact in any order
    same(k.read(ftotal), np.array([(x & 15).sum()], np.float32), "float atomics, LDS then global")
    got = k.read(tickets)
    for blk in range(blocks):
        # each ticket is the block's count before this work-item's add: in the order the adds
        # ran (by ticket; a zero amount shares its ticket with the next add), the tickets are
        # the exclusive prefix sums of the amounts
        lo, hi = blk * block, min((blk + 1) * block, n)
        order = np.lexsort(((x[lo:hi] & 7), got[lo:hi]))
        amounts = (x[lo:hi] & 7)[order]
        same(np.sort(got[lo:hi]), (np.cumsum(amounts) - amounts).astype(np.int32),
             f"block {blk}: tickets")


@case("idioms")
def full_lds(k: KernelRun) -> None:
    n, block = 1500, 1024
    x = k.rng.integers(-100, 100, n).astype(np.float32)
    out = k.output(np.float32, n)
    k.launch("full_lds", [k.input(x), out, n], grid_for(n, block), block, dynamic_lds=16384)
    big = (np.arange(12288) % 97).astype(np.float64)
    rest = (np.arange(4096) % 89).astype(np.float64)
    want = []
    for blk in range(grid_for(n, block) // block):
        v = np.zeros(block)
        v[:max(0, min(block, n - blk * block))] = x[blk * block:(blk + 1) * block]
        b, r = big.copy(), rest.copy()
        t = np.arange(block)
        b[12287 - t] += v
        r[4095 - 4 * t] -= v
        want.append(b[12287 - t] * 2 + r[4095 - 4 * t] + b[t * 12] + r[t * 4])
    # small integers: exact
    same(k.read(out), np.concatenate(want)[:n].astype(np.float32), "64 KiB of LDS")


# ================================================================================================
# noieee.hip (-ffast-math -fgpu-flush-denormals-to-zero -mno-amdgpu-ieee)


@case("noieee")
def output_modifiers(k: KernelRun) -> None:
    n, block = 260, 64
    x, y, z = (k.rng.uniform(-2, 2, n).astype(np.float32) for _ in range(3))
    x[:3], y[:3] = [1.5, -0.75, 0.5], [1.5, 0.75, 0.25]     # a zero difference, sum, product
    out = k.output(np.float32, 6 * n)
    k.launch("output_modifiers", [k.input(x), k.input(y), k.input(z), out, n],
             grid_for(n, block), block)
    got = k.read(out).reshape(n, 6)
    f = np.float32
    # one float32 rounding each, then an exact scaling by a power of two (the output modifier
    # or a multiply) and clamping: bitwise equal
    same(got[:, 0], (x + y) * f(2), "(a + b) * 2")
    same(got[:, 1], (x * y) * f(0.5), "(a * b) * 0.5")
    same(got[:, 2], (x - y) * f(4), "(a - b) * 4")
    same(got[:, 4], np.clip(x + z, f(0), f(1)) * f(2), "clamp(a + c) * 2")
    same(got[:, 5], np.maximum(x, z) - np.minimum(y, z), "max - min")
    exact = x.astype(np.float64) * y + z
    # a * b + c fused or not, then clamped (clamping never adds error)
    close(got[:, 3], np.clip(exact, 0, 1), ulps32(x * y) + ulps32(exact), 0, "clamp(a * b + c)")


# ================================================================================================
# fpatomics.hip (-munsafe-fp-atomics)


@case("fpatomics")
def unsafe_fp_atomics(k: KernelRun) -> None:
    # gfx12 has no f64 min/max atomics: compare-and-swap loops, all lanes on one address
    n, block, nbins = 260, 128, 23
    x = k.rng.integers(-64, 65, n).astype(np.float32)       # integers: exact in any order
    d = k.rng.integers(-2**40, 2**40, n).astype(np.float64)
    fsum, dsum = k.output(np.float32, 1, initial=0), k.output(np.float64, 2, initial=0)
    dmax = k.output(np.float64, 1, initial=-np.inf)
    dmin = k.output(np.float64, 1, initial=np.inf)
    bins = k.output(np.float32, nbins, initial=0)
    k.launch("unsafe_fp_atomics", [k.input(x), k.input(d), fsum, dsum, dmax, dmin, bins, nbins,
                                   n], grid_for(n, block), block)
    same(k.read(fsum), np.array([x.sum()], np.float32), "float atomic add")
    same(k.read(dsum), np.array([d.sum(), d.sum()]), "double atomic add, global and LDS")
    same(k.read(dmax), np.array([d.max()]), "double atomic max")
    same(k.read(dmin), np.array([d.min()]), "double atomic min")
    want = np.zeros(nbins)
    np.add.at(want, (np.arange(n) * 7) % nbins, x)
    blocks = grid_for(n, block) // block
    for blk in range(blocks):
        lanes = np.arange(blk * block, min((blk + 1) * block, n))
        np.add.at(want, np.arange(16), np.bincount(lanes & 15, x[lanes], 16))
    same(k.read(bins), want.astype(np.float32), "float atomics through generic pointers")


@case("idioms")
def checked_divide(k: KernelRun) -> None:
    n, block = 300, 64
    num = k.rng.integers(-10**6, 10**6, n).astype(np.int32)
    den = k.rng.integers(1, 1000, n).astype(np.int32) * np.where(np.arange(n) % 2, 1, -1)
    den = den.astype(np.int32)
    out = k.output(np.int32, n)
    k.launch("checked_divide", [k.input(num), k.input(den), out, n], grid_for(n, block), block)
    q = np.abs(num.astype(np.int64)) // np.abs(den) * np.sign(num) * np.sign(den)
    same(k.read(out), q.astype(np.int32), "no divisor is zero: no lane traps")
    # one lane takes the branch (_stops_naming runs one workgroup of 64): the queue stops
    den[37] = 0
    _stops_naming(k, "checked_divide", [k.input(num), k.input(den), out, n], "trap")


@case("idioms")
def row_gather(k: KernelRun) -> None:
    n, block = 300, 128
    size = grid_for(n, block)
    x = k.rng.integers(0, 1000, n).astype(np.int32)
    selectors = k.rng.permutation(16)
    selectors[3] = selectors[11]   # one source read twice
    sel = [int(s) for s in selectors]
    sel_lo = sum(s << (4 * j) for j, s in enumerate(sel[:8]))
    sel_hi = sum(s << (4 * j) for j, s in enumerate(sel[8:]))
    out = k.output(np.int32, n)
    k.launch("row_gather", [k.input(x), sel_lo, sel_hi, out, n], size, block)
    v = np.full(size, -1, np.int64)
    v[:n] = x
    lanes = np.arange(n)
    src = np.array(sel)[lanes & 15]
    want = v[(lanes & ~15) | src] + 1000 * src
    same(k.read(out), want.astype(np.int32), "each lane reads the selected lane of its row")


@case("idioms")
def indirect_struct_calls(k: KernelRun) -> None:
    n, block = 130, 64
    lo = (k.rng.integers(-16, 16, n) / 4).astype(np.float32)    # quarters: every sample exact
    which = k.rng.integers(0, 4, n).astype(np.int32)
    out = k.output(np.float64, n)
    k.launch("indirect_struct_calls", [k.input(lo), k.input(which), out, n], grid_for(n, block),
             block)
    want = []
    for i in range(n):
        steps, weight = 4 + (i & 3), 0.5 + (i & 1)
        h = 1.0 / steps
        shift = 0.5 if which[i] & 1 else 0.0
        power = 3 if (which[i] >> 1) & 1 else 2
        xs = [np.float32(lo[i] + np.float32((k_ + shift) * h)) for k_ in range(steps)]
        # f is evaluated in float32 (x * x or x * x * x rounded as the kernel rounds them)
        values = [np.float32(x * x) if power == 2 else np.float32(np.float32(x * x) * x)
                  for x in xs]
        want.append(sum(float(v) for v in values) * h * weight)
    # the double sum of at most 7 float32 samples and two scalings: a few double roundings
    close(k.read(out), np.array(want), 0, 8 * F64_EPS, "quadrature through indirect calls")


@case("idioms")
def saturating_vectors(k: KernelRun) -> None:
    n, block = 150, 64
    a = k.rng.integers(-2**15, 2**15, (n, 4)).astype(np.int16)
    b = k.rng.integers(-2**15, 2**15, (n, 4)).astype(np.int16)
    a[0], b[0] = [32767, -32768, 100, -1], [1, -1, -200, -32768]
    p = k.rng.integers(0, 256, (n, 4)).astype(np.uint8)
    q = k.rng.integers(0, 256, (n, 4)).astype(np.uint8)
    s_add, s_sub = k.output(np.int16, 4 * n), k.output(np.int16, 4 * n)
    u_add, out8 = k.output(np.uint16, 4 * n), k.output(np.uint8, 8 * n)
    k.launch("saturating_vectors", [k.input(a), k.input(b), k.input(p), k.input(q), s_add,
                                    s_sub, u_add, out8, n], grid_for(n, block), block)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    au, bu = a.view(np.uint16).astype(np.int64), b.view(np.uint16).astype(np.int64)
    same(k.read(s_add), np.clip(a64 + b64, -2**15, 2**15 - 1).reshape(-1).astype(np.int16),
         "signed 16-bit saturating add")
    same(k.read(s_sub), np.clip(a64 - b64, -2**15, 2**15 - 1).reshape(-1).astype(np.int16),
         "signed 16-bit saturating subtract")
    same(k.read(u_add), np.minimum(au + bu, 2**16 - 1).reshape(-1).astype(np.uint16),
         "unsigned 16-bit saturating add")
    p64, q64 = p.astype(np.int64), q.astype(np.int64)
    want8 = np.stack([np.minimum(p64 + q64, 255), np.maximum(p64 - q64, 0)], 1)
    same(k.read(out8), want8.reshape(-1).astype(np.uint8), "unsigned 8-bit saturating add, sub")


# ================================================================================================
# devicelib.hip


@case("devicelib")
def block_votes(k: KernelRun) -> None:
    n, block, threshold = 300, 96, 100
    x = k.rng.integers(-50, 200, n).astype(np.int32)
    x[96:192] = np.abs(x[96:192])      # block 1 has no negative item
    x[200] = 5000                      # block 2 has an item outside (-1000, 1000)
    blocks = grid_for(n, block) // block
    votes = k.output(np.int32, 4 * blocks)
    k.launch("block_votes", [k.input(x), threshold, votes, n], blocks * block, block)
    want = []
    for b in range(blocks):
        v = x[b * block:(b + 1) * block].astype(np.int64)   # the last block's items past n vote 0
        above = int((v > threshold).sum())
        second = int((((v & 1) == 0) & (v > above)).sum())
        want += [above, int(((v > -1000) & (v < 1000)).all()), int((v < 0).any()), second]
    same(k.read(votes), np.array(want, np.int32), "count, and, or, count per block")


@case("devicelib")
def vote_until_done(k: KernelRun) -> None:
    n, block = 200, 64
    start = k.rng.integers(1, 120, n).astype(np.int32)
    start[70] = 97                     # 118 steps: the longest below 120
    blocks = grid_for(n, block) // block
    steps, rounds = k.output(np.int32, n), k.output(np.int32, blocks)
    k.launch("vote_until_done", [k.input(start), steps, rounds, n], blocks * block, block)
    want = np.array([_collatz(int(v)) for v in start], np.int32)
    same(k.read(steps), want, "Collatz steps")
    # The block loops while any item is still moving: as many rounds as its slowest item.
    want_rounds = [want[b * block:(b + 1) * block].max() for b in range(blocks)]
    same(k.read(rounds), np.array(want_rounds, np.int32), "rounds of the block's loop")


@case("devicelib")
def ockl_geometry(k: KernelRun) -> None:
    grid, block, width = (10, 6, 3), (4, 4, 2), 18
    total = grid[0] * grid[1] * grid[2]
    out = k.output(np.uint32, width * total)
    k.launch("ockl_geometry", [out, width], grid, block)
    want = np.zeros((grid[2], grid[1], grid[0], width), np.int64)
    z, y, x = np.meshgrid(*(np.arange(g) for g in reversed(grid)), indexing="ij")
    local, group, size = [], [], []
    for d, g in enumerate((x, y, z)):
        group.append(g // block[d])
        local.append(g % block[d])
        # the last workgroup along an axis is partial: its local size is the remainder
        size.append(np.minimum(block[d], grid[d] - group[d] * block[d]))
        want[..., d] = size[d]
        want[..., 3 + d] = block[d]
        want[..., 6 + d] = -(-grid[d] // block[d])
        want[..., 9 + d] = grid[d]
        want[..., 12 + d] = group[d] * 1000 + local[d]
    # ockl numbers the items of a workgroup with the enqueued sizes, partial workgroup or not
    want[..., 15] = (local[2] * block[1] + local[1]) * block[0] + local[0]
    want[..., 16] = (z * grid[1] + y) * grid[0] + x
    want[..., 17] = 3
    same(k.read(out), want.reshape(-1).astype(np.uint32),
         "ockl's sizes, ids and linear ids in a grid of partial workgroups")


@case("devicelib")
def checked_sqrt_table(k: KernelRun) -> None:
    n, block = 100, 64
    x = k.rng.integers(0, 10_000, n).astype(np.int32)
    out = k.output(np.int32, n)
    k.launch("checked_sqrt_table", [k.input(x), out, n], grid_for(n, block), block)
    same(k.read(out), np.floor(np.sqrt(x)).astype(np.int32), "integer square roots")
    # A failing assert prints its message through the hostcall buffer before it traps; the
    # simulator has no hostcall service, so the queue stops there, naming printf.
    x[41] = -3
    _stops_naming(k, "checked_sqrt_table", [k.input(x), out, n], "printf")


# ================================================================================================
# patterns.hip

# Postfix codes of build_expressions: 0-3 push a variable, 4 a constant, 5 +, 6 *, 7 max, 8 -x.
_EXPR_END, _EXPR_CONSTANT, _EXPR_NEGATE = -1, 4, 8


def _random_postfix(rng: np.random.Generator, depth: int) -> list[int]:
    if depth == 0 or rng.random() < 0.25:
        return [int(rng.integers(0, 5))]
    if rng.random() < 0.2:
        return [*_random_postfix(rng, depth - 1), _EXPR_NEGATE]
    return [*_random_postfix(rng, depth - 1), *_random_postfix(rng, depth - 1),
            int(rng.integers(5, 8))]


def _eval_postfix(codes: list[int], constants: np.ndarray, variables: np.ndarray) -> np.float32:
    stack: list[np.float32] = []
    for t, op in enumerate(codes):
        if op < 4:
            stack.append(variables[op])
        elif op == _EXPR_CONSTANT:
            stack.append(constants[t])
        elif op == _EXPR_NEGATE:
            stack.append(-stack.pop())
        else:
            b, a = stack.pop(), stack.pop()
            stack.append(a + b if op == 5 else a * b if op == 6 else np.fmax(a, b))
    return stack[0]


@case("patterns")
def eval_expressions(k: KernelRun) -> None:
    n, block, length = 100, 64, 15
    program = np.full((n, length), _EXPR_END, np.int32)
    codes = []
    for i in range(n):
        c = _random_postfix(k.rng, 3)   # at most 15 tokens, 4 calls deep
        program[i, :len(c)] = c
        codes.append(c)
    constants = k.rng.uniform(-2, 2, (n, length)).astype(np.float32)
    variables = k.rng.uniform(-3, 3, (n, 4)).astype(np.float32)
    arena = k.output(np.uint8, n * length * 32, initial=0)
    roots = k.output(np.uint64, n)
    grid = grid_for(n, block)
    k.launch("build_expressions", [k.input(program), k.input(constants), arena, roots, length, n],
             grid, block)
    out = k.output(np.float32, n)
    k.launch("eval_expressions", [roots, k.input(variables), out, n], grid, block)
    # Every node is its own virtual call, so nothing is contracted: the float32 operations of
    # the tree in order, exactly.
    want = [_eval_postfix(codes[i], constants[i], variables[i]) for i in range(n)]
    same(k.read(out), np.array(want, np.float32), "expression trees through their vtables")


# struct Record { long long sum; int count, max_value, max_index, pad; }
LOCKED_RECORD = np.dtype([("sum", np.int64), ("count", np.int32), ("max_value", np.int32),
                   ("max_index", np.int32), ("pad", np.int32)])


@case("patterns")
def locked_merge(k: KernelRun) -> None:
    # 16 blocks of one chunk: a block that spins on the lock holds the simulator's scheduler for
    # a turn (interpreter.TURN_STEPS) before the holder runs on, so each hand-over costs time.
    n, block = 1000, 64
    blocks = grid_for(n, block) // block
    x = k.rng.integers(-1000, 1000, n).astype(np.int32)
    x[[30, 150]] = 5000                 # the maximum twice, in two blocks: the lower index wins
    lock = k.output(np.int32, 1, initial=0)
    start = np.zeros(1, LOCKED_RECORD)
    start["max_value"], start["max_index"] = -2**31, 2**31 - 1
    record = k.output(np.int32, 6, initial=start.view(np.int32))
    order = k.output(np.int32, blocks)
    k.launch("locked_merge", [k.input(x), lock, record, order, n], blocks * block, block)
    got = k.read(record).view(LOCKED_RECORD)[0]
    same(np.array([got["sum"], got["count"], got["max_value"], got["max_index"]]),
         np.array([x.astype(np.int64).sum(), blocks, 5000, 30]), "sum, count, max, argmax")
    same(np.sort(k.read(order)), np.arange(1, blocks + 1, dtype=np.int32),
         "each block held the lock once")
    same(k.read(lock), np.zeros(1, np.int32), "the lock is free at the end")


@case("patterns")
def bucket_by_key(k: KernelRun) -> None:
    n, block, keys = 500, 128, 6
    key = k.rng.integers(0, keys, n).astype(np.int32)
    key[:64] = 3                        # a wave (or two) holding one key only
    counts = k.output(np.int32, keys, initial=0)
    buckets = k.output(np.int32, keys * n, initial=-1)
    slot_of = k.output(np.int32, n)
    k.launch("bucket_by_key", [k.input(key), counts, buckets, n, slot_of, n],
             grid_for(n, block), block)
    got_counts = k.read(counts)
    same(got_counts, np.bincount(key, minlength=keys).astype(np.int32), "items per key")
    got = k.read(buckets).reshape(keys, n)
    for j in range(keys):
        # the order of the waves' appends is the scheduler's; the set of items is not
        same(np.sort(got[j, :got_counts[j]]), np.flatnonzero(key == j).astype(np.int32),
             f"items of key {j}")
        same(got[j, got_counts[j]:], np.full(n - got_counts[j], -1, np.int32),
             f"slots past the count of key {j}")
    same(got[key, k.read(slot_of)], np.arange(n, dtype=np.int32), "each item's slot holds it")


@case("patterns")
def copy_records(k: KernelRun) -> None:
    n, block, stride = 100, 64, 37
    src = k.rng.integers(0, 256, 2000).astype(np.uint8)
    offset = k.rng.integers(0, 2000 - stride, n).astype(np.int32)
    length = k.rng.integers(0, stride + 1, n).astype(np.int32)
    length[:3] = [0, stride, 1]
    dst = k.output(np.uint8, n * stride)
    k.launch("copy_records", [k.input(src), k.input(offset), k.input(length), dst, stride, n],
             grid_for(n, block), block)
    want = np.full((n, stride), 0x5A, np.uint8)
    for i in range(n):
        want[i, :length[i]] = src[offset[i]:offset[i] + length[i]]
    same(k.read(dst), want.reshape(-1), "records copied, the rest of each filled")


def _truncating_divide(a: int, b: int) -> tuple[int, int]:
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return q, a - q * b


@case("patterns")
def integer_helpers(k: KernelRun) -> None:
    n, block = 120, 64
    a = k.rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = k.rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    c = k.rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    w = k.rng.integers(0, 2**64, (n, 2), dtype=np.uint64)
    a[:4], b[:4] = [0x80000000, 0x7FFFFFFF, 0xFFFFFFFF, 0], [0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0]
    w[:2] = [[2**63, 2**64 - 1], [2**64 - 1, 2**63]]   # a negative 128-bit value, the largest
    out = k.output(np.uint64, 24 * n)
    k.launch("integer_helpers", [k.input(a), k.input(b), k.input(c), k.input(w), out, n],
             grid_for(n, block), block)
    m32, m64, m128 = 2**32 - 1, 2**64 - 1, 2**128 - 1
    want = []
    for i in range(n):
        x, y, s, p, q = int(a[i]), int(b[i]), int(c[i]), int(w[i, 0]), int(w[i, 1])
        sx, sy = x - (x >> 31 << 32), y - (y >> 31 << 32)
        sp = p - (p >> 63 << 64)
        both = y << 32 | x
        perm = sum(((both >> 8 * ((s >> 4 * j) & 7)) & 0xFF) << 8 * j for j in range(4))
        wide = (p * q + (q << 64)) & m128
        shift = s % 128
        signed_wide = wide - (wide >> 127 << 128)
        square = wide * wide & m128
        want += [perm, (abs(sx - sy) + (s & 0xFFFF)) & m32, (abs(x - y) + (s & 0xFFFF)) & m32,
                 (sx + sy) >> 1 & m32, (sx + sy + 1) >> 1 & m32, (x + y) >> 1, (x + y + 1) >> 1,
                 *(v & m32 for v in _truncating_divide(sx, 7)),
                 _truncating_divide(sx, -3)[0] & m32, x // 10, x % 1000,
                 *(v & m64 for v in _truncating_divide(sp, 1000)), q % 97, q // 1000000007,
                 wide >> shift & m64, ((wide << shift) & m128) >> 64,
                 wide // 10 & m64, wide // 10 >> 64, wide % 10,
                 signed_wide >> (shift | 64) & m64, square & m64, square >> 64]
    same(k.read(out), np.array(want, np.uint64),
         "byte_perm, sad, halving adds, division by constants, 128-bit arithmetic")
