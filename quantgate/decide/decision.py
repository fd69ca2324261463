"""`quantgate decide`: which variant replaces the reference, under which gates, and why.

`decide` reads a run directory only (records.jsonl, summary.json, variants.json and the
run's copy of its cases) and recomputes every figure it judges from the records: paired
accuracy deltas with bootstrap intervals and McNemar's test, validity, error rate,
latency. Memory comes from the summary, which the run's sampler wrote. The recommended
variant is the one with the smallest memory footprint among those passing every gate;
the reference is a candidate too, so "keep the reference" is a possible answer.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evaluators.comparison import (
    AgreementSummary,
    Comparison,
    ComparisonOptions,
    PairedCase,
    Regression,
    compare_paired,
    regressions,
    summarize_agreement,
)
from quantgate.dataset import Dataset, DatasetError, load_dataset
from quantgate.gate_checks import GateResult, Measured, judge_variant, measure, passes
from quantgate.gates import Gates
from quantgate.hardware import package_version
from quantgate.regressions import REGRESSIONS_DIR, export_regressions
from quantgate.rollback import rollback_signals
from quantgate.runstore import DATASET_DIR, Run, latest_records, load_run, write_json

DECISION_FORMAT_VERSION = 1
DECISION_JSON = "decision.json"
DECISION_MD = "decision.md"
EXIT_PASSED = 0
EXIT_NONE_PASSED = 3


class DecisionError(RuntimeError):
    """A run that cannot be decided on (no reference results, unreadable files)."""


def paired_cases(
    reference: Mapping[str, Mapping[str, Any]], variant: Mapping[str, Mapping[str, Any]]
) -> list[PairedCase]:
    """The labeled cases both sides have records for, in the reference's order."""
    return [
        PairedCase(
            case_id=case_id,
            tags=tuple(ref.get("tags") or ()),
            reference=ref["fields"],
            variant=variant[case_id].get("fields") or {},
        )
        for case_id, ref in reference.items()
        if case_id in variant and ref.get("fields")
    ]


def agreement_of(records: Iterable[Mapping[str, Any]], options: ComparisonOptions) -> AgreementSummary:
    """Agreement with the reference over the cases where the reference gave a record."""
    per_case = [r["agreement_fields"] for r in records if r.get("agreement_fields") is not None]
    return summarize_agreement(per_case, options=options)


@dataclass(frozen=True, kw_only=True)
class _Judged:
    name: str
    entry: Mapping[str, Any]
    measured: Measured | None
    agreement: AgreementSummary | None
    section: dict[str, Any]
    passed: bool


def _evidence(
    measured: Measured,
    results: Sequence[GateResult],
    comparison: Comparison | None,
    agreement: AgreementSummary | None,
) -> dict[str, Any]:
    return {
        "footprint_mb": measured.footprint_mb,
        "footprint_source": measured.footprint_source,
        "measured": {
            "cases": measured.cases,
            "format_validity": measured.format_validity,
            "error_rate": measured.error_rate,
            "latency_s_p95": measured.latency_s_p95,
            "memory_mb": measured.memory_mb,
            "memory_source": measured.memory_source,
        },
        "gates": [r.as_dict() for r in results],
        "comparison": comparison.as_dict() if comparison else None,
        "agreement": agreement.as_dict() if agreement else None,
    }


def _judge(
    entry: Mapping[str, Any],
    records: Mapping[str, Mapping[str, Mapping[str, Any]]],
    reference: str,
    gates: Gates,
) -> tuple[_Judged, list[Regression]]:
    name, is_reference = entry["name"], entry["name"] == reference
    if entry.get("status") != "ok":
        section: dict[str, Any] = {
            "status": entry.get("status"),
            "error": entry.get("error"),
            "passes": False,
            "gates": [],
        }
        skipped = _Judged(
            name=name, entry=entry, measured=None, agreement=None, section=section, passed=False
        )
        return skipped, []
    options = ComparisonOptions(
        margin=gates.equivalence_margin, min_cases=gates.min_cases, confidence=gates.confidence
    )
    own = records.get(name, {})
    paired = [] if is_reference else paired_cases(records.get(reference, {}), own)
    comparison = compare_paired(paired, options=options) if paired else None
    agreement = None if is_reference else agreement_of(own.values(), options)
    measured = measure(list(own.values()), entry)
    results = judge_variant(measured=measured, comparison=comparison, gates=gates, is_reference=is_reference)
    passed = passes(results)
    found = regressions(paired)
    section = {
        "status": "ok",
        "is_reference": is_reference,
        "quantization": entry.get("quantization"),
        "passes": passed,
        **_evidence(measured, results, comparison, agreement),
        "token_fidelity": entry.get("token_fidelity"),
        "token_fidelity_missing": entry.get("token_fidelity_missing"),
        "regressions": [asdict(r) for r in found],
    }
    judged = _Judged(
        name=name,
        entry=entry,
        measured=measured,
        agreement=agreement,
        section=section,
        passed=passed,
    )
    return judged, found


def recommend(candidates: Iterable[tuple[str, bool, float | None]]) -> str | None:
    """The passing candidate with the smallest footprint; unmeasured footprints rank last.

    Args:
        candidates: (name, passes, footprint MiB) in run order; ties keep run order.
    """
    passing = [
        (footprint is None, footprint or 0.0, i, name)
        for i, (name, ok, footprint) in enumerate(candidates)
        if ok
    ]
    return min(passing)[3] if passing else None


def run_dataset(run: Run) -> Dataset | None:
    """The cases the run evaluated: its own copy, else the source if its hash still matches."""
    copy = run.directory / DATASET_DIR
    try:
        if copy.is_dir():
            return load_dataset(copy, skip_invalid_cases=True)
        dataset = load_dataset(run.summary["dataset"]["path"], skip_invalid_cases=True)
    except (DatasetError, FileNotFoundError, KeyError):
        return None
    return dataset if dataset.sha256 == run.summary["dataset"].get("sha256") else None


def _record_section(run: Run, gates: Gates) -> dict[str, Any]:
    summary = run.summary
    return {
        "run_id": summary.get("run_id"),
        "run_status": summary.get("status"),
        "run_quantgate_version": summary.get("quantgate_version"),
        "decided_with_quantgate_version": package_version("quantgate"),
        "decided_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "dataset": summary.get("dataset"),
        "hardware": summary.get("hardware"),
        "options": summary.get("options"),
        "variants": {v["name"]: v for v in run.variants if "name" in v},
        "statistics": {
            "accuracy_delta_interval": f"paired percentile bootstrap over cases, {gates.confidence:.0%}",
            "mcnemar": "exact two-sided binomial test on discordant cases; a case is right when all its "
            "fields are right, a field when it scores 1.0",
            "equivalence_margin": gates.equivalence_margin,
            "proportion_interval": "Wilson score",
        },
    }


def decide(run_dir: str | Path, gates: Gates | None = None) -> dict[str, Any]:
    """Judge every variant of a run against the gates, write decision.json and decision.md.

    Also writes each variant's regression cases as a dataset under `regressions/<variant>/`.

    Returns:
        The decision as written to decision.json.

    Raises:
        DecisionError: The run has no results for its reference.
    """
    from quantgate.decision_report import render_decision

    gates = gates or Gates()
    run = load_run(run_dir)
    reference = run.summary.get("reference")
    records = latest_records(run.records())
    if reference not in records:
        raise DecisionError(
            f"{run.directory}: no records of the reference {reference!r}; nothing to compare with"
        )
    judged: list[_Judged] = []
    found_by_variant: dict[str, list[Regression]] = {}
    for entry in run.summary.get("variants", []):
        item, found = _judge(entry, records, reference, gates)
        judged.append(item)
        found_by_variant[item.name] = found
    chosen = recommend((j.name, j.passed, j.measured.footprint_mb if j.measured else None) for j in judged)
    decision: dict[str, Any] = {
        "format_version": DECISION_FORMAT_VERSION,
        "recommended": chosen,
        "recommended_is_reference": chosen == reference,
        "exit_status": EXIT_PASSED if chosen else EXIT_NONE_PASSED,
        "reference": reference,
        "gates": gates.model_dump(mode="json"),
        "variants": {j.name: j.section for j in judged},
        "rollback": _rollback(judged, chosen, gates),
        "regression_sets": _export_all(run, found_by_variant, reference),
        "record": _record_section(run, gates),
    }
    write_json(run.directory / DECISION_JSON, decision)
    (run.directory / DECISION_MD).write_text(render_decision(decision), encoding="utf-8")
    return decision


def _rollback(judged: list[_Judged], chosen: str | None, gates: Gates) -> dict[str, Any] | None:
    item = next((j for j in judged if j.name == chosen), None)
    if item is None or item.measured is None:
        return None
    signals = rollback_signals(measured=item.measured, agreement=item.agreement, gates=gates)
    return {"variant": chosen, "window_cases": item.measured.cases, "signals": [s.as_dict() for s in signals]}


def _export_all(run: Run, found_by_variant: Mapping[str, list[Regression]], reference: str) -> dict[str, Any]:
    dataset = run_dataset(run)
    exported: dict[str, Any] = {}
    for name, found in found_by_variant.items():
        if name == reference or not found:
            continue
        if dataset is None:
            exported[name] = {"path": None, "cases": len(found), "error": "the run's cases are not available"}
            continue
        out = run.directory / REGRESSIONS_DIR / name
        export_regressions(
            out=out,
            dataset=dataset,
            found=found,
            run_id=run.directory.name,
            reference=reference,
            variant=name,
        )
        exported[name] = {"path": str(out.relative_to(run.directory)), "cases": len(found)}
    return exported


def load_decision(run_dir: str | Path) -> dict[str, Any]:
    """Read a run's decision.json."""
    result: dict[str, Any] = json.loads((Path(run_dir) / DECISION_JSON).read_text(encoding="utf-8"))
    return result
