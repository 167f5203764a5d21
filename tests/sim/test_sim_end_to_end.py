"""End to end on the simulator through the raw C API: a real code object (assembled by
llvm-mc-19, linked by ld.lld-19 in the test) is loaded by the simulator's loader, its kernel
dispatched through an AQL queue, and the completion signal observed; a kernel that is not
s_endpgm fails through the queue error path."""
from __future__ import annotations

import shutil
import subprocess

import _packets as P
import pytest

from hsapy._hsa import ffi
from hsapy.sim import SimLib

TEMPLATE = """\
.amdgcn_target "amdgcn-amd-amdhsa--{target}"
.text
.globl {name}
.p2align 8
.type {name},@function
{name}:
  {body}
.rodata
.p2align 6
.amdhsa_kernel {name}
  .amdhsa_next_free_vgpr 1
  .amdhsa_next_free_sgpr 1
  {extra}
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.kernels:
  - .name: {name}
    .symbol: {name}.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: {wave}
    .sgpr_count: 0
    .vgpr_count: 1
    .max_flat_workgroup_size: 1024
    .args: []
...
.end_amdgpu_metadata
"""

WAVE = {"gfx942": 64, "gfx1201": 32}
EXTRA = {"gfx942": ".amdhsa_accum_offset 4", "gfx1201": ""}


def build(tmp_path, target: str, name: str, body: str) -> bytes:
    mc, lld = shutil.which("llvm-mc-19"), shutil.which("ld.lld-19")
    if mc is None or lld is None:
        pytest.skip("llvm-mc-19 / ld.lld-19 not installed (Debian packages llvm-19, lld-19)")
    source = tmp_path / f"{name}.s"
    source.write_text(TEMPLATE.format(target=target, name=name, body=body, wave=WAVE[target],
                                      extra=EXTRA[target]))
    obj, hsaco = tmp_path / f"{name}.o", tmp_path / f"{name}.hsaco"
    subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", f"-mcpu={target}", "-filetype=obj",
                    str(source), "-o", str(obj)], check=True, timeout=60)
    subprocess.run([lld, "-shared", str(obj), "-o", str(hsaco)], check=True, timeout=60)
    return hsaco.read_bytes()


def load_kernel(lib, agent: int, code: bytes, name: str) -> int:
    """Load through the HSA loader API and return the kernel object address."""
    reader = ffi.new("hsa_code_object_reader_t *")
    blob = ffi.from_buffer(code)
    assert lib.hsa_code_object_reader_create_from_memory(blob, len(code), reader) == 0
    executable = ffi.new("hsa_executable_t *")
    assert lib.hsa_executable_create_alt(lib.HSA_PROFILE_FULL, 0, ffi.NULL, executable) == 0
    assert lib.hsa_executable_load_agent_code_object(executable[0], {"handle": agent}, reader[0],
                                                     ffi.NULL, ffi.NULL) == 0
    assert lib.hsa_executable_freeze(executable[0], ffi.NULL) == 0
    symbol = ffi.new("hsa_executable_symbol_t *")
    agent_ptr = ffi.new("hsa_agent_t *", {"handle": agent})
    assert lib.hsa_executable_get_symbol_by_name(executable[0], f"{name}.kd".encode(), agent_ptr,
                                                 symbol) == 0
    kernel_object = ffi.new("uint64_t *")
    assert lib.hsa_executable_symbol_get_info(
        symbol[0], lib.HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, kernel_object) == 0
    return kernel_object[0]


@pytest.fixture
def lib():
    sim = SimLib(ffi, executor="builtin")
    assert sim.hsa_init() == 0
    yield sim
    sim.hsa_shut_down()


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_empty_kernel_code_object_runs_to_completion(lib, tmp_path, target):
    agent = P.gpu(lib, target)
    kernel = load_kernel(lib, agent, build(tmp_path, target, "empty", "s_endpgm"), "empty")
    assert kernel in lib.kernel_objects
    queue = P.create_queue(lib, agent)
    done = P.signal(lib, 1)
    P.publish(lib, queue, P.dispatch(kernel, grid=(256, 1, 1), workgroup=(64, 1, 1),
                                     completion=done))
    assert P.wait_lt(lib, done) == 0


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_other_kernel_fails_with_its_first_instruction(lib, tmp_path, target):
    agent = P.gpu(lib, target)
    code = build(tmp_path, target, "busy", "s_nop 0\n  s_endpgm")
    kernel = load_kernel(lib, agent, code, "busy")
    errors = P.ErrorLog()
    queue = P.create_queue(lib, agent, errors=errors)
    done = P.signal(lib, 1)
    P.publish(lib, queue, P.dispatch(kernel, completion=done))
    assert errors.wait()[0][0] == 42
    assert lib.sim_queue_error(queue)[1].startswith(f"not implemented for {target}: 0xbf800000")
    assert lib.hsa_signal_load_relaxed({"handle": done}) == 1
