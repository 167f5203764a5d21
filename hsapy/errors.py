"""The one exception family of hsapy.

Every failing HSA call becomes an :class:`HSAError` subclass chosen by the status family. The
message is the status name, the runtime's own status string and a curated hint of what to do.
Bad user input that never reaches the runtime raises :class:`HsapyValueError` /
:class:`HsapyTypeError`, which are also ``ValueError`` / ``TypeError``. Any use of an object
after it was closed (by its own ``close()``, by the object that owns it, or by the garbage
collector) raises :class:`ClosedError`, which names the object and what closed it.
"""
from __future__ import annotations

from hsapy import hsa_enums as S
from hsapy.hsa_enums import STATUS_NAMES as STATUS_NAMES

_HINTS: dict[int, str] = {
    S.HSA_STATUS_ERROR_INVALID_ARGUMENT:
        "an argument was out of range or null; check the values passed to this call",
    S.HSA_STATUS_ERROR_INVALID_QUEUE_CREATION:
        "the queue could not be created; check its size (a power of two within the agent's "
        "queue min/max size) and type",
    S.HSA_STATUS_ERROR_INVALID_ALLOCATION:
        "the allocation failed; check the size against the pool's size and granule, and that "
        "the pool allows allocation",
    S.HSA_STATUS_ERROR_INVALID_AGENT:
        "the agent handle is not valid; take agents from Runtime.agents",
    S.HSA_STATUS_ERROR_INVALID_SIGNAL: "the signal handle is not valid or was destroyed",
    S.HSA_STATUS_ERROR_INVALID_QUEUE:
        "the queue is invalid or has stopped after an error; create a new queue",
    S.HSA_STATUS_ERROR_OUT_OF_RESOURCES:
        "the runtime is out of resources. Without /dev/kfd (no AMD GPU, amdgpu driver not "
        "loaded, or the user not in the render/video groups) hsa_init fails this way; "
        "use --backend sim / HSAPY_BACKEND=sim to run on the simulator",
    S.HSA_STATUS_ERROR_INVALID_PACKET_FORMAT:
        "a packet in the queue was malformed; hsapy.aql.explain() shows what it contains",
    S.HSA_STATUS_ERROR_NOT_INITIALIZED:
        "the runtime is not initialized; use hsapy.Runtime() as a context manager",
    S.HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS:
        "the arguments are incompatible with each other or with the agent",
    S.HSA_STATUS_ERROR_INVALID_ISA: "the ISA is not valid for this agent",
    S.HSA_STATUS_ERROR_INVALID_CODE_OBJECT:
        "the code object is invalid or built for another target; rebuild it for the agent's "
        "ISA (hsapy inspect shows its target)",
    S.HSA_STATUS_ERROR_INVALID_EXECUTABLE: "the executable is invalid or not frozen",
    S.HSA_STATUS_ERROR_INVALID_SYMBOL_NAME:
        "no symbol by that name; kernels are looked up as '<name>.kd'",
    S.HSA_STATUS_ERROR_EXCEPTION:
        "the queue hit an exception while executing a packet (see the queue error callback)",
    S.HSA_STATUS_ERROR_INVALID_MEMORY_POOL:
        "the memory pool handle is not valid; take pools from agent.memory_pools",
    S.HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION:
        "a kernel accessed memory outside the apertures it may touch",
    S.HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION:
        "a kernel executed an illegal or unimplemented instruction",
    S.HSA_STATUS_ERROR_MEMORY_FAULT:
        "a kernel accessed an address that is not mapped for the agent",
}


class HsapyError(Exception):
    """Root of every exception hsapy raises on purpose."""


class HSAError(HsapyError):
    """A failing HSA runtime call (or packet processing failure reported by a queue).

    ``status`` is the numeric ``hsa_status_t``; ``function`` names the call that failed.
    """

    def __init__(self, status: int, function: str, message: str = "") -> None:
        self.status = int(status)
        self.function = function
        self.status_name = STATUS_NAMES.get(self.status, f"HSA status {self.status:#x}")
        self.detail = message
        text = f"{function} failed: {self.status_name}"
        if message:
            text += f" ({message})"
        hint = _HINTS.get(self.status)
        if self.status == S.HSA_STATUS_ERROR_OUT_OF_RESOURCES and function != "hsa_init":
            # Only hsa_init fails this way for want of /dev/kfd; elsewhere it is exhaustion.
            hint = ("the runtime is out of resources (memory, queues or signals); free what is "
                    "no longer needed or ask for less")
        if hint:
            text += f". {hint[0].upper()}{hint[1:]}."
        super().__init__(text)

    def __reduce__(self) -> tuple:
        # rebuild from the constructor's arguments (pickling, multiprocessing, copy)
        return (type(self), (self.status, self.function, self.detail))


class InvalidArgumentError(HSAError):
    """HSA_STATUS_ERROR_INVALID_ARGUMENT and the invalid-handle statuses."""


class OutOfResourcesError(HSAError):
    """HSA_STATUS_ERROR_OUT_OF_RESOURCES, INVALID_ALLOCATION, INVALID_QUEUE_CREATION."""


class NotInitializedError(HSAError):
    """HSA_STATUS_ERROR_NOT_INITIALIZED."""


class CodeObjectStatusError(HSAError):
    """The runtime rejected a code object, ISA, executable or symbol."""


class InvalidPacketError(HSAError):
    """HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: a queue stopped on a malformed packet."""


class MemoryFaultError(HSAError):
    """A kernel faulted on memory (MEMORY_FAULT / MEMORY_APERTURE_VIOLATION)."""


class QueueError(HSAError):
    """A queue stopped with an exception or illegal instruction, or is no longer usable."""


_FAMILIES: dict[type[HSAError], tuple[int, ...]] = {
    InvalidArgumentError: (
        S.HSA_STATUS_ERROR_INVALID_ARGUMENT, S.HSA_STATUS_ERROR_INVALID_AGENT,
        S.HSA_STATUS_ERROR_INVALID_REGION, S.HSA_STATUS_ERROR_INVALID_SIGNAL,
        S.HSA_STATUS_ERROR_INVALID_INDEX, S.HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
        S.HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP, S.HSA_STATUS_ERROR_INVALID_MEMORY_POOL),
    OutOfResourcesError: (
        S.HSA_STATUS_ERROR_OUT_OF_RESOURCES, S.HSA_STATUS_ERROR_INVALID_ALLOCATION,
        S.HSA_STATUS_ERROR_INVALID_QUEUE_CREATION),
    NotInitializedError: (S.HSA_STATUS_ERROR_NOT_INITIALIZED,),
    CodeObjectStatusError: (
        S.HSA_STATUS_ERROR_INVALID_ISA, S.HSA_STATUS_ERROR_INVALID_ISA_NAME,
        S.HSA_STATUS_ERROR_INVALID_CODE_OBJECT, S.HSA_STATUS_ERROR_INVALID_EXECUTABLE,
        S.HSA_STATUS_ERROR_FROZEN_EXECUTABLE, S.HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
        S.HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED, S.HSA_STATUS_ERROR_VARIABLE_UNDEFINED,
        S.HSA_STATUS_ERROR_INVALID_CODE_SYMBOL, S.HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL,
        S.HSA_STATUS_ERROR_INVALID_FILE, S.HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER),
    InvalidPacketError: (S.HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,),
    MemoryFaultError: (
        S.HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, S.HSA_STATUS_ERROR_MEMORY_FAULT),
    QueueError: (
        S.HSA_STATUS_ERROR_INVALID_QUEUE, S.HSA_STATUS_ERROR_EXCEPTION,
        S.HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION),
}
_FAMILY: dict[int, type[HSAError]] = {
    status: family for family, statuses in _FAMILIES.items() for status in statuses}


def error_for(status: int, function: str, message: str = "") -> HSAError:
    """Build the exception of the right family for a failing status."""
    return _FAMILY.get(int(status), HSAError)(status, function, message)


_RESULTS = (S.HSA_STATUS_SUCCESS, S.HSA_STATUS_INFO_BREAK, S.HSA_STATUS_CU_MASK_REDUCED)


def is_error(status: int) -> bool:
    """True for a failing status; SUCCESS and the HSA_STATUS_INFO_* results are not errors."""
    return int(status) not in _RESULTS


class HsapyValueError(HsapyError, ValueError):
    """Bad user input caught before anything reaches the runtime or a queue."""


class HsapyTypeError(HsapyError, TypeError):
    """An argument of the wrong type caught before anything reaches the runtime or a queue."""


class BackendUnavailableError(HsapyError):
    """The backend asked for cannot start on this machine (``Runtime(backend="rocr")`` without a
    usable libhsa-runtime64 or /dev/kfd). The message is one line saying why (hsapy.diagnose);
    ``__cause__`` is the runtime's own error."""


class LibraryNotFoundError(HsapyError, OSError):
    """No libhsa-runtime64 was found on any of the paths tried."""


class LibraryLoadError(HsapyError, OSError):
    """A libhsa-runtime64 was found but could not be loaded (wrong architecture, missing deps)."""


class WaitTimeoutError(HsapyError, TimeoutError):
    """A wait (signal, queue space, dispatch completion) ran out of time."""


class ClosedError(HsapyValueError):
    """An object was used after it was closed: ``what`` names the object, ``closed_by`` what
    closed it (e.g. ``"Buffer.close()"``, ``"Runtime.close()"``, ``"garbage collection"``).

    A ``ValueError``, as Python's own "I/O operation on closed file" is. Raised before anything
    reaches the runtime or a queue, so nothing was changed by the refused call."""

    def __init__(self, what: str, closed_by: str, hint: str = "") -> None:
        self.what = what
        self.closed_by = closed_by
        self.hint = hint
        text = f"{what} is closed (by {closed_by})"
        super().__init__(f"{text}: {hint}" if hint else text)

    def __reduce__(self) -> tuple:
        return (type(self), (self.what, self.closed_by, self.hint))
