"""hsapy.plot: latency charts through matplotlib, written as PNG, SVG or PDF by extension."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from hsapy import plot
from hsapy.errors import HsapyValueError

ROWS = [("submit_plain", [3.0, 3.2, 2.9, 3.5]), ("roundtrip", [55.0, 61.0, 58.5]),
        ("gpu_duration", [4000.0, 4100.0])]


@pytest.fixture(autouse=True)
def _matplotlib():
    pytest.importorskip("matplotlib", reason="charts need the plot extra (matplotlib)")


@pytest.mark.parametrize("suffix,magic", [(".png", b"\x89PNG\r\n\x1a\n"), (".svg", b"<?xml"),
                                          (".pdf", b"%PDF-")])
def test_the_extension_chooses_the_file_type(tmp_path, suffix, magic):
    path = tmp_path / f"chart{suffix.upper() if suffix == '.pdf' else suffix}"
    plot.latency_chart(ROWS, path, "title")
    data = path.read_bytes()
    assert data.startswith(magic) and len(data) > 1000


def test_the_figure_has_the_title_axis_and_a_row_per_label_first_on_top(tmp_path):
    figure = plot.latency_chart(ROWS, tmp_path / "chart.png", "hsapy bench launch",
                                "the empty kernel on gfx942")
    axes = figure.axes[0]
    assert axes.get_title(loc="left") == "hsapy bench launch\nthe empty kernel on gfx942"
    assert axes.get_xscale() == "log" and "log scale" in axes.get_xlabel()
    ticks = sorted(zip(axes.get_yticks(), (t.get_text() for t in axes.get_yticklabels())),
                   reverse=True)
    assert [label for _, label in ticks] == [label for label, _ in ROWS]
    medians = [t.get_text() for t in axes.texts]
    assert medians == ["3.10µs", "58.5µs", "4.05ms"]


def test_svg_keeps_its_text_as_text(tmp_path):
    plot.latency_chart(ROWS, tmp_path / "chart.svg", "hsapy bench launch")
    svg = (tmp_path / "chart.svg").read_text()
    for label, _ in ROWS:
        assert f">{label}<" in svg


@pytest.mark.parametrize("rows,message", [
    ([], "at least one row"),
    ([("a", [])], "finite and positive"),
    ([("a", [1.0, 0.0])], "finite and positive"),
    ([("a", [1.0, np.nan])], "finite and positive"),
])
def test_rows_a_log_axis_cannot_show_are_refused(tmp_path, rows, message):
    with pytest.raises(HsapyValueError, match=message):
        plot.latency_chart(rows, tmp_path / "chart.png", "t")
    assert not (tmp_path / "chart.png").exists()


def test_other_extensions_are_refused_naming_the_formats(tmp_path):
    with pytest.raises(HsapyValueError, match=r"PNG, SVG or PDF.*chart\.jpg"):
        plot.latency_chart(ROWS, tmp_path / "chart.jpg", "t")


def test_without_matplotlib_the_error_is_one_line_naming_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(plot.PlotUnavailableError) as info:
        plot.latency_chart(ROWS, tmp_path / "chart.png", "t")
    assert str(info.value) == "charts need matplotlib: pip install 'hsapy[plot]'"


@pytest.mark.parametrize("us,text", [(0.85, "850ns"), (4.98, "4.98µs"), (59.94, "59.9µs"),
                                     (312.4, "312µs"), (1250.0, "1.25ms"), (2e6, "2.00s")])
def test_format_us_is_short_with_three_significant_digits(us, text):
    assert plot.format_us(us) == text
