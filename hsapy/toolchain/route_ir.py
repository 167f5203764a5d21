"""LLVM IR through llvmlite: IR text or an ``llvmlite.ir.Module`` -> llvmlite's AMDGPU target
machine (O2, code object version pinned) -> relocatable object -> ``ld.lld -shared``; without
``ld.lld`` the kernels hsapy builds itself come from hsapy.asm's ``prebuilt/``."""
from __future__ import annotations

import importlib.util
import json
import struct
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hsapy.errors import HsapyTypeError, HsapyValueError
from hsapy.toolchain import tools
from hsapy.toolchain.cache import cached_build, sha256
from hsapy.toolchain.events import emit
from hsapy.toolchain.target import (
    AMDGPU_TRIPLE,
    CODE_OBJECT_VERSIONS,
    BuildTarget,
    check_code_object_version,
    check_opt_level,
)
from hsapy.toolchain.tools import (
    BuildError,
    ToolInfo,
    ToolNotFoundError,
    find_tool,
    probe,
)


def _llvm() -> Any:
    """llvmlite.binding with the AMDGPU target registered (imported lazily: it is heavy)."""
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


def _ir_text(ir: Any) -> str:
    if isinstance(ir, bytes):
        return ir.decode()
    if isinstance(ir, str):
        return ir
    # llvmlite.ir.Module (or anything printing as IR)
    return str(ir)


def _flags_module_text(code_object_version: int, data_layout: str) -> str:
    value = CODE_OBJECT_VERSIONS[code_object_version]
    return (
        f'target datalayout = "{data_layout}"\n'
        f'target triple = "{AMDGPU_TRIPLE}"\n'
        "!llvm.module.flags = !{!0}\n"
        f'!0 = !{{i32 1, !"amdhsa_code_object_version", i32 {value}}}\n'
    )


# Run in a child process: LLVM aborts the whole process when it generates code for a processor
# it does not know (it only warns when the target machine is created).
_PROCESSOR_PROBE = """
import struct, sys
import llvmlite.binding as llvm
llvm.initialize_all_targets()
llvm.initialize_all_asmprinters()
machine = llvm.Target.from_triple("amdgcn-amd-amdhsa").create_target_machine(cpu=sys.argv[1])
obj = machine.emit_object(llvm.parse_assembly(""))
print(struct.unpack_from("<I", obj, 48)[0] & 0xFF)
"""


def _check_processor(target: BuildTarget) -> None:
    """Raise HsapyValueError unless llvmlite's LLVM knows ``target.processor``."""
    import llvmlite

    code, output = probe((sys.executable, "-c", _PROCESSOR_PROBE), llvmlite.__file__,
                          [target.processor],
                          label=f"does llvmlite's LLVM know {target.processor}? (child process)")
    machine = output.strip().splitlines()[-1] if output.strip() else ""
    if code != 0 or not machine.isdigit() or int(machine) == 0:
        raise HsapyValueError(
            f"LLVM {_llvm_version()} (llvmlite) does not know the processor "
            f"{target.processor}; check the spelling (gfx942, gfx1201, gfx1100, gfx90a ...) "
            "or upgrade llvmlite"
        )


def _prepare_module(ir_text: str, target: BuildTarget, code_object_version: int,
                    wavefront_size: int | None, opt_level: int) -> Any:
    """Parse into a fresh module, pin the code object version, run the pass pipeline.

    A fresh module every time: llvmlite 0.50 (LLVM 22) codegen mutates the module it emits, so
    one parsed module is never emitted twice.
    """
    _check_processor(target)
    check_opt_level(opt_level)
    llvm = _llvm()
    llvm_target = llvm.Target.from_triple(AMDGPU_TRIPLE)
    machine = llvm_target.create_target_machine(
        cpu=target.processor, features=target.llvm_features(wavefront_size), opt=opt_level,
        reloc="pic", codemodel="default",
    )
    try:
        module = llvm.parse_assembly(ir_text)
    except RuntimeError as exc:
        raise BuildError("LLVM could not parse the IR", str(exc)) from None
    data_layout = str(machine.target_data)
    module.triple = AMDGPU_TRIPLE
    module.data_layout = data_layout
    # Pin the version with a module flag (behaviour 1 = error on mismatch): LLVM 22 would
    # otherwise emit v6, which ROCm before 6.2 rejects (docs/hsa-abi.md, "Code objects").
    if "amdhsa_code_object_version" not in ir_text:
        flags = llvm.parse_assembly(_flags_module_text(code_object_version, data_layout))
        try:
            module.link_in(flags)
        except RuntimeError as exc:
            raise BuildError("could not set the code object version", str(exc)) from None
    try:
        module.verify()
    except RuntimeError as exc:
        raise BuildError("the LLVM IR does not verify", str(exc)) from None
    if opt_level > 0:
        # Without the pipeline every hidden argument stays in the kernarg metadata and nothing
        # is inlined (new pass manager; llvmlite >= 0.44 API).
        tuning = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        builder = llvm.create_pass_builder(machine, tuning)
        builder.getModulePassManager().run(module, builder)
    return machine, module


def emit_assembly(ir: Any, target: str | BuildTarget = "gfx942", *, code_object_version: int = 5,
                  wavefront_size: int | None = None, opt_level: int = 2) -> str:
    """LLVM IR (text or ``llvmlite.ir.Module``) -> AMDGPU assembly text through llvmlite."""
    target = BuildTarget.parse(target)
    check_code_object_version(code_object_version, target)
    text = _ir_text(ir)
    machine, module = _prepare_module(text, target, code_object_version, wavefront_size, opt_level)
    emit("llvm", f"llvmlite: emit assembly for {target} (O{opt_level}, code object "
                  f"v{code_object_version})")
    try:
        return machine.emit_assembly(module)
    except RuntimeError as exc:
        raise BuildError(f"LLVM could not generate code for {target}", str(exc)) from None


def compile_ir(ir: Any, target: str | BuildTarget = "gfx942", *, code_object_version: int = 5,
               wavefront_size: int | None = None, opt_level: int = 2) -> bytes:
    """LLVM IR -> relocatable AMDGPU object (ELF ``ET_REL``) through llvmlite."""
    target = BuildTarget.parse(target)
    check_code_object_version(code_object_version, target)
    text = _ir_text(ir)
    machine, module = _prepare_module(text, target, code_object_version, wavefront_size, opt_level)
    emit("llvm", f"llvmlite: emit object for {target} (O{opt_level}, code object "
                  f"v{code_object_version})")
    try:
        obj = machine.emit_object(module)
    except RuntimeError as exc:
        raise BuildError(f"LLVM could not generate code for {target}", str(exc)) from None
    check_machine(obj, target)
    return obj


def check_machine(elf: bytes, target: BuildTarget) -> None:
    """LLVM only warns about a processor it does not know and emits EF_AMDGPU_MACH_NONE."""
    if len(elf) < 52 or elf[:4] != b"\x7fELF":
        raise BuildError(f"the build for {target} produced no ELF object", "")
    (e_flags,) = struct.unpack_from("<I", elf, 48)
    if e_flags & 0xFF == 0:
        raise HsapyValueError(
            f"LLVM {_llvm_version()} does not know the processor {target.processor}; "
            "check the spelling (gfx942, gfx1201, gfx1100, gfx90a ...)"
        )


def _llvm_version() -> str:
    llvm = _llvm()
    return ".".join(str(part) for part in llvm.llvm_version_info)


def link(objects: Iterable[bytes], *, linker: ToolInfo | None = None,
         what: str = "link") -> bytes:
    """Link relocatable objects into a loadable code object with ``ld.lld -shared``."""
    if isinstance(objects, (str, bytes, bytearray, memoryview)) or not hasattr(objects,
                                                                               "__iter__"):
        raise HsapyTypeError(f"link() takes a list of relocatable objects (bytes), not "
                             f"{type(objects).__name__}")
    objects = list(objects)
    for obj in objects:
        if not isinstance(obj, (bytes, bytearray, memoryview)):
            raise HsapyTypeError(f"link(): an object to link is bytes, not "
                                 f"{type(obj).__name__}")
    linker = linker or find_tool("ld.lld")
    with tempfile.TemporaryDirectory(prefix="hsapy-link-") as tmp:
        inputs = []
        for index, obj in enumerate(objects):
            path = Path(tmp) / f"input{index}.o"
            path.write_bytes(obj)
            inputs.append(str(path))
        if not inputs:
            raise HsapyValueError("link() needs at least one object")
        out = Path(tmp) / "out.hsaco"
        tools.run_tool(linker, ["-shared", "--no-undefined", "-o", str(out), *inputs], what)
        return out.read_bytes()


def _llvmlite_versions() -> dict[str, str]:
    import llvmlite

    return {"llvmlite": llvmlite.__version__, "llvm": _llvm_version()}


def build_ir(ir: Any, target: str | BuildTarget = "gfx942", *, code_object_version: int = 5,
             wavefront_size: int | None = None, opt_level: int = 2,
             linker: ToolInfo | None = None, cache: bool = True) -> bytes:
    """LLVM IR (text or ``llvmlite.ir.Module``) -> loadable code object bytes (``.hsaco``).

    Compiles with llvmlite for ``target`` (wave size from the target unless ``wavefront_size``
    says otherwise; code object version pinned, v5 by default) and links with ``ld.lld``.
    The result is cached by IR, target, options and tool versions.
    """
    target = BuildTarget.parse(target)
    check_code_object_version(code_object_version, target)
    check_opt_level(opt_level)
    wave = target.check_wavefront_size(wavefront_size)
    text = _ir_text(ir)
    if linker is None:
        try:
            linker = find_tool("ld.lld")
        except ToolNotFoundError:
            shipped = prebuilt_code_object(text, target, code_object_version, wave, opt_level)
            if shipped is None:
                raise
            return shipped
    parts = {
        "source": sha256(text),
        "target": str(target),
        "options": {"cov": code_object_version, "wave": wave, "opt": opt_level},
        "tools": {**_llvmlite_versions(), "ld.lld": linker.version},
    }

    def produce() -> bytes:
        obj = compile_ir(text, target, code_object_version=code_object_version,
                         wavefront_size=wave, opt_level=opt_level)
        return link([obj], linker=linker, what=f"link the code object for {target}")

    return cached_build("ir", parts, produce, cache, f"LLVM IR for {target}")


def prebuilt_dir() -> Path | None:
    """``prebuilt/`` of hsapy.asm (asm/ in a source checkout), or None."""
    spec = importlib.util.find_spec("hsapy.asm")
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    locations.append(str(Path(__file__).resolve().parent.parent / "asm"))
    for location in locations:
        candidate = Path(location) / "prebuilt"
        if (candidate / "MANIFEST.json").is_file():
            return candidate
    return None


def prebuilt_code_object(ir: Any, target: str | BuildTarget, code_object_version: int = 5,
                         wavefront_size: int | None = None, opt_level: int = 2) -> bytes | None:
    """The code object shipped in hsapy.asm's ``prebuilt/`` for exactly this IR and these
    options, or None.

    ``asm/build.py`` links one for every kernel hsapy builds itself, so that a machine without
    ``ld.lld`` still runs them; a file is used only when the IR it was built from hashes to
    ``ir`` (and the file to its recorded SHA-256), so an edited kernel is never answered with a
    stale one. Emits a ``prebuilt`` event naming the file.
    """
    target = BuildTarget.parse(target)
    wave = target.check_wavefront_size(wavefront_size)
    directory = prebuilt_dir()
    if directory is None:
        return None
    try:
        files = json.loads((directory / "MANIFEST.json").read_text())["files"]
    except (OSError, ValueError, KeyError):
        return None
    wanted = {"ir_sha256": sha256(_ir_text(ir)), "target": str(target),
              "code_object_version": code_object_version, "wavefront_size": wave,
              "opt_level": opt_level}
    for name, entry in files.items():
        if any(entry.get(key) != value for key, value in wanted.items()):
            continue
        try:
            data = (directory / name).read_bytes()
        except OSError:
            return None
        if sha256(data) != entry.get("sha256"):
            return None
        emit("prebuilt", f"no ld.lld found: using the code object shipped prebuilt with hsapy "
                          f"({name}); install lld or pip install 'hsapy[toolchain]' to link "
                          "it here")
        return data
    return None
