"""The extraction graph's context for an opened variant: the prompt material of a dataset (its schema,
task and few-shot examples) and the limits the backend reports. The run, the token-fidelity step,
the load test and production all build it here, so they prompt alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphs.extraction import DEFAULT_MAX_REPAIRS, ExtractionContext
from graphs.outcomes import CaseInput
from quantgate.backends import OpenedVariant
from quantgate.inputs._dataset import Case, Dataset

__all__ = ["case_context", "case_input", "prompt_examples", "variant_context"]


def case_input(case: Case) -> CaseInput:
    """A case as the evaluation graph takes it."""
    return CaseInput(id=case.id, text=case.text, expected=case.expected, tags=list(case.tags))


def variant_context(
    dataset: Dataset, opened: OpenedVariant, *, max_repairs: int = DEFAULT_MAX_REPAIRS
) -> ExtractionContext:
    """The extraction graph's context for a dataset and an opened variant (prompt, limits, retries)."""
    return ExtractionContext(
        model=opened.chat_model,
        schema=dataset.schema,
        examples=prompt_examples(dataset),
        max_repairs=max_repairs,
        context_window=opened.context_window,
        max_output_tokens=opened.max_output_tokens,
        count_tokens=opened.count_tokens,
        max_retries=opened.max_retries,
        retry_backoff_s=opened.retry_backoff_s,
        task=dataset.task,
        native_tools=opened.native_tools,
        model_for_schema=opened.for_schema,
        prompt_tools_tokens=opened.prompt_tools_tokens,
    )


def case_context(context: ExtractionContext, dataset: Dataset, case_id: str) -> ExtractionContext:
    """The context of one of the dataset's cases: `context` itself, or, when cases bring their own
    tools, that of the case's task (`ExtractionContext.for_task`: its prompt, schema and model), as
    the evaluation graph prompts the case."""
    task = dataset.case_tasks.get(case_id)
    return context if task is None else context.for_task(task)


def prompt_examples(dataset: Dataset) -> list[tuple[str, Mapping[str, Any]]]:
    """The few-shot examples as the prompt shows them: each labeled example's text and gold record.
    An example that brings its own tools shows them first (`(tools offered: a, b)`), since the
    instruction lists the case's tools, not the example's."""
    return [(_example_text(e, dataset), e.expected) for e in dataset.examples if e.expected is not None]


def _example_text(example: Case, dataset: Dataset) -> str:
    if not example.tools:
        return example.text
    names = ", ".join(tool.function.name for tool in dataset.task_of(example.id).offered_tools)
    return f"(tools offered: {names})\n{example.text}"
