"""Test helpers for driving SimLib through the raw C-style API.

Packets are built with ``struct`` from the layouts in hsa.h / hsa_ext_amd.h (kept local so that
these tests do not depend on hsapy.aql, which is written concurrently), and published with the
producer protocol of docs/hsa-abi.md: reserve with add_write_index, wait for
space, write bytes 4..63, release-store header|setup as one 32-bit word, ring the doorbell.
"""
from __future__ import annotations

import struct
import time
from dataclasses import dataclass

from hsapy._hsa import ffi

PACKET_BYTES = 64
TYPE_VENDOR, TYPE_INVALID, TYPE_DISPATCH, TYPE_BARRIER_AND, TYPE_AGENT, TYPE_BARRIER_OR = range(6)
BARRIER_BIT = 1 << 8
SYSTEM_FENCES = (2 << 9) | (2 << 11)   # acquire and release fence scope SYSTEM

S_ENDPGM = {"gfx9": 0xBF810000, "gfx11": 0xBFB00000, "gfx12": 0xBFB00000}
S_NOP_0 = {"gfx9": 0xBF800000, "gfx11": 0xBF800000, "gfx12": 0xBF800000}

UINT64_MAX = 0xFFFFFFFFFFFFFFFF


def header(packet_type: int, barrier: bool = False, fences: int = SYSTEM_FENCES) -> int:
    """A 16-bit AQL header."""
    return packet_type | (BARRIER_BIT if barrier else 0) | fences


def dispatch_body(kernel_object: int, grid=(1, 1, 1), workgroup=(1, 1, 1), dims: int = 1,
                  kernarg: int = 0, completion: int = 0, private: int = 0, group: int = 0) -> bytes:
    """hsa_kernel_dispatch_packet_t bytes 4..63 (setup travels with the header)."""
    return struct.pack("<3HH3III QQQQ".replace(" ", ""), *workgroup, 0, *grid, private, group,
                       kernel_object, kernarg, 0, completion)


def barrier_body(deps=(), completion: int = 0) -> bytes:
    """hsa_barrier_and/or_packet_t bytes 4..63."""
    handles = list(deps) + [0] * (5 - len(deps))
    return struct.pack("<I5QQQ", 0, *handles, 0, completion)


def barrier_value_body(signal: int, value: int, mask: int, cond: int, completion: int = 0) -> bytes:
    """hsa_amd_barrier_value_packet_t bytes 2..63 after the u16 header: AmdFormat=2, ..."""
    return struct.pack("<BBIQqqIIQQQ", 2, 0, 0, signal, value, mask, cond, 0, 0, 0, completion)


@dataclass
class Packet:
    """A packet to publish: ``first_word`` is the 32-bit header|setup store, ``body`` the rest."""

    first_word: int
    body: bytes


def dispatch(kernel_object: int, dims: int = 1, barrier: bool = False, **fields) -> Packet:
    """A kernel dispatch packet."""
    return Packet(header(TYPE_DISPATCH, barrier) | dims << 16,
                  dispatch_body(kernel_object, dims=dims, **fields))


def barrier_and(deps=(), completion: int = 0, barrier: bool = False) -> Packet:
    """A barrier-AND packet."""
    return Packet(header(TYPE_BARRIER_AND, barrier), barrier_body(deps, completion))


def barrier_or(deps=(), completion: int = 0, barrier: bool = False) -> Packet:
    """A barrier-OR packet."""
    return Packet(header(TYPE_BARRIER_OR, barrier), barrier_body(deps, completion))


def barrier_value(signal: int, value: int, mask: int = -1, cond: int = 0,
                  completion: int = 0) -> Packet:
    """An AMD barrier-value packet (vendor-specific header, AMD format 2)."""
    body = barrier_value_body(signal, value, mask, cond, completion)
    # The 32-bit first word holds the u16 header, AmdFormat (2) and the reserved byte.
    first = header(TYPE_VENDOR) | body[0] << 16 | body[1] << 24
    return Packet(first, body[2:])


def raw(first_word: int, body: bytes = b"\0" * 60) -> Packet:
    """Any packet, for malformed-packet tests."""
    return Packet(first_word, body)


def publish(lib, queue, packet: Packet, timeout_s: float = 5.0, ring: bool = True) -> int:
    """Publish one packet with the producer protocol; return its index."""
    index = lib.hsa_queue_add_write_index_scacq_screl(queue, 1)
    size = queue.size
    deadline = time.monotonic() + timeout_s
    while index - lib.hsa_queue_load_read_index_scacquire(queue) >= size:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no space in the queue for packet {index}")
        time.sleep(0.0002)
    base = int(ffi.cast("uintptr_t", queue.base_address))
    slot = base + (index % size) * PACKET_BYTES
    ffi.memmove(ffi.cast("uint8_t *", slot + 4), packet.body, 60)
    ffi.cast("uint32_t *", slot)[0] = packet.first_word   # header last (one 32-bit store)
    if ring:
        lib.hsa_signal_store_screlease(queue.doorbell_signal, index)
    return index


def agents(lib) -> list[int]:
    """All agent handles, in iteration order."""
    found: list[int] = []

    @ffi.callback("hsa_status_t(hsa_agent_t, void*)")
    def collect(agent, data):
        found.append(agent.handle)
        return 0

    assert lib.hsa_iterate_agents(collect, ffi.NULL) == 0
    return found


def agent_name(lib, handle: int) -> str:
    """HSA_AGENT_INFO_NAME of an agent."""
    name = ffi.new("char[64]")
    assert lib.hsa_agent_get_info({"handle": handle}, 0, name) == 0
    return ffi.string(name).decode()


def gpu(lib, name: str) -> int:
    """The handle of the GPU agent called ``name``."""
    for handle in agents(lib):
        if agent_name(lib, handle) == name:
            return handle
    raise LookupError(name)


def pools(lib, agent: int) -> list[int]:
    """The memory pool handles of an agent."""
    found: list[int] = []

    @ffi.callback("hsa_status_t(hsa_amd_memory_pool_t, void*)")
    def collect(pool, data):
        found.append(pool.handle)
        return 0

    assert lib.hsa_amd_agent_iterate_memory_pools({"handle": agent}, collect, ffi.NULL) == 0
    return found


def pool_flags(lib, pool: int) -> int:
    """HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS."""
    out = ffi.new("uint32_t *")
    assert lib.hsa_amd_memory_pool_get_info({"handle": pool}, 1, out) == 0
    return out[0]


def pool_segment(lib, pool: int) -> int:
    """HSA_AMD_MEMORY_POOL_INFO_SEGMENT."""
    out = ffi.new("uint32_t *")
    assert lib.hsa_amd_memory_pool_get_info({"handle": pool}, 0, out) == 0
    return out[0]


def signal(lib, value: int = 1) -> int:
    """A new signal handle."""
    out = ffi.new("hsa_signal_t *")
    assert lib.hsa_signal_create(value, 0, ffi.NULL, out) == 0
    return out[0].handle


class ErrorLog:
    """A queue error callback that records (status, queue address) pairs."""

    def __init__(self) -> None:
        self.events: list[tuple[int, int]] = []
        self.callback = ffi.callback("void(hsa_status_t, hsa_queue_t *, void *)", self._on_error)

    def _on_error(self, status, queue, data) -> None:
        self.events.append((int(status), int(ffi.cast("uintptr_t", queue))))

    def wait(self, timeout_s: float = 5.0) -> list[tuple[int, int]]:
        """Wait until at least one error was reported (or the timeout)."""
        deadline = time.monotonic() + timeout_s
        while not self.events and time.monotonic() < deadline:
            time.sleep(0.001)
        return self.events


def create_queue(lib, agent: int, size: int = 64, errors: ErrorLog | None = None):
    """A queue (hsa_queue_t *) on ``agent``."""
    out = ffi.new("hsa_queue_t **")
    callback = errors.callback if errors is not None else ffi.NULL
    status = lib.hsa_queue_create({"handle": agent}, size, 0, callback, ffi.NULL,
                                  0xFFFFFFFF, 0xFFFFFFFF, out)
    assert status == 0, hex(status)
    return out[0]


def wait_lt(lib, handle: int, value: int = 1, timeout_s: float = 5.0) -> int:
    """Wait (with a timeout in ticks) until the signal is below ``value``; return the value."""
    frequency = ffi.new("uint64_t *")
    assert lib.hsa_system_get_info(3, frequency) == 0
    ticks = int(timeout_s * frequency[0])
    return lib.hsa_signal_wait_scacquire({"handle": handle}, 2, value, ticks, 0)


@dataclass
class FakeKernel:
    """A stand-in for the loader's LoadedKernel: a descriptor + code in device memory."""

    kernel_object: int
    agent_handle: int
    name: str = "fake"


def install_kernel(lib, agent: int, first_word: int, name: str = "fake") -> int:
    """Put a 64-byte kernel descriptor and one instruction word into simulated memory and register
    it as a loaded kernel (what the loader does for real code objects); return its address."""
    base = lib.memory.allocate(512, 256, None, owner=agent, tag=f"test kernel {name}")
    descriptor = bytearray(64)
    struct.pack_into("<q", descriptor, 16, 256)      # kernel_code_entry_byte_offset
    lib.memory.write(base, bytes(descriptor))
    lib.memory.write(base + 256, struct.pack("<I", first_word))
    lib.kernel_objects[base] = FakeKernel(base, agent, name)
    return base


def gpu_agents(lib) -> list[int]:
    """Handles of the GPU agents (HSA_AGENT_INFO_DEVICE == GPU), in iteration order."""
    found = []
    device = ffi.new("uint32_t *")
    for handle in agents(lib):
        assert lib.hsa_agent_get_info({"handle": handle}, 17, device) == 0
        if device[0] == 1:
            found.append(handle)
    return found


def open_rocr():
    """The real runtime, initialised, when it loads and reports a GPU agent; else None.

    The caller must hsa_shut_down() it.
    """
    from hsapy._hsa import load_rocr

    try:
        lib = load_rocr()
    except OSError:
        return None
    if lib.hsa_init() != 0:
        return None
    if not gpu_agents(lib):
        lib.hsa_shut_down()
        return None
    return lib
