"""SimLib agents, ISAs, caches, system info, init/shut-down and status strings (raw C API)."""
from __future__ import annotations

import pytest
from _packets import agent_name, agents, gpu

from hsapy._hsa import ffi
from hsapy.errors import STATUS_NAMES
from hsapy.sim import SimLib
from hsapy.sim.targets import GPU_PROFILES

SUCCESS, INFO_BREAK = 0, 1
INVALID_ARGUMENT, INVALID_AGENT, NOT_INITIALIZED = 0x1001, 0x1004, 0x100B


def test_calls_before_init_return_not_initialized():
    sim = SimLib(ffi)
    cb = ffi.callback("hsa_status_t(hsa_agent_t, void*)", lambda a, d: 0)
    assert sim.hsa_iterate_agents(cb, ffi.NULL) == NOT_INITIALIZED
    assert sim.hsa_shut_down() == NOT_INITIALIZED
    out = ffi.new("hsa_signal_t *")
    assert sim.hsa_signal_create(1, 0, ffi.NULL, out) == NOT_INITIALIZED


def test_init_is_reference_counted():
    sim = SimLib(ffi)
    assert sim.hsa_init() == SUCCESS
    assert sim.hsa_init() == SUCCESS
    assert sim.hsa_shut_down() == SUCCESS
    assert len(agents(sim)) == 3          # still open after one of two shut-downs
    assert sim.hsa_shut_down() == SUCCESS
    cb = ffi.callback("hsa_status_t(hsa_agent_t, void*)", lambda a, d: 0)
    assert sim.hsa_iterate_agents(cb, ffi.NULL) == NOT_INITIALIZED


def test_default_agents_are_cpu_gfx942_gfx1201(lib):
    names = [agent_name(lib, h) for h in agents(lib)]
    assert names[1:] == ["gfx942", "gfx1201"]
    device = ffi.new("uint32_t *")
    assert lib.hsa_agent_get_info({"handle": agents(lib)[0]}, lib.HSA_AGENT_INFO_DEVICE, device) == 0
    assert device[0] == lib.HSA_DEVICE_TYPE_CPU


def test_targets_argument_and_environment(monkeypatch):
    sim = SimLib(ffi, targets=["gfx1100", "gfx90a"])
    sim.hsa_init()
    assert [agent_name(sim, h) for h in agents(sim)][1:] == ["gfx1100", "gfx90a"]
    sim.hsa_shut_down()
    monkeypatch.setenv("HSAPY_SIM_TARGETS", "gfx1201")
    sim = SimLib(ffi)
    sim.hsa_init()
    assert [agent_name(sim, h) for h in agents(sim)][1:] == ["gfx1201"]
    sim.hsa_shut_down()


def test_unknown_target_names_the_known_ones():
    with pytest.raises(ValueError, match="gfx942"):
        SimLib(ffi, targets=["gfx9999"])


def test_iteration_stops_on_info_break(lib):
    seen = []

    @ffi.callback("hsa_status_t(hsa_agent_t, void*)")
    def first_only(agent, data):
        seen.append(agent.handle)
        return INFO_BREAK

    assert lib.hsa_iterate_agents(first_only, ffi.NULL) == INFO_BREAK
    assert len(seen) == 1


def test_callback_error_status_is_returned(lib):
    cb = ffi.callback("hsa_status_t(hsa_agent_t, void*)", lambda a, d: 0x1000)
    assert lib.hsa_iterate_agents(cb, ffi.NULL) == 0x1000


# (attribute, C type, expected per target) - values from hsapy/sim/targets.py's cited table
GPU_INFO = [
    ("HSA_AGENT_INFO_WAVEFRONT_SIZE", "uint32_t", {"gfx942": 64, "gfx1201": 32}),
    ("HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT", "uint32_t", {"gfx942": 304, "gfx1201": 64}),
    ("HSA_AGENT_INFO_WORKGROUP_MAX_SIZE", "uint32_t", {"gfx942": 1024, "gfx1201": 1024}),
    ("HSA_AGENT_INFO_QUEUE_MIN_SIZE", "uint32_t", {"gfx942": 64, "gfx1201": 64}),
    ("HSA_AGENT_INFO_QUEUE_MAX_SIZE", "uint32_t", {"gfx942": 131072, "gfx1201": 131072}),
    ("HSA_AGENT_INFO_FEATURE", "uint32_t", {"gfx942": 1, "gfx1201": 1}),
    ("HSA_AGENT_INFO_VERSION_MAJOR", "uint16_t", {"gfx942": 1, "gfx1201": 1}),
]


@pytest.mark.parametrize("attribute, ctype, expected", GPU_INFO)
@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_gpu_scalar_info(lib, target, attribute, ctype, expected):
    out = ffi.new(ctype + " *")
    assert lib.hsa_agent_get_info({"handle": gpu(lib, target)}, getattr(lib, attribute), out) == 0
    assert out[0] == expected[target]


def test_array_and_struct_info_types(lib):
    agent = {"handle": gpu(lib, "gfx942")}
    dims = ffi.new("uint16_t[3]")
    assert lib.hsa_agent_get_info(agent, lib.HSA_AGENT_INFO_WORKGROUP_MAX_DIM, dims) == 0
    assert list(dims) == [1024, 1024, 1024]
    grid = ffi.new("hsa_dim3_t *")
    assert lib.hsa_agent_get_info(agent, lib.HSA_AGENT_INFO_GRID_MAX_DIM, grid) == 0
    assert (grid.x, grid.y, grid.z) == (0xFFFFFFFF,) * 3
    caches = ffi.new("uint32_t[4]")
    assert lib.hsa_agent_get_info(agent, lib.HSA_AGENT_INFO_CACHE_SIZE, caches) == 0
    assert caches[1] == GPU_PROFILES["gfx942"].cache_sizes[1]
    product = ffi.new("char[64]")
    assert lib.hsa_agent_get_info(agent, lib.HSA_AMD_AGENT_INFO_PRODUCT_NAME, product) == 0
    assert ffi.string(product) == b"AMD Instinct MI300X"


def test_agent_info_validation(lib):
    out = ffi.new("uint32_t *")
    assert lib.hsa_agent_get_info({"handle": 12345}, 0, out) == INVALID_AGENT
    assert lib.hsa_agent_get_info({"handle": gpu(lib, "gfx942")}, 0x7777, out) == INVALID_ARGUMENT
    assert lib.hsa_agent_get_info({"handle": gpu(lib, "gfx942")}, 6, ffi.NULL) == INVALID_ARGUMENT


def isa_names(lib, agent: int) -> list[str]:
    names = []

    @ffi.callback("hsa_status_t(hsa_isa_t, void*)")
    def collect(isa, data):
        length = ffi.new("uint32_t *")
        assert lib.hsa_isa_get_info_alt(isa, lib.HSA_ISA_INFO_NAME_LENGTH, length) == 0
        name = ffi.new("char[]", length[0])
        assert lib.hsa_isa_get_info_alt(isa, lib.HSA_ISA_INFO_NAME, name) == 0
        names.append(ffi.string(name).decode())
        return 0

    assert lib.hsa_agent_iterate_isas({"handle": agent}, collect, ffi.NULL) == 0
    return names


def test_isa_names_and_lookup(lib):
    assert isa_names(lib, gpu(lib, "gfx942")) == ["amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"]
    assert isa_names(lib, gpu(lib, "gfx1201")) == ["amdgcn-amd-amdhsa--gfx1201"]
    assert isa_names(lib, agents(lib)[0]) == []          # the CPU agent has no ISA
    isa = ffi.new("hsa_isa_t *")
    assert lib.hsa_isa_from_name(b"amdgcn-amd-amdhsa--gfx1201", isa) == 0
    assert lib.hsa_isa_from_name(b"amdgcn-amd-amdhsa--gfx000", isa) == lib.HSA_STATUS_ERROR_INVALID_ISA_NAME
    wave = ffi.new("uint32_t *")
    assert lib.hsa_isa_get_info_alt(isa[0], lib.HSA_ISA_INFO_WORKGROUP_MAX_SIZE, wave) == 0
    assert wave[0] == 1024


@pytest.mark.parametrize("name, status", [
    ("amdgcn-amd-amdhsa--gfx942", 0),
    ("amdgcn-amd-amdhsa--gfx942:xnack+", 0),
    ("amdgcn-amd-amdhsa--gfx942:sramecc-:xnack-", 0),
    ("amdgcn-amd-amdhsa--gfx90a", 0),                 # known processor without an agent
    ("amdgcn-amd-amdhsa--gfx1201", 0),
    ("amdgcn-amd-amdhsa--gfx1201:xnack+", 0x1017),    # RDNA4 has no xnack feature
    ("amdgcn-amd-amdhsa--gfx942:xnack-:sramecc+", 0x1017),   # canonical order is sramecc, xnack
    ("amdgcn-amd-amdhsa--gfx942:xnack", 0x1017),
    ("gfx942", 0x1017),
])
def test_isa_from_name_accepts_feature_variants(lib, name, status):
    isa = ffi.new("hsa_isa_t *")
    assert lib.hsa_isa_from_name(name.encode(), isa) == status
    if status == 0:
        length = ffi.new("uint32_t *")
        assert lib.hsa_isa_get_info_alt(isa[0], lib.HSA_ISA_INFO_NAME_LENGTH, length) == 0
        assert length[0] == len(name) + 1
        again = ffi.new("hsa_isa_t *")
        assert lib.hsa_isa_from_name(name.encode(), again) == 0
        assert again.handle == isa.handle


def test_caches(lib):
    sizes = []

    @ffi.callback("hsa_status_t(hsa_cache_t, void*)")
    def collect(cache, data):
        level = ffi.new("uint8_t *")
        size = ffi.new("uint32_t *")
        assert lib.hsa_cache_get_info(cache, lib.HSA_CACHE_INFO_LEVEL, level) == 0
        assert lib.hsa_cache_get_info(cache, lib.HSA_CACHE_INFO_SIZE, size) == 0
        sizes.append((level[0], size[0]))
        return 0

    assert lib.hsa_agent_iterate_caches({"handle": gpu(lib, "gfx1201")}, collect, ffi.NULL) == 0
    assert sizes == [(1, 32 * 1024), (2, 8 << 20), (3, 64 << 20)]


def test_system_info(lib):
    freq = ffi.new("uint64_t *")
    assert lib.hsa_system_get_info(lib.HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, freq) == 0
    assert 1_000_000 <= freq[0] <= 400_000_000       # hsa.h: 1-400 MHz
    t0, t1 = ffi.new("uint64_t *"), ffi.new("uint64_t *")
    lib.hsa_system_get_info(lib.HSA_SYSTEM_INFO_TIMESTAMP, t0)
    lib.hsa_system_get_info(lib.HSA_SYSTEM_INFO_TIMESTAMP, t1)
    assert t1[0] >= t0[0]
    major = ffi.new("uint16_t *")
    assert lib.hsa_system_get_info(lib.HSA_SYSTEM_INFO_VERSION_MAJOR, major) == 0 and major[0] == 1
    assert lib.hsa_system_get_info(99, major) == INVALID_ARGUMENT


@pytest.mark.parametrize("status", sorted(STATUS_NAMES))
def test_status_string_names_every_status(lib, status):
    out = ffi.new("const char **")
    assert lib.hsa_status_string(status, out) == 0
    assert ffi.string(out[0]).decode().startswith(STATUS_NAMES[status])


def test_status_string_validation(lib):
    assert lib.hsa_status_string(0, ffi.NULL) == INVALID_ARGUMENT
    assert lib.hsa_status_string(0x4242, ffi.new("const char **")) == INVALID_ARGUMENT


def test_enum_constants_match_the_cdef(lib):
    assert lib.HSA_STATUS_ERROR_INVALID_PACKET_FORMAT == 0x1009
    assert lib.HSA_PACKET_TYPE_BARRIER_OR == 5
    assert lib.HSA_AMD_PACKET_TYPE_BARRIER_VALUE == 2
