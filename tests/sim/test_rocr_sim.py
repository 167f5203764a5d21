"""Backend rocr-sim: the real, unmodified libhsa-runtime64 (ROCr 5.2.3) over the simulated KFD
thunk (hsapy/sim/thunk, docs/rocr-over-simulated-thunk.md).

What the backend-parametrised tests do not show: that it is ROCr answering (not hsapy.sim), that
ROCr's own blit kernels run on the ISA interpreter, that ROCr's profiling path converts the
simulated GPU clock with hsaKmtGetClockCounters, that a fault reaches the queue's error callback
through ROCr's own handler, hsapy.hip on top, and how the thunk refuses what it cannot serve.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import _fault_kernels as fk
import numpy as np
import pytest

from hsapy.asm import kernels
from hsapy.errors import HSAError, HsapyValueError

pytestmark = pytest.mark.usefixtures("rocr_sim_available")

N = 1000


def _device():
    from hsapy.sim.thunk import kfd

    device = kfd.attached()
    assert device is not None and device.is_open
    return device


def _vector_add(rt):
    agent = rt.gpu_agents[0]
    return rt.load(kernels.build("vector_add", agent.target), agent).kernel("vector_add")


def _inputs(agent):
    a = np.arange(N, dtype=np.float32)
    b = np.full(N, 0.5, np.float32)
    buffers = [agent.device_pool.allocate(4 * N) for _ in range(3)]
    buffers[0].copy_from(a)
    buffers[1].copy_from(b)
    return a + b, buffers


def test_the_runtime_is_rocr_and_reports_the_simulated_gfx90a(rocr_sim_runtime):
    rt = rocr_sim_runtime
    from hsapy.sim import SimLib

    assert not isinstance(rt.lib, SimLib)          # the real library's functions, via cffi
    assert rt.runs_rocr and rt.is_simulated
    (gpu,) = rt.gpu_agents
    assert gpu.target == "gfx90a"
    assert gpu.isa_names == ["amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"]   # built by ROCr from
    assert gpu.compute_unit_count == 104                                  # the node properties
    assert rt.timestamp_frequency == 1_000_000_000  # ROCr's system clock, not hsapy.sim's


def test_hsapy_info_shows_rocrs_view_of_the_simulated_agent():
    result = subprocess.run([sys.executable, "-m", "hsapy", "info", "--backend", "rocr-sim",
                             "--json"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    info = json.loads(result.stdout)
    assert info["backend"] == "rocr-sim" and info["simulated"] is True
    gpu = next(agent for agent in info["agents"] if agent["device_type"] == "GPU")
    assert gpu["product_name"] == "AMD Instinct MI210" and gpu["chip_id"] == 0x740F
    segments = sorted(pool["segment"] for pool in gpu["memory_pools"])
    assert segments == ["global", "group"]


def test_dispatch_paths_compute_on_rocr_over_the_simulated_thunk(rocr_sim_runtime):
    rt = rocr_sim_runtime
    agent = rt.gpu_agents[0]
    kernel = _vector_add(rt)
    expected, (a, b, out) = _inputs(agent)
    with agent.create_queue(size=64) as queue:
        kernel.launch(queue, [a, b, out, N], grid=N, workgroup=256)
        assert np.array_equal(out.copy_to(dtype=np.float32), expected)
        out.fill(0)
        prepared = kernel.prepare(queue, grid=N, workgroup=256)
        prepared(a, b, out, N).wait()
        assert np.array_equal(out.copy_to(dtype=np.float32), expected)
        out.fill(0)
        prepared.batch([(a, b, out, N)] * 3).wait()
        assert np.array_equal(out.copy_to(dtype=np.float32), expected)


def test_the_compiled_fast_path_runs_over_rocr_too(rocr_sim_runtime):
    # ROCr's signals are amd_signal_t and its write-index add is called without libffi: the
    # compiled publish, submit and batch (hsapy._publish_native, hsapy._batch_native) serve
    # there as on the simulator
    import inspect

    from hsapy import _native

    if _native.disabled() is not None:
        pytest.skip(f"compiled builtins are off: {_native.disabled()}")
    rt = rocr_sim_runtime
    agent = rt.gpu_agents[0]
    kernel = _vector_add(rt)
    expected, (a, b, out) = _inputs(agent)
    with agent.create_queue(size=64) as queue:
        prepared = kernel.prepare(queue, grid=N, workgroup=256)
        for _ in range(3):
            prepared.batch([(a, b, out, N)] * 5).wait()
        assert inspect.isbuiltin(prepared.batch)
        assert inspect.isbuiltin(prepared.publish) and inspect.isbuiltin(prepared.submit)
        out.fill(0)
        prepared.publish(a, b, out, N)
        prepared.submit(a, b, out, N)
        prepared.batch([(a, b, out, N)] * 4).wait()
        assert np.array_equal(out.copy_to(dtype=np.float32), expected)


def test_async_copies_run_rocrs_blit_kernels_on_the_interpreter(rocr_sim_runtime):
    rt = rocr_sim_runtime
    agent = rt.gpu_agents[0]
    device = _device()
    before = sum(queue.dispatched for queue in device.queues.values())
    data = np.arange(4096, dtype=np.uint32)
    with agent.device_pool.allocate(data.nbytes) as dst:
        dst.copy_from(data)                         # staging buffer -> device: a blit kernel
        back = dst.copy_to(dtype=np.uint32)
    assert np.array_equal(back, data)
    # no hsapy queue exists: every dispatch was one of ROCr's own kernels
    assert sum(queue.dispatched for queue in device.queues.values()) >= before + 2


def test_profiling_times_come_through_rocrs_clock_conversion(rocr_sim_runtime):
    rt = rocr_sim_runtime
    agent = rt.gpu_agents[0]
    kernel = _vector_add(rt)
    _, (a, b, out) = _inputs(agent)
    with agent.create_queue(size=64) as queue:
        queue.enable_profiling()
        before = rt.timestamp()
        result = kernel.launch(queue, [a, b, out, N], grid=N, workgroup=256)
        after = rt.timestamp()
    # ROCr converts the simulated GPU ticks to its system clock with hsaKmtGetClockCounters
    assert before <= result.start < result.end <= after
    assert result.duration_us > 0


def test_a_kernel_fault_reaches_the_queue_error_callback_through_rocr(rocr_sim_runtime):
    rt = rocr_sim_runtime
    agent = rt.gpu_agents[0]
    from hsapy import toolchain

    # gfx90a spells these like gfx942; it has no architected flat scratch (that directive goes)
    code = fk.source("load_a", fk.LOAD_A_STORE_B, "gfx942")
    code = code.replace("\t\t.amdhsa_enable_private_segment 0\n", "")
    kernel = rt.load(toolchain.assemble(code, "gfx90a"), agent).kernel("load_a")
    out = rt.system_pool.allocate(4096)
    with agent.create_queue(size=64) as queue:
        with pytest.raises(HSAError) as raised:
            kernel.launch(queue, [0x1000, out.address, 0], 1, 1)
        # the simulated command processor wrote the hardware's memory-violation code into
        # queue_inactive_signal; ROCr's handler mapped it and called the callback
        assert raised.value.status == 0x29         # HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION
        assert queue.error is not None and queue.error[0] == 0x29
    assert any("0x1000" in message for message in _device().errors)
    with agent.create_queue(size=64) as queue:     # another queue still computes
        kernel2 = _vector_add(rt)
        expected, (a, b, c) = _inputs(agent)
        kernel2.launch(queue, [a, b, c, N], grid=N, workgroup=256)
        assert np.array_equal(c.copy_to(dtype=np.float32), expected)


def test_hip_on_top_of_rocr_over_the_simulated_thunk(rocr_sim_runtime):
    from hsapy.hip import HipRuntime, hipMemcpyKind

    with HipRuntime(rocr_sim_runtime) as hip:
        assert hip.getDeviceProperties(0).gcnArchName.startswith("gfx90a")
        module = hip.moduleLoadData(kernels.build("vector_add", "gfx90a"))
        function = hip.moduleGetFunction(module, "vector_add")
        a = np.arange(N, dtype=np.float32)
        d_a, d_b, d_c = (hip.malloc(4 * N) for _ in range(3))
        hip.memcpy(d_a, a)
        hip.memcpy(d_b, a)
        stream = hip.streamCreate()
        hip.launchKernelGGL(function, (N + 255) // 256, 256, 0, stream, d_a, d_b, d_c, N)
        result = np.empty(N, np.float32)
        hip.memcpyAsync(result, d_c, 4 * N, hipMemcpyKind.hipMemcpyDeviceToHost, stream)
        hip.streamSynchronize(stream)
        assert np.array_equal(result, 2 * a)


def test_rocr_sim_simulates_a_target_the_installed_rocr_knows():
    from hsapy.runtime import Runtime

    with pytest.raises(HsapyValueError, match="gfx90a"):
        Runtime(backend="rocr-sim", targets=["gfx942"])


def test_a_process_that_loaded_the_real_thunk_first_is_refused_with_the_reason():
    script = textwrap.dedent("""
        import cffi
        cffi.FFI().dlopen("libhsa-runtime64.so.1")      # binds ROCr to the real thunk
        from hsapy.runtime import Runtime
        from hsapy.sim.thunk import ThunkLoadError
        try:
            Runtime(backend="rocr-sim")
        except ThunkLoadError as exc:
            print("refused:", exc)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "refused:" in result.stdout and "real KFD thunk" in result.stdout


def test_rocr_sim_opens_after_the_process_used_capsules_and_dlpack():
    # cffi's embedding start-up aborts the process when PyCapsule's type version tag is set,
    # which any attribute lookup on a capsule does (a DLPack export, repr of a capsule).
    script = textwrap.dedent("""
        import numpy as np
        from hsapy.runtime import Runtime
        with Runtime(backend="sim") as sim:
            buffer = sim.system_pool.allocate(64)
            view = np.from_dlpack(buffer)
            print(repr(buffer.__dlpack__()), view.shape)
            del view
        with Runtime(backend="rocr-sim") as rt:
            print("agents:", [agent.name for agent in rt.gpu_agents])
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "agents: ['gfx90a']" in result.stdout


def test_the_thunk_build_names_what_is_missing(monkeypatch, tmp_path):
    from hsapy.sim.thunk import library as build

    monkeypatch.setenv("HSAPY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build, "_header_path", lambda: None)
    with pytest.raises(build.ThunkBuildError, match="libhsakmt-dev"):
        build.build()


def test_an_unwritable_cache_builds_the_thunk_in_the_process_own_directory(monkeypatch,
                                                                          tmp_path):
    from hsapy.sim.thunk import library as build
    from hsapy.toolchain import cache

    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache directory would be")   # mkdir fails, even as root
    private = tmp_path / "private"
    private.mkdir()
    monkeypatch.setenv("HSAPY_CACHE_DIR", str(blocked))
    monkeypatch.setattr(cache, "private_dir", lambda: private)
    path = build.build()
    assert path.is_relative_to(private)
    assert path.read_bytes()[:4] == b"\x7fELF"


def test_backend_rocr_is_refused_while_rocr_runs_over_the_simulated_thunk(rocr_sim_runtime):
    from hsapy.errors import LibraryLoadError
    from hsapy.runtime import Runtime

    with pytest.raises(LibraryLoadError, match="simulated KFD thunk"):
        Runtime(backend="rocr")


def test_an_event_set_wakes_every_waiter_and_stays_set_only_for_none(rocr_sim_runtime,
                                                                    monkeypatch):
    """KFD semantics (kfd_events.c): ROCr waits on one auto-reset event from several threads (a
    queue's destructor and its async-handler thread); one set must wake them all."""
    import threading

    from hsapy.sim.thunk import kfd

    # Waits sleep whole, so that both waiters are surely asleep when the event is set.
    monkeypatch.setattr(kfd, "KFD_WAIT_SLICE_MS", 60_000)
    device = _device()
    ffi = device.ffi
    out = ffi.new("HsaEvent **")
    descriptor = ffi.new("HsaEventDescriptor *")
    assert device.hsaKmtCreateEvent(descriptor, False, False, out) == 0
    event = out[0]
    success, timeout = device.lib.HSAKMT_STATUS_SUCCESS, device.lib.HSAKMT_STATUS_WAIT_TIMEOUT
    results = []
    waiters = [threading.Thread(target=lambda: results.append(device.hsaKmtWaitOnEvent(event, 5000)))
               for _ in range(2)]
    for thread in waiters:
        thread.start()
    while sum(e.waiters for e in device._events.values()) < 2:
        threading.Event().wait(0.01)
    device.hsaKmtSetEvent(event)
    for thread in waiters:
        thread.join(5)
    assert results == [success, success]
    assert device.hsaKmtWaitOnEvent(event, 50) == timeout      # not left set: both were woken
    device.hsaKmtSetEvent(event)                                # nobody waiting: stays set ...
    assert device.hsaKmtWaitOnEvent(event, 50) == success      # ... for the next wait
    assert device.hsaKmtWaitOnEvent(event, 50) == timeout      # which consumed it
    assert device.hsaKmtDestroyEvent(event) == 0


@pytest.mark.parametrize("milliseconds", [0xFFFFFFFE, 0xFFFFFFFF])
def test_a_wait_after_another_waiter_consumed_the_set_still_returns(rocr_sim_runtime,
                                                                    milliseconds):
    """The wake-up the KFD loses: an auto-reset event set while nobody sleeps stays set, and the
    next wait from ANY thread consumes it. ROCr 5.2's queue destructor reads its signal, the
    async-handler thread stores to it (the set) and goes back to sleep on the same event (it is
    shared by every queue's inactive signal) before the destructor sleeps: the destructor must
    still come back (0xFFFFFFFE ms is what ROCr asks for), to re-read the signal."""
    import threading
    import time

    from hsapy.sim.thunk import kfd

    device = _device()
    ffi = device.ffi
    out = ffi.new("HsaEvent **")
    assert device.hsaKmtCreateEvent(ffi.new("HsaEventDescriptor *"), False, False, out) == 0
    event = out[0]
    success, timeout = device.lib.HSAKMT_STATUS_SUCCESS, device.lib.HSAKMT_STATUS_WAIT_TIMEOUT
    device.hsaKmtSetEvent(event)                       # the handler's store: nobody asleep
    events = ffi.new("HsaEvent *[1]", [event])
    assert device.hsaKmtWaitOnMultipleEvents(events, 1, False, milliseconds) == success
    results = []                                       # ^ the async thread consumed the set

    def destructor():
        start = time.monotonic()
        results.append((device.hsaKmtWaitOnEvent(event, milliseconds), time.monotonic() - start))

    waiter = threading.Thread(target=destructor, daemon=True)
    waiter.start()
    waiter.join(10)
    try:
        assert not waiter.is_alive(), "the wait never returned: the lost wake-up hangs ROCr"
        [(status, seconds)] = results
        assert status == timeout                       # nothing set it: an early return
        assert seconds < kfd.KFD_WAIT_SLICE_MS / 1e3 + 2
    finally:
        device.hsaKmtSetEvent(event)                   # frees a waiter left asleep
        waiter.join(5)
        assert device.hsaKmtDestroyEvent(event) == 0


def test_destroying_a_queue_survives_the_lost_wake_up_through_rocr():
    """The same race through ROCr 5.2.3 itself, made certain by delays in the simulated thunk:
    the async-handler thread is held (0.3 s) after the wake-up for the new queue's handler
    registration, so the destructor's store sets nothing and it goes to sleep (held 0.6 s
    before it enters the KFD wait); meanwhile the handler stores -1 (a set with nobody asleep)
    and the async thread's next wait, on the utility queue's signal (the same event), consumes
    it. Without a bound on KFD waits, hsa_queue_destroy never returns."""
    script = textwrap.dedent("""
        import threading, time
        from hsapy.runtime import Runtime
        from hsapy.sim.thunk import kfd

        with Runtime(backend="rocr-sim") as rt:
            agent = rt.gpu_agents[0]
            device = kfd.attached()
            main = threading.main_thread()
            hold = {"async": False, "main": False}
            wait_one, wait_many = device.hsaKmtWaitOnEvent, device.hsaKmtWaitOnMultipleEvents

            def wait_many_held(*args):
                status = wait_many(*args)
                if hold["async"] and threading.current_thread() is not main:
                    hold["async"] = False
                    time.sleep(0.3)
                return status

            def wait_one_held(*args):
                if hold["main"] and threading.current_thread() is main:
                    hold["main"] = False
                    time.sleep(0.6)
                return wait_one(*args)

            device.hsaKmtWaitOnMultipleEvents = wait_many_held
            device.hsaKmtWaitOnEvent = wait_one_held
            # The first queue makes ROCr's utility queue, and the async thread now waits
            # through wait_many_held.
            agent.create_queue(size=agent.queue_min_size).close()
            time.sleep(0.1)
            hold["async"] = True
            queue = agent.create_queue(size=agent.queue_min_size)
            hold["main"] = True
            queue.close()
            print("destroyed", hold, flush=True)
    """)
    try:
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("hsa_queue_destroy hung: the wake-up for its inactive signal was lost")
    assert result.returncode == 0, result.stderr[-2000:]
    # Both holds were taken, so the race was set up as described.
    assert "destroyed {'async': False, 'main': False}" in result.stdout


def test_a_process_that_exits_with_a_rocr_sim_runtime_open_exits_cleanly():
    script = textwrap.dedent("""
        import sys
        from hsapy.runtime import Runtime
        rt = Runtime(backend="rocr-sim")
        queue = rt.gpu_agents[0].create_queue(size=64)
        sys.exit(3)                  # neither closed: ROCr must still be shut down in order
    """)
    for _ in range(3):
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 3, result.stderr[-2000:]


def test_locked_host_memory_is_registered_with_the_device_and_copied_from(rocr_sim_runtime):
    """hsa_amd_memory_lock (not in hsapy's cdef: declared here) registers a user pointer
    (hsaKmtRegisterMemoryWithFlags): the range becomes device-visible memory that ROCr's blit
    kernel reads on the interpreter."""
    import cffi

    rt = rocr_sim_runtime
    agent = rt.gpu_agents[0]
    ffi = rt.ffi
    extra = cffi.FFI()
    extra.cdef("int hsa_amd_memory_lock(void *, size_t, void *, int, void **);"
               "int hsa_amd_memory_unlock(void *);")
    rocr = extra.dlopen("libhsa-runtime64.so.1")      # the library already loaded
    host = np.arange(8192, dtype=np.uint32)
    host_ptr = extra.cast("void *", host.ctypes.data)
    agent_ptr = extra.new("void **")
    assert rocr.hsa_amd_memory_lock(host_ptr, host.nbytes, extra.NULL, 0, agent_ptr) == 0
    assert _device().memory.find(host.ctypes.data) is not None
    with agent.device_pool.allocate(host.nbytes) as dst, rt.create_signal(1) as done:
        source = ffi.cast("void *", int(extra.cast("uintptr_t", agent_ptr[0])))
        assert rt.lib.hsa_amd_memory_async_copy(
            ffi.cast("void *", dst.address), {"handle": agent.handle}, source,
            {"handle": agent.handle}, host.nbytes, 0, ffi.NULL, done.cdata) == 0
        done.wait(timeout=10.0)
        assert np.array_equal(dst.copy_to(dtype=np.uint32), host)
    assert rocr.hsa_amd_memory_unlock(host_ptr) == 0
    assert _device().memory.find(host.ctypes.data) is None
