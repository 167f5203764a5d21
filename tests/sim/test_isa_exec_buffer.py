"""Buffer instructions end to end: HIP kernels built by clang-19 that address memory through a
buffer resource (``__builtin_amdgcn_make_buffer_rsrc``, the raw/struct buffer intrinsics that
composable_kernel- and rocPRIM-style code emits, ``s_buffer_load``, buffer atomics), flat atomics
that land in LDS or scratch (-O0 code), and gfx90a -O0 code reaching scratch through MUBUF and
the private segment buffer V#. Expected values come from numpy and the range-check rules of the
ISA guides (see hsapy/sim/isa/semantics_buffer.py), per generation.
"""
from __future__ import annotations

import numpy as np
import pytest
from isa_exec_harness import Device, build_hip

# (target, extra clang flags): gfx942 wave64, gfx1201 wave32 and wave64
MODES = [("gfx942", ()), ("gfx1201", ()), ("gfx1201", ("-mwavefrontsize64",))]
# V# word 3 of a raw buffer: gfx942 32-bit data format (CK's constant; untyped loads ignore it),
# gfx1201 OOB_SELECT 3 (raw)
RAW_FLAGS = {"gfx942": 0x00020000, "gfx1201": 3 << 28, "gfx90a": 0x00020000, "gfx1100": 3 << 28}
# gfx90a follows the CDNA rules, gfx1100 (RDNA3) the OOB_SELECT rules of gfx1201
ALSO = [("gfx90a", ()), ("gfx1100", ())]
RULES = {"gfx942": "gfx942", "gfx90a": "gfx942", "gfx1201": "gfx1201", "gfx1100": "gfx1201"}

PRELUDE = """
typedef int int4v __attribute__((ext_vector_type(4)));
#define RSRC(p, stride, bytes, flags) \\
  __builtin_amdgcn_make_buffer_rsrc((void*)(p), (short)(stride), (int)(bytes), (int)(flags))
DEVICE int4v words(const void* p, uint stride, uint records, uint flags) {
  long a = (long)p;
  int4v r = {(int)a, (int)(((a >> 32) & 0xffff) | (stride << 16)), (int)records, (int)flags};
  return r;
}
__attribute__((device)) uint struct_load(int4v rsrc, uint vindex, uint voffset, uint soffset, int aux)
  __asm("llvm.amdgcn.struct.buffer.load.i32");
__attribute__((device)) void struct_store(uint v, int4v rsrc, uint vindex, uint voffset,
                                          uint soffset, int aux)
  __asm("llvm.amdgcn.struct.buffer.store.i32");
__attribute__((device)) uint sbuffer_load(int4v rsrc, uint offset, int aux)
  __asm("llvm.amdgcn.s.buffer.load.i32");
__attribute__((device)) uint atomic_add(uint v, int4v rsrc, uint voffset, uint soffset, int aux)
  __asm("llvm.amdgcn.raw.buffer.atomic.add.i32");
__attribute__((device)) uint atomic_smax(uint v, int4v rsrc, uint voffset, uint soffset, int aux)
  __asm("llvm.amdgcn.raw.buffer.atomic.smax.i32");
__attribute__((device)) uint atomic_cmpswap(uint v, uint cmp, int4v rsrc, uint voffset,
                                            uint soffset, int aux)
  __asm("llvm.amdgcn.raw.buffer.atomic.cmpswap.i32");
__attribute__((device)) float atomic_fadd(float v, int4v rsrc, uint voffset, uint soffset, int aux)
  __asm("llvm.amdgcn.raw.buffer.atomic.fadd.f32");
__attribute__((device)) float load_format(int4v rsrc, uint voffset, uint soffset, int aux)
  __asm("llvm.amdgcn.raw.buffer.load.format.f32");
__attribute__((device)) float tbuffer_load(int4v rsrc, uint voffset, uint soffset, int format, int aux)
  __asm("llvm.amdgcn.raw.tbuffer.load.f32");
"""

RAW = PRELUDE + """
// byte offset t (unaligned too): which lanes read depends on the generation's range check
KERNEL void raw_bytes(const uint* src, uint* out, uint nbytes, uint flags) {
  uint t = tid_x();
  out[t] = __builtin_amdgcn_raw_buffer_load_b32(RSRC(src, 0, nbytes, flags), t, 0, 0);
}
// SOFFSET is outside the check; the voffset is inside it
KERNEL void raw_soffset(const uint* src, uint* out, uint nbytes, uint flags, uint soffset) {
  uint t = tid_x();
  out[t] = __builtin_amdgcn_raw_buffer_load_b32(RSRC(src, 0, nbytes, flags), 4 * t, soffset, 0);
}
// no VGPR offset: the instruction offset alone (buffer_load_dword v, off, ... offset:N)
KERNEL void raw_const(const uint* src, uint* out, uint nbytes, uint flags) {
  __amdgpu_buffer_rsrc_t r = RSRC(src, 0, nbytes, flags);
  uint t = tid_x();
  out[4 * t + 0] = __builtin_amdgcn_raw_buffer_load_b32(r, 24, 0, 0);
  out[4 * t + 1] = __builtin_amdgcn_raw_buffer_load_b32(r, 26, 0, 0);
  out[4 * t + 2] = __builtin_amdgcn_raw_buffer_load_b32(r, 28, 0, 0);
  out[4 * t + 3] = __builtin_amdgcn_raw_buffer_load_b32(r, 32, 0, 0);
}
// 64- and 128-bit loads are checked per dword; stores beyond the records are dropped
KERNEL void raw_wide(const uint* src, uint* out, uint nbytes, uint flags) {
  uint t = tid_x();
  __amdgpu_buffer_rsrc_t in = RSRC(src, 0, nbytes, flags);
  __amdgpu_buffer_rsrc_t res = RSRC(out, 0, nbytes * 6, flags);
  auto two = __builtin_amdgcn_raw_buffer_load_b64(in, 4 * t, 0, 0);
  auto four = __builtin_amdgcn_raw_buffer_load_b128(in, 4 * t, 0, 0);
  __builtin_amdgcn_raw_buffer_store_b64(two, res, 24 * t, 0, 0);
  __builtin_amdgcn_raw_buffer_store_b128(four, res, 24 * t + 8, 0, 0);
}
KERNEL void raw_store(uint* dst, uint nbytes, uint flags) {
  uint t = tid_x();
  __builtin_amdgcn_raw_buffer_store_b32(t + 1, RSRC(dst, 0, nbytes, flags), 4 * t, 0, 0);
  __builtin_amdgcn_raw_buffer_store_b8((unsigned char)(t + 1), RSRC(dst, 0, nbytes, flags),
                                       1024 + t, 0, 0);
}
// structured (idxen): stride 12, record index t, offset 4 within the record
KERNEL void structured(const uint* src, uint* out, uint records, uint flags) {
  uint t = tid_x();
  out[t] = struct_load(words(src, 12, records, flags), t, 4, 0, 0);
  struct_store(t + 7, words(out + 64, 12, records, flags), t, 8, 0, 0);
}
// scalar buffer loads: uniform offsets, the V# range check on whole dwords
KERNEL void scalar(const uint* src, uint* out, uint nbytes, uint off) {
  int4v r = words(src, 0, nbytes, 0);
  uint t = tid_x();
  out[t] = sbuffer_load(r, off, 0) + 3 * sbuffer_load(r, off + 4, 0);
}
// buffer atomics, returning and not
KERNEL void atomics(uint* counters, float* fsum, uint* olds, uint flags) {
  uint t = tid_x();
  int4v r = words(counters, 0, 16, flags);
  olds[t] = atomic_add(1, r, 0, 0, 0);              // returns the old value
  atomic_smax(t * 3, r, 4, 0, 0);                    // no return
  atomic_cmpswap(t + 100, t, r, 8, 0, 0);            // only lane 0 matches 0
  atomic_add(5, r, 16, 0, 0);                        // out of range: dropped
  atomic_fadd(0.5f, words(fsum, 0, 4, flags), 0, 0, 0);
}
// format conversion from the V# (buffer_load_format) and from the instruction (tbuffer)
KERNEL void formats(const uint* src, float* out, uint vflags, uint tformat_unused) {
  uint t = tid_x();
  out[2 * t] = load_format(words(src, 0, 256, vflags), 2 * t, 0, 0);
  out[2 * t + 1] = tbuffer_load(words(src, 0, 256, vflags), 4 * t, 0, TFORMAT, 0);
}
"""


def _raw_reference(target: str, memory: bytes, nbytes: int, offsets, soffset: int = 0):
    """What each lane's raw dword load returns: gfx9 checks offset < num_records, gfx12
    (OOB_SELECT 3) offset + 4 <= num_records; SOFFSET is never checked."""
    out = []
    for off in offsets:
        ok = off < nbytes if RULES[target] == "gfx942" else off + 4 <= nbytes
        start = off + soffset
        out.append(int.from_bytes(memory[start:start + 4], "little") if ok else 0)
    return np.array(out, np.uint32)


def _device(target: str, flags: tuple, source: str, name: str, defines: tuple = ()):
    dev = Device(target)
    return dev, dev.load(build_hip(source, target, flags + defines), name)


@pytest.mark.parametrize("target,flags", MODES + ALSO)
@pytest.mark.parametrize("nbytes", [28, 29, 30])
def test_raw_buffer_range_check_per_generation_at_byte_granularity(target, flags, nbytes):
    dev, kernel = _device(target, flags, RAW, "raw_bytes", ("-DTFORMAT=0",))
    memory = bytes(range(1, 129))
    src, out = dev.buffer(np.frombuffer(memory, np.uint8)), dev.buffer(np.full(64, 7, np.uint32))
    dev.dispatch(kernel, [src, out, nbytes, RAW_FLAGS[target]], (64,), (64,))
    want = _raw_reference(target, memory, nbytes, range(64))
    assert np.array_equal(dev.read(out, np.uint32, 64), want)
    # both sides of the boundary, explicitly: the last lane that reads and the first that does not
    last = nbytes - 1 if RULES[target] == "gfx942" else nbytes - 4
    assert want[last] != 0 and want[last + 1] == 0


@pytest.mark.parametrize("target,flags", MODES)
def test_soffset_is_outside_the_range_check(target, flags):
    dev, kernel = _device(target, flags, RAW, "raw_soffset", ("-DTFORMAT=0",))
    memory = np.arange(1, 129, dtype=np.uint32)
    src, out = dev.buffer(memory), dev.zeros(4 * 64)
    dev.dispatch(kernel, [src, out, 40, RAW_FLAGS[target], 64], (64,), (64,))
    got = dev.read(out, np.uint32, 64)
    want = _raw_reference(target, memory.tobytes(), 40, range(0, 256, 4), soffset=64)
    assert np.array_equal(got, want)
    assert got[9] == memory[16 + 9] and got[10] == 0   # voffset 36 in range, 40 out


@pytest.mark.parametrize("target,flags", MODES)
@pytest.mark.parametrize("nbytes", [28, 30])
def test_instruction_offset_without_a_vgpr_is_range_checked(target, flags, nbytes):
    dev, kernel = _device(target, flags, RAW, "raw_const", ("-DTFORMAT=0",))
    names = [i.text() for i in _decoded(kernel.code_object, "raw_const") if "buffer_load" in i.name]
    assert any(", off," in text for text in names), names
    memory = bytes(range(1, 129))
    src, out = dev.buffer(np.frombuffer(memory, np.uint8)), dev.zeros(16 * 64)
    dev.dispatch(kernel, [src, out, nbytes, RAW_FLAGS[target]], (64,), (64,))
    got = dev.read(out, np.uint32, 4 * 64).reshape(64, 4)
    want = _raw_reference(target, memory, nbytes, [24, 26, 28, 32])
    assert (got == want).all()
    # offset 26 of 28 or 30 bytes: gfx9 reads (26 < 28), gfx12 only when 26 + 4 <= 30
    assert (want[1] != 0) == (target == "gfx942" or nbytes == 30)


@pytest.mark.parametrize("target,flags", MODES)
def test_wide_loads_are_checked_per_dword_and_stores_past_the_records_are_dropped(target, flags):
    dev, kernel = _device(target, flags, RAW, "raw_wide", ("-DTFORMAT=0",))
    nbytes = 32
    memory = np.arange(1, 65, dtype=np.uint32)
    src, out = dev.buffer(memory), dev.buffer(np.full(6 * 64, 0xEEEEEEEE, np.uint32))
    dev.dispatch(kernel, [src, out, nbytes, RAW_FLAGS[target]], (64,), (64,))
    got = dev.read(out, np.uint32, 6 * 64).reshape(64, 6)
    for t in range(64):
        for k in range(6):     # dword k of the output row: load b64 dword k, then b128 dword k-2
            source = 4 * t + 4 * (k if k < 2 else k - 2)
            store = 24 * t + 4 * k
            if store + 4 > 6 * nbytes:           # the store itself is past the output records
                assert got[t, k] == 0xEEEEEEEE, (t, k)
                continue
            ok = source + 4 <= nbytes            # dword-aligned: both generations agree
            assert got[t, k] == (memory[source // 4] if ok else 0), (t, k)


@pytest.mark.parametrize("target,flags", MODES)
def test_raw_stores_of_dwords_and_bytes_stop_at_the_records(target, flags):
    dev, kernel = _device(target, flags, RAW, "raw_store", ("-DTFORMAT=0",))
    dst = dev.zeros(2048)
    dev.dispatch(kernel, [dst, 1024 + 30, RAW_FLAGS[target]], (64,), (64,))
    words = dev.read(dst, np.uint32, 256)
    assert np.array_equal(words[:64], np.arange(1, 65))
    got = dev.read(dst + 1024, np.uint8, 64)
    assert np.array_equal(got[:30], np.arange(1, 31)) and not got[30:].any()


STRUCT_FLAGS = {"gfx942": (0x00020000,), "gfx1201": (0 << 28, 1 << 28)}


@pytest.mark.parametrize("target,flags,vflags", [
    (t, f, v) for t, f in MODES for v in STRUCT_FLAGS[t]])
def test_structured_buffer_checks_the_record_index(target, flags, vflags):
    dev, kernel = _device(target, flags, RAW, "structured", ("-DTFORMAT=0",))
    records = 10
    memory = np.arange(1, 1 + 3 * 64, dtype=np.uint32)
    src, out = dev.buffer(memory), dev.buffer(np.full(64 + 3 * 64, 0xEEEEEEEE, np.uint32))
    dev.dispatch(kernel, [src, out, records, vflags], (64,), (64,))
    got = dev.read(out, np.uint32, 64)
    t = np.arange(64)
    # record t at 12 t; dword 1 of it. gfx9: index >= num_records is out; gfx12 OOB_SELECT 1 the
    # same, OOB_SELECT 0 also offset + 4 > stride (4 + 4 <= 12 holds)
    assert np.array_equal(got, np.where(t < records, memory[3 * t + 1], 0))
    stored = dev.read(out + 4 * 64, np.uint32, 3 * 64).reshape(64, 3)
    assert np.array_equal(stored[:records, 2], t[:records] + 7)
    assert (stored[records:] == 0xEEEEEEEE).all() and (stored[:, :2] == 0xEEEEEEEE).all()


@pytest.mark.parametrize("target,flags", MODES)
@pytest.mark.parametrize("off,nbytes", [(8, 16), (12, 16), (16, 16), (8, 12)])
def test_s_buffer_load_reads_zero_past_num_records(target, flags, off, nbytes):
    dev, kernel = _device(target, flags, RAW, "scalar", ("-DTFORMAT=0",))
    memory = np.arange(1, 17, dtype=np.uint32) * 10
    src, out = dev.buffer(memory), dev.zeros(4 * 64)
    dev.dispatch(kernel, [src, out, nbytes, off], (64,), (64,))
    code = kernel.code_object
    assert any(inst.name.startswith("s_buffer_load") for inst in _decoded(code, "scalar"))

    def word(o: int) -> int:
        return int(memory[o // 4]) if o < nbytes else 0
    assert (dev.read(out, np.uint32, 64) == word(off) + 3 * word(off + 4)).all()


def _decoded(code_object, name):
    from hsapy.sim.isa import decode_kernel

    return decode_kernel(code_object, name)


@pytest.mark.parametrize("target,flags", MODES + ALSO)
def test_buffer_atomics_with_and_without_return(target, flags):
    dev, kernel = _device(target, flags, RAW, "atomics", ("-DTFORMAT=0",))
    counters = dev.buffer(np.array([10, 0, 0, 0, 99], np.uint32))
    fsum, olds = dev.buffer(np.zeros(1, np.float32)), dev.zeros(4 * 64)
    dev.dispatch(kernel, [counters, fsum, olds, RAW_FLAGS[target]], (64,), (64,))
    got = dev.read(counters, np.uint32, 5)
    assert got[0] == 10 + 64 and got[1] == 3 * 63 and got[2] == 100 and got[4] == 99
    assert sorted(dev.read(olds, np.uint32, 64)) == list(range(10, 74))
    assert dev.read(fsum, np.float32, 1)[0] == 32.0


@pytest.mark.parametrize("target,flags", MODES)
def test_format_conversion_from_the_resource_and_the_instruction(target, flags):
    # V#: 16_16 FLOAT (buffer_load_format_x widens the f16 at each offset); tbuffer: 32 FLOAT
    if target == "gfx942":
        vflags, tformat = 7 << 12 | 5 << 15, 7 << 4 | 4    # NFMT FLOAT, DFMT 16_16 / 32
    else:
        vflags, tformat = 3 << 28 | 29 << 12, 22             # BUF_FMT_16_16_FLOAT / 32_FLOAT
    dev, kernel = _device(target, flags, RAW, "formats", (f"-DTFORMAT={tformat}",))
    halves = (np.arange(128, dtype=np.float16) * np.float16(0.5))
    src, out = dev.buffer(halves), dev.zeros(8 * 64)
    dev.dispatch(kernel, [src, out, vflags | 4 | 5 << 3 | 6 << 6 | 7 << 9, 0], (64,), (64,))
    got = dev.read(out, np.float32, 128).reshape(64, 2)
    assert np.array_equal(got[:, 0], halves[np.arange(64)].astype(np.float32))
    assert np.array_equal(got[:, 1].view(np.uint32), halves.view(np.uint32)[:64])


# --- flat atomics that land in LDS or scratch (-O0 keeps generic pointers) -----------------------
FLAT_ATOMICS = """
KERNEL void shared_atomics(uint* out, float* outf, uint* olds) {
  __attribute__((shared)) uint c[12];
  __attribute__((shared)) float fsum;
  uint t = __builtin_amdgcn_workitem_id_x();
  uint* p = c;                       // a generic pointer to LDS: flat atomics at -O0
  float* f = &fsum;
  if (t < 12) p[t] = 100;
  if (t == 0) *f = 0.0f;
  __builtin_amdgcn_s_barrier();
  olds[t] = __hip_atomic_fetch_add(p + 0, t, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  __hip_atomic_fetch_sub(p + 1, t, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  __hip_atomic_fetch_and(p + 2, ~(1u << (t & 31)), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  __hip_atomic_fetch_or(p + 3, 1u << (t & 31), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  __hip_atomic_fetch_xor(p + 4, t, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  __hip_atomic_fetch_max(p + 5, t * 3, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  __hip_atomic_fetch_min(p + 6, t + 50, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  __hip_atomic_fetch_max((int*)(p + 7), (int)t - 200, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  __hip_atomic_fetch_min((int*)(p + 8), 60 - (int)t * 4, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  __hip_atomic_exchange(p + 9, t, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  uint expected = 100;
  __hip_atomic_compare_exchange_strong(p + 10, &expected, 200 + t, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  __hip_atomic_fetch_add(f, 0.25f, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  uint mine = 5;                     // a private variable behind a generic pointer
  uint old = __hip_atomic_fetch_add(&mine, t, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  __builtin_amdgcn_s_barrier();
  if (t < 12) out[t] = p[t];
  out[16 + t] = old * 1000 + mine;
  if (t == 0) outf[0] = *f;
}
"""


@pytest.mark.parametrize("target,flags", MODES)
def test_flat_atomics_on_shared_and_private_memory_at_O0(target, flags):
    dev, kernel = _device(target, flags + ("-O0",), FLAT_ATOMICS, "shared_atomics")
    names = {inst.name for inst in _decoded(kernel.code_object, "shared_atomics")}
    assert any(n.startswith("flat_atomic") for n in names), names
    block = 64
    out, outf, olds = dev.zeros(4 * 96), dev.zeros(4), dev.zeros(4 * block)
    private = kernel.code_object.kernels["shared_atomics"].private_segment_fixed_size
    dev.dispatch(kernel, [out, outf, olds], (block,), (block,), private=private)
    got = dev.read(out, np.uint32, 12)
    t = np.arange(block, dtype=np.int64)
    xor = 100
    for v in t:
        xor ^= int(v)
    want = [100 + t.sum(), (100 - t.sum()) & 0xFFFFFFFF,
            100 & ~int(np.bitwise_or.reduce(1 << (t & 31))),
            100 | int(np.bitwise_or.reduce(1 << (t & 31))), xor, max(100, 3 * 63),
            min(100, 50), 100, min(100, 60 - 4 * 63) & 0xFFFFFFFF]
    assert list(got[:9]) == [int(w) & 0xFFFFFFFF for w in want]
    assert got[9] in t and 200 <= got[10] < 200 + block
    assert dev.read(outf, np.float32, 1)[0] == 0.25 * block
    returned = dev.read(olds, np.uint32, block)      # each lane saw the counter before its add
    assert (returned >= 100).all() and (returned + t <= 100 + t.sum()).all()
    assert np.array_equal(dev.read(out + 64, np.uint32, block), 5 * 1000 + 5 + t)


# --- gfx90a -O0: scratch through MUBUF and the private segment buffer V# in s[0:3] ---------------
PRIVATE = """
KERNEL void priv(const uint* idx, float* out) {
  float local[33];                       // dynamically indexed: lives in scratch
  uint t = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  for (int i = 0; i < 33; i++) local[i] = t * 1.0f + i;
  out[t] = local[idx[t] % 33];
}
"""


@pytest.mark.parametrize("opt", [("-O0",), ("-O1",)])
def test_gfx90a_scratch_through_mubuf_and_the_private_segment_buffer(opt):
    dev, kernel = _device("gfx90a", opt, PRIVATE, "priv")
    info = kernel.code_object.kernels["priv"]
    assert info.descriptor.raw[56] & 1       # kernel_code_properties: private segment buffer
    names = {inst.name for inst in _decoded(kernel.code_object, "priv")}
    assert {"buffer_store_dword", "buffer_load_dword"} & names, names
    n = 256
    idx = np.random.default_rng(0).integers(0, 1000, n).astype(np.uint32)
    pi, out = dev.buffer(idx), dev.zeros(4 * n)
    dev.dispatch(kernel, [pi, out], (n,), (64,), private=info.private_segment_fixed_size)
    assert np.array_equal(dev.read(out, np.float32, n), np.arange(n, dtype=np.float32) + idx % 33)


# --- gfx942 loads straight into LDS (M0 + instruction offset + 4 * lane) ------------------------
TO_LDS = PRELUDE + """
__attribute__((device)) void buffer_load_lds(int4v rsrc, __attribute__((address_space(3))) void* lds,
                                             int size, uint voffset, uint soffset, int offset,
                                             int aux)
  __asm("llvm.amdgcn.raw.buffer.load.lds");
KERNEL void to_lds(const float* src, float* out, uint nbytes) {
  __attribute__((shared)) float tile[256];
  uint t = tid_x();
  // lanes 0-63 -> tile[36 + t] from src[4 + t]; lanes past nbytes load 0
  __builtin_amdgcn_global_load_lds((float*)src + t, &tile[32], 4, 16, 0);
  buffer_load_lds(words(src, 0, nbytes, 0x00020000),
                  (__attribute__((address_space(3))) void*)&tile[128], 4, 4 * t, 0, 8, 0);
  __builtin_amdgcn_s_waitcnt(0);
  sync();
  out[t] = tile[36 + t];
  out[64 + t] = tile[130 + t];
}
"""


def test_gfx942_loads_into_lds_through_global_and_buffer_instructions():
    dev, kernel = _device("gfx942", (), TO_LDS, "to_lds", ("-DTFORMAT=0",))
    names = {inst.name for inst in _decoded(kernel.code_object, "to_lds")}
    assert {"global_load_lds_dword", "buffer_load_dword"} <= names, names
    src = np.arange(1, 129, dtype=np.float32)
    nbytes = 4 * 40
    psrc, out = dev.buffer(src), dev.zeros(4 * 128)
    dev.dispatch(kernel, [psrc, out, nbytes], (64,), (64,), lds=0)
    got = dev.read(out, np.float32, 128)
    t = np.arange(64)
    assert np.array_equal(got[:64], src[4 + t])
    # buffer form: voffset 4t + 8 checked against 160 bytes; the dword lands at 512 + 8 + 4t
    assert np.array_equal(got[64:], np.where(4 * t + 8 < nbytes, src[(4 * t + 8) // 4], 0))
