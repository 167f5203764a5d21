"""The expression graph the tracer records and the code generator lowers.

A :class:`Node` is one value: a flat vector of ``n`` elements of one numpy dtype (a numpy array
of any shape is its elements in C order). Ops:

``input``      a register or state value of one wave (``attr`` is its key: ``("v", 3)``,
               ``("s", 5)``, ``("a", 0)``, ``("exec",)``, ``("scc",)``)
``const``      ``attr`` is the flat numpy array of values
``gather``     ``attr``: for each output element, the index of the source element it copies
``shuffle2``   two sources; ``attr`` indexes their concatenation
``concat``     the sources one after another
``bitcast``    the same bytes read as another dtype (the element count scales)
``cast``       numpy ``astype`` (C casts as numpy performs them on x86-64)
``ufunc``      ``attr`` is the numpy ufunc name (``("frexp", k)`` for output ``k`` of a
               two-output ufunc); the arguments are already cast to the ufunc loop's dtypes
               and broadcast to ``n`` elements
``select``     (condition, if true, if false); a one-element condition selects whole vectors
``reduce``     ``attr`` = (operation, group size): each group of consecutive elements reduced
``argmax``     ``attr`` = group size: index of the first true element of each group (bool)
``dyn_gather`` (source, index): element i is source[index[i]]
``dyn_scatter`` (base, index, values): base with values[i] stored at index[i], in order
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Node", "const_node", "input_node", "is_const", "const_value", "walk"]


class Node:
    """One value of the graph (see the module docstring)."""

    __slots__ = ("op", "args", "attr", "dtype", "n", "__weakref__")

    def __init__(self, op: str, args: tuple, attr: Any, dtype: np.dtype, n: int) -> None:
        self.op = op
        self.args = args
        self.attr = attr
        self.dtype = np.dtype(dtype)
        self.n = int(n)

    def __repr__(self) -> str:
        attr = self.attr
        if isinstance(attr, np.ndarray):
            attr = attr.tolist() if attr.size <= 8 else f"[{attr.size} values]"
        return f"<{self.op} {attr} {self.dtype}x{self.n}>"


def const_node(values: Any, dtype: Any = None) -> Node:
    """A constant from a numpy array or scalar (flattened)."""
    arr = np.ascontiguousarray(np.asarray(values, dtype=dtype)).reshape(-1)
    return Node("const", (), arr, arr.dtype, arr.size)


def input_node(key: tuple, dtype: Any, n: int) -> Node:
    """A value the generated code loads from the wave's state."""
    return Node("input", (), key, dtype, n)


def is_const(node: Node) -> bool:
    return node.op == "const"


def const_value(node: Node) -> np.ndarray:
    """The flat values of a constant node."""
    return node.attr


def walk(roots: list[Node]) -> list[Node]:
    """Every node reachable from ``roots``, arguments before their users."""
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(r, False) for r in reversed(roots) if r is not None]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for arg in reversed(node.args):
            if id(arg) not in seen:
                stack.append((arg, False))
    return order
