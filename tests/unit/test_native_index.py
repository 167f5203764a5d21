"""hsapy.sim.native_index: the compiled write-index fetch-and-add against the Python function it
stands in for (hsapy.sim.api_queues.compiled_add_write_index), argument by argument."""
from __future__ import annotations

import platform
import random
import sys
from types import BuiltinFunctionType

import numpy as np
import pytest

from hsapy.sim import native_index
from hsapy.sim.api_queues import NO_QUEUE, compiled_add_write_index
from hsapy.sim.queues import WRITE_INDEX_WORD

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64", "aarch64", "arm64"),
    reason="llvmlite's host JIT is tested on x86-64 and AArch64")


class _Queue:
    """What the two functions look at of a SimQueue: its token and amd_queue_t words."""

    def __init__(self, start: int) -> None:
        self.write_token = [start]
        self.words = np.zeros(32, np.uint64)
        self.words[WRITE_INDEX_WORD] = start
        self.struct_words = memoryview(self.words).cast("B").cast("Q")
        self.address = self.words.ctypes.data


class _Index:
    """An object that is an integer only through __index__."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


def _pair(start: int):
    """(builtin, its queue pointer, its _Queue), (Python function, pointer, _Queue): two
    independent worlds with the same starting index."""
    worlds = []
    for native in (True, False):
        queue, pointer = _Queue(start), object()
        pointers = {pointer: queue}

        def slow(q, value, pointers=pointers):
            raise AssertionError("only known queues are used here")

        python_add = compiled_add_write_index(pointers, [(None, None, None)], slow)
        if native:
            state = [pointer, queue.write_token, queue.address + 8 * WRITE_INDEX_WORD,
                     python_add]
            add = native_index.native_add_write_index(state)
            assert isinstance(add, BuiltinFunctionType), native_index.why_not()
        else:
            add = python_add
        worlds.append((add, pointer, queue))
    return worlds


def _outcome(add, pointer, queue, value):
    try:
        result = ("returned", add(pointer, value))
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
        result = ("raised", type(exc))
    return result, list(queue.write_token), int(queue.words[WRITE_INDEX_WORD])


VALUES = [0, 1, 7, 2**32, 2**63, 2**64 - 1, 2**64, -1, -(2**63), True, False, 1.0, None, "1",
          np.uint64(3), np.int64(-2), _Index(5), _Index(-1), 10**30]


@pytest.mark.parametrize("start", [0, 5, 2**63, 2**64 - 2])
def test_builtin_and_python_function_agree_on_every_argument(start):
    (native, pn, qn), (python, pp, qp) = _pair(start)
    rng = random.Random(start)
    for _ in range(400):
        value = rng.choice(VALUES)
        got = _outcome(native, pn, qn, value)
        want = _outcome(python, pp, qp, value)
        assert got == want, value


def test_builtin_wrong_queue_held_token_and_argument_count_go_the_python_way():
    queue = _Queue(10)
    calls = []

    def slow(*args):
        calls.append(args)
        return -1

    pointer = object()
    add = native_index.native_add_write_index(
        [pointer, queue.write_token, queue.address + 8 * WRITE_INDEX_WORD, slow])
    other = object()
    assert add(other, 1) == -1 and calls[-1] == (other, 1)
    assert add(NO_QUEUE, 1) == -1                 # NO_QUEUE names nobody's state: a miss
    assert add(pointer) == -1 and calls[-1] == (pointer,)
    queue.write_token.pop()                       # a Python thread owns the index
    assert add(pointer, 1) == -1
    queue.write_token.append(10)
    assert add(pointer, 2) == 10 and queue.write_token == [12] and len(calls) == 4
    assert queue.words[WRITE_INDEX_WORD] == 12


def test_builtin_keeps_reference_counts():
    queue = _Queue(0)
    pointer = object()
    add = native_index.native_add_write_index(
        [pointer, queue.write_token, queue.address + 8 * WRITE_INDEX_WORD, None.__class__])
    queue.write_token[0] = old = int("123456789012345")
    before = sys.getrefcount(old)
    assert add(pointer, 1) == old
    assert sys.getrefcount(old) == before - 1      # only the token's reference went
    new = queue.write_token[0]
    assert sys.getrefcount(new) == 3               # the token, ``new`` and the argument


def test_disabled_by_the_environment(monkeypatch):
    monkeypatch.setenv("HSAPY_NATIVE_BUILTINS", "0")
    assert not native_index.available()
    assert native_index.why_not() == "HSAPY_NATIVE_BUILTINS=0"
    assert native_index.native_add_write_index([object(), [0], 0, print]) is None
