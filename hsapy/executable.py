"""Executables and kernels, loaded through the runtime's own loader.

``Executable`` loads one code object for one agent exactly as a ROCr user does: the target is
checked first (a code object for another target is refused with both targets named, before any
runtime call), then ``hsa_code_object_reader_create_from_memory`` ->
``hsa_executable_create_alt`` -> ``hsa_executable_load_agent_code_object`` ->
``hsa_executable_freeze``. ``executable.kernel(name)`` looks ``name.kd`` up with
``hsa_executable_get_symbol_by_name`` and returns a :class:`Kernel` with the runtime's
``kernel_object`` and segment sizes plus the metadata's argument layout.

Works the same on both backends (``lib`` is the real libhsa-runtime64 or ``hsapy.sim.SimLib``).
The pythonic way in is ``Runtime.load(code_object, agent)``; :func:`load` is the same call for
code that holds a runtime-like object (anything with ``.lib`` and ``.ffi``).
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

from hsapy._hsa import check
from hsapy._lifetime import HandleState, NotCopyable, release_when_collected
from hsapy.codeobject import (
    CodeObject,
    KernelDescriptor,
    KernelInfo,
    Target,
    TargetMismatchError,
    extract_for_target,
    read_code_object_file,
)
from hsapy.dispatch import Launchable
from hsapy.dispatch import launch as dispatch_launch
from hsapy.dispatch import prepare as dispatch_prepare
from hsapy.errors import HsapyTypeError, HsapyValueError
from hsapy.hsa_enums import (
    HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT,
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
    HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS,
    HSA_ISA_INFO_NAME,
    HSA_ISA_INFO_NAME_LENGTH,
    HSA_PROFILE_FULL,
    HSA_STATUS_INFO_BREAK,
    HSA_STATUS_SUCCESS,
)
from hsapy.kernarg import KernargLayout
from hsapy.observers import OBSERVERS, notify

__all__ = ["Executable", "Kernel", "load", "agent_target", "DYNAMIC_STACK_SIZE"]

# Private bytes per work-item a kernel with a dynamic stack (.uses_dynamic_stack: recursion,
# indirect calls) gets at least: HIP's default stack limit (hipLimitStackSize, 1 KiB), which
# HIP's launcher puts in the packet's private_segment_size for such kernels.
DYNAMIC_STACK_SIZE = 1024


def _handle_of(agent: Any) -> int:
    """The int handle of an Agent object, a cdata hsa_agent_t, a dict or an int."""
    if isinstance(agent, int):
        return agent
    handle: Any = getattr(agent, "handle", None)
    if handle is None and isinstance(agent, dict):
        handle = agent.get("handle")
    if not isinstance(handle, int):
        try:
            handle = int(handle)
        except (TypeError, ValueError):
            raise HsapyTypeError(f"expected an agent (from Runtime.gpu_agents), not {agent!r}") \
                from None
    return handle


def agent_target(lib: Any, ffi: Any, agent: Any) -> Target:
    """The agent's target (name + xnack/sramecc), from its ISA name as the runtime reports it."""
    names = getattr(agent, "isa_names", None)
    if names:
        return Target.parse(names[0])
    found: list[str] = []
    errors: list[BaseException] = []

    def on_isa(isa: Any, data: Any) -> int:
        try:
            length = ffi.new("uint32_t *")
            status = lib.hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME_LENGTH, length)
            if status != HSA_STATUS_SUCCESS:
                return HSA_STATUS_SUCCESS
            name = ffi.new("char[]", length[0] + 1)
            if lib.hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME, name) == HSA_STATUS_SUCCESS:
                found.append(ffi.string(name).decode(errors="replace"))
        except BaseException as exc:  # never raise through C
            errors.append(exc)
            return HSA_STATUS_INFO_BREAK
        return HSA_STATUS_SUCCESS

    callback = ffi.callback("hsa_status_t(hsa_isa_t, void *)", on_isa)
    status = lib.hsa_agent_iterate_isas({"handle": _handle_of(agent)}, callback, ffi.NULL)
    if errors:
        raise errors[0]
    if status != HSA_STATUS_INFO_BREAK:
        check(status, "hsa_agent_iterate_isas", lib)
    if not found:
        raise HsapyValueError(f"agent {agent!r} has no ISA: it cannot run kernels (is it the CPU?)")
    return Target.parse(found[0])


def _read_input(code_object: Any) -> tuple[bytes | None, CodeObject | None, str]:
    """(raw bytes, parsed CodeObject, description) from bytes, a path or a CodeObject."""
    if isinstance(code_object, CodeObject):
        return None, code_object, repr(code_object)
    if isinstance(code_object, (bytes, bytearray, memoryview)):
        return bytes(code_object), None, f"{len(code_object)} bytes"
    if isinstance(code_object, (str, os.PathLike)):
        path = Path(code_object)
        try:
            return read_code_object_file(path), None, str(path)
        except OSError as exc:
            raise HsapyValueError(f"code_object: cannot read code object {path}: "
                                  f"{exc.strerror}") from None
    raise HsapyTypeError(
        "code_object: a code object is bytes, a path, or a hsapy.codeobject.CodeObject, not "
        f"{type(code_object).__name__}"
    )


class _ExecutableState:
    """The handles the release needs: never references the Executable itself."""

    def __init__(self, lib: Any, ffi: Any) -> None:
        self.lib = lib
        self.ffi = ffi
        self.executable = 0
        self.reader = 0
        self.buffer: Any = None
        self.closed = False

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for function, handle in (("hsa_executable_destroy", self.executable),
                                 ("hsa_code_object_reader_destroy", self.reader)):
            if not handle:
                continue
            try:
                status = getattr(self.lib, function)({"handle": handle})
                if status != HSA_STATUS_SUCCESS:
                    warnings.warn(f"{function} returned {status:#x} while closing an executable",
                                  ResourceWarning, stacklevel=2)
            except Exception as exc:  # cleanup never raises
                warnings.warn(f"{function} failed while closing an executable: {exc}",
                              ResourceWarning, stacklevel=2)
        self.executable = 0
        self.reader = 0
        self.buffer = None


def _destroy_when_idle(runtime: Any, handles: _ExecutableState) -> Callable[[], None]:
    """The executable's release. Prepared launches of its kernels step aside first (every
    kernarg slot becomes nobody's, so their next call takes the checked way and raises
    ClosedError); the code is destroyed at once, or, while dispatches are in flight (one may run
    this code), once they completed (Runtime._after_dispatches)."""
    def release() -> None:
        trackers = getattr(runtime, "_dispatch_trackers", None)
        if trackers is None:          # a runtime-like object without hsapy.dispatch
            handles.close()
            return
        for tracker in list(trackers):
            forget_all = getattr(tracker, "forget_all", None)
            if forget_all is not None:
                forget_all()
        runtime._after_dispatches(handles.close)
    return release


class Executable(NotCopyable):
    """One code object loaded and frozen for one agent. Create with ``Runtime.load``.

    ``code_object`` (the parsed :class:`~hsapy.codeobject.CodeObject`), ``target``, ``agent``,
    ``handle`` (the hsa_executable_t handle as int), ``kernel_names``; ``kernel(name)``;
    ``variable_address(name)``. ``close()`` is idempotent; also a context manager.
    """

    def __init__(self, runtime: Any, code_object: Any, agent: Any) -> None:
        lib = runtime.lib
        ffi = runtime.ffi
        self.runtime = runtime  # children hold their parents (docs/architecture.md "Lifetimes")
        self.agent = agent
        self._agent_handle = _handle_of(agent)
        self.target = agent_target(lib, ffi, agent)
        raw, parsed, description = _read_input(code_object)
        if parsed is None:
            # (raw is the bytes when nothing was parsed; see _read_input)
            data = extract_for_target(cast(bytes, raw), self.target)  # refuses another target
            parsed = CodeObject.from_bytes(data)
        else:
            data = parsed.data
            if not self.target.accepts(parsed.target):
                raise TargetMismatchError(str(parsed.target), str(self.target))
        self.code_object = parsed
        self.description = description
        self._kernels: dict[str, Kernel] = {}
        handles = _ExecutableState(lib, ffi)
        self._handles = handles
        # One HandleState (hsapy/_lifetime.py): the runtime releases it before hsa_shut_down.
        self._state = HandleState("Executable", _destroy_when_idle(runtime, handles),
                                  what=f"executable of {description} for {self.target}")
        track = getattr(runtime, "_track", None)
        if track is not None:
            track(self._state)
        self._finalizer = release_when_collected(self, self._state)
        try:
            self._load(lib, ffi, handles, data)
        except BaseException:
            self.close()
            raise

    def _load(self, lib: Any, ffi: Any, state: _ExecutableState, data: bytes) -> None:
        # ROCr does not copy the code object: its memory must outlive the reader and the
        # loaded code object (the debugger reads it), so the buffer lives with the state.
        state.buffer = ffi.new("char[]", data)
        reader = ffi.new("hsa_code_object_reader_t *")
        status = lib.hsa_code_object_reader_create_from_memory(state.buffer, len(data), reader)
        check(status, "hsa_code_object_reader_create_from_memory", lib)
        state.reader = int(reader[0].handle)
        executable = ffi.new("hsa_executable_t *")
        status = lib.hsa_executable_create_alt(HSA_PROFILE_FULL,
                                               HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                                               ffi.NULL, executable)
        check(status, "hsa_executable_create_alt", lib)
        state.executable = int(executable[0].handle)
        status = lib.hsa_executable_load_agent_code_object(
            {"handle": state.executable}, {"handle": self._agent_handle},
            {"handle": state.reader}, ffi.NULL, ffi.NULL)
        check(status, "hsa_executable_load_agent_code_object", lib)
        status = lib.hsa_executable_freeze({"handle": state.executable}, ffi.NULL)
        check(status, "hsa_executable_freeze", lib)

    # -- lifetime -----------------------------------------------------------------------------

    def close(self) -> None:
        """Destroy the executable and its reader (idempotent; warns, never raises). Its kernels
        can no longer be prepared or launched (ClosedError); dispatches in flight finish first:
        the code is destroyed once they completed."""
        self._finalizer.detach()
        self._state.close()

    @property
    def is_closed(self) -> bool:
        """True after close()."""
        return self._state.closed

    def __enter__(self) -> Executable:
        self._state.check()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.is_closed else f"handle {self.handle:#x}"
        return (f"<Executable {self.code_object.target} v{self.code_object.version} "
                f"({', '.join(self.kernel_names)}) on {self.target}, {state}>")

    @property
    def handle(self) -> int:
        """The hsa_executable_t handle (ClosedError once closed: it names nothing then)."""
        return self._require_open().executable

    @property
    def kernel_names(self) -> list[str]:
        """The kernels of the code object, in metadata order."""
        return list(self.code_object.kernels)

    def __iter__(self) -> Iterator[Kernel]:
        return (self.kernel(name) for name in self.kernel_names)

    def _require_open(self) -> _ExecutableState:
        self._state.check()
        return self._handles

    def _symbol(self, name: str) -> int:
        state = self._require_open()
        ffi, lib = state.ffi, state.lib
        symbol = ffi.new("hsa_executable_symbol_t *")
        agent = ffi.new("hsa_agent_t *", {"handle": self._agent_handle})
        status = lib.hsa_executable_get_symbol_by_name({"handle": state.executable},
                                                       name.encode(), agent, symbol)
        check(status, f"hsa_executable_get_symbol_by_name({name!r})", lib)
        return int(symbol[0].handle)

    def _symbol_info(self, symbol: int, attribute: int, ctype: str) -> int:
        state = self._handles
        out = state.ffi.new(ctype + " *")
        status = state.lib.hsa_executable_symbol_get_info({"handle": symbol}, attribute, out)
        check(status, "hsa_executable_symbol_get_info", state.lib)
        return int(out[0])

    def kernel(self, name: str) -> Kernel:
        """The kernel ``name`` (``name.kd`` accepted); unknown names list the kernels."""
        if not isinstance(name, str):
            raise HsapyTypeError(f"a kernel name is a str, not {type(name).__name__}")
        self._state.check()
        info = self.code_object.kernel(name)   # CodeObjectError listing the kernels
        cached = self._kernels.get(info.name)
        if cached is None:
            cached = Kernel(self, info)
            self._kernels[info.name] = cached
        return cached

    def variable_address(self, name: str) -> int:
        """Device address of a global variable of the code object (e.g. a ``__device__`` array)."""
        if not isinstance(name, str):
            raise HsapyTypeError(f"a variable name is a str, not {type(name).__name__}")
        symbol = self._symbol(name)
        return self._symbol_info(symbol, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS, "uint64_t")


class Kernel(Launchable):
    """A loaded kernel: what a dispatch packet needs, and how to lay out its arguments.

    ``kernel_object`` (descriptor address), ``kernarg_size`` / ``kernarg_align`` (runtime's
    answers; the alignment is at least the metadata's), ``group_segment_size`` and
    ``private_segment_size`` (static bytes), ``wavefront_size``, ``max_flat_workgroup_size``,
    ``layout`` (:class:`~hsapy.kernarg.KernargLayout`), ``info`` (metadata), ``descriptor``.
    Launching is in hsapy.dispatch.
    """

    def __init__(self, executable: Executable, info: KernelInfo) -> None:
        self.executable = executable
        self.info = info
        self.name = info.name
        symbol = executable._symbol(info.symbol)
        get = executable._symbol_info
        self.kernel_object = get(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, "uint64_t")
        self.kernarg_size = get(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                                "uint32_t")
        runtime_align = get(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT,
                            "uint32_t")
        self.kernarg_align = max(runtime_align, info.kernarg_segment_align, 1)
        self.group_segment_size = get(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
                                      "uint32_t")
        self.private_segment_size = get(
            symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, "uint32_t")
        if info.uses_dynamic_stack:
            # recursion or indirect calls: the compiler cannot size the stack, and the launcher
            # gives at least HIP's default stack (hipLimitStackSize, 1 KiB per work-item)
            self.private_segment_size = max(self.private_segment_size, DYNAMIC_STACK_SIZE)
        self.wavefront_size = info.wavefront_size
        self.max_flat_workgroup_size = info.max_flat_workgroup_size
        self.layout = KernargLayout.from_kernel(info, runtime=executable.runtime)
        if self.kernarg_size < self.layout.size:
            # The descriptor's kernarg_size is what the runtime reports; the metadata's segment
            # size is what the kernel reads. Allocate for the larger.
            self.kernarg_size = self.layout.size
        if OBSERVERS:
            notify("kernel_loaded", self)

    @property
    def descriptor(self) -> KernelDescriptor:
        """The decoded kernel descriptor (from the code object)."""
        return self.info.descriptor

    @property
    def signature(self) -> str:
        """The explicit arguments with their offsets, e.g. ``dims(out: ptr @0, scale: ...)``."""
        return self.layout.signature

    def with_types(self, *types: Any) -> Kernel:
        """Declare the explicit argument types (see KernargLayout.with_types); returns self."""
        self.layout = self.layout.with_types(*types)
        return self

    # ``kernel.prepare(queue, grid, workgroup, ...)`` and ``kernel.launch(queue, args, grid,
    # workgroup, ...)`` are the functions of hsapy.dispatch themselves (their first parameter
    # is the kernel), so a launch runs no forwarding frame.
    prepare = dispatch_prepare
    launch = dispatch_launch

    def __repr__(self) -> str:
        return (f"<Kernel {self.signature} kernel_object={self.kernel_object:#x} "
                f"kernarg={self.kernarg_size}B/{self.kernarg_align} "
                f"lds={self.group_segment_size} scratch={self.private_segment_size} "
                f"wave{self.wavefront_size}>")


def load(runtime: Any, code_object: Any, agent: Any) -> Executable:
    """Load ``code_object`` (bytes, path, bundle or CodeObject) for ``agent`` of ``runtime``."""
    return Executable(runtime, code_object, agent)
