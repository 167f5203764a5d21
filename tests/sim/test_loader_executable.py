"""hsapy.executable: Executable and Kernel through the runtime's loader, on the simulator.

The runtime here is the simulated ``lib`` behind a minimal parent object (``.lib``, ``.ffi``):
the Executable makes the same C calls it makes on ROCr.
"""
from __future__ import annotations

import gc
import types
import warnings

import _packets as P
import pytest
from _codeobjects import build, built

from hsapy._hsa import ffi
from hsapy.codeobject import CodeObject, CodeObjectError, TargetMismatchError
from hsapy.errors import CodeObjectStatusError, HsapyTypeError, HsapyValueError
from hsapy.executable import Executable, agent_target, load
from hsapy.sim import SimLib


@pytest.fixture
def runtime(monkeypatch):
    monkeypatch.setenv("HSAPY_SIM_TARGETS", "gfx942,gfx1201")
    lib = SimLib(ffi, executor="builtin")
    assert lib.hsa_init() == 0
    yield types.SimpleNamespace(lib=lib, ffi=ffi)
    lib.hsa_shut_down()


def gpu(runtime, name: str) -> int:
    return P.gpu(runtime.lib, name)


def test_agent_target_comes_from_the_runtime_isa(runtime):
    assert str(agent_target(runtime.lib, ffi, gpu(runtime, "gfx942"))) == "gfx942:sramecc+:xnack-"
    assert str(agent_target(runtime.lib, ffi, gpu(runtime, "gfx1201"))) == "gfx1201"
    with pytest.raises(HsapyValueError, match="no ISA"):
        agent_target(runtime.lib, ffi, P.agents(runtime.lib)[0])


def test_kernel_properties_come_from_runtime_and_metadata(runtime):
    data = built(build.build_hip, "gfx942", 5)
    info = CodeObject.from_bytes(data).kernels["mixed"]
    with load(runtime, data, gpu(runtime, "gfx942")) as exe:
        kernel = exe.kernel("mixed")
        assert kernel.kernel_object in runtime.lib.kernel_objects
        assert runtime.lib.memory.read(kernel.kernel_object, 64) == info.descriptor.raw
        assert kernel.kernarg_size == 320 and kernel.kernarg_align == 16
        assert kernel.group_segment_size == 0 and kernel.private_segment_size == 0
        assert kernel.wavefront_size == 64 and kernel.max_flat_workgroup_size == 1024
        assert kernel.layout.size == 320 and len(kernel.layout.slots) == 9
        assert exe.kernel("mixed.kd") is kernel
        assert exe.kernel_names == ["mixed", "by_struct", "dims", "uses_lds", "reads_global",
                                    "empty"]
        assert [k.name for k in exe] == exe.kernel_names
    assert exe.is_closed
    assert runtime.lib.kernel_objects == {}


def test_gfx1201_kernels_are_wave32(runtime):
    with load(runtime, built(build.build_hip, "gfx1201", 5), gpu(runtime, "gfx1201")) as exe:
        assert exe.kernel("dims").wavefront_size == 32
        assert exe.kernel("dims").descriptor.wavefront_size == 32


def test_bundles_and_paths_are_accepted(runtime, tmp_path):
    bundle = built(build.build_hip_bundle, ("gfx942", "gfx1201"))
    path = tmp_path / "k.o"
    path.write_bytes(bundle)
    with load(runtime, path, gpu(runtime, "gfx1201")) as exe:
        assert exe.code_object.target.name == "gfx1201"
    with load(runtime, str(path), gpu(runtime, "gfx942")) as exe:
        assert exe.code_object.target.name == "gfx942"


def test_another_target_is_refused_before_loading_with_both_names(runtime):
    lib = runtime.lib
    calls = []
    original = lib.hsa_code_object_reader_create_from_memory

    def spy(*args):
        calls.append(args)
        return original(*args)

    lib.hsa_code_object_reader_create_from_memory = spy
    with pytest.raises(TargetMismatchError) as info:
        load(runtime, built(build.build_hip, "gfx1201", 5), gpu(runtime, "gfx942"))
    assert "gfx1201" in str(info.value) and "gfx942:sramecc+:xnack-" in str(info.value)
    assert calls == []
    parsed = CodeObject.from_bytes(built(build.build_hip, "gfx1201", 5))
    with pytest.raises(TargetMismatchError):
        load(runtime, parsed, gpu(runtime, "gfx942"))


def test_unknown_kernel_lists_the_kernels(runtime):
    with load(runtime, built(build.build_asm, "gfx942", 5), gpu(runtime, "gfx942")) as exe:
        with pytest.raises(CodeObjectError, match=r"no kernel named 'nope'.*kernels: endpgm"):
            exe.kernel("nope")
        with pytest.raises(HsapyTypeError):
            exe.kernel(3)


def test_variable_address_reads_a_relocated_global(runtime):
    with load(runtime, built(build.build_hip, "gfx942", 5), gpu(runtime, "gfx942")) as exe:
        table = exe.variable_address("table")
        pointer = exe.variable_address("table_ptr")
        assert runtime.lib.memory.read_u64(pointer) == table + 8
        with pytest.raises(CodeObjectStatusError, match="INVALID_SYMBOL_NAME"):
            exe.variable_address("missing")


def test_bad_inputs(runtime):
    agent = gpu(runtime, "gfx942")
    with pytest.raises(HsapyTypeError, match="bytes, a path, or a hsapy.codeobject.CodeObject"):
        load(runtime, 42, agent)
    with pytest.raises(HsapyValueError, match="cannot read code object"):
        load(runtime, "/nonexistent/k.hsaco", agent)
    with pytest.raises(CodeObjectError, match="not an ELF code object"):
        load(runtime, b"garbage" * 20, agent)
    with pytest.raises(HsapyTypeError, match="expected an agent"):
        load(runtime, built(build.build_asm, "gfx942", 5), "gfx942")


def test_close_is_idempotent_and_finalizer_releases(runtime):
    data = built(build.build_asm, "gfx942", 5)
    exe = load(runtime, data, gpu(runtime, "gfx942"))
    kernel_object = exe.kernel("endpgm").kernel_object
    exe.close()
    exe.close()
    assert kernel_object not in runtime.lib.kernel_objects
    with pytest.raises(HsapyValueError, match="closed"):
        exe.variable_address("x")
    exe = load(runtime, data, gpu(runtime, "gfx942"))
    assert len(runtime.lib.kernel_objects) == 1
    del exe
    gc.collect()
    assert runtime.lib.kernel_objects == {}


def test_cleanup_failure_warns_instead_of_raising(runtime):
    exe = load(runtime, built(build.build_asm, "gfx942", 5), gpu(runtime, "gfx942"))
    assert runtime.lib.hsa_executable_destroy({"handle": exe.handle}) == 0   # behind its back
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exe.close()
    assert any("hsa_executable_destroy" in str(w.message) for w in caught)


def test_loaded_kernel_dispatches_through_a_queue(runtime):
    lib = runtime.lib
    agent = gpu(runtime, "gfx942")
    with load(runtime, built(build.build_asm, "gfx942", 5), agent) as exe:
        kernel = exe.kernel("endpgm")
        queue = P.create_queue(lib, agent)
        done = P.signal(lib, 1)
        P.publish(lib, queue, P.dispatch(kernel.kernel_object, completion=done))
        assert P.wait_lt(lib, done) == 0


def test_executable_is_an_executable(runtime):
    exe = load(runtime, built(build.build_asm, "gfx942", 5), gpu(runtime, "gfx942"))
    assert isinstance(exe, Executable)
    assert "endpgm" in repr(exe) and "gfx942" in repr(exe)
    assert "kernel_object=0x" in repr(exe.kernel("endpgm"))
    exe.close()
    assert "closed" in repr(exe)


# -- through hsapy.Runtime (the public way in), on every backend ----------------------------


def test_runtime_load_gives_kernels_with_runtime_values(backend):
    from hsapy.runtime import Runtime

    with Runtime(backend=backend) as rt:
        for agent in rt.gpu_agents:
            data = built(build.build_hip, agent.target, 5)
            with rt.load(data, agent) as exe:
                kernel = exe.kernel("dims")
                assert kernel.kernarg_size == 272
                assert kernel.kernarg_align >= 8
                assert kernel.wavefront_size == (32 if agent.target == "gfx1201" else 64)
                assert kernel.layout.hidden_kinds[0] == "hidden_block_count_x"
                if backend == "sim":
                    record = rt.lib.kernel_objects[kernel.kernel_object]
                    assert record.agent_handle == agent.handle


def test_runtime_close_releases_open_executables():
    from hsapy._lifetime import live_counts
    from hsapy.runtime import Runtime

    rt = Runtime(backend="sim", targets=["gfx942"])
    exe = rt.load(built(build.build_asm, "gfx942", 5))     # default agent: the first GPU
    assert exe.kernel("endpgm").kernel_object in rt.lib.kernel_objects
    assert live_counts().get("Executable", 0) >= 1
    lib = rt.lib
    with warnings.catch_warnings():
        warnings.simplefilter("error")                       # no warning: closed before shut-down
        rt.close()
    assert exe.is_closed and lib.kernel_objects == {}
    exe.close()                                              # still idempotent


def test_hipcc_genco_bundle_loads_on_a_gfx90a_agent():
    from hsapy.runtime import Runtime

    bundle = built(build.build_hipcc, "gfx90a")
    with Runtime(backend="sim", targets=["gfx90a"]) as rt:
        with rt.load(bundle) as exe:
            kernel = exe.kernel("add_one")
            assert exe.code_object.version == 4
            assert kernel.kernel_object in rt.lib.kernel_objects
            assert kernel.layout.signature == "add_one(arg0: ptr @0, arg1: 4-byte value @8)"
