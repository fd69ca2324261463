"""The calibration split of `quantgate ladder --calibrate`: which cases, what text, and its record.

The cases are drawn (seeded) from the dataset's labeled cases, after the few-shot examples a run
takes (`choose_examples`), so the run prompts with the same examples and the split never holds
them. Each case's calibration text is what the graph sends the embedded base model on a first
attempt (`build_messages` rendered by `render_prompt`: the instruction, the few-shot examples, the
case's text), followed by the answer: the F16 reference's own answer to that prompt
(`quantgate.ladder._reference_answers`), so the matrix sees the task's tokens as the model writes
them, or, with `--calibration-answers gold`, the case's gold record as JSON.

What was drawn is recorded in calibration.json (`quantgate.ladder._calibration_record`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping

from langchain_core.messages import AIMessage

from graphs.prompting import build_messages
from quantgate.backends._base_prompt import render_prompt
from quantgate.inputs._dataset import Case, Dataset
from quantgate.inputs._examples import choose_examples
from quantgate.ladder._llama_tool_calls import CalibrationError

CHUNK_TOKENS = 512
"""llama-imatrix's chunk (its default context, `-c 512`): the matrix is accumulated chunk by chunk,
and a partial last chunk is dropped."""
MIN_TOKENS = 2 * CHUNK_TOKENS
"""llama-imatrix refuses a text of fewer tokens than two chunks ("you need at least 1024 tokens for a
context of 512 tokens")."""
DEFAULT_CALIBRATION_CASES = 64
"""On restaurants (measured with Gemma 3's tokenizer: one case's prompt, three few-shot examples
and answer are 846 to 884 tokens) 64 cases make 55,191 tokens, 107 chunks of 512: within llama.cpp's
usual 50-200 chunks, and 5% of its 1,398 cases. Two cases already pass llama-imatrix's minimum."""
SPLIT_SEED = 0


def calibration_split(dataset: Dataset, count: int, *, seed: int = SPLIT_SEED) -> tuple[Dataset, list[Case]]:
    """The dataset as a run prompts it (with its few-shot examples) and `count` of its labeled
    cases drawn with `seed`, in file order.

    Raises:
        CalibrationError: Fewer labeled cases than twice `count` (the evaluation keeps at least half).
    """
    prompted = choose_examples(dataset).dataset
    labeled = [case for case in prompted.cases if case.expected is not None]
    if count < 1 or 2 * count > len(labeled):
        raise CalibrationError(
            f"{dataset.name}: {len(labeled)} labeled cases (not counting the few-shot examples) cannot "
            f"give {count} calibration cases and keep at least as many for the evaluation; "
            f"use --calibration-cases {len(labeled) // 2} or fewer, or a larger dataset"
        )
    drawn = {case.id for case in random.Random(seed).sample(labeled, count)}
    return prompted, [case for case in labeled if case.id in drawn]


def calibration_text(prompted: Dataset, cases: list[Case], answers: Mapping[str, str] | None = None) -> str:
    """Each case's first-attempt prompt as the embedded base model reads it, then its answer.

    Args:
        prompted: The dataset with its few-shot examples (`calibration_split`).
        cases: The split's cases.
        answers: The reference's answer text by case id; None: each case's gold record as JSON.
    """
    examples = [(e.text, e.expected) for e in prompted.examples if e.expected is not None]
    parts = []
    for case in cases:
        messages = build_messages(
            schema=prompted.schema, examples=examples, text=case.text, task=prompted.task
        )
        written = answers[case.id] if answers is not None else None
        answer = AIMessage(
            content=json.dumps(case.expected, ensure_ascii=False) if written is None else written
        )
        parts.append(render_prompt([*messages, answer]))
    return "".join(parts)


def check_enough_tokens(dataset: Dataset, cases: int, tokens: int) -> None:
    """Refuse a calibration text too short for llama-imatrix, saying how many tokens it needs.

    Raises:
        CalibrationError: Fewer than `MIN_TOKENS`.
    """
    if tokens < MIN_TOKENS:
        raise CalibrationError(
            f"{dataset.name}: the {cases} calibration cases make {tokens} tokens (prompt and answer); "
            f"llama-imatrix needs at least {MIN_TOKENS} (two chunks of {CHUNK_TOKENS}): give more "
            "--calibration-cases, or a dataset with more labeled cases"
        )
