"""SimLib: the simulated HSA runtime behind the same C API as ROCr.

``lib = SimLib(ffi)`` has one method per function of hsapy's cdef (hsapy/_hsa/_cdef.py) with the
same name, argument order, out-pointer conventions, ffi types and status codes as ROCr, and the
enum constants as attributes (like a dlopen'ed lib). Methods never raise for bad input: they
return the status ROCr returns. See docs/internals.md for the contracts, and
docs/hsa-abi.md for the packet protocol the queues follow.

Where the simulator has to choose, it follows ROCr's source (GpuAgent::QueueCreate,
MemoryRegion::GetAccessInfo / AllocateImpl, hsa_amd_memory_async_copy) over hsa.h's prose:

* queue sizes: not a power of two or below QUEUE_MIN_SIZE (64) -> INVALID_ARGUMENT, above
  QUEUE_MAX_SIZE -> OUT_OF_RESOURCES; a queue on the CPU agent or a cooperative queue ->
  INVALID_QUEUE_CREATION (the simulator has no GWS queues);
* system-pool allocations are accessible by every agent (ROCr maps them to all GPUs although
  the pool reports DISALLOWED_BY_DEFAULT); device-pool allocations by their GPU until
  hsa_amd_agents_allow_access adds agents;
* a malformed packet stops the queue with HSA_STATUS_ERROR_INVALID_PACKET_FORMAT (real hardware
  would often fault or hang instead); an executor fault with its own status;
* with a NULL queue error callback ROCr prints and aborts the process; the simulator logs a
  warning on the "hsapy.sim" logger and stops only the queue;
* arguments of the wrong C type raise TypeError, as cffi does for the real library.
"""
from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

from hsapy.errors import STATUS_NAMES
from hsapy.hsa_enums import (
    HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED,
    HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED,
    HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT,
    HSA_AMD_SEGMENT_GLOBAL,
    HSA_AMD_SEGMENT_GROUP,
    HSA_STATUS_CU_MASK_REDUCED,
    HSA_STATUS_ERROR_EXCEPTION,
    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
    HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
    HSA_STATUS_ERROR_INVALID_AGENT,
    HSA_STATUS_ERROR_INVALID_ARGUMENT,
    HSA_STATUS_ERROR_INVALID_CACHE,
    HSA_STATUS_ERROR_INVALID_ISA,
    HSA_STATUS_ERROR_INVALID_ISA_NAME,
    HSA_STATUS_ERROR_INVALID_SIGNAL,
    HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
    HSA_STATUS_ERROR_MEMORY_FAULT,
    HSA_STATUS_ERROR_NOT_INITIALIZED,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES,
    HSA_STATUS_SUCCESS,
    STATUS_TEXT,
)
from hsapy.sim import info as _info
from hsapy.sim.api_memory import MemoryMixin
from hsapy.sim.api_queues import (
    QueuesMixin,
    installed_add_write_index,
    installed_load_read_index,
)
from hsapy.sim.api_signals import SignalsMixin, compiled_signal_store
from hsapy.sim.clock import SimClock
from hsapy.sim.executors import ExecutorCache
from hsapy.sim.loader import LoaderMixin  # hsa_code_object_reader_*, hsa_executable_*
from hsapy.sim.memory import PAGE_SIZE, SimMemory
from hsapy.sim.objects import (
    _AGENT_HANDLE_BASE,
    _CACHE_HANDLE_BASE,
    _HANDLE_STRIDE,
    _ISA_HANDLE_BASE,
    _POOL_HANDLE_BASE,
    UINT64_MAX,
    SimAgent,
    SimCache,
    SimIsa,
    SimPool,
    c_argument,
    scalar_parameters,
)
from hsapy.sim.objects import handle_of as _handle
from hsapy.sim.queues import (
    SimQueue,
)
from hsapy.sim.signals import SignalTable, SimSignal
from hsapy.sim.targets import (
    CPU_PROFILE,
    GPU_PROFILES,
    CpuProfile,
    GpuProfile,
    resolve_targets,
)

__all__ = ["SimLib", "SimAgent", "SimPool", "SimIsa", "SimCache"]

_BUILD_VERSION = "hsapy-sim 0.1 (HSA 1.1 API of ROCm 5.2.3)"


class SimLib(QueuesMixin, SignalsMixin, MemoryMixin, LoaderMixin):
    """The simulated HSA runtime: the C API of hsapy's cdef, implemented in Python.

    Construction builds the agents (CPU + one GPU per target); ``hsa_init`` opens the runtime
    (ref-counted) and the last ``hsa_shut_down`` destroys queues, signals and allocations.

    Attributes shared with the loader (hsapy/sim/loader.py, ``LoaderMixin``) and the executor:

    ``ffi``
        The cffi FFI whose types every method reads and writes.
    ``memory``: :class:`~hsapy.sim.memory.SimMemory`
        The one simulated address space. The loader maps code objects with
        ``memory.allocate(size, align, pool, owner=agent.handle, accessible={...}, tag=...)``.
    ``agents``: ``dict[int, SimAgent]``; :meth:`agent_by_handle` (None when unknown) and
        :attr:`gpu_agents` / :attr:`cpu_agent`.
    ``kernel_objects``: ``dict[int, LoadedKernel]``
        Kernel descriptor address -> the loader's record. The loader adds an entry for every
        kernel it loads (and removes it when the executable is destroyed). The packet processor
        rejects a dispatch whose ``kernel_object`` is not a key, rejects one whose record has an
        ``agent_handle`` attribute naming another agent, and passes the record as
        ``DispatchContext.kernel``.
    ``signals``: :class:`~hsapy.sim.signals.SignalTable`; ``clock``: :class:`SimClock`;
    ``executors``: per-agent executor choice (:class:`~hsapy.sim.executors.ExecutorCache`).
    ``is_open``: True between the first ``hsa_init`` and the matching last ``hsa_shut_down``.

    Loader hooks: ``LoaderMixin`` may define ``_loader_init(self)`` (called at the end of
    ``__init__``) and ``_loader_reset(self)`` (called by the last ``hsa_shut_down``, before every
    allocation is freed). hsapy/sim/loader.py must not import hsapy.sim.simlib at module level
    (simlib imports it).

    Simulator-only helpers (not C functions; names start with ``sim_``):
    :meth:`sim_queue_error` returns ``(status, message)`` of a stopped queue.
    """

    def __init__(self, ffi: Any, targets: Any = None, executor: Any = None,
                 watchdog_s: Any = None, engine: Any = None) -> None:
        self.ffi = ffi
        self.clock = SimClock()
        self.memory = SimMemory()
        self.executors = ExecutorCache(executor, watchdog_s, engine)
        self.kernel_objects: dict[int, Any] = {}
        self.agents: dict[int, SimAgent] = {}
        self.pools: dict[int, SimPool] = {}
        self.isas: dict[int, SimIsa] = {}
        self.caches: dict[int, SimCache] = {}
        self.queues: dict[int, SimQueue] = {}
        self._queue_pointers: dict[Any, SimQueue] = {}
        # The producer's hot path (one call per dispatch) as a plain function over the queue
        # table, shadowing the method of the same name: no bound-method call and no attribute
        # lookups on self per call; a builtin compiled for the host where one can be made
        # (installed_add_write_index). QueuesMixin._add_write_index (api_queues.py) is the
        # reference they must match.
        self._last_queue: list[tuple[Any, Any, Any]] = [(None, None, None)]
        self.hsa_queue_add_write_index_scacq_screl, self._add_state = installed_add_write_index(
            self._queue_pointers, self._last_queue, self._add_write_index)
        self.hsa_queue_load_read_index_scacquire = self.hsa_queue_load_read_index_relaxed = (
            installed_load_read_index(self._queue_pointers, self._last_queue, self._read_index,
                                      self._add_state))
        self.is_open = False
        self._refcount = 0
        self._state_lock = threading.RLock()
        self._next_queue_id = 0
        self._copy_profiling = False
        self._event_handlers: list[tuple[Any, Any]] = []
        self._status_strings: dict[int, Any] = {}
        self._build_version = ffi.new("char[]", _BUILD_VERSION.encode())
        self._copy_threads: set[threading.Thread] = set()
        # completion signal handle -> (status, message) of an asynchronous copy that failed
        # (sim_signal_error); cleared when the signal is destroyed or used by another copy
        self._copy_errors: dict[int, tuple[int, str]] = {}
        self._shutting_down = False
        self._build_agents(resolve_targets(targets))
        self._new_signal_table()
        loader_init = getattr(self, "_loader_init", None)
        if loader_init is not None:
            loader_init()

    # ------------------------------------------------------------------------------------------
    # construction

    def _build_agents(self, profiles: list[GpuProfile]) -> None:
        cpu = self._add_agent(CPU_PROFILE, CPU_PROFILE.name)
        cpu.uuid = "CPU-XX"
        size = CPU_PROFILE.memory_size
        # ROCr's CPU agent pools (rocminfo): fine-grained, kernarg (fine-grained + KERNARG_INIT),
        # coarse-grained; all runtime-allocatable, 4 KiB granule, accessible by all agents.
        for kind, flags in (("system-fine", HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED),
                            ("system-kernarg", HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT
                             | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED),
                            ("system-coarse", HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED)):
            self._add_pool(cpu, kind, HSA_AMD_SEGMENT_GLOBAL, flags, size, True, True)
        self._add_caches(cpu)
        for number, profile in enumerate(profiles):
            gpu = self._add_agent(profile, profile.name)
            gpu.uuid = f"GPU-{0x5157_0000_0000_0000 + number:016x}"[:20]
            gpu.bdfid = (number + 1) << 8            # bus number n+1, device 0, function 0
            isa = SimIsa(_ISA_HANDLE_BASE + len(self.isas) * _HANDLE_STRIDE, profile.isa_name,
                         profile)
            self.isas[isa.handle] = isa
            gpu.isa = isa
            self._add_pool(gpu, "device", HSA_AMD_SEGMENT_GLOBAL,
                           HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED, profile.memory_size,
                           True, False)
            self._add_pool(gpu, "group", HSA_AMD_SEGMENT_GROUP, 0, profile.lds_size,
                           False, False)
            self._add_caches(gpu)

    def _add_agent(self, profile: GpuProfile | CpuProfile, name: str) -> SimAgent:
        handle = _AGENT_HANDLE_BASE + len(self.agents) * _HANDLE_STRIDE
        agent = SimAgent(handle, profile, len(self.agents), name)
        self.agents[handle] = agent
        return agent

    def _add_pool(self, agent: SimAgent, kind: str, segment: int, flags: int, size: int,
                  alloc_allowed: bool, accessible_by_all: bool) -> None:
        handle = _POOL_HANDLE_BASE + len(self.pools) * _HANDLE_STRIDE
        granule = PAGE_SIZE if alloc_allowed else 0
        pool = SimPool(handle, agent, segment, flags, size, alloc_allowed, granule, granule,
                       accessible_by_all, size if alloc_allowed else 0, kind)
        self.pools[handle] = pool
        agent.pools.append(pool)

    def _add_caches(self, agent: SimAgent) -> None:
        for level, size in enumerate(agent.profile.cache_sizes, start=1):
            if size:
                handle = _CACHE_HANDLE_BASE + len(self.caches) * _HANDLE_STRIDE
                # ROCr names a cache after its agent: "<agent name> L<level>" (cache.cpp)
                cache = SimCache(handle, f"{agent.name} L{level}", level, size)
                self.caches[handle] = cache
                agent.caches.append(cache)

    # ------------------------------------------------------------------------------------------
    # lookups shared with the loader

    def agent_by_handle(self, handle: Any) -> SimAgent | None:
        """The agent for an hsa_agent_t (struct, dict or int), or None."""
        return self.agents.get(_handle(handle))

    @property
    def cpu_agent(self) -> SimAgent:
        """The CPU agent."""
        return next(a for a in self.agents.values() if not a.is_gpu)

    @property
    def gpu_agents(self) -> list[SimAgent]:
        """The GPU agents, in iteration order."""
        return [a for a in self.agents.values() if a.is_gpu]

    def _pool(self, value: Any) -> SimPool | None:
        return self.pools.get(_handle(value))

    def _signal(self, value: Any) -> SimSignal | None:
        try:  # the common case first: a cdata hsa_signal_t of a live signal
            return self._live_signals[value.handle]
        except (AttributeError, KeyError, TypeError):
            return self.signals.get(_handle(value))

    def _queue(self, pointer: Any) -> SimQueue | None:
        try:
            found = self._queue_pointers.get(pointer)
        except TypeError:  # unhashable: certainly not a queue pointer
            return None
        if found is not None:
            return found
        try:
            if isinstance(pointer, int):
                address = pointer
            else:
                address = int(self.ffi.cast("uintptr_t", pointer))
        except (TypeError, ValueError):
            return None
        return self.queues.get(address)

    def _is_null(self, pointer: Any) -> bool:
        return pointer is None or pointer == self.ffi.NULL or pointer == 0

    def _address(self, pointer: Any) -> int:
        if isinstance(pointer, int):
            return pointer
        return int(self.ffi.cast("uintptr_t", pointer))

    def _struct(self, ctype: str, handle: int) -> Any:
        return self.ffi.new(ctype + " *", {"handle": handle})[0]

    def _call(self, callback: Any, *args: Any) -> int:
        return int(callback(*args))

    # ------------------------------------------------------------------------------------------
    # init, status, system

    def hsa_init(self) -> int:
        """Open the runtime (ref-counted)."""
        with self._state_lock:
            self._refcount += 1
            self.is_open = True
            self._shutting_down = False
        return HSA_STATUS_SUCCESS

    def hsa_shut_down(self) -> int:
        """Close one reference; the last one destroys queues, signals and allocations."""
        with self._state_lock:
            if self._refcount == 0:
                return HSA_STATUS_ERROR_NOT_INITIALIZED
            self._refcount -= 1
            if self._refcount == 0:
                self._teardown()
                self.is_open = False
        return HSA_STATUS_SUCCESS

    def _teardown(self) -> None:
        self._shutting_down = True
        for queue in list(self.queues.values()):
            self._destroy_queue(queue)
        for thread in list(self._copy_threads):
            thread.join(1.0)
        reset = getattr(self, "_loader_reset", None)
        if reset is not None:
            reset()
        self.kernel_objects.clear()
        self._event_handlers.clear()
        self._copy_profiling = False
        self.signals.unbind_all()
        for alloc in self.memory.allocations():
            self.memory.free(alloc.address)
        self._new_signal_table()

    def _new_signal_table(self) -> None:
        """An empty signal table, and the hot paths that look signals up in it."""
        self.signals = SignalTable(self.memory, self.cpu_agent.handle)
        self._live_signals = self.signals.by_handle
        # every doorbell is one of these: a plain function over the signal table, shadowing the
        # methods of the same names (the reference it must match is SignalsMixin._store)
        self.hsa_signal_store_screlease = self.hsa_signal_store_relaxed = compiled_signal_store(
            self.signals, self._store)

    def hsa_status_string(self, status: int, status_string: Any) -> int:
        """Point ``*status_string`` at a NUL-terminated description of ``status``."""
        if self._is_null(status_string):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        status = int(status)
        name = STATUS_NAMES.get(status)
        if name is None:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        text = self._status_strings.get(status)
        if text is None:
            text = self.ffi.new("char[]", f"{name}: {_STATUS_TEXT.get(status, name)}".encode())
            self._status_strings[status] = text
        status_string[0] = text
        return HSA_STATUS_SUCCESS

    def hsa_system_get_info(self, attribute: int, value: Any) -> int:
        """System attributes (hsa_system_info_t)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(value):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        attribute = int(attribute)
        entry = _SYSTEM_INFO.get(attribute)
        if entry is None:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        ctype, getter = entry
        if ctype == "const char *":
            self.ffi.cast("const char **", value)[0] = self._build_version
        else:
            _info.write_value(self.ffi, value, ctype, getter(self))
        return HSA_STATUS_SUCCESS

    # ------------------------------------------------------------------------------------------
    # agents, ISAs, caches

    def hsa_iterate_agents(self, callback: Any, data: Any) -> int:
        """Call ``callback(agent, data)`` for every agent (CPU first)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(callback):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        return self._iterate(callback, "hsa_agent_t", list(self.agents), data)

    def _iterate(self, callback: Any, ctype: str, handles: list[int], data: Any) -> int:
        for handle in handles:
            status = self._call(callback, self._struct(ctype, handle), data)
            if status != HSA_STATUS_SUCCESS:
                return status
        return HSA_STATUS_SUCCESS

    def _iterate_agent(self, agent: Any, callback: Any, data: Any, ctype: str,
                       handles: Callable[[SimAgent], list[int]]) -> int:
        """An hsa_*_iterate_* call over ``handles(agent)`` of one agent, checked as ROCr does."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        sim_agent = self.agent_by_handle(agent)
        if sim_agent is None:
            return HSA_STATUS_ERROR_INVALID_AGENT
        if self._is_null(callback):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        return self._iterate(callback, ctype, handles(sim_agent), data)

    def _write_info(self, table: dict[int, tuple[str, _info.Getter]], subject: Any, attribute: int,
                    value: Any) -> int:
        """Answer an hsa_*_get_info call for a found ``subject`` from one of hsapy.sim.info's
        tables: a null ``value`` or an attribute the table lacks is INVALID_ARGUMENT."""
        if self._is_null(value):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        entry = table.get(int(attribute))
        if entry is None:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        ctype, getter = entry
        _info.write_value(self.ffi, value, ctype, getter(subject))
        return HSA_STATUS_SUCCESS

    def hsa_agent_get_info(self, agent: Any, attribute: int, value: Any) -> int:
        """Agent attributes (hsa_agent_info_t, hsa_amd_agent_info_t); unknown ->
        INVALID_ARGUMENT."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        sim_agent = self.agent_by_handle(agent)
        if sim_agent is None:
            return HSA_STATUS_ERROR_INVALID_AGENT
        return self._write_info(_info.AGENT_INFO, sim_agent, attribute, value)

    def hsa_agent_iterate_isas(self, agent: Any, callback: Any, data: Any) -> int:
        """Call ``callback(isa, data)`` for the agent's ISA (GPU agents have one, the CPU none)."""
        return self._iterate_agent(agent, callback, data, "hsa_isa_t",
                                   lambda a: [a.isa.handle] if a.isa is not None else [])

    def hsa_isa_from_name(self, name: Any, isa: Any) -> int:
        """Find an ISA by its full name, e.g. "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-".

        Like ROCr's ISA registry, every processor the simulator knows is accepted with any valid
        combination of its target features ("gfx942", "gfx942:xnack-", ...), not only the
        agents' own ISAs; features are listed sramecc before xnack.
        """
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(name) or self._is_null(isa):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        text = name if isinstance(name, (bytes, str)) else self.ffi.string(name)
        if isinstance(text, bytes):
            text = text.decode(errors="replace")
        sim_isa = self._isa_named(text)
        if sim_isa is None:
            return HSA_STATUS_ERROR_INVALID_ISA_NAME
        isa[0].handle = sim_isa.handle
        return HSA_STATUS_SUCCESS

    def _isa_named(self, text: str) -> SimIsa | None:
        for sim_isa in self.isas.values():
            if sim_isa.name == text:
                return sim_isa
        prefix = "amdgcn-amd-amdhsa--"
        if not text.startswith(prefix):
            return None
        processor, *features = text[len(prefix):].split(":")
        profile = GPU_PROFILES.get(processor)
        if profile is None:
            return None
        supported = [f for f in ("sramecc", "xnack") if getattr(profile, f)]
        names = [f[:-1] for f in features]
        if any(f[-1:] not in ("+", "-") for f in features) or len(set(names)) != len(names):
            return None
        if any(n not in supported for n in names) or names != sorted(names):
            return None
        with self._state_lock:
            sim_isa = SimIsa(_ISA_HANDLE_BASE + len(self.isas) * _HANDLE_STRIDE, text, profile)
            self.isas[sim_isa.handle] = sim_isa
        return sim_isa

    def hsa_isa_get_info_alt(self, isa: Any, attribute: int, value: Any) -> int:
        """ISA attributes answered by hsa_isa_get_info_alt."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        sim_isa = self.isas.get(_handle(isa))
        if sim_isa is None:
            return HSA_STATUS_ERROR_INVALID_ISA
        return self._write_info(_info.ISA_INFO, sim_isa, attribute, value)

    def hsa_agent_iterate_caches(self, agent: Any, callback: Any, data: Any) -> int:
        """Call ``callback(cache, data)`` for each cache level of the agent."""
        return self._iterate_agent(agent, callback, data, "hsa_cache_t",
                                   lambda a: [c.handle for c in a.caches])

    def hsa_cache_get_info(self, cache: Any, attribute: int, value: Any) -> int:
        """Cache attributes (hsa_cache_info_t)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        sim_cache = self.caches.get(_handle(cache))
        if sim_cache is None:
            return HSA_STATUS_ERROR_INVALID_CACHE
        return self._write_info(_info.CACHE_INFO, sim_cache, attribute, value)

    # ------------------------------------------------------------------------------------------
    # simulator only

    def sim_set_engine(self, engine: str) -> None:
        """Simulator only: who runs the kernel code of later dispatches ("interp", "jit" or
        "auto"; see ``Runtime(engine=...)``)."""
        from hsapy.sim.execution import resolve_engine

        self.executors.engine = resolve_engine(engine)

    # ------------------------------------------------------------------------------------------
    # profiling

    def hsa_amd_profiling_set_profiler_enabled(self, queue: Any, enable: int) -> int:
        """Record start/end timestamps of the queue's packets in their completion signals."""
        return self._on_queue(queue, lambda sim_queue: sim_queue.set_profiling(bool(enable)))

    def hsa_amd_profiling_async_copy_enable(self, enable: bool) -> int:
        """Record start/end timestamps of async copies in their completion signals."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        self._copy_profiling = bool(enable)
        return HSA_STATUS_SUCCESS

    def hsa_amd_profiling_get_dispatch_time(self, agent: Any, signal: Any, time: Any) -> int:
        """Start/end ticks (system domain) of the dispatch that completed ``signal``."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        sim_agent = self.agent_by_handle(agent)
        if sim_agent is None or not sim_agent.is_gpu:
            return HSA_STATUS_ERROR_INVALID_AGENT
        return self._write_signal_times(signal, time)

    def hsa_amd_profiling_get_async_copy_time(self, signal: Any, time: Any) -> int:
        """Start/end ticks of the async copy that completed ``signal``."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        return self._write_signal_times(signal, time)

    def _write_signal_times(self, signal: Any, time: Any) -> int:
        """The start/end ticks recorded in ``signal`` into ``*time`` (dispatch or copy)."""
        sim_signal = self._signal(signal)
        if sim_signal is None:
            return HSA_STATUS_ERROR_INVALID_SIGNAL
        if self._is_null(time):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        time.start = sim_signal.start_ts
        time.end = sim_signal.end_ts
        return HSA_STATUS_SUCCESS

    def hsa_amd_profiling_convert_tick_to_system_domain(self, agent: Any, agent_tick: int,
                                                        system_tick: Any) -> int:
        """Agent ticks are already system ticks in the simulator: the identity."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self.agent_by_handle(agent) is None:
            return HSA_STATUS_ERROR_INVALID_AGENT
        if self._is_null(system_tick):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        system_tick[0] = int(agent_tick)
        return HSA_STATUS_SUCCESS


# hsa_system_info_t and the AMD system attributes (types from hsa.h).
_SYSTEM_INFO: dict[int, tuple[str, Callable[[SimLib], Any]]] = {
    0: ("uint16_t", lambda lib: 1),                              # VERSION_MAJOR
    1: ("uint16_t", lambda lib: 1),                              # VERSION_MINOR
    2: ("uint64_t", lambda lib: lib.clock.now()),                # TIMESTAMP
    3: ("uint64_t", lambda lib: lib.clock.frequency),            # TIMESTAMP_FREQUENCY
    4: ("uint64_t", lambda lib: UINT64_MAX),                     # SIGNAL_MAX_WAIT
    5: ("uint32_t", lambda lib: 0),                              # ENDIANNESS: little
    6: ("uint32_t", lambda lib: 1),                              # MACHINE_MODEL: large
    7: ("uint8_t[128]", lambda lib: b""),                        # EXTENSIONS: none
    0x200: ("const char *", lambda lib: None),                   # AMD BUILD_VERSION
    0x201: ("bool", lambda lib: False),                          # AMD SVM_SUPPORTED
    0x202: ("bool", lambda lib: False),                          # AMD SVM_ACCESSIBLE_BY_DEFAULT
}

# Descriptions for hsa_status_string: the headers' doc comments (hsa_enums.STATUS_TEXT), and
# the simulator's shorter wording where it has its own (no HSAIL, no event-handler pointers).
_STATUS_TEXT: dict[int, str] = {
    **STATUS_TEXT,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES: "The runtime failed to allocate the necessary resources.",
    HSA_STATUS_ERROR_NOT_INITIALIZED: (
        "An API other than hsa_init has been invoked while the reference count of the HSA runtime"
        " is zero."
    ),
    HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: (
        "The arguments passed to a function are not compatible."
    ),
    HSA_STATUS_ERROR_EXCEPTION: "An operation resulted in a hardware exception.",
    HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: (
        "The agent attempted to access memory beyond the largest legal address."
    ),
    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: (
        "The agent attempted to execute an illegal shader instruction."
    ),
    HSA_STATUS_ERROR_MEMORY_FAULT: "The agent attempted to access an inaccessible address.",
    HSA_STATUS_CU_MASK_REDUCED: (
        "The CU mask was set but it tried to enable a CU that is disabled for the process."
    ),
}


# hsa.h declares most signal and queue operations once per memory order it offers
# (_scacquire, _screlease, _scacq_screl, _relaxed). The simulator serialises every access to a
# signal or a queue index under the lock of its object, which is at least as strong as any
# order, so all variants of one operation run one implementation. One row per operation:
# (C name without the order, its parameters, the orders, the SimLib method, what it does).
ORDER_VARIANTS: tuple[tuple[str, str, tuple[str, ...], str, str], ...] = (
    ("hsa_signal_load", "signal", ("scacquire", "relaxed"), "_load", "Signal value."),
    ("hsa_signal_store", "signal value", ("relaxed", "screlease"), "_store",
     "Set the value; wakes waiters. On a doorbell this rings the queue."),
    ("hsa_signal_silent_store", "signal value", ("relaxed",), "_silent_store",
     "Set the value without waking waiters (hsa.h: a silent store need not wake them; a "
     "waiter still sees the value at its next check)."),
    ("hsa_signal_silent_store", "signal value", ("screlease",), "_store",
     "Set the value without the obligation to wake waiters (this one wakes them)."),
    ("hsa_signal_exchange", "signal value", ("scacq_screl", "relaxed", "scacquire", "screlease"),
     "_exchange", "Atomically set the value; return the previous one."),
    ("hsa_signal_cas", "signal expected value", ("scacq_screl", "relaxed"), "_cas",
     "Compare-and-swap; return the value observed."),
    ("hsa_signal_add", "signal value", ("scacq_screl", "relaxed", "screlease"), "_add",
     "Atomic add."),
    ("hsa_signal_subtract", "signal value", ("scacq_screl", "relaxed", "screlease"), "_subtract",
     "Atomic subtract."),
    ("hsa_signal_and", "signal value", ("scacq_screl",), "_and", "Atomic bitwise AND."),
    ("hsa_signal_or", "signal value", ("scacq_screl",), "_or", "Atomic bitwise OR."),
    ("hsa_signal_xor", "signal value", ("scacq_screl",), "_xor", "Atomic bitwise XOR."),
    ("hsa_signal_wait", "signal condition compare_value timeout_hint wait_state_hint",
     ("scacquire", "relaxed"), "_wait",
     "Wait until the condition holds or the timeout (ticks) passes; return the value."),
    ("hsa_queue_load_read_index", "queue", ("scacquire", "relaxed"), "_read_index",
     "Read index."),
    ("hsa_queue_load_write_index", "queue", ("scacquire", "relaxed"), "_write_index",
     "Write index."),
    ("hsa_queue_store_write_index", "queue value", ("relaxed", "screlease"), "_store_write_index",
     "Set the write index."),
    ("hsa_queue_cas_write_index", "queue expected value", ("scacq_screl", "relaxed"),
     "_cas_write_index", "Compare-and-swap the write index; return the value observed."),
    ("hsa_queue_add_write_index", "queue value",
     ("scacq_screl", "scacquire", "relaxed", "screlease"), "_add_write_index",
     "Fetch-and-add the write index; return the previous value."),
    ("hsa_queue_store_read_index", "queue value", ("relaxed", "screlease"), "_store_read_index",
     "Set the read index (only the packet processor should)."),
)


def _order_variant(name: str, parameters: str, implementation: Callable[..., Any],
                   doc: str) -> Callable[..., Any]:
    """The SimLib method ``name``: ``implementation`` under the C function's name and arity."""

    def variant(self: SimLib, *args: Any) -> Any:
        return implementation(self, *args)

    variant.__name__ = name
    variant.__qualname__ = f"SimLib.{name}"
    variant.__doc__ = doc
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    variant.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(p, positional) for p in ("self", *parameters.split())])
    return variant


def _install_order_variants() -> None:
    for operation, parameters, orders, implementation, doc in ORDER_VARIANTS:
        for order in orders:
            name = f"{operation}_{order}"
            setattr(SimLib, name, _order_variant(name, parameters,
                                                 getattr(SimLib, implementation), doc))


_install_order_variants()


def _converting(method: Callable[..., Any], ctypes: tuple[str | None, ...]) -> Callable[..., Any]:
    """``method`` taking its integer, enum and bool arguments as a C call through cffi does
    (hsapy.sim.objects.c_argument): converted first, or cffi's TypeError/OverflowError."""
    positions = tuple((i, ctype) for i, ctype in enumerate(ctypes) if ctype is not None)
    count = len(ctypes)

    @functools.wraps(method)
    def converting(self: SimLib, *args: Any) -> Any:
        if len(args) == count:          # (another count: the method's own TypeError)
            args_list = list(args)
            for i, ctype in positions:
                args_list[i] = c_argument(self.ffi, ctype, args_list[i])
            args = tuple(args_list)
        return method(self, *args)

    return converting


def _install_argument_conversion() -> None:
    """Every SimLib method named after a C function of the cdef that has integer, enum or bool
    parameters converts them as cffi would, except the memory-order variants, which convert
    their own (signal values, queue indices: hot paths with an exact-int shortcut)."""
    from hsapy._hsa import CDEF, ffi

    own = {f"{operation}_{order}" for operation, _p, orders, _i, _d in ORDER_VARIANTS
           for order in orders}
    for name, ctypes in scalar_parameters(ffi, CDEF).items():
        method = SimLib.__dict__.get(name) or getattr(SimLib, name, None)
        if method is None or name in own or not any(ctypes):
            continue
        setattr(SimLib, name, _converting(method, ctypes))


_install_argument_conversion()


def _install_constants() -> None:
    from hsapy._hsa import enum_constants

    for name, value in enum_constants().items():
        if not hasattr(SimLib, name):
            setattr(SimLib, name, value)


_install_constants()
