#!/usr/bin/env python3
"""Sample the register layouts of every matrix instruction from AMD's matrix instruction
calculator into tests/unit/matrix_layout_facts.json (the facts test_isa_matrix.py holds
hsapy's layouts to).

The AMD ISA guides (CDNA3 "Matrix Arithmetic Instructions", RDNA3/RDNA4 "Wave Matrix Multiply
Accumulate") refer to the calculator for which lane and register holds which matrix element.
It is not a dependency of hsapy: clone it and point this script at the clone::

    git clone https://github.com/ROCm/amd_matrix_instruction_calculator /tmp/calc
    pip install tabulate        # the calculator imports it
    python3 tools/gen_matrix_layout_facts.py /tmp/calc > tests/unit/matrix_layout_facts.json

For every instruction of gfx90a (CDNA2), gfx942 (CDNA3), gfx1100 (RDNA3) and gfx1201 (RDNA4),
each wave size, each matrix (A, B, C/D and the sparse forms' compression indices) and a set of
modifier values (CBSZ/ABID, BLGP, OPSEL), it records a fixed sample of elements as
``[block, row, col, register, bit, width, lane, ...]`` (row/col: i/k for A and the indices, k/j
for B, i/j for C/D; register and bit: where the element starts in the operand's registers;
lane: every lane that holds it).
"""
from __future__ import annotations

import importlib.util
import json
import random
import re
import sys
from pathlib import Path

ARCHS = {"gfx90a": ("cdna2", (64,)), "gfx942": ("cdna3", (64,)),
         "gfx1100": ("rdna3", (32, 64)), "gfx1201": ("rdna4", (32, 64))}
SAMPLES = 16            # elements per matrix without modifiers
SAMPLES_MODIFIED = 6    # elements per matrix and modifier setting


def load_calculator(path: Path):
    spec = importlib.util.spec_from_file_location("matrix_calculator",
                                                  path / "matrix_calculator.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_register(text: str) -> tuple[int, int, int]:
    """``v3`` / ``v3.[15:8]`` / ``v[5:4]`` -> (register, first bit, width)."""
    match = re.fullmatch(r"v(?:\[(\d+):(\d+)\]|(\d+))(?:\.\[(\d+):(\d+)\])?", text)
    if match.group(1):
        return int(match.group(2)), 0, 64
    reg = int(match.group(3))
    if match.group(4):
        return reg, int(match.group(5)), int(match.group(4)) - int(match.group(5)) + 1
    return reg, 0, 32


def coordinates(info: dict, matrix: str) -> list[tuple[int, int, int, int]]:
    """Every (block, i, j, k) of one matrix, in (row, col) order."""
    m, n, k, blocks = info["m"], info["n"], info["k"], info["blocks"]
    if matrix in ("a", "k"):
        return [(b, i, 0, kk) for b in range(blocks) for i in range(m) for kk in range(k)]
    if matrix == "b":
        return [(b, 0, j, kk) for b in range(blocks) for kk in range(k) for j in range(n)]
    return [(b, i, j, 0) for b in range(blocks) for i in range(m) for j in range(n)]


def settings(info: dict, matrix: str, gfx9: bool, calc_obj) -> list[dict]:
    """Modifier settings worth recording for this matrix (the first is no modifier)."""
    out = [{}]
    if gfx9 and matrix == "a" and info["cbsz_abid"] and not info["sparse"]:
        for cbsz in range(1, info["blocks"].bit_length()):
            out += [{"cbsz": cbsz, "abid": abid} for abid in range(1 << cbsz)]
    if gfx9 and matrix == "b" and info["blgp"] and info["in_type"] != "fp64":
        out += [{"blgp": blgp} for blgp in range(1, 8)]
    if matrix == "k" and gfx9:
        sets = calc_obj.get_num_compression_sets()
        out += [{"abid": abid} for abid in range(1, sets)] + [{"cbsz": 1, "abid": 1}]
    if matrix == "k" and not gfx9:
        out += [{"opsel": opsel} for opsel in range(1, calc_obj.get_num_compression_sets())]
    if matrix in ("c", "d") and not gfx9 and info["cd_opsel"]:
        out += [{"opsel": 4}]
    return out


def main(argv: list[str]) -> int:
    calc = load_calculator(Path(argv[1]))
    classes = {"cdna2": calc.InstCalcGfx9, "cdna3": calc.InstCalcGfx9,
               "rdna3": calc.InstCalcGfx11, "rdna4": calc.InstCalcGfx12}
    rng = random.Random(20260)
    records = []
    for target, (arch, waves) in ARCHS.items():
        for name, info in calc.dict_insts[arch].items():
            for wave in waves:
                calc_obj = classes[arch](name, info, wave)
                matrices = ["a", "b", "d"] + (["k"] if info["sparse"] else [])
                for matrix in matrices:
                    for mods in settings(info, matrix, arch.startswith("cdna"), calc_obj):
                        every = coordinates(info, matrix)
                        count = SAMPLES if not mods else SAMPLES_MODIFIED
                        picked = [every[0], every[-1]] + rng.sample(every, count - 2)
                        facts = []
                        for b, i, j, k in picked:
                            _, reg, lanes = calc_obj._get_reg_lanes(
                                matrix, i, j, k, b, mods.get("cbsz", 0), mods.get("abid", 0),
                                mods.get("blgp", 0), mods.get("opsel", 0))
                            row, col = (k, j) if matrix == "b" else (i, k if matrix in "ak" else j)
                            facts.append([b, row, col, *parse_register(reg), *lanes])
                        records.append({"target": target, "name": name, "wave": wave,
                                        "matrix": "c" if matrix == "d" else matrix,
                                        "mods": mods, "facts": facts})
    header = ("Generated by tools/gen_matrix_layout_facts.py from AMD's matrix instruction "
              "calculator (github.com/ROCm/amd_matrix_instruction_calculator). Do not edit: "
              "regenerate with `python3 tools/gen_matrix_layout_facts.py CALCULATOR_CLONE`.")
    # one layout a line, so that a regeneration diffs line by line
    lines = [json.dumps(record, separators=(",", ":")) for record in records]
    sys.stdout.write('{"_header":' + json.dumps(header) + ',\n"layouts":[\n' + ",\n".join(lines)
                     + "\n]}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
