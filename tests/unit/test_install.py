"""What an install promises: every third-party import is declared (core or an extra), optional
ones are imported only where they are used, and ``hsapy --version`` says the package version.

(`bash .ci/run` also installs the declared lowest versions into a fresh venv and runs
``hsapy demo`` there with nothing but the venv on PATH.)
"""
from __future__ import annotations

import ast
import functools
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import hsapy

REPO = Path(hsapy.__file__).resolve().parent.parent
PACKAGE_DIRS = ("hsapy", "asm", "kernels")
# import name -> distribution name, where they differ
DISTRIBUTIONS = {"hip": "hip-python"}
# Other projects' launch APIs that ``hsapy bench launch`` times side by side when the user has
# them (NVIDIA GPU peers): imported lazily in hsapy/bench.py only, never needed by hsapy, so no
# extra installs them (CuPy's wheel is named per CUDA version, torch is a choice of its own).
MEASURED_PEERS = {"cuda", "cupy", "torch"}

tomllib = pytest.importorskip("tomllib")


def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in requirements}


@functools.cache
def third_party_imports() -> tuple[tuple[str, str, bool], ...]:
    """(distribution, file, imported inside a function) for every non-stdlib import."""
    found = []
    for directory in PACKAGE_DIRS:
        for path in sorted((REPO / directory).rglob("*.py")):
            tree = ast.parse(path.read_text())
            lazy_nodes = {id(inner) for node in ast.walk(tree)
                          if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                          for inner in ast.walk(node)}
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    if node.level:
                        continue
                    modules = [node.module]
                elif isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top in sys.stdlib_module_names or top == "hsapy":
                        continue
                    found.append((DISTRIBUTIONS.get(top, top).lower(),
                                  str(path.relative_to(REPO)), id(node) in lazy_nodes))
    return tuple(found)


def test_every_module_level_import_is_a_core_dependency():
    core = requirement_names(project()["dependencies"])
    eager = {(name, where) for name, where, lazy in third_party_imports() if not lazy}
    assert eager and {name for name, _ in eager} <= core, sorted(eager)


def test_every_lazy_import_is_declared_in_core_or_an_extra():
    declared = requirement_names(project()["dependencies"])
    for requirements in project()["optional-dependencies"].values():
        declared |= requirement_names(requirements)
    undeclared = {(name, where) for name, where, lazy in third_party_imports()
                  if name not in declared
                  and not (name in MEASURED_PEERS and where == "hsapy/bench.py" and lazy)}
    assert not undeclared


@pytest.mark.parametrize("extra,distribution", [("toolchain", "ziglang"), ("plot", "matplotlib"),
                                                ("hip", "hip-python"), ("zstd", "zstandard")])
def test_optional_features_have_their_extra(extra, distribution):
    assert distribution in requirement_names(project()["optional-dependencies"][extra])


def test_every_requirement_but_the_dev_tools_is_a_floor_that_ci_can_pin():
    # `.ci/run` installs each floor exactly (name==floor) in its lowest-versions venv
    extras = project()["optional-dependencies"]
    requirements = project()["dependencies"] + [requirement for extra, listed in extras.items()
                                                if extra != "dev" for requirement in listed]
    malformed = [r for r in requirements
                 if not re.fullmatch(r"[A-Za-z0-9_.-]+>=[0-9][0-9.]*", r.replace(" ", ""))]
    assert not malformed


def test_numpy_floor_is_2_0():
    # np.bitwise_count, used by the simulator's bit-count instructions, is numpy 2.0
    assert "numpy>=2.0" in project()["dependencies"]


def test_version_flag_prints_the_package_version():
    result = subprocess.run([sys.executable, "-m", "hsapy", "--version"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0
    assert result.stdout.strip() == f"hsapy {hsapy.__version__}"
    assert "version" in project()["dynamic"]   # one source: hsapy.__version__


def test_every_data_file_of_the_package_directories_is_package_data():
    # setuptools ships only the .py files and what package-data matches: a code object or
    # header added under hsapy/, asm/ or kernels/ with a new suffix would be missing from the
    # wheel (and `hsapy demo` would fail only after a pip install)
    import fnmatch

    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["*"]
    unshipped = [str(path.relative_to(REPO)) for directory in PACKAGE_DIRS
                 for path in (REPO / directory).rglob("*")
                 if path.is_file() and path.suffix not in (".py", ".pyc")
                 and "__pycache__" not in path.parts
                 and not any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns)]
    assert not unshipped


def test_the_license_is_an_spdx_expression():
    # the TOML-table form is deprecated by setuptools (builds stop accepting it in 2027)
    assert project()["license"] == "MIT"


@pytest.mark.parametrize("command", [["-m", "hsapy", "--help"], ["-m", "hsapy", "demo", "--help"],
                                     ["asm/build.py", "--help"], ["kernels/build.py", "--help"]])
def test_the_commands_need_no_docstrings(command):
    # python -OO (PYTHONOPTIMIZE=2) strips docstrings: nothing a user runs may read __doc__
    result = subprocess.run([sys.executable, "-OO", *command], capture_output=True, text=True,
                            timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage:")


def test_an_ascii_stdout_gets_escapes_not_a_unicode_error(tmp_path):
    # LC_ALL=C with PYTHONUTF8=0, or PYTHONIOENCODING=ascii: stdout cannot encode the file name
    output = tmp_path / "\u00f6.hsaco"
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "HSAPY_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run([sys.executable, "-m", "hsapy", "build", "asm:empty", "--target",
                             "gfx942", "-o", str(output)], capture_output=True, timeout=120,
                            cwd=REPO, env=env)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert b"\\xf6.hsaco" in result.stdout and output.is_file()


@pytest.mark.skipif(os.environ.get("HSAPY_TEST_PIP") != "1",
                    reason="runs pip wheel twice (seconds, and the network for setuptools when "
                           "pip's cache lacks it): set HSAPY_TEST_PIP=1")
def test_a_wheel_built_in_a_tree_built_before_lacks_the_files_deleted_since(tmp_path):
    # setuptools' build_py only adds to build/lib: pip install . after a git pull that removed
    # a module (or a prebuilt code object) would install it anyway
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy2(REPO / name, tree / name)
    for directory in PACKAGE_DIRS:
        shutil.copytree(REPO / directory, tree / directory,
                        ignore=shutil.ignore_patterns("__pycache__"))
    deleted = tree / "hsapy" / "deleted_since.py"
    deleted.write_text("")

    def wheel_names(out: Path) -> list[str]:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
                        str(tree)], check=True, capture_output=True, timeout=300)
        (wheel,) = out.glob("*.whl")
        return zipfile.ZipFile(wheel).namelist()

    assert "hsapy/deleted_since.py" in wheel_names(tmp_path / "first")
    deleted.unlink()
    assert "hsapy/deleted_since.py" not in wheel_names(tmp_path / "second")
