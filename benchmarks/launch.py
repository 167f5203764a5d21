"""Host cost of publishing a kernel dispatch, per mode, as JSON lines.

    python benchmarks/launch.py [--backend sim|rocr] [--target gfx942] [--repeats 20]

Each line: mode (plain, prepared, prepared_result, batch256, python_call, c_timed_each,
c_floor, c_floor_consumed), doorbell
(whether the timed cost includes ringing the doorbell), api (the call timed), median_us, p5_us,
p95_us, min_us, ratio_to_floor, n, simulated. ``prepared`` times ``prepared.publish()`` (without
the doorbell) and ``prepared.submit()`` (with it), the prepared fast path (take a kernarg slot,
pack, publish; it returns the packet index);
``prepared_result`` times ``prepared(doorbell=False)`` and ``prepared()``, the same plus
building the DispatchResult a caller waits on; ``plain`` (``kernel.launch(..., wait=False)``,
which rings the doorbell, called through a lambda) does the work of ``prepared()`` once the
launch cache holds its preparation. ``python_call`` is a yardstick for the interpreter itself:
an empty Python function timed the same way, so numbers from machines (or moments) of different
speed can be compared.
The modes take turns, five bursts at a time (``--turn``), so a change of machine speed during
the run affects all of them alike while each mode still runs mostly after its own kind.

What is timed is the publishing thread only, in bursts that fit the queue: between bursts the
doorbell is rung and completion awaited (untimed), so a slow consumer never shows up as host
cost. That wait is active (hsa.h's HSA_WAIT_STATE_ACTIVE: the thread stays on its CPU), a C
loop polling the signal's value word with the GIL released so the simulator's packet processor
runs meanwhile; see ``active_wait_below``. A thread that sleeps through the wait instead comes
back to a cold CPU, where its first microseconds of Python run several times slower than after
an equal busy spin, the more so the longer it slept (small virtual machines show it most). Where
signals are not amd_signal_t (no value word to poll) the wait sleeps in short naps instead.
Even an active wait leaves the first microseconds after it slow on the simulator, whose packet
processor is host CPU work (each step of a batch costs several times its steady cost straight
after one): a prepared burst's median is its steady state regardless, but a batch is one sample,
so ``batch256`` times each batch right after an untimed one published just before it, both
announced by the timed batch's doorbell (hsapy.bench.time_batches(warm=True)), on a queue of
its own that holds both. On the simulator the executor is the null executor (packets are
consumed, kernels are not run). ``c_floor`` is a C loop doing the same ring writes (reserve an
index, copy the 60-byte body, release-store header|setup) compiled at run time with the system
C compiler through cffi, timed as a whole loop of a burst (one sample per burst, divided by the
burst): the cost of the protocol itself with no Python in the way, and the floor
``ratio_to_floor`` divides by. ``c_timed_each`` is the same loop with two clock reads around
every packet, as the Python rows are timed: it shows what a per-call clock adds to a few
nanoseconds of work (mostly the clock itself), so it is no floor. ``c_floor_consumed`` is
``c_floor``'s loop plus its doorbell store, on a ring that a C thread on another CPU empties
between bursts the way a packet processor does (it reads each packet and stores an INVALID
header into its slot): what the protocol costs once another core (on a GPU, the command
processor across the bus) has written the lines the producer writes next. Each of those lines
is then a coherence miss that ``c_floor``'s ring, read by nobody, never pays, and that the
simulator's packet processor imposes on ``batch256`` too. It varies with where the two threads
land (sharing a cache or not), so it is a diagnostic beside the floor, not the floor.
The C rows are compiled at run time with the system C compiler (gcc and Python's headers).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from hsapy.bench import BURST
from hsapy.bench import summarize as _stats

C_FLOOR_SOURCE = r"""
#ifndef _GNU_SOURCE
#define _GNU_SOURCE                 /* sched_getcpu, pthread_setaffinity_np */
#endif
#include <stdint.h>
#include <string.h>
/* The AQL producer protocol without a runtime: reserve, write bytes 4..63, release-store the
   first 32 bits. `write_index` stands in for hsa_queue_add_write_index_scacq_screl. */
double publish_loop(uint8_t *ring, uint32_t size, const uint8_t *body, uint32_t word,
                    uint64_t *write_index, uint32_t count, double *per_packet_ns,
                    uint64_t (*now)(void)) {
    for (uint32_t i = 0; i < count; i++) {
        uint64_t t0 = now();
        uint64_t index = __atomic_fetch_add(write_index, 1, __ATOMIC_ACQ_REL);
        uint8_t *slot = ring + (index & (size - 1)) * 64;
        memcpy(slot + 4, body, 60);
        __atomic_store_n((uint32_t *)slot, word, __ATOMIC_RELEASE);
        per_packet_ns[i] = (double)(now() - t0);
    }
    return 0.0;
}
/* The same loop timed as a whole: two clock reads per `count` packets, so the figure is the
   protocol's cost and not the clock's. Returns nanoseconds for the whole loop. */
uint64_t monotonic_ns(void);
uint64_t publish_loop_whole(uint8_t *ring, uint32_t size, const uint8_t *body, uint32_t word,
                            uint64_t *write_index, uint32_t count) {
    uint64_t t0 = monotonic_ns();
    for (uint32_t i = 0; i < count; i++) {
        uint64_t index = __atomic_fetch_add(write_index, 1, __ATOMIC_ACQ_REL);
        uint8_t *slot = ring + (index & (size - 1)) * 64;
        memcpy(slot + 4, body, 60);
        __atomic_store_n((uint32_t *)slot, word, __ATOMIC_RELEASE);
    }
    return monotonic_ns() - t0;
}
/* The same loop against a consumer. A packet processor empties the ring: it reads each packet
   and stores an INVALID header into its slot. So the lines a producer writes next were last
   written by another core (a GPU's command processor writes them across the bus), and every
   line costs the producer a coherence miss that a ring nobody reads never costs. Here a C
   thread on another core consumes as a packet processor does: it waits for the doorbell word,
   takes the packets up to the value rung, reads each one's header and kernarg address, stores
   `invalid` into the header and advances the read index. A burst is timed as a whole, its
   doorbell store included; the wait for the consumer to empty the ring is not timed. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
struct consumed {
    uint8_t *ring;
    uint32_t size, invalid;
    int stop;
    uint64_t seen;                                  /* kernarg addresses read, summed */
    pthread_t thread;
    _Alignas(64) uint64_t write_index;
    _Alignas(64) uint64_t read_index;
    _Alignas(64) int64_t doorbell;
};
static void *consume(void *arg) {
    struct consumed *c = arg;
    uint64_t next = 0, seen = 0;
    while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
        int64_t bell = __atomic_load_n(&c->doorbell, __ATOMIC_ACQUIRE);
        while ((int64_t)next <= bell) {
            uint8_t *slot = c->ring + (next & (c->size - 1)) * 64;
            if ((__atomic_load_n((uint32_t *)slot, __ATOMIC_ACQUIRE) & 0xff) == (c->invalid & 0xff))
                continue;                           /* rung but not yet published */
            uint64_t kernarg;
            memcpy(&kernarg, slot + 40, 8);
            seen += kernarg;
            __atomic_store_n((uint32_t *)slot, c->invalid, __ATOMIC_RELEASE);
            __atomic_store_n(&c->read_index, ++next, __ATOMIC_RELEASE);
        }
    }
    c->seen = seen;
    return NULL;
}
struct consumed *consumed_open(uint32_t size, uint32_t invalid) {
    struct consumed *c;
    if (posix_memalign((void **)&c, 64, sizeof *c))
        return NULL;
    memset(c, 0, sizeof *c);
    c->size = size;
    c->invalid = invalid;
    c->doorbell = -1;
    if (posix_memalign((void **)&c->ring, 64, (size_t)size * 64)) {
        free(c);
        return NULL;
    }
    for (uint32_t i = 0; i < size; i++)
        memcpy(c->ring + (size_t)i * 64, &invalid, 4);
    if (pthread_create(&c->thread, NULL, consume, c)) {
        free(c->ring);
        free(c);
        return NULL;
    }
    /* on another CPU than the producer's, when there is one: a consumer sharing the
       producer's CPU would leave the lines in its cache and time nothing of the protocol */
    cpu_set_t cpus;
    int here = sched_getcpu();
    if (here >= 0 && !sched_getaffinity(0, sizeof cpus, &cpus) && CPU_COUNT(&cpus) > 1) {
        CPU_CLR(here, &cpus);
        pthread_setaffinity_np(c->thread, sizeof cpus, &cpus);
    }
    return c;
}
/* One burst of `count` packets; nanoseconds for it, or 0 when the consumer did not empty the
   ring within `timeout_ns` afterwards. */
uint64_t monotonic_ns(void);
uint64_t consumed_burst(struct consumed *c, const uint8_t *body, uint32_t word, uint32_t count,
                        uint64_t timeout_ns) {
    uint64_t t0 = monotonic_ns(), index = 0;
    for (uint32_t i = 0; i < count; i++) {
        index = __atomic_fetch_add(&c->write_index, 1, __ATOMIC_ACQ_REL);
        uint8_t *slot = c->ring + (index & (c->size - 1)) * 64;
        memcpy(slot + 4, body, 60);
        __atomic_store_n((uint32_t *)slot, word, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&c->doorbell, (int64_t)index, __ATOMIC_RELEASE);
    uint64_t elapsed = monotonic_ns() - t0, deadline = t0 + elapsed + timeout_ns;
    for (uint32_t i = 1; __atomic_load_n(&c->read_index, __ATOMIC_ACQUIRE) <= index; i++)
        if ((i & 4095) == 0 && monotonic_ns() > deadline)
            return 0;
    return elapsed ? elapsed : 1;
}
/* Slots whose header is INVALID (free), for the benchmark's own test. */
uint32_t consumed_free_slots(struct consumed *c) {
    uint32_t free_slots = 0;
    for (uint32_t i = 0; i < c->size; i++)
        free_slots += __atomic_load_n((uint32_t *)(c->ring + (size_t)i * 64), __ATOMIC_ACQUIRE)
                      == c->invalid;
    return free_slots;
}
/* Stop the consumer; returns the sum of the kernarg addresses it read. */
uint64_t consumed_close(struct consumed *c) {
    __atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
    pthread_join(c->thread, NULL);
    uint64_t seen = c->seen;
    free(c->ring);
    free(c);
    return seen;
}
#include <time.h>
uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* The untimed wait between bursts: poll a signal's value word until it is below `bound` or
   `timeout_ns` passed (returns 1 or 0). cffi releases the GIL for the call, so the simulator's
   packet processor thread runs meanwhile. No PAUSE in the loop: under KVM a PAUSE loop makes
   the vCPU exit to the host (pause-loop exiting), which measured no better than sleeping. */
int active_wait_below(const int64_t *value, int64_t bound, uint64_t timeout_ns) {
    uint64_t deadline = monotonic_ns() + timeout_ns;
    for (uint32_t i = 1;; i++) {
        if (__atomic_load_n(value, __ATOMIC_ACQUIRE) < bound)
            return 1;
        if ((i & 4095) == 0 && monotonic_ns() > deadline)
            return 0;
    }
}
"""


def _compile_helpers() -> object:
    """The C side of this benchmark (C_FLOOR_SOURCE): cffi writes the extension's C source and
    the system C compiler builds it. (cffi's own ``compile`` goes through setuptools, which a
    Python 3.12+ virtual environment does not have unless asked for.)"""
    import importlib.machinery
    import importlib.util
    import subprocess

    import cffi

    from hsapy.toolchain.tools import host_c_compiler

    builder = cffi.FFI()
    builder.cdef("double publish_loop(uint8_t *, uint32_t, const uint8_t *, uint32_t, uint64_t *,"
                 " uint32_t, double *, uint64_t (*)(void)); uint64_t monotonic_ns(void);"
                 "uint64_t publish_loop_whole(uint8_t *, uint32_t, const uint8_t *, uint32_t,"
                 " uint64_t *, uint32_t);"
                 "int active_wait_below(const int64_t *, int64_t, uint64_t);"
                 "struct consumed *consumed_open(uint32_t, uint32_t);"
                 "uint64_t consumed_burst(struct consumed *, const uint8_t *, uint32_t,"
                 " uint32_t, uint64_t); uint32_t consumed_free_slots(struct consumed *);"
                 "uint64_t consumed_close(struct consumed *);")
    name = "_hsapy_launch_floor"
    builder.set_source(name, C_FLOOR_SOURCE)
    compiler, include = host_c_compiler()
    if compiler is None or not Path(include, "Python.h").exists():
        raise SystemExit("benchmarks/launch.py builds its C rows with a C compiler and Python's "
                         "headers: install gcc and python3-dev (or set CC)")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp, name + ".c")
        with contextlib.redirect_stdout(io.StringIO()):     # cffi prints "generating <file>"
            builder.emit_c_code(str(source))
        library = Path(tmp, name + (importlib.machinery.EXTENSION_SUFFIXES[0]))
        command = [compiler, "-shared", "-fPIC", "-O2", "-pthread", f"-I{include}", str(source),
                   "-o", str(library)]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise SystemExit("compiling benchmarks/launch.py's C rows failed:\n"
                             + " ".join(command) + "\n" + proc.stdout + proc.stderr)
        spec = importlib.util.spec_from_file_location(name, library)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


def c_timed_each_sampler(module: object) -> Callable[[], list[float]]:
    """One burst of the same ring writes in C (``_compile_helpers``), each packet timed with
    two clock reads: per-packet seconds, the clock's cost included (row ``c_timed_each``)."""
    ffi, lib = module.ffi, module.lib
    ring = ffi.new("uint8_t[]", BURST * 64)
    body = ffi.new("uint8_t[]", bytes(range(60)))
    index = ffi.new("uint64_t *")
    times = ffi.new("double[]", BURST)

    def burst() -> list[float]:
        lib.publish_loop(ring, BURST, body, 0x00031402, index, BURST, times, lib.monotonic_ns)
        # The timer's own cost is inside each sample; report it as measured.
        return [times[i] * 1e-9 for i in range(BURST)]

    return burst


def c_floor_sampler(module: object) -> Callable[[], list[float]]:
    """One burst of the same ring writes in C timed as a whole loop (no clock read per
    packet): seconds per packet, one sample per burst (row ``c_floor``, the floor)."""
    ffi, lib = module.ffi, module.lib
    ring = ffi.new("uint8_t[]", BURST * 64)
    body = ffi.new("uint8_t[]", bytes(range(60)))
    index = ffi.new("uint64_t *")

    def burst() -> list[float]:
        return [lib.publish_loop_whole(ring, BURST, body, 0x00031402, index, BURST)
                * 1e-9 / BURST]

    return burst


def c_floor_consumed_sampler(module: object, size: int) -> Callable[[int], list[float]]:
    """``n`` -> ``n`` bursts of the same ring writes in C, each timed as a whole with its
    doorbell store, on a ring of ``size`` slots that a C thread empties between bursts as a
    packet processor does (row ``c_floor_consumed``): seconds per packet, one sample per burst.
    The consumer thread lives for one call, so it spins only while this row is sampled."""
    from hsapy.queue import INVALID_WORD

    ffi, lib = module.ffi, module.lib
    body = ffi.new("uint8_t[]", bytes(range(60)))

    def bursts(n: int) -> list[float]:
        ring = lib.consumed_open(size, INVALID_WORD)
        if ring == ffi.NULL:
            raise MemoryError("c_floor_consumed: could not allocate its ring or start its "
                              "consumer thread")
        try:
            samples = []
            for _ in range(n):
                ns = lib.consumed_burst(ring, body, 0x00031402, BURST, CONSUMED_TIMEOUT_NS)
                if not ns:
                    raise TimeoutError(f"c_floor_consumed: the consumer thread did not empty "
                                       f"the ring within {CONSUMED_TIMEOUT_NS / 1e9:g} s")
                samples.append(ns * 1e-9 / BURST)
            return samples
        finally:
            lib.consumed_close(ring)

    return bursts


CONSUMED_TIMEOUT_NS = 5_000_000_000   # the C consumer empties 256 packets in microseconds
TURN = 5          # bursts a mode runs before the next mode's turn (--turn)
ACTIVE_SLICE_NS = 50_000_000   # an active wait looks at the queue's state this often


def active_settle(module: object, runtime: object) -> Callable[[object, object], None]:
    """settle(queue, signal) for hsapy.bench: hsapy.bench._settle with the active wait
    (``active_wait_below``) as its slice, so the queue is checked between slices and the
    wait ends at hsapy.bench.WAIT_TIMEOUT; _settle's sleeping poll where signals have no
    amd_signal_t value word."""
    from hsapy.bench import _settle
    from hsapy.signal import value_words

    ffi, lib = module.ffi, module.lib

    def settle(queue: object, signal: object) -> None:
        words = value_words(runtime, signal)
        if words is None:
            _settle(queue, signal)
            return
        value = ffi.from_buffer("int64_t[]", words) + 1       # amd_signal_t.value
        _settle(queue, signal, lambda: bool(lib.active_wait_below(value, 1, ACTIVE_SLICE_NS)))
        queue.check()

    return settle


def _nothing() -> None:
    """The python_call reference: an empty Python function, timed like a dispatch."""


def measure(backend: str, target: str, repeats: int, turn: int = TURN) -> list[dict]:
    """Every mode's row, from ``repeats`` bursts each. The modes take turns, ``turn`` bursts
    at a time, so a machine that changes speed while this runs (shared or throttled CPUs do)
    slows them alike, while each mode still runs mostly after its own kind."""
    from hsapy.bench import (
        LaunchSetup,
        _time_each,
        time_batches,
        time_bursts,
        warm_batch_queue_size,
    )
    from hsapy.runtime import Runtime

    helpers = _compile_helpers()
    floor, timed_each = c_floor_sampler(helpers), c_timed_each_sampler(helpers)
    with contextlib.ExitStack() as stack:
        rt = stack.enter_context(
            Runtime(backend=backend, executor="null" if backend == "sim" else None))
        settle = active_settle(helpers, rt)
        setup = stack.enter_context(LaunchSetup(rt, target))
        empty, queue, wg = setup.kernel, setup.queue, setup.workgroup
        prepared = setup.prepared
        # plain launches get their own queue, hence their own kernarg ring: each one
        # prepares afresh, and sharing the ring would leave every slot holding another
        # launch's hidden arguments when the prepared modes come round
        plain_queue = stack.enter_context(setup.agent.create_queue(size=queue.size))
        # batches are timed in pairs (see time_batches(warm=True)): a queue holding two
        batch_queue = stack.enter_context(
            setup.agent.create_queue(size=warm_batch_queue_size(setup.agent)))
        batched = empty.prepare(batch_queue, wg, wg)
        # the C loop against a consumer, on a ring the size of the batches' queue
        consumed = c_floor_consumed_sampler(helpers, batch_queue.size)
        # the timed loop calls them itself, as a caller writes it: no lambda's frame
        publish, submit = prepared.publish, prepared.submit
        # each sampler: n bursts -> seconds per dispatch
        modes: list[tuple[dict, Callable[[int], list[float]]]] = [
            # plain: validate + build the packet + pack + publish + doorbell, per call
            ({"mode": "plain", "doorbell": True, "api": "kernel.launch(wait=False)"},
             lambda n: time_bursts(
                 plain_queue, lambda: empty.launch(plain_queue, [], wg, wg, wait=False), n,
                 settle=settle)),
            # prepared: the fast path (kernarg slot, pack, publish; returns the index)
            ({"mode": "prepared", "doorbell": False, "api": "prepared.publish()"},
             lambda n: time_bursts(queue, publish, n, settle=settle)),
            ({"mode": "prepared", "doorbell": True, "api": "prepared.submit()"},
             lambda n: time_bursts(queue, submit, n, settle=settle)),
            # the same plus building the DispatchResult a caller waits on, without and with
            # the doorbell (plain launches always ring it: compare them with the second)
            ({"mode": "prepared_result", "doorbell": False, "api": "prepared(doorbell=False)"},
             lambda n: time_bursts(queue, prepared, n, doorbell=False, settle=settle)),
            ({"mode": "prepared_result", "doorbell": True, "api": "prepared()"},
             lambda n: time_bursts(queue, prepared, n, settle=settle)),
            # one sample per batch, each timed right after an untimed batch published just
            # before it (its doorbell announces both): batches back to back, as a prepared
            # burst's median is its calls after the first ones, not straight after a wait
            ({"mode": "batch256", "doorbell": True, "api": "prepared.batch()"},
             lambda n: time_batches(batched, n, BURST, settle=settle, warm=True)),
            # what this interpreter costs right now: an empty function call, timed alike
            ({"mode": "python_call", "doorbell": False, "api": "an empty Python function"},
             lambda n: _time_each(_nothing, n, BURST, lambda: None)),
            # the C loop with two clock reads around each packet: what a per-call timing
            # of a few nanoseconds of work reports (mostly the clock)
            ({"mode": "c_timed_each", "doorbell": False,
              "api": "C loop (cffi), each packet timed"},
             lambda n: [t for _ in range(n) for t in timed_each()]),
            # the floor: the same C loop timed as a whole, per packet
            ({"mode": "c_floor", "doorbell": False, "api": "C loop (cffi), timed whole"},
             lambda n: [t for _ in range(n) for t in floor()]),
            # the same loop with its doorbell, on a ring a consumer thread empties as a
            # packet processor does: the protocol's cost once another core reads the ring
            ({"mode": "c_floor_consumed", "doorbell": True,
              "api": "C loop (cffi) against a consumer thread, timed whole"},
             consumed),
        ]
        samples: list[list[float]] = [[] for _ in modes]
        for done in range(0, repeats, turn):
            for taken, (_row, sampler) in zip(samples, modes):
                taken.extend(sampler(min(turn, repeats - done)))
    rows = []
    for (row, _sampler), taken in zip(modes, samples):
        rows.append({**row, **_stats(taken),
                     "simulated": backend == "sim" and row["mode"] not in (
                         "c_floor", "c_floor_consumed", "c_timed_each", "python_call")})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="sim", choices=("sim", "rocr"))
    parser.add_argument("--target", default="gfx942")
    parser.add_argument("--repeats", type=int, default=20, help="bursts of 256 per mode")
    parser.add_argument("--turn", type=int, default=TURN,
                        help="bursts a mode runs before the next mode's turn")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.turn < 1:
        parser.error("--repeats and --turn must be at least 1")
    rows = measure(args.backend, args.target, args.repeats, args.turn)
    floor = next(row["median_us"] for row in rows if row["mode"] == "c_floor")
    for row in rows:
        row["ratio_to_floor"] = row["median_us"] / floor if floor else None
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
