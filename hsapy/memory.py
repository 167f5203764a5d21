"""Memory pools and buffers (hsa_amd_memory_pool_*).

A :class:`Buffer` is one allocation from a :class:`MemoryPool`. Where the host may touch it
(fine-grained or kernarg memory) ``buffer.numpy()`` is a zero-copy view; coarse-grained device
memory is reached with copies through a host staging buffer and ``hsa_amd_memory_async_copy``.
"""
from __future__ import annotations

import sys
import weakref
from typing import Any, Iterable

import numpy as np

from hsapy._hsa import call, constant
from hsapy._lifetime import HandleState, defer
from hsapy.errors import HsapyTypeError, HsapyValueError, OutOfResourcesError
from hsapy.interop import BufferView

__all__ = ["MemoryPool", "Buffer", "POOL_INFO"]

HSA_STATUS_SUCCESS = 0
# hsa_amd_segment_t (hsa_ext_amd.h)
SEGMENT_NAMES = {
    constant("HSA_AMD_SEGMENT_GLOBAL"): "global",
    constant("HSA_AMD_SEGMENT_READONLY"): "readonly",
    constant("HSA_AMD_SEGMENT_PRIVATE"): "private",
    constant("HSA_AMD_SEGMENT_GROUP"): "group",
}
# hsa_amd_memory_pool_global_flag_t (hsa_ext_amd.h)
GLOBAL_FLAG_KERNARG_INIT = constant("HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT")
GLOBAL_FLAG_FINE_GRAINED = constant("HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED")
GLOBAL_FLAG_COARSE_GRAINED = constant("HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED")

# MemoryPool.info: key -> (hsa_amd_memory_pool_info_t enumerator, C type of the value).
POOL_INFO: dict[str, tuple[str, str]] = {
    "segment": ("HSA_AMD_MEMORY_POOL_INFO_SEGMENT", "uint32_t"),
    "global_flags": ("HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS", "uint32_t"),
    "size": ("HSA_AMD_MEMORY_POOL_INFO_SIZE", "size_t"),
    "alloc_allowed": ("HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED", "bool"),
    "granule": ("HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE", "size_t"),
    "alignment": ("HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT", "size_t"),
    "accessible_by_all": ("HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL", "bool"),
    "alloc_max_size": ("HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE", "size_t"),
}

# hsa_amd_memory_pool_access_t (hsa_ext_amd.h): may an agent touch a pool's allocations?
ACCESS_NAMES = {
    constant("HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED"): "never",
    constant("HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT"): "allowed",
    constant("HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT"): "after allow_access",
}


class MemoryPool:
    """One memory pool of an agent. Take pools from ``agent.memory_pools`` (or the shortcuts
    ``agent.device_pool`` / ``agent.kernarg_pool`` / ``runtime.system_pool``)."""

    def __init__(self, agent: Any, handle: int) -> None:
        self.agent = agent
        self.runtime = agent.runtime
        self.handle = int(handle)
        lib, ffi = self.runtime.lib, self.runtime.ffi
        self.info: dict[str, Any] = {}
        for key, (attribute, ctype) in POOL_INFO.items():
            out = ffi.new(ctype + " *")
            status = lib.hsa_amd_memory_pool_get_info({"handle": self.handle},
                                                      constant(attribute), out)
            self.info[key] = out[0] if status == HSA_STATUS_SUCCESS else None

    @property
    def segment(self) -> str:
        """The segment: global, readonly, private or group (HSA_AMD_MEMORY_POOL_INFO_SEGMENT)."""
        return SEGMENT_NAMES.get(self.info["segment"], "unknown")

    @property
    def size(self) -> int:
        """Bytes in the pool (HSA_AMD_MEMORY_POOL_INFO_SIZE)."""
        return self.info["size"] or 0

    @property
    def granule(self) -> int:
        """Allocation granularity in bytes; sizes are rounded up to it."""
        return self.info["granule"] or 0

    @property
    def alignment(self) -> int:
        """Alignment in bytes of every allocation from this pool."""
        return self.info["alignment"] or 0

    @property
    def alloc_max_size(self) -> int:
        """Largest single allocation (HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE; else the size)."""
        return self.info["alloc_max_size"] or self.size

    def access(self, agent: Any) -> str:
        """How ``agent`` may access this pool's memory: "allowed" (by default), "after
        allow_access" (Buffer.allow_access first) or "never"
        (hsa_amd_agent_memory_pool_get_info, HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS)."""
        lib, ffi = self.runtime.lib, self.runtime.ffi
        out = ffi.new("uint32_t *")
        call(lib, "hsa_amd_agent_memory_pool_get_info", {"handle": agent.handle},
             {"handle": self.handle}, constant("HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS"), out)
        return ACCESS_NAMES.get(out[0], f"unknown ({out[0]})")

    @property
    def is_allocation_allowed(self) -> bool:
        """Whether hsa_amd_memory_pool_allocate may allocate from this pool."""
        return bool(self.info["alloc_allowed"])

    @property
    def is_accessible_by_all(self) -> bool:
        """Whether every agent may access this pool's memory by default."""
        return bool(self.info["accessible_by_all"])

    def _flag(self, flag: int) -> bool:
        return self.segment == "global" and bool((self.info["global_flags"] or 0) & flag)

    @property
    def is_kernarg(self) -> bool:
        """A global pool flagged KERNARG_INIT: where kernarg segments live."""
        return self._flag(GLOBAL_FLAG_KERNARG_INIT)

    @property
    def is_fine_grained(self) -> bool:
        """A global pool whose memory is coherent between agents while kernels run."""
        return self._flag(GLOBAL_FLAG_FINE_GRAINED)

    @property
    def is_coarse_grained(self) -> bool:
        """A global pool coherent only at dispatch boundaries (device memory)."""
        return self._flag(GLOBAL_FLAG_COARSE_GRAINED)

    @property
    def is_host_accessible(self) -> bool:
        """Whether the host may read and write this pool's memory directly.

        System (CPU-agent) pools and fine-grained pools are; coarse-grained device memory is not
        (on hardware it may be behind a small BAR; hsapy copies through a staging buffer)."""
        return (not self.agent.is_gpu) or self.is_fine_grained or self.is_kernarg

    def allocate(self, nbytes: int) -> Buffer:
        """Allocate ``nbytes`` (rounded up to the pool's granule by the runtime)."""
        if not isinstance(nbytes, (int, np.integer)) or isinstance(nbytes, bool):
            raise HsapyTypeError(f"MemoryPool.allocate: nbytes must be an int, not {nbytes!r}")
        if nbytes <= 0:
            raise HsapyValueError(f"MemoryPool.allocate: nbytes must be > 0, got {nbytes}")
        if not self.is_allocation_allowed:
            raise HsapyValueError(
                f"the {self.segment} pool {self.handle:#x} of {self.agent.name} does not allow "
                "runtime allocation; use agent.device_pool, agent.kernarg_pool or runtime.system_pool")
        if nbytes > self.alloc_max_size:
            raise HsapyValueError(
                f"MemoryPool.allocate: {nbytes} bytes exceed the largest allocation this "
                f"{self.segment} pool of {self.agent.name} allows ({self.alloc_max_size} bytes)")
        lib, ffi = self.runtime.lib, self.runtime.ffi
        out = ffi.new("void **")
        try:
            call(lib, "hsa_amd_memory_pool_allocate", {"handle": self.handle}, int(nbytes), 0, out)
        except OutOfResourcesError as exc:
            raise type(exc)(
                exc.status, exc.function,
                f"{nbytes} bytes from the {self.segment} pool {self.handle:#x} of "
                f"{self.agent.name} (pool size {self.size} bytes): the pool is exhausted; close "
                "buffers no longer needed (Buffer.close) or allocate less") from None
        return Buffer(self, int(ffi.cast("uintptr_t", out[0])), int(nbytes))

    def as_dict(self) -> dict[str, Any]:

        """The pool's properties, as ``hsapy info --json`` prints them."""
        return {
            "handle": self.handle, "segment": self.segment, "size": self.size,
            "granule": self.granule, "alignment": self.alignment,
            "fine_grained": self.is_fine_grained, "coarse_grained": self.is_coarse_grained,
            "kernarg": self.is_kernarg, "alloc_allowed": self.is_allocation_allowed,
            "accessible_by_all": self.is_accessible_by_all,
            "alloc_max_size": self.alloc_max_size,
        }

    def __repr__(self) -> str:
        kinds = [k for k, v in (("kernarg", self.is_kernarg), ("fine", self.is_fine_grained),
                                ("coarse", self.is_coarse_grained)) if v]
        return f"<MemoryPool {self.segment} {'/'.join(kinds)} of {self.agent.name} size={self.size}>"


def _pool_free(lib: Any, ffi: Any, address: int, runtime_state: Any):
    def release() -> None:
        if runtime_state.closed:
            return  # hsa_shut_down already returned every allocation to the runtime
        status = lib.hsa_amd_memory_pool_free(ffi.cast("void *", address))
        if status != HSA_STATUS_SUCCESS:
            raise RuntimeError(f"hsa_amd_memory_pool_free returned {status:#x}")
    return release


class Buffer:
    """One allocation from a memory pool: ``address``, ``size``, ``pool``.

    The memory stays allocated while the Buffer or any numpy view of it is alive: ``close()``
    frees at once when no view exists, otherwise when the last view is collected.
    """

    def __init__(self, pool: MemoryPool, address: int, size: int) -> None:
        self.pool = pool  # children hold their parents
        self.runtime = pool.runtime
        self.address = address
        self.size = size
        ffi = self.runtime.ffi
        # The freeing destructor hangs on a cdata that every numpy view references, so memory is
        # only returned to the pool once the Buffer is closed AND no view is left.
        self._holder = _Owner(ffi, address, _ReleaseOnce(
            _pool_free(self.runtime.lib, ffi, address, self.runtime._state)))
        self._state = HandleState("Buffer", self._holder.release)
        self.runtime._track(self._state)
        weakref.finalize(self, self._state.close_later)

    @property
    def is_closed(self) -> bool:
        """True once close() has been called (the memory may outlive it in views)."""
        return self._state.closed

    @property
    def is_host_accessible(self) -> bool:
        """Whether numpy() may view this buffer (see MemoryPool.is_host_accessible)."""
        return self.pool.is_host_accessible

    def close(self) -> None:
        """Free the allocation (idempotent; deferred while numpy views are alive)."""
        self._state.close()

    @property
    def _owner(self) -> Any:
        return self._holder.cdata

    def __enter__(self) -> Buffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __int__(self) -> int:
        return self.address

    def _check_open(self) -> None:
        if self._state.closed:
            raise HsapyValueError(f"buffer {self.address:#x} is closed")

    def numpy(self, dtype: Any = np.uint8, shape: Any = None) -> np.ndarray:
        """A zero-copy numpy view (host-accessible memory only)."""
        self._check_open()
        if not self.is_host_accessible:
            raise HsapyValueError(
                f"buffer {self.address:#x} is in coarse-grained device memory of "
                f"{self.pool.agent.name}: the host may not touch it. Use copy_from()/copy_to(), "
                "or allocate from agent.fine_grained_pool / runtime.system_pool")
        dtype = np.dtype(dtype)
        count = self.size // dtype.itemsize
        array = np.frombuffer(self.runtime.ffi.buffer(self._owner, count * dtype.itemsize), dtype)
        if shape is None:
            return array
        try:
            return array.reshape(shape)
        except ValueError:
            raise HsapyValueError(
                f"Buffer.numpy: shape {shape} does not fit the {count} {dtype} elements of a "
                f"{self.size}-byte buffer") from None

    def view(self, dtype: Any = np.uint8, shape: Any = None, offset: int = 0) -> BufferView:
        """A typed view to share (hsapy.interop): ``torch.from_dlpack(buffer.view(np.float32,
        (m, n)))`` gives an m x n float32 tensor on this memory; also a kernel argument."""
        self._check_open()
        return BufferView(self, self._owner, dtype, shape, offset)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:
        """DLPack export of the whole buffer as uint8 bytes (see :meth:`view` for a typed one)."""
        return self.view().__dlpack__(stream=stream, max_version=max_version,
                                      dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """(kDLCPU, 0) for host-accessible memory, else (kDLROCM, GPU agent index)."""
        return self.view().__dlpack_device__()

    @property
    def __array_interface__(self) -> dict[str, Any]:
        """The numpy array interface (uint8) of host-accessible memory; device memory raises
        hsapy.interop.NotHostAccessibleError."""
        return self.view().__array_interface__

    def copy_from(self, source: Any, timeout: float = 10.0) -> None:
        """Copy a numpy array (or bytes) into the buffer, from offset 0."""
        self._check_open()
        data = np.ascontiguousarray(source).view(np.uint8).reshape(-1)
        if data.size > self.size:
            raise HsapyValueError(f"copy_from: {data.size} bytes do not fit in a {self.size}-byte buffer")
        ffi = self.runtime.ffi
        if self.is_host_accessible:
            ffi.memmove(self._owner, ffi.from_buffer(data), data.size)
            return
        with self._staging(data.size) as staging:
            ffi.memmove(staging._owner, ffi.from_buffer(data), data.size)
            self.runtime.copy(self, staging, data.size, timeout=timeout)

    def copy_to(self, out: np.ndarray | None = None, dtype: Any = np.uint8,
                timeout: float = 10.0) -> np.ndarray:
        """Copy the buffer into a new (or the given) numpy array."""
        self._check_open()
        if out is None:
            out = np.empty(self.size // np.dtype(dtype).itemsize, dtype)
        target = out.view(np.uint8).reshape(-1)
        nbytes = min(target.size, self.size)
        ffi = self.runtime.ffi
        if self.is_host_accessible:
            ffi.memmove(ffi.from_buffer(target), self._owner, nbytes)
            return out
        with self._staging(nbytes) as staging:
            self.runtime.copy(staging, self, nbytes, timeout=timeout)
            ffi.memmove(ffi.from_buffer(target), staging._owner, nbytes)
        return out

    def _staging(self, nbytes: int) -> Buffer:
        """A host buffer the copy engine of this buffer's agent may read and write."""
        pool = self.runtime.system_pool
        staging = pool.allocate(max(nbytes, 1))
        # ROCr reports system pools as DISALLOWED_BY_DEFAULT for GPU agents (hsa_ext_amd.h,
        # hsa_amd_memory_pool_access_t): grant access before the GPU's copy engine uses it.
        if pool.access(self.pool.agent) == "after allow_access":
            staging.allow_access([self.pool.agent])
        return staging

    def fill(self, value: int) -> None:
        """Set every 32-bit word to ``value`` (hsa_amd_memory_fill, synchronous; any pool).

        The size must be a multiple of 4; ``value`` is taken modulo 2**32."""
        self._check_open()
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise HsapyTypeError(f"Buffer.fill: value must be an int (a 32-bit word), not {value!r}")
        if self.size % 4:
            raise HsapyValueError("Buffer.fill writes 32-bit words: the size must be a multiple of 4")
        call(self.runtime.lib, "hsa_amd_memory_fill", self.runtime.ffi.cast("void *", self.address),
             int(value) & 0xFFFFFFFF, self.size // 4)

    def allow_access(self, agents: Iterable[Any]) -> None:
        """Let ``agents`` access this allocation (hsa_amd_agents_allow_access)."""
        self._check_open()
        agents = list(agents)
        if not agents:
            raise HsapyValueError("Buffer.allow_access needs at least one agent")
        ffi = self.runtime.ffi
        handles = ffi.new("hsa_agent_t[]", [{"handle": a.handle} for a in agents])
        call(self.runtime.lib, "hsa_amd_agents_allow_access", len(agents), handles, ffi.NULL,
             ffi.cast("void *", self.address))

    def __repr__(self) -> str:
        state = "closed" if self.is_closed else f"{self.size} bytes"
        return f"<Buffer {self.address:#x} {state} in {self.pool!r}>"


class _Owner:
    """Holds the owning cdata of a Buffer; what its HandleState releases (no Buffer reference)."""

    __slots__ = ("ffi", "cdata", "freer")

    def __init__(self, ffi: Any, address: int, freer: _ReleaseOnce) -> None:
        self.ffi = ffi
        self.freer = freer
        self.cdata = ffi.gc(ffi.cast("uint8_t *", address), freer)

    def release(self) -> None:
        cdata, self.cdata = self.cdata, None
        # 2 references: the local name and getrefcount's argument; more means a live numpy
        # view, and then the ffi.gc destructor frees the memory when the last view goes.
        if cdata is not None and sys.getrefcount(cdata) <= 2:
            self.freer.now()           # explicit close: free at once, here
            self.ffi.release(cdata)    # (the destructor then has nothing left to do)


class _ReleaseOnce:
    """ffi.gc destructor: frees once. Called by the garbage collector it only defers the free
    to a normal context (hsapy._lifetime: a destructor may run with runtime locks held)."""

    __slots__ = ("release",)

    def __init__(self, release: Any) -> None:
        self.release = release

    def __call__(self, _cdata: Any) -> None:
        if self.release is not None:
            defer(self.now)

    def now(self) -> None:
        release, self.release = self.release, None
        if release is None:
            return
        try:
            release()
        except Exception as exc:
            import warnings

            warnings.warn(f"hsapy: freeing a buffer failed: {exc}", ResourceWarning, stacklevel=2)
