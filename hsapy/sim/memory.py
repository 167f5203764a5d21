"""The simulator's address space: host-backed allocations in a sorted allocation table.

A simulated allocation is real host memory owned by the simulator (a numpy array kept alive by
its :class:`Allocation`), and its simulated address IS the host address of that backing. The
pythonic layer may therefore read and write it through ``ffi.cast`` exactly as on ROCr, while the
simulator's interpreter only touches memory through :class:`SimMemory`, which checks every access
against the table and raises :class:`SimMemoryFault` for anything outside one allocation.
See docs/internals.md, "Memory is host memory, on both backends".
"""
from __future__ import annotations

import bisect
import ctypes
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Allocation", "SimMemory", "SimMemoryFault", "SHARED_APERTURE_BASE",
           "PRIVATE_APERTURE_BASE", "APERTURE_SIZE", "held_elsewhere"]

PAGE_SIZE = 4096

# Flat-address apertures of LDS and scratch, as the Linux KFD lays them out for gfx9 and later
# (drivers/gpu/drm/amd/amdkfd/kfd_flat_memory.c: LDS base 1 << 48, scratch base 2 << 48). ROCr
# copies their upper halves into every amd_queue_t; the simulator does the same, and its
# interpreter resolves flat addresses in these windows to LDS / scratch. They lie above the
# 47-bit user address space, so no host-backed allocation can overlap them.
SHARED_APERTURE_BASE = 1 << 48
PRIVATE_APERTURE_BASE = 2 << 48
APERTURE_SIZE = 1 << 32


class SimMemoryFault(Exception):
    """An access outside every allocation (or across the end of one).

    ``address`` is the first faulting address, ``nbytes`` the access size, ``kind`` one of
    "read", "write", "view".
    """

    def __init__(self, address: int, nbytes: int, kind: str) -> None:
        self.address = int(address)
        self.nbytes = int(nbytes)
        self.kind = kind
        super().__init__(
            f"simulated memory fault: {kind} of {self.nbytes} byte(s) at {self.address:#x} is not "
            "inside one allocation"
        )


@dataclass(eq=False)
class Allocation:
    """One block of simulated memory.

    ``pool`` is the owning pool object (or None for runtime-internal memory), ``owner`` the
    handle of the agent that owns it, ``accessible`` the agent handles allowed to access it
    (hsa_amd_agents_allow_access adds to it), ``tag`` a short description for diagnostics.
    """

    address: int
    size: int
    backing: np.ndarray
    pool: Any = None
    owner: int = 0
    accessible: set[int] = field(default_factory=set)
    tag: str = ""

    @property
    def end(self) -> int:
        """One past the last byte."""
        return self.address + self.size

    def contains(self, address: int, nbytes: int = 1) -> bool:
        """True when [address, address + nbytes) lies inside this allocation."""
        return self.address <= address and address + nbytes <= self.end


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_SIGNED = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


# Every live simulated address space, so a fault can say when its address belongs to another one.
_LIVE: weakref.WeakSet[SimMemory] = weakref.WeakSet()


def held_elsewhere(memory: SimMemory, address: int | None) -> str:
    """A sentence for a memory fault at ``address`` in ``memory`` when the address is not
    ``memory``'s but lies in an allocation of another live simulated runtime (a Buffer that
    another ``hsapy.Runtime`` allocated: each simulated runtime is a machine of its own), else
    "". Asked only once a fault happened."""
    if address is None or memory.find(address) is not None:
        return ""
    for other in list(_LIVE):
        if other is not memory and other.find(address) is not None:
            return (f" -- {address:#x} is memory of another simulated runtime (each "
                    "hsapy.Runtime on the simulator is a machine of its own, sharing no memory, "
                    "so a Buffer one allocated is no kernel argument of another: allocate it "
                    "from this runtime's pools, or copy the data over)")
    return ""


class SimMemory:
    """Sorted allocation table over host-backed blocks; the only way the simulator touches memory.

    Thread-safe: allocate/free take a lock and publish a new immutable snapshot of the table,
    lookups read the current snapshot without locking.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._allocations: dict[int, Allocation] = {}
        _LIVE.add(self)
        # Bytes allocated per pool object: a pool with a ``size`` gives no more than that
        # (ROCr: HSA_STATUS_ERROR_OUT_OF_RESOURCES once a pool is exhausted).
        self._pool_used: dict[Any, int] = {}
        # Snapshot: (sorted starts list, allocations in the same order, starts array, ends array)
        self._table: tuple[list[int], list[Allocation], np.ndarray, np.ndarray] = (
            [], [], np.zeros(0, np.uint64), np.zeros(0, np.uint64)
        )

    # -- allocation -------------------------------------------------------------------------

    def allocate(self, size: int, align: int = PAGE_SIZE, pool: Any = None, *, owner: int = 0,
                 accessible: set[int] | None = None, tag: str = "") -> int:
        """Allocate ``size`` zeroed bytes aligned to ``align``; return the address.

        Raises MemoryError when the host cannot back it, or when ``pool`` has a ``size`` and
        its allocations would exceed it (the caller turns that into a status).
        """
        if size <= 0:
            raise ValueError("allocation size must be positive")
        if align <= 0 or align & (align - 1):
            raise ValueError("alignment must be a power of two")
        limit = getattr(pool, "size", 0) if pool is not None else 0
        if limit:
            with self._lock:
                used = self._pool_used.get(pool, 0)
                if used + size > limit:
                    raise MemoryError(f"pool exhausted: {used} of {limit} bytes in use, "
                                      f"{size} more requested")
                self._pool_used[pool] = used + size
        try:
            raw = np.zeros(size + align, dtype=np.uint8)
        except MemoryError:
            if limit:
                with self._lock:
                    self._pool_used[pool] -= size
            raise
        base = raw.ctypes.data
        offset = (-base) % align
        backing = raw[offset:offset + size]
        address = base + offset
        alloc = Allocation(address, size, backing, pool, owner, set(accessible or ()), tag)
        with self._lock:
            self._allocations[address] = alloc
            self._publish()
        return address

    def adopt(self, address: int, size: int, *, owner: int = 0, tag: str = "") -> bool:
        """Make the caller's host memory [address, address + size) an allocation (a registered
        user pointer: hsaKmtRegisterMemory). The caller keeps it alive until :meth:`free`.
        Returns False, adding nothing, when the range overlaps an existing allocation."""
        address, size = int(address), int(size)
        if size <= 0:
            raise ValueError("allocation size must be positive")
        backing = np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(address))
        alloc = Allocation(address, size, backing, None, owner, set(), tag)
        with self._lock:
            starts, allocations, _, _ = self._table
            i = bisect.bisect_left(starts, address)
            if i < len(starts) and starts[i] < address + size:
                return False
            if i > 0 and allocations[i - 1].end > address:
                return False
            self._allocations[address] = alloc
            self._publish()
        return True

    def pool_used(self, pool: Any) -> int:
        """Bytes currently allocated from ``pool``."""
        return self._pool_used.get(pool, 0)

    def free(self, address: int) -> bool:
        """Free the allocation that starts at ``address``; False if there is none."""
        with self._lock:
            alloc = self._allocations.pop(int(address), None)
            if alloc is None:
                return False
            if alloc.pool is not None and alloc.pool in self._pool_used:
                self._pool_used[alloc.pool] -= alloc.size
            self._publish()
        return True

    def _publish(self) -> None:
        allocations = sorted(self._allocations.values(), key=lambda a: a.address)
        starts = [a.address for a in allocations]
        self._table = (
            starts,
            allocations,
            np.array(starts, dtype=np.uint64),
            np.array([a.end for a in allocations], dtype=np.uint64),
        )

    # -- lookup ------------------------------------------------------------------------------

    def find(self, address: int) -> Allocation | None:
        """The allocation containing ``address``, or None."""
        starts, allocations, _, _ = self._table
        i = bisect.bisect_right(starts, int(address)) - 1
        if i < 0:
            return None
        alloc = allocations[i]
        if int(address) < alloc.end:
            return alloc
        return None

    def allocation_at(self, address: int) -> Allocation | None:
        """The allocation that starts exactly at ``address``, or None."""
        return self._allocations.get(int(address))

    def allocations(self) -> list[Allocation]:
        """All live allocations, sorted by address."""
        return list(self._table[1])

    def table(self, agent: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
        """The allocation table for generated code: sorted starts and ends (uint64), per
        allocation 1 when ``agent`` may access it (uint8; every allocation without an agent),
        and the allocations themselves (holding them keeps their backing memory alive)."""
        _, allocations, starts, ends = self._table
        allowed = np.array([1 if agent is None or self.may_access(a, agent) else 0
                            for a in allocations], np.uint8)
        return starts, ends, allowed, list(allocations)

    # -- byte access ---------------------------------------------------------------------------

    def view(self, address: int, nbytes: int, kind: str = "view", *,
             agent: int | None = None) -> np.ndarray:
        """A uint8 view of [address, address + nbytes); raises SimMemoryFault unless inside one
        allocation (and, with ``agent``, unless that agent may access it: see :meth:`may_access`).
        """
        address = int(address)
        nbytes = int(nbytes)
        alloc = self.find(address)
        if alloc is None or nbytes < 0 or address + nbytes > alloc.end:
            raise SimMemoryFault(address, nbytes, kind)
        if agent is not None and not self.may_access(alloc, agent):
            raise SimMemoryFault(address, nbytes, "access")
        offset = address - alloc.address
        return alloc.backing[offset:offset + nbytes]

    def read(self, address: int, nbytes: int) -> bytes:
        """Copy ``nbytes`` out of simulated memory."""
        return self.view(address, nbytes, "read").tobytes()

    def write(self, address: int, data: bytes | bytearray | memoryview | np.ndarray) -> None:
        """Copy ``data`` into simulated memory."""
        src = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) \
            else data.reshape(-1).view(np.uint8)
        self.view(address, src.size, "write")[:] = src

    def read_u32(self, address: int) -> int:
        """One little-endian uint32."""
        return int(self.view(address, 4, "read").view(np.uint32)[0])

    def read_u64(self, address: int) -> int:
        """One little-endian uint64."""
        return int(self.view(address, 8, "read").view(np.uint64)[0])

    @staticmethod
    def may_access(alloc: Allocation, agent: int) -> bool:
        """True when ``agent`` (a handle) may touch ``alloc``: runtime-internal memory (empty
        ``accessible``) is open to every agent; pool memory to its owner and the agents added by
        hsa_amd_agents_allow_access (system memory: every agent, as ROCr maps it to all GPUs)."""
        return not alloc.accessible or agent in alloc.accessible

    # -- per-lane access (the interpreter's loads and stores) -----------------------------------

    def _locate(self, addresses: np.ndarray, itemsize: int, kind: str) -> np.ndarray:
        """Index into the table for each address; raises SimMemoryFault at the first bad one."""
        _, _, starts, ends = self._table
        if starts.size == 0:
            if addresses.size:
                raise SimMemoryFault(int(addresses[0]), itemsize, kind)
            return np.zeros(0, np.intp)
        idx = np.searchsorted(starts, addresses, side="right").astype(np.intp) - 1
        safe = np.maximum(idx, 0)
        end = ends[safe]
        # address < end guards against address + itemsize wrapping around 2**64
        bad = (idx < 0) | (addresses >= end) | (addresses + np.uint64(itemsize) > end)
        if bad.any():
            first = int(addresses[np.argmax(bad)])
            raise SimMemoryFault(first, itemsize, kind)
        return idx

    def _single(self, addrs: np.ndarray, itemsize: int, agent: int | None) -> Allocation | None:
        """The one allocation holding every access, when there is one the agent may touch
        (the common case, checked with two reductions instead of a per-lane search)."""
        if addrs.size == 0:
            return None
        alloc = self.find(int(addrs.min()))
        if alloc is None or int(addrs.max()) + itemsize > alloc.end:
            return None
        if agent is not None and not self.may_access(alloc, agent):
            return None
        return alloc

    def _check_agent(self, addrs: np.ndarray, idx: np.ndarray, itemsize: int,
                     agent: int | None) -> np.ndarray:
        """The distinct table indices touched; faults when ``agent`` may not access one."""
        touched = np.unique(idx)
        if agent is not None:
            allocations = self._table[1]
            for table_index in touched:
                if not self.may_access(allocations[int(table_index)], agent):
                    first = int(addrs[np.argmax(idx == table_index)])
                    raise SimMemoryFault(first, itemsize, "access")
        return touched

    def gather(self, addresses: np.ndarray, itemsize: int, dtype: Any = None, *,
               agent: int | None = None) -> np.ndarray:
        """Load ``itemsize`` bytes at each address; fault-checked (and access-checked for
        ``agent`` when given).

        The result has ``dtype`` (default: unsigned of ``itemsize``). When ``dtype`` is wider than
        ``itemsize`` the loaded value is zero-extended (unsigned dtype) or sign-extended (signed).
        """
        addrs = np.asarray(addresses, dtype=np.uint64).reshape(-1)
        alloc = self._single(addrs, itemsize, agent)
        if alloc is not None and itemsize in _UNSIGNED:
            offsets = (addrs - np.uint64(alloc.address)).astype(np.intp)
            if not (offsets & (itemsize - 1)).any():       # naturally aligned: typed load
                loaded = _typed(alloc, itemsize)[offsets // itemsize]
                if dtype is None:
                    return loaded
                target = np.dtype(dtype)
                if target.itemsize == itemsize:
                    return loaded.view(target)
                return _to_dtype(loaded.view(np.uint8), itemsize, target)
        idx = self._locate(addrs, itemsize, "read")
        allocations = self._table[1]
        touched = self._check_agent(addrs, idx, itemsize, agent)
        raw = np.empty((addrs.size, itemsize), dtype=np.uint8)
        lanes = np.arange(itemsize, dtype=np.intp)
        for table_index in touched:
            alloc = allocations[int(table_index)]
            sel = idx == table_index
            offsets = (addrs[sel] - np.uint64(alloc.address)).astype(np.intp)
            raw[sel] = alloc.backing[offsets[:, None] + lanes]
        return _to_dtype(raw, itemsize, dtype)

    def check(self, addresses: np.ndarray, itemsize: int, kind: str, *,
              agent: int | None = None) -> None:
        """Fault (SimMemoryFault naming ``kind``: "read"/"write") unless every access of
        ``itemsize`` bytes lies inside an allocation ``agent`` may touch; touches nothing."""
        addrs = np.asarray(addresses, dtype=np.uint64).reshape(-1)
        if self._single(addrs, itemsize, agent) is None and addrs.size:
            self._check_agent(addrs, self._locate(addrs, itemsize, kind), itemsize, agent)

    def scatter(self, addresses: np.ndarray, values: np.ndarray, itemsize: int | None = None,
                *, agent: int | None = None) -> None:
        """Store each value at its address (the low ``itemsize`` bytes when given); fault-checked
        (and access-checked for ``agent`` when given). Nothing is written when any address faults.
        """
        addrs = np.asarray(addresses, dtype=np.uint64).reshape(-1)
        vals = np.ascontiguousarray(values).reshape(-1)
        width = vals.dtype.itemsize
        size = width if itemsize is None else int(itemsize)
        if vals.size != addrs.size:
            raise ValueError("scatter needs one value per address")
        alloc = self._single(addrs, size, agent)
        if alloc is not None and size == width and size in _UNSIGNED:
            offsets = (addrs - np.uint64(alloc.address)).astype(np.intp)
            if not (offsets & (size - 1)).any():            # naturally aligned: typed store
                _typed(alloc, size)[offsets // size] = vals.view(_UNSIGNED[size])
                return
        idx = self._locate(addrs, size, "write")
        allocations = self._table[1]
        touched = self._check_agent(addrs, idx, size, agent)
        raw = vals.view(np.uint8).reshape(-1, width)[:, :size]  # little-endian: low bytes first
        lanes = np.arange(size, dtype=np.intp)
        for table_index in touched:
            alloc = allocations[int(table_index)]
            sel = idx == table_index
            offsets = (addrs[sel] - np.uint64(alloc.address)).astype(np.intp)
            alloc.backing[offsets[:, None] + lanes] = raw[sel]


def _typed(alloc: Allocation, itemsize: int) -> np.ndarray:
    """The allocation's backing as unsigned words of ``itemsize`` bytes (whole words only)."""
    usable = alloc.size - alloc.size % itemsize
    return alloc.backing[:usable].view(_UNSIGNED[itemsize])


def _to_dtype(raw: np.ndarray, itemsize: int, dtype: Any) -> np.ndarray:
    flat = np.ascontiguousarray(raw).reshape(-1)
    if dtype is None:
        return flat.view(_UNSIGNED[itemsize])
    target = np.dtype(dtype)
    if target.itemsize == itemsize:
        return flat.view(target)
    table = _SIGNED if target.kind == "i" else _UNSIGNED
    return flat.view(table[itemsize]).astype(target)
