"""Trace an interpreter closure into the expression graph of one wave.

The interpreter compiles every instruction into a closure over a
:class:`~hsapy.sim.isa.wave.Batch` (hsapy/sim/isa/semantics.py and the tables it reads). This
module runs that very closure on a :class:`SymbolicBatch` of one wave: registers, EXEC and SCC
are :mod:`symbolic <hsapy.sim.isa.jit.symbolic>` arrays, so every numpy operation the closure
performs is recorded instead of computed. The closure and every function it reaches in the
interpreter's modules run as copies whose ``np`` is :data:`TRACING_NUMPY` (``np.asarray`` of a
symbolic array keeps it symbolic; ``np.zeros`` gives a writable symbolic array), so the
semantics are written once, as numpy, and the compiled engine is generated from them.

Where the closure branches on a value (``if taken.all():``), every path is traced and the
results are merged with selects on the path conditions; a path that raises (an operand out of
range, wave64 code in a wave32 wave, ...) becomes a condition under which the compiled code hands
the wave back to the interpreter, which raises the same error. Anything the symbolic arrays
cannot record raises :class:`~hsapy.sim.isa.jit.symbolic.Untraceable`: that instruction is then
run by the interpreter.
"""
from __future__ import annotations

import importlib
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# registers numpy's array functions for symbolic arrays (symbolic.ARRAY_FUNCTIONS)
from hsapy.sim.isa.jit import array_functions  # noqa: F401
from hsapy.sim.isa.jit.graph import Node, const_node, input_node, is_const
from hsapy.sim.isa.jit.symbolic import (
    MAX_ELEMENTS,
    Mutable,
    PathTracer,
    Sym,
    Untraceable,
    as_sym,
    element_numbers,
    mutable_zeros,
    select,
)

__all__ = ["TraceResult", "trace_closure", "SymbolicBatch", "TRACING_NUMPY", "rebind",
           "Bail", "NSREG"]

NSREG = 128
MAX_PATHS = 32
# The interpreter's modules whose functions run as tracing copies.
TRACED_MODULES = (
    "hsapy.sim.isa.operand_access", "hsapy.sim.isa.wave", "hsapy.sim.isa.semantics",
    "hsapy.sim.isa.semantics_alu", "hsapy.sim.isa.float_mode", "hsapy.sim.isa.semantics_mem",
    "hsapy.sim.isa.memory_access", "hsapy.sim.isa.semantics_smem", "hsapy.sim.isa.semantics_vmem",
    "hsapy.sim.isa.semantics_lds", "hsapy.sim.isa.semantics_scalar",
    "hsapy.sim.isa.semantics_valu", "hsapy.sim.isa.semantics_valu_operands",
    "hsapy.sim.isa.semantics_valu_special", "hsapy.sim.isa.alu_bits", "hsapy.sim.isa.alu_float",
    "hsapy.sim.isa.alu_scalar",
)


class Bail(Exception):
    """A path the compiled code cannot take for a single wave (splitting a batch): the wave
    goes back to the interpreter if it ever gets there."""


# --- numpy as the traced code sees it ------------------------------------------------------------

def _asarray(a: Any, dtype: Any = None, order: Any = None, **kwargs: Any) -> Any:
    if isinstance(a, Sym):
        return a if dtype is None else a.astype(dtype)
    if isinstance(a, (list, tuple)) and any(isinstance(x, Sym) for x in a):
        return np.stack([as_sym(x) for x in a]) if dtype is None else \
            np.stack([as_sym(x) for x in a]).astype(dtype)
    return np.asarray(a, dtype=dtype, order=order, **kwargs)


def _array(a: Any, dtype: Any = None, copy: Any = True, **kwargs: Any) -> Any:
    if isinstance(a, Sym):
        value = Sym(a.node, a.shape)
        return value if dtype is None else value.astype(dtype)
    if isinstance(a, (list, tuple)) and any(isinstance(x, Sym) for x in a):
        return _asarray(a, dtype)
    return np.array(a, dtype=dtype, copy=copy, **kwargs)


def _ascontiguousarray(a: Any, dtype: Any = None, **kwargs: Any) -> Any:
    return _asarray(a, dtype)


def _small(shape: Any) -> bool:
    try:
        return int(np.prod(shape, dtype=np.int64)) <= MAX_ELEMENTS
    except (TypeError, ValueError):
        return False


def _zeros(shape: Any, dtype: Any = float, order: str = "C", **kwargs: Any) -> Any:
    if _small(shape):
        return mutable_zeros(shape, dtype)
    return np.zeros(shape, dtype, order)


def _ones(shape: Any, dtype: Any = float, order: str = "C", **kwargs: Any) -> Any:
    if _small(shape):
        return Mutable(as_sym(np.ones(shape, dtype)))
    return np.ones(shape, dtype, order)


def _full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C", **kw: Any) -> Any:
    if isinstance(fill_value, Sym):
        target = np.zeros(shape, dtype or fill_value.dtype)
        return Mutable(np.broadcast_to(fill_value.astype(target.dtype), target.shape))
    if _small(shape):
        return Mutable(as_sym(np.full(shape, fill_value, dtype)))
    return np.full(shape, fill_value, dtype, order)


class _TracingNumpy(types.ModuleType):
    """numpy for the tracing copies: conversion and creation functions keep symbolic arrays
    symbolic; everything else is numpy itself (ufuncs and array functions dispatch to
    :class:`Sym`)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


class _ArrayCheck(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, (np.ndarray, Sym))


class _Ndarray(metaclass=_ArrayCheck):
    """``np.ndarray`` for ``isinstance`` in traced code: symbolic arrays are arrays too (the
    interpreter copies arrays that may alias a register before writing it)."""


TRACING_NUMPY = _TracingNumpy("numpy")
TRACING_NUMPY.ndarray = _Ndarray
TRACING_NUMPY.asarray = _asarray
TRACING_NUMPY.asanyarray = _asarray
TRACING_NUMPY.array = _array
TRACING_NUMPY.ascontiguousarray = _ascontiguousarray
TRACING_NUMPY.zeros = _zeros
TRACING_NUMPY.empty = _zeros
TRACING_NUMPY.ones = _ones
TRACING_NUMPY.full = _full


# --- tracing copies of the interpreter's functions ----------------------------------------------

class _Rebinder:
    """Copies of functions defined in :data:`TRACED_MODULES` whose globals see
    :data:`TRACING_NUMPY` as ``np`` and the other traced modules as copies of themselves;
    closure cells, defaults and function attributes are copied the same way."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._globals: dict[int, dict] = {}      # id(module dict) -> tracing globals
        self._proxies: dict[str, types.ModuleType] = {}
        self._memo: dict[int, tuple[Any, Any]] = {}

    def _prepare(self) -> None:
        if self._globals:
            return
        # every traced module, imported now if nothing has imported it yet: a module left out
        # here would be traced through its real numpy and fail, so what compiles would depend
        # on which modules happened to be imported before the first trace
        modules = [importlib.import_module(name) for name in TRACED_MODULES]
        for module in modules:
            g = dict(module.__dict__)
            self._globals[id(module.__dict__)] = g
            proxy = types.ModuleType(module.__name__)
            self._proxies[module.__name__] = proxy
        for module in modules:
            g = self._globals[id(module.__dict__)]
            for name, value in list(g.items()):
                if value is np:
                    g[name] = TRACING_NUMPY
                elif isinstance(value, types.ModuleType) and value.__name__ in self._proxies:
                    g[name] = self._proxies[value.__name__]
        for module in modules:
            g = self._globals[id(module.__dict__)]
            for name, value in list(g.items()):
                if isinstance(value, types.FunctionType):
                    g[name] = self.function(value)
                elif isinstance(value, type) and value.__module__ == module.__name__:
                    g[name] = value
            self._proxies[module.__name__].__dict__.update(g)

    def function(self, fn: types.FunctionType) -> types.FunctionType:
        with self._lock:
            self._prepare()
            hit = self._memo.get(id(fn))
            if hit is not None and hit[0] is fn:
                return hit[1]
            g = self._globals.get(id(fn.__globals__))
            if g is None:
                return fn
            cells = None
            if fn.__closure__ is not None:
                cells = tuple(types.CellType() for _ in fn.__closure__)
            copy = types.FunctionType(fn.__code__, g, fn.__name__, None, cells)
            self._memo[id(fn)] = (fn, copy)
            if fn.__defaults__:
                copy.__defaults__ = tuple(self.value(d) for d in fn.__defaults__)
            if fn.__kwdefaults__:
                copy.__kwdefaults__ = {k: self.value(v) for k, v in fn.__kwdefaults__.items()}
            if fn.__closure__ is not None:
                for old, new in zip(fn.__closure__, cells):
                    try:
                        contents = old.cell_contents
                    except ValueError:       # an empty cell
                        continue
                    new.cell_contents = self.value(contents)
            for key, value in fn.__dict__.items():
                setattr(copy, key, self.value(value))
            copy.__qualname__ = fn.__qualname__
            return copy

    def value(self, value: Any) -> Any:
        if isinstance(value, types.FunctionType):
            return self.function(value)
        if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType):
            return types.MethodType(self.function(value.__func__), value.__self__)
        if type(value) in (list, tuple):
            return type(value)(self.value(v) for v in value)
        if type(value) is dict:
            return {k: self.value(v) for k, v in value.items()}
        return value


_REBINDER = _Rebinder()


def rebind(fn: Callable) -> Callable:
    """The tracing copy of ``fn`` (``fn`` itself when it is not the interpreter's)."""
    return _REBINDER.value(fn)


# --- the symbolic wave ----------------------------------------------------------------------------

class _Inputs:
    """Input nodes of one trace, shared by all its paths."""

    def __init__(self, lanes: int) -> None:
        self.lanes = lanes
        self.nodes: dict[tuple, Node] = {}

    def get(self, key: tuple) -> Node:
        node = self.nodes.get(key)
        if node is None:
            kind = key[0]
            if kind in ("v", "a"):
                node = input_node(key, np.uint32, self.lanes)
            elif kind == "s":
                node = input_node(key, np.uint32, 1)
            elif kind == "exec":
                node = input_node(key, np.bool_, self.lanes)
            elif kind == "scc":
                node = input_node(key, np.bool_, 1)
            else:
                raise Untraceable(f"state {key}")
            self.nodes[key] = node
        return node


class ScalarFile:
    """``Batch.S`` of one wave: ``uint32[1, 128]``, read and written with constant keys."""

    shape = (1, NSREG)
    dtype = np.dtype(np.uint32)
    ndim = 2

    def __init__(self, inputs: _Inputs) -> None:
        self._inputs = inputs
        self.values: dict[int, Node] = {}

    def element(self, row: int) -> Node:
        node = self.values.get(row)
        return node if node is not None else self._inputs.get(("s", row))

    def _rows(self, key: Any) -> np.ndarray:
        keys = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, Sym) for k in keys):
            raise Untraceable("SGPR index computed at run time")
        return np.asarray(element_numbers(self.shape)[key])

    def read_rows(self, rows: np.ndarray) -> Sym:
        flat = rows.reshape(-1)
        if flat.size == 1:
            return Sym(self.element(int(flat[0])), rows.shape)
        nodes = tuple(self.element(int(r)) for r in flat)
        return Sym(Node("concat", nodes, None, np.uint32, len(nodes)), rows.shape)

    def write_rows(self, rows: np.ndarray, value: Sym) -> None:
        value = np.broadcast_to(as_sym(value).astype(np.uint32), rows.shape)
        flat = rows.reshape(-1)
        for j, row in enumerate(flat):
            self.values[int(row)] = value.reshape(-1)[j].node if flat.size > 1 else \
                value.reshape(-1).node

    def __getitem__(self, key: Any) -> Sym:
        return self.read_rows(self._rows(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        self.write_rows(self._rows(key), as_sym(value))


class ScalarPairs:
    """``Batch.S64``: the scalar file as ``uint64[1, 64]`` (SGPR pairs)."""

    shape = (1, NSREG // 2)
    dtype = np.dtype(np.uint64)
    ndim = 2

    def __init__(self, scalars: ScalarFile) -> None:
        self._scalars = scalars

    def _pairs(self, key: Any) -> np.ndarray:
        keys = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, Sym) for k in keys):
            raise Untraceable("SGPR pair index computed at run time")
        return np.asarray(element_numbers(self.shape)[key])

    def __getitem__(self, key: Any) -> Sym:
        pairs = self._pairs(key)
        rows = np.stack([2 * pairs, 2 * pairs + 1], axis=-1)
        words = self._scalars.read_rows(rows)
        return words.view(np.uint64).reshape(pairs.shape)

    def __setitem__(self, key: Any, value: Any) -> None:
        pairs = self._pairs(key)
        value = np.broadcast_to(as_sym(value).astype(np.uint64), pairs.shape)
        words = value.reshape(pairs.shape + (1,)).view(np.uint32)
        rows = np.stack([2 * pairs, 2 * pairs + 1], axis=-1)
        self._scalars.write_rows(rows, words)


class _Register(Mutable):
    """One VGPR/AGPR of the wave (``b.V[i]``): writes go to the register file."""

    __slots__ = ("_file", "_row")

    def __init__(self, file: VectorFile, row: int) -> None:
        self._file = file
        self._row = row
        Sym.__init__(self, file.value(row).node, (1, file.lanes))
        self._value = file.value(row)

    @property
    def node(self) -> Node:
        return self._file.value(self._row).node

    def current(self) -> Sym:
        return self._file.value(self._row)

    def assign(self, value: Sym) -> None:
        value = np.broadcast_to(as_sym(value), self.shape).astype(np.uint32)
        self._file.values[self._row] = Sym(value.node, self.shape)


class VectorFile:
    """``Batch.V`` / ``Batch.A`` of one wave: ``uint32[registers, 1, lanes]``."""

    def __init__(self, kind: str, inputs: _Inputs, lanes: int) -> None:
        self.kind = kind
        self.lanes = lanes
        self._inputs = inputs
        self.values: dict[int, Sym] = {}
        self.shape = (1 << 16, 1, lanes)
        self.ndim = 3
        self.dtype = np.dtype(np.uint32)

    def value(self, row: int) -> Sym:
        value = self.values.get(row)
        if value is None:
            value = Sym(self._inputs.get((self.kind, row)), (1, self.lanes))
        return value

    def __getitem__(self, key: Any) -> Sym:
        if isinstance(key, (int, np.integer)):
            return _Register(self, int(key))
        raise Untraceable("register index computed at run time")

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, (int, np.integer)):
            _Register(self, int(key)).assign(as_sym(value))
            return
        raise Untraceable("register index computed at run time")


class SymbolicBatch:
    """A :class:`~hsapy.sim.isa.wave.Batch` of one symbolic wave (the attributes and methods
    instruction closures use; its EXEC methods are the tracing copies of Batch's own)."""

    def __init__(self, inputs: _Inputs, lanes: int, mode: int) -> None:
        from hsapy.sim.isa.wave import Batch

        self.lanes = lanes
        self.waves = 1
        self.exec_all = False
        self.mode = mode
        self.status = 0
        self.S = ScalarFile(inputs)
        self.S64 = ScalarPairs(self.S)
        self.V = VectorFile("v", inputs, lanes)
        self.A = VectorFile("a", inputs, lanes)
        self.exec = Sym(inputs.get(("exec",)), (1, lanes))
        self.scc = Sym(inputs.get(("scc",)), (1,))
        self._inputs = inputs
        for name in ("exec_bits", "set_exec_bits", "set_exec"):
            setattr(self, name, types.MethodType(rebind(getattr(Batch, name)), self))

    def exec_changed(self) -> None:
        """EXEC facts are not cached for a symbolic wave."""

    def take(self, *args: Any) -> Any:
        raise Bail("the batch splits")

    @property
    def active_lanes(self) -> int:
        raise Untraceable("active_lanes")

    def __getattr__(self, name: str) -> Any:
        raise Untraceable(f"batch attribute {name}")


class SymbolicMachine:
    """The machine argument of a traced closure: only ALU work can be traced."""

    def split(self, *args: Any) -> None:
        raise Bail("the batch splits")

    def __getattr__(self, name: str) -> Any:
        raise Untraceable(f"machine attribute {name}")


# --- paths and their merge ----------------------------------------------------------------------

@dataclass
class TraceResult:
    """One instruction as expressions over one wave's state.

    ``writes`` maps a state key (``("v", r)``, ``("a", r)``, ``("s", r)``, ``("exec",)``,
    ``("scc",)``) to its value after the instruction; ``control`` is None (next instruction),
    an int (the closure's constant return: a byte address, END or BARRIER) or a per-wave int64
    node; ``bail`` a one-element bool node: true when this wave must go back to the
    interpreter before the instruction (None: never)."""

    writes: dict[tuple, Node]
    control: Any
    bail: Node | None
    inputs: dict[tuple, Node] = field(default_factory=dict)
    paths: int = 1


def _path_condition(tracer: PathTracer) -> Sym | None:
    cond: Sym | None = None
    for node, answer in zip(tracer.conditions, tracer.decisions):
        term = Sym(node, ())
        if not answer:
            term = ~term
        cond = term if cond is None else (cond & term)
    return cond


def _state(batch: SymbolicBatch, inputs: _Inputs) -> dict[tuple, Node]:
    state: dict[tuple, Node] = {}
    for row, node in batch.S.values.items():
        state[("s", row)] = node
    for file in (batch.V, batch.A):
        for row, value in file.values.items():
            state[(file.kind, row)] = value.node
    state[("exec",)] = batch.exec.node if isinstance(batch.exec, Sym) else \
        as_sym(batch.exec).node
    state[("scc",)] = as_sym(batch.scc).node
    return {k: v for k, v in state.items() if inputs.nodes.get(k) is not v}


def _shaped(node: Node, key: tuple, lanes: int) -> Node:
    """``node`` as the state value of ``key``: uint32 registers, bool EXEC (lanes) / SCC (1)."""
    kind = key[0]
    want_n = lanes if kind in ("v", "a", "exec") else 1
    want_dtype = np.bool_ if kind in ("exec", "scc") else np.uint32
    sym = Sym(node, (node.n,))
    if sym.dtype != want_dtype:
        sym = sym.astype(want_dtype)
    if sym.node.n != want_n:
        if sym.node.n != 1:
            raise Untraceable(f"{key} written with {sym.node.n} elements")
        sym = np.broadcast_to(sym.reshape(()), (want_n,))
    return sym.node


def trace_closure(fn: Callable, lanes: int, mode: int = 0) -> TraceResult:
    """Trace the interpreter closure ``fn(batch, machine)`` for one wave of ``lanes`` lanes
    under MODE value ``mode``; raises Untraceable when it cannot be recorded."""
    copy = rebind(fn)
    inputs = _Inputs(lanes)
    paths: list[tuple[Sym | None, dict, Any, bool, list]] = []
    pending: list[list[bool]] = [[]]
    while pending:
        prefix = pending.pop()
        tracer = PathTracer(prefix, inputs.nodes)
        batch = SymbolicBatch(inputs, lanes, mode)
        outcome: Any = None
        raised = False
        with tracer, np.errstate(all="ignore"):
            try:
                outcome = copy(batch, SymbolicMachine())
            except Untraceable:
                # a path that cannot be recorded: when the values lead there, the wave goes
                # back to the interpreter (unless every run would: see below)
                if not tracer.decisions:
                    raise
                raised = True
            except (Exception, Bail):    # noqa: BLE001 - the interpreter raises it too
                raised = True
        for k in range(len(prefix), len(tracer.decisions)):
            pending.append(tracer.decisions[:k] + [not tracer.decisions[k]])
        cond = _path_condition(tracer)
        if not raised and outcome is not None and not isinstance(outcome, (int, np.integer)):
            raise Untraceable(f"closure returned {type(outcome).__name__}")
        state = {} if raised else _state(batch, inputs)
        checks = [Sym(c, ()) for c in tracer.checks]
        paths.append((cond, state, None if outcome is None else int(outcome), raised, checks))
        if len(paths) > MAX_PATHS:
            raise Untraceable(f"more than {MAX_PATHS} paths")
    live = [p for p in paths if not p[3]]
    if not live:
        raise Untraceable("every path raises")
    # bail: a raising path, or a failed check on a path that runs
    bail: Sym | None = None
    for cond, _, _, raised, checks in paths:
        terms = []
        if raised:
            terms.append(cond if cond is not None else as_sym(np.array(True)))
        for check in checks:
            term = check if check.dtype == np.bool_ else check.astype(bool)
            terms.append(term if cond is None else (term & cond))
        for term in terms:
            bail = term if bail is None else (bail | term)
    keys: set = set()
    for _, state, _, _raised, _ in live:
        keys.update(state)
    writes: dict[tuple, Node] = {}
    for key in sorted(keys, key=repr):
        values = [(cond, _shaped(state.get(key, inputs.get(key)), key, lanes))
                  for cond, state, _, _, _ in live]
        writes[key] = _merge(values)
    outcomes = [(cond, outcome) for cond, _, outcome, _, _ in live]
    control: Any = None
    if any(o is not None for _, o in outcomes):
        if len({o for _, o in outcomes}) == 1:
            control = outcomes[0][1]
        else:
            control = _merge([(c, const_node(np.array([-5 if o is None else o], np.int64)))
                              for c, o in outcomes])
    if bail is not None and is_const(bail.node):
        if not bool(bail.node.attr[0]):
            bail = None
        else:
            raise Untraceable("the instruction always goes back to the interpreter")
    return TraceResult(writes, control, None if bail is None else bail.node,
                       dict(inputs.nodes), len(paths))


def _merge(values: list[tuple[Sym | None, Node]]) -> Node:
    """One node from per-path values (path conditions are exclusive and cover every run)."""
    result = values[-1][1]
    for cond, node in reversed(values[:-1]):
        if node is result:
            continue
        n = node.n
        result = select(cond, Sym(node, (n,)), Sym(result, (n,))).node
    return result


# control codes of a traced instruction (``-5``: continue with the next instruction)
NEXT = -5
