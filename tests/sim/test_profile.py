"""hsapy.profile on the simulator: counters of hand-computable kernels, through the whole stack
(Runtime, loader, packets, packet processor, profiled interpreter programs).

Every expected figure below is worked out from the kernel's source and its disassembly, not
read back from the profiler: a straight-line kernel executes each of its instructions once per
wave, so a counter is the number of waves times the instructions of its class in the listing
(classified here from the mnemonic text, independently of hsapy.sim.isa.counters); bytes are the
arrays' sizes; LDS bank conflicts follow from the stride (docs/profile.md, "LDS bank
conflicts")."""
from __future__ import annotations

import numpy as np
import pytest
from isa_exec_harness import build_hip

import hsapy
from hsapy.codeobject import CodeObject
from hsapy.profile import Profiler
from hsapy.sim.isa import counters, decode_kernel

W64 = ("-mwavefrontsize64",)

KERNELS = r"""
KERNEL void lds_stride(float* out, uint stride) {
  SHARED float tile[256 * 32];
  uint t = tid_x();
  tile[t * stride] = (float)t;
  sync();
  out[bid_x() * bdim_x() + t] = tile[t * stride];
}

KERNEL void diverge(const float* a, float* out, float* quarter) {
  uint i = bid_x() * bdim_x() + tid_x();
  float v = a[i];
  out[i] = v;
  if ((i & 3) == 0) quarter[i >> 2] = v * 3.0f + 1.0f;   // a store: only under EXEC
}
"""


def _class_of(text: str) -> str:
    """The rocprof class of an instruction, from its mnemonic alone."""
    mnemonic = text.split()[0]
    if mnemonic.startswith("v_"):
        return "VALU"
    if mnemonic.startswith(("s_load", "s_buffer_load")):
        return "SMEM"
    if mnemonic.startswith(("global_load", "flat_load", "buffer_load")):
        return "VMEM_RD"
    if mnemonic.startswith(("global_store", "flat_store", "buffer_store")):
        return "VMEM_WR"
    if mnemonic.startswith(("ds_",)):
        return "LDS"
    if mnemonic.startswith(("s_cbranch", "s_branch")):
        return "BRANCH"
    if mnemonic.startswith(("s_wait", "s_delay_alu", "s_clause", "s_endpgm", "s_nop",
                            "s_barrier", "global_wb", "global_inv", "s_sendmsg")):
        return "OTHER"
    return "SALU"


def _run(target: str, code: bytes, name: str, args, grid: int, block: int):
    """Dispatch kernel ``name`` once under a Profiler; (its DispatchProfile, buffers read
    back, wave size)."""
    with hsapy.Runtime(backend="sim", targets=[target]) as rt, Profiler() as prof:
        agent = rt.gpu_agents[0]
        kernel = rt.load(code, agent).kernel(name)
        buffers = []
        values = []
        for arg in args:
            if isinstance(arg, np.ndarray):
                buf = agent.device_pool.allocate(max(arg.nbytes, 4))
                buf.copy_from(arg)
                buffers.append((buf, arg))
                values.append(buf)
            else:
                values.append(arg)
        queue = agent.create_queue(size=64)
        kernel.launch(queue, values, grid=grid, workgroup=block, timeout=120)
        out = [buf.copy_to(dtype=arr.dtype)[:arr.size] for buf, arr in buffers]
        wave = kernel.wavefront_size
        queue.close()
    (dispatch,) = prof.dispatches
    return dispatch, out, wave


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_vector_add_counts_each_class_once_per_wave_and_moves_exactly_the_arrays(target):
    from hsapy.asm import kernels

    code = kernels.build("vector_add", target)
    n = 4096
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 0.5, np.float32)
    out = np.zeros(n, np.float32)
    dispatch, (_, _, got), wave = _run(target, code, "vector_add", [a, b, out, n], n, 256)
    assert np.array_equal(got, a + b)
    c = dispatch.counters
    waves = n // wave
    listing = [inst.text() for inst in decode_kernel(CodeObject.from_bytes(code),
                                                     "vector_add")]
    static = {k: sum(_class_of(t) == k for t in listing)
              for k in ("VALU", "SALU", "SMEM", "VMEM_RD", "VMEM_WR", "BRANCH", "LDS")}
    hw = c.hardware
    assert hw["SQ_WAVES"] == waves
    assert hw["SQ_INSTS"] == waves * len(listing)
    for name in ("VALU", "SALU", "SMEM", "VMEM_RD", "VMEM_WR", "BRANCH", "LDS"):
        assert hw[f"SQ_INSTS_{name}"] == waves * static[name], name
    assert hw["SQ_INSTS_FLAT"] == waves * (static["VMEM_RD"] + static["VMEM_WR"])
    assert hw["FETCH_SIZE"] == 2 * n * 4 / 1024 and hw["WRITE_SIZE"] == n * 4 / 1024
    assert c.flops == {"fp32": n}
    assert c.bytes["global"] == {"read": 2 * n * 4, "write": n * 4, "atomic": 0}
    # coalesced: each wave instruction touches exactly the lines its lanes' bytes fill
    assert c.global_line_bytes == c.global_footprint_bytes == 3 * n * 4
    assert c.valu_active_lane_ratio == 1.0
    assert all(row.waves == waves and row.lanes == n for row in c.instructions)


BANK_CASES = [("gfx942", (), 64), ("gfx1201", (), 32), ("gfx1201", W64, 64),
              ("gfx1100", (), 32), ("gfx90a", (), 64)]


@pytest.mark.parametrize("target,flags,wave", BANK_CASES,
                         ids=[f"{t}-w{w}" for t, _, w in BANK_CASES])
@pytest.mark.parametrize("stride,per_pass", [(1, 0), (2, 1), (32, 31)])
def test_lds_bank_conflicts_follow_the_stride(target, flags, wave, stride, per_pass):
    # ds_write_b32 / ds_read_b32 at 4 * stride * t: 32 lanes per 128-byte pass; stride 1 hits
    # 32 banks once, stride 2 every even bank twice (1 extra cycle), stride 32 bank 0 32
    # times (31 extra cycles); wave64 issues two passes per instruction, wave32 one.
    code = build_hip(KERNELS, target, flags)
    n = 1024
    out = np.zeros(n, np.float32)
    dispatch, (got,), got_wave = _run(target, code, "lds_stride", [out, stride], n, 256)
    assert got_wave == wave
    assert np.array_equal(got, (np.arange(n) % 256).astype(np.float32))
    waves = n // wave
    hw = dispatch.counters.hardware
    assert hw["SQ_INSTS_LDS"] == 2 * waves
    assert hw["SQ_LDS_BANK_CONFLICT"] == 2 * waves * (wave // 32) * per_pass
    assert dispatch.counters.bytes["lds"] == {"read": 4 * n, "write": 4 * n, "atomic": 0}
    assert dispatch.counters.lds_passes == 2 * waves * (wave // 32)


@pytest.mark.parametrize("target,flags", [("gfx942", ()), ("gfx1201", ()), ("gfx1201", W64)],
                         ids=["gfx942", "gfx1201-w32", "gfx1201-w64"])
def test_a_divergent_branch_runs_its_instructions_on_a_quarter_of_the_lanes(target, flags):
    code = build_hip(KERNELS, target, flags)
    n = 1024
    a = np.arange(n, dtype=np.float32)
    out, quarter = np.zeros(n, np.float32), np.zeros(n // 4, np.float32)
    dispatch, (_, got, got_quarter), wave = _run(target, code, "diverge", [a, out, quarter],
                                                 n, 256)
    assert np.array_equal(got, a) and np.array_equal(got_quarter, a[::4] * 3 + 1)
    c = dispatch.counters
    waves = n // wave
    stores = [row for row in c.instructions if row.text.startswith("global_store")]
    assert [(row.waves, row.lanes) for row in stores] == [(waves, n), (waves, n // 4)]
    fma = [row for row in c.instructions if "fmamk" in row.text or "fma" in row.text]
    assert [(row.lanes, row.flops) for row in fma] == [(n // 4, 2 * n // 4)]
    assert c.flops == {"fp32": 2 * n // 4}
    assert 0.25 < c.valu_active_lane_ratio < 1.0
    assert c.hardware["WRITE_SIZE"] == (n + n // 4) * 4 / 1024


def test_without_a_profiler_the_interpreter_compiles_no_counting(monkeypatch):
    from hsapy.asm import kernels

    def forbidden(inst, fn):
        raise AssertionError(f"counting compiled for {inst.text()} while nobody profiles")

    monkeypatch.setattr(counters, "wrap", forbidden)
    n = 256
    with hsapy.Runtime(backend="sim", targets=["gfx942"]) as rt:
        agent = rt.gpu_agents[0]
        kernel = rt.load(kernels.build("vector_add", "gfx942"), agent).kernel("vector_add")
        a, b, o = (agent.device_pool.allocate(4 * n) for _ in range(3))
        a.copy_from(np.ones(n, np.float32))
        b.copy_from(np.ones(n, np.float32))
        queue = agent.create_queue(size=64)
        kernel.launch(queue, [a, b, o, n], grid=n, workgroup=256, timeout=60)
        assert (o.copy_to(dtype=np.float32)[:n] == 2).all()
        queue.close()
    assert counters.recorder_for(object(), 64) is None


def test_the_same_code_object_runs_profiled_then_plain_then_profiled_with_equal_counts():
    from hsapy.asm import kernels

    n = 2048
    code = kernels.build("vector_add", "gfx1201")
    args = [np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32), n]
    first, _, _ = _run("gfx1201", code, "vector_add", args, n, 128)
    second, _, _ = _run("gfx1201", code, "vector_add", args, n, 128)
    assert first.counters.hardware == second.counters.hardware
    assert [r.as_dict() for r in first.counters.instructions] == \
        [r.as_dict() for r in second.counters.instructions]


def _profile_rows(target: str, rows: list[tuple[str, str, tuple]]) -> dict[str, list]:
    """``hsapy run --profile``'s path: variant -> its dispatches' profiles (each row checked
    against its FP64 reference)."""
    from hsapy.commands.run import HsapySession, RowSpec, profile_row

    found = {}
    with hsapy.Runtime(backend="sim", targets=[target]) as rt:
        session = HsapySession(rt)
        try:
            for operator, variant, size in rows:
                row, dispatches = profile_row(session, RowSpec(operator, variant, "hip", target,
                                                               size, "random"), 1)
                assert row.ok, row
                found[variant] = dispatches
        finally:
            session.close()
    return found


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_coalescing_moves_the_same_bytes_in_far_fewer_cache_lines(target):
    n = 4096
    found = _profile_rows(target, [("vector_add", v, (n,)) for v in
                                   ("v1_strided", "v1_contiguous")])
    (strided,), (contiguous,) = found["v1_strided"], found["v1_contiguous"]
    for d in (strided, contiguous):
        assert d.kernel == f"vector_add_{'v1_strided' if d is strided else 'v1_contiguous'}"
        assert d.counters.bytes["global"] == {"read": 8 * n, "write": 4 * n, "atomic": 0}
        assert d.counters.global_footprint_bytes == 12 * n
    assert contiguous.counters.global_line_bytes == 12 * n        # every line fetched once
    assert strided.counters.global_line_bytes >= 8 * contiguous.counters.global_line_bytes


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_lds_tiling_divides_the_global_bytes_gemm_requests_by_the_tile_size(target):
    m = n = k = 64
    variants = ("naive", "tiled8", "tiled16", "tiled32")
    found = _profile_rows(target, [("gemm", v, (m, n, k)) for v in variants])
    requested = {}
    for variant in variants:
        (d,) = found[variant]
        c = d.counters
        requested[variant] = c.bytes["global"]["read"]
        # every FMA reads one element of A and one of B: from global (naive) or from LDS
        assert c.flops == {"fp32": 2 * m * n * k}
        assert c.bytes["global"]["write"] == 4 * m * n
        assert c.global_footprint_bytes == 4 * (m * k + k * n + m * n)
        if variant == "naive":
            assert "lds" not in c.bytes
        else:
            assert c.bytes["lds"]["read"] == 2 * 4 * m * n * k
        # the roofline's two byte counts bracket the same FLOPs
        requested_place, footprint_place = d.roofline
        assert requested_place.flops == footprint_place.flops == 2 * m * n * k
    assert requested["naive"] == 2 * 4 * m * n * k
    for tile in (8, 16, 32):
        assert requested[f"tiled{tile}"] == requested["naive"] // tile


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_one_atomic_per_block_instead_of_one_per_wave(target):
    n = 4096
    found = _profile_rows(target, [("reduction", v, (n,)) for v in
                                   ("element_atomic", "block_atomic")])
    (element,), (block,) = found["element_atomic"], found["block_atomic"]
    waves = n // element.counters.wave_size
    blocks = block.grid[0] // block.workgroup[0]
    atomics = {}
    for name, d in (("element", element), ("block", block)):
        (row,) = [r for r in d.counters.instructions if "atomic" in r.text]
        assert row.lanes == row.waves            # one lane of a wave at a time
        assert d.counters.bytes["global"]["atomic"] == 4 * row.lanes
        atomics[name] = row
    if target == "gfx942":
        # global_atomic_add_f32; clang's atomic optimizer folds a wave's adds into one lane
        assert (atomics["element"].lanes, atomics["block"].lanes) == (waves, blocks)
    else:
        # gfx1201 without unsafe FP atomics: a compare-and-swap loop, retried as waves collide
        assert atomics["element"].lanes > n
        assert blocks <= atomics["block"].lanes < atomics["element"].lanes // 8
    assert atomics["block"].lanes < atomics["element"].lanes
    assert block.counters.bytes["lds"]["read"] > 0


SCRIPT = r"""
import numpy as np
import hsapy
from hsapy.asm import kernels

with hsapy.Runtime(backend="sim", targets=["gfx942"]) as rt:
    agent = rt.gpu_agents[0]
    kernel = rt.load(kernels.build("vector_add", agent.name), agent).kernel("vector_add")
    n = 2048
    a, b, out = (agent.device_pool.allocate(4 * n) for _ in range(3))
    a.copy_from(np.ones(n, np.float32))
    b.copy_from(np.ones(n, np.float32))
    queue = agent.create_queue(size=64)
    kernel.launch(queue, [a, b, out, n], grid=n, workgroup=256, timeout=60)
    queue.close()
"""


def _profile_cli(tmp_path, capsys, *options: str) -> tuple[int, str, str]:
    from hsapy.cli import main

    script = tmp_path / "prog.py"
    script.write_text(SCRIPT)
    status = main(["profile", *options, "--", "python", str(script)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_hsapy_profile_json_has_counters_occupancy_and_a_roofline_labelled_a_model(tmp_path,
                                                                                   capsys):
    import json

    status, out, _ = _profile_cli(tmp_path, capsys, "--json")
    assert status == 0
    (dispatch,) = json.loads(out)["dispatches"]
    assert dispatch["kernel"] == "vector_add" and dispatch["simulated"]
    hw = dispatch["counters"]["hardware_names"]
    assert hw["SQ_WAVES"] == 2048 // 64 and hw["FETCH_SIZE"] == 16.0 and hw["WRITE_SIZE"] == 8.0
    assert dispatch["occupancy"]["waves_per_simd"] == 8
    assert "not a measurement" in dispatch["roofline"]["model"]
    models = [p["bytes_model"] for p in dispatch["roofline"]["placements"]]
    assert models == ["requested", "footprint"]
    assert len(dispatch["counters"]["instructions"]) == hw["SQ_INSTS"] // hw["SQ_WAVES"]


def test_hsapy_profile_prints_a_table_per_dispatch_saying_what_the_figures_are(tmp_path,
                                                                               capsys):
    status, out, _ = _profile_cli(tmp_path, capsys, "--instructions", "3")
    assert status == 0
    assert "vector_add on gfx942 (simulated)" in out
    assert "FETCH_SIZE              16.00 KB" in out and "no cache model" in out
    assert "holds on the GPU too" in out and "not a measurement" in out
    lines = out.splitlines()
    header = lines.index("    offset  executions  active lanes  category  instruction")
    rows = lines[header + 1:lines.index("", header)]
    assert len(rows) == 3 and all(row.split()[1] == str(2048 // 64) for row in rows)


def test_hsapy_profile_draws_the_roofline(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="charts need the plot extra (matplotlib)")
    chart = tmp_path / "roofline.png"
    status, _, err = _profile_cli(tmp_path, capsys, "--plot", str(chart))
    assert status == 0 and chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"roofline written to {chart}" in err


def test_hsapy_profile_refuses_a_command_it_cannot_run_in_process(capsys):
    from hsapy.cli import main

    assert main(["profile", "--", "ls", "-l"]) == 2
    assert "hsapy profile: ls is not a Python program" in capsys.readouterr().err
    assert main(["profile"]) == 2
    assert "give the program to profile after --, e.g. hsapy profile -- python script.py" in \
        capsys.readouterr().err


def test_hsapy_trace_puts_counters_and_occupancy_on_dispatch_slices(tmp_path, capsys):
    import json

    from hsapy.cli import main

    script = tmp_path / "prog.py"
    script.write_text(SCRIPT)
    trace = tmp_path / "trace.json"
    assert main(["trace", "-o", str(trace), "--", "python", str(script)]) == 0
    (slice_,) = [e for e in json.loads(trace.read_text())["traceEvents"]
                 if e.get("ph") == "X" and e.get("cat") == "dispatch"]
    assert slice_["args"]["counters"]["hardware_names"]["SQ_WAVES"] == 2048 // 64
    assert slice_["args"]["occupancy"]["waves_per_simd"] == 8
    assert main(["trace", "--no-counters", "-o", str(trace), "--", "python", str(script)]) == 0
    (slice_,) = [e for e in json.loads(trace.read_text())["traceEvents"]
                 if e.get("ph") == "X" and e.get("cat") == "dispatch"]
    assert "counters" not in slice_["args"]


def test_hsapy_run_profile_prints_each_row_s_dispatches(capsys, monkeypatch):
    from hsapy.cli import main

    # hsapy run --backend sim --target sets HSAPY_SIM_TARGETS for its runtime: undo it after
    monkeypatch.setenv("HSAPY_SIM_TARGETS", "gfx942,gfx1201")

    status = main(["run", "vector_add", "--variant", "v0", "--size", "1024", "--profile",
                   "--backend", "sim", "--target", "gfx1201"])
    out = capsys.readouterr().out
    assert status == 0
    assert "=== vector_add/v0 hip gfx1201 1024" in out
    assert "vector_add_v0 on gfx1201 (simulated)" in out and "SQ_WAVES                32" in out
