"""Turn generated LLVM modules into host functions (llvmlite's MCJIT), with an on-disk cache.

One process-wide :class:`Compiler` holds the host target machine (the host CPU and its
features: generated code uses AVX-512 where the machine has it). ``compile(module)`` optimises
the module (LLVM's O2 pipeline), emits machine code and returns the address of its ``run``
function. Compiled objects are cached on disk under ``<hsapy cache>/jit/`` keyed by the module
text, the CPU, its features, the LLVM version and :data:`~hsapy.sim.isa.jit.codegen.ENGINE_VERSION`,
so a kernel compiles once per machine.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["Compiler", "compiler", "RUN_TYPE", "CompileStats"]

# ``int64 run(int64 *ctx)``: ctypes releases the GIL around the call
RUN_TYPE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)


class CompileStats:
    """Seconds spent compiling (benchmarks report them) and cache hits."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.units = 0
        self.cache_hits = 0
        self.trace_seconds = 0.0


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
                cached = path.read_bytes()
            except OSError:
                cached = None
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
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
                tmp.write_bytes(produced[0])
                os.replace(tmp, path)
            except OSError:
                pass
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
