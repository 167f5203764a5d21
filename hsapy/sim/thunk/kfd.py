"""The simulated KFD behind the simulated thunk: what each hsaKmt* function does.

The real ROCr (libhsa-runtime64) calls these through ``libhsakmt.so.1`` built by
:mod:`hsapy.sim.thunk.library`; :func:`install` binds every export to a method of the attached
:class:`SimKfd` (``attach``). With nothing attached, ``hsaKmtOpenKFD`` fails the way the real
thunk does on a machine without ``/dev/kfd``, so a process that loaded this library but did not
ask for the simulated device sees no GPU.

The device is one CPU node and one GPU node (a target ROCr knows, gfx90a by default) whose
properties come from :data:`hsapy.sim.targets.GPU_PROFILES`. Memory is host memory: every
allocation ROCr makes is a :class:`hsapy.sim.memory.SimMemory` allocation whose GPU virtual
address IS its host address (as on a large-BAR dGPU with the whole frame buffer CPU-visible), so
ROCr reads and writes it directly while the ISA interpreter reaches it through the allocation
table. Queues are consumed by :class:`hsapy.sim.thunk.processor.DeviceQueue`; events are
:class:`KfdEvent` objects that the packet processor sets when it decrements a signal whose
``event_mailbox_ptr`` is set, as the command processor's end-of-pipe interrupt does.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hsapy.sim.clock import SimClock
from hsapy.sim.executors import ExecutorCache
from hsapy.sim.memory import (
    APERTURE_SIZE,
    PRIVATE_APERTURE_BASE,
    SHARED_APERTURE_BASE,
    SimMemory,
)
from hsapy.sim.targets import CPU_PROFILE, GPU_PROFILES, GpuProfile
from hsapy.sim.thunk.library import FIELD_MASKS, prototypes

__all__ = ["SimKfd", "KfdEvent", "attach", "detach", "attached", "install", "TRACE_ENV"]

TRACE_ENV = "HSAPY_THUNK_TRACE"
PAGE = 4096

# KFD ioctl interface version the simulated thunk reports (ROCr 5.2 needs >= 1.1 for events
# and checks <= 1.3 for gfx906 sramecc quirks only).
KFD_VERSION = (1, 8)

# The longest one hsaKmtWaitOnEvent / hsaKmtWaitOnMultipleEvents sleeps before it returns
# HSAKMT_STATUS_WAIT_TIMEOUT, whatever timeout it was given (ROCr 5.2 asks for 0xFFFFFFFE ms, in
# effect forever). KFD events lose wake-ups, and ROCr 5.2 sleeps on them without a bound; see
# SimKfd._wait for the race and why returning early is safe for ROCr.
KFD_WAIT_SLICE_MS = 100

CPU_NODE, GPU_NODE = 0, 1
# The GPU node's id in KFD's topology (gpu_id, any non-zero value) and its PCI location.
GPU_LOCATION_ID = 0x0300
AMD_VENDOR_ID = 0x1002
# Scratch aperture VA range and the memory ROCr reserves there: never touched by the simulator
# (its interpreter keeps private memory itself), so it is reserved address space only.
SVM_APERTURE_BASE = 0x1000
SVM_APERTURE_LIMIT = (1 << 47) - 1

_lock = threading.Lock()
_device: SimKfd | None = None
_real_open = False          # the real thunk's hsaKmtOpenKFD succeeded and it is not closed yet


def real_thunk_in_use() -> bool:
    """True while the runtime in this process runs over the real thunk (a real GPU)."""
    return _real_open


def attach(device: SimKfd) -> None:
    """Serve the thunk's calls from ``device`` (one at a time per process)."""
    global _device
    with _lock:
        if _device is not None and _device is not device and _device.is_open:
            raise RuntimeError("a simulated device is already open in this process (an open "
                               "Runtime(backend='rocr-sim')): ROCr is one per process, close "
                               "that runtime first")
        if _real_open:
            raise RuntimeError("ROCr in this process already runs over the real KFD thunk (an "
                               "open Runtime(backend='rocr') on a GPU): close it first")
        _device = device


def detach(device: SimKfd) -> None:
    """Stop serving from ``device`` (its queues are stopped)."""
    global _device
    with _lock:
        if _device is device:
            _device = None
    device.shut_down()


def attached() -> SimKfd | None:
    """The device serving the thunk now, or None."""
    return _device


@dataclass
class KfdEvent:
    """A KFD event: auto- or manual-reset, set by hsaKmtSetEvent or the packet processor."""

    event_id: int
    event_type: int
    manual_reset: bool
    cdata: Any                     # the HsaEvent the thunk handed out (kept alive here)
    mailbox: int                   # address of its u64 slot in the event page
    signaled: bool = False
    waiters: int = 0               # threads waiting on it now
    generation: int = 0            # bumped by every set that woke waiters


@dataclass
class ThunkAllocation:
    """What hsaKmtAllocMemory / hsaKmtRegisterMemory handed out."""

    address: int
    size: int
    node: int
    flags: int
    kind: int                      # HSA_POINTER_ALLOCATED / HSA_POINTER_REGISTERED_USER
    keep: Any = None               # an mmap backing scratch reservations
    user_data: int = 0
    mapped_nodes: Any = None
    registered: bool = False       # a user pointer adopted into SimMemory
    node_array: Any = field(default=None, repr=False)


class Masks:
    """Bit-field masks of the header's unions (hsapy_field_mask), by ``Union.member`` name."""

    def __init__(self, lib: Any) -> None:
        self._masks = {f"{union}.{member.split('.')[-1]}": int(lib.hsapy_field_mask(i))
                       for i, (union, member, _) in enumerate(FIELD_MASKS)}

    def get(self, value: int, name: str) -> int:
        """The field ``name`` of the union value ``value``."""
        mask = self._masks[name]
        return (value & mask) >> _shift(mask)

    def put(self, name: str, field_value: int) -> int:
        """``field_value`` placed in field ``name`` (OR the results together)."""
        mask = self._masks[name]
        return (field_value << _shift(mask)) & mask


def _shift(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


class SimKfd:
    """One simulated KFD device: topology, memory, queues and events for the thunk's calls."""

    def __init__(self, target: str = "gfx90a", executor: Any = None,
                 watchdog_s: float | None = None, engine: Any = None) -> None:
        if target not in GPU_PROFILES:
            raise ValueError(f"unknown target {target!r}")
        self.profile: GpuProfile = GPU_PROFILES[target]
        self.memory = SimMemory()
        self.clock = SimClock()
        self.executors = ExecutorCache(executor, watchdog_s, engine)
        self.is_open = False
        self.ffi: Any = None
        self.lib: Any = None
        self.masks: Masks | None = None
        self._lock = threading.RLock()
        self._allocations: dict[int, ThunkAllocation] = {}
        self._events: dict[int, KfdEvent] = {}
        self._event_by_cdata: dict[int, KfdEvent] = {}
        self._next_event_id = 1
        self._event_cond = threading.Condition(threading.Lock())
        self._event_page = np.zeros(4096, np.uint64)
        self.queues: dict[int, Any] = {}
        self._next_queue_id = 1
        self._doorbells = np.full(1024, np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64)
        self.xnack = 0
        self.errors: list[str] = []

    # -- lifecycle ---------------------------------------------------------------------------

    def bind(self, ffi: Any, lib: Any) -> None:
        """Called by :func:`install` with the embedded library's ffi and lib."""
        self.ffi = ffi
        self.lib = lib
        self.masks = Masks(lib)

    def shut_down(self) -> None:
        """Stop every queue's processor (the device is being detached)."""
        for queue in list(self.queues.values()):
            queue.stop()
        self.queues.clear()

    # -- the exports ---------------------------------------------------------------------------

    def hsaKmtOpenKFD(self) -> int:
        self.is_open = True
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtCloseKFD(self) -> int:
        # The runtime's last hsa_shut_down: the device is done; a later hsa_init in this process
        # reaches the real thunk again unless another simulated device is attached.
        self.is_open = False
        detach(self)
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtRuntimeEnable(self, rdebug: Any, setup_ttmp: bool) -> int:
        # As the real thunk for a GPU whose firmware has no debug-trap support: ROCr then runs
        # without KFD exception reporting and takes queue errors from queue_inactive_signal,
        # the path the simulated command processor reports through (processor.py).
        return self.lib.HSAKMT_STATUS_NOT_SUPPORTED

    def hsaKmtRuntimeDisable(self) -> int:
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtGetVersion(self, info: Any) -> int:
        info.KernelInterfaceMajorVersion, info.KernelInterfaceMinorVersion = KFD_VERSION
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtAcquireSystemProperties(self, props: Any) -> int:
        props.NumNodes = 2
        props.PlatformOem = 0
        props.PlatformId = 0
        props.PlatformRev = 0
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtReleaseSystemProperties(self) -> int:
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtGetNodeProperties(self, node: int, props: Any) -> int:
        lib = self.lib
        if node == CPU_NODE:
            props.NumCPUCores = os.cpu_count() or 1
            props.NumFComputeCores = 0
            props.NumMemoryBanks = 1
            props.NumCaches = len(self._caches(CPU_NODE))
            props.NumIOLinks = 1
            props.CComputeIdLo = 0
            props.MaxEngineClockMhzCCompute = 3000
            _put_name(props, "hsapy simulated CPU")
            return lib.HSAKMT_STATUS_SUCCESS
        if node != GPU_NODE:
            return lib.HSAKMT_STATUS_INVALID_PARAMETER
        p = self.profile
        m = self.masks
        major, minor, stepping = _gfx_version(p.name)
        props.NumCPUCores = 0
        props.NumFComputeCores = p.compute_units * p.simds_per_cu
        # frame buffer + the LDS, scratch and SVM apertures the thunk adds for a dGPU
        props.NumMemoryBanks = 4
        props.NumCaches = len(self._caches(GPU_NODE))
        props.NumIOLinks = 1
        props.FComputeIdLo = 0x80000000
        props.Capability.Value = (m.put("HSA_CAPABILITY.QueueSizePowerOfTwo", 1)
                                  | m.put("HSA_CAPABILITY.QueueSize32bit", 1)
                                  | m.put("HSA_CAPABILITY.DoorbellType", 2)
                                  | m.put("HSA_CAPABILITY.SRAM_EDCSupport",
                                          1 if p.sramecc == "+" else 0))
        props.MaxWavesPerSIMD = p.max_waves_per_cu // p.simds_per_cu
        props.LDSSizeInKB = p.lds_size // 1024
        props.GDSSizeInKB = 0
        props.WaveFrontSize = p.wavefront_size
        props.NumShaderBanks = p.shader_engines
        props.NumArrays = p.shader_arrays_per_engine
        props.NumCUPerArray = p.compute_units // (p.shader_engines * p.shader_arrays_per_engine)
        props.NumSIMDPerCU = p.simds_per_cu
        props.MaxSlotsScratchCU = 32
        props.EngineId.Value = (m.put("HSA_ENGINE_ID.Major", major)
                                | m.put("HSA_ENGINE_ID.Minor", minor)
                                | m.put("HSA_ENGINE_ID.Stepping", stepping)
                                | m.put("HSA_ENGINE_ID.uCode", 100))
        props.VendorId = AMD_VENDOR_ID
        props.DeviceId = p.chip_id
        props.LocationId = GPU_LOCATION_ID
        props.LocalMemSize = p.memory_size
        props.MaxEngineClockMhzFCompute = p.max_clock_mhz
        props.MaxEngineClockMhzCCompute = 3000
        props.DrmRenderMinor = 128
        _put_name(props, p.product_name)
        for i, byte in enumerate(p.name.encode()[:63]):
            props.AMDName[i] = byte
        props.NumSdmaEngines = 0
        props.NumSdmaXgmiEngines = 0
        props.NumSdmaQueuesPerEngine = 0
        props.NumCpQueues = 8
        props.NumGws = 0
        props.Domain = 0
        props.UniqueID = 0x5EED_0000_0000_0001
        return lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtGetNodeMemoryProperties(self, node: int, count: int, banks: Any) -> int:
        lib = self.lib
        if node == CPU_NODE:
            rows = [(lib.HSA_HEAPTYPE_SYSTEM, _host_memory_size(), 0)]
        elif node == GPU_NODE:
            rows = [
                (lib.HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC, self.profile.memory_size, 0),
                (lib.HSA_HEAPTYPE_GPU_LDS, self.profile.lds_size, SHARED_APERTURE_BASE),
                (lib.HSA_HEAPTYPE_GPU_SCRATCH, APERTURE_SIZE, PRIVATE_APERTURE_BASE),
                (lib.HSA_HEAPTYPE_DEVICE_SVM, SVM_APERTURE_LIMIT - SVM_APERTURE_BASE + 1,
                 SVM_APERTURE_BASE),
            ]
        else:
            return lib.HSAKMT_STATUS_INVALID_PARAMETER
        for i, (heap, size, base) in enumerate(rows[:count]):
            banks[i].HeapType = heap
            banks[i].SizeInBytes = size
            banks[i].VirtualBaseAddress = base
            banks[i].Width = self.profile.memory_width_bits if node == GPU_NODE else 64
            banks[i].MemoryClockMax = self.profile.memory_clock_mhz if node == GPU_NODE else 3200
        return lib.HSAKMT_STATUS_SUCCESS

    def _caches(self, node: int) -> list[tuple[int, int, int]]:
        """(level, bytes, line bytes) of the node's data caches, from the profiles."""
        profile = CPU_PROFILE if node == CPU_NODE else self.profile
        return [(level, size, profile.cacheline_size)
                for level, size in enumerate(profile.cache_sizes, start=1) if size]

    def hsaKmtGetNodeCacheProperties(self, node: int, processor: int, count: int,
                                     caches: Any) -> int:
        if node not in (CPU_NODE, GPU_NODE):
            return self.lib.HSAKMT_STATUS_INVALID_PARAMETER
        m = self.masks
        kind = "HsaCacheType.CPU" if node == CPU_NODE else "HsaCacheType.HSACU"
        for i, (level, size, line) in enumerate(self._caches(node)[:count]):
            caches[i].ProcessorIdLow = processor
            caches[i].CacheLevel = level
            caches[i].CacheSize = size // 1024          # KiB (hsakmttypes.h)
            caches[i].CacheLineSize = line
            caches[i].CacheType.Value = m.put("HsaCacheType.Data", 1) | m.put(kind, 1)
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtGetNodeIoLinkProperties(self, node: int, count: int, links: Any) -> int:
        lib = self.lib
        if node not in (CPU_NODE, GPU_NODE):
            return lib.HSAKMT_STATUS_INVALID_PARAMETER
        if count:
            link = links[0]
            link.IoLinkType = lib.HSA_IOLINKTYPE_PCIEXPRESS
            link.VersionMajor = 4
            link.NodeFrom = node
            link.NodeTo = GPU_NODE if node == CPU_NODE else CPU_NODE
            link.Weight = 20
            link.MinimumBandwidth = link.MaximumBandwidth = 32000
        return lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtGetXNACKMode(self, out: Any) -> int:
        out[0] = self.xnack
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtSetXNACKMode(self, enable: int) -> int:
        if enable:
            return self.lib.HSAKMT_STATUS_NOT_SUPPORTED
        self.xnack = 0
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtGetTileConfig(self, node: int, config: Any) -> int:
        return self.lib.HSAKMT_STATUS_NOT_SUPPORTED

    def hsaKmtGetClockCounters(self, node: int, counters: Any) -> int:
        counters.GPUClockCounter = self.clock.now()
        counters.CPUClockCounter = time.monotonic_ns()
        counters.SystemClockCounter = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        counters.SystemClockFrequencyHz = 1_000_000_000
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtSetTrapHandler(self, node: int, base: Any, size: int, buffer: Any,
                             buffer_size: int) -> int:
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtSetMemoryPolicy(self, node: int, default: int, alternate: int, address: Any,
                              size: int) -> int:
        return self.lib.HSAKMT_STATUS_SUCCESS

    # -- memory --------------------------------------------------------------------------------

    def hsaKmtAllocMemory(self, node: int, size: int, flags: Any, out: Any) -> int:
        lib = self.lib
        value = int(flags.Value)
        m = self.masks
        if size == 0 or size % PAGE:
            return lib.HSAKMT_STATUS_INVALID_PARAMETER
        if node not in (CPU_NODE, GPU_NODE):
            return lib.HSAKMT_STATUS_INVALID_NODE_UNIT
        if m.get(value, "HsaMemFlags.FixedAddress"):
            return lib.HSAKMT_STATUS_NOT_SUPPORTED
        if m.get(value, "HsaMemFlags.Scratch"):
            # Reserved address space for the queues' scratch; the interpreter keeps private
            # memory itself, so nothing reads or writes it.
            reservation = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
                                    | getattr(mmap, "MAP_NORESERVE", 0))
            address = ctypes.addressof(ctypes.c_char.from_buffer(reservation))
            record = ThunkAllocation(address, size, node, value, lib.HSA_POINTER_ALLOCATED,
                                     keep=reservation)
        else:
            kind = "system" if node == CPU_NODE else "device"
            try:
                address = self.memory.allocate(size, PAGE, tag=f"thunk {kind} flags {value:#x}")
            except MemoryError:
                return lib.HSAKMT_STATUS_NO_MEMORY
            record = ThunkAllocation(address, size, node, value, lib.HSA_POINTER_ALLOCATED)
        with self._lock:
            self._allocations[address] = record
        out[0] = self.ffi.cast("void *", address)
        return lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtFreeMemory(self, address: Any, size: int) -> int:
        address = _address(self.ffi, address)
        with self._lock:
            record = self._allocations.pop(address, None)
        if record is None:
            return self.lib.HSAKMT_STATUS_INVALID_PARAMETER
        if record.keep is None:
            self.memory.free(address)
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtRegisterMemoryWithFlags(self, address: Any, size: int, flags: Any) -> int:
        address = _address(self.ffi, address)
        lib = self.lib
        with self._lock:
            if address in self._allocations:
                return lib.HSAKMT_STATUS_SUCCESS      # thunk memory is registered already
            adopted = self.memory.adopt(address, size, tag="thunk user pointer")
            self._allocations[address] = ThunkAllocation(
                address, size, CPU_NODE, int(flags.Value), lib.HSA_POINTER_REGISTERED_USER,
                registered=adopted)
        return lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtDeregisterMemory(self, address: Any) -> int:
        address = _address(self.ffi, address)
        with self._lock:
            record = self._allocations.get(address)
            if record is None or record.kind != self.lib.HSA_POINTER_REGISTERED_USER:
                return self.lib.HSAKMT_STATUS_SUCCESS
            del self._allocations[address]
        if record.registered:
            self.memory.free(address)
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtMapMemoryToGPU(self, address: Any, size: int, alternate: Any) -> int:
        if alternate != self.ffi.NULL:
            alternate[0] = _address(self.ffi, address)
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtMapMemoryToGPUNodes(self, address: Any, size: int, alternate: Any, flags: Any,
                                  count: int, nodes: Any) -> int:
        if alternate != self.ffi.NULL:
            alternate[0] = _address(self.ffi, address)
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtUnmapMemoryToGPU(self, address: Any) -> int:
        return self.lib.HSAKMT_STATUS_SUCCESS

    def _record_containing(self, address: int) -> ThunkAllocation | None:
        with self._lock:
            for record in self._allocations.values():
                if record.address <= address < record.address + record.size:
                    return record
        return None

    def hsaKmtQueryPointerInfo(self, pointer: Any, info: Any) -> int:
        lib = self.lib
        address = _address(self.ffi, pointer)
        record = self._record_containing(address)
        if record is None:
            info.Type = lib.HSA_POINTER_UNKNOWN
            return lib.HSAKMT_STATUS_ERROR
        info.Type = record.kind
        info.Node = record.node
        info.MemFlags.Value = record.flags
        info.CPUAddress = self.ffi.cast("void *", record.address)
        info.GPUAddress = record.address
        info.SizeInBytes = record.size
        if record.node_array is None:
            record.node_array = self.ffi.new("HSAuint32[1]", [GPU_NODE])
        info.NRegisteredNodes = 1
        info.NMappedNodes = 1
        info.RegisteredNodes = record.node_array
        info.MappedNodes = record.node_array
        info.UserData = self.ffi.cast("void *", record.user_data)
        return lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtSetMemoryUserData(self, pointer: Any, user_data: Any) -> int:
        record = self._record_containing(_address(self.ffi, pointer))
        if record is None:
            return self.lib.HSAKMT_STATUS_INVALID_PARAMETER
        record.user_data = _address(self.ffi, user_data)
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtShareMemory(self, *args: Any) -> int:
        return self.lib.HSAKMT_STATUS_NOT_SUPPORTED

    def hsaKmtRegisterSharedHandle(self, *args: Any) -> int:
        return self.lib.HSAKMT_STATUS_NOT_SUPPORTED

    def hsaKmtRegisterSharedHandleToNodes(self, *args: Any) -> int:
        return self.lib.HSAKMT_STATUS_NOT_SUPPORTED

    def hsaKmtRegisterGraphicsHandleToNodes(self, *args: Any) -> int:
        return self.lib.HSAKMT_STATUS_NOT_SUPPORTED

    def hsaKmtSVMGetAttr(self, *args: Any) -> int:
        return self.lib.HSAKMT_STATUS_NOT_SUPPORTED

    def hsaKmtSVMSetAttr(self, *args: Any) -> int:
        return self.lib.HSAKMT_STATUS_NOT_SUPPORTED

    # -- queues --------------------------------------------------------------------------------

    def hsaKmtCreateQueue(self, node: int, queue_type: int, percentage: int, priority: int,
                          ring: Any, ring_bytes: int, event: Any, resource: Any) -> int:
        from hsapy.sim.thunk.processor import DeviceQueue

        lib = self.lib
        if node != GPU_NODE:
            return lib.HSAKMT_STATUS_INVALID_NODE_UNIT
        if queue_type != lib.HSA_QUEUE_COMPUTE_AQL:
            return lib.HSAKMT_STATUS_NOT_SUPPORTED
        with self._lock:
            queue_id = self._next_queue_id
            if queue_id >= self._doorbells.size:
                return lib.HSAKMT_STATUS_OUT_OF_RESOURCES
            self._next_queue_id += 1
            doorbell = self._doorbells.ctypes.data + 8 * queue_id
            self._doorbells[queue_id] = np.uint64(0xFFFFFFFFFFFFFFFF)
            read_ptr = int(resource.QueueRptrValue)
            queue = DeviceQueue(self, queue_id, _address(self.ffi, ring), int(ring_bytes),
                                read_ptr, int(resource.QueueWptrValue), doorbell)
            self.queues[queue_id] = queue
        resource.QueueId = queue_id
        resource.QueueDoorBell = doorbell
        queue.start()
        return lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtUpdateQueue(self, queue_id: int, percentage: int, priority: int, ring: Any,
                          size: int, event: Any) -> int:
        queue = self.queues.get(int(queue_id))
        if queue is None:
            return self.lib.HSAKMT_STATUS_INVALID_HANDLE
        queue.set_active(percentage > 0)
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtDestroyQueue(self, queue_id: int) -> int:
        with self._lock:
            queue = self.queues.pop(int(queue_id), None)
        if queue is None:
            return self.lib.HSAKMT_STATUS_INVALID_HANDLE
        queue.stop()
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtSetQueueCUMask(self, queue_id: int, count: int, mask: Any) -> int:
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtAllocQueueGWS(self, queue_id: int, count: int, first: Any) -> int:
        return self.lib.HSAKMT_STATUS_NOT_SUPPORTED

    # -- events --------------------------------------------------------------------------------

    def hsaKmtCreateEvent(self, descriptor: Any, manual_reset: bool, is_signaled: bool,
                          out: Any) -> int:
        ffi = self.ffi
        with self._event_cond:
            event_id = self._next_event_id
            if event_id >= self._event_page.size:
                return self.lib.HSAKMT_STATUS_OUT_OF_RESOURCES
            self._next_event_id += 1
            cdata = ffi.new("HsaEvent *")
            mailbox = self._event_page.ctypes.data + 8 * event_id
            cdata.EventId = event_id
            cdata.EventData.EventType = descriptor.EventType
            cdata.EventData.HWData1 = event_id
            cdata.EventData.HWData2 = mailbox
            event = KfdEvent(event_id, int(descriptor.EventType), bool(manual_reset), cdata,
                             mailbox, bool(is_signaled))
            self._events[event_id] = event
            self._event_by_cdata[int(ffi.cast("uintptr_t", cdata))] = event
        out[0] = cdata
        return self.lib.HSAKMT_STATUS_SUCCESS

    def _event(self, cdata: Any) -> KfdEvent | None:
        return self._event_by_cdata.get(int(self.ffi.cast("uintptr_t", cdata)))

    def hsaKmtDestroyEvent(self, cdata: Any) -> int:
        with self._event_cond:
            event = self._event(cdata)
            if event is None:
                return self.lib.HSAKMT_STATUS_INVALID_HANDLE
            del self._event_by_cdata[int(self.ffi.cast("uintptr_t", cdata))]
            del self._events[event.event_id]
        return self.lib.HSAKMT_STATUS_SUCCESS

    def hsaKmtSetEvent(self, cdata: Any) -> int:
        event = self._event(cdata)
        if event is None:
            return self.lib.HSAKMT_STATUS_INVALID_HANDLE
        self.set_event(event.event_id)
        return self.lib.HSAKMT_STATUS_SUCCESS

    def set_event(self, event_id: int) -> None:
        """Signal event ``event_id`` (the interrupt for a signal with that event id).

        As the KFD does (kfd_events.c, set_event): every thread waiting on the event wakes; an
        auto-reset event stays set only when nobody was waiting, for the next wait to consume.
        """
        with self._event_cond:
            event = self._events.get(event_id)
            if event is not None:
                event.generation += 1
                event.signaled = event.manual_reset or event.waiters == 0
                self._event_cond.notify_all()

    def hsaKmtWaitOnEvent(self, cdata: Any, milliseconds: int) -> int:
        return self._wait([cdata], True, milliseconds)

    def hsaKmtWaitOnMultipleEvents(self, array: Any, count: int, wait_all: bool,
                                   milliseconds: int) -> int:
        return self._wait([array[i] for i in range(count)], bool(wait_all), milliseconds)

    def _wait(self, cdatas: list, wait_all: bool, milliseconds: int) -> int:
        """Wait as the KFD does (kfd_events.c, kfd_wait_on_events), but never longer than
        :data:`KFD_WAIT_SLICE_MS`: a longer wait returns HSAKMT_STATUS_WAIT_TIMEOUT early.

        Why the bound: an auto-reset event set while nobody sleeps on it stays set for the next
        wait, and any thread's wait consumes it (init_event_waiter_get_status). ROCr 5.2 gives
        every queue's queue_inactive_signal one shared event (AqlQueue::queue_event_,
        amd_aql_queue.cpp). ~AqlQueue stores 0x8000000000000000 there and waits (timeout
        0xFFFFFFFE ms, InterruptSignal::WaitRelaxed) for the async-events thread's
        DynamicScratchHandler to store -1. If that store's hsaKmtSetEvent comes after the
        destructor last read the signal but before it sleeps, the set stays pending, the async
        thread (Runtime::AsyncEventsLoop -> Signal::WaitAny) goes back to sleep on the same event
        for the other queues' signals -- ROCr's utility queue is always one -- and consumes it,
        and the destructor then sleeps forever. The real KFD loses this wake-up too: later
        KFDs (ioctl 1.14) added event ages for it, and ROCr's change that uses them says that
        without them "race condition can cause some threads to sleep without wakeup"; 5.2's only
        guard, letting one waiter per Signal sleep, does not cover two Signals on one event. The
        simulator makes the window wide (the GIL can delay a thread's entry into this function by
        milliseconds), so a wait here is bounded: ROCr's two callers (WaitRelaxed, WaitAny)
        ignore the status and re-read their signals after every return, so an early return is
        one more poll, and a lost wake-up costs at most one slice.
        """
        lib = self.lib
        events = [self._event(c) for c in cdatas]
        if any(e is None for e in events):
            return lib.HSAKMT_STATUS_INVALID_HANDLE
        deadline = time.monotonic() + min(milliseconds, KFD_WAIT_SLICE_MS) / 1e3
        with self._event_cond:
            seen = [e.generation for e in events]
            for e in events:
                e.waiters += 1
            try:
                while True:
                    ready = [e for e, g in zip(events, seen) if e.signaled or e.generation != g]
                    if (wait_all and len(ready) == len(events)) or (not wait_all and ready):
                        for e in ready:
                            if not e.manual_reset:
                                e.signaled = False
                        return lib.HSAKMT_STATUS_SUCCESS
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return lib.HSAKMT_STATUS_WAIT_TIMEOUT
                    self._event_cond.wait(remaining)
            finally:
                for e in events:
                    e.waiters -= 1


def _put_name(props: Any, name: str) -> None:
    for i, ch in enumerate(name[:63]):
        props.MarketingName[i] = ord(ch)


def _gfx_version(name: str) -> tuple[int, int, int]:
    """gfx90a -> (9, 0, 10); gfx1100 -> (11, 0, 0): the last two digits are hex (LLVM's naming)."""
    digits = name[3:]
    return int(digits[:-2]), int(digits[-2], 16), int(digits[-1], 16)


def _host_memory_size() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 16 << 30


def _address(ffi: Any, pointer: Any) -> int:
    return int(ffi.cast("uintptr_t", pointer))


def real_thunk_path() -> str | None:
    """Where the real ``libhsakmt.so.1`` is ($ROCM_PATH/lib, /opt/rocm/lib, the system's library
    directories), or None."""
    import sysconfig

    roots = [os.environ.get("ROCM_PATH", ""), "/opt/rocm"]
    dirs = [os.path.join(r, "lib") for r in roots if r]
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        dirs += [f"/usr/lib/{multiarch}", f"/lib/{multiarch}"]
    dirs += ["/usr/lib64", "/usr/lib", "/lib64", "/lib"]
    for directory in dirs:
        candidate = os.path.join(directory, "libhsakmt.so.1")
        if os.path.exists(candidate):
            return candidate
    return None


def install(ffi: Any, lib: Any) -> None:
    """Bind every export of the embedded library (at its first call): to the attached device,
    or, with none attached, to the real thunk (``hsapy_real_*``), so that a process which loaded
    this library without asking for the simulated device runs the real runtime unchanged."""
    trace = bool(os.environ.get(TRACE_ENV))
    real = real_thunk_path()
    if real is not None:
        lib.hsapy_set_real_thunk(real.encode())
    error = lib.HSAKMT_STATUS_ERROR

    def make(name: str):
        forward = getattr(lib, "hsapy_real_" + name)

        def export(*args: Any) -> int:
            device = _device
            if device is None:
                global _real_open
                status = forward(*args)
                if status == 0 and name in ("hsaKmtOpenKFD", "hsaKmtCloseKFD"):
                    _real_open = name == "hsaKmtOpenKFD"
                if trace:
                    print(f"[thunk] {name}{_brief(args)} -> {status} (real thunk)",
                          file=sys.stderr, flush=True)
                return status
            if device.lib is None:
                device.bind(ffi, lib)
            try:
                status = getattr(device, name)(*args)
            except Exception:
                text = traceback.format_exc()
                device.errors.append(f"{name}: {text}")
                print(f"[thunk] {name} failed:\n{text}", file=sys.stderr, flush=True)
                return error
            if trace:
                print(f"[thunk] {name}{_brief(args)} -> {status}", file=sys.stderr, flush=True)
            return status
        export.__name__ = name
        return export

    for name, _ in prototypes():
        ffi.def_extern(name=name, error=error)(make(name))


def _brief(args: tuple) -> str:
    return "(" + ", ".join(str(a) if isinstance(a, (int, bool)) else type(a).__name__
                           for a in args) + ")"
