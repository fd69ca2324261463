"""The flip gate in a run: a variant that changes every answer of a weak reference (and so loses no
accuracy) is settled as failed by the sequential run, and `decide`, summary.json, decision.md and the
report show its flips beside the accuracy delta."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluators.comparison import PairedCase
from quantgate.analysis._report import write_report
from quantgate.decide._recommendation import decide
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.evaluate.scheduler._stopping_rule import settling_gates_status
from quantgate.inputs._dataset import Dataset, load_dataset
from quantgate.inputs._gates import Gates
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._store import load_run
from tests.fakes import GOOD, SCHEMA, QueuedChatModel

WRONG = {"vendor": "Nobody", "total": 99.0, "issued": "1999-01-01", "currency": "USD"}
OTHER_WRONG = {"vendor": "Someone", "total": 98.0, "issued": "1998-01-01", "currency": None}
GATES = Gates(max_accuracy_drop=0.2, max_slice_accuracy_drop=None, max_flip_share=0.25)


@pytest.fixture
def dataset(tmp_path: Path) -> Dataset:
    root = tmp_path / "forty"
    root.mkdir()
    (root / "schema.json").write_text(json.dumps(SCHEMA))
    lines = [
        {"id": f"c{i:02d}", "text": f"case {i}", "expected": GOOD, "tags": ["lang:en"]} for i in range(40)
    ]
    (root / "cases.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (root / "README.md").write_text("forty cases\n")
    return load_dataset(root)


def _variants() -> VariantSet:
    def model(record: dict[str, object]) -> QueuedChatModel:
        return QueuedChatModel(outputs=[json.dumps(record)])

    return VariantSet(
        reference="ref",
        variants=[
            Variant.from_chat_model("ref", model(WRONG), quantization="F16"),  # every field wrong
            Variant.from_chat_model("same", model(WRONG), quantization="Q8_0"),
            Variant.from_chat_model("changes", model(OTHER_WRONG), quantization="Q2_K"),
        ],
    )


def test_the_run_fails_a_variant_that_changes_every_answer_of_a_weak_reference(dataset, tmp_path):
    options = RunOptions(out=tmp_path / "runs", progress=False, sequential=True, gates=GATES, round_size=10)
    run_dir = run_evaluation(dataset, _variants(), options=options)
    entries = {e.name: e for e in load_run(run_dir).summary.variants}
    same, changes = entries["same"], entries["changes"]
    assert same.sequential is not None
    assert changes.sequential is not None
    assert (same.sequential.settled, changes.sequential.settled) == ("pass", "fail")
    assert changes.sequential.paired_cases == 10  # its flip share's lower bound passed 25% in round 1
    assert changes.field_accuracy_delta == 0.0  # no accuracy lost: the accuracy gate alone would pass it
    assert changes.flips is not None
    assert same.flips is not None
    assert changes.flips.flipped.share == 1.0
    assert changes.flips.wrong_to_wrong.share == 1.0
    assert same.flips.flipped.share == 0.0
    assert entries["ref"].flips is None

    decision = decide(run_dir, GATES)
    gate = {name: {g.gate: g for g in v.gates} for name, v in decision.variants.items()}
    assert gate["changes"]["max_accuracy_drop"].status == "inconclusive"  # 10 cases do not pass it
    assert gate["changes"]["max_flip_share"].status == "fail"
    assert "100.0% of fields flipped over 10 cases" in gate["changes"]["max_flip_share"].evidence
    assert (
        "noise floor (the reference against itself): not measured"
        in gate["changes"]["max_flip_share"].evidence
    )
    assert gate["same"]["max_flip_share"].status == "pass"
    assert gate["ref"]["max_flip_share"].status == "pass"
    assert decision.variants["changes"].verdict == "fail"
    markdown = (run_dir / "decision.md").read_text()
    assert "## Flips" in markdown
    assert "| changes | 10 | +0.0 |" in markdown
    assert "not measured |" in markdown
    html = write_report(run_dir).read_text()
    assert 'id="flips"' in html
    assert "wrong→other wrong" in html


def _paired(flipped: bool, n: int) -> list[PairedCase]:
    return [
        PairedCase(
            case_id=f"c{i}",
            reference={"a": 0.0},
            variant={"a": 0.0},
            agreement={"a": 0.0 if flipped else 1.0},
        )
        for i in range(n)
    ]


def test_the_stopping_rule_needs_both_gates_to_pass_and_either_to_fail():
    accuracy_only = Gates(max_accuracy_drop=0.2, max_slice_accuracy_drop=None, max_flip_share=None)
    assert settling_gates_status(_paired(True, 40), accuracy_only, truncation=0.9) == "pass"
    assert settling_gates_status(_paired(True, 40), GATES, truncation=0.9) == "fail"
    assert settling_gates_status(_paired(False, 40), GATES, truncation=0.9) == "pass"
    assert settling_gates_status(_paired(False, 3), GATES, truncation=0.9) == "undecided"
    flips_only = Gates(max_accuracy_drop=None, max_slice_accuracy_drop=None, max_flip_share=0.25)
    assert settling_gates_status(_paired(True, 40), flips_only, truncation=0.9) == "fail"
    neither = Gates(max_accuracy_drop=None, max_slice_accuracy_drop=None, max_flip_share=None)
    assert settling_gates_status(_paired(True, 40), neither, truncation=0.9) == "undecided"
