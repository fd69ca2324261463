"""A suite of a classification task and an extraction task through `run --suite` with fake chat
models: one variant passes one task and fails the other, so the suite fails it, naming the task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantgate.cli._main import main
from quantgate.evaluate._options import RunOptions
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import read_summary
from quantgate.suite._suite_decision import decide_suite
from quantgate.suite._suite_file import load_suite
from quantgate.suite._suite_grid import grid_rows
from quantgate.suite._suite_records import SuiteDecision, read_suite
from quantgate.suite._suite_run import resume_suite, run_suite
from tests.fakes import GOOD, QueuedChatModel, write_classification_dataset, write_tiny_dataset
from tests.quantgate.rundir.test_schemas import validate_run

GOLDS = ["card_lost", "card_arrival", "top_up_failed", "card_lost", "card_arrival", "card_lost"]
EXTRACTION_PROMPT = "Who issued it"
"""A text of the invoice schema, in every prompt of the extraction task and in none of the other."""
GATES = "max_accuracy_drop = 1.0\nmax_slice_accuracy_drop = 1.0\nmax_flip_share = 1.0\nmin_cases = 1\n"
"""Loose accuracy gates (6 cases cannot bound a drop); format validity and error rate as default."""


def _model(*, extraction: object) -> QueuedChatModel:
    labels = {f"text {i}": json.dumps({"label": gold}) for i, gold in enumerate(GOLDS)}
    return QueuedChatModel(outputs=["{}"], by_text={EXTRACTION_PROMPT: extraction, **labels})


def _variants() -> VariantSet:
    right = json.dumps(GOOD)
    return VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", _model(extraction=right), quantization="F16"),
            Variant.from_chat_model("broken", _model(extraction="not json"), quantization="Q2"),
            Variant.from_chat_model("small", _model(extraction=right), quantization="Q4"),
        ],
    )


@pytest.fixture
def suite_file(tmp_path: Path) -> Path:
    write_classification_dataset(tmp_path / "intents", GOLDS)
    write_tiny_dataset(tmp_path / "invoices")
    (tmp_path / "loose.toml").write_text(GATES)
    path = tmp_path / "suite.toml"
    path.write_text(
        '[[task]]\nname = "intents"\ndataset = "intents"\ngates = "loose.toml"\nall = true\n'
        '[[task]]\nname = "invoices"\ndataset = "invoices"\ngates = "loose.toml"\nall = true\n'
    )
    return path


def _options(tmp_path: Path) -> RunOptions:
    return RunOptions(out=tmp_path / "runs", progress=False, token_fidelity=False)


def _cells(decision: SuiteDecision) -> dict[str, list[str]]:
    return {row[0]: row[1:] for row in grid_rows(decision)}


def test_a_variant_failing_one_task_fails_the_suite_naming_it(suite_file, tmp_path):
    suite_dir = run_suite(load_suite(suite_file), _variants(), options=_options(tmp_path))
    plan = read_suite(suite_dir)
    assert [(t.name, t.kind, t.all) for t in plan.tasks] == [
        ("intents", "classification", True),
        ("invoices", "extraction", True),
    ]
    assert plan.variants == ["ref", "broken", "small"]
    intents = read_summary(suite_dir / "tasks" / "intents")
    invoices = read_summary(suite_dir / "tasks" / "invoices")
    assert [v.field_accuracy for v in intents.variants] == [1.0, 1.0, 1.0]
    assert [v.format_validity for v in invoices.variants] == [1.0, 0.0, 1.0]

    decision = decide_suite(suite_dir)
    broken = decision.variants["broken"]
    assert broken.tasks["intents"].passes
    assert not broken.tasks["invoices"].passes
    assert (broken.passes, broken.failing_tasks) == (False, ["invoices"])
    assert "min_format_validity fail" in broken.tasks["invoices"].failed_gates
    assert decision.variants["small"].passes
    assert decision.variants["small"].failing_tasks == []
    # chat models' footprints are measured (RSS): the smaller of the two passing every task is chosen
    footprints = {name: decision.variants[name].footprint_mb for name in ("ref", "small")}
    by_size = sorted(footprints, key=lambda n: (footprints[n] is None, footprints[n] or 0.0, n != "ref"))
    assert decision.recommended == by_size[0]
    cells = _cells(decision)
    assert cells["task"] == ["ref", "broken", "small"]
    assert cells["intents"] == ["pass", "pass", "pass"]
    assert cells["invoices"][0] == cells["invoices"][2] == "pass"
    assert cells["invoices"][1].startswith("fail: min_format_validity")
    assert cells["every task"] == ["pass", "not all", "pass"]
    assert json.loads((suite_dir / "suite_decision.json").read_text())["variants"]["broken"][
        "failing_tasks"
    ] == ["invoices"]
    assert "fail: min\\_format\\_validity" in (suite_dir / "suite_decision.md").read_text()
    assert validate_run(suite_dir, tmp_path / "schemas") == {"suite.json": 1, "suite_decision.json": 1}


def _cli_variants(monkeypatch: pytest.MonkeyPatch, variant_set: VariantSet) -> None:
    monkeypatch.setattr("quantgate.inputs._shorthands.resolve_variants", lambda specs: variant_set)


def test_the_command_line_exits_as_a_single_run_and_decide_rejudges(
    suite_file, tmp_path, monkeypatch, capsys
):
    no_small = VariantSet(reference="ref", variants=_variants().variants[:2])
    _cli_variants(monkeypatch, no_small)
    out = tmp_path / "runs"
    flags = ["--variants", "fake", "--out", str(out), "--no-report", "--no-token-fidelity"]
    assert main(["run", "--suite", str(suite_file), *flags]) == 4  # broken fails invoices: keep ref
    printed = capsys.readouterr().out
    assert (
        "suite decision: keep the reference ref: no quantized variant passes every task "
        "(broken does not pass invoices) (exit status 4)" in printed
    )
    assert "every task  pass  not all" in printed
    (suite_dir,) = out.iterdir()
    first = json.loads((suite_dir / "suite_decision.json").read_text())
    assert main(["decide", str(suite_dir)]) == 4
    again = json.loads((suite_dir / "suite_decision.json").read_text())
    assert {k: v for k, v in again.items() if k != "decided_at"} == {
        k: v for k, v in first.items() if k != "decided_at"
    }
    # stricter gates on the command line re-judge every task: the accuracy gates become inconclusive
    assert main(["decide", str(suite_dir), "--max-accuracy-drop", "0.01"]) == 4
    assert "inconclusive: max_accuracy_drop" in capsys.readouterr().out


def test_suite_and_dataset_exclude_each_other(suite_file, capsys):
    with pytest.raises(SystemExit):
        main(["run", "--suite", str(suite_file), "--dataset", "banking77"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_bad_suite_fails_before_any_model_loads(tmp_path, monkeypatch, capsys):
    path = tmp_path / "suite.toml"
    path.write_text('[[task]]\nname = "intents"\ndataset = "bankin77"\n')
    monkeypatch.setattr("quantgate.inputs._shorthands.resolve_variants", pytest.fail)
    assert main(["run", "--suite", str(path), "--variants", "x", "--out", str(tmp_path / "runs")]) == 2
    assert f"{path}: task 'intents': dataset 'bankin77' not found" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_a_stopped_suite_keeps_its_finished_tasks_and_resumes(suite_file, tmp_path, capsys):
    variant_set = _variants()
    stopping = VariantSet(
        reference="ref",
        variants=[
            *variant_set.variants[:2],
            Variant.from_chat_model(
                "small",
                _model(extraction=KeyboardInterrupt()),
                quantization="Q4",
            ),
        ],
    )
    with pytest.raises(KeyboardInterrupt):
        run_suite(load_suite(suite_file), stopping, options=_options(tmp_path))
    # the first task, classification, never reached the extraction prompt: it finished
    (suite_dir,) = (tmp_path / "runs").iterdir()
    err = capsys.readouterr().err
    assert "the suite stopped in task 'invoices' (tasks finished and kept: intents)" in err
    assert f"go on with: quantgate run --resume {suite_dir}" in err
    assert read_summary(suite_dir / "tasks" / "intents").status == "complete"
    assert read_summary(suite_dir / "tasks" / "invoices").status == "interrupted"
    resume_suite(suite_dir, variant_set, progress=False)
    assert read_summary(suite_dir / "tasks" / "invoices").status == "complete"
    assert decide_suite(suite_dir).variants["small"].passes


def _two_variants(*, stop_broken: bool) -> VariantSet:
    broken = _model(extraction=KeyboardInterrupt() if stop_broken else "not json")
    return VariantSet(
        reference="ref",
        variants=[
            _variants().variants[0],
            Variant.from_chat_model("broken", broken, quantization="Q2"),
        ],
    )


def test_the_command_line_refuses_to_decide_a_stopped_suite_and_resumes_it(
    suite_file, tmp_path, monkeypatch, capsys
):
    with pytest.raises(KeyboardInterrupt):
        run_suite(load_suite(suite_file), _two_variants(stop_broken=True), options=_options(tmp_path))
    (suite_dir,) = (tmp_path / "runs").iterdir()
    capsys.readouterr()
    assert main(["decide", str(suite_dir)]) == 5
    assert (
        f"{suite_dir}: tasks not complete: invoices; not deciding (exit status 5)" in capsys.readouterr().err
    )
    _cli_variants(monkeypatch, _two_variants(stop_broken=False))
    assert main(["run", "--resume", str(suite_dir), "--variants", "fake", "--no-report"]) == 4
    assert "(broken does not pass invoices) (exit status 4)" in capsys.readouterr().out
    assert read_summary(suite_dir / "tasks" / "invoices").status == "complete"
    assert main(["run", "--resume", str(suite_dir), "--budget", "3"]) == 2
    assert "--dataset and --budget cannot be given when resuming it" in capsys.readouterr().err


def test_run_suite_writes_each_tasks_report_and_the_suites_grid(suite_file, tmp_path, monkeypatch, capsys):
    no_small = VariantSet(reference="ref", variants=_variants().variants[:2])
    _cli_variants(monkeypatch, no_small)
    out = tmp_path / "runs"
    assert (
        main(
            [
                "run",
                "--suite",
                str(suite_file),
                "--variants",
                "fake",
                "--out",
                str(out),
                "--no-token-fidelity",
            ]
        )
        == 4
    )
    (suite_dir,) = out.iterdir()
    page = suite_dir / "report" / "report.html"
    assert f"report: {page}" in capsys.readouterr().out
    html = page.read_text(encoding="utf-8")
    assert "fail: min_format_validity" in html  # broken's invoices cell of the grid
    for task in ("intents", "invoices"):
        assert (suite_dir / "tasks" / task / "report" / "report.html").is_file()
        assert f'href="../tasks/{task}/report/report.html"' in html
