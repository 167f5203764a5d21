"""The ISA interpreter behind the simulator's executor seam (docs/internals.md).

``InterpreterExecutor(profile).execute(ctx)`` runs one kernel dispatch:

1. Reads the 64-byte kernel descriptor at ``ctx.kernel_object`` (through SimMemory) and decodes
   the machine code from the entry point (cached per loaded code).
2. Builds the initial state of every wave exactly as the hardware does from the descriptor and
   the packet (docs/hsa-abi.md, "Wave state at kernel entry"; LLVM AMDGPUUsage,
   "Initial Kernel Execution State"): user SGPRs, system SGPRs (or gfx12's architected TTMPs),
   packed work-item ids in v0, EXEC for partial waves.
3. Runs all waves of (a chunk of) the dispatch as one :class:`~hsapy.sim.isa.wave.Batch`: each
   instruction is one numpy operation over waves x lanes. A scalar branch that goes both ways
   splits the batch; batches that reach the same PC merge again; a barrier holds a batch until
   every live wave of its workgroups has arrived.

Faults: a memory access outside every allocation raises ``SimFault(HSA_STATUS_ERROR_MEMORY_FAULT,
..., address)``; an instruction without semantics ``SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
"not implemented for <target>: <mnemonic> at <offset>")``. Every few thousand instructions the
scheduler polls the context: a queue being destroyed cancels the dispatch, and the watchdog stops
one that runs past its host-time limit (``DispatchContext.poll``).
"""
from __future__ import annotations

import struct
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from hsapy.codeobject import max_scratch_per_wave
from hsapy.sim.executor import (HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                                HSA_STATUS_ERROR_MEMORY_FAULT,
                                HSA_STATUS_ERROR_OUT_OF_RESOURCES, DispatchContext, SimFault,
                                register_executor, registered_factory)
from hsapy.sim.isa.semantics import (BARRIER, END, NotImplementedInstruction,
                                     compile_instruction)
from hsapy.sim.isa.semantics_buffer import private_segment_buffer
from hsapy.sim.isa.wave import NSREG, TTMP0, Batch, merge
from hsapy.sim.memory import SimMemoryFault
from hsapy.sim.targets import GpuProfile

__all__ = ["InterpreterExecutor", "KernelDescriptor", "register", "Program", "ExecutionStats"]

# Waves run in chunks of whole workgroups whose state is about this many bytes: small enough
# that a register of the chunk stays in the CPU caches between instructions (measured: 2 MiB
# runs vector add 3-5x faster than one batch of the whole grid).
CHUNK_BYTES = 2 << 20
# Hang protection: every this many batch-instructions (and between chunks) the scheduler calls
# DispatchContext.poll, which stops the dispatch when the queue is being destroyed or when the
# watchdog's host-time limit has passed (hsapy/sim/executor.py). One integer compare per taken
# branch; the poll itself costs about a microsecond every few milliseconds of interpretation.
POLL_STEPS = 2048


@dataclass(frozen=True)
class KernelDescriptor:
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
    def from_bytes(cls, raw: bytes) -> "KernelDescriptor":
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
    """What instruction compilation needs to know about the kernel."""

    family: str
    wave_size: int
    ftz32: bool
    ftz64: bool


class Program:
    """Decoded and compiled machine code of one kernel entry."""

    def __init__(self, insts: list, fns: list, decode_error: Exception | None) -> None:
        self.insts = insts
        self.fns = fns
        self.index = {inst.offset: i for i, inst in enumerate(insts)}
        # offsets[i] = address of instruction i; one past the end so that i + 1 is always valid
        end = insts[-1].offset + insts[-1].size if insts else 0
        self.offsets = [inst.offset for inst in insts] + [end]
        self.decode_error = decode_error
        vgprs = 1
        agprs = 0
        for inst in insts:
            for op in tuple(inst.dsts) + tuple(inst.srcs) + _pair_ops(inst):
                if op.kind == "vgpr":
                    vgprs = max(vgprs, op.index + op.count)
                elif op.kind == "agpr":
                    agprs = max(agprs, op.index + op.count)
        self.vgprs = vgprs
        self.agprs = agprs


def _pair_ops(inst) -> tuple:
    pair = getattr(inst, "pair", None)
    if pair is None:
        return ()
    return tuple(pair.dsts) + tuple(pair.srcs)


@dataclass
class ExecutionStats:
    """Counters of the last dispatch (benchmarks read them)."""

    lane_instructions: int = 0
    wave_instructions: int = 0
    batch_steps: int = 0
    waves: int = 0


class _Machine:
    """Per-dispatch-chunk state the instruction closures use (memory, LDS, scheduler)."""

    def __init__(self, ctx: DispatchContext, workgroups: int, lds_size: int, private_size: int,
                 wave_size: int) -> None:
        from hsapy.sim.queues import PRIVATE_APERTURE_BASE, SHARED_APERTURE_BASE

        self.memory = ctx.memory
        self.agent = ctx.agent_handle or None
        self.clock = ctx.clock
        self.lds_size = lds_size
        self.lds_stride = (max(lds_size, 4) + 3) & ~3
        self.lds = np.zeros(workgroups * self.lds_stride + 16, np.uint8)
        self.lds_words = self.lds[: (self.lds.size // 4) * 4].view(np.uint32)
        self.private_size = private_size
        self.shared_base = SHARED_APERTURE_BASE
        self.private_base = PRIVATE_APERTURE_BASE
        self.wave_size = wave_size
        self.pending: list[Batch] = []

    def split(self, b: Batch, taken: np.ndarray, target: int, fallthrough: int) -> None:
        """Divergent scalar branch: continue the two halves as separate batches."""
        self.pending.append(b.take(taken, target))
        self.pending.append(b.take(~taken, fallthrough))


# Counters of the most recent dispatch on any agent (benchmarks/sim.py reads them).
last_stats = ExecutionStats()

_program_cache: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
_program_lock = threading.Lock()


class InterpreterExecutor:
    """Executes dispatches for one GPU profile (gfx9 or gfx12 family)."""

    def __init__(self, profile: GpuProfile) -> None:
        self.profile = profile
        self.stats = ExecutionStats()

    # --- the seam ---------------------------------------------------------------------------
    def execute(self, ctx: DispatchContext) -> None:
        """Run every wave of the dispatch; raises SimFault on a fault."""
        global last_stats
        self.stats = ExecutionStats()
        try:
            raw = ctx.memory.read(ctx.kernel_object, 64)
        except SimMemoryFault as fault:
            raise SimFault(HSA_STATUS_ERROR_MEMORY_FAULT,
                           f"kernel descriptor unreadable: {fault}", fault.address) from None
        kd = KernelDescriptor.from_bytes(raw)
        entry = ctx.kernel_object + kd.entry_offset
        wave_size = 32 if kd.wave32 else 64
        if self.profile.family == "gfx9":
            wave_size = 64
        private = max(int(ctx.private_segment_size), kd.private_segment_fixed_size)
        limit = max_scratch_per_wave(self.profile.name)
        if limit is not None and private * wave_size > limit:
            # ROCr cannot program the queue's scratch for it and stops the queue the same way
            raise SimFault(
                HSA_STATUS_ERROR_OUT_OF_RESOURCES,
                f"the dispatch needs {private} bytes of private memory per work-item, "
                f"{private * wave_size} per wave of {wave_size}; {self.profile.name} allows at "
                f"most {limit} bytes of scratch per wave (COMPUTE_TMPRING_SIZE.WAVESIZE)")
        info = ProgramInfo(self.profile.family, wave_size,
                           ftz32=kd.float_denorm_32 == 0, ftz64=kd.float_denorm_16_64 == 0)
        program = self._program(ctx, entry, info)
        if program.insts and program.insts[0].name == "s_endpgm":
            # every wave ends at its first instruction: nothing observable happens
            grid = [max(1, int(g)) for g in ctx.grid_size]
            block = [max(1, int(w)) for w in ctx.workgroup_size]
            groups = [(g + w - 1) // w for g, w in zip(grid, block)]
            items = block[0] * block[1] * block[2]
            waves = groups[0] * groups[1] * groups[2] * ((items + wave_size - 1) // wave_size)
            self.stats = ExecutionStats(grid[0] * grid[1] * grid[2], waves, 1, waves)
            global last_stats
            last_stats = self.stats
            return
        lds = max(int(ctx.group_segment_size), kd.group_segment_fixed_size)
        with np.errstate(all="ignore"):
            for chunk in self._chunks(ctx, wave_size, program, lds, private):
                ctx.poll()
                self._run_chunk(ctx, kd, program, wave_size, chunk, entry, lds, private)
        last_stats = self.stats

    # --- code ---------------------------------------------------------------------------------
    def _program(self, ctx: DispatchContext, entry: int, info: ProgramInfo) -> Program:
        alloc = ctx.memory.find(entry)
        if alloc is None:
            raise SimFault(HSA_STATUS_ERROR_MEMORY_FAULT,
                           f"kernel entry {entry:#x} is outside every allocation", entry)
        key = (entry, info.family, info.wave_size, info.ftz32, info.ftz64)
        with _program_lock:
            per_alloc = _program_cache.setdefault(alloc, {})
            program = per_alloc.get(key)
        if program is not None:
            return program
        code = self._code_bytes(ctx, alloc, entry)
        insts, error = _decode_prefix(code, self.profile.name, entry)
        fns = [compile_instruction(inst, info) for inst in insts]
        if error is not None:   # execution that reaches the undecodable words faults naming them
            fns.append(_undecodable(self.profile.name, error))
        else:
            fns.append(_ran_off_the_end(self.profile.name, entry + len(code)))
        program = Program(insts, fns, error)
        with _program_lock:
            per_alloc[key] = program
        return program

    def _code_bytes(self, ctx: DispatchContext, alloc: Any, entry: int) -> bytes:
        """The kernel's machine code: [entry, end of its function symbol) when the loader's
        record tells us, else up to the end of the allocation (decoding stops at data)."""
        end = alloc.address + alloc.size
        size = _kernel_code_size(ctx.kernel)
        if size:
            end = min(end, entry + size)
        return ctx.memory.read(entry, end - entry)

    # --- chunks of workgroups -----------------------------------------------------------------
    def _chunks(self, ctx: DispatchContext, wave_size: int, program: Program, lds: int,
                private: int):
        """Whole workgroups per chunk, ``lds`` and ``private`` being the dispatch's group
        segment bytes per workgroup and private bytes per work-item."""
        grid = [max(1, int(g)) for g in ctx.grid_size]
        block = [max(1, int(w)) for w in ctx.workgroup_size]
        counts = [(g + w - 1) // w for g, w in zip(grid, block)]
        total = counts[0] * counts[1] * counts[2]
        items = block[0] * block[1] * block[2]
        waves_per_wg = (items + wave_size - 1) // wave_size
        per_wg = waves_per_wg * wave_size * 4 * (program.vgprs + program.agprs) + lds \
            + waves_per_wg * NSREG * 4 + waves_per_wg * wave_size * private
        per_chunk = max(1, CHUNK_BYTES // max(1, per_wg))
        for start in range(0, total, per_chunk):
            yield start, min(total, start + per_chunk), counts, grid, block

    def _run_chunk(self, ctx: DispatchContext, kd: KernelDescriptor, program: Program,
                   wave_size: int, chunk: tuple, entry: int, lds: int, private: int) -> None:
        start, stop, counts, grid, block = chunk
        batch, alive = self._initial_batch(ctx, kd, program, wave_size, start, stop, counts,
                                           grid, block, entry)
        machine = _Machine(ctx, stop - start, lds, private, wave_size)
        self._schedule(ctx, program, machine, batch, alive)

    # --- initial wave state -------------------------------------------------------------------
    def _initial_batch(self, ctx, kd, program, wave_size, start, stop, counts, grid, block,
                       entry) -> tuple[Batch, np.ndarray]:
        profile = self.profile
        nx, ny, _ = counts
        wg_linear = np.arange(start, stop, dtype=np.int64)
        wg_x = wg_linear % nx
        wg_y = (wg_linear // nx) % ny
        wg_z = wg_linear // (nx * ny)
        # partial workgroups at the grid's upper edges (HSA: grid need not divide evenly)
        size_x = np.minimum(block[0], grid[0] - wg_x * block[0])
        size_y = np.minimum(block[1], grid[1] - wg_y * block[1])
        size_z = np.minimum(block[2], grid[2] - wg_z * block[2])
        items = size_x * size_y * size_z
        waves_per_wg = (items + wave_size - 1) // wave_size
        wg_of_wave = np.repeat(np.arange(stop - start), waves_per_wg)
        first_wave = np.concatenate([[0], np.cumsum(waves_per_wg)[:-1]])
        wave_in_wg = np.arange(wg_of_wave.size) - first_wave[wg_of_wave]
        W = wg_of_wave.size
        L = wave_size
        V = np.zeros((program.vgprs, W, L), np.uint32)
        A = np.zeros((program.agprs, W, L), np.uint32) if program.agprs else None
        # Work-item ids per distinct workgroup shape (full, or partial at the grid's edges),
        # computed once per shape and gathered into the waves: lanes are numbered x fastest.
        vgpr_ids = (kd.rsrc2 >> 11) & 3
        packed_ids = profile.packed_work_item_ids
        if all(g % b == 0 for g, b in zip(grid, block)):
            shape_list = [tuple(block)]
            shape_of_wg = np.zeros(stop - start, np.intp)
        else:
            shapes, shape_of_wg = np.unique(np.stack([size_x, size_y, size_z], axis=1), axis=0,
                                            return_inverse=True)
            shape_list = [tuple(row) for row in shapes.tolist()]
            shape_of_wg = shape_of_wg.reshape(-1)
        tables = [_id_table(shape, L, vgpr_ids, packed_ids) for shape in shape_list]
        most = max(t[1].shape[0] for t in tables)
        if len(tables) == 1:
            id_table = tables[0][0][None]
            live_table = tables[0][1][None]
        else:
            id_table = np.zeros((len(tables), 3, most, L), np.uint32)
            live_table = np.zeros((len(tables), most, L), bool)
            for k, (ids, live_k) in enumerate(tables):
                id_table[k, :, : ids.shape[1]] = ids
                live_table[k, : live_k.shape[0]] = live_k
        wave_shape = shape_of_wg[wg_of_wave]
        live = live_table[wave_shape, wave_in_wg]
        if packed_ids:
            V[0] = id_table[wave_shape, 0, wave_in_wg]
        else:
            for axis in range(min(vgpr_ids + 1, program.vgprs)):
                V[axis] = id_table[wave_shape, axis, wave_in_wg]
        S = np.zeros((W, NSREG), np.uint32)
        self._user_sgprs(ctx, kd, S)
        gx = wg_x[wg_of_wave].astype(np.uint32)
        gy = wg_y[wg_of_wave].astype(np.uint32)
        gz = wg_z[wg_of_wave].astype(np.uint32)
        if profile.has_architected_sgprs:
            # gfx12: TTMP9 = workgroup id x, TTMP7 = z << 16 | y, TTMP8[29:25] = wave id in group
            S[:, TTMP0 + 9] = gx
            S[:, TTMP0 + 7] = (gz << np.uint32(16)) | (gy & np.uint32(0xFFFF))
            S[:, TTMP0 + 8] = (wave_in_wg.astype(np.uint32) & np.uint32(0x1F)) << np.uint32(25)
        else:
            row = kd.user_sgpr_count
            for bit, values in ((7, gx), (8, gy), (9, gz)):
                if kd.rsrc2 & (1 << bit):
                    S[:, row] = values
                    row += 1
            if kd.rsrc2 & (1 << 10):  # workgroup info: not written by current hardware; zero
                row += 1
            if kd.rsrc2 & 1:  # private segment wave byte offset
                S[:, row] = 0
                row += 1
        batch = Batch(entry, S, V, A, live, np.zeros(W, bool),
                      wg_of_wave.astype(np.int64), np.arange(W, dtype=np.int64))
        alive = np.bincount(wg_of_wave, minlength=stop - start).astype(np.int64)
        return batch, alive

    def _user_sgprs(self, ctx: DispatchContext, kd: KernelDescriptor, S: np.ndarray) -> None:
        """User SGPRs from s0 in LLVM's order, each only when enabled (AMDGPUUsage, "Initial
        Kernel Execution State")."""
        props = kd.code_properties
        row = 0

        def put64(value: int) -> None:
            nonlocal row
            S[:, row] = value & 0xFFFFFFFF
            S[:, row + 1] = (value >> 32) & 0xFFFFFFFF
            row += 2

        if props & 1:
            # private segment buffer V# (gfx9 MUBUF scratch): its base is the window through
            # which buffer instructions reach each wave's private memory (semantics_buffer.py)
            private = max(int(ctx.private_segment_size), kd.private_segment_fixed_size)
            wave = 32 if kd.wave32 and self.profile.family != "gfx9" else 64
            S[:, row:row + 4] = private_segment_buffer(self.profile.family, wave, private)
            row += 4
        if props & 2:
            put64(ctx.packet_address)
        if props & 4:
            put64(ctx.queue_address)
        if props & 8:
            put64(ctx.kernarg_address)
        if props & 16:
            put64(ctx.dispatch_id)
        if props & 32:  # flat scratch init: the private aperture is addressed directly
            put64(0)
        if props & 64:
            S[:, row] = max(int(ctx.private_segment_size), kd.private_segment_fixed_size)
            row += 1
        preload = kd.kernarg_preload & 0x7F
        if preload:
            offset = (kd.kernarg_preload >> 7) * 4
            try:
                raw = ctx.memory.read(ctx.kernarg_address + offset, 4 * preload)
            except SimMemoryFault as fault:
                raise SimFault(HSA_STATUS_ERROR_MEMORY_FAULT, str(fault), fault.address) from None
            S[:, row:row + preload] = np.frombuffer(raw, np.uint32)

    # --- scheduling -----------------------------------------------------------------------------
    def _schedule(self, ctx: DispatchContext, program: Program, machine: _Machine,
                  first: Batch, alive: np.ndarray) -> None:
        runnable: list[Batch] = [first]
        waiting: list[Batch] = []
        stats = self.stats
        stats.waves += first.waves
        fns = program.fns
        index = program.index
        offsets = program.offsets
        steps = 0
        poll_at = POLL_STEPS
        while runnable or waiting:
            if steps >= poll_at:
                poll_at = steps + POLL_STEPS
                ctx.poll()
            if not runnable:
                runnable = self._release_barrier(waiting, alive)
                waiting = [b for b in waiting if b.status == BARRIER]
                if not runnable:
                    raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                                   f"deadlock on {self.profile.name}: waves wait at a barrier "
                                   "that the rest of their workgroup never reaches", None)
            pc = min(b.pc for b in runnable)
            same = [b for b in runnable if b.pc == pc]
            runnable = [b for b in runnable if b.pc != pc]
            # run until the lowest PC of the others: there the batches merge again
            stop_at = min((x.pc for x in runnable), default=1 << 64)
            b = merge(same)
            i = index.get(pc)
            if i is None:
                self._bad_pc(program, pc)
            while True:
                try:
                    result = fns[i](b, machine)
                except NotImplementedInstruction as exc:
                    inst = program.insts[i]
                    raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                                   f"not implemented for {self.profile.name}: {inst.mnemonic} at "
                                   f"{inst.offset:#x} ({exc})", inst.offset) from None
                except SimMemoryFault as fault:
                    inst = program.insts[i]
                    raise SimFault(HSA_STATUS_ERROR_MEMORY_FAULT,
                                   f"memory fault on {self.profile.name} at address "
                                   f"{fault.address:#x} ({fault.kind} of {fault.nbytes} bytes) by "
                                   f"{inst.text()} at {inst.offset:#x}", fault.address) from None
                except SimFault:
                    raise
                except Exception as exc:  # noqa: BLE001 - an interpreter bug must not kill the queue thread
                    inst = program.insts[i] if i < len(program.insts) else None
                    where = f"{inst.text()} at {inst.offset:#x}" if inst else "the end of the code"
                    raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                                   f"not implemented for {self.profile.name}: interpreter error "
                                   f"on {where}: {type(exc).__name__}: {exc}",
                                   inst.offset if inst else None) from exc
                stats.lane_instructions += b.active_lanes
                stats.wave_instructions += b.waves
                steps += 1
                if result is None:
                    i += 1
                elif result >= 0:
                    target = index.get(result)
                    if target is None:
                        self._bad_pc(program, result)
                    i = target
                    if steps >= poll_at:   # every loop takes a branch: an endless one ends here
                        poll_at = steps + POLL_STEPS
                        ctx.poll()
                elif result == END:
                    np.subtract.at(alive, b.wg, 1)
                    break
                elif result == BARRIER:
                    b.pc = offsets[i + 1]
                    b.status = BARRIER
                    waiting.append(b)
                    break
                else:  # SPLIT: both halves are in machine.pending
                    runnable.extend(machine.pending)
                    machine.pending.clear()
                    break
                if offsets[i] >= stop_at:
                    b.pc = offsets[i]
                    runnable.append(b)
                    break
        stats.batch_steps += steps

    def _release_barrier(self, waiting: list[Batch], alive: np.ndarray) -> list[Batch]:
        """Batches (or parts of them) whose whole workgroup has arrived at the barrier."""
        arrived = np.zeros_like(alive)
        for b in waiting:
            np.add.at(arrived, b.wg, 1)
        released = arrived >= alive
        out: list[Batch] = []
        for b in waiting:
            sel = released[b.wg]
            if sel.all():
                b.status = 0
                out.append(b)
            elif sel.any():
                out.append(b.take(sel, b.pc))
                rest = b.take(~sel, b.pc)
                rest.status = BARRIER
                b.status = -100  # replaced
                waiting.append(rest)
        return out

    def _bad_pc(self, program: Program, pc: int) -> None:
        if program.decode_error is not None and getattr(program.decode_error, "offset", -1) == pc:
            raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                           f"not implemented for {self.profile.name}: {program.decode_error}", pc)
        raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                       f"{self.profile.name}: jump to {pc:#x}, which is not the start of a "
                       "decoded instruction of this kernel", pc)


_ID_TABLES: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}


def _id_table(shape: tuple, lanes: int, vgpr_ids: int, packed: bool) -> tuple[np.ndarray, np.ndarray]:
    """(ids uint32[3, waves, lanes], live bool[waves, lanes]) of one workgroup shape; with
    ``packed`` row 0 holds x | y << 10 | z << 20 (as many components as rsrc2 enables)."""
    key = (shape, lanes, vgpr_ids, packed)
    hit = _ID_TABLES.get(key)
    if hit is not None:
        return hit
    sx, sy, sz = (int(v) for v in shape)
    items = sx * sy * sz
    waves = (items + lanes - 1) // lanes
    lid = np.arange(waves * lanes).reshape(waves, lanes)
    live = lid < items
    ids = np.zeros((3, waves, lanes), np.uint32)
    ids[0] = lid % sx
    ids[1] = (lid // sx) % sy
    ids[2] = lid // (sx * sy)
    ids *= live
    if packed:
        if vgpr_ids >= 1:
            ids[0] |= ids[1] << np.uint32(10)
        if vgpr_ids >= 2:
            ids[0] |= ids[2] << np.uint32(20)
    if len(_ID_TABLES) > 256:
        _ID_TABLES.clear()
    _ID_TABLES[key] = (ids, live)
    return ids, live


def _ran_off_the_end(target: str, address: int):
    def run(b: Batch, m: Any) -> None:
        raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                       f"{target}: execution ran past the end of the kernel's code at "
                       f"{address:#x}", address)
    return run


def _undecodable(target: str, error: Exception):
    def run(b: Batch, m: Any) -> None:
        raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                       f"not implemented for {target}: {error}", getattr(error, "offset", None))
    return run


def _decode_prefix(code: bytes, target: str, base: int) -> tuple[list, Exception | None]:
    """Decode ``code``; on a DecodeError keep the instructions before it (trailing data after
    the kernel is never executed; reaching the bad offset faults with the decoder's message)."""
    from hsapy.sim.isa import decode
    from hsapy.sim.isa.instruction import DecodeError

    code = code[: len(code) - len(code) % 4]
    try:
        return list(decode(code, target, base)), None
    except DecodeError as exc:
        good = exc.offset - base
        if good <= 0:
            return [], exc
        insts, _ = _decode_prefix(code[:good], target, base)
        return insts, exc


def _kernel_code_size(kernel: Any) -> int:
    """Size of the kernel's function symbol from the loader's record, when it has one."""
    if kernel is None:
        return 0
    for attr in ("code_size", "entry_size"):
        value = getattr(kernel, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    co = getattr(kernel, "code_object", None)
    name = getattr(kernel, "name", None)
    if co is not None and name:
        try:
            symbol = co.symbols.get(name)
            size = int(getattr(symbol, "size", 0) or 0)
            return size
        except Exception:  # noqa: BLE001 - a record without symbols: fall back to the allocation
            return 0
    return 0


def register(replace: bool = False) -> None:
    """Install the interpreter for the gfx9 (gfx90a, gfx942), gfx11 (gfx1100) and gfx12
    (gfx1201) families.

    A factory someone registered before the package was imported is kept unless ``replace``.
    """
    for family in ("gfx9", "gfx11", "gfx12"):
        if replace or registered_factory(family) is None:
            register_executor(family, InterpreterExecutor)
