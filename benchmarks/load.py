"""Reliability under load: many dispatches from several host threads, as JSON lines.

    python benchmarks/load.py [--dispatches 1000000] [--threads 4] [--interp-dispatches 20000]
                              [--timeout 1800] [--tracemalloc]

Runs on the simulator. Each host thread owns one queue and drives it through the prepared
dispatch path (hsapy/dispatch.py) in rounds of 256 dispatches: 128 ``prepared.submit()``
(the fast path), 64 ``prepared()`` whose DispatchResult signals are each awaited, and one
``prepared.batch()`` of 64 awaited through its closing barrier-AND. Each queue ends with a
barrier-AND whose completion signal is awaited.

Checks, per run:

* no lost completion: the executor counts the dispatches it is handed per queue (it wraps the
  null executor -- packets consumed, kernels not run -- or the ISA interpreter), and that count
  must equal the dispatches published; every awaited signal reached 0; each queue's read index
  equals its write index; every kernarg-ring completion signal is back at 0.
  ``lost`` = (published - executed) + (write index - read index) + ring signals not at 0;
* no deadlock: every wait has a timeout, and a global watchdog (``--timeout``) fails the run
  with the threads' stacks if the workers have not finished;
* flat memory: RSS (/proc/self/status VmRSS), live handle-owning objects
  (``hsapy._lifetime.live_counts()``) and the garbage collector's object count are measured after
  a warm-up and at the end, with the same queues open (``--tracemalloc`` adds traced bytes, at a
  large cost in speed).

Lines: {"run": "null" | "interpreter", dispatches, threads, queues, wall_s, dispatches_per_s,
executed, completions_awaited, lost, deadlock, rss_start_mb, rss_end_mb, live_start, live_end,
gc_objects_start, gc_objects_end, live_after_close}, then {"run": "vector_add", ...} with the
checked results of a few vector_add dispatches on the interpreter.
"""
from __future__ import annotations

import argparse
import faulthandler
import gc
import json
import sys
import threading
import time
import tracemalloc
from typing import Any

import numpy as np

import hsapy
from hsapy import aql
from hsapy._lifetime import live_counts
from hsapy.signal import Condition

ROUND = 256           # dispatches per round: 128 submit + 64 called + one batch of 64
SUBMITS, CALLS, BATCH = 128, 64, 64
QUEUE_SIZE = 1024
WAIT_S = 30.0         # any single wait; the watchdog bounds the whole run


class CountingExecutor:
    """Counts the dispatches the packet processors hand over, per queue, then runs ``inner``.

    Each queue has one processor thread, so each queue's counter is updated by one thread."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.counts: dict[int, int] = {}

    def execute(self, ctx: Any) -> None:
        if self.inner is not None:
            self.inner.execute(ctx)
        counts = self.counts
        counts[ctx.queue_address] = counts.get(ctx.queue_address, 0) + 1


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


class Worker:
    """One host thread, one queue, one prepared dispatch."""

    def __init__(self, rt: Any, agent: Any, kernel: Any) -> None:
        self.rt = rt
        self.queue = agent.create_queue(QUEUE_SIZE)
        self.prepared = kernel.prepare(self.queue, 64, 64)
        self.fence = rt.create_signal(1)
        self.published = 0        # dispatch packets
        self.awaited = 0          # dispatches whose completion was observed through a signal
        self.error: BaseException | None = None

    def drive(self, count: int) -> None:
        prepared, queue = self.prepared, self.queue
        submit, batch_args = prepared.submit, [()] * BATCH
        done = 0
        while done + ROUND <= count:
            for _ in range(SUBMITS):
                submit()
            results = [prepared() for _ in range(CALLS)]
            batch = prepared.batch(batch_args)
            for result in results:
                result.signal.wait(Condition.LT, 1, timeout=WAIT_S, abort=queue.check)
            batch.wait(WAIT_S)
            self.awaited += CALLS + BATCH
            done += ROUND
        for _ in range(count - done):
            submit()
        self.published += count
        self.finish()

    def finish(self) -> None:
        """A barrier-AND after everything (barrier bit: it completes after every packet before
        it); its signal is awaited."""
        self.fence.store(1)
        self.queue.publish(aql.barrier_and([], completion_signal=self.fence.handle))
        self.fence.wait(Condition.LT, 1, timeout=WAIT_S, abort=self.queue.check)

    def run(self, count: int, start: threading.Barrier) -> None:
        try:
            start.wait(WAIT_S)
            self.drive(count)
        except BaseException as exc:  # reported by the main thread
            self.error = exc

    def unfinished(self) -> int:
        """write index - read index, plus kernarg-ring completion signals not back at 0."""
        queue = self.queue
        pending = queue.load_write_index() - queue.load_read_index()
        ring = self.prepared.ring
        return pending + sum(1 for signal in ring.signals if signal.load() != 0)

    def close(self) -> None:
        self.queue.close()
        self.fence.close()


def run_threads(workers: list[Worker], counts: list[int], timeout: float) -> bool:
    """Run every worker on its own thread; True when they all finished within ``timeout``."""
    start = threading.Barrier(len(workers))
    threads = [threading.Thread(target=w.run, args=(n, start), name=f"load-{i}", daemon=True)
               for i, (w, n) in enumerate(zip(workers, counts))]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(deadline - time.monotonic(), 0.0))
    if any(thread.is_alive() for thread in threads):
        print(f"watchdog: workers still running after {timeout:g} s; stacks:", file=sys.stderr)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        return False
    return True


def snapshot(trace: bool) -> dict[str, Any]:
    gc.collect()
    out = {"rss_mb": round(rss_mb(), 1), "live": live_counts(), "gc_objects": len(gc.get_objects())}
    if trace:
        out["traced_kb"] = round(tracemalloc.get_traced_memory()[0] / 1024, 1)
    return out


def run_load(dispatches: int, threads: int = 4, executor: str = "null",
             timeout: float = 1800.0, warmup: int = 2048, trace: bool = False,
             target: str = "gfx942") -> dict[str, Any]:
    """One measured run; see the module docstring for what it checks and returns."""
    from hsapy.asm import kernels
    from hsapy.sim.executors import NullExecutor, create_executor
    from hsapy.sim.targets import resolve_targets

    profile = resolve_targets([target])[0]
    inner = NullExecutor() if executor == "null" else create_executor(profile)
    counting = CountingExecutor(inner)
    live_before = live_counts()
    if trace:
        tracemalloc.start()
    with hsapy.Runtime(backend="sim", targets=[target], executor=counting) as rt:
        agent = rt.gpu_agents[0]
        exe = rt.load(kernels.build("empty", agent.target), agent)
        kernel = exe.kernel("empty")
        workers = [Worker(rt, agent, kernel) for _ in range(threads)]
        # Warm-up on the same queues: rings, arenas and caches exist before the first snapshot.
        ok = run_threads(workers, [warmup] * threads, timeout)
        warm_published = sum(w.published for w in workers)
        warm_awaited = sum(w.awaited for w in workers)
        start_state = snapshot(trace)
        counts = [dispatches // threads + (1 if i < dispatches % threads else 0)
                  for i in range(threads)]
        t0 = time.perf_counter()
        ok = ok and run_threads(workers, counts, timeout)
        wall = time.perf_counter() - t0
        end_state = snapshot(trace)
        errors = [repr(w.error) for w in workers if w.error is not None]
        published = sum(w.published for w in workers) - warm_published
        executed = sum(counting.counts.get(w.queue.address, 0) for w in workers) - warm_published
        unfinished = sum(w.unfinished() for w in workers) if ok else -1
        awaited = sum(w.awaited for w in workers) - warm_awaited
        processed = sum(counting.counts.get(w.queue.address, 0) for w in workers)
        lost = (sum(w.published for w in workers) - processed) + max(unfinished, 0)
        for worker in workers:
            worker.close()
        exe.close()
    if trace:
        tracemalloc.stop()
    result = {
        "run": executor if executor == "null" else "interpreter",
        "executor": type(inner).__name__,
        "dispatches": published, "threads": threads, "queues": threads,
        "wall_s": round(wall, 3), "dispatches_per_s": round(published / wall) if wall else 0,
        "executed": executed, "completions_awaited": awaited, "lost": lost,
        "unfinished": unfinished, "deadlock": not ok, "errors": errors,
        "rss_start_mb": start_state["rss_mb"], "rss_end_mb": end_state["rss_mb"],
        "live_start": start_state["live"], "live_end": end_state["live"],
        "gc_objects_start": start_state["gc_objects"], "gc_objects_end": end_state["gc_objects"],
        "live_after_close": live_counts(), "live_before": live_before, "warmup": warmup,
    }
    if trace:
        result["traced_kb_start"] = start_state["traced_kb"]
        result["traced_kb_end"] = end_state["traced_kb"]
    return result


def check_vector_add(launches: int = 8, n: int = 1000, target: str = "gfx942") -> dict[str, Any]:
    """A few vector_add dispatches on the interpreter, results checked against numpy."""
    from hsapy.asm import kernels

    rng = np.random.default_rng(11)
    mismatches = 0
    with hsapy.Runtime(backend="sim", targets=[target]) as rt:
        agent = rt.gpu_agents[0]
        with rt.load(kernels.build("vector_add", agent.target), agent) as exe, \
                agent.create_queue(256) as queue:
            prepared = exe.kernel("vector_add").prepare(queue, n, 64)
            pool = rt.system_pool
            for _ in range(launches):
                a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
                bufs = [pool.allocate(4 * n) for _ in range(3)]
                bufs[0].copy_from(a)
                bufs[1].copy_from(b)
                prepared(bufs[0], bufs[1], bufs[2], n).wait(WAIT_S)
                if not np.array_equal(bufs[2].numpy(np.float32), a + b):
                    mismatches += 1
                for buf in bufs:
                    buf.close()
    return {"run": "vector_add", "launches": launches, "elements": n, "mismatches": mismatches}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dispatches", type=int, default=1_000_000,
                        help="dispatches of the null-executor run (default 1,000,000)")
    parser.add_argument("--threads", type=int, default=4, help="host threads = queues")
    parser.add_argument("--interp-dispatches", type=int, default=20_000,
                        help="dispatches of the interpreter run (0 skips it)")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="global watchdog per run, seconds")
    parser.add_argument("--tracemalloc", action="store_true", help="also trace Python allocations")
    args = parser.parse_args(argv)
    failed = False
    runs = [("null", args.dispatches)]
    if args.interp_dispatches:
        runs.append(("interpreter", args.interp_dispatches))
    for executor, count in runs:
        result = run_load(count, args.threads, executor, args.timeout, trace=args.tracemalloc)
        print(json.dumps(result), flush=True)
        failed |= bool(result["lost"] or result["deadlock"] or result["errors"]
                       or result["live_start"] != result["live_end"]
                       or result["live_after_close"] != result["live_before"])
    check = check_vector_add()
    print(json.dumps(check), flush=True)
    failed |= bool(check["mismatches"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
