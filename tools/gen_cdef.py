"""Regenerate hsapy/_hsa/_cdef.py and hsapy/hsa_enums.py from the installed ROCr headers.

    python tools/gen_cdef.py [--include /usr/include/hsa] > hsapy/_hsa/_cdef.py
    python tools/gen_cdef.py [--include /usr/include/hsa] --enums > hsapy/hsa_enums.py

The selection of declarations (WANTED) is hsapy's own: it names every type, enum and function the
library uses. The declarations themselves are the ABI facts of hsa.h / hsa_ext_amd.h, taken from
the preprocessed headers so that names, order and values cannot drift from the real library.
``--enums`` writes the enumerators of the same enums (and the AMD status codes, an enum without
a name in hsa_ext_amd.h) as Python constants: the one place hsapy and its simulator take status
codes and enum values from. Needs clang (clang-19 or clang) for preprocessing.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

WANTED_TYPES = """
hsa_status_t hsa_dim3_t hsa_access_permission_t hsa_endianness_t hsa_machine_model_t hsa_profile_t
hsa_system_info_t hsa_extension_t hsa_agent_t hsa_agent_feature_t hsa_device_type_t
hsa_default_float_rounding_mode_t hsa_agent_info_t hsa_exception_policy_t hsa_cache_t
hsa_cache_info_t hsa_signal_t hsa_signal_value_t hsa_signal_condition_t hsa_signal_condition32_t
hsa_wait_state_t
hsa_region_t hsa_queue_type_t hsa_queue_type32_t hsa_queue_feature_t hsa_queue_t
hsa_packet_type_t hsa_fence_scope_t hsa_packet_header_t hsa_packet_header_width_t
hsa_kernel_dispatch_packet_setup_t hsa_kernel_dispatch_packet_setup_width_t
hsa_kernel_dispatch_packet_t hsa_agent_dispatch_packet_t hsa_barrier_and_packet_t
hsa_barrier_or_packet_t hsa_isa_t hsa_isa_info_t hsa_fp_type_t hsa_flush_mode_t
hsa_round_method_t hsa_wavefront_t hsa_wavefront_info_t
hsa_code_object_reader_t hsa_executable_t hsa_executable_state_t hsa_loaded_code_object_t
hsa_executable_info_t hsa_executable_symbol_t hsa_symbol_kind_t hsa_symbol_linkage_t
hsa_variable_allocation_t hsa_variable_segment_t hsa_executable_symbol_info_t
hsa_amd_packet_type_t hsa_amd_packet_type8_t hsa_amd_vendor_packet_header_t
hsa_amd_barrier_value_packet_t hsa_amd_agent_info_t hsa_amd_region_info_t
hsa_amd_profiling_dispatch_time_t hsa_amd_profiling_async_copy_time_t
hsa_amd_signal_attribute_t hsa_amd_segment_t hsa_amd_memory_pool_t
hsa_amd_memory_pool_global_flag_t hsa_amd_memory_pool_info_t hsa_amd_memory_pool_access_t
hsa_amd_link_info_type_t hsa_amd_memory_pool_link_info_t hsa_amd_agent_memory_pool_info_t
hsa_amd_pointer_type_t hsa_amd_pointer_info_t hsa_amd_queue_priority_t
hsa_amd_event_type_t hsa_amd_memory_fault_reason_t hsa_amd_gpu_memory_fault_info_t hsa_amd_event_t
hsa_amd_system_event_callback_t
""".split()

WANTED_FUNCTIONS = """
hsa_status_string hsa_init hsa_shut_down hsa_system_get_info hsa_agent_get_info hsa_iterate_agents
hsa_agent_iterate_isas hsa_isa_get_info_alt hsa_isa_from_name hsa_agent_iterate_caches
hsa_cache_get_info
hsa_signal_create hsa_signal_destroy hsa_signal_load_scacquire hsa_signal_load_relaxed
hsa_signal_store_relaxed hsa_signal_store_screlease hsa_signal_silent_store_relaxed
hsa_signal_silent_store_screlease hsa_signal_exchange_scacq_screl hsa_signal_exchange_relaxed
hsa_signal_cas_scacq_screl hsa_signal_cas_relaxed
hsa_signal_add_scacq_screl hsa_signal_add_relaxed hsa_signal_add_screlease
hsa_signal_subtract_scacq_screl hsa_signal_subtract_relaxed hsa_signal_subtract_screlease
hsa_signal_and_scacq_screl hsa_signal_or_scacq_screl hsa_signal_xor_scacq_screl
hsa_signal_wait_scacquire hsa_signal_wait_relaxed
hsa_queue_create hsa_queue_destroy hsa_queue_inactivate
hsa_queue_load_read_index_scacquire hsa_queue_load_read_index_relaxed
hsa_queue_load_write_index_scacquire hsa_queue_load_write_index_relaxed
hsa_queue_store_write_index_relaxed hsa_queue_store_write_index_screlease
hsa_queue_cas_write_index_scacq_screl hsa_queue_cas_write_index_relaxed
hsa_queue_add_write_index_scacq_screl hsa_queue_add_write_index_relaxed
hsa_queue_add_write_index_screlease hsa_queue_add_write_index_scacquire
hsa_queue_store_read_index_relaxed hsa_queue_store_read_index_screlease
hsa_code_object_reader_create_from_memory hsa_code_object_reader_destroy
hsa_executable_create_alt hsa_executable_destroy hsa_executable_load_agent_code_object
hsa_executable_freeze hsa_executable_get_info hsa_executable_validate_alt
hsa_executable_get_symbol_by_name hsa_executable_symbol_get_info
hsa_executable_iterate_agent_symbols
hsa_amd_agent_iterate_memory_pools hsa_amd_memory_pool_get_info hsa_amd_agent_memory_pool_get_info
hsa_amd_memory_pool_allocate hsa_amd_memory_pool_free hsa_amd_agents_allow_access
hsa_amd_memory_async_copy hsa_amd_memory_fill hsa_amd_pointer_info
hsa_amd_signal_create hsa_amd_signal_wait_any
hsa_amd_profiling_set_profiler_enabled hsa_amd_profiling_get_dispatch_time
hsa_amd_profiling_async_copy_enable hsa_amd_profiling_get_async_copy_time
hsa_amd_profiling_convert_tick_to_system_domain
hsa_amd_queue_set_priority hsa_amd_register_system_event_handler
""".split()


def preprocess(include: str) -> str:
    clang = shutil.which("clang-19") or shutil.which("clang")
    if clang is None:
        sys.exit("gen_cdef: needs clang-19 or clang to preprocess the headers")
    cmd = [clang, "-E", "-P", "-x", "c", f"-I{include}", "-D__attribute__(x)=", "-"]
    src = '#include "hsa.h"\n#include "hsa_ext_amd.h"\n'
    out = subprocess.run(cmd, input=src, capture_output=True, text=True, check=True).stdout
    return out[out.index("typedef enum {\n  HSA_STATUS_SUCCESS"):]


def declarations(text: str) -> list[str]:
    """Split preprocessed C into top-level declarations (ending with ';' at brace depth 0)."""
    decls, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == ";" and depth == 0:
            decls.append(text[start:i + 1].strip())
            start = i + 1
    return decls


def declared_name(decl: str) -> str:
    if decl.startswith("typedef"):
        m = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", decl)  # function-pointer typedef
        if m and "{" not in decl:
            return m.group(1)
        return re.search(r"(\w+)\s*(\[[^\]]*\])?\s*;$", decl).group(1)
    m = re.search(r"(\w+)\s*\(", decl)
    return m.group(1) if m else ""


VERSION = "ROCm 5.2.3 (Debian libhsa-runtime-dev 5.2.3)"
# The unnamed enum of hsa_ext_amd.h that extends hsa_status_t; found by its first enumerator.
AMD_STATUS_MARK = "HSA_STATUS_ERROR_INVALID_MEMORY_POOL"


def enumerators(decl: str) -> list[tuple[str, str]]:
    """(name, value as the header spells it) of every enumerator of an enum declaration."""
    body = decl[decl.index("{") + 1:decl.rindex("}")]
    items = [item.strip() for item in body.split(",") if item.strip()]
    pairs = [tuple(part.strip() for part in item.split("=", 1)) for item in items]
    for pair in pairs:
        if len(pair) != 2 or not re.fullmatch(r"(0x[0-9A-Fa-f]+|\d+)( << \d+)?", pair[1]):
            sys.exit(f"gen_cdef: enumerator {' = '.join(pair)} has no literal value")
    return pairs  # type: ignore[return-value]


def status_docs(include: str) -> dict[str, str]:
    """Status name -> the doc comment the header puts above it, as one line of text."""
    docs: dict[str, str] = {}
    for header in ("hsa.h", "hsa_ext_amd.h"):
        text = Path(include, header).read_text()
        for match in re.finditer(r"/\*\*((?:(?!\*/).)*?)\*/\s*(HSA_STATUS_\w+)\s*=", text, re.S):
            lines = (line.strip().lstrip("*").strip() for line in match.group(1).splitlines())
            docs[match.group(2)] = " ".join(" ".join(lines).replace("::", "").split())
    return docs


def print_enums(found: dict[str, str], amd_statuses: str, docs: dict[str, str]) -> None:
    print('"""The HSA enumerators hsapy uses, as Python constants: every enum of hsapy\'s cdef')
    print("(hsapy/_hsa/_cdef.py) and the AMD status codes of hsa_ext_amd.h.")
    print()
    print(f"Follows {VERSION}.")
    print("Generated by tools/gen_cdef.py --enums from the installed headers; edit the WANTED "
          "lists")
    print("there and regenerate, do not edit by hand. The one source of HSA status codes and enum")
    print("values: everything else imports them from here.")
    print('"""')
    print("from __future__ import annotations")
    print()
    print("from typing import Final")
    statuses: list[str] = []
    groups = [(name, decl) for name, decl in found.items() if re.match(r"typedef enum\b", decl)]
    groups.insert(1, ("hsa_ext_amd.h: the AMD extensions' hsa_status_t values", amd_statuses))
    for name, decl in groups:
        print()
        print(f"# {name}")
        for enumerator, value in enumerators(decl):
            print(f"{enumerator}: Final = {value}")
            if enumerator.startswith("HSA_STATUS_"):
                statuses.append(enumerator)
    print()
    print("# hsa_status_t value -> its name")
    print("STATUS_NAMES: Final[dict[int, str]] = {")
    for enumerator in statuses:
        print(f'    {enumerator}: "{enumerator}",')
    print("}")
    print()
    print("# hsa_status_t value -> what the header's doc comment says it means")
    print("STATUS_TEXT: Final[dict[int, str]] = {")
    for enumerator in statuses:
        if enumerator not in docs:
            sys.exit(f"gen_cdef: {enumerator} has no doc comment in the headers")
        text = docs[enumerator]
        if len(f'    {enumerator}: "{text}",') <= 100:
            print(f'    {enumerator}: "{text}",')
            continue
        chunks = textwrap.wrap(text, 88, drop_whitespace=False, break_on_hyphens=False)
        print(f"    {enumerator}: (")
        for chunk in chunks:
            print(f'        "{chunk}"')
        print("    ),")
    print("}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--include", default="/usr/include/hsa")
    ap.add_argument("--enums", action="store_true",
                    help="print hsapy/hsa_enums.py instead of hsapy/_hsa/_cdef.py")
    args = ap.parse_args()
    found = {}
    amd_statuses = ""
    for decl in declarations(preprocess(args.include)):
        decl = re.sub(r"\s+", " ", decl)
        decl = decl.replace("_Bool", "bool")
        if decl.startswith("enum {") and AMD_STATUS_MARK in decl:
            amd_statuses = decl
        name = declared_name(decl)
        if name in WANTED_TYPES or name in WANTED_FUNCTIONS:
            found[name] = decl
    missing = [n for n in WANTED_TYPES + WANTED_FUNCTIONS if n not in found]
    if missing:
        sys.exit(f"gen_cdef: not in the headers: {' '.join(missing)}")
    if not amd_statuses:
        sys.exit(f"gen_cdef: hsa_ext_amd.h has no enum with {AMD_STATUS_MARK}")
    if args.enums:
        print_enums(found, amd_statuses, status_docs(args.include))
        return
    version = VERSION
    print('"""cffi declarations for the subset of hsa.h + hsa_ext_amd.h that hsapy uses.')
    print()
    print(f"Follows {version}. Generated by tools/gen_cdef.py from the")
    print("installed headers; edit the WANTED lists there and regenerate, do not edit by hand.")
    print('"""')
    print()
    print(f'HEADER_VERSION = "{version}"')
    print()
    print('CDEF = r"""')
    for decl in found.values():  # header order: types are declared before use
        print(decl)
    print('"""')


if __name__ == "__main__":
    main()
