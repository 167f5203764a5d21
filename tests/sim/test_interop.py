"""Sharing hsapy memory with numpy and torch (DLPack, the array interface) and taking their
arrays of hsapy memory as kernel arguments (hsapy.interop)."""
from __future__ import annotations

import gc

import numpy as np
import pytest

from hsapy._lifetime import drain
from hsapy.asm import kernels
from hsapy.interop import (
    DLDeviceType,
    DLPackExportError,
    NotHostAccessibleError,
    runtime_allocation,
)
from hsapy.kernarg import KernargLayout, KernelArgumentError

N = 256
# numpy 2.1 consumes DLPack 1.0 capsules (writable views, from_dlpack(device=, copy=)); numpy 2.0
# takes only the legacy capsule and marks what it makes of one read-only.
NUMPY_DLPACK_1 = np.lib.NumpyVersion(np.__version__) >= "2.1.0"


@pytest.fixture
def vector_add(runtime):
    agent = runtime.gpu_agents[0]
    executable = runtime.load(kernels.build("vector_add", agent.target), agent)
    queue = agent.create_queue(size=64)
    yield executable.kernel("vector_add"), queue
    queue.close()
    executable.close()


def host_buffer(runtime, nbytes=4 * N):
    return runtime.system_pool.allocate(nbytes)


def device_buffer(runtime, nbytes=4 * N):
    return runtime.gpu_agents[0].device_pool.allocate(nbytes)


def collect():
    """Collect garbage and run the releases finalizers deferred (hsapy._lifetime: a finalizer
    only queues its release; the reaper thread runs it a moment later)."""
    gc.collect()
    drain()


def is_freed(runtime, address, allocated):
    """Whether the block ``allocated`` (runtime_allocation before the free) was freed."""
    after = runtime_allocation(runtime, address)
    if after is not None and runtime.runs_rocr:
        # ROCr sub-allocates small device blocks from 2 MiB fragments it keeps: once freed, the
        # address belongs to the fragment again, no longer to a block of its own.
        return after != allocated and after[2] > allocated[2]
    return after is None


class Legacy:
    """A producer from before DLPack 1.0: its __dlpack__ takes no max_version."""

    def __init__(self, buffer):
        self.buffer = buffer

    def __dlpack__(self, stream=None):
        return self.buffer.__dlpack__()

    def __dlpack_device__(self):
        return self.buffer.__dlpack_device__()


def test_numpy_from_dlpack_of_host_memory_is_a_zero_copy_view(runtime):
    buffer = host_buffer(runtime, 64)
    array = np.from_dlpack(buffer)
    assert array.dtype == np.uint8 and array.shape == (64,)
    buffer.copy_from(np.full(64, 5, np.uint8))      # a write to the buffer is in the view
    assert (array == 5).all()
    assert array.flags.writeable == NUMPY_DLPACK_1
    if NUMPY_DLPACK_1:
        array[3] = 77                               # and a write through the view ...
        assert buffer.copy_to()[3] == 77            # ... is in the buffer


def test_a_consumer_from_before_dlpack_1_gets_the_legacy_capsule_of_the_same_memory(runtime):
    buffer = host_buffer(runtime, 64)
    array = np.from_dlpack(Legacy(buffer))          # (numpy makes these views read-only)
    buffer.copy_from(np.full(64, 6, np.uint8))
    assert array.shape == (64,) and (array == 6).all()


def test_dlpack_capsules_are_versioned_when_the_consumer_asks(runtime):
    buffer = host_buffer(runtime, 64)
    assert "dltensor_versioned" in repr(buffer.__dlpack__(max_version=(1, 0)))
    assert '"dltensor"' in repr(buffer.__dlpack__())
    assert '"dltensor"' in repr(buffer.__dlpack__(max_version=(0, 8)))


def test_a_typed_view_gives_numpy_its_dtype_shape_and_offset(runtime):
    buffer = host_buffer(runtime, 128)
    buffer.copy_from(np.arange(32, dtype=np.float32))
    matrix = np.from_dlpack(buffer.view(np.float32, (3, 4), offset=16))
    assert matrix.dtype == np.float32 and matrix.shape == (3, 4)
    assert (matrix == np.arange(4, 16, dtype=np.float32).reshape(3, 4)).all()
    buffer.copy_from(np.zeros(32, np.float32))
    assert (matrix == 0).all()


@pytest.mark.parametrize("dtype,shape,offset,error", [
    (">f4", None, 0, TypeError),            # not native byte order
    (np.float32, (65,), 0, ValueError),     # does not fit
    (np.float32, None, 2, ValueError),      # offset not a multiple of the element size
    (np.float32, (-1,), 0, ValueError),
    ("U4", None, 0, TypeError),             # no DLPack type for strings
])
def test_a_typed_view_that_does_not_fit_or_has_no_dlpack_type_is_refused(runtime, dtype, shape,
                                                                          offset, error):
    with pytest.raises(error):
        host_buffer(runtime, 256).view(dtype, shape, offset)


def test_an_exported_tensor_keeps_the_memory_after_close_until_the_consumer_drops_it(runtime):
    buffer = host_buffer(runtime, 64)
    address = buffer.address
    buffer.copy_from(np.full(64, 9, np.uint8))
    array = np.from_dlpack(buffer)
    buffer.close()
    assert (array == 9).all() and runtime_allocation(runtime, address) is not None
    del array
    collect()
    assert runtime_allocation(runtime, address) is None


def test_a_capsule_nobody_consumed_gives_the_memory_back(runtime):
    buffer = host_buffer(runtime, 64)
    address = buffer.address
    capsule = buffer.__dlpack__(max_version=(1, 0))
    buffer.close()
    assert runtime_allocation(runtime, address) is not None
    del capsule
    collect()
    assert runtime_allocation(runtime, address) is None


def test_device_memory_is_kdlrocm_with_the_agent_index(runtime):
    for index, agent in enumerate(runtime.gpu_agents):
        buffer = agent.device_pool.allocate(64)
        assert buffer.__dlpack_device__() == (DLDeviceType.ROCM, index)
    assert host_buffer(runtime, 64).__dlpack_device__() == (DLDeviceType.CPU, 0)


def test_numpy_refuses_device_memory_cleanly_and_the_memory_is_freed_after(runtime):
    buffer = device_buffer(runtime, 64)
    address = buffer.address
    with pytest.raises((RuntimeError, BufferError), match="device"):
        np.from_dlpack(buffer)
    allocated = runtime_allocation(runtime, address)
    buffer.close()
    collect()
    assert is_freed(runtime, address, allocated)


@pytest.mark.skipif(not NUMPY_DLPACK_1, reason="numpy 2.0's from_dlpack takes no device=")
def test_device_memory_to_the_host_is_a_copy(runtime):
    buffer = device_buffer(runtime, 4 * N)
    buffer.copy_from(np.arange(N, dtype=np.float32))
    copy = np.from_dlpack(buffer.view(np.float32), device="cpu")
    assert (copy == np.arange(N)).all()
    copy[0] = 99.0
    assert buffer.copy_to(dtype=np.float32)[0] == 0.0


def test_copies_to_the_host_or_to_other_devices_are_refused_when_they_cannot_be_made(runtime):
    buffer = device_buffer(runtime, 64)
    with pytest.raises(DLPackExportError, match="copy=False"):
        buffer.__dlpack__(max_version=(1, 0), dl_device=(DLDeviceType.CPU, 0), copy=False)
    with pytest.raises(BufferError):
        buffer.__dlpack__(max_version=(1, 0), dl_device=(DLDeviceType.CUDA, 0))


def test_array_interface_views_host_memory_and_refuses_device_memory_with_a_typed_error(runtime):
    host = host_buffer(runtime, 64)
    array = np.asarray(host)
    assert array.dtype == np.uint8 and array.shape == (64,)
    array[0] = 42
    assert host.copy_to()[0] == 42
    floats = np.asarray(host.view(np.float32, (4, 4)))
    assert floats.shape == (4, 4) and floats.dtype == np.float32
    with pytest.raises(NotHostAccessibleError, match="copy_to"):
        np.asarray(device_buffer(runtime, 64))      # not a 0-d object array


def test_closed_buffers_export_nothing(runtime):
    buffer = host_buffer(runtime, 64)
    buffer.close()
    with pytest.raises(ValueError, match="closed"):
        buffer.__dlpack__()
    with pytest.raises(ValueError, match="closed"):
        np.asarray(buffer)


def _launch(kernel, queue, a, b, out):
    kernel.launch(queue, [a, b, out, N], grid=N, workgroup=64)


def test_kernel_pointer_arguments_take_numpy_views_of_hsapy_memory(runtime, vector_add):
    kernel, queue = vector_add
    buffers = [host_buffer(runtime) for _ in range(3)]
    buffers[0].copy_from(np.arange(N, dtype=np.float32))
    buffers[1].copy_from(np.full(N, 0.5, np.float32))
    a, b, out = (np.from_dlpack(buffer.view(np.float32)) for buffer in buffers)
    _launch(kernel, queue, a, b, out)
    assert (out == np.arange(N) + 0.5).all()
    a, b, out = (np.asarray(buffer.view(np.float32)) for buffer in buffers)
    _launch(kernel, queue, out, b, a)                       # array-interface views too
    assert (a == np.arange(N) + 1.0).all()


class CudaArrayInterface:
    """What CuPy (or torch on a GPU) shows: a device pointer in __cuda_array_interface__."""

    def __init__(self, buffer):
        self.nbytes = buffer.size
        self.__cuda_array_interface__ = {"shape": (buffer.size // 4,), "typestr": "<f4",
                                         "data": (buffer.address, False), "version": 3}


class DataPtr:
    def __init__(self, buffer):
        self.buffer = buffer

    def data_ptr(self):
        return self.buffer.address


class Oversized(DataPtr):
    nbytes = 1 << 30        # more than any allocation here


class DLPackOnly:
    def __init__(self, buffer):
        self.buffer = buffer

    def __dlpack__(self, **kwargs):
        return self.buffer.view(np.float32).__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.buffer.__dlpack_device__()


@pytest.mark.parametrize("wrap", [CudaArrayInterface, DataPtr, DLPackOnly])
def test_kernel_pointer_arguments_take_device_memory_through_each_protocol(runtime, vector_add,
                                                                           wrap):
    kernel, queue = vector_add
    a, b, out = (device_buffer(runtime) for _ in range(3))
    a.copy_from(np.arange(N, dtype=np.float32))
    b.copy_from(np.full(N, 2.0, np.float32))
    _launch(kernel, queue, wrap(a), wrap(b), wrap(out))
    assert (out.copy_to(dtype=np.float32) == np.arange(N) + 2.0).all()


def test_the_capsule_read_for_a_kernel_argument_is_given_back(runtime, vector_add):
    kernel, queue = vector_add
    a, b, out = (device_buffer(runtime) for _ in range(3))
    _launch(kernel, queue, DLPackOnly(a), b, out)
    address = a.address
    allocated = runtime_allocation(runtime, address)
    a.close()
    collect()
    assert is_freed(runtime, address, allocated)


@pytest.mark.parametrize("value,reason", [
    (lambda rt: np.zeros(N, np.float32), "not an allocation of this"),
    (lambda rt: object(), "exposes no data pointer"),
    (lambda rt: Oversized(host_buffer(rt, 64)), "run past the end"),
])
def test_kernel_pointer_arguments_refuse_memory_hsapy_does_not_know(runtime, vector_add, value,
                                                                    reason):
    kernel, queue = vector_add
    b, out = host_buffer(runtime), host_buffer(runtime)
    with pytest.raises(KernelArgumentError, match=r"argument 0 \(a\).*" + reason):
        _launch(kernel, queue, value(runtime), b, out)
    # nothing was published: the queue still runs the next dispatch
    ok = np.from_dlpack(host_buffer(runtime).view(np.float32))
    _launch(kernel, queue, ok, b, out)


def test_a_layout_without_a_runtime_cannot_vouch_for_foreign_memory(runtime, vector_add):
    kernel, _ = vector_add
    layout = KernargLayout.from_kernel(kernel.info)
    view = np.from_dlpack(host_buffer(runtime))
    with pytest.raises(KernelArgumentError, match="belongs to no runtime"):
        layout.pack([view, 0, 0, N], N, 64)


def test_torch_shares_hsapy_memory_both_ways(runtime, vector_add):
    torch = pytest.importorskip("torch")
    kernel, queue = vector_add
    buffers = [host_buffer(runtime) for _ in range(3)]
    a, b, out = (torch.from_dlpack(buffer.view(np.float32)) for buffer in buffers)
    assert a.dtype == torch.float32 and a.shape == (N,) and a.data_ptr() == buffers[0].address
    a[:] = torch.arange(N, dtype=torch.float32)
    b[:] = 1.0
    _launch(kernel, queue, a, b, out)                       # tensors as pointer arguments
    assert torch.equal(out, torch.arange(N, dtype=torch.float32) + 1.0)
    assert (buffers[2].copy_to(dtype=np.float32) == np.arange(N) + 1.0).all()
    with pytest.raises(KernelArgumentError, match="not an allocation"):
        _launch(kernel, queue, torch.zeros(N), b, out)
