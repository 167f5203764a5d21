"""Decoder oracle over the whole opcode tables: every opcode hsapy's tables know is encoded with
random (seeded) operands and modifiers, and hsapy's disassembly must equal libLLVM-19's.

The corpus oracle (test_disasm_oracle.py) covers what compilers emit; this one covers the
rest of each table. Samples LLVM itself rejects, or prints with a warning (misaligned register
tuples), are not valid code and are not counted. Opcodes hsapy declines on purpose
(``decoder.UNSUPPORTED``) must raise DecodeError, never decode to something else.
"""
from __future__ import annotations

import importlib.util
import random
import struct
from pathlib import Path

import pytest
from test_disasm_oracle import normalise  # the one documented normalisation (same directory)

from hsapy.sim.isa import DecodeError, decode
from hsapy.sim.isa import formats as F
from hsapy.sim.isa.decoder import UNSUPPORTED, _resolve, _tables

REPO = Path(__file__).resolve().parent.parent.parent
SAMPLES_PER_OPCODE = 3
MODIFIER_FIELDS = (("clamp", 1), ("omod", 2), ("neg", 3), ("abs", 3), ("op_sel", 4), ("offset0", 8),
                   ("offset1", 8), ("sc0", 1), ("sc1", 1), ("nt", 1), ("glc", 1), ("slc", 1),
                   ("dlc", 1), ("th", 3), ("scope", 2), ("offen", 1), ("idxen", 1), ("neg_lo", 3),
                   ("neg_hi", 3), ("cbsz", 3), ("abid", 4), ("blgp", 3), ("acc", 1), ("lds", 1),
                   ("dfmt", 4), ("nfmt", 3), ("format", 7))
SCALAR_SPECIALS = (106, 126, 124, 125, 253, 235)
INLINE_CODES = (128, 129, 192, 193, 208, 240, 241, 242, 243, 244, 245, 246, 247, 248)


def _llvm(table: str):
    spec = importlib.util.spec_from_file_location("gen_isa_tables", REPO / "tools" / "gen_isa_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    try:
        return module.LLVMDisassembler(*module.TABLE_VARIANTS[table])
    except OSError as exc:
        pytest.skip(f"libLLVM-19 not loadable: {exc}")


def _aligned(rng: random.Random, limit: int, count: int) -> int:
    step = 1 if count == 1 else (2 if count == 2 else 4)
    return rng.randrange(0, limit, step)


def _source(rng: random.Random, count: int, literal_ok: bool, vector_ok: bool) -> int:
    roll = rng.random()
    if roll < 0.35 and vector_ok:
        return 256 + _aligned(rng, 200, min(count, 2))
    if roll < 0.6:
        return _aligned(rng, 96, count)
    if roll < 0.8:
        return rng.choice(INLINE_CODES)
    if roll < 0.9 and literal_ok:
        return 255
    return rng.choice(SCALAR_SPECIALS)


def _sample(rng: random.Random, family: str, fmt: F.Format, key: str, entry: dict) -> list[int]:
    values: dict[str, int] = {}
    if fmt.name == "FLAT":
        seg, op = key.split(":")
        values.update(seg=int(seg), op=int(op))
    elif fmt.name == "SOPP":
        values.update(op=int(key), simm16=rng.randrange(1 << 16))
    else:
        values["op"] = int(key)
    literal_ok = family != "gfx9" or fmt.name in ("SOP1", "SOP2", "SOPC", "VOP1", "VOP2", "VOPC")
    for name, count, kind in (item for item in entry.get("ops", []) if item[0] in fmt.fields):
        width = fmt.fields[name][2]
        if kind in ("imm", "hwreg", "label"):
            values[name] = rng.randrange(1 << width)
        elif name.startswith(("src", "ssrc")):
            values[name] = _source(rng, count, literal_ok, name.startswith("src"))
        elif name == "sbase":
            values[name] = rng.randrange(0, 40, 2 if count == 4 else 1)
        elif name == "srsrc":
            values[name] = rng.randrange(20)
        elif kind == "s":
            values[name] = _aligned(rng, 90, count)
        else:
            values[name] = rng.randrange(0, 200, 2 if count >= 2 else 1)
    for name, width in MODIFIER_FIELDS:
        if name in fmt.fields and rng.random() < 0.3:
            values[name] = rng.randrange(1 << min(width, fmt.fields[name][2]))
    # Any other field of the format (reserved bits, operands the opcode may not have) too:
    # LLVM rejects what is not valid, and what it accepts must decode the same.
    for name, (_, _, width) in fmt.fields.items():
        if name not in values and name not in ("op", "seg") and rng.random() < 0.15:
            values[name] = rng.randrange(1 << width)
    if fmt.name == "VOP3P":
        values.setdefault("op_sel_hi", 3)
    if fmt.name in ("FLAT", "MUBUF", "MTBUF", "VBUFFER", "SMEM"):
        values["offset"] = rng.choice([0, 4, 16, rng.randrange(1 << fmt.fields["offset"][2])])
    if "saddr" in fmt.fields:
        values["saddr"] = rng.choice([0x7F if family == "gfx9" else 124, rng.randrange(0, 40, 2)])
    if "sve" in fmt.fields:
        values["sve"] = rng.randrange(2)
    if fmt.name == "SMEM" and "soffset" in fmt.fields:
        values["soffset"] = rng.choice([0 if family == "gfx9" else 124, 7])
    if "imm" in fmt.fields:
        values["imm"] = 1
    literal = rng.choice([rng.randrange(1 << 32), 0x3F800000, 0xFFFFFFFF, 5, 0x4000, 0x3118])
    vop3 = fmt.name in ("VOP3", "VOP3P") and family != "gfx9"
    if (fmt.name in ("VOP1", "VOP2", "VOPC") or vop3) and "src0" in values and rng.random() < 0.25:
        values["src0"], literal = _extension(rng, family)
    return fmt.pack(values) + [literal, rng.randrange(1 << 32), 0, 0]


DPP_CONTROLS = {
    "gfx9": [*range(0, 0x100, 7), *range(0x101, 0x130), 0x130, 0x134, 0x138, 0x13C, 0x140, 0x141,
             0x142, 0x143, *range(0x150, 0x160)],
    "gfx11": [*range(0, 0x100, 7), *range(0x101, 0x130), 0x140, 0x141, *range(0x150, 0x170)],
}
DPP_CONTROLS["gfx12"] = DPP_CONTROLS["gfx11"]


def _extension(rng: random.Random, family: str) -> tuple[int, int]:
    """A SRC0 code selecting DPP16 / DPP8 / SDWA and a valid-looking extension dword."""
    kinds = ["dpp", "sdwa"] if family == "gfx9" else ["dpp", "dpp8"]
    kind = rng.choice(kinds)
    if kind == "dpp":
        ext = rng.randrange(256) | rng.choice(DPP_CONTROLS[family]) << 8
        ext |= rng.randrange(1 << 15) << 17  # fi, bound_ctrl, neg/abs, masks
        return 250, ext
    if kind == "dpp8":
        return rng.choice([233, 234]), rng.randrange(256) | rng.randrange(1 << 24) << 8
    ext = rng.randrange(256) | rng.randrange(7) << 8 | rng.randrange(3) << 11
    ext |= rng.randrange(8) << 13 | rng.randrange(7) << 16 | rng.randrange(16) << 19
    ext |= rng.randrange(7) << 24 | rng.randrange(32) << 27
    return 249, ext


def _vopd_samples(dis, family: str, vopd: dict, rng: random.Random,
                  wavefront_size: int | None) -> tuple[int, list[str]]:
    """Every X/Y opcode pair of VOPD with random registers; LLVM rejects bank conflicts."""
    fmt = next(f for f in F.FAMILY_FORMATS[family] if f.name == "VOPD")
    checked, problems = 0, []
    for opx in sorted(vopd["x"], key=int):
        for opy in sorted(vopd["y"], key=int):
            values = {"opx": int(opx), "opy": int(opy), "vdstx": rng.randrange(100),
                      "vdsty": rng.randrange(50), "src0x": rng.choice([256 + rng.randrange(100), 2, 242]),
                      "vsrc1x": rng.randrange(100), "src0y": rng.choice([256 + rng.randrange(100), 5, 255]),
                      "vsrc1y": rng.randrange(100)}
            words = fmt.pack(values) + [rng.choice([0x41200000, 7]), 0, 0]
            data = struct.pack(f"<{len(words)}I", *words)
            size, reference = dis.disasm(data)
            if not size or "/*" in reference:
                continue
            inst = decode(data[:size], "gfx1201" if family == "gfx12" else "gfx1100",
                          wavefront_size=wavefront_size)[0]
            checked += 1
            if inst.size != size or normalise(inst.text()) != normalise(reference):
                problems.append(f"VOPD {opx}/{opy}: LLVM {reference!r} != hsapy {inst.text()!r}")
    return checked, problems


@pytest.mark.parametrize("cpu", ["gfx942", "gfx90a", "gfx1201", "gfx1100", "gfx1201_w64",
                                 "gfx1100_w64"])
def test_every_table_opcode_disassembles_like_llvm(cpu, capsys):
    dis = _llvm(cpu)
    target, _, wave = cpu.partition("_w")
    wavefront_size = int(wave) if wave else None
    family, _ = _resolve(target)
    tables = _tables(cpu)
    rng = random.Random(f"hsapy-{cpu}")
    checked, declined, problems = 0, 0, []
    for fmt in F.FAMILY_FORMATS[family]:
        if fmt.name == "VOPD":
            continue  # every X/Y pair is sampled by _vopd_samples below
        for key, entry in sorted(tables.get(fmt.name, {}).items()):
            for _ in range(SAMPLES_PER_OPCODE):
                words = _sample(rng, family, fmt, key, entry)
                data = struct.pack(f"<{len(words)}I", *words)
                size, reference = dis.disasm(data)
                if not size or "/*" in reference or "Warning" in reference:
                    continue  # not valid code
                try:
                    inst = decode(data[:size], target, wavefront_size=wavefront_size)[0]
                except DecodeError as exc:
                    if entry["name"] in UNSUPPORTED or "not supported" in str(exc):
                        declined += 1
                        continue
                    problems.append(f"{fmt.name}:{key} {reference!r}: DecodeError {exc}")
                    continue
                checked += 1
                if inst.size != size or normalise(inst.text()) != normalise(reference):
                    raw = " ".join(f"{w:08X}" for w in words[:size // 4])
                    problems.append(f"{fmt.name}:{key} [{raw}] LLVM {reference!r} != hsapy "
                                    f"{inst.text()!r} ({inst.size} bytes)")
    if family != "gfx9":
        vopd_checked, vopd_problems = _vopd_samples(dis, family, tables["VOPD"], rng, wavefront_size)
        checked += vopd_checked
        problems += vopd_problems
    with capsys.disabled():
        print(f"\n[table oracle] {cpu}: {checked} random instructions agree, {declined} declined "
              f"(unsupported), {len(problems)} disagreements")
    assert checked > 2000
    assert not problems, "\n".join(problems[:30])
