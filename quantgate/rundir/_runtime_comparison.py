"""decision.json's runtime comparisons: the same model file judged on two backends.

Two variants of a run whose model files have the same sha256 (as variants.json records it) and
whose backends differ are one pair: "the same weights, another runtime". The pair's base is the
embedded (`llamacpp`) variant when there is one, else the run's reference, else the one listed
first in the run; the other variant is compared with it like a quantization with the reference
(`quantgate.decide._runtimes`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evaluators.comparison import AgreementSummary, PairedDelta
from quantgate.rundir._lines import RunFileModel
from quantgate.rundir._summary import TokenFidelityEntry

BaseReason = Literal["embedded", "reference", "listed_first"]
"""Why a pair's base is its base: the embedded (`llamacpp`) variant, the run's reference, or the
one listed first in the run."""


class RuntimeComparison(RunFileModel):
    """One variant against another variant of the same model file on another backend."""

    base: str = Field(description="The variant compared with (see `BaseReason`).")
    variant: str = Field(description="The variant compared.")
    base_backend: str
    variant_backend: str
    sha256: str = Field(description="The model file both serve.")
    base_is: BaseReason = Field(description="Why `base` is the base.")
    cases: int = Field(description="Cases both have a record of.")
    identical: int | None = Field(
        default=None,
        description="Of those, cases whose records are equal (both valid, the same normalized record); "
        "None: no case to compare.",
    )
    agreement: AgreementSummary | None = Field(
        default=None,
        description="The variant's records scored against the base's, field by field (as agreement with "
        "the reference is); None: no case where the base gave a record, or the run's dataset is gone.",
    )
    accuracy: PairedDelta | None = Field(
        default=None,
        description="Accuracy, variant minus base, on the labeled cases both have (the paired interval "
        "the accuracy gate uses); None: no labeled paired case.",
    )
    token_fidelity: TokenFidelityEntry | None = Field(
        default=None,
        description="The variant's token fidelity against the base: measured against an embedded base "
        "(summary.json's `runtime_token_fidelity`: a top-k lower bound, the base's full logits cut to top-k "
        "against the server's top-k along the base's outputs), else the variant's own when the base is the "
        "run's reference.",
    )
    token_fidelity_missing: str | None = Field(
        default=None, description="Why token fidelity is not measured for this pair."
    )
