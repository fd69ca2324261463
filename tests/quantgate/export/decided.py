"""A decided synthetic run for the exporters' tests: a reference R that passes, a candidate Q
inconclusive on its accuracy gates (40 cases cannot show a drop under 5 points), and B, half its
fields wrong and 10 of 40 outputs invalid, failing every gate."""

from __future__ import annotations

from pathlib import Path

from quantgate.decide._recommendation import decide
from tests.quantgate.run_factory import make_run

RIGHT = {"a": 1.0, "b": 1.0}
HALF = {"a": 1.0, "b": 0.0}


def decided_run(directory: Path) -> Path:
    """The run above, decided with the default gates; its directory."""
    run = make_run(
        directory,
        {"R": [RIGHT] * 40, "Q": [RIGHT] * 40, "B": [HALF] * 40},
        footprints={"R": 1000, "Q": 500, "B": 300},
        invalid={"B": 10},
    )
    decide(run)
    return run
