"""SimLib offers the C API of hsapy's cdef, and matches the real ROCr where ROCr can answer here.

Without /dev/kfd the real libhsa-runtime64 cannot initialise, but it still answers calls made
before hsa_init and hsa_status_string; those are compared status for status. The comparison is
skipped when the library is not installed.
"""
from __future__ import annotations

import inspect
import re

import pytest

from hsapy._hsa import CDEF, ffi
from hsapy.errors import STATUS_NAMES
from hsapy.sim import SimLib

# Functions the code-object engineer's LoaderMixin (hsapy/sim/loader.py) provides.
LOADER_PREFIXES = ("hsa_code_object_reader_", "hsa_executable_")


def cdef_functions() -> dict[str, int]:
    """Function name -> number of parameters, parsed from the cdef text."""
    functions: dict[str, int] = {}
    for line in CDEF.splitlines():
        line = line.strip()
        if line.startswith("typedef") or not line.endswith(");"):
            continue
        match = re.match(r"[\w\s\*]+?\b(\w+)\s*\((.*)\);$", line)
        if not match:
            continue
        name, params = match.groups()
        depth, count, has_any = 0, 0, False
        for ch in params:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif ch == "," and depth == 0:
                count += 1
            elif not ch.isspace():
                has_any = True
        functions[name] = count + 1 if has_any and params.strip() != "void" else 0
    return functions


FUNCTIONS = cdef_functions()


def loader_has_landed() -> bool:
    from hsapy.sim import simlib

    return simlib.LoaderMixin.__module__ == "hsapy.sim.loader"


# Until hsapy/sim/loader.py lands, the loader's functions are not SimLib's to provide.
CHECKED = sorted(n for n in FUNCTIONS if loader_has_landed() or not n.startswith(LOADER_PREFIXES))


def test_cdef_parse_found_the_api():
    assert len(FUNCTIONS) >= 80
    assert FUNCTIONS["hsa_queue_create"] == 8
    assert FUNCTIONS["hsa_init"] == 0


@pytest.mark.parametrize("name", CHECKED)
def test_simlib_has_every_cdef_function_with_its_arity(name):
    method = getattr(SimLib, name, None)
    assert method is not None, f"SimLib lacks {name}"
    params = list(inspect.signature(method).parameters)[1:]     # drop self
    assert len(params) == FUNCTIONS[name], f"{name}: {params}"


@pytest.fixture(scope="module")
def rocr():
    from hsapy._hsa import load_rocr

    try:
        return load_rocr()
    except OSError as exc:
        pytest.skip(f"libhsa-runtime64 not available: {exc}")


def test_status_strings_match_rocr(rocr):
    sim = SimLib(ffi)
    ours, theirs = ffi.new("const char **"), ffi.new("const char **")
    for status in sorted(STATUS_NAMES) + [0x4242]:
        expected = rocr.hsa_status_string(status, theirs)
        assert sim.hsa_status_string(status, ours) == expected
        if expected == 0:
            name = ffi.string(theirs[0]).split(b":")[0]
            assert ffi.string(ours[0]).split(b":")[0] == name


def test_calls_before_init_match_rocr(rocr):
    sim = SimLib(ffi)
    cb = ffi.callback("hsa_status_t(hsa_agent_t, void*)", lambda a, d: 0)
    calls = [
        ("hsa_iterate_agents", (cb, ffi.NULL)),
        ("hsa_shut_down", ()),
        ("hsa_signal_create", (1, 0, ffi.NULL, ffi.new("hsa_signal_t *"))),
        ("hsa_system_get_info", (3, ffi.new("uint64_t *"))),
        ("hsa_amd_memory_pool_allocate", ({"handle": 1}, 64, 0, ffi.new("void **"))),
        ("hsa_queue_create", ({"handle": 1}, 64, 0, ffi.NULL, ffi.NULL, 0, 0,
                              ffi.new("hsa_queue_t **"))),
        ("hsa_isa_from_name", (b"amdgcn-amd-amdhsa--gfx942", ffi.new("hsa_isa_t *"))),
        ("hsa_amd_profiling_async_copy_enable", (True,)),
    ]
    for name, args in calls:
        assert getattr(sim, name)(*args) == getattr(rocr, name)(*args), name


ORDERS = ("_scacq_screl", "_scacquire", "_screlease", "_relaxed")


def test_memory_order_variants_come_from_one_table():
    from hsapy.sim.simlib import ORDER_VARIANTS

    generated = {f"{operation}_{order}" for operation, _, orders, _, _ in ORDER_VARIANTS
                 for order in orders}
    # every variant the cdef declares is in the table, and the class body writes none by hand
    assert {n for n in FUNCTIONS if n.endswith(ORDERS)} <= generated
    assert not [n for n in vars(SimLib) if n.endswith(ORDERS) and n not in generated]
    for operation, _, orders, _, _ in ORDER_VARIANTS:
        for order in orders:
            assert getattr(SimLib, f"{operation}_{order}").__name__ == f"{operation}_{order}"


def test_order_variants_of_one_operation_agree():
    sim = SimLib(ffi)
    assert sim.hsa_init() == 0
    try:
        handle = ffi.new("hsa_signal_t *")
        assert sim.hsa_signal_create(5, 0, ffi.NULL, handle) == 0
        signal = handle[0]
        assert sim.hsa_signal_add_relaxed(signal, 3) is None
        assert sim.hsa_signal_add_scacq_screl(signal, 2) is None
        assert sim.hsa_signal_load_relaxed(signal) == sim.hsa_signal_load_scacquire(signal) == 10
        assert sim.hsa_signal_exchange_relaxed(signal, 7) == 10
        assert sim.hsa_signal_cas_scacq_screl(signal, 7, 1) == 7
        assert sim.hsa_signal_wait_relaxed(signal, 0, 1, 1000, 0) == 1   # EQ holds at once
        assert sim.hsa_signal_destroy(signal) == 0
    finally:
        sim.hsa_shut_down()
