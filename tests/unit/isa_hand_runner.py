"""Runner for the hand-checked per-instruction cases (tests/unit/isa_hand_cases_*.py).

A case is one instruction line, the register/memory state it starts from and the state it must
leave, all written by hand. The line is assembled by llvm-mc-19 (every line of a target in ONE
call, cached per process), decoded by hsapy's decoder and compiled by the interpreter
(``compile_instruction``) -- the same path a kernel takes -- and run on one wave.

State keys (inputs and expectations) name a register and how its bits are read:

``"v3.f32"``   VGPR 3 per lane, values are floats (a list: lane 0, 1, ...; inputs are repeated
               over the wave). Types: ``b32 u32 i32 f32`` (whole dword), ``f16 u16 i16`` (low
               half; an input's high half is 0, an expectation compares the low half only),
               ``h2`` (two f16 halves: a list of (lo, hi) pairs), ``f64 u64 i64 b64`` (the pair
               v3:v4).
``"a3.u32"``   AGPR 3 (gfx942), as a VGPR.
``"s4.u32"``   SGPR 4 (one value; 64-bit types use s4:s5).
``"mode"``     (inputs) the wave's MODE register (an int); the instruction is then compiled for
               that MODE value (without it: round to nearest, denormals per ``ftz``).
``"scc"``      bool. ``"vcc"`` / ``"exec"``: the lane mask as a string of 0/1 in lane order
               ("1001" = lanes 0 and 3; an input's remaining lanes are 0; an expectation checks the
               lanes it names).
``"mem"``      dwords at a 256-byte buffer whose address is in s[20:21] and in every lane's
               v[20:21]. ``"lds"``: dwords at LDS address 0. ``"scratch"``: bytes at private
               offset 0 of every lane (expectation: lane 0).

``"rsrc"``     (inputs only) a buffer resource (V#) over the "mem" buffer: ``(first SGPR, word1
               bits above the address (stride << 16, swizzle), num_records, word3)``; the base is
               the buffer's address. ``"rsrc_private"``: the first SGPR of the private segment
               buffer V# the executor writes for scratch (hsapy.sim.isa.semantics_buffer).

``"raises"``   (expectations only) ``(exception type, text in its message)``: running the
               instruction must raise it (s_trap ends the dispatch with a queue error).
``"check"``    (expectations only) ``fn(batch, machine)`` asserting what a table cannot say
               (a clock value).

Inputs may also hold ``"exec"`` (lanes outside it keep their old value: expect ``KEEP``, the
0xDEADBEEF every VGPR starts with) and ``"scc"``. A float expectation of NaN accepts any NaN of
that width (the ISA does not promise one payload for every opcode).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from hsapy.sim.clock import SimClock
from hsapy.sim.isa import decode
from hsapy.sim.isa.interpreter import ProgramInfo
from hsapy.sim.isa.semantics import compile_instruction
from hsapy.sim.isa.wave import NSREG, Batch, pack_mask
from hsapy.sim.memory import SimMemory

TARGETS = ("gfx942", "gfx1201")
# gfx90a runs only the cases of its own (tests/unit/test_isa_gfx90a.py): opcodes gfx942 lacks
FAMILY = {"gfx942": "gfx9", "gfx1201": "gfx12", "gfx90a": "gfx9"}
WAVE = {"gfx942": 64, "gfx1201": 32, "gfx90a": 64}
KEEP = 0xDEADBEEF          # every VGPR starts as this; an inactive lane must still hold it
NVGPR = 32
BUFFER_SGPR = 20           # s[20:21] and v[20:21] hold the "mem" buffer's address
INF = float("inf")
NAN = float("nan")


@dataclass(frozen=True)
class Case:
    """One hand-checked instruction: ``target`` is "gfx942", "gfx1201" or "*" (both)."""

    target: str
    line: str
    inputs: dict[str, Any]
    expect: dict[str, Any]
    why: str = ""
    result: Any = field(default=None)   # the closure's return value (None: next instruction)
    ftz: bool = False    # kernel descriptor denormal mode "flush" (f32 and f16/f64) instead of keep
    wave: int = 0        # wave size to decode and run with (0: the target's default)

    def runs_on(self, target: str) -> bool:
        return self.target in ("*", target)

    @property
    def id(self) -> str:
        return f"{self.target}:{self.line}"


def case(target: str, line: str, inputs: dict, expect: dict, why: str = "",
         result: Any = None, ftz: bool = False, wave: int = 0) -> Case:
    return Case(target, line, dict(inputs), dict(expect), why, result, ftz, wave)


def both(line9: str, line12: str | None, inputs: dict, expect: dict, why: str = "",
         result: Any = None) -> list[Case]:
    """The same hand values for gfx942 (``line9``) and gfx1201 (``line12``, default the same)."""
    line12 = line9 if line12 is None else line12
    if line9 == line12:
        return [case("*", line9, inputs, expect, why, result)]
    return [case("gfx942", line9, inputs, expect, why, result),
            case("gfx1201", line12, inputs, expect, why, result)]


# --- assembling ----------------------------------------------------------------------------------

_ENCODINGS: dict[tuple[str, str], bytes] = {}


def assemble_all(target: str, lines: list[str]) -> None:
    """Assemble every line not yet cached with one llvm-mc-19 call."""
    missing = sorted({line for line in lines if (target, line) not in _ENCODINGS})
    if not missing:
        return
    if shutil.which("llvm-mc-19") is None:
        pytest.skip("llvm-mc-19 not found (Debian package llvm-19)")
    proc = subprocess.run(
        ["llvm-mc-19", "-triple=amdgcn-amd-amdhsa", f"-mcpu={target}", "-show-encoding"],
        input="\n".join(missing) + "\n", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr[:4000]
    encodings = re.findall(r"encoding: \[([^\]]*)\]", proc.stdout)
    assert len(encodings) == len(missing), proc.stdout[-2000:]
    for line, enc in zip(missing, encodings):
        _ENCODINGS[(target, line)] = bytes(int(x, 16) for x in enc.split(","))


def decoded(target: str, line: str, wave: int | None = None):
    assemble_all(target, [line])
    return decode(_ENCODINGS[(target, line)], target, 0x1000, wavefront_size=wave)[0]


# --- values ---------------------------------------------------------------------------------------

_RE_KEY = re.compile(r"^([vsa])(\d+)\.(\w+)$")
_WIDE = {"f64", "u64", "i64", "b64"}


def _bits(ty: str, value: Any) -> int:
    """The register bits of one value of type ``ty`` (64-bit types: the whole pair)."""
    if ty == "f32":
        return int(np.float32(value).view(np.uint32))
    if ty == "f16":
        return int(np.float16(value).view(np.uint16))
    if ty == "h2":
        lo, hi = value
        return _bits("f16", lo) | _bits("f16", hi) << 16
    if ty == "f64":
        return int(np.float64(value).view(np.uint64))
    if ty in ("u16", "i16"):
        return int(value) & 0xFFFF
    if ty in _WIDE:
        return int(value) & (2 ** 64 - 1)
    return int(value) & 0xFFFFFFFF


def _is_nan(ty: str, value: Any) -> bool:
    if ty == "h2":
        return any(isinstance(v, float) and v != v for v in value)
    return ty in ("f16", "f32", "f64") and isinstance(value, float) and value != value


def _matches(ty: str, expect: Any, got: int) -> bool:
    if ty == "h2":
        return all(_matches("f16", e, (got >> s) & 0xFFFF) for e, s in zip(expect, (0, 16)))
    if ty in ("f16", "u16", "i16"):
        got &= 0xFFFF
    if expect is KEEP_MARK:
        return got == KEEP
    if _is_nan(ty, expect):
        width = {"f16": 16, "f32": 32, "f64": 64}[ty]
        exp_bits = {16: 0x7C00, 32: 0x7F800000, 64: 0x7FF0000000000000}[width]
        mant = {16: 0x3FF, 32: 0x7FFFFF, 64: 0xFFFFFFFFFFFFF}[width]
        return (got & exp_bits) == exp_bits and (got & mant) != 0
    return got == _bits(ty, expect)


class _Keep:
    def __repr__(self) -> str:
        return "KEEP"


KEEP_MARK = _Keep()     # expectation: this lane is outside EXEC and keeps 0xDEADBEEF


def _mask(text: str, lanes: int) -> np.ndarray:
    bits = [c == "1" for c in text]
    return np.array(bits + [False] * (lanes - len(bits)), bool)


# --- running --------------------------------------------------------------------------------------

def machine(private_size: int = 64) -> SimpleNamespace:
    lds_size = 1024
    lds = np.zeros(lds_size + 16, np.uint8)
    return SimpleNamespace(memory=SimMemory(), agent=None, clock=SimClock(), lds=lds,
                           lds_words=lds[:lds_size].view(np.uint32), lds_size=lds_size,
                           lds_stride=lds_size, private_size=private_size, shared_base=1 << 48,
                           private_base=2 << 48, pending=[])


def run_case(target: str, c: Case, runner: Any = None) -> None:
    """Run ``c`` on ``target`` and assert every expectation (message names the case).
    ``runner(inst, info, batch, machine) -> result`` runs the instruction (default: the
    interpreter's closure)."""
    lanes = c.wave or WAVE[target]
    inst = decoded(target, c.line, lanes)
    if "mode" in c.inputs:   # compiled for that MODE value, as the executor's programs are
        info = ProgramInfo.for_mode(FAMILY[target], lanes, c.inputs["mode"])
    else:
        info = ProgramInfo(FAMILY[target], lanes, c.ftz, c.ftz)
    fn = compile_instruction(inst, info)
    assert getattr(fn, "unimplemented", None) is None, f"{c.line}: {fn.unimplemented}"
    batch, m, buffer = setup_case(target, c, lanes)
    where = f"{target} {c.line!r} ({c.why})"
    if runner is None:
        def runner(inst, info, batch, m):
            return fn(batch, m)
    if "raises" in c.expect:
        kind, text = c.expect["raises"]
        with pytest.raises(kind) as info_, np.errstate(all="ignore"):
            runner(inst, info, batch, m)
        assert text in str(info_.value), f"{where}: {info_.value}"
        return
    with np.errstate(all="ignore"):
        result = runner(inst, info, batch, m)
    assert result == c.result, f"{where}: returned {result}, expected {c.result}"
    check_case(target, c, lanes, batch, m, buffer, where)


def setup_case(target: str, c: Case, lanes: int) -> tuple[Batch, Any, Any]:
    """(batch of one wave, machine, "mem" buffer address or None) holding ``c``'s inputs."""
    m = machine()
    V = np.full((NVGPR, 1, lanes), KEEP, np.uint32)
    A = np.full((NVGPR, 1, lanes), KEEP, np.uint32) if FAMILY[target] == "gfx9" else None
    S = np.zeros((1, NSREG), np.uint32)
    live = np.ones((1, lanes), bool)
    scc = np.array([False])
    buffer = None
    if "mem" in c.inputs or "mem" in c.expect:
        buffer = m.memory.allocate(256, 256)
        words = np.zeros(64, np.uint32)
        init = c.inputs.get("mem", [])
        words[:len(init)] = [v & 0xFFFFFFFF for v in init]
        m.memory.write(buffer, words.view(np.uint8))
        S[0, BUFFER_SGPR] = buffer & 0xFFFFFFFF
        S[0, BUFFER_SGPR + 1] = buffer >> 32
        V[BUFFER_SGPR, 0, :] = buffer & 0xFFFFFFFF
        V[BUFFER_SGPR + 1, 0, :] = buffer >> 32
    for key, value in c.inputs.items():
        if key == "exec":
            live[0] = _mask(value, lanes)
        elif key == "scc":
            scc[0] = bool(value)
        elif key == "vcc":
            bits = int(pack_mask(_mask(value, lanes)[None])[0])
            S[0, 106] = bits & 0xFFFFFFFF
            if lanes == 64:
                S[0, 107] = bits >> 32
        elif key == "lds":
            m.lds_words[:len(value)] = [v & 0xFFFFFFFF for v in value]
        elif key == "rsrc":
            row, word1, records, word3 = value
            S[0, row:row + 4] = [buffer & 0xFFFFFFFF, (buffer >> 32) & 0xFFFF | word1,
                                 records & 0xFFFFFFFF, word3 & 0xFFFFFFFF]
        elif key == "rsrc_private":
            from hsapy.sim.isa.semantics_buffer import private_segment_buffer

            S[0, value:value + 4] = private_segment_buffer(FAMILY[target], lanes, m.private_size)
        elif key in ("mem", "scratch", "mode"):
            continue
        else:
            _write(A if key.startswith("a") else V, S, key, value, lanes)
    batch = Batch(0x1000, S, V, A, live, scc, np.zeros(1, np.int64), np.zeros(1, np.int64),
                  mode=c.inputs.get("mode", 0))
    if "scratch" in c.inputs:
        batch.scratch = np.zeros((lanes, m.private_size), np.uint8)
        raw = bytes(c.inputs["scratch"])
        batch.scratch[:, :len(raw)] = np.frombuffer(raw, np.uint8)
    return batch, m, buffer


def check_case(target: str, c: Case, lanes: int, batch: Batch, m: Any, buffer: Any,
               where: str) -> None:
    """Assert ``c``'s expectations on the state the instruction left."""
    for key, value in c.expect.items():
        if key == "scc":
            assert bool(batch.scc[0]) == bool(value), f"{where}: scc {bool(batch.scc[0])}"
        elif key in ("vcc", "exec"):
            # the lanes the string names (inputs repeat over the wave, so later lanes do too)
            want = int(pack_mask(_mask(value, lanes)[None])[0])
            if key == "exec":
                got = int(batch.exec_bits()[0])
            else:
                got = int(batch.S[0, 106]) | (int(batch.S[0, 107]) << 32 if lanes == 64 else 0)
            got &= (1 << len(value)) - 1
            assert got == want, f"{where}: {key} {got:#x}, expected {want:#x}"
        elif key == "mem":
            got = np.frombuffer(m.memory.read(buffer, 4 * len(value)), np.uint32)
            want = [v & 0xFFFFFFFF for v in value]
            assert list(got) == want, f"{where}: mem {[hex(x) for x in got]}, expected " \
                                      f"{[hex(x) for x in want]}"
        elif key == "lds":
            got = list(m.lds_words[:len(value)])
            assert got == [v & 0xFFFFFFFF for v in value], f"{where}: lds {got}"
        elif key == "check":          # a hand-written predicate over the final state
            value(batch, m)
        elif key == "scratch":
            got = bytes(batch.scratch[0, :len(value)])
            assert got == bytes(value), f"{where}: scratch {got.hex()}"
        else:
            _check(batch, key, value, lanes, where)


def _parse(key: str) -> tuple[str, int, str]:
    match = _RE_KEY.match(key)
    assert match, f"bad state key {key!r}"
    return match.group(1), int(match.group(2)), match.group(3)


def _write(V: np.ndarray, S: np.ndarray, key: str, value: Any, lanes: int) -> None:
    file, reg, ty = _parse(key)
    if file == "s":
        bits = _bits(ty, value)
        S[0, reg] = bits & 0xFFFFFFFF
        if ty in _WIDE:
            S[0, reg + 1] = bits >> 32
        return
    values = list(value)
    bits = [_bits(ty, values[i % len(values)]) for i in range(lanes)]
    V[reg, 0, :] = [b & 0xFFFFFFFF for b in bits]
    if ty in _WIDE:
        V[reg + 1, 0, :] = [b >> 32 for b in bits]


def _check(batch: Batch, key: str, value: Any, lanes: int, where: str) -> None:
    file, reg, ty = _parse(key)
    wide = ty in _WIDE
    regs = batch.A if file == "a" else batch.V
    if file == "s":
        got = int(batch.S[0, reg]) | (int(batch.S[0, reg + 1]) << 32 if wide else 0)
        assert _matches(ty, value, got), f"{where}: {key} = {got:#x}, expected {value!r}"
        return
    for lane, want in enumerate(value):
        got = int(regs[reg, 0, lane]) | (int(regs[reg + 1, 0, lane]) << 32 if wide else 0)
        if want is KEEP_MARK and wide:
            ok = got == KEEP | KEEP << 32
        else:
            ok = _matches(ty, want, got)
        assert ok, f"{where}: {key} lane {lane} = {got:#x}, expected {want!r}"
