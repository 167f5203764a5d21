"""Values of the wrong kind for every parameter of a public call (a sweep of None, str, bytes,
float, complex, containers, bools, numpy scalars and arrays, ints past 64 bits, nan and inf):
each is refused with a typed hsapy error naming the parameter, before anything reaches a
queue -- never a raw TypeError/ValueError/OverflowError from numpy, struct or enum, and never a
value read as its truth value or its float. One runtime for the whole module: these calls change
nothing, which each test checks."""
from __future__ import annotations

import math

import numpy as np
import pytest
from _misuse import N

from hsapy import aql
from hsapy.asm import kernels
from hsapy.dispatch import DispatchConfigError, Graph
from hsapy.errors import HsapyTypeError, HsapyValueError
from hsapy.kernarg import KernelArgumentError
from hsapy.observers import add_observer, remove_observer
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
    # a view's shape: bytes gave its byte values as extents, True a 1
    ("view shape bytes", lambda r, a, k, q, b: b[0].view(np.float32, b"x"), T, "shape"),
    ("view shape True", lambda r, a, k, q, b: b[0].view(np.float32, True), T, "shape"),
    ("view shape dict", lambda r, a, k, q, b: b[0].view(np.float32, {2: 2}), T, "shape"),
    # packet fields given a bool (struct packs it as 1 or 0)
    ("barrier_and completion True", lambda r, a, k, q, b: aql.barrier_and(
        [], completion_signal=True), T, "packet field"),
    ("kernel_dispatch object False", lambda r, a, k, q, b: aql.kernel_dispatch(False, 64, 64), T,
     "packet field"),
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
    ("dlpack stream str", lambda r, a, k, q, b: b[0].__dlpack__(stream="x"), T, "stream"),
    ("dlpack stream float", lambda r, a, k, q, b: b[0].view().__dlpack__(stream=1.0), T,
     "stream"),
    # no rows: memoryview's raw TypeError ("cannot cast view with zeros in shape")
    ("write_many no rows", lambda r, a, k, q, b: q.write_many(
        0, np.zeros((0, 64), np.uint8), np.zeros(0, np.uint32)), V, "n from 1"),
    ("write_many words 2-d", lambda r, a, k, q, b: q.write_many(
        0, np.zeros((2, 64), np.uint8), np.zeros((2, 1), np.uint32)), V, "1-d uint32"),
    # a 0-d array has __len__ and refuses it (TypeError); a dict of two keys was indexed by 0
    ("dlpack max_version 0-d", lambda r, a, k, q, b: b[0].__dlpack__(max_version=np.array(1)),
     T, "max_version"),
    ("dlpack dl_device dict", lambda r, a, k, q, b: b[0].view().__dlpack__(
        dl_device={"type": 1, "id": 0}), T, "dl_device"),
]


@pytest.mark.parametrize("name, call, error, names", CASES, ids=[c[0] for c in CASES])
def test_a_value_of_the_wrong_kind_is_refused_by_name(ctx, name, call, error, names):
    queue = ctx[3]
    written = queue.load_write_index()
    with pytest.raises(error, match=names):
        call(*ctx)
    assert queue.load_write_index() == written and queue.error is None



# A list of things given as something else that iterates: a 0-d array (it has __iter__ and
# refused iteration with numpy's TypeError), a dict (its keys were taken as the kernel's
# arguments and launched), a set (its order is arbitrary). The shared check refuses each.
ZERO_D = np.array(3)
class _Silent:
    """An observer that does nothing: attached, it sends every dispatch the reference way."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def _observed(call):
    observer = _Silent()
    add_observer(observer)
    try:
        return call()
    finally:
        remove_observer(observer)


LIST_CASES = [
    ("launch args 0-d", lambda r, a, k, q, b: k.launch(q, ZERO_D, N, 64), T),
    ("launch args dict", lambda r, a, k, q, b: k.launch(q, dict.fromkeys([*b, N]), N, 64), T),
    ("launch args set", lambda r, a, k, q, b: k.launch(q, {*b, N}, N, 64), T),
    ("batch 0-d", lambda r, a, k, q, b: k.prepare(q, N, 64).batch(ZERO_D), T),
    ("batch dict", lambda r, a, k, q, b: k.prepare(q, N, 64).batch({(*b, N): 1}), T),
    # one dispatch's argument list inside a batch: the same check, on the fast way (all lists
    # alike, or not) and on the reference way (an observer attached sends every batch there)
    ("batch item dict", lambda r, a, k, q, b: k.prepare(q, N, 64).batch(
        [dict.fromkeys([*b, N])] * 3), KernelArgumentError),
    ("batch items dict", lambda r, a, k, q, b: k.prepare(q, N, 64).batch(
        [(*b, N), dict.fromkeys([*b, N])]), KernelArgumentError),
    ("batch item set", lambda r, a, k, q, b: k.prepare(q, N, 64).batch([{*b, N}]),
     KernelArgumentError),
    ("batch item 0-d", lambda r, a, k, q, b: k.prepare(q, N, 64).batch([ZERO_D]),
     KernelArgumentError),
    ("batch item dict, reference way", lambda r, a, k, q, b: _observed(
        lambda: k.prepare(q, N, 64).batch([dict.fromkeys([*b, N])])), KernelArgumentError),
    ("graph args 0-d", lambda r, a, k, q, b: Graph(q).add_dispatch(k, ZERO_D, N, 64), T),
    ("graph args dict", lambda r, a, k, q, b: Graph(q).add_dispatch(
        k, dict.fromkeys([*b, N]), N, 64), T),
    ("publish_batch 0-d", lambda r, a, k, q, b: q.publish_batch(ZERO_D), T),
    ("publish_batch set", lambda r, a, k, q, b: q.publish_batch({BARRIER}), T),
    ("pack 0-d", lambda r, a, k, q, b: k.layout.pack(ZERO_D, N, 64), KernelArgumentError),
    ("barrier deps 0-d", lambda r, a, k, q, b: aql.barrier_and(ZERO_D), T),
    ("barrier deps dict", lambda r, a, k, q, b: aql.barrier_or({1: 2}), T),
    ("agent_dispatch args 0-d", lambda r, a, k, q, b: aql.agent_dispatch(0, ZERO_D), T),
    ("agent_dispatch args set", lambda r, a, k, q, b: aql.agent_dispatch(0, {1, 2}), T),
]


@pytest.mark.parametrize("name, call, error", LIST_CASES, ids=[c[0] for c in LIST_CASES])
def test_a_list_given_as_a_0d_array_mapping_or_set_is_refused(ctx, name, call, error):
    test_a_value_of_the_wrong_kind_is_refused_by_name(ctx, name, call, error, "list or tuple")


@pytest.mark.parametrize("call, args", [
    ("hipModuleLaunchKernel", lambda h, k: h.moduleLaunchKernel(k, 1, 64, 0, None, ZERO_D)),
    ("hipGraphAddKernelNode", lambda h, k: h.graphAddKernelNode(
        h.graphCreate(), ZERO_D, k, 1, 64, [0, 0, 0, N])),
    ("hipGraphAddKernelNode", lambda h, k: h.graphCreate().addKernelNode(k, 1, 64, {0: 1})),
], ids=["module launch params 0-d", "graph deps 0-d", "graph node args dict"])
def test_a_hip_list_given_as_a_0d_array_or_mapping_is_invalid_value(hip, call, args):
    from hsapy.hip import HipError

    with pytest.raises(HipError) as caught:
        args(*hip)
    assert caught.value.code.name == "hipErrorInvalidValue" and caught.value.call == call



class _Tensor:
    """Another library's array whose data_ptr() reports ``pointer``."""

    def __init__(self, pointer):
        self.pointer = pointer

    def data_ptr(self):
        return self.pointer


# An address another library reports was read with int(): a str of digits or a float was
# taken, and one past 64 bits was wrapped by cffi onto whatever allocation it then named.
@pytest.mark.parametrize("pointer", [
    lambda b: str(b[0].address), lambda b: float(b[0].address), lambda b: b[0].address + 2**64,
    lambda b: None], ids=["str of digits", "float", "past 64 bits", "None"])
def test_a_data_pointer_that_is_no_64_bit_int_is_refused_as_a_kernel_argument(ctx, pointer):
    rt, _agent, vadd, queue, bufs = ctx
    tensor = _Tensor(pointer(bufs))
    written = queue.load_write_index()
    with pytest.raises(KernelArgumentError, match="data pointer its data_ptr"):
        vadd.launch(queue, [tensor, bufs[1], bufs[2], N], N, 64, timeout=10.0)
    assert queue.load_write_index() == written and queue.error is None
    assert vadd.launch(queue, [_Tensor(bufs[0].address), bufs[1], bufs[2], N], N, 64,
                       timeout=10.0).is_done


@pytest.mark.parametrize("build", [
    lambda s: aql.kernel_dispatch(0, 64, 64, completion_signal=s),
    lambda s: aql.barrier_value(0, 1, completion_signal=s),
    lambda s: aql.barrier_and([], completion_signal=s)], ids=["kernel_dispatch",
                                                               "barrier_value", "barrier_and"])
def test_every_packet_builder_takes_a_completion_signal_as_a_signal(ctx, build):
    # kernel_dispatch and barrier_value refused a Signal with "a field does not fit its place
    # in the packet (required argument is not an integer)"; barrier_and took it
    from hsapy.errors import ClosedError

    signal = ctx[0].create_signal(1)
    assert build(signal) == build(signal.handle)
    signal.close()
    with pytest.raises(ClosedError):
        build(signal)

def test_a_generator_or_an_array_still_gives_a_list(ctx):
    rt, _agent, vadd, queue, bufs = ctx
    vadd.launch(queue, (arg for arg in [*bufs, N]), N, 64, timeout=10.0)
    assert aql.agent_dispatch(0, np.array([1, 2])) == aql.agent_dispatch(0, [1, 2])
    assert aql.barrier_and({5}) == aql.barrier_and([5])      # deps have no order

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


# -- entry points outside the runtime objects: code objects, agent info, occupancy, kernarg --

def _vadd_info():
    from hsapy.codeobject import CodeObject

    return CodeObject.from_bytes(kernels.build("vector_add", "gfx942")).kernel("vector_add")


ENTRY_CASES = [
    # bytes(n) of an int would be n zero bytes (bytes(10**9): a gigabyte) and not a code object
    ("from_bytes int", lambda c: c.CodeObject.from_bytes(10**9), T, "bytes of a code object"),
    ("from_bytes str", lambda c: c.CodeObject.from_bytes("a.hsaco"), T, "read_code_object_file"),
    ("bundle_entries None", lambda c: c.bundle_entries(None), T, "bytes of a code object"),
    ("extract_for_target int", lambda c: c.extract_for_target(-1, "gfx942"), T,
     "bytes of a code object"),
    ("is_bundle None", lambda c: c.is_bundle(None), T, "bytes of a code object"),
    ("descriptor from_bytes int", lambda c: c.KernelDescriptor.from_bytes(64), T,
     "bytes of a code object"),
    ("descriptor offset float", lambda c: c.KernelDescriptor.from_bytes(bytes(64), offset=0.0),
     T, "offset"),
    # a path: an int would be opened as a file descriptor
    ("from_file int", lambda c: c.CodeObject.from_file(0), T, "path"),
    ("from_file None", lambda c: c.read_code_object_file(None), T, "path"),
    ("target_family None", lambda c: c.target_family(None), V, "processor name"),
    ("kernel name list", lambda c: c.info_of().kernel(["vector_add"]), T, "kernel name"),
    ("read_vaddr None", lambda c: c.info_of().read_vaddr(None, 4), T, "vaddr"),
    ("read_vaddr size -1", lambda c: c.info_of().read_vaddr(0, -1), V, "size"),
    # agent properties outside AGENT_INFO
    ("query str", lambda c: c.agent.query("HSA_AGENT_INFO_NODE"), T, "InfoField"),
    ("query unknown attribute", lambda c: c.agent.query(c.InfoField("NO_SUCH", "uint32_t")), V,
     "enumerator"),
    ("query unknown C type", lambda c: c.agent.query(c.InfoField("HSA_AGENT_INFO_NODE",
                                                                 "u32")), V, "C value type"),
    ("query pointer C type", lambda c: c.agent.query(c.InfoField("HSA_AGENT_INFO_NODE",
                                                                 "uint32_t *")), V,
     "C value type"),
    ("InfoField None", lambda c: c.InfoField(None, "uint32_t"), T, "two str"),
    # occupancy: counts are ints
    ("occupancy vgprs nan", lambda c: c.occupancy("gfx942", wave_size=64, workgroup_size=64,
                                                  vgprs=math.nan), T, "vgprs"),
    ("occupancy sgprs -1", lambda c: c.occupancy("gfx942", wave_size=64, workgroup_size=64,
                                                 vgprs=8, sgprs=-1), V, "sgprs"),
    ("occupancy workgroup float", lambda c: c.occupancy("gfx942", wave_size=64,
                                                        workgroup_size=64.0, vgprs=8), T,
     "workgroup_size"),
    ("occupancy wgp_mode str", lambda c: c.occupancy("gfx1201", wave_size=32, workgroup_size=64,
                                                     vgprs=8, wgp_mode="no"), T, "wgp_mode"),
    ("kernel_occupancy kernel", lambda c: c.kernel_occupancy("vector_add", "gfx942", 64), T,
     "KernelInfo"),
    ("kernel_occupancy lds str", lambda c: c.kernel_occupancy(_vadd_info(), "gfx942", 64, "0"),
     T, "group_segment_size"),
    # kernarg layouts
    ("pack args None", lambda c: c.vadd.layout.pack(None, N, 64), T, "args"),
    ("pack dynamic_lds nan", lambda c: c.vadd.layout.pack([0, 0, 0, N], N, 64, math.nan), T,
     "dynamic_lds"),
    ("pack queue_ptr -1", lambda c: c.vadd.layout.pack([0, 0, 0, N], N, 64, queue_ptr=-1), V,
     "queue_ptr"),
    ("pack apertures None", lambda c: c.vadd.layout.pack([0, 0, 0, N], N, 64, apertures=None),
     T, "apertures"),
    # a Packet built by hand with fields no slot takes: refused before a slot is reserved
    ("publish Packet word None", lambda c: c.queue.publish(aql.Packet(None, BARRIER.body)), V,
     "32-bit word"),
    ("publish Packet word 2**32", lambda c: c.queue.publish(aql.Packet(1 << 32, BARRIER.body)),
     V, "32-bit word"),
    ("publish_batch Packet body short", lambda c: c.queue.publish_batch(
        [BARRIER, aql.Packet(BARRIER.word, b"")]), V, "exactly 60 bytes"),
]


@pytest.fixture(scope="module")
def entry(ctx):
    from types import SimpleNamespace

    from hsapy import codeobject
    from hsapy.agent import InfoField
    from hsapy.occupancy import kernel_occupancy, occupancy

    parsed = codeobject.CodeObject.from_bytes(kernels.build("vector_add", "gfx942"))
    return SimpleNamespace(
        CodeObject=codeobject.CodeObject, bundle_entries=codeobject.bundle_entries,
        extract_for_target=codeobject.extract_for_target, is_bundle=codeobject.is_bundle,
        KernelDescriptor=codeobject.KernelDescriptor, target_family=codeobject.target_family,
        read_code_object_file=codeobject.read_code_object_file, info_of=lambda: parsed,
        agent=ctx[1], InfoField=InfoField, occupancy=occupancy,
        kernel_occupancy=kernel_occupancy, vadd=ctx[2], queue=ctx[3])


@pytest.mark.parametrize("name, call, error, names", ENTRY_CASES, ids=[c[0] for c in ENTRY_CASES])
def test_an_entry_point_refuses_a_value_of_the_wrong_kind_by_name(entry, name, call, error,
                                                                  names):
    written = entry.queue.load_write_index()
    with pytest.raises(error, match=names):
        call(entry)
    assert entry.queue.load_write_index() == written and entry.queue.error is None


def test_a_missing_code_object_file_is_a_code_object_error_and_an_os_error(tmp_path):
    from hsapy.codeobject import CodeObject, CodeObjectError

    with pytest.raises(CodeObjectError, match="cannot read code object file") as caught:
        CodeObject.from_file(tmp_path / "missing.hsaco")
    assert isinstance(caught.value, OSError)       # what `except OSError` expected before
    assert caught.value.strerror and caught.value.filename == tmp_path / "missing.hsaco"


def test_an_agent_of_a_closed_runtime_is_not_queried():
    from hsapy.agent import InfoField
    from hsapy.errors import ClosedError

    rt = Runtime(backend="sim", targets=["gfx942"])
    agent = rt.gpu()
    rt.close()
    with pytest.raises(ClosedError):
        agent.query(InfoField("HSA_AGENT_INFO_NODE", "uint32_t"))


# -- hsapy.hip: a HipError naming the call, as every HIP call fails ---------------------------

HIP_VALUE_CASES = [
    ("hipGetErrorName", lambda h, k: h.getErrorName("0"), "hipErrorInvalidValue"),
    ("hipDeviceDisablePeerAccess", lambda h, k: h.deviceDisablePeerAccess([0]),
     "hipErrorInvalidDevice"),
    ("hipEventCreate", lambda h, k: h.eventCreate(timing=ARRAY), "hipErrorInvalidValue"),
    ("hipEventCreate", lambda h, k: h.eventCreate(timing="no"), "hipErrorInvalidValue"),
    # (an array compared with each live stream: numpy's ambiguous truth)
    ("hipStreamDestroy", lambda h, k: (h.streamCreate(), h.streamDestroy(ARRAY)),
     "hipErrorInvalidHandle"),
    ("hipMemcpyAsync", lambda h, k: h.memcpyAsync(np.zeros(4), np.zeros(4), stream=ARRAY),
     "hipErrorInvalidHandle"),
    ("hipMemset", lambda h, k: h.memset(h.malloc(16), 1 << 40), "hipErrorInvalidValue"),
    ("hipStreamWaitEvent", lambda h, k: h.streamWaitEvent(None, h.eventCreate(), flags="0"),
     "hipErrorInvalidValue"),
    # nothing to wait for (never recorded) was no reason to take any timeout
    ("hipEventSynchronize", lambda h, k: h.eventSynchronize(h.eventCreate(), -1),
     "hipErrorInvalidValue"),
    ("hipEventSynchronize", lambda h, k: h.eventSynchronize(h.eventCreate(), math.nan),
     "hipErrorInvalidValue"),
    ("hipGraphAddKernelNode", lambda h, k: h.graphCreate().addKernelNode("k", 1, 64, []),
     "hipErrorInvalidDeviceFunction"),
    ("hipGraphAddKernelNode", lambda h, k: h.graphCreate().addKernelNode(k, 1, 64, None),
     "hipErrorInvalidValue"),
    ("hipGraphAddKernelNode", lambda h, k: h.graphCreate().addKernelNode(k, math.inf, 64, []),
     "hipErrorInvalidValue"),
    ("hipGraphAddKernelNode", lambda h, k: h.graphCreate().addKernelNode(k, 1, 64, [], -1),
     "hipErrorInvalidValue"),
    ("hipGraphAddKernelNode", lambda h, k: h.graphCreate().addKernelNode(
        k, 1, 64, [], 0, ["0"]), "hipErrorInvalidValue"),
    # what the graph's first launch would refuse is refused when the node is added
    ("hipGraphAddKernelNode", lambda h, k: h.graphCreate().addKernelNode(
        k, 1 << 40, 64, [0, 0, 0, N]), "hipErrorInvalidConfiguration"),     # grid > 2^32 - 1
    ("hipGraphAddKernelNode", lambda h, k: h.graphCreate().addKernelNode(
        k, 1, (64, 64), [0, 0, 0, N]), "hipErrorInvalidConfiguration"),     # 4096 work-items
    ("hipGraphAddKernelNode", lambda h, k: h.graphCreate().addKernelNode(
        k, 1, 64, [0, 0, 0, N], 1 << 20), "hipErrorInvalidConfiguration"),  # LDS
    ("hipGraphAddKernelNode", lambda h, k: h.graphCreate().addKernelNode(k, 1, 64, [0, 0]),
     "hipErrorInvalidValue"),
    ("hipGraphAddKernelNode", lambda h, k: h.graphCreate().addKernelNode(
        k, 1, 64, ["a", 0, 0, N]), "hipErrorInvalidValue"),
    ("hipGraphAddKernelNode", lambda h, k: h.graphAddKernelNode(
        h.graphCreate(), [], k, 1 << 40, 64, [0, 0, 0, N]), "hipErrorInvalidConfiguration"),
]


@pytest.fixture(scope="module")
def hip():
    from hsapy.hip import HipRuntime

    with HipRuntime(backend="sim") as runtime:
        module = runtime.moduleLoadData(kernels.build("vector_add", "gfx942"))
        yield runtime, runtime.moduleGetFunction(module, "vector_add")


@pytest.mark.parametrize("call_name, call, code", HIP_VALUE_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(HIP_VALUE_CASES)])
def test_a_hip_value_of_the_wrong_kind_is_a_hip_error(hip, call_name, call, code):
    from hsapy.hip import HipError

    with pytest.raises(HipError) as caught:
        call(*hip)
    assert caught.value.code.name == code and caught.value.call == call_name


def test_a_stream_drain_with_a_bad_timeout_publishes_nothing(hip):
    from hsapy.errors import HsapyValueError

    stream = hip[0].streamCreate()
    written = stream.queue.load_write_index()
    with pytest.raises(HsapyValueError, match="timeout"):
        stream.drain(math.inf)
    assert stream.queue.load_write_index() == written


def test_an_unknown_hip_error_code_is_named_unknown_as_in_hip(hip):
    assert hip[0].getErrorName(12345) == "hipErrorUnknown"
    assert hip[0].getErrorName(0) == "hipSuccess"


def test_a_hip_runtime_with_a_trace_option_of_the_wrong_kind_is_refused():
    from hsapy.hip import HipError, HipRuntime

    with pytest.raises(HipError, match="trace"):
        HipRuntime(backend="sim", trace="no")


# -- the hsapy command --------------------------------------------------------------------

@pytest.mark.parametrize("argv, names", [
    (["run", "vector_add", "--repeat", "0"], "--repeat"),
    (["run", "vector_add", "--timeout", "nan"], "--timeout"),
    (["demo", "--suite-budget", "-1"], "--suite-budget"),
    (["trace", "--harvest-timeout", "inf", "--", "x.py"], "--harvest-timeout"),
    (["profile", "--instructions", "-3", "--", "x.py"], "--instructions"),
    (["bench", "launch", "--repeats", "x"], "--repeats"),
])
def test_a_bad_number_option_is_a_usage_error_naming_it(capsys, argv, names):
    from hsapy.cli import main

    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert names in capsys.readouterr().err


def test_a_typed_error_escaping_a_command_is_one_line_not_a_traceback(capsys):
    from hsapy.cli import main

    assert main(["demo", "--backend", "sim", "--target", "gfx1", "--no-suite"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hsapy demo: no GPU agent gfx1") and "Traceback" not in err


# -- closed objects that were still used ------------------------------------------------------

@pytest.mark.parametrize("argument", ["buffer", "view"])
def test_a_graph_whose_argument_buffer_was_closed_is_not_replayed(argument):
    # the recorded kernarg bytes keep the buffer's address: replaying them after its free
    # would write into whatever allocation took that memory
    from hsapy.errors import ClosedError

    with Runtime(backend="sim", targets=["gfx942"]) as rt:
        vadd = rt.load(kernels.build("vector_add", "gfx942")).kernel("vector_add")
        queue = rt.gpu().create_queue(64)
        bufs = [rt.system_pool.allocate(4 * N) for _ in range(3)]
        out = bufs[2] if argument == "buffer" else bufs[2].view(np.float32)
        graph = Graph(queue)
        graph.add_dispatch(vadd, [bufs[0], bufs[1], out, N], N, 64)
        graph.launch(timeout=10)
        written = queue.load_write_index()
        bufs[2].close()
        with pytest.raises(ClosedError, match="buffer"):
            graph.launch(timeout=10)
        assert queue.load_write_index() == written


def test_the_handle_of_a_closed_executable_is_refused():
    from hsapy.errors import ClosedError

    with Runtime(backend="sim", targets=["gfx942"]) as rt:
        executable = rt.load(kernels.build("vector_add", "gfx942"))
        assert executable.handle
        executable.close()
        with pytest.raises(ClosedError):
            executable.handle


@pytest.mark.parametrize("text, says", [
    ("2^x", "cannot read size"),            # int('x') escaped as a ValueError
    ("²", "cannot read size"),              # str.isdigit() holds for it, int() fails
    ("2^99999999", "does not fit"),         # built a list of 10**8 parts first
    ("99999999999999999999", "too large"),  # numpy's "Maximum allowed dimension exceeded"
])
def test_an_operator_size_is_read_or_refused_by_name(text, says):
    from hsapy.operator_model import parse_size
    from hsapy.operators import OPERATORS

    with pytest.raises(HsapyValueError, match=says):
        parse_size(text, OPERATORS["gemm"] if "^" in text else OPERATORS["vector_add"])


# -- the toolchain: refused before any tool runs ------------------------------------------

def _never() -> bytes:
    raise AssertionError("built with a cache option of the wrong kind")


@pytest.mark.parametrize("name, call, error, names", [
    ("assemble bytes", lambda t: t.assemble(b".text"), T, "assembly text"),
    ("assemble None", lambda t: t.assemble(None), T, "assembly text"),
    ("assemble version list", lambda t: t.assemble(".text", code_object_version=[5]), V,
     "code_object_version"),
    ("build_file int", lambda t: t.build_file(0), T, "path"),
    ("build_ir opt_level -1", lambda t: t.build_ir("", opt_level=-1), V, "opt_level"),
    ("build_ir opt_level str", lambda t: t.build_ir("", opt_level="3"), V, "opt_level"),
    ("compile_ir opt_level float", lambda t: t.compile_ir("", opt_level=2.0), V, "opt_level"),
    ("find_tool None", lambda t: t.find_tool(None), T, "tool's name"),
    ("find_tool min_major str", lambda t: t.find_tool("ld.lld", min_major="17"), T,
     "min_major"),
    ("link one object", lambda t: t.link(b"\x7fELF"), T, "list of relocatable objects"),
    ("link str objects", lambda t: t.link(["a.o"]), T, "bytes"),
    # every build's cache option goes through cached_build, before anything is produced
    ("cache str", lambda t: t.cache.cached_build("asm", {}, _never, "no", "x"), T, "cache"),
    # a target ID sets a feature once: both settings were taken (and the code object written)
    ("target xnack+ and xnack-", lambda t: t.BuildTarget.parse("gfx942:xnack+:xnack-"), V,
     "sets xnack more than once"),
    ("target sramecc twice", lambda t: t.assemble(".text", "gfx90a:sramecc+:sramecc+"), V,
     "sets sramecc more than once"),
], ids=lambda value: value if isinstance(value, str) else "")
def test_a_toolchain_entry_point_refuses_a_value_of_the_wrong_kind(tmp_path, monkeypatch, name,
                                                                    call, error, names):
    import hsapy.toolchain.cache
    from hsapy import toolchain

    monkeypatch.setenv("HSAPY_CACHE_DIR", str(tmp_path))
    assert toolchain.cache is hsapy.toolchain.cache
    with pytest.raises(error, match=names):
        call(toolchain)


# -- a jammed queue -------------------------------------------------------------------------

def _jam(rt, queue, bufs, vadd):
    """A queue held by a barrier on a signal at 1, with a dispatch behind it; returns the
    signal (store 0 to let the queue go)."""
    gate = rt.create_signal(1)
    queue.publish(aql.barrier_and([gate.handle]))
    vadd.launch(queue, [*bufs, N], N, 64, wait=False)
    return gate


def test_reservations_refused_one_after_another_leave_the_queue_working(ctx):
    # each refused reservation abandons its slots; the second one's slot, not yet free, was put
    # back at the end of the abandoned list and popped again and again, so no abandoned slot
    # was ever filled and the queue stopped at the first one for good
    from hsapy.queue import QueueFullError

    rt, _agent, vadd, _queue, bufs = ctx
    with rt.gpu().create_queue(64) as queue:
        gate = _jam(rt, queue, bufs, vadd)
        for count in (64, 1):
            with pytest.raises(QueueFullError):
                queue.reserve(count, timeout=0.1)
        gate.store(0)
        assert vadd.launch(queue, [*bufs, N], N, 64, timeout=5).is_done
        assert queue.load_read_index() == queue.load_write_index()


def test_a_graph_launch_on_a_full_queue_waits_its_own_timeout(ctx):
    import time

    from hsapy.queue import QueueFullError

    rt, _agent, vadd, _queue, bufs = ctx
    with rt.gpu().create_queue(64) as queue:
        gate = _jam(rt, queue, bufs, vadd)
        with pytest.raises(QueueFullError):
            queue.reserve(63, timeout=0.1)
        graph = Graph(queue)
        graph.add_dispatch(vadd, [*bufs, N], N, 64)
        start = time.monotonic()
        with pytest.raises(QueueFullError, match="after 0.2 s"):
            graph.launch(timeout=0.2)             # waited the default 10 s for its slots
        assert time.monotonic() - start < 5
        gate.store(0)
