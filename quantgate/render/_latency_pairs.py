"""Latency against the reference as table cells: what the terminal summary, decision.md and the HTML
report show.

One row per variant with figures: the reference's own p95, then each candidate's per-case differences
from the reference over the cases both decoded in full in this run (summary.json's
`latency_against_reference`, `evaluators.paired_latency`): the median difference with its 95%
sign-test interval, and its own p95, labelled descriptive (no interval at the latency sample's size).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from evaluators.paired_latency import PairedMedian
from quantgate._formatting import MISSING, number, text_table
from quantgate.render._measurement_notes import BUSY_MARK, is_busy
from quantgate.rundir._summary import RunSummary, VariantEntry

__all__ = ["LatencyPairs", "latency_pairs", "latency_section"]

_HEADER = ["variant", "pairs", "Δ time (s)", "Δ TTFT (s)", "Δ gen tok/s", "p95 (s, descriptive)"]


@dataclass(frozen=True)
class LatencyPairs:
    """The table's header, its rows (text cells) and what its columns mean."""

    header: list[str]
    rows: list[list[str]]
    note: str


def _with_interval(paired: PairedMedian, template: str) -> str:
    """`+0.41 [+0.20, +0.63]`; the median alone with `[—]` when the pairs are too few for bounds."""
    if paired.median is None:
        return MISSING
    if paired.low is None or paired.high is None:
        return f"{number(paired.median, template)} [{MISSING}]"
    bounds = f"{number(paired.low, template)}, {number(paired.high, template)}"
    return f"{number(paired.median, template)} [{bounds}]"


def _row(entry: VariantEntry, reference_mark: str, busy: bool) -> list[str]:
    p95 = number(entry.latency_s_p95, "{:.2f}")
    name = entry.name + reference_mark + (f" {BUSY_MARK}" if busy else "")
    against = entry.latency_against_reference
    if against is None:
        return [name, MISSING, MISSING, MISSING, MISSING, p95]
    return [
        name,
        str(against.pairs),
        _with_interval(against.total_s, "{:+.2f}"),
        _with_interval(against.ttft_s, "{:+.3f}"),
        _with_interval(against.generation_tokens_per_s, "{:+.1f}"),
        p95,
    ]


def latency_pairs(summary: RunSummary, *, reference_mark: str = " *") -> LatencyPairs | None:
    """The latency table of a run, or None when no candidate has paired latency (a run written before
    it, or one without a candidate that ran)."""
    entries = [e for e in summary.variants if e.status == "ok"]
    if not any(e.latency_against_reference is not None for e in entries):
        return None
    reference_busy = any(is_busy(summary, e.name) for e in entries if e.is_reference)
    busy = {e.name: is_busy(summary, e.name) or reference_busy for e in entries}
    rows = [_row(e, reference_mark if e.is_reference else "", busy[e.name]) for e in entries]
    sample = (
        f"the run's first {summary.options.latency_cases} cases"
        if summary.options is not None and summary.options.verify and summary.options.latency_cases
        else "the cases"
    )
    note = (
        f"Latency against the reference, per case, variant minus reference, over {sample} both decoded in "
        "full in this run (pairs): median difference [95% sign-test interval, exact at any number of pairs; "
        f"{MISSING} with fewer than 6 pairs]. Δ gen tok/s below 0 is slower. p95: each variant's own 95th "
        "percentile of a case's time over its timed cases, descriptive only (no interval at this size)."
    )
    if any(busy.values()):  # the mark is explained only where a row carries it
        note += (
            f" {BUSY_MARK}: the variant's or the reference's timings partly taken while the machine was busy."
        )
    return LatencyPairs(header=list(_HEADER), rows=rows, note=note)


def latency_section(summary: RunSummary) -> list[str]:
    """The lines of the latency table under the terminal summary (none without paired latency): a
    blank line, the title, the table, and what its columns mean."""
    table = latency_pairs(summary)
    if table is None:
        return []
    return ["", "latency against the reference:", *text_table([table.header, *table.rows]),
            *textwrap.wrap(table.note, width=100)]  # fmt: skip
