"""Agents: the CPUs and GPUs the runtime reports, with their properties read from a table."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hsapy._hsa import cache_info, call, constant, iterate
from hsapy._lifetime import NotCopyable
from hsapy.errors import HsapyTypeError, HsapyValueError, OutOfResourcesError
from hsapy.hsa_enums import HSA_STATUS_SUCCESS
from hsapy.memory import MemoryPool

if TYPE_CHECKING:
    from hsapy.queue import Queue
    from hsapy.runtime import Runtime

__all__ = ["Agent", "AGENT_INFO", "InfoField"]

# create_queue's keyword options besides size and type (hsa_queue_create's segment sizes)
_QUEUE_OPTIONS = frozenset({"private_segment_size", "group_segment_size"})

# hsa_device_type_t (hsa.h)
DEVICE_TYPE_NAMES = {
    constant("HSA_DEVICE_TYPE_CPU"): "CPU",
    constant("HSA_DEVICE_TYPE_GPU"): "GPU",
    constant("HSA_DEVICE_TYPE_DSP"): "DSP",
}


@dataclass(frozen=True)
class InfoField:
    """One agent property: its hsa_agent_info_t / hsa_amd_agent_info_t enumerator and C type."""

    attribute: str      # the C enumerator, resolved through the cdef (checked by tests/abi)
    ctype: str          # "char[64]", "uint16_t[3]", "hsa_dim3_t", or a scalar C type
    gpu_only: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.attribute, str) or not isinstance(self.ctype, str):
            raise HsapyTypeError(f"InfoField(attribute, ctype) takes two str, e.g. "
                                 f"InfoField('HSA_AMD_AGENT_INFO_BDFID', 'uint32_t'), not "
                                 f"{self.attribute!r:.40}, {self.ctype!r:.40}")

    @property
    def value(self) -> int:
        """The enumerator's value, read from the cdef."""
        try:
            return constant(self.attribute)
        except KeyError:
            raise HsapyValueError(f"InfoField: {self.attribute!r} is not an hsa_agent_info_t / "
                                  "hsa_amd_agent_info_t enumerator of hsapy's cdef") from None


# Value types from the comments of hsa.h / hsa_ext_amd.h (ROCm 5.2.3): names are char[64], the
# UUID is at most 21 characters including the NUL, dimensions are uint16_t[3] / hsa_dim3_t.
AGENT_INFO: dict[str, InfoField] = {
    "name": InfoField("HSA_AGENT_INFO_NAME", "char[64]"),
    "vendor_name": InfoField("HSA_AGENT_INFO_VENDOR_NAME", "char[64]"),
    "feature": InfoField("HSA_AGENT_INFO_FEATURE", "uint32_t"),
    "profile": InfoField("HSA_AGENT_INFO_PROFILE", "uint32_t"),
    "wavefront_size": InfoField("HSA_AGENT_INFO_WAVEFRONT_SIZE", "uint32_t", gpu_only=True),
    "workgroup_max_dim": InfoField("HSA_AGENT_INFO_WORKGROUP_MAX_DIM", "uint16_t[3]",
                                   gpu_only=True),
    "workgroup_max_size": InfoField("HSA_AGENT_INFO_WORKGROUP_MAX_SIZE", "uint32_t",
                                    gpu_only=True),
    "grid_max_dim": InfoField("HSA_AGENT_INFO_GRID_MAX_DIM", "hsa_dim3_t", gpu_only=True),
    "grid_max_size": InfoField("HSA_AGENT_INFO_GRID_MAX_SIZE", "uint32_t", gpu_only=True),
    "queues_max": InfoField("HSA_AGENT_INFO_QUEUES_MAX", "uint32_t", gpu_only=True),
    "queue_min_size": InfoField("HSA_AGENT_INFO_QUEUE_MIN_SIZE", "uint32_t", gpu_only=True),
    "queue_max_size": InfoField("HSA_AGENT_INFO_QUEUE_MAX_SIZE", "uint32_t", gpu_only=True),
    "node": InfoField("HSA_AGENT_INFO_NODE", "uint32_t"),
    "device_type": InfoField("HSA_AGENT_INFO_DEVICE", "uint32_t"),
    "chip_id": InfoField("HSA_AMD_AGENT_INFO_CHIP_ID", "uint32_t", gpu_only=True),
    "cacheline_size": InfoField("HSA_AMD_AGENT_INFO_CACHELINE_SIZE", "uint32_t"),
    "compute_unit_count": InfoField("HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT", "uint32_t"),
    "max_clock_mhz": InfoField("HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY", "uint32_t"),
    "product_name": InfoField("HSA_AMD_AGENT_INFO_PRODUCT_NAME", "char[64]"),
    "max_waves_per_cu": InfoField("HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU", "uint32_t",
                                  gpu_only=True),
    "uuid": InfoField("HSA_AMD_AGENT_INFO_UUID", "char[21]"),
}


def _read(lib: Any, ffi: Any, handle: int, field: InfoField) -> Any:
    """One hsa_agent_get_info call; None when the runtime does not answer this attribute."""
    if field.ctype.startswith("char[") or field.ctype.endswith("]"):
        out = ffi.new(field.ctype)
    else:
        out = ffi.new(field.ctype + " *")
    if lib.hsa_agent_get_info({"handle": handle}, field.value, out) != HSA_STATUS_SUCCESS:
        return None
    if field.ctype.startswith("char["):
        return ffi.string(out).decode(errors="replace")
    if field.ctype.endswith("]"):
        return tuple(out)
    if field.ctype == "hsa_dim3_t":
        return (out.x, out.y, out.z)
    return out[0]


class _Info:
    """A read-only Agent property backed by ``agent.info[<property name>]`` (AGENT_INFO).

    ``default`` stands in when the runtime does not answer (e.g. GPU-only properties on a CPU)."""

    def __init__(self, default: Any, doc: str) -> None:
        self.default = default
        self.__doc__ = doc
        self.key = ""

    def __set_name__(self, owner: type, name: str) -> None:
        if name not in AGENT_INFO:
            raise TypeError(f"{owner.__name__}.{name} is not a key of AGENT_INFO")
        self.key = name

    def __get__(self, agent: Any, owner: type | None = None) -> Any:
        if agent is None:
            return self
        value = agent.info.get(self.key)
        return self.default if value is None else value


class Agent(NotCopyable):
    """An HSA agent (CPU or GPU). Take agents from ``Runtime.agents`` / ``gpu_agents``.

    Properties come from :data:`AGENT_INFO` (read once); ``info[name]`` holds them all and
    :meth:`as_dict` returns them with the memory pools, as ``hsapy info`` prints them.
    """

    def __init__(self, runtime: Runtime, handle: int) -> None:
        self.runtime = runtime
        self.handle = int(handle)
        lib, ffi = runtime.lib, runtime.ffi
        device = _read(lib, ffi, self.handle, AGENT_INFO["device_type"])
        self.is_gpu = device == constant("HSA_DEVICE_TYPE_GPU")
        self.info: dict[str, Any] = {}
        for key, field in AGENT_INFO.items():
            if field.gpu_only and not self.is_gpu:
                continue
            self.info[key] = _read(lib, ffi, self.handle, field)
        self.isa_names = self._isa_names() if self.is_gpu else []
        self._pools: list[MemoryPool] | None = None
        self._caches: list[dict[str, Any]] | None = None

    # Properties named as a reader of hsa.h expects, each backed by info[<its name>] (AGENT_INFO).
    name = _Info("", "HSA_AGENT_INFO_NAME, e.g. 'gfx942' (the CPU's model name for a CPU).")
    vendor_name = _Info("", "HSA_AGENT_INFO_VENDOR_NAME, e.g. 'AMD'.")
    product_name = _Info("", "HSA_AMD_AGENT_INFO_PRODUCT_NAME, e.g. 'AMD Instinct MI300X'.")
    uuid = _Info("", "HSA_AMD_AGENT_INFO_UUID: 'GPU-<16 hex digits>' ('GPU-XX' without one).")
    node = _Info(0, "HSA_AGENT_INFO_NODE: the agent's NUMA/KFD node.")
    chip_id = _Info(0, "HSA_AMD_AGENT_INFO_CHIP_ID: the PCI device id (GPUs).")
    wavefront_size = _Info(0, "HSA_AGENT_INFO_WAVEFRONT_SIZE: lanes per wave (0 for CPUs).")
    workgroup_max_dim = _Info((0, 0, 0), "HSA_AGENT_INFO_WORKGROUP_MAX_DIM per dimension.")
    workgroup_max_size = _Info(0, "HSA_AGENT_INFO_WORKGROUP_MAX_SIZE: work-items per workgroup.")
    grid_max_dim = _Info((0, 0, 0), "HSA_AGENT_INFO_GRID_MAX_DIM per dimension.")
    grid_max_size = _Info(0, "HSA_AGENT_INFO_GRID_MAX_SIZE: work-items per grid.")
    compute_unit_count = _Info(0, "HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT.")
    max_waves_per_cu = _Info(0, "HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU.")
    queues_max = _Info(0, "HSA_AGENT_INFO_QUEUES_MAX: queues the agent supports at once.")
    queue_min_size = _Info(0, "HSA_AGENT_INFO_QUEUE_MIN_SIZE in packets.")
    queue_max_size = _Info(0, "HSA_AGENT_INFO_QUEUE_MAX_SIZE in packets.")

    def query(self, field: InfoField) -> Any:
        """One property outside :data:`AGENT_INFO`, read now with hsa_agent_get_info, e.g.
        ``agent.query(InfoField("HSA_AMD_AGENT_INFO_BDFID", "uint32_t"))``; None when the
        runtime does not answer it."""
        if not isinstance(field, InfoField):
            raise HsapyTypeError(f"Agent.query: field is an InfoField(attribute, ctype), not "
                                 f"{type(field).__name__} {field!r:.40}")
        self.runtime._state.check()
        field.value                   # noqa: B018 -- an unknown enumerator raises here
        try:
            # a value type: a pointer would be filled with whatever the runtime writes there
            known = "*" not in field.ctype and self.runtime.ffi.typeof(field.ctype) is not None
        except Exception:     # cffi's CDefError / FFIError: no C type by that name
            known = False
        if not known:
            raise HsapyValueError(f"InfoField: {field.ctype!r} is not a C value type hsapy's "
                                  "cdef knows (e.g. 'uint32_t', 'char[64]', 'hsa_dim3_t')")
        return _read(self.runtime.lib, self.runtime.ffi, self.handle, field)

    @property
    def device_type(self) -> str:
        """HSA_AGENT_INFO_DEVICE as "CPU", "GPU" or "DSP"."""
        return DEVICE_TYPE_NAMES.get(self.info["device_type"], "unknown")

    @property
    def lds_size(self) -> int:
        """Bytes of LDS (group segment) a workgroup may use: the agent's group pool size."""
        for pool in self.memory_pools:
            if pool.segment == "group":
                return pool.size
        return 0

    @property
    def target(self) -> str:
        """The gfx name of the agent's first ISA, e.g. ``gfx942`` (empty for CPUs)."""
        if not self.isa_names:
            return ""
        return self.isa_names[0].split("--")[-1].split(":")[0]

    def _isa_names(self) -> list[str]:
        lib, ffi = self.runtime.lib, self.runtime.ffi
        names: list[str] = []
        for isa in iterate(lib, "hsa_agent_iterate_isas", "hsa_isa_t", {"handle": self.handle}):
            length = ffi.new("uint32_t *")
            call(lib, "hsa_isa_get_info_alt", {"handle": isa}, constant("HSA_ISA_INFO_NAME_LENGTH"),
                 length)
            text = ffi.new("char[]", length[0] + 1)  # the length may or may not count the NUL
            call(lib, "hsa_isa_get_info_alt", {"handle": isa}, constant("HSA_ISA_INFO_NAME"), text)
            names.append(ffi.string(text).decode())
        return names

    @property
    def caches(self) -> list[dict[str, Any]]:
        """The agent's caches (hsa_agent_iterate_caches): name, level and size in bytes."""
        if self._caches is None:
            self.runtime._state.check()
            lib = self.runtime.lib
            self._caches = [self._cache_info(handle) for handle in iterate(
                lib, "hsa_agent_iterate_caches", "hsa_cache_t", {"handle": self.handle})]
        return self._caches

    def _cache_info(self, handle: int) -> dict[str, Any]:
        name, level, size = cache_info(self.runtime.lib, handle)
        return {"handle": handle, "name": name, "level": level, "size": size}

    @property
    def memory_pools(self) -> list[MemoryPool]:
        """The agent's memory pools (hsa_amd_agent_iterate_memory_pools), in runtime order."""
        if self._pools is None:
            self.runtime._state.check()
            handles = iterate(self.runtime.lib, "hsa_amd_agent_iterate_memory_pools",
                              "hsa_amd_memory_pool_t", {"handle": self.handle})
            self._pools = [MemoryPool(self, h) for h in handles]
        return self._pools

    def _first_pool(self, predicate: Callable[[MemoryPool], bool], what: str) -> MemoryPool:
        for pool in self.memory_pools:
            if predicate(pool):
                return pool
        raise HsapyValueError(f"agent {self.name} has no {what} memory pool")

    @property
    def kernarg_pool(self) -> MemoryPool:
        """A pool for kernarg segments: this agent's, else the system (CPU) kernarg pool."""
        for pool in self.memory_pools:
            if pool.is_kernarg and pool.is_allocation_allowed:
                return pool
        return self.runtime.kernarg_pool

    @property
    def device_pool(self) -> MemoryPool:
        """The agent's coarse-grained global pool (VRAM on a GPU)."""
        return self._first_pool(lambda p: p.segment == "global" and p.is_coarse_grained
                                and p.is_allocation_allowed, "coarse-grained global")

    @property
    def fine_grained_pool(self) -> MemoryPool:
        """A fine-grained global pool of this agent (host-visible)."""
        return self._first_pool(lambda p: p.segment == "global" and p.is_fine_grained
                                and p.is_allocation_allowed, "fine-grained global")

    def create_queue(self, size: int = 256, type: str = "multi", **options: Any) -> Queue:
        """Create an AQL queue on this agent (see :class:`hsapy.queue.Queue`)."""
        from hsapy.queue import Queue

        self.runtime._state.check()
        unknown = sorted(set(options) - _QUEUE_OPTIONS)
        if unknown:
            raise HsapyTypeError(f"create_queue: unknown option {', '.join(unknown)}; the "
                                 f"options are size, type, {', '.join(sorted(_QUEUE_OPTIONS))}")
        try:
            return Queue(self, size=size, type=type, **options)
        except OutOfResourcesError as exc:
            raise exc.__class__(
                exc.status, exc.function,
                f"no queue of {size} packets on {self.name}: the agent runs at most "
                f"{self.queues_max} queues at once (HSA_AGENT_INFO_QUEUES_MAX), or memory ran "
                "out; close queues no longer needed (Queue.close)") from None

    def as_dict(self) -> dict[str, Any]:
        """All properties, ISA names and pools: what ``hsapy info --json`` prints."""
        out = {"handle": self.handle, "device_type": self.device_type, **self.info}
        out["device_type"] = self.device_type
        out["isa_names"] = list(self.isa_names)
        if self.is_gpu:
            out["lds_size"] = self.lds_size
        out["caches"] = [dict(cache) for cache in self.caches]
        out["memory_pools"] = [pool.as_dict() for pool in self.memory_pools]
        return out

    def __repr__(self) -> str:
        return f"<Agent {self.name} ({self.device_type}) handle={self.handle:#x}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Agent) and other.handle == self.handle

    def __hash__(self) -> int:
        return hash(self.handle)
