"""The tutorial's operator suite: HIP sources (``*.hip``), prebuilt code objects (``prebuilt/``)
and ``build.py``, which rebuilds them. Installed as ``hsapy.kernels``; the variant tables,
inputs, references and tolerances are in :mod:`hsapy.operators`."""
