"""Why the real HSA runtime (ROCr) cannot be used on this machine, in one line a user can act on.

ROCr talks to the GPU through the amdgpu kernel driver's device file ``/dev/kfd``. When that file
is missing (no AMD GPU, or the driver is not loaded) or the user may not open it (not in the group
that owns it, ``render`` on current distributions, ``video`` on older ones), ``hsa_init`` fails
with HSA_STATUS_ERROR_OUT_OF_RESOURCES -- a status that says nothing about the cause. These
helpers look at ``/dev/kfd`` and say which case it is (docs/amd-gpu.md has the set-up steps).
"""
from __future__ import annotations

import grp
import os
from typing import Any

__all__ = ["KFD", "explain_rocr_failure", "kfd_problem"]

KFD = "/dev/kfd"


def kfd_problem(path: str = KFD) -> str | None:
    """What keeps this process from opening ``/dev/kfd``, or None when it may."""
    if not os.path.exists(path):
        return f"there is no {path} (no AMD GPU, or the amdgpu kernel driver is not loaded)"
    if not os.access(path, os.R_OK | os.W_OK):
        try:
            group = grp.getgrgid(os.stat(path).st_gid).gr_name
        except (KeyError, OSError):
            group = "render"
        return (f"{path} exists but this user may not open it: add the user to the '{group}' "
                f"group (usermod -aG {group} $USER; ROCm also lists 'video'), then log in again")
    return None


def explain_rocr_failure(exc: Any) -> str:
    """One line: why opening ROCr failed with ``exc`` (an error from loading the library or
    from ``hsa_init``)."""
    status_name = getattr(exc, "status_name", None)
    function = getattr(exc, "function", None)
    if status_name is None:             # the library was not found or did not load
        return " ".join(str(exc).split())
    if function == "hsa_init" and status_name == "HSA_STATUS_ERROR_OUT_OF_RESOURCES":
        cause = kfd_problem() or (f"{KFD} opens, so the driver refused the GPU; the kernel log "
                                  "(dmesg | grep -i amdgpu) says why")
        return f"{cause}, so ROCr's hsa_init failed with {status_name}"
    return f"ROCr's {function} failed with {status_name}"
