"""The runtime's own noise floor: the reference against itself (a control arm).

The reference answers a sample of cases twice with the same weights, prompt and decoding settings,
only the batch composition changing (its slots' batches the first time, one case at a time the
second). llama.cpp is not batch-invariant, so the two answers may differ; how often they do is the
floor under which a candidate's differences from the reference cannot be told from the runtime's
own. Each figure is the one a candidate gets against the reference, with the first answers as the
reference's records:

- identical: the two answers give the same outcome (both valid with the same normalized record,
  or neither valid);
- agreement: the rerun's records scored field by field against the first ones (micro, as
  `agreement_with_reference` pools a candidate's), over the cases whose first answer was valid;
- fields changed: per case, the share of fields whose agreement is below 1, averaged over the
  same cases (what the flip gate reads a candidate's flips against).

The KLD figures come from teacher forcing the reference along its own first answers one position
at a time (as decoding reads) and in batches (as verification reads); None when not measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaluators.aggregate import CaseScore, aggregate
from evaluators.fields import FieldAccuracy
from evaluators.results import EvaluatorResult

__all__ = ["NoiseFloor", "NoiseFloorCase", "fields_changed", "summarize_noise_floor"]


@dataclass(frozen=True, kw_only=True)
class NoiseFloorCase:
    """One case answered twice by the reference.

    Attributes:
        first: The first answer's normalized record (None: no valid record).
        rerun: The rerun's normalized record (None: no valid record).
        agreement: The rerun scored against the first record (None: the first had none).
    """

    first: Mapping[str, Any] | None
    rerun: Mapping[str, Any] | None
    agreement: FieldAccuracy | None

    @property
    def identical(self) -> bool:
        """The same outcome: both valid with the same record, or neither valid."""
        return self.first == self.rerun


def fields_changed(agreement: FieldAccuracy) -> float | None:
    """The share of fields whose agreement is below 1 (None: the schema has no fields)."""
    if not agreement.fields:
        return None
    return sum(1 for f in agreement.fields.values() if f.score < 1.0) / len(agreement.fields)


class NoiseFloor(EvaluatorResult):
    """The reference against itself on a sample of cases (see the module's docstring).

    Attributes:
        cases: Cases answered twice.
        identical: Of those, cases with the same outcome both times.
        identical_share: identical / cases (None: no case).
        agreement: Micro agreement of the rerun with the first answers (None: no first answer valid).
        agreement_cases: Cases whose first answer was valid (those agreement is over).
        fields_changed_share: Mean share of fields changed per case, over the same cases.
        kld_positions: Positions whose KLD was measured (None: not measured).
        kld_mean: Mean KL(one position at a time || batched) in nats.
        kld_max: Largest KLD.
        top1_agreement: Share of positions where both ways' most likely tokens agree.
    """

    cases: int
    identical: int
    identical_share: float | None
    agreement: float | None
    agreement_cases: int
    fields_changed_share: float | None
    kld_positions: int | None = None
    kld_mean: float | None = None
    kld_max: float | None = None
    top1_agreement: float | None = None


def summarize_noise_floor(cases: Sequence[NoiseFloorCase]) -> NoiseFloor:
    """The noise floor's figures over the cases answered twice (KLD not measured here)."""
    identical = sum(1 for c in cases if c.identical)
    agreements = [c.agreement for c in cases if c.agreement is not None]
    changed = [share for a in agreements if (share := fields_changed(a)) is not None]
    pooled = aggregate(CaseScore(case_id="", fields=a) for a in agreements) if agreements else None
    return NoiseFloor(
        cases=len(cases),
        identical=identical,
        identical_share=identical / len(cases) if cases else None,
        agreement=pooled.field_accuracy if pooled is not None else None,
        agreement_cases=len(agreements),
        fields_changed_share=sum(changed) / len(changed) if changed else None,
    )
