"""hsapy's modules import each other without cycles: every package is a stack of layers.

The graph is read from the source, not from a running interpreter: every ``import`` and
``from ... import`` statement of every module (at module level or inside a function, so a lazy
import cannot hide a cycle) plus ``importlib.import_module("...")`` with a literal name. Imports
under ``if TYPE_CHECKING:`` are left out: they never run and only name types for annotations.
``from package import name`` is an arrow to ``package.name`` when that is a module, else to the
package's ``__init__``. Importing a submodule also runs its parent packages' ``__init__``; like
other layering checks, the graph does not draw that implied arrow.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# pyproject.toml's package-dir: hsapy/, and asm/ and kernels/ installed as hsapy.asm, hsapy.kernels
PACKAGES = {"hsapy": ROOT / "hsapy", "hsapy.asm": ROOT / "asm", "hsapy.kernels": ROOT / "kernels"}

def module_files() -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the installed packages."""
    modules: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join([package, *parts])] = path
    return modules


def _is_type_checking_block(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` outside ``if TYPE_CHECKING:`` bodies."""
    found: list[ast.AST] = []
    pending = [tree]
    while pending:
        node = pending.pop()
        found.append(node)
        if isinstance(node, ast.If) and _is_type_checking_block(node):
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that module ``name`` imports."""
    is_package = path.name == "__init__.py"
    here = name if is_package else name.rpartition(".")[0]
    targets: set[str] = set()

    def add(dotted: str, names: list[str]) -> None:
        for item in names:
            if f"{dotted}.{item}" in modules:
                targets.add(f"{dotted}.{item}")
            elif dotted in modules:
                targets.add(dotted)

    for node in _statements(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    targets.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            add(base, [alias.name for alias in node.names])
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id == "__import__"))):
            if node.args[0].value in modules:
                targets.add(node.args[0].value)
    targets.discard(name)
    return targets


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules it imports, for every module of hsapy."""
    modules = module_files()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def describe(component: frozenset[str], graph: dict[str, set[str]]) -> str:
    arrows = [f"  {a} -> {b}" for a in sorted(component) for b in sorted(graph[a] & component)]
    return "\n".join([", ".join(sorted(component)), *arrows])


def test_the_graph_sees_lazy_imports_and_leaves_out_type_checking_ones(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.c import C\n"
        "def f():\n    from . import b\n    import importlib\n"
        "    importlib.import_module('pkg.d')\n")
    for name in "bcd":
        (package / f"{name}.py").write_text("import pkg.a\n")
    modules = {"pkg": package / "__init__.py",
               **{f"pkg.{n}": package / f"{n}.py" for n in "abcd"}}
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    assert graph["pkg.a"] == {"pkg.b", "pkg.d"}
    assert set(cycles(graph)) == {frozenset({"pkg.a", "pkg.b", "pkg.d"})}


def test_hsapy_has_no_import_cycle() -> None:
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(describe(c, graph) for c in found)
