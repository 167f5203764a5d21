"""The target a build is for: an AMDGPU target id (processor + xnack/sramecc) and the code
object versions the routes emit."""
from __future__ import annotations

import dataclasses
import re

from hsapy.errors import HsapyValueError

AMDGPU_TRIPLE = "amdgcn-amd-amdhsa"
# Code object version -> value of the module flag / clang's -mcode-object-version
# (LLVM AMDGPUUsage, "Code Object Metadata"; v4 = 400, v5 = 500, v6 = 600).
CODE_OBJECT_VERSIONS = {4: 400, 5: 500, 6: 600}

# gfx942, gfx1201, gfx90a ... and the generic targets (gfx9-generic, gfx9-4-generic,
# gfx10-3-generic, gfx11-generic, gfx12-generic; LLVM AMDGPUUsage, "Generic Processor Versioning").
_PROCESSOR_RE = re.compile(r"^gfx(?P<major>[0-9]{1,2})([0-9a-f]{2}|(-[0-9])?-generic)$")
_FEATURE_RE = re.compile(r"^(xnack|sramecc)[+-]$")


@dataclasses.dataclass(frozen=True)
class BuildTarget:
    """The target a build is for: a processor plus optional xnack/sramecc settings
    (``gfx90a:xnack-``), checked as a user's input, with the wave sizes and LLVM features the
    routes build with. (A code object's or an agent's target id, with settings "any", "on",
    "off", is :class:`hsapy.codeobject.Target`.)"""

    processor: str
    features: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str | BuildTarget) -> BuildTarget:
        """Parse ``gfx942``, ``gfx90a:sramecc+:xnack-`` ...; raise HsapyValueError otherwise."""
        if isinstance(text, BuildTarget):
            return text
        if not isinstance(text, str) or not text:
            raise HsapyValueError(f"target must be a string like 'gfx942', got {text!r}")
        processor, *features = text.strip().split(":")
        processor = processor.lower()
        if not _PROCESSOR_RE.match(processor):
            raise HsapyValueError(
                f"unknown target {text!r}: expected an AMDGPU processor name such as gfx942, "
                "gfx1201, gfx1100 or gfx90a (optionally followed by :xnack+/- or :sramecc+/-)"
            )
        for feature in features:
            if not _FEATURE_RE.match(feature):
                raise HsapyValueError(
                    f"bad target feature {feature!r} in {text!r}: only xnack+/xnack-/sramecc+/"
                    "sramecc- are allowed"
                )
        names = [feature[:-1] for feature in features]
        for name in set(names):
            if names.count(name) > 1:
                # a target ID sets each feature at most once (LLVM AMDGPUUsage, "Target ID");
                # xnack+ with xnack- would be built as whichever LLVM took last
                raise HsapyValueError(
                    f"target {text!r} sets {name} more than once: give {name}+ or {name}- "
                    "(or neither: the code object then runs either way)"
                )
        return cls(processor, tuple(sorted(features)))

    def __str__(self) -> str:
        return ":".join((self.processor,) + self.features)

    @property
    def major(self) -> int:
        """The generation: 9 for gfx9xx, 10/11/12 for gfx10xx/11xx/12xx (and their generics)."""
        match = _PROCESSOR_RE.match(self.processor)
        if match is None:   # only a BuildTarget made by hand, not by parse(), gets here
            raise HsapyValueError(f"unknown processor {self.processor!r}")
        return int(match.group("major"))

    @property
    def is_generic(self) -> bool:
        """A generic target (``gfx11-generic`` ...): needs code object v6."""
        return self.processor.endswith("-generic")

    @property
    def wavefront_sizes(self) -> tuple[int, ...]:
        """Wave sizes the hardware runs: gfx9 only wave64; gfx10+ wave32 and wave64."""
        return (64,) if self.major < 10 else (32, 64)

    @property
    def default_wavefront_size(self) -> int:
        """LLVM's default: 64 before gfx10, 32 from gfx10 on."""
        return self.wavefront_sizes[0]

    def check_wavefront_size(self, wavefront_size: int | None) -> int:
        """Return the wave size to build for; raise HsapyValueError for one the target lacks."""
        if wavefront_size is None:
            return self.default_wavefront_size
        if wavefront_size not in self.wavefront_sizes:
            sizes = " or ".join(str(s) for s in self.wavefront_sizes)
            raise HsapyValueError(
                f"{self.processor} does not run wave{wavefront_size}; use wavefront_size={sizes}"
            )
        return wavefront_size

    def llvm_features(self, wavefront_size: int | None = None) -> str:
        """The LLVM target-features string (``+xnack,-sramecc,+wavefrontsize64``)."""
        items = [f"{feature[-1]}{feature[:-1]}" for feature in self.features]
        if self.major >= 10:
            size = self.check_wavefront_size(wavefront_size)
            items.append(f"+wavefrontsize{size}")
        else:
            self.check_wavefront_size(wavefront_size)
        return ",".join(items)


def check_opt_level(opt_level: int) -> int:
    """An LLVM optimisation level, 0..3, else a typed error (llvmlite asserts on others)."""
    if (isinstance(opt_level, bool) or not isinstance(opt_level, int)
            or not 0 <= opt_level <= 3):
        raise HsapyValueError(f"opt_level is 0, 1, 2 or 3 (as -O0..-O3), not {opt_level!r:.40}")
    return opt_level


def check_code_object_version(code_object_version: int, target: BuildTarget | None = None) -> int:
    if (isinstance(code_object_version, bool) or not isinstance(code_object_version, int)
            or code_object_version not in CODE_OBJECT_VERSIONS):
        raise HsapyValueError(
            f"code_object_version must be 4, 5 or 6, got {code_object_version!r} "
            "(5 is what ROCm 5.x-6.x loaders expect; 6 needs ROCm 6.2 or newer)"
        )
    if target is not None and target.is_generic and code_object_version < 6:
        raise HsapyValueError(f"generic target {target} needs code_object_version=6")
    return code_object_version
