"""C functions for tests, written in LLVM IR and compiled for the host with llvmlite's MCJIT."""
from __future__ import annotations

from typing import Any

_engines: list[Any] = []      # the compiled code lives as long as its engine: for the process


def compile_for_host(module: Any, name: str) -> int:
    """The address of function ``name`` of ``module`` (an llvmlite.ir module) compiled for the
    host."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machine = llvm.Target.from_default_triple().create_target_machine(jit=True)
    module.triple = llvm.get_process_triple()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), machine)
    engine.finalize_object()
    _engines.append(engine)
    return engine.get_function_address(name)
