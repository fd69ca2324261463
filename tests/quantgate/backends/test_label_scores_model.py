"""Label probabilities from the real model: two banking77 cases on the session ladder's Q4_K_M,
decoded one sequence at a time with label scoring on."""

from __future__ import annotations

import math

import pytest

from evaluators.classification import LABEL_PROBABILITY_KEY, reported_label_probabilities
from graphs.extraction import prompt_messages
from quantgate.evaluate.options import RunOptions, extraction_context
from quantgate.inputs.dataset import load_dataset
from quantgate.inputs.variants import VariantSet

pytestmark = pytest.mark.model


def test_label_probabilities_sum_to_one_and_greedy_picks_the_most_probable_label(ladder: VariantSet) -> None:
    from quantgate.backends.label_scores import LABEL_SCORING_KEY
    from quantgate.backends.llamacpp import open_llamacpp

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
