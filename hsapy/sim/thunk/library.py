"""Builds the simulated thunk: ``libhsakmt.so.1`` whose hsaKmt* functions are Python.

cffi's embedding mode turns the declarations below into a C shared library whose exported
functions call into the Python interpreter of the process that loads it
(:mod:`hsapy.sim.thunk.kfd` serves them). The library is compiled with the system C compiler
against the thunk's own headers (``hsakmt.h`` / ``hsakmttypes.h``, Debian package
libhsakmt-dev), so every struct layout, enum value and bit-field position comes from the header:
the declarations here name only the members the simulated thunk reads or writes (cffi's ``...``
lets the compiler fill in the rest), and bit-fields are reached through masks the C side computes
from the header's own definitions (``hsapy_field_mask``).

It is linked WITHOUT libpython: the process that loads it is always a Python process (it is
loaded by :func:`hsapy.sim.thunk.load` before ROCr), whose executable or libpython provides the
interpreter's symbols. That works alike for a distribution Python (statically linked,
symbols exported) and a shared-library build (pyenv's --enable-shared).

Every exported symbol carries the version node ``HSAKMT_1``: libhsa-runtime64 imports them as
``hsaKmtOpenKFD@HSAKMT_1`` (``nm -D``), and the dynamic loader refuses a libhsakmt.so.1 that does
not define that version.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import cffi

from hsapy.errors import LibraryLoadError

__all__ = ["EXPORTS", "FIELD_MASKS", "SONAME", "build", "library_path", "ThunkBuildError"]

SONAME = "libhsakmt.so.1"
MODULE_NAME = "_hsapy_sim_thunk"
HEADER = "hsakmt.h"

# Types the simulated thunk uses: only the members it touches; ``...`` means "and whatever else the
# header declares" (layouts come from hsakmttypes.h when the library is compiled).
CDEF_TYPES = """
typedef uint8_t HSAuint8;
typedef uint16_t HSAuint16;
typedef uint32_t HSAuint32;
typedef uint64_t HSAuint64;
typedef int32_t HSAint32;
typedef int64_t HSAint64;
typedef HSAuint64 HSA_QUEUEID;
typedef HSAuint32 HSA_EVENTID;

typedef enum {
    HSAKMT_STATUS_SUCCESS, HSAKMT_STATUS_ERROR, HSAKMT_STATUS_INVALID_PARAMETER,
    HSAKMT_STATUS_INVALID_HANDLE, HSAKMT_STATUS_INVALID_NODE_UNIT, HSAKMT_STATUS_NO_MEMORY,
    HSAKMT_STATUS_BUFFER_TOO_SMALL, HSAKMT_STATUS_NOT_IMPLEMENTED, HSAKMT_STATUS_NOT_SUPPORTED,
    HSAKMT_STATUS_UNAVAILABLE, HSAKMT_STATUS_OUT_OF_RESOURCES,
    HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED, HSAKMT_STATUS_KERNEL_ALREADY_OPENED,
    HSAKMT_STATUS_WAIT_FAILURE, HSAKMT_STATUS_WAIT_TIMEOUT,
    HSAKMT_STATUS_MEMORY_ALREADY_REGISTERED, HSAKMT_STATUS_MEMORY_NOT_REGISTERED, ...
} HSAKMT_STATUS;

typedef enum {
    HSA_QUEUE_COMPUTE, HSA_QUEUE_SDMA, HSA_QUEUE_SDMA_XGMI, HSA_QUEUE_COMPUTE_AQL, ...
} HSA_QUEUE_TYPE;
typedef enum { HSA_QUEUE_PRIORITY_NORMAL, ... } HSA_QUEUE_PRIORITY;
typedef enum {
    HSA_HEAPTYPE_SYSTEM, HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC, HSA_HEAPTYPE_FRAME_BUFFER_PRIVATE,
    HSA_HEAPTYPE_GPU_GDS, HSA_HEAPTYPE_GPU_LDS, HSA_HEAPTYPE_GPU_SCRATCH,
    HSA_HEAPTYPE_DEVICE_SVM, HSA_HEAPTYPE_MMIO_REMAP, ...
} HSA_HEAPTYPE;
typedef enum { HSA_IOLINKTYPE_PCIEXPRESS, ... } HSA_IOLINKTYPE;
typedef enum {
    HSA_EVENTTYPE_SIGNAL, HSA_EVENTTYPE_NODECHANGE, HSA_EVENTTYPE_DEVICESTATECHANGE,
    HSA_EVENTTYPE_HW_EXCEPTION, HSA_EVENTTYPE_SYSTEM_EVENT, HSA_EVENTTYPE_DEBUG_EVENT,
    HSA_EVENTTYPE_PROFILE_EVENT, HSA_EVENTTYPE_QUEUE_EVENT, HSA_EVENTTYPE_MEMORY, ...
} HSA_EVENTTYPE;
typedef enum {
    HSA_POINTER_UNKNOWN, HSA_POINTER_ALLOCATED, HSA_POINTER_REGISTERED_USER, ...
} HSA_POINTER_TYPE;

typedef struct { HSAuint32 KernelInterfaceMajorVersion; HSAuint32 KernelInterfaceMinorVersion;
                 ...; } HsaVersionInfo;
typedef struct { HSAuint32 NumNodes; HSAuint32 PlatformOem; HSAuint32 PlatformId;
                 HSAuint32 PlatformRev; ...; } HsaSystemProperties;
typedef struct { HSAuint32 Value; ...; } HSA_CAPABILITY;
typedef struct { HSAuint32 Value; ...; } HSA_ENGINE_ID;
typedef struct { HSAuint32 Value; ...; } HSA_ENGINE_VERSION;
typedef struct { HSAuint64 Value; ...; } HSA_DEBUG_PROPERTIES;
typedef struct { HSAuint32 Value; ...; } HsaMemFlags;
typedef struct { HSAuint32 Value; ...; } HsaMemMapFlags;
typedef struct { HSAuint32 MemoryProperty; ...; } HSA_MEMORYPROPERTY;
typedef struct { HSAuint32 LinkProperty; ...; } HSA_LINKPROPERTY;
typedef struct { HSAuint32 Value; ...; } HsaCacheType;

typedef struct {
    HSAuint32 NumCPUCores; HSAuint32 NumFComputeCores; HSAuint32 NumMemoryBanks;
    HSAuint32 NumCaches; HSAuint32 NumIOLinks; HSAuint32 CComputeIdLo; HSAuint32 FComputeIdLo;
    HSA_CAPABILITY Capability; HSAuint32 MaxWavesPerSIMD; HSAuint32 LDSSizeInKB;
    HSAuint32 GDSSizeInKB; HSAuint32 WaveFrontSize; HSAuint32 NumShaderBanks;
    HSAuint32 NumArrays; HSAuint32 NumCUPerArray; HSAuint32 NumSIMDPerCU;
    HSAuint32 MaxSlotsScratchCU; HSA_ENGINE_ID EngineId; HSAuint16 VendorId; HSAuint16 DeviceId;
    HSAuint32 LocationId; HSAuint64 LocalMemSize; HSAuint32 MaxEngineClockMhzFCompute;
    HSAuint32 MaxEngineClockMhzCCompute; HSAint32 DrmRenderMinor; HSAuint16 MarketingName[64];
    HSAuint8 AMDName[64]; HSA_ENGINE_VERSION uCodeEngineVersions;
    HSA_DEBUG_PROPERTIES DebugProperties; HSAuint64 HiveID; HSAuint32 NumSdmaEngines;
    HSAuint32 NumSdmaXgmiEngines; HSAuint8 NumSdmaQueuesPerEngine; HSAuint8 NumCpQueues;
    HSAuint8 NumGws; HSAuint32 Domain; HSAuint64 UniqueID; ...;
} HsaNodeProperties;

typedef struct {
    HSA_HEAPTYPE HeapType; HSAuint64 SizeInBytes; HSA_MEMORYPROPERTY Flags; HSAuint32 Width;
    HSAuint32 MemoryClockMax; HSAuint64 VirtualBaseAddress; ...;
} HsaMemoryProperties;

typedef struct {
    HSAuint32 ProcessorIdLow; HSAuint32 CacheLevel; HSAuint32 CacheSize; HSAuint32 CacheLineSize;
    HSAuint32 CacheLinesPerTag; HSAuint32 CacheAssociativity; HSAuint32 CacheLatency;
    HsaCacheType CacheType; HSAuint32 SiblingMap[256]; ...;
} HsaCacheProperties;

typedef struct {
    HSA_IOLINKTYPE IoLinkType; HSAuint32 VersionMajor; HSAuint32 VersionMinor;
    HSAuint32 NodeFrom; HSAuint32 NodeTo; HSAuint32 Weight; HSAuint32 MinimumLatency;
    HSAuint32 MaximumLatency; HSAuint32 MinimumBandwidth; HSAuint32 MaximumBandwidth;
    HSAuint32 RecTransferSize; HSA_LINKPROPERTY Flags; ...;
} HsaIoLinkProperties;

typedef struct {
    HSA_QUEUEID QueueId; HSAuint64 QueueDoorBell; HSAuint64 QueueWptrValue;
    HSAuint64 QueueRptrValue; ...;
} HsaQueueResource;

typedef struct {
    HSA_EVENTTYPE EventType; HSAuint64 HWData1; HSAuint64 HWData2; HSAuint32 HWData3; ...;
} HsaEventData;
typedef struct { HSA_EVENTID EventId; HsaEventData EventData; ...; } HsaEvent;
typedef struct { HSA_EVENTTYPE EventType; HSAuint32 NodeId; ...; } HsaEventDescriptor;

typedef struct {
    HSAuint64 GPUClockCounter; HSAuint64 CPUClockCounter; HSAuint64 SystemClockCounter;
    HSAuint64 SystemClockFrequencyHz; ...;
} HsaClockCounters;

typedef struct {
    HSA_POINTER_TYPE Type; HSAuint32 Node; HsaMemFlags MemFlags; void *CPUAddress;
    HSAuint64 GPUAddress; HSAuint64 SizeInBytes; HSAuint32 NRegisteredNodes;
    HSAuint32 NMappedNodes; const HSAuint32 *RegisteredNodes; const HSAuint32 *MappedNodes;
    void *UserData; ...;
} HsaPointerInfo;

typedef struct { ...; } HsaGpuTileConfig;
typedef struct { ...; } HsaSharedMemoryHandle;
typedef struct { ...; } HsaGraphicsResourceInfo;
typedef struct { ...; } HSA_SVM_ATTRIBUTE;

/* C helpers (HELPERS_SOURCE) */
uint64_t hsapy_field_mask(int which);
uint64_t hsapy_atomic_load64(uint64_t address);
void hsapy_atomic_store64(uint64_t address, uint64_t value);
int64_t hsapy_atomic_add64(uint64_t address, int64_t value);
uint64_t hsapy_atomic_cas64(uint64_t address, uint64_t expected, uint64_t value);
uint32_t hsapy_atomic_load32(uint64_t address);
void hsapy_atomic_store32(uint64_t address, uint32_t value);
"""

# Every hsaKmt* function libhsa-runtime64 5.2.3 imports (`nm -D libhsa-runtime64.so.1 | grep
# hsaKmt`), with the prototypes of hsakmt.h.
EXPORTS = """
HSAKMT_STATUS hsaKmtOpenKFD(void);
HSAKMT_STATUS hsaKmtCloseKFD(void);
HSAKMT_STATUS hsaKmtGetVersion(HsaVersionInfo *VersionInfo);
HSAKMT_STATUS hsaKmtAcquireSystemProperties(HsaSystemProperties *SystemProperties);
HSAKMT_STATUS hsaKmtReleaseSystemProperties(void);
HSAKMT_STATUS hsaKmtGetNodeProperties(HSAuint32 NodeId, HsaNodeProperties *NodeProperties);
HSAKMT_STATUS hsaKmtGetNodeMemoryProperties(HSAuint32 NodeId, HSAuint32 NumBanks,
                                            HsaMemoryProperties *MemoryProperties);
HSAKMT_STATUS hsaKmtGetNodeCacheProperties(HSAuint32 NodeId, HSAuint32 ProcessorId,
                                           HSAuint32 NumCaches,
                                           HsaCacheProperties *CacheProperties);
HSAKMT_STATUS hsaKmtGetNodeIoLinkProperties(HSAuint32 NodeId, HSAuint32 NumIoLinks,
                                            HsaIoLinkProperties *IoLinkProperties);
HSAKMT_STATUS hsaKmtGetXNACKMode(HSAint32 *enable);
HSAKMT_STATUS hsaKmtSetXNACKMode(HSAint32 enable);
HSAKMT_STATUS hsaKmtRuntimeEnable(void *rDebug, bool setupTtmp);
HSAKMT_STATUS hsaKmtRuntimeDisable(void);
HSAKMT_STATUS hsaKmtGetTileConfig(HSAuint32 NodeId, HsaGpuTileConfig *config);
HSAKMT_STATUS hsaKmtGetClockCounters(HSAuint32 NodeId, HsaClockCounters *Counters);
HSAKMT_STATUS hsaKmtSetTrapHandler(HSAuint32 NodeId, void *TrapHandlerBaseAddress,
                                   HSAuint64 TrapHandlerSizeInBytes, void *TrapBufferBaseAddress,
                                   HSAuint64 TrapBufferSizeInBytes);
HSAKMT_STATUS hsaKmtSetMemoryPolicy(HSAuint32 Node, HSAuint32 DefaultPolicy,
                                    HSAuint32 AlternatePolicy, void *MemoryAddressAlternate,
                                    HSAuint64 MemorySizeInBytes);
HSAKMT_STATUS hsaKmtAllocMemory(HSAuint32 PreferredNode, HSAuint64 SizeInBytes,
                                HsaMemFlags MemFlags, void **MemoryAddress);
HSAKMT_STATUS hsaKmtFreeMemory(void *MemoryAddress, HSAuint64 SizeInBytes);
HSAKMT_STATUS hsaKmtRegisterMemoryWithFlags(void *MemoryAddress, HSAuint64 MemorySizeInBytes,
                                            HsaMemFlags MemFlags);
HSAKMT_STATUS hsaKmtDeregisterMemory(void *MemoryAddress);
HSAKMT_STATUS hsaKmtMapMemoryToGPU(void *MemoryAddress, HSAuint64 MemorySizeInBytes,
                                   HSAuint64 *AlternateVAGPU);
HSAKMT_STATUS hsaKmtMapMemoryToGPUNodes(void *MemoryAddress, HSAuint64 MemorySizeInBytes,
                                        HSAuint64 *AlternateVAGPU, HsaMemMapFlags MemMapFlags,
                                        HSAuint64 NumberOfNodes, HSAuint32 *NodeArray);
HSAKMT_STATUS hsaKmtUnmapMemoryToGPU(void *MemoryAddress);
HSAKMT_STATUS hsaKmtQueryPointerInfo(const void *Pointer, HsaPointerInfo *PointerInfo);
HSAKMT_STATUS hsaKmtSetMemoryUserData(const void *Pointer, void *UserData);
HSAKMT_STATUS hsaKmtShareMemory(void *MemoryAddress, HSAuint64 SizeInBytes,
                                HsaSharedMemoryHandle *SharedMemoryHandle);
HSAKMT_STATUS hsaKmtRegisterSharedHandle(const HsaSharedMemoryHandle *SharedMemoryHandle,
                                         void **MemoryAddress, HSAuint64 *SizeInBytes);
HSAKMT_STATUS hsaKmtRegisterSharedHandleToNodes(const HsaSharedMemoryHandle *SharedMemoryHandle,
                                                void **MemoryAddress, HSAuint64 *SizeInBytes,
                                                HSAuint64 NumberOfNodes, HSAuint32 *NodeArray);
HSAKMT_STATUS hsaKmtRegisterGraphicsHandleToNodes(HSAuint64 GraphicsResourceHandle,
                                                  HsaGraphicsResourceInfo *GraphicsResourceInfo,
                                                  HSAuint64 NumberOfNodes, HSAuint32 *NodeArray);
HSAKMT_STATUS hsaKmtSVMGetAttr(void *start_addr, HSAuint64 size, unsigned int nattr,
                               HSA_SVM_ATTRIBUTE *attrs);
HSAKMT_STATUS hsaKmtSVMSetAttr(void *start_addr, HSAuint64 size, unsigned int nattr,
                               HSA_SVM_ATTRIBUTE *attrs);
HSAKMT_STATUS hsaKmtCreateQueue(HSAuint32 NodeId, HSA_QUEUE_TYPE Type, HSAuint32 QueuePercentage,
                                HSA_QUEUE_PRIORITY Priority, void *QueueAddress,
                                HSAuint64 QueueSizeInBytes, HsaEvent *Event,
                                HsaQueueResource *QueueResource);
HSAKMT_STATUS hsaKmtUpdateQueue(HSA_QUEUEID QueueId, HSAuint32 QueuePercentage,
                                HSA_QUEUE_PRIORITY Priority, void *QueueAddress,
                                HSAuint64 QueueSize, HsaEvent *Event);
HSAKMT_STATUS hsaKmtDestroyQueue(HSA_QUEUEID QueueId);
HSAKMT_STATUS hsaKmtSetQueueCUMask(HSA_QUEUEID QueueId, HSAuint32 CUMaskCount,
                                   HSAuint32 *QueueCUMask);
HSAKMT_STATUS hsaKmtAllocQueueGWS(HSA_QUEUEID QueueId, HSAuint32 nGWS, HSAuint32 *firstGWS);
HSAKMT_STATUS hsaKmtCreateEvent(HsaEventDescriptor *EventDesc, bool ManualReset,
                                bool IsSignaled, HsaEvent **Event);
HSAKMT_STATUS hsaKmtDestroyEvent(HsaEvent *Event);
HSAKMT_STATUS hsaKmtSetEvent(HsaEvent *Event);
HSAKMT_STATUS hsaKmtWaitOnEvent(HsaEvent *Event, HSAuint32 Milliseconds);
HSAKMT_STATUS hsaKmtWaitOnMultipleEvents(HsaEvent *Events[], HSAuint32 NumEvents,
                                         bool WaitOnAll, HSAuint32 Milliseconds);
"""

# Bit-fields whose positions come from the header: (union type, member path). The C side sets the
# member to all ones in a zeroed union and returns the union's Value (hsapy_field_mask(i)).
FIELD_MASKS: tuple[tuple[str, str, str], ...] = (
    ("HSA_CAPABILITY", "ui32.QueueSizePowerOfTwo", "Value"),
    ("HSA_CAPABILITY", "ui32.QueueSize32bit", "Value"),
    ("HSA_CAPABILITY", "ui32.DoorbellType", "Value"),
    ("HSA_CAPABILITY", "ui32.WatchPointsSupported", "Value"),
    ("HSA_CAPABILITY", "ui32.SRAM_EDCSupport", "Value"),
    ("HSA_CAPABILITY", "ui32.SVMAPISupported", "Value"),
    ("HSA_CAPABILITY", "ui32.CoherentHostAccess", "Value"),
    ("HSA_CAPABILITY", "ui32.HSAMMUPresent", "Value"),
    ("HSA_ENGINE_ID", "ui32.uCode", "Value"),
    ("HSA_ENGINE_ID", "ui32.Major", "Value"),
    ("HSA_ENGINE_ID", "ui32.Minor", "Value"),
    ("HSA_ENGINE_ID", "ui32.Stepping", "Value"),
    ("HsaMemFlags", "ui32.NonPaged", "Value"),
    ("HsaMemFlags", "ui32.CachePolicy", "Value"),
    ("HsaMemFlags", "ui32.ReadOnly", "Value"),
    ("HsaMemFlags", "ui32.PageSize", "Value"),
    ("HsaMemFlags", "ui32.HostAccess", "Value"),
    ("HsaMemFlags", "ui32.NoSubstitute", "Value"),
    ("HsaMemFlags", "ui32.GDSMemory", "Value"),
    ("HsaMemFlags", "ui32.Scratch", "Value"),
    ("HsaMemFlags", "ui32.AtomicAccessFull", "Value"),
    ("HsaMemFlags", "ui32.ExecuteAccess", "Value"),
    ("HsaMemFlags", "ui32.CoarseGrain", "Value"),
    ("HsaMemFlags", "ui32.AQLQueueMemory", "Value"),
    ("HsaMemFlags", "ui32.FixedAddress", "Value"),
    ("HsaMemFlags", "ui32.Uncached", "Value"),
    ("HSA_LINKPROPERTY", "ui32.Override", "LinkProperty"),
    ("HsaCacheType", "ui32.Data", "Value"),
    ("HsaCacheType", "ui32.Instruction", "Value"),
    ("HsaCacheType", "ui32.CPU", "Value"),
    ("HsaCacheType", "ui32.HSACU", "Value"),
)


def prototypes() -> list[tuple[str, list[tuple[str, str]]]]:
    """(name, [(C type, parameter name), ...]) of every export, parsed from EXPORTS."""
    result = []
    for match in re.finditer(r"HSAKMT_STATUS\s+(hsaKmt\w+)\(([^)]*)\);", EXPORTS):
        params = []
        text = " ".join(match.group(2).split())
        if text != "void":
            for part in text.split(","):
                part = part.strip()
                array = part.endswith("[]")
                part = part.removesuffix("[]")
                name = re.search(r"(\w+)$", part).group(1)
                ctype = part[:-len(name)].strip() + (" *" if array else "")
                params.append((ctype, name))
        result.append((match.group(1), params))
    return result


def _forwarders() -> tuple[str, str]:
    """C functions ``hsapy_real_<export>`` that call the same function of the real thunk
    (dlopened by path), and their declarations for the cdef."""
    decls, defs = [], []
    for name, params in prototypes():
        signature = ", ".join(f"{t} {n}" for t, n in params) or "void"
        types = ", ".join(t for t, _ in params) or "void"
        args = ", ".join(n for _, n in params)
        decls.append(f"HSAKMT_STATUS hsapy_real_{name}({signature});")
        defs.append(
            f"static HSAKMT_STATUS hsapy_real_{name}({signature}) {{\n"
            f"    static HSAKMT_STATUS (*f)({types});\n"
            f"    if (f == NULL) f = (HSAKMT_STATUS (*)({types}))hsapy_real_symbol(\"{name}\");\n"
            f"    if (f == NULL) return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;\n"
            f"    return f({args});\n}}")
    return "\n".join(decls), "\n".join(defs)


def _helpers_source() -> str:
    cases = "\n".join(
        f"    case {i}: {{ {union} v; memset(&v, 0, sizeof v); v.{member} = -1; "
        f"return (uint64_t)v.{value}; }}"
        for i, (union, member, value) in enumerate(FIELD_MASKS))
    return f"""
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <{HEADER}>

/* The mask of bit-field FIELD_MASKS[which] as the header lays it out. */
static uint64_t hsapy_field_mask(int which) {{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverflow"
    switch (which) {{
{cases}
    }}
#pragma GCC diagnostic pop
    return 0;
}}

/* Atomics on memory the real runtime shares with the simulated device (signals, queue indices):
   the runtime's own threads update them with CPU atomics while the GIL is not held. */
static uint64_t hsapy_atomic_load64(uint64_t a) {{
    return __atomic_load_n((uint64_t *)(uintptr_t)a, __ATOMIC_ACQUIRE); }}
static void hsapy_atomic_store64(uint64_t a, uint64_t v) {{
    __atomic_store_n((uint64_t *)(uintptr_t)a, v, __ATOMIC_RELEASE); }}
static int64_t hsapy_atomic_add64(uint64_t a, int64_t v) {{
    return __atomic_fetch_add((int64_t *)(uintptr_t)a, v, __ATOMIC_ACQ_REL); }}
static uint64_t hsapy_atomic_cas64(uint64_t a, uint64_t expected, uint64_t v) {{
    __atomic_compare_exchange_n((uint64_t *)(uintptr_t)a, &expected, v, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    return expected; }}
/* The real thunk, for a process that loaded this library but attached no simulated device:
   every export then forwards to it (hsapy_real_*), so the real runtime behaves as it would
   without this library. Loaded by path (RTLD_LOCAL): its soname is this library's. */
static char hsapy_real_path[4096];
static void *hsapy_real_symbol(const char *name) {{
    static void *handle;
    if (handle == NULL && hsapy_real_path[0])
        handle = dlopen(hsapy_real_path, RTLD_NOW | RTLD_LOCAL);
    return handle == NULL ? NULL : dlsym(handle, name);
}}
static void hsapy_set_real_thunk(const char *path) {{
    strncpy(hsapy_real_path, path, sizeof hsapy_real_path - 1); }}
{_forwarders()[1]}

static uint32_t hsapy_atomic_load32(uint64_t a) {{
    return __atomic_load_n((uint32_t *)(uintptr_t)a, __ATOMIC_ACQUIRE); }}
static void hsapy_atomic_store32(uint64_t a, uint32_t v) {{
    __atomic_store_n((uint32_t *)(uintptr_t)a, v, __ATOMIC_RELEASE); }}
"""


# Runs once, inside the interpreter of the loading process, at the first call of an export.
INIT_CODE = f"""
from {MODULE_NAME} import ffi, lib
import hsapy.sim.thunk.kfd
hsapy.sim.thunk.kfd.install(ffi, lib)
"""

VERSION_SCRIPT = "HSAKMT_1 {\n  global: hsaKmt*;\n  local: *;\n};\n"


class ThunkBuildError(LibraryLoadError):
    """The simulated thunk could not be compiled; the message says what is missing."""


def _builder() -> cffi.FFI:
    builder = cffi.FFI()
    builder.cdef(CDEF_TYPES + "\nvoid hsapy_set_real_thunk(const char *path);\n" + _forwarders()[0])
    builder.embedding_api(EXPORTS)
    builder.set_source(MODULE_NAME, _helpers_source())
    builder.embedding_init_code(INIT_CODE)
    return builder


def _key() -> str:
    parts = [CDEF_TYPES, _forwarders()[0], EXPORTS, _helpers_source(), INIT_CODE, VERSION_SCRIPT,
             cffi.__version__,
             sys.version, _header_path() or ""]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def _header_path() -> str | None:
    for root in (os.environ.get("ROCM_PATH"), "/opt/rocm", "/usr"):
        if root and Path(root, "include", HEADER).exists():
            return str(Path(root, "include"))
    return None


def library_path() -> Path:
    """Where :func:`build` puts the library for this interpreter and these declarations."""
    from hsapy.toolchain import cache_dir

    return cache_dir() / "thunk" / _key() / SONAME


def _workspace(target: Path) -> tempfile.TemporaryDirectory:
    """A scratch directory beside ``target`` (so the finished library moves in atomically)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryDirectory(dir=target.parent)


def build() -> Path:
    """Compile the simulated ``libhsakmt.so.1`` into the cache (once) and return its path.

    Needs a C compiler (``cc``/``gcc``), Python's headers and ``hsakmt.h`` (Debian:
    ``apt install gcc python3-dev libhsakmt-dev``); raises :class:`ThunkBuildError` naming what is
    missing.
    """
    target = library_path()
    if target.exists():
        return target
    include = _header_path()
    if include is None:
        raise ThunkBuildError("the simulated thunk needs hsakmt.h (the KFD thunk's header) to "
                              "build: install libhsakmt-dev (Debian/Ubuntu) or ROCm, or set "
                              "ROCM_PATH")
    from hsapy.toolchain.tools import host_c_compiler

    compiler, python_include = host_c_compiler()
    if not Path(python_include, "Python.h").exists():
        raise ThunkBuildError(f"the simulated thunk needs Python's headers "
                              f"({python_include}/Python.h): install python3-dev")
    if compiler is None:
        raise ThunkBuildError("the simulated thunk needs a C compiler: install gcc")
    try:
        workspace = _workspace(target)
    except OSError as cache_problem:
        # a read-only cache (or home) must not take the backend away: this process builds its
        # own copy, as the build cache then builds without storing
        from hsapy.toolchain.cache import private_dir

        try:
            target = private_dir() / "thunk" / target.parent.name / SONAME
            workspace = _workspace(target)
        except OSError as exc:
            raise ThunkBuildError(
                f"the simulated thunk cannot be built: the cache directory cannot be written "
                f"({cache_problem}) and there is no writable temporary directory ({exc}); set "
                "HSAPY_CACHE_DIR to a writable directory") from exc
    with workspace as tmp:
        source = Path(tmp, MODULE_NAME + ".c")
        with contextlib.redirect_stdout(io.StringIO()):   # cffi prints "generating <file>"
            _builder().emit_c_code(str(source))
        script = Path(tmp, "hsakmt.map")
        script.write_text(VERSION_SCRIPT)
        output = Path(tmp, SONAME)
        command = [compiler, "-shared", "-fPIC", "-O2", "-pthread", f"-I{python_include}",
                   f"-I{include}", str(source), "-o", str(output), f"-Wl,-soname,{SONAME}",
                   f"-Wl,--version-script={script}", "-ldl"]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise ThunkBuildError("compiling the simulated thunk failed:\n" + " ".join(command)
                                  + "\n" + proc.stdout + proc.stderr)
        os.replace(output, target)
    return target
