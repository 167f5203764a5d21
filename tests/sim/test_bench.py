"""``hsapy bench launch`` on the simulator, benchmarks/launch.py's rows (the same format), and
benchmarks/sim.py's rows on its quick sizes."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
from pathlib import Path

import pytest

from hsapy.bench import PEERS
from hsapy.cli import main

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

MODES = ["submit_plain", "submit_publish", "submit_prepared", "submit_batch", "roundtrip",
         "throughput", "gpu_duration"]
PEER_MODES = {mode for mode, _module, _peer in PEERS}
STATS = ("median_us", "p5_us", "p95_us", "min_us")
# --quick: 3 repeats of bursts of 64 submits, 16 round trips, 64 back-to-back dispatches.
QUICK_COUNTS = {"submit_plain": 3 * 64, "submit_publish": 3 * 64, "submit_prepared": 3 * 64,
                "submit_batch": 3,
                "roundtrip": 3 * 16, "throughput": 3, "gpu_duration": 3 * 64}


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One quick JSON run with --plot, shared by the tests that read it."""
    pytest.importorskip("matplotlib", reason="--plot needs the plot extra (matplotlib)")
    plot = tmp_path_factory.mktemp("bench") / "launch.svg"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["bench", "launch", "--backend", "sim", "--quick", "--json", "--plot",
                     str(plot)])
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    return code, rows, plot


def _hsapy_rows(rows):
    """The simulator's own rows; after them come the NVIDIA peers' rows where cuda.core, CuPy
    or torch import and find a GPU (bench.PEERS): each must be one of those, labelled as a
    CUDA measurement and not as simulated."""
    ours = [row for row in rows if row["mode"] in MODES]
    peers = rows[len(ours):]
    assert rows[:len(ours)] == ours
    for row in peers:
        assert row["mode"] in PEER_MODES, row
        assert row["simulated"] is False and row["backend"] == "cuda" and row["what"], row
    return ours


def test_json_has_one_object_per_mode_in_order(quick_run):
    code, rows, _ = quick_run
    assert code == 0
    assert [row["mode"] for row in _hsapy_rows(rows)] == MODES


def test_every_mode_reports_positive_ordered_statistics(quick_run):
    _, rows, _ = quick_run
    for row in rows:
        values = [row[key] for key in STATS]
        assert all(v > 0 for v in values), row
        assert row["min_us"] <= row["p5_us"] <= row["median_us"] <= row["p95_us"], row
    for row in _hsapy_rows(rows):
        assert row["n"] == QUICK_COUNTS[row["mode"]]


def test_every_mode_is_labelled_simulated_with_backend_and_target(quick_run):
    _, rows, _ = quick_run
    rows = _hsapy_rows(rows)
    for row in rows:
        assert row["simulated"] is True and row["backend"] == "sim"
        assert row["target"] == "gfx942"
        assert row["what"]
    clocks = {row["mode"]: row["clock"] for row in rows}
    assert clocks["roundtrip"] == "host" and clocks["gpu_duration"] == "gpu (simulated)"
    executors = {row["mode"]: row["executor"] for row in rows}
    assert executors["submit_plain"] == "null" and executors["throughput"] == "interpreter"


def test_plot_is_a_chart_with_a_row_per_mode(quick_run):
    _, _, plot = quick_run
    svg = plot.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    for text in ("hsapy bench launch", "simulated: not hardware numbers", *MODES):
        assert text in svg, text


def test_text_output_is_a_table_with_the_simulated_label_and_the_hip_note(capsys):
    assert main(["bench", "launch", "--backend", "sim", "--quick", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED" in out.splitlines()[0]
    header = next(line for line in out.splitlines() if line.startswith("mode"))
    assert header.split() == ["mode", "median", "p5", "p95", "min", "n", "clock"]
    for mode in MODES:
        assert any(line.split()[:1] == [mode] and len(line.split()) >= 7
                   for line in out.splitlines()), mode
    assert "hip_launch: not measured" in out


@pytest.mark.parametrize("argv, message", [
    (["--repeats", "0"], "argument --repeats: must be at least 1"),
    (["--plot", "chart.jpg"], "PNG, SVG or PDF"),
    (["--target", "gfx000"], "gfx000"),
])
def test_bad_options_exit_2_naming_the_problem(argv, message, capsys):
    try:
        code = main(["bench", "launch", "--backend", "sim", "--quick", *argv])
    except SystemExit as exc:          # argparse refuses a malformed number itself
        code = exc.code
    assert code == 2
    assert message in capsys.readouterr().err


def test_unknown_benchmark_is_refused():
    with pytest.raises(SystemExit):
        main(["bench", "kernels", "--backend", "sim"])


def _benchmark_script(name: str):
    """benchmarks/<name>.py as a module."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_benchmark", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_benchmarks_launch_script_keeps_its_rows(capsys):
    script = _benchmark_script("launch")
    assert script.main(["--repeats", "1"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(row["mode"], row["doorbell"]) for row in rows] == [
        ("plain", True), ("prepared", False), ("prepared", True), ("prepared_result", False),
        ("prepared_result", True), ("batch256", True), ("python_call", False), ("c_timed_each", False),
        ("c_floor", False), ("c_floor_consumed", True)]
    keys = ["mode", "doorbell", "api", "median_us", "p5_us", "p95_us", "min_us", "n",
            "simulated", "ratio_to_floor"]
    floor = next(row for row in rows if row["mode"] == "c_floor")
    for row in rows:
        assert list(row) == keys
        assert row["simulated"] is (row["mode"] not in ("python_call", "c_timed_each",
                                                        "c_floor", "c_floor_consumed"))
        assert 0 < row["p5_us"] <= row["median_us"] <= row["p95_us"]
        assert row["ratio_to_floor"] == pytest.approx(row["median_us"] / floor["median_us"])
    assert [row["api"] for row in rows] == [
        "kernel.launch(wait=False)", "prepared.publish()", "prepared.submit()",
        "prepared(doorbell=False)", "prepared()", "prepared.batch()", "an empty Python function", "C loop (cffi), each packet timed",
        "C loop (cffi), timed whole", "C loop (cffi) against a consumer thread, timed whole"]
    # one sample per batch and per whole C loop
    assert [row["n"] for row in rows] == [256, 256, 256, 256, 256, 1, 256, 256, 1, 1]


def test_benchmarks_launch_consumer_empties_the_ring():
    """The C consumer behind row c_floor_consumed does what a packet processor does: after each
    burst (a burst returns 0 when the consumer did not catch up in time) every slot holds an
    INVALID header again, and it read every packet's kernarg address."""
    from hsapy.queue import INVALID_WORD

    lib = _benchmark_script("launch")._compile_helpers().lib
    body = bytearray(60)
    body[36:44] = (0x1234).to_bytes(8, "little")        # kernarg_address: packet bytes 40..47
    ring = lib.consumed_open(16, INVALID_WORD)
    bursts = (8, 8, 15, 3, 16)
    try:
        assert lib.consumed_free_slots(ring) == 16
        for burst in bursts:
            assert lib.consumed_burst(ring, bytes(body), 0x00031402, burst, 5_000_000_000) > 0
            assert lib.consumed_free_slots(ring) == 16
    finally:
        seen = lib.consumed_close(ring)
    assert seen == sum(bursts) * 0x1234

class _FakeHip:
    """Stands in for hip-python's ``hip.hip``: records calls, returns (hipError_t, value...)."""

    class hipError_t:
        hipSuccess = 0
        hipErrorInvalidImage = 200

    def __init__(self, fail: str = "") -> None:
        self.calls: list[tuple] = []
        self.fail = fail

    def _status(self, name: str) -> int:
        return self.hipError_t.hipErrorInvalidImage if name == self.fail else 0

    def hipModuleLoadData(self, image):
        self.calls.append(("hipModuleLoadData", bytes(image)))
        return self._status("hipModuleLoadData"), "module"

    def hipModuleGetFunction(self, module, name):
        self.calls.append(("hipModuleGetFunction", module, name))
        return self._status("hipModuleGetFunction"), "function"

    def hipModuleLaunchKernel(self, f, gx, gy, gz, bx, by, bz, sharedMemBytes, stream,
                              kernelParams, extra):
        self.calls.append(("hipModuleLaunchKernel", f, (gx, gy, gz), (bx, by, bz)))
        return (self._status("hipModuleLaunchKernel"),)

    def hipDeviceSynchronize(self):
        self.calls.append(("hipDeviceSynchronize",))
        return (0,)

    def hipModuleUnload(self, module):
        self.calls.append(("hipModuleUnload", module))
        return (0,)


@pytest.fixture
def fake_hip(monkeypatch):
    import sys
    import types

    fake = _FakeHip()
    package = types.ModuleType("hip")
    package.hip = fake
    monkeypatch.setitem(sys.modules, "hip", package)
    return fake


def test_hip_launch_loads_the_code_object_and_launches_one_workgroup(fake_hip):
    from hsapy.bench import HipLaunch, hip_available

    assert hip_available()
    hip = HipLaunch(b"\x7fELF code object", 64)
    samples = hip.time_launches(repeats=2, burst=3)
    hip.close()
    assert len(samples) == 6 and all(s >= 0 for s in samples)
    names = [call[0] for call in fake_hip.calls]
    assert names == (["hipModuleLoadData", "hipModuleGetFunction"]
                     + (["hipModuleLaunchKernel"] * 3 + ["hipDeviceSynchronize"]) * 2
                     + ["hipModuleUnload"])
    assert fake_hip.calls[0][1] == b"\x7fELF code object"
    assert fake_hip.calls[1][2] == b"empty"
    assert fake_hip.calls[2][2:] == ((1, 1, 1), (64, 1, 1))   # grid in workgroups, as HIP takes it


def test_hip_failure_names_the_call_and_status(fake_hip):
    from hsapy.bench import HipLaunch
    from hsapy.errors import HsapyValueError

    fake_hip.fail = "hipModuleLoadData"
    with pytest.raises(HsapyValueError, match="hipModuleLoadData failed: 200"):
        HipLaunch(b"not a code object", 64)


class _DoneSignal:
    def load(self, relaxed=False):
        return 0


class _Result:
    signal = _DoneSignal()

    def wait(self, timeout=None):
        return self


class _FlushCounter:
    def __init__(self):
        self.flushes = 0

    def flush(self):
        self.flushes += 1

    def check(self):
        pass


@pytest.mark.parametrize("doorbell", [None, False, True])
def test_time_bursts_calls_as_asked_and_flushes_once_per_burst(doorbell):
    from hsapy.bench import time_bursts

    calls = []

    def one_call(**kwargs):
        calls.append(kwargs)
        return _Result()

    queue = _FlushCounter()
    samples = time_bursts(queue, one_call, 3, burst=4, doorbell=doorbell)
    assert len(samples) == 12 and all(s >= 0 for s in samples)
    assert calls == [{} if doorbell is None else {"doorbell": doorbell}] * 12
    assert queue.flushes == 3


def test_the_launch_scripts_active_wait_returns_on_completion_and_times_out(monkeypatch):
    import threading
    import time

    import hsapy.bench
    from hsapy.errors import WaitTimeoutError
    from hsapy.runtime import Runtime

    script = _benchmark_script("launch")
    monkeypatch.setattr(hsapy.bench, "WAIT_TIMEOUT", 0.3)
    monkeypatch.setattr(script, "ACTIVE_SLICE_NS", 20_000_000)
    with Runtime(backend="sim", targets=["gfx942"], executor="null") as rt:
        settle = script.active_settle(script._compile_helpers(), rt)
        with rt.gpu("gfx942").create_queue(64) as queue:
            signal = rt.create_signal(1)
            try:
                threading.Timer(0.05, signal.store, (0,)).start()
                started = time.monotonic()
                settle(queue, signal)                   # returns once another thread stores 0
                assert time.monotonic() - started > 0.04     # it did wait for the store
                signal.store(1)
                started = time.monotonic()
                with pytest.raises(WaitTimeoutError):
                    settle(queue, signal)
                assert time.monotonic() - started < 5.0      # the timeout, not a hang
            finally:
                signal.close()


def test_warm_batches_publish_an_untimed_batch_before_each_timed_one():
    from hsapy.asm import kernels
    from hsapy.bench import time_batches
    from hsapy.errors import HsapyValueError
    from hsapy.runtime import Runtime

    with Runtime(backend="sim", targets=["gfx942"], executor="null") as rt:
        agent = rt.gpu("gfx942")
        empty = rt.load(kernels.build("empty", agent.target), agent).kernel("empty")
        with agent.create_queue(64) as small, agent.create_queue(128) as queue:
            with pytest.raises(HsapyValueError, match="need 66 slots; the queue has 64"):
                time_batches(empty.prepare(small, 64, 64), 1, burst=32, warm=True)
            with pytest.raises(HsapyValueError, match="more than one half of the batch kernarg"):
                time_batches(empty.prepare(queue, 64, 64), 1, burst=513, warm=True)
            assert small.load_write_index() == queue.load_write_index() == 0   # refused first
            samples = time_batches(empty.prepare(queue, 64, 64), 3, burst=40, warm=True)
            assert len(samples) == 3
            # per repeat: two batches of 40 dispatches, each closed by a barrier, all consumed
            assert queue.load_write_index() == queue.load_read_index() == 3 * 2 * 41


def test_plot_without_matplotlib_is_one_line_naming_the_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)   # import -> ImportError
    assert main(["bench", "launch", "--backend", "sim", "--quick", "--plot",
                 str(tmp_path / "chart.png")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "hsapy bench: --plot: charts need matplotlib: pip install 'hsapy[plot]'"
    assert not (tmp_path / "chart.png").exists()


# -- the NVIDIA peers, through stand-ins for their modules -------------------------------------

def _module(name, **attributes):
    import importlib.machinery
    import types

    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    module.__dict__.update(attributes)
    return module


@pytest.fixture()
def fake_peers(monkeypatch):
    """cuda.core, cupy and torch stand-ins recording what the benchmark calls."""
    import types

    calls = []

    class Stream:
        def sync(self):
            calls.append(("cuda.core", "sync"))

    class Device:
        arch = "90"

        def set_current(self):
            calls.append(("cuda.core", "set_current"))

        def create_stream(self):
            return Stream()

    class Program:
        def __init__(self, code, code_type, options):
            calls.append(("cuda.core", "Program", code, code_type, options))

        def compile(self, target):
            calls.append(("cuda.core", "compile", target))
            return types.SimpleNamespace(get_kernel=lambda name: ("kernel", name))

    def launch(stream, config, kernel, *args):
        calls.append(("cuda.core", "launch", config, kernel, args))

    core = _module("cuda.core", Device=Device, Program=Program, launch=launch,
                   ProgramOptions=lambda arch: ("options", arch),
                   LaunchConfig=lambda grid, block: ("config", grid, block))
    monkeypatch.setitem(sys.modules, "cuda", _module("cuda", core=core))
    monkeypatch.setitem(sys.modules, "cuda.core", core)

    class RawKernel:
        def __init__(self, code, name):
            calls.append(("cupy", "RawKernel", code, name))

        def __call__(self, grid, block, args):
            calls.append(("cupy", "launch", grid, block, args))

    stream = types.SimpleNamespace(synchronize=lambda: calls.append(("cupy", "sync")))
    cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 1),
                                 get_current_stream=lambda: stream)
    monkeypatch.setitem(sys.modules, "cupy", _module("cupy", RawKernel=RawKernel, cuda=cuda))

    torch_cuda = types.SimpleNamespace(
        is_available=lambda: True, _sleep=lambda cycles: calls.append(("torch", "_sleep", cycles)),
        synchronize=lambda: calls.append(("torch", "sync")))
    monkeypatch.setitem(sys.modules, "torch", _module("torch", cuda=torch_cuda))
    return calls


def test_peers_that_import_get_a_labelled_row_each_timed_like_hip(fake_peers):
    from hsapy.bench import EMPTY_CUDA, LaunchPlan, Progress, _peer_modes

    plan = LaunchPlan(repeats=2, warmup=1, burst=3)
    notes = []
    results = _peer_modes(plan, Progress(1, enabled=False), notes)
    assert notes == []
    assert [r.mode for r in results] == ["cuda_core_launch", "cupy_launch", "torch_launch"]
    for result in results:
        row = result.as_json()
        assert row["simulated"] is False and row["backend"] == "cuda" and row["clock"] == "host"
        assert "NVIDIA GPU" in row["what"] and row["n"] == 2 * 3
    launches = {peer: [c for c in fake_peers if c[0] == peer and c[1] in ("launch", "_sleep")]
                for peer in ("cuda.core", "cupy", "torch")}
    # warm-up and timed repetitions: 3 bursts of 3, each synchronized
    assert all(len(calls) == 9 for calls in launches.values())
    assert launches["cuda.core"][0][2:] == (("config", 1, 64), ("kernel", "empty"), ())
    assert launches["cupy"][0][2:] == ((1,), (64,), ())
    assert launches["torch"][0][2] == 0
    assert sum(c[1] == "sync" for c in fake_peers) == 3 * 3
    assert ("cupy", "RawKernel", EMPTY_CUDA, "empty") in fake_peers
    assert ("cuda.core", "Program", EMPTY_CUDA, "c++", ("options", "sm_90")) in fake_peers


def test_a_peer_without_a_device_is_a_note_and_missing_ones_are_named(fake_peers, monkeypatch):
    from hsapy.bench import LaunchPlan, Progress, _peer_modes

    sys.modules["torch"].cuda.is_available = lambda: False
    monkeypatch.setitem(sys.modules, "cupy", None)            # not importable
    notes = []
    results = _peer_modes(LaunchPlan(repeats=1, warmup=0, burst=2), Progress(1, False), notes)
    assert [r.mode for r in results] == ["cuda_core_launch"]
    assert notes[0].startswith("cupy: not measured (not importable")
    assert notes[1] == "torch_launch: not measured (HsapyValueError: torch sees no CUDA device)"


def test_compiled_rows_say_how_the_dispatch_ran(capsys):
    pytest.importorskip("llvmlite")
    script = _benchmark_script("sim")
    assert script.main(["--quick", "--targets", "gfx942", "--engines", "jit", "--threads", "2",
                        "--repeats", "1"]) in (0, None)
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    kernels = [r for r in rows if r.get("kernel") != "empty"]
    assert kernels and all(r["engine"] == "jit" and r["threads"] == 2 for r in kernels), rows
    for row in kernels:
        assert row["lane_instructions"] > 0 and row["lane_instructions_per_s"] > 0, row
        assert 1 <= row["threads_used"] <= 2 and 0 <= row["chunks_looped"] <= row["chunks"], row
    vector_add = next(r for r in kernels if r["kernel"] == "vector_add")
    # whole workgroups straight to s_endpgm: the chunk loop runs every chunk
    assert vector_add["chunks_looped"] == vector_add["chunks"] >= 2, vector_add


def test_scaling_rows_start_with_the_hosts_own_ceiling(capsys):
    pytest.importorskip("llvmlite")
    script = _benchmark_script("sim")
    assert script.main(["--quick", "--targets", "gfx942", "--scaling", "--threads", "2",
                        "--repeats", "1"]) in (0, None)
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    host = [r for r in rows if r["engine"] == "native"]
    assert [(r["kernel"], r["threads"]) for r in host] == [
        ("host_compute", 1), ("host_compute", 2), ("host_memory", 1), ("host_memory", 2)]
    assert rows[:4] == host
    assert all(r["target"] == "host" and r["simulated"] is False for r in host), host
    assert host[0]["speedup"] == host[2]["speedup"] == 1.0
    kernels = rows[4:]
    assert kernels and all(r["engine"] == "jit" and r["simulated"] is True for r in kernels)
    assert {r["threads"] for r in kernels} == {1, 2}
    assert all(r["speedup"] > 0 for r in kernels), kernels
    # each kernel line carries the host's figures for its own thread count
    ceiling = {(r["kernel"], r["threads"]): r["speedup"] for r in host}
    for r in kernels:
        assert r["host_compute_speedup"] == ceiling[("host_compute", r["threads"])], r
        assert r["host_memory_speedup"] == ceiling[("host_memory", r["threads"])], r
