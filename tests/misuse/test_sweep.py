"""A sweep over every public method and property of the objects a user gets on the simulator
(Runtime, Agent, MemoryPool, Buffer, BufferView, Signal, SignalPool, Queue, Executable, Kernel,
PreparedDispatch, DispatchResult, BatchResult, Graph; and, live only, the Profiler, the
DispatchProfile it records and the Trace), found by introspection rather than listed by hand,
so a member added later is swept too:

(a) after the owning object is closed (``Runtime.close()``, which closes everything it owns),
    each method called with its required parameters given raises ClosedError -- or another
    typed hsapy error when an argument check comes first;
(b) on live objects, each method with required parameters called with each value of ``BAD``
    for all of them raises a typed hsapy error (HsapyError; its TypeError/ValueError
    subclasses) whose message names one of those parameters, never a bare
    TypeError/AttributeError/KeyError/IndexError/ValueError from inside, and never hangs
    (every call that waits gets a bounded ``timeout`` where it takes one, and the sweep's
    objects hold no work that could block);
(c) on live objects, each optional parameter of a method without required ones, given each
    value of ``BAD`` it does not accept (``OPTIONAL_ACCEPTS``) by keyword, raises a typed hsapy
    error naming that parameter;
(d) after Runtime.close(), each property either still answers, when it is a fact read while the
    object was open (``ANSWERS_AFTER_CLOSE``: names, sizes, pool and kernel info, the pools
    and agents as objects -- whose methods then raise --, ``is_closed`` and ``error``, and what
    a result that completed before the close knew), or raises ClosedError: a property that
    hands out a live handle or reads the runtime (``handle``, ``cdata``, ``ring``, ``address``,
    ``signal_pool``, ``caches``) is a use of the closed object. A property that raises a typed
    error on the live object too (``Agent.fine_grained_pool`` of an agent that has none) may
    raise that one. No public object has a property setter (checked too): their options are
    given to the call that makes them, where they are checked.

Not swept: the observer interface of the Profiler and the Trace (``OBSERVER_HOOKS``,
hsapy/observers.py), which hsapy calls with its own queues, kernels and counters.

By design, not swept: a call with the wrong number of arguments to a plain method is Python's
own TypeError, raised by the interpreter before hsapy runs, as for any Python function (the
kernel's arguments are the exception: their count is data, checked by hsapy, see
test_arguments.py). Methods without required parameters are not called in (b): nothing of
theirs can be of the wrong type.
"""
from __future__ import annotations

import inspect
from types import SimpleNamespace

import numpy as np
import pytest
from _misuse import N

from hsapy.asm import kernels
from hsapy.dispatch import Graph
from hsapy.errors import ClosedError, HsapyError
from hsapy.profile import Profiler
from hsapy.runtime import Runtime
from hsapy.trace import Trace

BAD = [None, "x", 1.5, -1, 2**70, True, np.float32(2.5), np.zeros((2, 3))]
BAD_IDS = ["None", "str", "float", "negative", "huge", "bool", "numpy float", "2-d array"]

# The observer interface (hsapy/observers.py): hsapy calls these with its own objects.
OBSERVER_HOOKS = {"packets_written", "doorbell", "signal_reused", "queue_created",
                  "queue_closing", "runtime_closing", "kernel_loaded", "dispatch_counted"}
# Never called: they end or copy the object, start or stop observing, or are dunders of the
# language.
SKIP = {"close", "start", "stop", "__enter__", "__exit__"} | OBSERVER_HOOKS
# The buffers of the sweep's dispatches and graph: kept alive as long as the objects are (a
# Graph holds no reference to the buffers it was recorded with).
_KEEP: list = []


def _objects(rt, observers=False):
    agent = rt.gpu()
    executable = rt.load(kernels.build("vector_add", "gfx942"), agent)
    kernel = executable.kernel("vector_add")
    queue = agent.create_queue(64)
    buffers = [rt.system_pool.allocate(4 * N) for _ in range(3)]
    _KEEP.append(buffers)
    prepared = kernel.prepare(queue, N, 64)
    profiler = Profiler()
    with profiler:
        result = prepared(*buffers, N).wait(timeout=10)
    batch = prepared.batch([(*buffers, N)]).wait(timeout=10)
    graph = Graph(queue)
    graph.add_dispatch(kernel, [*buffers, N], N, 64)
    objects = {"Runtime": rt, "Agent": agent, "MemoryPool": rt.system_pool,
               "Buffer": buffers[0], "BufferView": buffers[0].view(np.float32),
               "Signal": rt.create_signal(0), "SignalPool": rt.signal_pool, "Queue": queue,
               "Executable": executable, "Kernel": kernel, "PreparedDispatch": prepared,
               "DispatchResult": result, "BatchResult": batch, "Graph": graph}
    if observers:
        objects.update({"Profiler": profiler, "DispatchProfile": profiler.dispatches[0],
                        "Trace": Trace(counters=False)})
    return objects


def _signatures(thing):
    """(name, signature) of thing's public methods."""
    out = []
    for name in sorted(dir(type(thing))):
        if name.startswith("_") or name in SKIP:
            continue
        attribute = getattr(type(thing), name, None)
        if isinstance(attribute, (property, type)) or not callable(attribute):
            continue
        try:
            out.append((name, inspect.signature(getattr(thing, name))))
        except (TypeError, ValueError):
            continue
    return out


def _required(signature):
    return [p.name for p in signature.parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _methods(thing):
    """(name, required positional parameters, takes timeout) of thing's public methods."""
    return [(name, len(_required(signature)), "timeout" in signature.parameters)
            for name, signature in _signatures(thing)]


def _properties(thing):
    return [name for name in sorted(dir(type(thing)))
            if not name.startswith("_") and isinstance(getattr(type(thing), name), property)]


@pytest.fixture(scope="module", autouse=True)
def _in_a_scratch_directory(tmp_path_factory):
    """The sweep's str values are valid file names: Trace.write("x") writes a file there."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path_factory.mktemp("sweep"))
        yield


@pytest.fixture(scope="module")
def live():
    with Runtime(backend="sim", targets=["gfx942"]) as rt:
        yield SimpleNamespace(rt=rt, objects=_objects(rt, observers=True))


@pytest.fixture(scope="module")
def closed():
    rt = Runtime(backend="sim", targets=["gfx942"])
    objects = _objects(rt)
    rt.close()
    return objects


def _call(thing, name, count, timeout, value):
    kwargs = {"timeout": 0.05} if timeout else {}
    return getattr(thing, name)(*[value] * count, **kwargs)


def _cases():
    with Runtime(backend="sim", targets=["gfx942"]) as rt:
        objects = _objects(rt, observers=True)
        methods = [(kind, name, count, timeout) for kind, thing in objects.items()
                   for name, count, timeout in _methods(thing)]
        optional = [(kind, name, parameter.name) for kind, thing in objects.items()
                    for name, signature in _signatures(thing) if not _required(signature)
                    for parameter in signature.parameters.values()
                    if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)]
        properties = [(kind, name) for kind, thing in objects.items() if kind not in OBSERVERS
                      for name in _properties(thing)]
        return methods, optional, properties


# Live only: not owned by a runtime, they are not closed by Runtime.close().
OBSERVERS = {"Profiler", "DispatchProfile", "Trace"}
ALL_CASES, OPTIONAL_CASES, PROPERTY_CASES = _cases()
CASES = [case for case in ALL_CASES if case[0] not in OBSERVERS]
IDS = [f"{kind}.{name}" for kind, name, _c, _t in CASES]
# What a closed object may still do, by decision: say what it was (a pool's info as read when
# it opened, a prepared launch's packet template), answer "consumed" for a queue that will run
# nothing more (what the parking of releases asks), and return from wait() on a result that
# completed before the close (test_closed.py: results that completed stay done).
STILL_ANSWERS = {("MemoryPool", "as_dict"), ("PreparedDispatch", "packet"),
                 ("Queue", "consumed_mark"), ("DispatchResult", "wait"), ("BatchResult", "wait")}


@pytest.mark.parametrize("kind, name, count, timeout", CASES, ids=IDS)
def test_a_method_of_a_closed_object_raises_a_typed_error(closed, kind, name, count, timeout):
    thing = closed[kind]
    try:
        _call(thing, name, count, timeout, 1)
    except HsapyError:
        return
    except Exception as exc:             # noqa: BLE001 -- the point: no bare exception
        pytest.fail(f"{kind}.{name} after Runtime.close(): {type(exc).__name__}: {exc}")
    assert (kind, name) in STILL_ANSWERS, f"{kind}.{name} worked after Runtime.close()"


TYPED = [case for case in ALL_CASES if case[2] > 0]


@pytest.mark.parametrize("kind, name, count, timeout", TYPED,
                         ids=[f"{k}.{n}" for k, n, _c, _t in TYPED])
def test_a_method_given_values_of_the_wrong_kind_raises_a_typed_error(live, kind, name, count,
                                                                      timeout):
    thing = live.objects[kind]
    required = _required(inspect.signature(getattr(thing, name)))
    failures = []
    for value, label in zip(BAD, BAD_IDS):
        try:
            _call(thing, name, count, timeout, value)
        except HsapyError as exc:
            if not any(parameter in str(exc) for parameter in required):
                failures.append(f"{label}: the message names none of {required}: {exc}"[:200])
            continue
        except Exception as exc:         # noqa: BLE001
            failures.append(f"{label}: {type(exc).__name__}: {exc}"[:160])
    assert not failures, f"{kind}.{name}: " + "; ".join(failures)


# Values of BAD an optional parameter takes: a timeout in seconds is a float (numpy's too); a
# signal value may be negative; ``relaxed`` and the like are flags; a numpy shape may be -1 (inferred); an
# out array of any shape takes the bytes; a numpy scalar's type is a dtype to numpy.
_SECONDS = {"float", "numpy float"}
OPTIONAL_ACCEPTS = {
    **{(kind, method, "timeout"): _SECONDS
       for kind, method in [("BatchResult", "wait"), ("DispatchResult", "wait"),
                            ("Buffer", "copy_to"), ("Signal", "wait"), ("Queue", "reserve")]},
    ("Runtime", "create_signal", "initial_value"): {"negative"},
    ("SignalPool", "acquire", "initial_value"): {"negative"},
    **{(kind, method, "relaxed"): {"bool"}
       for kind, method in [("Queue", "add_write_index"), ("Queue", "load_read_index"),
                            ("Queue", "load_write_index"), ("Signal", "load")]},
    ("Buffer", "numpy", "shape"): {"negative"},
    ("Graph", "launch", "timeout"): _SECONDS,
    ("Graph", "launch", "wait"): {"bool"}, ("Graph", "launch", "doorbell"): {"bool"},
    ("Queue", "enable_profiling", "enabled"): {"bool"},
    ("DispatchProfile", "report", "instructions"): {"None"},     # None: every row
    ("Buffer", "copy_to", "out"): {"2-d array"},
    **{("Buffer", method, "dtype"): {"numpy float"} for method in ("copy_to", "numpy", "view")},
}


@pytest.mark.parametrize("kind, name, parameter", OPTIONAL_CASES,
                         ids=[f"{k}.{n}.{p}" for k, n, p in OPTIONAL_CASES])
def test_an_optional_parameter_given_a_value_of_the_wrong_kind_raises_a_typed_error_naming_it(
        live, kind, name, parameter):
    thing = live.objects[kind]
    method = getattr(thing, name)
    default = inspect.signature(method).parameters[parameter].default
    accepted = OPTIONAL_ACCEPTS.get((kind, name, parameter), set())
    failures = []
    for value, label in zip(BAD, BAD_IDS):
        if label in accepted or (value is None and default is None):
            continue
        kwargs = {parameter: value}
        if parameter != "timeout" and "timeout" in inspect.signature(method).parameters:
            kwargs["timeout"] = 0.05
        try:
            method(**kwargs)
        except HsapyError as exc:
            if parameter not in str(exc):
                failures.append(f"{label}: the message does not name {parameter}: {exc}"[:200])
            continue
        except Exception as exc:         # noqa: BLE001
            failures.append(f"{label}: {type(exc).__name__}: {exc}"[:160])
            continue
        failures.append(f"{label}: accepted")
    assert not failures, f"{kind}.{name}({parameter}=...): " + "; ".join(failures)


# The properties that still answer after Runtime.close(), by decision (see (d) above).
ANSWERS_AFTER_CLOSE = {
    "Runtime": {"is_closed", "kernarg_pool", "system_pool"},
    "Agent": {"device_pool", "device_type", "kernarg_pool", "lds_size", "memory_pools", "target"},
    "MemoryPool": {"alignment", "alloc_max_size", "granule", "is_accessible_by_all",
                   "is_allocation_allowed", "is_coarse_grained", "is_fine_grained",
                   "is_host_accessible", "is_kernarg", "segment", "size"},
    "Buffer": {"is_closed", "is_host_accessible"},
    "BufferView": {"nbytes"},
    "Signal": {"is_closed"},
    "Queue": {"error", "handle_state", "is_closed"},
    "Executable": {"is_closed", "kernel_names"},
    "Kernel": {"descriptor", "signature"},
    "DispatchResult": {"duration_us", "is_done", "signal"},
    "BatchResult": {"indices", "is_done"},
}


@pytest.mark.parametrize("kind, name", PROPERTY_CASES, ids=[f"{k}.{n}" for k, n in PROPERTY_CASES])
def test_a_property_after_close_answers_by_decision_or_raises_closed_error(live, closed, kind,
                                                                           name):
    thing = closed[kind]
    assert getattr(type(thing), name).fset is None, f"{kind}.{name} has a setter: sweep it"
    try:
        getattr(thing, name)
    except HsapyError as exc:
        try:
            getattr(live.objects[kind], name)
        except HsapyError:
            return                       # it raises on the live object too
        assert isinstance(exc, ClosedError), f"{kind}.{name}: {type(exc).__name__}: {exc}"
        assert name not in ANSWERS_AFTER_CLOSE.get(kind, set()), \
            f"{kind}.{name} is documented to answer after close, but raised {exc}"
        return
    except Exception as exc:             # noqa: BLE001
        pytest.fail(f"{kind}.{name} after Runtime.close(): {type(exc).__name__}: {exc}")
    assert name in ANSWERS_AFTER_CLOSE.get(kind, set()), \
        f"{kind}.{name} answered after Runtime.close(): add it to ANSWERS_AFTER_CLOSE or make " \
        "it raise ClosedError"
