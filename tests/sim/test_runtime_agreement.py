"""Behaviours where hsapy.sim was found to differ from the real ROCr (run over the simulated
thunk, backend rocr-sim) and was changed to agree; each test runs on both backends
(docs/rocr-over-simulated-thunk.md, "Where hsapy.sim and ROCr differed")."""
from __future__ import annotations

import numpy as np

from hsapy._hsa import constant
from hsapy.asm import kernels


def test_a_single_producer_queue_reports_type_multi(runtime):
    ffi, lib = runtime.ffi, runtime.lib
    agent = runtime.gpu_agents[0]
    out = ffi.new("hsa_queue_t **")
    assert lib.hsa_queue_create({"handle": agent.handle}, 64, constant("HSA_QUEUE_TYPE_SINGLE"),
                                ffi.NULL, ffi.NULL, 0xFFFFFFFF, 0xFFFFFFFF, out) == 0
    try:
        assert out[0].type == constant("HSA_QUEUE_TYPE_MULTI")
    finally:
        lib.hsa_queue_destroy(out[0])


def test_freeing_an_address_no_pool_allocated_is_invalid_allocation(runtime):
    ffi, lib = runtime.ffi, runtime.lib
    status = lib.hsa_amd_memory_pool_free(ffi.cast("void *", 0x1234000))
    assert status == constant("HSA_STATUS_ERROR_INVALID_ALLOCATION")


def test_a_dispatch_on_an_unprofiled_queue_has_no_times(runtime):
    agent = runtime.gpu_agents[0]
    kernel = runtime.load(kernels.build("vector_add", agent.target), agent).kernel("vector_add")
    n = 256
    a, b, out = (agent.device_pool.allocate(4 * n) for _ in range(3))
    a.copy_from(np.ones(n, np.float32))
    b.copy_from(np.ones(n, np.float32))
    with agent.create_queue(size=64) as queue:
        result = kernel.launch(queue, [a, b, out, n], grid=n, workgroup=64)
        assert (result.start, result.end, result.duration_us) == (None, None, None)
        queue.enable_profiling()
        result = kernel.launch(queue, [a, b, out, n], grid=n, workgroup=64)
        assert 0 < result.start < result.end
