"""Shared by the tests that need real code objects: tests/data/codeobjects/build.py as a module
(``build``) and ``built(builder, *args)``, which skips the test when a tool is missing."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_NAME = "hsapy_tests_codeobject_build"


def _build_module():
    if _NAME not in sys.modules:
        path = Path(__file__).resolve().parent / "data" / "codeobjects" / "build.py"
        spec = importlib.util.spec_from_file_location(_NAME, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = module
        spec.loader.exec_module(module)
    return sys.modules[_NAME]


build = _build_module()


def built(builder, *args) -> bytes:
    """``builder(*args)``, or skip the calling test naming the missing tool."""
    try:
        return builder(*args)
    except build.ToolMissing as exc:
        pytest.skip(str(exc))
