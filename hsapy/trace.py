"""Record every AQL packet hsapy publishes and write a timeline for Perfetto / chrome://tracing.

Usage::

    import hsapy.trace

    with hsapy.trace.Trace("trace.json") as t:     # or hsapy.trace.record("trace.json")
        ...                                          # create queues, launch, wait, as usual
    print(t.summary())

or, for a whole Python program, ``hsapy trace -o trace.json -- python script.py args``. Open the
file at https://ui.perfetto.dev ("Open trace file") or in chrome://tracing.

What is recorded (through ``hsapy.observers.OBSERVERS``): every packet written to any queue
(queue, index, type, decoded fields, host time), every doorbell (host time, index), and, read with
``hsa_amd_profiling_get_dispatch_time`` from each packet's completion signal, the GPU start/end
timestamps of dispatches and barriers. The file is in the Trace Event Format:

- one process per GPU agent and one thread (track) per queue, named by metadata (``M``) events;
  complete events (``X``) for packet execution from the GPU timestamps;
- a host process whose tracks (one per publishing Python thread) carry instant events (``i``)
  for packet writes and doorbells;
- flow arrows (``s``/``f``) from the packet whose completion signal a barrier depends on (the
  last packet published with that completion signal) to the barrier;
- with ``counters=True`` (the default), the dispatch slices' args carry what
  :class:`hsapy.profile.Profiler` finds: on the simulator rocprof-named counters and exact
  figures (``counters``), everywhere the occupancy (``occupancy``) -- docs/profile.md.

Limits, and how they show:

- Timestamps need profiling. The tracer enables it on every queue created inside the context
  (through the ``queue_created`` observer event) and on any other queue the first time that
  queue publishes, so the first packet(s) of a queue created before the trace may have none.
  Profiling is left enabled on those queues.
- A packet without a completion signal has no timestamps of its own (e.g. the dispatches inside
  ``PreparedDispatch.batch``; barriers published with ``completion_signal=0``). A barrier
  without one is drawn as an *inferred* slice: from the end of the packet before it on its queue
  (or its own write, when later) to the start of the packet after it (the barrier ran somewhere
  inside; args say so).
- A completion signal's timestamps are overwritten when the signal is reused: the tracer reads
  them when hsapy's dispatch path announces a reuse, when another packet is published with the
  same completion signal, when a queue or runtime closes, and at the end of the trace (waiting
  at most ``harvest_timeout`` seconds for packets still running). Two packets in flight at once
  with one completion signal keep only the last timestamps.
- GPU times are converted to microseconds with ``runtime.timestamp_frequency`` and placed on the
  host's time axis by one calibration per runtime (host clock read around
  ``HSA_SYSTEM_INFO_TIMESTAMP``); the drift measured at the end is in ``otherData``. On the
  simulator the GPU clock is simulated (host wall-clock of the simulator), and the trace says so.
- On one queue, slices that overlap without nesting (concurrent dispatches without the barrier
  bit, on hardware) are drawn on separate lanes: extra tracks under the queue's, named
  "queue N lane 2", "lane 3" ..., so every slice keeps its true start and end.
"""
from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from hsapy import aql
from hsapy._checks import check_flag, check_output_path, check_timeout, write_text_file
from hsapy.errors import HsapyValueError
from hsapy.hsa_enums import (
    HSA_SIGNAL_CONDITION_LT,
    HSA_STATUS_SUCCESS,
    HSA_WAIT_STATE_BLOCKED,
)
from hsapy.observers import add_observer, remove_observer

__all__ = ["Trace", "record", "PacketRecord"]

HOST_PID = 1
_WAIT_SLICE_S = 0.01
_HARVEST_PER_CALL = 8   # completed packets read per observer call (keeps publishing cheap)
_EPSILON_US = 0.002     # timestamps are rounded to ns: closer than this is "at the same time"
_BARRIER_TYPES = (aql.PacketType.BARRIER_AND, aql.PacketType.BARRIER_OR)
_LANE_TID_BASE = 1000   # a queue's extra lanes get track ids 1000 * its track id + lane


@dataclass(eq=False)
class PacketRecord:
    """One packet as published: where, when (host ns), its 64 bytes, and GPU ticks once read."""

    seq: int
    queue: _QueueInfo
    index: int
    data: bytes
    host_ns: int
    thread: int
    completion: int
    deps: list[tuple[int, PacketRecord | None]] = field(default_factory=list)
    start: int | None = None      # GPU ticks (system domain)
    end: int | None = None
    harvested: bool = False
    note: str = ""
    signal_ptr: Any = None        # hsa_signal_t * of the completion signal (kept alive here)

    @property
    def type(self) -> int:
        return self.data[0]

    @property
    def kind(self) -> str:
        """dispatch, barrier-AND, barrier-OR, barrier-value, agent-dispatch or packet-type-N."""
        if self.type == aql.PacketType.KERNEL_DISPATCH:
            return "dispatch"
        if self.type == aql.PacketType.BARRIER_AND:
            return "barrier-AND"
        if self.type == aql.PacketType.BARRIER_OR:
            return "barrier-OR"
        if self.type == aql.PacketType.VENDOR_SPECIFIC and \
                self.data[2] == aql.AMD_PACKET_TYPE_BARRIER_VALUE:
            return "barrier-value"
        if self.type == aql.PacketType.AGENT_DISPATCH:
            return "agent-dispatch"
        return f"packet-type-{self.type}"

    @property
    def is_barrier(self) -> bool:
        return self.kind.startswith("barrier")


class _RuntimeInfo:
    """Per runtime: clock calibration and signal bookkeeping."""

    def __init__(self, runtime: Any, key: int) -> None:
        self.runtime = runtime
        self.key = key
        self.backend = runtime.backend
        self.is_simulated = runtime.is_simulated
        self.frequency = int(runtime.timestamp_frequency)
        self.calibration = _calibrate(runtime)
        self.end_calibration: tuple[int, int] | None = None
        self.last_times: dict[int, tuple[int, int]] = {}   # signal -> last (start, end) read


class _QueueInfo:
    """Per queue: its track and what is still to harvest."""

    def __init__(self, queue: Any, rt: _RuntimeInfo, pid: int, tid: int) -> None:
        self.queue = queue                     # strong reference while the trace is active
        self.rt = rt
        self.pid = pid
        self.tid = tid
        self.id = int(queue.id)
        self.size = int(queue.size)
        self.agent_name = queue.agent.name
        self.agent_handle = int(queue.agent.handle)
        self.address = int(queue.address)
        self.records: list[PacketRecord] = []
        self.doorbells: list[tuple[int, int, int]] = []   # (host ns, thread, index)
        self.pending: deque[PacketRecord] = deque()
        self.profiling_from_start = False
        self.lanes = 1                          # tracks its slices need (see Trace._lanes)

    def lane_tid(self, lane: int) -> int:
        """The track id of lane ``lane`` (0: the queue's own track)."""
        return self.tid if lane == 0 else _LANE_TID_BASE * self.tid + lane


def _calibrate(runtime: Any) -> tuple[int, int]:
    """(host perf_counter ns, GPU system ticks) read at (nearly) the same moment."""
    best: tuple[int, int, int] | None = None
    for _ in range(3):
        before = time.perf_counter_ns()
        ticks = int(runtime.timestamp())
        after = time.perf_counter_ns()
        if best is None or after - before < best[0]:
            best = (after - before, (before + after) // 2, ticks)
    assert best is not None
    return best[1], best[2]


class Trace:
    """Record AQL traffic while active; write Trace Event Format JSON to ``path`` on exit.

    ``path`` may be None (then call :meth:`write` or :meth:`to_json` yourself).
    ``harvest_timeout`` bounds the wait at the end for packets still running (seconds)."""

    def __init__(self, path: Any = None, harvest_timeout: float = 2.0,
                 counters: bool = True) -> None:
        self.harvest_timeout = harvest_timeout
        self.path = path         # refused now, not after the traced work
        self.profiler: Any = None
        if check_flag(counters, "Trace: counters"):
            from hsapy.profile import Profiler

            self.profiler = Profiler()
        self.records: list[PacketRecord] = []
        self._queues: dict[int, _QueueInfo] = {}
        self._runtimes: dict[int, _RuntimeInfo] = {}
        self._pending: dict[tuple[int, int], PacketRecord] = {}      # (runtime, signal) -> rec
        self._producer: dict[tuple[int, int], PacketRecord] = {}     # last packet with that
        self._agents: dict[tuple[int, int], int] = {}                 # (runtime, agent) -> pid
        self._threads: dict[int, tuple[int, str]] = {}                # ident -> (tid, name)
        self._kernel_names: dict[int, str] = {}
        self._lock = threading.RLock()
        self._origin_ns = 0
        self._end_ns = 0
        self.is_active = False
        self._events: list[dict[str, Any]] | None = None

    # -- context -----------------------------------------------------------------------------
    @property
    def harvest_timeout(self) -> float:
        """Seconds the end of the trace waits for packets still running; set to a timeout
        (checked as every wait's is)."""
        return self._harvest_timeout

    @harvest_timeout.setter
    def harvest_timeout(self, seconds: float) -> None:
        self._harvest_timeout = float(check_timeout(seconds, "Trace: harvest_timeout"))

    @property
    def path(self) -> Any:
        """Where the end of the trace writes the file (None: nowhere); set to a file path
        (checked when set, not after the traced work)."""
        return self._path

    @path.setter
    def path(self, path: Any) -> None:
        self._path = None if path is None else check_output_path(path, "Trace: path")

    def __enter__(self) -> Trace:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        if self.path is not None:
            self.write(self.path)

    def start(self) -> None:
        """Start observing (what ``with`` does on entry)."""
        if self.is_active:
            raise HsapyValueError("Trace.start: this trace is already recording")
        self._origin_ns = time.perf_counter_ns()
        self.is_active = True
        add_observer(self)
        if self.profiler is not None:
            self.profiler.start()

    def stop(self) -> None:
        """Stop observing and harvest the remaining timestamps (bounded wait)."""
        if not self.is_active:
            return
        remove_observer(self)
        if self.profiler is not None:
            self.profiler.stop()
        self.is_active = False
        try:
            self._harvest_all(self.harvest_timeout)
            for rt in self._runtimes.values():
                if rt.end_calibration is None and not rt.runtime.is_closed:
                    rt.end_calibration = _calibrate(rt.runtime)
        finally:
            self._end_ns = time.perf_counter_ns()
            for info in self._queues.values():
                info.queue = None
                info.pending.clear()
            for rt in self._runtimes.values():
                rt.runtime = None
            for rec in self.records:
                rec.signal_ptr = None
            self._pending.clear()
            self._events = None

    # -- the observer interface (hsapy.observers.OBSERVERS) ----------------------------------------
    def queue_created(self, queue: Any) -> None:
        """A queue was created while tracing: profile it from its first packet."""
        if self.is_active:
            self._see_queue(queue, created=True)

    def queue_closing(self, queue: Any) -> None:
        """A queue is about to be destroyed: read its packets' timestamps first."""
        if self.is_active:
            self._queue_closing(queue)

    def runtime_closing(self, runtime: Any) -> None:
        """A runtime is about to shut down: read its queues' timestamps first."""
        if self.is_active:
            self._runtime_closing(runtime)

    def kernel_loaded(self, kernel: Any) -> None:
        """A kernel was loaded: remember its name for its dispatch packets."""
        if self.is_active:
            self._kernel_names[int(kernel.kernel_object)] = kernel.name

    def packets_written(self, queue: Any, first: int, count: int) -> None:
        """``count`` packets from index ``first`` were published on ``queue``."""
        now = time.perf_counter_ns()
        ring, mask = queue.ring, queue.size - 1
        datas = [ring[(first + k) & mask].tobytes() for k in range(count)]
        with self._lock:
            if not self.is_active:
                return
            info = self._queues.get(id(queue)) or self._see_queue(queue)
            thread = self._thread_tid()
            for k, data in enumerate(datas):
                self._record(info, first + k, data, now, thread)
            self._harvest_ready(info)

    def doorbell(self, queue: Any, index: int) -> None:
        """The doorbell of ``queue`` is about to be rung with ``index``."""
        now = time.perf_counter_ns()
        with self._lock:
            if not self.is_active:
                return
            info = self._queues.get(id(queue)) or self._see_queue(queue)
            info.doorbells.append((now, self._thread_tid(), int(index)))
            self._harvest_ready(info)

    def signal_reused(self, handle: int) -> None:
        """A completion signal is about to be re-armed: read its packet's timestamps first.

        The dispatch path waits for that packet to complete before re-arming; when it has not
        completed yet, this waits the same way (doorbell flushed, at most 10 s) so the
        timestamps are not lost."""
        with self._lock:
            records = [self._pending.get((key, int(handle))) for key in self._runtimes]
        for rec in records:
            if rec is None or rec.harvested:
                continue
            done = self._is_done(rec) or self._wait_done(rec, 10.0, flush=True)
            with self._lock:
                if done:
                    self._read_times(rec)
                else:
                    self._give_up(rec, "completion signal re-armed before the packet completed")

    # -- bookkeeping -------------------------------------------------------------------------
    def _thread_tid(self) -> int:
        ident = threading.get_ident()
        entry = self._threads.get(ident)
        if entry is None:
            entry = self._threads[ident] = (len(self._threads) + 1,
                                            threading.current_thread().name)
        return entry[0]

    def _see_queue(self, queue: Any, created: bool = False) -> _QueueInfo:
        with self._lock:
            info = self._queues.get(id(queue))
            if info is not None:
                return info
            runtime = queue.runtime
            rt = self._runtimes.get(id(runtime))
            if rt is None:
                rt = self._runtimes[id(runtime)] = _RuntimeInfo(runtime, id(runtime))
            agent_key = (rt.key, int(queue.agent.handle))
            pid = self._agents.get(agent_key)
            if pid is None:
                pid = self._agents[agent_key] = HOST_PID + 1 + len(self._agents)
            info = _QueueInfo(queue, rt, pid, tid=len(self._queues) + 1)
            info.profiling_from_start = created
            self._queues[id(queue)] = info
        queue.enable_profiling()
        return info

    def _record(self, info: _QueueInfo, index: int, data: bytes, now: int, thread: int) -> None:
        rt = info.rt
        rec = PacketRecord(len(self.records), info, index, data, now, thread,
                           completion=int.from_bytes(data[56:64], "little"))
        if rec.type in _BARRIER_TYPES:
            handles = [int.from_bytes(data[8 + 8 * k:16 + 8 * k], "little") for k in range(5)]
        elif rec.kind == "barrier-value":
            handles = [int.from_bytes(data[8:16], "little")]
        else:
            handles = []
        rec.deps = [(h, self._producer.get((rt.key, h))) for h in handles if h]
        if rec.completion:
            key = (rt.key, rec.completion)
            older = self._pending.get(key)
            if older is not None and not older.harvested:
                # The signal is used again: the older packet must be done (or the program is
                # sharing one signal between packets in flight; _read_times rejects stale times).
                self._read_times(older)
            rec.signal_ptr = rt.runtime.ffi.new("hsa_signal_t *", {"handle": rec.completion})
            self._pending[key] = rec
            self._producer[key] = rec
            info.pending.append(rec)
        else:
            rec.harvested = True
            rec.note = "no completion signal: no GPU timestamps"
        self.records.append(rec)
        info.records.append(rec)

    # -- harvesting timestamps -----------------------------------------------------------------
    def _usable(self, rec: PacketRecord) -> bool:
        queue, runtime = rec.queue.queue, rec.queue.rt.runtime
        return queue is not None and runtime is not None and not runtime.is_closed

    def _is_done(self, rec: PacketRecord) -> bool:
        if not self._usable(rec):
            return False
        lib = rec.queue.rt.runtime.lib
        return lib.hsa_signal_load_scacquire(rec.signal_ptr[0]) < 1

    def _wait_done(self, rec: PacketRecord, timeout: float, flush: bool = False) -> bool:
        """Wait (at most ``timeout`` s, never holding the trace's lock) for the packet's
        completion signal to drop below 1; False on timeout or a queue error."""
        if not self._usable(rec):
            return False
        queue = rec.queue.queue
        lib = rec.queue.rt.runtime.lib
        if flush and not queue.is_closed:
            queue.flush()  # a packet whose doorbell was never rung would never complete
        ticks_per_s = rec.queue.rt.frequency
        deadline = time.monotonic() + timeout
        cdata = rec.signal_ptr[0]
        while True:
            remaining = deadline - time.monotonic()
            slice_s = min(max(remaining, 0.0), _WAIT_SLICE_S)
            timeout_ticks = int(slice_s * ticks_per_s) + 1
            if lib.hsa_signal_wait_scacquire(cdata, HSA_SIGNAL_CONDITION_LT, 1, timeout_ticks,
                                             HSA_WAIT_STATE_BLOCKED) < 1:
                return True
            if remaining <= 0 or queue.error is not None:
                return False

    def _read_times(self, rec: PacketRecord) -> None:
        """Read the packet's start/end ticks from its completion signal (lock held)."""
        if rec.harvested:
            return
        rec.harvested = True
        rt = rec.queue.rt
        key = (rt.key, rec.completion)
        if self._pending.get(key) is rec:
            del self._pending[key]
        if not self._usable(rec):
            rec.note = "queue or runtime closed before the timestamps were read"
            return
        runtime = rt.runtime
        times = runtime.ffi.new("hsa_amd_profiling_dispatch_time_t *")
        status = runtime.lib.hsa_amd_profiling_get_dispatch_time(
            {"handle": rec.queue.agent_handle}, rec.signal_ptr[0], times)
        start, end = int(times.start), int(times.end)
        if status != HSA_STATUS_SUCCESS or end == 0:
            rec.note = ("no GPU timestamps (profiling was not enabled yet when the packet ran, "
                        "or the runtime recorded none)")
            return
        if rt.last_times.get(rec.completion) == (start, end) or end < start:
            rec.note = "timestamps not recorded: its completion signal was reused while in flight"
            return
        rt.last_times[rec.completion] = (start, end)
        rec.start, rec.end = start, end

    def _give_up(self, rec: PacketRecord, why: str) -> None:
        rt = rec.queue.rt
        key = (rt.key, rec.completion)
        if self._pending.get(key) is rec:
            del self._pending[key]
        rec.harvested = True
        rec.note = why

    def _harvest_ready(self, info: _QueueInfo) -> None:
        """Read the timestamps of the oldest completed packets of ``info``'s queue (lock held)."""
        pending = info.pending
        for _ in range(_HARVEST_PER_CALL):
            if not pending:
                return
            rec = pending[0]
            if not rec.harvested:
                if not self._is_done(rec):
                    return
                self._read_times(rec)
            pending.popleft()

    def _harvest_queue(self, info: _QueueInfo, deadline: float) -> None:
        for rec in list(info.pending):
            if rec.harvested:
                continue
            done = self._is_done(rec) or self._wait_done(rec, max(deadline - time.monotonic(), 0))
            with self._lock:
                if done:
                    self._read_times(rec)
                else:
                    self._give_up(rec, "not completed when the trace ended (or its queue "
                                       "closed)")
        with self._lock:
            info.pending = deque(r for r in info.pending if not r.harvested)

    def _harvest_all(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for info in list(self._queues.values()):
            if info.queue is not None:
                self._harvest_queue(info, deadline)

    def _queue_closing(self, queue: Any) -> None:
        info = self._queues.get(id(queue))
        if info is not None:
            self._harvest_queue(info, time.monotonic() + min(self.harvest_timeout, 1.0))
            with self._lock:
                info.queue = None

    def _runtime_closing(self, runtime: Any) -> None:
        rt = self._runtimes.get(id(runtime))
        if rt is None:
            return
        deadline = time.monotonic() + min(self.harvest_timeout, 1.0)
        for info in list(self._queues.values()):
            if info.rt is rt and info.queue is not None:
                self._harvest_queue(info, deadline)
                info.queue = None
        rt.end_calibration = _calibrate(runtime)

    # -- the timeline --------------------------------------------------------------------------
    def _host_us(self, ns: int) -> float:
        return round((ns - self._origin_ns) / 1000.0, 3)

    def _gpu_us(self, rt: _RuntimeInfo, ticks: int) -> float:
        host_ns, ticks0 = rt.calibration
        return round((ticks - ticks0) * 1e6 / rt.frequency + (host_ns - self._origin_ns) / 1e3, 3)

    def _name(self, rec: PacketRecord) -> str:
        if rec.kind == "dispatch":
            kernel_object = int.from_bytes(rec.data[32:40], "little")
            return self._kernel_names.get(kernel_object, f"kernel {kernel_object:#x}")
        return rec.kind

    def _slices(self) -> dict[int, dict[str, Any]]:
        """Complete events by record seq: measured where timestamps exist, inferred for
        barriers without a completion signal; then spread over lanes per queue so that the
        slices of each track nest."""
        slices: dict[int, dict[str, Any]] = {}
        for info in self._queues.values():
            measured: dict[int, tuple[float, float]] = {}
            for rec in info.records:
                if rec.start is not None and rec.end is not None:
                    measured[rec.seq] = (self._gpu_us(info.rt, rec.start),
                                         self._gpu_us(info.rt, rec.end))
            ordered = sorted(info.records, key=lambda r: r.index)
            for position, rec in enumerate(ordered):
                args = {"queue": info.id, "index": rec.index, "type": rec.kind}
                if rec.seq in measured:
                    begin, end = measured[rec.seq]
                    args.update(gpu_start_us=begin, gpu_end_us=end)
                    cat = "dispatch" if rec.kind == "dispatch" else "barrier"
                elif rec.is_barrier and not rec.completion:
                    bounds = self._inferred_bounds(ordered, position, measured)
                    if bounds is None:
                        continue
                    begin, end = bounds
                    cat = "barrier"
                    args["timing"] = ("inferred: no completion signal, so no timestamps; the "
                                      "barrier ran within this interval (previous packet's end "
                                      "or its write, whichever is later, to the next packet's "
                                      "start on this queue)")
                else:
                    continue
                if rec.kind == "dispatch" and self.profiler is not None:
                    args.update(self._profile_args(info, rec))
                args["packet"] = aql.explain(rec.data).splitlines()
                slices[rec.seq] = {"name": self._name(rec), "cat": cat, "ph": "X", "ts": begin,
                                   "dur": round(max(end - begin, 0.0), 3), "pid": info.pid,
                                   "tid": info.tid, "args": args}
            info.lanes = self._lanes(slices, ordered, info)
        return slices

    def _profile_args(self, info: _QueueInfo, rec: PacketRecord) -> dict[str, Any]:
        """The dispatch's counters and occupancy, as slice args (empty when none)."""
        found = self.profiler.for_packet(info.address, rec.index)
        if found is None:
            return {}
        data = found.as_dict(instructions=0)
        out: dict[str, Any] = {}
        if "counters" in data:
            counters = data["counters"]
            counters.pop("instructions", None)
            out["counters"] = counters
        if "occupancy" in data:
            out["occupancy"] = data["occupancy"]
        return out

    def _inferred_bounds(self, ordered: list[PacketRecord], position: int,
                         measured: dict[int, tuple[float, float]]) -> tuple[float, float] | None:
        rec = ordered[position]
        before = next((measured[r.seq][1] for r in reversed(ordered[:position])
                       if r.seq in measured), None)
        after = next((measured[r.seq][0] for r in ordered[position + 1:] if r.seq in measured),
                     None)
        if after is None:
            return None
        rung = [self._host_us(ns) for ns, _t, index in rec.queue.doorbells if index >= rec.index]
        begin = before if before is not None else (min(rung) if rung else None)
        if begin is None or begin > after:
            return None
        # nor can it have started before the host wrote it
        return max(begin, min(self._host_us(rec.host_ns), after)), after

    @staticmethod
    def _lanes(slices: dict[int, dict[str, Any]], ordered: list[PacketRecord],
               info: _QueueInfo) -> int:
        """Put each slice of one queue on the first lane where it nests in or follows what is
        there (Trace Event Format tracks draw only nested slices); return the lanes used."""
        track = sorted((slices[r.seq] for r in ordered if r.seq in slices),
                       key=lambda e: (e["ts"], -e["dur"]))
        lanes: list[list[float]] = []          # per lane: ends of the slices still open
        for event in track:
            begin, end = event["ts"], event["ts"] + event["dur"]
            for lane, open_ends in enumerate(lanes):   # noqa: B007 (read after the break)
                while open_ends and open_ends[-1] <= begin + _EPSILON_US:
                    open_ends.pop()
                if not open_ends or end <= open_ends[-1] + _EPSILON_US:
                    break
            else:
                lane, open_ends = len(lanes), []
                lanes.append(open_ends)
            open_ends.append(end)
            event["tid"] = info.lane_tid(lane)
            if lane:
                event["args"]["lane"] = (f"{lane + 1}: overlapped a slice on this queue's "
                                         "track without nesting in it")
        return max(len(lanes), 1)

    def events(self) -> list[dict[str, Any]]:
        """The trace events (built once after the trace stopped)."""
        if self.is_active:
            raise HsapyValueError("Trace.events: the trace is still recording; leave the "
                                  "`with` block (or call stop()) first")
        if self._events is not None:
            return self._events
        events: list[dict[str, Any]] = []
        slices = self._slices()

        def meta(name: str, pid: int, tid: int, value: Any) -> None:
            events.append({"name": name, "ph": "M", "ts": 0, "pid": pid, "tid": tid,
                           "args": {"name" if name.endswith("name") else "sort_index": value}})

        meta("process_name", HOST_PID, 0, "host (hsapy: packet writes and doorbells)")
        meta("process_sort_index", HOST_PID, 0, 0)
        for tid, thread_name in self._threads.values():
            meta("thread_name", HOST_PID, tid, f"host thread {thread_name}")
        agent_names = {}
        for info in self._queues.values():
            agent_names[info.pid] = (info.agent_name, info.rt.backend, info.rt.is_simulated)
        for pid, (name, backend, simulated) in sorted(agent_names.items()):
            clock = "simulated clock" if simulated else "GPU timestamps"
            meta("process_name", pid, 0, f"GPU agent {name} ({backend}, {clock})")
            meta("process_sort_index", pid, 0, pid)
        for info in self._queues.values():
            profiled = ", profiled from creation" if info.profiling_from_start else ""
            meta("thread_name", info.pid, info.tid,
                 f"queue {info.id} (size {info.size}{profiled})")
            meta("thread_sort_index", info.pid, info.tid, _LANE_TID_BASE * info.tid)
            for lane in range(1, info.lanes):
                meta("thread_name", info.pid, info.lane_tid(lane),
                     f"queue {info.id} lane {lane + 1}")
                meta("thread_sort_index", info.pid, info.lane_tid(lane), info.lane_tid(lane))

        for rec in self.records:
            info = rec.queue
            args: dict[str, Any] = {"queue": info.id, "agent": info.agent_name,
                                    "index": rec.index, "type": rec.kind,
                                    "fields": _fields(rec.data)}
            if rec.note:
                args["gpu_time"] = rec.note
            events.append({"name": f"write {rec.kind} q{info.id}[{rec.index}]", "cat": "packet",
                           "ph": "i", "s": "t", "ts": self._host_us(rec.host_ns),
                           "pid": HOST_PID, "tid": rec.thread, "args": args})
        for info in self._queues.values():
            for ns, thread, index in info.doorbells:
                events.append({"name": f"doorbell q{info.id} = {index}", "cat": "doorbell",
                               "ph": "i", "s": "t", "ts": self._host_us(ns), "pid": HOST_PID,
                               "tid": thread, "args": {"queue": info.id, "index": index,
                                                       "agent": info.agent_name}})
        events.extend(slices[seq] for seq in sorted(slices))

        flow_id = 0
        for rec in self.records:
            target = slices.get(rec.seq)
            for handle, producer in rec.deps:
                source = slices.get(producer.seq) if producer is not None else None
                if target is None or source is None:
                    continue
                flow_id += 1
                name = f"{rec.kind} waits for signal {handle:#x}"
                events.append({"name": name, "cat": "dependency", "ph": "s", "id": flow_id,
                               "ts": round(source["ts"] + source["dur"] / 2, 3),
                               "pid": source["pid"], "tid": source["tid"]})
                # The arrow ends late in the barrier's slice: where the wait was satisfied.
                end = target["ts"] + target["dur"] - min(target["dur"] / 2, 0.001)
                events.append({"name": name, "cat": "dependency", "ph": "f", "bp": "e",
                               "id": flow_id, "ts": round(end, 3),
                               "pid": target["pid"], "tid": target["tid"]})
        self._events = events
        return events

    def other_data(self) -> dict[str, Any]:
        """What the trace's ``otherData`` says: tool, clocks and how they were aligned."""
        clocks = []
        for rt in self._runtimes.values():
            entry: dict[str, Any] = {
                "backend": rt.backend,
                "timestamp_frequency_hz": rt.frequency,
                "gpu_clock": ("simulated: the hsapy simulator's clock (host wall-clock of the "
                              "simulator), not GPU time" if rt.is_simulated else
                              "GPU dispatch timestamps in the HSA system timestamp domain "
                              "(hsa_amd_profiling_get_dispatch_time)"),
                "alignment": ("GPU ticks -> us with timestamp_frequency_hz, placed on the host "
                              "axis (time.perf_counter) by reading HSA_SYSTEM_INFO_TIMESTAMP "
                              "between two host clock reads"),
            }
            if rt.end_calibration is not None:
                host0, ticks0 = rt.calibration
                host1, ticks1 = rt.end_calibration
                predicted = (ticks1 - ticks0) * 1e6 / rt.frequency
                entry["drift_us"] = round((host1 - host0) / 1e3 - predicted, 3)
            clocks.append(entry)
        return {"tool": "hsapy trace", "time_origin": "trace start (host time.perf_counter)",
                "clocks": clocks, "packets": len(self.records),
                "notes": ("the first packets of a queue created before the trace may lack "
                          "timestamps (profiling is enabled when the tracer first sees it); "
                          "barriers without a completion signal are drawn as inferred slices")}

    def to_json(self) -> dict[str, Any]:
        """The whole trace as a Trace Event Format object."""
        return {"traceEvents": self.events(), "displayTimeUnit": "ns",
                "otherData": self.other_data()}

    def write(self, path: Any) -> None:
        """Write the trace as JSON to ``path``."""
        write_text_file(path, json.dumps(self.to_json(), separators=(",", ":")), "Trace.write")

    def summary(self) -> dict[str, Any]:
        """Counts per queue and overall (what ``hsapy trace`` prints)."""
        queues = []
        for info in self._queues.values():
            kinds = [r.kind for r in info.records]
            queues.append({"queue": info.id, "agent": info.agent_name, "packets": len(kinds),
                           "dispatches": kinds.count("dispatch"),
                           "barriers": sum(k.startswith("barrier") for k in kinds),
                           "timed": sum(r.start is not None for r in info.records),
                           "doorbells": len(info.doorbells)})
        deps = [(rec, producer) for rec in self.records for _h, producer in rec.deps]
        flows = sum(e["ph"] == "s" for e in self.events()) if not self.is_active else 0
        return {"path": None if self.path is None else str(self.path),
                "packets": len(self.records), "queues": queues,
                "dispatches": sum(q["dispatches"] for q in queues),
                "barriers": sum(q["barriers"] for q in queues),
                "dependencies": len(deps),
                "dependencies_without_producer": sum(p is None for _r, p in deps),
                "flows": flows,
                "simulated": any(rt.is_simulated for rt in self._runtimes.values())}


def record(path: Any = None, harvest_timeout: float = 2.0) -> Trace:
    """``with hsapy.trace.record("trace.json"):`` -- the same as :class:`Trace`."""
    return Trace(path, harvest_timeout=harvest_timeout)


def _fields(data: bytes) -> dict[str, Any]:
    """The packet's decoded fields, JSON-ready (addresses and signals in hex)."""
    out: dict[str, Any] = {}
    parsed = aql.parse(data)
    for name, value in parsed.items():
        if name.startswith("_") or name.startswith("reserved") or name == "raw":
            continue
        if isinstance(value, list):
            out[name] = [hex(v) for v in value]
        elif name in ("kernel_object", "kernarg_address", "completion_signal", "signal",
                      "return_address"):
            out[name] = hex(value)
        elif isinstance(value, int):
            out[name] = int(value)
    header = aql.decode_header(data[0] | data[1] << 8)
    out["header"] = {"type": header.type_name, "barrier": header.barrier,
                     "acquire": header.acquire, "release": header.release}
    return out
