"""Few-shot examples taken from a dataset's own labeled cases when it has no examples.jsonl."""

import json

import pytest

from quantgate.cli._main import main
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._examples import choose_examples, spread
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import load_run, read_records
from tests.fakes import GOOD, SCHEMA, QueuedChatModel


def _write(root, cases, examples=None):
    root.mkdir()
    (root / "schema.json").write_text(json.dumps(SCHEMA))
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    if examples is not None:
        (root / "examples.jsonl").write_text("".join(json.dumps(e) + "\n" for e in examples))
    (root / "README.md").write_text("test set\n")
    return load_dataset(root)


def _case(i, lang, tag, expected=GOOD):
    return {
        "id": f"{lang}{i}",
        "text": f"case {lang} {i}",
        "expected": expected,
        "tags": [f"lang:{lang}", tag],
    }


@pytest.fixture
def no_examples(tmp_path):
    cases = [_case(i, "es", "numbers") for i in range(4)]
    cases += [_case(i, "en", "dates" if i % 2 else "lists") for i in range(4)]
    cases.insert(1, {**_case(9, "en", "lists"), "expected": None})  # unlabeled: never an example
    return _write(tmp_path / "mine", cases)


def test_examples_are_spread_across_languages_and_tags(no_examples):
    chosen = choose_examples(no_examples, 3)
    assert chosen.source == "cases"
    assert chosen.ids == ("es0", "es1", "en0")  # taken es0, en0, es1 (languages in turn); file order
    assert [e.id for e in chosen.dataset.examples] == ["es0", "es1", "en0"]
    scored = [c.id for c in chosen.dataset.cases]
    assert scored == ["en9", "es2", "es3", "en1", "en2", "en3"]  # the examples are not scored
    assert chosen.message is not None
    assert "es0, es1, en0" in chosen.message
    assert chosen.warning is None


def test_spread_takes_languages_in_turn_then_tag_groups(no_examples):
    labeled = [c for c in no_examples.cases if c.expected is not None]
    assert [c.id for c in spread(labeled, 4)] == ["es0", "es1", "en0", "en1"]  # en0 lists, en1 dates
    assert [c.id for c in spread(labeled[4:], 2)] == ["en0", "en1"]  # en's tag groups in turn
    assert [c.id for c in spread(labeled, 100)] == [c.id for c in labeled]


def test_examples_jsonl_is_used_as_it_is(tmp_path):
    dataset = _write(tmp_path / "d", [_case(0, "en", "x")], [{"id": "e1", "text": "ex", "expected": GOOD}])
    chosen = choose_examples(dataset, 3)
    assert (chosen.source, chosen.ids, chosen.dataset) == ("dataset", ("e1",), dataset)
    assert (chosen.message, chosen.warning) == (None, None)


def test_none_is_zero_shot_with_a_warning(tmp_path, no_examples):
    chosen = choose_examples(no_examples, 0)
    assert (chosen.source, chosen.ids, chosen.dataset.examples) == ("none", (), ())
    assert chosen.warning is not None
    assert "zero-shot" in chosen.warning
    with_file = _write(tmp_path / "d", [_case(0, "en", "x")], [{"id": "e1", "text": "ex", "expected": GOOD}])
    stripped = choose_examples(with_file, None)
    assert stripped.dataset.examples == ()
    assert stripped.warning is not None
    assert "--examples none" in stripped.warning


def test_too_few_labeled_cases_stay_zero_shot_and_say_why(tmp_path):
    dataset = _write(tmp_path / "d", [_case(0, "en", "x"), {**_case(1, "en", "x"), "expected": None}])
    chosen = choose_examples(dataset, 3)
    assert (chosen.source, len(chosen.dataset.cases)) == ("none", 2)
    assert chosen.warning is not None
    assert "only 1 labeled case(s)" in chosen.warning


def _variants():
    return VariantSet(variants=[Variant.from_chat_model("ref", QueuedChatModel(outputs=[json.dumps(GOOD)]))])


def test_the_run_records_the_examples_and_leaves_them_out_of_scoring(no_examples, tmp_path, capsys):
    run_dir = run_evaluation(
        no_examples, _variants(), options=RunOptions(out=tmp_path / "runs", progress=False)
    )
    summary = load_run(run_dir).summary
    assert summary.examples is not None
    assert (summary.examples.source, summary.examples.ids) == ("cases", ["es0", "es1", "en0"])
    assert summary.dataset.cases == 6
    assert sorted(r.case_id for r in read_records(run_dir)) == ["en1", "en2", "en3", "en9", "es2", "es3"]
    copy = load_dataset(run_dir / "dataset")  # production prompts with the run's copy
    assert [e.id for e in copy.examples] == ["es0", "es1", "en0"]
    assert "left out of scoring: es0, es1, en0" in capsys.readouterr().err


def test_the_cli_flag(no_examples, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("quantgate.inputs._shorthands.resolve_variants", lambda specs: _variants())
    out = tmp_path / "runs"
    base = ["run", "--dataset", str(no_examples.path), "--variants", "fake", "--out", str(out), "--no-report"]
    assert main([*base, "--examples", "none"]) == 4  # the only variant is the reference
    assert "warning: the prompt is zero-shot" in capsys.readouterr().err
    (run_dir,) = out.iterdir()
    summary = load_run(run_dir).summary
    assert summary.examples is not None
    assert summary.examples.source == "none"
    assert summary.dataset.cases == 9
    with pytest.raises(SystemExit) as exited:
        main([*base, "--examples", "-1"])
    assert exited.value.code == 2
    assert (
        "--examples: expected a number of examples (0 or more) or 'none', got -1" in capsys.readouterr().err
    )
