"""The objects HIP calls take and return: streams (one AQL queue each), events (a signal and
the timestamps of a barrier packet), modules, graphs, memory pools, device properties, copy
directions and the packet trace's entries. HipRuntime (hsapy.hip.runtime) creates and checks
them."""
from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hsapy import aql
from hsapy._checks import check_items, check_timeout
from hsapy._lifetime import HandleState, NotCopyable, release_when_collected
from hsapy.errors import HsapyError
from hsapy.hip.errors import (
    HipError,
    byte_count,
    code_for,
    dim3,
    expect_type,
    hipError_t,
    launch_configuration,
)
from hsapy.hsa_enums import HSA_STATUS_SUCCESS

if TYPE_CHECKING:
    from hsapy.hip.runtime import HipRuntime

__all__ = ["hipMemcpyKind", "TraceEntry", "DeviceProp", "Stream", "Event", "Module", "KernelNode",
           "HipGraph", "GraphExec", "MemPool", "STREAM_QUEUE_SIZE", "DEFAULT_TIMEOUT",
           "release_nothing", "HandleMaker"]

STREAM_QUEUE_SIZE = 256
DEFAULT_TIMEOUT = 10.0


class hipMemcpyKind(enum.IntEnum):
    """Direction of a copy (hip_runtime_api.h); hipMemcpyDefault infers it from the pointers."""

    hipMemcpyHostToHost = 0
    hipMemcpyHostToDevice = 1
    hipMemcpyDeviceToHost = 2
    hipMemcpyDeviceToDevice = 3
    hipMemcpyDefault = 4


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


class Stream(NotCopyable):
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
        timeout = check_timeout(timeout, "Stream.drain")     # before the barrier is published
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


class Event(NotCopyable):
    """hipEvent_t: a completion signal plus the timestamps of the barrier-AND that records it."""

    def __init__(self, hip: HipRuntime, timing: bool = True) -> None:
        self.hip = hip
        self.timing = timing
        self.signal: Any = None
        self.stream: Stream | None = None
        self.index: int | None = None
        # closed by hipEventDestroy or the HipRuntime's close (no handle of its own: the
        # signal is the runtime's, pooled)
        self._state = HandleState("hip Event", release_nothing, what="hip event")
        release_when_collected(self, self._state)

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


def release_nothing() -> None:
    """The release of a HandleState that owns no handle (its object only ends)."""


class Module(NotCopyable):
    """hipModule_t: an Executable loaded on one device."""

    def __init__(self, executable: Any, device: int) -> None:
        self.executable = executable
        self.device = device

    def getFunction(self, name: str) -> Any:
        """hipModuleGetFunction: the Kernel called ``name``."""
        return self.executable.kernel(name)


@dataclass
class KernelNode:
    kernel: Any
    args: tuple
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_lds: int


class HandleMaker:
    """What makes HIP handles: HipRuntime (hsapy.hip.runtime), which subclasses it so that a
    handle can check its maker without importing the runtime's module."""


@dataclass
class HipGraph:
    """hipGraph_t: kernel nodes in an order that respects their dependencies. ``hip``: the
    HipRuntime that made it; another one refuses it. Graphs come from their runtime
    (``HipRuntime.graphCreate``, ``HipRuntime.streamEndCapture``), as streams and events do:
    one made without a HipRuntime raises HipError (hipErrorInvalidValue)."""

    nodes: list[KernelNode] = field(default_factory=list)
    hip: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.hip, HandleMaker):
            raise HipError(hipError_t.hipErrorInvalidValue, "hipGraphCreate",
                           "a HipGraph belongs to the HipRuntime that makes it: use "
                           "HipRuntime.graphCreate() (or streamEndCapture)")

    def addKernelNode(self, kernel: Any, grid: Any, block: Any, args: Sequence[Any],
                      dynamic_shared: int = 0, dependencies: Sequence[int] = ()) -> int:
        """hipGraphAddKernelNode: returns the node's index. Dependencies must be earlier nodes
        (nodes replay in insertion order, one barrier bit each, so every dependency holds)."""
        from hsapy.dispatch import check_geometry
        from hsapy.executable import Kernel

        call = "hipGraphAddKernelNode"
        expect_type(kernel, Kernel, call, "kernel", hipError_t.hipErrorInvalidDeviceFunction)
        try:
            dependencies = check_items(dependencies, "dependencies is a list of node indices",
                                       ordered=False)
            args = check_items(args, "args is the list of the kernel's arguments")
        except HsapyError as exc:
            raise HipError(hipError_t.hipErrorInvalidValue, call, str(exc)) from None
        for dep in dependencies:
            if (isinstance(dep, bool) or not isinstance(dep, (int, np.integer))
                    or not 0 <= dep < len(self.nodes)):
                raise HipError(hipError_t.hipErrorInvalidValue, call,
                               f"dependencies: {dep!r:.40} is not an earlier node of this "
                               "graph")
        try:
            sizes = dim3(grid, "gridDim"), dim3(block, "blockDim")
        except HsapyError as exc:
            raise HipError(hipError_t.hipErrorInvalidValue, call, str(exc)) from exc
        dynamic_lds = byte_count(dynamic_shared, call, "sharedMemBytes")
        args = tuple(args)
        # refused now rather than at the graph's first launch: the sizes against the limits
        # of the agent the kernel was loaded for, the arguments against its signature
        agent = getattr(kernel.executable, "agent", None)
        try:
            if agent is not None:
                check_geometry(kernel, agent, tuple(g * b for g, b in zip(*sizes)), sizes[1],
                               dynamic_lds)
        except HsapyError as exc:
            raise HipError(code_for(exc), call, launch_configuration(*sizes, dynamic_lds)
                           + str(exc)) from exc
        try:
            kernel.layout.convert(args)
        except HsapyError as exc:
            raise HipError(code_for(exc), call, f"args: {exc}") from exc
        self.nodes.append(KernelNode(kernel, args, *sizes, dynamic_lds))
        return len(self.nodes) - 1


class GraphExec(NotCopyable):
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


class MemPool(NotCopyable):
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
