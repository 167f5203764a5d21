"""CPython builtins compiled for the host from LLVM IR (llvmlite's MCJIT).

A hot call that costs more in Python's function-call machinery than in its own work can be a
builtin instead: a ``METH_FASTCALL`` C function receives its arguments as an array, runs no
Python frame and, unlike a cffi ABI-mode call, goes through no libffi. hsapy writes such
functions in LLVM IR (hsapy/sim/native_index.py, hsapy/_hsa/fastcall.py) and this module
compiles them for the host and wraps them as builtin functions bound to a state object
(``PyCFunction_NewEx``: the state arrives as the C function's ``self``).

They call only functions of CPython's stable C API (``API``), registered with LLVM by address
before compiling, so no symbol lookup in the process is needed. ``HSAPY_NATIVE_BUILTINS=0``
turns every one of them off (each caller then keeps its Python or cffi function), as does a
Python without the GIL: the builtins rely on holding it for their atomicity.
"""
from __future__ import annotations

import ctypes
import os
import sysconfig
import threading
from typing import Any

__all__ = ["API", "METH_FASTCALL", "disabled", "compile_builtin", "new_builtin"]

METH_FASTCALL = 0x0080
# The C API functions builtins may call (each in the stable ABI of CPython 3.11+).
API = ("PyList_GetItem", "PyList_Size", "PyList_SetItem", "PyLong_AsUnsignedLongLong",
       "PyLong_FromUnsignedLongLong", "PyErr_Occurred", "PyErr_Clear",
       "Py_IncRef", "PyObject_Vectorcall")


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_lock = threading.Lock()
# (method definition, engine, target machine) per compiled builtin: kept for the life of the
# process, as the builtins point into them
_kept: list[Any] = []
# PyCFunction_NewEx(method definition, self, module), with a prototype of its own (the
# attributes of ctypes.pythonapi's functions are left as other code may have set them)
_new_function = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object,
                                  ctypes.py_object)(("PyCFunction_NewEx", ctypes.pythonapi))


def disabled() -> str | None:
    """Why no builtin may be compiled in this process (None: they may)."""
    if os.environ.get("HSAPY_NATIVE_BUILTINS", "1") == "0":
        return "HSAPY_NATIVE_BUILTINS=0"
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return "a Python without the GIL"
    return None


def declare_api(module: Any) -> dict[str, Any]:
    """The C API functions of ``API`` declared in an llvmlite.ir module, by name."""
    from llvmlite import ir

    i32, i64, ptr, void = ir.IntType(32), ir.IntType(64), ir.PointerType(), ir.VoidType()
    signatures = {
        "PyList_GetItem": (ptr, ptr, i64), "PyList_Size": (i64, ptr),
        "PyList_SetItem": (i32, ptr, i64, ptr), "PyLong_AsUnsignedLongLong": (i64, ptr),
        "PyLong_FromUnsignedLongLong": (ptr, i64),
        "PyErr_Occurred": (ptr,), "PyErr_Clear": (void,), "Py_IncRef": (void, ptr),
        "PyObject_Vectorcall": (ptr, ptr, ptr, i64, ptr)}
    return {name: ir.Function(module, ir.FunctionType(ret, args), name=name)
            for name, (ret, *args) in signatures.items()}


def compile_builtin(module: Any, symbol: str, name: str, doc: str) -> Any:
    """Compile ``module`` (llvmlite.ir) for the host and return the method definition of its
    function ``symbol`` (``PyObject *f(PyObject *self, PyObject *const *args, Py_ssize_t n)``),
    to be shown as ``name``. Its own MCJIT engine: a few milliseconds."""
    import llvmlite.binding as llvm

    api = ctypes.pythonapi
    with _lock:
        for function in API:
            llvm.add_symbol(function, ctypes.cast(getattr(api, function), ctypes.c_void_p).value)
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        machine = llvm.Target.from_default_triple().create_target_machine(opt=2, jit=True)
        module.triple = llvm.get_process_triple()
        module.data_layout = str(machine.target_data)
        parsed = llvm.parse_assembly(str(module))
        parsed.verify()
        engine = llvm.create_mcjit_compiler(parsed, machine)
        engine.finalize_object()
        address = engine.get_function_address(symbol)
        if not address:
            raise RuntimeError(f"MCJIT gave no address for {symbol}")
        definition = _MethodDef(name.encode(), address, METH_FASTCALL, doc.encode())
        _kept.append((definition, engine, machine))
    return definition


def new_builtin(definition: Any, state: Any) -> Any:
    """A builtin function running ``definition``'s C function with ``state`` as its self."""
    return _new_function(ctypes.addressof(definition), state, None)
