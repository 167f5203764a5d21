"""Launch benchmarks of the empty kernel: host submit cost, round trip, throughput, GPU duration.

The measurement core shared by ``hsapy bench launch`` and ``benchmarks/launch.py``. Every
function returns raw samples in seconds; :func:`summarize` turns them into the reported
statistics. Nothing here asserts a speed: callers print the numbers.

What each measurement times:

- submit (:func:`time_bursts`, :func:`time_batches`): the publishing thread only, in bursts that
  fit the queue. Between bursts the doorbell is rung and completion awaited (untimed), so a slow
  consumer never shows up as host cost. The garbage collector is off while a burst is timed
  (as in timeit), and completion between bursts is polled (see ``_settle``; callers may pass
  their own ``settle``, as benchmarks/launch.py does).
- round trip (:func:`time_roundtrips`): wall time of publish + wait for one dispatch.
- throughput (:func:`time_back_to_back`): ``count`` dispatches published back to back with one
  doorbell; the GPU's timestamps (hsa_amd_profiling_get_dispatch_time) give first start to last
  end, divided by ``count``. Each dispatch's end - start is kept as its GPU duration.

On the simulator GPU timestamps are simulated time (host wall-clock of the packet processor),
never a statement about hardware.
"""
from __future__ import annotations

import contextlib
import gc
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hsapy.dispatch import BATCH_ARENA_SLOTS
from hsapy.errors import HsapyValueError

__all__ = ["BURST", "LaunchPlan", "LaunchSetup", "ModeResult", "Progress", "run_launch",
           "summarize", "drain", "time_bursts", "time_batches", "warm_batch_queue_size",
           "time_roundtrips", "time_back_to_back", "hip_available", "HipLaunch", "PeerLaunch",
           "CudaCoreLaunch", "CupyLaunch", "TorchLaunch", "PEERS", "READING"]

BURST = 256            # dispatches per timed burst: half the queue, never waiting for space
WAIT_TIMEOUT = 60.0    # seconds for any completion wait (the simulator interprets the kernel)

Tick = Callable[[], None]
Settle = Callable[[Any, Any], None]     # (queue, signal): wait until the signal drops below 1


def _no_tick() -> None:
    pass


def summarize(samples_s: Sequence[float]) -> dict[str, float]:
    """median, 5th and 95th percentile and minimum in microseconds, and the sample count."""
    us = np.array(samples_s, dtype=float) * 1e6
    if us.size == 0:
        raise HsapyValueError("no samples to summarize: run at least one repeat (--repeats >= 1)")
    return {"median_us": float(np.median(us)), "p5_us": float(np.percentile(us, 5)),
            "p95_us": float(np.percentile(us, 95)), "min_us": float(us.min()), "n": int(us.size)}


class LaunchSetup:
    """The empty kernel (hsapy.asm) loaded for one GPU agent, with a queue that holds two bursts.

    ``prepared`` is the launch prepared once over one wavefront; close() releases the queue."""

    def __init__(self, runtime: Any, target: str | None = None) -> None:
        from hsapy.asm import kernels

        self.runtime = runtime
        self.agent = agent = runtime.gpu(target)
        self.code_object = kernels.build("empty", agent.target)
        self.kernel = runtime.load(self.code_object, agent).kernel("empty")
        self.queue = agent.create_queue(size=max(BURST * 2, agent.queue_min_size))
        self.workgroup = agent.wavefront_size
        self.prepared = self.kernel.prepare(self.queue, self.workgroup, self.workgroup)

    @property
    def is_simulated(self) -> bool:
        return self.runtime.is_simulated

    def close(self) -> None:
        self.queue.close()

    def __enter__(self) -> LaunchSetup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- host submit cost ----------------------------------------------------------------------------

@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic garbage collector off while a burst is timed, as timeit does: a collection
    triggered by whatever ran before would land in one sample as a pause of milliseconds."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def time_bursts(queue: Any, one_call: Callable[..., Any], repeats: int, burst: int = BURST,
                tick: Tick = _no_tick, doorbell: bool | None = None,
                settle: Settle | None = None) -> list[float]:
    """Seconds per ``one_call()`` (which publishes one dispatch and returns its result), timed
    one by one in ``repeats`` bursts of ``burst``; after each burst (untimed) the doorbell is
    rung and its last dispatch awaited.

    With ``doorbell`` given, each call is ``one_call(doorbell=doorbell)``, written out in the
    timed loop as a caller writes it. (Not a functools.partial with that keyword: CPython 3.11
    calls a partial holding keywords through its slow path, building an argument tuple and a
    keyword dict per call, which costs more than a lambda's frame.)

    ``settle(queue, signal)`` is how the untimed wait between bursts waits for a signal to drop
    below 1 (default ``_settle``)."""
    settle = settle or _settle
    clock = time.perf_counter
    samples = []
    append = samples.append
    for _ in range(repeats):
        last = None
        with _no_gc():
            if doorbell is None:
                for _ in range(burst):
                    t0 = clock()
                    last = one_call()
                    append(clock() - t0)
            else:
                for _ in range(burst):
                    t0 = clock()
                    last = one_call(doorbell=doorbell)
                    append(clock() - t0)
        queue.flush()
        if hasattr(last, "wait"):
            settle(queue, last.signal)
        else:              # publish and submit return only the index: drain behind a barrier
            drain(queue, settle)
        tick()
    return samples


def _settle(queue: Any, signal: Any, wait_slice: Callable[[], bool] | None = None) -> None:
    """Wait (untimed) for ``signal`` to drop below 1 by polling, with a timeout (WAIT_TIMEOUT),
    checking the queue between slices. ``wait_slice()`` waits a while and says whether the
    signal has dropped; by default it looks, then naps 0.2 ms.

    Not Signal.wait: on the simulator a thread blocked in hsa_signal_wait runs small announced
    dispatches itself, which would fill the publishing core's caches with the packet
    processor's work between bursts -- on a GPU system the GPU does that work, so the
    publishing thread only looks at the signal here."""
    if wait_slice is None:
        def wait_slice() -> bool:
            if signal.load(relaxed=True) < 1:
                return True
            time.sleep(0.0002)
            return False
    deadline = time.monotonic() + WAIT_TIMEOUT
    while not wait_slice():
        queue.check()
        if time.monotonic() > deadline:
            signal.wait(2, 1, timeout=0.0, abort=queue.check)   # raises WaitTimeoutError


def drain(queue: Any, settle: Settle | None = None) -> None:
    """Wait (untimed, with a timeout) until every packet published so far on ``queue`` has
    completed: a barrier-AND with the barrier bit completes only after all before it. The
    wait is ``settle(queue, signal)`` (default ``_settle``)."""
    from hsapy import aql

    signal = queue.runtime.signal_pool.acquire(1)
    try:
        queue.publish(aql.barrier_and([], completion_signal=signal.handle))
        (settle or _settle)(queue, signal)
    finally:
        queue.runtime.signal_pool.release(signal)


def warm_batch_queue_size(agent: Any, burst: int = BURST) -> int:
    """The smallest queue size (a power of two, at least the agent's minimum) that holds the two
    batches of ``time_batches(warm=True)``: 2 x (``burst`` dispatches + a closing barrier)."""
    return max(1 << (2 * (burst + 1) - 1).bit_length(), agent.queue_min_size or 1)


def time_batches(prepared: Any, repeats: int, burst: int = BURST,
                 tick: Tick = _no_tick, settle: Settle | None = None,
                 warm: bool = False) -> list[float]:
    """Seconds per dispatch of ``prepared.batch`` of ``burst`` empty argument lists (one sample
    per batch: its time divided by ``burst``); each batch is awaited, untimed, through
    ``settle(queue, signal)`` (default ``_settle``).

    With ``warm``, each timed batch follows an untimed one published just before it without a
    doorbell (the timed batch's doorbell announces both), so it is timed in the steady state of
    batches published back to back rather than straight after the wait: on the simulator the
    packet processor's work is host CPU work that leaves the publishing core's caches cold,
    which a GPU's packet processor does not. The queue must hold both batches."""
    settle = settle or _settle
    queue = prepared.queue
    if warm and burst > BATCH_ARENA_SLOTS:
        raise HsapyValueError(
            f"time_batches(warm=True): a batch of {burst} takes more than one half of the batch "
            f"kernarg arena ({BATCH_ARENA_SLOTS} dispatches), so the timed batch would wait for "
            f"the untimed one; use a burst of at most {BATCH_ARENA_SLOTS}")
    if warm and 2 * (burst + 1) > queue.size:
        raise HsapyValueError(
            f"time_batches(warm=True): two batches of {burst} (each with its closing barrier) "
            f"need {2 * (burst + 1)} slots; the queue has {queue.size}. Create a larger queue")
    clock = time.perf_counter
    per_packet = []
    args = [()] * burst
    for _ in range(repeats):
        with _no_gc():
            before = prepared.batch(args, doorbell=False) if warm else None
            t0 = clock()
            results = prepared.batch(args)
            per_packet.append((clock() - t0) / burst)
        for done in (before, results):
            if done is not None:
                for _first, _count, signal in done.chunks:
                    settle(queue, signal)
        tick()
    return per_packet


# -- the GPU's side ------------------------------------------------------------------------------

def time_roundtrips(prepared: Any, repeats: int, per_repeat: int = 32,
                    tick: Tick = _no_tick) -> list[float]:
    """Wall seconds of publish + wait of one dispatch, ``repeats`` x ``per_repeat`` times."""
    return _time_each(lambda: prepared().wait(WAIT_TIMEOUT), repeats, per_repeat, tick)


def _time_each(call: Callable[[], Any], repeats: int, per_repeat: int,
               tick: Tick) -> list[float]:
    """Wall seconds of each ``call()``, ``repeats`` x ``per_repeat`` times (tick per repeat)."""
    clock = time.perf_counter
    samples = []
    append = samples.append
    for _ in range(repeats):
        for _ in range(per_repeat):
            t0 = clock()
            call()
            append(clock() - t0)
        tick()
    return samples


def time_back_to_back(prepared: Any, repeats: int, count: int = BURST,
                      tick: Tick = _no_tick) -> tuple[list[float], list[float]]:
    """(seconds per dispatch of ``count`` back-to-back dispatches, first start to last end / count,
    one sample per repeat; every dispatch's own end - start in seconds) from GPU timestamps.

    Enables profiling on the prepared launch's queue. ``count`` must fit the kernarg ring (each
    result's signal is read before its slot is reused)."""
    queue = prepared.queue
    slots = prepared.ring.slots
    if not 1 <= count <= min(slots, queue.size - 1):
        raise HsapyValueError(f"back-to-back count {count} must be 1..{min(slots, queue.size - 1)} "
                              "(the queue and kernarg ring must hold every dispatch at once)")
    queue.enable_profiling()
    frequency = queue.runtime.timestamp_frequency
    per_kernel, durations = [], []
    for _ in range(repeats):
        results = [prepared(doorbell=False) for _ in range(count)]
        queue.flush()
        for result in results:
            result.wait(WAIT_TIMEOUT)
        starts = [r.start for r in results]
        ends = [r.end for r in results]
        if None in starts or None in ends:
            raise HsapyValueError("the runtime returned no dispatch timestamps although profiling "
                                  "is enabled (hsa_amd_profiling_get_dispatch_time)")
        per_kernel.append((max(ends) - min(starts)) / frequency / count)
        durations.extend((end - start) / frequency for start, end in zip(starts, ends))
        tick()
    return per_kernel, durations


# -- HIP, side by side (hip-python) --------------------------------------------------------------

def hip_available() -> bool:
    """Whether the hip-python bindings (module ``hip``) import."""
    try:
        from hip import hip  # noqa: F401
    except ImportError:
        return False
    return True


class HipLaunch:
    """The same empty kernel through HIP (hip-python): hipModuleLoadData, hipModuleLaunchKernel
    of one workgroup of ``workgroup`` work-items on the null stream."""

    def __init__(self, code_object: bytes, workgroup: int) -> None:
        from hip import hip

        self.hip = hip
        self.workgroup = workgroup
        self._image = code_object    # HIP may keep reading the image: keep it alive
        self.module = self._call("hipModuleLoadData", hip.hipModuleLoadData(code_object))
        self.function = self._call("hipModuleGetFunction",
                                   hip.hipModuleGetFunction(self.module, b"empty"))

    def _call(self, name: str, result: Any) -> Any:
        """hip-python returns (hipError_t, values...) or a lone hipError_t: check, unwrap."""
        if isinstance(result, tuple):
            error, values = result[0], result[1:]
        else:
            error, values = result, ()
        if error != self.hip.hipError_t.hipSuccess:
            raise HsapyValueError(f"{name} failed: {error!r} (HIP is not usable here; "
                                  "run without it or check the ROCm installation)")
        return values[0] if len(values) == 1 else values

    def launch(self) -> None:
        """Publish one dispatch (grid given in workgroups, as hipModuleLaunchKernel takes it)."""
        self._call("hipModuleLaunchKernel", self.hip.hipModuleLaunchKernel(
            self.function, 1, 1, 1, self.workgroup, 1, 1, sharedMemBytes=0, stream=None,
            kernelParams=None, extra=None))

    def synchronize(self) -> None:
        self._call("hipDeviceSynchronize", self.hip.hipDeviceSynchronize())

    def time_launches(self, repeats: int, burst: int = BURST, tick: Tick = _no_tick) -> list[float]:
        """Seconds per hipModuleLaunchKernel call, in bursts synchronized untimed."""
        clock = time.perf_counter
        samples = []
        for _ in range(repeats):
            for _ in range(burst):
                t0 = clock()
                self.launch()
                samples.append(clock() - t0)
            self.synchronize()
            tick()
        return samples

    def time_roundtrips(self, repeats: int, per_repeat: int = 32,
                        tick: Tick = _no_tick) -> list[float]:
        """Wall seconds of hipModuleLaunchKernel + hipDeviceSynchronize."""
        def roundtrip() -> None:
            self.launch()
            self.synchronize()
        return _time_each(roundtrip, repeats, per_repeat, tick)

    def close(self) -> None:
        self._call("hipModuleUnload", self.hip.hipModuleUnload(self.module))


# -- NVIDIA peers, side by side ------------------------------------------------------------------

# The empty kernel in CUDA C++ (compiled at run time by NVRTC through the peer's own API),
# launched as one block of PEER_BLOCK threads (hsapy's rows: one workgroup of a wavefront).
EMPTY_CUDA = 'extern "C" __global__ void empty() {}'
PEER_BLOCK = 64


class PeerLaunch:
    """One launch API a launch-overhead user compares hsapy with, launching an empty kernel of
    one block of ``block`` threads: ``launch()`` publishes one, ``synchronize()`` waits for all.
    ``mode`` names its row, ``what`` says what a sample is."""

    mode = ""
    what = ""

    def launch(self) -> None:
        raise NotImplementedError

    def synchronize(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def time_launches(self, repeats: int, burst: int = BURST, tick: Tick = _no_tick) -> list[float]:
        """Seconds per ``launch()`` call, timed one by one in bursts of ``burst``; each burst is
        synchronized untimed (time_bursts' loop, HipLaunch.time_launches')."""
        clock = time.perf_counter
        launch = self.launch
        samples = []
        append = samples.append
        for _ in range(repeats):
            with _no_gc():
                for _ in range(burst):
                    t0 = clock()
                    launch()
                    append(clock() - t0)
            self.synchronize()
            tick()
        return samples


class CudaCoreLaunch(PeerLaunch):
    """cuda.core (NVIDIA's pythonic CUDA): ``launch(stream, config, kernel)`` of the empty kernel
    compiled with ``Program`` on the current device's own stream."""

    mode = "cuda_core_launch"
    what = ("cuda.core launch(stream, config, kernel): host time of the call (NVIDIA GPU, "
            "real hardware)")

    def __init__(self, block: int) -> None:
        try:
            import cuda.core as core
            core.Device  # noqa: B018  (older releases keep the API in cuda.core.experimental)
        except (ImportError, AttributeError):
            import cuda.core.experimental as core
        device = core.Device()
        device.set_current()
        self.stream = device.create_stream()
        options = core.ProgramOptions(arch=f"sm_{device.arch}")
        module = core.Program(EMPTY_CUDA, code_type="c++", options=options).compile("cubin")
        self.kernel = module.get_kernel("empty")
        self.config = core.LaunchConfig(grid=1, block=block)
        self._launch = core.launch

    def launch(self) -> None:
        self._launch(self.stream, self.config, self.kernel)

    def synchronize(self) -> None:
        self.stream.sync()


class CupyLaunch(PeerLaunch):
    """CuPy: a ``RawKernel`` of the empty kernel called with grid, block and no arguments."""

    mode = "cupy_launch"
    what = "CuPy RawKernel((1,), (block,), ()): host time of the call (NVIDIA GPU, real hardware)"

    def __init__(self, block: int) -> None:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise HsapyValueError("CuPy sees no CUDA device")
        self.cupy = cupy
        self.kernel = cupy.RawKernel(EMPTY_CUDA, "empty")
        self.grid, self.block = (1,), (block,)

    def launch(self) -> None:
        self.kernel(self.grid, self.block, ())

    def synchronize(self) -> None:
        self.cupy.cuda.get_current_stream().synchronize()


class TorchLaunch(PeerLaunch):
    """torch: ``torch.cuda._sleep(0)``, a kernel that spins for 0 cycles -- the emptiest kernel
    torch launches by itself (a user kernel needs an extension built with nvcc)."""

    mode = "torch_launch"
    what = ("torch.cuda._sleep(0), torch's own near-empty kernel: host time of the call "
            "(NVIDIA GPU, real hardware)")

    def __init__(self, block: int) -> None:
        import torch

        if not torch.cuda.is_available():
            raise HsapyValueError("torch sees no CUDA device")
        self.torch = torch
        self._sleep = torch.cuda._sleep

    def launch(self) -> None:
        self._sleep(0)

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()


# (row, module that must import, the class) in the order their rows appear
PEERS = (("cuda_core_launch", "cuda.core", CudaCoreLaunch), ("cupy_launch", "cupy", CupyLaunch),
         ("torch_launch", "torch", TorchLaunch))


def _importable(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):       # a parent package that is missing or broken
        return False


# -- results and progress ------------------------------------------------------------------------

@dataclass
class ModeResult:
    """One reported mode: its samples (seconds) and how to read them."""

    mode: str
    samples_s: list[float]
    simulated: bool
    backend: str
    target: str
    clock: str                 # "host" (perf_counter on the publishing thread) or "gpu"
    what: str                  # one line: what a sample is
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def samples_us(self) -> np.ndarray:
        return np.array(self.samples_s, dtype=float) * 1e6

    def as_json(self) -> dict[str, Any]:
        """mode, the statistics (µs), simulated, backend, target, clock, what, extras."""
        return {"mode": self.mode, **summarize(self.samples_s), "simulated": self.simulated,
                "backend": self.backend, "target": self.target, "clock": self.clock,
                "what": self.what, **self.extra}


class Progress:
    """A one-line text bar on ``stream`` (stderr), drawn only when ``enabled``."""

    WIDTH = 30

    def __init__(self, total: int, enabled: bool, stream: Any = None) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.label = ""
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr

    def start(self, label: str) -> None:
        self.label = label
        self._draw()

    def tick(self) -> None:
        self.done = min(self.done + 1, self.total)
        self._draw()

    def _draw(self) -> None:
        if not self.enabled:
            return
        filled = self.done * self.WIDTH // self.total
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        percent = 100 * self.done // self.total
        self.stream.write(f"\r[{bar}] {percent:3d}% {self.label:<16}")
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * (self.WIDTH + 25) + "\r")
            self.stream.flush()


# -- the whole launch benchmark ------------------------------------------------------------------

@dataclass(frozen=True)
class LaunchPlan:
    """How much to run: ``repeats`` timed repetitions per mode after ``warmup`` untimed ones.

    A repetition is a burst of ``burst`` submits, ``per_roundtrip`` round trips, or one run of
    ``back_to_back`` dispatches."""

    repeats: int = 20
    warmup: int = 1
    burst: int = BURST
    per_roundtrip: int = 32
    back_to_back: int = BURST

    def __post_init__(self) -> None:
        for name in ("repeats", "burst", "per_roundtrip", "back_to_back"):
            if getattr(self, name) < 1:
                raise HsapyValueError(f"launch benchmark: {name} must be at least 1, "
                                      f"not {getattr(self, name)}")
        if self.warmup < 0:
            raise HsapyValueError(f"launch benchmark: warmup must be >= 0, not {self.warmup}")
        if self.burst > BURST or self.back_to_back > BURST:
            raise HsapyValueError(f"launch benchmark: burst and back_to_back are at most {BURST} "
                                  "(they must fit the queue and the kernarg ring)")

    @classmethod
    def quick(cls, repeats: int | None = None) -> LaunchPlan:
        """A run of a few seconds on the simulator (tests, a first look)."""
        return cls(repeats=repeats or 3, warmup=1, burst=64, per_roundtrip=16, back_to_back=64)

    def steps(self, hip: bool, peers: int = 0) -> int:
        """Progress ticks of a whole run: six hsapy modes (throughput also gives gpu_duration),
        two HIP modes, one per NVIDIA peer."""
        return (self.warmup + self.repeats) * (6 + (2 if hip else 0) + peers)


SUBMIT_NOTE = "host time on the publishing thread"
MODE_DESCRIPTIONS = {
    "submit_plain": "kernel.launch(..., wait=False) as first written: finds its preparation in "
                    "the queue's launch cache, then does what prepared() does (kernarg slot, "
                    "pack, publish, doorbell, a DispatchResult)",
    "submit_publish": "prepared.publish(): kernarg slot, pack, ready packet body, header store; "
                      "no doorbell (one per burst, untimed) and no result object (a builtin "
                      "compiled for the host unless HSAPY_NATIVE_BUILTINS=0)",
    "submit_prepared": "prepared.submit(): publish plus the doorbell on every call -- the "
                       "difference to submit_publish is what one doorbell costs",
    "submit_batch": "prepared.batch() of a burst, per dispatch: one reservation, vectorised "
                    "packet writes, one doorbell (each timed batch right after an untimed one; "
                    "compiled for the host, as publish)",
    "roundtrip": "prepared() + wait(): wall time of one dispatch end to end",
    "throughput": "back-to-back dispatches: first start to last end / count (GPU timestamps)",
    "gpu_duration": "end - start of each dispatch (GPU timestamps)",
    "hip_launch": "hipModuleLaunchKernel of the same empty kernel through hip-python: host "
                  "time of the call (AMD GPU)",
    "hip_roundtrip": "hipModuleLaunchKernel + hipDeviceSynchronize: wall time",
}


def run_launch(backend: str | None, target: str | None, plan: LaunchPlan,
               progress: Progress | None = None) -> tuple[list[ModeResult], list[str]]:
    """Every launch mode on one GPU agent: (results, notes for a reader).

    The submit modes run first; on the simulator with the null executor (packets consumed, the
    kernel not run) so that only host cost is timed, then the other modes in a second simulated
    runtime whose executor runs the kernel. On ROCr one runtime serves all modes, and HIP's
    modes follow when hip-python imports."""
    from hsapy.runtime import Runtime

    progress = progress or Progress(1, enabled=False)
    results: list[ModeResult] = []
    notes: list[str] = []
    # the simulator's options (backend "rocr" refuses them)
    simulator = {} if backend == "rocr" else {"targets": [target] if target else None,
                                              "executor": "null"}
    with Runtime(backend=backend, **simulator) as runtime:
        with LaunchSetup(runtime, target) as setup:
            simulated = setup.is_simulated
            target = setup.agent.target
            use_hip = not simulated and hip_available()
            progress.total = plan.steps(use_hip)
            results += _submit_modes(setup, plan, progress)
            if not simulated:
                results += _gpu_modes(setup, plan, progress)
                if use_hip:
                    results += _hip_modes(setup, plan, progress, notes)
    if simulated:
        notes.append("simulated: submit modes ran with the null executor (packets consumed, "
                     "kernel not run); the others ran the kernel in the ISA interpreter, and "
                     "their GPU timestamps are simulated time (host wall-clock), not hardware")
        with Runtime(backend="sim", targets=[target]) as runtime:
            with LaunchSetup(runtime, target) as setup:
                results += _gpu_modes(setup, plan, progress)
        notes.append("hip_launch: not measured (HIP needs a real GPU; the simulator has none)")
    elif not use_hip:
        notes.append("hip_launch: not measured (hip-python is not importable: "
                     "pip install hip-python matching your ROCm version)")
    results += _peer_modes(plan, progress, notes)
    progress.finish()
    return results, notes


# How to read the submit rows (``hsapy bench launch`` prints it under its table).
READING = (
    "submit rows and the peers' rows time each call on its own, two clock reads around it (an "
    "empty Python function timed so shows what that adds: benchmarks/launch.py's python_call "
    "row), in bursts, the wait between bursts untimed; each kernarg ring first takes one "
    "untimed lap, as a running program's has. Rows run one after another: on a shared or "
    "throttling machine compare rows of one run, and read p5-p95 as the noise. "
    "submit_publish does less than submit_prepared (no doorbell), so it costs less; the "
    "difference is the doorbell: one store to the doorbell signal, through a builtin "
    "compiled for the first queue (hsapy.sim.native_signal on the simulator; the runtime's "
    "hsa_signal_store_screlease called without libffi on ROCr), or the Python or cffi call "
    "with HSAPY_NATIVE_BUILTINS=0.")


def _phase(progress: Progress, label: str, plan: LaunchPlan,
           measure: Callable[[int, Tick], Any]) -> Any:
    """Warm up (untimed, discarded), then measure ``plan.repeats`` repetitions."""
    progress.start(label)
    if plan.warmup:
        measure(plan.warmup, progress.tick)
    return measure(plan.repeats, progress.tick)


def _result(setup: LaunchSetup, mode: str, samples: list[float], clock: str,
            **extra: Any) -> ModeResult:
    executor = None
    if setup.is_simulated:
        executor = "null" if mode.startswith("submit") else "interpreter"
    if executor:
        extra = {"executor": executor, **extra}
    return ModeResult(mode, samples, setup.is_simulated, setup.runtime.backend,
                      setup.agent.target, clock, MODE_DESCRIPTIONS[mode], extra)


def _first_lap(queue: Any, call: Callable[[], Any], slots: int) -> None:
    """``call()`` once per kernarg ring slot, untimed, then wait for them all: the ring's first
    lap with a prepared launch takes the checked way per slot (hsapy.publishing: the slot
    does not hold this launch's hidden arguments yet), which is no steady-state cost."""
    for _ in range(slots):
        call()
    queue.flush()
    drain(queue)


def _submit_modes(setup: LaunchSetup, plan: LaunchPlan, progress: Progress) -> list[ModeResult]:
    kernel, queue, wg, prepared = setup.kernel, setup.queue, setup.workgroup, setup.prepared
    burst = plan.burst
    # Plain launches get their own queue, hence their own kernarg ring: the launch cache's
    # preparation is another prepared launch than ``prepared``, and on a shared ring each
    # would find every slot holding the other's hidden arguments.
    with setup.agent.create_queue(size=queue.size) as plain_queue:
        def plain_call() -> Any:
            return kernel.launch(plain_queue, [], wg, wg, wait=False)
        _first_lap(plain_queue, plain_call, prepared.ring.slots)
        plain = _phase(progress, "submit_plain", plan, lambda n, tick: time_bursts(
            plain_queue, plain_call, n, burst, tick))
    # the prepared fast path (returns only the packet index), without and with the doorbell
    publish, submit = prepared.publish, prepared.submit
    _first_lap(queue, publish, prepared.ring.slots)
    published = _phase(progress, "submit_publish", plan, lambda n, tick: time_bursts(
        queue, publish, n, burst, tick))
    fast = _phase(progress, "submit_prepared", plan, lambda n, tick: time_bursts(
        queue, submit, n, burst, tick))
    # each timed batch right after an untimed one (time_batches(warm=True)), on a queue that
    # holds both
    size = warm_batch_queue_size(setup.agent, burst)
    with setup.agent.create_queue(size=size) as batch_queue:
        batched = kernel.prepare(batch_queue, wg, wg)
        batch = _phase(progress, "submit_batch", plan,
                       lambda n, tick: time_batches(batched, n, burst, tick, warm=True))
    return [_result(setup, "submit_plain", plain, "host", burst=burst),
            _result(setup, "submit_publish", published, "host", burst=burst),
            _result(setup, "submit_prepared", fast, "host", burst=burst),
            _result(setup, "submit_batch", batch, "host", batch=burst)]


def _gpu_modes(setup: LaunchSetup, plan: LaunchPlan, progress: Progress) -> list[ModeResult]:
    prepared = setup.prepared
    roundtrip = _phase(progress, "roundtrip", plan, lambda n, tick: time_roundtrips(
        prepared, n, plan.per_roundtrip, tick))
    # Profiling only from here on: the round trips above ran without it.
    per_kernel, durations = _phase(progress, "throughput", plan, lambda n, tick:
                                   time_back_to_back(prepared, n, plan.back_to_back, tick))
    gpu_clock = "gpu (simulated)" if setup.is_simulated else "gpu"
    return [_result(setup, "roundtrip", roundtrip, "host"),
            _result(setup, "throughput", per_kernel, gpu_clock, count=plan.back_to_back),
            _result(setup, "gpu_duration", durations, gpu_clock)]


def _peer_modes(plan: LaunchPlan, progress: Progress, notes: list[str]) -> list[ModeResult]:
    """The NVIDIA peers (PEERS) that import, each its own row measured as HIP's; what goes
    wrong in one (no device, no NVRTC, another API version) becomes a note."""
    available = [(mode, module, peer) for mode, module, peer in PEERS if _importable(module)]
    missing = [module for _mode, module, _peer in PEERS if not _importable(module)]
    if missing:
        notes.append(f"{', '.join(missing)}: not measured (not importable here; each is an "
                     "NVIDIA GPU peer, timed like hip_launch when installed)")
    progress.total += (plan.warmup + plan.repeats) * len(available)
    results = []
    for mode, _module, peer_type in available:
        try:
            peer = peer_type(PEER_BLOCK)
        except Exception as exc:
            notes.append(f"{mode}: not measured ({type(exc).__name__}: {exc})")
            continue
        try:
            samples = _phase(progress, mode, plan, lambda n, tick, peer=peer: peer.time_launches(
                n, plan.burst, tick))
        except Exception as exc:
            notes.append(f"{mode}: stopped ({type(exc).__name__}: {exc})")
            continue
        finally:
            peer.close()
        results.append(ModeResult(mode, samples, False, "cuda", "nvidia", "host", peer.what,
                                  {"burst": plan.burst}))
    return results


def _hip_modes(setup: LaunchSetup, plan: LaunchPlan, progress: Progress,
               notes: list[str]) -> list[ModeResult]:
    # HIP is a side-by-side extra: whatever goes wrong in it (a failing call, a hip-python
    # version with another signature) becomes a note, never the loss of hsapy's own numbers.
    try:
        hip = HipLaunch(setup.code_object, setup.workgroup)
    except Exception as exc:
        notes.append(f"hip_launch: not measured ({type(exc).__name__}: {exc})")
        return []
    try:
        launches = _phase(progress, "hip_launch", plan, lambda n, tick: hip.time_launches(
            n, plan.burst, tick))
        roundtrips = _phase(progress, "hip_roundtrip", plan, lambda n, tick: hip.time_roundtrips(
            n, plan.per_roundtrip, tick))
    except Exception as exc:
        notes.append(f"hip_launch: stopped ({type(exc).__name__}: {exc})")
        return []
    finally:
        try:
            hip.close()
        except Exception as exc:
            notes.append(f"hipModuleUnload failed ({type(exc).__name__}: {exc})")
    return [_result(setup, "hip_launch", launches, "host", burst=plan.burst),
            _result(setup, "hip_roundtrip", roundtrips, "host")]
