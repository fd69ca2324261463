"""`--junit FILE` and `--mlflow [TRACKING_URI]` on `decide` (and `run`, which shares them): the files
written after the decision, and a path that cannot be written refused before any work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml

from quantgate.backends import BackendCapabilities, OpenedVariant
from quantgate.cli.main import main
from quantgate.rundir.files import DECISION_JSON
from tests.fakes import GOOD, QueuedChatModel, write_tiny_dataset
from tests.quantgate.export.decided import HALF, RIGHT, decided_run
from tests.quantgate.run_factory import make_run


def _undecided(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run", {"R": [RIGHT] * 12, "Q": [HALF] * 12}, footprints={"R": 10, "Q": 5})


def test_decide_writes_the_junit_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = decided_run(tmp_path / "run")
    out = tmp_path / "quantgate.xml"
    assert main(["decide", str(run), "--junit", str(out)]) == 4  # keep the reference, as decided
    (suite,) = list(JUnitXml.fromfile(str(out)))
    assert (suite.tests, suite.failures, suite.skipped) == (16, 6, 3)
    assert f"JUnit XML: {out}" in capsys.readouterr().out


@pytest.mark.parametrize("where", ["directory", "missing parent"])
def test_a_junit_path_that_cannot_be_written_is_refused_before_deciding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    run = _undecided(tmp_path)
    target = tmp_path if where == "directory" else tmp_path / "nope" / "quantgate.xml"
    assert main(["decide", str(run), "--junit", str(target)]) == 2
    err = capsys.readouterr().err
    assert ("is a directory" if where == "directory" else "does not exist") in err
    assert not (run / DECISION_JSON).exists()  # refused before the decision was made


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_junit_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _undecided(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        assert main(["decide", str(run), "--junit", str(locked / "quantgate.xml")]) == 2
    finally:
        locked.chmod(0o700)
    assert "is not writable" in capsys.readouterr().err


def test_decide_logs_to_mlflow_at_the_environments_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tracking = pytest.importorskip("mlflow.tracking")
    store = (tmp_path / "store").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    run = decided_run(tmp_path / "run")
    assert main(["decide", str(run), "--mlflow"]) == 4
    client = tracking.MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name("quantgate-synthetic")
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.run_name for r in runs) == ["B", "Q", "R", "run"]


def test_the_cli_does_not_import_mlflow_at_start_up() -> None:
    code = (
        "import sys; from quantgate.cli.main import build_parser; build_parser(); "
        "print('mlflow' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_a_suite_gives_one_test_suite_per_task(tmp_path: Path) -> None:
    from quantgate.inputs.gates import Gates
    from quantgate.rundir.suite_files import SuiteRun, SuiteRunSettings, SuiteTaskEntry, write_suite

    suite_dir = tmp_path / "suite"
    suite_dir.mkdir()
    tasks = [SuiteTaskEntry(name=t, dataset=f"/data/{t}", kind="extraction", gates=Gates()) for t in "ab"]
    plan = SuiteRun(
        run_id="suite",
        suite_file="suite.toml",
        reference="R",
        variants=["R", "Q"],
        settings=SuiteRunSettings(),
        tasks=tasks,
    )
    write_suite(suite_dir, plan)
    for task, invalid in (("a", 0), ("b", 20)):
        scores = {name: [RIGHT] * 100 for name in ("R", "Q")}
        make_run(suite_dir / "tasks" / task, scores, footprints={"R": 700, "Q": 100}, invalid={"Q": invalid})
    out = tmp_path / "suite.xml"
    assert main(["decide", str(suite_dir), "--junit", str(out)]) == 4  # Q fails task b: keep R
    suites = {s.name: s for s in JUnitXml.fromfile(str(out))}
    assert set(suites) == {"quantgate a", "quantgate b"}
    assert (suites["quantgate a"].failures, suites["quantgate b"].failures) == (0, 2)  # validity, errors
    task_property = {p.value for s in suites.values() for p in s.properties() if p.name == "task"}
    assert task_property == {"a", "b"}


def test_run_refuses_a_junit_directory_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "runs"
    argv = ["run", "--dataset", "invoices", "--limit", "2", "--out", str(out), "--junit", str(tmp_path)]
    assert main(argv) == 2
    assert "is a directory" in capsys.readouterr().err
    assert not out.exists()  # no run started


def test_run_writes_both_after_the_report(
    tmp_path: Path, register_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tracking = pytest.importorskip("mlflow.tracking")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)

    @contextmanager
    def open_fake(variant: Any, schema: dict[str, Any], *, slots: int | None = None) -> Any:
        yield OpenedVariant(chat_model=QueuedChatModel(outputs=[json.dumps(GOOD)]))

    register_backend("fake-export", open_fake, capabilities=BackendCapabilities())
    variants = tmp_path / "variants.toml"
    variants.write_text(
        'reference = "ref"\n'
        '[[variants]]\nname = "ref"\nbackend = "fake-export"\nmodel = "r"\n'
        '[[variants]]\nname = "quant"\nbackend = "fake-export"\nmodel = "q"\nquantization = "Q4_K_M"\n'
    )
    dataset = write_tiny_dataset(tmp_path / "tiny")
    junit, store = tmp_path / "quantgate.xml", (tmp_path / "mlruns").as_uri()
    argv = ["run", "--dataset", str(dataset), "--variants", str(variants), "--all", "--out", str(tmp_path)]
    status = main([*argv, "--no-token-fidelity", "--junit", str(junit), "--mlflow", store])
    assert status == 4  # five cases cannot show the candidate safe: keep the reference
    (suite,) = list(JUnitXml.fromfile(str(junit)))
    properties = {p.name: p.value for p in suite.properties()}
    assert (properties["verdict:ref"], properties["verdict:quant"]) == ("pass", "inconclusive")
    client = tracking.MlflowClient(tracking_uri=store)
    (parent,) = client.search_runs(
        [client.get_experiment_by_name(f"quantgate-{dataset.name}").experiment_id],
        filter_string="tags.outcome = 'keep_reference'",
    )
    assert "report.html" in {a.path for a in client.list_artifacts(parent.info.run_id)}
