"""Runs of each task kind with fake chat models in which the quantized variant errs, for the tests of
the task-kind sections (terminal table, decision.md, suite_decision.md): the figures they print are
counted by hand in the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes import write_classification_dataset, write_dataset
from tests.quantgate.production.task_runs import CALLS, call_answer, tool_calling_dataset
from tests.quantgate.run_factory import run_ref_and_quant

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
    return run_ref_and_quant(
        classification_dataset(root / "banking"), *classification_answers(), root / "runs"
    )


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
    return run_ref_and_quant(generation_dataset(root / "texts"), *generation_answers(), root / "runs")


def tool_calling_run(root: Path) -> Path:
    """An undecided tool-calling run of `CALLS`, the quantized variant's calls `TOOL_QUANT`."""
    right = {text: call_answer(call) for text, call in CALLS.items()}
    quant = {text: call_answer(call) for text, call in TOOL_QUANT.items()}
    return run_ref_and_quant(tool_calling_dataset(root / "tools"), right, quant, root / "runs")
