"""Verification in a run: which cases a candidate verifies against the reference's answers, and which
it decodes in full for its latency figures.

The reference answers each round's cases first (or its cache has them). A candidate whose backend
declares `verification` is handed the reference's answers to the same prompts (one per model call:
the first attempt, then each repair) and reads them at prefill speed, keeping each token it would
have chosen itself and decoding from the first where it would not (`quantgate.backends.slots`). Its
record is then the one decoding gives, up to llama.cpp's batch-shape rounding (measured in
`benchmarks/verify.py`, docs/performance.md), and says how it was obtained
(`evaluators.verification`).

Verified cases have no decoding latency, so the run's first `RunOptions.latency_cases` cases (the
latency sample) are decoded in full by every variant, the reference included even when its cache
holds them: every variant's latency figures come from those same cases, decoded in this run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from graphs.outcomes import CaseOutcome
from quantgate.backends import capabilities
from quantgate.evaluate.options import RunOptions
from quantgate.inputs.dataset import Case
from quantgate.inputs.variants import Variant

__all__ = ["answers_to_verify", "latency_sample", "verification_missing"]


def latency_sample(cases: Sequence[Case], options: RunOptions) -> frozenset[str] | None:
    """The cases every variant decodes in full and times (the run's first `latency_cases`); None when
    verification is off (every case is decoded, and timed)."""
    if not options.verify:
        return None
    return frozenset(c.id for c in cases[: options.latency_cases])


def verification_missing(variant: Variant, options: RunOptions, *, executor: str = "local") -> str | None:
    """Why a candidate decodes every case instead of verifying the reference's answers; None when it
    verifies them (a candidate of a local run in rounds whose backend can)."""
    if not options.verify:
        return "verification is off (--no-verify): every case was decoded"
    if not capabilities(variant).verification:
        return (
            f"the {variant.backend} backend cannot read given answers at prefill speed (it declares no "
            "verification): every case was decoded"
        )
    if executor != "local":
        return (
            f"the {executor} executor evaluates each variant whole, without the reference's answers: every "
            "case was decoded"
        )
    return None


def answers_to_verify(
    reference: Mapping[str, CaseOutcome], case_ids: Sequence[str], *, decode: frozenset[str] | None
) -> dict[str, list[str | None]]:
    """The reference's answers of these cases, one per model call, for a candidate to verify; none for
    the cases it must decode (`decode`: the latency sample) or whose answers the reference's records do
    not hold (a record from before they were kept)."""
    answers: dict[str, list[str | None]] = {}
    for case_id in case_ids:
        outcome = reference.get(case_id)
        if (decode is not None and case_id in decode) or outcome is None or not outcome.extraction.attempts:
            continue
        texts = [attempt.get("text") for attempt in outcome.extraction.attempts]
        if any(text is not None for text in texts):
            answers[case_id] = texts
    return answers
