"""ISA decoders, disassembler and interpreter for the simulator.

``decode(code, target)`` turns machine code into :class:`Instruction` objects (see
``instruction.py`` for the contract); ``disassemble`` prints them in LLVM's syntax.
"""
from __future__ import annotations

from .instruction import DecodeError, Instruction, Operand

__all__ = ["DecodeError", "Instruction", "Operand", "decode", "decode_kernel", "family_of"]


def __getattr__(name: str):
    # Lazy: the decoder loads its JSON tables on first use, not at import.
    if name in ("decode", "decode_kernel", "family_of"):
        from . import decoder

        return getattr(decoder, name)
    raise AttributeError(name)


def _register_interpreter() -> None:
    # The simulator imports this package once so that interpreters can register at import
    # (docs/internals.md, "The executor seam"); the interpreter module imports only numpy. The
    # compiled engine's package imports nothing heavy until a dispatch uses it.
    from . import jit
    from .interpreter import register, set_compiled_engine

    register()
    set_compiled_engine(jit)


_register_interpreter()
