"""Memory pools and buffers (hsa_amd_memory_pool_*).

A :class:`Buffer` is one allocation from a :class:`MemoryPool`. Where the host may touch it
(fine-grained or kernarg memory) ``buffer.numpy()`` is a zero-copy view; coarse-grained device
memory is reached with copies through a host staging buffer and ``hsa_amd_memory_async_copy``.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from hsapy._checks import check_agent, check_timeout
from hsapy._hsa import call, constant
from hsapy._lifetime import (
    HandleState,
    NotCopyable,
    ReleaseOnce,
    ViewedMemory,
    release_when_collected,
)
from hsapy.errors import HsapyTypeError, HsapyValueError, OutOfResourcesError
from hsapy.hsa_enums import HSA_STATUS_SUCCESS
from hsapy.interop import BufferView

if TYPE_CHECKING:
    from hsapy.agent import Agent
    from hsapy.runtime import Runtime

__all__ = ["MemoryPool", "Buffer", "POOL_INFO"]

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


class MemoryPool(NotCopyable):
    """One memory pool of an agent. Take pools from ``agent.memory_pools`` (or the shortcuts
    ``agent.device_pool`` / ``agent.kernarg_pool`` / ``runtime.system_pool``)."""

    def __init__(self, agent: Agent, handle: int) -> None:
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

    def access(self, agent: Agent) -> str:
        """How ``agent`` may access this pool's memory: "allowed" (by default), "after
        allow_access" (Buffer.allow_access first) or "never"
        (hsa_amd_agent_memory_pool_get_info, HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS)."""
        self.runtime._state.check()
        check_agent(agent, self.runtime, "MemoryPool.access")
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
        self.runtime._state.check()
        if not isinstance(nbytes, (int, np.integer)) or isinstance(nbytes, bool):
            raise HsapyTypeError(f"MemoryPool.allocate: nbytes must be an int, not {nbytes!r}")
        if nbytes <= 0:
            raise HsapyValueError(f"MemoryPool.allocate: nbytes must be > 0, got {nbytes}")
        if not self.is_allocation_allowed:
            raise HsapyValueError(
                f"the {self.segment} pool {self.handle:#x} of {self.agent.name} does not allow "
                "runtime allocation; use agent.device_pool, agent.kernarg_pool or "
                "runtime.system_pool")
        if nbytes > self.alloc_max_size:
            raise HsapyValueError(
                f"MemoryPool.allocate: nbytes={nbytes} exceeds the largest allocation this "
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
        return (f"<MemoryPool {self.segment} {'/'.join(kinds)} of {self.agent.name} "
                f"size={self.size}>")


def _pool_free(runtime: Runtime, address: int) -> Callable[[], None]:
    """The free of one allocation. It waits for every dispatch and copy in flight when it is
    asked (Runtime._after_dispatches: one of them may point at this memory), and gives the
    runtime's shut-down its turn once done (Runtime.close waits for the last free)."""
    lib, ffi, outstanding = runtime.lib, runtime.ffi, runtime._outstanding

    def free() -> None:
        try:
            status = lib.hsa_amd_memory_pool_free(ffi.cast("void *", address))
        finally:
            outstanding.done()
        if status != HSA_STATUS_SUCCESS:
            raise RuntimeError(f"hsa_amd_memory_pool_free returned {status:#x}")

    def release() -> None:
        runtime._after_dispatches(free)
    return release


def _forget_address(buffer_ref: Any, release: Any) -> Callable[[], None]:
    """The Buffer's release: its ``address`` is taken away first (see _ClosedAddress), then the
    memory freed (or left to the last numpy view). Holds the Buffer only weakly."""
    def close() -> None:
        buffer = buffer_ref()
        if buffer is not None:
            buffer.__dict__.pop("address", None)
        release()
    return close


class _ClosedAddress:
    """``Buffer.address`` of a closed buffer: reading it raises ClosedError.

    While a buffer is open its address is a plain entry of the instance's ``__dict__``, which
    takes precedence over this class attribute (a non-data descriptor): the kernarg packer's
    ``getattr(arg, "address")`` costs no more than any attribute. Closing the buffer removes
    the entry, so this descriptor answers from then on -- a closed buffer never reaches a
    kernel argument, a copy or a view."""

    def __get__(self, buffer: Any, owner: type | None = None) -> Any:
        if buffer is None:
            return self
        raise buffer._state.error(
            "its memory may already belong to another allocation; allocate a new buffer "
            "(pool.allocate)")


class Buffer(NotCopyable):
    """One allocation from a memory pool: ``address``, ``size``, ``pool``.

    The memory stays allocated while the Buffer or any numpy view of it is alive: ``close()``
    frees at once when no view exists, otherwise when the last view is collected. A dispatch or
    asynchronous copy still in flight also holds it: the free waits for their completion. Once
    closed, every use -- ``address`` included, so a closed buffer is refused as a kernel
    argument -- raises ClosedError.
    """

    address = _ClosedAddress()

    def __init__(self, pool: MemoryPool, address: int, size: int) -> None:
        self.pool = pool  # children hold their parents
        self.runtime = pool.runtime
        self.address = address
        self._address = address      # for messages once ``address`` is gone
        self.size = size
        ffi = self.runtime.ffi
        self.runtime._outstanding.add()     # given back by the free (_pool_free)
        # The freeing destructor hangs on a cdata that every numpy view references, so memory is
        # only returned to the pool once the Buffer is closed AND no view is left.
        self._holder = ViewedMemory(ffi, address, ReleaseOnce(_pool_free(self.runtime, address)))
        self._state = HandleState("Buffer", _forget_address(weakref.ref(self),
                                                            self._holder.release),
                                  what=f"buffer {address:#x} ({size} bytes)")
        self.runtime._track(self._state)
        release_when_collected(self, self._state)

    @property
    def is_closed(self) -> bool:
        """True once close() has been called (the memory may outlive it in views)."""
        return self._state.closed

    @property
    def is_host_accessible(self) -> bool:
        """Whether numpy() may view this buffer (see MemoryPool.is_host_accessible)."""
        return self.pool.is_host_accessible

    def close(self) -> None:
        """Free the allocation (idempotent; deferred while numpy views are alive, and while a
        dispatch or copy in flight may use it)."""
        self._state.close()

    @property
    def _owner(self) -> Any:
        self._state.check()
        return self._holder.cdata

    def __enter__(self) -> Buffer:
        self._state.check()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __int__(self) -> int:
        return self.address

    def _check_open(self) -> None:
        self._state.check()

    def numpy(self, dtype: Any = np.uint8, shape: Any = None) -> np.ndarray:
        """A zero-copy numpy view (host-accessible memory only). The view keeps the memory
        mapped, even past ``close()`` and ``Runtime.close()``, until it is collected."""
        self._check_open()
        if not self.is_host_accessible:
            raise HsapyValueError(
                f"buffer {self._address:#x} is in coarse-grained device memory of "
                f"{self.pool.agent.name}: the host may not touch it. Use copy_from()/copy_to(), "
                "or allocate from agent.fine_grained_pool / runtime.system_pool")
        dtype = _plain_dtype(dtype, "Buffer.numpy")
        count = self.size // dtype.itemsize
        array = np.frombuffer(self.runtime.ffi.buffer(self._owner, count * dtype.itemsize), dtype)
        if shape is None:
            return array
        try:
            return array.reshape(shape)
        except (ValueError, TypeError):
            raise HsapyValueError(
                f"Buffer.numpy: shape {shape!r} does not fit the {count} {dtype} elements of a "
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
        timeout = check_timeout(timeout, "Buffer.copy_from")
        data = _source_bytes(source, "Buffer.copy_from")
        if data.size > self.size:
            raise HsapyValueError(f"copy_from: {data.size} bytes do not fit in a {self.size}-byte "
                                  "buffer")
        ffi = self.runtime.ffi
        if self.is_host_accessible:
            if data.size:
                ffi.memmove(self._owner, ffi.from_buffer(data), data.size)
            return
        with self._staging(data.size) as staging:
            if data.size:
                ffi.memmove(staging._owner, ffi.from_buffer(data), data.size)
            self.runtime.copy(self, staging, data.size, timeout=timeout)

    def copy_to(self, out: np.ndarray | None = None, dtype: Any = np.uint8,
                timeout: float = 10.0) -> np.ndarray:
        """Copy the buffer into a new (or the given) numpy array.

        ``out`` must be a writeable, C-contiguous numpy array; the first ``min(out.nbytes,
        size)`` bytes are copied."""
        self._check_open()
        timeout = check_timeout(timeout, "Buffer.copy_to")
        if out is None:
            dtype = _plain_dtype(dtype, "Buffer.copy_to")
            out = np.empty(self.size // dtype.itemsize, dtype)
        target = _writable_bytes(out, "Buffer.copy_to")
        nbytes = min(target.size, self.size)
        ffi = self.runtime.ffi
        if self.is_host_accessible:
            if nbytes:
                ffi.memmove(ffi.from_buffer(target), self._owner, nbytes)
            return out
        with self._staging(nbytes) as staging:
            self.runtime.copy(staging, self, nbytes, timeout=timeout)
            if nbytes:
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

        The size must be a multiple of 4; ``value`` is one word, signed or unsigned (-1 is
        0xFFFFFFFF)."""
        self._check_open()
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise HsapyTypeError(f"Buffer.fill: value must be an int (a 32-bit word), not "
                                 f"{value!r}")
        if not -(1 << 31) <= value < 1 << 32:
            # a word is what fits 32 bits signed or unsigned; more would be silently cut off
            raise HsapyValueError(f"Buffer.fill: value {value} does not fit a 32-bit word "
                                  f"({-(1 << 31)}..{(1 << 32) - 1}); fill writes one word over "
                                  "and over (use copy_from for wider patterns)")
        if self.size % 4:
            raise HsapyValueError("Buffer.fill writes 32-bit words: the size must be a multiple "
                                  "of 4")
        call(self.runtime.lib, "hsa_amd_memory_fill",
             self.runtime.ffi.cast("void *", self._address), int(value) & 0xFFFFFFFF,
             self.size // 4)

    def allow_access(self, agents: Iterable[Agent]) -> None:
        """Let ``agents`` access this allocation (hsa_amd_agents_allow_access)."""
        self._check_open()
        agents = _agents(agents, self.runtime, "Buffer.allow_access")
        if not agents:
            raise HsapyValueError("Buffer.allow_access needs at least one agent")
        ffi = self.runtime.ffi
        handles = ffi.new("hsa_agent_t[]", [{"handle": a.handle} for a in agents])
        call(self.runtime.lib, "hsa_amd_agents_allow_access", len(agents), handles, ffi.NULL,
             ffi.cast("void *", self._address))

    def __repr__(self) -> str:
        state = "closed" if self.is_closed else f"{self.size} bytes"
        return f"<Buffer {self._address:#x} {state} in {self.pool!r}>"


def _agents(agents: Any, runtime: Runtime, what: str) -> list[Any]:
    """A list of Agents of ``runtime``, or a typed error naming what was given instead."""
    if getattr(agents, "runtime", None) is not None:     # one Agent (of any runtime)
        agents = [agents]
    try:
        agents = list(agents)
    except TypeError:
        raise HsapyTypeError(f"{what}: agents must be a list of Agents (runtime.gpu_agents), "
                             f"not {type(agents).__name__}") from None
    return [check_agent(agent, runtime, what) for agent in agents]


def _plain_dtype(dtype: Any, what: str) -> np.dtype:
    """``dtype`` as a numpy dtype of plain bytes (no Python objects), or a typed error. None is
    refused: numpy reads it as float64, which is not what leaving the default out means."""
    if dtype is None:
        raise HsapyTypeError(f"{what}: dtype is a numpy dtype such as numpy.float32 (leave it "
                             "out for bytes, numpy.uint8), not None")
    try:
        dtype = np.dtype(dtype)
    except (TypeError, ValueError):
        raise HsapyTypeError(f"{what}: dtype {dtype!r:.40} is not a numpy dtype") from None
    if dtype.hasobject or dtype.itemsize == 0:
        raise HsapyTypeError(f"{what}: dtype {dtype} does not describe plain bytes; use a "
                             "numeric dtype such as numpy.float32")
    return dtype


def _source_bytes(source: Any, what: str) -> np.ndarray:
    """The bytes of an array-like source, flat and contiguous, or a typed error."""
    if source is None or isinstance(source, (str, Buffer, int, float, complex, list, tuple)):
        hint = ("; copy between buffers with runtime.copy(dst, src, nbytes)"
                if isinstance(source, Buffer) else
                "; encode text first (str.encode)" if isinstance(source, str) else
                # numpy would pick int64 or float64 for a list: into a float32 buffer that is
                # twice the bytes, each value split over two elements
                "; a list of Python numbers has no size in bytes: give numpy.array(values, "
                "dtype)" if isinstance(source, (list, tuple)) else
                # a Python number has no byte width: int64? int32? float32?
                "; a Python number has no size in bytes: give numpy.array(x, dtype), or use "
                "Buffer.fill(word) to repeat a 32-bit word" if source is not None else "")
        raise HsapyTypeError(f"{what}: source is a numpy array or bytes, not "
                             f"{type(source).__name__}{hint}")
    try:
        array = np.ascontiguousarray(source)
    except (TypeError, ValueError) as exc:
        raise HsapyTypeError(f"{what}: cannot read bytes from {type(source).__name__} "
                             f"({exc})") from None
    if array.dtype.hasobject:
        raise HsapyTypeError(f"{what} takes a numpy array of numbers or bytes, not "
                             f"{type(source).__name__} of Python objects")
    return array.view(np.uint8).reshape(-1)


def _writable_bytes(out: Any, what: str) -> np.ndarray:
    """``out``'s memory as a flat uint8 view, when it may be written in place; else an error."""
    if not isinstance(out, np.ndarray):
        raise HsapyTypeError(f"{what}: out must be a numpy array, not {type(out).__name__}")
    if out.dtype.hasobject:
        raise HsapyTypeError(f"{what}: out holds Python objects; give an array of numbers")
    if not out.flags.writeable:
        raise HsapyValueError(f"{what}: out is read-only (a view of bytes or of a read-only "
                              "array); give a writeable array")
    if not out.flags.c_contiguous:
        raise HsapyValueError(f"{what}: out must be C-contiguous (numpy.ascontiguousarray), "
                              "or the copy would land in a temporary")
    return out.reshape(-1).view(np.uint8)
