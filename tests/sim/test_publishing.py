"""The fast publishing path against the plain one (hsapy.publishing), byte for byte.

Each hypothesis example makes a random kernel argument table (pointers, typed and untyped
scalars of every size, structs by value, hidden arguments), one or two random geometries of it
(grid, workgroup, dynamic LDS, barrier bit, fence scopes) and two queues of the same size, one
for each implementation, with their write indices and kernarg slot order moved to the same
random place (so packets and batches wrap around the ring). A warm-up of random calls through
the fast path on its queue gives kernarg slots and arena halves owners, as a running program
has, and completes. Then both queues are held behind a barrier-AND packet waiting on a gate
signal, and the same random sequence of calls -- ``publish``/``submit`` (the generated
functions), the plain ``dispatch`` closure with or without the doorbell, batches with one shared
kernarg segment or one per dispatch, refused arguments, observers attached or not -- goes to the
fast path on one queue and to ``reference_dispatch``/``reference_batch`` on the other. Every
packet must be byte-identical once kernarg addresses and completion signals are read as "slot k
of the ring" / "half h of the batch arena", every kernarg segment a packet points at must be
byte-identical, and so must the returned indices, the slots' generations and the armed signals.

``HSAPY_PUBLISHING_EXAMPLES`` sets the number of examples (default EXAMPLES).
"""
from __future__ import annotations

import os
import struct
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hsapy import _batch_native, _native, _publish_native, aql
from hsapy.asm import kernels
from hsapy.codeobject import ArgInfo, KernelInfo
from hsapy.dispatch import BatchResult, DispatchResult
from hsapy.errors import HsapyError
from hsapy.kernarg import SCALAR_TYPES, KernargLayout
from hsapy.publishing import (
    DispatchTemplate,
    arena_for,
    batcher,
    dispatcher,
    named_dispatcher,
    parameter_names,
    reference_batch,
    reference_dispatch,
    ring_for,
)
from hsapy.queue import OBSERVERS, add_observer, remove_observer
from hsapy.runtime import Runtime

EXAMPLES = int(os.environ.get("HSAPY_PUBLISHING_EXAMPLES", "40"))
QUEUE_SIZE = 128
HIDDEN = ("hidden_block_count_x", "hidden_block_count_y", "hidden_block_count_z",
          "hidden_group_size_x", "hidden_group_size_y", "hidden_group_size_z",
          "hidden_remainder_x", "hidden_remainder_y", "hidden_remainder_z", "hidden_grid_dims",
          "hidden_dynamic_lds_size", "hidden_queue_ptr", "hidden_shared_base",
          "hidden_private_base", "hidden_global_offset_x", "hidden_printf_buffer", "hidden_none")


class Addressed:
    """Anything with an ``.address`` is a pointer argument."""

    def __init__(self, address: int) -> None:
        self.address = address


@pytest.fixture(scope="module")
def setup():
    """A simulated runtime whose packet processor consumes dispatches without running them,
    and the empty kernel (its kernel object is what every packet names)."""
    with Runtime(backend="sim", targets=["gfx942"], executor="null") as rt:
        agent = rt.gpu("gfx942")
        kernel = rt.load(kernels.build("empty", agent.target), agent).kernel("empty")
        yield rt, agent, kernel


# -- random kernels, values and geometries -------------------------------------------------------

# (value kind, size, declared type) of an explicit argument
ARGUMENTS = ([("global_buffer", 8, None)] * 3
             + [("by_value", SCALAR_TYPES[t][0], t) for t in SCALAR_TYPES]
             + [("by_value", size, None) for size in (1, 2, 4, 8)]
             + [("by_value", size, "bytes") for size in (3, 12, 16, 24)])


@st.composite
def kernel_layouts(draw):
    args, declared, offset = [], [], 0
    for i in range(draw(st.integers(0, 6))):
        kind, size, type_ = draw(st.sampled_from(ARGUMENTS))
        align = min(size, 8) if type_ != "bytes" else draw(st.sampled_from((1, 4, 8)))
        offset = -(-offset // align) * align
        args.append(ArgInfo(offset, size, kind, name=draw(st.sampled_from((f"a{i}", "", "n")))))
        declared.append(type_)
        offset += size
    offset = -(-offset // 8) * 8
    for kind in draw(st.lists(st.sampled_from(HIDDEN), max_size=6)):
        size = 2 if kind.startswith(("hidden_group_size", "hidden_remainder")) else 8
        size = 4 if kind in ("hidden_block_count_x", "hidden_grid_dims") and size == 8 else size
        offset = -(-offset // size) * size
        args.append(ArgInfo(offset, size, kind))
        offset += size
    info = KernelInfo("fuzz", "fuzz.kd", None, tuple(args), offset, 8, 0, 0, 64, 0, 0, 1024, 0, 0,
                      code_object_version=5)
    return KernargLayout.from_kernel(info, declared)


def argument_values(layout):
    """A strategy for one valid argument list of ``layout``."""
    values = []
    for slot in layout.slots:
        if slot.category == "pointer":
            address = st.integers(0, (1 << 64) - 1)
            values.append(st.one_of(address, address.map(Addressed)))
        elif slot.category == "bytes":
            values.append(st.binary(min_size=slot.size, max_size=slot.size))
        elif slot.category == "scalar" and SCALAR_TYPES[slot.type][2]:
            limit = {"f16": 65504.0, "f32": 3.0e38, "f64": 1.0e308}[slot.type]
            values.append(st.one_of(st.floats(-limit, limit), st.integers(-1000, 1000)))
        else:
            bits = 8 * slot.size
            low = 0 if slot.type and slot.type.startswith("u") else -(1 << (bits - 1))
            high = (1 << bits) - 1 if slot.type is None or slot.type.startswith("u") else \
                (1 << (bits - 1)) - 1
            values.append(st.integers(low, high))
    return st.tuples(*values)


def geometries():
    dims = st.integers(1, 3)
    return dims.flatmap(lambda n: st.tuples(
        st.tuples(*[st.integers(1, 1 << 10)] * n),            # grid
        st.tuples(*[st.sampled_from((1, 2, 8, 32, 64))] * n),  # workgroup (<= 1024 work-items
        st.sampled_from((0, 0, 16, 1024)),                      #   over any 2 dimensions: 64^2)
        st.booleans(),
        st.sampled_from(("system", "agent", "none")),
        st.sampled_from(("system", "agent", "none"))))


def template_of(runtime, kernel, queue, layout, geometry, queue_ptr):
    grid, workgroup, lds, barrier, acquire, release = geometry
    if np.prod(workgroup) > 1024:
        workgroup = workgroup[:1] + (1,) * (len(workgroup) - 1)
    # both sides' hidden_queue_ptr name one queue, so their kernarg segments can be equal
    packer = layout.packer(grid, workgroup, lds, queue_ptr=queue_ptr, apertures=queue.apertures)
    packet = aql.kernel_dispatch(kernel.kernel_object, grid, workgroup,
                                 group_segment_size=kernel.group_segment_size + lds,
                                 barrier=barrier, acquire=acquire, release=release)
    ring = ring_for(queue, max(layout.size, 1))
    states = (runtime._state, queue.handle_state, kernel.executable._state)
    return DispatchTemplate(queue, ring, packer, packet.word, packet.body, states)


# -- two queues in the same place ------------------------------------------------------------------

class Side:
    """One queue and the calls of one implementation on it."""

    def __init__(self, runtime, queue, kernel, layout, geometries_, fast: bool,
                 queue_ptr: int) -> None:
        self.runtime, self.kernel, self.fast, self.queue = runtime, kernel, fast, queue
        self.templates = [template_of(runtime, kernel, queue, layout, g, queue_ptr)
                          for g in geometries_]
        self.ring = self.templates[0].ring
        self.arena = arena_for(self.queue, self.ring.slot_size)
        params = parameter_names([slot.name for slot in layout.slots])
        self.calls = [dict(publish=named_dispatcher(t, params, False),
                           submit=named_dispatcher(t, params, True),
                           dispatch=dispatcher(t, DispatchResult),
                           batch=batcher(t, self.arena, {}, BatchResult, kernel))
                      for t in self.templates]
        if _native.disabled() is None:           # the compiled calls, where they can be made
            assert all(isinstance(calls[name], types.BuiltinFunctionType)
                       for calls in self.calls for name in ("batch", "publish", "submit")), (
                _batch_native.why_not(), _publish_native.why_not())

    def advance(self, index: int, slots: int, halves: int) -> None:
        """Move the write index on to ``index`` (no-op packets, consumed), the kernarg slot
        order on by ``slots`` and the batch arena's by ``halves``."""
        while self.queue.load_write_index() < index:
            count = min(QUEUE_SIZE // 2, index - self.queue.load_write_index() - 1)
            if count:
                self.queue.publish_batch([aql.barrier_and([], barrier=False)] * count)
            self.drain()
        for _ in range(slots):
            next(self.ring.slot_order)
        for _ in range(halves):
            next(self.arena.half_order)

    def drain(self) -> None:
        signal = self.runtime.create_signal(1)
        self.queue.publish(aql.barrier_and([], completion_signal=signal.handle))
        signal.wait(aql.SignalCondition.LT, 1, timeout=30, abort=self.queue.check)
        signal.close()

    def call(self, op):
        """Run one operation; its packet index (first index and half for a batch)."""
        kind, which, payload, doorbell = op
        template, calls = self.templates[which], self.calls[which]
        if kind == "batch":
            if self.fast:
                result = calls["batch"](list(payload), doorbell)
                [(first, count, _signal)], [half] = result.chunks, result.halves
            else:
                first, count, _signal, half = reference_batch(template, self.arena,
                                                              list(payload), doorbell)
            return ("batch", first, count, half)
        if not self.fast:
            return reference_dispatch(template, payload, kind == "submit" or doorbell)
        if kind in ("publish", "submit"):
            return calls[kind](*payload)
        return calls["dispatch"](payload, doorbell, self.kernel).index

    def where(self, address: int):
        """A kernarg address as (space, offset) in this side's ring or arena."""
        for space, buffer in (("ring", self.ring.buffer), ("arena", self.arena.buffer)):
            if buffer.address <= address < buffer.address + buffer.size:
                return space, address - buffer.address
        return "elsewhere", address

    def signal_of(self, handle: int):
        if handle == 0:
            return None
        if handle in self.ring.handles:
            return "slot", self.ring.handles.index(handle)
        return "half", [s.handle for s in self.arena.signals].index(handle)

    def packet(self, index: int, size: int):
        """Packet ``index`` with its addresses read as places, and the kernarg it points at."""
        raw = bytes(self.queue.ring[index & (QUEUE_SIZE - 1)])
        kind = raw[0]
        kernarg = b""
        if kind == aql.PacketType.KERNEL_DISPATCH:
            address, completion = struct.unpack_from("<Q", raw, 40)[0], struct.unpack_from(
                "<Q", raw, 56)[0]
            space, offset = self.where(address)
            view = self.ring.view if space == "ring" else self.arena.view
            kernarg = bytes(view[offset:offset + size])
            places = ((space, offset), self.signal_of(completion))
            raw = raw[:40] + bytes(8) + raw[48:56] + bytes(8)
        else:
            completion = struct.unpack_from("<Q", raw, 56)[0]
            places = (self.signal_of(completion),)
            raw = raw[:56] + bytes(8)
        return raw, places, kernarg

    def close(self) -> None:
        self.queue.close()


class Recorder:
    """An observer (hsapy.queue.add_observer) that only counts."""

    def __init__(self) -> None:
        self.written = 0

    def packets_written(self, queue, first, count):
        self.written += count

    def doorbell(self, queue, index):
        pass

    def signal_reused(self, handle):
        pass


@st.composite
def scenarios(draw):
    layout = draw(kernel_layouts())
    shapes = draw(st.lists(geometries(), min_size=1, max_size=2))
    values = argument_values(layout)

    def operations(budget_packets, budget_slots):
        ops = []
        batches = 0
        for _ in range(draw(st.integers(0, 24))):
            kind = draw(st.sampled_from(("publish", "submit", "dispatch", "dispatch", "batch",
                                         "refused", "observers")))
            which = draw(st.integers(0, len(shapes) - 1))
            if kind == "observers":
                ops.append(("observers", 0, draw(st.booleans()), False))
            elif kind == "batch":
                if batches == 2 or budget_packets < 3:
                    continue
                count = draw(st.integers(1, min(40, budget_packets - 2)))
                if draw(st.booleans()):
                    lists = [draw(values)] * count
                else:
                    lists = draw(st.lists(values, min_size=count, max_size=count))
                ops.append(("batch", which, lists, draw(st.booleans())))
                budget_packets -= count + 1
                batches += 1
            elif budget_packets >= 2 and budget_slots >= 1:
                if kind == "refused":
                    if not layout.slots:
                        continue
                    bad = list(draw(values))
                    bad[draw(st.integers(0, len(bad) - 1))] = "ten"
                    ops.append(("refused", which, tuple(bad), False))
                else:
                    ops.append((kind, which, draw(values), draw(st.booleans())))
                    budget_packets -= 1
                budget_slots -= 1
        return ops

    # a lap of the kernarg ring with one template between random calls: slots with owners
    lap = [("publish", draw(st.integers(0, len(shapes) - 1)), draw(values), False)] * QUEUE_SIZE
    warm = operations(10 ** 6, 10 ** 6) + lap + operations(10 ** 6, 10 ** 6)
    compared = operations(QUEUE_SIZE - 4, QUEUE_SIZE)
    index = draw(st.integers(0, 2 * QUEUE_SIZE))
    slot = draw(st.integers(0, QUEUE_SIZE - 1))
    return layout, shapes, warm, compared, index, slot


def detach(recorder) -> None:
    """Remove every attachment of ``recorder`` (the operations may attach it more than once)."""
    while recorder in OBSERVERS:
        remove_observer(recorder)


def run(side: Side, ops, recorder, keep: list | None):
    """Run ``ops`` on ``side``; with ``keep``, record each outcome (index or error class)."""
    for op in ops:
        kind = op[0]
        if kind == "observers":
            if op[2]:
                add_observer(recorder)
            else:
                remove_observer(recorder)
            continue
        if kind == "refused":
            with pytest.raises(HsapyError) as refused:
                side.call(("dispatch", op[1], op[2], False))
            outcome = type(refused.value)
        else:
            outcome = side.call(op)
        if keep is not None:
            keep.append(outcome)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(scenario=scenarios())
def test_the_fast_path_publishes_what_the_reference_publishes(setup, scenario):
    publishes_alike(setup, scenario)


@settings(max_examples=max(EXAMPLES // 4, 5), deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(scenario=scenarios())
def test_without_compiled_builtins_too(setup, scenario):
    # batches then copy rows and store header words with memoryviews and numpy instead of
    # hsapy._native's write_rows (the batcher looks when it is made, per prepared launch)
    saved = os.environ.get("HSAPY_NATIVE_BUILTINS")
    os.environ["HSAPY_NATIVE_BUILTINS"] = "0"
    try:
        publishes_alike(setup, scenario)
    finally:
        if saved is None:
            del os.environ["HSAPY_NATIVE_BUILTINS"]
        else:
            os.environ["HSAPY_NATIVE_BUILTINS"] = saved


def publishes_alike(setup, scenario):
    """The scenario's operations on a fast and a plain side publish the same packets, kernarg
    segments, outcomes and slot generations."""
    runtime, agent, kernel = setup
    layout, shapes, warm, compared, index, slot = scenario
    queues = [agent.create_queue(QUEUE_SIZE) for _ in range(2)]
    fast, plain = (Side(runtime, queue, kernel, layout, shapes, is_fast, queues[0].address)
                   for queue, is_fast in zip(queues, (True, False)))
    recorder = Recorder()
    gate = runtime.create_signal(1)
    try:
        for side in (fast, plain):
            side.advance(index, slot, 0)
        run(fast, warm, recorder, None)           # owners for slots and arena halves
        detach(recorder)
        fast.queue.flush()
        fast.drain()
        singles = sum(op[0] in ("publish", "submit", "dispatch", "refused") for op in warm)
        batches = sum(op[0] == "batch" for op in warm)
        plain.advance(fast.queue.load_write_index(), singles, batches)
        for side in (fast, plain):
            side.queue.publish(aql.barrier_and([gate.handle]))
        first = fast.queue.load_write_index()
        assert plain.queue.load_write_index() == first
        before = [(list(side.ring.indices), list(side.arena.indices)) for side in (fast, plain)]
        outcomes = [[], []]
        for side, keep in ((fast, outcomes[0]), (plain, outcomes[1])):
            run(side, compared, recorder, keep)
            detach(recorder)
        assert outcomes[0] == outcomes[1]
        end = fast.queue.load_write_index()
        assert plain.queue.load_write_index() == end
        for index_ in range(first, end):
            assert fast.packet(index_, layout.size) == plain.packet(index_, layout.size), index_
        # the slots' and halves' generations moved alike
        for (rings, arenas), side in zip(before, (fast, plain)):
            side.moved = ({i: g for i, g in enumerate(side.ring.indices) if g != rings[i]},
                          {h: g for h, g in enumerate(side.arena.indices) if g != arenas[h]})
        assert fast.moved == plain.moved
        assert [v[1] for v in fast.ring.values] == [v[1] for v in plain.ring.values]
        assert [v[1] for v in fast.arena.values] == [v[1] for v in plain.arena.values]
    finally:
        detach(recorder)
        gate.store(0)
        for queue in queues:
            queue.flush()
        for side in (fast, plain):
            side.drain()
        for queue in queues:
            queue.close()
        gate.close()
