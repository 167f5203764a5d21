"""Charts with matplotlib (the ``plot`` extra: ``pip install 'hsapy[plot]'``).

:func:`latency_chart` draws per-mode latency distributions (``hsapy bench launch --plot``): one
row per mode on a shared logarithmic time axis, the samples as a strip of dots over a box plot
(box p25-p75, whiskers p5-p95, the median marked and printed). :func:`roofline_chart` draws
kernel dispatches on a card's roofline (``hsapy profile --plot``). The file type follows the file's
extension: ``.png``, ``.svg`` (text kept as text) or ``.pdf``. matplotlib is imported only here,
when a chart is asked for, through its object-oriented API (no pyplot, no global backend).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hsapy._checks import check_output_path
from hsapy.errors import HsapyError, HsapyTypeError, HsapyValueError

__all__ = ["FORMATS", "PlotUnavailableError", "check_path", "format_us", "latency_chart",
           "require_matplotlib", "roofline_chart"]

FORMATS = (".png", ".svg", ".pdf")


class PlotUnavailableError(HsapyError, ImportError):
    """matplotlib is not installed."""


def check_path(path: str | Path, what: str = "chart") -> str:
    """The format (``png``, ``svg`` or ``pdf``) of ``path`` by its extension, or
    HsapyValueError naming the ones there are, or why the file cannot be written; ``what``
    starts the message (a command passes its option's name)."""
    if not isinstance(path, (str, os.PathLike)):
        raise HsapyTypeError(f"{what}: expected a file path, not {path!r:.40}")
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise HsapyValueError(f"{what}: a chart is written as PNG, SVG or PDF by the file's "
                              f"extension ({', '.join(FORMATS)}), not {str(path)!r}")
    check_output_path(path, what)
    return suffix[1:]


def _save(figure: Any, path: str | Path, fmt: str) -> None:
    """``figure.savefig``, an OSError (the directory removed meanwhile, a full disk) becoming
    HsapyValueError naming the file."""
    try:
        figure.savefig(path, format=fmt)
    except OSError as exc:
        raise HsapyValueError(f"cannot write the chart {path}: {exc.strerror or exc}") from None


def require_matplotlib(what: str = "") -> Any:
    """matplotlib's Figure class, or PlotUnavailableError whose message is the one line that
    names the extra to install (after ``what: `` when given: a command's option)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotUnavailableError(f"{what + ': ' if what else ''}charts need matplotlib: "
                                   "pip install 'hsapy[plot]'") from None
    return Figure


def format_us(us: float) -> str:
    """A duration given in microseconds, short: 850ns, 4.98µs, 59.9µs, 312µs, 1.25ms, 2.00s."""
    for unit, scale in (("s", 1e6), ("ms", 1e3), ("µs", 1.0), ("ns", 1e-3)):
        if us >= scale or unit == "ns":
            value = us / scale
            digits = 2 if value < 10 else 1 if value < 100 else 0
            return f"{value:.{digits}f}{unit}"
    raise AssertionError("unreachable")


def latency_chart(rows: Sequence[tuple[str, Sequence[float]]], path: str | Path, title: str,
                  subtitle: str = "", axis_label: str = "time per dispatch (µs, log scale)",
                  seed: int = 0) -> Any:
    """Write one row per ``(label, samples in µs)`` to ``path`` (PNG, SVG or PDF by extension)
    and return the matplotlib Figure."""
    fmt = check_path(path)
    data = [(str(label), np.asarray(samples, float)) for label, samples in rows]
    if not data:
        raise HsapyValueError("a latency chart needs at least one row of samples")
    for label, samples in data:
        if samples.size == 0 or not np.all(np.isfinite(samples)) or np.any(samples <= 0):
            raise HsapyValueError(f"row {label!r}: samples must be finite and positive (µs) "
                                  "for a log axis")
    Figure = require_matplotlib()
    from matplotlib import rc_context

    figure = Figure(figsize=(10, 1.2 + 0.55 * len(data)), layout="constrained")
    axes = figure.subplots()
    positions = np.arange(len(data))[::-1]          # the first row on top
    rng = np.random.default_rng(seed)
    colors = [f"C{i % 10}" for i in range(len(data))]
    for (_label, samples), y, color in zip(data, positions, colors):
        shown = samples if samples.size <= 4000 else rng.choice(samples, 4000, replace=False)
        alpha = float(np.clip(6.0 / np.sqrt(shown.size), 0.15, 0.85))
        axes.scatter(shown, y + rng.uniform(-0.25, 0.25, shown.size), s=6, color=color,
                     alpha=alpha, linewidths=0, zorder=2)
    import matplotlib

    # "orientation" replaced "vert" in matplotlib 3.10.
    horizontal = ({"orientation": "horizontal"}
                  if tuple(int(p) for p in matplotlib.__version__.split(".")[:2]) >= (3, 10)
                  else {"vert": False})
    boxes = axes.boxplot([samples for _, samples in data], positions=positions, whis=(5, 95),
                         widths=0.6, showfliers=False, patch_artist=True, zorder=3, **horizontal)
    for patch, color in zip(boxes["boxes"], colors):
        patch.set(facecolor=color, alpha=0.2, edgecolor=color)
    for median in boxes["medians"]:
        median.set(color="black", linewidth=2)
    axes.set_xscale("log")
    axes.set_yticks(positions, [label for label, _ in data])
    axes.set_xlabel(axis_label)
    axes.grid(axis="x", which="both", alpha=0.3)
    for (_, samples), y in zip(data, positions):
        axes.annotate(format_us(float(np.median(samples))), xy=(1.0, y),
                      xycoords=("axes fraction", "data"), xytext=(6, 0),
                      textcoords="offset points", va="center")
    axes.set_title(f"{title}\n{subtitle}" if subtitle else title, loc="left")
    figure.supxlabel("dots: samples   box: p25-p75   whiskers: p5-p95   bar and number: median",
                     fontsize="small", color="0.4", x=0.01, ha="left")
    # SVG text stays text (searchable, editable) instead of glyph outlines.
    with rc_context({"svg.fonttype": "none"}):
        _save(figure, path, fmt)
    return figure


def roofline_chart(peaks: Any, points: Sequence[tuple[str, Any, Any]], path: str | Path,
                   title: str, subtitle: str = "") -> Any:
    """Write a roofline of ``peaks`` (hsapy.roofline.Peaks) with one marker pair per
    ``(label, requested, footprint)`` placement (hsapy.roofline.Placement) to ``path`` and
    return the Figure: the bandwidth slope, a ceiling per published compute peak, and for each
    kernel its intensity with bytes requested (hollow) and with distinct lines (filled), joined
    by a line -- the two ends between which its DRAM traffic lies. Labelled a model."""
    fmt = check_path(path)
    shown = [(str(label), a, b) for label, a, b in points if a.flops and a.bytes and b.bytes]
    if not shown:
        raise HsapyValueError("a roofline needs at least one dispatch with FLOPs and global "
                              "memory traffic")
    Figure = require_matplotlib()
    from matplotlib import rc_context

    intensities = [p.intensity for _, a, b in shown for p in (a, b)]
    named: dict[float, list[str]] = {}
    for unit, table in (("vector", peaks.vector), ("matrix", peaks.matrix)):
        for prec, value in table.items():
            named.setdefault(value, []).append(f"{prec.upper()} {unit}")
    ceilings = [(" / ".join(names), value) for value, names in named.items()]
    top = max(value for _, value in ceilings)
    low = min(min(intensities) / 4, min(value for _, value in ceilings) / peaks.bandwidth / 8)
    high = max(max(intensities) * 4, top / peaks.bandwidth * 4)
    figure = Figure(figsize=(9, 6), layout="constrained")
    axes = figure.subplots()
    x = np.geomspace(low, high, 200)
    axes.plot(x, np.minimum(x * peaks.bandwidth, top), color="black", linewidth=1.5,
              label=f"memory {peaks.bandwidth / 1e9:.0f} GB/s")
    for k, (name, value) in enumerate(sorted(ceilings, key=lambda c: -c[1])):
        ridge = value / peaks.bandwidth
        axes.plot([ridge, high], [value, value], color=f"C{k % 10}", linestyle="--",
                  linewidth=1)
        axes.annotate(f"{name} {value / 1e12:.1f} TFLOP/s", xy=(high, value),
                      xytext=(-4, 3), textcoords="offset points", ha="right", fontsize="small",
                      color=f"C{k % 10}")
    for k, (label, requested, footprint) in enumerate(shown):
        color = f"C{k % 10}"
        xs = [requested.intensity, footprint.intensity]
        ys = [requested.attainable, footprint.attainable]
        axes.plot(xs, ys, color=color, linewidth=1, alpha=0.6)
        axes.scatter(xs[:1], ys[:1], facecolors="none", edgecolors=color, s=40, zorder=3)
        axes.scatter(xs[1:], ys[1:], color=color, s=40, zorder=3, label=label)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    axes.set_ylabel("FLOP/s an ideal run reaches")
    axes.grid(which="both", alpha=0.3)
    axes.legend(loc="lower right", fontsize="small")
    axes.set_title(f"{title}\n{subtitle}" if subtitle else title, loc="left")
    figure.supxlabel("a MODEL, not a measurement: simulator counts against published peaks; "
                     "hollow: bytes requested (no cache), filled: distinct lines (ideal cache)",
                     fontsize="small", color="0.4", x=0.01, ha="left")
    with rc_context({"svg.fonttype": "none"}):
        _save(figure, path, fmt)
    return figure
