"""The operator suite end to end: prebuilt (HIP) and llvmlite code objects, loaded by the
runtime, dispatched through raw AQL, executed by the ISA interpreter, checked against FP64.

One small size per operator and every variant, on a wave64 (gfx942), a wave32 (gfx1201) and a gfx90a
agent (rocr-sim); ``hsapy run --all --backend sim`` covers the full matrix of sizes. The ``backend``
fixture also runs these on a real GPU (rocr) when one is present.
"""
from __future__ import annotations

import pytest

from hsapy import operators as ops
from hsapy.commands import run as runcmd

# gfx90a: the target of backend rocr-sim (the installed ROCr predates gfx942 and gfx1201)
TARGETS = ("gfx942", "gfx1201", "gfx90a")

# Small sizes that still cross a block edge, a wave edge or a tile edge.
SIZES = {
    "vector_add": (1027,),
    "reduction": (1027,),
    "softmax": (5, 257),
    "gemm": (33, 17, 20),
    "attention": (16, 9),
    "rmsnorm": (5, 257),
}


def rows(route: str):
    llvmlite = runcmd.llvmlite_kernels()
    for name, size in SIZES.items():
        op = ops.operator(name)
        for variant in op.variants:
            if route == "llvmlite" and not set(variant.kernels) <= llvmlite.get(name, set()):
                continue
            for target in TARGETS:
                yield pytest.param(runcmd.RowSpec(name, variant.name, route, target, size,
                                                  op.inputs_kinds[-1]),
                                   id=f"{name}-{variant.name}-{route}-{target}")


@pytest.fixture(scope="module")
def sessions():
    """One session per backend, kept for the module (code objects load once)."""
    from hsapy.runtime import Runtime

    opened = {}

    def session_for(backend):
        if backend not in opened:     # not setdefault: that would open a runtime per call
            opened[backend] = _open(Runtime, backend)
        return opened[backend]

    yield session_for
    for runtime, session in opened.values():
        session.close()
        runtime.close()


def _open(Runtime, backend):
    runtime = Runtime(backend=backend)
    return runtime, runcmd.HsapySession(runtime)


@pytest.mark.parametrize("spec", [*rows("hip"), *rows("llvmlite")])
def test_operator_variant_matches_the_fp64_reference(backend, sessions, spec):
    runtime, session = sessions(backend)
    if spec.target not in session.agents:
        pytest.skip(f"no {spec.target} agent on backend {backend}")
    result = runcmd.execute_row(session, spec)
    assert result.error == ""
    assert result.ok, f"max_err {result.max_err} > {result.tolerance} at {result.worst}"


def test_a_failed_queue_is_replaced_for_the_next_row():
    # One failing dispatch stops its queue; later rows of `hsapy run` must not inherit the error.
    from hsapy.runtime import Runtime

    with Runtime(backend="sim", targets=["gfx942"]) as rt:
        session = runcmd.HsapySession(rt)
        first = session.queue("gfx942")
        assert session.queue("gfx942") is first
        first._state.error = (0x1016, "queue 0")          # as the error callback records it
        second = session.queue("gfx942")
        assert second is not first and first.is_closed and second.error is None
