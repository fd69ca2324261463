"""What one token-fidelity measurement needs (`FidelityJob`), for the run's reference and for a
runtime pair's base alike."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from quantgate.inputs.dataset import Case, Dataset
from quantgate.inputs.variants import Variant

__all__ = ["FidelityJob"]


@dataclass(frozen=True, kw_only=True)
class FidelityJob:
    """What a token-fidelity measurement needs: the model every other follows (the run's reference,
    or a runtime pair's embedded base), the variants measured against it, the cases and the
    outputs followed, by case id; picklable (it crosses to a worker process or a cluster task)."""

    reference: Variant
    variants: tuple[Variant, ...]
    dataset: Dataset
    cases: tuple[Case, ...]
    outputs: dict[str, str]
    run_dir: Path
    max_repairs: int
    progress: bool

    def tags(self) -> dict[str, tuple[str, ...]]:
        """Each case's tags (its slices), by case id."""
        return {case.id: tuple(case.tags) for case in self.cases}
