"""Decided runs of each task kind other than extraction whose quantized variant fails some cases,
made with fake chat models (`run_evaluation`, then `decide`), for the report and notebook tests.

- `classification_run`: six cases of `tests.fakes.LABELS`, the quantized variant wrong on c1 and
  c4 (gold card_arrival taken for card_lost and top_up_failed), as in test_classification_run.
- `tool_calling_run`: the four calls of `tests.quantgate.production.task_runs.CALLS`, the
  quantized variant calling for Bergen instead of Paris (t0) and calling where none is due (t3).
- `generation_run`: two texts, the quantized variant's second one off by a word.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes import write_classification_dataset, write_dataset
from tests.quantgate.production.task_runs import CALLS, call_answer, tool_calling_dataset
from tests.quantgate.run_factory import run_ref_and_quant

GOLDS = ["card_lost", "card_arrival", "top_up_failed", "card_lost", "card_arrival", "card_lost"]
QUANT_LABELS = {"text 1": "card_lost", "text 4": "top_up_failed"}
"""The quantized variant's wrong labels (c1, c4): 4 of 6 right."""

BERGEN = {"name": "get_weather", "arguments": {"city": "Bergen"}}
OSLO = {"name": "get_weather", "arguments": {"city": "Oslo"}}
QUANT_CALLS = {"weather in Paris?": BERGEN, "tell me a joke": OSLO}
"""The quantized variant's wrong calls: t0 the wrong city, t3 a call where the gold is none."""

TEXTS = {"name[A]": "A is a place in the north.", "name[B]": "B is a small town by the sea."}
QUANT_TEXTS = {"name[B]": "B is a city by the sea."}
"""The gold texts (g0, g1), and the quantized variant's text where it is not the gold."""


def decided_run(dataset_dir: Path, right: dict[str, str], quant: dict[str, str], out: Path) -> Path:
    """Run `ref` answering `right` (text -> output) and `quant` answering `right` but for `quant`,
    on a dataset, and decide."""
    return run_ref_and_quant(dataset_dir, right, {**right, **quant}, out, decide=True)


def classification_run(root: Path) -> Path:
    dataset = write_classification_dataset(root / "banking", GOLDS)
    right = {f"text {i}": json.dumps({"label": gold}) for i, gold in enumerate(GOLDS)}
    quant = {text: json.dumps({"label": label}) for text, label in QUANT_LABELS.items()}
    return decided_run(dataset, right, quant, root / "runs")


def tool_calling_run(root: Path) -> Path:
    dataset = tool_calling_dataset(root / "tools")
    right = {text: call_answer(call) for text, call in CALLS.items()}
    quant = {text: call_answer(call) for text, call in QUANT_CALLS.items()}
    return decided_run(dataset, right, quant, root / "runs")


def generation_run(root: Path) -> Path:
    lines = [{"id": f"g{i}", "text": t, "expected": {"text": g}} for i, (t, g) in enumerate(TEXTS.items())]
    dataset = write_dataset(root / "texts", lines, schema=None, task={"kind": "generation"})
    right = {text: json.dumps({"text": gold}) for text, gold in TEXTS.items()}
    quant = {text: json.dumps({"text": value}) for text, value in QUANT_TEXTS.items()}
    return decided_run(dataset, right, quant, root / "runs")
