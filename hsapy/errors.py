"""The one exception family of hsapy.

Every failing HSA call becomes an :class:`HSAError` subclass chosen by the status family. The
message is the status name, the runtime's own status string and a curated hint of what to do.
Bad user input that never reaches the runtime raises :class:`HsapyValueError` /
:class:`HsapyTypeError`, which are also ``ValueError`` / ``TypeError``. Any use of an object
after it was closed (by its own ``close()``, by the object that owns it, or by the garbage
collector) raises :class:`ClosedError`, which names the object and what closed it.
"""
from __future__ import annotations

# Status values and names follow hsa.h (ROCm 5.2.3); tests/abi checks them against the header.
STATUS_NAMES: dict[int, str] = {
    0x0: "HSA_STATUS_SUCCESS",
    0x1: "HSA_STATUS_INFO_BREAK",
    0x1000: "HSA_STATUS_ERROR",
    0x1001: "HSA_STATUS_ERROR_INVALID_ARGUMENT",
    0x1002: "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION",
    0x1003: "HSA_STATUS_ERROR_INVALID_ALLOCATION",
    0x1004: "HSA_STATUS_ERROR_INVALID_AGENT",
    0x1005: "HSA_STATUS_ERROR_INVALID_REGION",
    0x1006: "HSA_STATUS_ERROR_INVALID_SIGNAL",
    0x1007: "HSA_STATUS_ERROR_INVALID_QUEUE",
    0x1008: "HSA_STATUS_ERROR_OUT_OF_RESOURCES",
    0x1009: "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT",
    0x100A: "HSA_STATUS_ERROR_RESOURCE_FREE",
    0x100B: "HSA_STATUS_ERROR_NOT_INITIALIZED",
    0x100C: "HSA_STATUS_ERROR_REFCOUNT_OVERFLOW",
    0x100D: "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS",
    0x100E: "HSA_STATUS_ERROR_INVALID_INDEX",
    0x100F: "HSA_STATUS_ERROR_INVALID_ISA",
    0x1017: "HSA_STATUS_ERROR_INVALID_ISA_NAME",
    0x1010: "HSA_STATUS_ERROR_INVALID_CODE_OBJECT",
    0x1011: "HSA_STATUS_ERROR_INVALID_EXECUTABLE",
    0x1012: "HSA_STATUS_ERROR_FROZEN_EXECUTABLE",
    0x1013: "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME",
    0x1014: "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED",
    0x1015: "HSA_STATUS_ERROR_VARIABLE_UNDEFINED",
    0x1016: "HSA_STATUS_ERROR_EXCEPTION",
    0x1018: "HSA_STATUS_ERROR_INVALID_CODE_SYMBOL",
    0x1019: "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL",
    0x1020: "HSA_STATUS_ERROR_INVALID_FILE",
    0x1021: "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER",
    0x1022: "HSA_STATUS_ERROR_INVALID_CACHE",
    0x1023: "HSA_STATUS_ERROR_INVALID_WAVEFRONT",
    0x1024: "HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP",
    0x1025: "HSA_STATUS_ERROR_INVALID_RUNTIME_STATE",
    0x1026: "HSA_STATUS_ERROR_FATAL",
    # hsa_ext_amd.h
    40: "HSA_STATUS_ERROR_INVALID_MEMORY_POOL",
    41: "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION",
    42: "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION",
    43: "HSA_STATUS_ERROR_MEMORY_FAULT",
    44: "HSA_STATUS_CU_MASK_REDUCED",
}

HSA_STATUS_SUCCESS = 0x0
HSA_STATUS_INFO_BREAK = 0x1

_HINTS: dict[int, str] = {
    0x1001: "an argument was out of range or null; check the values passed to this call",
    0x1002: "the queue could not be created; check its size (a power of two within the agent's "
            "queue min/max size) and type",
    0x1003: "the allocation failed; check the size against the pool's size and granule, and that "
            "the pool allows allocation",
    0x1004: "the agent handle is not valid; take agents from Runtime.agents",
    0x1006: "the signal handle is not valid or was destroyed",
    0x1007: "the queue is invalid or has stopped after an error; create a new queue",
    0x1008: "the runtime is out of resources. Without /dev/kfd (no AMD GPU, amdgpu driver not "
            "loaded, or the user not in the render/video groups) hsa_init fails this way; "
            "use --backend sim / HSAPY_BACKEND=sim to run on the simulator",
    0x1009: "a packet in the queue was malformed; hsapy.aql.explain() shows what it contains",
    0x100B: "the runtime is not initialized; use hsapy.Runtime() as a context manager",
    0x100D: "the arguments are incompatible with each other or with the agent",
    0x100F: "the ISA is not valid for this agent",
    0x1010: "the code object is invalid or built for another target; rebuild it for the agent's "
            "ISA (hsapy inspect shows its target)",
    0x1011: "the executable is invalid or not frozen",
    0x1013: "no symbol by that name; kernels are looked up as '<name>.kd'",
    0x1016: "the queue hit an exception while executing a packet (see the queue error callback)",
    40: "the memory pool handle is not valid; take pools from agent.memory_pools",
    41: "a kernel accessed memory outside the apertures it may touch",
    42: "a kernel executed an illegal or unimplemented instruction",
    43: "a kernel accessed an address that is not mapped for the agent",
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
        if self.status == 0x1008 and function != "hsa_init":
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


_FAMILY: dict[int, type[HSAError]] = {}
for _status, _cls in [
    (0x1001, InvalidArgumentError), (0x1004, InvalidArgumentError), (0x1005, InvalidArgumentError),
    (0x1006, InvalidArgumentError), (0x100E, InvalidArgumentError), (0x100D, InvalidArgumentError),
    (0x1024, InvalidArgumentError),
    (0x1008, OutOfResourcesError), (0x1003, OutOfResourcesError), (0x1002, OutOfResourcesError),
    (0x100B, NotInitializedError),
    (0x100F, CodeObjectStatusError), (0x1017, CodeObjectStatusError), (0x1010, CodeObjectStatusError),
    (0x1011, CodeObjectStatusError), (0x1012, CodeObjectStatusError), (0x1013, CodeObjectStatusError),
    (0x1014, CodeObjectStatusError), (0x1015, CodeObjectStatusError), (0x1018, CodeObjectStatusError),
    (0x1019, CodeObjectStatusError), (0x1020, CodeObjectStatusError), (0x1021, CodeObjectStatusError),
    (0x1009, InvalidPacketError),
    (40, InvalidArgumentError),
    (41, MemoryFaultError), (43, MemoryFaultError),
    (0x1007, QueueError), (0x1016, QueueError), (42, QueueError),
]:
    _FAMILY[_status] = _cls


def error_for(status: int, function: str, message: str = "") -> HSAError:
    """Build the exception of the right family for a failing status."""
    return _FAMILY.get(int(status), HSAError)(status, function, message)


def is_error(status: int) -> bool:
    """True for a failing status; SUCCESS and the HSA_STATUS_INFO_* results are not errors."""
    return int(status) not in (HSA_STATUS_SUCCESS, HSA_STATUS_INFO_BREAK, 44)


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
