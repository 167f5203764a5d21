"""AMDGPU assembly text -> ``llvm-mc`` (or ``clang -x assembler``) -> ``ld.lld``."""
from __future__ import annotations

import tempfile
from pathlib import Path

from hsapy.errors import HsapyTypeError
from hsapy.toolchain import tools
from hsapy.toolchain.cache import cached_build, sha256
from hsapy.toolchain.route_ir import check_machine, link
from hsapy.toolchain.target import AMDGPU_TRIPLE, BuildTarget, check_code_object_version
from hsapy.toolchain.tools import ToolInfo, ToolNotFoundError, find_tool


def _assembler_for(target: BuildTarget) -> ToolInfo:
    """llvm-mc, else clang (-x assembler); one error naming both packages when neither exists."""
    try:
        return find_tool("llvm-mc")
    except ToolNotFoundError:
        pass
    try:
        return find_tool("clang")
    except ToolNotFoundError:
        raise ToolNotFoundError(
            "llvm-mc",
            "no AMDGPU assembler found (llvm-mc or clang): install the Debian package llvm-19 "
            "(llvm-mc-19) or clang-19 (no pip package provides one); searched ROCM_PATH and PATH",
        ) from None


def assemble(asm_text: str, target: str | BuildTarget = "gfx942", *, code_object_version: int = 5,
             wavefront_size: int | None = None, cache: bool = True) -> bytes:
    """AMDGPU assembly text -> loadable code object (llvm-mc or clang, then ``ld.lld``).

    A ``.amdhsa_code_object_version`` directive is added when the text has none.
    """
    if not isinstance(asm_text, str):
        raise HsapyTypeError(f"assemble takes AMDGPU assembly text (str), not "
                             f"{type(asm_text).__name__}; build a .s file with build_file(path)")
    target = BuildTarget.parse(target)
    check_code_object_version(code_object_version, target)
    features = target.llvm_features(wavefront_size)
    if ".amdhsa_code_object_version" not in asm_text:
        asm_text = f"\t.amdhsa_code_object_version {code_object_version}\n{asm_text}"
    assembler = _assembler_for(target)
    linker = find_tool("ld.lld")
    parts = {
        "source": sha256(asm_text),
        "target": str(target),
        "options": {"features": features},
        "tools": {assembler.name: assembler.version, "ld.lld": linker.version},
    }

    def produce() -> bytes:
        with tempfile.TemporaryDirectory(prefix="hsapy-asm-") as tmp:
            source = Path(tmp) / "input.s"
            source.write_text(asm_text)
            obj = Path(tmp) / "input.o"
            if assembler.name == "llvm-mc":
                args = [f"--triple={AMDGPU_TRIPLE}", f"-mcpu={target.processor}",
                        "--filetype=obj", "-o", str(obj), str(source)]
                if features:
                    args.insert(2, f"-mattr={features}")
            else:
                args = ["-x", "assembler", f"--target={AMDGPU_TRIPLE}", f"-mcpu={target}",
                        "-c", "-o", str(obj), str(source)]
                if "+wavefrontsize64" in features:
                    args.insert(3, "-mwavefrontsize64")
            tools.run_tool(assembler, args, f"assemble for {target}")
            data = obj.read_bytes()
        check_machine(data, target)
        return link([data], linker=linker, what=f"link the code object for {target}")

    return cached_build("asm", parts, produce, cache, f"assembly for {target}")
