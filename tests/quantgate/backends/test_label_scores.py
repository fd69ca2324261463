"""Label probabilities over a closed set, from fake logits (hand-computed), and the continuations
scored: no model is loaded."""

import math

import numpy as np
import pytest

from evaluators.task_models import ClassificationTask
from quantgate.backends.label_scores import (
    LabelSet,
    chosen_label,
    closed_label_set,
    common_token_prefix,
    label_continuations,
    normalize_logprobs,
    sequence_logprob,
)


def test_sequence_logprob_sums_each_rows_log_softmax_at_its_target() -> None:
    # row 1: logits [0, ln 3] -> softmax [1/4, 3/4]; target 1: ln(3/4)
    # row 2: logits [2, 2] -> softmax [1/2, 1/2]; target 0: ln(1/2)
    logits = np.array([[0.0, math.log(3)], [2.0, 2.0]], dtype=np.float32)
    assert sequence_logprob(logits, [1, 0]) == pytest.approx(math.log(3 / 4) + math.log(1 / 2), abs=1e-6)
    with pytest.raises(ValueError, match="2 rows of logits for 1 target"):
        sequence_logprob(logits, [1])


def test_normalize_logprobs_is_a_softmax_over_the_labels() -> None:
    # sequence probabilities 0.06, 0.02, 0.02 (log) -> 0.6, 0.2, 0.2 over the closed set
    probabilities = normalize_logprobs({"a": math.log(0.06), "b": math.log(0.02), "c": math.log(0.02)})
    assert probabilities == pytest.approx({"a": 0.6, "b": 0.2, "c": 0.2})
    assert sum(probabilities.values()) == pytest.approx(1.0)
    # far below exp's range: still normalized (log-sum-exp shifted by the largest)
    assert normalize_logprobs({"a": -2000.0, "b": -2000.0 - math.log(3)}) == pytest.approx(
        {"a": 0.75, "b": 0.25}
    )
    with pytest.raises(ValueError, match="no labels"):
        normalize_logprobs({})


def test_the_closed_label_set_is_read_from_a_single_label_schema_only() -> None:
    single = ClassificationTask(labels=("card_arrival", "change_pin"))
    assert closed_label_set(single.record_schema()) == LabelSet("label", ("card_arrival", "change_pin"))
    multi = ClassificationTask(labels=("a", "b"), multi_label=True)
    assert closed_label_set(multi.record_schema()) is None
    two_fields = {"type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}, "b": {}}}
    assert closed_label_set(two_fields) is None
    assert closed_label_set({"type": "object", "properties": {"a": {"type": "string"}}}) is None
    assert closed_label_set(None) is None


def test_each_label_replaces_the_chosen_one_in_the_answer_text() -> None:
    labels = LabelSet("label", ("label", "change_pin"))
    raw = ' {"label": "label"}'
    assert chosen_label(raw, labels) == "label"
    assert label_continuations(raw, "label", labels.labels) == {
        "label": ' {"label": "label"}',
        "change_pin": ' {"label": "change_pin"}',  # the value replaced, not the key
    }
    assert chosen_label('{"label": "other"}', labels) is None
    assert chosen_label('{"label": ', labels) is None
    with pytest.raises(ValueError, match="does not hold the label"):
        label_continuations('{"label": "x"}', "change_pin", labels.labels)


def test_common_token_prefix() -> None:
    assert common_token_prefix([[1, 2, 3], [1, 2, 4], [1, 2]]) == 2
    assert common_token_prefix([[5], [6]]) == 0
    assert common_token_prefix([]) == 0
