"""Fuzzing the simulated packet processor with arbitrary AQL packets.

Every case publishes one to four packets followed by a barrier-AND "sentinel" with a completion
signal: random 64-byte packets, valid headers (dispatch, barrier-AND/OR, AMD barrier-value,
agent dispatch) over random bodies whose fields come from interesting pools (the loaded kernel's
descriptor or not, live signals or random handles, zero and huge sizes, every setup value),
and random header types. Packets go in through ``Queue.publish_batch`` or by raw stores into
the ring followed by the doorbell. A case ends in one of two ways, checked within a timeout:

* completed: the sentinel's signal reaches 0 and the read index equals the write index;
* stopped: the queue's error callback reported a status (``queue.check()`` raises an
  HSAError), which is never the simulator's "internal error" status 0x1016.

A packet whose header type is INVALID is never fetched; the case checks that, then publishes a
barrier over it. No exception may escape a simulator thread, the executor only ever sees
dispatches that passed validation, a fresh queue keeps working, and at the end every object is
released. ``HSAPY_FUZZ_CASES`` / ``HSAPY_FUZZ_SEED`` set the count and seed; a failure prints
the seed, the case and its packets (``hsapy.aql.explain`` of each).
"""
from __future__ import annotations

import os
import struct
import threading
import time

import numpy as np
import pytest

import hsapy
from hsapy import aql
from hsapy._lifetime import live_counts
from hsapy.errors import HSAError
from hsapy.signal import Condition

CASES = int(os.environ.get("HSAPY_FUZZ_CASES", "600"))
SEED = int(os.environ.get("HSAPY_FUZZ_SEED", "20261211"))
INTERNAL_ERROR = 0x1016          # HSA_STATUS_ERROR_EXCEPTION: "internal simulator error"
WAIT_S = 10.0

VENDOR, INVALID, DISPATCH, BARRIER_AND, AGENT, BARRIER_OR = range(6)
_DISPATCH_BODY = struct.Struct("<3HH3III4Q")     # bytes 4..63 of hsa_kernel_dispatch_packet_t
_BARRIER_BODY = struct.Struct("<I5QQQ")          # bytes 4..63 of hsa_barrier_and/or_packet_t
_VALUE_BODY = struct.Struct("<IQqqIIQQQ")        # bytes 4..63 of hsa_amd_barrier_value_packet_t
U64 = (1 << 64) - 1


class CheckingExecutor:
    """Stands in for the ISA interpreter: records what the packet processor hands it and any
    dispatch that should have been refused before reaching an executor."""

    def __init__(self, lib_ref: list) -> None:
        self.lib_ref = lib_ref
        self.count = 0
        self.violations: list[str] = []

    def execute(self, ctx) -> None:
        self.count += 1
        profile = ctx.agent
        wg, grid = ctx.workgroup_size, ctx.grid_size
        problems = []
        if not 1 <= ctx.setup_dims <= 3:
            problems.append(f"dims {ctx.setup_dims}")
        if min(wg) < 1 or min(grid) < 1:
            problems.append(f"zero size: workgroup {wg} grid {grid}")
        if any(w > m for w, m in zip(wg, profile.workgroup_max_dim)):
            problems.append(f"workgroup {wg} over {profile.workgroup_max_dim}")
        if wg[0] * wg[1] * wg[2] > profile.workgroup_max_size:
            problems.append(f"workgroup {wg} over {profile.workgroup_max_size} work-items")
        if ctx.group_segment_size > profile.lds_size:
            problems.append(f"LDS {ctx.group_segment_size}")
        if ctx.kernel_object not in self.lib_ref[0].kernel_objects:
            problems.append(f"kernel_object {ctx.kernel_object:#x}")
        if problems:
            self.violations.append(f"dispatch {ctx.dispatch_id}: {', '.join(problems)}")


class Fuzzer:
    def __init__(self, rt, executor: CheckingExecutor, seed: int) -> None:
        from hsapy.asm import kernels

        self.rt = rt
        self.executor = executor
        self.rng = np.random.default_rng(seed)
        self.agent = rt.gpu_agents[0]
        self.exe = rt.load(kernels.build("empty", self.agent.target), self.agent)
        self.kernel = self.exe.kernel("empty")
        self.zero = rt.create_signal(0)                     # dependencies that hold at once
        self.sinks = [rt.create_signal(1 << 40) for _ in range(4)]   # completion signals
        self.done = rt.create_signal(1)
        stale = rt.create_signal(0)                          # a destroyed signal's handle
        self.stale = stale.handle
        stale.close()
        self.queue = self.agent.create_queue(64)
        self.kernarg = self.agent.kernarg_pool.allocate(4096)
        self.outcomes: dict[str, int] = {}

    # -- field pools ------------------------------------------------------------------------
    def pick(self, *choices):
        return choices[int(self.rng.integers(len(choices)))]

    def good(self, valid, *invalid):
        """Mostly ``valid`` (so that most packets get past validation), else a bad value."""
        return valid if self.rng.random() < 0.97 or not invalid else self.pick(*invalid)

    def u(self, bits: int) -> int:
        return int(self.rng.integers(0, 1 << bits, dtype=np.uint64)) if bits < 64 else \
            int(self.rng.integers(0, 1 << 63, dtype=np.uint64)) * 2 + int(self.rng.integers(2))

    def signal_field(self, live) -> int:
        return self.good(self.pick(0, live.handle), live.handle + 8, self.u(64), self.stale)

    def completion_field(self) -> int:
        return self.good(self.pick(0, self.sinks[int(self.rng.integers(4))].handle),
                         self.u(64), self.zero.handle + 64 * 4096, self.stale)

    def size_field(self, limit: int) -> int:
        return self.good(self.pick(1, int(self.rng.integers(1, limit + 1))), 0, limit + 1,
                         self.u(16))

    def header(self, packet_type: int) -> int:
        fences = self.pick((2 << 9) | (2 << 11), 0, int(self.rng.integers(0, 16)) << 9)
        return packet_type | self.pick(0, 1 << 8) | fences

    # -- packets -----------------------------------------------------------------------------
    def dispatch(self) -> bytes:
        dims = self.good(self.pick(1, 2, 3), 0)
        wg = [self.size_field(1024 if axis == 0 else 16) if axis < dims else self.good(1, 0, 2)
              for axis in range(3)]
        grid = [self.good(int(self.rng.integers(1, 1 << 20)), 0, self.u(32)) if axis < dims
                else self.good(1, 0, 2) for axis in range(3)]
        kernel_object = self.good(self.kernel.kernel_object, self.kernel.kernel_object + 64, 0,
                                  self.u(64))
        setup = self.good(dims, self.u(16))
        word = self.header(DISPATCH) | setup << 16
        body = _DISPATCH_BODY.pack(*wg, self.u(16) if self.rng.random() < 0.2 else 0, *grid,
                                   self.pick(0, self.u(32)), self.pick(0, 1024, 65536, self.u(32)),
                                   kernel_object, self.pick(self.kernarg.address, 0, self.u(64)),
                                   self.pick(0, self.u(64)), self.completion_field())
        return struct.pack("<I", word) + body

    def barrier(self, packet_type: int) -> bytes:
        deps = [self.signal_field(self.zero) for _ in range(5)]
        body = _BARRIER_BODY.pack(self.pick(0, self.u(32)), *deps, self.pick(0, self.u(64)),
                                  self.completion_field())
        return struct.pack("<I", self.header(packet_type) | self.pick(0, self.u(16)) << 16) + body

    def barrier_value(self) -> bytes:
        signal = self.signal_field(self.zero)
        cond = self.good(self.pick(0, 1, 2, 3), 4, self.u(32))
        mask = self.pick(-1, 0, self.u(63))
        # Against the zero signal the condition must hold (0 & mask == 0), or the queue would
        # rightly wait forever: pick a compare value that satisfies it.
        value = {0: 0, 1: 1, 2: 1, 3: 0}.get(cond, self.u(63))
        amd_format = self.good(2, self.u(8))
        word = self.header(VENDOR) | amd_format << 16 | self.pick(0, self.u(8)) << 24
        body = _VALUE_BODY.pack(self.pick(0, self.u(32)), signal, value, mask, cond,
                                self.pick(0, self.u(32)), 0, 0, self.completion_field())
        return struct.pack("<I", word) + body

    def random_packet(self) -> bytes:
        raw = bytearray(self.rng.integers(0, 256, 64, dtype=np.uint8).tobytes())
        if raw[0] == INVALID:
            raw[0] = BARRIER_OR          # INVALID headers are the separate "stall" case
        return bytes(raw)

    def packet(self) -> bytes:
        kind = int(self.rng.integers(20))
        if kind <= 8:
            return self.dispatch()
        if kind <= 11:
            return self.barrier(BARRIER_AND)
        if kind <= 13:
            return self.barrier(BARRIER_OR)
        if kind <= 16:
            return self.barrier_value()
        if kind == 17:
            return struct.pack("<I", self.header(self.pick(AGENT, VENDOR, 6, 7, 128, 255)) |
                               self.u(16) << 16) + self.rng.integers(0, 256, 60,
                                                                     dtype=np.uint8).tobytes()
        return self.random_packet()

    # -- publishing -------------------------------------------------------------------------
    def publish(self, packets: list[bytes]) -> int:
        queue = self.queue
        if self.rng.random() < 0.5:
            return queue.publish_batch(packets)
        first = queue.reserve(len(packets))
        ring = queue.ring
        words = ring.view(np.uint32)
        for offset, packet in enumerate(packets):
            slot = (first + offset) & (queue.size - 1)
            ring[slot, 4:] = np.frombuffer(packet[4:], np.uint8)
            words[slot, 0] = struct.unpack_from("<I", packet)[0]    # header|setup last
        queue.ring_doorbell(first + len(packets) - 1)
        return first

    def sentinel(self) -> bytes:
        self.done.store(1)
        packet = aql.barrier_and([], completion_signal=self.done.handle)
        return struct.pack("<I", packet.word) + packet.body

    def fresh_queue(self) -> None:
        self.queue.close()
        self.queue = self.agent.create_queue(64)

    def describe(self, case: int, packets: list[bytes]) -> str:
        lines = [f"seed {SEED} case {case}:"]
        for packet in packets:
            try:
                text = aql.explain(packet)
            except Exception as exc:     # explain() is not what is tested here
                text = f"(explain failed: {exc!r})"
            lines.append(f"  {packet.hex()}\n    " + text.replace("\n", "\n    "))
        return "\n".join(lines)

    # -- one case ---------------------------------------------------------------------------
    def case(self, case: int) -> str:
        if self.rng.random() < 0.02:
            return self.invalid_header_stalls(case)
        packets = [self.packet() for _ in range(int(self.rng.integers(1, 5)))]
        packets.append(self.sentinel())
        where = self.describe(case, packets)
        first = self.publish(packets)
        try:
            value = self.wait_done()
        except HSAError as exc:
            status, message = self.rt.lib.sim_queue_error(self.queue.cdata)
            assert status == exc.status, where
            assert status != INTERNAL_ERROR, f"simulator error: {message}\n{where}"
            self.fresh_queue()
            return "stopped"
        except Exception as exc:
            pytest.fail(f"{type(exc).__name__}: {exc}\n{where}")
        assert value == 0, where
        end = first + len(packets)
        assert self.queue.load_read_index() == self.queue.load_write_index() == end, where
        return "completed"

    def wait_done(self) -> int:
        """Poll the sentinel and the queue's error (Signal.wait checks ``abort`` only between
        its 50 ms slices, which would make a stopped queue cost a slice per case)."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            self.queue.check()
            value = self.done.load()
            if value < 1:
                return value
            time.sleep(0.0002)
        return self.done.wait(Condition.LT, 1, timeout=0.0, abort=self.queue.check)

    def invalid_header_stalls(self, case: int) -> str:
        """A published INVALID header is not fetched; once replaced by a barrier, it runs."""
        queue = self.queue
        packet = bytearray(self.random_packet())
        packet[0] = INVALID
        index = self.publish([bytes(packet)])
        deadline = time.monotonic() + WAIT_S
        while queue.load_read_index() < index and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(0.01)
        where = f"seed {SEED} case {case}: INVALID header {bytes(packet).hex()}"
        assert queue.load_read_index() == index and queue.error is None, where
        sentinel = aql.split(self.sentinel())
        queue.write(index, sentinel.word, sentinel.body)
        queue.ring_doorbell(index)
        assert self.done.wait(Condition.LT, 1, timeout=WAIT_S, abort=queue.check) == 0, where
        return "stalled on INVALID"

    def healthy(self) -> None:
        """A fresh queue runs real dispatches and barriers."""
        self.fresh_queue()
        prepared = self.kernel.prepare(self.queue, 256, 64)
        results = [prepared() for _ in range(5)]
        self.done.store(1)
        self.queue.publish(aql.barrier_and([r.signal.handle for r in results],
                                           completion_signal=self.done.handle))
        assert self.done.wait(Condition.LT, 1, timeout=WAIT_S, abort=self.queue.check) == 0

    def close(self) -> None:
        self.queue.close()
        self.kernarg.close()
        for signal in [self.zero, self.done, *self.sinks]:
            signal.close()
        self.exe.close()


def processor_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("hsapy-sim-queue")]


def test_arbitrary_packets_complete_or_stop_the_queue_cleanly():
    escaped: list[str] = []
    previous_hook = threading.excepthook
    threading.excepthook = lambda args: escaped.append(
        f"{args.thread.name if args.thread else '?'}: {args.exc_type.__name__}: {args.exc_value}")
    lib_ref: list = []
    executor = CheckingExecutor(lib_ref)
    try:
        before = live_counts()
        with hsapy.Runtime(backend="sim", targets=["gfx942"], executor=executor) as rt:
            lib_ref.append(rt.lib)
            fuzzer = Fuzzer(rt, executor, SEED)
            for case in range(CASES):
                outcome = fuzzer.case(case)
                fuzzer.outcomes[outcome] = fuzzer.outcomes.get(outcome, 0) + 1
            fuzzer.healthy()
            fuzzer.close()
            print(f"packet fuzz: {CASES} cases, seed {SEED}: {fuzzer.outcomes}, "
                  f"{executor.count} dispatches reached the executor")
        assert not escaped, escaped
        assert not executor.violations, executor.violations[:5]
        assert live_counts() == before
        deadline = time.monotonic() + WAIT_S       # packet processor threads have exited
        while processor_threads() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not processor_threads()
    finally:
        threading.excepthook = previous_hook
    assert fuzzer.outcomes.get("completed", 0) > CASES // 20
    assert fuzzer.outcomes.get("stopped", 0) > CASES // 20
    assert executor.count > CASES // 20
