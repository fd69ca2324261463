"""Label probabilities from the real model: two banking77 cases on the session ladder's Q4_K_M,
decoded one sequence at a time with label scoring on."""

from __future__ import annotations

import math
from typing import Any

import pytest

from evaluators.classification_figures import LABEL_PROBABILITY_KEY, reported_label_probabilities
from graphs.long_inputs import prompt_messages
from quantgate.evaluate._options import RunOptions, extraction_context
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import VariantSet

pytestmark = pytest.mark.model


def test_label_probabilities_sum_to_one_and_greedy_picks_the_most_probable_label(ladder: VariantSet) -> None:
    from quantgate.backends.llamacpp._label_scores import LABEL_SCORING_KEY
    from quantgate.backends.llamacpp._llamacpp import open_llamacpp

    dataset = load_dataset("banking77")
    labels = dataset.task.labels  # type: ignore[union-attr]
    q4 = next(v for v in ladder.variants if v.name == "Q4_K_M")
    variant = q4.model_copy(update={"options": {"score_labels": True}})
    with open_llamacpp(variant, dataset.schema) as opened:
        assert opened.runtime["score_labels"] is True
        context = extraction_context(dataset, opened, RunOptions(progress=False))
        for case in dataset.cases[:2]:
            messages, _ = prompt_messages(context, case.text)
            answer = opened.chat_model.invoke(messages)
            reported = answer.response_metadata
            probabilities = reported_label_probabilities(reported, labels)
            assert probabilities is not None
            assert math.fsum(probabilities.values()) == pytest.approx(1.0, abs=1e-9)
            chosen = json_label(answer.text)
            assert reported[LABEL_PROBABILITY_KEY] == probabilities[chosen]
            assert max(probabilities, key=lambda label: probabilities[label]) == chosen
            assert reported[LABEL_SCORING_KEY] > 0


def json_label(text: str) -> str:
    import json

    label: str = json.loads(text)["label"]
    return label


def test_all_labels_in_one_batch_give_the_log_probabilities_of_teacher_forcing_each(
    ladder: VariantSet,
) -> None:
    import llama_cpp

    from quantgate.backends.llamacpp._engine import EmbeddedEngine
    from quantgate.backends.llamacpp._label_context import ContinuationScorer
    from quantgate.backends.llamacpp._label_scores import sequence_logprob
    from quantgate.backends.llamacpp._teacher_forcing import forced_logits

    f16 = next(v for v in ladder.variants if v.name == "F16")
    engine = EmbeddedEngine(f16.model, n_ctx=1024)  # one sequence, its own context: teacher forcing
    llama = engine.llama
    prompt = llama.tokenize(b"Card payments are declined when the")
    other = llama.tokenize(b"Card payments are accepted when the")
    labels = [llama.tokenize(text, add_bos=False) for text in (b" card expired", b" PIN is wrong", b" bank")]
    scorer = ContinuationScorer(llama, sequences=4, n_ctx=1024, n_threads=engine.n_threads)
    try:
        expected = [sequence_logprob(forced_logits(llama, prompt, label), label) for label in labels]
        first = scorer.logprobs(prompt, labels)
        scorer.logprobs(other, labels)  # then the prompt again, its shared start cached
        decoded: list[int] = []
        original = scorer._decode

        def counting(entries: Any, totals: Any) -> None:
            decoded.append(len(entries))
            original(entries, totals)

        scorer._decode = counting  # type: ignore[method-assign]
        again = scorer.logprobs(prompt, labels)
        shared = next(i for i, (a, b) in enumerate(zip(prompt, other, strict=False)) if a != b)
        # the tail after the shared start, then each label but its last token
        assert decoded == [len(prompt) - shared + sum(len(label) - 1 for label in labels)]
        memory = llama_cpp.llama_get_memory(scorer._context.ctx)
        assert [llama_cpp.llama_memory_seq_pos_max(memory, k) for k in range(4)] == [
            len(prompt) - 1,
            -1,
            -1,
            -1,
        ]
    finally:
        scorer.close()
        engine.close()
    # the same sums, up to batch-size effects in llama.cpp's float arithmetic (~1e-3 nats)
    assert first == pytest.approx(expected, abs=0.01)
    assert again == pytest.approx(expected, abs=0.01)
    assert all(value < 0 for value in first)
    assert len({round(v, 1) for v in expected}) == 3  # three different labels: a mix-up would show


def test_more_labels_than_llama_cpp_has_sequences_are_all_scored(ladder: VariantSet) -> None:
    """300 labels: llama.cpp gives a context at most 256 sequences, so they are scored in two groups
    (255 and 45) beside the prompt's sequence; a context of 301 would not be made at all."""
    from quantgate.backends.llamacpp._label_scores import LABEL_SCORING_KEY
    from quantgate.backends.llamacpp._llamacpp import open_llamacpp

    labels = [f"label_{i:03d}" for i in range(300)]
    schema = {
        "type": "object",
        "properties": {"label": {"type": "string", "enum": labels}},
        "required": ["label"],
        "additionalProperties": False,
    }
    q4 = next(v for v in ladder.variants if v.name == "Q4_K_M")
    variant = q4.model_copy(update={"options": {"score_labels": True}})
    with open_llamacpp(variant, schema) as opened:
        answer = opened.chat_model.invoke([("user", "Pick label_123 and answer in JSON.")])
    probabilities = reported_label_probabilities(answer.response_metadata, labels)
    assert probabilities is not None  # every one of the 300 labels has its probability
    assert math.fsum(probabilities.values()) == pytest.approx(1.0, abs=1e-9)
    chosen = json_label(answer.text)
    assert max(probabilities, key=lambda label: probabilities[label]) == chosen
    assert answer.response_metadata[LABEL_SCORING_KEY] > 0


def test_continuations_scored_in_groups_get_the_log_probabilities_of_teacher_forcing(
    ladder: VariantSet,
) -> None:
    from quantgate.backends.llamacpp._engine import EmbeddedEngine
    from quantgate.backends.llamacpp._label_context import ContinuationScorer
    from quantgate.backends.llamacpp._label_scores import sequence_logprob
    from quantgate.backends.llamacpp._teacher_forcing import forced_logits

    f16 = next(v for v in ladder.variants if v.name == "F16")
    engine = EmbeddedEngine(f16.model, n_ctx=1024)
    llama = engine.llama
    prompt = llama.tokenize(b"Card payments are declined when the")
    texts = (b" card expired", b" PIN is wrong", b" bank", b" limit is reached", b" card is frozen")
    labels = [llama.tokenize(text, add_bos=False) for text in texts]
    scorer = ContinuationScorer(llama, sequences=3, n_ctx=1024, n_threads=engine.n_threads)  # 2, 2, 1
    try:
        expected = [sequence_logprob(forced_logits(llama, prompt, label), label) for label in labels]
        grouped = scorer.logprobs(prompt, labels)
    finally:
        scorer.close()
        engine.close()
    assert grouped == pytest.approx(expected, abs=0.01)  # batch-size effects only (~1e-3 nats)
    assert len({round(v, 1) for v in expected}) == 5  # five different labels: a mix-up would show
