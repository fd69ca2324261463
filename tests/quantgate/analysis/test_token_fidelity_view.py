"""`token_fidelity(view)`: each variant's token fidelity headline as a frame, for the notebooks."""

import math
from pathlib import Path

import pytest

from quantgate.explore import load_run_view, token_fidelity
from tests.quantgate.run_factory import TAIL_CASE_B, make_run, with_token_fidelity

TITLES = ["KLD mean", "KLD p99", "largest drop", "top-1 structural", "top-1 value"]


def _run(directory: Path, *, older_format: bool = False) -> Path:
    scores = [{"a": 1.0}] * 4
    run_dir = make_run(directory, {"R": scores, "Q4": scores}, footprints={"R": 2, "Q4": 1})
    return with_token_fidelity(run_dir, {"Q4": [TAIL_CASE_B]}, older_format=older_format)


def test_the_figures_with_nan_where_not_measured(tmp_path: Path):
    table = token_fidelity(load_run_view(_run(tmp_path / "run")))
    assert list(table.columns) == TITLES
    assert list(table.index) == ["R", "Q4"]
    assert list(table.loc["Q4"]) == pytest.approx([0.05, 0.099, -0.5, 1.0, 0.0])  # 0 of 1 value: 0.0
    assert table.loc["R"].isna().all()  # the reference has no token fidelity: NaN, not 0
    cells = token_fidelity(load_run_view(_run(tmp_path / "cells")), formatted=True)
    assert list(cells.loc["Q4"]) == ["0.0500", "0.0990", "-50.0", "100.0%", "0.0%"]


def test_a_run_written_before_the_tail_has_its_kld_only(tmp_path: Path):
    table = token_fidelity(load_run_view(_run(tmp_path / "run", older_format=True)))
    q4 = dict(zip(table.columns, list(table.loc["Q4"]), strict=True))
    assert q4["KLD p99"] == pytest.approx(0.099)
    assert all(math.isnan(q4[title]) for title in ["largest drop", "top-1 structural", "top-1 value"])
    cells = token_fidelity(load_run_view(_run(tmp_path / "cells", older_format=True)), formatted=True)
    assert list(cells.loc["Q4"]) == ["0.0500", "0.0990", "—", "—", "—"]
