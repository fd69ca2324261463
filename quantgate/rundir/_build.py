"""The builders of the run files: one place that turns what a run computed into each model.

`quantgate run` writes through these; so do the load test and the token-fidelity step for
the parts they own. Readers never rebuild a file: they parse it (`quantgate.rundir._store`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from evaluators.baselines import BaselineScores
from evaluators.verification import case_obtained
from graphs.evaluation import CaseOutcome, VariantSummary
from quantgate._hardware import hardware, package_version
from quantgate.inputs._dataset import Dataset
from quantgate.inputs._variants import Variant
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._summary import (
    BaselineFieldEntry,
    BaselinesInfo,
    DatasetInfo,
    ExamplesInfo,
    RunOptionsInfo,
    RunSummary,
    VariantEntry,
    VariantMetadata,
)


def case_record(variant: str, outcome: CaseOutcome) -> CaseRecord:
    """One line of records.jsonl: raw output, record, per-field scores, timings, tokens, error."""
    result, score, latency = outcome.extraction, outcome.score, outcome.latency
    fields = score.fields.fields if score.fields else {}
    agreement = outcome.agreement
    return CaseRecord(
        variant=variant,
        case_id=outcome.case_id,
        tags=list(score.tags),
        raw=result.raw,
        record=result.record,
        valid=result.valid,
        format_valid=score.format.valid if score.format else None,
        attempts=len(result.attempts),
        retries=result.retries,
        validation_errors=result.validation_errors,
        error=result.error,
        error_kind=outcome.error_kind,
        truncated=result.truncated,
        input_tokens_dropped=result.input_tokens_dropped,
        field_accuracy=score.fields.score if score.fields else None,
        fields={name: f.score for name, f in fields.items()},
        outcomes={name: f.outcome for name, f in fields.items()},
        agreement=agreement.score if agreement else None,
        agreement_fields={n: f.score for n, f in agreement.fields.items()} if agreement else None,
        ttft_s=latency.ttft_s,
        total_s=latency.total_s,
        input_tokens=latency.input_tokens,
        output_tokens=latency.output_tokens,
        prompt_tokens_per_s=latency.prompt_tokens_per_s,
        generation_tokens_per_s=latency.generation_tokens_per_s,
        attempt_timings=[dict(a) for a in result.attempts],
        obtained=case_obtained(result.attempts),
    )


def dataset_info(
    dataset: Dataset, cases: int, *, full: bool = True, copy_sha256: dict[str, str] | None = None
) -> DatasetInfo:
    """The summary's `dataset` part: which file, its hash, how many of its cases were used, and
    the hashes of the run's copy of it (`copy_sha256`: file name -> sha256), and its task kind."""
    return DatasetInfo(
        name=dataset.name,
        path=str(dataset.path),
        sha256=dataset.sha256,
        cases=cases,
        cases_in_dataset=len(dataset.cases) if full else None,
        labeled=dataset.labeled if full else None,
        copy_sha256=copy_sha256,
        calibration_cases_left_out=list(dataset.left_out),
        task=dataset.task.kind,
    )


def baselines_info(scores: BaselineScores) -> BaselinesInfo:
    """The summary's `baselines` part: each trivial baseline's micro and per-field accuracy."""
    null, majority = scores.always_null, scores.majority
    return BaselinesInfo(
        cases=scores.cases,
        always_null=null.field_accuracy,
        majority=majority.field_accuracy,
        fields={
            name: BaselineFieldEntry(always_null=null.fields.get(name), majority=majority.fields.get(name))
            for name in dict.fromkeys([*null.fields, *majority.fields])
        },
    )


def new_summary(
    *,
    run_id: str,
    dataset: DatasetInfo,
    reference: str | None = None,
    options: RunOptionsInfo | None = None,
    examples: ExamplesInfo | None = None,
    baselines: BaselinesInfo | None = None,
    kind: Literal["evaluation", "load"] = "evaluation",
) -> RunSummary:
    """summary.json of a run that is starting: no variant yet."""
    return RunSummary.model_validate(
        {
            "run_id": run_id,
            "quantgate_version": package_version("quantgate"),
            "status": "running" if kind == "evaluation" else "complete",
            "kind": kind,
            "dataset": dataset,
            "reference": reference,
            "options": options,
            "examples": examples,
            "baselines": baselines,
            "hardware": hardware(),
        }
    )


def missing_cases(cases: Sequence[str], recorded: Iterable[str], *, stopped: str | None = None) -> list[str]:
    """The cases of a variant's list with no record, in its order.

    Args:
        cases: The case ids the variant was to evaluate, in run order.
        recorded: The case ids it wrote a record of.
        stopped: Why its evaluation stopped before the last case by a rule of the run (a
            sequential gate settled, its budget spent); the cases after it were not due, so
            none is missing. None: it was to evaluate them all.
    """
    if stopped:
        return []
    done = set(recorded)
    return [case_id for case_id in cases if case_id not in done]


def variant_entry(
    variant: Variant,
    summary: VariantSummary,
    figures: Mapping[str, Any],
    *,
    is_reference: bool,
    quantization: str | None,
    cases: Sequence[str],
    recorded: Iterable[str],
    stopped: str | None = None,
) -> VariantEntry:
    """A variant's summary entry: the evaluation graph's summary of it and the run's own figures.

    Args:
        variant: The variant.
        summary: The evaluation graph's summary of it (its evaluator nodes' parts).
        figures: What the run adds (`VariantEntry`'s own fields: throughput, sequential, resumed
            and cached cases, load times); a figure of `summary` given again is refused.
        is_reference: It is the run's reference.
        quantization: Its quantization, as declared or as its backend reported it.
        cases: The case ids it was to evaluate, in run order.
        recorded: The case ids it wrote a record of.
        stopped: Why a rule of the run stopped it before its last case (see `missing_cases`).
    """
    missing = missing_cases(cases, recorded, stopped=stopped)
    return VariantEntry.extending(
        summary,
        **figures,
        name=variant.name,
        backend=variant.backend,
        quantization=quantization,
        is_reference=is_reference,
        status="ok",
        complete=not missing,
        missing_cases=missing,
    )


def skipped_entry(
    variant: Variant, error: str, *, is_reference: bool, cases: Sequence[str] = ()
) -> VariantEntry:
    """The summary entry of a variant that could not be evaluated (`cases`: those it was to evaluate)."""
    return VariantEntry(
        name=variant.name,
        backend=variant.backend,
        quantization=variant.quantization,
        is_reference=is_reference,
        status="skipped",
        error=error,
        complete=False,
        missing_cases=list(cases),
    )


def planned_metadata(variant: Variant) -> VariantMetadata:
    """A variant's line in variants.json before it is evaluated: its spec only (no runtime, no
    hardware, no error), so the file lists every variant of the run from its start."""
    return VariantMetadata.model_validate(variant.record())


def variant_metadata(
    variant: Variant, *, runtime: Mapping[str, Any] | None = None, error: str | None = None
) -> VariantMetadata:
    """A variant's line in variants.json: its spec, what served it (or why nothing did), the machine."""
    return VariantMetadata.model_validate(
        {
            **variant.record(),
            "runtime": dict(runtime) if runtime is not None else None,
            "hardware": hardware() if error is None else None,
            "error": error,
        }
    )
