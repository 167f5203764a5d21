"""Library discovery: the order of DESIGN.md, and 'not found' vs 'found but failed to load'."""
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


def test_nothing_anywhere_is_not_found(monkeypatch, tmp_path):
    monkeypatch.delenv("HSAPY_HSA_LIB", raising=False)
    monkeypatch.setenv("ROCM_PATH", str(tmp_path))
    monkeypatch.setattr(_hsa, "_LIB_NAMES", ("libhsa-runtime64-does-not-exist.so.1",))
    with pytest.raises(LibraryNotFoundError, match="Paths tried") as info:
        _hsa.load_rocr()
    assert "HSAPY_HSA_LIB" in str(info.value)
