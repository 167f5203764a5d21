"""The operator suite's host side: variant table, geometry, inputs, FP64 references, checks.

No runtime here. The kernels themselves are exercised in tests/sim/test_operators*.py; these
tests pin what operators.md specifies (variants, sizes, tolerances, input generators) and show
that the tolerances accept an fp32 implementation of each algorithm and reject a wrong answer.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from hsapy import operators as ops
from hsapy.errors import HsapyValueError

WAVE64 = ops.Device("gfx942", 64, 304)
WAVE32 = ops.Device("gfx1201", 32, 64)

# operators.md, section by section.
SPEC_VARIANTS = {
    "vector_add": {"v0", "v1_contiguous", "v1_strided", "v2_grid_stride", "v3_float4"},
    "reduction": {"element_atomic", "block_atomic", "partials", "local_lds", "local_wave",
                  "final"},
    "softmax": {"serial", "cooperative", "fused"},
    "gemm": {"naive", "tiled8", "tiled16", "tiled32"},
    "attention": {"materialized", "online"},
    "rmsnorm": {"serial", "block256", "block128", "block64"},
}

SPEC_TOLERANCES = {
    "vector_add": (1e-6, 0.0, None),
    "reduction": (0.0, 0.0, None),
    "softmax": (2e-5, 0.0, 2e-5),
    "gemm": (1e-4, 1e-4, None),
    "attention": (2e-5, 2e-4, None),
    "rmsnorm": (2e-5, 2e-5, None),
}


def problem(name: str, variant: str, size, kind: str | None = None, dev=WAVE64) -> ops.Problem:
    op = ops.operator(name)
    return ops.make_problem(op, op.variant(variant), size, kind or op.inputs_kinds[0], dev)


# ---- the table ----------------------------------------------------------------------------

def test_every_variant_of_the_spec_is_in_the_table():
    assert {name: {v.name for v in op.variants} for name, op in ops.OPERATORS.items()} \
        == SPEC_VARIANTS


@pytest.mark.parametrize("name", sorted(SPEC_TOLERANCES))
def test_tolerances_are_the_tutorials(name):
    tol = ops.operator(name).tolerance
    assert (tol.atol, tol.rtol, tol.row_sum_atol) == SPEC_TOLERANCES[name]


@pytest.mark.parametrize("name", sorted(ops.OPERATORS))
def test_every_kernel_is_defined_in_the_source_and_every_source_kernel_is_used(name):
    op = ops.operator(name)
    text = ops.source_path(op).read_text()
    defined = set(re.findall(r'extern "C" __global__ void (\w+)\(', text))
    assert defined == set(op.kernel_names)


def test_published_figures_are_beside_the_right_variants():
    published = {(op.name, v.name): v.published.time_us
                 for op in ops.OPERATORS.values() for v in op.variants if v.published}
    assert published[("vector_add", "v0")] == 334.8
    assert published[("reduction", "local_wave")] == 78.06
    assert published[("gemm", "tiled16")] == 1387.0
    assert published[("rmsnorm", "block64")] == 59.82
    assert len(published) == 17


def test_gemm_published_throughput_matches_the_tutorials_arithmetic():
    op = ops.operator("gemm")
    tflops = op.work(op.main_size) / (op.variant("tiled16").published.time_us * 1e-6) / 1e12
    assert round(tflops, 2) == 1.55


def test_vector_add_published_bandwidth_is_12_bytes_per_element():
    op = ops.operator("vector_add")
    gbs = op.work(op.main_size) / (op.variant("v0").published.time_us * 1e-6) / 1e9
    assert round(gbs) == 601


def test_unknown_names_raise_with_the_choices():
    with pytest.raises(HsapyValueError, match="vector_add"):
        ops.operator("vadd")
    with pytest.raises(HsapyValueError, match="tiled16"):
        ops.operator("gemm").variant("tiled64")


# ---- sizes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("16777216", (16_777_216,)), ("16M", (16_777_216,)), ("64k", (65_536,)),
    ("16,777,219", (16_777_219,)),
])
def test_parse_size_1d(text, expected):
    assert ops.parse_size(text, ops.operator("vector_add")) == expected


def test_parse_size_shapes():
    assert ops.parse_size("1024^3", ops.operator("gemm")) == (1024, 1024, 1024)
    assert ops.parse_size("256x1024x512", ops.operator("gemm")) == (256, 1024, 512)
    assert ops.parse_size("4096×1024", ops.operator("softmax")) == (4096, 1024)


@pytest.mark.parametrize("text", ["4096", "0", "12x", "axb", "1x2x3"])
def test_parse_size_rejects_what_does_not_fit(text):
    with pytest.raises(HsapyValueError, match="rowsxcols, e.g. 4096x1024"):
        ops.parse_size(text, ops.operator("softmax"))


def test_size_label_round_trips():
    op = ops.operator("gemm")
    assert ops.parse_size(ops.size_label((129, 128, 128)), op) == (129, 128, 128)


def test_simulator_sizes_are_reduced_but_keep_every_edge():
    for op in ops.OPERATORS.values():
        sim = op.sizes("default", simulated=True)
        hw = op.sizes("default", simulated=False)
        assert set(op.edge_sizes) <= set(sim)
        assert op.main_size in hw and set(op.extra_sizes) <= set(hw)
        assert all(math.prod(s) <= math.prod(op.main_size) for s in op.sim_sizes)


def test_vector_add_edges_include_the_float4_tails():
    edges = {n for (n,) in ops.operator("vector_add").edge_sizes}
    assert {1, 31, 32, 33, 255, 256, 257, 1027, 16_777_219, 2, 6, 1026} == edges


# ---- launch geometry ----------------------------------------------------------------------

@pytest.mark.parametrize("dev", [WAVE32, WAVE64], ids=["wave32", "wave64"])
@pytest.mark.parametrize("variant", ["v1_contiguous", "v1_strided"])
@pytest.mark.parametrize("n", [1, 33, 1027, 16_385, 65_536])
def test_vector_add_v1_lane_mapping_covers_every_element_once(dev, variant, n):
    (d,) = ops.operator("vector_add").variant(variant).plan((n,), dev)
    w = dev.wavefront_size
    # Model of kernels/vector_add.hip: wave tile of W*W in W rounds.
    thread = np.arange(d.blocks[0] * d.block[0])
    block, tid = thread // d.block[0], thread % d.block[0]
    lane, wave = tid % w, tid // w
    base = (block * (d.block[0] // w) + wave) * w * w
    rounds = np.arange(w)[:, None]
    if variant.endswith("strided"):
        index = base + lane * w + rounds
    else:
        index = base + rounds * w + lane
    hit = index[index < n]
    assert np.array_equal(np.sort(hit), np.arange(n))


@pytest.mark.parametrize("dev", [WAVE32, WAVE64], ids=["wave32", "wave64"])
@pytest.mark.parametrize("variant", ["v0", "v2_grid_stride"])
@pytest.mark.parametrize("n", [1, 257, 16_777_219])
def test_vector_add_grid_covers_n(dev, variant, n):
    (d,) = ops.operator("vector_add").variant(variant).plan((n,), dev)
    assert d.block == (256, 1, 1) and d.grid == (d.blocks[0] * 256, 1, 1)
    if variant == "v0":
        assert d.grid[0] >= n > d.grid[0] - 256
    else:
        assert d.blocks[0] == min(math.ceil(n / 256), dev.compute_units * 8)


def test_vector_add_float4_tail_model():
    for n in (1, 2, 6, 1026, 1027):
        (d,) = ops.operator("vector_add").variant("v3_float4").plan((n,), WAVE64)
        stride = d.grid[0]
        first = np.arange(stride)
        vec = [i for f in first for i in range(f, n // 4, stride)]
        tail = [i for f in first for i in range(n // 4 * 4 + f, n, stride)]
        covered = sorted([4 * v + j for v in vec for j in range(4)] + tail)
        assert covered == list(range(n))


@pytest.mark.parametrize("variant,lds", [
    ("element_atomic", 0), ("block_atomic", 1024), ("partials", 1024), ("local_lds", 1024),
    ("local_wave", 1024), ("final", 1024),
])
def test_reduction_dynamic_lds_is_block_times_4(variant, lds):
    plan = ops.operator("reduction").variant(variant).plan((1_000_000,), WAVE64)
    assert plan[0].dynamic_lds == lds
    assert all(d.block == (256, 1, 1) for d in plan)


def test_reduction_local_variants_use_grid_256_then_one_final_block():
    first, final = ops.operator("reduction").variant("local_wave").plan((16_777_216,), WAVE32)
    assert first.blocks == (256, 1, 1)
    assert final.kernel == "reduce_final" and final.blocks == (1, 1, 1)
    assert final.args == ("partials", "out", np.uint32(256))


@pytest.mark.parametrize("variant,tile", [("naive", 16), ("tiled8", 8), ("tiled16", 16),
                                          ("tiled32", 32)])
def test_gemm_blocks_cover_the_output(variant, tile):
    (d,) = ops.operator("gemm").variant(variant).plan((129, 128, 130), WAVE64)
    assert d.block == (tile, tile, 1) and d.dims == 2
    assert d.grid[0] >= 128 and d.grid[1] >= 129 and d.grid[1] - tile < 129


@pytest.mark.parametrize("d_model,block", [(64, 64), (65, 128), (1, 32)])
def test_attention_online_block_is_a_power_of_two_covering_d(d_model, block):
    (d,) = ops.operator("attention").variant("online").plan((128, d_model), WAVE64)
    assert d.block == (block, 1, 1) and d.dynamic_lds == block * 4 and d.blocks == (128, 1, 1)


@pytest.mark.parametrize("variant,block", [("block256", 256), ("block128", 128),
                                           ("block64", 64)])
def test_rmsnorm_block_variants(variant, block):
    (d,) = ops.operator("rmsnorm").variant(variant).plan((33, 4097), WAVE32)
    assert d.block == (block, 1, 1) and d.blocks == (33, 1, 1) and d.dynamic_lds == 4 * block
    assert d.args[-1] == np.float32(1e-5)


def test_scalar_arguments_are_typed_for_packing():
    for op in ops.OPERATORS.values():
        for variant in op.variants:
            for d in variant.plan(op.edge_sizes[0], WAVE64):
                assert all(isinstance(a, (str, np.uint32, np.float32)) for a in d.args)


def test_sizes_beyond_32_bits_are_rejected_before_launch():
    with pytest.raises(HsapyValueError, match="32-bit"):
        ops.operator("vector_add").variant("v0").plan((2**32,), WAVE64)


# ---- inputs ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["random", "weighted", "ones"])
@pytest.mark.parametrize("n", [1, 257, 65_537])
def test_reduction_inputs_are_dyadic_and_every_order_sums_exactly(kind, n):
    p = problem("reduction", "final", (n,), kind)
    x = p.buffers["x"].data
    assert x.dtype == np.float32
    k = x.astype(np.float64) * 32
    assert np.array_equal(k, np.round(k)) and np.abs(k).max() <= 32
    total = p.reference["out"][0]
    assert math.fsum(x.astype(np.float64)) == total
    # n <= 2**19 values of magnitude <= 1 at 1/32 resolution: every partial sum fits 24 bits,
    # so fp32 gives the exact total in any order (sequential, reversed, pairwise, blocked).
    assert np.float32(total) == total
    blocked = np.zeros((n + 255) // 256 * 256, np.float32)
    blocked[:n] = x
    orders = [np.cumsum(x, dtype=np.float32)[-1], np.cumsum(x[::-1], dtype=np.float32)[-1],
              np.sum(x, dtype=np.float32),
              np.sum(blocked.reshape(-1, 256).sum(axis=1, dtype=np.float32), dtype=np.float32)]
    assert all(float(o) == total for o in orders)


def test_reduction_main_size_is_exact_in_index_order():
    for kind in ("random", "weighted", "ones"):
        p = problem("reduction", "final", (16_777_216,), kind)
        x = p.buffers["x"].data
        assert float(np.cumsum(x, dtype=np.float32)[-1]) == p.reference["out"][0], kind


def test_weighted_inputs_sum_to_zero_every_33_elements():
    x = problem("reduction", "final", (33 * 100,), "weighted").buffers["x"].data
    assert np.all(x.astype(np.float64).reshape(100, 33).sum(axis=1) == 0)
    assert set(np.round(x * 32).astype(int)) == set(range(-16, 17))


def test_inputs_are_deterministic():
    a = problem("gemm", "naive", (129, 128, 128)).buffers["A"].data
    b = problem("gemm", "tiled8", (129, 128, 128)).buffers["A"].data
    assert np.array_equal(a, b)


def test_softmax_rows_are_shifted_dyadics():
    x = problem("softmax", "fused", (6, 1025)).buffers["x"].data.astype(np.float64)
    shifts = np.array([1000, -1000, 0, 1000, -1000, 0])[:, None]
    k = (x - shifts) * 128
    assert np.array_equal(k, np.round(k)) and np.abs(k).max() <= 512


def test_attention_rising_max_raises_the_running_max_at_most_keys():
    p = problem("attention", "online", (256, 64), "rising_max")
    inputs = {name: b.data for name, b in p.buffers.items()}
    scores = ops.attention_scores64(inputs, 64)
    rises = np.diff(np.maximum.accumulate(scores, axis=1), axis=1) > 0
    assert rises.mean() > 0.95
    # Without the running max, exp() of these scores overflows fp32.
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(scores.astype(np.float32))).any()


@pytest.mark.parametrize("name,variant,size", [
    ("vector_add", "v0", (33,)), ("reduction", "partials", (257,)),
    ("softmax", "serial", (3, 7)), ("gemm", "naive", (3, 4, 5)),
    ("attention", "materialized", (16, 8)), ("rmsnorm", "block64", (33, 1)),
])
def test_outputs_start_as_nan(name, variant, size):
    p = problem(name, variant, size)
    outputs = [b for b in p.buffers.values() if not b.is_input]
    assert outputs and all(np.isnan(b.data).all() for b in outputs)
    assert all(b.data.dtype == np.float32 for b in p.buffers.values())


@pytest.mark.parametrize("variant", ["element_atomic", "block_atomic"])
def test_atomic_accumulators_start_at_zero(variant):
    p = problem("reduction", variant, (1027,))
    assert p.buffers["out"].data.tolist() == [0.0]


# ---- references -----------------------------------------------------------------------------

def test_block_partials_reference_matches_the_kernels_index_mapping():
    p = problem("reduction", "partials", (1027,))
    x = p.buffers["x"].data.astype(np.float64)
    expected = [x[b * 256:(b + 1) * 256].sum() for b in range(5)]
    assert p.reference["partials"].tolist() == expected


def test_grid_stride_partials_reference_matches_the_kernels_index_mapping():
    n = 300_000
    p = problem("reduction", "local_lds", (n,))
    x = p.buffers["x"].data.astype(np.float64)
    blocks, stride = 256, 256 * 256
    expected = np.zeros(blocks)
    for b in range(blocks):
        for t in range(256):
            expected[b] += x[b * 256 + t::stride].sum()
    assert np.array_equal(p.reference["partials"], expected)
    assert p.reference["partials"].sum() == p.reference["out"][0]


def test_variants_check_only_what_they_write():
    assert set(problem("reduction", "final", (100,)).reference) == {"out"}
    assert set(problem("reduction", "local_wave", (100,)).reference) == {"out", "partials"}
    assert set(problem("attention", "materialized", (16, 8)).reference) == {"O"}


def test_rmsnorm_reference():
    p = problem("rmsnorm", "serial", (2, 3))
    x, w = p.buffers["x"].data.astype(np.float64), p.buffers["w"].data.astype(np.float64)
    row = x[1] / math.sqrt((x[1] ** 2).mean() + 1e-5) * w
    assert np.allclose(p.reference["y"][1], row, rtol=1e-15, atol=0)


# ---- checks: fp32 implementations pass, wrong answers fail -------------------------------

def fp32_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    return (e * (np.float32(1) / e.sum(axis=1, keepdims=True, dtype=np.float32))).astype(
        np.float32)


def fp32_online_attention(q, k, v, scale):
    s = q.shape[0]
    out = np.empty_like(q)
    for i in range(s):
        m, l, acc = np.float32(-np.inf), np.float32(0), np.zeros(q.shape[1], np.float32)
        for j in range(s):
            score = np.float32(np.dot(q[i], k[j])) * scale
            new_m = max(m, score)
            corr = np.exp(np.float32(m - new_m))
            p = np.exp(np.float32(score - new_m))
            l = l * corr + p
            acc = acc * corr + p * v[j]
            m = new_m
        out[i] = acc / l
    return out


def test_fp32_softmax_passes_and_a_perturbation_fails():
    p = problem("softmax", "fused", (96, 1025))
    y = fp32_softmax(p.buffers["x"].data)
    tol = ops.operator("softmax").tolerance
    good = ops.check_outputs({"y": y}, p.reference, tol)
    assert good.ok and good.max_err < 2e-6
    y[5, 7] += 3e-5
    bad = ops.check_outputs({"y": y}, p.reference, tol)
    assert not bad.ok and bad.worst in ("y[5127]", "y row sum 5")


def test_softmax_row_sum_check_catches_a_spread_error():
    p = problem("softmax", "fused", (3, 1024))
    y = p.reference["y"].astype(np.float32) + np.float32(1.5e-5 / 1024 * 3)
    result = ops.check_outputs({"y": y}, p.reference, ops.operator("softmax").tolerance)
    assert not result.ok and "row sum" in result.worst


@pytest.mark.parametrize("size", [(129, 128, 128), (128, 129, 128), (128, 128, 129)])
def test_fp32_gemm_passes_on_the_edges(size):
    p = problem("gemm", "naive", size)
    c = p.buffers["A"].data @ p.buffers["B"].data
    assert ops.check_outputs({"C": c}, p.reference, ops.operator("gemm").tolerance).ok


def test_gemm_relative_bound_fails_just_over():
    p = problem("gemm", "naive", (8, 8, 8))
    c = p.reference["C"].copy()
    c[3, 4] += 1e-4 + 1e-4 * abs(c[3, 4]) * 1.01 + 1e-6
    result = ops.check_outputs({"C": c}, p.reference, ops.operator("gemm").tolerance)
    assert not result.ok and result.worst == "C[28]"


@pytest.mark.parametrize("kind", ["random", "rising_max"])
def test_fp32_online_attention_passes(kind):
    p = problem("attention", "online", (64, 65), kind)
    b = {name: buf.data for name, buf in p.buffers.items()}
    o = fp32_online_attention(b["Q"], b["K"], b["V"], np.float32(1 / math.sqrt(65)))
    assert ops.check_outputs({"O": o}, p.reference, ops.operator("attention").tolerance).ok


@pytest.mark.parametrize("size", [(33, 1), (33, 4097)])
def test_fp32_rmsnorm_passes(size):
    p = problem("rmsnorm", "serial", size)
    x, w = p.buffers["x"].data, p.buffers["w"].data
    inv = np.float32(1) / np.sqrt((x * x).sum(axis=1, keepdims=True, dtype=np.float32)
                                  / np.float32(size[1]) + np.float32(1e-5))
    y = x * inv * w
    assert ops.check_outputs({"y": y}, p.reference, ops.operator("rmsnorm").tolerance).ok


def test_reduction_tolerance_is_exact():
    p = problem("reduction", "partials", (1027,), "random")
    outputs = {"out": np.float32(p.reference["out"]),
               "partials": p.reference["partials"].astype(np.float32)}
    tol = ops.operator("reduction").tolerance
    assert ops.check_outputs(outputs, p.reference, tol).ok
    outputs["partials"][4] += np.float32(1 / 32)
    result = ops.check_outputs(outputs, p.reference, tol)
    assert not result.ok and result.worst == "partials[4]" and result.max_err == 1 / 32


def test_vector_add_tolerance():
    p = problem("vector_add", "v0", (1027,))
    out = p.buffers["a"].data + p.buffers["b"].data
    tol = ops.operator("vector_add").tolerance
    assert ops.check_outputs({"out": out}, p.reference, tol).ok
    out[1026] += np.float32(2e-6)
    assert not ops.check_outputs({"out": out}, p.reference, tol).ok


def test_nan_anywhere_fails_with_infinite_error():
    p = problem("vector_add", "v0", (257,))
    out = (p.buffers["a"].data + p.buffers["b"].data)
    out[256] = np.nan
    result = ops.check_outputs({"out": out}, p.reference, ops.operator("vector_add").tolerance)
    assert not result.ok and result.max_err == math.inf and result.nonfinite == 1
    assert result.worst == "out[256]"


def test_an_untouched_nan_filled_output_fails():
    p = problem("rmsnorm", "serial", (33, 1))
    untouched = {"y": p.buffers["y"].data}
    result = ops.check_outputs(untouched, p.reference, ops.operator("rmsnorm").tolerance)
    assert not result.ok and result.nonfinite == 33


def test_tolerance_descriptions():
    assert ops.operator("reduction").tolerance.describe() == "exact"
    assert ops.operator("gemm").tolerance.describe() == "|err| <= 0.0001 + 0.0001*|ref|"
    assert "row sum" in ops.operator("softmax").tolerance.describe()
