"""The suite's decision from hand-made task runs: a variant passes only if it passes every task,
and the passing variants rank by their largest footprint over the tasks."""

from __future__ import annotations

from pathlib import Path

from quantgate.inputs._gates import Gates
from quantgate.suite._suite_decision import decide_suite, incomplete_tasks
from quantgate.suite._suite_records import SuiteRun, SuiteRunSettings, SuiteTaskEntry, write_suite
from tests.quantgate.run_factory import make_run

RIGHT = {"a": 1.0, "b": 1.0}
CASES = 100
"""Enough identical cases for the default accuracy gates to pass (as in tests/quantgate/cli/test_cli.py)."""


def _suite(root: Path, tasks: list[str]) -> Path:
    entries = [SuiteTaskEntry(name=t, dataset=f"/data/{t}", kind="extraction", gates=Gates()) for t in tasks]
    plan = SuiteRun(
        run_id=root.name,
        suite_file="suite.toml",
        reference="R",
        variants=["R", "Q", "S", "T"],
        settings=SuiteRunSettings(),
        tasks=entries,
    )
    root.mkdir(parents=True)
    write_suite(root, plan)
    return root


def test_the_smallest_variant_passing_every_task_by_its_largest_footprint(tmp_path):
    suite_dir = _suite(tmp_path / "suite", ["a", "b"])
    scores = {name: [RIGHT] * CASES for name in ("R", "Q", "S", "T")}
    make_run(suite_dir / "tasks" / "a", scores, footprints={"R": 700.0, "Q": 100.0, "S": 300.0, "T": 200.0})
    make_run(
        suite_dir / "tasks" / "b",
        scores,
        footprints={"R": 700.0, "Q": 100.0, "S": 500.0, "T": 600.0},
        invalid={"Q": 20},  # 80% valid: Q fails task b's format validity (90%) and error rate (5%)
    )
    decision = decide_suite(suite_dir)
    q = decision.variants["Q"]
    assert (q.passes, q.failing_tasks) == (False, ["b"])
    assert q.tasks["a"].passes
    assert q.tasks["a"].verdict == "pass"
    assert q.tasks["b"].failed_gates == ["min_format_validity fail", "max_error_rate fail"]
    assert {n: v.footprint_mb for n, v in decision.variants.items()} == {
        "R": 700.0, "Q": 100.0, "S": 500.0, "T": 600.0
    }  # fmt: skip
    # T is smaller on task a alone (200 MiB), but S is smaller where both are largest (500 < 600)
    assert (decision.recommended, decision.outcome, decision.exit_status) == ("S", "candidate_passes", 0)
    assert decision.incomplete_tasks == []
    assert (suite_dir / "tasks" / "a" / "decision.json").is_file()  # each task decided as a run


def test_a_task_not_run_fails_every_variant_and_is_listed(tmp_path):
    suite_dir = _suite(tmp_path / "suite", ["a", "b"])
    scores = {name: [RIGHT] * CASES for name in ("R", "Q", "S", "T")}
    make_run(suite_dir / "tasks" / "a", scores, footprints={"R": 700.0, "Q": 100.0, "S": 300.0, "T": 200.0})
    assert incomplete_tasks(suite_dir) == ["b"]
    decision = decide_suite(suite_dir)
    assert decision.incomplete_tasks == ["b"]
    assert all(
        v.failing_tasks == ["b"] and v.tasks["b"].verdict == "not_run" for v in decision.variants.values()
    )
    assert (decision.recommended, decision.outcome, decision.exit_status) == (None, "none_passes", 3)
