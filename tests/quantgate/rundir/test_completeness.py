"""Whether a run directory holds the whole run: the summary's per-variant `complete` and
`missing_cases`, the lines of records.jsonl that cannot be read (by line number), and
`run_completeness`, which decide, report and compare ask."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evaluators.memory import MemorySummary
from graphs.evaluation import outcomes_summary
from quantgate.evaluate._evaluation_run import RunOptions, run_evaluation
from quantgate.inputs._dataset import Case, Dataset, load_dataset, write_dataset
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.rundir._build import missing_cases, skipped_entry, variant_entry
from quantgate.rundir._completeness import SHOWN_CASES, Completeness, completeness_of, run_completeness
from quantgate.rundir._files import RECORDS_FILE, SUMMARY_FILE
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._store import (
    LineProblem,
    RunFileError,
    load_run,
    read_lines,
    read_records,
    read_summary,
)
from quantgate.rundir._summary import DatasetInfo, RunSummary, VariantEntry
from tests.fakes import GOOD, SCHEMA, QueuedChatModel
from tests.quantgate.rundir.incomplete_runs import (
    INTERRUPTED,
    RUNNING,
    complete_run,
    damage_line,
    killed_while_q_ran,
    rewrite,
    running_with_a_missing_case,
    tear_last_line,
)

TORN = "the last line is cut short (a write the run did not finish); not read"


def _record(case_id: str, variant: str = "R") -> CaseRecord:
    return CaseRecord(variant=variant, case_id=case_id, fields={"a": 1.0})


# the builders


def test_a_variant_entry_names_the_cases_it_has_no_record_of_in_run_order() -> None:
    variant = Variant(name="Q", backend="test")
    summary = outcomes_summary([], against_reference=False, memory=MemorySummary())
    entry = variant_entry(
        variant,
        summary,
        {},
        is_reference=False,
        quantization=None,
        cases=["c0", "c1", "c2", "c3"],
        recorded=["c2", "c0"],
    )
    assert (entry.complete, entry.missing_cases) == (False, ["c1", "c3"])
    whole = variant_entry(
        variant, summary, {}, is_reference=False, quantization=None, cases=["c0"], recorded=["c0"]
    )
    assert (whole.complete, whole.missing_cases) == (True, [])


def test_a_variant_a_sequential_rule_stopped_lacks_no_case() -> None:
    """Settled after a round, or out of budget: the cases after it were not due."""
    assert missing_cases(["c0", "c1", "c2"], ["c0"], stopped="settled: fail after 1 paired cases") == []
    assert missing_cases(["c0", "c1", "c2"], ["c0"], stopped=None) == ["c1", "c2"]


def test_a_skipped_variant_is_not_complete_and_lacks_all_its_cases() -> None:
    entry = skipped_entry(
        Variant(name="Q", backend="test"), "no file", is_reference=False, cases=["c0", "c1"]
    )
    assert (entry.status, entry.complete, entry.missing_cases) == ("skipped", False, ["c0", "c1"])


def _tiny_dataset(root: Path) -> Dataset:
    cases = [Case(id=f"c{i}", text=f"case {i}", expected=GOOD, tags=("lang:en",)) for i in range(4)]
    write_dataset(root, schema=SCHEMA, cases=cases, examples=[Case(id="e1", text="example", expected=GOOD)])
    return load_dataset(root)


def _variants(quant: QueuedChatModel) -> VariantSet:
    reference = QueuedChatModel(outputs=[json.dumps(GOOD)])
    return VariantSet(
        reference="ref",
        variants=[Variant.from_chat_model("ref", reference), Variant.from_chat_model("quant", quant)],
    )


def test_a_finished_run_says_every_variant_is_complete(tmp_path: Path) -> None:
    quant = QueuedChatModel(outputs=[json.dumps(GOOD)])
    options = RunOptions(out=tmp_path / "runs", progress=False)
    run_dir = run_evaluation(_tiny_dataset(tmp_path / "tiny"), _variants(quant), options=options)
    summary = load_run(run_dir).summary
    assert summary.format_version == 15
    assert [(e.name, e.complete, e.missing_cases, e.cases) for e in summary.variants] == [
        ("ref", True, [], 4),
        ("quant", True, [], 4),
    ]
    assert run_completeness(run_dir) == Completeness()


def test_a_sequential_variant_that_settled_early_lacks_no_case(tmp_path: Path) -> None:
    """Failed after 4 of the 48 cases (one round of 4: a blank answer flips every field, and the flip
    gate's lower bound is above 25% at once): the other 44 were not due, for it or for the reference,
    which runs only the cases an open candidate needs."""
    cases = [Case(id=f"c{i}", text=f"case {i}", expected=GOOD, tags=("lang:en",)) for i in range(48)]
    write_dataset(
        tmp_path / "d", schema=SCHEMA, cases=cases, examples=[Case(id="e1", text="e", expected=GOOD)]
    )
    blank = QueuedChatModel(outputs=[json.dumps(dict.fromkeys(GOOD))])
    options = RunOptions(
        out=tmp_path / "runs",
        progress=False,
        sequential=True,
        round_size=4,
        max_repairs=0,
        token_fidelity=False,
    )
    run_dir = run_evaluation(load_dataset(tmp_path / "d"), _variants(blank), options=options)
    entries = {e.name: e for e in load_run(run_dir).summary.variants}
    quant = entries["quant"]
    assert quant.sequential is not None
    assert (quant.sequential.stopped, quant.sequential.settled, quant.cases) == ("settled", "fail", 4)
    assert (quant.complete, quant.missing_cases) == (True, [])
    assert (entries["ref"].complete, entries["ref"].cases, entries["ref"].missing_cases) == (True, 4, [])
    assert run_completeness(run_dir).complete


def test_an_interrupt_while_a_variant_runs_leaves_a_run_readers_call_incomplete(tmp_path: Path) -> None:
    quant = QueuedChatModel(outputs=[json.dumps(GOOD)], by_text={"case 2": KeyboardInterrupt()})
    options = RunOptions(out=tmp_path / "runs", progress=False)
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(_tiny_dataset(tmp_path / "tiny"), _variants(quant), options=options)
    (run_dir,) = (tmp_path / "runs").iterdir()
    held = Counter(r.variant for r in read_records(run_dir))
    assert read_summary(run_dir).variants == []  # in rounds, no variant got its entry yet
    assert run_completeness(run_dir).problems == (
        INTERRUPTED,
        *(
            f"records.jsonl has records of {held[name]} case(s) of variant {name}, which summary.json does "
            "not list: the run stopped while evaluating it"
            for name in ("ref", "quant")
        ),
    )


# the line readers


def test_a_corrupt_middle_line_is_reported_by_its_number_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / RECORDS_FILE
    path.write_text(
        _record("c0").model_dump_json()
        + "\n"
        + '{"variant": "R", "case_'
        + "\n"
        + _record("c2").model_dump_json()
        + "\n"
    )
    problems: list[LineProblem] = []
    assert [r.case_id for r in read_lines(path, CaseRecord, problems=problems)] == ["c0", "c2"]
    assert [str(p) for p in problems] == [
        "records.jsonl line 2: not JSON (Unterminated string starting at: line 1 column 18 (char 17))"
    ]
    assert (problems[0].line, problems[0].torn) == (2, False)
    with pytest.raises(RunFileError, match=r"records\.jsonl:2: not JSON"):  # without a sink: refused
        list(read_lines(path, CaseRecord))


def test_a_middle_line_that_is_not_a_record_is_reported_with_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / RECORDS_FILE
    path.write_text(
        _record("c0").model_dump_json() + "\n" + '{"variant": "R"}\n' + _record("c2").model_dump_json() + "\n"
    )
    problems: list[LineProblem] = []
    assert [r.case_id for r in read_lines(path, CaseRecord, problems=problems)] == ["c0", "c2"]
    assert [str(p) for p in problems] == [
        "records.jsonl line 2: does not match CaseRecord: case_id: Field required"
    ]


def test_a_torn_last_line_is_tolerated_and_reported(tmp_path: Path) -> None:
    path = tmp_path / RECORDS_FILE
    path.write_text(_record("c0").model_dump_json() + "\n" + _record("c1").model_dump_json()[:40])
    problems: list[LineProblem] = []
    assert [r.case_id for r in read_lines(path, CaseRecord, problems=problems)] == ["c0"]
    assert problems == [LineProblem(file=RECORDS_FILE, line=2, problem=TORN, torn=True)]
    assert [r.case_id for r in read_lines(path, CaseRecord)] == ["c0"]  # without a sink: skipped, as before


def test_a_last_line_cut_inside_a_character_is_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / RECORDS_FILE
    cut = _record("c1").model_dump_json()[:-2].replace("c1", "ñ").encode()[:-1]  # half of "ñ"'s two bytes
    path.write_bytes(_record("c0").model_dump_json().encode() + b"\n" + cut)
    problems: list[LineProblem] = []
    assert [r.case_id for r in read_lines(path, CaseRecord, problems=problems)] == ["c0"]
    assert [(p.line, p.torn) for p in problems] == [(2, True)]


# run_completeness


def test_a_complete_run_has_no_problem(tmp_path: Path) -> None:
    completeness = run_completeness(complete_run(tmp_path / "run"))
    assert completeness.complete
    assert completeness.problems == ()
    assert completeness.notice() == ""


def test_a_run_still_running_with_a_missing_case(tmp_path: Path) -> None:
    completeness = run_completeness(running_with_a_missing_case(tmp_path / "run"))
    assert not completeness.complete
    assert completeness.problems == (RUNNING, "variant Q has no record of 1 of its cases: c2")
    assert completeness.notice() == (
        f"incomplete run:\n  - {RUNNING}\n  - variant Q has no record of 1 of its cases: c2"
    )


def test_a_run_killed_while_a_variant_ran(tmp_path: Path) -> None:
    assert run_completeness(killed_while_q_ran(tmp_path / "run")).problems == (
        RUNNING,
        "records.jsonl has records of 2 case(s) of variant Q, which summary.json does not list: "
        "the run stopped while evaluating it",
    )


def test_a_corrupt_middle_record_makes_the_run_incomplete(tmp_path: Path) -> None:
    run_dir = damage_line(complete_run(tmp_path / "run"), 2, "not a record at all")  # R's c1
    assert run_completeness(run_dir).problems == (
        "records.jsonl line 2: not JSON (Expecting value: line 1 column 1 (char 0))",
        "variant R: records.jsonl holds 2 of the 3 cases summary.json counts for it",
    )


def test_a_torn_last_record_makes_the_run_incomplete(tmp_path: Path) -> None:
    run_dir = tear_last_line(complete_run(tmp_path / "run"))  # Q's c2
    assert run_completeness(run_dir).problems == (
        f"records.jsonl line 6: {TORN}",
        "variant Q: records.jsonl holds 2 of the 3 cases summary.json counts for it",
    )


def test_a_long_list_of_missing_cases_is_cut_short(tmp_path: Path) -> None:
    lacking = [f"c{i}" for i in range(SHOWN_CASES + 3)]
    run_dir = rewrite(complete_run(tmp_path / "run", cases=SHOWN_CASES + 4), missing={"Q": lacking})
    (problem,) = run_completeness(run_dir).problems
    shown = ", ".join(lacking[:SHOWN_CASES])
    assert problem == f"variant Q has no record of {SHOWN_CASES + 3} of its cases: {shown} and 3 more"


def test_a_skipped_variant_does_not_make_a_run_incomplete() -> None:
    summary = RunSummary(
        run_id="r",
        quantgate_version="test",
        status="complete",
        dataset=DatasetInfo(name="d", path="d", sha256="x", cases=1),
        variants=[
            VariantEntry(name="R", backend="test", complete=True, cases=1),
            VariantEntry(name="Q", backend="test", status="skipped", complete=False, missing_cases=["c0"]),
        ],
    )
    assert completeness_of(summary, {"R": {"c0": _record("c0")}}).problems == ()


def test_a_summary_of_format_1_is_read_and_judged_on_what_it_records(tmp_path: Path) -> None:
    """Old run directories stay readable: no `complete` or `missing_cases`, so only the status
    and the records are checked."""
    run_dir = complete_run(tmp_path / "run")
    summary = json.loads((run_dir / SUMMARY_FILE).read_text())
    summary["format_version"] = 1
    for entry in summary["variants"]:
        del entry["complete"], entry["missing_cases"]
    (run_dir / SUMMARY_FILE).write_text(json.dumps(summary))
    read = read_summary(run_dir)
    assert read.format_version == 15  # read as the current version: its keys are a subset
    assert [(e.complete, e.missing_cases) for e in read.variants] == [(None, []), (None, [])]
    assert run_completeness(run_dir).complete
    summary["status"] = "running"
    (run_dir / SUMMARY_FILE).write_text(json.dumps(summary))
    assert run_completeness(run_dir).problems == (RUNNING,)


def test_an_empty_run_gives_a_frame_with_the_record_columns(tmp_path: Path) -> None:
    run_dir = rewrite(complete_run(tmp_path / "run"), status="interrupted", listed=(), drop={
        (v, f"c{i}") for v in ("R", "Q") for i in range(3)
    })  # fmt: skip
    frame = load_run(run_dir).to_frame()
    assert frame.empty
    assert {"variant", "case_id", "field_accuracy"} <= set(frame.columns)
    assert frame[frame["variant"] == "Q"].empty  # the docs' example works on it
