"""Handle-owning objects refuse copy.copy, copy.deepcopy and pickle with a typed error: a copy
would be a second owner of the same runtime handle (closing one, or collecting it, would free
what the other still uses), and a pickle would carry a handle into a process that has none."""
from __future__ import annotations

import copy
import pickle

import pytest

from hsapy.dispatch import Graph
from hsapy.errors import HsapyTypeError
from hsapy.hip import HipRuntime

COPIES = {
    "copy.copy": copy.copy,
    "copy.deepcopy": copy.deepcopy,
    "pickle.dumps": pickle.dumps,
}


def _objects(rt, agent, executable, vadd, queue, bufs):
    signal = rt.create_signal(1)
    result = vadd.launch(queue, args=(*bufs, 256), grid=256, workgroup=64)
    return {
        "Runtime": rt, "Agent": agent, "MemoryPool": rt.system_pool, "Buffer": bufs[0],
        "BufferView": bufs[0].view("float32"), "Signal": signal, "Queue": queue,
        "Executable": executable, "Kernel": vadd, "DispatchResult": result,
        "PreparedDispatch": vadd.prepare(queue, 256, 64), "Graph": Graph(queue),
    }


@pytest.mark.parametrize("how", list(COPIES))
def test_runtime_objects_refuse_to_be_copied_or_pickled(rt, agent, executable, vadd, queue,
                                                         bufs, how):
    for kind, obj in _objects(rt, agent, executable, vadd, queue, bufs).items():
        with pytest.raises(HsapyTypeError, match=f"{kind} objects cannot be"):
            COPIES[how](obj)
    # the originals are untouched: the buffer still computes
    vadd.launch(queue, args=(*bufs, 256), grid=256, workgroup=64)
    assert bufs[2].copy_to(dtype="float32")[:3].tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("how", list(COPIES))
def test_hip_objects_refuse_to_be_copied_or_pickled(how):
    with HipRuntime(backend="sim") as hip:
        made = {"HipRuntime": hip, "Stream": hip.streamCreate(), "Event": hip.eventCreate(),
                "MemPool": hip.memPoolCreate()}
        for kind, obj in made.items():
            with pytest.raises(HsapyTypeError, match=f"{kind} objects cannot be"):
                COPIES[how](obj)
