"""The summary table printed at the end of `quantgate run`, with the run's task-kind figures under it."""

from __future__ import annotations

import textwrap

from evaluators.baselines import above_baseline
from quantgate._formatting import MISSING, number, text_table
from quantgate.render._fidelity_tail import run_fidelity_tail
from quantgate.render._latency_pairs import latency_section
from quantgate.render._measurement_notes import BUSY_MARK, busy_lines, is_busy
from quantgate.render._task_figures import task_figures
from quantgate.rundir._summary import RunSummary, VariantEntry

_COLUMNS = [
    ("variant", "name", "{}"),
    ("file MiB", "file_size_mb", "{:.0f}"),
    ("peak MiB", "memory_mb", "{:.0f}"),
    ("model MiB", "model_memory_mb", "{:.0f}"),
    ("accuracy", "field_accuracy", "{:.1%}"),
    ("baseline", "baseline_accuracy", "{:.1%}"),
    ("Δ vs ref", "field_accuracy_delta", "{:+.1%}"),
    ("valid", "format_validity", "{:.0%}"),
    ("agree", "agreement_with_reference", "{:.1%}"),
    ("TTFT p50", "ttft_s_p50", "{:.2f}s"),
    ("tok/s", "tokens_per_s", "{:.1f}"),
    ("p95", "latency_s_p95", "{:.1f}s"),
    ("errors", "errors", "{}"),
]
_ACCURACY = [key for _, key, _ in _COLUMNS].index("field_accuracy")
_TOKENS = [key for _, key, _ in _COLUMNS].index("tokens_per_s")

BASELINE_MARK = "!"
"""Appended to the accuracy of a variant that is not above the trivial baseline."""
BASELINE_NOTE = f"{BASELINE_MARK} not above the trivial baseline (always null or majority value)"


def _cell(entry: VariantEntry, key: str, template: str) -> str:
    value = getattr(entry, key)
    if entry.status == "skipped" and key != "name":
        return "skipped" if key == "file_size_mb" else ""
    return number(value, template)


def below_baseline(entry: VariantEntry) -> bool:
    """Whether a variant's field accuracy is not above its trivial baseline (False when either is missing)."""
    above = above_baseline(field_accuracy=entry.field_accuracy, baseline_accuracy=entry.baseline_accuracy)
    return above is False


def summary_rows(summary: RunSummary) -> list[list[str]]:
    """The summary table as text cells: a header row, then one row per variant.

    The reference's name is marked with ` *`; the accuracy of a variant not above its
    trivial baseline (`below_baseline`) with `!`; the tokens/s of a variant some of whose rounds
    ran while the machine was busy with `~`; a figure that was not measured is `—`.
    """
    rows = [[title for title, _, _ in _COLUMNS]]
    for entry in summary.variants:
        row = [_cell(entry, key, template) for _, key, template in _COLUMNS]
        if entry.is_reference:
            row[0] += " *"
        if below_baseline(entry):
            row[_ACCURACY] += BASELINE_MARK
        if row[_TOKENS] and is_busy(summary, entry.name):
            row[_TOKENS] += BUSY_MARK
        rows.append(row)
    return rows


def _cases_shown(summary: RunSummary) -> str:
    """How many cases: the run's, or in a sequential run how many the reference got to."""
    reference = summary.entry(summary.reference) if summary.reference else None
    if reference is not None and reference.sequential is not None:
        return f"sequential: {reference.sequential.cases} of {summary.dataset.cases} cases"
    return f"{summary.dataset.cases} cases"


def render_summary(summary: RunSummary) -> str:
    """A fixed-width table of the variants, reference marked with *; missing figures as —.

    A line under the legend explains the `!` when some variant carries it.
    """
    rows = summary_rows(summary)
    flagged = any(below_baseline(e) for e in summary.variants)
    if flagged:  # keep the digits of the unmarked accuracies under those of the marked ones
        for row in rows[1:]:
            if row[_ACCURACY] and not row[_ACCURACY].endswith(BASELINE_MARK):
                row[_ACCURACY] += " "
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    lines = [
        "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    ]
    lines.insert(1, "-" * len(lines[0]))
    footer = (
        f"* reference   dataset {summary.dataset.name} ({_cases_shown(summary)})   "
        f"run {summary.run_id}   {MISSING} = not measured"
    )
    notes = [BASELINE_NOTE] if flagged else []
    notes += busy_lines(summary)
    notes += latency_section(summary)
    return "\n".join([*lines, footer, *notes, *task_section(summary), *fidelity_section(summary)])


def task_section(summary: RunSummary) -> list[str]:
    """The lines of the run's task-kind figures under the table (none for an extraction run):
    a blank line, the kind, its table, and what its columns mean."""
    figures = task_figures(summary)
    if figures is None:
        return []
    table = text_table([figures.header, *figures.rows])
    return ["", f"{figures.kind} figures:", *table, *textwrap.wrap(figures.note, width=100)]


def fidelity_section(summary: RunSummary) -> list[str]:
    """The lines of the token-fidelity tail under the table (none when no variant has it): the
    variants' table, the per-slice table when cases have tags, and what the columns mean."""
    tail = run_fidelity_tail(summary)
    if tail is None:
        return []
    slices = ["", "token fidelity per slice:", *text_table([tail.slice_header, *tail.slice_rows])]
    return [
        "",
        "token fidelity:",
        *text_table([tail.header, *tail.rows]),
        *(slices if tail.slice_rows else []),
        *textwrap.wrap(tail.note, width=100),
    ]
