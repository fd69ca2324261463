"""Each variant's change of the gold label's probability against the reference, set in its summary
entry after the variants, from a run of fake chat models that report label probabilities as the
embedded backend's `score_labels` does; every figure counted by hand."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from pydantic import Field

from evaluators.classification_figures import ClassificationSummary
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.render._summary_table import render_summary
from quantgate.rundir._store import read_summary
from tests.fakes import LABELS, QueuedChatModel, write_classification_dataset

GOLDS = ["card_lost", "card_arrival", "card_lost", "top_up_failed"]
"""Cases c0..c3; both variants answer every gold label."""
REFERENCE_GOLD_P = [0.9, 0.3, 0.6, 0.8]
QUANT_GOLD_P = [0.7, 0.35, 0.6, 0.5]
"""The probability each gives the gold label; the other two labels share the rest."""


class ScoringChatModel(QueuedChatModel):
    """Answers as `QueuedChatModel`, its last chunk carrying each label's probability for the case
    whose text it was given (`label_probability:<label>`, as `score_labels` reports them)."""

    probabilities: dict[str, dict[str, float]] = Field(default_factory=dict)

    def _answer(self, messages: list[BaseMessage]) -> Iterator[ChatGenerationChunk]:
        text = " ".join(str(m.content) for m in messages)
        found = next((p for key, p in self.probabilities.items() if key in text), {})
        for chunk in super()._answer(messages):
            message = chunk.message
            if found and message.response_metadata.get("done"):
                metadata = {
                    **message.response_metadata,
                    **{f"label_probability:{k}": v for k, v in found.items()},
                }
                message = AIMessageChunk(
                    content="", usage_metadata=message.usage_metadata, response_metadata=metadata,  # type: ignore[attr-defined]
                    chunk_position="last",
                )  # fmt: skip
            yield ChatGenerationChunk(message=message)


def _model(gold_p: list[float]) -> ScoringChatModel:
    answers = {f"text {i}": json.dumps({"label": gold}) for i, gold in enumerate(GOLDS)}
    probabilities: dict[str, dict[str, float]] = {}
    for i, (gold, p) in enumerate(zip(GOLDS, gold_p, strict=True)):
        probabilities[f"text {i}"] = {label: p if label == gold else (1 - p) / 2 for label in LABELS}
    return ScoringChatModel(outputs=["{}"], by_text=answers, probabilities=probabilities)


def _run(tmp_path: Any) -> Any:
    dataset = load_dataset(write_classification_dataset(tmp_path / "banking", GOLDS))
    variants = VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", _model(REFERENCE_GOLD_P), quantization="F16"),
            Variant.from_chat_model("quant", _model(QUANT_GOLD_P), quantization="Q4"),
        ],
    )
    options = RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False)
    return run_evaluation(dataset, variants, options=options)


def test_a_run_sets_each_variants_gold_label_shift_and_the_table_shows_it(tmp_path):
    summary = read_summary(_run(tmp_path))
    ref, quant = (entry.kind_figures for entry in summary.variants)
    assert isinstance(ref, ClassificationSummary)
    assert isinstance(quant, ClassificationSummary)
    # per case: 0.7 - 0.9 = -0.2, 0.35 - 0.3 = +0.05, 0.6 - 0.6 = 0, 0.5 - 0.8 = -0.3: mean -0.45 / 4;
    # the reference was unsure (< 0.5) of c1 only: +0.05; sure of c0, c2, c3: -0.5 / 3
    assert quant.gold_probability_pairs == 4
    assert quant.reference_unsure_cases == 1
    assert quant.gold_probability_change == pytest.approx(-0.1125)
    assert quant.gold_probability_change_unsure == pytest.approx(0.05)
    assert quant.gold_probability_change_sure == pytest.approx(-0.5 / 3)
    assert quant.gold_label_probability == pytest.approx(sum(QUANT_GOLD_P) / 4)  # 0.5375
    assert ref.gold_probability_change is None  # not against itself: not measured, never 0
    rows = {line.split()[0]: line.split() for line in render_summary(summary).splitlines() if line}
    assert rows["quant"][-4:] == ["0.537", "-0.113", "+0.050", "-0.167"]
    assert rows["ref"][-4:] == ["0.650", "—", "—", "—"]  # (0.9 + 0.3 + 0.6 + 0.8) / 4
