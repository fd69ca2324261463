"""The task-kind section under the terminal table, in decision.md and in suite_decision.md, from
runs with fake chat models (`task_kind_runs`); the figures are counted by hand or cross-checked
with sacrebleu."""

from __future__ import annotations

import json
from pathlib import Path

from sacrebleu.metrics.chrf import CHRF

from evaluators.classification_figures import ClassFigures, ClassificationSummary
from quantgate.cli._main import main
from quantgate.evaluate._options import RunOptions
from quantgate.inputs._variants import VariantSet
from quantgate.render._summary_table import render_summary
from quantgate.render._task_figures import task_figures
from quantgate.rundir._store import read_summary
from quantgate.rundir._summary import DatasetInfo, RunSummary, VariantEntry
from quantgate.suite._suite_decision import decide_suite
from quantgate.suite._suite_file import load_suite
from quantgate.suite._suite_run import run_suite
from tests.quantgate.render import task_kind_runs as runs
from tests.quantgate.run_factory import ref_and_quant

QUANT_CHRF = CHRF().corpus_score(list(runs.GENERATION_QUANT.values()), [list(runs.GENERATION_GOLDS.values())])
"""The quantized variant's corpus chrF against the gold texts (the reference's texts are the same)."""


def _lines(text: str) -> list[str]:
    """The lines, with runs of spaces as one (the columns' widths aside)."""
    return [" ".join(line.split()) for line in text.splitlines()]


def test_decide_prints_a_classification_runs_label_figures(tmp_path, capsys):
    run_dir = runs.classification_run(tmp_path)
    assert main(["decide", str(run_dir)]) == 4
    printed = _lines(capsys.readouterr().out)
    start = printed.index("classification figures:")
    # quant: c1 and c4 (gold card_arrival) wrong, 4 of 6 right; F1 per class 0, 6/7, 2/3: macro 32/63;
    # both card_arrival cases missed: recall 0; the fake model gives no probabilities: no calibration
    assert printed[start + 1 : start + 5] == [
        "variant accuracy macro-F1 worst recall (label) no answer ECE Brier P(gold) Δ P(gold) Δ ref unsure "
        "Δ ref sure",
        "-" * len("variant  accuracy  macro-F1  worst recall (label)   no answer  ECE  Brier  P(gold)  "
                  "Δ P(gold)  Δ ref unsure  Δ ref sure"),
        "ref * 100.0% 1.000 100.0% (card_arrival) 0 — — — — — —",
        "quant 66.7% 0.508 0.0% (card_arrival) 0 — — — — — —",
    ]  # fmt: skip
    assert f"{32 / 63:.3f}" == "0.508"
    markdown = (run_dir / "decision.md").read_text()
    assert "## Classification figures" in markdown
    not_measured = " — |" * 6  # ECE, Brier, P(gold) and its changes: no label probabilities
    assert "| quant | 66.7% | 0.508 | 0.0% (card\\_arrival) | 0 |" + not_measured in markdown
    assert "| ref (reference) | 100.0% | 1.000 | 100.0% (card\\_arrival) | 0 |" + not_measured in markdown


def test_run_prints_the_label_figures_under_its_table(tmp_path, monkeypatch, capsys):
    dataset = runs.classification_dataset(tmp_path / "banking")
    variant_set = ref_and_quant(*runs.classification_answers())
    monkeypatch.setattr("quantgate.inputs._shorthands.resolve_variants", lambda specs: variant_set)
    flags = ["--variants", "fake", "--out", str(tmp_path / "runs"), "--no-report", "--no-token-fidelity"]
    assert main(["run", "--dataset", str(dataset), "--all", *flags]) == 4
    printed = _lines(capsys.readouterr().out)
    table = printed.index("classification figures:")
    assert printed[table + 3 : table + 5] == [
        "ref * 100.0% 1.000 100.0% (card_arrival) 0 — — — — — —",
        "quant 66.7% 0.508 0.0% (card_arrival) 0 — — — — — —",
    ]
    footer = next(i for i, line in enumerate(printed) if line.startswith("* reference dataset banking"))
    assert footer < table  # under the summary table
    assert printed.count("classification figures:") == 1  # not again before the verdicts


def test_a_generation_runs_table_shows_chrf_length_and_empty_texts(tmp_path, capsys):
    run_dir = runs.generation_run(tmp_path)
    text = _lines(render_summary(read_summary(run_dir)))
    start = text.index("generation figures:")
    chrf = f"{QUANT_CHRF.score:.1f}"
    # g1: 5 of 13 characters, g0 all 13: a mean length ratio of (1 + 5/13) / 2 = 0.692
    assert text[start + 3 : start + 5] == [
        "ref * 100.0 — 1.00 — 0.0%",  # the reference has no chrF against itself
        f"quant {chrf} {chrf} 0.69 0.69 0.0%",
    ]
    assert chrf == "61.2"
    assert main(["decide", str(run_dir)]) == 4
    assert f"quant {chrf} {chrf} 0.69 0.69 0.0%" in _lines(capsys.readouterr().out)
    markdown = (run_dir / "decision.md").read_text()
    assert "## Generation figures" in markdown
    assert f"| quant | {chrf} | {chrf} | 0.69 | 0.69 | 0.0% |" in markdown


def test_an_extraction_run_has_no_task_section():
    summary = RunSummary(
        run_id="r1",
        quantgate_version="test",
        status="complete",
        dataset=DatasetInfo(name="x", path="x", sha256="x", cases=1, task="extraction"),
        variants=[VariantEntry(name="R", backend="test", is_reference=True, field_accuracy=1.0)],
    )
    assert task_figures(summary) is None
    assert "figures:" not in render_summary(summary)


def test_multi_label_figures_and_a_skipped_variant_show_missing_as_missing():
    entries = [
        VariantEntry(
            name="R", backend="test", is_reference=True, kind_figures=ClassificationSummary(
                subset_accuracy=0.5, micro_f1=0.8, macro_f1=0.75, hamming_loss=0.125, no_answer=0,
            ),
        ),
        VariantEntry(
            name="Q", backend="test",
            kind_figures=ClassificationSummary(subset_accuracy=0.25, micro_f1=None, no_answer=1),
        ),
        VariantEntry(name="gone", backend="test", status="skipped", error="no file"),
    ]  # fmt: skip
    summary = RunSummary(
        run_id="r1",
        quantgate_version="test",
        status="complete",
        dataset=DatasetInfo(name="x", path="x", sha256="x", cases=4, task="classification"),
        variants=entries,
    )
    figures = task_figures(summary)
    assert figures is not None
    assert figures.kind == "multi-label classification"
    assert figures.rows == [
        ["R *", "50.0%", "0.800", "0.750", "0.125", "0"],
        ["Q", "25.0%", "—", "—", "—", "1"],  # not measured: —, never 0
        ["gone", "skipped", "", "", "", ""],
    ]


def _suite(tmp_path: Path) -> Path:
    runs.classification_dataset(tmp_path / "intents")
    runs.generation_dataset(tmp_path / "texts")
    loose = "max_accuracy_drop = 1.0\nmax_slice_accuracy_drop = 1.0\nmax_flip_share = 1.0\nmin_cases = 1\n"
    (tmp_path / "loose.toml").write_text(loose)
    path = tmp_path / "suite.toml"
    path.write_text(  # the texts task keeps the default gates: 2 cases cannot settle its accuracy drop
        '[[task]]\nname = "intents"\ndataset = "intents"\ngates = "loose.toml"\nall = true\n'
        '[[task]]\nname = "texts"\ndataset = "texts"\nall = true\n'
    )
    return path


def _suite_variants() -> VariantSet:
    (labels, wrong_labels), (texts, wrong_texts) = runs.classification_answers(), runs.generation_answers()
    return ref_and_quant({**labels, **texts}, {**wrong_labels, **wrong_texts})


def test_suite_decision_md_has_each_tasks_gates_and_figures(tmp_path):
    options = RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False)
    suite_dir = run_suite(load_suite(_suite(tmp_path)), _suite_variants(), options=options)
    decision = decide_suite(suite_dir)
    assert decision.variants["quant"].failing_tasks == ["texts"]
    markdown = (suite_dir / "suite_decision.md").read_text()
    assert "(quant does not pass texts)" in markdown
    intents = markdown.index("## Task intents (classification)")
    texts = markdown.index("## Task texts (generation)")
    assert intents < markdown.index("### Classification figures") < texts
    assert texts < markdown.index("### Generation figures")
    quant = "| quant | 66.7% | 0.508 | 0.0% (card\\_arrival) | 0 |" + " — |" * 6
    assert quant in markdown[intents:texts]
    chrf = f"{QUANT_CHRF.score:.1f}"
    assert f"| quant | {chrf} | {chrf} | 0.69 | 0.69 | 0.0% |" in markdown[texts:]
    # the gates per task, each with its evidence (the interval): intents passes, texts does not
    assert "| quant | pass | max\\_accuracy\\_drop | pass | delta -33.3 pts, CI" in markdown[intents:texts]
    assert "| quant | inconclusive | max\\_accuracy\\_drop | inconclusive | delta" in markdown[texts:]
    decided = json.loads((suite_dir / "suite_decision.json").read_text())
    assert decided["variants"]["quant"]["tasks"]["intents"]["passes"] is True


def test_a_tool_calling_run_shows_its_figures(tmp_path):
    run_dir = runs.tool_calling_run(tmp_path)
    figures = task_figures(read_summary(run_dir))
    assert figures is not None
    assert figures.kind == "tool calling"
    # quant: t0, t1 right; t2 no call where one is due; t3 a call where none is: selection 2/4;
    # arguments over the right-tool cases t0, t1, all right; exact 2/4; abstention 0/1 (t3);
    # false abstention 1/3 (t2); its calls t0, t1, t3 all valid for get_weather
    assert figures.rows[1] == ["quant", "50.0%", "100.0%", "50.0%", "0.0%", "33.3%", "100.0%"]
    assert figures.rows[0] == ["ref *", "100.0%", "100.0%", "100.0%", "100.0%", "0.0%", "100.0%"]


def test_measured_calibration_the_gold_label_shift_and_the_first_of_tied_worst_recalls_are_shown():
    classes = {
        "a": ClassFigures(support=2, predicted=2, recall=0.5),
        "b": ClassFigures(support=2, predicted=1, recall=0.5),  # tied with a: a comes first
        "c": ClassFigures(support=0, predicted=1, recall=None),  # no gold cases: not a recall
    }
    reference = VariantEntry(
        name="R", backend="test", is_reference=True, kind_figures=ClassificationSummary(
            label_accuracy=0.5, macro_f1=0.5, classes=classes, no_answer=0, calibrated_cases=4,
            expected_calibration_error=0.0625, brier_score=0.21875, gold_label_probability=0.625,
        ),
    )  # fmt: skip
    # Q's gold-label probability moved -0.25 on the 3 cases R was sure of, +0.05 on its 1 unsure
    # one: (3 x -0.25 + 0.05) / 4 = -0.175; the reference has no shift against itself: —
    quant = VariantEntry(
        name="Q", backend="test", kind_figures=ClassificationSummary(
            label_accuracy=0.25, no_answer=1, gold_label_probability=0.45, gold_probability_pairs=4,
            gold_probability_change=-0.175, gold_probability_change_unsure=0.05,
            gold_probability_change_sure=-0.25, reference_unsure_cases=1,
        ),
    )  # fmt: skip
    summary = RunSummary(
        run_id="r1",
        quantgate_version="test",
        status="complete",
        dataset=DatasetInfo(name="x", path="x", sha256="x", cases=4, task="classification"),
        variants=[reference, quant],
    )
    figures = task_figures(summary)
    assert figures is not None
    assert figures.rows == [
        ["R *", "50.0%", "0.500", "50.0% (a)", "0", "0.062", "0.219", "0.625", "—", "—", "—"],
        ["Q", "25.0%", "—", "—", "1", "—", "—", "0.450", "-0.175", "+0.050", "-0.250"],
    ]
    assert 0.625 - 0.175 == 0.45  # Q's mean is R's moved by the mean change (the same 4 cases)
