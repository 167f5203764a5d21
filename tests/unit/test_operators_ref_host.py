"""The HIP kernels of kernels/ run on the CPU, through the same runner rows as ``hsapy run``.

tests/unit/host_shim/hsapy_hip.h emulates the HIP subset the sources use (a thread per
work-item, barriers, per-wave shuffles, a run-time wave size), g++ compiles each source
unchanged apart from ``extern __shared__`` declarations, and a ``Session`` hands the compiled
kernels to :func:`hsapy.commands.run.execute_row`. So every variant's index arithmetic, LDS
trees, shuffles, edge handling and launch geometry is checked against the FP64 references at
wave32 and wave64 before a GPU or the ISA interpreter runs the real code objects.
"""
from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from hsapy import operators as ops
from hsapy.commands import run as runcmd

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")

SHIM = Path(__file__).resolve().parent / "host_shim" / "hsapy_hip.h"
SIGNATURE = re.compile(r'extern "C" __global__ void (\w+)\(([^)]*)\)')
DYNAMIC_LDS = re.compile(r"extern __shared__ float (\w+)\[\];")
CTYPES = {"float*": ctypes.c_void_p, "unsignedint": ctypes.c_uint32, "float": ctypes.c_float}


def host_source(text: str) -> str:
    """The kernel source plus one C launcher per kernel: launch_<name>(geometry, wave, args)."""
    body = DYNAMIC_LDS.sub(r"float* \1 = hsapy_lds;", text)
    launchers = []
    for name, params in SIGNATURE.findall(text):
        names = [p.split()[-1].lstrip("*") for p in params.split(",")]
        launchers.append(
            f'extern "C" void launch_{name}(unsigned bx, unsigned by, unsigned bz, unsigned tx, '
            f"unsigned ty, unsigned tz, int wave, {params}) {{\n"
            f"  hsapy_launch({{bx, by, bz}}, {{tx, ty, tz}}, wave, [=] {{ "
            f"{name}({', '.join(names)}); }});\n}}")
    return body + "\n" + "\n".join(launchers) + "\n"


def argument_types(params: str) -> list:
    types = []
    for param in params.split(","):
        words = param.replace("*", " * ").split()[:-1]
        key = "".join(w for w in words if w != "const")
        types.append(CTYPES[key])
    return types


@pytest.fixture(scope="module")
def host_kernels(tmp_path_factory) -> dict[str, tuple[ctypes.CDLL, dict[str, list]]]:
    """operator -> (library, kernel -> argument ctypes), compiled once per test module."""
    out = tmp_path_factory.mktemp("host_kernels")
    shutil.copy(SHIM, out / "hsapy_hip.h")
    shutil.copy(ops.kernels_dir() / "common.h", out / "common.h")
    built = {}
    for name, op in ops.OPERATORS.items():
        text = ops.source_path(op).read_text()
        source = out / f"{name}.cpp"
        source.write_text(host_source(text))
        library = out / f"lib{name}.so"
        subprocess.run(["g++", "-std=c++20", "-O1", "-fPIC", "-shared", "-pthread",
                        "-fno-strict-aliasing", f"-I{out}", str(source), "-o", str(library)],
                       check=True, capture_output=True, text=True, timeout=300)
        signatures = {k: argument_types(p) for k, p in SIGNATURE.findall(text)}
        built[name] = (ctypes.CDLL(str(library)), signatures)
    return built


class HostSession:
    """A runner Session whose device is the CPU: buffers are numpy arrays."""

    simulated = True

    def __init__(self, kernels, wave_size: int):
        self.built = kernels
        self.wave_size = wave_size

    def device(self, target):
        # 2 "compute units": grid-stride variants get 16 blocks, so their loops do iterate.
        return ops.Device(target, self.wave_size, 2)

    def kernels(self, operator, route, target):
        library, signatures = self.built[operator]
        return {name: (getattr(library, f"launch_{name}"), types)
                for name, types in signatures.items()}

    def upload(self, target, array):
        return np.array(array, dtype=np.float32, order="C", copy=True)

    def download(self, buffer, like):
        return buffer.reshape(like.shape)

    def free(self, buffer):
        pass

    def launch(self, kernel, dispatch, args):
        function, types = kernel
        assert dispatch.dynamic_lds <= 4 * 16384
        converted = []
        for value, ctype in zip(args, types):
            if isinstance(value, np.ndarray):
                converted.append(ctypes.c_void_p(value.ctypes.data))
            else:
                converted.append(ctype(value.item()))
        function(*dispatch.blocks, *dispatch.block, self.wave_size, *converted)
        return None


# Small sizes, every variant: edges of the block, the wave, the float4 width and the tiles.
CASES = {
    "vector_add": [(1,), (6,), (33,), (1026,), (1027,), (20_001,)],
    # 70,000 > 256 blocks x 256: the local variants' grid-stride loops iterate.
    "reduction": [(1,), (257,), (1027,), (70_000,)],
    "softmax": [(7, 1025), (3, 255)],
    "gemm": [(33, 17, 40), (17, 33, 9)],
    "attention": [(20, 65), (16, 8)],
    "rmsnorm": [(33, 1), (5, 257), (3, 1025)],
}


# The kernels do not branch on the data, so one input kind checks their logic; attention's
# rising maximum does drive the online kernel's rescaling, so it keeps both.
KINDS = {"attention": ("random", "rising_max")}
LARGE_ONLY_FOR = {(70_000,): ("local_lds", "local_wave")}


def rows(wave: int):
    for name, sizes in CASES.items():
        op = ops.operator(name)
        for variant in op.variants:
            for size in sizes:
                if variant.name not in LARGE_ONLY_FOR.get(size, (variant.name,)):
                    continue
                for kind in KINDS.get(name, op.inputs_kinds[:1]):
                    yield pytest.param(
                        runcmd.RowSpec(name, variant.name, "hip", f"host-wave{wave}", size,
                                       kind), wave,
                        id=f"{name}-{variant.name}-{ops.size_label(size)}-{kind}-w{wave}")


@pytest.mark.parametrize("spec,wave", [*rows(32), *rows(64)])
def test_kernel_matches_the_reference_on_the_host(host_kernels, spec, wave):
    result = runcmd.execute_row(HostSession(host_kernels, wave), spec)
    assert result.error == ""
    assert result.ok, f"max_err {result.max_err} > {result.tolerance} at {result.worst}"


def test_a_kernel_bug_is_caught(host_kernels, tmp_path):
    """Sanity of the harness: v0 launched with one block too few leaves NaN at the end."""
    session = HostSession(host_kernels, 64)
    launch = session.launch

    def short_launch(kernel, dispatch, args):
        fewer = ops.Dispatch(dispatch.kernel, (dispatch.blocks[0] - 1, 1, 1), dispatch.block,
                             dispatch.args, dispatch.dynamic_lds)
        return launch(kernel, fewer, args)

    session.launch = short_launch
    result = runcmd.execute_row(session, runcmd.RowSpec("vector_add", "v0", "hip", "host",
                                                        (257,), "random"))
    assert not result.ok and result.worst == "out[256]"
