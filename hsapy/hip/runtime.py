"""HipRuntime: the HIP runtime API over one hsapy Runtime, one method per HIP call (the package
docstring, hsapy/hip/__init__.py, says how each kind of call maps onto AQL)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hsapy import aql
from hsapy._checks import check_items, check_timeout
from hsapy._lifetime import HandleState, NotCopyable, release_when_collected
from hsapy.errors import HsapyError, HsapyTypeError, HsapyValueError
from hsapy.hip.errors import (
    STICKY_ERRORS,
    HipError,
    byte_count,
    code_for,
    dim3,
    expect_type,
    hip_api,
    hipError_t,
    launch_configuration,
    no_flags,
)
from hsapy.hip.handles import (
    DEFAULT_TIMEOUT,
    DeviceProp,
    Event,
    GraphExec,
    HandleMaker,
    HipGraph,
    KernelNode,
    MemPool,
    Module,
    Stream,
    TraceEntry,
    hipMemcpyKind,
    release_nothing,
)
from hsapy.kernarg import KernelArgumentError

__all__ = ["HipRuntime", "MEMSET_SOURCE"]

# The fill kernels behind hipMemset/hipMemsetAsync: bytes in general, 32-bit words when aligned.
MEMSET_SOURCE = r"""
extern "C" __global__ void hsapy_memset_u8(unsigned char* dst, unsigned int value, unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = (unsigned char)value;
}
extern "C" __global__ void hsapy_memset_u32(unsigned int* dst, unsigned int word, unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = word;
}
"""
MEMSET_BLOCK = 256


class HipRuntime(HandleMaker, NotCopyable):
    """The HIP runtime API over one hsapy Runtime. Method names are HIP's without the ``hip``
    prefix (``hip.malloc`` is hipMalloc). Pass an open ``runtime`` or a ``backend`` name."""

    def __init__(self, runtime: Any = None, backend: str | None = None,
                 trace: bool = False) -> None:
        from hsapy.runtime import Runtime

        if trace is not True and trace is not False and not isinstance(trace, np.bool_):
            raise HipError(hipError_t.hipErrorInvalidValue, "hipInit",
                           f"trace is True or False, not {type(trace).__name__} {trace!r:.40}")
        if runtime is not None and not isinstance(runtime, Runtime):
            raise HipError(hipError_t.hipErrorInvalidValue, "hipInit",
                           f"runtime must be an hsapy Runtime, not {type(runtime).__name__}")
        if runtime is not None:
            runtime._state.check()
        self._owns_runtime = runtime is None
        self.runtime = runtime if runtime is not None else Runtime(backend=backend)
        self._device = 0
        self._last = hipError_t.hipSuccess
        self._sticky: hipError_t | None = None
        self._default_streams: dict[int, Stream] = {}
        self._streams: list[Stream] = []
        self._events: list[Event] = []
        self._allocated: dict[int, int] = {}          # device -> bytes allocated through malloc
        self._buffers: dict[int, tuple[Any, int]] = {}  # address -> (Buffer, device)
        self._peers: set[tuple[int, int]] = set()      # (device, peer) with access enabled
        self._memset_kernels: dict[int, tuple[Any, Any]] = {}
        # Loaded modules stay alive until hipModuleUnload: a Kernel dropped right after its
        # launch must not unload the code its queued dispatch still has to run.
        self._modules: list[Module] = []
        self._state = HandleState("HipRuntime", release_nothing, what="the HIP runtime")
        release_when_collected(self, self._state)
        self._call: str | None = None
        self.trace: list[TraceEntry] | None = [] if trace else None
        if not self.runtime.gpu_agents:
            raise HipError(hipError_t.hipErrorNoDevice, "hipInit", "the runtime reports no GPU")

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        """Drain and destroy every stream, then close the runtime if this object opened it.
        Any later call raises HipError(hipErrorDeinitialized)."""
        if self._state.closed:
            return
        self._state.close()
        for stream in list(self._streams) + list(self._default_streams.values()):
            if self._sticky is None and not stream.queue.is_closed:
                try:
                    stream.drain()
                except HsapyError:
                    pass
            stream.close()
        # What HIP frees at context teardown: event signals, allocations (pool caches included).
        pool = self.runtime.signal_pool if not self.runtime.is_closed else None
        for event in self._events:
            signal = event.signal
            if (pool is not None and signal is not None and not signal.is_closed
                    and signal.load() < 1):
                pool.release(signal)
            event.signal = None
            event._state.close("HipRuntime.close()")
        for buffer, _device in list(self._buffers.values()):
            buffer.close()
        self._buffers.clear()
        if self._owns_runtime:
            self.runtime.close()

    def __enter__(self) -> HipRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _trace(self, stream: Stream, index: int, packet: aql.Packet) -> None:
        if self.trace is not None:
            self.trace.append(TraceEntry(self._call or "?", stream.queue.id, index, packet))

    def _trace_dispatch(self, stream: Stream, index: int, word: int) -> None:
        """Trace a dispatch written by hsapy.dispatch: its body as published in the ring (the
        processor only resets the header of a slot it has run)."""
        if self.trace is not None:
            body = bytes(stream.queue.ring[index % stream.queue.size][4:])
            self._trace(stream, index, aql.Packet(word, body))

    # -- errors ------------------------------------------------------------------------------
    def _check_queues(self) -> None:
        """Raise the error of any stream's queue: a wait may depend on another stream (through
        hipStreamWaitEvent), whose failure would otherwise only show as a timeout."""
        for stream in list(self._streams) + list(self._default_streams.values()):
            if not stream.queue.is_closed:
                stream.queue.check()

    def _record(self, code: hipError_t) -> None:
        self._last = code
        if code in STICKY_ERRORS:
            self._sticky = code

    def getLastError(self) -> hipError_t:
        """hipGetLastError: the last error of any call, reset to hipSuccess (sticky ones stay)."""
        code = self._last
        if self._sticky is None:
            self._last = hipError_t.hipSuccess
        return code

    def peekAtLastError(self) -> hipError_t:
        """hipPeekAtLastError: the last error, without resetting it."""
        return self._last

    @staticmethod
    def getErrorName(code: hipError_t | int) -> str:
        """hipGetErrorName (an unknown code is named as HIP does: hipErrorUnknown)."""
        if isinstance(code, bool) or not isinstance(code, (int, np.integer)):
            raise HipError(hipError_t.hipErrorInvalidValue, "hipGetErrorName",
                           f"an error code is a hipError_t or int, not {type(code).__name__}")
        try:
            return hipError_t(int(code)).name
        except ValueError:
            return hipError_t.hipErrorUnknown.name

    # -- devices -----------------------------------------------------------------------------
    def _agent(self, device: int, what: str = "device") -> Any:
        agents = self.runtime.gpu_agents
        if (isinstance(device, bool) or not isinstance(device, (int, np.integer))
                or not 0 <= device < len(agents)):
            raise HipError(hipError_t.hipErrorInvalidDevice, self._call or "hipSetDevice",
                           f"{what} {device!r:.40} is not a device index in "
                           f"0..{len(agents) - 1}")
        return agents[device]

    @hip_api("hipGetDeviceCount")
    def getDeviceCount(self) -> int:
        """hipGetDeviceCount: the number of GPU agents."""
        return len(self.runtime.gpu_agents)

    @hip_api("hipSetDevice")
    def setDevice(self, device: int) -> None:
        """hipSetDevice: later calls allocate, launch and synchronize on ``device``."""
        self._agent(device)
        self._device = int(device)

    @hip_api("hipGetDevice")
    def getDevice(self) -> int:
        """hipGetDevice."""
        return self._device

    @hip_api("hipGetDeviceProperties")
    def getDeviceProperties(self, device: int | None = None) -> DeviceProp:
        """hipGetDeviceProperties, from the agent's info table and pools."""
        agent = self._agent(self._device if device is None else device)
        isa = agent.isa_names[0].split("--")[-1] if agent.isa_names else agent.name
        return DeviceProp(
            name=agent.product_name or agent.name,
            gcnArchName=isa,
            totalGlobalMem=agent.device_pool.size,
            sharedMemPerBlock=agent.lds_size,
            warpSize=agent.wavefront_size,
            maxThreadsPerBlock=agent.workgroup_max_size,
            maxThreadsDim=tuple(agent.workgroup_max_dim),
            maxGridSize=tuple(agent.grid_max_dim),
            clockRate=int(agent.info.get("max_clock_mhz") or 0) * 1000,   # kHz, as HIP reports
            multiProcessorCount=agent.compute_unit_count,
            pciDeviceID=agent.chip_id,
            maxThreadsPerMultiProcessor=agent.max_waves_per_cu * agent.wavefront_size,
        )

    @hip_api("hipDeviceSynchronize")
    def deviceSynchronize(self) -> None:
        """hipDeviceSynchronize: drain every stream of the current device."""
        self._synchronize_device(self._device)

    def _synchronize_device(self, device: int) -> None:
        for stream in self._device_streams(device):
            stream.drain()

    def _device_streams(self, device: int) -> list[Stream]:
        streams = [s for s in self._streams if s.device == device]
        default = self._default_streams.get(device)
        return streams + ([default] if default is not None else [])

    @hip_api("hipDeviceCanAccessPeer")
    def deviceCanAccessPeer(self, device: int, peer: int) -> bool:
        """hipDeviceCanAccessPeer: may ``device`` be granted access to ``peer``'s memory?"""
        agent, peer_agent = self._agent(device), self._agent(peer, "peer")
        if device == peer:
            return False
        return peer_agent.device_pool.access(agent) != "never"

    @hip_api("hipDeviceEnablePeerAccess")
    def deviceEnablePeerAccess(self, peer: int, flags: int = 0) -> None:
        """hipDeviceEnablePeerAccess: the current device may access ``peer``'s allocations,
        present (allow_access now) and future (at each malloc on ``peer``)."""
        no_flags(flags, "hipDeviceEnablePeerAccess")
        device = self._device
        if not self.deviceCanAccessPeer(device, peer):
            raise HipError(hipError_t.hipErrorPeerAccessUnsupported, "hipDeviceEnablePeerAccess",
                           f"device {device} cannot access device {peer}'s memory")
        if (device, peer) in self._peers:
            raise HipError(hipError_t.hipErrorPeerAccessAlreadyEnabled,
                           "hipDeviceEnablePeerAccess", f"device {device} -> {peer}")
        self._peers.add((device, peer))
        agent = self._agent(device)
        for buffer, owner in self._buffers.values():
            if owner == peer:
                buffer.allow_access([agent, self._agent(peer)])

    @hip_api("hipDeviceDisablePeerAccess")
    def deviceDisablePeerAccess(self, peer: int) -> None:
        """hipDeviceDisablePeerAccess (only forgets the pair: HSA cannot revoke access)."""
        self._agent(peer, "peer")
        if (self._device, peer) not in self._peers:
            raise HipError(hipError_t.hipErrorPeerAccessNotEnabled, "hipDeviceDisablePeerAccess",
                           f"device {self._device} -> {peer}")
        self._peers.discard((self._device, peer))

    # -- memory ------------------------------------------------------------------------------
    def _allocate(self, pool: Any, nbytes: int, device: int | None) -> Any:
        buffer = pool.allocate(nbytes)
        if device is not None:
            self._allocated[device] = self._allocated.get(device, 0) + buffer.size
            viewers = [self._agent(d) for d, p in self._peers if p == device]
            if viewers:
                buffer.allow_access(viewers + [self._agent(device)])
        self._buffers[buffer.address] = (buffer, device if device is not None else -1)
        return buffer

    def _allocated_here(self, buffer: Any, call: str, what: str = "buffer") -> Any:
        """``buffer`` when this HIP runtime allocated it and it is not freed, else a HipError
        naming the parameter ``what``."""
        from hsapy.memory import Buffer

        address = buffer._address if isinstance(buffer, Buffer) else None
        entry = self._buffers.get(address) if address is not None else None
        if entry is None or entry[0] is not buffer or buffer.is_closed:
            raise HipError(hipError_t.hipErrorInvalidValue, call,
                           f"{what} {buffer!r:.80} was not allocated by this HIP runtime or is "
                           "already freed")
        return buffer

    def _live_buffer(self, buffer: Any, call: str, what: str) -> None:
        """A Buffer argument: of this HIP runtime's Runtime and not freed, else a HipError
        naming the parameter ``what`` (a freed Buffer raised ClosedError, which named none)."""
        if buffer.runtime is not self.runtime:
            raise HipError(hipError_t.hipErrorInvalidValue, call,
                           f"{what}: the Buffer belongs to another Runtime; allocate it with "
                           "this HIP runtime (hip.malloc)")
        if buffer.is_closed:
            raise HipError(hipError_t.hipErrorInvalidValue, call,
                           f"{what}: {buffer._state.error()}") from buffer._state.error()

    def _release(self, buffer: Any) -> None:
        self._allocated_here(buffer, "hipFree")
        address = buffer._address
        entry = self._buffers[address]
        del self._buffers[address]
        device = entry[1]
        if device >= 0:
            self._allocated[device] -= buffer.size
        buffer.close()

    @hip_api("hipMalloc")
    def malloc(self, nbytes: int) -> Any:
        """hipMalloc: a Buffer from the current device's coarse-grained pool (VRAM)."""
        return self._allocate(self._agent(self._device).device_pool, nbytes, self._device)

    @hip_api("hipHostMalloc")
    def hostMalloc(self, nbytes: int) -> Any:
        """hipHostMalloc: pinned, fine-grained system memory every GPU may access."""
        pool = self.runtime.system_pool
        buffer = self._allocate(pool, nbytes, None)
        blocked = [a for a in self.runtime.gpu_agents if pool.access(a) == "after allow_access"]
        if blocked:
            buffer.allow_access(blocked)
        return buffer

    @hip_api("hipMallocManaged")
    def mallocManaged(self, nbytes: int) -> Any:
        """hipMallocManaged, approximated: fine-grained system memory that the host and every
        GPU read and write without copies (HIP's own fallback without XNACK page migration)."""
        return self.hostMalloc(nbytes)

    @hip_api("hipFree")
    def free(self, buffer: Any) -> None:
        """hipFree: synchronizes the device (as HIP does), then returns the memory to its pool.
        ``hipFree(None)`` does nothing, as hipFree(nullptr) does."""
        if buffer is None:
            return
        self._allocated_here(buffer, "hipFree")        # refused before the device is waited for
        self._synchronize_device(self._device)
        self._release(buffer)

    @hip_api("hipHostFree")
    def hostFree(self, buffer: Any) -> None:
        """hipHostFree (``None`` does nothing)."""
        if buffer is None:
            return
        self._allocated_here(buffer, "hipHostFree")
        self._synchronize_device(self._device)
        self._release(buffer)

    @hip_api("hipMemGetInfo")
    def memGetInfo(self) -> tuple[int, int]:
        """hipMemGetInfo: (free, total) bytes of the current device's VRAM pool. HSA reports
        only the pool size: free is the size minus what this HIP runtime allocated on it."""
        total = self._agent(self._device).device_pool.size
        return total - self._allocated.get(self._device, 0), total

    # -- copies ------------------------------------------------------------------------------
    @staticmethod
    def _is_device(obj: Any) -> bool:
        return hasattr(obj, "pool") and obj.pool.agent.is_gpu

    def _check_kind(self, dst: Any, src: Any, kind: hipMemcpyKind, call: str) -> None:
        from hsapy.memory import Buffer

        for what, side in (("dst", dst), ("src", src)):
            if isinstance(side, Buffer):
                self._live_buffer(side, call, what)
            elif side is None or not (isinstance(side, np.ndarray) or (
                    what == "src" and isinstance(side, (bytes, bytearray, memoryview)))):
                raise HipError(hipError_t.hipErrorInvalidValue, call,
                               f"{what} must be a Buffer (hip.malloc) or a numpy array"
                               f"{' or bytes' if what == 'src' else ''}, not "
                               f"{type(side).__name__}")
            elif isinstance(side, np.ndarray) and side.dtype.hasobject:
                raise HipError(hipError_t.hipErrorInvalidValue, call,
                               f"{what} holds Python objects, not bytes")
        if isinstance(dst, np.ndarray) and not (dst.flags.writeable and dst.flags.c_contiguous):
            raise HipError(hipError_t.hipErrorInvalidValue, call,
                           "dst must be a writeable C-contiguous numpy array")
        if isinstance(kind, bool) or not isinstance(kind, (int, np.integer)) or \
                kind not in set(hipMemcpyKind):
            raise HipError(hipError_t.hipErrorInvalidMemcpyDirection, call,
                           f"kind {kind!r:.40} is not a hipMemcpyKind")
        if kind == hipMemcpyKind.hipMemcpyDefault:
            return
        expected = {
            hipMemcpyKind.hipMemcpyHostToHost: (False, False),
            hipMemcpyKind.hipMemcpyHostToDevice: (True, False),
            hipMemcpyKind.hipMemcpyDeviceToHost: (False, True),
            hipMemcpyKind.hipMemcpyDeviceToDevice: (True, True),
        }[hipMemcpyKind(kind)]
        actual = (self._is_device(dst), self._is_device(src))
        if actual != expected:
            raise HipError(hipError_t.hipErrorInvalidMemcpyDirection, call,
                           f"{hipMemcpyKind(kind).name} but dst is "
                           f"{'device' if actual[0] else 'host'} and src is "
                           f"{'device' if actual[1] else 'host'} memory")

    @staticmethod
    def _nbytes(dst: Any, src: Any, nbytes: int | None) -> int:
        sizes = [obj.size if hasattr(obj, "pool") else np.asarray(obj).nbytes for obj in (dst, src)]
        if nbytes is None:
            nbytes = sizes[1]            # the whole source
        nbytes = byte_count(nbytes, "hipMemcpy", "nbytes")
        if nbytes > min(sizes):
            raise HsapyValueError(
                f"nbytes={nbytes} does not fit (dst {sizes[0]}, src {sizes[1]} bytes)")
        return int(nbytes)

    @hip_api("hipMemcpy")
    def memcpy(self, dst: Any, src: Any, nbytes: int | None = None,
               kind: hipMemcpyKind = hipMemcpyKind.hipMemcpyDefault) -> None:
        """hipMemcpy: synchronous. ``dst``/``src`` are Buffers or numpy arrays (host memory).
        Waits for the device's streams first (the legacy default stream's ordering)."""
        self._check_kind(dst, src, kind, "hipMemcpy")
        nbytes = self._nbytes(dst, src, nbytes)
        self._synchronize_device(self._device)
        self._copy_now(dst, src, nbytes)

    def _copy_now(self, dst: Any, src: Any, nbytes: int) -> None:
        """Copy at once (the caller ordered it): copy engine between buffers, staged for host."""
        if hasattr(dst, "pool") and hasattr(src, "pool"):
            self.runtime.copy(dst, src, nbytes)
        elif hasattr(dst, "pool"):
            dst.copy_from(np.ascontiguousarray(src).view(np.uint8).reshape(-1)[:nbytes])
        elif hasattr(src, "pool"):
            target = np.asarray(dst).view(np.uint8).reshape(-1)
            target[:nbytes] = src.copy_to(np.empty(nbytes, np.uint8))
        else:
            np.asarray(dst).view(np.uint8).reshape(-1)[:nbytes] = (
                np.ascontiguousarray(src).view(np.uint8).reshape(-1)[:nbytes])

    @hip_api("hipMemcpyAsync")
    def memcpyAsync(self, dst: Any, src: Any, nbytes: int | None = None,
                    kind: hipMemcpyKind = hipMemcpyKind.hipMemcpyDefault,
                    stream: Stream | None = None) -> None:
        """hipMemcpyAsync ordered on ``stream``: barrier-AND (signals "stream reached the copy")
        -> hsa_amd_memory_async_copy(deps=[that signal]) -> barrier-AND(deps=[copy's signal]).

        A numpy source is staged now into pinned memory (the array may be reused at once); a
        numpy destination makes the call synchronous, as HIP does for pageable memory."""
        stream = self._stream(stream, "hipMemcpyAsync")
        self._check_kind(dst, src, kind, "hipMemcpyAsync")
        nbytes = self._nbytes(dst, src, nbytes)
        if not hasattr(dst, "pool"):
            stream.drain()
            self._copy_now(dst, src, nbytes)
            return
        if not hasattr(src, "pool"):
            staging = self.runtime.system_pool.allocate(max(nbytes, 1))
            blocked = [a for a in self.runtime.gpu_agents
                       if staging.pool.access(a) == "after allow_access"]
            if blocked:
                staging.allow_access(blocked)
            staging.numpy()[:nbytes] = np.ascontiguousarray(src).view(np.uint8).reshape(-1)[:nbytes]
            stream.retire("staging", staging)
            src = staging
        pool = self.runtime.signal_pool
        reached, copied = pool.acquire(1), pool.acquire(1)
        stream.retire("signal", reached)
        stream.retire("signal", copied)
        stream.publish(aql.barrier_and([], completion_signal=reached.handle))
        self.runtime.copy(dst, src, nbytes, deps=[reached], completion=copied)
        stream.publish(aql.barrier_and([copied.handle]))

    def _memset_kernel_pair(self, device: int) -> tuple[Any, Any]:
        kernels = self._memset_kernels.get(device)
        if kernels is None:
            from hsapy import toolchain

            agent = self._agent(device)
            code = toolchain.build_hip(MEMSET_SOURCE, agent.target)
            executable = self.runtime.load(code, agent)
            kernels = (executable.kernel("hsapy_memset_u8"), executable.kernel("hsapy_memset_u32"))
            self._memset_kernels[device] = kernels
        return kernels

    def _memset_node(self, buffer: Any, value: int, nbytes: int | None,
                     device: int) -> KernelNode:
        from hsapy.memory import Buffer

        if not isinstance(buffer, Buffer):
            raise HsapyTypeError(
                f"hipMemset: buffer is a Buffer from hip.malloc, not {type(buffer).__name__}")
        self._live_buffer(buffer, "hipMemset", "buffer")
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise HsapyTypeError(f"hipMemset: value is an int (a byte), not {value!r:.40}")
        if not -(1 << 31) <= value < 1 << 31:
            # HIP's value is a C int whose low byte is stored: past int it would be cut off
            raise HsapyValueError(f"hipMemset: value {value} is not a C int (its low byte is "
                                  "the byte stored: give 0..255)")
        # the whole buffer by default, read once it is known to be a Buffer (None has no size;
        # a numpy array's size counts elements)
        nbytes = byte_count(buffer.size if nbytes is None else nbytes, "hipMemset", "nbytes")
        if not 0 <= nbytes <= buffer.size:
            raise HsapyValueError(f"hipMemset: nbytes={nbytes} does not fit the "
                                  f"{buffer.size}-byte buffer")
        byte_kernel, word_kernel = self._memset_kernel_pair(device)
        byte = int(value) & 0xFF
        if nbytes % 4 == 0 and buffer.address % 4 == 0:
            count, kernel, fill = nbytes // 4, word_kernel, byte * 0x01010101
        else:
            count, kernel, fill = nbytes, byte_kernel, byte
        blocks = max(1, -(-count // MEMSET_BLOCK))
        return KernelNode(kernel, (buffer, fill, count), (blocks, 1, 1), (MEMSET_BLOCK, 1, 1), 0)

    @hip_api("hipMemsetAsync")
    def memsetAsync(self, buffer: Any, value: int, nbytes: int | None = None,
                    stream: Stream | None = None) -> None:
        """hipMemsetAsync: one fill-kernel dispatch (barrier bit set) on ``stream``."""
        stream = self._stream(stream, "hipMemsetAsync", capturable=True)
        node = self._memset_node(buffer, value, nbytes, stream.device)
        self._launch_node(stream, node)

    @hip_api("hipMemset")
    def memset(self, buffer: Any, value: int, nbytes: int | None = None) -> None:
        """hipMemset: hipMemsetAsync on the default stream, then wait for the device."""
        self.memsetAsync(buffer, value, nbytes)
        self._synchronize_device(self._device)

    # -- modules and launches ----------------------------------------------------------------
    @hip_api("hipModuleLoadData")
    def moduleLoadData(self, code_object: Any) -> Module:
        """hipModuleLoadData: load a code object (bytes or path) on the current device. The
        module stays loaded until hipModuleUnload (or close)."""
        try:
            executable = self.runtime.load(code_object, self._agent(self._device))
        except HsapyError as exc:
            raise HipError(code_for(exc), "hipModuleLoadData", f"code_object: {exc}") from exc
        module = Module(executable, self._device)
        self._modules.append(module)
        return module

    @hip_api("hipModuleUnload")
    def moduleUnload(self, module: Module) -> None:
        """hipModuleUnload: wait for the device (its kernels may still be queued), then
        destroy the executable."""
        if not isinstance(module, Module) or module not in self._modules:
            raise HipError(hipError_t.hipErrorInvalidHandle, "hipModuleUnload",
                           "the module was not loaded by this HIP runtime or is unloaded")
        self._synchronize_device(module.device)
        self._modules.remove(module)
        module.executable.close()

    @hip_api("hipModuleGetFunction")
    def moduleGetFunction(self, module: Module, name: str) -> Any:
        """hipModuleGetFunction."""
        if not isinstance(module, Module) or module not in self._modules:
            raise HipError(hipError_t.hipErrorInvalidHandle, "hipModuleGetFunction",
                           "the module was not loaded by this HIP runtime or is unloaded")
        expect_type(name, str, "hipModuleGetFunction", "name")
        return module.getFunction(name)

    def _launch_node(self, stream: Stream, node: KernelNode) -> Any:
        from hsapy.executable import Kernel

        call = self._call or "hipLaunchKernelGGL"
        expect_type(node.kernel, Kernel, call, "kernel", hipError_t.hipErrorInvalidDeviceFunction)
        if stream._capture is not None:
            stream._capture.nodes.append(node)
            return None
        grid = tuple(g * b for g, b in zip(node.grid, node.block))
        try:
            prepared = node.kernel.prepare(stream.queue, grid, node.block, node.dynamic_lds,
                                           barrier=True)
        except HsapyError as exc:
            raise HipError(code_for(exc), call, launch_configuration(
                node.grid, node.block, node.dynamic_lds) + str(exc)) from exc
        try:
            result = prepared(*node.args)
        except KernelArgumentError as exc:
            raise HipError(code_for(exc), call, f"args: {exc}") from exc
        self._trace_dispatch(stream, result.index, prepared.word)
        return result

    @hip_api("hipLaunchKernelGGL")
    def launchKernelGGL(self, kernel: Any, gridDim: Any, blockDim: Any, sharedMemBytes: int = 0,
                        stream: Stream | None = None, *args: Any) -> Any:
        """hipLaunchKernelGGL(kernel, gridDim blocks, blockDim threads, dynamic LDS, stream,
        args...): one kernel-dispatch packet, barrier bit set, grid = gridDim * blockDim
        work-items. Returns the DispatchResult (None while the stream is capturing)."""
        stream = self._stream(stream, "hipLaunchKernelGGL", capturable=True)
        node = KernelNode(kernel, args, dim3(gridDim, "gridDim"), dim3(blockDim, "blockDim"),
                          byte_count(sharedMemBytes, "hipLaunchKernelGGL", "sharedMemBytes"))
        return self._launch_node(stream, node)

    @hip_api("hipModuleLaunchKernel")
    def moduleLaunchKernel(self, kernel: Any, gridDim: Any, blockDim: Any, sharedMemBytes: int,
                           stream: Stream | None, args: Sequence[Any]) -> Any:
        """hipModuleLaunchKernel: as launchKernelGGL with the arguments as one list."""
        args = check_items(args, "hipModuleLaunchKernel: args (kernelParams) is a list of "
                                 "arguments")
        return self.launchKernelGGL(kernel, gridDim, blockDim, sharedMemBytes, stream, *args)

    # -- streams -----------------------------------------------------------------------------
    def _stream(self, stream: Stream | None, call: str, capturable: bool = False) -> Stream:
        if stream is None or (stream.__class__ is int and stream == 0):
            stream = self._default_streams.get(self._device)
            if stream is None:
                stream = Stream(self, self._device, is_default=True)
                self._default_streams[self._device] = stream
        elif not isinstance(stream, Stream) or stream.queue.is_closed:
            raise HipError(hipError_t.hipErrorInvalidHandle, call,
                           f"stream {stream!r:.60} is not a live stream (None or 0 is the "
                           "default stream)")
        elif stream.hip is not self:
            # its queue is another runtime's: a packet of this one there (a barrier with this
            # runtime's signal) would stop that queue with an invalid packet
            raise HipError(hipError_t.hipErrorInvalidHandle, call,
                           f"stream {stream!r:.60} belongs to another HipRuntime")
        if stream.is_capturing and not capturable:
            raise HipError(hipError_t.hipErrorStreamCaptureUnsupported, call,
                           "only kernel launches and memsets can be captured into a graph here")
        return stream

    @hip_api("hipStreamCreate")
    def streamCreate(self) -> Stream:
        """hipStreamCreate: a new AQL queue on the current device."""
        stream = Stream(self, self._device)
        self._streams.append(stream)
        return stream

    @hip_api("hipStreamSynchronize")
    def streamSynchronize(self, stream: Stream | None = None) -> None:
        """hipStreamSynchronize: a barrier-AND with a completion signal, then wait on it."""
        self._stream(stream, "hipStreamSynchronize").drain()

    @hip_api("hipStreamDestroy")
    def streamDestroy(self, stream: Stream) -> None:
        """hipStreamDestroy: drain the stream, then destroy its queue."""
        if not any(stream is created for created in self._streams):
            raise HipError(hipError_t.hipErrorInvalidHandle, "hipStreamDestroy",
                           f"stream {stream!r:.60} was not created by this runtime's "
                           "hipStreamCreate or is destroyed")
        stream.drain()
        self._streams.remove(stream)
        stream.close()

    def _event(self, event: Any, call: str, what: str = "event") -> Event:
        """``event`` when it is a live Event of this runtime, else HipError(InvalidHandle)
        naming the parameter ``what``."""
        if not isinstance(event, Event) or event.hip is not self:
            raise HipError(hipError_t.hipErrorInvalidHandle, call,
                           f"{what} {event!r:.40} is not an event of this HIP runtime")
        if event._state.closed:
            raise HipError(hipError_t.hipErrorInvalidHandle, call,
                           f"{what}: {event._state.error()}") from event._state.error()
        return event

    @hip_api("hipStreamWaitEvent")
    def streamWaitEvent(self, stream: Stream | None, event: Event, flags: int = 0) -> None:
        """hipStreamWaitEvent: a barrier-AND on ``stream`` depending on the event's signal."""
        no_flags(flags, "hipStreamWaitEvent")
        self._event(event, "hipStreamWaitEvent")
        stream = self._stream(stream, "hipStreamWaitEvent")
        if not event.is_recorded:
            return          # HIP: waiting on a never-recorded event is a no-op
        stream.publish(aql.barrier_and([event.signal.handle]))

    @hip_api("hipStreamBeginCapture")
    def streamBeginCapture(self, stream: Stream) -> None:
        """hipStreamBeginCapture: launches on ``stream`` are recorded into a graph, not run."""
        stream = self._stream(stream, "hipStreamBeginCapture")
        if stream.is_default:
            raise HipError(hipError_t.hipErrorStreamCaptureUnsupported, "hipStreamBeginCapture",
                           "the default stream cannot be captured; use hipStreamCreate")
        stream._capture = HipGraph(hip=self)

    @hip_api("hipStreamEndCapture")
    def streamEndCapture(self, stream: Stream) -> HipGraph:
        """hipStreamEndCapture: the graph of what was launched since BeginCapture."""
        stream = self._stream(stream, "hipStreamEndCapture", capturable=True)
        if stream._capture is None:
            raise HipError(hipError_t.hipErrorInvalidValue, "hipStreamEndCapture",
                           f"stream {stream!r:.60} is not capturing")
        graph, stream._capture = stream._capture, None
        return graph

    # -- events ------------------------------------------------------------------------------
    @hip_api("hipEventCreate")
    def eventCreate(self, timing: bool = True) -> Event:
        """hipEventCreate (timing=False: hipEventCreateWithFlags(hipEventDisableTiming))."""
        if timing is not True and timing is not False and not isinstance(timing, np.bool_):
            raise HipError(hipError_t.hipErrorInvalidValue, "hipEventCreate",
                           f"timing is True or False, not {type(timing).__name__} "
                           f"{timing!r:.40}")
        event = Event(self, bool(timing))
        self._events.append(event)
        return event

    @hip_api("hipEventRecord")
    def eventRecord(self, event: Event, stream: Stream | None = None) -> None:
        """hipEventRecord: a barrier-AND (barrier bit) whose completion signal is the event's;
        a fresh pooled signal per record (the previous one retires with the stream)."""
        self._event(event, "hipEventRecord")
        stream = self._stream(stream, "hipEventRecord")
        if event.signal is not None and event.stream is not None:
            event.stream.retire("signal", event.signal)
        event.signal = self.runtime.signal_pool.acquire(1)
        event.stream = stream
        event.index = stream.publish(aql.barrier_and([], completion_signal=event.signal.handle))

    @hip_api("hipEventQuery")
    def eventQuery(self, event: Event) -> hipError_t:
        """hipEventQuery: hipSuccess when complete, else hipErrorNotReady (returned, not raised)."""
        self._event(event, "hipEventQuery")
        return hipError_t.hipSuccess if event.is_complete else hipError_t.hipErrorNotReady

    @hip_api("hipEventSynchronize")
    def eventSynchronize(self, event: Event, timeout: float = DEFAULT_TIMEOUT) -> None:
        """hipEventSynchronize: wait (with a timeout) until the event's signal reaches 0."""
        self._event(event, "hipEventSynchronize")
        # checked even when there is nothing to wait for: a bad timeout is refused every time
        timeout = check_timeout(timeout, "hipEventSynchronize")
        if not event.is_recorded:
            return
        event.signal.wait(2, 1, timeout=timeout, abort=self._check_queues)
        self._check_queues()

    @hip_api("hipEventElapsedTime")
    def eventElapsedTime(self, start: Event, stop: Event) -> float:
        """hipEventElapsedTime in milliseconds, from the end timestamps of the two record
        packets (hsa_amd_profiling_get_dispatch_time; ticks of the system timestamp)."""
        for what, event in (("start", start), ("stop", stop)):
            self._event(event, "hipEventElapsedTime", what)
            if not event.is_recorded or not event.timing:
                raise HipError(hipError_t.hipErrorInvalidHandle, "hipEventElapsedTime",
                               "both events must be recorded and created with timing")
            if not event.is_complete:
                raise HipError(hipError_t.hipErrorNotReady, "hipEventElapsedTime",
                               "an event has not completed yet")
        ticks = stop.timestamps()[1] - start.timestamps()[1]
        return ticks * 1000.0 / self.runtime.timestamp_frequency

    @hip_api("hipEventDestroy")
    def eventDestroy(self, event: Event) -> None:
        """hipEventDestroy: the signal retires with its stream; the event is unusable after."""
        self._event(event, "hipEventDestroy")
        if event.signal is not None and event.stream is not None:
            event.stream.retire("signal", event.signal)
        event.signal = None
        event._state.close("hipEventDestroy")
        if event in self._events:
            self._events.remove(event)

    # -- graphs ------------------------------------------------------------------------------
    @hip_api("hipGraphCreate")
    def graphCreate(self) -> HipGraph:
        """hipGraphCreate: an empty graph (add nodes with graph.addKernelNode)."""
        return HipGraph(hip=self)

    @hip_api("hipGraphAddKernelNode")
    def graphAddKernelNode(self, graph: HipGraph, dependencies: Sequence[int], kernel: Any,
                           gridDim: Any, blockDim: Any, args: Sequence[Any],
                           sharedMemBytes: int = 0) -> int:
        """hipGraphAddKernelNode: returns the node index."""
        self._graph(graph, "hipGraphAddKernelNode")
        dependencies = check_items(dependencies, "hipGraphAddKernelNode: dependencies is a "
                                   "list of node indices", ordered=False)
        return graph.addKernelNode(kernel, gridDim, blockDim, args, sharedMemBytes, dependencies)

    @hip_api("hipGraphInstantiate")
    def graphInstantiate(self, graph: HipGraph) -> GraphExec:
        """hipGraphInstantiate."""
        self._graph(graph, "hipGraphInstantiate")
        if not graph.nodes:
            raise HipError(hipError_t.hipErrorInvalidValue, "hipGraphInstantiate", "empty graph")
        return GraphExec(graph)

    @hip_api("hipGraphLaunch")
    def graphLaunch(self, graph_exec: GraphExec, stream: Stream | None = None) -> list[Any]:
        """hipGraphLaunch: replay every node's dispatch packet (barrier bits set) with one
        doorbell on ``stream``; returns the DispatchResults."""
        expect_type(graph_exec, GraphExec, "hipGraphLaunch", "graph_exec",
                    hipError_t.hipErrorInvalidHandle)
        if graph_exec.graph.hip is not self:
            raise HipError(hipError_t.hipErrorInvalidHandle, "hipGraphLaunch",
                           "graph_exec belongs to another HipRuntime (its kernels are loaded "
                           "there)")
        stream = self._stream(stream, "hipGraphLaunch")
        results = graph_exec.for_stream(stream).launch(wait=False)
        for node, result in zip(graph_exec.graph.nodes, results):
            grid = tuple(g * b for g, b in zip(node.grid, node.block))
            word = aql.kernel_dispatch(0, grid, node.block, barrier=True).word
            self._trace_dispatch(stream, result.index, word)
        return results

    def _graph(self, graph: Any, call: str) -> HipGraph:
        """``graph`` when it is a HipGraph of this runtime, else a HipError naming the
        parameter."""
        expect_type(graph, HipGraph, call, "graph")
        if graph.hip is not self:
            raise HipError(hipError_t.hipErrorInvalidValue, call,
                           "graph belongs to another HipRuntime (its kernels are loaded there)")
        return graph

    # -- memory pools ------------------------------------------------------------------------
    @hip_api("hipMemPoolCreate")
    def memPoolCreate(self, device: int | None = None) -> MemPool:
        """hipMemPoolCreate (location: a device): a caching pool over its VRAM HSA pool."""
        return MemPool(self, self._device if device is None else device)

    @hip_api("hipMallocFromPoolAsync")
    def mallocFromPoolAsync(self, nbytes: int, pool: MemPool, stream: Stream | None = None) -> Any:
        """hipMallocFromPoolAsync: a block from the pool (reused when one of this size was
        freed and its stream drained); usable at once, so also in ``stream`` order."""
        self._pool(pool, "hipMallocFromPoolAsync")
        self._stream(stream, "hipMallocFromPoolAsync")
        return pool._take(byte_count(nbytes, "hipMallocFromPoolAsync", "nbytes"))

    @hip_api("hipFreeAsync")
    def freeAsync(self, buffer: Any, stream: Stream | None, pool: MemPool) -> None:
        """hipFreeAsync: the block returns to ``pool`` once ``stream`` has drained."""
        from hsapy.memory import Buffer

        self._pool(pool, "hipFreeAsync")
        expect_type(buffer, Buffer, "hipFreeAsync", "buffer")
        self._allocated_here(buffer, "hipFreeAsync")
        self._stream(stream, "hipFreeAsync").retire("pool block", buffer, pool)

    def _pool(self, pool: Any, call: str) -> MemPool:
        """``pool`` when it is a MemPool of this runtime, else HipError(InvalidHandle)."""
        expect_type(pool, MemPool, call, "pool", hipError_t.hipErrorInvalidHandle)
        if pool.hip is not self:
            raise HipError(hipError_t.hipErrorInvalidHandle, call,
                           "pool belongs to another HipRuntime")
        return pool

    @hip_api("hipMemPoolTrimTo")
    def memPoolTrimTo(self, pool: MemPool, min_bytes_to_keep: int = 0) -> None:
        """hipMemPoolTrimTo: give cached blocks back to HSA (all of them when 0)."""
        self._pool(pool, "hipMemPoolTrimTo")
        min_bytes_to_keep = byte_count(min_bytes_to_keep, "hipMemPoolTrimTo",
                                       "min_bytes_to_keep")
        if min_bytes_to_keep == 0 or pool.cached_bytes > min_bytes_to_keep:
            pool.trim()
