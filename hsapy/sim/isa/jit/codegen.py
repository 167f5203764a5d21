"""Generate the host code of a compile unit: one decoded function of a program.

A unit's instructions are cut into **segments**: runs of instructions the compiled engine runs
(ALU instructions traced from the interpreter's closures, branches, memory instructions the
engine performs itself) that begin at a branch target, after an instruction the engine leaves to
the interpreter, or at a memory write. A segment runs for every wave of the batch in turn, one
whole wave at a time: its registers are LLVM vectors over the wave's lanes for the length of the
segment and go back to the batch's arrays at its end. Cutting at memory writes keeps the
interpreter's order of memory operations across waves (instruction by instruction, waves in
order): a segment holds either loads only or one write (a store or an atomic) at its start, so
reordering a segment's instructions across waves changes no memory result.

After a segment the batch either goes on to the segment of the next instruction or branch
target (when every wave agrees), or returns to the Python caller: at an instruction the engine
does not run, at the scheduler's merge point (``STOP_AT``), when the waves disagree at a branch
(``SPLIT``), when a wave must be handed back to the interpreter (``BAIL``: a traced path that
raises, a memory access the fast path does not take) or after its step budget. The context
words are in :mod:`hsapy.sim.isa.jit.context`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from llvmlite import ir

from hsapy.sim.isa.jit import context as C
from hsapy.sim.isa.jit.graph import is_const, walk
from hsapy.sim.isa.jit.lower import I1, I8, I32, I64, Lowerer, LowerError
from hsapy.sim.isa.jit.symbolic import Untraceable
from hsapy.sim.isa.jit.trace import NEXT, TraceResult, trace_closure

__all__ = ["Step", "Segment", "UnitPlan", "plan_unit", "generate", "ENGINE_VERSION"]

# Bumped whenever generated code changes meaning: part of the on-disk cache key.
ENGINE_VERSION = 4

PTR = ir.PointerType()
MEMORY_ENCODINGS = ("SMEM", "DS", "FLAT", "GLOBAL", "SCRATCH", "MUBUF", "MTBUF", "VBUFFER")
# Left to the interpreter's scheduler: they end a wave, change the program or give the other
# batches a turn (s_sleep).
SCHEDULER_INSTRUCTIONS = frozenset({
    "s_endpgm", "s_endpgm_saved", "s_endpgm_ordered_ps_done", "s_sethalt", "s_sendmsghalt",
    "s_setpc_b64", "s_swappc_b64", "s_setreg_b32", "s_setreg_imm32_b32",
    "s_round_mode", "s_denorm_mode", "s_trap", "s_sleep", "s_sleep_var",
})


# Workgroup barriers: a segment of their own. When the batch holds every live wave of its chunk
# (the context's WHOLE word) every workgroup has arrived and the compiled code goes on, as the
# interpreter's scheduler would (it finds nothing else to run, releases the batch and runs it on);
# otherwise the interpreter runs the barrier and the scheduler waits for the other batches.
BARRIER_INSTRUCTIONS = frozenset({"s_barrier", "s_barrier_wait"})


# DS instructions that only move values between lanes (no LDS access): traced like ALU.
LANE_INSTRUCTIONS = frozenset({"ds_bpermute_b32", "ds_swizzle_b32", "ds_nop"})


@dataclass
class Step:
    """One instruction of a segment."""

    index: int                 # entry of the program
    inst: Any                  # the decoded Instruction
    kind: str                  # "alu", "branch", "load", "write", "barrier"
    trace: TraceResult | None = None
    mem: Any = None            # memops.MemOp for memory instructions


@dataclass
class Segment:
    """Instructions run for one wave after another (see the module docstring)."""

    number: int
    steps: list[Step] = field(default_factory=list)
    writes: bool = False       # starts with a memory write
    # (target, instructions) when the segment ends with an s_cbranch_execz whose skipped
    # instructions leave a wave with EXEC zero as it was (see inert_skip)
    skip: tuple[int, int] | None = None

    @property
    def start(self) -> int:
        return self.steps[0].inst.offset

    @property
    def end(self) -> int:
        last = self.steps[-1].inst
        return last.offset + last.size

    @property
    def branch(self) -> Step | None:
        return self.steps[-1] if self.steps[-1].kind == "branch" else None

    @property
    def barrier(self) -> bool:
        return self.steps[0].kind == "barrier"


@dataclass
class UnitPlan:
    """The segments of a unit and what the instructions it leaves out are."""

    segments: list[Segment]
    fallback: dict[int, str]            # program index -> why the interpreter runs it
    vgprs: int = 0                      # registers the unit's code names
    agprs: int = 0
    scratch: bool = False               # some segment reaches private memory

    def segment_at(self, pc: int) -> Segment | None:
        for seg in self.segments:
            if seg.start == pc:
                return seg
        return None


def classify(inst: Any, info: Any, lanes: int) -> tuple[str | None, Any, str]:
    """(kind, trace or MemOp, why not) of one instruction."""
    from hsapy.sim.isa.jit import memops
    from hsapy.sim.isa.semantics import compile_instruction

    if inst is None:
        return None, None, "end of the decoded code"
    if inst.name in SCHEDULER_INSTRUCTIONS:
        return None, None, "scheduler"
    if inst.name in BARRIER_INSTRUCTIONS:
        return "barrier", None, ""
    from hsapy.sim.isa.semantics import NO_OPS

    if inst.encoding in MEMORY_ENCODINGS and inst.name not in LANE_INSTRUCTIONS \
            and inst.name not in NO_OPS:
        try:
            op = memops.describe(inst, info)
        except memops.NotNative as exc:
            return None, None, f"memory: {exc}"
        return ("write" if op.writes else "load"), op, ""
    from hsapy.sim.isa import gpr_index

    if inst.encoding in gpr_index.VALU_ENCODINGS and gpr_index.enabled(info):
        # operands move with each wave's M0 at run time (hsapy/sim/isa/gpr_index.py)
        return None, None, "GPR index mode"
    fn = compile_instruction(inst, info)
    if getattr(fn, "unimplemented", None):
        return None, None, "no semantics"
    try:
        trace = trace_closure(fn, lanes, info.mode.value)
    except Untraceable as exc:
        return None, None, f"untraceable: {exc}"
    control = trace.control
    if control is None:
        return "alu", trace, ""
    if isinstance(control, int) and control < 0:
        return None, None, f"control {control}"
    return "branch", trace, ""


def _targets(trace: TraceResult) -> list[int]:
    control = trace.control
    if control is None:
        return []
    if isinstance(control, int):
        return [control]
    values = set()
    for node in walk([control]):
        if is_const(node) and node.dtype == np.int64:
            values.update(int(v) for v in node.attr)
    return sorted(values)


def plan_unit(insts: list, first: int, count: int, info: Any, lanes: int,
              classified: dict | None = None, split_every: bool = False) -> UnitPlan:
    """Segments of program entries [first, first + count) (the last may be the sentinel);
    ``split_every`` makes every instruction a segment of its own (tests run instructions one
    at a time that way)."""
    kinds: dict[int, tuple] = {}
    for i in range(first, first + count):
        kinds[i] = classify(insts[i], info, lanes) if classified is None or i not in \
            classified else classified[i]
    leaders: set[int] = set(range(first, first + count)) if split_every else {first}
    by_offset = {insts[i].offset: i for i in range(first, first + count) if insts[i] is not None}
    for i in range(first, first + count):
        kind, payload, _ = kinds[i]
        if kind is None or kind == "branch":
            leaders.add(i + 1)
        if kind == "branch":
            for target in _targets(payload):
                if target in by_offset:
                    leaders.add(by_offset[target])
        if kind == "write":
            leaders.add(i)
        if kind == "barrier":
            leaders.update((i, i + 1))
    segments: list[Segment] = []
    fallback: dict[int, str] = {}
    current: Segment | None = None
    for i in range(first, first + count):
        kind, payload, why = kinds[i]
        if kind is None:
            fallback[i] = why
            current = None
            continue
        if current is not None and (i in leaders or (current.writes and kind in
                                                     ("load", "write"))):
            current = None
        if current is None:
            current = Segment(len(segments))
            current.writes = kind == "write"
            segments.append(current)
        step = Step(i, insts[i], kind)
        if kind in ("load", "write"):
            step.mem = payload
        elif kind != "barrier":
            step.trace = payload
        current.steps.append(step)
        if kind == "branch":
            current = None
    end = first + count
    for seg in segments:
        branch = seg.branch
        if branch is not None and branch.inst.name == "s_cbranch_execz":
            seg.skip = inert_skip(insts, kinds, branch.index, first, end, by_offset)
    vgprs, agprs = 0, 0
    for seg in segments:
        for step in seg.steps:
            inst = step.inst
            ops = tuple(inst.dsts) + tuple(inst.srcs)
            if inst.pair is not None:
                ops += tuple(inst.pair.dsts) + tuple(inst.pair.srcs)
            for op in ops:
                if op.kind == "vgpr":
                    vgprs = max(vgprs, op.index + op.count)
                elif op.kind == "agpr":
                    agprs = max(agprs, op.index + op.count)
    scratch = any(step.mem is not None and step.mem.kind.startswith("scratch")
                  for seg in segments for step in seg.steps)
    return UnitPlan(segments, fallback, vgprs, agprs, scratch)


# Waves that disagree at an ``s_cbranch_execz`` would split the batch: those whose EXEC is zero
# jump over the guarded instructions, the others run them (LLVM's structurizer emits one around
# every ``if`` whose condition differs between lanes: a tree reduction's ``if (tid < stride)``
# does this at every level once stride is below the workgroup size). When running the skipped
# instructions leaves a wave with EXEC zero as it would be after the jump -- the hardware itself
# takes the branch only to save the time -- the batch goes through together instead, and the
# instructions counted for those waves are taken back.
# Inert with EXEC zero: vector ALU instructions that honour EXEC, vector memory and LDS
# instructions (an access for no lane is none), and the waits.
# Not inert whatever they write: lane access that ignores EXEC, matrix instructions (the
# simulator refuses them with inactive lanes), M0-relative moves (refused when M0 points
# outside the register file, EXEC or not), scalar loads (a wave that jumped would not have made
# the access, which may fault), EXEC writes, messages, barriers.
# Scalar results (SGPRs, VCC, SCC: a scalar instruction, a compare or carry into SGPRs) do
# change such a wave, so they are allowed only when they are dead at the target: no path from
# there reads one before writing it (see _dead_at). Registers with implicit readers (M0, the
# trap and flat-scratch registers) are never allowed.
_NOT_INERT_VALU = ("v_writelane", "v_readlane", "v_readfirstlane", "v_mfma", "v_smfmac",
                   "v_wmma", "v_swmmac", "v_movrel")
_INERT_SCALAR = frozenset({"s_nop", "s_delay_alu", "s_clause"})
_INERT_LIMIT = 256          # longer guarded blocks are left to split (their runs amortise it)
_LIVENESS_LIMIT = 4096      # instructions visited per register before it is taken as live
# SGPR rows a guarded block may leave changed when dead: s0-s101 (gfx9 has no more; gfx11/12's
# s102-s105 are left out with them) and VCC
_DEAD_WRITABLE = frozenset({("scc",)} | {("s", r) for r in (*range(102), 106, 107)})
_WAVE_ENDS = frozenset({"s_endpgm", "s_endpgm_saved", "s_endpgm_ordered_ps_done"})


def _inert(inst: Any, kind: str | None, payload: Any) -> frozenset | None:
    """The scalar state keys ``inst`` writes when running it for a wave whose EXEC is zero
    changes the wave in nothing else (empty when it changes nothing at all); None when it would
    (see inert_skip)."""
    name = inst.name
    if kind in ("load", "write"):
        dst = payload.dst
        if payload.kind.startswith("smem") or not (dst is None or dst.kind == "vgpr"):
            return None
        return frozenset()
    if kind != "alu":
        return None
    writes = frozenset(payload.writes)
    if name.startswith("s_"):
        if name in _INERT_SCALAR or name.startswith("s_wait"):
            return frozenset() if not writes else None
        return writes if writes and writes <= _DEAD_WRITABLE else None
    if name.startswith(_NOT_INERT_VALU):
        return None
    scalar = frozenset(key for key in writes if key[0] not in ("v", "a"))
    return scalar if scalar <= _DEAD_WRITABLE else None


def _scalar_reads(inst: Any, kind: str, payload: Any) -> set | None:
    """The scalar state keys instruction ``inst`` reads; None when that is not known."""
    if kind in ("alu", "branch"):
        # the inputs its results depend on (a traced wave's EXEC and SCC are inputs of every
        # trace, read or not)
        roots = [*payload.writes.values(), payload.bail]
        if payload.control is not None and not isinstance(payload.control, int):
            roots.append(payload.control)
        return {node.attr for node in walk(roots) if node.op == "input"}
    if kind == "barrier":
        return set()
    reads: set = set()
    for op in (*inst.srcs, *inst.dsts):      # a memory instruction: its explicit operands
        if op.kind in ("sgpr", "special"):
            reads.update(("s", row) for row in range(op.index, op.index + op.count))
        elif op.kind == "ttmp":
            return None
    return reads


def _dead_at(keys: frozenset, at: int, insts: list, kinds: dict, first: int, end: int,
             by_offset: dict[int, int]) -> bool:
    """Whether every path from program entry ``at`` writes each of ``keys`` before reading it
    (or ends the wave first). A path that leaves the unit's instructions, reaches one the engine
    leaves to the interpreter, or branches where the plan cannot see counts as a read."""
    known: dict[int, set | None] = {}
    for key in keys:
        seen: set[int] = set()
        stack = [at]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            if len(seen) > _LIVENESS_LIMIT or not first <= i < end:
                return False
            kind, payload, _ = kinds[i]
            inst = insts[i]
            if kind is None:
                if inst is not None and inst.name in _WAVE_ENDS:
                    continue
                return False
            if i not in known:
                known[i] = _scalar_reads(inst, kind, payload)
            reads = known[i]
            if reads is None or key in reads:
                return False
            if kind in ("alu", "branch") and key in payload.writes:
                continue
            if kind != "branch":
                stack.append(i + 1)
                continue
            for target in _targets(payload):
                if target == NEXT:
                    stack.append(i + 1)
                elif target in by_offset:
                    stack.append(by_offset[target])
                else:
                    return False
    return True


def inert_skip(insts: list, kinds: dict, index: int, first: int, end: int,
               by_offset: dict[int, int]) -> tuple[int, int] | None:
    """(target, n) when the ``s_cbranch_execz`` at program entry ``index`` guards ``n``
    instructions, from the next one on, that leave a wave with EXEC zero as the jump would
    (``_inert``, with the scalar registers they write dead at the target) and lead to its
    target: straight on to the target, or through a final ``s_branch`` to it (the form LLVM
    gives a loop body's ``if``). None otherwise."""
    targets = [t for t in _targets(kinds[index][1]) if t >= 0]
    if len(targets) != 1 or targets[0] not in by_offset:
        return None
    target = targets[0]
    at = by_offset[target]
    written: set = set()
    for j in range(index + 1, min(end, index + 1 + _INERT_LIMIT)):
        if j == at:
            n = j - index - 1
            break
        kind, payload, _ = kinds[j]
        if kind == "branch":
            if insts[j].name == "s_branch" and _targets(payload) == [target]:
                n = j - index
                break
            return None
        scalar = _inert(insts[j], kind, payload)
        if scalar is None:
            return None
        written |= scalar
    else:
        return None
    if written and not _dead_at(frozenset(written), at, insts, kinds, first, end, by_offset):
        return None
    return target, n


# --- code generation ---------------------------------------------------------------------------

class WaveState:
    """The current LLVM value of every register a segment has touched, for one wave."""

    def __init__(self, gen: UnitCodegen, wave: ir.Value) -> None:
        self.gen = gen
        self.b = gen.b
        self.wave = wave
        self.values: dict[tuple, ir.Value] = {}
        self.dirty: set[tuple] = set()

    def pointer(self, key: tuple) -> tuple[ir.Value, ir.Type]:
        gen, b = self.gen, self.b
        kind = key[0]
        lanes = gen.lanes
        if kind in ("v", "a"):
            base = gen.V if kind == "v" else gen.A
            row = b.add(b.mul(ir.Constant(I64, key[1]), gen.W), self.wave)
            offset = b.mul(row, ir.Constant(I64, lanes * 4))
            return b.gep(base, [offset], source_etype=I8), ir.VectorType(I32, lanes)
        if kind == "s":
            offset = b.add(b.mul(self.wave, ir.Constant(I64, 128 * 4)),
                           ir.Constant(I64, key[1] * 4))
            return b.gep(gen.S, [offset], source_etype=I8), I32
        if kind == "exec":
            offset = b.mul(self.wave, ir.Constant(I64, lanes))
            return b.gep(gen.EXEC, [offset], source_etype=I8), ir.VectorType(I8, lanes)
        if kind == "scc":
            return b.gep(gen.SCC, [self.wave], source_etype=I8), I8
        raise LowerError(f"state {key}")

    def get(self, key: tuple) -> ir.Value:
        value = self.values.get(key)
        if value is None:
            ptr, ty = self.pointer(key)
            value = self.b.load(ptr, typ=ty, align=1)
            if key[0] in ("exec", "scc"):
                value = self.b.icmp_unsigned("!=", value, ir.Constant(ty, None))
            self.values[key] = value
        return value

    def set(self, key: tuple, value: ir.Value) -> None:
        self.values[key] = value
        self.dirty.add(key)

    def store_dirty(self, keys: Any = None) -> None:
        for key in sorted(self.dirty if keys is None else keys, key=repr):
            value = self.values[key]
            ptr, ty = self.pointer(key)
            if key[0] in ("exec", "scc"):
                value = self.b.zext(value, ty)
            self.b.store(value, ptr, align=1)

    def exec_mask(self) -> ir.Value:
        return self.get(("exec",))

    def snapshot(self) -> tuple[dict, set]:
        return dict(self.values), set(self.dirty)


class UnitCodegen:
    """Builds the LLVM function ``run(ctx) -> status`` of one unit."""

    def __init__(self, plan: UnitPlan, lanes: int, name: str, info: Any) -> None:
        self.plan = plan
        self.lanes = lanes
        self.info = info
        self.module = ir.Module(name=name)
        self.fn = ir.Function(self.module, ir.FunctionType(I64, [PTR]), name="run")
        self.ctx = self.fn.args[0]
        # the prologue loads context words; every later use is dominated by it
        prologue = self.fn.append_basic_block("prologue")
        start = self.fn.append_basic_block("start")
        self.pro = ir.IRBuilder(prologue)
        jump = self.pro.branch(start)
        self.pro.position_before(jump)
        self.b = ir.IRBuilder(start)
        b = self.b
        self.fields: dict[int, ir.Value] = {}
        self.pointers: dict[int, ir.Value] = {}
        self.S = self.ptr_field(C.S)
        self.V = self.ptr_field(C.V)
        self.A = self.ptr_field(C.A)
        self.EXEC = self.ptr_field(C.EXEC)
        self.SCC = self.ptr_field(C.SCC)
        self.W = self.field(C.WAVES)
        self.CTL = self.ptr_field(C.CTL)
        pro = self.pro
        self.lanes_acc = pro.alloca(I64, name="lanes")
        self.waves_acc = pro.alloca(I64, name="waves")
        self.steps_acc = pro.alloca(I64, name="steps")
        self.released_acc = pro.alloca(I64, name="released")
        self.wave_var = pro.alloca(I64, name="w")
        self.code0 = pro.alloca(I64, name="code0")
        self.diverged = pro.alloca(I1, name="diverged")
        self.skipping = pro.alloca(I64, name="skipping")
        for acc in (self.lanes_acc, self.waves_acc, self.steps_acc, self.released_acc):
            pro.store(ir.Constant(I64, 0), acc)
        self.stop_at = self.field(C.STOP_AT)
        self.budget = self.field(C.BUDGET)
        self.seg_blocks: dict[int, ir.Block] = {}
        _ = b

    # --- context ---------------------------------------------------------------------------------
    def field(self, index: int) -> ir.Value:
        """Context word ``index`` (loaded once, in the prologue)."""
        value = self.fields.get(index)
        if value is None:
            ptr = self.pro.gep(self.ctx, [ir.Constant(I64, index)], source_etype=I64)
            value = self.pro.load(ptr, typ=I64)
            self.fields[index] = value
        return value

    def ptr_field(self, index: int) -> ir.Value:
        """Context word ``index`` as a pointer (in the prologue)."""
        value = self.pointers.get(index)
        if value is None:
            value = self.pro.inttoptr(self.field(index), PTR)
            self.pointers[index] = value
        return value

    def alloca(self, ty: ir.Type) -> ir.Value:
        """A stack slot (in the prologue, so that SROA promotes it)."""
        return self.pro.alloca(ty)

    def set_field(self, index: int, value: ir.Value | int) -> None:
        if isinstance(value, int):
            value = ir.Constant(I64, value)
        ptr = self.b.gep(self.ctx, [ir.Constant(I64, index)], source_etype=I64)
        self.b.store(value, ptr)

    def ret(self, status: int, pc: ir.Value | int | None = None) -> None:
        """Write the counters and ``status`` (and OUT_PC) and return."""
        self.set_field(C.LANES, self.b.load(self.lanes_acc))
        self.set_field(C.WAVE_INSTS, self.b.load(self.waves_acc))
        self.set_field(C.STEPS, self.b.load(self.steps_acc))
        self.set_field(C.RELEASED, self.b.load(self.released_acc))
        if pc is not None:
            self.set_field(C.OUT_PC, pc)
        self.set_field(C.STATUS, status)
        self.b.ret(ir.Constant(I64, status))

    def add(self, acc: ir.Value, amount: ir.Value | int) -> None:
        if isinstance(amount, int):
            amount = ir.Constant(I64, amount)
        self.b.store(self.b.add(self.b.load(acc), amount), acc)

    # --- the function -----------------------------------------------------------------------------
    def build(self) -> ir.Module:
        b = self.b
        for seg in self.plan.segments:
            self.seg_blocks[seg.number] = self.fn.append_basic_block(f"seg{seg.number}")
        bad = self.fn.append_basic_block("registers")
        dispatch = self.fn.append_basic_block("dispatch")
        # the batch must have every register the unit names (else the interpreter explains)
        enough = b.and_(b.icmp_unsigned(">=", self.field(C.NVGPRS),
                                        ir.Constant(I64, self.plan.vgprs)),
                        b.icmp_unsigned(">=", self.field(C.NAGPRS),
                                        ir.Constant(I64, self.plan.agprs)))
        b.cbranch(enough, dispatch, bad)
        b.position_at_end(bad)
        self.ret(C.INTERPRET, self._entry_pc())
        b.position_at_end(dispatch)
        entry = self.field(C.ENTRY)
        default = self.fn.append_basic_block("no_entry")
        switch = b.switch(entry, default)
        for seg in self.plan.segments:
            check = self.fn.append_basic_block(f"enter{seg.number}")
            switch.add_case(ir.Constant(I64, seg.number), check)
            b.position_at_end(check)
            self._straddle_check(seg)
            b.branch(self.seg_blocks[seg.number])
        b.position_at_end(default)
        self.ret(C.INTERPRET, self._entry_pc())
        check = getattr(self, "check", None)
        for seg in self.plan.segments:
            if check is not None:
                check()
            b.position_at_end(self.seg_blocks[seg.number])
            self._segment(seg)
        return self.module

    def _entry_pc(self) -> int:
        return self.plan.segments[0].start if self.plan.segments else 0

    def _straddle_check(self, seg: Segment) -> None:
        """A merge point strictly inside the segment: the interpreter runs it."""
        b = self.b
        inside = b.and_(b.icmp_unsigned(">", self.stop_at, ir.Constant(I64, seg.start)),
                        b.icmp_unsigned("<", self.stop_at, ir.Constant(I64, seg.end)))
        go = self.fn.append_basic_block(f"s{seg.number}_ok")
        stop = self.fn.append_basic_block(f"s{seg.number}_interp")
        b.cbranch(inside, stop, go)
        b.position_at_end(stop)
        self.ret(C.INTERPRET, seg.start)
        b.position_at_end(go)

    def goto(self, pc: int) -> None:
        """Continue at byte address ``pc``: the segment there (merge point and budget
        permitting), else back to the caller."""
        b = self.b
        seg = self.plan.segment_at(pc)
        if seg is None:
            self.ret(C.CONTINUE, pc)
            return
        stop = b.icmp_unsigned(">=", ir.Constant(I64, pc), self.stop_at)
        spent = b.icmp_signed(">=", b.load(self.steps_acc), self.budget)
        leave = self.fn.append_basic_block(f"leave_{pc:x}")
        go = self.fn.append_basic_block(f"go_{pc:x}")
        b.cbranch(b.or_(stop, spent), leave, go)
        b.position_at_end(leave)
        self.ret(C.CONTINUE, pc)
        b.position_at_end(go)
        self._straddle_check(seg)
        b.branch(self.seg_blocks[seg.number])

    # --- one segment --------------------------------------------------------------------------
    def _segment(self, seg: Segment) -> None:
        b = self.b
        if seg.barrier:
            # other waves of the chunk are elsewhere: the interpreter's scheduler waits for them
            whole = b.icmp_unsigned("!=", self.field(C.WHOLE), ir.Constant(I64, 0))
            go = self.fn.append_basic_block(f"s{seg.number}_released")
            wait = self.fn.append_basic_block(f"s{seg.number}_wait")
            b.cbranch(whole, go, wait)
            b.position_at_end(wait)
            self.ret(C.INTERPRET, seg.start)
            b.position_at_end(go)
            self.add(self.released_acc, 1)
        if seg.writes:
            self._memory_precheck(seg)
        b.store(ir.Constant(I64, 0), self.wave_var)
        b.store(ir.Constant(I64, -1), self.code0)
        b.store(ir.Constant(I1, 0), self.diverged)
        if seg.skip is not None:
            b.store(ir.Constant(I64, 0), self.skipping)
        head = self.fn.append_basic_block(f"s{seg.number}_head")
        body = self.fn.append_basic_block(f"s{seg.number}_body")
        done = self.fn.append_basic_block(f"s{seg.number}_done")
        b.branch(head)
        b.position_at_end(head)
        w = b.load(self.wave_var)
        b.cbranch(b.icmp_signed("<", w, self.W), body, done)
        b.position_at_end(body)
        state = WaveState(self, w)
        code = self._wave_body(seg, state)
        state.store_dirty()
        if code is not None:
            ctl = b.gep(self.CTL, [w], source_etype=I64)
            b.store(code, ctl)
            first = b.load(self.code0)
            same = b.select(b.icmp_signed("==", w, ir.Constant(I64, 0)), code, first)
            b.store(same, self.code0)
            b.store(b.or_(b.load(self.diverged), b.icmp_signed("!=", code, same)),
                    self.diverged)
            if seg.skip is not None:
                jumps = b.icmp_signed("==", code, ir.Constant(I64, seg.skip[0]))
                self.add(self.skipping, b.zext(jumps, I64))
        b.store(b.add(w, ir.Constant(I64, 1)), self.wave_var)
        b.branch(head)
        b.position_at_end(done)
        self.add(self.steps_acc, len(seg.steps))
        if seg.branch is None:
            self.goto(seg.end)
            return
        split = self.fn.append_basic_block(f"s{seg.number}_split")
        uniform = self.fn.append_basic_block(f"s{seg.number}_uniform")
        b.cbranch(b.load(self.diverged), split, uniform)
        b.position_at_end(split)
        if seg.skip is None:
            self.set_field(C.SEG_END, seg.end)
            self.ret(C.SPLIT)
        else:
            # every wave runs the guarded instructions (see inert_skip): the ones that would
            # have jumped do nothing there and are not counted
            guarded = b.mul(b.load(self.skipping), ir.Constant(I64, seg.skip[1]))
            self.add(self.waves_acc, b.neg(guarded))
            self.goto(seg.end)
        b.position_at_end(uniform)
        code0 = b.load(self.code0)
        targets = [t for t in _targets(seg.branch.trace) if t >= 0]
        fallthrough = self.fn.append_basic_block(f"s{seg.number}_next")
        other = self.fn.append_basic_block(f"s{seg.number}_other")
        switch = b.switch(code0, other)
        switch.add_case(ir.Constant(I64, NEXT), fallthrough)
        b.position_at_end(fallthrough)
        self.goto(seg.end)
        for target in targets:
            if target == NEXT:
                continue
            block = self.fn.append_basic_block(f"s{seg.number}_to_{target:x}")
            switch.add_case(ir.Constant(I64, target), block)
            b.position_at_end(block)
            self.goto(target)
        b.position_at_end(other)
        self.ret(C.CONTINUE, code0)

    def _wave_body(self, seg: Segment, state: WaveState) -> ir.Value | None:
        """Emit the segment's instructions for one wave; returns the branch's code (i64)."""
        from hsapy.sim.isa.jit import memcode

        b = self.b
        code = None
        self.runs: list[list] = []        # [EXEC value, instructions] after each instruction
        for k, step in enumerate(seg.steps):
            if step.kind in ("load", "write"):
                memcode.emit(self, state, step, seg, k)
            elif step.kind == "barrier":
                pass    # released (see _segment); counted like any instruction below
            else:
                trace = step.trace
                lower = Lowerer(b, lambda key, node: state.get(key))
                if trace.bail is not None:
                    self.bail_if(lower.scalar(lower.value(trace.bail)), state, seg, k)
                values = {key: lower.value(node) for key, node in trace.writes.items()}
                if trace.control is not None:
                    if isinstance(trace.control, int):
                        code = ir.Constant(I64, trace.control)
                    else:
                        code = lower.scalar(lower.value(trace.control))
                for key, value in values.items():
                    state.set(key, value)
            mask = state.exec_mask()
            if self.runs and self.runs[-1][0] is mask:
                self.runs[-1][1] += 1
            else:
                self.runs.append([mask, 1])
        self._count()
        return code

    def _count(self) -> None:
        """Add this wave's counters: EXEC lanes after each instruction, and instructions."""
        b = self.b
        word = ir.IntType(self.lanes)
        total = None
        executed = 0
        for mask, times in self.runs:
            count = b.call(self._ctpop(word), [b.bitcast(mask, word)])
            if self.lanes < 64:
                count = b.zext(count, I64)
            if times > 1:
                count = b.mul(count, ir.Constant(I64, times))
            total = count if total is None else b.add(total, count)
            executed += times
        if total is not None:
            self.add(self.lanes_acc, total)
            self.add(self.waves_acc, executed)

    def _ctpop(self, word: ir.IntType) -> ir.Function:
        name = f"llvm.ctpop.i{word.width}"
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(word, [word]), name=name)
        return fn

    def bail_if(self, cond: ir.Value, state: WaveState, seg: Segment, k: int) -> None:
        """When ``cond`` (i1) holds, this wave goes back to the interpreter at step ``k``: its
        state so far is written back, the waves before it finished the segment, the waves
        after it have not started it."""
        b = self.b
        out = self.fn.append_basic_block(f"s{seg.number}_bail{k}")
        go = self.fn.append_basic_block(f"s{seg.number}_ok{k}")
        b.cbranch(cond, out, go)
        b.position_at_end(out)
        state.store_dirty()
        self._count()
        self.set_field(C.BAIL_WAVE, state.wave)
        self.set_field(C.BAIL_PC, seg.steps[k].inst.offset)
        self.set_field(C.SEG_START, seg.start)
        self.set_field(C.SEG_END, seg.end)
        self.set_field(C.BAIL_CTL, 1 if seg.branch is not None else 0)
        self.ret(C.BAIL)
        b.position_at_end(go)

    def _memory_precheck(self, seg: Segment) -> None:
        """Before a segment that writes memory, check every wave's access: any wave whose
        access the fast path does not take sends the whole batch to the interpreter at the
        write, before anything is written (as the interpreter checks a whole batch first)."""
        from hsapy.sim.isa.jit import memcode

        b = self.b
        step = seg.steps[0]
        if not step.mem.needs_precheck:
            return
        b.store(ir.Constant(I64, 0), self.wave_var)
        head = self.fn.append_basic_block(f"s{seg.number}_chk_head")
        body = self.fn.append_basic_block(f"s{seg.number}_chk_body")
        fail = self.fn.append_basic_block(f"s{seg.number}_chk_fail")
        done = self.fn.append_basic_block(f"s{seg.number}_chk_done")
        b.branch(head)
        b.position_at_end(head)
        w = b.load(self.wave_var)
        b.cbranch(b.icmp_signed("<", w, self.W), body, done)
        b.position_at_end(body)
        state = WaveState(self, w)
        self.runs = []
        ok = memcode.emit_check(self, state, step)
        nxt = self.fn.append_basic_block(f"s{seg.number}_chk_next")
        b.cbranch(ok, nxt, fail)
        b.position_at_end(nxt)
        b.store(b.add(w, ir.Constant(I64, 1)), self.wave_var)
        b.branch(head)
        b.position_at_end(fail)
        self.set_field(C.BAIL_WAVE, 0)
        self.set_field(C.BAIL_PC, step.inst.offset)
        self.set_field(C.SEG_START, seg.start)
        self.set_field(C.SEG_END, seg.end)
        self.set_field(C.BAIL_CTL, 0)
        self.ret(C.BAIL)
        b.position_at_end(done)


def generate(plan: UnitPlan, lanes: int, name: str, info: Any,
             check: Any = None) -> ir.Module:
    """The LLVM module of a unit (function ``run``); ``check()`` is called between segments
    (it may raise to stop)."""
    gen = UnitCodegen(plan, lanes, name, info)
    gen.check = check
    return gen.build()

