"""Per-instruction semantics of the ISA interpreter, with hand-checked values.

Each case is one instruction, assembled by llvm-mc-19 for gfx942 or gfx1201, decoded by hsapy's
decoder, compiled by the interpreter and run on one wave whose registers the case sets:
v0/v1/v2 (and s0..s3) hold the inputs, the result lands in v3 (or s4/SCC/VCC/EXEC). Lanes
carry different values (NaN, infinities, denormals, signed/unsigned extremes); a case may run
under a partial EXEC, and lanes outside EXEC must keep their old value (0xDEADBEEF).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

from hsapy.sim.clock import SimClock
from hsapy.sim.isa import decode
from hsapy.sim.isa.interpreter import ProgramInfo
from hsapy.sim.isa.semantics import BARRIER, END, compile_instruction
from hsapy.sim.isa.wave import NSREG, Batch
from hsapy.sim.memory import SimMemory

F = np.float32
INF = np.inf
NAN = np.nan
DENORM = float(np.float32(1e-40))          # an fp32 denormal
SENTINEL = 0xDEADBEEF
WAVE = {"gfx942": 64, "gfx1201": 32}


def f32bits(values) -> np.ndarray:
    return np.asarray(values, np.float32).view(np.uint32)


_ENCODINGS: dict[tuple[str, str], bytes] = {}


def assemble(target: str, lines: list[str]) -> list[bytes]:
    """Machine code of each line (llvm-mc-19 -show-encoding), cached per (target, line)."""
    missing = [line for line in lines if (target, line) not in _ENCODINGS]
    if missing:
        if shutil.which("llvm-mc-19") is None:
            pytest.skip("llvm-mc-19 not found (Debian package llvm-19)")
        proc = subprocess.run(
            ["llvm-mc-19", "-triple=amdgcn-amd-amdhsa", f"-mcpu={target}", "-show-encoding"],
            input="\n".join(missing) + "\n", capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        encodings = re.findall(r"encoding: \[([^\]]*)\]", proc.stdout)
        assert len(encodings) == len(missing), proc.stdout + proc.stderr
        for line, enc in zip(missing, encodings):
            _ENCODINGS[(target, line)] = bytes(int(x, 16) for x in enc.split(","))
    return [_ENCODINGS[(target, line)] for line in lines]


def machine() -> SimpleNamespace:
    lds_size = 1024
    lds = np.zeros(lds_size + 16, np.uint8)
    return SimpleNamespace(memory=SimMemory(), agent=None, clock=SimClock(), lds=lds,
                           lds_words=lds[:lds_size].view(np.uint32), lds_size=lds_size,
                           lds_stride=lds_size, private_size=0, shared_base=1 << 48,
                           private_base=2 << 48, pending=[])


def run(target: str, line: str, v: dict | None = None, s: dict | None = None,
        exec_lanes: int | None = None, scc: bool = False, m=None, ftz: bool = False):
    """Run one instruction on one wave; returns (batch, result of the closure). ``ftz`` runs
    it under a MODE that flushes denormals of every float type (inputs and outputs)."""
    lanes = WAVE[target]
    code = assemble(target, [line])[0]
    inst = decode(code, target, 0x1000)[0]
    fn = compile_instruction(inst, ProgramInfo(inst.family, lanes, ftz, ftz))
    V = np.full((16, 1, lanes), SENTINEL, np.uint32)
    for reg, values in (v or {}).items():
        arr = np.asarray(values)
        bits = arr.astype(np.float32).view(np.uint32) if arr.dtype.kind == "f" else \
            arr.astype(np.int64).astype(np.uint32)
        V[reg, 0, :] = np.resize(bits, lanes)
    S = np.zeros((1, NSREG), np.uint32)
    for reg, value in (s or {}).items():
        S[0, reg] = np.float32(value).view(np.uint32) if isinstance(value, float) else value
    live = np.zeros((1, lanes), bool)
    live[0, : lanes if exec_lanes is None else exec_lanes] = True
    batch = Batch(0x1000, S, V, None, live, np.array([scc]), np.zeros(1, np.int64),
                  np.zeros(1, np.int64))
    result = fn(batch, m or machine())
    return batch, result


def v3f(batch, n=None) -> np.ndarray:
    return batch.V[3, 0, :n].view(np.float32)


def v3u(batch, n=None) -> np.ndarray:
    return batch.V[3, 0, :n]


TARGETS = ("gfx942", "gfx1201")


@pytest.fixture(autouse=True)
def quiet_fp():
    # the executor runs instructions under np.errstate(all="ignore"); so do these tests
    with np.errstate(all="ignore"):
        yield


# --- VALU float ----------------------------------------------------------------------------------

# (line for gfx942, line for gfx1201, v0, v1, v2, expected v3 as floats)
FLOAT_CASES = [
    ("v_add_f32 v3, v0, v1", None, [1.5, INF, NAN, DENORM, -0.0, 3e38],
     [2.25, -INF, 1.0, DENORM, 0.0, 3e38], None, [3.75, NAN, NAN, 2 * DENORM, 0.0, INF]),
    ("v_sub_f32 v3, v0, v1", None, [1.0, INF, 0.0], [3.0, INF, -0.0], None, [-2.0, NAN, 0.0]),
    ("v_subrev_f32 v3, v0, v1", None, [1.0, 2.0], [3.0, -2.0], None, [2.0, -4.0]),
    ("v_mul_f32 v3, v0, v1", None, [2.0, 0.0, 1e-30, -3.0], [0.5, INF, 1e-30, 4.0], None,
     [1.0, NAN, 0.0, -12.0]),
    ("v_fma_f32 v3, v0, v1, v2", None, [1.0 + 2 ** -23], [1.0 - 2 ** -23], [-1.0],
     [-(2.0 ** -46)]),                              # fused: the product is not rounded first
    ("v_fmac_f32 v2, v0, v1", None, [2.0, 3.0], [4.0, -1.0], [1.0, 3.0], None),
    ("v_max_f32 v3, v0, v1", "v_max_num_f32 v3, v0, v1", [1.0, NAN, -0.0, -INF],
     [2.0, 5.0, -1.0, NAN], None, [2.0, 5.0, -0.0, -INF]),
    ("v_min_f32 v3, v0, v1", "v_min_num_f32 v3, v0, v1", [1.0, NAN, -3.0], [2.0, 5.0, INF],
     None, [1.0, 5.0, -3.0]),
    ("v_rcp_f32 v3, v0", None, [2.0, 0.0, -0.0, INF, 0.25], None, None,
     [0.5, INF, -INF, 0.0, 4.0]),
    ("v_rsq_f32 v3, v0", None, [4.0, 0.0, -1.0, 0.25], None, None, [0.5, INF, NAN, 2.0]),
    ("v_sqrt_f32 v3, v0", None, [4.0, -1.0, INF, 2.0], None, None,
     [2.0, NAN, INF, float(np.sqrt(np.float32(2.0)))]),
    ("v_exp_f32 v3, v0", None, [3.0, -1.0, -INF, 200.0], None, None, [8.0, 0.5, 0.0, INF]),
    ("v_log_f32 v3, v0", None, [8.0, 1.0, 0.0, -1.0], None, None, [3.0, 0.0, -INF, NAN]),
    ("v_ldexp_f32 v3, v0, v1", None, [1.5, 1.0, 1.0], [3, -149, 200], None,
     [12.0, float(np.float32(2.0 ** -149)), INF]),
    ("v_floor_f32 v3, v0", None, [-1.5, 2.7, -0.0], None, None, [-2.0, 2.0, -0.0]),
    ("v_trunc_f32 v3, v0", None, [-1.5, 2.7], None, None, [-1.0, 2.0]),
    ("v_rndne_f32 v3, v0", None, [2.5, 3.5, -0.5], None, None, [2.0, 4.0, -0.0]),
    ("v_fract_f32 v3, v0", None, [1.25, -0.25], None, None, [0.25, 0.75]),
    ("v_cvt_f32_u32 v3, v0", None, [np.uint32(0xFFFFFFFF), 7], None, None, [4294967296.0, 7.0]),
    ("v_cvt_f32_i32 v3, v0", None, [-7, 0x7FFFFFFF], None, None, [-7.0, 2147483648.0]),
    ("v_mul_f32 v3, -v0, |v1|", "v_mul_f32_e64 v3, -v0, |v1|", [2.0, -1.0], [-3.0, -4.0], None,
     [-6.0, 4.0]),
    ("v_mul_f32_e64 v3, v0, v1 clamp", None, [2.0, -1.0, 0.25], [3.0, 1.0, 1.0], None,
     [1.0, 0.0, 0.25]),
    # under this table's MODE (IEEE on, denormals kept) hardware ignores an output modifier;
    # where it applies (MODE 0) the hand cases in isa_hand_cases_vfloat.py check it
    ("v_mul_f32_e64 v3, v0, v1 mul:2", None, [1.5], [3.0], None, [4.5]),
    ("v_cvt_f32_ubyte1 v3, v0", None, [0x1234], None, None, [18.0]),
    ("v_div_fixup_f32 v3, v0, v1, v2", None, [2.0, 1.0, 1.0, 1.0], [4.0, 0.0, INF, NAN],
     [8.0, 0.0, 1.0, 1.0], [2.0, NAN, 0.0, NAN]),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", FLOAT_CASES, ids=[c[0] for c in FLOAT_CASES])
def test_float_alu(target, case):
    line9, line12, a, b, c, expect = case
    line = line12 if (target == "gfx1201" and line12) else line9
    v = {0: np.asarray(a, np.float32) if not isinstance(a[0], (int, np.integer)) else a}
    if b is not None:
        v[1] = np.asarray(b) if isinstance(b[0], (int, np.integer)) else np.asarray(b, np.float32)
    if c is not None:
        v[2] = np.asarray(c, np.float32)
    batch, _ = run(target, line, v=v)
    if expect is None:  # v_fmac: accumulates into its destination v2
        got = batch.V[2, 0, : len(a)].view(np.float32)
        expect = np.asarray(a, F) * np.asarray(b, F) + np.asarray(c, F)
    else:
        got = v3f(batch, len(expect))
    np.testing.assert_array_equal(got, np.asarray(expect, np.float32))


@pytest.mark.parametrize("target", TARGETS)
def test_partial_exec_leaves_inactive_lanes(target):
    batch, _ = run(target, "v_add_f32 v3, v0, v1", v={0: [1.0], 1: [2.0]}, exec_lanes=5)
    assert (v3f(batch, 5) == 3.0).all()
    assert (v3u(batch)[5:] == SENTINEL).all()


@pytest.mark.parametrize("target", TARGETS)
def test_division_sequence_is_correctly_rounded(target):
    """v_div_scale / v_rcp / fma / v_div_fmas / v_div_fixup, as LLVM emits for a / b."""
    vcc = "vcc" if target == "gfx942" else "vcc_lo"
    sdst = "s[4:5]" if target == "gfx942" else "s4"
    lines = [
        f"v_div_scale_f32 v4, {sdst}, v1, v1, v0",
        f"v_div_scale_f32 v5, {vcc}, v0, v1, v0",
        "v_rcp_f32 v6, v4",
        "v_fma_f32 v7, -v4, v6, 1.0",
        "v_fma_f32 v6, v7, v6, v6",
        "v_mul_f32 v7, v5, v6",
        "v_fma_f32 v8, -v4, v7, v5",
        "v_fma_f32 v7, v8, v6, v7",
        "v_fma_f32 v4, -v4, v7, v5",
        "v_div_fmas_f32 v4, v4, v6, v7",
        "v_div_fixup_f32 v3, v4, v1, v0",
    ]
    rng = np.random.default_rng(1)
    lanes = WAVE[target]
    num = (rng.standard_normal(lanes) * 10.0 ** rng.integers(-30, 30, lanes)).astype(F)
    den = (rng.standard_normal(lanes) * 10.0 ** rng.integers(-30, 30, lanes)).astype(F)
    num[:4] = [1.0, 0.0, INF, 1e38]
    den[:4] = [3.0, 0.0, 2.0, 1e-38]
    code = assemble(target, lines)
    m = machine()
    V = np.zeros((16, 1, lanes), np.uint32)
    V[0, 0] = num.view(np.uint32)
    V[1, 0] = den.view(np.uint32)
    batch = Batch(0, np.zeros((1, NSREG), np.uint32), V, None, np.ones((1, lanes), bool),
                  np.zeros(1, bool), np.zeros(1, np.int64), np.zeros(1, np.int64))
    info = ProgramInfo("gfx9" if target == "gfx942" else "gfx12", lanes, False, False)
    for raw in code:
        inst = decode(raw, target, 0)[0]
        assert compile_instruction(inst, info)(batch, m) is None
    got = batch.V[3, 0].view(F)
    expect = (num.astype(np.float64) / den.astype(np.float64)).astype(F)
    np.testing.assert_array_equal(got, expect)


# --- VALU integer ----------------------------------------------------------------------------------

INT_CASES = [
    ("v_add_u32 v3, v0, v1", "v_add_nc_u32 v3, v0, v1", [0xFFFFFFFF, 5], [1, 7], None, [0, 12]),
    ("v_sub_u32 v3, v0, v1", "v_sub_nc_u32 v3, v0, v1", [0, 5], [1, 7], None,
     [0xFFFFFFFF, 0xFFFFFFFE]),
    ("v_mul_lo_u32 v3, v0, v1", None, [0x10000, 3], [0x10001, 0xFFFFFFFF], None,
     [0x10000, 0xFFFFFFFD]),
    ("v_mul_hi_u32 v3, v0, v1", None, [0x80000000, 3], [4, 0xFFFFFFFF], None, [2, 2]),
    ("v_mul_hi_i32 v3, v0, v1", None, [0x80000000, 0xFFFFFFFF], [4, 0xFFFFFFFF], None,
     [0xFFFFFFFE, 0]),
    ("v_mul_u32_u24 v3, v0, v1", None, [0x1000003], [0x2], None, [6]),
    ("v_lshlrev_b32 v3, v0, v1", None, [4, 33], [0xF0000001, 1], None, [0x10, 2]),
    ("v_lshrrev_b32 v3, v0, v1", None, [4, 31], [0xF0000000, 0x80000000], None, [0x0F000000, 1]),
    ("v_ashrrev_i32 v3, v0, v1", None, [4, 1], [0xF0000000, 0x7FFFFFFF], None,
     [0xFF000000, 0x3FFFFFFF]),
    ("v_and_b32 v3, v0, v1", None, [0xFF00FF00], [0x0FF00FF0], None, [0x0F000F00]),
    ("v_or_b32 v3, v0, v1", None, [0xFF000000], [0x000000FF], None, [0xFF0000FF]),
    ("v_xor_b32 v3, v0, v1", None, [0xFFFF0000], [0x0F0F0F0F], None, [0xF0F00F0F]),
    ("v_not_b32 v3, v0", None, [0x0F0F0F0F], None, None, [0xF0F0F0F0]),
    ("v_bfrev_b32 v3, v0", None, [0x00000001, 0x80000003], None, None, [0x80000000, 0xC0000001]),
    ("v_bfe_u32 v3, v0, v1, v2", None, [0xABCD1234], [8], [8], [0x12]),
    ("v_bfe_i32 v3, v0, v1, v2", None, [0x0000F000, 0x00007000], [12, 12], [4, 4],
     [0xFFFFFFFF, 7]),
    ("v_lshl_add_u32 v3, v0, v1, v2", None, [3], [4], [5], [53]),
    ("v_add_lshl_u32 v3, v0, v1, v2", None, [3], [5], [2], [32]),
    ("v_max_u32 v3, v0, v1", None, [0xFFFFFFFF, 3], [1, 4], None, [0xFFFFFFFF, 4]),
    ("v_max_i32 v3, v0, v1", None, [0xFFFFFFFF, 3], [1, 4], None, [1, 4]),
    ("v_min_i32 v3, v0, v1", None, [0xFFFFFFFF, 3], [1, 4], None, [0xFFFFFFFF, 3]),
    ("v_cvt_u32_f32 v3, v0", None, [-1.0, 3.9, 5e9, NAN], None, None, [0, 3, 0xFFFFFFFF, 0]),
    ("v_cvt_i32_f32 v3, v0", None, [-1.9, 3e9, -3e9, NAN], None, None,
     [0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0]),
    ("v_mov_b32 v3, v0", None, [0x12345678], None, None, [0x12345678]),
    ("v_mov_b32 v3, -4", None, [0], None, None, [0xFFFFFFFC]),
    ("v_mov_b32 v3, 0.5", None, [0], None, None, [0x3F000000]),
    ("v_mov_b32 v3, 0x12345678", None, [0], None, None, [0x12345678]),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", INT_CASES, ids=[c[0] for c in INT_CASES])
def test_integer_alu(target, case):
    line9, line12, a, b, c, expect = case
    line = line12 if (target == "gfx1201" and line12) else line9
    v = {0: np.asarray(a, np.float32) if isinstance(a[0], float) else np.asarray(a, np.int64)}
    if b is not None:
        v[1] = np.asarray(b, np.int64)
    if c is not None:
        v[2] = np.asarray(c, np.int64)
    batch, _ = run(target, line, v=v)
    np.testing.assert_array_equal(v3u(batch, len(expect)), np.asarray(expect, np.uint32))


@pytest.mark.parametrize("target", TARGETS)
def test_64_bit_shift_and_mad(target):
    batch, _ = run(target, "v_lshlrev_b64 v[4:5], 4, v[0:1]",
                   v={0: [0x80000001], 1: [0x00000001]})
    assert batch.V[4, 0, 0] == 0x00000010 and batch.V[5, 0, 0] == 0x18
    mad = "v_mad_u64_u32 v[4:5], s[6:7], v0, v1, v[2:3]" if target == "gfx942" else \
        "v_mad_co_u64_u32 v[4:5], s6, v0, v1, v[2:3]"
    batch, _ = run(target, mad, v={0: [0xFFFFFFFF], 1: [0xFFFFFFFF], 2: [5], 3: [0]})
    value = int(batch.V[4, 0, 0]) | int(batch.V[5, 0, 0]) << 32
    assert value == 0xFFFFFFFF * 0xFFFFFFFF + 5


@pytest.mark.parametrize("target", TARGETS)
def test_carry_chain_add_co_and_addc(target):
    vcc = "vcc" if target == "gfx942" else "vcc_lo"
    first = f"v_add_co_u32 v3, {vcc}, v0, v1"
    second = f"v_addc_co_u32 v4, {vcc}, v2, 0, {vcc}" if target == "gfx942" else \
        f"v_add_co_ci_u32 v4, {vcc}, v2, 0, {vcc}"
    lanes = WAVE[target]
    code = assemble(target, [first, second])
    V = np.zeros((16, 1, lanes), np.uint32)
    V[0, 0] = 0xFFFFFFFF
    V[1, 0] = np.arange(lanes) % 2       # lanes with 1 carry out
    V[2, 0] = 10
    batch = Batch(0, np.zeros((1, NSREG), np.uint32), V, None, np.ones((1, lanes), bool),
                  np.zeros(1, bool), np.zeros(1, np.int64), np.zeros(1, np.int64))
    info = ProgramInfo("gfx9" if target == "gfx942" else "gfx12", lanes, False, False)
    for raw in code:
        compile_instruction(decode(raw, target, 0)[0], info)(batch, machine())
    odd = np.arange(lanes) % 2 == 1
    assert (batch.V[3, 0][odd] == 0).all() and (batch.V[3, 0][~odd] == 0xFFFFFFFF).all()
    assert (batch.V[4, 0][odd] == 11).all() and (batch.V[4, 0][~odd] == 10).all()


# --- compares, masks, EXEC -------------------------------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op,expect", [
    ("lt", [True, False, False, False, False]), ("eq", [False, True, False, False, False]),
    ("neq", [True, False, True, True, True]), ("nlt", [False, True, True, True, True]),
    ("u", [False, False, True, True, True]), ("o", [True, True, False, False, False]),
    ("gt", [False, False, False, False, False]),
])
def test_float_compare_with_nan_writes_vcc(target, op, expect):
    vcc = "vcc" if target == "gfx942" else "vcc_lo"
    a = [1.0, 2.0, NAN, 1.0, NAN]
    b = [2.0, 2.0, 1.0, NAN, NAN]
    batch, _ = run(target, f"v_cmp_{op}_f32 {vcc}, v0, v1", v={0: a + [5.0], 1: b + [5.0]},
                   exec_lanes=5)
    bits = int(batch.S[0, 106]) | (int(batch.S[0, 107]) << 32 if target == "gfx942" else 0)
    got = [(bits >> lane) & 1 == 1 for lane in range(5)]
    assert got == expect
    assert bits >> 5 == 0                     # inactive lanes read as 0


@pytest.mark.parametrize("target", TARGETS)
def test_signed_and_unsigned_integer_compares_differ(target):
    vcc = "vcc" if target == "gfx942" else "vcc_lo"
    signed, _ = run(target, f"v_cmp_gt_i32 {vcc}, v0, v1", v={0: [0xFFFFFFFF], 1: [1]})
    unsigned, _ = run(target, f"v_cmp_gt_u32 {vcc}, v0, v1", v={0: [0xFFFFFFFF], 1: [1]})
    assert signed.S[0, 106] == 0 and unsigned.S[0, 106] == 0xFFFFFFFF


@pytest.mark.parametrize("target", TARGETS)
def test_cndmask_selects_by_vcc(target):
    vcc = "vcc" if target == "gfx942" else "vcc_lo"
    lanes = WAVE[target]
    code = assemble(target, [f"v_cndmask_b32 v3, v0, v1, {vcc}"])[0]
    V = np.zeros((16, 1, lanes), np.uint32)
    V[0, 0], V[1, 0] = 100, 200
    S = np.zeros((1, NSREG), np.uint32)
    S[0, 106], S[0, 107] = 0x55555555, 0x55555555
    batch = Batch(0, S, V, None, np.ones((1, lanes), bool), np.zeros(1, bool),
                  np.zeros(1, np.int64), np.zeros(1, np.int64))
    info = ProgramInfo("gfx9" if target == "gfx942" else "gfx12", lanes, False, False)
    compile_instruction(decode(code, target, 0)[0], info)(batch, machine())
    assert list(batch.V[3, 0, :4]) == [200, 100, 200, 100]


@pytest.mark.parametrize("target", TARGETS)
def test_cmpx_narrows_exec(target):
    line = "v_cmpx_gt_u32 vcc, v0, v1" if target == "gfx942" else "v_cmpx_gt_u32 v0, v1"
    batch, _ = run(target, line, v={0: [5, 1, 5, 1], 1: [3]})
    assert list(batch.exec[0, :4]) == [True, False, True, False]


@pytest.mark.parametrize("target", TARGETS)
def test_and_saveexec(target):
    if target == "gfx942":
        line, exec_row = "s_and_saveexec_b64 s[4:5], s[0:1]", None
        batch, _ = run(target, line, s={0: 0x0000000F, 1: 0x1}, exec_lanes=34)
        assert batch.S[0, 4] == 0xFFFFFFFF and batch.S[0, 5] == 0x3
        assert list(np.flatnonzero(batch.exec[0])) == [0, 1, 2, 3, 32]
    else:
        batch, _ = run(target, "s_and_saveexec_b32 s4, s0", s={0: 0xF0}, exec_lanes=6)
        assert batch.S[0, 4] == 0x3F
        assert list(np.flatnonzero(batch.exec[0])) == [4, 5]
    assert batch.scc[0]
    empty, _ = run(target, "s_and_saveexec_b32 s4, s0" if target == "gfx1201"
                   else "s_and_saveexec_b64 s[4:5], s[0:1]", s={0: 0})
    assert not empty.scc[0] and not empty.exec.any()


@pytest.mark.parametrize("target", TARGETS)
def test_readfirstlane_and_mbcnt(target):
    batch, _ = run(target, "v_readfirstlane_b32 s4, v0", v={0: list(range(100, 164))},
                   exec_lanes=None)
    assert batch.S[0, 4] == 100
    lanes = WAVE[target]
    code = assemble(target, ["v_mbcnt_lo_u32_b32 v3, -1, 0"])[0]
    V = np.zeros((16, 1, lanes), np.uint32)
    batch = Batch(0, np.zeros((1, NSREG), np.uint32), V, None, np.ones((1, lanes), bool),
                  np.zeros(1, bool), np.zeros(1, np.int64), np.zeros(1, np.int64))
    info = ProgramInfo("gfx9" if target == "gfx942" else "gfx12", lanes, False, False)
    compile_instruction(decode(code, target, 0)[0], info)(batch, machine())
    assert list(batch.V[3, 0]) == [min(i, 32) for i in range(lanes)]


# --- scalar ALU ------------------------------------------------------------------------------------

SCALAR_CASES = [
    # (gfx942 line, gfx1201 line, s0, s1, expected s4, expected scc)
    ("s_add_u32 s4, s0, s1", "s_add_co_u32 s4, s0, s1", 0xFFFFFFFF, 2, 1, True),
    ("s_add_i32 s4, s0, s1", "s_add_co_i32 s4, s0, s1", 0x7FFFFFFF, 1, 0x80000000, True),
    ("s_sub_u32 s4, s0, s1", "s_sub_co_u32 s4, s0, s1", 1, 2, 0xFFFFFFFF, True),
    ("s_mul_i32 s4, s0, s1", None, 0xFFFFFFFF, 3, 0xFFFFFFFD, False),
    ("s_mul_hi_u32 s4, s0, s1", None, 0x80000000, 6, 3, False),
    ("s_and_b32 s4, s0, s1", None, 0xF0, 0x0F, 0, False),
    ("s_or_b32 s4, s0, s1", None, 0xF0, 0x0F, 0xFF, True),
    ("s_andn2_b32 s4, s0, s1", "s_and_not1_b32 s4, s0, s1", 0xFF, 0x0F, 0xF0, True),
    ("s_lshl_b32 s4, s0, s1", None, 3, 30, 0xC0000000, True),
    ("s_lshr_b32 s4, s0, s1", None, 0x80000000, 31, 1, True),
    ("s_ashr_i32 s4, s0, s1", None, 0x80000000, 31, 0xFFFFFFFF, True),
    ("s_bfe_u32 s4, s0, s1", None, 0xABCD1234, (8 << 16) | 8, 0x12, True),
    ("s_min_u32 s4, s0, s1", None, 0xFFFFFFFF, 2, 2, False),
    ("s_max_i32 s4, s0, s1", None, 0xFFFFFFFF, 2, 2, False),
    ("s_cselect_b32 s4, s0, s1", None, 11, 22, 22, False),
    ("s_mov_b32 s4, s0", None, 0x1234, 0, 0x1234, False),
    ("s_not_b32 s4, s0", None, 0xFFFFFFFF, 0, 0, False),
    ("s_bcnt1_i32_b32 s4, s0", None, 0xF0F0, 0, 8, True),
    ("s_ff1_i32_b32 s4, s0", "s_ctz_i32_b32 s4, s0", 0x100, 0, 8, False),
    ("s_brev_b32 s4, s0", None, 1, 0, 0x80000000, False),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", SCALAR_CASES, ids=[c[0] for c in SCALAR_CASES])
def test_scalar_alu(target, case):
    line9, line12, a, b, expect, scc = case
    line = line12 if (target == "gfx1201" and line12) else line9
    batch, _ = run(target, line, s={0: a, 1: b})
    assert batch.S[0, 4] == expect
    if not line.startswith(("s_mul", "s_mov", "s_cselect", "s_ff1", "s_ctz", "s_brev")):
        assert bool(batch.scc[0]) == scc


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("line,a,b,scc", [
    ("s_cmp_lt_u32 s0, s1", 1, 0xFFFFFFFF, True), ("s_cmp_lt_i32 s0, s1", 1, 0xFFFFFFFF, False),
    ("s_cmp_eq_u32 s0, s1", 5, 5, True), ("s_cmp_lg_u32 s0, s1", 5, 5, False),
])
def test_scalar_compare_sets_scc(target, line, a, b, scc):
    batch, _ = run(target, line, s={0: a, 1: b})
    assert bool(batch.scc[0]) == scc


@pytest.mark.parametrize("target", TARGETS)
def test_scalar_64_bit_ops(target):
    batch, _ = run(target, "s_lshl_b64 s[4:5], s[0:1], 4", s={0: 0x80000001, 1: 0})
    assert batch.S[0, 4] == 0x10 and batch.S[0, 5] == 0x8
    batch, _ = run(target, "s_addc_u32 s4, s0, s1" if target == "gfx942"
                   else "s_add_co_ci_u32 s4, s0, s1", s={0: 0xFFFFFFFF, 1: 0}, scc=True)
    assert batch.S[0, 4] == 0 and batch.scc[0]


# --- program flow ----------------------------------------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
def test_flow_results(target):
    _, end = run(target, "s_endpgm")
    _, barrier = run(target, "s_barrier" if target == "gfx942" else "s_barrier_wait 0xffff")
    assert end == END and barrier == BARRIER
    _, taken = run(target, "s_cbranch_scc1 4", scc=True)
    _, fallthrough = run(target, "s_cbranch_scc1 4", scc=False)
    assert taken == 0x1000 + 4 + 4 * 4 and fallthrough is None
    _, skipped = run(target, "s_cbranch_execz 2", exec_lanes=0)
    assert skipped == 0x1000 + 4 + 2 * 4
    for line in ("s_nop 3", "s_waitcnt 0" if target == "gfx942" else "s_wait_loadcnt 0"):
        assert run(target, line)[1] is None


# --- LDS -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
def test_lds_write2_read2_and_out_of_range(target):
    m = machine()
    write2 = "ds_write2_b32 v0, v1, v2 offset1:1" if target == "gfx942" else \
        "ds_store_2addr_b32 v0, v1, v2 offset1:1"
    read2 = "ds_read2_b32 v[4:5], v0 offset1:1" if target == "gfx942" else \
        "ds_load_2addr_b32 v[4:5], v0 offset1:1"
    lanes = WAVE[target]
    run(target, write2, v={0: np.arange(lanes) * 8, 1: np.arange(lanes), 2: np.arange(lanes) + 100},
        m=m)
    assert list(m.lds_words[:4]) == [0, 100, 1, 101]
    batch, _ = run(target, read2, v={0: np.arange(lanes) * 8}, m=m)
    assert list(batch.V[4, 0, :2]) == [0, 1] and list(batch.V[5, 0, :2]) == [100, 101]
    read = "ds_read_b32 v3, v0" if target == "gfx942" else "ds_load_b32 v3, v0"
    batch, _ = run(target, read, v={0: [4096]}, m=m)          # beyond the 1 KiB LDS: reads 0
    assert batch.V[3, 0, 0] == 0


@pytest.mark.parametrize("target", TARGETS)
def test_lds_atomic_add_returns_values_in_one_serial_order(target):
    m = machine()
    line = "ds_add_rtn_u32 v3, v0, v1" if target == "gfx942" else "ds_add_rtn_u32 v3, v0, v1"
    lanes = WAVE[target]
    batch, _ = run(target, line, v={0: [0], 1: [1]}, m=m)     # every lane adds 1 to LDS[0]
    assert m.lds_words[0] == lanes
    assert sorted(batch.V[3, 0].tolist()) == list(range(lanes))
    assert list(batch.V[3, 0]) == list(range(lanes))           # lane order


@pytest.mark.parametrize("target", TARGETS)
def test_bpermute_pulls_from_lane(target):
    lanes = WAVE[target]
    batch, _ = run(target, "ds_bpermute_b32 v3, v0, v1",
                   v={0: ((np.arange(lanes) + 1) % lanes) * 4, 1: np.arange(lanes) + 10})
    assert list(batch.V[3, 0]) == [10 + (i + 1) % lanes for i in range(lanes)]


@pytest.mark.parametrize("target", TARGETS)
def test_swizzle_quad_and_bitmask_modes(target):
    lanes = WAVE[target]
    batch, _ = run(target, "ds_swizzle_b32 v3, v1 offset:swizzle(QUAD_PERM,3,2,1,0)",
                   v={1: np.arange(lanes)})
    assert list(batch.V[3, 0, :8]) == [3, 2, 1, 0, 7, 6, 5, 4]
    batch, _ = run(target, "ds_swizzle_b32 v3, v1 offset:swizzle(BITMASK_PERM,\"ppppi\")",
                   v={1: np.arange(lanes)})
    assert list(batch.V[3, 0, :4]) == [1, 0, 3, 2]


# --- global memory -----------------------------------------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
def test_global_loads_of_every_width_and_atomics(target):
    m = machine()
    base = m.memory.allocate(4096, 256)
    m.memory.write(base, np.arange(256, dtype=np.uint32).view(np.uint8))
    lo, hi = base & 0xFFFFFFFF, base >> 32
    names9 = {"x4": "global_load_dwordx4 v[4:7], v0, s[0:1]",
              "u8": "global_load_ubyte v4, v0, s[0:1] offset:1",
              "i16": "global_load_sshort v4, v0, s[0:1]",
              "add": "global_atomic_add v4, v0, v1, s[0:1] sc0"}
    names12 = {"x4": "global_load_b128 v[4:7], v0, s[0:1]",
               "u8": "global_load_u8 v4, v0, s[0:1] offset:1",
               "i16": "global_load_i16 v4, v0, s[0:1]",
               "add": "global_atomic_add_u32 v4, v0, v1, s[0:1] th:TH_ATOMIC_RETURN"}
    names = names9 if target == "gfx942" else names12
    lanes = WAVE[target]
    batch, _ = run(target, names["x4"], v={0: np.arange(lanes) * 16}, s={0: lo, 1: hi}, m=m)
    assert list(batch.V[4:8, 0, 1]) == [4, 5, 6, 7]
    batch, _ = run(target, names["u8"], v={0: [4]}, s={0: lo, 1: hi}, m=m)
    assert batch.V[4, 0, 0] == 0                              # byte 5 of dword 1 (= 1) is 0
    m.memory.write(base + 512, np.array([0xFFFE], np.uint16).view(np.uint8))
    batch, _ = run(target, names["i16"], v={0: [512]}, s={0: lo, 1: hi}, m=m)
    assert batch.V[4, 0, 0] == 0xFFFFFFFE                      # sign-extended
    m.memory.write(base + 1024, np.zeros(4, np.uint8))
    batch, _ = run(target, names["add"], v={0: [1024], 1: [2]}, s={0: lo, 1: hi}, m=m)
    assert list(batch.V[4, 0]) == [2 * i for i in range(lanes)]
    assert m.memory.read_u32(base + 1024) == 2 * lanes


@pytest.mark.parametrize("target", TARGETS)
def test_smem_load_reads_the_kernarg_words(target):
    m = machine()
    base = m.memory.allocate(64, 64)
    m.memory.write(base, np.array([11, 22, 33, 44], np.uint32).view(np.uint8))
    line = "s_load_dwordx2 s[4:5], s[0:1], 0x4" if target == "gfx942" else \
        "s_load_b64 s[4:5], s[0:1], 0x4"
    batch, _ = run(target, line, s={0: base & 0xFFFFFFFF, 1: base >> 32}, m=m)
    assert list(batch.S[0, 4:6]) == [22, 33]


@pytest.mark.parametrize("target", TARGETS)
def test_memtime_reads_the_clock(target):
    line = "s_memtime s[4:5]" if target == "gfx942" else "s_getpc_b64 s[4:5]"
    batch, _ = run(target, line)
    value = int(batch.S[0, 4]) | int(batch.S[0, 5]) << 32
    if target == "gfx942":
        assert value >= 0
    else:
        assert value == 0x1000 + 4              # s_getpc_b64: address of the next instruction


def test_vopd_reads_both_sources_before_writing():
    # v_dual_mov_b32 v0, v1 :: v_dual_mov_b32 v1, v0 swaps (the Y half reads the old v0)
    batch, _ = run("gfx1201", "v_dual_mov_b32 v0, v1 :: v_dual_mov_b32 v3, v0",
                   v={0: [1], 1: [2]})
    assert batch.V[0, 0, 0] == 2 and batch.V[3, 0, 0] == 1


@pytest.mark.parametrize("target", TARGETS)
def test_dpp_row_shift_quad_perm_and_masks(target):
    lanes = WAVE[target]
    src = {0: np.arange(lanes) + 100}
    batch, _ = run(target, "v_mov_b32_dpp v3, v0 row_shr:1 row_mask:0xf bank_mask:0xf "
                           "bound_ctrl:1", v=src)
    expect = [0 if i % 16 == 0 else 100 + i - 1 for i in range(lanes)]   # bound_ctrl: zero
    assert list(batch.V[3, 0]) == expect
    batch, _ = run(target, "v_mov_b32_dpp v3, v0 row_shr:1 row_mask:0xf bank_mask:0xf", v=src)
    assert batch.V[3, 0, 0] == SENTINEL and batch.V[3, 0, 1] == 100   # no source: not written
    batch, _ = run(target, "v_mov_b32_dpp v3, v0 quad_perm:[3,2,1,0] row_mask:0xf "
                           "bank_mask:0xe", v=src)
    assert list(batch.V[3, 0, :8]) == [SENTINEL] * 4 + [107, 106, 105, 104]   # bank 0 masked
    batch, _ = run(target, "v_add_f32_dpp v3, v0, v1 row_shr:2 row_mask:0xf bank_mask:0xf "
                           "bound_ctrl:1", v={0: np.arange(lanes, dtype=np.float32),
                                              1: np.full(lanes, 0.5, np.float32)})
    assert list(v3f(batch, 4)) == [0.5, 0.5, 0.5, 1.5]


def test_dpp8_and_vop3_dpp_on_gfx1201():
    lanes = WAVE["gfx1201"]
    batch, _ = run("gfx1201", "v_mov_b32_dpp v3, v0 dpp8:[1,0,3,2,5,4,7,6]",
                   v={0: np.arange(lanes) + 10}, exec_lanes=lanes - 1)
    assert list(batch.V[3, 0, :8]) == [11, 10, 13, 12, 15, 14, 17, 16]
    assert batch.V[3, 0, lanes - 2] == 0          # its source lane is outside EXEC: reads 0
    batch, _ = run("gfx1201", "v_add_f32_e64_dpp v3, -v0, |v1| row_shr:1 row_mask:0xf "
                              "bank_mask:0xf bound_ctrl:1",
                   v={0: np.arange(lanes, dtype=np.float32), 1: np.full(lanes, -2.0, np.float32)})
    assert list(v3f(batch, 3)) == [2.0, 2.0, 1.0]  # -(lane-1) + |-2|, lane 0 reads 0


@pytest.mark.parametrize("target", TARGETS)
def test_bitcmp_and_dot2(target):
    batch, _ = run(target, "s_bitcmp1_b32 s0, 3", s={0: 0b1000})
    assert batch.scc[0]
    batch, _ = run(target, "s_bitcmp1_b32 s0, 2", s={0: 0b1000})
    assert not batch.scc[0]
    halves = np.array([1.5, -2.0], np.float16).view(np.uint32)[0]
    other = np.array([4.0, 0.25], np.float16).view(np.uint32)[0]
    batch, _ = run(target, "v_dot2_f32_f16 v3, v0, v1, v2",
                   v={0: [halves], 1: [other], 2: np.array([10.0], np.float32)})
    assert v3f(batch, 1)[0] == 1.5 * 4.0 - 2.0 * 0.25 + 10.0


def test_gfx12_d16_loads_merge_into_one_half():
    m = machine()
    base = m.memory.allocate(64, 64)
    m.memory.write(base, bytes([0x80, 0x7F, 0x34, 0x12]))
    s = {0: base & 0xFFFFFFFF, 1: base >> 32}
    batch, _ = run("gfx1201", "global_load_d16_u8 v3, v0, s[0:1]", v={0: [0], 3: [0xAAAABBBB]},
                   s=s, m=m)
    assert batch.V[3, 0, 0] == 0xAAAA0080
    batch, _ = run("gfx1201", "global_load_d16_hi_b16 v3, v0, s[0:1] offset:2",
                   v={0: [0], 3: [0xAAAABBBB]}, s=s, m=m)
    assert batch.V[3, 0, 0] == 0x1234BBBB


def test_packed_f32_math_on_gfx942_register_pairs():
    a = np.array([1.5, -2.0], np.float32).view(np.uint32)
    b = np.array([4.0, 0.25], np.float32).view(np.uint32)
    batch, _ = run("gfx942", "v_pk_mul_f32 v[4:5], v[0:1], v[2:3]",
                   v={0: [a[0]], 1: [a[1]], 2: [b[0]], 3: [b[1]]})
    assert list(batch.V[4:6, 0, 0].view(np.float32)) == [6.0, -0.5]
    batch, _ = run("gfx942", "v_pk_add_f32 v[4:5], v[0:1], v[2:3] op_sel_hi:[0,1]",
                   v={0: [a[0]], 1: [a[1]], 2: [b[0]], 3: [b[1]]})
    assert list(batch.V[4:6, 0, 0].view(np.float32)) == [5.5, 1.75]  # hi half reads a.lo


@pytest.mark.parametrize("ftz", [False, True])
def test_packed_f32_math_flushes_denormals_when_the_mode_does(ftz):
    tiny = float(np.finfo(np.float32).tiny)
    a = np.array([0.75 * tiny, 0.5], np.float32).view(np.uint32)       # a denormal input
    b = np.array([0.5 * tiny, 0.5 * tiny], np.float32).view(np.uint32)
    batch, _ = run("gfx942", "v_pk_add_f32 v[4:5], v[0:1], v[2:3]",
                   v={0: [a[0]], 1: [a[1]], 2: [b[0]], 3: [b[1]]}, ftz=ftz)
    # flushed: 0 + 0, and 0.5 + 0; kept: the sum of two denormals is normal (1.25 * tiny)
    want = [0.0, 0.5] if ftz else [np.float32(1.25 * tiny), np.float32(0.5 + 0.5 * tiny)]
    assert list(batch.V[4:6, 0, 0].view(np.float32)) == want
    c = np.array([tiny, 2.0 ** -100], np.float32).view(np.uint32)
    batch, _ = run("gfx942", "v_pk_mul_f32 v[4:5], v[0:1], v[2:3]",
                   v={0: [c[0]], 1: [c[1]], 2: [c[0]], 3: [c[1]]}, ftz=ftz)
    # normal operands, denormal (or underflowing) products: flushed to +0 when the mode flushes
    want = [0.0, 0.0] if ftz else [0.0, float(np.float32(2.0 ** -100) ** 2)]
    assert list(batch.V[4:6, 0, 0].view(np.float32)) == want


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ftz", [False, True])
def test_packed_f16_math_flushes_denormals_when_the_mode_does(target, ftz):
    denormal = np.float16(2.0 ** -20)
    a = np.array([denormal, 1.0], np.float16).view(np.uint32)[0]
    b = np.array([denormal, 2.0 ** -14], np.float16).view(np.uint32)[0]
    batch, _ = run(target, "v_pk_add_f16 v3, v0, v1", v={0: [a], 1: [b]}, ftz=ftz)
    got = list(batch.V[3, 0, :1].view(np.float16))
    assert got == ([0.0, 1.0] if ftz else [np.float16(2.0 ** -19), np.float16(1.0)])


@pytest.mark.parametrize("ftz", [False, True])
@pytest.mark.parametrize("line,s1,want_kept", [
    ("s_mul_f32 s4, s0, s1", 0.5, 0.5 * DENORM),       # a denormal input and result
    ("s_add_f32 s4, s0, s1", DENORM, 2 * DENORM),
    ("s_fmac_f32 s4, s0, s1", 0.5, 0.5 * DENORM),      # s4 (the accumulator) starts at 0
])
def test_gfx12_scalar_float_math_flushes_denormals_when_the_mode_does(line, s1, want_kept, ftz):
    batch, _ = run("gfx1201", line, s={0: DENORM, 1: s1}, ftz=ftz)
    got = batch.S[0, 4:5].view(np.float32)[0]
    assert got == (np.float32(0.0) if ftz else np.float32(want_kept))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ftz", [False, True])
def test_fma_mix_flushes_f32_denormals_when_the_mode_does(target, ftz):
    # src0, src1: the low f16 halves (1.0 and 0.0); src2: an f32 denormal, so a * b + c = c
    halves = np.array([1.0, 0.0], np.float16).view(np.uint32)[0]
    zero = np.array([0.0, 0.0], np.float16).view(np.uint32)[0]
    line = "v_fma_mix_f32 v3, v0, v1, v2 op_sel_hi:[1,1,0]"
    batch, _ = run(target, line, v={0: [halves], 1: [zero], 2: [DENORM]}, ftz=ftz)
    assert v3f(batch, 1)[0] == (np.float32(0.0) if ftz else np.float32(DENORM))


@pytest.mark.parametrize("target", TARGETS)
def test_packed_float_clamp_clamps_each_half_to_zero_one(target):
    a = np.array([1.5, -0.25], np.float16).view(np.uint32)[0]
    b = np.array([0.25, 0.5], np.float16).view(np.uint32)[0]
    batch, _ = run(target, "v_pk_add_f16 v3, v0, v1 clamp", v={0: [a], 1: [b]})
    assert list(batch.V[3, 0, :1].view(np.float16)) == [1.0, 0.25]


def test_packed_f32_clamp_clamps_each_half_to_zero_one():
    a = np.array([3.0, -2.0], np.float32).view(np.uint32)
    b = np.array([0.25, 0.5], np.float32).view(np.uint32)
    batch, _ = run("gfx942", "v_pk_mul_f32 v[4:5], v[0:1], v[2:3] clamp",
                   v={0: [a[0]], 1: [a[1]], 2: [b[0]], 3: [b[1]]})
    assert list(batch.V[4:6, 0, 0].view(np.float32)) == [0.75, 0.0]


@pytest.mark.parametrize("target", TARGETS)
def test_packed_f16_add(target):
    a = np.array([1.5, -2.0], np.float16).view(np.uint32)[0]
    b = np.array([0.25, 65504.0], np.float16).view(np.uint32)[0]
    batch, _ = run(target, "v_pk_add_f16 v3, v0, v1", v={0: [a], 1: [b]})
    assert list(batch.V[3, 0, :1].view(np.float16)) == [1.75, 65504.0]


@pytest.mark.parametrize("target", TARGETS)
def test_global_cmpswap_in_lane_order(target):
    m = machine()
    base = m.memory.allocate(64, 64)
    line = "global_atomic_cmpswap v3, v0, v[4:5], s[0:1] sc0" if target == "gfx942" else \
        "global_atomic_cmpswap_b32 v3, v0, v[4:5], s[0:1] th:TH_ATOMIC_RETURN"
    lanes = WAVE[target]
    # every lane tries: if *p == 0 then *p = lane + 1; only lane 0 wins in the serial order
    batch, _ = run(target, line, v={0: [0], 4: np.arange(lanes) + 1, 5: [0]},
                   s={0: base & 0xFFFFFFFF, 1: base >> 32}, m=m)
    assert m.memory.read_u32(base) == 1
    assert batch.V[3, 0, 0] == 0 and (batch.V[3, 0, 1:] == 1).all()


@pytest.mark.parametrize("target", TARGETS)
def test_lds_write2_stride64_scales_offsets_by_64_elements(target):
    m = machine()
    line = "ds_write2st64_b32 v0, v1, v2 offset1:1" if target == "gfx942" else \
        "ds_store_2addr_stride64_b32 v0, v1, v2 offset1:1"
    run(target, line, v={0: [0], 1: [7], 2: [9]}, exec_lanes=1, m=m)
    assert m.lds_words[0] == 7 and m.lds_words[64] == 9      # offset1 * 64 * 4 bytes
