"""Numeric flags of `run`, `load`, `capacity` and `report`: a negative count, NaN, an infinity or an
absurd bound is refused before any work with a message naming the flag (exit 2), never accepted to
hang, overflow or run forever (issue 46)."""

from __future__ import annotations

from pathlib import Path

import pytest

import quantgate.cli._load
import quantgate.cli._run
from evaluators.errors import QuantgateError
from quantgate.cli import build_parser, main
from quantgate.loadtest import _bounds as bounds


class StartedError(QuantgateError):
    """Raised by the stand-in of the variants' resolution: the checks let the command through."""


@pytest.fixture(autouse=True)
def nothing_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A flag the checks let through ends the command at the variants (no ladder built, no model)."""

    def started(*args: object, **kwargs: object) -> None:
        raise StartedError("the command went past its checks")

    monkeypatch.setattr(quantgate.cli._run, "cli_variants", started)
    monkeypatch.setattr(quantgate.cli._load, "cli_variants", started)


def _status(argv: list[str]) -> int:
    """`main`'s exit status, argparse's own refusals (SystemExit) included."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


REFUSED = [
    # (command and flags, text the message must hold)
    (["run", "--max-repairs", "-5"], "argument --max-repairs: expected an integer >= 0, got -5"),
    (["run", "--noise-floor-cases", "-1"], "argument --noise-floor-cases: expected an integer >= 0"),
    (["run", "--load", "--max-tokens", "-5"], "argument --max-tokens: expected a positive integer, got -5"),
    (["run", "--load", "--duration", "inf"], "argument --duration: expected a positive number, got inf"),
    (["load", "--max-tokens", "-5"], "argument --max-tokens: expected a positive integer, got -5"),
    (["load", "--max-tokens", "0"], "argument --max-tokens: expected a positive integer, got 0"),
    (
        ["load", "--max-tokens", "99999999999999999999"],
        "--max-tokens 99999999999999999999: must be from 1 to 1,048,576",
    ),
    (
        ["run", "--load", "--max-tokens", "1048577"],
        "--max-tokens 1048577: must be from 1 to 1,048,576 tokens",
    ),
    (["load", "--limit", "-5"], "argument --limit: expected a positive integer, got -5"),
    (["load", "--requests", "-1"], "argument --requests: expected a positive integer, got -1"),
    (["load", "--requests", "1000000000"], "--requests 1000000000: must be from 1 to 100,000 per level"),
    (["load", "--max-in-flight", "-1"], "argument --max-in-flight: expected a positive integer"),
    (["load", "--seed", "-1"], "argument --seed: expected an integer >= 0, got -1"),
    (["load", "--duration", "nan"], "argument --duration: expected a positive number, got nan"),
    (["load", "--duration", "inf"], "argument --duration: expected a positive number, got inf"),
    (["load", "--duration", "1e9"], "--duration 1000000000.0: must be above 0 and at most 86400 s (a day)"),
    (["load", "--ttft-target-ms", "inf"], "argument --ttft-target-ms: expected a positive number, got inf"),
    (["load", "--arrivals", "poisson", "--rate", "1e-300"], "--rate '1e-300': expected a number of requests"),
    (["load", "--arrivals", "poisson", "--rate", "1e9"], "per second from 0.001 to 1000"),
    (["load", "--arrivals", "poisson", "--rate", "nan"], "--rate 'nan': expected a number of requests"),
    (
        ["load", "--arrivals", "poisson", "--rate", "1000", "--duration", "86400"],
        "about 86,400,000 arrivals per level, more than 100,000: give --requests too",
    ),
    (["report", "RUN", "--max-failures", "-5"], "argument --max-failures: expected an integer >= 0, got -5"),
]


@pytest.mark.parametrize(("flags", "message"), REFUSED, ids=[" ".join(f) for f, _ in REFUSED])
def test_bad_numbers_are_refused_before_any_work(tmp_path: Path, capsys, flags, message):
    out = tmp_path / "runs"
    extra = ["--dataset", "tech-config", "--out", str(out)] if flags[0] in ("run", "load") else []
    assert _status([*flags, *extra]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert "unexpected error" not in err
    assert not out.exists()  # refused before the run directory, let alone a model


def test_the_load_help_states_the_bounds_it_enforces(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["load", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"at most {bounds.MAX_REQUESTS:,}: a level keeps each request's record in memory" in help_text
    assert f"at most {bounds.MAX_DURATION_S:g}, a day, so that a level ends" in help_text
    assert f"from {bounds.MIN_RATE:g} (a mean gap of about 17 minutes" in help_text
    assert f"to {bounds.MAX_RATE:g} (a gap of 1 ms" in help_text
