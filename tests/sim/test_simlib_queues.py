"""SimLib queue creation, hsa_queue_t contents and index functions (raw C API)."""
from __future__ import annotations

import struct
import sys
import threading
from types import BuiltinFunctionType

import pytest
from _packets import agents, create_queue, gpu

from hsapy._hsa import ffi
from hsapy.sim import SimLib
from hsapy.sim.native_index import why_not

SUCCESS, INVALID_ARGUMENT, INVALID_QUEUE_CREATION = 0, 0x1001, 0x1002
INVALID_AGENT, INVALID_QUEUE, OUT_OF_RESOURCES = 0x1004, 0x1007, 0x1008


@pytest.fixture(params=["native", "python"])
def lib(request, monkeypatch):
    # hsa_queue_add_write_index_scacq_screl is a builtin compiled for the host where one can be
    # made (hsapy.sim.native_index), else the Python function it stands in for: both are held
    # to every test here
    if request.param == "python":
        monkeypatch.setenv("HSAPY_NATIVE_BUILTINS", "0")
    sim = SimLib(ffi)
    add = sim.hsa_queue_add_write_index_scacq_screl
    assert isinstance(add, BuiltinFunctionType) == (request.param == "native"), why_not()
    assert sim.hsa_init() == SUCCESS
    yield sim
    sim.hsa_shut_down()


def test_queue_struct_ring_and_doorbell(lib):
    queue = create_queue(lib, gpu(lib, "gfx942"), size=128)
    assert queue.size == 128
    assert queue.type == lib.HSA_QUEUE_TYPE_MULTI
    assert queue.features & lib.HSA_QUEUE_FEATURE_KERNEL_DISPATCH
    assert queue.doorbell_signal.handle != 0
    ring = ffi.buffer(ffi.cast("uint8_t *", queue.base_address), 128 * 64)
    headers = [struct.unpack_from("<H", ring, i * 64)[0] for i in range(128)]
    assert headers == [lib.HSA_PACKET_TYPE_INVALID] * 128       # never 0 (vendor-specific)
    assert lib.hsa_queue_load_read_index_scacquire(queue) == 0
    assert lib.hsa_queue_load_write_index_relaxed(queue) == 0
    assert lib.hsa_queue_destroy(queue) == SUCCESS


def test_queue_ids_are_unique(lib):
    agent = gpu(lib, "gfx1201")
    a, b = create_queue(lib, agent), create_queue(lib, agent)
    assert a.id != b.id
    lib.hsa_queue_destroy(a)
    lib.hsa_queue_destroy(b)


@pytest.mark.parametrize("size, expected", [
    (0, INVALID_ARGUMENT),
    (100, INVALID_ARGUMENT),                 # not a power of two
    (32, INVALID_ARGUMENT),                  # below QUEUE_MIN_SIZE (64)
    (1 << 18, OUT_OF_RESOURCES),             # above QUEUE_MAX_SIZE (ROCr: OUT_OF_RESOURCES)
    (64, SUCCESS),
])
def test_queue_size_validation(lib, size, expected):
    out = ffi.new("hsa_queue_t **")
    status = lib.hsa_queue_create({"handle": gpu(lib, "gfx942")}, size, 0, ffi.NULL, ffi.NULL,
                                  0xFFFFFFFF, 0xFFFFFFFF, out)
    assert status == expected
    if status == SUCCESS:
        lib.hsa_queue_destroy(out[0])


def test_queue_create_validation(lib):
    out = ffi.new("hsa_queue_t **")
    args = (0, ffi.NULL, ffi.NULL, 0xFFFFFFFF, 0xFFFFFFFF)
    assert lib.hsa_queue_create({"handle": 77}, 64, *args, out) == INVALID_AGENT
    assert lib.hsa_queue_create({"handle": gpu(lib, "gfx942")}, 64, *args, ffi.NULL) == INVALID_ARGUMENT
    cpu = agents(lib)[0]
    assert lib.hsa_queue_create({"handle": cpu}, 64, *args, out) == INVALID_QUEUE_CREATION
    assert lib.hsa_queue_create({"handle": gpu(lib, "gfx942")}, 64, 9, *args[1:], out) == INVALID_ARGUMENT


def test_destroy_validation(lib):
    queue = create_queue(lib, gpu(lib, "gfx942"))
    assert lib.hsa_queue_add_write_index_scacq_screl(queue, 1) == 0   # the hot path knows it
    assert lib.hsa_queue_destroy(queue) == SUCCESS
    assert lib.hsa_queue_destroy(queue) == INVALID_QUEUE
    # the hot path forgets the queue with it: a destroyed queue's index is not advanced
    assert lib.hsa_queue_add_write_index_scacq_screl(queue, 1) == 0
    assert lib.hsa_queue_add_write_index_scacq_screl(queue, 1) == 0
    assert lib.hsa_queue_destroy(ffi.NULL) == INVALID_ARGUMENT


def test_destroy_stops_the_processor_thread(lib):
    queue = create_queue(lib, gpu(lib, "gfx942"))
    thread = lib.queues[int(ffi.cast("uintptr_t", queue))].thread
    assert thread.is_alive() and thread.daemon
    lib.hsa_queue_destroy(queue)
    assert not thread.is_alive()


def test_write_index_functions(lib):
    queue = create_queue(lib, gpu(lib, "gfx942"))
    assert lib.hsa_queue_add_write_index_scacq_screl(queue, 3) == 0
    assert lib.hsa_queue_add_write_index_relaxed(queue, 2) == 3
    assert lib.hsa_queue_add_write_index_scacquire(queue, 1) == 5
    assert lib.hsa_queue_add_write_index_screlease(queue, 1) == 6
    assert lib.hsa_queue_load_write_index_scacquire(queue) == 7
    assert lib.hsa_queue_cas_write_index_scacq_screl(queue, 1, 50) == 7      # no swap
    assert lib.hsa_queue_cas_write_index_relaxed(queue, 7, 50) == 7          # swap
    assert lib.hsa_queue_load_write_index_relaxed(queue) == 50
    lib.hsa_queue_store_write_index_relaxed(queue, 60)
    lib.hsa_queue_store_write_index_screlease(queue, 61)
    assert lib.hsa_queue_load_write_index_relaxed(queue) == 61
    lib.hsa_queue_destroy(queue)


def test_write_index_of_queues_used_in_turn_and_past_two_to_the_64(lib):
    a, b = (create_queue(lib, gpu(lib, "gfx942")) for _ in range(2))
    add = lib.hsa_queue_add_write_index_scacq_screl
    assert [add(a, 1), add(b, 5), add(a, 1), add(b, 5), add(a, 2)] == [0, 0, 1, 5, 2]
    lib.hsa_queue_store_write_index_relaxed(b, 2**64 - 2)
    assert add(b, 3) == 2**64 - 2
    assert lib.hsa_queue_load_write_index_relaxed(b) == 1     # wraps around, as a uint64_t does
    assert lib.hsa_queue_load_write_index_relaxed(a) == 4
    lib._queue(b).store_read_index(7)                # as the packet processor does
    for load in (lib.hsa_queue_load_read_index_scacquire, lib.hsa_queue_load_read_index_relaxed):
        assert [load(a), load(b), load(a)] == [0, 7, 0]
        assert load(ffi.NULL) == 0 and load(12345) == 0        # not queues: the general way
    lib.hsa_queue_destroy(a)
    lib.hsa_queue_destroy(b)
    assert lib.hsa_queue_load_read_index_scacquire(b) == 0


def test_add_write_index_refuses_what_a_uint64_t_cannot_hold(lib):
    # as cffi refuses the argument before ROCr's fetch-and-add runs: the index is untouched
    queue = create_queue(lib, gpu(lib, "gfx942"))
    add = lib.hsa_queue_add_write_index_scacq_screl
    assert add(queue, 5) == 0
    for value, error in ((2**64, OverflowError), (-1, OverflowError), (1.0, TypeError),
                         (None, TypeError)):
        with pytest.raises(error):
            add(queue, value)
        assert lib.hsa_queue_load_write_index_relaxed(queue) == 5
    assert add(queue, 2**64 - 1) == 5                  # a valid value wraps around
    assert add(queue, 1) == 4
    lib.hsa_queue_destroy(queue)


def test_a_lost_write_index_is_reported_not_a_hang(lib, monkeypatch):
    import hsapy.sim.queues as queues
    monkeypatch.setattr(queues, "_WRITE_TOKEN_LOST_S", 0.05)
    queue = create_queue(lib, gpu(lib, "gfx942"))
    sim_queue = lib._queue(queue)
    sim_queue.write_token.pop()           # as if a producer died between its pop and append
    with pytest.raises(RuntimeError, match="write index has been held"):
        lib.hsa_queue_add_write_index_scacq_screl(queue, 1)
    sim_queue.give_write_token(0)
    assert lib.hsa_queue_add_write_index_scacq_screl(queue, 1) == 0
    lib.hsa_queue_destroy(queue)


def test_indices_live_in_the_amd_queue_t(lib):
    queue = create_queue(lib, gpu(lib, "gfx942"))
    lib.hsa_queue_add_write_index_relaxed(queue, 9)
    words = ffi.cast("uint64_t *", queue)
    assert words[56 // 8] == 9            # amd_queue_t.write_dispatch_id
    assert words[128 // 8] == 0           # amd_queue_t.read_dispatch_id
    lib.hsa_queue_destroy(queue)


def test_amd_queue_t_apertures_and_limits(lib):
    queue = create_queue(lib, gpu(lib, "gfx942"))
    words = ffi.cast("uint32_t *", queue)
    # group/private aperture base hi, max_cu_id, max_wave_id (amd_hsa_queue.h offsets 64..79)
    assert [words[16], words[17], words[18], words[19]] == [0x10000, 0x20000, 303, 31]
    assert words[136 // 4] == 128         # read_dispatch_id_field_base_byte_offset
    assert words[180 // 4] & 2            # AMD_QUEUE_PROPERTIES_IS_PTR64
    lib.hsa_queue_destroy(queue)


def _race(threads):
    """Run ``threads`` to the end with a tiny switch interval, so that the GIL changes hands
    inside reservations often."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)


def test_concurrent_add_write_index_is_atomic(lib):
    # Producers race through the flattened hot path and the generic one; a tiny switch
    # interval makes the GIL change hands inside reservations often.
    queue = create_queue(lib, gpu(lib, "gfx942"))
    got: list[int] = []
    lock = threading.Lock()

    def reserve(add):
        mine = [add(queue, 1) for _ in range(3000)]
        with lock:
            got.extend(mine)

    adds = [lib.hsa_queue_add_write_index_scacq_screl, lib.hsa_queue_add_write_index_relaxed] * 2
    _race([threading.Thread(target=reserve, args=(add,)) for add in adds])
    assert sorted(got) == list(range(12000))
    assert ffi.cast("uint64_t *", queue)[56 // 8] == 12000      # amd_queue_t.write_dispatch_id
    lib.hsa_queue_destroy(queue)


def test_priority_and_inactivate(lib):
    queue = create_queue(lib, gpu(lib, "gfx1201"))
    assert lib.hsa_amd_queue_set_priority(queue, lib.HSA_AMD_QUEUE_PRIORITY_HIGH) == SUCCESS
    assert lib.hsa_amd_queue_set_priority(queue, 7) == INVALID_ARGUMENT
    assert lib.hsa_queue_inactivate(queue) == SUCCESS
    assert lib.hsa_queue_destroy(queue) == SUCCESS
    assert lib.hsa_queue_inactivate(queue) == INVALID_QUEUE


def test_shut_down_destroys_live_queues():
    sim = SimLib(ffi)
    sim.hsa_init()
    queue = create_queue(sim, gpu(sim, "gfx942"))
    thread = sim.queues[int(ffi.cast("uintptr_t", queue))].thread
    sim.hsa_shut_down()
    assert not thread.is_alive()
    assert sim.queues == {}


def test_runtime_can_be_reopened_after_the_last_shut_down():
    sim = SimLib(ffi, executor="builtin")
    for _ in range(2):
        assert sim.hsa_init() == SUCCESS
        queue = create_queue(sim, gpu(sim, "gfx942"))
        signal = ffi.new("hsa_signal_t *")
        assert sim.hsa_signal_create(1, 0, ffi.NULL, signal) == SUCCESS
        assert sim.hsa_queue_destroy(queue) == SUCCESS
        assert sim.hsa_shut_down() == SUCCESS
        assert sim.memory.allocations() == []


def test_concurrent_adds_on_two_queues_never_mix_them(lib):
    # Every call alternates between two queues, so each one finds the other queue named in the
    # fast path's state and repoints it: a reservation must still land on its own queue.
    a, b = (create_queue(lib, gpu(lib, "gfx942")) for _ in range(2))
    got: dict[int, list[int]] = {0: [], 1: []}
    lock = threading.Lock()
    add = lib.hsa_queue_add_write_index_scacq_screl

    def reserve(first):
        queues = (a, b) if first == 0 else (b, a)
        mine: dict[int, list[int]] = {0: [], 1: []}
        for _ in range(1500):
            for queue in queues:
                mine[0 if queue is a else 1].append(add(queue, 1))
        with lock:
            for k in (0, 1):
                got[k].extend(mine[k])

    _race([threading.Thread(target=reserve, args=(k % 2,)) for k in range(4)])
    for k, queue in enumerate((a, b)):
        assert sorted(got[k]) == list(range(6000))
        assert lib.hsa_queue_load_write_index_relaxed(queue) == 6000
    lib.hsa_queue_destroy(a)
    lib.hsa_queue_destroy(b)


def test_add_on_a_destroyed_queue_writes_nothing(lib):
    queue = create_queue(lib, gpu(lib, "gfx942"))
    add = lib.hsa_queue_add_write_index_scacq_screl
    assert add(queue, 4) == 0 and add(queue, 1) == 4         # the fast path knows the queue
    lib.hsa_queue_destroy(queue)
    # its memory is free: the fast path must have forgotten it (the general way answers 0)
    assert add(queue, 1) == 0
    assert add(ffi.cast("hsa_queue_t *", int(ffi.cast("uintptr_t", queue))), 1) == 0


def test_the_read_index_of_each_queue_whichever_was_added_to_last(lib):
    agent = gpu(lib, "gfx942")
    first, second = create_queue(lib, agent), create_queue(lib, agent)
    load, add = lib.hsa_queue_load_read_index_scacquire, lib.hsa_queue_add_write_index_scacq_screl
    assert isinstance(load, BuiltinFunctionType) == isinstance(add, BuiltinFunctionType)
    lib.hsa_queue_store_read_index_relaxed(first, 5)
    lib.hsa_queue_store_read_index_relaxed(second, 7)
    for queue in (first, second, first):
        add(queue, 1)                                  # the fast path now knows this queue
        assert (load(first), load(second)) == (5, 7)
        assert lib.hsa_queue_load_read_index_relaxed(queue) == (5 if queue is first else 7)
    # another cdata of the same pointer, and the read index moving on
    lib.hsa_queue_store_read_index_screlease(first, 9)
    assert load(ffi.cast("hsa_queue_t *", int(ffi.cast("uintptr_t", first)))) == 9
    lib.hsa_queue_destroy(first)
    assert load(first) == 0                            # forgotten: the general way answers 0
    assert load(second) == 7
    lib.hsa_queue_destroy(second)
