"""Launching kernels through raw AQL: plain launch, prepared dispatch, batches and graphs.

Data flow (docs/architecture.md, "Data flow"): the kernel's KernargLayout packs the explicit
and hidden arguments into a kernarg slot; a 64-byte dispatch packet is patched from a template;
``Queue`` publishes it (body, then header|setup with one release store, then the doorbell).

Kernarg memory comes from a per-queue :class:`~hsapy.publishing.KernargRing`. A slot may only be
reused once the kernel that read it has *completed* (the read index advances when a packet is
launched, not when it finishes), so every ring slot owns one signal, created once with the ring
and used as the completion signal of the packet that uses the slot: no signal is ever created per
dispatch. What a dispatch does per call lives in hsapy.publishing, twice: plainly, and fast.

Everything the user can get wrong is checked when a dispatch is prepared, before any byte
reaches a ring: argument count and types, workgroup and grid limits, LDS, target, and that the
kernel's executable, the queue and the runtime are open.

Lifetimes (docs/internals.md "Lifetimes"): a dispatch holds what its packet points at until its
completion is observed. Each kernarg slot records the packet index of the dispatch that last
used it -- the slot's generation -- so a DispatchResult whose slot was taken again knows its
dispatch completed (a slot is only taken again after that), instead of reading the signal of a
later one. Closing the queue, the executable or the runtime makes every slot nobody's, so the
next prepared call takes the reference way, which raises ClosedError; freeing memory or code
waits for the dispatches in flight (``KernargRing.in_flight``, ``Runtime._after_dispatches``).

A plain ``launch`` prepares once per queue and shape (:class:`LaunchCache`) and then publishes
as a prepared call does.
"""
from __future__ import annotations

import functools
import inspect
import time
import types
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hsapy import aql
from hsapy._checks import check_bit, check_flag, check_items
from hsapy._lifetime import HandleState, NotCopyable
from hsapy.codeobject import max_scratch_per_wave
from hsapy.errors import ClosedError, HsapyTypeError, HsapyValueError, WaitTimeoutError
from hsapy.interop import BufferView
from hsapy.kernarg import KernargLayout, normalize_dims
from hsapy.publishing import (
    BATCH_ARENA_SLOTS,
    RING_SLOTS,
    DispatchTemplate,
    KernargRing,
    arena_for,
    batcher,
    dispatcher,
    named_dispatcher,
    parameter_names,
    ring_for,
    slot_body,
)
from hsapy.queue import Queue
from hsapy.signal import Condition, check_timeout

if TYPE_CHECKING:
    from hsapy.executable import Executable

__all__ = ["launch", "prepare", "PreparedDispatch", "DispatchResult", "BatchResult", "KernargRing",
           "Graph", "LaunchCache", "DispatchConfigError", "validate", "parameter_names",
           "BATCH_ARENA_SLOTS", "RING_SLOTS", "LAUNCH_CACHE_SIZE"]

# The dispatch layer's per-queue objects under their older names (tests and tools use them).
_ring_for, _arena_for = ring_for, arena_for
_MAX_TIMEOUT = float(1 << 31)   # a timeout the fast check in launch() passes as it is


class Launchable(NotCopyable):
    """The kernels this module launches: :class:`hsapy.executable.Kernel` is the one subclass.
    A dispatch checks its kernel against this class, so this module does not import
    hsapy.executable (which imports it: ``Kernel.launch`` and ``Kernel.prepare`` are
    :func:`launch` and :func:`prepare` themselves). What a dispatch reads of a kernel:"""

    __slots__ = ()
    executable: Executable
    name: str
    kernel_object: int
    kernarg_size: int
    kernarg_align: int
    group_segment_size: int
    private_segment_size: int
    wavefront_size: int
    max_flat_workgroup_size: int
    layout: KernargLayout


class DispatchConfigError(HsapyValueError):
    """A dispatch that the agent or kernel cannot run (sizes, LDS, target), caught before
    anything is written to a queue."""


@dataclass(frozen=True)
class Geometry:
    grid: tuple[int, int, int]
    workgroup: tuple[int, int, int]
    dims: int
    dynamic_lds: int


def _open_states(kernel: Any, queue: Any) -> tuple[Any, ...]:
    """The lifetime states a dispatch of ``kernel`` on ``queue`` depends on, outermost first:
    the runtime, the queue, the kernel's executable. Raises ClosedError if one is closed, or a
    typed error when ``kernel``/``queue`` are not what they should be."""
    if not isinstance(queue, Queue):
        raise HsapyTypeError(f"a dispatch needs a Queue (agent.create_queue), not "
                             f"{type(queue).__name__}")
    if not isinstance(kernel, Launchable):
        raise HsapyTypeError(f"a dispatch needs a Kernel (executable.kernel(name)), not "
                             f"{type(kernel).__name__}")
    states = (queue.runtime._state, queue.handle_state, kernel.executable._state)
    for state in states:
        state.check()
    return states


def _argument_states(args: Sequence[Any], runtime: Any) -> tuple[Any, ...]:
    """The lifetime states of the hsapy objects among kernel arguments (buffers, views of
    buffers, signals), whose addresses or handles packed kernarg bytes keep; an object of
    another runtime than ``runtime`` is refused (its memory is not this runtime's)."""
    states = []
    for index, arg in enumerate(args):
        owner = arg.buffer if isinstance(arg, BufferView) else arg
        state = getattr(owner, "_state", None)
        if isinstance(state, HandleState):
            if getattr(owner, "runtime", runtime) is not runtime:
                raise HsapyValueError(f"argument {index} ({type(owner).__name__}) belongs to "
                                      "another Runtime than the graph's queue: allocate it "
                                      "from this runtime's pools")
            states.append(state)
    return tuple(states)


def _raise_if_closed(states: tuple[Any, ...]) -> None:
    for state in states:
        if state.closed:
            raise state.error()


def validate(kernel: Any, queue: Any, grid: Any, workgroup: Any, dynamic_lds: int = 0) -> Geometry:
    """Check a launch against the agent's and the kernel's limits; return the normalized sizes."""
    _open_states(kernel, queue)
    grid3, grid_dims = normalize_dims(grid, "grid")
    workgroup3, wg_dims = normalize_dims(workgroup, "workgroup")
    agent = queue.agent
    name = kernel.name
    kernel_runtime = getattr(kernel.executable, "runtime", None)
    if kernel_runtime is not None and kernel_runtime is not queue.runtime:
        # (two runtimes may number their agents alike: the handles below would agree)
        raise DispatchConfigError(
            f"kernel {name} was loaded by another Runtime than the one queue {queue.id} belongs "
            f"to: load the code object with the queue's runtime (queue.runtime.load(co, "
            "queue.agent))")
    kernel_agent = getattr(kernel.executable, "agent", None)
    if kernel_agent is not None and getattr(kernel_agent, "handle", None) != agent.handle:
        raise DispatchConfigError(
            f"kernel {name} was loaded for {kernel_agent.name} but the queue belongs to "
            f"{agent.name}: load the code object for {agent.name} (runtime.load(co, agent))")
    check_geometry(kernel, agent, grid3, workgroup3, dynamic_lds)
    return Geometry(grid3, workgroup3, max(grid_dims, wg_dims), dynamic_lds)


def check_geometry(kernel: Any, agent: Any, grid3: tuple[int, int, int],
                   workgroup3: tuple[int, int, int], dynamic_lds: int) -> None:
    """Check normalized sizes and dynamic LDS against ``agent``'s and ``kernel``'s limits
    (DispatchConfigError naming the limit)."""
    name = kernel.name
    if not isinstance(dynamic_lds, int) or isinstance(dynamic_lds, bool) or dynamic_lds < 0:
        raise DispatchConfigError(f"kernel {name}: dynamic LDS must be an int >= 0, "
                                  f"not {dynamic_lds!r}")
    max_dim = agent.workgroup_max_dim
    for axis, (size, limit) in enumerate(zip(workgroup3, max_dim)):
        if size > limit:
            raise DispatchConfigError(
                f"kernel {name}: workgroup size {workgroup3} exceeds {agent.name}'s limit of "
                f"{limit} work-items along {'xyz'[axis]}")
    flat = workgroup3[0] * workgroup3[1] * workgroup3[2]
    if flat > agent.workgroup_max_size:
        raise DispatchConfigError(
            f"kernel {name}: a workgroup of {flat} work-items exceeds {agent.name}'s limit of "
            f"{agent.workgroup_max_size}")
    kernel_max = kernel.max_flat_workgroup_size or flat
    if flat > kernel_max:
        raise DispatchConfigError(
            f"kernel {name}: a workgroup of {flat} work-items exceeds the kernel's "
            f"max_flat_workgroup_size of {kernel_max} (compiled in; rebuild with a larger "
            "__launch_bounds__ / amdgpu-flat-work-group-size, or launch smaller workgroups)")
    for axis, (size, limit) in enumerate(zip(grid3, agent.grid_max_dim)):
        if size > limit:
            raise DispatchConfigError(
                f"kernel {name}: grid size {grid3} exceeds {agent.name}'s limit of {limit} "
                f"work-items along {'xyz'[axis]}")
    total = grid3[0] * grid3[1] * grid3[2]
    if agent.grid_max_size and total > agent.grid_max_size:
        raise DispatchConfigError(
            f"kernel {name}: {total} work-items exceed {agent.name}'s grid limit of "
            f"{agent.grid_max_size}")
    lds = kernel.group_segment_size + dynamic_lds
    if agent.lds_size and lds > agent.lds_size:
        raise DispatchConfigError(
            f"kernel {name}: {kernel.group_segment_size} bytes of static LDS + {dynamic_lds} "
            f"dynamic = {lds} bytes exceed the {agent.lds_size} bytes a workgroup of "
            f"{agent.name} may use")
    lanes = kernel.wavefront_size or agent.wavefront_size
    scratch_limit = max_scratch_per_wave(agent.name)
    if scratch_limit is not None and kernel.private_segment_size * lanes > scratch_limit:
        raise DispatchConfigError(
            f"kernel {name}: {kernel.private_segment_size} bytes of private memory per "
            f"work-item x {lanes} lanes = {kernel.private_segment_size * lanes} bytes of "
            f"scratch per wave exceed {agent.name}'s limit of {scratch_limit} "
            "(COMPUTE_TMPRING_SIZE.WAVESIZE): shrink the kernel's private arrays or stack")


class _SlotTakenAgain(Exception):
    """A result's kernarg slot (or arena half) was taken by a later dispatch: its own dispatch
    completed before that (how DispatchResult.wait leaves a signal wait early)."""


def _completed(tracker: Any, where: int, generation: int, what: str, queue: Any) -> bool:
    """Has the dispatch (or batch) that used ``tracker``'s slot/half ``where`` with packet index
    ``generation`` completed? Raises ClosedError when its queue was closed before it did."""
    if tracker.indices[where] != generation:
        return True                   # taken again: only ever after it completed
    if tracker.closed:
        if tracker.final_values is not None and tracker.final_values[where] <= 0:
            return True
        raise queue.handle_state.error(
            f"it was closed before {what} completed, which therefore never will")
    return tracker.value(where) <= 0


def _wait_completed(tracker: Any, where: int, generation: int, what: str, queue: Any,
                    timeout: float) -> None:
    """Wait (at most ``timeout`` s) until _completed says so; the queue's error, or its
    closing, raises."""
    if _completed(tracker, where, generation, what, queue):
        return
    indices, check = tracker.indices, queue.check

    def abort() -> None:
        check()
        if indices[where] != generation:
            raise _SlotTakenAgain

    try:
        tracker.signals[where].wait(Condition.LT, 1, timeout=timeout, abort=abort)
    except _SlotTakenAgain:
        return
    except ClosedError:
        if not _completed(tracker, where, generation, what, queue):
            raise
    except WaitTimeoutError as exc:
        # the packet processor fetches nothing until a doorbell announces it
        raise WaitTimeoutError(
            f"{exc} If {what} was published without a doorbell (prepared.publish(), "
            "doorbell=False), nothing announced it: ring it first with queue.flush().") from None


def _check_after_completion(queue: Any) -> None:
    """Raise the error the queue stopped with, if any (completion was observed: a queue
    closed since then is no error of this dispatch)."""
    if queue.error is not None or not queue.is_closed:
        queue.check()


class BatchResult(NotCopyable):
    """Dispatches published by ``PreparedDispatch.batch``: ``chunks`` of (first index, count,
    signal of the chunk's closing barrier-AND packet), ``arena``, the queue's batch kernarg
    arena (hsapy.publishing.BatchArena), and ``halves``, the half of it each chunk used (its
    generation there tells when the chunk completed).

    The batch call makes its result without calling ``__init__`` (publishing.batcher sets the
    same five attributes itself): keep the two alike."""

    __slots__ = ("queue", "kernel", "chunks", "arena", "halves")

    def __init__(self, queue: Queue, kernel: Launchable, chunks: list[tuple[int, int, Any]],
                 arena: Any = None, halves: list[int] | None = None) -> None:
        self.queue = queue
        self.kernel = kernel
        self.chunks = chunks
        self.arena = arena
        self.halves = halves or []

    def __repr__(self) -> str:
        # a repr never raises (debuggers, logs and tracebacks call it), a closed queue's included
        try:
            done: Any = self.is_done
        except ClosedError:
            done = "cancelled"
        return (f"BatchResult(kernel={getattr(self.kernel, 'name', self.kernel)!r}, "
                f"dispatches={sum(count for _f, count, _s in self.chunks)}, done={done})")

    @property
    def indices(self) -> list[int]:
        """Packet indices of the dispatches (the closing barrier packets excluded)."""
        return [first + k for first, count, _signal in self.chunks for k in range(count)]

    @property
    def is_done(self) -> bool:
        """True once every chunk completed (ClosedError: the queue was closed before)."""
        return all(_completed(self.arena, half, first, "this batch", self.queue)
                   for (first, _count, _signal), half in zip(self.chunks, self.halves))

    def wait(self, timeout: float = 10.0) -> BatchResult:
        """Wait for every chunk (raising the queue's error if it stopped)."""
        timeout = check_timeout(timeout, "BatchResult.wait")
        deadline = time.monotonic() + timeout
        for (first, _count, _signal), half in zip(self.chunks, self.halves):
            _wait_completed(self.arena, half, first, "this batch", self.queue,
                            max(deadline - time.monotonic(), 0.0))
        _check_after_completion(self.queue)
        return self


class DispatchResult(NotCopyable):
    """One published dispatch: its packet ``index``, ``signal`` (completion), and after
    :meth:`wait`, GPU ``start``/``end`` timestamps (ticks) when profiling is enabled.

    The result holds its kernarg slot and the packet index it was published with (the slot's
    generation): once a later dispatch takes the slot, this one is known complete and the
    slot's signal belongs to the later one. A result whose queue was closed before its dispatch
    completed raises ClosedError from ``is_done`` and ``wait``."""

    # start/end default to the class attributes until wait() reads the timestamps: creating a
    # result on the hot path sets five slots and nothing else.
    __slots__ = ("queue", "kernel", "index", "_ring", "_slot", "__dict__")
    start: int | None = None
    end: int | None = None

    def __init__(self, queue: Queue, kernel: Launchable, index: int, ring: Any, slot: int) -> None:
        self.queue = queue
        self.kernel = kernel
        self.index = index
        self._ring = ring
        self._slot = slot

    @property
    def signal(self) -> Any:
        """The completion signal of the dispatch's kernarg slot (the next dispatch that takes
        the slot re-arms it: use it as a dependency while this result is not yet done)."""
        return self._ring.signals[self._slot]

    def __repr__(self) -> str:
        try:
            done: Any = self.is_done
        except ClosedError:
            done = "cancelled"
        return (f"DispatchResult(kernel={getattr(self.kernel, 'name', self.kernel)!r}, "
                f"index={self.index}, done={done}, start={self.start}, end={self.end})")

    @property
    def is_done(self) -> bool:
        """True once the dispatch completed (ClosedError: its queue was closed before)."""
        return _completed(self._ring, self._slot, self.index, "this dispatch", self.queue)

    def wait(self, timeout: float = 10.0) -> DispatchResult:
        """Wait for completion (raising the queue's error if it stopped) and read timestamps."""
        timeout = check_timeout(timeout, "DispatchResult.wait")
        ring, slot, index = self._ring, self._slot, self.index
        _wait_completed(ring, slot, index, "this dispatch", self.queue, timeout)
        _check_after_completion(self.queue)
        if ring.indices[slot] == index and not ring.closed:
            self._read_times()
        return self

    def _read_times(self) -> None:
        # Only a profiled queue's dispatches have timestamps: ROCr converts whatever the signal
        # holds (its start/end of a dispatch that recorded none are garbage) and warns on stderr.
        if not self.queue.is_profiling:
            return
        runtime = self.queue.runtime
        ffi, lib = runtime.ffi, runtime.lib
        times = ffi.new("hsa_amd_profiling_dispatch_time_t *")
        status = lib.hsa_amd_profiling_get_dispatch_time({"handle": self.queue.agent.handle},
                                                         self.signal.cdata, times)
        # the slot may have been taken again meanwhile: then the times are another dispatch's
        if status == 0 and times.end and self._ring.indices[self._slot] == self.index:
            self.start, self.end = int(times.start), int(times.end)

    @property
    def duration_us(self) -> float | None:
        """GPU-side duration from the dispatch timestamps (simulated time on the simulator)."""
        if self.start is None or self.end is None:
            return None
        return (self.end - self.start) * 1e6 / self.queue.runtime.timestamp_frequency

class PreparedDispatch(NotCopyable):
    """A launch prepared once: header|setup word, body template and kernarg packer.

    Calling it (``prepared(*args)``) takes a kernarg slot, packs the arguments, patches the
    kernarg address and completion signal into the body, and publishes: nothing else is
    computed per call (hsapy.publishing). ``batch([args, ...])`` publishes many with one
    doorbell."""

    def __init__(self, kernel: Launchable, queue: Queue, grid: Any, workgroup: Any,
                 dynamic_lds: int = 0, barrier: bool = False, acquire: Any = "system",
                 release: Any = "system") -> None:
        geometry = validate(kernel, queue, grid, workgroup, dynamic_lds)
        if barrier is not True and barrier is not False:
            try:
                barrier = check_bit(barrier, "barrier")
            except HsapyTypeError:
                raise DispatchConfigError(f"kernel {kernel.name}: barrier is a bool, not "
                                          f"{barrier!r:.40}") from None
        # what the reference way looks at on every call (validate checked them just now)
        self._states = _open_states(kernel, queue)
        self.kernel = kernel
        self.queue = queue
        self.geometry = geometry
        dims = geometry.dims  # hidden_grid_dims and the packet's setup agree with what was given
        self.packer = kernel.layout.packer(geometry.grid[:dims], geometry.workgroup[:dims],
                                           dynamic_lds, queue_ptr=queue.address,
                                           apertures=queue.apertures)
        template = aql.kernel_dispatch(
            kernel.kernel_object, geometry.grid, geometry.workgroup, dims=geometry.dims,
            private_segment_size=kernel.private_segment_size,
            group_segment_size=kernel.group_segment_size + dynamic_lds,
            barrier=barrier, acquire=acquire, release=release)
        self.word = template.word
        self._body = bytearray(template.body)
        self.ring = ring_for(queue, max(kernel.kernarg_size, self.packer.size, 1))
        self._slot_size = self.ring.slot_size
        self._template = DispatchTemplate(queue, self.ring, self.packer, self.word,
                                          bytes(template.body), self._states)
        # (arena half, count, shared segment) -> a batch chunk's rows and header|setup words
        self._chunks: dict[tuple[int, int, bool], tuple[np.ndarray, np.ndarray]] = {}

    # The per-dispatch paths (hsapy.publishing), each built on first use.
    @functools.cached_property
    def _dispatch(self) -> Any:
        """``dispatch(args, doorbell, kernel)`` -> DispatchResult (publishing.dispatcher)."""
        call = dispatcher(self._template, DispatchResult)
        call.__qualname__ = f"PreparedDispatch({self.kernel.name}).__call__"
        return call

    def __call__(self, *args: Any, doorbell: bool = True) -> DispatchResult:
        """Publish one dispatch with ``args``; returns its (not yet waited) result."""
        if doorbell is not True and doorbell is not False:
            doorbell = check_flag(doorbell, "PreparedDispatch: doorbell")
        return self._dispatch(args, doorbell, self.kernel)

    def _named(self, doorbell: bool) -> Any:
        params = parameter_names([slot.name for slot in self.kernel.layout.slots])
        call: Any = named_dispatcher(self._template, params, doorbell)
        if not isinstance(call, types.BuiltinFunctionType):   # (a compiled one has its own)
            call.__qualname__ = f"PreparedDispatch({self.kernel.name}).{call.__name__}"
            # what help() and inspect show: the kernel's parameters (not the MISSING defaults
            # and the *extra that let a wrong count reach hsapy's error)
            call.__signature__ = inspect.Signature(
                [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                 for name in params])
        return call

    @functools.cached_property
    def publish(self) -> Any:
        """The fast path without the doorbell: ``prepared.publish(a, b, ...)`` -- exactly the
        kernel's explicit parameters, by position -- writes one dispatch packet and returns its
        packet index. The packet processor does not fetch it until a doorbell announces it
        (``submit``, ``queue.flush()``, ``queue.ring_doorbell(index)``), so many can be
        published and announced with one doorbell. Too few or too many arguments raise
        KernelArgumentError naming the kernel's parameters, before anything is written.

        It is the call itself (hsapy.publishing.named_dispatcher), built on first access and
        then found in the instance's ``__dict__``: calling it runs no method frame of its own,
        and a reference taken once (``publish = prepared.publish``) is just as fast."""
        return self._named(False)

    @functools.cached_property
    def submit(self) -> Any:
        """``prepared.submit(a, b, ...)``: ``publish``, then the doorbell with the packet's
        index. Returns the packet index (no result object)."""
        return self._named(True)

    @functools.cached_property
    def batch(self) -> Any:
        """``prepared.batch(arg_lists, doorbell=True)`` publishes one dispatch per argument list
        (each exactly the kernel's explicit parameters, by position), vectorised: one
        reservation and one doorbell per chunk of at most ``queue size - 1`` dispatches (and
        at most BATCH_ARENA_SLOTS). Returns a BatchResult to wait on.

        Each chunk ends with a barrier-AND packet (barrier bit set, so it completes only after
        every dispatch before it) whose completion signal guards the chunk's kernarg arena; the
        dispatch packets themselves carry no completion signal. Argument lists equal to the
        first share its kernarg segment (kernels only read it).

        Like ``publish``, it is the call itself (hsapy.publishing.batcher: a builtin compiled
        for the host where one can be made, hsapy._batch_native), found in the instance's
        ``__dict__`` once made. The first call makes it, with the queue's batch
        kernarg arena (made on first use), and puts it there."""
        prepared = weakref.ref(self)
        template, chunks, kernel, slot_size = (self._template, self._chunks, self.kernel,
                                               self._slot_size)
        made: list[Any] = []

        def batch(arg_lists: Sequence[Sequence[Any]], doorbell: bool = True) -> BatchResult:
            if not made:
                _raise_if_closed(template.states)
                made.append(batcher(template, arena_for(template.queue, slot_size), chunks,
                                    BatchResult, kernel))
                if not isinstance(made[0], types.BuiltinFunctionType):   # (compiled: its own name)
                    made[0].__qualname__ = batch.__qualname__
                owner = prepared()
                if owner is not None:
                    owner.__dict__["batch"] = made[0]
            return made[0](arg_lists, doorbell)

        batch.__qualname__ = f"PreparedDispatch({self.kernel.name}).batch"
        return batch

    def packet(self) -> aql.Packet:
        """The packet template every call publishes, for study: ``kernarg_address`` and
        ``completion_signal`` are 0 here because each call patches in its own slot's."""
        return aql.Packet(self.word, self._template.body)


def prepare(kernel: Launchable, queue: Queue, grid: Any, workgroup: Any, dynamic_lds: int = 0,
            barrier: bool = False, acquire: Any = "system",
            release: Any = "system") -> PreparedDispatch:
    """Prepare a launch of ``kernel`` on ``queue`` (see :class:`PreparedDispatch`)."""
    return PreparedDispatch(kernel, queue, grid, workgroup, dynamic_lds, barrier, acquire, release)


LAUNCH_CACHE_SIZE = 64     # prepared plain launches kept per queue
_NOTHING_FOUND = (None, None)   # LaunchCache.found / last_call when they name no entry
_LAUNCHES = "launches"     # the LaunchCache's key in Queue.attachments


class LaunchCache(dict):
    """The plain launches prepared on one queue, so that ``kernel.launch`` costs what a
    prepared call costs from its second call with a shape on: key -> entry.

    The key is everything that makes the packet and the kernarg template: the kernel's argument
    layout (``Kernel.layout``; ``with_types`` makes a new one), grid, workgroup, dynamic LDS,
    barrier bit and fence scopes, each as given where it has the one type the key compares
    exactly (int, a tuple of ints, bool, str), else normalized (``_launch_key``): ``64.0`` or
    ``True`` never find the entry of ``64`` or ``1``. The kernel's executable, agent and the
    queue fix the rest. An entry is ``[kernel (weakly), dispatch closure, used since the last
    sweep, lifetime states]``: a hit needs the very kernel the entry was made for.

    Bounded (LAUNCH_CACHE_SIZE), least recently used first out, by the CLOCK approximation: a
    hit sets its entry's use bit; making room sweeps the entries in order, clearing set bits,
    and drops the first entry found clear (one not used since the last sweep). ``found`` is
    (key, entry) of the entry found or added last, compared before the dict is asked. It
    lives in the queue's attachments, so closing the queue drops it, and among the runtime's
    dispatch trackers, so closing an executable (or the runtime) drops the entries that use it
    (``forget_all``). It holds kernels only weakly, so it keeps no executable alive."""

    __slots__ = ("__weakref__", "found", "last_call")
    # one cache is one object (the runtime's WeakSet of trackers holds it), not its contents
    __hash__ = object.__hash__  # type: ignore[assignment]  # (dict declares it None)
    __eq__ = object.__eq__

    def __init__(self) -> None:
        super().__init__()
        # (key, entry) of the entry found last: a loop launching one shape compares its key
        # with this one (a tuple comparison, each item first by identity) instead of hashing
        # it for the dict. Only ever an entry the dict holds (every removal forgets it). One
        # tuple, so a thread reading it never pairs one key with another's entry.
        self.found: tuple = _NOTHING_FOUND
        # (call, entry) of the last call whose options were all of the key's exact types, as
        # ``launch``'s first test sees it (_call_key: the key's values, the timeout and the
        # class of each, so ``64.0`` never equals ``64`` here): a loop launching one shape
        # pays one tuple comparison and no type test. Also only ever an entry the dict holds.
        self.last_call: tuple = _NOTHING_FOUND

    def add(self, key: tuple, kernel: Any, dispatch: Any, states: tuple) -> list:
        """Remember a prepared launch, making room first; returns its entry."""
        while len(self) >= LAUNCH_CACHE_SIZE:
            for old, entry in list(self.items()):
                if entry[2]:
                    entry[2] = False       # a second chance: used since the last sweep
                else:
                    self.drop(old)
                    break
        entry = self[key] = [weakref.ref(kernel), dispatch, False, states]
        self.found = (key, entry)
        return entry

    def drop(self, key: tuple) -> None:
        """Forget one entry (and the last-found one, if it is that)."""
        self.found = self.last_call = _NOTHING_FOUND
        self.pop(key, None)

    def clear(self) -> None:
        self.found = self.last_call = _NOTHING_FOUND
        super().clear()

    def forget_all(self) -> None:
        """An executable or the runtime is closing: drop the entries that use a closed one."""
        for key, entry in list(self.items()):
            if any(state.closed for state in entry[3]):
                self.drop(key)

    def in_flight(self) -> list[Any]:
        """Nothing: the entries' dispatches are the kernarg rings' (KernargRing.in_flight)."""
        return []

    def queue_closing(self) -> None:
        self.clear()

    def close(self, by: str = "") -> None:
        self.clear()


def _launch_key(layout: Any, grid: Any, workgroup: Any, dynamic_lds: Any, barrier: Any,
                acquire: Any, release: Any) -> tuple | None:
    """The LaunchCache key of a launch whose options are not all of the key's exact types:
    each normalized as the preparation reads it, or None when one is not valid (the
    preparation then raises the typed error)."""
    try:
        grid_key = _dims_key(grid, "grid")
        workgroup_key = _dims_key(workgroup, "workgroup")
        if (not isinstance(dynamic_lds, int) or isinstance(dynamic_lds, bool)
                or dynamic_lds < 0):
            return None
        if barrier.__class__ is not bool:
            barrier = check_bit(barrier, "barrier")
        acquire = aql.FenceScope(aql._scope(acquire)).name.lower()
        release = aql.FenceScope(aql._scope(release)).name.lower()
    except Exception:
        return None
    return (layout, grid_key, workgroup_key, int(dynamic_lds), bool(barrier), acquire, release)


def _dims_key(value: Any, what: str) -> int | tuple[int, ...]:
    if value.__class__ is int:
        return value
    sizes, dims = normalize_dims(value, what)
    return sizes[:dims]


def _prepare_launch(kernel: Launchable, queue: Queue, key: tuple | None, grid: Any, workgroup: Any,
                    dynamic_lds: Any, barrier: Any, acquire: Any, release: Any
                    ) -> tuple[Any, list | None]:
    """A launch's dispatch closure on a cache miss, prepared (every check), then cached: (the
    closure, its cache entry or None)."""
    prepared = PreparedDispatch(kernel, queue, grid, workgroup, dynamic_lds, barrier, acquire,
                                release)
    dispatch = prepared._dispatch
    if key is not None:
        cache = queue.attachments.get(_LAUNCHES)
        if cache is None:
            cache = queue.attachments[_LAUNCHES] = LaunchCache()
            queue.runtime._dispatch_trackers.add(cache)
        return dispatch, cache.add(key, kernel, dispatch, prepared._states)
    return dispatch, None


def launch(kernel: Launchable, queue: Queue, args: Sequence[Any], grid: Any, workgroup: Any,
           dynamic_lds: int = 0, barrier: bool = False, acquire: Any = "system",
           release: Any = "system", wait: bool = True, timeout: float = 10.0) -> DispatchResult:
    """Launch ``kernel(*args)`` over ``grid`` work-items in ``workgroup``-sized groups.

    With ``wait`` (default) this waits for completion with ``timeout`` seconds and re-raises the
    queue's error if the dispatch failed; the result carries GPU timestamps when the queue has
    profiling enabled. ``timeout`` bounds that completion wait only. Publishing has two waits of
    its own, each of at most 10 s, as a prepared call has: for its kernarg slot (the dispatch
    that used the slot a lap of the queue's kernarg ring ago must have completed; then
    WaitTimeoutError) and for a free packet slot on a full queue (then QueueFullError). So a
    call returns or raises within ``timeout`` + 20 s, and within 20 s with ``wait=False``. (The
    fast path reads no clock to share one deadline among them; Graph.launch, which is not on
    it, does.) The preparation is kept per queue (LaunchCache): a later launch of the same
    kernel with the same grid, workgroup and options publishes as a prepared call does."""
    # the same call as the last one whose options were all of exact types (LaunchCache.
    # last_call): every check it passed then holds again (a loop of one shape: about 380 ->
    # 320 ns before the dispatch itself, timeit on the 2-vCPU development VM)
    entry = None
    try:
        last = queue.attachments[_LAUNCHES].last_call
        # _call_key's tuple, written out: a call of it would cost a frame
        if (kernel.layout, grid, workgroup, dynamic_lds, barrier, acquire, release, timeout,
                grid.__class__, workgroup.__class__, dynamic_lds.__class__, barrier.__class__,
                acquire.__class__, release.__class__, timeout.__class__,
                args.__class__) == last[0]:
            entry = last[1]
    except (AttributeError, KeyError, ValueError):
        # no launch on this queue yet, or not a Queue / Kernel, or an option that == cannot
        # compare (a numpy array): the checked way judges it
        pass
    if entry is not None and (wait is True or wait is False) and entry[0]() is kernel:
        entry[2] = True
        result = entry[1](args, True, kernel)
        return result.wait(timeout) if wait else result
    return _checked_launch(kernel, queue, args, grid, workgroup, dynamic_lds, barrier, acquire,
                           release, wait, timeout)


def _call_key(layout: Any, grid: Any, workgroup: Any, dynamic_lds: Any, barrier: Any,
              acquire: Any, release: Any, timeout: Any, args: Any) -> tuple:
    """What LaunchCache.last_call holds of a call (see there)."""
    return (layout, grid, workgroup, dynamic_lds, barrier, acquire, release, timeout,
            grid.__class__, workgroup.__class__, dynamic_lds.__class__, barrier.__class__,
            acquire.__class__, release.__class__, timeout.__class__, args.__class__)


def _checked_launch(kernel: Launchable, queue: Queue, args: Sequence[Any], grid: Any,
                    workgroup: Any, dynamic_lds: Any, barrier: Any, acquire: Any, release: Any,
                    wait: Any, timeout: Any) -> DispatchResult:
    """``launch`` with every check: the cache found through the key, or a preparation."""
    exact = timeout.__class__ is float and (args.__class__ is list or args.__class__ is tuple)
    call_timeout = timeout
    if timeout.__class__ is not float or not 0.0 <= timeout < _MAX_TIMEOUT:
        timeout = check_timeout(timeout, "launch")
    if wait is not True and wait is not False:
        raise HsapyTypeError(f"launch: wait is a bool, not {wait!r}")
    if args.__class__ is not tuple and args.__class__ is not list:
        args = tuple(check_items(args, "launch: args is the list of the kernel's arguments"))
    try:
        cache = queue.attachments[_LAUNCHES]
        layout: KernargLayout | None = kernel.layout
    except (AttributeError, KeyError):  # no launch on this queue yet, or not a Queue / Kernel
        cache = None
        layout = getattr(kernel, "layout", None)
    if (grid.__class__ is int and workgroup.__class__ is int and dynamic_lds.__class__ is int
            and barrier.__class__ is bool and acquire.__class__ is str
            and release.__class__ is str):
        key: tuple | None = (layout, grid, workgroup, dynamic_lds, barrier, acquire, release)
    else:
        key = _launch_key(layout, grid, workgroup, dynamic_lds, barrier, acquire, release)
        exact = False
    if cache is None:
        entry = None
    else:
        found = cache.found
        if key == found[0]:
            entry = found[1]
        else:
            entry = cache.get(key)
            if entry is not None:
                cache.found = (key, entry)
    if entry is not None and entry[0]() is kernel:
        entry[2] = True
        dispatch = entry[1]
    else:
        dispatch, entry = _prepare_launch(kernel, queue, key if layout is not None else None,
                                          grid, workgroup, dynamic_lds, barrier, acquire,
                                          release)
        cache = queue.attachments.get(_LAUNCHES)
    if exact and entry is not None and cache is not None:
        cache.last_call = (_call_key(layout, grid, workgroup, dynamic_lds, barrier, acquire,
                                     release, call_timeout, args), entry)
    result = dispatch(args, True, kernel)
    return result.wait(timeout) if wait else result


class Graph(NotCopyable):
    """Packets recorded once and replayed: ``graph.add_dispatch(...)``, ``graph.add_barrier``,
    then ``graph.launch(queue)`` any number of times.

    Recording packs every kernarg segment once; a replay copies those bytes into fresh kernarg
    slots and patches only the kernarg address and completion signal of each dispatch packet,
    then publishes the whole batch with one doorbell."""

    def __init__(self, queue: Queue) -> None:
        if not isinstance(queue, Queue):
            raise HsapyTypeError(f"Graph records packets for a Queue (agent.create_queue), not "
                                 f"{type(queue).__name__}")
        self.queue = queue
        self._nodes: list[tuple[str, Any, Any, bytes, tuple[Any, ...]]] = []

    def add_dispatch(self, kernel: Launchable, args: Sequence[Any], grid: Any, workgroup: Any,
                     dynamic_lds: int = 0, barrier: bool = True) -> None:
        """Record a dispatch (barrier bit set by default: graph nodes run in order)."""
        prepared = PreparedDispatch(kernel, self.queue, grid, workgroup, dynamic_lds, barrier)
        args = check_items(args, "Graph.add_dispatch: args is the list of the kernel's arguments")
        kernarg = prepared.packer.pack(*args)
        # what replays must still be open: the packed bytes keep the buffers' addresses, and a
        # closed buffer's memory may belong to another allocation by then
        states = prepared._states + _argument_states(args, self.queue.runtime)
        self._nodes.append(("dispatch", prepared, prepared.packet(), kernarg, states))

    def add_packet(self, packet: aql.Packet) -> None:
        """Record any other packet (barrier-AND/OR, barrier-value) verbatim."""
        from hsapy.queue import _packet

        self.queue.handle_state.check()
        self._nodes.append(("packet", None, _packet(packet), b"", ()))

    def __len__(self) -> int:
        return len(self._nodes)

    def launch(self, wait: bool = True, timeout: float = 10.0,
               doorbell: bool = True) -> list[DispatchResult]:
        """Replay the recorded packets as one batch; returns the dispatch results.

        ``timeout`` bounds the whole call: taking each dispatch's kernarg slot (WaitTimeoutError),
        room on the queue (QueueFullError) and, with ``wait``, completion share one deadline."""
        queue = self.queue
        timeout = check_timeout(timeout, "Graph.launch")
        deadline = time.monotonic() + timeout
        wait = check_flag(wait, "Graph.launch: wait")
        doorbell = check_flag(doorbell, "Graph.launch: doorbell")
        queue.handle_state.check()
        for _kind, _prepared, _node_packet, _kernarg, states in self._nodes:
            _raise_if_closed(states)
        if not self._nodes:
            raise HsapyValueError("Graph.launch: the graph is empty; add_dispatch first")
        packets: list[aql.Packet] = []
        results: list[tuple[int, Any, Any, int]] = []
        try:
            for position, (kind, prepared, packet, kernarg, _states) in enumerate(self._nodes):
                if kind == "packet":
                    packets.append(packet)
                    continue
                ring = prepared.ring
                slot = ring.take(_time_left(deadline))
                results.append((position, prepared.kernel, ring, slot))
                ring.forget(slot)
                ring.view[slot * ring.slot_size:slot * ring.slot_size + len(kernarg)] = kernarg
                packets.append(aql.Packet(packet.word, slot_body(
                    prepared._template, ring.addresses[slot], ring.handles[slot])))
            first = queue.publish_batch(packets, _time_left(deadline), doorbell)
        except BaseException:
            for _position, _kernel, ring, slot in results:
                ring.give_back(slot)          # taken, never published: free again
            raise
        for position, _kernel, ring, slot in results:
            ring.indices[slot] = first + position
        out = [DispatchResult(queue, kernel, first + position, ring, slot)
               for position, kernel, ring, slot in results]
        if wait:
            for result in out:
                result.wait(max(deadline - time.monotonic(), 0.0))
        return out


def _time_left(deadline: float) -> float:
    """Seconds until ``deadline`` (none: 0), to the millisecond, so that an error naming the
    wait says the timeout given, not the microseconds spent before it."""
    return max(round(deadline - time.monotonic(), 3), 0.0)


def enable_profiling(queue: Queue) -> None:
    """Record dispatch timestamps for ``queue`` (hsa_amd_profiling_set_profiler_enabled)."""
    queue.enable_profiling()
