"""The load figures as a table: printed by `quantgate load` and shown in the report."""

from __future__ import annotations

from quantgate._formatting import MISSING, fixed, text_table
from quantgate.backends import backend_capabilities
from quantgate.rundir._loadtest_section import LoadLevelEntry, LoadSection

_HEADER = (
    "variant", "level", "conc", "inst", "req", "err", "TTFT p50", "p95", "p99", "ITL ms",
    "tok/s req", "tok/s all", "offered/s", "req/s", "goodput/s [95%]", "peak MiB", "errors by kind",
)  # fmt: skip


def _goodput(level: LoadLevelEntry) -> str:
    """Goodput with its interval (`0.500 [0.201, 1.030]`), alone for a closed level, `—` unmeasured."""
    if level.goodput_rps is None:
        return MISSING
    if level.goodput_rps_low is None or level.goodput_rps_high is None:
        return fixed(level.goodput_rps, 3)
    low, high = fixed(level.goodput_rps_low, 3), fixed(level.goodput_rps_high, 3)
    return f"{fixed(level.goodput_rps, 3)} [{low}, {high}]"


def load_rows(section: LoadSection) -> list[tuple[str, ...]]:
    """The load table as rows of strings, header first (the CLI and the report share it)."""
    rows: list[tuple[str, ...]] = [_HEADER]
    for variant in section.variants:
        if variant.status != "ok":
            rows.append((variant.name, "skipped", *[""] * (len(_HEADER) - 3), (variant.error or "")[:60]))
            continue
        for level in variant.levels:
            kinds = ", ".join(f"{k} {n}" for k, n in level.errors_by_kind.items()) or "none"
            rows.append(
                (
                    variant.name, level.name, str(level.concurrency), str(level.instances),
                    str(level.requests), str(level.errors), fixed(level.ttft_s_p50),
                    fixed(level.ttft_s_p95), fixed(level.ttft_s_p99),
                    fixed(level.inter_token_s_mean, 1, scale=1000),
                    fixed(level.request_tokens_per_s_p50, 1),
                    fixed(level.aggregate_tokens_per_s, 1), fixed(level.rate_per_s),
                    fixed(level.requests_per_s), _goodput(level), fixed(level.rss_peak_mb, 0), kinds,
                )
            )  # fmt: skip
    return rows


def render_load(section: LoadSection) -> str:
    """The load figures as a fixed-width text table, with a note per variant on how it served the levels."""
    lines = text_table(load_rows(section))
    for variant in section.variants:
        if variant.status != "ok":
            continue
        parallel = backend_capabilities(variant.backend).parallel
        if parallel == "slots":
            note = f"one model copy with {variant.slots} slots sharing one KV cache"
        elif parallel == "instances":
            each = fixed(variant.instance_model_mb, 0)
            note = f"{variant.instances} model instance(s), about {each} MiB each"
        else:
            note = f"one shared client; OLLAMA_NUM_PARALLEL={variant.num_parallel or 'not set here'}"
        process = variant.memory_process or "a remote server: not measured"
        lines.append(f"{variant.name}: {note}; memory of {process}")
        if variant.capped:
            lines.append(f"  capped: {variant.capped}")
    lines.extend(_targets_note(section))
    lines.append(f"{MISSING} = not measured; TTFT in s; ITL = mean inter-token latency")
    return "\n".join(lines)


def _targets_note(section: LoadSection) -> list[str]:
    """How the levels arrived and what goodput counted, when there is anything to say."""
    notes: list[str] = []
    if section.arrivals == "poisson":
        notes.append(
            f"Poisson arrivals at the offered rate (seed {section.seed}); TTFT from the scheduled arrival, "
            "so waiting in the client counts"
        )
    targets = [
        f"{name} <= {fixed(value, 0, scale=1000)} ms"
        for name, value in (("TTFT", section.ttft_target_s), ("mean ITL", section.itl_target_s))
        if value is not None
    ]
    if targets:
        poisson = section.arrivals == "poisson"
        interval = "exact Poisson 95% interval" if poisson else "no interval (closed levels)"
        notes.append(f"goodput: valid answers with {' and '.join(targets)} per s of wall time; {interval}")
    return notes
