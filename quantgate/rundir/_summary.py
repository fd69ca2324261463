"""Typed summary.json and variants.json: the run, one entry per variant (the load section is
`quantgate.rundir._loadtest_section`).

A figure that was not measured is None, never 0. The per-variant figures are those the
evaluation graph's evaluator nodes computed; `decide` recomputes what it judges from
records.jsonl instead of trusting these.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal

from pydantic import Field

from evaluators.fidelity import TokenFidelitySummary
from evaluators.flips import FlipSummary
from evaluators.noise_floor import NoiseFloor
from evaluators.paired_latency import LatencyAgainstReference
from graphs.evaluation import VariantSummary
from quantgate.capacity._shape_record import MemoryModelCheck
from quantgate.inputs._examples import ExamplesSource
from quantgate.rundir._embedding_files import EmbeddingEntry
from quantgate.rundir._files import SUMMARY_FORMAT_VERSION
from quantgate.rundir._lines import RunFileModel, VariantStatus
from quantgate.rundir._loadtest_section import LoadSection
from quantgate.rundir._older_summaries import upgraded_summary
from quantgate.rundir._round_loads import RoundLoadEntry
from quantgate.rundir._run_options import RunMethod as RunMethod
from quantgate.rundir._run_options import RunOptionsInfo as RunOptionsInfo
from quantgate.rundir._variants_file import Placement as Placement
from quantgate.rundir._variants_file import ShardPlacement as ShardPlacement
from quantgate.rundir._variants_file import VariantMetadata as VariantMetadata
from quantgate.rundir._variants_file import VariantsFile as VariantsFile


class _FidelityMeasurement(RunFileModel):
    """How token fidelity was measured: the keys of its entry before the figures."""

    method: str
    records: str = Field(description="The file with the per-case figures (fidelity.jsonl).")


class TokenFidelityEntry(TokenFidelitySummary, _FidelityMeasurement):
    """A variant's token fidelity against the reference, pooled over positions
    (`evaluators.fidelity.TokenFidelitySummary`)."""

    @classmethod
    def of(cls, summary: TokenFidelitySummary, *, method: str, records: str) -> TokenFidelityEntry:
        """The entry for a pooled summary."""
        return cls.extending(summary, method=method, records=records)


class _NoiseFloorRun(RunFileModel):
    """How the noise floor was measured: the keys of its entry before the figures."""

    method: str
    records: str = Field(description="The file with the per-case answers (noise_floor.jsonl).")
    first_concurrency: int | None = Field(
        default=None, description="Cases in flight when the reference first answered (its slots)."
    )
    rerun_concurrency: int = Field(default=1, description="Cases in flight in the rerun.")
    first_from: list[str] = Field(
        default_factory=list,
        description="The runs whose cached answers were the first ones (the reference cache's key holds "
        "the model file's sha256, so they are the same model file's); empty: all this run's.",
    )
    noise_floor_s: float | None = Field(
        default=None,
        description="Seconds the arm took (the rerun, and the KLD when measured), apart from the budget's "
        "case evaluation.",
    )
    kld_method: str | None = Field(default=None, description="How the KLD was measured (None: not measured).")
    kld_missing: str | None = Field(default=None, description="Why the KLD is not measured.")


class NoiseFloorEntry(NoiseFloor, _NoiseFloorRun):
    """The runtime's own noise floor: the reference against itself (`evaluators.noise_floor.NoiseFloor`)."""


class SequentialEntry(RunFileModel):
    """How a variant's sequential evaluation ended (`quantgate.evaluate.scheduler._stopping_rule`).

    Attributes:
        settled: "pass" or "fail" when its accuracy gates were settled, None when it stopped unsettled.
        paired_cases: Paired labeled cases when it stopped (for the reference: its labeled cases).
        cases: Cases it evaluated.
        stopped: "settled" (for the reference: every candidate was settled), "budget" (the next
            round would not have fitted in `--budget`, or it was spent inside a round: the cases
            finished by then are kept), or "cases" (the run's cases, or the reference's, were used up).
    """

    settled: Literal["pass", "fail"] | None
    paired_cases: int
    cases: int
    stopped: Literal["settled", "budget", "cases"]


class _VariantHead(RunFileModel):
    """Which variant, and whether it was evaluated: the first keys of its entry."""

    name: str
    backend: str
    quantization: str | None = None
    is_reference: bool = False
    status: VariantStatus = "ok"
    error: str | None = None
    complete: bool | None = Field(
        default=None,
        description="Every case of the variant's list has a record: the run's cases (after the "
        "reference, the cases the reference ran), less those a sequential run stopped before (settled, "
        "or its budget spent). False for a skipped variant. None: a summary of format 1, which did not "
        "record it.",
    )
    missing_cases: list[str] = Field(
        default_factory=list,
        description="The cases of the variant's list with no record, in run order (a skipped variant: all).",
    )


class _Throughput(RunFileModel):
    """What score_latency's summary leaves to the run: cases side by side."""

    concurrency: int | None = Field(
        default=None, description="Cases in flight at once (slots of an embedded variant)."
    )
    wall_s: float | None = Field(
        default=None, description="From the first case's start to the last case's end."
    )
    throughput_tokens_per_s: float | None = Field(
        default=None, description="Output tokens of all cases (repairs included) / wall_s."
    )


class VariantEntry(VariantSummary, _Throughput, _VariantHead):  # the keys in the file: the last base's first
    """One variant's entry in summary.json (a skipped variant has only its name and error).

    Its figures are the evaluation graph's `VariantSummary` (whose bases are the evaluators' own
    types), each figure None when not measured, and what the run adds.
    """

    cases: int | None = None  # type: ignore[assignment]  # a skipped variant scored none
    cases_timed: int | None = None  # type: ignore[assignment]  # ... and timed none
    # against the reference, after every variant
    field_accuracy_delta: float | None = Field(
        default=None,
        description="Paired accuracy delta against the reference on the labeled cases both have "
        "(evaluators.comparison.accuracy_delta), the figure the decision judges.",
    )
    latency_against_reference: LatencyAgainstReference | None = Field(
        default=None,
        description="Per-case latency minus the reference's over the cases both decoded in full in this "
        "run (the latency sample): `pairs`, `confidence`, and for `total_s`, `ttft_s` and "
        "`generation_tokens_per_s` the median difference with its exact sign-test interval (`low`, "
        "`high`, `coverage`; null with too few pairs) (evaluators.paired_latency). "
        "None: the reference, or a run written before it.",
    )
    flips: FlipSummary | None = Field(
        default=None,
        description="Fields whose answer differs from the reference's on the same labeled cases (right to "
        "wrong, wrong to right, wrong to another wrong; evaluators.flips), each share with the interval "
        "the decision judges by; None: the reference, or nothing paired.",
    )
    baseline_accuracy: float | None = Field(
        default=None,
        description="The best trivial baseline's field accuracy over this variant's labeled cases: "
        "always null or the majority value, whichever scores higher (evaluators.baselines).",
    )
    token_fidelity: TokenFidelityEntry | None = None
    verification_missing: str | None = Field(
        default=None,
        description="Why this candidate decoded every case instead of verifying the reference's answers "
        "(verification off, or a backend that cannot read given answers); None: it verified, or it is the "
        "reference.",
    )
    token_fidelity_missing: str | None = Field(
        default=None, description="Why token fidelity is not measured."
    )
    runtime_token_fidelity: TokenFidelityEntry | None = Field(
        default=None,
        description="Token fidelity against the base of the variant's runtime pair (the same model file, "
        "same sha256, on the embedded backend: `runtime_token_fidelity_base`): the base's full logits cut "
        "to their top-k against the server's top-k, along the base's outputs, the prompt rendered by "
        "quantgate; a top-k lower bound of the KLD. None: the variant is no such pair's other member, "
        "or see `runtime_token_fidelity_missing`.",
    )
    runtime_token_fidelity_base: str | None = Field(
        default=None, description="The variant `runtime_token_fidelity` is measured against."
    )
    runtime_token_fidelity_missing: str | None = Field(
        default=None, description="Why the variant's runtime pair's token fidelity is not measured."
    )
    FIDELITY_KEYS: ClassVar[tuple[str, ...]] = (
        "token_fidelity",
        "token_fidelity_missing",
        "runtime_token_fidelity",
        "runtime_token_fidelity_base",
        "runtime_token_fidelity_missing",
    )
    """The keys the token-fidelity step fills (kept as they are when a complete run goes on)."""
    sequential: SequentialEntry | None = Field(
        default=None, description="How a sequential run ended for this variant (None: a fixed sample)."
    )
    embeddings: EmbeddingEntry | None = Field(
        default=None, description="Embedding figures against the reference (`quantgate run --embeddings`)."
    )
    embeddings_error: str | None = Field(
        default=None, description="Why the variant's embeddings were not measured."
    )
    resumed_cases: int | None = Field(
        default=None,
        description="Cases of this variant a resumed run read back from records.jsonl instead of "
        "running them again (None: none, or a run that was not resumed while this variant ran). Its "
        "memory, wall_s and throughput_tokens_per_s are of the part run after the resume.",
    )
    cached_cases: int | None = Field(
        default=None,
        description="Cases of the reference taken from the reference cache (records marked "
        "`cached_from`) instead of evaluated in this run (None: none).",
    )
    load_s: float | None = Field(
        default=None,
        description="Seconds to open the variant (read its weights, reach its server), the first time "
        "in this run; kept out of every case figure.",
    )
    cold_first_token_s: float | None = Field(
        default=None,
        description="Time to the first token of the warm-up prompt after loading (the prompt prefix "
        "read once; a server loading the model); kept out of every case figure.",
    )
    loads: int | None = Field(
        default=None,
        description="Times the variant was loaded in this run (more than 1 when memory could not "
        "hold every variant at once; 0 for a reference served from the cache).",
    )
    memory_model_check: MemoryModelCheck | None = Field(
        default=None,
        description="The memory model's predicted RSS beside the measured peak (memory_mb), with the "
        "error. None: no prediction (not an embedded GGUF, e.g. a server variant) or no measured peak.",
    )


COPY_SHA256_SINCE: Final = 6
"""The summary.json format that added `dataset.copy_sha256`, which every evaluation run writes from
then on: a summary of this format or later without it had it removed, and `--resume` refuses it
(the run's copy of its dataset could no longer be checked)."""


class DatasetInfo(RunFileModel):
    """Which dataset the run read, and how much of it."""

    name: str
    path: str
    sha256: str
    cases: int
    cases_in_dataset: int | None = None
    labeled: bool | None = None
    copy_sha256: dict[str, str] | None = Field(
        default=None,
        description="The sha256 of each data file of the run's copy of its dataset (dataset/: "
        "schema.json, cases.jsonl, examples.jsonl) as the run wrote it; `--resume` refuses a copy "
        "changed since. None: written before summary format 6.",
    )
    calibration_cases_left_out: list[str] | None = Field(
        default=None,
        description="Ids of the dataset's cases the run left out of scoring because they are calibration "
        "cases of its calibrated variants (`quantgate.evaluate._calibration_holdout`); empty: none. None: "
        "written before summary format 15.",
    )
    task: str | None = Field(
        default=None,
        description="The dataset's task kind (its task.json, docs/tasks.md): extraction, classification, "
        "tool_calling or generation. None: written before task kinds existed (extraction).",
    )


class BaselineFieldEntry(RunFileModel):
    """One field's accuracy under each trivial baseline."""

    always_null: float | None
    majority: float | None


class BaselinesInfo(RunFileModel):
    """What predictors that never read the text score (`evaluators.baselines`), as a variant is scored.

    Attributes:
        cases: Labeled cases they were scored on.
        always_null: Micro field accuracy of the record with every top-level property null.
        majority: Micro field accuracy of the record of each top-level property's most common
            gold value.
        fields: Per field (dotted name), each baseline's accuracy.
    """

    cases: int = Field(description="Labeled cases the baselines were scored on.")
    always_null: float | None = Field(
        description="Micro field accuracy of the record with every top-level property null."
    )
    majority: float | None = Field(
        description="Micro field accuracy of the record of each top-level property's most common gold value."
    )
    fields: dict[str, BaselineFieldEntry] = Field(
        default_factory=dict, description="Per field (dotted name), each baseline's accuracy."
    )


class ExamplesInfo(RunFileModel):
    """Where the run's few-shot examples came from (`quantgate.inputs._examples`).

    Attributes:
        source: "dataset" (examples.jsonl), "cases" (labeled cases taken as examples and left
            out of scoring) or "none" (a zero-shot prompt).
        ids: The examples' ids.
    """

    source: ExamplesSource
    ids: list[str] = Field(default_factory=list)


class RunSummary(RunFileModel):
    """summary.json: the run, and one entry per variant in run order (reference first).

    Written once when the run starts (status `running`), again after each variant, and last
    with status `complete` or `interrupted`: a summary still `running` was left by a process
    that died (or is still going).
    """

    older_format_versions: ClassVar[tuple[int, ...]] = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14)
    format_version: Literal[15] = SUMMARY_FORMAT_VERSION
    run_id: str
    quantgate_version: str | None
    status: Literal["running", "complete", "interrupted"]
    kind: Literal["evaluation", "load"] = "evaluation"
    dataset: DatasetInfo
    reference: str | None = None
    options: RunOptionsInfo | None = None
    examples: ExamplesInfo | None = Field(
        default=None, description="The few-shot examples; None in runs written before it was recorded."
    )
    baselines: BaselinesInfo | None = Field(
        default=None,
        description="Field accuracy of the trivial baselines (always null, majority value) on the "
        "run's labeled cases (None figures without one); None in runs written before it was recorded.",
    )
    hardware: dict[str, Any] = Field(default_factory=dict)
    evaluation_s: float | None = Field(
        default=None,
        description="Seconds of case evaluation spent so far, all variants together (what --budget "
        "counts; loads and warm-ups not included). None: not counted (a run on Ray, whose variants run "
        "side by side, or a run written before it was recorded).",
    )
    variants: list[VariantEntry] = Field(default_factory=list)
    load: LoadSection | None = None
    noise_floor: NoiseFloorEntry | None = Field(
        default=None,
        description="The runtime's own noise floor: the reference's answers to a sample of cases rerun one "
        "case at a time, against its first answers (None: not measured, see `noise_floor_missing`).",
    )
    noise_floor_missing: str | None = Field(default=None, description="Why the noise floor is not measured.")
    latency_sample: list[str] | None = Field(
        default=None,
        description="The cases every variant decoded in full in this run, whose timings make every latency "
        "figure and the p95 latency gate (the run's first `latency_cases`, in run order, verification on "
        "or off); None: a run written before it was recorded (every case timed).",
    )
    machine_load: list[RoundLoadEntry] | None = Field(
        default=None,
        description="The machine's load while each variant ran each round (quantgate.rundir._round_loads): "
        "other processes' CPU share, steal, load average, busy, read on the node it ran on. None: not "
        "recorded (a Ray run evaluated whole, task by task; a run written before it was recorded).",
    )

    @classmethod
    def upgraded(cls, value: dict[str, Any], version: int) -> dict[str, Any]:
        """A summary of an older format in this format's shape (`quantgate.rundir._older_summaries`)."""
        return upgraded_summary(value, version)

    def entry(self, name: str) -> VariantEntry | None:
        """The entry of the variant called `name`."""
        return next((v for v in self.variants if v.name == name), None)
