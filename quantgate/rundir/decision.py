"""Typed decision.json: the recommendation, every gate's verdict with its evidence, the
rollback signals, the regression sets, and the record of how and on what it was decided.

`quantgate.decide` builds it; production (`load_chosen`, the online guard), the report and
explore read it through this model.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evaluators.comparison import AgreementSummary, Comparison, Regression
from evaluators.statistics import Interval
from quantgate.inputs.gates import Gates
from quantgate.rundir.files import DECISION_FORMAT_VERSION
from quantgate.rundir.lines import RunFileModel
from quantgate.rundir.summary import DatasetInfo, RunOptionsInfo, TokenFidelityEntry, VariantMetadata

GateStatus = Literal["pass", "fail", "inconclusive", "not_measured"]


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


class VariantDecision(RunFileModel):
    """One variant's verdict (a skipped variant has only its status, error and no gates)."""

    status: Literal["ok", "skipped"]
    error: str | None = None
    passes: bool
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
    token_fidelity: TokenFidelityEntry | None = None
    token_fidelity_missing: str | None = None
    regressions: list[Regression] = Field(default_factory=list)


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

    format_version: Literal[1] = DECISION_FORMAT_VERSION
    recommended: str | None = Field(description="The variant to deploy; None when none passed.")
    recommended_is_reference: bool
    exit_status: int = Field(description="0 when a variant passed, 3 when none did.")
    reference: str
    gates: Gates
    variants: dict[str, VariantDecision]
    rollback: Rollback | None
    regression_sets: dict[str, RegressionSet] = Field(default_factory=dict)
    record: DecisionRecord
