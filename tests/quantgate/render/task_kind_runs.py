"""Runs of each task kind with fake chat models in which the quantized variant errs, for the tests of
the task-kind sections (terminal table, decision.md, suite_decision.md): the figures they print are
counted by hand in the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from quantgate.evaluate.evaluation_run import RunOptions, run_evaluation
from quantgate.inputs.dataset import load_dataset
from quantgate.inputs.variants import Variant, VariantSet
from tests.fakes import QueuedChatModel, write_classification_dataset, write_dataset
from tests.quantgate.production.task_runs import CALLS, TOOLS, call_answer

CLASSIFICATION_GOLDS = [
    "card_lost",
    "card_arrival",
    "top_up_failed",
    "card_lost",
    "card_arrival",
    "card_lost",
]
"""Cases c0..c5 (`text 0`..`text 5`)."""
CLASSIFICATION_WRONG = {"text 1": "card_lost", "text 4": "top_up_failed"}
"""The quantized variant's wrong labels: both card_arrival cases missed (recall 0), 4 of 6 right."""

GENERATION_GOLDS = {"name[A]": "A is a place.", "name[B]": "B is a place."}
"""Cases g0, g1: their text and gold text; the reference answers the gold."""
GENERATION_QUANT = {"name[A]": "A is a place.", "name[B]": "B is."}
"""The quantized variant's texts: g1 shorter (5 of 13 characters)."""

TOOL_QUANT: dict[str, dict[str, Any] | None] = {
    **CALLS,
    "50 euros in dollars": None,  # abstains where a call is due
    "tell me a joke": {"name": "get_weather", "arguments": {"city": "Paris"}},  # calls where none is
}
"""The quantized variant's calls: right on t0 and t1, no call on t2, a call on t3."""


def variant_set(right: dict[str, str], quant: dict[str, str]) -> VariantSet:
    """A reference `ref` giving `right` (text -> output) and a quantized `quant` giving `quant`."""
    return VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model(
                "ref", QueuedChatModel(outputs=["{}"], by_text=right), quantization="F16"
            ),
            Variant.from_chat_model(
                "quant", QueuedChatModel(outputs=["{}"], by_text=quant), quantization="Q4"
            ),
        ],
    )


def _run(dataset: Path, right: dict[str, str], quant: dict[str, str], out: Path) -> Path:
    options = RunOptions(out=out, progress=False, token_fidelity=False)
    return run_evaluation(load_dataset(dataset), variant_set(right, quant), options=options)


def classification_dataset(root: Path) -> Path:
    """The classification dataset of `CLASSIFICATION_GOLDS`."""
    return write_classification_dataset(root, CLASSIFICATION_GOLDS)


def classification_answers() -> tuple[dict[str, str], dict[str, str]]:
    """The reference's answers (every label right) and the quantized variant's."""
    right = {f"text {i}": json.dumps({"label": gold}) for i, gold in enumerate(CLASSIFICATION_GOLDS)}
    wrong = {text: json.dumps({"label": label}) for text, label in CLASSIFICATION_WRONG.items()}
    return right, {**right, **wrong}


def classification_run(root: Path) -> Path:
    """An undecided classification run of `CLASSIFICATION_GOLDS`."""
    return _run(classification_dataset(root / "banking"), *classification_answers(), root / "runs")


def generation_dataset(root: Path) -> Path:
    """The generation dataset of `GENERATION_GOLDS`."""
    lines = [
        {"id": f"g{i}", "text": t, "expected": {"text": g}}
        for i, (t, g) in enumerate(GENERATION_GOLDS.items())
    ]
    return write_dataset(root, lines, schema=None, task={"kind": "generation"})


def generation_answers() -> tuple[dict[str, str], dict[str, str]]:
    """The reference's texts (the gold) and the quantized variant's."""
    right = {text: json.dumps({"text": gold}) for text, gold in GENERATION_GOLDS.items()}
    return right, {text: json.dumps({"text": out}) for text, out in GENERATION_QUANT.items()}


def generation_run(root: Path) -> Path:
    """An undecided generation run of `GENERATION_GOLDS`."""
    return _run(generation_dataset(root / "texts"), *generation_answers(), root / "runs")


def tool_calling_run(root: Path) -> Path:
    """An undecided tool-calling run of `CALLS`, the quantized variant's calls `TOOL_QUANT`."""
    lines = [{"id": f"t{i}", "text": t, "expected": {"call": c}} for i, (t, c) in enumerate(CALLS.items())]
    shot = {"name": "get_weather", "arguments": {"city": "Rome"}}
    examples = [{"id": "e0", "text": "is it raining in Rome", "expected": {"call": shot}}]
    dataset = write_dataset(root / "tools", lines, schema=None, task=TOOLS, examples=examples)
    right = {text: call_answer(call) for text, call in CALLS.items()}
    quant = {text: call_answer(call) for text, call in TOOL_QUANT.items()}
    return _run(dataset, right, quant, root / "runs")
