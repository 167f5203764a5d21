"""Sharing memory with other array libraries: DLPack, the numpy array interface, and the data
pointers of other libraries' arrays as kernel arguments.

Export (``Buffer.__dlpack__`` / ``Buffer.view(dtype, shape)``): a :class:`Buffer` or a typed
:class:`BufferView` of one is a DLPack producer, so ``numpy.from_dlpack``, ``torch.from_dlpack``
and ``cupy.from_dlpack`` share its memory without a copy. The device it reports
(``__dlpack_device__``):

- memory the host may touch (system and kernarg pools, fine-grained pools) is ``kDLCPU``: what
  numpy and CPU torch accept. (The DLPack header also has ``kDLROCMHost``, "pinned ROCm CPU
  memory allocated by hipMallocHost"; numpy and torch refuse it, and hsapy's pools are not
  hipMallocHost allocations, so hsapy does not use it.)
- coarse-grained device memory is ``kDLROCM`` with the GPU's index among the runtime's GPU
  agents: the HIP device ordinal torch and CuPy on ROCm use (with no HIP_VISIBLE_DEVICES).

Capsules follow the DLPack 1.0 Python specification (data-apis.org, "DLPack Python
specification"): a consumer passing ``max_version`` with major >= 1 gets a
``DLManagedTensorVersioned`` in a capsule named ``dltensor_versioned``, others the legacy
``DLManagedTensor`` in ``dltensor``. The exported tensor holds the buffer's memory (the same
reference a numpy view holds) until the consumer calls the tensor's deleter, so ``close()``
while a consumer still has it defers the free, exactly as for views. A capsule nobody consumed
gives the tensor back when it is collected. hsapy keeps no per-buffer record of dispatches in
flight: export after the dispatches that write the memory have completed (``launch`` waits by
default); the ``stream`` argument is accepted and not used.

The structures are declared with cffi (their own small cdef, from dlpack.h v1.0); the capsule
itself comes from the Python C API through ``ctypes.pythonapi``, because cffi's ABI mode cannot
hand back a ``PyObject *``. The deleter and the capsule destructor are numpy's C functions for
the tensors numpy exports (see "who frees an exported tensor" below for why not Python ones).

Import (:func:`pointer_argument`): a kernel pointer argument may be any object that exposes its
data pointer through ``__cuda_array_interface__``, ``__array_interface__``, ``data_ptr()`` or
``__dlpack__``, provided the runtime knows the memory (``hsa_amd_pointer_info`` reports an
allocation of it); anything else is refused before a packet is written.
"""
from __future__ import annotations

import ctypes
import enum
import functools
import math
import operator
from dataclasses import dataclass
from typing import Any

import cffi
import numpy as np

from hsapy._checks import check_int, check_items
from hsapy._lifetime import NotCopyable
from hsapy.errors import ClosedError, HsapyError, HsapyTypeError, HsapyValueError

__all__ = ["BufferView", "DLDeviceType", "DLPACK_VERSION", "DLPackExportError",
           "NotHostAccessibleError", "data_pointer", "pointer_argument", "runtime_allocation"]

# The DLPack ABI version whose structures are declared below.
DLPACK_VERSION = (1, 0)


class DLDeviceType(enum.IntEnum):
    """DLDeviceType values of dlpack.h (the ones hsapy produces or meets)."""

    CPU = 1
    CUDA = 2
    CUDA_HOST = 3
    ROCM = 10
    ROCM_HOST = 11
    CUDA_MANAGED = 13


class DLPackExportError(HsapyError, BufferError):
    """A DLPack export that cannot be made as asked (device, copy); the DLPack specification
    has producers raise BufferError."""


class NotHostAccessibleError(HsapyTypeError):
    """The host cannot view this memory (coarse-grained device memory): copy it instead."""


# dlpack.h v1.0 (github.com/dmlc/dlpack, include/dlpack/dlpack.h).
_CDEF = """
typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
    void *data; DLDevice device; int32_t ndim; DLDataType dtype;
    int64_t *shape; int64_t *strides; uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor; void *manager_ctx; void (*deleter)(struct DLManagedTensor *);
} DLManagedTensor;
typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
typedef struct DLManagedTensorVersioned {
    DLPackVersion version; void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *); uint64_t flags; DLTensor dl_tensor;
} DLManagedTensorVersioned;
"""
ffi = cffi.FFI()
ffi.cdef(_CDEF)

_NAME_VERSIONED = b"dltensor_versioned"
_NAME_LEGACY = b"dltensor"
_FLAG_IS_COPIED = 1 << 1        # DLPACK_FLAG_BITMASK_IS_COPIED

# DLDataTypeCode by numpy dtype kind (kDLInt 0, kDLUInt 1, kDLFloat 2, kDLComplex 5, kDLBool 6).
_TYPE_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}

# Python C API functions with the argument types used here (prototypes of their own: the shared
# ctypes.pythonapi attributes are left as other code may have set them). The *_raw forms take the
# object as a plain pointer: a destructor runs while the capsule is being deallocated, and a
# py_object argument would take a new reference to it.
_api = ctypes.pythonapi
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", _api))
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_get_destructor = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object)(
    ("PyCapsule_GetDestructor", _api))
_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_get_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_mem_malloc = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t)(("PyMem_Malloc", _api))
_mem_free = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(("PyMem_Free", _api))
_incref = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_IncRef", _api))
_decref = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_DecRef", _api))

_STRUCTS = {_NAME_VERSIONED: "DLManagedTensorVersioned", _NAME_LEGACY: "DLManagedTensor"}


# -- who frees an exported tensor ----------------------------------------------------------
#
# A consumer may call the tensor's deleter -- and drop a capsule it refused -- while its own
# Python error is set (numpy's from_dlpack does, refusing a device). A Python callback cannot run
# then: cffi does not save and restore the error indicator around it, and the first C call in it
# fails. So the deleter and the capsule destructor are C: numpy's, for the tensors numpy exports
# itself. numpy's deleter frees one PyMem block (the structure, then shape and strides) and drops
# a reference to the Python object in manager_ctx, under the GIL; its destructor calls the deleter
# of a capsule nobody consumed. hsapy lays its tensors out the same way, checked on a tensor numpy
# makes; where that check fails, Python callbacks stand in (correct except in such error paths).

@dataclass(frozen=True)
class _Freeing:
    """How tensors of one capsule kind are freed."""

    deleter: int            # void (*)(DLManagedTensor[Versioned] *)
    destructor: int         # void (*)(PyObject *capsule)
    numpy_layout: bool      # one PyMem block; manager_ctx is a strong reference


# struct address -> what the tensor keeps alive, for tensors freed by the Python callbacks.
_exports: dict[int, tuple[Any, ...]] = {}


def _release(address: int) -> None:
    _exports.pop(address, None)


@ffi.callback("void(DLManagedTensorVersioned *)")
def _delete_versioned(tensor: Any) -> None:
    _release(int(ffi.cast("uintptr_t", tensor)))


@ffi.callback("void(DLManagedTensor *)")
def _delete_legacy(tensor: Any) -> None:
    _release(int(ffi.cast("uintptr_t", tensor)))


@ffi.callback("void(void *)")
def _capsule_destructor(capsule: Any) -> None:
    # A consumer renames the capsule it took ("used_dltensor..."); one still carrying its
    # original name was never consumed and still owns its tensor (DLPack Python specification).
    raw = int(ffi.cast("uintptr_t", capsule))
    for name in (_NAME_VERSIONED, _NAME_LEGACY):
        if _is_valid_raw(raw, name):
            _release(_get_pointer_raw(raw, name) or 0)
            return


def _shape_offset(struct: str) -> int:
    size = ffi.sizeof(struct)
    return size + (-size) % ffi.sizeof("int64_t")


@functools.cache
def _freeing(name: bytes) -> _Freeing:
    """numpy's deleter and destructor for capsules called ``name`` when numpy's own tensors are
    laid out as :func:`_capsule` lays out hsapy's, else the Python callbacks."""
    struct = _STRUCTS[name]
    python = _Freeing(int(ffi.cast("uintptr_t", _delete_versioned if name == _NAME_VERSIONED
                                   else _delete_legacy)),
                      int(ffi.cast("uintptr_t", _capsule_destructor)), numpy_layout=False)
    sample = np.zeros((2, 3), np.float32)
    try:
        capsule = (sample.__dlpack__(max_version=DLPACK_VERSION) if name == _NAME_VERSIONED
                   else sample.__dlpack__())
    except TypeError:                       # numpy 2.0 makes no versioned capsules
        return python
    if not _is_valid(capsule, name):
        return python
    address = _get_pointer(capsule, name)
    managed = ffi.cast(struct + " *", address)
    shape = int(ffi.cast("uintptr_t", managed.dl_tensor.shape))
    if int(ffi.cast("uintptr_t", managed.manager_ctx)) != id(sample) or \
            shape != address + _shape_offset(struct) or not managed.deleter:
        return python
    return _Freeing(int(ffi.cast("uintptr_t", managed.deleter)), _get_destructor(capsule) or 0,
                    numpy_layout=True)


def _data_type(dtype: np.dtype) -> tuple[int, int, int]:
    code = _TYPE_CODES.get(dtype.kind)
    if code is None or not dtype.isnative or dtype.subdtype is not None:
        raise HsapyTypeError(
            f"DLPack carries booleans, integers, floats and complex numbers in native byte order,"
            f" not {dtype}")
    return code, 8 * dtype.itemsize, 1


def _capsule(address: int, offset: int, dtype: np.dtype, shape: tuple[int, ...],
             device: tuple[int, int], keepalive: Any, versioned: bool, copied: bool) -> Any:
    """A DLPack capsule describing ``shape`` elements of ``dtype``, C-contiguous, at
    ``address + offset`` on ``device``; ``keepalive`` lives until the tensor's deleter runs."""
    name = _NAME_VERSIONED if versioned else _NAME_LEGACY
    struct = _STRUCTS[name]
    freeing = _freeing(name)
    ndim = len(shape)
    nbytes = _shape_offset(struct) + 2 * ffi.sizeof("int64_t") * max(ndim, 1)
    if freeing.numpy_layout:
        block = _mem_malloc(nbytes)
        if not block:
            raise MemoryError("PyMem_Malloc failed for a DLPack tensor")
        ffi.memmove(ffi.cast("void *", block), b"\0" * nbytes, nbytes)
        owned = None
    else:
        owned = ffi.new("char[]", nbytes)
        block = int(ffi.cast("uintptr_t", owned))
    managed = ffi.cast(struct + " *", block)
    if versioned:
        managed.version.major, managed.version.minor = DLPACK_VERSION
        managed.flags = _FLAG_IS_COPIED if copied else 0
    managed.deleter = ffi.cast(f"void (*)({struct} *)", freeing.deleter)
    shape_array = ffi.cast("int64_t *", block + _shape_offset(struct))
    strides_array = shape_array + ndim
    stride = 1
    for axis in reversed(range(ndim)):
        shape_array[axis] = shape[axis]
        strides_array[axis] = stride
        stride *= max(shape[axis], 1)
    tensor = managed.dl_tensor
    # The specification asks for the allocation's base in ``data``, any offset in
    # ``byte_offset``.
    tensor.data = ffi.cast("void *", address)
    tensor.byte_offset = offset
    tensor.device.device_type, tensor.device.device_id = device
    tensor.ndim = ndim
    tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes = _data_type(dtype)
    tensor.shape = shape_array
    tensor.strides = strides_array
    if freeing.numpy_layout:
        _incref(keepalive)        # the reference numpy's deleter drops
        managed.manager_ctx = ffi.cast("void *", id(keepalive))
    else:
        _exports[block] = (owned, keepalive)
    try:
        return _capsule_new(block, name, freeing.destructor)
    except BaseException:
        if freeing.numpy_layout:
            _decref(keepalive)
            _mem_free(block)
        else:
            _release(block)
        raise


class BufferView(NotCopyable):
    """Elements of ``dtype`` in ``shape`` (C order) at ``offset`` bytes into a Buffer: what
    ``buffer.view(dtype, shape, offset)`` returns. A DLPack producer (``torch.from_dlpack(view)``
    gets a typed tensor), ``__array_interface__`` where the host may touch the memory, and a
    kernel pointer argument (``address``)."""

    __slots__ = ("buffer", "dtype", "shape", "offset", "_owner")

    def __init__(self, buffer: Any, owner: Any, dtype: Any = np.uint8, shape: Any = None,
                 offset: int = 0) -> None:
        if dtype is None:       # numpy would read it as float64
            raise HsapyTypeError("Buffer.view: dtype is a numpy dtype such as numpy.float32 "
                                 "(leave it out for bytes, numpy.uint8), not None")
        try:
            dtype = np.dtype(dtype)
        except TypeError as exc:
            raise HsapyTypeError(f"Buffer.view: dtype: {exc}") from None
        _data_type(dtype)
        if not isinstance(offset, (int, np.integer)) or isinstance(offset, bool) or \
                not 0 <= offset <= buffer.size or offset % dtype.itemsize:
            raise HsapyValueError(
                f"Buffer.view: offset must be a multiple of {dtype.itemsize} (the {dtype} size) "
                f"within the {buffer.size}-byte buffer, not {offset!r}")
        if shape is None:
            shape = ((buffer.size - offset) // dtype.itemsize,)
        elif isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
            shape = (int(shape),)
        try:
            # a sequence of int extents: bytes would give its byte values, a dict its keys, a
            # bool (numpy's too) a 1 or a 0
            if not isinstance(shape, (tuple, list, np.ndarray)) or any(
                    isinstance(extent, (bool, np.bool_)) for extent in shape):
                raise TypeError(shape)
            shape = tuple(operator.index(extent) for extent in shape)
        except TypeError:
            raise HsapyTypeError(f"Buffer.view: shape is an int or a tuple of ints, not "
                                 f"{shape!r:.40}") from None
        if any(extent < 0 for extent in shape):
            raise HsapyValueError(f"Buffer.view: negative extent in shape {shape}")
        nbytes = math.prod(shape) * dtype.itemsize
        if offset + nbytes > buffer.size:
            raise HsapyValueError(
                f"Buffer.view: shape {shape} x {dtype} ({nbytes} bytes) at offset {offset} does "
                f"not fit in the {buffer.size}-byte buffer")
        self.buffer = buffer
        self.dtype = dtype
        self.shape = shape
        self.offset = int(offset)
        self._owner = owner

    @property
    def address(self) -> int:
        """The address of the first element (what a kernel pointer argument receives)."""
        return self.buffer.address + self.offset

    @property
    def nbytes(self) -> int:
        """Bytes the view spans."""
        return math.prod(self.shape) * self.dtype.itemsize

    def __dlpack_device__(self) -> tuple[int, int]:
        """(device type, device id): ``kDLCPU`` where the host may touch the memory, else
        ``kDLROCM`` and the GPU agent's index."""
        pool = self.buffer.pool
        if pool.is_host_accessible:
            return (int(DLDeviceType.CPU), 0)
        agent = pool.agent
        index = next(i for i, gpu in enumerate(agent.runtime.gpu_agents) if gpu is agent)
        return (int(DLDeviceType.ROCM), index)

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A DLPack capsule of this memory (DLPack Python specification). ``copy=True``, or
        ``dl_device=(kDLCPU, 0)`` for device memory, gives a host copy; any other device, or a
        copy of device memory left on the device, raises :class:`DLPackExportError`."""
        self.buffer._check_open()
        if copy is not None and copy is not True and copy is not False:
            raise HsapyTypeError(f"__dlpack__: copy is True, False or None, not "
                                 f"{type(copy).__name__} {copy!r:.40}")
        # the consumer's stream, an integer handle or None (DLPack Python specification); the
        # memory is ready once the dispatches and copies writing it completed, so hsapy has no
        # stream to order against it and takes any integer
        if stream is not None and (isinstance(stream, bool) or not isinstance(stream, int)):
            raise HsapyTypeError(f"__dlpack__: stream is an integer stream handle or None, not "
                                 f"{type(stream).__name__} {stream!r:.40}")
        versioned = (max_version is not None
                     and _int_pair(max_version, "max_version", "(major, minor)")[0] >= 1)
        ours = self.__dlpack_device__()
        wanted = ours if dl_device is None else _int_pair(dl_device, "dl_device",
                                                          "(device type, device id)")
        host = (int(DLDeviceType.CPU), 0)
        if wanted == ours and not copy:
            return _capsule(self.buffer.address, self.offset, self.dtype, self.shape, ours,
                            self._owner, versioned, copied=False)
        if wanted == host and copy is not False:
            array = self._host_copy()
            return _capsule(array.ctypes.data, 0, self.dtype, self.shape, host, array,
                            versioned, copied=True)
        if wanted == ours:
            raise DLPackExportError(
                "a copy of this device memory on the device was asked for (copy=True): hsapy "
                "exports it in place, or to the host with dl_device=(kDLCPU, 0)")
        raise DLPackExportError(
            f"this memory is on DLPack device {ours} and can be exported there"
            f"{' or copied to the host (kDLCPU, 0)' if ours != host else ''}, not to {wanted}"
            f"{' without a copy (copy=False)' if wanted == host else ''}")

    def _host_copy(self) -> np.ndarray:
        flat = np.empty(self.offset + self.nbytes, np.uint8)
        self.buffer.copy_to(flat)
        return flat[self.offset:].view(self.dtype).reshape(self.shape)

    @property
    def __array_interface__(self) -> dict[str, Any]:
        """The numpy array interface (version 3) of host-accessible memory; the data entry is a
        buffer object that holds the memory, so a numpy array made from it keeps it allocated.
        Device memory raises :class:`NotHostAccessibleError` (numpy then raises it too, rather
        than making an object array)."""
        self.buffer._check_open()
        if not self.buffer.pool.is_host_accessible:
            raise NotHostAccessibleError(
                f"buffer {self.buffer.address:#x} is coarse-grained device memory of "
                f"{self.buffer.pool.agent.name}: the host cannot view it. Copy it "
                "(buffer.copy_to(), or numpy.from_dlpack(buffer, device='cpu')), share it with a "
                "GPU library through DLPack, or allocate from a host-accessible pool")
        whole = memoryview(ffi.buffer(self._owner, self.buffer.size))
        return {"version": 3, "shape": self.shape, "typestr": self.dtype.str,
                "data": whole[self.offset:self.offset + self.nbytes]}

    def __repr__(self) -> str:
        # never raises (debuggers, logs and tracebacks call it): a closed buffer's view says so
        try:
            where = f"at {self.address:#x}"
        except ClosedError:
            where = "of a closed buffer"
        return f"<BufferView {self.shape} {self.dtype} {where}>"


# -- kernel arguments from other libraries' arrays -----------------------------------------

def _dlpack_pointer(value: Any) -> tuple[int, int | None]:
    try:
        capsule = value.__dlpack__(max_version=DLPACK_VERSION)
    except TypeError:   # a producer older than DLPack 1.0's keywords
        capsule = value.__dlpack__()
    for name, ctype in ((_NAME_VERSIONED, "DLManagedTensorVersioned *"),
                        (_NAME_LEGACY, "DLManagedTensor *")):
        if _is_valid(capsule, name):
            tensor = ffi.cast(ctype, _get_pointer(capsule, name)).dl_tensor
            count = math.prod(tensor.shape[i] for i in range(tensor.ndim))
            nbytes = count * tensor.dtype.bits * tensor.dtype.lanes // 8
            # Not consumed (not renamed): the producer's capsule destructor gives it back.
            return int(ffi.cast("uintptr_t", tensor.data)) + tensor.byte_offset, nbytes
    raise HsapyTypeError("__dlpack__ returned no DLPack capsule")


def data_pointer(value: Any) -> tuple[int, int | None] | None:
    """(address, bytes or None) of another library's array, read from (in this order)
    ``__cuda_array_interface__``, ``__array_interface__``, ``data_ptr()`` or ``__dlpack__``;
    None when it exposes none of them."""
    for attribute in ("__cuda_array_interface__", "__array_interface__"):
        interface = getattr(value, attribute, None)
        if isinstance(interface, dict):
            data = interface.get("data")
            if isinstance(data, tuple) and data and isinstance(data[0], int):
                address = _address(data[0], f"{attribute}['data'][0]")
            else:
                address = np.asarray(value).ctypes.data
            nbytes = getattr(value, "nbytes", None)
            return address, nbytes if isinstance(nbytes, int) else None
    data_ptr = getattr(value, "data_ptr", None)
    if callable(data_ptr):
        nbytes = getattr(value, "nbytes", None)
        return _address(data_ptr(), "data_ptr()"), nbytes if isinstance(nbytes, int) else None
    if callable(getattr(value, "__dlpack__", None)):
        return _dlpack_pointer(value)
    return None


def _address(value: Any, source: str) -> int:
    """An address another library reported: an int of 64 bits, else a typed error -- int() made
    one of a str or a float, and cffi wrapped one past 64 bits onto another allocation."""
    return check_int(value, f"the data pointer its {source} gave", 0, (1 << 64) - 1)


def _int_pair(value: Any, what: str, meaning: str) -> tuple[int, int]:
    """A DLPack protocol pair of ints (``max_version``, ``dl_device``), else a typed error."""
    pair = check_items(value, f"__dlpack__: {what} is a pair of ints {meaning}")
    if len(pair) != 2:
        raise HsapyTypeError(f"__dlpack__: {what} is a pair of ints {meaning}, not "
                             f"{type(value).__name__} {value!r:.40}")
    return (check_int(pair[0], f"__dlpack__: {what}[0]", 0, (1 << 31) - 1),
            check_int(pair[1], f"__dlpack__: {what}[1]", 0, (1 << 31) - 1))


def pointer_argument(value: Any, runtime: Any) -> tuple[int | None, str]:
    """The device address to pass for ``value`` in a kernel pointer argument, or (None, why
    not). Accepted: an object exposing its data pointer (see :func:`data_pointer`) whose memory
    ``runtime`` allocated (``hsa_amd_pointer_info``), wholly inside that allocation."""
    try:
        found = data_pointer(value)
    except (HsapyTypeError, HsapyValueError) as exc:
        return None, str(exc)
    if found is None:
        return None, ("it exposes no data pointer (__dlpack__, __array_interface__, "
                      "__cuda_array_interface__ or data_ptr())")
    address, nbytes = found
    if runtime is None:
        return None, (f"its memory at {address:#x} cannot be checked: this layout belongs to no "
                      "runtime (pass the address as an int if you know it is device-visible)")
    allocation = runtime_allocation(runtime, address)
    if allocation is None:
        return None, (f"its memory at {address:#x} is not an allocation of this {runtime.backend}"
                      " runtime: allocate it from an hsapy memory pool and share that buffer with"
                      " the other library (numpy/torch.from_dlpack(buffer)), or copy into one")
    host_base, agent_base, size = allocation
    if nbytes is not None and address + nbytes > host_base + size:
        return None, (f"its {nbytes} bytes at {address:#x} run past the end of their "
                      f"{size}-byte allocation at {host_base:#x}")
    return agent_base + (address - host_base), ""


def runtime_allocation(runtime: Any, address: int) -> tuple[int, int, int] | None:
    """(host base, agent base, size) of the allocation of ``runtime`` that holds ``address``
    (``hsa_amd_pointer_info``), or None when the runtime does not know the address."""
    from hsapy._hsa import call, constant

    ffi_hsa, lib = runtime.ffi, runtime.lib
    info = ffi_hsa.new("hsa_amd_pointer_info_t *")
    info.size = ffi_hsa.sizeof("hsa_amd_pointer_info_t")
    call(lib, "hsa_amd_pointer_info", ffi_hsa.cast("void *", address), info, ffi_hsa.NULL,
         ffi_hsa.NULL, ffi_hsa.NULL)
    if info.type == constant("HSA_EXT_POINTER_TYPE_UNKNOWN"):
        return None
    host = int(ffi_hsa.cast("uintptr_t", info.hostBaseAddress))
    agent = int(ffi_hsa.cast("uintptr_t", info.agentBaseAddress))
    # Locked host memory has a GPU address of its own (hsa_amd_memory_lock); the rest have one.
    return (host or agent), (agent or host), int(info.sizeInBytes)
