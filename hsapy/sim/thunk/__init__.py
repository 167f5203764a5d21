"""The simulated KFD thunk: the real ROCr over hsapy's simulator (backend ``rocr-sim``).

``libhsa-runtime64`` talks to the GPU only through the thunk, ``libhsakmt.so.1``. This package
builds a ``libhsakmt.so.1`` whose functions are Python (:mod:`.library`, cffi's embedding mode),
served by a simulated device (:class:`~hsapy.sim.thunk.kfd.SimKfd`: memory from
:class:`~hsapy.sim.memory.SimMemory`, queues consumed by :mod:`.processor`, events, clocks), and
loads it into this process BEFORE the real runtime, so that the runtime's dependency on
``libhsakmt.so.1`` binds to it (the dynamic loader matches a needed soname against the libraries
already loaded). See docs/rocr-over-simulated-thunk.md.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from hsapy.errors import LibraryLoadError
from hsapy.hsa_enums import HSA_STATUS_SUCCESS
from hsapy.sim.thunk.library import ThunkBuildError, build

__all__ = ["load", "open_rocr_sim", "ThunkLoadError", "ThunkBuildError", "real_thunk_loaded",
           "ROCR_SIM_TARGETS"]

# Targets the simulated device can be: ones the installed ROCr (5.2.3) knows and the simulator
# runs.
ROCR_SIM_TARGETS = ("gfx90a",)

_lock = threading.Lock()
_loaded: Any = None


class ThunkLoadError(LibraryLoadError):
    """The simulated thunk cannot serve this process (the real one is already loaded)."""


def _loaded_objects() -> list[str]:
    try:
        with open("/proc/self/maps") as maps:
            return [line.split()[-1] for line in maps if "/" in line]
    except OSError:
        return []


def real_thunk_loaded() -> str | None:
    """The path of a libhsakmt.so.1 that is not the simulated one, if this process has one."""
    ours = None if _loaded is None else str(_loaded[1])
    for path in _loaded_objects():
        if Path(path).name.startswith("libhsakmt.so") and path != ours:
            return path
    return None


def load() -> Path:
    """Build (once, into the cache) and load the simulated thunk into this process.

    Raises :class:`ThunkLoadError` when the real thunk was loaded first (the real runtime was
    opened in this process before: it stays bound to that thunk), :class:`ThunkBuildError` when the
    library cannot be compiled.
    """
    global _loaded
    import cffi

    with _lock:
        if _loaded is not None:
            return _loaded[1]
        real = real_thunk_loaded()
        if real is not None:
            raise ThunkLoadError(
                f"this process already loaded the real KFD thunk ({real}), so libhsa-runtime64 "
                "is bound to it; backend rocr-sim needs a process where the simulated thunk is "
                "loaded first: create Runtime(backend='rocr-sim') before any Runtime that opens "
                "ROCr, or set HSAPY_BACKEND=rocr-sim for a fresh process")
        path = build()
        handle = cffi.FFI().dlopen(str(path))
        _start_embedded_python(path)
        _loaded = (handle, path)
        return path


def _start_embedded_python(path: Path) -> None:
    """Run the library's embedded start-up now, from this thread, instead of at ROCr's first
    call into it (any thread, any time later).

    cffi's embedding start-up (cffi/_embedding.h, ``_cffi_carefully_make_gil``) uses
    ``PyCapsule_Type.tp_version_tag`` as a spin lock on Python < 3.12 and asserts that it is 0
    (aborting the process otherwise). Any attribute lookup on a capsule object -- numpy's
    DLPack capsules, ``repr(capsule)`` -- gives the type a version tag. ``PyType_Modified``
    (public C API) sets it back to 0; the type's method cache refills on its next lookup.
    """
    import ctypes
    import datetime
    import sys

    if sys.version_info < (3, 12):
        capsule_type = type(datetime.datetime_CAPI)
        ctypes.pythonapi.PyType_Modified(ctypes.py_object(capsule_type))
    version = ctypes.create_string_buffer(16)          # HsaVersionInfo: two HSAuint32
    ctypes.CDLL(str(path)).hsaKmtGetVersion(version)   # answered by the real thunk, or refused


def open_rocr_sim(targets: Any = None, executor: Any = None, watchdog_s: Any = None,
                  engine: Any = None) -> Any:
    """Load the simulated thunk, attach a simulated device and initialize the real ROCr over it;
    return ROCr as ``lib`` (the binding layer's seam).

    ``targets``: None or one target of :data:`ROCR_SIM_TARGETS` (a list of one, or a string).
    ROCr's copies run as its blit kernels on the simulated device (``HSA_ENABLE_SDMA=0``: the
    simulated device has no SDMA engine).
    """
    import os

    from hsapy._hsa import call, load_rocr
    from hsapy.errors import HsapyValueError
    from hsapy.sim.thunk import kfd

    if targets is None:
        names = list(ROCR_SIM_TARGETS[:1])
    elif isinstance(targets, str):
        names = [t for t in targets.split(",") if t]
    else:
        names = [str(t) for t in targets]
    if len(names) != 1 or names[0] not in ROCR_SIM_TARGETS:
        raise HsapyValueError(
            f"backend rocr-sim simulates one GPU agent of a target the installed ROCr knows "
            f"({', '.join(ROCR_SIM_TARGETS)}); got targets={targets!r}")
    load()
    os.environ.setdefault("HSA_ENABLE_SDMA", "0")
    device = kfd.attached()
    if device is not None and device.is_open:
        # ROCr is one per process: a second Runtime shares it (hsa_init counts references),
        # as two Runtime(backend="rocr") share one GPU.
        if device.profile.name != names[0]:
            raise ThunkLoadError(
                f"backend rocr-sim: this process's simulated device is a {device.profile.name} "
                f"(an open Runtime(backend='rocr-sim')); close it to simulate a {names[0]}")
        call(load_rocr(), "hsa_init")
        return load_rocr()
    device = kfd.SimKfd(names[0], executor=executor, watchdog_s=watchdog_s, engine=engine)
    try:
        kfd.attach(device)
    except RuntimeError as exc:
        raise ThunkLoadError(f"backend rocr-sim: {exc}") from None
    try:
        lib = load_rocr()
        call(lib, "hsa_init")
    except BaseException:
        kfd.detach(device)
        raise
    _shut_down_at_exit(lib)
    return lib


_exit_hook: list[Any] = []


def _shut_down_at_exit(lib: Any) -> None:
    """Shut ROCr down before the interpreter finalizes when a rocr-sim runtime is still open.

    ROCr's own threads (its async-event thread) call the thunk, which is Python: a thread that
    enters the interpreter after finalization is ended with pthread_exit, whose unwinding through
    ROCr's C++ frames aborts the process ("terminate called without an active exception").
    hsa_shut_down joins those threads and destroys the queues first (atexit runs before
    finalization)."""
    import atexit

    from hsapy.sim.thunk import kfd

    if _exit_hook:
        return

    def shut_down() -> None:
        device = kfd.attached()
        for _ in range(10_000):       # hsa_init counts references; release them all
            if device is None or not device.is_open or lib.hsa_shut_down() != HSA_STATUS_SUCCESS:
                return

    _exit_hook.append(shut_down)
    atexit.register(shut_down)
