"""Step 1: agents, their properties and memory pools -- what `rocminfo` (and `hsapy info`) show.

    python3 examples/01_agents_and_pools.py [--backend auto|sim|rocr|rocr-sim]

HSA calls behind each line (hsa.h / hsa_ext_amd.h):
  hsa_init, hsa_system_get_info(HSA_SYSTEM_INFO_*)        -> Runtime(), rt.system_info
  hsa_iterate_agents + hsa_agent_get_info(HSA_AGENT_INFO_*, HSA_AMD_AGENT_INFO_*) -> rt.agents
  hsa_agent_iterate_isas + hsa_isa_get_info_alt           -> agent.isa_names
  hsa_amd_agent_iterate_memory_pools + hsa_amd_memory_pool_get_info -> agent.memory_pools
  hsa_amd_agent_memory_pool_get_info(HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS) -> pool.access(agent)
"""
from __future__ import annotations

import argparse

import hsapy


def size_text(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def main(backend: str | None) -> None:
    with hsapy.Runtime(backend=backend) as rt:
        info = rt.system_info
        print(f"backend {rt.backend}: {rt.backend_reason}")
        print(f"HSA {info['version_major']}.{info['version_minor']}, system timestamp "
              f"{info['timestamp_frequency']} Hz, machine model "
              f"{'large (64-bit)' if info['machine_model'] == 1 else 'small'}")
        print(f"agents: {len(rt.agents)} ({len(rt.gpu_agents)} GPU, {len(rt.cpu_agents)} CPU)")

        for index, agent in enumerate(rt.agents):
            print(f"\nagent {index}: {agent.device_type} {agent.name!r} "
                  f"({agent.product_name or agent.vendor_name}), node {agent.node}")
            if agent.is_gpu:
                print(f"  ISA {agent.isa_names[0]} -> target {agent.target}")
                print(f"  {agent.compute_unit_count} CUs, wave{agent.wavefront_size}, "
                      f"{agent.max_waves_per_cu} waves/CU, workgroup <= "
                      f"{agent.workgroup_max_size} work-items {agent.workgroup_max_dim}")
                print(f"  queues: up to {agent.queues_max}, {agent.queue_min_size}.."
                      f"{agent.queue_max_size} packets; LDS {size_text(agent.lds_size)} "
                      "per workgroup")
            for pool in agent.memory_pools:
                kinds = [name for name, on in (("kernarg", pool.is_kernarg),
                                               ("fine-grained", pool.is_fine_grained),
                                               ("coarse-grained", pool.is_coarse_grained)) if on]
                # Who may touch this pool's memory: ALLOWED_BY_DEFAULT, DISALLOWED_BY_DEFAULT
                # (hsa_amd_agents_allow_access first) or NEVER_ALLOWED.
                access = ", ".join(f"{gpu.name}: {pool.access(gpu)}" for gpu in rt.gpu_agents)
                alloc = "alloc" if pool.is_allocation_allowed else "no alloc"
                print(f"  pool {pool.segment:<7} {size_text(pool.size):>10} "
                      f"{'/'.join(kinds) or '-':<21} {alloc:<8} granule {pool.granule:<5} "
                      f"GPU access: {access}")

        # The pools a dispatch needs, found the way hsapy's shortcuts find them.
        system, kernarg = rt.system_pool, rt.kernarg_pool
        print(f"\nsystem pool (host memory for every agent): {system!r}")
        print(f"kernarg pool (where kernel arguments live):  {kernarg!r}")

        # Check what every later step relies on.
        problems = []
        if not rt.gpu_agents:
            problems.append("no GPU agent")
        for gpu in rt.gpu_agents:
            if gpu.wavefront_size not in (32, 64):
                problems.append(f"{gpu.name}: wavefront size {gpu.wavefront_size}")
            if not gpu.target.startswith("gfx"):
                problems.append(f"{gpu.name}: ISA name {gpu.isa_names} has no gfx target")
            if not gpu.device_pool.is_allocation_allowed:
                problems.append(f"{gpu.name}: no allocatable device (coarse-grained) pool")
            if gpu.lds_size < 32 * 1024:
                problems.append(f"{gpu.name}: group segment (LDS) of {gpu.lds_size} bytes")
            if gpu.queue_min_size > 64 or gpu.queue_max_size < 64:
                problems.append(f"{gpu.name}: a 64-packet queue does not fit "
                                f"{gpu.queue_min_size}..{gpu.queue_max_size}")
        if not (system.is_fine_grained and kernarg.is_allocation_allowed):
            problems.append("no fine-grained system pool / kernarg pool")
        if problems:
            raise SystemExit("FAILED: " + "; ".join(problems))
        print(f"OK: {len(rt.gpu_agents)} GPU agent(s) with device, group and kernarg pools")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("auto", "sim", "rocr", "rocr-sim"), default=None,
                        help="HSA runtime (default: auto, or HSAPY_BACKEND)")
    try:
        main(parser.parse_args().backend)
    except hsapy.BackendUnavailableError as exc:    # e.g. --backend rocr without an AMD GPU
        raise SystemExit(f"{parser.prog}: {exc}") from None
