"""Property tests: SimMemory's per-lane gather/scatter agree with plain byte-array semantics."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hsapy.sim import SimMemory, SimMemoryFault

SIZES = (64, 100, 256)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_scatter_then_gather_matches_a_reference(data):
    mem = SimMemory()
    bases = [mem.allocate(size, 16) for size in SIZES]
    reference = {base: bytearray(size) for base, size in zip(bases, SIZES)}
    itemsize = data.draw(st.sampled_from([1, 2, 4, 8]))
    lanes = data.draw(st.integers(1, 16))
    targets = []
    for _ in range(lanes):
        block = data.draw(st.integers(0, len(bases) - 1))
        offset = data.draw(st.integers(0, SIZES[block] - itemsize))
        targets.append((bases[block], offset))
    values = data.draw(st.lists(st.integers(0, 2 ** (8 * itemsize) - 1), min_size=lanes,
                                max_size=lanes))
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[itemsize]
    addresses = np.array([b + o for b, o in targets], np.uint64)
    mem.scatter(addresses, np.array(values, dtype))
    for (base, offset), value in zip(targets, values):    # later lanes win, like numpy
        reference[base][offset:offset + itemsize] = value.to_bytes(itemsize, "little")
    for base in bases:
        assert mem.read(base, len(reference[base])) == bytes(reference[base])
    expected = [int.from_bytes(reference[b][o:o + itemsize], "little") for b, o in targets]
    assert list(mem.gather(addresses, itemsize)) == expected


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**64 - 1), st.sampled_from([1, 2, 4, 8]))
def test_any_address_outside_allocations_faults(address, itemsize):
    mem = SimMemory()
    base = mem.allocate(64, 64)
    inside = base <= address and address + itemsize <= base + 64
    try:
        mem.gather(np.array([address], np.uint64), itemsize)
        assert inside
    except SimMemoryFault as fault:
        assert not inside
        assert fault.address == address
