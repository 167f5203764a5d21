"""The committed opcode tables are exactly what tools/gen_isa_tables.py derives from libLLVM-19
(no hand edits, no drift), and every table says how to regenerate it."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
TABLES = REPO / "hsapy" / "sim" / "isa" / "tables"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_isa_tables", REPO / "tools" / "gen_isa_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.parametrize("cpu", ["gfx942", "gfx1201"])
def test_committed_table_matches_a_fresh_generation(cpu):
    gen = _generator()
    try:
        gen.LLVMDisassembler(*gen.TABLE_VARIANTS[cpu])
    except OSError as exc:
        pytest.skip(f"libLLVM-19 not loadable: {exc}")
    fresh = json.loads(json.dumps(gen.generate(cpu), sort_keys=True))
    committed = json.loads((TABLES / f"{cpu}.json").read_text())
    assert fresh == committed, f"regenerate with: python3 tools/gen_isa_tables.py {cpu}"


@pytest.mark.parametrize("path", sorted(TABLES.glob("*.json")), ids=lambda p: p.stem)
def test_every_table_names_its_generator(path):
    data = json.loads(path.read_text())
    assert "tools/gen_isa_tables.py" in data["_header"]
    assert data["cpu"] == path.stem
    # the formats every family needs for compute kernels
    for fmt in ("SOP1", "SOP2", "SOPC", "SOPK", "SOPP", "SMEM", "VOP1", "VOP2", "VOPC", "VOP3",
                "VOP3P", "DS", "FLAT"):
        assert data["tables"][fmt], fmt
