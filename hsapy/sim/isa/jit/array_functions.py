"""numpy's array functions on symbolic arrays (NEP 18 ``__array_function__``).

Each function here records, on :class:`~hsapy.sim.isa.jit.symbolic.Sym` operands, the data
movement numpy would perform (``np.clip``, ``np.concatenate``, ``np.packbits``, ``np.copyto``,
...), built from the primitives of :mod:`hsapy.sim.isa.jit.symbolic` and registered in its
:data:`~hsapy.sim.isa.jit.symbolic.ARRAY_FUNCTIONS` table at import: trace.py imports this module
before it traces anything. A numpy function missing from the table raises
:class:`~hsapy.sim.isa.jit.symbolic.Untraceable` (the instruction stays with the interpreter).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hsapy.sim.isa.jit.graph import const_value, is_const
from hsapy.sim.isa.jit.symbolic import (
    ARRAY_FUNCTIONS,
    Mutable,
    Sym,
    Untraceable,
    as_bool,
    as_sym,
    broadcast,
    const_array,
    const_sym,
    dtype_or_weak,
    dynamic_gather,
    element_count,
    element_numbers,
    gather,
    implements,
    new_sym,
    normalise_index,
    np_where,
    reduce,
    shape_of,
    zero_example,
)

__all__: list[str] = []


@implements(np.clip)
def _clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, **kwargs: Any) -> Sym:
    if out is not None or kwargs:
        raise Untraceable("np.clip with out/kwargs")
    ex = np.clip(zero_example(a), zero_example(a_min) if a_min is not None else None,
                 zero_example(a_max) if a_max is not None else None)
    x = broadcast(as_sym(a, ex.dtype), ex.shape)
    # numpy's clip: x < lo -> lo, then > hi -> hi; NaN compares false and stays
    if a_min is not None:
        lo = broadcast(as_sym(a_min, ex.dtype), ex.shape)
        x = np_where(x < lo, lo, x)
    if a_max is not None:
        hi = broadcast(as_sym(a_max, ex.dtype), ex.shape)
        x = np_where(x > hi, hi, x)
    return x


@implements(np.nan_to_num)
def _nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None,
                neginf: Any = None) -> Sym:
    x = as_sym(x)
    if x.dtype.kind != "f":
        return x
    info = np.finfo(x.dtype)
    pos = info.max if posinf is None else posinf
    neg = info.min if neginf is None else neginf
    out = np_where(np.isnan(x), as_sym(np.asarray(nan).astype(x.dtype)), x)
    out = np_where((x == np.inf), as_sym(np.asarray(pos).astype(x.dtype)), out)
    return np_where((x == -np.inf), as_sym(np.asarray(neg).astype(x.dtype)), out)


@implements(np.broadcast_to)
def _broadcast_to(array: Any, shape: Any, subok: bool = False) -> Sym:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return broadcast(as_sym(array), shape)


@implements(np.broadcast_arrays)
def _broadcast_arrays(*args: Any, subok: bool = False) -> tuple:
    shape = np.broadcast_shapes(*(shape_of(a) for a in args))
    return tuple(broadcast(as_sym(a), shape) for a in args)


def _like(value: Any) -> Callable:
    def impl(a: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None,
             **kw: Any) -> Sym:
        ex = np.zeros(shape_of(a) if shape is None else shape, dtype or dtype_or_weak(a))
        fill = kw.get("fill_value", value)
        return const_sym(np.full(ex.shape, fill, ex.dtype))
    return impl


ARRAY_FUNCTIONS[np.zeros_like] = _like(0)
ARRAY_FUNCTIONS[np.empty_like] = _like(0)
ARRAY_FUNCTIONS[np.ones_like] = _like(1)


@implements(np.full_like)
def _full_like(a: Any, fill_value: Any, dtype: Any = None, **kw: Any) -> Sym:
    shape = shape_of(a) if kw.get("shape") is None else kw["shape"]
    dtype = dtype or dtype_or_weak(a)
    if isinstance(fill_value, Sym):
        return broadcast(as_sym(fill_value, dtype), tuple(shape))
    return const_sym(np.full(shape, fill_value, dtype))


@implements(np.concatenate)
def _concatenate(arrays: Any, axis: Any = 0, out: Any = None, dtype: Any = None,
                 casting: str = "same_kind") -> Sym:
    if out is not None:
        raise Untraceable("concatenate with out")
    syms = [as_sym(a) for a in arrays]
    ex = np.concatenate([zero_example(s) for s in syms], axis=axis, dtype=dtype)
    syms = [s.astype(ex.dtype) for s in syms]
    offsets = np.cumsum([0] + [s.node.n for s in syms])
    parts = [element_numbers(s.shape) + int(off) for s, off in zip(syms, offsets)]
    idx = np.concatenate(parts, axis=axis)
    total = int(offsets[-1])
    joined = new_sym("concat", tuple(s.node for s in syms), None, ex.dtype, total, (total,))
    if all(is_const(s.node) for s in syms):
        joined = const_sym(np.concatenate([const_value(s.node) for s in syms]))
    return gather(joined, idx)


@implements(np.stack)
def _stack(arrays: Any, axis: int = 0, out: Any = None, **kw: Any) -> Sym:
    syms = [as_sym(a) for a in arrays]
    expanded = [s[(slice(None),) * (axis % (s.ndim + 1)) + (None,)] for s in syms]
    return _concatenate(expanded, axis=axis)


@implements(np.take_along_axis)
def _take_along_axis(arr: Any, indices: Any, axis: Any) -> Sym:
    arr = as_sym(arr)
    if axis is None:
        raise Untraceable("take_along_axis without an axis")
    axis = int(axis) % arr.ndim
    if not isinstance(indices, Sym) or is_const(indices.node):
        idx = np.take_along_axis(element_numbers(arr.shape), np.asarray(
            const_array(indices) if isinstance(indices, Sym) else indices), axis=axis)
        return gather(arr, idx)
    # dynamic: flat index = position along the other axes + index * stride
    shape = np.broadcast_shapes(arr.shape[:axis] + (1,) + arr.shape[axis + 1:], indices.shape)
    base = np.broadcast_to(np.take(element_numbers(arr.shape), [0], axis=axis), shape)
    stride = int(np.prod(arr.shape[axis + 1:], dtype=np.int64))
    index = normalise_index(indices.astype(np.intp), arr.shape[axis])
    flat = as_sym(base) + index * stride
    return dynamic_gather(arr, flat)


@implements(np.packbits)
def _packbits(a: Any, axis: Any = None, bitorder: str = "big") -> Sym:
    a = as_sym(a)
    if axis is None:
        a = a.reshape(-1)
        axis = 0
    axis = int(axis) % a.ndim
    count = a.shape[axis]
    if bitorder == "little" and axis == a.ndim - 1 and count % 8 == 0:
        bits = as_bool(a)
        shape = a.shape[:-1] + (count // 8,)
        return new_sym("packbits", (bits.node,), None, np.uint8, element_count(shape), shape)
    moved = np.moveaxis(element_numbers(a.shape), axis, -1)
    nbytes = (count + 7) // 8
    pad = nbytes * 8 - count
    bits = as_bool(a).astype(np.uint8)
    if pad:
        zero = const_sym(np.zeros(1, np.uint8))
        source = _concatenate([bits.reshape(-1), zero])
        idx = np.concatenate([moved, np.full(moved.shape[:-1] + (pad,), a.node.n, np.intp)],
                             axis=-1)
    else:
        source, idx = bits.reshape(-1), moved
    grouped = gather(source, idx.reshape(moved.shape[:-1] + (nbytes, 8)))
    shifts = np.arange(8, dtype=np.uint8) if bitorder == "little" else \
        np.arange(7, -1, -1, dtype=np.uint8)
    shifted = grouped << const_sym(shifts)
    packed = reduce(shifted, "or", -1, False, lambda ex: np.bitwise_or.reduce(ex, axis=-1))
    if axis == a.ndim - 1:
        return packed
    return gather(packed, np.moveaxis(element_numbers(packed.shape), -1, axis))


@implements(np.unpackbits)
def _unpackbits(a: Any, axis: Any = None, count: Any = None, bitorder: str = "big") -> Sym:
    a = as_sym(a)
    if a.dtype != np.uint8 or count is not None:
        raise Untraceable("unpackbits of this form")
    if axis is None:
        a = a.reshape(-1)
        axis = 0
    axis = int(axis) % a.ndim
    if bitorder == "little" and axis == a.ndim - 1:
        shape = a.shape[:-1] + (a.shape[-1] * 8,)
        return new_sym("unpackbits", (a.node,), None, np.uint8, element_count(shape), shape)
    moved = np.moveaxis(element_numbers(a.shape), axis, -1)
    idx = np.repeat(moved[..., None], 8, axis=-1)
    spread = gather(a, idx)
    shifts = np.arange(8, dtype=np.uint8) if bitorder == "little" else \
        np.arange(7, -1, -1, dtype=np.uint8)
    bits = (spread >> const_sym(shifts)) & np.uint8(1)
    bits = bits.reshape(moved.shape[:-1] + (moved.shape[-1] * 8,))
    return gather(bits, np.moveaxis(element_numbers(bits.shape), -1, axis))


@implements(np.argmax)
def _argmax(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Sym:
    return as_sym(a).argmax(axis=axis)


@implements(np.count_nonzero)
def _count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Sym:
    a = as_sym(a)
    counted = (a != 0).astype(np.intp)
    return reduce(counted, "add", axis, keepdims,
                   lambda ex: np.asarray(np.count_nonzero(ex, axis=axis, keepdims=keepdims)))


@implements(np.copyto)
def _copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    if not isinstance(dst, Mutable):
        raise Untraceable("np.copyto into a plain array")
    current = Sym(dst.node, dst.shape)
    value = broadcast(as_sym(src, dst.dtype), dst.shape)
    if where is not True:
        value = np_where(broadcast(as_bool(as_sym(where)), dst.shape), value, current)
    dst.assign(value)


def _method(name: str) -> Callable:
    def impl(a: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(as_sym(a), name)(*args, **kwargs)
    return impl


for _fn, _name in ((np.sum, "sum"), (np.any, "any"), (np.all, "all"), (np.max, "max"),
                   (np.min, "min"), (np.amax, "max"), (np.amin, "min"), (np.ravel, "ravel"),
                   (np.squeeze, "squeeze"), (np.transpose, "transpose")):
    ARRAY_FUNCTIONS[_fn] = _method(_name)


@implements(np.reshape)
def _reshape_fn(a: Any, *args: Any, **kwargs: Any) -> Sym:
    shape = kwargs.get("shape", kwargs.get("newshape", args[0] if args else None))
    return as_sym(a).reshape(shape)


def _moving(fn: Callable) -> Callable:
    """A numpy function that only moves elements: applied to the element numbers."""
    def impl(a: Any, *args: Any, **kwargs: Any) -> Sym:
        if any(isinstance(x, Sym) for x in args) or any(isinstance(x, Sym)
                                                         for x in kwargs.values()):
            raise Untraceable(f"{fn.__name__} with symbolic parameters")
        a = as_sym(a)
        return gather(a, fn(element_numbers(a.shape), *args, **kwargs))
    return impl


for _fn in (np.expand_dims, np.moveaxis, np.take, np.repeat, np.tile, np.flip,
            np.atleast_1d, np.atleast_2d, np.swapaxes):
    ARRAY_FUNCTIONS[_fn] = _moving(_fn)


@implements(np.pad)
def _pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Sym:
    if mode != "constant" or kwargs.get("constant_values", 0) != 0:
        raise Untraceable("np.pad other than with zeros")
    a = as_sym(array)
    joined = _concatenate([a.reshape(-1), const_sym(np.zeros(1, a.dtype))])
    idx = np.pad(element_numbers(a.shape), pad_width, constant_values=a.node.n)
    return gather(joined, idx)


@implements(np.shape)
def _shape_fn(a: Any) -> tuple:
    return as_sym(a).shape


@implements(np.ndim)
def _ndim_fn(a: Any) -> int:
    return as_sym(a).ndim


@implements(np.size)
def _size_fn(a: Any, axis: Any = None) -> int:
    a = as_sym(a)
    return a.size if axis is None else a.shape[axis]
