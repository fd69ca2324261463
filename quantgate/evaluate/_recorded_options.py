"""A run's options as summary.json records them (`RunOptionsInfo`), and read back for a resumed run:
one mapping, read off the fields of `RunOptions`, so that each option is recorded and read back by
the same entry.

Every field of `RunOptions` is either recorded (`RECORDED`: its key in `RunOptionsInfo`, how its
value is written, how it is read back, from a file written before the key existed too) or not
recorded and given again by whoever goes on with the run (`GIVEN_ON_RESUME`). Every key of
`RunOptionsInfo` is some option's; the tests check that the two sides cover each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from quantgate.evaluate._options import DEFAULT_LATENCY_CASES, RunOptions
from quantgate.evaluate.scheduler._stopping_rule import DEFAULT_ROUND_SIZE
from quantgate.rundir._summary import RunOptionsInfo

__all__ = ["GIVEN_ON_RESUME", "RECORDED", "Recorded", "recorded_options", "resumed_options"]


def _same(value: Any, _: Any) -> Any:
    return value


def _fixed_only(value: Any, options: RunOptions) -> Any:
    """Recorded for a fixed-sample run only (a sequential run does not use it)."""
    return None if options.sequential else value


def _sequential_only(value: Any, options: RunOptions) -> Any:
    """Recorded for a sequential run only (a fixed-sample run does not use it)."""
    return value if options.sequential else None


def _or(default: Any) -> Callable[[Any, RunOptionsInfo], Any]:
    """Read back as recorded, `default` when not recorded (None: an older file)."""
    return lambda value, _: default if value is None else value


@dataclass(frozen=True, kw_only=True)
class Recorded:
    """How one option is kept in summary.json.

    Attributes:
        key: Its key in `RunOptionsInfo`.
        write: Its recorded value, from the option's value and all the run's options.
        read: The option's value, from the recorded one (None when a file lacks it) and all the
            recorded options.
    """

    key: str
    write: Callable[[Any, RunOptions], Any] = _same
    read: Callable[[Any, RunOptionsInfo], Any] = _same


RECORDED: Mapping[str, Recorded] = {
    "limit": Recorded(key="limit", write=_fixed_only),
    "concurrency": Recorded(key="concurrency"),
    "max_repairs": Recorded(key="max_repairs"),
    "token_fidelity": Recorded(key="token_fidelity", read=lambda value, _: value is not False),
    "sequential": Recorded(
        key="method",
        write=lambda value, _: "sequential" if value else "fixed",
        read=lambda value, _: value == "sequential",
    ),
    "gates": Recorded(key="gates"),
    "round_size": Recorded(key="round_size", write=_sequential_only, read=_or(DEFAULT_ROUND_SIZE)),
    "max_cases": Recorded(key="max_cases", write=_sequential_only),
    "budget_s": Recorded(
        key="budget_minutes",
        write=lambda value, options: value / 60 if options.sequential and value is not None else None,
        read=lambda value, _: None if value is None else value * 60,
    ),
    "truncation": Recorded(key="betting_truncation", read=lambda _, info: info.truncation),
    "token_fidelity_cases": Recorded(key="token_fidelity_cases"),
    "verify": Recorded(key="verify", read=lambda value, _: value is True),  # None: before verification
    "latency_cases": Recorded(key="latency_cases", read=_or(DEFAULT_LATENCY_CASES)),
    "noise_floor_cases": Recorded(key="noise_floor_cases", read=_or(0)),
}
"""The options summary.json records, by their name in `RunOptions`."""

GIVEN_ON_RESUME = frozenset({"out", "progress", "examples", "reference_cache", "run_name"})
"""The options it does not record: where the run is (`out`, `run_name`: the run's directory), whether
it shows progress, and what a resumed run takes from its own files or does without (`examples`: the
run's copy of its dataset holds them; `reference_cache`: a resumed run asks no cache)."""


def recorded_options(options: RunOptions) -> RunOptionsInfo:
    """The options as summary.json records them."""
    return RunOptionsInfo(
        **{entry.key: entry.write(getattr(options, name), options) for name, entry in RECORDED.items()}
    )


def resumed_options(info: RunOptionsInfo, **given: Any) -> RunOptions:
    """The options a run recorded, read back, with `given`: those it does not record
    (`GIVEN_ON_RESUME`), and any recorded one that a resumed run goes on with otherwise (its budget)."""
    recorded = {name: entry.read(getattr(info, entry.key), info) for name, entry in RECORDED.items()}
    return RunOptions(**(recorded | given))
