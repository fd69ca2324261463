"""Open-loop load: requests that arrive as a Poisson process, whatever the answers do.

A closed level (`quantgate.loadtest._levels.send_requests`) sends a request when one of its k
threads' last answer ends, so a slow variant is offered less load. A Poisson level offers the
same load to every variant: arrivals at exponential gaps of mean 1 / rate from a seeded random
generator (the same seed gives the same times), each started at its time whether or not the ones
before it have ended. At most `in_flight` requests are sent at once, so a slow variant cannot make
the client start threads without bound: an arrival beyond that waits in the client (a FIFO queue)
for the first request to end, and that wait counts in its time to first token, measured from its
scheduled arrival, as a user would see it (`LoadRequest.queued_s` records it).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from evaluators.errors import UsageError
from evaluators.loadtest import LoadRequest
from quantgate.loadtest._bounds import rate_problem
from quantgate.loadtest._one_request import CaseCheck, CaseModel, Prompt, stream_request

__all__ = [
    "DEFAULT_IN_FLIGHT",
    "DEFAULT_SEED",
    "parse_rates",
    "poisson_schedule",
    "rate_name",
    "send_arrivals",
]

DEFAULT_SEED = 35
"""Seed of the arrival times when `--seed` is not given (recorded in the summary either way)."""
DEFAULT_IN_FLIGHT = 4
"""Requests in flight at most when `--max-in-flight` is not given: on 2 cores, more than 4
sequences at once only queue in the embedded backend (docs/load.md)."""


def parse_rates(text: str) -> tuple[float, ...]:
    """Rates in requests per second from `0.5,2`, each within `quantgate.loadtest._bounds`' bounds.

    Raises:
        UsageError: A rate is not a number within the bounds, or one repeats.
    """
    rates: list[float] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        try:
            rate = float(item)
        except ValueError:
            rate = float("nan")
        if (problem := rate_problem(rate)) is not None:
            raise UsageError(f"--rate {item!r}: {problem}")
        rates.append(rate)
    if not rates or len(set(rates)) != len(rates):
        raise UsageError(f"--rate {text!r}: give at least one rate, each once")
    return tuple(rates)


def rate_name(rate: float) -> str:
    """A Poisson level's name: `0.5/s`."""
    return f"{rate:g}/s"


def poisson_schedule(
    rate: float, *, seed: int, requests: int | None, duration_s: float | None
) -> list[float]:
    """Arrival times (seconds after the level begins) of a Poisson process of `rate` per second.

    The gaps are exponential of mean 1 / rate, drawn from `numpy.random.default_rng(seed)`; the
    schedule stops at `requests` arrivals or at the last arrival before `duration_s`, whichever
    comes first. With one seed, two rates give the same draws scaled (common random numbers).

    Raises:
        ValueError: Neither bound is given, or the rate is not positive.
    """
    if requests is None and duration_s is None:
        raise ValueError("a Poisson level needs a request count or a duration")
    if not rate > 0:
        raise ValueError(f"rate {rate!r}: must be positive")
    rng = np.random.default_rng(seed)
    times: list[float] = []
    now = 0.0
    while requests is None or len(times) < requests:
        now += float(rng.exponential(1.0 / rate))
        if duration_s is not None and now >= duration_s:
            break
        times.append(now)
    return times


def send_arrivals(
    models: Sequence[CaseModel],
    prompts: Sequence[Prompt],
    *,
    level: str,
    schedule: Sequence[float],
    check: CaseCheck,
    in_flight: int,
    on_request: Callable[[LoadRequest], None] | None = None,
) -> tuple[list[LoadRequest], float]:
    """Send prompt i (round-robin) at `schedule[i]`, with at most `in_flight` requests at once.

    Args:
        models: Each model copy's chat model per case; sender i uses `models[i % len(models)]`.
        prompts: (case id, messages) pairs, sent in turn.
        level: The level's name, recorded on each request.
        schedule: Arrival times in seconds after the level begins, ascending.
        check: Whether an answer's text is a valid output for its case.
        in_flight: Senders; an arrival finding all busy waits in the client, its wait timed.
        on_request: Called with each request as it ends (from the sending thread).

    Returns:
        The requests in the order they ended, and the wall time from the level's start (time 0
        of the schedule) to the end of the last request.
    """
    if in_flight < 1:
        raise ValueError("in_flight must be at least 1")
    arrivals: queue.Queue[tuple[int, float] | None] = queue.Queue()
    lock = threading.Lock()
    done: list[LoadRequest] = []
    t0 = time.perf_counter()

    def work(slot: int) -> None:
        model = models[slot % len(models)]
        while (arrival := arrivals.get()) is not None:
            index, arrived = arrival
            request = stream_request(
                model, prompts[index % len(prompts)], check, level=level, slot=slot, t0=t0, arrived=arrived
            )
            with lock:
                done.append(request)
            if on_request is not None:
                on_request(request)

    senders = [threading.Thread(target=work, args=(i,), name=f"load-{i}") for i in range(in_flight)]
    for sender in senders:
        sender.start()
    for index, offset in enumerate(schedule):
        time.sleep(max(0.0, t0 + offset - time.perf_counter()))
        arrivals.put((index, t0 + offset))
    for _ in senders:
        arrivals.put(None)
    for sender in senders:
        sender.join()
    return done, time.perf_counter() - t0
