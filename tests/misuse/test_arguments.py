"""Bad arguments to every public object: a typed hsapy error (HsapyTypeError for the wrong kind
of value, HsapyValueError for a value out of range), before anything reaches the runtime or a
ring -- never a Python TypeError/KeyError/AttributeError from deep inside, never a value read
as something else."""
from __future__ import annotations

import math
import types

import numpy as np
import pytest
from _misuse import N

from hsapy import aql
from hsapy.asm import kernels
from hsapy.dispatch import DispatchConfigError, Graph
from hsapy.errors import HsapyError, HsapyTypeError, HsapyValueError
from hsapy.hip import HipError, HipRuntime, hipError_t
from hsapy.kernarg import KernelArgumentError
from hsapy.runtime import Runtime

T, V, D = HsapyTypeError, HsapyValueError, DispatchConfigError
BARRIER = aql.barrier_and([])

# (name, call(rt, agent, vadd, queue, bufs), error)
CASES = [
    # runtime and pools
    ("Runtime backend", lambda r, a, k, q, b: Runtime(backend=5), V),
    ("load agent", lambda r, a, k, q, b: r.load(b"", agent="gfx942"), T),
    ("load code object", lambda r, a, k, q, b: r.load(12345), T),
    ("create_signal float", lambda r, a, k, q, b: r.create_signal(1.5), T),
    ("create_signal huge", lambda r, a, k, q, b: r.create_signal(2**63), V),
    ("allocate str", lambda r, a, k, q, b: r.system_pool.allocate("64"), T),
    ("allocate bool", lambda r, a, k, q, b: r.system_pool.allocate(True), T),
    ("allocate 0", lambda r, a, k, q, b: r.system_pool.allocate(0), V),
    ("allocate huge", lambda r, a, k, q, b: r.system_pool.allocate(2**70), V),
    ("pool access", lambda r, a, k, q, b: r.system_pool.access("gfx942"), T),
    ("copy nbytes", lambda r, a, k, q, b: r.copy(b[0], b[1], -1), V),
    ("copy too much", lambda r, a, k, q, b: r.copy(b[0], b[1], 8 * N), V),
    ("copy deps", lambda r, a, k, q, b: r.copy(b[0], b[1], 4, deps=[5]), T),
    ("copy completion", lambda r, a, k, q, b: r.copy(b[0], b[1], 4, completion=5), T),
    ("copy timeout", lambda r, a, k, q, b: r.copy(b[0], b[1], 4, timeout=-2), V),
    # buffers
    ("numpy shape", lambda r, a, k, q, b: b[0].numpy(np.float32, (7, 7)), V),
    ("numpy shape str", lambda r, a, k, q, b: b[0].numpy(np.float32, "x"), V),
    ("numpy object dtype", lambda r, a, k, q, b: b[0].numpy(object), T),
    ("copy_from str", lambda r, a, k, q, b: b[0].copy_from("text"), T),
    ("copy_from buffer", lambda r, a, k, q, b: b[0].copy_from(b[1]), T),
    ("copy_from too big", lambda r, a, k, q, b: b[0].copy_from(np.zeros(N + 1, np.float32)), V),
    ("copy_to list", lambda r, a, k, q, b: b[0].copy_to(out=[0] * 4), T),
    ("copy_to strided", lambda r, a, k, q, b: b[0].copy_to(out=np.zeros(8, np.uint8)[::2]), V),
    ("copy_to dtype", lambda r, a, k, q, b: b[0].copy_to(dtype="nonsense"), T),
    ("copy_to timeout", lambda r, a, k, q, b: b[0].copy_to(timeout=math.nan), V),
    ("fill bool", lambda r, a, k, q, b: b[0].fill(True), T),
    ("fill float", lambda r, a, k, q, b: b[0].fill(1.5), T),
    ("allow_access str", lambda r, a, k, q, b: b[0].allow_access("gfx942"), T),
    ("allow_access none", lambda r, a, k, q, b: b[0].allow_access([]), V),
    # signals
    ("wait value", lambda r, a, k, q, b: r.create_signal(1).wait(2, 2**64, timeout=1), V),
    ("wait wait_state", lambda r, a, k, q, b: r.create_signal(1).wait(2, 1, 1, wait_state=9), V),
    ("wait abort", lambda r, a, k, q, b: r.create_signal(1).wait(2, 1, 1, abort=5), T),
    ("wait order", lambda r, a, k, q, b: r.create_signal(1).wait(2, 1, 1, order=3), V),
    ("wait timeout str", lambda r, a, k, q, b: r.create_signal(1).wait(timeout="1"), T),
    ("wait timeout inf", lambda r, a, k, q, b: r.create_signal(1).wait(timeout=math.inf), V),
    ("cas value", lambda r, a, k, q, b: r.create_signal(1).cas(1, 0.5), T),
    ("or value", lambda r, a, k, q, b: r.create_signal(1).bitwise_or(2**64), V),
    ("store order", lambda r, a, k, q, b: r.create_signal(1).store(1, order="acquire"), V),
    ("pool release", lambda r, a, k, q, b: r.signal_pool.release(5), T),
    ("pool acquire", lambda r, a, k, q, b: r.signal_pool.acquire(0.5), T),
    # queues
    ("create_queue bool", lambda r, a, k, q, b: a.create_queue(True), T),
    ("create_queue 100", lambda r, a, k, q, b: a.create_queue(100), V),
    ("create_queue private", lambda r, a, k, q, b: a.create_queue(64, private_segment_size=-1), V),
    ("reserve timeout", lambda r, a, k, q, b: q.reserve(1, timeout=-1), V),
    ("add_write_index", lambda r, a, k, q, b: q.add_write_index(65), V),
    ("cas_write_index", lambda r, a, k, q, b: q.cas_write_index(-1, 0), V),
    ("store_write_index", lambda r, a, k, q, b: q.store_write_index(1.0), T),
    ("slot_address", lambda r, a, k, q, b: q.slot_address("3"), T),
    ("write body", lambda r, a, k, q, b: q.write(0, BARRIER.word, bytes(59)), V),
    ("write word float", lambda r, a, k, q, b: q.write(0, 1.0, BARRIER.body), T),
    ("publish 63 bytes", lambda r, a, k, q, b: q.publish(bytes(63)), V),
    ("publish timeout", lambda r, a, k, q, b: q.publish(BARRIER, timeout=math.nan), V),
    ("publish_batch empty", lambda r, a, k, q, b: q.publish_batch([]), V),
    ("publish_batch bytes", lambda r, a, k, q, b: q.publish_batch(bytes(64)), T),
    ("publish_batch ints", lambda r, a, k, q, b: q.publish_batch([1, 2]), T),
    # kernels and dispatches
    ("kernel name", lambda r, a, k, q, b: k.executable.kernel(5), T),
    ("variable name", lambda r, a, k, q, b: k.executable.variable_address(5), T),
    ("prepare queue", lambda r, a, k, q, b: k.prepare("queue", N, 64), T),
    ("prepare dynamic_lds bool", lambda r, a, k, q, b: k.prepare(q, N, 64, True), D),
    ("prepare dynamic_lds neg", lambda r, a, k, q, b: k.prepare(q, N, 64, -1), D),
    ("prepare barrier", lambda r, a, k, q, b: k.prepare(q, N, 64, barrier="yes"), D),
    ("prepare grid 0", lambda r, a, k, q, b: k.prepare(q, (N, 0), 64), V),
    ("prepare grid 4 dims", lambda r, a, k, q, b: k.prepare(q, (N, 1, 1, 1), 64), V),
    ("prepare grid numpy float", lambda r, a, k, q, b: k.prepare(q, np.float32(N), 64), T),
    ("launch args str", lambda r, a, k, q, b: k.launch(q, "abcd", N, 64), T),
    ("launch args int", lambda r, a, k, q, b: k.launch(q, 4, N, 64), T),
    ("launch wait", lambda r, a, k, q, b: k.launch(q, [*b, N], N, 64, wait="no"), T),
    ("launch kernel", lambda r, a, k, q, b: __import__("hsapy.dispatch").dispatch.launch(
        "vector_add", q, [*b, N], N, 64), T),
    ("argument count", lambda r, a, k, q, b: k.prepare(q, N, 64)(*b), KernelArgumentError),
    ("argument float", lambda r, a, k, q, b: k.prepare(q, N, 64)(*b, 1.5), KernelArgumentError),
    ("argument pointer str", lambda r, a, k, q, b: k.prepare(q, N, 64)(b[0], b[1], "x", N),
     KernelArgumentError),
    ("batch int", lambda r, a, k, q, b: k.prepare(q, N, 64).batch(5), T),
    ("batch items", lambda r, a, k, q, b: k.prepare(q, N, 64).batch([5, 6]), T),
    ("batch item str", lambda r, a, k, q, b: k.prepare(q, N, 64).batch(["abcd"]),
     KernelArgumentError),
    ("graph packet", lambda r, a, k, q, b: Graph(q).add_packet(64), T),
    ("graph args", lambda r, a, k, q, b: Graph(q).add_dispatch(k, 5, N, 64), T),
    ("graph empty", lambda r, a, k, q, b: Graph(q).launch(), V),
    ("result timeout", lambda r, a, k, q, b: k.launch(q, [*b, N], N, 64, wait=False).wait(-1), V),
    # packets
    ("dispatch grid str", lambda r, a, k, q, b: aql.kernel_dispatch(0, "64", 64), T),
    ("dispatch dims", lambda r, a, k, q, b: aql.kernel_dispatch(0, 64, 64, dims=4), V),
    ("dispatch kernel_object", lambda r, a, k, q, b: aql.kernel_dispatch(-1, 64, 64), V),
    ("barrier 6 deps", lambda r, a, k, q, b: aql.barrier_and([1] * 6), V),
    ("barrier dep str", lambda r, a, k, q, b: aql.barrier_and(["x"]), V),
    ("agent dispatch 5 args", lambda r, a, k, q, b: aql.agent_dispatch(0, [0] * 5), V),
    ("fence scope", lambda r, a, k, q, b: aql.barrier_and([], acquire="global"), V),
    ("split int", lambda r, a, k, q, b: aql.split(64), T),
    ("parse short", lambda r, a, k, q, b: aql.parse(bytes(10)), V),
]

# Found by an outside user's pass over every public call: each raised an untyped error from
# inside, or had its value silently wrapped, stored or reinterpreted.
OUTSIDE_PASS_CASES = [
    ("Runtime targets int", lambda r, a, k, q, b: Runtime(backend="sim", targets=5), T),
    ("Runtime targets empty", lambda r, a, k, q, b: Runtime(backend="sim", targets=[]), V),
    ("Runtime executor int", lambda r, a, k, q, b: Runtime(backend="sim", executor=5), T),
    ("create_queue option", lambda r, a, k, q, b: a.create_queue(64, bogus=1), T),
    ("view shape str", lambda r, a, k, q, b: b[0].view(np.float32, "x"), T),
    ("fill 33 bits", lambda r, a, k, q, b: b[0].fill(1 << 32), V),
    ("fill below int32", lambda r, a, k, q, b: b[0].fill(-(1 << 31) - 1), V),
    ("copy_from int", lambda r, a, k, q, b: b[0].copy_from(5), T),
    ("copy_from float", lambda r, a, k, q, b: b[0].copy_from(1.5), T),
    ("copy_from bool", lambda r, a, k, q, b: b[0].copy_from(True), T),
    # (numpy read them as float64 or int64: a float32 buffer got each value split in two)
    ("copy_from list of floats", lambda r, a, k, q, b: b[0].copy_from([1.0, 2.0]), T),
    ("copy_from tuple of ints", lambda r, a, k, q, b: b[0].copy_from((1, 2)), T),
    ("prepare grid 0-d float array", lambda r, a, k, q, b: k.prepare(q, np.array(256.0), 64), T),
    ("write index 2**64", lambda r, a, k, q, b: q.write(2**64, BARRIER.word, BARRIER.body), V),
    ("write_many strided", lambda r, a, k, q, b: q.write_many(
        0, np.zeros((1, 128), np.uint8)[:, ::2], np.zeros(1, np.uint32)), V),
    ("write_many first", lambda r, a, k, q, b: q.write_many(
        -1, np.zeros((1, 64), np.uint8), np.zeros(1, np.uint32)), V),
    ("write_many words int64", lambda r, a, k, q, b: q.write_many(
        0, np.zeros((1, 64), np.uint8), np.full(1, 1 << 40, np.int64)), V),
    ("ring_doorbell str", lambda r, a, k, q, b: q.ring_doorbell("0"), T),
    ("ring_doorbell float", lambda r, a, k, q, b: q.ring_doorbell(0.0), T),
    ("ring_doorbell negative", lambda r, a, k, q, b: q.ring_doorbell(-1), V),
    ("graph queue", lambda r, a, k, q, b: Graph(None), T),
    ("barrier deps None", lambda r, a, k, q, b: aql.barrier_and(None), T),
    ("barrier deps int", lambda r, a, k, q, b: aql.barrier_or(5), T),
    ("agent dispatch function -1", lambda r, a, k, q, b: aql.agent_dispatch(-1), V),
    ("agent dispatch function 17 bits", lambda r, a, k, q, b: aql.agent_dispatch(1 << 16), V),
    ("agent dispatch args int", lambda r, a, k, q, b: aql.agent_dispatch(0, 5), T),
    ("decode_header str", lambda r, a, k, q, b: aql.decode_header("x"), T),
    ("decode_header 17 bits", lambda r, a, k, q, b: aql.decode_header(1 << 16), V),
    # a yes/no option given "no" (truthy: it meant yes) or None
    ("load relaxed str", lambda r, a, k, q, b: r.create_signal(1).load(relaxed="no"), T),
    ("store silent str", lambda r, a, k, q, b: r.create_signal(1).store(0, silent="no"), T),
    ("store relaxed None", lambda r, a, k, q, b: r.create_signal(1).store(0, relaxed=None), T),
    ("add relaxed int", lambda r, a, k, q, b: r.create_signal(1).add(1, relaxed=1), T),
    ("read index relaxed str", lambda r, a, k, q, b: q.load_read_index(relaxed="yes"), T),
    ("add_write_index relaxed", lambda r, a, k, q, b: q.add_write_index(1, relaxed="no"), T),
    ("publish doorbell str", lambda r, a, k, q, b: q.publish(BARRIER, doorbell="no"), T),
    ("publish_batch doorbell", lambda r, a, k, q, b: q.publish_batch([BARRIER], doorbell=0), T),
    ("enable_profiling str", lambda r, a, k, q, b: q.enable_profiling("no"), T),
    ("prepared doorbell str", lambda r, a, k, q, b: k.prepare(q, N, 64)(*b, N, doorbell="no"), T),
    ("batch doorbell str", lambda r, a, k, q, b: k.prepare(q, N, 64).batch([(*b, N)],
                                                                           doorbell="no"), T),
    ("graph launch wait str", lambda r, a, k, q, b: Graph(q).launch(wait="no"), T),
]


@pytest.mark.parametrize("name, call, error", CASES, ids=[c[0] for c in CASES])
def test_a_bad_argument_raises_a_typed_error_and_publishes_nothing(rt, agent, vadd, queue, bufs,
                                                                    name, call, error):
    with pytest.raises(error):
        call(rt, agent, vadd, queue, bufs)
    if name != "result timeout":
        assert queue.load_write_index() == 0
    assert queue.error is None


@pytest.mark.parametrize("name, call, error", OUTSIDE_PASS_CASES,
                         ids=[c[0] for c in OUTSIDE_PASS_CASES])
def test_what_an_outside_pass_found_raises_a_typed_error(rt, agent, vadd, queue, bufs, name,
                                                         call, error):
    test_a_bad_argument_raises_a_typed_error_and_publishes_nothing(rt, agent, vadd, queue, bufs,
                                                                   name, call, error)


# -- objects of another runtime ------------------------------------------------------------
# Two simulators number their agents alike, so an agent's handle cannot tell runtimes apart:
# each object says which runtime it belongs to, and a call refuses an object of another one
# before the packet it would write reaches a queue (where a kernel object or agent of the
# other runtime means nothing).

OTHER_RUNTIME_CASES = [
    ("load for its agent", lambda r, o, k, q, b: r.load(kernels.build("vector_add", "gfx942"),
                                                        o.gpu()), V),
    ("pool access", lambda r, o, k, q, b: r.system_pool.access(o.gpu()), V),
    ("allow_access", lambda r, o, k, q, b: b[0].allow_access([o.gpu()]), V),
    ("launch on its queue", lambda r, o, k, q, b: k.launch(q, [*b, N], N, 64), D),
    ("prepare on its queue", lambda r, o, k, q, b: k.prepare(q, N, 64), D),
    ("graph on its queue", lambda r, o, k, q, b: Graph(q).add_dispatch(k, [*b, N], N, 64), D),
    # its buffer recorded in a graph would be replayed at an address this runtime never mapped
    ("graph of its buffer", lambda r, o, k, q, b: Graph(r.gpu().create_queue(64)).add_dispatch(
        k, [o.system_pool.allocate(4 * N), b[1], b[2], N], N, 64), V),
    ("copy after its signal", lambda r, o, k, q, b: r.copy(b[0], b[1], 16,
                                                           deps=[o.create_signal(1)]), V),
    ("copy completing its signal", lambda r, o, k, q, b: r.copy(b[0], b[1], 16,
                                                                completion=o.create_signal(1)), V),
]


@pytest.mark.parametrize("name, call, error", OTHER_RUNTIME_CASES,
                         ids=[c[0] for c in OTHER_RUNTIME_CASES])
def test_an_object_of_another_runtime_is_refused(rt, vadd, bufs, name, call, error):
    with Runtime(backend="sim", targets=["gfx942"]) as other:
        queue = other.gpu().create_queue(64)
        with pytest.raises(error, match="another Runtime"):
            call(rt, other, vadd, queue, bufs)
        assert queue.load_write_index() == 0 and queue.error is None


# -- hsapy.hip --------------------------------------------------------------------------------

HIP_CASES = [
    ("hipMalloc", lambda h, k, d: h.malloc("64"), hipError_t.hipErrorInvalidValue),
    ("hipFree", lambda h, k, d: h.free(5), hipError_t.hipErrorInvalidValue),
    ("hipMemcpy", lambda h, k, d: h.memcpy(None, np.zeros(4)), hipError_t.hipErrorInvalidValue),
    ("hipMemcpy", lambda h, k, d: h.memcpy(d, None), hipError_t.hipErrorInvalidValue),
    ("hipMemcpy", lambda h, k, d: h.memcpy(d, np.zeros(4), kind=9),
     hipError_t.hipErrorInvalidMemcpyDirection),
    ("hipMemcpy", lambda h, k, d: h.memcpy(np.frombuffer(bytes(16), np.uint8), d),
     hipError_t.hipErrorInvalidValue),
    ("hipMemcpy", lambda h, k, d: h.memcpy(d, np.zeros(4), nbytes=-4),
     hipError_t.hipErrorInvalidValue),
    ("hipMemcpyAsync", lambda h, k, d: h.memcpyAsync(d, [object()]),
     hipError_t.hipErrorInvalidValue),
    ("hipMemset", lambda h, k, d: h.memset(np.zeros(4), 0), hipError_t.hipErrorInvalidValue),
    ("hipMemset", lambda h, k, d: h.memset(d, True), hipError_t.hipErrorInvalidValue),
    ("hipMemset", lambda h, k, d: h.memset(d, 0, "16"), hipError_t.hipErrorInvalidValue),
    # (the default size was read from the buffer before it was checked: AttributeError)
    ("hipMemset", lambda h, k, d: h.memset(None, 0), hipError_t.hipErrorInvalidValue),
    ("hipMemsetAsync", lambda h, k, d: h.memsetAsync("buffer", 0), hipError_t.hipErrorInvalidValue),
    ("hipLaunchKernelGGL", lambda h, k, d: h.launchKernelGGL("k", 1, 64, 0, None),
     hipError_t.hipErrorInvalidDeviceFunction),
    ("hipLaunchKernelGGL", lambda h, k, d: h.launchKernelGGL(k, "256", 64, 0, None, d, d, d, 4),
     hipError_t.hipErrorInvalidValue),
    ("hipLaunchKernelGGL", lambda h, k, d: h.launchKernelGGL(k, 1, 64, -1, None, d, d, d, 4),
     hipError_t.hipErrorInvalidValue),
    ("hipModuleLaunchKernel", lambda h, k, d: h.moduleLaunchKernel(k, 1, 64, 0, None, 5),
     hipError_t.hipErrorInvalidValue),
    ("hipStreamWaitEvent", lambda h, k, d: h.streamWaitEvent(None, None),
     hipError_t.hipErrorInvalidHandle),
    ("hipEventRecord", lambda h, k, d: h.eventRecord("event"), hipError_t.hipErrorInvalidHandle),
    ("hipEventSynchronize", lambda h, k, d: h.eventSynchronize(None),
     hipError_t.hipErrorInvalidHandle),
    ("hipStreamSynchronize", lambda h, k, d: h.streamSynchronize("s"),
     hipError_t.hipErrorInvalidHandle),
    ("hipStreamDestroy", lambda h, k, d: h.streamDestroy(None), hipError_t.hipErrorInvalidHandle),
    ("hipModuleGetFunction", lambda h, k, d: h.moduleGetFunction(None, "k"),
     hipError_t.hipErrorInvalidHandle),
    ("hipModuleUnload", lambda h, k, d: h.moduleUnload("m"), hipError_t.hipErrorInvalidHandle),
    ("hipModuleLoadData", lambda h, k, d: h.moduleLoadData(5), hipError_t.hipErrorInvalidValue),
    ("hipGraphLaunch", lambda h, k, d: h.graphLaunch(None), hipError_t.hipErrorInvalidHandle),
    ("hipGraphInstantiate", lambda h, k, d: h.graphInstantiate([]),
     hipError_t.hipErrorInvalidValue),
    ("hipGraphAddKernelNode", lambda h, k, d: h.graphAddKernelNode(None, [], k, 1, 64, []),
     hipError_t.hipErrorInvalidValue),
    ("hipMallocFromPoolAsync", lambda h, k, d: h.mallocFromPoolAsync(64, None),
     hipError_t.hipErrorInvalidHandle),
    ("hipFreeAsync", lambda h, k, d: h.freeAsync(d, None, None), hipError_t.hipErrorInvalidHandle),
    ("hipMemPoolTrimTo", lambda h, k, d: h.memPoolTrimTo(h.memPoolCreate(), -1),
     hipError_t.hipErrorInvalidValue),
    ("hipSetDevice", lambda h, k, d: h.setDevice(True), hipError_t.hipErrorInvalidDevice),
    ("hipGetDeviceProperties", lambda h, k, d: h.getDeviceProperties("0"),
     hipError_t.hipErrorInvalidDevice),
]


@pytest.mark.parametrize("call_name, call, code", HIP_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(HIP_CASES)])
def test_a_bad_hip_argument_is_a_hip_error(call_name, call, code):
    from hsapy.asm import kernels

    with HipRuntime(backend="sim") as hip:
        kernel = hip.moduleGetFunction(hip.moduleLoadData(kernels.build("vector_add", "gfx942")),
                                       "vector_add")
        device = hip.malloc(64)
        with pytest.raises(HipError) as caught:
            call(hip, kernel, device)
        assert caught.value.code == code and caught.value.call == call_name
        assert hip.getLastError() == code


def test_a_buffer_freed_twice_is_refused_the_second_time():
    with HipRuntime(backend="sim") as hip:
        device = hip.malloc(64)
        hip.free(device)
        with pytest.raises(HipError) as caught:
            hip.free(device)
        assert caught.value.code == hipError_t.hipErrorInvalidValue
        with pytest.raises(HipError):
            hip.memcpy(device, np.zeros(4, np.float32))


# -- the wrong number of kernel arguments ----------------------------------------------------
# publish and submit are generated functions taking the kernel's parameters by position: a call
# with too few or too many raised CPython's bare TypeError before any hsapy code ran.

ARITY_CALLS = [
    ("publish", lambda p: p.publish),
    ("submit", lambda p: p.submit),
    ("call", lambda p: p),
]


@pytest.fixture(scope="module")
def null_ctx():
    """A runtime whose executor consumes dispatches without running them (cheap to warm)."""
    with Runtime(backend="sim", targets=["gfx942"], executor="null") as runtime:
        agent = runtime.gpu()
        vadd = runtime.load(kernels.build("vector_add", "gfx942"), agent).kernel("vector_add")
        bufs = [runtime.system_pool.allocate(4 * N) for _ in range(3)]
        yield runtime, agent, vadd, bufs


@pytest.mark.parametrize("warm", [False, True], ids=["first use", "warm ring"])
@pytest.mark.parametrize("name, get", ARITY_CALLS, ids=[c[0] for c in ARITY_CALLS])
@pytest.mark.parametrize("given", [0, 1, 3, 5, 9])
def test_the_wrong_number_of_kernel_arguments_names_the_kernel_and_its_parameters(
        null_ctx, name, get, given, warm):
    runtime, agent, vadd, bufs = null_ctx
    with agent.create_queue(64) as queue:
        prepared = vadd.prepare(queue, N, 64)
        if warm:      # every kernarg slot once (so the next call takes the fast path's branch)
            for _ in range(256 // 32):
                for _ in range(32):
                    prepared.publish(*bufs, N)
                queue.flush()
                prepared(*bufs, N).wait(timeout=10)
        written = queue.load_write_index()
        args = [*bufs, N, *bufs, N, N][:given]
        with pytest.raises(KernelArgumentError) as caught:
            get(prepared)(*args)
        message = str(caught.value)
        assert "kernel vector_add takes 4 argument(s)" in message
        assert "vector_add(a: ptr @0, b: ptr @8, out: ptr @16, n: 4-byte value @24)" in message
        assert f"{given} given" in message
        if given < 4 and name != "call":
            assert "missing " + ", ".join("a b out n".split()[given:]) in message
        assert queue.load_write_index() == written and queue.error is None
        # the slot the refused call drew is usable: the next call completes
        prepared(*bufs, N).wait(timeout=10)


def test_a_kernel_without_arguments_refuses_any(null_ctx):
    runtime, agent, _vadd, _bufs = null_ctx
    empty = runtime.load(kernels.build("empty", "gfx942"), agent).kernel("empty")
    with agent.create_queue(64) as queue:
        prepared = empty.prepare(queue, 64, 64)
        for call in (prepared.publish, prepared.submit, prepared):
            with pytest.raises(KernelArgumentError, match="takes 0 argument"):
                call(1)
        assert queue.load_write_index() == 0
        prepared.publish()
        prepared().wait(timeout=10)


# -- the simulator's options and limits in seconds --------------------------------------------

SIMULATOR_OPTIONS = [("targets", ["gfx942"]), ("executor", "null"), ("watchdog_s", 5.0),
                     ("engine", "interp")]


@pytest.mark.parametrize("option, value", SIMULATOR_OPTIONS, ids=[o[0] for o in SIMULATOR_OPTIONS])
def test_a_simulator_option_is_refused_by_backend_rocr(option, value):
    # (ROCr ignored them: refused before the library is even looked for, so on any machine)
    with pytest.raises(HsapyValueError, match=f"{option}=.*only to the simulator backends"):
        Runtime(backend="rocr", **{option: value})


BAD_SIMULATOR_OPTIONS = [("targets", ["gfx0"]), ("targets", 5), ("executor", "nope"),
                         ("executor", 3), ("watchdog_s", -1), ("engine", "fast")]


@pytest.mark.parametrize("option, value", BAD_SIMULATOR_OPTIONS,
                         ids=[f"{o}={v!r}" for o, v in BAD_SIMULATOR_OPTIONS])
def test_a_bad_simulator_option_is_refused_by_backend_auto_whichever_backend_it_picks(
        monkeypatch, option, value):
    # checked before the backend is chosen: on a GPU machine "auto" picks ROCr, which used to
    # let the bad value pass unseen
    def choose(*_args):
        raise AssertionError("the backend was chosen before the options were checked")

    monkeypatch.setattr(Runtime, "_auto", staticmethod(choose))
    with pytest.raises(HsapyError, match=option):
        Runtime(backend="auto", **{option: value})


@pytest.mark.parametrize("bad", ["5", -1, math.nan, math.inf, True, [1]])
def test_the_run_commands_session_checks_its_timeout(bad):
    from hsapy.commands.run import HsapySession

    with Runtime(backend="sim", targets=["gfx942"], executor="null") as runtime:
        with pytest.raises(HsapyError, match="HsapySession: timeout"):
            HsapySession(runtime, timeout=bad)


@pytest.mark.parametrize("bad", ["1", "off", math.nan, -1, -0.5, math.inf, 1e300, 2**70, True,
                                 np.bool_(True), np.complex64(1), [1], b"1"])
def test_a_watchdog_limit_out_of_range_or_of_the_wrong_kind_is_refused(bad):
    with pytest.raises(HsapyValueError, match=r"watchdog_s=.*from 0 .* to 2\*\*40"):
        Runtime(backend="sim", targets=["gfx942"], watchdog_s=bad)


@pytest.mark.parametrize("text", ["1e300", "nan", "-1", "soon"])
def test_a_watchdog_limit_from_the_environment_is_checked_alike(monkeypatch, text):
    monkeypatch.setenv("HSAPY_SIM_WATCHDOG", text)
    with pytest.raises(HsapyValueError, match="HSAPY_SIM_WATCHDOG"):
        Runtime(backend="sim", targets=["gfx942"])


def test_the_run_commands_session_waits_as_long_as_it_was_told_even_zero():
    # `hsapy run --timeout 0` polls each dispatch once: the session once turned 0 into 60 s
    from hsapy.commands.run import HsapySession

    class Kernel:
        class executable:
            class agent:
                target = "gfx942"

        def launch(self, queue, args, **options):
            self.options = options
            return types.SimpleNamespace(duration_us=None)

    with Runtime(backend="sim", targets=["gfx942"], executor="null") as runtime:
        for timeout in (0, 0.25):
            kernel = Kernel()
            session = HsapySession(runtime, timeout=timeout)
            dispatch = types.SimpleNamespace(grid=64, block=64, dynamic_lds=0)
            assert session.launch(kernel, dispatch, []) is None
            assert kernel.options["timeout"] == timeout
