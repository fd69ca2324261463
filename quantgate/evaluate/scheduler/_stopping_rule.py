"""Sequential evaluation: the rule that stops a variant once its accuracy and flip gates are settled.

A sequential run (the default when neither `--limit` nor `--all` is given) evaluates every
variant on the same cases, in interleaved rounds of `round_size` cases spread across languages
and tags (`quantgate.evaluate.scheduler._rounds`). After each round each candidate's accuracy gates
(overall, and each slice with at least `min_slice_cases` paired cases) are judged with the
anytime-valid confidence sequence of the paired per-case differences
(`evaluators.sequential.gates_status`), and its flip gate with the confidence sequence of the
per-case flip shares (`evaluators.flips.flip_status`), so looking after every round does not
inflate the error rate. A candidate stops as soon as it is settled: "fail" when any accuracy
gate's whole sequence lies below its threshold or the flip share's lies above its own, "pass"
when every accuracy gate's lower bound is at or above its threshold and the flip share's upper
bound is at most its own. `decide` judges the gates on the same records with the same intervals
and thresholds, so its verdict on these gates is the one the run stopped on. The other
gates (validity, errors, memory, latency) are judged by `decide` on the cases the variant ran.

`SequentialJudge` is the same rule as the evaluation graph's `judge`, for a variant evaluated
alone in one task (a Ray executor).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from evaluators.comparison import ComparisonOptions, PairedCase, case_difference
from evaluators.flips import case_flips, flip_status, share_interval
from evaluators.sequential import DropGates, SequentialStatus, gates_status
from graphs.evaluation import CaseOutcome
from quantgate.inputs._gates import Gates

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
            agreement={name: f.score for name, f in o.agreement.fields.items()} if o.agreement else None,
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


def flip_gate_status(paired: list[PairedCase], gates: Gates, *, truncation: float) -> SequentialStatus | None:
    """The flip gate after the paired cases so far, by the confidence sequence of the per-case flip
    shares (`evaluators.flips.flip_status`); None when the gate is off."""
    if gates.max_flip_share is None:
        return None
    options = ComparisonOptions(confidence=gates.confidence, method="sequential", truncation=truncation)
    interval = share_interval([case_flips(c).share() for c in paired], options)
    return flip_status(interval=interval, max_share=gates.max_flip_share)


def settling_gates_status(paired: list[PairedCase], gates: Gates, *, truncation: float) -> SequentialStatus:
    """The gates a sequential run settles, together: the accuracy gates and the flip gate. "fail" if
    one failed, "pass" if every one that is on passed, else "undecided"."""
    differences, tags = differences_of(paired)
    accuracy = gates_status(differences, tags, drop_gates(gates, truncation=truncation))
    flips = flip_gate_status(paired, gates, truncation=truncation)
    accuracy_on = gates.max_accuracy_drop is not None or gates.max_slice_accuracy_drop is not None
    statuses = ([accuracy] if accuracy_on else []) + ([flips] if flips is not None else [])
    if "fail" in statuses:
        return "fail"
    return "pass" if statuses and all(s == "pass" for s in statuses) else "undecided"


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
            status = settling_gates_status(paired, self.gates, truncation=self.truncation)
            if status != "undecided":
                self.settled, self.stopped = status, "settled"
                return f"settled: {status} after {len(paired)} paired cases"
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            self.stopped = "budget"
            return "budget: its share of the run's budget is spent"
        return None
