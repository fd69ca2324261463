"""Latency and throughput from per-call timings: time to first token, tokens per second,
percentiles. Every figure is None when nothing it needs was measured."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluators.results import EvaluatorResult


@dataclass(frozen=True, kw_only=True)
class CaseLatency:
    """Timing of one case over all its model calls (first call and repairs).

    Attributes:
        ttft_s: Time to the first streamed token of the first call.
        total_s: Model time summed over calls.
        input_tokens: Prompt tokens of the first call.
        output_tokens: Generated tokens over all calls.
        prompt_tokens_per_s: First call's prompt tokens / its time to first token. With a
            prompt-prefix cache (llama.cpp, Ollama) cached tokens count as processed, so this
            is an effective rate, higher than raw prefill speed.
        generation_tokens_per_s: Generated tokens after the first / time after the first token.
        server_eval: (tokens, seconds) of generation as the server reported them (Ollama's
            `eval_count`, `eval_duration`), summed over calls; None when not reported.
        server_prompt: The same for prompt processing (`prompt_eval_count`, `prompt_eval_duration`).
    """

    ttft_s: float | None
    total_s: float | None
    input_tokens: int | None
    output_tokens: int | None
    prompt_tokens_per_s: float | None
    generation_tokens_per_s: float | None
    server_eval: tuple[int, float] | None = None
    server_prompt: tuple[int, float] | None = None


def _reported(
    attempts: Sequence[Mapping[str, Any]], count: str, duration_ns: str
) -> tuple[int, float] | None:
    counts: list[float] = []
    nanoseconds: list[float] = []
    for attempt in attempts:
        reported = attempt.get("reported") or {}
        if reported.get(count) is None or reported.get(duration_ns) is None:
            return None
        counts.append(reported[count])
        nanoseconds.append(reported[duration_ns])
    return (int(sum(counts)), sum(nanoseconds) / 1e9) if attempts else None


def _sum(values: Iterable[float | int | None]) -> float | None:
    items = list(values)
    return (
        None if not items or any(v is None for v in items) else float(sum(v for v in items if v is not None))
    )


def decoded_in_full(attempts: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every call of a case decoded its answer: none read (verified) a given answer, so its
    timings are decoding's. An attempt that does not say how it was obtained was decoded."""
    return all(a.get("obtained") in (None, "decoded") for a in attempts)


def case_latency(attempts: Sequence[Mapping[str, Any]]) -> CaseLatency:
    """Summarize the attempts of one case (dicts with ttft_s, total_s, input/output_tokens).

    A case whose answer was verified rather than decoded, in whole or in part (`decoded_in_full`),
    has no latency: its timings are those of reading a given answer, not of writing one.
    """
    if not attempts or not decoded_in_full(attempts):
        outputs = _sum(a.get("output_tokens") for a in attempts)
        return CaseLatency(
            ttft_s=None, total_s=None, input_tokens=attempts[0].get("input_tokens") if attempts else None,
            output_tokens=int(outputs) if outputs is not None else None,
            prompt_tokens_per_s=None, generation_tokens_per_s=None,
        )  # fmt: skip
    first = attempts[0]
    ttft, inputs = first.get("ttft_s"), first.get("input_tokens")
    outputs = _sum(a.get("output_tokens") for a in attempts)
    decode_time = _sum(
        (a["total_s"] - a["ttft_s"]) if a.get("ttft_s") is not None else None for a in attempts
    )
    decoded = _sum((a["output_tokens"] - 1) if a.get("output_tokens") else None for a in attempts)
    return CaseLatency(
        ttft_s=ttft,
        total_s=_sum(a.get("total_s") for a in attempts),
        input_tokens=inputs,
        output_tokens=int(outputs) if outputs is not None else None,
        prompt_tokens_per_s=inputs / ttft if inputs and ttft else None,
        generation_tokens_per_s=decoded / decode_time if decoded and decode_time else None,
        server_eval=_reported(attempts, "eval_count", "eval_duration"),
        server_prompt=_reported(attempts, "prompt_eval_count", "prompt_eval_duration"),
    )


class LatencySummary(EvaluatorResult):
    """Per-variant latency: percentiles over cases and aggregate throughput (None: not measured)."""

    ttft_s_p50: float | None = None
    ttft_s_p95: float | None = None
    latency_s_p50: float | None = None
    latency_s_p95: float | None = None
    tokens_per_s: float | None = None
    prompt_tokens_per_s: float | None = None
    cases_timed: int
    server_tokens_per_s: float | None = None
    server_prompt_tokens_per_s: float | None = None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (linear interpolation), None for no values."""
    return float(np.percentile(values, q)) if values else None


def latency_p95(total_s: Sequence[float]) -> float | None:
    """The 95th percentile of cases' end-to-end times: what the latency gate and the guard judge."""
    return percentile(total_s, 95)


def _pooled_rate(pairs: Sequence[tuple[int, float] | None]) -> float | None:
    measured = [p for p in pairs if p is not None]
    seconds = sum(s for _, s in measured)
    return sum(n for n, _ in measured) / seconds if measured and seconds else None


def summarize_latency(cases: Iterable[CaseLatency]) -> LatencySummary:
    """Percentiles of TTFT and total time; generation tokens/s pooled over all cases.

    `server_*` rates come from the server's own counters where it reports them (Ollama).
    """
    timed = [c for c in cases if c.total_s is not None]
    ttfts = [c.ttft_s for c in timed if c.ttft_s is not None]
    totals = [c.total_s for c in timed if c.total_s is not None]
    generated = [
        (c.output_tokens - 1, c.total_s - c.ttft_s)
        for c in timed
        if c.output_tokens and c.ttft_s is not None and c.total_s is not None and c.total_s > c.ttft_s
    ]
    decoded = sum(n for n, _ in generated)
    decode_time = sum(t for _, t in generated)
    prompt = [(c.input_tokens, c.ttft_s) for c in timed if c.input_tokens and c.ttft_s]
    return LatencySummary(
        ttft_s_p50=percentile(ttfts, 50),
        ttft_s_p95=percentile(ttfts, 95),
        latency_s_p50=percentile(totals, 50),
        latency_s_p95=latency_p95(totals),
        tokens_per_s=decoded / decode_time if decoded and decode_time else None,
        prompt_tokens_per_s=sum(n for n, _ in prompt) / sum(t for _, t in prompt) if prompt else None,
        cases_timed=len(timed),
        server_tokens_per_s=_pooled_rate([c.server_eval for c in timed]),
        server_prompt_tokens_per_s=_pooled_rate([c.server_prompt for c in timed]),
    )


def throughput(output_tokens: Iterable[int | None], wall_s: float | None) -> float | None:
    """Aggregate output tokens per second of cases run side by side over `wall_s`.

    Cases whose token count was not measured (a failed call) add nothing; None when no count
    was measured or the wall time is missing or zero.
    """
    counted = [n for n in output_tokens if n is not None]
    return sum(counted) / wall_s if counted and wall_s else None
