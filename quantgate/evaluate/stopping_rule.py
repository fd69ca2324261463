"""Sequential evaluation: the rule that stops a variant once its accuracy gates are settled.

A sequential run (the default when neither `--limit` nor `--all` is given) evaluates every
variant on the same cases, in interleaved rounds of `round_size` cases spread across languages
and tags (`quantgate.evaluate.rounds`). After each round each candidate's accuracy gates
(overall, and each slice with at least `min_slice_cases` paired cases) are judged with the
anytime-valid confidence sequence of the paired per-case differences
(`evaluators.sequential.gates_status`), so looking after every round does not inflate the
error rate. A candidate stops as soon as it is settled: "fail" when any accuracy gate's whole
sequence lies below its threshold, "pass" when every accuracy gate's lower bound is at or
above it. `decide` judges the gates on the same records with the same intervals and
thresholds, so its verdict on the accuracy gates is the one the run stopped on. The other
gates (validity, errors, memory, latency) are judged by `decide` on the cases the variant ran.

`SequentialJudge` is the same rule as the evaluation graph's `judge`, for a variant evaluated
alone in one task (a Ray executor).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from evaluators.comparison import PairedCase, case_difference
from evaluators.sequential import DropGates, SequentialStatus, gates_status
from graphs.evaluation import CaseOutcome
from quantgate.inputs.gates import Gates

DEFAULT_ROUND_SIZE = 12
"""Cases per round: three waves of the embedded backend's 4 slots."""


def paired_outcomes(
    outcomes: list[CaseOutcome], reference: Mapping[str, Mapping[str, float]]
) -> list[PairedCase]:
    """The outcomes of labeled cases the reference also scored, paired with its field scores."""
    return [
        PairedCase(
            case_id=o.case_id,
            tags=o.score.tags,
            reference=reference[o.case_id],
            variant={name: f.score for name, f in o.score.fields.fields.items()},
        )
        for o in outcomes
        if o.case_id in reference and o.score.fields is not None
    ]


def drop_gates(gates: Gates, *, truncation: float) -> DropGates:
    """The accuracy-drop part of the gates, as the confidence sequences judge it."""
    return DropGates(
        max_drop=gates.max_accuracy_drop,
        max_slice_drop=gates.max_slice_accuracy_drop,
        min_slice_cases=gates.min_slice_cases,
        confidence=gates.confidence,
        truncation=truncation,
    )


def differences_of(paired: list[PairedCase]) -> tuple[list[float], list[tuple[str, ...]]]:
    """Each paired case's difference (variant minus reference case accuracy) and its tags."""
    return [case_difference(c) for c in paired], [tuple(c.tags) for c in paired]


def accuracy_gates_status(paired: list[PairedCase], gates: Gates, *, truncation: float) -> SequentialStatus:
    """The accuracy gates together: "fail" if one failed, "pass" if all passed, else "undecided"."""
    differences, tags = differences_of(paired)
    return gates_status(differences, tags, drop_gates(gates, truncation=truncation))


@dataclass(kw_only=True)
class SequentialJudge:
    """The evaluation graph's `judge` for one variant: stop when settled or out of time.

    Attributes:
        gates: The gates whose accuracy part is judged after each round.
        reference: The reference's field scores per labeled case id; None when judging the
            reference itself, which only stops for its time share.
        deadline: The `time.perf_counter()` time its share of the budget ends (the evaluation
            graph starts no case after it either).
    """

    gates: Gates
    reference: Mapping[str, Mapping[str, float]] | None
    truncation: float
    deadline: float | None = None
    settled: Literal["pass", "fail"] | None = None
    paired_cases: int = 0
    cases: int = 0
    stopped: Literal["settled", "budget", "cases"] = "cases"

    def __call__(self, outcomes: list[CaseOutcome]) -> str | None:
        """After a round: a reason to stop, or None to go on."""
        self.cases = len(outcomes)
        if self.reference is None:
            self.paired_cases = sum(o.score.fields is not None for o in outcomes)
        else:
            paired = paired_outcomes(outcomes, self.reference)
            self.paired_cases = len(paired)
            status = accuracy_gates_status(paired, self.gates, truncation=self.truncation)
            if status != "undecided":
                self.settled, self.stopped = status, "settled"
                return f"settled: {status} after {len(paired)} paired cases"
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            self.stopped = "budget"
            return "budget: its share of the run's budget is spent"
        return None
