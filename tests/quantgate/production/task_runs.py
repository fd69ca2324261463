"""Decided runs of the task kinds other than extraction, made with fake chat models, for the
production tests: a classification run (`tests.fakes.CLASSIFICATION_TASK`), a multi-label one, a
tool-calling run of two tools (`TOOLS`) and a generation run, each evaluated by `run_evaluation` and
decided; and a decided synthetic extraction run whose variants are files (`decided_file_run`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluators.betting import DEFAULT_TRUNCATION
from quantgate.decide._recommendation import decide
from quantgate.inputs._file_hashes import file_sha256
from quantgate.inputs._gates import Gates
from quantgate.rundir._files import SUMMARY_FILE, VARIANTS_FILE
from quantgate.rundir._store import read_summary, write_model
from quantgate.rundir._summary import RunOptionsInfo, VariantMetadata, VariantsFile
from tests.fakes import write_classification_dataset, write_dataset
from tests.quantgate.run_factory import make_run, run_ref_and_quant

TOOLS: dict[str, Any] = {
    "kind": "tool_calling",
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "The weather in a city.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string"},
                        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                    },
                    "required": ["city"],
                    "additionalProperties": False,
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "convert_currency",
                "description": "Convert an amount of money.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "amount": {"type": "number"},
                        "to": {"type": "string"},
                    },
                    "required": ["amount", "to"],
                    "additionalProperties": False,
                },
            },
        },
    ],
}
"""A task.json of two tools: a weather lookup (a unit defaulting to celsius) and a conversion."""

CALLS: dict[str, dict[str, Any] | None] = {
    "weather in Paris?": {"name": "get_weather", "arguments": {"city": "Paris"}},
    "Oslo, in fahrenheit": {"name": "get_weather", "arguments": {"city": "Oslo", "unit": "fahrenheit"}},
    "50 euros in dollars": {"name": "convert_currency", "arguments": {"amount": 50, "to": "USD"}},
    "tell me a joke": None,
}
"""The tool-calling run's cases (`t0`..`t3`, in this order): their text and gold call."""


def call_answer(call: dict[str, Any] | None) -> str:
    """The model's text for a call (or no call)."""
    return json.dumps({"call": call})


def tool_calling_dataset(root: Path) -> Path:
    """The tool-calling dataset of `CALLS` (with one example, a call for Rome), written at `root`."""
    lines = [{"id": f"t{i}", "text": t, "expected": {"call": c}} for i, (t, c) in enumerate(CALLS.items())]
    shot = {"name": "get_weather", "arguments": {"city": "Rome"}}
    examples = [{"id": "e0", "text": "is it raining in Rome", "expected": {"call": shot}}]
    return write_dataset(root, lines, schema=None, task=TOOLS, examples=examples)


def _decided(dataset_dir: Path, answers: dict[str, str], out: Path) -> Path:
    """Run a reference and a variant that give `answers` (text -> output) on a dataset, and decide."""
    return run_ref_and_quant(dataset_dir, answers, answers, out, decide=True)


def classification_run(root: Path) -> Path:
    """A decided classification run of three cases (`text 0`..`text 2`), both variants right."""
    golds = ["card_lost", "card_arrival", "top_up_failed"]
    dataset = write_classification_dataset(root / "banking", golds)
    answers = {f"text {i}": json.dumps({"label": gold}) for i, gold in enumerate(golds)}
    return _decided(dataset, answers, root / "runs")


def tool_calling_run(root: Path) -> Path:
    """A decided tool-calling run of `CALLS`, both variants right."""
    answers = {text: call_answer(call) for text, call in CALLS.items()}
    return _decided(tool_calling_dataset(root / "tools"), answers, root / "runs")


def parallel_calls_run(root: Path) -> Path:
    """A decided tool-calling run of several calls (`"calls": "many"`, the tools of `TOOLS`) of two
    cases: two calls for `weather in Paris and Oslo`, none for `tell me a joke`; both variants right."""
    paris, oslo = ({"name": "get_weather", "arguments": {"city": city}} for city in ("Paris", "Oslo"))
    golds = {"weather in Paris and Oslo": [paris, oslo], "tell me a joke": []}
    lines = [{"id": f"p{i}", "text": t, "expected": {"calls": g}} for i, (t, g) in enumerate(golds.items())]
    dataset = write_dataset(root / "parallel", lines, schema=None, task={**TOOLS, "calls": "many"})
    answers = {text: json.dumps({"calls": calls}) for text, calls in golds.items()}
    return _decided(dataset, answers, root / "runs")


def multi_label_run(root: Path) -> Path:
    """A decided multi-label classification run of two cases (`first text`, `second text`)."""
    task = {"kind": "classification", "labels": ["billing", "delivery", "refund"], "multi_label": True}
    golds = {"first text": ["billing", "refund"], "second text": []}
    lines = [{"id": f"m{i}", "text": t, "expected": {"labels": g}} for i, (t, g) in enumerate(golds.items())]
    dataset = write_dataset(root / "multi", lines, schema=None, task=task)
    answers = {text: json.dumps({"labels": labels}) for text, labels in golds.items()}
    return _decided(dataset, answers, root / "runs")


def generation_run(root: Path) -> Path:
    """A decided generation run of two cases (`name[A]`, `name[B]`)."""
    golds = {"name[A]": "A is a place.", "name[B]": "B is a place."}
    lines = [{"id": f"g{i}", "text": t, "expected": {"text": g}} for i, (t, g) in enumerate(golds.items())]
    dataset = write_dataset(root / "texts", lines, schema=None, task={"kind": "generation"})
    answers = {text: json.dumps({"text": gold}) for text, gold in golds.items()}
    return _decided(dataset, answers, root / "runs")


_RIGHT = {"a": 1.0, "b": 1.0}
_CASES = 100  # identical answers: enough for Q to pass the accuracy gate


def decided_file_run(
    tmp_path: Path, *, backend: str = "llamacpp", max_memory_mb: float | None = None
) -> Path:
    """A decided synthetic run whose variants R (reference) and Q (smaller, recommended) are files."""
    run = make_run(
        tmp_path / "run",
        {"R": [_RIGHT] * _CASES, "Q": [_RIGHT] * _CASES},
        footprints={"R": 700.0, "Q": 300.0},
    )
    variants = []
    for name in ("R", "Q"):
        model = tmp_path / f"{name}.gguf"
        model.write_bytes(f"weights of {name}".encode())
        variants.append(
            VariantMetadata(
                name=name,
                backend=backend,
                model=str(model),
                quantization=name,
                sha256=file_sha256(model),
                runtime={"name": "test"},
                hardware={},
            )
        )
    write_model(run / VARIANTS_FILE, VariantsFile(variants=variants))
    summary = read_summary(run)
    summary.options = RunOptionsInfo(
        limit=None, concurrency=1, max_repairs=1, betting_truncation=DEFAULT_TRUNCATION
    )
    write_model(run / SUMMARY_FILE, summary)
    decide(run, Gates(min_cases=10, min_slice_cases=10, max_memory_mb=max_memory_mb))
    return run
