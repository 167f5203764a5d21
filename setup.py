"""Package list for setuptools (everything else is in pyproject.toml).

asm/ and kernels/ are installed as hsapy.asm and hsapy.kernels (package-dir in pyproject.toml);
``packages.find`` cannot discover packages under a mapped directory, so they are listed here.
Namespace packages keep data-only directories (kernels/include, hsapy/sim/isa/tables) in the
wheel, as the former ``[tool.setuptools.packages.find]`` (namespaces on by default) did.
"""
from setuptools import find_namespace_packages, setup

_EXCLUDE = ["*__pycache__*"]

packages = find_namespace_packages(include=["hsapy", "hsapy.*"], exclude=_EXCLUDE)
for name, directory in (("hsapy.asm", "asm"), ("hsapy.kernels", "kernels")):
    packages.append(name)
    packages.extend(f"{name}.{sub}" for sub in find_namespace_packages(directory,
                                                                       exclude=_EXCLUDE))

setup(packages=packages)
