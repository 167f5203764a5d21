"""The per-dispatch path of hsapy.dispatch, written twice: plainly, and fast.

One dispatch of a prepared launch (docs/architecture.md "Data flow of one dispatch"): take the
next kernarg slot of the queue's :class:`KernargRing` once the dispatch that used it last has
completed, arming its completion signal; pack the arguments into the slot; patch the slot's
kernarg address and signal into the packet body; reserve a queue index; write the body, then
header|setup with one release store; record the slot's generation (the packet index); ring the
doorbell. A batch does the same for many packets with one half of a :class:`BatchArena`, one
reservation, a barrier-AND packet closing the chunk, and one doorbell.

The plain implementation, :func:`reference_dispatch` and :func:`reference_batch`, takes those
steps one by one through the public interfaces (``KernargRing.take``, ``Packer.pack_into``,
``Queue.reserve``/``write``/``ring_doorbell``) and remembers nothing between calls. It is the
meaning of a dispatch. It is also the way every call goes where the fast path steps aside.

The fast implementation, :func:`dispatcher`, :func:`named_dispatcher` and :func:`batcher`,
publishes the same bytes with less work per call:

- A slot remembers whose hidden arguments and packet body it holds (``KernargRing.state``), so
  a call with the same prepared launch packs only the explicit arguments and copies a ready
  body. Anything else -- a slot's first use, another launch used it since, signals armed through
  the API, observers attached, a closed queue, executable or runtime -- takes the reference way
  (which checks that everything is open), then records the slot's new owner.
- The calls are closures over everything that does not change between calls (no attribute
  lookups), writing through the queue's ring as ``Queue.producer()`` gives it.
- A batch packs one kernarg segment for identical argument lists, and copies packets built once
  per (arena half, count, shared segment) as whole rows.
- Where builtins can be compiled, ``publish``/``submit`` and the batch call are CPython builtins
  written in LLVM IR (hsapy._publish_native, hsapy._batch_native) that take the short branch
  in machine code, calling the same Python callables, and hand every other call to the Python
  function.

tests/sim/test_publishing.py holds the two to the same packets and kernarg segments, byte for
byte, over random kernels, arguments, geometries and ring positions (hypothesis).
"""
from __future__ import annotations

import functools
import itertools
import keyword
import linecache
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hsapy import aql
from hsapy._batch_native import native_batcher
from hsapy._checks import check_flag, check_items
from hsapy._native import row_writer
from hsapy._publish_native import native_publisher
from hsapy.errors import HsapyTypeError, HsapyValueError, WaitTimeoutError
from hsapy.kernarg import KernelArgumentError
from hsapy.observers import OBSERVERS, notify_signal_reused, watch_observers
from hsapy.queue import INVALID_WORD
from hsapy.signal import Condition, Signal, value_words

__all__ = ["KernargRing", "BatchArena", "DispatchTemplate", "reference_dispatch",
           "reference_batch", "dispatcher", "named_dispatcher", "batcher", "ring_for",
           "arena_for", "parameter_names", "slot_body", "RING_SLOTS", "BATCH_ARENA_SLOTS"]

RING_SLOTS = 256
BATCH_ARENA_SLOTS = 512
# kernarg_address, reserved2 and completion_signal: packet bytes 40..63, body bytes 36..59
_BODY_PATCH = struct.Struct("<QQQ")
_BODY_PATCH_OFFSET = 40 - 4
# How long taking a slot or a reservation waits for the packet processor (seconds).
_TIMEOUT = 10.0
# Chunk layouts a batcher keeps (chunk_packets): a batch size or two, on either arena half.
_CHUNK_LAYOUTS = 8


def _all_value_words(runtime: Any, signals: list[Signal]) -> list[memoryview] | None:
    """Every signal's value words (hsapy.signal.value_words), or None where this runtime's
    signals are not laid out as amd_signal_t."""
    values = [value_words(runtime, s) for s in signals]
    present = [v for v in values if v is not None]
    return present if len(present) == len(values) else None



def _wait_in_flight(queue: Any, signal: Any, timeout: float, what: str) -> None:
    """Wait (at most ``timeout`` seconds) until ``signal`` drops below 1: the dispatch or batch
    that holds kernarg memory has completed. Packets published without a doorbell are
    announced first, else the wait could be for a packet the processor was never told of."""
    queue.flush()
    try:
        signal.wait(Condition.LT, 1, timeout=timeout, abort=queue.check)
    except WaitTimeoutError:
        raise WaitTimeoutError(
            f"{what}. The queue is not making progress: an earlier packet may wait on a "
            "signal that never changes (a barrier dependency, a barrier-value packet), or a "
            "kernel does not end") from None

class KernargRing:
    """Kernarg slots of one size for one queue, each with its own completion signal.

    A slot's signal follows the HSA convention (armed to 1, the packet processor decrements it
    to 0 on completion), so a DispatchResult's signal can serve as a barrier dependency.
    ``take()`` returns the next slot once its previous dispatch completed, re-armed.

    Taking a slot reads the signal's value and re-arms it with a silent store. Where the runtime
    lays signals out as amd_signal_t (ROCr and the simulator; probed by
    ``hsapy.signal.value_words``) both are one C load/store on the value word, as ROCr's own
    hsa_signal_load_relaxed / hsa_signal_silent_store_relaxed do; elsewhere they are the API
    calls.

    ``state[slot]`` is ``(owner, value words, body)``: ``owner`` the Packer whose hidden-argument
    template the slot's kernarg segment holds (None: nobody's), ``value words`` the slot
    signal's ``value_words`` (None where signals are not amd_signal_t), ``body`` the packet body
    that owner's prepared launch publishes with this slot (its kernarg address and completion
    signal patched in). One tuple, so a prepared call finds all three with one lookup.

    ``indices[slot]`` is the packet index of the dispatch that last used the slot: its
    generation. A DispatchResult holds (slot, index); once ``indices[slot]`` differs, the slot
    was taken again, which happens only after its dispatch completed. ``in_flight()`` lists
    the slots whose dispatch has not completed, for releases that must wait for them. When the
    queue closes (``queue_closing``, then ``close``) every slot becomes nobody's and
    ``final_values`` keeps the slot signals' last values, so results still answer."""

    def __init__(self, queue: Any, slot_size: int, slots: int = RING_SLOTS) -> None:
        runtime = queue.runtime
        if slots & (slots - 1):
            raise HsapyValueError(f"kernarg ring: {slots} slots is not a power of two")
        self.queue = queue
        self.slot_size = slot_size
        self.slots = slots
        self.buffer = queue.agent.kernarg_pool.allocate(slot_size * slots)
        if runtime.runs_rocr:
            self.buffer.allow_access([queue.agent])
        self.view = runtime.ffi.buffer(runtime.ffi.cast("uint8_t *", self.buffer.address),
                                       slot_size * slots)
        self.signals = [runtime.create_signal(0) for _ in range(slots)]
        self.cdatas = [s.cdata for s in self.signals]
        self.handles = [s.handle for s in self.signals]
        self.addresses = [self.buffer.address + i * slot_size for i in range(slots)]
        # Slots are handed out in turn by an itertools.cycle: next() is one atomic step, so
        # threads sharing a ring never take the same slot.
        self.slot_order = itertools.cycle(range(slots))
        self.values = _all_value_words(runtime, self.signals)
        slot_values: list[memoryview | None] = [None] * slots if self.values is None else [
            *self.values]
        self.state: list[tuple[Any, Any, bytes | None]] = [
            (None, value, None) for value in slot_values]
        self.indices = [-1] * slots
        self.closed = False
        self.closed_by = ""
        self.final_values: list[int] | None = None
        watch_observers(self)
        runtime._dispatch_trackers.add(self)
        self._load = runtime.lib.hsa_signal_load_relaxed
        # Arming needs no wake-up: nobody waits for a value of 1 (hsa.h: silent store).
        self._store = runtime.lib.hsa_signal_silent_store_relaxed

    def take(self, timeout: float = _TIMEOUT) -> int:
        """Index of the next slot whose previous dispatch has completed; its signal re-armed."""
        if self.closed:
            self.queue.handle_state.check()
        i = next(self.slot_order)
        self.arm(i, timeout)
        return i

    def arm(self, i: int, timeout: float = _TIMEOUT) -> None:
        """Re-arm slot ``i``'s signal (telling observers first) once its previous dispatch has
        completed: through the value word where there is one, else through the API."""
        if OBSERVERS:
            notify_signal_reused(self.handles[i])
        values = self.values
        if values is not None:
            value = values[i]
            if value[1] > 0:
                self.wait_free(i, timeout)
            value[1] = 1                                   # silent store: armed
        else:
            cdata = self.cdatas[i]
            if self._load(cdata) > 0:
                self.wait_free(i, timeout)
            self._store(cdata, 1)

    def observers_attached(self) -> None:
        """An observer was attached (hsapy.observers.add_observer): make every slot nobody's, so
        the fast path's calls take the reference way, which tells observers."""
        self.forget_all()

    def forget_all(self) -> None:
        """Make every slot nobody's: the next prepared call with each takes the reference way
        (which checks that the queue, the executable and the runtime are open)."""
        for i in range(self.slots):
            self.forget(i)

    def forget(self, i: int) -> None:
        """Slot ``i``'s kernarg segment is about to hold other bytes than its owner's template."""
        self.state[i] = (None, self.state[i][1], None)

    def value(self, i: int) -> int:
        """Slot ``i``'s signal value (> 0: its dispatch has not completed)."""
        if self.closed:
            return self.final_values[i] if self.final_values is not None else 1
        values = self.values
        return values[i][1] if values is not None else self._load(self.cdatas[i])

    def in_flight(self) -> list[Any]:
        """A mark (a callable: "has it completed?") per slot whose dispatch has not completed.
        Nothing is in flight on a closed queue or one stopped by an error (its packets never
        run again)."""
        queue = self.queue
        if self.closed or queue.error is not None:
            return []
        return [self._mark(i) for i in range(self.slots) if self.value(i) > 0]

    def _mark(self, i: int) -> Any:
        generation, indices = self.indices[i], self.indices

        def completed() -> bool:
            return (self.closed or self.queue.error is not None or indices[i] != generation
                    or self.value(i) <= 0)
        return completed

    def queue_closing(self) -> None:
        """The queue is being closed: no prepared call may take a slot from now on."""
        self.closed = True
        self.forget_all()

    def wait_free(self, i: int, timeout: float = _TIMEOUT) -> None:
        """Slot ``i`` is still in flight: wait (with a timeout) until its dispatch completes."""
        _wait_in_flight(
            self.queue, self.signals[i], timeout,
            f"kernarg ring of queue {self.queue.id}: slot {i} of {self.slots} is still in use "
            f"after {timeout:g} s -- the dispatch that took it a lap ago has not completed, "
            "so every slot is in flight")

    def give_back(self, i: int) -> None:
        """Slot ``i`` was taken but its packet never published: mark it free again."""
        self._store(self.cdatas[i], 0)

    def close(self, by: str = "") -> None:
        """Release the slots' signals and memory, once the queue runs no packet any more;
        ``final_values`` keeps what the signals said last (see DispatchResult)."""
        if self.final_values is not None:
            return
        self.closed = True
        self.closed_by = by or "Queue.close()"
        self.forget_all()
        self.final_values = [
            (self.values[i][1] if self.values is not None else self._load(self.cdatas[i]))
            if not self.signals[i].is_closed else 1 for i in range(self.slots)]
        for signal in self.signals:
            signal._state.close(self.closed_by)
        self.buffer._state.close(self.closed_by)


class BatchArena:
    """Kernarg space for batches: two halves used alternately, each guarded by the completion
    signal of the barrier-AND packet that ends the batch which used it.

    ``owners[half]`` is the Packer whose hidden-argument template the half's first segment
    holds (None: nobody's), so a batch that shares one segment packs only explicit arguments
    there; ``indices[half]`` the first packet index of the batch that used the half last (its
    generation; see KernargRing.indices)."""

    def __init__(self, queue: Any, slot_size: int) -> None:
        runtime = queue.runtime
        self.queue = queue
        self.slot_size = slot_size
        self.half_size = slot_size * BATCH_ARENA_SLOTS
        self.buffer = queue.agent.kernarg_pool.allocate(2 * self.half_size)
        if runtime.runs_rocr:
            self.buffer.allow_access([queue.agent])
        self.view = runtime.ffi.buffer(runtime.ffi.cast("uint8_t *", self.buffer.address),
                                       2 * self.half_size)
        self.signals = [runtime.create_signal(0), runtime.create_signal(0)]
        self.values = _all_value_words(runtime, self.signals)
        # halves in turn, one atomic next() per batch (as KernargRing.slot_order)
        self.half_order = itertools.cycle((0, 1))
        self.owners: list[Any] = [None, None]
        self.indices = [-1, -1]
        self.closed = False
        self.closed_by = ""
        self.final_values: list[int] | None = None
        runtime._dispatch_trackers.add(self)

    def take(self, timeout: float = _TIMEOUT) -> tuple[int, Any]:
        """The next half, once the batch that used it last has completed; its signal armed."""
        if self.closed:
            self.queue.handle_state.check()
        half = next(self.half_order)
        signal = self.signals[half]
        if OBSERVERS:
            notify_signal_reused(signal.handle)
        value = self.values[half] if self.values is not None else None
        if (value[1] if value is not None else signal.load()) > 0:
            self.wait_free(half, timeout)
        if value is not None:
            value[1] = 1            # silent store, as KernargRing.arm
        else:
            signal.store(1, relaxed=True, silent=True)
        return half, signal

    def wait_free(self, half: int, timeout: float = _TIMEOUT) -> None:
        """The half's last batch is still in flight: wait (with a timeout) until it completes."""
        _wait_in_flight(
            self.queue, self.signals[half], timeout,
            f"batch kernarg arena of queue {self.queue.id}: the batch that used half {half} "
            f"two batches ago has not completed after {timeout:g} s, so no half is free")

    def give_back(self, half: int) -> None:
        """The half was taken but no batch published with it: mark it free again."""
        if self.values is not None:
            self.values[half][1] = 0
        else:
            self.signals[half].store(0, relaxed=True)

    def forget_all(self) -> None:
        """No half holds anyone's template any more (see KernargRing.forget_all)."""
        self.owners[0] = self.owners[1] = None

    def offset_of(self, half: int) -> int:
        return half * self.half_size

    def address_of(self, half: int) -> int:
        return self.buffer.address + self.offset_of(half)

    def value(self, half: int) -> int:
        """The half's guard signal value (> 0: its batch has not completed)."""
        if self.closed:
            return self.final_values[half] if self.final_values is not None else 1
        value = self.values[half] if self.values is not None else None
        return value[1] if value is not None else self.signals[half].load()

    def in_flight(self) -> list[Any]:
        """A mark per half whose batch has not completed (see KernargRing.in_flight)."""
        if self.closed or self.queue.error is not None:
            return []
        return [self._mark(half) for half in (0, 1) if self.value(half) > 0]

    def _mark(self, half: int) -> Any:
        generation, indices = self.indices[half], self.indices

        def completed() -> bool:
            return (self.closed or self.queue.error is not None
                    or indices[half] != generation or self.value(half) <= 0)
        return completed

    def queue_closing(self) -> None:
        """The queue is being closed: no batch may take a half from now on."""
        self.closed = True
        self.forget_all()

    def close(self, by: str = "") -> None:
        """Release the halves' signals and memory (see KernargRing.close)."""
        if self.final_values is not None:
            return
        self.closed = True
        self.closed_by = by or "Queue.close()"
        self.forget_all()
        self.final_values = [
            (self.values[h][1] if self.values is not None else self.signals[h].load())
            if not self.signals[h].is_closed else 1 for h in (0, 1)]
        for signal in self.signals:
            signal._state.close(self.closed_by)
        self.buffer._state.close(self.closed_by)


def ring_for(queue: Any, size: int) -> KernargRing:
    """The queue's kernarg ring for segments of ``size`` bytes (slots of a power of two, at
    least 256 bytes), made on first use."""
    slot_size = max(256, 1 << (max(size, 1) - 1).bit_length())
    rings = queue.attachments
    ring = rings.get(slot_size)
    if ring is None:
        ring = rings[slot_size] = KernargRing(queue, slot_size, slots=min(RING_SLOTS, queue.size))
    return ring


def arena_for(queue: Any, slot_size: int) -> BatchArena:
    """The queue's batch arena for kernarg slots of ``slot_size`` bytes, made on first use."""
    arenas = queue.attachments
    key = ("batch", slot_size)
    arena = arenas.get(key)
    if arena is None:
        arena = arenas[key] = BatchArena(queue, slot_size)
    return arena


@dataclass(frozen=True)
class DispatchTemplate:
    """What every dispatch of one prepared launch publishes: the header|setup ``word``, the
    packet ``body`` (bytes 4..63) with kernarg_address and completion_signal 0, the ``packer``
    that fills a kernarg segment, the ``ring`` its slots come from, the ``queue``, and the
    lifetime ``states`` (runtime, queue, executable) that must be open."""

    queue: Any
    ring: KernargRing
    packer: Any
    word: int
    body: bytes
    states: tuple[Any, ...]


def slot_body(template: DispatchTemplate, address: int, signal: int) -> bytes:
    """The template's packet body with kernarg segment ``address`` and completion ``signal``."""
    body = bytearray(template.body)
    _BODY_PATCH.pack_into(body, _BODY_PATCH_OFFSET, address, 0, signal)
    return bytes(body)


def _check_open(states: tuple[Any, ...]) -> None:
    for state in states:
        state.check()


# -- the reference: every step through the public interfaces ------------------------------------

def reference_dispatch(template: DispatchTemplate, args: Sequence[Any], doorbell: bool,
                       slot: int | None = None) -> int:
    """Publish one dispatch of ``template`` with ``args``, step by step; its packet index.

    ``slot`` is a kernarg slot already drawn from the ring's order (the fast path's, when it
    steps aside); by default the next one is taken."""
    _check_open(template.states)
    ring, queue = template.ring, template.queue
    if slot is None:
        slot = ring.take()
    else:
        ring.arm(slot)
    try:
        ring.forget(slot)                       # the segment gets other bytes than an owner's
        template.packer.pack_into(ring.view, slot * ring.slot_size, *args)
        body = slot_body(template, ring.addresses[slot], ring.handles[slot])
        index = queue.reserve(1, _TIMEOUT)
    except BaseException:
        ring.give_back(slot)
        raise
    queue.write(index, template.word, body)
    ring.indices[slot] = index
    if doorbell:
        queue.ring_doorbell(index)
    return index


def _shares_one_segment(arg_lists: list[Sequence[Any]]) -> bool:
    """Whether every argument list equals the first, so the batch packs one kernarg segment
    (kernels only read it). Lists that cannot say (numpy arrays compare elementwise) do not."""
    first = arg_lists[0]
    try:
        return all(args is first or bool(args == first) for args in arg_lists)
    except (ValueError, TypeError):
        return False


def reference_batch(template: DispatchTemplate, arena: BatchArena,
                    arg_lists: list[Sequence[Any]], doorbell: bool) -> tuple[int, int, Any, int]:
    """Publish one dispatch per argument list and a closing barrier-AND packet, step by step;
    returns (first packet index, dispatches, the barrier's completion signal, arena half).

    At most ``min(queue size - 1, BATCH_ARENA_SLOTS)`` argument lists (one chunk). The
    dispatch packets carry no completion signal: the barrier-AND (barrier bit set) completes
    after all of them, and its signal guards the arena half."""
    _check_open(template.states)
    queue, packer, slot_size = template.queue, template.packer, arena.slot_size
    count = len(arg_lists)
    half, signal = arena.take()
    try:
        arena.owners[half] = None
        base = arena.offset_of(half)
        if _shares_one_segment(arg_lists):
            _pack_checked(packer, arena.view, base, arg_lists[0])
            addresses = [arena.address_of(half)] * count
        else:
            for k, args in enumerate(arg_lists):
                _pack_checked(packer, arena.view, base + k * slot_size, args)
            addresses = [arena.address_of(half) + k * slot_size for k in range(count)]
        packets = [aql.Packet(template.word, slot_body(template, address, 0))
                   for address in addresses]
        packets.append(aql.barrier_and([], completion_signal=signal.handle))
        first = queue.reserve(count + 1, _TIMEOUT)
    except BaseException:
        arena.give_back(half)
        raise
    for k, packet in enumerate(packets):
        queue.write(first + k, packet.word, packet.body)
    arena.indices[half] = first
    if doorbell:
        queue.ring_doorbell(first + count)
    return first, count, signal, half


def _argument_list(args: Any) -> Any:
    """One dispatch's arguments in a batch: ``args`` itself when a list or tuple, else its items
    (hsapy._checks.check_items: a mapping, a set, a str or a number is refused, so a dict's keys
    are never packed as the kernel's arguments)."""
    if args.__class__ is tuple or args.__class__ is list:
        return args
    try:
        return check_items(args, "PreparedDispatch.batch: each argument list is the list of "
                                 "the kernel's arguments")
    except HsapyTypeError as exc:
        raise KernelArgumentError(str(exc)) from None


def _pack_checked(packer: Any, view: Any, offset: int, args: Any) -> None:
    """Packer.pack_into, naming the mistake when ``args`` is not a list of arguments."""
    args = _argument_list(args)
    try:
        packer.pack_into(view, offset, *args)
    except TypeError as exc:
        if isinstance(exc, HsapyTypeError):
            raise
        raise HsapyTypeError(f"PreparedDispatch.batch takes a list of argument lists (one per "
                             f"dispatch): {exc}") from None


# -- the fast path ------------------------------------------------------------------------------

def _stepping_aside(template: DispatchTemplate) -> Callable[[int, Any, bool], int]:
    """``general(slot, args, doorbell)``: the fast path's way when a slot does not hold its
    launch's template -- the reference dispatch with that slot, then, where the slot's signal
    has value words and nobody observes, the slot's new owner and body are recorded so that
    the next call with it takes the short branch."""
    ring, packer = template.ring, template.packer
    state, values, addresses, handles = ring.state, ring.values, ring.addresses, ring.handles

    def general(slot: int, args: Any, doorbell: bool) -> int:
        index = reference_dispatch(template, args, doorbell, slot)
        if values is not None:
            state[slot] = (packer, values[slot], slot_body(template, addresses[slot],
                                                           handles[slot]))
            # Looked at after the store: an observer attached meanwhile has either been seen
            # here or has had add_observer forget this slot after the store.
            if OBSERVERS:
                ring.forget(slot)
        return index

    return general


def dispatcher(template: DispatchTemplate, result_type: Any) -> Callable[[Any, bool, Any], Any]:
    """``dispatch(args, doorbell, kernel)`` for one prepared launch: publishes one dispatch
    (the doorbell when asked) and returns ``result_type(queue, kernel, index, ring, slot)``.

    The short branch: the slot holds this launch's hidden arguments and body and its signal is
    an amd_signal_t (``state[slot]`` names this packer), so the call arms the signal through its
    value word, packs the explicit arguments, reserves, copies the body, stores header|setup
    and records the slot's generation. Everything else goes the reference way (see
    _stepping_aside); observers are told there, so this branch never looks at OBSERVERS
    (add_observer makes every slot nobody's). The closure holds no PreparedDispatch: one
    lives in each cached plain launch, and a reference cycle would leave garbage for the
    cyclic collector."""
    ring, queue, packer, word = template.ring, template.queue, template.packer, template.word
    state, view, slot_size, indices = ring.state, ring.view, ring.slot_size, ring.indices
    slot_order, wait_free, give_back = ring.slot_order, ring.wait_free, ring.give_back
    producer = queue.producer()
    add, queue_ptr, free_end, mask = (producer.add_write_index, producer.queue_ptr,
                                      producer.free_end, producer.mask)
    bodies, words, make_space = producer.bodies, producer.words, producer.make_space
    pack_explicit, explicit = packer.pack_explicit_into, packer.explicit_count
    ring_doorbell, everything = queue.ring_doorbell, slice(None)
    store_doorbell, doorbell_signal = producer.store_doorbell, producer.doorbell_signal
    general = _stepping_aside(template)
    # without value words no slot ever names this owner: every call takes the reference way
    fast_owner = packer if ring.values is not None else object()

    def dispatch(args: Any, doorbell: bool, kernel: Any) -> Any:
        slot = next(slot_order)
        owner, value, body = state[slot]
        if owner is not fast_owner:
            return result_type(queue, kernel, general(slot, args, doorbell), ring, slot)
        if value[1] > 0:
            wait_free(slot)
        value[1] = 1                                       # silent store: armed
        try:
            if args or explicit:
                pack_explicit(view, slot * slot_size, *args)
            index = add(queue_ptr, 1)
            if index >= free_end[0]:
                make_space(index, index, _TIMEOUT)         # abandons the index if it fails
        except BaseException:
            give_back(slot)
            raise
        at = index & mask
        bodies[at][everything] = body
        words[at << 4] = word                              # the release store (Queue.write)
        indices[slot] = index
        if doorbell:
            if OBSERVERS:                                  # (attached since the slot check)
                ring_doorbell(index)
            else:                                          # Queue.ring_doorbell's store
                store_doorbell(doorbell_signal, index)
        return result_type(queue, kernel, index, ring, slot)

    return dispatch


# ``publish(a, b, ...)`` and ``submit(a, b, ...)`` take the kernel's explicit parameters by
# name and position, so this one call is made from source per parameter list: CPython runs a
# call to a function with a fixed list of positional parameters without building an argument
# tuple and without parsing arguments, checks the count itself, and names a missing parameter;
# a kernel without explicit arguments calls no packer at all. (To see what that saves, time
# this very source made with the one parameter ``*args``, ``named_dispatcher(template,
# ("*args",), False)``, with benchmarks/launch.py's loop.) The steps are dispatcher's, line for
# line; the source is registered with linecache, so a traceback through a dispatch shows it.
# Each parameter defaults to MISSING and ``*extra`` takes any beyond them, so a call with the
# wrong number of arguments reaches ``refuse`` (KernelArgumentError naming the kernel, its
# parameters and what was given) instead of CPython's bare TypeError: a missing argument only
# on the failing path (the packer refuses MISSING), surplus ones by the one test of ``extra``.
_NAMED_SOURCE = """\
def make(ring, queue, producer, packer, word, general, refuse):
    state, view, slot_size, indices = ring.state, ring.view, ring.slot_size, ring.indices
    slot_order, wait_free, give_back = ring.slot_order, ring.wait_free, ring.give_back
    add, queue_ptr, free_end, mask = (producer.add_write_index, producer.queue_ptr,
                                      producer.free_end, producer.mask)
    bodies, words, make_space = producer.bodies, producer.words, producer.make_space
    pack_explicit, ring_doorbell, everything = (packer.pack_explicit_into, queue.ring_doorbell,
                                                slice(None))
    store_doorbell, doorbell_signal = producer.store_doorbell, producer.doorbell_signal
    fast_owner = packer if ring.values is not None else object()

    def {name}({params}):
        if extra:
            refuse(({args}) + extra)
        slot = next(slot_order)
        owner, value, body = state[slot]
        if owner is not fast_owner:
            return general(slot, ({args}))
        if value[1] > 0:
            wait_free(slot)
        value[1] = 1
        try:
{pack}
            index = add(queue_ptr, 1)
            if index >= free_end[0]:
                make_space(index, index, {timeout})
        except BaseException:
            give_back(slot)
            refuse(({args}))
            raise
        at = index & mask
        bodies[at][everything] = body
        words[at << 4] = word
        indices[slot] = index
{ring}
        return index

    def aside(slot, {signature}):
        # the compiled {name}'s way for a slot of another launch (hsapy._publish_native): a
        # frame of this source in a traceback, as the function above has
        return general(slot, ({args}))

    return {name}, aside
"""


# submit's doorbell: Queue.ring_doorbell's store, or the method itself when an observer was
# attached since the slot check (it tells observers)
_DOORBELL_SOURCE = """\
        if OBSERVERS:
            ring_doorbell(index)
        else:
            store_doorbell(doorbell_signal, index)"""


class _Missing:
    """The default of a generated call's parameters: an argument not given."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()


def _named_source(doorbell: bool, params: tuple[str, ...]) -> str:
    signature = ", ".join(params)
    defaults = "".join(f"{param}=MISSING, " for param in params)
    return _NAMED_SOURCE.format(
        name="submit" if doorbell else "publish", params=defaults + "*extra",
        signature=signature,
        args=signature + ("," if len(params) == 1 else ""), timeout=_TIMEOUT,
        pack=(f"            pack_explicit(view, slot * slot_size, {signature})" if params
              else "            pass"),
        ring=_DOORBELL_SOURCE if doorbell else "")


@functools.lru_cache(maxsize=512)
def _named_maker(doorbell: bool, params: tuple[str, ...]) -> Any:
    """``make`` (see _NAMED_SOURCE) compiled for one parameter list."""
    source = _named_source(doorbell, params)
    name = "submit" if doorbell else "publish"
    filename = f"<hsapy fast path: {name}({', '.join(params)})>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), {"__builtins__": __builtins__,
                                             "OBSERVERS": OBSERVERS, "MISSING": MISSING},
         namespace)
    return namespace["make"]


def named_dispatcher(template: DispatchTemplate, params: tuple[str, ...],
                     doorbell: bool) -> Callable[..., int]:
    """``publish(a, b, ...)`` (``doorbell`` False) or ``submit(a, b, ...)``: dispatcher's
    steps taking the kernel's explicit parameters ``params`` (see parameter_names) by
    position; returns the packet index. The function generated from _NAMED_SOURCE, or where
    builtins can be compiled and the slot signals have value words, hsapy._publish_native's
    builtin over the same objects, which hands it every call it does not take itself."""
    make = _named_maker(doorbell, params)
    stepping_aside = _stepping_aside(template)
    layout = template.packer.layout
    call = f"PreparedDispatch({layout.kernel_name}).{'submit' if doorbell else 'publish'}"

    def refuse(args: tuple) -> None:
        # the failing path only: a parameter left MISSING or arguments beyond the kernel's
        missing = [name for name, value in zip(params, args) if value is MISSING]
        if missing or len(args) != len(params):
            given = len(args) - len(missing)
            raise layout.count_error(given, missing, call) from None

    def general(slot: int, args: tuple) -> int:
        try:
            return stepping_aside(slot, args, doorbell)
        except KernelArgumentError:
            refuse(args)
            raise

    ring, queue, packer = template.ring, template.queue, template.packer
    producer = queue.producer()
    generated, aside = make(ring, queue, producer, packer, template.word, general, refuse)
    if ring.values is None:
        return generated
    # the short branch compiled for the host, the generated function for every other call
    # (hsapy._publish_native)
    name = "submit" if doorbell else "publish"
    doc = (f"{name}($self, {', '.join(params)})\n--\n\n{call}: publish one dispatch of "
           f"kernel {layout.kernel_name}{' and ring the doorbell' if doorbell else ''}; "
           "returns its packet index (compiled for the host: hsapy._publish_native).")
    native = native_publisher(generated, name, doc, dict(
        slot_order=ring.slot_order, state=ring.state, fast_owner=packer,
        wait_free=ring.wait_free, give_back=ring.give_back, aside=aside, missing=MISSING,
        view=ring.view, pack_explicit=packer.pack_explicit_into, add=producer.add_write_index,
        queue_ptr=producer.queue_ptr, free_end=producer.free_end, make_space=producer.make_space,
        timeout=_TIMEOUT, indices=ring.indices, observers=OBSERVERS,
        ring_doorbell=queue.ring_doorbell, store_doorbell=producer.store_doorbell,
        doorbell_signal=producer.doorbell_signal), dict(
        ring=producer.ring_address, mask=producer.mask, slot_size=ring.slot_size,
        word=template.word, doorbell=int(doorbell), params=len(params)),
        [signal.handle + 8 for signal in ring.signals])
    return generated if native is None else native


@functools.lru_cache(maxsize=1)
def _reserved_names() -> frozenset[str]:
    """Every name the generated source uses (comments aside): a kernel parameter may not
    shadow one."""
    source = _NAMED_SOURCE + _DOORBELL_SOURCE + " MISSING"     # (MISSING: the defaults)
    return frozenset(re.findall(r"[A-Za-z_]\w*", re.sub(r"#[^\n]*", "", source)))


def parameter_names(names: Sequence[str]) -> tuple[str, ...]:
    """Python parameter names for a kernel's explicit arguments: each argument's own name where
    it is an identifier that no other argument, Python keyword or generated-source name uses,
    else ``arg<i>`` (with underscores appended while another parameter has that name)."""
    reserved = _reserved_names()
    usable = [name.isidentifier() and not keyword.iskeyword(name) and name not in reserved
              and names.count(name) == 1 for name in names]
    taken = {name for name, ok in zip(names, usable) if ok}
    out = []
    for i, (name, ok) in enumerate(zip(names, usable)):
        if not ok:
            name = f"arg{i}"
            while name in taken or name in reserved:
                name += "_"
            taken.add(name)
        out.append(name)
    return tuple(out)


def chunk_packets(template: DispatchTemplate, arena: BatchArena, half: int, count: int,
                  shared: bool) -> tuple[np.ndarray, np.ndarray]:
    """The rows of one batch chunk -- ``count`` dispatch packets and the closing barrier-AND --
    as a C-contiguous (count + 1, 64) uint8 array whose header|setup words hold INVALID_WORD
    (what a free slot holds, so whole rows can be copied before the header stores), and their
    real header|setup words. They depend only on the arena half, the count and whether the
    dispatches share one kernarg segment."""
    base = arena.address_of(half)
    if shared:
        addresses = np.full(count, base, np.uint64)
    else:
        addresses = base + np.arange(count, dtype=np.uint64) * np.uint64(arena.slot_size)
    packets = np.empty((count + 1, 64), np.uint8)
    packets.view(np.uint32)[:, 0] = INVALID_WORD
    packets[:count, 4:] = np.frombuffer(template.body, np.uint8)
    packets[:count].view(np.uint64)[:, 5] = addresses            # kernarg_address (byte 40)
    packets[:count].view(np.uint64)[:, 7] = 0                    # completion_signal (byte 56)
    fence = aql.barrier_and([], completion_signal=arena.signals[half].handle)
    packets[count, 4:] = np.frombuffer(fence.body, np.uint8)
    words = np.full(count + 1, template.word, np.uint32)
    words[count] = fence.word
    return packets, words


def batcher(template: DispatchTemplate, arena: BatchArena,
            chunks: dict[Any, tuple[np.ndarray, np.ndarray]], result_type: Any, kernel: Any
            ) -> Callable[..., Any]:
    """``batch(arg_lists, doorbell=True)`` (PreparedDispatch.batch): reference_batch's steps
    for each chunk of at most ``min(queue size - 1, BATCH_ARENA_SLOTS)`` argument lists,
    returning ``result_type(queue, kernel, [(first index, count, signal), ...], arena,
    [half, ...])``.

    One call is one Python frame for a batch of one chunk, the call a loop of batches makes:
    anything else -- not a list, a doorbell that is not a bool, no lists, more than one chunk --
    goes to ``general``, which checks and converts the arguments, splits them into chunks and
    makes this call once per chunk. (One frame instead of a method calling a chunk function:
    about 0.2 us less per batch of 256 empty argument lists on the simulator on the 2-vCPU
    development VM, timed as benchmarks/launch.py's batch256 with the two ways alternating in
    one process, 400 batches each: first quartile 3.9 against 4.1 us and 4.8 against 5.0 us
    in two runs.)

    The short way: arm the half through its signal's value word; pack one segment when every
    list equals the first (only the explicit arguments when the half already holds this
    launch's hidden arguments), else each; take the chunk's rows from ``chunks`` (built once
    per half, count and sharing: ``chunk_packets``); reserve; copy the rows into the ring (their
    headers INVALID), then store the header|setup words in order; ring the doorbell. With
    observers attached or signals without value words, the reference way.

    Where builtins can be compiled, what this returns is hsapy._batch_native's builtin, which
    takes the short way itself for one chunk of argument lists that are all one object and
    hands every other call to the Python function (``general`` calls it per chunk)."""
    queue, packer, states = template.queue, template.packer, template.states
    producer = queue.producer()
    add, queue_ptr, free_end, mask = (producer.add_write_index, producer.queue_ptr,
                                      producer.free_end, producer.mask)
    rows, header_words, make_space = producer.rows, producer.word_array, producer.make_space
    ring_address, write_rows = producer.ring_address, row_writer()
    size = mask + 1
    limit = min(size - 1, BATCH_ARENA_SLOTS)
    ring_doorbell = queue.ring_doorbell
    store_doorbell, doorbell_signal = producer.store_doorbell, producer.doorbell_signal
    half_order, values, owners, indices = (arena.half_order, arena.values, arena.owners,
                                           arena.indices)
    signals, view, slot_size, half_size = (arena.signals, arena.view, arena.slot_size,
                                           arena.half_size)
    pack, pack_explicit, explicit = (packer.pack_into, packer.pack_explicit_into,
                                     packer.explicit_count)
    # Per entry of ``chunks``: the rows as flat bytes, their words, and the addresses of both.
    # Without the write_rows builtin, memoryviews copy the rows holding the GIL (numpy lets it
    # go for a copy this size, and the simulator's packet processor taking it then makes the
    # publishing thread wait to get it back) and numpy stores the words. With it,
    # one call does both (benchmarks/launch.py's batch256 on a 16-core host: the numpy store
    # and its indexing were a fifth of the batch's samples under py-spy).
    flat: dict[Any, tuple[memoryview, np.ndarray, int, int]] = {}
    new = object.__new__

    def chunk_entry(half: int, count: int, shared: bool = True) -> Any:
        """``flat``'s entry for the chunk layout (half, count, shared), made (and kept in
        ``chunks`` too) where there is none; at most _CHUNK_LAYOUTS are kept."""
        key = (half, count, shared)
        entry = flat.get(key)
        if entry is None:
            if len(chunks) >= _CHUNK_LAYOUTS:
                chunks.clear()
                flat.clear()
            chunks[key] = made = chunk_packets(template, arena, half, count, shared)
            # (numpy's stubs give ndarray the buffer protocol only from Python 3.12)
            entry = flat[key] = (memoryview(made[0]).cast("B"),  # type: ignore[arg-type]
                                 made[1], made[0].ctypes.data, made[1].ctypes.data)
        return entry

    def batch(arg_lists: list[Sequence[Any]], doorbell: bool = True) -> Any:
        if arg_lists.__class__ is not list or doorbell.__class__ is not bool:
            return general(arg_lists, doorbell)
        count = len(arg_lists)
        if not 0 < count <= limit:
            return general(arg_lists, doorbell)
        for state in states:
            if state.closed:
                raise state.error()
        if OBSERVERS or values is None:
            first, count, signal, half = reference_batch(template, arena, arg_lists, doorbell)
            return result_type(queue, kernel, [(first, count, signal)], arena, [half])
        half = next(half_order)
        value = values[half]
        if value[1] > 0:
            arena.wait_free(half)
        value[1] = 1                                       # silent store: armed
        try:
            first_args = arg_lists[0]
            try:
                shared = arg_lists.count(first_args) == count   # identity first: C speed
            except (ValueError, TypeError):
                shared = False
            base = half * half_size
            if shared and first_args.__class__ is not tuple and first_args.__class__ is not list:
                first_args = _argument_list(first_args)
            if shared and owners[half] is packer:
                if first_args or explicit:
                    pack_explicit(view, base, *first_args)
            else:
                owners[half] = None
                if shared:
                    pack(view, base, *first_args)
                else:
                    for args in arg_lists:
                        if args.__class__ is not tuple and args.__class__ is not list:
                            args = _argument_list(args)
                        pack(view, base, *args)
                        base += slot_size
                owners[half] = packer
            entry = flat.get((half, count, shared))
            if entry is None:
                entry = chunk_entry(half, count, shared)
            packets, hwords, packets_address, words_address = entry
            first = add(queue_ptr, count + 1)
            last = first + count
            if last >= free_end[0]:
                make_space(first, last, _TIMEOUT)          # abandons them if it fails
        except TypeError as exc:
            arena.give_back(half)
            if isinstance(exc, HsapyTypeError):
                raise
            raise HsapyTypeError(f"PreparedDispatch.batch takes a list of argument lists (one "
                                 f"per dispatch): {exc}") from None
        except BaseException:
            arena.give_back(half)
            raise
        at = first & mask
        end = at + count + 1
        if write_rows is not None:
            if end <= size:
                write_rows(ring_address + (at << 6), packets_address, count + 1, words_address)
            else:                                          # wraps around the ring
                head = size - at
                write_rows(ring_address + (at << 6), packets_address, head, words_address)
                write_rows(ring_address, packets_address + (head << 6), end - size,
                           words_address + (head << 2))
        elif end <= size:
            rows[at << 6:end << 6] = packets
            header_words[at << 4:end << 4:16] = hwords
        else:                                              # wraps around the ring
            head = size - at
            rows[at << 6:] = packets[:head << 6]
            rows[:(end - size) << 6] = packets[head << 6:]
            header_words[at << 4::16] = hwords[:head]
            header_words[:(end - size) << 4:16] = hwords[head:]
        indices[half] = first
        if doorbell:
            if OBSERVERS:
                ring_doorbell(last)
            else:                                          # Queue.ring_doorbell's store
                store_doorbell(doorbell_signal, last)
        # result_type(queue, kernel, [(first, count, signal)], arena, [half]) without the
        # Python frame of its __init__: about 0.3 us of a batch of 256 that takes 4.5 right after
        # a wait, on the 2-vCPU development VM (in-process A/B, first quartiles)
        result = new(result_type)
        result.queue, result.kernel, result.chunks, result.arena, result.halves = (
            queue, kernel, [(first, count, signals[half])], arena, [half])
        return result

    def general(arg_lists: Any, doorbell: Any) -> Any:
        if doorbell is not True and doorbell is not False:
            doorbell = check_flag(doorbell, "PreparedDispatch.batch: doorbell")
        for state in states:
            if state.closed:
                raise state.error()
        if arg_lists.__class__ is not list:
            arg_lists = check_items(arg_lists, "PreparedDispatch.batch takes a list of "
                                               "argument lists")
        chunk_list: list[tuple[int, int, Any]] = []
        halves: list[int] = []
        one_chunk = short[0]
        for start in range(0, len(arg_lists), limit):
            part = one_chunk(arg_lists[start:start + limit], doorbell)
            chunk_list += part.chunks
            halves += part.halves
        return result_type(queue, kernel, chunk_list, arena, halves)

    short = [batch]                     # what ``general`` calls per chunk: the compiled one
    if write_rows is None or values is None:
        return batch
    # the short way compiled for the host, this function for everything else (hsapy._batch_native)
    native = native_batcher(batch, dict(
        states=states, observers=OBSERVERS, half_order=half_order, owners=owners, packer=packer,
        pack=pack, pack_explicit=pack_explicit, view=view, add=add, queue_ptr=queue_ptr,
        free_end=free_end, make_space=make_space, timeout=_TIMEOUT, indices=indices,
        store_doorbell=store_doorbell, doorbell_signal=doorbell_signal, signals=signals,
        wait_free=arena.wait_free, result_type=result_type, queue=queue, kernel=kernel,
        arena=arena, flat=flat, chunk_entry=chunk_entry), dict(
        value0=signals[0].handle + 8, value1=signals[1].handle + 8, limit=limit,
        half_size=half_size, ring=ring_address, mask=mask, explicit=explicit,
        dispatch_word=template.word, barrier_word=aql.barrier_and([]).word, count0=0, count1=0,
        rows0=0, rows1=0))
    if native is None:
        return batch
    short[0] = native
    return native
