"""hsapy's version, in a module of its own: what reads it (the build cache's keys, the package's
metadata) imports nothing else of hsapy."""
__version__ = "0.1.0"
