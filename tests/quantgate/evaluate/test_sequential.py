"""Sequential runs: rounds, early stopping once the accuracy gates are settled, budgets, and the
decision judging the same records with the same confidence sequences."""

import json

import pytest

from quantgate.analysis._report import write_report
from quantgate.cli._main import main
from quantgate.decide._recommendation import decide
from quantgate.evaluate._evaluation_run import RunOptions, resume_evaluation, run_evaluation
from quantgate.evaluate._resume import ResumeError
from quantgate.inputs._dataset import Case, load_dataset, write_dataset
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._files import SUMMARY_FILE
from quantgate.rundir._store import latest_records, load_run, read_decision, read_records
from tests.fakes import GOOD, SCHEMA, QueuedChatModel, SleepyChatModel

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
    # identical outputs: every difference 0; the confidence sequence's lower bound reaches -0.2
    # after 19 cases, so at the end of round 2
    assert same is not None
    assert (same.settled, same.paired_cases, same.stopped) == ("pass", 20, "settled")
    # every field wrong: differences of -1; the upper bound falls below -0.2 after 8 cases, so at
    # the end of round 1
    assert broken is not None
    assert (broken.settled, broken.paired_cases, broken.stopped) == ("fail", 10, "settled")
    # the reference runs only the cases some open candidate needs: both settled after 20
    assert ref is not None
    assert (ref.settled, ref.cases, ref.stopped) == (None, 20, "settled")
    records = latest_records(read_records(run_dir))
    assert {name: len(r) for name, r in records.items()} == {"ref": 20, "same": 20, "broken": 10}
    # rounds follow the run's order (languages in turn), and every variant runs a prefix of it
    order = [c.id for c in load_dataset(run_dir / "dataset").cases]
    assert sorted(records["same"], key=order.index) == order[:20]
    assert sorted(records["broken"], key=order.index) == order[:10]
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
    assert "over 10 cases: the whole confidence sequence lies below -20.0 pts" in accuracy["broken"].evidence
    assert (same.verdict, broken.verdict) == ("pass", "fail")
    assert same.sequential is not None
    assert same.sequential.paired_cases == 20
    assert decision.record.statistics.accuracy_delta_interval.startswith("anytime-valid confidence sequence")
    assert "after every round of 10 cases" in decision.record.statistics.accuracy_delta_interval


def test_a_round_starts_only_when_its_expected_time_fits_in_the_budget_left(dataset, tmp_path):
    fast = QueuedChatModel(outputs=[json.dumps(GOOD)])
    sleepy = VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", SleepyChatModel(delay_s=0.05), quantization="F16"),  # 0.2 s a case
            Variant.from_chat_model("same", fast, quantization="Q8_0"),
        ],
    )
    # the first round (10 cases, one at a time) takes the reference about 2 s; a second would not fit
    # in what is left of 3 s, so no second round starts, and both variants have the same 10 cases
    run_dir = run_evaluation(dataset, sleepy, options=_options(tmp_path, budget_s=3.0))
    summary = load_run(run_dir).summary
    entries = {e.name: e.sequential for e in summary.variants}
    ref, same = entries["ref"], entries["same"]
    assert ref is not None
    assert same is not None
    assert (ref.cases, ref.stopped) == (10, "budget")
    assert (same.cases, same.settled, same.stopped) == (10, None, "budget")  # 19 cases settle it at 0.2
    records = latest_records(read_records(run_dir))
    assert set(records["ref"]) == set(records["same"])
    assert summary.evaluation_s is not None
    assert 2.0 <= summary.evaluation_s < 3.0
    options = summary.options
    assert options is not None
    assert options.budget_minutes == pytest.approx(3.0 / 60)


def test_max_cases(dataset, tmp_path):
    gates = Gates(max_accuracy_drop=0.05, max_slice_accuracy_drop=None)  # zeros settle it after 80 cases
    options = RunOptions(
        out=tmp_path / "runs", progress=False, sequential=True, gates=gates, round_size=10, max_cases=25
    )
    run_dir = run_evaluation(dataset, _variants(), options=options)
    entries = {e.name: e.sequential for e in load_run(run_dir).summary.variants}
    assert entries["ref"] is not None
    assert entries["ref"].cases == 25
    assert entries["same"] is not None
    assert (entries["same"].settled, entries["same"].cases, entries["same"].stopped) == (None, 25, "cases")
    assert entries["broken"] is not None
    assert (entries["broken"].settled, entries["broken"].cases) == ("fail", 10)


def test_cli_sequential_by_default_and_fixed_with_limit_or_all(dataset, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("quantgate.inputs._shorthands.resolve_variants", lambda specs: _variants())
    base = ["run", "--dataset", str(dataset.path), "--variants", "fake", "--no-report", "--no-token-fidelity",
            "--max-accuracy-drop", "0.2", "--max-slice-accuracy-drop", "1"]  # fmt: skip
    status = main([*base, "--out", str(tmp_path / "a")])
    (run_dir,) = (tmp_path / "a").iterdir()
    decision = read_decision(run_dir)
    assert {name: v.verdict for name, v in decision.variants.items()} == {
        "ref": "pass", "same": "pass", "broken": "fail"
    }  # fmt: skip
    # ref and same both pass and tie on their footprints (the RSS growth of loading a fake, a few
    # KiB of noise), so which one is recommended is not fixed: the status must be that choice's.
    assert decision.recommended in ("ref", "same")
    assert status == (4 if decision.recommended == "ref" else 0)
    summary = load_run(run_dir).summary
    assert summary.options is not None
    assert summary.options.method == "sequential"
    assert summary.options.budget_minutes is None  # no default budget with --dataset
    out = capsys.readouterr().out
    assert "broken     fail" in out
    assert "dataset sixty (sequential: 24 of 60 cases)" in out  # both candidates settled by case 24
    assert main([*base, "--out", str(tmp_path / "b"), "--limit", "5"]) == 4  # 5 cases: inconclusive
    (fixed,) = (tmp_path / "b").iterdir()
    fixed_options = load_run(fixed).summary.options
    assert fixed_options is not None
    assert fixed_options.method == "fixed"
    assert main([*base, "--out", str(tmp_path / "c"), "--limit", "5", "--budget", "2"]) == 2
    assert "--max-cases and --budget bound a sequential run" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main([*base, "--limit", "5", "--all"])
    assert exited.value.code == 2
    with pytest.raises(SystemExit):
        main([*base, "--budget", "0"])
    assert "--budget: expected a positive number, got 0" in capsys.readouterr().err


@pytest.fixture
def long_dataset(tmp_path):
    """120 cases: more than the 80 identical ones that settle the 5-point gate."""
    root = tmp_path / "long"
    lines = [Case(id=f"c{i:03d}", text=f"case {i}", expected=GOOD, tags=("lang:en",)) for i in range(120)]
    write_dataset(root, schema=SCHEMA, cases=lines, examples=[Case(id="e1", text="example", expected=GOOD)])
    return load_dataset(root)


def _open_run(dataset, tmp_path, *, budget_s: float):
    """A sequential run whose budget ends after the first round: `same` is left open."""
    sleepy = VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model(
                "ref", SleepyChatModel(delay_s=0.02), quantization="F16"
            ),  # 0.08 s a case
            Variant.from_chat_model("same", SleepyChatModel(delay_s=0.02), quantization="Q8_0"),
        ],
    )
    gates = Gates(max_accuracy_drop=0.05, max_slice_accuracy_drop=None)
    options = RunOptions(
        out=tmp_path / "runs", progress=False, sequential=True, gates=gates, round_size=10, budget_s=budget_s
    )
    return run_evaluation(dataset, sleepy, options=options), sleepy, gates


def test_an_open_candidate_gets_a_forecast_and_goes_on_with_resume_budget(long_dataset, tmp_path):
    run_dir, variants, gates = _open_run(long_dataset, tmp_path, budget_s=2.0)
    summary = load_run(run_dir).summary
    same = summary.entry("same")
    assert same is not None
    assert same.sequential is not None
    assert (same.sequential.cases, same.sequential.settled, same.sequential.stopped) == (10, None, "budget")
    decision = decide(run_dir, gates)
    forecast = decision.variants["same"].open
    assert forecast is not None
    # identical outputs: every resample is zeros, which settle the 5-point gate after 80 cases
    assert (forecast.forecast.median_more, forecast.forecast.pass_share) == (70, 1.0)
    assert forecast.cases_left == 110
    assert forecast.seconds_per_case is not None
    assert forecast.reference_seconds_per_case is not None
    expected = 70 * (forecast.seconds_per_case + forecast.reference_seconds_per_case) / 60
    assert forecast.minutes == pytest.approx(expected)
    assert "about 70 more (80% of resamples: 70 to 70)" in forecast.message
    assert decision.variants["ref"].open is None
    assert "suggest about 70 more" in (run_dir / "decision.md").read_text()
    page = write_report(run_dir).read_text()
    assert "Still open" in page
    assert "its differences so far suggest about 70 more" in page

    with pytest.raises(ResumeError, match="give the minutes to go on with: --budget MINUTES"):
        resume_evaluation(run_dir, variant_set=variants, progress=False)
    # what the token-fidelity step wrote for a runtime pair is kept as it is, like the rest of it
    measured = json.loads((run_dir / SUMMARY_FILE).read_text())
    assert measured["variants"][1]["name"] == "same"
    measured["variants"][1] |= {"runtime_token_fidelity_base": "ref", "runtime_token_fidelity_missing": "why"}
    (run_dir / SUMMARY_FILE).write_text(json.dumps(measured))
    resume_evaluation(run_dir, variant_set=variants, budget_s=60.0, progress=False)
    summary = load_run(run_dir).summary
    same = summary.entry("same")
    assert same is not None
    assert (same.runtime_token_fidelity_base, same.runtime_token_fidelity_missing) == ("ref", "why")
    assert same.token_fidelity_missing is not None
    assert same.token_fidelity_missing.startswith("not measured")
    assert same.sequential is not None
    # the same sequence goes on: settled at the round end after 80 cases, the first 10 read back
    assert (same.sequential.settled, same.sequential.cases, same.resumed_cases) == ("pass", 80, 10)
    records = latest_records(read_records(run_dir))
    order = [c.id for c in load_dataset(run_dir / "dataset").cases]
    assert sorted(records["same"], key=order.index) == order[:80]
    assert sum(1 for r in read_records(run_dir) if r.variant == "same") == 80  # each case once
    assert summary.status == "complete"
    assert decide(run_dir, gates).variants["same"].verdict == "pass"


def test_the_command_line_prints_the_forecast_and_the_command_that_goes_on(long_dataset, tmp_path, capsys):
    run_dir, _, _ = _open_run(long_dataset, tmp_path, budget_s=2.0)
    assert (
        main(["decide", str(run_dir), "--max-accuracy-drop", "0.05", "--max-slice-accuracy-drop", "1"]) == 4
    )
    out = capsys.readouterr().out
    assert "open after 10 paired cases; its differences so far suggest about 70 more" in out
    assert (
        f"to go on with the open candidates on the same sequence: quantgate run --resume {run_dir} --budget"
        in out
    )


def test_a_run_whose_candidates_used_every_case_cannot_go_on(dataset, tmp_path):
    gates = Gates(max_accuracy_drop=0.05, max_slice_accuracy_drop=None)
    options = RunOptions(
        out=tmp_path / "runs", progress=False, sequential=True, gates=gates, round_size=10, max_cases=30
    )
    run_dir = run_evaluation(dataset, _variants(), options=options)
    decision = decide(run_dir, gates)
    forecast = decision.variants["same"].open
    assert forecast is not None
    assert forecast.cases_left == 0  # the run's cases: the dataset's first 30 (--max-cases)
    assert forecast.message.endswith("the dataset has 0 case(s) left: a decision needs a bigger dataset")
    with pytest.raises(
        ResumeError, match="used every case of its dataset: a decision needs a bigger dataset"
    ):
        resume_evaluation(run_dir, variant_set=_variants(), budget_s=60.0, progress=False)
