"""The runtime comparison as table rows: the same model file on two backends (decision.md, the report).

Rows hold plain text; each renderer escapes it for its medium.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from quantgate._formatting import MISSING, interval_points, number, percent, points
from quantgate.rundir._decision import Decision
from quantgate.rundir._runtime_comparison import RuntimeComparison

GATE = "max_runtime_accuracy_drop"

RUNTIME_HEADER = (
    "base",
    "variant",
    "cases",
    "identical records",
    "agreement",
    "agreement CI",
    "base accuracy",
    "variant accuracy",
    "Δ (pts)",
    "Δ CI",
    "token fidelity",
    GATE,
)

_WHY_BASE = {
    "embedded": "the embedded variant",
    "reference": "the reference",
    "listed_first": "listed first",
}

RUNTIME_NOTE = (
    "Variants of the same model file (sha256) on different backends. The base is the embedded (llamacpp) "
    "variant when there is one, else the reference, else the one listed first. Agreement: the variant's "
    "records scored against the base's, field by field, with its betting interval; identical records: "
    "both valid and equal. Δ: accuracy, variant minus base, on the labeled cases both have, with the "
    "interval the accuracy gate judges by. Token fidelity: with an embedded base and a server variant "
    'whose prompt quantgate renders (api = "completions"), a top-k lower bound of the KLD and top-1 '
    "agreement, the base's full logits cut to top-k against the server's top-k along the base's output; "
    "else the variant's own against the reference when the base is the reference (same backend only)."
)


def _agreement_interval(c: RuntimeComparison) -> str:
    interval = c.agreement.interval if c.agreement else None
    return MISSING if interval is None else f"[{percent(interval.low)}, {percent(interval.high)}]"


def _token_fidelity(c: RuntimeComparison) -> str:
    tf = c.token_fidelity
    if tf is None:
        return c.token_fidelity_missing or "not measured"
    return f"KLD mean {number(tf.kld_mean, '{:.4f}')}, top-1 {percent(tf.top1_agreement)}"


def runtime_rows(comparisons: Sequence[RuntimeComparison], verdicts: Mapping[str, str]) -> list[list[str]]:
    """One row per pair.

    Args:
        comparisons: The decision's runtime comparisons.
        verdicts: Each compared variant's `max_runtime_accuracy_drop` status (absent: the gate is off).
    """
    rows = []
    for c in comparisons:
        accuracy = c.accuracy
        identical = MISSING if c.identical is None else f"{c.identical}/{c.cases}"
        rows.append(
            [
                f"{c.base} ({c.base_backend}; {_WHY_BASE[c.base_is]})",
                f"{c.variant} ({c.variant_backend})",
                str(c.cases),
                identical,
                percent(c.agreement.overall) if c.agreement else MISSING,
                _agreement_interval(c),
                percent(accuracy.reference) if accuracy else MISSING,
                percent(accuracy.variant) if accuracy else MISSING,
                points(accuracy.delta) if accuracy else MISSING,
                interval_points(accuracy.interval) if accuracy else MISSING,
                _token_fidelity(c),
                verdicts.get(c.variant, "off"),
            ]
        )
    return rows


def runtime_table(decision: Decision) -> list[list[str]] | None:
    """The decision's runtime comparison as a header row and a row per pair (each with its
    `max_runtime_accuracy_drop` verdict, or "off"); None when the run has no such pair."""
    if not decision.runtimes:
        return None
    verdicts = {name: g.status for name, v in decision.variants.items() for g in v.gates if g.gate == GATE}
    return [list(RUNTIME_HEADER), *runtime_rows(decision.runtimes, verdicts)]
