"""Fixtures of the misuse suite: a simulator runtime with vector_add loaded, a queue and three
buffers (helpers are in _misuse.py)."""
from __future__ import annotations

import numpy as np
import pytest
from _misuse import N

from hsapy.asm import kernels
from hsapy.runtime import Runtime


@pytest.fixture
def rt():
    """A simulator runtime with one gfx942 agent."""
    with Runtime(backend="sim", targets=["gfx942"]) as runtime:
        yield runtime


@pytest.fixture
def agent(rt):
    return rt.gpu()


@pytest.fixture
def executable(rt, agent):
    return rt.load(kernels.build("vector_add", "gfx942"), agent)


@pytest.fixture
def vadd(executable):
    """vector_add(a, b, out, n): out[i] = a[i] + b[i]."""
    return executable.kernel("vector_add")


@pytest.fixture
def queue(agent):
    with agent.create_queue(64) as q:
        yield q


@pytest.fixture
def bufs(rt):
    """a = 0..N-1, b = 1.0, out = 0 (float32, host-visible)."""
    made = [rt.system_pool.allocate(4 * N) for _ in range(3)]
    made[0].copy_from(np.arange(N, dtype=np.float32))
    made[1].copy_from(np.ones(N, np.float32))
    made[2].copy_from(np.zeros(N, np.float32))
    return made
