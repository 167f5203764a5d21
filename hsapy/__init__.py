"""hsapy: drive AMD GPUs from Python at the HSA/AQL level, without the HIP runtime.

The public objects come from their parent: open a :class:`Runtime`, take an agent from it, then
memory pools, queues, signals and executables from the agent or the runtime.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from hsapy._version import __version__
from hsapy.errors import BackendUnavailableError, HSAError

if TYPE_CHECKING:   # for type checkers; at run time Runtime is imported on first use
    from hsapy.runtime import Runtime

__all__ = ["BackendUnavailableError", "HSAError", "Runtime", "__version__"]


def __getattr__(name: str) -> type[Runtime]:
    # Lazy so that `import hsapy` stays cheap and side-effect free (no library loading).
    if name == "Runtime":
        from hsapy.runtime import Runtime

        return Runtime
    raise AttributeError(f"module 'hsapy' has no attribute {name!r}")
