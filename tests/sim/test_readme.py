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


PROFILE_PAGE = README.parent / "docs" / "profile.md"

# What the profile page's "..." stands for: load, launch and wait as usual.
LAUNCH = """\
    import numpy as np
    import hsapy
    from hsapy.asm import kernels
    with hsapy.Runtime(backend="sim") as rt:
        agent = rt.gpu_agents[0]
        kernel = rt.load(kernels.build("vector_add", agent.target), agent).kernel("vector_add")
        a, b, out = (agent.device_pool.allocate(4 * 256) for _ in range(3))
        kernel.launch(agent.create_queue(size=64), [a, b, out, 256], grid=256, workgroup=64)
"""


def test_the_profile_page_python_example_reports_each_dispatch():
    block = re.findall(r"```python\n(.*?)```", PROFILE_PAGE.read_text(), re.S)[0]
    placeholder = re.search(r"^    \.\.\..*\n", block, re.M)
    assert placeholder, "the profile page's example has its '...' line"
    program = block[:placeholder.start()] + LAUNCH + block[placeholder.end():]
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("vector_add on gfx942 (simulated)"), result.stdout[:500]
    assert "SQ_WAVES" in result.stdout and "occupancy" in result.stdout
