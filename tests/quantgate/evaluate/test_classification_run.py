"""A classification dataset through a whole run with fake chat models: `run_evaluation`, then
`decide`, `report`, and `resume` of an interrupted run; the field accuracy is the label accuracy."""

from __future__ import annotations

import json

import pytest

from evaluators.classification_figures import ClassificationSummary
from evaluators.tasks import ClassificationTask
from quantgate.analysis._report import write_report
from quantgate.decide._recommendation import decide
from quantgate.evaluate._evaluation_run import RunOptions, resume_evaluation, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._variants import VariantSet
from quantgate.production._extractor import load_chosen, open_extractor
from quantgate.rundir._store import load_run, read_records, read_summary
from tests.fakes import LABELS, QueuedChatModel, write_classification_dataset
from tests.quantgate.run_factory import ref_and_quant

GOLDS = ["card_lost", "card_arrival", "top_up_failed", "card_lost", "card_arrival", "card_lost"]
QUANT_WRONG = {"text 1": "card_lost", "text 4": "top_up_failed"}
"""The quantized variant's wrong labels: 4 of the 6 cases right, a label accuracy of 4/6."""
CONFUSION = [[0, 1, 1, 0], [0, 3, 0, 0], [0, 0, 1, 0]]
"""The quantized variant's confusion matrix: rows gold, columns predicted, then no answer."""


def _answer(label: str) -> str:
    return json.dumps({"label": label})


def _variants(*, stop_quant_at: str | None = None) -> VariantSet:
    right = {f"text {i}": _answer(gold) for i, gold in enumerate(GOLDS)}
    quant = {**right, **{text: _answer(label) for text, label in QUANT_WRONG.items()}}
    if stop_quant_at is not None:
        quant[stop_quant_at] = KeyboardInterrupt()  # type: ignore[assignment]
    return ref_and_quant(right, quant)


def _options(tmp_path):
    return RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False)


@pytest.fixture
def dataset(tmp_path):
    return load_dataset(write_classification_dataset(tmp_path / "banking", GOLDS))


def test_a_classification_run_scores_label_accuracy_and_is_decided(dataset, tmp_path):
    run_dir = run_evaluation(dataset, _variants(), options=_options(tmp_path))
    summary = read_summary(run_dir)
    assert summary.dataset.task == "classification"
    ref, quant = summary.variants
    assert (ref.field_accuracy, ref.format_validity) == (1.0, 1.0)
    assert quant.field_accuracy == pytest.approx(4 / 6)  # label accuracy, counted by hand
    assert quant.fields == {"label": pytest.approx(4 / 6)}
    assert quant.agreement_with_reference == pytest.approx(4 / 6)
    # the classification figures (labels card_arrival, card_lost, top_up_failed): c1 and c4, gold
    # card_arrival, taken for card_lost and top_up_failed; F1 0, 6/7 (TP 3, FP 1), 2/3 (TP 1, FP 1)
    figures, ref_figures = quant.kind_figures, ref.kind_figures
    assert isinstance(figures, ClassificationSummary)
    assert isinstance(ref_figures, ClassificationSummary)
    assert figures.confusion == CONFUSION
    assert figures.macro_f1 == pytest.approx(32 / 63)
    assert (ref_figures.label_accuracy, ref_figures.macro_f1) == (1.0, 1.0)
    assert summary.baselines is not None
    assert summary.baselines.majority == pytest.approx(3 / 6)  # always card_lost: right on 3 of 6
    quant_records = {r.case_id: r for r in read_records(run_dir) if r.variant == "quant"}
    assert {case_id: r.fields["label"] for case_id, r in quant_records.items()} == {
        "c0": 1.0, "c1": 0.0, "c2": 1.0, "c3": 1.0, "c4": 0.0, "c5": 1.0
    }  # fmt: skip
    assert quant_records["c1"].outcomes["label"] == "wrong"

    copy = run_dir / "dataset"
    assert sorted(p.name for p in copy.iterdir()) == [
        "README.md",
        "cases.jsonl",
        "examples.jsonl",
        "task.json",
    ]
    assert load_dataset(copy).task == ClassificationTask(labels=tuple(LABELS))

    decision = decide(run_dir)
    comparison = decision.variants["quant"].comparison
    assert comparison is not None
    assert comparison.overall.cases == 6
    assert comparison.overall.reference == 1.0
    assert comparison.overall.variant == pytest.approx(4 / 6)
    assert comparison.overall.delta == pytest.approx(-2 / 6)
    assert comparison.overall.reference_only == 2  # c1 and c4: right for the reference only
    assert decision.recommended == "ref"
    assert [r.case_id for r in decision.variants["quant"].regressions] == ["c1", "c4"]
    exported = load_dataset(run_dir / "regressions" / "quant")
    assert isinstance(exported.task, ClassificationTask)

    report = write_report(run_dir).read_text()
    assert "card_lost" in report  # a failed case's gold and predicted label are shown

    model = QueuedChatModel(outputs=[_answer("top_up_failed")])
    with open_extractor(load_chosen(run_dir, chat_model=model)) as extractor:
        assert extractor.context.task == dataset.task  # production prompts as the run did
        assert extractor.examples_from == "run"
        assert extractor.extract("my top-up did not go through") == {"label": "top_up_failed"}
    system = model.calls[0][0].text
    assert system.startswith("Classify the text into one of these labels:\n- card_arrival\n")


def test_an_interrupted_classification_run_is_resumed(dataset, tmp_path):
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(dataset, _variants(stop_quant_at="text 3"), options=_options(tmp_path))
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert read_summary(run_dir).status == "interrupted"
    resume_evaluation(run_dir, variant_set=_variants(), progress=False)
    summary = load_run(run_dir).summary
    assert summary.status == "complete"
    quant = summary.entry("quant")
    assert quant is not None
    assert quant.field_accuracy == pytest.approx(4 / 6)
    assert isinstance(quant.kind_figures, ClassificationSummary)
    assert quant.kind_figures.confusion == CONFUSION  # the cases read back keep their labels too
