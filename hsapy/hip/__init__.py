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

One module per job: ``errors`` (hipError_t, HipError, the per-call error recording and the
argument checks), ``handles`` (Stream, Event, Module, HipGraph, GraphExec, MemPool and the
value types) and ``runtime`` (HipRuntime, one method per HIP call). Import from ``hsapy.hip``.
"""
from __future__ import annotations

from hsapy.hip.errors import HipError, hipError_t
from hsapy.hip.handles import (
    DeviceProp,
    Event,
    GraphExec,
    HipGraph,
    MemPool,
    Module,
    Stream,
    TraceEntry,
    hipMemcpyKind,
)
from hsapy.hip.runtime import MEMSET_SOURCE, HipRuntime

__all__ = ["HipRuntime", "HipError", "hipError_t", "hipMemcpyKind", "DeviceProp", "Stream",
           "Event", "Module", "HipGraph", "GraphExec", "MemPool", "TraceEntry", "MEMSET_SOURCE"]
