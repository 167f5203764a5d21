"""The simulator's two execution engines must agree: kernels run with ``engine="compare"``
(``HSAPY_SIM_ENGINE=compare``), which runs every dispatch in the ISA interpreter and then, from
the same memory, in the compiled engine, and stops the queue naming the first difference in
memory, faults or lane/wave instruction counts. Each run also passes its own check (FP64
reference, numpy reference, exact result), so agreeing on a wrong answer fails too.

What runs, per kernel corpus:

- the project's test kernels: ``tests/sim/test_isa_exec_kernels.py`` (HIP and llvmlite kernels,
  LDS trees with barriers, scratch arrays, partial waves, memory faults, f64/f16 rounding),
  imported below so they run here a second time under the comparison;
- the operator suite: every variant from its prebuilt code object (``kernels/prebuilt``) at
  ``tests/sim/test_isa_exec_operators.py``'s small sizes;
- the simulator-fidelity corpus (``tests/sim/test_fidelity_corpus.py``'s kernels and builds).

By default (CI) the selection fits a small time budget: the compiled engine compiles each
kernel before its first run (seconds per kernel on a cold cache), and that compile, not the
run, is what a comparison costs. Every operator variant but the three-kernel softmax and
attention ones runs on one target (gfx942 and gfx1201 alternate by variant), and one corpus
kernel in six (a fixed sample, leaving out those slow to compile) runs once at -O3, its build
rotating over gfx942, gfx1201 wave32 and gfx1201 wave64. ``HSAPY_ENGINE_AGREEMENT=full`` runs
everything: every
operator variant on gfx942, gfx1201, gfx90a and gfx1100, every corpus kernel in all six builds
(docs/simulator.md gives the cost). Test ids name the kernel, the build or target.
"""
from __future__ import annotations

import os

import corpus_build
import pytest
import test_fidelity_corpus as corpus
import test_isa_exec_operators as operators
from corpus_cases import CASES, KernelRun

# The project's test kernels, collected here a second time (under the comparison below).
from test_isa_exec_kernels import (  # noqa: F401  (pytest collects them from this module)
    test_block_and_grid_dims_come_from_hidden_args_and_packet,
    test_f64_division_sqrt_and_fp16_mix_are_correctly_rounded,
    test_hip_vector_add_is_exact,
    test_lds_tree_reduction_with_barriers_is_exact,
    test_llvmlite_vector_add_from_asm_is_exact,
    test_out_of_bounds_store_is_a_memory_fault_with_the_address,
    test_partial_wave_exec_and_workitem_ids,
    test_private_array_in_scratch_per_lane,
)

from hsapy import toolchain

FULL = os.environ.get("HSAPY_ENGINE_AGREEMENT", "").strip().lower() == "full"

# Corpus kernels whose compiled form takes seconds to build (large unrolled or inlined code,
# many kernels in one source); they run with HSAPY_ENGINE_AGREEMENT=full.
SLOW_TO_COMPILE = {"half_math", "mandelbrot", "call_chain", "block_sum_shfl", "mma_gemm_f16",
                   "histogram_global", "saxpy", "stencil_1d", "buffer_copy_bounds",
                   "directed_rounding", "bitonic_sort", "scan_hillis_steele", "float_math",
                   "generic_pointers", "recursive_depth"}

# Without HSAPY_ENGINE_AGREEMENT=full: corpus kernels 0, 6, 12, ... of CASES' order.
QUICK_CORPUS_EVERY = 6

# Operator variants whose three kernels (each compiled) cost more than the default budget.
SLOW_OPERATORS = {("softmax", "cooperative"), ("softmax", "serial"),
                  ("attention", "materialized")}



@pytest.fixture(autouse=True)
def compare_engines(monkeypatch):
    """Dispatches made without a runtime (the ISA harness) read the engine from the env."""
    monkeypatch.setenv("HSAPY_SIM_ENGINE", "compare")


# --- the operator suite ------------------------------------------------------------------------

def _operator_rows():
    targets_full = ("gfx942", "gfx1201", "gfx90a", "gfx1100")
    for op in operators._operators():
        for index, variant in enumerate(op.variants):
            if FULL:
                targets = targets_full
            elif (op.name, variant.name) in SLOW_OPERATORS:
                continue
            else:
                targets = (("gfx942", "gfx1201")[index % 2],)
            for target in targets:
                yield pytest.param(target, op.name, variant.name,
                                   id=f"{op.name}-{variant.name}-{target}")


@pytest.mark.parametrize("target,operator,variant", list(_operator_rows()))
def test_operator_variant_agrees(target, operator, variant):
    operators.test_operator_variant_matches_reference(target, operator, variant)


# --- the fidelity corpus -----------------------------------------------------------------------

def _corpus_rows():
    quick_builds = [b for b in corpus_build.BUILDS if b.opt_level == 3]
    for index, name in enumerate(CASES):
        if FULL:
            builds = corpus_build.BUILDS
        elif name in SLOW_TO_COMPILE or index % QUICK_CORPUS_EVERY:
            continue
        else:
            builds = (quick_builds[index // QUICK_CORPUS_EVERY % len(quick_builds)],)
        for build in builds:
            run_id = f"{name}-{build.id}"
            reason = corpus._xfail_reason(run_id)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(name, build, id=run_id, marks=marks)


def _wanted(session):
    wanted = set()
    for item in session.items:
        spec = getattr(item, "callspec", None)
        if spec is None or item.module.__name__ != __name__ or "build" not in spec.params:
            continue
        case = CASES[spec.params["name"]]
        wanted.add((case.source, case.rdc, spec.params["build"]))
    return wanted


@pytest.fixture(scope="module")
def agreement_builds(request):
    try:
        toolchain.find_tool("clang", min_major=19)
        toolchain.find_tool("ld.lld", min_major=19)
    except toolchain.ToolNotFoundError as exc:
        pytest.skip(f"the corpus needs clang-19 and ld.lld-19: {exc}")
    pool = corpus.Builds(_wanted(request.session))
    yield pool
    pool.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="module")
def compared(agreement_builds):
    from hsapy.runtime import Runtime

    with Runtime(backend="sim", targets=["gfx942", "gfx1201"], watchdog_s=60.0,
                 engine="compare") as rt:
        agents = {agent.name: agent for agent in rt.gpu_agents}
        state = {"executables": {}, "queues": {}}
        yield agents, state
        for queue in state["queues"].values():
            queue.close()
        for executable in state["executables"].values():
            executable.close()


@pytest.mark.parametrize("name,build", list(_corpus_rows()))
def test_corpus_kernel_agrees(name, build, agreement_builds, compared):
    case = CASES[name]
    key = (case.source, case.rdc, build)
    try:
        blob = agreement_builds.get(key).result()
    except toolchain.ToolNotFoundError as exc:
        pytest.skip(f"{case.source} needs {exc}")
    agents, state = compared
    executable = state["executables"].get((case.source, case.rdc, build.id))
    if executable is None:
        agent = agents[build.target]
        executable = state["executables"][(case.source, case.rdc, build.id)] = \
            agent.runtime.load(blob, agent)
    run = KernelRun(executable, agents[build.target],
                    corpus._queue(agents, state, build.target), build.wavefront_size)
    try:
        case.run(run)
    finally:
        run.close()
