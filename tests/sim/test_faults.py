"""Faults end as errors, never as hangs or crashes.

Every case ends with a typed hsapy exception on the Python side and, when a queue failed, the
queue reported as errored (``queue.error`` set, ``queue.check()`` raising); the process stays
healthy and another queue still computes a vector add exactly. Cases: random bytes in a ring,
out-of-bounds accesses, endless loops (the dispatch watchdog), division by zero and
unimplemented instructions, queues destroyed with packets in flight, signals destroyed while
waited on, and Ctrl-C during a wait (in a subprocess).
"""
from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import _fault_kernels as fk
import numpy as np
import pytest

import hsapy
from hsapy import toolchain
from hsapy.errors import (
    ClosedError,
    HSAError,
    HsapyValueError,
    InvalidPacketError,
    MemoryFaultError,
    QueueError,
    WaitTimeoutError,
)
from hsapy.sim.execution import DEFAULT_WATCHDOG_S, resolve_watchdog

pytestmark = fk.needs_assembler

WATCHDOG_S = 1.0            # this module's runtime: endless loops stop after a second
PACKET_INVALID = 1
PACKET_KERNEL_DISPATCH = 2
PACKET_BARRIER_AND = 3
SYSTEM_FENCES = (2 << 9) | (2 << 11)
INTERNAL_ERROR = "internal simulator error"


@pytest.fixture(scope="module")
def rt():
    with hsapy.Runtime(backend="sim", watchdog_s=WATCHDOG_S) as runtime:
        yield runtime


@pytest.fixture(scope="module")
def vector_add(rt):
    from hsapy.asm import kernels

    return {agent.name: rt.load(kernels.build("vector_add", agent.name), agent)
            .kernel("vector_add") for agent in rt.gpu_agents}


def assert_other_queue_works(rt, vector_add, agent) -> None:
    """A fresh queue on ``agent`` still computes a + b exactly."""
    n = 1000
    a = np.arange(n, dtype=np.float32)
    b = np.arange(n, dtype=np.float32) * 3
    bufs = [rt.system_pool.allocate(4 * n) for _ in range(3)]
    bufs[0].copy_from(a)
    bufs[1].copy_from(b)
    with agent.create_queue(size=64) as queue:
        vector_add[agent.name].launch(queue, [bufs[0], bufs[1], bufs[2], n], n, 256)
    assert np.array_equal(bufs[2].numpy(np.float32)[:n], a + b)
    for buf in bufs:
        buf.close()


def queue_threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("hsapy-sim-queue-")}


def wait_for_outcome(queue, index: int, timeout: float = 10.0) -> str:
    """'completed' once the read index passes ``index``, 'error' once the queue reports one,
    'pending' when neither happens within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if queue.error is not None:
            return "error"
        if queue.load_read_index() > index:
            return "completed"
        time.sleep(0.002)
    return "pending"


# --- a. random bytes in a ring --------------------------------------------------------------------

def _random_packets(rng: np.random.Generator, kernel_object: int, signal_handle: int):
    """(label, 64 bytes) cases: raw noise, every header type over noise, and dispatches whose
    kernel object is real but whose other fields are noise."""
    cases = []
    for i in range(12):
        cases.append(("noise", rng.bytes(64)))
    for packet_type in (0, 2, 3, 4, 5, 6, 7, 0x41, 0xFF):
        for i in range(2):
            body = bytearray(rng.bytes(64))
            body[0] = packet_type
            cases.append((f"type {packet_type}", bytes(body)))
    for i in range(6):
        body = bytearray(rng.bytes(64))
        body[0] = PACKET_KERNEL_DISPATCH
        struct.pack_into("<Q", body, 32, kernel_object)
        if i % 2:   # small sane geometry so that some of them reach the interpreter
            struct.pack_into("<HHHHHI", body, 2, 1, 64, 1, 1, 0, 64)
            struct.pack_into("<II", body, 16, 1, 1)
            struct.pack_into("<II", body, 24, 0, 0)
        cases.append(("dispatch noise", bytes(body)))
    for i in range(3):   # barrier-AND with no dependencies and a real completion signal
        body = bytearray(64)
        body[0] = PACKET_BARRIER_AND
        struct.pack_into("<Q", body, 56, signal_handle)
        cases.append(("empty barrier", bytes(body)))
    return cases


def test_random_ring_bytes_end_in_a_queue_error_or_completion(rt, vector_add):
    agent = fk.agent_of(rt, "gfx942")
    rng = np.random.default_rng(11)
    done = rt.create_signal(1)
    kernel_object = vector_add["gfx942"].kernel_object
    outcomes: dict[str, int] = {}
    threads_before = queue_threads()
    for label, raw in _random_packets(rng, kernel_object, done.handle):
        queue = agent.create_queue(size=64)
        # a raw slot write: body first, header|setup word last (hsapy.Queue.write)
        index = queue.reserve(1)
        queue.write(index, int.from_bytes(raw[:4], "little"), raw[4:])
        queue.ring_doorbell(index)
        header_type = raw[0]
        outcome = wait_for_outcome(queue, index, timeout=0.3 if header_type == 1 else 10.0)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if header_type == PACKET_INVALID:
            assert outcome == "pending", label      # an INVALID header is never consumed
        else:
            assert outcome in ("completed", "error"), f"{label}: {raw.hex()} hung"
        if outcome == "error":
            with pytest.raises(HSAError) as raised:
                queue.check()
            assert INTERNAL_ERROR not in str(raised.value), raised.value
            if header_type != PACKET_KERNEL_DISPATCH or label == "type 2":
                assert isinstance(raised.value, InvalidPacketError), (label, raised.value)
        start = time.monotonic()
        queue.close()
        assert time.monotonic() - start < 2.0
    assert outcomes.get("error", 0) > 20 and outcomes.get("completed", 0) >= 3, outcomes
    assert queue_threads() == threads_before      # every processor thread has ended
    assert_other_queue_works(rt, vector_add, agent)


# --- b. out-of-bounds accesses --------------------------------------------------------------------

@pytest.mark.parametrize("target", fk.TARGETS)
@pytest.mark.parametrize("where", ["unmapped", "past the end"])
def test_out_of_bounds_load_is_a_memory_fault_naming_the_address(rt, vector_add, target, where):
    agent = fk.agent_of(rt, target)
    kernel = fk.load(rt, agent, "load_a_store_b", fk.LOAD_A_STORE_B)
    out = rt.system_pool.allocate(4096)
    address = 0x1000 if where == "unmapped" else out.address + 4096
    queue = agent.create_queue(size=64)
    start = time.monotonic()
    with pytest.raises(MemoryFaultError) as raised:
        kernel.launch(queue, [address, out.address, 0], 1, 1)
    elapsed = time.monotonic() - start
    assert raised.value.status == 43                          # HSA_STATUS_ERROR_MEMORY_FAULT
    assert f"{address:#x}" in str(raised.value)
    assert "global_load" in str(raised.value)
    assert queue.error is not None and queue.error[0] == 43
    with pytest.raises(MemoryFaultError):
        queue.check()                                         # stays errored
    assert elapsed < 5.0
    queue.close()
    assert_other_queue_works(rt, vector_add, agent)


@pytest.mark.parametrize("target", fk.TARGETS)
def test_out_of_bounds_store_is_reported_as_a_write(rt, target):
    agent = fk.agent_of(rt, target)
    kernel = fk.load(rt, agent, "store_c_at_a", fk.STORE_C_AT_A)
    out = rt.system_pool.allocate(4096)
    queue = agent.create_queue(size=64)
    with pytest.raises(MemoryFaultError) as raised:
        kernel.launch(queue, [out.address + 4096, 0, 7], 1, 1)
    assert f"{out.address + 4096:#x}" in str(raised.value)
    assert "write of 4 byte" in str(raised.value)
    queue.close()


def test_memory_fault_reaches_the_system_event_handler(rt):
    agent = fk.agent_of(rt, "gfx942")
    kernel = fk.load(rt, agent, "load_a_store_b", fk.LOAD_A_STORE_B)
    ffi, lib = rt.ffi, rt.lib
    seen: list[int] = []

    @ffi.callback("hsa_status_t(const hsa_amd_event_t *, void *)")
    def handler(event, data):
        seen.append(int(event.memory_fault.virtual_address))
        return 0

    assert lib.hsa_amd_register_system_event_handler(handler, ffi.NULL) == 0
    with agent.create_queue(size=64) as queue, pytest.raises(MemoryFaultError):
        kernel.launch(queue, [0x2000, 0x3000, 0], 1, 1)
    assert seen == [0x2000]


# --- c. the dispatch watchdog ---------------------------------------------------------------------

@pytest.mark.parametrize("target", fk.TARGETS)
def test_endless_loop_is_stopped_by_the_watchdog(rt, vector_add, target):
    agent = fk.agent_of(rt, target)
    kernel = fk.load(rt, agent, "spin", fk.SPIN)
    queue = agent.create_queue(size=64)
    start = time.monotonic()
    with pytest.raises(QueueError) as raised:
        kernel.launch(queue, [0, 0, 0], 64, 64, timeout=30)
    elapsed = time.monotonic() - start
    message = str(raised.value)
    assert raised.value.status == 0x1016                      # HSA_STATUS_ERROR_EXCEPTION
    assert "watchdog" in message and "spin" in message and f"{WATCHDOG_S:g} s" in message
    assert "watchdog_s" in message and "HSAPY_SIM_WATCHDOG" in message
    assert WATCHDOG_S <= elapsed < WATCHDOG_S + 5.0
    assert queue.error[0] == 0x1016
    queue.close()
    assert_other_queue_works(rt, vector_add, agent)


@pytest.mark.parametrize("value, env, expected", [
    (None, None, DEFAULT_WATCHDOG_S),
    (None, "2.5", 2.5),
    (None, "0", None),
    (None, "off", None),
    (7, "2.5", 7.0),          # the argument wins over the environment
    (0, None, None),
])
def test_watchdog_limit_comes_from_the_argument_the_environment_or_the_default(
        monkeypatch, value, env, expected):
    if env is None:
        monkeypatch.delenv("HSAPY_SIM_WATCHDOG", raising=False)
    else:
        monkeypatch.setenv("HSAPY_SIM_WATCHDOG", env)
    assert resolve_watchdog(value) == expected


@pytest.mark.parametrize("bad", [-1, "soon", float("nan")])
def test_bad_watchdog_limit_is_refused_when_the_runtime_opens(bad):
    with pytest.raises(HsapyValueError, match="watchdog"):
        hsapy.Runtime(backend="sim", watchdog_s=bad)


# --- d. division by zero and unimplemented instructions -------------------------------------------

# v_rcp_f32 / v_rcp_iflag_f32 of +0 and -0, conversions of +-inf and NaN to integers, and the
# integer sequence LLVM emits for a 32-bit unsigned divide, all with a zero divisor. The
# expected values are the ISA's (AMD Instinct MI300 ISA guide, "VOP1": V_RCP_F32 of +-0 is +-inf;
# V_CVT_U32_F32 / V_CVT_I32_F32 clamp to the integer range and give 0 for NaN).
RCP_AND_CONVERT = """
s_mov_b32 s10, 0
s_mov_b32 s11, 0x80000000
v_rcp_f32 v1, s10
v_rcp_f32 v2, s11
v_rcp_iflag_f32 v3, s10
v_cvt_u32_f32 v4, v1
v_cvt_i32_f32 v5, v2
v_cvt_u32_f32 v6, v2
v_mov_b32 v0, 0x7fc00000
v_cvt_i32_f32 v7, v0
v_mov_b32 v0, 0
{gstore} v0, v1, s[4:5]
{gstore} v0, v2, s[4:5] offset:4
{gstore} v0, v3, s[4:5] offset:8
{gstore} v0, v4, s[4:5] offset:12
{gstore} v0, v5, s[4:5] offset:16
{gstore} v0, v6, s[4:5] offset:20
{gstore} v0, v7, s[4:5] offset:24
"""

RCP_EXPECTED = [0x7F800000, 0xFF800000, 0x7F800000, 0xFFFFFFFF, 0x80000000, 0, 0]


@pytest.mark.parametrize("target", fk.TARGETS)
def test_reciprocal_of_zero_and_saturating_conversions_follow_the_isa(rt, target):
    agent = fk.agent_of(rt, target)
    kernel = fk.load(rt, agent, "rcp_zero", RCP_AND_CONVERT)
    out = rt.system_pool.allocate(4096)
    with agent.create_queue(size=64) as queue:
        kernel.launch(queue, [out.address, 0, 0], 1, 1)
    assert out.numpy(np.uint32)[:7].tolist() == RCP_EXPECTED


def _integer_division_kernel(target: str) -> bytes:
    """llvmlite: out[4i..4i+3] = a/b, a%b (unsigned), a/b, a%b (signed) for i < n."""
    from hsapy.asm.dsl import GLOBAL_PTR, I32, I64, KernelBuilder

    params = [("a", GLOBAL_PTR), ("b", GLOBAL_PTR), ("out", GLOBAL_PTR), ("n", I32)]
    kb = KernelBuilder("divide", params, target=target)
    i = kb.global_id()
    with kb.if_then(kb.b.icmp_unsigned("<", i, kb.arg("n"))):
        a = kb.b.load(kb.element_ptr(kb.arg("a"), i, I32), typ=I32, align=4)
        b = kb.b.load(kb.element_ptr(kb.arg("b"), i, I32), typ=I32, align=4)
        base = kb.b.mul(kb.b.zext(i, I64), I64(4))
        results = (kb.b.udiv(a, b), kb.b.urem(a, b), kb.b.sdiv(a, b), kb.b.srem(a, b))
        for k, value in enumerate(results):
            slot = kb.b.add(base, I64(k))
            kb.b.store(value, kb.element_ptr(kb.arg("out"), slot, I32), align=4)
    return toolchain.build_ir(kb.finish(), target)


def _llvm_udiv32(x: int, y: int) -> tuple[int, int]:
    """What LLVM's AMDGPU expansion of a 32-bit unsigned divide computes (AMDGPUCodeGenPrepare
    expandDivRem32), evaluated with the hardware's semantics: rcp(+0) = +inf and the float ->
    u32 conversion saturates, so the estimate for y = 0 is 0xffffffff and the two correction
    steps each add one."""
    m32 = 0xFFFFFFFF
    if y:
        return x // y, x % y
    z = m32                                   # cvt_u32(rcp(0) * 0x4f7ffffe) saturates
    q = (x * z) >> 32                         # mul_hi(x, z)
    r = x                                     # x - q * 0
    for _ in range(2):                        # r >= y always holds for y = 0
        q, r = (q + 1) & m32, r
    return q, r


def test_integer_division_by_zero_gives_the_hardware_value(rt):
    agent = fk.agent_of(rt, "gfx942")
    kernel = rt.load(_integer_division_kernel("gfx942"), agent).kernel("divide")
    a = np.array([7, 0, 1, 0xFFFFFFFF, 100, 0x80000000, 5, 9], np.uint32)
    b = np.array([0, 0, 0, 0, 7, 0xFFFFFFFF, 0, 3], np.uint32)
    n = a.size
    bufs = [rt.system_pool.allocate(64 * n) for _ in range(3)]
    bufs[0].copy_from(a)
    bufs[1].copy_from(b)
    with agent.create_queue(size=64) as queue:
        kernel.launch(queue, [bufs[0], bufs[1], bufs[2], n], n, 64)
    got = bufs[2].numpy(np.uint32)[: 4 * n].reshape(n, 4)
    for lane in range(n):
        x, y = int(a[lane]), int(b[lane])
        q, r = _llvm_udiv32(x, y)
        assert (int(got[lane, 0]), int(got[lane, 1])) == (q, r), (x, y, got[lane])
        if y:   # signed results where C defines them
            sx, sy = np.int32(a[lane]), np.int32(b[lane])
            if not (sx == np.iinfo(np.int32).min and sy == -1):
                assert np.int32(got[lane, 2].view(np.int32)) == int(np.fix(int(sx) / int(sy)))


UNIMPLEMENTED = {
    "gfx942": ("unimplemented_op", fk.UNIMPLEMENTED_OP, "s_setvskip"),
    "gfx1201": ("unimplemented_op", fk.UNIMPLEMENTED_OP, "cannot decode gfx1201"),
}


@pytest.mark.parametrize("target", fk.TARGETS)
def test_unimplemented_instruction_stops_the_queue_naming_it(rt, vector_add, target):
    agent = fk.agent_of(rt, target)
    name, body, named = UNIMPLEMENTED[target]
    kernel = fk.load(rt, agent, name, body)
    out = rt.system_pool.allocate(4096)
    queue = agent.create_queue(size=64)
    with pytest.raises(QueueError) as raised:
        kernel.launch(queue, [out.address, out.address, 0], 1, 1)
    assert raised.value.status == 42                          # HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION
    assert "not implemented for " + target in str(raised.value)
    assert named in str(raised.value)
    queue.close()
    assert_other_queue_works(rt, vector_add, agent)


# --- e. a queue destroyed with packets in flight --------------------------------------------------

def _barrier_and(dep, completion) -> bytes:
    return struct.pack("<I5QQQ", 0, dep.handle, 0, 0, 0, 0, 0, completion.handle)


def test_destroying_a_queue_blocked_on_a_barrier_returns_promptly(rt, vector_add):
    agent = fk.agent_of(rt, "gfx942")
    never, first, second = (rt.create_signal(1) for _ in range(3))
    queue = agent.create_queue(size=64)
    name = f"hsapy-sim-queue-{queue.id}"
    for done in (first, second):
        index = queue.reserve(1)
        queue.write(index, PACKET_BARRIER_AND | SYSTEM_FENCES, _barrier_and(never, done))
        queue.ring_doorbell(index)
    time.sleep(0.1)
    assert name in queue_threads()
    start = time.monotonic()
    queue.close()
    assert time.monotonic() - start < 1.0
    assert name not in queue_threads()
    start = time.monotonic()
    with pytest.raises(HsapyValueError, match="closed"):
        first.wait(timeout=10.0, abort=queue.check)           # the dispatch path's wait
    assert time.monotonic() - start < 1.0
    with pytest.raises(WaitTimeoutError):
        second.wait(timeout=0.2)                              # a bare wait times out
    assert first.load() == 1 and second.load() == 1
    assert_other_queue_works(rt, vector_add, agent)


@pytest.mark.parametrize("target", fk.TARGETS)
def test_destroying_a_queue_cancels_a_running_kernel(rt, vector_add, target):
    agent = fk.agent_of(rt, target)
    kernel = fk.load(rt, agent, "spin", fk.SPIN)
    queue = agent.create_queue(size=64)
    name = f"hsapy-sim-queue-{queue.id}"
    result = kernel.launch(queue, [0, 0, 0], 64, 64, wait=False)
    time.sleep(0.1)                                           # the kernel is spinning
    start = time.monotonic()
    queue.close()
    assert time.monotonic() - start < 1.0                     # not the watchdog's 1 s
    assert name not in queue_threads()
    assert queue.error is None                                # cancelled, not failed
    with pytest.raises(HsapyValueError, match="closed"):
        result.wait(timeout=10.0)
    assert_other_queue_works(rt, vector_add, agent)


# --- f. signals destroyed while waited on ---------------------------------------------------------

def test_destroying_a_signal_wakes_its_waiter_with_an_error(rt):
    sig = rt.create_signal(1)
    caught: list[BaseException] = []
    finished = threading.Event()

    def waiter() -> None:
        try:
            sig.wait(timeout=10.0)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            caught.append(exc)
        finished.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.1)
    start = time.monotonic()
    sig.close()
    assert finished.wait(2.0), "the waiter is still blocked"
    assert time.monotonic() - start < 1.0
    thread.join(1.0)
    assert len(caught) == 1 and isinstance(caught[0], ClosedError)
    assert caught[0].closed_by == "Signal.close()" and "cannot end" in str(caught[0])


def test_waiting_on_a_closed_signal_raises_at_once(rt):
    sig = rt.create_signal(0)
    handle = sig.handle
    sig.close()
    with pytest.raises(ClosedError, match=f"signal {handle:#x} is closed"):
        sig.wait(timeout=10.0)


# --- g. Ctrl-C during a wait ----------------------------------------------------------------------

_INTERRUPTED_WAITS = textwrap.dedent("""
    import os, signal, sys, threading, time
    import numpy as np
    import hsapy
    sys.path.insert(0, {tests!r})
    import _fault_kernels as fk
    from hsapy.asm import kernels

    def interrupted(label, wait):
        # SIGINT 0.3 s into wait(); prints how long the KeyboardInterrupt took after it
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        start = time.monotonic()
        try:
            wait(timeout=30)
        except KeyboardInterrupt:
            print(label, round(time.monotonic() - start - 0.3, 3))

    with hsapy.Runtime(backend="sim", targets=["gfx942"], watchdog_s=0) as rt:
        agent = rt.gpu_agents[0]
        sig = rt.create_signal(1)
        interrupted("signal-wait", sig.wait)
        spin = fk.load(rt, agent, "spin", fk.SPIN)
        queue = agent.create_queue(size=64)
        result = spin.launch(queue, [0, 0, 0], 64, 64, wait=False)
        interrupted("dispatch-wait", result.wait)
        queue.close()
        add = rt.load(kernels.build("vector_add", "gfx942"), agent).kernel("vector_add")
        n = 512
        bufs = [rt.system_pool.allocate(4 * n) for _ in range(3)]
        bufs[0].copy_from(np.ones(n, np.float32))
        bufs[1].copy_from(np.full(n, 2, np.float32))
        with agent.create_queue(size=64) as q2:
            add.launch(q2, [bufs[0], bufs[1], bufs[2], n], n, 256)
        print("usable", bool((bufs[2].numpy(np.float32)[:n] == 3).all()))
""")


def test_ctrl_c_interrupts_waits_promptly_and_the_runtime_stays_usable(tmp_path):
    script = tmp_path / "interrupted.py"
    script.write_text(_INTERRUPTED_WAITS.format(tests=str(Path(__file__).parent)))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.split("\n") if line)
    assert float(lines["signal-wait"]) < 1.0
    assert float(lines["dispatch-wait"]) < 1.0
    assert lines["usable"] == "True"


def test_ctrl_c_in_the_cli_exits_with_130():
    env = dict(os.environ, HSAPY_BACKEND="sim", HSAPY_SIM_TARGETS="gfx942")
    proc = subprocess.Popen([sys.executable, "-m", "hsapy", "run", "--all", "--backend", "sim",
                             "--target", "gfx942", "--repeat", "1000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(3.0)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert time.monotonic() - sent < 30


@pytest.mark.parametrize("bad", ["four", "0", "-2", "1.5"])
def test_bad_thread_count_is_refused_when_the_runtime_opens(monkeypatch, bad):
    monkeypatch.setenv("HSAPY_SIM_THREADS", bad)
    with pytest.raises(HsapyValueError, match="HSAPY_SIM_THREADS") as raised:
        hsapy.Runtime(backend="sim")
    assert repr(bad) in str(raised.value) and ">= 1" in str(raised.value)


def test_thread_count_comes_from_the_environment_or_the_capped_default(monkeypatch):
    pytest.importorskip("llvmlite")
    import os

    from hsapy.sim.isa.jit.executor import DEFAULT_THREADS_MAX, PYTHON_THREADS_MAX, thread_count

    monkeypatch.setenv("HSAPY_SIM_THREADS", "7")
    assert thread_count() == 7 and thread_count(python=True) == min(7, PYTHON_THREADS_MAX)
    monkeypatch.setenv("HSAPY_SIM_THREADS", "2")
    assert thread_count() == 2 and thread_count(python=True) == min(2, PYTHON_THREADS_MAX)
    monkeypatch.delenv("HSAPY_SIM_THREADS")
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert thread_count() == max(1, min(usable or 1, DEFAULT_THREADS_MAX))
    assert thread_count(python=True) == max(1, min(usable or 1, PYTHON_THREADS_MAX))
