"""Lower the traced expression graph to LLVM IR (llvmlite.ir), one wave at a time.

Every node becomes one LLVM vector value ``<n x T>`` (``i1`` for bool, the integer of the
dtype's width, ``half``/``float``/``double``). Each operation is given numpy's semantics on
x86-64 -- the semantics the interpreter's closures compute with:

- integer arithmetic wraps; division and remainder by zero give 0, ``floor_divide`` and
  ``remainder`` round toward negative infinity; shifts by the width or more give 0 (the sign
  for an arithmetic right shift);
- float comparisons are ordered, ``!=`` unordered; ``maximum``/``minimum`` return the first
  operand when it is NaN, else ``a > b ? a : b`` (``<`` for minimum); ``fmax``/``fmin`` ignore a
  NaN operand;
- ``astype`` from float to integer behaves like numpy's casts (the x86 truncating conversion,
  out of range or NaN giving the "integer indefinite" value, unsigned targets through the signed
  conversion of ``x - 2**31`` / ``x - 2**63``, narrow targets through int32);
- transcendental functions (float64 only: the semantics compute them in float64 and round
  once) call the C library.

Floats are never contracted or reassociated (no fast-math flags).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from llvmlite import ir

from hsapy.sim.isa.jit.graph import Node

__all__ = ["Lowerer", "llvm_type", "vector_type", "LowerError"]

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
HALF = ir.HalfType()
FLOAT = ir.FloatType()
DOUBLE = ir.DoubleType()


class LowerError(Exception):
    """A node the code generator does not implement (the instruction stays interpreted)."""


def llvm_type(dtype: np.dtype) -> ir.Type:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return I1
    if dtype.kind in "iu":
        return ir.IntType(dtype.itemsize * 8)
    if dtype.kind == "f":
        return {2: HALF, 4: FLOAT, 8: DOUBLE}[dtype.itemsize]
    raise LowerError(f"dtype {dtype}")


def vector_type(dtype: np.dtype, n: int) -> ir.Type:
    """``<n x T>``, or plain ``T`` for one element (LLVM's backend handles scalars better
    than one-element vectors)."""
    if n == 1:
        return llvm_type(dtype)
    return ir.VectorType(llvm_type(dtype), n)


def count_of(value: ir.Value) -> int:
    return value.type.count if isinstance(value.type, ir.VectorType) else 1


def element_type(ty: ir.Type) -> ir.Type:
    return ty.element if isinstance(ty, ir.VectorType) else ty


def _int_for(dtype: np.dtype) -> ir.IntType:
    return ir.IntType(np.dtype(dtype).itemsize * 8)


_MANGLE = {"half": "f16", "float": "f32", "double": "f64"}


def mangle(ty: ir.Type) -> str:
    """LLVM's intrinsic name suffix of a type: ``v64i32``, ``f64``, ..."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{mangle(ty.element)}"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    return _MANGLE[str(ty)]


_LIBM = {"exp2": "exp2", "log2": "log2", "exp": "exp", "log": "log", "sin": "sin",
         "cos": "cos"}


class Lowerer:
    """Emits the IR of graph nodes into ``builder``'s function.

    ``load_input(key, node)`` returns the IR value of an ``input`` node (the current value of
    that register or state in the generated code). Values are memoised per node object.
    """

    def __init__(self, builder: ir.IRBuilder,
                 load_input: Callable[[tuple, Node], ir.Value]) -> None:
        self.b = builder
        self.module: ir.Module = builder.module
        self.load_input = load_input
        self.memo: dict[int, tuple[Node, ir.Value]] = {}

    # --- helpers ------------------------------------------------------------------------------
    def _intrinsic(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
        return fn

    def call(self, base: str, ret: ir.Type, args: list[ir.Value], types: list[ir.Type] | None = None
             ) -> ir.Value:
        """Call the overloaded intrinsic ``base`` mangled with ``types`` (default: ret)."""
        suffix = ".".join(mangle(t) for t in (types if types is not None else [ret]))
        fn = self._intrinsic(f"{base}.{suffix}", ret, [a.type for a in args])
        return self.b.call(fn, args)

    def splat(self, value: ir.Value | int | float, ty: ir.Type) -> ir.Value:
        """A constant of type ``ty`` (vector or scalar; exact bits for floats)."""
        elem = element_type(ty)
        count = ty.count if isinstance(ty, ir.VectorType) else 1
        if isinstance(elem, ir.IntType):
            if count == 1 and not isinstance(ty, ir.VectorType):
                return ir.Constant(elem, int(value))
            return ir.Constant(ty, [ir.Constant(elem, int(value))] * count)
        ftype = {"half": np.float16, "float": np.float32, "double": np.float64}[str(elem)]
        return self.const_array(np.full(count, value, ftype))

    def const_array(self, values: np.ndarray) -> ir.Value:
        values = np.asarray(values).reshape(-1)
        dtype = values.dtype
        n = values.size
        if dtype == np.bool_:
            ity = I1
            ints = [int(v) for v in values]
        elif dtype.kind in "iu":
            ity = _int_for(dtype)
            mask = (1 << ity.width) - 1
            ints = [int(v) & mask for v in values.tolist()]
        elif dtype.kind == "f":
            ity = _int_for(dtype)
            ints = [int(v) for v in values.view({2: np.uint16, 4: np.uint32,
                                                 8: np.uint64}[dtype.itemsize])]
        else:
            raise LowerError(f"constant of dtype {dtype}")
        if n == 1:
            raw = ir.Constant(ity, ints[0])
        else:
            raw = ir.Constant(ir.VectorType(ity, n), [ir.Constant(ity, v) for v in ints])
        if dtype.kind == "f":
            return self.b.bitcast(raw, vector_type(dtype, n))
        return raw

    def scalar(self, value: ir.Value) -> ir.Value:
        """Element 0 (the value itself when it is a scalar)."""
        if isinstance(value.type, ir.VectorType):
            return self.b.extract_element(value, ir.Constant(I32, 0))
        return value

    def element(self, value: ir.Value, i: int) -> ir.Value:
        if isinstance(value.type, ir.VectorType):
            return self.b.extract_element(value, ir.Constant(I32, int(i)))
        return value

    def shuffle(self, a: ir.Value, b: ir.Value | None, mask: list[int]) -> ir.Value:
        """``shufflevector`` of one or two vectors of one type (a one-element mask extracts)."""
        mask = [int(i) for i in mask]
        if len(mask) == 1:
            i = mask[0]
            count = count_of(a)
            return self.element(a, i) if i < count else self.element(b, i - count)
        if b is None:
            b = ir.Constant(a.type, ir.Undefined)
        return self.b.shuffle_vector(a, b, ir.Constant(ir.VectorType(I32, len(mask)), mask))

    def as_vector(self, value: ir.Value) -> ir.Value:
        if isinstance(value.type, ir.VectorType):
            return value
        return self.b.insert_element(ir.Constant(ir.VectorType(value.type, 1), ir.Undefined),
                                     value, ir.Constant(I32, 0))

    def widen(self, value: ir.Value, n: int) -> ir.Value:
        """``value`` (a vector) with ``n`` elements, the new ones undefined."""
        count = count_of(value)
        if count == n:
            return value
        mask = [i if i < count else count for i in range(n)]
        return self.b.shuffle_vector(value, ir.Constant(value.type, ir.Undefined),
                                     ir.Constant(ir.VectorType(I32, n), mask))

    def pick(self, sources: list[ir.Value], idx: list[int], dtype: np.dtype) -> ir.Value:
        """Elements ``idx`` of the concatenation of ``sources`` (vectors or scalars)."""
        idx = [int(i) for i in idx]
        counts = [count_of(s) for s in sources]
        starts = np.cumsum([0] + counts)
        owner = [int(np.searchsorted(starts, i, side="right")) - 1 for i in idx]
        n = len(idx)
        if n == 1:
            k = owner[0]
            return self.element(sources[k], idx[0] - starts[k])
        used = sorted(set(owner))
        if len(used) == 1:
            k = used[0]
            src = sources[k]
            local = [i - starts[k] for i in idx]
            if not isinstance(src.type, ir.VectorType):
                one = self.b.insert_element(ir.Constant(ir.VectorType(src.type, 1),
                                                        ir.Undefined), src, ir.Constant(I32, 0))
                return self.b.shuffle_vector(one, ir.Constant(one.type, ir.Undefined),
                                             ir.Constant(ir.VectorType(I32, n), [0] * n))
            return self.shuffle(src, None, local)
        if len(used) == 2:
            k0, k1 = used
            a, b = (self.as_vector(sources[k]) for k in used)
            width = max(count_of(a), count_of(b))
            a, b = self.widen(a, width), self.widen(b, width)
            local = [i - starts[k0] if o == k0 else width + i - starts[k1]
                     for i, o in zip(idx, owner)]
            return self.shuffle(a, b, local)
        if len(used) > 2 and all(counts[k] > 1 for k in used):
            # concatenate the sources used, pairwise, then pick
            joined = self.as_vector(sources[used[0]])
            offsets = {used[0]: 0}
            total = counts[used[0]]
            for k in used[1:]:
                part = self.as_vector(sources[k])
                width = max(total, counts[k])
                mask = list(range(total)) + [width + j for j in range(counts[k])]
                joined = self.shuffle(self.widen(joined, width), self.widen(part, width), mask)
                offsets[k] = total
                total += counts[k]
            local = [offsets[o] + i - starts[o] for i, o in zip(idx, owner)]
            return self.shuffle(joined, None, local)
        out = ir.Constant(vector_type(dtype, n), ir.Undefined)
        for j, (i, k) in enumerate(zip(idx, owner)):
            out = self.b.insert_element(out, self.element(sources[k], i - starts[k]),
                                        ir.Constant(I32, j))
        return out

    def like(self, value: ir.Value, elem: ir.Type) -> ir.Type:
        """The type with ``value``'s element count and element type ``elem``."""
        n = count_of(value)
        return elem if not isinstance(value.type, ir.VectorType) else ir.VectorType(elem, n)

    def iconst(self, ty: ir.Type, value: int) -> ir.Constant:
        """An integer (or bool) constant of type ``ty``, splat over a vector type."""
        elem = element_type(ty)
        if isinstance(ty, ir.VectorType):
            return ir.Constant(ty, [ir.Constant(elem, int(value))] * ty.count)
        return ir.Constant(ty, int(value))

    def zero(self, ty: ir.Type) -> ir.Constant:
        return ir.Constant(ty, None)

    # --- nodes -------------------------------------------------------------------------------
    def value(self, node: Node) -> ir.Value:
        hit = self.memo.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        # iterative post-order so deep graphs do not hit Python's recursion limit
        stack = [(node, False)]
        while stack:
            current, ready = stack.pop()
            hit = self.memo.get(id(current))
            if hit is not None and hit[0] is current:
                continue
            if not ready:
                stack.append((current, True))
                for arg in current.args:
                    h = self.memo.get(id(arg))
                    if h is None or h[0] is not arg:
                        stack.append((arg, False))
                continue
            self.memo[id(current)] = (current, self._emit(current))
        return self.memo[id(node)][1]

    def _emit(self, node: Node) -> ir.Value:
        op = node.op
        args = [self.memo[id(a)][1] for a in node.args]
        if op == "input":
            return self.load_input(node.attr, node)
        if op == "const":
            return self.const_array(node.attr)
        if op == "gather":
            return self.pick(args, list(node.attr), node.dtype)
        if op == "shuffle2":
            return self.pick(args, list(node.attr), node.dtype)
        if op == "concat":
            return self.pick(args, list(range(node.n)), node.dtype)
        if op == "bitcast":
            return self._bitcast(args[0], node.args[0].dtype, node.dtype, node.n)
        if op == "cast":
            return self.cast(args[0], node.args[0].dtype, node.dtype)
        if op == "packbits":
            # little bit order: bit i of byte k is element 8k + i, as LLVM lays out <N x i1>
            return self.b.bitcast(args[0], vector_type(np.dtype(np.uint8), node.n))
        if op == "unpackbits":
            bits = self.b.bitcast(args[0], vector_type(np.dtype(np.bool_), node.n))
            return self.b.zext(bits, vector_type(np.dtype(np.uint8), node.n))
        if op == "select":
            cond, a, b = args
            if count_of(cond) == 1 and count_of(a) != 1:
                cond = self.scalar(cond)
            return self.b.select(cond, a, b)
        if op == "ufunc":
            return self._ufunc(node, args)
        if op == "reduce":
            return self._reduce(node, args[0])
        if op == "argmax":
            return self._argmax(node, args[0])
        if op == "dyn_gather":
            src, index = args
            if node.n == 1:
                return self._extract(src, self.scalar(index))
            out = ir.Constant(vector_type(node.dtype, node.n), ir.Undefined)
            for i in range(node.n):
                k = self.b.extract_element(index, ir.Constant(I32, i))
                out = self.b.insert_element(out, self._extract(src, k), ir.Constant(I32, i))
            return out
        if op == "dyn_scatter":
            base, index, values = args
            if count_of(base) == 1:
                return self.element(values, node.args[1].n - 1)
            out = base
            for i in range(node.args[1].n):
                k = self.element(index, i)
                out = self.b.insert_element(out, self.element(values, i), k)
            return out
        raise LowerError(f"node {op}")

    def _extract(self, src: ir.Value, k: ir.Value) -> ir.Value:
        if isinstance(src.type, ir.VectorType):
            return self.b.extract_element(src, k)
        return src

    def _bitcast(self, value: ir.Value, src: np.dtype, dst: np.dtype, n: int) -> ir.Value:
        if src == np.bool_:
            value = self.b.zext(value, self.like(value, I8))
            src = np.dtype(np.uint8)
        if dst == np.bool_:
            as_u8 = self._bitcast(value, src, np.dtype(np.uint8), n)
            return self.b.icmp_unsigned("!=", as_u8, self.zero(as_u8.type))
        return self.b.bitcast(value, vector_type(dst, n))

    # --- casts (numpy astype) -----------------------------------------------------------------
    def cast(self, v: ir.Value, src: np.dtype, dst: np.dtype) -> ir.Value:
        src, dst = np.dtype(src), np.dtype(dst)
        to = self.like(v, llvm_type(dst))
        b = self.b
        if src == dst:
            return v
        if dst == np.bool_:
            if src.kind == "f":
                return b.fcmp_unordered("!=", v, self.zero(v.type))
            return b.icmp_unsigned("!=", v, self.zero(v.type))
        if src == np.bool_:
            if dst.kind == "f":
                return b.uitofp(v, to)
            return b.zext(v, to)
        if src.kind in "iu" and dst.kind in "iu":
            if dst.itemsize < src.itemsize:
                return b.trunc(v, to)
            if dst.itemsize == src.itemsize:
                return v
            return b.sext(v, to) if src.kind == "i" else b.zext(v, to)
        if src.kind in "iu" and dst.kind == "f":
            return b.sitofp(v, to) if src.kind == "i" else b.uitofp(v, to)
        if src.kind == "f" and dst.kind == "f":
            out = b.fpext(v, to) if dst.itemsize > src.itemsize else self.fptrunc(v, to)
            if 2 in (src.itemsize, dst.itemsize):
                out = b.select(b.fcmp_unordered("uno", v, v), self._half_nan(v, src, dst), out)
            return out
        if src.kind == "f" and dst.kind in "iu":
            return self._float_to_int(v, src, dst)
        raise LowerError(f"cast {src} -> {dst}")

    def fptrunc(self, v: ir.Value, to: ir.Type) -> ir.Value:
        """Narrowing float conversion, one rounding (to nearest even). x86 has no instruction
        from double to half below AVX512-FP16, and LLVM's libcall for it (__truncdfhf2) is
        not in every process, so double goes to single rounded to odd (truncated, the last
        bit set when anything was dropped) and then to half: single keeps more than two bits
        beyond half's precision, which makes the two roundings one."""
        b = self.b
        if element_type(v.type) != DOUBLE or element_type(to) != HALF:
            return b.fptrunc(v, to)
        f32 = self.like(v, FLOAT)
        i32 = self.like(v, I32)
        near = b.fptrunc(v, f32)
        back = b.fpext(near, v.type)
        inexact = b.fcmp_ordered("!=", back, v)      # NaN: never (its payload is kept)
        away = b.fcmp_ordered(">", self.call("llvm.fabs", v.type, [back]),
                              self.call("llvm.fabs", v.type, [v]))
        bits = b.bitcast(near, i32)
        toward = b.select(away, b.sub(bits, self.iconst(i32, 1)), bits)
        odd = b.or_(toward, self.iconst(i32, 1))
        single = b.bitcast(b.select(inexact, odd, bits), f32)
        return b.fptrunc(single, to)

    def _half_nan(self, v: ir.Value, src: np.dtype, dst: np.dtype) -> ir.Value:
        """numpy's half conversions of a NaN keep its payload, unquieted: to half the top
        mantissa bits (at least one set), from half the mantissa shifted up. The same as numpy,
        so the engines agree bit for bit; the V_CVT semantics quiet a NaN before converting
        (alu_float._convert), which makes the result the hardware's quiet NaN."""
        b = self.b
        mant = {2: 10, 4: 23, 8: 52}
        sbits, dbits = src.itemsize * 8, dst.itemsize * 8
        sty, dty = self.like(v, ir.IntType(sbits)), self.like(v, ir.IntType(dbits))
        x = b.bitcast(v, sty)
        sign = b.and_(x, self.iconst(sty, 1 << (sbits - 1)))
        payload = b.and_(x, self.iconst(sty, (1 << mant[src.itemsize]) - 1))
        shift = mant[src.itemsize] - mant[dst.itemsize]
        exp_bits = {2: 0x7C00, 4: 0x7F800000, 8: 0x7FF0000000000000}[dst.itemsize]
        if shift > 0:
            moved = b.trunc(b.lshr(payload, self.iconst(sty, shift)), dty)
            moved = b.select(b.icmp_unsigned("==", moved, self.zero(dty)), self.iconst(dty, 1),
                             moved)
            top = b.trunc(b.lshr(sign, self.iconst(sty, sbits - dbits)), dty)
        else:
            moved = b.shl(b.zext(payload, dty), self.iconst(dty, -shift))
            top = b.shl(b.zext(sign, dty), self.iconst(dty, dbits - sbits))
        out = b.or_(b.or_(top, self.iconst(dty, exp_bits)), moved)
        return b.bitcast(out, self.like(v, llvm_type(dst)))

    def _nan_first(self, x: ir.Value, y: ir.Value, result: ir.Value, dtype: np.dtype
                   ) -> ir.Value:
        """x86's NaN rule for two-operand float arithmetic (what numpy computes with): a NaN
        operand comes out quieted, the first one when both are NaN. LLVM may swap the
        operands of a commutative instruction, so the rule is applied explicitly. (Half
        values keep their payload through numpy's conversions to and from single precision,
        so the same rule holds for them with the half quiet bit.)"""
        b = self.b
        ity = self.like(x, _int_for(dtype))
        quiet = {2: 1 << 9, 4: 1 << 22, 8: 1 << 51}[dtype.itemsize]
        pick = b.select(b.fcmp_unordered("uno", x, x), x, y)
        quieted = b.bitcast(b.or_(b.bitcast(pick, ity), self.iconst(ity, quiet)), x.type)
        return b.select(b.fcmp_unordered("uno", x, y), quieted, result)

    def _cvtt(self, v: ir.Value, bits: int) -> ir.Value:
        """x86 cvtt: truncate to a signed ``bits``-bit integer; NaN / out of range give the
        integer indefinite value (the smallest integer)."""
        ity = self.like(v, ir.IntType(bits))
        lo = self.splat(-(2.0 ** (bits - 1)), v.type)
        hi = self.splat(2.0 ** (bits - 1), v.type)
        ok = self.b.and_(self.b.fcmp_ordered(">=", v, lo), self.b.fcmp_ordered("<", v, hi))
        return self.b.select(ok, self.b.fptosi(v, ity), self.iconst(ity, -(1 << (bits - 1))))

    def _float_to_int(self, v: ir.Value, src: np.dtype, dst: np.dtype) -> ir.Value:
        if src.itemsize == 2:
            v = self.b.fpext(v, self.like(v, FLOAT))
            if dst == np.uint32:   # numpy: half -> int64 -> low 32 bits
                return self.b.trunc(self._cvtt(v, 64), self.like(v, I32))
        bits = dst.itemsize * 8
        if dst.kind == "i" and bits in (32, 64):
            return self._cvtt(v, bits)
        if dst.kind == "u" and bits in (32, 64):
            # x >= 2**(bits-1): convert x - 2**(bits-1) and add it back (wrapping)
            top = self.splat(2.0 ** (bits - 1), v.type)
            big = self.b.fcmp_ordered(">=", v, top)
            low = self._cvtt(v, bits)
            high = self.b.add(self._cvtt(self.b.fsub(v, top), bits),
                              self.iconst(low.type, 1 << (bits - 1)))
            return self.b.select(big, high, low)
        # narrow integers: through int32, then the low bits
        return self.b.trunc(self._cvtt(v, 32), self.like(v, llvm_type(dst)))

    # --- ufuncs ---------------------------------------------------------------------------------
    def _ufunc(self, node: Node, args: list[ir.Value]) -> ir.Value:
        name = node.attr if isinstance(node.attr, str) else node.attr[0]
        in_dtype = node.args[0].dtype
        b = self.b
        kind = in_dtype.kind
        if name == "frexp":
            return self._frexp(args[0], node.attr[1])
        if name in ("add", "subtract", "multiply"):
            x, y = args
            if kind == "b":
                return b.or_(x, y) if name == "add" else b.and_(x, y)
            if kind == "f":
                out = {"add": b.fadd, "subtract": b.fsub, "multiply": b.fmul}[name](x, y)
                if in_dtype.itemsize == 2 and name != "subtract":
                    # numpy's half loops compute in single precision with the operands of the
                    # commutative operations the other way round
                    return self._nan_first(y, x, out, in_dtype)
                return self._nan_first(x, y, out, in_dtype)
            return {"add": b.add, "subtract": b.sub, "multiply": b.mul}[name](x, y)
        if name in ("true_divide", "divide"):
            if kind != "f":
                raise LowerError("integer true_divide")
            return self._nan_first(args[0], args[1], b.fdiv(*args), in_dtype)
        if name in ("floor_divide", "remainder"):
            return self._int_division(name, args[0], args[1], in_dtype)
        if name == "negative":
            if kind == "f":
                return b.fneg(args[0])
            return b.sub(self.zero(args[0].type), args[0])
        if name == "positive":
            return args[0]
        if name in ("absolute", "fabs"):
            x = args[0]
            if kind == "f":
                return self.call("llvm.fabs", x.type, [x])
            if kind == "i":
                neg = b.sub(self.zero(x.type), x)
                return b.select(b.icmp_signed("<", x, self.zero(x.type)), neg, x)
            return x
        if name == "sqrt":
            return self.call("llvm.sqrt", args[0].type, args)
        if name in ("floor", "ceil", "trunc", "rint"):
            base = {"floor": "llvm.floor", "ceil": "llvm.ceil", "trunc": "llvm.trunc",
                    "rint": "llvm.roundeven"}[name]
            return self.call(base, args[0].type, args)
        if name in _LIBM:
            return self._libm(_LIBM[name], args[0], in_dtype)
        if name in ("isnan", "isinf", "isfinite"):
            x = args[0]
            if kind != "f":
                return self.iconst(self.like(x, I1), 1 if name == "isfinite" else 0)
            if name == "isnan":
                return b.fcmp_unordered("uno", x, x)
            mag = self.call("llvm.fabs", x.type, [x])
            inf = self.splat(np.inf, x.type)
            return b.fcmp_ordered("==", mag, inf) if name == "isinf" else \
                b.fcmp_ordered("!=", mag, inf)
        if name == "signbit":
            x = args[0]
            ity = self.like(x, _int_for(in_dtype))
            return b.icmp_signed("<", b.bitcast(x, ity), self.zero(ity))
        if name == "copysign":
            return self.call("llvm.copysign", args[0].type, args)
        if name == "nextafter":
            return self._nextafter(args[0], args[1], in_dtype)
        if name == "ldexp":
            x, e = args
            e_dtype = node.args[1].dtype
            i32 = self.like(x, I32)
            if e_dtype.itemsize > 4:
                lo = self.iconst(e.type, -(1 << 31))
                hi = self.iconst(e.type, (1 << 31) - 1)
                e = b.select(b.icmp_signed("<", e, lo), lo, e)
                e = b.select(b.icmp_signed(">", e, hi), hi, e)
                e = b.trunc(e, i32)
            elif e_dtype.itemsize < 4:
                e = b.sext(e, i32) if e_dtype.kind == "i" else b.zext(e, i32)
            if element_type(x.type) == HALF or str(element_type(x.type)) == "half":
                # through single precision: exact, then one rounding to half
                wide = b.fpext(x, self.like(x, FLOAT))
                out = self.call("llvm.ldexp", wide.type, [wide, e], [wide.type, e.type])
                return b.fptrunc(out, x.type)
            return self.call("llvm.ldexp", x.type, [x, e], [x.type, e.type])
        if name in ("left_shift", "right_shift"):
            return self._shift(name, args[0], args[1], in_dtype)
        if name in ("bitwise_and", "logical_and"):
            return b.and_(*args)
        if name in ("bitwise_or", "logical_or"):
            return b.or_(*args)
        if name in ("bitwise_xor", "logical_xor"):
            return b.xor(*args)
        if name in ("invert", "logical_not"):
            x = args[0]
            return b.xor(x, self.iconst(x.type, -1))
        if name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
            x, y = args
            cmpop = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=",
                     "greater": ">", "greater_equal": ">="}[name]
            if kind == "f":
                if name == "not_equal":
                    return b.fcmp_unordered("!=", x, y)
                return b.fcmp_ordered(cmpop, x, y)
            if kind == "i":
                return b.icmp_signed(cmpop, x, y)
            return b.icmp_unsigned(cmpop, x, y)
        if name in ("maximum", "minimum", "fmax", "fmin"):
            return self._minmax(name, args[0], args[1], in_dtype)
        if name == "bitwise_count":
            x = args[0]
            count = self.call("llvm.ctpop", x.type, [x])
            if element_type(x.type).width > 8:
                return b.trunc(count, self.like(x, I8))
            return count
        raise LowerError(f"ufunc {name}")

    def _libm(self, name: str, x: ir.Value, dtype: np.dtype) -> ir.Value:
        if dtype != np.float64:
            raise LowerError(f"{name} of {dtype}")
        fn = self._intrinsic(name, DOUBLE, [DOUBLE])
        if not isinstance(x.type, ir.VectorType):
            return self.b.call(fn, [x])
        out = ir.Constant(x.type, ir.Undefined)
        for i in range(x.type.count):
            k = ir.Constant(I32, i)
            out = self.b.insert_element(out, self.b.call(fn, [self.b.extract_element(x, k)]), k)
        return out

    def _frexp(self, x: ir.Value, which: int) -> ir.Value:
        """C frexp through the float64 bits (every half and single value is a normal double;
        a double subnormal is scaled by 2**54 first); non-finite: (x, 0), zero: (x, 0)."""
        b = self.b
        f64 = self.like(x, DOUBLE)
        i64 = self.like(x, I64)
        wide = b.fpext(x, f64) if element_type(x.type) != DOUBLE else x
        field = b.and_(b.lshr(b.bitcast(wide, i64), self.iconst(i64, 52)),
                       self.iconst(i64, 0x7FF))
        tiny = b.icmp_unsigned("==", field, self.zero(i64))
        scaled = b.select(tiny, b.fmul(wide, self.splat(2.0 ** 54, f64)), wide)
        bits = b.bitcast(scaled, i64)
        field = b.and_(b.lshr(bits, self.iconst(i64, 52)), self.iconst(i64, 0x7FF))
        exp = b.sub(b.sub(field, self.iconst(i64, 1022)),
                    b.select(tiny, self.iconst(i64, 54), self.zero(i64)))
        mant_bits = b.or_(b.and_(bits, self.iconst(i64, ~(0x7FF << 52) & ((1 << 64) - 1))),
                          self.iconst(i64, 1022 << 52))
        mant = b.bitcast(mant_bits, f64)
        if element_type(x.type) != DOUBLE:
            mant = self.fptrunc(mant, x.type)
        ordinary = b.and_(b.fcmp_ordered("!=", self.call("llvm.fabs", x.type, [x]),
                                         self.splat(np.inf, x.type)),
                          b.fcmp_ordered("!=", x, self.zero(x.type)))
        if which == 0:
            return b.select(ordinary, mant, x)
        return b.select(ordinary, b.trunc(exp, self.like(x, I32)), self.zero(self.like(x, I32)))

    def _nextafter(self, x: ir.Value, y: ir.Value, dtype: np.dtype) -> ir.Value:
        b = self.b
        ity = self.like(x, _int_for(dtype))
        bits = b.bitcast(x, ity)
        one = self.iconst(ity, 1)
        zero_f = self.zero(x.type)
        up = b.icmp_unsigned("==", b.fcmp_ordered("<", x, y), b.fcmp_ordered(">", x, zero_f))
        stepped = b.bitcast(b.select(up, b.add(bits, one), b.sub(bits, one)), x.type)
        tiny = self.call("llvm.copysign", x.type, [b.bitcast(one, x.type), y])
        out = b.select(b.fcmp_ordered("==", x, zero_f), tiny, stepped)
        out = b.select(b.fcmp_ordered("==", x, y), y, out)
        nan = b.fcmp_unordered("uno", x, y)
        return b.select(nan, b.fadd(x, y), out)

    def _shift(self, name: str, x: ir.Value, s: ir.Value, dtype: np.dtype) -> ir.Value:
        b = self.b
        width = element_type(x.type).width
        big = b.icmp_unsigned(">=", s, self.iconst(s.type, width))
        safe = b.select(big, self.zero(s.type), s)
        if name == "left_shift":
            return b.select(big, self.zero(x.type), b.shl(x, safe))
        if dtype.kind == "i":
            fill = b.ashr(x, self.iconst(x.type, width - 1))
            return b.select(big, fill, b.ashr(x, safe))
        return b.select(big, self.zero(x.type), b.lshr(x, safe))

    def _int_division(self, name: str, x: ir.Value, y: ir.Value, dtype: np.dtype) -> ir.Value:
        b = self.b
        if dtype.kind in "fb":
            raise LowerError(f"{dtype} {name}")
        zero = self.zero(x.type)
        one = self.iconst(x.type, 1)
        by_zero = b.icmp_unsigned("==", y, zero)
        if dtype.kind == "u":
            safe = b.select(by_zero, one, y)
            out = b.udiv(x, safe) if name == "floor_divide" else b.urem(x, safe)
            return b.select(by_zero, zero, out)
        width = element_type(x.type).width
        minus_one = self.iconst(x.type, -1)
        smallest = self.iconst(x.type, -(1 << (width - 1)))
        overflow = b.and_(b.icmp_signed("==", x, smallest), b.icmp_signed("==", y, minus_one))
        safe = b.select(b.or_(by_zero, overflow), one, y)
        q = b.sdiv(x, safe)
        r = b.srem(x, safe)
        adjust = b.and_(b.icmp_signed("!=", r, zero),
                        b.icmp_unsigned("!=", b.icmp_signed("<", r, zero),
                                        b.icmp_signed("<", y, zero)))
        if name == "floor_divide":
            q = b.select(adjust, b.sub(q, one), q)
            q = b.select(overflow, smallest, q)
            return b.select(by_zero, zero, q)
        r = b.select(adjust, b.add(r, y), r)
        r = b.select(overflow, zero, r)
        return b.select(by_zero, zero, r)

    def _minmax(self, name: str, x: ir.Value, y: ir.Value, dtype: np.dtype) -> ir.Value:
        b = self.b
        bigger = name in ("maximum", "fmax")
        if dtype.kind == "b":
            return b.or_(x, y) if bigger else b.and_(x, y)
        if dtype.kind in "iu":
            base = ("llvm.smax" if bigger else "llvm.smin") if dtype.kind == "i" else \
                ("llvm.umax" if bigger else "llvm.umin")
            return self.call(base, x.type, [x, y])
        pick = b.select(b.fcmp_ordered(">" if bigger else "<", x, y), x, y)
        if name in ("maximum", "minimum"):
            return b.select(b.fcmp_unordered("uno", x, x), x, pick)
        return b.select(b.fcmp_unordered("uno", y, y), x,
                        b.select(b.fcmp_unordered("uno", x, x), y, pick))

    # --- reductions ----------------------------------------------------------------------------
    def _reduce(self, node: Node, src: ir.Value) -> ir.Value:
        op, group = node.attr
        dtype = node.dtype
        elem = element_type(src.type)
        outs = []
        for k in range(node.n):
            part = self.pick([src], list(range(k * group, (k + 1) * group)), dtype)
            if op in ("max", "min"):
                base = f"llvm.vector.reduce.{'s' if dtype.kind == 'i' else 'u'}{op}"
            else:
                base = f"llvm.vector.reduce.{op}"
            fn = self._intrinsic(f"{base}.{mangle(part.type)}", elem, [part.type])
            outs.append(self.b.call(fn, [part]))
        if node.n == 1:
            return outs[0]
        out = ir.Constant(ir.VectorType(elem, node.n), ir.Undefined)
        for k, value in enumerate(outs):
            out = self.b.insert_element(out, value, ir.Constant(I32, k))
        return out

    def _argmax(self, node: Node, src: ir.Value) -> ir.Value:
        group = node.attr
        b = self.b
        ity = _int_for(node.dtype)
        word = ir.IntType(group)
        outs = []
        for k in range(node.n):
            part = self.pick([src], list(range(k * group, (k + 1) * group)), np.dtype(bool))
            bits = b.bitcast(part, word) if isinstance(part.type, ir.VectorType) else \
                b.zext(part, word)
            tz = self.call("llvm.cttz", word, [bits, ir.Constant(I1, 0)])
            none = b.icmp_unsigned("==", bits, ir.Constant(word, 0))
            idx = b.select(none, ir.Constant(word, 0), tz)
            idx = b.zext(idx, ity) if group < ity.width else b.trunc(idx, ity) \
                if group > ity.width else idx
            outs.append(idx)
        if node.n == 1:
            return outs[0]
        out = ir.Constant(ir.VectorType(ity, node.n), ir.Undefined)
        for k, value in enumerate(outs):
            out = b.insert_element(out, value, ir.Constant(I32, k))
        return out
