"""The build cache: content-addressed entries keyed by the source, the target, the options and
the versions of every tool involved, each checked against its digest when read
(``HSAPY_CACHE_DIR``, else ``$XDG_CACHE_HOME/hsapy``, else ``~/.cache/hsapy``)."""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

from hsapy._checks import check_flag
from hsapy.toolchain.events import emit

# Bump when the way a cached result is produced or stored changes (flags, header, pipeline,
# the entry format below).
_CACHE_SCHEMA = 2
# A cache entry: this magic, the SHA-256 of the code object, then the code object. The digest
# is checked on every read: a truncated or altered entry is rebuilt (and reported), never used.
_ENTRY_MAGIC = b"HSAPYC02"
_ENTRY_HEADER = len(_ENTRY_MAGIC) + 32


def cache_dir() -> Path:
    """The build cache: ``$HSAPY_CACHE_DIR``, else ``$XDG_CACHE_HOME/hsapy``, else
    ``~/.cache/hsapy``; where there is no home directory (``HOME`` unset and a user id without a
    passwd entry, as in a container run with ``--user``), :func:`private_dir`."""
    explicit = os.environ.get("HSAPY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):   # the XDG base-directory spec ignores a relative path
        return Path(xdg) / "hsapy"
    try:
        home = Path.home()
    except RuntimeError:   # pathlib: "Could not determine home directory."
        return private_dir()
    return home / ".cache" / "hsapy"


_private: list[Path] = []


def private_dir() -> Path:
    """A directory of this process alone, removed at exit: where the cache goes when it has no
    home, and what the simulated thunk is built in when the cache cannot be written. Never a
    shared, predictable path: another user could plant code objects or a library there."""
    if not _private:
        path = Path(tempfile.mkdtemp(prefix="hsapy-"))
        atexit.register(_remove_private, path, os.getpid())
        _private.append(path)
    return _private[0]


def _remove_private(path: Path, owner: int) -> None:
    if os.getpid() == owner:   # a forked child that exits through atexit leaves it alone
        shutil.rmtree(path, ignore_errors=True)


def atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _cache_key(route: str, parts: dict) -> str:
    # hsapy's version too: a release never reads what another one built (its compiler flags,
    # header or extraction may differ even where _CACHE_SCHEMA was not bumped)
    from hsapy import _version

    payload = json.dumps({"schema": _CACHE_SCHEMA, "hsapy": _version.__version__, "route": route,
                          **parts}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class CacheWarning(UserWarning):
    """A build-cache entry failed its check (truncated, altered) and was rebuilt."""


def _cache_entry(data: bytes) -> bytes:
    return _ENTRY_MAGIC + hashlib.sha256(data).digest() + data


def _verified(entry: bytes) -> tuple[bytes | None, str]:
    """(the code object, "") when ``entry`` is intact, else (None, what is wrong with it)."""
    if len(entry) < _ENTRY_HEADER or not entry.startswith(_ENTRY_MAGIC):
        return None, f"not an hsapy cache entry ({len(entry)} bytes)"
    data = entry[_ENTRY_HEADER:]
    if hashlib.sha256(data).digest() != entry[len(_ENTRY_MAGIC):_ENTRY_HEADER]:
        return None, "its content does not match its SHA-256 (truncated or altered)"
    if data[:4] != b"\x7fELF":
        return None, "its content is not an ELF file"
    return data, ""


def cached_build(route: str, parts: dict, produce: Callable[[], bytes], use_cache: bool,
            label: str) -> bytes:
    """Return the cached code object for ``parts`` or produce and store it. An entry that
    fails its check is reported (a ``cache-bad`` event and a CacheWarning) and rebuilt."""
    if use_cache is not True and use_cache is not False:
        use_cache = check_flag(use_cache, "cache")     # (None or "no" is not read as False)
    if not use_cache:
        return produce()
    key = _cache_key(route, parts)
    path = cache_dir() / "objects" / key[:2] / f"{key}.entry"
    try:
        entry = path.read_bytes()
    except OSError:
        entry = None
    if entry is not None:
        data, problem = _verified(entry)
        if data is not None:
            emit("cache-hit", f"{label}: {path}")
            return data
        message = f"{label}: the cache entry {path} is bad ({problem}); rebuilding it"
        emit("cache-bad", message)
        warnings.warn(f"hsapy build cache: {message}", CacheWarning, stacklevel=3)
    data = produce()
    try:
        atomic_write(path, _cache_entry(data))
        emit("cache-store", f"{label}: {path}")
    except OSError as exc:  # a read-only home must not break builds
        emit("note", f"could not write the cache ({exc}); continuing without it")
    return data


def sha256(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode()
    return hashlib.sha256(data).hexdigest()
