"""Library discovery: docs/architecture.md's order; 'not found' vs 'found but failed to load'."""
from __future__ import annotations

import pytest

from hsapy import _hsa
from hsapy.errors import LibraryLoadError, LibraryNotFoundError


def test_candidates_follow_design_order(monkeypatch, tmp_path):
    monkeypatch.setenv("HSAPY_HSA_LIB", str(tmp_path / "mine.so"))
    monkeypatch.setenv("ROCM_PATH", "/opt/rocm-9.9")
    tried = _hsa.rocr_candidates()
    assert tried[0] == str(tmp_path / "mine.so")
    assert tried[1].startswith("/opt/rocm-9.9/lib/")
    assert any(path.startswith("/opt/rocm/lib/") for path in tried)
    assert tried[-1] == "libhsa-runtime64.so"  # then the system loader by name


def test_missing_explicit_library_is_not_found(monkeypatch, tmp_path):
    monkeypatch.setenv("HSAPY_HSA_LIB", str(tmp_path / "absent.so"))
    with pytest.raises(LibraryNotFoundError, match="HSAPY_HSA_LIB") as info:
        _hsa.load_rocr()
    assert "absent.so" in str(info.value)


def test_file_that_is_not_a_library_fails_to_load(monkeypatch, tmp_path):
    bogus = tmp_path / "libhsa-runtime64.so.1"
    bogus.write_bytes(b"not an ELF file")
    monkeypatch.setenv("HSAPY_HSA_LIB", str(bogus))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "none"))
    with pytest.raises(LibraryLoadError) as info:
        _hsa.load_rocr()
    text = str(info.value)
    assert "found but failed to load" in text and str(bogus) in text and "HSAPY_HSA_LIB" in text
    assert "cannot load library" in text and "Additionally" not in text  # the loader's reason


def test_nothing_anywhere_is_not_found(monkeypatch, tmp_path):
    monkeypatch.delenv("HSAPY_HSA_LIB", raising=False)
    monkeypatch.setenv("ROCM_PATH", str(tmp_path))
    monkeypatch.setattr(_hsa, "_LIB_NAMES", ("libhsa-runtime64-does-not-exist.so.1",))
    with pytest.raises(LibraryNotFoundError, match="Paths tried") as info:
        _hsa.load_rocr()
    assert "HSAPY_HSA_LIB" in str(info.value)


def test_constant_reads_enum_values_from_the_cdef():
    assert _hsa.constant("HSA_AGENT_INFO_NAME") == 0
    assert _hsa.constant("HSA_AMD_AGENT_INFO_UUID") == 0xA011  # hsa_ext_amd.h (ROCm 5.2.3)
    with pytest.raises(KeyError, match="WANTED_TYPES"):
        _hsa.constant("HSA_AGENT_INFO_FLUX_CAPACITOR")


def _enumerators(*enums: str) -> set[str]:
    names: set[str] = set()
    for enum in enums:
        names.update(_hsa.ffi.typeof(enum).relements)
    return names


@pytest.mark.parametrize("table, enums", [
    ("hsapy.agent:AGENT_INFO", ("hsa_agent_info_t", "hsa_amd_agent_info_t")),
    ("hsapy.memory:POOL_INFO", ("hsa_amd_memory_pool_info_t",)),
    ("hsapy.runtime:SYSTEM_INFO", ("hsa_system_info_t",)),
])
def test_info_tables_name_enumerators_of_the_right_enum(table, enums):
    import importlib

    module_name, attribute = table.split(":")
    entries = getattr(importlib.import_module(module_name), attribute)
    allowed = _enumerators(*enums)
    for key, entry in entries.items():
        enumerator = entry.attribute if hasattr(entry, "attribute") else entry[0]
        assert enumerator in allowed, f"{table}[{key!r}] = {enumerator}"


def test_value_tables_match_the_cdef():
    from hsapy.queue import QUEUE_TYPES
    from hsapy.signal import Condition, WaitState

    relements = _hsa.ffi.typeof("hsa_signal_condition_t").relements
    assert {f"HSA_SIGNAL_CONDITION_{c.name}": int(c) for c in Condition} == relements
    relements = _hsa.ffi.typeof("hsa_wait_state_t").relements
    assert {f"HSA_WAIT_STATE_{w.name}": int(w) for w in WaitState} == relements
    relements = _hsa.ffi.typeof("hsa_queue_type_t").relements
    assert {f"HSA_QUEUE_TYPE_{k.upper()}": v for k, v in QUEUE_TYPES.items()} == relements


def test_every_signal_memory_order_names_a_cdef_function():
    from hsapy.signal import ORDERS

    for operation, orders in ORDERS.items():
        for order in orders:
            assert f" hsa_signal_{operation}_{order}(" in _hsa.CDEF, (operation, order)


def test_the_enum_constants_are_the_cdef_enumerators():
    from hsapy import hsa_enums

    for name in _hsa.ffi.list_types()[0]:
        ctype = _hsa.ffi.typeof(name)
        if ctype.kind == "enum":
            for enumerator, value in ctype.relements.items():
                assert getattr(hsa_enums, enumerator) == value, enumerator


def test_every_status_constant_has_its_name():
    from hsapy import hsa_enums

    statuses = {name: value for name, value in vars(hsa_enums).items()
                if name.startswith("HSA_STATUS_")}
    assert hsa_enums.STATUS_NAMES == {value: name for name, value in statuses.items()}
    assert hsa_enums.HSA_STATUS_ERROR_MEMORY_FAULT == 43   # hsa_ext_amd.h's unnamed enum
