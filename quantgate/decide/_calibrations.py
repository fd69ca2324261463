"""Calibrated against plain, judged like any pair: each calibrated variant against its plain twin.

For each twin of the run (`quantgate.inputs._calibration_twins`: `Q2_K+imat` and `Q2_K`, the same
type with and without an importance matrix) the calibrated variant's case scores are compared with
the plain twin's on the labeled cases both have, in the run's case order, with `compare_paired`:
the paired delta and the interval the accuracy gate judges by, valid at any number of cases, so a
run that stops when its sequences settle still gives a valid interval. The plain twin takes the
reference's place: `accuracy.reference` is the plain twin's accuracy, `delta` calibrated minus plain.
"""

from __future__ import annotations

from collections.abc import Mapping

from evaluators.comparison import ComparisonOptions, PairedDelta, compare_paired
from quantgate.inputs._calibration_twins import calibration_twins
from quantgate.rundir._calibration_comparison import CalibrationComparison, Finding
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._pairing import paired_cases
from quantgate.rundir._store import Run


def _finding(accuracy: PairedDelta | None) -> Finding:
    interval = accuracy.interval if accuracy else None
    if interval is None:
        return "not_shown"
    if interval.low > 0:
        return "better"
    return "worse" if interval.high < 0 else "not_shown"


def calibration_comparisons(
    run: Run,
    records: Mapping[str, Mapping[str, CaseRecord]],
    options: ComparisonOptions,
    case_order: Mapping[str, int],
) -> list[CalibrationComparison]:
    """Every calibrated variant of the run that has a plain twin, compared with it.

    Args:
        run: The run (its variants.json names the twins).
        records: Its latest records, variant -> case -> record.
        options: How the paired deltas are judged (the gates' options).
        case_order: The run's case order (an interval depends on it).
    """
    evaluated = {e.name for e in run.summary.variants if e.status == "ok"}
    variants = [v for v in run.variants.variants if v.name in evaluated]
    by_name = {v.name: v for v in variants}
    found = []
    last = len(case_order)
    for twin in calibration_twins(variants):
        plain = sorted(records.get(twin.plain, {}).values(), key=lambda r: case_order.get(r.case_id, last))
        paired = paired_cases({r.case_id: r for r in plain}, records.get(twin.calibrated, {}))
        accuracy = compare_paired(paired, options=options).overall if paired else None
        found.append(
            CalibrationComparison(
                quantization=twin.quantization,
                plain=twin.plain,
                calibrated=twin.calibrated,
                source=twin.source,
                calibration=by_name[twin.calibrated].calibration,
                accuracy=accuracy,
                finding=_finding(accuracy),
            )
        )
    return found
