"""What a variant still open needs: more paired cases, in minutes at the run's measured rate.

A sequential run that ends before a candidate's accuracy gates are settled (its budget or
its dataset ran out) leaves that candidate inconclusive. `open_forecast` says how many more
paired cases its differences so far suggest (`evaluators.sequential.forecast_settlement`:
they are resampled through the same confidence sequences, checked at the run's round ends),
whether the dataset has them, and what they cost in minutes at this run's seconds per case
(the candidate's own and the reference's, for the cases the reference has not run yet).
`quantgate run --resume RUN_DIR --budget M` goes on with the same sequence, in the same case
order, so the answer stays valid.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from evaluators.comparison import PairedCase
from evaluators.sequential import Forecast, forecast_settlement
from quantgate.evaluate.scheduler._stopping_rule import differences_of, drop_gates
from quantgate.inputs._gates import Gates
from quantgate.rundir._decision import OpenForecast
from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._pairing import paired_cases
from quantgate.rundir._store import Run
from quantgate.rundir._summary import VariantEntry

__all__ = ["open_forecast", "seconds_per_case"]


def seconds_per_case(entry: VariantEntry | None) -> float | None:
    """A variant's case-evaluation seconds per case in this run: its rounds' wall time over the
    cases it evaluated here (not read back, not from the cache); None when it ran none."""
    if entry is None or entry.wall_s is None or entry.cases is None:
        return None
    here = entry.cases - (entry.resumed_cases or 0) - (entry.cached_cases or 0)
    return entry.wall_s / here if here > 0 else None


def _more_minutes(
    more: int | None, own_s: float | None, reference_s: float | None, reference_ahead: int
) -> float | None:
    if more is None or own_s is None:
        return None
    reference_cases = max(more - reference_ahead, 0)
    if reference_cases and reference_s is None:
        return None
    return (more * own_s + reference_cases * (reference_s or 0.0)) / 60


def _message(forecast: Forecast, *, cases_left: int, minutes: float | None) -> str:
    if forecast.median_more is None:
        settled = f"{forecast.settled_share:.0%} of {forecast.simulations} resamples settled"
        return (
            f"open after {forecast.cases} paired cases; its differences so far do not settle within "
            f"{forecast.horizon} more cases in half of the resamples ({settled}): the drop may sit at the "
            "threshold, where no sample size decides"
        )
    spread = f"{forecast.low_more} to {forecast.high_more if forecast.high_more is not None else 'more'}"
    cost = f", about {math.ceil(minutes)} min at this run's rate" if minutes is not None else ""
    text = (
        f"open after {forecast.cases} paired cases; its differences so far suggest about "
        f"{forecast.median_more} more (80% of resamples: {spread}){cost}"
    )
    if forecast.median_more > cases_left:
        text += f"; the dataset has {cases_left} case(s) left: a decision needs a bigger dataset"
    return text


def open_forecast(
    *,
    paired: Sequence[PairedCase],
    gates: Gates,
    truncation: float,
    round_size: int,
    cases_left: int,
    entry: VariantEntry,
    reference: VariantEntry | None,
    reference_ahead: int,
) -> OpenForecast | None:
    """The forecast of a candidate whose accuracy gates were left unsettled; None without pairs.

    Args:
        paired: Its paired cases, in run order.
        gates: The gates the run settles.
        truncation: The run's betting truncation.
        round_size: The run's cases per round.
        cases_left: The run's cases it has not evaluated.
        entry: Its summary entry (its seconds per case).
        reference: The reference's entry (its seconds per case).
        reference_ahead: The cases the reference has that the candidate lacks (not run again).
    """
    differences, tags = differences_of(list(paired))
    forecast = forecast_settlement(
        differences, tags, drop_gates(gates, truncation=truncation), step=round_size
    )
    if forecast is None:
        return None
    own_s, reference_s = seconds_per_case(entry), seconds_per_case(reference)
    minutes = _more_minutes(forecast.median_more, own_s, reference_s, reference_ahead)
    return OpenForecast(
        forecast=forecast,
        cases_left=cases_left,
        seconds_per_case=own_s,
        reference_seconds_per_case=reference_s,
        minutes=minutes,
        message=_message(forecast, cases_left=cases_left, minutes=minutes),
    )


def open_forecasts(
    run: Run,
    records: Mapping[str, Mapping[str, CaseRecord]],
    reference: str,
    gates: Gates,
    *,
    truncation: float,
    round_size: int,
    case_order: Mapping[str, int],
) -> dict[str, OpenForecast | None]:
    """The forecast of each candidate a sequential run left open, by name.

    Args:
        records: The run's latest records, by variant and case id.
        case_order: The run's case order (its paired cases are taken in it).
    """
    entries = {e.name: e for e in run.summary.variants}
    ref_records = records.get(reference, {})
    forecasts: dict[str, OpenForecast | None] = {}
    for entry in run.summary.variants:
        if entry.is_reference or entry.sequential is None or entry.sequential.settled is not None:
            continue
        own = records.get(entry.name, {})
        paired = paired_cases(ref_records, own)
        paired.sort(key=lambda c: case_order.get(c.case_id, len(case_order)))
        forecasts[entry.name] = open_forecast(
            paired=paired,
            gates=gates,
            truncation=truncation,
            round_size=round_size,
            cases_left=max(run.summary.dataset.cases - len(own), 0),
            entry=entry,
            reference=entries.get(reference),
            reference_ahead=len(set(ref_records) - set(own)),
        )
    return forecasts
