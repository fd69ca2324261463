"""A run as pandas frames: where each variant fails, by field and slice, and why.

The HTML report and the notebooks read runs through this module. Every frame is a view of
the run directory (the latest record per case x variant in records.jsonl, summary.json,
the run's copy of its cases, decision.json once `quantgate decide` has run), computed with
the existing evaluators: paired deltas and regressions from `evaluators.comparison`,
per-field gold and predicted values from `evaluators.fields`, footprints from the gates'
`measure`, the interval of each variant's mean case accuracy from `evaluators.betting`.
Accuracies are the summaries' definitions: a field's accuracy is its mean score over cases, a
slice's the mean of all field scores of the cases carrying its tag. A figure
that was not measured is NaN in a frame and None elsewhere, never 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from evaluators.betting import CONFSEQ_TRUNCATION, betting_interval
from evaluators.comparison import Comparison, compare_paired, regressions
from evaluators.errors import MissingInputError
from evaluators.latency import percentile
from quantgate.decide._checks import measure
from quantgate.decide._run_method import run_dataset
from quantgate.inputs._dataset import Case, Dataset
from quantgate.inputs._gates import Gates, comparison_options
from quantgate.render._fidelity_tail import HEADLINE, tail_cells, tail_titles
from quantgate.rundir._completeness import Completeness, completeness_of
from quantgate.rundir._decision import Decision
from quantgate.rundir._files import DECISION_JSON, SUMMARY_FILE
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._pairing import paired_cases
from quantgate.rundir._store import LineProblem, Run, latest_records, load_run, read_decision

_FIELD_COLUMNS = ["variant", "case_id", "field", "score", "outcome", "agreement", "tags"]


@dataclass(frozen=True, kw_only=True)
class RunView:
    """A run opened for exploration.

    Attributes:
        run: The run as `load_run` reads it.
        reference: The reference variant's name.
        variants: The variants that have records, in run order (the reference first).
        records: The latest record per variant and case id.
        dataset: The cases the run evaluated; None when neither the run's copy nor its
            source is readable.
        decision: decision.json, when the run has been decided.
        completeness: Whether the directory holds the whole run, and if not what it lacks
            (`quantgate.rundir._completeness`); the views show what there is.
    """

    run: Run
    reference: str
    variants: tuple[str, ...]
    records: Mapping[str, Mapping[str, CaseRecord]]
    dataset: Dataset | None
    decision: Decision | None
    completeness: Completeness = dataclasses.field(default_factory=Completeness)

    @property
    def gates(self) -> Gates:
        """The gates the run was decided under (the defaults before it is decided)."""
        return self.decision.gates if self.decision is not None else Gates()

    @property
    def quantized(self) -> tuple[str, ...]:
        """The variants compared with the reference."""
        return tuple(name for name in self.variants if name != self.reference)

    def case(self, case_id: str) -> Case | None:
        """The evaluated case with this id, if the run's cases are available."""
        if self.dataset is None:
            return None
        return next((c for c in self.dataset.cases if c.id == case_id), None)


def load_run_view(run_dir: str | Path) -> RunView:
    """Open a run directory written by `quantgate run` for exploration.

    Args:
        run_dir: The run directory (`runs/<run-id>`).

    Returns:
        The run with its records, cases and decision, and whether it is complete: an
        incomplete run (interrupted, killed, a damaged records.jsonl) is opened with what it
        holds, the lines of records.jsonl that cannot be read left out and named in
        `completeness`.
    """
    run = load_run(run_dir)
    line_problems: list[LineProblem] = []
    records = latest_records(run.records(problems=line_problems))
    listed = [entry.name for entry in run.summary.variants]
    names = [n for n in listed if n in records] + [n for n in records if n not in listed]
    decided = run.directory / DECISION_JSON
    return RunView(
        run=run,
        reference=run.summary.reference or (names[0] if names else ""),
        variants=tuple(names),
        records=records,
        dataset=run_dataset(run),
        decision=read_decision(run.directory) if decided.is_file() else None,
        completeness=completeness_of(run.summary, records, line_problems),
    )


def latest_run(*, root: str | Path = "runs") -> Path:
    """The newest run directory under `root` (run ids sort by time).

    Raises:
        MissingInputError: `root` holds no run (a FileNotFoundError).
    """
    folder = Path(root)
    found = sorted(p for p in folder.glob(f"*/{SUMMARY_FILE}")) if folder.is_dir() else []
    if not found:
        raise MissingInputError(
            f"no run under {folder.resolve()}: run `quantgate run` or give a run directory"
        )
    return found[-1].parent


def comparisons(view: RunView) -> dict[str, Comparison]:
    """Each quantized variant against the reference on their paired labeled cases."""
    reference = view.records.get(view.reference, {})
    found = {}
    for name in view.quantized:
        paired = paired_cases(reference, view.records[name])
        if paired:
            found[name] = compare_paired(paired, options=comparison_options(view.gates))
    return found


def field_scores(view: RunView) -> pd.DataFrame:
    """One row per variant x case x field: score against gold, outcome, agreement, tags."""
    rows = []
    for name in view.variants:
        for case_id, record in view.records[name].items():
            agreement = record.agreement_fields or {}
            tags = tuple(record.tags)
            for field, score in record.fields.items():
                rows.append(
                    (name, case_id, field, score, record.outcomes.get(field), agreement.get(field), tags)
                )
    frame = pd.DataFrame(rows, columns=_FIELD_COLUMNS)
    frame["agreement"] = frame["agreement"].astype(float)
    return frame


def _pivot(frame: pd.DataFrame, index: str, view: RunView) -> pd.DataFrame:
    table = frame.pivot_table(index=index, columns="variant", values="score", aggfunc="mean", sort=False)
    return table.reindex(columns=list(view.variants)).rename_axis(columns="variant")


def field_accuracy(view: RunView) -> pd.DataFrame:
    """Field accuracy, one row per field and one column per variant (NaN: not measured)."""
    return _pivot(field_scores(view), "field", view)


def slice_accuracy(view: RunView) -> pd.DataFrame:
    """Field accuracy over the cases of each slice (tag), one column per variant, tags sorted."""
    scores = field_scores(view).explode("tags").dropna(subset=["tags"]).rename(columns={"tags": "slice"})
    return _pivot(scores, "slice", view).sort_index()


def slice_sizes(view: RunView) -> pd.Series:
    """Number of cases per slice (tag), counted on the reference's records."""
    tags = [t for r in view.records.get(view.reference, {}).values() for t in r.tags]
    return pd.Series(tags, dtype=object).value_counts().sort_index().rename("cases")


def field_deltas(view: RunView, *, found: Mapping[str, Comparison] | None = None) -> pd.DataFrame:
    """Field accuracy minus the reference's, on paired cases: one row per field, one column
    per quantized variant; NaN where a variant has no paired labeled case. `found`: the
    run's `comparisons`, when the caller has them already."""
    found = comparisons(view) if found is None else found
    deltas = {name: {field: d.delta for field, d in c.fields.items()} for name, c in found.items()}
    fields = list(field_accuracy(view).index)
    table = pd.DataFrame(deltas, index=fields, columns=list(view.quantized), dtype=float)
    return table.rename_axis(index="field", columns="variant")


_VARIANT_COLUMNS = [
    "variant", "quantization", "is_reference", "status", "cases", "field_accuracy", "accuracy_delta",
    "footprint_mb", "footprint_source", "format_validity", "error_rate", "ttft_s_p50", "latency_s_p95",
    "passes", "verdict",
]  # fmt: skip
"""The columns of `variant_table` (before `variant` becomes its index), kept for a run with no variant."""


def variant_table(view: RunView) -> pd.DataFrame:
    """One row per variant: accuracy, paired delta, footprint, validity, errors, latency, gates."""
    deltas = {name: c.overall.delta for name, c in comparisons(view).items()}
    accuracy = field_scores(view).groupby("variant")["score"].mean()
    decided = view.decision.variants if view.decision is not None else {}
    rows = []
    for entry in view.run.summary.variants:
        name = entry.name
        records = list(view.records.get(name, {}).values())
        measured = measure(records, entry)
        ttfts = [r.ttft_s for r in records if r.ttft_s is not None]
        rows.append(
            {
                "variant": name,
                "quantization": entry.quantization,
                "is_reference": name == view.reference,
                "status": entry.status,
                "cases": len(records),
                "field_accuracy": accuracy.get(name),
                "accuracy_delta": deltas.get(name),
                "footprint_mb": measured.footprint_mb,
                "footprint_source": measured.footprint_source,
                "format_validity": measured.format_validity,
                "error_rate": measured.error_rate,
                "ttft_s_p50": percentile(ttfts, 50),
                "latency_s_p95": measured.latency_s_p95,
                "passes": decided[name].passes if name in decided else None,
                "verdict": decided[name].verdict if name in decided else None,
            }
        )
    numbers = ["field_accuracy", "accuracy_delta", "footprint_mb", "format_validity", "error_rate"]
    table = pd.DataFrame(rows, columns=_VARIANT_COLUMNS).set_index("variant")
    return table.astype(dict.fromkeys([*numbers, "ttft_s_p50", "latency_s_p95"], float))


def token_fidelity(view: RunView, *, formatted: bool = False) -> pd.DataFrame:
    """One row per variant: its token fidelity against the reference (`fidelity_tail.HEADLINE`: KLD
    mean and p99, the largest drop of the reference's top-token probability, top-1 agreement on
    structural and value tokens), the columns titled as the fidelity tables title them.

    Args:
        view: The run.
        formatted: The cells as the fidelity tables show them (`"0.3889"`, `"-30.0"`, `"66.7%"`,
            `MISSING`); otherwise the figures (fractions, nats), NaN where not measured.
    """
    summaries = {entry.name: entry.token_fidelity for entry in view.run.summary.variants}
    titles = tail_titles()
    if formatted:
        rows = [tail_cells(summary) for summary in summaries.values()]
        return pd.DataFrame(rows, index=pd.Index(list(summaries), name="variant"), columns=titles)
    values = [
        [getattr(summary, key) if summary is not None else None for key in HEADLINE]
        for summary in summaries.values()
    ]
    table = pd.DataFrame(values, index=pd.Index(list(summaries), name="variant"), columns=titles)
    return table.astype(float)


def case_order(view: RunView) -> dict[str, int]:
    """Each case id's position in the run's order: the run's cases, then ids only records know."""
    ids = [c.id for c in view.dataset.cases] if view.dataset is not None else []
    ids += [case_id for name in view.variants for case_id in view.records[name]]
    return {case_id: i for i, case_id in enumerate(dict.fromkeys(ids))}


def accuracy_intervals(view: RunView) -> pd.DataFrame:
    """Per variant (index): cases, case_accuracy (a case's: its mean field score), and the
    betting confidence interval of it, valid at any n (`evaluators.betting`), at the gates'
    confidence and the run's truncation, over its labeled cases in run order (accuracy_low,
    accuracy_high; NaN without a labeled case)."""
    order = case_order(view)
    options = view.run.summary.options
    truncation = options.truncation if options is not None else CONFSEQ_TRUNCATION
    rows = {}
    for name in view.variants:
        labeled = sorted((r for r in view.records[name].values() if r.fields), key=lambda r: order[r.case_id])
        values = [sum(r.fields.values()) / len(r.fields) for r in labeled]
        interval = betting_interval(
            values, confidence=view.gates.confidence, low=0.0, high=1.0, truncation=truncation
        )
        rows[name] = (
            len(values),
            sum(values) / len(values) if values else None,
            interval.low if interval is not None else None,
            interval.high if interval is not None else None,
        )
    columns = ["cases", "case_accuracy", "accuracy_low", "accuracy_high"]
    table = pd.DataFrame.from_dict(rows, orient="index", columns=columns).rename_axis(index="variant")
    return table.astype({"cases": int} | dict.fromkeys(columns[1:], float))


def latencies(view: RunView) -> pd.DataFrame:
    """One row per variant x case: time to first token and total time in seconds."""
    rows = [
        (name, case_id, record.ttft_s, record.total_s)
        for name in view.variants
        for case_id, record in view.records[name].items()
    ]
    return pd.DataFrame(rows, columns=["variant", "case_id", "ttft_s", "total_s"]).astype(
        {"ttft_s": float, "total_s": float}
    )


def failing_cases(view: RunView) -> pd.DataFrame:
    """One row per variant x case with a field wrong against gold or an error.

    Columns: variant, case_id, tags, fields (the fields scoring below 1), field_accuracy,
    error_kind, error.
    """
    rows = []
    for name in view.variants:
        for case_id, record in view.records[name].items():
            wrong = tuple(f for f, s in record.fields.items() if s < 1.0)
            if wrong or record.error_kind:
                rows.append(
                    (name, case_id, tuple(record.tags), wrong, record.field_accuracy, record.error_kind,
                     record.error)
                )  # fmt: skip
    columns = ["variant", "case_id", "tags", "fields", "field_accuracy", "error_kind", "error"]
    return pd.DataFrame(rows, columns=columns).astype({"field_accuracy": float})


def only_variant_fails(view: RunView) -> pd.DataFrame:
    """The fields the reference got right and a quantized variant did not, one row each.

    Columns: variant, case_id, field, tags, variant_score and outcome (of that field),
    reference_case_score and variant_case_score (each side's mean over the case's fields).
    """
    rows = []
    reference = view.records.get(view.reference, {})
    for name in view.quantized:
        own = view.records[name]
        for found in regressions(paired_cases(reference, own)):
            record = own[found.case_id]
            for field in found.fields:
                rows.append(
                    (name, found.case_id, field, found.tags, record.fields.get(field),
                     record.outcomes.get(field), found.reference_score, found.variant_score)
                )  # fmt: skip
    columns = ["variant", "case_id", "field", "tags", "variant_score", "outcome"]
    return pd.DataFrame(rows, columns=[*columns, "reference_case_score", "variant_case_score"])


def pareto_frontier(*, memory: Mapping[str, float | None], accuracy: Mapping[str, float | None]) -> list[str]:
    """The variants no other variant beats on both memory (lower) and accuracy (higher).

    Args:
        memory: Footprint per variant; None when not measured (such a variant is left out).
        accuracy: Field accuracy per variant; None when not measured (left out too).

    Returns:
        The frontier's variants from the smallest footprint to the largest.
    """
    points = {
        name: (float(m), float(a))
        for name, m in memory.items()
        if m is not None and (a := accuracy.get(name)) is not None
    }

    def dominated(m: float, a: float) -> bool:
        return any(om <= m and oa >= a and (om < m or oa > a) for om, oa in points.values())

    frontier = [name for name, (m, a) in points.items() if not dominated(m, a)]
    return sorted(frontier, key=lambda name: (points[name][0], -points[name][1]))
