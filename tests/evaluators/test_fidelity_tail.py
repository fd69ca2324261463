"""The tail of token fidelity: KLD's 99.9th percentile, Δp of the reference's top token,
top-1 agreement on structural and value tokens, and the same per slice; on four positions
whose probabilities are chosen so every figure can be computed by hand."""

import math

import numpy as np
import pytest
from scipy.stats import entropy

from evaluators.fidelity import (
    P999_MIN_POSITIONS,
    TokenFidelity,
    summarize_token_fidelity,
    token_fidelity,
    top_k_delta_p,
    top_logprob_fidelity,
)
from evaluators.json_tokens import TokenKind

REFERENCE_P = np.array([[0.5, 0.25, 0.25], [0.8, 0.1, 0.1], [0.1, 0.1, 0.8], [0.6, 0.3, 0.1]])
VARIANT_P = np.array([[0.2, 0.6, 0.2], [0.7, 0.2, 0.1], [0.05, 0.05, 0.9], [0.6, 0.3, 0.1]])
# Δp at the reference's top token (0, 0, 2, 0): 0.2 - 0.5, 0.7 - 0.8, 0.9 - 0.8, 0.6 - 0.6
DELTA_P = [-0.3, -0.1, 0.1, 0.0]
KINDS: tuple[TokenKind, ...] = (
    "structural",
    "structural",
    "structural",
    "value",
)  # the tokens of {"a": 1}: '{"', 'a', '":', '1}'


def _case(tags: tuple[str, ...] = ()) -> TokenFidelity:
    fidelity = token_fidelity(reference_logits=np.log(REFERENCE_P) + 3.0, variant_logits=np.log(VARIANT_P))
    return TokenFidelity(
        kld=fidelity.kld, top1=fidelity.top1, delta_p=fidelity.delta_p, kinds=KINDS, tags=tags
    )


def test_delta_p_is_the_change_of_the_reference_top_token_probability():
    case = _case()
    assert case.delta_p == pytest.approx(DELTA_P, abs=1e-12)
    assert case.top1 == (False, True, True, True)
    assert case.kld == pytest.approx([entropy(p, q) for p, q in zip(REFERENCE_P, VARIANT_P, strict=True)])


def test_summary_of_four_positions_by_hand():
    summary = summarize_token_fidelity(cases=[_case()])
    # Δp sorted: -0.3, -0.1, 0.0, 0.1; numpy's linear percentile at rank q/100 * 3
    assert summary.delta_p_mean == pytest.approx(-0.075)
    assert summary.delta_p_p1 == pytest.approx(-0.3 + 0.03 * 0.2)
    assert summary.delta_p_p5 == pytest.approx(-0.3 + 0.15 * 0.2)
    assert summary.delta_p_p95 == pytest.approx(0.85 * 0.1)
    assert summary.delta_p_p99 == pytest.approx(0.97 * 0.1)
    assert summary.delta_p_min == pytest.approx(-0.3)
    for q, value in [(1, summary.delta_p_p1), (5, summary.delta_p_p5), (95, summary.delta_p_p95)]:
        assert value == pytest.approx(np.percentile(DELTA_P, q))
    assert summary.structural_positions == 3
    assert summary.structural_top1_agreement == pytest.approx(2 / 3)
    assert summary.value_positions == 1
    assert summary.value_top1_agreement == 1.0
    assert summary.kld_p999 is None  # 4 positions: no position lies above a 99.9th percentile


def test_kld_p999_from_a_thousand_positions():
    kld = tuple(float(x) for x in np.linspace(0.0, 9.99, P999_MIN_POSITIONS))
    summary = summarize_token_fidelity(cases=[TokenFidelity(kld=kld, top1=(True,) * len(kld))])
    assert summary.kld_p999 == pytest.approx(np.percentile(kld, 99.9))
    assert summary.kld_p999 == pytest.approx(0.999 * 999 * 0.01)  # rank 998.001 of steps of 0.01
    assert summary.kld_max == pytest.approx(9.99)


def test_slices_pool_the_cases_of_each_tag():
    other = TokenFidelity(kld=(0.5,), top1=(False,), delta_p=(-0.9,), kinds=("value",), tags=("lang:de",))
    summary = summarize_token_fidelity(cases=[_case(("lang:en", "short")), other])
    assert sorted(summary.slices) == ["lang:de", "lang:en", "short"]
    english, german = summary.slices["lang:en"], summary.slices["lang:de"]
    assert (english.positions, english.cases) == (4, 1)
    assert english.delta_p_min == pytest.approx(-0.3)
    assert (german.positions, german.kld_mean, german.delta_p_mean) == (1, 0.5, -0.9)
    assert german.value_top1_agreement == 0.0
    assert german.structural_positions == 0
    assert german.structural_top1_agreement is None  # no structural position: not 0
    assert summary.positions == 5
    assert summary.delta_p_min == pytest.approx(-0.9)
    assert summary.value_top1_agreement == pytest.approx(0.5)
    assert german.slices == {}


def test_records_without_delta_p_or_kinds_leave_those_figures_none():
    summary = summarize_token_fidelity(cases=[TokenFidelity(kld=(0.1, 0.2), top1=(True, False))])
    assert summary.kld_mean == pytest.approx(0.15)
    assert summary.delta_p_mean is None
    assert summary.delta_p_min is None
    assert summary.structural_positions is None
    assert summary.value_top1_agreement is None


def test_top_k_delta_p_is_exact_when_listed_and_a_bound_when_not():
    reference = {"a": math.log(0.7), "b": math.log(0.2)}
    assert top_k_delta_p(reference=reference, variant={"a": math.log(0.5), "c": math.log(0.3)}) == (
        pytest.approx(-0.2)
    )
    # "a" unlisted: at most min(0.3, 1 - 0.9) = 0.1
    unlisted = {"b": math.log(0.6), "c": math.log(0.3)}
    assert top_k_delta_p(reference=reference, variant=unlisted) == pytest.approx(0.1 - 0.7)
    walk = top_logprob_fidelity(reference=[reference, reference], variant=[reference, unlisted])
    assert walk.delta_p == pytest.approx([0.0, -0.6])


def test_delta_p_and_kinds_must_cover_every_position():
    with pytest.raises(ValueError, match="delta_p"):
        TokenFidelity(kld=(0.1, 0.2), top1=(True, True), delta_p=(0.0,))
    with pytest.raises(ValueError, match="kinds"):
        TokenFidelity(kld=(0.1,), top1=(True,), kinds=("value", None))
