"""Records of two variants paired by case: the latency pairs take only cases both decoded in full in
this run, within the latency sample."""

from __future__ import annotations

from typing import Any

import pytest

from quantgate.rundir._lines import CaseRecord
from quantgate.rundir._pairing import paired_latency


def _record(variant: str, case_id: str, total_s: float | None, **fields: Any) -> CaseRecord:
    timed = {"ttft_s": 0.25, "generation_tokens_per_s": 16.0} if total_s is not None else {}
    given: dict[str, Any] = {"obtained": "decoded", **timed, **fields}
    return CaseRecord(variant=variant, case_id=case_id, total_s=total_s, **given)


def _records(variant: str, totals: list[float | None]) -> dict[str, CaseRecord]:
    return {f"c{i}": _record(variant, f"c{i}", total) for i, total in enumerate(totals)}


def test_paired_on_the_cases_both_timed_with_the_sign_test_interval():
    reference = _records("ref", [3.0 + i for i in range(8)])
    variant = _records("cand", [3.0 + i + 0.1 * (i + 1) for i in range(8)])  # 0.1 .. 0.8 slower
    result = paired_latency(reference, variant, sample=None)
    assert result.pairs == 8
    assert result.total_s.median == pytest.approx(0.45)
    assert [result.total_s.low, result.total_s.high] == pytest.approx([0.1, 0.8])  # 8 pairs: the extremes
    assert result.ttft_s.median == pytest.approx(0.0)


def test_only_the_latency_sample_and_this_runs_decoded_cases_are_paired():
    reference = _records("ref", [3.0] * 8)
    reference["c1"] = _record("ref", "c1", 3.0, cached_from="an-earlier-run")  # another run's timings
    variant = _records("cand", [4.0] * 8)
    variant["c2"] = _record("cand", "c2", None, obtained="verified")  # read, not decoded: untimed
    variant["c3"] = _record("cand", "c3", 4.0, obtained="verified_then_decoded")
    result = paired_latency(reference, variant, sample=frozenset({"c0", "c1", "c2", "c3", "c4"}))
    assert result.pairs == 2  # c0 and c4; c5..c7 are outside the sample
    assert result.total_s.median == pytest.approx(1.0)
    assert (result.total_s.low, result.total_s.high) == (None, None)  # too few pairs for 95%
