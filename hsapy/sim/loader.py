"""The simulator's code-object loader: ``hsa_code_object_reader_*``, ``hsa_executable_*``.

``SimLib`` inherits :class:`LoaderMixin`. Loading follows ROCr's loader (ExecutableImpl in
ROCr's loader/executable.cpp): the code object's ISA is checked against the agent, its PT_LOAD
segments are copied into ONE device allocation spanning the first segment's vaddr to the end
of the last (zero-filled beyond each segment's file size), the dynamic relocations are applied
(R_AMDGPU_RELATIVE64, ABS64, ABS32, ABS32_LO/HI), and every kernel descriptor and global
variable becomes an agent symbol. Each loaded kernel is registered in
``self.kernel_objects[descriptor_address]`` as a :class:`LoadedKernel`, which the packet
processor validates dispatches against and hands to the executor as ``DispatchContext.kernel``.

Statuses follow ROCr: a code object that does not parse -> INVALID_CODE_OBJECT; an ISA the
runtime does not know -> INVALID_ISA_NAME; an ISA the agent cannot run -> INCOMPATIBLE_ARGUMENTS;
loading into a frozen executable -> FROZEN_EXECUTABLE; a symbol name not defined ->
INVALID_SYMBOL_NAME; bad handles -> INVALID_EXECUTABLE / INVALID_CODE_OBJECT_READER /
INVALID_AGENT / INVALID_EXECUTABLE_SYMBOL. The last loader failure's explanation is kept for
the Python side in :meth:`LoaderMixin.sim_loader_error` (the C API carries only the status).

This module must not import hsapy.sim.simlib at module level (simlib imports it).
"""
from __future__ import annotations

import struct
import threading
from dataclasses import dataclass, field
from typing import Any

from hsapy.codeobject import (
    CodeObject,
    CodeObjectError,
    KernelDescriptor,
    KernelInfo,
    Target,
)
from hsapy.hsa_enums import (
    HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
    HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR,
    HSA_DEFAULT_FLOAT_ROUNDING_MODE_ZERO,
    HSA_EXECUTABLE_INFO_DEFAULT_FLOAT_ROUNDING_MODE,
    HSA_EXECUTABLE_INFO_PROFILE,
    HSA_EXECUTABLE_INFO_STATE,
    HSA_EXECUTABLE_STATE_FROZEN,
    HSA_EXECUTABLE_STATE_UNFROZEN,
    HSA_EXECUTABLE_SYMBOL_INFO_AGENT,
    HSA_EXECUTABLE_SYMBOL_INFO_IS_DEFINITION,
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_CALL_CONVENTION,
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK,
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT,
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
    HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
    HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE,
    HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME,
    HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME_LENGTH,
    HSA_EXECUTABLE_SYMBOL_INFO_NAME,
    HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH,
    HSA_EXECUTABLE_SYMBOL_INFO_TYPE,
    HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS,
    HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALIGNMENT,
    HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION,
    HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_IS_CONST,
    HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SEGMENT,
    HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE,
    HSA_PROFILE_BASE,
    HSA_PROFILE_FULL,
    HSA_STATUS_ERROR_FROZEN_EXECUTABLE,
    HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
    HSA_STATUS_ERROR_INVALID_AGENT,
    HSA_STATUS_ERROR_INVALID_ARGUMENT,
    HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
    HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER,
    HSA_STATUS_ERROR_INVALID_EXECUTABLE,
    HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL,
    HSA_STATUS_ERROR_INVALID_ISA_NAME,
    HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
    HSA_STATUS_ERROR_NOT_INITIALIZED,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES,
    HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED,
    HSA_STATUS_ERROR_VARIABLE_UNDEFINED,
    HSA_STATUS_SUCCESS,
    HSA_SYMBOL_KIND_KERNEL,
    HSA_SYMBOL_KIND_VARIABLE,
    HSA_SYMBOL_LINKAGE_PROGRAM,
    HSA_VARIABLE_ALLOCATION_AGENT,
    HSA_VARIABLE_SEGMENT_GLOBAL,
)
from hsapy.sim.memory import PAGE_SIZE
from hsapy.sim.objects import handle_of

__all__ = ["LoaderMixin", "LoadedKernel", "SimExecutable", "SimSymbol"]

# hsa_profile_t, hsa_default_float_rounding_mode_t values an executable may be created with
_PROFILES = (HSA_PROFILE_BASE, HSA_PROFILE_FULL)
_ROUNDING_MODES = (HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, HSA_DEFAULT_FLOAT_ROUNDING_MODE_ZERO,
                   HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR)

# Host memory backs simulated device memory: refuse absurd spans (a corrupt p_memsz) up front.
_MAX_LOAD_SIZE = 1 << 30

# ROCr reports 16 for every v3+ kernel ("the minimum HSA required alignment"), not the metadata.
_ROCR_KERNARG_ALIGNMENT = 16

# Opaque handle bases, distinct from SimLib's (agents 0x5A0..., pools 0x5A1..., ...).
_READER_HANDLE_BASE = 0x5B0_0000_1000
_EXECUTABLE_HANDLE_BASE = 0x5B1_0000_1000
_SYMBOL_HANDLE_BASE = 0x5B2_0000_1000
_LOADED_CODE_OBJECT_HANDLE_BASE = 0x5B3_0000_1000
_HANDLE_STRIDE = 0x40


@dataclass(eq=False)
class LoadedKernel:
    """The loader's record of one kernel loaded on one agent (``DispatchContext.kernel``).

    Addresses are simulated device addresses; ``load_base`` is the load delta (address of
    vaddr 0), so any vaddr of the code object maps to ``load_base + vaddr``.
    """

    name: str
    symbol_name: str
    descriptor_address: int
    descriptor: KernelDescriptor
    code_object: CodeObject
    load_base: int
    entry_address: int
    info: KernelInfo
    agent_handle: int
    executable_handle: int = 0

    @property
    def kernel_object(self) -> int:
        """The ``kernel_object`` a dispatch packet names (the descriptor's address)."""
        return self.descriptor_address


@dataclass(eq=False)
class SimSymbol:
    """An executable symbol (hsa_executable_symbol_t): a kernel descriptor or a variable."""

    handle: int
    name: str
    kind: int                    # _KIND_KERNEL or _KIND_VARIABLE
    agent_handle: int
    address: int
    size: int
    alignment: int = 1
    linkage: int = HSA_SYMBOL_LINKAGE_PROGRAM
    is_const: bool = False
    kernel: LoadedKernel | None = None


@dataclass(eq=False)
class SimLoadedCodeObject:
    """One code object loaded into an executable for an agent."""

    handle: int
    agent_handle: int
    code_object: CodeObject
    allocation: int
    load_base: int
    size: int


@dataclass(eq=False)
class SimExecutable:
    """An executable: loaded code objects, their agent symbols, frozen or not."""

    handle: int
    profile: int
    rounding_mode: int
    state: int = HSA_EXECUTABLE_STATE_UNFROZEN
    loaded: list[SimLoadedCodeObject] = field(default_factory=list)
    symbols: dict[tuple[str, int], SimSymbol] = field(default_factory=dict)


class LoaderMixin:
    """The loader half of SimLib (see the module docstring).

    Uses ``self.ffi``, ``self.memory``, ``self.agent_by_handle``, ``self.is_open``,
    ``self.kernel_objects`` and ``self._is_null`` (a NULL pointer argument) from SimLib.
    """

    # -- hooks called by SimLib -------------------------------------------------------------

    def _loader_init(self) -> None:
        self._loader_lock = threading.RLock()
        self._loader_readers: dict[int, bytes] = {}
        self._loader_executables: dict[int, SimExecutable] = {}
        self._loader_symbols: dict[int, SimSymbol] = {}
        self._next_loader_handle = {"reader": 0, "executable": 0, "symbol": 0, "loaded": 0}
        self._loader_error: str | None = None

    def _loader_reset(self) -> None:
        with self._loader_lock:
            for executable in list(self._loader_executables.values()):
                self._loader_unload(executable)
            self._loader_readers.clear()
            self._loader_executables.clear()
            self._loader_symbols.clear()

    # -- helpers ------------------------------------------------------------------------------

    def _new_loader_handle(self, kind: str) -> int:
        base = {
            "reader": _READER_HANDLE_BASE,
            "executable": _EXECUTABLE_HANDLE_BASE,
            "symbol": _SYMBOL_HANDLE_BASE,
            "loaded": _LOADED_CODE_OBJECT_HANDLE_BASE,
        }[kind]
        number = self._next_loader_handle[kind]
        self._next_loader_handle[kind] = number + 1
        return base + number * _HANDLE_STRIDE

    def _loader_fail(self, status: int, message: str) -> int:
        self._loader_error = message
        return status

    def sim_loader_error(self) -> str | None:
        """Why the last failing loader call failed (simulator only; ROCr logs it instead)."""
        return self._loader_error

    def _loader_write(self, pointer: Any, ctype: str, value: Any) -> None:
        self.ffi.cast(ctype + " *", pointer)[0] = value

    # -- code object readers ------------------------------------------------------------------

    def hsa_code_object_reader_create_from_memory(self, code_object: Any, size: int,
                                                  code_object_reader: Any) -> int:
        """Keep a copy of ``size`` bytes at ``code_object``; the reader owns no device memory."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(code_object) or self._is_null(code_object_reader):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        try:
            size = int(size)
        except (TypeError, ValueError):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if size <= 0:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if isinstance(code_object, (bytes, bytearray, memoryview)):
            data = bytes(code_object[:size])
        else:
            data = bytes(self.ffi.buffer(self.ffi.cast("const char *", code_object), size))
        with self._loader_lock:
            handle = self._new_loader_handle("reader")
            self._loader_readers[handle] = data
        code_object_reader[0].handle = handle
        return HSA_STATUS_SUCCESS

    def hsa_code_object_reader_destroy(self, code_object_reader: Any) -> int:
        """Forget a reader (code already loaded from it stays loaded)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        with self._loader_lock:
            if self._loader_readers.pop(handle_of(code_object_reader), None) is None:
                return HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER
        return HSA_STATUS_SUCCESS

    # -- executables ----------------------------------------------------------------------------

    def hsa_executable_create_alt(self, profile: int, default_float_rounding_mode: int,
                                  options: Any, executable: Any) -> int:
        """A new, empty, unfrozen executable."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._is_null(executable):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if int(profile) not in _PROFILES or int(default_float_rounding_mode) not in _ROUNDING_MODES:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        with self._loader_lock:
            handle = self._new_loader_handle("executable")
            self._loader_executables[handle] = SimExecutable(handle, int(profile),
                                                      int(default_float_rounding_mode))
        executable[0].handle = handle
        return HSA_STATUS_SUCCESS

    def hsa_executable_destroy(self, executable: Any) -> int:
        """Unload everything: free the device memory and unregister its kernels."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        with self._loader_lock:
            sim_exe = self._loader_executables.pop(handle_of(executable), None)
            if sim_exe is None:
                return HSA_STATUS_ERROR_INVALID_EXECUTABLE
            self._loader_unload(sim_exe)
        return HSA_STATUS_SUCCESS

    def _loader_unload(self, sim_exe: SimExecutable) -> None:
        for symbol in sim_exe.symbols.values():
            self._loader_symbols.pop(symbol.handle, None)
            if symbol.kernel is not None:
                self.kernel_objects.pop(symbol.kernel.descriptor_address, None)
        sim_exe.symbols.clear()
        for loaded in sim_exe.loaded:
            self.memory.free(loaded.allocation)
        sim_exe.loaded.clear()

    def hsa_executable_load_agent_code_object(self, executable: Any, agent: Any,
                                              code_object_reader: Any, options: Any,
                                              loaded_code_object: Any) -> int:
        """Load the reader's code object for ``agent`` (ROCr's ExecutableImpl::LoadCodeObject)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        with self._loader_lock:
            sim_exe = self._loader_executables.get(handle_of(executable))
            if sim_exe is None:
                return HSA_STATUS_ERROR_INVALID_EXECUTABLE
            data = self._loader_readers.get(handle_of(code_object_reader))
            if data is None:
                return HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER
            sim_agent = self.agent_by_handle(agent)
            if sim_agent is None:
                return HSA_STATUS_ERROR_INVALID_AGENT
            if sim_exe.state == HSA_EXECUTABLE_STATE_FROZEN:
                return self._loader_fail(HSA_STATUS_ERROR_FROZEN_EXECUTABLE,
                                         "the executable is frozen")
            try:
                code_object = CodeObject.from_bytes(data)
            except CodeObjectError as exc:
                return self._loader_fail(HSA_STATUS_ERROR_INVALID_CODE_OBJECT, str(exc))
            status = self._loader_check_isa(code_object.target, sim_agent)
            if status != HSA_STATUS_SUCCESS:
                return status
            status, loaded = self._loader_map(sim_exe, code_object, sim_agent)
            if status != HSA_STATUS_SUCCESS:
                return status
        if not self._is_null(loaded_code_object):
            loaded_code_object[0].handle = loaded.handle
        self._loader_error = None
        return HSA_STATUS_SUCCESS

    def _loader_check_isa(self, target: Target, sim_agent: Any) -> int:
        full_name = f"amdgcn-amd-amdhsa--{target}"
        isa_named = getattr(self, "_isa_named", None)
        # Generic targets are not agent ISAs; ROCr (6.1+) accepts them for member processors.
        if isa_named is not None and not target.is_generic and isa_named(full_name) is None:
            return self._loader_fail(HSA_STATUS_ERROR_INVALID_ISA_NAME,
                              f"the code object's ISA {full_name} is not known to the runtime")
        if sim_agent.isa is None:  # the CPU agent supports no GPU ISA
            return self._loader_fail(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
                              f"the code object is for {target} but the agent is a CPU")
        agent_target = Target.parse(sim_agent.isa.name)
        if not agent_target.accepts(target):
            return self._loader_fail(
                HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
                f"the code object is for {target} but the agent is {agent_target}",
            )
        return HSA_STATUS_SUCCESS

    def _loader_map(self, sim_exe: SimExecutable, co: CodeObject,
              sim_agent: Any) -> tuple[int, SimLoadedCodeObject | None]:
        if not co.segments:
            status = self._loader_fail(HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
                                       "the code object has no PT_LOAD segment")
            return status, None
        first = min(s.vaddr for s in co.segments)
        # Whole pages, as the GPU maps them (ROCr's loader allocates the segments from a pool
        # with page granularity): compilers read constants at the end of the image with scalar
        # loads wider than the data (s_load_dwordx8 of a 28-byte array), which stay mapped.
        size = -(-(co.load_size - first) // PAGE_SIZE) * PAGE_SIZE
        if size > _MAX_LOAD_SIZE:
            return self._loader_fail(
                HSA_STATUS_ERROR_OUT_OF_RESOURCES,
                f"the code object's segments span {size} bytes; the simulator maps at most "
                f"{_MAX_LOAD_SIZE} bytes per code object"), None
        pool = next((p for p in sim_agent.pools if p.kind == "device"), None)
        try:
            allocation = self.memory.allocate(
                size, co.load_align, pool, owner=sim_agent.handle,
                accessible={sim_agent.handle}, tag=f"code object {', '.join(co.kernels)}",
            )
        except (MemoryError, ValueError) as exc:
            status = self._loader_fail(HSA_STATUS_ERROR_OUT_OF_RESOURCES,
                                       f"cannot map {size} bytes of code: {exc}")
            return status, None
        load_base = allocation - first
        for seg in co.segments:
            if seg.filesz:
                self.memory.write(load_base + seg.vaddr,
                                  co.data[seg.offset:seg.offset + seg.filesz])
        loaded = SimLoadedCodeObject(self._new_loader_handle("loaded"), sim_agent.handle, co,
                                     allocation, load_base, size)
        status = self._loader_relocate(co, loaded, sim_exe)
        if status == HSA_STATUS_SUCCESS:
            status = self._loader_define_symbols(sim_exe, co, loaded)
        if status != HSA_STATUS_SUCCESS:
            self.memory.free(allocation)
            return status, None
        sim_exe.loaded.append(loaded)
        return HSA_STATUS_SUCCESS, loaded

    def _loader_relocate(self, co: CodeObject, loaded: SimLoadedCodeObject,
                         sim_exe: SimExecutable) -> int:
        """Apply dynamic relocations (ROCr ApplyDynamicRelocation; AMDGPUUsage relocation table)."""
        base = loaded.load_base
        for rel in co.relocations:
            if rel.type_name == "R_AMDGPU_NONE":
                continue
            if not (loaded.allocation <= base + rel.offset < loaded.allocation + loaded.size):
                return self._loader_fail(HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
                                  f"relocation at {rel.offset:#x} is outside the loaded segments")
            if rel.type_name == "R_AMDGPU_RELATIVE64":
                value = base + rel.addend
            else:
                symbol_address = 0
                if rel.symbol_name:
                    defined = co.symbols.get(rel.symbol_name)
                    if defined is not None and defined.section != 0:
                        symbol_address = base + defined.value
                    else:
                        # An external symbol must be defined by an earlier load (ROCr).
                        external = sim_exe.symbols.get((rel.symbol_name, loaded.agent_handle))
                        symbol_address = external.address if external is not None else 0
                if not symbol_address:
                    return self._loader_fail(HSA_STATUS_ERROR_VARIABLE_UNDEFINED,
                                      f"symbol {rel.symbol_name!r} is undefined")
                value = symbol_address + rel.addend
            packed = _RELOCATION_WRITERS.get(rel.type_name)
            if packed is None:
                return self._loader_fail(HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
                                  f"unsupported dynamic relocation {rel.type_name}")
            try:
                self.memory.write(base + rel.offset, packed(value))
            except Exception as exc:  # the write must stay inside the allocation
                return self._loader_fail(HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
                                         f"relocation at {rel.offset:#x}: {exc}")
        return HSA_STATUS_SUCCESS

    def _loader_define_symbols(self, sim_exe: SimExecutable, co: CodeObject,
                        loaded: SimLoadedCodeObject) -> int:
        agent = loaded.agent_handle
        new: dict[tuple[str, int], SimSymbol] = {}
        kernel_symbols = {info.symbol: info for info in co.kernels.values()}
        for name, sym in co.symbols.items():
            if sym.binding == "LOCAL" or sym.section == 0 or not name:
                continue
            if name in kernel_symbols:
                info = kernel_symbols[name]
                address = loaded.load_base + info.descriptor_vaddr
                kernel = LoadedKernel(
                    name=info.name,
                    symbol_name=name,
                    descriptor_address=address,
                    descriptor=info.descriptor,
                    code_object=co,
                    load_base=loaded.load_base,
                    entry_address=loaded.load_base + info.entry_vaddr,
                    info=info,
                    agent_handle=agent,
                    executable_handle=sim_exe.handle,
                )
                symbol = SimSymbol(0, name, HSA_SYMBOL_KIND_KERNEL, agent, address, sym.size, 64,
                                   kernel=kernel)
            elif sym.type == "OBJECT":
                section = co.sections[sym.section] if sym.section < len(co.sections) else None
                writable = bool(section is not None and section.flags & 0x1)  # SHF_WRITE
                alignment = max(1, section.align) if section is not None else 1
                symbol = SimSymbol(0, name, HSA_SYMBOL_KIND_VARIABLE, agent,
                                   loaded.load_base + sym.value, sym.size, alignment,
                                   is_const=not writable)
            else:
                continue  # functions are not executable symbols (ROCr: kernels and variables)
            if (name, agent) in sim_exe.symbols or (name, agent) in new:
                return self._loader_fail(HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED,
                                  f"symbol {name!r} is already defined for this agent")
            new[(name, agent)] = symbol
        for key, symbol in new.items():
            symbol.handle = self._new_loader_handle("symbol")
            self._loader_symbols[symbol.handle] = symbol
            sim_exe.symbols[key] = symbol
            if symbol.kernel is not None:
                self.kernel_objects[symbol.address] = symbol.kernel
        return HSA_STATUS_SUCCESS

    def hsa_executable_freeze(self, executable: Any, options: Any) -> int:
        """Freeze: no more loads. Freezing twice -> FROZEN_EXECUTABLE (ROCr)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        with self._loader_lock:
            sim_exe = self._loader_executables.get(handle_of(executable))
            if sim_exe is None:
                return HSA_STATUS_ERROR_INVALID_EXECUTABLE
            if sim_exe.state == HSA_EXECUTABLE_STATE_FROZEN:
                return HSA_STATUS_ERROR_FROZEN_EXECUTABLE
            sim_exe.state = HSA_EXECUTABLE_STATE_FROZEN
        return HSA_STATUS_SUCCESS

    def hsa_executable_get_info(self, executable: Any, attribute: int, value: Any) -> int:
        """PROFILE, STATE, DEFAULT_FLOAT_ROUNDING_MODE."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        sim_exe = self._loader_executables.get(handle_of(executable))
        if sim_exe is None:
            return HSA_STATUS_ERROR_INVALID_EXECUTABLE
        if self._is_null(value):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        values = {
            HSA_EXECUTABLE_INFO_PROFILE: sim_exe.profile,
            HSA_EXECUTABLE_INFO_STATE: sim_exe.state,
            HSA_EXECUTABLE_INFO_DEFAULT_FLOAT_ROUNDING_MODE: sim_exe.rounding_mode,
        }
        attribute = int(attribute)
        if attribute not in values:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        self._loader_write(value, "uint32_t", values[attribute])
        return HSA_STATUS_SUCCESS

    def hsa_executable_validate_alt(self, executable: Any, options: Any, result: Any) -> int:
        """Write 0 (valid): everything loaded was checked at load time."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        if self._loader_executables.get(handle_of(executable)) is None:
            return HSA_STATUS_ERROR_INVALID_EXECUTABLE
        if self._is_null(result):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        self._loader_write(result, "uint32_t", 0)
        return HSA_STATUS_SUCCESS

    # -- symbols ---------------------------------------------------------------------------

    def hsa_executable_get_symbol_by_name(self, executable: Any, symbol_name: Any, agent: Any,
                                          symbol: Any) -> int:
        """Find an agent symbol (``name.kd`` for kernels); a NULL agent finds program symbols,
        of which code objects v3+ define none."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        sim_exe = self._loader_executables.get(handle_of(executable))
        if sim_exe is None:
            return HSA_STATUS_ERROR_INVALID_EXECUTABLE
        if self._is_null(symbol_name) or self._is_null(symbol):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        if isinstance(symbol_name, (bytes, str)):
            name = symbol_name
        else:
            name = self.ffi.string(self.ffi.cast("const char *", symbol_name))
        if isinstance(name, bytes):
            name = name.decode("utf-8", errors="replace")
        if self._is_null(agent):
            return self._loader_fail(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
                                     f"no program symbol named {name!r}")
        agent_handle = self._loader_agent_pointer(agent)
        if self.agent_by_handle(agent_handle) is None:
            return HSA_STATUS_ERROR_INVALID_AGENT
        found = sim_exe.symbols.get((name, agent_handle))
        if found is None:
            return self._loader_fail(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
                                     f"no symbol named {name!r} for this agent")
        symbol[0].handle = found.handle
        return HSA_STATUS_SUCCESS

    def _loader_agent_pointer(self, agent: Any) -> int:
        # `const hsa_agent_t *`: a cdata pointer, or (Python callers) a struct / dict / int.
        try:
            typeof = self.ffi.typeof(agent)
        except TypeError:
            return handle_of(agent)
        if typeof.kind == "pointer":
            return int(agent[0].handle)
        return handle_of(agent)

    def hsa_executable_iterate_agent_symbols(self, executable: Any, agent: Any, callback: Any,
                                             data: Any) -> int:
        """Call ``callback(executable, agent, symbol, data)`` for every symbol of ``agent``."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        sim_exe = self._loader_executables.get(handle_of(executable))
        if sim_exe is None:
            return HSA_STATUS_ERROR_INVALID_EXECUTABLE
        sim_agent = self.agent_by_handle(agent)
        if sim_agent is None:
            return HSA_STATUS_ERROR_INVALID_AGENT
        if self._is_null(callback):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        handles = [s.handle for (_, a), s in list(sim_exe.symbols.items()) if a == sim_agent.handle]
        exe_struct = self.ffi.new("hsa_executable_t *", {"handle": sim_exe.handle})[0]
        agent_struct = self.ffi.new("hsa_agent_t *", {"handle": sim_agent.handle})[0]
        for handle in handles:
            sym_struct = self.ffi.new("hsa_executable_symbol_t *", {"handle": handle})[0]
            status = int(callback(exe_struct, agent_struct, sym_struct, data))
            if status != HSA_STATUS_SUCCESS:
                return status
        return HSA_STATUS_SUCCESS

    def hsa_executable_symbol_get_info(self, executable_symbol: Any, attribute: int,
                                       value: Any) -> int:
        """Symbol attributes as ROCr reports them (kernel attributes from the descriptor)."""
        if not self.is_open:
            return HSA_STATUS_ERROR_NOT_INITIALIZED
        symbol = self._loader_symbols.get(handle_of(executable_symbol))
        if symbol is None:
            return HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL
        if self._is_null(value):
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        attribute = int(attribute)
        name = symbol.name.encode()
        common: dict[int, tuple[str, Any]] = {
            HSA_EXECUTABLE_SYMBOL_INFO_TYPE: ("uint32_t", symbol.kind),
            HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH: ("uint32_t", len(name)),
            HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME_LENGTH: ("uint32_t", 0),
            HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE: ("uint32_t", symbol.linkage),
            HSA_EXECUTABLE_SYMBOL_INFO_IS_DEFINITION: ("bool", True),
        }
        if attribute == HSA_EXECUTABLE_SYMBOL_INFO_NAME:
            # Not NUL-terminated (ROCr copies NAME_LENGTH bytes).
            self.ffi.memmove(value, name, len(name))
            return HSA_STATUS_SUCCESS
        if attribute == HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME:
            return HSA_STATUS_SUCCESS
        if attribute == HSA_EXECUTABLE_SYMBOL_INFO_AGENT:
            self.ffi.cast("hsa_agent_t *", value)[0].handle = symbol.agent_handle
            return HSA_STATUS_SUCCESS
        entry = common.get(attribute)
        if entry is None:
            entry = self._loader_symbol_info(symbol, attribute)
        if entry is None:
            return HSA_STATUS_ERROR_INVALID_ARGUMENT
        ctype, result = entry
        self._loader_write(value, ctype, result)
        return HSA_STATUS_SUCCESS

    @staticmethod
    def _loader_symbol_info(symbol: SimSymbol, attribute: int) -> tuple[str, Any] | None:
        if symbol.kind == HSA_SYMBOL_KIND_KERNEL and symbol.kernel is not None:
            descriptor = symbol.kernel.descriptor
            u32 = "uint32_t"
            table = {
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT: ("uint64_t", symbol.address),
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE: (
                    u32, descriptor.kernarg_size),
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT: (
                    u32, _ROCR_KERNARG_ALIGNMENT),
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE: (
                    u32, descriptor.group_segment_fixed_size),
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE: (
                    u32, descriptor.private_segment_fixed_size),
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK: (
                    "bool", bool(descriptor.kernel_code_properties["uses_dynamic_stack"])),
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_CALL_CONVENTION: ("uint32_t", 0),
            }
            return table.get(attribute)
        if symbol.kind == HSA_SYMBOL_KIND_VARIABLE:
            table = {
                HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS: ("uint64_t", symbol.address),
                HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION: (
                    "uint32_t", HSA_VARIABLE_ALLOCATION_AGENT),
                HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SEGMENT: (
                    "uint32_t", HSA_VARIABLE_SEGMENT_GLOBAL),
                HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALIGNMENT: ("uint32_t", symbol.alignment),
                HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE: ("uint32_t", symbol.size),
                HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_IS_CONST: ("bool", symbol.is_const),
            }
            return table.get(attribute)
        return None


def _u64(value: int) -> bytes:
    return struct.pack("<Q", value & 0xFFFFFFFFFFFFFFFF)


def _u32(value: int) -> bytes:
    return struct.pack("<I", value & 0xFFFFFFFF)


def _hi32(value: int) -> bytes:
    return struct.pack("<I", (value >> 32) & 0xFFFFFFFF)


# What each dynamic relocation stores at its offset (AMDGPUUsage "Relocation Records").
_RELOCATION_WRITERS = {
    "R_AMDGPU_RELATIVE64": _u64,
    "R_AMDGPU_ABS64": _u64,
    "R_AMDGPU_ABS32": _u32,
    "R_AMDGPU_ABS32_LO": _u32,
    "R_AMDGPU_ABS32_HI": _hi32,
}
