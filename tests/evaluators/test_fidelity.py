"""Token fidelity: KLD (reference || variant) and top-1 agreement from raw logits, and the
lower bound from top-k log-probabilities (what Ollama returns)."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import entropy

from evaluators.fidelity import (
    TokenFidelity,
    summarize_token_fidelity,
    token_fidelity,
    top_k_kld,
    top_logprob_fidelity,
)


def softmax(logits):
    exp = np.exp(logits - np.max(logits))
    return exp / exp.sum()


REFERENCE = np.array([[2.0, 1.0, 0.1], [0.0, 0.0, 3.0]])
VARIANT = np.array([[1.5, 1.2, 0.3], [0.5, 0.0, 2.0]])


def test_kld_matches_a_direct_computation_on_a_three_token_vocabulary():
    result = token_fidelity(reference_logits=REFERENCE, variant_logits=VARIANT)
    for row, kld in enumerate(result.kld):
        p, q = softmax(REFERENCE[row]), softmax(VARIANT[row])
        assert kld == pytest.approx(
            sum(pi * math.log(pi / qi) for pi, qi in zip(p, q, strict=True)), rel=1e-12
        )
        assert kld == pytest.approx(entropy(p, q), rel=1e-12)  # scipy: KL(p || q) in nats
    assert result.top1 == (True, True)
    assert result.positions == 2


def test_float32_kld_on_a_gemma_sized_vocabulary_is_within_1e_3_of_float64():
    from scipy.special import log_softmax

    rng = np.random.default_rng(0)
    reference = rng.normal(0, 3, (8, 262_144)).astype(np.float32)
    reference[:, :50] += 12  # a few likely tokens, as a language model has
    variant = (reference + rng.normal(0, 0.05, reference.shape)).astype(np.float32)
    log_p = log_softmax(reference.astype(np.float64), axis=-1)
    log_q = log_softmax(variant.astype(np.float64), axis=-1)
    exact = (np.exp(log_p) * (log_p - log_q)).sum(axis=-1)
    result = token_fidelity(reference_logits=reference, variant_logits=variant)
    assert np.array(result.kld) == pytest.approx(exact, rel=1e-3)
    assert min(exact) > 1e-5  # small KLDs, where float32 cancellation would show


def test_direction_is_reference_to_variant():
    forward = token_fidelity(reference_logits=REFERENCE, variant_logits=VARIANT).kld
    backward = token_fidelity(reference_logits=VARIANT, variant_logits=REFERENCE).kld
    assert forward[1] == pytest.approx(entropy(softmax(REFERENCE[1]), softmax(VARIANT[1])))
    assert forward[1] != pytest.approx(backward[1])


def test_identical_logits_give_zero_and_full_agreement():
    logits = np.random.default_rng(0).normal(size=(5, 1000)).astype(np.float32)
    result = token_fidelity(reference_logits=logits, variant_logits=logits.copy())
    assert result.kld == (0.0,) * 5
    assert result.top1 == (True,) * 5


def test_adding_a_constant_to_logits_changes_nothing():
    rng = np.random.default_rng(1)
    reference = rng.normal(scale=5, size=(40, 300))  # more rows than one float64 chunk
    variant = reference + rng.normal(scale=0.5, size=reference.shape)
    base = token_fidelity(reference_logits=reference, variant_logits=variant)
    shifted = token_fidelity(reference_logits=reference + 7.0, variant_logits=variant - 3.0)
    assert np.allclose(base.kld, shifted.kld, rtol=1e-9, atol=1e-12)
    assert base.top1 == shifted.top1
    assert all(k > 0 for k in base.kld)


def test_top1_disagreement_and_large_logits_stay_finite():
    reference = np.array([[1000.0, 0.0, -1000.0]], dtype=np.float32)
    variant = np.array([[0.0, 1000.0, -np.inf]], dtype=np.float32)
    result = token_fidelity(reference_logits=reference, variant_logits=variant)
    assert result.top1 == (False,)
    assert result.kld[0] == pytest.approx(1000.0)


@pytest.mark.parametrize(("reference", "variant"), [((3, 4), (3, 5)), ((4,), (4,))])
def test_shape_mismatch_is_refused(reference, variant):
    with pytest.raises(ValueError, match="same shape"):
        token_fidelity(reference_logits=np.zeros(reference), variant_logits=np.zeros(variant))


def test_per_position_lengths_must_agree():
    with pytest.raises(ValueError, match="positions"):
        TokenFidelity(kld=(0.1, 0.2), top1=(True,))


def test_summary_pools_all_positions_of_all_cases():
    cases = [
        TokenFidelity(kld=(0.1, 0.0, 2.0), top1=(True, True, False)),
        TokenFidelity(kld=(), top1=()),
        TokenFidelity(kld=tuple(np.linspace(0, 1, 50)), top1=(True,) * 50),
    ]
    pooled = np.array([k for case in cases for k in case.kld])
    summary = summarize_token_fidelity(cases=cases)
    assert summary.positions == 53
    assert summary.cases == 3
    assert summary.kld_mean == pytest.approx(pooled.mean())
    assert summary.kld_p95 == pytest.approx(np.percentile(pooled, 95))
    assert summary.kld_p99 == pytest.approx(np.percentile(pooled, 99))
    assert summary.kld_max == 2.0
    assert summary.top1_agreement == pytest.approx(52 / 53)
    assert summary.model_dump()["kld_max"] == 2.0


@pytest.mark.parametrize("cases", [[], [TokenFidelity(kld=(), top1=())]])
def test_summary_without_positions_has_no_statistics(cases):
    summary = summarize_token_fidelity(cases=cases)
    assert summary.model_dump() == {
        "positions": 0,
        "cases": len(cases),
        "kld_mean": None,
        "kld_p95": None,
        "kld_p99": None,
        "kld_max": None,
        "top1_agreement": None,
        "kld_p999": None,
        "delta_p_mean": None,
        "delta_p_p1": None,
        "delta_p_p5": None,
        "delta_p_p95": None,
        "delta_p_p99": None,
        "delta_p_min": None,
        "structural_positions": None,
        "structural_top1_agreement": None,
        "value_positions": None,
        "value_top1_agreement": None,
        "slices": {},
    }


def test_a_token_both_models_exclude_adds_nothing():
    reference = np.array([[1.0, 0.0, -np.inf]])
    variant = np.array([[0.0, 1.0, -np.inf]])
    with np.errstate(all="raise"):
        result = token_fidelity(reference_logits=reference, variant_logits=variant)
    p, q = softmax(reference[0, :2]), softmax(variant[0, :2])
    assert result.kld[0] == pytest.approx(entropy(p, q))


def top_k(probabilities, k):
    order = np.argsort(-probabilities)[:k]
    return {f"t{i}": math.log(probabilities[i]) for i in order}


def test_top_k_kld_by_hand():
    reference = {"a": math.log(0.5), "b": math.log(0.3)}  # c = 0.2 unlisted
    variant = {"a": math.log(0.4), "b": math.log(0.4)}  # c = 0.2 unlisted
    by_hand = 0.5 * math.log(0.5 / 0.4) + 0.3 * math.log(0.3 / 0.4) + 0.2 * math.log(0.2 / 0.2)
    assert top_k_kld(reference=reference, variant=variant) == pytest.approx(by_hand, rel=1e-12)


def test_tokens_listed_by_one_model_only_fall_into_the_other_bucket():
    reference = {"a": math.log(0.6), "b": math.log(0.3)}
    variant = {"a": math.log(0.6), "x": math.log(0.3)}
    # shared {a}: both 0.6; other: 0.4 vs 0.4, so the bound is 0 although b and x differ
    assert top_k_kld(reference=reference, variant=variant) == pytest.approx(0.0, abs=1e-15)


def test_top_k_kld_equals_the_full_kld_with_the_whole_vocabulary():
    p, q = softmax(REFERENCE[0]), softmax(VARIANT[0])
    assert top_k_kld(reference=top_k(p, 3), variant=top_k(q, 3)) == pytest.approx(entropy(p, q), rel=1e-12)


def test_top_k_kld_is_a_lower_bound_that_grows_with_k():
    rng = np.random.default_rng(7)
    for _ in range(200):
        p = softmax(rng.normal(scale=3.0, size=50))
        q = softmax(np.log(p) + rng.normal(scale=0.5, size=50))
        full = entropy(p, q)
        bounds = [top_k_kld(reference=top_k(p, k), variant=top_k(q, k)) for k in (1, 5, 20, 50)]
        assert all(b <= full + 1e-12 for b in bounds)
        assert all(a <= b + 1e-12 for a, b in itertools.pairwise(bounds))  # a finer partition, a larger bound
        assert bounds[-1] == pytest.approx(full, rel=1e-9, abs=1e-12)


def test_top_logprob_fidelity_per_position():
    reference = [{"a": math.log(0.9), "b": math.log(0.05)}, {"a": math.log(0.4), "b": math.log(0.5)}]
    variant = [{"a": math.log(0.8), "b": math.log(0.1)}, {"a": math.log(0.6), "b": math.log(0.3)}]
    result = top_logprob_fidelity(reference=reference, variant=variant)
    assert result.top1 == (True, False)
    assert result.kld[0] == pytest.approx(top_k_kld(reference=reference[0], variant=variant[0]))
    assert result.kld[0] > 0
    with pytest.raises(ValueError, match="positions"):
        top_logprob_fidelity(reference=reference, variant=variant[:1])
    with pytest.raises(ValueError, match="empty"):
        top_k_kld(reference={}, variant=variant[0])
