"""Settings of the host process that the simulator's threads depend on.

numpy's bundled OpenBLAS keeps its worker threads spinning after each multi-threaded call,
2^28 cycles by default (about 0.1 s), before they sleep. A simulated dispatch started in that
time shares the cores with them: on a 16-core host, a 256^3 GEMM dispatch on 16 threads right
after numpy computed its FP64 reference took 5-10 ms instead of 2.5-2.9 ms. OpenBLAS reads
``OPENBLAS_THREAD_TIMEOUT`` (the spin as a power of two of cycles, 4 to 30) when numpy loads it,
so it must be set before numpy is first imported. This module imports nothing heavy.
"""
from __future__ import annotations

import os

__all__ = ["BLAS_SPIN", "quiet_blas_spin"]

BLAS_SPIN = ("OPENBLAS_THREAD_TIMEOUT", "4")


def quiet_blas_spin() -> None:
    """Let OpenBLAS's threads sleep as soon as a call is done, unless the environment says
    otherwise already. Has no effect once numpy has been imported."""
    os.environ.setdefault(*BLAS_SPIN)
