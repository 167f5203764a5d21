"""The simulator-fidelity corpus: ordinary HIP kernels (tests/data/corpus) built by clang-19 at
-O0 and -O3 for gfx942, gfx1201 wave32 and gfx1201 wave64 (and as relocatable device code where
they call across files), run through hsapy's public API on the simulator and checked against
numpy references. docs/simulator-fidelity.md says what the corpus covers and how to add to it.

Builds go through hsapy's build cache; the first use of each source submits every build the
selected tests need to a pool of two, so compiling overlaps simulating.
"""
from __future__ import annotations

import fnmatch
from concurrent.futures import Future, ThreadPoolExecutor

import corpus_build
import pytest
from corpus_cases import CASES, KernelRun

from hsapy import toolchain

# Runs that fail on main today: "<class>: <instruction>" -> ids "<kernel>-<build>" (globs; a
# leading "!" excludes). The first matching class marks a run xfail(strict=True): when a fix
# lands the run passes, the strict mark fails the suite, and the entry is removed.
XFAIL: dict[str, list[str]] = {
    # -O0 ockl's __ockl_dm_alloc needs a frame of over 2 KiB; the kernel's dynamic stack gets
    # HIP's default 1 KiB (hsapy.executable.DYNAMIC_STACK_SIZE), so a private-memory fault
    # (scratch_store) stops the queue before the null heap is read and named
    "dynamic stack: scratch_store past 1 KiB in -O0 __ockl_dm_alloc": ["heap_scratch-*-O0"],
}


def _xfail_reason(run_id: str) -> str | None:
    for reason, patterns in XFAIL.items():
        included = any(fnmatch.fnmatchcase(run_id, p) for p in patterns if not p.startswith("!"))
        excluded = any(fnmatch.fnmatchcase(run_id, p[1:]) for p in patterns if p.startswith("!"))
        if included and not excluded:
            return reason
    return None


def _rows():
    for name in CASES:
        for build in corpus_build.BUILDS:
            run_id = f"{name}-{build.id}"
            reason = _xfail_reason(run_id)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(name, build, id=run_id, marks=marks)


def _needed(session) -> set[tuple[str, bool, corpus_build.Build]]:
    wanted = set()
    for item in session.items:
        spec = getattr(item, "callspec", None)
        if spec is None or item.module.__name__ != __name__:
            continue
        case = CASES[spec.params["name"]]
        wanted.add((case.source, case.rdc, spec.params["build"]))
    return wanted


class Builds:
    """Code objects by (source, rdc, build), built two at a time in the background."""

    def __init__(self, wanted) -> None:
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="corpus-build")
        self.futures: dict[tuple, Future] = {}
        # The larger -O0 builds first: the first tests wait for them least.
        for key in sorted(wanted, key=lambda key: (key[2].opt_level, key[2].id, key[0])):
            self.get(key)

    def get(self, key) -> Future:
        if key not in self.futures:
            source, rdc, build = key
            work = corpus_build.build_rdc if rdc else corpus_build.build_source
            self.futures[key] = self.pool.submit(work, source, build)
        return self.futures[key]


@pytest.fixture(scope="module")
def builds(request):
    try:
        toolchain.find_tool("clang", min_major=19)
        toolchain.find_tool("ld.lld", min_major=19)
    except toolchain.ToolNotFoundError as exc:
        pytest.skip(f"the corpus needs clang-19 and ld.lld-19: {exc}")
    pool = Builds(_needed(request.session))
    yield pool
    pool.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="module")
def corpus_runtime():
    from hsapy.runtime import Runtime

    # A run that loops for ever (a known failure) stops after 20 s instead of the default 60;
    # the slowest passing run takes a few seconds.
    with Runtime(backend="sim", targets=["gfx942", "gfx1201"], watchdog_s=20.0) as rt:
        yield rt


@pytest.fixture(scope="module")
def loaded(corpus_runtime):
    """Executables by (source, rdc, build id) and one queue per agent, kept for the module."""
    agents = {agent.name: agent for agent in corpus_runtime.gpu_agents}
    state = {"executables": {}, "queues": {}}
    yield agents, state
    for queue in state["queues"].values():
        queue.close()
    for executable in state["executables"].values():
        executable.close()


def _queue(agents, state, target):
    queue = state["queues"].get(target)
    if queue is None or queue.error is not None or queue.is_closed:
        if queue is not None:
            queue.close()
        queue = state["queues"][target] = agents[target].create_queue(size=64)
    return queue


@pytest.mark.parametrize("name,build", list(_rows()))
def test_corpus_kernel_matches_its_reference(name, build, builds, loaded):
    case = CASES[name]
    key = (case.source, case.rdc, build)
    try:
        blob = builds.get(key).result()
    except toolchain.ToolNotFoundError as exc:
        pytest.skip(f"{case.source} needs {exc}")
    agents, state = loaded
    executable = state["executables"].get((case.source, case.rdc, build.id))
    if executable is None:
        executable = state["executables"][(case.source, case.rdc, build.id)] = \
            agents[build.target].runtime.load(blob, agents[build.target])
    run = KernelRun(executable, agents[build.target], _queue(agents, state, build.target),
                    build.wavefront_size)
    try:
        case.run(run)
    finally:
        run.close()
