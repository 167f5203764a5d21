"""Per-lane access to simulated memory, shared by every memory instruction family.

The SMEM, global/flat/scratch, LDS (DS) and buffer (MUBUF/MTBUF/VBUFFER) instructions
(semantics_smem.py, semantics_vmem.py, semantics_lds.py, semantics_buffer.py) reach memory
through these helpers: dword and byte gathers/scatters of global memory, each lane's private
(scratch) row, each workgroup's LDS row, the atomic operations and their serial
read-modify-write, the access width of a load/store mnemonic, and moving the lanes' values
between registers and those accesses.

Every access to simulated memory goes through ``SimMemory`` (``view`` / ``gather`` / ``scatter``),
which raises ``SimMemoryFault`` outside an allocation; the executor turns that into a
``SimFault`` with the faulting address. Only lanes in EXEC access memory.

Atomics run in one serial order: waves in dispatch order, lanes in lane order; each lane's
returned value is the memory value just before its own operation in that order.
LDS is one byte array per workgroup (rows of ``machine.lds``); an LDS access beyond the
workgroup's allocation reads 0 and drops writes, as the hardware's LDS range check does.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from hsapy.sim.isa.operand_access import NotImplementedOperand
from hsapy.sim.isa.wave import Batch

u32, u64 = np.uint32, np.uint64


# --- helpers ------------------------------------------------------------------------------------

def gather_dwords(m: Any, addrs: np.ndarray, ndw: int) -> np.ndarray:
    """Load ``ndw`` dwords at each address: ``uint32[n, ndw]``; fault-checked by SimMemory."""
    n = addrs.size
    if n == 0:
        return np.zeros((0, ndw), u32)
    lo = int(addrs.min())
    hi = int(addrs.max()) + 4 * ndw
    rel = (addrs - u64(lo)).astype(np.intp)
    try:
        view = m.memory.view(lo, hi - lo, "read", agent=m.agent)
    except Exception:
        cols = [m.memory.gather(addrs + u64(4 * k), 4, np.uint32, agent=m.agent)
                for k in range(ndw)]
        return np.stack(cols, axis=1)
    if not (rel & 3).any():
        words = view.view(u32)
        if ndw == 1:
            return np.take(words, rel >> 2)[:, None]
        index = (rel >> 2)[:, None] + np.arange(ndw)
        return words[index]
    index = rel[:, None] + np.arange(4 * ndw)
    return np.ascontiguousarray(view[index]).view(u32).reshape(n, ndw)


def scatter_dwords(m: Any, addrs: np.ndarray, values: np.ndarray) -> None:
    """Store ``values`` (``uint32[n, ndw]``) at each address; fault-checked by SimMemory."""
    n, ndw = values.shape
    if n == 0:
        return
    lo = int(addrs.min())
    hi = int(addrs.max()) + 4 * ndw
    rel = (addrs - u64(lo)).astype(np.intp)
    try:
        view = m.memory.view(lo, hi - lo, "write", agent=m.agent)
    except Exception:
        for k in range(ndw):  # fault-checks every address before the first write
            m.memory.check(addrs + u64(4 * k), 4, "write", agent=m.agent)
        for k in range(ndw):
            m.memory.scatter(addrs + u64(4 * k), np.ascontiguousarray(values[:, k]),
                             agent=m.agent)
        return
    if not (rel & 3).any():
        words = view.view(u32)
        if ndw == 1:
            words[rel >> 2] = values[:, 0]
        else:
            words[(rel >> 2)[:, None] + np.arange(ndw)] = values
        return
    view[rel[:, None] + np.arange(4 * ndw)] = \
        np.ascontiguousarray(values).view(np.uint8).reshape(n, -1)


def gather_bytes(m: Any, addrs: np.ndarray, nbytes: int) -> np.ndarray:
    """Load ``nbytes`` (1 or 2) at each address: ``uint8[n, nbytes]``."""
    if addrs.size == 0:
        return np.zeros((0, nbytes), np.uint8)
    raw = m.memory.gather(addrs, nbytes, None, agent=m.agent)
    return np.ascontiguousarray(raw).view(np.uint8).reshape(-1, nbytes)


def scatter_bytes(m: Any, addrs: np.ndarray, values: np.ndarray, nbytes: int) -> None:
    """Store the low ``nbytes`` of each uint32 value."""
    if addrs.size == 0:
        return
    m.memory.scatter(addrs, values.astype(u32), nbytes, agent=m.agent)


def _width_of(name: str) -> tuple[int, str, bool]:
    """(bytes, kind, d16_hi) of a load/store mnemonic: kind "u"/"s" for sub-dword, "d" dwords."""
    tail = name.split("_", 2)[-1]
    # gfx12 spells d16 forms global_load_d16_u8 / global_store_d16_hi_b16
    tail = re.sub(r"^d16_hi_(\w+)$", r"\1_d16_hi", tail)
    tail = re.sub(r"^d16_(\w+)$", r"\1_d16", tail)
    hi = tail.endswith("_d16_hi")
    d16 = "_d16" in tail
    tail = tail.replace("_d16_hi", "").replace("_d16", "")
    for prefix in ("load_", "store_", "read_", "write_"):
        if tail.startswith(prefix):
            tail = tail[len(prefix):]
    table = {
        "dword": (4, "d"), "dwordx2": (8, "d"), "dwordx3": (12, "d"), "dwordx4": (16, "d"),
        "b32": (4, "d"), "b64": (8, "d"), "b96": (12, "d"), "b128": (16, "d"),
        "ubyte": (1, "u"), "u8": (1, "u"), "sbyte": (1, "s"), "i8": (1, "s"),
        "ushort": (2, "u"), "u16": (2, "u"), "sshort": (2, "s"), "i16": (2, "s"),
        "byte": (1, "u"), "short": (2, "u"), "b8": (1, "u"), "b16": (2, "u"),
    }
    if tail not in table:
        raise NotImplementedOperand(f"memory width of {name}")
    size, kind = table[tail]
    if d16:
        kind = kind + "16"
    return size, kind, hi


_ATOMIC_OPS: dict[str, tuple[str, Callable]] = {
    "add": ("u", lambda old, v: old + v), "sub": ("u", lambda old, v: old - v),
    "add_u32": ("u", lambda old, v: old + v), "sub_u32": ("u", lambda old, v: old - v),
    "add_u64": ("u", lambda old, v: old + v), "sub_u64": ("u", lambda old, v: old - v),
    "and": ("u", lambda old, v: old & v), "or": ("u", lambda old, v: old | v),
    "xor": ("u", lambda old, v: old ^ v),
    "and_b32": ("u", lambda old, v: old & v), "or_b32": ("u", lambda old, v: old | v),
    "xor_b32": ("u", lambda old, v: old ^ v),
    "and_b64": ("u", lambda old, v: old & v), "or_b64": ("u", lambda old, v: old | v),
    "xor_b64": ("u", lambda old, v: old ^ v),
    "swap": ("u", lambda old, v: v), "swap_b32": ("u", lambda old, v: v),
    "swap_b64": ("u", lambda old, v: v),
    "smin": ("s", np.minimum), "smax": ("s", np.maximum),
    "umin": ("u", np.minimum), "umax": ("u", np.maximum),
    "min_i32": ("s", np.minimum), "max_i32": ("s", np.maximum),
    "min_u32": ("u", np.minimum), "max_u32": ("u", np.maximum),
    "min_i64": ("s", np.minimum), "max_i64": ("s", np.maximum),
    "min_u64": ("u", np.minimum), "max_u64": ("u", np.maximum),
    "inc": ("u", lambda old, v: np.where(old >= v, 0, old + 1).astype(old.dtype)),
    "dec": ("u", lambda old, v: np.where((old == 0) | (old > v), v, old - 1).astype(old.dtype)),
    "inc_u32": ("u", lambda old, v: np.where(old >= v, 0, old + 1).astype(old.dtype)),
    "inc_u64": ("u", lambda old, v: np.where(old >= v, 0, old + 1).astype(old.dtype)),
    "dec_u64": ("u", lambda old, v: np.where((old == 0) | (old > v), v, old - 1).astype(old.dtype)),
    "dec_u32": ("u", lambda old, v: np.where((old == 0) | (old > v), v, old - 1).astype(old.dtype)),
    "add_f32": ("f", lambda old, v: old + v), "add_f64": ("f", lambda old, v: old + v),
    "fmin": ("f", np.fmin), "fmax": ("f", np.fmax),
    "min_f32": ("f", np.fmin), "max_f32": ("f", np.fmax),
    "min_num_f32": ("f", np.fmin), "max_num_f32": ("f", np.fmax),
    "min_f64": ("f", np.fmin), "max_f64": ("f", np.fmax),
    "min_num_f64": ("f", np.fmin), "max_num_f64": ("f", np.fmax),
    "cmpswap": ("c", None), "cmpswap_b32": ("c", None), "cmpswap_b64": ("c", None),
    # RDNA3/RDNA4 guides: SUB_CLAMP (CSUB) saturates at 0; COND_SUB subtracts only when the
    # result stays non-negative
    "sub_clamp_u32": ("u", lambda old, v: np.where(v > old, 0, old - v).astype(old.dtype)),
    "csub_u32": ("u", lambda old, v: np.where(v > old, 0, old - v).astype(old.dtype)),
    "cond_sub_u32": ("u", lambda old, v: np.where(old >= v, old - v, old).astype(old.dtype)),
    "pk_add_f16": ("u", lambda old, v: _packed_add(old, v, "f16")),
    "pk_add_bf16": ("u", lambda old, v: _packed_add(old, v, "bf16")),
}


def _packed_add(old: np.ndarray, v: np.ndarray, kind: str) -> np.ndarray:
    """Two 16-bit float adds in one dword, each rounded once to nearest even (the sum of two
    f16 or bf16 values is exact in f64, so rounding that to 16 bits is the single rounding)."""
    old = np.asarray(old).astype(u32)
    v = np.asarray(v).astype(u32)
    halves = []
    for shift in (0, 16):
        a = ((old >> u32(shift)) & u32(0xFFFF)).astype(np.uint16)
        c = ((v >> u32(shift)) & u32(0xFFFF)).astype(np.uint16)
        if kind == "f16":
            total = a.view(np.float16).astype(np.float64) + c.view(np.float16).astype(np.float64)
            halves.append(total.astype(np.float16).view(np.uint16).astype(u32))
        else:
            total = _bf16_to_f32(a).astype(np.float64) + _bf16_to_f32(c).astype(np.float64)
            halves.append(_f32_to_bf16(total.astype(np.float32)).astype(u32))
    return halves[0] | (halves[1] << u32(16))


def _bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(u32) << u32(16)).view(np.float32)


def _f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round to nearest even; NaN stays a quiet NaN. Rounding the f64 sum of two bf16 values to
    f32 first cannot change the bf16 result (the f32 rounding error is below a bf16 tie)."""
    bits = np.ascontiguousarray(x).view(u32)
    rounded = (bits + u32(0x7FFF) + ((bits >> u32(16)) & u32(1))) >> u32(16)
    nan = np.isnan(x)
    return np.where(nan, (bits >> u32(16)) | u32(0x40), rounded).astype(np.uint16)


def atomic_operation(name: str) -> tuple[str, str, Callable | None, int]:
    """(op, type kind, function, bytes) for ``*_atomic_<op>[_x2]`` (global, flat, buffer and
    scalar atomics share the operations); kind "u"/"s"/"f" is how the dword(s) are read, "c"
    compare-and-swap."""
    op = name.split("_atomic_", 1)[1]
    wide = op.endswith("_x2") or op.endswith("_b64") or op.endswith("_u64") \
        or op.endswith("_i64") or op.endswith("_f64")
    base = op[:-3] if op.endswith("_x2") else op
    if base not in _ATOMIC_OPS:
        raise NotImplementedOperand(f"atomic {op}")
    kind, fn = _ATOMIC_OPS[base]
    return base, kind, fn, 8 if wide else 4


def atomic_types(kind: str, size: int) -> tuple[type, type]:
    """``(utype, dtype)`` of an atomic on ``size``-byte elements of :func:`atomic_operation`'s
    type kind: the unsigned type its dwords are read through, and the type it computes in."""
    utype = u32 if size == 4 else u64
    return utype, {"u": utype, "s": np.int32 if size == 4 else np.int64, "c": utype,
                   "f": np.float32 if size == 4 else np.float64}[kind]


def dword_elements(words: np.ndarray, utype: type, dtype: type) -> np.ndarray:
    """The dwords of each lane (``[lanes, ndw]``) as one ``dtype`` element, read through the
    unsigned ``utype`` of the same width."""
    return np.ascontiguousarray(words).view(utype).reshape(-1).view(dtype)


def global_rmw(m: Any, ndw: int, utype: type, dtype: type) -> tuple[Callable, Callable]:
    """``read(addrs) -> values`` and ``write(addrs, values)`` of ``ndw``-dword elements of global
    memory: how :func:`global_atomic` (and :func:`_serial_rmw`) reach it."""
    def read(a: np.ndarray) -> np.ndarray:
        return dword_elements(gather_dwords(m, a, ndw), utype, dtype)

    def write(a: np.ndarray, v: np.ndarray) -> None:
        scatter_dwords(m, a, np.ascontiguousarray(v.astype(dtype)).view(u32).reshape(-1, ndw))
    return read, write


def global_atomic(read: Callable, write: Callable, addrs: np.ndarray, values: np.ndarray,
                  fn: Callable, cmp: np.ndarray | None) -> np.ndarray:
    """:func:`_serial_rmw` on global memory, every address fault-checked before the first
    write; the old value of each lane."""
    if addrs.size:
        read(np.unique(addrs))
    return _serial_rmw(read, write, addrs, values, fn, cmp)


def _serial_rmw(read: Callable, write: Callable, addrs: np.ndarray, values: np.ndarray,
                fn: Callable, cmp: np.ndarray | None) -> np.ndarray:
    """Apply ``fn`` lane by lane in order (vectorised over lanes with distinct addresses); returns
    the old value each lane saw. ``read(addrs) -> values``, ``write(addrs, values)``."""
    n = addrs.size
    old_out = np.empty_like(values)
    if n == 0:
        return old_out
    order = np.argsort(addrs, kind="stable")
    sorted_addrs = addrs[order]
    starts = np.ones(n, bool)
    starts[1:] = sorted_addrs[1:] != sorted_addrs[:-1]
    group_start = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    rank = np.empty(n, np.intp)
    rank[order] = np.arange(n) - group_start
    max_rank = int(rank.max())
    groups = int(starts.sum())
    if max_rank > 64 and cmp is None and groups <= 64:
        # few hot addresses: one accumulate per address, still in lane order
        for g in np.flatnonzero(starts):
            end = g + 1
            while end < n and not starts[end]:
                end += 1
            lanes = order[g:end]
            address = addrs[lanes[:1]]
            current = read(address)[0]
            vals = values[lanes]
            olds = np.empty_like(vals)
            if fn is not None and _is_add(fn):
                running = np.concatenate([[current], vals]).astype(vals.dtype)
                acc = np.add.accumulate(running)
                olds[:] = acc[:-1]
                final = acc[-1]
            else:
                for i, v in enumerate(vals):
                    olds[i] = current
                    current = fn(np.asarray(current), np.asarray(v))
                final = current
            old_out[lanes] = olds
            write(address, np.asarray([final], vals.dtype))
        return old_out
    for r in range(max_rank + 1):
        lanes = np.flatnonzero(rank == r)
        address = addrs[lanes]
        old = read(address)
        if cmp is not None:  # cmpswap: store the data when memory equals the compare value
            new = np.where(old == cmp[lanes], values[lanes], old)
        else:
            new = fn(old, values[lanes])
        old_out[lanes] = old
        write(address, np.asarray(new).astype(values.dtype))
    return old_out


def _is_add(fn: Callable) -> bool:
    return getattr(fn, "_is_add", False)


for _key in ("add", "add_u32", "add_u64", "add_f32", "add_f64"):
    _ATOMIC_OPS[_key][1]._is_add = True  # type: ignore[attr-defined]


def _extend(raw: np.ndarray, size: int, kind: str, hi: bool, old: np.ndarray, mask,
            b) -> np.ndarray:
    """Sub-dword load result as ``uint32[n, 1]`` (d16 forms merge into the other half)."""
    value = raw.view(np.uint8 if size == 1 else np.uint16)[:, 0] if raw.ndim == 2 else raw
    if kind.startswith("s"):
        value = value.view(np.int8 if size == 1 else np.int16).astype(np.int32).view(u32)
    else:
        value = value.astype(u32)
    if kind.endswith("16"):  # d16: write one half, keep the other
        current = old.reshape(-1) if mask is None else old[mask]
        value = value & u32(0xFFFF)
        if hi:
            value = (current & u32(0xFFFF)) | (value << u32(16))
        else:
            value = (current & u32(0xFFFF0000)) | value
    return value[:, None]


def _store_lanes(b: Batch, regs: np.ndarray, row: int, words: np.ndarray, mask) -> None:
    ndw = words.shape[1]
    for k in range(ndw):
        if mask is None:
            regs[row + k].reshape(-1)[:] = words[:, k]
        else:
            regs[row + k][mask] = words[:, k]


def _lane_values(b: Batch, regs: np.ndarray, row: int, ndw: int, mask) -> np.ndarray:
    if mask is None:
        return np.stack([regs[row + k].reshape(-1) for k in range(ndw)], axis=1)
    return np.stack([regs[row + k][mask] for k in range(ndw)], axis=1)


def _lane_wg(b: Batch, mask) -> np.ndarray:
    wg = np.broadcast_to(b.wg[:, None], b.exec.shape)
    return wg.reshape(-1) if mask is None else wg[mask]


def _lane_ids(b: Batch, mask) -> np.ndarray:
    """(wave row in batch * lanes + lane) of each active lane: index into the scratch rows."""
    ids = np.arange(b.exec.size).reshape(b.exec.shape)
    return ids.reshape(-1) if mask is None else ids[mask]


# --- scratch -------------------------------------------------------------------------------------

def _ensure_scratch(m: Any, b: Batch) -> np.ndarray:
    if b.scratch is None:
        b.scratch = np.zeros((b.waves * b.lanes, max(4, m.private_size)), np.uint8)
    return b.scratch


def scratch_load(m: Any, b: Batch, lane_ids: np.ndarray, offsets: np.ndarray,
                 size: int) -> np.ndarray:
    """``uint32[n, ndw]`` (or the bytes for sub-dword) from each lane's private memory."""
    scratch = _ensure_scratch(m, b)
    nbytes = max(4, size)
    if not len(lane_ids):     # no lane in EXEC (e.g. a whole-wave spill of inactive lanes)
        return np.zeros((0, max(1, nbytes // 4)), u32)
    _check_private(m, offsets, size)
    cols = offsets[:, None] + np.arange(nbytes)
    cols = np.minimum(cols, scratch.shape[1] - 1)
    raw = scratch[lane_ids[:, None], cols]
    return np.ascontiguousarray(raw).view(u32).reshape(len(lane_ids), -1)


def scratch_store(m: Any, b: Batch, lane_ids: np.ndarray, offsets: np.ndarray, values: np.ndarray,
                  size: int) -> None:
    scratch = _ensure_scratch(m, b)
    if not len(lane_ids):
        return
    _check_private(m, offsets, size)
    raw = np.ascontiguousarray(values.astype(u32)).view(np.uint8) \
        .reshape(len(lane_ids), -1)[:, :size]
    scratch[lane_ids[:, None], offsets[:, None] + np.arange(size)] = raw


def _check_private(m: Any, offsets: np.ndarray, size: int) -> None:
    if offsets.size and (int(offsets.max()) + size > max(4, m.private_size)
                         or int(offsets.min()) < 0):
        from hsapy.sim.memory import SimMemoryFault

        bad = int(offsets.max())
        raise SimMemoryFault(m.private_base + bad, size, "private")


# --- LDS -----------------------------------------------------------------------------------------

def lds_load(m: Any, wg: np.ndarray, addr: np.ndarray, size: int) -> np.ndarray:
    """``uint32[n, max(1, size/4)]`` from each lane's workgroup LDS; out-of-range reads give 0."""
    nbytes = max(4, size)
    ndw = nbytes // 4
    addr = addr.astype(np.int64)
    ok = (addr >= 0) & (addr + size <= m.lds_size)
    base = wg.astype(np.int64) * m.lds_stride + np.where(ok, addr, 0)
    if not (base & 3).any() and size >= 4:
        words = m.lds_words[(base >> 2)[:, None] + np.arange(ndw)]
    else:
        raw = m.lds[np.minimum(base[:, None] + np.arange(nbytes), m.lds.size - 1)]
        if size < 4:
            raw[:, size:] = 0
        words = np.ascontiguousarray(raw).view(u32).reshape(-1, ndw)
    if not ok.all():
        words = np.where(ok[:, None], words, u32(0))
    return words


def lds_store(m: Any, wg: np.ndarray, addr: np.ndarray, values: np.ndarray, size: int) -> None:
    """Store the low ``size`` bytes of each lane's words; out-of-range writes are dropped."""
    addr = addr.astype(np.int64)
    ok = (addr >= 0) & (addr + size <= m.lds_size)
    if not ok.all():
        wg, addr, values = wg[ok], addr[ok], values[ok]
    base = wg.astype(np.int64) * m.lds_stride + addr
    if size >= 4 and not (base & 3).any():
        m.lds_words[(base >> 2)[:, None] + np.arange(size // 4)] = values[:, : size // 4]
        return
    raw = np.ascontiguousarray(values.astype(u32)).view(np.uint8).reshape(len(base), -1)[:, :size]
    m.lds[base[:, None] + np.arange(size)] = raw
