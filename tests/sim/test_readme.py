"""The README's Python example runs as printed (on the simulator)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README has a Python example"
    result = subprocess.run([sys.executable, "-c", blocks[0]], capture_output=True, text=True,
                            timeout=300, env={**__import__("os").environ, "HSAPY_BACKEND": "sim"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("sim ") and "KERNEL_DISPATCH" in result.stdout
