"""hsapy._hsa.iterate: callbacks never raise into C; their errors come back on the Python side."""
from __future__ import annotations

import pytest

from hsapy._hsa import iterate


def test_iterate_returns_the_handles_in_runtime_order(runtime):
    handles = iterate(runtime.lib, "hsa_iterate_agents", "hsa_agent_t")
    assert handles == [agent.handle for agent in runtime.agents]


def test_visit_returning_true_stops_the_iteration(runtime):
    seen = iterate(runtime.lib, "hsa_iterate_agents", "hsa_agent_t", visit=lambda handle: True)
    assert seen == [runtime.agents[0].handle]  # INFO_BREAK after the first agent: not an error


def test_exception_in_a_callback_is_re_raised_after_the_call(runtime):
    def visit(handle: int) -> None:
        raise ZeroDivisionError(f"agent {handle:#x}")

    with pytest.raises(ZeroDivisionError, match="agent"):
        iterate(runtime.lib, "hsa_iterate_agents", "hsa_agent_t", visit=visit)


def test_iterate_pools_of_an_agent(runtime):
    agent = runtime.gpu_agents[0]
    handles = iterate(runtime.lib, "hsa_amd_agent_iterate_memory_pools", "hsa_amd_memory_pool_t",
                      {"handle": agent.handle})
    assert handles == [pool.handle for pool in agent.memory_pools]
