"""decision.md's record: what was compared, on what, with which methods, and how each answer was
obtained."""

from __future__ import annotations

from quantgate._formatting import MISSING
from quantgate.backends import kv_cache_note, structured_output_note
from quantgate.render._markdown import escape_markdown, markdown_table
from quantgate.render._verification_note import verification_lines
from quantgate.rundir._decision import Decision
from quantgate.rundir._summary import RunSummary

__all__ = ["record_lines"]


def record_lines(decision: Decision, summary: RunSummary | None) -> list[str]:
    """The record section: each variant's precision, method, calibration, cache, runtime and file; the
    structured output, hardware, versions and statistics; how the answers were obtained."""
    return [*_record(decision), *verification_lines(summary)]


def _record(decision: Decision) -> list[str]:
    record = decision.record
    rows = []
    for name, meta in record.variants.items():
        runtime = meta.runtime or {}
        rows.append(
            [
                name,
                str(meta.quantization or MISSING),
                str(meta.method or MISSING),
                str(meta.calibration or MISSING),
                kv_cache_note(meta.backend, meta.kv_cache),
                f"{runtime.get('name', MISSING)} {runtime.get('version', '')}".strip(),
                str(meta.sha256 or runtime.get("model_digest") or MISSING),
            ]
        )
    stats, text = record.statistics, escape_markdown
    return [
        "## Record",
        "",
        *markdown_table(
            ["variant", "precision", "method", "calibration", "KV cache", "runtime", "model sha256 / digest"],
            rows,
        ),
        "- Structured output: "
        + "; ".join(
            f"{text(n)}: {text(structured_output_note(m.backend, m.runtime))}"
            for n, m in record.variants.items()
        ),
        "- Hardware: " + ", ".join(f"{text(k)}: {text(v)}" for k, v in record.hardware.items()),
        f"- Run {text(record.run_id)} with quantgate {text(record.run_quantgate_version)}; decided with "
        f"quantgate {text(record.decided_with_quantgate_version)} at {text(record.decided_at)}",
        f"- Accuracy deltas: {text(stats.accuracy_delta_interval)}. McNemar: {text(stats.mcnemar)}. "
        f"Rates: {text(stats.proportion_interval)} intervals. Equivalence margin ±"
        f"{stats.equivalence_margin * 100:.1f} points.",
        "",
    ]
