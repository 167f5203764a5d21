"""Kernel argument (kernarg) layouts from code-object metadata, and packing plans.

``KernargLayout.from_kernel(info)`` turns a kernel's ``.args`` metadata into a plan computed
once: one slot per explicit argument (offset, size, a struct format and, where needed, a
converter) and the list of hidden arguments. ``layout.packer(grid, workgroup, dynamic_lds,
queue_ptr)`` then fixes the dispatch geometry: it pre-packs every hidden argument into a byte
template and returns a :class:`Packer`, whose ``pack_into(buffer, offset, *args)`` writes the
whole kernarg segment with two ``struct`` calls. Nothing is type-sniffed on the fast path: a
value the slot's format does not take falls to a slow path that either converts what is
unambiguous (a buffer object's ``.address``, a numpy scalar, bytes of exactly the slot's size, or
another library's array of memory the kernel's runtime allocated: hsapy.interop) or raises an
error that names the kernel, the argument, what it expects, and the signature.

Hidden arguments are filled as HIP's runtime fills them (LLVM AMDGPUUsage "Code Object V5
Metadata", hidden kernel arguments; docs/hsa-abi.md): block counts (grid /
workgroup, floor), group sizes, remainders (grid % workgroup), grid dimensions, dynamic LDS size,
global offsets 0, the queue pointer when the runtime gives one, every other kind 0. Code object
v4's hidden kinds (global offsets, printf/hostcall buffers, default queue, completion action,
multigrid sync) are covered by the same table.

Argument types: the metadata gives every argument's size and kind but, for HIP and LLVM IR,
not whether a 4-byte value is an ``int`` or a ``float``. A slot's type comes from, in order,
``types=`` given to :meth:`KernargLayout.from_kernel` (or :meth:`KernargLayout.with_types`),
the metadata's ``.type_name`` when present (OpenCL), else it is *untyped*: it takes an int (or
an exact-size numpy scalar / bytes) and refuses a Python float rather than guess its encoding.
"""
from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hsapy._checks import check_int, check_items
from hsapy.codeobject import ArgInfo, KernelInfo
from hsapy.errors import HsapyTypeError, HsapyValueError
from hsapy.interop import BufferView, pointer_argument
from hsapy.memory import Buffer

__all__ = [
    "KernargLayout",
    "ArgSlot",
    "HiddenSlot",
    "Packer",
    "KernelArgumentError",
    "KernelArgumentValueError",
    "HIDDEN_KINDS",
    "SCALAR_TYPES",
    "DispatchGeometry",
    "normalize_dims",
]


_UINT32_MAX = (1 << 32) - 1
_UINT64_MAX = (1 << 64) - 1


class KernelArgumentError(HsapyTypeError):
    """Wrong number or type of kernel arguments (names the kernel, argument and signature)."""


class KernelArgumentValueError(HsapyValueError):
    """A kernel argument or dispatch size out of range for its slot."""


# ---------------------------------------------------------------------------------------------
# Types (data): name -> (size, struct format, is_float). Aliases map C spellings to these.

SCALAR_TYPES: dict[str, tuple[int, str, bool]] = {
    "i8": (1, "b", False), "u8": (1, "B", False),
    "i16": (2, "h", False), "u16": (2, "H", False),
    "i32": (4, "i", False), "u32": (4, "I", False),
    "i64": (8, "q", False), "u64": (8, "Q", False),
    "f16": (2, "e", True), "f32": (4, "f", True), "f64": (8, "d", True),
}

TYPE_ALIASES: dict[str, str] = {
    "char": "i8", "signed char": "i8", "int8_t": "i8", "unsigned char": "u8", "uchar": "u8",
    "uint8_t": "u8", "bool": "u8", "_Bool": "u8",
    "short": "i16", "int16_t": "i16", "unsigned short": "u16", "ushort": "u16", "uint16_t": "u16",
    "int": "i32", "int32_t": "i32", "unsigned": "u32", "unsigned int": "u32", "uint": "u32",
    "uint32_t": "u32",
    "long": "i64", "long long": "i64", "int64_t": "i64", "ptrdiff_t": "i64",
    "unsigned long": "u64", "unsigned long long": "u64", "ulong": "u64", "uint64_t": "u64",
    "size_t": "u64",
    "half": "f16", "_Float16": "f16", "__fp16": "f16", "float16": "f16",
    "float": "f32", "float32": "f32", "double": "f64", "float64": "f64",
    "int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16", "int32": "i32",
    "uint32": "u32", "int64": "i64", "uint64": "u64",
}

POINTER_TYPES = ("ptr", "pointer", "*")
BYTES_TYPES = ("bytes", "struct")

# Explicit value kinds passed as an 8-byte device address.
POINTER_KINDS = ("global_buffer", "image", "sampler", "pipe", "queue")


@dataclass(frozen=True)
class DispatchGeometry:
    """The dispatch geometry hidden arguments are computed from (3-tuples)."""

    grid: tuple[int, int, int]
    workgroup: tuple[int, int, int]
    dims: int
    dynamic_lds: int = 0
    queue_ptr: int = 0
    # High 32 bits of the LDS and scratch flat-aperture bases, from the queue's amd_queue_t
    # (group_/private_segment_aperture_base_hi); only gfx8 code reads them (AMDGPUUsage, code
    # object V5 hidden arguments), gfx9+ has src_shared_base / src_private_base.
    apertures: tuple[int, int] = (0, 0)


def _axis(values: Sequence[int], axis: int) -> int:
    return values[axis]


# hidden_* kind -> value from the dispatch. Kinds not listed are 0 (AMDGPUUsage lists what each
# one is for; the runtime-service ones -- printf, hostcall, heap, default queue, completion
# action, multigrid sync -- stay 0: hsapy provides none of those services).
HIDDEN_KINDS: dict[str, Callable[[DispatchGeometry], int]] = {
    "hidden_block_count_x": lambda d: d.grid[0] // d.workgroup[0],
    "hidden_block_count_y": lambda d: d.grid[1] // d.workgroup[1],
    "hidden_block_count_z": lambda d: d.grid[2] // d.workgroup[2],
    "hidden_group_size_x": lambda d: d.workgroup[0],
    "hidden_group_size_y": lambda d: d.workgroup[1],
    "hidden_group_size_z": lambda d: d.workgroup[2],
    "hidden_remainder_x": lambda d: d.grid[0] % d.workgroup[0],
    "hidden_remainder_y": lambda d: d.grid[1] % d.workgroup[1],
    "hidden_remainder_z": lambda d: d.grid[2] % d.workgroup[2],
    "hidden_grid_dims": lambda d: d.dims,
    "hidden_dynamic_lds_size": lambda d: d.dynamic_lds,
    "hidden_queue_ptr": lambda d: d.queue_ptr,
    "hidden_shared_base": lambda d: d.apertures[0],
    "hidden_private_base": lambda d: d.apertures[1],
    "hidden_global_offset_x": lambda d: 0,
    "hidden_global_offset_y": lambda d: 0,
    "hidden_global_offset_z": lambda d: 0,
}

# Real kernels use a few hundred bytes (HIP caps explicit arguments at 4 KiB); a larger segment
# comes from corrupt metadata, and the packing template would be that large.
MAX_KERNARG_SIZE = 1 << 20

_UNSIGNED_FORMATS = {1: "B", 2: "H", 4: "I", 8: "Q"}
_SIGNED_FORMATS = {1: "b", 2: "h", 4: "i", 8: "q"}


def _exact_int(value: Any) -> int | None:
    """``value`` as an int when it is one exactly (an int or a numpy integer; never a bool, a
    float, a string or anything else that merely converts to an int), else None."""
    if value.__class__ is int:
        return value
    if isinstance(value, bool) or isinstance(value, np.bool_):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
        return int(value)             # a 0-d integer array: one size, not something to iterate
    return None


def _all_ints(values: tuple) -> bool:
    for v in values:
        if v.__class__ is not int:
            return False
    return True


def normalize_dims(value: int | Sequence[int], what: str) -> tuple[tuple[int, int, int], int]:
    """``1024`` / ``(1024,)`` / ``(64, 64)`` -> ((x, y, z), number of dimensions given).

    Sizes are ints (or numpy integers): a bool, a float or a string is refused, never read as
    a size ("256" is not three sizes, 256.7 is not 256)."""
    # exact class tests first: they are the dispatch path's common cases (mypy narrows only
    # through isinstance, hence the ignores)
    cls = value.__class__
    items: tuple[int, ...]
    if cls is int:
        items = (value,)  # type: ignore[assignment]
    elif cls is tuple and _all_ints(value):  # type: ignore[arg-type]
        items = value  # type: ignore[assignment]
    elif (single := _exact_int(value)) is not None:
        items = (single,)
    elif (isinstance(value, (str, bytes, bytearray)) or not hasattr(value, "__iter__")
          or getattr(value, "ndim", None) == 0):
        raise HsapyTypeError(f"{what} must be an int or 1 to 3 ints, not "
                             f"{type(value).__name__} {value!r:.40}")
    else:
        given = tuple(_exact_int(v) for v in value)
        items = tuple(v for v in given if v is not None)
        if len(items) != len(given):
            raise HsapyTypeError(f"{what} must be an int or 1 to 3 ints, not {value!r:.60}")
    if not 1 <= len(items) <= 3:
        raise HsapyValueError(f"{what} must have 1 to 3 dimensions, not {len(items)}: {value!r}")
    for v in items:
        if v <= 0:
            raise HsapyValueError(f"{what} sizes must be positive, got {value!r}")
    padded = items + (1,) * (3 - len(items))
    return (padded[0], padded[1], padded[2]), len(items)


# ---------------------------------------------------------------------------------------------
# Slots


@dataclass(frozen=True)
class ArgSlot:
    """One explicit argument: where it goes and how it is packed.

    ``category`` is "pointer" (8-byte address: an int or an object with ``.address``),
    "scalar" (``type`` from SCALAR_TYPES), "untyped" (an integer of ``size`` bytes, or exactly
    ``size`` raw bytes) or "bytes" (a struct passed by value: exactly ``size`` bytes).
    """

    index: int
    name: str
    offset: int
    size: int
    value_kind: str
    category: str
    type: str | None
    format: str
    arg: ArgInfo | None = None
    # declared as C's bool / _Bool: the one integer slot that takes Python bools
    is_bool: bool = False

    @property
    def scalar(self) -> tuple[int, str, bool]:
        """SCALAR_TYPES' (size, struct format, is float) of a "scalar" slot's type."""
        if self.type is None:
            raise KeyError(f"argument {self.name!r} is not a scalar")
        return SCALAR_TYPES[self.type]

    @property
    def label(self) -> str:
        """How the signature shows this argument's type."""
        if self.category == "pointer":
            return self.arg.type_name if self.arg is not None and self.arg.type_name else "ptr"
        if self.category == "scalar":
            return self.type or "?"
        if self.category == "bytes":
            return f"bytes[{self.size}]"
        return f"{self.size}-byte value"


@dataclass(frozen=True)
class HiddenSlot:
    """One hidden argument: kind, offset, size."""

    kind: str
    offset: int
    size: int

    def value(self, dispatch: DispatchGeometry) -> int:
        """The value this slot gets for ``dispatch`` (0 for kinds hsapy leaves empty)."""
        compute = HIDDEN_KINDS.get(self.kind)
        return compute(dispatch) if compute is not None else 0


def _type_key(spec: Any) -> str:
    """A declared type (string, numpy dtype or type) -> a SCALAR_TYPES key, 'ptr' or 'bytes'."""
    if spec is None:
        return "untyped"
    dtype_name = getattr(spec, "name", None)  # numpy dtype
    if dtype_name is None and isinstance(spec, type):
        dtype_name = getattr(spec, "__name__", None)  # numpy scalar type (numpy.float32)
    text = str(dtype_name if dtype_name is not None else spec).strip()
    text = text.replace("const ", "").replace("volatile ", "").replace("__restrict__", "").strip()
    if text.endswith("*") or text in POINTER_TYPES:
        return "ptr"
    if text in BYTES_TYPES:
        return "bytes"
    if text in SCALAR_TYPES:
        return text
    if text in TYPE_ALIASES:
        return TYPE_ALIASES[text]
    raise HsapyValueError(
        f"unknown argument type {spec!r}; use one of ptr, bytes, "
        f"{', '.join(SCALAR_TYPES)} or a C name such as float, int, unsigned char"
    )


def _make_slot(index: int, arg: ArgInfo, declared: Any, kernel: str) -> ArgSlot:
    name = arg.name or f"arg{index}"
    size = arg.size
    if arg.value_kind in POINTER_KINDS and size == 8:
        key = _type_key(declared) if declared is not None else "ptr"
        if key != "ptr":
            raise HsapyValueError(
                f"kernel {kernel}: argument {index} ({name}) is a {arg.value_kind} (a pointer), "
                f"not {declared!r}"
            )
        return ArgSlot(index, name, arg.offset, 8, arg.value_kind, "pointer", "ptr", "Q", arg)
    if declared is None and arg.type_name:
        try:
            key = _type_key(arg.type_name)
        except HsapyValueError:
            key = "untyped"  # vectors, structs, typedefs we do not know: by size below
        if key == "ptr":
            key = "untyped"   # a by_value pointer-typed value (e.g. a queue_t*): raw integer
    else:
        key = _type_key(declared)
    if key == "ptr":
        if size != 8:
            raise HsapyValueError(f"kernel {kernel}: argument {index} ({name}) is {size} bytes, "
                                  "too small for a pointer")
        return ArgSlot(index, name, arg.offset, 8, arg.value_kind, "pointer", "ptr", "Q", arg)
    if key in SCALAR_TYPES:
        scalar_size, fmt, _ = SCALAR_TYPES[key]
        if scalar_size != size:
            raise HsapyValueError(
                f"kernel {kernel}: argument {index} ({name}) is {size} bytes in the metadata, but "
                f"its declared type {key} is {scalar_size} bytes"
            )
        spelled = declared if declared is not None else arg.type_name
        is_bool = str(spelled).replace("const ", "").strip() in ("bool", "_Bool")
        return ArgSlot(index, name, arg.offset, size, arg.value_kind, "scalar", key, fmt, arg,
                       is_bool)
    if key == "untyped" and size in _SIGNED_FORMATS:
        return ArgSlot(index, name, arg.offset, size, arg.value_kind, "untyped", None,
                       _SIGNED_FORMATS[size], arg)
    return ArgSlot(index, name, arg.offset, size, arg.value_kind, "bytes", None, f"{size}s", arg)


# ---------------------------------------------------------------------------------------------
# Layout


class KernargLayout:
    """The kernarg segment of one kernel: explicit slots, hidden slots, size and alignment."""

    def __init__(self, kernel_name: str, size: int, align: int, slots: tuple[ArgSlot, ...],
                 hidden: tuple[HiddenSlot, ...], code_object_version: int,
                 info: KernelInfo | None = None, runtime: Any = None) -> None:
        self.kernel_name = kernel_name
        self.runtime = runtime      # whose allocations other libraries' arrays may point into
        self.size = size
        self.align = align
        self.slots = slots
        self.hidden = hidden
        self.code_object_version = code_object_version
        self.info = info
        self._explicit = _explicit_struct(slots)
        self._template = struct.Struct(f"<{size}s")
        # The explicit struct writes zero pad bytes over its gaps, which would clobber a hidden
        # argument placed among the explicit ones (LLVM always appends hidden arguments).
        for h in hidden:
            if h.size and h.offset < self._explicit.size:
                raise KernelArgumentValueError(
                    f"kernel {kernel_name}: hidden argument {h.kind} at offset {h.offset} lies "
                    f"among the explicit arguments (which end at {self._explicit.size}); hsapy "
                    "packs only layouts whose hidden arguments follow the explicit ones")

    @classmethod
    def from_kernel(cls, info: KernelInfo, types: Iterable[Any] | None = None,
                    runtime: Any = None) -> KernargLayout:
        """The layout of ``info``'s kernarg segment; ``types`` optionally declares each explicit
        argument's type ("ptr", "f32", "int", numpy.float32, "bytes", None = from metadata).
        With ``runtime``, a pointer argument also takes another library's array whose memory
        that runtime allocated (hsapy.interop.pointer_argument)."""
        explicit = [a for a in info.args if not a.is_hidden]
        declared = list(types) if types is not None else [None] * len(explicit)
        if len(declared) != len(explicit):
            raise HsapyValueError(
                f"kernel {info.name} has {len(explicit)} explicit arguments; {len(declared)} "
                "types were given"
            )
        slots = tuple(_make_slot(i, a, t, info.name)
                      for i, (a, t) in enumerate(zip(explicit, declared)))
        hidden = tuple(HiddenSlot(a.value_kind, a.offset, a.size)
                       for a in info.args if a.is_hidden)
        size = max(info.kernarg_segment_size, max((a.offset + a.size for a in info.args),
                                                  default=0))
        if size > MAX_KERNARG_SIZE:
            raise KernelArgumentValueError(
                f"kernel {info.name}: a {size}-byte kernarg segment is larger than hsapy packs "
                f"({MAX_KERNARG_SIZE} bytes); the code object's metadata is probably corrupt"
            )
        return cls(info.name, size, max(info.kernarg_segment_align, 1), slots, hidden,
                   info.code_object_version, info, runtime)

    def with_types(self, *types: Any) -> KernargLayout:
        """The same layout with declared explicit argument types (see :meth:`from_kernel`)."""
        if self.info is None:
            raise HsapyValueError("this layout was not built from kernel metadata")
        if len(types) == 1 and isinstance(types[0], (list, tuple)):
            types = tuple(types[0])
        return KernargLayout.from_kernel(self.info, types, self.runtime)

    # -- views ---------------------------------------------------------------------------

    @property
    def signature(self) -> str:
        """``name(a: ptr @0, n: i32 @24, ...)`` with offsets, for error messages and inspect."""
        inner = ", ".join(f"{s.name}: {s.label} @{s.offset}" for s in self.slots)
        return f"{self.kernel_name}({inner})"

    @property
    def hidden_kinds(self) -> tuple[str, ...]:
        """The hidden argument kinds, in offset order."""
        return tuple(h.kind for h in self.hidden)

    def rows(self) -> list[dict[str, Any]]:
        """Every argument (explicit and hidden) as a dict, in offset order (for `hsapy inspect`)."""
        rows: list[dict[str, Any]] = []
        for slot in self.slots:
            rows.append({"offset": slot.offset, "size": slot.size, "kind": slot.value_kind,
                         "name": slot.name, "type": slot.label, "hidden": False})
        for h in self.hidden:
            filled = "dispatch" if h.kind in HIDDEN_KINDS else "0"
            rows.append({"offset": h.offset, "size": h.size, "kind": h.kind, "name": "",
                         "type": filled, "hidden": True})
        return sorted(rows, key=lambda r: r["offset"])

    def __repr__(self) -> str:
        return f"<KernargLayout {self.signature}, {self.size} bytes, {len(self.hidden)} hidden>"

    # -- packing -------------------------------------------------------------------------

    def dispatch(self, grid: int | Sequence[int], workgroup: int | Sequence[int],
                 dynamic_lds: int = 0, queue_ptr: int = 0,
                 apertures: tuple[int, int] = (0, 0)) -> DispatchGeometry:
        """Normalize and check the geometry hidden arguments are computed from."""
        grid3, dims = normalize_dims(grid, "grid")
        workgroup3, wg_dims = normalize_dims(workgroup, "workgroup")
        dims = max(dims, wg_dims)
        if dynamic_lds.__class__ is not int or not 0 <= dynamic_lds <= _UINT32_MAX:
            try:
                dynamic_lds = check_int(dynamic_lds, "dynamic_lds (bytes of LDS)", 0, _UINT32_MAX)
            except HsapyTypeError as exc:
                raise KernelArgumentError(str(exc)) from None
            except HsapyValueError as exc:
                raise KernelArgumentValueError(f"dynamic LDS size: {exc}") from None
        queue_ptr = check_int(queue_ptr, "queue_ptr (an address)", 0, _UINT64_MAX)
        if isinstance(apertures, (str, bytes)) or not hasattr(apertures, "__len__") \
                or len(apertures) != 2:
            raise KernelArgumentError(f"apertures is (shared base, private base), two "
                                      f"addresses, not {apertures!r:.40}")
        bases = (check_int(apertures[0], "apertures[0] (an address)", 0, _UINT64_MAX),
                 check_int(apertures[1], "apertures[1] (an address)", 0, _UINT64_MAX))
        return DispatchGeometry(grid3, workgroup3, dims, dynamic_lds, queue_ptr, bases)

    def hidden_values(self, dispatch: DispatchGeometry) -> dict[str, int]:
        """kind -> value for every hidden argument of this kernel."""
        return {h.kind: h.value(dispatch) for h in self.hidden}

    def template(self, dispatch: DispatchGeometry) -> bytes:
        """The kernarg segment with every hidden argument filled and the explicit ones zero."""
        out = bytearray(self.size)
        for h in self.hidden:
            value = h.value(dispatch)
            if value < 0 or value >= 1 << (8 * h.size):
                raise KernelArgumentValueError(
                    f"kernel {self.kernel_name}: {h.kind} = {value} does not fit in {h.size} bytes "
                    f"(grid {dispatch.grid}, workgroup {dispatch.workgroup})"
                )
            out[h.offset:h.offset + h.size] = value.to_bytes(h.size, "little")
        return bytes(out)

    def packer(self, grid: int | Sequence[int], workgroup: int | Sequence[int],
               dynamic_lds: int = 0, queue_ptr: int = 0,
               apertures: tuple[int, int] = (0, 0)) -> Packer:
        """A :class:`Packer` for this geometry: ``packer(buffer, offset, *args)``. The dispatch
        path passes the queue's ``queue_ptr`` and ``apertures`` (``Queue.apertures``)."""
        return Packer(self, self.dispatch(grid, workgroup, dynamic_lds, queue_ptr, apertures))

    def pack(self, args: Sequence[Any], grid: int | Sequence[int],
             workgroup: int | Sequence[int], dynamic_lds: int = 0, queue_ptr: int = 0,
             apertures: tuple[int, int] = (0, 0)) -> bytes:
        """The packed kernarg segment as bytes (convenience; the fast path uses a Packer)."""
        try:
            args = check_items(args, f"kernel {self.kernel_name}: args is the list of the "
                                     "kernel's arguments")
        except HsapyTypeError as exc:
            raise KernelArgumentError(str(exc)) from None
        buffer = bytearray(self.size)
        self.packer(grid, workgroup, dynamic_lds, queue_ptr, apertures).pack_into(buffer, 0, *args)
        return bytes(buffer)

    # -- the slow path ---------------------------------------------------------------------

    def convert(self, args: Sequence[Any]) -> list[Any]:
        """Values ready for the explicit struct, or a KernelArgument(Value)Error naming the
        kernel, argument, expected type and the signature."""
        if len(args) != len(self.slots):
            raise self.count_error(len(args))
        return [self._convert_one(slot, value) for slot, value in zip(self.slots, args)]

    def count_error(self, given: int, missing: Sequence[str] = (),
                    call: str = "") -> KernelArgumentError:
        """The error for ``given`` arguments where the kernel takes ``len(slots)``: names the
        kernel, the count, the parameters ``missing`` (when known) and the signature (which
        names every parameter); ``call``
        (e.g. "PreparedDispatch(k).publish") starts the message."""
        text = f"kernel {self.kernel_name} takes {len(self.slots)} argument(s), {given} given"
        if missing:
            text += f" (missing {', '.join(missing)})"
        text = f"{call}: {text}" if call else text
        return KernelArgumentError(f"{text}; signature: {self.signature}")

    def _convert_one(self, slot: ArgSlot, value: Any) -> Any:
        where = (f"kernel {self.kernel_name}: argument {slot.index} ({slot.name}) expects "
                 f"{_expectation(slot)}")
        if slot.category == "pointer":
            owner = (value.runtime if isinstance(value, Buffer)
                     else value.buffer.runtime if isinstance(value, BufferView) else None)
            if owner is not None and self.runtime is not None and owner is not self.runtime:
                raise KernelArgumentValueError(
                    f"{where}, got a {type(value).__name__} of another Runtime: a kernel takes "
                    "memory its own runtime allocated (on the simulator each Runtime is a "
                    "machine of its own); allocate it from this runtime's pools, or copy the "
                    "data over")
            address = value if isinstance(value, int) else getattr(value, "address", None)
            if value is None:
                address = 0
            elif address is None and _numpy_scalar_kind(value) in ("i", "u"):
                address = int(value)          # address arithmetic done in numpy
            elif address is None:             # another library's array on hsapy's memory
                address, why = pointer_argument(value, self.runtime)
                if address is None:
                    raise KernelArgumentError(
                        f"{where}, got {type(value).__name__}: {why}; signature: "
                        f"{self.signature}")
            if not isinstance(address, int) or isinstance(address, bool):
                raise KernelArgumentError(
                    f"{where}, got {type(value).__name__}; signature: {self.signature}")
            if not 0 <= address < 1 << 64:
                raise KernelArgumentValueError(f"{where}, got address {address:#x}")
            return address
        if slot.category == "bytes":
            raw = _exact_bytes(value, slot.size)
            if raw is None:
                raise KernelArgumentError(
                    f"{where}, got {_describe(value)}; signature: {self.signature}")
            return raw
        if slot.category == "scalar":
            _, fmt, is_float = slot.scalar
            if is_float and ((isinstance(value, (int, float)) and not isinstance(value, bool))
                             or _numpy_scalar_kind(value) in ("i", "u", "f")):
                try:
                    number = float(value)
                    struct.pack("<" + fmt, number)   # f16/f32 overflow raises, inf/nan pack
                except (OverflowError, struct.error):
                    raise KernelArgumentValueError(
                        f"{where}, got {value!r:.40} (out of range for {slot.type})") from None
                return number
            if not is_float and _is_integer(value) and (slot.is_bool or not _is_bool(value)):
                integer = int(value)
                try:
                    struct.pack("<" + fmt, integer)
                except struct.error:
                    raise KernelArgumentValueError(
                        f"{where}, got {integer} (out of range)") from None
                return integer
            raw = (_exact_bytes(value, slot.size)
                   if hasattr(value, "dtype") and (slot.is_bool or not _is_bool(value)) else None)
            if raw is not None and _numpy_kind(value) == ("f" if is_float else "iu"):
                return struct.unpack("<" + fmt, raw)[0]
            raise KernelArgumentError(
                f"{where}, got {_describe(value)}; signature: {self.signature}")
        # untyped: an integer of `size` bytes (signed or unsigned range), or exact raw bytes
        if _is_integer(value) and not _is_bool(value):
            integer = int(value)
            bits = 8 * slot.size
            if not -(1 << (bits - 1)) <= integer < 1 << bits:
                raise KernelArgumentValueError(f"{where}, got {integer} (out of range)")
            if integer >= 1 << (bits - 1):
                integer -= 1 << bits   # the slot's format is signed: same bits
            return integer
        raw = (_exact_bytes(value, slot.size)
               if type(value) is not float and not _is_bool(value) else None)
        if raw is not None:
            return struct.unpack("<" + slot.format, raw)[0]
        hint = ""
        if type(value) is float:
            hint = (f" (the metadata does not say whether this {slot.size}-byte value is an "
                    "integer or a float: pass numpy.float32(x) / numpy.float64(x) for a float, or "
                    f"declare the types, e.g. layout.with_types(...) / "
                    f"KernargLayout.from_kernel(info, types=[...]))")
        raise KernelArgumentError(
            f"{where}, got {_describe(value)}{hint}; signature: {self.signature}")


def _expectation(slot: ArgSlot) -> str:
    if slot.category == "pointer":
        return ("a device address (a Buffer, an int, a numpy integer, or an array of hsapy "
                "memory exposing __dlpack__, __array_interface__ or data_ptr())")
    if slot.category == "bytes":
        return f"exactly {slot.size} bytes (a struct passed by value: bytes or a numpy record)"
    if slot.category == "scalar":
        return f"{slot.type}"
    return f"a {slot.size}-byte integer or {slot.size} raw bytes"


def _is_bool(value: Any) -> bool:
    """A Python or numpy bool: refused where an integer is expected (True is not 1 there),
    except by slots declared as C's bool."""
    return isinstance(value, (bool, np.bool_)) or (
        getattr(value, "ndim", None) == 0 and getattr(getattr(value, "dtype", None), "kind",
                                                      None) == "b")


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return True
    return _numpy_kind(value) == "iu" and getattr(value, "ndim", 1) == 0


def _numpy_scalar_kind(value: Any) -> str | None:
    """The dtype kind of a numpy scalar (or 0-d array) -- "i", "u", "f", "b" (bool), ... --
    else None."""
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    return kind if getattr(value, "ndim", 1) == 0 else None


def _numpy_kind(value: Any) -> str | None:
    dtype = getattr(value, "dtype", None)
    kind = getattr(dtype, "kind", None)
    if kind in ("i", "u", "b"):
        return "iu"
    if kind == "f":
        return "f"
    return kind


def _exact_bytes(value: Any, size: int) -> bytes | None:
    """Raw bytes of ``value`` when it is bytes-like (or a numpy scalar/array) of exactly size."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
    elif hasattr(value, "tobytes"):
        raw = value.tobytes()
    else:
        return None
    return raw if len(raw) == size else None


def _describe(value: Any) -> str:
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        return f"{type(value).__name__} of dtype {dtype}"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"{len(bytes(value))} bytes"
    return f"{type(value).__name__} {value!r:.40}"


def _explicit_struct(slots: tuple[ArgSlot, ...]) -> struct.Struct:
    """One little-endian Struct writing every explicit slot at its offset (gaps skipped).

    Gaps and overlaps are laid out with pad bytes; pad bytes are written as zero, which is what
    the template already holds there.
    """
    parts = ["<"]
    position = 0
    for slot in sorted(slots, key=lambda s: s.offset):
        if slot.offset < position:
            raise HsapyValueError(f"overlapping kernel arguments at offset {slot.offset}")
        if slot.offset > position:
            parts.append(f"{slot.offset - position}x")
        parts.append(slot.format)
        position = slot.offset + slot.size
    return struct.Struct("".join(parts))


_FAST_FLOAT_CLASSES = (float, int)
_FAST_INT_CLASSES = (int,)
_FAST_BOOL_SLOT_CLASSES = (int, bool)


class Packer:
    """Writes a kernel's kernarg segment for one dispatch geometry.

    ``packer(buffer, offset, *args)`` (or ``pack_into``) writes ``layout.size`` bytes at
    ``buffer[offset:]``: the pre-packed hidden template, then the explicit arguments with one
    ``struct.pack_into``. ``buffer`` is anything writable with the buffer protocol (bytearray,
    memoryview, ``ffi.buffer``, a numpy uint8 array).
    """

    __slots__ = ("layout", "dispatch", "template", "_template_struct", "_explicit",
                 "_pointer_slots", "_scalar_slots", "_bytes_slots", "_count", "size", "_runtime",
                 "explicit_count")

    def __init__(self, layout: KernargLayout, dispatch: DispatchGeometry) -> None:
        self.layout = layout
        self.dispatch = dispatch
        self.template = layout.template(dispatch)
        self.size = layout.size
        self._template_struct = layout._template
        self._explicit = layout._explicit
        self._runtime = layout.runtime
        self._pointer_slots = tuple(s.index for s in layout.slots if s.category == "pointer")
        # struct packs anything with __float__ into a float slot (bools, numpy integers,
        # Decimal): the fast path takes only int and float there and leaves the rest to the
        # checked path, so both paths accept and refuse the same values.
        # It also packs a bool into an integer slot as 1, where only C bool slots take bools.
        # So each scalar slot lists the classes the fast path packs as they are: int and float
        # for floats, int for integers (bool and int for a C bool); anything else -- numpy
        # numbers, bools elsewhere -- goes to the checked path.
        self._scalar_slots = tuple(
            (s.index, _FAST_FLOAT_CLASSES if s.category == "scalar" and s.scalar[2]
             else _FAST_BOOL_SLOT_CLASSES if s.is_bool else _FAST_INT_CLASSES)
            for s in layout.slots if s.category in ("scalar", "untyped"))
        # struct's "Ns" pads or truncates silently: by-value structs are always size-checked.
        self._bytes_slots = tuple((s.index, s.size) for s in layout.slots if s.category == "bytes")
        self._count = self.explicit_count = len(layout.slots)
        if sorted(layout.slots, key=lambda s: s.offset) != list(layout.slots):
            raise HsapyValueError("explicit kernel arguments are not in offset order")

    def pack_into(self, buffer: Any, offset: int, *args: Any) -> None:
        """Write the kernarg segment for ``args`` into ``buffer`` at ``offset``."""
        self._template_struct.pack_into(buffer, offset, self.template)
        self.pack_explicit_into(buffer, offset, *args)

    def pack_explicit_into(self, buffer: Any, offset: int, *args: Any) -> None:
        """Write only the explicit arguments (the hidden template is already at ``offset``)."""
        if not args and not self._count:
            return
        if len(args) == self._count:
            # The fast path: values of the types the packing struct takes exactly as the
            # checked path would (ints, floats, objects whose .address is an int, exact-size
            # bytes). Anything else -- None, bools or numpy numbers for pointers and floats --
            # and anything out of range goes to the checked path, which converts it or names
            # the problem, so both paths accept and refuse the same values.
            values = list(args)
            fast = True
            runtime = self._runtime
            for i in self._pointer_slots:
                value = values[i]
                if value.__class__ is not int:
                    if value.__class__ is Buffer:
                        if value.runtime is not runtime:     # refused by the checked path
                            fast = False
                            break
                    elif value.__class__ is BufferView and value.buffer.runtime is not runtime:
                        fast = False
                        break
                    value = values[i] = getattr(value, "address", None)
                    if value.__class__ is not int:
                        fast = False
                        break
            if fast:
                for i, classes in self._scalar_slots:
                    if values[i].__class__ not in classes:
                        fast = False
                        break
            if fast:
                for i, size in self._bytes_slots:
                    values[i] = _exact_bytes(values[i], size)   # None on a mismatch: refused
                try:
                    self._explicit.pack_into(buffer, offset, *values)
                    return
                except (struct.error, TypeError, OverflowError):
                    pass
        values = self.layout.convert(args)
        self._explicit.pack_into(buffer, offset, *values)

    __call__ = pack_into

    def pack(self, *args: Any) -> bytes:
        """The kernarg segment as bytes."""
        buffer = bytearray(self.size)
        self.pack_into(buffer, 0, *args)
        return bytes(buffer)
