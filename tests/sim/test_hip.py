"""hsapy.hip end to end on the simulator: every mapped HIP call, what it computes and which
packets it leaves on the stream's queue (docs/hip-on-aql.md is the table these tests check)."""
from __future__ import annotations

import shutil
import time

import numpy as np
import pytest

from hsapy import aql
from hsapy.asm import kernels
from hsapy.hip import HipError, HipRuntime, hipError_t, hipMemcpyKind

N = 1000
BLOCK = 256
BLOCKS = (N + BLOCK - 1) // BLOCK
needs_clang = pytest.mark.skipif(shutil.which("clang-19") is None,
                                 reason="hipMemset's fill kernel is built with clang-19")


@pytest.fixture
def hip(sim_runtime):
    with HipRuntime(sim_runtime) as hip:
        yield hip


def _vector_add(hip, device=0):
    target = hip.runtime.gpu_agents[device].target
    module = hip.moduleLoadData(kernels.build("vector_add", target))
    return hip.moduleGetFunction(module, "vector_add")


def _inputs(hip):
    a = np.arange(N, dtype=np.float32)
    b = np.full(N, 0.5, np.float32)
    d_a, d_b, d_c = (hip.malloc(4 * N) for _ in range(3))
    hip.memcpy(d_a, a)
    hip.memcpy(d_b, b)
    return a, b, d_a, d_b, d_c


def _packet(stream, index):
    """Packet ``index`` as it sits in the ring (the processor only resets the header after
    running it, so the body is what was published)."""
    return bytes(stream.queue.ring[index % stream.queue.size])


def _run_packet(stream, index, packet_type):
    """Packet ``index`` after it ran (header reset to INVALID), parsed as ``packet_type``."""
    raw = _packet(stream, index)
    header = aql.encode_header(packet_type)
    return aql.parse(header.to_bytes(2, "little") + raw[2:])


def _header(stream, index):
    """The decoded header of packet ``index``: only meaningful while the stream is gated (the
    processor marks a slot INVALID once it has run the packet)."""
    return aql.decode_header(aql.parse(_packet(stream, index)).header)


def _gate(hip, stream):
    """Block ``stream`` behind a host-held signal: barrier-AND on a signal that stays 1."""
    gate = hip.runtime.create_signal(1)
    stream.publish(aql.barrier_and([gate.handle]))
    return gate


# -- devices --------------------------------------------------------------------------------
def test_get_device_count_is_the_number_of_gpu_agents(hip):
    assert hip.getDeviceCount() == len(hip.runtime.gpu_agents) == 2


def test_set_device_selects_the_agent_of_later_allocations(hip):
    hip.setDevice(1)
    assert hip.getDevice() == 1
    buffer = hip.malloc(4096)
    assert buffer.pool.agent == hip.runtime.gpu_agents[1]


def test_set_device_out_of_range_is_invalid_device_and_last_error(hip):
    with pytest.raises(HipError) as raised:
        hip.setDevice(7)
    assert raised.value.code == hipError_t.hipErrorInvalidDevice
    assert hip.getLastError() == hipError_t.hipErrorInvalidDevice
    assert hip.getLastError() == hipError_t.hipSuccess          # reset after reading


@pytest.mark.parametrize("device, target, warp", [(0, "gfx942", 64), (1, "gfx1201", 32)])
def test_get_device_properties_come_from_the_agent_table(hip, device, target, warp):
    agent = hip.runtime.gpu_agents[device]
    props = hip.getDeviceProperties(device)
    assert props.gcnArchName.split(":")[0] == target
    assert props.warpSize == warp == agent.wavefront_size
    assert props.multiProcessorCount == agent.compute_unit_count
    assert props.maxThreadsPerBlock == agent.workgroup_max_size
    assert props.maxThreadsDim == tuple(agent.workgroup_max_dim)
    assert props.maxGridSize == tuple(agent.grid_max_dim)
    assert props.sharedMemPerBlock == agent.lds_size > 0
    assert props.totalGlobalMem == agent.device_pool.size


def test_device_synchronize_waits_for_every_stream(hip):
    s1, s2 = hip.streamCreate(), hip.streamCreate()
    events = [hip.eventCreate(), hip.eventCreate()]
    for stream, event in zip((s1, s2), events):
        hip.eventRecord(event, stream)
    hip.deviceSynchronize()
    assert all(hip.eventQuery(e) == hipError_t.hipSuccess for e in events)


# -- memory ---------------------------------------------------------------------------------
def test_malloc_and_free_track_mem_get_info(hip):
    free0, total = hip.memGetInfo()
    assert total == hip.runtime.gpu_agents[0].device_pool.size
    buffer = hip.malloc(1 << 20)
    assert buffer.pool == hip.runtime.gpu_agents[0].device_pool
    assert hip.memGetInfo() == (free0 - buffer.size, total)
    hip.free(buffer)
    assert hip.memGetInfo() == (free0, total)


def test_double_free_is_invalid_value(hip):
    buffer = hip.malloc(256)
    hip.free(buffer)
    with pytest.raises(HipError) as raised:
        hip.free(buffer)
    assert raised.value.code == hipError_t.hipErrorInvalidValue
    assert hip.peekAtLastError() == hipError_t.hipErrorInvalidValue


def test_malloc_of_zero_bytes_is_invalid_value(hip):
    with pytest.raises(HipError) as raised:
        hip.malloc(0)
    assert raised.value.code == hipError_t.hipErrorInvalidValue
    assert raised.value.__cause__ is not None       # the hsapy exception that explains it


def test_host_malloc_is_fine_grained_system_memory_a_kernel_writes(hip):
    a, b, d_a, d_b, _ = _inputs(hip)
    host = hip.hostMalloc(4 * N)
    assert host.pool == hip.runtime.system_pool and host.is_host_accessible
    hip.launchKernelGGL(_vector_add(hip), BLOCKS, BLOCK, 0, None, d_a, d_b, host, N)
    hip.deviceSynchronize()
    np.testing.assert_array_equal(host.numpy(np.float32)[:N], a + b)   # no copy back needed
    hip.hostFree(host)


def test_memcpy_round_trip_host_device_device(hip):
    data = np.random.default_rng(1).integers(0, 2**32, 512, dtype=np.uint32)
    d1, d2 = hip.malloc(data.nbytes), hip.malloc(data.nbytes)
    hip.memcpy(d1, data, data.nbytes, hipMemcpyKind.hipMemcpyHostToDevice)
    hip.memcpy(d2, d1, data.nbytes, hipMemcpyKind.hipMemcpyDeviceToDevice)
    out = np.zeros_like(data)
    hip.memcpy(out, d2, data.nbytes, hipMemcpyKind.hipMemcpyDeviceToHost)
    np.testing.assert_array_equal(out, data)


def test_memcpy_with_the_wrong_kind_is_invalid_direction(hip):
    buffer = hip.malloc(64)
    with pytest.raises(HipError) as raised:
        hip.memcpy(buffer, np.zeros(16, np.float32), 64, hipMemcpyKind.hipMemcpyDeviceToHost)
    assert raised.value.code == hipError_t.hipErrorInvalidMemcpyDirection


def test_memcpy_async_waits_for_the_kernel_before_it_on_the_stream(hip):
    a, b, d_a, d_b, d_c = _inputs(hip)
    d_copy = hip.malloc(4 * N)
    stream = hip.streamCreate()
    gate = _gate(hip, stream)                    # hold the stream so the order is observable
    hip.launchKernelGGL(_vector_add(hip), BLOCKS, BLOCK, 0, stream, d_a, d_b, d_c, N)
    before = stream.queue.load_write_index()
    hip.memcpyAsync(d_copy, d_c, 4 * N, hipMemcpyKind.hipMemcpyDeviceToDevice, stream)
    # two barrier-AND packets bracket the copy engine's work on the stream
    assert stream.queue.load_write_index() == before + 2
    first, second = aql.parse(_packet(stream, before)), aql.parse(_packet(stream, before + 1))
    assert first.completion_signal != 0 and second.dep_signal[0] != 0
    time.sleep(0.05)
    assert np.all(d_copy.copy_to(dtype=np.float32) == 0)      # copy has not run ahead
    gate.store(0)
    hip.streamSynchronize(stream)
    np.testing.assert_array_equal(d_copy.copy_to(dtype=np.float32)[:N], a + b)


def test_memcpy_async_from_a_numpy_array_stages_it_at_once(hip):
    data = np.arange(256, dtype=np.int32)
    buffer = hip.malloc(data.nbytes)
    stream = hip.streamCreate()
    hip.memcpyAsync(buffer, data, stream=stream)
    data[:] = -1                                 # the caller may reuse its array right away
    hip.streamSynchronize(stream)
    np.testing.assert_array_equal(buffer.copy_to(dtype=np.int32), np.arange(256))


@needs_clang
@pytest.mark.parametrize("nbytes", [4096, 7])
def test_memset_sets_bytes(hip, nbytes):
    buffer = hip.malloc(4096)
    hip.memset(buffer, 0x00)
    hip.memset(buffer, 0xA5, nbytes)
    raw = buffer.copy_to()
    assert np.all(raw[:nbytes] == 0xA5) and np.all(raw[nbytes:] == 0)


@needs_clang
def test_memset_async_is_a_dispatch_ordered_after_the_kernel(hip):
    a, b, d_a, d_b, d_c = _inputs(hip)
    stream = hip.streamCreate()
    gate = _gate(hip, stream)
    hip.launchKernelGGL(_vector_add(hip), BLOCKS, BLOCK, 0, stream, d_a, d_b, d_c, N)
    index = stream.queue.load_write_index()
    hip.memsetAsync(d_c, 0, 16, stream)
    header = _header(stream, index)
    assert header.type == aql.PacketType.KERNEL_DISPATCH and header.barrier
    gate.store(0)
    hip.streamSynchronize(stream)
    out = d_c.copy_to(dtype=np.float32)[:N]
    assert np.all(out[:4] == 0)
    np.testing.assert_array_equal(out[4:], (a + b)[4:])


# -- launches -------------------------------------------------------------------------------
@pytest.mark.parametrize("device", [0, 1])
def test_launch_kernel_ggl_grid_is_blocks_times_threads(hip, device):
    hip.setDevice(device)
    a, b, d_a, d_b, d_c = _inputs(hip)
    stream = hip.streamCreate()
    gate = _gate(hip, stream)
    result = hip.launchKernelGGL(_vector_add(hip, device), BLOCKS, BLOCK, 0, stream,
                                 d_a, d_b, d_c, N)
    packet = aql.parse(_packet(stream, result.index))
    assert (packet.grid_size_x, packet.workgroup_size_x) == (BLOCKS * BLOCK, BLOCK)
    assert _header(stream, result.index).barrier          # in-order stream
    gate.store(0)
    hip.streamSynchronize(stream)
    np.testing.assert_array_equal(d_c.copy_to(dtype=np.float32)[:N], a + b)


def test_module_launch_kernel_takes_the_arguments_as_a_list(hip):
    a, b, d_a, d_b, d_c = _inputs(hip)
    hip.moduleLaunchKernel(_vector_add(hip), BLOCKS, BLOCK, 0, None, [d_a, d_b, d_c, N])
    hip.deviceSynchronize()
    np.testing.assert_array_equal(d_c.copy_to(dtype=np.float32)[:N], a + b)


@pytest.mark.parametrize("block, shared", [(2048, 0), (256, 1 << 20)])
def test_launch_beyond_the_agent_limits_is_invalid_configuration(hip, block, shared):
    _, _, d_a, d_b, d_c = _inputs(hip)
    stream = hip.streamCreate()
    with pytest.raises(HipError) as raised:
        hip.launchKernelGGL(_vector_add(hip), 1, block, shared, stream, d_a, d_b, d_c, N)
    assert raised.value.code == hipError_t.hipErrorInvalidConfiguration
    assert stream.queue.load_write_index() == 0          # nothing reached the queue


# -- streams --------------------------------------------------------------------------------
def test_streams_are_separate_queues_with_profiling(hip):
    s1, s2 = hip.streamCreate(), hip.streamCreate()
    assert s1.queue.id != s2.queue.id and s1.queue.agent == s2.queue.agent


def test_stream_synchronize_publishes_a_barrier_and_and_waits(hip):
    stream = hip.streamCreate()
    gate = _gate(hip, stream)
    event = hip.eventCreate()
    hip.eventRecord(event, stream)
    assert hip.eventQuery(event) == hipError_t.hipErrorNotReady
    gate.store(0)
    hip.streamSynchronize(stream)
    assert hip.eventQuery(event) == hipError_t.hipSuccess
    last = _run_packet(stream, stream.queue.load_write_index() - 1, aql.PacketType.BARRIER_AND)
    assert last.dep_signal[0] == 0 and last.completion_signal != 0    # the drain's barrier


def test_stream_destroy_closes_the_queue_once(hip):
    stream = hip.streamCreate()
    hip.streamDestroy(stream)
    assert stream.queue.is_closed
    with pytest.raises(HipError) as raised:
        hip.streamDestroy(stream)
    assert raised.value.code == hipError_t.hipErrorInvalidHandle


def test_stream_wait_event_holds_the_other_stream(hip):
    s1, s2 = hip.streamCreate(), hip.streamCreate()
    gate = _gate(hip, s1)
    on_s1, waited, free = hip.eventCreate(), hip.eventCreate(), hip.eventCreate()
    hip.eventRecord(on_s1, s1)
    hip.eventRecord(free, s2)                      # before the wait: runs at once
    hip.streamWaitEvent(s2, on_s1)
    wait_index = s2.queue.load_write_index() - 1
    assert _header(s2, wait_index).type == aql.PacketType.BARRIER_AND   # held: not yet run
    assert aql.parse(_packet(s2, wait_index)).dep_signal[0] == on_s1.signal.handle
    hip.eventRecord(waited, s2)
    hip.eventSynchronize(free)
    time.sleep(0.05)
    assert hip.eventQuery(waited) == hipError_t.hipErrorNotReady
    gate.store(0)
    hip.eventSynchronize(waited)
    assert waited.timestamps()[1] >= on_s1.timestamps()[1]


# -- events ---------------------------------------------------------------------------------
def test_event_record_is_a_barrier_and_with_the_event_signal(hip):
    stream = hip.streamCreate()
    event = hip.eventCreate()
    hip.eventRecord(event, stream)
    hip.eventSynchronize(event)
    expected = aql.barrier_and([], completion_signal=event.signal.handle)
    assert _packet(stream, event.index)[4:] == expected.body      # golden body bytes


def test_event_elapsed_time_brackets_a_kernel_in_order(hip):
    a, b, d_a, d_b, d_c = _inputs(hip)
    stream = hip.streamCreate()
    start, stop = hip.eventCreate(), hip.eventCreate()
    hip.eventRecord(start, stream)
    result = hip.launchKernelGGL(_vector_add(hip), BLOCKS, BLOCK, 0, stream, d_a, d_b, d_c, N)
    hip.eventRecord(stop, stream)
    hip.eventSynchronize(stop)
    result.wait()
    assert start.timestamps()[1] <= result.start <= result.end <= stop.timestamps()[1]
    assert hip.eventElapsedTime(start, stop) >= hip.eventElapsedTime(start, start) == 0.0


def test_event_elapsed_time_before_completion_is_not_ready(hip):
    stream = hip.streamCreate()
    gate = _gate(hip, stream)
    start, stop = hip.eventCreate(), hip.eventCreate()
    hip.eventRecord(start, stream)
    hip.eventRecord(stop, stream)
    with pytest.raises(HipError) as raised:
        hip.eventElapsedTime(start, stop)
    assert raised.value.code == hipError_t.hipErrorNotReady
    gate.store(0)
    hip.eventSynchronize(stop)
    assert hip.eventElapsedTime(start, stop) >= 0


def test_event_without_timing_has_no_elapsed_time(hip):
    start, stop = hip.eventCreate(timing=False), hip.eventCreate(timing=False)
    hip.eventRecord(start)
    hip.eventRecord(stop)
    hip.eventSynchronize(stop)
    with pytest.raises(HipError) as raised:
        hip.eventElapsedTime(start, stop)
    assert raised.value.code == hipError_t.hipErrorInvalidHandle


# -- graphs ---------------------------------------------------------------------------------
def test_stream_capture_records_then_replays(hip):
    a, b, d_a, d_b, d_c = _inputs(hip)
    d_d = hip.malloc(4 * N)
    vadd = _vector_add(hip)
    stream = hip.streamCreate()
    hip.streamBeginCapture(stream)
    hip.launchKernelGGL(vadd, BLOCKS, BLOCK, 0, stream, d_a, d_b, d_c, N)
    hip.launchKernelGGL(vadd, BLOCKS, BLOCK, 0, stream, d_c, d_b, d_d, N)   # needs the first
    graph = hip.streamEndCapture(stream)
    assert len(graph.nodes) == 2 and stream.queue.load_write_index() == 0   # nothing published
    exe = hip.graphInstantiate(graph)
    for _ in range(2):
        hip.memcpy(d_d, np.zeros(N, np.float32))
        gate = _gate(hip, stream)
        results = hip.graphLaunch(exe, stream)
        assert [_header(stream, r.index).barrier for r in results] == [True, True]
        gate.store(0)
        hip.streamSynchronize(stream)
        np.testing.assert_array_equal(d_d.copy_to(dtype=np.float32)[:N], a + 2 * b)


def test_graph_create_with_explicit_kernel_nodes(hip):
    a, b, d_a, d_b, d_c = _inputs(hip)
    graph = hip.graphCreate()
    first = hip.graphAddKernelNode(graph, [], _vector_add(hip), BLOCKS, BLOCK, [d_a, d_b, d_c, N])
    hip.graphAddKernelNode(graph, [first], _vector_add(hip), BLOCKS, BLOCK, [d_c, d_c, d_a, N])
    with pytest.raises(HipError):
        hip.graphAddKernelNode(graph, [5], _vector_add(hip), 1, 1, [d_a, d_b, d_c, N])
    hip.graphLaunch(hip.graphInstantiate(graph))
    hip.deviceSynchronize()
    np.testing.assert_array_equal(d_a.copy_to(dtype=np.float32)[:N], 2 * (a + b))


def test_memcpy_async_cannot_be_captured(hip):
    stream = hip.streamCreate()
    buffer = hip.malloc(64)
    hip.streamBeginCapture(stream)
    with pytest.raises(HipError) as raised:
        hip.memcpyAsync(buffer, np.zeros(16, np.float32), stream=stream)
    assert raised.value.code == hipError_t.hipErrorStreamCaptureUnsupported
    hip.streamEndCapture(stream)


# -- memory pools ---------------------------------------------------------------------------
def test_mem_pool_reuses_a_block_freed_in_stream_order(hip):
    pool = hip.memPoolCreate()
    stream = hip.streamCreate()
    block = hip.mallocFromPoolAsync(8192, pool, stream)
    assert block.pool == hip.runtime.gpu_agents[0].device_pool
    hip.freeAsync(block, stream, pool)
    assert pool.cached_bytes == 0                   # not before the stream got there
    hip.streamSynchronize(stream)
    assert pool.cached_bytes == block.size
    again = hip.mallocFromPoolAsync(8192, pool, stream)
    assert again.address == block.address and pool.cached_bytes == 0
    hip.freeAsync(again, stream, pool)
    hip.streamSynchronize(stream)
    hip.memPoolTrimTo(pool, 0)
    assert pool.cached_bytes == 0 and again.is_closed


# -- peers and sticky errors ----------------------------------------------------------------
def test_device_can_access_peer_follows_the_pool_access(hip):
    pool = hip.runtime.gpu_agents[0].device_pool
    expected = pool.access(hip.runtime.gpu_agents[1]) != "never"
    assert hip.deviceCanAccessPeer(1, 0) == expected
    assert hip.deviceCanAccessPeer(0, 0) is False


def _peer_add(hip, enable):
    """Device 1 (gfx1201) adds buffers that live on device 0 (gfx942)."""
    a, b, d_a, d_b, d_c = _inputs(hip)
    hip.setDevice(1)
    if enable:
        hip.deviceEnablePeerAccess(0)
    vadd = _vector_add(hip, 1)
    hip.launchKernelGGL(vadd, BLOCKS, BLOCK, 0, None, d_a, d_b, d_c, N)
    hip.deviceSynchronize()
    return a + b, d_c


def test_peer_access_lets_another_device_read_the_memory(hip):
    if not hip.deviceCanAccessPeer(1, 0):
        pytest.skip("the runtime reports no peer access between the two GPU agents")
    expected, d_c = _peer_add(hip, enable=True)
    np.testing.assert_array_equal(d_c.copy_to(dtype=np.float32)[:N], expected)
    with pytest.raises(HipError) as raised:
        hip.deviceEnablePeerAccess(0)
    assert raised.value.code == hipError_t.hipErrorPeerAccessAlreadyEnabled


def test_a_kernel_fault_is_a_sticky_error(hip):
    with pytest.raises(HipError) as raised:
        _peer_add(hip, enable=False)             # device 1 touches device 0's memory
    assert raised.value.code == hipError_t.hipErrorIllegalAddress
    assert hip.getLastError() == hipError_t.hipErrorIllegalAddress
    assert hip.getLastError() == hipError_t.hipErrorIllegalAddress   # sticky: not reset
    with pytest.raises(HipError) as again:
        hip.malloc(64)
    assert again.value.code == hipError_t.hipErrorIllegalAddress


def test_get_last_error_reports_the_last_failure_then_success(hip):
    assert hip.getLastError() == hipError_t.hipSuccess
    with pytest.raises(HipError):
        hip.memcpy(hip.malloc(4), np.zeros(4, np.float32))         # 16 bytes into 4
    assert hip.peekAtLastError() == hipError_t.hipErrorInvalidValue
    assert hip.getLastError() == hipError_t.hipErrorInvalidValue
    assert hip.getLastError() == hipError_t.hipSuccess
    assert hip.getErrorName(hipError_t.hipErrorNotReady) == "hipErrorNotReady"


def test_malloc_managed_is_host_and_device_visible(hip):
    buffer = hip.mallocManaged(4 * N)
    assert buffer.pool.is_fine_grained and buffer.is_host_accessible
    a, b, d_a, d_b, _ = _inputs(hip)
    hip.launchKernelGGL(_vector_add(hip), BLOCKS, BLOCK, 0, None, d_a, d_b, buffer, N)
    hip.deviceSynchronize()
    np.testing.assert_array_equal(buffer.numpy(np.float32)[:N], a + b)


def test_disable_peer_access_needs_it_enabled(hip):
    with pytest.raises(HipError) as raised:
        hip.deviceDisablePeerAccess(1)
    assert raised.value.code == hipError_t.hipErrorPeerAccessNotEnabled
    if hip.deviceCanAccessPeer(0, 1):
        hip.deviceEnablePeerAccess(1)
        hip.deviceDisablePeerAccess(1)
        hip.deviceEnablePeerAccess(1)                  # enabled again after the disable


def test_event_record_again_and_destroy(hip):
    stream = hip.streamCreate()
    event = hip.eventCreate()
    hip.eventRecord(event, stream)
    first = event.signal
    hip.eventRecord(event, stream)
    assert event.signal is not first                   # a fresh signal per record
    hip.eventSynchronize(event)
    hip.eventDestroy(event)
    assert not event.is_recorded
    hip.streamSynchronize(stream)                      # the retired signals go back to the pool


def test_close_releases_what_the_program_left_behind(sim_runtime):
    from hsapy._lifetime import live_counts

    def counts():
        live = live_counts()
        return {kind: live.get(kind, 0) for kind in ("Signal", "Buffer", "Queue")}

    kernel = sim_runtime.load(kernels.build("vector_add", "gfx942")).kernel("vector_add")
    pooled = len(sim_runtime.signal_pool)
    before = counts()
    with HipRuntime(sim_runtime) as hip:
        a, b, d_a, d_b, d_c = _inputs(hip)
        stream = hip.streamCreate()
        event = hip.eventCreate()
        hip.memcpyAsync(d_c, a, stream=stream)
        hip.launchKernelGGL(kernel, BLOCKS, BLOCK, 0, stream, d_a, d_b, d_c, N)
        hip.eventRecord(event, stream)
        hip.mallocFromPoolAsync(4096, hip.memPoolCreate(), stream)
    after = counts()
    assert after["Buffer"] == before["Buffer"] and after["Queue"] == before["Queue"]
    # signals still alive are back in the runtime's pool, ready for reuse
    assert after["Signal"] - before["Signal"] == len(sim_runtime.signal_pool) - pooled


def test_trace_shows_the_packets_each_call_published(sim_runtime):
    with HipRuntime(sim_runtime, trace=True) as hip:
        _, _, d_a, d_b, d_c = _inputs(hip)
        stream = hip.streamCreate()
        event = hip.eventCreate()
        hip.trace.clear()
        hip.memcpyAsync(d_c, d_a, stream=stream)
        hip.launchKernelGGL(_vector_add(hip), BLOCKS, BLOCK, 0, stream, d_a, d_b, d_c, N)
        hip.eventRecord(event, stream)
        hip.streamSynchronize(stream)
        calls = [(e.call, aql.decode_header(e.packet.header).type_name) for e in hip.trace]
        assert calls == [("hipMemcpyAsync", "BARRIER_AND"), ("hipMemcpyAsync", "BARRIER_AND"),
                         ("hipLaunchKernelGGL", "KERNEL_DISPATCH"),
                         ("hipEventRecord", "BARRIER_AND"),
                         ("hipStreamSynchronize", "BARRIER_AND")]
        assert [e.index for e in hip.trace] == list(range(5))
        dispatch = aql.parse(bytes(hip.trace[2].packet))
        assert (dispatch.grid_size_x, dispatch.workgroup_size_x) == (BLOCKS * BLOCK, BLOCK)
        assert dispatch.kernarg_address != 0
        assert "BARRIER_AND" in str(hip.trace[3]) and "hipEventRecord" in str(hip.trace[3])


def test_trace_of_a_graph_launch_matches_the_ring(sim_runtime):
    with HipRuntime(sim_runtime, trace=True) as hip:
        a, b, d_a, d_b, d_c = _inputs(hip)
        graph = hip.graphCreate()
        hip.graphAddKernelNode(graph, [], _vector_add(hip), BLOCKS, BLOCK, [d_a, d_b, d_c, N])
        stream = hip.streamCreate()
        exe = hip.graphInstantiate(graph)
        gate = _gate(hip, stream)
        hip.trace.clear()
        (result,) = hip.graphLaunch(exe, stream)
        (entry,) = hip.trace
        assert entry.call == "hipGraphLaunch" and entry.index == result.index
        assert bytes(entry.packet) == _packet(stream, result.index)   # header word included
        gate.store(0)
        hip.streamSynchronize(stream)
        np.testing.assert_array_equal(d_c.copy_to(dtype=np.float32)[:N], a + b)


def test_a_module_stays_loaded_while_its_dispatch_is_queued(hip):
    import gc

    a, b, d_a, d_b, d_c = _inputs(hip)
    stream = hip.streamCreate()
    gate = _gate(hip, stream)
    hip.launchKernelGGL(_vector_add(hip), BLOCKS, BLOCK, 0, stream, d_a, d_b, d_c, N)
    gc.collect()                          # the Kernel and Module objects are gone
    gate.store(0)
    hip.streamSynchronize(stream)
    np.testing.assert_array_equal(d_c.copy_to(dtype=np.float32)[:N], a + b)


def test_module_unload_destroys_the_executable_once(hip):
    module = hip.moduleLoadData(kernels.build("vector_add", "gfx942"))
    hip.moduleUnload(module)
    assert module.executable.is_closed
    with pytest.raises(HipError) as raised:
        hip.moduleUnload(module)
    assert raised.value.code == hipError_t.hipErrorInvalidHandle
