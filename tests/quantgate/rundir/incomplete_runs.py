"""Run directories that do not hold the whole run, built by hand from `make_run`: a writer killed
while a variant ran, a variant lacking a case, damaged lines in records.jsonl."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Literal

from quantgate.rundir._files import RECORDS_FILE, SUMMARY_FILE
from quantgate.rundir._store import read_records, read_summary, write_model
from tests.quantgate.run_factory import make_run

RIGHT = {"a": 1.0, "b": 1.0}
HALF = {"a": 1.0, "b": 0.0}

RUNNING = (
    'summary.json says the run is still "running": the process writing it stopped before the end '
    "(killed?), or is still going"
)
INTERRUPTED = 'summary.json says the run was "interrupted" before it finished'


def complete_run(directory: Path, *, cases: int = 3) -> Path:
    """R and Q right on every case: a complete run whose entries say so."""
    run_dir = make_run(
        directory, {"R": [RIGHT] * cases, "Q": [RIGHT] * cases}, footprints={"R": 700.0, "Q": 400.0}
    )
    summary = read_summary(run_dir)
    for entry in summary.variants:
        entry.complete, entry.missing_cases, entry.cases = True, [], cases
    write_model(run_dir / SUMMARY_FILE, summary)
    return run_dir


def rewrite(
    run_dir: Path,
    *,
    status: Literal["running", "complete", "interrupted"] | None = None,
    listed: Collection[str] | None = None,
    missing: dict[str, list[str]] | None = None,
    drop: Collection[tuple[str, str]] = (),
) -> Path:
    """Change a run in place: its status, the variants its summary lists, the cases an entry
    says it lacks (`missing`), and the records dropped from records.jsonl ((variant, case) pairs)."""
    summary = read_summary(run_dir)
    if status is not None:
        summary.status = status
    if listed is not None:
        summary.variants = [entry for entry in summary.variants if entry.name in listed]
    for entry in summary.variants:
        lacking = (missing or {}).get(entry.name)
        if lacking:
            entry.complete, entry.missing_cases = False, lacking
            entry.cases = (entry.cases or 0) - len(lacking)
    write_model(run_dir / SUMMARY_FILE, summary)
    kept = [r for r in read_records(run_dir) if (r.variant, r.case_id) not in drop]
    (run_dir / RECORDS_FILE).write_text("".join(r.model_dump_json() + "\n" for r in kept))
    return run_dir


def killed_while_q_ran(directory: Path) -> Path:
    """`kill -9` while Q ran its third case: summary.json still `running` and listing R only
    (it is rewritten after each variant), records of R's 3 cases and Q's first 2."""
    return rewrite(complete_run(directory), status="running", listed={"R"}, drop={("Q", "c2")})


def running_with_a_missing_case(directory: Path) -> Path:
    """summary.json `running`; Q's entry says it lacks c2, which records.jsonl does not have."""
    return rewrite(complete_run(directory), status="running", missing={"Q": ["c2"]}, drop={("Q", "c2")})


def damage_line(run_dir: Path, number: int, text: str, *, newline: bool = True) -> Path:
    """Replace line `number` (from 1) of records.jsonl; the last line without its newline is a torn write."""
    path = run_dir / RECORDS_FILE
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[number - 1] = text
    path.write_text("\n".join(lines) + ("\n" if newline else ""), encoding="utf-8")
    return run_dir


def tear_last_line(run_dir: Path) -> Path:
    """Cut records.jsonl's last line in the middle, as a write the run did not finish."""
    path = run_dir / RECORDS_FILE
    lines = path.read_text(encoding="utf-8").splitlines()
    return damage_line(run_dir, len(lines), lines[-1][:40], newline=False)
