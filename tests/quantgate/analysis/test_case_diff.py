"""`case_diff` on a run of another task kind: its fields and values as the kind's scorer reads them,
and whether the variant differs from the reference as that scorer judges agreement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from evaluators.fields import score_fields
from quantgate.analysis._case_diff import case_diff
from quantgate.analysis._run_view import load_run_view
from quantgate.rundir._store import read_records
from tests.quantgate.production.task_runs import tool_calling_run

PARIS = {"name": "get_weather", "arguments": {"city": "Paris"}}
"""Case t0's gold, and the reference's call."""


def _records_without_agreement(run_dir: Path, calls: dict[str, dict[str, Any]]) -> None:
    """Give the variant `quant` these calls (case id -> call) and no stored agreement, as a
    records file that does not carry it."""
    records = [
        r.model_copy(
            update={"record": {"call": calls[r.case_id]}, "agreement_fields": None, "agreement": None}
        )
        if r.variant == "quant" and r.case_id in calls
        else r
        for r in read_records(run_dir)
    ]
    (run_dir / "records.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))


def test_a_tool_call_differs_as_the_tool_calling_scorer_judges(tmp_path: Path) -> None:
    run_dir = tool_calling_run(tmp_path)
    stated_default = {"name": "get_weather", "arguments": {"unit": "celsius", "city": "Paris"}}
    other_city = {"name": "get_weather", "arguments": {"city": "Bergen", "unit": "fahrenheit"}}
    _records_without_agreement(run_dir, {"t0": stated_default, "t1": other_city})
    view = load_run_view(run_dir)
    assert view.dataset is not None

    same = case_diff(view, case_id="t0", variant="quant")
    assert list(same.index) == ["call"]  # the tool-calling kind's one field
    row = same.loc["call"]
    assert (row["gold"], row["reference"], row["variant"]) == (PARIS, PARIS, stated_default)
    assert pd.isna(row["agreement"])  # not stored
    assert not row["differs"]  # the left-out unit is its default: the same call
    assert json.dumps(row["variant"], sort_keys=True) != json.dumps(row["reference"], sort_keys=True)
    by_field = score_fields(
        outputs={"call": stated_default}, reference_outputs={"call": PARIS}, schema=view.dataset.spec
    )
    assert by_field.fields["call"].score == 0.0  # what matching it field by field says

    assert case_diff(view, case_id="t1", variant="quant").loc["call", "differs"]  # another city
    reference = case_diff(view, case_id="t0", variant="ref").loc["call"]
    assert (reference["variant"], reference["differs"]) == (PARIS, False)
