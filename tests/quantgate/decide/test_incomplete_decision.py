"""decide() on a run directory that does not hold the whole run (it says so in decision.json and
at the top of decision.md), and decision.md's escaping of the run's data."""

from __future__ import annotations

import json
import re
from pathlib import Path

from quantgate.decide._recommendation import decide, load_decision
from quantgate.inputs._gates import Gates
from quantgate.render._markdown import escape_markdown
from quantgate.rundir._files import DATASET_DIR, DECISION_JSON, DECISION_MD, RECORDS_FILE, REGRESSIONS_DIR
from tests.quantgate.run_factory import make_run
from tests.quantgate.rundir.incomplete_runs import (
    HALF,
    RIGHT,
    RUNNING,
    complete_run,
    damage_line,
    running_with_a_missing_case,
)

GATES = Gates(min_cases=2, min_slice_cases=2)


def test_an_incomplete_run_is_decided_on_what_it_holds_and_says_so(tmp_path: Path) -> None:
    run_dir = running_with_a_missing_case(tmp_path / "run")
    decision = decide(run_dir, GATES)
    assert decision.run_complete is False
    assert decision.run_problems == [RUNNING, "variant Q has no record of 1 of its cases: c2"]
    assert decision.variants["Q"].measured is not None
    assert decision.variants["Q"].measured.cases == 2
    assert load_decision(run_dir) == decision
    head = (run_dir / DECISION_MD).read_text(encoding="utf-8").splitlines()[:6]
    assert head == [
        f"# Decision for run {run_dir.name}",
        "",
        "> **Incomplete run.** This decision is of what the run directory held, not of the whole run:",
        ">",
        f"> - {RUNNING}",
        "> - variant Q has no record of 1 of its cases: c2",
    ]


def test_a_complete_run_has_no_notice(tmp_path: Path) -> None:
    run_dir = complete_run(tmp_path / "run")
    decision = decide(run_dir, GATES)
    assert (decision.run_complete, decision.run_problems) == (True, [])
    assert "Incomplete run" not in (run_dir / DECISION_MD).read_text(encoding="utf-8")


def test_a_corrupt_record_is_named_in_the_decision_not_skipped_without_a_word(tmp_path: Path) -> None:
    run_dir = damage_line(complete_run(tmp_path / "run"), 5, '{"variant": "Q", "case_id": ')  # Q's c1
    decision = decide(run_dir, GATES)
    assert decision.run_problems == [
        "records.jsonl line 5: not JSON (Expecting value: line 1 column 29 (char 28))",
        "variant Q: records.jsonl holds 2 of the 3 cases summary.json counts for it",
    ]
    assert decision.variants["Q"].measured is not None
    assert decision.variants["Q"].measured.cases == 2
    text = (run_dir / DECISION_MD).read_text(encoding="utf-8")
    assert "> - records.jsonl line 5: not JSON (Expecting value: line 1 column 29 (char 28))" in text


def test_a_decision_of_format_version_2_is_still_read(tmp_path: Path) -> None:
    run_dir = complete_run(tmp_path / "run")
    decide(run_dir, GATES)
    path = run_dir / DECISION_JSON
    older = json.loads(path.read_text())
    del older["run_complete"], older["run_problems"]
    path.write_text(json.dumps({**older, "format_version": 2}))
    decision = load_decision(run_dir)  # read as the current format, 9, without the fields it lacked
    assert (decision.format_version, decision.run_complete, decision.run_problems) == (9, None, [])


# escaping


def test_escape_markdown_shows_hostile_text_as_text() -> None:
    assert escape_markdown("<script>|x") == "&lt;script&gt;\\|x"
    assert escape_markdown("a*b_c`d[e]f\\g") == "a\\*b\\_c\\`d\\[e\\]f\\\\g"
    assert escape_markdown("one\ntwo\r\nthree\rfour") == "one\\\\ntwo\\\\nthree\\\\nfour"
    assert escape_markdown("&lt;") == "&amp;lt;"  # an entity in the data shows as typed
    assert escape_markdown("lang:es 12,50 EUR") == "lang:es 12,50 EUR"
    assert escape_markdown(None) == "None"


HOSTILE_ID = "<script>|x"
HOSTILE_TAG = "*bold*_[x](javascript:alert(1))`y`"


def _hostile_run(tmp_path: Path) -> Path:
    """R right everywhere; Q loses `b` on the case whose id is `HOSTILE_ID`; every case is
    tagged `HOSTILE_TAG`."""
    run_dir = make_run(
        tmp_path / "run",
        {"R": [RIGHT] * 3, "Q": [RIGHT, HALF, RIGHT]},
        footprints={"R": 700.0, "Q": 400.0},
        tags=[("lang:en", HOSTILE_TAG)] * 3,
    )
    for path in (run_dir / RECORDS_FILE, run_dir / DATASET_DIR / "cases.jsonl"):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace('"c1"', json.dumps(HOSTILE_ID)), encoding="utf-8")
    return run_dir


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_decision_md_escapes_a_hostile_case_id_and_tag(tmp_path: Path) -> None:
    run_dir = _hostile_run(tmp_path)
    decision = decide(run_dir, GATES)
    assert [r.case_id for r in decision.variants["Q"].regressions] == [HOSTILE_ID]
    text = (run_dir / DECISION_MD).read_text(encoding="utf-8")
    assert "<script>" not in text
    assert "[x](javascript" not in text
    assert "  - &lt;script&gt;\\|x: b" in text.splitlines()  # the regression case
    tag = "\\*bold\\*\\_\\[x\\](javascript:alert(1))\\`y\\`"
    assert f"| slice {tag} | 3 |" in text  # the deltas table
    assert f"| max\\_slice\\_accuracy\\_drop\\[{tag}\\] |" in text  # the gates table
    tables = [[row for row in block.splitlines() if row.startswith("|")] for block in text.split("\n\n")]
    tables = [rows for rows in tables if rows]
    assert len(tables) >= 4
    for rows in tables:  # no cell breaks out: every row has as many cell borders as the header
        assert {_unescaped_pipes(row) for row in rows} == {_unescaped_pipes(rows[0])}
    card = (run_dir / REGRESSIONS_DIR / "Q" / "README.md").read_text(encoding="utf-8")
    assert "| &lt;script&gt;\\|x | b | 1.00 | 0.50 |" in card
    assert "<script>" not in card.split("---")[0]
