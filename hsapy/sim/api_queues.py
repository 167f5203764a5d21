"""SimLib's queue functions: hsa_queue_create / destroy / inactivate, the queue indices (their
memory-order variants are generated in simlib.py from ORDER_VARIANTS), priorities, a stopped
queue's error callback and memory-fault events; and the compiled hot paths each SimLib installs
for the producer's index operations."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from hsapy.errors import STATUS_NAMES
from hsapy.hsa_enums import (
    HSA_AMD_GPU_MEMORY_FAULT_EVENT,
    HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT,
    HSA_STATUS_ERROR_INVALID_AGENT,
    HSA_STATUS_ERROR_INVALID_ARGUMENT,
    HSA_STATUS_ERROR_INVALID_QUEUE,
    HSA_STATUS_ERROR_INVALID_QUEUE_CREATION,
    HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
    HSA_STATUS_ERROR_MEMORY_FAULT,
    HSA_STATUS_ERROR_NOT_INITIALIZED,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES,
    HSA_STATUS_SUCCESS,
)
from hsapy.sim.objects import SimAgent, uint64_argument
from hsapy.sim.queues import (
    READ_INDEX_WORD,
    WRITE_INDEX_WORD,
    SimQueue,
)

__all__ = ["QueuesMixin", "compiled_add_write_index", "compiled_load_read_index",
           "installed_load_read_index",
           "installed_add_write_index", "NO_QUEUE"]

_log = logging.getLogger("hsapy.sim")


def compiled_add_write_index(queue_pointers: dict[Any, SimQueue],
                              last_queue: list[tuple[Any, Any, Any]],
                              slow: Callable[[Any, int], int]) -> Callable[[Any, int], int]:
    """hsa_queue_add_write_index_scacq_screl for one SimLib: SimQueue.add_write_index with the
    queue lookup and the token (SimQueue.write_token) inlined. ``queue_pointers`` maps each live
    queue pointer to its SimQueue; ``last_queue[0]`` is (the pointer object of the last call,
    its token, its amd_queue_t as uint64 words) -- a producer passes the same cdata on every
    call, and an identity test costs less than hashing a cdata for the dict (the queue's
    destruction resets it). Anything unusual (an unknown queue, a token held by another
    producer) goes the general way, ``slow``.

    The sum is range-checked by the store itself: the words are a memoryview of uint64, which
    refuses (ValueError) what a uint64_t cannot hold, so only a negative ``value`` needs a test
    of its own; a sum past 2^64 - 1 of a valid ``value`` then wraps around in ``_wrapped``."""
    word = WRITE_INDEX_WORD

    def hsa_queue_add_write_index_scacq_screl(queue: Any, value: int) -> int:
        """Fetch-and-add the write index; return the previous value."""
        known, token, words = last_queue[0]
        if known is not queue:
            try:
                sim_queue = queue_pointers[queue]
            except (KeyError, TypeError):
                return slow(queue, value)
            token, words = sim_queue.write_token, sim_queue.struct_words
            last_queue[0] = (queue, token, words)
        try:
            old = token.pop()
        except IndexError:
            return slow(queue, value)
        try:
            if value.__class__ is not int and value.__class__ is not bool:
                value = uint64_argument(value)         # a numpy integer: the token holds ints
            new = old + value
            if new < old:
                raise OverflowError("can't convert negative number to unsigned")
            words[word] = new                         # amd_queue_t.write_dispatch_id
        except ValueError:
            new = _wrapped(old, value, token, words, word)
        except BaseException:
            # what cffi does with a value a uint64_t cannot take: raise, the index untouched
            token.append(old)
            uint64_argument(value)
            raise
        token.append(new)
        return old

    return hsa_queue_add_write_index_scacq_screl


# What the builtin's state names as its queue when it has none: an object no caller has, so no
# argument (not even None) matches it.
NO_QUEUE = object()


def installed_add_write_index(queue_pointers: dict[Any, SimQueue],
                              last_queue: list[tuple[Any, Any, Any]],
                              slow: Callable[[Any, int], int]
                              ) -> tuple[Callable[[Any, int], int], list[Any] | None]:
    """(hsa_queue_add_write_index_scacq_screl for one SimLib, the state list to reset when a
    queue is destroyed, or None): compiled_add_write_index's function as a builtin compiled for
    the host (hsapy.sim.native_index) where one can be made, else the Python function itself.

    The builtin handles a call with the queue its state names; every other call goes to
    ``miss``, which points the state at the queue it finds (its token, the address of its
    write_dispatch_id) before the Python function does the work. It changes the three items
    with one slice assignment (one C call under the GIL), so a builtin call on another thread
    never pairs one queue with another's token or word; NO_QUEUE names no queue (a destroyed
    queue's state is reset to it)."""
    python_add = compiled_add_write_index(queue_pointers, last_queue, slow)
    from hsapy.sim.native_index import native_add_write_index

    state: list[Any] = [NO_QUEUE, None, 0, None]

    def miss(queue: Any, value: int) -> int:
        try:
            sim_queue = queue_pointers.get(queue)
        except TypeError:
            sim_queue = None
        if sim_queue is not None:          # one slice assignment: one step for other threads
            state[0:3] = (queue, sim_queue.write_token,
                          sim_queue.address + 8 * WRITE_INDEX_WORD)
        return python_add(queue, value)

    state[3] = miss
    native = native_add_write_index(state)
    if native is None:
        return python_add, None
    return native, state


def _wrapped(old: int, value: Any, token: list, words: Any, word: int) -> int:
    """compiled_add_write_index's sum that a uint64 cannot hold: with a valid ``value`` it wraps
    around, as C's fetch-and-add on a uint64_t does; else cffi's error for ``value`` is raised
    and the index is left untouched (the token given back)."""
    try:
        new = (old + uint64_argument(value)) & 0xFFFFFFFFFFFFFFFF
        words[word] = new
    except BaseException:
        token.append(old)
        raise
    return new


def compiled_load_read_index(queue_pointers: dict[Any, SimQueue],
                              last_queue: list[tuple[Any, Any, Any]],
                              slow: Callable[[Any], int]) -> Callable[[Any], int]:
    """hsa_queue_load_read_index_scacquire / _relaxed for one SimLib: SimQueue.read_index with
    the queue lookup inlined, through the same table and last-queue cache as
    compiled_add_write_index (a producer re-reads the read index when the ring may be full)."""

    def hsa_queue_load_read_index_scacquire(queue: Any) -> int:
        """Read index (amd_queue_t.read_dispatch_id)."""
        known, _token, words = last_queue[0]
        if known is not queue:
            try:
                words = queue_pointers[queue].struct_words
            except (KeyError, TypeError):
                return slow(queue)
        return words[READ_INDEX_WORD]

    return hsa_queue_load_read_index_scacquire


def installed_load_read_index(queue_pointers: dict[Any, SimQueue],
                              last_queue: list[tuple[Any, Any, Any]],
                              slow: Callable[[Any], int],
                              add_state: list[Any] | None) -> Callable[[Any], int]:
    """hsa_queue_load_read_index_scacquire for one SimLib: compiled_load_read_index's function,
    or where the add is a builtin (``add_state``, see installed_add_write_index) a builtin that
    reads the read index of the queue that state names and hands any other queue to it
    (hsapy.sim.native_index.native_load_read_index)."""
    python_load = compiled_load_read_index(queue_pointers, last_queue, slow)
    if add_state is None:
        return python_load
    from hsapy.sim.native_index import native_load_read_index

    native = native_load_read_index(add_state, 8 * (READ_INDEX_WORD - WRITE_INDEX_WORD),
                                    python_load)
    return python_load if native is None else native


class QueuesMixin:
    """The queue part of :class:`~hsapy.sim.simlib.SimLib` (which provides ``self``'s state)."""

    # ------------------------------------------------------------------------------------------
    # queues

    def hsa_queue_create(self, agent: Any, size: int, type: int, callback: Any, data: Any,
                         private_segment_size: int, group_segment_size: int, queue: Any) -> int:
        """Create a user-mode AQL queue and start its packet processor."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(queue):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        sim_agent = self.agent_by_handle(agent)
        if sim_agent is None:
            return HSA_STATUS_ERROR_INVALID_AGENT
        if int(type) not in (0, 1, 2):          # MULTI, SINGLE, COOPERATIVE
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if not sim_agent.is_gpu:
            return HSA_STATUS_ERROR_INVALID_QUEUE_CREATION   # ROCr's CPU agent has no AQL queues
        profile = sim_agent.profile
        size = int(size)
        # ROCr GpuAgent::QueueCreate: power of two -> INVALID_ARGUMENT, above maxAqlSize_ ->
        # OUT_OF_RESOURCES, below minAqlSize_ -> INVALID_ARGUMENT.
        if size == 0 or size & (size - 1):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if size > profile.queue_max_size:
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES
        if size < profile.queue_min_size:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if int(type) == 2:
            # no cooperative (GWS) queues in the simulator
            return HSA_STATUS_ERROR_INVALID_QUEUE_CREATION
        if sum(q.agent is sim_agent for q in list(self.queues.values())) >= profile.queues_max:
            # HSA_AGENT_INFO_QUEUES_MAX queues exist already
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES
        with self._state_lock:
            queue_id = self._next_queue_id
            self._next_queue_id += 1
        cb = None if self._is_null(callback) else callback
        try:
            sim_queue = SimQueue(self, sim_agent, size, int(type), cb, data, queue_id)
        except MemoryError:
            return HSA_STATUS_ERROR_OUT_OF_RESOURCES
        self.queues[sim_queue.address] = sim_queue
        pointer = self.ffi.cast("hsa_queue_t *", sim_queue.address)
        # cdata pointers hash and compare by address: the producer's hot path finds its queue
        # without an ffi.cast per call.
        self._queue_pointers[pointer] = sim_queue
        queue[0] = pointer
        return HSA_STATUS_SUCCESS

    def _destroy_queue(self, sim_queue: SimQueue) -> None:
        sim_queue.stop()
        sim_queue.is_destroyed = True
        self.queues.pop(sim_queue.address, None)
        pointer = self.ffi.cast("hsa_queue_t *", sim_queue.address)
        self._queue_pointers.pop(pointer, None)
        self._last_queue[0] = (None, None, None)
        if self._add_state is not None:          # the builtin's (see installed_add_write_index)
            self._add_state[0] = NO_QUEUE
        self.signals.destroy(sim_queue.doorbell.handle)
        self.memory.free(sim_queue.ring_address)
        self.memory.free(sim_queue.address)

    def hsa_queue_destroy(self, queue: Any) -> int:
        """Stop the packet processor and free the queue."""
        return self._on_queue(queue, self._destroy_queue)

    def hsa_queue_inactivate(self, queue: Any) -> int:
        """Stop processing packets; the queue stays allocated until destroyed."""
        return self._on_queue(queue, SimQueue.stop)

    def _on_queue(self, queue: Any, action: Callable[[SimQueue], object]) -> int:
        """An API call that applies ``action`` to the queue behind the ``hsa_queue_t *``."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(queue):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        sim_queue = self._queue(queue)
        if sim_queue is None:
            return HSA_STATUS_ERROR_INVALID_QUEUE
        action(sim_queue)
        return HSA_STATUS_SUCCESS

    # The memory-order variants of these operations (hsa_queue_load_read_index_scacquire, ...)
    # are generated in simlib.py from ORDER_VARIANTS.

    def _read_index(self, queue: Any) -> int:
        sim_queue = self._queue(queue)
        return sim_queue.read_index if sim_queue is not None else 0

    def _write_index(self, queue: Any) -> int:
        sim_queue = self._queue(queue)
        return sim_queue.write_index if sim_queue is not None else 0

    # Integer arguments are converted first, as cffi converts a C call's arguments before the
    # call: a value C would refuse raises whatever the queue argument (hsapy.sim.objects)

    def _store_write_index(self, queue: Any, value: int) -> None:
        value = uint64_argument(value)
        sim_queue = self._queue(queue)
        if sim_queue is not None:
            sim_queue.store_write_index(value)

    def _cas_write_index(self, queue: Any, expected: int, value: int) -> int:
        expected, value = uint64_argument(expected), uint64_argument(value)
        sim_queue = self._queue(queue)
        return sim_queue.cas_write_index(expected, value) if sim_queue is not None else 0

    def _add_write_index(self, queue: Any, value: int) -> int:
        # the reference for the compiled copy each instance installs (compiled_add_write_index)
        value = uint64_argument(value)
        try:
            sim_queue = self._queue_pointers[queue]
        except (KeyError, TypeError):
            sim_queue = self._queue(queue)
            if sim_queue is None:
                return 0
        return sim_queue.add_write_index(value)

    def _store_read_index(self, queue: Any, value: int) -> None:
        value = uint64_argument(value)
        sim_queue = self._queue(queue)
        if sim_queue is not None:
            sim_queue.store_read_index(value)

    def hsa_amd_queue_set_priority(self, queue: Any, priority: int) -> int:
        """Accept a queue priority (LOW, NORMAL, HIGH); the simulator does not schedule by it."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(queue):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if self._queue(queue) is None:
            return HSA_STATUS_ERROR_INVALID_QUEUE
        if int(priority) not in (0, 1, 2):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        return HSA_STATUS_SUCCESS

    def _queue_failed(self, sim_queue: SimQueue, status: int, message: str,
                      address: int | None) -> None:
        """Called on the processor thread when a queue stops with an error."""
        if address is not None and status in (HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
                                              HSA_STATUS_ERROR_MEMORY_FAULT):
            self._memory_fault_event(sim_queue.agent, address)
        name = STATUS_NAMES.get(status, hex(status))
        callback = sim_queue.callback
        if callback is None:
            # ROCr's default handler prints and aborts the process; the simulator only says so.
            _log.warning("queue %d on %s stopped with %s: %s", sim_queue.id,
                         sim_queue.agent.name, name, message)
            return
        _log.info("queue %d on %s stopped with %s: %s", sim_queue.id, sim_queue.agent.name,
                  name, message)
        if not sim_queue.is_destroyed:
            callback(status, self.ffi.cast("hsa_queue_t *", sim_queue.address), sim_queue.data)

    def _memory_fault_event(self, agent: SimAgent, address: int) -> None:
        for callback, data in list(self._event_handlers):
            event = self.ffi.new("hsa_amd_event_t *")
            event.event_type = HSA_AMD_GPU_MEMORY_FAULT_EVENT
            event.memory_fault.agent.handle = agent.handle
            event.memory_fault.virtual_address = address
            event.memory_fault.fault_reason_mask = HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT
            callback(event, data)

    def hsa_amd_register_system_event_handler(self, callback: Any, data: Any) -> int:
        """Register a handler for GPU memory fault events."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(callback):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        self._event_handlers.append((callback, data))
        return HSA_STATUS_SUCCESS

    def sim_queue_error(self, queue: Any) -> tuple[int, str] | None:
        """Simulator only: ``(status, message)`` of a queue that stopped on an error, else None."""
        sim_queue = self._queue(queue)
        if sim_queue is None or not sim_queue.error_status:
            return None
        return sim_queue.error_status, sim_queue.error_message
