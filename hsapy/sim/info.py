"""Info-attribute tables of the simulated runtime: attribute -> (C type, value getter).

Types follow the attribute documentation in hsa.h / hsa_ext_amd.h (ROCm 5.2.3); the values
come from the agent's profile (hsapy/sim/targets.py). Kept apart from the API logic so that a
reader can check every row against the header.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from hsapy.sim.simlib import SimAgent

Getter = Callable[[Any], Any]

# hsa enum values used below (hsa.h)
HSA_AGENT_FEATURE_KERNEL_DISPATCH = 1
HSA_MACHINE_MODEL_LARGE = 1
HSA_PROFILE_BASE, HSA_PROFILE_FULL = 0, 1
HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR = 2
HSA_QUEUE_TYPE_MULTI = 0
HSA_DEVICE_TYPE_CPU, HSA_DEVICE_TYPE_GPU = 0, 1
HSA_AMD_SEGMENT_GLOBAL, HSA_AMD_SEGMENT_GROUP = 0, 3


def _gpu(getter: Getter, cpu_value: Any = 0) -> Getter:
    """A getter reading the GPU profile, with a fixed value for the CPU agent."""
    def get(agent: SimAgent) -> Any:
        return getter(agent.profile) if agent.is_gpu else cpu_value
    return get


# hsa_agent_info_t and hsa_amd_agent_info_t. C types: "char[N]", "uint16_t[3]", "uint32_t[4]",
# "uint8_t[128]", "hsa_dim3_t", "hsa_isa_t", or a scalar C type name.
AGENT_INFO: dict[int, tuple[str, Getter]] = {
    0: ("char[64]", lambda a: a.name),                                        # NAME
    1: ("char[64]", lambda a: "AMD" if a.is_gpu else "CPU"),                  # VENDOR_NAME
    2: ("uint32_t", _gpu(lambda p: HSA_AGENT_FEATURE_KERNEL_DISPATCH)),       # FEATURE
    3: ("uint32_t", lambda a: HSA_MACHINE_MODEL_LARGE),                       # MACHINE_MODEL
    4: ("uint32_t", _gpu(lambda p: HSA_PROFILE_BASE, HSA_PROFILE_FULL)),      # PROFILE
    5: ("uint32_t", lambda a: HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR),          # DEFAULT_FLOAT_ROUNDING_MODE
    23: ("uint32_t", lambda a: HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR),         # BASE_PROFILE_DEFAULT_FRM
    24: ("bool", _gpu(lambda p: p.fast_f16, False)),                          # FAST_F16_OPERATION
    6: ("uint32_t", _gpu(lambda p: p.wavefront_size)),                        # WAVEFRONT_SIZE
    7: ("uint16_t[3]", _gpu(lambda p: p.workgroup_max_dim, (0, 0, 0))),       # WORKGROUP_MAX_DIM
    8: ("uint32_t", _gpu(lambda p: p.workgroup_max_size)),                    # WORKGROUP_MAX_SIZE
    9: ("hsa_dim3_t", _gpu(lambda p: p.grid_max_dim, (0, 0, 0))),            # GRID_MAX_DIM
    10: ("uint32_t", _gpu(lambda p: p.grid_max_size)),                        # GRID_MAX_SIZE
    11: ("uint32_t", _gpu(lambda p: p.fbarrier_max_size)),                    # FBARRIER_MAX_SIZE
    12: ("uint32_t", _gpu(lambda p: p.queues_max)),                           # QUEUES_MAX
    13: ("uint32_t", _gpu(lambda p: p.queue_min_size)),                       # QUEUE_MIN_SIZE
    14: ("uint32_t", _gpu(lambda p: p.queue_max_size)),                       # QUEUE_MAX_SIZE
    15: ("uint32_t", lambda a: HSA_QUEUE_TYPE_MULTI),                         # QUEUE_TYPE
    16: ("uint32_t", lambda a: a.node),                                       # NODE
    17: ("uint32_t", lambda a: HSA_DEVICE_TYPE_GPU if a.is_gpu else HSA_DEVICE_TYPE_CPU),  # DEVICE
    18: ("uint32_t[4]", lambda a: a.profile.cache_sizes),                     # CACHE_SIZE
    19: ("hsa_isa_t", lambda a: a.isa.handle if a.isa is not None else 0),    # ISA (deprecated)
    20: ("uint8_t[128]", lambda a: b""),                                      # EXTENSIONS
    21: ("uint16_t", lambda a: 1),                                            # VERSION_MAJOR
    22: ("uint16_t", lambda a: 1),                                            # VERSION_MINOR
    # hsa_ext_amd.h
    0xA000: ("uint32_t", _gpu(lambda p: p.chip_id)),                          # CHIP_ID
    0xA001: ("uint32_t", lambda a: a.profile.cacheline_size),                 # CACHELINE_SIZE
    0xA002: ("uint32_t", lambda a: a.profile.compute_units),                  # COMPUTE_UNIT_COUNT
    0xA003: ("uint32_t", lambda a: a.profile.max_clock_mhz),                  # MAX_CLOCK_FREQUENCY
    0xA004: ("uint32_t", lambda a: a.node),                                   # DRIVER_NODE_ID
    0xA005: ("uint32_t", _gpu(lambda p: 4)),                                  # MAX_ADDRESS_WATCH_POINTS
    0xA006: ("uint32_t", lambda a: a.bdfid),                                  # BDFID
    0xA007: ("uint32_t", _gpu(lambda p: p.memory_width_bits)),                # MEMORY_WIDTH
    0xA008: ("uint32_t", _gpu(lambda p: p.memory_clock_mhz)),                 # MEMORY_MAX_FREQUENCY
    0xA009: ("char[64]", lambda a: a.profile.product_name),                   # PRODUCT_NAME
    0xA00A: ("uint32_t", _gpu(lambda p: p.max_waves_per_cu)),                 # MAX_WAVES_PER_CU
    0xA00B: ("uint32_t", _gpu(lambda p: p.simds_per_cu)),                     # NUM_SIMDS_PER_CU
    0xA00C: ("uint32_t", _gpu(lambda p: p.shader_engines)),                   # NUM_SHADER_ENGINES
    0xA00D: ("uint32_t", _gpu(lambda p: p.shader_arrays_per_engine)),         # NUM_SHADER_ARRAYS_PER_SE
    0xA00F: ("uint32_t", lambda a: 0),                                        # DOMAIN
    0xA010: ("bool", lambda a: False),                                        # COOPERATIVE_QUEUES
    0xA011: ("char[21]", lambda a: a.uuid),                                   # UUID
    0xA012: ("uint32_t", lambda a: 0),                                        # ASIC_REVISION
    0xA013: ("bool", lambda a: True),                                         # SVM_DIRECT_HOST_ACCESS
    0xA014: ("uint32_t", _gpu(lambda p: p.compute_units)),                    # COOPERATIVE_CU_COUNT
}

# hsa_amd_memory_pool_info_t
POOL_INFO: dict[int, tuple[str, Getter]] = {
    0: ("uint32_t", lambda p: p.segment),                   # SEGMENT (hsa_amd_segment_t)
    1: ("uint32_t", lambda p: p.global_flags),              # GLOBAL_FLAGS
    2: ("size_t", lambda p: p.size),                        # SIZE
    5: ("bool", lambda p: p.alloc_allowed),                 # RUNTIME_ALLOC_ALLOWED
    6: ("size_t", lambda p: p.granule),                     # RUNTIME_ALLOC_GRANULE
    7: ("size_t", lambda p: p.alignment),                   # RUNTIME_ALLOC_ALIGNMENT
    15: ("bool", lambda p: p.accessible_by_all),            # ACCESSIBLE_BY_ALL
    16: ("size_t", lambda p: p.alloc_max_size),             # ALLOC_MAX_SIZE
}

# hsa_isa_info_t as answered by hsa_isa_get_info_alt (call-convention attributes are not).
ISA_INFO: dict[int, tuple[str, Getter]] = {
    0: ("uint32_t", lambda i: len(i.name) + 1),             # NAME_LENGTH (counts the NUL)
    1: ("name", lambda i: i.name),                          # NAME: char[NAME_LENGTH]
    5: ("bool[2]", lambda i: (False, True)),                # MACHINE_MODELS: small, large
    6: ("bool[2]", lambda i: (True, False)),                # PROFILES: base, full
    7: ("bool[3]", lambda i: (False, False, True)),         # DEFAULT_FLOAT_ROUNDING_MODES
    8: ("bool[3]", lambda i: (False, False, True)),         # BASE_PROFILE_DEFAULT_FRM
    9: ("bool", lambda i: i.profile.fast_f16),              # FAST_F16_OPERATION
    12: ("uint16_t[3]", lambda i: i.profile.workgroup_max_dim),
    13: ("uint32_t", lambda i: i.profile.workgroup_max_size),
    14: ("hsa_dim3_t", lambda i: i.profile.grid_max_dim),
    16: ("uint64_t", lambda i: i.profile.grid_max_size),    # GRID_MAX_SIZE is uint64_t for ISAs
    17: ("uint32_t", lambda i: i.profile.fbarrier_max_size),
}

# hsa_cache_info_t
CACHE_INFO: dict[int, tuple[str, Getter]] = {
    0: ("uint32_t", lambda c: len(c.name)),                 # NAME_LENGTH
    1: ("name", lambda c: c.name),                          # NAME (NUL-terminated)
    2: ("uint8_t", lambda c: c.level),                      # LEVEL
    3: ("uint32_t", lambda c: c.size),                      # SIZE
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
