"""The ISA interpreter behind the simulator's executor seam (docs/internals.md).

``InterpreterExecutor(profile).execute(ctx)`` runs one kernel dispatch:

1. Reads the 64-byte kernel descriptor at ``ctx.kernel_object`` (through SimMemory): the wave
   size (wavefront_size32), the initial MODE register (float round/denorm modes) and the entry.
   The code object's machine code is a :class:`~hsapy.sim.isa.program.Program` per wave size
   and MODE value (program.py), cached per loaded code: the kernel's function decodes first,
   every other function when a call, jump or return first reaches it.
2. Builds the initial state of every wave exactly as the hardware does from the descriptor and
   the packet (docs/hsa-abi.md, "Wave state at kernel entry"; LLVM AMDGPUUsage,
   "Initial Kernel Execution State"): user SGPRs, system SGPRs (or gfx12's architected
   TTMPs), packed work-item ids in v0, EXEC for partial waves.
3. Runs all waves of (a chunk of) the dispatch as one :class:`~hsapy.sim.isa.wave.Batch`: each
   instruction is one numpy operation over waves x lanes. A scalar branch that goes both ways
   (or an indirect call to different functions) splits the batch; batches that reach the same
   PC under the same MODE merge again; a barrier holds a batch until every live wave of its
   workgroups has arrived; a MODE write moves the batch to the program compiled for the new
   value.

Faults: a memory access outside every allocation raises ``SimFault(HSA_STATUS_ERROR_MEMORY_FAULT,
..., address)``; an instruction without semantics ``SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
"not implemented for <target>: <mnemonic> at <offset>")``; code for the other wave size
"wave-size mismatch on <target>: ...". Every few thousand instructions the scheduler polls the
context: a queue being destroyed cancels the dispatch, and the watchdog stops one that runs past
its host-time limit (``DispatchContext.poll``).
"""
from __future__ import annotations

import copy
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from hsapy.codeobject import max_scratch_per_wave
from hsapy.hsa_enums import (
    HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
    HSA_STATUS_ERROR_MEMORY_FAULT,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES,
)
from hsapy.sim.execution import DispatchContext, SimFault, register_executor, registered_factory
from hsapy.sim.isa import counters, placement
from hsapy.sim.isa.float_mode import initial_mode
from hsapy.sim.isa.program import CodeText, DescriptorFields, Program, ProgramInfo, _pair_ops
from hsapy.sim.isa.semantics import (
    BARRIER,
    END,
    MODE_CHANGED,
    SLEEP,
    NotImplementedInstruction,
    WaveSizeMismatch,
)
from hsapy.sim.isa.semantics_buffer import private_segment_buffer
from hsapy.sim.isa.wave import NSREG, TTMP0, Batch, merge
from hsapy.sim.memory import SimMemoryFault
from hsapy.sim.targets import GpuProfile

__all__ = ["InterpreterExecutor", "DescriptorFields", "register", "Program", "ExecutionStats"]

# Waves run in chunks of whole workgroups whose state is about this many bytes: small enough
# that a register of the chunk stays in the CPU caches between instructions, where one batch
# of a whole large grid would stream every register through memory on each instruction.
CHUNK_BYTES = 2 << 20
# Hang protection: every this many batch-instructions (and between chunks) the scheduler calls
# DispatchContext.poll, which stops the dispatch when the queue is being destroyed or when the
# watchdog's host-time limit has passed (hsapy/sim/execution.py). One integer compare per taken
# branch; the poll itself is rare next to the interpretation between two polls.
POLL_STEPS = 2048
# Fair turns: the scheduler runs the batch at the lowest PC so that the others can merge with
# it when it reaches them, but a batch whose turn has lasted this many batch-instructions gives
# the others a turn at its next taken branch. Waves of one workgroup are resident together on
# hardware, so one of them may spin on a flag (in LDS or memory) that another, further along
# the code, sets without a barrier between them: without turns the spinner would never let it.
# A turn is what a spinning batch costs each hand-over (a wave that runs s_sleep ends its turn at
# once), so turns are short; ordinary kernels, whose batches merge again at the lowest PC, hardly
# ever reach the end of one.
TURN_STEPS = 1 << 10


@dataclass
class ExecutionStats:
    """Counters of the last dispatch (benchmarks read them)."""

    lane_instructions: int = 0
    wave_instructions: int = 0
    batch_steps: int = 0
    waves: int = 0


def workgroup_id_columns(wg_x: np.ndarray, wg_y: np.ndarray, wg_z: np.ndarray) -> np.ndarray:
    """uint32 [n, 5] for n workgroups: x, y, z, z << 16 | y (gfx12's TTMP7) and 0."""
    gx = wg_x.astype(np.uint32)
    gy = wg_y.astype(np.uint32)
    gz = wg_z.astype(np.uint32)
    return np.stack([gx, gy, gz, (gz << np.uint32(16)) | (gy & np.uint32(0xFFFF)),
                     np.zeros_like(gx)], axis=1)


class _Machine:
    """Per-dispatch-chunk state the instruction closures use (memory, LDS, scheduler)."""

    def __init__(self, ctx: DispatchContext, workgroups: int, lds_size: int, private_size: int,
                 wave_size: int, lds: np.ndarray | None = None, *, first_workgroup: int) -> None:
        """``lds``: the chunk's LDS to use (uint8, ``lds_layout``'s bytes) instead of a new
        zeroed one; ``first_workgroup``: the linear id in the dispatch of the chunk's first
        workgroup (batch-local workgroup k is workgroup ``first_workgroup + k``)."""
        from hsapy.sim.memory import PRIVATE_APERTURE_BASE, SHARED_APERTURE_BASE

        self.ctx = ctx
        self.workgroups = workgroups
        self.first_workgroup = first_workgroup
        self._first_waves: np.ndarray | None = None   # first chunk wave of each workgroup
        self._wgp_mode = False
        self.memory = ctx.memory
        self.agent = ctx.agent_handle or None
        self.clock = ctx.clock
        self.lds_size = lds_size
        self.lds_stride, nbytes = self.lds_layout(workgroups, lds_size)
        self.lds = np.zeros(nbytes, np.uint8) if lds is None else lds
        self.lds_words = self.lds[: (self.lds.size // 4) * 4].view(np.uint32)
        self.private_size = private_size
        self.shared_base = SHARED_APERTURE_BASE
        self.private_base = PRIVATE_APERTURE_BASE
        self.wave_size = wave_size
        self.pending: list[Batch] = []
        self.recorder: counters.DispatchRecorder | None = None   # set on profiled dispatches
        self.alive: np.ndarray | None = None   # live waves per workgroup (set by _schedule)
        # stats.batch_steps at which the running batch's turn ends while others wait for one
        # (None: it runs alone); compiled code returns by then, so a spinning batch hands over
        # as promptly under the compiled engine as under the interpreter
        self.turn_end: int | None = None

    @staticmethod
    def lds_layout(workgroups: int, lds_size: int) -> tuple[int, int]:
        """(bytes from one workgroup's LDS to the next, bytes of a chunk's LDS) for
        ``workgroups`` workgroups of ``lds_size`` bytes each."""
        stride = (max(lds_size, 4) + 3) & ~3
        return stride, workgroups * stride + 16

    def hardware_register(self, b: Batch, hwreg: int) -> np.ndarray:
        """``uint32[W]``: hardware-id register ``hwreg`` of each wave of ``b``, from where the
        simulator places it (hsapy.sim.isa.placement); raises NotImplementedInstruction for a
        register the target does not have."""
        ctx = self.ctx
        if self._first_waves is None:
            grid = [max(1, int(g)) for g in ctx.grid_size]
            block = [max(1, int(w)) for w in ctx.workgroup_size]
            counts = [(g + w - 1) // w for g, w in zip(grid, block)]
            linear = np.arange(self.first_workgroup, self.first_workgroup + self.workgroups)
            items = np.ones(linear.size, np.int64)
            for axis, index in enumerate((linear % counts[0],
                                          (linear // counts[0]) % counts[1],
                                          linear // (counts[0] * counts[1]))):
                # partial workgroups at the grid's upper edges have fewer work-items
                items *= np.minimum(block[axis], grid[axis] - index * block[axis])
            waves = (items + self.wave_size - 1) // self.wave_size
            self._first_waves = np.concatenate([[0], np.cumsum(waves)[:-1]])
            rsrc1 = int.from_bytes(ctx.memory.read(ctx.kernel_object + 48, 4), "little")
            self._wgp_mode = bool(rsrc1 & (1 << 29))    # compute_pgm_rsrc1 WGP_MODE (gfx10+)
        wave_in_group = b.wave_id - self._first_waves[b.wg]
        try:
            return placement.hardware_register(ctx.agent, hwreg, self.first_workgroup + b.wg,
                                               wave_in_group, self._wgp_mode)
        except ValueError as exc:
            raise NotImplementedInstruction(str(exc)) from None

    def split(self, b: Batch, taken: np.ndarray, target: int, fallthrough: int) -> None:
        """Divergent scalar branch: continue the two halves as separate batches."""
        self.pending.append(b.take(taken, target))
        self.pending.append(b.take(~taken, fallthrough))


# Counters of the most recent dispatch on any agent (benchmarks/sim.py reads them).
last_stats = ExecutionStats()

_program_cache: weakref.WeakKeyDictionary[Any, dict] = weakref.WeakKeyDictionary()
_program_lock = threading.Lock()

# The compiled engine (the hsapy.sim.isa.jit package), installed by hsapy/sim/isa/__init__.py
# through set_compiled_engine. The interpreter hands it the dispatches ``ctx.engine`` gives it
# without importing it: the engine's executor extends this module's.
_compiled_engine: Any = None


def set_compiled_engine(engine: Any) -> None:
    """Install the compiled engine: a namespace with ``chooses_jit(ctx)``,
    ``compare_engines(interpreter, ctx)`` and ``JitExecutor(profile)``."""
    global _compiled_engine
    _compiled_engine = engine


class InterpreterExecutor:
    """Executes dispatches for one GPU profile (gfx9 or gfx12 family).

    ``ctx.engine`` chooses who runs a dispatch: this interpreter, or the compiled engine
    (hsapy/sim/isa/jit), which shares its programs' scheduling and hands back to it whatever it
    does not compile."""

    program_class = Program
    engine_tag = "interp"

    def __init__(self, profile: GpuProfile) -> None:
        self.profile = profile
        self.stats = ExecutionStats()
        self._compiled: Any = None

    # --- the seam ---------------------------------------------------------------------------
    def jit_executor(self) -> Any:
        """The compiled engine's executor for this profile (created on first use)."""
        if self._compiled is None:
            self._compiled = _compiled_engine.JitExecutor(self.profile)
        return self._compiled

    def execute(self, ctx: DispatchContext) -> None:
        """Run every wave of the dispatch; raises SimFault on a fault."""
        global last_stats
        if self.engine_tag == "interp" and getattr(ctx, "engine", "interp") != "interp":
            jit = _compiled_engine
            if ctx.engine == "compare":
                self.stats = jit.compare_engines(self, ctx)
                return
            if jit.chooses_jit(ctx) and not counters.is_profiling():
                # profiled dispatches stay on the interpreter: its closures are the counters'
                # one definition, so a profile reads the same whichever engine was chosen
                compiled = self.jit_executor()
                compiled.execute(ctx)
                self.stats = compiled.stats
                return
        # the dispatch's own state on a copy: the queues of one agent share its executor and
        # run their dispatches at the same time
        run = copy.copy(self)
        try:
            run._execute(ctx)
        finally:
            self.stats = run.stats

    def _execute(self, ctx: DispatchContext) -> None:
        """Run every wave of the dispatch (on a copy of the executor that is the dispatch's
        own)."""
        global last_stats
        self.stats = ExecutionStats()
        try:
            raw = ctx.memory.read(ctx.kernel_object, 64)
        except SimMemoryFault as fault:
            raise SimFault(HSA_STATUS_ERROR_MEMORY_FAULT,
                           f"kernel descriptor unreadable: {fault}", fault.address) from None
        kd = DescriptorFields.from_bytes(raw)
        entry = ctx.kernel_object + kd.entry_offset
        wave_size = self._wave_size(ctx, kd)
        private = max(int(ctx.private_segment_size), kd.private_segment_fixed_size)
        limit = max_scratch_per_wave(self.profile.name)
        if limit is not None and private * wave_size > limit:
            # ROCr cannot program the queue's scratch for it and stops the queue the same way
            raise SimFault(
                HSA_STATUS_ERROR_OUT_OF_RESOURCES,
                f"the dispatch needs {private} bytes of private memory per work-item, "
                f"{private * wave_size} per wave of {wave_size}; {self.profile.name} allows at "
                f"most {limit} bytes of scratch per wave (COMPUTE_TMPRING_SIZE.WAVESIZE)")
        mode = initial_mode(kd.rsrc1, self.profile.family)
        recorder = counters.recorder_for(ctx, wave_size)
        programs, vgprs, agprs, ends_at_once = self._plan(ctx, kd, entry, wave_size, mode,
                                                          recorder is not None)
        if ends_at_once:
            # every wave ends at its first instruction: nothing observable happens
            grid = [max(1, int(g)) for g in ctx.grid_size]
            block = [max(1, int(w)) for w in ctx.workgroup_size]
            groups = [(g + w - 1) // w for g, w in zip(grid, block)]
            items = block[0] * block[1] * block[2]
            waves = groups[0] * groups[1] * groups[2] * ((items + wave_size - 1) // wave_size)
            self.stats = ExecutionStats(grid[0] * grid[1] * grid[2], waves, 1, waves)
            last_stats = self.stats
            if recorder is not None:
                program = programs(mode)
                recorder.executed(program.insts[program.index[entry]], waves,
                                  self.stats.lane_instructions)
                recorder.finish(waves)
            return
        lds = max(int(ctx.group_segment_size), kd.group_segment_fixed_size)
        shape = (vgprs, agprs, mode)
        with np.errstate(all="ignore"):
            self._run_chunks(ctx, kd, programs, shape, wave_size, entry, lds, private,
                             recorder)
        last_stats = self.stats
        if recorder is not None:
            recorder.finish(self.stats.waves)

    def _run_chunks(self, ctx: DispatchContext, kd: DescriptorFields, programs, shape: tuple,
                    wave_size: int, entry: int, lds: int, private: int,
                    recorder: counters.DispatchRecorder | None = None) -> None:
        """Every chunk of workgroups, one after another."""
        for chunk in self._chunks(ctx, wave_size, shape, lds, private):
            ctx.poll()
            self._run_chunk(ctx, kd, programs, shape, wave_size, chunk, entry, lds, private,
                            recorder)

    def _wave_size(self, ctx: DispatchContext, kd: DescriptorFields) -> int:
        """The wave size the hardware launches the kernel with: the descriptor's
        wavefront_size32 bit (gfx10+); a descriptor or metadata the target cannot run is a
        mismatch that stops the queue."""
        name = self.profile.name
        if self.profile.family == "gfx9":
            if kd.wave32:
                raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                               f"wave-size mismatch on {name}: the kernel descriptor sets "
                               "wavefront_size32 (kernel_code_properties bit 10), but "
                               f"{name} runs only wave64; rebuild the kernel for {name}", None)
            wave_size = 64
        else:
            wave_size = 32 if kd.wave32 else 64
        declared = getattr(_kernel_info(ctx.kernel), "wavefront_size", None)
        if isinstance(declared, int) and declared and declared != wave_size:
            raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                           f"wave-size mismatch on {name}: kernel "
                           f"{getattr(ctx.kernel, 'name', '?')!r} has .wavefront_size "
                           f"{declared} in its metadata but its descriptor launches wave"
                           f"{wave_size} (kernel_code_properties bit 10); the code object is "
                           "inconsistent", None)
        return wave_size

    def _check_accum_offset(self, kd: DescriptorFields, vgprs: int, agprs: int) -> None:
        """gfx90a/gfx940-942 have one register file: AGPR n is VGPR accum_offset + n
        (rsrc3[5:0] = accum_offset / 4 - 1; AMDGPUUsage, "compute_pgm_rsrc3"). The interpreter
        keeps AGPRs apart, so code that names a VGPR at or past accum_offset while it uses AGPRs
        (the two would alias on hardware) stops the queue instead of running differently."""
        if not agprs or self.profile.name not in ("gfx90a", "gfx940", "gfx941", "gfx942"):
            return
        accum_offset = ((kd.rsrc3 & 0x3F) + 1) * 4
        if vgprs > accum_offset:
            raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                           f"not implemented for {self.profile.name}: the kernel names "
                           f"v{vgprs - 1} and uses AGPRs, but its descriptor puts the first AGPR "
                           f"at VGPR {accum_offset} (compute_pgm_rsrc3 accum_offset): those "
                           "registers alias, which the interpreter does not model", None)

    # --- code ---------------------------------------------------------------------------------
    def _plan(self, ctx: DispatchContext, kd: DescriptorFields, entry: int, wave_size: int,
              mode: int, profiled: bool = False) -> tuple:
        """(programs, VGPRs, AGPRs, whether the first instruction is s_endpgm) of a kernel,
        worked out at its first dispatch and kept with the loaded code; ``profiled`` programs
        report to the dispatch's counters recorder (hsapy.sim.isa.counters)."""
        alloc = ctx.memory.find(entry)
        if alloc is None:
            raise SimFault(HSA_STATUS_ERROR_MEMORY_FAULT,
                           f"kernel entry {entry:#x} is outside every allocation", entry)
        with _program_lock:
            per_alloc = _program_cache.setdefault(alloc, {})
        key = ("plan", self.engine_tag, entry, wave_size, mode, kd.rsrc3, profiled)
        plan = per_alloc.get(key)
        if plan is None:
            programs = self._programs(ctx, alloc, per_alloc, entry, wave_size, profiled)
            program = programs(mode)
            vgprs, agprs = program.entry(entry)
            self._check_accum_offset(kd, vgprs, agprs)
            vgprs, agprs = _register_counts(ctx.kernel, vgprs, agprs)
            first = program.insts[program.index[entry]]
            plan = (programs, vgprs, agprs, first.name == "s_endpgm")
            per_alloc[key] = plan
        return plan

    def _programs(self, ctx: DispatchContext, alloc: Any, per_alloc: dict, entry: int,
                  wave_size: int, profiled: bool = False):
        """``get(mode) -> Program``: the code object's programs for this wave size, one per
        MODE value (cached per loaded code object)."""
        text = CodeText.of_kernel(ctx.kernel, entry, alloc)
        family = self.profile.family
        target = self.profile.name
        memory = ctx.memory

        tag = self.engine_tag
        program_class = self.program_class

        def get(mode: int) -> Program:
            key = (tag, target, wave_size, mode, text, profiled)
            program = per_alloc.get(key)
            if program is None:
                with _program_lock:
                    program = per_alloc.get(key)
                    if program is None:
                        info = ProgramInfo.for_mode(family, wave_size, mode)
                        program = program_class(target, info, text, memory, profiled)
                        per_alloc[key] = program
            return program
        return get

    # --- chunks of workgroups -----------------------------------------------------------------
    def _chunks(self, ctx: DispatchContext, wave_size: int, shape: tuple, lds: int,
                private: int, budget: int = CHUNK_BYTES, threads: int = 1):
        """Whole workgroups per chunk, ``lds`` and ``private`` being the dispatch's group
        segment bytes per workgroup and private bytes per work-item; a chunk's state stays
        within ``budget`` bytes, and with several ``threads`` chunks are cut so that each
        thread gets a few of them."""
        grid = [max(1, int(g)) for g in ctx.grid_size]
        block = [max(1, int(w)) for w in ctx.workgroup_size]
        counts = [(g + w - 1) // w for g, w in zip(grid, block)]
        total = counts[0] * counts[1] * counts[2]
        items = block[0] * block[1] * block[2]
        waves_per_wg = (items + wave_size - 1) // wave_size
        per_wg = waves_per_wg * wave_size * 4 * (shape[0] + shape[1]) + lds \
            + waves_per_wg * NSREG * 4 + waves_per_wg * wave_size * private
        per_chunk = max(1, budget // max(1, per_wg))
        if threads > 1:
            per_chunk = max(1, min(per_chunk, -(-total // (2 * threads))))
        for start in range(0, total, per_chunk):
            yield start, min(total, start + per_chunk), counts, grid, block

    def _run_chunk(self, ctx: DispatchContext, kd: DescriptorFields, programs, shape: tuple,
                   wave_size: int, chunk: tuple, entry: int, lds: int, private: int,
                   recorder: counters.DispatchRecorder | None = None) -> None:
        start, stop, counts, grid, block = chunk
        batch, alive = self._initial_batch(ctx, kd, shape, wave_size, start, stop, counts,
                                           grid, block, entry)
        machine = _Machine(ctx, stop - start, lds, private, wave_size, first_workgroup=start)
        machine.recorder = recorder
        self._schedule(ctx, programs, machine, batch, alive)

    # --- initial wave state -------------------------------------------------------------------
    def _initial_batch(self, ctx, kd, shape, wave_size, start, stop, counts, grid, block,
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
        nvgprs, nagprs, mode = shape
        V = self._state_zeros((nvgprs, W, L), np.uint32)
        A = self._state_zeros((nagprs, W, L), np.uint32) if nagprs else None
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
        id_rows = [0] if packed_ids else range(min(vgpr_ids + 1, nvgprs))
        if len(tables) == 1:
            # every workgroup of the chunk has the one shape: its table repeated, copied by
            # broadcasting instead of gathered wave by wave
            ids, live_k = tables[0]
            per_wg = (stop - start, live_k.shape[0], L)
            live = np.empty((W, L), bool)
            live.reshape(per_wg)[...] = live_k
            for axis in id_rows:
                V[axis].reshape(per_wg)[...] = ids[axis]
        else:
            most = max(t[1].shape[0] for t in tables)
            id_table = np.zeros((len(tables), 3, most, L), np.uint32)
            live_table = np.zeros((len(tables), most, L), bool)
            for k, (ids, live_k) in enumerate(tables):
                id_table[k, :, : ids.shape[1]] = ids
                live_table[k, : live_k.shape[0]] = live_k
            wave_shape = shape_of_wg[wg_of_wave]
            live = live_table[wave_shape, wave_in_wg]
            for axis in id_rows:
                V[axis] = id_table[wave_shape, axis, wave_in_wg]
        S = self._state_zeros((W, NSREG), np.uint32)
        self._user_sgprs(ctx, kd, S)
        self._workgroup_sgprs(kd, S, workgroup_id_columns(wg_x, wg_y, wg_z)[wg_of_wave],
                              wave_in_wg)
        batch = Batch(entry, S, V, A, live, np.zeros(W, bool),
                      wg_of_wave.astype(np.int64), np.arange(W, dtype=np.int64), mode=mode)
        alive = np.bincount(wg_of_wave, minlength=stop - start).astype(np.int64)
        return batch, alive

    def _workgroup_sgpr_columns(self, kd: DescriptorFields) -> list[tuple[int, int]]:
        """Where each wave's workgroup ids go: (SGPR, column) pairs over the columns of
        :func:`workgroup_id_columns` (x, y, z, z << 16 | y, 0)."""
        if self.profile.has_architected_sgprs:
            # gfx12: TTMP9 = workgroup id x, TTMP7 = z << 16 | y (TTMP8: the wave in its group)
            return [(TTMP0 + 9, 0), (TTMP0 + 7, 3)]
        pairs = []
        row = kd.user_sgpr_count
        for bit, column in ((7, 0), (8, 1), (9, 2)):
            if kd.rsrc2 & (1 << bit):
                pairs.append((row, column))
                row += 1
        if kd.rsrc2 & (1 << 10):  # workgroup info: not written by current hardware; zero
            row += 1
        if kd.rsrc2 & 1:  # private segment wave byte offset
            pairs.append((row, 4))
        return pairs

    def _workgroup_sgprs(self, kd: DescriptorFields, S: np.ndarray, columns: np.ndarray,
                         wave_in_wg: np.ndarray) -> None:
        """Each wave's workgroup ids (and what follows them) into its SGPRs, ``columns`` being
        :func:`workgroup_id_columns` per wave (gfx12: and its wave in the group)."""
        for sgpr, column in self._workgroup_sgpr_columns(kd):
            S[:, sgpr] = columns[:, column]
        if self.profile.has_architected_sgprs:
            S[:, TTMP0 + 8] = (wave_in_wg.astype(np.uint32) & np.uint32(0x1F)) << np.uint32(25)

    def _state_zeros(self, shape: tuple, dtype: Any) -> np.ndarray:
        """Zeroed register state of a chunk's initial batch (the compiled engine reuses the
        memory of the previous chunk's)."""
        return np.zeros(shape, dtype)

    def _user_sgprs(self, ctx: DispatchContext, kd: DescriptorFields, S: np.ndarray) -> int:
        """User SGPRs from s0 in LLVM's order, each only when enabled (AMDGPUUsage, "Initial
        Kernel Execution State"); returns how many it wrote."""
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
        return row + preload

    # --- scheduling -----------------------------------------------------------------------------
    def _schedule(self, ctx: DispatchContext, programs, machine: _Machine,
                  first: Batch, alive: np.ndarray) -> None:
        self.stats.waves += first.waves
        self._run_batches(ctx, programs, machine, [first], alive)

    def _run_batches(self, ctx: DispatchContext, programs, machine: _Machine,
                     runnable: list[Batch], alive: np.ndarray) -> None:
        """Run the ``runnable`` batches of one chunk (``alive``: its live waves per
        workgroup) until every wave has ended."""
        waiting: list[Batch] = []
        yielded: list[Batch] = []
        machine.alive = alive
        stats = self.stats
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
            # batches that gave up their turn wait until every other runnable one has had its
            # own (TURN_STEPS); then all are candidates again
            candidates = [b for b in runnable if not any(b is y for y in yielded)]
            if not candidates:
                yielded.clear()
                candidates = runnable
            pc = min(b.pc for b in candidates)
            mode = next(b.mode for b in candidates if b.pc == pc)
            same = [b for b in candidates if b.pc == pc and b.mode == mode]
            runnable = [b for b in runnable if not any(b is x for x in same)]
            # run until the lowest PC of the other candidates: there the batches merge again
            # (batches under another MODE run another program and never merge with this one)
            stop_at = min((x.pc for x in runnable if x.mode == mode
                           and not any(x is y for y in yielded)), default=1 << 64)
            machine.stop_at = stop_at
            program = programs(mode)
            fns = program.fns
            index = program.index
            offsets = program.offsets
            b = merge(same)
            # (compiled code adds the instructions of each call to stats.batch_steps itself)
            turn_ends = steps + stats.batch_steps + TURN_STEPS
            machine.turn_end = stats.batch_steps + TURN_STEPS if runnable else None
            i = index.get(pc)
            if i is None:
                i = program.lookup(pc)
                if i is None:
                    self._bad_pc(program, pc)
            while True:
                try:
                    result = fns[i](b, machine)
                except WaveSizeMismatch as exc:
                    raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                                   f"wave-size mismatch on {self.profile.name}: "
                                   f"{program.where(i)}: {exc}", offsets[i]) from None
                except NotImplementedInstruction as exc:
                    inst = program.insts[i]
                    raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                                   f"not implemented for {self.profile.name}: {inst.mnemonic} at "
                                   f"{inst.offset:#x} ({exc})", inst.offset) from None
                except SimMemoryFault as fault:
                    raise SimFault(HSA_STATUS_ERROR_MEMORY_FAULT,
                                   f"memory fault on {self.profile.name} at address "
                                   f"{fault.address:#x} ({fault.kind} of {fault.nbytes} bytes) by "
                                   f"{program.where(i)}", fault.address) from None
                except SimFault:
                    raise
                except Exception as exc:  # noqa: BLE001 - an interpreter bug must not kill the queue thread
                    raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                                   f"not implemented for {self.profile.name}: interpreter error "
                                   f"on {program.where(i)}: {type(exc).__name__}: {exc}"
                                   f"{_register_hint(program, i, b)}",
                                   offsets[i] if i < len(offsets) else None) from exc
                stats.lane_instructions += b.active_lanes
                stats.wave_instructions += b.waves
                steps += 1
                if result is None:
                    i += 1
                elif result >= 0:
                    target = index.get(result)
                    if target is None:
                        target = program.lookup(result)
                        if target is None:
                            self._bad_pc(program, result)
                    i = target
                    if steps >= poll_at:   # every loop takes a branch: an endless one ends here
                        poll_at = steps + POLL_STEPS
                        ctx.poll()
                    if runnable and steps + stats.batch_steps >= turn_ends:
                        b.pc = offsets[i]
                        runnable.append(b)
                        yielded.append(b)
                        break
                elif result == END:
                    np.subtract.at(alive, b.wg, 1)
                    break
                elif result == BARRIER:
                    b.pc = offsets[i + 1]
                    b.status = BARRIER
                    waiting.append(b)
                    break
                elif result == SLEEP:
                    # s_sleep: the others have a turn first, as when this one's has run out
                    if runnable:
                        b.pc = offsets[i + 1]
                        runnable.append(b)
                        yielded.append(b)
                        break
                    i += 1
                    continue
                elif result == MODE_CHANGED:
                    # the batch continues in the program compiled for its new MODE value
                    b.pc = offsets[i + 1]
                    runnable.append(b)
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
        error = program.errors.get(pc)
        if error is not None:
            raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                           f"not implemented for {self.profile.name}: {error}", pc)
        where = program.text.name_at(pc)
        where = f" (<{where}>)" if where else ", outside every function of the code object"
        raise SimFault(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
                       f"{self.profile.name}: jump to {pc:#x}{where}, which is not the start of "
                       "a decoded instruction", pc)


def _register_counts(kernel: Any, vgprs: int, agprs: int) -> tuple[int, int]:
    """VGPRs and AGPRs to give each wave: what the kernel's own code names, or what its
    metadata says the kernel and every function it calls use (.vgpr_count, .agpr_count),
    whichever is more."""
    info = _kernel_info(kernel)
    meta_v = getattr(info, "vgpr_count", 0)
    meta_a = getattr(info, "agpr_count", 0)
    if isinstance(meta_v, int):
        vgprs = max(vgprs, meta_v)
    if isinstance(meta_a, int):
        agprs = max(agprs, meta_a)
    return vgprs, agprs


def _kernel_info(kernel: Any) -> Any:
    """The kernel's metadata record (KernelInfo) from the loader's record, if it has one."""
    info = getattr(kernel, "info", None)
    if info is not None:
        return info
    co = getattr(kernel, "code_object", None)
    name = getattr(kernel, "name", None)
    kernels = getattr(co, "kernels", None)
    if isinstance(kernels, dict) and name in kernels:
        return kernels[name]
    return None


def _register_hint(program: Program, i: int, b: Batch) -> str:
    """Why an instruction's register index can fall outside the wave's register file."""
    inst = program.insts[i] if 0 <= i < len(program.insts) else None
    if inst is None:
        return ""
    for op in tuple(inst.dsts) + tuple(inst.srcs) + _pair_ops(inst):
        regs = b.V if op.kind == "vgpr" else b.A if op.kind == "agpr" else None
        rows = 0 if regs is None else regs.shape[0]
        if op.kind in ("vgpr", "agpr") and op.index + op.count > rows:
            return (f" ({op.kind} {op.index + op.count - 1} is past the {rows} the kernel's "
                    "metadata and code give each wave: a called function uses more registers "
                    "than the kernel declares)")
    return ""


_ID_TABLES: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}


def _id_table(shape: tuple, lanes: int, vgpr_ids: int,
              packed: bool) -> tuple[np.ndarray, np.ndarray]:
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


def register(replace: bool = False) -> None:
    """Install the interpreter for the gfx9 (gfx90a, gfx942), gfx11 (gfx1100) and gfx12
    (gfx1201) families.

    A factory someone registered before the package was imported is kept unless ``replace``.
    """
    for family in ("gfx9", "gfx11", "gfx12"):
        if replace or registered_factory(family) is None:
            register_executor(family, InterpreterExecutor)
