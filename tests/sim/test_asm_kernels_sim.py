"""hsapy.asm's kernels, built by hsapy.toolchain (llvmlite + ld.lld), on the simulator: the
loader accepts them, and the ISA interpreter computes the right answers with them."""
from __future__ import annotations

import _packets as P
import numpy as np
import pytest
from isa_exec_harness import Device
from test_sim_end_to_end import load_kernel

from hsapy._hsa import ffi
from hsapy.asm import kernels
from hsapy.sim import SimLib


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("HSAPY_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "hsapy-cache"))


@pytest.fixture
def lib():
    sim = SimLib(ffi, executor="builtin")
    assert sim.hsa_init() == 0
    yield sim
    sim.hsa_shut_down()


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_empty_loads_and_completes_through_a_queue(lib, target):
    agent = P.gpu(lib, target)
    kernel = load_kernel(lib, agent, kernels.build("empty", target), "empty")
    assert kernel in lib.kernel_objects
    queue = P.create_queue(lib, agent)
    done = P.signal(lib, 1)
    P.publish(lib, queue, P.dispatch(kernel, grid=(1024, 1, 1), workgroup=(256, 1, 1),
                                     completion=done))
    assert P.wait_lt(lib, done) == 0


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
@pytest.mark.parametrize("name", ["timestamp", "vector_add"])
def test_loader_accepts_the_kernels(lib, target, name):
    agent = P.gpu(lib, target)
    kernel = load_kernel(lib, agent, kernels.build(name, target), name)
    assert kernel in lib.kernel_objects


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_vector_add_computes_and_respects_n(target):
    device = Device(target)
    n = 1000  # grid 1024: the last 24 work-items must not write
    a = np.arange(n, dtype=np.float32) * 0.25
    b = np.linspace(-3.0, 7.0, n, dtype=np.float32)
    out = device.buffer(np.full(1024, -1.0, np.float32))
    kernel = device.load(kernels.build("vector_add", target), "vector_add")
    device.dispatch(kernel, [device.buffer(a), device.buffer(b), out, n], (1024,), (256,))
    result = device.read(out, np.float32, 1024)
    np.testing.assert_array_equal(result[:n], a + b)
    assert np.all(result[n:] == -1.0)


def test_vector_add_partial_workgroup():
    # grid 300 with workgroups of 128: the last workgroup has 44 work-items.
    device = Device("gfx942")
    n = 300
    a = np.ones(n, np.float32)
    b = np.arange(n, dtype=np.float32)
    out = device.buffer(np.zeros(n, np.float32))
    kernel = device.load(kernels.build("vector_add", "gfx942"), "vector_add")
    device.dispatch(kernel, [device.buffer(a), device.buffer(b), out, n], (300,), (128,))
    np.testing.assert_array_equal(device.read(out, np.float32, n), a + b)


def test_timestamp_writes_both_counters_for_work_items_below_n():
    device = Device("gfx942")
    n = 100
    out = device.buffer(np.zeros(2 * 128, np.uint64))
    kernel = device.load(kernels.build("timestamp", "gfx942"), "timestamp")
    device.dispatch(kernel, [out, n], (128,), (64,))
    stamps = device.read(out, np.uint64, 2 * 128).reshape(128, 2)
    assert np.all(stamps[:n] > 0)
    assert np.all(stamps[n:] == 0)
    # Each wave reads its counters once: all work-items of a wave share them.
    assert len(set(stamps[:64, 1])) == 1
