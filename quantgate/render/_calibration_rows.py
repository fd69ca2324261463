"""The calibration comparison as table rows and sentences: each calibrated variant against its plain
twin (decision.md, the report). Rows hold plain text; each renderer escapes it for its medium."""

from __future__ import annotations

from collections.abc import Sequence

from quantgate._formatting import MISSING, interval_points, percent, points
from quantgate.rundir._calibration_comparison import CalibrationComparison
from quantgate.rundir._decision import Decision

CALIBRATION_HEADER = (
    "type",
    "plain",
    "calibrated",
    "matrix from",
    "cases",
    "plain accuracy",
    "calibrated accuracy",
    "Δ (pts)",
    "Δ CI",
    "shown",
)

_SOURCE = {"dataset": "your data", "text": "a general text", "file": "a given matrix"}
_FINDING = {
    "better": "calibrated better",
    "worse": "calibrated worse",
    "not_shown": "no difference shown",
}

CALIBRATION_NOTE = (
    "Each calibrated variant (an importance matrix from your dataset's cases, `+imat`, from a general "
    "text, `+imat-text`, or a given matrix file, `+imat-file`) against the plain variant of the same type, "
    "on the labeled cases both have: Δ is "
    "accuracy, calibrated minus plain, with the interval the accuracy gate judges by, valid at any number "
    "of cases. A sequential run keeps a plain variant running while a calibrated twin is, so both have the "
    "same cases (the cases column says how many both have). "
    "Each is also judged against the reference in the tables above."
)


def calibration_sentence(c: CalibrationComparison) -> str:
    """`calibration on your data moves Q2_K by +6.8 points [+0.9, +12.7] (calibrated better, 108 cases)`."""
    accuracy = c.accuracy
    if accuracy is None or accuracy.delta is None:
        source = _SOURCE[c.source]
        return f"calibration on {source}: {c.calibrated} and {c.plain} have no labeled case in common"
    return (
        f"calibration on {_SOURCE[c.source]} moves {c.quantization} by {points(accuracy.delta)} points "
        f"{interval_points(accuracy.interval)} ({_FINDING[c.finding]}, {accuracy.cases} cases)"
    )


def calibration_rows(comparisons: Sequence[CalibrationComparison]) -> list[list[str]]:
    """One row per calibrated variant."""
    rows = []
    for c in comparisons:
        accuracy = c.accuracy
        rows.append(
            [
                c.quantization,
                c.plain,
                c.calibrated,
                _SOURCE[c.source],
                str(accuracy.cases) if accuracy else "0",
                percent(accuracy.reference) if accuracy else MISSING,
                percent(accuracy.variant) if accuracy else MISSING,
                points(accuracy.delta) if accuracy else MISSING,
                interval_points(accuracy.interval) if accuracy else MISSING,
                _FINDING[c.finding],
            ]
        )
    return rows


def calibration_table(decision: Decision) -> list[list[str]] | None:
    """The decision's calibration comparison as a header row and a row per calibrated variant; None
    when the run has no calibrated variant with a plain twin."""
    if not decision.calibrations:
        return None
    return [list(CALIBRATION_HEADER), *calibration_rows(decision.calibrations)]
