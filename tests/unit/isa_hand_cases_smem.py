"""Hand-checked cases: gfx9 scalar scratch access (S_SCRATCH_LOAD/STORE_DWORD*), the scalar
cache hints (S_ATC_PROBE*, gfx12 S_PREFETCH_*) and S_VERSION.

Scalar scratch (CDNA3 ISA guide 8.2.1.1): ADDR = SGPR[base] + inst_offset + {M0 or SGPR} * 64.
The runner's "mem" buffer is at s[20:21]. An address in the simulator's private-segment window
(2^47, semantics_buffer.PRIVATE_BUFFER_BASE) is the wave's private memory, interleaved over the
lanes by dwords: wave byte W is private byte (W // 256) * 4 + W % 4 of lane (W % 256) // 4.
The runner gives every lane the same "scratch" bytes; stores are checked lane by lane.
"""
from __future__ import annotations

from isa_hand_runner import case

CASES = []
WINDOW = 1 << 47
MEM = list(range(100, 132))


def add(target, line, inputs, expect, why):
    CASES.append(case(target, line, inputs, expect, why))


def _private_bytes(lane: int, start: int, want: bytes):
    def check(batch, machine):
        got = bytes(batch.scratch[lane, start:start + len(want)])
        assert got == want, f"lane {lane} private bytes {start}..: {got.hex()}"
    return check


add("gfx942", "s_scratch_load_dword s4, s[2:3], 0x104",
    {"s2.u64": WINDOW, "scratch": bytes(range(16))}, {"s4.u32": 0x07060504},
    "wave byte 0x104: lane 1, private byte 4")
add("gfx942", "s_scratch_load_dwordx2 s[4:5], s[2:3], s6 offset:0x8",
    {"s2.u64": WINDOW, "s6.u32": 4, "scratch": bytes(range(16))},
    {"s4.u32": 0x07060504, "s5.u32": 0x07060504},
    "SGPR offset 4 is 4 * 64 bytes: wave bytes 264, 268 = private byte 4 of lanes 2 and 3")
add("gfx942", "s_scratch_load_dwordx4 s[4:7], s[2:3], 0x3",
    {"s2.u64": WINDOW, "scratch": bytes(range(16))},
    {"s4.u32": 0x03020100, "s7.u32": 0x03020100}, "the two low address bits are ignored")
add("gfx942", "s_scratch_store_dword s4, s[2:3], 0x108",
    {"s2.u64": WINDOW, "s4.u32": 0xAABBCCDD, "scratch": bytes(8)},
    {"check": _private_bytes(2, 4, bytes([0xDD, 0xCC, 0xBB, 0xAA]))},
    "wave byte 0x108 is private byte 4 of lane 2")
add("gfx942", "s_scratch_store_dwordx2 s[4:5], s[2:3], m0",
    {"s2.u64": WINDOW + 0xFC, "s124.u32": 0, "s4.u32": 0x11223344, "s5.u32": 0x55667788,
     "scratch": bytes(8)},
    {"check": lambda b, m: (_private_bytes(63, 0, bytes.fromhex("44332211"))(b, m),
                            _private_bytes(0, 4, bytes.fromhex("88776655"))(b, m))},
    "wave bytes 0xFC and 0x100: lane 63 byte 0, then lane 0 byte 4")
add("gfx942", "s_scratch_store_dwordx4 s[4:7], s[2:3], 0x100",
    {"s2.u64": WINDOW, "s4.u32": 1, "s5.u32": 2, "s6.u32": 3, "s7.u32": 4, "scratch": bytes(8)},
    {"check": lambda b, m: [_private_bytes(k, 4, bytes([k + 1, 0, 0, 0]))(b, m)
                            for k in range(4)]},
    "four dwords: private byte 4 of lanes 0-3")
add("gfx942", "s_scratch_load_dword s4, s[20:21], 0x8", {"mem": MEM}, {"s4.u32": 102},
    "outside the window the address is plain memory")
add("gfx942", "s_scratch_load_dword s4, s[20:21], m0", {"mem": MEM, "s124.u32": 1},
    {"s4.u32": 116}, "M0 is in 64-byte units too: byte 64")
add("gfx942", "s_scratch_load_dword s4, s[20:21], s6 offset:-0x4", {"mem": MEM, "s6.u32": 1},
    {"s4.u32": 115}, "a signed immediate: 64 - 4 = byte 60")
add("gfx942", "s_scratch_store_dwordx2 s[4:5], s[20:21], 0x4",
    {"mem": [0] * 4, "s4.u32": 7, "s5.u32": 9}, {"mem": [0, 7, 9, 0]}, "a store to memory")

# --- hints: no architectural effect ------------------------------------------------------------
for target, line in (("gfx942", "s_atc_probe 7, s[4:5], 0x64"),
                     ("gfx942", "s_atc_probe_buffer 2, s[4:7], s3"),
                     ("gfx1201", "s_atc_probe 7, s[4:5], 0x64"),
                     ("gfx1201", "s_atc_probe_buffer 7, s[4:7], s3 offset:0x0"),
                     ("gfx1201", "s_prefetch_data s[4:5], 0x64, s3, 7"),
                     ("gfx1201", "s_prefetch_inst s[4:5], 0x64, null, 0"),
                     ("gfx1201", "s_prefetch_data_pc_rel 0x64, s3, 7"),
                     ("gfx1201", "s_buffer_prefetch_data s[4:7], 0x64, s3, 7"),
                     ("gfx1201", "s_prefetch_inst_pc_rel 0x64, s3, 7")):
    add(target, line, {"s4.u32": 0x1234, "s3.u32": 5}, {"s4.u32": 0x1234, "s3.u32": 5},
        "a cache probe or prefetch: no register or memory changes (the address need not be "
        "mapped)")


# --- S_VERSION (gfx11/gfx12): "Do nothing" (RDNA4 guide); the immediate only tags the code --------
add("gfx1201", "s_version UC_VERSION_GFX12|UC_VERSION_W32_BIT", {"s4.u32": 3, "scc": True},
    {"s4.u32": 3, "scc": True}, "no state changes")
