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
- Δp is p_variant(t) - p_reference(t) for the reference's most likely token t: negative where
  the variant is less sure of the reference's choice. llama.cpp's "Δp" is the same change for
  the text's next token, which is t wherever the forced output is the reference's greedy one.
- Structural and value top-1 agreement split the positions by the kind of the answer's token
  there (`evaluators.json_tokens`: JSON punctuation, keys and quotes against values).

Summaries pool all positions of all cases (as llama.cpp does over its chunks), so a long
output weighs more than a short one; percentiles are numpy's (linear interpolation). The
99.9th percentile of KLD needs at least 1,000 positions (`P999_MIN_POSITIONS`), so that at
least one position lies above it; with fewer it is None. Per slice (a case's tags) the same
figures pool the positions of the cases carrying the tag.

A server that returns only each position's top-k log-probabilities (Ollama) gives a coarser
measure, `top_k_kld`: the KLD between the two distributions with every token outside the
intersection of both top-k lists merged into one "other" bucket. Merging outcomes can only
lower a KL divergence, so this is a lower bound of the full-vocabulary KLD, close to it when
the top-k lists hold nearly all the probability mass (the usual case for a sharp next-token
distribution). Top-1 agreement is exact as long as k >= 1. Δp is exact where the variant lists
the reference's top token; where it does not, the token's probability is at most the variant's
smallest listed one and at most the mass it leaves unlisted, and that bound is used: Δp is then
an upper bound, the drop a lower bound.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from pydantic import Field

from evaluators.json_tokens import TokenKind
from evaluators.results import EvaluatorResult

_MASS_FLOOR = 1e-12
"""Smallest probability given to a bucket, so rounding in the server's logprobs cannot give log 0."""

_ROWS_PER_CHUNK = 16
"""Positions computed at a time: a row of a 262,144-token vocabulary is 1 MB in float32."""

Token = TypeVar("Token", str, int)
"""How a top-k list names its tokens: by text (a server's logprobs) or by id (llama.cpp's)."""

P999_MIN_POSITIONS = 1000
"""Fewest positions with which the 99.9th percentile of KLD is reported (one lies above it)."""


@dataclass(frozen=True, kw_only=True)
class TokenFidelity:
    """Per-position fidelity of one case.

    Attributes:
        kld: KL(P_reference || P_variant) in nats, one value per position.
        top1: Whether the two models' most likely tokens are the same, per position.
        delta_p: p_variant(t) - p_reference(t) for the reference's top token t, per position
            (None: not measured, as in records written before it was).
        kinds: The kind of the answer's token at each position (`evaluators.json_tokens`);
            None: not classified.
        tags: The case's tags (its slices).
    """

    kld: tuple[float, ...]
    top1: tuple[bool, ...]
    delta_p: tuple[float, ...] | None = None
    kinds: tuple[TokenKind | None, ...] | None = None
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.kld) != len(self.top1):
            raise ValueError(f"kld has {len(self.kld)} positions but top1 has {len(self.top1)}")
        for name in ("delta_p", "kinds"):
            values = getattr(self, name)
            if values is not None and len(values) != len(self.kld):
                raise ValueError(f"kld has {len(self.kld)} positions but {name} has {len(values)}")

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
        kld_p999: 99.9th percentile of KLD; None below `P999_MIN_POSITIONS` positions.
        delta_p_mean: Mean Δp (p_variant - p_reference of the reference's top token).
        delta_p_p1: 1st percentile of Δp (the worst drops).
        delta_p_p5: 5th percentile of Δp.
        delta_p_p95: 95th percentile of Δp.
        delta_p_p99: 99th percentile of Δp.
        delta_p_min: The largest drop: the smallest (most negative) Δp.
        structural_positions: Positions at a structural token of the JSON answer.
        structural_top1_agreement: Top-1 agreement over those positions.
        value_positions: Positions at a value token of the JSON answer.
        value_top1_agreement: Top-1 agreement over those positions.
        slices: The same figures per tag, over the cases carrying it (no slices of their own).
    """

    positions: int
    cases: int
    kld_mean: float | None
    kld_p95: float | None
    kld_p99: float | None
    kld_max: float | None
    top1_agreement: float | None
    kld_p999: float | None = None
    delta_p_mean: float | None = None
    delta_p_p1: float | None = None
    delta_p_p5: float | None = None
    delta_p_p95: float | None = None
    delta_p_p99: float | None = None
    delta_p_min: float | None = None
    structural_positions: int | None = None
    structural_top1_agreement: float | None = None
    value_positions: int | None = None
    value_top1_agreement: float | None = None
    slices: dict[str, TokenFidelitySummary] = Field(default_factory=dict)


def _log_normalizer(logits: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Per row, logsumexp in float64 and the float32 exponentials it was summed from."""
    top = logits.max(axis=-1, keepdims=True)
    exps = np.exp(logits - top)
    return top.astype(np.float64) + np.log(exps.sum(axis=-1, keepdims=True, dtype=np.float64)), exps


def _row_figures(
    reference: np.ndarray[Any, Any], variant: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """KL(P || Q) and Δp per row.

    KLD is sum_t p(t) * ((r(t) - v(t)) - (logsumexp(r) - logsumexp(v))). The elementwise work
    stays in the logits' own precision (float32 from llama.cpp: r - v of two close float32
    values is exact) and every sum is in float64; for float32 logits the result is within 1e-3
    relative of a float64 log-softmax (a test checks it), about 3 times faster. Δp is
    exp(v(t) - logsumexp(v)) - exp(r(t) - logsumexp(r)) at the reference's top token t.
    """
    work = np.result_type(reference, variant, np.float32)  # float64 logits stay float64
    reference, variant = reference.astype(work, copy=False), variant.astype(work, copy=False)
    lse_r, exps_r = _log_normalizer(reference)
    lse_v, _ = _log_normalizer(variant)
    p = exps_r / exps_r.sum(axis=-1, keepdims=True, dtype=np.float64).astype(work)
    with np.errstate(invalid="ignore"):  # -inf - -inf where both exclude a token
        difference = (reference - variant) - (lse_r - lse_v).astype(work)
    difference[p == 0] = 0.0  # 0 * log 0 = 0, even against a -inf logit
    kld = np.asarray((p * difference).sum(axis=-1, dtype=np.float64))
    top = np.argmax(reference, axis=-1)[:, None]
    p_reference = np.exp(np.take_along_axis(reference, top, axis=-1).astype(np.float64) - lse_r)
    p_variant = np.exp(np.take_along_axis(variant, top, axis=-1).astype(np.float64) - lse_v)
    return kld, (p_variant - p_reference)[:, 0]


def token_fidelity(
    *, reference_logits: np.ndarray[Any, Any], variant_logits: np.ndarray[Any, Any]
) -> TokenFidelity:
    """Compare the reference's and a variant's next-token predictions at each position.

    Args:
        reference_logits: Raw logits of the reference, shape (positions, vocab).
        variant_logits: Raw logits of the variant for the same positions and vocabulary.

    Returns:
        KLD (reference || variant, nats), top-1 agreement and Δp per position.

    Raises:
        ValueError: The arrays are not 2-D or differ in shape.
    """
    if reference_logits.ndim != 2 or reference_logits.shape != variant_logits.shape:
        raise ValueError(
            "logits must be 2-D (positions, vocab) and of the same shape; got "
            f"{reference_logits.shape} and {variant_logits.shape}"
        )
    kld = np.empty(reference_logits.shape[0], dtype=np.float64)
    delta_p = np.empty_like(kld)
    for start in range(0, len(kld), _ROWS_PER_CHUNK):
        rows = slice(start, start + _ROWS_PER_CHUNK)
        kld[rows], delta_p[rows] = _row_figures(reference_logits[rows], variant_logits[rows])
    top1 = np.argmax(reference_logits, axis=-1) == np.argmax(variant_logits, axis=-1)
    return TokenFidelity(
        kld=tuple(kld.tolist()), top1=tuple(bool(t) for t in top1), delta_p=tuple(delta_p.tolist())
    )


def _percentile(values: np.ndarray[Any, Any], q: float) -> float:
    return float(np.percentile(values, q))


def _delta_p_figures(cases: Sequence[TokenFidelity]) -> dict[str, float | None]:
    """Δp statistics over the positions of the cases that have it (all None without any)."""
    pooled = [d for case in cases if case.delta_p is not None for d in case.delta_p]
    names = ("delta_p_mean", "delta_p_p1", "delta_p_p5", "delta_p_p95", "delta_p_p99", "delta_p_min")
    if not pooled:
        return dict.fromkeys(names)
    values = np.asarray(pooled, dtype=np.float64)
    figures = [float(values.mean()), *(_percentile(values, q) for q in (1, 5, 95, 99)), float(values.min())]
    return dict(zip(names, figures, strict=True))


def _kind_figures(cases: Sequence[TokenFidelity]) -> dict[str, float | int | None]:
    """Positions and top-1 agreement per token kind (None when no case was classified)."""
    classified = [case for case in cases if case.kinds is not None]
    figures: dict[str, float | int | None] = {}
    for kind in ("structural", "value"):
        pairs = [pair for case in classified for pair in zip(case.top1, case.kinds or (), strict=True)]
        agree = [top1 for top1, token_kind in pairs if token_kind == kind]
        figures[f"{kind}_positions"] = len(agree) if classified else None
        figures[f"{kind}_top1_agreement"] = float(np.mean(agree)) if agree else None
    return figures


def _pooled(cases: Sequence[TokenFidelity]) -> TokenFidelitySummary:
    """The summary of `cases`, without slices."""
    kld = np.asarray([k for case in cases for k in case.kld], dtype=np.float64)
    if not kld.size:
        return TokenFidelitySummary(
            positions=0,
            cases=len(cases),
            kld_mean=None,
            kld_p95=None,
            kld_p99=None,
            kld_max=None,
            top1_agreement=None,
        )
    figures: dict[str, float | int | None] = {
        "positions": len(kld),
        "cases": len(cases),
        "kld_mean": float(kld.mean()),
        "kld_p95": _percentile(kld, 95),
        "kld_p99": _percentile(kld, 99),
        "kld_max": float(kld.max()),
        "top1_agreement": float(np.mean([t for case in cases for t in case.top1])),
        "kld_p999": _percentile(kld, 99.9) if len(kld) >= P999_MIN_POSITIONS else None,
    }
    return TokenFidelitySummary.model_validate(figures | _delta_p_figures(cases) | _kind_figures(cases))


def summarize_token_fidelity(*, cases: Iterable[TokenFidelity]) -> TokenFidelitySummary:
    """Pool the positions of all cases into one summary, and those of each tag's cases per slice.

    Args:
        cases: Per-case fidelity, e.g. rebuilt from stored records as
            `TokenFidelity(kld=tuple(r["kld"]), top1=tuple(r["top1"]))`.

    Returns:
        The pooled summary; its statistics are None when there are no positions.
    """
    measured = list(cases)
    tags = sorted({tag for case in measured for tag in case.tags})
    slices = {tag: _pooled([case for case in measured if tag in case.tags]) for tag in tags}
    return _pooled(measured).model_copy(update={"slices": slices})


def top_k_kld(*, reference: Mapping[Token, float], variant: Mapping[Token, float]) -> float:
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


def top_k_delta_p(*, reference: Mapping[str, float], variant: Mapping[str, float]) -> float:
    """Δp at one position from two top-k lists: exact when the variant lists the reference's top
    token, else an upper bound (the token's probability is at most the variant's smallest listed
    one and at most the mass its list leaves).

    Args:
        reference: The reference's top-k tokens and their log-probabilities (natural log).
        variant: The variant's top-k tokens and log-probabilities at the same position.
    """
    top = max(reference, key=reference.__getitem__)
    if top in variant:
        p_variant = math.exp(variant[top])
    else:
        listed = [math.exp(logprob) for logprob in variant.values()]
        p_variant = min(min(listed), max(1.0 - sum(listed), 0.0))
    return p_variant - math.exp(reference[top])


def top_logprob_fidelity(
    *, reference: Sequence[Mapping[str, float]], variant: Sequence[Mapping[str, float]]
) -> TokenFidelity:
    """Per-position fidelity from top-k log-probabilities (see `top_k_kld`, `top_k_delta_p`).

    Args:
        reference: The reference's top-k list (token to log-probability) per position.
        variant: The variant's top-k list per position, for the same positions.

    Returns:
        The KLD lower bound, top-1 agreement and Δp (an upper bound) per position.

    Raises:
        ValueError: The sequences differ in length or a list is empty.
    """
    if len(reference) != len(variant):
        raise ValueError(f"reference has {len(reference)} positions but variant has {len(variant)}")
    pairs = list(zip(reference, variant, strict=True))
    kld = tuple(top_k_kld(reference=r, variant=v) for r, v in pairs)
    top1 = tuple(max(r, key=r.__getitem__) == max(v, key=v.__getitem__) for r, v in pairs)
    delta_p = tuple(top_k_delta_p(reference=r, variant=v) for r, v in pairs)
    return TokenFidelity(kld=kld, top1=top1, delta_p=delta_p)
