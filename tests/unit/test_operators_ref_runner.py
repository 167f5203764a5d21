"""``hsapy run`` without a runtime: argument parsing, row selection, the row flow through a
numpy stand-in for the device, and the table / JSON output."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hsapy import operators as ops
from hsapy.cli import build_parser
from hsapy.commands import run as runcmd
from hsapy.errors import HsapyValueError


def parse(*argv: str):
    return build_parser().parse_args(["run", *argv])


# ---- arguments and selection ----------------------------------------------------------------

def test_the_command_is_registered_with_its_options():
    args = parse("gemm", "--variant", "tiled16", "--route", "hip", "--target", "gfx942",
                 "--backend", "sim", "--size", "129x128x128", "--json")
    assert (args.operator, args.variant, args.route, args.target, args.backend, args.size,
            args.json) == ("gemm", ["tiled16"], "hip", ["gfx942"], "sim", ["129x128x128"], True)


def test_variant_and_all_variants_are_exclusive():
    with pytest.raises(SystemExit):
        parse("gemm", "--variant", "naive", "--all-variants")


def test_default_selection_on_the_simulator_is_every_variant_at_reduced_and_edge_sizes():
    rows = runcmd.select_rows(parse("rmsnorm"), ["gfx942"], simulated=True, llvmlite={})
    op = ops.operator("rmsnorm")
    assert {r.variant for r in rows} == {v.name for v in op.variants}
    assert {r.size for r in rows} == set(op.sim_sizes) | set(op.edge_sizes)
    assert {r.route for r in rows} == {"hip"}
    assert op.main_size not in {r.size for r in rows}


def test_a_variant_with_its_own_simulator_sizes_replaces_the_large_ones():
    # element_atomic contends on one address: the simulator runs it at 8192/8193, and drops the
    # operator's reduced size and the edges above them; other variants keep theirs; hardware
    # runs every size.
    op = ops.operator("reduction")
    rows = runcmd.select_rows(parse("reduction"), ["gfx1201"], simulated=True, llvmlite={})
    atomic = {r.size for r in rows if r.variant == "element_atomic"}
    assert atomic == {(1,), (255,), (256,), (257,), (1027,), (8192,), (8193,)}
    others = {r.size for r in rows if r.variant == "partials"}
    assert others == set(op.sim_sizes) | set(op.edge_sizes)
    hardware = runcmd.select_rows(parse("reduction"), ["gfx1201"], simulated=False, llvmlite={})
    assert op.main_size in {r.size for r in hardware if r.variant == "element_atomic"}
    explicit = runcmd.select_rows(parse("reduction", "--size", "524288"), ["gfx1201"],
                                  simulated=True, llvmlite={})
    assert {r.size for r in explicit} == {(524288,)}         # an explicit size is honoured
    assert "reduction/element_atomic 8192, 8193" in runcmd.sizes_note(["reduction"])


def test_hardware_selection_includes_the_main_and_extra_sizes():
    rows = runcmd.select_rows(parse("gemm"), ["gfx1201"], simulated=False, llvmlite={})
    sizes = {r.size for r in rows}
    assert (1024, 1024, 1024) in sizes and (256, 1024, 512) in sizes and (128, 128, 129) in sizes


def test_every_input_kind_gets_a_row():
    rows = runcmd.select_rows(parse("reduction", "--variant", "final", "--size", "257"),
                              ["gfx942", "gfx1201"], simulated=True, llvmlite={})
    assert [(r.target, r.inputs) for r in rows] == [
        ("gfx942", "random"), ("gfx942", "weighted"), ("gfx942", "ones"),
        ("gfx1201", "random"), ("gfx1201", "weighted"), ("gfx1201", "ones")]


def test_size_keywords_and_explicit_sizes():
    rows = runcmd.select_rows(parse("vector_add", "--variant", "v0", "--size", "edge",
                                    "--size", "16M"), ["gfx942"], simulated=True, llvmlite={})
    sizes = [r.size for r in rows]
    assert sizes[-1] == (16_777_216,) and (16_777_219,) in sizes and len(sizes) == 13


def test_all_covers_every_operator_and_routes_llvmlite_only_where_it_has_kernels():
    fake_llvmlite = {"vector_add": frozenset({"vector_add_v0"})}
    rows = runcmd.select_rows(parse("--all", "--size", "edge"), ["gfx942"], simulated=True,
                              llvmlite=fake_llvmlite)
    assert {r.operator for r in rows} == set(ops.OPERATORS)
    llvmlite_rows = {(r.operator, r.variant) for r in rows if r.route == "llvmlite"}
    assert llvmlite_rows == {("vector_add", "v0")}


def test_llvmlite_route_without_kernels_is_a_clear_error():
    with pytest.raises(runcmd.SelectionError, match="no llvmlite kernels for gemm"):
        runcmd.select_rows(parse("gemm", "--route", "llvmlite"), ["gfx942"], True, llvmlite={})


@pytest.mark.parametrize("argv,message", [
    ((), "name an OPERATOR"),
    (("gemm", "--all"), "not both"),
    (("attention", "--inputs", "ones"), "rising_max"),
])
def test_bad_selections(argv, message):
    with pytest.raises(runcmd.SelectionError, match=message):
        runcmd.select_rows(parse(*argv), ["gfx942"], True, llvmlite={})


def test_unknown_variant_names_the_choices():
    with pytest.raises(HsapyValueError, match="block64"):
        runcmd.select_rows(parse("rmsnorm", "--variant", "block32"), ["gfx942"], True, {})


def test_run_exits_2_on_a_bad_selection_before_any_runtime(capsys):
    assert runcmd.run(parse("softmax", "--size", "12")) == 2
    assert "softmax" in capsys.readouterr().err


# ---- the row flow through a numpy stand-in for the device -----------------------------------

class NumpySession:
    """Runs a few kernels as numpy models of kernels/*.hip, in fp32, on host arrays."""

    simulated = True

    def __init__(self, broken: str = "", raises: str = ""):
        self.broken, self.raises = broken, raises
        self.launched: list[tuple[str, tuple, tuple, int]] = []

    def device(self, target):
        return ops.Device(target, 64 if target == "gfx942" else 32, 4)

    def kernels(self, operator, route, target):
        return {name: name for name in ops.operator(operator).kernel_names}

    def upload(self, target, array):
        return array.copy()

    def download(self, buffer, like):
        return buffer.reshape(like.shape)

    def free(self, buffer):
        pass

    def launch(self, kernel, dispatch, args):
        self.launched.append((kernel, dispatch.blocks, dispatch.block, dispatch.dynamic_lds))
        if kernel == self.raises:
            raise RuntimeError("not implemented for gfx942: 0xdeadbeef")
        if kernel == self.broken:
            return None
        if kernel == "vector_add_v0":
            a, b, out, n = args
            out[:n] = a[:n] + b[:n]
        elif kernel == "reduce_partials":
            x, partials, n = args
            blocks = dispatch.blocks[0]
            padded = np.zeros(blocks * 256, np.float32)
            padded[:n] = x
            partials[:blocks] = padded.reshape(blocks, 256).sum(axis=1, dtype=np.float32)
        elif kernel == "reduce_final":
            values, out, m = args
            out[0] = values[:m].sum(dtype=np.float32)
        elif kernel == "reduce_element_atomic":
            x, out, n = args
            out[0] += x[:n].sum(dtype=np.float32)
        else:
            raise NotImplementedError(kernel)
        return 1e-6


def spec(operator, variant, size, inputs=None, target="gfx942"):
    op = ops.operator(operator)
    return runcmd.RowSpec(operator, variant, "hip", target, size, inputs or op.inputs_kinds[0])


def test_a_correct_run_passes_and_is_labelled_simulated():
    row = runcmd.execute_row(NumpySession(), spec("vector_add", "v0", (1027,)))
    assert row.ok and row.error == "" and row.simulated
    assert row.max_err <= row.tolerance == 1e-6 and row.time_us > 0 and row.size == "1027"


def test_two_kernel_variants_launch_in_order_with_the_planned_geometry():
    session = NumpySession()
    row = runcmd.execute_row(session, spec("reduction", "partials", (1027,), "weighted"))
    assert row.ok and row.max_err == 0.0 and row.tolerance == 0.0
    assert session.launched == [("reduce_partials", (5, 1, 1), (256, 1, 1), 1024),
                                ("reduce_final", (1, 1, 1), (256, 1, 1), 1024)]


def test_atomic_accumulator_starts_at_zero():
    row = runcmd.execute_row(NumpySession(), spec("reduction", "element_atomic", (257,), "ones"))
    assert row.ok and row.max_err == 0.0


def test_a_kernel_that_writes_nothing_fails_on_the_nan_fill():
    row = runcmd.execute_row(NumpySession(broken="reduce_final"),
                             spec("reduction", "final", (255,)))
    assert not row.ok and row.max_err == math.inf and row.worst == "out[0]"
    assert row.error == ""


def test_a_failing_launch_becomes_an_error_row_not_a_crash():
    row = runcmd.execute_row(NumpySession(raises="vector_add_v0"),
                             spec("vector_add", "v0", (33,)))
    assert not row.ok and row.error == "RuntimeError: not implemented for gfx942: 0xdeadbeef"


class NoDeviceSession(NumpySession):
    def device(self, target):
        raise RuntimeError(f"no agent {target}")


def test_published_figure_only_at_the_main_size():
    session = NoDeviceSession()
    main = runcmd.execute_row(session, spec("vector_add", "v0", (16_777_216,)))
    edge = runcmd.execute_row(session, spec("vector_add", "v0", (1,)))
    assert main.published_us == 334.8 and edge.published_us is None


def test_throughput_is_computed_as_the_tutorial_does():
    gemm = ops.operator("gemm")
    assert round(runcmd._throughput(gemm, (1024, 1024, 1024), 1387.0), 2) == 1.55
    vadd = ops.operator("vector_add")
    assert round(runcmd._throughput(vadd, (16_777_216,), 334.8)) == 601


# ---- output ---------------------------------------------------------------------------------

REQUIRED_KEYS = {"operator", "variant", "route", "target", "size", "max_err", "tolerance", "ok",
                 "time_us", "simulated"}


def sample_rows():
    session = NumpySession(broken="reduce_final")
    return [runcmd.execute_row(session, spec("vector_add", "v0", (33,))),
            runcmd.execute_row(session, spec("reduction", "final", (255,)))]


def test_json_has_one_strict_object_per_row_with_the_required_keys():
    lines = runcmd.format_json(sample_rows()).splitlines()
    assert len(lines) == 2
    objects = [json.loads(line) for line in lines]
    assert all(REQUIRED_KEYS <= set(obj) for obj in objects)
    assert objects[0]["ok"] is True and objects[0]["simulated"] is True
    assert objects[1]["ok"] is False and objects[1]["max_err"] is None
    assert "non-finite" in objects[1]["error"]


def test_table_labels_simulated_times_states_reduced_sizes_and_lists_failures():
    text = runcmd.format_table(sample_rows(), simulated=True,
                               sizes_note=runcmd.sizes_note(["vector_add", "reduction"]))
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["operator", "variant", "route", "target"]
    assert "sim time (us)" in lines[0]
    assert any(line.startswith("FAIL reduction/final hip gfx942 255") for line in lines)
    assert lines[-1].startswith("1/2 passed; simulated")
    assert "vector_add 524288 for 16777216" in lines[-1]


def test_hardware_table_shows_effective_throughput_and_the_published_figure():
    row = runcmd.RowResult("gemm", "tiled16", "hip", "gfx1201", "1024x1024x1024", "random",
                           1e-5, 2e-4, True, 1400.0, False, 1.53, "TFLOP/s", 1387.0)
    text = runcmd.format_table([row], simulated=False)
    assert "1.53 TFLOP/s" in text and "1387.0" in text and "published" in text
