"""A run's options recorded in summary.json and read back for a resumed run: every option either
round-trips through the file or is given again, and the two sides cover each other."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from evaluators.betting import CONFSEQ_TRUNCATION
from quantgate.evaluate._options import DEFAULT_LATENCY_CASES, RunOptions
from quantgate.evaluate._recorded_options import (
    GIVEN_ON_RESUME,
    RECORDED,
    recorded_options,
    resumed_options,
)
from quantgate.evaluate.scheduler._stopping_rule import DEFAULT_ROUND_SIZE
from quantgate.inputs._gates import Gates
from quantgate.rundir._summary import RunOptionsInfo

NON_DEFAULT: dict[str, Any] = {
    "limit": 7,
    "concurrency": 3,
    "max_repairs": 5,
    "out": Path("elsewhere"),
    "progress": False,
    "token_fidelity": False,
    "examples": 9,
    "sequential": True,
    "gates": Gates(max_accuracy_drop=0.02, max_p95_latency_s=4.5),
    "round_size": 11,
    "max_cases": 13,
    "budget_s": 90.0,
    "truncation": 0.7,
    "reference_cache": Path("cache"),
    "token_fidelity_cases": 2,
    "run_name": "named",
    "verify": False,
    "latency_cases": 4,
    "noise_floor_cases": 6,
}
"""A value other than the default for every option of `RunOptions`."""


def _options(**changed: Any) -> RunOptions:
    return RunOptions(**(NON_DEFAULT | changed))


def test_every_option_has_a_value_here_other_than_its_default():
    default = RunOptions()
    assert set(NON_DEFAULT) == {f.name for f in fields(RunOptions)}  # an option added: give it one here
    assert [name for name, value in NON_DEFAULT.items() if getattr(default, name) == value] == []


def test_every_option_is_recorded_or_given_again_and_every_recorded_key_is_an_options():
    options = {f.name for f in fields(RunOptions)}
    assert set(RECORDED).isdisjoint(GIVEN_ON_RESUME)
    assert set(RECORDED) | GIVEN_ON_RESUME == options
    keys = [entry.key for entry in RECORDED.values()]
    assert sorted(keys) == sorted(set(keys)) == sorted(RunOptionsInfo.model_fields)


@pytest.mark.parametrize(
    ("sequential", "unused"),
    [
        (True, {"limit": None}),  # a sequential run takes no limit, a fixed one no rounds:
        (False, {"round_size": DEFAULT_ROUND_SIZE, "max_cases": None, "budget_s": None}),
    ],
    ids=["sequential", "fixed"],
)
def test_every_option_a_run_uses_comes_back_through_summary_json(sequential, unused):
    options = _options(sequential=sequential)
    on_disk = RunOptionsInfo.model_validate_json(recorded_options(options).model_dump_json())
    given = {name: getattr(options, name) for name in GIVEN_ON_RESUME}
    assert resumed_options(on_disk, **given) == replace(options, **unused)


def test_the_options_are_recorded_under_the_files_names_and_units():
    info = recorded_options(_options())
    assert (info.method, info.budget_minutes, info.betting_truncation) == ("sequential", 1.5, 0.7)
    assert info.limit is None
    fixed = recorded_options(_options(sequential=False))
    assert (fixed.method, fixed.limit, fixed.round_size, fixed.budget_minutes) == ("fixed", 7, None, None)


def test_a_file_written_before_the_later_keys_reads_back_as_such_runs_ran():
    older = RunOptionsInfo(limit=20, concurrency=None, max_repairs=1, gates=Gates())
    options = resumed_options(older, out=Path("runs"), progress=False)
    assert options.sequential is False
    assert (options.token_fidelity, options.verify) == (True, False)  # verification came later
    assert options.truncation == CONFSEQ_TRUNCATION
    assert (options.round_size, options.latency_cases, options.noise_floor_cases) == (
        DEFAULT_ROUND_SIZE,
        DEFAULT_LATENCY_CASES,
        0,
    )
    assert options.token_fidelity_cases is None  # all the cases, as such a run measured
