"""P(label | prompt) over a classification's closed label set, from the embedded model's logits.

For a single-label classification (a record schema of one string field with an `enum`), the
grammar lets the model write only `{"<field>": "<one of the labels>"}`. After a case's answer,
each label is scored as the continuation the grammar would allow: the model's own answer text
with its label replaced (`label_continuations`), teacher-forced after the prompt, all labels
in one decode (`label_context.ContinuationScorer`, which keeps the prompt's KV cache between
cases), its token log-probabilities summed and normalized over the labels
(`normalize_logprobs`). The tokens all labels share at the start cancel out in the
normalization and are evaluated once, as part of the prompt.

Not measured (None) where no closed set can be read from the schema (multi-label, extraction,
tool calling, generation), where the answer holds no label of the set, and on backends that
give no logits (Ollama, OpenAI-compatible servers).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evaluators.classification_figures import LABEL_PROBABILITY_KEY as PROBABILITY_KEY
from evaluators.task_models import LabelSet
from quantgate.backends.llamacpp._label_context import ContinuationScorer, log_normalizer

LABEL_SCORING_KEY = "label_scoring_s"
"""Seconds the label probabilities took (part of the attempt's `total_s`)."""


def label_key(label: str) -> str:
    """The metadata key of one label's probability: `label_probability:<label>`."""
    return f"{PROBABILITY_KEY}:{label}"


def closed_label_set(schema: Mapping[str, Any] | None) -> LabelSet | None:
    """The label set of a record schema of one string field with an `enum`; None otherwise."""
    if not schema or schema.get("type") != "object":
        return None
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or len(properties) != 1:
        return None
    ((name, value),) = properties.items()
    enum = value.get("enum") if isinstance(value, Mapping) else None
    if value.get("type") != "string" or not isinstance(enum, list) or not enum:
        return None
    if not all(isinstance(label, str) for label in enum):
        return None
    return LabelSet(field=str(name), labels=tuple(enum))


def chosen_label(raw: str, labels: LabelSet) -> str | None:
    """The label the answer `raw` chose, if it is a JSON record of the set's field with one of them."""
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    value = record.get(labels.field) if isinstance(record, dict) else None
    return value if isinstance(value, str) and value in labels.labels else None


def label_continuations(raw: str, chosen: str, labels: Sequence[str]) -> dict[str, str]:
    """The answer text with its label (the last JSON string equal to `chosen`) replaced by each
    label, spacing and punctuation kept: the continuations the grammar would allow."""
    quoted = json.dumps(chosen, ensure_ascii=False)
    at = raw.rfind(quoted)
    if at < 0:
        raise ValueError(f"the answer {raw!r} does not hold the label {quoted}")
    prefix, suffix = raw[:at], raw[at + len(quoted) :]
    return {label: prefix + json.dumps(label, ensure_ascii=False) + suffix for label in labels}


def sequence_logprob(logits: np.ndarray[Any, Any], targets: Sequence[int]) -> float:
    """Σ_i log softmax(logits[i])[targets[i]]: the log-probability of a token sequence, row i of
    `logits` being the raw logits that predict targets[i]."""
    if len(targets) != len(logits):
        raise ValueError(f"{len(logits)} rows of logits for {len(targets)} target tokens")
    return sum(float(row[target]) - log_normalizer(row) for row, target in zip(logits, targets, strict=True))


def normalize_logprobs(logprobs: Mapping[str, float]) -> dict[str, float]:
    """exp(l_k) / Σ_j exp(l_j) for each label: its probability over the closed set."""
    if not logprobs:
        raise ValueError("no labels to normalize over")
    top = max(logprobs.values())
    weights = {label: math.exp(value - top) for label, value in logprobs.items()}
    total = sum(weights.values())
    return {label: weight / total for label, weight in weights.items()}


def common_token_prefix(sequences: Sequence[Sequence[int]]) -> int:
    """The number of leading tokens all `sequences` share."""
    if not sequences:
        return 0
    shortest = min(len(s) for s in sequences)
    for i in range(shortest):
        if any(s[i] != sequences[0][i] for s in sequences):
            return i
    return shortest


def label_probabilities(
    llama: Any, scorer: ContinuationScorer, prompt_tokens: Sequence[int], continuations: Mapping[str, str]
) -> dict[str, float]:
    """P(label | prompt) over the labels of `continuations`, from the logits of `scorer`, a
    context over `llama`'s model (`llama` tokenizes the continuations); `prompt_tokens` are the
    prompt's tokens as the model read them.

    The tokens every continuation shares at its start are evaluated with the prompt (the same
    for every label, they cancel in the normalization); each label's remaining tokens are
    teacher-forced after them, all labels in one batch.
    """
    tokens = {
        label: llama.tokenize(text.encode("utf-8"), add_bos=False) for label, text in continuations.items()
    }
    shared = common_token_prefix(list(tokens.values()))
    shared = min(shared, *(len(t) - 1 for t in tokens.values()))  # each label keeps one token to score
    head = [*prompt_tokens, *next(iter(tokens.values()))[:shared]]
    values = scorer.logprobs(head, [label_tokens[shared:] for label_tokens in tokens.values()])
    return normalize_logprobs(dict(zip(tokens, values, strict=True)))


def label_metadata(
    llama: Any, scorer: ContinuationScorer, prompt_tokens: Sequence[int], raw: str, labels: LabelSet
) -> dict[str, float]:
    """The response metadata of a classification answer: the chosen label's probability
    (`PROBABILITY_KEY`) and each label's (`label_key`); empty when the answer chose no label."""
    chosen = chosen_label(raw, labels)
    if chosen is None:
        return {}
    probabilities = label_probabilities(
        llama, scorer, prompt_tokens, label_continuations(raw, chosen, labels.labels)
    )
    return {PROBABILITY_KEY: probabilities[chosen], **{label_key(k): p for k, p in probabilities.items()}}
