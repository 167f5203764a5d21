"""SimLib's memory functions: memory pools, allocation, access, copies and fills, pointer
information."""
from __future__ import annotations

import logging
import threading
from typing import Any

from hsapy.errors import STATUS_NAMES
from hsapy.hsa_enums import (
    HSA_AMD_LINK_INFO_TYPE_PCIE,
    HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT,
    HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT,
    HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED,
    HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED,
    HSA_EXT_POINTER_TYPE_HSA,
    HSA_EXT_POINTER_TYPE_UNKNOWN,
    HSA_STATUS_ERROR_EXCEPTION,
    HSA_STATUS_ERROR_INVALID_AGENT,
    HSA_STATUS_ERROR_INVALID_ALLOCATION,
    HSA_STATUS_ERROR_INVALID_ARGUMENT,
    HSA_STATUS_ERROR_INVALID_MEMORY_POOL,
    HSA_STATUS_ERROR_INVALID_SIGNAL,
    HSA_STATUS_ERROR_MEMORY_FAULT,
    HSA_STATUS_ERROR_NOT_INITIALIZED,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES,
    HSA_STATUS_SUCCESS,
)
from hsapy.sim import info as _info
from hsapy.sim.memory import SimMemoryFault
from hsapy.sim.objects import SimAgent, SimPool
from hsapy.sim.objects import handle_of as _handle
from hsapy.sim.signals import SimSignal

_log = logging.getLogger("hsapy.sim")


class MemoryMixin:
    """The memory part of :class:`~hsapy.sim.simlib.SimLib` (which provides ``self``'s state)."""

    # ------------------------------------------------------------------------------------------
    # memory pools

    def hsa_amd_agent_iterate_memory_pools(self, agent: Any, callback: Any, data: Any) -> int:
        """Call ``callback(pool, data)`` for each pool of the agent."""
        return self._iterate_agent(agent, callback, data, "hsa_amd_memory_pool_t",
                                   lambda a: [p.handle for p in a.pools])

    def hsa_amd_memory_pool_get_info(self, memory_pool: Any, attribute: int, value: Any) -> int:
        """Pool attributes (hsa_amd_memory_pool_info_t)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        pool = self._pool(memory_pool)
        if pool is None:
            return HSA_STATUS_ERROR_INVALID_MEMORY_POOL
        return self._write_info(_info.POOL_INFO, pool, attribute, value)

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
