"""benchmarks/kld_crosscheck.py without a model: llama-perplexity's report parsed from a captured
output, its chunks and scored positions, its base file read back, and its KLD formula."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from evaluators.fidelity import token_fidelity
from tests.benchmarks import load_benchmark

REPORT = Path(__file__).parent / "data" / "llama_perplexity_kld_q2_k.txt"


crosscheck = load_benchmark("kld_crosscheck")


def test_the_report_s_figures_are_read_with_percentages_as_fractions() -> None:
    figures = crosscheck.parse_report(REPORT.read_text())

    assert figures == {
        "kld_mean": 0.358969,
        "kld_max": 5.223593,
        "kld_p999": 4.678226,
        "kld_p99": 1.746732,
        "kld_p95": 1.067160,
        "kld_median": 0.227377,
        "delta_p_mean": pytest.approx(-0.05877),
        "delta_p_p1": pytest.approx(-0.57118),
        "top1_agreement": pytest.approx(0.78431),
    }


def test_a_report_without_statistics_is_refused_naming_the_figure() -> None:
    cut = REPORT.read_text().split("====== KL divergence statistics")[0]

    with pytest.raises(ValueError, match="no kld_mean"):
        crosscheck.parse_report(cut)


def test_each_chunk_scores_the_tokens_after_its_first_half_with_bos_in_front() -> None:
    splits = crosscheck.scored_positions(list(range(16)), n_ctx=8, bos=99)

    assert [(s.prompt, s.target) for s in splits] == [
        ([99, 1, 2, 3, 4], [5, 6, 7]),
        ([99, 9, 10, 11, 12], [13, 14, 15]),
    ]


def test_without_bos_the_chunk_keeps_its_first_token_and_partial_chunks_are_refused() -> None:
    assert crosscheck.scored_positions(list(range(8)), n_ctx=8, bos=None)[0].prompt == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="not whole chunks of 8"):
        crosscheck.scored_positions(list(range(10)), n_ctx=8, bos=None)


def test_the_base_file_gives_back_its_tokens_and_log_probabilities(tmp_path: Path) -> None:
    # n_ctx 4, vocabulary 3, 1 chunk: 4 tokens, then 4 - 1 - 2 = 1 row of 2*2 + 4 uint16
    scale, floor = 0.5, -3.0
    row = struct.pack("<ff", scale, floor) + struct.pack("<4H", 6, 0, 2, 0)
    path = tmp_path / "base.kld"
    path.write_bytes(b"_logits_" + struct.pack("<Iii", 4, 3, 1) + struct.pack("<4i", 2, 7, 1, 0) + row)

    base = crosscheck.KldBase.read(path)

    assert (base.n_ctx, base.n_vocab, base.tokens) == (4, 3, [2, 7, 1, 0])
    assert base.log_probs(slice(0, 1)).tolist() == [[0.0, -3.0, -2.0]]


def test_a_file_of_another_kind_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.kld"
    path.write_bytes(b"GGUF" + bytes(32))
    with pytest.raises(ValueError, match="not a llama-perplexity --kl-divergence-base file"):
        crosscheck.KldBase.read(path)


def test_llama_s_formula_is_quantgate_s_kld_when_no_token_lies_below_its_floor() -> None:
    rng = np.random.default_rng(0)
    reference = rng.normal(size=(5, 50)).astype(np.float32)
    variant = reference + rng.normal(scale=0.3, size=(5, 50)).astype(np.float32)
    log_p = reference - np.log(np.exp(reference.astype(np.float64)).sum(axis=-1, keepdims=True))

    ours = token_fidelity(reference_logits=reference, variant_logits=variant)
    llama = crosscheck.llama_formula(log_p, variant)

    assert llama["kld"] == pytest.approx(ours.kld, rel=1e-4)
    assert llama["top1"].tolist() == list(ours.top1)


def test_llama_s_formula_leaves_out_tokens_16_nats_below() -> None:
    base = np.log(np.array([[1 - 1e-8, 1e-8]]))  # the second token lies 18 nats down
    variant = np.array([[0.0, 0.0]], dtype=np.float32)

    assert crosscheck.llama_formula(base, variant)["kld"][0] == pytest.approx(np.log(2), rel=1e-6)
