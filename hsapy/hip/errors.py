"""How a HIP call fails: the hipError_t codes, the HipError every call raises, the decorator
that records each failure for hipGetLastError (sticky device faults included), and the argument
checks that raise it before anything reaches a queue."""
from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from hsapy.errors import (
    HSAError,
    HsapyError,
    HsapyTypeError,
    HsapyValueError,
)
from hsapy.hsa_enums import (
    HSA_STATUS_ERROR_EXCEPTION,
    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
    HSA_STATUS_ERROR_INVALID_AGENT,
    HSA_STATUS_ERROR_INVALID_ALLOCATION,
    HSA_STATUS_ERROR_INVALID_ARGUMENT,
    HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
    HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
    HSA_STATUS_ERROR_INVALID_QUEUE,
    HSA_STATUS_ERROR_INVALID_SIGNAL,
    HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
    HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
    HSA_STATUS_ERROR_MEMORY_FAULT,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES,
)

if TYPE_CHECKING:
    from hsapy.hip.runtime import HipRuntime

__all__ = ["hipError_t", "HipError", "STICKY_ERRORS", "HSA_STATUS_TO_HIP", "code_for", "hip_api",
           "expect_type", "byte_count", "no_flags", "dim3", "launch_configuration"]

F = TypeVar("F", bound=Callable[..., Any])


class hipError_t(enum.IntEnum):
    """HIP error codes (values as in hip_runtime_api.h, ROCm 5.x)."""

    hipSuccess = 0
    hipErrorInvalidValue = 1
    hipErrorOutOfMemory = 2
    hipErrorNotInitialized = 3
    hipErrorDeinitialized = 4
    hipErrorInvalidConfiguration = 9
    hipErrorInvalidDevicePointer = 17
    hipErrorInvalidMemcpyDirection = 21
    hipErrorInvalidDeviceFunction = 98
    hipErrorNoDevice = 100
    hipErrorInvalidDevice = 101
    hipErrorInvalidImage = 200
    hipErrorPeerAccessUnsupported = 217
    hipErrorInvalidHandle = 400
    hipErrorNotFound = 500
    hipErrorNotReady = 600
    hipErrorIllegalAddress = 700
    hipErrorLaunchTimeOut = 702
    hipErrorPeerAccessAlreadyEnabled = 704
    hipErrorPeerAccessNotEnabled = 705
    hipErrorIllegalInstruction = 715
    hipErrorLaunchFailure = 719
    hipErrorStreamCaptureUnsupported = 900
    hipErrorUnknown = 999


# Device exceptions leave the context unusable in HIP: they stay (sticky) after being reported.
STICKY_ERRORS = frozenset({hipError_t.hipErrorIllegalAddress, hipError_t.hipErrorIllegalInstruction,
                           hipError_t.hipErrorLaunchFailure})

# hsa_status_t -> hipError_t for failures that come from the HSA runtime (errors.py STATUS_NAMES).
HSA_STATUS_TO_HIP: dict[int, hipError_t] = {
    HSA_STATUS_ERROR_INVALID_ARGUMENT: hipError_t.hipErrorInvalidValue,
    HSA_STATUS_ERROR_INVALID_ALLOCATION: hipError_t.hipErrorOutOfMemory,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES: hipError_t.hipErrorOutOfMemory,
    HSA_STATUS_ERROR_INVALID_AGENT: hipError_t.hipErrorInvalidDevice,
    HSA_STATUS_ERROR_INVALID_SIGNAL: hipError_t.hipErrorInvalidHandle,
    HSA_STATUS_ERROR_INVALID_QUEUE: hipError_t.hipErrorInvalidHandle,
    HSA_STATUS_ERROR_INVALID_CODE_OBJECT: hipError_t.hipErrorInvalidImage,
    HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: hipError_t.hipErrorNotFound,
    HSA_STATUS_ERROR_EXCEPTION: hipError_t.hipErrorLaunchFailure,  # a packet failed
    HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: hipError_t.hipErrorLaunchFailure,
    HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: hipError_t.hipErrorIllegalAddress,
    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: hipError_t.hipErrorIllegalInstruction,
    HSA_STATUS_ERROR_MEMORY_FAULT: hipError_t.hipErrorIllegalAddress,
}


class HipError(HsapyError):
    """A failing HIP call: ``code`` (hipError_t) and ``call`` (the HIP function name).

    The hsapy exception that caused it, if any, is the ``__cause__``."""

    def __init__(self, code: hipError_t, call: str, detail: str = "") -> None:
        self.code = hipError_t(code)
        self.call = call
        self.detail = detail
        text = f"{call} failed: {self.code.name} ({int(self.code)})"
        super().__init__(f"{text}: {detail}" if detail else text)


def code_for(exc: BaseException) -> hipError_t:
    """The hipError_t an hsapy exception stands for."""
    from hsapy.dispatch import DispatchConfigError
    from hsapy.signal import WaitTimeoutError

    if isinstance(exc, HSAError):
        return HSA_STATUS_TO_HIP.get(exc.status, hipError_t.hipErrorUnknown)
    if isinstance(exc, DispatchConfigError):
        return hipError_t.hipErrorInvalidConfiguration
    if isinstance(exc, WaitTimeoutError):
        return hipError_t.hipErrorLaunchTimeOut
    if isinstance(exc, (HsapyValueError, HsapyTypeError)):
        return hipError_t.hipErrorInvalidValue
    return hipError_t.hipErrorUnknown


def hip_api(name: str) -> Callable[[F], F]:
    """Decorate a HipRuntime method as the HIP call ``name``: a sticky error is raised again
    before anything runs; any failure is recorded for hipGetLastError and raised as HipError."""

    def wrap(method: F) -> F:
        @functools.wraps(method)
        def call(self: HipRuntime, *args: Any, **kwargs: Any) -> Any:
            if self._state.closed:
                raise HipError(hipError_t.hipErrorDeinitialized, name,
                               str(self._state.error())) from self._state.error()
            if self._sticky is not None:
                raise HipError(self._sticky, name, "a kernel failed earlier on this device; "
                               "the context is unusable (sticky error)")
            outermost = self._call is None
            if outermost:
                self._call = name            # packets published below are traced under it
            try:
                return method(self, *args, **kwargs)
            except HipError as exc:
                self._record(exc.code)
                if outermost and exc.call != name:     # raised by a call this one made
                    raise HipError(exc.code, name, exc.detail) from exc
                raise
            except HsapyError as exc:
                code = code_for(exc)
                self._record(code)
                raise HipError(code, name, str(exc)) from exc
            finally:
                if outermost:
                    self._call = None

        call.hip_name = name  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return wrap


def dim3(value: Any, what: str) -> tuple[int, int, int]:
    """HIP's dim3 from an int or a 1..3-tuple (missing dimensions are 1); sizes are ints, never
    bools, floats or the characters of a string."""
    from hsapy.kernarg import normalize_dims

    try:
        values, _dims = normalize_dims(value, what)
    except HsapyValueError:
        raise HsapyValueError(f"{what} must be 1 to 3 positive sizes, got {value!r:.60}") from None
    return values


def expect_type(value: Any, kind: type, call: str, what: str,
                code: hipError_t = hipError_t.hipErrorInvalidValue) -> Any:
    """``value`` when it is a ``kind``, else a HipError naming the call and what was given."""
    if not isinstance(value, kind):
        raise HipError(code, call, f"{what} must be a {kind.__name__}, not "
                                   f"{type(value).__name__} {value!r:.40}")
    return value


def byte_count(value: Any, call: str, what: str) -> int:
    """A byte count: an int >= 0 (not a bool), else a HipError naming the parameter ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise HipError(hipError_t.hipErrorInvalidValue, call,
                       f"{what} must be an int >= 0, not {value!r:.40}")
    return int(value)


def no_flags(flags: Any, call: str) -> None:
    """A ``flags`` that HIP defines no flag for: anything but the int 0 is refused there too."""
    if flags.__class__ is not int or flags != 0:
        raise HipError(hipError_t.hipErrorInvalidValue, call,
                       f"flags must be 0, not {flags!r:.40}")


def launch_configuration(grid: tuple[int, int, int], block: tuple[int, int, int],
                         dynamic_lds: int) -> str:
    """The lead of a refused launch's message: the parameters that set its geometry, as given."""
    return f"gridDim {grid}, blockDim {block}, sharedMemBytes {dynamic_lds}: "
