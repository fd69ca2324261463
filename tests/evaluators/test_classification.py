"""Classification figures on hand-computed cases (accuracy, macro-F1, per-class figures, confusion,
multi-label figures, calibration and its shift). The single-label figures were also cross-checked
once with scikit-learn 1.9.1 (`confusion_matrix`, `precision_recall_fscore_support`, `f1_score`
with `average="macro"` and `zero_division=np.nan`), which is not a dependency of quantgate."""

import pytest

from evaluators.classification_figures import (
    ClassificationSummary,
    calibration,
    calibration_shift,
    confusion_matrix,
    reported_label_probabilities,
    summarize_labels,
    summarize_multi_label,
)

LABELS = ["a", "b", "c"]
# case:        1    2    3    4    5    6     7    8
GOLD = ["a", "a", "a", "b", "b", "b", "c", "c"]
PREDICTED: list[str | None] = ["a", "a", "b", "b", "c", None, "c", "a"]
# confusion (rows gold a, b, c; columns a, b, c, no answer):
#   a: 2 1 0 0     b: 0 1 1 1     c: 1 0 1 0
# accuracy 4/8. F1 = 2TP / (2TP + FP + FN):
#   a: TP 2, FP 1 (case 8), FN 1 (case 3)    -> P 2/3, R 2/3, F1 4/6
#   b: TP 1, FP 1 (case 3), FN 2 (cases 5, 6) -> P 1/2, R 1/3, F1 2/5
#   c: TP 1, FP 1 (case 5), FN 1 (case 8)    -> P 1/2, R 1/2, F1 2/4
# macro-F1 = (2/3 + 2/5 + 1/2) / 3 = 47/90


def test_confusion_matrix_rows_gold_columns_predicted_and_no_answer_last() -> None:
    matrix = confusion_matrix(labels=LABELS, gold=GOLD, predicted=PREDICTED)
    assert matrix == [[2, 1, 0, 0], [0, 1, 1, 1], [1, 0, 1, 0]]


def test_single_label_figures_match_the_hand_computation() -> None:
    summary = summarize_labels(labels=LABELS, gold=GOLD, predicted=PREDICTED)
    assert summary.classification_cases == 8
    assert summary.no_answer == 1
    assert summary.label_accuracy == 0.5
    assert summary.macro_f1 == pytest.approx(47 / 90)
    assert summary.classes is not None
    a, b, c = (summary.classes[label] for label in LABELS)
    assert (a.support, a.predicted, a.precision, a.recall, a.f1) == (3, 3, 2 / 3, 2 / 3, 4 / 6)
    assert (b.support, b.predicted, b.precision, b.recall, b.f1) == (3, 2, 1 / 2, 1 / 3, 2 / 5)
    assert (c.support, c.predicted, c.precision, c.recall, c.f1) == (2, 2, 1 / 2, 1 / 2, 2 / 4)
    assert summary.subset_accuracy is None
    assert summary.hamming_loss is None


def test_a_class_absent_from_gold_and_predictions_is_left_out_of_macro_f1() -> None:
    summary = summarize_labels(labels=[*LABELS, "d"], gold=GOLD, predicted=PREDICTED)
    assert summary.macro_f1 == pytest.approx(47 / 90)
    assert summary.classes is not None
    d = summary.classes["d"]
    assert (d.support, d.predicted, d.precision, d.recall, d.f1) == (0, 0, None, None, None)
    assert summary.confusion is not None
    assert summary.confusion[3] == [0, 0, 0, 0, 0]


def test_a_class_predicted_but_never_gold_has_f1_zero_and_counts_in_macro_f1() -> None:
    # a: TP 1, FN 1 -> F1 2/3; b: FP 1 -> precision 0, recall None, F1 0; macro (2/3 + 0) / 2
    summary = summarize_labels(labels=["a", "b"], gold=["a", "a"], predicted=["a", "b"])
    assert summary.classes is not None
    b = summary.classes["b"]
    assert (b.precision, b.recall, b.f1) == (0.0, None, 0.0)
    assert summary.macro_f1 == pytest.approx(1 / 3)


def test_a_prediction_outside_the_labels_counts_as_no_answer() -> None:
    summary = summarize_labels(labels=["a", "b"], gold=["a", "b"], predicted=["zzz", "b"])
    assert summary.confusion == [[0, 0, 1], [0, 1, 0]]
    assert summary.no_answer == 1
    assert summary.label_accuracy == 0.5


def test_no_cases_measure_nothing() -> None:
    summary = summarize_labels(labels=["a"], gold=[], predicted=[])
    assert summary.label_accuracy is None
    assert summary.macro_f1 is None
    assert summary.classification_cases == 0


@pytest.mark.parametrize(
    ("labels", "gold", "predicted", "message"),
    [
        (["a"], ["b"], ["a"], "gold label 'b'"),
        (["a"], ["a"], [], "1 gold labels but 0 predictions"),
        (["a", "a"], ["a"], ["a"], "distinct"),
    ],
)
def test_caller_mistakes_are_refused(
    labels: list[str], gold: list[str], predicted: list[str | None], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        summarize_labels(labels=labels, gold=gold, predicted=predicted)


def test_multi_label_figures_match_the_hand_computation() -> None:
    # 1: {x, y} -> {x}: not exact, 1 wrong decision (y)
    # 2: {z} -> {z}: exact, 0 wrong
    # 3: {x} -> no answer: not exact, all 3 decisions wrong
    # 4: {} -> {y}: not exact, 1 wrong decision (y)
    # x: TP 1, FN 1 -> F1 2/3; y: FN 1, FP 1 -> F1 0; z: TP 1 -> F1 1; macro 5/9
    # micro: TP 2, FP 1, FN 2 -> 4/7; subset accuracy 1/4; Hamming 5/12
    summary = summarize_multi_label(
        labels=["x", "y", "z"],
        gold=[["x", "y"], ["z"], ["x"], []],
        predicted=[["x"], ["z", "z"], None, ["y"]],
    )
    assert summary.subset_accuracy == 0.25
    assert summary.hamming_loss == pytest.approx(5 / 12)
    assert summary.micro_f1 == pytest.approx(4 / 7)
    assert summary.macro_f1 == pytest.approx(5 / 9)
    assert summary.no_answer == 1
    assert summary.classes is not None
    y = summary.classes["y"]
    assert (y.support, y.predicted, y.precision, y.recall, y.f1) == (1, 1, 0.0, 0.0, 0.0)
    assert summary.confusion is None
    assert summary.label_accuracy is None


def test_an_empty_prediction_that_matches_an_empty_gold_is_exact() -> None:
    summary = summarize_multi_label(labels=["x"], gold=[[]], predicted=[[]])
    assert (summary.subset_accuracy, summary.hamming_loss, summary.micro_f1) == (1.0, 0.0, None)


def test_calibration_bins_are_closed_on_the_right() -> None:
    # 0.95 in (0.9, 1], 0.9 in (0.8, 0.9], 0.3 in (0.2, 0.3]; the None case is left out
    # ECE = (|1 - 0.95| + |0 - 0.9| + |1 - 0.3|) / 3 = 1.65 / 3
    # Brier = (0.05^2 + 0.9^2 + 0.7^2) / 3 = 1.3025 / 3
    result = calibration(correct=[True, False, True, True], probability=[0.95, 0.9, 0.3, None])
    assert result.cases == 3
    assert result.expected_calibration_error == pytest.approx(0.55)
    assert result.brier_score == pytest.approx(1.3025 / 3)
    # one bin: |(1 + 0 + 1) - (0.95 + 0.9 + 0.3)| / 3
    one_bin = calibration(correct=[True, False, True], probability=[0.95, 0.9, 0.3], bins=1)
    assert one_bin.expected_calibration_error == pytest.approx(0.05)


def test_calibration_without_probabilities_measures_nothing() -> None:
    result = calibration(correct=[True], probability=[None])
    assert (result.cases, result.expected_calibration_error, result.brier_score) == (0, None, None)
    with pytest.raises(ValueError, match="outside"):
        calibration(correct=[True], probability=[1.5])


def test_calibration_shift_pairs_the_cases_both_give_a_probability() -> None:
    # pairs: cases 1 and 2 (the reference gives none for case 3); changes -0.1, -0.1
    # reference on the pairs: correct 1, 1 at 0.8, 0.6: ECE (0.2 + 0.4) / 2, Brier (0.04 + 0.16) / 2
    # variant on the pairs: correct 1, 0 at 0.7, 0.5: ECE (0.3 + 0.5) / 2, Brier (0.09 + 0.25) / 2
    shift = calibration_shift(
        reference_correct=[True, True, False],
        reference_probability=[0.8, 0.6, None],
        variant_correct=[True, False, False],
        variant_probability=[0.7, 0.5, 0.4],
    )
    assert shift.pairs == 2
    assert shift.probability_change == pytest.approx(-0.1)
    assert shift.abs_probability_change == pytest.approx(0.1)
    assert shift.reference.expected_calibration_error == pytest.approx(0.3)
    assert shift.variant.brier_score == pytest.approx(0.17)
    assert shift.ece_change == pytest.approx(0.1)
    assert shift.brier_change == pytest.approx(0.07)


def test_a_summary_not_measured_is_all_none_and_frozen() -> None:
    summary = ClassificationSummary()
    assert summary.kind == "classification"  # its tag in summary.json's `kind_figures`
    assert all(value is None for key, value in summary if key != "kind")
    with pytest.raises(ValueError, match="frozen"):
        summary.macro_f1 = 1.0


def test_label_probabilities_make_the_calibration_and_the_gold_label_mean() -> None:
    # three cases, gold a, a, b; predicted a (right), b (wrong), no answer; the third has no
    # probabilities (no answer). Chosen label's probability: 0.7 (right), 0.6 (wrong).
    # ECE: 0.7 in bin (0.6, 0.7], 0.6 in bin (0.5, 0.6]: (|1 - 0.7| + |0 - 0.6|) / 2 = 0.45
    # Brier: ((0.7 - 1)² + (0.6 - 0)²) / 2 = (0.09 + 0.36) / 2 = 0.225
    # gold label's probability: 0.7 (a in case 1), 0.3 (a in case 2): mean 0.5
    summary = summarize_labels(
        labels=["a", "b"],
        gold=["a", "a", "b"],
        predicted=["a", "b", None],
        probabilities=[{"a": 0.7, "b": 0.3}, {"a": 0.3, "b": 0.6}, None],
    )
    assert summary.calibrated_cases == 2
    assert summary.expected_calibration_error == pytest.approx(0.45)
    assert summary.brier_score == pytest.approx(0.225)
    assert summary.gold_label_probability == pytest.approx(0.5)


def test_reported_label_probabilities_need_every_label() -> None:
    reported = {"label_probability": 0.75, "label_probability:a": 0.75, "label_probability:b": 0.25}
    assert reported_label_probabilities(reported, ["a", "b"]) == {"a": 0.75, "b": 0.25}
    assert reported_label_probabilities(reported, ["a", "b", "c"]) is None
    assert reported_label_probabilities({"eval_count": 3}, ["a"]) is None
    no_probabilities = summarize_labels(labels=["a"], gold=["a"], predicted=["a"], probabilities=[None])
    assert no_probabilities.calibrated_cases is None
    assert no_probabilities.gold_label_probability is None
