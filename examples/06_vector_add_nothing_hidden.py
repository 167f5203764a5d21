"""Step 6: vector add with nothing hidden -- code object, loader, kernarg bytes (hidden arguments
included) packed by hand, the packet, the doorbell, the check.

    python3 examples/06_vector_add_nothing_hidden.py [--backend auto|sim|rocr|rocr-sim]

References: ELF header and e_flags, the kernel descriptor and the v5 hidden arguments are in
docs/hsa-abi.md ("Code objects", "Hidden (implicit) kernel arguments") and LLVM
AMDGPUUsage ("ELF Code Object", "Kernel Descriptor", "Code Object V5 Metadata"). Loading is
hsa_code_object_reader_create_from_memory -> hsa_executable_create_alt ->
hsa_executable_load_agent_code_object -> hsa_executable_freeze ->
hsa_executable_get_symbol_by_name("vector_add.kd") -> HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT.
"""
from __future__ import annotations

import argparse
import struct

import numpy as np

import hsapy
from hsapy import aql
from hsapy.asm import kernels
from hsapy.signal import Condition

N, WORKGROUP = 3000, 256          # 12 workgroups; the last has 3000 % 256 = 184 work-items


def hidden_value(kind: str, grid: int, workgroup: int) -> int:
    """The hidden arguments a launcher fills for a 1-D dispatch (AMDGPUUsage, code object v5).
    The block count is the floor (full workgroups); the remainder describes the partial one."""
    table = {"hidden_block_count_x": grid // workgroup, "hidden_group_size_x": workgroup,
             "hidden_remainder_x": grid % workgroup, "hidden_grid_dims": 1,
             "hidden_block_count_y": 1, "hidden_block_count_z": 1,
             "hidden_group_size_y": 1, "hidden_group_size_z": 1}
    return table.get(kind, 0)        # remainders y/z, global offsets, service pointers: 0


def main(backend: str | None) -> None:
    with hsapy.Runtime(backend=backend) as rt:
        gpu = rt.gpu_agents[0]
        code = kernels.build("vector_add", gpu.target)      # LLVM IR -> llvmlite -> ld.lld
        machine, = struct.unpack_from("<H", code, 18)
        e_flags, = struct.unpack_from("<I", code, 48)
        print(f"backend {rt.backend}, GPU {gpu.name}")
        print(f"code object: {len(code)} bytes, ELF e_machine {machine} (EM_AMDGPU 224), "
              f"OSABI {code[7]} (AMDGPU_HSA 64), ABI version {code[8]} (3 = v5), "
              f"e_flags {e_flags:#x} (mach {e_flags & 0xFF:#x})")
        if machine != 224 or code[7] != 64:
            raise SystemExit("FAILED: not an AMDGPU HSA code object")

        executable = rt.load(code, gpu)                     # the runtime's loader
        kernel = executable.kernel("vector_add")
        info = kernel.info
        descriptor = executable.code_object.read_vaddr(info.descriptor_vaddr, 64)
        group, private, kernarg_size = struct.unpack_from("<III", descriptor, 0)
        entry, = struct.unpack_from("<q", descriptor, 16)
        rsrc3, rsrc1, rsrc2, properties = struct.unpack_from("<IIIH", descriptor, 44)
        print(f"kernel descriptor vector_add.kd loaded at kernel_object {kernel.kernel_object:#x}:"
              f" LDS {group}, scratch {private}, kernarg {kernarg_size} bytes, entry "
              f"{entry:+d}, rsrc1 {rsrc1:#x} rsrc2 {rsrc2:#x} rsrc3 {rsrc3:#x}, "
              f"properties {properties:#x} (kernarg ptr: {properties >> 3 & 1})")

        a, b, out = (gpu.device_pool.allocate(4 * N) for _ in range(3))
        a.copy_from(np.linspace(-1.0, 1.0, N, dtype=np.float32))
        b.copy_from(np.arange(N, dtype=np.float32))
        out.copy_from(np.full(N, np.nan, np.float32))

        # The kernarg segment, one argument at a time from the metadata (.args: offset, size,
        # value_kind). Explicit arguments by name; hidden ones computed from the geometry.
        explicit = {"a": a.address, "b": b.address, "out": out.address, "n": N}
        segment = bytearray(info.kernarg_segment_size)
        print(f"kernarg segment ({len(segment)} bytes, align {info.kernarg_segment_align}):")
        for arg in info.args:
            value = hidden_value(arg.value_kind, N, WORKGROUP) if arg.is_hidden \
                else explicit[arg.name]
            segment[arg.offset:arg.offset + arg.size] = value.to_bytes(arg.size, "little")
            shown = f"{value:#x}" if arg.value_kind == "global_buffer" else str(value)
            print(f"  @{arg.offset:<3} {arg.size} B  {arg.name or arg.value_kind:<24} = {shown}")
        reference = kernel.layout.pack([a, b, out, N], grid=N, workgroup=WORKGROUP)
        if bytes(segment) != reference[:len(segment)]:
            raise SystemExit("FAILED: hand-packed kernarg differs from KernargLayout.pack")
        print("  identical to hsapy's KernargLayout.pack")

        kernarg = gpu.kernarg_pool.allocate(max(len(segment), 64))
        if kernarg.pool.access(gpu) == "after allow_access":
            kernarg.allow_access([gpu])
        kernarg.numpy()[:len(segment)] = np.frombuffer(bytes(segment), np.uint8)

        done = rt.create_signal(1)
        packet = aql.kernel_dispatch(kernel.kernel_object, grid=N, workgroup=WORKGROUP,
                                     kernarg_address=kernarg.address,
                                     completion_signal=done.handle,
                                     private_segment_size=kernel.private_segment_size,
                                     group_segment_size=kernel.group_segment_size)
        queue = gpu.create_queue(size=64)
        index = queue.reserve(1)
        queue.write(index, packet.word, packet.body)
        queue.ring_doorbell(index)
        done.wait(Condition.LT, 1, timeout=30.0, abort=queue.check)
        print(f"packet {index} published, doorbell rung, completion signal now {done.load()}")

        expected = np.linspace(-1.0, 1.0, N, dtype=np.float32) + np.arange(N, dtype=np.float32)
        result = out.copy_to(dtype=np.float32)
        if not np.array_equal(result, expected):
            raise SystemExit(f"FAILED: {np.count_nonzero(result != expected)} of {N} wrong")
        print(f"OK: out = a + b for all {N} elements, including the partial last workgroup")
        queue.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("auto", "sim", "rocr", "rocr-sim"), default=None,
                        help="HSA runtime (default: auto, or HSAPY_BACKEND)")
    try:
        main(parser.parse_args().backend)
    except hsapy.BackendUnavailableError as exc:    # e.g. --backend rocr without an AMD GPU
        raise SystemExit(f"{parser.prog}: {exc}") from None
