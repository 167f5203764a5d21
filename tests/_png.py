"""A strict reader for the PNGs hsapy.plot writes (8-bit RGB, no interlace), for tests.

It checks what a PNG decoder checks (signature, chunk CRCs, IHDR first, IEND last, a zlib
stream of exactly the scanlines the header announces) and undoes filter type 0 only, the one
hsapy.plot uses; any other filter byte is reported as an error."""
from __future__ import annotations

import struct
import zlib

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """The (type, data) chunks of a PNG, every CRC checked."""
    assert data[:8] == SIGNATURE, "PNG signature"
    out, at = [], 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, f"CRC of chunk {kind!r}"
        out.append((kind, body))
        at += 12 + length
    assert at == len(data), "no bytes after the last chunk"
    return out


def read_png(data: bytes) -> np.ndarray:
    """The image of a PNG file's bytes as height x width x 3 uint8."""
    parts = chunks(data)
    assert parts[0][0] == b"IHDR" and parts[-1] == (b"IEND", b"")
    width, height, depth, colour, compression, filtering, interlace = struct.unpack(
        ">IIBBBBB", parts[0][1])
    assert (depth, colour, compression, filtering, interlace) == (8, 2, 0, 0, 0)
    raw = zlib.decompress(b"".join(body for kind, body in parts if kind == b"IDAT"))
    assert len(raw) == height * (1 + 3 * width), "IDAT holds exactly the announced scanlines"
    rows = np.frombuffer(raw, np.uint8).reshape(height, 1 + 3 * width)
    assert not rows[:, 0].any(), "filter type 0 on every scanline"
    return rows[:, 1:].reshape(height, width, 3).copy()
