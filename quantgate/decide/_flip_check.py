"""The flip gate (`max_flip_share`): a variant's flips against the reference, read against the threshold
and shown beside the runtime's noise floor (docs/decision.md, Flips)."""

from __future__ import annotations

from evaluators.flips import FlipSummary, flip_status
from quantgate._formatting import percent
from quantgate.rundir._decision import GateResult


def _noise_floor_note(floor: float | None, max_share: float) -> str:
    if floor is None:
        return "noise floor (the reference against itself): not measured"
    note = f"noise floor (the reference against itself): {percent(floor)}"
    return note + (
        ", above the gate: it cannot tell the variant from the runtime" if floor > max_share else ""
    )


def flip_share_result(
    gate: str, max_share: float, flips: FlipSummary | None, *, noise_floor: float | None, is_reference: bool
) -> GateResult:
    """The flip gate: pass when the flip share's upper bound is at most the threshold, fail when its
    lower bound is above it (`evaluators.flips.flip_status`, the rule a sequential run stops by); the
    reference passes by definition.

    Args:
        gate: The gate's name.
        max_share: Its threshold.
        flips: The variant's flips (None: nothing paired with the reference).
        noise_floor: The reference's flip share against itself, shown beside (None: not measured).
        is_reference: The variant is the reference.
    """
    if is_reference:
        return GateResult(
            gate=gate, status="pass", value=0.0, threshold=max_share, evidence="the reference itself"
        )
    if flips is None or flips.flipped.share is None or flips.flipped.interval is None:
        why = "no labeled paired cases with the reference"
        return GateResult(gate=gate, status="not_measured", value=None, threshold=max_share, evidence=why)
    interval = flips.flipped.interval
    settled = flip_status(interval=interval, max_share=max_share)
    why = {
        "pass": f"upper bound ≤ {percent(max_share)}",
        "fail": f"lower bound > {percent(max_share)}",
        "undecided": f"the interval straddles {percent(max_share)}",
    }[settled]
    kinds = ", ".join(
        f"{label} {percent(share.share)}"
        for label, share in (
            ("right→wrong", flips.right_to_wrong), ("wrong→right", flips.wrong_to_right),
            ("wrong→other wrong", flips.wrong_to_wrong),
        )
    )  # fmt: skip
    evidence = (
        f"{percent(flips.flipped.share)} of fields flipped over {flips.cases} cases ({kinds}), "
        f"CI [{percent(interval.low)}, {percent(interval.high)}]: {why}; "
        + _noise_floor_note(noise_floor, max_share)
    )
    return GateResult(
        gate=gate,
        status="inconclusive" if settled == "undecided" else settled,
        value=flips.flipped.share,
        threshold=max_share,
        interval=interval,
        evidence=evidence,
    )
