"""The bounds of a load test's numbers, and why: every level must end in a sensible time, and what it
keeps (each request's record, a Poisson level's whole schedule) must fit in memory."""

from __future__ import annotations

import math
from collections.abc import Mapping

MAX_REQUESTS = 100_000
"""Requests per level at most: a level keeps every request's record in memory, and a Poisson level
draws its whole schedule before it starts (for a level bounded by a duration only: rate x duration)."""
MAX_DURATION_S = 86_400.0
"""Seconds per level at most (a day): a level bounded by a duration sends requests until it ends."""
MIN_RATE = 0.001
"""The lowest Poisson rate, requests per second: a mean gap of about 17 minutes. Below, a level of 8
requests takes hours, and a rate such as 1e-300 draws gaps too long to sleep (an overflow)."""
MAX_RATE = 1000.0
"""The highest Poisson rate: a gap of a millisecond, about what one client thread can start on time."""
MAX_TOKENS = 1_048_576
"""The generation limit per request at most (2**20 tokens): no model context is longer than this
on the backends quantgate drives, and llama.cpp and the servers take the limit as a C `int`, which
a number such as 10**20 overflows."""

MAX_CONCURRENCY = 64
"""Requests in flight at most (a closed level's concurrency, `--max-in-flight`): each is a client
thread with its own connection, and an embedded variant opens a model instance (or a slot of one)
per request in flight, each with its own memory; a server serves a few requests at once (llama-server's
`--parallel`, Ollama's `OLLAMA_NUM_PARALLEL`), so far more only queue there, while 10**6 threads would
exhaust the machine before the level began."""


def concurrency_problem(flag: str, concurrency: int) -> str | None:
    """Why `concurrency` requests in flight are out of bounds, naming `flag`; None when they are not."""
    if 1 <= concurrency <= MAX_CONCURRENCY:
        return None
    return f"{flag} {concurrency}: must be from 1 to {MAX_CONCURRENCY} requests in flight"


def rate_problem(rate: float) -> str | None:
    """Why `rate` (requests per second) cannot be a Poisson level's, or None (NaN fails)."""
    if MIN_RATE <= rate <= MAX_RATE:
        return None
    return f"expected a number of requests per second from {MIN_RATE:g} to {MAX_RATE:g} (0.5,2)"


def load_problems(
    *,
    requests: int | None,
    duration_s: float | None,
    max_tokens: int | None,
    fastest_rate: float | None,
    targets_s: Mapping[str, float | None],
) -> list[str]:
    """What is out of bounds in a load's options, each naming its flag (empty: nothing).

    Args:
        requests: Requests per level (None: bounded by `duration_s` only).
        duration_s: Seconds per level (None: bounded by `requests` only).
        max_tokens: The generation limit per request, if set.
        fastest_rate: The highest Poisson rate of the levels (None: closed levels).
        targets_s: Goodput's targets in seconds by flag (`--ttft-target-ms`), None where not set.
    """
    problems = []
    if requests is not None and not 1 <= requests <= MAX_REQUESTS:
        problems.append(f"--requests {requests}: must be from 1 to {MAX_REQUESTS:,} per level")
    if duration_s is not None and not 0 < duration_s <= MAX_DURATION_S:  # NaN fails too
        problems.append(f"--duration {duration_s}: must be above 0 and at most {MAX_DURATION_S:g} s (a day)")
    elif requests is None and fastest_rate and duration_s and fastest_rate * duration_s > MAX_REQUESTS:
        arrivals = fastest_rate * duration_s
        problems.append(
            f"--rate {fastest_rate:g} for --duration {duration_s:g} s is about {arrivals:,.0f} arrivals "
            f"per level, more than {MAX_REQUESTS:,}: give --requests too"
        )
    if max_tokens is not None and not 1 <= max_tokens <= MAX_TOKENS:
        problems.append(f"--max-tokens {max_tokens}: must be from 1 to {MAX_TOKENS:,} tokens")
    for flag, target in targets_s.items():
        if target is not None and not 0 < target < math.inf:
            problems.append(f"{flag} must be a positive number of milliseconds")
    return problems
