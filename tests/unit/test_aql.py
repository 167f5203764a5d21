"""AQL packets: golden bytes for every packet type, layouts checked against the cdef, and
explain() on arbitrary bytes."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hsapy import aql
from hsapy._hsa import ffi


@pytest.mark.parametrize("kwargs, word", [
    (dict(packet_type=aql.PacketType.KERNEL_DISPATCH), 0x1402),          # system/system
    (dict(packet_type=aql.PacketType.KERNEL_DISPATCH, barrier=True), 0x1502),
    (dict(packet_type=aql.PacketType.BARRIER_AND, acquire="agent", release="none"), 0x0203),
    (dict(packet_type=aql.PacketType.BARRIER_OR, acquire=0, release=1), 0x0805),
    (dict(packet_type=aql.PacketType.INVALID, acquire=0, release=0), 0x0001),
])
def test_header_encoding(kwargs, word):
    assert aql.encode_header(**kwargs) == word
    decoded = aql.decode_header(word)
    assert decoded.type == kwargs["packet_type"]


def test_kernel_dispatch_golden_bytes():
    packet = aql.kernel_dispatch(0x7F0012345640, grid=(1000, 2), workgroup=(64, 2),
                                 kernarg_address=0x7F00AAAA0000, completion_signal=0x55550000,
                                 private_segment_size=16, group_segment_size=1024)
    golden = bytes.fromhex(
        "0214" "0200"                  # header: dispatch, acquire/release system; setup: 2 dims
        "4000" "0200" "0100" "0000"    # workgroup 64 x 2 x 1, reserved
        "e8030000" "02000000" "01000000"  # grid 1000 x 2 x 1
        "10000000" "00040000"          # private 16 B, group 1024 B
        "40563412007f0000"             # kernel_object
        "0000aaaa007f0000"             # kernarg_address
        "0000000000000000"             # reserved
        "0000555500000000")            # completion_signal
    assert bytes(packet) == golden
    assert packet.word == 0x0002_1402


def test_barrier_and_or_golden_bytes():
    packet = aql.barrier_and([0x10, 0x20], completion_signal=0x30)
    golden = (struct.pack("<HHI", 0x1503, 0, 0) + struct.pack("<5Q", 0x10, 0x20, 0, 0, 0)
              + struct.pack("<QQ", 0, 0x30))
    assert bytes(packet) == golden
    assert bytes(aql.barrier_or([0x10], barrier=False))[:2] == b"\x05\x14"


def test_agent_dispatch_golden_bytes():
    packet = aql.agent_dispatch(7, args=[1, 2, 3, 4], return_address=0x1000, completion_signal=9)
    golden = (struct.pack("<HHI", 0x1404, 7, 0) + struct.pack("<Q", 0x1000)
              + struct.pack("<4Q", 1, 2, 3, 4) + struct.pack("<QQ", 0, 9))
    assert bytes(packet) == golden


def test_barrier_value_golden_bytes():
    packet = aql.barrier_value(0xABC, 5, "GTE", mask=0xFF, completion_signal=0x99)
    golden = (struct.pack("<HBBI", 0x1500, 2, 0, 0) + struct.pack("<Qqq", 0xABC, 5, 0xFF)
              + struct.pack("<II", 3, 0) + struct.pack("<QQQ", 0, 0, 0x99))
    assert bytes(packet) == golden


def test_invalid_slot_is_type_1_not_zero():
    slot = aql.invalid_slot()
    assert len(slot) == 64 and slot[0] == 1 and not any(slot[1:])


@pytest.mark.parametrize("struct_name, layout", [
    ("hsa_kernel_dispatch_packet_t", aql._KERNEL_DISPATCH),
    ("hsa_agent_dispatch_packet_t", aql._AGENT_DISPATCH),
    ("hsa_barrier_and_packet_t", aql._BARRIER),
    ("hsa_barrier_or_packet_t", aql._BARRIER),
    ("hsa_amd_barrier_value_packet_t", aql._BARRIER_VALUE),
])
def test_layouts_match_the_cdef(struct_name, layout):
    """Every field of the cdef struct sits where the construct layout puts it."""
    assert layout.sizeof() == ffi.sizeof(struct_name) == 64
    offsets = {}
    position = 0
    for sub in layout.subcons:
        offsets[sub.name] = position
        position += sub.sizeof()
    for name, field in ffi.typeof(struct_name).fields:
        if name == "header" and struct_name == "hsa_amd_barrier_value_packet_t":
            continue  # the AMD vendor header struct spans header/amd_format/reserved
        assert offsets[name] == field.offset, name


@pytest.mark.parametrize("packet", [
    aql.kernel_dispatch(0x1000, 256, 64, 0x2000, 0x3000),
    aql.barrier_and([1, 2, 3]),
    aql.barrier_or([4]),
    aql.agent_dispatch(1, [5]),
    aql.barrier_value(7, 0, "NE"),
])
def test_round_trip_through_parse(packet):
    data = bytes(packet)
    parsed = aql.parse(data)
    assert aql.split(data) == packet
    if "header" in parsed and parsed.header & 0xFF != 0:
        layout = aql.LAYOUTS[parsed.header & 0xFF]
        assert layout.build(parsed) == data


def test_explain_names_every_dispatch_field_and_problem():
    text = aql.explain(aql.kernel_dispatch(0x1001, (0, 1), 64))
    for needle in ("KERNEL_DISPATCH", "grid_size", "workgroup_size", "kernel_object",
                   "completion_signal none", "not 64-byte aligned", "size is 0"):
        assert needle in text


def test_explain_says_a_zero_header_is_vendor_specific():
    assert "vendor-specific" in aql.explain(bytes(64))


@settings(max_examples=2000, deadline=None)
@given(st.binary(min_size=0, max_size=80))
def test_explain_never_raises(data):
    assert isinstance(aql.explain(data), str)


def test_too_many_barrier_dependencies_is_refused():
    with pytest.raises(ValueError, match="at most 5"):
        aql.barrier_and([1] * 6)
