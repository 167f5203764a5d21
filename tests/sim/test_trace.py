"""hsapy.trace and ``hsapy trace``: every packet, doorbell and GPU time of a program as Trace
Event Format JSON (Perfetto), on the simulator."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hsapy.trace
from hsapy import aql
from hsapy.agent import Agent
from hsapy.asm import kernels
from hsapy.errors import HsapyError
from hsapy.executable import Kernel
from hsapy.queue import OBSERVERS, Queue
from hsapy.runtime import Runtime

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "07_barriers.py"
SLACK_US = 0.002   # trace times are rounded to the nanosecond


# -- the Trace Event Format rules hsapy's traces follow ---------------------------------------

def check_trace_event_format(trace: dict) -> list[dict]:
    """Assert the rules of the Trace Event Format that Perfetto's JSON importer relies on;
    return the events."""
    assert set(trace) >= {"traceEvents", "displayTimeUnit"}
    assert trace["displayTimeUnit"] in ("ms", "ns")
    events = trace["traceEvents"]
    assert isinstance(events, list) and events
    named_processes, named_threads, used = set(), set(), set()
    flows: dict[int, dict[str, dict]] = {}
    for event in events:
        for key, kind in (("name", str), ("ph", str), ("pid", int), ("tid", int)):
            assert isinstance(event.get(key), kind), (key, event)
        assert isinstance(event.get("ts"), (int, float)), event
        ph = event["ph"]
        assert ph in ("M", "X", "i", "s", "f"), event
        if ph == "M":
            assert event["name"] in ("process_name", "thread_name", "process_sort_index",
                                     "thread_sort_index"), event
            if event["name"] == "process_name":
                named_processes.add(event["pid"])
            if event["name"] == "thread_name":
                named_threads.add((event["pid"], event["tid"]))
            continue
        used.add((event["pid"], event["tid"]))
        if ph == "X":
            assert isinstance(event.get("dur"), (int, float)) and event["dur"] >= 0, event
        elif ph == "i":
            assert event.get("s") in ("t", "p", "g"), event
        else:
            assert isinstance(event.get("id"), int), event
            assert event["id"] not in flows or ph not in flows[event["id"]], \
                f"flow id {event['id']} has two {ph} events"
            if ph == "f":
                assert event.get("bp") == "e", event
            flows.setdefault(event["id"], {})[ph] = event
    for pid, tid in used:
        assert pid in named_processes, f"pid {pid} has no process_name"
        assert (pid, tid) in named_threads, f"pid {pid} tid {tid} has no thread_name"
    slices = [e for e in events if e["ph"] == "X"]
    for track in {(e["pid"], e["tid"]) for e in slices}:   # slices on a track nest
        open_ends: list[float] = []
        for event in sorted((e for e in slices if (e["pid"], e["tid"]) == track),
                            key=lambda e: (e["ts"], -e["dur"])):
            # (1e-6: float noise of ts + dur; Perfetto works in whole nanoseconds)
            while open_ends and open_ends[-1] <= event["ts"] + 1e-6:
                open_ends.pop()
            assert not open_ends or end_of(event) <= open_ends[-1] + 1e-6, f"{event} overlaps"
            open_ends.append(end_of(event))
    for flow_id, ends in flows.items():
        assert set(ends) == {"s", "f"}, f"flow {flow_id} is not a pair: {sorted(ends)}"
        assert ends["s"]["cat"] == ends["f"]["cat"] and ends["s"]["name"] == ends["f"]["name"]
        for end in ends.values():   # each end binds to a slice enclosing it on its track
            assert enclosing(slices, end), f"flow {flow_id} {end['ph']} binds to no slice"
    return events


def enclosing(slices: list[dict], point: dict) -> dict | None:
    found = [s for s in slices if (s["pid"], s["tid"]) == (point["pid"], point["tid"])
             and s["ts"] <= point["ts"] <= s["ts"] + s["dur"]]
    return min(found, key=lambda s: s["dur"]) if found else None


def packet_slice(events: list[dict], queue: Queue, index: int) -> dict:
    found = [e for e in events if e["ph"] == "X" and e["args"]["queue"] == queue.id
             and e["args"]["index"] == index]
    assert len(found) == 1, f"queue {queue.id} packet {index}: {len(found)} slices"
    return found[0]


def end_of(event: dict) -> float:
    return event["ts"] + event["dur"]


# -- a program with three queues and barrier dependencies between them -----------------------

def three_queue_program(rt: Runtime) -> dict:
    """q0: [value: gate == 0] A            [OR: C | never] D
       q1: B                [AND: D]* E                          (* no completion signal)
       q2: [AND: A, B] C
    Returns the packet index of each named packet with its queue."""
    agent = rt.gpu("gfx942")
    empty = rt.load(kernels.build("empty", "gfx942"), agent).kernel("empty")
    q0, q1, q2 = (agent.create_queue(64) for _ in range(3))
    gate, never = rt.create_signal(1), rt.create_signal(1)
    and_done, or_done = rt.create_signal(1), rt.create_signal(1)
    run = {q: empty.prepare(q, 64, 64, barrier=True) for q in (q0, q1, q2)}
    where = {"gate": (q0, q0.publish(aql.barrier_value(gate.handle, 0, "EQ")))}
    a, b = run[q0](), run[q1]()
    where["AND"] = (q2, q2.publish(aql.barrier_and([a.signal.handle, b.signal.handle],
                                                   completion_signal=and_done.handle)))
    c = run[q2]()
    where["OR"] = (q0, q0.publish(aql.barrier_or([c.signal.handle, never.handle],
                                                 completion_signal=or_done.handle)))
    d = run[q0]()
    where["AND2"] = (q1, q1.publish(aql.barrier_and([d.signal.handle])))
    e = run[q1]()
    results = {"A": a, "B": b, "C": c, "D": d, "E": e}
    assert not any(r.is_done for r in (a, c, d, e))
    gate.store(0)
    for result in results.values():
        result.wait(timeout=10)
    where.update({name: (r.queue, r.index) for name, r in results.items()})
    where["queues"] = (q0, q1, q2)
    return where


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "three_queues.json"
    with Runtime(backend="sim", targets=["gfx942"]) as rt:
        with hsapy.trace.Trace(path) as tracer:
            where = three_queue_program(rt)
        queues = where.pop("queues")
        data = json.loads(path.read_text())
        yield data, where, queues, tracer


def test_the_trace_follows_the_trace_event_format(traced):
    data, _where, _queues, _tracer = traced
    check_trace_event_format(data)
    assert "simulated" in json.dumps(data["otherData"]["clocks"])


def test_one_track_per_queue_under_one_agent_process(traced):
    data, _where, queues, _tracer = traced
    events = data["traceEvents"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name"}
    gpu_tracks = {(e["pid"], e["tid"]) for e in events if e["ph"] == "X"}
    assert len(gpu_tracks) == 3 and len({pid for pid, _tid in gpu_tracks}) == 1
    names = sorted(threads[track].split(" (")[0] for track in gpu_tracks)
    assert names == sorted(f"queue {q.id}" for q in queues)
    processes = {e["pid"]: e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "process_name"}
    assert "gfx942" in processes[next(iter(gpu_tracks))[0]]


def test_every_packet_and_doorbell_is_on_the_host_track(traced):
    data, where, queues, _tracer = traced
    events = data["traceEvents"]
    writes = [e for e in events if e["ph"] == "i" and e["cat"] == "packet"]
    assert sorted((e["args"]["queue"], e["args"]["index"]) for e in writes) == \
        sorted((q.id, index) for q, index in where.values())
    assert {e["args"]["type"] for e in writes} == {"dispatch", "barrier-AND", "barrier-OR",
                                                    "barrier-value"}
    doorbells = [e for e in events if e["ph"] == "i" and e["cat"] == "doorbell"]
    assert {e["args"]["queue"] for e in doorbells} == {q.id for q in queues}
    # every packet was announced by a doorbell at or after its write, with an index >= its own
    for event in writes:
        assert any(d["args"]["queue"] == event["args"]["queue"]
                   and d["args"]["index"] >= event["args"]["index"]
                   and d["ts"] >= event["ts"] for d in doorbells)


def event_packet(event: dict) -> bytes:
    """Rebuild a packet's bytes from a write event's decoded fields (round trip of _fields)."""
    fields = event["args"]["fields"]
    header = fields["header"]
    kind = event["args"]["type"]
    options = dict(barrier=header["barrier"], acquire=header["acquire"],
                   release=header["release"])
    completion = int(fields["completion_signal"], 16)
    if kind == "dispatch":
        return bytes(aql.kernel_dispatch(
            int(fields["kernel_object"], 16),
            (fields["grid_size_x"], fields["grid_size_y"], fields["grid_size_z"]),
            (fields["workgroup_size_x"], fields["workgroup_size_y"], fields["workgroup_size_z"]),
            kernarg_address=int(fields["kernarg_address"], 16), completion_signal=completion,
            private_segment_size=fields["private_segment_size"],
            group_segment_size=fields["group_segment_size"], dims=fields["setup"] & 3,
            **options))
    if kind == "barrier-value":
        return bytes(aql.barrier_value(int(fields["signal"], 16), fields["value"],
                                       fields["cond"], mask=fields["mask"],
                                       completion_signal=completion, **options))
    build = aql.barrier_and if kind == "barrier-AND" else aql.barrier_or
    deps = [int(h, 16) for h in fields["dep_signal"] if int(h, 16)]
    return bytes(build(deps, completion_signal=completion, **options))


def test_the_written_packets_are_the_ring_contents(traced):
    """The decoded fields describe the packets exactly (they rebuild byte for byte from the
    builders), and dispatches name their kernel."""
    data, _where, _queues, tracer = traced
    by_place = {(r.queue.id, r.index): r.data for r in tracer.records}
    for event in data["traceEvents"]:
        if event["ph"] == "i" and event["cat"] == "packet":
            assert event_packet(event) == by_place[event["args"]["queue"], event["args"]["index"]]
    dispatches = [e for e in data["traceEvents"] if e["ph"] == "X" and e["cat"] == "dispatch"]
    assert len(dispatches) == 5 and {e["name"] for e in dispatches} == {"empty"}


def test_one_flow_per_barrier_dependency_on_a_traced_packet(traced):
    data, where, _queues, tracer = traced
    events = data["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    drawn = set()
    for flow_id, start in starts.items():
        source, target = enclosing(slices, start), enclosing(slices, finishes[flow_id])
        drawn.add(((source["args"]["queue"], source["args"]["index"]),
                   (target["args"]["queue"], target["args"]["index"])))

    def at(name):
        queue, index = where[name]
        return queue.id, index

    expected = {(at("A"), at("AND")), (at("B"), at("AND")), (at("C"), at("OR")),
                (at("D"), at("AND2"))}
    assert drawn == expected and len(starts) == len(expected)
    summary = tracer.summary()
    # gate (set by the host) and never (set by nobody) have no producing packet
    assert summary["dependencies"] == 6 and summary["dependencies_without_producer"] == 2
    assert summary["flows"] == 4


def test_slices_are_ordered_as_the_dependencies_require(traced):
    data, where, _queues, _tracer = traced
    events = data["traceEvents"]
    s = {name: packet_slice(events, *where[name]) for name in
         ("A", "B", "C", "D", "E", "AND", "OR", "AND2")}
    assert "timing" not in s["AND"]["args"] and "timing" not in s["OR"]["args"]
    assert s["AND2"]["args"]["timing"].startswith("inferred")   # no completion signal
    for producer, consumer in (("A", "AND"), ("B", "AND"), ("C", "OR"), ("D", "AND2")):
        assert end_of(s[consumer]) + SLACK_US >= end_of(s[producer]), (producer, consumer)
    for before, after in (("A", "C"), ("B", "C"), ("AND", "C"), ("C", "D"), ("OR", "D"),
                          ("D", "E"), ("AND2", "E")):
        assert s[after]["ts"] + SLACK_US >= end_of(s[before]), (before, after)
    # the host wrote each packet before the (simulated) GPU started it
    writes = {(e["args"]["queue"], e["args"]["index"]): e["ts"] for e in events
              if e["ph"] == "i" and e["cat"] == "packet"}
    for name, event in s.items():
        assert writes[event["args"]["queue"], event["args"]["index"]] <= event["ts"] + 50, name


def test_the_tracer_leaves_nothing_behind(traced):
    _data, _where, _queues, _tracer = traced
    assert not OBSERVERS
    assert Agent.create_queue.__name__ == "create_queue"
    assert Queue.close.__name__ == "close" and Runtime.close.__name__ == "close"
    assert Kernel.__init__.__name__ == "__init__"


def test_timestamps_survive_kernarg_signal_reuse(tmp_path):
    """70 dispatches through a 64-slot queue: the dispatch path re-arms each ring signal; the
    tracer reads every packet's timestamps before that."""
    with Runtime(backend="sim", targets=["gfx942"], executor="null") as rt:
        agent = rt.gpu("gfx942")
        empty = rt.load(kernels.build("empty", "gfx942"), agent).kernel("empty")
        with hsapy.trace.record(tmp_path / "reuse.json") as tracer:
            with agent.create_queue(64) as queue:
                prepared = empty.prepare(queue, 64, 64)
                results = [prepared() for _ in range(70)]
                results[-1].wait(timeout=10)
                results[0].queue.check()
    events = check_trace_event_format(json.loads((tmp_path / "reuse.json").read_text()))
    slices = sorted((e for e in events if e["ph"] == "X"), key=lambda e: e["args"]["index"])
    assert [e["args"]["index"] for e in slices] == list(range(70))
    assert all(end_of(a) <= b["ts"] + SLACK_US for a, b in zip(slices, slices[1:]))
    assert tracer.summary()["queues"][0]["timed"] == 70


def test_dispatches_that_overlap_on_one_queue_go_on_separate_lanes(tmp_path):
    """Without the barrier bit, a GPU may run a queue's dispatches at once. The simulator runs
    them in turn, so their recorded timestamps are rewritten to the overlaps hardware shows:
    A [0, 10) holds B [2, 5) (nested: same lane), C [8, 14) overlaps A (a second lane),
    D [9, 16) overlaps A and C without nesting in either (a third lane), E [20, 22) follows
    all of them (back on the queue's track)."""
    with Runtime(backend="sim", targets=["gfx942"], executor="null") as rt:
        agent = rt.gpu("gfx942")
        empty = rt.load(kernels.build("empty", "gfx942"), agent).kernel("empty")
        with hsapy.trace.Trace(tmp_path / "lanes.json") as tracer:
            with agent.create_queue(64) as queue:
                prepared = empty.prepare(queue, 64, 64)
                results = [prepared() for _ in range(5)]
                results[-1].wait(timeout=10)
    ticks_per_us = rt.timestamp_frequency / 1e6
    base = min(rec.start for rec in tracer.records)
    spans = {"A": (0, 10), "B": (2, 5), "C": (8, 14), "D": (9, 16), "E": (20, 22)}
    for rec, (begin, end) in zip(sorted(tracer.records, key=lambda r: r.index), spans.values()):
        rec.start, rec.end = base + int(begin * ticks_per_us), base + int(end * ticks_per_us)
    tracer._events = None                       # rebuild the events from the rewritten times
    tracer.write(tmp_path / "lanes.json")
    events = check_trace_event_format(json.loads((tmp_path / "lanes.json").read_text()))
    slices = sorted((e for e in events if e["ph"] == "X"), key=lambda e: e["args"]["index"])
    names = {e["tid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == slices[0]["pid"]}
    assert [names[e["tid"]].split(" (")[0] for e in slices] == [
        f"queue {queue.id}", f"queue {queue.id}", f"queue {queue.id} lane 2",
        f"queue {queue.id} lane 3", f"queue {queue.id}"]
    for event, (begin, end) in zip(slices, spans.values()):   # true times, not clipped
        assert event["ts"] - slices[0]["ts"] == pytest.approx(begin, abs=0.01)
        assert event["dur"] == pytest.approx(end - begin, abs=0.01)


def test_a_failing_body_still_restores_everything(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with hsapy.trace.Trace(tmp_path / "t.json"):
            raise RuntimeError("boom")
    assert not OBSERVERS and Agent.create_queue.__name__ == "create_queue"
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]


# -- hsapy trace -----------------------------------------------------------------------------

def hsapy_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HSAPY_BACKEND": "sim"}
    return subprocess.run([sys.executable, "-m", "hsapy", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd, env=env)


def test_hsapy_trace_runs_the_barriers_example_in_process(tmp_path):
    if not EXAMPLE.exists():
        pytest.skip("examples/07_barriers.py not written yet")
    out = tmp_path / "out.json"
    result = hsapy_cli("trace", "-o", str(out), "--", "python", str(EXAMPLE), "--backend", "sim",
                       cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "OK:" in result.stdout                      # the example ran, with its own argv
    events = check_trace_event_format(json.loads(out.read_text()))
    dispatches = [e for e in events if e["ph"] == "X" and e["cat"] == "dispatch"]
    tracks = {(e["pid"], e["tid"]) for e in events if e["ph"] == "X"}
    assert len(dispatches) == 5 and len(tracks) == 3
    # AND(K1, K2), OR(K3 | never), value(K4): four dependencies on traced packets
    assert sum(e["ph"] == "s" for e in events) == 4
    assert "3 queue(s), 5 dispatches, 4 barriers" in result.stderr
    assert str(out) in result.stderr and "ui.perfetto.dev" in result.stderr


def test_hsapy_trace_passes_on_the_programs_exit_status(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("import sys\nprint('args', sys.argv[1:])\nsys.exit(3)\n")
    result = hsapy_cli("trace", "-o", "t.json", "--", "python", str(script), "x", "--y",
                       cwd=tmp_path)
    assert result.returncode == 3 and "args ['x', '--y']" in result.stdout
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert "0 packets on 0 queue(s)" in result.stderr


@pytest.mark.parametrize("command, message", [
    ((), "give the program to trace after --"),
    (("ls", "-l"), "ls is not a Python program"),
    (("python", "-c", "pass"), "python option -c is not supported"),
    (("python", "missing.py"), "no such script: missing.py"),
])
def test_hsapy_trace_refuses_what_it_cannot_run_in_process(tmp_path, command, message):
    result = hsapy_cli("trace", "--", *command, cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr
    assert not (tmp_path / "trace.json").exists()


@pytest.mark.parametrize("seconds", [None, -1.0, float("nan"), float("inf"), "2", True])
def test_a_trace_refuses_a_harvest_timeout_that_is_not_a_timeout_when_set_later(seconds):
    trace = hsapy.trace.Trace(harvest_timeout=1.5)
    with pytest.raises(HsapyError):
        trace.harvest_timeout = seconds
    assert trace.harvest_timeout == 1.5
    trace.harvest_timeout = 3
    assert trace.harvest_timeout == 3.0


@pytest.mark.parametrize("path", [5, 3.5, b"trace.json", ["trace.json"]])
def test_a_trace_refuses_a_path_that_is_not_a_file_path_when_set_later(path, tmp_path):
    trace = hsapy.trace.Trace()
    with pytest.raises(HsapyError, match="Trace: path"):
        trace.path = path
    assert trace.path is None
    trace.path = tmp_path / "later.json"
    assert trace.path == os.fspath(tmp_path / "later.json")
    trace.path = None
    assert trace.path is None
