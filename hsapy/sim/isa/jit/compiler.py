"""Turn generated LLVM modules into host functions (llvmlite's MCJIT), with an on-disk cache.

One process-wide :class:`Compiler` holds the host target machine (the host CPU and its
features: generated code uses AVX-512 where the machine has it). ``compile(module)`` optimises
the module (LLVM's O2 pipeline), emits machine code and returns the address of its ``run``
function. Compiled objects are cached on disk under ``<hsapy cache>/jit/`` keyed by the module
text, the CPU, its features, the LLVM version and :data:`~hsapy.sim.isa.jit.codegen.ENGINE_VERSION`,
so a kernel compiles once per machine; each file ends with the object's SHA-256, and one that
does not match (cut short, changed on disk) is compiled again and rewritten rather than loaded.

A second, earlier cache skips the whole pipeline (tracing the interpreter's closures, building
the IR, parsing and verifying it), which costs far more than loading an object:
:meth:`Compiler.unit_key` hashes what a unit's code is made from before any of it is built --
the machine words and addresses of the unit's instructions, the program's target and
:class:`~hsapy.sim.isa.interpreter.ProgramInfo`, the source of the simulator package (the
interpreter's semantics are what is traced, so any edit to them or to the engine changes every
key), the llvmlite/LLVM/numpy/Python versions, the host CPU and its features.
:meth:`Compiler.load_unit` / :meth:`Compiler.store_unit` keep, under that key, the object and
the unit's plan skeleton (which entries form which segment, which ones are left to the
interpreter and why) in one file (``<hsapy cache>/jit/units/``).
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["Compiler", "compiler", "RUN_TYPE", "CompileStats"]

# ``int64 run(int64 *ctx)``: ctypes releases the GIL around the call
RUN_TYPE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)

# the unit cache's file layout: magic, 8-byte little-endian length of the JSON plan skeleton,
# the skeleton, the object file
UNIT_FORMAT = 2
UNIT_MAGIC = b"hsapy-jit-unit/2\n"
# an object cached by module text ends with this mark and the SHA-256 of the bytes before it:
# MCJIT aborts the process on a malformed object ("LLVM ERROR: section header table goes past
# the end of the file"), so a file cut short by a crash or a full disk, or changed on disk, must
# never reach it -- it is compiled again and rewritten instead
OBJECT_SEAL = b"hsapy-jit-object-sha256"


def sealed(obj: bytes) -> bytes:
    """``obj`` as the module-text cache stores it: the object, OBJECT_SEAL, its SHA-256."""
    return obj + OBJECT_SEAL + hashlib.sha256(obj).digest()


def unsealed(data: bytes) -> bytes | None:
    """The object a cache file holds, or None when the file is not ``sealed(object)``."""
    end = len(data) - 32 - len(OBJECT_SEAL)
    if end <= 0 or data[end:end + len(OBJECT_SEAL)] != OBJECT_SEAL:
        return None
    obj = data[:end]
    return obj if hashlib.sha256(obj).digest() == data[-32:] else None


class CompileStats:
    """Seconds spent compiling (benchmarks report them) and cache hits."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.units = 0
        self.cache_hits = 0          # objects loaded from disk instead of compiled
        self.cache_bad = 0           # cached objects refused (cut short or changed): recompiled
        self.trace_seconds = 0.0     # planning (tracing) and IR generation of units
        self.ir_generated = 0        # units whose IR was generated
        self.unit_hits = 0           # units found by their early key (no tracing, no IR)


class Compiler:
    """The host target machine and the MCJIT engines of every compiled unit."""

    def __init__(self) -> None:
        import llvmlite.binding as llvm

        self.llvm = llvm
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        target = llvm.Target.from_default_triple()
        self.triple = llvm.get_process_triple()
        self.machine = target.create_target_machine(cpu=self.cpu, features=self.features,
                                                    opt=2, jit=True)
        self.lock = threading.Lock()
        self.engines: list[Any] = []
        self.stats = CompileStats()
        self.version = ".".join(str(v) for v in llvm.llvm_version_info)
        self._source_hash: str | None = None

    def _optimise(self, module: Any) -> None:
        """A short pipeline: registers out of stack slots (SROA), then instruction combining
        and CFG clean-up; the generated code has no loops worth LLVM's loop passes and the full
        O2 pipeline costs several times as long."""
        llvm = self.llvm
        level = os.environ.get("HSAPY_SIM_JIT_OPT", "")
        options = llvm.create_pipeline_tuning_options(speed_level=2 if level == "2" else 1)
        builder = llvm.create_pass_builder(self.machine, options)
        if level == "2":
            builder.getModulePassManager().run(module, builder)
            return
        passes = llvm.create_new_module_pass_manager()
        passes.add_sroa_pass()
        passes.add_instruction_combine_pass()
        passes.add_simplify_cfg_pass()
        passes.add_dead_code_elimination_pass()
        passes.run(module, builder)

    def cache_key(self, text: str) -> str:
        from hsapy.sim.isa.jit.codegen import ENGINE_VERSION

        h = hashlib.sha256()
        for part in (str(ENGINE_VERSION), self.version, self.triple, self.cpu, self.features,
                     text):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    def _cache_path(self, key: str) -> Path | None:
        if os.environ.get("HSAPY_SIM_JIT_CACHE", "1") == "0":
            return None
        try:
            from hsapy.toolchain import cache_dir

            return cache_dir() / "jit" / key[:2] / f"{key}.o"
        except Exception:  # noqa: BLE001 - no cache directory: compile every time
            return None

    def compile(self, module: Any, name: str = "run") -> tuple[int, Any]:
        """Compile an llvmlite.ir module; returns (address of ``name``, keep-alive handle)."""
        address, engine, _ = self.compile_object(module, name)
        return address, engine

    def compile_object(self, module: Any, name: str = "run") -> tuple[int, Any, bytes | None]:
        """:meth:`compile`, also returning the object file (None if MCJIT gave none)."""
        llvm = self.llvm
        start = time.perf_counter()
        module.triple = self.triple
        module.data_layout = str(self.machine.target_data)
        text = str(module)
        key = self.cache_key(text)
        path = self._cache_path(key)
        cached = None
        if path is not None and path.exists():
            try:
                cached = unsealed(path.read_bytes())
            except OSError:
                cached = None
            else:
                if cached is None:
                    self.stats.cache_bad += 1      # compiled again below, and rewritten
        with self.lock:
            parsed = llvm.parse_assembly(text)
            parsed.verify()
            if cached is None:
                self._optimise(parsed)
            engine = llvm.create_mcjit_compiler(parsed, self.machine)
            produced: list[bytes] = []

            def notify(mod: Any, data: bytes) -> None:
                produced.append(bytes(data))

            def getbuffer(mod: Any) -> bytes | None:
                return cached

            engine.set_object_cache(notify, getbuffer)
            engine.finalize_object()
            address = engine.get_function_address(name)
            self.engines.append(engine)
            self.stats.units += 1
            if cached is not None:
                self.stats.cache_hits += 1
            self.stats.seconds += time.perf_counter() - start
        if cached is None and produced and path is not None:
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp.write_bytes(sealed(produced[0]))
                os.replace(tmp, path)
            except OSError:                        # (a full disk: compiled every time)
                try:
                    tmp.unlink(missing_ok=True)
                except OSError:
                    pass
        obj = cached if cached is not None else (produced[0] if produced else None)
        return address, engine, obj

    # --- the early (unit) cache ------------------------------------------------------------------
    def source_hash(self) -> str:
        """Hash of the simulator package's source files (``hsapy/sim``: the interpreter's
        semantics, which the engine traces, the decoder's tables and the engine itself): any
        edit makes every unit key new, so a changed engine never loads an object built by
        another one. Computed once per process."""
        if self._source_hash is None:
            root = Path(__file__).resolve().parents[3]      # hsapy/sim
            h = hashlib.sha256()
            files = sorted(p for p in root.rglob("*") if p.suffix in (".py", ".json")
                           and "__pycache__" not in p.parts)
            for path in files:
                h.update(str(path.relative_to(root)).encode())
                h.update(b"\0")
                h.update(path.read_bytes())
                h.update(b"\0")
            self._source_hash = h.hexdigest()
        return self._source_hash

    def unit_key(self, program: Any, first: int, count: int, base: int) -> str:
        """The early cache key of program entries [first, first + count), their addresses
        taken relative to ``base`` (module docstring)."""
        import llvmlite
        import numpy

        from hsapy.sim.isa.jit.codegen import ENGINE_VERSION

        info = program.info
        mode = getattr(info.mode, "value", info.mode)
        h = hashlib.sha256()
        head = ("unit", UNIT_FORMAT, ENGINE_VERSION, self.source_hash(), self.version,
                llvmlite.__version__, numpy.__version__, sys.version_info[:2], self.triple,
                self.cpu, self.features, os.environ.get("HSAPY_SIM_JIT_OPT", ""),
                program.target, info.family, info.wave_size, info.ftz32, info.ftz64, mode,
                base & 0xFFF)
        h.update(repr(head).encode())
        for i in range(first, first + count):
            inst = program.insts[i]
            words = None if inst is None else (inst.offset - base, inst.size, tuple(inst.words))
            h.update(repr((program.offsets[i] - base, words)).encode())
            h.update(b"\n")
        return h.hexdigest()

    def _unit_path(self, key: str) -> Path | None:
        path = self._cache_path(key)
        return None if path is None else path.parent.parent / "units" / key[:2] / f"{key}.unit"

    def load_unit(self, key: str) -> tuple[dict, bytes] | None:
        """(plan skeleton, object bytes) stored under ``key``, or None (absent, unreadable,
        another format or another key: then the unit is built as if never cached)."""
        path = self._unit_path(key)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        try:
            magic = UNIT_MAGIC
            if not data.startswith(magic):
                return None
            (size,) = struct.unpack_from("<Q", data, len(magic))
            start = len(magic) + 8
            meta = json.loads(data[start:start + size].decode())
            obj = data[start + size:]
            # LLVM aborts the process on a malformed object: only an intact one is loaded
            if meta.get("key") != key or meta.get("object") != hashlib.sha256(obj).hexdigest():
                return None
            return meta, obj
        except (ValueError, struct.error, UnicodeDecodeError):
            return None

    def store_unit(self, key: str, meta: dict, obj: bytes) -> None:
        """Keep a unit's plan skeleton and object under ``key`` (written to a temporary file
        and renamed, so a reader never sees half a file)."""
        path = self._unit_path(key)
        if path is None:
            return
        text = json.dumps(dict(meta, key=key, object=hashlib.sha256(obj).hexdigest())).encode()
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(UNIT_MAGIC + struct.pack("<Q", len(text)) + text + obj)
            os.replace(tmp, path)
        except OSError:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass

    def load_object(self, obj: bytes, name: str = "run") -> tuple[int, Any]:
        """Load a compiled object (no module to parse, verify or optimise); returns (address
        of ``name``, keep-alive handle)."""
        llvm = self.llvm
        start = time.perf_counter()
        with self.lock:
            empty = llvm.parse_assembly("")
            empty.triple = self.triple
            empty.data_layout = str(self.machine.target_data)
            engine = llvm.create_mcjit_compiler(empty, self.machine)
            # MCJIT asks its object cache for the module's object before generating code:
            # answering with the stored one loads it (llvmlite's add_object_file hands LLVM a
            # buffer that Python frees)
            engine.set_object_cache(None, lambda mod: obj)
            engine.finalize_object()
            address = engine.get_function_address(name)
            if not address:
                raise LookupError(f"compiled object has no function {name!r}")
            self.engines.append(engine)
            self.stats.units += 1
            self.stats.cache_hits += 1
            self.stats.seconds += time.perf_counter() - start
        return address, engine


_COMPILER: Compiler | None = None
_COMPILER_LOCK = threading.Lock()


def compiler() -> Compiler:
    """The process-wide compiler (created on first use)."""
    global _COMPILER
    if _COMPILER is None:
        with _COMPILER_LOCK:
            if _COMPILER is None:
                _COMPILER = Compiler()
    return _COMPILER
