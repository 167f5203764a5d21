"""The pythonic object model over `lib`: runtime, agents, pools, buffers, signals, queues.

Parametrized over backends through the `runtime` fixture (rocr is skipped without a GPU)."""
from __future__ import annotations

import gc
import subprocess
import sys

import numpy as np
import pytest

from hsapy import errors
from hsapy._lifetime import live_counts
from hsapy.runtime import Runtime
from hsapy.signal import ORDERS, Condition, WaitState


def test_runtime_reports_backend_and_gpu_agents(runtime):
    assert runtime.backend in ("sim", "rocr", "rocr-sim")
    assert runtime.gpu_agents and runtime.cpu_agents
    assert runtime.timestamp_frequency > 0


def test_simulator_has_gfx942_and_gfx1201_by_default(sim_runtime):
    targets = [agent.target for agent in sim_runtime.gpu_agents]
    assert targets == ["gfx942", "gfx1201"]
    mi300, rx9070 = sim_runtime.gpu_agents
    assert (mi300.wavefront_size, rx9070.wavefront_size) == (64, 32)
    assert (mi300.compute_unit_count, rx9070.compute_unit_count) == (304, 64)
    assert mi300.lds_size == rx9070.lds_size == 64 * 1024


def test_sim_targets_choose_agents():
    with Runtime(backend="sim", targets=["gfx1201"]) as rt:
        assert [agent.target for agent in rt.gpu_agents] == ["gfx1201"]


def test_unknown_backend_names_the_choices():
    with pytest.raises(errors.HsapyValueError, match="auto, rocr, sim"):
        Runtime(backend="cuda")


def test_a_bad_hsapy_backend_setting_is_named_as_the_setting(monkeypatch, capsys):
    from hsapy.cli import main

    monkeypatch.setenv("HSAPY_BACKEND", "bogus")
    with pytest.raises(errors.HsapyValueError, match=r"HSAPY_BACKEND=.bogus. is not a backend"):
        Runtime()
    assert main(["info"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hsapy: HSAPY_BACKEND='bogus'") and "auto" in err
    assert len(err.strip().splitlines()) == 1
    with Runtime(backend="sim") as rt:     # an explicit backend does not read the setting
        assert rt.backend == "sim"


def test_auto_backend_says_why_it_chose(monkeypatch):
    monkeypatch.delenv("HSAPY_BACKEND", raising=False)
    with Runtime() as rt:
        assert rt.backend_reason
        if rt.backend == "sim":
            assert "ROCr" in rt.backend_reason


def test_agent_properties_are_consistent(runtime):
    agent = runtime.gpu_agents[0]
    assert agent.workgroup_max_size <= agent.workgroup_max_dim[0] * agent.workgroup_max_dim[1]
    assert agent.queue_min_size <= agent.queue_max_size
    assert agent.isa_names and agent.target.startswith("gfx")
    as_dict = agent.as_dict()
    assert as_dict["name"] == agent.name and as_dict["memory_pools"]


def test_device_buffer_round_trips_through_copies(runtime):
    agent = runtime.gpu_agents[0]
    data = np.arange(4096, dtype=np.float32) * 0.5
    with agent.device_pool.allocate(data.nbytes) as buffer:
        buffer.copy_from(data)
        assert np.array_equal(buffer.copy_to(dtype=np.float32), data)


def test_device_memory_refuses_a_host_view(runtime):
    with runtime.gpu_agents[0].device_pool.allocate(256) as buffer:
        with pytest.raises(errors.HsapyValueError, match="coarse-grained"):
            buffer.numpy()


def test_host_buffer_view_and_fill(runtime):
    with runtime.system_pool.allocate(64) as buffer:
        buffer.fill(0xDEADBEEF)
        assert (buffer.numpy(np.uint32) == 0xDEADBEEF).all()
        buffer.numpy(np.uint32)[3] = 5
        assert buffer.copy_to(dtype=np.uint32)[3] == 5


def test_view_keeps_memory_alive_after_close(runtime):
    buffer = runtime.system_pool.allocate(64)
    view = buffer.numpy(np.uint32)
    buffer.close()
    view[:] = 9  # memory is freed only when the last view goes
    assert view.sum() == 9 * 16


@pytest.mark.parametrize("nbytes, error", [(0, errors.HsapyValueError), (-1, errors.HsapyValueError),
                                           (1.5, errors.HsapyTypeError)])
def test_bad_allocation_sizes(runtime, nbytes, error):
    with pytest.raises(error):
        runtime.system_pool.allocate(nbytes)


def test_signal_operations(runtime):
    with runtime.create_signal(10) as signal:
        signal.add(5)
        signal.subtract(3)
        assert signal.load() == 12
        assert signal.exchange(7) == 12
        assert signal.cas(7, 1) == 7 and signal.load() == 1
        signal.bitwise_or(6)
        assert signal.load(relaxed=True) == 7
        signal.store(0)
        assert signal.wait(Condition.EQ, 0, timeout=1.0) == 0


def test_signal_wait_times_out_with_a_clear_error(runtime):
    with runtime.create_signal(1) as signal:
        with pytest.raises(errors.WaitTimeoutError, match="waited 0.05 s"):
            signal.wait(Condition.LT, 1, timeout=0.05)


def test_signal_pool_reuses_signals(runtime):
    pool = runtime.signal_pool
    first = pool.acquire(1)
    pool.release(first)
    second = pool.acquire(3)
    assert second is first and second.load() == 3
    pool.release(second)


@pytest.mark.parametrize("size", [3, 100, 1 << 30])
def test_queue_size_is_validated_before_the_runtime(runtime, size):
    with pytest.raises(errors.HsapyValueError, match="power of two"):
        runtime.gpu_agents[0].create_queue(size=size)


def test_queue_ring_and_indices(runtime):
    agent = runtime.gpu_agents[0]
    with agent.create_queue(size=agent.queue_min_size) as queue:
        assert queue.ring.shape == (queue.size, 64)
        # every free slot reads as INVALID (type 1), never 0 (vendor-specific)
        assert (queue.ring[:, 0] == 1).all()
        assert queue.load_write_index() == queue.load_read_index() == 0
        assert queue.add_write_index(3) == 0 and queue.load_write_index() == 3
        assert queue.slot_address(queue.size + 1) == queue.base_address + 64
        queue.check()  # no error reported


def test_queue_on_cpu_agent_is_refused(runtime):
    with pytest.raises(errors.HsapyValueError, match="not a GPU agent"):
        runtime.cpu_agents[0].create_queue(size=64)


def test_close_is_idempotent_everywhere(runtime):
    agent = runtime.gpu_agents[0]
    objects = [runtime.create_signal(0), runtime.system_pool.allocate(64),
               agent.create_queue(size=agent.queue_min_size)]
    for obj in objects:
        obj.close()
        obj.close()
        assert obj.is_closed


def test_runtime_close_releases_children():
    before = live_counts()
    rt = Runtime(backend="sim")
    rt.create_signal(1)
    rt.system_pool.allocate(128)
    rt.gpu_agents[0].create_queue(size=64)
    rt.close()
    rt.close()
    assert live_counts() == before


def test_no_leaks_for_10000_signals_and_1000_buffers(sim_runtime):
    lib = sim_runtime.lib  # the simulator's own tables show what the runtime still holds
    sim_runtime.create_signal(1).close()  # the first signal maps the simulator's signal slab
    gc.collect()
    before = live_counts()
    signals_before, allocations_before = len(lib.signals), len(lib.memory.allocations())
    for _ in range(10_000):
        sim_runtime.create_signal(1).close()
    pool = sim_runtime.system_pool
    for i in range(1_000):
        buffer = pool.allocate(4096)
        if i % 3 == 0:
            buffer.close()
        elif i % 3 == 1:
            del buffer  # collected without close(): the finalizer releases it
        else:
            view = buffer.numpy(np.uint32)
            buffer.close()  # freed once the view goes too
            view[0] = i
            del view
    gc.collect()
    assert live_counts() == before
    assert len(lib.signals) == signals_before
    assert len(lib.memory.allocations()) == allocations_before


def test_info_without_a_gpu_exits_2_with_one_paragraph():
    if _rocr_has_gpu():
        pytest.skip("this machine has an AMD GPU: hsapy info --backend rocr succeeds")
    result = subprocess.run([sys.executable, "-m", "hsapy", "info", "--backend", "rocr"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "HSA_STATUS_ERROR_OUT_OF_RESOURCES" in result.stderr or "not found" in result.stderr
    assert "--backend sim" in result.stderr and "/dev/kfd" in result.stderr
    assert result.stderr.strip().count("\n") == 0  # one paragraph


def test_info_json_on_the_simulator_lists_agents_and_pools():
    import json

    result = subprocess.run([sys.executable, "-m", "hsapy", "info", "--backend", "sim", "--json"],
                            capture_output=True, text=True, timeout=60, check=True)
    document = json.loads(result.stdout)
    assert document["simulated"] is True
    names = [agent["name"] for agent in document["agents"]]
    assert names[1:] == ["gfx942", "gfx1201"] and document["agents"][0]["device_type"] == "CPU"
    gpu = document["agents"][1]
    assert gpu["wavefront_size"] == 64 and gpu["compute_unit_count"] == 304
    assert any(pool["coarse_grained"] for pool in gpu["memory_pools"])
    assert any(pool["kernarg"] for pool in document["agents"][0]["memory_pools"])


def _rocr_has_gpu() -> bool:
    try:
        with Runtime(backend="rocr") as rt:
            return bool(rt.gpu_agents)
    except errors.HsapyError:
        return False


def _publish_raw_header(queue, header: int) -> None:
    """Write one packet whose 32-bit header|setup word is ``header`` (body zero) and ring."""
    index = queue.add_write_index(1)
    slot = queue.ring[index & (queue.size - 1)]
    slot[4:] = 0
    slot.view(np.uint32)[0] = header  # x86-64 stores are release stores (TSO)
    queue.ring_doorbell(index)


def _wait_for_queue_error(queue, timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while queue.error is None:
        assert time.monotonic() < deadline, "the queue never reported the malformed packet"
        time.sleep(0.005)


def test_queue_error_from_the_callback_is_raised_by_check(runtime):
    agent = runtime.gpu_agents[0]
    with agent.create_queue(size=agent.queue_min_size) as queue:
        _publish_raw_header(queue, 0x7)  # packet type 7 is reserved (hsa_packet_type_t ends at 5)
        _wait_for_queue_error(queue)
        with pytest.raises(errors.InvalidPacketError, match="INVALID_PACKET_FORMAT"):
            queue.check()


def test_wait_with_the_queue_check_raises_the_queue_error_not_a_timeout(runtime):
    agent = runtime.gpu_agents[0]
    with agent.create_queue(size=agent.queue_min_size) as queue, runtime.create_signal(1) as done:
        _publish_raw_header(queue, 0x7)
        with pytest.raises(errors.InvalidPacketError):
            done.wait(Condition.LT, 1, timeout=10.0, abort=queue.check)


def test_closed_queue_check_says_so(runtime):
    agent = runtime.gpu_agents[0]
    queue = agent.create_queue(size=agent.queue_min_size)
    queue.close()
    with pytest.raises(errors.HsapyValueError, match="closed"):
        queue.check()


def test_async_copy_waits_for_its_dependency_and_decrements_completion(runtime):
    agent = runtime.gpu_agents[0]
    data = np.arange(256, dtype=np.uint32)
    with runtime.system_pool.allocate(data.nbytes) as src, \
            agent.device_pool.allocate(data.nbytes) as dst, \
            runtime.create_signal(1) as dependency, runtime.create_signal(1) as completion:
        src.copy_from(data)
        runtime.copy(dst, src, data.nbytes, deps=[dependency], completion=completion)
        with pytest.raises(errors.WaitTimeoutError):
            completion.wait(Condition.LT, 1, timeout=0.1)  # held back by the dependency
        dependency.store(0)
        assert completion.wait(Condition.LT, 1, timeout=10.0) == 0
        assert np.array_equal(dst.copy_to(dtype=np.uint32), data)


@pytest.mark.parametrize("nbytes", [-1, 1.0, 4097])
def test_copy_size_is_validated_before_the_runtime(runtime, nbytes):
    with runtime.system_pool.allocate(4096) as a, runtime.system_pool.allocate(4096) as b:
        with pytest.raises(errors.HsapyValueError):
            runtime.copy(a, b, nbytes)


def test_copy_into_a_closed_buffer_is_refused(runtime):
    a = runtime.system_pool.allocate(64)
    with runtime.system_pool.allocate(64) as b:
        a.close()
        with pytest.raises(errors.HsapyValueError, match="closed"):
            runtime.copy(a, b, 64)


def test_allow_access_lets_gpu_agents_use_host_memory(runtime):
    with runtime.system_pool.allocate(4096) as buffer:
        buffer.allow_access(runtime.gpu_agents)  # succeeds (status checked)
        buffer.numpy(np.uint8)[:4] = 1
        assert buffer.copy_to()[:4].tolist() == [1, 1, 1, 1]


def test_info_when_the_library_is_missing_exits_2_without_a_traceback(tmp_path):
    import os

    env = dict(os.environ, HSAPY_HSA_LIB=str(tmp_path / "absent.so"))
    result = subprocess.run([sys.executable, "-m", "hsapy", "info", "--backend", "rocr"],
                            capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "HSAPY_HSA_LIB" in result.stderr and "--backend sim" in result.stderr
    assert result.stderr.strip().count("\n") == 0  # one paragraph


def test_auto_backend_falls_back_to_sim_when_the_library_is_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("HSAPY_HSA_LIB", str(tmp_path / "absent.so"))
    with Runtime(backend="auto") as rt:
        assert rt.backend == "sim"
        assert "ROCr unavailable" in rt.backend_reason and "HSAPY_HSA_LIB" in rt.backend_reason


def test_signal_pool_refuses_a_double_release(runtime):
    pool = runtime.signal_pool
    signal = pool.acquire(1)
    pool.release(signal)
    with pytest.raises(errors.HsapyValueError, match="already released"):
        pool.release(signal)
    assert pool.acquire(1) is signal and pool.acquire(1) is not signal


def test_fill_reaches_device_memory(runtime):
    with runtime.gpu_agents[0].device_pool.allocate(1024) as buffer:
        buffer.fill(-1)  # taken modulo 2**32
        assert (buffer.copy_to(dtype=np.uint32) == 0xFFFFFFFF).all()


@pytest.mark.parametrize("value, error", [(1.5, errors.HsapyTypeError), ("7", errors.HsapyTypeError)])
def test_fill_value_is_validated(runtime, value, error):
    with runtime.system_pool.allocate(64) as buffer:
        with pytest.raises(error):
            buffer.fill(value)


def test_fill_needs_whole_words(runtime):
    with runtime.system_pool.allocate(6) as buffer:
        with pytest.raises(errors.HsapyValueError, match="multiple of 4"):
            buffer.fill(0)


def test_no_leaks_for_100_queues_and_their_threads(sim_runtime):
    import threading

    gc.collect()
    before, threads = live_counts(), threading.active_count()
    agent = sim_runtime.gpu_agents[0]
    for i in range(100):
        queue = agent.create_queue(size=agent.queue_min_size)
        if i % 2:
            queue.close()
        else:
            del queue  # the finalizer destroys it (and the simulator stops its processor)
    gc.collect()
    assert live_counts() == before
    assert threading.active_count() == threads


def test_hsapy_backend_sets_the_default(monkeypatch):
    monkeypatch.setenv("HSAPY_BACKEND", "sim")
    with Runtime() as rt:
        assert (rt.backend, rt.backend_reason) == ("sim", "requested")
    monkeypatch.setenv("HSAPY_BACKEND", "opencl")
    with pytest.raises(errors.HsapyValueError, match="HSAPY_BACKEND"):
        Runtime()


def test_rocr_without_a_gpu_raises_out_of_resources_and_leaves_nothing_open():
    import os

    if os.path.exists("/dev/kfd"):
        pytest.skip("/dev/kfd exists: this machine may have an AMD GPU")
    before = live_counts()
    try:
        Runtime(backend="rocr")
    except errors.BackendUnavailableError as exc:
        if isinstance(exc.__cause__, errors.LibraryNotFoundError):
            pytest.skip("libhsa-runtime64 is not installed")
        assert isinstance(exc.__cause__, errors.OutOfResourcesError)
        assert exc.__cause__.function == "hsa_init"
        assert "no /dev/kfd" in str(exc) and "\n" not in str(exc)   # the cause, in one line
    else:
        pytest.fail("hsa_init succeeded without /dev/kfd")
    assert live_counts() == before


def test_system_info_reports_the_clock_and_memory_model(runtime):
    info = runtime.system_info
    assert info["timestamp_frequency"] == runtime.timestamp_frequency > 0
    assert info["endianness"] == 0 and info["machine_model"] == 1  # little endian, large model
    first = runtime.timestamp()
    assert runtime.timestamp() >= first


# every (operation, memory order) pair the Signal offers: each names a function of the cdef
_SIGNAL_ORDER_CASES = [(operation, order) for operation, orders in ORDERS.items() for order in orders]


@pytest.mark.parametrize("operation, order", _SIGNAL_ORDER_CASES)
def test_every_memory_order_variant_exists_in_the_cdef_and_works(runtime, operation, order):
    with runtime.create_signal(10) as signal:
        if operation == "load":
            assert signal.load(order=order) == 10
        elif operation in ("store", "silent_store"):
            signal.store(3, silent=operation == "silent_store", order=order)
            assert signal.load() == 3
        elif operation in ("add", "subtract"):
            getattr(signal, operation)(4, order=order)
            assert signal.load() == (14 if operation == "add" else 6)
        elif operation == "exchange":
            assert signal.exchange(5, order=order) == 10 and signal.load() == 5
        elif operation == "cas":
            assert signal.cas(9, 1, order=order) == 10 and signal.load() == 10  # no swap
            assert signal.cas(10, 1, order=order) == 10 and signal.load() == 1
        else:
            assert signal.wait(Condition.GTE, 10, timeout=1.0, order=order) == 10


@pytest.mark.parametrize("call", [
    lambda s: s.load(order="screlease"),
    lambda s: s.store(1, order="scacquire"),
    lambda s: s.exchange(1, order="screlease"),
    lambda s: s.wait(Condition.EQ, 10, timeout=1.0, order="screlease"),
    lambda s: s.wait(7, 10, timeout=1.0),
    lambda s: s.wait(Condition.EQ, 10, timeout=1.0, wait_state=5),
    lambda s: s.wait(Condition.EQ, 10, timeout=None),
])
def test_bad_signal_arguments_are_refused_before_the_runtime(runtime, call):
    with runtime.create_signal(10) as signal:
        with pytest.raises(errors.HsapyValueError):
            call(signal)


def test_numpy_view_with_a_shape(runtime):
    with runtime.system_pool.allocate(64) as buffer:
        view = buffer.numpy(np.float32, (4, 4))
        view[1, :] = 2.5
        assert buffer.copy_to(dtype=np.float32)[4:8].tolist() == [2.5] * 4
        with pytest.raises(errors.HsapyValueError, match="does not fit"):
            buffer.numpy(np.float32, (5, 5))


def test_bytes_round_trip_through_device_memory(runtime):
    with runtime.gpu_agents[0].device_pool.allocate(8) as buffer:
        buffer.copy_from(b"hsapy!!!")
        assert buffer.copy_to().tobytes() == b"hsapy!!!"
        with pytest.raises(errors.HsapyValueError, match="do not fit"):
            buffer.copy_from(b"123456789")


def test_a_runtime_that_fails_while_discovering_agents_is_shut_down(monkeypatch):
    from hsapy.sim import SimLib

    def broken_iterate(self, callback, data):
        return 0x1000  # HSA_STATUS_ERROR

    monkeypatch.setattr(SimLib, "hsa_iterate_agents", broken_iterate)
    before = live_counts()
    with pytest.raises(errors.HSAError, match="hsa_iterate_agents"):
        Runtime(backend="sim")
    assert live_counts() == before


# rocminfo's labels for a GPU agent, in its order (ROCm/rocminfo, rocminfo.cc: DisplayAgentInfo,
# DisplayPoolInfo, DisplayISAInfo), minus the attributes newer than the ROCm 5.2.3 headers hsapy
# binds (Memory Properties, uCode versions, IOMMU Support, Alloc Recommended Granule).
ROCMINFO_GPU_LABELS = [
    "Name:", "Uuid:", "Marketing Name:", "Vendor Name:", "Feature:", "Profile:",
    "Float Round Mode:", "Max Queue Number:", "Queue Min Size:", "Queue Max Size:", "Queue Type:",
    "Node:", "Device Type:", "Cache Info:", "L1:", "L2:", "L3:", "Chip ID:", "ASIC Revision:",
    "Cacheline Size:", "Max Clock Freq. (MHz):", "BDFID:", "Internal Node ID:", "Compute Unit:",
    "SIMDs per CU:", "Shader Engines:", "Shader Arrs. per Eng.:", "WatchPts on Addr. Ranges:",
    "Coherent Host Access:", "Features:", "Fast F16 Operation:", "Wavefront Size:",
    "Workgroup Max Size:", "Workgroup Max Size per Dimension:", "x", "y", "z",
    "Max Waves Per CU:", "Max Work-item Per CU:", "Grid Max Size:", "Grid Max Size per Dimension:",
    "x", "y", "z", "Max fbarriers/Workgrp:", "Pool Info:",
    "Pool 1", "Segment:", "Size:", "Allocatable:", "Alloc Granule:", "Alloc Alignment:",
    "Accessible by all:",
    "Pool 2", "Segment:", "Size:", "Allocatable:", "Alloc Granule:", "Alloc Alignment:",
    "Accessible by all:",
    "ISA Info:", "ISA 1", "Name:", "Machine Models:", "Profiles:", "Default Rounding Mode:",
    "Default Rounding Mode:", "Fast f16:", "Workgroup Max Size:",
    "Workgroup Max Size per Dimension:", "x", "y", "z", "Grid Max Size:",
    "Grid Max Size per Dimension:", "x", "y", "z", "FBarrier Max Size:",
]


def _rocminfo_label(line: str) -> str:
    """The label of one rocminfo line: up to its first colon (x, y, z have none)."""
    text = line.strip()
    if ":" in text:
        return text[:text.index(":") + 1]
    return text.split()[0] if text[:2] in ("x ", "y ", "z ") else text


def test_info_text_has_rocminfo_sections_labels_and_order():
    result = subprocess.run([sys.executable, "-m", "hsapy", "info", "--backend", "sim"],
                            capture_output=True, text=True, timeout=60, check=True)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("hsapy info: backend sim, the hsapy simulator")
    assert [line.strip() for line in lines[1:4]] == ["====================="
                                                     , "HSA System Attributes",
                                                     "====================="]
    assert [_rocminfo_label(line) for line in lines[4:9]] == [
        "Runtime Version:", "System Timestamp Freq.:", "Sig. Max Wait Duration:",
        "Machine Model:", "System Endianness:"]
    assert lines[-1].strip() == "*** Done ***"
    agents = [i for i, line in enumerate(lines) if line.startswith("Agent ")]
    assert [lines[i].strip() for i in agents] == ["Agent 1", "Agent 2", "Agent 3"]
    assert all(lines[i - 1].strip() == lines[i + 1].strip() == "*******" for i in agents)
    gpu = lines[agents[1] + 2:agents[2] - 1]                   # the gfx942 agent's lines
    assert [_rocminfo_label(line) for line in gpu] == ROCMINFO_GPU_LABELS
    values = {_rocminfo_label(line): line[line.index(":") + 1:].strip()
              for line in gpu if ":" in line}
    assert values["Marketing Name:"] == "AMD Instinct MI300X"
    assert values["Wavefront Size:"] == "64(0x40)"            # rocminfo's decimal(0xhex)
    assert values["Device Type:"] == "GPU" and values["Feature:"] == "KERNEL_DISPATCH"
    trimmed = [line.rstrip() for line in gpu]   # rocminfo pads values to 35 columns
    assert "      Segment:                 GLOBAL; FLAGS: COARSE GRAINED" in trimmed
    assert "      Name:                    amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-" in trimmed


def test_agent_caches_are_read_through_the_runtime(runtime):
    for agent in runtime.agents:
        levels = [cache["level"] for cache in agent.caches]
        assert levels == sorted(levels) and levels and levels[0] == 1
        assert all(cache["size"] > 0 for cache in agent.caches)
        # named after the agent, as ROCr names them; text, not ROCr's char pointer read as bytes
        assert all(cache["name"] == f"{agent.name} L{cache['level']}" for cache in agent.caches)
        assert agent.as_dict()["caches"] == agent.caches


def test_agent_cache_sizes_are_bytes(runtime):
    """hsa.h: HSA_CACHE_INFO_SIZE is in bytes (ROCr 5.x reports the KFD's KiB; hsapy converts)."""
    for agent in runtime.agents:
        sizes = [cache["size"] for cache in agent.caches]
        assert sizes[0] >= 16 << 10 and all(size % 1024 == 0 for size in sizes)


def test_simulated_mi300x_caches(sim_runtime):
    sizes = {cache["name"]: cache["size"] for cache in sim_runtime.gpu("gfx942").caches}
    # per-XCD L2, Infinity Cache
    assert sizes["gfx942 L2"] == 4 << 20 and sizes["gfx942 L3"] == 256 << 20


def test_pool_access_as_the_runtime_reports_it(runtime):
    cpu, gpu = runtime.cpu_agents[0], runtime.gpu_agents[0]
    assert runtime.system_pool.access(cpu) == "allowed"
    assert gpu.device_pool.access(gpu) == "allowed"
    # ROCr: system memory needs hsa_amd_agents_allow_access before a GPU uses it
    assert runtime.system_pool.access(gpu) in ("allowed", "after allow_access")
    group = [pool for pool in gpu.memory_pools if pool.segment == "group"][0]
    assert group.access(cpu) == "never"


def test_allocation_over_the_pools_limit_is_refused_before_the_runtime(runtime):
    pool = runtime.gpu_agents[0].device_pool
    assert 0 < pool.alloc_max_size <= pool.size
    with pytest.raises(errors.HsapyValueError, match="largest allocation"):
        pool.allocate(pool.alloc_max_size + 1)


def test_agent_properties_read_the_info_table(runtime):
    from hsapy.agent import Agent, _Info

    properties = [name for name, value in vars(Agent).items() if isinstance(value, _Info)]
    assert {"uuid", "node", "queues_max", "compute_unit_count"} <= set(properties)
    gpu, cpu = runtime.gpu_agents[0], runtime.cpu_agents[0]
    for name in properties:
        assert getattr(gpu, name) == gpu.info[name], name
    assert gpu.uuid.startswith("GPU-") and cpu.wavefront_size == 0  # GPU-only: the default


@pytest.mark.parametrize("wait_state", [WaitState.BLOCKED, WaitState.ACTIVE])
def test_wait_wakes_when_another_thread_stores(runtime, wait_state):
    import threading

    with runtime.create_signal(1) as signal:
        timer = threading.Timer(0.05, signal.subtract, args=(1,))
        timer.start()
        try:
            assert signal.wait(Condition.LT, 1, timeout=10.0, wait_state=wait_state) == 0
        finally:
            timer.join()
