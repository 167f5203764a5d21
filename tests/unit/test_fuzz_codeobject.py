"""Fuzzing: malformed code objects and bundles raise CodeObjectError -- never anything else.

Seeds are real code objects built by the toolchain (llvm-mc-19 + ld.lld-19, llvmlite, clang-19).
Over 10,000 cases per run, in a few seconds:

* byte mutations aimed at the structure (ELF header, program/section headers, symbol and string
  tables, notes, relocations, kernel descriptors): random bytes, bit flips, "interesting" 16/32/64
  bit values (0, -1, sizes around the file length), truncations, chunk deletions/duplications;
* metadata mutations (hypothesis): random nodes of the decoded msgpack document replaced by
  values of the wrong type or range, then the kernel table rebuilt from it;
* bundle mutations: plain and compressed offload bundles with corrupted headers;
* loader mutations: the simulator's loader returns a status for every mutated code object.

``HSAPY_FUZZ_SEED`` changes the random seed (default fixed so that CI is reproducible).
"""
from __future__ import annotations

import copy
import os
import random
import struct

import pytest
from _codeobjects import build, built
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hsapy.codeobject import (
    CodeObject,
    CodeObjectError,
    bundle_entries,
    extract_for_target,
)
from hsapy.errors import HsapyError
from hsapy.kernarg import KernargLayout

SEED = int(os.environ.get("HSAPY_FUZZ_SEED", "20261202"))
SHF_EXECINSTR = 0x4


def structural_ranges(data: bytes) -> list[tuple[int, int]]:
    """File ranges that hold structure rather than machine code."""
    co = CodeObject.from_bytes(data)
    hdr = struct.unpack_from("<QQ", data, 0x20)
    phnum, shnum = struct.unpack_from("<H", data, 0x38)[0], struct.unpack_from("<H", data, 0x3C)[0]
    ranges = [(0, 64), (hdr[0], hdr[0] + 56 * phnum), (hdr[1], hdr[1] + 64 * shnum)]
    for section in co.sections:
        if section.type != 8 and section.size and not section.flags & SHF_EXECINSTR:
            ranges.append((section.offset, section.offset + section.size))
    return [(a, b) for a, b in ranges if b > a]


INTERESTING = (0, 1, 2, 7, 8, 0x40, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0xFFFF, 0x10000, 0x7FFFFFFF,
               0xFFFFFFFF, 0x100000000, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF)


def mutate(data: bytes, ranges: list[tuple[int, int]], rng: random.Random) -> bytes:
    """One to four structure-aware mutations."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not out:
            break
        start, end = rng.choice(ranges)
        position = min(rng.randrange(start, end), len(out) - 1)
        op = rng.randrange(7)
        if op == 0:
            out[position] = rng.randrange(256)
        elif op == 1:
            out[position] ^= 1 << rng.randrange(8)
        elif op in (2, 3):
            width = rng.choice((2, 4, 8))
            position -= position % width
            value = rng.choice(INTERESTING + (len(out), len(out) - 1, len(out) + 1))
            value += rng.choice((0, 0, -1, 1))
            value %= 1 << (8 * width)
            out[position:position + width] = value.to_bytes(width, "little")
        elif op == 4:
            del out[rng.randrange(len(out)):]
        elif op == 5:
            size = rng.randint(1, 64)
            del out[position:position + size]
        else:
            size = rng.randint(1, 64)
            out[position:position] = out[position:position + size]
    return bytes(out)


def parse_or_code_object_error(data: bytes) -> CodeObject | None:
    """Parse; a CodeObjectError is fine, any other exception fails the test with the input."""
    try:
        co = CodeObject.from_bytes(data)
    except CodeObjectError as exc:
        assert str(exc)
        return None
    except Exception as exc:  # the point of the test
        pytest.fail(f"{type(exc).__name__} escaped CodeObject.from_bytes: {exc!r}\n"
                    f"input ({len(data)} bytes) starts {data[:64].hex()}")
    # Whatever parses must also lay out its arguments or refuse with hsapy's own errors.
    for info in co.kernels.values():
        try:
            KernargLayout.from_kernel(info).packer(64, 64)
        except HsapyError:
            pass
    return co


SEEDS = {
    "asm-gfx942-v5": (build.build_asm, ("gfx942", 5)),
    "llvmlite-gfx1201-v6": (build.build_llvmlite, ("gfx1201", 6)),
    "llvmlite-gfx942-v4": (build.build_llvmlite, ("gfx942", 4)),
    "hip-gfx942-v5": (build.build_hip, ("gfx942", 5)),
}
# Cases per seed: the HIP object (6 kernels) is the slowest to parse, so it gets fewer.
BYTE_CASES = {"asm-gfx942-v5": 3000, "llvmlite-gfx1201-v6": 2500, "llvmlite-gfx942-v4": 2000,
              "hip-gfx942-v5": 1000}


@pytest.mark.parametrize("seed_name", sorted(SEEDS))
def test_byte_mutations_only_raise_code_object_error(seed_name):
    builder, args = SEEDS[seed_name]
    data = built(builder, *args)
    ranges = structural_ranges(data)
    rng = random.Random(f"{SEED}-{seed_name}")
    parsed = 0
    for _ in range(BYTE_CASES[seed_name]):
        if parse_or_code_object_error(mutate(data, ranges, rng)) is not None:
            parsed += 1
    # Both outcomes occur: the mutations reach past the first check.
    assert 0 < parsed < BYTE_CASES[seed_name]


# -- metadata ------------------------------------------------------------------------------

JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1),
    st.floats(allow_nan=True), st.text(max_size=12), st.binary(max_size=8),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(),
                                                         max_size=2),
)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, prefix + (index,))


def _replace(node, path, value):
    if not path:
        return value
    parent = node
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return node


@pytest.fixture(scope="module")
def metadata_seed():
    data = built(build.build_llvmlite, "gfx942", 5, False)
    co = CodeObject.from_bytes(data)
    return co, copy.deepcopy(co.metadata), list(_paths(co.metadata))


def check_metadata(co: CodeObject, mutated) -> None:
    """Rebuild the kernel table from a mutated metadata document: CodeObjectError or success."""
    co.metadata = mutated if isinstance(mutated, dict) else {}
    try:
        co._parse_kernels()   # the metadata -> KernelInfo step of from_bytes
    except CodeObjectError:
        return
    except Exception as exc:
        pytest.fail(f"{type(exc).__name__} escaped the metadata parser: {exc!r}")
    for info in co.kernels.values():
        try:
            KernargLayout.from_kernel(info).packer((64, 2), 64)
        except HsapyError:
            pass


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(choices=st.lists(st.tuples(st.integers(min_value=0), JUNK), min_size=1, max_size=3))
def test_metadata_mutations_only_raise_code_object_error(metadata_seed, choices):
    co, metadata, _ = metadata_seed
    mutated = copy.deepcopy(metadata)
    for index, value in choices:
        live = list(_paths(mutated))
        mutated = _replace(mutated, live[index % len(live)], value)
    check_metadata(co, mutated)


def random_junk(rng: random.Random, original):
    """A value of another type or an edge of the original's range."""
    choices = [None, True, -1, 0, 1 << 64, 1 << 40, 2.5, "", "hidden_block_count_x", b"\x00",
               [], {}, [1, 2], {".offset": -8}]
    if isinstance(original, int) and not isinstance(original, bool):
        choices += [original + 1, original - 1, original * 1000, -original]
    if isinstance(original, list) and original:
        choices += [original[:-1], original * 2, [original[0]] * 3]
    return rng.choice(choices)


def test_metadata_random_mutations_only_raise_code_object_error(metadata_seed):
    co, metadata, paths = metadata_seed
    rng = random.Random(f"{SEED}-metadata")
    for _ in range(2500):
        mutated = copy.deepcopy(metadata)
        for _ in range(rng.randint(1, 3)):
            live = list(_paths(mutated))
            path = rng.choice(live)
            node = mutated
            for key in path:
                node = node[key]
            mutated = _replace(mutated, path, random_junk(rng, node))
        check_metadata(co, mutated)


# -- bundles ----------------------------------------------------------------------------------


@pytest.mark.parametrize("compress", [False, True])
def test_bundle_mutations_only_raise_code_object_error(compress):
    if compress:
        pytest.importorskip("zstandard", reason="zstandard is not installed")
    try:
        data = build.build_hip_bundle(("gfx942", "gfx1201"), compress)
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
    header_end = 128 if compress else 256
    ranges = [(0, min(header_end, len(data)))]
    rng = random.Random(f"{SEED}-bundle-{compress}")
    outcomes = set()
    for _ in range(700):
        mutated = mutate(data, ranges, rng)
        try:
            bundle_entries(mutated)
            outcomes.add("parsed")
            extract_for_target(mutated, "gfx1201")
        except CodeObjectError:
            outcomes.add("error")
        except Exception as exc:
            pytest.fail(f"{type(exc).__name__} escaped the bundle reader: {exc!r}")
    assert outcomes == {"parsed", "error"}


# -- the simulator's loader ------------------------------------------------------------------


def test_loader_returns_a_status_for_mutated_code_objects():
    from hsapy._hsa import ffi
    from hsapy.errors import STATUS_NAMES
    from hsapy.sim import SimLib

    data = built(build.build_hip, "gfx942", 5)
    ranges = structural_ranges(data)
    rng = random.Random(f"{SEED}-loader")
    lib = SimLib(ffi, targets=["gfx942"])
    assert lib.hsa_init() == 0
    agent = lib.gpu_agents[0].handle
    statuses = set()
    try:
        for _ in range(300):
            mutated = mutate(data, ranges, rng)
            reader = ffi.new("hsa_code_object_reader_t *")
            assert lib.hsa_code_object_reader_create_from_memory(mutated, len(mutated),
                                                                 reader) == 0
            exe = ffi.new("hsa_executable_t *")
            assert lib.hsa_executable_create_alt(1, 0, ffi.NULL, exe) == 0
            status = lib.hsa_executable_load_agent_code_object(exe[0], {"handle": agent},
                                                               reader[0], ffi.NULL, ffi.NULL)
            assert status in STATUS_NAMES
            statuses.add(status)
            assert lib.hsa_executable_destroy(exe[0]) == 0
            assert lib.hsa_code_object_reader_destroy(reader[0]) == 0
        assert lib.kernel_objects == {}
    finally:
        lib.hsa_shut_down()
    assert 0 in statuses and 0x1010 in statuses   # some load, some are invalid code objects
