"""hsapy._hsa.fastcall: a C function called through a compiled builtin answers as cffi's call of
the same function pointer does, argument by argument."""
from __future__ import annotations

import platform
import random
from types import BuiltinFunctionType

import numpy as np
import pytest
from _host_jit import compile_for_host

from hsapy._hsa import ffi
from hsapy._hsa.fastcall import bound_u64
from hsapy.errors import ClosedError

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64", "aarch64", "arm64"),
    reason="llvmlite's host JIT is tested on x86-64 and AArch64")

def _fetch_add_function(load: bool = False):
    """A C function ``uint64_t f(uint64_t *word, uint64_t value)`` compiled here: it adds
    ``value`` to ``*word`` and returns the old value (0xDEAD for a null pointer), as a cffi
    function pointer; with ``load``, ``uint64_t f(uint64_t *word)`` returning ``*word``."""
    from llvmlite import ir

    i64, ptr = ir.IntType(64), ir.PointerType()
    module = ir.Module(name="fetch_add_for_tests")
    fn = ir.Function(module, ir.FunctionType(i64, (ptr,) if load else (ptr, i64)),
                     name="fetch_add")
    word = fn.args[0]
    entry, work, null = (fn.append_basic_block(n) for n in ("entry", "work", "null"))
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_unsigned("==", b.ptrtoint(word, i64), ir.Constant(i64, 0)), null, work)
    b.position_at_end(null)
    b.ret(ir.Constant(i64, 0xDEAD))
    b.position_at_end(work)
    if load:
        b.ret(b.load(word, typ=i64))
    else:
        b.ret(b.atomic_rmw("add", word, fn.args[1], "seq_cst"))
    return ffi.cast("uint64_t (*)(uint64_t *)" if load else "uint64_t (*)(uint64_t *, uint64_t)",
                    compile_for_host(module, "fetch_add"))


class _Index:
    def __index__(self) -> int:
        return 3


VALUES = [0, 1, 9, 2**63, 2**64 - 1, 2**64, -1, True, 1.5, None, "2", np.uint64(4),
          np.int64(-1), _Index(), 10**40]


def _outcome(call, pointer, value, words):
    try:
        result = ("returned", call(pointer, value))
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
        result = ("raised", type(exc), str(exc))
    return result, int(words[0])


def test_builtin_answers_as_cffi_does():
    function = _fetch_add_function()
    call = bound_u64(ffi, function)
    assert isinstance(call, BuiltinFunctionType)
    worlds = []
    for _ in range(2):
        words = ffi.new("uint64_t[1]", [7])
        worlds.append((words, words + 0, ffi.cast("uint64_t *", words)))
    rng = random.Random(1)
    for _ in range(500):
        value = rng.choice(VALUES)
        which = rng.randrange(2)                   # the same pointer object, or another one
        (a, a_first, a_other), (b, b_first, b_other) = worlds
        pa = a_first if which == 0 else a_other
        pb = b_first if which == 0 else b_other
        assert _outcome(call, pa, value, a) == _outcome(function, pb, value, b), value
    assert call(ffi.NULL, 1) == function(ffi.NULL, 1) == 0xDEAD
    with pytest.raises(TypeError):
        call(12345, 1)                             # not a pointer: cffi's error
    with pytest.raises(TypeError):
        call(worlds[0][1])                         # one argument: cffi's error


def test_load_builtin_answers_as_cffi_does():
    function = _fetch_add_function(load=True)
    call = bound_u64(ffi, function)
    assert isinstance(call, BuiltinFunctionType)
    words = ffi.new("uint64_t[2]", [7, 2**64 - 1])
    first, same, other = words + 0, ffi.cast("uint64_t *", words), words + 1
    rng = random.Random(3)
    for _ in range(200):
        pointer = rng.choice((first, same, other))
        words[0] = rng.choice((0, 5, 2**63, 2**64 - 1))
        assert call(pointer) == function(pointer)
    assert call(ffi.NULL) == function(ffi.NULL) == 0xDEAD
    for wrong in ((12345,), (first, 1), ()):
        with pytest.raises(TypeError) as builtin_error:
            call(*wrong)
        with pytest.raises(TypeError) as cffi_error:
            function(*wrong)
        assert str(builtin_error.value) == str(cffi_error.value)


def test_other_functions_are_returned_as_they_are():
    def python(queue, value):
        return value

    assert bound_u64(ffi, python) is python
    other = ffi.cast("int64_t (*)(uint64_t *, uint64_t)", 0)
    assert bound_u64(ffi, other) is other


def test_disabled_by_the_environment(monkeypatch):
    monkeypatch.setenv("HSAPY_NATIVE_BUILTINS", "0")
    function = _fetch_add_function()
    assert bound_u64(ffi, function) is function


def test_real_rocr_fetch_and_add_through_the_builtin(rocr_sim_runtime):
    # the real libhsa-runtime64's hsa_queue_add_write_index_scacq_screl, over the simulated thunk
    agent = rocr_sim_runtime.gpu_agents[0]
    with agent.create_queue(size=64) as queue:
        add = queue.producer().add_write_index
        assert isinstance(add, BuiltinFunctionType)
        pointer = queue.producer().queue_ptr
        assert [add(pointer, 2), add(pointer, 3), queue.load_write_index()] == [0, 2, 5]
        with pytest.raises(OverflowError):
            add(pointer, -1)
        assert queue.load_write_index() == 5
        queue.store_write_index(0)          # nothing was written: reserve nothing at close
        load = queue._load_read_index
        assert isinstance(load, BuiltinFunctionType)
        assert load(pointer) == queue.load_read_index() == 0
    with pytest.raises(ClosedError):
        queue._load_read_index(pointer)      # never the destroyed queue's memory


def _store_function():
    """A C function ``void f(hsa_signal_t signal, int64_t value)`` compiled here: it stores
    ``value`` at the address the signal's handle holds (the struct passed by value, as a
    uint64_t), as a cffi function pointer."""
    from llvmlite import ir

    i64 = ir.IntType(64)
    module = ir.Module(name="store_for_tests")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), (i64, i64)), name="store")
    handle, value = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.store(value, b.inttoptr(handle, ir.PointerType()))
    b.ret_void()
    return ffi.cast("void (*)(hsa_signal_t, int64_t)", compile_for_host(module, "store"))


STORE_VALUES = [0, 1, -1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, True, 1.5, None,
                np.int64(-7), np.uint64(8), _Index(), 10**40]


def test_signal_store_builtin_answers_as_cffi_does():
    from hsapy._hsa.fastcall import bound_signal_store

    function = _store_function()
    words = ffi.new("int64_t[2]")
    signals = ffi.new("hsa_signal_t[2]")
    for k in (0, 1):
        signals[k].handle = int(ffi.cast("uintptr_t", words + k))
    doorbell = signals[0]
    store = bound_signal_store(ffi, function, doorbell)
    assert isinstance(store, BuiltinFunctionType)
    rng = random.Random(2)
    for _ in range(300):
        value = rng.choice(STORE_VALUES)
        target = rng.choice((doorbell, signals[1], signals[0]))   # the bound one, or not
        got = _outcome(store, target, value, words)
        words_after = (int(words[0]), int(words[1]))
        want = _outcome(function, target, value, words)
        assert got == want and words_after == (int(words[0]), int(words[1])), value
    assert store(doorbell, 5) is None and words[0] == 5
    assert bound_signal_store(ffi, function, 12345) is function          # not a signal
    other = ffi.cast("void (*)(hsa_signal_t, uint64_t)", 0)
    assert bound_signal_store(ffi, other, doorbell) is other


def test_real_rocr_doorbell_store_through_the_builtin(rocr_sim_runtime):
    # the real libhsa-runtime64's doorbell store, over the simulated thunk: submitted dispatches
    # of the empty kernel complete, and their doorbells went through the builtin
    from hsapy.bench import LaunchSetup

    with LaunchSetup(rocr_sim_runtime) as setup:
        producer = setup.queue.producer()
        assert isinstance(producer.store_doorbell, BuiltinFunctionType)
        assert isinstance(producer.add_write_index, BuiltinFunctionType)
        indices = [setup.prepared.submit() for _ in range(5)]
        assert indices == list(range(indices[0], indices[0] + 5))
        setup.prepared().wait(30)
        assert setup.queue.load_read_index() == indices[-1] + 2
