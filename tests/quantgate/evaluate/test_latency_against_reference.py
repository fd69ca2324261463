"""A run writes each candidate's latency against the reference, paired on the latency sample (the
cases every variant decoded in full), with a fake verifying backend."""

from __future__ import annotations

from quantgate.rundir._store import load_run
from tests.quantgate.evaluate.scheduler.test_verification import _run, backends

__all__ = ["backends"]  # the fixture that registers the fake backends


def test_candidates_are_paired_with_the_reference_on_the_latency_sample(tmp_path):
    summary = load_run(_run(tmp_path, latency_cases=2)).summary
    ref, cand = summary.entry("ref"), summary.entry("cand")
    assert ref is not None
    assert cand is not None
    assert ref.latency_against_reference is None
    against = cand.latency_against_reference
    assert against is not None
    assert against.pairs == 2  # the sample's two cases; the verified ones have no latency
    assert against.total_s.pairs == 2
    assert against.total_s.median is not None
    assert against.total_s.low is None  # two pairs cannot make a 95% interval: not measured


def test_a_candidate_that_decodes_everything_is_still_paired_on_the_sample_alone(tmp_path):
    cand = load_run(_run(tmp_path, backend="plain", latency_cases=2)).summary.entry("cand")
    assert cand is not None
    assert cand.latency_against_reference is not None
    assert cand.latency_against_reference.pairs == 2


def test_without_verification_every_case_is_paired(tmp_path):
    cand = load_run(_run(tmp_path, verify=False)).summary.entry("cand")
    assert cand is not None
    assert cand.latency_against_reference is not None
    assert cand.latency_against_reference.pairs == 6
    assert cand.latency_against_reference.total_s.low is not None  # 6 pairs: the extremes, 96.9%
