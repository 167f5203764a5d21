"""CPython builtins compiled for the host from LLVM IR (llvmlite's MCJIT).

A hot call that costs more in Python's function-call machinery than in its own work can be a
builtin instead: a ``METH_FASTCALL`` C function receives its arguments as an array, runs no
Python frame and, unlike a cffi ABI-mode call, goes through no libffi. hsapy writes such
functions in LLVM IR (hsapy/sim/native_index.py, hsapy/_hsa/fastcall.py,
hsapy/_batch_native.py, hsapy/_publish_native.py) and this module compiles them for the host
and wraps them as builtin functions bound to a state object (``PyCFunction_NewEx``: the state
arrives as the C function's ``self``).

They call only functions of CPython's stable C API (``API``), registered with LLVM by address
before compiling, so no symbol lookup in the process is needed (hsapy._batch_native also reads
a list's and a tuple's size and items from the objects, after probing that layout).
``HSAPY_NATIVE_BUILTINS=0`` turns every one of them off (each caller then keeps its Python or
cffi function), as does a Python without the GIL: the builtins rely on holding it for their
atomicity.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import sysconfig
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["API", "METH_FASTCALL", "METH_KEYWORDS", "Callee", "Emitter", "disabled",
           "declare_api", "builtin_ir", "renamed_definition",
           "branch_on_first", "return_call", "unsigned_or", "compile_builtin",
           "cached_definition", "why_not", "new_builtin", "row_writer"]

METH_FASTCALL = 0x0080
METH_KEYWORDS = 0x0002     # with METH_FASTCALL: a fourth argument, the keywords' names
# The C API functions builtins may call (each in the stable ABI of CPython 3.11+).
API = ("PyList_GetItem", "PyList_Size", "PyList_SetItem", "PyLong_AsUnsignedLongLong",
       "PyLong_FromUnsignedLongLong", "PyErr_Occurred", "PyErr_Clear",
       "Py_IncRef", "PyObject_Vectorcall", "PyObject_Size", "Py_DecRef", "PyIter_Next",
       "PyObject_GetAttr", "PyObject_SetAttr", "PyTuple_GetItem", "PyTuple_Pack", "PyList_New",
       "PyType_GenericAlloc", "PyErr_ExceptionMatches", "PyBytes_AsString", "PyBytes_Size",
       "PyErr_Fetch", "PyErr_Restore", "PyDict_GetItem")


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_lock = threading.RLock()
# (method definition, engine, target machine) per compiled builtin: kept for the life of the
# process, as the builtins point into them
_kept: list[Any] = []
# per symbol: its method definition once compiled (cached_definition), or why it failed
_definitions: dict[str, Any] = {}
_failures: dict[str, str] = {}
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


class Callee:
    """A function pointer held in an IR value, as llvmlite's call instruction takes its callee
    (it reads the callee's function type, which a pointer value does not have)."""

    def __init__(self, value: Any, function_type: Any) -> None:
        self.value, self.type, self.function_type = value, value.type, function_type

    def get_reference(self) -> str:
        return str(self.value.get_reference())


def declare_api(module: Any) -> dict[str, Any]:
    """The C API functions of ``API`` declared in an llvmlite.ir module, by name."""
    from llvmlite import ir

    i32, i64, ptr, void = ir.IntType(32), ir.IntType(64), ir.PointerType(), ir.VoidType()
    signatures = {
        "PyList_GetItem": (ptr, ptr, i64), "PyList_Size": (i64, ptr),
        "PyList_SetItem": (i32, ptr, i64, ptr), "PyLong_AsUnsignedLongLong": (i64, ptr),
        "PyLong_FromUnsignedLongLong": (ptr, i64),
        "PyErr_Occurred": (ptr,), "PyErr_Clear": (void,), "Py_IncRef": (void, ptr),
        "PyObject_Vectorcall": (ptr, ptr, ptr, i64, ptr), "PyObject_Size": (i64, ptr),
        "Py_DecRef": (void, ptr), "PyIter_Next": (ptr, ptr), "PyObject_GetAttr": (ptr, ptr, ptr),
        "PyObject_SetAttr": (i32, ptr, ptr, ptr), "PyTuple_GetItem": (ptr, ptr, i64),
        "PyTuple_Pack": (ptr, i64), "PyList_New": (ptr, i64),
        "PyType_GenericAlloc": (ptr, ptr, i64), "PyErr_ExceptionMatches": (i32, ptr),
        "PyBytes_AsString": (ptr, ptr), "PyBytes_Size": (i64, ptr),
        "PyErr_Fetch": (void, ptr, ptr, ptr), "PyErr_Restore": (void, ptr, ptr, ptr),
        "PyDict_GetItem": (ptr, ptr, ptr)}
    variadic = {"PyTuple_Pack"}             # PyTuple_Pack(n, ...)
    return {name: ir.Function(module, ir.FunctionType(ret, args, var_arg=name in variadic),
                              name=name)
            for name, (ret, *args) in signatures.items()}


def builtin_ir(module_name: str, symbol: str, keywords: bool = False
               ) -> tuple[Any, dict[str, Any], Any]:
    """(an llvmlite.ir module named ``module_name``, the C API declared in it, its function
    ``symbol`` of the builtin's type ``PyObject *f(PyObject *self, PyObject *const *args,
    Py_ssize_t n)``, with ``keywords`` a fourth argument ``PyObject *kwnames``: the names of
    the keyword arguments, whose values follow the ``n`` positional ones in ``args``, or NULL)
    for a builtin's IR to be written into."""
    from llvmlite import ir

    ptr = ir.PointerType()
    module = ir.Module(name=module_name)
    parameters = (ptr, ptr, ir.IntType(64)) + ((ptr,) if keywords else ())
    function = ir.Function(module, ir.FunctionType(ptr, parameters), name=symbol)
    return module, declare_api(module), function


class Emitter:
    """The IR of one builtin being written (see builtin_ir), with the helpers every builtin
    here uses: ``b`` (the llvmlite IRBuilder, at the entry block first), ``fn``, ``api``,
    ``module``, the function's arguments (``state``, ``args``, ``nargs`` and, with
    ``keywords``, ``kwnames``) and the types ``i1 i8 i32 i64 ptr void``."""

    def __init__(self, module_name: str, symbol: str, keywords: bool = False) -> None:
        from llvmlite import ir

        self.ir = ir
        self.module, self.api, self.fn = builtin_ir(module_name, symbol, keywords)
        self.i1, self.i8, self.i32, self.i64 = (ir.IntType(n) for n in (1, 8, 32, 64))
        self.ptr, self.void = ir.PointerType(), ir.VoidType()
        self.null = ir.Constant(self.ptr, None)
        self.state, self.args, self.nargs = self.fn.args[:3]
        self.kwnames = self.fn.args[3] if keywords else None
        self.b = ir.IRBuilder(self.block("entry"))

    def block(self, name: str) -> Any:
        """A new basic block of the function."""
        return self.fn.append_basic_block(name)

    def const(self, value: int, kind: Any = None) -> Any:
        return self.ir.Constant(self.i64 if kind is None else kind, value)

    def call(self, name: str, *operands: Any) -> Any:
        """Call C API function ``name`` (one of API)."""
        return self.b.call(self.api[name], list(operands))

    def item(self, index: int) -> Any:
        """Item ``index`` of the state list (a borrowed reference)."""
        return self.call("PyList_GetItem", self.state, self.const(index))

    def word_at(self, pointer: Any, offset: int, kind: Any = None) -> Any:
        """The ``kind`` (default i64) at byte ``offset`` of ``pointer``."""
        b = self.b
        return b.load(b.gep(pointer, [self.const(offset)], source_etype=self.i8),
                      typ=self.i64 if kind is None else kind)

    def is_same(self, x: Any, y: Any) -> Any:
        """Whether two pointers are equal (objects compared by identity)."""
        b = self.b
        return b.icmp_unsigned("==", b.ptrtoint(x, self.i64), b.ptrtoint(y, self.i64))

    def failed(self, value: Any) -> Any:
        """Whether a C API call's result is NULL."""
        return self.is_same(value, self.null)

    def vectorcall(self, callee: Any, operands: list[Any]) -> Any:
        """``callee(*operands)`` through PyObject_Vectorcall: a new reference, or NULL."""
        b = self.b
        argv = b.alloca(self.ptr, self.const(len(operands)))
        for k, operand in enumerate(operands):
            b.store(operand, b.gep(argv, [self.const(k)], source_etype=self.ptr))
        return self.call("PyObject_Vectorcall", callee, argv, self.const(len(operands)),
                         self.null)

    def clearing(self, target: Any) -> Any:
        """A new block that clears the error set and goes to ``target`` (the builder stays
        where it is)."""
        b = self.b
        here, cleared = b.block, self.block("clear_error")
        b.position_at_end(cleared)
        self.call("PyErr_Clear")
        b.branch(target)
        b.position_at_end(here)
        return cleared

    def pointer_at(self, array: Any, index: Any) -> Any:
        """Item ``index`` of an array of pointers (an ``int`` index or an i64 value)."""
        b = self.b
        at = self.const(index) if isinstance(index, int) else index
        return b.load(b.gep(array, [at], source_etype=self.ptr), typ=self.ptr)

    def exit_if(self, condition: Any, target: Any, name: str = "go_on") -> None:
        """Branch to block ``target`` where ``condition`` (an i1) holds; the builder goes on
        in a new block otherwise."""
        go_on = self.block(name)
        self.b.cbranch(condition, target, go_on)
        self.b.position_at_end(go_on)

    def cleanup(self, name: str, *objects: Any, then: Any) -> Any:
        """A new block that drops a reference to each of ``objects`` (Py_DecRef: NULL is
        allowed) and goes to block ``then`` (the builder stays where it is)."""
        b = self.b
        here, made = b.block, self.block(name)
        b.position_at_end(made)
        for obj in objects:
            self.call("Py_DecRef", obj)
        b.branch(then)
        b.position_at_end(here)
        return made

    def call_or(self, callee: Any, operands: list[Any], otherwise: Any) -> None:
        """``callee(*operands)``, its result dropped; where it raises, to block ``otherwise``
        (the exception stays set)."""
        result = self.vectorcall(callee, operands)
        self.exit_if(self.failed(result), otherwise)
        self.call("Py_DecRef", result)

    def arm(self, value_word: Any, wait_free: Any, key: Any, otherwise: Any) -> None:
        """The kernarg-slot protocol's first step: while the signal value word at
        ``value_word`` is above 0 (its last dispatch in flight), ``wait_free(key)`` (raising:
        to block ``otherwise``); then the word set to 1 with a plain store (armed silently:
        nobody waits for 1)."""
        b = self.b
        in_flight, armed = self.block("in_flight"), self.block("armed")
        busy = b.icmp_signed(">", b.load(value_word, typ=self.i64, align=8), self.const(0))
        b.cbranch(busy, in_flight, armed)
        b.position_at_end(in_flight)
        self.call_or(wait_free, [key], otherwise)
        b.branch(armed)
        b.position_at_end(armed)
        b.store(self.const(1), value_word, align=8)

    @contextlib.contextmanager
    def counted(self, start: Any, stop: Any, name: str) -> Iterator[Any]:
        """``for k in range(start, stop)`` (i64 values or ints): the with-block writes the body
        with the builder in it and ``k`` given; it may leave the loop early through exit_if.
        The builder is left after the loop."""
        b, i64 = self.b, self.i64
        start = self.const(start) if isinstance(start, int) else start
        stop = self.const(stop) if isinstance(stop, int) else stop
        head, body, after = (self.block(f"{name}_{part}") for part in ("head", "body", "done"))
        entry = b.block
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(i64)
        k.add_incoming(start, entry)
        b.cbranch(b.icmp_signed("<", k, stop), body, after)
        b.position_at_end(body)
        yield k
        k.add_incoming(b.add(k, self.const(1)), b.block)
        b.branch(head)
        b.position_at_end(after)

    def memcpy(self) -> Any:
        """LLVM's memcpy intrinsic, declared in the module once."""
        ir = self.ir
        name = "llvm.memcpy.p0.p0.i64"
        if name in self.module.globals:
            return self.module.globals[name]
        return ir.Function(self.module, ir.FunctionType(self.void, (self.ptr, self.ptr, self.i64,
                                                                    self.i1)), name=name)

    def release_store_u32(self, value: Any, pointer: Any) -> None:
        """A 32-bit store with release ordering (a plain store on x86-64)."""
        b = self.b
        typed = b.inttoptr(b.ptrtoint(pointer, self.i64), self.ir.PointerType(self.i32))
        b.store_atomic(value, typed, "release", 4)


def branch_on_first(b: Any, args: Any, nargs: Any, count: int, known: Any, then: Any,
                    otherwise: Any) -> None:
    """Emit at ``b`` the test every bound builtin starts with: to the block ``then`` when it
    got ``count`` arguments and the first is the object ``known()`` (by identity; ``known``
    emits its IR once the count is right), else to the block ``otherwise``."""
    from llvmlite import ir

    i64 = ir.IntType(64)
    first = b.function.append_basic_block("first_argument")
    b.cbranch(b.icmp_signed("==", nargs, ir.Constant(i64, count)), first, otherwise)
    b.position_at_end(first)
    same = b.icmp_unsigned("==", b.ptrtoint(b.load(args, typ=ir.PointerType()), i64),
                           b.ptrtoint(known(), i64))
    b.cbranch(same, then, otherwise)


def return_call(b: Any, api: dict[str, Any], function: Any, args: Any, nargs: Any) -> None:
    """Emit at ``b``: return ``function(*args)``, the builtin's own arguments passed on
    (``PyObject_Vectorcall``): how a builtin hands a call to its Python way."""
    from llvmlite import ir

    b.ret(b.call(api["PyObject_Vectorcall"], [function, args, nargs,
                                              ir.Constant(ir.PointerType(), None)]))


def unsigned_or(b: Any, api: dict[str, Any], obj: Any, otherwise: Any) -> Any:
    """``PyLong_AsUnsignedLongLong(obj)`` emitted at ``b`` (an llvmlite IRBuilder); where the
    conversion fails (not an int -- it takes no ``__index__`` object --, negative or past
    2^64 - 1) the error is cleared and control goes to the block ``otherwise``, else on at the
    block the builder is left at. Returns the value."""
    from llvmlite import ir

    i64 = ir.IntType(64)
    fn = b.function
    check, failed, converted = (fn.append_basic_block(name) for name in (
        "conversion_check", "conversion_failed", "converted"))
    value = b.call(api["PyLong_AsUnsignedLongLong"], [obj])
    b.cbranch(b.icmp_unsigned("==", value, ir.Constant(i64, 0xFFFFFFFFFFFFFFFF)), check,
              converted)
    b.position_at_end(check)                 # 2^64 - 1, or the conversion failed
    error = b.ptrtoint(b.call(api["PyErr_Occurred"], []), i64)
    b.cbranch(b.icmp_unsigned("!=", error, ir.Constant(i64, 0)), failed, converted)
    b.position_at_end(failed)
    b.call(api["PyErr_Clear"], [])
    b.branch(otherwise)
    b.position_at_end(converted)
    return value


def compile_builtin(module: Any, symbol: str, name: str, doc: str, keywords: bool = False
                    ) -> Any:
    """Compile ``module`` (llvmlite.ir) for the host and return the method definition of its
    function ``symbol`` (``PyObject *f(PyObject *self, PyObject *const *args, Py_ssize_t n)``,
    with ``keywords`` also ``PyObject *kwnames``: see builtin_ir), to be shown as ``name``. Its
    own MCJIT engine: a few milliseconds."""
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
        flags = METH_FASTCALL | (METH_KEYWORDS if keywords else 0)
        definition = _MethodDef(name.encode(), address, flags, doc.encode())
        _kept.append((definition, engine, machine))
    return definition


def cached_definition(symbol: str, make_module: Any, name: str, doc: str,
                      keywords: bool = False) -> Any:
    """compile_builtin(make_module(), symbol, name, doc, keywords), once per process; None where
    builtins are disabled or compiling failed (``why_not(symbol)`` says which; a failure is not
    retried)."""
    if disabled():
        return None
    if symbol not in _definitions and symbol not in _failures:
        with _lock:
            if symbol not in _definitions and symbol not in _failures:
                try:
                    _definitions[symbol] = compile_builtin(make_module(), symbol, name, doc,
                                                           keywords)
                except Exception as exc:  # noqa: BLE001 - any failure keeps the caller's way
                    _failures[symbol] = f"{type(exc).__name__}: {exc}"
    return _definitions.get(symbol)


def why_not(symbol: str) -> str | None:
    """Why ``symbol``'s builtin is not in use in this process (None: it is compiled)."""
    if symbol in _definitions and not disabled():
        return None
    return disabled() or _failures.get(symbol) or "not built"


_renamed: dict[tuple[int, str, str], Any] = {}


def renamed_definition(definition: Any, name: str, doc: str) -> Any:
    """A method definition running ``definition``'s C function under another name and
    docstring (whose first lines may be a ``name($self, ...)`` signature for inspect), made
    once per (function, name, doc) and kept for the life of the process."""
    key = (int(definition.ml_meth), name, doc)
    with _lock:
        made = _renamed.get(key)
        if made is None:
            made = _renamed[key] = _MethodDef(name.encode(), definition.ml_meth,
                                              definition.ml_flags, doc.encode())
    return made


def new_builtin(definition: Any, state: Any) -> Any:
    """A builtin function running ``definition``'s C function with ``state`` as its self."""
    return _new_function(ctypes.addressof(definition), state, None)


_ROWS_SYMBOL = "hsapy_write_rows"


def _rows_module() -> Any:
    """``write_rows(ring, rows, count, words)``: copy ``count`` 64-byte packet rows from address
    ``rows`` to address ``ring`` (their header|setup words hold INVALID), then store the
    ``count`` uint32 header|setup words at address ``words`` into them, first to last, each a
    release store -- the AQL publishing protocol for a run of packets (body first, then the
    header) without a numpy call per step. Returns None; an argument that is not an int raises
    the conversion's error with nothing written."""
    e = Emitter("hsapy_write_rows", _ROWS_SYMBOL)
    b, i32, ptr, const = e.b, e.i32, e.ptr, e.const
    convert, wrong, error = e.block("convert"), e.block("wrong_count"), e.block("error")
    b.cbranch(b.icmp_signed("==", e.nargs, const(4)), convert, wrong)
    b.position_at_end(wrong)          # state[1] raises the TypeError that names the arguments
    return_call(b, e.api, e.item(1), e.args, e.nargs)
    b.position_at_end(convert)
    values = [e.call("PyLong_AsUnsignedLongLong", e.pointer_at(e.args, k)) for k in range(4)]
    e.exit_if(b.not_(e.failed(e.call("PyErr_Occurred"))), error, "work")
    count = values[2]
    ring, rows, words = (b.inttoptr(values[k], ptr) for k in (0, 1, 3))
    b.call(e.memcpy(), [ring, rows, b.shl(count, const(6)), const(0, e.i1)])
    with e.counted(0, count, "headers") as k:
        word = b.load(b.gep(words, [k], source_etype=i32), typ=i32)
        e.release_store_u32(word, b.gep(ring, [b.shl(k, const(6))], source_etype=e.i8))
    none = e.item(0)
    e.call("Py_IncRef", none)
    b.ret(none)
    b.position_at_end(error)          # the conversion's error is set
    b.ret(e.null)
    return e.module


def row_writer() -> Any:
    """The ``write_rows(ring, rows, count, words)`` builtin (see _rows_module), or None where
    no builtin can be made (``why_not("hsapy_write_rows")``)."""
    definition = cached_definition(
        _ROWS_SYMBOL, _rows_module, "write_rows",
        "Copy packet rows into a ring, then store their header|setup words in order "
        "(hsapy._native).")
    return None if definition is None else new_builtin(definition, [None, _write_rows_arguments])


def _write_rows_arguments(*args: Any) -> None:
    raise TypeError(f"write_rows(ring, rows, count, words) takes 4 arguments ({len(args)} given)")
