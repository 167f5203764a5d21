"""gfx942 instructions clang-19 emits from builtins, run on the ISA interpreter against numpy:
loads into LDS of 1, 2 and 4 bytes per lane (``__builtin_amdgcn_global_load_lds`` ->
``global_load_lds_ubyte/ushort/dword``; ``llvm.amdgcn.raw.ptr.buffer.load.lds`` ->
``buffer_load_ubyte/ushort ... lds``) and the f32 -> fp8/bf8 packs
(``__builtin_amdgcn_cvt_pk_fp8_f32`` / ``_bf8_f32`` -> ``v_cvt_pk_fp8_f32`` /
``v_cvt_pk_bf8_f32``)."""
from __future__ import annotations

import subprocess
import tempfile

import numpy as np
from isa_exec_harness import Device, build_hip, require

DMA = r"""
typedef __attribute__((address_space(3))) void* lds_ptr;
typedef __attribute__((address_space(1))) void* global_ptr;
__attribute__((device)) void buffer_load_lds(__amdgpu_buffer_rsrc_t rsrc, lds_ptr lds, int size, int voffset,
                                int soffset, int offset, int aux)
    __asm("llvm.amdgcn.raw.ptr.buffer.load.lds");
KERNEL void dma(unsigned char* in, unsigned* out, int size) {
  SHARED unsigned tile[64];
  uint t = tid_x();
  tile[t] = 0xA5A5A5A5u;
  sync();
  if (size == 1)
    __builtin_amdgcn_global_load_lds((global_ptr)(in + 3 * t), (lds_ptr)tile, 1, 0, 0);
  else if (size == 2)
    __builtin_amdgcn_global_load_lds((global_ptr)(in + 2 * t + 4), (lds_ptr)tile, 2, 0, 0);
  else
    __builtin_amdgcn_global_load_lds((global_ptr)(in + 4 * t), (lds_ptr)tile, 4, 0, 0);
  sync();
  out[t] = tile[t];
}
KERNEL void buffer_dma(unsigned char* in, unsigned* out, int size) {
  SHARED unsigned tile[64];
  uint t = tid_x();
  tile[t] = 0xA5A5A5A5u;
  sync();
  __amdgpu_buffer_rsrc_t rsrc = __builtin_amdgcn_make_buffer_rsrc(in, 0, 200, 0x00020000);
  if (size == 1)
    buffer_load_lds(rsrc, (lds_ptr)tile, 1, 5 * t, 0, 0, 0);   // past 200 bytes: reads 0
  else
    buffer_load_lds(rsrc, (lds_ptr)tile, 2, 2 * t + 1, 0, 0, 0);
  sync();
  out[t] = tile[t];
}
"""

PACK = r"""
KERNEL void pack8(const float* a, const float* b, unsigned* out) {
  uint i = bid_x() * bdim_x() + tid_x();
  int w = __builtin_amdgcn_cvt_pk_fp8_f32(a[i], b[i], 0x12345678, false);   // bits 15:0
  w = __builtin_amdgcn_cvt_pk_bf8_f32(b[i], a[i], w, true);                 // bits 31:16
  out[i] = (unsigned)w;
}
"""


def _listing(code: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".co") as fh:
        fh.write(code)
        fh.flush()
        return subprocess.run([require("llvm-objdump-19"), "-d", fh.name], capture_output=True,
                              text=True, check=True).stdout


def test_loads_into_lds_write_one_extended_dword_per_lane():
    code = build_hip(DMA, "gfx942", ("-O3",))
    listing = _listing(code)
    for mnemonic in ("global_load_lds_ubyte", "global_load_lds_ushort", "global_load_lds_dword",
                     "buffer_load_ubyte", "buffer_load_ushort"):
        assert mnemonic in listing
    dev = Device("gfx942")
    data = (np.arange(256) * 37 + 11).astype(np.uint8)
    source = dev.buffer(data)
    t = np.arange(64)
    d = data.astype(np.uint32)
    runs = (("dma", 1, d[3 * t]),                                    # zero-extended bytes
            ("dma", 2, d[2 * t + 4] | d[2 * t + 5] << 8),           # zero-extended shorts
            ("dma", 4, data.view(np.uint32)[:64]),
            ("buffer_dma", 1, np.where(5 * t < 200, d[np.minimum(5 * t, 255)], 0)),
            ("buffer_dma", 2, d[2 * t + 1] | d[2 * t + 2] << 8))
    for name, size, want in runs:
        out = dev.zeros(4 * 64)
        dev.dispatch(dev.load(code, name), [source, out, size], (64,), (64,))
        assert np.array_equal(dev.read(out, np.uint32, 64), want), (name, size)


def _fnuz_reference(x: np.ndarray, exp_bits: int, man_bits: int, bias: int) -> np.ndarray:
    """Round-to-nearest-even onto the FNUZ grid by brute force (an independent check of the
    interpreter's encoder): nearest of all finite codes and of the value one step past the
    largest (which stands for overflow, code 0x80); ties to the even code."""
    codes = np.arange(128)
    e, m = codes >> man_bits, codes & ((1 << man_bits) - 1)
    grid = np.where(e == 0, m * 2.0 ** (1 - bias - man_bits),
                    (1 + m / 2.0 ** man_bits) * 2.0 ** (e - bias))
    step = grid[127] - grid[126]
    grid = np.append(grid, grid[127] + step)      # index 128: overflow
    out = np.empty(x.size, np.uint32)
    for k, v in enumerate(x.astype(np.float64)):
        if np.isnan(v) or abs(v) >= grid[128]:     # NaN, infinities, far past the largest
            out[k] = 0x80
            continue
        dist = np.abs(grid - abs(v))
        best = np.flatnonzero(dist == dist.min())
        pick = best[0] if len(best) == 1 else next(c for c in best if c % 2 == 0)
        if pick == 128:
            out[k] = 0x80
        else:
            out[k] = pick | (0x80 if v < 0 and pick else 0)
    return out


def test_fp8_and_bf8_packs_round_to_nearest_even_on_the_fnuz_grid():
    code = build_hip(PACK, "gfx942", ("-O3",))
    listing = _listing(code)
    assert "v_cvt_pk_fp8_f32" in listing and "v_cvt_pk_bf8_f32" in listing
    dev = Device("gfx942")
    kernel = dev.load(code, "pack8")
    rng = np.random.default_rng(3)
    special = [0.0, -0.0, 1.0, -1.0, 240.0, 247.9, 248.0, -248.0, 17.0, 19.0, 2.0 ** -11,
               3 * 2.0 ** -11, -(2.0 ** -12), 57344.0, 61439.0, 61440.0, 2.0 ** -18, 3e-5,
               np.inf, -np.inf, np.nan, 1e30, -1e-30, 0.1, 1.0 / 3]
    n = 512
    a = np.concatenate([special, rng.standard_normal(n - len(special)) *
                        np.float64(2.0) ** rng.integers(-20, 17, n - len(special))]
                       ).astype(np.float32)
    b = rng.permutation(a).astype(np.float32)
    out = dev.zeros(4 * n)
    dev.dispatch(kernel, [dev.buffer(a), dev.buffer(b), out], (n,), (256,))
    got = dev.read(out, np.uint32, n)
    fp8 = lambda v: _fnuz_reference(v, 4, 3, 8)    # noqa: E731
    bf8 = lambda v: _fnuz_reference(v, 5, 2, 16)   # noqa: E731
    want = fp8(a) | fp8(b) << 8 | (bf8(b) | bf8(a) << 8) << 16
    bad = np.flatnonzero(got != want)
    assert not bad.size, [(float(a[i]), float(b[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]
