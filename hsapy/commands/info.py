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
    from hsapy.errors import HSAError, LibraryLoadError, LibraryNotFoundError

    if isinstance(exc, HSAError) and exc.status_name == "HSA_STATUS_ERROR_OUT_OF_RESOURCES":
        return ("hsapy: the ROCr runtime failed to initialize: hsa_init returned "
                "HSA_STATUS_ERROR_OUT_OF_RESOURCES. The likely cause is that /dev/kfd is missing "
                "or not accessible: no AMD GPU, the amdgpu driver not loaded, or the user not in "
                "the render/video groups. Without a GPU, run on the simulator: "
                "hsapy info --backend sim")
    if isinstance(exc, (LibraryNotFoundError, LibraryLoadError)):
        # The message lists the paths tried (and why each failed) on several lines: one paragraph.
        text = " ".join(str(exc).split())
        return f"hsapy: {text} To run on the simulator: hsapy info --backend sim"
    return f"hsapy: backend {backend} failed: {exc}. Try: hsapy info --backend sim"


def _print_table(runtime) -> None:
    print(f"backend: {runtime.backend} ({runtime.backend_reason})")
    info = runtime.system_info
    print(f"HSA runtime version: {info['version_major']}.{info['version_minor']}   "
          f"timestamp frequency: {info['timestamp_frequency']} Hz")
    for index, agent in enumerate(runtime.agents):
        print()
        print(f"Agent {index}: {agent.name}  ({agent.device_type})")
        for key, value in agent.info.items():
            if key in ("name", "device_type") or value in (None, ""):
                continue
            print(f"  {key:<22} {_label(key, value)}")
        if agent.is_gpu:
            print(f"  {'lds_size':<22} {_size(agent.lds_size)}")
        for isa in agent.isa_names:
            print(f"  {'isa':<22} {isa}")
        for cache in agent.caches:
            print(f"  cache {cache['name']:<16} {_size(cache['size'])} (level {cache['level']})")
        for pool in agent.memory_pools:
            flags = [name for name, on in (("kernarg", pool.is_kernarg),
                                           ("fine-grained", pool.is_fine_grained),
                                           ("coarse-grained", pool.is_coarse_grained),
                                           ("alloc", pool.is_allocation_allowed)) if on]
            print(f"  pool {pool.segment:<8} {_size(pool.size):>12}  "
                  f"granule {pool.granule:<6} {' '.join(flags)}")


# Readable names for enum-valued properties (hsa_profile_t, hsa_agent_feature_t in hsa.h).
_PROFILES = {0: "base", 1: "full"}
_FEATURES = ((1, "kernel-dispatch"), (2, "agent-dispatch"))


def _label(key: str, value: object) -> object:
    if key == "profile":
        return _PROFILES.get(value, value)
    if key == "chip_id":
        return f"{value} ({value:#06x})"  # rocminfo's form: the PCI device id in hex
    if key == "feature":
        names = [name for bit, name in _FEATURES if value & bit]
        return " ".join(names) or "none"
    return value


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


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
