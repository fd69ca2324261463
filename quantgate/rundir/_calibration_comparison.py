"""decision.json's calibration comparisons: a calibrated variant judged against its plain twin.

`Q2_K+imat` (an importance matrix from the team's data) and `Q2_K+imat-text` (from a general text)
are each compared with the plain `Q2_K` of the same run (`quantgate.inputs._calibration_twins`) on
the labeled cases both have, with the paired interval the accuracy gate judges by
(`quantgate.decide._calibrations`): "calibration on your data moves Q2_K by +x points [a, b]".
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evaluators.comparison import PairedDelta
from quantgate.inputs._variants import CalibrationSource
from quantgate.rundir._lines import RunFileModel

Finding = Literal["better", "worse", "not_shown"]
"""What the interval shows: the calibrated variant more accurate than its plain twin (the interval
above 0), less accurate (below 0), or neither shown at this number of cases."""


class CalibrationComparison(RunFileModel):
    """One calibrated variant against the plain variant of its quantization type."""

    quantization: str = Field(description="The type both are (`Q2_K`).")
    plain: str = Field(description="The plain variant (no importance matrix).")
    calibrated: str = Field(description="The calibrated variant.")
    source: CalibrationSource = Field(
        description="What its importance matrix was computed from: the run's kind of data (`dataset`), "
        "a general text (`text`), or a ready-made matrix file (`file`)."
    )
    calibration: str = Field(description="The calibrated variant's calibration, as variants.json has it.")
    accuracy: PairedDelta | None = Field(
        default=None,
        description="Accuracy, calibrated minus plain (`reference` is the plain twin's), on the labeled "
        "cases both have, with the interval the accuracy gate judges by (valid at any number of cases); "
        "None: no labeled case both have.",
    )
    finding: Finding = Field(description="What the interval shows (`Finding`).")
