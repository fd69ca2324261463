"""examples/production.py end to end on the real embedded model: evaluate, decide, then extract with
the user's pydantic schema through the guard; and again from the run directory it made."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from quantgate.inputs._variants import VariantSet, write_variants_file

pytestmark = [pytest.mark.model, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "production.py"


def _example(*args: str, cwd: Path) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), *args], cwd=cwd, capture_output=True, text=True, timeout=1200
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _checked(out: str) -> None:
    assert "few-shot examples: run" in out  # the Event model has the evaluated dataset's fields
    extracted = [line for line in out.splitlines() if line.startswith(("extract:", "graph:"))]
    assert len(extracted) == 3
    first = json.loads(extracted[0].removeprefix("extract:"))
    assert first["event_type"] in {
        "meeting",
        "conference",
        "workshop",
        "webinar",
        "appointment",
        "party",
        "other",
    }
    assert set(first) >= {"event_name", "date", "organizer", "attendees", "fee"}
    assert "guard after 3 calls: tripped=" in out
    assert "format_validity 1 over 3 calls (rollback below" in out  # grammar-constrained: every output valid


def test_the_production_example_evaluates_first_then_runs_from_the_run(
    ladder: VariantSet, tmp_path: Path
) -> None:
    variants = tmp_path / "variants.toml"
    pair = VariantSet(reference="F16", variants=[v for v in ladder.variants if v.name in ("F16", "Q4_K_M")])
    write_variants_file(variants, pair)

    out = _example("--variants", str(variants), cwd=tmp_path)
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert (run_dir / "decision.json").is_file()
    # three cases cannot show Q4_K_M safe (the gates ask for 30), so the decision keeps F16
    assert f"decision of {Path('runs') / run_dir.name}: F16 (the reference)" in out
    assert "guard: " in out
    _checked(out)

    again = _example(str(run_dir), cwd=tmp_path)
    assert f"decision of {run_dir}: F16 (the reference)" in again
    _checked(again)
