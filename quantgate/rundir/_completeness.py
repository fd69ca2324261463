"""Whether a run directory holds the whole run, and if not, what it lacks.

A run is incomplete when summary.json's status is not `complete` (`running`: the process
writing it stopped without a word, killed, or is still going; `interrupted`: stopped by
Ctrl-C), when a variant lacks cases (its entry's `missing_cases`, or fewer records than the
cases the entry counts), when records.jsonl has a line that cannot be read (a torn last line
included), or when records.jsonl holds records of a variant summary.json does not list (the
one the run was evaluating when it stopped). A skipped variant does not make a run
incomplete: it is recorded, with its error, and judged `skipped`.

`decide`, `report` and `compare` ask this module and show its problems at the top of what
they write; `quantgate decide` refuses an incomplete run unless told to decide on what it holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._store import LineProblem, latest_records, read_records, read_summary
from quantgate.rundir._summary import RunSummary, VariantEntry

SHOWN_CASES = 10
"""Case ids named in a problem; the rest are counted."""

_STATUS_PROBLEMS = {
    "running": 'summary.json says the run is still "running": the process writing it stopped before '
    "the end (killed?), or is still going",
    "interrupted": 'summary.json says the run was "interrupted" before it finished',
}


@dataclass(frozen=True, kw_only=True)
class Completeness:
    """Whether a run directory holds the whole run.

    Attributes:
        problems: What it lacks, one sentence each, in the order: the run's status, the
            lines of records.jsonl not read, each listed variant's missing cases, the
            records of variants summary.json does not list. Empty for a complete run.
        resumable: The run did not finish (summary.json is not `complete`): `quantgate run
            --resume` can go on with it.
    """

    problems: tuple[str, ...] = ()
    resumable: bool = False

    @property
    def complete(self) -> bool:
        """No problem found."""
        return not self.problems

    def notice(self) -> str:
        """The problems as a few lines of text for a console (empty for a complete run)."""
        if self.complete:
            return ""
        return "\n".join(["incomplete run:", *(f"  - {problem}" for problem in self.problems)])


def _named(case_ids: Sequence[str]) -> str:
    shown = ", ".join(case_ids[:SHOWN_CASES])
    more = len(case_ids) - SHOWN_CASES
    return f"{shown} and {more} more" if more > 0 else shown


def _variant_problems(entry: VariantEntry, records: Mapping[str, CaseRecord]) -> list[str]:
    if entry.status != "ok":
        return []  # skipped: a verdict of its own, not a lost part of the run
    problems = []
    missing = entry.missing_cases
    if missing:
        problems.append(
            f"variant {entry.name} has no record of {len(missing)} of its cases: {_named(missing)}"
        )
    elif entry.complete is False:
        problems.append(f"variant {entry.name}: summary.json marks it incomplete")
    if entry.cases is not None and len(records) < entry.cases:
        problems.append(
            f"variant {entry.name}: records.jsonl holds {len(records)} of the {entry.cases} cases "
            "summary.json counts for it"
        )
    return problems


def completeness_of(
    summary: RunSummary,
    records: Mapping[str, Mapping[str, CaseRecord]],
    line_problems: Sequence[LineProblem] = (),
) -> Completeness:
    """Whether a run read from disk is complete (see the module docstring for the rules).

    Args:
        summary: Its summary.json.
        records: Its latest record per variant and case id (`latest_records`).
        line_problems: The lines of records.jsonl `read_records` could not read.
    """
    problems = []
    if summary.status != "complete":
        problems.append(_STATUS_PROBLEMS.get(summary.status, f"summary.json says {summary.status!r}"))
    problems += [str(p) for p in line_problems]
    for entry in summary.variants:
        problems += _variant_problems(entry, records.get(entry.name, {}))
    listed = {entry.name for entry in summary.variants}
    problems += [
        f"records.jsonl has records of {len(own)} case(s) of variant {name}, which summary.json does "
        "not list: the run stopped while evaluating it"
        for name, own in records.items()
        if name not in listed
    ]
    return Completeness(problems=tuple(problems), resumable=summary.status != "complete")


def run_completeness(run_dir: str | Path) -> Completeness:
    """Whether a run directory holds the whole run, and if not, what it lacks.

    Raises:
        RunFileError: summary.json is missing or unreadable.
    """
    directory = Path(run_dir)
    summary = read_summary(directory)
    line_problems: list[LineProblem] = []
    records = latest_records(read_records(directory, problems=line_problems))
    return completeness_of(summary, records, line_problems)
