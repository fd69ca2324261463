"""Open-loop Poisson levels: the seeded schedule, sending on schedule, the flags, with fakes only."""

import json
import math

import numpy as np
import pytest
from langchain_core.messages import BaseMessage

from quantgate.cli._main import build_parser, main
from quantgate.inputs._variants import Variant, VariantSet
from quantgate.loadtest._arrivals import (
    DEFAULT_IN_FLIGHT,
    DEFAULT_SEED,
    parse_rates,
    poisson_schedule,
    send_arrivals,
)
from quantgate.loadtest._level_specs import LoadLevel, parse_levels, poisson_levels
from quantgate.loadtest._levels import LoadOptions
from quantgate.render._load_table import render_load
from quantgate.rundir._loadtest_section import LoadSection
from quantgate.rundir._store import load_run
from tests.fakes import SleepyChatModel

PROMPTS: list[tuple[str, list[BaseMessage]]] = [("c0", []), ("c1", [])]


def every_case(model):
    """The same chat model for every case."""
    return lambda case_id: model


def always_valid(case_id, raw):
    return True


def measured(value: float | None) -> float:
    assert value is not None
    return value


def test_the_schedule_is_fixed_by_its_seed():
    first = poisson_schedule(2.0, seed=3, requests=50, duration_s=None)
    assert first == poisson_schedule(2.0, seed=3, requests=50, duration_s=None)
    assert first != poisson_schedule(2.0, seed=4, requests=50, duration_s=None)
    assert first == sorted(first)
    assert len(first) == 50
    # one seed, two rates: the same draws scaled (common random numbers)
    assert poisson_schedule(1.0, seed=3, requests=50, duration_s=None) == pytest.approx(
        [2 * t for t in first]
    )


def test_the_schedule_has_the_rate_asked_for():
    rate, n = 2.0, 2000
    gaps = np.diff([0.0, *poisson_schedule(rate, seed=DEFAULT_SEED, requests=n, duration_s=None)])
    # the mean of n exponential gaps has standard deviation (1 / rate) / sqrt(n) = 0.0112; allow 4 of them
    assert abs(gaps.mean() - 1 / rate) < 4 * (1 / rate) / math.sqrt(n)
    assert abs(gaps.std() - 1 / rate) < 0.05  # an exponential's sd equals its mean
    assert gaps.min() > 0


def test_the_schedule_stops_at_the_first_bound():
    by_time = poisson_schedule(10.0, seed=1, requests=None, duration_s=3.0)
    assert all(t < 3.0 for t in by_time)
    assert abs(len(by_time) - 30) < 4 * math.sqrt(30)  # Poisson(30) arrivals in 3 s
    assert len(poisson_schedule(10.0, seed=1, requests=5, duration_s=3.0)) == 5
    assert poisson_schedule(10.0, seed=1, requests=1000, duration_s=3.0) == by_time
    with pytest.raises(ValueError, match="request count or a duration"):
        poisson_schedule(1.0, seed=1, requests=None, duration_s=None)


def test_requests_start_on_schedule_while_earlier_ones_still_run():
    model = SleepyChatModel(delay_s=0.1)  # 4 pieces: about 0.4 s per answer
    done, wall = send_arrivals(
        [every_case(model)], PROMPTS, level="x", schedule=[0.0, 0.1, 0.2], check=always_valid, in_flight=3
    )
    done.sort(key=lambda r: r.started_s)
    assert [r.started_s for r in done] == pytest.approx([0.0, 0.1, 0.2], abs=1e-9)  # the scheduled times
    assert all(measured(r.queued_s) < 0.08 for r in done)  # sent at once (waiting would be 0.3 s or more)
    assert done[1].started_s + measured(done[1].queued_s) < done[0].total_s  # went before the first ended
    assert all(0.095 <= measured(r.ttft_s) < 0.25 for r in done)
    assert 0.59 <= wall < 0.95  # last arrival at 0.2 plus one answer; one after another would take 1.2 s
    assert [r.case_id for r in done] == ["c0", "c1", "c0"]


def test_arrivals_beyond_the_bound_wait_in_the_client_and_that_wait_counts():
    model = SleepyChatModel(delay_s=0.1)  # about 0.4 s per answer
    schedule = [0.0, 0.02]
    done, _ = send_arrivals(
        [every_case(model)], PROMPTS, level="x", schedule=schedule, check=always_valid, in_flight=1
    )
    first, second = sorted(done, key=lambda r: r.started_s)
    waited = measured(second.queued_s)
    assert measured(first.queued_s) < 0.08
    assert waited == pytest.approx(first.total_s - 0.02, abs=0.1)  # waited for the first answer
    assert measured(second.ttft_s) >= waited + 0.095  # from its arrival: the wait plus its own first token
    assert second.total_s >= waited + 0.38  # the wait plus its own four pieces


def test_parse_rates_and_poisson_levels():
    assert parse_rates("0.5, 2") == (0.5, 2.0)
    levels = poisson_levels("0.5,2")
    assert levels == (
        LoadLevel(name="0.5/s", concurrency=DEFAULT_IN_FLIGHT, rate_per_s=0.5),
        LoadLevel(name="2/s", concurrency=DEFAULT_IN_FLIGHT, rate_per_s=2.0),
    )
    assert LoadOptions(levels=levels).arrivals == "poisson"
    assert LoadOptions().arrivals == "closed"
    assert LoadOptions().seed == DEFAULT_SEED
    for bad in ("0", "-1", "x", "1,1", "", "inf", "nan", "1e-300", "1e9"):  # 1e-300: gaps too long to sleep
        with pytest.raises(ValueError, match="--rate"):
            parse_rates(bad)
    with pytest.raises(ValueError, match="--max-in-flight"):
        poisson_levels("1", in_flight=0)
    with pytest.raises(ValueError, match="'peak=65': --load-concurrency 65: must be from 1 to 64"):
        parse_levels("normal=1,peak=65", flag="--load-concurrency")
    assert [level.concurrency for level in parse_levels("1,64")] == [1, 64]


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--arrivals", "poisson"], "--rate"),
        (["--arrivals", "poisson", "--rate", "0"], "--rate"),
        (["--arrivals", "poisson", "--rate", "1", "--concurrency", "2"], "--max-in-flight"),
        (["--arrivals", "poisson", "--rate", "1", "--max-in-flight", "0"], "--max-in-flight"),
        (["--arrivals", "poisson", "--rate", "1", "--seed", "-1"], "--seed"),
        (["--rate", "1"], "--rate"),
        (["--seed", "3"], "--seed"),
        (["--max-in-flight", "2"], "--max-in-flight"),
        (["--concurrency", "normal=1,peak=100000"], "--concurrency 100000: must be from 1 to 64 requests"),
        (
            ["--arrivals", "poisson", "--rate", "1", "--max-in-flight", "65"],
            "--max-in-flight 65: must be from 1",
        ),
        (["--ttft-target-ms", "0"], "--ttft-target-ms"),
        (["--itl-target-ms", "-5"], "--itl-target-ms"),
    ],
)
def test_bad_load_flags_are_usage_errors_naming_the_flag(flags, named, tmp_path, capsys):
    status: int | str | None
    try:  # a UsageError (exit 2), or argparse's own refusal of a flag's type (SystemExit 2)
        status = main(["load", "--dataset", "tech-config", "--out", str(tmp_path), *flags])
    except SystemExit as exc:
        status = exc.code
    assert status == 2
    assert named in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # refused before any work


def test_the_help_states_the_defaults(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["load", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"seed of the arrival times (default {DEFAULT_SEED})" in help_text
    assert f"wait in the client (default {DEFAULT_IN_FLIGHT})" in help_text


def test_poisson_load_records_rate_seed_targets_and_goodput(dataset, tmp_path, monkeypatch, capsys):
    import quantgate.inputs._shorthands

    fake = VariantSet(variants=[Variant.from_chat_model("v1", SleepyChatModel(delay_s=0.005))])
    monkeypatch.setattr(quantgate.inputs._shorthands, "resolve_variants", lambda specs: fake)
    args = ["load", "--dataset", str(dataset.path), "--variants", "fake", "--out", str(tmp_path / "runs"),
            "--arrivals", "poisson", "--rate", "20,40", "--requests", "6", "--seed", "9",
            "--ttft-target-ms", "1000", "--itl-target-ms", "1000", "--json"]  # fmt: skip
    assert main(args) == 0
    section = LoadSection.model_validate(json.loads(capsys.readouterr().out))
    assert (section.arrivals, section.seed, section.ttft_target_s, section.itl_target_s) == (
        "poisson",
        9,
        1.0,
        1.0,
    )
    assert [(s.name, s.rate_per_s, s.arrivals) for s in section.levels] == [
        ("20/s", 20.0, "poisson"), ("40/s", 40.0, "poisson"),
    ]  # fmt: skip
    levels = section.variants[0].levels
    for level in levels:
        assert (level.arrivals, level.seed, level.requests) == ("poisson", 9, 6)
        assert level.within_targets == 6  # every fake answer is valid and well within a second
        assert level.goodput_rps == pytest.approx(6 / measured(level.wall_s))
        assert (
            measured(level.goodput_rps_low) < measured(level.goodput_rps) < measured(level.goodput_rps_high)
        )
    (run_dir,) = (tmp_path / "runs").iterdir()
    records = [json.loads(line) for line in (run_dir / "load.jsonl").open()]
    assert {r["format_version"] for r in records} == {2}
    assert all(r["queued_s"] is not None for r in records)
    starts = sorted(r["started_s"] for r in records if r["level"] == "20/s")
    assert starts == pytest.approx(poisson_schedule(20.0, seed=9, requests=6, duration_s=None), abs=1e-6)
    summary_section = load_run(run_dir).summary.load
    assert summary_section is not None
    table = render_load(summary_section)
    assert "20.00" in table  # the offered rate
    first = section.variants[0].levels[0]
    shown = f"{first.goodput_rps:.3f} [{first.goodput_rps_low:.3f}, {first.goodput_rps_high:.3f}]"
    assert shown in table
    assert "seed 9" in table
    assert "TTFT <= 1000 ms and mean ITL <= 1000 ms" in table


def test_a_format_1_load_section_is_read_as_closed_levels():
    old = {"format_version": 1, "levels": [{"name": "normal", "concurrency": 1}], "requests_per_level": 8,
           "duration_s_per_level": None, "max_tokens": None, "cases": 3}  # fmt: skip
    section = LoadSection.model_validate(old)
    assert (section.format_version, section.arrivals, section.seed) == (2, "closed", None)
    assert section.levels[0].arrivals == "closed"
    with pytest.raises(ValueError, match="format_version"):
        LoadSection.model_validate({**old, "format_version": 3})
