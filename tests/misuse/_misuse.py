"""Helpers of the misuse suite: ``isolated(code)``, which runs a snippet in a fresh interpreter
(for misuse that used to crash the process: a segfault there fails one test instead of ending
the run), and ``gate``, which holds a queue behind a signal."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

N = 256
TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent

# What every isolated snippet starts from: the names the fixtures give a test.
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


def gate(rt: Any, queue: Any) -> Any:
    """Hold ``queue``: a barrier-AND on a signal at 1 is published first, so whatever follows
    waits until the returned signal is stored 0."""
    from hsapy import aql

    signal = rt.create_signal(1)
    queue.publish(aql.barrier_and([signal.handle]))
    return signal
