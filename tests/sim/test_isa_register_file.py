"""The register file the interpreter gives each wave: gfx90a/gfx942 keep VGPRs and AGPRs in one
file split at the descriptor's accum_offset; code whose VGPRs would reach into the AGPRs stops
the queue (the interpreter keeps the two apart and would not alias them)."""
from __future__ import annotations

import pytest
from isa_exec_harness import Device, require

from hsapy.sim.execution import SimFault

ALIASING = """\
\t.text
\t.globl\talias
\t.p2align\t8
\t.type\talias,@function
alias:
\tv_mov_b32_e32 v9, 1.0
\tv_accvgpr_write_b32 a0, v9
\ts_endpgm
.Lalias_end:
\t.size\talias, .Lalias_end-alias

\t.rodata
\t.p2align\t6
\t.amdhsa_kernel alias
\t\t.amdhsa_next_free_vgpr {next_free}
\t\t.amdhsa_next_free_sgpr 8
\t\t.amdhsa_accum_offset {accum}
\t.end_amdhsa_kernel

\t.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.kernels:
  - .name: alias
    .symbol: alias.kd
    .args: []
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 8
    .vgpr_count: {next_free}
    .agpr_count: 4
    .max_flat_workgroup_size: 256
...
\t.end_amdgpu_metadata
"""


@pytest.mark.parametrize("accum,next_free,aliases", [(4, 8, True), (12, 16, False)])
def test_vgprs_reaching_past_accum_offset_while_agprs_are_used_stop_the_queue(accum, next_free,
                                                                              aliases):
    from hsapy import toolchain

    require("llvm-mc-19")
    require("ld.lld-19")
    source = ALIASING.format(accum=accum, next_free=next_free)
    dev = Device("gfx942")
    kernel = dev.load(toolchain.assemble(source, "gfx942"), "alias")
    if not aliases:
        dev.dispatch(kernel, [], (64,), (64,))
        return
    with pytest.raises(SimFault) as info:
        dev.dispatch(kernel, [], (64,), (64,))
    assert info.value.status == 42
    assert "v9" in info.value.message and "accum_offset" in info.value.message
