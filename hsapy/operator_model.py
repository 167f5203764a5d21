"""The operator suite's model: the types its table is written in (operators, variants,
dispatches, tolerances), sizes as text, the problem one run solves, the check of a run's outputs
against the FP64 reference, and where the HIP sources and prebuilt code objects are.

hsapy.operators holds the suite itself, written in these types, and re-exports every name here;
import from ``hsapy.operators``. Test hygiene the suite follows: outputs are NaN-filled before
every run (atomic accumulators start at 0), references are FP64, and checks cover the whole
array (:func:`check_outputs` fails on any NaN or infinity).
"""
from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hsapy.errors import HsapyValueError

__all__ = [
    "Size",
    "Arg",
    "Device",
    "Dispatch",
    "ProblemBuffer",
    "Problem",
    "Tolerance",
    "CheckResult",
    "Published",
    "Variant",
    "Operator",
    "sim_sizes_for",
    "parse_size",
    "size_label",
    "input_seed",
    "nan_filled",
    "make_problem",
    "check_outputs",
    "kernels_dir",
    "source_path",
    "prebuilt_path",
    "PREBUILT_TARGETS",
]

Size = tuple[int, ...]
Scalar = np.uint32 | np.float32
Arg = str | np.uint32 | np.float32   # a buffer name or a scalar kernel argument

PREBUILT_TARGETS: tuple[str, ...] = ("gfx942", "gfx1201", "gfx1100", "gfx90a")


# ---------------------------------------------------------------------------------------------
# Data types of the tables

@dataclass(frozen=True)
class Device:
    """What launch geometry depends on: the target's wave size and compute-unit count."""

    target: str
    wavefront_size: int
    compute_units: int


@dataclass(frozen=True)
class Dispatch:
    """One kernel launch: ``blocks`` workgroups of ``block`` work-items, arguments by name."""

    kernel: str
    blocks: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[Arg, ...]
    dynamic_lds: int = 0

    @property
    def grid(self) -> tuple[int, int, int]:
        """HSA grid size in work-items (blocks times block, per dimension)."""
        return tuple(b * w for b, w in zip(self.blocks, self.block))  # type: ignore[return-value]

    @property
    def dims(self) -> int:
        """Number of grid dimensions the packet declares (1, 2 or 3)."""
        if self.blocks[2] > 1 or self.block[2] > 1:
            return 3
        if self.blocks[1] > 1 or self.block[1] > 1:
            return 2
        return 1


@dataclass(frozen=True)
class ProblemBuffer:
    """A device buffer of a problem: its initial contents and whether it is checked."""

    name: str
    data: np.ndarray          # float32 initial contents (inputs, or NaN / zero fill)
    is_input: bool


@dataclass
class Problem:
    """One operator at one size with one kind of input: buffers and FP64 expectations."""

    operator: str
    size: Size
    inputs_kind: str
    buffers: dict[str, ProblemBuffer]
    reference: dict[str, np.ndarray]   # FP64 expected values, by output buffer name

    @property
    def label(self) -> str:
        """The size as the tutorial writes it ("16777216", "4096x1024")."""
        return size_label(self.size)


@dataclass(frozen=True)
class Tolerance:
    """|got - ref| <= atol + rtol*|ref| for every element; optional FP64 row-sum check."""

    atol: float
    rtol: float = 0.0
    row_sum_atol: float | None = None    # softmax: |sum(row) - 1| <= this, in FP64

    def describe(self) -> str:
        """The rule as text, e.g. ``|err| <= 1e-4 + 1e-4*|ref|``."""
        if self.atol == 0 and self.rtol == 0:
            text = "exact"
        elif self.rtol == 0:
            text = f"|err| <= {self.atol:g}"
        else:
            text = f"|err| <= {self.atol:g} + {self.rtol:g}*|ref|"
        if self.row_sum_atol is not None:
            text += f", |row sum - 1| <= {self.row_sum_atol:g}"
        return text


@dataclass(frozen=True)
class CheckResult:
    """Outcome of comparing a run's outputs with the FP64 reference.

    ``max_err`` is the error of the element closest to (or furthest over) its bound and
    ``tolerance`` is that element's bound, so ``ok`` is ``max_err <= tolerance`` and everything
    finite. ``max_err`` is ``inf`` when an output holds NaN or infinity.
    """

    ok: bool
    max_err: float
    tolerance: float
    worst: str               # where: "out[123]" or "row sum 7"
    nonfinite: int           # count of NaN/inf elements in checked outputs


@dataclass(frozen=True)
class Published:
    """A figure the tutorial measured on an RX 9070 XT (gfx1201) at the operator's main size."""

    time_us: float
    note: str = ""


@dataclass(frozen=True)
class Variant:
    """One variant of an operator: its kernels and how to launch them for a size."""

    operator: str
    name: str
    kernels: tuple[str, ...]
    plan: Callable[[Size, Device], list[Dispatch]]
    published: Published | None = None
    zero_init: tuple[str, ...] = ()      # accumulators that must start at 0 instead of NaN
    expected: Callable[[Problem, Size, Device], dict[str, np.ndarray]] | None = None
    description: str = ""
    # On the simulator: this variant's own reduced sizes, for a kernel whose simulated cost grows
    # much faster than its size (every work-item contending for one address). They replace the
    # operator's reduced sizes, and edge sizes above the largest of them (see sim_sizes_for).
    sim_sizes: tuple[Size, ...] | None = None


def sim_sizes_for(op: Operator, variant: Variant, sizes: tuple[Size, ...]) -> tuple[Size, ...]:
    """``sizes`` as the simulator runs them for ``variant`` (unchanged without variant sizes)."""
    if not variant.sim_sizes:
        return sizes
    largest = max(variant.sim_sizes)
    kept = [s for s in sizes if s not in op.sim_sizes and s <= largest]
    unique: dict[Size, None] = {}
    for size in (*kept, *variant.sim_sizes):
        unique.setdefault(size, None)
    return tuple(unique)


@dataclass(frozen=True)
class Operator:
    """An operator of the suite: sizes, inputs, reference, tolerance, work and its variants."""

    name: str
    source: str                          # file in kernels/
    title: str
    size_names: tuple[str, ...]
    main_size: Size
    extra_sizes: tuple[Size, ...]
    edge_sizes: tuple[Size, ...]
    sim_sizes: tuple[Size, ...]          # reduced stand-ins for main/extra sizes on the simulator
    inputs_kinds: tuple[str, ...]
    make_buffers: Callable[[Size, str, np.random.Generator], dict[str, np.ndarray]]
    outputs: Callable[[Size], dict[str, tuple[int, ...]]]
    reference: Callable[[dict[str, np.ndarray], Size], dict[str, np.ndarray]]
    tolerance: Tolerance
    metric: str                          # "GB/s" or "TFLOP/s"
    work: Callable[[Size], float]        # bytes (GB/s) or flops (TFLOP/s) of one run
    variants: tuple[Variant, ...] = field(default_factory=tuple)
    llvmlite_kernels: bool = False       # also built through asm/ (the llvmlite route)

    def variant(self, name: str) -> Variant:
        """The variant called ``name``; raises HsapyValueError naming the valid ones."""
        for variant in self.variants:
            if variant.name == name:
                return variant
        names = ", ".join(v.name for v in self.variants)
        raise HsapyValueError(f"operator {self.name!r} has no variant {name!r}; "
                              f"choose one of: {names}")

    @property
    def kernel_names(self) -> tuple[str, ...]:
        """Every kernel any variant launches, in first-use order."""
        seen: dict[str, None] = {}
        for variant in self.variants:
            for kernel in variant.kernels:
                seen.setdefault(kernel, None)
        return tuple(seen)

    def sizes(self, which: str, simulated: bool) -> tuple[Size, ...]:
        """Sizes for ``which`` in ("main", "edge", "all", "default").

        On the simulator "main" means the reduced sizes; the edge sizes are always the real ones.
        "default" is main + extra + edge on hardware and reduced + edge on the simulator.
        """
        mains = self.sim_sizes if simulated else (self.main_size,)
        extras = () if simulated else self.extra_sizes
        if which == "main":
            chosen: tuple[Size, ...] = mains
        elif which == "edge":
            chosen = self.edge_sizes
        elif which in ("all", "default"):
            chosen = mains + extras + self.edge_sizes
        else:
            raise HsapyValueError(f"unknown size set {which!r}; use main, edge or all")
        unique: dict[Size, None] = {}
        for size in chosen:
            unique.setdefault(size, None)
        return tuple(unique)


# ---------------------------------------------------------------------------------------------
# Sizes and inputs

def size_label(size: Size) -> str:
    """A size as text: ``(4096, 1024)`` -> ``"4096x1024"``."""
    return "x".join(str(n) for n in size)


def parse_size(text: str, op: Operator) -> Size:
    """Parse ``"4096x1024"`` (also ``16M``, ``64K``, ``1024^3``) into a size tuple for ``op``."""
    cleaned = text.strip().lower().replace("×", "x").replace(",", "").replace("_", "")
    if "^" in cleaned:
        base, _, power = cleaned.partition("^")
        # a power is a count of dimensions: at most the operator's (a huge one would build a
        # list that long before the count is checked)
        count = int(power) if power.isascii() and power.isdigit() and len(power) < 10 else -1
        parts = [base] * min(count, len(op.size_names) + 1) if count >= 0 else ["?"]
    else:
        parts = cleaned.split("x")
    numbers = []
    for part in parts:
        scale = 1
        if part.endswith("k"):
            scale, part = 1024, part[:-1]
        elif part.endswith("m"):
            scale, part = 1024 * 1024, part[:-1]
        if not (part.isascii() and part.isdigit()):     # ('²'.isdigit() holds, int() fails)
            raise HsapyValueError(f"cannot read size {text!r} for {op.name}: expected "
                                  f"{'x'.join(op.size_names)}, e.g. {size_label(op.main_size)}")
        numbers.append(int(part) * scale)
        if numbers[-1] >= 1 << 32:
            raise HsapyValueError(f"size {text!r} is too large for {op.name}: each of "
                                  f"{'x'.join(op.size_names)} is a 32-bit index of the kernels "
                                  f"(below {1 << 32})")
    if len(numbers) != len(op.size_names) or min(numbers) < 1:
        raise HsapyValueError(f"size {text!r} does not fit {op.name}: expected "
                              f"{len(op.size_names)} positive numbers "
                              f"{'x'.join(op.size_names)}, e.g. {size_label(op.main_size)}")
    return tuple(numbers)


def input_seed(*parts: object) -> int:
    """The random seed of a problem's inputs: the same operator, size and kind, the same data."""
    return zlib.crc32(repr(parts).encode())


def nan_filled(shape: tuple[int, ...]) -> np.ndarray:
    """An output's fill before a run: NaN, so that an element no kernel wrote fails the check."""
    return np.full(shape, np.nan, dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# Problems and checks

def make_problem(op: Operator, variant: Variant, size: Size, inputs_kind: str,
                 device: Device) -> Problem:
    """Inputs (deterministic per operator, size and kind), NaN-filled outputs, FP64 reference."""
    if inputs_kind not in op.inputs_kinds:
        raise HsapyValueError(f"{op.name} has no input kind {inputs_kind!r}; choose one of: "
                              f"{', '.join(op.inputs_kinds)}")
    rng = np.random.default_rng(input_seed(op.name, size, inputs_kind))
    inputs = op.make_buffers(size, inputs_kind, rng)
    buffers = {name: ProblemBuffer(name, data, True) for name, data in inputs.items()}
    for name, shape in op.outputs(size).items():
        fill = np.zeros(shape, np.float32) if name in variant.zero_init else nan_filled(shape)
        buffers[name] = ProblemBuffer(name, fill, False)
    problem = Problem(op.name, size, inputs_kind, buffers, op.reference(inputs, size))
    if variant.expected is not None:
        problem.reference.update(variant.expected(problem, size, device))
    # A variant only checks the buffers its kernels write (serial softmax: y, not P).
    written = {arg for d in variant.plan(size, device) for arg in d.args if isinstance(arg, str)}
    problem.reference = {k: v for k, v in problem.reference.items() if k in written}
    return problem


def check_outputs(outputs: dict[str, np.ndarray], reference: dict[str, np.ndarray],
                  tolerance: Tolerance) -> CheckResult:
    """Compare every element of every referenced output; NaN or inf anywhere fails."""
    worst_ratio = -1.0
    worst = CheckResult(True, 0.0, tolerance.atol, "", 0)
    nonfinite = 0
    for name, expected in reference.items():
        got = np.asarray(outputs[name], dtype=np.float64).reshape(-1)[: expected.size]
        expected = expected.reshape(-1)
        bad = ~np.isfinite(got)
        if bad.any():
            nonfinite += int(bad.sum())
            where = int(np.argmax(bad))
            worst_ratio = math.inf
            worst = CheckResult(False, math.inf, tolerance.atol, f"{name}[{where}]", 0)
            continue
        err = np.abs(got - expected)
        bound = tolerance.atol + tolerance.rtol * np.abs(expected)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(bound > 0, err / np.where(bound > 0, bound, 1.0),
                             np.where(err > 0, math.inf, 0.0))
        i = int(np.argmax(ratio)) if ratio.size else 0
        if ratio.size and ratio[i] > worst_ratio:
            worst_ratio = float(ratio[i])
            worst = CheckResult(bool(err[i] <= bound[i]), float(err[i]), float(bound[i]),
                                f"{name}[{i}]", 0)
        if tolerance.row_sum_atol is not None and got.size:
            rows = np.asarray(outputs[name], dtype=np.float64)
            sums_err = np.abs(rows.reshape(rows.shape[0], -1).sum(axis=1) - 1.0)
            r = int(np.argmax(sums_err))
            ratio_r = sums_err[r] / tolerance.row_sum_atol
            if ratio_r > worst_ratio:
                worst_ratio = float(ratio_r)
                worst = CheckResult(bool(sums_err[r] <= tolerance.row_sum_atol),
                                    float(sums_err[r]), tolerance.row_sum_atol,
                                    f"{name} row sum {r}", 0)
    ok = nonfinite == 0 and worst.max_err <= worst.tolerance
    return CheckResult(ok, worst.max_err, worst.tolerance, worst.worst, nonfinite)


# ---------------------------------------------------------------------------------------------
# Where the sources and prebuilt code objects are

def kernels_dir() -> Path:
    """The directory of the HIP sources: ``hsapy/kernels`` installed, ``kernels/`` in a checkout."""
    try:
        import hsapy.kernels as package  # installed through the package_dir mapping

        return Path(package.__file__).resolve().parent
    except ImportError:
        return Path(__file__).resolve().parent.parent / "kernels"


def source_path(op: Operator) -> Path:
    """The HIP source of ``op``."""
    return kernels_dir() / op.source


def prebuilt_path(op: Operator, target: str) -> Path:
    """Where kernels/build.py writes the code object of ``op`` for ``target``."""
    return kernels_dir() / "prebuilt" / f"{op.name}-{target}.hsaco"
