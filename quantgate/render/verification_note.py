"""How each variant's answers were obtained (verified against the reference's, or decoded), as the
lines decision.md and the report show under the record."""

from __future__ import annotations

from quantgate.rundir.summary import RunSummary, VariantEntry

__all__ = ["verification_lines"]


def _variant_note(entry: VariantEntry) -> str:
    if entry.verified_cases is None:
        return (
            f"{entry.name}: decoded ({entry.verification_missing or 'no case was given an answer to verify'})"
        )
    share = entry.verified_token_share
    tokens = f", {share:.1%} of the reference's tokens confirmed" if share is not None else ""
    return (
        f"{entry.name}: {entry.verified_cases} verified, {entry.verified_then_decoded_cases} verified then "
        f"decoded, {entry.decoded_cases} decoded{tokens}"
    )


def verification_lines(summary: RunSummary | None) -> list[str]:
    """One line per run: the verification setting, the latency sample, and each variant's counts."""
    if summary is None or summary.options is None or summary.options.verify is None:
        return []
    options = summary.options
    if not options.verify:
        return ["- Answers: every case of every variant decoded (--no-verify).", ""]
    notes = "; ".join(_variant_note(e) for e in summary.variants if e.status == "ok")
    return [
        f"- Answers: candidates verified the reference's answers where their backend can "
        f"(docs/performance.md#verification); the first {options.latency_cases} cases were decoded in full "
        f"by every variant, and every latency figure comes from them. {notes}.",
        "",
    ]
