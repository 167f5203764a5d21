"""A sweep over every HIP call of :class:`hsapy.hip.HipRuntime`, found by introspection (a call
added later fails ``test_every_hip_call_taking_parameters_is_swept`` until it has a row in ``GOOD``).

What the HIP layer promises (hsapy/hip/__init__.py): every call raises :class:`HipError`,
carrying the hipError_t ``code`` and the HIP name of the ``call``, and records the code for
hipGetLastError; it never lets a bare Python exception or another hsapy error out. So, for each
positional parameter of each call, with every other argument valid (``GOOD``):

- each value of ``BAD`` (the generic sweep's, tests/misuse/test_sweep.py) that the parameter
  does not accept (``ACCEPTS``: ``None`` is the default stream or device, for instance),
- for a handle (a Buffer, stream, event, module, pool, graph, kernel): the same kind of handle
  freed or destroyed (use after free: a buffer freed, a stream or event destroyed, a module
  unloaded) and one made by another HipRuntime,

raises HipError naming the call, whose message names the parameter (its Python name, as the
caller wrote it as a keyword), and hipGetLastError returns its code. Nothing reaches a queue:
the runtime's streams hold no new packet after a refused call.
"""
from __future__ import annotations

import inspect
from types import SimpleNamespace

import numpy as np
import pytest
from _misuse import N

from hsapy.asm import kernels
from hsapy.hip import HipError, HipRuntime, hipError_t, hipMemcpyKind
from hsapy.hip.handles import HipGraph

BAD = [None, "x", 1.5, -1, 2**70, True, np.float32(2.5), np.zeros((2, 3))]
BAD_IDS = ["None", "str", "float", "negative", "huge", "bool", "numpy float", "2-d array"]
DEFAULT = hipMemcpyKind.hipMemcpyDefault


def _handles(hip):
    """One live handle of each kind a HIP call takes, on ``hip``."""
    code = kernels.build("vector_add", "gfx942")
    module = hip.moduleLoadData(code)
    kernel = hip.moduleGetFunction(module, "vector_add")
    buffers = [hip.malloc(4 * N) for _ in range(3)]
    stream = hip.streamCreate()
    event = hip.eventCreate()
    hip.eventRecord(event, stream)
    graph = hip.graphCreate()
    graph.addKernelNode(kernel, 1, 64, [*buffers, N])
    return SimpleNamespace(code=code, module=module, kernel=kernel, buffers=buffers,
                           stream=stream, event=event, graph=graph,
                           graph_exec=hip.graphInstantiate(graph), pool=hip.memPoolCreate())


def _ended(hip):
    """Handles of each kind after their end: freed, destroyed, unloaded."""
    h = _handles(hip)
    hip.free(h.buffers[0])
    hip.streamDestroy(h.stream)
    hip.eventDestroy(h.event)
    hip.moduleUnload(h.module)
    return {"buffer": h.buffers[0], "stream": h.stream, "event": h.event, "module": h.module}


# The valid arguments of each call, in its signature's order (positional parameters only; h:
# the live handles). A parameter given a bad value gets it in place of its GOOD one.
GOOD = {
    "deviceCanAccessPeer": lambda h: (0, 0),
    "deviceDisablePeerAccess": lambda h: (0,),
    "deviceEnablePeerAccess": lambda h: (0, 0),
    "eventCreate": lambda h: (True,),
    "eventDestroy": lambda h: (h.event,),
    "eventElapsedTime": lambda h: (h.event, h.event),
    "eventQuery": lambda h: (h.event,),
    "eventRecord": lambda h: (h.event, h.stream),
    "eventSynchronize": lambda h: (h.event, 1.0),
    "free": lambda h: (h.buffers[0],),
    "freeAsync": lambda h: (h.buffers[0], h.stream, h.pool),
    "getDeviceProperties": lambda h: (0,),
    "getErrorName": lambda h: (0,),
    "graphAddKernelNode": lambda h: (h.graph, [], h.kernel, 1, 64, [*h.buffers, N], 0),
    "graphInstantiate": lambda h: (h.graph,),
    "graphLaunch": lambda h: (h.graph_exec, h.stream),
    "hostFree": lambda h: (h.buffers[0],),
    "hostMalloc": lambda h: (64,),
    "launchKernelGGL": lambda h: (h.kernel, 1, 64, 0, h.stream),
    "malloc": lambda h: (64,),
    "mallocFromPoolAsync": lambda h: (64, h.pool, h.stream),
    "mallocManaged": lambda h: (64,),
    "memPoolCreate": lambda h: (0,),
    "memPoolTrimTo": lambda h: (h.pool, 0),
    "memcpy": lambda h: (h.buffers[0], np.zeros(N, np.float32), 64, DEFAULT),
    "memcpyAsync": lambda h: (h.buffers[0], np.zeros(N, np.float32), 64, DEFAULT, h.stream),
    "memset": lambda h: (h.buffers[0], 0, 64),
    "memsetAsync": lambda h: (h.buffers[0], 0, 64, h.stream),
    "moduleGetFunction": lambda h: (h.module, "vector_add"),
    "moduleLaunchKernel": lambda h: (h.kernel, 1, 64, 0, h.stream, [*h.buffers, N]),
    "moduleLoadData": lambda h: (h.code,),
    "moduleUnload": lambda h: (h.module,),
    "setDevice": lambda h: (0,),
    "streamBeginCapture": lambda h: (h.stream,),
    "streamDestroy": lambda h: (h.stream,),
    "streamEndCapture": lambda h: (h.stream,),
    "streamSynchronize": lambda h: (h.stream,),
    "streamWaitEvent": lambda h: (h.stream, h.event, 0),
}

# Values of BAD a parameter takes, by HIP's rules: None is the default stream, the current
# device, the whole source (a size) or nullptr (hipFree); any int is an error code to name;
# a 2-d array is host memory like any other.
ACCEPTS = {
    ("free", "buffer"): {"None"}, ("hostFree", "buffer"): {"None"},
    ("getDeviceProperties", "device"): {"None"}, ("memPoolCreate", "device"): {"None"},
    ("getErrorName", "code"): {"negative", "huge"}, ("eventCreate", "timing"): {"bool"},
    ("memset", "value"): {"negative"}, ("memsetAsync", "value"): {"negative"},
    ("memPoolTrimTo", "min_bytes_to_keep"): {"huge"},
    ("eventSynchronize", "timeout"): {"float", "numpy float"},
    ("memcpy", "nbytes"): {"None"}, ("memcpyAsync", "nbytes"): {"None"},
    ("memset", "nbytes"): {"None"}, ("memsetAsync", "nbytes"): {"None"},
    ("memcpy", "src"): {"2-d array"}, ("memcpyAsync", "src"): {"2-d array"},
}
for _call in GOOD:
    if "stream" in inspect.signature(getattr(HipRuntime, _call)).parameters:
        ACCEPTS[(_call, "stream")] = {"None"}

# The kind of handle a parameter takes (for the freed, destroyed and foreign cases).
HANDLES = {"buffer": "buffer", "dst": "buffer", "src": "buffer", "stream": "stream",
           "event": "event", "start": "event", "stop": "event", "module": "module",
           "pool": "pool", "graph": "graph", "graph_exec": "graph_exec", "kernel": "kernel"}


def _parameters(call):
    signature = inspect.signature(getattr(HipRuntime, call))
    return [p.name for p in signature.parameters.values()
            if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _calls_with_parameters():
    return sorted(name for name in vars(HipRuntime)
                  if not name.startswith("_") and name != "close" and _parameters(name))


def _hip_name(call):
    # hipGetErrorName is a static function of no runtime: it records no error either
    return getattr(getattr(HipRuntime, call), "hip_name", "hipGetErrorName")


CASES = [(call, position, name) for call in sorted(GOOD)
         for position, name in enumerate(_parameters(call))]


@pytest.fixture(scope="module")
def ctx():
    with HipRuntime(backend="sim") as hip, HipRuntime(backend="sim") as other:
        yield SimpleNamespace(hip=hip, live=_handles(hip), ended=_ended(hip),
                              other=_handles(other))


def _values(ctx, call, name):
    """(label, value) of every wrong value parameter ``name`` of ``call`` is swept with."""
    accepted = ACCEPTS.get((call, name), set())
    values = [(label, value) for label, value in zip(BAD_IDS, BAD) if label not in accepted]
    kind = HANDLES.get(name)
    if kind is not None:
        if kind in ctx.ended:
            values.append((f"{kind} after its end", ctx.ended[kind]))
        foreign = ctx.other.buffers[1] if kind == "buffer" else getattr(ctx.other, kind)
        values.append((f"{kind} of another HipRuntime", foreign))
    return values


def _published(hip):
    """Packets published on the runtime's streams so far (a default stream created by the
    call holds none)."""
    return sum(stream.queue.load_write_index()
               for stream in list(hip._streams) + list(hip._default_streams.values()))


def test_every_hip_call_taking_parameters_is_swept():
    assert _calls_with_parameters() == sorted(GOOD)


@pytest.mark.parametrize("call, position, name", CASES,
                         ids=[f"{c}.{n}" for c, _p, n in CASES])
def test_a_hip_call_given_a_wrong_value_raises_a_hip_error_naming_the_parameter(
        ctx, call, position, name):
    hip = ctx.hip
    hip_name = _hip_name(call)
    failures = []
    for label, value in _values(ctx, call, name):
        args = list(GOOD[call](ctx.live))
        args[position] = value
        before = _published(hip)
        try:
            getattr(hip, call)(*args)
        except HipError as exc:
            if exc.call != hip_name:
                failures.append(f"{label}: raised as {exc.call}, not {hip_name}")
            elif name not in str(exc):
                failures.append(f"{label}: message does not name {name}: {exc}"[:200])
            elif hip.getLastError() != exc.code and call != "getErrorName":
                failures.append(f"{label}: hipGetLastError is not {exc.code.name}")
            elif _published(hip) != before:
                failures.append(f"{label}: a packet was published before the refusal")
            continue
        except Exception as exc:         # noqa: BLE001 -- the point: no other exception
            failures.append(f"{label}: {type(exc).__name__}: {exc}"[:200])
            continue
        failures.append(f"{label}: accepted")
    assert not failures, f"{call}({name}=...): " + "; ".join(failures)


@pytest.mark.parametrize("owner", [None, "a runtime", object()], ids=["none", "str", "object"])
def test_a_hip_graph_made_without_its_runtime_is_refused_naming_graph_create(owner):
    with pytest.raises(HipError, match=r"HipRuntime\.graphCreate\(\)") as info:
        HipGraph(hip=owner)
    assert info.value.code == hipError_t.hipErrorInvalidValue

