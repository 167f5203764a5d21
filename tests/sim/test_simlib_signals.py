"""SimLib signals through the raw C API: values, atomics, waits with timeouts, wait_any."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from _packets import UINT64_MAX, signal

from hsapy._hsa import ffi

SUCCESS, INVALID_ARGUMENT, INVALID_AGENT, INVALID_SIGNAL = 0, 0x1001, 0x1004, 0x1006
EQ, NE, LT, GTE = 0, 1, 2, 3


def ticks(lib, seconds: float) -> int:
    freq = ffi.new("uint64_t *")
    lib.hsa_system_get_info(lib.HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, freq)
    return int(seconds * freq[0])


def test_handle_is_opaque_nonzero_and_value_is_int64(lib):
    h = signal(lib, -5)
    assert h != 0
    assert lib.hsa_signal_load_relaxed({"handle": h}) == -5
    lib.hsa_signal_store_relaxed({"handle": h}, 2**63 - 1)
    lib.hsa_signal_add_relaxed({"handle": h}, 1)          # wraps like int64 arithmetic
    assert lib.hsa_signal_load_scacquire({"handle": h}) == -(2**63)


@pytest.mark.parametrize("function, operand, start, expected", [
    ("hsa_signal_add_scacq_screl", 5, 10, 15),
    ("hsa_signal_add_screlease", -3, 10, 7),
    ("hsa_signal_subtract_relaxed", 4, 10, 6),
    ("hsa_signal_subtract_scacq_screl", 11, 10, -1),
    ("hsa_signal_subtract_screlease", 1, 1, 0),
    ("hsa_signal_and_scacq_screl", 0b0110, 0b1100, 0b0100),
    ("hsa_signal_or_scacq_screl", 0b0011, 0b1100, 0b1111),
    ("hsa_signal_xor_scacq_screl", 0b1010, 0b1100, 0b0110),
    ("hsa_signal_store_screlease", 42, 0, 42),
    ("hsa_signal_silent_store_relaxed", 43, 0, 43),
    ("hsa_signal_silent_store_screlease", 44, 0, 44),
])
def test_void_operations(lib, function, operand, start, expected):
    h = {"handle": signal(lib, start)}
    assert getattr(lib, function)(h, operand) is None
    assert lib.hsa_signal_load_relaxed(h) == expected


def test_exchange_and_cas_return_the_old_value(lib):
    h = {"handle": signal(lib, 7)}
    assert lib.hsa_signal_exchange_scacq_screl(h, 9) == 7
    assert lib.hsa_signal_exchange_relaxed(h, 1) == 9
    assert lib.hsa_signal_cas_scacq_screl(h, 5, 100) == 1       # no match: unchanged
    assert lib.hsa_signal_load_relaxed(h) == 1
    assert lib.hsa_signal_cas_relaxed(h, 1, 100) == 1
    assert lib.hsa_signal_load_relaxed(h) == 100


@pytest.mark.parametrize("condition, compare, value, holds", [
    (EQ, 3, 3, True), (EQ, 3, 4, False),
    (NE, 3, 4, True), (NE, 3, 3, False),
    (LT, 1, 0, True), (LT, 1, 1, False),
    (GTE, 5, 5, True), (GTE, 5, 4, False),
])
def test_wait_conditions(lib, condition, compare, value, holds):
    h = {"handle": signal(lib, value)}
    start = time.monotonic()
    observed = lib.hsa_signal_wait_scacquire(h, condition, compare, ticks(lib, 0.05), 0)
    elapsed = time.monotonic() - start
    assert observed == value
    if holds:
        assert elapsed < 0.04
    else:
        assert elapsed >= 0.045           # waited out the 50 ms timeout


def test_wait_wakes_on_store_from_another_thread(lib):
    h = {"handle": signal(lib, 1)}
    timer = threading.Timer(0.02, lambda: lib.hsa_signal_subtract_screlease(h, 1))
    timer.start()
    assert lib.hsa_signal_wait_relaxed(h, LT, 1, UINT64_MAX, 1) == 0   # ACTIVE hint accepted
    timer.join()


@pytest.mark.parametrize("store", ["hsa_signal_store_screlease", "hsa_signal_store_relaxed"])
def test_a_store_through_a_cdata_handle(lib, store):
    # how hsapy stores (a doorbell, Signal.store): the handle as cdata, the value an int
    store = getattr(lib, store)
    cdata = ffi.new("hsa_signal_t *", {"handle": signal(lib, 1)})[0]
    timer = threading.Timer(0.02, lambda: store(cdata, 0))
    timer.start()
    started = time.monotonic()
    assert lib.hsa_signal_wait_scacquire(cdata, EQ, 0, ticks(lib, 5), 1) == 0   # woken by it
    timer.join()
    assert time.monotonic() - started < 1.0
    for value, expected in [(7, 7), (np.int64(8), 8), (True, 1), (2**63 - 1, 2**63 - 1)]:
        assert store(cdata, value) is None
        assert lib.hsa_signal_load_relaxed(cdata) == expected
    # what a C call through cffi refuses for an int64_t (tests/sim/test_sim_arguments.py)
    for value, error in [(2**64 - 1, OverflowError), (-(2**63) - 1, OverflowError),
                         (1.5, TypeError)]:
        with pytest.raises(error):
            store(cdata, value)
        assert lib.hsa_signal_load_relaxed(cdata) == 2**63 - 1
    assert lib.hsa_signal_destroy(cdata) == SUCCESS
    store(cdata, 3)                                  # a destroyed signal: nothing to store to
    assert lib.hsa_signal_load_relaxed(cdata) == 0


def test_wait_any_returns_index_and_value(lib):
    handles = [signal(lib, 1) for _ in range(3)]
    signals = ffi.new("hsa_signal_t[3]", [{"handle": h} for h in handles])
    conds = ffi.new("hsa_signal_condition_t[3]", [EQ, EQ, EQ])
    values = ffi.new("hsa_signal_value_t[3]", [0, 0, 0])
    out = ffi.new("hsa_signal_value_t *")
    timer = threading.Timer(0.02, lambda: lib.hsa_signal_store_relaxed({"handle": handles[2]}, 0))
    timer.start()
    index = lib.hsa_amd_signal_wait_any(3, signals, conds, values, UINT64_MAX, 0, out)
    timer.join()
    assert (index, out[0]) == (2, 0)


def test_wait_any_times_out_with_signal_count(lib):
    signals = ffi.new("hsa_signal_t[1]", [{"handle": signal(lib, 1)}])
    conds = ffi.new("hsa_signal_condition_t[1]", [EQ])
    values = ffi.new("hsa_signal_value_t[1]", [0])
    out = ffi.new("hsa_signal_value_t *")
    assert lib.hsa_amd_signal_wait_any(1, signals, conds, values, ticks(lib, 0.02), 0, out) == 1


def test_create_and_destroy_validation(lib):
    out = ffi.new("hsa_signal_t *")
    assert lib.hsa_signal_create(1, 0, ffi.NULL, ffi.NULL) == INVALID_ARGUMENT
    assert lib.hsa_signal_create(1, 1, ffi.NULL, out) == INVALID_ARGUMENT
    bogus = ffi.new("hsa_agent_t[1]", [{"handle": 99}])
    assert lib.hsa_signal_create(1, 1, bogus, out) == INVALID_AGENT
    assert lib.hsa_amd_signal_create(1, 0, ffi.NULL, 0, out) == SUCCESS
    assert lib.hsa_signal_destroy(out[0]) == SUCCESS
    assert lib.hsa_signal_destroy(out[0]) == INVALID_SIGNAL       # destroyed handle
    assert lib.hsa_signal_destroy({"handle": 0}) == INVALID_ARGUMENT
    assert lib.hsa_signal_destroy({"handle": 0x1234}) == INVALID_SIGNAL


def test_operations_on_a_destroyed_signal_do_not_raise(lib):
    h = {"handle": signal(lib, 3)}
    lib.hsa_signal_destroy(h)
    assert lib.hsa_signal_load_relaxed(h) == 0
    lib.hsa_signal_store_relaxed(h, 1)
    assert lib.hsa_signal_wait_scacquire(h, EQ, 99, UINT64_MAX, 0) == 0   # no hang


def test_concurrent_atomic_adds_lose_nothing(lib):
    h = {"handle": signal(lib, 0)}

    def add_many():
        for _ in range(500):
            lib.hsa_signal_add_scacq_screl(h, 1)

    threads = [threading.Thread(target=add_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert lib.hsa_signal_load_relaxed(h) == 2000
