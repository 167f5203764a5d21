"""Every instruction the interpreter implements has a hand-checked case (isa_hand_cases_*.py).

"Implemented" is read from the implementation itself: every opcode of the target's decoder
table is encoded (register operands), decoded and compiled by ``compile_instruction``; an
opcode whose closure is not the "unimplemented" stub is implemented. "Covered" is the decoded
mnemonic of each hand-checked case's line. The test fails naming the implemented mnemonics that
no case exercises.
"""
from __future__ import annotations

import functools

import pytest

from hsapy.sim.isa import decode
from hsapy.sim.isa import formats as F
from hsapy.sim.isa.decoder import _tables
from hsapy.sim.isa.executor import ProgramInfo
from hsapy.sim.isa.instruction import DecodeError
from hsapy.sim.isa.semantics import compile_instruction

from isa_hand_cases import cases_for
from isa_hand_runner import FAMILY, TARGETS, WAVE, assemble_all, decoded

S_NOP = 0xBF800000          # padding after the probe: a literal slot that decodes as s_nop


def _probes(family: str, fmt_name: str, key: str):
    """Field settings that make one opcode decodable (VGPR sources where the format allows)."""
    fmt = next(f for f in F.FAMILY_FORMATS[family] if f.name == fmt_name)
    if fmt_name == "FLAT":
        seg, op = (int(x) for x in key.split(":"))
        off = 0x7F if family == "gfx9" else 124
        yield fmt, {"seg": seg, "op": op, "saddr": off}
        yield fmt, {"seg": seg, "op": op, "saddr": 2}
        yield fmt, {"seg": seg, "op": op, "saddr": off, "sve": 1}
        return
    values = {fmt.opcode_field: int(key)}
    vgprs = {name: 256 for name in ("src0", "src1", "src2") if name in fmt.fields}
    yield fmt, {**values, **vgprs}
    yield fmt, values


@functools.lru_cache(maxsize=None)
def implemented(target: str) -> frozenset[str]:
    """Mnemonics of ``target`` whose compiled closure is not the unimplemented stub."""
    family = FAMILY[target]
    info = ProgramInfo(family, WAVE[target], False, False)
    names: set[str] = set()
    for fmt_name, table in _tables(target).items():
        if fmt_name in ("HWREG", "SENDMSG"):
            continue                    # operand-name tables
        if fmt_name == "VOPD":
            names |= _vopd_halves(target, table, info)
            continue
        for key in table:
            for fmt, values in _probes(family, fmt_name, key):
                words = fmt.pack(values) + [S_NOP] * 2
                code = b"".join(w.to_bytes(4, "little") for w in words)
                try:
                    inst = decode(code, target, 0)[0]
                except DecodeError:
                    continue
                if getattr(compile_instruction(inst, info), "unimplemented", None) is None:
                    names.add(inst.name)
                    break
    return frozenset(names)


def _vopd_halves(target: str, table: dict, info: ProgramInfo) -> set[str]:
    """gfx12 dual-issue halves: each X opcode paired with Y = v_dual_mov_b32 and back."""
    fmt = next(f for f in F.FAMILY_FORMATS[FAMILY[target]] if f.name == "VOPD")
    mov = next(int(k) for k, e in table["y"].items() if e["name"] == "v_dual_mov_b32")
    names = set()
    pairs = [(int(x), mov) for x in table["x"]] + [(mov, int(y)) for y in table["y"]]
    for opx, opy in pairs:
        # vdstx v0, vdsty v3 (the two destinations must differ in bank); VGPR sources
        words = fmt.pack({"opx": opx, "opy": opy, "src0x": 257, "src0y": 258, "vdsty": 1})
        code = b"".join(w.to_bytes(4, "little") for w in words + [S_NOP] * 2)
        try:
            inst = decode(code, target, 0)[0]
        except DecodeError:
            continue
        if getattr(compile_instruction(inst, info), "unimplemented", None) is None:
            names |= {inst.name, inst.pair.name}
    return names


def covered(target: str) -> set[str]:
    names = set()
    assemble_all(target, [c.line for c in cases_for(target)])   # one llvm-mc-19 call
    for c in cases_for(target):
        inst = decoded(target, c.line)
        names.add(inst.name)
        if inst.pair is not None:          # VOPD: both halves are exercised
            names.add(inst.pair.name)
    return names


@pytest.mark.parametrize("target", TARGETS)
def test_the_probe_finds_the_interpreter_s_instructions(target):
    # a guard for the probe itself: common instructions must be found, bogus ones not
    names = implemented(target)
    assert {"v_add_f32", "s_mov_b32", "v_cmp_lt_f32", "s_endpgm"} <= names
    assert len(names) > 500


@pytest.mark.parametrize("target", TARGETS)
def test_every_implemented_instruction_has_a_hand_checked_case(target):
    missing = sorted(implemented(target) - covered(target))
    assert not missing, (f"{len(missing)} implemented {target} instructions have no hand-checked "
                         f"case in tests/unit/isa_hand_cases_*.py: {' '.join(missing)}")
