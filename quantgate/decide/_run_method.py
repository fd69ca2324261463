"""How a run sampled and judged its cases (`RunMethod`), the dataset it evaluated, and the decision's
record of the run: what `decide` reads of a run beyond its records."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from evaluators.comparison import IntervalMethod
from quantgate._hardware import package_version
from quantgate.evaluate.scheduler._stopping_rule import DEFAULT_ROUND_SIZE
from quantgate.inputs._dataset import Dataset, DatasetError, load_dataset
from quantgate.inputs._gates import Gates
from quantgate.rundir._decision import DecisionRecord, StatisticsRecord
from quantgate.rundir._files import DATASET_DIR
from quantgate.rundir._store import Run
from quantgate.rundir._summary import RunOptionsInfo

__all__ = ["RunMethod", "method_of", "record_section", "run_dataset"]


@dataclass(frozen=True, kw_only=True)
class RunMethod:
    """How the run sampled its cases, which sets how the accuracy deltas are judged."""

    name: IntervalMethod
    truncation: float
    case_order: Mapping[str, int]  # the run's case order: a betting interval depends on it
    round_size: int


def run_dataset(run: Run) -> Dataset | None:
    """The cases the run evaluated: its own copy, else the source if its hash still matches."""
    copy = run.directory / DATASET_DIR
    try:
        if copy.is_dir():
            return load_dataset(copy, skip_invalid_cases=True)
        dataset = load_dataset(run.summary.dataset.path, skip_invalid_cases=True)
    except (DatasetError, FileNotFoundError):
        return None
    return dataset if dataset.sha256 == run.summary.dataset.sha256 else None


_SEQUENTIAL_INTERVAL = (
    "anytime-valid confidence sequence of the mean paired per-case difference, over the cases in the "
    "run's order, {confidence:.0%}: hedged betting (Waudby-Smith & Ramdas, JRSSB 2023), truncation "
    "{truncation:g}, checked after every round of {round_size} cases; each candidate stopped once its "
    "accuracy gates were settled (`sequential` per variant: the case count); the paired percentile "
    "bootstrap beside it is descriptive"
)
_FIXED_INTERVAL = (
    "betting confidence interval for a fixed sample of the mean paired per-case difference, over the cases "
    "in the run's order, {confidence:.0%}: hedged betting (Waudby-Smith & Ramdas, JRSSB 2023), truncation "
    "{truncation:g}, valid at any number of cases; the paired percentile bootstrap beside it is descriptive"
)


def record_section(run: Run, gates: Gates, method: RunMethod) -> DecisionRecord:
    """The decision's record of the run: id, versions, dataset, hardware, options, variants, statistics."""
    summary = run.summary
    return DecisionRecord(
        run_id=summary.run_id,
        run_status=summary.status,
        run_quantgate_version=summary.quantgate_version,
        decided_with_quantgate_version=package_version("quantgate"),
        decided_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        dataset=summary.dataset,
        hardware=summary.hardware,
        options=summary.options,
        variants=run.variants.by_name(),
        statistics=StatisticsRecord(
            accuracy_delta_interval=(
                _SEQUENTIAL_INTERVAL if method.name == "sequential" else _FIXED_INTERVAL
            ).format(confidence=gates.confidence, truncation=method.truncation, round_size=method.round_size),
            mcnemar="exact two-sided binomial test on discordant cases; a case is right when all its "
            "fields are right, a field when it scores 1.0",
            equivalence_margin=gates.equivalence_margin,
            proportion_interval="Wilson score",
        ),
    )


def method_of(run: Run, dataset: Dataset | None) -> RunMethod:
    """How the run sampled its cases: its interval method, truncation, case order and round size."""
    options = run.summary.options or RunOptionsInfo(limit=None, concurrency=None, max_repairs=0)
    return RunMethod(
        name=options.interval_method,
        truncation=options.truncation,
        case_order={c.id: i for i, c in enumerate(dataset.cases)} if dataset else {},
        round_size=options.round_size or DEFAULT_ROUND_SIZE,
    )
