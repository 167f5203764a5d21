"""PNG charts without a plotting library: a small rasteriser over numpy, a 5x7 bitmap font and a
PNG encoder (chunks written by hand, zlib for IDAT and CRC-32).

:func:`latency_plot` draws per-mode latency distributions (``hsapy bench launch --plot``): one
row per mode on a shared logarithmic time axis, with the samples as a strip of dots, a box from
the 25th to the 75th percentile, whiskers from the 5th to the 95th and a bar at the median.
:func:`encode_png` / :func:`write_png` turn any RGB array into a PNG file (PNG specification,
ISO/IEC 15948: signature, IHDR, IDAT, IEND; 8-bit truecolour, filter type 0 on every row).
"""
from __future__ import annotations

import math
import struct
import zlib
from pathlib import Path
from typing import Sequence

import numpy as np

from hsapy.errors import HsapyValueError

__all__ = ["Canvas", "encode_png", "write_png", "latency_plot", "text_width", "GLYPHS"]

Color = tuple[int, int, int]

# -- the font ------------------------------------------------------------------------------------
# Each glyph: rows of five pixels ('#' on, '.' off), top to bottom. Capitals and digits use rows
# 0-6; lowercase letters sit on row 6 too and descenders (g j p q y µ) use row 7.

_GLYPH_ROWS = {
    "0": ".###. #...# #..## #.#.# ##..# #...# .###.",
    "1": "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
    "2": ".###. #...# ....# ...#. ..#.. .#... #####",
    "3": "##### ...#. ..#.. ...#. ....# #...# .###.",
    "4": "...#. ..##. .#.#. #..#. ##### ...#. ...#.",
    "5": "##### #.... ####. ....# ....# #...# .###.",
    "6": "..##. .#... #.... ####. #...# #...# .###.",
    "7": "##### ....# ...#. ..#.. .#... .#... .#...",
    "8": ".###. #...# #...# .###. #...# #...# .###.",
    "9": ".###. #...# #...# .#### ....# ...#. .##..",
    "A": ".###. #...# #...# ##### #...# #...# #...#",
    "B": "####. #...# #...# ####. #...# #...# ####.",
    "C": ".###. #...# #.... #.... #.... #...# .###.",
    "D": "###.. #..#. #...# #...# #...# #..#. ###..",
    "E": "##### #.... #.... ####. #.... #.... #####",
    "F": "##### #.... #.... ####. #.... #.... #....",
    "G": ".###. #...# #.... #.### #...# #...# .####",
    "H": "#...# #...# #...# ##### #...# #...# #...#",
    "I": ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
    "J": "..### ...#. ...#. ...#. ...#. #..#. .##..",
    "K": "#...# #..#. #.#.. ##... #.#.. #..#. #...#",
    "L": "#.... #.... #.... #.... #.... #.... #####",
    "M": "#...# ##.## #.#.# #.#.# #...# #...# #...#",
    "N": "#...# #...# ##..# #.#.# #..## #...# #...#",
    "O": ".###. #...# #...# #...# #...# #...# .###.",
    "P": "####. #...# #...# ####. #.... #.... #....",
    "Q": ".###. #...# #...# #...# #.#.# #..#. .##.#",
    "R": "####. #...# #...# ####. #.#.. #..#. #...#",
    "S": ".#### #.... #.... .###. ....# ....# ####.",
    "T": "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
    "U": "#...# #...# #...# #...# #...# #...# .###.",
    "V": "#...# #...# #...# #...# #...# .#.#. ..#..",
    "W": "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.",
    "X": "#...# #...# .#.#. ..#.. .#.#. #...# #...#",
    "Y": "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#..",
    "Z": "##### ....# ...#. ..#.. .#... #.... #####",
    "a": "..... ..... .###. ....# .#### #...# .####",
    "b": "#.... #.... #.##. ##..# #...# #...# ####.",
    "c": "..... ..... .###. #.... #.... #...# .###.",
    "d": "....# ....# .##.# #..## #...# #...# .####",
    "e": "..... ..... .###. #...# ##### #.... .###.",
    "f": "..##. .#..# .#... ###.. .#... .#... .#...",
    "g": "..... ..... .#### #...# #...# .#### ....# .###.",
    "h": "#.... #.... #.##. ##..# #...# #...# #...#",
    "i": "..#.. ..... .##.. ..#.. ..#.. ..#.. .###.",
    "j": "...#. ..... ..##. ...#. ...#. ...#. #..#. .##..",
    "k": "#.... #.... #..#. #.#.. ##... #.#.. #..#.",
    "l": ".##.. ..#.. ..#.. ..#.. ..#.. ..#.. .###.",
    "m": "..... ..... ##.#. #.#.# #.#.# #.#.# #.#.#",
    "n": "..... ..... #.##. ##..# #...# #...# #...#",
    "o": "..... ..... .###. #...# #...# #...# .###.",
    "p": "..... ..... ####. #...# #...# ####. #.... #....",
    "q": "..... ..... .#### #...# #...# .#### ....# ....#",
    "r": "..... ..... #.##. ##..# #.... #.... #....",
    "s": "..... ..... .###. #.... .###. ....# ####.",
    "t": ".#... .#... ###.. .#... .#... .#..# ..##.",
    "u": "..... ..... #...# #...# #...# #..## .##.#",
    "v": "..... ..... #...# #...# #...# .#.#. ..#..",
    "w": "..... ..... #...# #...# #.#.# #.#.# .#.#.",
    "x": "..... ..... #...# .#.#. ..#.. .#.#. #...#",
    "y": "..... ..... #...# #...# #...# .#### ....# .###.",
    "z": "..... ..... ##### ...#. ..#.. .#... #####",
    "µ": "..... ..... #...# #...# #...# ##..# #.##. #....",
    " ": "..... ..... ..... ..... ..... ..... .....",
    ".": "..... ..... ..... ..... ..... .##.. .##..",
    ",": "..... ..... ..... ..... .##.. ..#.. .#...",
    ":": "..... .##.. .##.. ..... .##.. .##.. .....",
    ";": "..... .##.. .##.. ..... .##.. ..#.. .#...",
    "-": "..... ..... ..... .###. ..... ..... .....",
    "_": "..... ..... ..... ..... ..... ..... #####",
    "+": "..... ..#.. ..#.. ##### ..#.. ..#.. .....",
    "=": "..... ..... ##### ..... ##### ..... .....",
    "(": "...#. ..#.. .#... .#... .#... ..#.. ...#.",
    ")": ".#... ..#.. ...#. ...#. ...#. ..#.. .#...",
    "[": ".###. .#... .#... .#... .#... .#... .###.",
    "]": ".###. ...#. ...#. ...#. ...#. ...#. .###.",
    "/": "....# ....# ...#. ..#.. .#... #.... #....",
    "%": "##..# ##..# ...#. ..#.. .#... #..## #..##",
    "<": "...#. ..#.. .#... #.... .#... ..#.. ...#.",
    ">": ".#... ..#.. ...#. ....# ...#. ..#.. .#...",
    "'": "..#.. ..#.. ..... ..... ..... ..... .....",
    '"': ".#.#. .#.#. ..... ..... ..... ..... .....",
    "!": "..#.. ..#.. ..#.. ..#.. ..#.. ..... ..#..",
    "?": ".###. #...# ....# ...#. ..#.. ..... ..#..",
    "#": ".#.#. .#.#. ##### .#.#. ##### .#.#. .#.#.",
    "*": "..... ..#.. #.#.# .###. #.#.# ..#.. .....",
    "|": "..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
    "~": "..... ..... .#... #.#.# ...#. ..... .....",
    "x-box": "##### #...# #...# #...# #...# #...# #####",  # drawn for unknown characters
}

GLYPH_WIDTH, GLYPH_HEIGHT = 5, 8   # cell is one pixel wider (the gap between letters)


def _glyph_bitmap(rows: str) -> np.ndarray:
    bitmap = np.zeros((GLYPH_HEIGHT, GLYPH_WIDTH), bool)
    for y, row in enumerate(rows.split()):
        bitmap[y] = [pixel == "#" for pixel in row]
    return bitmap


GLYPHS: dict[str, np.ndarray] = {ch: _glyph_bitmap(rows) for ch, rows in _GLYPH_ROWS.items()}
_UNKNOWN = GLYPHS.pop("x-box")


def text_width(text: str, scale: int = 1) -> int:
    """Width in pixels of ``text`` drawn at ``scale``."""
    return max(len(text) * (GLYPH_WIDTH + 1) - 1, 0) * scale


# -- the canvas ----------------------------------------------------------------------------------

class Canvas:
    """An RGB image (``pixels``: float32 height x width x 3, 0..255) with clipped drawing."""

    def __init__(self, width: int, height: int, background: Color = (255, 255, 255)) -> None:
        if width < 1 or height < 1:
            raise HsapyValueError(f"a canvas needs a positive size, not {width}x{height}")
        self.width, self.height = width, height
        self.pixels = np.empty((height, width, 3), np.float32)
        self.pixels[:] = background

    def _clip(self, x0: float, y0: float, x1: float, y1: float) -> tuple[int, int, int, int]:
        return (max(int(round(x0)), 0), max(int(round(y0)), 0),
                min(int(round(x1)), self.width), min(int(round(y1)), self.height))

    def rect(self, x0: float, y0: float, x1: float, y1: float, color: Color,
             alpha: float = 1.0) -> None:
        """Fill [x0, x1) x [y0, y1), blended with ``alpha``."""
        x0, y0, x1, y1 = self._clip(x0, y0, x1, y1)
        if x0 < x1 and y0 < y1:
            area = self.pixels[y0:y1, x0:x1]
            area += (np.array(color, np.float32) - area) * alpha

    def outline(self, x0: float, y0: float, x1: float, y1: float, color: Color,
                width: int = 1) -> None:
        """The border of [x0, x1) x [y0, y1), ``width`` pixels thick, inside the rectangle."""
        self.rect(x0, y0, x1, y0 + width, color)
        self.rect(x0, y1 - width, x1, y1, color)
        self.rect(x0, y0, x0 + width, y1, color)
        self.rect(x1 - width, y0, x1, y1, color)

    def hline(self, x0: float, x1: float, y: float, color: Color, width: int = 1,
              alpha: float = 1.0) -> None:
        top = round(y) - width // 2
        self.rect(min(x0, x1), top, max(x0, x1) + 1, top + width, color, alpha)

    def vline(self, x: float, y0: float, y1: float, color: Color, width: int = 1,
              alpha: float = 1.0) -> None:
        left = round(x) - width // 2
        self.rect(left, min(y0, y1), left + width, max(y0, y1) + 1, color, alpha)

    def dots(self, xs: np.ndarray, ys: np.ndarray, color: Color, alpha: float,
             size: int = 2) -> None:
        """``size`` x ``size`` dots at (xs, ys); overlapping dots darken (1 - (1 - alpha)^k)."""
        count = np.zeros((self.height, self.width), np.float32)
        xs = np.round(np.asarray(xs)).astype(int)
        ys = np.round(np.asarray(ys)).astype(int)
        for dx in range(size):
            for dy in range(size):
                x, y = xs + dx, ys + dy
                inside = (x >= 0) & (x < self.width) & (y >= 0) & (y < self.height)
                np.add.at(count, (y[inside], x[inside]), 1.0)
        cover = 1.0 - (1.0 - alpha) ** count
        self.pixels += (np.array(color, np.float32) - self.pixels) * cover[..., None]

    def text(self, x: float, y: float, text: str, color: Color, scale: int = 1,
             anchor: str = "left") -> None:
        """Draw ``text`` with its top at ``y``; ``anchor`` left, center or right of ``x``."""
        width = text_width(text, scale)
        if anchor == "center":
            x -= width / 2
        elif anchor == "right":
            x -= width
        elif anchor != "left":
            raise HsapyValueError(f"text anchor {anchor!r}: use left, center or right")
        x, y = int(round(x)), int(round(y))
        for ch in text:
            bitmap = GLYPHS.get(ch, _UNKNOWN)
            big = np.kron(bitmap, np.ones((scale, scale), bool))
            self._stamp(x, y, big, color)
            x += (GLYPH_WIDTH + 1) * scale

    def _stamp(self, x: int, y: int, mask: np.ndarray, color: Color) -> None:
        h, w = mask.shape
        x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + w, self.width), min(y + h, self.height)
        if x0 >= x1 or y0 >= y1:
            return
        part = mask[y0 - y:y1 - y, x0 - x:x1 - x]
        self.pixels[y0:y1, x0:x1][part] = color

    def to_rgb(self) -> np.ndarray:
        """The image as uint8 height x width x 3."""
        return np.clip(np.round(self.pixels), 0, 255).astype(np.uint8)


# -- PNG -----------------------------------------------------------------------------------------

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind: bytes, data: bytes) -> bytes:
    # Length, type, data, then the CRC-32 of type + data (PNG spec 5.3).
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of an RGB uint8 array (height x width x 3)."""
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise HsapyValueError(f"encode_png takes a height x width x 3 uint8 array, not "
                              f"{image.dtype} of shape {image.shape}")
    height, width = image.shape[:2]
    if not (0 < width < 2**31 and 0 < height < 2**31):
        raise HsapyValueError(f"a PNG is 1..2^31-1 pixels each way, not {width}x{height}")
    # IHDR: width, height, bit depth 8, colour type 2 (truecolour), compression 0, filter 0,
    # interlace 0. Each scanline starts with its filter type: 0 (None).
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    scanlines = np.zeros((height, 1 + width * 3), np.uint8)
    scanlines[:, 1:] = image.reshape(height, width * 3)
    return (PNG_SIGNATURE + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(scanlines.tobytes(), 9)) + _chunk(b"IEND", b""))


def write_png(path: str | Path, image: np.ndarray) -> Path:
    """Write ``image`` (RGB uint8) as a PNG file; returns the path."""
    path = Path(path)
    path.write_bytes(encode_png(image))
    return path


# -- the latency chart ---------------------------------------------------------------------------

INK: Color = (34, 34, 34)
MUTED: Color = (110, 110, 110)
GRID_MAJOR: Color = (200, 200, 200)
GRID_MINOR: Color = (232, 232, 232)
BAND: Color = (246, 246, 248)
PALETTE: tuple[Color, ...] = ((31, 119, 180), (44, 160, 44), (214, 39, 40), (148, 103, 189),
                              (255, 127, 14), (23, 190, 207), (140, 86, 75), (227, 119, 194))


def format_us(us: float) -> str:
    """A duration given in microseconds, short: 850ns, 4.98µs, 59.9µs, 312µs, 1.25ms, 2.00s."""
    for unit, scale in (("s", 1e6), ("ms", 1e3), ("µs", 1.0), ("ns", 1e-3)):
        if us >= scale or unit == "ns":
            value = us / scale
            digits = 2 if value < 10 else 1 if value < 100 else 0
            return f"{value:.{digits}f}{unit}"
    raise AssertionError("unreachable")


def _decade_label(exponent: int) -> str:
    """10**exponent microseconds as a tick label: 100ns, 1µs, 10µs, 1ms ..."""
    seconds_exponent = exponent - 6
    for unit, unit_exponent in (("s", 0), ("ms", -3), ("µs", -6), ("ns", -9)):
        if seconds_exponent >= unit_exponent or unit == "ns":
            return f"{10 ** (seconds_exponent - unit_exponent):g}{unit}"
    raise AssertionError("unreachable")


def latency_plot(rows: Sequence[tuple[str, Sequence[float]]], title: str, subtitle: str = "",
                 axis_label: str = "time per dispatch (log scale)", width: int = 1000,
                 seed: int = 0) -> np.ndarray:
    """An RGB image of one row per ``(label, samples in µs)``: dots, box p25-p75, whiskers
    p5-p95, median bar and value, on a shared log axis with decade ticks."""
    data = [(label, np.asarray(samples, float)) for label, samples in rows]
    if not data:
        raise HsapyValueError("latency_plot needs at least one row of samples")
    for label, samples in data:
        if samples.size == 0 or not np.all(np.isfinite(samples)) or np.any(samples <= 0):
            raise HsapyValueError(f"row {label!r}: samples must be finite and positive (µs) "
                                  "for a log axis")
    label_scale, row_height = 2, 46
    left = 24 + max(text_width(label, label_scale) for label, _ in data) + 16
    right = 24 + text_width("000.0ms", label_scale) + 8
    top = 24 + 8 * 3 + 12 + (8 * 2 + 14 if subtitle else 0)
    plot_height = row_height * len(data)
    height = top + plot_height + 110
    canvas = Canvas(width, height)
    x0, x1 = left, width - right
    if x1 - x0 < 100:
        raise HsapyValueError(f"latency_plot width {width} leaves no room for the axis")

    everything = np.concatenate([samples for _, samples in data])
    lo = math.floor(math.log10(everything.min()))
    hi = math.ceil(math.log10(everything.max()))
    hi = max(hi, lo + 1)

    def x_of(us: np.ndarray | float) -> np.ndarray | float:
        return x0 + (np.log10(us) - lo) / (hi - lo) * (x1 - x0)

    canvas.text(24, 24, title, INK, scale=3)
    if subtitle:
        canvas.text(24, 24 + 8 * 3 + 10, subtitle, MUTED, scale=2)

    # Row bands, then the grid over them: minor lines at 2..9, major lines and labels at decades.
    for i in range(len(data)):
        if i % 2 == 0:
            canvas.rect(x0, top + i * row_height, x1 + 1, top + (i + 1) * row_height, BAND)
    bottom = top + plot_height
    for exponent in range(lo, hi + 1):
        if exponent < hi:
            for k in range(2, 10):
                canvas.vline(x_of(k * 10.0 ** exponent), top, bottom, GRID_MINOR)
        x = x_of(10.0 ** exponent)
        canvas.vline(x, top, bottom + 6, GRID_MAJOR)
        canvas.text(x, bottom + 12, _decade_label(exponent), INK, scale=2, anchor="center")
    canvas.hline(x0, x1, bottom, MUTED)
    canvas.text((x0 + x1) / 2, bottom + 40, axis_label, MUTED, scale=2, anchor="center")

    canvas.text(x1 + 16, top - 22, "median", MUTED, scale=2)
    rng = np.random.default_rng(seed)
    for i, (label, samples) in enumerate(data):
        color = PALETTE[i % len(PALETTE)]
        dark = tuple(int(c * 0.6) for c in color)
        middle = top + i * row_height + row_height / 2
        box_half = row_height * 0.3
        p5, p25, median, p75, p95 = np.percentile(samples, [5, 25, 50, 75, 95])
        canvas.text(left - 16, middle - 8, label, INK, scale=label_scale, anchor="right")
        canvas.rect(x_of(p25), middle - box_half, x_of(p75) + 1, middle + box_half, color, 0.18)
        shown = samples if samples.size <= 4000 else rng.choice(samples, 4000, replace=False)
        jitter = rng.uniform(-box_half * 0.9, box_half * 0.9, shown.size)
        # Few samples: bigger, stronger dots; many: fainter ones whose overlaps show density.
        alpha = float(np.clip(6.0 / math.sqrt(shown.size), 0.15, 0.85))
        size = 3 if shown.size < 100 else 2
        canvas.dots(x_of(shown) - size / 2, middle + jitter - size / 2, color, alpha, size)
        canvas.hline(x_of(p5), x_of(p25), middle, dark, width=2)
        canvas.hline(x_of(p75), x_of(p95), middle, dark, width=2)
        for whisker in (p5, p95):
            canvas.vline(x_of(whisker), middle - box_half / 2, middle + box_half / 2, dark, 2)
        canvas.outline(x_of(p25), middle - box_half, x_of(p75) + 2, middle + box_half + 1, dark)
        canvas.vline(x_of(median), middle - box_half - 3, middle + box_half + 3, INK, width=3)
        canvas.text(x1 + 16, middle - 8, format_us(median), INK, scale=label_scale)

    legend_y = bottom + 72
    canvas.text(24, legend_y, "dots: samples   box: p25-p75   whiskers: p5-p95   "
                "bar and number: median", MUTED, scale=2)
    return canvas.to_rgb()
