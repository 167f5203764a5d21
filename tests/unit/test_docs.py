"""docs/reliability.md's reproduce commands point at files that exist, and their -k expressions
select tests (one collection run for all of them)."""
from __future__ import annotations

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
