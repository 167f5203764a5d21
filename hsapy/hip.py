"""The HIP runtime, rebuilt in the open on AQL: a HIP-shaped layer over hsapy's public API.

Every HIP call is a few lines of hsapy, so a reader who knows HIP can see what the HIP runtime
does underneath: which pool an allocation comes from, which packets a stream receives, what an
event really is. docs/hip-on-aql.md maps each call to this code and to the packets it produces.

    from hsapy.hip import HipRuntime
    with HipRuntime(backend="sim") as hip:
        d_a = hip.malloc(4 * n)                    # hipMalloc
        hip.memcpy(d_a, a)                         # hipMemcpy(d_a, a, nbytes, H2D)
        s = hip.streamCreate()                     # hipStreamCreate
        hip.launchKernelGGL(k, blocks, threads, 0, s, d_a, n)

Design (see docs/hip-on-aql.md for the why of each choice):

- A device is a GPU agent (``runtime.gpu_agents`` in order); the current device is per
  HipRuntime (HIP keeps it per host thread).
- A stream is one AQL queue with profiling enabled; every packet hsapy.hip publishes on it sets
  the barrier bit, so packets complete in order (in-order stream). Separate streams are separate
  queues, hence concurrent.
- An event is a signal plus the timestamps of a barrier-AND packet: hipEventRecord publishes a
  barrier-AND (barrier bit set, no dependencies) whose completion signal is the event's signal.
  The packet completes once everything before it on the stream completed; its profiling end
  timestamp (hsa_amd_profiling_get_dispatch_time) is the event's time.
- hipStreamWaitEvent publishes a barrier-AND whose dependency is the event's signal.
- hipMemcpyAsync brackets an hsa_amd_memory_async_copy between two barrier-AND packets: the
  first signals the copy engine that the stream reached the copy, the second makes the stream
  wait for the copy's completion signal.
- hipMemset(Async) dispatches a small fill kernel (built once per target with build_hip), so it
  is ordered on the stream like any kernel.
- Errors: every call raises :class:`HipError` (an HsapyError carrying a :class:`hipError_t`
  ``code``) and records that code for hipGetLastError / hipPeekAtLastError. Faults of a kernel
  (memory violation, illegal instruction) are *sticky*: every later call raises them again and
  hipGetLastError does not clear them, as in HIP after a device exception.
"""
from __future__ import annotations

import enum
import functools
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from hsapy import aql
from hsapy._lifetime import HandleState
from hsapy.errors import (
    HSAError,
    HsapyError,
    HsapyTypeError,
    HsapyValueError,
)
from hsapy.hsa_enums import (
    HSA_STATUS_ERROR_EXCEPTION,
    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
    HSA_STATUS_ERROR_INVALID_AGENT,
    HSA_STATUS_ERROR_INVALID_ALLOCATION,
    HSA_STATUS_ERROR_INVALID_ARGUMENT,
    HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
    HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
    HSA_STATUS_ERROR_INVALID_QUEUE,
    HSA_STATUS_ERROR_INVALID_SIGNAL,
    HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
    HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
    HSA_STATUS_ERROR_MEMORY_FAULT,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES,
    HSA_STATUS_SUCCESS,
)

__all__ = ["HipRuntime", "HipError", "hipError_t", "hipMemcpyKind", "DeviceProp", "Stream",
           "Event", "Module", "HipGraph", "GraphExec", "MemPool", "TraceEntry", "MEMSET_SOURCE"]

F = TypeVar("F", bound=Callable[..., Any])

STREAM_QUEUE_SIZE = 256
DEFAULT_TIMEOUT = 10.0


class hipError_t(enum.IntEnum):
    """HIP error codes (values as in hip_runtime_api.h, ROCm 5.x)."""

    hipSuccess = 0
    hipErrorInvalidValue = 1
    hipErrorOutOfMemory = 2
    hipErrorNotInitialized = 3
    hipErrorDeinitialized = 4
    hipErrorInvalidConfiguration = 9
    hipErrorInvalidDevicePointer = 17
    hipErrorInvalidMemcpyDirection = 21
    hipErrorInvalidDeviceFunction = 98
    hipErrorNoDevice = 100
    hipErrorInvalidDevice = 101
    hipErrorInvalidImage = 200
    hipErrorPeerAccessUnsupported = 217
    hipErrorInvalidHandle = 400
    hipErrorNotFound = 500
    hipErrorNotReady = 600
    hipErrorIllegalAddress = 700
    hipErrorLaunchTimeOut = 702
    hipErrorPeerAccessAlreadyEnabled = 704
    hipErrorPeerAccessNotEnabled = 705
    hipErrorIllegalInstruction = 715
    hipErrorLaunchFailure = 719
    hipErrorStreamCaptureUnsupported = 900
    hipErrorUnknown = 999


# Device exceptions leave the context unusable in HIP: they stay (sticky) after being reported.
STICKY_ERRORS = frozenset({hipError_t.hipErrorIllegalAddress, hipError_t.hipErrorIllegalInstruction,
                           hipError_t.hipErrorLaunchFailure})

# hsa_status_t -> hipError_t for failures that come from the HSA runtime (errors.py STATUS_NAMES).
HSA_STATUS_TO_HIP: dict[int, hipError_t] = {
    HSA_STATUS_ERROR_INVALID_ARGUMENT: hipError_t.hipErrorInvalidValue,
    HSA_STATUS_ERROR_INVALID_ALLOCATION: hipError_t.hipErrorOutOfMemory,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES: hipError_t.hipErrorOutOfMemory,
    HSA_STATUS_ERROR_INVALID_AGENT: hipError_t.hipErrorInvalidDevice,
    HSA_STATUS_ERROR_INVALID_SIGNAL: hipError_t.hipErrorInvalidHandle,
    HSA_STATUS_ERROR_INVALID_QUEUE: hipError_t.hipErrorInvalidHandle,
    HSA_STATUS_ERROR_INVALID_CODE_OBJECT: hipError_t.hipErrorInvalidImage,
    HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: hipError_t.hipErrorNotFound,
    HSA_STATUS_ERROR_EXCEPTION: hipError_t.hipErrorLaunchFailure,  # a packet failed
    HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: hipError_t.hipErrorLaunchFailure,
    HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: hipError_t.hipErrorIllegalAddress,
    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: hipError_t.hipErrorIllegalInstruction,
    HSA_STATUS_ERROR_MEMORY_FAULT: hipError_t.hipErrorIllegalAddress,
}


class hipMemcpyKind(enum.IntEnum):
    """Direction of a copy (hip_runtime_api.h); hipMemcpyDefault infers it from the pointers."""

    hipMemcpyHostToHost = 0
    hipMemcpyHostToDevice = 1
    hipMemcpyDeviceToHost = 2
    hipMemcpyDeviceToDevice = 3
    hipMemcpyDefault = 4


class HipError(HsapyError):
    """A failing HIP call: ``code`` (hipError_t) and ``call`` (the HIP function name).

    The hsapy exception that caused it, if any, is the ``__cause__``."""

    def __init__(self, code: hipError_t, call: str, detail: str = "") -> None:
        self.code = hipError_t(code)
        self.call = call
        self.detail = detail
        text = f"{call} failed: {self.code.name} ({int(self.code)})"
        super().__init__(f"{text}: {detail}" if detail else text)


def _code_for(exc: BaseException) -> hipError_t:
    """The hipError_t an hsapy exception stands for."""
    from hsapy.dispatch import DispatchConfigError
    from hsapy.signal import WaitTimeoutError

    if isinstance(exc, HSAError):
        return HSA_STATUS_TO_HIP.get(exc.status, hipError_t.hipErrorUnknown)
    if isinstance(exc, DispatchConfigError):
        return hipError_t.hipErrorInvalidConfiguration
    if isinstance(exc, WaitTimeoutError):
        return hipError_t.hipErrorLaunchTimeOut
    if isinstance(exc, (HsapyValueError, HsapyTypeError)):
        return hipError_t.hipErrorInvalidValue
    return hipError_t.hipErrorUnknown


def _hip_api(name: str) -> Callable[[F], F]:
    """Decorate a HipRuntime method as the HIP call ``name``: a sticky error is raised again
    before anything runs; any failure is recorded for hipGetLastError and raised as HipError."""

    def wrap(method: F) -> F:
        @functools.wraps(method)
        def call(self: HipRuntime, *args: Any, **kwargs: Any) -> Any:
            if self._state.closed:
                raise HipError(hipError_t.hipErrorDeinitialized, name,
                               str(self._state.error())) from self._state.error()
            if self._sticky is not None:
                raise HipError(self._sticky, name, "a kernel failed earlier on this device; "
                               "the context is unusable (sticky error)")
            outermost = self._call is None
            if outermost:
                self._call = name            # packets published below are traced under it
            try:
                return method(self, *args, **kwargs)
            except HipError as exc:
                self._record(exc.code)
                if outermost and exc.call != name:     # raised by a call this one made
                    raise HipError(exc.code, name, exc.detail) from exc
                raise
            except HsapyError as exc:
                code = _code_for(exc)
                self._record(code)
                raise HipError(code, name, str(exc)) from exc
            finally:
                if outermost:
                    self._call = None

        call.hip_name = name  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return wrap


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


@dataclass(frozen=True)
class TraceEntry:
    """One packet a HIP call published (``HipRuntime(trace=True)``): the call, the stream's
    queue id, the packet index and the packet; ``str(entry)`` explains it (aql.explain)."""

    call: str
    queue_id: int
    index: int
    packet: aql.Packet

    def __str__(self) -> str:
        title = f"{self.call} -> queue {self.queue_id} packet {self.index}"
        return title + "\n" + aql.explain(self.packet)


@dataclass(frozen=True)
class DeviceProp:
    """hipDeviceProp_t, the fields read from the agent's info table (hsapy.agent.AGENT_INFO)."""

    name: str
    gcnArchName: str
    totalGlobalMem: int
    sharedMemPerBlock: int
    warpSize: int
    maxThreadsPerBlock: int
    maxThreadsDim: tuple[int, int, int]
    maxGridSize: tuple[int, int, int]
    clockRate: int
    multiProcessorCount: int
    pciDeviceID: int
    maxThreadsPerMultiProcessor: int


def _dim3(value: Any, what: str) -> tuple[int, int, int]:
    """HIP's dim3 from an int or a 1..3-tuple (missing dimensions are 1); sizes are ints, never
    bools, floats or the characters of a string."""
    from hsapy.kernarg import normalize_dims

    try:
        values, _dims = normalize_dims(value, what)
    except HsapyValueError:
        raise HsapyValueError(f"{what} must be 1 to 3 positive sizes, got {value!r:.60}") from None
    return values


def _expect(value: Any, kind: type, call: str, what: str,
            code: hipError_t = hipError_t.hipErrorInvalidValue) -> Any:
    """``value`` when it is a ``kind``, else a HipError naming the call and what was given."""
    if not isinstance(value, kind):
        raise HipError(code, call, f"{what} must be a {kind.__name__}, not "
                                   f"{type(value).__name__} {value!r:.40}")
    return value


def _size(value: Any, call: str, what: str = "size") -> int:
    """A byte count: an int >= 0 (not a bool), else a HipError."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise HipError(hipError_t.hipErrorInvalidValue, call,
                       f"{what} must be an int >= 0, not {value!r:.40}")
    return int(value)


class Stream:
    """hipStream_t: one AQL queue (profiling enabled) on one device; packets set the barrier bit.

    ``_retired`` holds what may be released once the stream has drained (signals of copies,
    staging buffers, freeAsync'd allocations)."""

    def __init__(self, hip: HipRuntime, device: int, is_default: bool = False) -> None:
        self.hip = hip
        self.device = device
        self.is_default = is_default
        self.agent = hip._agent(device)
        self.queue = self.agent.create_queue(STREAM_QUEUE_SIZE)
        self.queue.enable_profiling()
        self._retired: list[Any] = []
        self._capture: HipGraph | None = None

    @property
    def is_capturing(self) -> bool:
        """True between hipStreamBeginCapture and hipStreamEndCapture."""
        return self._capture is not None

    def publish(self, packet: aql.Packet) -> int:
        """Publish a packet on the stream's queue (its index)."""
        index = self.queue.publish(packet)
        self.hip._trace(self, index, packet)
        return index

    def drain(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Wait for everything published so far: a barrier-AND with a pooled completion signal."""
        pool = self.hip.runtime.signal_pool
        signal = pool.acquire(1)
        self.publish(aql.barrier_and([], completion_signal=signal.handle))
        signal.wait(2, 1, timeout=timeout, abort=self.hip._check_queues)  # 2 = LT
        pool.release(signal)
        self.hip._check_queues()
        self._release_retired()

    def _release_retired(self) -> None:
        pool = self.hip.runtime.signal_pool
        for kind, item, owner in self._retired:
            if kind == "signal":
                pool.release(item)
            elif kind == "pool block":       # from hipFreeAsync
                owner._give_back(item)
            else:                            # "staging" buffer of a hipMemcpyAsync
                item.close()
        self._retired.clear()

    def retire(self, kind: str, item: Any, owner: Any = None) -> None:
        """Release ``item`` ("signal", "staging" or "pool block") once the stream drained."""
        self._retired.append((kind, item, owner))

    def close(self) -> None:
        """Destroy the queue (after the caller drained it)."""
        self.queue.close()

    def __repr__(self) -> str:
        kind = "default stream" if self.is_default else f"stream (queue {self.queue.id})"
        return f"<hip {kind} on device {self.device}>"


class Event:
    """hipEvent_t: a completion signal plus the timestamps of the barrier-AND that records it."""

    def __init__(self, hip: HipRuntime, timing: bool = True) -> None:
        self.hip = hip
        self.timing = timing
        self.signal: Any = None
        self.stream: Stream | None = None
        self.index: int | None = None
        # closed by hipEventDestroy or the HipRuntime's close (no handle of its own: the
        # signal is the runtime's, pooled)
        self._state = HandleState("hip Event", _nothing, what="hip event")
        weakref.finalize(self, self._state.close_later)

    @property
    def is_recorded(self) -> bool:
        """True once hipEventRecord has been called."""
        return self.signal is not None

    @property
    def is_complete(self) -> bool:
        """True when the recorded barrier packet has completed (hipEventQuery == hipSuccess)."""
        self._state.check()
        return self.signal is not None and self.signal.load() < 1

    def timestamps(self) -> tuple[int, int]:
        """(start, end) system timestamps of the record packet
        (hsa_amd_profiling_get_dispatch_time on the event's signal)."""
        self._state.check()
        runtime = self.hip.runtime
        ffi, lib = runtime.ffi, runtime.lib
        times = ffi.new("hsa_amd_profiling_dispatch_time_t *")
        agent = self.stream.agent  # type: ignore[union-attr]
        status = lib.hsa_amd_profiling_get_dispatch_time({"handle": agent.handle},
                                                         self.signal.cdata, times)
        if status != HSA_STATUS_SUCCESS or times.end == 0:
            raise HipError(hipError_t.hipErrorInvalidHandle, "hipEventElapsedTime",
                           "the runtime recorded no timestamp for this event's packet")
        return int(times.start), int(times.end)


def _nothing() -> None:
    """The release of a HandleState that owns no handle (its object only ends)."""


class Module:
    """hipModule_t: an Executable loaded on one device."""

    def __init__(self, executable: Any, device: int) -> None:
        self.executable = executable
        self.device = device

    def getFunction(self, name: str) -> Any:
        """hipModuleGetFunction: the Kernel called ``name``."""
        return self.executable.kernel(name)


@dataclass
class _KernelNode:
    kernel: Any
    args: tuple
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_lds: int


@dataclass
class HipGraph:
    """hipGraph_t: kernel nodes in an order that respects their dependencies."""

    nodes: list[_KernelNode] = field(default_factory=list)

    def addKernelNode(self, kernel: Any, grid: Any, block: Any, args: Sequence[Any],
                      dynamic_shared: int = 0, dependencies: Sequence[int] = ()) -> int:
        """hipGraphAddKernelNode: returns the node's index. Dependencies must be earlier nodes
        (nodes replay in insertion order, one barrier bit each, so every dependency holds)."""
        for dep in dependencies:
            if not 0 <= dep < len(self.nodes):
                raise HipError(hipError_t.hipErrorInvalidValue, "hipGraphAddKernelNode",
                               f"dependency {dep} is not an earlier node of this graph")
        self.nodes.append(_KernelNode(kernel, tuple(args), _dim3(grid, "gridDim"),
                                      _dim3(block, "blockDim"), int(dynamic_shared)))
        return len(self.nodes) - 1


class GraphExec:
    """hipGraphExec_t: the graph turned into an hsapy.dispatch.Graph per stream (kernargs
    packed once); a launch replays the packets with one doorbell."""

    def __init__(self, graph: HipGraph) -> None:
        self.graph = graph
        self._per_queue: dict[int, Any] = {}

    def for_stream(self, stream: Stream) -> Any:
        """The recorded packets for ``stream``'s queue (built at the first launch there)."""
        from hsapy.dispatch import Graph

        replay = self._per_queue.get(stream.queue.id)
        if replay is None:
            replay = Graph(stream.queue)
            for node in self.graph.nodes:
                grid = tuple(g * b for g, b in zip(node.grid, node.block))
                replay.add_dispatch(node.kernel, node.args, grid, node.block, node.dynamic_lds,
                                    barrier=True)
            self._per_queue[stream.queue.id] = replay
        return replay


class MemPool:
    """hipMemPool_t over a device's coarse-grained HSA pool, caching freed blocks by size."""

    def __init__(self, hip: HipRuntime, device: int) -> None:
        self.hip = hip
        self.device = device
        self.pool = hip._agent(device).device_pool
        self._free: dict[int, list[Any]] = {}

    @property
    def cached_bytes(self) -> int:
        """Bytes held for reuse (what hipMemPoolTrimTo gives back)."""
        return sum(b.size for blocks in self._free.values() for b in blocks)

    def _take(self, nbytes: int) -> Any:
        blocks = self._free.get(nbytes)
        if blocks:
            return blocks.pop()
        return self.hip._allocate(self.pool, nbytes, self.device)

    def _give_back(self, buffer: Any) -> None:
        self._free.setdefault(buffer.size, []).append(buffer)

    def trim(self) -> None:
        """Release every cached block to the HSA pool."""
        for blocks in self._free.values():
            for buffer in blocks:
                self.hip._release(buffer)
        self._free.clear()


class HipRuntime:
    """The HIP runtime API over one hsapy Runtime. Method names are HIP's without the ``hip``
    prefix (``hip.malloc`` is hipMalloc). Pass an open ``runtime`` or a ``backend`` name."""

    def __init__(self, runtime: Any = None, backend: str | None = None,
                 trace: bool = False) -> None:
        from hsapy.runtime import Runtime

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
        self._state = HandleState("HipRuntime", _nothing, what="the HIP runtime")
        weakref.finalize(self, self._state.close_later)
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
        """hipGetErrorName."""
        return hipError_t(code).name

    # -- devices -----------------------------------------------------------------------------
    def _agent(self, device: int) -> Any:
        agents = self.runtime.gpu_agents
        if (isinstance(device, bool) or not isinstance(device, (int, np.integer))
                or not 0 <= device < len(agents)):
            raise HipError(hipError_t.hipErrorInvalidDevice, self._call or "hipSetDevice",
                           f"device {device!r} is not in 0..{len(agents) - 1}")
        return agents[device]

    @_hip_api("hipGetDeviceCount")
    def getDeviceCount(self) -> int:
        """hipGetDeviceCount: the number of GPU agents."""
        return len(self.runtime.gpu_agents)

    @_hip_api("hipSetDevice")
    def setDevice(self, device: int) -> None:
        """hipSetDevice: later calls allocate, launch and synchronize on ``device``."""
        self._agent(device)
        self._device = int(device)

    @_hip_api("hipGetDevice")
    def getDevice(self) -> int:
        """hipGetDevice."""
        return self._device

    @_hip_api("hipGetDeviceProperties")
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

    @_hip_api("hipDeviceSynchronize")
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

    @_hip_api("hipDeviceCanAccessPeer")
    def deviceCanAccessPeer(self, device: int, peer: int) -> bool:
        """hipDeviceCanAccessPeer: may ``device`` be granted access to ``peer``'s memory?"""
        agent, peer_agent = self._agent(device), self._agent(peer)
        if device == peer:
            return False
        return peer_agent.device_pool.access(agent) != "never"

    @_hip_api("hipDeviceEnablePeerAccess")
    def deviceEnablePeerAccess(self, peer: int, flags: int = 0) -> None:
        """hipDeviceEnablePeerAccess: the current device may access ``peer``'s allocations,
        present (allow_access now) and future (at each malloc on ``peer``)."""
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

    @_hip_api("hipDeviceDisablePeerAccess")
    def deviceDisablePeerAccess(self, peer: int) -> None:
        """hipDeviceDisablePeerAccess (only forgets the pair: HSA cannot revoke access)."""
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

    def _release(self, buffer: Any) -> None:
        from hsapy.memory import Buffer

        address = buffer._address if isinstance(buffer, Buffer) else None
        entry = self._buffers.get(address) if address is not None else None
        if entry is None or entry[0] is not buffer or buffer.is_closed:
            raise HipError(hipError_t.hipErrorInvalidValue, "hipFree",
                           f"{buffer!r:.80} was not allocated by this HIP runtime or is already "
                           "freed")
        del self._buffers[address]
        device = entry[1]
        if device >= 0:
            self._allocated[device] -= buffer.size
        buffer.close()

    @_hip_api("hipMalloc")
    def malloc(self, nbytes: int) -> Any:
        """hipMalloc: a Buffer from the current device's coarse-grained pool (VRAM)."""
        return self._allocate(self._agent(self._device).device_pool, nbytes, self._device)

    @_hip_api("hipHostMalloc")
    def hostMalloc(self, nbytes: int) -> Any:
        """hipHostMalloc: pinned, fine-grained system memory every GPU may access."""
        pool = self.runtime.system_pool
        buffer = self._allocate(pool, nbytes, None)
        blocked = [a for a in self.runtime.gpu_agents if pool.access(a) == "after allow_access"]
        if blocked:
            buffer.allow_access(blocked)
        return buffer

    @_hip_api("hipMallocManaged")
    def mallocManaged(self, nbytes: int) -> Any:
        """hipMallocManaged, approximated: fine-grained system memory that the host and every
        GPU read and write without copies (HIP's own fallback without XNACK page migration)."""
        return self.hostMalloc(nbytes)

    @_hip_api("hipFree")
    def free(self, buffer: Any) -> None:
        """hipFree: synchronizes the device (as HIP does), then returns the memory to its pool.
        ``hipFree(None)`` does nothing, as hipFree(nullptr) does."""
        if buffer is None:
            return
        self._synchronize_device(self._device)
        self._release(buffer)

    @_hip_api("hipHostFree")
    def hostFree(self, buffer: Any) -> None:
        """hipHostFree (``None`` does nothing)."""
        if buffer is None:
            return
        self._synchronize_device(self._device)
        self._release(buffer)

    @_hip_api("hipMemGetInfo")
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
                side._state.check()
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
                           f"{kind!r:.40} is not a hipMemcpyKind")
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
        nbytes = _size(nbytes, "hipMemcpy", "sizeBytes")
        if nbytes > min(sizes):
            raise HsapyValueError(
                f"{nbytes} bytes do not fit (dst {sizes[0]}, src {sizes[1]} bytes)")
        return int(nbytes)

    @_hip_api("hipMemcpy")
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

    @_hip_api("hipMemcpyAsync")
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

    def _memset_node(self, buffer: Any, value: int, nbytes: int, device: int) -> _KernelNode:
        from hsapy.memory import Buffer

        if not isinstance(buffer, Buffer):
            raise HsapyTypeError(
                f"hipMemset needs a Buffer from hip.malloc, not {type(buffer).__name__}")
        buffer._state.check()
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise HsapyTypeError(f"hipMemset: value is an int (a byte), not {value!r:.40}")
        nbytes = _size(nbytes, "hipMemset", "sizeBytes")
        if not 0 <= nbytes <= buffer.size:
            raise HsapyValueError(f"hipMemset of {nbytes} bytes into a {buffer.size}-byte buffer")
        byte_kernel, word_kernel = self._memset_kernel_pair(device)
        byte = int(value) & 0xFF
        if nbytes % 4 == 0 and buffer.address % 4 == 0:
            count, kernel, fill = nbytes // 4, word_kernel, byte * 0x01010101
        else:
            count, kernel, fill = nbytes, byte_kernel, byte
        blocks = max(1, -(-count // MEMSET_BLOCK))
        return _KernelNode(kernel, (buffer, fill, count), (blocks, 1, 1), (MEMSET_BLOCK, 1, 1), 0)

    @_hip_api("hipMemsetAsync")
    def memsetAsync(self, buffer: Any, value: int, nbytes: int | None = None,
                    stream: Stream | None = None) -> None:
        """hipMemsetAsync: one fill-kernel dispatch (barrier bit set) on ``stream``."""
        stream = self._stream(stream, "hipMemsetAsync", capturable=True)
        node = self._memset_node(buffer, value, buffer.size if nbytes is None else nbytes,
                                 stream.device)
        self._launch_node(stream, node)

    @_hip_api("hipMemset")
    def memset(self, buffer: Any, value: int, nbytes: int | None = None) -> None:
        """hipMemset: hipMemsetAsync on the default stream, then wait for the device."""
        self.memsetAsync(buffer, value, nbytes)
        self._synchronize_device(self._device)

    # -- modules and launches ----------------------------------------------------------------
    @_hip_api("hipModuleLoadData")
    def moduleLoadData(self, code_object: Any) -> Module:
        """hipModuleLoadData: load a code object (bytes or path) on the current device. The
        module stays loaded until hipModuleUnload (or close)."""
        module = Module(self.runtime.load(code_object, self._agent(self._device)), self._device)
        self._modules.append(module)
        return module

    @_hip_api("hipModuleUnload")
    def moduleUnload(self, module: Module) -> None:
        """hipModuleUnload: wait for the device (its kernels may still be queued), then
        destroy the executable."""
        if not isinstance(module, Module) or module not in self._modules:
            raise HipError(hipError_t.hipErrorInvalidHandle, "hipModuleUnload",
                           "the module was not loaded by this HIP runtime or is unloaded")
        self._synchronize_device(module.device)
        self._modules.remove(module)
        module.executable.close()

    @_hip_api("hipModuleGetFunction")
    def moduleGetFunction(self, module: Module, name: str) -> Any:
        """hipModuleGetFunction."""
        if not isinstance(module, Module) or module not in self._modules:
            raise HipError(hipError_t.hipErrorInvalidHandle, "hipModuleGetFunction",
                           "the module was not loaded by this HIP runtime or is unloaded")
        _expect(name, str, "hipModuleGetFunction", "name")
        return module.getFunction(name)

    def _launch_node(self, stream: Stream, node: _KernelNode) -> Any:
        from hsapy.executable import Kernel

        _expect(node.kernel, Kernel, self._call or "hipLaunchKernelGGL", "the kernel",
                hipError_t.hipErrorInvalidDeviceFunction)
        if stream._capture is not None:
            stream._capture.nodes.append(node)
            return None
        grid = tuple(g * b for g, b in zip(node.grid, node.block))
        prepared = node.kernel.prepare(stream.queue, grid, node.block, node.dynamic_lds,
                                       barrier=True)
        result = prepared(*node.args)
        self._trace_dispatch(stream, result.index, prepared.word)
        return result

    @_hip_api("hipLaunchKernelGGL")
    def launchKernelGGL(self, kernel: Any, gridDim: Any, blockDim: Any, sharedMemBytes: int = 0,
                        stream: Stream | None = None, *args: Any) -> Any:
        """hipLaunchKernelGGL(kernel, gridDim blocks, blockDim threads, dynamic LDS, stream,
        args...): one kernel-dispatch packet, barrier bit set, grid = gridDim * blockDim
        work-items. Returns the DispatchResult (None while the stream is capturing)."""
        stream = self._stream(stream, "hipLaunchKernelGGL", capturable=True)
        node = _KernelNode(kernel, args, _dim3(gridDim, "gridDim"), _dim3(blockDim, "blockDim"),
                           _size(sharedMemBytes, "hipLaunchKernelGGL", "sharedMemBytes"))
        return self._launch_node(stream, node)

    @_hip_api("hipModuleLaunchKernel")
    def moduleLaunchKernel(self, kernel: Any, gridDim: Any, blockDim: Any, sharedMemBytes: int,
                           stream: Stream | None, args: Sequence[Any]) -> Any:
        """hipModuleLaunchKernel: as launchKernelGGL with the arguments as one list."""
        if isinstance(args, (str, bytes)) or not hasattr(args, "__iter__"):
            raise HipError(hipError_t.hipErrorInvalidValue, "hipModuleLaunchKernel",
                           f"kernelParams is a list of arguments, not {type(args).__name__}")
        return self.launchKernelGGL(kernel, gridDim, blockDim, sharedMemBytes, stream, *args)

    # -- streams -----------------------------------------------------------------------------
    def _stream(self, stream: Stream | None, call: str, capturable: bool = False) -> Stream:
        if stream is None or stream == 0:
            stream = self._default_streams.get(self._device)
            if stream is None:
                stream = Stream(self, self._device, is_default=True)
                self._default_streams[self._device] = stream
        elif not isinstance(stream, Stream) or stream.queue.is_closed:
            raise HipError(hipError_t.hipErrorInvalidHandle, call,
                           f"{stream!r} is not a live stream")
        if stream.is_capturing and not capturable:
            raise HipError(hipError_t.hipErrorStreamCaptureUnsupported, call,
                           "only kernel launches and memsets can be captured into a graph here")
        return stream

    @_hip_api("hipStreamCreate")
    def streamCreate(self) -> Stream:
        """hipStreamCreate: a new AQL queue on the current device."""
        stream = Stream(self, self._device)
        self._streams.append(stream)
        return stream

    @_hip_api("hipStreamSynchronize")
    def streamSynchronize(self, stream: Stream | None = None) -> None:
        """hipStreamSynchronize: a barrier-AND with a completion signal, then wait on it."""
        self._stream(stream, "hipStreamSynchronize").drain()

    @_hip_api("hipStreamDestroy")
    def streamDestroy(self, stream: Stream) -> None:
        """hipStreamDestroy: drain the stream, then destroy its queue."""
        if stream not in self._streams:
            raise HipError(hipError_t.hipErrorInvalidHandle, "hipStreamDestroy",
                           f"{stream!r} was not created by hipStreamCreate or is destroyed")
        stream.drain()
        self._streams.remove(stream)
        stream.close()

    def _event(self, event: Any, call: str) -> Event:
        """``event`` when it is a live Event of this runtime, else HipError(InvalidHandle)."""
        if not isinstance(event, Event) or event.hip is not self:
            raise HipError(hipError_t.hipErrorInvalidHandle, call,
                           f"{event!r:.40} is not an event of this HIP runtime")
        if event._state.closed:
            raise HipError(hipError_t.hipErrorInvalidHandle, call,
                           str(event._state.error())) from event._state.error()
        return event

    @_hip_api("hipStreamWaitEvent")
    def streamWaitEvent(self, stream: Stream | None, event: Event, flags: int = 0) -> None:
        """hipStreamWaitEvent: a barrier-AND on ``stream`` depending on the event's signal."""
        self._event(event, "hipStreamWaitEvent")
        stream = self._stream(stream, "hipStreamWaitEvent")
        if not event.is_recorded:
            return          # HIP: waiting on a never-recorded event is a no-op
        stream.publish(aql.barrier_and([event.signal.handle]))

    @_hip_api("hipStreamBeginCapture")
    def streamBeginCapture(self, stream: Stream) -> None:
        """hipStreamBeginCapture: launches on ``stream`` are recorded into a graph, not run."""
        stream = self._stream(stream, "hipStreamBeginCapture")
        if stream.is_default:
            raise HipError(hipError_t.hipErrorStreamCaptureUnsupported, "hipStreamBeginCapture",
                           "the default stream cannot be captured; use hipStreamCreate")
        stream._capture = HipGraph()

    @_hip_api("hipStreamEndCapture")
    def streamEndCapture(self, stream: Stream) -> HipGraph:
        """hipStreamEndCapture: the graph of what was launched since BeginCapture."""
        if not isinstance(stream, Stream) or stream._capture is None:
            raise HipError(hipError_t.hipErrorInvalidValue, "hipStreamEndCapture",
                           "the stream is not capturing")
        graph, stream._capture = stream._capture, None
        return graph

    # -- events ------------------------------------------------------------------------------
    @_hip_api("hipEventCreate")
    def eventCreate(self, timing: bool = True) -> Event:
        """hipEventCreate (timing=False: hipEventCreateWithFlags(hipEventDisableTiming))."""
        event = Event(self, bool(timing))
        self._events.append(event)
        return event

    @_hip_api("hipEventRecord")
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

    @_hip_api("hipEventQuery")
    def eventQuery(self, event: Event) -> hipError_t:
        """hipEventQuery: hipSuccess when complete, else hipErrorNotReady (returned, not raised)."""
        self._event(event, "hipEventQuery")
        return hipError_t.hipSuccess if event.is_complete else hipError_t.hipErrorNotReady

    @_hip_api("hipEventSynchronize")
    def eventSynchronize(self, event: Event, timeout: float = DEFAULT_TIMEOUT) -> None:
        """hipEventSynchronize: wait (with a timeout) until the event's signal reaches 0."""
        self._event(event, "hipEventSynchronize")
        if not event.is_recorded:
            return
        event.signal.wait(2, 1, timeout=timeout, abort=self._check_queues)
        self._check_queues()

    @_hip_api("hipEventElapsedTime")
    def eventElapsedTime(self, start: Event, stop: Event) -> float:
        """hipEventElapsedTime in milliseconds, from the end timestamps of the two record
        packets (hsa_amd_profiling_get_dispatch_time; ticks of the system timestamp)."""
        for event in (start, stop):
            self._event(event, "hipEventElapsedTime")
            if not event.is_recorded or not event.timing:
                raise HipError(hipError_t.hipErrorInvalidHandle, "hipEventElapsedTime",
                               "both events must be recorded and created with timing")
            if not event.is_complete:
                raise HipError(hipError_t.hipErrorNotReady, "hipEventElapsedTime",
                               "an event has not completed yet")
        ticks = stop.timestamps()[1] - start.timestamps()[1]
        return ticks * 1000.0 / self.runtime.timestamp_frequency

    @_hip_api("hipEventDestroy")
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
    @_hip_api("hipGraphCreate")
    def graphCreate(self) -> HipGraph:
        """hipGraphCreate: an empty graph (add nodes with graph.addKernelNode)."""
        return HipGraph()

    @_hip_api("hipGraphAddKernelNode")
    def graphAddKernelNode(self, graph: HipGraph, dependencies: Sequence[int], kernel: Any,
                           gridDim: Any, blockDim: Any, args: Sequence[Any],
                           sharedMemBytes: int = 0) -> int:
        """hipGraphAddKernelNode: returns the node index."""
        _expect(graph, HipGraph, "hipGraphAddKernelNode", "graph")
        if isinstance(dependencies, (str, bytes)) or not hasattr(dependencies, "__iter__"):
            raise HipError(hipError_t.hipErrorInvalidValue, "hipGraphAddKernelNode",
                           "dependencies is a list of node indices")
        return graph.addKernelNode(kernel, gridDim, blockDim, args, sharedMemBytes, dependencies)

    @_hip_api("hipGraphInstantiate")
    def graphInstantiate(self, graph: HipGraph) -> GraphExec:
        """hipGraphInstantiate."""
        _expect(graph, HipGraph, "hipGraphInstantiate", "graph")
        if not graph.nodes:
            raise HipError(hipError_t.hipErrorInvalidValue, "hipGraphInstantiate", "empty graph")
        return GraphExec(graph)

    @_hip_api("hipGraphLaunch")
    def graphLaunch(self, graph_exec: GraphExec, stream: Stream | None = None) -> list[Any]:
        """hipGraphLaunch: replay every node's dispatch packet (barrier bits set) with one
        doorbell on ``stream``; returns the DispatchResults."""
        _expect(graph_exec, GraphExec, "hipGraphLaunch", "graphExec",
                hipError_t.hipErrorInvalidHandle)
        stream = self._stream(stream, "hipGraphLaunch")
        results = graph_exec.for_stream(stream).launch(wait=False)
        for node, result in zip(graph_exec.graph.nodes, results):
            grid = tuple(g * b for g, b in zip(node.grid, node.block))
            word = aql.kernel_dispatch(0, grid, node.block, barrier=True).word
            self._trace_dispatch(stream, result.index, word)
        return results

    # -- memory pools ------------------------------------------------------------------------
    @_hip_api("hipMemPoolCreate")
    def memPoolCreate(self, device: int | None = None) -> MemPool:
        """hipMemPoolCreate (location: a device): a caching pool over its VRAM HSA pool."""
        return MemPool(self, self._device if device is None else device)

    @_hip_api("hipMallocFromPoolAsync")
    def mallocFromPoolAsync(self, nbytes: int, pool: MemPool, stream: Stream | None = None) -> Any:
        """hipMallocFromPoolAsync: a block from the pool (reused when one of this size was
        freed and its stream drained); usable at once, so also in ``stream`` order."""
        _expect(pool, MemPool, "hipMallocFromPoolAsync", "memPool",
                hipError_t.hipErrorInvalidHandle)
        self._stream(stream, "hipMallocFromPoolAsync")
        return pool._take(_size(nbytes, "hipMallocFromPoolAsync"))

    @_hip_api("hipFreeAsync")
    def freeAsync(self, buffer: Any, stream: Stream | None, pool: MemPool) -> None:
        """hipFreeAsync: the block returns to ``pool`` once ``stream`` has drained."""
        from hsapy.memory import Buffer

        _expect(pool, MemPool, "hipFreeAsync", "memPool", hipError_t.hipErrorInvalidHandle)
        _expect(buffer, Buffer, "hipFreeAsync", "dev_ptr")
        buffer._state.check()
        self._stream(stream, "hipFreeAsync").retire("pool block", buffer, pool)

    @_hip_api("hipMemPoolTrimTo")
    def memPoolTrimTo(self, pool: MemPool, min_bytes_to_keep: int = 0) -> None:
        """hipMemPoolTrimTo: give cached blocks back to HSA (all of them when 0)."""
        _expect(pool, MemPool, "hipMemPoolTrimTo", "memPool", hipError_t.hipErrorInvalidHandle)
        min_bytes_to_keep = _size(min_bytes_to_keep, "hipMemPoolTrimTo", "minBytesToKeep")
        if min_bytes_to_keep == 0 or pool.cached_bytes > min_bytes_to_keep:
            pool.trim()
