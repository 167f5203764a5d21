"""hsapy.plot: the PNG encoder, the bitmap font and the latency chart."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from hsapy.errors import HsapyValueError
from hsapy.plot import (GLYPH_HEIGHT, GLYPH_WIDTH, GLYPHS, INK, Canvas, encode_png, format_us,
                        latency_plot, text_width, write_png)
from tests._png import SIGNATURE, chunks, read_png


def test_png_has_signature_ihdr_idat_iend_with_valid_crcs():
    image = np.zeros((7, 11, 3), np.uint8)
    data = encode_png(image)
    assert data.startswith(SIGNATURE)
    kinds = [kind for kind, _ in chunks(data)]   # chunks() checks every CRC
    assert kinds == [b"IHDR", b"IDAT", b"IEND"]
    width, height = struct.unpack(">II", chunks(data)[0][1][:8])
    assert (width, height) == (11, 7)


def test_png_round_trips_pixels():
    image = np.random.default_rng(3).integers(0, 256, (13, 17, 3), dtype=np.uint8)
    assert np.array_equal(read_png(encode_png(image)), image)


def test_corrupted_png_fails_its_crc():
    data = bytearray(encode_png(np.full((4, 4, 3), 200, np.uint8)))
    data[20] ^= 0xFF                                  # inside IHDR's data
    with pytest.raises(AssertionError, match="CRC"):
        chunks(bytes(data))


@pytest.mark.parametrize("image", [np.zeros((4, 4), np.uint8), np.zeros((4, 4, 3), np.float32),
                                   np.zeros((0, 4, 3), np.uint8)])
def test_encode_png_rejects_what_is_not_an_rgb_image(image):
    with pytest.raises(HsapyValueError):
        encode_png(image)


def test_font_covers_digits_letters_and_the_chart_punctuation():
    needed = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZµ .,:-_()%/"
    assert set(needed) <= set(GLYPHS)
    for ch, bitmap in GLYPHS.items():
        assert bitmap.shape == (GLYPH_HEIGHT, GLYPH_WIDTH)
        assert bitmap.any() or ch == " ", f"glyph {ch!r} is blank"
    # Distinct characters look distinct.
    shapes = {bitmap.tobytes() for bitmap in GLYPHS.values()}
    assert len(shapes) == len(GLYPHS)


def test_text_draws_the_glyph_bitmaps_at_scale():
    canvas = Canvas(40, 20)
    canvas.text(2, 3, "7a", INK, scale=2)
    ink = np.all(canvas.to_rgb() == INK, axis=2)
    expected = np.zeros_like(ink)
    expected[3:3 + 16, 2:2 + 10] = np.kron(GLYPHS["7"], np.ones((2, 2), bool))
    expected[3:3 + 16, 14:14 + 10] = np.kron(GLYPHS["a"], np.ones((2, 2), bool))
    assert np.array_equal(ink, expected)


@pytest.mark.parametrize("anchor, left", [("left", 50), ("center", 50 - 29 // 2),
                                          ("right", 50 - 29)])
def test_text_anchor_places_the_text(anchor, left):
    canvas = Canvas(100, 10)
    canvas.text(50, 0, "88888", INK, anchor=anchor)
    columns = np.flatnonzero(np.all(canvas.to_rgb() == INK, axis=2).any(axis=0))
    assert text_width("88888") == 29
    assert columns[0] == left and columns[-1] == left + 28


def test_text_off_the_canvas_is_clipped_not_an_error():
    canvas = Canvas(10, 10)
    canvas.text(-7, -3, "Wq", INK, scale=3)
    canvas.text(8, 8, "Wq", INK)
    assert np.all(canvas.to_rgb() == INK, axis=2).any()


@pytest.mark.parametrize("us, text", [(0.85, "850ns"), (4.978, "4.98µs"), (59.94, "59.9µs"),
                                      (312.4, "312µs"), (1250.0, "1.25ms"), (2e6, "2.00s")])
def test_format_us(us, text):
    assert format_us(us) == text


def _chart():
    rng = np.random.default_rng(0)
    rows = [("submit_plain", rng.lognormal(np.log(30), 0.3, 500)),
            ("roundtrip", rng.lognormal(np.log(300), 0.2, 50)),
            ("throughput", [20.0, 21.0, 22.0])]
    return latency_plot(rows, "Latency", "subtitle here")


def test_latency_plot_is_a_chart_not_a_blank_image():
    image = _chart()
    assert image.dtype == np.uint8 and image.shape[2] == 3
    assert image.shape[0] > 150 and image.shape[1] == 1000
    colours = np.unique(image.reshape(-1, 3), axis=0)
    assert len(colours) > 30                         # dots, boxes, bands, grid, text
    background = np.all(image == 255, axis=2).mean()
    assert 0.3 < background < 0.97


def test_latency_plot_renders_the_title_labels_and_ticks_as_text():
    image = _chart()
    ink = np.all(image == INK, axis=2)
    title = ink[24:24 + 24, 24:24 + text_width("Latency", 3)]
    # The title's pixels are exactly the scaled glyphs of "Latency".
    expected = np.hstack([np.hstack([np.kron(GLYPHS[ch], np.ones((3, 3), bool)),
                                     np.zeros((24, 3), bool)]) for ch in "Latency"])[:, :-3]
    assert np.array_equal(title, expected)
    # Mode labels sit left of the plot, right-aligned; tick labels under it.
    label_width = text_width("submit_plain", 2)
    assert ink[:, 24:24 + label_width].sum() > 3 * 100
    assert ink[-110:].sum() > 200                   # decade tick labels under the axis


def test_latency_plot_puts_larger_latencies_further_right():
    image = latency_plot([("fast", [1.0] * 9), ("slow", [1000.0] * 9)], "t")
    dark = image.sum(axis=2) < 200                   # median bars (ink) and box outlines
    top, row = 24 + 24 + 12, 46                       # below the title; rows 46 pixels high
    between = slice(75, 900)                         # right of the labels, left of the medians
    fast_cols = np.flatnonzero(dark[top + 10:top + row - 10, between].any(axis=0))
    slow_cols = np.flatnonzero(dark[top + row + 10:top + 2 * row - 10, between].any(axis=0))
    assert fast_cols.size and slow_cols.size
    assert slow_cols.min() > fast_cols.max() + 600   # three decades apart on a ~800 px axis


@pytest.mark.parametrize("rows", [[], [("a", [])], [("a", [1.0, 0.0])], [("a", [np.nan])]])
def test_latency_plot_rejects_rows_a_log_axis_cannot_show(rows):
    with pytest.raises(HsapyValueError):
        latency_plot(rows, "t")


def test_write_png_writes_a_readable_file(tmp_path):
    image = _chart()
    path = write_png(tmp_path / "chart.png", image)
    assert np.array_equal(read_png(path.read_bytes()), image)
