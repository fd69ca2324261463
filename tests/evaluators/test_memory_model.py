"""The memory model on hand-computed numbers: KV bytes per token, sliding-window cells, the RSS
parts, and the most sequences a budget fits."""

from __future__ import annotations

import pytest

from evaluators.memory_model import (
    MemoryModelError,
    kv_cache_bytes,
    max_sequences,
    model_shape,
    predict_memory,
)

GEMMA3_270M = {
    "general.architecture": "gemma3",
    "gemma3.block_count": 18,
    "gemma3.attention.head_count": 4,
    "gemma3.attention.head_count_kv": 1,
    "gemma3.attention.key_length": 256,
    "gemma3.attention.value_length": 256,
    "gemma3.attention.sliding_window": 512,
    "gemma3.embedding_length": 640,
    "gemma3.feed_forward_length": 2048,
    "gemma3.context_length": 32768,
    "tokenizer.ggml.tokens": 262144,
}
"""Gemma 3 270M's metadata as its GGUF has it."""

SMALL = {
    "general.architecture": "llama",
    "llama.block_count": 2,
    "llama.attention.head_count": 2,
    "llama.attention.head_count_kv": 1,
    "llama.embedding_length": 8,
    "llama.feed_forward_length": 16,
    "llama.context_length": 4096,
    "tokenizer.ggml.tokens": ["a"] * 100,
}
"""A model small enough to add up by hand: no sliding window, key and value length n_embd / heads = 4."""


def test_gemma3_layers_one_in_six_global():
    shape = model_shape(GEMMA3_270M)
    assert [layer for layer, swa in enumerate(shape.swa_layers()) if not swa] == [5, 11, 17]


@pytest.mark.parametrize(
    ("type_k", "type_v", "per_token"),
    [
        ("f16", "f16", 18 * 1 * (256 * 2 + 256 * 2)),  # 18,432
        ("q8_0", "q8_0", 18 * 512 * 34 / 32),  # 9,792
        ("q4_0", "q4_0", 18 * 512 * 18 / 32),  # 5,184
        ("q8_0", "f16", 18 * (256 * 34 / 32 + 256 * 2)),  # 14,112
    ],
)
def test_kv_bytes_per_token_by_hand(type_k, type_v, per_token):
    full, swa = model_shape(GEMMA3_270M).kv_bytes_per_cell(type_k=type_k, type_v=type_v)
    assert full + swa == pytest.approx(per_token)
    assert full == pytest.approx(per_token * 3 / 18)  # layers 5, 11, 17


def test_kv_cache_as_llama_cpp_reports_it():
    # llama.cpp 0.3.36's log for n_ctx 8192, f16, full-size SWA: 24.00 MiB (3 layers) + 120.00 MiB (15)
    shape = model_shape(GEMMA3_270M)
    assert kv_cache_bytes(shape, n_ctx=8192, n_seq_max=3) == (24 + 120) * 2**20


def test_sliding_window_cache_without_swa_full():
    shape = model_shape(GEMMA3_270M)
    # SWA cells: window 512 x 3 sequences + micro-batch 512 = 2,048 (a multiple of 256)
    kv = kv_cache_bytes(shape, n_ctx=16384, n_seq_max=3, swa_full=False)
    assert kv == 3072 * 16384 + 15360 * 2048
    # a context smaller than that keeps n_ctx cells
    assert kv_cache_bytes(shape, n_ctx=1024, n_seq_max=3, swa_full=False) == 18432 * 1024


def test_prediction_parts_by_hand():
    shape = model_shape(SMALL)
    assert (shape.key_length, shape.value_length, shape.n_vocab) == (4, 4, 100)
    predicted = predict_memory(shape, weights_bytes=1000, baseline_bytes=5000, context=1000, sequences=3)
    # per cell: 2 layers x 1 head x (4 + 4) x 2 bytes = 32
    assert predicted.kv_bytes_per_token == 32
    assert predicted.kv_bytes == 32 * 3000 + 32 * 512  # decoding context + the tokenizer's 512 cells
    assert predicted.output_bytes == 4 * 100 * (3 + 1 + 1)
    # 512 tokens x (8 x 8 + 4 x 2 x 4 + 3 x 16) floats, and one row of logits per sequence
    assert predicted.compute_bytes == 4 * (512 * (64 + 32 + 48) + 3 * 100)
    assert predicted.vocabulary_bytes == 160 * 100
    assert predicted.total_bytes == 5000 + 1000 + 16000 + 112384 + 2000 + 296112


def test_max_sequences_in_two_gib_by_hand():
    shape = model_shape(SMALL)
    baseline, weights, context = 200 * 2**20, 2**30, 200_000
    # fixed: vocabulary 16,000 + tokenizer KV 32 x 512 + outputs 4 x 100 x 2 + activations 294,912
    fixed = baseline + weights + 16_000 + 16_384 + 800 + 294_912
    per_sequence = 32 * context + 400 + 400  # KV, one output row, one logits row
    assert (2**31 - fixed) // per_sequence == 134
    found = max_sequences(
        shape, budget_bytes=2**31, weights_bytes=weights, baseline_bytes=baseline, context=context
    )
    assert found == 134
    one = fixed + per_sequence
    assert (
        max_sequences(
            shape, budget_bytes=one, weights_bytes=weights, baseline_bytes=baseline, context=context
        )
        == 1
    )
    assert (
        max_sequences(
            shape, budget_bytes=one - 1, weights_bytes=weights, baseline_bytes=baseline, context=context
        )
        == 0
    )


def test_missing_key_is_named():
    broken = {k: v for k, v in GEMMA3_270M.items() if k != "gemma3.block_count"}
    with pytest.raises(MemoryModelError, match=r"gemma3\.block_count is missing"):
        model_shape(broken)


def test_unknown_cache_type_is_named():
    with pytest.raises(MemoryModelError, match="unknown KV-cache type 'q3_k'"):
        model_shape(GEMMA3_270M).kv_bytes_per_cell(type_k="q3_k")


def test_context_below_one_is_refused():
    with pytest.raises(MemoryModelError, match="at least 1"):
        predict_memory(model_shape(SMALL), weights_bytes=1, baseline_bytes=1, context=0, sequences=1)


def test_max_sequences_stops_at_llama_cpps_limit():
    shape = model_shape(SMALL)
    # 255 sequences of 10 tokens: far below 2 GiB; llama.cpp holds 256 per context, one the prefix
    found = max_sequences(shape, budget_bytes=2**31, weights_bytes=1, baseline_bytes=1, context=10)
    assert found == 255
