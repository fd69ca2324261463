"""What the run's token-fidelity step is given (`FidelityStep`), and what one measurement needs
(`FidelityJob`), for the run's reference and for a runtime pair's base alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from quantgate.evaluate.executor import VariantExecutor
from quantgate.inputs.dataset import Case, Dataset
from quantgate.inputs.variants import Variant
from quantgate.rundir.summary import VariantEntry

__all__ = ["FidelityJob", "FidelityStep"]


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


@dataclass(frozen=True, kw_only=True)
class FidelityStep:
    """The run's token-fidelity step: its variants and their summary `entries` (filled in place),
    the cases measured (the run's first ones), and how.

    Attributes:
        enabled: False under --no-token-fidelity (every variant gets that reason).
        executor: A remote one measures on the cluster; None here.
    """

    dataset: Dataset
    cases: Sequence[Case]
    variants: Sequence[Variant]
    reference_name: str
    entries: list[VariantEntry]
    run_dir: Path
    enabled: bool
    max_repairs: int
    progress: bool
    executor: VariantExecutor | None = None

    def ok(self) -> set[str]:
        """The variants evaluated (status ok)."""
        return {e.name for e in self.entries if e.status == "ok"}
