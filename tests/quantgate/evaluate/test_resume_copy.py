"""`--resume` evaluates the run's own copy of its dataset (RUN/dataset/), so that copy must be
as the run wrote it: summary.json records each of its files' sha256, and a copy changed since
(a case added, a case's text edited, a file removed or added) is refused, naming the file."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from quantgate.evaluate._evaluation_run import resume_evaluation
from quantgate.inputs._dataset import CASES_FILE, EXAMPLES_FILE, SCHEMA_FILE
from quantgate.rundir._files import DATASET_DIR, SUMMARY_FILE
from quantgate.rundir._store import read_records, read_summary
from tests.quantgate.evaluate.resumable_runs import (
    assert_refused,
    interrupted_run,
    resume_dataset,
    resume_variants,
)


def _copy(run_dir: Path, name: str) -> Path:
    return run_dir / DATASET_DIR / name


def _message(run_dir: Path, name: str, how: str) -> str:
    return re.escape(f"--resume {run_dir}: {_copy(run_dir, name)} {how} since the run started (summary.json")


def test_a_case_added_to_the_copy_is_refused_naming_the_file(tmp_path):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_quant="c3")
    cases = _copy(run_dir, CASES_FILE)
    added: dict[str, object] = {"id": "c99", "text": "case <99>", "expected": None, "tags": []}
    cases.write_text(cases.read_text() + json.dumps(added) + "\n")
    assert_refused(run_dir, _message(run_dir, CASES_FILE, "was changed"))


def test_the_text_of_a_case_not_run_yet_edited_in_the_copy_is_refused(tmp_path):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_ref="c2")
    cases = _copy(run_dir, CASES_FILE)
    cases.write_text(cases.read_text().replace("case <5>", "case <5>, edited"))
    assert_refused(run_dir, _message(run_dir, CASES_FILE, "was changed"))


@pytest.mark.parametrize(
    ("name", "how"), [(EXAMPLES_FILE, "is gone"), (SCHEMA_FILE, "is gone")], ids=["examples", "schema"]
)
def test_a_file_of_the_copy_removed_is_refused(tmp_path, name, how):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_quant="c3")
    _copy(run_dir, name).unlink()
    assert_refused(run_dir, _message(run_dir, name, how))


def test_a_file_added_to_the_copy_is_refused(tmp_path):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_quant="c3")
    summary = json.loads((run_dir / SUMMARY_FILE).read_text())
    del summary["dataset"]["copy_sha256"][EXAMPLES_FILE]  # as if the run had had no examples
    (run_dir / SUMMARY_FILE).write_text(json.dumps(summary))
    assert_refused(run_dir, _message(run_dir, EXAMPLES_FILE, "was added"))


@pytest.mark.parametrize("version", [13, 11, 6])
def test_a_copy_sha256_removed_from_a_summary_of_a_format_that_has_it_is_refused(tmp_path, version):
    """Deleting `dataset.copy_sha256` skipped the check of an edited copy (issue 46): a summary of
    format 6 or later records it, so its absence is a removal, refused."""
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_quant="c3")
    cases = _copy(run_dir, CASES_FILE)
    cases.write_text(cases.read_text().replace("case <5>", "case <5>, edited"))
    summary = json.loads((run_dir / SUMMARY_FILE).read_text())
    del summary["dataset"]["copy_sha256"]
    (run_dir / SUMMARY_FILE).write_text(json.dumps({**summary, "format_version": version}))
    message = f"(format_version {version}) has no dataset.copy_sha256, which every summary of format 6"
    assert_refused(run_dir, re.escape(f"--resume {run_dir}: {run_dir / SUMMARY_FILE} {message}"))


def test_the_card_of_the_copy_may_change_and_a_summary_of_format_5_is_not_checked(tmp_path):
    run_dir = interrupted_run(resume_dataset(tmp_path / "d"), tmp_path, stop_quant="c3")
    (run_dir / DATASET_DIR / "README.md").write_text("notes added by hand\n")  # no data: not checked
    summary = json.loads((run_dir / SUMMARY_FILE).read_text())
    del summary["dataset"]["copy_sha256"]  # written before format 6: nothing to check against
    (run_dir / SUMMARY_FILE).write_text(json.dumps({**summary, "format_version": 5}))
    resume_evaluation(run_dir, variant_set=resume_variants(), progress=False)
    assert read_summary(run_dir).status == "complete"
    counts = Counter((r.variant, r.case_id) for r in read_records(run_dir))
    assert counts == Counter({(v, f"c{i}"): 1 for v in ("ref", "quant") for i in range(6)})
