"""`quantgate compare` shows token fidelity's tail: KLD p99, the largest drop, top-1 on structural and
value tokens, titled and formatted as the fidelity tables are; a run without them shows them missing."""

from pathlib import Path

import pytest

from quantgate.analysis._compare import compare_runs, render_comparison
from tests.quantgate.run_factory import TAIL_CASE_A, TAIL_CASE_B, make_run, with_token_fidelity


def _run(directory: Path) -> Path:
    scores = [{"a": 1.0}] * 4
    return make_run(directory, {"R": scores, "Q4": scores}, footprints={"R": 2, "Q4": 1})


def test_compare_shows_the_tail_and_an_older_runs_missing_figures(tmp_path: Path):
    older = with_token_fidelity(_run(tmp_path / "a"), {"Q4": [TAIL_CASE_A]}, older_format=True)
    newer = with_token_fidelity(_run(tmp_path / "b"), {"Q4": [TAIL_CASE_B]})
    result = compare_runs(older, newer)
    figures = result["variants"]["Q4"]["figures"]
    assert figures["kld_p99"]["a"] == pytest.approx(0.3889)  # format 8 had p99
    assert figures["kld_p99"]["b"] == pytest.approx(0.099)
    assert figures["kld_p99"]["change"] == pytest.approx(0.099 - 0.3889)
    assert figures["delta_p_min"] == {"a": None, "b": pytest.approx(-0.5), "change": None}
    assert figures["structural_top1_agreement"] == {"a": None, "b": 1.0, "change": None}
    assert figures["value_top1_agreement"] == {"a": None, "b": 0.0, "change": None}
    assert result["variants"]["R"]["figures"]["kld_p99"] == {"a": None, "b": None, "change": None}
    lines = render_comparison(result).splitlines()
    assert (
        "  token fidelity: KLD mean 0.1125 -> 0.0500  KLD p99 0.3889 -> 0.0990  largest drop — -> -50.0"
        "  top-1 structural — -> 100.0%  top-1 value — -> 0.0%"
    ) in lines
    assert "  token fidelity: not measured in either run" in lines  # R, the reference


def test_compare_of_two_runs_with_the_tail(tmp_path: Path):
    before = with_token_fidelity(_run(tmp_path / "a"), {"Q4": [TAIL_CASE_A]})
    after = with_token_fidelity(_run(tmp_path / "b"), {"Q4": [TAIL_CASE_A, TAIL_CASE_B]})
    # after pools the six positions: KLD 0, 0, 0.02, 0.03, 0.1, 0.4: mean 0.0917, p99 at rank 4.95:
    # 0.1 + 0.95 * 0.3 = 0.385; largest drop -0.5; structural 3 of 4, value 1 of 2
    text = render_comparison(compare_runs(before, after))
    assert (
        "  token fidelity: KLD mean 0.1125 -> 0.0917  KLD p99 0.3889 -> 0.3850  largest drop -30.0 -> -50.0"
        "  top-1 structural 66.7% -> 75.0%  top-1 value 100.0% -> 50.0%"
    ) in text.splitlines()
