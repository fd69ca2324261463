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
from quantgate.cli._main import main
from quantgate.rundir._files import DECISION_JSON
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


@pytest.mark.unprivileged  # root writes anywhere: as root, it runs without that privilege
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
        "import sys; from quantgate.cli._main import build_parser; build_parser(); "
        "print('mlflow' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_a_suite_gives_one_test_suite_per_task(tmp_path: Path) -> None:
    from quantgate.inputs._gates import Gates
    from quantgate.suite._suite_records import SuiteRun, SuiteRunSettings, SuiteTaskEntry, write_suite

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


def test_control_characters_of_a_dataset_name_are_escaped_so_the_xml_parses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dataset name with control characters once made a file no XML parser reads (issue 46)."""
    run = _undecided(tmp_path)
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    summary["dataset"]["name"] = "inv\x01oices\x1b[31m\x00"
    (run / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    out = tmp_path / "quantgate.xml"
    assert main(["decide", str(run), "--junit", str(out)]) == 4
    (suite,) = list(JUnitXml.fromfile(str(out)))
    properties = {p.name: p.value for p in suite.properties()}
    assert properties["dataset"] == "inv\\x01oices\\x1b[31m\\x00"


def test_xml_text_escapes_only_what_xml_cannot_hold() -> None:
    from quantgate.export._junit import _xml_text

    assert _xml_text("tab\there\nnew\rline é ✓ \U0001f600 \x7f") == "tab\there\nnew\rline é ✓ \U0001f600 \x7f"
    assert _xml_text("a\x00b\x08c\ud800d\ufffe") == "a\\x00b\\x08c\\ud800d\\ufffe"


def test_a_symlink_is_written_through_and_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = decided_run(tmp_path / "run")
    (tmp_path / "reports").mkdir()
    target = tmp_path / "reports" / "quantgate.xml"
    target.write_text("old", encoding="utf-8")
    link = tmp_path / "link.xml"
    link.symlink_to(target)
    assert main(["decide", str(run), "--junit", str(link)]) == 4
    assert link.is_symlink()
    assert link.resolve() == target
    assert len(list(JUnitXml.fromfile(str(target)))) == 1
    dangling = tmp_path / "dangling.xml"
    dangling.symlink_to(tmp_path / "reports" / "new.xml")
    assert main(["decide", str(run), "--junit", str(dangling)]) == 4
    assert dangling.is_symlink()
    assert len(list(JUnitXml.fromfile(str(tmp_path / "reports" / "new.xml")))) == 1


def test_a_new_file_gets_the_usual_mode_and_an_existing_one_keeps_its_own(tmp_path: Path) -> None:
    """The file was once made 0600 whatever the umask (a temporary file renamed over it)."""
    run = decided_run(tmp_path / "run")
    new, existing = tmp_path / "new.xml", tmp_path / "existing.xml"
    existing.write_text("old", encoding="utf-8")
    existing.chmod(0o640)
    previous = os.umask(0o022)
    try:
        assert main(["decide", str(run), "--junit", str(new)]) == 4
        assert main(["decide", str(run), "--junit", str(existing)]) == 4
    finally:
        os.umask(previous)
    assert new.stat().st_mode & 0o777 == 0o644
    assert existing.stat().st_mode & 0o777 == 0o640
    assert len(list(JUnitXml.fromfile(str(existing)))) == 1  # truncated, then written: no "old" left


@pytest.mark.parametrize(
    ("target", "refusal"),
    [
        ("fifo", "is a FIFO, not a regular file"),
        ("/dev/null", "is a character device, not a regular file"),
        ("/proc/self/fd/1", "is the command's own stdout"),  # what /dev/stdout points at; a file here
    ],
)
def test_a_target_that_is_not_a_regular_file_is_refused_before_deciding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, refusal: str
) -> None:
    """A device (/dev/stdout, /dev/null) or a FIFO was replaced by a file, or blocked (issue 46): the
    XML goes to a file of its own, stdout carries the command's output. The devices are reached
    through a symlink in tmp_path, so that a writer that replaces its target (the bug) replaces
    the symlink, never the machine's /dev/null."""
    run = _undecided(tmp_path)
    path = tmp_path / "target.xml"
    if target == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(target)
    assert main(["decide", str(run), "--junit", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"--junit {path}: {refusal}" in err
    assert "give a file name" in err
    assert not (run / DECISION_JSON).exists()  # refused before the decision was made
    assert path.is_fifo() if target == "fifo" else path.is_symlink()


def test_the_writer_itself_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    """A target that became a FIFO during the run: refused at once, not waiting for a reader."""
    from evaluators.errors import UsageError
    from quantgate.export import decided_runs, write_junit

    runs = decided_runs(decided_run(tmp_path / "run"))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises((UsageError, OSError)):
        write_junit(fifo, runs)
    assert fifo.is_fifo()
