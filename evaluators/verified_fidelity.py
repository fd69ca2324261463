"""Token fidelity on every verified case: the candidate's rows read while verifying the reference's
answers, against the reference's top log-probabilities kept while it decoded them.

A candidate that verifies the reference's answer reads, at each position of it, the row predicting
the reference's token from the same history: teacher forcing, at no extra cost. Compared with the
reference's top-`k` list at that position (`quantgate.backends.llamacpp._logprobs`), each position gives the
KLD lower bound of `evaluators.fidelity.top_k_kld` (the reference's k tokens and one "other"
bucket), top-1 agreement, and the exact Δp of the reference's top token. The positions are those
read: all of a verified answer's, and up to the first differing position (included) of one decoded
from there; the rest of such an answer is the candidate's own and has no reference row to compare.

Pooled over positions the figures are those of `TokenFidelitySummary`. Over cases, with intervals
that hold at the number of cases measured:
- the median of the per-case mean KLD, with the exact sign-test (order-statistic) interval
  (`evaluators.paired_latency.median_difference`; distribution-free, for values of any spread);
- the mean of the per-case top-1 agreement, in [0, 1], with the betting interval
  (`evaluators.betting.betting_interval`), valid at any number of cases, in the run's case order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import Field

from evaluators.betting import betting_interval
from evaluators.fidelity import TokenFidelity, TokenFidelitySummary, summarize_token_fidelity
from evaluators.paired_latency import median_difference

__all__ = ["VERIFIED_FIDELITY_CONFIDENCE", "VerifiedFidelity", "case_fidelity", "summarize_verified_fidelity"]

VERIFIED_FIDELITY_CONFIDENCE = 0.95
"""The confidence of the intervals over cases."""

VERIFIED_FIDELITY_METHOD = (
    "verification: the candidate's rows read along the reference's answers (teacher forcing, batched) "
    "against the reference's top-8 log-probabilities kept while it decoded them; KLD is the top-8 lower "
    "bound (the rest of the vocabulary one bucket), top-1 and Δp exact; positions up to each answer's "
    "first differing token"
)


def case_fidelity(attempts: Sequence[Mapping[str, Any]]) -> TokenFidelity | None:
    """A case's positions over its model calls that compared rows (`fidelity` in their attempts);
    None when none did."""
    measured = [a["fidelity"] for a in attempts if a.get("fidelity")]
    if not measured:
        return None
    kinds = [m.get("kinds") for m in measured]
    return TokenFidelity(
        kld=tuple(float(k) for m in measured for k in m["kld"]),
        top1=tuple(bool(t) for m in measured for t in m["top1"]),
        delta_p=tuple(float(d) for m in measured for d in m["delta_p"]),
        kinds=tuple(k for m in kinds for k in m or ()) if all(k is not None for k in kinds) else None,
    )


class VerifiedFidelity(TokenFidelitySummary):
    """A candidate's token fidelity over the positions it read while verifying (see the module)."""

    method: str = VERIFIED_FIDELITY_METHOD
    confidence: float = VERIFIED_FIDELITY_CONFIDENCE
    unmeasured_cases: int = Field(
        description="Cases verified against reference answers that came without their log-probabilities "
        "(from a cache or run that did not keep them): not in these figures."
    )
    case_kld_median: float | None = Field(
        default=None, description="Median over cases of the per-case mean KLD (nats)."
    )
    case_kld_low: float | None = Field(default=None, description="Its exact sign-test interval's low end.")
    case_kld_high: float | None = Field(default=None, description="Its high end.")
    case_top1_mean: float | None = Field(
        default=None, description="Mean over cases of the per-case top-1 agreement."
    )
    case_top1_low: float | None = Field(default=None, description="Its betting interval's low end.")
    case_top1_high: float | None = Field(default=None, description="Its high end.")


def summarize_verified_fidelity(
    cases: Iterable[Sequence[Mapping[str, Any]]], *, given: int
) -> VerifiedFidelity | None:
    """Pool the verified positions of a candidate's cases (attempts per case, in run order); None
    when no case compared any.

    Args:
        cases: Each case's attempts.
        given: Cases given the reference's answers (measured or not).
    """
    measured = [f for f in (case_fidelity(a) for a in cases) if f is not None and f.positions]
    if not measured:
        return None
    pooled = summarize_token_fidelity(cases=measured)
    kld = median_difference(
        [sum(f.kld) / f.positions for f in measured], confidence=VERIFIED_FIDELITY_CONFIDENCE
    )
    shares = [sum(f.top1) / f.positions for f in measured]
    top1 = betting_interval(shares, confidence=VERIFIED_FIDELITY_CONFIDENCE, low=0.0, high=1.0)
    return VerifiedFidelity.model_validate(
        pooled.model_dump()
        | {
            "unmeasured_cases": max(given - len(measured), 0),
            "case_kld_median": kld.median,
            "case_kld_low": kld.low,
            "case_kld_high": kld.high,
            "case_top1_mean": sum(shares) / len(shares),
            "case_top1_low": None if top1 is None else top1.low,
            "case_top1_high": None if top1 is None else top1.high,
        }
    )
