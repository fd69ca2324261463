"""How each variant of a single-label classification run moves the gold label's probability against
the reference (`evaluators.label_confidence`), set in its summary entry once every variant has run.

The evaluator nodes see one variant's outcomes; this change pairs each case's probability with the
reference's, so it is made after the variants from the run's records (each answer's label
probabilities, as its last attempt's `reported` numbers keep them: `score_labels`). Every path a
run takes (in rounds, per variant, resumed, its reference served from the cache) writes the records
it read, so one place makes it the same way for all. Without label probabilities it stays None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evaluators.classification_figures import ClassificationSummary, reported_label_probabilities
from evaluators.label_confidence import GoldProbabilityShift, gold_probability_shift
from evaluators.task_models import LabelSet
from quantgate.evaluate._session import RunSession
from quantgate.inputs._dataset import Case
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._store import latest_records, read_records
from quantgate.rundir._summary import RunSummary

__all__ = [
    "add_gold_probability_shifts",
    "gold_probabilities",
    "gold_probability_shifts",
    "set_gold_probability_shifts",
]


def gold_probabilities(
    records: Mapping[str, CaseRecord], gold: Mapping[str, str], labels: Sequence[str]
) -> dict[str, float]:
    """Per case id, the probability a variant gave the gold label: its last attempt's reported
    label probabilities (`reported_label_probabilities`); cases without them are left out."""
    found = {}
    for case_id, label in gold.items():
        record = records.get(case_id)
        attempts = record.attempt_timings if record is not None else []
        reported = (attempts[-1].get("reported") or {}) if attempts else {}
        probabilities = reported_label_probabilities(reported, labels)
        if probabilities is not None:
            found[case_id] = probabilities.get(label, 0.0)
    return found


def gold_probability_shifts(
    records: Mapping[str, Mapping[str, CaseRecord]],
    *,
    reference: str,
    labels: LabelSet,
    cases: Sequence[Case],
) -> dict[str, GoldProbabilityShift]:
    """Each variant but the reference (by name, in `records`' order): its change of the gold label's
    probability against the reference's, over the labeled cases both scored, in case order.

    Args:
        records: Each variant's records, by case id.
        reference: The reference variant's name.
        labels: The task's label set, one label per case (`TaskModel.single_label_set`).
        cases: The run's cases, whose gold label is their `expected[labels.field]`.
    """
    field = labels.field
    gold = {c.id: c.expected[field] for c in cases if c.expected and field in c.expected}
    theirs = gold_probabilities(records.get(reference, {}), gold, labels.labels)
    shifts = {}
    for name, own_records in records.items():
        if name == reference:
            continue
        own = gold_probabilities(own_records, gold, labels.labels)
        shifts[name] = gold_probability_shift(
            reference=[theirs.get(case_id) for case_id in gold],
            variant=[own.get(case_id) for case_id in gold],
        )
    return shifts


def set_gold_probability_shifts(summary: RunSummary, shifts: Mapping[str, GoldProbabilityShift]) -> None:
    """Put each variant's change in its classification figures (`kind_figures`; a variant without
    one keeps None)."""
    for entry in summary.variants:
        shift = shifts.get(entry.name)
        if shift is not None and not entry.is_reference and entry.status != "skipped":
            figures = entry.kind_figures
            own = figures if isinstance(figures, ClassificationSummary) else ClassificationSummary()
            entry.kind_figures = own.model_copy(update=dict(shift))


def add_gold_probability_shifts(session: RunSession) -> None:
    """After the variants: each one's change of the gold label's probability in its entry, from
    the run's records (nothing unless each case holds one label of a closed set:
    `TaskModel.single_label_set`)."""
    labels = session.dataset.task.single_label_set
    if labels is None:
        return
    records = latest_records(read_records(session.store.directory))
    shifts = gold_probability_shifts(records, reference=session.reference, labels=labels, cases=session.cases)
    set_gold_probability_shifts(session.summary, shifts)
