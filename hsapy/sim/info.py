"""Info-attribute tables of the simulated runtime: attribute -> (C type, value getter).

Types follow the attribute documentation in hsa.h / hsa_ext_amd.h (ROCm 5.2.3); the values
come from the agent's profile (hsapy/sim/targets.py). Kept apart from the API logic so that a
reader can check every row against the header.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hsapy.hsa_enums import (
    HSA_AGENT_FEATURE_KERNEL_DISPATCH,
    HSA_AGENT_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES,
    HSA_AGENT_INFO_CACHE_SIZE,
    HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE,
    HSA_AGENT_INFO_DEVICE,
    HSA_AGENT_INFO_EXTENSIONS,
    HSA_AGENT_INFO_FAST_F16_OPERATION,
    HSA_AGENT_INFO_FBARRIER_MAX_SIZE,
    HSA_AGENT_INFO_FEATURE,
    HSA_AGENT_INFO_GRID_MAX_DIM,
    HSA_AGENT_INFO_GRID_MAX_SIZE,
    HSA_AGENT_INFO_ISA,
    HSA_AGENT_INFO_MACHINE_MODEL,
    HSA_AGENT_INFO_NAME,
    HSA_AGENT_INFO_NODE,
    HSA_AGENT_INFO_PROFILE,
    HSA_AGENT_INFO_QUEUE_MAX_SIZE,
    HSA_AGENT_INFO_QUEUE_MIN_SIZE,
    HSA_AGENT_INFO_QUEUE_TYPE,
    HSA_AGENT_INFO_QUEUES_MAX,
    HSA_AGENT_INFO_VENDOR_NAME,
    HSA_AGENT_INFO_VERSION_MAJOR,
    HSA_AGENT_INFO_VERSION_MINOR,
    HSA_AGENT_INFO_WAVEFRONT_SIZE,
    HSA_AGENT_INFO_WORKGROUP_MAX_DIM,
    HSA_AGENT_INFO_WORKGROUP_MAX_SIZE,
    HSA_AMD_AGENT_INFO_ASIC_REVISION,
    HSA_AMD_AGENT_INFO_BDFID,
    HSA_AMD_AGENT_INFO_CACHELINE_SIZE,
    HSA_AMD_AGENT_INFO_CHIP_ID,
    HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT,
    HSA_AMD_AGENT_INFO_COOPERATIVE_COMPUTE_UNIT_COUNT,
    HSA_AMD_AGENT_INFO_COOPERATIVE_QUEUES,
    HSA_AMD_AGENT_INFO_DOMAIN,
    HSA_AMD_AGENT_INFO_DRIVER_NODE_ID,
    HSA_AMD_AGENT_INFO_MAX_ADDRESS_WATCH_POINTS,
    HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY,
    HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU,
    HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY,
    HSA_AMD_AGENT_INFO_MEMORY_WIDTH,
    HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE,
    HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES,
    HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU,
    HSA_AMD_AGENT_INFO_PRODUCT_NAME,
    HSA_AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS,
    HSA_AMD_AGENT_INFO_UUID,
    HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL,
    HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE,
    HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS,
    HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT,
    HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED,
    HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE,
    HSA_AMD_MEMORY_POOL_INFO_SEGMENT,
    HSA_AMD_MEMORY_POOL_INFO_SIZE,
    HSA_CACHE_INFO_LEVEL,
    HSA_CACHE_INFO_NAME,
    HSA_CACHE_INFO_NAME_LENGTH,
    HSA_CACHE_INFO_SIZE,
    HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR,
    HSA_DEVICE_TYPE_CPU,
    HSA_DEVICE_TYPE_GPU,
    HSA_ISA_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES,
    HSA_ISA_INFO_DEFAULT_FLOAT_ROUNDING_MODES,
    HSA_ISA_INFO_FAST_F16_OPERATION,
    HSA_ISA_INFO_FBARRIER_MAX_SIZE,
    HSA_ISA_INFO_GRID_MAX_DIM,
    HSA_ISA_INFO_GRID_MAX_SIZE,
    HSA_ISA_INFO_MACHINE_MODELS,
    HSA_ISA_INFO_NAME,
    HSA_ISA_INFO_NAME_LENGTH,
    HSA_ISA_INFO_PROFILES,
    HSA_ISA_INFO_WORKGROUP_MAX_DIM,
    HSA_ISA_INFO_WORKGROUP_MAX_SIZE,
    HSA_MACHINE_MODEL_LARGE,
    HSA_PROFILE_BASE,
    HSA_PROFILE_FULL,
    HSA_QUEUE_TYPE_MULTI,
)

if TYPE_CHECKING:
    from hsapy.sim.objects import SimAgent

Getter = Callable[[Any], Any]


def _gpu(getter: Getter, cpu_value: Any = 0) -> Getter:
    """A getter reading the GPU profile, with a fixed value for the CPU agent."""
    def get(agent: SimAgent) -> Any:
        return getter(agent.profile) if agent.is_gpu else cpu_value
    return get


# hsa_agent_info_t and hsa_amd_agent_info_t. C types: "char[N]", "uint16_t[3]", "uint32_t[4]",
# "uint8_t[128]", "hsa_dim3_t", "hsa_isa_t", or a scalar C type name.
AGENT_INFO: dict[int, tuple[str, Getter]] = {
    HSA_AGENT_INFO_NAME: ("char[64]", lambda a: a.name),
    HSA_AGENT_INFO_VENDOR_NAME: ("char[64]", lambda a: "AMD" if a.is_gpu else "CPU"),
    HSA_AGENT_INFO_FEATURE: ("uint32_t", _gpu(lambda p: HSA_AGENT_FEATURE_KERNEL_DISPATCH)),
    HSA_AGENT_INFO_MACHINE_MODEL: ("uint32_t", lambda a: HSA_MACHINE_MODEL_LARGE),
    HSA_AGENT_INFO_PROFILE: ("uint32_t", _gpu(lambda p: HSA_PROFILE_BASE, HSA_PROFILE_FULL)),
    HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE:
        ("uint32_t", lambda a: HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR),
    HSA_AGENT_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES:
        ("uint32_t", lambda a: HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR),
    HSA_AGENT_INFO_FAST_F16_OPERATION: ("bool", _gpu(lambda p: p.fast_f16, False)),
    HSA_AGENT_INFO_WAVEFRONT_SIZE: ("uint32_t", _gpu(lambda p: p.wavefront_size)),
    HSA_AGENT_INFO_WORKGROUP_MAX_DIM:
        ("uint16_t[3]", _gpu(lambda p: p.workgroup_max_dim, (0, 0, 0))),
    HSA_AGENT_INFO_WORKGROUP_MAX_SIZE: ("uint32_t", _gpu(lambda p: p.workgroup_max_size)),
    HSA_AGENT_INFO_GRID_MAX_DIM: ("hsa_dim3_t", _gpu(lambda p: p.grid_max_dim, (0, 0, 0))),
    HSA_AGENT_INFO_GRID_MAX_SIZE: ("uint32_t", _gpu(lambda p: p.grid_max_size)),
    HSA_AGENT_INFO_FBARRIER_MAX_SIZE: ("uint32_t", _gpu(lambda p: p.fbarrier_max_size)),
    HSA_AGENT_INFO_QUEUES_MAX: ("uint32_t", _gpu(lambda p: p.queues_max)),
    HSA_AGENT_INFO_QUEUE_MIN_SIZE: ("uint32_t", _gpu(lambda p: p.queue_min_size)),
    HSA_AGENT_INFO_QUEUE_MAX_SIZE: ("uint32_t", _gpu(lambda p: p.queue_max_size)),
    HSA_AGENT_INFO_QUEUE_TYPE: ("uint32_t", lambda a: HSA_QUEUE_TYPE_MULTI),
    HSA_AGENT_INFO_NODE: ("uint32_t", lambda a: a.node),
    HSA_AGENT_INFO_DEVICE:
        ("uint32_t", lambda a: HSA_DEVICE_TYPE_GPU if a.is_gpu else HSA_DEVICE_TYPE_CPU),
    HSA_AGENT_INFO_CACHE_SIZE: ("uint32_t[4]", lambda a: a.profile.cache_sizes),
    HSA_AGENT_INFO_ISA:
        ("hsa_isa_t", lambda a: a.isa.handle if a.isa is not None else 0),  # (deprecated)
    HSA_AGENT_INFO_EXTENSIONS: ("uint8_t[128]", lambda a: b""),
    HSA_AGENT_INFO_VERSION_MAJOR: ("uint16_t", lambda a: 1),
    HSA_AGENT_INFO_VERSION_MINOR: ("uint16_t", lambda a: 1),
    # hsa_ext_amd.h
    HSA_AMD_AGENT_INFO_CHIP_ID: ("uint32_t", _gpu(lambda p: p.chip_id)),
    HSA_AMD_AGENT_INFO_CACHELINE_SIZE: ("uint32_t", lambda a: a.profile.cacheline_size),
    HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT: ("uint32_t", lambda a: a.profile.compute_units),
    HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY: ("uint32_t", lambda a: a.profile.max_clock_mhz),
    HSA_AMD_AGENT_INFO_DRIVER_NODE_ID: ("uint32_t", lambda a: a.node),
    HSA_AMD_AGENT_INFO_MAX_ADDRESS_WATCH_POINTS: ("uint32_t", _gpu(lambda p: 4)),
    HSA_AMD_AGENT_INFO_BDFID: ("uint32_t", lambda a: a.bdfid),
    HSA_AMD_AGENT_INFO_MEMORY_WIDTH: ("uint32_t", _gpu(lambda p: p.memory_width_bits)),
    HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY: ("uint32_t", _gpu(lambda p: p.memory_clock_mhz)),
    HSA_AMD_AGENT_INFO_PRODUCT_NAME: ("char[64]", lambda a: a.profile.product_name),
    HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU: ("uint32_t", _gpu(lambda p: p.max_waves_per_cu)),
    HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU: ("uint32_t", _gpu(lambda p: p.simds_per_cu)),
    HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES: ("uint32_t", _gpu(lambda p: p.shader_engines)),
    HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE:
        ("uint32_t", _gpu(lambda p: p.shader_arrays_per_engine)),
    HSA_AMD_AGENT_INFO_DOMAIN: ("uint32_t", lambda a: 0),
    HSA_AMD_AGENT_INFO_COOPERATIVE_QUEUES: ("bool", lambda a: False),
    HSA_AMD_AGENT_INFO_UUID: ("char[21]", lambda a: a.uuid),
    HSA_AMD_AGENT_INFO_ASIC_REVISION: ("uint32_t", lambda a: 0),
    HSA_AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS: ("bool", lambda a: True),
    HSA_AMD_AGENT_INFO_COOPERATIVE_COMPUTE_UNIT_COUNT:
        ("uint32_t", _gpu(lambda p: p.compute_units)),  # COOPERATIVE_CU_COUNT
}

# hsa_amd_memory_pool_info_t
POOL_INFO: dict[int, tuple[str, Getter]] = {
    HSA_AMD_MEMORY_POOL_INFO_SEGMENT: ("uint32_t", lambda p: p.segment),  # (hsa_amd_segment_t)
    HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS: ("uint32_t", lambda p: p.global_flags),
    HSA_AMD_MEMORY_POOL_INFO_SIZE: ("size_t", lambda p: p.size),
    HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED: ("bool", lambda p: p.alloc_allowed),
    HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE: ("size_t", lambda p: p.granule),
    HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT: ("size_t", lambda p: p.alignment),
    HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL: ("bool", lambda p: p.accessible_by_all),
    HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE: ("size_t", lambda p: p.alloc_max_size),
}

# hsa_isa_info_t as answered by hsa_isa_get_info_alt (call-convention attributes are not).
ISA_INFO: dict[int, tuple[str, Getter]] = {
    HSA_ISA_INFO_NAME_LENGTH: ("uint32_t", lambda i: len(i.name) + 1),  # (counts the NUL)
    HSA_ISA_INFO_NAME: ("name", lambda i: i.name),  # : char[NAME_LENGTH]
    HSA_ISA_INFO_MACHINE_MODELS: ("bool[2]", lambda i: (False, True)),  # : small, large
    HSA_ISA_INFO_PROFILES: ("bool[2]", lambda i: (True, False)),  # : base, full
    HSA_ISA_INFO_DEFAULT_FLOAT_ROUNDING_MODES: ("bool[3]", lambda i: (False, False, True)),
    HSA_ISA_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES:
        ("bool[3]", lambda i: (False, False, True)),
    HSA_ISA_INFO_FAST_F16_OPERATION: ("bool", lambda i: i.profile.fast_f16),
    HSA_ISA_INFO_WORKGROUP_MAX_DIM: ("uint16_t[3]", lambda i: i.profile.workgroup_max_dim),
    HSA_ISA_INFO_WORKGROUP_MAX_SIZE: ("uint32_t", lambda i: i.profile.workgroup_max_size),
    HSA_ISA_INFO_GRID_MAX_DIM: ("hsa_dim3_t", lambda i: i.profile.grid_max_dim),
    HSA_ISA_INFO_GRID_MAX_SIZE:
        ("uint64_t", lambda i: i.profile.grid_max_size),  # is uint64_t for ISAs
    HSA_ISA_INFO_FBARRIER_MAX_SIZE: ("uint32_t", lambda i: i.profile.fbarrier_max_size),
}

# hsa_cache_info_t
CACHE_INFO: dict[int, tuple[str, Getter]] = {
    HSA_CACHE_INFO_NAME_LENGTH: ("uint32_t", lambda c: len(c.name)),
    HSA_CACHE_INFO_NAME: ("name", lambda c: c.name),  # (NUL-terminated)
    HSA_CACHE_INFO_LEVEL: ("uint8_t", lambda c: c.level),
    HSA_CACHE_INFO_SIZE: ("uint32_t", lambda c: c.size),
}


def write_value(ffi: Any, pointer: Any, ctype: str, value: Any) -> None:
    """Write ``value`` as ``ctype`` to the ``void *`` ``pointer``."""
    if ctype.startswith("char["):
        length = int(ctype[5:-1])
        data = str(value).encode()[: length - 1]
        ffi.memmove(pointer, data + b"\0" * (length - len(data)), length)
    elif ctype == "name":
        data = str(value).encode() + b"\0"
        ffi.memmove(pointer, data, len(data))
    elif ctype == "uint8_t[128]":
        data = bytes(value)[:128]
        ffi.memmove(pointer, data + b"\0" * (128 - len(data)), 128)
    elif ctype.endswith("]"):
        element, count = ctype[:-1].split("[")
        target = ffi.cast(element + " *", pointer)
        for i in range(int(count)):
            target[i] = value[i]
    elif ctype == "hsa_dim3_t":
        target = ffi.cast("hsa_dim3_t *", pointer)
        target.x, target.y, target.z = value
    elif ctype == "hsa_isa_t":
        ffi.cast("hsa_isa_t *", pointer).handle = value
    else:
        ffi.cast(ctype + " *", pointer)[0] = value
