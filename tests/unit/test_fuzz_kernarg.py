"""Fuzzing the kernarg packer: random layouts, types and values either pack exactly or raise
hsapy's own HsapyValueError / HsapyTypeError -- never anything else.

Each case builds a random kernel argument table (explicit arguments of every value kind and
size, declared or metadata types, hidden arguments, odd segment sizes), a random geometry, and
random values (ints in and out of range, floats including inf/nan/huge, bools, None, numpy
scalars and arrays, bytes of every length, strings, objects with an ``.address``). Whatever
packs is decoded slot by slot and compared with an independent model of the encoding; the
hidden template must be intact and nothing outside the segment may be written.

``HSAPY_FUZZ_CASES`` sets the number of cases (default CASES), ``HSAPY_FUZZ_SEED`` the seed.
A failure prints the seed, the case number, the layout and the values.
"""
from __future__ import annotations

import math
import os
import struct

import numpy as np
import pytest

from hsapy.codeobject import ArgInfo, KernelInfo
from hsapy.errors import HsapyTypeError, HsapyValueError
from hsapy.kernarg import HIDDEN_KINDS, SCALAR_TYPES, TYPE_ALIASES, KernargLayout

CASES = int(os.environ.get("HSAPY_FUZZ_CASES", "4000"))
SEED = int(os.environ.get("HSAPY_FUZZ_SEED", "20261211"))

POINTER_KINDS = ("global_buffer", "image", "sampler", "pipe", "queue")
VALUE_KINDS = POINTER_KINDS + ("by_value", "by_value", "by_value", "dynamic_shared_pointer")
SIZES = (0, 1, 2, 3, 4, 4, 8, 8, 8, 12, 16, 24)
TYPE_NAMES = (None, None, "float", "int", "char*", "uint64_t", "half", "double", "struct pair",
              "bool", "float4", "unsigned char", "size_t", "queue_t*", "???")
DECLARED = (tuple(SCALAR_TYPES) + tuple(TYPE_ALIASES)[:12]
            + ("ptr", "bytes", None, None, np.float32, np.dtype("int16"), "quaternion", "void*"))
HIDDEN = tuple(HIDDEN_KINDS) + ("hidden_printf_buffer", "hidden_heap_v1", "hidden_none")
OK = "ok"          # the value must pack to the model's bytes
BAD = "bad"        # the value must be refused with an hsapy error


class Addressed:
    """Anything with an ``.address`` is accepted where a pointer is expected."""

    def __init__(self, address):
        self.address = address

    def __repr__(self):
        return f"Addressed({self.address!r})"


# -- random layouts ------------------------------------------------------------------------------

def random_kernel(rng: np.random.Generator) -> tuple[KernelInfo, list | None]:
    args: list[ArgInfo] = []
    offset = 0
    for i in range(int(rng.integers(0, 7))):
        kind = VALUE_KINDS[rng.integers(len(VALUE_KINDS))]
        size = 8 if kind in POINTER_KINDS and rng.random() < 0.9 else int(rng.choice(SIZES))
        align = min(max(size, 1), 8) if rng.random() < 0.9 else 1
        offset = -(-offset // align) * align + (int(rng.integers(0, 9)) if rng.random() < 0.1 else 0)
        if rng.random() < 0.03 and offset:
            offset -= int(rng.integers(1, offset + 1))               # overlap
        type_name = TYPE_NAMES[rng.integers(len(TYPE_NAMES))] if rng.random() < 0.2 else None
        args.append(ArgInfo(offset, size, kind, name=f"a{i}" if rng.random() < 0.8 else None,
                            type_name=type_name))
        offset += size
        if rng.random() < 0.05:                                      # a hidden one in between
            args.append(ArgInfo(offset, 8, HIDDEN[rng.integers(len(HIDDEN))]))
            offset += 8
    offset = -(-offset // 8) * 8
    for _ in range(int(rng.integers(0, 8))):
        size = int(rng.choice((0, 2, 4, 8, 8, 8, 8, 8, 8, 8, 8, 16)))
        args.append(ArgInfo(offset, size, HIDDEN[rng.integers(len(HIDDEN))]))
        offset += size
    segment = offset if rng.random() < 0.9 else int(rng.choice((0, offset + 8, 1 << 21)))
    align = int(rng.choice((0, 1, 4, 8, 16, 64)))
    info = KernelInfo("fuzz", "fuzz.kd", None, tuple(args), segment, align, 0, 0, 64, 0, 0,
                      1024, 0, 0, code_object_version=int(rng.choice((4, 5, 6))))
    types = None
    if rng.random() < 0.4:
        explicit = [a for a in args if not a.is_hidden]
        types = [matching_type(rng, a) if rng.random() < 0.85
                 else DECLARED[rng.integers(len(DECLARED))] for a in explicit]
        if rng.random() < 0.03:
            types.append("int")
    return info, types


def matching_type(rng: np.random.Generator, arg: ArgInfo):
    """A declared type that fits the argument (most declarations are right)."""
    if arg.value_kind in POINTER_KINDS:
        return ("ptr", None, "float*")[rng.integers(3)]
    names = [name for name, (n, _, _) in SCALAR_TYPES.items() if n == arg.size] + ["bytes"]
    if arg.size == 8:
        names.append("ptr")
    return names[rng.integers(len(names))]


def random_dims(rng: np.random.Generator, limit: int):
    if rng.random() < 0.05:
        return [0, -1, (1, 2, 3, 4), "x", 2.5, (), (0, 1)][rng.integers(7)]
    dims = int(rng.integers(1, 4))
    values = tuple(int(rng.integers(1, limit)) for _ in range(dims))
    return values[0] if dims == 1 and rng.random() < 0.5 else values


# -- random values and the model of their encoding -----------------------------------------------

def random_value(rng: np.random.Generator, size: int):
    choice = int(rng.integers(14))
    if choice == 0:
        return int(rng.integers(-(1 << 62), 1 << 62)) >> int(rng.integers(0, 62))
    if choice == 1:
        return int(rng.choice([0, 1, -1, 127, 128, 255, 256, 32767, 65535, 65536, 2**31 - 1,
                               2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1, 2**64,
                               -(2**63), -(2**63) - 1, 10**400]))
    if choice == 2:
        return float(rng.choice([0.0, -0.0, 1.5, -2.25, 65504.0, 65520.0, 1e10, 3.4e38, 3.5e38,
                                 1e300, math.inf, -math.inf, math.nan, 5e-324]))
    if choice == 3:
        return bool(rng.integers(2))
    if choice == 4:
        return None
    if choice == 5:
        dtype = np.dtype(rng.choice(["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4",
                                     "f8", "?"]))
        raw = rng.integers(0, 256, dtype.itemsize, dtype=np.uint8).tobytes()
        return np.frombuffer(raw, dtype)[0]
    if choice == 6:
        n = size if rng.random() < 0.6 else int(rng.integers(0, 32))
        return rng.integers(0, 256, n, dtype=np.uint8).tobytes()
    if choice == 7:
        n = size if rng.random() < 0.6 else int(rng.integers(0, 32))
        return bytearray(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
    if choice == 8:
        dtype = np.dtype(rng.choice(["u1", "i4", "f4", "u8"]))
        n = max(size // dtype.itemsize, 1) if rng.random() < 0.6 else int(rng.integers(0, 5))
        return rng.integers(0, 100, n).astype(dtype)
    if choice == 9:
        return ["0x10", "", "abcd", "12345678"][rng.integers(4)]
    if choice == 10:
        return Addressed([0x1000, 2**64, -8, 1.5, None, "x", True][rng.integers(7)])
    if choice == 11:
        return [1j, [1, 2], (3,), object()][rng.integers(4)]
    if choice == 12:
        return np.float64(rng.choice([1.0, 1e300, math.nan]))
    return int(rng.integers(0, 1 << 16))


def _int_like(value) -> int | None:
    if type(value) in (int, bool):
        return int(value)
    if isinstance(value, np.generic) and value.dtype.kind in "iub":
        return int(value)
    return None


def _is_bool(value) -> bool:
    """Python and numpy bools (0-d arrays included): refused by integer slots not declared
    as C's bool (True is not 1 there)."""
    return type(value) is bool or (isinstance(value, np.generic | np.ndarray)
                                   and value.ndim == 0 and value.dtype.kind == "b")


def _numpy_integer(value) -> bool:
    return isinstance(value, np.generic | np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu"


def _numpy_number(value) -> bool:
    return (isinstance(value, np.generic | np.ndarray) and value.ndim == 0
            and value.dtype.kind in "iuf")


def _raw(value, size: int) -> bytes | None:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value) if len(value) == size else None
    if isinstance(value, np.ndarray | np.generic):
        raw = value.tobytes()
        return raw if len(raw) == size else None
    return None


def model(slot, value) -> tuple[str, bytes | None]:
    """(OK | BAD, the exact bytes when it packs): what the checked path does, which the fast
    path must match."""
    size, category = slot.size, slot.category
    if category == "pointer":
        if value is None:
            return OK, bytes(8)
        address = value.address if isinstance(value, Addressed) else value
        if type(address) is int:
            if 0 <= address < 1 << 64:
                return OK, address.to_bytes(8, "little")
            return BAD, None
        if not isinstance(value, Addressed) and _numpy_integer(value):
            number = int(value)                         # numpy address arithmetic
            return (OK, number.to_bytes(8, "little")) if 0 <= number < 1 << 64 else (BAD, None)
        return BAD, None                                # bools included
    if category == "bytes":
        raw = _raw(value, size)
        return (OK, raw) if raw is not None else (BAD, None)
    if category == "scalar":
        _, fmt, is_float = SCALAR_TYPES[slot.type]
        if is_float:
            if type(value) is bool:
                return BAD, None
            if not (isinstance(value, (int, float)) or _numpy_number(value)):
                if isinstance(value, np.ndarray):
                    raw = _raw(value, size) if value.dtype.kind == "f" else None
                    return (OK, raw) if raw is not None else (BAD, None)
                return BAD, None
            try:
                return OK, struct.pack("<" + fmt, float(value))
            except (OverflowError, struct.error):
                return BAD, None
        if _is_bool(value) and not slot.is_bool:
            return BAD, None
        number = _int_like(value)
        if number is None and isinstance(value, np.ndarray) and value.dtype.kind in "iub":
            if value.ndim == 0:
                number = int(value)
            else:                                       # raw bytes of exactly the slot's size
                raw = _raw(value, size)
                return (OK, raw) if raw is not None else (BAD, None)
        if number is None:
            return BAD, None
        try:
            return OK, struct.pack("<" + fmt, number)
        except struct.error:
            return BAD, None
    # untyped: an integer in the signed or unsigned range, or exactly `size` raw bytes
    if _is_bool(value):
        return BAD, None
    number = _int_like(value)
    if number is not None:
        bits = 8 * size
        if -(1 << (bits - 1)) <= number < 1 << bits:
            return OK, (number % (1 << bits)).to_bytes(size, "little")
        return BAD, None
    if type(value) is float:
        return BAD, None
    raw = _raw(value, size)
    return (OK, raw) if raw is not None else (BAD, None)


def describe(seed, case, info, types, grid, workgroup, values) -> str:
    rows = "\n".join(f"    {a}" for a in info.args)
    return (f"seed {seed} case {case}: kernarg_segment_size {info.kernarg_segment_size}, "
            f"types {types!r}, grid {grid!r}, workgroup {workgroup!r}\n  args:\n{rows}\n"
            f"  values: {values!r}")


def run_case(rng: np.random.Generator, case: int) -> str:
    """One case; returns what happened ("layout-refused", "refused", "packed")."""
    info, types = random_kernel(rng)
    grid = random_dims(rng, 1 << 33 if rng.random() < 0.1 else 1 << 16)
    workgroup = random_dims(rng, 1025)
    where = describe(SEED, case, info, types, grid, workgroup, "-")
    try:
        layout = KernargLayout.from_kernel(info, types)
        packer = layout.packer(grid, workgroup, int(rng.integers(0, 1 << 16)),
                               int(rng.integers(0, 1 << 48)))
    except (HsapyValueError, HsapyTypeError) as exc:
        assert str(exc), where
        return "layout-refused"
    except Exception as exc:
        pytest.fail(f"{type(exc).__name__} escaped the layout: {exc!r}\n{where}")
    count = max(len(layout.slots) + (int(rng.choice((-1, 1))) if rng.random() < 0.03 else 0), 0)
    values = [random_value(rng, layout.slots[i].size if i < len(layout.slots) else 8)
              for i in range(count)]
    where = describe(SEED, case, info, types, grid, workgroup, values)
    expected = [model(slot, value) for slot, value in zip(layout.slots, values)]
    must_refuse = count != len(layout.slots) or any(v == BAD for v, _ in expected)
    must_pack = count == len(layout.slots) and all(v == OK for v, _ in expected)
    start = int(rng.integers(0, 64))
    buffer = bytearray(b"\xa5" * (start + layout.size + 64))
    try:
        packer.pack_into(buffer, start, *values)
    except (HsapyValueError, HsapyTypeError) as exc:
        assert str(exc) and "fuzz" in str(exc), f"message does not name the kernel: {exc}\n{where}"
        assert not must_pack, f"refused valid values: {exc}\n{where}"
        return "refused"
    except Exception as exc:
        pytest.fail(f"{type(exc).__name__} escaped Packer.pack_into: {exc!r}\n{where}")
    assert not must_refuse, f"packed values it should refuse\n{where}"
    segment = bytes(buffer[start:start + layout.size])
    assert buffer[:start] == b"\xa5" * start and buffer[start + layout.size:] == b"\xa5" * 64, \
        f"wrote outside the kernarg segment\n{where}"
    for slot, (_, raw) in zip(layout.slots, expected):
        got = segment[slot.offset:slot.offset + slot.size]
        assert got == raw, f"slot {slot.index} ({slot.category}): {got.hex()} != {raw.hex()}\n{where}"
    template = packer.template
    for hidden in layout.hidden:
        span = slice(hidden.offset, hidden.offset + hidden.size)
        assert segment[span] == template[span], f"hidden {hidden.kind} clobbered\n{where}"
    # The one-shot API agrees with the packer.
    assert layout.pack(values, grid, workgroup, packer.dispatch.dynamic_lds,
                       packer.dispatch.queue_ptr) == segment, where
    return "packed"


def test_random_layouts_and_values_pack_exactly_or_raise_hsapy_errors():
    rng = np.random.default_rng(SEED)
    outcomes: dict[str, int] = {}
    for case in range(CASES):
        outcome = run_case(rng, case)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print(f"kernarg fuzz: {CASES} cases, seed {SEED}: {outcomes}")
    # The generator must exercise all three outcomes, or the test proves little.
    assert all(outcomes.get(k, 0) > CASES // 50 for k in ("layout-refused", "refused", "packed"))
