"""Two sets the project was not built on (`tests/data/`: CLINC150 intents and BFCL's non-live
simple_python calls), written as a user writes them from the docs: `datasets check` and `run` work
on them unchanged, with figures counted by hand; a bad gold in either is named by file, line and
field, by `datasets check` and by `run` alike."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from evaluators.classification_figures import ClassificationSummary
from quantgate.cli._main import main
from quantgate.inputs._variants import VariantSet
from quantgate.rundir._store import read_records, read_summary
from tests.fakes import QueuedChatModel
from tests.quantgate.run_factory import ref_and_quant

DATA = Path(__file__).parents[2] / "data"
CLINC = DATA / "clinc-oos"
BFCL = DATA / "bfcl-simple"
FLAGS = ["--variants", "fake", "--all", "--no-report", "--no-token-fidelity"]


class LastMessageModel(QueuedChatModel):
    """Answers by the last message alone (the case's text), not the examples before it."""

    def _next(self, messages: list[BaseMessage]) -> Any:
        return super()._next(messages[-1:])


def _cases(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (root / "cases.jsonl").read_text().splitlines()]


def _variants(root: Path, wrong: dict[str, Any]) -> VariantSet:
    """A reference that answers every gold, and a quantized variant with `wrong` answers by case id."""
    cases = sorted(_cases(root), key=lambda c: -len(c["text"]))  # a longer text matches first
    right = {c["text"]: json.dumps(c["expected"]) for c in cases}
    quant = {c["text"]: json.dumps(wrong.get(c["id"], c["expected"])) for c in cases}
    return ref_and_quant(right, quant, LastMessageModel)


def _run(
    root: Path, variants: VariantSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, Path]:
    monkeypatch.setattr("quantgate.inputs._shorthands.resolve_variants", lambda specs: variants)
    status = main(["run", "--dataset", str(root), *FLAGS, "--out", str(tmp_path / "runs")])
    (run_dir,) = (tmp_path / "runs").iterdir()
    return status, run_dir


def test_datasets_check_prints_each_sets_kind_and_counts(capsys):
    assert main(["datasets", "check", str(CLINC), str(BFCL)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"ok   {CLINC}: classification, 6 labels; 18 cases (18 labeled), 6 examples",
        f"ok   {BFCL}: tool_calling, 14 tools; 18 cases (18 labeled), 0 examples",
    ]
    assert err == ""  # no warning either: each has its card


CLINC_WRONG = {
    "oos_test-523": {"label": "weather"},
    "test-2192": {"label": "timer"},  # gold alarm
    "test-7": {"label": "definition"},  # gold translate
}
CLINC_CONFUSION = [
    # gold by predicted in task.json's order (timer, translate, weather, alarm, definition, oos),
    # then no answer
    [3, 0, 0, 0, 0, 0, 0],
    [0, 2, 0, 0, 1, 0, 0],
    [0, 0, 3, 0, 0, 0, 0],
    [1, 0, 0, 2, 0, 0, 0],
    [0, 0, 0, 0, 3, 0, 0],
    [0, 0, 1, 0, 0, 2, 0],
]


def test_a_run_on_the_clinc_set_scores_and_decides(tmp_path, monkeypatch, capsys):
    status, run_dir = _run(CLINC, _variants(CLINC, CLINC_WRONG), tmp_path, monkeypatch)
    assert status == 4  # 18 cases cannot show a drop small enough: keep the reference
    assert "decision: keep the reference ref" in capsys.readouterr().out
    summary = read_summary(run_dir)
    assert summary.dataset.task == "classification"
    assert summary.examples is not None
    assert (summary.examples.source, len(summary.examples.ids)) == ("dataset", 6)
    ref, quant = summary.variants
    labels, ref_labels = quant.kind_figures, ref.kind_figures
    assert isinstance(labels, ClassificationSummary)
    assert isinstance(ref_labels, ClassificationSummary)
    assert (ref.cases, ref.field_accuracy, ref_labels.label_accuracy, ref_labels.macro_f1) == (
        18,
        1.0,
        1.0,
        1.0,
    )
    assert labels.label_accuracy == quant.field_accuracy == pytest.approx(15 / 18)
    assert quant.agreement_with_reference == pytest.approx(15 / 18)
    assert labels.confusion == CLINC_CONFUSION
    # F1 per label: timer, weather, definition 6/7 (TP 3, FP 1); translate, alarm, oos 4/5 (TP 2, FN 1)
    assert labels.macro_f1 == pytest.approx((3 * 6 / 7 + 3 * 4 / 5) / 6)
    assert summary.baselines is not None
    assert summary.baselines.majority == pytest.approx(3 / 18)  # 3 cases per label
    wrong = {r.case_id for r in read_records(run_dir) if r.variant == "quant" and r.fields["label"] == 0.0}
    assert wrong == set(CLINC_WRONG)
    assert main(["decide", str(run_dir)]) == 4


BFCL_WRONG = {
    "simple_python_230": {  # gold date 1510: a wrong argument
        "call": {
            "name": "historic_leader_search",
            "arguments": {"location": "France", "date": 1515, "title": "King"},
        }
    },
    "simple_python_215": {"call": None},  # gold: movie_details_brief; a false abstention
    "simple_python_174": {
        "call": {"name": "movie_details_brief", "arguments": {"title": "China"}}
    },  # gold: none
}


def test_a_run_on_the_bfcl_set_scores_and_decides(tmp_path, monkeypatch, capsys):
    status, run_dir = _run(BFCL, _variants(BFCL, BFCL_WRONG), tmp_path, monkeypatch)
    assert status == 4
    assert "decision: keep the reference ref" in capsys.readouterr().out
    summary = read_summary(run_dir)
    assert summary.dataset.task == "tool_calling"
    assert summary.examples is not None  # no examples.jsonl: 3 cases taken as examples, not scored
    assert summary.examples.source == "cases"
    assert summary.examples.ids == ["simple_python_263", "simple_python_15", "simple_python_91"]
    assert not set(BFCL_WRONG) & set(summary.examples.ids)
    ref, quant = summary.variants
    assert (ref.cases, ref.field_accuracy, ref.format_validity) == (15, 1.0, 1.0)
    assert quant.field_accuracy == pytest.approx(12 / 15)  # the exact-call rate: 3 of 15 wrong
    assert quant.fields == {"call": pytest.approx(12 / 15)}
    assert quant.agreement_with_reference == pytest.approx(12 / 15)
    assert quant.format_validity == 1.0  # each wrong call is still a call of a declared tool
    assert summary.baselines is not None
    assert summary.baselines.always_null == pytest.approx(3 / 15)  # 4 golds are no call, one an example
    wrong = {r.case_id for r in read_records(run_dir) if r.variant == "quant" and r.fields["call"] == 0.0}
    assert wrong == set(BFCL_WRONG)
    assert main(["decide", str(run_dir)]) == 4


def _spoil(tmp_path: Path, root: Path, case_id: str, expected: dict[str, Any]) -> tuple[Path, int]:
    """A copy of `root` whose case `case_id` has `expected` as its gold; its line number."""
    copy = tmp_path / root.name
    shutil.copytree(root, copy)
    cases = _cases(root)
    line = next(i for i, c in enumerate(cases, start=1) if c["id"] == case_id)
    cases[line - 1]["expected"] = expected
    (copy / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return copy, line


OF_LEADER = "(the parameters of 'historic_leader_search')"
LEADER = {"location": "France", "date": 1510, "title": "King"}
BAD_GOLDS = [
    # (dataset, case id, bad gold, the message after "cases.jsonl:LINE: ")
    (
        CLINC,
        "test-7",
        {"label": "translation"},
        "expected.label: 'translation' is not one of the 6 labels in task.json",
    ),
    (
        BFCL,
        "simple_python_230",
        {"call": {"name": "historic_leader_find", "arguments": LEADER}},
        "expected.call.name: 'historic_leader_find' is not one of the 14 tools offered to the case",
    ),
    (
        BFCL,
        "simple_python_230",
        {"call": {"name": "historic_leader_search", "arguments": {**LEADER, "date": "1510"}}},
        f"expected.call.arguments.date: '1510' is not of type 'integer' {OF_LEADER}",
    ),
    (
        BFCL,
        "simple_python_230",
        {"call": {"name": "historic_leader_search", "arguments": {"location": "France"}}},
        f"expected.call.arguments: 'date' is a required property {OF_LEADER}",
    ),
]


@pytest.mark.parametrize(
    ("root", "case_id", "gold", "message"),
    BAD_GOLDS,
    ids=["label", "unknown tool", "wrong type", "missing required"],
)
def test_a_bad_gold_is_named_by_file_line_and_field_by_check_and_run(
    tmp_path, capsys, monkeypatch, root, case_id, gold, message
):
    bad, line = _spoil(tmp_path, root, case_id, gold)
    located = f"cases.jsonl:{line}: {message}"
    assert main(["datasets", "check", str(bad)]) == 1
    out, err = capsys.readouterr()
    assert out == f"FAIL {bad}: 1 error(s)\n"
    assert err == f"error: {bad}/{located}\n"

    monkeypatch.setattr("quantgate.inputs._shorthands.resolve_variants", pytest.fail)  # refused before
    assert main(["run", "--dataset", str(bad), *FLAGS, "--out", str(tmp_path / "runs")]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert err == f"quantgate: error: dataset {bad} has 1 error(s):\n  {located}\n"
    assert not (tmp_path / "runs").exists()


def test_a_suite_naming_a_missing_dataset_is_one_line(tmp_path, capsys, monkeypatch):
    path = tmp_path / "suite.toml"
    path.write_text(
        f'[[task]]\nname = "intents"\ndataset = "{CLINC}"\n[[task]]\nname = "calls"\ndataset = "bfcl"\n'
    )
    monkeypatch.setattr("quantgate.inputs._shorthands.resolve_variants", pytest.fail)
    assert main(["run", "--suite", str(path), "--variants", "x", "--out", str(tmp_path / "runs")]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert len(err.splitlines()) == 1
    assert err.startswith(f"quantgate: error: {path}: task 'calls': dataset 'bfcl' not found (no directory ")
    assert not (tmp_path / "runs").exists()
