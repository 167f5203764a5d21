"""docs/reliability.md's reproduce commands point at files that exist, and their -k expressions
select tests (one collection run for all of them)."""
from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMAND = re.compile(r"`((?:HSAPY_\w+=\S+ )*python3 [^`]+)`")


def _commands() -> list[list[str]]:
    text = (ROOT / "docs" / "reliability.md").read_text()
    return [shlex.split(c) for c in sorted(set(COMMAND.findall(text)))]


def test_every_reproduce_command_names_existing_files():
    commands = _commands()
    assert len(commands) >= 10
    for words in commands:
        paths = [w.split("::")[0] for w in words if w.startswith(("tests/", "benchmarks/"))]
        assert paths, words
        for path in paths:
            assert (ROOT / path).is_file(), (words, path)


def test_every_k_expression_selects_tests():
    selections = {}
    for words in _commands():
        if "-k" in words:
            path = next(w for w in words if w.startswith("tests/"))
            selections.setdefault(path, []).append(words[words.index("-k") + 1])
    assert selections
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only",
                          *selections], cwd=ROOT, capture_output=True, text=True).stdout
    collected = [line for line in out.splitlines() if "::" in line]
    for path, expressions in selections.items():
        names = [line.split("::", 1)[1] for line in collected if line.startswith(path)]
        for expression in expressions:
            # every alternative of "a or b" must name at least one collected test
            for alternative in re.split(r"\s+or\s+", expression):
                assert any(alternative.lower() in n.lower() for n in names), (path, alternative)


# -- the documentation as a whole ----------------------------------------------------------

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
# Paths outside the repository the project must not cite (spelled in pieces so that this file
# does not cite them either).
OUTSIDE = [re.compile(p) for p in (r"shared" + "/", r"DESIGN" + r"\.md", r"amdgpu" + "-abi")]
SKIPPED_DIRS = {".git", ".venv", "build", "dist", "__pycache__", ".pytest_cache", ".hypothesis"}


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", ROOT / "examples" / "README.md",
            *sorted((ROOT / "docs").glob("*.md"))]


def _repository_files():
    """The checkout's files: in a git checkout what git holds or would add (tracked, and
    untracked but not ignored: local build outputs and scratch files are not the repository),
    else every file under the root."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"], capture_output=True, check=True, timeout=60).stdout
        candidates = sorted({ROOT / name for name in listed.decode().split("\0") if name})
    except (OSError, subprocess.SubprocessError):
        candidates = sorted(ROOT.rglob("*"))
    for path in candidates:
        parts = set(path.relative_to(ROOT).parts)
        if path.is_file() and not parts & SKIPPED_DIRS and not any(
                part.endswith(".egg-info") for part in parts):
            yield path


def test_every_relative_link_in_the_documentation_resolves():
    for page in _markdown_files():
        for target in LINK.findall(page.read_text()):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links {target}"


def test_the_docs_index_lists_every_page():
    index = (ROOT / "docs" / "README.md").read_text()
    for page in (ROOT / "docs").glob("*.md"):
        if page.name != "README.md":
            assert f"({page.name})" in index, page.name


def test_no_file_cites_a_path_outside_the_repository():
    found = []
    for path in _repository_files():
        text = path.read_bytes().decode("utf-8", errors="ignore")
        for number, line in enumerate(text.splitlines(), start=1):
            if any(pattern.search(line) for pattern in OUTSIDE):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}")
    assert not found, "\n".join(found)


def test_the_readme_has_exactly_two_set_up_commands_and_links_the_docs():
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set-up", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in setup.splitlines() if line.strip()]
    assert len(commands) == 2
    assert commands[0].startswith("pip install") and "hsapy demo" in commands[0]
    assert commands[1].startswith("bash .ci/run")
    for page in ("docs/README.md", "docs/amd-gpu.md", "docs/simulator.md",
                 "docs/troubleshooting.md", "docs/operator-suite.md"):
        assert f"]({page})" in readme, page


def _readme_command_rows() -> dict[str, str]:
    """The README's command table: the first cell of each `hsapy NAME ...` row, by NAME."""
    rows = {}
    for line in (ROOT / "README.md").read_text().splitlines():
        match = re.match(r"\| `hsapy (\w+)([^`]*)` \|", line)
        if match:
            rows[match.group(1)] = match.group(2).replace("\\|", "|")
    return rows


def test_the_readme_command_table_shows_every_option_of_every_command():
    from hsapy.cli import build_parser

    rows = _readme_command_rows()
    subcommands = next(action for action in build_parser()._actions
                       if isinstance(action, argparse._SubParsersAction))
    missing = []
    for name, parser in subcommands.choices.items():
        assert name in rows, f"README.md's command table has no row for hsapy {name}"
        for action in parser._actions:
            options = [o for o in action.option_strings if o not in ("-h", "--help")]
            if options and not any(re.search(rf"\[{re.escape(o)}\b", rows[name])
                                   or re.search(rf"\s{re.escape(o)}\b", rows[name])
                                   for o in options):
                missing.append(f"hsapy {name} {'/'.join(options)}")
    assert not missing, "README.md's command table lacks: " + ", ".join(missing)
