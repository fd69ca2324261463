"""Typed decision.json: the recommendation, every gate's verdict with its evidence, the
rollback signals, the regression sets, and the record of how and on what it was decided.

`quantgate.decide` builds it; production (`load_chosen`, the online guard), the report and
explore read it through this model.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from evaluators.comparison import AgreementSummary, Comparison, Regression
from evaluators.costs import VariantCosts
from evaluators.flips import FlipSummary
from evaluators.machines import MachineCost
from evaluators.sequential import Forecast
from evaluators.statistics import Interval
from quantgate.capacity._shape_record import CapacityFigure
from quantgate.inputs._gates import Gates
from quantgate.rundir._calibration_comparison import CalibrationComparison
from quantgate.rundir._embedding_files import EmbeddingEntry
from quantgate.rundir._files import DECISION_FORMAT_VERSION
from quantgate.rundir._lines import RunFileModel
from quantgate.rundir._runtime_comparison import RuntimeComparison
from quantgate.rundir._summary import (
    DatasetInfo,
    RunOptionsInfo,
    SequentialEntry,
    TokenFidelityEntry,
    VariantMetadata,
)

GateStatus = Literal["pass", "fail", "inconclusive", "not_measured"]

VariantVerdict = Literal["pass", "fail", "inconclusive", "skipped"]
"""pass: every gate passed; fail: at least one gate failed; inconclusive: none failed, but at
least one could not be judged (too few cases, an interval straddling the threshold, not
measured); skipped: the variant did not run."""

Outcome = Literal["candidate_passes", "keep_reference", "none_passes"]

ExitReason = Outcome | Literal["incomplete_run"]
"""Why `quantgate decide` exits: the decision's outcome, or a run it would not decide on."""

EXIT_STATUS: dict[ExitReason, int] = {
    "candidate_passes": 0,
    "keep_reference": 4,
    "none_passes": 3,
    "incomplete_run": 5,
}
"""The exit status of `quantgate run` and `quantgate decide` for each outcome (2: usage error,
1: failure, set by the CLI): 0 a quantized candidate passes and is recommended; 4 keep the
reference, no candidate is shown safe; 3 nothing passes, not even the reference. 5: `decide`
refused an incomplete run (`quantgate.rundir._completeness`; `--allow-incomplete` decides on
what it holds, with the outcome's status)."""


def variant_verdict(status: str, gates: list[GateResult]) -> VariantVerdict:
    """A variant's verdict from its gates (see `VariantVerdict`)."""
    if status != "ok":
        return "skipped"
    if any(g.status == "fail" for g in gates):
        return "fail"
    return "pass" if gates and all(g.status == "pass" for g in gates) else "inconclusive"


def outcome_of(recommended: str | None, reference: str) -> Outcome:
    """What a decision that recommends `recommended` (None: nothing passed) means."""
    if recommended is None:
        return "none_passes"
    return "keep_reference" if recommended == reference else "candidate_passes"


class GateResult(RunFileModel):
    """One gate's verdict for one variant, with its evidence.

    Attributes:
        gate: The gate (`max_accuracy_drop`, `max_slice_accuracy_drop[lang:es]`, ...).
        status: pass, fail, inconclusive (the data cannot tell) or not_measured.
        value: The measured figure (a delta for accuracy gates).
        threshold: The gate's threshold, in the same unit and sign as `value`.
        interval: Confidence interval of `value`, when there is one.
        evidence: One sentence a reviewer can check.
    """

    model_config = RunFileModel.model_config | {"frozen": True}

    gate: str
    status: GateStatus
    value: float | None
    threshold: float
    interval: Interval | None = None
    evidence: str


class RollbackSignal(RunFileModel):
    """Roll back when `metric` goes `direction` `threshold`.

    Attributes:
        metric: What to watch (`format_validity`, `agreement_with_reference[date]`, ...).
        direction: "below" or "above".
        threshold: The trigger.
        measured: The figure the run measured.
        derivation: How the threshold follows from the measurement and the gates.
    """

    model_config = RunFileModel.model_config | {"frozen": True}

    metric: str
    direction: Literal["below", "above"]
    threshold: float
    measured: float
    derivation: str


class MeasuredFigures(RunFileModel):
    """The figures the absolute gates judged, recomputed from the records."""

    cases: int
    format_validity: float | None
    error_rate: float | None
    latency_s_p95: float | None
    memory_mb: float | None
    memory_source: str


class OpenForecast(RunFileModel):
    """What a candidate left open (its accuracy gates unsettled when the run ended) still needs.

    Attributes:
        forecast: How many more paired cases its differences so far suggest, by resampling.
        cases_left: The run's cases it has not evaluated.
        seconds_per_case: Its case-evaluation seconds per case in the run.
        reference_seconds_per_case: The reference's.
        minutes: The median forecast in minutes at those rates (None: a rate not measured).
        message: The forecast in one sentence.
    """

    forecast: Forecast
    cases_left: int
    seconds_per_case: float | None
    reference_seconds_per_case: float | None
    minutes: float | None
    message: str


class VariantDecision(RunFileModel):
    """One variant's verdict (a skipped variant has only its status, error and no gates)."""

    status: Literal["ok", "skipped"]
    error: str | None = None
    passes: bool
    verdict: VariantVerdict = Field(description="pass, fail (a gate failed), inconclusive or skipped.")
    is_reference: bool = False
    quantization: str | None = None
    footprint_mb: float | None = Field(default=None, description="What the recommendation ranks by (MiB).")
    footprint_source: str | None = None
    measured: MeasuredFigures | None = None
    gates: list[GateResult] = Field(default_factory=list)
    comparison: Comparison | None = Field(
        default=None, description="Paired with the reference on labeled cases."
    )
    agreement: AgreementSummary | None = None
    flips: FlipSummary | None = Field(
        default=None,
        description="Fields whose answer differs from the reference's on the labeled paired cases, by kind, "
        "with intervals (evaluators.flips); None: the reference, or nothing paired.",
    )
    flip_noise_floor: float | None = Field(
        default=None,
        description="The reference's own flip share against itself, which the flip gate is read against "
        "(None: not measured).",
    )
    token_fidelity: TokenFidelityEntry | None = None
    token_fidelity_missing: str | None = None
    embeddings: EmbeddingEntry | None = Field(
        default=None, description="Embedding figures against the reference (`run --embeddings`)."
    )
    sequential: SequentialEntry | None = Field(
        default=None, description="In a sequential run: settled pass/fail or not, after how many cases."
    )
    open: OpenForecast | None = Field(
        default=None,
        description="A sequential run's candidate whose accuracy gates were left unsettled: the forecast "
        "of what settling them needs.",
    )
    regressions: list[Regression] = Field(default_factory=list)
    capacity: CapacityFigure | None = Field(
        default=None,
        description="Parallel sequences the memory model fits at the gates' capacity_context and "
        "capacity_memory_gib (2 GiB when unset), from variants.json's record; None: no record.",
    )


class Rollback(RunFileModel):
    """What production must watch for the chosen variant."""

    variant: str
    window_cases: int = Field(description="Judge rates over at least this many production cases.")
    signals: list[RollbackSignal]


class RegressionSet(RunFileModel):
    """Where a variant's regression cases were exported, as a dataset."""

    path: str | None
    cases: int
    error: str | None = None


class StatisticsRecord(RunFileModel):
    """How the statistics the gates judge were computed."""

    accuracy_delta_interval: str
    mcnemar: str
    equivalence_margin: float
    proportion_interval: str


Ranking = Literal["footprint", "cost"]
"""What the recommendation ranks the passing variants by: the smallest memory footprint (the
default), or the cheapest expected cost per 1,000 extractions (`--recommend cost`, with `--costs`)."""


class CostTable(RunFileModel):
    """The expected cost per 1,000 extractions of each evaluated variant, under a team's prices."""

    currency: str = Field(description="The prices' currency, as the costs file names it (may be empty).")
    prices: dict[str, Any] = Field(description="The costs file's values, as read.")
    method: str = Field(description="How each ingredient is computed from the run's records.")
    node_time: dict[str, str] = Field(
        default_factory=dict,
        description="Per variant, where its node time per extraction comes from: a load level that serves "
        "the traffic (`run --load`), or the run's own cases.",
    )
    variants: dict[str, VariantCosts] = Field(
        description="Per variant: each ingredient (review, retries, node, memory, energy) with its "
        "paired delta and interval against the reference, and the total."
    )
    machines: dict[str, MachineCost] = Field(
        default_factory=dict,
        description="Per variant, with `request_rate_rps` and `machine_price_per_hour`: the machines its "
        "goodput needs for that rate and their cost, with the interval from the goodput's (not in the "
        "total). Empty: the prices name no machine key, or a decision before format 7.",
    )


class DecisionRecord(RunFileModel):
    """How, when and on what the decision was made."""

    run_id: str
    run_status: str
    run_quantgate_version: str | None
    decided_with_quantgate_version: str | None
    decided_at: str
    dataset: DatasetInfo
    hardware: dict[str, Any] = Field(default_factory=dict)
    options: RunOptionsInfo | None = None
    variants: dict[str, VariantMetadata] = Field(default_factory=dict)
    statistics: StatisticsRecord


class Decision(RunFileModel):
    """decision.json."""

    older_format_versions: ClassVar[tuple[int, ...]] = (2, 3, 4, 5, 6, 7, 8)
    format_version: Literal[9] = DECISION_FORMAT_VERSION
    recommended: str | None = Field(description="The variant to deploy; None when none passed.")
    recommended_is_reference: bool
    outcome: Outcome = Field(
        description="candidate_passes (a quantized variant is recommended), keep_reference, none_passes."
    )
    exit_status: int = Field(description="The CLI's exit status for the outcome: 0, 4 or 3 (`EXIT_STATUS`).")
    run_complete: bool | None = Field(
        default=None,
        description="The run directory held the whole run when decided; None: decided before format 3 "
        "recorded it.",
    )
    run_problems: list[str] = Field(
        default_factory=list,
        description="Why the run is incomplete (`quantgate.rundir._completeness`), when it is: the "
        "decision is of what the run directory held.",
    )
    reference: str
    gates: Gates
    variants: dict[str, VariantDecision]
    rollback: Rollback | None
    regression_sets: dict[str, RegressionSet] = Field(default_factory=dict)
    recommended_by: Ranking = Field(
        default="footprint", description="What the passing variants were ranked by (`Ranking`)."
    )
    costs: CostTable | None = Field(
        default=None, description="Expected costs, when prices were given (`--costs`)."
    )
    runtimes: list[RuntimeComparison] = Field(
        default_factory=list,
        description="Each variant against the variant of the same model file (sha256) on another backend "
        "(`quantgate.rundir._runtime_comparison`); empty: no such pair, or decided before it was recorded.",
    )
    calibrations: list[CalibrationComparison] = Field(
        default_factory=list,
        description="Each calibrated variant against the plain variant of its type "
        "(`quantgate.rundir._calibration_comparison`); empty: no such twin, or decided before "
        "decision.json 9.",
    )
    record: DecisionRecord
