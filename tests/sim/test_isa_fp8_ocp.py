"""gfx1201's f32 -> 8-bit float packs, end to end: HIP kernels built by clang-19 (wave32 and
wave64) call ``__builtin_amdgcn_cvt_pk_fp8_f32`` / ``_bf8_f32`` with both word selects and run
under both engines; every word must be what an independent reference gives (the nearest of the
OCP E4M3FN / E5M2 finite codes, ties to the even code, the input's sign kept). What the RDNA4
guide leaves open -- NaN, infinite and too-large inputs -- stops the queue naming the lane and
its value."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import hsapy
from hsapy import toolchain
from hsapy.errors import HsapyError

pytestmark = pytest.mark.skipif(shutil.which("clang-19") is None,
                                reason="the kernels are built with clang-19")

# Four words per work-item: fp8 of (a, b) into the low and the high word of `old`, then bf8 of
# (c, d) the same way.
SOURCE = r"""
extern "C" __global__ void pack(const float* a, const float* b, const float* c, const float* d,
                                const unsigned* old, unsigned* out) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[4 * i + 0] = __builtin_amdgcn_cvt_pk_fp8_f32(a[i], b[i], old[i], false);
  out[4 * i + 1] = __builtin_amdgcn_cvt_pk_fp8_f32(a[i], b[i], old[i], true);
  out[4 * i + 2] = __builtin_amdgcn_cvt_pk_bf8_f32(c[i], d[i], old[i], false);
  out[4 * i + 3] = __builtin_amdgcn_cvt_pk_bf8_f32(c[i], d[i], old[i], true);
}
"""

# (exponent bits, mantissa bits, bias, largest finite code) of the OCP formats
FORMATS = {"fp8": (4, 3, 7, 0x7E), "bf8": (5, 2, 15, 0x7B)}


def _ocp_reference(x: np.ndarray, kind: str) -> np.ndarray:
    """Each value's code: among the 256 codes, the finite ones of the value's sign, the nearest
    in value; of two equally near, the even code."""
    exp_bits, man_bits, bias, largest = FORMATS[kind]
    codes = np.arange(256)
    e, m = (codes >> man_bits) & ((1 << exp_bits) - 1), codes & ((1 << man_bits) - 1)
    magnitude = np.where(e == 0, m * 2.0 ** (1 - bias - man_bits),
                         (1 + m / 2.0 ** man_bits) * 2.0 ** (e - bias))
    finite = (codes & 0x7F) <= largest
    x = x.astype(np.float64)
    same_sign = (codes >> 7)[None, :] == np.signbit(x)[:, None]
    distance = np.where(finite & same_sign, np.abs(np.abs(x)[:, None] - magnitude[None, :]),
                        np.inf)
    nearest = distance == distance.min(axis=1, keepdims=True)
    # the even code among the nearest (two at most, adjacent), else the only one
    pick = np.where((nearest & (codes % 2 == 0)).any(axis=1),
                    np.argmax(nearest & (codes % 2 == 0), axis=1), np.argmax(nearest, axis=1))
    return pick.astype(np.uint32)


def _inputs(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Random values within the format's range, every tie between neighbouring codes, values at
    and near the largest, denormal results and both zeros; shuffled, ``n`` of them."""
    exp_bits, man_bits, bias, largest = FORMATS[kind]
    codes = np.arange(largest + 1)
    e, m = codes >> man_bits, codes & ((1 << man_bits) - 1)
    values = np.where(e == 0, m * 2.0 ** (1 - bias - man_bits),
                      (1 + m / 2.0 ** man_bits) * 2.0 ** (e - bias))
    top = values[-1]
    ties = (values[:-1] + values[1:]) / 2
    tiny = 2.0 ** (1 - bias - man_bits)
    special = np.concatenate([[0.0, -0.0, top, -top, np.nextafter(np.float32(top), 0)],
                              ties, -ties, np.arange(-20, 21) * tiny / 4, values, -values])
    random = rng.uniform(-1, 1, n) * top * 2.0 ** rng.integers(-2 ** exp_bits, 1, n)
    mixed = np.concatenate([special, random])[:n]
    return rng.permutation(mixed).astype(np.float32)


@pytest.fixture(scope="module")
def code() -> dict[int, bytes]:
    return {32: toolchain.build_hip(SOURCE, "gfx1201"),
            64: toolchain.build_hip(SOURCE, "gfx1201", extra_args=["-mwavefrontsize64"])}


def _run(code: bytes, engine: str, a, b, c, d, old) -> np.ndarray:
    n = a.size
    with hsapy.Runtime(backend="sim", targets=["gfx1201"], engine=engine) as rt:
        agent = rt.gpu_agents[0]
        kernel = rt.load(code, agent).kernel("pack")
        buffers = []
        for host in (a, b, c, d, old):
            buf = agent.device_pool.allocate(host.nbytes)
            buf.copy_from(host)
            buffers.append(buf)
        out = agent.device_pool.allocate(16 * n)
        with agent.create_queue(size=64) as queue:
            kernel.launch(queue, [*buffers, out], grid=n, workgroup=min(n, 128), timeout=120)
        return out.copy_to(dtype=np.uint32)[:4 * n].reshape(n, 4)


@pytest.mark.parametrize("engine", ["interp", "jit"])
@pytest.mark.parametrize("wave", [32, 64])
def test_packs_round_to_nearest_even_on_the_ocp_grids_into_the_selected_word(code, wave, engine):
    rng = np.random.default_rng(wave)
    n = 1024
    a, b = _inputs("fp8", n, rng), _inputs("fp8", n, rng)
    c, d = _inputs("bf8", n, rng), _inputs("bf8", n, rng)
    old = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    got = _run(code[wave], engine, a, b, c, d, old)
    fp8 = _ocp_reference(a, "fp8") | _ocp_reference(b, "fp8") << 8
    bf8 = _ocp_reference(c, "bf8") | _ocp_reference(d, "bf8") << 8
    low, high = old & np.uint32(0xFFFF0000), old & np.uint32(0xFFFF)
    want = np.stack([low | fp8, high | fp8 << 16, low | bf8, high | bf8 << 16], axis=1)
    bad = np.argwhere(got != want)
    assert not bad.size, [(int(i), int(j), float((a, a, c, c)[j][i]), float((b, b, d, d)[j][i]),
                           hex(got[i, j]), hex(want[i, j])) for i, j in bad[:5]]


@pytest.mark.parametrize("engine", ["interp", "jit"])
@pytest.mark.parametrize("slot,value,why", [
    ("a", np.nan, "lane 5 converts nan: the RDNA4 ISA guide does not define the fp8 NaN"),
    ("b", -np.inf, "lane 5 converts -inf: the RDNA4 ISA guide does not define whether an "
                   "infinite input gives a fp8 infinity"),
    ("a", 449.0, "lane 5 converts 449.0: above the largest finite fp8 value 448"),
    ("d", 61440.0, "lane 5 converts 61440.0: above the largest finite bf8 value 57344"),
])
def test_nan_infinite_and_too_large_inputs_stop_the_queue_naming_the_lane(code, engine, slot,
                                                                          value, why):
    inputs = {k: np.ones(64, np.float32) for k in "abcd"}
    inputs[slot][5] = value
    with pytest.raises(HsapyError) as raised:
        _run(code[32], engine, *inputs.values(), np.zeros(64, np.uint32))
    message = str(raised.value)
    assert "not implemented for gfx1201: v_cvt_pk_" in message, message
    assert why in message, message
