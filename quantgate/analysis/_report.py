"""`quantgate report RUN_DIR`: one self-contained HTML page per run, plus its charts as PNGs.

The page (`RUN_DIR/report/report.html`) holds the summary table, the decision with every
gate's verdict, the charts (embedded as data URIs, so it opens without a network or the
PNG files) and a failure browser: each case a variant got wrong, with its text, gold, the
reference's and the variant's output, the differing fields highlighted and filters by
variant, field and slice. An incomplete run (`quantgate.rundir._completeness`: interrupted,
killed, a damaged records.jsonl) is reported with what it holds, under a notice at the top
listing what it lacks. Every string from the run (case text, outputs, names) goes
through Jinja's autoescaping: hostile case text renders as text. The data comes from
`quantgate.analysis._run_view`, the same view the notebooks use.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined

from evaluators.kinds import kind_named
from quantgate._formatting import MISSING, interval_points, number, percent, points
from quantgate._hardware import package_version
from quantgate.analysis._case_diff import case_diff
from quantgate.analysis._run_view import RunView, failing_cases, load_run_view, only_variant_fails
from quantgate.analysis._task_report import task_context
from quantgate.capacity._capacity_rows import capacity_section
from quantgate.render._calibration_rows import CALIBRATION_NOTE, calibration_sentence, calibration_table
from quantgate.render._cost_rows import cost_rows
from quantgate.render._embedding_table import embedding_rows
from quantgate.render._fidelity_tail import run_fidelity_tail
from quantgate.render._flip_rows import FLIP_HEADER, FLIP_NOTE, flip_rows
from quantgate.render._latency_pairs import latency_pairs
from quantgate.render._load_table import load_rows
from quantgate.render._measurement_notes import busy_lines, measurement_rows
from quantgate.render._noise_floor_line import noise_floor_text
from quantgate.render._runtime_rows import RUNTIME_NOTE, runtime_table
from quantgate.render._summary_table import BASELINE_NOTE, below_baseline, summary_rows
from quantgate.rundir._decision import Decision, VariantDecision
from quantgate.rundir._files import REPORT_DIR
from quantgate.rundir._lines import CaseRecord

if TYPE_CHECKING:
    from quantgate.analysis._charts import Chart

REPORT_HTML = "report.html"
DEFAULT_MAX_FAILURES = 1000
_NO_OUTPUT = f"{MISSING} (no output)"


def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("quantgate.analysis", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _show(value: Any) -> str:
    """A field value as text: strings as they are, anything else as JSON (None is `null`)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _headline(decision: Decision) -> str:
    chosen = decision.recommended
    if chosen is None:
        return f"No variant passes every gate, not even the reference (exit status {decision.exit_status})."
    if decision.recommended_is_reference:
        return (
            f"Keep the reference, {chosen}: no quantized variant passes every gate "
            f"(exit status {decision.exit_status})."
        )
    if decision.recommended_by == "cost" and decision.costs is not None:
        total = number(decision.costs.variants[chosen].total_per_1000, "{:.4g}")
        return (
            f"Recommended: {chosen}, the cheapest expected cost ({total} per 1,000 extractions) "
            "among the variants passing every gate."
        )
    footprint = decision.variants[chosen].footprint_mb
    size = number(footprint, "{:.0f} MiB")
    return f"Recommended: {chosen}, the smallest footprint ({size}) among the variants passing every gate."


def _decision_row(name: str, section: VariantDecision) -> dict[str, Any]:
    overall = section.comparison.overall if section.comparison else None
    interval = overall.interval if overall else None
    fidelity = section.token_fidelity
    kld = fidelity.kld_mean if fidelity else None
    top1 = fidelity.top1_agreement if fidelity else None
    return {
        "name": name,
        "is_reference": section.is_reference,
        "passes": section.passes,
        "gates_verdict": section.verdict,
        "status": section.status,
        "error": section.error,
        "delta": points(overall.delta if overall else None),
        "interval": interval_points(interval),
        "verdict": overall.verdict if overall else MISSING,
        "kld": number(kld, "{:.4f}"),
        "top1": percent(top1),
        "gates": [g.model_dump(mode="json") for g in section.gates],
        "open": section.open.message if section.open else None,
    }


def _decision_context(decision: Decision | None) -> dict[str, Any] | None:
    if decision is None:
        return None
    variants = [_decision_row(name, section) for name, section in decision.variants.items()]
    costs = cost_rows(decision.costs) if decision.costs is not None else None
    resume = None
    if any(v["open"] for v in variants):
        resume = "quantgate run --resume RUN_DIR --budget MINUTES goes on with them on the same sequence."
    return {"headline": _headline(decision), "variants": variants, "cost_rows": costs, "resume": resume}


def _diff_rows(view: RunView, *, case_id: str, variant: str, labeled: bool) -> list[dict[str, Any]]:
    diff = case_diff(view, case_id=case_id, variant=variant)
    rows = []
    for field, row in diff.iterrows():
        rows.append(
            {
                "field": str(field),
                "gold": _show(row["gold"]) if labeled else MISSING,
                "reference": _show(row["reference"]) if row["reference_answered"] else _NO_OUTPUT,
                "variant": _show(row["variant"]) if row["variant_answered"] else _NO_OUTPUT,
                "score": MISSING if pd.isna(row["variant_score"]) else f"{row['variant_score']:.2f}",
                "outcome": MISSING if row["outcome"] is None else str(row["outcome"]),
                "wrong": bool(row["wrong"]),
                "differs": bool(row["differs"]) and variant != view.reference,
            }
        )
    return rows


def _error(record: CaseRecord) -> str | None:
    """What went wrong with a case as a whole: its error kind and message or validation errors."""
    kind = record.error_kind
    if not kind:
        return None
    detail = record.error or "; ".join(record.validation_errors)
    return f"{kind}: {detail}" if detail else str(kind)


def _failure_items(view: RunView, *, limit: int) -> tuple[list[dict[str, Any]], int]:
    """The failure browser's entries (at most `limit`) and how many there are in all."""
    failing = failing_cases(view)
    lost = only_variant_fails(view)
    regressed = set(zip(lost["variant"], lost["case_id"], strict=True))
    order = {name: i for i, name in enumerate((*view.quantized, view.reference))}
    failing["regression"] = [
        pair in regressed for pair in zip(failing["variant"], failing["case_id"], strict=True)
    ]
    failing["rank"] = failing["variant"].map(order)
    failing = failing.sort_values(["regression", "rank"], ascending=[False, True], kind="stable")
    items = []
    for entry in failing.head(limit).to_dict("records"):
        case_id, variant = str(entry["case_id"]), str(entry["variant"])
        case = view.case(case_id)
        labeled = case is not None and case.expected is not None
        accuracy = entry["field_accuracy"]
        record = view.records[variant][case_id]
        items.append(
            {
                "variant": variant,
                "case_id": case_id,
                "tags": list(entry["tags"]),
                "fields": list(entry["fields"]),
                "regression": bool(entry["regression"]),
                "accuracy": MISSING if pd.isna(accuracy) else percent(accuracy, 0),
                "error": _error(record),
                "text": case.text if case is not None else None,
                "raw": None if record.valid else record.raw,
                "rows": []
                if case is None
                else _diff_rows(view, case_id=case_id, variant=variant, labeled=labeled),
            }
        )
    return items, len(failing)


def _chart_context(charts: list[Chart]) -> list[dict[str, str]]:
    return [
        {
            "key": chart.key,
            "title": chart.title,
            "note": chart.note,
            "src": "data:image/png;base64," + base64.b64encode(chart.path.read_bytes()).decode("ascii"),
        }
        for chart in charts
    ]


def _run_context(view: RunView) -> dict[str, Any]:
    summary = view.run.summary
    return {
        "run_id": summary.run_id,
        "status": summary.status,
        "dataset": summary.dataset.name,
        "cases": summary.dataset.cases,
        "reference": view.reference,
        "kind": view.run.summary.dataset.task or "extraction",
        "case_score_title": kind_named(summary.dataset.task).case_score_title,
        "generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "version": package_version("quantgate"),
    }


def render_report(view: RunView, *, charts: list[Chart], max_failures: int = DEFAULT_MAX_FAILURES) -> str:
    """The report page as HTML text.

    Args:
        view: The run.
        charts: The charts to embed (their PNG files are read and inlined).
        max_failures: At most this many case x variant entries in the failure browser.
    """
    items, total = _failure_items(view, limit=max_failures)
    header, *rows = summary_rows(view.run.summary)
    below = [below_baseline(entry) for entry in view.run.summary.variants]
    load = view.run.summary.load
    embedded = [v for v in view.run.summary.variants if v.embeddings is not None]
    embeddings = embedding_rows([(v.name, v.file_size_mb, v.embeddings, None) for v in embedded])
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            run=_run_context(view),
            incomplete=list(view.completeness.problems),
            summary_header=header,
            summary_rows=rows,
            summary_below_baseline=below,
            baseline_note=BASELINE_NOTE if any(below) else None,
            noise_floor=noise_floor_text(view.run.summary),
            latency=latency_pairs(view.run.summary),
            load_rows=load_rows(load) if load else None,
            embedding_rows=embeddings if embedded else None,
            fidelity=run_fidelity_tail(view.run.summary),
            decision=_decision_context(view.decision),
            capacity=capacity_section(view.decision, load) if view.decision else None,
            conditions=measurement_rows(view.run.summary),
            busy_lines=busy_lines(view.run.summary),
            runtime_rows=runtime_table(view.decision) if view.decision else None,
            calibration_rows=calibration_table(view.decision) if view.decision else None,
            calibration_sentences=[calibration_sentence(c) for c in view.decision.calibrations]
            if view.decision
            else [],
            calibration_note=CALIBRATION_NOTE,
            flip_header=FLIP_HEADER,
            flip_rows=flip_rows(view.decision) if view.decision else None,
            flip_note=FLIP_NOTE,
            runtime_note=RUNTIME_NOTE,
            task=task_context(view),
            charts=_chart_context(charts),
            failures=items,
            failures_total=total,
            filter_variants=list(view.variants),
            filter_fields=sorted({f for item in items for f in item["fields"]}),
            filter_slices=sorted({t for item in items for t in item["tags"]}),
        )
    )


def write_report(run_dir: str | Path, *, max_failures: int = DEFAULT_MAX_FAILURES) -> Path:
    """Write `RUN_DIR/report/report.html` and the charts beside it as PNGs.

    Args:
        run_dir: A run directory written by `quantgate run` (decided or not).
        max_failures: At most this many case x variant entries in the failure browser.

    Returns:
        The path of report.html.
    """
    from quantgate.analysis._charts import draw_charts  # matplotlib loads only when a report is drawn

    view = load_run_view(run_dir)
    out = view.run.directory / REPORT_DIR
    charts = draw_charts(view, out=out)
    page = out / REPORT_HTML
    page.write_text(render_report(view, charts=charts, max_failures=max_failures), encoding="utf-8")
    return page
