"""`quantgate report RUN_DIR`: one self-contained HTML page per run, plus its charts as PNGs.

The page (`RUN_DIR/report/report.html`) holds the summary table, the decision with every
gate's verdict, the charts (embedded as data URIs, so it opens without a network or the
PNG files) and a failure browser: each case a variant got wrong, with its text, gold, the
reference's and the variant's output, the differing fields highlighted and filters by
variant, field and slice. Every string from the run (case text, outputs, names) goes
through Jinja's autoescaping: hostile case text renders as text. The data comes from
`quantgate.explore`, the same view the notebooks use.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined

from quantgate.explore import RunView, case_diff, failing_cases, load_run_view, only_variant_fails
from quantgate.hardware import package_version
from quantgate.load_table import load_rows
from quantgate.summary_table import summary_rows

if TYPE_CHECKING:
    from quantgate.report_charts import Chart

REPORT_DIR = "report"
REPORT_HTML = "report.html"
DEFAULT_MAX_FAILURES = 1000
_MISSING = "—"
_NO_OUTPUT = "— (no output)"


def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("quantgate", "templates"),
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


def _headline(decision: Mapping[str, Any]) -> str:
    chosen = decision.get("recommended")
    if chosen is None:
        return "No variant passes every gate (exit status 3)."
    if decision.get("recommended_is_reference"):
        return f"Keep the reference, {chosen}: no quantized variant passes every gate."
    footprint = decision["variants"][chosen].get("footprint_mb")
    size = _MISSING if footprint is None else f"{footprint:.0f} MiB"
    return f"Recommended: {chosen}, the smallest footprint ({size}) among the variants passing every gate."


def _pts(value: float | None) -> str:
    return _MISSING if value is None else f"{value * 100:+.1f}"


def _decision_context(decision: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if decision is None:
        return None
    variants = []
    for name, section in decision["variants"].items():
        overall = (section.get("comparison") or {}).get("overall") or {}
        interval = overall.get("interval")
        fidelity = section.get("token_fidelity") or {}
        variants.append(
            {
                "name": name,
                "is_reference": bool(section.get("is_reference")),
                "passes": bool(section.get("passes")),
                "status": section.get("status"),
                "error": section.get("error"),
                "delta": _pts(overall.get("delta")),
                "interval": f"[{_pts(interval['low'])}, {_pts(interval['high'])}]" if interval else _MISSING,
                "verdict": overall.get("verdict") or _MISSING,
                "kld": _MISSING if fidelity.get("kld_mean") is None else f"{fidelity['kld_mean']:.4f}",
                "top1": _MISSING
                if fidelity.get("top1_agreement") is None
                else f"{fidelity['top1_agreement']:.1%}",
                "gates": section.get("gates") or [],
            }
        )
    return {"headline": _headline(decision), "variants": variants}


def _diff_rows(view: RunView, *, case_id: str, variant: str, labeled: bool) -> list[dict[str, Any]]:
    diff = case_diff(view, case_id=case_id, variant=variant)
    rows = []
    for field, row in diff.iterrows():
        rows.append(
            {
                "field": str(field),
                "gold": _show(row["gold"]) if labeled else _MISSING,
                "reference": _show(row["reference"]) if row["reference_answered"] else _NO_OUTPUT,
                "variant": _show(row["variant"]) if row["variant_answered"] else _NO_OUTPUT,
                "score": _MISSING if pd.isna(row["variant_score"]) else f"{row['variant_score']:.2f}",
                "outcome": _MISSING if row["outcome"] is None else str(row["outcome"]),
                "wrong": bool(row["wrong"]),
                "differs": bool(row["differs"]) and variant != view.reference,
            }
        )
    return rows


def _error(record: Mapping[str, Any]) -> str | None:
    """What went wrong with a case as a whole: its error kind and message or validation errors."""
    kind = record.get("error_kind")
    if not kind:
        return None
    detail = record.get("error") or "; ".join(str(e) for e in record.get("validation_errors") or [])
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
                "accuracy": _MISSING if pd.isna(accuracy) else f"{accuracy:.0%}",
                "error": _error(record),
                "text": case.text if case is not None else None,
                "raw": None if record.get("valid") else record.get("raw"),
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
    dataset = summary.get("dataset") or {}
    return {
        "run_id": summary.get("run_id") or view.run.directory.name,
        "status": summary.get("status") or _MISSING,
        "dataset": dataset.get("name") or _MISSING,
        "cases": dataset.get("cases", _MISSING),
        "reference": view.reference,
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
    load = view.run.summary.get("load")
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            run=_run_context(view),
            summary_header=header,
            summary_rows=rows,
            load_rows=load_rows(load) if load else None,
            decision=_decision_context(view.decision),
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
    from quantgate.report_charts import draw_charts  # matplotlib loads only when a report is drawn

    view = load_run_view(run_dir)
    out = view.run.directory / REPORT_DIR
    charts = draw_charts(view, out=out)
    page = out / REPORT_HTML
    page.write_text(render_report(view, charts=charts, max_failures=max_failures), encoding="utf-8")
    return page
