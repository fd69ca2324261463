"""A load test's levels: closed levels of k requests in flight (`--concurrency normal=1,peak=4`), or
open-loop Poisson arrivals at a rate (`--arrivals poisson --rate 0.5,2`), as the flags give them."""

from __future__ import annotations

from dataclasses import dataclass

from evaluators.errors import UsageError
from quantgate.loadtest._arrivals import DEFAULT_IN_FLIGHT, parse_rates, rate_name
from quantgate.loadtest._bounds import concurrency_problem
from quantgate.rundir._loadtest_section import Arrivals

DEFAULT_LEVELS = "normal=1,peak=4"


@dataclass(frozen=True, kw_only=True)
class LoadLevel:
    """A named level: closed, `concurrency` threads (`normal`, `peak`, or the number itself), or
    open-loop Poisson arrivals at `rate_per_s` (named `0.5/s`) with at most `concurrency` in flight."""

    name: str
    concurrency: int
    rate_per_s: float | None = None

    @property
    def arrivals(self) -> Arrivals:
        return "closed" if self.rate_per_s is None else "poisson"


def parse_levels(text: str, *, flag: str = "--concurrency") -> tuple[LoadLevel, ...]:
    """Levels from `normal=1,peak=4` or `1,4,8` (then named by their number).

    Args:
        text: The levels.
        flag: The flag that gave them, for errors (`--load-concurrency` under `run`).

    Raises:
        UsageError: A level is not a positive integer or above `MAX_CONCURRENCY`, or a name repeats.
    """
    levels: list[LoadLevel] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, _, value = item.rpartition("=")
        if not value.strip().isdigit() or int(value) < 1:
            raise UsageError(
                f"concurrency level {item!r}: expected a positive integer, as in normal=1,peak=4"
            )
        problem = concurrency_problem(flag, int(value))
        if problem is not None:
            raise UsageError(f"concurrency level {item!r}: {problem}")
        levels.append(LoadLevel(name=name.strip() or value.strip(), concurrency=int(value)))
    names = [level.name for level in levels]
    if not levels or len(set(names)) != len(names):
        raise UsageError(f"concurrency levels {text!r}: give at least one, each name once")
    return tuple(levels)


def poisson_levels(text: str, *, in_flight: int | None = None) -> tuple[LoadLevel, ...]:
    """Poisson levels from rates in requests per second (`0.5,2`), each with at most `in_flight`
    requests in flight (None: `DEFAULT_IN_FLIGHT`; `quantgate.loadtest._arrivals`).

    Raises:
        UsageError: A rate is not a positive number or repeats, or `in_flight` is below 1.
    """
    in_flight = DEFAULT_IN_FLIGHT if in_flight is None else in_flight
    problem = concurrency_problem("--max-in-flight", in_flight)
    if problem is not None:
        raise UsageError(problem)
    return tuple(
        LoadLevel(name=rate_name(rate), concurrency=in_flight, rate_per_s=rate) for rate in parse_rates(text)
    )
