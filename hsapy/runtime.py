"""The Runtime: one initialized HSA runtime (real ROCr or the simulator) and its agents.

``Runtime(backend="auto")`` uses ROCr when ``libhsa-runtime64`` loads, ``hsa_init`` succeeds and
a GPU agent exists; otherwise the simulator. ``rt.backend`` and ``rt.backend_reason`` say which
was chosen and why. ``HSAPY_BACKEND`` sets the default backend.
"""
from __future__ import annotations

import atexit
import os
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hsapy._checks import check_agent
from hsapy._hsa import call, check, constant, ffi, iterate, load_rocr
from hsapy._lifetime import (
    FORKED,
    HandleState,
    NotCopyable,
    Outstanding,
    drain,
    park,
    release_when_collected,
)
from hsapy.diagnose import explain_rocr_failure
from hsapy.errors import (
    BackendUnavailableError,
    HsapyError,
    HsapyTypeError,
    HsapyValueError,
    LibraryLoadError,
)
from hsapy.hsa_enums import HSA_STATUS_SUCCESS

if TYPE_CHECKING:
    from hsapy.agent import Agent
    from hsapy.executable import Executable
    from hsapy.memory import Buffer, MemoryPool
    from hsapy.signal import Signal, SignalPool

__all__ = ["Runtime", "BACKENDS"]

BACKENDS = ("auto", "rocr", "sim", "rocr-sim")

# Runtime.system_info: key -> (hsa_system_info_t enumerator, C type of the value) (hsa.h).
SYSTEM_INFO: dict[str, tuple[str, str]] = {
    "version_major": ("HSA_SYSTEM_INFO_VERSION_MAJOR", "uint16_t"),
    "version_minor": ("HSA_SYSTEM_INFO_VERSION_MINOR", "uint16_t"),
    "timestamp_frequency": ("HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY", "uint64_t"),
    "signal_max_wait": ("HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT", "uint64_t"),
    "endianness": ("HSA_SYSTEM_INFO_ENDIANNESS", "uint32_t"),
    "machine_model": ("HSA_SYSTEM_INFO_MACHINE_MODEL", "uint32_t"),
}


def _open_rocr() -> Any:
    import sys

    kfd = sys.modules.get("hsapy.sim.thunk.kfd")
    device = kfd.attached() if kfd is not None else None
    if device is not None and device.is_open:
        # ROCr is one per process and is running over the simulated thunk: hsa_init would
        # succeed and report the simulated device as if it were a GPU.
        raise LibraryLoadError(
            "ROCr in this process runs over the simulated KFD thunk (an open "
            "Runtime(backend='rocr-sim')); close it before opening backend rocr")
    try:
        lib = load_rocr()
        call(lib, "hsa_init")
    except HsapyError as exc:
        raise BackendUnavailableError(explain_rocr_failure(exc)) from exc
    return lib


def _open_sim(targets: Any, executor: Any, watchdog_s: Any = None, engine: Any = None) -> Any:
    from hsapy.sim import SimLib

    lib = SimLib(ffi, targets=targets, executor=executor, watchdog_s=watchdog_s, engine=engine)
    call(lib, "hsa_init")
    return lib


def _open_rocr_sim(targets: Any, executor: Any, watchdog_s: Any = None,
                   engine: Any = None) -> Any:
    from hsapy.sim.thunk import open_rocr_sim

    return open_rocr_sim(targets, executor, watchdog_s, engine)


def _refuse_simulator_options(options: dict[str, Any]) -> None:
    """Backend "rocr" takes none of the simulator's options: one given would be ignored."""
    for name, value in options.items():
        if value is not None:
            raise HsapyValueError(
                f"Runtime(backend='rocr'): {name}={value!r:.40} applies only to the simulator "
                "backends ('sim', 'rocr-sim'; 'auto' when it chooses the simulator); ROCr "
                f"would ignore it. Drop {name}=, or choose one of those backends")


def _check_simulator_options(options: dict[str, Any]) -> None:
    """Backend "auto": each simulator option given is checked as the simulator checks it, before
    the backend is chosen, so a bad value is refused whichever backend "auto" picks (on a GPU
    it would otherwise pass unseen, and fail on the first machine without one)."""
    from hsapy.sim.execution import resolve_engine, resolve_watchdog
    from hsapy.sim.executors import check_executor
    from hsapy.sim.targets import resolve_targets

    checks: dict[str, Callable[[Any], Any]] = {
        "targets": resolve_targets, "executor": check_executor, "watchdog_s": resolve_watchdog,
        "engine": resolve_engine}
    for name, value in options.items():
        if value is not None:
            checks[name](value)


def _close_at_exit(runtime: weakref.ref[Runtime]) -> Callable[[], None]:
    def close() -> None:
        alive = runtime()
        if alive is not None:
            alive.close()
            alive._outstanding.now()    # at exit, numpy views no longer hold the shut-down
    return close


def _iterate_agents(lib: Any) -> list[int]:
    return iterate(lib, "hsa_iterate_agents", "hsa_agent_t")


def _shut_down(lib: Any, outstanding: Outstanding) -> Callable[[], None]:
    """The runtime's release: hsa_shut_down once nothing holds its memory any more (numpy views
    of buffers or rings keep it mapped until they are collected; see Runtime.close)."""
    def shut_down() -> None:
        status = lib.hsa_shut_down()
        if status != HSA_STATUS_SUCCESS:
            raise RuntimeError(f"hsa_shut_down returned {status:#x}")

    def release() -> None:
        outstanding.after(shut_down)
    return release


# Every Runtime opened in this process, for the fork hook below.
_OPENED: weakref.WeakSet[Runtime] = weakref.WeakSet()


def _forsake_after_fork() -> None:
    """In a child after os.fork(): every runtime opened before the fork, and all its objects,
    are closed by the fork (Runtime's docstring says why)."""
    for runtime in list(_OPENED):
        runtime._forsake(FORKED)
    _OPENED.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forsake_after_fork)


def _all_done(marks: list[Callable[[], bool]]) -> bool:
    """True once every mark (a callable: has this dispatch or copy completed?) says so; the
    ones that did are dropped, so each is asked until it answers yes, not after."""
    while marks:
        if not marks[-1]():
            return False
        marks.pop()
    return True


class Runtime(NotCopyable):
    """An initialized HSA runtime. Use as a context manager; ``close()`` is idempotent.

    ``backend``: "auto" (default, or ``HSAPY_BACKEND``), "rocr", "sim" or "rocr-sim" (the real
    ROCr over the simulated KFD thunk, docs/rocr-over-simulated-thunk.md). ``targets`` chooses the
    simulator's GPU agents (e.g. ``["gfx942"]``; default gfx942 + gfx1201 or
    ``HSAPY_SIM_TARGETS``); ``executor`` selects the simulator's executor ("null" consumes
    dispatches without running them); ``watchdog_s`` is how many host seconds one simulated
    dispatch may run before it is stopped with an error (default 60, ``HSAPY_SIM_WATCHDOG``;
    0 disables it; a finite number of seconds up to 2**40); ``engine`` is who runs simulated
    kernel code: "interp" (the ISA interpreter), "jit" (compiled with llvmlite) or "auto"
    (default, or ``HSAPY_SIM_ENGINE``: compiled for large dispatches).

    ``targets``, ``executor``, ``watchdog_s`` and ``engine`` are the simulator's: backend "rocr"
    refuses them (HsapyValueError naming the option) rather than ignore them; "auto" checks them
    whichever backend it picks (a bad value is refused on a GPU machine too), uses them when it
    chooses the simulator, and ``backend_reason`` says when it chose ROCr instead.

    A runtime does not cross ``os.fork()``: in the child, it and every object made from it
    (queues, buffers, signals, executables, prepared launches) raise ClosedError naming the
    fork on every use, and nothing of the parent's is released there. The child inherits none
    of the runtime's threads (on the simulator: its packet processors; on ROCr: its driver
    state), and a lock one of them held at the fork would stay held for ever. Open a new
    Runtime in the child instead. Objects may be shared between threads of one process.
    """

    # Whether the library's signals have the AMD layout that the dispatch path reads directly
    # (hsapy.signal.value_words probes it once per runtime; None until then, and tests set it).
    _amd_signal_layout: bool | None = None

    def __init__(self, backend: str | None = None, targets: Any = None,
                 executor: Any = None, watchdog_s: float | None = None,
                 engine: str | None = None) -> None:
        if backend is None:
            backend = os.environ.get("HSAPY_BACKEND") or "auto"
            if backend not in BACKENDS:
                raise HsapyValueError(f"HSAPY_BACKEND={backend!r} is not a backend: set it to "
                                      f"one of {', '.join(BACKENDS)}, or unset it")
        if not isinstance(backend, str) or backend not in BACKENDS:
            raise HsapyValueError(f"unknown backend {backend!r}: choose one of "
                                  f"{', '.join(BACKENDS)} (or set HSAPY_BACKEND)")
        self.ffi = ffi
        simulator_options = {"targets": targets, "executor": executor, "watchdog_s": watchdog_s,
                             "engine": engine}
        if backend == "rocr":
            _refuse_simulator_options(simulator_options)
            lib, reason = _open_rocr(), "requested"
        elif backend == "sim":
            lib, reason = _open_sim(targets, executor, watchdog_s, engine), "requested"
        elif backend == "rocr-sim":
            lib, reason = _open_rocr_sim(targets, executor, watchdog_s, engine), "requested"
        else:
            _check_simulator_options(simulator_options)
            lib, backend, reason = self._auto(targets, executor, watchdog_s, engine)
            given = [name for name, value in simulator_options.items() if value is not None]
            if backend == "rocr" and given:
                reason += f" (the simulator's {', '.join(given)} not used)"
        self.lib = lib
        self.backend = backend
        self.backend_reason = reason
        # The real runtime's rules apply (ROCr, on a GPU or over the simulated thunk) / times
        # and results come from the simulator (hsapy.sim, directly or under ROCr).
        self.runs_rocr = backend in ("rocr", "rocr-sim")
        self.is_simulated = backend in ("sim", "rocr-sim")
        # What still holds memory of this runtime once it is closed (see close()).
        self._outstanding = Outstanding()
        self._state = HandleState("Runtime", _shut_down(lib, self._outstanding),
                                  what=f"the runtime ({backend} backend)")
        release_when_collected(self, self._state)
        self._signal_pool: SignalPool | None = None
        self._children: weakref.WeakSet[HandleState] = weakref.WeakSet()
        # Kernarg rings and batch arenas (hsapy.dispatch), each able to list its dispatches
        # in flight, and the completion signals of asynchronous copies not yet seen complete.
        self._dispatch_trackers: weakref.WeakSet[Any] = weakref.WeakSet()
        self._copies: list[Callable[[], bool]] = []
        # Open queues: a packet published on one may point at anything (raw AQL included).
        self._queues: weakref.WeakSet[Any] = weakref.WeakSet()
        self._exit_hook: Callable[[], None] | None = None
        _OPENED.add(self)
        if backend == "rocr-sim":
            # ROCr's threads call the simulated thunk, which is Python: ROCr must be shut down
            # (its threads joined, queues destroyed, children first) before the interpreter
            # finalizes, or a thread entering it then ends the process (hsapy/sim/thunk).
            self._exit_hook = _close_at_exit(weakref.ref(self))
            atexit.register(self._exit_hook)
        try:
            self._discover()
        except BaseException:
            self.close()  # a half-built runtime never stays initialized
            raise

    def _discover(self) -> None:
        from hsapy.agent import Agent

        self.agents: list[Agent] = [Agent(self, h) for h in _iterate_agents(self.lib)]
        self.gpu_agents: list[Agent] = [a for a in self.agents if a.is_gpu]
        self.cpu_agents: list[Agent] = [a for a in self.agents if not a.is_gpu]
        self.system_info = self._read_system_info()
        self.timestamp_frequency = self.system_info["timestamp_frequency"] or 1

    def _track(self, state: HandleState) -> None:
        """Remember a child's handle state so that close() releases it before hsa_shut_down."""
        self._state.check()
        self._children.add(state)

    # -- what the GPU may still be using -------------------------------------------------------
    def _in_flight(self) -> list[Callable[[], bool]]:
        """Marks (callables answering "has it completed?") for every dispatch published through
        hsapy.dispatch and every asynchronous copy that has not completed yet, and for every
        queue that has not yet consumed all the packets published on it so far (raw packets
        may point at memory, code or signals too)."""
        marks: list[Callable[[], bool]] = []
        for queue in list(self._queues):
            mark = queue.consumed_mark()
            if mark is not None:
                marks.append(mark)
        for tracker in list(self._dispatch_trackers):
            marks.extend(tracker.in_flight())
        if self._copies:
            self._copies = [copy for copy in self._copies if not copy()]
            marks.extend(self._copies)
        return marks

    def _after_dispatches(self, release: Callable[[], None]) -> None:
        """Run ``release`` (which frees memory or code a packet may point at) now when nothing
        is in flight, else once every dispatch and copy in flight now has completed (or its
        queue was closed or stopped with an error: its packets never run again). Meanwhile the
        runtime's shut-down waits for it."""
        marks = self._in_flight()
        if not marks:
            release()
            return
        outstanding = self._outstanding
        outstanding.add()

        def release_then_let_go() -> None:
            try:
                release()
            finally:
                outstanding.done()

        park(lambda: _all_done(marks), release_then_let_go)

    @staticmethod
    def _auto(targets: Any, executor: Any, watchdog_s: Any = None,
              engine: Any = None) -> tuple[Any, str, str]:
        try:
            lib = _open_rocr()
        except BackendUnavailableError as exc:
            return (_open_sim(targets, executor, watchdog_s, engine), "sim",
                    f"ROCr unavailable: {exc}")
        if any(_is_gpu(lib, h) for h in _iterate_agents(lib)):
            return lib, "rocr", "ROCr reports a GPU agent"
        lib.hsa_shut_down()
        return (_open_sim(targets, executor, watchdog_s, engine), "sim",
                "ROCr reports no GPU agent")

    def _read_system_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {}
        for key, (attribute, ctype) in SYSTEM_INFO.items():
            out = ffi.new(ctype + " *")
            ok = self.lib.hsa_system_get_info(constant(attribute), out) == HSA_STATUS_SUCCESS
            info[key] = out[0] if ok else None
        return info

    def timestamp(self) -> int:
        """The system timestamp (HSA_SYSTEM_INFO_TIMESTAMP), in ticks of timestamp_frequency."""
        self._state.check()
        out = ffi.new("uint64_t *")
        call(self.lib, "hsa_system_get_info", constant("HSA_SYSTEM_INFO_TIMESTAMP"), out)
        return out[0]

    # -- lifetime ----------------------------------------------------------------------------
    @property
    def is_closed(self) -> bool:
        """True once close() has shut the runtime down."""
        return self._state.closed

    def close(self) -> None:
        """Shut the runtime down (idempotent). Open queues, buffers, signals and executables are
        closed first; any later use of them raises ClosedError.

        Memory that numpy still views (``Buffer.numpy()``, ``Queue.ring``) is never unmapped
        under the view: such a buffer is freed, and ``hsa_shut_down`` called, once the last
        view is collected."""
        if self._state.closed:
            return
        from hsapy.observers import OBSERVERS, notify

        if OBSERVERS:
            notify("runtime_closing", self)
        drain()  # releases that finalizers deferred (hsapy._lifetime) happen before shut-down
        if self._signal_pool is not None:
            self._signal_pool.close()
        # Queues first: their processors stop, so nothing is in flight afterwards and the
        # releases parked until their dispatches completed can run; then everything else.
        children = list(self._children)
        for state in children:
            if state.kind == "Queue":
                state.close("Runtime.close()")
        drain()
        for state in children:
            state.close("Runtime.close()")
        self._copies.clear()
        drain()
        self._state.close()
        if self._exit_hook is not None:
            atexit.unregister(self._exit_hook)
            self._exit_hook = None

    def _forsake(self, by: str) -> None:
        """In a child after os.fork(): close this runtime and its objects without releasing
        anything (the handles are the parent's), so every use raises ClosedError naming ``by``."""
        for queue in list(self._queues):
            queue._forsake(by)
        for state in list(self._children):
            state.forsake(by)
        self._state.forsake(by)
        if self._exit_hook is not None:     # ROCr in the child is not this process's to shut
            atexit.unregister(self._exit_hook)
            self._exit_hook = None

    def __enter__(self) -> Runtime:
        self._state.check()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        names = ", ".join(a.name for a in self.gpu_agents) or "no GPU"
        return f"<Runtime backend={self.backend} ({names})>"

    # -- agents and pools --------------------------------------------------------------------
    def gpu(self, target: str | None = None) -> Agent:
        """The first GPU agent (whose target is ``target``, e.g. "gfx942", when given)."""
        self._state.check()     # (an agent of a closed runtime is no agent to use)
        if target is not None and not isinstance(target, str):
            raise HsapyTypeError(f"Runtime.gpu: target is a name such as 'gfx942', not "
                                 f"{type(target).__name__} {target!r:.40}")
        for agent in self.gpu_agents:
            if target is None or agent.target == target or agent.name == target:
                return agent
        have = ", ".join(a.target for a in self.gpu_agents) or "none"
        raise HsapyValueError(f"no GPU agent {target or ''} in this runtime (GPU agents: {have}); "
                              "on the simulator choose targets with HSAPY_SIM_TARGETS")

    @property
    def system_pool(self) -> MemoryPool:
        """The CPU agent's fine-grained global pool (host memory every agent may access)."""
        for agent in self.cpu_agents:
            for pool in agent.memory_pools:
                if pool.segment == "global" and pool.is_fine_grained and pool.is_allocation_allowed:
                    return pool
        raise HsapyValueError("the runtime reports no fine-grained system memory pool")

    @property
    def kernarg_pool(self) -> MemoryPool:
        """The system pool flagged KERNARG_INIT (where kernarg segments live)."""
        for agent in self.cpu_agents:
            for pool in agent.memory_pools:
                if pool.is_kernarg and pool.is_allocation_allowed:
                    return pool
        return self.system_pool

    # -- signals -----------------------------------------------------------------------------
    def create_signal(self, initial_value: int = 1) -> Signal:
        """A new signal (hsa_signal_create with no consumer restriction)."""
        from hsapy.signal import Signal, signal_value

        self._state.check()
        initial_value = signal_value(initial_value, "Runtime.create_signal: initial_value")
        out = ffi.new("hsa_signal_t *")
        call(self.lib, "hsa_signal_create", initial_value, 0, ffi.NULL, out)
        return Signal(self, out.handle)

    @property
    def signal_pool(self) -> SignalPool:
        """The runtime's shared SignalPool."""
        self._state.check()
        if self._signal_pool is None:
            from hsapy.signal import SignalPool

            self._signal_pool = SignalPool(self)
        return self._signal_pool

    # -- copies ------------------------------------------------------------------------------
    def copy(self, dst: Buffer, src: Buffer, nbytes: int, deps: Any = (),
             completion: Signal | None = None, timeout: float = 10.0) -> Signal | None:
        """Copy ``nbytes`` from buffer ``src`` to ``dst`` with hsa_amd_memory_async_copy.

        The copy starts once every signal in ``deps`` has reached a value below 1 (the copy
        engine waits, not the host). With ``completion`` given the copy is asynchronous: the call
        returns at once and ``completion`` is decremented when the bytes have landed. Otherwise a
        pooled signal is used and this waits at most ``timeout`` seconds (WaitTimeoutError).
        """
        from hsapy.memory import Buffer
        from hsapy.signal import Condition, Signal, check_timeout

        self._state.check()
        for name, buffer in (("dst", dst), ("src", src)):
            if not isinstance(buffer, Buffer):
                raise HsapyTypeError(f"Runtime.copy: {name} must be a Buffer (from "
                                     f"pool.allocate), not {type(buffer).__name__}")
            buffer._state.check()
            if buffer.runtime is not self:
                raise HsapyValueError(f"Runtime.copy: {name} belongs to another runtime")
        if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
            raise HsapyValueError(f"copy: nbytes must be an int >= 0, got {nbytes!r}")
        if nbytes > dst.size or nbytes > src.size:
            raise HsapyValueError(
                f"copy of {nbytes} bytes does not fit (dst {dst.size}, src {src.size} bytes)")
        if isinstance(deps, Signal):
            deps = [deps]
        try:
            deps = list(deps)
        except TypeError:
            raise HsapyTypeError(f"Runtime.copy: deps must be a list of Signals, not "
                                 f"{type(deps).__name__}") from None
        for signal in deps + ([completion] if completion is not None else []):
            if not isinstance(signal, Signal):
                raise HsapyTypeError(f"Runtime.copy: deps and completion are Signals, not "
                                     f"{type(signal).__name__}")
            signal._state.check()
            if signal._runtime is not self:
                raise HsapyValueError("Runtime.copy: a dependency or completion signal belongs "
                                      "to another Runtime; create it with this runtime's "
                                      "create_signal")
        if completion is None:
            timeout = check_timeout(timeout, "Runtime.copy")
        dep_array = ffi.NULL
        if deps:
            dep_array = ffi.new("hsa_signal_t[]", [{"handle": s.handle} for s in deps])
        pool = self.signal_pool
        signal = completion if completion is not None else pool.acquire(1)
        status = self.lib.hsa_amd_memory_async_copy(
            ffi.cast("void *", dst.address), {"handle": self._copy_agent(dst).handle},
            ffi.cast("void *", src.address), {"handle": self._copy_agent(src).handle},
            nbytes, len(deps), dep_array, signal.cdata)
        if status != HSA_STATUS_SUCCESS and completion is None:
            pool.release(signal)  # nothing was started: the signal is untouched
        check(status, "hsa_amd_memory_async_copy", self.lib)
        if completion is not None:
            # Until it completes, the copy engine reads src and writes dst: freeing either
            # waits for it (see _after_dispatches).
            self._copies.append(_copy_mark(completion))
            return completion
        # On a timeout the copy may still land and decrement the signal later: it is not given
        # back to the pool (where another wait would see that stray decrement).
        signal.wait(Condition.LT, 1, timeout=timeout)
        pool.release(signal)
        return None

    def _copy_agent(self, buffer: Buffer) -> Agent:
        # The copy engine of the GPU side does the work; host buffers are named by a GPU agent
        # that may access them (ROCr wants the agent owning each pointer's pool).
        return buffer.pool.agent

    # -- code objects ------------------------------------------------------------------------
    def load(self, code_object: Any, agent: Agent | None = None) -> Executable:
        """Load a code object (bytes, path, offload bundle or CodeObject) for ``agent``
        (default: the first GPU agent) through the runtime's loader; returns an Executable."""
        from hsapy.executable import Executable

        self._state.check()
        if agent is not None:
            check_agent(agent, self, "Runtime.load")
        return Executable(self, code_object, agent if agent is not None else self.gpu())


def _copy_mark(completion: Signal) -> Callable[[], bool]:
    """Has the asynchronous copy that decrements ``completion`` completed? (Or can it no longer:
    its signal was destroyed.)"""
    state, load = completion._state, completion._lib.hsa_signal_load_relaxed
    cdata = completion.cdata

    def done() -> bool:
        return state.closed or load(cdata) < 1
    return done


def _is_gpu(lib: Any, handle: int) -> bool:
    out = ffi.new("uint32_t *")
    status = lib.hsa_agent_get_info({"handle": handle}, constant("HSA_AGENT_INFO_DEVICE"), out)
    return status == HSA_STATUS_SUCCESS and out[0] == constant("HSA_DEVICE_TYPE_GPU")
