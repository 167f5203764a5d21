"""``hsapy selftest``: hsapy's backend-parametrised tests on the GPU, a verdict per feature
(hsapy.selftest)."""
from __future__ import annotations

from hsapy.selftest import HELP, add_arguments, run

__all__ = ["HELP", "add_arguments", "run"]
