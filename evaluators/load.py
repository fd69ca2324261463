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


def summarize_load(*, requests: Sequence[LoadRequest], wall_s: float | None) -> LoadStats:
    """Summarize the requests of one level sent over `wall_s` seconds.

    An answer is a request without a transport error (`error_kind` None or `invalid_output`);
    invalid answers count in the latency and throughput figures and as errors.
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
    )
