"""Symbolic numpy: arrays whose operations record an expression graph instead of computing.

:class:`Sym` stands for a numpy array of a known shape and dtype whose values are only known
when the compiled code runs. numpy sends ufunc calls to it through ``__array_ufunc__`` and the
array functions it implements through ``__array_function__`` (the table
:data:`ARRAY_FUNCTIONS`, which hsapy/sim/isa/jit/array_functions.py fills); its methods
(``astype``, ``view``, indexing, reductions, ...) record the same data movement numpy would
perform. Result dtypes
and shapes are numpy's own: they are computed by running numpy on zero-filled examples (weak
Python scalars stay Python scalars, NEP 50), and index arithmetic by applying the very same
operation to an array of element numbers.

What cannot be recorded (converting a value to a Python int, an unsupported numpy function, a
ufunc the code generator does not implement) raises :class:`Untraceable`; the instruction then
stays with the interpreter. ``bool(sym)`` asks the active :class:`PathTracer` which way to go
(the tracer explores both).

:class:`Mutable` is a symbolic array that can be written (``a[key] = v``, ``np.copyto``), with
views (``view``/``reshape``) that write through to it: registers, and the arrays semantics code
creates with ``np.zeros`` / ``np.empty`` and fills in.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from hsapy.sim.isa.jit.graph import Node, const_node, const_value, is_const

__all__ = ["Untraceable", "Sym", "Mutable", "as_sym", "PathTracer", "active_tracer",
           "UFUNCS", "MAX_ELEMENTS", "ARRAY_FUNCTIONS", "implements", "mutable_zeros", "select",
           # the primitives array_functions.py builds on
           "element_count", "zero_example", "element_numbers", "dtype_or_weak", "shape_of",
           "new_sym", "const_sym", "const_array", "gather", "broadcast", "as_bool", "reduce",
           "np_where", "normalise_index", "dynamic_gather"]

# ufuncs the code generator implements (hsapy/sim/isa/jit/lower.py)
UFUNCS = frozenset({
    "add", "subtract", "multiply", "true_divide", "divide", "floor_divide", "remainder",
    "negative", "positive", "absolute", "fabs", "sqrt", "floor", "ceil", "trunc", "rint",
    "exp2", "log2", "exp", "log", "sin", "cos", "isnan", "isinf", "isfinite", "signbit",
    "copysign", "nextafter", "ldexp", "frexp", "left_shift", "right_shift", "bitwise_and",
    "bitwise_or", "bitwise_xor", "invert", "logical_and", "logical_or", "logical_xor",
    "logical_not", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "maximum", "minimum", "fmax", "fmin", "bitwise_count", "sign",
})
# Arrays larger than this are not traced (whole-wave bit tricks such as unpacking every bit
# of every lane): the instruction stays with the interpreter.
MAX_ELEMENTS = 4096
_WEAK = (bool, int, float)


class Untraceable(Exception):
    """The traced code did something the symbolic arrays cannot record."""


# --- the active path tracer ------------------------------------------------------------------

class _Active(threading.local):
    tracer: PathTracer | None = None


_ACTIVE = _Active()


def active_tracer() -> PathTracer | None:
    return _ACTIVE.tracer


class PathTracer:
    """Answers ``bool(sym)`` along one path: the first decisions come from ``prefix``, later
    ones are True; every decision is recorded (condition node, answer) so that the caller can
    explore the other answers and build each path's condition."""

    def __init__(self, prefix: list[bool], inputs: dict) -> None:
        self.prefix = prefix
        self.decisions: list[bool] = []
        self.conditions: list[Node] = []
        self.checks: list[Node] = []     # conditions that, when true, hand the wave back
        self.inputs = inputs             # key -> input Node, shared by every path

    def decide(self, cond: Node) -> bool:
        k = len(self.decisions)
        answer = self.prefix[k] if k < len(self.prefix) else True
        self.decisions.append(answer)
        self.conditions.append(cond)
        return answer

    def __enter__(self) -> PathTracer:
        self._saved = _ACTIVE.tracer
        _ACTIVE.tracer = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _ACTIVE.tracer = self._saved


def _check(cond: Node) -> None:
    """Record a run-time condition under which the generated code hands the wave back to the
    interpreter (which then raises what numpy raises: an index out of range, ...)."""
    tracer = _ACTIVE.tracer
    if tracer is None:
        raise Untraceable("run-time check outside a trace")
    tracer.checks.append(cond)


# --- helpers ---------------------------------------------------------------------------------

def element_count(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def zero_example(x: Any) -> Any:
    """A zero-filled numpy stand-in for ``x`` (weak Python scalars stay themselves)."""
    if isinstance(x, Sym):
        return np.zeros(x.shape, x.dtype)
    return x


def element_numbers(shape: tuple) -> np.ndarray:
    return np.arange(element_count(shape), dtype=np.intp).reshape(shape)


def dtype_or_weak(x: Any) -> Any:
    if isinstance(x, Sym):
        return x.dtype
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(bool)
    if isinstance(x, (int, float)):
        return type(x)
    raise Untraceable(f"operand of type {type(x).__name__}")


def shape_of(x: Any) -> tuple:
    if isinstance(x, Sym):
        return x.shape
    return np.shape(x)


def new_sym(op: str, args: tuple, attr: Any, dtype: Any, n: int, shape: tuple) -> Sym:
    if n > MAX_ELEMENTS:
        raise Untraceable(f"array of {n} elements")
    return Sym(Node(op, args, attr, dtype, n), shape)


def const_sym(values: Any, dtype: Any = None) -> Sym:
    arr = np.asarray(values, dtype=dtype)
    if arr.size > MAX_ELEMENTS:
        raise Untraceable(f"constant of {arr.size} elements")
    return Sym(const_node(arr), arr.shape)


def as_sym(x: Any, dtype: Any = None) -> Sym:
    """``x`` (a Sym, numpy value or Python scalar) as a Sym, cast to ``dtype`` when given (a
    Python scalar converts to it the way numpy converts a weak scalar)."""
    if isinstance(x, Sym):
        return x if dtype is None else x.astype(dtype)
    if isinstance(x, _WEAK) and not isinstance(x, (np.generic,)):
        return const_sym(np.asarray(x, dtype=dtype))
    arr = np.asarray(x)
    if arr.dtype == object:
        raise Untraceable("object array")
    if dtype is not None and arr.dtype != np.dtype(dtype):
        with np.errstate(all="ignore"):
            arr = arr.astype(dtype)
    return const_sym(arr)


def const_array(sym: Sym) -> np.ndarray:
    """The numpy array of a constant Sym."""
    return const_value(sym.node).reshape(sym.shape)


def gather(sym: Sym, idx: np.ndarray) -> Sym:
    """Elements of ``sym`` picked by the index array ``idx`` (any shape)."""
    idx = np.asarray(idx, dtype=np.intp)
    flat = idx.reshape(-1)
    node = sym.node
    if flat.size == node.n and (flat == np.arange(node.n)).all():
        return Sym(node, idx.shape)
    if is_const(node):
        return const_sym(const_value(node)[flat].reshape(idx.shape))
    if node.op == "gather":     # a gather of a gather is one gather
        return new_sym("gather", node.args, node.attr[flat], node.dtype, flat.size, idx.shape)
    return new_sym("gather", (node,), flat, node.dtype, flat.size, idx.shape)


def broadcast(sym: Sym, shape: tuple) -> Sym:
    if sym.shape == tuple(shape):
        return sym
    return gather(sym, np.broadcast_to(element_numbers(sym.shape), shape))


def as_bool(sym: Sym) -> Sym:
    return sym if sym.dtype == np.bool_ else sym.astype(bool)


# --- casts ---------------------------------------------------------------------------------------

def _cast(sym: Sym, dtype: Any) -> Sym:
    dtype = np.dtype(dtype)
    if dtype == sym.dtype:
        return sym
    if dtype.kind not in "biuf" or sym.dtype.kind not in "biuf":
        raise Untraceable(f"cast {sym.dtype} -> {dtype}")
    node = sym.node
    if is_const(node):
        with np.errstate(all="ignore"):
            return const_sym(const_value(node).astype(dtype).reshape(sym.shape))
    return new_sym("cast", (node,), None, dtype, node.n, sym.shape)


def _bitcast(sym: Sym, dtype: Any) -> Sym:
    dtype = np.dtype(dtype)
    if dtype == sym.dtype:
        return Sym(sym.node, sym.shape)
    if dtype.kind not in "biuf" or sym.dtype.kind not in "biuf":
        raise Untraceable(f"view {sym.dtype} as {dtype}")
    try:
        shape = np.zeros(sym.shape, sym.dtype).view(dtype).shape
    except (ValueError, TypeError) as exc:
        raise Untraceable(f"view: {exc}") from None
    node = sym.node
    if is_const(node):
        return const_sym(np.ascontiguousarray(const_value(node)).view(dtype).reshape(shape))
    return new_sym("bitcast", (node,), None, dtype, element_count(shape), shape)


# --- ufuncs ---------------------------------------------------------------------------------------

def apply_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    if method == "reduce":
        return _ufunc_reduce(ufunc, inputs, kwargs)
    if method != "__call__":
        raise Untraceable(f"{ufunc.__name__}.{method}")
    for key, value in kwargs.items():
        if key == "out" and all(v is None for v in (value if isinstance(value, tuple)
                                                    else (value,))):
            continue
        if key in ("casting", "order", "subok") or (key == "where" and value is True):
            continue
        raise Untraceable(f"{ufunc.__name__} with {key}=")
    name = ufunc.__name__
    if name not in UFUNCS:
        raise Untraceable(f"ufunc {name}")
    kinds = [dtype_or_weak(x) for x in inputs]
    try:
        loop = ufunc.resolve_dtypes(tuple(kinds) + (None,) * ufunc.nout)
    except Exception as exc:   # noqa: BLE001 - numpy refuses the types: so would the interpreter
        raise Untraceable(f"{name}: {exc}") from None
    shape = np.broadcast_shapes(*(shape_of(x) for x in inputs))
    n = element_count(shape)
    args = [broadcast(as_sym(x, loop[k]), shape) for k, x in enumerate(inputs)]
    if all(is_const(a.node) for a in args):
        with np.errstate(all="ignore"):
            out = ufunc(*(const_array(a) for a in args))
        if isinstance(out, tuple):
            return tuple(const_sym(np.asarray(o)) for o in out)
        return const_sym(np.asarray(out))
    nodes = tuple(a.node for a in args)
    if ufunc.nout == 1:
        return new_sym("ufunc", nodes, name, loop[ufunc.nin], n, shape)
    return tuple(new_sym("ufunc", nodes, (name, k), loop[ufunc.nin + k], n, shape)
                 for k in range(ufunc.nout))


_REDUCE_OPS = {"add": "add", "bitwise_or": "or", "bitwise_and": "and", "logical_or": "or",
               "logical_and": "and", "maximum": "max", "minimum": "min", "bitwise_xor": "xor"}


def _ufunc_reduce(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> Sym:
    name = ufunc.__name__
    if name not in _REDUCE_OPS or len(inputs) != 1:
        raise Untraceable(f"{name}.reduce")
    axis = kwargs.pop("axis", 0)
    keepdims = kwargs.pop("keepdims", False)
    dtype = kwargs.pop("dtype", None)
    if kwargs.get("out") is not None or dtype is not None:
        raise Untraceable(f"{name}.reduce with out/dtype")
    return reduce(as_sym(inputs[0]), _REDUCE_OPS[name], axis, keepdims,
                   lambda ex: ufunc.reduce(ex, axis=axis, keepdims=keepdims))


def reduce(sym: Sym, op: str, axis: Any, keepdims: bool,
            example_fn: Callable[[np.ndarray], Any]) -> Sym:
    """Reduce ``sym`` over ``axis`` with ``op`` (add/or/and/max/min/xor); the result dtype and
    shape are what ``example_fn`` gives numpy's zero-filled example."""
    out = np.asarray(example_fn(np.zeros(sym.shape, sym.dtype)))
    ndim = len(sym.shape)
    if axis is None:
        axes = tuple(range(ndim))
    elif isinstance(axis, tuple):
        axes = tuple(a % ndim for a in axis)
    else:
        axes = (int(axis) % ndim,)
    group = element_count(tuple(sym.shape[a] for a in axes))
    if sym.dtype.kind == "f" and op == "add" and group > 1:
        raise Untraceable("float sum (numpy's pairwise order)")
    src = sym.astype(out.dtype) if op in ("add", "max", "min", "xor") else as_bool(sym) \
        if out.dtype == np.bool_ else sym.astype(out.dtype)
    keep = [a for a in range(ndim) if a not in axes]
    idx = np.transpose(element_numbers(sym.shape), keep + list(axes))
    arranged = gather(src, idx.reshape(-1))
    if group == 1:
        return Sym(arranged.node, out.shape)
    node = arranged.node
    if is_const(node):
        values = const_value(node).reshape(-1, group)
        fn = {"add": np.add, "or": np.bitwise_or, "and": np.bitwise_and, "max": np.maximum,
              "min": np.minimum, "xor": np.bitwise_xor}[op]
        if values.dtype == np.bool_:
            fn = {"or": np.logical_or, "and": np.logical_and}.get(op, fn)
        return const_sym(fn.reduce(values, axis=1).reshape(out.shape))
    return new_sym("reduce", (node,), (op, group), out.dtype, node.n // group, out.shape)


# --- numpy functions (NEP 18) ------------------------------------------------------------------

# numpy function -> its implementation on symbolic arrays, which Sym.__array_function__ calls.
# np.where is registered here, next to the selection it builds on; every other function in
# hsapy/sim/isa/jit/array_functions.py, which trace.py imports before it traces anything.
ARRAY_FUNCTIONS: dict[Callable, Callable] = {}


def implements(*fns: Callable) -> Callable:
    """Register the decorated function as the symbolic version of the numpy functions ``fns``."""
    def register(impl: Callable) -> Callable:
        for fn in fns:
            ARRAY_FUNCTIONS[fn] = impl
        return impl
    return register


# --- element selection and dynamic indexing --------------------------------------------------

@implements(np.where)
def np_where(cond: Any, x: Any = None, y: Any = None) -> Sym:
    if x is None or y is None:
        raise Untraceable("np.where with one argument")
    ex = np.where(np.zeros(shape_of(cond), bool), zero_example(x), zero_example(y))
    c = broadcast(as_bool(as_sym(cond)), ex.shape)
    a = broadcast(as_sym(x, ex.dtype), ex.shape)
    b = broadcast(as_sym(y, ex.dtype), ex.shape)
    if is_const(c.node):
        return _select_const(const_array(c), a, b)
    return new_sym("select", (c.node, a.node, b.node), None, ex.dtype, element_count(ex.shape),
                   ex.shape)


def _select_const(cond: np.ndarray, a: Sym, b: Sym) -> Sym:
    if cond.all():
        return a
    if not cond.any():
        return b
    flat = cond.reshape(-1)
    n = flat.size
    idx = np.where(flat, np.arange(n), n + np.arange(n))
    return new_sym("shuffle2", (a.node, b.node), idx, a.dtype, n, a.shape)


def select(cond: Sym, a: Sym, b: Sym) -> Sym:
    """``np.where`` on Syms of one dtype (the condition may be one element for whole vectors)."""
    if is_const(cond.node):
        value = bool(const_value(cond.node).reshape(-1)[0]) if cond.node.n == 1 else None
        if value is not None:
            return a if value else b
    if a.node is b.node:
        return a
    return new_sym("select", (cond.node, a.node, b.node), None, a.dtype, a.node.n, a.shape)


def normalise_index(index: Sym, dim: int) -> Sym:
    """numpy's reading of an integer index along an axis of ``dim`` elements: negative counts
    from the end; outside -dim..dim-1 is an IndexError (the wave goes back to the interpreter,
    which raises it)."""
    index = index.astype(np.intp)
    _check(((index < -dim) | (index >= dim)).any().node)
    return np_where(index < 0, index + dim, index)


def dynamic_gather(arr: Sym, flat: Sym) -> Sym:
    flat = flat.astype(np.intp)
    return new_sym("dyn_gather", (arr.node, flat.node), None, arr.dtype, flat.node.n, flat.shape)


# --- Sym ---------------------------------------------------------------------------------------

def _binary(ufunc: np.ufunc, reverse: bool = False) -> Callable:
    if reverse:
        return lambda self, other: ufunc(other, self)
    return lambda self, other: ufunc(self, other)


class Sym:
    """A symbolic numpy array (see the module docstring)."""

    __slots__ = ("_node", "shape")
    __array_priority__ = 10000

    def __init__(self, node: Node, shape: tuple) -> None:
        self._node = node
        self.shape = tuple(int(d) for d in shape)

    @property
    def node(self) -> Node:
        return self._node

    @property
    def dtype(self) -> np.dtype:
        return self.node.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return element_count(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def T(self) -> Sym:
        return self.transpose()

    def __repr__(self) -> str:
        return f"Sym({self.node!r}, shape={self.shape})"

    # numpy protocols
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return apply_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
        impl = ARRAY_FUNCTIONS.get(func)
        if impl is None:
            raise Untraceable(f"numpy.{getattr(func, '__name__', func)}")
        return impl(*args, **kwargs)

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        node = self.node
        if is_const(node):
            return const_array(self).copy()
        raise Untraceable("conversion of a traced value to a numpy array")

    # conversions that need a value
    def __bool__(self) -> bool:
        node = self.node
        if node.n != 1:
            raise Untraceable("truth value of a traced array of several elements")
        if is_const(node):
            return bool(const_value(node)[0])
        tracer = _ACTIVE.tracer
        if tracer is None:
            raise Untraceable("bool() outside a trace")
        return tracer.decide(as_bool(Sym(node, ())).node)

    def __int__(self) -> int:
        if is_const(self.node) and self.node.n == 1:
            return int(const_value(self.node)[0])
        raise Untraceable("int() of a traced value")

    __index__ = __int__

    def __float__(self) -> float:
        if is_const(self.node) and self.node.n == 1:
            return float(const_value(self.node)[0])
        raise Untraceable("float() of a traced value")

    def item(self, *args: Any) -> Any:
        raise Untraceable("item() of a traced value")

    def tolist(self) -> Any:
        raise Untraceable("tolist() of a traced value")

    def nonzero(self) -> Any:
        raise Untraceable("nonzero() of a traced value")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self) -> int:
        raise TypeError("unhashable type: 'Sym'")

    # operators (numpy dispatches them back to __array_ufunc__)
    __add__ = _binary(np.add)
    __radd__ = _binary(np.add, True)
    __sub__ = _binary(np.subtract)
    __rsub__ = _binary(np.subtract, True)
    __mul__ = _binary(np.multiply)
    __rmul__ = _binary(np.multiply, True)
    __truediv__ = _binary(np.true_divide)
    __rtruediv__ = _binary(np.true_divide, True)
    __floordiv__ = _binary(np.floor_divide)
    __rfloordiv__ = _binary(np.floor_divide, True)
    __mod__ = _binary(np.remainder)
    __rmod__ = _binary(np.remainder, True)
    __lshift__ = _binary(np.left_shift)
    __rlshift__ = _binary(np.left_shift, True)
    __rshift__ = _binary(np.right_shift)
    __rrshift__ = _binary(np.right_shift, True)
    __and__ = _binary(np.bitwise_and)
    __rand__ = _binary(np.bitwise_and, True)
    __or__ = _binary(np.bitwise_or)
    __ror__ = _binary(np.bitwise_or, True)
    __xor__ = _binary(np.bitwise_xor)
    __rxor__ = _binary(np.bitwise_xor, True)
    __lt__ = _binary(np.less)
    __le__ = _binary(np.less_equal)
    __gt__ = _binary(np.greater)
    __ge__ = _binary(np.greater_equal)
    __eq__ = _binary(np.equal)          # type: ignore[assignment]
    __ne__ = _binary(np.not_equal)      # type: ignore[assignment]

    def __neg__(self) -> Sym:
        return np.negative(self)

    def __pos__(self) -> Sym:
        return self

    def __abs__(self) -> Sym:
        return np.absolute(self)

    def __invert__(self) -> Sym:
        return np.invert(self)

    def __pow__(self, other: Any) -> Sym:
        raise Untraceable("power")

    # methods
    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,
               copy: bool = True) -> Sym:
        return _cast(Sym(self.node, self.shape), dtype)

    def view(self, dtype: Any = None, type: Any = None) -> Sym:
        if dtype is None:
            return Sym(self.node, self.shape)
        return _bitcast(Sym(self.node, self.shape), dtype)

    def copy(self, order: str = "C") -> Sym:
        return Sym(self.node, self.shape)

    def reshape(self, *shape: Any, order: str = "C") -> Sym:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        new = element_numbers(self.shape).reshape(shape).shape
        return Sym(self.node, new)

    def ravel(self, order: str = "C") -> Sym:
        return self.reshape(-1)

    flatten = ravel

    def squeeze(self, axis: Any = None) -> Sym:
        return Sym(self.node, np.zeros(self.shape, np.int8).squeeze(axis).shape)

    def transpose(self, *axes: Any) -> Sym:
        return gather(self, element_numbers(self.shape).transpose(*axes))

    def __getitem__(self, key: Any) -> Sym:
        keys = key if isinstance(key, tuple) else (key,)
        keys = tuple(const_array(k) if isinstance(k, Sym) and is_const(k.node) else k for k in keys)
        if any(isinstance(k, Sym) for k in keys):
            return dynamic_gather(self, _dynamic_index(self.shape, keys))
        try:
            idx = element_numbers(self.shape)[keys if isinstance(key, tuple) else keys[0]]
        except IndexError:
            raise
        return gather(self, np.asarray(idx))

    def all(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Sym:
        return reduce(as_bool(self), "and", axis, keepdims,
                       lambda ex: np.asarray(ex.all(axis=axis, keepdims=keepdims)))

    def any(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Sym:
        return reduce(as_bool(self), "or", axis, keepdims,
                       lambda ex: np.asarray(ex.any(axis=axis, keepdims=keepdims)))

    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None,
            keepdims: bool = False) -> Sym:
        return reduce(self, "add", axis, keepdims,
                       lambda ex: np.asarray(ex.sum(axis=axis, dtype=dtype, keepdims=keepdims)))

    def max(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Sym:
        if self.dtype.kind == "f":
            raise Untraceable("float max reduction")
        return reduce(self, "max", axis, keepdims,
                       lambda ex: np.asarray(ex.max(axis=axis, keepdims=keepdims)))

    def min(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Sym:
        if self.dtype.kind == "f":
            raise Untraceable("float min reduction")
        return reduce(self, "min", axis, keepdims,
                       lambda ex: np.asarray(ex.min(axis=axis, keepdims=keepdims)))

    def argmax(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Sym:
        if self.dtype != np.bool_:
            raise Untraceable("argmax of a non-bool array")
        src = self.reshape(-1) if axis is None else self
        axis = 0 if axis is None else int(axis) % src.ndim
        out = np.asarray(np.zeros(src.shape, bool).argmax(axis=axis))
        keep = [a for a in range(src.ndim) if a != axis]
        idx = np.transpose(element_numbers(src.shape), keep + [axis])
        group = src.shape[axis]
        arranged = gather(src, idx.reshape(-1))
        return new_sym("argmax", (arranged.node,), group, out.dtype, arranged.node.n // group,
                    out.shape)


def _dynamic_index(shape: tuple, keys: tuple) -> Sym:
    """Flat element index of an advanced index whose components are integer arrays or Syms
    (no slices: the form the semantics use, ``values[rows, lanes]``)."""
    if len(keys) != len(shape) or any(isinstance(k, (slice, type(None), type(Ellipsis)))
                                      or (isinstance(k, np.ndarray) and k.dtype == np.bool_)
                                      for k in keys):
        raise Untraceable("indexing with traced values in this form")
    strides = np.cumprod((1,) + tuple(reversed(shape[1:])))[::-1]
    total: Any = None
    for k, dim, stride in zip(keys, shape, strides):
        if isinstance(k, Sym):
            part = normalise_index(k.astype(np.intp), dim) * int(stride)
        else:
            arr = np.asarray(k, dtype=np.intp)
            if ((arr < -dim) | (arr >= dim)).any():
                raise IndexError("index out of range")
            part = as_sym(np.where(arr < 0, arr + dim, arr) * int(stride))
        total = part if total is None else total + part
    return as_sym(total)


# --- mutable arrays ---------------------------------------------------------------------------

class Mutable(Sym):
    """A writable symbolic array: ``assign`` replaces its value; ``view``/``reshape`` give
    :class:`MutableView` objects that write through to it."""

    __slots__ = ("_value",)

    def __init__(self, value: Sym) -> None:
        super().__init__(value.node, value.shape)
        self._value = value

    @property
    def node(self) -> Node:
        return self._value.node

    def current(self) -> Sym:
        return Sym(self._value.node, self._value.shape)

    def assign(self, value: Sym) -> None:
        if value.shape != self.shape:
            value = broadcast(value, self.shape)
        self._value = value.astype(self.dtype)

    def view(self, dtype: Any = None, type: Any = None) -> Sym:
        if dtype is None:
            return MutableView(self, [])
        return MutableView(self, [("view", np.dtype(dtype))])

    def reshape(self, *shape: Any, order: str = "C") -> Sym:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return MutableView(self, [("reshape", element_numbers(self.shape).reshape(shape).shape)])

    def __setitem__(self, key: Any, value: Any) -> None:
        self.assign(_scatter(self.current(), key, value))


class MutableView(Mutable):
    """A ``view``/``reshape`` chain of a :class:`Mutable`."""

    __slots__ = ("_base", "_chain")

    def __init__(self, base: Mutable, chain: list) -> None:
        self._base = base
        self._chain = chain
        Sym.__init__(self, self._read().node, self._read().shape)

    def _read(self) -> Sym:
        value = self._base.current()
        for kind, arg in self._chain:
            value = value.view(arg) if kind == "view" else value.reshape(arg)
        return value

    @property
    def node(self) -> Node:
        return self._read().node

    @property
    def shape(self) -> tuple:      # type: ignore[override]
        return self._read().shape

    @shape.setter
    def shape(self, value: tuple) -> None:
        pass

    def current(self) -> Sym:
        return self._read()

    def assign(self, value: Sym) -> None:
        value = broadcast(as_sym(value), self.shape).astype(self.dtype)
        shapes = []
        probe = self._base.current()
        for kind, arg in self._chain:
            shapes.append((probe.dtype, probe.shape))
            probe = probe.view(arg) if kind == "view" else probe.reshape(arg)
        for (kind, _), (dtype, shape) in zip(reversed(self._chain), reversed(shapes)):
            value = value.view(dtype) if kind == "view" else value.reshape(shape)
            value = value.reshape(shape)
        self._base.assign(value)

    def view(self, dtype: Any = None, type: Any = None) -> Sym:
        return MutableView(self._base, self._chain + ([("view", np.dtype(dtype))]
                                                      if dtype is not None else []))

    def reshape(self, *shape: Any, order: str = "C") -> Sym:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        new = element_numbers(self.shape).reshape(shape).shape
        return MutableView(self._base, self._chain + [("reshape", new)])


def _scatter(current: Sym, key: Any, value: Any) -> Sym:
    """``current`` with ``current[key] = value`` applied (numpy assignment semantics: the value
    broadcast to the selection, cast to the array's dtype, later duplicates winning)."""
    keys = key if isinstance(key, tuple) else (key,)
    keys = tuple(const_array(k) if isinstance(k, Sym) and is_const(k.node) else k for k in keys)
    if any(isinstance(k, Sym) for k in keys):
        flat = _dynamic_index(current.shape, keys)
        values = broadcast(as_sym(value), flat.shape).astype(current.dtype)
        return new_sym("dyn_scatter", (current.node, flat.node, values.node), None, current.dtype,
                    current.node.n, current.shape)
    target = np.asarray(element_numbers(current.shape)[key])
    values = broadcast(as_sym(value), target.shape).astype(current.dtype)
    n = current.node.n
    idx = np.arange(n, dtype=np.intp)
    idx[target.reshape(-1)] = n + np.arange(target.size)
    if target.size == n and (target.reshape(-1) == np.arange(n)).all():
        return values.reshape(current.shape)
    node = current.node
    if is_const(node) and is_const(values.node):
        merged = np.concatenate([const_value(node), const_value(values.node)])[idx]
        return const_sym(merged.reshape(current.shape))
    return new_sym("shuffle2", (node, values.node), idx, current.dtype, n, current.shape)


def mutable_zeros(shape: Any, dtype: Any = float) -> Mutable:
    """A writable symbolic array of zeros (what the tracing numpy's ``np.zeros`` returns)."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    return Mutable(const_sym(np.zeros(shape, dtype)))

