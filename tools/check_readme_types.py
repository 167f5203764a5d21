"""Type-check README.md's example with mypy, as a user's editor would see it.

    python tools/check_readme_types.py

The first ```python block of README.md is checked with the project's mypy configuration, and
every name it binds must have a real type (an hsapy class, int, ...), not ``Any``: the example
is what a newcomer types first, so it is where untyped returns would show.

pyproject.toml installs asm/ and kernels/ as hsapy.asm and hsapy.kernels (package-dir), which
the editable install resolves with an import hook that mypy does not run. So the check builds
the installed layout in a temporary folder (links to hsapy/'s entries and to each mapped
folder) and runs mypy there. Exits 1 with mypy's output when the example does not type-check
or binds a name typed ``Any``.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def example_code(readme: Path) -> str:
    """The first ```python block of ``readme``."""
    found = re.search(r"^```python\n(.*?)^```", readme.read_text(), re.S | re.M)
    if found is None:
        raise SystemExit(f"{readme}: no ```python block")
    return found.group(1)


def installed_layout(folder: Path) -> None:
    """Links in ``folder`` that lay the packages out as an installed hsapy has them."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"]
    for package, source in sorted(mapping.items()):
        target = folder.joinpath(*package.split("."))
        if package == "hsapy":
            target.mkdir(parents=True)
            for entry in sorted((ROOT / source).iterdir()):
                if entry.name not in ("__pycache__",):
                    (target / entry.name).symlink_to(entry)
        else:
            target.symlink_to(ROOT / source)


def revealed_locals(output: str) -> dict[str, str]:
    """name -> type, from mypy's ``reveal_locals()`` notes."""
    return dict(re.findall(r"note:\s+(\w+): (.+)$", output, re.M))


def main() -> int:
    code = example_code(ROOT / "README.md")
    with tempfile.TemporaryDirectory(prefix="hsapy-readme-") as temp:
        folder = Path(temp)
        installed_layout(folder)
        (folder / "example.py").write_text(code + "\nreveal_locals()\n")
        result = subprocess.run(
            [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
             "--cache-dir", str(folder / ".mypy_cache"), "example.py"],
            cwd=folder, capture_output=True, text=True)
    output = result.stdout + result.stderr
    types = revealed_locals(output)
    untyped = sorted(name for name, kind in types.items() if "Any" in kind)
    if result.returncode != 0 or not types or untyped:
        print(output, file=sys.stderr)
        if untyped:
            print(f"README example: typed Any: {', '.join(untyped)}", file=sys.stderr)
        return 1
    print("README example type-checks: " + ", ".join(f"{n}: {t}" for n, t in types.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
