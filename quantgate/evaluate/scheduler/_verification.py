"""Verification in a run: which cases a candidate verifies against the reference's answers, and which
it decodes in full for its latency figures.

The reference answers each round's cases first (or its cache has them). A candidate whose backend
declares `verification` is handed the reference's answers to the same prompts (one per model call:
the first attempt, then each repair) and reads them at prefill speed, keeping each token it would
have chosen itself and decoding from the first where it would not (`quantgate.backends.llamacpp._slots`). Its
record is then the one decoding gives, up to llama.cpp's batch-shape rounding (measured in
`benchmarks/verify.py`, docs/performance.md), and says how it was obtained
(`evaluators.verification`).

The reference keeps its top log-probabilities per token while it decodes the cases candidates will
verify (`reference_options`), and each candidate compares every row it reads with them: token
fidelity on every verified case, at no extra forward pass (`quantgate.backends.llamacpp._logprobs`). The
latency sample is decoded without them, so that every variant's timed cases do the same work.

Verified cases have no decoding latency, so the run's first `RunOptions.latency_cases` cases (the
latency sample) are decoded in full by every variant, the reference included even when its cache
holds them: every variant's latency figures come from those same cases, decoded in this run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphs.extraction import GivenAnswer
from graphs.outcomes import CaseOutcome
from quantgate.backends import LOOKUP_KWARG, TOP_LOGPROBS_KWARG, capabilities
from quantgate.evaluate._options import RunOptions
from quantgate.inputs._dataset import Case
from quantgate.inputs._variants import Variant

__all__ = ["answers_to_verify", "latency_sample", "reference_options", "verification_missing"]


def latency_sample(cases: Sequence[Case], options: RunOptions) -> frozenset[str]:
    """The cases every variant decodes in full in this run and times (the run's first `latency_cases`),
    with verification on or off: the reference's cache never serves them, and every latency figure
    comes from them."""
    return frozenset(c.id for c in cases[: options.latency_cases])


def verification_missing(variant: Variant, options: RunOptions, *, whole: str | None = None) -> str | None:
    """Why a candidate decodes every case instead of verifying the reference's answers; None when it
    verifies them (a candidate of a run in rounds whose backend can; `whole`: the executor that
    evaluated it whole instead, a Ray task of a variant split into case shards)."""
    if not options.verify:
        return "verification is off (--no-verify): every case was decoded"
    declared = capabilities(variant)
    if not declared.verification:
        why = declared.no_verification or (
            f"the {variant.backend} backend cannot read given answers at prefill speed (it declares no "
            "verification)"
        )
        return f"{why}: every case was decoded"
    if whole is not None:
        return (
            f"the {whole} executor evaluated this variant whole, without the reference's answers: every "
            "case was decoded"
        )
    return None


def reference_options(
    reference: Variant, case_ids: Sequence[str], *, decode: frozenset[str] | None, verified: bool
) -> dict[str, dict[str, Any]] | None:
    """The reference's model options per case: on the cases a candidate will verify (`verified`: some
    candidate of the run verifies), not on the latency sample (`decode`), keep its top
    log-probabilities and draft from text already seen (`LOOKUP_KWARG`: the answer greedy decoding
    gives, in fewer steps; those cases are not timed); None when there are none (its backend cannot)."""
    if decode is None or not verified or not capabilities(reference).verification:
        return None
    kept = {TOP_LOGPROBS_KWARG: True, LOOKUP_KWARG: True}
    return {case_id: dict(kept) for case_id in case_ids if case_id not in decode}


def answers_to_verify(
    reference: Mapping[str, CaseOutcome], case_ids: Sequence[str], *, decode: frozenset[str] | None
) -> dict[str, list[GivenAnswer | str | None]]:
    """The reference's answers of these cases, one per model call, for a candidate to verify (with
    the reference's top log-probabilities when it kept them); none for the cases it must decode
    (`decode`: the latency sample) or whose answers the reference's records do not hold (a record
    from before they were kept)."""
    answers: dict[str, list[GivenAnswer | str | None]] = {}
    for case_id in case_ids:
        outcome = reference.get(case_id)
        if (decode is not None and case_id in decode) or outcome is None or not outcome.extraction.attempts:
            continue
        given: list[GivenAnswer | str | None] = [_given(a) for a in outcome.extraction.attempts]
        if any(answer is not None for answer in given):
            answers[case_id] = given
    return answers


def _given(attempt: Mapping[str, Any]) -> GivenAnswer | None:
    text = attempt.get("text")
    if text is None:
        return None
    answer = GivenAnswer(text=text)
    if attempt.get("top_logprobs") is not None:
        answer["top_logprobs"] = attempt["top_logprobs"]
    return answer
