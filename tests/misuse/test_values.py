"""Values of the wrong kind for every parameter of a public call (a sweep of None, str, bytes,
float, complex, containers, bools, numpy scalars and arrays, ints past 64 bits, nan and inf):
each is refused with a typed hsapy error naming the parameter, before anything reaches a
queue -- never a raw TypeError/ValueError/OverflowError from numpy, struct or enum, and never a
value read as its truth value or its float. One runtime for the whole module: these calls change
nothing, which each test checks."""
from __future__ import annotations

import numpy as np
import pytest
from _misuse import N

from hsapy import aql
from hsapy.asm import kernels
from hsapy.dispatch import DispatchConfigError, Graph
from hsapy.errors import HsapyTypeError, HsapyValueError
from hsapy.runtime import Runtime

T, V, D = HsapyTypeError, HsapyValueError, DispatchConfigError
BARRIER = aql.barrier_and([])
ARRAY = np.array([1, 2])           # several elements: no int, no bool, no number of seconds


@pytest.fixture(scope="module")
def ctx():
    with Runtime(backend="sim", targets=["gfx942"]) as rt:
        agent = rt.gpu()
        vadd = rt.load(kernels.build("vector_add", "gfx942"), agent).kernel("vector_add")
        queue = agent.create_queue(64)
        bufs = [rt.system_pool.allocate(4 * N) for _ in range(3)]
        yield rt, agent, vadd, queue, bufs


# (name, call(rt, agent, vadd, queue, bufs), error, what the message names)
CASES = [
    # an int parameter given a numpy array of several elements
    ("create_queue size", lambda r, a, k, q, b: a.create_queue(ARRAY), T, "size"),
    ("create_signal", lambda r, a, k, q, b: r.create_signal(ARRAY), T, "signal value"),
    ("signal store", lambda r, a, k, q, b: r.create_signal(1).store(ARRAY), T, "signal value"),
    ("reserve count", lambda r, a, k, q, b: q.reserve(ARRAY), T, "count"),
    ("slot_address", lambda r, a, k, q, b: q.slot_address(ARRAY), T, "index"),
    ("ring_doorbell array", lambda r, a, k, q, b: q.ring_doorbell(ARRAY), T, "index"),
    # a doorbell is a signal: its value is an int64
    ("ring_doorbell 2**63", lambda r, a, k, q, b: q.ring_doorbell(2**63), V, "index"),
    ("publish_batch None", lambda r, a, k, q, b: q.publish_batch(None), T, "list of packets"),
    ("publish_batch int", lambda r, a, k, q, b: q.publish_batch(5), T, "list of packets"),
    # timeouts: a real number of seconds, finite and not astronomically large
    ("wait timeout complex", lambda r, a, k, q, b: r.create_signal(0).wait(
        timeout=np.complex64(1)), T, "timeout"),
    ("wait timeout numpy bool", lambda r, a, k, q, b: r.create_signal(0).wait(
        timeout=np.True_), T, "timeout"),
    ("wait timeout 2**64", lambda r, a, k, q, b: r.create_signal(1).wait(timeout=2**64), V,
     "timeout"),
    ("copy_to timeout numpy bool", lambda r, a, k, q, b: b[0].copy_to(timeout=np.False_), T,
     "timeout"),
    ("reserve timeout huge", lambda r, a, k, q, b: q.reserve(1, timeout=10**30), V, "timeout"),
    ("launch timeout complex", lambda r, a, k, q, b: k.launch(q, [*b, N], N, 64,
                                                            timeout=np.complex64(1)), T, "timeout"),
    # the barrier bit: a bool (or 0/1), never a float, None, a string or an array
    ("prepare barrier float", lambda r, a, k, q, b: k.prepare(q, N, 64, barrier=np.float32(1)),
     D, "barrier"),
    ("prepare barrier array", lambda r, a, k, q, b: k.prepare(q, N, 64, barrier=ARRAY), D,
     "barrier"),
    ("launch barrier 1.0", lambda r, a, k, q, b: k.launch(q, [*b, N], N, 64, barrier=1.0), D,
     "barrier"),
    ("graph barrier float", lambda r, a, k, q, b: Graph(q).add_dispatch(k, [*b, N], N, 64,
                                                                       barrier=np.float32(0)), D,
     "barrier"),
    ("kernel_dispatch barrier None", lambda r, a, k, q, b: aql.kernel_dispatch(
        0, 64, 64, barrier=None), T, "barrier"),
    ("barrier_and barrier str", lambda r, a, k, q, b: aql.barrier_and([], barrier="no"), T,
     "barrier"),
    # enumerations: a member, its name or its int -- a float, complex or bool equal to one is not
    ("fence scope float", lambda r, a, k, q, b: aql.barrier_and([], acquire=2.0), V,
     "fence scope"),
    ("fence scope numpy bool", lambda r, a, k, q, b: k.prepare(q, N, 64, release=np.True_), V,
     "fence scope"),
    ("wait condition float", lambda r, a, k, q, b: r.create_signal(1).wait(
        np.float32(2), timeout=0.1), V, "Condition"),
    ("wait wait_state complex", lambda r, a, k, q, b: r.create_signal(1).wait(
        timeout=0.1, wait_state=0j), V, "WaitState"),
    ("barrier_value condition float", lambda r, a, k, q, b: aql.barrier_value(0, 1, 1.0), V,
     "condition"),
    # packet fields
    ("encode_header type 2**64", lambda r, a, k, q, b: aql.encode_header(2**64 + 2), V,
     "packet_type"),
    ("encode_header type str", lambda r, a, k, q, b: aql.encode_header("2"), T, "packet_type"),
    ("header_setup_word -1", lambda r, a, k, q, b: aql.header_setup_word(-1), V, "header"),
    ("header_setup_word setup 17 bits", lambda r, a, k, q, b: aql.header_setup_word(2, 1 << 16),
     V, "setup"),
    ("kernel_dispatch dims str", lambda r, a, k, q, b: aql.kernel_dispatch(0, 64, 64, dims="2"),
     T, "dims"),
    ("kernel_dispatch dims numpy", lambda r, a, k, q, b: aql.kernel_dispatch(
        0, 64, 64, dims=np.int8(-1)), V, "dims"),
    ("bytes of a Packet of None", lambda r, a, k, q, b: bytes(aql.Packet(None, BARRIER.body)), T,
     "word"),
    ("split numpy scalar", lambda r, a, k, q, b: aql.split(np.int8(-1)), V, "64 bytes"),
    ("parse numpy scalar", lambda r, a, k, q, b: aql.parse(np.uint64(2**64 - 1)), V, "64 bytes"),
    # runtime options
    ("Runtime backend 0", lambda r, a, k, q, b: Runtime(backend=0), V, "backend"),
    ("Runtime backend array", lambda r, a, k, q, b: Runtime(backend=ARRAY), V, "backend"),
    ("Runtime watchdog True", lambda r, a, k, q, b: Runtime(backend="sim", watchdog_s=True), V,
     "watchdog"),
    ("Runtime watchdog complex", lambda r, a, k, q, b: Runtime(backend="sim", watchdog_s=np.complex64(1)), V,
     "watchdog"),
    ("gpu target array", lambda r, a, k, q, b: r.gpu(ARRAY), T, "target"),
    # the DLPack protocol's keyword arguments
    ("dlpack max_version int", lambda r, a, k, q, b: b[0].__dlpack__(max_version=1), T,
     "max_version"),
    ("dlpack max_version str", lambda r, a, k, q, b: b[0].__dlpack__(max_version="10"), T,
     "max_version"),
    ("dlpack dl_device empty", lambda r, a, k, q, b: b[0].__dlpack__(dl_device=[]), T,
     "dl_device"),
    ("dlpack dl_device floats", lambda r, a, k, q, b: b[0].view().__dlpack__(
        dl_device=(1.0, 0.0)), T, "dl_device"),
    ("dlpack copy str", lambda r, a, k, q, b: b[0].__dlpack__(copy="no"), T, "copy"),
]


@pytest.mark.parametrize("name, call, error, names", CASES, ids=[c[0] for c in CASES])
def test_a_value_of_the_wrong_kind_is_refused_by_name(ctx, name, call, error, names):
    queue = ctx[3]
    written = queue.load_write_index()
    with pytest.raises(error, match=names):
        call(*ctx)
    assert queue.load_write_index() == written and queue.error is None


# -- refused by mistake, or taken the wrong way -------------------------------------------

def test_parse_takes_a_packet_as_documented():
    packet = aql.barrier_and([7], completion_signal=9)
    assert aql.parse(packet) == aql.parse(bytes(packet))
    assert aql.parse(packet).dep_signal[0] == 7


def test_a_barrier_of_one_as_a_float_does_not_reuse_a_barrier_launch(ctx):
    # the launch cache keyed barrier=1.0 as barrier=True: the second launch ran prepared
    rt, _agent, vadd, queue, bufs = ctx
    vadd.launch(queue, [*bufs, N], N, 64, barrier=True, timeout=10)
    written = queue.load_write_index()
    with pytest.raises(DispatchConfigError, match="barrier"):
        vadd.launch(queue, [*bufs, N], N, 64, barrier=np.float64(1.0), timeout=10)
    assert queue.load_write_index() == written


def test_an_array_grid_after_an_int_grid_launches(ctx):
    # the launch fast path compared the array with the last call's grid (an ambiguous truth)
    rt, _agent, vadd, queue, bufs = ctx
    bufs[0].copy_from(np.arange(N, dtype=np.float32))
    bufs[1].copy_from(np.ones(N, np.float32))
    vadd.launch(queue, [*bufs, N], N, 64, timeout=10.0)
    bufs[2].fill(0)
    vadd.launch(queue, [*bufs, N], np.array([N, 1]), np.array([64, 1]), timeout=10.0)
    assert np.array_equal(bufs[2].copy_to(dtype=np.float32), np.arange(N) + 1.0)


@pytest.mark.parametrize("timeout", [np.float32(0.5), np.int64(1), np.array(0.5)])
def test_numpy_numbers_are_timeouts(ctx, timeout):
    assert ctx[0].create_signal(0).wait(timeout=timeout) == 0
