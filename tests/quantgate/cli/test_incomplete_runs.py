"""`decide`, `report` and `compare` on run directories that do not hold the whole run: each says
so at the top; `decide` exits 5 unless `--allow-incomplete`; none crashes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quantgate.cli._main import main
from quantgate.rundir._decision import EXIT_STATUS
from quantgate.rundir._files import DECISION_JSON, DECISION_MD, REPORT_DIR
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

MISSING_C2 = "variant Q has no record of 1 of its cases: c2"
Q_UNLISTED = (
    "records.jsonl has records of 2 case(s) of variant Q, which summary.json does not list: "
    "the run stopped while evaluating it"
)
Q_HOLDS_2 = "variant Q: records.jsonl holds 2 of the 3 cases summary.json counts for it"
TORN_CASES = 100  # Q keeps 99 identical to R's: enough to show its drop is under 5 points
TORN_LINE = (
    f"records.jsonl line {2 * TORN_CASES}: the last line is cut short (a write the run did not finish); "
    "not read"
)
Q_HOLDS_ALL_BUT_ONE = (
    f"variant Q: records.jsonl holds {TORN_CASES - 1} of the {TORN_CASES} cases summary.json counts for it"
)
REFUSED = (
    "quantgate: not deciding on an incomplete run (exit status 5); go on with: quantgate run --resume {run}; "
    "--allow-incomplete decides on what it holds"
)


def _interrupted_before_any_record(directory: Path) -> Path:
    """Ctrl-C during the reference's first case: status `interrupted`, no variant, no record."""
    every = {(v, f"c{i}") for v in ("R", "Q") for i in range(3)}
    return rewrite(complete_run(directory), status="interrupted", listed=(), drop=every)


def test_the_incomplete_run_status_is_5() -> None:
    assert EXIT_STATUS["incomplete_run"] == 5
    assert len(set(EXIT_STATUS.values())) == len(EXIT_STATUS)  # distinct from every outcome's


def test_decide_refuses_a_running_run_with_a_missing_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = running_with_a_missing_case(tmp_path / "run")
    assert main(["decide", str(run_dir)]) == 5
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"quantgate: error: {run_dir}: incomplete run:",
        f"  - {RUNNING}",
        f"  - {MISSING_C2}",
        REFUSED.format(run=run_dir),
    ]
    assert captured.out == ""
    assert not (run_dir / DECISION_JSON).exists()


def test_decide_allow_incomplete_decides_with_the_notice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = running_with_a_missing_case(tmp_path / "run")
    assert main(["decide", str(run_dir), "--allow-incomplete"]) == 4  # 2 paired cases: keep the reference
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"quantgate: warning: {run_dir}: incomplete run:",
        f"  - {RUNNING}",
        f"  - {MISSING_C2}",
    ]
    assert (
        "decision: keep the reference R: no quantized variant is shown safe (exit status 4)" in captured.out
    )
    decision = json.loads((run_dir / DECISION_JSON).read_text())
    assert (decision["run_complete"], decision["run_problems"]) == (False, [RUNNING, MISSING_C2])
    head = (run_dir / DECISION_MD).read_text(encoding="utf-8").splitlines()[2:6]
    assert head == [
        "> **Incomplete run.** This decision is of what the run directory held, not of the whole run:",
        ">",
        f"> - {RUNNING}",
        f"> - {MISSING_C2}",
    ]


def test_decide_refuses_a_run_killed_while_a_variant_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It used to print "decision: R" with exit status 0, not a word of the variant it lost."""
    run_dir = killed_while_q_ran(tmp_path / "run")
    assert main(["decide", str(run_dir)]) == 5
    assert capsys.readouterr().err.splitlines()[1:3] == [f"  - {RUNNING}", f"  - {Q_UNLISTED}"]


def test_decide_names_a_corrupt_middle_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = damage_line(complete_run(tmp_path / "run"), 2, "{broken")
    assert main(["decide", str(run_dir)]) == 5
    assert capsys.readouterr().err.splitlines()[1:3] == [
        "  - records.jsonl line 2: not JSON (Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1))",
        "  - variant R: records.jsonl holds 2 of the 3 cases summary.json counts for it",
    ]


def test_decide_tolerates_a_torn_last_line_and_reports_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tear_last_line(complete_run(tmp_path / "run", cases=TORN_CASES))
    assert main(["decide", str(run_dir)]) == 5
    assert capsys.readouterr().err.splitlines()[1:3] == [f"  - {TORN_LINE}", f"  - {Q_HOLDS_ALL_BUT_ONE}"]
    # on the cases it holds Q passes: the decision says what it was made on
    assert main(["decide", str(run_dir), "--allow-incomplete"]) == 0
    decision = json.loads((run_dir / DECISION_JSON).read_text())
    assert (decision["recommended"], decision["run_problems"]) == ("Q", [TORN_LINE, Q_HOLDS_ALL_BUT_ONE])
    assert decision["variants"]["Q"]["measured"]["cases"] == TORN_CASES - 1


def test_decide_on_a_complete_run_says_nothing_of_completeness(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = complete_run(tmp_path / "run")
    assert main(["decide", str(run_dir)]) == 4
    assert capsys.readouterr().err == ""
    assert json.loads((run_dir / DECISION_JSON).read_text())["run_complete"] is True


def test_report_on_a_run_interrupted_before_any_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It used to crash with KeyError: "None of ['variant'] are in the columns"."""
    run_dir = _interrupted_before_any_record(tmp_path / "run")
    assert main(["report", str(run_dir)]) == 0
    captured = capsys.readouterr()
    page = run_dir / REPORT_DIR / "report.html"
    assert captured.out.strip() == str(page)
    assert captured.err.splitlines() == [
        f"quantgate: warning: {run_dir}: incomplete run:",
        f"  - {INTERRUPTED}",
    ]
    html = page.read_text(encoding="utf-8")
    assert '<div class="incomplete" id="incomplete" role="alert">' in html
    assert "<li>summary.json says the run was &#34;interrupted&#34; before it finished</li>" in html


def test_report_on_a_killed_run_lists_what_it_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = killed_while_q_ran(tmp_path / "run")
    assert main(["report", str(run_dir)]) == 0
    html = (run_dir / REPORT_DIR / "report.html").read_text(encoding="utf-8")
    notice = html[
        html.index('<div class="incomplete"') : html.index("</div>", html.index('<div class="incomplete"'))
    ]
    assert notice.count("<li>") == 2
    assert "records.jsonl has records of 2 case(s) of variant Q, which summary.json does not list" in notice
    assert html.index('id="incomplete"') < html.index('id="decision"')  # at the top


def test_report_on_a_complete_run_has_no_notice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = complete_run(tmp_path / "run")
    assert main(["report", str(run_dir)]) == 0
    assert capsys.readouterr().err == ""
    assert 'class="incomplete"' not in (run_dir / REPORT_DIR / "report.html").read_text(encoding="utf-8")


def test_compare_says_which_run_is_incomplete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before, after = complete_run(tmp_path / "a"), killed_while_q_ran(tmp_path / "b")
    assert main(["compare", str(before), str(after)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:4] == [
        "warning: run B is incomplete; it is compared on what it holds:",
        f"  - {RUNNING}",
        f"  - {Q_UNLISTED}",
    ]
    assert main(["compare", str(before), str(after), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["incomplete"] == {"a": [], "b": [RUNNING, Q_UNLISTED]}
    assert captured.err.splitlines() == [
        f"quantgate: warning: {after}: incomplete run:",
        f"  - {RUNNING}",
        f"  - {Q_UNLISTED}",
    ]


def test_compare_with_a_run_without_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before, after = complete_run(tmp_path / "a"), _interrupted_before_any_record(tmp_path / "b")
    assert main(["compare", str(before), str(after), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["incomplete"] == {"a": [], "b": [INTERRUPTED]}
    assert (result["variants"], result["only_in_a"], result["only_in_b"]) == ({}, ["R", "Q"], [])


def test_run_exits_5_when_its_directory_does_not_hold_the_whole_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose records lose a case after it wrote them (a damaged disk, another program):
    decided and reported, but its status says the run is incomplete, not the decision's 0 or 4."""
    import quantgate.evaluate._evaluation_run as evaluate_run

    damaged = rewrite(complete_run(tmp_path / "run"), drop={("Q", "c2")})
    monkeypatch.setattr(evaluate_run, "run_evaluation", lambda *args, **kwargs: damaged)
    assert (
        main(["run", "--dataset", "tech-config", "--limit", "1", "--variants", "ollama:x", "--no-report"])
        == 5
    )
    err = capsys.readouterr().err
    assert f"quantgate: warning: {damaged}: incomplete run:" in err
    assert Q_HOLDS_2 in err
    assert (damaged / "decision.json").is_file()
