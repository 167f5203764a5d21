"""hsapy's commands and benchmarks/sim.py keep numpy's BLAS threads from spinning on the cores
the simulator's threads use (hsapy/hostenv.py): the setting is made before numpy loads its
BLAS, and a value the user set wins."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAME, VALUE = "OPENBLAS_THREAD_TIMEOUT", "4"


def _python(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != NAME}
    environ.update(env)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environ, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_command_sets_it_before_numpy_is_imported():
    out = _python("import sys, os, contextlib, io\n"
                  "import hsapy.cli\n"
                  "print('numpy' in sys.modules)\n"
                  "with contextlib.redirect_stdout(io.StringIO()):\n"
                  "    hsapy.cli.main([])\n"
                  "print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))")
    assert out == ["False", VALUE]


def test_a_value_the_user_set_wins():
    out = _python("import os, contextlib, io\n"
                  "import hsapy.cli\n"
                  "with contextlib.redirect_stdout(io.StringIO()):\n"
                  "    hsapy.cli.main([])\n"
                  "print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))", **{NAME: "20"})
    assert out == ["20"]


def test_the_simulator_benchmark_sets_it_before_importing_numpy():
    out = _python("import sys, os, importlib.util\n"
                  "spec = importlib.util.spec_from_file_location('simb', 'benchmarks/sim.py')\n"
                  "module = importlib.util.module_from_spec(spec)\n"
                  "seen = []\n"
                  "class Watch:\n"
                  "    def find_spec(self, name, path=None, target=None):\n"
                  "        if name == 'numpy':\n"
                  "            seen.append(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))\n"
                  "sys.meta_path.insert(0, Watch())\n"
                  "spec.loader.exec_module(module)\n"
                  "print(seen[0] if seen else 'numpy-already-imported')")
    assert out == [VALUE]
