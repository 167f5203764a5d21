"""Hand-written AMDGPU assembly kernels for the fault and escape tests (tests/sim/test_faults.py,
tests/sim/test_escape.py), assembled with hsapy.toolchain.assemble (llvm-mc + ld.lld); the
descriptor and metadata around each body are handwritten.asm_kernel's.

Every kernel takes three 64-bit by-value arguments ``a, b, c`` (kernarg offsets 0, 8, 16); the
body finds them in ``s[4:5]``, ``s[6:7]``, ``s[8:9]`` after the prologue. Bodies are written once
with placeholders for the mnemonics that differ between gfx942 (GCN names) and gfx1201 (RDNA4
names): ``{gload}`` = 32-bit global load, ``{gstore}``, ``{gatomic_add}``, ``{fload}``,
``{fstore}``, ``{sload}``, ``{sstore}`` (scratch), ``{dsw}``/``{dsr}`` (LDS), ``{vmwait}`` (wait
for vector loads), ``{kmwait}`` (wait for scalar loads), ``{vcc}`` (vcc or vcc_lo).
"""
from __future__ import annotations

import shutil

import pytest
from handwritten import Arg, Build, asm_kernel

from hsapy import toolchain

TARGETS = ("gfx942", "gfx1201")

needs_assembler = pytest.mark.skipif(
    shutil.which("llvm-mc-19") is None and shutil.which("llvm-mc") is None,
    reason="llvm-mc (Debian llvm-19) is not installed")

SYNTAX = {
    "gfx942": {
        "gload": "global_load_dword", "gstore": "global_store_dword",
        "gatomic_add": "global_atomic_add", "fload": "flat_load_dword",
        "fstore": "flat_store_dword", "sload": "scratch_load_dword",
        "sstore": "scratch_store_dword", "dsw": "ds_write_b32", "dsr": "ds_read_b32",
        "sload1": "s_load_dword", "sload2": "s_load_dwordx2", "sload4": "s_load_dwordx4",
        "vmwait": "s_waitcnt vmcnt(0)", "kmwait": "s_waitcnt lgkmcnt(0)",
        "dswait": "s_waitcnt lgkmcnt(0)", "vcc": "vcc",
        "bufload": "buffer_load_dword v1, v0, s[12:15], 0 offen",
        "bufflags": "0x00027000",   # V# word 3: 32-bit FLOAT data format, raw range check
        "unimplemented": "s_setvskip s10, s11", "wave": 64,
    },
    "gfx1201": {
        "gload": "global_load_b32", "gstore": "global_store_b32",
        "gatomic_add": "global_atomic_add_u32", "fload": "flat_load_b32",
        "fstore": "flat_store_b32", "sload": "scratch_load_b32",
        "sstore": "scratch_store_b32", "dsw": "ds_store_b32", "dsr": "ds_load_b32",
        "sload1": "s_load_b32", "sload2": "s_load_b64", "sload4": "s_load_b128",
        "vmwait": "s_wait_loadcnt 0", "kmwait": "s_wait_kmcnt 0", "dswait": "s_wait_dscnt 0",
        "vcc": "vcc_lo",
        "bufload": "buffer_load_b32 v1, v0, s[12:15], null offen",
        "bufflags": "0x30000000",   # V# word 3: OOB_SELECT 3 (raw)
        "unimplemented": "image_load v[4:7], v0, s[16:23] dmask:0xf dim:SQ_RSRC_IMG_1D",
        "wave": 32,
    },
}

# every kernel's prologue: the three arguments into s[4:5], s[6:7], s[8:9]
_PROLOGUE = """
{sload4} s[4:7], s[0:1], 0x0
{sload2} s[8:9], s[0:1], 0x10
{kmwait}
"""
_ARGS = [Arg(name, pointer=False) for name in ("a", "b", "c")]


def source(name: str, body: str, target: str, lds: int = 0, private: int = 0) -> str:
    """The assembly text of kernel ``name`` with ``body`` (placeholders filled for ``target``)."""
    syntax = SYNTAX[target]
    text = f"{_PROLOGUE.strip()}\n{body.strip()}\ns_endpgm"
    lines = "\n".join("\t" + line.strip() for line in text.splitlines())
    return asm_kernel(name, lines.format(**syntax), Build(target, syntax["wave"]), _ARGS,
                      lds=lds, private=private, vgprs=8, sgprs=24)


def build(name: str, body: str, target: str, lds: int = 0, private: int = 0) -> bytes:
    """The code object of the kernel (cached by hsapy.toolchain)."""
    return toolchain.assemble(source(name, body, target, lds, private), target)


def load(runtime, agent, name: str, body: str, lds: int = 0, private: int = 0):
    """Build for ``agent`` and return the loaded Kernel."""
    code = build(name, body, agent.name, lds, private)
    return runtime.load(code, agent).kernel(name)


def agent_of(runtime, target: str):
    """The simulated GPU agent named ``target`` (skip when the simulator has none)."""
    for agent in runtime.gpu_agents:
        if agent.name == target:
            return agent
    pytest.skip(f"no simulated {target} agent (HSAPY_SIM_TARGETS)")


# --- bodies ---------------------------------------------------------------------------------------

# Spin forever: a backward branch to itself.
SPIN = """
.Lspin:
s_branch .Lspin
"""

# Load the dword at address a, store it at address b.
LOAD_A_STORE_B = """
v_mov_b32 v0, 0
{gload} v1, v0, s[4:5]
{vmwait}
{gstore} v0, v1, s[6:7]
"""

# Store the low dword of c at address a.
STORE_C_AT_A = """
v_mov_b32 v0, 0
v_mov_b32 v1, s8
{gstore} v0, v1, s[4:5]
"""

# Address a + c (64-bit add in the kernel; c may be negative), then store 0x5a5a5a5a there.
STORE_AT_A_PLUS_C = """
s_add_u32 s4, s4, s8
s_addc_u32 s5, s5, s9
v_mov_b32 v0, 0
v_mov_b32 v1, 0x5a5a5a5a
{gstore} v0, v1, s[4:5]
"""

# Flat load from a, flat store of it to b.
FLAT_LOAD_A_STORE_B = """
v_mov_b32 v0, s4
v_mov_b32 v1, s5
{fload} v2, v[0:1]
{vmwait}
v_mov_b32 v0, s6
v_mov_b32 v1, s7
{fstore} v[0:1], v2
"""

# Flat store of c to address a.
FLAT_STORE_C_AT_A = """
v_mov_b32 v0, s4
v_mov_b32 v1, s5
v_mov_b32 v2, s8
{fstore} v[0:1], v2
"""

# Scalar load from address a, stored to b.
SLOAD_A_STORE_B = """
{sload1} s12, s[4:5], 0x0
{kmwait}
v_mov_b32 v0, 0
v_mov_b32 v1, s12
{gstore} v0, v1, s[6:7]
"""

# Global atomic add of 1 at address a.
ATOMIC_ADD_AT_A = """
v_mov_b32 v0, 0
v_mov_b32 v1, 1
{gatomic_add} v0, v1, s[4:5]
"""

# Scratch store of 7 at private offset c (per lane), then load it back to b.
SCRATCH_AT_C = """
v_mov_b32 v0, s8
v_mov_b32 v1, 7
{sstore} v0, v1, off
{sload} v2, v0, off
{vmwait}
v_mov_b32 v0, 0
{gstore} v0, v2, s[6:7]
"""

# LDS store of 0x77 at LDS offset c, then load from there to b.
LDS_AT_C = """
v_mov_b32 v0, s8
v_mov_b32 v1, 0x77
{dsw} v0, v1
{dswait}
{dsr} v2, v0
{dswait}
v_mov_b32 v0, 0
{gstore} v0, v2, s[6:7]
"""

# A buffer load through a V# whose base is a (num_records 0xffffffff).
BUFFER_LOAD_AT_A = """
s_mov_b32 s12, s4
s_and_b32 s13, s5, 0xffff
s_mov_b32 s14, -1
s_mov_b32 s15, {bufflags}
v_mov_b32 v0, 0
{bufload}
{vmwait}
{gstore} v0, v1, s[6:7]
"""

# An instruction the simulator does not implement (gfx942: scalar access to the private
# segment; gfx1201: an image load, which hsapy does not decode).
UNIMPLEMENTED_OP = """
{unimplemented}
"""

# Load from 8 bytes before address a (a negative immediate offset), stored to b.
LOAD_A_MINUS_8_STORE_B = """
v_mov_b32 v0, 0
{gload} v1, v0, s[4:5] offset:-8
{vmwait}
{gstore} v0, v1, s[6:7]
"""
