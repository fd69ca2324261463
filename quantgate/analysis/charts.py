"""The report's charts as PNG files, drawn with matplotlib's Agg renderer (no display needed).

Each chart takes frames from `quantgate.analysis.explore` and writes one PNG. A figure that was not
measured is drawn as a gap or a grey `—` cell, never as 0, and the chart says what it left
out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from quantgate.analysis.explore import (
    RunView,
    field_deltas,
    latencies,
    pareto_frontier,
    slice_accuracy,
    slice_sizes,
    variant_table,
)

_DPI = 110
_MISSING = "—"
_MIN_SPAN = 0.05  # the heatmap's colour scale covers at least ±5 points, so small deltas look small


@dataclass(frozen=True, kw_only=True)
class Chart:
    """One chart written to disk.

    Attributes:
        key: Short name, also the file's stem.
        title: What the chart shows.
        path: The PNG.
        note: What the reader should know (left-out variants, how to read it).
        data: The figures drawn (NaN where not measured).
    """

    key: str
    title: str
    path: Path
    note: str
    data: pd.DataFrame


def _save(figure: Figure, path: Path) -> Path:
    FigureCanvasAgg(figure)
    figure.savefig(path, format="png", dpi=_DPI, metadata={"Software": None})
    return path


def _measured(series: pd.Series) -> dict[str, float | None]:
    return {str(name): None if pd.isna(value) else float(value) for name, value in series.items()}


def accuracy_memory_chart(view: RunView, *, out: Path) -> Chart:
    """Field accuracy against model footprint per variant, Pareto frontier drawn and marked."""
    table = variant_table(view)
    memory, accuracy = _measured(table["footprint_mb"]), _measured(table["field_accuracy"])
    frontier = pareto_frontier(memory=memory, accuracy=accuracy)
    points = {
        name: (m, a) for name, m in memory.items() if m is not None and (a := accuracy[name]) is not None
    }
    figure = Figure(figsize=(7, 4.5))
    axes = figure.add_subplot()
    for name, (x, y) in points.items():
        on_frontier = name in frontier
        axes.scatter(
            x,
            y,
            s=90 if on_frontier else 50,
            marker="*" if name == view.reference else "o",
            color="tab:red" if on_frontier else "tab:grey",
            label="on the Pareto frontier" if name in frontier[:1] else None,
            zorder=3,
        )
        axes.annotate(name, (x, y), textcoords="offset points", xytext=(6, 6))
    if frontier:
        xs, ys = zip(*(points[name] for name in frontier), strict=True)
        axes.step(xs, ys, where="post", color="tab:red", alpha=0.6)
        axes.legend(loc="best")
    sources = sorted({str(table.loc[name, "footprint_source"]) for name in points})
    axes.set_xlabel(f"footprint, MiB ({', '.join(sources) or 'not measured'})")
    axes.set_ylabel("field accuracy")
    axes.yaxis.set_major_formatter(lambda y, _: f"{y:.0%}")
    axes.grid(alpha=0.3)
    axes.margins(0.2)
    left_out = [name for name in memory if name not in points]
    note = f"Frontier: {', '.join(frontier) or _MISSING}. Star: the reference."
    if left_out:
        note += f" Not plotted (accuracy or footprint not measured): {', '.join(left_out)}."
    path = _save(figure, out / "accuracy_memory.png")
    drawn = table[["field_accuracy", "footprint_mb"]].assign(on_frontier=table.index.isin(frontier))
    return Chart(key="accuracy_memory", title="Accuracy vs memory", path=path, note=note, data=drawn)


def _annotate_cells(axes: Axes, values: np.ndarray, span: float) -> None:
    for (row, col), value in np.ndenumerate(values):
        text = _MISSING if math.isnan(value) else f"{value * 100:+.1f}"
        dark = not math.isnan(value) and abs(value) > 0.6 * span  # a deep colour: white text reads
        axes.text(col, row, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")


def field_delta_heatmap(view: RunView, *, out: Path) -> Chart:
    """Per field and quantized variant: accuracy minus the reference's, in points."""
    deltas = field_deltas(view)
    values = deltas.to_numpy(dtype=float)
    height = 1.2 + 0.35 * max(len(deltas.index), 1)
    figure = Figure(figsize=(max(4.5, 1.6 + 1.3 * max(len(deltas.columns), 1)), height))
    axes = figure.add_subplot()
    if values.size:
        finite = values[~np.isnan(values)]
        span = max(float(np.max(np.abs(finite))) if finite.size else 0.0, _MIN_SPAN)
        norm = TwoSlopeNorm(vmin=-span, vcenter=0.0, vmax=span)
        image = axes.imshow(np.ma.masked_invalid(values), cmap="RdBu", norm=norm, aspect="auto")
        bar = figure.colorbar(image, ax=axes, label="Δ accuracy vs reference, points")
        bar.ax.yaxis.set_major_formatter(lambda v, _: f"{v * 100:+.0f}")
        _annotate_cells(axes, values, span)
    axes.set_facecolor("#dddddd")
    axes.set_xticks(range(len(deltas.columns)), labels=list(deltas.columns))
    axes.set_yticks(range(len(deltas.index)), labels=list(deltas.index))
    axes.set_title(f"variant minus {view.reference}, points")
    figure.tight_layout()
    note = "Blue: the variant gets the field right more often than the reference; red: less often."
    if not values.size:
        note = "No quantized variant has paired labeled cases: no delta to show."
    path = _save(figure, out / "field_deltas.png")
    title = "Field accuracy delta vs the reference"
    return Chart(key="field_deltas", title=title, path=path, note=note, data=deltas)


def latency_chart(view: RunView, *, out: Path) -> Chart:
    """Distributions of time to first token and total time per variant (box plot and points)."""
    times = latencies(view)
    figure = Figure(figsize=(8, 4))
    left_out: set[str] = set()
    for index, (column, title) in enumerate([("ttft_s", "time to first token"), ("total_s", "total time")]):
        axes = figure.add_subplot(1, 2, index + 1)
        series = {name: times.loc[times["variant"] == name, column].dropna() for name in view.variants}
        shown = [name for name, values in series.items() if len(values)]
        left_out |= set(view.variants) - set(shown)
        if shown:
            axes.boxplot([series[n].to_numpy() for n in shown], tick_labels=shown, showfliers=False)
            for position, name in enumerate(shown, start=1):
                jitter = np.linspace(-0.12, 0.12, len(series[name]))
                axes.scatter(position + jitter, series[name], s=10, alpha=0.6, color="tab:blue", zorder=3)
        axes.set_title(title)
        axes.set_ylabel("seconds")
        axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    note = "One point per case."
    if left_out:
        note += f" Not measured for some or all cases: {', '.join(sorted(left_out))}."
    path = _save(figure, out / "latency.png")
    return Chart(key="latency", title="Latency distributions", path=path, note=note, data=times)


def slice_chart(view: RunView, *, out: Path) -> Chart:
    """Field accuracy per slice (tag) and variant as grouped bars."""
    table = slice_accuracy(view)
    sizes = slice_sizes(view)
    figure = Figure(figsize=(max(6.0, 1.2 * max(len(table.index), 1) + 2), 4))
    axes = figure.add_subplot()
    width = 0.8 / max(len(table.columns), 1)
    positions = np.arange(len(table.index))
    for offset, name in enumerate(table.columns):
        values = table[name].to_numpy(dtype=float)
        axes.bar(positions + offset * width, np.nan_to_num(values), width, label=str(name))
        for x, value in zip(positions + offset * width, values, strict=True):
            label = _MISSING if math.isnan(value) else f"{value:.0%}"
            y = 0.0 if math.isnan(value) else value
            axes.text(x, y + 0.01, label, ha="center", va="bottom", fontsize=7)
    labels = [f"{tag}\n(n={sizes.get(tag, 0)})" for tag in table.index]
    axes.set_xticks(positions + width * (len(table.columns) - 1) / 2, labels=labels)
    axes.set_ylim(0, 1.08)
    axes.yaxis.set_major_formatter(lambda y, _: f"{y:.0%}")
    axes.set_ylabel("field accuracy")
    axes.grid(axis="y", alpha=0.3)
    if len(table.columns):
        axes.legend(fontsize=8)
    figure.tight_layout()
    note = "— marks a slice not measured for a variant (no labeled case of it)."
    if table.empty:
        note = "The cases carry no tags or no gold: no slice to show."
    path = _save(figure, out / "slices.png")
    return Chart(key="slices", title="Accuracy by slice", path=path, note=note, data=table)


def embedding_chart(view: RunView, *, out: Path) -> Chart | None:
    """Neighbour recall@k of each variant's embeddings against its footprint (`run --embeddings`);
    None when the run measured no embeddings."""
    entries = {e.name: e.embeddings for e in view.run.summary.variants if e.embeddings is not None}
    if not entries:
        return None
    footprint = _measured(variant_table(view)["footprint_mb"])
    recall = {name: e.neighbour_recall_at_k for name, e in entries.items()}
    points = {n: (m, r) for n, r in recall.items() if r is not None and (m := footprint.get(n)) is not None}
    figure = Figure(figsize=(7, 4.5))
    axes = figure.add_subplot()
    for name, (x, y) in points.items():
        axes.scatter(x, y, s=60, marker="*" if name == view.reference else "o", color="tab:blue", zorder=3)
        axes.annotate(name, (x, y), textcoords="offset points", xytext=(6, 6))
    k = next(iter(entries.values())).k
    axes.set_xlabel("footprint, MiB")
    axes.set_ylabel(f"neighbour recall@{k}")
    axes.set_ylim(top=1.02)
    axes.grid(alpha=0.3)
    axes.margins(0.2)
    left_out = sorted(set(entries) - set(points))
    note = f"Share of the reference's exact top-{k} neighbours each variant's index finds; star: reference."
    if left_out:
        note += f" Not plotted (recall or footprint not measured): {', '.join(left_out)}."
    path = _save(figure, out / "embeddings.png")
    drawn = pd.DataFrame(
        {"neighbour_recall_at_k": recall, "footprint_mb": {n: footprint.get(n) for n in recall}}
    )
    return Chart(
        key="embeddings", title="Embedding neighbour recall vs memory", path=path, note=note, data=drawn
    )


def draw_charts(view: RunView, *, out: Path) -> list[Chart]:
    """Draw every chart of the report into `out` (created if missing)."""
    out.mkdir(parents=True, exist_ok=True)
    charts = [
        accuracy_memory_chart(view, out=out),
        field_delta_heatmap(view, out=out),
        latency_chart(view, out=out),
        slice_chart(view, out=out),
    ]
    embeddings = embedding_chart(view, out=out)
    return charts if embeddings is None else [*charts, embeddings]
