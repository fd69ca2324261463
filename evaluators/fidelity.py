"""Token-level fidelity of a variant to the reference, from teacher-forced logits.

Both models read the same tokens (the case's prompt, then the reference's own output)
and at each output position we compare the next-token distributions they predict:

- KLD is KL(P_reference || P_variant) = sum_t p_ref(t) * (log p_ref(t) - log p_var(t)), in
  nats, with both distributions the softmax of the raw logits over the whole vocabulary
  (elementwise in float32, the logits' precision, with float64 sums). The direction is the one llama.cpp's
  `llama-perplexity --kl-divergence` uses: how much probability mass the variant moves away
  from where the reference puts it. It is 0 only when the distributions are equal.
- Top-1 agreement is whether the variant's most likely token is the reference's; llama.cpp
  reports it as "Same top p". Under greedy decoding it is the share of positions where the
  variant, given the same history, would have picked the same token.

Summaries pool all positions of all cases (as llama.cpp does over its chunks), so a long
output weighs more than a short one; percentiles are numpy's (linear interpolation).

A server that returns only each position's top-k log-probabilities (Ollama) gives a coarser
measure, `top_k_kld`: the KLD between the two distributions with every token outside the
intersection of both top-k lists merged into one "other" bucket. Merging outcomes can only
lower a KL divergence, so this is a lower bound of the full-vocabulary KLD, close to it when
the top-k lists hold nearly all the probability mass (the usual case for a sharp next-token
distribution). Top-1 agreement is exact as long as k >= 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluators.results import EvaluatorResult

_MASS_FLOOR = 1e-12
"""Smallest probability given to a bucket, so rounding in the server's logprobs cannot give log 0."""

_ROWS_PER_CHUNK = 16
"""Positions computed at a time: a row of a 262,144-token vocabulary is 1 MB in float32."""


@dataclass(frozen=True, kw_only=True)
class TokenFidelity:
    """Per-position fidelity of one case.

    Attributes:
        kld: KL(P_reference || P_variant) in nats, one value per position.
        top1: Whether the two models' most likely tokens are the same, per position.
    """

    kld: tuple[float, ...]
    top1: tuple[bool, ...]

    def __post_init__(self) -> None:
        if len(self.kld) != len(self.top1):
            raise ValueError(f"kld has {len(self.kld)} positions but top1 has {len(self.top1)}")

    @property
    def positions(self) -> int:
        """Number of positions compared."""
        return len(self.kld)


class TokenFidelitySummary(EvaluatorResult):
    """Fidelity pooled over all positions of all cases; every statistic is None without positions.

    Attributes:
        positions: Positions compared, over all cases.
        cases: Cases that contributed (a case with no positions counts, but adds nothing).
        kld_mean: Mean KLD in nats.
        kld_p95: 95th percentile of KLD.
        kld_p99: 99th percentile of KLD.
        kld_max: Largest KLD.
        top1_agreement: Share of positions where the top-1 tokens agree.
    """

    positions: int
    cases: int
    kld_mean: float | None
    kld_p95: float | None
    kld_p99: float | None
    kld_max: float | None
    top1_agreement: float | None


def _log_normalizer(logits: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Per row, logsumexp in float64 and the float32 exponentials it was summed from."""
    top = logits.max(axis=-1, keepdims=True)
    exps = np.exp(logits - top)
    return top.astype(np.float64) + np.log(exps.sum(axis=-1, keepdims=True, dtype=np.float64)), exps


def _kld_rows(reference: np.ndarray[Any, Any], variant: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """KL(P || Q) per row, as sum_t p(t) * ((r(t) - v(t)) - (logsumexp(r) - logsumexp(v))).

    The elementwise work stays in the logits' own precision (float32 from llama.cpp: r - v of
    two close float32 values is exact) and every sum is in float64; for float32 logits the
    result is within 1e-3 relative of a float64 log-softmax (a test checks it), about 3 times
    faster.
    """
    work = np.result_type(reference, variant, np.float32)  # float64 logits stay float64
    reference, variant = reference.astype(work, copy=False), variant.astype(work, copy=False)
    lse_r, exps_r = _log_normalizer(reference)
    lse_v, _ = _log_normalizer(variant)
    p = exps_r / exps_r.sum(axis=-1, keepdims=True, dtype=np.float64).astype(work)
    with np.errstate(invalid="ignore"):  # -inf - -inf where both exclude a token
        difference = (reference - variant) - (lse_r - lse_v).astype(work)
    difference[p == 0] = 0.0  # 0 * log 0 = 0, even against a -inf logit
    return np.asarray((p * difference).sum(axis=-1, dtype=np.float64))


def token_fidelity(
    *, reference_logits: np.ndarray[Any, Any], variant_logits: np.ndarray[Any, Any]
) -> TokenFidelity:
    """Compare the reference's and a variant's next-token predictions at each position.

    Args:
        reference_logits: Raw logits of the reference, shape (positions, vocab).
        variant_logits: Raw logits of the variant for the same positions and vocabulary.

    Returns:
        KLD (reference || variant, nats) and top-1 agreement per position.

    Raises:
        ValueError: The arrays are not 2-D or differ in shape.
    """
    if reference_logits.ndim != 2 or reference_logits.shape != variant_logits.shape:
        raise ValueError(
            "logits must be 2-D (positions, vocab) and of the same shape; got "
            f"{reference_logits.shape} and {variant_logits.shape}"
        )
    kld = np.empty(reference_logits.shape[0], dtype=np.float64)
    for start in range(0, len(kld), _ROWS_PER_CHUNK):
        rows = slice(start, start + _ROWS_PER_CHUNK)
        kld[rows] = _kld_rows(reference_logits[rows], variant_logits[rows])
    top1 = np.argmax(reference_logits, axis=-1) == np.argmax(variant_logits, axis=-1)
    return TokenFidelity(kld=tuple(kld.tolist()), top1=tuple(bool(t) for t in top1))


def summarize_token_fidelity(*, cases: Iterable[TokenFidelity]) -> TokenFidelitySummary:
    """Pool the positions of all cases into one summary.

    Args:
        cases: Per-case fidelity, e.g. rebuilt from stored records as
            `TokenFidelity(kld=tuple(r["kld"]), top1=tuple(r["top1"]))`.

    Returns:
        The pooled summary; its statistics are None when there are no positions.
    """
    kld: list[float] = []
    top1: list[bool] = []
    count = 0
    for case in cases:
        count += 1
        kld.extend(case.kld)
        top1.extend(case.top1)
    if not kld:
        return TokenFidelitySummary(
            positions=0,
            cases=count,
            kld_mean=None,
            kld_p95=None,
            kld_p99=None,
            kld_max=None,
            top1_agreement=None,
        )
    values = np.asarray(kld, dtype=np.float64)
    return TokenFidelitySummary(
        positions=len(values),
        cases=count,
        kld_mean=float(values.mean()),
        kld_p95=float(np.percentile(values, 95)),
        kld_p99=float(np.percentile(values, 99)),
        kld_max=float(values.max()),
        top1_agreement=float(np.mean(top1)),
    )


def top_k_kld(*, reference: Mapping[str, float], variant: Mapping[str, float]) -> float:
    """Lower bound of KL(reference || variant) at one position, from two top-k lists.

    Tokens listed by both models keep their own probability; everything else (tokens only
    one model lists, and the unlisted tail) is one "other" bucket whose probability is what
    the shared tokens leave. KL of these merged distributions never exceeds the full KLD.

    Args:
        reference: The reference's top-k tokens and their log-probabilities (natural log).
        variant: The variant's top-k tokens and log-probabilities at the same position.

    Returns:
        The bound in nats (0 when the shared tokens get the same probabilities).

    Raises:
        ValueError: A list is empty.
    """
    if not reference or not variant:
        raise ValueError("top-k lists must not be empty")
    shared = reference.keys() & variant.keys()
    p = [math.exp(reference[token]) for token in shared]
    q = [math.exp(variant[token]) for token in shared]
    p_other = max(1.0 - sum(p), 0.0)
    q_other = max(1.0 - sum(q), _MASS_FLOOR)
    kld = sum(pi * (math.log(pi) - math.log(max(qi, _MASS_FLOOR))) for pi, qi in zip(p, q, strict=True) if pi)
    if p_other > 0:
        kld += p_other * (math.log(p_other) - math.log(q_other))
    return max(kld, 0.0)


def top_logprob_fidelity(
    *, reference: Sequence[Mapping[str, float]], variant: Sequence[Mapping[str, float]]
) -> TokenFidelity:
    """Per-position fidelity from top-k log-probabilities (see `top_k_kld`).

    Args:
        reference: The reference's top-k list (token to log-probability) per position.
        variant: The variant's top-k list per position, for the same positions.

    Returns:
        The KLD lower bound and top-1 agreement per position.

    Raises:
        ValueError: The sequences differ in length or a list is empty.
    """
    if len(reference) != len(variant):
        raise ValueError(f"reference has {len(reference)} positions but variant has {len(variant)}")
    kld = tuple(top_k_kld(reference=r, variant=v) for r, v in zip(reference, variant, strict=True))
    top1 = tuple(
        max(r, key=r.__getitem__) == max(v, key=v.__getitem__)
        for r, v in zip(reference, variant, strict=True)
    )
    return TokenFidelity(kld=kld, top1=top1)
