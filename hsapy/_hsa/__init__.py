"""The binding layer: the ONLY place that spells raw HSA C names or touches ``lib`` directly.

``ffi`` carries the declarations of ``_cdef.CDEF`` (see tools/gen_cdef.py). A backend is an object
``lib`` whose attributes are the C functions of that cdef with the C calling convention:

* ``rocr``: ``ffi.dlopen(libhsa-runtime64)`` (see :func:`load_rocr`);
* ``sim``: ``hsapy.sim.SimLib(ffi)``, a Python implementation of the same functions.

Helpers for the layer above: :func:`check` / :func:`call` turn a status into the exception family,
:func:`iterate` runs an ``hsa_*iterate*`` function without letting a callback raise into C, and
:func:`constant` reads an enumerator's value from the cdef.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cffi

from hsapy._hsa._cdef import CDEF, HEADER_VERSION
from hsapy.errors import LibraryLoadError, LibraryNotFoundError, error_for, is_error
from hsapy.hsa_enums import HSA_STATUS_ERROR, HSA_STATUS_INFO_BREAK, HSA_STATUS_SUCCESS

__all__ = ["ffi", "CDEF", "HEADER_VERSION", "load_rocr", "rocr_candidates", "check", "call",
           "constant", "iterate", "cache_info"]

ffi = cffi.FFI()
ffi.cdef(CDEF)

_LIB_NAMES = ("libhsa-runtime64.so.1", "libhsa-runtime64.so")


def rocr_candidates() -> list[str]:
    """Paths tried for the real runtime, in docs/architecture.md's order.

    HSAPY_HSA_LIB (a file), $ROCM_PATH/lib, /opt/rocm/lib, then the system loader by name. When
    HSAPY_HSA_LIB is set, :func:`load_rocr` tries only that file.
    """
    tried: list[str] = []
    explicit = os.environ.get("HSAPY_HSA_LIB")
    if explicit:
        tried.append(explicit)
    for root in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if root:
            tried.extend(str(Path(root) / "lib" / name) for name in _LIB_NAMES)
    tried.extend(_LIB_NAMES)  # bare names: resolved by the system loader (ld.so.cache)
    return tried


def load_rocr() -> Any:
    """dlopen the real libhsa-runtime64 and return it as ``lib``.

    Raises LibraryNotFoundError when no candidate exists, LibraryLoadError when one exists but
    fails to load; both list the paths tried and name HSAPY_HSA_LIB.
    """
    tried = rocr_candidates()
    explicit = os.environ.get("HSAPY_HSA_LIB")
    if explicit and not Path(explicit).exists():
        raise LibraryNotFoundError(
            f"HSAPY_HSA_LIB names {explicit}, which does not exist. Point HSAPY_HSA_LIB at "
            "libhsa-runtime64.so (e.g. /opt/rocm/lib/libhsa-runtime64.so.1), unset it to search "
            f"the default paths ({', '.join(tried[1:])}), or use the simulator "
            "(HSAPY_BACKEND=sim).")
    failures: list[str] = []
    if explicit:
        tried = [explicit]  # an explicit choice is never silently replaced by another library
    for path in tried:
        is_bare_name = "/" not in path
        if not is_bare_name and not Path(path).exists():
            continue
        try:
            return ffi.dlopen(path)
        except OSError as exc:
            # cffi appends a note about ctypes.util.find_library that says nothing new
            text = re.split(r"\.\s+Additionally, ctypes\.util", str(exc))[0]
            if is_bare_name and "cannot open shared object file" in text:
                continue  # not known to the system loader: simply not found
            failures.append(f"{path}: {text}")
    listing = "\n  ".join(tried)
    if failures:
        raise LibraryLoadError(
            "libhsa-runtime64 was found but failed to load:\n  " + "\n  ".join(failures)
            + f"\nPaths tried:\n  {listing}\nSet HSAPY_HSA_LIB to a working libhsa-runtime64.so, "
            "or use the simulator (HSAPY_BACKEND=sim)."
        )
    raise LibraryNotFoundError(
        f"libhsa-runtime64 was not found. Paths tried:\n  {listing}\n"
        "Install ROCm (or Debian's libhsa-runtime64-1), set HSAPY_HSA_LIB to the library's path, "
        "or use the simulator (HSAPY_BACKEND=sim)."
    )


def check(status: int, function: str, lib: Any = None) -> None:
    """Raise the HSAError of the right family when ``status`` is an error.

    With ``lib`` given, the runtime's own ``hsa_status_string`` is added to the message.
    """
    if not is_error(status):
        return
    detail = ""
    if lib is not None:
        out = ffi.new("const char **")
        try:
            if lib.hsa_status_string(status, out) == HSA_STATUS_SUCCESS and out[0] != ffi.NULL:
                detail = ffi.string(out[0]).decode(errors="replace")
        except Exception:  # the status string is a nicety; never mask the real error
            detail = ""
    raise error_for(status, function, detail)


def call(lib: Any, function: str, *args: Any) -> None:
    """Call ``lib.<function>(*args)`` and raise through :func:`check` on an error status.

    The name in an exception is always the function that was called (no hand-typed copy)."""
    check(getattr(lib, function)(*args), function, lib)


def _enum_constants() -> dict[str, int]:
    """Every enum constant of the cdef, as a dlopen'ed lib exposes them."""
    constants: dict[str, int] = {}
    for name in ffi.list_types()[0]:
        ctype = ffi.typeof(name)
        if ctype.kind == "enum":
            constants.update(ctype.relements)
    return constants


_CONSTANTS = _enum_constants()


def enum_constants() -> dict[str, int]:
    """Every enum constant of the cdef by name (a copy: the simulated lib installs them)."""
    return dict(_CONSTANTS)


def constant(name: str) -> int:
    """The value of an enum constant of the cdef, e.g. ``constant("HSA_AGENT_INFO_NAME")``.

    Tables above the binding layer name attributes by their C enumerator, so their values come
    from the cdef (which tests/abi checks against hsa.h) and never from a hand-copied number.
    """
    try:
        return _CONSTANTS[name]
    except KeyError:
        raise KeyError(f"{name} is not an enum constant of the cdef; add its enum to WANTED_TYPES "
                       "in tools/gen_cdef.py and regenerate hsapy/_hsa/_cdef.py") from None


def iterate(lib: Any, function: str, handle_type: str, *args: Any,
            visit: Callable[[int], bool | None] | None = None) -> list[int]:
    """Call an ``hsa_*iterate*`` function and return the int handles it reported, in order.

    ``args`` are the arguments before the callback (e.g. the agent). ``visit(handle)`` may return
    True to stop the iteration (HSA_STATUS_INFO_BREAK). C callbacks never raise: an exception in
    ``visit`` stops the iteration and is re-raised here after the C call returns.
    """
    handles: list[int] = []
    stashed: list[BaseException] = []

    def on_handle(item: Any, _data: Any) -> int:
        handle = int(item.handle)
        handles.append(handle)
        if visit is not None and visit(handle):
            return HSA_STATUS_INFO_BREAK
        return HSA_STATUS_SUCCESS

    def on_error(_type: Any, value: BaseException, _traceback: Any) -> int:
        stashed.append(value)
        return HSA_STATUS_ERROR  # stop the iteration; the C function returns this status

    callback = ffi.callback(f"hsa_status_t({handle_type}, void *)", on_handle,
                            error=HSA_STATUS_ERROR, onerror=on_error)
    status = getattr(lib, function)(*args, callback, ffi.NULL)
    if stashed:
        raise stashed[0]
    check(status, function, lib)
    return handles


def cache_info(lib: Any, handle: int) -> tuple[str, int, int]:
    """(name, level, size in bytes) of an ``hsa_cache_t``.

    hsa.h says HSA_CACHE_INFO_NAME is a character array of HSA_CACHE_INFO_NAME_LENGTH bytes and
    HSA_CACHE_INFO_SIZE is in bytes. ROCr 5.x (src/core/runtime/cache.cpp, Cache::GetInfo)
    writes a ``const char *`` for the name instead, and the size as the KFD topology reports it,
    in KiB. The name buffer is therefore at least pointer-sized (ROCr's store never overruns
    it); a name that is not ``length`` characters of text read in place is ROCr's pointer, and
    then the size is in KiB.
    """
    def read(enumerator: str, out: Any) -> Any:
        call(lib, "hsa_cache_get_info", {"handle": handle}, constant(enumerator), out)
        return out

    length = read("HSA_CACHE_INFO_NAME_LENGTH", ffi.new("uint32_t *"))[0]
    buffer = read("HSA_CACHE_INFO_NAME", ffi.new("char[]", max(length + 1, 16)))
    level = read("HSA_CACHE_INFO_LEVEL", ffi.new("uint8_t *"))[0]
    size = read("HSA_CACHE_INFO_SIZE", ffi.new("uint32_t *"))[0]
    text = ffi.string(buffer)
    if len(text) == length and all(32 <= c < 127 for c in text):
        return text.decode(), level, size
    pointer = ffi.cast("const char **", buffer)[0]
    name = ffi.string(pointer, length) if pointer != ffi.NULL else b""
    return name.decode(errors="replace"), level, size * 1024
