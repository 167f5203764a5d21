"""Package list and build step for setuptools (everything else is in pyproject.toml).

asm/ and kernels/ are installed as hsapy.asm and hsapy.kernels (package-dir in pyproject.toml);
``packages.find`` cannot discover packages under a mapped directory, so they are listed here.
Namespace packages keep data-only directories (kernels/include, hsapy/sim/isa/tables) in the
wheel, as the former ``[tool.setuptools.packages.find]`` (namespaces on by default) did.
"""
import shutil
from pathlib import Path

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

_EXCLUDE = ["*__pycache__*"]

packages = find_namespace_packages(include=["hsapy", "hsapy.*"], exclude=_EXCLUDE)
for name, directory in (("hsapy.asm", "asm"), ("hsapy.kernels", "kernels")):
    packages.append(name)
    packages.extend(f"{name}.{sub}" for sub in find_namespace_packages(directory,
                                                                       exclude=_EXCLUDE))



class build_py_from_scratch(build_py):
    """setuptools copies into build/lib only what is newer and never removes anything there, so
    ``pip install .`` or ``pip wheel .`` in a tree built before would ship a module or code
    object deleted since. The package is copied afresh instead (build/ is staging only)."""

    def run(self) -> None:
        shutil.rmtree(Path(self.build_lib, "hsapy"), ignore_errors=True)
        super().run()


setup(packages=packages, cmdclass={"build_py": build_py_from_scratch})
