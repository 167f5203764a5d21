"""The llvmlite route of the operator suite (asm/operators.py): one code object per operator
and target whose kernels have exactly the ABI of their HIP twins, so the same variant plans,
inputs and references drive both routes."""
from __future__ import annotations

import pytest

from hsapy import operators as ops
from hsapy.codeobject import CodeObject
from hsapy.errors import HsapyValueError

asm_operators = pytest.importorskip("hsapy.asm.operators")


def _ld_lld_missing() -> str | None:
    from hsapy import toolchain

    try:
        toolchain.find_tool("ld.lld")
    except toolchain.ToolNotFoundError as exc:
        return str(exc)
    return None


pytestmark = pytest.mark.skipif(_ld_lld_missing() is not None, reason="ld.lld is not installed")

TARGETS = ("gfx942", "gfx1201")


def explicit_args(info) -> list[tuple]:
    return [(a.offset, a.size, a.value_kind) for a in info.args
            if not a.value_kind.startswith("hidden")]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("operator", sorted(asm_operators.KERNELS))
def test_llvmlite_kernels_have_the_abi_of_their_hip_twins(operator, target):
    llvmlite = CodeObject.from_bytes(asm_operators.build(operator, target))
    hip = CodeObject.from_bytes(ops.prebuilt_path(ops.operator(operator), target).read_bytes())
    assert set(llvmlite.kernels) == set(asm_operators.KERNELS[operator])
    for name, info in llvmlite.kernels.items():
        assert explicit_args(info) == explicit_args(hip.kernels[name]), name
        assert info.wavefront_size == hip.kernels[name].wavefront_size
        assert f"{name}.kd" in llvmlite.symbols


def test_the_llvmlite_route_covers_these_variants():
    covered = {
        (op.name, v.name)
        for op in ops.OPERATORS.values() for v in op.variants
        if set(v.kernels) <= set(asm_operators.KERNELS.get(op.name, {}))
    }
    assert covered == {
        ("vector_add", "v0"), ("vector_add", "v2_grid_stride"),
        ("reduction", "element_atomic"), ("reduction", "block_atomic"),
        ("reduction", "partials"), ("reduction", "local_lds"), ("reduction", "final"),
        ("softmax", "fused"),
        ("gemm", "naive"), ("gemm", "tiled8"), ("gemm", "tiled16"), ("gemm", "tiled32"),
        ("rmsnorm", "serial"), ("rmsnorm", "block256"), ("rmsnorm", "block128"),
        ("rmsnorm", "block64"),
    }
    assert all(op.llvmlite_kernels == (op.name in asm_operators.KERNELS)
               for op in ops.OPERATORS.values())


def test_fixed_workgroup_kernels_match_their_plans():
    gemm = CodeObject.from_bytes(asm_operators.build("gemm", "gfx942"))
    for variant in ops.operator("gemm").variants:
        (dispatch,) = variant.plan((64, 64, 64), ops.Device("gfx942", 64, 304))
        info = gemm.kernels[dispatch.kernel]
        assert info.max_flat_workgroup_size == dispatch.block[0] * dispatch.block[1]


def test_unknown_operator_is_a_clear_error():
    with pytest.raises(HsapyValueError, match="no llvmlite kernels for 'attention'"):
        asm_operators.build("attention", "gfx942")
