"""A kernel's machine code as the interpreter runs it.

:class:`DescriptorFields` are the kernel descriptor fields the interpreter reads;
:class:`ProgramInfo` what compiling an instruction needs to know (ISA family, wave size, MODE);
:class:`CodeText` where a loaded code object's functions and executable segments lie; and
:class:`Program` the decoded and compiled code for one wave size and MODE value: a function is
decoded when execution first reaches it, an instruction compiled the first time it runs, and the
end of each decoded range continues into the next function or faults (undecodable words, the end
of the code).
"""
from __future__ import annotations

import struct
import threading
from dataclasses import dataclass
from typing import Any

from hsapy.hsa_enums import HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION
from hsapy.sim.execution import SimFault
from hsapy.sim.isa import counters
from hsapy.sim.isa.float_mode import FloatMode
from hsapy.sim.isa.semantics import compile_instruction
from hsapy.sim.isa.wave import Batch


@dataclass(frozen=True)
class DescriptorFields:
    """The fields of the 64-byte kernel descriptor the interpreter uses (docs/hsa-abi.md)."""

    group_segment_fixed_size: int
    private_segment_fixed_size: int
    kernarg_size: int
    entry_offset: int
    rsrc1: int
    rsrc2: int
    rsrc3: int
    code_properties: int
    kernarg_preload: int

    @classmethod
    def from_bytes(cls, raw: bytes) -> DescriptorFields:
        """Parse the 64 descriptor bytes."""
        group, private, kernarg = struct.unpack_from("<III", raw, 0)
        (entry,) = struct.unpack_from("<q", raw, 16)
        rsrc3, rsrc1, rsrc2 = struct.unpack_from("<III", raw, 44)
        props, preload = struct.unpack_from("<HH", raw, 56)
        return cls(group, private, kernarg, entry, rsrc1, rsrc2, rsrc3, props, preload)

    @property
    def wave32(self) -> bool:
        """kernel_code_properties bit 10: wavefront_size32."""
        return bool(self.code_properties & (1 << 10))

    @property
    def user_sgpr_count(self) -> int:
        """rsrc2 bits 5:1."""
        return (self.rsrc2 >> 1) & 0x1F

    @property
    def float_denorm_32(self) -> int:
        """rsrc1 bits 17:16 (0 = flush input and output denormals, 3 = keep them)."""
        return (self.rsrc1 >> 16) & 3

    @property
    def float_denorm_16_64(self) -> int:
        """rsrc1 bits 19:18."""
        return (self.rsrc1 >> 18) & 3


@dataclass
class ProgramInfo:
    """What instruction compilation needs to know about the kernel: its ISA family, wave size
    and the MODE register's float controls it runs under (``ftz32``/``ftz64`` are the flushing
    those controls imply; ``mode`` defaults to round-to-nearest with that flushing)."""

    family: str
    wave_size: int
    ftz32: bool
    ftz64: bool
    mode: FloatMode | None = None

    def __post_init__(self) -> None:
        if self.mode is None:
            self.mode = FloatMode.from_flags(self.ftz32, self.ftz64)

    @property
    def ieee(self) -> bool:
        """MODE.IEEE (bit 9): the gfx9 IEEE mode min/max follow."""
        return self.mode.ieee

    @classmethod
    def for_mode(cls, family: str, wave_size: int, mode: int) -> ProgramInfo:
        """The information for a program compiled for MODE register value ``mode``."""
        float_mode = FloatMode(mode)
        return cls(family, wave_size, float_mode.ftz32, float_mode.ftz64, float_mode)


@dataclass(frozen=True)
class CodeText:
    """Where a loaded code object's machine code lies: its function symbols as absolute
    ``(start, end, name)`` ranges (a function runs to the next one or to the end of its
    segment, so padding after s_endpgm belongs to it) and its executable segments as
    ``(start, end)``."""

    functions: tuple[tuple[int, int, str], ...]
    segments: tuple[tuple[int, int], ...]

    def range_at(self, pc: int) -> tuple[int, int] | None:
        """The code range to decode for a jump to ``pc``: the function containing it, else
        from ``pc`` to the next function or the end of its segment; None outside the code."""
        for start, end, _ in self.functions:
            if start <= pc < end:
                return start, end
        for start, end in self.segments:
            if start <= pc < end:
                following = [f for f, _, _ in self.functions if pc < f < end]
                return pc, min(following, default=end)
        return None

    def name_at(self, pc: int) -> str:
        """``name+0x..`` of the function containing ``pc`` ("" when none does)."""
        for start, end, name in self.functions:
            if start <= pc < end:
                return f"{name}+{pc - start:#x}" if pc != start else name
        return ""

    @classmethod
    def of_kernel(cls, kernel: Any, entry: int, alloc: Any) -> CodeText:
        """From the loader's record (its code object and load base); a record without them
        gives one range from the entry to the end of the allocation."""
        co = getattr(kernel, "code_object", None)
        base = getattr(kernel, "load_base", None)
        alloc_end = alloc.address + alloc.size
        if co is None or not isinstance(base, int):
            return cls((), ((entry, alloc_end),))
        try:
            segments = tuple((base + seg.vaddr, base + seg.vaddr + seg.filesz)
                             for seg in co.segments if seg.flags & 1)     # PF_X
            starts = sorted({base + int(sym.value): name for name, sym in co.symbols.items()
                             if str(getattr(sym, "type", "")).upper().endswith("FUNC")
                             and any(a <= base + int(sym.value) < b for a, b in segments)
                             }.items())
        except Exception:  # noqa: BLE001 - an unusual record: decode from the entry only
            return cls((), ((entry, alloc_end),))
        functions = []
        for k, (start, name) in enumerate(starts):
            seg_end = next(b for a, b in segments if a <= start < b)
            end = starts[k + 1][0] if k + 1 < len(starts) and starts[k + 1][0] < seg_end \
                else seg_end
            if end > start:
                functions.append((start, end, name))
        if not segments or not any(a <= entry < b for a, b in segments):
            return cls((), ((entry, alloc_end),))
        return cls(tuple(functions), segments)


class Program:
    """Decoded and compiled machine code of a loaded code object, for one wave size and one
    MODE value. Every function of the code object can run (calls through s_swappc_b64 /
    s_setpc_b64, function pointers); a function is decoded when execution first reaches it
    and an instruction compiled the first time it runs.

    ``insts[i]`` / ``fns[i]`` / ``offsets[i]`` describe entry ``i``; after the last instruction
    of each decoded range comes one more entry (``insts`` None) that continues at the range's
    end (the next function, as the hardware would fall through), or faults when the range
    ended at undecodable words or at the end of the code. ``index`` maps an address to its
    entry. The lists only grow, so a scheduler may keep references to them.
    """

    def __init__(self, target: str, info: ProgramInfo, text: CodeText, memory: Any,
                 profiled: bool = False) -> None:
        self.target = target
        self.info = info
        self.text = text
        self.memory = memory
        self.profiled = profiled      # closures report to the machine's counters recorder
        self.insts: list = []
        self.fns: list = []
        self.offsets: list[int] = []
        self.index: dict[int, int] = {}
        self.errors: dict[int, Exception] = {}
        self.usage: dict[int, tuple[int, int]] = {}    # range start -> (VGPRs, AGPRs) it names
        self._decoded: list[tuple[int, int]] = []
        self._lock = threading.Lock()

    def lookup(self, pc: int) -> int | None:
        """The entry of address ``pc``, decoding the function that contains it if needed."""
        i = self.index.get(pc)
        if i is not None:
            return i
        if any(start <= pc < end for start, end in self._decoded):
            return None          # inside decoded code, but not where an instruction starts
        span = self.text.range_at(pc)
        if span is None:
            return None
        start, end = span
        # code between functions may have been decoded from a later address before
        end = min([end] + [a for a, _ in self._decoded if start < a < end])
        self.decode_range(start, end)
        return self.index.get(pc)

    def decode_range(self, start: int, end: int) -> tuple[int, int]:
        """Decode [start, end) (once) and return the (VGPRs, AGPRs) its instructions name."""
        with self._lock:
            if start in self.usage:
                return self.usage[start]
            code = self.memory.read(start, end - start)
            insts, error = _decode_prefix(code, self.target, start, self.info.wave_size)
            first = len(self.insts)
            for k, inst in enumerate(insts):
                self.insts.append(inst)
                self.fns.append(_compile_on_first_run(self, first + k))
                self.offsets.append(inst.offset)
            tail = insts[-1].offset + insts[-1].size if insts else start
            if error is not None:
                tail = getattr(error, "offset", tail)
                self.errors[tail] = error
                self.fns.append(_undecodable(self.target, error))
            elif self.text.range_at(tail) is not None:
                self.fns.append(_continue_at(tail))   # falls through into the next function
            else:
                self.fns.append(_ran_off_the_end(self.target, tail))
            self.insts.append(None)
            self.offsets.append(tail)
            for k, inst in enumerate(insts):
                self.index[inst.offset] = first + k
            if error is not None:
                self.index.setdefault(tail, first + len(insts))
            vgprs, agprs = 1, 0
            for inst in insts:
                for op in tuple(inst.dsts) + tuple(inst.srcs) + _pair_ops(inst):
                    if op.kind == "vgpr":
                        vgprs = max(vgprs, op.index + op.count)
                    elif op.kind == "agpr":
                        agprs = max(agprs, op.index + op.count)
            self._decoded.append((start, end))
            self.usage[start] = (vgprs, agprs)
            self.on_decoded(first, len(insts) + 1)
            return vgprs, agprs

    def on_decoded(self, first: int, count: int) -> None:
        """Entries [first, first + count) were just decoded (a compiling engine's hook)."""

    def entry(self, pc: int) -> tuple[int, int]:
        """Decode the function a kernel enters at ``pc``; returns the (VGPRs, AGPRs) it
        names."""
        span = self.text.range_at(pc)
        if span is None:
            raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                           f"{self.target}: kernel entry {pc:#x} is outside the code object's "
                           "executable segments", pc)
        usage = self.decode_range(*span)
        if pc not in self.index:
            raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                           f"{self.target}: kernel entry {pc:#x} is not the start of an "
                           "instruction", pc)
        return usage

    def where(self, i: int) -> str:
        """``<text> at <address>`` of entry ``i`` for error messages."""
        inst = self.insts[i] if 0 <= i < len(self.insts) else None
        if inst is None:
            return f"the end of the code at {self.offsets[i]:#x}" if i < len(self.offsets) \
                else "the end of the code"
        return f"{inst.text()} at {inst.offset:#x}"


def _compile_on_first_run(program: Program, i: int):
    def first_run(b: Batch, m: Any):
        fn = compile_instruction(program.insts[i], program.info)
        if program.profiled:
            fn = counters.wrap(program.insts[i], fn)
        program.fns[i] = fn
        return fn(b, m)
    return first_run


def _continue_at(address: int):
    return lambda b, m: address


def _pair_ops(inst) -> tuple:
    pair = getattr(inst, "pair", None)
    if pair is None:
        return ()
    return tuple(pair.dsts) + tuple(pair.srcs)


def _ran_off_the_end(target: str, address: int):
    def run(b: Batch, m: Any) -> None:
        raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                       f"{target}: execution ran past the end of the code object's code at "
                       f"{address:#x}", address)
    return run


def _undecodable(target: str, error: Exception):
    def run(b: Batch, m: Any) -> None:
        raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                       f"not implemented for {target}: {error}", getattr(error, "offset", None))
    return run


def _decode_prefix(code: bytes, target: str, base: int,
                   wave_size: int | None = None) -> tuple[list, Exception | None]:
    """Decode ``code``; on a DecodeError keep the instructions before it (trailing data after
    the kernel is never executed; reaching the bad offset faults with the decoder's message)."""
    from hsapy.sim.isa.decoder import decode
    from hsapy.sim.isa.instruction import DecodeError

    code = code[: len(code) - len(code) % 4]
    try:
        return list(decode(code, target, base, wavefront_size=wave_size)), None
    except DecodeError as exc:
        good = exc.offset - base
        if good <= 0:
            return [], exc
        insts, _ = _decode_prefix(code[:good], target, base, wave_size)
        return insts, exc
