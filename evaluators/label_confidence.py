"""How quantization moves a classifier's confidence in the gold label: per case, the variant's
probability of the gold label minus the reference's, over the cases both scored, and that change
split by the reference's own confidence (Proskurina et al., 2024, "When Quantization Affects
Confidence of Large Language Models?": quantization lowers confidence most where the full model
was unsure).

A case where the reference gave the gold label less than `UNSURE_BELOW` is one it was unsure of;
the others it was sure of. Pure functions of the two sequences of probabilities, in case order.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluators.aggregate import mean
from evaluators.results import EvaluatorResult

__all__ = ["UNSURE_BELOW", "GoldProbabilityShift", "gold_probability_shift"]

UNSURE_BELOW = 0.5
"""The reference is unsure of a case where it gave the gold label a probability below this."""


class GoldProbabilityShift(EvaluatorResult):
    """A variant's change of the gold label's probability against the reference, per case.

    Attributes:
        gold_probability_pairs: Cases where both gave every label a probability.
        gold_probability_change: Mean of variant - reference gold-label probability over the pairs.
        gold_probability_change_unsure: The same over the pairs where the reference gave the gold
            label less than `UNSURE_BELOW` (None: no such pair).
        gold_probability_change_sure: The same over the other pairs (None: no such pair).
        reference_unsure_cases: The pairs where the reference was unsure.
    """

    gold_probability_pairs: int | None = None
    gold_probability_change: float | None = None
    gold_probability_change_unsure: float | None = None
    gold_probability_change_sure: float | None = None
    reference_unsure_cases: int | None = None


def gold_probability_shift(
    *, reference: Sequence[float | None], variant: Sequence[float | None]
) -> GoldProbabilityShift:
    """The paired change of the gold label's probability, overall and split by the reference's
    confidence.

    Args:
        reference: Per case, the probability the reference gave the gold label (None: not
            measured, e.g. no answer, or a backend without label probabilities).
        variant: The same for the variant, same cases in the same order.

    Returns:
        Every figure None when no case has both probabilities (nothing measured, never 0).

    Raises:
        ValueError: The sequences differ in length, or a probability is outside [0, 1].
    """
    if len(reference) != len(variant):
        raise ValueError(f"{len(reference)} reference probabilities but {len(variant)} of the variant")
    pairs = [(r, v) for r, v in zip(reference, variant, strict=True) if r is not None and v is not None]
    if any(not (0.0 <= p <= 1.0) for pair in pairs for p in pair):
        raise ValueError("a probability is outside [0, 1]")
    if not pairs:
        return GoldProbabilityShift()
    unsure = [v - r for r, v in pairs if r < UNSURE_BELOW]
    sure = [v - r for r, v in pairs if r >= UNSURE_BELOW]
    return GoldProbabilityShift(
        gold_probability_pairs=len(pairs),
        gold_probability_change=mean(v - r for r, v in pairs),
        gold_probability_change_unsure=mean(unsure),
        gold_probability_change_sure=mean(sure),
        reference_unsure_cases=len(unsure),
    )
