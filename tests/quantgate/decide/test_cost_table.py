"""The decision's costs on a synthetic run: the cost table, `--recommend cost`, the break-even
signal, and the tables in decision.md and the report."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from quantgate.analysis._report import write_report
from quantgate.cli import main
from quantgate.cli._main import EXIT_USAGE
from quantgate.decide._cost_table import load_level
from quantgate.decide._recommendation import decide, load_decision
from quantgate.inputs._gates import Gates
from quantgate.inputs._prices import MAX_PRICE, MIN_TRAFFIC, Prices
from quantgate.production._guard import OnlineGuard
from quantgate.rundir._files import SUMMARY_FILE
from quantgate.rundir._loadtest_section import LoadLevelEntry, LoadSection, LoadVariantEntry
from quantgate.rundir._store import read_summary, write_json, write_model
from tests.quantgate.evaluate.slow_backend import write_inputs
from tests.quantgate.run_factory import make_run

RIGHT = {"a": 1.0, "b": 1.0}
HALF = {"a": 1.0, "b": 0.0}
N = 100  # A's one wrong case in 100 still shows its drop is under 5 points; in 40 it would not
PRICES = Prices(currency="EUR", review_per_case=10.0, node_per_hour=3.6, energy_per_1k_tokens=1.0)
GATES = Gates(min_cases=10, min_slice_cases=10)


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """R: the reference, verbose (500 tokens a case); A: one wrong case in N, 100 tokens; D: right
    everywhere and the smallest, but 1,000 tokens a case; B: wrong on b everywhere (fails)."""
    tokens = {"R": 500, "A": 100, "D": 1000, "B": 100}
    return make_run(
        tmp_path / "run",
        {"R": [RIGHT] * N, "A": [HALF] + [RIGHT] * (N - 1), "D": [RIGHT] * N, "B": [HALF] * N},
        footprints={"R": 700.0, "A": 450.0, "D": 300.0, "B": 250.0},
        record_values={name: {"output_tokens": n, "attempts": 1} for name, n in tokens.items()},
    )


def test_the_cost_table_has_each_ingredient_against_the_reference(run):
    decision = decide(run, GATES, prices=PRICES)
    assert decision.recommended == "D"  # by footprint, the default
    assert decision.costs is not None
    a, r = decision.costs.variants["A"], decision.costs.variants["R"]
    node = 1000 * 3.6 * (1 + (N - 1) / 20) / 3600  # mean total_s 1 + i/10 over N cases, at 3.6/h
    assert a.ingredient("review").per_1000 == pytest.approx(1000 * 10.0 / N)
    assert a.ingredient("energy").per_1000 == pytest.approx(100.0)
    assert a.ingredient("node").per_1000 == pytest.approx(node)
    assert a.ingredient("retries").missing == "not counted: no retry_call"
    review = 1000 * 10.0 / N  # one case in N reviewed, at 10 a case
    assert a.total_per_1000 == pytest.approx(review + 100.0 + node)
    assert r.total_per_1000 == pytest.approx(500.0 + node)
    assert a.total_delta == pytest.approx(review - 400.0)
    assert a.ingredient("energy").delta == pytest.approx(-400.0)
    energy = a.ingredient("energy").interval
    assert energy is not None
    assert energy.low == pytest.approx(-400.0)  # every case saves the same
    assert r.total_delta is None  # the reference has nothing to be compared with
    markdown = (run / "decision.md").read_text()
    assert "## Expected cost per 1,000 extractions" in markdown
    # the bootstrap's 97.5th percentile of the wrong cases in 100 resampled ones: 3 (P(X <= 2) = 0.92)
    assert "| A | 100.00 (+100.00 \\[+0.00, +300.00\\]) | not counted |" in markdown


def test_recommend_cost_picks_the_cheapest_passing_variant_and_names_its_break_even(run):
    decision = decide(run, GATES, prices=PRICES, recommend_by="cost")
    assert decision.recommended == "A"  # D is smaller but spends 10x the energy
    assert decision.recommended_by == "cost"
    assert decision.variants["B"].passes is False  # the cheapest of all, but it fails a gate
    assert decision.rollback is not None
    (signal,) = [s for s in decision.rollback.signals if s.metric == "wrong_case_rate"]
    node = 3.6 * (1 + (N - 1) / 20) / 3.6
    # the totals meet where A's reviews eat what it saves: (R's total - A's other costs) / 10,000
    assert signal.threshold == pytest.approx(((500 + node) - (100 + node)) / 10_000)
    assert signal.measured == pytest.approx(1 / N)
    assert "cost break-even" in signal.derivation
    assert "the cheapest expected cost" in (run / "decision.md").read_text()
    guard = OnlineGuard.from_decision(decision, window=20, min_count=20)  # the guard knows the metric
    crossed = [guard.observe(format_valid=True, reviewed_wrong=i % 10 == 0) for i in range(20)]
    assert [r.signal.metric for r in crossed[-1]] == ["wrong_case_rate"]  # 10% wrong > 4%


def test_without_prices_there_is_no_cost_table_and_no_break_even(run):
    decision = decide(run, GATES)
    assert decision.costs is None
    assert decision.rollback is not None
    assert "wrong_case_rate" not in {s.metric for s in decision.rollback.signals}
    with pytest.raises(ValueError, match="recommending by cost needs prices"):
        decide(run, GATES, recommend_by="cost")


def test_the_report_shows_the_cost_table(run):
    decide(run, GATES, prices=PRICES, recommend_by="cost")
    html = write_report(run).read_text()
    assert "Expected cost per 1,000 extractions" in html
    assert "the cheapest expected cost" in html


def test_the_command_line_takes_costs_and_refuses_recommend_cost_without_them(run, tmp_path, capsys):
    costs = tmp_path / "costs.toml"
    costs.write_text(
        'currency = "EUR"\nreview_per_case = 10\nnode_per_hour = 3.6\nenergy_per_1k_tokens = 1\n'
    )
    flags = ["--min-cases", "10", "--min-slice-cases", "10"]
    assert main(["decide", str(run), "--costs", str(costs), "--recommend", "cost", *flags]) == 0
    out = capsys.readouterr().out
    total = 1000 * 10.0 / N + 100.0 + (1 + (N - 1) / 20)  # review + energy + node, as above
    assert f"decision: A replaces the reference R ({total:.2f} EUR per 1,000 extractions, the cheapest" in out
    table = out.split("expected cost per 1,000 extractions")[1].splitlines()
    assert "total per 1,000 (EUR)" in table[1]
    (row,) = [line for line in table if line.startswith("  A ")]
    assert row.split()[1:3] == [f"{1000 * 10.0 / N:.2f}", f"(+{1000 * 10.0 / N:.2f}"]
    assert "cost break-even: A costs more than the reference R above 4.0% of cases with a wrong field" in out
    assert main(["decide", str(run), "--recommend", "cost"]) == EXIT_USAGE
    assert "--recommend cost needs --costs FILE.toml" in capsys.readouterr().err
    costs.write_text("review_per_case = -1\n")
    assert main(["decide", str(run), "--costs", str(costs)]) == EXIT_USAGE
    assert "review_per_case: Input should be greater than or equal to 0" in capsys.readouterr().err


def _level(name: str, concurrency: int, requests_per_s: float) -> LoadLevelEntry:
    return LoadLevelEntry(
        name=name, concurrency=concurrency, instances=1, rss_peak_mb=None, requests=10, answered=10, errors=0,
        errors_by_kind={}, wall_s=1.0, ttft_s_p50=None, ttft_s_p95=None, ttft_s_p99=None,
        inter_token_s_mean=None, inter_token_s_p95=None, request_tokens_per_s_p50=None,
        aggregate_tokens_per_s=None, requests_per_s=requests_per_s,
    )  # fmt: skip


def _load(**levels: list[LoadLevelEntry]) -> LoadSection:
    return LoadSection(
        levels=[], requests_per_level=10, duration_s_per_level=None, max_tokens=None, cases=2,
        variants=[LoadVariantEntry(name=n, backend="test", levels=found) for n, found in levels.items()],
    )  # fmt: skip


def _level_name(section: LoadSection | None, variant: str, traffic: float | None) -> str | None:
    level = load_level(section, variant, traffic)
    return None if level is None else level.name


def test_the_load_level_that_serves_the_traffic_sets_the_node_time():
    section = _load(A=[_level("normal", 1, 0.1), _level("peak", 4, 0.3)])
    assert _level_name(section, "A", traffic=300.0) == "normal"  # 0.1/s = 360 an hour: enough
    assert _level_name(section, "A", traffic=1000.0) == "peak"  # 1,080 an hour
    assert _level_name(section, "A", traffic=5000.0) == "peak"  # none serves it: the fastest
    assert _level_name(section, "A", traffic=None) == "peak"
    assert load_level(section, "R", traffic=None) is None
    assert load_level(None, "A", traffic=None) is None


def test_a_run_with_a_load_test_prices_node_time_from_its_levels(run):
    summary = read_summary(run)
    summary.load = _load(R=[_level("normal", 1, 0.1)], A=[_level("normal", 1, 0.2)])
    write_model(run / SUMMARY_FILE, summary)
    decision = decide(run, GATES, prices=Prices(node_per_hour=3.6))
    assert decision.costs is not None
    a, d = decision.costs.variants["A"], decision.costs.variants["D"]
    assert a.ingredient("node").per_1000 == pytest.approx(3.6 * 5.0 / 3.6)  # 5 s an extraction
    assert decision.costs.variants["R"].ingredient("node").per_1000 == pytest.approx(10.0)
    assert a.ingredient("node").delta == pytest.approx(-5.0)
    # no load test: the run's own times, a mean total_s of 1 + i/10 over N cases, at 3.6/h
    assert d.ingredient("node").per_1000 == pytest.approx(1 + (N - 1) / 20)
    assert decision.costs.node_time["A"].startswith("load level normal: 1 in flight, 0.2 requests/s")
    assert decision.costs.node_time["D"].startswith("the run's cases")


def test_run_takes_costs_and_checks_the_file_before_the_run(tmp_path, capsys):
    dataset, variants = write_inputs(tmp_path / "inputs", cases=2, delay_s=0.0)
    costs = tmp_path / "costs.toml"
    costs.write_text("retry_call = 0.5\nenergy_per_1k_tokens = 1\n")
    out = tmp_path / "runs"
    base = ["run", "--dataset", str(dataset), "--variants", str(variants), "--limit", "2", "--out", str(out),
            "--no-report", "--no-token-fidelity"]  # fmt: skip
    assert main([*base, "--costs", str(tmp_path / "absent.toml")]) == EXIT_USAGE
    assert "absent.toml: no such costs file" in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())  # refused before the run
    assert main([*base, "--costs", str(costs)]) == 4  # one variant: keep the reference
    (run_dir,) = out.iterdir()
    decision = load_decision(run_dir)
    assert decision.costs is not None
    retries = decision.costs.variants["slow"].ingredient("retries")
    assert retries.per_1000 == 0.0  # every case answered at the first call
    assert "expected cost per 1,000 extractions" in capsys.readouterr().out


def test_the_largest_prices_at_the_least_traffic_give_finite_json(run):
    """A node price of 1e308 made `Infinity` in decision.json (no JSON to Node) and `inf` in
    decision.md; prices are capped, so every cost is finite and the files are strict JSON."""
    top = Prices(
        review_per_case=MAX_PRICE,
        retry_call=MAX_PRICE,
        node_per_hour=MAX_PRICE,
        memory_per_gib_hour=MAX_PRICE,
        energy_per_1k_tokens=MAX_PRICE,
        extractions_per_hour=MIN_TRAFFIC,
    )
    decision = decide(run, GATES, prices=top)
    assert decision.costs is not None
    assert all(math.isfinite(c.total_per_1000 or 0.0) for c in decision.costs.variants.values())

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in decision.json")

    json.loads((run / "decision.json").read_text(), parse_constant=refuse)
    assert not re.search(r"\binf\b|\bnan\b", (run / "decision.md").read_text(), re.IGNORECASE)


def test_a_figure_that_is_not_finite_is_never_written(tmp_path):
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        write_json(tmp_path / "decision.json", {"total": float("inf")})
    assert list(tmp_path.iterdir()) == []  # neither the file nor a partial one
