"""AMDGPU targets: processor names from e_flags (EF_AMDGPU_MACH_*), generic targets, the
xnack/sramecc feature settings, and :class:`Target` (LLVM AMDGPUUsage, "Processors" and
"Target ID")."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from hsapy.codeobject.elf import CodeObjectError
from hsapy.errors import HsapyValueError


class TargetMismatchError(CodeObjectError):
    """The code object was built for another target than the agent's (both are named)."""

    def __init__(self, code_object_target: str, agent_target: str, detail: str = "") -> None:
        self.code_object_target = code_object_target
        self.agent_target = agent_target
        message = (
            f"the code object is for {code_object_target} but the agent is {agent_target}"
            f"{detail}; rebuild it for the agent (e.g. --offload-arch={agent_target})"
        )
        super().__init__(message)

# ---------------------------------------------------------------------------------------------
# Tables (data). EF_AMDGPU_MACH_* from LLVM's ELF.h, each checked with
# `llvm-mc-19 -triple=amdgcn-amd-amdhsa -mcpu=<gfx> -filetype=obj` + `llvm-readelf-19 -h`;
# gfx950, gfx1153 and gfx9-4-generic from LLVM 20+'s ELF.h (LLVM 19 does not know them).

MACHINES: dict[int, str] = {
    0x020: "gfx600", 0x021: "gfx601", 0x022: "gfx700", 0x023: "gfx701", 0x024: "gfx702",
    0x025: "gfx703", 0x026: "gfx704", 0x028: "gfx801", 0x029: "gfx802", 0x02A: "gfx803",
    0x02B: "gfx810", 0x02C: "gfx900", 0x02D: "gfx902", 0x02E: "gfx904", 0x02F: "gfx906",
    0x030: "gfx908", 0x031: "gfx909", 0x032: "gfx90c", 0x033: "gfx1010", 0x034: "gfx1011",
    0x035: "gfx1012", 0x036: "gfx1030", 0x037: "gfx1031", 0x038: "gfx1032", 0x039: "gfx1033",
    0x03A: "gfx602", 0x03B: "gfx705", 0x03C: "gfx805", 0x03D: "gfx1035", 0x03E: "gfx1034",
    0x03F: "gfx90a", 0x040: "gfx940", 0x041: "gfx1100", 0x042: "gfx1013", 0x043: "gfx1150",
    0x044: "gfx1103", 0x045: "gfx1036", 0x046: "gfx1101", 0x047: "gfx1102", 0x048: "gfx1200",
    0x04A: "gfx1151", 0x04B: "gfx941", 0x04C: "gfx942", 0x04E: "gfx1201", 0x04F: "gfx950",
    0x051: "gfx9-generic", 0x052: "gfx10-1-generic", 0x053: "gfx10-3-generic",
    0x054: "gfx11-generic", 0x055: "gfx1152", 0x058: "gfx1153", 0x059: "gfx12-generic",
    0x05F: "gfx9-4-generic",
}
MACHINE_BY_NAME: dict[str, int] = {name: mach for mach, name in MACHINES.items()}

# Generic targets (code object v6) and the processors that run them (LLVM AMDGPUUsage,
# "Generic Processors"). e_flags bits 31:24 hold the generic version.
GENERIC_TARGETS: dict[str, tuple[str, ...]] = {
    "gfx9-generic": ("gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"),
    "gfx9-4-generic": ("gfx940", "gfx941", "gfx942", "gfx950"),
    "gfx10-1-generic": ("gfx1010", "gfx1011", "gfx1012", "gfx1013"),
    "gfx10-3-generic": ("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035",
                        "gfx1036"),
    "gfx11-generic": ("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151",
                      "gfx1152", "gfx1153"),
    "gfx12-generic": ("gfx1200", "gfx1201"),
}

# e_flags bits 9:8 (xnack) and 11:10 (sramecc) for code object v4+ (EF_AMDGPU_FEATURE_*_V4).
FEATURE_SETTINGS: dict[int, str] = {0: "unsupported", 1: "any", 2: "off", 3: "on"}

# ---------------------------------------------------------------------------------------------
# Targets


@functools.cache   # called on every launch's validation
def max_scratch_per_wave(processor: str) -> int | None:
    """Bytes of private (scratch) memory one wave may use on ``processor`` (``"gfx942"``): the
    range of the COMPUTE_TMPRING_SIZE.WAVESIZE field a queue's scratch is programmed through,
    as LLVM's GCNSubtarget::getMaxWaveScratchSize gives it -- (2^13 - 1) x 1 KiB up to gfx10
    (ROCr's MAX_WAVE_SCRATCH, 8,387,584), (2^15 - 1) x 256 B on gfx11, (2^18 - 1) x 256 B from
    gfx12 (quoted in ROCm/clr pull request #80). None for a name that is not ``gfx`` + digits."""
    digits = processor[3:] if processor.startswith("gfx") else ""
    if not digits[:1].isdigit():
        return None
    major = int(digits[:2]) if len(digits) >= 4 else int(digits[0])
    if major <= 10:
        return (2**13 - 1) * 1024
    if major == 11:
        return (2**15 - 1) * 256
    return (2**18 - 1) * 256


@dataclass(frozen=True)
class Target:
    """A target id: processor name plus xnack / sramecc settings.

    Settings are "any" (works either way), "on", "off" or "unsupported" (the processor has no
    such mode). ``str(target)`` is the LLVM target-id spelling: ``gfx942``,
    ``gfx942:sramecc+:xnack-``.
    """

    name: str
    xnack: str = "any"
    sramecc: str = "any"

    def __str__(self) -> str:
        text = self.name
        # LLVM orders target-id features alphabetically: sramecc before xnack.
        for feature, setting in (("sramecc", self.sramecc), ("xnack", self.xnack)):
            if setting == "on":
                text += f":{feature}+"
            elif setting == "off":
                text += f":{feature}-"
        return text

    @classmethod
    def from_e_flags(cls, e_flags: int) -> Target:
        """Decode e_flags of a v4+ code object. Unknown machines raise CodeObjectError."""
        machine = e_flags & 0xFF
        name = MACHINES.get(machine)
        if name is None:
            raise CodeObjectError(
                f"unknown AMDGPU machine {machine:#x} in e_flags {e_flags:#x}", 0x30,
                "an EF_AMDGPU_MACH_AMDGCN_* value this version of hsapy knows",
            )
        xnack = FEATURE_SETTINGS[(e_flags >> 8) & 3]
        sramecc = FEATURE_SETTINGS[(e_flags >> 10) & 3]
        return cls(name, xnack, sramecc)

    @classmethod
    def parse(cls, text: str) -> Target:
        """Parse ``gfx942``, ``gfx942:xnack+``, ``amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-``.

        Settings not named are "any".
        """
        if not isinstance(text, str) or not text:
            raise HsapyValueError(
                f"a target must be a non-empty string like 'gfx942', not {text!r}")
        spec = text
        if "--" in spec:
            spec = spec.rsplit("--", 1)[1]
        elif spec.startswith("amdgcn-amd-amdhsa-"):
            spec = spec[len("amdgcn-amd-amdhsa-"):]
        parts = spec.split(":")
        name = parts[0]
        settings = {"xnack": "any", "sramecc": "any"}
        for feature in parts[1:]:
            key = feature[:-1]
            if key not in settings or feature[-1:] not in "+-" or not key:
                raise HsapyValueError(
                    f"unknown target feature {feature!r} in {text!r}; "
                    "expected xnack+, xnack-, sramecc+ or sramecc-"
                )
            settings[key] = "on" if feature.endswith("+") else "off"
        if not name.startswith("gfx"):
            raise HsapyValueError(f"target {text!r} does not name a gfx processor (e.g. gfx942)")
        return cls(name, settings["xnack"], settings["sramecc"])

    @property
    def is_generic(self) -> bool:
        """True for a generic target (``gfx12-generic``: runs on every member processor)."""
        return self.name in GENERIC_TARGETS

    def accepts(self, code_object_target: Target) -> bool:
        """True when a code object for ``code_object_target`` runs on an agent with this target.

        The processor names must be equal (or the code object's generic target must include the
        agent's processor); a setting of "any" on either side matches everything, "on"/"off"
        must agree (ROCr's isa compatibility rule).
        """
        same = self.name == code_object_target.name
        member = self.name in GENERIC_TARGETS.get(code_object_target.name, ())
        if not (same or member):
            return False
        for mine, theirs in ((self.xnack, code_object_target.xnack),
                             (self.sramecc, code_object_target.sramecc)):
            if mine in ("on", "off") and theirs in ("on", "off") and mine != theirs:
                return False
        return True

    def match_score(self, code_object_target: Target) -> int:
        """How specifically a compatible code object target matches (higher is better)."""
        score = 0
        for mine, theirs in ((self.xnack, code_object_target.xnack),
                             (self.sramecc, code_object_target.sramecc)):
            if mine == theirs:
                score += 1
        return score


def as_target(target: Target | str) -> Target:
    if isinstance(target, Target):
        return target
    return Target.parse(target)


def target_family(name: str) -> str:
    """ISA family of a processor name: "gfx6".."gfx12" (major version), e.g. gfx942 -> gfx9."""
    if not isinstance(name, str) or not name.startswith("gfx"):
        raise HsapyValueError(f"{name!r:.40} is not a processor name such as 'gfx942'")
    digits = name[3:].split("-")[0]
    if name.endswith("-generic"):   # gfx9-4-generic -> gfx9, gfx10-3-generic -> gfx10
        return "gfx" + digits
    if len(digits) >= 4:
        return "gfx" + digits[:2]
    return "gfx" + digits[:1]
