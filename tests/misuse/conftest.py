"""Shared by the misuse suite: a simulator runtime with vector_add loaded, a queue, buffers, and
``isolated(code)``, which runs a snippet in a fresh interpreter (for misuse that used to crash
the process: a segfault there fails one test instead of ending the run)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hsapy.asm import kernels
from hsapy.runtime import Runtime

N = 256
TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent

# What every isolated snippet starts from: the names the fixtures below give a test.
PRELUDE = textwrap.dedent("""
    import gc, math, sys, time
    import numpy as np
    from hsapy import aql, errors
    from hsapy.asm import kernels
    from hsapy.runtime import Runtime
    N = 256

    def setup(queue_size=64, executor=None):
        rt = Runtime(backend="sim", targets=["gfx942"], executor=executor)
        agent = rt.gpu()
        exe = rt.load(kernels.build("vector_add", "gfx942"), agent)
        return rt, agent, exe, exe.kernel("vector_add"), agent.create_queue(queue_size)
""")


@dataclass
class Isolated:
    """What a snippet run in its own interpreter did."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def crashed(self) -> bool:
        """Killed by a signal (SIGSEGV, SIGABRT: "double free or corruption")."""
        return self.returncode < 0

    def lines(self) -> list[str]:
        return self.stdout.strip().splitlines()


def isolated(code: str, timeout: float = 120, memory_limit: int | None = None) -> Isolated:
    """Run ``PRELUDE + code`` in a fresh interpreter (``memory_limit``: bytes of address space
    it may use, so a runaway read fails there instead of exhausting the machine)."""
    def limit() -> None:
        if memory_limit is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    done = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env,
                          preexec_fn=limit)
    return Isolated(done.returncode, done.stdout, done.stderr)


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


def gate(rt: Any, queue: Any) -> Any:
    """Hold ``queue``: a barrier-AND on a signal at 1 is published first, so whatever follows
    waits until the returned signal is stored 0."""
    from hsapy import aql

    signal = rt.create_signal(1)
    queue.publish(aql.barrier_and([signal.handle]))
    return signal
