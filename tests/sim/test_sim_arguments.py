"""The simulator's C-API functions take an integer argument as a C call through cffi does: what
cffi would pass, the simulator uses; what cffi refuses (TypeError, OverflowError), the simulator
refuses with the same exception, whatever the other arguments. The oracle is cffi itself: each
function's real prototype, cast onto a C stub compiled here that records its arguments."""
from __future__ import annotations

import platform

import numpy as np
import pytest
from _host_jit import compile_for_host

from hsapy._hsa import ffi

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64", "aarch64", "arm64"),
    reason="llvmlite's host JIT is tested on x86-64 and AArch64")

SUCCESS = 0


class _Index:
    """An integer only through __index__ (cffi refuses it)."""

    def __index__(self) -> int:
        return 5


class _Int:
    """An integer only through __int__ (cffi takes it)."""

    def __int__(self) -> int:
        return 6


VALUES = [0, 1, 9, -1, 2**31, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1,
          True, False, np.int64(-3), np.uint64(7), np.int32(4), np.bool_(True), 1.0, 2.5,
          np.float64(1.0), None, "3", b"3", _Index(), _Int(), [1]]


def _recorder():
    """A C stub ``uint64_t f(uint64_t a, uint64_t b, uint64_t c)`` storing b and c into a
    buffer (returned too): every prototype below passes its arguments in integer registers."""
    from llvmlite import ir

    i64 = ir.IntType(64)
    buffer = ffi.new("uint64_t[2]")
    module = ir.Module(name="recorder_for_tests")
    fn = ir.Function(module, ir.FunctionType(i64, (i64, i64, i64)), name="record")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    base = ir.Constant(i64, int(ffi.cast("uintptr_t", buffer)))
    b.store(fn.args[1], b.inttoptr(base, ir.PointerType(i64)))
    b.store(fn.args[2], b.inttoptr(b.add(base, ir.Constant(i64, 8)), ir.PointerType(i64)))
    b.ret(fn.args[1])
    return compile_for_host(module, "record"), buffer


@pytest.fixture(scope="module")
def recorder():
    return _recorder()


def _outcome(call):
    try:
        return ("passes", call())
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
        return ("raises", type(exc))


def _as_c(value: int, signed: bool) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if signed and value >> 63 else value


SIGNAL_STORES = ["hsa_signal_store_relaxed", "hsa_signal_store_screlease",
                 "hsa_signal_silent_store_relaxed", "hsa_signal_exchange_relaxed"]


@pytest.mark.parametrize("name", SIGNAL_STORES)
def test_signal_values_are_what_cffi_passes(lib, recorder, name):
    prototype = "uint64_t(*)(hsa_signal_t, hsa_signal_value_t)"
    out = ffi.new("hsa_signal_t *")
    assert lib.hsa_signal_create(11, 0, ffi.NULL, out) == SUCCESS
    signal = out[0]
    for value in VALUES:
        want = _cffi_value(recorder, prototype, (signal, value), 0, signed=True)
        lib.hsa_signal_store_relaxed(signal, 11)
        got = _outcome(lambda: getattr(lib, name)(signal, value))
        if want[0] == "raises":
            assert got == want, value
            assert lib.hsa_signal_load_relaxed(signal) == 11, value     # nothing stored
        else:
            assert got[0] == "passes", (value, got)
            assert lib.hsa_signal_load_relaxed(signal) == want[1], value


@pytest.mark.parametrize("name, start, combine", [
    ("hsa_signal_add_relaxed", 100, lambda old, v: old + v),
    ("hsa_signal_subtract_relaxed", 100, lambda old, v: old - v),
    ("hsa_signal_and_scacq_screl", -1, lambda old, v: old & v),
    ("hsa_signal_or_scacq_screl", 0, lambda old, v: old | v),
    ("hsa_signal_xor_scacq_screl", 5, lambda old, v: old ^ v),
])
def test_signal_arithmetic_takes_what_cffi_passes(lib, recorder, name, start, combine):
    prototype = "uint64_t(*)(hsa_signal_t, hsa_signal_value_t)"
    out = ffi.new("hsa_signal_t *")
    assert lib.hsa_signal_create(start, 0, ffi.NULL, out) == SUCCESS
    signal = out[0]
    for value in VALUES:
        want = _cffi_value(recorder, prototype, (signal, value), 0, signed=True)
        lib.hsa_signal_store_relaxed(signal, start)
        got = _outcome(lambda: getattr(lib, name)(signal, value))
        if want[0] == "raises":
            assert got == want and lib.hsa_signal_load_relaxed(signal) == start, value
        else:
            assert got == ("passes", None), value
            assert lib.hsa_signal_load_relaxed(signal) == _as_c(combine(start, want[1]), True)


def test_a_refused_value_raises_even_for_an_unknown_signal_or_queue(lib, recorder):
    # cffi converts every argument before the call: the signal's validity never matters
    unknown = ffi.new("hsa_signal_t *", {"handle": 0x1234})[0]
    for name in ("hsa_signal_store_relaxed", "hsa_signal_add_relaxed",
                 "hsa_signal_exchange_scacq_screl"):
        with pytest.raises(TypeError):
            getattr(lib, name)(unknown, 1.5)
        with pytest.raises(OverflowError):
            getattr(lib, name)(unknown, 2**63)
    with pytest.raises(TypeError):
        lib.hsa_signal_cas_relaxed(unknown, 0, None)
    for args, error in [((0, 2.0, 10, 0), TypeError), ((None, 0, 10, 0), TypeError),
                        ((0, 0, -1, 0), OverflowError), ((0, 2**63, 10, 0), OverflowError)]:
        with pytest.raises(error):
            lib.hsa_signal_wait_relaxed(unknown, *args)
    for name in ("hsa_queue_store_write_index_relaxed", "hsa_queue_add_write_index_relaxed",
                 "hsa_queue_store_read_index_screlease"):
        with pytest.raises(OverflowError):
            getattr(lib, name)(ffi.NULL, -1)
        with pytest.raises(TypeError):
            getattr(lib, name)(ffi.NULL, None)


def test_signal_create_and_cas_take_what_cffi_passes(lib, recorder):
    out = ffi.new("hsa_signal_t *")
    for value in VALUES:
        want = _cffi_value(recorder, "uint64_t(*)(uint32_t, hsa_signal_value_t)", (0, value),
                           0, signed=True)
        got = _outcome(lambda: lib.hsa_signal_create(value, 0, ffi.NULL, out))
        if want[0] == "raises":
            assert got == want, value
        else:
            assert got == ("passes", SUCCESS), value
            assert lib.hsa_signal_load_relaxed(out[0]) == want[1]
            want_cas = _cffi_value(recorder, "uint64_t(*)(hsa_signal_t, hsa_signal_value_t, "
                                   "hsa_signal_value_t)", (out[0], value, 3), 0, signed=True)
            assert lib.hsa_signal_cas_relaxed(out[0], value, 3) == want[1]
            assert lib.hsa_signal_load_relaxed(out[0]) == 3 == _as_c(3, True)
            assert want_cas == ("passes", want[1])
            lib.hsa_signal_destroy(out[0])


def test_queue_indices_are_what_cffi_passes(lib, recorder):
    from _packets import create_queue, gpu

    queue = create_queue(lib, gpu(lib, "gfx942"), size=64)
    prototype = "uint64_t(*)(hsa_queue_t *, uint64_t)"
    for value in VALUES:
        want = _cffi_value(recorder, prototype, (queue, value), 0, signed=False)
        for name in ("hsa_queue_store_write_index_relaxed", "hsa_queue_store_read_index_relaxed"):
            lib.hsa_queue_store_write_index_relaxed(queue, 3)
            lib.hsa_queue_store_read_index_relaxed(queue, 3)
            got = _outcome(lambda: getattr(lib, name)(queue, value))
            read = (lib.hsa_queue_load_write_index_relaxed if "write" in name
                    else lib.hsa_queue_load_read_index_relaxed)
            if want[0] == "raises":
                assert got == want and read(queue) == 3, (name, value)
            else:
                assert read(queue) == want[1], (name, value)
        lib.hsa_queue_store_write_index_relaxed(queue, 0)
        for name in ("hsa_queue_add_write_index_relaxed", "hsa_queue_add_write_index_scacq_screl"):
            got = _outcome(lambda: getattr(lib, name)(queue, value))
            if want[0] == "raises":
                assert got == want and lib.hsa_queue_load_write_index_relaxed(queue) == 0
            else:
                assert got == ("passes", 0)
                assert lib.hsa_queue_load_write_index_relaxed(queue) == want[1]
                lib.hsa_queue_store_write_index_relaxed(queue, 0)
    lib.hsa_queue_store_write_index_relaxed(queue, 0)
    lib.hsa_queue_store_read_index_relaxed(queue, 0)
    assert lib.hsa_queue_destroy(queue) == SUCCESS


def _cffi_value(recorder, prototype: str, args: tuple, which: int, signed: bool):
    """What cffi does with ``args`` for a C function of ``prototype``: ("passes", the value the
    C side got as its argument ``which + 2``, read as the C type) or ("raises", the exception's
    type)."""
    address, buffer = recorder
    function = ffi.cast(prototype, address)
    try:
        function(*args)
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
        return ("raises", type(exc))
    return ("passes", _as_c(int(buffer[which]), signed))


def _dummy(ctype):
    """An argument cffi takes for a parameter of ``ctype`` (a cffi ctype)."""
    if ctype.kind == "struct":
        return ffi.new(f"{ctype.cname} *")[0]
    if ctype.kind in ("pointer", "function"):
        return ffi.NULL
    return 0


def test_every_function_with_integer_parameters_refuses_what_cffi_refuses(lib, recorder):
    # the generic conversion (SimLib's methods named after cdef functions) against cffi's call
    # of the same prototype: a float, None, a negative for an unsigned type, 2**64 -- in each
    # integer, enum or bool parameter of each function, the others given valid values
    from hsapy._hsa import CDEF
    from hsapy.sim.objects import scalar_parameters

    checked = 0
    for name, ctypes in scalar_parameters(ffi, CDEF).items():
        if not any(ctypes) or not hasattr(lib, name):
            continue
        line = next(line for line in CDEF.splitlines() if f" {name}(" in line
                    or f"{name}(" in line.split()[1:2])
        result, parameters = line.split(name, 1)
        prototype = ffi.typeof(f"{result} (*){parameters.rstrip().rstrip(';')}")
        function = ffi.cast(prototype, recorder[0])
        for position, ctype in enumerate(ctypes):
            if ctype is None:
                continue
            for bad in (1.5, None, -1, 2**64):
                args = [_dummy(arg) for arg in prototype.args]
                args[position] = bad
                want = _outcome(lambda: function(*args))
                if want[0] == "passes":
                    continue                     # (a signed type takes -1)
                got = _outcome(lambda: getattr(lib, name)(*args))
                assert got == want, (name, position, bad)
                checked += 1
    assert checked > 60
