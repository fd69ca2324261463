"""A user's string never reaches the terminal with its control characters (ESC, BEL, CR, ...) raw."""

from __future__ import annotations

import json

from quantgate.cli._common import report_decision
from quantgate.cli._main import EXIT_USAGE, main
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import load_dataset
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import Variant, VariantSet
from tests.fakes import GOOD, SCHEMA, QueuedChatModel
from tests.quantgate.run_factory import make_run

HOSTILE = "\x1b[2J\x1b]0;owned\x07"
SHOWN = "\\x1b[2J\\x1b]0;owned\\x07"


def test_an_error_printed_by_main_is_escaped(tmp_path, capsys):
    gates = tmp_path / f"gates{HOSTILE}.toml"
    assert main(["decide", str(tmp_path), "--gates", str(gates)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"gates{SHOWN}.toml: no such gates file" in err
    assert "\x1b" not in err


def test_datasets_check_escapes_paths_and_problems(tmp_path, capsys):
    root = tmp_path / f"set{HOSTILE}"
    root.mkdir()
    (root / "schema.json").write_text(json.dumps({"type": "object", "properties": {"a": {"type": "string"}}}))
    (root / "cases.jsonl").write_text(json.dumps({"id": f"c{HOSTILE}", "text": "t", "expected": {"a": 1}}))
    assert main(["datasets", "check", str(root)]) == 1
    out, err = capsys.readouterr()
    assert f"FAIL {tmp_path}/set{SHOWN}: 1 error(s)" in out
    assert "\x1b" not in out + err
    assert "\x07" not in out + err


def test_the_decision_lines_are_escaped(tmp_path, capsys):
    run_dir = make_run(tmp_path / f"run{HOSTILE}", {"R": [{"a": 1.0, "b": 1.0}] * 4}, footprints={"R": 1.0})
    report_decision(run_dir, Gates(min_cases=1, min_slice_cases=1))
    out = capsys.readouterr().out
    assert f"decision record: {tmp_path}/run{SHOWN}/decision.md" in out
    assert "\x1b" not in out


def test_the_few_shot_line_of_a_run_is_escaped(tmp_path, capsys):
    """A dataset without examples.jsonl: the line naming the cases taken as examples printed their ids raw."""
    root = tmp_path / "set"
    root.mkdir()
    (root / "schema.json").write_text(json.dumps(SCHEMA))
    cases = [{"id": f"c{i}{HOSTILE}", "text": f"case {i}", "expected": GOOD} for i in range(5)]
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (root / "README.md").write_text("set\n")
    variants = VariantSet(
        variants=[Variant.from_chat_model("ref", QueuedChatModel(outputs=[json.dumps(GOOD)]))]
    )
    run_evaluation(load_dataset(root), variants, options=RunOptions(out=tmp_path / "runs", progress=False))
    err = capsys.readouterr().err
    assert f"left out of scoring: c0{SHOWN}, " in err
    assert "\x1b" not in err
    assert "\x07" not in err
