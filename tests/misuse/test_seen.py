"""Misuse that was seen to crash hsapy, jam a queue or give a silently wrong answer: one test
per case (each failed before lifetimes were checked). Cases that used to kill the interpreter
run in a subprocess (``isolated``)."""
from __future__ import annotations

import gc
import math
import threading
import time

import numpy as np
import pytest
from _misuse import N, gate, isolated

from hsapy import aql, errors, toolchain
from hsapy._lifetime import drain
from hsapy.errors import ClosedError, HsapyTypeError, HsapyValueError
from hsapy.kernarg import KernelArgumentError, KernelArgumentValueError
from hsapy.runtime import Runtime

# -- segfaults ------------------------------------------------------------------------------


@pytest.mark.parametrize("access", ["read", "write"])
def test_a_numpy_view_outlives_runtime_close(access):
    done = isolated(f"""
        rt, agent, exe, vadd, q = setup()
        buffer = rt.system_pool.allocate(1 << 20)
        view = buffer.numpy(np.uint32)
        view[:] = 7
        rt.close()
        if {access!r} == "write":
            view[:] = 9
        print(int(view.sum()), int(view[0]))
        del view
        gc.collect()
        from hsapy._lifetime import drain
        drain()
        print("lib open", rt.lib.is_open)       # shut down once the last view went
    """)
    assert not done.crashed, done.stderr
    value = 9 if access == "write" else 7
    assert done.lines() == [f"{value * (1 << 18)} {value}", "lib open False"]


def test_a_ring_view_outlives_queue_close():
    done = isolated("""
        rt, agent, exe, vadd, q = setup(queue_size=8192)
        ring = q.ring
        q.close()
        print(ring.shape, int(ring[:, 0].sum()))
        try:
            q.ring
        except errors.ClosedError as exc:
            print(type(exc).__name__, exc.closed_by)
    """)
    assert not done.crashed, done.stderr
    assert done.lines() == ["(8192, 64) 8192", "ClosedError Queue.close()"]   # INVALID headers


@pytest.mark.parametrize("call", ["launch", "prepared", "submit", "publish", "batch", "write"])
def test_every_publishing_call_on_a_closed_large_queue_raises(call):
    done = isolated(f"""
        rt, agent, exe, vadd, q = setup(queue_size=8192)
        b = [rt.system_pool.allocate(4 * N) for _ in range(3)]
        p = vadd.prepare(q, N, 64)
        p.submit(*b, N), p.publish(*b, N), p(*b, N)      # every way warmed up
        q.close()
        calls = {{
            "launch": lambda: vadd.launch(q, [*b, N], grid=N, workgroup=64),
            "prepared": lambda: p(*b, N),
            "submit": lambda: p.submit(*b, N),
            "publish": lambda: p.publish(*b, N),
            "batch": lambda: p.batch([(*b, N)] * 3),
            "write": lambda: q.write(0, aql.barrier_and([]).word, aql.barrier_and([]).body),
        }}
        try:
            calls[{call!r}]()
        except errors.ClosedError as exc:
            print("ClosedError", exc.what)
    """)
    assert not done.crashed, done.stderr
    assert done.lines() == ["ClosedError queue 0 on gfx942"]


@pytest.mark.parametrize("call", ["submit", "publish"])
def test_prepared_calls_after_runtime_close_raise_instead_of_returning_index_0(call):
    done = isolated(f"""
        rt, agent, exe, vadd, q = setup()
        b = [rt.system_pool.allocate(4 * N) for _ in range(3)]
        p = vadd.prepare(q, N, 64)
        p.submit(*b, N)
        rt.close()
        try:
            print(getattr(p, {call!r})(*b, N))
        except errors.ClosedError as exc:
            print("ClosedError", exc.closed_by)
    """)
    assert not done.crashed, done.stderr
    assert done.lines() == ["ClosedError Runtime.close()"]


# -- someone else's memory ------------------------------------------------------------------

def test_a_closed_buffer_is_refused_as_a_kernel_argument(rt, vadd, queue, bufs):
    a, b, out = bufs
    out.close()
    victim = rt.system_pool.allocate(4 * N)       # may take the closed buffer's address
    victim.copy_from(np.full(N, -1, np.float32))
    with pytest.raises(ClosedError, match="buffer .* is closed"):
        vadd.launch(queue, [a, b, out, N], grid=N, workgroup=64)
    prepared = vadd.prepare(queue, N, 64)
    for call in (prepared, prepared.submit, prepared.publish):
        with pytest.raises(ClosedError):
            call(a, b, out, N)
    with pytest.raises(ClosedError):
        prepared.batch([(a, b, out, N)])
    assert queue.load_write_index() == 0          # nothing reached the ring
    assert (victim.copy_to(dtype=np.float32) == -1).all()


def test_a_buffer_of_another_runtime_is_refused_as_a_kernel_argument(rt, vadd, queue, bufs):
    a, b, out = bufs
    with Runtime(backend="sim", targets=["gfx942"]) as other:
        theirs = other.system_pool.allocate(4 * N)
        prepared = vadd.prepare(queue, N, 64)
        calls = [lambda arg: vadd.launch(queue, [a, b, arg, N], grid=N, workgroup=64),
                 lambda arg: prepared(a, b, arg, N), lambda arg: prepared.submit(a, b, arg, N),
                 lambda arg: prepared.publish(a, b, arg, N),
                 lambda arg: prepared.batch([(a, b, out, N), (a, b, arg, N)])]
        for call in calls:
            for arg in (theirs, theirs.view(np.float32)):
                with pytest.raises(KernelArgumentValueError,
                                   match=r"argument 2 \(out\) .* of another Runtime"):
                    call(arg)
        assert queue.load_write_index() == 0      # nothing reached the ring
        vadd.launch(queue, [a, b, out, N], grid=N, workgroup=64)    # its own memory still goes
        assert (out.copy_to(dtype=np.float32) == np.arange(N) + 1).all()
        # an address given as an int is not checked; the fault then names the other runtime
        with pytest.raises(errors.MemoryFaultError, match="memory of another simulated runtime"):
            vadd.launch(queue, [a, b, theirs.address, N], grid=N, workgroup=64)


def test_a_layout_made_without_a_runtime_packs_any_runtimes_buffer(rt, vadd, bufs):
    from hsapy.kernarg import KernargLayout

    layout = KernargLayout.from_kernel(vadd.info)           # as hsapy inspect makes it
    with Runtime(backend="sim", targets=["gfx942"]) as other:
        theirs = other.system_pool.allocate(4 * N)
        packed = layout.pack([bufs[0], bufs[1], theirs, N], grid=N, workgroup=64)
        assert int.from_bytes(packed[16:24], "little") == theirs.address


def test_a_fault_on_unallocated_memory_names_no_other_runtime(rt, vadd, queue, bufs):
    a, b, _ = bufs
    with Runtime(backend="sim", targets=["gfx942"]):
        with pytest.raises(errors.MemoryFaultError) as caught:
            vadd.launch(queue, [a, b, 1 << 40, N], grid=N, workgroup=64)
    assert "another" not in str(caught.value)


def test_a_buffer_collected_while_a_dispatch_writes_it_stays_allocated(rt, vadd, queue, bufs):
    a, b, out = bufs
    held = gate(rt, queue)                        # the dispatch waits behind a barrier
    result = vadd.launch(queue, [a, b, out, N], grid=N, workgroup=64, wait=False)
    address = out.address
    del out, bufs[2]
    gc.collect()
    drain()                                       # the free is parked, not performed
    assert rt.lib.memory.find(address) is not None
    victims = [rt.system_pool.allocate(4 * N) for _ in range(4)]
    for victim in victims:
        victim.copy_from(np.full(N, -1, np.float32))
    held.store(0)
    result.wait(timeout=10)                       # no memory fault, no other buffer written
    assert all((v.copy_to(dtype=np.float32) == -1).all() for v in victims)
    deadline = time.monotonic() + 5
    while rt.lib.memory.find(address) is not None and time.monotonic() < deadline:
        time.sleep(0.01)                          # freed once the dispatch completed
    assert rt.lib.memory.find(address) is None


# -- a jammed queue -------------------------------------------------------------------------

@pytest.mark.parametrize("count, error", [(1.0, HsapyTypeError), (-1, HsapyValueError),
                                          (0, HsapyValueError), (65, HsapyValueError)])
def test_a_refused_reservation_leaves_the_queue_working(rt, vadd, queue, bufs, count, error):
    with pytest.raises(error, match="Queue.reserve"):
        queue.reserve(count)
    assert queue.load_write_index() == 0
    start = time.monotonic()
    vadd.launch(queue, [*bufs, N], grid=N, workgroup=64, timeout=5)
    assert time.monotonic() - start < 2
    assert queue.error is None


# -- signals --------------------------------------------------------------------------------

@pytest.mark.parametrize("value, error", [(2**70, HsapyValueError), (-2**64, HsapyValueError),
                                          (1.9, HsapyTypeError), (True, HsapyTypeError),
                                          ("1", HsapyTypeError)])
def test_signal_values_are_int64_or_refused(rt, value, error):
    signal = rt.create_signal(5)
    for operation in ("store", "add", "subtract", "exchange"):
        with pytest.raises(error, match=f"Signal.{operation}"):
            getattr(signal, operation)(value)
    assert signal.load() == 5


def test_a_store_through_a_closed_signal_never_reaches_the_slot_reused(rt):
    stale = rt.create_signal(5)
    handle = stale.handle
    stale.close()
    live = [rt.create_signal(0) for _ in range(2048)]   # one of them reuses the slot
    assert any(s.handle == handle for s in live)
    with pytest.raises(ClosedError, match=f"signal {handle:#x} is closed"):
        stale.store(42)
    with pytest.raises(ClosedError):
        stale.load()
    assert all(s.load() == 0 for s in live)


def test_a_dispatch_cancelled_by_queue_close_is_not_done(rt, vadd, queue, bufs):
    gate(rt, queue)                                   # never opened
    result = vadd.launch(queue, [*bufs, N], grid=N, workgroup=64, wait=False)
    queue.close()
    with pytest.raises(ClosedError, match="never will"):
        result.is_done
    with pytest.raises(ClosedError):
        result.wait(timeout=1)


# -- stale results --------------------------------------------------------------------------

def test_a_completed_result_stays_done_after_its_slot_is_reused(rt, vadd, queue, bufs):
    prepared = vadd.prepare(queue, N, 64)
    result = prepared(*bufs, N)
    result.wait(timeout=10)
    for _ in range(queue.size + 1):                   # every slot taken again, no doorbell
        prepared.publish(*bufs, N)
    assert result.is_done
    start = time.monotonic()
    result.wait(timeout=5)
    assert time.monotonic() - start < 1


# -- asynchronous copies --------------------------------------------------------------------

def _thread_failures():
    failures: list[BaseException] = []
    previous = threading.excepthook
    threading.excepthook = lambda args: failures.append(args.exc_value)
    return failures, previous


def test_a_copy_whose_source_is_closed_before_it_runs_still_copies(rt, agent):
    failures, previous = _thread_failures()
    try:
        data = np.arange(1 << 14, dtype=np.uint32)
        src, dst = agent.device_pool.allocate(data.nbytes), agent.device_pool.allocate(data.nbytes)
        src.copy_from(data)
        dependency, done = rt.create_signal(1), rt.create_signal(1)
        rt.copy(dst, src, data.nbytes, deps=[dependency], completion=done)
        src.close()                                   # freed once the copy has run
        dependency.store(0)
        done.wait(timeout=5)
        assert np.array_equal(dst.copy_to(dtype=np.uint32), data)
    finally:
        threading.excepthook = previous
    assert failures == []


def test_a_copy_that_faults_reaches_the_waiter_not_stderr(rt, agent, capfd):
    failures, previous = _thread_failures()
    try:
        src, dst = agent.device_pool.allocate(4096), agent.device_pool.allocate(4096)
        dependency, done = rt.create_signal(1), rt.create_signal(1)
        rt.copy(dst, src, 4096, deps=[dependency], completion=done)
        # behind hsapy's back: the runtime frees the source before the copy runs
        assert rt.lib.hsa_amd_memory_pool_free(rt.ffi.cast("void *", src.address)) == 0
        dependency.store(0)
        start = time.monotonic()
        with pytest.raises(errors.MemoryFaultError, match="copy of 4096 bytes"):
            done.wait(timeout=10)
        assert time.monotonic() - start < 2
        assert done.load() == 1                       # it never completed
    finally:
        threading.excepthook = previous
    assert failures == []
    assert "Traceback" not in capfd.readouterr().err


# -- the build cache ------------------------------------------------------------------------

@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HSAPY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _entry(cache):
    (entry,) = [p for p in cache.glob("objects/*/*") if p.is_file()]
    return entry


def _damage(entry, how):
    data = bytearray(entry.read_bytes())
    if how == "truncated":
        entry.write_bytes(bytes(data[:len(data) // 2]))
    else:                                             # a bit flipped in the code
        data[-200] ^= 0x04
        entry.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["truncated", "bit flipped"])
def test_a_bad_cache_entry_is_rebuilt_and_reported(cache, how):
    from hsapy.asm import kernels

    fresh = kernels.build("vector_add", "gfx942")
    _damage(_entry(cache), how)
    events = []
    with toolchain.observe(events.append), pytest.warns(toolchain.CacheWarning, match="rebuild"):
        again = kernels.build("vector_add", "gfx942")
    assert again == fresh
    assert "cache-bad" in [e.kind for e in events]
    assert kernels.build("vector_add", "gfx942") == fresh     # the entry was rewritten


def test_hsapy_build_never_writes_a_truncated_entry(cache, tmp_path):
    from hsapy.cli import main

    first, second = tmp_path / "first.hsaco", tmp_path / "second.hsaco"
    assert main(["build", "asm:vector_add", "--target", "gfx942", "-o", str(first)]) == 0
    _damage(_entry(cache), "truncated")
    with pytest.warns(toolchain.CacheWarning):
        assert main(["build", "asm:vector_add", "--target", "gfx942", "-o", str(second)]) == 0
    assert second.read_bytes() == first.read_bytes()


# -- argument shapes ------------------------------------------------------------------------

@pytest.mark.parametrize("grid", ["256", [256.7], 256.0, True, [True, 2], b"\x01", None])
def test_grid_sizes_are_ints_only(vadd, queue, grid):
    with pytest.raises(HsapyTypeError, match="grid must be an int"):
        vadd.prepare(queue, grid, 64)
    with pytest.raises(HsapyTypeError, match="workgroup must be an int"):
        vadd.prepare(queue, 256, grid)


@pytest.mark.parametrize("n", [True, False, np.bool_(True)])
def test_a_bool_is_not_an_integer_kernel_argument(vadd, queue, bufs, n):
    prepared = vadd.prepare(queue, N, 64)
    for call in (prepared, prepared.submit, prepared.publish):
        with pytest.raises(KernelArgumentError, match=r"argument 3 \(n\).*got bool"):
            call(*bufs, n)
    assert queue.load_write_index() == 0


def test_copy_to_refuses_a_read_only_out(rt):
    buffer = rt.system_pool.allocate(16)
    buffer.fill(0x41414141)
    frozen = np.zeros(16, np.uint8)
    frozen.flags.writeable = False
    constant = b"0123456789abcdef"
    for out in (frozen, np.frombuffer(constant, np.uint8)):
        with pytest.raises(HsapyValueError, match="read-only"):
            buffer.copy_to(out=out)
    assert not frozen.any() and constant == b"0123456789abcdef"


@pytest.mark.parametrize("path", ["/dev/zero", "huge"])
def test_inspect_refuses_what_is_not_a_code_object_file(tmp_path, path):
    if path == "huge":
        path = tmp_path / "huge.hsaco"
        with open(path, "wb") as handle:
            handle.truncate(3 << 30)                  # sparse: no disk used
    done = isolated(f"""
        from hsapy.cli import main
        sys.exit(main(["inspect", {str(path)!r}]))
    """, timeout=60, memory_limit=1 << 31)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "hsapy inspect:" in done.stderr and "Traceback" not in done.stderr
    assert ("not a regular file" if path == "/dev/zero" else "more than any code object") \
        in done.stderr


# -- checked too late -----------------------------------------------------------------------

def test_a_kernel_of_a_closed_executable_is_never_published(rt, executable, vadd, queue, bufs):
    prepared = vadd.prepare(queue, N, 64)
    prepared(*bufs, N).wait(timeout=10)               # every path compiled, slots owned
    prepared.submit(*bufs, N)
    executable.close()
    published = queue.load_write_index()
    for call in (prepared, prepared.submit, prepared.publish):
        with pytest.raises(ClosedError, match="executable .* is closed"):
            call(*bufs, N)
    with pytest.raises(ClosedError):
        prepared.batch([(*bufs, N)])
    with pytest.raises(ClosedError):
        vadd.launch(queue, [*bufs, N], grid=N, workgroup=64)
    assert queue.load_write_index() == published
    queue.check()                                     # the queue did not stop


@pytest.mark.parametrize("timeout", [-1, math.nan, math.inf, "10", None])
def test_a_bad_launch_timeout_is_refused_before_publishing(vadd, queue, bufs, timeout):
    with pytest.raises(HsapyValueError if timeout is None or not isinstance(timeout, str)
                       else HsapyTypeError, match="timeout"):
        vadd.launch(queue, [*bufs, N], grid=N, workgroup=64, timeout=timeout)
    assert queue.load_write_index() == 0


# -- untyped errors where a typed one is promised -------------------------------------------

@pytest.mark.parametrize("name, call, error", [
    ("acquire", lambda rt, a, k, q, b: k.prepare(q, N, 64, acquire="bogus"), HsapyValueError),
    ("release", lambda rt, a, k, q, b: k.prepare(q, N, 64, release=7), HsapyValueError),
    ("nan timeout", lambda rt, a, k, q, b: rt.create_signal(1).wait(timeout=math.nan),
     HsapyValueError),
    ("queue size str", lambda rt, a, k, q, b: a.create_queue("64"), HsapyTypeError),
    ("queue size float", lambda rt, a, k, q, b: a.create_queue(64.0), HsapyTypeError),
    ("queue type", lambda rt, a, k, q, b: a.create_queue(64, type=1), HsapyValueError),
    ("write word", lambda rt, a, k, q, b: q.write(0, -1, bytes(60)), HsapyValueError),
    ("write index", lambda rt, a, k, q, b: q.write(-1, 0, bytes(60)), HsapyValueError),
    ("copy_from None", lambda rt, a, k, q, b: b[0].copy_from(None), HsapyTypeError),
    ("copy_from object", lambda rt, a, k, q, b: b[0].copy_from([object()]), HsapyTypeError),
    ("numpy dtype", lambda rt, a, k, q, b: b[0].numpy("no such dtype"), HsapyTypeError),
    ("publish int", lambda rt, a, k, q, b: q.publish(64), HsapyTypeError),
    ("copy a list", lambda rt, a, k, q, b: rt.copy(b[0], [1, 2], 4), HsapyTypeError),
    ("wait condition", lambda rt, a, k, q, b: rt.create_signal(1).wait(True, 1, timeout=0.1),
     HsapyValueError),
    ("barrier value condition", lambda rt, a, k, q, b: aql.barrier_value(0, 1, "below"),
     HsapyValueError),
])
def test_misuse_raises_the_typed_error_promised(rt, agent, vadd, queue, bufs, name, call, error):
    with pytest.raises(error):
        call(rt, agent, vadd, queue, bufs)
    assert queue.load_write_index() == 0


def test_hip_free_of_none_does_nothing_as_in_hip():
    from hsapy.hip import HipRuntime

    with HipRuntime(backend="sim") as hip:
        hip.free(None)
        hip.hostFree(None)
        assert hip.getLastError() == 0


# -- refused by mistake ---------------------------------------------------------------------

def test_a_graph_records_and_replays_an_aql_packet(rt, vadd, queue, bufs):
    from hsapy.dispatch import Graph

    done = rt.create_signal(2)
    graph = Graph(queue)
    graph.add_dispatch(vadd, [*bufs, N], N, 64)
    packet = aql.barrier_and([], completion_signal=done.handle)
    graph.add_packet(packet)                          # was refused: "not Packet"
    graph.add_packet(bytes(packet))
    graph.launch(timeout=10)
    assert done.wait(value=1, timeout=10) <= 0
    assert queue.error is None


@pytest.mark.parametrize("word", [-1, -(1 << 31), (1 << 32) - 1, np.uint32(7)])
def test_fill_takes_any_32_bit_word_signed_or_unsigned(rt, word):
    buffer = rt.system_pool.allocate(16)
    buffer.fill(word)
    assert (buffer.copy_to(dtype=np.uint32) == int(word) & 0xFFFFFFFF).all()


def test_a_0d_integer_array_is_one_size(vadd, queue, bufs):
    vadd.launch(queue, [*bufs, N], np.array(N), np.array(64, np.int32), timeout=10)
    assert np.array_equal(bufs[2].copy_to(dtype=np.float32), np.arange(N) + 1.0)


@pytest.mark.parametrize("asked, suggested", [("vector_ad", True), ("VECTOR_ADD", True),
                                              ("softmax", False)])
def test_an_unknown_kernel_name_suggests_the_close_ones(executable, asked, suggested):
    from hsapy.codeobject import CodeObjectError

    with pytest.raises(CodeObjectError, match="kernels: vector_add") as caught:
        executable.kernel(asked)
    assert ("did you mean 'vector_add'?" in str(caught.value)) == suggested


def test_a_mangled_kernel_name_is_suggested_for_its_plain_name():
    from hsapy.codeobject.code_object import _suggestions

    names = ["_Z10vector_addPKfS0_Pfi", "_Z6reducePfi"] + [f"k{i}" for i in range(30)]
    text = _suggestions("vector_add", names)
    assert "did you mean '_Z10vector_addPKfS0_Pfi'?" in text
    assert "and 12 more" in text and "k20" not in text


def test_a_numpy_bool_is_a_yes_no_option(rt, queue):
    signal = rt.create_signal(3)
    assert signal.load(relaxed=np.True_) == 3
    signal.store(4, relaxed=np.False_, silent=np.True_)
    assert queue.load_read_index(relaxed=np.True_) == 0
    queue.publish(aql.barrier_and([]), doorbell=np.True_)
    assert signal.load() == 4
