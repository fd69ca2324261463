"""`quantgate decide`: which variant replaces the reference, under which gates, and why.

`decide` reads a run directory only (records.jsonl, summary.json, variants.json and the
run's copy of its cases) and recomputes every figure it judges from the records: paired
accuracy deltas with bootstrap intervals and McNemar's test, validity, error rate,
latency. Memory comes from the summary, which the run's sampler wrote. The recommended
variant is the one with the smallest memory footprint among those passing every gate (or,
with a team's prices and `recommend_by="cost"`, the cheapest expected cost per 1,000
extractions: `quantgate.decide._cost_table`); the reference is a candidate too, so "keep the
reference" is a possible answer. The outcome
(a quantized candidate passes, keep the reference, nothing passes) sets the exit status that
`run` and `decide` return (`quantgate.rundir._decision.EXIT_STATUS`). A run directory that does
not hold the whole run (`quantgate.rundir._completeness`) is decided on what it holds, and the
decision lists what it lacks; the CLI refuses one unless given `--allow-incomplete`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from evaluators.comparison import (
    AgreementSummary,
    Comparison,
    ComparisonOptions,
    Regression,
    compare_paired,
    regressions,
    summarize_agreement,
)
from evaluators.errors import QuantgateError, UsageError
from evaluators.flips import summarize_flips
from quantgate.capacity._capacity_checks import capacity_inputs
from quantgate.decide._calibrations import calibration_comparisons
from quantgate.decide._checks import GateEvidence, Measured, judge_variant, measure, passes
from quantgate.decide._cost_table import break_even_signal, cost_table
from quantgate.decide._forecast import open_forecasts
from quantgate.decide._regressions import export_regression_sets
from quantgate.decide._rollback import rollback_signals
from quantgate.decide._run_method import RunMethod, method_of, record_section, run_dataset
from quantgate.decide._runtimes import runtime_comparisons, runtime_evidence
from quantgate.inputs._dataset import Dataset
from quantgate.inputs._gates import Gates, comparison_options
from quantgate.inputs._prices import Prices
from quantgate.render._decision_markdown import render_decision
from quantgate.rundir._calibration_comparison import CalibrationComparison
from quantgate.rundir._completeness import Completeness, completeness_of
from quantgate.rundir._decision import (
    EXIT_STATUS,
    CostTable,
    Decision,
    GateResult,
    MeasuredFigures,
    Ranking,
    Rollback,
    VariantDecision,
    outcome_of,
    variant_verdict,
)
from quantgate.rundir._files import DECISION_JSON, DECISION_MD
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._pairing import paired_cases
from quantgate.rundir._runtime_comparison import RuntimeComparison
from quantgate.rundir._store import LineProblem, Run, latest_records, load_run, read_decision, write_model
from quantgate.rundir._summary import VariantEntry


class DecisionError(QuantgateError, RuntimeError):
    """A run that cannot be decided on (no reference results, unreadable files)."""


def agreement_of(records: Iterable[CaseRecord], options: ComparisonOptions) -> AgreementSummary:
    """Agreement with the reference over the cases where the reference gave a record (in the
    order given: the run's case order)."""
    per_case = [r.agreement_fields for r in records if r.agreement_fields is not None]
    return summarize_agreement(per_case, options=options)


@dataclass(frozen=True, kw_only=True)
class _Judged:
    name: str
    measured: Measured | None
    agreement: AgreementSummary | None
    section: VariantDecision
    regressions: list[Regression]


def _skipped(entry: VariantEntry) -> _Judged:
    section = VariantDecision(status=entry.status, error=entry.error, passes=False, verdict="skipped")
    return _Judged(name=entry.name, measured=None, agreement=None, section=section, regressions=[])


def _section(
    entry: VariantEntry,
    measured: Measured,
    results: Sequence[GateResult],
    comparison: Comparison | None,
    agreement: AgreementSummary | None,
    found: list[Regression],
) -> VariantDecision:
    return VariantDecision(
        status="ok",
        is_reference=entry.is_reference,
        quantization=entry.quantization,
        passes=passes(results),
        verdict=variant_verdict("ok", list(results)),
        footprint_mb=measured.footprint_mb,
        footprint_source=measured.footprint_source,
        measured=MeasuredFigures.model_validate(measured, from_attributes=True),  # its fields, by name
        gates=list(results),
        comparison=comparison,
        agreement=agreement,
        token_fidelity=entry.token_fidelity,
        token_fidelity_missing=entry.token_fidelity_missing,
        embeddings=entry.embeddings,
        sequential=entry.sequential,
        regressions=found,
    )


def _in_order(records: Iterable[CaseRecord], order: Mapping[str, int]) -> list[CaseRecord]:
    return sorted(records, key=lambda r: order.get(r.case_id, len(order)))


@dataclass(frozen=True, kw_only=True)
class _Judging:
    """What every variant of a run is judged with: the run, its latest records (variant -> case -> record),
    its reference, the gates, how its cases were sampled, its cases (for `runtimes`: decide.runtimes)."""

    run: Run
    records: Mapping[str, Mapping[str, CaseRecord]]
    reference: str
    gates: Gates
    method: RunMethod
    dataset: Dataset | None = None
    flip_noise_floor: float | None = None
    """The reference's own share of fields changed against itself (summary.json's `noise_floor`)."""

    @cached_property
    def runtimes(self) -> list[RuntimeComparison]:
        options = comparison_options(self.gates, self.method.name, truncation=self.method.truncation)
        return runtime_comparisons(self.run, self.records, options, self.method.case_order, self.dataset)

    @cached_property
    def calibrations(self) -> list[CalibrationComparison]:
        options = comparison_options(self.gates, self.method.name, truncation=self.method.truncation)
        return calibration_comparisons(self.run, self.records, options, self.method.case_order)


def _judge(judging: _Judging, entry: VariantEntry) -> _Judged:
    if entry.status != "ok":
        return _skipped(entry)
    records, reference, gates, method = judging.records, judging.reference, judging.gates, judging.method
    is_reference = entry.name == reference
    own = records.get(entry.name, {})
    paired = [] if is_reference else paired_cases(records.get(reference, {}), own)
    order = method.case_order
    paired.sort(key=lambda c: order.get(c.case_id, len(order)))
    options = comparison_options(gates, method.name, truncation=method.truncation)
    comparison = compare_paired(paired, options=options) if paired else None
    agreement = None if is_reference else agreement_of(_in_order(own.values(), order), options)
    flips = summarize_flips(paired, options=options) if paired else None
    measured = measure(list(own.values()), entry, timed=judging.run.summary.latency_sample)
    capacity = capacity_inputs(judging.run, entry.name)
    runtime, runtime_base = runtime_evidence(judging.runtimes, entry.name)
    evidence = GateEvidence(
        measured=measured,
        comparison=comparison,
        gates=gates,
        is_reference=is_reference,
        method=method.name,
        embeddings=entry.embeddings,
        capacity=capacity,
        runtime=runtime,
        runtime_base=runtime_base,
        flips=flips,
        flip_noise_floor=judging.flip_noise_floor,
    )
    results = judge_variant(evidence)
    found = regressions(paired)
    section = _section(entry, measured, results, comparison, agreement, found)
    section.capacity = capacity.figure(gates)
    section.flips, section.flip_noise_floor = flips, None if is_reference else judging.flip_noise_floor
    return _Judged(
        name=entry.name, measured=measured, agreement=agreement, section=section, regressions=found
    )


def recommend(candidates: Iterable[tuple[str, bool, float | None]]) -> str | None:
    """The passing candidate with the smallest figure (a footprint, or an expected cost);
    unmeasured figures rank last.

    Args:
        candidates: (name, passes, footprint MiB or cost) in run order; ties keep run order.
    """
    passing = [
        (footprint is None, footprint or 0.0, i, name)
        for i, (name, ok, footprint) in enumerate(candidates)
        if ok
    ]
    return min(passing)[3] if passing else None


def decide(
    run_dir: str | Path,
    gates: Gates | None = None,
    *,
    prices: Prices | None = None,
    recommend_by: Ranking = "footprint",
) -> Decision:
    """Judge every variant of a run against the gates, write decision.json and decision.md.

    With `prices`, it has each variant's expected cost per 1,000 extractions and the chosen
    one's cost break-even signal; `recommend_by="cost"` ranks the passing variants by that cost.
    Also writes each variant's regression cases as a dataset under `regressions/<variant>/`.
    An incomplete run (`quantgate.rundir._completeness`) is decided on what its directory holds,
    and the decision says so (`run_complete`, `run_problems`, a notice atop decision.md).

    Returns:
        The decision as written to decision.json.

    Raises:
        DecisionError: The run has no results for its reference.
        UsageError: `recommend_by="cost"` without prices.
    """
    if recommend_by == "cost" and prices is None:
        raise UsageError("recommending by cost needs prices (--costs FILE)")
    gates = gates or Gates()
    run = load_run(run_dir)
    judging, completeness = _judging_of(run, gates)
    reference, method, dataset = judging.reference, judging.method, judging.dataset
    judged = [_judge(judging, entry) for entry in run.summary.variants]
    _give_forecasts(judging, judged)
    costs = None if prices is None else _costs(judging, judged, prices)
    chosen = recommend((j.name, j.section.passes, _rank(j, costs, recommend_by)) for j in judged)
    outcome = outcome_of(chosen, reference)
    decision = Decision(
        recommended=chosen,
        recommended_is_reference=chosen == reference,
        outcome=outcome,
        exit_status=EXIT_STATUS[outcome],
        run_complete=completeness.complete,
        run_problems=list(completeness.problems),
        reference=reference,
        gates=gates,
        variants={j.name: j.section for j in judged},
        rollback=_rollback(judging, judged, chosen, costs),
        regression_sets=export_regression_sets(
            run, dataset, {j.name: j.regressions for j in judged}, reference
        ),
        recommended_by=recommend_by,
        costs=costs,
        runtimes=judging.runtimes,
        calibrations=judging.calibrations,
        record=record_section(run, gates, method),
    )
    write_model(run.directory / DECISION_JSON, decision)
    (run.directory / DECISION_MD).write_text(render_decision(decision, summary=run.summary), encoding="utf-8")
    return decision


def _judging_of(run: Run, gates: Gates) -> tuple[_Judging, Completeness]:
    """What every variant of the run is judged with, and how complete the run is."""
    records, completeness, reference = _records_of(run)
    dataset = run_dataset(run)
    floor = run.summary.noise_floor
    judging = _Judging(
        run=run, records=records, reference=reference, gates=gates, method=method_of(run, dataset),
        dataset=dataset, flip_noise_floor=floor.fields_changed_share if floor is not None else None,
    )  # fmt: skip
    return judging, completeness


def _records_of(run: Run) -> tuple[dict[str, dict[str, CaseRecord]], Completeness, str]:
    """The run's latest record per variant and case, how complete the run is, and its reference.

    Raises:
        DecisionError: The run has no records of its reference.
    """
    reference = run.summary.reference
    line_problems: list[LineProblem] = []
    records = latest_records(run.records(problems=line_problems))
    completeness = completeness_of(run.summary, records, line_problems)
    if reference is None or reference not in records:
        raise DecisionError(
            f"{run.directory}: no records of the reference {reference!r}; nothing to compare with"
        )
    return records, completeness, reference


def _give_forecasts(judging: _Judging, judged: list[_Judged]) -> None:
    """Each candidate a sequential run left open gets its forecast (`quantgate.decide._forecast`)."""
    method = judging.method
    if method.name != "sequential":
        return
    forecasts = open_forecasts(
        judging.run, judging.records, judging.reference, judging.gates, truncation=method.truncation,
        round_size=method.round_size, case_order=method.case_order,
    )  # fmt: skip
    for item in judged:
        item.section.open = forecasts.get(item.name, item.section.open)


def _costs(judging: _Judging, judged: list[_Judged], prices: Prices) -> CostTable:
    """The cost table of the variants that were evaluated."""
    evaluated = {j.name for j in judged if j.measured is not None}
    summary = judging.run.summary
    return cost_table(
        entries={e.name: e for e in summary.variants if e.name in evaluated},
        records=judging.records,
        footprints_mb={j.name: j.measured.footprint_mb for j in judged if j.measured is not None},
        reference=judging.reference,
        prices=prices,
        confidence=judging.gates.confidence,
        load=summary.load,
        lines=judging.run.variants.by_name(),
        capacity_context=judging.gates.capacity_context,
    )


def _rank(judged: _Judged, costs: CostTable | None, by: Ranking) -> float | None:
    """What a variant is ranked by: its footprint, or its expected cost per 1,000 extractions."""
    if by == "cost":
        found = None if costs is None else costs.variants.get(judged.name)
        return None if found is None else found.total_per_1000
    return judged.measured.footprint_mb if judged.measured else None


def _rollback(
    judging: _Judging, judged: list[_Judged], chosen: str | None, costs: CostTable | None
) -> Rollback | None:
    item = next((j for j in judged if j.name == chosen), None)
    if item is None or item.measured is None:
        return None
    signals = rollback_signals(measured=item.measured, agreement=item.agreement, gates=judging.gates)
    if costs is not None:
        own = judging.records.get(item.name, {})
        signal = break_even_signal(table=costs, variant=item.name, reference=judging.reference, records=own)
        signals += [signal] if signal is not None else []
    return Rollback(variant=item.name, window_cases=item.measured.cases, signals=signals)


def load_decision(run_dir: str | Path) -> Decision:
    """Read a run's decision.json."""
    return read_decision(Path(run_dir))
