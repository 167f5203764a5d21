"""Step 3: signals -- the int64 objects every completion, dependency and doorbell goes through.

    python3 examples/03_signals.py [--backend auto|sim|rocr|rocr-sim]

HSA calls (hsa.h): hsa_signal_create / _destroy, hsa_signal_store_screlease / _relaxed,
hsa_signal_load_scacquire, hsa_signal_add/subtract/exchange/cas_scacq_screl, and
hsa_signal_wait_scacquire(signal, condition, value, timeout_hint, wait_state).
Conditions (hsa_signal_condition_t): EQ 0, NE 1, LT 2, GTE 3. The usual completion pattern:
create at 1, the packet processor decrements by 1, wait until value LT 1.
hsa_signal_wait_* may return early (its timeout is a hint), so hsapy's Signal.wait loops until
the condition holds or the deadline passes and then raises WaitTimeoutError -- every wait has one.
"""
from __future__ import annotations

import argparse
import threading
import time

import hsapy
from hsapy.errors import WaitTimeoutError
from hsapy.signal import Condition


def expect(what: str, got: int, want: int) -> None:
    print(f"  {what:<44} -> {got}")
    if got != want:
        raise SystemExit(f"FAILED: {what} gave {got}, expected {want}")


def main(backend: str | None) -> None:
    with hsapy.Runtime(backend=backend) as rt:
        print(f"backend {rt.backend}; timestamp frequency {rt.timestamp_frequency} Hz "
              "(the unit of hsa_signal_wait's timeout hint)")
        signal = rt.create_signal(5)                                 # hsa_signal_create(5, ...)
        print(f"signal handle {signal.handle:#x}")
        expect("load (scacquire)", signal.load(), 5)
        signal.store(7)
        expect("store 7, load", signal.load(), 7)
        signal.subtract(1)                                           # what a completion does
        expect("subtract 1", signal.load(), 6)
        signal.add(10)
        expect("add 10", signal.load(), 16)
        expect("exchange(3) returns the old value", signal.exchange(3), 16)
        expect("cas(3 -> 1) returns the observed value", signal.cas(3, 1), 3)
        expect("cas(3 -> 9) fails: observed", signal.cas(3, 9), 1)

        # Waits that are already satisfied return the observed value at once.
        print("waits on value 1:")
        expect("wait EQ 1", signal.wait(Condition.EQ, 1, timeout=1.0), 1)
        expect("wait NE 0", signal.wait(Condition.NE, 0, timeout=1.0), 1)
        expect("wait GTE 1", signal.wait(Condition.GTE, 1, timeout=1.0), 1)

        # A wait that cannot be satisfied ends with WaitTimeoutError, never a hang.
        started = time.perf_counter()
        try:
            signal.wait(Condition.LT, 1, timeout=0.1)
        except WaitTimeoutError as exc:
            print(f"  wait LT 1, timeout 0.1 s -> {type(exc).__name__} after "
                  f"{time.perf_counter() - started:.2f} s (value still {signal.load()})")
        else:
            raise SystemExit("FAILED: a wait for a value the signal never had returned")

        # Another thread (standing in for a GPU or the copy engine) completes the work later.
        def complete_later() -> None:
            time.sleep(0.05)
            signal.subtract(1)                                       # 1 -> 0

        worker = threading.Thread(target=complete_later)
        started = time.perf_counter()
        worker.start()
        observed = signal.wait(Condition.LT, 1, timeout=5.0)         # blocked, woken by the store
        worker.join()
        print(f"  woken by another thread after {1e3 * (time.perf_counter() - started):.0f} ms")
        expect("wait LT 1 (completion pattern)", observed, 0)
        signal.close()

        # A signal pool hands the same signals out again: never create one per dispatch.
        pool = rt.signal_pool
        first = pool.acquire(1)
        handle = first.handle
        pool.release(first)
        again = pool.acquire(1)
        print(f"signal pool: released {handle:#x}, acquired {again.handle:#x} "
              f"(created so far: {pool.created})")
        if again.handle != handle or again.load() != 1:
            raise SystemExit("FAILED: the signal pool did not reuse the released signal")
        pool.release(again)
        print("OK: signal operations, conditions, timeouts and reuse behaved as hsa.h says")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("auto", "sim", "rocr", "rocr-sim"), default=None,
                        help="HSA runtime (default: auto, or HSAPY_BACKEND)")
    try:
        main(parser.parse_args().backend)
    except hsapy.BackendUnavailableError as exc:    # e.g. --backend rocr without an AMD GPU
        raise SystemExit(f"{parser.prog}: {exc}") from None
