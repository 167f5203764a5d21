"""hsapy.sim.native_signal: the compiled doorbell store bound to one signal, against the Python
function it stands in for (hsapy.sim.api_signals.compiled_signal_store), and the cases it must
hand to that function: the lock held, a waiter or watcher to wake, a destroyed signal, a runtime
torn down and opened again."""
from __future__ import annotations

import platform
import threading
import time
from types import BuiltinFunctionType

import numpy as np
import pytest

from hsapy._hsa import ffi
from hsapy._hsa.fastcall import bound_signal_store
from hsapy.sim import native_signal
from hsapy.sim.signals import UNBOUND, WORD_HIGH_WATER, WORD_VALUE, wait_any

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64", "aarch64", "arm64"),
    reason="llvmlite's host JIT is tested on x86-64 and AArch64")

SUCCESS = 0
EQ = 0


class _Index:
    """An object that is an integer only through __index__."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


VALUES = [0, 1, 7, 5, 2**32, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -1, -(2**63), -(2**63) - 1,
          True, False, 1.0, None, "1", np.uint64(3), np.int64(-2), _Index(5), 10**30, 3]


def _signal(lib, value: int):
    out = ffi.new("hsa_signal_t *")
    assert lib.hsa_signal_create(value, 0, ffi.NULL, out) == SUCCESS
    return ffi.new("hsa_signal_t *", out[0])[0]        # a cdata of its own, as a queue keeps


def _words(lib, signal) -> tuple[int, int]:
    sim_signal = lib.signals.get(signal.handle)
    return int(sim_signal.words[WORD_VALUE]), int(sim_signal.words[WORD_HIGH_WATER])


def _outcome(store, signal, value):
    try:
        return ("returned", store(signal, value))
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
        return ("raised", type(exc))


def test_the_probe_finds_the_byte_that_tracks_the_lock():
    offset = native_signal.lock_flag_offset()
    assert offset is not None, native_signal.why_not()
    lock = threading.Lock()
    flag = ffi.cast("uint8_t *", id(lock) + offset)
    assert flag[0] == 0
    with lock:
        assert flag[0] != 0
    assert flag[0] == 0


@pytest.mark.parametrize("start", [-1, 0, 6, 2**62])
def test_bound_store_and_python_store_agree_on_every_value(lib, start):
    native_sig, python_sig = _signal(lib, start), _signal(lib, start)
    python = lib.hsa_signal_store_screlease
    native = python.bound_to_signal(native_sig)
    assert isinstance(native, BuiltinFunctionType), native_signal.why_not()
    for value in VALUES:
        assert _outcome(native, native_sig, value) == _outcome(python, python_sig, value), value
        assert _words(lib, native_sig) == _words(lib, python_sig), value
    # another signal through the bound store: the Python function's work, on that signal
    other = _signal(lib, 1)
    assert native(other, 9) is None
    assert _words(lib, other) == (9, 9)


def test_the_high_water_mark_only_rises(lib):
    sig = _signal(lib, -1)
    store = lib.hsa_signal_store_screlease.bound_to_signal(sig)
    for value in (4, 2, 9, 0, 9, 12, 11):
        store(sig, value)
    assert _words(lib, sig) == (11, 12)
    assert lib.signals.get(sig.handle).high_water == 12


def _spying(lib, sig):
    """The bound store with a ``slow`` that records its calls instead of doing the work."""
    calls = []
    made = native_signal.native_signal_store(sig, lib.signals.get(sig.handle),
                                             lambda *args: calls.append(args))
    assert made is not None, native_signal.why_not()
    return made[0], calls


def test_the_common_case_stays_compiled(lib):
    sig = _signal(lib, 0)
    store, calls = _spying(lib, sig)
    store(sig, 3)
    assert calls == [] and _words(lib, sig) == (3, 3)


def test_a_held_lock_goes_the_python_way(lib):
    # a thread inside the signal's locked section may be between its check and its wait
    sig = _signal(lib, 0)
    store, calls = _spying(lib, sig)
    with lib.signals.get(sig.handle).lock:
        store(sig, 3)
    assert calls == [(sig, 3)] and _words(lib, sig) == (0, 0)


@pytest.mark.parametrize("how", ["waiter", "watcher"])
def test_a_waiter_is_woken_through_the_python_way(lib, how):
    sig = _signal(lib, 0)
    sim_signal = lib.signals.get(sig.handle)
    store, calls = _spying(lib, sig)
    woke = []

    def wait():
        if how == "waiter":
            woke.append(sim_signal.wait(EQ, 5, 10.0))
        else:
            woke.append(wait_any([sim_signal], [EQ], [5], 10.0))

    thread = threading.Thread(target=wait)
    thread.start()
    deadline = time.monotonic() + 5
    while not (sim_signal.waiters or sim_signal.watchers) and time.monotonic() < deadline:
        time.sleep(0.001)
    store(sig, 5)
    assert calls == [(sig, 5)] and _words(lib, sig) == (0, 0)
    # and through the real bound store, the waiter wakes at once
    bound = lib.hsa_signal_store_screlease.bound_to_signal(sig)
    started = time.monotonic()
    bound(sig, 5)
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - started < 2
    assert woke == [5] if how == "waiter" else woke == [(0, 5)]


def test_a_destroyed_signal_is_never_written(lib):
    sig = _signal(lib, 2)
    sim_signal = lib.signals.get(sig.handle)
    store, calls = _spying(lib, sig)
    assert lib.signals.keep_bound(sig.handle, store.__self__)
    assert lib.hsa_signal_destroy(sig) == SUCCESS
    assert store.__self__[0] is UNBOUND
    store(sig, 40)
    assert calls == [(sig, 40)] and int(sim_signal.words[WORD_VALUE]) == 2
    # the bound store of the runtime: the Python way finds no live signal and does nothing
    other = _signal(lib, 3)
    bound = lib.hsa_signal_store_screlease.bound_to_signal(other)
    assert lib.hsa_signal_destroy(other) == SUCCESS
    assert bound(other, 41) is None
    # and a destroyed signal is not bound at all
    assert lib.hsa_signal_store_screlease.bound_to_signal(other) is lib.hsa_signal_store_screlease
    assert not lib.signals.keep_bound(other.handle, [other])


def test_teardown_unbinds_and_a_reopened_runtime_finds_its_new_signals(lib):
    sig = _signal(lib, 1)
    store = lib.hsa_signal_store_screlease.bound_to_signal(sig)
    assert lib.hsa_shut_down() == SUCCESS
    assert store.__self__[0] is UNBOUND
    assert lib.hsa_init() == SUCCESS
    fresh = _signal(lib, 4)
    # the store functions look signals up in the new table (they once kept the first one)
    assert lib._live_signals is lib.signals.by_handle
    assert isinstance(lib.hsa_signal_store_screlease.bound_to_signal(fresh), BuiltinFunctionType)
    lib.hsa_signal_store_screlease(fresh, 8)
    assert _words(lib, fresh) == (8, 8)


def test_fastcall_asks_the_simulator_for_its_bound_store(lib):
    sig = _signal(lib, 0)
    store = bound_signal_store(ffi, lib.hsa_signal_store_screlease, sig)
    assert isinstance(store, BuiltinFunctionType)
    store(sig, 6)
    assert _words(lib, sig) == (6, 6)


def test_disabled_by_the_environment(lib, monkeypatch):
    monkeypatch.setenv("HSAPY_NATIVE_BUILTINS", "0")
    sig = _signal(lib, 0)
    store = lib.hsa_signal_store_screlease.bound_to_signal(sig)
    assert store is lib.hsa_signal_store_screlease
    assert native_signal.why_not() == "HSAPY_NATIVE_BUILTINS=0"


def test_stores_from_two_threads_keep_the_mark_at_the_largest(lib):
    sig = _signal(lib, -1)
    store = lib.hsa_signal_store_screlease.bound_to_signal(sig)
    python = lib.hsa_signal_store_screlease

    def ring(values, how):
        for value in values:
            how(sig, value)

    threads = [threading.Thread(target=ring, args=(range(k, 20000, 2), how))
               for k, how in ((0, store), (1, python))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert _words(lib, sig)[1] == 19999
