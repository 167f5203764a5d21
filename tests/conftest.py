"""Shared fixtures: the backend comes from a fixture so that every end-to-end test written for the
simulator also runs on a real GPU (parametrized ``rocr``, skipped when no GPU agent is present)
and on the real ROCr over the simulated KFD thunk (``rocr-sim``, test id ``rocr_sim``)."""
from __future__ import annotations

import functools
import os

import pytest

ROCR_SIM_SKIP_REASON: str | None = None


def pytest_configure(config) -> None:
    """Load the simulated thunk before anything opens ROCr, so that ROCr binds to it and backend
    rocr-sim works in this process. Without a simulated device attached it forwards every call
    to the real thunk, so backend rocr behaves as without it. Not on a machine with /dev/kfd:
    there the real GPU is what the tests are for."""
    global ROCR_SIM_SKIP_REASON
    if os.path.exists("/dev/kfd"):
        ROCR_SIM_SKIP_REASON = "backend rocr-sim: /dev/kfd exists (this process uses the GPU)"
        return
    try:
        from hsapy.sim.thunk import load

        load()
    except Exception as exc:  # missing compiler or headers: say so in every skipped test
        ROCR_SIM_SKIP_REASON = f"backend rocr-sim unavailable: {exc}"


@functools.cache
def rocr_gpu_available() -> bool:
    """True when the real runtime loads, initializes and reports a GPU agent."""
    try:
        from hsapy.runtime import Runtime

        with Runtime(backend="rocr") as rt:
            return bool(rt.gpu_agents)
    except Exception:
        return False


def _skip_without_gpu(backend: str) -> None:
    if backend == "rocr" and not rocr_gpu_available():
        pytest.skip("backend rocr: no AMD GPU agent on this machine")
    if backend == "rocr-sim" and ROCR_SIM_SKIP_REASON:
        pytest.skip(ROCR_SIM_SKIP_REASON)


def pytest_addoption(parser) -> None:
    parser.addoption("--hsapy-backend", choices=("both", "sim", "rocr", "rocr-sim"), default="both",
                     help="run only the tests parametrised over this backend (hsapy selftest "
                          "uses rocr); default: every test, both backends")


def pytest_collection_modifyitems(config, items) -> None:
    """With --hsapy-backend sim|rocr, keep only the tests parametrised with that backend."""
    wanted = config.getoption("--hsapy-backend")
    if wanted == "both":
        return
    kept, dropped = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        (kept if params.get("backend") == wanted else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


BACKEND_PARAMS = ["sim", "rocr", pytest.param("rocr-sim", id="rocr_sim")]


@pytest.fixture(params=BACKEND_PARAMS)
def backend(request) -> str:
    """Backend name; ``rocr`` is skipped without an AMD GPU, ``rocr-sim`` where the simulated
    thunk cannot be used (see pytest_configure)."""
    _skip_without_gpu(request.param)
    return request.param


@pytest.fixture
def runtime(backend):
    """An open Runtime on each backend (simulator always; rocr when a GPU is present)."""
    from hsapy.runtime import Runtime

    with Runtime(backend=backend) as rt:
        yield rt


@pytest.fixture
def sim_runtime():
    """An open Runtime on the simulator only, for simulator-specific behaviour."""
    from hsapy.runtime import Runtime

    with Runtime(backend="sim") as rt:
        yield rt


@pytest.fixture
def rocr_sim_runtime():
    """An open Runtime on the real ROCr over the simulated thunk (skipped where unavailable)."""
    from hsapy.runtime import Runtime

    _skip_without_gpu("rocr-sim")
    with Runtime(backend="rocr-sim") as rt:
        yield rt


@pytest.fixture
def rocr_sim_available() -> None:
    """Skips the test where backend rocr-sim cannot run (see pytest_configure)."""
    _skip_without_gpu("rocr-sim")
