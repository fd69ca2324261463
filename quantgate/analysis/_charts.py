"""The report's charts as PNG files, drawn with matplotlib's Agg renderer (no display needed).

Each chart takes frames from `quantgate.analysis._run_view` and writes one PNG. A figure that was not
measured is drawn as a gap or a grey `—` cell, never as 0, and the chart says what it left
out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from evaluators.comparison import Comparison
from quantgate.analysis._run_view import (
    RunView,
    accuracy_intervals,
    comparisons,
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


def _error_bars(axes: Axes, points: dict[str, tuple[float, float]], intervals: pd.DataFrame) -> None:
    """Each point's interval as a vertical bar, and its case count beside its name."""
    lows, highs = _measured(intervals["accuracy_low"]), _measured(intervals["accuracy_high"])
    cases = {str(name): int(count) for name, count in intervals["cases"].items()}
    by_footprint = sorted(points, key=lambda name: points[name][0])
    for name, (x, y) in points.items():
        low, high = lows[name], highs[name]
        if low is not None and high is not None:
            # The point is the pooled field accuracy, the bar the mean case accuracy's: equal when
            # every case scores the schema's fields; clipped so that a record lacking some cannot
            # turn a bar inside out.
            below, above = max(y - low, 0.0), max(high - y, 0.0)
            axes.errorbar(x, y, yerr=[[below], [above]], fmt="none", ecolor="tab:grey", capsize=4, zorder=2)
        above_point = by_footprint.index(name) % 2 == 0  # neighbours alternate: close points stay legible
        axes.annotate(
            f"{name} (n={cases[name]})",
            (x, y),
            textcoords="offset points",
            xytext=(6, 6 if above_point else -14),
        )


def accuracy_memory_chart(view: RunView, *, out: Path) -> Chart:
    """Field accuracy against model footprint per variant, Pareto frontier drawn and marked, with
    the confidence interval of each variant's mean case accuracy as a bar and its case count."""
    table = variant_table(view)
    intervals = accuracy_intervals(view).reindex(table.index)
    intervals["cases"] = intervals["cases"].fillna(0).astype(int)
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
    _error_bars(axes, points, intervals)
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
    note = (
        f"Bars: {view.gates.confidence:.0%} betting confidence interval of the mean case accuracy, valid "
        "at any number of cases (a case's accuracy is the mean of its field scores); n: the variant's "
        "labeled cases. Each variant is measured on its own cases, so a candidate that stopped early has "
        "fewer; the heatmap compares variants on paired cases. "
        f"Frontier: {', '.join(frontier) or _MISSING}. Star: the reference."
    )
    if left_out:
        note += f" Not plotted (accuracy or footprint not measured): {', '.join(left_out)}."
    path = _save(figure, out / "accuracy_memory.png")
    drawn = table[["field_accuracy", "footprint_mb"]].assign(
        accuracy_low=intervals["accuracy_low"],
        accuracy_high=intervals["accuracy_high"],
        cases=intervals["cases"],
        on_frontier=table.index.isin(frontier),
    )
    return Chart(key="accuracy_memory", title="Accuracy vs memory", path=path, note=note, data=drawn)


def _annotate_cells(axes: Axes, values: np.ndarray, cases: np.ndarray, few: np.ndarray, span: float) -> None:
    """Each cell's delta in points and its paired cases; grey text on a cell with too few."""
    for (row, col), value in np.ndenumerate(values):
        if math.isnan(value):
            axes.text(col, row, _MISSING, ha="center", va="center", fontsize=8)
            continue
        dark = not few[row, col] and abs(value) > 0.6 * span  # a deep colour: white text reads
        color = "dimgrey" if few[row, col] else "white" if dark else "black"
        text = f"{value * 100:+.1f}\nn={cases[row, col]}"
        axes.text(col, row, text, ha="center", va="center", fontsize=7, color=color)


def _paired_counts(found: Mapping[str, Comparison], deltas: pd.DataFrame) -> pd.DataFrame:
    """The paired cases behind each cell of `deltas` (0 where there is none)."""
    counts = {name: {field: d.cases for field, d in c.fields.items()} for name, c in found.items()}
    table = pd.DataFrame(counts, index=deltas.index, columns=deltas.columns, dtype=float)
    return table.fillna(0).astype(int)


def _greyed_note(deltas: pd.DataFrame, cases: pd.DataFrame, minimum: int) -> str:
    """Which cells are greyed for too few paired cases, by variant."""
    greyed = []
    for name in deltas.columns:
        fields = [
            f for f in deltas.index if not pd.isna(deltas.loc[f, name]) and cases.loc[f, name] < minimum
        ]
        if fields:
            counts = sorted({int(cases.loc[f, name]) for f in fields})
            which = "every field" if len(fields) == len(deltas.index) else ", ".join(map(str, fields))
            greyed.append(f"{name} ({which}; {'/'.join(map(str, counts))} paired cases)")
    if not greyed:
        return f"Every cell rests on at least {minimum} paired cases."
    return (
        f"Grey cells (value still written): fewer than {minimum} paired cases (the gates' "
        f"min_slice_cases), too few to read the delta from: {', '.join(greyed)}."
    )


def field_delta_heatmap(view: RunView, *, out: Path) -> Chart:
    """Per field and quantized variant: accuracy minus the reference's in points, with the paired
    cases behind each cell; cells with fewer than the gates' `min_slice_cases` are greyed."""
    found = comparisons(view)
    deltas = field_deltas(view, found=found)
    cases = _paired_counts(found, deltas)
    minimum = view.gates.min_slice_cases
    values = deltas.to_numpy(dtype=float)
    few = cases.to_numpy() < minimum
    height = 1.2 + 0.5 * max(len(deltas.index), 1)
    figure = Figure(figsize=(max(4.5, 1.6 + 1.3 * max(len(deltas.columns), 1)), height))
    axes = figure.add_subplot()
    if values.size:
        coloured = np.where(few, np.nan, values)
        finite = coloured[~np.isnan(coloured)]
        span = max(float(np.max(np.abs(finite))) if finite.size else 0.0, _MIN_SPAN)
        norm = TwoSlopeNorm(vmin=-span, vcenter=0.0, vmax=span)
        image = axes.imshow(np.ma.masked_invalid(coloured), cmap="RdBu", norm=norm, aspect="auto")
        bar = figure.colorbar(image, ax=axes, label="Δ accuracy vs reference, points")
        bar.ax.yaxis.set_major_formatter(lambda v, _: f"{v * 100:+.0f}")
        _annotate_cells(axes, values, cases.to_numpy(), few, span)
    axes.set_facecolor("#dddddd")
    axes.set_xticks(range(len(deltas.columns)), labels=list(deltas.columns))
    axes.set_yticks(range(len(deltas.index)), labels=list(deltas.index))
    axes.set_title(f"variant minus {view.reference}, points")
    figure.tight_layout()
    note = (
        "Blue: the variant gets the field right more often than the reference; red: less often. "
        "n: the paired labeled cases behind the cell (the cases both ran). "
        + _greyed_note(deltas, cases, minimum)
    )
    if not values.size:
        note = "No quantized variant has paired labeled cases: no delta to show."
    path = _save(figure, out / "field_deltas.png")
    title = "Field accuracy delta vs the reference"
    data = pd.concat([deltas, cases.add_suffix(" cases")], axis=1).rename_axis(columns="variant")
    return Chart(key="field_deltas", title=title, path=path, note=note, data=data)


_LATENCY_PANELS = (("ttft_s", "time to first token"), ("total_s", "total time"))


@dataclass(frozen=True, kw_only=True)
class _LatencyPanel:
    """One latency panel: the variants drawn in it and the cases every one of them measured."""

    column: str
    title: str
    measured: dict[str, int]  # cases measured, per drawn variant
    common: frozenset[str]
    left_out: tuple[str, ...]  # variants with no case measured


def _latency_panel(times: pd.DataFrame, column: str, title: str, variants: Sequence[str]) -> _LatencyPanel:
    cases = {
        name: set(times.loc[(times["variant"] == name) & times[column].notna(), "case_id"])
        for name in variants
    }
    drawn = [name for name in variants if cases[name]]
    common = frozenset(set.intersection(*(cases[name] for name in drawn))) if drawn else frozenset()
    return _LatencyPanel(
        column=column,
        title=title,
        measured={name: len(cases[name]) for name in drawn},
        common=common,
        left_out=tuple(name for name in variants if name not in drawn),
    )


def _draw_latency(axes: Axes, panel: _LatencyPanel, times: pd.DataFrame) -> None:
    series = {
        name: times.loc[(times["variant"] == name) & times["case_id"].isin(panel.common), panel.column]
        for name in panel.measured
    }
    if panel.common:
        shown = list(series)
        axes.boxplot([series[n].to_numpy() for n in shown], tick_labels=shown, showfliers=False)
        for position, name in enumerate(shown, start=1):
            jitter = np.linspace(-0.12, 0.12, len(series[name]))
            axes.scatter(position + jitter, series[name], s=10, alpha=0.6, color="tab:blue", zorder=3)
    elif panel.measured:
        axes.text(0.5, 0.5, "no case every variant ran", ha="center", va="center", transform=axes.transAxes)
    axes.set_title(panel.title)
    axes.set_ylabel("seconds")
    axes.grid(axis="y", alpha=0.3)


def _latency_sentence(panel: _LatencyPanel) -> str:
    """What a panel draws, without its title: the common cases and each variant's own count."""
    counts = ", ".join(f"{name} {n}" for name, n in panel.measured.items())
    if not panel.common:
        return f"no case was measured for every variant ({counts}): nothing drawn"
    text = f"on the {len(panel.common)} cases every variant ran"
    if any(n != len(panel.common) for n in panel.measured.values()):
        text += f" (cases measured: {counts}; the others are not drawn)"
    return text


def _latency_note(panels: Sequence[_LatencyPanel]) -> str:
    drawn = [p for p in panels if p.measured]
    sentences = {p.title: _latency_sentence(p) for p in drawn}
    note = "One point per case; the variants are drawn on the same cases so that they compare."
    if len(set(sentences.values())) == 1:
        note += f" {' and '.join(sentences).capitalize()}: {next(iter(sentences.values()))}."
    else:
        note += "".join(f" {title.capitalize()}: {text}." for title, text in sentences.items())
    for panel in panels:
        if panel.left_out:
            note += f" Left out of {panel.title} (not measured): {', '.join(panel.left_out)}."
    return note


def latency_chart(view: RunView, *, out: Path) -> Chart:
    """Distributions of time to first token and total time per variant (box plot and points), on the
    cases every drawn variant measured."""
    times = latencies(view)
    panels = [_latency_panel(times, column, title, view.variants) for column, title in _LATENCY_PANELS]
    figure = Figure(figsize=(8, 4))
    for index, panel in enumerate(panels):
        _draw_latency(figure.add_subplot(1, 2, index + 1), panel, times)
    figure.tight_layout()
    path = _save(figure, out / "latency.png")
    drawn = times.copy()
    for panel in panels:
        kept = drawn["variant"].isin(list(panel.measured)) & drawn["case_id"].isin(panel.common)
        drawn[panel.column] = drawn[panel.column].where(kept)
    drawn = drawn.dropna(subset=[p.column for p in panels], how="all").reset_index(drop=True)
    return Chart(
        key="latency", title="Latency distributions", path=path, note=_latency_note(panels), data=drawn
    )


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
    note = (
        "n: the reference's cases of the slice; a candidate that stopped early has fewer. "
        "— marks a slice not measured for a variant (no labeled case of it)."
    )
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
