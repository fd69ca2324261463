"""The extraction graph's context for an opened variant: the prompt material of a dataset (its schema,
task and few-shot examples) and the limits the backend reports. The run, the token-fidelity step,
the load test and production all build it here, so they prompt alike."""

from __future__ import annotations

from graphs.extraction import DEFAULT_MAX_REPAIRS, ExtractionContext
from quantgate.backends import OpenedVariant
from quantgate.inputs._dataset import Dataset

__all__ = ["variant_context"]


def variant_context(
    dataset: Dataset, opened: OpenedVariant, *, max_repairs: int = DEFAULT_MAX_REPAIRS
) -> ExtractionContext:
    """The extraction graph's context for a dataset and an opened variant (prompt, limits, retries)."""
    return ExtractionContext(
        model=opened.chat_model,
        schema=dataset.schema,
        examples=[(e.text, e.expected) for e in dataset.examples if e.expected is not None],
        max_repairs=max_repairs,
        context_window=opened.context_window,
        max_output_tokens=opened.max_output_tokens,
        count_tokens=opened.count_tokens,
        max_retries=opened.max_retries,
        retry_backoff_s=opened.retry_backoff_s,
        task=dataset.task,
        native_tools=opened.native_tools,
        model_for_schema=opened.for_schema,
    )
