"""Machines for a request rate from the measured goodput, priced; the capacity section of
decision.md and of the HTML report. Every figure by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluators.machines import machine_cost, machines_for
from evaluators.memory_model import ModelShape
from quantgate.analysis._report import render_report
from quantgate.analysis._run_view import load_run_view
from quantgate.capacity._shape_record import MemoryModelEntry
from quantgate.decide._recommendation import decide
from quantgate.inputs._gates import Gates
from quantgate.inputs._prices import CostsError, Prices, load_prices
from quantgate.rundir._files import DECISION_MD, SUMMARY_FILE, VARIANTS_FILE
from quantgate.rundir._loadtest_section import LoadLevelEntry, LoadSection, LoadVariantEntry
from quantgate.rundir._store import read_summary, write_model
from quantgate.rundir._summary import VariantsFile
from tests.quantgate.run_factory import make_run


@pytest.mark.parametrize(("goodput", "machines"), [(2.4, 5), (3.1, 4), (2.5, 4), (10.0, 1), (40.0, 1)])
def test_machines_are_the_rate_over_one_machines_goodput_rounded_up(goodput: float, machines: int) -> None:
    assert machines_for(10.0, goodput) == machines  # 10 / 2.4 = 4.17 -> 5; 10 / 3.1 = 3.23 -> 4


def test_no_goodput_needs_no_count_never_zero_machines() -> None:
    assert machines_for(10.0, None) is None
    assert machines_for(10.0, 0.0) is None


def test_the_interval_of_machines_comes_from_the_goodputs() -> None:
    cost = machine_cost(rate_rps=10.0, price_per_hour=2.0, goodput=(3.1, 2.4, 4.0), level="p3")
    assert (cost.machines, cost.machines_low, cost.machines_high) == (4, 3, 5)  # 10/3.1, 10/4.0, 10/2.4
    assert (cost.per_hour, cost.per_hour_low, cost.per_hour_high) == (8.0, 6.0, 10.0)
    # per 1,000 requests: 8 per hour over 10 x 3,600 requests an hour, x 1,000
    assert cost.per_1000 == pytest.approx(8.0 / 36.0)
    assert cost.per_1000_high == pytest.approx(10.0 / 36.0)
    assert cost.missing is None


def test_a_goodput_bound_of_zero_leaves_the_most_machines_unbounded() -> None:
    cost = machine_cost(rate_rps=10.0, price_per_hour=2.0, goodput=(0.4, 0.0, 1.1))
    assert (cost.machines, cost.machines_low, cost.machines_high, cost.per_hour_high) == (25, 10, None, None)


def test_a_machine_that_holds_no_sequence_does_not_fit() -> None:
    cost = machine_cost(rate_rps=10.0, price_per_hour=2.0, goodput=(3.1, 2.4, 4.0), sequences_per_machine=0)
    assert (cost.machines, cost.per_hour) == (None, None)
    assert cost.missing is not None
    assert cost.missing.startswith("does not fit")


def test_the_machine_keys_of_a_costs_file(tmp_path: Path) -> None:
    path = tmp_path / "costs.toml"
    path.write_text("request_rate_rps = 10\nmachine_price_per_hour = 2.5\nmachine_memory_gib = 8\n")
    assert load_prices(path) == Prices(
        request_rate_rps=10.0, machine_price_per_hour=2.5, machine_memory_gib=8.0
    )
    path.write_text("request_rate_rps = 0\n")
    with pytest.raises(CostsError, match="request_rate_rps"):
        load_prices(path)


TINY = ModelShape(
    architecture="tiny", n_layer=2, n_head=1, n_head_kv=(1, 1), key_length=4, value_length=4, n_embd=4,
    n_ff=8, n_vocab=10, context_length=1024,
)  # fmt: skip


def _level(goodput: tuple[float, float, float] | None) -> LoadLevelEntry:
    point, low, high = goodput if goodput else (None, None, None)
    return LoadLevelEntry(
        name="p3", concurrency=4, instances=1, rss_peak_mb=None, arrivals="poisson", rate_per_s=3.5,
        requests=60, answered=60, errors=0, errors_by_kind={}, wall_s=30.0, ttft_s_p50=None, ttft_s_p95=None,
        ttft_s_p99=None, inter_token_s_mean=None, inter_token_s_p95=None, request_tokens_per_s_p50=None,
        aggregate_tokens_per_s=None, requests_per_s=3.4, within_targets=None if goodput is None else 93,
        goodput_rps=point, goodput_rps_low=low, goodput_rps_high=high,
    )  # fmt: skip


def _run_with_capacity(tmp_path: Path) -> Path:
    """R (no model record, no goodput) and A (the TINY record; goodput 3.1 [2.4, 4.0] at p3)."""
    right = {"a": 1.0, "b": 1.0}
    run = make_run(
        tmp_path / "run", {"R": [right] * 5, "A": [right] * 5}, footprints={"R": 700.0, "A": 450.0}
    )
    lines = VariantsFile.model_validate_json((run / VARIANTS_FILE).read_text()).variants
    tiny = MemoryModelEntry(shape=TINY, weights_bytes=1_000)
    lines = [v.model_copy(update={"memory_model": tiny}) if v.name == "A" else v for v in lines]
    write_model(run / VARIANTS_FILE, VariantsFile(variants=lines))
    summary = read_summary(run)
    summary.load = LoadSection(
        levels=[], requests_per_level=None, duration_s_per_level=30.0, max_tokens=None, cases=5,
        variants=[
            LoadVariantEntry(name="A", backend="test", levels=[_level((3.1, 2.4, 4.0))]),
            LoadVariantEntry(name="R", backend="test", levels=[_level(None)]),
        ],
    )  # fmt: skip
    write_model(run / SUMMARY_FILE, summary)
    return run


def test_decide_prices_machines_and_shows_the_capacity_section(tmp_path: Path) -> None:
    run = _run_with_capacity(tmp_path)
    prices = Prices(currency="EUR", request_rate_rps=10.0, machine_price_per_hour=2.0, machine_memory_gib=1.0)
    decision = decide(run, Gates(max_accuracy_drop=None), prices=prices)
    assert decision.costs is not None
    a, r = decision.costs.machines["A"], decision.costs.machines["R"]
    assert (a.machines, a.machines_low, a.machines_high, a.per_hour) == (4, 3, 5, 8.0)
    assert a.sequences_per_machine == 255  # TINY: 131,152 B a 4,096-token sequence, 1 GiB holds the limit
    assert (r.machines, r.per_hour, r.missing) == (
        None,
        None,
        "not measured: no goodput within the latency targets",
    )
    assert decision.variants["A"].capacity is not None
    assert decision.variants["A"].capacity.sequences == 255  # at the default 2 GiB, 4,096 tokens
    assert decision.variants["R"].capacity is None
    text = (run / DECISION_MD).read_text()
    assert "## Capacity" in text
    assert "in 2 GiB (the default: no capacity\\_memory\\_gib)" in text
    assert "| A | 255 | f16 | 32 | 0 | p3: 3.1 \\[2.4, 4\\] |" in text
    assert "| R | not measured | — | — | — | not measured |" in text
    assert "### Machines for 10 requests/s" in text
    machines_a = (
        "| A | 3.1 \\[2.4, 4\\] (p3) | 4 \\[3, 5\\] | 8.00 \\[6.00, 10.00\\] | 0.222 \\[0.167, 0.278\\] |"
    )
    assert machines_a + " 255 |" in text
    assert "| R | — | not measured | not measured | not measured | — |" in text


def test_missing_machine_prices_are_missing_never_zero(tmp_path: Path) -> None:
    run = _run_with_capacity(tmp_path)
    decision = decide(run, Gates(max_accuracy_drop=None), prices=Prices(request_rate_rps=10.0))
    assert decision.costs is not None
    assert {n: (m.machines, m.missing) for n, m in decision.costs.machines.items()} == {
        "R": (None, "missing: machine_price_per_hour"),
        "A": (None, "missing: machine_price_per_hour"),
    }
    assert decide(run, Gates(max_accuracy_drop=None), prices=Prices(retry_call=0.01)).costs.machines == {}  # type: ignore[union-attr]


def test_the_report_has_the_capacity_section(tmp_path: Path) -> None:
    run = _run_with_capacity(tmp_path)
    gates = Gates(
        max_accuracy_drop=None, min_parallel_sequences=4, capacity_memory_gib=1.0, capacity_context=100
    )
    decide(run, gates, prices=Prices(request_rate_rps=10.0, machine_price_per_hour=2.0))
    html = render_report(load_run_view(run), charts=[])
    assert '<h2 id="capacity">Capacity</h2>' in html
    assert "Parallel sequences of 100 tokens in 1 GiB (the gates&#39; capacity_memory_gib)" in html
    assert '<td>A</td><td class="num">255</td>' in html
    assert '<h3 id="machines">Machines for 10 requests/s</h3>' in html
