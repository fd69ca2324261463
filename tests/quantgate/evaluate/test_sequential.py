"""Sequential runs: rounds, early stopping once the accuracy gates are settled, budgets, and the
decision judging the same records with the same confidence sequences."""

import json

import pytest

from quantgate.cli.main import main
from quantgate.decide.decision import decide
from quantgate.evaluate.run import RunOptions, run_evaluation
from quantgate.inputs.dataset import load_dataset
from quantgate.inputs.gates import Gates
from quantgate.inputs.variants import Variant, VariantSet
from quantgate.rundir.store import latest_records, load_run, read_records
from tests.graphs.fakes import QueuedChatModel
from tests.graphs.test_extraction import GOOD, SCHEMA
from tests.quantgate.loadtest.test_load import SleepyChatModel

GATES = Gates(max_accuracy_drop=0.2, max_slice_accuracy_drop=None)
WRONG = {"vendor": "Nobody", "total": 99.0, "issued": "1999-01-01", "currency": "JPY"}


@pytest.fixture
def dataset(tmp_path):
    root = tmp_path / "sixty"
    root.mkdir()
    (root / "schema.json").write_text(json.dumps(SCHEMA))
    lines = [
        {
            "id": f"c{i:02d}",
            "text": f"case {i}",
            "expected": GOOD,
            "tags": [f"lang:{'es' if i % 3 else 'en'}"],
        }
        for i in range(60)
    ]
    (root / "cases.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (root / "examples.jsonl").write_text(json.dumps({"id": "e1", "text": "example", "expected": GOOD}) + "\n")
    (root / "README.md").write_text("sixty cases\n")
    return load_dataset(root)


def _variants():
    def model(record):
        return QueuedChatModel(outputs=[json.dumps(record)])

    return VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", model(GOOD), quantization="F16"),
            Variant.from_chat_model("same", model(GOOD), quantization="Q8_0"),
            Variant.from_chat_model("broken", model(WRONG), quantization="Q2_K"),
        ],
    )


def _options(tmp_path, **kwargs):
    return RunOptions(
        out=tmp_path / "runs", progress=False, sequential=True, gates=GATES, round_size=10, **kwargs
    )


def test_each_variant_stops_once_its_accuracy_gate_is_settled(dataset, tmp_path):
    run_dir = run_evaluation(dataset, _variants(), options=_options(tmp_path))
    summary = load_run(run_dir).summary
    assert summary.options is not None
    assert (summary.options.method, summary.options.round_size, summary.options.limit) == (
        "sequential",
        10,
        None,
    )
    entries = {e.name: e.sequential for e in summary.variants}
    ref, same, broken = entries["ref"], entries["same"], entries["broken"]
    assert ref is not None
    assert (ref.settled, ref.cases, ref.stopped) == (None, 60, "cases")
    # identical outputs: every difference 0; the confidence sequence's lower bound reaches -0.2
    # after 32 cases, so at the end of round 4
    assert same is not None
    assert (same.settled, same.paired_cases, same.stopped) == ("pass", 40, "settled")
    # every field wrong: differences of -1; the upper bound falls below -0.2 after 13 cases (-0.206),
    # so at the end of round 2
    assert broken is not None
    assert (broken.settled, broken.paired_cases, broken.stopped) == (
        "fail",
        20,
        "settled",
    )
    records = latest_records(read_records(run_dir))
    assert {name: len(r) for name, r in records.items()} == {"ref": 60, "same": 40, "broken": 20}
    # rounds follow the run's order (languages in turn), and every variant runs a prefix of it
    order = [c.id for c in load_dataset(run_dir / "dataset").cases]
    assert sorted(records["same"], key=order.index) == order[:40]
    assert [int(i[1:]) % 3 == 0 for i in order[:4]] == [True, False, True, False]  # en, es, en, es


def test_the_decision_judges_the_same_sequences_and_records_the_method(dataset, tmp_path):
    run_dir = run_evaluation(dataset, _variants(), options=_options(tmp_path))
    decision = decide(run_dir, GATES)
    same, broken = decision.variants["same"], decision.variants["broken"]
    accuracy = {
        name: next(g for g in v.gates if g.gate == "max_accuracy_drop")
        for name, v in decision.variants.items()
    }
    assert accuracy["same"].status == "pass"
    assert "confidence sequence lower bound" in accuracy["same"].evidence
    assert accuracy["same"].interval is not None
    assert accuracy["same"].interval.low >= -0.2
    assert accuracy["broken"].status == "fail"
    assert "over 20 cases: the whole confidence sequence lies below -20.0 pts" in accuracy["broken"].evidence
    assert (same.verdict, broken.verdict) == ("pass", "fail")
    assert same.sequential is not None
    assert same.sequential.paired_cases == 40
    assert decision.record.statistics.accuracy_delta_interval.startswith("anytime-valid confidence sequence")
    assert "after every round of 10 cases" in decision.record.statistics.accuracy_delta_interval


def test_a_budget_stops_starting_cases_and_bounds_the_others(dataset, tmp_path):
    slow = QueuedChatModel(outputs=[json.dumps(GOOD)])
    sleepy = VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", SleepyChatModel(delay_s=0.05), quantization="F16"),  # 0.2 s a case
            Variant.from_chat_model("same", slow, quantization="Q8_0"),
        ],
    )
    # the reference's share is half of 0.9 s: it starts about 3 cases, one at a time, then no more
    run_dir = run_evaluation(dataset, sleepy, options=_options(tmp_path, budget_s=0.9))
    entries = {e.name: e.sequential for e in load_run(run_dir).summary.variants}
    ref, same = entries["ref"], entries["same"]
    assert ref is not None
    assert ref.stopped == "budget"
    assert 1 <= ref.cases <= 4  # far fewer than one round of 10: the deadline holds inside a round
    assert same is not None
    assert same.cases == ref.cases  # at most the reference's cases
    records = latest_records(read_records(run_dir))
    assert len(records["ref"]) == ref.cases  # a case that was not started leaves no record
    options = load_run(run_dir).summary.options
    assert options is not None
    assert options.budget_minutes == pytest.approx(0.9 / 60)


def test_max_cases(dataset, tmp_path):
    run_dir = run_evaluation(dataset, _variants(), options=_options(tmp_path, max_cases=25))
    entries = {e.name: e.sequential for e in load_run(run_dir).summary.variants}
    assert entries["ref"] is not None
    assert entries["ref"].cases == 25
    assert entries["same"] is not None
    assert (entries["same"].settled, entries["same"].stopped) == (
        None,
        "cases",
    )


def test_cli_sequential_by_default_and_fixed_with_limit_or_all(dataset, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("quantgate.inputs.variants.resolve_variants", lambda specs: _variants())
    base = ["run", "--dataset", str(dataset.path), "--variants", "fake", "--no-report", "--no-token-fidelity",
            "--max-accuracy-drop", "0.2", "--max-slice-accuracy-drop", "1"]  # fmt: skip
    assert main([*base, "--out", str(tmp_path / "a")]) in (0, 4)
    (run_dir,) = (tmp_path / "a").iterdir()
    summary = load_run(run_dir).summary
    assert summary.options is not None
    assert summary.options.method == "sequential"
    assert summary.options.budget_minutes is None  # no default budget with --dataset
    out = capsys.readouterr().out
    assert "broken     fail" in out
    assert "dataset sixty (sequential: 60 of 60 cases)" in out
    assert main([*base, "--out", str(tmp_path / "b"), "--limit", "5"]) == 4  # 5 cases: inconclusive
    (fixed,) = (tmp_path / "b").iterdir()
    fixed_options = load_run(fixed).summary.options
    assert fixed_options is not None
    assert fixed_options.method == "bootstrap"
    assert main([*base, "--out", str(tmp_path / "c"), "--limit", "5", "--budget", "2"]) == 2
    assert "--max-cases and --budget bound a sequential run" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main([*base, "--limit", "5", "--all"])
    assert exited.value.code == 2
    with pytest.raises(SystemExit):
        main([*base, "--budget", "0"])
    assert "--budget: expected a positive number, got 0" in capsys.readouterr().err
