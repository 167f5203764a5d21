"""A small kernel-authoring layer over ``llvmlite.ir`` for AMDGPU.

A :class:`KernelBuilder` holds one ``amdgpu_kernel`` function in a fresh ``llvmlite.ir.Module``
and offers the GPU vocabulary a kernel needs: work-item and workgroup ids, the workgroup size
(from the hidden arguments, or a constant when the kernel fixes it), LDS arrays, barriers,
atomics, the wave size, readfirstlane and timestamps. Everything it emits is target-generic
LLVM IR: the target processor and the wave size are function attributes (``target-cpu``,
``target-features``), so the same builder code produces a wave32 and a wave64 kernel.

Example::

    kb = KernelBuilder("scale", [("x", GLOBAL_PTR), ("n", I32)], target="gfx1201")
    i = kb.global_id()
    with kb.if_then(kb.b.icmp_unsigned("<", i, kb.arg("n"))):
        p = kb.element_ptr(kb.arg("x"), i, F32)
        kb.b.store(kb.b.fmul(kb.b.load(p, typ=F32), F32(2.0)), p)
    text = kb.finish()    # LLVM IR text for hsapy.toolchain.build_ir
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from llvmlite import ir
from llvmlite.ir import instructions as _instructions

from hsapy.errors import HsapyValueError
from hsapy.toolchain import AMDGPU_TRIPLE, BuildTarget

__all__ = [
    "ADDRSPACE_CONSTANT",
    "ADDRSPACE_GLOBAL",
    "ADDRSPACE_LOCAL",
    "CONSTANT_PTR",
    "F32",
    "GLOBAL_PTR",
    "I1",
    "I16",
    "I32",
    "I64",
    "KernelBuilder",
    "LOCAL_PTR",
]

# AMDGPU address spaces (LLVM AMDGPUUsage, "Address Spaces").
ADDRSPACE_GLOBAL = 1
ADDRSPACE_LOCAL = 3      # LDS (group segment)
ADDRSPACE_CONSTANT = 4

I1 = ir.IntType(1)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
VOID = ir.VoidType()
GLOBAL_PTR = ir.PointerType(addrspace=ADDRSPACE_GLOBAL)
LOCAL_PTR = ir.PointerType(addrspace=ADDRSPACE_LOCAL)
CONSTANT_PTR = ir.PointerType(addrspace=ADDRSPACE_CONSTANT)

_AXES = {0: "x", 1: "y", 2: "z", "x": "x", "y": "y", "z": "z"}

# Offsets of the workgroup size fields (u16 each, x/y/z):
# code object v5/v6: hidden_group_size_x/y/z at 12/14/16 of the implicit-argument block
# (docs/hsa-abi.md, "Hidden (implicit) kernel arguments"); v4: the AQL dispatch packet's
# workgroup_size_x/y/z at 4/6/8 (docs/hsa-abi.md, "AQL packets").
_GROUP_SIZE_OFFSET_V5 = 12
_GROUP_SIZE_OFFSET_PACKET = 4
# hidden_block_count_x/y/z (u32) at 0/4/8 of the implicit-argument block (v5/v6).
_BLOCK_COUNT_OFFSET_V5 = 0
# The dispatch packet's grid_size_x/y/z (u32) at 12/16/20 (v4 route for num_workgroups).
_GRID_SIZE_OFFSET_PACKET = 12

_SCOPES = {"wavefront": "wavefront", "workgroup": "workgroup", "agent": "agent",
           "system": ""}


class _StringAttributes(ir.FunctionAttributes):
    """Function attributes that also accept LLVM string attributes (``"key"="value"``).

    llvmlite.ir only knows enum attributes; AMDGPU needs ``target-cpu``, ``target-features``
    and ``amdgpu-flat-work-group-size`` as string attributes.
    """

    def add(self, name: str) -> None:
        if name.startswith('"'):
            set.add(self, name)
        else:
            super().add(name)


class _ScopedAtomicRMW(_instructions.AtomicRMW):
    """``atomicrmw`` with a ``syncscope`` (llvmlite.ir's builder has none: it would be system
    scope, which turns float atomics into compare-and-swap loops on AMDGPU)."""

    def __init__(self, parent, op, ptr, val, ordering, scope, name=""):
        super().__init__(parent, op, ptr, val, ordering, name)
        self.scope = scope

    def descr(self, buf):
        ptr, val = self.operands
        scope = f' syncscope("{self.scope}")' if self.scope else ""
        buf.append(
            f"atomicrmw {self.operation} {ptr.type} {ptr.get_reference()}, {val.type} "
            f"{val.get_reference()}{scope} {self.ordering}"
            f"{self._stringify_metadata(leading_comma=True)}\n"
        )


def _axis(axis: int | str) -> str:
    try:
        return _AXES[axis]
    except KeyError:
        raise HsapyValueError(f"axis must be 0, 1, 2 or 'x', 'y', 'z', got {axis!r}") from None


class KernelBuilder:
    """Builds one AMDGPU kernel with ``llvmlite.ir``.

    ``params`` lists ``(name, llvmlite type)`` pairs (use :data:`GLOBAL_PTR` for buffers).
    ``workgroup_size`` fixes the launch's workgroup size (then :meth:`workgroup_size` is a
    constant and LLVM may use it); otherwise it is read from the hidden arguments and
    ``max_workgroup_size`` bounds it. ``wavefront_size`` defaults to the target's.
    ``b`` is the ``llvmlite.ir.IRBuilder`` positioned in the kernel for plain arithmetic.
    """

    def __init__(self, name: str, params: Sequence[tuple[str, ir.Type]], *,
                 target: str | BuildTarget = "gfx942", code_object_version: int = 5,
                 wavefront_size: int | None = None,
                 workgroup_size: tuple[int, int, int] | None = None,
                 max_workgroup_size: int = 1024) -> None:
        self.target = BuildTarget.parse(target)
        self.wavefront_size = self.target.check_wavefront_size(wavefront_size)
        self.code_object_version = code_object_version
        if workgroup_size is not None:
            workgroup_size = tuple(int(v) for v in workgroup_size)
            if len(workgroup_size) != 3 or min(workgroup_size) < 1:
                raise HsapyValueError(f"workgroup_size must be 3 positive ints, got "
                                      f"{workgroup_size!r}")
            max_workgroup_size = workgroup_size[0] * workgroup_size[1] * workgroup_size[2]
        if not 1 <= max_workgroup_size <= 1024:
            raise HsapyValueError(f"workgroup size {max_workgroup_size} is outside 1..1024")
        self.fixed_workgroup_size = workgroup_size
        self.module = ir.Module(name=name)
        self.module.triple = AMDGPU_TRIPLE
        self._param_names = [param_name for param_name, _ in params]
        function_type = ir.FunctionType(VOID, [param_type for _, param_type in params])
        self.function = ir.Function(self.module, function_type, name=name)
        self.function.calling_convention = "amdgpu_kernel"
        for argument, param_name in zip(self.function.args, self._param_names):
            argument.name = param_name
        attributes = _StringAttributes()
        attributes.add(f'"target-cpu"="{self.target.processor}"')
        features = self.target.llvm_features(self.wavefront_size)
        if features:
            attributes.add(f'"target-features"="{features}"')
        attributes.add(f'"amdgpu-flat-work-group-size"="1,{max_workgroup_size}"')
        if workgroup_size is not None:
            # reqd_work_group_size lets LLVM fold ids and the size into constants.
            self.function.set_metadata("reqd_work_group_size", self.module.add_metadata(
                [I32(value) for value in workgroup_size]))
        self.function.attributes = attributes
        self.b = ir.IRBuilder(self.function.append_basic_block("entry"))
        self._finished = False

    # ----- module helpers

    def intrinsic(self, name: str, return_type: ir.Type,
                  arg_types: Sequence[ir.Type] = ()) -> ir.Function:
        """Declare (once) and return an LLVM intrinsic or external function."""
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(self.module, ir.FunctionType(return_type, list(arg_types)), name=name)

    def call(self, name: str, return_type: ir.Type, args: Sequence[ir.Value] = (),
             result_name: str = "") -> ir.Value:
        """Call intrinsic ``name`` with ``args`` (argument types taken from the values)."""
        function = self.intrinsic(name, return_type, [arg.type for arg in args])
        return self.b.call(function, list(args), name=result_name)

    def arg(self, name: str) -> ir.Argument:
        """The kernel argument called ``name``."""
        try:
            return self.function.args[self._param_names.index(name)]
        except ValueError:
            raise HsapyValueError(f"kernel {self.function.name} has no argument {name!r}; "
                                  f"it has {', '.join(self._param_names)}") from None

    # ----- ids and sizes

    def workitem_id(self, axis: int | str = 0) -> ir.Value:
        """The work-item id within the workgroup (``threadIdx``) along ``axis``."""
        letter = _axis(axis)
        return self.call(f"llvm.amdgcn.workitem.id.{letter}", I32, result_name=f"tid_{letter}")

    def workgroup_id(self, axis: int | str = 0) -> ir.Value:
        """The workgroup id (``blockIdx``) along ``axis``."""
        letter = _axis(axis)
        return self.call(f"llvm.amdgcn.workgroup.id.{letter}", I32, result_name=f"wg_{letter}")

    def _load_u16(self, base: ir.Value, offset: int, name: str) -> ir.Value:
        pointer = self.b.gep(base, [I64(offset)], source_etype=ir.IntType(8), inbounds=True)
        value = self.b.load(pointer, typ=I16, align=2)
        # Workgroup sizes are 1..1024: tell LLVM so it can narrow the arithmetic.
        value.set_metadata("range", self.module.add_metadata([I16(1), I16(1025)]))
        return self.b.zext(value, I32, name=name)

    def _load_u32(self, base: ir.Value, offset: int, name: str) -> ir.Value:
        pointer = self.b.gep(base, [I64(offset)], source_etype=ir.IntType(8), inbounds=True)
        return self.b.load(pointer, typ=I32, align=4, name=name)

    def workgroup_size(self, axis: int | str = 0) -> ir.Value:
        """The workgroup size (``blockDim``) along ``axis``: a constant when fixed at
        construction, else read from the hidden arguments (v5/v6) or the packet (v4)."""
        letter = _axis(axis)
        index = "xyz".index(letter)
        if self.fixed_workgroup_size is not None:
            return I32(self.fixed_workgroup_size[index])
        if self.code_object_version >= 5:
            base = self.call("llvm.amdgcn.implicitarg.ptr", CONSTANT_PTR)
            offset = _GROUP_SIZE_OFFSET_V5 + 2 * index
        else:
            base = self.call("llvm.amdgcn.dispatch.ptr", CONSTANT_PTR)
            offset = _GROUP_SIZE_OFFSET_PACKET + 2 * index
        return self._load_u16(base, offset, f"wgsize_{letter}")

    def num_workgroups(self, axis: int | str = 0) -> ir.Value:
        """The number of workgroups (``gridDim``) along ``axis``."""
        letter = _axis(axis)
        index = "xyz".index(letter)
        if self.code_object_version >= 5:
            base = self.call("llvm.amdgcn.implicitarg.ptr", CONSTANT_PTR)
            return self._load_u32(base, _BLOCK_COUNT_OFFSET_V5 + 4 * index, f"nwg_{letter}")
        # v4: ceil(grid_size / workgroup_size) from the dispatch packet.
        packet = self.call("llvm.amdgcn.dispatch.ptr", CONSTANT_PTR)
        grid = self._load_u32(packet, _GRID_SIZE_OFFSET_PACKET + 4 * index, f"grid_{letter}")
        size = self.workgroup_size(axis)
        rounded = self.b.add(grid, self.b.sub(size, I32(1)))
        return self.b.udiv(rounded, size, name=f"nwg_{letter}")

    def global_id(self, axis: int | str = 0) -> ir.Value:
        """``workgroup_id * workgroup_size + workitem_id`` along ``axis``."""
        letter = _axis(axis)
        group_base = self.b.mul(self.workgroup_id(axis), self.workgroup_size(axis))
        return self.b.add(group_base, self.workitem_id(axis), name=f"gid_{letter}")

    # ----- waves

    def wave_size(self) -> ir.Value:
        """The wave size as an i32 (``llvm.amdgcn.wavefrontsize``: LLVM folds it to 32 or 64
        from the function's target features)."""
        return self.call("llvm.amdgcn.wavefrontsize", I32, result_name="wave_size")

    def lane_id(self) -> ir.Value:
        """The lane of this work-item in its wave (mbcnt over the lanes below it)."""
        low = self.call("llvm.amdgcn.mbcnt.lo", I32, [I32(-1), I32(0)], "lane_lo")
        if self.wavefront_size == 32:
            return low
        return self.call("llvm.amdgcn.mbcnt.hi", I32, [I32(-1), low], "lane")

    def readfirstlane(self, value: ir.Value) -> ir.Value:
        """The value of the first active lane, uniform across the wave (i32)."""
        if value.type != I32:
            raise HsapyValueError(f"readfirstlane takes an i32, got {value.type}")
        return self.call("llvm.amdgcn.readfirstlane.i32", I32, [value], "first")

    # ----- memory

    def element_ptr(self, base: ir.Value, index: ir.Value, element_type: ir.Type,
                    name: str = "") -> ir.Value:
        """``&base[index]`` for a buffer of ``element_type`` (index is zero-extended)."""
        if index.type != I64:
            index = self.b.zext(index, I64)
        return self.b.gep(base, [index], source_etype=element_type, inbounds=True, name=name)

    def lds_array(self, name: str, element_type: ir.Type, count: int) -> ir.Value:
        """A statically sized LDS (group segment, addrspace 3) array shared by a workgroup;
        returns a ``ptr addrspace(3)`` to its first element (index it with element_ptr)."""
        if count < 1:
            raise HsapyValueError(f"LDS array {name!r} needs at least one element")
        array_type = ir.ArrayType(element_type, count)
        variable = ir.GlobalVariable(self.module, array_type, name, addrspace=ADDRSPACE_LOCAL)
        variable.linkage = "internal"
        # LDS cannot be initialised: its contents are undefined at kernel start.
        variable.initializer = ir.Constant(array_type, ir.Undefined)
        variable.align = 16
        # llvmlite types globals with typed pointers; refer to it through an opaque
        # ``ptr addrspace(3)`` so that element_ptr/load/store treat it like any buffer.
        return ir.FormattedConstant(LOCAL_PTR, variable.get_reference())

    def fence(self, ordering: str = "acq_rel", scope: str = "workgroup") -> None:
        """A memory fence at ``scope`` (wavefront, workgroup, agent, system)."""
        self.b.fence(ordering, _SCOPES[scope] or None)

    def barrier(self) -> None:
        """Workgroup barrier with LDS/global visibility (``__syncthreads``): release fence,
        s_barrier, acquire fence (the memory model of AMDGPUUsage wants both fences)."""
        self.fence("release", "workgroup")
        self.call("llvm.amdgcn.s.barrier", VOID)
        self.fence("acquire", "workgroup")

    def atomic(self, op: str, pointer: ir.Value, value: ir.Value, *, scope: str = "agent",
               ordering: str = "monotonic", name: str = "") -> ir.Value:
        """``atomicrmw op`` (add, fadd, max, umax, xchg, ...) at ``scope``; returns the old
        value."""
        if scope not in _SCOPES:
            raise HsapyValueError(f"scope must be one of {', '.join(_SCOPES)}, got {scope!r}")
        instruction = _ScopedAtomicRMW(self.b.block, op, pointer, value, ordering,
                                       _SCOPES[scope], name)
        self.b._insert(instruction)
        return instruction

    def atomic_add(self, pointer: ir.Value, value: ir.Value, **kwargs) -> ir.Value:
        """Atomic add (integer ``add`` or float ``fadd`` by the value's type)."""
        op = "fadd" if isinstance(value.type, ir.FloatType) else "add"
        return self.atomic(op, pointer, value, **kwargs)

    # ----- time

    def timestamp(self, kind: str = "realtime") -> ir.Value:
        """A 64-bit timestamp.

        ``realtime``: the constant-rate clock (``llvm.readsteadycounter``: s_memrealtime on
        gfx9, s_sendmsg_rtn_b64 REALTIME on gfx11/gfx12, which lack s_memrealtime).
        ``cycles``: the shader clock (``llvm.readcyclecounter``: s_memtime on gfx9,
        s_getreg SHADER_CYCLES on gfx11 (20 bits) and gfx12 (SHADER_CYCLES_LO/HI)).
        """
        names = {"realtime": "llvm.readsteadycounter", "cycles": "llvm.readcyclecounter"}
        if kind not in names:
            raise HsapyValueError(f"timestamp kind must be 'realtime' or 'cycles', got {kind!r}")
        return self.call(names[kind], I64, result_name=kind)

    # ----- control flow

    @contextlib.contextmanager
    def if_then(self, condition: ir.Value) -> Iterator[None]:
        """Emit the body only for work-items where ``condition`` (i1) holds."""
        with self.b.if_then(condition):
            yield

    def finish(self) -> str:
        """Terminate the kernel (``ret void``) and return the module's LLVM IR text."""
        if not self._finished:
            self.b.ret_void()
            self._finished = True
        return str(self.module)
