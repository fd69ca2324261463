"""decision.md: the decision record rendered for people (decision.json is the source)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from quantgate.formatting import MISSING, interval_points, number, percent, points
from quantgate.rundir.decision import Decision


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return [*lines, ""]


def _headline(decision: Mapping[str, Any]) -> list[str]:
    chosen = decision["recommended"]
    if chosen is None:
        text = "**No variant passes every gate.** Exit status 3."
    elif decision["recommended_is_reference"]:
        text = (
            f"**Keep the reference, {chosen}.** No quantized variant passes every gate; the "
            "reference does. Exit status 0."
        )
    else:
        section = decision["variants"][chosen]
        footprint = number(section["footprint_mb"], "{:.0f}")
        text = (
            f"**Recommended: {chosen}**, the smallest footprint ({footprint} MiB, "
            f"{section['footprint_source']}) among the variants that pass every gate. Exit status 0."
        )
    record = decision["record"]
    dataset = record.get("dataset") or {}
    return [
        f"# Decision for run {record.get('run_id')}",
        "",
        text,
        "",
        f"Reference: {decision['reference']}. Dataset: {dataset.get('name')}, {dataset.get('cases')} cases "
        f"(sha256 {dataset.get('sha256')}). Run status: {record.get('run_status')}.",
        "",
    ]


def _overview(decision: Mapping[str, Any]) -> list[str]:
    rows = []
    for name, v in decision["variants"].items():
        if v["status"] != "ok":
            rows.append([name, v["status"], *[MISSING] * 10])
            continue
        overall = (v.get("comparison") or {}).get("overall") or {}
        fidelity = v.get("token_fidelity") or {}
        rows.append(
            [
                name + (" (reference)" if v["is_reference"] else ""),
                "pass" if v["passes"] else "fail",
                number(v["footprint_mb"], "{:.0f}"),
                points(overall.get("delta")),
                interval_points(overall.get("interval")),
                overall.get("verdict", MISSING),
                f"{overall['reference_only']}/{overall['variant_only']}" if overall else MISSING,
                number(overall.get("mcnemar_p")),
                percent(v["measured"]["format_validity"]),
                percent((v.get("agreement") or {}).get("overall")),
                number(fidelity.get("kld_mean"), "{:.4f}"),
                percent(fidelity.get("top1_agreement")),
            ]
        )
    header = [
        "variant",
        "gates",
        "footprint MiB",
        "Δ acc (pts)",
        "95% CI",
        "verdict",
        "b/c",
        "McNemar p",
        "valid",
        "agreement",
        "KLD mean",
        "top-1",
    ]
    note = (
        "Δ acc: field accuracy minus the reference's on the same cases, with its paired bootstrap "
        "interval and the equivalence verdict. b/c: cases exactly right (every field) for the "
        "reference only / for the variant only, the discordant pairs of McNemar's exact test. "
        "Agreement: field-level agreement with the reference's own outputs (no gold needed). KLD "
        "and top-1: token-level fidelity to the reference by teacher forcing (nats; see README)."
    )
    return ["## Variants", "", *_table(header, rows), note, ""]


def _gates(decision: Mapping[str, Any]) -> list[str]:
    lines = ["## Gates", ""]
    settings = [
        [k, "off" if v is None else str(v)] for k, v in decision["gates"].items() if k != "format_version"
    ]
    lines += _table(["gate", "threshold"], settings)
    for name, v in decision["variants"].items():
        if not v.get("gates"):
            continue
        rows = [[g["gate"], g["status"], g["evidence"]] for g in v["gates"]]
        lines += [f"### {name}", "", *_table(["gate", "status", "evidence"], rows)]
    return lines


def _deltas(decision: Mapping[str, Any]) -> list[str]:
    lines = ["## Paired deltas per field and slice", ""]
    header = ["", "cases", "reference", "variant", "Δ (pts)", "95% CI", "b/c", "McNemar p", "verdict"]
    for name, v in decision["variants"].items():
        comparison = v.get("comparison")
        if not comparison:
            continue
        rows = []
        for kind in ("fields", "slices"):
            for key, d in comparison[kind].items():
                rows.append(
                    [
                        f"{kind[:-1]} {key}",
                        str(d["cases"]),
                        percent(d["reference"]),
                        percent(d["variant"]),
                        points(d["delta"]),
                        interval_points(d["interval"]),
                        f"{d['reference_only']}/{d['variant_only']}",
                        number(d["mcnemar_p"]),
                        d["verdict"],
                    ]
                )
        lines += [f"### {name} vs {decision['reference']}", "", *_table(header, rows)]
    return lines


def _regressions(decision: Mapping[str, Any]) -> list[str]:
    lines = ["## Regression cases (reference right, variant wrong)", ""]
    for name, v in decision["variants"].items():
        found = v.get("regressions") or []
        if v.get("is_reference") or v["status"] != "ok":
            continue
        exported = decision["regression_sets"].get(name) or {}
        where = f" Exported as a dataset: `{exported['path']}`." if exported.get("path") else ""
        lines.append(f"- **{name}**: {len(found)} case(s).{where}")
        lines += [f"  - {r['case_id']}: {', '.join(r['fields'])}" for r in found[:20]]
        if len(found) > 20:
            lines.append(f"  - … and {len(found) - 20} more (decision.json has them all)")
    return [*lines, ""]


def _rollback(decision: Mapping[str, Any]) -> list[str]:
    rollback = decision.get("rollback")
    if not rollback:
        return ["## Rollback signals", "", "No variant was chosen, so there is nothing to watch.", ""]
    rows = [
        [s["metric"], s["direction"], f"{s['threshold']:.4g}", f"{s['measured']:.4g}", s["derivation"]]
        for s in rollback["signals"]
    ]
    return [
        "## Rollback signals",
        "",
        f"Roll {rollback['variant']} back when any of these holds over a window of at least "
        f"{rollback['window_cases']} production calls:",
        "",
        *_table(["metric", "when", "threshold", "measured", "derived as"], rows),
    ]


def _record(decision: Mapping[str, Any]) -> list[str]:
    record = decision["record"]
    rows = []
    for name, meta in record["variants"].items():
        runtime = meta.get("runtime") or {}
        rows.append(
            [
                name,
                str(meta.get("quantization") or MISSING),
                str(meta.get("method") or MISSING),
                str(meta.get("calibration") or MISSING),
                f"{runtime.get('name', MISSING)} {runtime.get('version', '')}".strip(),
                str(meta.get("sha256") or meta.get("digest") or MISSING),
            ]
        )
    hardware = record.get("hardware") or {}
    stats = record["statistics"]
    return [
        "## Record",
        "",
        *_table(["variant", "precision", "method", "calibration", "runtime", "model sha256 / digest"], rows),
        f"- Hardware: {', '.join(f'{k}: {v}' for k, v in hardware.items())}",
        f"- Run {record.get('run_id')} with quantgate {record.get('run_quantgate_version')}; decided with "
        f"quantgate {record.get('decided_with_quantgate_version')} at {record.get('decided_at')}",
        f"- Accuracy deltas: {stats['accuracy_delta_interval']}. McNemar: {stats['mcnemar']}. "
        f"Rates: {stats['proportion_interval']} intervals. Equivalence margin ±"
        f"{stats['equivalence_margin'] * 100:.1f} points.",
        "",
    ]


def render_decision(model: Decision) -> str:
    """decision.md from the decision (rendered from its JSON form, the very content of decision.json)."""
    decision = model.model_dump(mode="json")
    parts = [
        _headline(decision),
        _overview(decision),
        _gates(decision),
        _deltas(decision),
        _regressions(decision),
        _rollback(decision),
        _record(decision),
    ]
    return "\n".join(line for part in parts for line in part)
