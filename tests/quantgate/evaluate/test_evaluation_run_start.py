"""A run's start: its directory, its copy of the dataset, variants.json and summary.json. Whatever
stops it there (a full disk, a signal) leaves no half-made run directory, which `--resume` would
refuse, and a full disk is said in one line naming the file."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from quantgate.cli._main import main
from quantgate.evaluate._evaluation_run import run_evaluation
from quantgate.inputs._dataset import CASES_FILE, data_file_hashes
from quantgate.rundir._files import DATASET_DIR, SUMMARY_FILE
from quantgate.rundir._jsonfile import RunWriteError
from quantgate.rundir._store import RunStore, read_summary
from quantgate.rundir._summary import RunSummary
from tests.quantgate.evaluate.resumable_runs import resume_dataset, resume_options, resume_variants
from tests.quantgate.evaluate.slow_backend import write_inputs

NO_SPACE = os.strerror(errno.ENOSPC)


def _full_disk_at(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Writing a file named `name` runs out of space half way, as a write(2) does: the error names
    no file."""
    real = Path.write_text

    def write_text(self: Path, text: str, *args: Any, **kwargs: Any) -> int:
        if self.name != name:
            return real(self, text, *args, **kwargs)
        real(self, text[: len(text) // 2], *args, **kwargs)
        raise OSError(errno.ENOSPC, NO_SPACE)

    monkeypatch.setattr(Path, "write_text", write_text)


def test_a_full_disk_while_the_dataset_is_copied_leaves_no_run_directory(tmp_path, monkeypatch):
    dataset = resume_dataset(tmp_path / "d")
    _full_disk_at(monkeypatch, CASES_FILE)
    with pytest.raises(RuntimeError) as caught:
        run_evaluation(dataset, resume_variants(), options=resume_options(tmp_path))
    message = str(caught.value)
    assert message.startswith(f"cannot write {tmp_path / 'runs'}/")
    assert f"/{DATASET_DIR}/{CASES_FILE}: {NO_SPACE}; the run did not start (nothing of it" in message
    assert "\n" not in message
    assert list((tmp_path / "runs").iterdir()) == []


def test_a_summary_that_cannot_be_written_as_the_run_starts_leaves_no_run_directory(tmp_path, monkeypatch):
    def no_space(self: RunStore, summary: RunSummary) -> None:
        raise RunWriteError(self.directory / SUMMARY_FILE, OSError(errno.ENOSPC, NO_SPACE))

    monkeypatch.setattr(RunStore, "write_summary", no_space)
    with pytest.raises(RuntimeError, match=rf"^cannot write .*/{SUMMARY_FILE}: {NO_SPACE}; the run did not"):
        run_evaluation(resume_dataset(tmp_path / "d"), resume_variants(), options=resume_options(tmp_path))
    assert list((tmp_path / "runs").iterdir()) == []


def test_no_space_for_the_run_directory_itself_leaves_none(tmp_path, monkeypatch):
    def touch(self: Path, *args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, NO_SPACE, str(self))

    monkeypatch.setattr(Path, "touch", touch)  # records.jsonl, made with the directory
    with pytest.raises(RuntimeError, match=rf"^cannot write .*records\.jsonl: {NO_SPACE}; the run did not"):
        run_evaluation(resume_dataset(tmp_path / "d"), resume_variants(), options=resume_options(tmp_path))
    assert list((tmp_path / "runs").iterdir()) == []


def test_an_interruption_as_the_run_starts_leaves_no_run_directory(tmp_path, monkeypatch):
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(RunStore, "write_variants", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(resume_dataset(tmp_path / "d"), resume_variants(), options=resume_options(tmp_path))
    assert list((tmp_path / "runs").iterdir()) == []


def test_the_summary_records_the_hash_of_each_file_of_the_run_copy(tmp_path):
    run_dir = run_evaluation(
        resume_dataset(tmp_path / "d"), resume_variants(), options=resume_options(tmp_path)
    )
    recorded = read_summary(run_dir).dataset.copy_sha256
    assert recorded == data_file_hashes(run_dir / DATASET_DIR)
    assert recorded is not None
    assert sorted(recorded) == ["cases.jsonl", "examples.jsonl", "schema.json"]


def test_a_signal_that_cuts_the_last_summary_write_short_still_leaves_it_written(tmp_path, monkeypatch):
    written: list[str] = []
    real = RunStore.write_summary

    def cut_once_at_the_end(self: RunStore, summary: RunSummary) -> None:
        if summary.status == "complete" and not written:
            written.append("cut")
            raise KeyboardInterrupt  # as a SIGTERM arriving while summary.json.partial is written
        real(self, summary)

    monkeypatch.setattr(RunStore, "write_summary", cut_once_at_the_end)
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(resume_dataset(tmp_path / "d"), resume_variants(), options=resume_options(tmp_path))
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert read_summary(run_dir).status == "complete"  # it was: the signal came after the last case


def test_the_command_line_says_a_full_disk_at_the_start_in_one_line(tmp_path, monkeypatch, capsys):
    dataset, variants = write_inputs(tmp_path, cases=3, delay_s=0)
    _full_disk_at(monkeypatch, CASES_FILE)
    out = tmp_path / "runs"
    argv = ["run", "--all", "--dataset", str(dataset), "--variants", str(variants), "--out", str(out)]
    assert main([*argv, "--no-report", "--json"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"quantgate: error: cannot write {out}/")
    assert f"{CASES_FILE}: {NO_SPACE}; the run did not start" in err
    assert err.count("\n") == 1, err
    assert list(out.iterdir()) == []
