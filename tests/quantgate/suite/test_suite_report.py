"""`quantgate report SUITE_DIR`: the task x variant grid of suite_decision.json, and one section per
task with its kind's figures and a link to the task's own report (written beside its run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantgate.analysis._task_view import task_kind
from quantgate.cli._main import main
from quantgate.evaluate._options import RunOptions
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.suite._suite_decision import decide_suite
from quantgate.suite._suite_file import load_suite
from quantgate.suite._suite_grid import grid_rows
from quantgate.suite._suite_report import open_task, suite_tasks, write_suite_report
from quantgate.suite._suite_run import run_suite
from tests.fakes import QueuedChatModel, write_classification_dataset, write_dataset
from tests.quantgate.analysis import kind_runs
from tests.quantgate.analysis.test_task_report import ordered_tables, tables

GATES = "max_accuracy_drop = 1.0\nmax_slice_accuracy_drop = 1.0\nmax_flip_share = 1.0\nmin_cases = 1\n"
"""Loose accuracy gates; format validity and error rate as default."""


def _variants() -> VariantSet:
    labels = {f"text {i}": json.dumps({"label": gold}) for i, gold in enumerate(kind_runs.GOLDS)}
    texts = {text: json.dumps({"text": gold}) for text, gold in kind_runs.TEXTS.items()}
    wrong = {text: json.dumps({"label": label}) for text, label in kind_runs.QUANT_LABELS.items()}
    broken = dict.fromkeys(kind_runs.TEXTS, "not json")  # no valid text: fails min_format_validity

    def variant(name: str, answers: dict[str, str]) -> Variant:
        return Variant.from_chat_model(
            name, QueuedChatModel(outputs=["{}"], by_text=answers), quantization=name
        )

    return VariantSet(
        reference="ref",
        variants=[variant("ref", labels | texts), variant("quant", labels | wrong | texts | broken)],
    )


def make_suite(root: Path) -> Path:
    """A decided suite of two tasks under `root`: intents (classification, quant wrong on c1 and
    c4) and texts (generation, quant answering no valid text); its directory."""
    write_classification_dataset(root / "intents", kind_runs.GOLDS)
    lines = [
        {"id": f"g{i}", "text": t, "expected": {"text": g}}
        for i, (t, g) in enumerate(kind_runs.TEXTS.items())
    ]
    write_dataset(root / "texts", lines, schema=None, task={"kind": "generation"})
    (root / "loose.toml").write_text(GATES)
    (root / "suite.toml").write_text(
        '[[task]]\nname = "intents"\ndataset = "intents"\ngates = "loose.toml"\nall = true\n'
        '[[task]]\nname = "texts"\ndataset = "texts"\ngates = "loose.toml"\nall = true\n'
    )
    options = RunOptions(out=root / "runs", progress=False, token_fidelity=False)
    folder = run_suite(load_suite(root / "suite.toml"), _variants(), options=options)
    decide_suite(folder)
    return folder


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_suite(tmp_path_factory.mktemp("suite"))


def test_the_suite_report_has_the_grid_and_a_section_per_task(suite_dir):
    page = write_suite_report(suite_dir)
    assert page == suite_dir / "report" / "report.html"
    decision = decide_suite(suite_dir)
    found = tables(page)
    assert found["grid"] == grid_rows(decision)  # the grid the terminal and suite_decision.md show
    cells = {row[0]: row[1:] for row in found["grid"]}
    assert cells["intents"] == ["pass", "pass"]  # 4 of 6 labels right: within the loose gates
    assert cells["texts"][0] == "pass"
    assert cells["texts"][1].startswith("fail: min_format_validity")  # no valid text
    assert cells["every task"] == ["pass", "not all"]
    html = page.read_text(encoding="utf-8")
    for task in ("intents", "texts"):
        link = f'href="../tasks/{task}/report/report.html"'
        assert link in html
        assert (suite_dir / "tasks" / task / "report" / "report.html").is_file()
    assert "Task intents (classification)" in html
    assert "Task texts (generation)" in html


def test_each_task_section_shows_its_kinds_figures(suite_dir):
    page = write_suite_report(suite_dir)
    figures = [rows for kind, rows in ordered_tables(page) if kind == "task-figures"]
    intents, texts = figures
    assert intents[0][:5] == ["variant", "accuracy", "macro-F1", "worst recall (label)", "no answer"]
    assert intents[2][:5] == ["quant", "66.7%", "0.508", "0.0% (card_arrival)", "0"]  # as in its report
    assert texts[2][0] == "quant"
    assert texts[2][5] == "100.0%"  # every text empty: not valid JSON


def test_cli_report_of_a_suite_prints_its_page(suite_dir, capsys):
    assert main(["report", str(suite_dir)]) == 0
    assert capsys.readouterr().out.strip() == str(suite_dir / "report" / "report.html")


def test_a_suites_task_opens_by_name(suite_dir):
    assert list(suite_tasks(suite_dir)) == ["intents", "texts"]
    assert task_kind(open_task(suite_dir)) == "classification"  # the first task by default
    assert task_kind(open_task(suite_dir, "texts")) == "generation"
    with pytest.raises(FileNotFoundError, match="no task 'nope' \\(its tasks: intents, texts\\)"):
        open_task(suite_dir, "nope")


def test_a_suite_not_decided_yet_has_no_grid(tmp_path):
    folder = make_suite(tmp_path)
    (folder / "suite_decision.json").unlink()
    page = write_suite_report(folder)
    assert "grid" not in tables(page)
    assert "Not decided yet: run <code>quantgate decide SUITE_DIR</code>" in page.read_text(encoding="utf-8")
    assert len([kind for kind, _ in ordered_tables(page) if kind == "task-figures"]) == 2
