"""The executor seam between the packet processor and the ISA interpreter (docs/internals.md).

The packet processor validates a kernel dispatch packet, builds a :class:`DispatchContext` and
calls ``executor.execute(ctx)``, which returns when every wave has ended or raises
:class:`SimFault`. ``hsapy.sim.isa`` installs interpreters with :func:`register_executor` for the
families "gfx9", "gfx11", "gfx12"; hsapy/sim/executors.py chooses an agent's executor. This
module sits below both the packet processor and the interpreter: it imports neither.

The watchdog: a dispatch that runs longer than ``watchdog_s`` seconds of host time (default
:data:`DEFAULT_WATCHDOG_S`; ``HSAPY_SIM_WATCHDOG`` or ``Runtime(backend="sim", watchdog_s=...)``;
0 turns it off) stops with ``HSA_STATUS_ERROR_EXCEPTION`` through the queue's error path. The
packet processor also passes ``should_stop``: an executor polls both every few thousand
instructions (:meth:`DispatchContext.poll`) and raises :class:`DispatchCancelled` when the queue
is being destroyed, so ``hsa_queue_destroy`` never waits for a long kernel.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from hsapy.hsa_enums import HSA_STATUS_ERROR_EXCEPTION
from hsapy.sim.clock import SimClock
from hsapy.sim.memory import SimMemory
from hsapy.sim.targets import GpuProfile

if TYPE_CHECKING:  # the loader (hsapy/sim/loader.py) defines LoadedKernel
    from hsapy.sim.loader import LoadedKernel  # noqa: F401

__all__ = [
    "DispatchContext",
    "Executor",
    "ExecutorFactory",
    "SimFault",
    "DispatchCancelled",
    "DEFAULT_WATCHDOG_S",
    "resolve_watchdog",
    "resolve_engine",
    "ENGINES",
    "register_executor",
    "unregister_executor",
    "registered_factory",
]

# Host seconds one dispatch may run before the watchdog stops it. Generous: the slowest
# operator tests run a few seconds per dispatch; an endless loop is stopped within a minute.
DEFAULT_WATCHDOG_S = 60.0
WATCHDOG_ENV = "HSAPY_SIM_WATCHDOG"
# Who runs kernel code: the ISA interpreter, the compiled engine (hsapy/sim/isa/jit), "auto"
# (compiled for large dispatches when llvmlite loads, interpreted otherwise), or "compare"
# (both, one after the other from the same memory: the queue stops when they disagree; tests).
ENGINE_ENV = "HSAPY_SIM_ENGINE"
ENGINES = ("auto", "interp", "jit", "compare")


class SimFault(Exception):
    """A dispatch failed: ``status`` is the hsa_status_t the queue's error callback receives."""

    def __init__(self, status: int, message: str, address: int | None = None) -> None:
        self.status = int(status)
        self.message = message
        self.address = address
        super().__init__(message)


class DispatchCancelled(Exception):
    """The queue running the dispatch is being destroyed or inactivated: stop quietly."""


def resolve_watchdog(value: Any = None) -> float | None:
    """The watchdog limit in seconds (None: no limit) from ``value``, else ``HSAPY_SIM_WATCHDOG``,
    else :data:`DEFAULT_WATCHDOG_S`. 0 turns the watchdog off (the environment's text may also
    say "off"). The argument is a number, checked as every limit in seconds is
    (hsapy._checks.check_timeout: not a bool, a str, NaN, negative, inf or past 2**40 s)."""
    from hsapy._checks import check_timeout
    from hsapy.errors import HsapyError, HsapyValueError

    source = "watchdog_s"
    if value is None:
        text = os.environ.get(WATCHDOG_ENV) or None
        if text is None:
            return DEFAULT_WATCHDOG_S
        if text.strip().lower() in ("off", "none", "inf"):
            return None
        source = WATCHDOG_ENV
        try:
            value = float(text)
        except ValueError:
            value = text
    try:
        seconds = check_timeout(value, source)
    except HsapyError:
        raise HsapyValueError(f"{source}={value!r:.40}: the simulator's dispatch watchdog takes "
                              "a finite number of seconds from 0 (0 turns it off) to 2**40, not "
                              f"{type(value).__name__}") from None
    return float(seconds) or None


THREADS_ENV = "HSAPY_SIM_THREADS"


def resolve_threads(value: Any = None) -> int | None:
    """Host threads for the compiled engine's chunks from ``value``, else ``HSAPY_SIM_THREADS``;
    None when neither is set (the engine's default: the usable cores, at most 16)."""
    source = "threads"
    if value is None:
        value = os.environ.get(THREADS_ENV) or None
        source = THREADS_ENV
    if value is None:
        return None
    try:
        count = int(str(value).strip())
    except ValueError:
        count = 0
    if count < 1:
        from hsapy.errors import HsapyValueError

        raise HsapyValueError(f"{source}={value!r}: the compiled engine's host threads take a "
                              f"whole number >= 1 (leave {THREADS_ENV} unset for the default: "
                              "the usable cores, at most 16)")
    return count


def resolve_engine(value: Any = None) -> str:
    """The simulator's execution engine from ``value``, else ``HSAPY_SIM_ENGINE``, else
    "auto"; one of :data:`ENGINES`."""
    source = "engine"
    if value is None:
        value = os.environ.get(ENGINE_ENV) or None
        source = ENGINE_ENV
    if value is None:
        return "auto"
    engine = str(value).strip().lower()
    if engine not in ENGINES:
        from hsapy.errors import HsapyValueError

        raise HsapyValueError(f"{source}={value!r}: the simulator's execution engine is one of "
                              f"{', '.join(ENGINES)} (interp: the ISA interpreter; jit: kernels "
                              "compiled with llvmlite; auto: compiled for large dispatches; "
                              "compare: both, checking that they agree)")
    return engine


@dataclass
class DispatchContext:
    """Everything an executor needs to run one kernel dispatch (see docs/internals.md)."""

    agent: GpuProfile            # target name, wave size, CU count, LDS size, ...
    memory: SimMemory
    packet_address: int          # the AQL packet in the ring (dispatch ptr)
    queue_address: int           # the hsa_queue_t / amd_queue_t (queue ptr)
    dispatch_id: int             # the packet index
    setup_dims: int
    workgroup_size: tuple[int, int, int]
    grid_size: tuple[int, int, int]
    private_segment_size: int    # bytes per work-item, from the packet
    group_segment_size: int      # LDS bytes per workgroup, from the packet
    kernel_object: int           # address of the 64-byte kernel descriptor
    kernarg_address: int
    kernel: Any                  # LoadedKernel: the loader's record (descriptor, code object, base)
    clock: SimClock              # simulated timestamp counter (s_memtime / s_memrealtime)
    agent_handle: int = 0        # the hsa_agent_t handle of the executing agent
    watchdog_s: float | None = DEFAULT_WATCHDOG_S  # host seconds it may run (None: no limit)
    should_stop: Callable[[], bool] | None = None  # True once the queue is being destroyed
    started: float = field(default_factory=time.monotonic)
    engine: str = field(default_factory=resolve_engine)   # "interp", "jit" or "auto"

    def kernel_name(self) -> str:
        """The kernel's name from the loader's record, else its descriptor address."""
        name = getattr(self.kernel, "name", None)
        return str(name) if name else f"kernel object {self.kernel_object:#x}"

    def poll(self) -> None:
        """Raise DispatchCancelled when the queue is stopping, SimFault when the watchdog fires.

        Executors call this every few thousand instructions (and between chunks of work)."""
        if self.should_stop is not None and self.should_stop():
            raise DispatchCancelled(f"dispatch {self.dispatch_id} cancelled: its queue stopped")
        limit = self.watchdog_s
        if limit is not None and time.monotonic() - self.started > limit:
            raise SimFault(
                HSA_STATUS_ERROR_EXCEPTION,
                f"watchdog: dispatch {self.dispatch_id} of {self.kernel_name()} on "
                f"{self.agent.name} ran longer than {limit:g} s of host time (endless loop?) "
                f"and was stopped. Raise the limit with Runtime(backend='sim', watchdog_s=...) "
                f"or {WATCHDOG_ENV}=<seconds> (0 disables the watchdog)")


class Executor(Protocol):
    """Runs a dispatch; returns when every wave ended, raises SimFault on failure."""

    def execute(self, ctx: DispatchContext) -> None:
        """Run the dispatch described by ``ctx``."""
        ...


ExecutorFactory = Callable[[GpuProfile], Executor]

_registry_lock = threading.Lock()
_factories: dict[str, ExecutorFactory] = {}


def register_executor(family: str, factory: ExecutorFactory) -> None:
    """Install ``factory(profile) -> Executor`` for an ISA family ("gfx9", "gfx11", "gfx12").

    Agents pick it up at their next dispatch (executors are created lazily and cached per agent
    and factory).
    """
    with _registry_lock:
        _factories[family] = factory


def unregister_executor(family: str) -> None:
    """Remove the factory for ``family`` (tests); the built-in executor applies again."""
    with _registry_lock:
        _factories.pop(family, None)


def registered_factory(family: str) -> ExecutorFactory | None:
    """The factory registered for ``family``, or None."""
    return _factories.get(family)
