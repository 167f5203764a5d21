"""Kernarg layouts and packing plans (hsapy.kernarg) on real code objects.

The golden bytes below are computed by hand from the dispatch geometry (block counts = grid //
workgroup, remainders = grid % workgroup, ...) at the offsets the metadata gives -- offsets that
tests/unit/test_codeobject.py checks against llvm-readelf-19.
"""
from __future__ import annotations

import struct

import numpy as np
import pytest
from _codeobjects import build, built
from hypothesis import given, settings
from hypothesis import strategies as st

from hsapy.codeobject import CodeObject
from hsapy.errors import HsapyTypeError, HsapyValueError
from hsapy.kernarg import (
    KernargLayout,
    KernelArgumentError,
    KernelArgumentValueError,
    normalize_dims,
)


def kernel(name: str, builder=None, *args):
    builder = builder or build.build_hip
    args = args or ("gfx942", 5)
    return CodeObject.from_bytes(built(builder, *args)).kernels[name]


class FakeBuffer:
    """Anything with an ``.address`` is accepted where a pointer is expected."""

    def __init__(self, address: int) -> None:
        self.address = address


# ---------------------------------------------------------------------------------------------
# Golden bytes


def u16(v): return struct.pack("<H", v)
def u32(v): return struct.pack("<I", v)
def u64(v): return struct.pack("<Q", v)


def test_dims_kernel_golden_bytes():
    """dims(unsigned* out, unsigned scale) reads blockDim and grid/block-derived values."""
    info = kernel("dims")
    layout = KernargLayout.from_kernel(info)
    # The metadata's hidden block starts right after the explicit args, rounded up to 8.
    offsets = {a.value_kind: a.offset for a in info.args}
    assert offsets["hidden_block_count_x"] == 16 and offsets["hidden_grid_dims"] == 80
    out = 0x00007F0000001000
    data = layout.pack([FakeBuffer(out), 3], grid=(1000, 3), workgroup=(256, 1))
    golden = (
        u64(out)                     # 0: out
        + u32(3)                     # 8: scale
        + bytes(4)                   # 12: padding to the hidden block
        + u32(3) + u32(3) + u32(1)   # 16: block counts: 1000 // 256, 3 // 1, 1 // 1
        + u16(256) + u16(1) + u16(1)  # 28: group sizes (blockDim)
        + u16(232) + u16(0) + u16(0)  # 34: remainders: 1000 % 256, 0, 0
        + bytes(16)                  # 40: reserved
        + u64(0) + u64(0) + u64(0)   # 56: global offsets
        + u16(2)                     # 80: grid dims
    )
    golden += bytes(272 - len(golden))
    assert len(data) == info.kernarg_segment_size == 272
    assert data == golden


def test_v5_kernel_with_every_hidden_argument():
    """Unoptimized llvmlite IR keeps all hidden args: dynamic LDS and the queue ptr are filled,
    runtime services (hostcall, heap, default queue, ...) stay 0."""
    info = kernel("scale", build.build_llvmlite, "gfx942", 5, False)
    layout = KernargLayout.from_kernel(info).with_types("ptr", "f32", "i64", "u8")
    data = layout.pack([0x1000, 2.5, -7, 200], grid=64, workgroup=64, dynamic_lds=1024,
                       queue_ptr=0xABC000)
    offsets = {a.value_kind: a.offset for a in info.args}
    assert data[0:8] == u64(0x1000)
    assert data[8:12] == struct.pack("<f", 2.5)
    assert data[16:24] == struct.pack("<q", -7)
    assert data[24:25] == bytes([200])
    assert data[offsets["hidden_block_count_x"]:][:4] == u32(1)
    assert data[offsets["hidden_group_size_x"]:][:2] == u16(64)
    assert data[offsets["hidden_remainder_x"]:][:2] == u16(0)
    assert data[offsets["hidden_grid_dims"]:][:2] == u16(1)
    assert data[offsets["hidden_queue_ptr"]:][:8] == u64(0xABC000)
    assert data[offsets["hidden_dynamic_lds_size"]:][:4] == u32(1024)
    for kind in ("hidden_hostcall_buffer", "hidden_multigrid_sync_arg", "hidden_heap_v1",
                 "hidden_default_queue", "hidden_completion_action"):
        assert data[offsets[kind]:][:8] == bytes(8), kind


def test_v4_hidden_arguments_are_global_offsets_and_zeros():
    info = kernel("scale", build.build_llvmlite, "gfx942", 4, False)
    assert info.code_object_version == 4
    layout = KernargLayout.from_kernel(info)
    assert layout.hidden_kinds[:3] == ("hidden_global_offset_x", "hidden_global_offset_y",
                                       "hidden_global_offset_z")
    data = layout.pack([0x2000, np.float32(1.0), 5, 1], grid=(128, 2, 2), workgroup=(64, 2, 1))
    assert data[:8] == u64(0x2000)
    assert data[8:12] == struct.pack("<f", 1.0)
    assert data[16:24] == u64(5)
    assert data[32:] == bytes(len(data) - 32)   # every v4 hidden argument is 0 here


def test_layout_matches_metadata_for_every_kernel():
    for builder, args in ((build.build_hip, ("gfx942", 5)), (build.build_hip, ("gfx1201", 5)),
                          (build.build_hip, ("gfx942", 4)),
                          (build.build_llvmlite, ("gfx1201", 6))):
        for info in CodeObject.from_bytes(built(builder, *args)).kernels.values():
            layout = KernargLayout.from_kernel(info)
            assert [(s.offset, s.size) for s in layout.slots] == [
                (a.offset, a.size) for a in info.explicit_args]
            assert [(h.kind, h.offset, h.size) for h in layout.hidden] == [
                (a.value_kind, a.offset, a.size) for a in info.hidden_args]
            assert layout.size == info.kernarg_segment_size


# ---------------------------------------------------------------------------------------------
# Explicit argument types


MIXED_TYPES = ("float*", "float*", "float*", "int", "double", "char", "short", "long long",
               "unsigned char")


def test_declared_types_pack_every_scalar_size():
    layout = KernargLayout.from_kernel(kernel("mixed"), types=MIXED_TYPES)
    data = layout.pack([FakeBuffer(0x10), 0x20, None, -4, 2.5, -1, -2, -3, 255], 64, 64)
    assert data[:64] == (u64(0x10) + u64(0x20) + u64(0) + struct.pack("<i", -4) + bytes(4)
                         + struct.pack("<d", 2.5) + b"\xff" + bytes(1) + struct.pack("<h", -2)
                         + bytes(4) + struct.pack("<q", -3) + b"\xff" + bytes(7))


@pytest.mark.parametrize("value, expected", [
    (7, struct.pack("<i", 7)),
    (-1, b"\xff\xff\xff\xff"),
    (0xFFFFFFFF, b"\xff\xff\xff\xff"),            # unsigned range accepted too
    (np.float32(1.5), struct.pack("<f", 1.5)),     # exact-size numpy scalar: its bytes
    (np.uint32(5), struct.pack("<I", 5)),
    (b"\x01\x02\x03\x04", b"\x01\x02\x03\x04"),
])
def test_untyped_4_byte_slot_accepts_unambiguous_values(value, expected):
    layout = KernargLayout.from_kernel(kernel("dims"))
    assert layout.pack([0, value], 1, 1)[8:12] == expected


def test_untyped_slot_refuses_a_python_float_and_says_how_to_fix_it():
    layout = KernargLayout.from_kernel(kernel("dims"))
    with pytest.raises(KernelArgumentError) as info:
        layout.pack([0, 2.5], 1, 1)
    message = str(info.value)
    assert "kernel dims" in message and "argument 1 (scale)" in message
    assert "numpy.float32" in message and "with_types" in message
    assert "dims(out: ptr @0, scale: 4-byte value @8)" in message


@pytest.mark.parametrize("args, error, pattern", [
    ([0], KernelArgumentError, r"kernel dims takes 2 argument\(s\), 1 given; signature: dims\("),
    ([0, 1, 2], KernelArgumentError, r"takes 2 argument\(s\), 3 given"),
    (["0x10", 1], KernelArgumentError, r"argument 0 \(out\) expects a device address"),
    ([np.zeros(4), 1], KernelArgumentError, r"argument 0 \(out\) expects a device address"),
    ([-1, 1], KernelArgumentValueError, r"argument 0 \(out\).*address"),
    ([0, 1 << 32], KernelArgumentValueError, r"argument 1 \(scale\).*out of range"),
    ([0, np.float64(1.0)], KernelArgumentError, r"argument 1 \(scale\) expects a 4-byte"),
])
def test_bad_arguments_name_kernel_argument_and_signature(args, error, pattern):
    layout = KernargLayout.from_kernel(kernel("dims"))
    with pytest.raises(error, match=pattern):
        layout.pack(args, 1, 1)


def test_typed_slots_check_kind_and_range():
    layout = KernargLayout.from_kernel(kernel("dims"), types=["ptr", "u32"])
    assert layout.pack([0, 4000000000], 1, 1)[8:12] == u32(4000000000)
    with pytest.raises(KernelArgumentValueError, match="out of range"):
        layout.pack([0, -1], 1, 1)
    with pytest.raises(KernelArgumentError, match=r"expects u32, got float 1.5"):
        layout.pack([0, 1.5], 1, 1)
    floats = layout.with_types("ptr", "float")
    assert floats.pack([0, 3], 1, 1)[8:12] == struct.pack("<f", 3.0)


@pytest.mark.parametrize("values, packed", [
    ([np.uint64(0x1000), 3.0], u64(0x1000) + struct.pack("<f", 3.0)),   # numpy address
    ([FakeBuffer(0x2000), np.int32(7)], u64(0x2000) + struct.pack("<f", 7.0)),
    ([0, np.float64(0.5)], u64(0) + struct.pack("<f", 0.5)),
    ([0, np.float16(1.5)], u64(0) + struct.pack("<f", 1.5)),
    ([True, 1.0], KernelArgumentError),                  # a bool is no address
    ([FakeBuffer(True), 1.0], KernelArgumentError),
    ([np.bool_(True), 1.0], KernelArgumentError),
    ([0, True], KernelArgumentError),                    # nor a float
    ([0, np.bool_(False)], KernelArgumentError),
    ([0, 1e39], KernelArgumentValueError),               # out of range for f32
])
def test_the_fast_and_checked_paths_accept_and_refuse_alike(values, packed):
    # Packer.pack_into tries struct first; struct alone would take bools and anything with
    # __float__ or __index__. Whatever the fast path packs, the checked path packs the same;
    # whatever one refuses, so does the other.
    layout = KernargLayout.from_kernel(kernel("dims"), types=["ptr", "float"])
    packer = layout.packer(1, 1)
    if isinstance(packed, bytes):
        buffer = bytearray(layout.size)
        packer.pack_into(buffer, 0, *values)
        assert bytes(buffer[:12]) == packed
        assert layout.convert(values) == list(struct.unpack("<Qf", packed))
    else:
        with pytest.raises(packed):
            packer.pack_into(bytearray(layout.size), 0, *values)
        with pytest.raises(packed):
            layout.convert(values)


def test_struct_by_value_needs_exact_bytes():
    layout = KernargLayout.from_kernel(kernel("by_struct"))
    assert layout.slots[0].category == "bytes" and layout.slots[0].size == 16
    pair = np.zeros(1, dtype=[("a", "<i4"), ("b", "<f4"), ("tag", "S5"), ("pad", "S3")])
    pair["a"], pair["b"], pair["tag"] = 7, 1.5, b"abcde"
    data = layout.pack([pair[0], FakeBuffer(0x40)], 1, 1)
    assert data == pair.tobytes() + u64(0x40)
    with pytest.raises(KernelArgumentError, match=r"exactly 16 bytes.*got 15 bytes"):
        layout.pack([bytes(15), 0], 1, 1)
    with pytest.raises(KernelArgumentError, match="exactly 16 bytes"):
        layout.pack([bytes(17), 0], 1, 1)


@pytest.mark.parametrize("types, pattern", [
    (["ptr"], r"has 2 explicit arguments; 1 types were given"),
    (["ptr", "double"], r"is 4 bytes in the metadata, but its declared type f64 is 8 bytes"),
    (["int", "u32"], r"is a global_buffer \(a pointer\)"),
    (["ptr", "quaternion"], r"unknown argument type 'quaternion'"),
])
def test_bad_type_declarations(types, pattern):
    with pytest.raises(HsapyValueError, match=pattern):
        KernargLayout.from_kernel(kernel("dims"), types=types)


# ---------------------------------------------------------------------------------------------
# The packer


def test_packer_writes_into_any_writable_buffer_at_an_offset():
    layout = KernargLayout.from_kernel(kernel("dims"))
    packer = layout.packer(grid=(1000, 3), workgroup=(256, 1))
    expected = layout.pack([0x1234, 9], (1000, 3), (256, 1))
    for make in (lambda: bytearray(b"\xee" * 400), lambda: np.full(400, 0xEE, np.uint8)):
        buffer = make()
        packer(buffer, 64, 0x1234, 9)
        raw = bytes(buffer)
        assert raw[64:64 + 272] == expected           # garbage underneath is overwritten
        assert raw[:64] == b"\xee" * 64 and raw[336:] == b"\xee" * 64
    cffi = pytest.importorskip("cffi")
    ffi = cffi.FFI()
    memory = ffi.new("uint8_t[]", 272)
    packer.pack_into(ffi.buffer(memory), 0, FakeBuffer(0x1234), np.uint32(9))
    assert bytes(ffi.buffer(memory)) == expected


def test_packer_reuse_is_independent_of_previous_arguments():
    packer = KernargLayout.from_kernel(kernel("dims")).packer(64, 64)
    buffer = bytearray(272)
    packer(buffer, 0, 0xAAAA, 1)
    packer(buffer, 0, 0xBBBB, 2)
    assert buffer[:12] == u64(0xBBBB) + u32(2)
    assert packer.dispatch.grid == (64, 1, 1) and packer.dispatch.dims == 1


def test_hidden_values_out_of_range_are_refused():
    layout = KernargLayout.from_kernel(kernel("dims"))
    with pytest.raises(KernelArgumentValueError, match="hidden_group_size_x = 70000"):
        layout.packer(grid=140000, workgroup=70000)


@pytest.mark.parametrize("value, expected", [
    (5, ((5, 1, 1), 1)),
    ((8, 4), ((8, 4, 1), 2)),
    ([2, 3, 4], ((2, 3, 4), 3)),
])
def test_normalize_dims(value, expected):
    assert normalize_dims(value, "grid") == expected


@pytest.mark.parametrize("value, error", [
    (0, HsapyValueError), ((1, 2, 3, 4), HsapyValueError), ((), HsapyValueError),
    ("big", HsapyTypeError), ((4, -1), HsapyValueError),
])
def test_normalize_dims_errors(value, error):
    with pytest.raises(error):
        normalize_dims(value, "grid")


def test_rows_list_explicit_and_hidden_arguments_in_offset_order():
    rows = KernargLayout.from_kernel(kernel("dims")).rows()
    assert [r["offset"] for r in rows] == sorted(r["offset"] for r in rows)
    assert rows[0]["name"] == "out" and not rows[0]["hidden"]
    assert rows[2]["kind"] == "hidden_block_count_x" and rows[2]["type"] == "dispatch"


@settings(max_examples=200, deadline=None)
@given(
    pointers=st.lists(st.integers(0, (1 << 64) - 1), min_size=3, max_size=3),
    n=st.integers(-(1 << 31), (1 << 31) - 1),
    s=st.floats(allow_nan=False, width=64),
    q=st.integers(-128, 127),
    r=st.integers(-(1 << 15), (1 << 15) - 1),
    w=st.integers(-(1 << 63), (1 << 63) - 1),
    u=st.integers(0, 255),
    grid=st.integers(1, 1 << 20),
    workgroup=st.integers(1, 1024),
)
def test_typed_packing_round_trips(pointers, n, s, q, r, w, u, grid, workgroup):
    layout = KernargLayout.from_kernel(kernel("mixed"), types=MIXED_TYPES)
    data = layout.pack([*pointers, n, s, q, r, w, u], grid, workgroup)
    assert list(struct.unpack_from("<3Q", data, 0)) == pointers
    assert struct.unpack_from("<i", data, 24)[0] == n
    assert struct.unpack_from("<d", data, 32)[0] == s
    assert struct.unpack_from("<bxhxxxxq", data, 40) == (q, r, w)
    assert data[56] == u
    assert struct.unpack_from("<I", data, 64)[0] == grid // workgroup        # block count x
    assert struct.unpack_from("<H", data, 76)[0] == workgroup                # group size x
    assert struct.unpack_from("<H", data, 82)[0] == grid % workgroup         # remainder x



def test_gfx8_aperture_hidden_arguments_come_from_the_launcher():
    """LLVM gives gfx8 kernels (no src_shared_base register) hidden_shared_base /
    hidden_private_base: the high words of the LDS and scratch apertures, which the dispatch
    path reads from the queue's amd_queue_t (Queue.apertures)."""
    info = kernel("scale", build.build_llvmlite, "gfx803", 5, False)
    layout = KernargLayout.from_kernel(info).with_types("ptr", "f32", "i64", "u8")
    offsets = {a.value_kind: a.offset for a in info.args}
    data = layout.pack([0x1000, 2.5, -7, 200], grid=64, workgroup=64, apertures=(0x10000, 0x20000))
    assert data[offsets["hidden_shared_base"]:][:4] == u32(0x10000)
    assert data[offsets["hidden_private_base"]:][:4] == u32(0x20000)
    plain = layout.pack([0x1000, 2.5, -7, 200], grid=64, workgroup=64)
    assert plain[offsets["hidden_shared_base"]:][:4] == bytes(4)
