#!/usr/bin/env python3
"""How much of each target's ISA the simulator's interpreter implements.

For every target and encoding family this counts the opcodes LLVM's disassembler decodes, how
many of them hsapy's decoder decodes and how many have semantics in the interpreter, and lists
the rest by name. Two sources:

- the encoding families hsapy's decoder tables hold (hsapy/sim/isa/tables/<cpu>.json, made from
  libLLVM-19 by tools/gen_isa_tables.py): each opcode is probed through hsapy's own decoder and
  ``compile_instruction`` (hsapy.sim.isa.coverage), an opcode whose closure is not the
  "unimplemented" stub is implemented;
- the families the tables do not hold (buffer formats a table lacks, image/sample, export,
  interpolation, GDS-only DS opcodes): their opcode field is swept through libLLVM-19's
  disassembler here and every mnemonic it decodes is counted; hsapy neither decodes nor runs them.

"Compute-relevant" is everything except the families listed in ``EXCLUDED`` (image/sample,
export, interpolation, GDS-only), each named in the report with its reason.

    python3 tools/isa_coverage.py                      # gfx942 gfx1201 gfx90a gfx1100
    python3 tools/isa_coverage.py gfx942 --list        # + every unimplemented opcode by name
    python3 tools/isa_coverage.py --json               # machine-readable
    python3 tools/isa_coverage.py gfx1201-w64          # gfx11/gfx12 code built for wave64
    python3 tools/isa_coverage.py --markdown docs/simulator-isa-coverage.md   # the docs page

Needs /usr/lib/llvm-19/lib/libLLVM.so.1 (Debian package llvm-19), like gen_isa_tables.py.
tests/unit/test_isa_coverage.py checks that the docs page equals what this script writes.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import re
import struct
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hsapy.sim.isa import coverage  # noqa: E402
from hsapy.sim.isa import formats as F  # noqa: E402
from hsapy.sim.isa.decoder import _resolve, _table_for_wave, _tables  # noqa: E402

TARGETS = ("gfx942", "gfx1201", "gfx90a", "gfx1100")
GOAL_TARGETS = ("gfx942", "gfx1201")     # the targets the goal below is set for
GOAL_PERCENT = 98.0
DOC_PATH = ROOT / "docs" / "simulator-isa-coverage.md"

# Families that are not compute (their reason is printed wherever they are left out).
_IMAGE = ("image and sample: texture and image-resource loads, stores, atomics and sampling "
          "(graphics resources HIP compute code does not use)")
_EXPORT = "export: pixel/vertex shader outputs to the graphics pipeline"
_INTERP = "interpolation: pixel-shader attribute interpolation and its parameter loads"
EXCLUDED = {
    "MIMG": _IMAGE, "VIMAGE": _IMAGE, "VSAMPLE": _IMAGE,
    "EXP": _EXPORT, "VEXPORT": _EXPORT,
    "VINTRP": _INTERP, "VINTERP": _INTERP, "LDSDIR": _INTERP, "VDSDIR": _INTERP,
    "DS-GDS": ("GDS only: global data share and global wave sync opcodes that exist only with "
               "the DS gds bit set"),
}

# Why an opcode without semantics has none, for the docs' list (first match wins). Opcodes no
# pattern names are listed with the interpreter's own reason ("no semantics").
REASONS: tuple[tuple[str, str], ...] = (
    (r"^s_rfe", "return from the trap handler: only trap-handler code runs it, not reachable "
                "from compute code"),
    (r"^s_cbranch_(join|g_fork|i_fork)$",
     "legacy fork/join over the hardware's conditional-branch stack (MODE.CSP): no compiler "
     "emits them, not reachable from compute code"),
    (r"^s_setvskip$", "sets the VSKIP mode that skips vector instructions: debugger and "
                      "trap-handler use, not reachable from compute code"),
    (r"^s_dcache_discard", "drops dirty scalar-cache lines without writing them back: the "
                           "simulator has no scalar cache (a store reaches memory at once), so "
                           "it cannot lose the data hardware would; not decoded, no compiler "
                           "emits it"),
    (r"^v_screen_partition_4se_b32$",
     "graphics: a screen-tile lookup the ISA guides give no definition for, not reachable "
     "from compute code"),
    (r"^v_cvt_sr_(fp8|bf8)_f32$",
     "stochastic rounding: the CDNA3 guide's pseudocode (seed bits added to the mantissa, "
     "wrapping within the binade, then round to nearest even) and its prose (add the seed, "
     "then truncate) give different results, and no public source settles which the hardware "
     "computes; not decoded"),
    (r"^v_mov_b16$", "true16 register halves (v8.l): not decoded; LLVM 19 emits it only in "
                     "true16 code"),
    (r"^s_subvector_loop_(begin|end)$",
     "wave64 sub-vector looping (gfx10/gfx11): LLVM does not emit it"),
    (r"^s_(get_barrier_state|barrier_init|barrier_join|wakeup_barrier|barrier_leave)$",
     "named barriers, which HIP compute code does not use (__syncthreads is s_barrier_signal "
     "and s_barrier_wait)"),
    (r"^(global|scratch)_(load|store)_block$",
     "gfx12 transfers of up to 32 VGPRs chosen by an M0 mask (register spills): no public "
     "source consulted (the RDNA4 ISA guide, LLVM 19) defines where each lane's dword of each "
     "register goes in memory, so the queue stops naming them"),
    (r"^global_load_tr_b(64|128)$",
     "transposing loads for WMMA operands: no public source consulted (the RDNA4 ISA guide, "
     "LLVM 19) defines which lane receives which matrix element, so the queue stops naming "
     "them"),
    (r"^global_atomic_ordered_add_b64$",
     "ordered add: its result depends on the hardware's wave ordering, which the simulator "
     "does not model"),
    (r"^buffer_load_lds_", "gfx11 buffer loads into LDS: not implemented (gfx9's lds form is)"),
    (r"^ds_bvh_stack_", "ray-tracing traversal stack (gfx11): not used by compute code"),
    (r"^(flat|global|buffer)_atomic_cmpswap_f32$",
     "gfx11 float compare-and-swap: not implemented yet"),
)


# Implemented opcodes whose semantics stop the queue for some operands or data, because no public
# source defines them there: (target, opcodes, what runs and what stops).
PARTIAL: tuple[tuple[str, str, str], ...] = (
    ("gfx1201", "`v_cvt_pk_fp8_f32` (VOP3), `v_cvt_pk_bf8_f32` (VOP3)",
     "write the OCP formats E4M3FN / E5M2 (HIP's amd_hip_fp8.h selects them for gfx1200/gfx1201, "
     "as LLVM pull request 106160 does for gfx12's conversions), rounding finite inputs of "
     "magnitude up to the largest finite value (448, 57344) to nearest even, denormals and "
     "signed zeros included. A NaN or infinite input and a larger magnitude (the RDNA4 guide "
     "defines neither the NaN an overflow gives nor whether it saturates) stop the queue naming "
     "the instruction, the lane and its value; so do the clamp and omod fields and a MODE "
     "rounding other than nearest even"),
)

@dataclass(frozen=True)
class Probe:
    """An encoding family hsapy's tables do not hold: its first dwords (with operand fields set
    so that LLVM decodes them) and where its opcode field is."""

    encoding: str
    cpus: tuple[str, ...]
    templates: tuple[tuple[int, ...], ...]
    lo: int
    width: int
    set_bits: int = 0


# Templates are the encodings llvm-mc-19 -show-encoding gives for one instruction of the family
# (e.g. `tbuffer_load_format_x v1, off, s[4:7], s0 format:[...]`); field positions from the
# "Microcode Formats" chapters of the CDNA3 / RDNA3 / RDNA4 ISA guides.
PROBES: tuple[Probe, ...] = (
    # gfx9 MTBUF: op[18:15]
    Probe("MTBUF", ("gfx90a", "gfx942"), ((0xE8200000, 0x00010100),), 15, 4),
    # gfx9 MIMG (gfx90a only; CDNA3 has none): op[24:18]; dmask 0xF, 0x1, 0x3
    Probe("MIMG", ("gfx90a", "gfx942"), ((0xF0000F00, 0x00010002), (0xF0000100, 0x00010002),
                                         (0xF0000300, 0x00010002)), 18, 7),
    # gfx9 DS with the gds bit (16) set: opcodes that exist only for GDS
    Probe("DS-GDS", ("gfx90a", "gfx942"), ((0xD8010000, 0x00000100), (0xD8010000, 0)), 17, 8),
    # gfx11 MTBUF op[18:15]; MIMG op[25:18]; EXP; VINTERP op[22:16]; LDSDIR op[21:20]; DS gds 17
    Probe("MTBUF", ("gfx1100",), ((0xE8B00000, 0x00010100),), 15, 4),
    Probe("MIMG", ("gfx1100",), ((0xF0000F00, 0x00010001), (0xF0000F00, 0x0C010001),
                                 (0xF0000100, 0x00010001), (0xF0000300, 0x00010001)), 18, 8),
    Probe("EXP", ("gfx1100",), ((0xF80000CF, 0x03020100),), 0, 0),
    Probe("VINTERP", ("gfx1100", "gfx1201"), ((0xCD000000, 0x040E0501),), 16, 7),
    Probe("LDSDIR", ("gfx1100",), ((0xCE000001,),), 20, 2),
    Probe("DS-GDS", ("gfx1100",), ((0xD8020000, 0x00000100), (0xD8020000, 0)), 18, 8),
    # gfx12 VBUFFER (MUBUF and MTBUF opcodes) op[21:14]; VIMAGE / VSAMPLE op[21:14]; VEXPORT;
    # VDSDIR op[21:20]
    Probe("VBUFFER", ("gfx1201",), ((0xC4050000, 0x00800801, 0), (0xC4200000, 0x0B000801, 0)),
          14, 8),
    Probe("VIMAGE", ("gfx1201",), ((0xD3C00000, 0x00000800, 1), (0xD0400000, 0x00000800, 1),
                                   (0xD0C00000, 0x00000800, 1)), 14, 8),
    Probe("VSAMPLE", ("gfx1201",), ((0xE7C6C000, 0x06000800, 1), (0xE446C000, 0x06000800, 1)),
          14, 8),
    Probe("VEXPORT", ("gfx1201",), ((0xF80000CF, 0x03020100),), 0, 0),
    Probe("VDSDIR", ("gfx1201",), ((0xCE000001,),), 20, 2),
)


def _llvm_module():
    path = ROOT / "tools" / "gen_isa_tables.py"
    spec = importlib.util.spec_from_file_location("gen_isa_tables", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@cache
def _disassembler(cpu: str, wave64: bool):
    gen = _llvm_module()
    return gen.LLVMDisassembler(cpu, "+wavefrontsize64" if wave64 else "")


def _split_target(target: str) -> tuple[str, int | None]:
    """"gfx1201-w64" -> ("gfx1201", 64); "gfx942" -> ("gfx942", None)."""
    if target.endswith("-w64"):
        return target[:-4], 64
    return target, None


@cache
def _table_names(cpu: str, wave_size: int | None) -> frozenset[str]:
    family, table = _resolve(cpu)
    names = set()
    formats = {fmt.name for fmt in F.FAMILY_FORMATS[family]}
    for fmt_name, entries in _tables(_table_for_wave(family, table, wave_size)).items():
        if fmt_name not in formats:
            continue                    # operand-name tables (HWREG, SENDMSG, ...)
        for entry in (entries.values() if fmt_name != "VOPD" else
                      [e for half in entries.values() for e in half.values()]):
            names.add(entry["name"])
    return frozenset(names)


def llvm_only_statuses(target: str) -> list[coverage.OpcodeStatus]:
    """Opcodes of the families hsapy's tables do not hold, as LLVM decodes them (one status per
    distinct mnemonic; a mnemonic a table already holds is counted there, not here)."""
    cpu, wave_size = _split_target(target)
    dis = _disassembler(cpu, wave_size == 64)
    known = _table_names(cpu, wave_size)
    out: list[coverage.OpcodeStatus] = []
    for probe in PROBES:
        if cpu not in probe.cpus:
            continue
        seen: dict[str, int] = {}
        for op in range(1 << probe.width):
            for template in probe.templates:
                words = list(template)
                words[0] = (words[0] & ~(((1 << probe.width) - 1) << probe.lo)) | (op << probe.lo)
                size, text = dis.disasm(struct.pack(f"<{len(words)}I", *words) + b"\0" * 16)
                if size:
                    name = text.split()[0]
                    if name not in known:
                        seen.setdefault(name, op)
                    break
        for name, op in sorted(seen.items(), key=lambda kv: (kv[1], kv[0])):
            out.append(coverage.OpcodeStatus(probe.encoding, str(op), name, False, False,
                                             "not decoded by hsapy"))
    return out


@dataclass
class FamilyRow:
    """One encoding family of one target."""

    encoding: str
    llvm: int = 0
    decoded: int = 0
    implemented: int = 0
    excluded: str = ""
    missing: list[tuple[str, str]] = field(default_factory=list)


_ORDER = ("SOP1", "SOP2", "SOPC", "SOPK", "SOPP", "SMEM", "VOP1", "VOP2", "VOP3", "VOP3P",
          "VOP3P-MAI", "VOP3P-WMMA", "VOPC", "VOPD-X", "VOPD-Y", "DS", "FLAT", "GLOBAL", "SCRATCH",
          "MUBUF", "MTBUF", "VBUFFER", "DS-GDS", "MIMG", "VIMAGE", "VSAMPLE", "EXP", "VEXPORT",
          "VINTRP", "VINTERP", "LDSDIR", "VDSDIR")


def reason(name: str, why: str) -> str:
    """Why ``name`` has no semantics: the first pattern of ``REASONS`` it matches, else whether
    hsapy decodes it at all."""
    for pattern, text in REASONS:
        if re.match(pattern, name):
            return text
    if why.startswith("not decoded"):
        return "not decoded by hsapy yet"
    return "no semantics yet"


def report(target: str) -> dict:
    """The coverage of one target as plain data (what ``--json`` prints)."""
    cpu, wave_size = _split_target(target)
    statuses = list(coverage.opcode_statuses(cpu, wave_size)) + llvm_only_statuses(target)
    rows: dict[str, FamilyRow] = {}
    for s in statuses:
        row = rows.setdefault(s.encoding,
                              FamilyRow(s.encoding, excluded=EXCLUDED.get(s.encoding, "")))
        row.llvm += 1
        row.decoded += s.decoded
        row.implemented += s.implemented
        if not s.implemented:
            row.missing.append((s.name, reason(s.name, s.why)))
    ordered = sorted(rows.values(), key=lambda r: (_ORDER.index(r.encoding)
                                                   if r.encoding in _ORDER else len(_ORDER),
                                                   r.encoding))
    compute = [r for r in ordered if not r.excluded]
    total = sum(r.llvm for r in compute)
    done = sum(r.implemented for r in compute)
    forms: dict[str, dict] = {}
    for s in coverage.form_statuses(cpu, wave_size):
        entry = forms.setdefault(s.encoding, {"llvm": 0, "implemented": 0, "missing": []})
        entry["llvm"] += 1
        entry["implemented"] += s.implemented
        if not s.implemented:
            entry["missing"].append(s.name)
    return {
        "target": target,
        "wave_size": wave_size or (64 if _resolve(cpu)[0] == "gfx9" else 32),
        "families": [{"encoding": r.encoding, "llvm": r.llvm, "decoded": r.decoded,
                      "implemented": r.implemented, "excluded": r.excluded,
                      "missing": [{"name": n, "why": w} for n, w in r.missing]}
                     for r in ordered],
        "compute": {"implemented": done, "opcodes": total,
                    "percent": round(100.0 * done / total, 1) if total else 100.0},
        "all": {"implemented": sum(r.implemented for r in ordered),
                "opcodes": sum(r.llvm for r in ordered)},
        "forms": forms,
    }


# --- text and markdown ---------------------------------------------------------------------------

def _pct(done: int, total: int) -> str:
    return f"{100.0 * done / total:5.1f}%" if total else "    -"


def render_text(data: dict, listing: bool) -> str:
    c = data["compute"]
    lines = [f"{data['target']} (wave{data['wave_size']}): compute-relevant {c['percent']}% "
             f"({c['implemented']} of {c['opcodes']} opcodes have semantics)",
             f"  {'family':<12}{'LLVM':>6}{'decoded':>9}{'semantics':>11}{'':>8}"]
    for fam in data["families"]:
        note = "  excluded: " + fam["excluded"].split(":")[0] if fam["excluded"] else ""
        lines.append(f"  {fam['encoding']:<12}{fam['llvm']:>6}{fam['decoded']:>9}"
                     f"{fam['implemented']:>11}  {_pct(fam['implemented'], fam['llvm'])}{note}")
    for form, entry in data["forms"].items():
        lines.append(f"  form {form:<14}{entry['implemented']:>4} of {entry['llvm']:<4}"
                     f"{_pct(entry['implemented'], entry['llvm'])}")
    if listing:
        for fam in data["families"]:
            if fam["missing"] and not fam["excluded"]:
                names = " ".join(m["name"] for m in fam["missing"])
                lines.append(f"  {fam['encoding']} without semantics: {names}")
        for form, entry in data["forms"].items():
            if entry["missing"]:
                lines.append(f"  {form} form without semantics: {' '.join(entry['missing'])}")
    return "\n".join(lines)


def render_markdown(reports: list[dict]) -> str:
    out = [
        "# What the simulator's ISA interpreter implements",
        "",
        "<!-- Generated by tools/isa_coverage.py; do not edit. Regenerate with",
        "     python3 tools/isa_coverage.py --markdown docs/simulator-isa-coverage.md",
        "     (tests/unit/test_isa_coverage.py fails when this page is stale). -->",
        "",
        "hsapy's simulator runs real code objects instruction by instruction. This page counts,",
        "per target and encoding family, the opcodes LLVM 19's disassembler decodes, how many "
        "of them",
        "hsapy's decoder decodes, and how many have semantics in the interpreter. An instruction",
        "without semantics is never guessed: when a kernel reaches one, the queue stops with",
        "`HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION` and the message names the instruction.",
        "",
        "*Compute-relevant* opcodes are all of them except these families, which ordinary HIP",
        "compute code cannot reach:",
        "",
    ]
    seen = {}
    for enc, why in EXCLUDED.items():
        seen.setdefault(why, []).append(enc)
    for why, encs in seen.items():
        out.append(f"- {', '.join(encs)} -- {why}.")
    out += ["", "| target | compute-relevant opcodes with semantics | all opcodes with semantics |",
            "|---|---|---|"]
    for data in reports:
        c, a = data["compute"], data["all"]
        out.append(f"| {data['target']} (wave{data['wave_size']}) | {c['percent']}% "
                   f"({c['implemented']} of {c['opcodes']}) | "
                   f"{a['implemented']} of {a['opcodes']} |")
    out += ["", "An opcode counts once per encoding: `v_add_f32` in VOP2 and in VOP3 are two",
            "opcodes.",
            "VOP3P-MAI are the MFMA/SMFMAC matrix opcodes, VOP3P-WMMA the WMMA/SWMMAC ones; VOPD-X",
            "and VOPD-Y the two halves of a dual-issue word. *Forms* are operand extensions of",
            "VOP1/VOP2/VOPC opcodes (SDWA on gfx9, DPP16 everywhere, DPP8 on gfx11/gfx12), counted",
            "for the opcodes LLVM decodes them for."]
    for data in reports:
        out += ["", f"## {data['target']} (wave{data['wave_size']})", "",
                "| family | LLVM decodes | hsapy decodes | semantics | |",
                "|---|---:|---:|---:|---|"]
        for fam in data["families"]:
            note = "excluded" if fam["excluded"] else _pct(fam["implemented"], fam["llvm"]).strip()
            out.append(f"| {fam['encoding']} | {fam['llvm']} | {fam['decoded']} | "
                       f"{fam['implemented']} | {note} |")
        for form, entry in data["forms"].items():
            out.append(f"| form {form} | {entry['llvm']} | | {entry['implemented']} | "
                       f"{_pct(entry['implemented'], entry['llvm']).strip()} |")
        partial = [(names, what) for target, names, what in PARTIAL if target == data["target"]]
        if partial:
            out += ["", "Implemented, stopping the queue where no public source defines the "
                    "result:", ""]
            out += [f"- {names}: {what}." for names, what in partial]
        missing = [(fam["encoding"], m) for fam in data["families"] if not fam["excluded"]
                   for m in fam["missing"]]
        if missing:
            out += ["", f"Compute-relevant opcodes without semantics ({len(missing)}):", ""]
            by_why: dict[str, list[str]] = {}
            for enc, m in missing:
                by_why.setdefault(m["why"], []).append(f"`{m['name']}` ({enc})")
            for why, names in by_why.items():
                out.append(f"- {why}: {', '.join(names)}")
        forms_missing = [(form, e["missing"]) for form, e in data["forms"].items() if e["missing"]]
        if forms_missing:
            out += ["", "Forms without semantics:", ""]
            for form, names in forms_missing:
                out.append(f"- {form}: {', '.join(f'`{n}`' for n in names)}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help=f"targets (default: {' '.join(TARGETS)}); "
                        "add -w64 for gfx11/gfx12 wave64 code")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--list", action="store_true", help="list every unimplemented opcode")
    parser.add_argument("--markdown", metavar="PATH", help="write the docs page to PATH")
    args = parser.parse_args(argv)
    reports = [report(t) for t in (args.targets or TARGETS)]
    if args.markdown:
        Path(args.markdown).write_text(render_markdown(reports), encoding="utf-8")
        return 0
    if args.json:
        print(json.dumps(reports, indent=1))
        return 0
    print("\n\n".join(render_text(r, args.list) for r in reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
