"""Fixtures of the simulator's tests: ``lib``, an initialised SimLib with the default executor
(a test file that needs another one defines its own ``lib``)."""
from __future__ import annotations

import pytest

from hsapy._hsa import ffi
from hsapy.sim import SimLib


@pytest.fixture
def lib():
    sim = SimLib(ffi)
    assert sim.hsa_init() == 0
    yield sim
    sim.hsa_shut_down()
