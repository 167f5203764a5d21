"""The AQL dispatch path end to end on the simulator (and on a GPU when present)."""
from __future__ import annotations

import gc
import inspect
import time
import traceback

import numpy as np
import pytest
from _codeobjects import build, built

from hsapy import aql
from hsapy._lifetime import live_counts
from hsapy.asm import kernels
from hsapy.bench import drain
from hsapy.dispatch import DispatchConfigError, Graph, parameter_names
from hsapy.kernarg import KernelArgumentError
from hsapy.queue import INVALID_WORD, add_observer, remove_observer
from hsapy.runtime import Runtime

TARGETS = ["gfx942", "gfx1201"]


def _load(runtime, name, target):
    agent = runtime.gpu(target)
    return agent, runtime.load(kernels.build(name, target), agent).kernel(name)


@pytest.mark.parametrize("target", TARGETS)
def test_empty_kernel_round_trip(sim_runtime, target):
    agent, empty = _load(sim_runtime, "empty", target)
    with agent.create_queue(64) as queue:
        queue.enable_profiling()
        result = empty.launch(queue, [], grid=64, workgroup=64, timeout=10)
        assert result.is_done and queue.load_read_index() == 1
        assert result.end >= result.start > 0


@pytest.mark.parametrize("target", TARGETS)
def test_vector_add_through_launch(sim_runtime, target):
    agent, vadd = _load(sim_runtime, "vector_add", target)
    n = 1000
    a, b = np.arange(n, dtype=np.float32), np.full(n, 0.25, np.float32)
    bufs = [agent.device_pool.allocate(4 * n) for _ in range(3)]
    bufs[0].copy_from(a)
    bufs[1].copy_from(b)
    with agent.create_queue(64) as queue:
        vadd.launch(queue, [bufs[0], bufs[1], bufs[2], n], grid=1024, workgroup=256)
    assert np.array_equal(bufs[2].copy_to(dtype=np.float32), a + b)


def test_100000_dispatches_through_a_64_slot_queue():
    with Runtime(backend="sim", targets=["gfx942"], executor="null") as rt:
        agent, empty = _load(rt, "empty", "gfx942")
        with agent.create_queue(64) as queue:
            prepared = empty.prepare(queue, 64, 64)
            prepared.submit()  # warm up: the kernarg ring, the batch arena and their signals
            prepared.batch([()]).wait()  # exist from here on
            gc.collect()
            before = live_counts()
            dispatched = 2
            for _ in range(100_000 // 100 - 1):
                dispatched += len(prepared.batch([()] * 100).indices)
            last = prepared.batch([()] * 98)
            dispatched += len(last.indices)
            last.wait(timeout=60)
            assert dispatched == 100_000
            # every packet (dispatches + one closing barrier per chunk) was consumed, none lost
            closing_barriers = 1 + 999 * 2 + 2
            assert queue.load_read_index() == queue.load_write_index() == 100_000 + closing_barriers
            gc.collect()
            assert live_counts() == before


def test_three_queue_barrier_graph_runs_in_dependency_order(sim_runtime):
    """q0: A; q1: wait(A) then B; q2: wait(A and B) then C -- checked through timestamps."""
    agent, empty = _load(sim_runtime, "empty", "gfx942")
    queues = [agent.create_queue(64) for _ in range(3)]
    for q in queues:
        q.enable_profiling()
    gate = sim_runtime.create_signal(1)
    try:
        # Hold A behind a barrier-value packet so that B and C are queued before A can run.
        queues[0].publish(aql.barrier_value(gate.handle, 0, "EQ"))
        a = empty.prepare(queues[0], 64, 64)(doorbell=True)
        done_a = sim_runtime.create_signal(1)
        queues[0].publish(aql.barrier_and([a.signal.handle], completion_signal=done_a.handle))
        queues[1].publish(aql.barrier_and([done_a.handle]))
        b = empty.prepare(queues[1], 64, 64)()
        done_b = sim_runtime.create_signal(1)
        queues[1].publish(aql.barrier_and([], completion_signal=done_b.handle))
        queues[2].publish(aql.barrier_and([done_a.handle, done_b.handle]))
        c = empty.prepare(queues[2], 64, 64)()
        assert not (a.is_done or b.is_done or c.is_done)
        gate.store(0)
        for result in (a, b, c):
            result.wait(timeout=10)
        assert a.end <= b.start and b.end <= c.start
    finally:
        for q in queues:
            q.close()


def _ring_packet(queue, index) -> bytes:
    return bytes(queue.ring[index & (queue.size - 1)])


def _mask_patched(packet: bytes) -> bytes:
    """Everything but kernarg_address (40..47) and completion_signal (56..63)."""
    return packet[:40] + packet[48:56]


def test_prepared_batch_and_graph_packets_equal_the_plain_api(sim_runtime):
    agent, vadd = _load(sim_runtime, "vector_add", "gfx942")
    bufs = [agent.device_pool.allocate(4096) for _ in range(3)]
    args = [bufs[0], bufs[1], bufs[2], 1000]
    queue = agent.create_queue(64)
    plain = vadd.launch(queue, args, grid=1024, workgroup=256, wait=False)
    plain_packet = _ring_packet(queue, plain.index)
    plain.wait()
    plain_kernarg = vadd.layout.pack(args, 1024, 256, queue_ptr=queue.address)

    prepared = vadd.prepare(queue, 1024, 256)
    one = prepared(*args, doorbell=False)
    published = prepared.publish(*args)
    batch = prepared.batch([args, args], doorbell=False)
    graph = Graph(queue)
    graph.add_dispatch(vadd, args, 1024, 256, barrier=False)
    replay = graph.launch(wait=False, doorbell=False)
    indices = [one.index, published, *batch.indices, *(r.index for r in replay)]
    packets = [_ring_packet(queue, index) for index in indices]
    queue.flush()
    for result in [one, batch, *replay]:
        result.wait()
    for packet in packets:
        assert _mask_patched(packet) == _mask_patched(plain_packet)
        kernarg_address = int.from_bytes(packet[40:48], "little")
        kernarg = bytes(sim_runtime.ffi.buffer(sim_runtime.ffi.cast("char *", kernarg_address),
                                               len(plain_kernarg)))
        assert kernarg == plain_kernarg
    queue.close()


def test_batch_closes_with_a_barrier_and_signal(sim_runtime):
    agent, empty = _load(sim_runtime, "empty", "gfx942")
    with agent.create_queue(64) as queue:
        prepared = empty.prepare(queue, 64, 64)
        batch = prepared.batch([()] * 3, doorbell=False)
        first, count, signal = batch.chunks[0]
        closing = aql.parse(_ring_packet(queue, first + count))
        assert aql.decode_header(closing.header).type == aql.PacketType.BARRIER_AND
        assert closing.header >> 8 & 1 and closing.completion_signal == signal.handle
        dispatch = aql.parse(_ring_packet(queue, first))
        assert dispatch.completion_signal == 0
        assert not batch.is_done
        queue.flush()
        assert batch.wait().is_done


def test_batch_rows_reach_the_ring_as_invalid_until_their_header_store(sim_runtime):
    # Queue.write_many copies whole 64-byte rows, then stores each header|setup word: the rows
    # must carry a free slot's INVALID word, or a slot could read as valid before its body is
    agent, empty = _load(sim_runtime, "empty", "gfx942")
    with agent.create_queue(64) as queue:
        prepared = empty.prepare(queue, 64, 64)
        prepared.batch([()] * 5).wait()
        prepared.batch([(), ()]).wait()
        assert len(prepared._chunks) == 2
        for packets, words in prepared._chunks.values():
            assert (packets.view(np.uint32)[:, 0] == INVALID_WORD).all()
            assert (words != INVALID_WORD).all()


def test_graph_replays_in_order_with_results(sim_runtime):
    agent, vadd = _load(sim_runtime, "vector_add", "gfx1201")
    n = 256
    a, b, out = (agent.device_pool.allocate(4 * n) for _ in range(3))
    a.copy_from(np.ones(n, np.float32))
    b.copy_from(np.ones(n, np.float32))
    with agent.create_queue(64) as queue:
        graph = Graph(queue)
        graph.add_dispatch(vadd, [a, b, out, n], n, 64)
        graph.add_dispatch(vadd, [out, b, a, n], n, 64)   # depends on the first (barrier bit)
        for _ in range(3):
            graph.launch(timeout=20)
    # each replay: out = a + 1, a = out + 1  -> a grows by 2 per replay
    assert np.array_equal(a.copy_to(dtype=np.float32), np.full(n, 7, np.float32))


# -- validation before anything reaches a ring ------------------------------------------------

@pytest.fixture
def vadd_setup(sim_runtime):
    agent, vadd = _load(sim_runtime, "vector_add", "gfx942")
    queue = agent.create_queue(64)
    bufs = [agent.device_pool.allocate(1024) for _ in range(3)]
    yield agent, vadd, queue, bufs
    queue.close()


def _nothing_published(queue):
    assert queue.load_write_index() == 0


def test_wrong_argument_count_shows_the_signature(vadd_setup):
    _agent, vadd, queue, bufs = vadd_setup
    with pytest.raises(KernelArgumentError, match=r"vector_add\(a: ptr"):
        vadd.launch(queue, bufs, grid=256, workgroup=64)
    _nothing_published(queue)


def test_publish_and_submit_take_the_kernels_own_parameters(vadd_setup):
    _agent, vadd, queue, bufs = vadd_setup
    prepared = vadd.prepare(queue, 256, 64)
    for call in (prepared.publish, prepared.submit):
        assert list(inspect.signature(call).parameters) == ["a", "b", "out", "n"]
        # hsapy's KernelArgumentError (a TypeError), not CPython's bare one
        with pytest.raises(KernelArgumentError, match=r"PreparedDispatch\(vector_add\)\.\w+: "
                                                      r"kernel vector_add takes 4 argument\(s\), "
                                                      r"3 given \(missing n\)"):
            call(*bufs)
        with pytest.raises(KernelArgumentError, match=r"takes 4 argument\(s\), 5 given"):
            call(*bufs, 16, True)
    _nothing_published(queue)


@pytest.mark.parametrize("names, params", [
    (["a", "b", "n"], ("a", "b", "n")),
    (["", "", "x"], ("arg0", "arg1", "x")),                 # unnamed in the metadata
    (["lambda", "a.b", "n"], ("arg0", "arg1", "n")),        # not usable as Python names
    (["x", "x"], ("arg0", "arg1")),                         # the same name twice
    (["queue", "slot", "index"], ("arg0", "arg1", "arg2")),  # names the fast path uses
    (["arg1", ""], ("arg1", "arg1_")),                      # a fallback never repeats a name
])
def test_parameter_names_fall_back_to_positions(names, params):
    assert parameter_names(names) == params


def test_publish_leaves_the_doorbell_to_the_caller(sim_runtime):
    agent, empty = _load(sim_runtime, "empty", "gfx942")
    with agent.create_queue(64) as queue:
        prepared = empty.prepare(queue, 64, 64)
        index = prepared.publish()
        time.sleep(0.05)
        # published but not announced: the packet processor does not fetch it
        assert queue.load_read_index() == index
        queue.flush()
        drain(queue)
        assert queue.load_read_index() == index + 2          # the dispatch and drain's barrier
        index = prepared.submit()                            # rings the doorbell itself
        drain(queue)
        assert queue.load_read_index() == index + 2


def test_a_traceback_through_the_fast_path_shows_its_source(vadd_setup):
    _agent, vadd, queue, bufs = vadd_setup
    prepared = vadd.prepare(queue, 256, 64)
    with pytest.raises(KernelArgumentError) as refused:
        prepared.publish(*bufs, "ten")
    text = "".join(traceback.format_tb(refused.tb))
    assert "<hsapy fast path: publish(a, b, out, n)>" in text
    assert "return general(slot, (a, b, out, n))" in text


def test_wrong_argument_type_names_the_argument(vadd_setup):
    _agent, vadd, queue, bufs = vadd_setup
    with pytest.raises(TypeError, match="argument 3"):
        vadd.launch(queue, [*bufs, "many"], grid=256, workgroup=64)
    _nothing_published(queue)


@pytest.mark.parametrize("workgroup, match", [
    ((2048,), "exceeds gfx942's limit"),
    ((64, 64), "work-items exceeds gfx942's limit of 1024"),
])
def test_workgroup_over_the_agent_limit(vadd_setup, workgroup, match):
    _agent, vadd, queue, bufs = vadd_setup
    with pytest.raises(DispatchConfigError, match=match):
        vadd.launch(queue, [*bufs, 4], grid=4096, workgroup=workgroup)
    _nothing_published(queue)


def test_workgroup_over_the_kernels_max_flat_size(vadd_setup):
    _agent, vadd, queue, bufs = vadd_setup
    vadd.max_flat_workgroup_size = 256
    with pytest.raises(DispatchConfigError, match="max_flat_workgroup_size of 256"):
        vadd.launch(queue, [*bufs, 4], grid=1024, workgroup=512)
    _nothing_published(queue)


def test_grid_over_the_agent_limit(vadd_setup):
    agent, vadd, queue, bufs = vadd_setup
    with pytest.raises(DispatchConfigError, match="grid"):
        vadd.launch(queue, [*bufs, 4], grid=(agent.grid_max_dim[0] + 1,), workgroup=64)
    _nothing_published(queue)


@pytest.mark.parametrize("grid", [0, (4, 0), (1, 1, 1, 1)])
def test_degenerate_grids_are_refused(vadd_setup, grid):
    _agent, vadd, queue, bufs = vadd_setup
    with pytest.raises(ValueError):
        vadd.launch(queue, [*bufs, 4], grid=grid, workgroup=64)
    _nothing_published(queue)


def test_lds_over_the_agent_limit(vadd_setup):
    _agent, vadd, queue, bufs = vadd_setup
    with pytest.raises(DispatchConfigError, match="LDS"):
        vadd.launch(queue, [*bufs, 4], grid=256, workgroup=64, dynamic_lds=65 * 1024)
    _nothing_published(queue)


def test_kernel_for_another_agent_is_refused(sim_runtime):
    _agent942, vadd = _load(sim_runtime, "vector_add", "gfx942")
    other = sim_runtime.gpu("gfx1201")
    with other.create_queue(64) as queue:
        with pytest.raises(DispatchConfigError, match="loaded for gfx942"):
            vadd.launch(queue, [0, 0, 0, 1], grid=64, workgroup=64)
        _nothing_published(queue)


# -- the hot path's shortcuts keep the plain API's meaning ---------------------------------------

def _kernarg_of(runtime, queue, index, size):
    packet = _ring_packet(queue, index)
    address = int.from_bytes(packet[40:48], "little")
    return bytes(runtime.ffi.buffer(runtime.ffi.cast("char *", address), size))


def test_prepared_dispatches_sharing_a_ring_keep_their_own_hidden_arguments(sim_runtime):
    # Two geometries of one kernel take slots from the same kernarg ring; each slot remembers
    # whose hidden-argument template it holds, so alternating must rewrite it every time.
    agent, vadd = _load(sim_runtime, "vector_add", "gfx942")
    bufs = [agent.device_pool.allocate(4096) for _ in range(3)]
    args = [bufs[0], bufs[1], bufs[2], 1000]
    with agent.create_queue(64) as queue:
        wide, narrow = vadd.prepare(queue, 1024, 256), vadd.prepare(queue, 512, 64)
        assert wide.ring is narrow.ring
        expected = {id(wide): vadd.layout.pack(args, 1024, 256, queue_ptr=queue.address),
                    id(narrow): vadd.layout.pack(args, 512, 64, queue_ptr=queue.address)}
        assert expected[id(wide)] != expected[id(narrow)]
        graph = Graph(queue)
        graph.add_dispatch(vadd, [bufs[1], bufs[0], bufs[2], 7], 128, 64)
        seen = []
        for round_ in range(3 * queue.size):   # several laps of the ring, in a varying order
            prepared = (wide, narrow)[(round_ * 7 // 3) % 2]
            result = prepared(*args, doorbell=False)
            seen.append((prepared, result))
            if round_ % 50 == 0:
                graph.launch(wait=False, doorbell=False)   # raw kernarg bytes into ring slots
            if len(seen) == 20:
                for prepared, result in seen:
                    size = len(expected[id(prepared)])
                    assert _kernarg_of(sim_runtime, queue, result.index, size) == \
                        expected[id(prepared)]
                queue.flush()
                seen[-1][1].wait()
                seen.clear()
        queue.flush()
        queue.load_read_index()


def test_prepared_dispatch_without_the_signal_layout_uses_the_api(sim_runtime):
    # A runtime whose signals are not amd_signal_t-shaped arms kernarg slots through
    # hsa_signal_load/silent_store; the packets and results are the same.
    sim_runtime._amd_signal_layout = False
    agent, empty = _load(sim_runtime, "empty", "gfx1201")
    with agent.create_queue(64) as queue:
        prepared = empty.prepare(queue, 32, 32)
        assert prepared.ring.values is None
        results = [prepared() for _ in range(3 * queue.size)]   # laps: slots wait for reuse
        for result in results[-queue.size:]:
            result.wait()
        assert queue.load_read_index() == 3 * queue.size
        for _ in range(queue.size + 5):                          # the fast path: the same
            prepared.submit()
        drain(queue)
        assert queue.load_read_index() == queue.load_write_index() == 4 * queue.size + 6
        batch = prepared.batch([()] * 100)
        assert batch.wait().is_done


def test_a_refused_call_gives_its_kernarg_slot_back(sim_runtime):
    agent, vadd = _load(sim_runtime, "vector_add", "gfx942")
    bufs = [agent.device_pool.allocate(4096) for _ in range(3)]
    with agent.create_queue(64) as queue:
        prepared = vadd.prepare(queue, 256, 64)
        for _ in range(prepared.ring.slots + 5):     # more refusals than the ring has slots
            with pytest.raises(KernelArgumentError):
                prepared(bufs[0], bufs[1])
        assert queue.load_write_index() == 0         # nothing reached the ring
        result = prepared(bufs[0], bufs[1], bufs[2], 10).wait(timeout=10)
        assert result.is_done
        # once every slot holds this launch's template, calls take the short branch: its
        # refusals give the slot back too
        slots = prepared.ring.slots
        for _ in range(slots):
            last = prepared(bufs[0], bufs[1], bufs[2], 10)
        last.wait(timeout=10)
        assert all(owner is prepared.packer for owner, _value, _body in prepared.ring.state)
        published = queue.load_write_index()
        for _ in range(slots + 5):
            with pytest.raises(KernelArgumentError):
                prepared.publish(bufs[0], bufs[1], bufs[2], "ten")
        assert queue.load_write_index() == published
        assert prepared(bufs[0], bufs[1], bufs[2], 10).wait(timeout=10).is_done


def test_a_batch_that_wraps_around_the_ring(sim_runtime):
    agent, vadd = _load(sim_runtime, "vector_add", "gfx942")
    n = 64
    a, b = (agent.device_pool.allocate(4 * n) for _ in range(2))
    outs = [agent.device_pool.allocate(4 * n) for _ in range(50)]
    a.copy_from(np.arange(n, dtype=np.float32))
    b.copy_from(np.full(n, 2, np.float32))
    with agent.create_queue(64) as queue:
        prepared = vadd.prepare(queue, n, 64)
        for _ in range(40):
            prepared(a, b, outs[0], n, doorbell=False)
        batch = prepared.batch([(a, b, out, n) for out in outs])   # slots 40..63, then 0..26
        first, count, _signal = batch.chunks[0]
        assert first % queue.size + count + 1 > queue.size
        batch.wait(timeout=30)
    for out in outs:
        assert np.array_equal(out.copy_to(dtype=np.float32), np.arange(n) + 2)


@pytest.mark.parametrize("body", [b"\0" * 59, b"\0" * 61, None])
def test_queue_write_refuses_a_body_that_is_not_60_bytes(sim_runtime, body):
    from hsapy.errors import HsapyValueError

    with sim_runtime.gpu_agents[0].create_queue(64) as queue:
        index = queue.reserve()
        before = bytes(queue.ring[index])                  # an INVALID packet
        with pytest.raises(HsapyValueError, match="exactly 60 bytes"):
            queue.write(index, 0x1234, body)
        assert bytes(queue.ring[index]) == before          # nothing was written


def test_every_wait_rereads_the_read_index_for_the_next_reservation(sim_runtime):
    # Queue.check (every wait calls it) moves the producer's free-slot bound up to what the
    # processor has consumed, so a reservation after a wait does not re-read the index itself
    agent, empty = _load(sim_runtime, "empty", "gfx942")
    with agent.create_queue(64) as queue:
        producer = queue.producer()
        prepared = empty.prepare(queue, 64, 64)
        assert producer.free_end[0] == queue.size
        for _lap in range(3):
            results = [prepared(doorbell=False) for _ in range(40)]
            queue.flush()
            results[-1].wait(timeout=10)
            assert producer.free_end[0] == queue.load_read_index() + queue.size
            assert queue.load_read_index() == queue.load_write_index()


@pytest.mark.parametrize("how", ["reserve", "publish", "publish_batch"])
def test_a_full_queue_raises_and_its_abandoned_slots_do_not_stall_it(sim_runtime, how):
    import time

    from hsapy.queue import _NO_OP, QueueFullError

    agent, empty = _load(sim_runtime, "empty", "gfx942")
    with agent.create_queue(64) as queue:
        gate = sim_runtime.create_signal(1)
        try:
            queue.publish(aql.barrier_value(gate.handle, 0, "EQ"))   # the processor waits here
            prepared = empty.prepare(queue, 64, 64)
            held = [prepared(doorbell=False) for _ in range(queue.size - 1)]   # ring now full
            started = time.monotonic()
            with pytest.raises(QueueFullError, match="no free slot for packet"):
                if how == "reserve":
                    queue.reserve(2, timeout=0.2)
                elif how == "publish":
                    queue.publish(aql.barrier_and([]), timeout=0.2)
                else:
                    queue.publish_batch([aql.barrier_and([])] * 3, timeout=0.2)
            assert time.monotonic() - started < 5.0
            abandoned = range(queue.size, queue.load_write_index())
            assert len(abandoned) == {"reserve": 2, "publish": 1, "publish_batch": 3}[how]
            gate.store(0)
            queue.flush()
            for result in held:
                result.wait(timeout=10)
            # the processor stops at an INVALID header: without no-op packets written into the
            # abandoned slots, nothing published after them would ever run
            assert prepared().wait(timeout=10).is_done
            assert queue.load_read_index() == queue.load_write_index() == abandoned.stop + 1
            for index in abandoned:
                assert bytes(queue.ring[index % queue.size][4:]) == _NO_OP.body
        finally:
            gate.close()


def test_kernarg_space_with_every_slot_in_flight_says_so(sim_runtime):
    from hsapy.dispatch import _arena_for
    from hsapy.errors import WaitTimeoutError

    agent, empty = _load(sim_runtime, "empty", "gfx942")
    with agent.create_queue(512) as queue:
        gate = sim_runtime.create_signal(1)
        try:
            queue.publish(aql.barrier_value(gate.handle, 0, "EQ"))
            prepared = empty.prepare(queue, 64, 64)
            results = [prepared(doorbell=False) for _ in range(prepared.ring.slots)]
            with pytest.raises(WaitTimeoutError, match="every slot is in flight"):
                prepared.ring.take(timeout=0.2)
            batches = [prepared.batch([()] * 4, doorbell=False) for _ in range(2)]
            arena = _arena_for(queue, prepared.ring.slot_size)   # both halves now in flight
            with pytest.raises(WaitTimeoutError, match="no half is free"):
                arena.take(timeout=0.2)
            gate.store(0)
            for result in results:
                result.wait(timeout=10)
            for batch in batches:
                batch.wait(timeout=10)
            assert prepared().wait(timeout=10).is_done
        finally:
            gate.close()


def test_a_malformed_packet_is_refused_before_a_slot_is_reserved(sim_runtime):
    from hsapy.errors import HsapyValueError

    agent, empty = _load(sim_runtime, "empty", "gfx942")
    with agent.create_queue(64) as queue:
        with pytest.raises(HsapyValueError, match="exactly 60 bytes"):
            queue.publish(aql.Packet(aql.barrier_and([]).word, b"short"))
        with pytest.raises(HsapyValueError, match="exactly 60 bytes"):
            queue.publish_batch([aql.barrier_and([]), aql.Packet(0x1503, b"\0" * 59)])
        assert queue.load_write_index() == 0      # nothing reserved, nothing to abandon
        assert empty.launch(queue, [], 64, 64, timeout=10).is_done
        assert queue.load_read_index() == 1


def test_a_packet_refused_after_its_reservation_does_not_stall_the_queue(sim_runtime):
    from hsapy.errors import HsapyValueError

    agent, empty = _load(sim_runtime, "empty", "gfx942")
    with agent.create_queue(64) as queue:
        index = queue.reserve(1)
        with pytest.raises(HsapyValueError, match="exactly 60 bytes"):
            queue.write(index, aql.barrier_and([]).word, b"short")
        queue.abandon(index)
        assert empty.launch(queue, [], 64, 64, timeout=10).is_done
        assert queue.load_read_index() == 2


def test_queue_apertures_are_the_amd_queue_fields(sim_runtime):
    from hsapy.sim.memory import PRIVATE_APERTURE_BASE, SHARED_APERTURE_BASE

    with sim_runtime.gpu_agents[0].create_queue(64) as queue:
        assert queue.apertures == (SHARED_APERTURE_BASE >> 32, PRIVATE_APERTURE_BASE >> 32)


@pytest.mark.parametrize("signal_layout", [True, False])
def test_launch_leaves_no_reference_cycles(signal_layout):
    # A plain launch builds a PreparedDispatch; if it were a reference cycle, every launch would
    # leave garbage that only the cyclic collector frees (and slows every later burst).
    from hsapy.dispatch import PreparedDispatch

    with Runtime(backend="sim", targets=["gfx942"], executor="null") as rt:
        if not signal_layout:
            rt._amd_signal_layout = False
        agent, empty = _load(rt, "empty", "gfx942")
        with agent.create_queue(64) as queue:
            empty.launch(queue, [], 64, 64)
            gc.collect()
            gc.disable()
            try:
                before = {id(o) for o in gc.get_objects() if isinstance(o, PreparedDispatch)}
                for _ in range(20):
                    empty.launch(queue, [], 64, 64)
                alive = [o for o in gc.get_objects()
                         if isinstance(o, PreparedDispatch) and id(o) not in before]
            finally:
                gc.enable()
            assert alive == []


def test_a_bound_submit_outlives_its_prepared_dispatch_even_while_traced(sim_runtime, tmp_path):
    # The compiled paths hold no reference to the PreparedDispatch: keeping only
    # ``prepared.submit`` must keep working, on the observer path too.
    import hsapy.trace

    agent, empty = _load(sim_runtime, "empty", "gfx942")
    with agent.create_queue(64) as queue:
        prepared = empty.prepare(queue, 64, 64)
        prepared.submit()
        submit = prepared.submit
        del prepared
        gc.collect()
        with hsapy.trace.Trace(tmp_path / "t.json"):
            submit()
        submit()
        queue.flush()
        assert queue.load_write_index() == 3



class _Recorder:
    """An observer (hsapy.queue.OBSERVERS) that records what it is told."""

    def __init__(self):
        self.written, self.reused = [], []

    def packets_written(self, queue, first, count):
        self.written.extend(range(first, first + count))

    def doorbell(self, queue, index):
        pass

    def signal_reused(self, handle):
        self.reused.append(handle)


def test_an_observer_attached_later_sees_every_prepared_dispatch(sim_runtime):
    agent, empty = _load(sim_runtime, "empty", "gfx942")
    with agent.create_queue(64) as queue:
        prepared = empty.prepare(queue, 64, 64)
        publish, slots = prepared.publish, prepared.ring.slots
        for _ in range(2 * slots):                  # every slot now takes the short branch
            publish()
        drain(queue)
        assert all(owner is prepared.packer for owner, _value, _body in prepared.ring.state)
        recorder = _Recorder()
        add_observer(recorder)
        try:
            seen = [publish() for _ in range(slots + 3)]   # more than a lap while observed
            drain(queue)
        finally:
            remove_observer(recorder)
        assert [i for i in recorder.written if i in seen] == seen
        assert len(recorder.reused) >= len(seen)
        for _ in range(2 * slots):                  # unobserved again: back on the short branch
            publish()
        drain(queue)
        assert all(owner is prepared.packer for owner, _value, _body in prepared.ring.state)
        assert len(recorder.written) == len(seen) + 1          # + drain's barrier


def _private_kernel(runtime, target, private):
    """The assembled s_endpgm kernel whose descriptor asks for ``private`` bytes of private
    memory per work-item (LLVM would refuse past the limit: "stack frame size (160004) exceeds
    limit (131056)" on gfx942)."""
    agent = runtime.gpu(target)
    code = built(build.build_asm, target, 5, private)
    return agent, runtime.load(code, agent).kernel("endpgm")


@pytest.mark.parametrize("target, lanes, limit", [("gfx942", 64, 8387584),
                                                  ("gfx1201", 32, 67108608)])
def test_private_memory_past_the_per_wave_scratch_limit_is_refused(sim_runtime, target, lanes,
                                                                   limit):
    per_lane = limit // lanes                 # 131056 on gfx942: LLVM's own stack limit
    agent, fits = _private_kernel(sim_runtime, target, per_lane)
    _, too_big = _private_kernel(sim_runtime, target, per_lane + 1)
    with agent.create_queue(64) as queue:
        with pytest.raises(DispatchConfigError,
                           match=rf"{per_lane + 1} bytes of private memory per work-item x "
                                 rf"{lanes} lanes = {(per_lane + 1) * lanes} bytes of scratch per "
                                 rf"wave exceed {target}'s limit of {limit}"):
            too_big.launch(queue, [], lanes, lanes)
        assert queue.load_write_index() == 0            # refused before the ring
        assert fits.launch(queue, [], lanes, lanes, timeout=10).is_done


@pytest.mark.parametrize("target", TARGETS)
def test_a_raw_packet_asking_for_too_much_scratch_stops_the_queue(sim_runtime, target):
    # Written by hand, a packet's private_segment_size is not validated by hsapy: the simulated
    # packet processor refuses it as ROCr does, with HSA_STATUS_ERROR_OUT_OF_RESOURCES (it used
    # to try to allocate 4 GiB per lane when the kernel touched scratch).
    from hsapy.errors import OutOfResourcesError

    agent, empty = _load(sim_runtime, "empty", target)
    done = sim_runtime.create_signal(1)
    with agent.create_queue(64) as queue:
        queue.publish(aql.kernel_dispatch(empty.kernel_object, 64, 64, completion_signal=done.handle,
                                          private_segment_size=0xFFFFFFFF))
        with pytest.raises(OutOfResourcesError, match=r"4294967295 bytes of private memory per "
                                                      r"work-item.*scratch per wave"):
            done.wait(timeout=10, abort=queue.check)
    done.close()
