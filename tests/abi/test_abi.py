"""The cdef against the real ROCm 5.2.3 headers and library (Debian libhsa-runtime-dev,
libhsa-runtime64-1).

Everything is enumerated from the cdef itself, never from a hand-kept list: (a) a C probe
compiled against hsa.h / hsa_ext_amd.h prints sizeof/offsetof of every struct and field and the
value of every enum constant, compared with cffi's layout; (b) every function resolves in the
real libhsa-runtime64.so.1; (c) hsa_init without a GPU raises the documented exception.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hsapy._hsa import CDEF, ffi
from hsapy.errors import STATUS_NAMES

HEADERS = Path("/usr/include/hsa")
REAL_LIB = "libhsa-runtime64.so.1"
# Declarations newer than the 5.2.3 headers would be listed here with the reason they are
# skipped; the cdef is generated from 5.2.3, so there are none today.
NEWER_THAN_HEADERS: dict[str, str] = {}

needs_headers = pytest.mark.skipif(not (HEADERS / "hsa_ext_amd.h").exists(),
                                   reason="libhsa-runtime-dev (hsa.h) not installed")
needs_cc = pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None,
                              reason="no C compiler (gcc)")


def _cdef_typedefs() -> list[str]:
    typedefs, _structs, _unions = ffi.list_types()
    return sorted(typedefs)


def _struct_typedefs() -> list[str]:
    return [name for name in _cdef_typedefs() if ffi.typeof(name).kind == "struct"]


def _enum_constants() -> dict[str, int]:
    constants: dict[str, int] = {}
    for name in _cdef_typedefs():
        ctype = ffi.typeof(name)
        if ctype.kind == "enum":
            constants.update(ctype.relements)  # name -> value (aliases with equal values too)
    return constants


def _fields(struct: str) -> list[tuple[str, int]]:
    """(field path, cffi offset), flattening anonymous unions/structs the way C names them."""
    out: list[tuple[str, int]] = []

    def walk(ctype, base: int) -> None:
        for name, field in ctype.fields:
            if not name and field.type.kind in ("struct", "union"):
                walk(field.type, base + field.offset)
            else:
                out.append((name, base + field.offset))

    walk(ffi.typeof(struct), 0)
    return out


def _function_names() -> list[str]:
    """Every function the cdef declares, from a C parse of the cdef (pycparser, cffi's parser).

    The fixed-width and size types cffi predeclares get placeholder typedefs: only the
    declarations' kinds and names matter here, their types are checked by the C probe."""
    from pycparser import c_ast, c_parser

    builtins = ("int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
                "uint64_t", "size_t", "uintptr_t", "bool")
    prelude = "".join(f"typedef int {name};\n" for name in builtins)
    tree = c_parser.CParser().parse(prelude + CDEF)
    return [node.name for node in tree.ext
            if isinstance(node, c_ast.Decl) and isinstance(node.type, c_ast.FuncDecl)]


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> dict[str, int]:
    """Compile and run a C program that prints every layout fact of the cdef, as the headers say."""
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "hsa.h"',
             '#include "hsa_ext_amd.h"', "int main(void) {"]
    for struct in _struct_typedefs():
        lines.append(f'printf("sizeof {struct} %zu\\n", sizeof({struct}));')
        for field, _ in _fields(struct):
            lines.append(f'printf("offsetof {struct}.{field} %zu\\n", offsetof({struct}, {field}));')
    for name in _cdef_typedefs():
        if ffi.typeof(name).kind in ("primitive", "enum"):
            lines.append(f'printf("sizeof {name} %zu\\n", sizeof({name}));')
    for constant in _enum_constants():
        lines.append(f'printf("enum {constant} %lld\\n", (long long){constant});')
    # hsa_ext_amd.h's statuses live in an anonymous enum (not in the cdef); errors.py names them
    for constant in STATUS_NAMES.values():
        lines.append(f'printf("status {constant} %lld\\n", (long long){constant});')
    lines.append("return 0; }")
    work = tmp_path_factory.mktemp("abi")
    source, binary = work / "probe.c", work / "probe"
    source.write_text("\n".join(lines))
    compiler = shutil.which("gcc") or shutil.which("cc")
    subprocess.run([compiler, "-std=c11", f"-I{HEADERS}", str(source), "-o", str(binary)],
                   check=True, capture_output=True, text=True)
    output = subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout
    facts = {}
    for line in output.splitlines():
        kind, key, value = line.split()
        facts[f"{kind} {key}"] = int(value)
    return facts


@needs_headers
@needs_cc
@pytest.mark.parametrize("struct", _struct_typedefs())
def test_struct_size_and_field_offsets_match_the_header(probe, struct):
    if struct in NEWER_THAN_HEADERS:
        pytest.skip(NEWER_THAN_HEADERS[struct])
    assert probe[f"sizeof {struct}"] == ffi.sizeof(struct)
    for field, offset in _fields(struct):
        assert probe[f"offsetof {struct}.{field}"] == offset, f"{struct}.{field}"


@needs_headers
@needs_cc
def test_every_enum_constant_matches_the_header(probe):
    constants = _enum_constants()
    assert len(constants) > 250  # the cdef carries the info enums, statuses, packet types, ...
    # Enumerators are 32-bit: `1U << 31` (HSA_AMD_MEMORY_FAULT_HANG) prints as a negative int
    # in C and as 2**31 in cffi; the bit pattern is what crosses the ABI, so compare mod 2**32.
    wrong = {name: (value, probe[f"enum {name}"]) for name, value in constants.items()
             if (probe[f"enum {name}"] - value) % 2**32}
    assert not wrong


@needs_headers
@needs_cc
def test_every_status_errors_py_names_has_the_header_value(probe):
    wrong = {name: (value, probe[f"status {name}"]) for value, name in STATUS_NAMES.items()
             if probe[f"status {name}"] != value}
    assert not wrong


@needs_headers
@needs_cc
def test_scalar_and_enum_typedef_sizes_match(probe):
    for name in _cdef_typedefs():
        if ffi.typeof(name).kind in ("primitive", "enum"):
            assert probe[f"sizeof {name}"] == ffi.sizeof(name), name


def _real_lib():
    try:
        return ffi.dlopen(REAL_LIB)
    except OSError:
        pytest.skip("libhsa-runtime64-1 not installed")


@pytest.mark.parametrize("function", _function_names())
def test_function_resolves_in_the_real_library(function):
    if function in NEWER_THAN_HEADERS:
        pytest.skip(NEWER_THAN_HEADERS[function])
    lib = _real_lib()
    assert getattr(lib, function) is not None


def test_the_parse_finds_every_function_declaration():
    # a declaration the parse missed would escape test_function_resolves_in_the_real_library
    names = _function_names()
    assert len(names) == len(set(names)) > 70
    for line in CDEF.splitlines():
        if "(" in line and not line.startswith("typedef"):
            assert any(f" {name}(" in line or f"*{name}(" in line for name in names), line


def test_the_cdef_declares_the_functions_hsapy_needs():
    names = set(_function_names())
    for needed in ("hsa_init", "hsa_queue_create", "hsa_signal_wait_scacquire",
                   "hsa_queue_add_write_index_scacq_screl", "hsa_amd_memory_async_copy",
                   "hsa_executable_load_agent_code_object", "hsa_amd_profiling_get_dispatch_time"):
        assert needed in names


def test_real_hsa_init_without_a_gpu_raises_out_of_resources():
    from hsapy._hsa import check
    from hsapy.errors import OutOfResourcesError

    if Path("/dev/kfd").exists():
        pytest.skip("/dev/kfd exists: this machine may have an AMD GPU")
    lib = _real_lib()
    with pytest.raises(OutOfResourcesError, match="HSA_STATUS_ERROR_OUT_OF_RESOURCES"):
        check(lib.hsa_init(), "hsa_init", lib)


@needs_headers
@pytest.mark.skipif(shutil.which("clang-19") is None and shutil.which("clang") is None,
                    reason="tools/gen_cdef.py needs clang-19 (or clang) to preprocess the headers")
def test_the_committed_cdef_is_what_the_generator_makes_from_the_headers():
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, str(root / "tools" / "gen_cdef.py"),
                             "--include", str(HEADERS)],
                            capture_output=True, text=True, check=True, timeout=120)
    committed = (root / "hsapy" / "_hsa" / "_cdef.py").read_text()
    assert result.stdout == committed, "regenerate: python tools/gen_cdef.py > hsapy/_hsa/_cdef.py"


@needs_headers
@pytest.mark.skipif(shutil.which("clang-19") is None and shutil.which("clang") is None,
                    reason="tools/gen_cdef.py needs clang-19 (or clang) to preprocess the headers")
def test_the_committed_enums_are_what_the_generator_makes_from_the_headers():
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, str(root / "tools" / "gen_cdef.py"),
                             "--include", str(HEADERS), "--enums"],
                            capture_output=True, text=True, check=True, timeout=120)
    committed = (root / "hsapy" / "hsa_enums.py").read_text()
    assert result.stdout == committed, \
        "regenerate: python tools/gen_cdef.py --enums > hsapy/hsa_enums.py"


@needs_headers
@needs_cc
def test_every_function_prototype_matches_the_header(tmp_path):
    """Each cdef prototype, turned into a function-pointer type, must accept the header's function:
    any difference in return or parameter types is an incompatible-pointer error in C."""
    lines = ['#include "hsa.h"', '#include "hsa_ext_amd.h"']
    names = _function_names()
    declarations = [line for line in CDEF.strip().splitlines()
                    if "(" in line and not line.startswith("typedef")]
    for name in names:
        (line,) = [d for d in declarations if f" {name}(" in d or f"*{name}(" in d]
        pointer = line.replace(f"{name}(", f"(*probe_{name})(", 1).rstrip(";")
        lines.append(f"{pointer} = {name};")
    source = tmp_path / "prototypes.c"
    source.write_text("\n".join(lines) + "\n")
    compiler = shutil.which("gcc") or shutil.which("cc")
    result = subprocess.run([compiler, "-std=c11", "-fsyntax-only", "-Werror", f"-I{HEADERS}",
                             str(source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]


@needs_headers
@needs_cc
def test_the_amd_layouts_hsapy_reads_directly_match_the_headers(tmp_path):
    # The dispatch path reads two AMD structs without a runtime call: the aperture words of
    # amd_queue_t (Queue.apertures) and the value word of amd_signal_t (signal.value_words).
    from hsapy.queue import AMD_QUEUE_APERTURES_OFFSET

    source = tmp_path / "amd.c"
    source.write_text("\n".join([
        "#include <stdio.h>", "#include <stddef.h>", '#include "hsa.h"',
        '#include "amd_hsa_queue.h"', '#include "amd_hsa_signal.h"', "int main(void) {",
        'printf("%zu %zu\\n", offsetof(amd_queue_t, group_segment_aperture_base_hi),'
        " offsetof(amd_queue_t, private_segment_aperture_base_hi));",
        'printf("%zu %zu %d\\n", offsetof(amd_signal_t, kind), offsetof(amd_signal_t, value),'
        " (int)AMD_SIGNAL_KIND_USER);",
        "return 0; }"]))
    binary = tmp_path / "amd"
    compiler = shutil.which("gcc") or shutil.which("cc")
    subprocess.run([compiler, "-std=c11", f"-I{HEADERS}", str(source), "-o", str(binary)],
                   check=True, capture_output=True, text=True)
    queue_line, signal_line = subprocess.run([str(binary)], check=True, capture_output=True,
                                             text=True).stdout.splitlines()
    assert [int(v) for v in queue_line.split()] == [AMD_QUEUE_APERTURES_OFFSET,
                                                   AMD_QUEUE_APERTURES_OFFSET + 4]
    assert [int(v) for v in signal_line.split()] == [0, 8, 1]   # kind, value, KIND_USER
