"""hsapy.diagnose: why ROCr cannot start here, in one line."""
from __future__ import annotations

import os

from hsapy import diagnose
from hsapy.errors import LibraryNotFoundError, OutOfResourcesError


def test_a_missing_kfd_means_no_gpu_or_no_driver(tmp_path):
    problem = diagnose.kfd_problem(str(tmp_path / "kfd"))
    assert problem.startswith("there is no") and "amdgpu" in problem


def test_a_kfd_this_user_may_not_open_names_its_group(tmp_path, monkeypatch):
    kfd = tmp_path / "kfd"
    kfd.write_bytes(b"")
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    problem = diagnose.kfd_problem(str(kfd))
    assert "may not open it" in problem and "usermod -aG" in problem


def test_a_kfd_that_opens_is_no_problem(tmp_path):
    kfd = tmp_path / "kfd"
    kfd.write_bytes(b"")
    assert diagnose.kfd_problem(str(kfd)) is None


def test_hsa_init_out_of_resources_is_explained_by_the_kfd(monkeypatch):
    monkeypatch.setattr(diagnose, "kfd_problem", lambda: "there is no /dev/kfd (...)")
    text = diagnose.explain_rocr_failure(OutOfResourcesError(0x1008, "hsa_init"))
    assert text == ("there is no /dev/kfd (...), so ROCr's hsa_init failed with "
                    "HSA_STATUS_ERROR_OUT_OF_RESOURCES")


def test_a_missing_library_is_its_message_on_one_line():
    text = diagnose.explain_rocr_failure(LibraryNotFoundError("not found.\n  /a\n  /b\nInstall."))
    assert text == "not found. /a /b Install."
