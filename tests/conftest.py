"""Shared fixtures: the backend comes from a fixture so that every end-to-end test written for the
simulator also runs on a real GPU (parametrized ``rocr``, skipped when no GPU agent is present)."""
from __future__ import annotations

import functools

import pytest


@functools.lru_cache(maxsize=None)
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


def pytest_addoption(parser) -> None:
    parser.addoption("--hsapy-backend", choices=("both", "sim", "rocr"), default="both",
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


@pytest.fixture(params=["sim", "rocr"])
def backend(request) -> str:
    """Backend name; ``rocr`` is skipped without an AMD GPU."""
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
