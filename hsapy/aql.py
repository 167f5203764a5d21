"""AQL packets: layouts, header/setup encoding, builders and ``explain()``.

Every packet is 64 bytes, little-endian (hsa.h: hsa_kernel_dispatch_packet_t,
hsa_agent_dispatch_packet_t, hsa_barrier_and_packet_t, hsa_barrier_or_packet_t;
hsa_ext_amd.h: hsa_amd_barrier_value_packet_t). tests/unit/test_aql.py checks every offset here
against the cdef (which tests/abi checks against the real headers).

A producer writes bytes 4..63 of a packet first and the first 32 bits (header | setup << 16)
last, with one release store (see ``Queue.publish``). So the builders return the packet split
into that word and the body: :func:`split` / :class:`Packet`.
"""
from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import construct as cs

from hsapy._checks import check_bit, check_int, check_items
from hsapy.errors import HsapyTypeError, HsapyValueError
from hsapy.hsa_enums import (
    HSA_AMD_PACKET_TYPE_BARRIER_VALUE,
    HSA_FENCE_SCOPE_AGENT,
    HSA_FENCE_SCOPE_NONE,
    HSA_FENCE_SCOPE_SYSTEM,
    HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS,
    HSA_KERNEL_DISPATCH_PACKET_SETUP_WIDTH_DIMENSIONS,
    HSA_PACKET_HEADER_BARRIER,
    HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE,
    HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE,
    HSA_PACKET_HEADER_TYPE,
    HSA_PACKET_HEADER_WIDTH_SCACQUIRE_FENCE_SCOPE,
    HSA_PACKET_HEADER_WIDTH_TYPE,
    HSA_PACKET_TYPE_AGENT_DISPATCH,
    HSA_PACKET_TYPE_BARRIER_AND,
    HSA_PACKET_TYPE_BARRIER_OR,
    HSA_PACKET_TYPE_INVALID,
    HSA_PACKET_TYPE_KERNEL_DISPATCH,
    HSA_PACKET_TYPE_VENDOR_SPECIFIC,
    HSA_SIGNAL_CONDITION_EQ,
    HSA_SIGNAL_CONDITION_GTE,
    HSA_SIGNAL_CONDITION_LT,
    HSA_SIGNAL_CONDITION_NE,
)
from hsapy.kernarg import _all_ints, _exact_int

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "PacketType", "FenceScope", "SignalCondition", "PACKET_SIZE",
    "encode_header", "decode_header", "header_setup_word", "Header",
    "kernel_dispatch", "barrier_and", "barrier_or", "agent_dispatch", "barrier_value",
    "invalid_slot", "split", "parse", "explain", "Packet",
]

PACKET_SIZE = 64


class PacketType(enum.IntEnum):
    """hsa_packet_type_t (hsa.h). 0 is vendor-specific, NOT invalid: never zero a header."""

    VENDOR_SPECIFIC = HSA_PACKET_TYPE_VENDOR_SPECIFIC
    INVALID = HSA_PACKET_TYPE_INVALID
    KERNEL_DISPATCH = HSA_PACKET_TYPE_KERNEL_DISPATCH
    BARRIER_AND = HSA_PACKET_TYPE_BARRIER_AND
    AGENT_DISPATCH = HSA_PACKET_TYPE_AGENT_DISPATCH
    BARRIER_OR = HSA_PACKET_TYPE_BARRIER_OR


class FenceScope(enum.IntEnum):
    """hsa_fence_scope_t (hsa.h)."""

    NONE = HSA_FENCE_SCOPE_NONE
    AGENT = HSA_FENCE_SCOPE_AGENT
    SYSTEM = HSA_FENCE_SCOPE_SYSTEM


class SignalCondition(enum.IntEnum):
    """hsa_signal_condition_t (hsa.h), as used by the AMD barrier-value packet."""

    EQ = HSA_SIGNAL_CONDITION_EQ
    NE = HSA_SIGNAL_CONDITION_NE
    LT = HSA_SIGNAL_CONDITION_LT
    GTE = HSA_SIGNAL_CONDITION_GTE


# hsa_packet_header_t bit positions and widths (hsa.h).
HEADER_TYPE_SHIFT, HEADER_TYPE_WIDTH = HSA_PACKET_HEADER_TYPE, HSA_PACKET_HEADER_WIDTH_TYPE
HEADER_BARRIER_SHIFT = HSA_PACKET_HEADER_BARRIER
HEADER_ACQUIRE_SHIFT = HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE
HEADER_RELEASE_SHIFT = HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE
HEADER_SCOPE_WIDTH = HSA_PACKET_HEADER_WIDTH_SCACQUIRE_FENCE_SCOPE
SETUP_DIMENSIONS_SHIFT = HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS
SETUP_DIMENSIONS_WIDTH = HSA_KERNEL_DISPATCH_PACKET_SETUP_WIDTH_DIMENSIONS
# hsa_amd_packet_type_t (hsa_ext_amd.h): the AmdFormat byte of a vendor-specific packet.
AMD_PACKET_TYPE_BARRIER_VALUE = HSA_AMD_PACKET_TYPE_BARRIER_VALUE


@dataclass(frozen=True)
class Header:
    """A decoded 16-bit packet header."""

    type: int
    barrier: bool
    acquire: int
    release: int
    reserved: int  # bits 15:13, must be 0

    @property
    def type_name(self) -> str:
        try:
            return PacketType(self.type).name
        except ValueError:
            return f"unknown({self.type})"


def _scope(value: Any) -> int:
    """A fence scope from its name ("none", "agent", "system") or value, else a typed error."""
    try:
        if isinstance(value, str):
            return FenceScope[value.upper()]
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise TypeError(value)      # a float, complex or numpy bool is no scope number
        return FenceScope(value.__index__())
    except (KeyError, ValueError, TypeError):
        names = ", ".join(repr(scope.name.lower()) for scope in FenceScope)
        raise HsapyValueError(f"{value!r} is not a fence scope (acquire/release): use one of "
                              f"{names} or hsapy.aql.FenceScope") from None


def encode_header(packet_type: int, barrier: bool = False, acquire: Any = FenceScope.SYSTEM,
                  release: Any = FenceScope.SYSTEM) -> int:
    """The 16-bit header: type, barrier bit, acquire and release fence scopes."""
    packet_type = check_int(packet_type, "encode_header: packet_type", 0, 0xFF)
    if barrier is not True and barrier is not False:
        barrier = check_bit(barrier, "barrier")
    return ((packet_type << HEADER_TYPE_SHIFT) | (int(barrier) << HEADER_BARRIER_SHIFT)
            | (_scope(acquire) << HEADER_ACQUIRE_SHIFT) | (_scope(release) << HEADER_RELEASE_SHIFT))


def decode_header(header: int) -> Header:
    """The fields of a 16-bit packet header."""
    header = check_int(header, "decode_header: a packet header", 0, 0xFFFF)
    return Header(type=header & 0xFF, barrier=bool(header >> HEADER_BARRIER_SHIFT & 1),
                  acquire=header >> HEADER_ACQUIRE_SHIFT & 3,
                  release=header >> HEADER_RELEASE_SHIFT & 3, reserved=header >> 13 & 7)


def header_setup_word(header: int, setup: int = 0) -> int:
    """The first 32 bits of a packet, stored last and in one piece when publishing."""
    header = check_int(header, "header_setup_word: header", 0, 0xFFFF)
    setup = check_int(setup, "header_setup_word: setup", 0, 0xFFFF)
    return header | setup << 16


# -- layouts for parsing and pretty-printing (construct) ------------------------------------

_KERNEL_DISPATCH = cs.Struct(
    "header" / cs.Int16ul, "setup" / cs.Int16ul,
    "workgroup_size_x" / cs.Int16ul, "workgroup_size_y" / cs.Int16ul,
    "workgroup_size_z" / cs.Int16ul, "reserved0" / cs.Int16ul,
    "grid_size_x" / cs.Int32ul, "grid_size_y" / cs.Int32ul, "grid_size_z" / cs.Int32ul,
    "private_segment_size" / cs.Int32ul, "group_segment_size" / cs.Int32ul,
    "kernel_object" / cs.Int64ul, "kernarg_address" / cs.Int64ul,
    "reserved2" / cs.Int64ul, "completion_signal" / cs.Int64ul,
)
_AGENT_DISPATCH = cs.Struct(
    "header" / cs.Int16ul, "type" / cs.Int16ul, "reserved0" / cs.Int32ul,
    "return_address" / cs.Int64ul, "arg" / cs.Array(4, cs.Int64ul),
    "reserved2" / cs.Int64ul, "completion_signal" / cs.Int64ul,
)
_BARRIER = cs.Struct(
    "header" / cs.Int16ul, "reserved0" / cs.Int16ul, "reserved1" / cs.Int32ul,
    "dep_signal" / cs.Array(5, cs.Int64ul), "reserved2" / cs.Int64ul,
    "completion_signal" / cs.Int64ul,
)
_BARRIER_VALUE = cs.Struct(
    "header" / cs.Int16ul, "amd_format" / cs.Int8ul, "reserved" / cs.Int8ul,
    "reserved0" / cs.Int32ul, "signal" / cs.Int64ul, "value" / cs.Int64sl,
    "mask" / cs.Int64sl, "cond" / cs.Int32ul, "reserved1" / cs.Int32ul,
    "reserved2" / cs.Int64ul, "reserved3" / cs.Int64ul, "completion_signal" / cs.Int64ul,
)
LAYOUTS: dict[int, cs.Struct] = {
    PacketType.KERNEL_DISPATCH: _KERNEL_DISPATCH,
    PacketType.AGENT_DISPATCH: _AGENT_DISPATCH,
    PacketType.BARRIER_AND: _BARRIER,
    PacketType.BARRIER_OR: _BARRIER,
}

# Hot-path formats (struct): bytes 4..63 of each packet.
# dispatch: workgroup xyz, reserved, grid xyz, private, group, kernel object, kernarg, ...
_DISPATCH_BODY = struct.Struct("<4H5IQQQQ")
_BARRIER_BODY = struct.Struct("<I5QQQ")
_AGENT_BODY = struct.Struct("<IQ4QQQ")
_BARRIER_VALUE_BODY = struct.Struct("<I Q q q I I Q Q Q".replace(" ", ""))


@dataclass(frozen=True)
class Packet:
    """A packet split the way it is published: ``word`` (header | setup << 16) and ``body``
    (bytes 4..63). ``bytes(packet)`` is the whole 64-byte packet."""

    word: int
    body: bytes

    def __bytes__(self) -> bytes:
        try:
            return struct.pack("<I", self.word) + self.body
        except (struct.error, TypeError):
            raise HsapyTypeError(f"Packet: word is a 32-bit unsigned int and body 60 bytes, not "
                                 f"{type(self.word).__name__} {self.word!r:.20} and "
                                 f"{type(self.body).__name__} {self.body!r:.20}") from None

    @property
    def header(self) -> int:
        return self.word & 0xFFFF

    @property
    def setup(self) -> int:
        return self.word >> 16


def _dims3(value: Any, what: str) -> tuple[tuple[int, int, int], int]:
    """1 to 3 ints (any value a field holds, 0 included: packets may be built malformed on
    purpose, and the packet processor judges them); never a bool, float or string."""
    if value.__class__ is tuple and len(value) == 3 and _all_ints(value):
        return value, 3
    single = _exact_int(value)
    if single is not None:
        return (single, 1, 1), 1
    if (isinstance(value, (str, bytes, bytearray)) or not hasattr(value, "__iter__")
            or getattr(value, "ndim", None) == 0):
        raise HsapyTypeError(f"{what} must be an int or 1 to 3 ints, not {value!r:.40}")
    values = tuple(_exact_int(v) for v in value)
    if any(v is None for v in values):
        raise HsapyTypeError(f"{what} must be an int or 1 to 3 ints, not {value!r:.60}")
    if not 1 <= len(values) <= 3:
        raise HsapyValueError(f"{what} needs 1 to 3 dimensions, got {len(values)}")
    return values + (1,) * (3 - len(values)), len(values)  # type: ignore[return-value]


def _pack(layout: struct.Struct, what: str, *fields: Any) -> bytes:
    """``layout.pack(*fields)``, with an out-of-range or non-integer field a typed error."""
    for field in fields:
        if field is True or field is False:
            # struct packs a bool as 1 or 0: a handle, size or address given as a yes/no
            raise HsapyTypeError(f"{what}: {field} given for a packet field; sizes, handles "
                                 "and addresses are unsigned integers")
    try:
        return layout.pack(*fields)
    except (struct.error, TypeError, OverflowError) as exc:
        raise HsapyValueError(f"{what}: a field does not fit its place in the packet ({exc}); "
                              "sizes and handles are unsigned integers") from None


def kernel_dispatch(kernel_object: int, grid: Any, workgroup: Any, kernarg_address: int = 0,
                    completion_signal: int = 0, private_segment_size: int = 0,
                    group_segment_size: int = 0, dims: int | None = None, barrier: bool = False,
                    acquire: Any = FenceScope.SYSTEM, release: Any = FenceScope.SYSTEM) -> Packet:
    """A kernel dispatch packet. ``grid`` is in work-items (not workgroups); ``dims`` defaults
    to the number of dimensions given (1..3). ``completion_signal`` is a Signal or its handle,
    as in the barrier packets."""
    grid3, grid_dims = _dims3(grid, "grid")
    workgroup3, wg_dims = _dims3(workgroup, "workgroup")
    if dims is None:
        dims = max(grid_dims, wg_dims)
    elif dims.__class__ is not int or dims not in (1, 2, 3):
        if isinstance(dims, bool) or not hasattr(dims, "__index__"):
            raise HsapyTypeError(f"kernel_dispatch: dims is 1, 2 or 3, not {dims!r:.40}")
        dims = check_int(dims, "kernel_dispatch: dims (1, 2 or 3)", 1, 3)
    word = header_setup_word(encode_header(PacketType.KERNEL_DISPATCH, barrier, acquire, release),
                             dims << SETUP_DIMENSIONS_SHIFT)
    body = _pack(_DISPATCH_BODY, "kernel_dispatch", *workgroup3, 0, *grid3, private_segment_size,
                 group_segment_size, kernel_object, kernarg_address, 0,
                 getattr(completion_signal, "handle", completion_signal))
    return Packet(word, body)


def _barrier(packet_type: PacketType, deps: Sequence[int], completion_signal: int, barrier: bool,
             acquire: Any, release: Any) -> Packet:
    deps = [getattr(d, "handle", d) for d in check_items(
        deps, "a barrier packet's deps are a list of signals (or their handles)", ordered=False)]
    if len(deps) > 5:
        raise HsapyValueError(f"a barrier packet holds at most 5 dependency signals, got "
                              f"{len(deps)}; chain several barrier packets")
    word = header_setup_word(encode_header(packet_type, barrier, acquire, release))
    body = _pack(_BARRIER_BODY, "barrier packet", 0, *(deps + [0] * (5 - len(deps))), 0,
                 getattr(completion_signal, "handle", completion_signal))
    return Packet(word, body)


def barrier_and(deps: Sequence[int] = (), completion_signal: int = 0, barrier: bool = True,
                acquire: Any = FenceScope.SYSTEM, release: Any = FenceScope.SYSTEM) -> Packet:
    """Barrier-AND: waits until every non-zero dependency signal is 0."""
    return _barrier(PacketType.BARRIER_AND, deps, completion_signal, barrier, acquire, release)


def barrier_or(deps: Sequence[int] = (), completion_signal: int = 0, barrier: bool = True,
               acquire: Any = FenceScope.SYSTEM, release: Any = FenceScope.SYSTEM) -> Packet:
    """Barrier-OR: waits until any non-zero dependency signal is 0."""
    return _barrier(PacketType.BARRIER_OR, deps, completion_signal, barrier, acquire, release)


def agent_dispatch(function: int, args: Sequence[int] = (), return_address: int = 0,
                   completion_signal: int = 0, barrier: bool = False,
                   acquire: Any = FenceScope.SYSTEM, release: Any = FenceScope.SYSTEM) -> Packet:
    """Agent dispatch: asks an agent (usually a CPU agent servicing a queue) to run ``function``."""
    # the function code is the packet's 16-bit type field (hsa.h hsa_agent_dispatch_packet_t)
    function = check_int(function, "agent_dispatch: function", 0, 0xFFFF)
    args = check_items(args, "agent_dispatch: args are up to 4 integers")
    if len(args) > 4:
        raise HsapyValueError("an agent dispatch packet carries at most 4 arguments")
    word = header_setup_word(encode_header(PacketType.AGENT_DISPATCH, barrier, acquire, release),
                             function)
    body = _pack(_AGENT_BODY, "agent_dispatch", 0, return_address,
                 *(args + [0] * (4 - len(args))), 0, completion_signal)
    return Packet(word, body)


def barrier_value(signal: int, value: int, condition: Any = SignalCondition.EQ, mask: int = -1,
                  completion_signal: int = 0, barrier: bool = True,
                  acquire: Any = FenceScope.SYSTEM, release: Any = FenceScope.SYSTEM) -> Packet:
    """AMD barrier-value (vendor-specific): waits until ``(signal & mask) <condition> value``."""
    try:
        if isinstance(condition, str):
            condition = SignalCondition[condition.upper()]
        elif isinstance(condition, bool) or not hasattr(condition, "__index__"):
            raise TypeError(condition)  # a float, complex or numpy bool is no condition
        else:
            condition = SignalCondition(condition.__index__())
    except (KeyError, ValueError, TypeError):
        raise HsapyValueError(f"barrier_value: {condition!r} is not a condition: use one of "
                              "'eq', 'ne', 'lt', 'gte' or hsapy.aql.SignalCondition") from None
    header = encode_header(PacketType.VENDOR_SPECIFIC, barrier, acquire, release)
    # hsa_amd_vendor_packet_header_t: u16 header, u8 AmdFormat, u8 reserved -> the first word.
    word = header | AMD_PACKET_TYPE_BARRIER_VALUE << 16
    body = _pack(_BARRIER_VALUE_BODY, "barrier_value", 0, getattr(signal, "handle", signal),
                 value, mask, int(condition), 0, 0, 0,
                 getattr(completion_signal, "handle", completion_signal))
    return Packet(word, body)


def invalid_slot() -> bytes:
    """What a free slot holds: header type INVALID (1), everything else zero."""
    return struct.pack("<H62x", encode_header(PacketType.INVALID, False, 0, 0))


def _packet_bytes(packet: Any) -> bytes:
    """The 64 bytes of a packet given as bytes-like, else a typed error (``bytes(64)`` would
    be 64 zeros: an int is refused, as anything that is not bytes)."""
    if isinstance(packet, (bytes, bytearray, memoryview, Packet)):
        data = bytes(packet)
    elif hasattr(packet, "tobytes"):
        data = packet.tobytes()      # numpy: its bytes (bytes(x) of a numpy int is x zeros)
    else:
        raise HsapyTypeError(f"an AQL packet is 64 bytes (or an hsapy.aql.Packet), not "
                             f"{type(packet).__name__}")
    if len(data) != PACKET_SIZE:
        raise HsapyValueError(f"an AQL packet is 64 bytes, got {len(data)}")
    return data


def split(packet: bytes | bytearray | memoryview | np.ndarray | Packet) -> Packet:
    """A 64-byte packet as (word, body)."""
    if isinstance(packet, Packet):
        return packet
    data = _packet_bytes(packet)
    return Packet(struct.unpack_from("<I", data)[0], data[4:])


def parse(packet: bytes | Packet) -> cs.Container:
    """Decode a packet by its header type into a construct Container of named fields."""
    data = _packet_bytes(packet)
    header = decode_header(struct.unpack_from("<H", data)[0])
    if header.type == PacketType.VENDOR_SPECIFIC and data[2] == AMD_PACKET_TYPE_BARRIER_VALUE:
        return _BARRIER_VALUE.parse(data)
    layout = LAYOUTS.get(header.type)
    if layout is None:
        return cs.Container(header=struct.unpack_from("<H", data)[0], raw=data)
    return layout.parse(data)


# -- explain ------------------------------------------------------------------------------

def _signal(handle: int) -> str:
    return "none" if handle == 0 else f"{handle:#x}"


def _header_line(header: Header) -> str:
    text = (f"header  type={header.type_name} barrier={int(header.barrier)} "
            f"acquire={FenceScope(header.acquire).name if header.acquire < 3 else header.acquire} "
            f"release={FenceScope(header.release).name if header.release < 3 else header.release}")
    return text


def _problems(packet: cs.Container, header: Header) -> list[str]:
    problems = []
    if header.acquire == 3 or header.release == 3:
        problems.append("fence scope 3 is reserved (0 none, 1 agent, 2 system)")
    if header.reserved:
        problems.append("header bits 15:13 are reserved and must be 0")
    if header.type == PacketType.KERNEL_DISPATCH:
        dims = packet.setup & 3
        if dims == 0:
            problems.append("setup dimensions is 0 (must be 1..3)")
        sizes = [packet.workgroup_size_x, packet.workgroup_size_y, packet.workgroup_size_z,
                 packet.grid_size_x, packet.grid_size_y, packet.grid_size_z]
        if 0 in sizes:
            problems.append("a workgroup or grid size is 0 (unused dimensions must be 1)")
        if packet.kernel_object == 0:
            problems.append("kernel_object is 0 (it must be the address of a kernel descriptor)")
        if packet.kernel_object % 64:
            problems.append("kernel_object is not 64-byte aligned (kernel descriptors are)")
        if packet.kernarg_address % 16:
            problems.append("kernarg_address is not 16-byte aligned")
    return problems


def explain(packet: bytes | Packet) -> str:
    """A readable, field-by-field description of a 64-byte packet. Never raises on bytes:
    what is wrong with a packet is described, for learners and error messages."""
    try:
        data = bytes(packet)
    except Exception as exc:  # not bytes-like at all
        return f"not a packet: {exc}"
    if len(data) != PACKET_SIZE:
        return f"not an AQL packet: {len(data)} bytes (a packet is exactly 64 bytes)"
    raw_header = struct.unpack_from("<H", data)[0]
    header = decode_header(raw_header)
    lines = [f"AQL packet {data[:4].hex()}...", _header_line(header)]
    if header.type == PacketType.INVALID:
        lines.append("INVALID: a free slot, or one being written; the packet processor waits here")
        return "\n".join(lines)
    if header.type == PacketType.VENDOR_SPECIFIC:
        if data[2] != AMD_PACKET_TYPE_BARRIER_VALUE:
            lines.append(f"vendor-specific packet, AmdFormat {data[2]} (hsapy knows 2 = "
                         "barrier-value); a zeroed header reads as this, never as INVALID")
            return "\n".join(lines)
        p = _BARRIER_VALUE.parse(data)
        try:
            cond = SignalCondition(p.cond).name
        except ValueError:
            cond = f"invalid({p.cond})"
        lines += [
            "AMD barrier-value: waits until (signal & mask) <cond> value",
            f"signal  {_signal(p.signal)}",
            f"value   {p.value}",
            f"mask    {p.mask & 0xFFFFFFFFFFFFFFFF:#x}",
            f"cond    {cond}",
            f"completion_signal {_signal(p.completion_signal)}",
        ]
        if p.cond > 3:
            lines.append("problem: cond must be EQ 0, NE 1, LT 2 or GTE 3")
        return "\n".join(lines)
    layout = LAYOUTS.get(header.type)
    if layout is None:
        lines.append(f"problem: packet type {header.type} is not defined by HSA (0..5); a packet "
                     "processor stops the queue with HSA_STATUS_ERROR_INVALID_PACKET_FORMAT")
        return "\n".join(lines)
    p = layout.parse(data)
    if header.type == PacketType.KERNEL_DISPATCH:
        lines += [
            f"setup   dimensions={p.setup & 3}",
            f"workgroup_size  {p.workgroup_size_x} x {p.workgroup_size_y} x {p.workgroup_size_z} "
            "work-items",
            f"grid_size       {p.grid_size_x} x {p.grid_size_y} x {p.grid_size_z} work-items "
            "(not workgroups)",
            f"private_segment_size {p.private_segment_size} bytes per work-item",
            f"group_segment_size   {p.group_segment_size} bytes of LDS per workgroup",
            f"kernel_object    {p.kernel_object:#x} (kernel descriptor)",
            f"kernarg_address  {p.kernarg_address:#x}",
            f"completion_signal {_signal(p.completion_signal)} (decremented by 1 when done)",
        ]
    elif header.type in (PacketType.BARRIER_AND, PacketType.BARRIER_OR):
        rule = ("every" if header.type == PacketType.BARRIER_AND else "any")
        deps = [_signal(s) for s in p.dep_signal]
        lines += [f"waits until {rule} non-zero dependency signal is 0",
                  f"dep_signal {', '.join(deps)}",
                  f"completion_signal {_signal(p.completion_signal)}"]
    else:
        lines += [f"type (function) {p.type}", f"return_address {p.return_address:#x}",
                  f"arg {', '.join(hex(a) for a in p.arg)}",
                  f"completion_signal {_signal(p.completion_signal)}"]
    lines += [f"problem: {text}" for text in _problems(p, header)]
    return "\n".join(lines)
