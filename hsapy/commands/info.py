"""``hsapy info``: the agents, their properties and memory pools (like rocminfo)."""
from __future__ import annotations

import argparse
import json
import sys

from hsapy.runtime import BACKENDS

HELP = "show the runtime's agents, their properties and memory pools (like rocminfo)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=BACKENDS, default=None,
                        help="runtime backend (default: HSAPY_BACKEND or auto)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def _explain_failure(backend: str, exc: Exception) -> str:
    from hsapy.errors import BackendUnavailableError, HsapyValueError

    if isinstance(exc, BackendUnavailableError):
        return f"hsapy: {exc}. Without a GPU, run on the simulator: hsapy info --backend sim"
    if isinstance(exc, HsapyValueError):       # a setting to fix (HSAPY_BACKEND, HSAPY_SIM_*)
        return f"hsapy: {exc}"
    return f"hsapy: backend {backend} failed: {exc}. Try: hsapy info --backend sim"


# -- the rocminfo layout ------------------------------------------------------------------------
# Section names, labels, their order and the value formats are rocminfo's (ROCm/rocminfo,
# rocminfo.cc: DisplaySystemInfo, DisplayAgentInfo, DisplayPoolInfo, DisplayISAInfo): a label in
# 25 columns, a value padded to 35, two spaces of indent per level, integers as "64(0x40)".
# Lines whose attribute is newer than the ROCm 5.2.3 headers hsapy binds are left out.

LABEL_WIDTH, VALUE_WIDTH, INDENT = 25, 35, 2


_HEADING = object()     # a label with no value after it ("Cache Info:", "Pool 1", ...)


def _line(label: str, value: object = _HEADING, level: int = 0, pad: bool = True) -> str:
    text = f"{' ' * INDENT * level}{label:<{LABEL_WIDTH}}"
    if value is _HEADING:
        return text
    if value is None:           # the runtime did not answer this attribute
        value = "N/A"
    return text + (f"{value!s:<{VALUE_WIDTH}}" if pad else str(value))


def _int(value: int) -> str:
    """rocminfo's int_to_string: decimal, then hex in parentheses."""
    return f"{value}(0x{value:x})"


def _bool(value: object) -> str:
    return "TRUE" if value else "FALSE"


# Agent properties rocminfo shows beyond Agent.info: key -> (enumerator, C type).
_ROCMINFO_AGENT = {
    "float_rounding_mode": ("HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE", "uint32_t"),
    "queue_type": ("HSA_AGENT_INFO_QUEUE_TYPE", "uint32_t"),
    "cache_size": ("HSA_AGENT_INFO_CACHE_SIZE", "uint32_t[4]"),
    "asic_revision": ("HSA_AMD_AGENT_INFO_ASIC_REVISION", "uint32_t"),
    "internal_node_id": ("HSA_AMD_AGENT_INFO_DRIVER_NODE_ID", "uint32_t"),
    "watch_points": ("HSA_AMD_AGENT_INFO_MAX_ADDRESS_WATCH_POINTS", "uint32_t"),
    "bdfid": ("HSA_AMD_AGENT_INFO_BDFID", "uint32_t"),
    "simds_per_cu": ("HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU", "uint32_t"),
    "shader_engines": ("HSA_AMD_AGENT_INFO_NUM_SHADER_ENGINES", "uint32_t"),
    "shader_arrays": ("HSA_AMD_AGENT_INFO_NUM_SHADER_ARRAYS_PER_SE", "uint32_t"),
    "coherent_host_access": ("HSA_AMD_AGENT_INFO_SVM_DIRECT_HOST_ACCESS", "bool"),
    "fast_f16": ("HSA_AGENT_INFO_FAST_F16_OPERATION", "bool"),
    "fbarrier_max_size": ("HSA_AGENT_INFO_FBARRIER_MAX_SIZE", "uint32_t"),
}

# hsa_isa_get_info_alt attributes rocminfo shows: key -> (enumerator, C type).
_ROCMINFO_ISA = {
    "machine_models": ("HSA_ISA_INFO_MACHINE_MODELS", "bool[2]"),
    "profiles": ("HSA_ISA_INFO_PROFILES", "bool[2]"),
    "rounding_modes": ("HSA_ISA_INFO_DEFAULT_FLOAT_ROUNDING_MODES", "bool[3]"),
    "base_rounding_modes": ("HSA_ISA_INFO_BASE_PROFILE_DEFAULT_FLOAT_ROUNDING_MODES", "bool[3]"),
    "fast_f16": ("HSA_ISA_INFO_FAST_F16_OPERATION", "bool[1]"),
    "workgroup_max_size": ("HSA_ISA_INFO_WORKGROUP_MAX_SIZE", "uint32_t[1]"),
    "workgroup_max_dim": ("HSA_ISA_INFO_WORKGROUP_MAX_DIM", "uint16_t[3]"),
    "grid_max_size": ("HSA_ISA_INFO_GRID_MAX_SIZE", "uint64_t[1]"),
    "grid_max_dim": ("HSA_ISA_INFO_GRID_MAX_DIM", "uint32_t[3]"),      # hsa_dim3_t
    "fbarrier_max_size": ("HSA_ISA_INFO_FBARRIER_MAX_SIZE", "uint32_t[1]"),
}

# hsa.h enumerations as rocminfo names them.
_FLOAT_ROUNDING = {1: "ZERO", 2: "NEAR"}             # hsa_default_float_rounding_mode_t
_QUEUE_TYPES = {0: "MULTI", 1: "SINGLE"}              # hsa_queue_type_t
_KERNEL_DISPATCH, _AGENT_DISPATCH = 1, 2              # hsa_agent_feature_t


def _agent_extras(agent) -> dict[str, object]:
    from hsapy.agent import InfoField

    return {key: agent.query(InfoField(enumerator, ctype))
            for key, (enumerator, ctype) in _ROCMINFO_AGENT.items()}


def _isas(agent) -> list[dict[str, object]]:
    from hsapy._hsa import constant, iterate

    if not agent.isa_names:     # CPU agents: ROCr may refuse to iterate their ISAs
        return []
    lib, ffi = agent.runtime.lib, agent.runtime.ffi
    found = []
    handles = iterate(lib, "hsa_agent_iterate_isas", "hsa_isa_t", {"handle": agent.handle})
    for handle, name in zip(handles, agent.isa_names):
        isa: dict[str, object] = {"name": name}
        for key, (enumerator, ctype) in _ROCMINFO_ISA.items():
            out = ffi.new(ctype)
            ok = lib.hsa_isa_get_info_alt({"handle": handle}, constant(enumerator), out) == 0
            isa[key] = tuple(out) if ok else None
        found.append(isa)
    return found


def _flags(present: tuple | None, names: tuple[str, ...]) -> str:
    return " ".join(name for name, on in zip(names, present or ()) if on)


def _agent_lines(agent, extras: dict[str, object]) -> list[str]:
    info = agent.info
    feature = info.get("feature") or 0
    lines = [_line("Name:", info.get("name"), 1), _line("Uuid:", info.get("uuid") or "", 1),
             _line("Marketing Name:", info.get("product_name") or "", 1),
             _line("Vendor Name:", info.get("vendor_name") or "", 1)]
    names = [n for bit, n in ((_KERNEL_DISPATCH, "KERNEL_DISPATCH"),
                              (_AGENT_DISPATCH, "AGENT_DISPATCH")) if feature & bit]
    lines.append(_line("Feature:", " & ".join(names) or "None specified", 1))
    lines.append(_line("Profile:", {0: "BASE_PROFILE", 1: "FULL_PROFILE"}.get(
        info.get("profile"), "Unknown"), 1))
    lines.append(_line("Float Round Mode:", _FLOAT_ROUNDING.get(
        extras["float_rounding_mode"], "Not Supported"), 1))
    lines.append(_line("Max Queue Number:", _int(info.get("queues_max") or 0), 1))
    lines.append(_line("Queue Min Size:", _int(info.get("queue_min_size") or 0), 1))
    lines.append(_line("Queue Max Size:", _int(info.get("queue_max_size") or 0), 1))
    lines.append(_line("Queue Type:", _QUEUE_TYPES.get(extras["queue_type"], "Unknown"), 1))
    lines.append(_line("Node:", info.get("node"), 1))
    lines.append(_line("Device Type:", agent.device_type, 1))
    lines.append(_line("Cache Info:", level=1))
    for level, size in enumerate(extras["cache_size"] or (), start=1):
        if size:
            lines.append(_line(f"L{level}:", _int(size // 1024) + "KB", 2))
    lines.append(_line("Chip ID:", _int(info.get("chip_id") or 0), 1))
    lines.append(_line("ASIC Revision:", _int(extras["asic_revision"] or 0), 1))
    lines.append(_line("Cacheline Size:", _int(info.get("cacheline_size") or 0), 1))
    lines.append(_line("Max Clock Freq. (MHz):", info.get("max_clock_mhz"), 1))
    lines.append(_line("BDFID:", extras["bdfid"], 1))
    lines.append(_line("Internal Node ID:", extras["internal_node_id"], 1))
    lines.append(_line("Compute Unit:", info.get("compute_unit_count"), 1))
    lines.append(_line("SIMDs per CU:", extras["simds_per_cu"], 1))
    lines.append(_line("Shader Engines:", extras["shader_engines"], 1))
    lines.append(_line("Shader Arrs. per Eng.:", extras["shader_arrays"], 1))
    lines.append(_line("WatchPts on Addr. Ranges:", extras["watch_points"], 1))
    if agent.is_gpu:
        lines.append(_line("Coherent Host Access:", _bool(extras["coherent_host_access"]), 1))
    features = ("KERNEL_DISPATCH " if feature & _KERNEL_DISPATCH else "") + \
        ("AGENT_DISPATCH" if feature & _AGENT_DISPATCH else "")
    lines.append(_line("Features:", features or "None", 1, pad=False))
    if feature & _KERNEL_DISPATCH:
        wave = info.get("wavefront_size") or 0
        lines.append(_line("Fast F16 Operation:", _bool(extras["fast_f16"]), 1))
        lines.append(_line("Wavefront Size:", _int(wave), 1))
        lines.append(_line("Workgroup Max Size:", _int(info.get("workgroup_max_size") or 0), 1))
        lines.append(_line("Workgroup Max Size per Dimension:", level=1))
        for axis, extent in zip("xyz", info.get("workgroup_max_dim") or (0, 0, 0)):
            lines.append(_line(axis, _int(extent), 2))
        waves = info.get("max_waves_per_cu") or 0
        lines.append(_line("Max Waves Per CU:", _int(waves), 1))
        lines.append(_line("Max Work-item Per CU:", _int(wave * waves), 1))
        lines.append(_line("Grid Max Size:", _int(info.get("grid_max_size") or 0), 1))
        lines.append(_line("Grid Max Size per Dimension:", level=1))
        for axis, extent in zip("xyz", info.get("grid_max_dim") or (0, 0, 0)):
            lines.append(_line(axis, _int(extent), 2))
        lines.append(_line("Max fbarriers/Workgrp:", extras["fbarrier_max_size"], 1))
    return lines


def _pool_lines(number: int, pool) -> list[str]:
    if pool.segment == "global":
        flags = [name for name, on in (("KERNARG", pool.is_kernarg),
                                       ("FINE GRAINED", pool.is_fine_grained),
                                       ("COARSE GRAINED", pool.is_coarse_grained)) if on]
        segment = "GLOBAL; FLAGS: " + ", ".join(flags)
    else:
        segment = pool.segment.upper()
    return [_line(f"Pool {number}", level=2),
            _line("Segment:", segment, 3),
            _line("Size:", _int(pool.size // 1024) + "KB", 3),
            _line("Allocatable:", _bool(pool.is_allocation_allowed), 3),
            _line("Alloc Granule:", f"{pool.granule // 1024}KB", 3),
            _line("Alloc Alignment:", f"{pool.alignment // 1024}KB", 3),
            _line("Accessible by all:", _bool(pool.is_accessible_by_all), 3)]


def _isa_lines(number: int, isa: dict[str, object]) -> list[str]:
    rounding = ("DEFAULT", "ZERO", "NEAR")
    lines = [_line(f"ISA {number}", level=2), _line("Name:", isa["name"], 3),
             _line("Machine Models:", _flags(isa["machine_models"], (
                 "HSA_MACHINE_MODEL_SMALL", "HSA_MACHINE_MODEL_LARGE")), 3),
             _line("Profiles:", _flags(isa["profiles"], ("HSA_PROFILE_BASE",
                                                          "HSA_PROFILE_FULL")), 3),
             _line("Default Rounding Mode:", _flags(isa["rounding_modes"], rounding), 3),
             _line("Default Rounding Mode:", _flags(isa["base_rounding_modes"], rounding), 3),
             _line("Fast f16:", _bool((isa["fast_f16"] or (0,))[0]), 3),
             _line("Workgroup Max Size:", _int((isa["workgroup_max_size"] or (0,))[0]), 3),
             _line("Workgroup Max Size per Dimension:", level=3)]
    lines += [_line(axis, _int(extent), 4)
              for axis, extent in zip("xyz", isa["workgroup_max_dim"] or (0, 0, 0))]
    lines.append(_line("Grid Max Size:", _int((isa["grid_max_size"] or (0,))[0]), 3))
    lines.append(_line("Grid Max Size per Dimension:", level=3))
    lines += [_line(axis, _int(extent), 4)
              for axis, extent in zip("xyz", isa["grid_max_dim"] or (0, 0, 0))]
    lines.append(_line("FBarrier Max Size:", (isa["fbarrier_max_size"] or (0,))[0], 3))
    return lines


def rocminfo_lines(runtime) -> list[str]:
    """``hsapy info``'s text: rocminfo's sections, labels, order and formats."""
    info = runtime.system_info
    wait = info.get("signal_max_wait") or 0
    lines = [_line("====================="), _line("HSA System Attributes"),
             _line("====================="),
             _line("Runtime Version:", f"{info['version_major']}.{info['version_minor']}",
                   pad=False),
             _line("System Timestamp Freq.:", f"{(info['timestamp_frequency'] or 0) / 1e6:f}MHz",
                   pad=False),
             _line("Sig. Max Wait Duration:", f"{wait} (0x{wait:X}) (timestamp count)",
                   pad=False),
             _line("Machine Model:", {0: "SMALL", 1: "LARGE"}.get(info.get("machine_model"), "")),
             _line("System Endianness:", {0: "LITTLE", 1: "BIG"}.get(info.get("endianness"), "")),
             "",
             _line("=========="), _line("HSA Agents"), _line("==========")]
    for number, agent in enumerate(runtime.agents, start=1):
        lines += [_line("*******"), _line(f"Agent {number}"), _line("*******")]
        lines += _agent_lines(agent, _agent_extras(agent))
        lines.append(_line("Pool Info:", level=1))
        for pool_number, pool in enumerate(agent.memory_pools, start=1):
            lines += _pool_lines(pool_number, pool)
        lines.append(_line("ISA Info:", level=1))
        for isa_number, isa in enumerate(_isas(agent), start=1):
            lines += _isa_lines(isa_number, isa)
    lines.append(_line("*** Done ***"))
    return lines


def _print_table(runtime) -> None:
    where = "the hsapy simulator" if runtime.backend == "sim" else "ROCr"
    print(f"hsapy info: backend {runtime.backend}, {where} ({runtime.backend_reason})")
    print("\n".join(rocminfo_lines(runtime)))


def run(args: argparse.Namespace) -> int:
    from hsapy.errors import HsapyError
    from hsapy.runtime import Runtime

    try:
        runtime = Runtime(backend=args.backend)
    except HsapyError as exc:
        print(_explain_failure(args.backend or "auto", exc), file=sys.stderr)
        return 2
    with runtime:
        if args.json:
            document = {
                "backend": runtime.backend,
                "backend_reason": runtime.backend_reason,
                "simulated": runtime.is_simulated,
                "system": runtime.system_info,
                "agents": [agent.as_dict() for agent in runtime.agents],
            }
            print(json.dumps(document, indent=2))
        else:
            _print_table(runtime)
    return 0
