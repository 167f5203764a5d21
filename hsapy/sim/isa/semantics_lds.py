"""LDS instructions (the DS encoding): reads and writes (single, two-address and d16
forms), LDS atomics, append/consume, permutes and swizzles.

LDS is one byte array per workgroup (rows of ``machine.lds``); an access beyond the
workgroup's allocation reads 0 and drops writes, as the hardware's LDS range check does.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from hsapy.sim.isa.instruction import Instruction
from hsapy.sim.isa.memory_access import (
    _extend,
    _lane_values,
    _lane_wg,
    _packed_add,
    _serial_rmw,
    _store_lanes,
    lds_load,
    lds_store,
)
from hsapy.sim.isa.operand_access import NotImplementedOperand, vector_reader
from hsapy.sim.isa.wave import Batch

u32, u64 = np.uint32, np.uint64


# bytes per lane of a one-address DS load or store, by the width in its mnemonic
DS_WIDTH = {
    "b32": 4, "b64": 8, "b96": 12, "b128": 16, "u8": 1, "i8": 1, "u16": 2, "i16": 2,
    "b8": 1, "b16": 2,
}


def ds_load_form(tail: str) -> tuple[int, str, bool] | None:
    """``(size, kind, hi)`` of a one-address DS load, from its mnemonic after ``ds_read_`` /
    ``ds_load_`` (``u8``, ``u16_d16_hi``, ``b128``): bytes per lane; how the value reaches the
    register ("d" whole dwords, "u"/"s" zero/sign-extended, "u16"/"s16" into one half, d16);
    and whether that half is the high one. None for a width not in :data:`DS_WIDTH`."""
    hi = tail.endswith("_d16_hi")
    d16 = "_d16" in tail
    tail = tail.replace("_d16_hi", "").replace("_d16", "")
    size = DS_WIDTH.get(tail)
    if size is None:
        return None
    kind = ("s" if tail.startswith("i") else "u") if size < 4 else "d"
    return size, kind + "16" if d16 else kind, hi


def _ds(inst: Instruction, info: Any):
    name = inst.name
    f = inst.fields
    single_offset = (int(f.get("offset1", 0)) << 8) | int(f.get("offset0", 0))
    srcs = list(inst.srcs)
    if name in ("ds_bpermute_b32", "ds_permute_b32"):
        return _ds_permute(inst, single_offset)
    if name == "ds_swizzle_b32":
        return _ds_swizzle(inst, single_offset)
    if name in ("ds_nop",):
        return lambda b, m: None
    if "_addtid_" in name:     # no address VGPR: the only VGPR operand is the data
        return _ds_addtid(single_offset, [op for op in srcs if op.kind == "vgpr"],
                          inst.dsts[0].index if inst.dsts else None, _m0_row(inst))
    addr_reader = vector_reader(srcs[0], "u32") if srcs and srcs[0].kind == "vgpr" else None
    rest = srcs[1:]
    op = name[3:]
    two = op.startswith(("read2", "write2", "load_2addr", "store_2addr"))
    if two:
        st64 = "st64" in op or "stride64" in op  # gfx12: ds_load_2addr_stride64_b32
        elem = 8 if op.endswith("b64") else 4
        scale = elem * (64 if st64 else 1)
        off0 = int(f.get("offset0", 0)) * scale
        off1 = int(f.get("offset1", 0)) * scale
        if op.startswith(("read2", "load_2addr")):
            row = inst.dsts[0].index
            ndw = elem // 4

            def read2(b: Batch, m: Any) -> None:
                mask = None if b.exec_all else b.exec
                wg = _lane_wg(b, mask)
                first = lds_load(m, wg, _lds_address(b, addr_reader, mask, off0), elem)
                second = lds_load(m, wg, _lds_address(b, addr_reader, mask, off1), elem)
                _store_lanes(b, b.V, row, np.concatenate([first, second], axis=1), mask)
            return read2
        data0, data1 = rest[0], rest[1]
        ndw = elem // 4

        def write2(b: Batch, m: Any) -> None:
            mask = None if b.exec_all else b.exec
            wg = _lane_wg(b, mask)
            lds_store(m, wg, _lds_address(b, addr_reader, mask, off0),
                      _lane_values(b, b.V, data0.index, ndw, mask), elem)
            lds_store(m, wg, _lds_address(b, addr_reader, mask, off1),
                      _lane_values(b, b.V, data1.index, ndw, mask), elem)
        return write2
    for prefix in ("read_", "load_"):
        if op.startswith(prefix):
            form = ds_load_form(op[len(prefix):])
            if form is None:
                break
            size, kind, hi = form
            row = inst.dsts[0].index
            return _ds_read(addr_reader, single_offset, size, kind, hi, row)
    for prefix in ("write_", "store_"):
        if op.startswith(prefix):
            tail = op[len(prefix):]
            hi = tail.endswith("_d16_hi")
            tail = tail.replace("_d16_hi", "")
            if tail not in DS_WIDTH:
                break
            size = DS_WIDTH[tail]
            data = rest[0]
            ndw = max(1, size // 4)
            return _ds_write(addr_reader, single_offset, size, hi, data, ndw)
    special = _ds_special(inst, addr_reader, rest, single_offset)
    if special is not None:
        return special
    # LDS atomics: ds_<op>[_rtn]_<type>
    return _ds_atomic(inst, addr_reader, rest, single_offset)


# The closures of one-address reads and writes are built outside _ds's loops over the mnemonic
# prefixes, so that each binds its own width and register rather than a loop variable.

def _ds_read(addr_reader, offset: int, size: int, kind: str, hi: bool, row: int):
    """DS_READ_* / DS_LOAD_*: ``size`` bytes per lane from LDS into the VGPRs at ``row``
    (sub-dword forms extended as ``kind`` says; d16 forms write one half)."""
    def read(b: Batch, m: Any) -> None:
        mask = None if b.exec_all else b.exec
        addr = _lds_address(b, addr_reader, mask, offset)
        words = lds_load(m, _lane_wg(b, mask), addr, size)
        if kind != "d":
            words = _extend(words.view(np.uint8)[:, :size], size, kind, hi, b.V[row], mask, b)
        _store_lanes(b, b.V, row, words, mask)
    return read


def _ds_write(addr_reader, offset: int, size: int, hi: bool, data, ndw: int):
    """DS_WRITE_* / DS_STORE_*: the low ``size`` bytes of each lane's ``data`` to LDS (the high
    half for the d16_hi forms)."""
    def write(b: Batch, m: Any) -> None:
        mask = None if b.exec_all else b.exec
        addr = _lds_address(b, addr_reader, mask, offset)
        values = _lane_values(b, b.V, data.index, ndw, mask)
        if hi:
            values = values >> u32(16)
        lds_store(m, _lane_wg(b, mask), addr, values, size)
    return write


def _m0_row(inst: Instruction) -> int:
    """M0's row in Batch.S: operand code 124 on gfx9, 125 on gfx11/gfx12."""
    return 124 if inst.family == "gfx9" else 125


def _ds_special(inst: Instruction, addr_reader, rest, offset: int):
    """DS instructions outside the one-data atomic pattern: mask-or, wrap, the two-address
    exchanges, packed 16-bit float adds, append/consume and the lane-id addressed forms
    (CDNA3 / RDNA4 guides, "LDS Instructions"). None when ``inst`` is not one of them."""
    name = inst.name
    data = [op for op in rest if op.kind == "vgpr"]
    returns = bool(inst.dsts)
    dst_row = inst.dsts[0].index if returns else 0
    m0 = _m0_row(inst)
    match = re.match(r"^ds_(mskor|wrap)(_rtn)?_b(32|64)$", name)
    if match:
        op, _, bits = match.groups()
        size = int(bits) // 8
        return _ds_two_data(addr_reader, offset, data, returns, dst_row, size,
                            (lambda o, a, c: (o & ~a) | c) if op == "mskor" else
                            (lambda o, a, c: o - a if o >= a else o + c))
    match = re.match(r"^ds_(?:wrxchg2(st64)?|storexchg_2addr(_stride64)?)_rtn_b(32|64)$", name)
    if match:
        st64a, st64b, bits = match.groups()
        size = int(bits) // 8
        scale = size * (64 if (st64a or st64b) else 1)
        f = inst.fields
        return _ds_exchange2(addr_reader, int(f.get("offset0", 0)) * scale,
                             int(f.get("offset1", 0)) * scale, data, dst_row, size)
    match = re.match(r"^ds_pk_add(_rtn)?_(f16|bf16)$", name)
    if match:
        kind = match.group(2)
        return _ds_two_data(addr_reader, offset, data[:1], returns, dst_row, 4,
                            lambda o, a, c: int(_packed_add(np.array([o], u32),
                                                            np.array([a], u32), kind)[0]))
    if name in ("ds_append", "ds_consume"):
        return _ds_append(name == "ds_append", offset, dst_row, m0)
    if name == "ds_condxchg32_rtn_b64":
        return _ds_condxchg32(addr_reader, offset, data[0], dst_row)
    return None


def _ds_condxchg32(addr_reader, offset: int, data, dst_row: int):
    """DS_CONDXCHG32_RTN_B64 (CDNA3 / RDNA4 ISA guides, pseudocode): ADDR0 = (ADDR + OFFSET) &
    0xFFF8, ADDR1 = ADDR0 + 4; each half k returns LDS[ADDRk] and, iff DATA bit 32k + 31 is
    set, writes DATA's 31 bits below it with bit 31 clear. Lanes run in lane order."""
    def run(b: Batch, m: Any) -> None:
        mask = None if b.exec_all else b.exec
        addr = (_lanes(b, addr_reader, mask) + offset) & 0xFFF8
        wg = _lane_wg(b, mask)
        values = _lane_values(b, b.V, data.index, 2, mask)
        old = np.zeros((addr.size, 2), u32)
        for i in range(addr.size):
            for k in range(2):
                where = addr[i:i + 1] + 4 * k
                old[i, k] = lds_load(m, wg[i:i + 1], where, 4)[0, 0]
                if values[i, k] >> u32(31):
                    lds_store(m, wg[i:i + 1], where,
                              (values[i:i + 1, k] & u32(0x7FFFFFFF))[:, None], 4)
        _store_lanes(b, b.V, dst_row, old, mask)
    return run


def _ds_two_data(addr_reader, offset, data, returns, dst_row, size, step):
    """An LDS read-modify-write whose new value depends on one or two data operands,
    ``step(old, data0, data1)`` on Python ints, one lane after another in lane order."""
    ndw = size // 4
    mask_bits = (1 << (8 * size)) - 1

    def run(b: Batch, m: Any) -> None:
        mask = None if b.exec_all else b.exec
        addr = _lanes(b, addr_reader, mask) + offset
        wg = _lane_wg(b, mask)
        first = _qwords(_lane_values(b, b.V, data[0].index, ndw, mask))
        second = _qwords(_lane_values(b, b.V, data[1].index, ndw, mask)) if len(data) > 1 \
            else np.zeros_like(first)
        old = np.zeros(addr.size, np.uint64)
        for i in range(addr.size):
            words = lds_load(m, wg[i:i + 1], addr[i:i + 1], size)
            current = int(_qwords(words)[0])
            old[i] = current
            new = step(current, int(first[i]), int(second[i])) & mask_bits
            lds_store(m, wg[i:i + 1], addr[i:i + 1], _dwords(np.array([new], np.uint64), ndw),
                      size)
        if returns:
            _store_lanes(b, b.V, dst_row, _dwords(old, ndw), mask)
    return run


def _qwords(words: np.ndarray) -> np.ndarray:
    """``uint32[n, 1 or 2]`` -> ``uint64[n]`` (low dword first)."""
    out = words[:, 0].astype(np.uint64)
    if words.shape[1] > 1:
        out |= words[:, 1].astype(np.uint64) << np.uint64(32)
    return out


def _dwords(values: np.ndarray, ndw: int) -> np.ndarray:
    """``uint64[n]`` -> ``uint32[n, ndw]``."""
    lo = (values & np.uint64(0xFFFFFFFF)).astype(u32)
    if ndw == 1:
        return lo[:, None]
    return np.stack([lo, (values >> np.uint64(32)).astype(u32)], axis=1)


def _ds_exchange2(addr_reader, off0: int, off1: int, data, dst_row: int, size: int):
    """DS_WRXCHG2[ST64]_RTN / DS_STOREXCHG_2ADDR[_STRIDE64]_RTN: exchange DATA0 at ADDR + OFFSET0
    and DATA1 at ADDR + OFFSET1 (scaled by the element size, times 64 for the stride-64 forms),
    returning both old values."""
    ndw = size // 4
    utype = u32 if size == 4 else u64

    def run(b: Batch, m: Any) -> None:
        mask = None if b.exec_all else b.exec
        addr = _lanes(b, addr_reader, mask)
        wg = _lane_wg(b, mask)
        olds = []
        for off, op in ((off0, data[0]), (off1, data[1])):
            keys = wg.astype(np.int64) << 32 | ((addr + off) & 0xFFFFFFFF)
            values = np.ascontiguousarray(_lane_values(b, b.V, op.index, ndw, mask)) \
                .view(utype).reshape(-1)

            def read(k: np.ndarray) -> np.ndarray:
                return np.ascontiguousarray(lds_load(m, k >> 32, k & 0xFFFFFFFF, size)) \
                    .view(utype).reshape(-1)

            def write(k: np.ndarray, v: np.ndarray) -> None:
                lds_store(m, k >> 32, k & 0xFFFFFFFF,
                          np.ascontiguousarray(v.astype(utype)).view(u32).reshape(-1, ndw), size)
            old = _serial_rmw(read, write, keys, values, lambda o, v: v, None)
            olds.append(np.ascontiguousarray(old).view(u32).reshape(-1, ndw))
        _store_lanes(b, b.V, dst_row, np.concatenate(olds, axis=1), mask)
    return run


def _ds_append(append: bool, offset: int, dst_row: int, m0: int):
    """DS_APPEND / DS_CONSUME: add (subtract) the wave's count of EXEC lanes to the dword at
    M0 + offset and return the value before to every active lane; waves in dispatch order."""
    def run(b: Batch, m: Any) -> None:
        counts = b.exec.sum(axis=1).astype(np.int64)
        addr = b.S[:, m0].astype(np.int64) + offset
        old = np.zeros(b.waves, u32)
        for w in range(b.waves):
            if not counts[w]:
                continue
            wg, a = b.wg[w:w + 1], addr[w:w + 1]
            current = int(lds_load(m, wg, a, 4)[0, 0])
            old[w] = current
            new = (current + counts[w] if append else current - counts[w]) & 0xFFFFFFFF
            lds_store(m, wg, a, np.array([[new]], u32), 4)
        np.copyto(b.V[dst_row], np.broadcast_to(old[:, None], b.exec.shape), where=b.exec)
    return run


def _ds_addtid(offset: int, data, dst_row: int | None, m0: int):
    """DS_READ/WRITE_ADDTID_B32 (gfx12 DS_LOAD/STORE_ADDTID_B32): the dword at M0 + offset +
    4 * lane id, no address VGPR."""
    def addresses(b: Batch, mask) -> np.ndarray:
        lanes = np.arange(b.lanes, dtype=np.int64)[None, :]
        addr = b.S[:, m0].astype(np.int64)[:, None] + offset + 4 * lanes
        addr = np.broadcast_to(addr, b.exec.shape)
        return addr.reshape(-1) if mask is None else addr[mask]

    def load(b: Batch, m: Any) -> None:
        mask = None if b.exec_all else b.exec
        _store_lanes(b, b.V, dst_row, lds_load(m, _lane_wg(b, mask), addresses(b, mask), 4), mask)

    def store(b: Batch, m: Any) -> None:
        mask = None if b.exec_all else b.exec
        values = _lane_values(b, b.V, data[0].index, 1, mask)
        lds_store(m, _lane_wg(b, mask), addresses(b, mask), values, 4)
    return load if dst_row is not None else store


_DS_ATOMIC_RE = re.compile(r"^ds_(.+?)(_rtn)?_(u32|i32|f32|b32|u64|i64|f64|b64)$")


def _ds_atomic(inst: Instruction, addr_reader, rest, offset: int):
    match = _DS_ATOMIC_RE.match(inst.name)
    if match is None:
        raise NotImplementedOperand(inst.name)
    op, rtn, ty = match.groups()
    table = {"add": "add", "sub": "sub", "min": "min", "max": "max", "and": "and", "or": "or",
             "xor": "xor", "inc": "inc", "dec": "dec", "wrxchg": "swap", "storexchg": "swap",
             "cmpst": "cmpst",
             "cmpstore": "cmpstore", "min_num": "fmin", "max_num": "fmax", "rsub": "rsub",
             "cond_sub": "cond_sub", "sub_clamp": "sub_clamp"}
    if op not in table:
        raise NotImplementedOperand(inst.name)
    size = 8 if ty.endswith("64") else 4
    ndw = size // 4
    utype = u32 if size == 4 else u64
    dtype = {"u": utype, "b": utype, "i": np.int32 if size == 4 else np.int64,
             "f": np.float32 if size == 4 else np.float64}[ty[0]]
    kind = table[op]
    fns = {
        "add": lambda o, v: o + v, "sub": lambda o, v: o - v, "rsub": lambda o, v: v - o,
        "and": lambda o, v: o & v, "or": lambda o, v: o | v, "xor": lambda o, v: o ^ v,
        "swap": lambda o, v: v,
        "min": np.fmin if ty[0] == "f" else np.minimum,
        "max": np.fmax if ty[0] == "f" else np.maximum,
        "fmin": np.fmin, "fmax": np.fmax,
        "inc": lambda o, v: np.where(o >= v, 0, o + 1).astype(o.dtype),
        "dec": lambda o, v: np.where((o == 0) | (o > v), v, o - 1).astype(o.dtype),
        "cond_sub": lambda o, v: np.where(o >= v, o - v, o).astype(o.dtype),
        "sub_clamp": lambda o, v: np.where(v > o, 0, o - v).astype(o.dtype),
    }
    cmpswap = kind in ("cmpst", "cmpstore")
    fn = fns.get(kind)
    data_ops = [op_ for op_ in rest if op_.kind == "vgpr"]
    returns = bool(inst.dsts)
    dst_row = inst.dsts[0].index if returns else 0

    def atomic(b: Batch, m: Any) -> None:
        mask = None if b.exec_all else b.exec
        addr = _lds_address(b, addr_reader, mask, offset)
        wg = _lane_wg(b, mask)
        # unique per (workgroup, address), also for addresses past the workgroup's LDS
        keys = wg.astype(np.int64) << 32 | (addr & 0xFFFFFFFF)
        values = _lane_values(b, b.V, data_ops[0].index, ndw, mask)
        values = np.ascontiguousarray(values).view(utype).reshape(-1).view(dtype)
        cmp = None
        if cmpswap:
            second = _lane_values(b, b.V, data_ops[1].index, ndw, mask)
            second = np.ascontiguousarray(second).view(utype).reshape(-1).view(dtype)
            if kind == "cmpst":
                # gfx9 ds_cmpst: data0 is the compare value, data1 the new value ("DS_CMPST")
                cmp, values = values, second
            else:
                # gfx11/gfx12 ds_cmpstore: data0 is the new value, data1 the compare value
                # (RDNA3/4 ISA "DS_CMPSTORE_B32": src = DATA, cmp = DATA2)
                cmp = second

        def read(k: np.ndarray) -> np.ndarray:
            words = lds_load(m, k >> 32, k & 0xFFFFFFFF, size)
            return np.ascontiguousarray(words).view(utype).reshape(-1).view(dtype)

        def write(k: np.ndarray, v: np.ndarray) -> None:
            words = np.ascontiguousarray(v.astype(dtype)).view(u32).reshape(-1, ndw)
            lds_store(m, k >> 32, k & 0xFFFFFFFF, words, size)
        old = _serial_rmw(read, write, keys, values, fn, cmp)
        if returns:
            _store_lanes(b, b.V, dst_row, np.ascontiguousarray(old).view(u32).reshape(-1, ndw),
                         mask)
    if fn is not None and kind == "add":
        fn._is_add = True  # type: ignore[attr-defined]
    return atomic


def _lds_address(b: Batch, reader, mask, offset: int) -> np.ndarray:
    """ADDR + OFFSET of a DS instruction, a 32-bit sum: a "negative" address plus an offset
    wraps (LLVM folds offsets into DS addresses with negative bases on gfx7+,
    GCNSubtarget::hasUsableDSOffset)."""
    return (_lanes(b, reader, mask) + offset) & 0xFFFFFFFF


def _lanes(b: Batch, reader, mask) -> np.ndarray:
    if reader is None:
        values = np.zeros(b.exec.shape, np.int64)
    else:
        values = np.broadcast_to(np.asarray(reader(b)).astype(np.int64), b.exec.shape)
    return values.reshape(-1) if mask is None else values[mask]


def _ds_permute(inst: Instruction, offset: int):
    """ds_bpermute_b32 (pull: dst[i] = src[addr_i / 4]) / ds_permute_b32 (push); lanes index
    modulo the wave size; an inactive source lane reads 0 (gfx9 ISA "DS_BPERMUTE_B32")."""
    addr = vector_reader(inst.srcs[0], "u32")
    data = vector_reader(inst.srcs[1], "u32")
    row = inst.dsts[0].index
    pull = inst.name == "ds_bpermute_b32"

    def permute(b: Batch, m: Any) -> None:
        lanes = b.lanes
        index = ((np.broadcast_to(addr(b), b.exec.shape).astype(np.int64) + offset) >> 2) % lanes
        src = np.where(b.exec, np.broadcast_to(data(b), b.exec.shape), u32(0))
        rows = np.arange(b.waves)[:, None]
        if pull:
            result = src[rows, index]
        else:
            result = np.zeros(b.exec.shape, u32)
            sel = b.exec
            result[np.broadcast_to(rows, b.exec.shape)[sel], index[sel]] = src[sel]
        np.copyto(b.V[row], result, where=b.exec)
    return permute


def _ds_swizzle(inst: Instruction, offset: int):
    """ds_swizzle_b32: offset[15] = 1 -> quad-permute mode (2 bits per lane of a quad), else
    bitmask mode over groups of 32 lanes: and_mask [4:0], or_mask [9:5], xor_mask [14:10]."""
    data = vector_reader(inst.srcs[-1], "u32")
    row = inst.dsts[0].index

    def swizzle(b: Batch, m: Any) -> None:
        lanes = np.arange(b.lanes)
        if offset & 0x8000:
            quad = lanes & ~3
            sel = (offset >> (2 * (lanes & 3))) & 3
            source = quad + sel
        else:
            and_mask = offset & 0x1F
            or_mask = (offset >> 5) & 0x1F
            xor_mask = (offset >> 10) & 0x1F
            group = lanes & ~31
            source = group + ((((lanes & 31) & and_mask) | or_mask) ^ xor_mask)
        src = np.where(b.exec, np.broadcast_to(data(b), b.exec.shape), u32(0))
        result = src[:, source]
        np.copyto(b.V[row], result, where=b.exec)
    return swizzle
