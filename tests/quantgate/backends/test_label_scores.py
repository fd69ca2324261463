"""Label probabilities over a closed set, from fake logits (hand-computed), and the continuations
scored: no model is loaded."""

import math

import numpy as np
import pytest

from evaluators.task_models import ClassificationTask, LabelSet
from quantgate.backends.llamacpp._label_scores import (
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


def test_the_batch_holds_the_prompt_tail_in_every_sequence_and_each_label_in_its_own() -> None:
    from quantgate.backends.llamacpp._label_context import _entries

    # prompt [1, 2, 3, 4], [1, 2] cached; labels [7, 8, 9] and [5]
    entries = _entries([1, 2, 3, 4], 2, [[7, 8, 9], [5]])
    assert [(e.token, e.pos, e.seqs, e.targets) for e in entries] == [
        (3, 2, (0, 1, 2), ()),  # the uncached tail, no logits
        (4, 3, (0, 1, 2), ((0, 7), (1, 5))),  # the last prompt token predicts each first token
        (7, 4, (1,), ((0, 8),)),
        (8, 5, (1,), ((0, 9),)),  # a label's last token is only predicted, never decoded
    ]


def test_the_log_normalizer_is_the_log_sum_exp_of_the_row() -> None:
    from quantgate.backends.llamacpp._label_context import log_normalizer

    # exp(0) + exp(ln 3) = 4; shifted far past exp's float range, still exact
    row = np.array([0.0, math.log(3)], dtype=np.float32)
    assert log_normalizer(row) == pytest.approx(math.log(4), abs=1e-6)
    assert log_normalizer(np.array([1000.0, 1000.0])) == pytest.approx(1000 + math.log(2))


class _Tokens:
    """A tokenizer of one token per character (its code), BOS 0."""

    def tokenize(self, text: bytes, add_bos: bool = True) -> list[int]:
        return ([0] if add_bos else []) + list(text)


class _Scorer:
    """Log-probabilities given by hand, and the calls seen."""

    def __init__(self, values: list[float]) -> None:
        self.values = values
        self.calls: list[tuple[list[int], list[list[int]]]] = []

    def logprobs(self, prompt: list[int], continuations: list[list[int]]) -> list[float]:
        self.calls.append((list(prompt), [list(c) for c in continuations]))
        return self.values


def test_label_probabilities_score_the_labels_after_their_shared_start() -> None:
    from quantgate.backends.llamacpp._label_scores import label_probabilities

    scorer = _Scorer([math.log(0.03), math.log(0.01)])
    probabilities = label_probabilities(_Tokens(), scorer, [0, ord("P")], {"ab": "xab", "ac": "xac"})  # type: ignore[arg-type]
    assert probabilities == pytest.approx({"ab": 0.75, "ac": 0.25})
    # "xa" shared by both: evaluated with the prompt; each label keeps its own last token
    assert scorer.calls == [([0, ord("P"), ord("x"), ord("a")], [[ord("b")], [ord("c")]])]
