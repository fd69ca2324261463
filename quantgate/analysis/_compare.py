"""`quantgate compare RUN_A RUN_B`: what changed between two runs, with the same statistics.

Typical use: the same variants and dataset before and after upgrading the runtime or the
model. Variants are matched by name and cases by id; run A plays the reference's part,
so a delta is B minus A, with the betting confidence interval (valid at any number of cases; the
paired bootstrap beside it, descriptive), McNemar's test and an equivalence verdict, overall, per
field and per slice. Operational figures (validity, errors, latency, memory, agreement with each
run's reference) are shown side by side from the two summaries, and so is token fidelity's
headline (`quantgate.render._fidelity_tail.HEADLINE`: KLD mean and p99, the largest drop of the
reference's top-token probability, top-1 agreement on structural and value tokens), titled and
formatted as the fidelity tables are; a figure a run did not measure is None (shown as missing).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evaluators.comparison import ComparisonOptions, compare_paired
from quantgate._formatting import figure, interval_points, number, points
from quantgate.inputs._gates import Gates, comparison_options
from quantgate.render._fidelity_tail import HEADLINE, TAIL_COLUMNS
from quantgate.rundir._completeness import Completeness, completeness_of
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._pairing import paired_cases
from quantgate.rundir._store import LineProblem, Run, latest_records, load_run
from quantgate.rundir._summary import VariantEntry

_FIGURES = (
    "field_accuracy",
    "format_validity",
    "errors",
    "latency_s_p95",
    "tokens_per_s",
    "memory_mb",
    "model_memory_mb",
    "agreement_with_reference",
)


def _side_by_side(va: Any, vb: Any) -> dict[str, Any]:
    return {"a": va, "b": vb, "change": vb - va if va is not None and vb is not None else None}


def _figures(a: VariantEntry, b: VariantEntry) -> dict[str, dict[str, Any]]:
    """The summaries' figures, then token fidelity's headline (None where a run has no token
    fidelity, or a run written before a figure was measured)."""
    figures = {key: _side_by_side(getattr(a, key), getattr(b, key)) for key in _FIGURES}
    for key in HEADLINE:
        va = getattr(a.token_fidelity, key) if a.token_fidelity is not None else None
        vb = getattr(b.token_fidelity, key) if b.token_fidelity is not None else None
        figures[key] = _side_by_side(va, vb)
    return figures


def _fidelity_line(figures: Mapping[str, Mapping[str, Any]]) -> str:
    """Token fidelity's headline, A -> B, each figure as the fidelity tables title and format it"""
    if all(figures[key]["a"] is None and figures[key]["b"] is None for key in HEADLINE):
        return "  token fidelity: not measured in either run"
    cells = []
    for key in HEADLINE:
        column, side = TAIL_COLUMNS[key], figures[key]
        cells.append(f"{column.title} {column.format(side['a'])} -> {column.format(side['b'])}")
    return "  token fidelity: " + "  ".join(cells)


def _read(run: Run) -> tuple[dict[str, dict[str, CaseRecord]], Completeness]:
    """A run's latest records (the lines that cannot be read left out) and its completeness."""
    line_problems: list[LineProblem] = []
    records = latest_records(run.records(problems=line_problems))
    return records, completeness_of(run.summary, records, line_problems)


def compare_runs(
    run_a: str | Path,
    run_b: str | Path,
    *,
    options: ComparisonOptions | None = None,
) -> dict[str, Any]:
    """Compare every variant present in both runs.

    Args:
        run_a: The earlier run (the baseline).
        run_b: The later run.
        options: Margin, minimum cases and interval settings (default: the gates' defaults).

    Returns:
        A JSON-ready dict: per variant the paired comparison (B minus A) and the figures;
        `incomplete` lists, per run (`a`, `b`), what an incomplete run lacks (empty: complete).
        An incomplete run is compared on what its directory holds.
    """
    options = options or comparison_options(Gates())
    a, b = load_run(run_a), load_run(run_b)
    (records_a, complete_a), (records_b, complete_b) = _read(a), _read(b)
    entries_a = {e.name: e for e in a.summary.variants}
    entries_b = {e.name: e for e in b.summary.variants}
    common = [n for n in entries_a if n in entries_b]
    variants = {}
    for name in common:
        paired = paired_cases(records_a.get(name, {}), records_b.get(name, {}))
        comparison = compare_paired(paired, options=options) if paired else None
        variants[name] = {
            "paired_cases": len(paired),
            "comparison": comparison.as_dict() if comparison else None,
            "figures": _figures(entries_a[name], entries_b[name]),
        }
    dataset_a, dataset_b = a.summary.dataset, b.summary.dataset
    return {
        "run_a": a.summary.run_id,
        "run_b": b.summary.run_id,
        "same_dataset": dataset_a.sha256 == dataset_b.sha256,
        "incomplete": {"a": list(complete_a.problems), "b": list(complete_b.problems)},
        "datasets": {"a": dataset_a.model_dump(mode="json"), "b": dataset_b.model_dump(mode="json")},
        "options": {
            "margin": options.margin,
            "min_cases": options.min_cases,
            "confidence": options.confidence,
        },
        "variants": variants,
        "only_in_a": [n for n in entries_a if n not in entries_b],
        "only_in_b": [n for n in entries_b if n not in entries_a],
    }


def _delta_row(label: str, d: Mapping[str, Any]) -> str:
    ci, p = interval_points(d.get("interval")), number(d.get("mcnemar_p"))
    return f"  {label:<32} {d['cases']:>5}  {points(d['delta']):>7}  {ci:<16} {p:>9}  {d['verdict']}"


def render_comparison(result: Mapping[str, Any]) -> str:
    """A plain-text report of `compare_runs`' result."""
    lines = [f"run A {result['run_a']}  ->  run B {result['run_b']}   (deltas are B - A, in points)"]
    for side in ("a", "b"):
        problems = result["incomplete"][side]
        if problems:
            lines.append(f"warning: run {side.upper()} is incomplete; it is compared on what it holds:")
            lines += [f"  - {problem}" for problem in problems]
    if not result["same_dataset"]:
        lines.append("warning: the runs used different data (dataset sha256 differs); cases are paired by id")
    for name in result["only_in_a"] + result["only_in_b"]:
        lines.append(f"note: variant {name} is in one run only")
    header = f"  {'':<32} {'cases':>5}  {'Δ':>7}  {'95% CI':<16} {'McNemar p':>9}  verdict"
    for name, v in result["variants"].items():
        lines += ["", f"{name}: {v['paired_cases']} paired cases"]
        figures = "  ".join(
            f"{k} {figure(f['a'])} -> {figure(f['b'])}"
            for k, f in v["figures"].items()
            if k not in HEADLINE and (f["a"] is not None or f["b"] is not None)
        )
        lines += [f"  {figures}", _fidelity_line(v["figures"])]
        comparison = v["comparison"]
        if comparison is None:
            lines.append("  no labeled cases in common: accuracy not compared")
            continue
        lines.append(header)
        lines.append(_delta_row("overall", comparison["overall"]))
        lines += [_delta_row(f"field {k}", d) for k, d in comparison["fields"].items()]
        lines += [_delta_row(f"slice {k}", d) for k, d in comparison["slices"].items()]
    return "\n".join(lines)
