"""The flip gate's verdict and evidence (`quantgate.decide._flip_check`): read against the threshold, with
the noise floor beside it when measured."""

from __future__ import annotations

from evaluators.comparison import ComparisonOptions, PairedCase
from evaluators.flips import summarize_flips
from quantgate.decide._flip_check import flip_share_result


def _flips(flipped: int, n: int):
    """`flipped` of `n` cases flipped, spread evenly over the case order."""
    cases = [
        PairedCase(
            case_id=f"c{i}",
            reference={"a": 0.0},
            variant={"a": 0.0},
            agreement={"a": float(i * flipped % n >= flipped)},
        )
        for i in range(n)
    ]
    return summarize_flips(cases, options=ComparisonOptions())


def test_the_noise_floor_is_shown_beside_and_said_when_above_the_gate() -> None:
    flips = _flips(2, 100)
    measured = flip_share_result("max_flip_share", 0.25, flips, noise_floor=0.01, is_reference=False)
    assert measured.status == "pass"
    assert measured.value == 0.02
    assert measured.evidence.startswith("2.0% of fields flipped over 100 cases (right→wrong 0.0%, ")
    assert measured.evidence.endswith("upper bound ≤ 25.0%; noise floor (the reference against itself): 1.0%")
    noisy = flip_share_result("max_flip_share", 0.25, flips, noise_floor=0.3, is_reference=False)
    assert noisy.status == "pass"  # the gate is the variant's own upper bound, never a subtraction
    assert noisy.evidence.endswith("30.0%, above the gate: it cannot tell the variant from the runtime")


def test_fail_inconclusive_not_measured_and_the_reference() -> None:
    assert (
        flip_share_result("g", 0.25, _flips(90, 100), noise_floor=None, is_reference=False).status == "fail"
    )
    straddling = flip_share_result("g", 0.25, _flips(25, 100), noise_floor=None, is_reference=False)
    assert straddling.status == "inconclusive"
    assert "the interval straddles 25.0%" in straddling.evidence
    assert flip_share_result("g", 0.25, None, noise_floor=None, is_reference=False).status == "not_measured"
    assert flip_share_result("g", 0.25, None, noise_floor=None, is_reference=True).status == "pass"
