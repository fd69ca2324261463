"""Statistics of a load test: latency percentiles, throughput and errors over the requests
sent at one concurrency level. Pure functions; a figure nothing was measured for is None."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pydantic import Field

from evaluators.latency import percentile
from evaluators.results import EvaluatorResult

INVALID_OUTPUT = "invalid_output"


class LoadRequest(EvaluatorResult):
    """One request sent during a load test.

    Attributes:
        level: Name of the concurrency level it was sent at.
        slot: The sending worker (0 .. concurrency - 1).
        case_id: The dataset case whose prompt was sent.
        started_s: Start time, seconds after the level began: for a Poisson level, the
            scheduled arrival time.
        ttft_s: Time to the first streamed token; None when no token came. For a Poisson level,
            from the scheduled arrival, so the wait in the client's queue counts, as a user sees it.
        total_s: Time until the answer ended or the call failed (from the arrival, as `ttft_s`).
        queued_s: Poisson levels: how long the request waited in the client for a free place
            among the requests in flight before it was sent; None for a closed level.
        output_tokens: Generated tokens (the backend's count, else streamed chunks).
        inter_token_s: Mean gap between streamed tokens after the first; None under two tokens.
        valid: Whether the output parsed as JSON and matched the schema; None on an error.
        error_kind: `busy`, `timeout`, `connection`, ... for a failed call, `invalid_output`
            for an answer that does not match the schema, None for a good answer.
        error: The error message, when there was one.
    """

    level: str
    slot: int
    case_id: str
    started_s: float = Field(description="Seconds since the level started.")
    ttft_s: float | None
    total_s: float
    output_tokens: int | None
    inter_token_s: float | None
    valid: bool | None = Field(description="The output matched the schema; None on an error.")
    error_kind: str | None = None
    error: str | None = None
    queued_s: float | None = Field(default=None, description="Wait in the client before sending (Poisson).")


class LoadStats(EvaluatorResult):
    """The figures of one concurrency level.

    Attributes:
        requests: Requests sent.
        answered: Requests that got a complete answer (valid or not).
        errors: Requests that failed or whose answer was invalid.
        errors_by_kind: Those by kind (`busy`, `timeout`, `invalid_output`, ...).
        wall_s: Time from the first request to the end of the last.
        ttft_s_p50, ttft_s_p95, ttft_s_p99: Percentiles of time to first token over answers.
        inter_token_s_mean: Mean gap between tokens, pooled over answers (token-weighted).
        inter_token_s_p95: 95th percentile of the answers' mean gaps.
        request_tokens_per_s_p50: Median over answers of output tokens / the answer's total time.
        aggregate_tokens_per_s: Output tokens of all answers / wall time.
        requests_per_s: Answered requests / wall time.
        within_targets: Requests that were valid and met both latency targets (a target not
            given constrains nothing); None when no target was given or nothing was sent.
        goodput_rps: `within_targets` / wall time, as `vllm bench serve --goodput`; None when no
            target was given or nothing was measured (never 0 for unmeasured).
        goodput_rps_low, goodput_rps_high: Its exact (Garwood) 95% Poisson interval; None for a
            closed level (see `goodput_interval`).
    """

    requests: int
    answered: int
    errors: int
    errors_by_kind: dict[str, int]
    wall_s: float | None
    ttft_s_p50: float | None
    ttft_s_p95: float | None
    ttft_s_p99: float | None
    inter_token_s_mean: float | None
    inter_token_s_p95: float | None
    request_tokens_per_s_p50: float | None
    aggregate_tokens_per_s: float | None
    requests_per_s: float | None
    within_targets: int | None = None
    goodput_rps: float | None = None
    goodput_rps_low: float | None = None
    goodput_rps_high: float | None = None


def _rate(amount: float, seconds: float | None) -> float | None:
    return amount / seconds if seconds and amount else None


def meets_targets(request: LoadRequest, *, ttft_target_s: float | None, itl_target_s: float | None) -> bool:
    """Whether a request counts toward goodput: its answer was valid, its first token came within
    `ttft_target_s` and its mean inter-token gap was within `itl_target_s` (a target of None
    constrains nothing). An answer of fewer than two tokens has no gap, so meets any gap target,
    as in `vllm bench serve --goodput`; a request without a first token meets no TTFT target."""
    if request.valid is not True or request.error_kind is not None:
        return False
    if ttft_target_s is not None and (request.ttft_s is None or request.ttft_s > ttft_target_s):
        return False
    return itl_target_s is None or request.inter_token_s is None or request.inter_token_s <= itl_target_s


def goodput_interval(count: int, wall_s: float, *, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Garwood) Poisson interval of `count` events, divided by `wall_s`: a rate interval.

    Why a Poisson count: a Poisson level's requests arrive as a Poisson process, and each meets the
    targets or not; thinning a Poisson process by a pass/fail independent of the arrivals leaves a
    Poisson process, so the count within targets over the level is Poisson with mean
    goodput x time. The interval is exact for that model (coverage at least `confidence` at every
    count, zero included). It assumes what the model does: a pass independent of the arrival
    times, which queueing weakens at rates near capacity (a burst makes several requests late at
    once), and the wall time taken as fixed (with a `--requests` bound it ends with the last
    answer). A closed level's count is not Poisson (its requests are a fixed number, sent as
    answers end), so `summarize_load` gives it no interval.
    """
    from scipy.stats import chi2  # scipy.stats takes a while to import; only goodput needs it

    alpha = 1.0 - confidence
    low = float(chi2.ppf(alpha / 2, 2 * count)) / 2 if count > 0 else 0.0
    high = float(chi2.ppf(1 - alpha / 2, 2 * count + 2)) / 2
    return low / wall_s, high / wall_s


def _goodput(
    requests: Sequence[LoadRequest],
    wall_s: float | None,
    *,
    ttft_target_s: float | None,
    itl_target_s: float | None,
    poisson: bool,
) -> tuple[int | None, float | None, float | None, float | None]:
    """Within targets, goodput and its interval: all None without a target or a measured level."""
    if (ttft_target_s is None and itl_target_s is None) or not requests or not wall_s:
        return None, None, None, None
    count = sum(meets_targets(r, ttft_target_s=ttft_target_s, itl_target_s=itl_target_s) for r in requests)
    low, high = goodput_interval(count, wall_s) if poisson else (None, None)
    return count, count / wall_s, low, high


def summarize_load(
    *,
    requests: Sequence[LoadRequest],
    wall_s: float | None,
    ttft_target_s: float | None = None,
    itl_target_s: float | None = None,
    poisson: bool = False,
) -> LoadStats:
    """Summarize the requests of one level sent over `wall_s` seconds.

    An answer is a request without a transport error (`error_kind` None or `invalid_output`);
    invalid answers count in the latency and throughput figures and as errors. With a latency
    target, goodput is the requests that `meets_targets` per second of wall time, with its
    `goodput_interval` when the level's arrivals were Poisson (`poisson`).
    """
    answers = [r for r in requests if r.error_kind in (None, INVALID_OUTPUT)]
    kinds = Counter(r.error_kind for r in requests if r.error_kind is not None)
    ttfts = [r.ttft_s for r in answers if r.ttft_s is not None]
    gaps = [
        (r.inter_token_s, r.output_tokens - 1)
        for r in answers
        if r.inter_token_s is not None and r.output_tokens and r.output_tokens > 1
    ]
    gap_count = sum(n for _, n in gaps)
    per_request = [r.output_tokens / r.total_s for r in answers if r.output_tokens and r.total_s > 0]
    tokens = sum(r.output_tokens or 0 for r in answers)
    within, goodput, low, high = _goodput(
        requests, wall_s, ttft_target_s=ttft_target_s, itl_target_s=itl_target_s, poisson=poisson
    )
    return LoadStats(
        requests=len(requests),
        answered=len(answers),
        errors=sum(kinds.values()),
        errors_by_kind=dict(sorted(kinds.items())),
        wall_s=wall_s if requests else None,
        ttft_s_p50=percentile(ttfts, 50),
        ttft_s_p95=percentile(ttfts, 95),
        ttft_s_p99=percentile(ttfts, 99),
        inter_token_s_mean=sum(g * n for g, n in gaps) / gap_count if gap_count else None,
        inter_token_s_p95=percentile([g for g, _ in gaps], 95),
        request_tokens_per_s_p50=percentile(per_request, 50),
        aggregate_tokens_per_s=_rate(tokens, wall_s),
        requests_per_s=_rate(len(answers), wall_s),
        within_targets=within,
        goodput_rps=goodput,
        goodput_rps_low=low,
        goodput_rps_high=high,
    )
