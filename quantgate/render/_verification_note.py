"""How each variant's answers were obtained (verified against the reference's, or decoded), and its
token fidelity over the positions it read while verifying, as the lines decision.md and the report
show under the record."""

from __future__ import annotations

from quantgate.rundir._summary import RunSummary, VariantEntry

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


def _interval(low: float | None, high: float | None, fmt: str) -> str:
    return (
        f" [{low:{fmt}}, {high:{fmt}}]"
        if low is not None and high is not None
        else " (too few cases for an interval)"
    )


def _fidelity_note(entry: VariantEntry) -> str | None:
    fidelity = entry.verified_fidelity
    if fidelity is None or fidelity.kld_mean is None or fidelity.top1_agreement is None:
        return None
    kld = f"per-case median {fidelity.case_kld_median:.4f}" + _interval(
        fidelity.case_kld_low, fidelity.case_kld_high, ".4f"
    )
    top1 = f"per-case mean {fidelity.case_top1_mean:.1%}" + _interval(
        fidelity.case_top1_low, fidelity.case_top1_high, ".1%"
    )
    unmeasured = (
        f", {fidelity.unmeasured_cases} verified cases without the reference's log-probabilities"
        if (fidelity.unmeasured_cases)
        else ""
    )
    return (
        f"{entry.name}: {fidelity.positions} positions in {fidelity.cases} cases{unmeasured}; KLD at least "
        f"{fidelity.kld_mean:.4f} nats on average ({kld}); top-1 {fidelity.top1_agreement:.1%} ({top1})"
    )


def verification_lines(summary: RunSummary | None) -> list[str]:
    """One line per run: the verification setting, the latency sample, and each variant's counts."""
    if summary is None or summary.options is None or summary.options.verify is None:
        return []
    options = summary.options
    if not options.verify:
        return ["- Answers: every case of every variant decoded (--no-verify).", ""]
    notes = "; ".join(_variant_note(e) for e in summary.variants if e.status == "ok")
    lines = [
        f"- Answers: candidates verified the reference's answers where their backend can "
        f"(docs/performance.md#verification); the first {options.latency_cases} cases were decoded in full "
        f"by every variant, and every latency figure comes from them. {notes}."
    ]
    fidelity = [n for n in (_fidelity_note(e) for e in summary.variants if e.status == "ok") if n]
    if fidelity:
        lines.append(
            "- Token fidelity on the verified cases (each position read while verifying, against the "
            "reference's top-8 log-probabilities; KLD a lower bound; 95% intervals over cases; "
            f"docs/token-fidelity.md): {'; '.join(fidelity)}."
        )
    return [*lines, ""]
