"""A sweep over every public method of the objects a user gets on the simulator (Runtime, Agent,
MemoryPool, Buffer, BufferView, Signal, SignalPool, Queue, Executable, Kernel,
PreparedDispatch, DispatchResult, BatchResult, Graph), found by introspection rather than
listed by hand, so a method added later is swept too:

(a) after the owning object is closed (``Runtime.close()``, which closes everything it owns),
    each method called with its required parameters given raises ClosedError -- or another
    typed hsapy error when an argument check comes first;
(b) on live objects, each method with required parameters called with each value of ``BAD``
    for all of them raises a typed hsapy error (HsapyError; its TypeError/ValueError
    subclasses), never a bare TypeError/AttributeError/KeyError/IndexError/ValueError from
    inside, and never hangs (every call that waits gets a bounded ``timeout`` where it takes
    one, and the sweep's objects hold no work that could block).

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
from hsapy.errors import HsapyError
from hsapy.runtime import Runtime

BAD = [None, "x", 1.5, -1, 2**70, True, np.float32(2.5), np.zeros((2, 3))]
BAD_IDS = ["None", "str", "float", "negative", "huge", "bool", "numpy float", "2-d array"]

# Never called: they end or copy the object, or are dunders of the language.
SKIP = {"close", "__enter__", "__exit__"}


def _objects(rt):
    agent = rt.gpu()
    executable = rt.load(kernels.build("vector_add", "gfx942"), agent)
    kernel = executable.kernel("vector_add")
    queue = agent.create_queue(64)
    buffers = [rt.system_pool.allocate(4 * N) for _ in range(3)]
    prepared = kernel.prepare(queue, N, 64)
    result = prepared(*buffers, N).wait(timeout=10)
    batch = prepared.batch([(*buffers, N)]).wait(timeout=10)
    graph = Graph(queue)
    graph.add_dispatch(kernel, [*buffers, N], N, 64)
    return {"Runtime": rt, "Agent": agent, "MemoryPool": rt.system_pool,
            "Buffer": buffers[0], "BufferView": buffers[0].view(np.float32),
            "Signal": rt.create_signal(0), "SignalPool": rt.signal_pool, "Queue": queue,
            "Executable": executable, "Kernel": kernel, "PreparedDispatch": prepared,
            "DispatchResult": result, "BatchResult": batch, "Graph": graph}


def _methods(thing):
    """(name, required positional parameters, takes timeout) of thing's public methods."""
    out = []
    for name in sorted(dir(type(thing))):
        if name.startswith("_") or name in SKIP:
            continue
        attribute = getattr(type(thing), name, None)
        if isinstance(attribute, (property, type)) or not callable(attribute):
            continue
        try:
            signature = inspect.signature(getattr(thing, name))
        except (TypeError, ValueError):
            continue
        required = [p for p in signature.parameters.values()
                    if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                           p.POSITIONAL_OR_KEYWORD)]
        out.append((name, len(required), "timeout" in signature.parameters))
    return out


@pytest.fixture(scope="module")
def live():
    with Runtime(backend="sim", targets=["gfx942"]) as rt:
        yield SimpleNamespace(rt=rt, objects=_objects(rt))


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
        return [(kind, name, count, timeout) for kind, thing in _objects(rt).items()
                for name, count, timeout in _methods(thing)]


CASES = _cases()
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


TYPED = [case for case in CASES if case[2] > 0]


@pytest.mark.parametrize("kind, name, count, timeout", TYPED,
                         ids=[f"{k}.{n}" for k, n, _c, _t in TYPED])
def test_a_method_given_values_of_the_wrong_kind_raises_a_typed_error(live, kind, name, count,
                                                                      timeout):
    thing = live.objects[kind]
    failures = []
    for value, label in zip(BAD, BAD_IDS):
        try:
            _call(thing, name, count, timeout, value)
        except HsapyError:
            continue
        except Exception as exc:         # noqa: BLE001
            failures.append(f"{label}: {type(exc).__name__}: {exc}"[:160])
    assert not failures, f"{kind}.{name}: " + "; ".join(failures)
