"""The MODE register's float controls and the float arithmetic that honours them.

MODE (hardware register 1, ``hwreg(HW_REG_MODE)``; CDNA3 ISA guide, "Mode register"; RDNA4 ISA
guide, "MODE"; LLVM AMDGPU ``SIDefines.h`` ``Hwreg::ModeRegisterMasks``) lays out its float
fields the same way on gfx9, gfx11 and gfx12:

======  =====================================================================================
bits    field
======  =====================================================================================
1:0     FP_ROUND, single precision: 0 nearest even, 1 toward +inf, 2 toward -inf, 3 toward zero
3:2     FP_ROUND, double and half precision (same values)
5:4     FP_DENORM, single precision: 0 flush input and output denormals, 1 flush output only
        (keep input), 2 flush input only (keep output), 3 keep both
7:6     FP_DENORM, double and half precision (same values)
8       DX10_CLAMP: a clamped NaN becomes 0 (gfx9/gfx11; gfx12 has no such mode)
9       IEEE: IEEE-754 NaN handling of min/max (gfx9/gfx11; gfx12 has no such mode)
23      FP16_OVFL: overflowing f16 results (and f32 -> fp8/bf8 conversions) give the largest
        finite value instead of infinity; f16 results under it stop the queue (not modelled)
======  =====================================================================================

A wave starts with MODE[7:0] = kernel descriptor rsrc1[19:12] (FLOAT_ROUND_MODE_32,
FLOAT_ROUND_MODE_16_64, FLOAT_DENORM_MODE_32, FLOAT_DENORM_MODE_16_64), MODE[8] = rsrc1[21]
(ENABLE_DX10_CLAMP) and MODE[9] = rsrc1[23] (ENABLE_IEEE_MODE) before gfx12; on gfx12 those two
rsrc1 bits mean WG_RR_EN and DISABLE_PERF (LLVM AMDGPUUsage, "compute_pgm_rsrc1").

How the interpreter uses it: a :class:`FloatMode` is part of the information an instruction is
compiled with (``ProgramInfo.mode``); the executor keeps one compiled program per MODE value a
wave runs under, so the default mode costs nothing at run time. A float instruction whose
rounding direction is not round-to-nearest-even either has a directed implementation here
(``DIRECTED``: exact, through error-free transformations in float64 or exact rationals) or does
not round at all (``rounds``), else it compiles to a closure that stops the queue naming the
instruction and the mode (:func:`unsupported`).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from hsapy.sim.isa.alu_float import _quiet

__all__ = ["FloatMode", "NEAREST", "UP", "DOWN", "TOWARD_ZERO", "ROUND_NAMES", "MODE_HWREG",
           "initial_mode", "DIRECTED", "directed_fn", "directed_name", "unsupported", "rounds",
           "float_types", "round_exact"]

NEAREST, UP, DOWN, TOWARD_ZERO = 0, 1, 2, 3
ROUND_NAMES = ("round to nearest even", "round toward +inf", "round toward -inf",
               "round toward zero")
DENORM_NAMES = ("flush input and output denormals", "flush output denormals",
                "flush input denormals", "keep denormals")
MODE_HWREG = 1          # hwreg id of MODE on every generation (SIDefines.h Hwreg::ID_MODE)
FLOAT_BITS = 0xFF       # FP_ROUND and FP_DENORM
MODELLED_BITS = 0x3FF   # FP_ROUND, FP_DENORM, DX10_CLAMP, IEEE
FP16_OVFL = 1 << 23     # clamp overflowing f16 results, and f32 -> fp8/bf8 conversions, to max


@dataclass(frozen=True)
class FloatMode:
    """The MODE register value a program is compiled for, read as its float controls."""

    value: int

    @property
    def round32(self) -> int:
        """FP_ROUND for single precision (MODE[1:0])."""
        return self.value & 3

    @property
    def round64(self) -> int:
        """FP_ROUND for double and half precision (MODE[3:2])."""
        return (self.value >> 2) & 3

    @property
    def denorm32(self) -> int:
        """FP_DENORM for single precision (MODE[5:4])."""
        return (self.value >> 4) & 3

    @property
    def denorm64(self) -> int:
        """FP_DENORM for double and half precision (MODE[7:6])."""
        return (self.value >> 6) & 3

    @property
    def dx10_clamp(self) -> bool:
        """MODE[8]."""
        return bool(self.value & 0x100)

    @property
    def ieee(self) -> bool:
        """MODE[9]: IEEE-754 NaN handling (signaling NaN inputs quieted by min/max)."""
        return bool(self.value & 0x200)

    def round_for(self, ty: str) -> int:
        """The rounding direction of a result of float type ``ty`` (f16, f32, f64)."""
        return self.round32 if ty == "f32" else self.round64

    def denorm_for(self, ty: str) -> int:
        """The denormal mode of float type ``ty``."""
        return self.denorm32 if ty == "f32" else self.denorm64

    @property
    def ftz32(self) -> bool:
        """Single-precision denormals flushed (inputs and outputs)."""
        return self.denorm32 == 0

    @property
    def ftz64(self) -> bool:
        """Double/half-precision denormals flushed (inputs and outputs)."""
        return self.denorm64 == 0

    @classmethod
    def from_flags(cls, ftz32: bool, ftz64: bool) -> FloatMode:
        """Round to nearest even with the given flushing (DX10_CLAMP and IEEE set)."""
        return cls(0x300 | (0 if ftz32 else 0x30) | (0 if ftz64 else 0xC0))

    def describe(self, ty: str | None = None) -> str:
        """Words for the float controls (of one type when given)."""
        if ty is not None:
            return (f"MODE {self.value:#x}: {ty} {ROUND_NAMES[self.round_for(ty)]}, "
                    f"{DENORM_NAMES[self.denorm_for(ty)]}")
        return (f"MODE {self.value:#x}: f32 {ROUND_NAMES[self.round32]}, f64/f16 "
                f"{ROUND_NAMES[self.round64]}")


def initial_mode(rsrc1: int, family: str) -> int:
    """MODE at wave launch from the kernel descriptor's compute_pgm_rsrc1 (module docstring);
    MODE.FP16_OVFL (bit 23) = rsrc1[26] (FP16_OVFL, gfx9 and later)."""
    mode = (rsrc1 >> 12) & FLOAT_BITS
    if family != "gfx12":
        mode |= ((rsrc1 >> 21) & 1) << 8 | ((rsrc1 >> 23) & 1) << 9
    mode |= ((rsrc1 >> 26) & 1) << 23
    return mode


# --- which instructions round --------------------------------------------------------------------

_FLOAT_RE = re.compile(r"(?<![a-z0-9])(?:b?f16|f32|f64)(?![0-9])")
# Float instructions whose result does not depend on the rounding direction: comparisons, moves,
# selections, min/max, results that are exact by definition (floor, frexp, widening or
# integer-truncating conversions) and fixed-direction conversions (pkrtz).
_EXACT_PREFIXES = (
    "v_cmp_", "v_cmpx_", "s_cmp_", "s_cmpk_", "v_mov_", "v_cndmask_", "v_max", "v_min",
    "v_med3_", "v_pk_max", "v_pk_min", "v_pk_maximum", "v_pk_minimum", "s_max", "s_min",
    "v_floor_", "v_ceil_", "v_trunc_", "v_rndne_", "s_floor_", "s_ceil_", "s_trunc_",
    "s_rndne_", "v_frexp_", "v_cvt_pkrtz_", "v_cvt_pk_rtz_", "v_cvt_rpi_", "v_cvt_flr_",
    "v_cvt_floor_", "v_cvt_nearest_", "v_pack_b32_", "v_cvt_f32_ubyte", "v_cvt_off_f32_i4",
    "v_cmp_class", "v_dual_mov_", "v_dual_cndmask_", "v_dual_max", "v_dual_min",
    "v_accvgpr_", "v_readfirstlane", "v_readlane", "v_writelane", "v_pk_mov_",
    # conversions to fp8/bf8 that always round to nearest even (CDNA3 guide, V_CVT_PK_FP8_F32)
    "v_cvt_pk_fp8_f32", "v_cvt_pk_bf8_f32",
)
# conversions to a wider float or to an integer (truncating) never round
_EXACT_CONVERSIONS = re.compile(
    r"^[vs]_cvt_(?:f32_f16|f64_f32|f32_bf16|f64_[iu]32|[iu](?:16|32)_f(?:16|32|64)|"
    r"[iu]32_f64|u16_f16|i16_f16|norm_[iu]16_f16|f32_fp8|f32_bf8|pk_f32_fp8|pk_f32_bf8|"
    r"hi_f32_f16|f32_hi_f16)(?:_|$)")


def float_types(name: str) -> tuple[str, ...]:
    """The float types an instruction's mnemonic names (f16/bf16 count as half precision)."""
    found = []
    for match in _FLOAT_RE.finditer(name):
        ty = match.group(0)
        ty = "f16" if ty == "bf16" else ty
        if ty not in found:
            found.append(ty)
    return tuple(found)


_MIN_MAX = re.compile(r"_(?:f?min|f?max|minimum|maximum)(?:3|_num|imum3)?(?:_|$)")


def rounds(name: str) -> bool:
    """Whether instruction ``name`` produces a float result that the rounding mode can change
    (VALU, SALU, and float atomics such as ``global_atomic_add_f32``; min/max never round)."""
    if not float_types(name):
        return False
    if name.startswith(_EXACT_PREFIXES) or _EXACT_CONVERSIONS.match(name) \
            or _MIN_MAX.search(name):
        return False
    return True


def result_type(name: str, dst_ty: str | None = None) -> str:
    """The float type a rounding instruction rounds to."""
    if dst_ty in ("f16", "f32", "f64"):
        return dst_ty
    m = re.match(r"^[vs]_cvt_(?:pk_)?(f16|f32|f64|bf16)_", name)
    if m:
        return "f16" if m.group(1) == "bf16" else m.group(1)
    types = float_types(name)
    return types[0] if types else "f32"


def directed_name(name: str) -> str:
    """The name whose directed semantics an instruction uses: VOPD halves and packed (VOP3P)
    forms round like the plain instruction (v_dual_add_f32, v_pk_add_f32 -> v_add_f32)."""
    if name.startswith("v_dual_"):
        return "v_" + name[len("v_dual_"):]
    if name.startswith("v_pk_"):
        return "v_" + name[len("v_pk_"):]
    return name


# Float dot products (V_DOT2_F32_F16, V_DOT2C_F32_BF16, V_DOT2_F16_F16, V_DOT4_F32_FP8_BF8...):
# the ISA guides do not say how they treat denormals when the MODE flushes them.
_FLOAT_DOT = re.compile(r"^v_dot\d+c?_(?:f32|f16|bf16)_")


def unsupported(name: str, mode: FloatMode, dst_ty: str | None = None) -> str:
    """Why instruction ``name`` cannot run under ``mode`` ("" when it can)."""
    if mode.value & FP16_OVFL and rounds(name) and result_type(name, dst_ty) == "f16":
        return (f"MODE {mode.value:#x}: FP16_OVFL (an overflowing f16/bf16 result clamped to "
                "the largest finite value) is not implemented")
    if _FLOAT_DOT.match(name) and (mode.denorm32 != 3 or mode.denorm64 != 3):
        return (f"MODE {mode.value:#x}: a float dot product under a MODE that flushes "
                "denormals is not implemented (the ISA guides leave its denormal handling open)")
    if mode.value & FLOAT_BITS == FloatMode.from_flags(mode.ftz32, mode.ftz64).value & FLOAT_BITS:
        return ""       # round to nearest even, each type flushing both ways or neither
    if not rounds(name):
        return ""
    ty = result_type(name, dst_ty)
    types = set(float_types(name)) | {ty}
    for t in sorted(types):
        if mode.denorm_for(t) in (1, 2):
            return (f"{mode.describe(t)}: flushing denormals on one side only is not "
                    "implemented")
    if mode.round_for(ty) != NEAREST and directed_name(name) not in DIRECTED:
        return f"{mode.describe(ty)}: directed rounding of {name} is not implemented"
    return ""


def directed_fn(name: str, mode: FloatMode, dst_ty: str, fn: Callable) -> Callable:
    """``fn`` (the round-to-nearest semantics of ``name``), or its directed version when the
    mode rounds ``dst_ty`` another way."""
    direction = mode.round_for(result_type(name, dst_ty))
    name = directed_name(name)
    if direction == NEAREST or name not in DIRECTED:
        return fn
    return DIRECTED[name](direction)


# --- exact rounding ------------------------------------------------------------------------------

f16, f32, f64 = np.float16, np.float32, np.float64
_FORMATS = {f16: (11, -14, 15), f32: (24, -126, 127), f64: (53, -1022, 1023)}   # p, emin, emax


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s = fl(a + b) and the exact error e = a + b - s (Knuth; exact for finite float64)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = a * f64(134217729.0)        # Veltkamp split: 2**27 + 1
    hi = c - (c - a)
    return hi, a - hi


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p = fl(a * b) and the error e = a * b - p (Dekker; exact unless it underflows)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _in_range(*arrays) -> np.ndarray:
    """Lanes whose float64 values are zero or far enough from underflow and overflow for the
    two-product's split and error term to stay exact."""
    ok = np.ones((), bool)
    for a in arrays:
        mag = np.abs(a)
        ok = ok & ((mag == 0) | ((mag > 2.0 ** -900) & (mag < 2.0 ** 990)))
    return ok


def _step(r: np.ndarray, toward: float) -> np.ndarray:
    return np.nextafter(r, np.asarray(toward, r.dtype))


def round_exact(s: np.ndarray, e: np.ndarray, ftype, direction: int) -> np.ndarray:
    """The ``ftype`` value of the exact number ``s + e`` rounded in ``direction``, where ``s``
    is the float64 nearest to it and ``e`` the exact remainder (both float64).

    ``s.astype(ftype)`` is one of the two ``ftype`` neighbours of the exact value (rounding is
    monotonic); which side it lies on is the sign of ``(r - s) - e``, where ``r - s`` is exact
    (Sterbenz) or infinite."""
    s = np.asarray(s, f64)
    e = np.asarray(e, f64)
    with np.errstate(all="ignore"):
        r = s.astype(ftype)
        d = r.astype(f64) - s
        above = d > e           # r lies above the exact value
        below = d < e
    positive = (s > 0) | ((s == 0) & (e > 0))
    return np.asarray(_adjust(r, above, below, positive, direction), ftype)


def _round_fraction(q: Fraction, ftype, direction: int) -> float:
    """One exact rational rounded to ``ftype`` in ``direction`` (used where float64 cannot
    hold the error terms exactly: f64 results in the subnormal range or near overflow)."""
    p, emin, emax = _FORMATS[ftype]
    if q == 0:
        return 0.0
    sign = -1 if q < 0 else 1
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)                          # subnormals share emin's quantum
    quantum = Fraction(2) ** (e - p + 1)
    units = a / quantum
    whole = units.numerator // units.denominator
    rest = units - whole
    if rest:
        if direction == NEAREST:
            if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole & 1):
                whole += 1
        elif (direction == UP and sign > 0) or (direction == DOWN and sign < 0):
            whole += 1
    value = Fraction(whole) * quantum
    largest = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if value > largest:
        away = direction == NEAREST or (direction == UP and sign > 0) \
            or (direction == DOWN and sign < 0)
        return sign * float("inf") if away else sign * float(largest)
    return sign * float(value)


def _by_fractions(exact: Callable[..., Fraction], ftype, direction: int, *args) -> np.ndarray:
    """Element-wise exact evaluation (slow; only for lanes the float64 route cannot do)."""
    arrays = np.broadcast_arrays(*[np.asarray(a, f64) for a in args])
    out = np.empty(arrays[0].shape, f64)
    for index in np.ndindex(out.shape):
        values = [float(a[index]) for a in arrays]
        if not all(np.isfinite(values)):
            out[index] = np.nan
            continue
        out[index] = _round_fraction(exact(*[Fraction(v) for v in values]), ftype, direction)
    return out.astype(ftype)


def _zero_sign(result: np.ndarray, a: np.ndarray, b: np.ndarray, direction: int) -> np.ndarray:
    """IEEE 754 section 6.3: an exact zero sum of operands of opposite signs (or an exact
    cancellation) is +0, except -0 when rounding toward -inf."""
    if direction != DOWN:
        return result
    both_plus_zero = (a == 0) & (b == 0) & ~np.signbit(a) & ~np.signbit(b)
    return np.where((result == 0) & ~both_plus_zero, -np.zeros((), result.dtype), result)


def _finite(*arrays) -> np.ndarray:
    ok = np.ones((), bool)
    for a in arrays:
        ok = ok & np.isfinite(a)
    return ok


def _overflowed(r: np.ndarray, s: np.ndarray, finite: np.ndarray, ftype, direction: int):
    """Results whose float64 sum already overflowed: the largest finite value unless the
    direction rounds away from zero."""
    big = np.finfo(ftype).max
    lost = finite & ~np.isfinite(s)
    if not lost.any():
        return r
    positive = s > 0
    away = np.where(positive, direction == UP, direction == DOWN)
    capped = np.where(positive, big, -big).astype(ftype)
    return np.where(lost & ~away, capped, r).astype(ftype)


def _directed_add(ftype, negate_b: bool = False, reverse: bool = False):
    def make(direction: int):
        def add(a, b):
            if reverse:
                a, b = b, a
            a = np.asarray(a)
            b = np.asarray(b)
            if negate_b:
                b = -b
            x, y = a.astype(f64), b.astype(f64)
            with np.errstate(all="ignore"):
                s, e = _two_sum(x, y)
            e = np.where(np.isfinite(s), e, 0.0)
            r = round_exact(s, e, ftype, direction)
            r = _overflowed(r, s, _finite(x, y), ftype, direction)
            return _zero_sign(r, a, b, direction)
        return add
    return make


def _directed_mul(ftype):
    def make(direction: int):
        def mul(a, b):
            x, y = np.asarray(a, f64), np.asarray(b, f64)
            with np.errstate(all="ignore"):
                if ftype is f64:
                    p, e = _two_product(x, y)
                else:
                    p, e = x * y, np.zeros((), f64)     # exact: 2 x 24 bits < 53
            e = np.where(np.isfinite(p), e, 0.0)
            r = round_exact(p, e, ftype, direction)
            r = _overflowed(r, p, _finite(x, y), ftype, direction)
            if ftype is f64:
                # where the split overflows or the error term underflows: exact rationals
                rest = _finite(x, y) & ~_in_range(x, y, np.where(p == 0, 1.0, p))
                rest = rest | (_finite(x, y) & (p == 0) & (x != 0) & (y != 0))
                if rest.any():
                    exact = _by_fractions(lambda u, v: u * v, f64, direction,
                                          np.where(rest, x, 1.0), np.where(rest, y, 1.0))
                    r = np.where(rest, exact, r)
            return np.asarray(r, ftype)
        return mul
    return make


def _directed_fma(ftype):
    def make(direction: int):
        def fma(a, b, c):
            x, y, z = (np.asarray(v, f64) for v in (a, b, c))
            if ftype is f64:
                r = _by_fractions(lambda u, v, w: u * v + w, f64, direction, x, y, z)
                with np.errstate(all="ignore"):
                    special = ~_finite(x, y, z)
                    r = np.where(special, x * y + z, r)
                product = x * y
            else:
                with np.errstate(all="ignore"):
                    product = x * y                         # exact
                    s, e = _two_sum(product, np.broadcast_to(z, np.shape(product)))
                e = np.where(np.isfinite(s), e, 0.0)
                r = round_exact(s, e, ftype, direction)
            return _zero_sign(np.asarray(r, ftype), product, z, direction)
        return fma
    return make


def _directed_mad(ftype):
    """v_mad/v_mac: the product rounded, then the sum rounded, both in the mode's direction."""
    def make(direction: int):
        mul = _directed_mul(ftype)(direction)
        add = _directed_add(ftype)(direction)
        return lambda a, b, c: add(mul(a, b), c)
    return make


def _adjust(r: np.ndarray, above: np.ndarray, below: np.ndarray, positive: np.ndarray,
            direction: int) -> np.ndarray:
    """Move a round-to-nearest candidate ``r`` to its neighbour when it lies on the wrong side
    of the exact value for ``direction`` (``above``/``below``: r is above/below it)."""
    if direction == UP:
        r = np.where(below, _step(r, np.inf), r)
    elif direction == DOWN:
        r = np.where(above, _step(r, -np.inf), r)
    elif direction == TOWARD_ZERO:
        r = np.where(above & positive, _step(r, 0.0), r)
        r = np.where(below & ~positive, _step(r, 0.0), r)
    return r


def _directed_mad_mix(ftype):
    """v_mad_mix*: the f32 product rounded, then the sum rounded to the result type, both in
    the mode's direction."""
    def make(direction: int):
        mul = _directed_mul(f32)(direction)
        add = _directed_add(ftype)(direction)
        return lambda a, b, c: add(mul(a, b), c)
    return make


def _directed_div(ftype):
    """a / b (v_rcp: 1 / b). The round-to-nearest quotient r is one neighbour of the exact
    one; the sign of r * b - a (exact) says which."""
    def make(direction: int):
        def div(a, b):
            x, y = np.asarray(a, f64), np.asarray(b, f64)
            with np.errstate(all="ignore"):
                q = x / y
                r = q.astype(ftype)
                rr = r.astype(f64)
                if ftype is f64:
                    # r * y = p + pe exactly; p - x is exact next to x (Sterbenz), and the
                    # rounded sum of two floats has the sign of their exact sum
                    p, pe = _two_product(rr, y)
                    diff = (p - x) + pe
                else:
                    diff = rr * y - x                  # exact: 24 + 24 bits
                live = np.isfinite(r) & _finite(x, y) & (y != 0) & (x != 0)
                above = live & ((diff > 0) == (y > 0)) & (diff != 0)
                below = live & ((diff < 0) == (y > 0)) & (diff != 0)
                r = _adjust(r, above, below, q > 0, direction)
                if ftype is f64:
                    # where the two-product is not exact: exact rationals
                    tiny = _finite(x, y) & (y != 0) & (x != 0) & ~_in_range(rr, x, y)
                    if tiny.any():
                        exact = _by_fractions(lambda u, v: u / v, f64, direction,
                                              np.where(tiny, x, 1.0), np.where(tiny, y, 1.0))
                        r = np.where(tiny, exact, r)
                overflow = _finite(x, y) & (y != 0) & ~np.isfinite(r)
                if overflow.any():
                    r = _overflowed(r, np.where(overflow, np.inf * np.sign(q), q), overflow,
                                    ftype, direction)
            return np.asarray(r, ftype)
        return div
    return make


def _directed_rcp(ftype):
    def make(direction: int):
        div = _directed_div(ftype)(direction)
        return lambda a: div(np.ones((), ftype), a)
    return make


def _directed_sqrt(ftype):
    """The round-to-nearest root r, moved by the exact sign of r * r - a."""
    def make(direction: int):
        def sqrt(a):
            x = np.asarray(a, f64)
            with np.errstate(all="ignore"):
                r = np.sqrt(x).astype(ftype)
                rr = r.astype(f64)
                if ftype is f64:
                    p, pe = _two_product(rr, rr)
                    diff = (p - x) + pe
                else:
                    diff = rr * rr - x                 # exact: 2 x 24 bits
                live = np.isfinite(r) & (x > 0)
                above = live & (diff > 0)
                below = live & (diff < 0)
                r = _adjust(r, above, below, np.ones((), bool), direction)
                if ftype is f64:
                    tiny = live & ~_in_range(rr, x)
                    if tiny.any():
                        side = _by_fractions(_fraction_sqrt_side, f64, NEAREST,
                                             np.where(tiny, rr, 1.0), np.where(tiny, x, 1.0))
                        r = np.where(tiny, _adjust(np.sqrt(x), side > 0, side < 0,
                                                   np.ones((), bool), direction), r)
            return np.asarray(r, ftype)
        return sqrt
    return make


def _fraction_sqrt_side(r: Fraction, x: Fraction) -> Fraction:
    return Fraction((r * r > x) - (r * r < x))


def _directed_convert(ftype):
    """Narrowing float->float and int->float conversions: the source is exact in float64
    (integers up to 32 bits, f32), so one rounding of an exact value. A float NaN is quieted
    first, as in every rounding mode (alu_float._convert)."""
    def make(direction: int):
        def convert(a):
            x = np.asarray(a)
            if x.dtype.kind == "f":
                x = _quiet(x)
            x = x.astype(f64)
            return round_exact(x, np.zeros((), f64), ftype, direction)
        return convert
    return make


def _directed_fract(ftype):
    def make(direction: int):
        sub = _directed_add(ftype, negate_b=True)(direction)

        def fract(a):
            a = np.asarray(a)
            result = sub(a, np.floor(a))
            below_one = np.nextafter(np.asarray(1.0, a.dtype), np.asarray(0.0, a.dtype))
            return np.where(np.isinf(a), np.asarray(np.nan, a.dtype),
                            np.minimum(result, below_one)).astype(a.dtype)
        return fract
    return make


def _directed_ldexp(ftype):
    """a * 2**n: exact unless the result is subnormal or overflows."""
    def make(direction: int):
        def ldexp(a, n):
            x = np.asarray(a, f64)
            k = np.clip(np.asarray(n).astype(np.int64), -2200, 2200).astype(np.int32)
            if ftype is f64:
                return _by_fractions(lambda u, v: u * Fraction(2) ** int(v), f64, direction,
                                     x, k.astype(f64))
            with np.errstate(all="ignore"):
                s = np.ldexp(x, k)      # exact in float64 for f32/f16 operands in range
            return round_exact(s, np.zeros((), f64), ftype, direction)
        return ldexp
    return make


def _directed_rsq(ftype):
    """1 / sqrt(a): the round-to-nearest candidate r, moved by the exact sign of r * r * a - 1
    (r * r exact in float64 for f32/f16, then a two-product; f64 through exact rationals)."""
    def make(direction: int):
        def rsq(a):
            x = np.asarray(a, f64)
            with np.errstate(all="ignore"):
                r = (1.0 / np.sqrt(x)).astype(ftype)
                rr = r.astype(f64)
                live = np.isfinite(r) & (x > 0) & np.isfinite(x)
                if ftype is f64:
                    side = _by_fractions(_fraction_rsq_side, f64, NEAREST,
                                         np.where(live, rr, 1.0), np.where(live, x, 1.0))
                else:
                    p, pe = _two_product(rr * rr, x)
                    side = np.sign((p - 1.0) + pe)
                    tiny = live & ~_in_range(rr * rr, x)
                    if tiny.any():
                        exact = _by_fractions(_fraction_rsq_side, f64, NEAREST,
                                              np.where(tiny, rr, 1.0), np.where(tiny, x, 1.0))
                        side = np.where(tiny, exact, side)
                r = _adjust(r, live & (side > 0), live & (side < 0), np.ones((), bool), direction)
            return np.asarray(r, ftype)
        return rsq
    return make


def _fraction_rsq_side(r: Fraction, x: Fraction) -> Fraction:
    return Fraction((r * r * x > 1) - (r * r * x < 1))


def _directed_div_scale(ftype):
    """V_DIV_SCALE: the operand scaled by 2**+-64 (f32) / 2**+-128 (f64), exact unless the
    scaled value is subnormal, where it rounds in the mode's direction."""
    def make(direction: int):
        from hsapy.sim.isa import alu_float

        base = alu_float._div_scale(ftype)

        def div_scale(s0, s1, s2):
            out, vcc = base(s0, s1, s2)
            s0 = np.broadcast_to(np.asarray(s0, ftype), out.shape)
            scaled = np.isfinite(s0) & (s0 != 0) & (out != s0) & ~np.isnan(out)
            if not scaled.any():
                return out, vcc
            with np.errstate(all="ignore"):
                k = np.where(np.abs(out.astype(f64)) > np.abs(s0.astype(f64)), 1, -1) \
                    * (64 if ftype is f32 else 128)
                if ftype is f64:
                    exact = _by_fractions(lambda u, v: u * Fraction(2) ** int(v), f64, direction,
                                          np.where(scaled, s0, 1.0), k.astype(f64))
                else:
                    exact = round_exact(np.ldexp(s0.astype(f64), k), np.zeros((), f64), ftype,
                                        direction)
            return np.where(scaled, exact, out).astype(ftype), vcc
        return div_scale
    return make


def _directed_div_fmas(ftype):
    """V_DIV_FMAS: fma(a, b, c), scaled by 2**+-64 (f32) / 2**+-128 (f64) in lanes with VCC;
    the exact value rounded once in the mode's direction."""
    def make(direction: int):
        bias = 127 if ftype is f32 else 1023
        scale = 64 if ftype is f32 else 128

        def div_fmas(a, b, c, vcc):
            from hsapy.sim.isa import alu_float

            x, y, z = (np.asarray(v, f64) for v in (a, b, c))
            shape = np.broadcast_shapes(x.shape, y.shape, z.shape, np.shape(vcc))
            x, y, z = (np.broadcast_to(v, shape) for v in (x, y, z))
            exp_c = alu_float._exp_of(np.asarray(z.astype(ftype)))
            k = np.where(np.broadcast_to(vcc, shape), np.where(exp_c > bias, scale, -scale), 0)
            if ftype is f64:
                r = _by_fractions(lambda u, v, w, j: (u * v + w) * Fraction(2) ** int(j), f64,
                                  direction, x, y, z, k.astype(f64))
                with np.errstate(all="ignore"):
                    r = np.where(_finite(x, y, z), r, x * y + z)
                return r.astype(f64)
            with np.errstate(all="ignore"):
                p = x * y                                   # exact
                s, e = _two_sum(p, z)
                e = np.where(np.isfinite(s), e, 0.0)
                k32 = k.astype(np.int32)
                r = round_exact(np.ldexp(s, k32), np.ldexp(e, k32), ftype, direction)
            return _zero_sign(r, p, z, direction)
        return div_fmas
    return make


def _directed_div_fixup(ftype):
    """V_DIV_FIXUP: exact except where the scaled quotient over- or underflowed, which takes
    the exact quotient (rounded in the mode's direction)."""
    def make(direction: int):
        from hsapy.sim.isa import alu_float

        base = alu_float._div_fixup(ftype)
        div = _directed_div(ftype)(direction)

        def div_fixup(q, den, num):
            out = base(q, den, num)
            q = np.broadcast_to(np.asarray(q, ftype), out.shape)
            den = np.broadcast_to(np.asarray(den, ftype), out.shape)
            num = np.broadcast_to(np.asarray(num, ftype), out.shape)
            lost = _finite(num, den) & (num != 0) & (den != 0) & ~np.isfinite(q)
            if lost.any():
                out = np.where(lost, div(num, den), out).astype(ftype)
            return out
        return div_fixup
    return make


DIRECTED: dict[str, Callable[[int], Callable]] = {}
for _t, _ft in (("f16", f16), ("f32", f32), ("f64", f64)):
    DIRECTED.update({
        f"v_add_{_t}": _directed_add(_ft),
        f"v_sub_{_t}": _directed_add(_ft, negate_b=True),
        f"v_subrev_{_t}": _directed_add(_ft, negate_b=True, reverse=True),
        f"v_mul_{_t}": _directed_mul(_ft),
        f"v_fma_{_t}": _directed_fma(_ft),
        f"v_fmac_{_t}": _directed_fma(_ft),
        f"v_fmaak_{_t}": _directed_fma(_ft),
        f"v_fmamk_{_t}": _directed_fma(_ft),
        f"v_rcp_{_t}": _directed_rcp(_ft),
        f"v_sqrt_{_t}": _directed_sqrt(_ft),
        f"v_fract_{_t}": _directed_fract(_ft),
        f"v_ldexp_{_t}": _directed_ldexp(_ft),
        f"v_rsq_{_t}": _directed_rsq(_ft),
        f"v_div_fixup_{_t}": _directed_div_fixup(_ft),
    })
for _t, _ft in (("f32", f32), ("f64", f64)):
    DIRECTED.update({
        f"v_div_scale_{_t}": _directed_div_scale(_ft),
        f"v_div_fmas_{_t}": _directed_div_fmas(_ft),
    })
DIRECTED.update({
    "v_fma_mix_f32": _directed_fma(f32),         # sources f32 or f16, converted exactly
    "v_fma_mixlo_f16": _directed_fma(f16),
    "v_fma_mixhi_f16": _directed_fma(f16),
    "v_mad_mix_f32": _directed_mad_mix(f32),
    "v_mad_mixlo_f16": _directed_mad_mix(f16),
    "v_mad_mixhi_f16": _directed_mad_mix(f16),
    "v_mad_f32": _directed_mad(f32),
    "v_mac_f32": _directed_mad(f32),
    "v_cvt_f32_f64": _directed_convert(f32),
    "v_cvt_f16_f32": _directed_convert(f16),
    "v_cvt_f32_i32": _directed_convert(f32),
    "v_cvt_f32_u32": _directed_convert(f32),
    "v_cvt_f16_i16": _directed_convert(f16),
    "v_cvt_f16_u16": _directed_convert(f16),
    "s_add_f32": _directed_add(f32),
    "s_sub_f32": _directed_add(f32, negate_b=True),
    "s_mul_f32": _directed_mul(f32),
    "s_fmac_f32": _directed_fma(f32),
    "s_fmaak_f32": _directed_fma(f32),
    "s_fmamk_f32": _directed_fma(f32),
    "s_cvt_f32_i32": _directed_convert(f32),
    "s_cvt_f32_u32": _directed_convert(f32),
})
