"""Reading and writing decoded operands on a :class:`~hsapy.sim.isa.wave.Batch`.

Each function here runs once per instruction at compile time and returns a small closure that
runs per execution. Types are named ``b32 u32 i32 f32 b64 u64 i64 f64 b16 u16 i16 f16``; a
reader returns a numpy array (or numpy scalar) of that dtype. Vector readers give ``[W, L]`` for
VGPRs and ``[W, 1]`` for scalar operands (so they broadcast over lanes); scalar readers give
``[W]``.

Inline constants and literals follow the ISA guides' "Inline constants" / "Literal constants"
rules: an integer constant is the integer in the operand's width (sign-extended), a float constant
is encoded in the operand's float type, a literal is the raw dword (the high half of a 64-bit
float operand, zero-extended for 64-bit integer operands).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hsapy.sim.isa.instruction import Operand
from hsapy.sim.isa.wave import EXEC_LO, TTMP0, VCC_LO, Batch

DTYPES: dict[str, type] = {
    "b32": np.uint32, "u32": np.uint32, "i32": np.int32, "f32": np.float32,
    "b64": np.uint64, "u64": np.uint64, "i64": np.int64, "f64": np.float64,
    "b16": np.uint16, "u16": np.uint16, "i16": np.int16, "f16": np.float16,
    "u8": np.uint8, "i8": np.int8,
}
WIDTH = {name: np.dtype(t).itemsize * 8 for name, t in DTYPES.items()}
UINT_OF_WIDTH = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}

Reader = Callable[[Batch], np.ndarray]


class NotImplementedOperand(Exception):
    """An operand kind the interpreter does not support (becomes an illegal-instruction fault)."""


def const_bits(op: Operand, ty: str) -> np.ndarray:
    """The bit pattern of an inline constant or literal for an operand of type ``ty``."""
    width = WIDTH[ty]
    utype = UINT_OF_WIDTH[width]
    value = op.value
    if op.kind == "literal":
        raw = int(value) & 0xFFFFFFFF
        if width == 64 and ty == "f64":
            return np.asarray(raw << 32, np.uint64)
        if width == 16:
            return np.asarray(raw & 0xFFFF, np.uint16)
        return np.asarray(raw, utype)
    if isinstance(value, float):
        ftype = {16: np.float16, 32: np.float32, 64: np.float64}[width]
        return np.asarray(ftype(value)).view(utype)
    return np.asarray(int(value) & ((1 << width) - 1), utype)


def typed_const(op: Operand, ty: str) -> np.ndarray:
    """An inline constant or literal as a 0-d array of dtype ``ty`` (modifiers applied)."""
    value = const_bits(op, ty).view(DTYPES[ty])
    return _float_mods(np.asarray(value), op, ty)


def _float_mods(value, op: Operand, ty: str):
    if ty[0] == "f":
        if op.abs:
            value = np.abs(value)
        if op.neg:
            value = -value
    return value


def scalar_index(op: Operand) -> int:
    """Row of ``Batch.S`` for an SGPR / TTMP / special operand (-1 for null / constants)."""
    if op.kind == "sgpr":
        return op.index
    if op.kind == "ttmp":
        return TTMP0 + op.index
    if op.kind == "special":
        if op.name == "null":
            return -1
        return op.index
    raise NotImplementedOperand(f"operand kind {op.kind}")


def scalar_reader(op: Operand, ty: str) -> Reader:
    """Per-wave value (``[W]``) of a scalar-file operand or constant, as dtype ``ty``."""
    dtype = DTYPES[ty]
    width = WIDTH[ty]
    if op.kind in ("const", "literal", "imm"):
        if op.kind == "imm":
            value = np.asarray(int(op.value) & ((1 << width) - 1), UINT_OF_WIDTH[width])
            value = value.view(dtype)
        else:
            value = typed_const(op, ty)
        return lambda b: value
    if op.kind == "special":
        name = op.name
        if name in ("exec", "exec_lo", "exec_hi"):
            shift = 32 if name == "exec_hi" else 0
            return _cast(lambda b: b.exec_bits() >> np.uint64(shift), width, dtype, op, ty)
        if name in ("src_scc", "scc"):
            return _cast(lambda b: b.scc.astype(np.uint64), width, dtype, op, ty)
        if name == "null":
            zero = np.zeros((), dtype)
            return lambda b: zero
        if name.startswith("src_") or name in ("shared_base", "private_base"):
            value = _aperture_value(name)
            return _cast(lambda b: value, width, dtype, op, ty)
    index = scalar_index(op)
    if width == 64:
        if index & 1:
            raise NotImplementedOperand(f"unaligned 64-bit scalar operand s{index}")
        pair = index >> 1
        return _mods(lambda b: b.S64[:, pair].view(dtype), op, ty)
    if width == 32:
        return _mods(lambda b: b.S[:, index].view(dtype), op, ty)
    return _mods(lambda b: b.S[:, index].astype(UINT_OF_WIDTH[width]).view(dtype), op, ty)


def _aperture_value(name: str) -> np.ndarray:
    from hsapy.sim.memory import PRIVATE_APERTURE_BASE, SHARED_APERTURE_BASE

    table = {
        "src_shared_base": SHARED_APERTURE_BASE,
        "src_shared_limit": SHARED_APERTURE_BASE + 0xFFFFFFFF,
        "src_private_base": PRIVATE_APERTURE_BASE,
        "src_private_limit": PRIVATE_APERTURE_BASE + 0xFFFFFFFF,
        "src_pops_exiting_wave_id": 0, "src_vccz": 0, "src_execz": 0,
    }
    if name not in table:
        raise NotImplementedOperand(f"special source {name}")
    return np.asarray(table[name], np.uint64)


def _cast(fn: Callable, width: int, dtype, op: Operand, ty: str) -> Reader:
    utype = UINT_OF_WIDTH[width]

    def read(b: Batch):
        return np.asarray(fn(b)).astype(utype).view(dtype)

    return _mods(read, op, ty)


def _mods(fn: Reader, op: Operand, ty: str) -> Reader:
    if ty[0] != "f" or not (op.abs or op.neg):
        return fn
    if op.abs and op.neg:
        return lambda b: -np.abs(fn(b))
    if op.abs:
        return lambda b: np.abs(fn(b))
    return lambda b: -fn(b)


def vector_reader(op: Operand, ty: str, half: int = 0) -> Reader:
    """Per-lane value of a VALU source as dtype ``ty``: ``[W, L]`` or broadcastable ``[W, 1]``.

    ``half`` selects the high 16 bits of a 32-bit register for 16-bit operands (op_sel).
    """
    dtype = DTYPES[ty]
    width = WIDTH[ty]
    if op.kind in ("vgpr", "agpr"):
        index = op.index
        agpr = op.kind == "agpr"
        if width == 32:
            if agpr:
                return _mods(lambda b: b.A[index].view(dtype), op, ty)
            return _mods(lambda b: b.V[index].view(dtype), op, ty)
        if width == 64:
            def read64(b: Batch):
                regs = b.A if agpr else b.V
                out = np.empty(regs.shape[1:], np.uint64)
                halves = out.view(np.uint32).reshape(out.shape + (2,))
                halves[..., 0] = regs[index]   # little-endian: low dword first
                halves[..., 1] = regs[index + 1]
                return out.view(dtype)
            return _mods(read64, op, ty)
        shift = 16 if half else 0
        mask = (1 << width) - 1
        utype = UINT_OF_WIDTH[width]

        def read_narrow(b: Batch):
            regs = b.A if agpr else b.V
            return ((regs[index] >> np.uint32(shift)) & np.uint32(mask)).astype(utype).view(dtype)
        return _mods(read_narrow, op, ty)
    if op.kind in ("const", "literal"):
        value = typed_const(op, ty)
        if width == 16 and half and op.kind == "literal":
            value = np.asarray((int(op.value) >> 16) & 0xFFFF, np.uint16).view(dtype)
        return lambda b: value
    if width == 16 and half:
        inner16 = scalar_reader(op, "b32")
        return _mods(lambda b: (inner16(b) >> np.uint32(16)).astype(np.uint16).view(dtype)[:, None],
                     op, ty)
    inner = scalar_reader(op, ty)

    def read_scalar(b: Batch):
        value = inner(b)
        if value.ndim == 1:
            return value[:, None]
        return value
    return read_scalar


# SDWA selects (GCN3/Vega/CDNA3 ISA, "SDWA" microcode format): (bit offset, bit width) of the
# byte or word a source reads or a destination writes; 6 is the whole dword.
SDWA_SELECTS = {0: (0, 8), 1: (8, 8), 2: (16, 8), 3: (24, 8), 4: (0, 16), 5: (16, 16), 6: (0, 32)}
SDWA_UNUSED_PAD, SDWA_UNUSED_SEXT, SDWA_UNUSED_PRESERVE = 0, 1, 2


def sdwa_reader(op: Operand, ty: str, sel: int, sext: bool) -> Reader:
    """An SDWA source: the selected byte or word of the 32-bit operand, zero- or (``sext``, integer
    types) sign-extended to 32 bits, then read as ``ty`` (16-bit types take the low half);
    float neg/abs apply to the value after the selection."""
    if sel not in SDWA_SELECTS:
        raise NotImplementedOperand(f"SDWA select {sel}")
    shift, width = SDWA_SELECTS[sel]
    plain = Operand(op.kind, op.index, op.count, op.value, op.name)
    if op.kind in ("const", "literal") and WIDTH[ty] == 16:
        # an inline constant is encoded in the operand's own type, zero-extended
        bits16 = const_bits(op, ty).astype(np.uint32)
        raw: Reader = lambda b: bits16  # noqa: E731
    else:
        raw = vector_reader(plain, "b32")
    mask = np.uint32((1 << width) - 1)
    extend = sext and ty[0] != "f" and width < 32
    top = np.uint32(1 << (width - 1)) if width < 32 else np.uint32(0)
    dtype = DTYPES[ty]
    utype = UINT_OF_WIDTH[WIDTH[ty]]

    def read(b: Batch):
        bits = (np.asarray(raw(b)).astype(np.uint32) >> np.uint32(shift)) & mask
        if extend:
            bits = np.where(bits & top, bits | ~mask, bits).astype(np.uint32)
        return bits.astype(utype).view(dtype)
    return _mods(read, op, ty)


def sdwa_writer(op: Operand, ty: str, sel: int, unused: int) -> Callable[[Batch, np.ndarray], None]:
    """An SDWA destination: the low bits of the result go to the selected byte or word; the
    other bits are zero (UNUSED_PAD), the sign of the result above and zero below
    (UNUSED_SEXT), or the register's old bits (UNUSED_PRESERVE)."""
    if sel not in SDWA_SELECTS or unused not in (0, 1, 2):
        raise NotImplementedOperand(f"SDWA dst_sel {sel} dst_unused {unused}")
    shift, width = SDWA_SELECTS[sel]
    write32 = vector_writer(op, "b32")
    old = vector_reader(Operand(op.kind, op.index, 1, None, op.name), "b32")
    field = np.uint32(((1 << width) - 1) << shift)
    above = np.uint32((0xFFFFFFFF << (shift + width)) & 0xFFFFFFFF)
    sign = np.uint32(1 << (shift + width - 1))
    utype = UINT_OF_WIDTH[WIDTH[ty]]
    dtype = DTYPES[ty]

    def write(b: Batch, value) -> None:
        bits = np.asarray(value).astype(dtype, copy=False).view(utype).astype(np.uint32)
        out = (bits << np.uint32(shift)) & field
        if unused == SDWA_UNUSED_SEXT:
            out = np.where(out & sign, out | above, out)
        elif unused == SDWA_UNUSED_PRESERVE:
            out = out | (np.asarray(old(b)) & ~field)
        write32(b, np.asarray(out, np.uint32))
    return write


def lane_mask_reader(op: Operand) -> Callable[[Batch], np.ndarray]:
    """A lane mask operand (VCC, an SGPR pair, EXEC, a constant) as ``bool[W, L]``."""
    from hsapy.sim.isa.wave import unpack_mask

    read = scalar_reader(op, "b64" if op.count == 2 else "b32")

    def mask(b: Batch) -> np.ndarray:
        bits = np.broadcast_to(np.asarray(read(b)).astype(np.uint64), (b.waves,))
        return unpack_mask(bits, b.lanes)
    return mask


# --- writers ----------------------------------------------------------------------------------

def vector_writer(op: Operand, ty: str, half: int = 0) -> Callable[[Batch, np.ndarray], None]:
    """Write a per-lane result (any broadcastable shape) to a VGPR under EXEC."""
    width = WIDTH[ty]
    index = op.index
    agpr = op.kind == "agpr"
    if op.kind not in ("vgpr", "agpr"):
        raise NotImplementedOperand(f"vector destination of kind {op.kind}")

    def store(b: Batch, reg: int, value: np.ndarray) -> None:
        regs = b.A if agpr else b.V
        if b.exec_all:
            regs[reg][...] = value
        else:
            np.copyto(regs[reg], value, where=b.exec, casting="unsafe")

    if width == 32:
        def write32(b: Batch, value) -> None:
            store(b, index, np.asarray(value).astype(DTYPES[ty], copy=False).view(np.uint32))
        return write32
    if width == 64:
        def write64(b: Batch, value) -> None:
            bits = np.ascontiguousarray(np.asarray(value).astype(DTYPES[ty], copy=False))
            halves = bits.view(np.uint32).reshape(bits.shape + (2,))
            store(b, index, halves[..., 0])
            store(b, index + 1, halves[..., 1])
        return write64
    # 16-bit results: gfx9 zeroes the high half unless op_sel/d16_hi says otherwise; gfx12
    # (true16 off) keeps the other half. We keep the other half for op_sel writes and zero it
    # otherwise, as LLVM's code for both families expects.
    utype = UINT_OF_WIDTH[width]

    def write16(b: Batch, value) -> None:
        bits = np.asarray(value).astype(DTYPES[ty], copy=False).view(utype).astype(np.uint32)
        regs = b.A if agpr else b.V
        if half:
            merged = (regs[index] & np.uint32(0xFFFF)) | (bits << np.uint32(16))
        else:
            merged = bits
        store(b, index, merged)
    return write16


def scalar_writer(op: Operand, ty: str) -> Callable[[Batch, np.ndarray], None]:
    """Write a per-wave value to an SGPR / special register (EXEC updates the lane mask)."""
    width = WIDTH[ty]
    if op.kind == "special" and op.name == "null":
        return lambda b, value: None
    if op.kind == "special" and op.name in ("exec", "exec_lo", "exec_hi"):
        name = op.name

        def write_exec(b: Batch, value) -> None:
            bits = np.broadcast_to(np.asarray(value).astype(UINT_OF_WIDTH[width]).view(
                UINT_OF_WIDTH[width]).astype(np.uint64), (b.waves,))
            old = b.exec_bits()
            if name == "exec_lo" or (name == "exec" and width == 32):
                bits = (old & np.uint64(0xFFFFFFFF00000000)) | (bits & np.uint64(0xFFFFFFFF))
            elif name == "exec_hi":
                bits = (old & np.uint64(0xFFFFFFFF)) | (bits << np.uint64(32))
            b.set_exec_bits(bits)
        return write_exec
    if op.kind == "special" and op.name in ("scc", "src_scc"):
        def write_scc(b: Batch, value) -> None:
            b.scc = np.broadcast_to(np.asarray(value) != 0, (b.waves,)).copy()
        return write_scc
    index = scalar_index(op)
    if width == 64:
        pair = index >> 1

        def write64(b: Batch, value) -> None:
            b.S64[:, pair] = np.asarray(value).astype(DTYPES[ty], copy=False).view(np.uint64)
        return write64

    def write32(b: Batch, value) -> None:
        arr = np.asarray(value)
        if WIDTH[ty] < 32:
            arr = arr.astype(DTYPES[ty], copy=False).view(UINT_OF_WIDTH[width]).astype(np.uint32)
        b.S[:, index] = arr.astype(DTYPES[ty], copy=False).view(np.uint32) if WIDTH[ty] == 32 \
            else arr
    return write32


def mask_writer(op: Operand) -> Callable[[Batch, np.ndarray], None]:
    """Write a lane mask ``bool[W, L]`` (inactive lanes read as 0) to VCC / an SGPR (pair)."""
    from hsapy.sim.isa.wave import pack_mask

    wide = op.count == 2
    write = scalar_writer(op, "b64" if wide else "b32")

    def store(b: Batch, mask: np.ndarray) -> None:
        bits = pack_mask(np.broadcast_to(mask, b.exec.shape) & b.exec)
        write(b, bits if wide else (bits & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    return store


__all__ = [
    "DTYPES", "WIDTH", "NotImplementedOperand", "const_bits", "typed_const", "scalar_reader",
    "vector_reader", "lane_mask_reader", "vector_writer", "scalar_writer", "mask_writer",
    "scalar_index", "VCC_LO", "EXEC_LO", "SDWA_SELECTS", "sdwa_reader", "sdwa_writer",
]
