"""AMDGPU kernels written as LLVM IR with llvmlite (installed as ``hsapy.asm``).

``hsapy.asm.dsl`` is the authoring layer; ``hsapy.asm.kernels`` holds the kernels written with it
(``empty``, ``timestamp``, ``vector_add``) and builds them into code objects:

    from hsapy.asm import kernels
    code_object = kernels.build("vector_add", "gfx942")   # bytes of a .hsaco, cached
"""
