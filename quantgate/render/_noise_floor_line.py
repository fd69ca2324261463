"""The noise floor's line, as decision.md and the report show it beside the candidates' figures."""

from __future__ import annotations

from quantgate._formatting import percent
from quantgate.rundir._summary import RunSummary

__all__ = ["noise_floor_text"]


def noise_floor_text(summary: RunSummary | None) -> str | None:
    """ "noise floor: the reference against itself on N cases: ..." (plain text), or why it is
    missing; None for a run whose summary has neither (the arm was off, or an older run)."""
    if summary is None:
        return None
    floor = summary.noise_floor
    if floor is None:
        return f"noise floor: {summary.noise_floor_missing}" if summary.noise_floor_missing else None
    kld = (
        f"KLD mean {floor.kld_mean:.2g} nats (max {floor.kld_max:.2g}) over {floor.kld_positions} positions"
        if floor.kld_mean is not None and floor.kld_max is not None
        else "KLD not measured"
    )
    cached = (
        f"; first answers from the reference cache (run {', '.join(floor.first_from)})"
        if floor.first_from
        else ""
    )
    flight = f"first {floor.first_concurrency} in flight, then {floor.rerun_concurrency}"
    return (
        f"noise floor: the reference against itself on {floor.cases} cases ({flight}): identical "
        f"{floor.identical}/{floor.cases}, agreement {percent(floor.agreement)}, "
        f"fields changed {percent(floor.fields_changed_share)} per case, {kld}{cached}. A candidate's "
        "differences from the reference at or below these are the runtime's own."
    )
