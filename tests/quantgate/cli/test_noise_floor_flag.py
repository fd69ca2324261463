"""`quantgate run --noise-floor-cases N`: the reference's rerun sample, 0 switching it off."""

from __future__ import annotations

import pytest

from evaluators.errors import UsageError
from quantgate.cli import build_parser
from quantgate.cli._run_shared import cli_run_options
from quantgate.evaluate._options import DEFAULT_NOISE_FLOOR_CASES, RunOptions
from quantgate.inputs._gates import Gates


def _options(*flags: str):
    args = build_parser().parse_args(["run", *flags])
    return cli_run_options(args, gates=Gates(), default_budget=None)


def test_the_command_line_measures_the_noise_floor_by_default():
    assert DEFAULT_NOISE_FLOOR_CASES > 0
    assert _options().noise_floor_cases == DEFAULT_NOISE_FLOOR_CASES


def test_zero_switches_it_off_and_a_negative_count_is_refused(capsys):
    assert _options("--noise-floor-cases", "0").noise_floor_cases == 0
    with pytest.raises(SystemExit) as exit_info:  # refused by the flag's type, before any work
        _options("--noise-floor-cases", "-2")
    assert exit_info.value.code == 2
    assert "argument --noise-floor-cases: expected an integer >= 0, got -2" in capsys.readouterr().err
    with pytest.raises(UsageError, match="noise-floor-cases must be 0 or more, got -2"):
        RunOptions(noise_floor_cases=-2)  # and by the options, for a caller other than the parser
