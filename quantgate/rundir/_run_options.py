"""summary.json's `options`: how the run was started (`RunOptionsInfo`), what a resumed run goes on
with and what `decide` reads of the run's method."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evaluators.betting import CONFSEQ_TRUNCATION
from evaluators.comparison import IntervalMethod
from quantgate.inputs._gates import Gates
from quantgate.rundir._lines import RunFileModel

__all__ = ["RunMethod", "RunOptionsInfo"]

RunMethod = Literal["fixed", "sequential", "bootstrap"]
"""How a run chose its cases: a fixed sample, or rounds with early stopping (`bootstrap`: a fixed
sample, as format 4 and earlier named it)."""


class RunOptionsInfo(RunFileModel):
    """The options the run was started with."""

    limit: int | None
    concurrency: int | None = Field(
        description="As given; None: each backend's default (see the variants' entries)."
    )
    max_repairs: int
    method: RunMethod = Field(
        default="fixed",
        description="fixed: a fixed sample (--limit, --all), judged by the betting confidence interval; "
        "sequential: rounds with early stopping; bootstrap: the name of a fixed sample before format 5.",
    )
    betting_truncation: float | None = Field(
        default=None,
        description="The betting truncation of the run's intervals (None: a run written before it was "
        "recorded, judged with confseq's 0.5).",
    )
    round_size: int | None = None
    max_cases: int | None = None
    budget_minutes: float | None = None
    gates: Gates | None = Field(
        default=None,
        description="The gates the run was started with: a sequential run stops on their accuracy "
        "part, and a resumed run goes on with them (None: a run written before they were recorded).",
    )
    token_fidelity: bool | None = Field(
        default=None,
        description="Token fidelity is measured after the variants (--no-token-fidelity: false).",
    )
    token_fidelity_cases: int | None = Field(
        default=None, description="On the run's first this many cases (None: all, or not recorded)."
    )
    verify: bool | None = Field(
        default=None,
        description="Candidates verified the reference's answers where their backend can (--no-verify: "
        "false; None: a run written before verification, which decoded every case).",
    )
    latency_cases: int | None = Field(
        default=None,
        description="The run's first this many cases were decoded in full by every variant, with verify or "
        "without: the latency figures come from them (None: not recorded, or a run with verification off "
        "written before the sample applied to it).",
    )
    noise_floor_cases: int | None = Field(
        default=None,
        description="Cases of the noise-floor sample (0: switched off; None: a run written before it "
        "existed).",
    )

    @property
    def interval_method(self) -> IntervalMethod:
        """How the run's accuracy deltas are judged: the confidence sequence, or the fixed-sample
        betting interval."""
        return "sequential" if self.method == "sequential" else "betting"

    @property
    def truncation(self) -> float:
        """The betting truncation the run was judged with."""
        return self.betting_truncation if self.betting_truncation is not None else CONFSEQ_TRUNCATION
