"""Everyday HIP kernels built the way a ROCm 5.2 user builds them: Debian's ``hipcc`` 5.2.3
(``hipcc --genco --offload-arch=gfx90a -O3``, through hsapy's hipcc route and build cache) with
ROCm's real HIP headers, so HIP's own shuffles, atomics, ballots and ocml math, an older LLVM's
code generation and a code object v4 offload bundle. Each kernel of tests/data/hipcc/everyday.hip
runs on the simulator's gfx90a agent through hsapy's public API against a numpy reference.
docs/simulator-fidelity.md ("The hipcc corpus") says what it covers.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from corpus_cases import F32_EPS, F64_EPS, KernelRun, close, grid_for, same, ulps32

from hsapy import toolchain
from hsapy.errors import HsapyValueError

SOURCE = Path(__file__).resolve().parents[1] / "data" / "hipcc" / "everyday.hip"
TARGET = "gfx90a"
WAVE = 64


@pytest.fixture(scope="module")
def executable():
    try:
        blob = toolchain.build_hip(SOURCE, TARGET, compiler="hipcc", code_object_version=4)
    except toolchain.ToolNotFoundError as exc:
        pytest.skip(f"the hipcc corpus needs hipcc: {exc}")
    except HsapyValueError as exc:   # hipcc present but without gfx90a
        pytest.skip(f"hipcc cannot build for {TARGET}: {exc}")
    from hsapy.runtime import Runtime

    with Runtime(backend="sim", targets=[TARGET], watchdog_s=20.0) as rt:
        agent = rt.gpu_agents[0]
        with rt.load(blob, agent) as exe, agent.create_queue(size=64) as queue:
            yield exe, agent, queue


@pytest.fixture
def k(executable):
    exe, agent, queue = executable
    run = KernelRun(exe, agent, queue, WAVE, rng_seed=7)
    yield run
    run.close()


def test_block_sum_folds_a_grid_stride_slice_with_shfl_down_over_warp_size(k):
    n, block, blocks = 5000, 192, 7
    x = k.rng.standard_normal(n).astype(np.float32)
    partial = k.output(np.float32, blocks)
    k.launch("block_sum", [k.input(x), partial, n], blocks * block, block)
    got = k.read(partial)
    # Each block's partial adds the terms i = b*block + t (mod blocks*block); any order of m - 1
    # float32 additions is within (m - 1) * eps/2 * sum|x| of the exact sum.
    slices = [np.concatenate([x[s:s + block] for s in range(b * block, n, blocks * block)])
              for b in range(blocks)]
    want = np.array([s.astype(np.float64).sum() for s in slices])
    bound = np.array([(len(s) - 1) * F32_EPS / 2 * np.abs(s.astype(np.float64)).sum()
                      for s in slices])
    close(got, want, bound, 0, "per-block sums")


def test_histogram_counts_bytes_in_shared_then_global_bins(k):
    n, block = 7777, 256
    data = k.rng.integers(0, 256, n).astype(np.uint8)
    data[:500] = 42                                   # one hot bin: many lanes on one address
    bins = k.output(np.uint32, 256, initial=0)
    k.launch("histogram256", [k.input(data), bins, n], 5 * block, block)
    same(k.read(bins), np.bincount(data, minlength=256).astype(np.uint32), "bin counts")


def test_block_scan_combines_shfl_up_wave_scans(k):
    n, block = 1000, 256
    x = k.rng.integers(-50, 50, n).astype(np.int32)
    y = k.output(np.int32, n)
    k.launch("block_scan", [k.input(x), y, n], grid_for(n, block), block)
    want = np.concatenate([np.cumsum(x[s:s + block]) for s in range(0, n, block)])
    same(k.read(y), want.astype(np.int32), "inclusive scan per block")


def test_math_rows_meet_the_opencl_ulp_bounds_through_ocml(k):
    n, block = 300, 64
    a = k.rng.uniform(-10, 10, n).astype(np.float32)
    b = k.rng.uniform(1e-3, 50, n).astype(np.float32)
    a[:4] = [0.0, -0.0, 88.0, -87.0]
    out = k.output(np.float32, 8 * n)
    k.launch("math_rows", [k.input(a), k.input(b), out, n], grid_for(n, block), block)
    got = k.read(out).reshape(8, n)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    # Maximum errors of the OpenCL C specification (section 7.4, full profile), which ocml is
    # written to meet: sin/cos 4 ulp, exp/log 3 ulp, pow 16 ulp, tanh 5 ulp. sqrt and division
    # are correctly rounded: hipcc's default is -fhip-fp32-correctly-rounded-divide-sqrt and
    # oclc_correctly_rounded_sqrt_on.
    rows = [("sinf", np.sin(a64), 4), ("cosf", np.cos(a64), 4), ("expf", np.exp(a64), 3),
            ("logf", np.log(b64), 3)]
    for index, (name, want, ulps) in enumerate(rows):
        close(got[index], want, ulps * ulps32(want), 0, name)
    same(got[4], np.sqrt(b), "sqrtf, correctly rounded")
    want_pow = np.power(b64, a64)
    # b**88 overflows float32: from 2**128 on, the exact value rounds to infinity.
    want_pow[want_pow >= 2.0 ** 128] = np.inf
    close(got[5], want_pow, 16 * ulps32(want_pow), 0, "powf")
    want_tanh = np.tanh(a64)
    close(got[6], want_tanh, 5 * ulps32(want_tanh), 0, "tanhf")
    same(got[7], a / b, "a / b, correctly rounded")


def test_math_double_exp_sqrt_sin(k):
    n, block = 200, 64
    x = k.rng.uniform(-20, 20, n)
    out = k.output(np.float64, 3 * n)
    k.launch("math_double", [k.input(x), out, n], grid_for(n, block), block)
    got = k.read(out).reshape(3, n)
    # OpenCL C double bounds: exp 3 ulp, sin 4 ulp; sqrt is correctly rounded.
    close(got[0], np.exp(x), 0, 3 * F64_EPS, "exp (3 ulp)")
    same(got[1], np.sqrt(np.abs(x)), "sqrt")
    close(got[2], np.sin(x), 4 * np.spacing(np.abs(np.sin(x))), 0, "sin (4 ulp)")


def test_double_atomic_add_bins(k):
    n, block, nbins = 3000, 128, 5
    # Multiples of 1/8 below 2**10: every partial sum is exact in double, whatever the order.
    x = k.rng.integers(-8000, 8000, n) / 8.0
    key = k.rng.integers(0, nbins, n).astype(np.int32)
    bins = k.output(np.float64, nbins, initial=0.0)
    k.launch("double_bins", [k.input(x), k.input(key), bins, n], 4 * block, block)
    same(k.read(bins), np.bincount(key, weights=x, minlength=nbins), "double bins")


def test_ballot_ranks_positives_and_counts_per_wave(k):
    n, block = 450, 128
    x = k.rng.integers(-3, 4, n).astype(np.int32)
    x[64:128] = 5                                     # a wave where __all holds
    waves = grid_for(n, block) // WAVE
    rank, count, flags = k.output(np.int32, n), k.output(np.int32, waves), k.output(np.int32, waves)
    k.launch("ballot_ranks", [k.input(x), rank, count, flags, n], grid_for(n, block), block)
    padded = np.zeros(waves * WAVE, np.int32)
    padded[:n] = x
    positive = (padded > 0).reshape(waves, WAVE)
    ranks = np.where(positive, np.cumsum(positive, axis=1) - 1, -1).reshape(-1)[:n]
    same(k.read(rank), ranks.astype(np.int32), "ranks among the wave's positives")
    same(k.read(count), positive.sum(axis=1).astype(np.int32), "__popcll(__ballot)")
    nonzero = (padded != 0).reshape(waves, WAVE) | (np.arange(waves * WAVE) >= n).reshape(waves, WAVE)
    want_flags = positive.any(axis=1).astype(np.int32) | (nonzero.all(axis=1) << 1)
    same(k.read(flags), want_flags.astype(np.int32), "__any | __all << 1")


def test_stencil5_reads_a_shared_tile_with_its_halo(k):
    width, height, tile = 37, 21, 16
    grid_in = k.rng.standard_normal((height, width)).astype(np.float32)
    out = k.output(np.float32, width * height)
    k.launch("stencil5", [k.input(grid_in), out, width, height],
             (grid_for(width, tile), grid_for(height, tile)), (tile, tile))
    g = np.pad(grid_in.astype(np.float64), 1, mode="edge")
    centre = g[1:-1, 1:-1]
    ring = g[1:-1, :-2] + g[1:-1, 2:] + g[:-2, 1:-1] + g[2:, 1:-1]
    want = 0.5 * centre + 0.125 * ring
    # Products by powers of two are exact; three additions in the ring and one (or one fma)
    # at the end: within 4 * eps/2 of the sum of magnitudes.
    mags = 0.5 * np.abs(centre) + 0.125 * (np.abs(g[1:-1, :-2]) + np.abs(g[1:-1, 2:])
                                           + np.abs(g[:-2, 1:-1]) + np.abs(g[2:, 1:-1]))
    close(k.read(out), want.reshape(-1), (4 * F32_EPS / 2 * mags).reshape(-1), 0, "stencil")


# struct Affine of everyday.hip as the compiler lays it out: HIP's float2 (HIP_vector_type over
# an ext_vector_type) is 8-byte aligned, so it follows the short at 24, not 20.
AFFINE = np.dtype({"names": ["scale", "offset", "bias", "tag", "shift"],
                   "formats": [np.float32, np.int32, np.float64, np.int16, (np.float32, 2)],
                   "offsets": [0, 4, 8, 16, 24], "itemsize": 32})


def test_affine_reads_a_struct_argument_by_value(k):
    n, block = 257, 64
    x = k.rng.uniform(-100, 100, n).astype(np.float32)
    p = np.zeros((), AFFINE)
    p["scale"], p["offset"], p["bias"], p["tag"], p["shift"] = 1.75, -9, 1e-3, 301, (7.5, -2.25)
    out = k.output(np.float64, n)
    k.launch("affine", [p.tobytes(), k.input(x), out, n], grid_for(n, block), block)
    inner = x.astype(np.float64) * np.float64(np.float32(1.75)) - 2.25
    want = inner + 1e-3 + (-9 * 301)
    # x * scale + shift.y in float32, fused or not (up to two roundings of |x * scale| + 2.25),
    # then exact-enough double additions (one double rounding each, far below a float ulp).
    close(k.read(out), want, 2 * ulps32(np.abs(inner) + 2.25) + 1e-9, 0, "struct fields")


def test_reverse_chunks_through_dynamic_shared_memory(k):
    n, block = 1000, 192
    x = k.rng.integers(-(2 ** 31), 2 ** 31 - 1, n).astype(np.int32)
    y = k.output(np.int32, n)
    k.launch("reverse_chunks", [k.input(x), y, n], grid_for(n, block), block,
             dynamic_lds=block * 4)
    want = np.concatenate([x[s:s + block][::-1] for s in range(0, n, block)])
    same(k.read(y), want, "chunks reversed")


def test_segment_max_with_shfl_xor_width_and_shfl_broadcast(k):
    n, block = 300, 64
    x = k.rng.integers(-1000, 1000, n).astype(np.int32)
    seg, first = k.output(np.int32, n), k.output(np.int32, n)
    k.launch("segment_max", [k.input(x), seg, first, n], grid_for(n, block), block)
    padded = np.full(grid_for(n, block), np.iinfo(np.int32).min, np.int32)
    padded[:n] = x
    seg_max = np.repeat(padded.reshape(-1, 16).max(axis=1), 16)
    same(k.read(seg), seg_max[:n], "16-lane segment max")
    same(k.read(first), np.repeat(seg_max[::WAVE], WAVE)[:n], "lane 0's segment max")


def test_tile_sums_reduce_cooperative_group_tiles_of_32(k):
    n, block = 700, 128
    x = k.rng.integers(-1000, 1000, n).astype(np.int32)
    tiles = grid_for(n, block) // 32
    total = k.output(np.int32, tiles)
    k.launch("tile_sums", [k.input(x), total, n], grid_for(n, block), block)
    padded = np.zeros(tiles * 32, np.int32)
    padded[:n] = x
    same(k.read(total), padded.reshape(tiles, 32).sum(axis=1).astype(np.int32), "tile sums")


def test_block_facts_count_predicates_with_syncthreads_count(k):
    n, block = 1000, 256
    x = k.rng.integers(0, 100, n).astype(np.int32)
    blocks = grid_for(n, block) // block
    facts = k.output(np.int32, 4 * blocks)
    # Whole workgroups, as every HIP launch is: hipcc compiles for uniform workgroups, so
    # ockl's __ockl_wgred_add_i32 takes the enqueued size for the number of waves to combine.
    k.launch("block_facts", [k.input(x), facts, n], grid_for(n, block), block)
    counts = [int((x[b * block:b * block + block] % 3 == 0).sum()) for b in range(blocks)]
    want = [[count, block, blocks, block] for count in counts]
    same(k.read(facts), np.array(want, np.int32).reshape(-1), "count, blockDim, gridDim, size")


def test_bin_extremes_by_atomic_cas_float_max_and_atomic_min(k):
    n, block, nbins = 900, 64, 7
    x = k.rng.uniform(-50, 50, n).astype(np.float32)
    key = k.rng.integers(0, nbins, n).astype(np.int32)
    fmax = k.output(np.float32, nbins, initial=-np.inf)
    imin = k.output(np.int32, nbins, initial=np.iinfo(np.int32).max)
    k.launch("bin_extremes", [k.input(x), k.input(key), fmax, imin, n], grid_for(n, block), block)
    want_max = np.array([x[key == b].max() for b in range(nbins)], np.float32)
    # (int)(v * 1000.0f): one float32 product (nothing to fuse), truncated toward zero.
    scaled = np.trunc(x * np.float32(1000)).astype(np.int32)
    want_min = np.array([scaled[key == b].min() for b in range(nbins)], np.int32)
    same(k.read(fmax), want_max, "float max by atomicCAS")
    same(k.read(imin), want_min, "atomicMin")
