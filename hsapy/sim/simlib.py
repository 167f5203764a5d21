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

import inspect
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hsapy.errors import STATUS_NAMES
from hsapy.hsa_enums import (
    HSA_AMD_GPU_MEMORY_FAULT_EVENT,
    HSA_AMD_LINK_INFO_TYPE_PCIE,
    HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT,
    HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT,
    HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT,
    HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED,
    HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED,
    HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED,
    HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT,
    HSA_AMD_SEGMENT_GLOBAL,
    HSA_AMD_SEGMENT_GROUP,
    HSA_EXT_POINTER_TYPE_HSA,
    HSA_EXT_POINTER_TYPE_UNKNOWN,
    HSA_STATUS_CU_MASK_REDUCED,
    HSA_STATUS_ERROR_EXCEPTION,
    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
    HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
    HSA_STATUS_ERROR_INVALID_AGENT,
    HSA_STATUS_ERROR_INVALID_ALLOCATION,
    HSA_STATUS_ERROR_INVALID_ARGUMENT,
    HSA_STATUS_ERROR_INVALID_CACHE,
    HSA_STATUS_ERROR_INVALID_ISA,
    HSA_STATUS_ERROR_INVALID_ISA_NAME,
    HSA_STATUS_ERROR_INVALID_MEMORY_POOL,
    HSA_STATUS_ERROR_INVALID_QUEUE,
    HSA_STATUS_ERROR_INVALID_QUEUE_CREATION,
    HSA_STATUS_ERROR_INVALID_SIGNAL,
    HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
    HSA_STATUS_ERROR_MEMORY_FAULT,
    HSA_STATUS_ERROR_NOT_INITIALIZED,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES,
    HSA_STATUS_SUCCESS,
    STATUS_TEXT,
)
from hsapy.sim import info as _info
from hsapy.sim.clock import SimClock
from hsapy.sim.executors import ExecutorCache
from hsapy.sim.loader import LoaderMixin  # hsa_code_object_reader_*, hsa_executable_*
from hsapy.sim.memory import PAGE_SIZE, SimMemory, SimMemoryFault
from hsapy.sim.queues import (
    READ_INDEX_WORD,
    WRITE_INDEX_WORD,
    SimQueue,
    uint64_argument,
)
from hsapy.sim.signals import SignalTable, SimSignal, condition_holds, wait_any
from hsapy.sim.targets import (
    CPU_PROFILE,
    GPU_PROFILES,
    CpuProfile,
    GpuProfile,
    resolve_targets,
)

__all__ = ["SimLib", "SimAgent", "SimPool", "SimIsa", "SimCache"]

_log = logging.getLogger("hsapy.sim")

UINT64_MAX = 0xFFFFFFFFFFFFFFFF
_BUILD_VERSION = "hsapy-sim 0.1 (HSA 1.1 API of ROCm 5.2.3)"

# Opaque handle bases: nonzero, distinct per kind, so a handle of the wrong kind is rejected.
_AGENT_HANDLE_BASE = 0x5A0_0000_1000
_POOL_HANDLE_BASE = 0x5A1_0000_1000
_ISA_HANDLE_BASE = 0x5A2_0000_1000
_CACHE_HANDLE_BASE = 0x5A3_0000_1000
_HANDLE_STRIDE = 0x40


@dataclass(eq=False)
class SimIsa:
    """An instruction set (one per GPU target)."""

    handle: int
    name: str
    profile: GpuProfile


@dataclass(eq=False)
class SimCache:
    """One cache level of an agent."""

    handle: int
    name: str
    level: int
    size: int


@dataclass(eq=False)
class SimPool:
    """A memory pool (hsa_amd_memory_pool_t) of an agent."""

    handle: int
    agent: SimAgent
    segment: int
    global_flags: int
    size: int
    alloc_allowed: bool
    granule: int
    alignment: int
    accessible_by_all: bool
    alloc_max_size: int
    kind: str   # "system-fine", "system-kernarg", "system-coarse", "device" or "group"

    @property
    def is_system(self) -> bool:
        """True for the CPU agent's system-memory pools."""
        return self.kind.startswith("system")


@dataclass(eq=False)
class SimAgent:
    """A CPU or GPU agent. ``profile`` is a GpuProfile (GPU) or CpuProfile (CPU)."""

    handle: int
    profile: GpuProfile | CpuProfile
    node: int
    name: str
    pools: list[SimPool] = field(default_factory=list)
    caches: list[SimCache] = field(default_factory=list)
    isa: SimIsa | None = None
    uuid: str = ""
    bdfid: int = 0

    @property
    def is_gpu(self) -> bool:
        """True for a GPU (kernel) agent."""
        return self.profile.is_gpu


def _handle(value: Any) -> int:
    """The 64-bit handle of an hsa_*_t struct argument: a cdata struct, a dict or an int.

    Anything else reads as handle 0, which no object has (so the caller returns its INVALID_*
    status instead of raising).
    """
    if isinstance(value, int):
        return value
    try:
        if isinstance(value, dict):
            return int(value.get("handle", 0))
        return int(value.handle)
    except (AttributeError, TypeError, ValueError):
        return 0


def _compiled_add_write_index(queue_pointers: dict[Any, SimQueue],
                              last_queue: list[tuple[Any, Any, Any]],
                              slow: Callable[[Any, int], int]) -> Callable[[Any, int], int]:
    """hsa_queue_add_write_index_scacq_screl for one SimLib: SimQueue.add_write_index with the
    queue lookup and the token (SimQueue.write_token) inlined. ``queue_pointers`` maps each live
    queue pointer to its SimQueue; ``last_queue[0]`` is (the pointer object of the last call,
    its token, its amd_queue_t as uint64 words) -- a producer passes the same cdata on every
    call, and an identity test costs less than hashing a cdata for the dict (the queue's
    destruction resets it). Anything unusual (an unknown queue, a token held by another
    producer) goes the general way, ``slow``."""

    def hsa_queue_add_write_index_scacq_screl(queue: Any, value: int) -> int:
        """Fetch-and-add the write index; return the previous value."""
        known, token, words = last_queue[0]
        if known is not queue:
            try:
                sim_queue = queue_pointers[queue]
            except (KeyError, TypeError):
                return slow(queue, value)
            token, words = sim_queue.write_token, sim_queue.struct_words
            last_queue[0] = (queue, token, words)
        try:
            old = token.pop()
        except IndexError:
            return slow(queue, value)
        try:
            new = old + value
            if new > 0xFFFFFFFFFFFFFFFF:
                new &= 0xFFFFFFFFFFFFFFFF
            elif new < old:
                raise OverflowError("can't convert negative number to unsigned")
            words[WRITE_INDEX_WORD] = new             # amd_queue_t.write_dispatch_id
        except BaseException:
            # what cffi does with a value a uint64_t cannot take: raise, the index untouched
            token.append(old)
            uint64_argument(value)
            raise
        token.append(new)
        return old

    return hsa_queue_add_write_index_scacq_screl


def _compiled_load_read_index(queue_pointers: dict[Any, SimQueue],
                              last_queue: list[tuple[Any, Any, Any]],
                              slow: Callable[[Any], int]) -> Callable[[Any], int]:
    """hsa_queue_load_read_index_scacquire / _relaxed for one SimLib: SimQueue.read_index with
    the queue lookup inlined, through the same table and last-queue cache as
    _compiled_add_write_index (a producer re-reads the read index when the ring may be full)."""

    def hsa_queue_load_read_index_scacquire(queue: Any) -> int:
        """Read index (amd_queue_t.read_dispatch_id)."""
        known, _token, words = last_queue[0]
        if known is not queue:
            try:
                words = queue_pointers[queue].struct_words
            except (KeyError, TypeError):
                return slow(queue)
        return words[READ_INDEX_WORD]

    return hsa_queue_load_read_index_scacquire


def _compiled_signal_store(live_signals: dict[int, Any],
                           slow: Callable[[Any, int], None]) -> Callable[[Any, int], None]:
    """hsa_signal_store_screlease / _relaxed for one SimLib: SimLib._store with the signal
    lookup inlined, so a store (every doorbell) is one Python call into SimSignal.store.
    ``live_signals`` maps each live signal's handle to its SimSignal; anything unusual (an
    unknown or destroyed handle, a handle given as an int or dict, a value that is not an int)
    goes the general way, ``slow``."""

    def hsa_signal_store_screlease(signal: Any, value: int) -> None:
        """Set the value; wakes waiters. On a doorbell this rings the queue."""
        try:
            sim_signal = live_signals[signal.handle]
        except (AttributeError, KeyError, TypeError):
            return slow(signal, value)
        if value.__class__ is not int:
            return slow(signal, value)
        sim_signal.store(value)
        return None

    return hsa_signal_store_screlease


class SimLib(LoaderMixin):
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
                 watchdog_s: Any = None) -> None:
        self.ffi = ffi
        self.clock = SimClock()
        self.memory = SimMemory()
        self.executors = ExecutorCache(executor, watchdog_s)
        self.kernel_objects: dict[int, Any] = {}
        self.agents: dict[int, SimAgent] = {}
        self.pools: dict[int, SimPool] = {}
        self.isas: dict[int, SimIsa] = {}
        self.caches: dict[int, SimCache] = {}
        self.queues: dict[int, SimQueue] = {}
        self._queue_pointers: dict[Any, SimQueue] = {}
        # The producer's hot path (one call per dispatch) as a plain function over the queue
        # table, shadowing the method of the same name: no bound-method call and no attribute
        # lookups on self per call. The method below is the reference it must match.
        self._last_queue: list[tuple[Any, Any, Any]] = [(None, None, None)]
        self.hsa_queue_add_write_index_scacq_screl = _compiled_add_write_index(
            self._queue_pointers, self._last_queue, self._add_write_index)
        self.hsa_queue_load_read_index_scacquire = self.hsa_queue_load_read_index_relaxed = (
            _compiled_load_read_index(self._queue_pointers, self._last_queue, self._read_index))
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
        self.signals = SignalTable(self.memory, self.cpu_agent.handle)
        self._live_signals = self.signals.by_handle
        # every doorbell is one of these: a plain function over the signal table, shadowing the
        # methods of the same names (the reference it must match is _store)
        self.hsa_signal_store_screlease = self.hsa_signal_store_relaxed = _compiled_signal_store(
            self._live_signals, self._store)
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
        for alloc in self.memory.allocations():
            self.memory.free(alloc.address)
        self.signals = SignalTable(self.memory, self.cpu_agent.handle)

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

    def hsa_agent_get_info(self, agent: Any, attribute: int, value: Any) -> int:
        """Agent attributes (hsa_agent_info_t, hsa_amd_agent_info_t); unknown ->
        INVALID_ARGUMENT."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        sim_agent = self.agent_by_handle(agent)
        if sim_agent is None:
            return HSA_STATUS_ERROR_INVALID_AGENT
        if self._is_null(value):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        entry = _info.AGENT_INFO.get(int(attribute))
        if entry is None:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        ctype, getter = entry
        _info.write_value(self.ffi, value, ctype, getter(sim_agent))
        return HSA_STATUS_SUCCESS

    def hsa_agent_iterate_isas(self, agent: Any, callback: Any, data: Any) -> int:
        """Call ``callback(isa, data)`` for the agent's ISA (GPU agents have one, the CPU none)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        sim_agent = self.agent_by_handle(agent)
        if sim_agent is None:
            return HSA_STATUS_ERROR_INVALID_AGENT
        if self._is_null(callback):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        handles = [sim_agent.isa.handle] if sim_agent.isa is not None else []
        return self._iterate(callback, "hsa_isa_t", handles, data)

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
        if self._is_null(value):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        entry = _info.ISA_INFO.get(int(attribute))
        if entry is None:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        ctype, getter = entry
        _info.write_value(self.ffi, value, ctype, getter(sim_isa))
        return HSA_STATUS_SUCCESS

    def hsa_agent_iterate_caches(self, agent: Any, callback: Any, data: Any) -> int:
        """Call ``callback(cache, data)`` for each cache level of the agent."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        sim_agent = self.agent_by_handle(agent)
        if sim_agent is None:
            return HSA_STATUS_ERROR_INVALID_AGENT
        if self._is_null(callback):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        return self._iterate(callback, "hsa_cache_t", [c.handle for c in sim_agent.caches], data)

    def hsa_cache_get_info(self, cache: Any, attribute: int, value: Any) -> int:
        """Cache attributes (hsa_cache_info_t)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        sim_cache = self.caches.get(_handle(cache))
        if sim_cache is None:
            return HSA_STATUS_ERROR_INVALID_CACHE
        if self._is_null(value):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        entry = _info.CACHE_INFO.get(int(attribute))
        if entry is None:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        ctype, getter = entry
        _info.write_value(self.ffi, value, ctype, getter(sim_cache))
        return HSA_STATUS_SUCCESS

    # ------------------------------------------------------------------------------------------
    # signals

    def _check_consumers(self, num_consumers: int, consumers: Any) -> int:
        if num_consumers and self._is_null(consumers):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        for i in range(int(num_consumers)):
            if self.agent_by_handle(consumers[i]) is None:
                return HSA_STATUS_ERROR_INVALID_AGENT
        return HSA_STATUS_SUCCESS

    def hsa_signal_create(self, initial_value: int, num_consumers: int, consumers: Any,
                          signal: Any) -> int:
        """Create a signal; ``*signal`` receives its handle."""
        return self.hsa_amd_signal_create(initial_value, num_consumers, consumers, 0, signal)

    def hsa_amd_signal_create(self, initial_value: int, num_consumers: int, consumers: Any,
                              attributes: int, signal: Any) -> int:
        """Create a signal with AMD attributes (GPU_ONLY / IPC accepted and ignored)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(signal):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        status = self._check_consumers(num_consumers, consumers)
        if status != HSA_STATUS_SUCCESS:
            return status
        try:
            sim_signal = self.signals.create(int(initial_value))
        except MemoryError:
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES
        signal[0].handle = sim_signal.handle
        return HSA_STATUS_SUCCESS

    def hsa_signal_destroy(self, signal: Any) -> int:
        """Destroy a signal."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        handle = _handle(signal)
        if handle == 0:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if not self.signals.destroy(handle):
            return HSA_STATUS_ERROR_INVALID_SIGNAL
        self._copy_errors.pop(handle, None)
        return HSA_STATUS_SUCCESS

    # The memory-order variants of these operations (hsa_signal_load_scacquire, ...) are
    # generated from ORDER_VARIANTS below the class.

    def _load(self, signal: Any) -> int:
        sim_signal = self._signal(signal)
        return sim_signal.load() if sim_signal is not None else 0

    def _store(self, signal: Any, value: int) -> None:
        sim_signal = self._signal(signal)
        if sim_signal is not None:
            sim_signal.store(int(value))

    def _silent_store(self, signal: Any, value: int) -> None:
        sim_signal = self._signal(signal)
        if sim_signal is not None:
            sim_signal.store_silent(int(value))

    def _modify(self, signal: Any, operation: Callable[[int], int]) -> int:
        sim_signal = self._signal(signal)
        return sim_signal.modify(operation) if sim_signal is not None else 0

    def _add(self, signal: Any, value: int) -> None:
        self._modify(signal, lambda old: old + int(value))

    def _and(self, signal: Any, value: int) -> None:
        self._modify(signal, lambda old: old & int(value))

    def _or(self, signal: Any, value: int) -> None:
        self._modify(signal, lambda old: old | int(value))

    def _xor(self, signal: Any, value: int) -> None:
        self._modify(signal, lambda old: old ^ int(value))

    def _subtract(self, signal: Any, value: int) -> None:
        sim_signal = self._signal(signal)
        if sim_signal is not None:
            sim_signal.subtract(int(value))

    def _exchange(self, signal: Any, value: int) -> int:
        sim_signal = self._signal(signal)
        return sim_signal.exchange(int(value)) if sim_signal is not None else 0

    def _cas(self, signal: Any, expected: int, value: int) -> int:
        sim_signal = self._signal(signal)
        return sim_signal.cas(int(expected), int(value)) if sim_signal is not None else 0

    def _timeout_seconds(self, timeout_hint: int) -> float | None:
        """timeout_hint is in timestamp ticks (HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY)."""
        timeout_hint = int(timeout_hint)
        if timeout_hint >= UINT64_MAX:
            return None
        return timeout_hint / self.clock.frequency

    def _wait(self, signal: Any, condition: int, compare: int, timeout_hint: int,
              wait_state_hint: int = 0) -> int:
        # wait_state_hint (blocked or active) changes nothing here: a waiter sleeps on the
        # signal's condition variable either way
        sim_signal = self._signal(signal)
        if sim_signal is None:
            return 0
        condition, compare = int(condition), int(compare)
        # Before sleeping, run announced packets on this thread (SimQueue.help): the work that
        # will satisfy the wait is usually right there, and doing it here saves two thread
        # hand-offs.
        for sim_queue in list(self.queues.values()):
            if condition_holds(condition, sim_signal.load(), compare):
                break
            if sim_queue.has_announced_work:
                sim_queue.help(lambda: condition_holds(condition, sim_signal.load(), compare))
        return sim_signal.wait(condition, compare, self._timeout_seconds(timeout_hint),
                               lambda: not sim_signal.is_valid)

    def hsa_amd_signal_wait_any(self, signal_count: int, signals: Any, conds: Any, values: Any,
                                timeout_hint: int, wait_hint: int, satisfying_value: Any) -> int:
        """Wait until any signal satisfies its condition; return its index (``signal_count`` on
        timeout)."""
        count = int(signal_count)
        if count == 0 or self._is_null(signals) or self._is_null(conds) or self._is_null(values):
            return count
        sim_signals = []
        for i in range(count):
            sim_signal = self._signal(signals[i])
            if sim_signal is None:
                return count
            sim_signals.append(sim_signal)
        index, value = wait_any(sim_signals, [int(conds[i]) for i in range(count)],
                                [int(values[i]) for i in range(count)],
                                self._timeout_seconds(timeout_hint))
        if index < count and not self._is_null(satisfying_value):
            satisfying_value[0] = value
        return index

    # ------------------------------------------------------------------------------------------
    # memory pools

    def hsa_amd_agent_iterate_memory_pools(self, agent: Any, callback: Any, data: Any) -> int:
        """Call ``callback(pool, data)`` for each pool of the agent."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        sim_agent = self.agent_by_handle(agent)
        if sim_agent is None:
            return HSA_STATUS_ERROR_INVALID_AGENT
        if self._is_null(callback):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        return self._iterate(callback, "hsa_amd_memory_pool_t",
                             [p.handle for p in sim_agent.pools], data)

    def hsa_amd_memory_pool_get_info(self, memory_pool: Any, attribute: int, value: Any) -> int:
        """Pool attributes (hsa_amd_memory_pool_info_t)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        pool = self._pool(memory_pool)
        if pool is None:
            return HSA_STATUS_ERROR_INVALID_MEMORY_POOL
        if self._is_null(value):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        entry = _info.POOL_INFO.get(int(attribute))
        if entry is None:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        ctype, getter = entry
        _info.write_value(self.ffi, value, ctype, getter(pool))
        return HSA_STATUS_SUCCESS

    def _access(self, agent: SimAgent, pool: SimPool) -> int:
        """ROCr's MemoryRegion::GetAccessInfo rules for an agent and a pool."""
        if agent is pool.agent:
            return HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT
        if pool.is_system:
            if agent.is_gpu:
                return HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT
            return HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT
        if pool.kind == "device":
            return HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT   # coarse-grained local memory
        return HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED               # the group segment

    def hsa_amd_agent_memory_pool_get_info(self, agent: Any, memory_pool: Any, attribute: int,
                                           value: Any) -> int:
        """Access, link hops and link info between an agent and a pool."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        sim_agent = self.agent_by_handle(agent)
        if sim_agent is None:
            return HSA_STATUS_ERROR_INVALID_AGENT
        pool = self._pool(memory_pool)
        if pool is None:
            return HSA_STATUS_ERROR_INVALID_MEMORY_POOL
        if self._is_null(value):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        access = self._access(sim_agent, pool)
        local = access == HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED or sim_agent is pool.agent
        hops = 0 if local else 1
        attribute = int(attribute)
        if attribute == 0:        # HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS
            self.ffi.cast("uint32_t *", value)[0] = access
        elif attribute == 1:      # NUM_LINK_HOPS
            self.ffi.cast("uint32_t *", value)[0] = hops
        elif attribute == 2:      # LINK_INFO: one PCIe hop, as for a discrete card
            link = self.ffi.cast("hsa_amd_memory_pool_link_info_t *", value)
            self.ffi.memmove(link, b"\0" * self.ffi.sizeof("hsa_amd_memory_pool_link_info_t"),
                             self.ffi.sizeof("hsa_amd_memory_pool_link_info_t"))
            if hops:
                link.link_type = HSA_AMD_LINK_INFO_TYPE_PCIE
                link.atomic_support_32bit = True
                link.atomic_support_64bit = True
                fine = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED
                link.coherent_support = pool.global_flags & fine != 0
                link.numa_distance = 20
        else:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        return HSA_STATUS_SUCCESS

    def hsa_amd_memory_pool_allocate(self, memory_pool: Any, size: int, flags: int,
                                     ptr: Any) -> int:
        """Allocate from a pool; ``*ptr`` receives the address (rounded up to the granule)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        size = int(size)
        if size == 0 or self._is_null(ptr):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        pool = self._pool(memory_pool)
        if pool is None:
            return HSA_STATUS_ERROR_INVALID_MEMORY_POOL
        if not pool.alloc_allowed or size > pool.alloc_max_size:
            return HSA_STATUS_ERROR_INVALID_ALLOCATION
        rounded = -(-size // pool.granule) * pool.granule
        if pool.is_system:   # ROCr maps system allocations to every GPU (AllocateImpl)
            accessible = set(self.agents)
        else:
            accessible = {pool.agent.handle}
        try:
            address = self.memory.allocate(rounded, pool.alignment, pool, owner=pool.agent.handle,
                                           accessible=accessible, tag=pool.kind)
        except MemoryError:
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES
        ptr[0] = self.ffi.cast("void *", address)
        return HSA_STATUS_SUCCESS

    def hsa_amd_memory_pool_free(self, ptr: Any) -> int:
        """Free a pool allocation (by its start address)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(ptr):
            return HSA_STATUS_SUCCESS          # like free(NULL)
        address = self._address(ptr)
        alloc = self.memory.allocation_at(address)
        if alloc is None or alloc.pool is None:
            # ROCr 5.2.3: Runtime::FreeMemory of an address it did not allocate
            return HSA_STATUS_ERROR_INVALID_ALLOCATION
        self.memory.free(address)
        return HSA_STATUS_SUCCESS

    def hsa_amd_agents_allow_access(self, num_agents: int, agents: Any, flags: Any,
                                    ptr: Any) -> int:
        """Let ``agents`` access the allocation containing ``ptr``."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if int(num_agents) == 0 or self._is_null(agents) or self._is_null(ptr):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        alloc = self.memory.find(self._address(ptr))
        if alloc is None or alloc.pool is None:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        handles = []
        for i in range(int(num_agents)):
            sim_agent = self.agent_by_handle(agents[i])
            if sim_agent is None:
                return HSA_STATUS_ERROR_INVALID_AGENT
            handles.append(sim_agent.handle)
        alloc.accessible.update(handles)
        return HSA_STATUS_SUCCESS

    def hsa_amd_memory_fill(self, ptr: Any, value: int, count: int) -> int:
        """Fill ``count`` uint32 words at ``ptr`` with ``value`` (ptr 4-byte aligned)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(ptr):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        count = int(count)
        if count == 0:
            return HSA_STATUS_SUCCESS
        address = self._address(ptr)
        if address & 3:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        alloc = self.memory.find(address)
        if alloc is None or not alloc.contains(address, count * 4):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        self.memory.view(address, count * 4).view("<u4")[:] = int(value) & 0xFFFFFFFF
        return HSA_STATUS_SUCCESS

    def hsa_amd_pointer_info(self, ptr: Any, info: Any, alloc: Any, num_agents_accessible: Any,
                             accessible: Any) -> int:
        """Describe the allocation containing ``ptr`` (type UNKNOWN when there is none)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(ptr) or self._is_null(info):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        wants_list = not self._is_null(num_agents_accessible) or not self._is_null(accessible)
        if wants_list and (self._is_null(num_agents_accessible) or self._is_null(accessible)
                           or self._is_null(alloc)):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        ffi = self.ffi
        caller_size = int(info.size)
        full = ffi.new("hsa_amd_pointer_info_t *")
        full.size = min(caller_size, ffi.sizeof("hsa_amd_pointer_info_t"))
        block = self.memory.find(self._address(ptr))
        agent_handles: list[int] = []
        if block is not None and block.pool is not None:
            full.type = HSA_EXT_POINTER_TYPE_HSA
            full.agentBaseAddress = ffi.cast("void *", block.address)
            full.hostBaseAddress = ffi.cast("void *", block.address)
            full.sizeInBytes = block.size
            full.agentOwner.handle = block.owner
            full.global_flags = block.pool.global_flags
            agent_handles = sorted(block.accessible)
        else:
            full.type = HSA_EXT_POINTER_TYPE_UNKNOWN
        ffi.memmove(info, full, full.size)
        if wants_list:
            num_agents_accessible[0] = len(agent_handles)
            nbytes = max(1, len(agent_handles)) * ffi.sizeof("hsa_agent_t")
            raw = alloc(nbytes)
            if raw == ffi.NULL:
                return HSA_STATUS_ERROR_OUT_OF_RESOURCES
            array = ffi.cast("hsa_agent_t *", raw)
            for i, handle in enumerate(agent_handles):
                array[i].handle = handle
            accessible[0] = array
        return HSA_STATUS_SUCCESS

    def hsa_amd_memory_async_copy(self, dst: Any, dst_agent: Any, src: Any, src_agent: Any,
                                  size: int, num_dep_signals: int, dep_signals: Any,
                                  completion_signal: Any) -> int:
        """Copy on a worker thread after the dependency signals reach 0; then decrement the
        completion signal."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(dst) or self._is_null(src):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        count = int(num_dep_signals)
        if count > 0 and self._is_null(dep_signals):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if count == 0 and not self._is_null(dep_signals):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT   # ROCr: a list without a count is an error
        if self.agent_by_handle(dst_agent) is None or self.agent_by_handle(src_agent) is None:
            return HSA_STATUS_ERROR_INVALID_AGENT
        completion = self._signal(completion_signal)
        if completion is None:
            return HSA_STATUS_ERROR_INVALID_SIGNAL
        deps = []
        for i in range(count):
            dep = self._signal(dep_signals[i])
            if dep is None:
                return HSA_STATUS_ERROR_INVALID_SIGNAL
            deps.append(dep)
        size = int(size)
        dst_address = self._address(dst)
        src_address = self._address(src)
        for address in (dst_address, src_address):
            block = self.memory.find(address)
            if size and (block is None or not block.contains(address, size)):
                return HSA_STATUS_ERROR_INVALID_ARGUMENT
        self._copy_errors.pop(completion.handle, None)
        thread = threading.Thread(target=self._copy_worker, name="hsapy-sim-copy", daemon=True,
                                  args=(dst_address, src_address, size, deps, completion))
        self._copy_threads.add(thread)
        thread.start()
        return HSA_STATUS_SUCCESS

    def _copy_worker(self, dst: int, src: int, size: int, deps: list[SimSignal],
                     completion: SimSignal) -> None:
        """The copy engine: wait for the dependencies, copy, decrement the completion signal.
        A copy that cannot complete leaves the signal as it is and records why for
        ``sim_signal_error`` (so a waiter learns it at once), never only in a log."""
        try:
            for dep in deps:
                while dep.wait(0, 0, 0.05) != 0:     # HSA_SIGNAL_CONDITION_EQ 0
                    if self._shutting_down:
                        return
                    if not dep.is_valid:
                        self._copy_failed(completion, HSA_STATUS_ERROR_INVALID_SIGNAL,
                                          f"copy of {size} bytes from {src:#x} to {dst:#x}: "
                                          f"its dependency signal {dep.handle:#x} was destroyed "
                                          "before it reached 0; the copy never started")
                        return
            start = self.clock.now()
            if size:
                data = self.memory.view(src, size).copy()
                self.memory.view(dst, size)[:] = data
            if self._copy_profiling:
                completion.set_times(start, self.clock.now())
            completion.subtract(1)
        except SimMemoryFault as fault:
            self._copy_failed(completion, HSA_STATUS_ERROR_MEMORY_FAULT,
                              f"copy of {size} bytes from {src:#x} to {dst:#x}: {fault} (was "
                              "a buffer freed before the copy ran?)", fault.address)
        except Exception as exc:  # a simulator bug: reported to the waiter, never lost
            self._copy_failed(completion, HSA_STATUS_ERROR_EXCEPTION,
                              f"copy of {size} bytes from {src:#x} to {dst:#x}: internal "
                              f"simulator error: {type(exc).__name__}: {exc}")
        finally:
            self._copy_threads.discard(threading.current_thread())

    def _copy_failed(self, completion: SimSignal, status: int, message: str,
                     address: int | None = None) -> None:
        if not completion.is_valid:
            return
        self._copy_errors[completion.handle] = (status, message)
        _log.info("asynchronous copy failed (%s): %s", STATUS_NAMES.get(status, hex(status)),
                  message)
        if address is not None:
            try:
                self._memory_fault_event(self.gpu_agents[0], address)
            except Exception:   # a handler's failure is its own; the copy's error stands
                pass
        with completion.cond:              # waiters look again (see sim_signal_error)
            completion._changed()

    def sim_signal_error(self, signal: Any) -> tuple[int, str] | None:
        """Simulator only: ``(status, message)`` of an asynchronous copy that was to decrement
        ``signal`` and failed (it never will), else None."""
        return self._copy_errors.get(_handle(signal))

    # ------------------------------------------------------------------------------------------
    # queues

    def hsa_queue_create(self, agent: Any, size: int, type: int, callback: Any, data: Any,
                         private_segment_size: int, group_segment_size: int, queue: Any) -> int:
        """Create a user-mode AQL queue and start its packet processor."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(queue):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        sim_agent = self.agent_by_handle(agent)
        if sim_agent is None:
            return HSA_STATUS_ERROR_INVALID_AGENT
        if int(type) not in (0, 1, 2):          # MULTI, SINGLE, COOPERATIVE
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if not sim_agent.is_gpu:
            return HSA_STATUS_ERROR_INVALID_QUEUE_CREATION   # ROCr's CPU agent has no AQL queues
        profile = sim_agent.profile
        size = int(size)
        # ROCr GpuAgent::QueueCreate: power of two -> INVALID_ARGUMENT, above maxAqlSize_ ->
        # OUT_OF_RESOURCES, below minAqlSize_ -> INVALID_ARGUMENT.
        if size == 0 or size & (size - 1):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if size > profile.queue_max_size:
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES
        if size < profile.queue_min_size:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if int(type) == 2:
            # no cooperative (GWS) queues in the simulator
            return HSA_STATUS_ERROR_INVALID_QUEUE_CREATION
        if sum(q.agent is sim_agent for q in list(self.queues.values())) >= profile.queues_max:
            # HSA_AGENT_INFO_QUEUES_MAX queues exist already
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES
        with self._state_lock:
            queue_id = self._next_queue_id
            self._next_queue_id += 1
        cb = None if self._is_null(callback) else callback
        try:
            sim_queue = SimQueue(self, sim_agent, size, int(type), cb, data, queue_id)
        except MemoryError:
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES
        self.queues[sim_queue.address] = sim_queue
        pointer = self.ffi.cast("hsa_queue_t *", sim_queue.address)
        # cdata pointers hash and compare by address: the producer's hot path finds its queue
        # without an ffi.cast per call.
        self._queue_pointers[pointer] = sim_queue
        queue[0] = pointer
        return HSA_STATUS_SUCCESS

    def _destroy_queue(self, sim_queue: SimQueue) -> None:
        sim_queue.stop()
        sim_queue.is_destroyed = True
        self.queues.pop(sim_queue.address, None)
        pointer = self.ffi.cast("hsa_queue_t *", sim_queue.address)
        self._queue_pointers.pop(pointer, None)
        self._last_queue[0] = (None, None, None)
        self.signals.destroy(sim_queue.doorbell.handle)
        self.memory.free(sim_queue.ring_address)
        self.memory.free(sim_queue.address)

    def hsa_queue_destroy(self, queue: Any) -> int:
        """Stop the packet processor and free the queue."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(queue):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        sim_queue = self._queue(queue)
        if sim_queue is None:
            return HSA_STATUS_ERROR_INVALID_QUEUE
        self._destroy_queue(sim_queue)
        return HSA_STATUS_SUCCESS

    def hsa_queue_inactivate(self, queue: Any) -> int:
        """Stop processing packets; the queue stays allocated until destroyed."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(queue):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        sim_queue = self._queue(queue)
        if sim_queue is None:
            return HSA_STATUS_ERROR_INVALID_QUEUE
        sim_queue.stop()
        return HSA_STATUS_SUCCESS

    # The memory-order variants of these operations (hsa_queue_load_read_index_scacquire, ...)
    # are generated from ORDER_VARIANTS below the class.

    def _read_index(self, queue: Any) -> int:
        sim_queue = self._queue(queue)
        return sim_queue.read_index if sim_queue is not None else 0

    def _write_index(self, queue: Any) -> int:
        sim_queue = self._queue(queue)
        return sim_queue.write_index if sim_queue is not None else 0

    def _store_write_index(self, queue: Any, value: int) -> None:
        sim_queue = self._queue(queue)
        if sim_queue is not None:
            sim_queue.store_write_index(int(value))

    def _cas_write_index(self, queue: Any, expected: int, value: int) -> int:
        sim_queue = self._queue(queue)
        return sim_queue.cas_write_index(int(expected), int(value)) if sim_queue is not None else 0

    def _add_write_index(self, queue: Any, value: int) -> int:
        # the reference for the compiled copy each instance installs (_compiled_add_write_index)
        try:
            sim_queue = self._queue_pointers[queue]
        except (KeyError, TypeError):
            sim_queue = self._queue(queue)
            if sim_queue is None:
                return 0
        return sim_queue.add_write_index(int(value))

    def _store_read_index(self, queue: Any, value: int) -> None:
        sim_queue = self._queue(queue)
        if sim_queue is not None:
            sim_queue.store_read_index(int(value))

    def hsa_amd_queue_set_priority(self, queue: Any, priority: int) -> int:
        """Accept a queue priority (LOW, NORMAL, HIGH); the simulator does not schedule by it."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(queue):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if self._queue(queue) is None:
            return HSA_STATUS_ERROR_INVALID_QUEUE
        if int(priority) not in (0, 1, 2):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        return HSA_STATUS_SUCCESS

    def _queue_failed(self, sim_queue: SimQueue, status: int, message: str,
                      address: int | None) -> None:
        """Called on the processor thread when a queue stops with an error."""
        if address is not None and status in (HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
                                              HSA_STATUS_ERROR_MEMORY_FAULT):
            self._memory_fault_event(sim_queue.agent, address)
        name = STATUS_NAMES.get(status, hex(status))
        callback = sim_queue.callback
        if callback is None:
            # ROCr's default handler prints and aborts the process; the simulator only says so.
            _log.warning("queue %d on %s stopped with %s: %s", sim_queue.id,
                         sim_queue.agent.name, name, message)
            return
        _log.info("queue %d on %s stopped with %s: %s", sim_queue.id, sim_queue.agent.name,
                  name, message)
        if not sim_queue.is_destroyed:
            callback(status, self.ffi.cast("hsa_queue_t *", sim_queue.address), sim_queue.data)

    def _memory_fault_event(self, agent: SimAgent, address: int) -> None:
        for callback, data in list(self._event_handlers):
            event = self.ffi.new("hsa_amd_event_t *")
            event.event_type = HSA_AMD_GPU_MEMORY_FAULT_EVENT
            event.memory_fault.agent.handle = agent.handle
            event.memory_fault.virtual_address = address
            event.memory_fault.fault_reason_mask = HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT
            callback(event, data)

    def hsa_amd_register_system_event_handler(self, callback: Any, data: Any) -> int:
        """Register a handler for GPU memory fault events."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(callback):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        self._event_handlers.append((callback, data))
        return HSA_STATUS_SUCCESS

    def sim_queue_error(self, queue: Any) -> tuple[int, str] | None:
        """Simulator only: ``(status, message)`` of a queue that stopped on an error, else None."""
        sim_queue = self._queue(queue)
        if sim_queue is None or not sim_queue.error_status:
            return None
        return sim_queue.error_status, sim_queue.error_message

    # ------------------------------------------------------------------------------------------
    # profiling

    def hsa_amd_profiling_set_profiler_enabled(self, queue: Any, enable: int) -> int:
        """Record start/end timestamps of the queue's packets in their completion signals."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(queue):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        sim_queue = self._queue(queue)
        if sim_queue is None:
            return HSA_STATUS_ERROR_INVALID_QUEUE
        sim_queue.set_profiling(bool(enable))
        return HSA_STATUS_SUCCESS

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
        sim_signal = self._signal(signal)
        if sim_signal is None:
            return HSA_STATUS_ERROR_INVALID_SIGNAL
        if self._is_null(time):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        time.start = sim_signal.start_ts
        time.end = sim_signal.end_ts
        return HSA_STATUS_SUCCESS

    def hsa_amd_profiling_get_async_copy_time(self, signal: Any, time: Any) -> int:
        """Start/end ticks of the async copy that completed ``signal``."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
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


def _enum_constants(ffi: Any) -> dict[str, int]:
    """Every enum constant of the cdef, as a dlopen'ed lib exposes them."""
    constants: dict[str, int] = {}
    for name in ffi.list_types()[0]:
        ctype = ffi.typeof(name)
        if ctype.kind == "enum":
            constants.update(ctype.relements)
    return constants


def _install_constants() -> None:
    from hsapy._hsa import ffi

    for name, value in _enum_constants(ffi).items():
        if not hasattr(SimLib, name):
            setattr(SimLib, name, value)


_install_constants()
