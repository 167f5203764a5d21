"""The simulated packet processor, driven through the raw C API with hand-built AQL packets.

Covers the protocol of docs/hsa-abi.md: INVALID headers stall, wraparound,
barrier-AND/OR across queues, AMD barrier-value, completion signals, profiling timestamps,
malformed packets through the error callback, concurrent producers.
"""
from __future__ import annotations

import struct
import threading
import time

import _packets as P
import pytest

from hsapy._hsa import ffi
from hsapy.sim import SimLib

SUCCESS = 0
INVALID_PACKET_FORMAT = 0x1009
ILLEGAL_INSTRUCTION = 42
EQ, NE, LT, GTE = 0, 1, 2, 3


@pytest.fixture
def lib():
    """The built-in executor only, whatever hsapy.sim.isa registers (these tests need s_endpgm
    kernels to complete and anything else to fail)."""
    sim = SimLib(ffi, executor="builtin")
    assert sim.hsa_init() == SUCCESS
    yield sim
    sim.hsa_shut_down()


@pytest.fixture(params=["sim", "rocr"])
def any_lib(request):
    """SimLib, and the real runtime when a GPU agent is present: for tests that need no kernel
    code object (barrier packets only), so a user with a GPU runs the same protocol checks."""
    if request.param == "sim":
        sim = SimLib(ffi)
        assert sim.hsa_init() == SUCCESS
        yield sim
        sim.hsa_shut_down()
        return
    rocr = P.open_rocr()
    if rocr is None:
        pytest.skip("backend rocr: no AMD GPU agent on this machine")
    yield rocr
    rocr.hsa_shut_down()


def open_lib(executor) -> SimLib:
    sim = SimLib(ffi, executor=executor)
    assert sim.hsa_init() == SUCCESS
    return sim


@pytest.fixture
def restore_registry():
    """Put the executor registry back as it was (hsapy.sim.isa may have registered families)."""
    from hsapy.sim.execution import register_executor, registered_factory, unregister_executor
    from hsapy.sim.executors import _load_isa_package

    _load_isa_package()   # its interpreters register once, at import: save them, not a blank
    saved = {f: registered_factory(f) for f in ("gfx9", "gfx11", "gfx12")}
    yield
    for family_name, factory in saved.items():
        if factory is None:
            unregister_executor(family_name)
        else:
            register_executor(family_name, factory)


@pytest.fixture(params=["gfx942", "gfx1201"])
def target(request):
    return request.param


def family(target: str) -> str:
    return {"gfx942": "gfx9", "gfx1201": "gfx12"}[target]


def empty_kernel(lib, agent: int, target: str) -> int:
    return P.install_kernel(lib, agent, P.S_ENDPGM[family(target)], "empty")


def value(lib, handle: int) -> int:
    return lib.hsa_signal_load_scacquire({"handle": handle})


def header_of_slot(queue, index: int) -> int:
    base = int(ffi.cast("uintptr_t", queue.base_address))
    return ffi.cast("uint16_t *", base + (index % queue.size) * 64)[0]


def test_empty_kernel_completes_and_slot_returns_to_invalid(lib, target):
    agent = P.gpu(lib, target)
    queue = P.create_queue(lib, agent)
    done = P.signal(lib, 1)
    index = P.publish(lib, queue, P.dispatch(empty_kernel(lib, agent, target), completion=done))
    assert P.wait_lt(lib, done) == 0
    assert lib.hsa_queue_load_read_index_scacquire(queue) == index + 1
    assert header_of_slot(queue, index) & 0xFF == lib.HSA_PACKET_TYPE_INVALID


def test_completion_signal_is_decremented_by_one(lib, target):
    agent = P.gpu(lib, target)
    queue = P.create_queue(lib, agent)
    done = P.signal(lib, 5)
    kernel = empty_kernel(lib, agent, target)
    for _ in range(3):
        P.publish(lib, queue, P.dispatch(kernel, completion=done))
    assert lib.hsa_signal_wait_scacquire({"handle": done}, EQ, 2, P.UINT64_MAX, 0) == 2


def test_barrier_packets_wrap_around_a_small_queue(any_lib):
    lib = any_lib
    queue = P.create_queue(lib, P.gpu_agents(lib)[0], size=64)
    total = 10 * queue.size
    done = P.signal(lib, total)
    for _ in range(total):
        P.publish(lib, queue, P.barrier_and([], completion=done))
    assert lib.hsa_signal_wait_scacquire({"handle": done}, EQ, 0, P.UINT64_MAX, 0) == 0
    assert lib.hsa_queue_load_read_index_scacquire(queue) == total


def test_invalid_header_stalls_until_published(lib):
    agent = P.gpu(lib, "gfx942")
    queue = P.create_queue(lib, agent)
    done = P.signal(lib, 1)
    kernel = empty_kernel(lib, agent, "gfx942")
    # Reserve and write the body but leave the header INVALID, then ring the doorbell.
    index = lib.hsa_queue_add_write_index_scacq_screl(queue, 1)
    packet = P.dispatch(kernel, completion=done)
    slot = int(ffi.cast("uintptr_t", queue.base_address)) + index * 64
    ffi.memmove(ffi.cast("uint8_t *", slot + 4), packet.body, 60)
    lib.hsa_signal_store_screlease(queue.doorbell_signal, index)
    assert P.wait_lt(lib, done, timeout_s=0.1) == 1            # nothing happened
    assert lib.hsa_queue_load_read_index_relaxed(queue) == 0
    ffi.cast("uint32_t *", slot)[0] = packet.first_word
    lib.hsa_signal_store_screlease(queue.doorbell_signal, index)
    assert P.wait_lt(lib, done) == 0


def test_packet_waits_for_its_doorbell(lib):
    """A published packet is not fetched until the doorbell announces its index (as on the
    hardware, where the doorbell write moves the packet processor's write pointer)."""
    agent = P.gpu(lib, "gfx942")
    queue = P.create_queue(lib, agent)
    kernel = empty_kernel(lib, agent, "gfx942")
    first, second = P.signal(lib, 1), P.signal(lib, 1)
    P.publish(lib, queue, P.dispatch(kernel, completion=first), ring=False)
    assert P.wait_lt(lib, first, timeout_s=0.1) == 1
    P.publish(lib, queue, P.dispatch(kernel, completion=second), ring=False)
    lib.hsa_signal_store_screlease(queue.doorbell_signal, 1)     # announces packets 0 and 1
    lib.hsa_signal_store_screlease(queue.doorbell_signal, 0)     # a late, smaller ring
    assert P.wait_lt(lib, second) == 0
    assert P.wait_lt(lib, first) == 0


def test_ten_times_the_queue_size_wraps_around(lib, target):
    agent = P.gpu(lib, target)
    queue = P.create_queue(lib, agent, size=64)
    kernel = empty_kernel(lib, agent, target)
    total = 10 * queue.size
    done = P.signal(lib, total)
    for _ in range(total):
        P.publish(lib, queue, P.dispatch(kernel, completion=done))
    assert lib.hsa_signal_wait_scacquire({"handle": done}, EQ, 0, P.UINT64_MAX, 0) == 0
    assert lib.hsa_queue_load_read_index_scacquire(queue) == total
    assert lib.hsa_queue_load_write_index_scacquire(queue) == total


def test_barrier_and_waits_for_every_dependency(any_lib):
    lib = any_lib
    agent = P.gpu_agents(lib)[0]
    queue = P.create_queue(lib, agent)
    deps = [P.signal(lib, 1) for _ in range(3)]
    done = P.signal(lib, 1)
    P.publish(lib, queue, P.barrier_and(deps, completion=done))
    lib.hsa_signal_store_relaxed({"handle": deps[0]}, 0)
    lib.hsa_signal_store_relaxed({"handle": deps[2]}, 0)
    assert P.wait_lt(lib, done, timeout_s=0.1) == 1            # deps[1] still 1
    lib.hsa_signal_store_relaxed({"handle": deps[1]}, 0)
    assert P.wait_lt(lib, done) == 0


def test_barrier_or_waits_for_any_dependency(any_lib):
    lib = any_lib
    agent = P.gpu_agents(lib)[0]
    queue = P.create_queue(lib, agent)
    deps = [P.signal(lib, 1) for _ in range(2)]
    done = P.signal(lib, 1)
    P.publish(lib, queue, P.barrier_or(deps, completion=done))
    assert P.wait_lt(lib, done, timeout_s=0.1) == 1
    lib.hsa_signal_store_relaxed({"handle": deps[1]}, 0)
    assert P.wait_lt(lib, done) == 0


def test_barrier_chains_across_two_queues_follow_dependency_order(any_lib):
    """Queue B: OR(a1) -> b1, published first; queue A: AND(start) -> a1, then AND(b1) -> a2.

    Nothing may complete until the host releases ``start``; then the chain must run A1, B1, A2
    across the two queues (a2 cannot reach 0 unless b1 did, which needs a1).
    """
    lib = any_lib
    gpus = P.gpu_agents(lib)
    queue_a = P.create_queue(lib, gpus[0])
    queue_b = P.create_queue(lib, gpus[-1])       # another agent when there are two
    start, a1, b1, a2 = (P.signal(lib, 1) for _ in range(4))
    # B is published first but depends on A's first barrier.
    P.publish(lib, queue_b, P.barrier_or([a1], completion=b1))
    P.publish(lib, queue_a, P.barrier_and([start], completion=a1))
    P.publish(lib, queue_a, P.barrier_and([b1], completion=a2))
    assert P.wait_lt(lib, a2, timeout_s=0.1) == 1
    assert (value(lib, a1), value(lib, b1)) == (1, 1)
    lib.hsa_signal_store_screlease({"handle": start}, 0)
    assert P.wait_lt(lib, a2) == 0
    assert (value(lib, a1), value(lib, b1)) == (0, 0)


def test_barrier_bit_and_in_order_completion_across_packets(lib):
    agent = P.gpu(lib, "gfx942")
    queue = P.create_queue(lib, agent)
    gate = P.signal(lib, 1)
    first, second = P.signal(lib, 1), P.signal(lib, 1)
    P.publish(lib, queue, P.barrier_and([gate], completion=first))
    kernel = empty_kernel(lib, agent, "gfx942")
    P.publish(lib, queue, P.dispatch(kernel, barrier=True, completion=second))
    assert P.wait_lt(lib, second, timeout_s=0.1) == 1          # held behind the barrier
    lib.hsa_signal_store_relaxed({"handle": gate}, 0)
    assert P.wait_lt(lib, second) == 0
    assert value(lib, first) == 0


@pytest.mark.parametrize("cond, compare, mask, initial, release", [
    (EQ, 0x10, 0xF0, 0x0F, 0x1F),       # waits until (value & 0xF0) == 0x10
    (NE, 7, -1, 7, 8),
    (LT, 0, -1, 0, -1),
    (GTE, 100, -1, 99, 100),
])
def test_barrier_value(any_lib, cond, compare, mask, initial, release):
    lib = any_lib
    agent = P.gpu_agents(lib)[-1]
    queue = P.create_queue(lib, agent)
    watched = P.signal(lib, initial)
    done = P.signal(lib, 1)
    P.publish(lib, queue, P.barrier_value(watched, compare, mask, cond, completion=done))
    assert P.wait_lt(lib, done, timeout_s=0.1) == 1
    lib.hsa_signal_store_screlease({"handle": watched}, release)
    assert P.wait_lt(lib, done) == 0


def test_profiling_timestamps_are_monotonic_and_in_packet_order(lib, target):
    agent = P.gpu(lib, target)
    queue = P.create_queue(lib, agent)
    assert lib.hsa_amd_profiling_set_profiler_enabled(queue, 1) == SUCCESS
    kernel = empty_kernel(lib, agent, target)
    signals = [P.signal(lib, 1) for _ in range(8)]
    for s in signals:
        P.publish(lib, queue, P.dispatch(kernel, completion=s))
    times = []
    for s in signals:
        assert P.wait_lt(lib, s) == 0
        t = ffi.new("hsa_amd_profiling_dispatch_time_t *")
        assert lib.hsa_amd_profiling_get_dispatch_time({"handle": agent}, {"handle": s}, t) == 0
        times.append((t.start, t.end))
    for (start, end), (next_start, _) in zip(times, times[1:]):
        assert 0 < start <= end <= next_start
    now = ffi.new("uint64_t *")
    lib.hsa_system_get_info(lib.HSA_SYSTEM_INFO_TIMESTAMP, now)
    assert times[-1][1] <= now[0]
    system = ffi.new("uint64_t *")
    assert lib.hsa_amd_profiling_convert_tick_to_system_domain({"handle": agent}, times[0][0],
                                                              system) == 0
    assert system[0] == times[0][0]


def test_profiling_validation(lib):
    agent = P.gpu(lib, "gfx942")
    t = ffi.new("hsa_amd_profiling_dispatch_time_t *")
    s = {"handle": P.signal(lib, 0)}
    cpu = {"handle": P.agents(lib)[0]}
    gpu = {"handle": agent}
    get_time = lib.hsa_amd_profiling_get_dispatch_time
    assert get_time(cpu, s, t) == lib.HSA_STATUS_ERROR_INVALID_AGENT
    assert get_time(gpu, {"handle": 3}, t) == lib.HSA_STATUS_ERROR_INVALID_SIGNAL
    assert get_time(gpu, s, ffi.NULL) == lib.HSA_STATUS_ERROR_INVALID_ARGUMENT
    enable = lib.hsa_amd_profiling_set_profiler_enabled
    assert enable(ffi.NULL, 1) == lib.HSA_STATUS_ERROR_INVALID_ARGUMENT


def run_malformed(lib, packet_factory, target="gfx942"):
    """Publish a malformed packet followed by a good one; return (errors, good signal value)."""
    agent = P.gpu(lib, target)
    errors = P.ErrorLog()
    queue = P.create_queue(lib, agent, errors=errors)
    kernel = empty_kernel(lib, agent, target)
    bad_done, good_done = P.signal(lib, 1), P.signal(lib, 1)
    P.publish(lib, queue, packet_factory(kernel, bad_done))
    P.publish(lib, queue, P.dispatch(kernel, completion=good_done))
    events = errors.wait()
    # The later packet never runs, the bad one never completes, the read index stays put.
    assert P.wait_lt(lib, good_done, timeout_s=0.05) == 1
    assert value(lib, bad_done) == 1
    assert lib.hsa_queue_load_read_index_scacquire(queue) == 0
    return events, queue


MALFORMED = {
    "unknown type": lambda k, s: P.raw(P.header(9), P.barrier_body((), s)),
    "agent dispatch": lambda k, s: P.raw(P.header(P.TYPE_AGENT), P.barrier_body((), s)),
    "vendor format": lambda k, s: P.raw(P.header(P.TYPE_VENDOR) | 7 << 16),
    "dims 0": lambda k, s: P.dispatch(k, dims=0, completion=s),
    "workgroup 0": lambda k, s: P.dispatch(k, workgroup=(0, 1, 1), completion=s),
    "grid 0": lambda k, s: P.dispatch(k, grid=(0, 1, 1), completion=s),
    "unused dim not 1": lambda k, s: P.dispatch(k, grid=(64, 2, 1), completion=s),
    "workgroup too large": lambda k, s: P.dispatch(k, dims=2, workgroup=(1024, 2, 1),
                                                   grid=(1024, 2, 1), completion=s),
    "lds too large": lambda k, s: P.dispatch(k, group=65537, completion=s),
    "not a kernel object": lambda k, s: P.dispatch(k + 64, completion=s),
    "unknown dep signal": lambda k, s: P.barrier_and([0xDEAD0], completion=s),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_packet_stops_the_queue_and_reports(lib, case):
    events, queue = run_malformed(lib, MALFORMED[case])
    assert events == [(INVALID_PACKET_FORMAT, int(ffi.cast("uintptr_t", queue)))]
    status, message = lib.sim_queue_error(queue)
    assert status == INVALID_PACKET_FORMAT and message


def test_kernel_from_another_agent_is_rejected(lib):
    def foreign(kernel, done):
        other = empty_kernel(lib, P.gpu(lib, "gfx1201"), "gfx1201")
        return P.dispatch(other, completion=done)

    events, queue = run_malformed(lib, foreign)
    assert events[0][0] == INVALID_PACKET_FORMAT
    assert "another agent" in lib.sim_queue_error(queue)[1]


def test_unimplemented_instruction_fails_through_the_error_path(lib, target):
    agent = P.gpu(lib, target)
    errors = P.ErrorLog()
    queue = P.create_queue(lib, agent, errors=errors)
    kernel = P.install_kernel(lib, agent, P.S_NOP_0[family(target)], "nop")
    done = P.signal(lib, 1)
    P.publish(lib, queue, P.dispatch(kernel, completion=done))
    assert errors.wait()[0][0] == ILLEGAL_INSTRUCTION
    status, message = lib.sim_queue_error(queue)
    assert message.startswith(f"not implemented for {target}: 0xbf800000")
    assert value(lib, done) == 1                      # never a silent success


def test_null_executor_consumes_any_kernel():
    sim = SimLib(ffi, executor="null")
    sim.hsa_init()
    agent = P.gpu(sim, "gfx942")
    queue = P.create_queue(sim, agent)
    kernel = P.install_kernel(sim, agent, 0x12345678, "anything")
    done = P.signal(sim, 1)
    P.publish(sim, queue, P.dispatch(kernel, completion=done))
    assert P.wait_lt(sim, done) == 0
    sim.hsa_shut_down()


def test_null_executor_from_environment(monkeypatch):
    monkeypatch.setenv("HSAPY_SIM_EXECUTOR", "null")
    sim = SimLib(ffi)
    sim.hsa_init()
    agent = P.gpu(sim, "gfx1201")
    queue = P.create_queue(sim, agent)
    done = P.signal(sim, 1)
    P.publish(sim, queue, P.dispatch(P.install_kernel(sim, agent, 0xFFFFFFFF), completion=done))
    assert P.wait_lt(sim, done) == 0
    sim.hsa_shut_down()


def test_four_producers_publish_concurrently_without_loss_or_duplication(any_lib):
    """Each packet is a barrier-AND whose completion signal is its own: every signal must reach
    exactly 0 (a duplicate would drive it to -1, a loss would leave it at 1)."""
    lib = any_lib
    agent = P.gpu_agents(lib)[0]
    queue = P.create_queue(lib, agent, size=64)
    per_thread = 100
    handles = [[P.signal(lib, 1) for _ in range(per_thread)] for _ in range(4)]
    indices: list[int] = []
    lock = threading.Lock()

    def producer(mine):
        got = [P.publish(lib, queue, P.barrier_and([], completion=h)) for h in mine]
        with lock:
            indices.extend(got)

    threads = [threading.Thread(target=producer, args=(h,)) for h in handles]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(indices) == list(range(4 * per_thread))
    for mine in handles:
        for h in mine:
            assert P.wait_lt(lib, h) == 0
    time.sleep(0.02)
    assert all(value(lib, h) == 0 for mine in handles for h in mine)
    assert lib.hsa_queue_load_read_index_scacquire(queue) == 4 * per_thread


class Recorder:
    """An executor that records every DispatchContext it is given."""

    def __init__(self, profile=None):
        self.seen = []

    def execute(self, ctx):
        self.seen.append(ctx)


def test_packet_fields_reach_the_executor():
    recorder = Recorder()
    lib = open_lib(recorder)
    agent = P.gpu(lib, "gfx1201")
    queue = P.create_queue(lib, agent)
    kernel = P.install_kernel(lib, agent, 0xBF800000)
    done = P.signal(lib, 1)
    P.publish(lib, queue, P.dispatch(kernel, dims=3, workgroup=(8, 4, 2), grid=(16, 8, 6),
                                     kernarg=0x1000, completion=done, private=16, group=256))
    assert P.wait_lt(lib, done) == 0
    ctx = recorder.seen[0]
    assert ctx.agent.name == "gfx1201"
    assert (ctx.setup_dims, ctx.workgroup_size, ctx.grid_size) == (3, (8, 4, 2), (16, 8, 6))
    assert (ctx.kernarg_address, ctx.private_segment_size, ctx.group_segment_size) == (0x1000, 16, 256)
    assert ctx.kernel_object == kernel and ctx.kernel.kernel_object == kernel
    assert ctx.dispatch_id == 0
    assert ctx.queue_address == int(ffi.cast("uintptr_t", queue))
    packet = ctx.memory.read(ctx.packet_address, 64)
    assert struct.unpack_from("<H", packet, 2)[0] == 3         # setup: 3 dimensions
    lib.hsa_shut_down()


def test_registered_executor_is_used_for_its_family(restore_registry):
    from hsapy.sim import register_executor

    gfx9, gfx12 = Recorder(), Recorder()
    register_executor("gfx9", lambda profile: gfx9)
    register_executor("gfx12", lambda profile: gfx12)
    lib = open_lib(None)
    for target in ("gfx942", "gfx1201", "gfx942"):
        agent = P.gpu(lib, target)
        queue = P.create_queue(lib, agent)
        done = P.signal(lib, 1)
        P.publish(lib, queue, P.dispatch(P.install_kernel(lib, agent, 0xBF800000), completion=done))
        assert P.wait_lt(lib, done) == 0
    lib.hsa_shut_down()
    assert [ctx.agent.name for ctx in gfx9.seen] == ["gfx942", "gfx942"]
    assert [ctx.agent.name for ctx in gfx12.seen] == ["gfx1201"]


def test_executor_fault_is_reported_and_raises_memory_event(restore_registry):
    from hsapy.sim import register_executor

    lib = open_lib(None)

    class Faulting:
        def __init__(self, profile):
            pass

        def execute(self, ctx):
            ctx.memory.read(0x10, 4)          # outside every allocation -> SimMemoryFault

    events = []

    @ffi.callback("hsa_status_t(const hsa_amd_event_t *, void *)")
    def on_event(event, data):
        events.append((event.event_type, event.memory_fault.virtual_address))
        return 0

    assert lib.hsa_amd_register_system_event_handler(on_event, ffi.NULL) == SUCCESS
    register_executor("gfx9", Faulting)
    try:
        agent = P.gpu(lib, "gfx942")
        errors = P.ErrorLog()
        queue = P.create_queue(lib, agent, errors=errors)
        P.publish(lib, queue, P.dispatch(P.install_kernel(lib, agent, 0), completion=P.signal(lib)))
        assert errors.wait()[0][0] == 43              # HSA_STATUS_ERROR_MEMORY_FAULT
    finally:
        lib.hsa_shut_down()
    assert events == [(0, 0x10)]                      # HSA_AMD_GPU_MEMORY_FAULT_EVENT


def test_sim_fault_status_and_message_reach_the_callback():
    from hsapy.sim import SimFault

    class Illegal:
        def execute(self, ctx):
            raise SimFault(42, "v_bogus at 0x100", 0x100)

    lib = open_lib(Illegal())
    agent = P.gpu(lib, "gfx942")
    errors = P.ErrorLog()
    queue = P.create_queue(lib, agent, errors=errors)
    P.publish(lib, queue, P.dispatch(P.install_kernel(lib, agent, 0), completion=P.signal(lib)))
    assert errors.wait()[0][0] == 42
    assert lib.sim_queue_error(queue) == (42, "v_bogus at 0x100")
    lib.hsa_shut_down()


@pytest.mark.parametrize("make_packet", [
    lambda dep: P.barrier_and([dep]),
    lambda dep: P.barrier_or([dep]),
    lambda dep: P.barrier_value(dep, 0, -1, EQ),
], ids=["and", "or", "value"])
def test_destroy_ends_a_processor_blocked_on_a_dependency(lib, make_packet):
    queue = P.create_queue(lib, P.gpu(lib, "gfx942"))
    thread = lib.queues[int(ffi.cast("uintptr_t", queue))].thread
    P.publish(lib, queue, make_packet(P.signal(lib, 1)))      # never satisfied
    time.sleep(0.02)
    start = time.monotonic()
    assert lib.hsa_queue_destroy(queue) == SUCCESS
    assert not thread.is_alive()
    assert time.monotonic() - start < 1.0


def test_destroy_from_the_error_callback_does_not_deadlock(lib):
    agent = P.gpu(lib, "gfx942")
    statuses = []

    def on_error(status, queue, data):
        statuses.append(status)
        statuses.append(lib.hsa_queue_destroy(queue))

    callback = ffi.callback("void(hsa_status_t, hsa_queue_t *, void *)", on_error)
    out = ffi.new("hsa_queue_t **")
    assert lib.hsa_queue_create({"handle": agent}, 64, 0, callback, ffi.NULL, 0, 0, out) == 0
    P.publish(lib, out[0], P.raw(P.header(200)))
    deadline = time.monotonic() + 5
    while len(statuses) < 2 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert statuses == [INVALID_PACKET_FORMAT, SUCCESS]
    assert lib.queues == {}


def test_error_without_callback_is_logged(lib, caplog):
    queue = P.create_queue(lib, P.gpu(lib, "gfx942"))
    with caplog.at_level("WARNING", logger="hsapy.sim"):
        P.publish(lib, queue, P.raw(P.header(77)))
        deadline = time.monotonic() + 5
        while "unknown packet type" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.001)
    assert "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT" in caplog.text
    assert "unknown packet type 77" in caplog.text


def test_a_waiting_thread_runs_ready_dispatches_but_never_a_blocking_barrier(monkeypatch):
    # SimQueue.help: a dispatch + wait runs on the waiting thread (no thread hand-off); a barrier
    # with dependencies is left to the queue's processor thread; order is unchanged.
    import threading

    from hsapy import aql
    from hsapy.asm import kernels
    from hsapy.runtime import Runtime
    from hsapy.sim import queues as sim_queues

    ran = []
    process = sim_queues.SimQueue._process

    def recording(self, packet, header, index):
        ran.append((index, header & 0xFF, threading.current_thread().name))
        return process(self, packet, header, index)

    # The processor thread stays away until the first wait has returned, so that the waiter's
    # turn does not depend on which thread the scheduler happens to run first.
    first_done = threading.Event()
    wait_for_packet = sim_queues.SimQueue._wait_for_packet

    def held_back(self):
        first_done.wait(10)
        return wait_for_packet(self)

    monkeypatch.setattr(sim_queues.SimQueue, "_process", recording)
    monkeypatch.setattr(sim_queues.SimQueue, "_wait_for_packet", held_back)
    with Runtime(backend="sim", targets=["gfx942"]) as rt:
        agent = rt.gpu_agents[0]
        empty = rt.load(kernels.build("empty", "gfx942"), agent).kernel("empty")
        with agent.create_queue(64) as queue:
            prepared = empty.prepare(queue, 64, 64)
            first = prepared()
            first.wait(timeout=10)
            first_done.set()
            gate, done = rt.create_signal(1), rt.create_signal(1)
            queue.publish(aql.barrier_and([gate.handle], completion_signal=done.handle))
            after = prepared()
            threading.Timer(0.05, gate.store, (0,)).start()
            after.wait(timeout=10)
            done.wait(timeout=10)
            big = sim_queues.HELP_MAX_WORK_ITEMS * 2
            empty.prepare(queue, big, 64)().wait(timeout=10)
    assert [index for index, _kind, _thread in ran] == [0, 1, 2, 3]
    assert ran[0][2] == "MainThread"                     # the waiter ran the dispatch
    assert ran[1][1] == 3 and ran[1][2].startswith("hsapy-sim-queue")   # the barrier did not
    assert ran[3][2].startswith("hsapy-sim-queue")       # nor a large dispatch
