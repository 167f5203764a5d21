"""The simulator's loader (hsapy/sim/loader.py) through the raw C API, on real code objects.

Code objects come from clang-19 (HIP), llvm-mc-19 + ld.lld-19 (assembly) and are loaded with the
same calls a ROCr user makes: reader from memory, hsa_executable_create_alt, load agent code
object, freeze, symbol lookup and symbol info. Statuses are the ones ROCr's loader returns.
"""
from __future__ import annotations

import struct

import _packets as P
import pytest
from _codeobjects import build, built

from hsapy._hsa import ffi
from hsapy.codeobject import CodeObject
from hsapy.sim import SimLib

SUCCESS = 0
INFO_BREAK = 1
INVALID_ARGUMENT = 0x1001
INVALID_AGENT = 0x1004
NOT_INITIALIZED = 0x100B
INCOMPATIBLE_ARGUMENTS = 0x100D
INVALID_CODE_OBJECT = 0x1010
INVALID_EXECUTABLE = 0x1011
FROZEN_EXECUTABLE = 0x1012
INVALID_SYMBOL_NAME = 0x1013
VARIABLE_ALREADY_DEFINED = 0x1014
INVALID_EXECUTABLE_SYMBOL = 0x1019
INVALID_CODE_OBJECT_READER = 0x1021

# hsa_executable_symbol_info_t
SYM_TYPE, SYM_NAME_LENGTH, SYM_NAME, SYM_LINKAGE = 0, 1, 2, 5
SYM_VARIABLE_SIZE, SYM_VARIABLE_IS_CONST = 9, 10
SYM_KERNARG_SIZE, SYM_KERNARG_ALIGN, SYM_GROUP, SYM_PRIVATE = 11, 12, 13, 14
SYM_DYNAMIC_CALLSTACK = 15
SYM_AGENT, SYM_VARIABLE_ADDRESS, SYM_KERNEL_OBJECT = 20, 21, 22


@pytest.fixture
def lib(monkeypatch):
    monkeypatch.setenv("HSAPY_SIM_TARGETS", "gfx942,gfx1201")
    sim = SimLib(ffi, executor="builtin")
    assert sim.hsa_init() == SUCCESS
    yield sim
    sim.hsa_shut_down()


def reader(lib, data: bytes) -> int:
    out = ffi.new("hsa_code_object_reader_t *")
    buffer = ffi.from_buffer(data)
    assert lib.hsa_code_object_reader_create_from_memory(buffer, len(data), out) == SUCCESS
    return out[0].handle


def executable(lib) -> int:
    out = ffi.new("hsa_executable_t *")
    assert lib.hsa_executable_create_alt(1, 0, ffi.NULL, out) == SUCCESS
    return out[0].handle


def load(lib, exe: int, agent: int, data: bytes) -> int:
    return lib.hsa_executable_load_agent_code_object(
        {"handle": exe}, {"handle": agent}, {"handle": reader(lib, data)}, ffi.NULL, ffi.NULL)


def loaded(lib, data: bytes, target: str = "gfx942") -> tuple[int, int]:
    agent = P.gpu(lib, target)
    exe = executable(lib)
    assert load(lib, exe, agent, data) == SUCCESS
    assert lib.hsa_executable_freeze({"handle": exe}, ffi.NULL) == SUCCESS
    return exe, agent


def symbol(lib, exe: int, agent: int, name: str) -> tuple[int, int]:
    out = ffi.new("hsa_executable_symbol_t *")
    agent_ptr = ffi.new("hsa_agent_t *", {"handle": agent})
    status = lib.hsa_executable_get_symbol_by_name({"handle": exe}, name.encode(), agent_ptr, out)
    return status, out[0].handle


def info(lib, sym: int, attribute: int, ctype: str):
    out = ffi.new(ctype + " *")
    assert lib.hsa_executable_symbol_get_info({"handle": sym}, attribute, out) == SUCCESS
    return out[0]


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_kernels_are_mapped_and_registered(lib, target):
    data = built(build.build_hip, target, 5)
    co = CodeObject.from_bytes(data)
    exe, agent = loaded(lib, data, target)
    for kinfo in co.kernels.values():
        status, sym = symbol(lib, exe, agent, kinfo.symbol)
        assert status == SUCCESS
        address = info(lib, sym, SYM_KERNEL_OBJECT, "uint64_t")
        record = lib.kernel_objects[address]
        assert record.name == kinfo.name and record.agent_handle == agent
        # The descriptor bytes and the code at the entry are the file's, at load_base + vaddr.
        assert lib.memory.read(address, 64) == kinfo.descriptor.raw
        assert record.entry_address == address + kinfo.descriptor.kernel_code_entry_byte_offset
        assert record.descriptor_address - record.load_base == kinfo.descriptor_vaddr
        code = co.read_vaddr(kinfo.entry_vaddr, 16)
        assert lib.memory.read(record.entry_address, 16) == code
        # Code lives in the agent's device memory, open to that agent only.
        allocation = lib.memory.find(address)
        assert allocation.owner == agent and allocation.accessible == {agent}


def test_symbol_info_matches_the_descriptor_as_rocr_reports_it(lib):
    data = built(build.build_hip, "gfx942", 5)
    kinfo = CodeObject.from_bytes(data).kernels["mixed"]
    exe, agent = loaded(lib, data)
    status, sym = symbol(lib, exe, agent, "mixed.kd")
    assert status == SUCCESS
    assert info(lib, sym, SYM_TYPE, "uint32_t") == 1                 # HSA_SYMBOL_KIND_KERNEL
    assert info(lib, sym, SYM_KERNARG_SIZE, "uint32_t") == kinfo.descriptor.kernarg_size == 320
    assert info(lib, sym, SYM_KERNARG_ALIGN, "uint32_t") == 16         # ROCr's fixed answer
    assert info(lib, sym, SYM_GROUP, "uint32_t") == kinfo.group_segment_fixed_size
    assert info(lib, sym, SYM_PRIVATE, "uint32_t") == kinfo.private_segment_fixed_size
    assert info(lib, sym, SYM_DYNAMIC_CALLSTACK, "bool") is False
    assert info(lib, sym, SYM_AGENT, "hsa_agent_t").handle == agent
    length = info(lib, sym, SYM_NAME_LENGTH, "uint32_t")
    name = ffi.new("char[]", length + 1)
    assert lib.hsa_executable_symbol_get_info({"handle": sym}, SYM_NAME, name) == SUCCESS
    assert ffi.string(name) == b"mixed.kd"
    # A variable attribute on a kernel symbol is an invalid argument.
    assert lib.hsa_executable_symbol_get_info(
        {"handle": sym}, SYM_VARIABLE_ADDRESS, ffi.new("uint64_t *")) == INVALID_ARGUMENT


def test_relative64_relocation_points_at_the_loaded_variable(lib):
    exe, agent = loaded(lib, built(build.build_hip, "gfx942", 5))
    status, table = symbol(lib, exe, agent, "table")
    assert status == SUCCESS
    status, table_ptr = symbol(lib, exe, agent, "table_ptr")
    assert status == SUCCESS
    table_address = info(lib, table, SYM_VARIABLE_ADDRESS, "uint64_t")
    pointer_address = info(lib, table_ptr, SYM_VARIABLE_ADDRESS, "uint64_t")
    # __device__ int* table_ptr = &table[2];  table = {1, 2, 3, 4}
    assert lib.memory.read_u64(pointer_address) == table_address + 8
    assert struct.unpack("<4i", lib.memory.read(table_address, 16)) == (1, 2, 3, 4)
    assert info(lib, table, SYM_VARIABLE_SIZE, "uint32_t") == 16
    assert info(lib, table, SYM_VARIABLE_IS_CONST, "bool") is False


def test_the_image_is_mapped_in_whole_pages_with_zeros_past_the_segments(lib):
    data = built(build.build_hip, "gfx942", 5)
    exe, agent = loaded(lib, data)
    co = CodeObject.from_bytes(data)
    kernel_object = next(iter(lib.kernel_objects))
    mapping = lib.memory.find(kernel_object)
    assert mapping.size % 4096 == 0 and mapping.size >= co.load_size
    # A wide scalar load of a constant at the very end of the image reads zeros, not a fault.
    end = mapping.address + co.load_size - min(s.vaddr for s in co.segments)
    tail = mapping.address + mapping.size - end
    assert tail > 0 or co.load_size % 4096 == 0
    assert lib.memory.read(end, tail) == bytes(tail)


def test_code_object_for_another_target_is_incompatible(lib):
    data = built(build.build_hip, "gfx1201", 5)
    exe = executable(lib)
    assert load(lib, exe, P.gpu(lib, "gfx942"), data) == INCOMPATIBLE_ARGUMENTS
    message = lib.sim_loader_error()
    assert "gfx1201" in message and "gfx942" in message
    assert not lib.kernel_objects


def test_xnack_on_code_object_is_incompatible_with_an_xnack_off_agent(lib):
    data = built(build.build_hip, "gfx942:xnack+", 5)
    assert load(lib, executable(lib), P.gpu(lib, "gfx942"), data) == INCOMPATIBLE_ARGUMENTS


def test_loading_on_the_cpu_agent_is_incompatible(lib):
    cpu = P.agents(lib)[0]
    data = built(build.build_asm, "gfx942", 5)
    assert load(lib, executable(lib), cpu, data) == INCOMPATIBLE_ARGUMENTS


@pytest.mark.parametrize("corrupt", [
    lambda d: d[:100],
    lambda d: b"\x7fELF" + bytes(60),
    lambda d: b"__CLANG_OFFLOAD_BUNDLE__" + bytes(40),
])
def test_corrupt_code_object_is_invalid(lib, corrupt):
    data = corrupt(built(build.build_asm, "gfx942", 5))
    assert load(lib, executable(lib), P.gpu(lib, "gfx942"), data) == INVALID_CODE_OBJECT
    assert lib.sim_loader_error()


def test_unknown_symbols_are_invalid_symbol_names(lib):
    exe, agent = loaded(lib, built(build.build_hip, "gfx942", 5))
    assert symbol(lib, exe, agent, "nope.kd")[0] == INVALID_SYMBOL_NAME
    assert symbol(lib, exe, agent, "dims")[0] == INVALID_SYMBOL_NAME   # a function, not a symbol
    out = ffi.new("hsa_executable_symbol_t *")
    status = lib.hsa_executable_get_symbol_by_name({"handle": exe}, b"dims.kd", ffi.NULL, out)
    assert status == INVALID_SYMBOL_NAME                              # no program symbols
    other_gpu = P.gpu(lib, "gfx1201")
    assert symbol(lib, exe, other_gpu, "dims.kd")[0] == INVALID_SYMBOL_NAME


def test_frozen_executable_refuses_loads_and_second_freeze(lib):
    data = built(build.build_asm, "gfx942", 5)
    exe, agent = loaded(lib, data)
    state = ffi.new("uint32_t *")
    assert lib.hsa_executable_get_info({"handle": exe}, 2, state) == SUCCESS
    assert state[0] == 1
    assert load(lib, exe, agent, data) == FROZEN_EXECUTABLE
    assert lib.hsa_executable_freeze({"handle": exe}, ffi.NULL) == FROZEN_EXECUTABLE
    result = ffi.new("uint32_t *", 7)
    assert lib.hsa_executable_validate_alt({"handle": exe}, ffi.NULL, result) == SUCCESS
    assert result[0] == 0


def test_same_code_object_twice_for_one_agent_is_already_defined(lib):
    data = built(build.build_asm, "gfx942", 5)
    agent = P.gpu(lib, "gfx942")
    exe = executable(lib)
    assert load(lib, exe, agent, data) == SUCCESS
    assert load(lib, exe, agent, data) == VARIABLE_ALREADY_DEFINED
    assert len(lib.kernel_objects) == 1


def test_two_executables_get_separate_copies(lib):
    data = built(build.build_asm, "gfx942", 5)
    first, agent = loaded(lib, data)
    second, _ = loaded(lib, data)
    a = info(lib, symbol(lib, first, agent, "endpgm.kd")[1], SYM_KERNEL_OBJECT, "uint64_t")
    b = info(lib, symbol(lib, second, agent, "endpgm.kd")[1], SYM_KERNEL_OBJECT, "uint64_t")
    assert a != b and set(lib.kernel_objects) == {a, b}


def test_destroy_unregisters_kernels_and_frees_code(lib):
    exe, agent = loaded(lib, built(build.build_hip, "gfx942", 5))
    addresses = list(lib.kernel_objects)
    assert len(addresses) == 6
    assert lib.hsa_executable_destroy({"handle": exe}) == SUCCESS
    assert lib.kernel_objects == {}
    assert all(lib.memory.find(a) is None for a in addresses)
    assert lib.hsa_executable_destroy({"handle": exe}) == INVALID_EXECUTABLE


def test_iterate_agent_symbols_lists_kernels_and_variables(lib):
    exe, agent = loaded(lib, built(build.build_hip, "gfx942", 5))
    names = []

    @ffi.callback("hsa_status_t(hsa_executable_t, hsa_agent_t, hsa_executable_symbol_t, void *)")
    def collect(exe_arg, agent_arg, sym, data):
        length = ffi.new("uint32_t *")
        lib.hsa_executable_symbol_get_info(sym, SYM_NAME_LENGTH, length)
        name = ffi.new("char[]", length[0] + 1)
        lib.hsa_executable_symbol_get_info(sym, SYM_NAME, name)
        names.append(ffi.string(name).decode())
        return SUCCESS

    assert lib.hsa_executable_iterate_agent_symbols({"handle": exe}, {"handle": agent}, collect,
                                                    ffi.NULL) == SUCCESS
    assert {n for n in names if n.endswith(".kd")} == {
        "mixed.kd", "by_struct.kd", "dims.kd", "uses_lds.kd", "reads_global.kd", "empty.kd"}
    assert {"table", "table_ptr"} <= set(names)

    @ffi.callback("hsa_status_t(hsa_executable_t, hsa_agent_t, hsa_executable_symbol_t, void *)")
    def stop(exe_arg, agent_arg, sym, data):
        return INFO_BREAK

    assert lib.hsa_executable_iterate_agent_symbols({"handle": exe}, {"handle": agent}, stop,
                                                    ffi.NULL) == INFO_BREAK


def test_bad_handles_and_arguments(lib):
    data = built(build.build_asm, "gfx942", 5)
    agent = P.gpu(lib, "gfx942")
    handle = reader(lib, data)
    assert lib.hsa_code_object_reader_destroy({"handle": handle}) == SUCCESS
    assert lib.hsa_code_object_reader_destroy({"handle": handle}) == INVALID_CODE_OBJECT_READER
    exe = executable(lib)
    assert lib.hsa_executable_load_agent_code_object(
        {"handle": exe}, {"handle": agent}, {"handle": handle}, ffi.NULL, ffi.NULL
    ) == INVALID_CODE_OBJECT_READER
    assert lib.hsa_executable_load_agent_code_object(
        {"handle": 12345}, {"handle": agent}, {"handle": reader(lib, data)}, ffi.NULL, ffi.NULL
    ) == INVALID_EXECUTABLE
    assert lib.hsa_executable_load_agent_code_object(
        {"handle": exe}, {"handle": 77}, {"handle": reader(lib, data)}, ffi.NULL, ffi.NULL
    ) == INVALID_AGENT
    out = ffi.new("hsa_code_object_reader_t *")
    assert lib.hsa_code_object_reader_create_from_memory(ffi.NULL, 10, out) == INVALID_ARGUMENT
    assert lib.hsa_code_object_reader_create_from_memory(ffi.from_buffer(data), 0,
                                                         out) == INVALID_ARGUMENT
    assert lib.hsa_executable_create_alt(7, 0, ffi.NULL, ffi.new("hsa_executable_t *")) \
        == INVALID_ARGUMENT
    assert lib.hsa_executable_symbol_get_info({"handle": 5}, 0, ffi.new("uint32_t *")) \
        == INVALID_EXECUTABLE_SYMBOL
    assert lib.hsa_executable_get_info({"handle": exe}, 99, ffi.new("uint32_t *")) \
        == INVALID_ARGUMENT


def test_calls_before_init_are_not_initialized():
    sim = SimLib(ffi)
    out = ffi.new("hsa_executable_t *")
    assert sim.hsa_executable_create_alt(1, 0, ffi.NULL, out) == NOT_INITIALIZED
    assert sim.hsa_code_object_reader_create_from_memory(
        b"x", 1, ffi.new("hsa_code_object_reader_t *")) == NOT_INITIALIZED


def test_shut_down_forgets_executables(monkeypatch):
    sim = SimLib(ffi)
    assert sim.hsa_init() == SUCCESS
    exe, _ = loaded(sim, built(build.build_asm, "gfx942", 5))
    assert sim.kernel_objects
    assert sim.hsa_shut_down() == SUCCESS
    assert sim.hsa_init() == SUCCESS
    assert sim.hsa_executable_destroy({"handle": exe}) == INVALID_EXECUTABLE
    assert sim.kernel_objects == {}
    sim.hsa_shut_down()


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_loaded_assembly_kernel_runs_through_a_queue(lib, target):
    """A real loaded descriptor dispatched through a real AQL queue completes (s_endpgm)."""
    exe, agent = loaded(lib, built(build.build_asm, target, 5), target)
    kernel_object = info(lib, symbol(lib, exe, agent, "endpgm.kd")[1], SYM_KERNEL_OBJECT,
                         "uint64_t")
    queue = P.create_queue(lib, agent)
    done = P.signal(lib, 1)
    P.publish(lib, queue, P.dispatch(kernel_object, completion=done))
    assert P.wait_lt(lib, done) == 0


def test_generic_code_object_loads_and_runs_on_a_member_agent(lib):
    data = built(build.build_asm, "gfx12-generic", 6)
    assert load(lib, executable(lib), P.gpu(lib, "gfx942"), data) == INCOMPATIBLE_ARGUMENTS
    exe, agent = loaded(lib, data, "gfx1201")
    kernel_object = info(lib, symbol(lib, exe, agent, "endpgm.kd")[1], SYM_KERNEL_OBJECT,
                         "uint64_t")
    queue = P.create_queue(lib, agent)
    done = P.signal(lib, 1)
    P.publish(lib, queue, P.dispatch(kernel_object, completion=done))
    assert P.wait_lt(lib, done) == 0
